/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun tune (issue 32): the tune { } block, the space and its candidates,
 * the statistics, the tie test and the decisions of successive halving
 * (a tie goes to fewer resources), and the tuned job file (lib/tune.c).
 * Pure functions: no run, no timing. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "plugin.h" /* gpurun_plugins_register */
#include "tap.h"
#include "template.h"
#include "tune.h"
#include "util.h"

static gpurun_job_t *job_of(const char *text, gpurun_error_t *err)
{
    gpurun_job_t *job = NULL;
    memset(err, 0, sizeof *err);
    if (gpurun_job_parse(text, strlen(text), "t.conf", &job, err) < 0)
        return NULL;
    return job;
}

static struct gpurun_tune_cand cand(double *v, size_t n, long gpus, long ranks, long threads)
{
    return (struct gpurun_tune_cand){.values = v, .n = n, .gpus = gpus, .ranks = ranks, .threads = threads,
                                     .runnable = true, .alive = true};
}

static void test_block(void)
{
    gpurun_error_t err;
    gpurun_job_t *job = job_of("command = \"./a ${x}\"\nparams { x = \"1\" }\n"
                               "tune { threads_per_rank = {1, 2, 4}\n  params.x = {\"a\", \"b c\", 3}\n"
                               "  ranks_per_gpu = {1, 2} }\n",
                               &err);
    ok(job != NULL, "a tune block with layout keys and params.NAME reads (%s)", job ? "" : err.text);
    if (!job)
        return;
    ok(job->ntune == 3, "three axes, in file order (%zu)", job->ntune);
    ok(job->ntune == 3 && !strcmp(job->tune[0].key, "threads_per_rank") && job->tune[0].n == 3 &&
           !strcmp(job->tune[0].texts[2], "4") && job->tune[0].line == 3,
       "tune.threads_per_rank = {1, 2, 4} on line 3");
    ok(job->ntune == 3 && !strcmp(job->tune[1].key, "params.x") && job->tune[1].n == 3 &&
           !strcmp(job->tune[1].texts[1], "b c") && !strcmp(job->tune[1].texts[2], "3") && job->tune[1].line == 4,
       "tune.params.x keeps its strings, an unquoted 3 too, on line 4");

    struct gpurun_tune_space sp;
    ok(gpurun_tune_space_make(job, NULL, false, &sp, &err) == 0, "the space of the block");
    ok(gpurun_tune_count(&sp) == 18, "3 x 3 x 2 = 18 candidates (%zu)", gpurun_tune_count(&sp));
    char *l0 = gpurun_tune_label(&sp, 0), *l17 = gpurun_tune_label(&sp, 17), *l3 = gpurun_tune_label(&sp, 3);
    is_str(l0, "threads_per_rank=1 params.x=a ranks_per_gpu=1", "candidate 0");
    is_str(l3, "threads_per_rank=1 params.x=b c ranks_per_gpu=2", "candidate 3: the last axis turns fastest");
    is_str(l17, "threads_per_rank=4 params.x=3 ranks_per_gpu=2", "candidate 17");
    ok(gpurun_tune_neighbor(&sp, 3, 0, 2) == 15 && gpurun_tune_neighbor(&sp, 3, 1, 0) == 1 &&
           gpurun_tune_neighbor(&sp, 3, 2, 0) == 2 && gpurun_tune_neighbor(&sp, 17, 1, 1) == 15,
       "the neighbours of a candidate along each axis");
    char s1[20], s2[20], s3[20];
    gpurun_tune_session("j", &sp, s1, sizeof s1);
    gpurun_tune_session("j", &sp, s2, sizeof s2);
    gpurun_tune_session("k", &sp, s3, sizeof s3);
    ok(strlen(s1) == 16 && !strcmp(s1, s2) && strcmp(s1, s3) != 0,
       "the session id is the same for the same job and space, another for another job (%s %s)", s1, s3);
    free(l0);
    free(l3);
    free(l17);
    gpurun_tune_space_free(&sp);
    gpurun_job_destroy(job);

    static const struct {
        const char *text, *want;
    } bad[] = {
        {"command = \"x\"\ntune { threads_per_rank = {} }\n", "t.conf:2: key 'tune.threads_per_rank': empty list"},
        {"command = \"x\"\n\ntune { thread_per_rank = {1} }\n",
         "t.conf:3: unknown key 'tune.thread_per_rank' (did you mean 'tune.threads_per_rank'?)"},
        {"command = \"x\"\ntune { gpus_per_rank = {1, 1} }\n",
         "t.conf:2: key 'tune.gpus_per_rank': value 2 is listed twice"},
        {"command = \"x\"\ntune { threads_per_rank = {0} }\n",
         "t.conf:2: key 'tune.threads_per_rank': 0 is out of range (1 to 4096)"},
        {"command = \"x ${a}\"\nparams { a = \"1\" }\ntune {\n params.a = {\"1\", \"1\"} }\n",
         "t.conf:4: key 'tune.params.a': value 2 is listed twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gpurun_job_t *j = job_of(bad[i].text, &err);
        ok(!j && err.code == GPURUN_EXIT_CONFIG && strstr(err.text, bad[i].want),
           "refused, exit 2, naming file, line and key: %s", j ? "(read!)" : err.text);
        gpurun_job_destroy(j);
    }

    /* params.NAME keys are learnt from the file's records (as scan's), in
     * both blocks at once, and tune's are bounded. */
    job = job_of("command = \"x ${a} ${b}\"\nparams { a = \"1\"  b = \"2\" }\n"
                 "scan { params.a = {\"1\", \"2\"} }\ntune { params.b = {\"3\", \"4\"} }\n", &err);
    ok(job && job->nscan == 1 && !strcmp(job->scan[0].key, "params.a") && job->ntune == 1 &&
           !strcmp(job->tune[0].key, "params.b") && job->tune[0].n == 2,
       "scan { params.a } and tune { params.b } in one file (%s)", job ? "" : err.text);
    gpurun_job_destroy(job);
    char many[4096] = "command = \"x\"\ntune {\n";
    for (int i = 0; i < 33; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), " params.p%d = {\"1\", \"2\"}\n", i);
    snprintf(many + strlen(many), sizeof many - strlen(many), "}\n");
    job = job_of(many, &err);
    ok(!job && err.code == GPURUN_EXIT_CONFIG && strstr(err.text, "t.conf:35: key 'tune.params.p32': more than 32 params.NAME keys"),
       "33 params.NAME keys in tune: refused at the 33rd (%s)", job ? "(read!)" : err.text);
    gpurun_job_destroy(job);

    job = job_of("command = \"x\"\n", &err);
    ok(job && gpurun_tune_space_make(job, NULL, false, &sp, &err) < 0 && err.code == GPURUN_EXIT_CONFIG &&
           strstr(err.text, "nothing to tune"),
       "no block and no template: nothing to tune, exit 2 (%s)", err.text);
    gpurun_job_destroy(job);
}

static void test_template_space(void)
{
    gpurun_error_t err = {0};
    const char *text = "description = \"t\"\ncommand = \"x ${npme}\"\ndefaults { npme = \"-1\" }\n"
                       "tune_space = { \"threads_per_rank=1,2\", \"params.npme=-1,0,1\", \"gpu:ranks_per_gpu=1,2\" }\n"
                       "tune_short = { \"params.nsteps=100\" }\n";
    gpurun_template_t *t = NULL;
    ok(gpurun_template_parse(text, strlen(text), "tpl.conf", &t, &err) == 0, "a template with tune_space reads (%s)",
       err.text);
    gpurun_job_t *job = job_of("template = \"tpl\"\n", &err);
    struct gpurun_tune_space sp;
    ok(t && job && gpurun_tune_space_make(job, t, false, &sp, &err) == 0, "with no tune block, the template's space");
    if (t && job && sp.naxes) {
        ok(gpurun_tune_count(&sp) == 6 && sp.nshort == 1 && !strcmp(sp.short_sets[0], "params.nsteps=100"),
           "2 x 3 candidates, shortened by params.nsteps=100");
        char *l = gpurun_tune_label(&sp, 5);
        is_str(l, "threads_per_rank=2 params.npme=1", "the last candidate");
        free(l);
        gpurun_tune_space_free(&sp);
        ok(gpurun_tune_space_make(job, t, true, &sp, &err) == 0 && gpurun_tune_count(&sp) == 12 &&
               !strcmp(sp.axes[2].key, "ranks_per_gpu"),
           "on a node with GPUs, the gpu: item counts too: 12 candidates");
        gpurun_tune_space_free(&sp);
    }
    gpurun_template_destroy(t);
    const char *bad[] = {"tune_space = { \"threads\" }\n", "tune_space = { \"thread_per_rank=1\" }\n",
                         "tune_space = { \"threads_per_rank=1,1\" }\n", "tune_space = { \"params.a=1,\" }\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *tt = gpurun_xasprintf("description = \"t\"\ncommand = \"x\"\n%s", bad[i]);
        t = NULL;
        memset(&err, 0, sizeof err);
        int rc = gpurun_template_parse(tt, strlen(tt), "tpl.conf", &t, &err);
        rc = rc == 0 ? gpurun_tune_space_make(job, t, false, &sp, &err) : rc;
        ok(rc < 0 && err.code == GPURUN_EXIT_CONFIG && strstr(err.text, "tune_space"),
           "a malformed tune_space is exit 2: %s", err.text);
        gpurun_template_destroy(t);
        free(tt);
    }
    gpurun_job_destroy(job);
}

static void test_stats(void)
{
    double v[] = {10, 12, 14};
    struct gpurun_tune_stats st;
    gpurun_tune_stats(v, 3, &st);
    ok(st.n == 3 && st.mean == 12 && fabs(st.sd - 2) < 1e-12 && st.min == 10 && st.max == 14,
       "mean 12, sd 2, min 10, max 14");
    gpurun_tune_stats(v, 1, &st);
    ok(st.sd == 0 && st.mean == 10, "one run: sd 0");

    double a[] = {100, 102}, b[] = {50, 51, 52};
    struct gpurun_tune_cand c[] = {cand(a, 2, 1, 1, 1), cand(b, 3, 1, 1, 1), cand(v, 1, 1, 1, 1)};
    double cv = gpurun_tune_pooled_cv(c, 3);
    /* a: sd 1.414/101, 1 degree of freedom; b: sd 1/51, 2 */
    double want = sqrt((pow(sqrt(2) / 101, 2) * 1 + pow(1.0 / 51, 2) * 2) / 3);
    ok(fabs(cv - want) < 1e-12, "pooled CV of the repeats %.5f (want %.5f); single runs do not count", cv, want);
    ok(gpurun_tune_pooled_cv(&c[2], 1) == GPURUN_TUNE_DEFAULT_CV, "no repeats: the default CV");

    ok(fabs(gpurun_tune_cost(2.0, 4, 48, "ns/day") - 4.0) < 1e-12,
       "cost: 2 per GPU-hour x 4 GPUs at 48 ns/day (2 ns/hour) = 4 per ns");
    ok(fabs(gpurun_tune_cost(3.6, 1, 1000, "images/s") - 1e-6) < 1e-15, "3.6 per GPU-hour at 1000 images/s = 1e-6 per image");
    ok(isnan(gpurun_tune_cost(2.0, 0, 48, "ns/day")) && isnan(gpurun_tune_cost(NAN, 1, 48, "ns/day")) &&
           isnan(gpurun_tune_cost(2.0, 1, 48, "ns")) && isnan(gpurun_tune_cost(2.0, 1, 0, "ns/day")),
       "no cost without GPUs, a price, a rate or a positive figure");
    ok(gpurun_tune_parse_duration("90") == 90 && gpurun_tune_parse_duration("30m") == 1800 &&
           gpurun_tune_parse_duration("1h30m") == 5400 && gpurun_tune_parse_duration("2d") == 172800,
       "durations: 90, 30m, 1h30m, 2d");
    ok(gpurun_tune_parse_duration("") < 0 && gpurun_tune_parse_duration("m") < 0 &&
           gpurun_tune_parse_duration("5x") < 0 && gpurun_tune_parse_duration("9999999999") < 0 &&
           gpurun_tune_parse_duration("400d") < 0,
       "malformed or too long durations are refused");
}

static void test_ties(void)
{
    /* A: 2 GPUs, mean 100.5; B: 1 GPU, mean 100: inside the noise. */
    double va[] = {100, 101}, vb[] = {99.5, 100.5};
    struct gpurun_tune_cand c[] = {cand(va, 2, 2, 2, 8), cand(vb, 2, 1, 1, 8)};
    double cv = gpurun_tune_pooled_cv(c, 2);
    ok(gpurun_tune_tied(&c[0], &c[1], cv), "100.5 and 100 with a spread of 0.7 are a tie");
    ok(gpurun_tune_best(c, 2, false, cv) == 1, "the tie goes to the layout with fewer GPUs, though its mean is lower");
    ok(gpurun_tune_best(c, 2, true, cv) == 1, "... whichever way is better");
    /* Same GPUs: fewer ranks, then fewer threads. */
    c[0].gpus = 1;
    c[0].ranks = 1;
    c[0].threads = 4;
    ok(gpurun_tune_best(c, 2, false, cv) == 0, "same GPUs and ranks: fewer threads win the tie");
    c[0].threads = 8;
    ok(gpurun_tune_best(c, 2, false, cv) == 0, "same resources: the better mean");

    /* Clearly apart: the better one wins whatever it uses. */
    double vc[] = {120, 121}, vd[] = {100, 101};
    struct gpurun_tune_cand d[] = {cand(vc, 2, 4, 4, 4), cand(vd, 2, 1, 1, 1)};
    cv = gpurun_tune_pooled_cv(d, 2);
    ok(!gpurun_tune_tied(&d[0], &d[1], cv), "120.5 and 100.5 with a spread of 0.7 are no tie");
    ok(gpurun_tune_best(d, 2, false, cv) == 0, "higher is better: the faster one, with more GPUs");
    ok(gpurun_tune_best(d, 2, true, cv) == 1, "lower is better: the other");
    double conf = gpurun_tune_confidence(&d[0], &d[1], false, cv);
    ok(conf > 0.999, "the confidence that 120.5 beats 100.5 is near 1 (%.4f)", conf);
    double tconf = gpurun_tune_confidence(&c[1], &c[0], false, 0.01);
    ok(tconf >= 0.5 && tconf < 0.95, "that of a tie is low (%.3f)", tconf);

    /* A single run each: the default CV says what noise is. */
    double e1[] = {100}, e2[] = {102}, e3[] = {150};
    struct gpurun_tune_cand e[] = {cand(e1, 1, 1, 1, 1), cand(e2, 1, 2, 2, 2), cand(e3, 1, 2, 2, 2)};
    ok(gpurun_tune_tied(&e[0], &e[1], GPURUN_TUNE_DEFAULT_CV) &&
           !gpurun_tune_tied(&e[0], &e[2], GPURUN_TUNE_DEFAULT_CV),
       "one run each, default CV 3%%: 100 and 102 tie, 100 and 150 do not");
    e[2].alive = false;
    ok(gpurun_tune_best(e, 3, false, GPURUN_TUNE_DEFAULT_CV) == 0,
       "100 (1 GPU) over 102 (2 GPUs); the dropped 150 is not a pick");
}

static void test_halve(void)
{
    /* 8 candidates, means 1..8 with a small spread: the better 4 stay. */
    double v[8][2];
    struct gpurun_tune_cand c[9];
    for (int i = 0; i < 8; i++) {
        v[i][0] = 10.0 * (i + 1) - 0.1;
        v[i][1] = 10.0 * (i + 1) + 0.1;
        c[i] = cand(v[i], 2, 1, 1, 1);
    }
    c[8] = cand(NULL, 0, 1, 1, 1); /* pruned: never counted */
    c[8].runnable = c[8].alive = false;
    size_t alive = gpurun_tune_halve(c, 9, false, gpurun_tune_pooled_cv(c, 9));
    ok(alive == 4 && c[7].alive && c[4].alive && !c[3].alive && !c[0].alive && !c[8].alive,
       "8 apart: the better half (50..80) stays (%zu alive)", alive);
    alive = gpurun_tune_halve(c, 9, false, gpurun_tune_pooled_cv(c, 9));
    ok(alive == 2 && c[7].alive && c[6].alive, "then 70 and 80");
    alive = gpurun_tune_halve(c, 9, false, gpurun_tune_pooled_cv(c, 9));
    ok(alive == 1 && c[7].alive && gpurun_tune_best(c, 9, false, 0.01) == 7, "then 80 alone: the best");

    /* Lower is better: the other half. */
    for (int i = 0; i < 8; i++)
        c[i].alive = true;
    alive = gpurun_tune_halve(c, 8, true, gpurun_tune_pooled_cv(c, 8));
    ok(alive == 4 && c[0].alive && c[3].alive && !c[4].alive, "lower is better: 10..40 stay");

    /* A tie with the best stays; one tied only with the worst kept one
     * goes (it cannot be the best). */
    double w[6][2] = {{100, 101}, {90, 91}, {80, 81}, {79.9, 81.1}, {50, 51}, {40, 41}};
    struct gpurun_tune_cand t[6];
    for (int i = 0; i < 6; i++)
        t[i] = cand(w[i], 2, 1, 1, 1);
    alive = gpurun_tune_halve(t, 6, false, gpurun_tune_pooled_cv(t, 6));
    ok(alive == 3 && !t[3].alive && !t[4].alive && !t[5].alive,
       "6: the better 3 stay; 79.9-81.1, tied with the third but not with the best, goes (%zu alive)", alive);
    double w2[6][2] = {{100, 101}, {99, 100}, {98.5, 99.5}, {98, 99.6}, {50, 51}, {40, 41}};
    for (int i = 0; i < 6; i++)
        t[i] = cand(w2[i], 2, 1, 1, 1);
    alive = gpurun_tune_halve(t, 6, false, gpurun_tune_pooled_cv(t, 6));
    ok(alive == 4 && t[3].alive && !t[4].alive && !t[5].alive,
       "6: the 4th (98-99.6), within the noise of the best (100-101), stays with the better 3 (%zu alive)", alive);

    /* All tied: one at least goes each round, never the pick (fewest GPUs). */
    double u[3][2] = {{100, 101}, {100.2, 100.8}, {100.1, 100.9}};
    struct gpurun_tune_cand a[3] = {cand(u[0], 2, 4, 4, 4), cand(u[1], 2, 1, 1, 1), cand(u[2], 2, 2, 2, 2)};
    double cv = gpurun_tune_pooled_cv(a, 3);
    alive = gpurun_tune_halve(a, 3, false, cv);
    ok(alive == 2 && a[1].alive, "3 tied: one goes, the one with 1 GPU stays (%zu alive)", alive);
    alive = gpurun_tune_halve(a, 3, false, cv);
    ok(alive == 1 && a[1].alive && gpurun_tune_best(a, 3, false, cv) == 1,
       "then it alone: a tie goes to fewer resources");
}

static void test_rewrite(void)
{
    gpurun_error_t err = {0};
    const char *text = "# ranks_per_node = 9 in a comment stays\n"
                       "job = \"w\"\ncommand = \"./a ${n} ${m}\"  // another { comment\n"
                       "ranks_per_node = 2\n"
                       "params {\n  n = \"x}y\"   # a brace in a string\n  m = 1 }\n"
                       "slurm { partition = \"gpu\" }\n"
                       "scan { threads_per_rank = {1, 2} }\n"
                       "tune { ranks_per_node = {1, 2}  params.n = {\"5\", \"6\"} }\n";
    char *sets[] = {(char *)"ranks_per_node=1", "params.n=6", "threads_per_rank=2", "params.m=3 4"};
    char *out = gpurun_tune_rewrite(text, strlen(text), sets, 4, "# tuned\n", &err);
    ok(out != NULL, "the job file rewritten (%s)", out ? "" : err.text);
    if (!out)
        return;
    diag("%s", out);
    gpurun_job_t *job = job_of(out, &err);
    ok(job != NULL, "it reads back as a job file (%s)", job ? "" : err.text);
    if (job) {
        ok(job->ranks_per_node == 1 && job->threads_per_rank == 2, "ranks_per_node 1 (in place), threads_per_rank 2 (added)");
        ok(!strcmp(gpurun_kvlist_get(&job->params, "n"), "6") && !strcmp(gpurun_kvlist_get(&job->params, "m"), "3 4"),
           "params n = 6, m = \"3 4\"");
        ok(job->nscan == 0 && job->ntune == 2, "the scan is gone, the tune block kept");
        ok(!strcmp(gpurun_kvlist_get(&job->managers[0].options, "partition"), "gpu"), "the rest as it was");
    }
    static const char head[] = "# tuned\n# ranks_per_node = 9 in a comment stays\n";
    ok(!strncmp(out, head, sizeof head - 1), "header first; comments untouched");
    gpurun_job_destroy(job);
    free(out);

    /* A params key and no params block: one is added. */
    const char *t2 = "command = \"./a ${k}\"\nparams { k = \"1\" }\n";
    const char *t3 = "template = \"generic\"\n";
    char *s2[] = {"params.k=2"}, *s3[] = {"params.program=./p", "nodes=1", "params.q=x y"};
    out = gpurun_tune_rewrite(t2, strlen(t2), s2, 1, "", &err);
    job = out ? job_of(out, &err) : NULL;
    ok(job && !strcmp(gpurun_kvlist_get(&job->params, "k"), "2"), "a value in a one-line params block");
    gpurun_job_destroy(job);
    free(out);
    out = gpurun_tune_rewrite(t3, strlen(t3), s3, 3, "", &err);
    ok(out && strstr(out, "params { program = \"./p\"  q = \"x y\" }") && strstr(out, "nodes = 1"),
       "no params block: one is added for both params, with the layout key");
    job = out ? job_of(out, &err) : NULL;
    ok(job != NULL, "... and it reads back (%s)", job ? "" : err.text);
    gpurun_job_destroy(job);
    free(out);
    const char *t4 = "command = \"x\"\nparams { a = \"1\"\n";
    out = gpurun_tune_rewrite(t4, strlen(t4), s2, 1, "", &err);
    ok(!out && err.code == GPURUN_EXIT_CONFIG, "an unbalanced file is not rewritten");
    free(out);
}

/* Issue 37: nothing written into the tuned file's comments adds a key.
 * The read-back refuses a key that neither the job nor the layout sets;
 * free text in comments has its control characters as '?', and a path in
 * a printed command is one shell word. */
static void test_tuned_keys(void)
{
    gpurun_error_t err = {0};
    const char *text = "template = \"generic\"\nparams { program = \"./p\"  args = \"1\" }\n"
                       "scan { nodes = {1, 2} }\n";
    char *sets[] = {"params.args=2", "threads_per_rank=2"};
    char *out = gpurun_tune_rewrite(text, strlen(text), sets, 2, "# tuned\n", &err);
    ok(out && gpurun_tune_check_tuned(text, strlen(text), out, sets, 2, "j.conf", &err) == 0,
       "the rewritten job reads back: its keys and the layout's (%s)", out ? err.text : "not rewritten");
    free(out);
    /* A header that let a line break through: "repeat = 7" is nobody's key. */
    out = gpurun_tune_rewrite(text, strlen(text), sets, 2, "# Tune again: gpurun tune p\nrepeat = 7 #/j.conf\n",
                              &err);
    memset(&err, 0, sizeof err);
    ok(out && gpurun_tune_check_tuned(text, strlen(text), out, sets, 2, "j.conf", &err) < 0 &&
           err.code == GPURUN_EXIT_CONFIG && strstr(err.text, "'repeat' (line 2)") && strstr(err.text, "not written"),
       "a key the job does not set is refused: %s", err.text);
    free(out);
    /* One the job sets itself is no one else's. */
    const char *t2 = "template = \"generic\"\nrepeat = 2\nparams { program = \"./p\" }\n";
    const char *o2 = "template = \"generic\"\nrepeat = 2\nparams { program = \"./p\" }\nthreads_per_rank = 2\n";
    ok(gpurun_tune_check_tuned(t2, strlen(t2), o2, sets, 2, "j.conf", &err) == 0, "the job's own repeat passes");
    const char *o3 = "template = \"generic\"\nrepeat = 2\nparams { program = \"./p\" }\nthreads_per_rank = 2\n"
                     "nodes = 1\n";
    ok(gpurun_tune_check_tuned(t2, strlen(t2), o3, sets, 2, "j.conf", &err) < 0 && strstr(err.text, "'nodes'"),
       "a layout key the layout does not set is refused");
    ok(gpurun_tune_check_tuned(t2, strlen(t2), "repeat = x\n", sets, 2, "j.conf", &err) < 0 &&
           strstr(err.text, "would not read back"),
       "a text that is no job file is refused");

    char *c = gpurun_comment_text("p\nrepeat = 7 #\r\x1b[2J\x7f\xc2\x85 \xff\xc3\xa9");
    ok(!strcmp(c, "p?repeat = 7 #??[2J?? ?\xc3\xa9"), "comment text: control characters and bad UTF-8 as '?' (%s)", c);
    free(c);
    static const char *const words[][2] = {
        {"/a/b-1.conf", "/a/b-1.conf"},
        {"a b", "'a b'"},
        {"it's", "'it'\\''s'"},
        {"p\nrepeat = 7 #/j.conf", "'p'$'\\012''repeat = 7 #/j.conf'"},
        {"\n", "$'\\012'"},
        {"", "''"},
        {"$(x)", "'$(x)'"},
    };
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        char *w = gpurun_shell_word(words[i][0]);
        ok(!strcmp(w, words[i][1]), "shell word of %zu: %s", i, w);
        free(w);
    }
}

/* ---- 20 tunes of a noisy synthetic with a resource axis (issue 39) ------
 * Three layouts (two 2 % apart, one far behind) x threads_per_rank {1, 2},
 * 2 threads 1 % faster: within the noise, so a tie that fewer resources
 * win.  Each tune is the search gpurun tune runs (every candidate once,
 * then rounds of gpurun_tune_round, the alive measured again) on figures
 * with 2 % of seeded noise; the verdict is over every candidate measured. */
#define SYN_N 6
#define SYN_RUNS 64

static uint64_t syn_state;
static double syn_uniform(void) /* xorshift64*: the same figures on every libc */
{
    syn_state ^= syn_state >> 12;
    syn_state ^= syn_state << 25;
    syn_state ^= syn_state >> 27;
    return ((syn_state * 2685821657736338717ULL) >> 11) * (1.0 / 9007199254740992.0);
}
static double syn_normal(void)
{
    double u = syn_uniform(), v = syn_uniform();
    return sqrt(-2 * log(u > 0 ? u : 1e-300)) * cos(2 * M_PI * v);
}

static void syn_measure(struct gpurun_tune_cand *c, double truth)
{
    if (c->n < SYN_RUNS)
        c->values[c->n++] = truth * (1 + 0.02 * syn_normal());
}

/* One tune; true when its best is in the Pareto set and its verdict agrees
 * with itself: a best with a worse mean than another is tied with it and
 * uses fewer resources. */
static bool syn_tune(uint64_t seed, double values[SYN_N][SYN_RUNS])
{
    static const double layout[3] = {100, 98, 70};
    struct gpurun_tune_cand c[SYN_N];
    double truth[SYN_N];
    syn_state = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (size_t k = 0; k < SYN_N; k++) {
        long threads = 1 + (long)(k % 2);
        truth[k] = layout[k / 2] * (threads == 2 ? 1.01 : 1.0);
        c[k] = (struct gpurun_tune_cand){.values = values[k], .ranks = 1, .threads = threads, .runnable = true,
                                         .alive = true};
    }
    for (int round = 0; round < 16; round++) {
        for (size_t k = 0; k < SYN_N; k++)
            if (c[k].alive)
                syn_measure(&c[k], truth[k]);
        if (gpurun_tune_round(c, SYN_N, false, gpurun_tune_pooled_cv(c, SYN_N)) <= 1)
            break;
    }
    /* The verdict: every candidate measured, dropped ones too. */
    for (size_t k = 0; k < SYN_N; k++)
        c[k].alive = c[k].n > 0;
    double cv = gpurun_tune_pooled_cv(c, SYN_N), means[SYN_N];
    size_t best = gpurun_tune_best(c, SYN_N, false, cv);
    bool lower = false, in[SYN_N];
    for (size_t k = 0; k < SYN_N; k++) {
        struct gpurun_tune_stats st;
        gpurun_tune_stats(c[k].values, c[k].n, &st);
        means[k] = st.mean;
    }
    gpurun_tune_pareto(c, SYN_N, 1, means, &lower, in);
    bool agrees = best != SIZE_MAX && in[best];
    for (size_t k = 0; agrees && k < SYN_N; k++)
        if (means[k] > means[best])
            agrees = gpurun_tune_tied(&c[best], &c[k], cv) && gpurun_tune_fewer(&c[best], &c[k]) < 0;
    return agrees;
}

static void test_synthetic(void)
{
    static double values[SYN_N][SYN_RUNS];
    int good = 0;
    for (uint64_t seed = 1; seed <= 20; seed++)
        good += syn_tune(seed, values);
    ok(good == 20, "20 noisy tunes of 3 layouts x 2 thread counts: the best is in the Pareto set, and any better "
                   "mean is tied with it on more resources, every time (%d of 20)",
       good);
}

int main(void)
{
    gpurun_plugins_register(); /* the managers' sections (slurm { }) */
    test_block();
    test_template_space();
    test_stats();
    test_ties();
    test_halve();
    test_rewrite();
    test_tuned_keys();
    test_synthetic();
    return done_testing();
}
