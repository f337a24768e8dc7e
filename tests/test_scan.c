/* SPDX-License-Identifier: BSD-3-Clause */
/* A job's scan: its configurations (scan.h), params.NAME axes, and the
 * errors in scan values (file, line, key; exit 2). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "axis.h"
#include "job.h"
#include "scan.h"
#include "tap.h"
#include "template.h"
#include "job_template.h"

static gpurun_job_t *parse(const char *text, gpurun_error_t *err)
{
    gpurun_job_t *job = NULL;
    memset(err, 0, sizeof *err);
    if (gpurun_job_parse(text, strlen(text), "job.conf", &job, err) < 0)
        return NULL;
    return job;
}

/* The error a job text gives: exit 2 and `want` in its message. */
static void refused(const char *what, const char *text, const char *want)
{
    gpurun_error_t err;
    gpurun_job_t *job = parse(text, &err);
    ok(!job && err.code == GPURUN_EXIT_CONFIG && strstr(err.text, want), "%s: exit 2, '%s'", what, want);
    if (job || !strstr(err.text, want))
        diag("got: %s", job ? "(parsed)" : err.text);
    gpurun_job_destroy(job);
}

static void test_enumeration(void)
{
    gpurun_error_t err;
    gpurun_job_t *job = parse("command = \"app ${npme} ${tpr}\"\n"
                              "ranks_per_node = 1\n"
                              "params { npme = 0  tpr = \"a.tpr\" }\n"
                              "scan { ranks_per_node = {1, 2, 4}\n"
                              "       params.npme = {0, 1}\n"
                              "       params.tpr = {\"a.tpr\", \"b b.tpr\"} }\n",
                              &err);
    ok(job != NULL, "a scan over ranks_per_node, params.npme and params.tpr parses");
    if (!job) {
        diag("%s", err.text);
        return;
    }
    is_int(job->nscan, 3, "three axes");
    is_int(gpurun_scan_count(job), 12, "3 x 2 x 2 = 12 configurations");
    ok(gpurun_scan_has_params(job), "it varies template parameters");
    ok(job->scan[1].values == NULL && !strcmp(job->scan[1].texts[1], "1"), "params.npme: texts, no numbers");
    is_str(job->scan[2].texts[1], "b b.tpr", "params.tpr: a quoted value kept whole");

    struct gpurun_scan_config c;
    gpurun_scan_config(job, 0, &c);
    is_str(c.text, "ranks_per_node=1, params.npme=0, params.tpr=a.tpr", "configuration 1: the first of each");
    is_int(c.nsets, 3, "... three overrides");
    gpurun_scan_config_free(&c);
    gpurun_scan_config(job, 7, &c); /* 7 = 1*4 + 1*2 + 1: the first axis outermost */
    is_str(c.text, "ranks_per_node=2, params.npme=1, params.tpr=b b.tpr", "configuration 8: first axis outermost");
    is_str(c.sets[0], "ranks_per_node=2", "... as KEY=VALUE");
    is_str(c.sets[2], "params.tpr=b b.tpr", "... a params value with a space");
    ok(c.index == 7 && c.count == 12, "... its index and the count");
    ok(gpurun_scan_apply(job, &c, &err) == 0, "applied like --set");
    ok(job->ranks_per_node == 2, "... ranks_per_node = 2");
    is_str(gpurun_kvlist_get(&job->params, "npme"), "1", "... params.npme = 1");
    is_str(gpurun_kvlist_get(&job->params, "tpr"), "b b.tpr", "... params.tpr");
    is_int(job->nscan, 3, "... the scan itself kept");
    is_str(gpurun_job_origin(job, "params.npme"), "job.conf:5", "... params.npme's origin: the scan's line");
    gpurun_scan_config_free(&c);
    gpurun_scan_config(job, 11, &c);
    is_str(c.text, "ranks_per_node=4, params.npme=1, params.tpr=b b.tpr", "configuration 12: the last of each");
    gpurun_scan_config_free(&c);

    char *d = gpurun_scan_describe(job);
    is_str(d, "ranks_per_node {1, 2, 4} x params.npme {0, 1} x params.tpr {a.tpr, b b.tpr}: 12 configurations",
           "what varies, in short");
    free(d);

    /* --set of a scanned parameter fixes it: one axis fewer. */
    ok(gpurun_job_set(job, "params.npme=3", &err) == 0, "--set params.npme=3");
    ok(job->nscan == 2 && gpurun_scan_count(job) == 6, "... drops that axis: 6 configurations");
    gpurun_job_destroy(job);

    job = parse("command = \"app\"\n", &err);
    ok(job && gpurun_scan_count(job) == 1 && !gpurun_scan_has_params(job), "no scan: one configuration");
    if (job) {
        gpurun_scan_config(job, 0, &c);
        ok(c.nsets == 0 && !strcmp(c.text, ""), "... with no overrides");
        gpurun_scan_config_free(&c);
        d = gpurun_scan_describe(job);
        is_str(d, "no scan", "... described as such");
        free(d);
    }
    gpurun_job_destroy(job);

    /* A command job: a scanned parameter is a name ${npme} may use. */
    job = parse("command = \"app -npme ${npme}\"\nscan { params.npme = {0, 1} }\n", &err);
    ok(job != NULL, "command with ${npme} set only by the scan: parses");
    if (!job)
        diag("%s", err.text);
    gpurun_job_destroy(job);
}

static void test_errors(void)
{
    refused("params value repeated", "command = \"a ${x}\"\nscan {\n params.x = {1, 2, 1} }\n",
            "job.conf:3: key 'scan.params.x': '1' listed twice");
    refused("params empty list", "command = \"a ${x}\"\nscan { params.x = {} }\n",
            "job.conf:2: key 'scan.params.x': empty list");
    refused("params control character", "command = \"a ${x}\"\nscan { params.x = {\"a\tb\"} }\n",
            "job.conf:2: key 'scan.params.x': value 1: control character 0x09 (tab)");
    refused("params empty value", "command = \"a ${x}\"\nscan { params.x = {\"\"} }\n",
            "job.conf:2: key 'scan.params.x': value 1: empty value");
    refused("params axis twice", "command = \"a ${x}\"\nscan { params.x = {1}\nparams.x = {2} }\n",
            "job.conf:3: key 'scan.params.x': given twice (first on line 2)");
    refused("a bad name", "command = \"a\"\nscan { params.x|y = {1} }\n", "job.conf:2: key 'scan.params.x|y': not a valid key name");
    refused("not a params key", "command = \"a\"\nscan { tpr = {1} }\n", "job.conf:2: unknown key 'scan.tpr'");
    refused("layout value out of range", "command = \"a\"\nscan { ranks_per_node = {1, 0} }\n",
            "job.conf:2: key 'scan.ranks_per_node'");
    refused("too many runs", "command = \"a ${x} ${y}\"\nscan { params.x = {1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,"
            "21,22,23,24,25,26,27,28,29,30,31,32}\nparams.y = {1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,"
            "21,22,23,24,25,26,27,28,29,30,31,32,33} }\n",
            "job.conf:3: key 'scan.params.y': the scan makes more than 1024 runs");

    gpurun_error_t err;
    gpurun_job_t *job = parse("command = \"a ${x}\"\nscan { params.x = {1, 2} }\n", &err);
    ok(job && gpurun_job_set(job, "scan.params.x=3", &err) < 0 && err.code == GPURUN_EXIT_CONFIG,
       "--set scan.params.x=3: exit 2");
    gpurun_job_destroy(job);
}

/* A scanned parameter a template neither uses nor has a default of: exit
 * 2 naming the line, with the default it was likely meant to be. */
static void test_template_names(void)
{
    const char *tpl_text = "description = \"an MD code\"\n"
                           "command = \"md -nsteps ${nsteps} -npme ${npme}\"\n"
                           "defaults { nsteps = \"100\"  npme = \"-1\" }\n";
    gpurun_template_t *t = NULL;
    gpurun_error_t err = {0};
    ok(gpurun_template_parse(tpl_text, strlen(tpl_text), "md.conf", &t, &err) == 0, "a template with defaults");
    if (!t)
        diag("%s", err.text);
    gpurun_job_t *job = parse("template = \"md\"\nscan {\n params.nstep = {100, 200} }\n", &err);
    ok(job != NULL, "a job scanning params.nstep parses");
    if (t && job) {
        int rc = gpurun_template_check_params(t, job, &err);
        ok(rc < 0 && err.code == GPURUN_EXIT_CONFIG, "... checked against the template: exit 2");
        is_str(err.text,
               "job.conf:3: key 'scan.params.nstep': not used: template 'md' has no '${nstep}' and no default "
               "of that name (did you mean 'scan.params.nsteps'?)",
               "... naming file, line and key, with the template's default it meant");
    }
    gpurun_job_destroy(job);
    job = parse("template = \"md\"\nscan { params.nsteps = {100, 200} }\n", &err);
    ok(job && t && gpurun_template_check_params(t, job, &err) == 0, "params.nsteps: the template's default, fine");
    gpurun_job_destroy(job);
    gpurun_template_destroy(t);
}

/* The one enumeration scan and tune share (axis.h): first axis outermost,
 * a neighbor differs in one axis only, the text in axis order. */
static void test_axes(void)
{
    char *a0[] = {"1", "2", NULL}, *a1[] = {"x", "y", "z", NULL}, *a2[] = {"8", "16", NULL};
    struct gpurun_axis ax[] = {{.key = "nodes", .texts = a0, .n = 2},
                               {.key = "params.m", .texts = a1, .n = 3},
                               {.key = "threads_per_rank", .texts = a2, .n = 2}};
    ok(gpurun_axes_count(ax, 3) == 12 && gpurun_axes_count(ax, 0) == 1, "12 configurations of 2 x 3 x 2; 1 of none");
    /* k = 7 = 1*6 + 0*2 + 1: nodes=2 params.m=x threads_per_rank=16 */
    ok(gpurun_axes_pick(ax, 3, 7, 0) == 1 && gpurun_axes_pick(ax, 3, 7, 1) == 0 && gpurun_axes_pick(ax, 3, 7, 2) == 1,
       "configuration 7 is values 1, 0, 1");
    size_t nb = gpurun_axes_neighbor(ax, 3, 7, 1, 2);
    ok(nb == 11 && gpurun_axes_pick(ax, 3, nb, 0) == 1 && gpurun_axes_pick(ax, 3, nb, 2) == 1,
       "its neighbor with params.m=z is 11, the other axes as they were (%zu)", nb);
    size_t n = 0;
    char **sets = gpurun_axes_sets(ax, 3, 7, &n);
    ok(n == 3 && !strcmp(sets[0], "nodes=2") && !strcmp(sets[1], "params.m=x") &&
           !strcmp(sets[2], "threads_per_rank=16") && !sets[3],
       "its assignments, in axis order");
    for (size_t i = 0; i < n; i++)
        free(sets[i]);
    free(sets);
    char *t = gpurun_axes_text(ax, 3, 11, ", "), *none = gpurun_axes_text(ax, 0, 0, " ");
    is_str(t, "nodes=2, params.m=z, threads_per_rank=16", "configuration 11 as text");
    is_str(none, "", "no axes: an empty text");
    free(t);
    free(none);
    struct gpurun_axis copy;
    long vals[] = {1, 2};
    ax[0].values = vals;
    gpurun_axis_copy(&copy, &ax[0]);
    ok(copy.key != ax[0].key && copy.texts != a0 && copy.values != vals && copy.values[1] == 2 &&
           !strcmp(copy.texts[1], "2") && !copy.texts[2],
       "a copy is deep");
    gpurun_axis_free(&copy);
}

int main(void)
{
    test_axes();
    test_enumeration();
    test_errors();
    test_template_names();
    return done_testing();
}
