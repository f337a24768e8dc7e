/* SPDX-License-Identifier: BSD-3-Clause */
/* Progress (issue 27 §5, §6): lines found by the template's regex, what
 * their groups hold, the step, percentage, ETA and running figure they
 * give (lib/progress.c); RESULTS/JOB/latest made safely and status.json
 * read back with bounded work (lib/runstatus.c).  Never on timing: the
 * times are given. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "progress.h"
#include "progress_template.h"
#include "runstatus.h"
#include "safefile.h"
#include "tap.h"
#include "template.h"
#include "util.h"

static gpurun_progress_t *make(const char *regex, const char *after, const char *groups, long long total,
                               const char *units, double scale, double window)
{
    struct gpurun_progress_def d = {.regex = regex, .after = after, .groups = groups, .total = total,
                                    .units = units, .scale = scale, .window_s = window};
    gpurun_progress_t *p = NULL;
    gpurun_error_t err = {0};
    if (gpurun_progress_new(&d, &p, &err) < 0)
        diag("gpurun_progress_new: %s", err.text);
    return p;
}

static const char *text_of(gpurun_progress_t *p, double now)
{
    static char buf[256];
    struct gpurun_progress_view v;
    gpurun_progress_view(p, now, &v);
    gpurun_progress_format(&v, ", ", buf, sizeof buf);
    return buf;
}

static void feed(gpurun_progress_t *p, const char *s, double t)
{
    gpurun_progress_feed(p, s, strlen(s), t);
}

static void test_groups(void)
{
    enum gpurun_progress_role r[GPURUN_PROGRESS_GROUPS_MAX];
    int n = -1;
    char why[128] = "";
    ok(gpurun_progress_groups(NULL, r, &n, why, sizeof why) == 0 && n == 1 && r[0] == GPURUN_PROGRESS_STEP,
       "groups: none given is one, the step");
    ok(gpurun_progress_groups("step clock", r, &n, why, sizeof why) == 0 && n == 2 && r[1] == GPURUN_PROGRESS_CLOCK,
       "groups: step clock");
    ok(gpurun_progress_groups("step - figure", r, &n, why, sizeof why) == 0 && n == 3 && r[1] == 0 &&
           r[2] == GPURUN_PROGRESS_FIGURE,
       "groups: '-' skips a group");
    ok(gpurun_progress_groups("count", r, &n, why, sizeof why) == 0 && n == 0, "groups: count, none used");
    ok(gpurun_progress_groups("step time", r, &n, why, sizeof why) < 0, "groups: an unknown word is refused");
    is_str(why, "'time' is not one of step, total, figure, clock, - (or \"count\" alone)", "... saying why");
    ok(gpurun_progress_groups("figure figure", r, &n, why, sizeof why) < 0, "groups: a role twice is refused");
    ok(gpurun_progress_groups("-", r, &n, why, sizeof why) < 0, "groups: only '-' is refused");
}

/* md.log as mdrun writes it: the step and time line right under its
 * header, other lines with numbers around it. */
static const char *const mdlog_blocks[] = {
    "Started mdrun on rank 0\n"
    "           Step           Time\n"
    "              0        0.00000\n\n   Energies (kJ/mol)\n"
    "        LJ (SR)  Disper. corr.\n    1.49615e+04   -6.09758e+02\n\n"
    "DD  step 39 load imb.: force 48.7%\n"
    "           1234        9.99999\n", /* two numbers, but not under the header: not a step */
    "           Step           Time\n            500        1.00000\n\n   Energies (kJ/mol)\n",
    "step 1000: resetting all time and cycle counters\n           Step           Time\n           1000        2.00000\n",
};

static void test_gromacs(void)
{
    gpurun_progress_t *p = make("^ +([0-9]+) +([-+0-9.eE]+)$", "^ +Step +Time$", "step clock", 2000, "ns/day",
                                86.4, 600);
    if (!ok(p != NULL, "the gromacs template's progress compiles"))
        return;
    is_str(text_of(p, 0), "", "nothing known before a line");
    /* Fed in pieces that cut lines in two. */
    const char *b0 = mdlog_blocks[0];
    gpurun_progress_feed(p, b0, 40, 100.0);
    gpurun_progress_feed(p, b0 + 40, strlen(b0) - 40, 100.0);
    is_str(text_of(p, 100.0), "step 0 of 2000 (0%)", "md.log: step 0, a line cut in two; the line outside a "
                                                     "block is not read");
    feed(p, mdlog_blocks[1], 110.0);
    /* 500 steps and 1 ps in 10 s: 50 steps/s, 0.1 ps/s = 8.64 ns/day;
     * 1500 steps to go: 30 s, 2 of them passed since. */
    is_str(text_of(p, 112.0), "step 500 of 2000 (25%), ETA 28s, 8.64 ns/day", "md.log: step, percent, ETA, ns/day");
    feed(p, mdlog_blocks[2], 120.0);
    is_str(text_of(p, 120.0), "step 1000 of 2000 (50%), ETA 20s, 8.64 ns/day", "... and the next block");
    gpurun_progress_free(p);
}

static void test_lines(void)
{
    gpurun_progress_t *p = make("^step ([0-9]+) of ([0-9]+) .*images_per_s ([-+0-9.eE]+)", NULL,
                                "step total figure", -1, "images/s", 0, 30);
    if (!ok(p != NULL, "the pytorch-ddp template's progress compiles"))
        return;
    gpurun_progress_set_label(p, "0: ");
    feed(p, "1: step 9 of 10 loss 1.0 images_per_s 9\n0: step 2 of 35 loss 6.9 images_per_s 412.7\n", 1.0);
    is_str(text_of(p, 1.0), "step 2 of 35 (5.7%), 413 images/s", "rank 0's line (its label) counts, rank 1's not");
    feed(p, "0: step 3 of 35 loss 6.9 images_per_s nan\n", 2.0);
    is_str(text_of(p, 2.0), "step 2 of 35 (5.7%), 413 images/s", "a figure that is not a number: no line");
    gpurun_progress_set_label(p, NULL);
    char big[GPURUN_PROGRESS_LINE_MAX + 100];
    memset(big, 'x', sizeof big);
    memcpy(big + sizeof big - 60, "step 30 of 35 loss 1 images_per_s 1\n", 37);
    gpurun_progress_feed(p, big, sizeof big - 23, 3.0);
    is_str(text_of(p, 3.0), "step 2 of 35 (5.7%), 413 images/s", "a line over 4 KiB is no progress line");
    feed(p, "step 4 of 35 loss 1 images_per_s 500\nstep 5 of 35", 4.0);
    gpurun_progress_gap(p);
    feed(p, " loss 1 images_per_s 1\nstep 6 of 35 loss 1 images_per_s 600\n", 5.0);
    is_str(text_of(p, 5.0), "step 6 of 35 (17%), ETA 29s, 600 images/s",
           "after a gap the piece of line is dropped, the next whole line read");
    gpurun_progress_free(p);

    p = make("^step ([0-9]+)( images_per_s ([0-9.]+))?", NULL, "step - figure", 10, "images/s", 0, 30);
    feed(p, "step 1 images_per_s 50\nstep 2\n", 1.0);
    is_str(text_of(p, 1.0), "step 2 of 10 (20%), 50.0 images/s", "an optional figure group: the last one holds");
    gpurun_progress_free(p);

    /* LAMMPS: the step's own rate is the figure. */
    p = make("^ *([0-9]+) +[-+0-9.eE][-+0-9.eE ]*$", NULL, NULL, 1000, "timesteps/s", 1, 30);
    feed(p, "  1 by 1 by 2 MPI processor grid\n   Step Temp E_pair\n       0  3  -6.77 \n", 10.0);
    feed(p, "     100    1.67   -4.78    0   -2.28    5.66 \n", 12.0);
    is_str(text_of(p, 12.0), "step 100 of 1000 (10%), ETA 18s, 50.0 timesteps/s", "LAMMPS thermo rows");
    /* A buffered log: rows come in bursts, many at one time. */
    feed(p, "     200  1  1 \n     300  1  1 \n     400  1  1 \n", 50.0);
    is_str(text_of(p, 50.0), "step 400 of 1000 (40%), ETA 1m16s, 7.89 timesteps/s",
           "rows in a burst, older than the window: the rate from the burst before");
    feed(p, "      50    1.67   -4.78 \n", 54.0);
    is_str(text_of(p, 54.0), "step 50 of 1000 (5.0%)", "a step that goes back (another run): rates start over");
    gpurun_progress_free(p);
}

static void test_count(void)
{
    gpurun_progress_t *p =
        make("^W[RC][0-9][0-9A-Za-z]* +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[-+0-9.eE]+ +([-+0-9.eE]+)", NULL, "figure",
             -1, "GFLOP/s", 0, 30);
    if (!ok(p != NULL, "the hpl template's progress compiles"))
        return;
    gpurun_progress_set_total(p, 2);
    is_str(text_of(p, 0), "step 0 of 2 (0%)", "counting: 0 done before the first row");
    feed(p, "T/V                N    NB     P     Q               Time                 Gflops\n"
            "WR11C2R4        2000   128     1     2               1.76              3.034e+00\n", 5);
    is_str(text_of(p, 5), "step 1 of 2 (50%), 3.03 GFLOP/s", "a row is a test done, with its GFLOP/s");
    gpurun_progress_free(p);

    const char *hpccinf = "HPLinpack benchmark input file\n1            # of problems sizes (N)\n2000 4000   Ns\n"
                          "2            # of NBs\n3            # of process grids (P x Q)\n"
                          "0                               Number of additional problem sizes for PTRANS\n";
    is_int(gpurun_progress_product(hpccinf, strlen(hpccinf), "^ *([0-9]+) +# of "), 6,
           "HPL's input: the product of its '# of' counts");
    is_int(gpurun_progress_product("x\n", 2, "^ *([0-9]+) +# of "), -1, "... -1 when no line has one");
    is_int(gpurun_progress_product("x # of\n", 7, "^ *([x]+) +# of "), -1, "... or a count is no number");
}

static void test_format(void)
{
    char d[32];
    gpurun_progress_duration(45, d, sizeof d);
    is_str(d, "45s", "duration: seconds");
    gpurun_progress_duration(190, d, sizeof d);
    is_str(d, "3m10s", "duration: minutes");
    gpurun_progress_duration(3720, d, sizeof d);
    is_str(d, "1h02m", "duration: hours");
    gpurun_progress_duration(2 * 86400 + 3 * 3600, d, sizeof d);
    is_str(d, "2d03h", "duration: days");
}

static const char *lookup(const char *name, void *ctx)
{
    return gpurun_kvlist_get(ctx, name);
}

static void test_template(void)
{
    const char *text = "description = \"d\"\ncommand = \"./app -n ${nsteps}\"\n"
                       "progress = \"^ +([0-9]+) +([-+0-9.eE]+)$\"\nprogress_after = \"^ +Step +Time$\"\n"
                       "progress_groups = \"step clock\"\nprogress_file = \"${job}.log\"\n"
                       "progress_total = \"${nsteps}\"\nprogress_units = \"ns/day\"\nprogress_scale = \"86.4\"\n";
    gpurun_template_t *t = NULL;
    gpurun_error_t err = {0};
    if (!ok(gpurun_template_parse(text, strlen(text), "tpl.conf", &t, &err) == 0, "a template with every "
                                                                                   "progress key parses"))
        diag("%s", err.text);
    struct gpurun_kvlist names = {0};
    gpurun_kvlist_set(&names, "job", "water");
    gpurun_kvlist_set(&names, "nsteps", "2000");
    struct gpurun_progress_conf c;
    ok(t && gpurun_progress_from_template(t, lookup, &names, &c, &err) == 1 && c.def.total == 2000 && c.file &&
           !strcmp(c.file, "water.log") && c.def.scale == 86.4,
       "its keys with the run's names: total 2000, file water.log, scale 86.4");
    gpurun_progress_conf_free(&c);
    gpurun_kvlist_set(&names, "nsteps", "-1");
    ok(t && gpurun_progress_from_template(t, lookup, &names, &c, &err) == 1 && c.def.total == -1,
       "nsteps = -1 (mdrun: no end): no total");
    gpurun_progress_conf_free(&c);
    gpurun_kvlist_set(&names, "nsteps", "lots");
    ok(t && gpurun_progress_from_template(t, lookup, &names, &c, &err) < 0 && err.code == GPURUN_EXIT_CONFIG,
       "a total that is not a number once expanded is exit 2");
    is_str(err.text, "tpl.conf:7: key 'progress_total': 'lots' (from '${nsteps}') is not a whole number",
           "... naming the template's line and key");
    gpurun_kvlist_clear(&names);
    gpurun_template_destroy(t);
}

/* ---- RESULTS/JOB/latest and status.json -------------------------------- */

static char base[256];

static int mkjob(const char *name)
{
    char *p = gpurun_xasprintf("%s/%s", base, name);
    mkdir(p, 0755);
    int fd = open(p, O_RDONLY | O_DIRECTORY);
    free(p);
    return fd;
}

static void test_latest(void)
{
    int jfd = mkjob("job");
    char why[512] = "", target[256] = "";
    mkdirat(jfd, "20250101T000000Z-1", 0700);
    ok(gpurun_latest_update(jfd, "R/job", "20250101T000000Z-1", why, sizeof why) == 0, "latest made");
    ssize_t n = readlinkat(jfd, GPURUN_LATEST, target, sizeof target - 1);
    target[n > 0 ? n : 0] = '\0';
    is_str(target, "20250101T000000Z-1", "... a relative symlink to the run folder");
    mkdirat(jfd, "20250101T000000Z-2", 0700);
    ok(gpurun_latest_update(jfd, "R/job", "20250101T000000Z-2", why, sizeof why) == 0, "latest moved on");
    n = readlinkat(jfd, GPURUN_LATEST, target, sizeof target - 1);
    target[n > 0 ? n : 0] = '\0';
    is_str(target, "20250101T000000Z-2", "... to the newer run folder");
    close(jfd);

    jfd = mkjob("planted-dir");
    mkdirat(jfd, GPURUN_LATEST, 0755);
    ok(gpurun_latest_update(jfd, "R/planted-dir", "20250101T000000Z-1", why, sizeof why) == 1,
       "a folder named latest: left alone");
    is_str(why, "R/planted-dir/latest is a folder, not a symlink gpurun made: left alone (the newest run folder is "
                "R/planted-dir/20250101T000000Z-1)",
           "... saying so");
    struct stat st;
    ok(fstatat(jfd, GPURUN_LATEST, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode), "... still a folder");
    close(jfd);

    jfd = mkjob("planted-file");
    int fd = openat(jfd, GPURUN_LATEST, O_WRONLY | O_CREAT, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, "theirs\n", 7);
        (void)w;
        close(fd);
    }
    ok(gpurun_latest_update(jfd, "R/planted-file", "20250101T000000Z-1", why, sizeof why) == 1 &&
           fstatat(jfd, GPURUN_LATEST, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_size == 7,
       "a file named latest: left alone, unchanged");
    close(jfd);

    if (geteuid() == 0) {
        jfd = mkjob("planted-link");
        symlinkat("/etc", jfd, GPURUN_LATEST);
        ok(fchownat(jfd, GPURUN_LATEST, 65534, 65534, AT_SYMLINK_NOFOLLOW) == 0, "(another user's symlink)");
        ok(gpurun_latest_update(jfd, "R/planted-link", "20250101T000000Z-1", why, sizeof why) == 1 &&
               readlinkat(jfd, GPURUN_LATEST, target, sizeof target) == 4,
           "another user's symlink named latest: left alone");
        close(jfd);
        jfd = mkjob("theirs");
        ok(fchown(jfd, 65534, 65534) == 0, "(a job folder of another user)");
        ok(gpurun_latest_update(jfd, "R/theirs", "20250101T000000Z-1", why, sizeof why) == 1 &&
               faccessat(jfd, GPURUN_LATEST, F_OK, AT_SYMLINK_NOFOLLOW) < 0,
           "a job folder not ours: no latest made in it");
        close(jfd);
    } else {
        skip("not root: no other user's files to plant");
        skip("not root");
        skip("not root");
        skip("not root");
    }
}

static void put_status(const char *job, const char *run, json_t *doc)
{
    char *dir = gpurun_xasprintf("%s/%s/%s", base, job, run);
    mkdir(dir, 0700);
    char *p = gpurun_xasprintf("%s/%s", dir, GPURUN_RUN_STATUS);
    gpurun_error_t err;
    gpurun_write_json_file(p, doc, 0600, 0, &err);
    free(p);
    free(dir);
    json_decref(doc);
}

static void test_judge(void)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    struct gpurun_proc_id me;
    gpurun_proc_id_self(&me);
    char note[512];
    json_t *doc = json_pack("{s:s}", "state", "ok");
    is_str(gpurun_status_judge(doc, 1000, host, note, sizeof note), "ok", "an ended run: its state");
    json_decref(doc);
    doc = json_pack("{s:s, s:s, s:I, s:I, s:s}", "state", "running", "host", host, "pid", (json_int_t)me.pid,
                    "pid_start", (json_int_t)me.start, "boot_id", me.boot_id);
    is_str(gpurun_status_judge(doc, 1000, host, note, sizeof note), "running", "running, its gpurun alive here");
    json_object_set_new(doc, "pid_start", json_integer((json_int_t)me.start + 1));
    is_str(gpurun_status_judge(doc, 1000, host, note, sizeof note), "stale",
           "its pid alive, but another process (started at another time): stale");
    json_decref(doc);
    doc = json_pack("{s:s, s:s, s:I, s:I, s:I}", "state", "running", "host", "elsewhere", "pid", (json_int_t)1,
                    "updated_s", (json_int_t)1000, "interval_s", (json_int_t)60);
    is_str(gpurun_status_judge(doc, 1000 + 200, host, note, sizeof note), "running",
           "another host, written 200 s ago every 60 s: running");
    is_str(gpurun_status_judge(doc, 1000 + 300, host, note, sizeof note), "stale",
           "... 300 s ago: stale (2 intervals and 2 minutes)");
    is_str(note, "no update for 5m00s (it writes every 60s; its gpurun on elsewhere cannot be asked from here)",
           "... saying why");
    json_decref(doc);
}

static void test_scan(void)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    struct gpurun_proc_id me;
    gpurun_proc_id_self(&me);
    char *res = gpurun_xasprintf("%s/res", base);
    mkdir(res, 0755);
    snprintf(base, sizeof base, "%s", res);
    close(mkjob("md"));
    put_status("md", "20250101T000000Z-1",
               json_pack("{s:s, s:s, s:I, s:I, s:s, s:i}", "state", "running", "host", host, "pid",
                         (json_int_t)me.pid, "pid_start", (json_int_t)me.start, "boot_id", me.boot_id, "step", 5));
    put_status("md", "20250101T000000Z-2", json_pack("{s:s}", "state", "failed"));
    put_status("md", "20250101T000000Z-10", json_pack("{s:s}", "state", "ok"));
    json_t *runs = NULL;
    size_t skipped = 0;
    gpurun_error_t err = {0};
    ok(gpurun_status_scan(res, NULL, &runs, &skipped, &err) == 0 && json_array_size(runs) == 1,
       "status: one run running of three");
    is_str(json_string_value(json_object_get(json_array_get(runs, 0), "run_id")), "20250101T000000Z-1",
           "... that one");
    json_decref(runs);
    ok(gpurun_status_scan(res, "md", &runs, &skipped, &err) == 0 && json_array_size(runs) == 1, "--job: the one "
                                                                                                 "running");
    json_decref(runs);
    put_status("md", "20250101T000000Z-1", json_pack("{s:s}", "state", "ok"));
    ok(gpurun_status_scan(res, "md", &runs, &skipped, &err) == 0 && json_array_size(runs) == 1 &&
           !strcmp(json_string_value(json_object_get(json_array_get(runs, 0), "run_id")), "20250101T000000Z-10"),
       "--job with none running: the newest run (-10 after -2: by number, not by text)");
    json_decref(runs);
    /* A run folder that is a symlink, and a status.json that is one: not read. */
    char *p = gpurun_xasprintf("%s/md/20250101T000000Z-11", res), *q = gpurun_xasprintf("%s/md/20250101T000000Z-10",
                                                                                           res);
    symlink(q, p);
    free(p);
    p = gpurun_xasprintf("%s/md/20250101T000000Z-12", res);
    mkdir(p, 0700);
    char *s = gpurun_xasprintf("%s/%s", p, GPURUN_RUN_STATUS);
    char *target = gpurun_xasprintf("%s/%s", q, GPURUN_RUN_STATUS);
    symlink(target, s);
    ok(gpurun_status_scan(res, "md", &runs, &skipped, &err) == 0 &&
           !strcmp(json_string_value(json_object_get(json_array_get(runs, 0), "run_id")), "20250101T000000Z-10") &&
           skipped == 1,
       "a run folder that is a symlink and a status.json that is one are not read (one counted as not safe)");
    json_decref(runs);
    free(p);
    free(q);
    free(s);
    free(target);
    ok(gpurun_status_scan(res, "../etc", &runs, &skipped, &err) < 0 && err.code == GPURUN_EXIT_CONFIG,
       "--job with a slash is refused");
    char *none = gpurun_xasprintf("%s/none", res);
    ok(gpurun_status_scan(none, NULL, &runs, &skipped, &err) < 0 && err.code == GPURUN_EXIT_CONFIG,
       "a results folder that is not there: exit 2");
    free(none);
    free(res);
}

int main(void)
{
    snprintf(base, sizeof base, "%s/test_progress.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(base)) {
        printf("Bail out! mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    char top[256];
    snprintf(top, sizeof top, "%s", base);
    test_groups();
    test_gromacs();
    test_lines();
    test_count();
    test_format();
    test_template();
    test_latest();
    test_judge();
    test_scan();
    char *cmd = gpurun_xasprintf("rm -rf '%s'", top);
    if (system(cmd) != 0)
        diag("could not remove %s", top);
    free(cmd);
    return done_testing();
}
