/* SPDX-License-Identifier: BSD-3-Clause */
/* Figures of merit (fom.h): the shipped gromacs, lammps, hpl, hpcg, nccl-tests
 * stream, osu-latency, osu-bw and namd templates on real output of those programs (tests/logs,
 * README.md there says how each was made or where it was published), then on hand-made hostile files: several runs in one log, a
 * log cut short, nan, inf, overflow, a fake Performance: line, the
 * GMX_DETAILED_PERF_STATS layout, a minimisation, an empty file, binary
 * junk, a folder, a FIFO.  Then the sanity check, the fom keys of a
 * template, the reference bands, and a failed rank's last lines and the
 * line that names the cause (failure.h). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "failure.h"
#include "fom.h"
#include "tap.h"
#include "template.h"
#include "template_base.h"
#include "util.h"

static const char *top;
static char tmpdir[] = "/tmp/gpurun-test-fom.XXXXXX";

/* ---- helpers ----------------------------------------------------------- */

static char *src_path(const char *rel)
{
    char *p = NULL;
    if (asprintf(&p, "%s/%s", top, rel) < 0)
        abort();
    return p;
}

static char *tmp_path(const char *name)
{
    char *p = NULL;
    if (asprintf(&p, "%s/%s", tmpdir, name) < 0)
        abort();
    return p;
}

/* Write `len` bytes (strlen when len is 0) to TMP/name; its path. */
static char *put_file(const char *name, const char *text, size_t len)
{
    char *p = tmp_path(name);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(text, 1, len ? len : strlen(text), f) != (len ? len : strlen(text)))
        abort();
    fclose(f);
    return p;
}

static gpurun_template_t *load_tpl(const char *rel)
{
    gpurun_template_t *t = NULL;
    gpurun_error_t err = {0};
    char *p = src_path(rel);
    if (!ok(gpurun_template_load(p, &t, &err) == 0, "%s loads", rel))
        diag("%s", err.text);
    free(p);
    return t;
}

static gpurun_template_t *parse_tpl(const char *text, gpurun_error_t *err)
{
    gpurun_template_t *t = NULL;
    gpurun_template_parse(text, strlen(text), "tpl.conf", &t, err);
    return t;
}

static const struct gpurun_fom_values *get(const gpurun_foms_t *f, const char *file, const char *name)
{
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->f[i].name, name) && (!file || !strcmp(f->f[i].file, file)))
            return &f->f[i];
    return NULL;
}

/* Every fom of t from the one file `path` (as gpurun collect reads). */
static int read_file(const gpurun_template_t *t, const char *path, gpurun_foms_t *out, gpurun_error_t *err)
{
    char *files[] = {(char *)path, NULL};
    return gpurun_fom_read(t, ".", NULL, NULL, files, out, err);
}

/* The values of `name` are exactly want[0..n). */
static void want_values(const gpurun_foms_t *f, const char *name, const double *want, size_t n, const char *what)
{
    const struct gpurun_fom_values *v = get(f, NULL, name);
    bool same = v && v->n == n;
    for (size_t i = 0; same && i < n; i++)
        same = v->values[i] == want[i];
    if (!ok(same, "%s: %s = %zu value(s)", what, name, n)) {
        if (!v) {
            diag("no fom %s", name);
            return;
        }
        for (size_t i = 0; i < v->n; i++)
            diag("got %.17g", v->values[i]);
        if (v->note)
            diag("note: %s", v->note);
    }
}

#define WANT(f, name, what, ...)                                                                 \
    do {                                                                                         \
        const double w_[] = {__VA_ARGS__};                                                       \
        want_values((f), (name), w_, sizeof w_ / sizeof *w_, (what));                            \
    } while (0)

static void want_none(const gpurun_foms_t *f, const char *name, const char *note, const char *what)
{
    const struct gpurun_fom_values *v = get(f, NULL, name);
    if (!ok(v && v->n == 0, "%s: no %s", what, name) && v)
        diag("got %zu value(s), the first %g", v->n, v->values[0]);
    if (note) {
        if (!ok(v && v->note && strstr(v->note, note), "%s: the note says '%s'", what, note))
            diag("note: %s", v && v->note ? v->note : "(none)");
    }
}

/* ---- real output ------------------------------------------------------- */

static void test_real_gromacs(void)
{
    gpurun_template_t *t = load_tpl("templates/gromacs.conf");
    if (!t)
        return;
    gpurun_foms_t f;
    gpurun_error_t err = {0};
    char *p = src_path("tests/logs/gromacs-water-2ranks.log");
    ok(read_file(t, p, &f, &err) == 0, "GROMACS md.log of 2 ranks reads");
    WANT(&f, "ns_per_day", "md.log, 2 ranks", 12.218);
    WANT(&f, "hour_per_ns", "md.log, 2 ranks", 1.964);
    is_str(get(&f, NULL, "ns_per_day")->units, "ns/day", "units of ns_per_day");
    is_str(get(&f, NULL, "hour_per_ns")->better, "lower", "hour_per_ns: lower is better");
    ok(gpurun_sanity_in_file(t, p) == 1, "... 'Finished mdrun' is in it");
    gpurun_foms_free(&f);
    free(p);

    p = src_path("tests/logs/gromacs-water-detailed.log");
    ok(read_file(t, p, &f, &err) == 0, "GMX_DETAILED_PERF_STATS md.log reads");
    WANT(&f, "ns_per_day", "(Mnbf/s) (GFlops) (ns/day) (hour/ns) layout", 60.916);
    WANT(&f, "hour_per_ns", "(Mnbf/s) (GFlops) (ns/day) (hour/ns) layout", 0.394);
    gpurun_foms_free(&f);
    free(p);

    p = src_path("tests/logs/gromacs-water-em.log");
    ok(read_file(t, p, &f, &err) == 0, "minimisation md.log reads");
    want_none(&f, "ns_per_day", NULL, "minimisation (no performance table)");
    want_none(&f, "hour_per_ns", NULL, "minimisation");
    ok(gpurun_sanity_in_file(t, p) == 1, "... yet it finished");
    gpurun_foms_free(&f);
    free(p);
    gpurun_template_destroy(t);

    /* The example's own template reads alike. */
    t = load_tpl("examples/water-box/water-box.conf");
    if (t) {
        p = src_path("tests/logs/gromacs-water-2ranks.log");
        ok(read_file(t, p, &f, &err) == 0, "examples/water-box/water-box.conf reads the md.log");
        WANT(&f, "ns_per_day", "water-box template", 12.218);
        ok(t->nsetup == 3, "water-box: 3 setup steps");
        gpurun_foms_free(&f);
        free(p);
        gpurun_template_destroy(t);
    }
}

static void test_real_lammps(void)
{
    gpurun_template_t *t = load_tpl("templates/lammps.conf");
    if (!t)
        return;
    gpurun_foms_t f;
    gpurun_error_t err = {0};
    char *p = src_path("tests/logs/lammps-lj-2runs.log");
    ok(read_file(t, p, &f, &err) == 0, "LAMMPS log of two runs reads");
    WANT(&f, "tau_per_day", "lj units, 2 runs", 413628.071, 536655.071);
    WANT(&f, "timesteps_per_s", "lj units, 2 runs", 957.472, 1242.257);
    WANT(&f, "loop_time", "lj units, 2 runs", 0.522208, 0.402493);
    want_none(&f, "ns_per_day", NULL, "lj units");
    ok(get(&f, NULL, "ns_per_day")->optional && !get(&f, NULL, "loop_time")->optional,
       "ns_per_day is optional, loop_time is not");
    ok(gpurun_sanity_in_file(t, p) == 1, "... 'Total wall time:' is in it");
    gpurun_foms_free(&f);
    free(p);

    p = src_path("tests/logs/lammps-argon-real.log");
    ok(read_file(t, p, &f, &err) == 0, "LAMMPS log in real units reads");
    WANT(&f, "ns_per_day", "real units", 381.169);
    WANT(&f, "hours_per_ns", "real units", 0.063);
    WANT(&f, "timesteps_per_s", "real units", 2205.838);
    want_none(&f, "tau_per_day", NULL, "real units");
    gpurun_foms_free(&f);
    free(p);

    /* The script printed "Performance: 999999.0 tau/day, ..." and another
     * before its run ended: LAMMPS wrote both into the log. */
    p = src_path("tests/logs/lammps-print-fake.log");
    ok(read_file(t, p, &f, &err) == 0, "LAMMPS log with fake Performance lines reads");
    WANT(&f, "tau_per_day", "fake lines printed by the script are not read", 505099.572);
    WANT(&f, "timesteps_per_s", "fake lines printed by the script are not read", 1169.212);
    gpurun_foms_free(&f);
    free(p);

    /* electron units: "Performance: X fs/day, 0.000 hours/fs, Y timesteps/s,
     * Z katom-step/s", after a minimisation (its loop time, no Performance). */
    p = src_path("tests/logs/lammps-electron-eff-ch4.log");
    ok(read_file(t, p, &f, &err) == 0, "LAMMPS log in electron units reads");
    WANT(&f, "fs_per_day", "electron units", 26577371.575);
    WANT(&f, "timesteps_per_s", "electron units", 61521.693);
    WANT(&f, "loop_time", "electron units, a minimisation and a run", 0.0230482, 1.62544);
    want_none(&f, "ns_per_day", NULL, "electron units");
    want_none(&f, "tau_per_day", NULL, "electron units");
    ok(get(&f, NULL, "fs_per_day") && get(&f, NULL, "fs_per_day")->optional, "fs_per_day is optional");
    gpurun_foms_free(&f);
    free(p);

    /* A `run 0` before the run and one after it: each writes "Loop time of
     * ... for 0 steps" (no Performance line); the last one was read as the
     * loop time, 1.014e-06 s. */
    p = src_path("tests/logs/lammps-lj-run0.log");
    ok(read_file(t, p, &f, &err) == 0, "LAMMPS log with a run 0 before and after its run reads");
    WANT(&f, "loop_time", "run 0 twice: only the run of 300 steps", 0.621949);
    WANT(&f, "tau_per_day", "run 0 twice", 208377.313);
    WANT(&f, "timesteps_per_s", "run 0 twice", 482.355);
    ok(gpurun_sanity_in_file(t, p) == 1, "... passes");
    gpurun_foms_free(&f);
    free(p);
    gpurun_template_destroy(t);
}

static void test_real_hpl(void)
{
    gpurun_template_t *t = load_tpl("templates/hpl.conf");
    if (!t)
        return;
    gpurun_foms_t f;
    gpurun_error_t err = {0};
    char *p = src_path("tests/logs/hpcc-2tests-hpccoutf.txt");
    ok(read_file(t, p, &f, &err) == 0, "hpccoutf.txt with two HPL tests reads");
    WANT(&f, "gflops", "HPL, N = 1000 and 1500", 4.184, 5.456);
    WANT(&f, "time_s", "HPL, N = 1000 and 1500", 0.16, 0.41);
    ok(gpurun_sanity_in_file(t, p) == 1, "... every residual check passed");
    gpurun_foms_free(&f);
    /* The same two tests with a negative threshold (no residual check):
     * HPL prints one header over both rows; the second was not read. */
    {
        char *q = src_path("tests/logs/hpcc-nocheck-hpccoutf.txt");
        ok(read_file(t, q, &f, &err) == 0, "hpccoutf.txt of two HPL tests without the residual check reads");
        WANT(&f, "gflops", "both rows under one header", 0.7774, 1.656);
        WANT(&f, "time_s", "both rows under one header", 0.86, 1.36);
        gpurun_foms_free(&f);
        free(q);
    }
    gpurun_template_destroy(t);

    /* The same output with the HPL residual check failed. */
    char *text = NULL;
    size_t len = 0;
    FILE *in = fopen(p, "rb");
    if (in) {
        text = calloc(1, 1 << 20);
        len = fread(text, 1, (1 << 20) - 1, in);
        fclose(in);
    }
    free(p);
    char *at = text ? strstr(text, "              0 tests completed and failed residual checks,") : NULL;
    if (!ok(at != NULL, "hpccoutf.txt has HPL's residual summary")) {
        free(text);
        return;
    }
    /* As HPL reports a failed test: its residual line and the summary. */
    at[14] = '1';
    char *passed = strstr(text, "...... PASSED");
    if (passed)
        memcpy(passed, "...... FAILED", 13);
    p = put_file("hpccoutf-failed.txt", text, len);
    t = load_tpl("templates/hpl.conf");
    ok(t && gpurun_sanity_in_file(t, p) == 0, "a failed HPL residual check fails the sanity check");
    gpurun_template_destroy(t);
    free(p);
    free(text);
}

/* Real forms of success that are not the closing lines the templates first
 * looked for (issue 11): a LAMMPS script ended by `quit`, NVIDIA's HPL,
 * which prints a PASSED line per test and no summary; and the failures
 * that must still fail (tests/logs/README.md says where each comes from). */
static char *text_of(const char *path, size_t *lenp)
{
    FILE *in = fopen(path, "rb");
    char *text = calloc(1, 1 << 20);
    *lenp = in && text ? fread(text, 1, (1 << 20) - 1, in) : 0;
    if (in)
        fclose(in);
    return text;
}

static void test_sanity_forms(void)
{
    gpurun_template_t *t = load_tpl("templates/lammps.conf");
    if (!t)
        return;
    ok(t->nsanity == 2 && !strcmp(t->sanity, "Total wall time:"), "lammps: two accepted forms, the first for messages");
    gpurun_foms_t f;
    gpurun_error_t err = {0};
    const char *quit_logs[] = {"tests/logs/lammps-lj-quit.log", "tests/logs/lammps-2aug2023-quit.log"};
    for (size_t i = 0; i < 2; i++) {
        char *p = src_path(quit_logs[i]);
        char why[512];
        is_int(gpurun_sanity_file_check(t, p, why, sizeof why), 1, "%s: ended by quit, no 'Total wall time:': passes",
               quit_logs[i]);
        ok(read_file(t, p, &f, &err) == 0 && get(&f, NULL, "loop_time")->n == 1, "... its one run's loop time is read");
        gpurun_foms_free(&f);
        /* The same log cut short inside its run: no Loop time line. */
        size_t len;
        char *text = text_of(p, &len);
        char *cut = strstr(text, "Loop time of");
        if (ok(cut != NULL, "... has a Loop time line")) {
            *cut = '\0';
            char *q = put_file("lammps-cut.log", text, strlen(text));
            is_int(gpurun_sanity_file_check(t, q, why, sizeof why), 0, "... cut before it: fails");
            if (!ok(strstr(why, "any of 'Total wall time:', 'Loop time of ' does not appear in") != NULL, "... saying which forms"))
                diag("why: %s", why);
            ok(read_file(t, q, &f, &err) == 0 && get(&f, NULL, "loop_time")->n == 0, "... and has no loop time");
            gpurun_foms_free(&f);
            free(q);
        }
        free(text);
        free(p);
    }
    /* A script whose first run completed and whose second died (LAMMPS's
     * ERROR line), and a log whose echoed input merely mentions one. */
    {
        ok(t->nfailure == 2, "lammps: two failure texts");
        char *p = src_path("tests/logs/lammps-error-2nd-run.log");
        char why[512];
        is_int(gpurun_sanity_file_check(t, p, why, sizeof why), 0, "a second run that died with ERROR: fails");
        if (!ok(strstr(why, "'^ERROR: ' appears in") != NULL && strstr(why, ", line 22") != NULL, "... saying what and where"))
            diag("why: %s", why);
        free(p);
        p = src_path("tests/logs/lammps-lj-quit.log");
        size_t len;
        char *text = text_of(p, &len);
        char *echo = gpurun_xasprintf("# ERROR: stop here if the box is wrong\n"
                                      "if \"${n} < 0\" then \"print 'ERROR: n < 0'\" \"quit 1\"\n%s", text);
        char *q = put_file("lammps-echo.log", echo, strlen(echo));
        is_int(gpurun_sanity_file_check(t, q, why, sizeof why), 1, "an echoed comment and command that mention ERROR: pass");
        free(q);
        free(echo);
        free(text);
        free(p);
    }
    gpurun_template_destroy(t);

    /* GROMACS: a continuation appended to md.log after a finished part,
     * which died with mdrun's fatal error. */
    t = load_tpl("templates/gromacs.conf");
    if (!t)
        return;
    {
        ok(t->nfailure == 8 && !strcmp(t->failure[0], "^(ERROR|WARNING) [0-9]+ \\[file ") &&
               !strcmp(t->failure[1], "^Fatal error:"),
           "gromacs: eight failure patterns, grompp's errors and warnings first, then mdrun's fatal error");
        char *p = src_path("tests/logs/gromacs-water-2ranks.log");
        char *a = src_path("tests/logs/gromacs-append-fatal.txt");
        size_t len, alen;
        char *text = text_of(p, &len), *app = text_of(a, &alen);
        char *both = gpurun_xasprintf("%s%s", text, app);
        char *q = put_file("gromacs-appended.log", both, strlen(both));
        char why[512];
        is_int(gpurun_sanity_file_check(t, p, why, sizeof why), 1, "gromacs: the finished log passes");
        is_int(gpurun_sanity_file_check(t, q, why, sizeof why), 0, "a continuation that died with Fatal error: fails");
        if (!ok(strstr(why, "'^Fatal error:' appears in") != NULL && strstr(why, ", line 630") != NULL,
                "... saying what and where"))
            diag("why: %s", why);
        free(q);
        free(both);
        free(app);
        free(text);
        free(a);
        free(p);
    }
    /* Real md.logs of GROMACS 2022.5: a run stopped by SIGTERM after its
     * counters were reset (mdrun wrote its table and 'Finished mdrun', and
     * exited 1) fails; the same kind of run continued to its end with
     * mdrun -cpi (appending after the TERM line) passes, with the
     * continuation's figures; a run stopped by -maxh (exit 0) passes. */
    {
        ok(t->nfailure == 8 && !strcmp(t->failure[2], "^Received the ") && t->nrestart == 1,
           "gromacs: a signal is a failure; the appending banner restarts the log");
        const struct {
            const char *log;
            int pass;
            double ns_per_day;
            const char *why;
        } g[] = {
            {"tests/logs/gromacs-water-term.log", 0, 22.575, "'^Received the ' appears in"},
            {"tests/logs/gromacs-water-term-cont.log", 1, 32.989, NULL},
            {"tests/logs/gromacs-water-maxh.log", 1, 21.052, NULL},
        };
        for (size_t i = 0; i < sizeof g / sizeof *g; i++) {
            char *p = src_path(g[i].log);
            char why[512];
            is_int(gpurun_sanity_file_check(t, p, why, sizeof why), g[i].pass, "%s: %s", g[i].log,
                   g[i].pass ? "passes" : "fails");
            if (g[i].why && !ok(strstr(why, g[i].why) != NULL && strstr(why, ", line 526") != NULL,
                                "... saying what and where"))
                diag("why: %s", why);
            if (ok(read_file(t, p, &f, &err) == 0, "... reads"))
                WANT(&f, "ns_per_day", g[i].log, g[i].ns_per_day);
            gpurun_foms_free(&f);
            free(p);
        }
    }
    gpurun_template_destroy(t);

    t = load_tpl("templates/hpl.conf");
    if (!t)
        return;
    ok(t->nsanity == 3 && t->nfailure == 2, "hpl: three accepted forms and two failure texts");
    {
        /* No residual check (a negative threshold): HPL's summary says so. */
        char *p = src_path("tests/logs/hpcc-nocheck-hpccoutf.txt");
        char why[512];
        if (!is_int(gpurun_sanity_file_check(t, p, why, sizeof why), 1,
                    "hpcc: HPL run without its residual check ('2 tests completed without checking,'): passes"))
            diag("why: %s", why);
        free(p);
        /* hpcc's own PTRANS says "... without checking." whatever HPL did. */
        char *text = gpurun_xasprintf("Finished   10 tests, with the following results:\n"
                                      "   10 tests completed without checking.\n"
                                      "    0 tests skipped because of illegal input values.\n");
        char *q = put_file("ptrans-only.txt", text, 0);
        is_int(gpurun_sanity_file_check(t, q, why, sizeof why), 0, "... PTRANS's '... without checking.' alone: fails");
        free(q);
        free(text);
    }
    /* Real hpcc 1.5.0 output of two HPL tests, the second too big for
     * malloc (ulimit -v): skipped with HPL's "HPL ERROR from process # 0"
     * message, the summary still saying "0 tests completed and failed
     * residual checks,"; it passed on the first test's 2.715 GFLOP/s. */
    {
        char *p = src_path("tests/logs/hpcc-skip-hpccoutf.txt");
        char why[512];
        is_int(gpurun_sanity_file_check(t, p, why, sizeof why), 0, "hpcc: an HPL test skipped (malloc failed): fails");
        if (!ok(strstr(why, "'^HPL ERROR ' appears in") != NULL && strstr(why, ", line 324") != NULL,
                "... saying what and where"))
            diag("why: %s", why);
        if (ok(read_file(t, p, &f, &err) == 0, "... reads"))
            WANT(&f, "gflops", "hpcc, the test that ran", 2.715);
        gpurun_foms_free(&f);
        free(p);
    }
    const struct {
        const char *log;
        size_t n;
        double last;
    } hpl[] = {
        {"tests/logs/hpl-2.3-netlib.out", 1, 30.367},
        {"tests/logs/hpl-nvidia-23.10.out", 1, 6.855e5},
        {"tests/logs/hpl-nvidia-24.09.out", 2, 9.373e5},
        /* T/V forms other than netlib's eight characters: NVIDIA's WC0, AMD's WR0XR8C48 */
        {"tests/logs/hpl-nvidia-25.04.out", 1, 3.370e5},
        {"tests/logs/hpl-amd-zen4.out", 1, 1.0110e3},
    };
    for (size_t i = 0; i < sizeof hpl / sizeof *hpl; i++) {
        char *p = src_path(hpl[i].log);
        char why[512];
        is_int(gpurun_sanity_file_check(t, p, why, sizeof why), 1, "%s: passes", hpl[i].log);
        const struct gpurun_fom_values *g = NULL;
        if (read_file(t, p, &f, &err) == 0)
            g = get(&f, NULL, "gflops");
        ok(g && g->n == hpl[i].n && fabs(g->values[g->n - 1] - hpl[i].last) < 1e-9 * hpl[i].last,
           "... its GFLOP/s read: %zu, last %g", g ? g->n : 0, g && g->n ? g->values[g->n - 1] : NAN);
        gpurun_foms_free(&f);
        /* Its last test failed the residual check (NVIDIA's HPL: no summary to say so). */
        size_t len;
        char *text = text_of(p, &len), *last = NULL;
        for (char *at = strstr(text, "...... PASSED"); at; at = strstr(at + 1, "...... PASSED"))
            last = at;
        if (ok(last != NULL, "... has a PASSED line")) {
            memcpy(last, "...... FAILED", 13);
            char *q = put_file("hpl-failed.out", text, len);
            is_int(gpurun_sanity_file_check(t, q, why, sizeof why), 0, "... with its last residual check FAILED: fails");
            if (!ok(strstr(why, "'[.]{6} FAILED' appears in") != NULL, "... saying what and where"))
                diag("why: %s", why);
            free(q);
        }
        free(text);
        free(p);
    }
    gpurun_template_destroy(t);

    /* The keys: a string is a list of one; an item with a control character is refused. */
    const char head[] = "description = \"d\"\ncommand = \"x\"\n";
    char text[256];
    snprintf(text, sizeof text, "%ssanity = \"done\"\nfailure = { \"bad\", \"worse\" }\n", head);
    t = NULL;
    ok(gpurun_template_parse(text, strlen(text), "tpl.conf", &t, &err) == 0 && t->nsanity == 1 &&
           !strcmp(t->sanity, "done") && t->nfailure == 2 && !strcmp(t->failure[1], "worse"),
       "sanity as one string, failure as a list");
    gpurun_template_destroy(t);
    snprintf(text, sizeof text, "%sfailure = { \"bad\", \"a\tb\" }\n", head);
    t = NULL;
    ok(gpurun_template_parse(text, strlen(text), "tpl.conf", &t, &err) < 0 &&
           strstr(err.text, "tpl.conf:3: key 'failure', item 2: ") != NULL,
       "a failure text with a tab is refused, naming the item: %s", err.text);
    gpurun_template_destroy(t);

    /* restart: what came before a file's last restart line does not count,
     * neither a failure nor the sanity text. */
    snprintf(text, sizeof text, "%ssanity = \"done\"\nfailure = \"^bad\"\nrestart = \"^again\"\n", head);
    t = NULL;
    if (ok(gpurun_template_parse(text, strlen(text), "tpl.conf", &t, &err) == 0 && t->nrestart == 1 &&
               !strcmp(t->restart[0], "^again"),
           "restart as one string")) {
        const struct {
            const char *text;
            int pass;
            const char *what;
        } r[] = {
            {"bad\nagain\ndone\n", 1, "a failure, then a restart that completed: passes"},
            {"done\nagain\nbad\ndone\n", 0, "a restart that failed after an earlier part completed: fails"},
            {"done\nagain\n", 0, "a restart cut short after an earlier part completed: fails"},
            {"bad\n again\ndone\n", 0, "a restart text not at the start of its line (^) restarts nothing"},
            {"again\nbad\nagain\nbad\nagain\ndone\n", 1, "only the last restart counts"},
        };
        for (size_t i = 0; i < sizeof r / sizeof *r; i++) {
            char *q = put_file("restart.log", r[i].text, 0);
            char why[256];
            is_int(gpurun_sanity_file_check(t, q, why, sizeof why), r[i].pass, "%s", r[i].what);
            free(q);
        }
    }
    gpurun_template_destroy(t);
    snprintf(text, sizeof text, "%srestart = { \"again\", \"\" }\n", head);
    t = NULL;
    ok(gpurun_template_parse(text, strlen(text), "tpl.conf", &t, &err) < 0 &&
           strstr(err.text, "tpl.conf:3: key 'restart', item 2: ") != NULL,
       "an empty restart text is refused, naming the item: %s", err.text);
    gpurun_template_destroy(t);
}

/* A failed rank's output (failure.h): its lines only, the last ones, the
 * template's `failure` patterns (POSIX extended regexes) before gpurun's
 * own, a title's message, and no more of the file than its end. */
static void test_failure_tail(void)
{
    gpurun_error_t err = {0};
    const char head[] = "description = \"d\"\ncommand = \"x\"\n";
    char text[512];
    gpurun_template_t *t = NULL;
    snprintf(text, sizeof text, "%sfailure = { \"^Fatal error:\", \"([\" }\n", head);
    ok(gpurun_template_parse(text, strlen(text), "tpl.conf", &t, &err) < 0 &&
           strstr(err.text, "tpl.conf:3: key 'failure', item 2: '([' is not a POSIX extended regex") != NULL,
       "a failure pattern that is no regex is refused at load, naming file, line, key and item: %s", err.text);
    gpurun_template_destroy(t);
    snprintf(text, sizeof text, "%sfailure = \"(a{1,255}){1,255}\"\n", head);
    t = NULL;
    ok(gpurun_template_parse(text, strlen(text), "tpl.conf", &t, &err) < 0 &&
           strstr(err.text, "key 'failure', item 1: ") != NULL && strstr(err.text, "too costly") != NULL,
       "... and so is one too costly to compile: %s", err.text);
    gpurun_template_destroy(t);

    snprintf(text, sizeof text, "%ssanity = \"done\"\nfailure = { \"^Fatal error:\", \"^ERROR [0-9]+:\" }\n", head);
    t = NULL;
    if (!ok(gpurun_template_parse(text, strlen(text), "tpl.conf", &t, &err) == 0, "failure as regexes: %s",
            err.text))
        return;
    char *q = put_file("regex.log", "ERROR 12: bad\ndone\n", 0);
    char why[256];
    is_int(gpurun_sanity_file_check(t, q, why, sizeof why), 0, "a failure pattern is a regex: ^ERROR [0-9]+: matches");
    free(q);
    q = put_file("regex.log", "ERROR x: not it\ndone\n", 0);
    is_int(gpurun_sanity_file_check(t, q, why, sizeof why), 1, "... and only what it matches");
    free(q);

    /* Rank 1's lines among rank 0's in a host's file; a crash reported
     * before mdrun's own error; the error is a title and its message. */
    const char *host_out = "0: starting\n"
                           "1: starting\n"
                           "1: [vm:1] Signal: Segmentation fault (11)\n"
                           "0: step 10\n"
                           "1: -------------------------------------------------------\n"
                           "1: Fatal error:\n"
                           "1: The X-size of the box (3.0) is smaller than\n"
                           "1: the number of DD cells (4) times the cut-off\n"
                           "1: \n"
                           "1: For more information\n"
                           "1: -------------------------------------------------------\n"
                           "0: step 20\n"
                           "1: last \033[31mred\033[0m \xff line\n";
    q = put_file("vm.out", host_out, 0);
    FILE *f = fopen(q, "r");
    struct gpurun_rank_tail tl;
    if (ok(f && gpurun_rank_tail_read(fileno(f), "1: ", 4, t, &tl, &err) == 0, "a rank's tail is read")) {
        ok(tl.n == 4 && !strcmp(tl.lines[0], "") && !strcmp(tl.lines[1], "For more information") && tl.whole,
           "... its last 4 lines, without their label, none of rank 0's");
        ok(!strcmp(tl.lines[3], "last \\x1b[31mred\\x1b[0m \\xff line"),
           "... fit for a terminal and for JSON: %s", tl.lines[3]);
        ok(tl.ncause == 3 && !strcmp(tl.cause[0], "Fatal error:") &&
               !strcmp(tl.cause[2], "the number of DD cells (4) times the cut-off"),
           "... the template's pattern before gpurun's (Segmentation fault, earlier): a title and its message");
        char *reason = gpurun_rank_tail_reason(&tl);
        ok(reason && !strcmp(reason, "Fatal error: The X-size of the box (3.0) is smaller than the number of DD "
                                     "cells (4) times the cut-off"),
           "... as one line: %s", reason ? reason : "(none)");
        free(reason);
        gpurun_rank_tail_free(&tl);
    }
    if (f)
        fclose(f);
    free(q);

    /* Without the template's: gpurun's own patterns, in a rank's own file. */
    q = put_file("rank.0.out", "loading\nRuntimeError: CUDA error: out of memory\nbye\n", 0);
    f = fopen(q, "r");
    if (ok(f && gpurun_rank_tail_read(fileno(f), NULL, 20, NULL, &tl, &err) == 0, "a rank's own file")) {
        ok(tl.n == 3 && tl.ncause == 1 && !strcmp(tl.cause[0], "RuntimeError: CUDA error: out of memory"),
           "... gpurun's own pattern (CUDA error) names the cause");
        gpurun_rank_tail_free(&tl);
    }
    if (f)
        fclose(f);
    free(q);

    /* A file larger than what is read: its end only.  The error at its
     * start is not seen, the last lines are. */
    size_t big = 3 * GPURUN_TAIL_BYTES;
    char *huge = gpurun_xmalloc(big + 64);
    size_t o = (size_t)sprintf(huge, "0: Fatal error:\n0: far away\n");
    while (o < big)
        o += (size_t)sprintf(huge + o, "0: filler line %zu\n", o);
    o += (size_t)sprintf(huge + o, "0: the end\n");
    q = put_file("big.out", huge, o);
    f = fopen(q, "r");
    if (ok(f && gpurun_rank_tail_read(fileno(f), "0: ", 2, t, &tl, &err) == 0, "a 3 MiB output")) {
        ok(!tl.whole && tl.ncause == 0 && tl.n == 2 && !strcmp(tl.lines[1], "the end") &&
               !strncmp(tl.lines[0], "filler line ", 12),
           "... only its last %u bytes are read: its last lines, not the error at its start", GPURUN_TAIL_BYTES);
        gpurun_rank_tail_free(&tl);
    }
    if (f)
        fclose(f);
    free(q);
    free(huge);
    gpurun_template_destroy(t);

    /* Every shipped template's patterns compile; pytorch-ddp's finds a
     * traceback's last line. */
    t = load_tpl("templates/pytorch-ddp.conf");
    if (t) {
        q = put_file("rank.1.out",
                     "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
                     "    raise RuntimeError('x')\ntorch.distributed.DistBackendError: NCCL error in: x.cpp:1\n",
                     0);
        f = fopen(q, "r");
        if (ok(f && gpurun_rank_tail_read(fileno(f), NULL, 20, t, &tl, &err) == 0, "pytorch-ddp: a traceback")) {
            ok(tl.ncause == 1 && !strncmp(tl.cause[0], "torch.distributed.DistBackendError: NCCL error", 46),
               "... its last line is the cause, not the code line above it: %s", tl.ncause ? tl.cause[0] : "-");
            gpurun_rank_tail_free(&tl);
        }
        if (f)
            fclose(f);
        free(q);
        gpurun_template_destroy(t);
    }
}

/* glibc's regcomp() copies a part once per `+` or interval repeat: stacked
 * or nested repetitions take gigabytes (fuzz-template found one).  A `+`
 * on what can match nothing costs more again (its epsilon closures), and
 * so does a long run of such parts, and a * on one (fuzz-template found
 * these in stop 19: "]+?+++++++++++++++", 300 s and 2 GB in regcomp). */
/* Benchmarks a centre runs on its GPU clusters: HPCG, nccl-tests, STREAM,
 * OSU Micro-Benchmarks, NAMD,
 * each on public output of the program (tests/logs/README.md says where
 * each was published), passing and failing runs. */
struct bench_log {
    const char *log;
    const char *fom;
    double value; /* the last value; NAN: none */
    int sanity;   /* gpurun_sanity_file_check: 1 passes, 0 fails */
    const char *why; /* part of the reason a failing one gives */
};

static void check_bench(const char *tpl, const struct bench_log *b, size_t n)
{
    char rel[128];
    snprintf(rel, sizeof rel, "templates/%s.conf", tpl);
    gpurun_template_t *t = load_tpl(rel);
    if (!t)
        return;
    for (size_t i = 0; i < n; i++) {
        char *p = src_path(b[i].log);
        gpurun_foms_t f;
        gpurun_error_t err = {0};
        const struct gpurun_fom_values *v = NULL;
        if (read_file(t, p, &f, &err) == 0)
            v = get(&f, NULL, b[i].fom);
        if (isnan(b[i].value))
            ok(v && v->n == 0, "%s: %s: no %s", tpl, b[i].log, b[i].fom);
        else if (!ok(v && v->n >= 1 && v->values[v->n - 1] == b[i].value, "%s: %s: %s = %g", tpl, b[i].log,
                     b[i].fom, b[i].value))
            diag("got %zu value(s), the last %g", v ? v->n : 0, v && v->n ? v->values[v->n - 1] : NAN);
        gpurun_foms_free(&f);
        char why[512] = "";
        is_int(gpurun_sanity_file_check(t, p, why, sizeof why), b[i].sanity, "... %s",
               b[i].sanity ? "passes" : "fails");
        if (b[i].why && !ok(strstr(why, b[i].why) != NULL, "... saying '%s'", b[i].why))
            diag("why: %s", why);
        free(p);
    }
    gpurun_template_destroy(t);
}

static void test_benchmarks(void)
{
    /* HPCG's official rating in its three forms, not the "2.4 rating"
     * (3.30318, 73.1585) nor the Raw Total printed beside it. */
    const struct bench_log hpcg[] = {
        {"tests/logs/hpcg-3.1-reference.txt", "gflops", 3.18753, 1, NULL},
        {"tests/logs/hpcg-nvidia-stdout.txt", "gflops", 72.8829, 1, NULL},
        {"tests/logs/hpcg-3.0-yaml-summary.txt", "gflops", 0.773687, 1, NULL},
        /* "final = 202.6 GF" and no verdict: nothing read, and it fails */
        {"tests/logs/hpcg-nvidia-k80-2017.txt", "gflops", NAN, 0, "does not appear"},
    };
    check_bench("hpcg", hpcg, sizeof hpcg / sizeof *hpcg);
    const struct bench_log nccl[] = {
        {"tests/logs/nccl-tests-2.18.2-gh200.log", "busbw_avg", 14.9966, 1, NULL},
        {"tests/logs/nccl-tests-a100-16gpu.log", "busbw_avg", 220.921, 1, NULL},
        /* wrong results: the average is printed all the same */
        {"tests/logs/nccl-tests-2.17.8-wrong.log", "busbw_avg", 4.79995, 0, "' FAILED' appears in"},
    };
    check_bench("nccl-tests", nccl, sizeof nccl / sizeof *nccl);
    const struct bench_log stream[] = {
        {"tests/logs/stream-5.10-lpi4a.txt", "triad_MBps", 6125.3, 1, NULL},
        {"tests/logs/stream-5.10-lpi4a.txt", "copy_MBps", 8239.8, 1, NULL},
        {"tests/logs/stream-5.10-lpi4a.txt", "add_MBps", 6132.5, 1, NULL},
        {"tests/logs/stream-5.10-failed-sam460ex.txt", "triad_MBps", 763.2, 0,
         "'Failed Validation on array' appears in"},
    };
    check_bench("stream", stream, sizeof stream / sizeof *stream);
    /* OMB: the first number on the row of size 8 (osu-latency) or 4194304
     * (osu-bw), in 5.x and 7.x forms, with -f's and --validation's columns. */
    const struct bench_log osu_lat[] = {
        {"tests/logs/osu-5.7-latency-pkb.txt", "latency_us", 56.51, 1, NULL},
        {"tests/logs/osu-5.7-allreduce-full-pkb.txt", "latency_us", 49.34, 1, NULL},
        {"tests/logs/osu-7.5-latency-cxi.txt", "latency_us", 3.34, 1, NULL},
        {"tests/logs/osu-7.5-latency-validation.txt", "latency_us", 3.07, 1, NULL},
        {"tests/logs/osu-7.3-bcast-ompi.txt", "latency_us", 14.23, 1, NULL},
    };
    check_bench("osu-latency", osu_lat, sizeof osu_lat / sizeof *osu_lat);
    const struct bench_log osu_bw[] = {
        {"tests/logs/osu-7.3-bw-efa.txt", "bandwidth_MBps", 12148.06, 1, NULL},
        {"tests/logs/osu-5.8-bw-azure.txt", "bandwidth_MBps", 24453.38, 1, NULL},
        {"tests/logs/osu-7.5-bibw-cuda-validation.txt", "bandwidth_MBps", 46437.18, 1, NULL},
        /* sizes 4 and 8 only: no row for 4194304, no figure */
        {"tests/logs/osu-5.7-bw-pkb.txt", "bandwidth_MBps", NAN, 1, NULL},
    };
    check_bench("osu-bw", osu_bw, sizeof osu_bw / sizeof *osu_bw);
    /* NAMD: the last Benchmark time line; WallClock: ends a finished run. */
    const struct bench_log namd[] = {
        {"tests/logs/namd-2.13-apoa1-64cpu.txt", "days_per_ns", 0.132556, 1, NULL},
        {"tests/logs/namd-2.13-apoa1-64cpu.txt", "s_per_step", 0.0114528, 1, NULL},
        {"tests/logs/namd-2.13-stmv-1cpu.txt", "days_per_ns", 66.1242, 1, NULL},
    };
    check_bench("namd", namd, sizeof namd / sizeof *namd);

    /* HPCG's verdict when a check failed (ReportResults.cpp's else branch, in
     * the key=value form of OutputFile::generate): no rating, and it fails. */
    char *p = src_path("tests/logs/hpcg-3.1-reference.txt");
    size_t len;
    char *text = text_of(p, &len);
    free(p);
    char *fs = strstr(text, "\nFinal Summary::");
    if (ok(fs != NULL, "hpcg: the 3.1 report has its Final Summary")) {
        strcpy(fs + 1, "Final Summary::HPCG result is=INVALID.\n"
                       "Final Summary::Please review the YAML file contents=You may NOT submit these "
                       "results for consideration.\n");
        char *q = put_file("hpcg-invalid.txt", text, 0);
        gpurun_template_t *t = load_tpl("templates/hpcg.conf");
        gpurun_foms_t f;
        gpurun_error_t err = {0};
        if (t && read_file(t, q, &f, &err) == 0) {
            want_none(&f, "gflops", NULL, "hpcg: INVALID");
            gpurun_foms_free(&f);
        }
        char why[512] = "";
        ok(t && gpurun_sanity_file_check(t, q, why, sizeof why) == 0 &&
               strstr(why, "'HPCG result is=INVALID' appears in"),
           "hpcg: an INVALID run fails, on its verdict");
        /* The same with a rating line too (a log of two runs, the last INVALID). */
        char *both = NULL;
        if (asprintf(&both, "Final Summary::HPCG result is VALID with a GFLOP/s rating of=3.18753\n%s", text) < 0)
            abort();
        char *r = put_file("hpcg-valid-invalid.txt", both, 0);
        ok(t && gpurun_sanity_file_check(t, r, why, sizeof why) == 0, "hpcg: a VALID then an INVALID run fails");
        gpurun_template_destroy(t);
        free(both);
        free(r);
        free(q);
    }
    free(text);
}

static void test_regex_cost(void)
{
    const char *fine[] = {"^Performance: ([-+0-9.eE]+) ns/day,", "^W[RC][0-9]{2}[LCR][0-9][LCR][0-9]", "[]+]+x",
                          "([0-9]{1,3}\\.){3}[0-9]{1,3}", "a{1,255}", "a++++++++++++++++",
                          "^ *(-?[0-9.]+)? +(x?y?z?)+ *$", "a?++++", "(a?){10}+", "a?{255}", "(x*)*y", "a***"};
    for (size_t i = 0; i < sizeof fine / sizeof *fine; i++)
        ok(!gpurun_regex_cost_problem(fine[i]), "regex '%s' is fine", fine[i]);
    const char *costly[] = {"a+++++++++++++++++++++", "((((((((((((((((((a+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+",
                            "(a{1,255}){1,255}", "a?++++++++++", "]+?+++++++++++++++", "(a|)+++++++++",
                            "(a*b*)+++++++++", "x{0,3}+++++++++", "(^a)?+++++++++",
                            "a?{5000}", "(a?b?){3000}", "^D****************************************x"};
    for (size_t i = 0; i < sizeof costly / sizeof *costly; i++)
        ok(gpurun_regex_cost_problem(costly[i]) != NULL, "regex '%s' is refused", costly[i]);
    /* 1,400 "a?" in a row: fine; 2,000: refused (closures of 4,000 nodes) */
    char run[4001];
    for (int n = 0; n < 2; n++) {
        size_t parts = n ? 2000 : 1400;
        for (size_t i = 0; i < parts; i++)
            memcpy(run + 2 * i, "a?", 2);
        run[2 * parts] = '\0';
        ok((gpurun_regex_cost_problem(run) != NULL) == (n == 1), "%zu \"a?\" in a row are %s", parts,
           n ? "refused" : "fine");
    }
    char deep[1200];
    memset(deep, '(', sizeof deep - 2);
    deep[sizeof deep - 2] = 'a';
    deep[sizeof deep - 1] = '\0';
    ok(gpurun_regex_cost_problem(deep) != NULL, "1198 nested groups are refused");

    const char text[] =
        "description = \"d\"\ncommand = \"x\"\nfom f {\n    regex = \"^(a)++++++++++++++++++++++++\"\n}\n";
    gpurun_template_t *t = NULL;
    gpurun_error_t err = {0};
    ok(gpurun_template_parse(text, strlen(text), "tpl.conf", &t, &err) < 0 &&
           strstr(err.text, "tpl.conf:4: key 'fom.f.regex': '^(a)++++++++++++++++++++++++' is too costly") != NULL,
       "a template's stacked + is refused on its line: %s", err.text);
    gpurun_template_destroy(t);
}

/* A back-reference makes glibc try every split of the groups before it
 * ("(.*)(.*)(.*)\1\2\3x": minutes on 400 characters): refused in every
 * template regex, the template's file, line and key named. */
static void test_regex_backref(void)
{
    const char *refused[] = {"(.*)(.*)(.*)\\1\\2\\3x", "(a)\\1", "^(x+)+\\9$"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        const char *why = gpurun_regex_cost_problem(refused[i]);
        ok(why && strstr(why, "a back-reference"), "regex '%s' is refused: %s", refused[i], why ? why : "(fine)");
    }
    const char *fine[] = {"[\\1]x", "a\\\\1", "\\.1", "(a)\\.[0-9]"};
    for (size_t i = 0; i < sizeof fine / sizeof *fine; i++)
        ok(!gpurun_regex_cost_problem(fine[i]), "regex '%s' (no back-reference) is fine", fine[i]);
    static const struct {
        const char *keys, *where;
    } cases[] = {
        {"failure = { \"^Fatal\", \"(.*)(.*)(.*)\\\\1\\\\2\\\\3x\" }\n", "tpl.conf:3: key 'failure', item 2: "},
        {"progress = \"(.*)(.*)(.*)\\\\1\\\\2\\\\3x\"\n", "tpl.conf:3: key 'progress': "},
        {"progress = \"([0-9]+)\"\nprogress_after = \"(a)\\\\1\"\n", "tpl.conf:4: key 'progress_after': "},
        {"version = \"(.*)(.*)(.*)\\\\1\\\\2\\\\3x\"\n", "tpl.conf:3: key 'version': "},
        {"fom f {\n    regex = \"(.*)(.*)(.*)\\\\1\\\\2\\\\3x\"\n}\n", "tpl.conf:4: key 'fom.f.regex': "},
        {"fom f {\n    header = \"(x)\"\n    row = \"^(a)\\\\1\"\n}\n", "tpl.conf:5: key 'fom.f.row': "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[512];
        snprintf(text, sizeof text, "description = \"d\"\ncommand = \"x\"\n%s", cases[i].keys);
        gpurun_error_t err = {0};
        gpurun_template_t *t = parse_tpl(text, &err);
        ok(!t && err.code == GPURUN_EXIT_CONFIG && strstr(err.text, cases[i].where) &&
               strstr(err.text, "is too costly to match: a back-reference"),
           "a back-reference: exit 2 naming file, line and key: %s", err.text);
        gpurun_template_destroy(t);
    }
}

/* The run's budget for matching (util.h): a regex slower than 1 ms a line
 * and 1 s a MB is dropped once the budget is spent, with a note, and
 * matches nothing more; gpurun's own failure patterns go on.  A test budget
 * of 0 s drops it at its first slow line, so nothing waits on a clock: the
 * regex takes about 0.3 s on a line of 8 KiB, its allowance 9 ms. */
static void test_regex_budget(void)
{
    const char slow_re[] = "((a|b|ab|ba)*){40}x";
    ok(!gpurun_regex_cost_problem(slow_re), "'%s' compiles small", slow_re);
    char *line = gpurun_xmalloc(GPURUN_REGEX_LINE_MAX + 2);
    for (size_t i = 0; i < GPURUN_REGEX_LINE_MAX; i++)
        line[i] = "ab"[i % 2];
    line[GPURUN_REGEX_LINE_MAX] = '\0';
    regex_t slow, sound;
    if (regcomp(&slow, slow_re, REG_EXTENDED | REG_NOSUB) || regcomp(&sound, "^(ab)+$", REG_EXTENDED | REG_NOSUB))
        abort();
    struct gpurun_regex_budget b;
    struct gpurun_regex_spend s;
    gpurun_regex_budget_init(&b);
    ok(b.limit_s == GPURUN_REGEX_BUDGET_S && b.ndropped == 0, "a budget of %g s, nothing dropped", b.limit_s);
    b.limit_s = 0;
    gpurun_regex_spend_init(&s, "key 'x': '%s'", slow_re);
    is_int(gpurun_regexec_bounded(&b, &s, &slow, line, 0, NULL, 0), REG_NOMATCH, "a slow regex on 8 KiB: no match");
    ok(s.dropped && b.ndropped == 1 && b.nnotes == 1 &&
           !strncmp(b.notes[0], "key 'x': '((a|b|ab|ba)*){40}x': dropped: it took ", 49) &&
           strstr(b.notes[0], "the lines after those were not matched with it"),
       "... dropped past the budget, the note naming it: %s", b.notes[0]);
    is_int(gpurun_regexec_bounded(&b, &s, &slow, "x", 0, NULL, 0), REG_NOMATCH, "... then it matches nothing");
    is_int(gpurun_regexec_bounded(NULL, &s, &slow, "x", 0, NULL, 0), 0, "without a budget it is plain regexec");
    /* A sound regex on the same lines is well within its allowance. */
    struct gpurun_regex_spend s2;
    gpurun_regex_budget_init(&b);
    gpurun_regex_spend_init(&s2, "sound");
    int matched = 0;
    for (int i = 0; i < 200; i++)
        matched += gpurun_regexec_bounded(&b, &s2, &sound, line, 0, NULL, 0) == 0;
    ok(matched == 200 && !s2.dropped && b.ndropped == 0 && s2.calls == 200,
       "a sound regex on 200 lines of 8 KiB: never dropped");
    regfree(&slow);
    regfree(&sound);

    /* Through a template: a failed rank's tail, then its fom. */
    char text[256];
    snprintf(text, sizeof text,
             "description = \"d\"\ncommand = \"x\"\nfailure = \"%s\"\nfom f {\n    regex = \"(%s)\"\n}\n", slow_re,
             slow_re);
    gpurun_error_t err = {0};
    gpurun_template_t *t = parse_tpl(text, &err);
    if (!ok(t != NULL, "a template with slow failure and fom regexes loads: %s", err.text)) {
        free(line);
        return;
    }
    t->regex_budget->limit_s = 0;
    size_t len = strlen(line);
    char *out = gpurun_xmalloc(4 * (len + 1) + 64);
    size_t o = 0;
    for (int i = 0; i < 4; i++) {
        memcpy(out + o, line, len);
        o += len;
        out[o++] = '\n';
    }
    o += (size_t)sprintf(out + o, "Segmentation fault\n");
    char *q = put_file("slow.out", out, o);
    FILE *f = fopen(q, "r");
    struct gpurun_rank_tail tl;
    if (ok(f && gpurun_rank_tail_read(fileno(f), NULL, 2, t, &tl, &err) == 0, "a rank's tail with long lines")) {
        ok(tl.ncause == 1 && !strcmp(tl.cause[0], "Segmentation fault"),
           "... the slow failure pattern dropped, gpurun's own find the cause");
        gpurun_rank_tail_free(&tl);
    }
    if (f)
        fclose(f);
    ok(t->failure_spend[0].dropped && t->regex_budget->ndropped == 1 &&
           !strncmp(t->regex_budget->notes[0], "key 'failure', item 1: '((a|b|ab|ba)*){40}x': dropped: ", 55),
       "... the note names it: %s", t->regex_budget->notes[0]);
    gpurun_template_regex_reset(t);
    ok(!t->failure_spend[0].dropped && t->regex_budget->ndropped == 0 && t->regex_budget->nnotes == 0,
       "a new run: nothing spent, nothing dropped");
    t->regex_budget->limit_s = 0;
    gpurun_foms_t foms;
    char *files[] = {q, NULL};
    if (ok(gpurun_fom_read(t, tmpdir, NULL, NULL, files, &foms, &err) == 0, "the fom read from it")) {
        ok(foms.n == 1 && foms.f[0].n == 0 && t->regex_budget->ndropped == 1 &&
               !strncmp(t->regex_budget->notes[0], "key 'fom.f.regex': '(((a|b|ab|ba)*){40}x)': dropped: ", 53),
           "... its slow regex dropped at the first long line too, the note naming it: %s",
           t->regex_budget->notes[0]);
        gpurun_foms_free(&foms);
    }
    free(q);
    free(out);
    free(line);
    gpurun_template_destroy(t);
}

/* ---- hostile GROMACS logs --------------------------------------------- */

#define ACCOUNTING "     R E A L   C Y C L E   A N D   T I M E   A C C O U N T I N G\n\n"
#define TIME_LINES                                                                         \
    "               Core t (s)   Wall t (s)        (%)\n"                                    \
    "       Time:        1.234        0.617      200.0\n"
/* As GROMACS prints it: "%12s %12s %12s" over "%12s %12.3f %12.3f"; NS and H
 * are 12 characters wide. */
#define PERF(NS, H)                                                                        \
    "                 (ns/day)    (hour/ns)\n"                                               \
    "Performance: " NS " " H "\n"
#define FINISHED "Finished mdrun on rank 0 Mon Nov 30 01:37:41 2026\n"

struct gmx_case {
    const char *what;
    const char *log;
    size_t nns, nh; /* values of each */
    double ns[2], h[2];
    const char *note; /* in the ns_per_day note, when not NULL */
    int sanity;
};

static const struct gmx_case gmx_cases[] = {
    {"one run", ACCOUNTING TIME_LINES PERF("     140.044", "       0.171") FINISHED, 1, 1, {140.044}, {0.171}, NULL, 1},
    {"several runs in one log (appended)",
     ACCOUNTING TIME_LINES PERF("     140.044", "       0.171") FINISHED "\nLog file opened again\n" ACCOUNTING
         TIME_LINES PERF("     150.500", "       0.159") FINISHED,
     2, 2, {140.044, 150.5}, {0.171, 0.159}, NULL, 1},
    {"a fake Performance: line before the real one",
     "Performance:      999.000        0.024\n" PERF("     888.000", "       0.027") ACCOUNTING TIME_LINES
         PERF("     140.044", "       0.171") FINISHED,
     1, 1, {140.044}, {0.171}, NULL, 1},
    {"a fake Performance: line after the accounting, with no header above it",
     ACCOUNTING "Performance:      999.000        0.024\n" TIME_LINES PERF("     140.044", "       0.171") FINISHED, 1, 1,
     {140.044}, {0.171}, NULL, 1},
    {"cut short inside the Performance line (no newline)",
     ACCOUNTING TIME_LINES "                 (ns/day)    (hour/ns)\nPerformance:       62.0", 0, 0, {0}, {0},
     "no newline", 0},
    {"cut short before the table", ACCOUNTING TIME_LINES, 0, 0, {0}, {0}, NULL, 0},
    {"nan and inf", ACCOUNTING TIME_LINES PERF("         nan", "         inf") FINISHED, 0, 0, {0}, {0},
     "'nan' is not a finite number", 1},
    {"a number that overflows a double", ACCOUNTING TIME_LINES PERF("       1e999", "       0.171") FINISHED, 0, 1,
     {0}, {0.171}, "'1e999' is out of range", 1},
    {"-nan and a word", ACCOUNTING TIME_LINES PERF("        -nan", "        fast") FINISHED, 0, 0, {0}, {0},
     "not a finite number", 1},
    {"1.2.3 is not a number", ACCOUNTING TIME_LINES PERF("       1.2.3", "       0.171") FINISHED, 0, 1, {0},
     {0.171}, "'1.2.3' is not a number", 1},
    {"GMX_DETAILED_PERF_STATS, 4 numbers",
     ACCOUNTING TIME_LINES "                 (Mnbf/s)     (GFlops)     (ns/day)    (hour/ns)\n"
                           "Performance:        0.000       37.015       60.916        0.394\n" FINISHED,
     1, 1, {60.916}, {0.394}, NULL, 1},
    {"GMX_DETAILED_PERF_STATS, numbers wider than their columns",
     ACCOUNTING TIME_LINES "                 (Mnbf/s)     (GFlops)     (ns/day)    (hour/ns)\n"
                           "Performance: 123456789.000 1234567890.015       60.916        0.394\n" FINISHED,
     1, 1, {60.916}, {0.394}, NULL, 1},
    {"a minimisation: (steps/hour)",
     ACCOUNTING TIME_LINES "                 (steps/hour)\n" "Performance:       123456.7\n" FINISHED, 0, 0, {0},
     {0}, NULL, 1},
    {"CRLF line ends",
     ACCOUNTING TIME_LINES "                 (ns/day)    (hour/ns)\r\nPerformance:      140.044        0.171\r\n",
     1, 1, {140.044}, {0.171}, NULL, 0},
    {"tabs between the columns", ACCOUNTING "\t\t(ns/day)\t(hour/ns)\nPerformance:\t\t140.044\t0.171\n" FINISHED, 1,
     1, {140.044}, {0.171}, NULL, 1},
    {"the header, another line, then the row",
     ACCOUNTING "                 (ns/day)    (hour/ns)\nsomething else\nPerformance:        3.000        4.000\n", 0, 0,
     {0}, {0}, NULL, 0},
    {"a rule between the header and the row",
     ACCOUNTING "                 (ns/day)    (hour/ns)\n-------------------------------\n"
                "Performance:       62.028        0.387\n",
     1, 1, {62.028}, {0.387}, NULL, 0},
    {"an empty file", "", 0, 0, {0}, {0}, NULL, 0},
};

static bool same_values(const struct gpurun_fom_values *v, const double *want, size_t n)
{
    bool same = v && v->n == n;
    for (size_t k = 0; same && k < n; k++)
        same = v->values[k] == want[k];
    if (!same && v) {
        for (size_t k = 0; k < v->n; k++)
            diag("got %.17g", v->values[k]);
        if (v->note)
            diag("note: %s", v->note);
    }
    return same;
}

static void test_hostile_gromacs(void)
{
    gpurun_template_t *t = load_tpl("templates/gromacs.conf");
    if (!t)
        return;
    for (size_t i = 0; i < sizeof gmx_cases / sizeof *gmx_cases; i++) {
        const struct gmx_case *c = &gmx_cases[i];
        char name[32];
        snprintf(name, sizeof name, "gmx-%zu.log", i);
        char *p = put_file(name, c->log, 0);
        gpurun_foms_t f;
        gpurun_error_t err = {0};
        if (!ok(read_file(t, p, &f, &err) == 0, "%s: reads", c->what)) {
            diag("%s", err.text);
            free(p);
            continue;
        }
        const struct gpurun_fom_values *ns = get(&f, NULL, "ns_per_day"), *h = get(&f, NULL, "hour_per_ns");
        ok(same_values(ns, c->ns, c->nns), "%s: ns/day read %zu time(s), as written", c->what, c->nns);
        ok(same_values(h, c->h, c->nh), "%s: hour/ns read %zu time(s), as written", c->what, c->nh);
        if (c->note && !ok(ns->note && strstr(ns->note, c->note), "%s: the note says '%s'", c->what, c->note))
            diag("note: %s", ns->note ? ns->note : "(none)");
        is_int(gpurun_sanity_in_file(t, p), c->sanity, "%s: sanity %s", c->what, c->sanity ? "found" : "missing");
        gpurun_foms_free(&f);
        free(p);
    }

    /* Binary junk, with NUL bytes and the very words looked for. */
    char junk[70000];
    unsigned s = 12345;
    for (size_t i = 0; i < sizeof junk; i++) {
        s = s * 1103515245u + 12345u;
        junk[i] = (char)(s >> 16);
    }
    static const char words[] = "R E A L   C Y C L E   A N D   T I M E   A C C O U N T I N G\n"
                                "Performance:\0 1.0 2.0\n";
    memcpy(junk + 1000, words, sizeof words - 1);
    char *p = put_file("junk.bin", junk, sizeof junk);
    gpurun_foms_t f;
    gpurun_error_t err = {0};
    ok(read_file(t, p, &f, &err) == 0, "binary junk reads without harm");
    want_none(&f, "ns_per_day", NULL, "binary junk");
    gpurun_foms_free(&f);
    free(p);

    /* A line of 100000 characters, then a real table. */
    size_t big = 100000;
    char *longlog = malloc(big + 512);
    memset(longlog, 'x', big);
    longlog[big] = '\0';
    strcat(longlog, "\n" ACCOUNTING PERF("       7.500", "       3.200"));
    p = put_file("long.log", longlog, 0);
    ok(read_file(t, p, &f, &err) == 0, "a line of 100000 characters reads");
    WANT(&f, "ns_per_day", "after a line of 100000 characters", 7.5);
    gpurun_foms_free(&f);
    free(p);
    free(longlog);
    gpurun_template_destroy(t);
}

/* ---- files that cannot be read ---------------------------------------- */

static void test_unreadable(void)
{
    gpurun_template_t *t = load_tpl("templates/gromacs.conf");
    if (!t)
        return;
    gpurun_foms_t f;
    gpurun_error_t err = {0};
    char *p = tmp_path("missing.log");
    ok(read_file(t, p, &f, &err) == -1 && err.code == GPURUN_EXIT_CONFIG && f.n == 0,
       "a missing file is an error (exit 2)");
    ok(strstr(err.text, "missing.log") && strstr(err.text, "No such file"), "... naming it: %s", err.text);
    free(p);
    ok(read_file(t, tmpdir, &f, &err) == -1 && strstr(err.text, "a folder"), "a folder is an error: %s", err.text);
    p = tmp_path("fifo");
    if (mkfifo(p, 0600) == 0) {
        ok(read_file(t, p, &f, &err) == -1 && strstr(err.text, "not a regular file"),
           "a FIFO is an error, not a hang: %s", err.text);
        unlink(p);
    } else {
        skip("mkfifo: %s", strerror(errno));
    }
    free(p);
    ok(read_file(t, "/dev/zero", &f, &err) == -1, "/dev/zero is an error, not a hang");
    ok(gpurun_sanity_in_file(t, "/dev/zero") == -1, "... and no sanity either");
    gpurun_template_destroy(t);
}

/* ---- regex foms, run folders, several files ---------------------------- */

static void test_regex(void)
{
    gpurun_error_t err = {0};
    gpurun_template_t *t = parse_tpl("description = \"t\"\ncommand = \"x\"\n"
                                     "fom rate { regex = \"rate=([^ ]+)\"  units = \"${u}\" }\n"
                                     "fom first { regex = \"^first ([0-9.]+)\"  after = \"^BEGIN$\" }\n"
                                     "defaults { u = \"items/s\" }\n",
                                     &err);
    if (!ok(t != NULL, "a template of regex foms parses")) {
        diag("%s", err.text);
        return;
    }
    char *p = put_file("regex.out",
                       "rate=1.5 rate=2.5\n"          /* two on one line */
                       "rate=0x10 rate=1e5 rate=\n"   /* hex, a value, nothing */
                       "first 9\nBEGIN\nfirst 1\nfirst 2\nBEGIN\nfirst 3\n"
                       "rate=inf rate=-3\n",
                       0);
    gpurun_foms_t f;
    ok(read_file(t, p, &f, &err) == 0, "regex foms read");
    WANT(&f, "rate", "every match, several on a line, in order", 1.5, 2.5, 1e5, -3);
    is_str(get(&f, NULL, "rate")->units, "items/s", "units expanded from the defaults");
    ok(get(&f, NULL, "rate")->note && strstr(get(&f, NULL, "rate")->note, "'0x10' is not a decimal number") &&
           strstr(get(&f, NULL, "rate")->note, "(and 1 more)"),
       "hex and inf skipped, said: %s", get(&f, NULL, "rate")->note);
    WANT(&f, "first", "each `after` line admits one value", 1, 3);
    gpurun_foms_free(&f);

    /* Several files: each fom from each file, file by file. */
    char *q = put_file("regex2.out", "rate=7\n", 0);
    char *files[] = {p, q, NULL};
    ok(gpurun_fom_read(t, ".", NULL, NULL, files, &f, &err) == 0 && f.n == 4, "two files: 2 x 2 figures");
    ok(f.n == 4 && !strcmp(f.f[0].file, p) && !strcmp(f.f[0].name, "rate") && !strcmp(f.f[2].file, q) &&
           f.f[2].n == 1 && f.f[2].values[0] == 7 && f.f[3].n == 0,
       "... in file order, the foms of the first file first");
    json_t *j = gpurun_foms_json(&f);
    ok(j && json_real_value(json_object_get(json_object_get(j, "rate"), "value")) == 7 &&
           json_is_null(json_object_get(json_object_get(j, "first"), "value")),
       "JSON: the last value; null when not found");
    json_decref(j);
    gpurun_foms_free(&f);
    gpurun_template_destroy(t);
    free(q);

    /* A run folder: files relative to it, ${name} from the run, the rank
     * output without `file`. */
    t = parse_tpl("description = \"t\"\ncommand = \"x\"\n"
                  "fom a { file = \"${job}.log\"  regex = \"a=([0-9]+)\" }\n"
                  "fom b { regex = \"b=([0-9]+)\" }\nsanity = \"all done\"\n",
                  &err);
    if (!ok(t != NULL, "a template with file = \"${job}.log\" parses"))
        return;
    free(put_file("run.log", "a=42\n", 0));
    free(put_file("rank.0.out", "b=7\nall done\n", 0));
    struct gpurun_kvlist vars = {0};
    gpurun_kvlist_set(&vars, "job", "run");
    ok(gpurun_fom_read(t, tmpdir, gpurun_kvlist_lookup, &vars, NULL, &f, &err) == 0 && f.n == 2,
       "a run folder reads");
    WANT(&f, "a", "${job}.log in the run folder", 42);
    WANT(&f, "b", "rank.0.out without file", 7);
    char where[256];
    ok(gpurun_sanity_ok(t, tmpdir, gpurun_kvlist_lookup, &vars, where, sizeof where), "sanity found in rank.0.out");
    is_str(where, "run.log, rank.0.out", "... where: the fom files, then rank 0's output");
    gpurun_foms_free(&f);
    gpurun_kvlist_set(&vars, "job", "other");
    ok(gpurun_fom_read(t, tmpdir, gpurun_kvlist_lookup, &vars, NULL, &f, &err) == -1 && strstr(err.text, "other.log"),
       "a fom file that is not there is an error: %s", err.text);
    gpurun_kvlist_clear(&vars);
    ok(gpurun_fom_read(t, tmpdir, gpurun_kvlist_lookup, &vars, NULL, &f, &err) == -1 &&
           strstr(err.text, "'${job}' is not set"),
       "an unset ${name} in file is an error: %s", err.text);
    gpurun_template_destroy(t);
    free(p);

    /* The generic template: its regex is a ${name} with a default. */
    t = load_tpl("templates/generic.conf");
    if (t) {
        p = put_file("generic.out", "FOM: 12.5\nFOM: nan\n", 0);
        ok(read_file(t, p, &f, &err) == 0, "generic template reads");
        WANT(&f, "value", "generic: its default regex", 12.5);
        gpurun_foms_free(&f);
        gpurun_kvlist_set(&vars, "fom_units", "");
        gpurun_kvlist_set(&vars, "fom_regex", "(((");
        ok(gpurun_fom_read(t, tmpdir, gpurun_kvlist_lookup, &vars, NULL, &f, &err) == -1 &&
               strstr(err.text, "not a POSIX extended regex"),
           "a regex that does not compile once expanded is an error: %s", err.text);
        gpurun_kvlist_clear(&vars);
        gpurun_template_destroy(t);
        free(p);
    }
}

/* Patterns are compiled once per process (up to a cap, then per reading):
 * each still reads its own figures, and a bad one is refused every time. */
static void test_patterns_kept(void)
{
    gpurun_template_t *t = load_tpl("templates/generic.conf");
    if (!t)
        return;
    char text[8192] = "", regex[64], value[32];
    for (int i = 0; i < 200; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "v%d=%d\n", i, i);
    char *p = put_file("kept.out", text, 0);
    char *files[] = {p, NULL};
    struct gpurun_kvlist vars = {0};
    gpurun_kvlist_set(&vars, "fom_units", "");
    gpurun_error_t err = {0};
    int right = 0;
    /* 200 patterns, more than are kept, then the first ones again */
    for (int n = 0; n < 260; n++) {
        int i = n < 200 ? n : n - 200;
        snprintf(regex, sizeof regex, "^v%d=([0-9]+)$", i);
        gpurun_kvlist_set(&vars, "fom_regex", regex);
        gpurun_foms_t f;
        if (gpurun_fom_read(t, tmpdir, gpurun_kvlist_lookup, &vars, files, &f, &err) == 0 && f.n == 1 &&
            f.f[0].n == 1 && f.f[0].values[0] == i)
            right++;
        else
            diag("pattern %d: %s", i, err.text);
        gpurun_foms_free(&f);
    }
    snprintf(value, sizeof value, "%d", right);
    is_str(value, "260", "260 readings of 200 patterns (more than are kept): each reads its own value");
    const char *bad[] = {"(((", "v1=[0-9]+", "((("};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gpurun_kvlist_set(&vars, "fom_regex", bad[i]);
        gpurun_foms_t f;
        ok(gpurun_fom_read(t, tmpdir, gpurun_kvlist_lookup, &vars, files, &f, &err) == -1 &&
               (strstr(err.text, "not a POSIX extended regex") || strstr(err.text, "has no group")),
           "'%s' refused (again): %s", bad[i], err.text);
    }
    gpurun_kvlist_set(&vars, "fom_regex", "^v1=([0-9]+)$");
    gpurun_foms_t f;
    ok(gpurun_fom_read(t, tmpdir, gpurun_kvlist_lookup, &vars, files, &f, &err) == 0 && f.n == 1 &&
           f.f[0].n == 1 && f.f[0].values[0] == 1,
       "after a refused pattern, a kept one reads");
    gpurun_foms_free(&f);
    gpurun_kvlist_clear(&vars);
    gpurun_template_destroy(t);
    free(p);
}

/* ---- tables: header and row ------------------------------------------ */

static void test_table(void)
{
    gpurun_error_t err = {0};
    gpurun_template_t *t = parse_tpl("description = \"t\"\ncommand = \"x\"\n"
                                     "fom core { header = \"Core t (s)\"  row = \"^ *Time:\" }\n"
                                     "fom wall { header = \"Wall t (s)\"  row = \"^ *Time:\" }\n"
                                     "fom pct  { header = \"(%)\"  row = \"^ *Time:\" }\n"
                                     "fom tie  { header = \"(ab)\"  row = \"^R \" }\n"
                                     "fom none { header = \"(x)\"  row = \"^S \" }\n"
                                     "fom rows { header = \"(q)\"  row = \"^Q \" }\n",
                                     &err);
    if (!ok(t != NULL, "a template of table foms parses")) {
        diag("%s", err.text);
        return;
    }
    char *p = put_file("table.out",
                       TIME_LINES              /* headings of several words */
                       "  (ab)\nR 1 3\n"       /* 1 and 3 each under one column of (ab) */
                       "  (x) (y) (z)\nS        1\n" /* nothing under (x), and too few words */
                       "(q)\nQ 1\nQ 2\n-----\nQ 3\nend of table\nQ 4\n", /* rows up to a line that is none */
                       0);
    gpurun_foms_t f;
    ok(read_file(t, p, &f, &err) == 0, "table foms read");
    WANT(&f, "core", "heading 'Core t (s)'", 1.234);
    WANT(&f, "wall", "heading 'Wall t (s)'", 0.617);
    WANT(&f, "pct", "heading '(%)'", 200.0);
    want_none(&f, "tie", "stands over two words of its row equally", "a heading over two words equally");
    want_none(&f, "none", "has no word under it", "a heading with no word under it");
    WANT(&f, "rows", "every row of a table, up to the line that ends it", 1, 2, 3);
    gpurun_foms_free(&f);
    gpurun_template_destroy(t);
    free(p);
}

/* ---- the template's fom keys ------------------------------------------ */

#define HEAD "description = \"t\"\ncommand = \"x\"\n"

struct bad_tpl {
    const char *what, *text, *want;
};

static const struct bad_tpl bad_tpls[] = {
    {"header without row", HEAD "fom a { header = \"(ns/day)\" }\n",
     "tpl.conf:3: key 'fom.a': 'header' without 'row' (a regex the line of values matches, as in "
     "\"^Performance:\")"},
    {"row without header", HEAD "fom a { regex = \"(x)\"\n row = \"^P\" }\n",
     "tpl.conf:4: key 'fom.a.row': 'row' without 'header' (the heading of the value's column, as in "
     "\"(ns/day)\")"},
    {"header and regex", HEAD "fom a { regex = \"(x)\"\n header = \"(ns/day)\"  row = \"^P\" }\n",
     "tpl.conf:4: key 'fom.a.header': not with 'regex': a fom reads by a regex, or by a column's header and "
     "its row"},
    {"neither", HEAD "fom a { units = \"s\" }\n",
     "tpl.conf:3: key 'fom.a': no 'regex' (a POSIX extended regex whose first group is the value)"},
    {"optional not a boolean", HEAD "fom a { regex = \"(x)\"\n optional = maybe }\n",
     "tpl.conf:4: key 'fom.a.optional': expected true or false, got 'maybe'"},
    {"after does not compile", HEAD "fom a { regex = \"(x)\"\n after = \"(\" }\n",
     "tpl.conf:4: key 'fom.a.after': '(' is not a POSIX extended regex: "},
    {"empty header", HEAD "fom a { header = \"\"  row = \"^P\" }\n", "tpl.conf:3: key 'fom.a.header': empty value"},
};

static void test_keys(void)
{
    gpurun_error_t err = {0};
    gpurun_template_t *t = parse_tpl(HEAD "fom a {\n header = \"(ns/day)\"\n row = \"^Performance:\"\n"
                                          " after = \"R E A L\"\n optional = true\n}\n"
                                          "fom b { regex = \"([0-9]+)\" }\n",
                                     &err);
    if (ok(t != NULL, "header, row, after and optional parse")) {
        is_str(t->foms[0].header, "(ns/day)", "header");
        is_str(t->foms[0].row, "^Performance:", "row");
        is_str(t->foms[0].after, "R E A L", "after");
        ok(t->foms[0].regex == NULL && t->foms[0].optional, "no regex; optional");
        ok(!t->foms[1].optional && !t->foms[1].header && !t->foms[1].after, "defaults: not optional, no header");
        gpurun_template_destroy(t);
    } else {
        diag("%s", err.text);
    }
    for (size_t i = 0; i < sizeof bad_tpls / sizeof *bad_tpls; i++) {
        const struct bad_tpl *b = &bad_tpls[i];
        err.text[0] = '\0';
        t = parse_tpl(b->text, &err);
        ok(t == NULL && err.code == GPURUN_EXIT_CONFIG, "%s: refused (exit 2)", b->what);
        if (!ok(strncmp(err.text, b->want, strlen(b->want)) == 0, "%s: message", b->what))
            diag("got:  %s\n# want: %s", err.text, b->want);
        gpurun_template_destroy(t);
    }
}

/* ---- reference bands --------------------------------------------------- */

struct band_case {
    const char *spec;
    double value;
    int want; /* 1 inside, 0 outside, -1 refused */
};

static const struct band_case bands[] = {
    {"90 +-10%", 90, 1},       {"90 +-10%", 81, 1},        {"90 +-10%", 99, 1},      {"90 +-10%", 80.9, 0},
    {"90 +-10%", 99.1, 0},     {"90+-10%", 95, 1},         {"  90 +- 10 % ", 95, 1}, {"-50 +-10%", -54, 1},
    {"-50 +-10%", -56, 0},     {"90 +- 5", 85, 1},         {"90 +- 5", 95.5, 0},     {"90 +- 0", 90, 1},
    {">= 80", 80, 1},          {">= 80", 79.99, 0},        {">80", 80, 0},           {"> 80", 80.01, 1},
    {"<= 2.5", 2.5, 1},        {"<= 2.5", 2.6, 0},         {"< 2.5", 2.5, 0},        {"<2.5e0", 1, 1},
    {"80..100", 80, 1},        {"80..100", 100, 1},        {"80 .. 100", 100.5, 0},  {"-1e3..-5", -6, 1},
    {"1e2 +-1%", 100.5, 1},    {">= 80", NAN, 0},          {"90", 90, -1},           {"", 1, -1},
    {"ninety", 1, -1},         {"90 +-", 1, -1},           {"90 +- -5", 1, -1},      {"100..80", 90, -1},
    {">= nan", 1, -1},         {"<= inf", 1, -1},          {"90 +-10%%", 1, -1},     {"90 +-10% extra", 1, -1},
    {"0x10..0x20", 17, -1},    {">= 1e999", 1, -1},        {"=> 80", 1, -1},         {"80...100", 90, -1},
};

static void test_bands(void)
{
    for (size_t i = 0; i < sizeof bands / sizeof *bands; i++) {
        const struct band_case *b = &bands[i];
        char why[256] = "";
        gpurun_error_t err = {0};
        int got = gpurun_reference_check(b->spec, b->value, why, sizeof why, &err);
        if (!is_int(got, b->want, "'%s' with %g: %s", b->spec, b->value,
                    b->want == 1 ? "inside" : b->want == 0 ? "outside" : "refused"))
            diag("why: %s; err: %s", why, err.text);
        if (b->want < 0) {
            char quoted[128];
            snprintf(quoted, sizeof quoted, "reference '%s': ", b->spec);
            ok(err.code == GPURUN_EXIT_CONFIG && strncmp(err.text, quoted, strlen(quoted)) == 0,
               "... exit 2, quoting the text: %s", err.text);
        }
    }
    char why[256];
    gpurun_error_t err = {0};
    gpurun_reference_check("90 +-10%", 62.03, why, sizeof why, &err);
    is_str(why, "62.03 is outside '90 +-10%' (81 .. 99)", "why, outside");
    gpurun_reference_check(">= 80", 95, why, sizeof why, &err);
    is_str(why, "95 is inside '>= 80' (>= 80)", "why, inside");
    gpurun_reference_check("90", 90, why, sizeof why, &err);
    ok(strstr(err.text, "a bare number is not a band"), "a bare number: %s", err.text);
    struct gpurun_band band;
    ok(gpurun_reference_parse("> 3", &band, &err) == 0 && band.lo == 3 && band.lo_open && isinf(band.hi),
       "parse: > 3 is (3, inf)");
}

/* A figure's kind reaches the record's JSON; the program's version is read
 * from the log by the template's `version` (GROMACS, LAMMPS), and is NULL,
 * not an error, where there is none (issue 30). */
static void test_kind_version(void)
{
    gpurun_template_t *t = load_tpl("templates/gromacs.conf");
    if (t) {
        is_str(t->foms[0].kind, "throughput", "gromacs ns_per_day: kind throughput");
        is_str(t->foms[1].kind, "time", "gromacs hour_per_ns: kind time");
        char *dir = src_path("tests/logs");
        /* version_file is ${job}.log: the job named after the fixture. */
        struct gpurun_kvlist names = {0};
        gpurun_kvlist_set(&names, "job", "gromacs-water-2ranks");
        char *v = gpurun_version_read(t, dir, gpurun_kvlist_lookup, &names);
        is_str(v, "2022.5-Debian_2022.5_2", "GROMACS version from md.log");
        free(v);
        gpurun_kvlist_set(&names, "job", "no-such-log");
        v = gpurun_version_read(t, dir, gpurun_kvlist_lookup, &names);
        ok(v == NULL, "no log: no version, no error");
        free(v);
        gpurun_kvlist_clear(&names);
        free(dir);
        gpurun_foms_t f;
        gpurun_error_t err = {0};
        char *p = src_path("tests/logs/gromacs-water-2ranks.log");
        if (read_file(t, p, &f, &err) == 0) {
            json_t *j = gpurun_foms_json(&f);
            is_str(json_string_value(json_object_get(json_object_get(j, "hour_per_ns"), "kind")), "time",
                   "the record's foms carry the kind");
            json_decref(j);
            gpurun_foms_free(&f);
        }
        free(p);
        gpurun_template_destroy(t);
    }
    t = load_tpl("templates/lammps.conf");
    if (t) {
        char *dir = src_path("tests/logs");
        struct gpurun_kvlist names = {0};
        gpurun_kvlist_set(&names, "job", "lammps-lj-2runs");
        char *v = gpurun_version_read(t, dir, gpurun_kvlist_lookup, &names);
        is_str(v, "29 Sep 2021 - Update 2", "LAMMPS version from its first line");
        free(v);
        gpurun_kvlist_clear(&names);
        free(dir);
        gpurun_template_destroy(t);
    }
    t = load_tpl("templates/cg.conf");
    if (t) {
        is_str(t->foms[1].kind, "other", "cg iterations: kind other");
        ok(gpurun_version_read(t, ".", NULL, NULL) == NULL, "cg: no version key, no version");
        gpurun_template_destroy(t);
    }
}

int main(void)
{
    top = getenv("top_srcdir");
    if (!top || !*top)
        top = ".";
    if (!mkdtemp(tmpdir)) {
        skip_all("mkdtemp: %s", strerror(errno));
        return 0;
    }
    test_real_gromacs();
    test_real_lammps();
    test_real_hpl();
    test_sanity_forms();
    test_benchmarks();
    test_regex_cost();
    test_regex_backref();
    test_regex_budget();
    test_hostile_gromacs();
    test_unreadable();
    test_regex();
    test_patterns_kept();
    test_table();
    test_keys();
    test_kind_version();
    test_failure_tail();
    test_bands();
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        diag("could not remove %s", tmpdir);
    return done_testing();
}
