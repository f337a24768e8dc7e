/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun diff's logic on hand-made records (rundiff.h): the noise verdict
 * of a figure, the sections in their order, a rank of one run only, the
 * bound on a large job's bindings; and the sampled hash of a large file
 * (provenance.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "provenance.h"
#include "rundiff.h"
#include "tap.h"

/* A record of `ranks` ranks, one cpu each, with figure ns_per_day = v. */
static json_t *record(int ranks, double v)
{
    json_t *plan_ranks = json_array();
    for (int i = 0; i < ranks; i++)
        json_array_append_new(plan_ranks, json_pack("{s:i, s:s, s:[i]}", "rank", i, "cpus", "", "numa", 0));
    for (int i = 0; i < ranks; i++) {
        char cpus[16];
        snprintf(cpus, sizeof cpus, "%d", i % 4);
        json_object_set_new(json_array_get(plan_ranks, (size_t)i), "cpus", json_string(cpus));
    }
    return json_pack("{s:s, s:s, s:i, s:i, s:{s:o}, s:{s:{s:f, s:s}}, s:[s]}", "run_id", "x", "job", "j", "nodes", 1,
                     "ranks", ranks, "plan", "ranks", plan_ranks, "foms", "ns_per_day", "value", v, "units", "ns/day",
                     "hosts", "n1");
}

static json_t *find(json_t *diff, const char *section, const char *key)
{
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(diff, "differences"), i, d) if (
        !strcmp(json_string_value(json_object_get(d, "section")), section) &&
        !strcmp(json_string_value(json_object_get(d, "key")), key)) return d;
    return NULL;
}

static const char *noise_of(json_t *diff)
{
    return json_string_value(json_object_get(find(diff, "figures", "ns_per_day"), "noise"));
}

static void test_noise(void)
{
    json_t *a = record(1, 100), *b = record(2, 104);
    json_t *quiet = json_pack("{s:{s:i, s:f, s:f}}", "ns_per_day", "n", 5, "mean", 100.0, "sd", 0.5);
    json_t *noisy = json_pack("{s:{s:i, s:f, s:f}}", "ns_per_day", "n", 5, "mean", 100.0, "sd", 10.0);
    json_t *one = json_pack("{s:{s:i, s:f, s:n}}", "ns_per_day", "n", 1, "mean", 100.0, "sd");
    json_t *d = gpurun_rundiff("A", a, quiet, "B", b, quiet);
    is_str(noise_of(d), "beyond the noise", "4 %% apart, sd 0.5 each: beyond the noise");
    json_t *first = json_array_get(json_object_get(d, "differences"), 0);
    is_str(json_string_value(json_object_get(first, "section")), "figures", "the figures come first");
    json_decref(d);
    d = gpurun_rundiff("A", a, noisy, "B", b, noisy);
    is_str(noise_of(d), "within the noise", "4 %% apart, sd 10 each: within the noise");
    json_decref(d);
    d = gpurun_rundiff("A", a, one, "B", b, NULL);
    is_str(noise_of(d), "noise unknown", "a single run of each: noise unknown");
    char *text = gpurun_rundiff_text(d);
    ok(strstr(text, "ns_per_day: 100 -> 104 ns/day (+4.0%), noise unknown (fewer than 2 runs"), "the text: the figure, its change and no noise estimate");
    ok(strstr(text, "ranks: 1 -> 2") && strstr(text, "rank 1: (none) -> {"), "the text names the ranks and rank 1");
    free(text);
    json_decref(d);
    d = gpurun_rundiff("A", a, NULL, "A", a, NULL);
    is_int((int)json_array_size(json_object_get(d, "differences")), 0, "a record against itself: no differences");
    json_decref(d);
    json_decref(a);
    json_decref(b);
    json_decref(quiet);
    json_decref(noisy);
    json_decref(one);
}

/* 1 rank per node against 2 on 4,000 ranks: bounded, the rest counted. */
static void test_bindings_bounded(void)
{
    json_t *a = record(4000, 1), *b = record(4000, 1);
    json_t *r = json_object_get(json_object_get(b, "plan"), "ranks");
    for (size_t i = 0; i < json_array_size(r); i++)
        json_object_set_new(json_array_get(r, i), "cpus", json_string("0-1"));
    json_t *d = gpurun_rundiff("A", a, NULL, "B", b, NULL);
    size_t n = 0, i;
    json_t *x;
    json_array_foreach(json_object_get(d, "differences"), i, x) n +=
        !strcmp(json_string_value(json_object_get(x, "section")), "bindings");
    is_int((int)n, GPURUN_RUNDIFF_SECTION_MAX, "4,000 ranks' bindings differ: %d lines of them", GPURUN_RUNDIFF_SECTION_MAX);
    json_t *more = find(d, "bindings", "more ranks differ (not listed)");
    is_int(more ? (int)json_integer_value(json_object_get(more, "a")) : -1, 4000 - (GPURUN_RUNDIFF_SECTION_MAX - 1),
           "... the others counted");
    ok(find(d, "bindings", "rank 0.cpus") != NULL, "rank 0's cpus named");
    json_decref(d);
    json_decref(a);
    json_decref(b);
}

/* A file over whole_max: its first, middle and last MiB hashed, said so. */
static void test_sampled_hash(void)
{
    char path[] = "/tmp/test_rundiff.XXXXXX";
    int fd = mkstemp(path);
    long long size = 8 * GPURUN_PROV_SAMPLE;
    ok(fd >= 0 && ftruncate(fd, (off_t)size) == 0, "an 8 MiB file");
    struct gpurun_file_hash h1, h2, h3, whole;
    gpurun_error_t e = {0};
    gpurun_hash_fd(fd, size, GPURUN_PROV_SAMPLE, &h1, &e);
    ok(h1.sampled && h1.size == size, "over whole_max: sampled");
    ok(pwrite(fd, "x", 1, (off_t)(2 * GPURUN_PROV_SAMPLE)) == 1, "a byte outside the samples changed");
    gpurun_hash_fd(fd, size, GPURUN_PROV_SAMPLE, &h2, &e);
    is_str(h2.sha256, h1.sha256, "... the sampled hash the same (what sampling gives up)");
    ok(pwrite(fd, "x", 1, (off_t)(size / 2)) == 1, "a byte in the middle MiB changed");
    gpurun_hash_fd(fd, size, GPURUN_PROV_SAMPLE, &h3, &e);
    ok(strcmp(h3.sha256, h1.sha256) != 0, "... the sampled hash changes");
    gpurun_hash_fd(fd, size, size, &whole, &e);
    ok(!whole.sampled && strcmp(whole.sha256, h3.sha256) != 0, "hashed whole up to whole_max: not sampled");
    gpurun_error_clear(&e);
    close(fd);
    unlink(path);
}

int main(void)
{
    test_noise();
    test_bindings_bounded();
    test_sampled_hash();
    return done_testing();
}
