/* SPDX-License-Identifier: BSD-3-Clause */
/* The head's view of a running job (watch.h): where progress lines come
 * from, when they are looked at, what is printed and kept in status.json.
 * The cost to the job is bounded by the interval, not by its output: a
 * file is looked at (one fstatat, one pread of its new bytes, at most
 * GPURUN_PROGRESS_READ_MAX) once per report off a terminal, every
 * TTY_LOOK_S on one; relayed lines are those gpurun reads anyway. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conditions.h"
#include "progress.h"
#include "progress_template.h"
#include "results.h"
#include "runstatus.h"
#include "safefile.h"
#include "say.h"
#include "util.h"
#include "watch.h"

#define TTY_LOOK_S 2.0           /* a file's progress on a terminal's status line: this fresh */
#define STATUS_DEFAULT_S 600.0   /* status.json's rewrites with progress_interval = "off" */
#define STATUS_FRESH_S 5.0       /* status.json follows the progress: rewritten when it moved, this often at most */
#define HOSTS_SHOWN_MAX 64
#define NEVER 1e300

/* A file read from where the last look stopped. */
struct tail {
    char *name;   /* in the run folder */
    int fd;
    dev_t dev;
    ino_t ino;
    off_t off;
    bool refused; /* not a regular file of ours: not looked at again */
};

struct gpurun_watch {
    struct gpurun_watch_opts o;
    char *run_dir, *job, *run_id;
    gpurun_progress_t *prog;       /* NULL: the template says no progress */
    struct gpurun_progress_conf conf;
    bool from_output;              /* the lines are rank 0's output (else conf.file) */
    bool relayed;                  /* ... and come through gpurun's pipe */
    struct tail file;              /* what is read when they do not */
    bool total_tried;
    double t0, period, next_report, next_look;
    double status_at;          /* when status.json was last written */
    long long status_step;     /* the step it said; -1 none */
    bool timeout_foretold;     /* the warning that the run will not end by its timeout, said */
    size_t status_nhosts;      /* the hosts it named */
    time_t start;
    int alive;
    json_t *hosts;
    size_t nbound_seen;
    bool status_warned;
    char host[256];
    struct gpurun_proc_id self;
    struct gpurun_cond_head cond; /* the hosts' conditions (conditions.h) */
    /* When progress (or, without progress lines, output) last moved, the
     * longest gap between two moves, and a stall's verdict (stall.h). */
    double moved_t, max_gap, out_look;
    long long moved_step;
    bool moved_any;
    off_t out_size;
    char *stall_verdict; /* NULL: not stalled */
};

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *iso(time_t t)
{
    char buf[32];
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return gpurun_xstrdup(buf);
}

/* ---- reading ---------------------------------------------------------- */

static void tail_close(struct tail *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}

/* One look at the file: its new bytes, the last GPURUN_PROGRESS_READ_MAX
 * of them at most (what came before is skipped, said to the parser as a
 * gap).  A file that is not (yet) there is looked for again next time. */
static void tail_look(gpurun_watch_t *w, struct tail *f, double t)
{
    if (!f->name || f->refused)
        return;
    struct stat st;
    if (fstatat(w->o.dir_fd, f->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return;
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        char *shown = gpurun_printable(f->name);
        gpurun_say(stderr, "gpurun: warning: %s/%s: not read for progress: %s\n", w->run_dir, shown,
                   S_ISLNK(st.st_mode) ? "a symlink" : !S_ISREG(st.st_mode) ? "not a regular file" : "another user's");
        free(shown);
        f->refused = true;
        tail_close(f);
        return;
    }
    if (f->fd < 0 || st.st_dev != f->dev || st.st_ino != f->ino) {
        /* First seen, or replaced (a program that renames its log). */
        tail_close(f);
        f->fd = openat(w->o.dir_fd, f->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat now;
        if (f->fd >= 0 && (fstat(f->fd, &now) < 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino)) {
            tail_close(f); /* swapped between the two: next time */
            return;
        }
        if (f->fd < 0)
            return;
        f->dev = st.st_dev;
        f->ino = st.st_ino;
        if (f->off)
            gpurun_progress_gap(w->prog);
        f->off = 0;
    }
    if (st.st_size < f->off) { /* cut back: read it from its start */
        f->off = 0;
        gpurun_progress_gap(w->prog);
    }
    if (st.st_size == f->off)
        return;
    off_t from = f->off;
    if (st.st_size - from > GPURUN_PROGRESS_READ_MAX) {
        from = st.st_size - GPURUN_PROGRESS_READ_MAX;
        gpurun_progress_gap(w->prog);
    }
    static char buf[GPURUN_PROGRESS_READ_MAX];
    size_t want = (size_t)(st.st_size - from), got = 0;
    while (got < want) {
        ssize_t n = pread(f->fd, buf + got, want - got, from + (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    /* The lines came when the file was last written, not when we look:
     * its modification time, on our clock. */
    struct timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    double age = (double)(real.tv_sec - st.st_mtim.tv_sec) + (double)(real.tv_nsec - st.st_mtim.tv_nsec) / 1e9;
    gpurun_progress_feed(w->prog, buf, got, age > 0 && age < t - w->t0 ? t - age : t);
    f->off = from + (off_t)got;
}

/* N from the template's total file (HPL's input), once: the setup steps
 * that put it in the run folder have run by the first tick. */
static void read_total(gpurun_watch_t *w)
{
    w->total_tried = true;
    if (!w->prog || !w->conf.total_file || !w->conf.total_regex)
        return;
    gpurun_error_t e;
    int fd = gpurun_open_own_at(w->o.dir_fd, w->conf.total_file, w->conf.total_file, &e);
    char *buf = NULL;
    size_t len = 0;
    if (fd >= 0 && gpurun_read_fd(fd, w->conf.total_file, "progress total", GPURUN_PROGRESS_READ_MAX, &buf, &len,
                                  &e) == 0) {
        long long n = gpurun_progress_product(buf, len, w->conf.total_regex);
        if (n >= 0)
            gpurun_progress_set_total(w->prog, n);
    }
    free(buf);
    if (fd >= 0)
        close(fd);
}

/* Rank 0's output file and the label of its lines there, from its report:
 * where its progress lines are when gpurun does not relay them. */
static void find_rank0_output(gpurun_watch_t *w, json_t *bindings)
{
    json_t *o = json_object_get(json_array_get(bindings, 0), "output");
    const char *file = json_string_value(json_object_get(o, "file"));
    const char *label = json_string_value(json_object_get(o, "label"));
    if (!file || !*file || strchr(file, '/') || file[0] == '.')
        return;
    w->file.name = gpurun_xstrdup(file);
    gpurun_progress_set_label(w->prog, label);
}

/* The hosts the ranks reported from, in rank order, the first 64. */
static void note_hosts(gpurun_watch_t *w, json_t *bindings)
{
    size_t n = json_array_size(bindings);
    if (n == w->nbound_seen)
        return;
    w->nbound_seen = n;
    json_t *seen = json_object();
    json_array_clear(w->hosts);
    size_t i;
    json_t *b;
    json_array_foreach(bindings, i, b)
    {
        const char *h = json_string_value(json_object_get(b, "host"));
        if (h && !json_object_get(seen, h) && json_array_size(w->hosts) < HOSTS_SHOWN_MAX) {
            json_object_set_new(seen, h, json_true());
            json_array_append_new(w->hosts, json_string(h));
        }
    }
    json_decref(seen);
}

/* ---- saying it -------------------------------------------------------- */

static void progress_view(gpurun_watch_t *w, double t, struct gpurun_progress_view *v)
{
    gpurun_progress_view(w->prog, t, v);
}

static json_t *num_or_null(bool known, double v)
{
    return known && isfinite(v) ? json_real((double)(long long)(v * 100.0 + (v >= 0 ? 0.5 : -0.5)) / 100.0)
                                : json_null();
}

static void write_status(gpurun_watch_t *w, double t, const char *state, int rc)
{
    struct gpurun_progress_view v;
    progress_view(w, t, &v);
    if (rc >= 0)
        v.eta_s = -1; /* ended: no time left to say */
    char text[256];
    gpurun_progress_format(&v, ", ", text, sizeof text);
    time_t now = time(NULL);
    char *started = iso(w->start), *updated = iso(now);
    json_t *doc = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:s, s:s, s:I, s:I, s:I, s:i, s:i, s:O}",
                            "version", 1, "job", w->job, "run_id", w->run_id, "run_dir", w->run_dir, "state", state,
                            "host", w->host, "pid", (json_int_t)w->self.pid, "pid_start", (json_int_t)w->self.start,
                            "boot_id", w->self.boot_id, "started", started, "started_s", (json_int_t)w->start,
                            "updated_s", (json_int_t)now, "interval_s", (json_int_t)w->period, "ranks", w->o.nranks,
                            "ranks_alive", w->alive, "hosts", w->hosts);
    json_object_set_new(doc, "updated", json_string(updated));
    json_object_set_new(doc, "elapsed_s", json_real(round((t - w->t0) * 10) / 10));
    json_object_set_new(doc, "step", v.known ? json_integer(v.step) : json_null());
    json_object_set_new(doc, "total", v.known && v.total >= 0 ? json_integer(v.total) : json_null());
    json_object_set_new(doc, "percent", num_or_null(v.percent >= 0, v.percent));
    json_object_set_new(doc, "eta_s", num_or_null(v.eta_s >= 0 && rc < 0, v.eta_s));
    json_object_set_new(doc, "figure", num_or_null(v.has_figure, v.figure));
    json_object_set_new(doc, "units", v.units ? json_string(v.units) : json_null());
    json_object_set_new(doc, "progress", json_string(text));
    json_t *cond = gpurun_cond_head_record(&w->cond);
    json_object_del(cond, "hosts"); /* the verdict and the worst figures: the record has each host's */
    if (cond)
        json_object_set_new(doc, "conditions", cond);
    if (w->stall_verdict)
        json_object_set_new(doc, "stall", json_string(w->stall_verdict));
    if (rc >= 0)
        json_object_set_new(doc, "exit_status", json_integer(rc));
    w->status_at = t;
    w->status_step = v.known ? v.step : -1;
    w->status_nhosts = json_array_size(w->hosts);
    char *shown = gpurun_xasprintf("%s/%s", w->run_dir, GPURUN_RUN_STATUS);
    gpurun_error_t e;
    if (gpurun_write_json_at(w->o.dir_fd, GPURUN_RUN_STATUS, shown, doc, w->o.file_mode, 0, &e) < 0 &&
        !w->status_warned) {
        gpurun_say(stderr, "gpurun: warning: %s (gpurun status will not show this run as it goes)\n", e.text);
        w->status_warned = true;
    }
    free(shown);
    json_decref(doc);
    free(started);
    free(updated);
}

static bool lines_wanted(const gpurun_watch_t *w)
{
    return !w->o.tty && !w->o.quiet && w->o.interval_s > 0;
}

static void print_line(gpurun_watch_t *w, double t)
{
    char el[32], text[256];
    gpurun_progress_duration(t - w->t0, el, sizeof el);
    struct gpurun_progress_view v;
    progress_view(w, t, &v);
    gpurun_progress_format(&v, ", ", text, sizeof text);
    if (text[0])
        gpurun_say(stderr, "gpurun: %s: %s: %s; ranks alive %d/%d\n", w->job, el, text, w->alive, w->o.nranks);
    else
        gpurun_say(stderr, "gpurun: %s: %s: ranks alive %d/%d%s\n", w->job, el, w->alive, w->o.nranks,
                   w->prog ? " (no progress line from the program yet)" : "");
}

/* The run will not end by its timeout, as its ETA stands: said once, with
 * when it will stop and what to change.  Not before a tenth of the
 * timeout or a minute has passed (an ETA from the first steps says little). */
static void foretell_timeout(gpurun_watch_t *w, double t)
{
    double el = t - w->t0, limit = w->o.timeout_s;
    if (w->timeout_foretold || !w->prog || limit <= 0 || el < (limit / 10 < 60 ? limit / 10 : 60))
        return;
    struct gpurun_progress_view v;
    progress_view(w, t, &v);
    if (!v.known || v.eta_s < 0 || el + v.eta_s <= limit * 1.02 || v.total <= 0)
        return;
    w->timeout_foretold = true;
    char at[32], eta[32], lim[32];
    gpurun_progress_duration(limit, at, sizeof at);
    gpurun_progress_duration(v.eta_s, eta, sizeof eta);
    gpurun_progress_duration(limit - el > 0 ? limit - el : 0, lim, sizeof lim);
    /* The steps that fit, at the rate so far, with a tenth to spare. */
    double rate = el > 0 && v.step > 0 ? (double)v.step / el : 0;
    long long fit = (long long)(rate * limit * 0.9);
    const char *total = w->o.tpl ? w->o.tpl->progress_total : NULL;
    char knob[160] = "";
    if (total && total[0] == '$' && total[1] == '{' && strchr(total, '}') && !strchr(total, '}')[1] && fit > 0)
        snprintf(knob, sizeof knob, ", fewer steps (--set params.%.*s=%lld fits)", (int)(strlen(total) - 3),
                 total + 2, fit);
    gpurun_say(stderr,
               "gpurun: %s: warning: at step %lld of %lld the ETA is %s, but the timeout of %s stops the run in %s: "
               "it will end as timeout; give it a longer timeout (job key 'timeout', --set timeout=...)%s, or have "
               "the program stop itself in time (gromacs: --set params.args='-maxh %.3g', hours)\n",
               w->job, v.step, v.total, eta, at, lim, knob, limit * 0.9 / 3600);
}

/* status.json again when the progress or the hosts moved since it was
 * written, STATUS_FRESH_S apart at most: gpurun status within seconds. */
static void status_if_moved(gpurun_watch_t *w, double t)
{
    if (t - w->status_at < STATUS_FRESH_S)
        return;
    struct gpurun_progress_view v = {.known = false};
    if (w->prog)
        progress_view(w, t, &v);
    long long step = v.known ? v.step : -1;
    if (step == w->status_step && json_array_size(w->hosts) == w->status_nhosts)
        return;
    write_status(w, t, w->stall_verdict ? "stalled" : "running", -1);
}

json_t *gpurun_watch_progress_json(gpurun_watch_t *w)
{
    if (!w || !w->prog)
        return NULL;
    double t = mono_now();
    if (!w->relayed)
        tail_look(w, &w->file, t); /* the last lines the program wrote */
    struct gpurun_progress_view v;
    progress_view(w, t, &v);
    if (!v.known)
        return NULL;
    return json_pack("{s:I, s:o, s:o, s:o, s:f}", "step", (json_int_t)v.step, "total",
                     v.total >= 0 ? json_integer(v.total) : json_null(), "figure", num_or_null(v.has_figure, v.figure),
                     "units", v.units ? json_string(v.units) : json_null(), "at_s",
                     round((v.seen_t - w->t0) * 10) / 10);
}

/* ---- the interface ---------------------------------------------------- */

gpurun_watch_t *gpurun_watch_begin(const struct gpurun_watch_opts *o)
{
    gpurun_watch_t *w = gpurun_xcalloc(1, sizeof *w);
    w->o = *o;
    w->run_dir = gpurun_xstrdup(o->run_dir);
    w->job = gpurun_xstrdup(o->job);
    const char *slash = strrchr(o->run_dir, '/');
    w->run_id = gpurun_xstrdup(slash ? slash + 1 : o->run_dir);
    w->file.fd = -1;
    w->hosts = json_array();
    w->t0 = mono_now();
    w->start = time(NULL);
    w->period = o->interval_s > 0 ? o->interval_s : STATUS_DEFAULT_S;
    w->next_report = w->t0 + w->period;
    w->next_look = NEVER;
    gethostname(w->host, sizeof w->host - 1);
    gpurun_proc_id_self(&w->self);
    gpurun_error_t e;
    int has = gpurun_progress_from_template(o->tpl, o->lookup, o->ctx, &w->conf, &e);
    if (has > 0) {
        /* Rates over about one report's time off a terminal, half a
         * minute on one. */
        w->conf.def.window_s = o->tty ? 30.0 : w->period;
        if (gpurun_progress_new(&w->conf.def, &w->prog, &e) < 0)
            w->prog = NULL;
    }
    if (has < 0 || (has > 0 && !w->prog))
        gpurun_say(stderr, "gpurun: warning: no progress for this run: %s\n", e.text);
    if (w->prog) {
        w->from_output = !w->conf.file;
        w->relayed = w->from_output && o->tty;
        if (w->conf.file)
            w->file.name = gpurun_xstrdup(w->conf.file);
        if (o->tty && !w->relayed)
            w->next_look = w->t0 + (o->interval_s > 0 && o->interval_s < TTY_LOOK_S ? o->interval_s : TTY_LOOK_S);
        else if (!w->relayed) /* off a terminal: fresh enough for gpurun status */
            w->next_look = w->t0 + STATUS_FRESH_S;
    }
    w->status_step = -1;
    double share;
    const char *knob = getenv(GPURUN_ENV_BUSY_SHARE);
    if (gpurun_cond_threshold(knob, &share, &e) < 0)
        gpurun_say(stderr, "gpurun: warning: %s; the default, %.0f%%, is used\n", e.text,
                   100 * GPURUN_COND_SHARE_DEFAULT);
    gpurun_cond_head_init(&w->cond, share);
    w->moved_t = w->t0;
    write_status(w, w->t0, "running", -1);
    if (lines_wanted(w)) {
        char every[32];
        gpurun_progress_duration(o->interval_s, every, sizeof every);
        gpurun_say(stderr,
                   "gpurun: %s: 0s: started; a progress line every %s here, and at any time: gpurun status "
                   "(run folder %s)\n",
                   w->job, every, w->run_dir);
    }
    return w;
}

void gpurun_watch_line(gpurun_watch_t *w, const char *line, size_t len, double t)
{
    if (w && w->prog && w->relayed)
        gpurun_progress_line(w->prog, line, len, t);
}

/* Progress moved at `t`: the gap since the last move counts for `auto`. */
static void note_moved(gpurun_watch_t *w, double t)
{
    if (w->moved_any && t - w->moved_t > w->max_gap)
        w->max_gap = t - w->moved_t;
    if (t > w->moved_t)
        w->moved_t = t;
    w->moved_any = true;
}

void gpurun_watch_output(gpurun_watch_t *w, double t)
{
    if (w && !w->prog)
        note_moved(w, t);
}

/* Without progress lines, rank 0's output file growing is the move (one
 * fstatat every TTY_LOOK_S off a terminal; relayed lines count on one). */
static void look_moved(gpurun_watch_t *w, double t, json_t *bindings)
{
    if (w->prog) {
        struct gpurun_progress_view v;
        progress_view(w, t, &v);
        if (v.known && (!w->moved_any || v.step != w->moved_step)) {
            w->moved_step = v.step;
            note_moved(w, v.seen_t);
        }
        return;
    }
    if (w->o.tty || t - w->out_look < TTY_LOOK_S)
        return;
    w->out_look = t;
    const char *file = json_string_value(json_object_get(json_object_get(json_array_get(bindings, 0), "output"), "file"));
    struct stat st;
    if (file && *file && !strchr(file, '/') && file[0] != '.' &&
        fstatat(w->o.dir_fd, file, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_size != w->out_size) {
        w->out_size = st.st_size;
        note_moved(w, t);
    }
}

double gpurun_watch_moved(const gpurun_watch_t *w, double *max_gap, char *at, size_t atlen)
{
    if (atlen)
        at[0] = '\0';
    *max_gap = w ? w->max_gap : 0;
    if (!w)
        return 0;
    if (w->prog && w->moved_any && atlen) {
        struct gpurun_progress_view v;
        gpurun_progress_view(w->prog, w->moved_t, &v);
        if (v.known && v.total >= 0)
            snprintf(at, atlen, "%s %lld of %lld", v.name ? v.name : "step", v.step, v.total);
        else if (v.known)
            snprintf(at, atlen, "%s %lld", v.name ? v.name : "step", v.step);
    }
    return w->moved_t;
}

void gpurun_watch_stalled(gpurun_watch_t *w, const char *verdict)
{
    if (!w)
        return;
    bool was = w->stall_verdict != NULL;
    free(w->stall_verdict);
    w->stall_verdict = verdict ? gpurun_xstrdup(verdict) : NULL;
    if (was || verdict)
        write_status(w, mono_now(), verdict ? "stalled" : "running", -1);
}

double gpurun_watch_next(const gpurun_watch_t *w)
{
    if (!w)
        return NEVER;
    return w->next_look < w->next_report ? w->next_look : w->next_report;
}

void gpurun_watch_tick(gpurun_watch_t *w, double t, json_t *bindings, int alive)
{
    if (!w)
        return;
    w->alive = alive;
    note_hosts(w, bindings);
    if (w->prog && !w->total_tried)
        read_total(w);
    if (w->prog && w->from_output && !w->relayed && !w->file.name)
        find_rank0_output(w, bindings);
    if (t >= w->next_look) {
        tail_look(w, &w->file, t);
        double every = !w->o.tty ? STATUS_FRESH_S
                       : w->o.interval_s > 0 && w->o.interval_s < TTY_LOOK_S ? w->o.interval_s : TTY_LOOK_S;
        while (w->next_look <= t)
            w->next_look += every;
    }
    look_moved(w, t, bindings);
    foretell_timeout(w, t);
    if (t < w->next_report) {
        status_if_moved(w, t);
        return;
    }
    if (w->prog && !w->relayed && !w->o.tty)
        tail_look(w, &w->file, t); /* off a terminal: once per report */
    if (lines_wanted(w))
        print_line(w, t);
    write_status(w, t, w->stall_verdict ? "stalled" : "running", -1);
    while (w->next_report <= t)
        w->next_report += w->period;
}

size_t gpurun_watch_status(gpurun_watch_t *w, double t, char *buf, size_t size)
{
    if (size)
        buf[0] = '\0';
    if (!w || !w->prog)
        return 0;
    struct gpurun_progress_view v;
    progress_view(w, t, &v);
    return gpurun_progress_format(&v, "  ", buf, size);
}

void gpurun_watch_conditions(gpurun_watch_t *w, const char *payload, size_t len)
{
    char *warning = NULL;
    if (!w || !gpurun_cond_head_take(&w->cond, w->run_id, payload, len, &warning) || !warning)
        return;
    gpurun_say(stderr, "gpurun: warning: %s\n", warning);
    free(warning);
    write_status(w, mono_now(), "running", -1);
}

json_t *gpurun_watch_conditions_json(gpurun_watch_t *w)
{
    return w ? gpurun_cond_head_record(&w->cond) : NULL;
}

void gpurun_watch_conditions_say(gpurun_watch_t *w)
{
    char *text = w ? gpurun_cond_head_end_text(&w->cond, w->run_id) : NULL;
    for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        gpurun_say(stderr, "gpurun: warning: %.*s\n", (int)(nl ? (size_t)(nl - line) : strlen(line)), line);
    }
    free(text);
}

void gpurun_watch_end(gpurun_watch_t *w, const char *state, int rc)
{
    if (!w)
        return;
    double t = mono_now();
    if (w->prog && !w->relayed)
        tail_look(w, &w->file, t); /* the last lines, for the last word */
    w->alive = 0;
    write_status(w, t, state ? state : "failed", rc);
    tail_close(&w->file);
    free(w->file.name);
    gpurun_progress_free(w->prog);
    gpurun_progress_conf_free(&w->conf);
    json_decref(w->hosts);
    gpurun_cond_head_free(&w->cond);
    free(w->stall_verdict);
    free(w->run_dir);
    free(w->job);
    free(w->run_id);
    free(w);
}
