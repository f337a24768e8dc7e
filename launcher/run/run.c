/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun run: merge the job with its template, plan, launch through a
 * launcher plugin, supervise, and keep everything in a run folder. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "monitor.h"
#include "alloc.h"
#include "container.h"
#include "energy.h"
#include "failure.h"
#include "fom.h"
#include "gpudirect.h"
#include "hpldat.h"
#include "launch.h"
#include "manager.h"
#include "plan.h"
#include "plugin.h"
#include "conditions.h"
#include "rank.h"
#include "rank_conditions.h"
#include "rankenv.h"
#include "record.h"
#include "results.h"
#include "scan.h"
#include "safefile.h"
#include "mps.h"
#include "run.h"
#include "site.h"
#include "template.h"
#include "job_template.h"
#include "topology.h"
#include "inputs.h"
#include "rendezvous.h"
#include "progress.h"
#include "progress_template.h"
#include "provenance.h"
#include "runstatus.h"
#include "say.h"
#include "watch.h"
#include "stall.h"
#include "stall_rank.h"
#include "torchrun.h"
#include "util.h"

/* Seconds between the stop signal and SIGKILL: $GPURUN_KILL_GRACE, else
 * the template's stop_grace, else GPURUN_STOP_GRACE_S: a program that stops
 * cleanly (GROMACS: its step, then its checkpoint) needs them. */
static double kill_grace(const gpurun_template_t *tpl)
{
    const char *g = getenv("GPURUN_KILL_GRACE");
    char *end;
    double v = g ? strtod(g, &end) : -1;
    if (g && *g && !*end && v >= 0 && v <= 3600)
        return v;
    return tpl && tpl->stop_grace_s >= 0 ? (double)tpl->stop_grace_s : GPURUN_STOP_GRACE_S;
}

static char *abs_path(const char *dir, const char *p)
{
    if (p[0] == '/')
        return gpurun_xstrdup(p);
    char cwd[PATH_MAX];
    if (dir[0] == '/')
        return gpurun_xasprintf("%s/%s", dir, p);
    if (!getcwd(cwd, sizeof cwd))
        return gpurun_xasprintf("%s/%s", dir, p);
    return strcmp(dir, ".") ? gpurun_xasprintf("%s/%s/%s", cwd, dir, p) : gpurun_xasprintf("%s/%s", cwd, p);
}

/* The modes of a run folder and of the files in it: the owner's only, or
 * readable by the group too (run_folder_mode = "group"); never the umask's. */
static mode_t run_folder_mode(const gpurun_job_t *job)
{
    return job->run_folder_mode == GPURUN_RUN_FOLDER_GROUP ? 0750 : 0700;
}

static mode_t run_file_mode(const gpurun_job_t *job)
{
    return job->run_folder_mode == GPURUN_RUN_FOLDER_GROUP ? 0640 : 0600;
}

/* RESULTS/<job>/<UTC time>-<n>: sortable, and never two runs in one folder.
 * The results and <job> folders must be ours (or root's) and not writable
 * by others without the sticky bit; the run folder is made here, by us, and
 * everything in it is written through the descriptor returned in *fdp, so
 * that nobody can swap it under us.  *inop is its inode: rank steps check
 * that the folder they find by name is this one. */
/* A results folder this user may not make or write in (read-only, not
 * theirs): err gains how to choose another. */
static void results_hint(gpurun_error_t *err)
{
    if (strstr(err->text, strerror(EACCES)) || strstr(err->text, strerror(EPERM)) ||
        strstr(err->text, strerror(EROFS))) {
        char *text = gpurun_xstrdup(err->text);
        gpurun_err(err, err->code, "%s; choose a results folder you can write with --results DIR (or the job key "
                   "`results`)", text);
        free(text);
    }
}

static char *make_run_dir(const char *results, const gpurun_job_t *job, int *fdp, ino_t *inop, gpurun_error_t *err)
{
    *fdp = -1;
    int rfd = gpurun_open_folder_path(results, "results folder", 0755, true, err);
    if (rfd < 0) {
        results_hint(err);
        return NULL;
    }
    char *parent = gpurun_xasprintf("%s/%s", results, job->name);
    int jfd = gpurun_open_folder_at(rfd, job->name, parent, "job folder", 0755, true, err);
    close(rfd);
    if (jfd < 0) {
        results_hint(err);
        free(parent);
        return NULL;
    }
    char stamp[32];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    char *made = NULL;
    for (int i = 1; i < 10000 && !made; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%d", stamp, i);
        if (mkdirat(jfd, name, 0700) < 0) {
            if (errno == EEXIST)
                continue;
            gpurun_err(err, GPURUN_EXIT_ENV, "cannot create a run folder in %s: %s", parent, strerror(errno));
            results_hint(err);
            break;
        }
        int fd = openat(jfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != geteuid()) {
            gpurun_err(err, GPURUN_EXIT_ENV, "%s/%s: the run folder just made is not ours any more%s%s", parent,
                       name, fd < 0 ? ": " : "", fd < 0 ? strerror(errno) : "");
            if (fd >= 0)
                close(fd);
            break;
        }
        /* mkdir's mode went through the umask: set the one asked for. */
        if (fchmod(fd, run_folder_mode(job)) < 0) {
            gpurun_err(err, GPURUN_EXIT_ENV, "%s/%s: cannot set its mode: %s", parent, name, strerror(errno));
            close(fd);
            break;
        }
        *fdp = fd;
        *inop = st.st_ino;
        made = gpurun_xasprintf("%s/%s", parent, name);
        /* RESULTS/JOB/latest: the newest run folder; one someone else put
         * there is left alone, and said. */
        char why[1024];
        if (gpurun_latest_update(jfd, parent, name, why, sizeof why) != 0)
            gpurun_say(stderr, "gpurun: warning: %s\n", why);
    }
    close(jfd);
    free(parent);
    return made;
}

/* The program must exist before anything starts: a typo is exit 3 at once,
 * not a time-out.  A path with a slash is relative to the job's folder. */
static int resolve_program(char **argv, const char *job_dir, gpurun_error_t *err)
{
    char *found;
    if (strchr(argv[0], '/')) {
        char *p = abs_path(job_dir, argv[0]);
        found = gpurun_which(p);
        free(p);
    } else {
        found = gpurun_which(argv[0]);
    }
    if (!found) {
        if (strchr(argv[0], '/')) {
            char *p = abs_path(job_dir, argv[0]);
            gpurun_err(err, GPURUN_EXIT_ENV,
                       "program '%s' not found (looked for %s, relative to the job file's folder); nothing was "
                       "started: fix the path in the job's command or params",
                       argv[0], p);
            free(p);
            return -1;
        }
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "program '%s' not found on PATH; nothing was started: install it or load its module, "
                          "or give its full path in the job's command or params",
                          argv[0]);
    }
    free(argv[0]);
    argv[0] = found;
    return 0;
}

static int command_argv(const char *what, const char *line, struct gpurun_kvlist *names, char ***argvp,
                        gpurun_error_t *err)
{
    /* expanded into words: a value is never split or parsed again (a job_dir with a blank) */
    int rc = gpurun_expand_words(line, gpurun_kvlist_lookup, names, what, argvp, err);
    if (rc == 0 && !(*argvp)[0]) {
        gpurun_free_words(*argvp);
        rc = gpurun_err(err, GPURUN_EXIT_CONFIG, "%s is empty after expansion", what);
    }
    if (rc < 0)
        err->code = GPURUN_EXIT_CONFIG;
    return rc;
}

/* Words as a user could paste them into a shell, one line on stdout. */
static void print_quoted(char *const *argv)
{
    struct gpurun_strbuf b = {0};
    for (char *const *a = argv; *a; a++) {
        const char *s = *a;
        bool plain = *s != '\0';
        for (const char *c = s; *c && plain; c++)
            plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%", *c) != NULL;
        gpurun_strbuf_puts(&b, a == argv ? "" : " ");
        if (plain) {
            gpurun_strbuf_puts(&b, s);
            continue;
        }
        gpurun_strbuf_addc(&b, '\'');
        for (const char *c = s; *c; c++)
            if (*c == '\'')
                gpurun_strbuf_puts(&b, "'\\''");
            else
                gpurun_strbuf_addc(&b, *c);
        gpurun_strbuf_addc(&b, '\'');
    }
    gpurun_say(stdout, "%s\n", b.s ? b.s : "");
    free(b.s);
}

/* A value that is not UTF-8 is kept as it is, not dropped: writing the
 * document then fails, naming the file, instead of a record that lies. */
static json_t *kv_json(const struct gpurun_kvlist *kv)
{
    json_t *o = json_object();
    for (size_t i = 0; i < kv->n; i++) {
        json_t *v = json_string(kv->items[i].value);
        json_object_set_new_nocheck(o, kv->items[i].key, v ? v : json_string_nocheck(kv->items[i].value));
    }
    return o;
}

static char *iso_time(time_t t)
{
    char buf[32];
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return gpurun_xstrdup(buf);
}

/* The variables ranks on other hosts must inherit.  mpirun passes on only
 * what -x names (and warns about a name that is not set); GPURUN_TOPOLOGY
 * is how each host's rank step finds its own topology (%h), and
 * GPURUN_TOPOLOGY_CACHE=0 turns the topology cache off on every host. */
static void export_names(char **out)
{
    /* The rank step on another host needs these as gpurun has them; the
     * sanitizers' options too, in a checking build. */
    static const char *const names[] = {"PATH",         "LD_LIBRARY_PATH", "GPURUN_TOPOLOGY", "GPURUN_TOPOLOGY_CACHE", "ASAN_OPTIONS",
                                        "LSAN_OPTIONS", "UBSAN_OPTIONS",   GPURUN_ENV_RUN_DIR_INO,
                                        GPURUN_ENV_RUN_UID, GPURUN_ENV_OUTPUT, GPURUN_ENV_RELAY, GPURUN_ENV_INSIDE,
                                        GPURUN_ENV_RANK_VARS, GPURUN_ENV_BUSY_SHARE, GPURUN_ENV_CONDITIONS_INTERVAL,
                                        GPURUN_ENV_HEAD_PID, GPURUN_ENV_STALL_SIGNAL, NULL};
    size_t n = 0;
    for (size_t i = 0; names[i]; i++)
        if (getenv(names[i]))
            out[n++] = (char *)names[i];
    out[n] = NULL;
}

struct rank_result {
    /* The first rank that failed on its own (not told to stop first), else
     * the first that failed after it was told to stop; -1 if none. */
    int failed_rank;
    bool failed_stopped; /* no rank failed on its own: failed_rank was stopped */
    int failed_code;
    char failed_host[256];
    char failed_error[512]; /* why its rank step could not start the program, or "" */
    int finished;       /* ranks that wrote a status */
    /* Ranks that started (a binding) and never reported an end, nor that
     * they were told to stop, by host ("h2 (ranks 2, 3)"): on another
     * host than gpurun's, lost with their host (or the launcher's daemon
     * there); on gpurun's own host, killed without a word (SIGKILL). */
    int nlost;
    char lost[512];
    int nsilent;
    char silent[512];
    int first_lost;     /* the first of those lost ranks, -1 */
    /* Ranks told to stop (a 'T' report) and killed before they could
     * report their program's end: stopped, neither lost nor failed. */
    int nstopped;
    int stop_rank, stop_signal; /* the first rank told to stop and the signal; -1, 0: none */
    char unstarted[512]; /* "node 3 (ranks 6-7)": ranks that reported nothing at all */
    json_t *bindings;   /* what every rank reported */
    json_t *statuses;
    char unwritten[2048]; /* why a host's HOST.ranks.json could not be written, or "" */
};

/* HOST.ranks.json, once per host, written by gpurun when the ranks have
 * ended: each local rank's binding and status as its rank step reported
 * them (through the launcher's pipe), in rank order. */
static void write_host_files(int dfd, const char *run_dir, mode_t fmode, struct rank_result *rr)
{
    json_t *by_host = json_object();
    size_t n = json_array_size(rr->bindings);
    for (size_t i = 0; i < n; i++) {
        json_t *b = json_array_get(rr->bindings, i), *st = json_array_get(rr->statuses, i);
        const char *h = json_string_value(json_object_get(b, "host"));
        if (!h)
            h = json_string_value(json_object_get(st, "host"));
        if (!h)
            continue;
        json_t *list = json_object_get(by_host, h);
        if (!list)
            json_object_set_new(by_host, h, list = json_array());
        json_array_append_new(list, json_pack("{s:i, s:O, s:O}", "rank", (int)i, "binding", b, "status", st));
    }
    const char *h;
    json_t *list;
    json_object_foreach(by_host, h, list)
    {
        char *name = gpurun_host_ranks_name(h);
        char *shown = gpurun_xasprintf("%s/%s", run_dir, name);
        json_t *doc = json_pack("{s:s, s:O}", "host", h, "ranks", list);
        gpurun_error_t e;
        if (gpurun_write_json_at(dfd, name, shown, doc, fmode, 0, &e) < 0 && !rr->unwritten[0])
            snprintf(rr->unwritten, sizeof rr->unwritten, "%s", e.text);
        json_decref(doc);
        free(name);
        free(shown);
    }
    json_decref(by_host);
}

/* Ranks whose status `want` says, by host, into `out`: "h2 (ranks 2, 3)". */
enum silence { SILENT_LOST, SILENT_HERE };

static bool silent_as(const struct rank_result *rr, json_t *stops, int i, const char *self, enum silence want)
{
    const char *h = json_string_value(json_object_get(json_array_get(rr->bindings, (size_t)i), "host"));
    if (!h || !json_is_null(json_array_get(rr->statuses, (size_t)i)) ||
        !json_is_null(json_array_get(stops, (size_t)i)))
        return false;
    return (strcmp(h, self) == 0) == (want == SILENT_HERE);
}

static int silent_by_host(const struct rank_result *rr, json_t *stops, int nranks, const char *self,
                          enum silence want, char *out, size_t size)
{
    int count = 0;
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < nranks; i++) {
        if (!silent_as(rr, stops, i, self, want))
            continue;
        count++;
        const char *h = json_string_value(json_object_get(json_array_get(rr->bindings, (size_t)i), "host"));
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = silent_as(rr, stops, j, self, want) &&
                   !strcmp(h, json_string_value(json_object_get(json_array_get(rr->bindings, (size_t)j), "host")));
        if (seen)
            continue;
        int n = 0;
        char ranks[256] = "";
        size_t ru = 0;
        for (int j = i; j < nranks; j++) {
            const char *hj = json_string_value(json_object_get(json_array_get(rr->bindings, (size_t)j), "host"));
            if (silent_as(rr, stops, j, self, want) && !strcmp(hj, h) && ru < sizeof ranks)
                ru += (size_t)snprintf(ranks + ru, sizeof ranks - ru, "%s%d", n++ ? ", " : "", j);
        }
        if (used < size)
            used += (size_t)snprintf(out + used, size - used, "%s%s (rank%s %s)", used ? ", " : "", h,
                                     n == 1 ? "" : "s", ranks);
    }
    return count;
}

/* Killed by a signal that stops a job (SIGTERM, SIGINT, SIGHUP, SIGQUIT). */
static bool stop_signal_death(int code)
{
    int sig = code - 128;
    return code > 128 && (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT);
}

/* What the rank steps reported, from the launcher's pipe (the outcome's
 * bindings and statuses, taken over here); `self` is gpurun's host. */
static void collect_ranks(struct gpurun_outcome *oc, int nranks, const char *self, struct rank_result *rr)
{
    rr->failed_rank = -1;
    rr->failed_stopped = false;
    rr->finished = 0;
    rr->unwritten[0] = '\0';
    rr->bindings = oc->bindings ? oc->bindings : json_array();
    rr->statuses = oc->statuses ? oc->statuses : json_array();
    json_t *stops = oc->stops ? oc->stops : json_array();
    oc->bindings = oc->statuses = oc->stops = NULL;
    while ((int)json_array_size(rr->bindings) < nranks)
        json_array_append_new(rr->bindings, json_null());
    while ((int)json_array_size(rr->statuses) < nranks)
        json_array_append_new(rr->statuses, json_null());
    while ((int)json_array_size(stops) < nranks)
        json_array_append_new(stops, json_null());
    /* The job was being stopped: gpurun stopped it, or a rank step was told
     * to.  Slurm signals every process of a step, programs too: one killed
     * by that signal before its rank step heard of it was stopped as well. */
    bool stopping = oc->interrupted || oc->timed_out;
    for (int i = 0; i < nranks && !stopping; i++)
        stopping = json_is_object(json_array_get(stops, (size_t)i)) ||
                   json_is_true(json_object_get(json_array_get(rr->statuses, (size_t)i), "stopped"));
    json_int_t first = 0;
    for (int i = 0; i < nranks; i++) {
        json_t *s = json_array_get(rr->statuses, (size_t)i);
        if (json_is_null(s))
            continue;
        rr->finished++;
        int code = (int)json_integer_value(json_object_get(s, "exit_code"));
        json_int_t end = json_integer_value(json_object_get(s, "end_ns"));
        bool stopped = json_is_true(json_object_get(s, "stopped"));
        if (!stopped && stopping && stop_signal_death(code) && !json_object_get(s, "error")) {
            stopped = true;
            json_object_set_new(s, "stopped", json_true());
            json_object_set_new(s, "stop_signal", json_integer(code - 128));
            json_object_set_new(s, "note", json_string("killed by the signal that stopped the job, before its "
                                                       "rank step heard of it"));
        }
        /* One that failed on its own comes before any that was stopped:
         * those are the launcher's (or gpurun's) doing, not a cause. */
        bool better = rr->failed_rank < 0 || (rr->failed_stopped && !stopped) ||
                      (rr->failed_stopped == stopped && end < first);
        if (code != 0 && better) {
            rr->failed_rank = i;
            rr->failed_stopped = stopped;
            rr->failed_code = code;
            first = end;
            snprintf(rr->failed_host, sizeof rr->failed_host, "%s",
                     json_string_value(json_object_get(s, "host")) ? json_string_value(json_object_get(s, "host"))
                                                                    : "?");
            const char *why = json_string_value(json_object_get(s, "error"));
            snprintf(rr->failed_error, sizeof rr->failed_error, "%s", why ? why : "");
        }
    }
    /* Told to stop: the first such rank, and those killed before their
     * status came, whose status says so now. */
    rr->nstopped = 0;
    rr->stop_rank = -1;
    rr->stop_signal = 0;
    for (int i = 0; i < nranks; i++) {
        json_t *st = json_array_get(stops, (size_t)i), *s = json_array_get(rr->statuses, (size_t)i);
        int sig = (int)json_integer_value(json_object_get(st, "signal"));
        if (!sig && json_is_true(json_object_get(s, "stopped")))
            sig = (int)json_integer_value(json_object_get(s, "stop_signal"));
        if (sig && rr->stop_rank < 0) {
            rr->stop_rank = i;
            rr->stop_signal = sig;
        }
        if (!json_is_object(st) || !json_is_null(s))
            continue;
        rr->nstopped++;
        const char *h = json_string_value(json_object_get(json_array_get(rr->bindings, (size_t)i), "host"));
        json_t *ns = json_pack("{s:i, s:s?, s:n, s:b, s:i, s:s}", "rank", i, "host", h, "exit_code", "stopped", 1,
                               "stop_signal", sig, "note",
                               "its rank step was told to stop and was killed before its program's end");
        json_array_set_new(rr->statuses, (size_t)i, ns);
    }
    /* Ranks that reported their binding but never their end nor a stop. */
    rr->nlost = silent_by_host(rr, stops, nranks, self, SILENT_LOST, rr->lost, sizeof rr->lost);
    rr->nsilent = silent_by_host(rr, stops, nranks, self, SILENT_HERE, rr->silent, sizeof rr->silent);
    rr->first_lost = -1;
    for (int i = 0; i < nranks && rr->first_lost < 0; i++)
        if (silent_as(rr, stops, i, self, SILENT_LOST))
            rr->first_lost = i;
    json_decref(stops);
}

/* Ranks that reported nothing, not even a binding: their host never
 * started them (down, unreachable, refused by the launcher) and wrote
 * nothing, so no host name is known: said by the node the plan gave them,
 * as ranges ("node 3 (ranks 6-7)"), in one pass over the ranks. */
static bool silent_rank(const struct rank_result *rr, int i)
{
    return json_is_null(json_array_get(rr->bindings, (size_t)i)) &&
           json_is_null(json_array_get(rr->statuses, (size_t)i));
}

static void unstarted_ranks(const gpurun_plan_t *plan, struct rank_result *rr)
{
    char *out = rr->unstarted;
    size_t size = sizeof rr->unstarted, used = 0;
    out[0] = '\0';
    for (int i = 0; i < plan->nranks && used < size; i++) {
        if (!silent_rank(rr, i))
            continue;
        int node = plan->ranks[i].node, from = i;
        while (i + 1 < plan->nranks && silent_rank(rr, i + 1) && plan->ranks[i + 1].node == node)
            i++;
        if (from == i)
            used += (size_t)snprintf(out + used, size - used, "%snode %d (rank %d)", used ? ", " : "", node, from);
        else
            used += (size_t)snprintf(out + used, size - used, "%snode %d (ranks %d-%d)", used ? ", " : "", node,
                                     from, i);
    }
    if (used >= size)
        snprintf(out + size - 5, 5, "...");
}

static const char *signal_name(int code)
{
    return code > 128 && code < 128 + 65 ? strsignal(code - 128) : NULL;
}

/* What a launcher said, for a message when it failed alone: its last
 * whole lines outside Open MPI's "-----" help boxes (the line that names
 * the host, as "ssh: Could not resolve hostname h7", comes before the box),
 * without mpirun's warnings about variables -x names; else its last lines. */
static char *launcher_tail(int dfd, const char *run_dir)
{
    char *p = gpurun_xasprintf("%s/launcher.out", run_dir);
    char *buf = NULL;
    size_t len = 0;
    gpurun_error_t e;
    char *tail = NULL;
    int fd = gpurun_open_own_at(dfd, GPURUN_RUN_LAUNCHER_OUT, p, &e);
    if (fd >= 0 && gpurun_read_fd(fd, p, "launcher output", 16u << 20, &buf, &len, &e) == 0) {
        enum { KEEP = 8 };
        const char *kept[KEEP], *all[KEEP];
        size_t klen[KEEP], alen[KEEP];
        int nk = 0, na = 0;
        bool box = false;
        for (char *line = buf; line < buf + len;) {
            char *nl = memchr(line, '\n', (size_t)(buf + len - line));
            size_t ll = nl ? (size_t)(nl - line) : (size_t)(buf + len - line);
            bool rule = ll >= 10 && strspn(line, "-") >= 10;
            if (ll) {
                memmove(all, all + (na == KEEP), sizeof all[0] * (size_t)(na == KEEP ? KEEP - 1 : 0));
                memmove(alen, alen + (na == KEEP), sizeof alen[0] * (size_t)(na == KEEP ? KEEP - 1 : 0));
                all[na == KEEP ? KEEP - 1 : na] = line;
                alen[na == KEEP ? KEEP - 1 : na++] = ll;
            }
            if (rule)
                box = !box;
            else if (ll && !box && !memmem(line, ll, "could not find environment variable", 35)) {
                memmove(kept, kept + (nk == KEEP), sizeof kept[0] * (size_t)(nk == KEEP ? KEEP - 1 : 0));
                memmove(klen, klen + (nk == KEEP), sizeof klen[0] * (size_t)(nk == KEEP ? KEEP - 1 : 0));
                kept[nk == KEEP ? KEEP - 1 : nk] = line;
                klen[nk == KEEP ? KEEP - 1 : nk++] = ll;
            }
            line += ll + 1;
        }
        const char **l = nk ? kept : all;
        size_t *ln = nk ? klen : alen;
        int n = nk ? nk : na;
        size_t total = 1;
        for (int i = 0; i < n; i++)
            total += ln[i] + 1;
        tail = gpurun_xcalloc(1, total);
        for (int i = 0, o = 0; i < n; i++) {
            memcpy(tail + o, l[i], ln[i]);
            o += (int)ln[i];
            tail[o++] = i + 1 < n ? '\n' : '\0';
        }
        free(buf);
        char *lines = tail;
        tail = gpurun_xasprintf("%s\n(all of it: %s)", lines, p);
        free(lines);
    }
    if (fd >= 0)
        close(fd);
    free(p);
    return tail;
}

struct run_ctx {
    gpurun_job_t *job;
    const struct gpurun_run_opts *opts;
    gpurun_template_t *tpl;
    gpurun_topo_t *topo;
    gpurun_plan_t *plan;
    const gpurun_launcher_plugin_t *launcher;
    /* The resource manager of the launcher (srun: Slurm), else of the
     * allocation gpurun runs in; NULL: none. */
    const gpurun_rm_plugin_t *rm;
    char launcher_why[256];
    char alloc_note[256];
    char *command;       /* template command (+ gpu_args), unexpanded */
    char *results;
    gpurun_site_t *site;
    json_t *config;      /* this configuration's scan values: {"ranks_per_node": 2} */
    gpurun_request_t req; /* as the job asks, before this node resolved it: other hosts plan with it */
    gpurun_gdr_probe_t *gdr_probe; /* this node's GPUDirect pieces: probed once per gpurun run */
    json_t *gdr;                   /* this configuration's GPUDirect decision, for its records */
    char *job_dir;        /* the job file's folder, absolute */
    char stopped[200];    /* why the last run stopped the whole job (interrupted, the allocation's time
                           * limit), or "": a scan or repeat goes no further */
    struct gpurun_container_run *ctr; /* the container the ranks run in; NULL: none */
    struct scan_row *row; /* where run_once says how the run went, for a scan's summary; NULL: nowhere */
    struct gpurun_hpl_edit hpl; /* this configuration's NB and P x Q for the template's hpl_dat; inactive: none */
};

/* One run of a scan or repeat, for the summary table at its end. */
struct scan_row {
    char *config;    /* what varies ("ranks_per_node=2, params.npme=1"), "" none */
    int repeat;      /* 1-based */
    const char *state; /* the record's; NULL: not started or no record */
    char fom[160];   /* "ns_per_day = 41.2 ns/day"; "" none */
    char *folder;    /* the run folder; NULL: none was made */
    int rc;
};

/* The variables a rank step sets, by name, for a runtime that passes only
 * what it is told (podman): the plan's, the job's and the template's env,
 * torchrun's, and the MPI and resource managers' ones by prefix (podman -e
 * 'OMPI_*', 'SLURM_*'). */
static void container_env_names(struct run_ctx *c)
{
    static const char *const fixed[] = {
        "GPURUN_*", "OMP_*", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "ROCR_VISIBLE_DEVICES",
        "HIP_VISIBLE_DEVICES", "UCX_*", "NCCL_*", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
        "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_*", "OMPI_*", "PMIX_*", "PMI_*", NULL};
    for (size_t i = 0; fixed[i]; i++)
        gpurun_container_pass_env(c->ctr, fixed[i]);
    for (const gpurun_rm_plugin_t *const *m = gpurun_rm_all(); *m; m++)
        for (const char *const *e = (*m)->task_env; e && *e; e++)
            gpurun_container_pass_env(c->ctr, *e);
    for (int r = 0; r < c->plan->nranks; r++) {
        const char *k;
        json_t *v;
        json_object_foreach(c->plan->ranks[r].env, k, v) gpurun_container_pass_env(c->ctr, k);
    }
    for (size_t i = 0; i < c->job->env.n; i++)
        gpurun_container_pass_env(c->ctr, c->job->env.items[i].key);
    for (size_t i = 0; c->tpl && i < c->tpl->env.n; i++)
        gpurun_container_pass_env(c->ctr, c->tpl->env.items[i].key);
}

/* `app` as the program inside the container: a path with a slash is
 * relative to the job's folder (mounted at its own path) and must be there;
 * an absolute one or a bare name is the image's. */
static int container_program(struct run_ctx *c, char **app, gpurun_error_t *err)
{
    if (!strchr(app[0], '/') || app[0][0] == '/')
        return 0;
    char *p = abs_path(c->job_dir, app[0] + (strncmp(app[0], "./", 2) ? 0 : 2));
    if (access(p, X_OK) < 0) {
        gpurun_err(err, GPURUN_EXIT_ENV,
                   "program '%s' not found (looked for %s, relative to the job file's folder, which the container "
                   "mounts at the same path); nothing was started",
                   app[0], p);
        free(p);
        return -1;
    }
    free(app[0]);
    app[0] = p;
    return 0;
}

/* gpurun-rank as the container's entry, so that each rank reports the
 * binding its program sees inside; the rank steps are told so. */
static void container_inside(struct run_ctx *c)
{
    char self[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    self[sl > 0 ? sl : 0] = '\0';
    gpurun_container_set_inside(c->ctr, sl > 0 ? gpurun_rank_program(self) : NULL);
    if (c->ctr->inside && strcmp(c->ctr->runtime, "pyxis")) /* pyxis: the rank step is inside */
        setenv(GPURUN_ENV_INSIDE, "1", 1);
    else
        unsetenv(GPURUN_ENV_INSIDE);
}

/* The runtime's command line that starts `app` in the container. */
static char **container_argv(struct run_ctx *c, char *const *app, const char *run_dir)
{
    const gpurun_gpu_t *g0 = c->plan->ranks[0].ngpus ? &c->topo->gpus[c->plan->ranks[0].gpus[0]] : NULL;
    return gpurun_container_wrap_rank(c->ctr, app, run_dir, c->job_dir, c->plan->req.gpus_per_rank,
                                      g0 ? g0->vendor : NULL);
}

static json_t *container_json(const struct run_ctx *c, char *const *launched)
{
    json_t *argv = json_array();
    for (char *const *a = launched; *a; a++)
        json_array_append_new(argv, json_string(*a));
    json_t *file = c->ctr->have_file
                       ? json_pack("{s:I, s:I, s:I, s:I}", "size", (json_int_t)c->ctr->file_size, "mtime_ns",
                                   (json_int_t)c->ctr->file_mtime_ns, "inode", (json_int_t)c->ctr->file_inode,
                                   "device", (json_int_t)c->ctr->file_dev)
                       : json_null();
    return json_pack("{s:s, s:s, s:s, s:s?, s:b, s:s, s:o, s:s, s:s?, s:s?, s:o, s:s?}", "runtime", c->ctr->runtime,
                     "runtime_path", c->ctr->exe, "image", c->ctr->image, "digest", c->ctr->digest, "image_is_path",
                     c->ctr->image_is_path, "why", c->ctr->why, "argv", argv, "binding_from",
                     c->ctr->inside || !strcmp(c->ctr->runtime, "pyxis") ? "inside" : "rank step", "inside_entry",
                     c->ctr->inside, "inside_note",
                     c->ctr->inside_note, "image_file", file, "sif_id", c->ctr->sif_id);
}

/* The table of ${name}s of one run (or dry run) of a configuration. */
static void run_names(const struct run_ctx *c, const char *run_dir, struct gpurun_kvlist *names)
{
    const gpurun_request_t *r = &c->plan->req;
    struct gpurun_job_values vals = {
        .job = c->job->name,
        .template_name = c->job->template_name,
        .job_dir = c->job_dir,
        .run_dir = run_dir,
        .nodes = r->nodes,
        .ranks_per_node = r->ranks_per_node,
        .ranks = c->plan->nranks,
        .gpus_per_rank = r->gpus_per_rank,
        .threads_per_rank = c->plan->ranks[0].threads,
        .repeat = c->job->repeat,
    };
    gpurun_job_names(names, &vals, c->tpl, &c->job->params);
}

/* Where a params key was set: the job's line (or --set), else the template. */
static const char *param_origin(const struct run_ctx *c, const char *key)
{
    char *dotted = gpurun_xasprintf("params.%s", key);
    bool in_job = gpurun_kvlist_get(&c->job->params, key) != NULL;
    const char *from = in_job ? gpurun_job_origin(c->job, dotted) : c->tpl->path;
    free(dotted);
    return from;
}

/* A torchrun template's rendezvous params, checked (exit 2). */
static int rendezvous_settings(const struct run_ctx *c, struct gpurun_kvlist *names,
                               struct gpurun_torchrun_settings *s, gpurun_error_t *err)
{
    struct gpurun_torchrun_params p = {
        .mode = gpurun_kvlist_get(names, GPURUN_TORCHRUN_MODE_PARAM),
        .mode_origin = param_origin(c, GPURUN_TORCHRUN_MODE_PARAM),
        .port = gpurun_kvlist_get(names, GPURUN_TORCHRUN_PORT_PARAM),
        .port_origin = param_origin(c, GPURUN_TORCHRUN_PORT_PARAM),
        .timeout = gpurun_kvlist_get(names, GPURUN_TORCHRUN_TIMEOUT_PARAM),
        .timeout_origin = param_origin(c, GPURUN_TORCHRUN_TIMEOUT_PARAM),
    };
    return gpurun_torchrun_settings(&p, s, err);
}

/* The environment every rank gets (env.json), put together by rankenv.c
 * from the template's rendezvous (at `port`; 0 in a dry run) and the job's
 * env { }. */
static int job_env(const struct run_ctx *c, struct gpurun_kvlist *names, const char *run_dir, int port,
                   struct gpurun_kvlist *env, gpurun_error_t *err)
{
    struct gpurun_torchrun_settings s;
    bool torchrun = c->tpl && c->tpl->rank_env;
    if (torchrun && rendezvous_settings(c, names, &s, err) < 0)
        return -1;
    return gpurun_rankenv_job(torchrun ? &s : NULL, port, run_dir, c->plan, &c->job->env, env, err);
}

/* The ranks succeeded: read the figures of merit, then the template's
 * sanity text and the job's reference bands (exit 1 when one fails). */
static int check_results(struct run_ctx *c, struct gpurun_kvlist *names, const char *run_dir, gpurun_foms_t *foms, json_t *refs,
                         const char **state, gpurun_error_t *err)
{
    if (!c->tpl) {
        if (c->job->references.n)
            gpurun_say(stderr, "gpurun: warning: references need a template's figures of merit; not checked\n");
        return 0;
    }
    if (gpurun_fom_read(c->tpl, run_dir, gpurun_kvlist_lookup, names, NULL, foms, err) < 0) {
        *state = GPURUN_STATE_SANITY_FAILED;
        err->code = GPURUN_EXIT_CHECK;
        return GPURUN_EXIT_CHECK;
    }
    char where[512] = "", failed[1024] = "";
    if (!gpurun_sanity_check(c->tpl, run_dir, gpurun_kvlist_lookup, names, where, sizeof where, failed,
                             sizeof failed)) {
        *state = GPURUN_STATE_SANITY_FAILED;
        gpurun_err(err, GPURUN_EXIT_CHECK, "the ranks ended well, but %s; run folder %s", failed, run_dir);
        return GPURUN_EXIT_CHECK;
    }
    for (size_t i = 0; i < foms->n; i++)
        if (foms->f[i].n == 0 && !foms->f[i].optional) {
            *state = GPURUN_STATE_SANITY_FAILED;
            gpurun_err(err, GPURUN_EXIT_CHECK, "the ranks ended well, but no figure '%s' was found in %s",
                       foms->f[i].name, foms->f[i].file ? foms->f[i].file : run_dir);
            return GPURUN_EXIT_CHECK;
        }
    int rc = 0;
    for (size_t r = 0; r < c->job->references.n; r++) {
        const char *name = c->job->references.items[r].key, *spec = c->job->references.items[r].value;
        const struct gpurun_fom_values *fv = NULL;
        for (size_t i = 0; i < foms->n; i++)
            if (!strcmp(foms->f[i].name, name))
                fv = &foms->f[i];
        char why[256] = "";
        int in = 0;
        if (!fv || fv->n == 0)
            snprintf(why, sizeof why, "the template has no figure '%s'", name);
        else if ((in = gpurun_reference_check(spec, fv->values[fv->n - 1], why, sizeof why, err)) < 0)
            return err->code;
        json_object_set_new(refs, name, json_pack("{s:s, s:b}", "spec", spec, "ok", in == 1));
        if (in != 1 && rc == 0) {
            *state = GPURUN_STATE_REFERENCE_FAILED;
            rc = GPURUN_EXIT_CHECK;
            gpurun_err(err, rc, "reference check failed for %s: %s", name, why);
        }
    }
    return rc;
}

/* SIGINT/SIGTERM/SIGHUP while the MPS daemon starts (the control program
 * can take seconds) must not kill gpurun and leave the daemon running: they
 * are noted until the ranks' supervision takes them (it reads them through
 * a signalfd, whatever the handler). */
static volatile sig_atomic_t mps_signal;

static void note_mps_signal(int sig)
{
    mps_signal = sig;
}

static void mps_signals(bool catch, struct sigaction old[3])
{
    static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++) {
        if (catch) {
            struct sigaction sa = {.sa_handler = note_mps_signal};
            sigemptyset(&sa.sa_mask);
            sigaction(sigs[i], &sa, &old[i]);
        } else {
            sigaction(sigs[i], &old[i], NULL);
        }
    }
}

/* This host's plan again, now with where its ranks find the MPS daemon
 * (the other hosts' planners put it in theirs). */
static int mps_into_host_plan(struct run_ctx *c, const struct gpurun_mps *m, int dfd, const char *run_dir,
                              const char *host, gpurun_error_t *err)
{
    json_t *pj = gpurun_plan_json(c->plan);
    gpurun_mps_plan_add(m, c->job->mps, pj);
    char *hname = gpurun_host_plan_name(host);
    char *p = gpurun_xasprintf("%s/%s", run_dir, hname);
    int wrc = gpurun_write_host_plan_at(dfd, hname, p, pj, run_file_mode(c->job), err);
    free(p);
    free(hname);
    json_decref(pj);
    return wrc;
}

/* CUDA MPS for ranks of this host that share an NVIDIA GPU, under every
 * launcher (another host's first rank step starts its own).  *jp: what the
 * record says of it, NULL when no rank shares a GPU. */
static int start_mps(struct run_ctx *c, struct gpurun_mps *m, int dfd, const char *run_dir, const char *host,
                     json_t **jp, gpurun_error_t *err)
{
    enum gpurun_mps_mode mode = c->job->mps;
    *jp = NULL;
    if (!gpurun_mps_wanted(c->plan))
        return 0;
    int nlocal = 0;
    while (nlocal < c->plan->nranks && c->plan->ranks[nlocal].node == 0)
        nlocal++;
    if (gpurun_mps_start(m, mode, dfd, run_dir, host, nlocal, err) < 0)
        return -1;
    if (m->active && mps_into_host_plan(c, m, dfd, run_dir, host, err) < 0)
        return -1; /* run_once's stop_mps quits the daemon */
    if (m->warning[0])
        gpurun_say(stderr, "gpurun: warning: %s\n", m->warning);
    if (mode != GPURUN_MPS_OFF && !m->active)
        gpurun_say(stderr, "gpurun: note: %s\n", m->note);
    else if (c->opts->verbose && m->note[0])
        gpurun_say(stderr, "gpurun: %s\n", m->note);
    *jp = gpurun_mps_json(m, mode);
    return 0;
}

/* Quit this job's daemon on this host (once). */
static void stop_mps(struct gpurun_mps *m, json_t *j)
{
    gpurun_error_t e = {0};
    bool was_ours = m->ours;
    if (gpurun_mps_stop(m, &e) < 0) {
        gpurun_say(stderr, "gpurun: warning: %s\n", e.text);
        if (j)
            json_object_set_new(j, "stop_error", json_string(e.text));
    } else if (was_ours && j) {
        json_object_set_new(j, "stopped", json_true());
    }
    m->active = false;
}

/* One run of the job, from its folder's creation to its record: what the
 * steps of run_once share. */
struct run_attempt {
    char *run_dir;
    int dfd; /* the run folder's descriptor */
    ino_t dir_ino;
    mode_t fmode;                 /* the run folder's files' mode */
    char host[256];               /* this host's name */
    struct gpurun_kvlist names;   /* what the template's {names} expand to */
    char **app;                   /* the program and its arguments */
    char **launched;              /* what the rank steps start instead (the container runtime); NULL: app */
    time_t start;
    struct gpurun_launch_cmds cmds;
    struct gpurun_outcome oc;
    struct rank_result rr;
    json_t *gpus_monitor;
    char mon_why[512]; /* why there is no GPU monitor, or "" */
    struct gpurun_rapl *rapl0, *rapl1; /* this host's RAPL counters around the ranks; NULL: not read */
    int setup_fd;      /* setup.log; -1 until a setup step runs */
    struct gpurun_mps mps;
    json_t *mps_json;
    struct gpurun_store store; /* the rendezvous store gpurun hosts, if any */
    int rdv_port;              /* MASTER_PORT: the store's, or rank 0's to bind; 0: none */
    json_t *rdv_json;          /* the record's "rendezvous"; NULL: not a torchrun template */
    gpurun_watch_t *watch; /* progress lines and status.json (watch.h) */
    gpurun_stall_t *stall; /* stall detection (stall.h); NULL: off */
    int rc;            /* the exit status a step that stopped the run ended with */
    const char *state; /* the record's: GPURUN_STATE_OK, ... (results.h) */
    int why_rank;      /* the rank the record's failure names (its output): -1 none */
    char why[600];     /* the failure's reason, one line */
    bool tail_read;
    struct gpurun_rank_tail tail; /* the end of why_rank's output */
    char *tail_file;
    json_t *failure;   /* the record's failure; NULL: none */
    bool stops_job;    /* interrupted, or the allocation ended: no further run of a scan */
    gpurun_foms_t foms;
    json_t *refs;
    json_t *prov; /* the record's provenance, made at the start */
};

/* A step that stops the run: -1, with the exit status kept in a->rc. */
static int stop_with(struct run_attempt *a, int rc)
{
    a->rc = rc;
    return -1;
}

/* A torchrun template's rendezvous, before the ranks' environment is
 * written: the store gpurun hosts (its port held from its bind until the
 * ranks end), or rank 0's port chosen now, or nothing (a file).  0, or -1
 * (stop_with). */
static int start_rendezvous(struct run_ctx *c, struct run_attempt *a, gpurun_error_t *err)
{
    if (!c->tpl || !c->tpl->rank_env)
        return 0;
    struct gpurun_torchrun_settings s;
    if (rendezvous_settings(c, &a->names, &s, err) < 0)
        return stop_with(a, err->code);
    a->rdv_json = json_pack("{s:s}", "mode", gpurun_rendezvous_name(s.mode));
    if (s.mode == GPURUN_RDV_RANK0) {
        a->rdv_port = s.port ? s.port : gpurun_torchrun_free_port(err);
        return a->rdv_port < 0 ? stop_with(a, err->code) : 0;
    }
    if (s.mode != GPURUN_RDV_STORE)
        return 0;
    /* The rank's interpreter (the template's ${python}), in the image too. */
    const char *python = gpurun_kvlist_get(&a->names, GPURUN_TORCHRUN_PYTHON_PARAM);
    char **argv = gpurun_argv_new();
    gpurun_argv_add(&argv, python && *python ? python : "python3");
    gpurun_store_args(&argv, s.port, c->plan->nranks, s.timeout);
    if ((c->ctr ? container_program(c, argv, err) : resolve_program(argv, c->job->dir, err)) < 0) {
        gpurun_free_words(argv);
        return stop_with(a, err->code);
    }
    if (c->ctr) {
        char **in = gpurun_container_wrap(c->ctr, argv, a->run_dir, c->job_dir, 0, NULL);
        gpurun_free_words(argv);
        argv = in;
    }
    /* Its start is Python's and torch's import, which a cold parallel file
     * system can make slow: bounded by the job's time limit, at most
     * GPURUN_STORE_START_S, not by the ranks' rendezvous bound. */
    long store_bound = c->job->timeout_s > 0 && c->job->timeout_s < GPURUN_STORE_START_S ? c->job->timeout_s
                                                                                           : GPURUN_STORE_START_S;
    char *log = gpurun_xasprintf("%s/" GPURUN_RUN_RENDEZVOUS_LOG, a->run_dir);
    int fd = gpurun_create_at(a->dfd, GPURUN_RUN_RENDEZVOUS_LOG, O_WRONLY | O_APPEND, a->fmode);
    int src;
    if (fd < 0)
        src = gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot create: %s", log, strerror(errno));
    else
        src = gpurun_store_start(argv, s.port, store_bound, a->dfd, a->run_dir, fd, log, &a->store, err);
    if (src == 0)
        a->rdv_port = a->store.port;
    if (src == 0)
        json_object_set_new(a->rdv_json, "store", json_string(python && *python ? python : "python3"));
    else if (err->code == GPURUN_EXIT_ENV) {
        char why[sizeof err->text];
        snprintf(why, sizeof why, "%s", err->text);
        gpurun_err(err, GPURUN_EXIT_ENV,
                   "%s; params { %s = \"file\" } meets without a port (a script that passes $%s to "
                   "init_process_group), %s = \"rank0\" lets rank 0 host it (torchrun's way: another user of this "
                   "host could take the port first)",
                   why, GPURUN_TORCHRUN_MODE_PARAM, GPURUN_ENV_INIT_METHOD, GPURUN_TORCHRUN_MODE_PARAM);
    }
    if (fd >= 0)
        close(fd);
    free(log);
    gpurun_free_words(argv);
    return src == 0 ? 0 : stop_with(a, err->code);
}

/* The topology as hwloc XML, for the rank steps on this host. */
static int write_topology(struct run_ctx *c, struct run_attempt *a, gpurun_error_t *err)
{
    char *p = gpurun_xasprintf("%s/%s", a->run_dir, GPURUN_RUN_TOPOLOGY);
    char *xml = NULL;
    int xlen = 0;
    int wrc = 0;
    if (hwloc_topology_export_xmlbuffer(c->topo->hw, &xml, &xlen, 0) < 0)
        wrc = gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot export the topology", p);
    if (wrc == 0)
        wrc = gpurun_write_atomic_at(a->dfd, GPURUN_RUN_TOPOLOGY, p, xml, xlen > 0 ? (size_t)xlen - 1 : 0, a->fmode,
                                     0, err);
    if (xml)
        hwloc_free_xmlbuffer(c->topo->hw, xml);
    free(p);
    return wrc;
}

/* The rank steps' inputs, each written once through the folder's
 * descriptor with an explicit mode. */
static int write_rank_inputs(struct run_ctx *c, struct run_attempt *a, gpurun_error_t *err)
{
    char *p = gpurun_xasprintf("%s/%s", a->run_dir, GPURUN_RUN_PLAN);
    json_t *pj = gpurun_plan_json(c->plan);
    int wrc = gpurun_write_json_at(a->dfd, GPURUN_RUN_PLAN, p, pj, a->fmode, 0, err);
    free(p);
    gethostname(a->host, sizeof a->host - 1);
    char *hname = gpurun_host_plan_name(a->host); /* this host's ranks need not plan again */
    p = gpurun_xasprintf("%s/%s", a->run_dir, hname);
    if (wrc == 0)
        wrc = gpurun_write_host_plan_at(a->dfd, hname, p, pj, a->fmode, err);
    json_decref(pj);
    free(p);
    free(hname);
    p = gpurun_xasprintf("%s/%s", a->run_dir, GPURUN_RUN_REQUEST);
    json_t *rj = gpurun_request_json(&c->req);
    if (wrc == 0)
        wrc = gpurun_write_json_at(a->dfd, GPURUN_RUN_REQUEST, p, rj, a->fmode, 0, err);
    json_decref(rj);
    free(p);
    if (wrc == 0)
        wrc = write_topology(c, a, err);
    p = gpurun_xasprintf("%s/%s", a->run_dir, GPURUN_RUN_ENV);
    struct gpurun_kvlist envkv = {0};
    if (wrc == 0)
        wrc = job_env(c, &a->names, a->run_dir, a->rdv_port, &envkv, err);
    json_t *env = kv_json(&envkv);
    gpurun_kvlist_clear(&envkv);
    if (wrc == 0)
        wrc = gpurun_write_json_at(a->dfd, GPURUN_RUN_ENV, p, env, a->fmode, 0, err);
    json_decref(env);
    free(p);
    /* Another host's rank step decides GPUDirect (and CUDA MPS) for its own ranks with these. */
    p = gpurun_xasprintf("%s/%s", a->run_dir, GPURUN_RUN_GPUDIRECT);
    json_t *gj = json_pack("{s:s, s:o, s:s}", "mode", gpurun_gdr_mode_name(c->job->gpudirect), "env",
                           c->tpl ? kv_json(&c->tpl->env) : json_object(), "mps", gpurun_mps_mode_name(c->job->mps));
    if (wrc == 0)
        wrc = gpurun_write_json_at(a->dfd, GPURUN_RUN_GPUDIRECT, p, gj, a->fmode, 0, err);
    json_decref(gj);
    free(p);
    return wrc;
}

/* The template's copy of HPL's input, in the run folder (the setup steps
 * put it there), with the NB and P x Q the params ask for (hpldat.h): read
 * only as a file of ours, replaced atomically.  0, or -1 (stop_with). */
static int edit_hpl_dat(struct run_ctx *c, struct run_attempt *a, gpurun_error_t *err)
{
    char *shown = gpurun_xasprintf("%s/%s", a->run_dir, c->tpl->hpl_dat);
    char *text = NULL, *out = NULL;
    size_t len = 0, outlen = 0;
    int fd = gpurun_open_own_at(a->dfd, c->tpl->hpl_dat, shown, err);
    int rc = fd < 0 ? -1 : gpurun_read_fd(fd, shown, "HPL input", GPURUN_HPLDAT_MAX, &text, &len, err);
    if (fd >= 0)
        close(fd);
    if (rc == 0)
        rc = gpurun_hpl_rewrite(text, len, &c->hpl, shown, &out, &outlen, err);
    if (rc == 0)
        rc = gpurun_write_atomic_at(a->dfd, c->tpl->hpl_dat, shown, out, outlen, a->fmode, 0, err);
    free(text);
    free(out);
    free(shown);
    return rc < 0 ? stop_with(a, err->code) : 0;
}

/* Setup steps run once, in the run folder, before any rank: 0, or -1
 * (stop_with). */
/* The end of the run folder's `file` into a->tail, read once: its lines
 * that start with `label` only (NULL: all), the cause found with `tpl`'s
 * failure patterns then gpurun's own (NULL: gpurun's own only);
 * a->tail_file names it once read. */
static void read_tail(struct run_attempt *a, const char *file, const char *label, const gpurun_template_t *tpl)
{
    a->tail_read = true;
    char *shown = gpurun_xasprintf("%s/%s", a->run_dir, file);
    gpurun_error_t e;
    int fd = gpurun_open_own_at(a->dfd, file, shown, &e);
    if (fd >= 0 && gpurun_rank_tail_read(fd, label, gpurun_failure_lines(), tpl, &a->tail, &e) == 0) {
        a->tail_file = shown;
        shown = NULL;
    }
    if (fd >= 0)
        close(fd);
    free(shown);
}

static const char *sig_abbrev(int sig, char *buf, size_t len);
static void status_text(int code, char *buf, size_t len);
static bool stop_noted(struct run_attempt *a, const char *when, int *rcp);

/* Setup step i failed with `code` (128+N: killed by signal N; -1: not
 * started): a failed run like a rank's, its cause found in setup.log with
 * the template's failure patterns, said on stderr and kept in the record. */
static void setup_failed(struct run_ctx *c, struct run_attempt *a, size_t i, int code, const char *log,
                         gpurun_error_t *err)
{
    read_tail(a, "setup.log", NULL, c->tpl);
    char *cause = gpurun_rank_tail_reason(&a->tail);
    char status[64];
    if (code < 0)
        snprintf(status, sizeof status, "could not be started");
    else
        status_text(code, status, sizeof status);
    a->state = GPURUN_STATE_FAILED;
    a->why_rank = -1;
    snprintf(a->why, sizeof a->why, "%s", cause ? cause : status);
    a->failure = gpurun_record_failure(-1, NULL, code < 0 ? GPURUN_EXIT_ENV : code, a->why, a->tail.lines, a->tail.n);
    gpurun_record_failure_step(a->failure, (int)i + 1, c->tpl->setup[i]);
    if (code >= 0)
        gpurun_err(err, code > 0 ? code : GPURUN_EXIT_ENV, "setup step %zu (%s) failed: %s%s%s%s; see %s", i + 1,
                   c->tpl->setup[i], status, cause ? "; cause: \"" : "", cause ? cause : "", cause ? "\"" : "", log);
    free(cause);
    if (c->opts->quiet || !a->tail.n)
        return;
    gpurun_say(stderr, "gpurun: setup step %zu: its last %zu line%s (%s%s):\n", i + 1, a->tail.n,
            a->tail.n == 1 ? "" : "s", log, a->tail.whole ? "" : ", its end");
    for (size_t k = 0; k < a->tail.n; k++)
        gpurun_say(stderr, "[setup %zu] %s\n", i + 1, a->tail.lines[k]);
}

static int run_setup_steps(struct run_ctx *c, struct run_attempt *a, gpurun_error_t *err)
{
    for (size_t i = 0; c->tpl && i < c->tpl->nsetup; i++) {
        char **step;
        if (command_argv("setup", c->tpl->setup[i], &a->names, &step, err) < 0)
            return stop_with(a, err->code);
        if ((c->ctr ? container_program(c, step, err) : resolve_program(step, c->job->dir, err)) < 0) {
            gpurun_free_words(step);
            return stop_with(a, err->code);
        }
        if (c->ctr) { /* in the image too, without GPUs */
            char **in = gpurun_container_wrap(c->ctr, step, a->run_dir, c->job_dir, 0, NULL);
            gpurun_free_words(step);
            step = in;
        }
        char *log = gpurun_xasprintf("%s/setup.log", a->run_dir);
        if (a->setup_fd < 0)
            a->setup_fd = gpurun_create_at(a->dfd, "setup.log", O_WRONLY | O_APPEND, a->fmode);
        if (a->setup_fd < 0) {
            gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot create: %s", log, strerror(errno));
            gpurun_free_words(step);
            free(log);
            return stop_with(a, GPURUN_EXIT_ENV);
        }
        int code = gpurun_run_step(step, a->dfd, a->run_dir, a->setup_fd, err);
        gpurun_free_words(step);
        char when[160];
        snprintf(when, sizeof when, "during setup step %zu", i + 1);
        int rc;
        if (stop_noted(a, when, &rc)) {
            free(log);
            return stop_with(a, rc);
        }
        if (code != 0) {
            setup_failed(c, a, i, code, log, err);
            free(log);
            return stop_with(a, code > 0 ? code : GPURUN_EXIT_ENV);
        }
        free(log);
    }
    return c->hpl.active ? edit_hpl_dat(c, a, err) : 0;
}

/* The PCI addresses of this node's NVIDIA GPUs that its ranks use, each
 * once: what the monitor watches. */
static const char **monitored_gpus(const struct run_ctx *c, const char ***vendorsp, int *npcip)
{
    size_t cap = (size_t)c->plan->nranks * (size_t)(c->plan->req.gpus_per_rank + 1);
    const char **pcis = gpurun_xcalloc(cap, sizeof *pcis), **vendors = gpurun_xcalloc(cap, sizeof *vendors);
    int npci = 0;
    for (int r = 0; r < c->plan->nranks; r++)
        for (int g = 0; c->plan->ranks[r].node == 0 && g < c->plan->ranks[r].ngpus; g++) {
            const gpurun_gpu_t *gpu = &c->topo->gpus[c->plan->ranks[r].gpus[g]];
            /* The vendors a built-in monitor reads; a partitioned GPU's
             * partitions share its PCI address: once. */
            bool seen = strcmp(gpu->vendor, "nvidia") != 0 && strcmp(gpu->vendor, "amd") != 0;
            for (int k = 0; k < npci && !seen; k++)
                seen = !strcmp(pcis[k], gpu->pci);
            if (!seen) {
                vendors[npci] = gpu->vendor;
                pcis[npci++] = gpu->pci;
            }
        }
    *npcip = npci;
    *vendorsp = vendors;
    return pcis;
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Starts the launcher's commands and supervises the ranks to their end,
 * with the GPU monitor and (ranks sharing a GPU) the MPS daemon around
 * them: 0, or -1 (stop_with). */
static int supervise_ranks(struct run_ctx *c, struct run_attempt *a, bool tty, gpurun_error_t *err)
{
    struct gpurun_supervise sv = {
        .run_dir = a->run_dir,
        .dir_fd = a->dfd,
        .file_mode = a->fmode,
        .nranks = c->plan->nranks,
        .timeout_s = (double)c->job->timeout_s,
        .grace_s = kill_grace(c->tpl),
        .stop_signal = c->tpl ? c->tpl->stop_signal : 0, /* 0: the signal gpurun got; SIGTERM on the timeout */
        .relay_output = tty,
        .status_line = tty,
        .watch = a->watch,
        .stall = a->stall,
    };
    /* Utilisation, memory, power and energy of this node's NVIDIA and AMD
     * GPUs while the ranks run; a node without NVML or ROCm SMI only says so
     * in the record. */
    int npci = 0;
    const char **vendors = NULL;
    const char **pcis = monitored_gpus(c, &vendors, &npci);
    /* Ranks sharing a GPU: one MPS daemon on this host, started last so
     * that nothing between it and the ranks can fail, stopped first. */
    struct sigaction old_handlers[3];
    bool catching = gpurun_mps_wanted(c->plan) && c->job->mps != GPURUN_MPS_OFF;
    mps_signal = 0;
    if (catching)
        mps_signals(true, old_handlers);
    if (start_mps(c, &a->mps, a->dfd, a->run_dir, a->host, &a->mps_json, err) < 0 || mps_signal) {
        free(pcis);
        free(vendors);
        if (mps_signal)
            gpurun_err(err, 128 + mps_signal, "interrupted by %s while the CUDA MPS daemon started: no rank was "
                       "started; run folder %s", strsignal(mps_signal), a->run_dir);
        if (catching)
            mps_signals(false, old_handlers);
        return stop_with(a, err->code);
    }
    /* Energy: RAPL outside the monitor's NVML counters, both around the
     * ranks alone; a few file reads, never a reason to stop. */
    a->rapl0 = gpurun_xcalloc(1, sizeof *a->rapl0);
    gpurun_rapl_read(a->rapl0);
    gpurun_monitor_session_t *mon =
        gpurun_monitor_begin(c->job->monitor, pcis, vendors, npci, a->mon_why, sizeof a->mon_why);
    free(pcis);
    free(vendors);
    a->stall = gpurun_stall_new(&(struct gpurun_stall_opts){
        .after_s = c->job->stall_after_s == GPURUN_STALL_AFTER_OFF ? -1.0 : (double)c->job->stall_after_s,
        .kill = c->job->on_stall == GPURUN_ON_STALL_KILL, .can_ask = a->cmds.stall_relay > 0,
        .nranks = c->plan->nranks, .job = c->job->name, .t0 = mono_now()});
    sv.stall = a->stall;
    int lrc = gpurun_launch(&a->cmds, &sv, &a->oc, err);
    a->gpus_monitor = gpurun_monitor_end(mon);
    a->rapl1 = gpurun_xcalloc(1, sizeof *a->rapl1);
    gpurun_rapl_read(a->rapl1);
    stop_mps(&a->mps, a->mps_json);
    if (catching)
        mps_signals(false, old_handlers);
    return lrc < 0 ? stop_with(a, err->code) : 0;
}

/* pyxis on more than one node: the rank steps run in the image, where
 * full gpurun (hwloc and its libraries) is not, so they cannot plan a host
 * gpurun did not.  One step first, one task per node outside the image,
 * plans every other host (gpurun rank --plan-only: one topology discovery
 * per host, as the hand-off would); the container step then finds each
 * host's plan. */
static bool pyxis_plans_hosts(const struct run_ctx *c)
{
    return c->ctr && !strcmp(c->ctr->runtime, "pyxis") && c->plan->req.nodes > 1;
}

static char **pyxis_plan_argv(const struct run_ctx *c, const char *self, const char *run_dir)
{
    char **a = gpurun_argv_new();
    gpurun_argv_add(&a, "srun");
    gpurun_argv_add(&a, "--mpi=none");
    gpurun_argv_addf(&a, "--nodes=%d", c->plan->req.nodes);
    gpurun_argv_addf(&a, "--ntasks=%d", c->plan->req.nodes);
    gpurun_argv_add(&a, "--ntasks-per-node=1");
    gpurun_argv_add(&a, "--cpu-bind=none");
    gpurun_argv_add(&a, "--kill-on-bad-exit=1");
    gpurun_argv_add(&a, "--export=ALL");
    gpurun_argv_add(&a, self);
    gpurun_argv_add(&a, "rank");
    gpurun_argv_add(&a, "--plan-only");
    gpurun_argv_add(&a, "--run-dir");
    gpurun_argv_add(&a, run_dir);
    return a;
}

/* Runs the planning step, its output in plan-step.log: 0, or -1
 * (stop_with) with what it said (the host that cannot run its ranks). */
static int pyxis_plan_hosts(struct run_ctx *c, struct run_attempt *a, const char *self, gpurun_error_t *err)
{
    char *log = gpurun_xasprintf("%s/plan-step.log", a->run_dir);
    int fd = gpurun_create_at(a->dfd, "plan-step.log", O_RDWR | O_APPEND, a->fmode);
    if (fd < 0) {
        gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot create: %s", log, strerror(errno));
        free(log);
        return stop_with(a, GPURUN_EXIT_ENV);
    }
    char **argv = pyxis_plan_argv(c, self, a->run_dir);
    int code = gpurun_run_step(argv, a->dfd, a->run_dir, fd, err);
    gpurun_free_words(argv);
    if (code > 0) {
        char said[4096];
        off_t end = lseek(fd, 0, SEEK_END);
        off_t from = end > (off_t)sizeof said - 1 ? end - (off_t)sizeof said + 1 : 0;
        ssize_t n = end > 0 ? pread(fd, said, (size_t)(end - from), from) : 0;
        said[n > 0 ? n : 0] = '\0';
        gpurun_err(err, GPURUN_EXIT_ENV,
                   "pyxis: the step that plans each host outside the image (srun, one gpurun rank --plan-only per "
                   "node) failed with exit status %d: no rank was started; run folder %s; it said (%s):\n%s",
                   code, a->run_dir, log, said[0] ? said : "(nothing)");
    }
    close(fd);
    free(log);
    return code != 0 ? stop_with(a, err->code) : 0;
}

/* The launcher's commands for the ranks, then the ranks run (through
 * supervise_ranks): 0, or -1 (stop_with). */
static int launch_ranks(struct run_ctx *c, struct run_attempt *a, gpurun_error_t *err)
{
    char self[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl < 0) {
        gpurun_err(err, GPURUN_EXIT_ENV, "cannot find gpurun's own path: %s", strerror(errno));
        return stop_with(a, GPURUN_EXIT_ENV);
    }
    self[sl] = '\0';
    /* Which folder is this run's: every rank step checks it finds this one. */
    char idbuf[32];
    snprintf(idbuf, sizeof idbuf, "%llu", (unsigned long long)a->dir_ino);
    setenv(GPURUN_ENV_RUN_DIR_INO, idbuf, 1);
    snprintf(idbuf, sizeof idbuf, "%ld", (long)geteuid());
    setenv(GPURUN_ENV_RUN_UID, idbuf, 1);
    setenv(GPURUN_ENV_OUTPUT, c->job->output == GPURUN_OUTPUT_PER_RANK ? "per-rank" : "per-host", 1);
    bool tty = isatty(STDOUT_FILENO) && !c->opts->quiet;
    setenv(GPURUN_ENV_RELAY, tty ? "1" : "0", 1);
    /* The rank steps' conditions: how often, and whose CPU time is the run's too. */
    snprintf(idbuf, sizeof idbuf, "%ld", c->job->progress_interval_s);
    setenv(GPURUN_ENV_CONDITIONS_INTERVAL, idbuf, 1);
    snprintf(idbuf, sizeof idbuf, "%ld", (long)getpid());
    setenv(GPURUN_ENV_HEAD_PID, idbuf, 1);
    /* The manager's names of a task's rank, for the rank steps. */
    if (c->rm && c->rm->rank_var && c->rm->local_rank_var) {
        char *vars = gpurun_xasprintf("%s,%s", c->rm->rank_var, c->rm->local_rank_var);
        setenv(GPURUN_ENV_RANK_VARS, vars, 1);
        free(vars);
    } else {
        unsetenv(GPURUN_ENV_RANK_VARS);
    }
    /* Stall detection on: the rank steps take SIGUSR1 as gpurun's question
     * (stall_rank.h), sent only through a launcher that relays it. */
    if (c->job->stall_after_s != GPURUN_STALL_AFTER_OFF) {
        snprintf(idbuf, sizeof idbuf, "%d", SIGUSR1);
        setenv(GPURUN_ENV_STALL_SIGNAL, idbuf, 1);
    } else {
        unsetenv(GPURUN_ENV_STALL_SIGNAL);
    }
    if (pyxis_plans_hosts(c) && pyxis_plan_hosts(c, a, self, err) < 0)
        return -1;
    char *export_env[24];
    export_names(export_env);
    char **pyxis = gpurun_container_launcher_options(c->ctr, a->run_dir, c->job_dir);
    struct gpurun_launch_request lr = {
        .nodes = c->plan->req.nodes,
        .ranks_per_node = c->plan->req.ranks_per_node,
        .nranks = c->plan->nranks,
        .oversubscribe = c->plan->req.oversubscribe,
        .rank_step = self,
        .run_dir = a->run_dir,
        .app_argv = a->launched ? a->launched : a->app,
        .export_env = export_env,
        .launcher_args = pyxis,
        .stop_grace_s = kill_grace(c->tpl),
        .stop_signal = c->tpl ? c->tpl->stop_signal : 0,
    };
    int crc = c->launcher->commands(&lr, &a->cmds, err);
    if (pyxis)
        gpurun_free_words(pyxis);
    if (crc < 0)
        return stop_with(a, err->code);
    if (!c->opts->quiet) {
        gpurun_say(stdout, "gpurun: %s: %d rank%s (%d node%s x %d) via %s; run folder %s\n", c->job->name,
                   c->plan->nranks, c->plan->nranks == 1 ? "" : "s", lr.nodes, lr.nodes == 1 ? "" : "s",
                   lr.ranks_per_node, c->launcher->name, a->run_dir);
    }
    return supervise_ranks(c, a, tty, err);
}

/* "SIGSEGV" of a signal number, else "signal N" (into buf). */
static const char *sig_abbrev(int sig, char *buf, size_t len)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
                 {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
                 {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
                 {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGXCPU, "SIGXCPU"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].sig == sig)
            return names[i].name;
    snprintf(buf, len, "signal %d", sig);
    return buf;
}

/* "exit status 7" or "killed by signal SIGSEGV" for an exit status. */
static void status_text(int code, char *buf, size_t len)
{
    char sb[32];
    if (code > 128 && code < 128 + 65)
        snprintf(buf, len, "killed by signal %s", sig_abbrev(code - 128, sb, sizeof sb));
    else
        snprintf(buf, len, "exit status %d", code);
}

/* Where `rank`'s output is, as its binding says: the file in the run
 * folder (a plain name, nothing else) and the label of its lines there
 * ("3: "; NULL: the file is the rank's own).  NULL: unknown. */
static const char *rank_output_file(const struct rank_result *rr, int rank, const char **label)
{
    json_t *o = json_object_get(json_array_get(rr->bindings, (size_t)rank), "output");
    const char *file = json_string_value(json_object_get(o, "file"));
    *label = json_string_value(json_object_get(o, "label"));
    return file && *file && file[0] != '.' && !strchr(file, '/') ? file : NULL;
}

/* The end of `rank`'s output (a->tail, read once): its last lines and the
 * line that names the cause.  Nothing when the rank has no output here (it
 * never started, or its host's file is on that host's own disk). */
static void read_rank_tail(struct run_ctx *c, struct run_attempt *a, int rank)
{
    if (a->tail_read || rank < 0 || rank >= c->plan->nranks)
        return;
    a->tail_read = true;
    const char *label;
    const char *file = rank_output_file(&a->rr, rank, &label);
    if (file)
        read_tail(a, file, label, c->tpl);
}

/* Whether the resource manager ended the step, as its launch command said
 * it (Slurm's "*** STEP 12.0 ON h1 CANCELLED AT ... DUE TO TIME LIMIT ***"),
 * from the launcher's output: its last 64 KiB only. */
static enum gpurun_rm_end manager_ended(const struct run_ctx *c, struct run_attempt *a)
{
    if (!c->rm || !c->rm->ended)
        return GPURUN_RM_END_NONE;
    gpurun_error_t e;
    int fd = gpurun_open_own_at(a->dfd, GPURUN_RUN_LAUNCHER_OUT, GPURUN_RUN_LAUNCHER_OUT, &e);
    if (fd < 0)
        return GPURUN_RM_END_NONE;
    char buf[65536];
    off_t end = lseek(fd, 0, SEEK_END);
    off_t from = end > (off_t)sizeof buf - 1 ? end - (off_t)sizeof buf + 1 : 0;
    ssize_t n = end > 0 ? pread(fd, buf, (size_t)(end - from), from) : 0;
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return c->rm->ended(buf);
}

/* Hosts lost while ranks ran: the message, with what the launcher said. */
static void lost_hosts_error(struct run_ctx *c, struct run_attempt *a, bool collateral, int rc, gpurun_error_t *err)
{
    const struct rank_result *rr = &a->rr;
    char *tail = launcher_tail(a->dfd, a->run_dir);
    char also[400] = "";
    if (collateral && rr->failed_code != 128 + SIGTERM && rr->failed_code != 128 + SIGKILL)
        snprintf(also, sizeof also, "; meanwhile rank %d on %s was killed by signal %d (%s)", rr->failed_rank,
                 rr->failed_host, rr->failed_code - 128, signal_name(rr->failed_code));
    gpurun_err(err, rc,
               "lost %s: these ranks started and never reported an end (the host, or %s's link to it, failed); "
               "the other ranks were stopped%s; run folder %s; %s said:\n%s",
               rr->lost, c->launcher->name, also, a->run_dir, c->launcher->name, tail ? tail : "(nothing)");
    free(tail);
}

/* The first rank that failed: the message, with the line of its output
 * that names the cause, and where that output is. */
static void failed_rank_error(struct run_attempt *a, int rc, const char *cause, gpurun_error_t *err)
{
    const struct rank_result *rr = &a->rr;
    const char *sig = signal_name(rc);
    if (rr->failed_error[0]) {
        gpurun_err(err, rc, "rank %d on %s could not start (exit status %d): %s; run folder %s", rr->failed_rank,
                   rr->failed_host, rc, rr->failed_error, a->run_dir);
        return;
    }
    const char *label;
    const char *file = rank_output_file(rr, rr->failed_rank, &label);
    char where[600];
    if (file && label)
        snprintf(where, sizeof where, "%s/%s (its lines start with '%s')", a->run_dir, file, label);
    else
        snprintf(where, sizeof where, "%s/%s", a->run_dir, file ? file : "launcher.out");
    gpurun_err(err, rc, "rank %d on %s failed first: %s %d%s%s%s%s%s%s; its output: %s", rr->failed_rank,
               rr->failed_host, sig ? "killed by signal" : "exit status", sig ? rc - 128 : rc, sig ? " (" : "",
               sig ? sig : "", sig ? ")" : "", cause ? "; cause: \"" : "", cause ? cause : "", cause ? "\"" : "", where);
}

/* The launcher failed, or not every rank finished: the exit status and
 * the message, with what the launcher said. */
static int launcher_failed_error(struct run_ctx *c, struct run_attempt *a, gpurun_error_t *err)
{
    struct rank_result *rr = &a->rr;
    int rc = a->oc.launcher_status ? a->oc.launcher_status : GPURUN_EXIT_ENV;
    if (rr->finished == 0)
        rc = GPURUN_EXIT_ENV; /* no rank ever ran: the launcher could not start them */
    char *tail = launcher_tail(a->dfd, a->run_dir);
    unstarted_ranks(c->plan, rr);
    gpurun_err(err, rc, "%s failed (exit status %d) with %d of %d ranks finished%s%s; it said:\n%s",
               c->launcher->name, a->oc.launcher_status, rr->finished, c->plan->nranks,
               rr->unstarted[0] && rr->finished ? "; never started (their hosts wrote nothing): " : "",
               rr->unstarted[0] && rr->finished ? rr->unstarted : "", tail ? tail : "(nothing)");
    free(tail);
    return rc;
}

/* What else happened to the ranks of a run that was interrupted or timed
 * out: a rank that had failed on its own, hosts lost, ranks gone silent. */
static void stopped_notes(struct run_ctx *c, struct run_attempt *a, char *also, size_t len)
{
    const struct rank_result *rr = &a->rr;
    size_t n = 0;
    also[0] = '\0';
    if (rr->failed_rank >= 0 && !rr->failed_stopped) {
        char st[64];
        status_text(rr->failed_code, st, sizeof st);
        n += (size_t)snprintf(also + n, len - n, "; rank %d on %s had failed (%s)", rr->failed_rank, rr->failed_host,
                              st);
    }
    if (rr->nlost && n < len)
        n += (size_t)snprintf(also + n, len - n,
                              "; lost %s: these ranks never reported an end (the host, or %s's link to it, failed)",
                              rr->lost, c->launcher->name);
    if (rr->nsilent && n < len)
        snprintf(also + n, len - n, "; %s ended without a report (%s)", rr->silent,
                 a->oc.killed ? "killed with the launcher after the grace period" : "their rank steps were killed");
}

/* The record's reason, cut to its one line (a rank's own error or the
 * silent ranks' list can be longer). */
static void why_set(struct run_attempt *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why_set(struct run_attempt *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->why, sizeof a->why, fmt, ap);
    va_end(ap);
}

/* What decide_outcome found, for the function of the case it is. */
struct ended {
    struct run_ctx *c;
    struct run_attempt *a;
    bool own;        /* a rank failed on its own, not after it was told to stop */
    bool collateral; /* ... killed by a signal while others were lost with their host */
    enum gpurun_rm_end cancel;
};

static int ended_stalled(struct ended *e, gpurun_error_t *err)
{
    struct run_ctx *c = e->c;
    struct run_attempt *a = e->a;
    char also[1600];
    int rc;
    const char *verdict = NULL;
    gpurun_stall_now(a->stall, &verdict);
    rc = GPURUN_EXIT_STALLED;
    a->state = GPURUN_STATE_STALLED;
    json_t *st = gpurun_stall_record(a->stall);
    json_t *culprit = json_array_get(json_object_get(st, "culprits"), 0);
    a->why_rank = culprit ? (int)json_integer_value(json_object_get(culprit, "rank")) : -1;
    json_decref(st);
    snprintf(a->why, sizeof a->why, "stalled: %s", verdict ? verdict : "no progress");
    stopped_notes(c, a, also, sizeof also);
    gpurun_err(err, rc, "%s; on_stall = \"kill\": every rank was stopped%s; run folder %s", a->why, also,
               a->run_dir);
    return rc;
}

static int ended_time_limit(struct ended *e, gpurun_error_t *err)
{
    struct run_ctx *c = e->c;
    struct run_attempt *a = e->a;
    const struct gpurun_outcome *oc = &a->oc;
    const struct rank_result *rr = &a->rr;
    char also[1600];
    int rc;
    /* Slurm's time limit sends SIGTERM to gpurun too, in a batch step:
     * still a time limit, not an interruption. */
    rc = GPURUN_EXIT_TIMEOUT;
    a->state = GPURUN_STATE_TIMEOUT;
    a->why_rank = e->own ? rr->failed_rank : 0;
    if (oc->timed_out)
        snprintf(a->why, sizeof a->why, "time limit of %lds reached (the job's timeout)", c->job->timeout_s);
    else
        snprintf(a->why, sizeof a->why, "the allocation's time limit was reached (%s cancelled the step)",
                 c->rm->title);
    a->stops_job = !oc->timed_out;
    stopped_notes(c, a, also, sizeof also);
    gpurun_err(err, rc, "%s: every rank was stopped%s; run folder %s", a->why, also, a->run_dir);
    return rc;
}

static int ended_node_failure(struct ended *e, gpurun_error_t *err)
{
    struct run_ctx *c = e->c;
    struct run_attempt *a = e->a;
    const struct rank_result *rr = &a->rr;
    int rc;
    /* Slurm cancelled the job because a node failed: it sends gpurun
     * SIGTERM too, in a batch step, but the lost host is the cause. */
    rc = GPURUN_EXIT_ENV;
    a->state = GPURUN_STATE_FAILED;
    a->why_rank = rr->first_lost;
    const char *h = json_string_value(json_object_get(json_array_get(rr->bindings, (size_t)rr->first_lost), "host"));
    snprintf(a->why, sizeof a->why, "lost with its host %s (%s: a node failed)", h ? h : "?", c->rm->title);
    a->stops_job = true;
    lost_hosts_error(c, a, false, rc, err);
    return rc;
}

static int ended_interrupted(struct ended *e, gpurun_error_t *err)
{
    struct run_ctx *c = e->c;
    struct run_attempt *a = e->a;
    const struct gpurun_outcome *oc = &a->oc;
    const struct rank_result *rr = &a->rr;
    char also[1600];
    int rc;
    char sb[32];
    rc = 128 + oc->interrupted;
    a->state = GPURUN_STATE_INTERRUPTED;
    a->why_rank = e->own ? rr->failed_rank : -1; /* a Ctrl-C is nobody's failure */
    snprintf(a->why, sizeof a->why, "interrupted by %s", sig_abbrev(oc->interrupted, sb, sizeof sb));
    a->stops_job = true;
    stopped_notes(c, a, also, sizeof also);
    gpurun_err(err, rc, "%s (%s): every rank was stopped%s; run folder %s", a->why, strsignal(oc->interrupted),
               also, a->run_dir);
    return rc;
}

static int ended_unwritten(struct ended *e, gpurun_error_t *err)
{
    struct run_attempt *a = e->a;
    const struct rank_result *rr = &a->rr;
    int rc = GPURUN_EXIT_ENV;
    a->state = GPURUN_STATE_FAILED;
    snprintf(a->why, sizeof a->why, "the ranks' statuses could not be kept");
    gpurun_err(err, rc, "the ranks ended, but their statuses could not be kept: %s; run folder %s", rr->unwritten,
               a->run_dir);
    return rc;
}

static int ended_lost(struct ended *e, gpurun_error_t *err)
{
    struct run_ctx *c = e->c;
    struct run_attempt *a = e->a;
    const struct rank_result *rr = &a->rr;
    int rc = GPURUN_EXIT_ENV;
    a->state = GPURUN_STATE_FAILED;
    a->why_rank = rr->first_lost;
    const char *h = json_string_value(json_object_get(json_array_get(rr->bindings, (size_t)rr->first_lost), "host"));
    snprintf(a->why, sizeof a->why, "lost with its host %s (the host, or %s's link to it, failed)", h ? h : "?",
             c->launcher->name);
    lost_hosts_error(c, a, e->collateral, rc, err);
    return rc;
}

static int ended_own_failure(struct ended *e, gpurun_error_t *err)
{
    struct run_ctx *c = e->c;
    struct run_attempt *a = e->a;
    const struct rank_result *rr = &a->rr;
    int rc = rr->failed_code;
    a->state = GPURUN_STATE_FAILED;
    a->why_rank = rr->failed_rank;
    if (rr->failed_error[0])
        why_set(a, "could not start: %s", rr->failed_error);
    else
        status_text(rc, a->why, sizeof a->why);
    read_rank_tail(c, a, a->why_rank);
    char *cause = rr->failed_error[0] ? NULL : gpurun_rank_tail_reason(&a->tail);
    failed_rank_error(a, rc, cause, err);
    if (cause)
        snprintf(a->why, sizeof a->why, "%s", cause);
    free(cause);
    return rc;
}

static int ended_silent(struct ended *e, gpurun_error_t *err)
{
    struct run_ctx *c = e->c;
    struct run_attempt *a = e->a;
    const struct gpurun_outcome *oc = &a->oc;
    const struct rank_result *rr = &a->rr;
    int rc;
    /* On gpurun's own host, which is not lost: their rank steps were
     * killed without a chance to report (SIGKILL). */
    rc = oc->launcher_status ? oc->launcher_status : GPURUN_EXIT_ENV;
    a->state = GPURUN_STATE_FAILED;
    why_set(a, "ranks ended without a report: %s", rr->silent);
    gpurun_err(err, rc,
               "%s: these ranks started and their rank steps were killed before they could report how their "
               "program ended (SIGKILL: the kernel's out-of-memory killer, or a kill -9); the other ranks were "
               "stopped; %s exit status %d; run folder %s",
               rr->silent, c->launcher->name, oc->launcher_status, a->run_dir);
    return rc;
}

static int ended_stopped_outside(struct ended *e, gpurun_error_t *err)
{
    struct run_attempt *a = e->a;
    const struct rank_result *rr = &a->rr;
    int rc;
    /* Every rank that failed was told to stop first, and not by gpurun:
     * scancel, the batch system, or someone's kill. */
    char sb[32];
    int r = rr->failed_rank >= 0 ? rr->failed_rank : rr->stop_rank;
    rc = rr->failed_rank >= 0 ? rr->failed_code : 128 + rr->stop_signal;
    a->state = GPURUN_STATE_INTERRUPTED;
    a->why_rank = r;
    snprintf(a->why, sizeof a->why, "stopped from outside gpurun by %s",
             sig_abbrev(rr->stop_signal, sb, sizeof sb));
    a->stops_job = true;
    const char *h = json_string_value(json_object_get(json_array_get(rr->bindings, (size_t)r), "host"));
    gpurun_err(err, rc,
               "the ranks were stopped from outside gpurun: rank %d on %s was the first told to stop, by %s "
               "(scancel, the batch system, or a kill); run folder %s",
               r, h ? h : "?", sb, a->run_dir);
    return rc;
}

static int ended_launcher_failed(struct ended *e, gpurun_error_t *err)
{
    struct run_ctx *c = e->c;
    struct run_attempt *a = e->a;
    const struct gpurun_outcome *oc = &a->oc;
    int rc;
    a->state = GPURUN_STATE_FAILED;
    rc = launcher_failed_error(c, a, err);
    snprintf(a->why, sizeof a->why, "%s failed (exit status %d)", c->launcher->name, oc->launcher_status);
    return rc;
}

static int ended_ok(struct ended *e, gpurun_error_t *err)
{
    struct run_ctx *c = e->c;
    struct run_attempt *a = e->a;
    int rc = check_results(c, &a->names, a->run_dir, &a->foms, a->refs, &a->state, err);
    if (rc != 0) {
        a->why_rank = 0;
        snprintf(a->why, sizeof a->why, "%.590s", err->text);
    }
    return rc;
}

/* How the run ended, from the launch's outcome and what the ranks
 * reported: the exit status, a->state, the message in err, and whose
 * output and which reason the record's failure gives (a->why_rank,
 * a->why); the figures of merit and their references when the ranks all
 * ended well. */
static int decide_outcome(struct run_ctx *c, struct run_attempt *a, gpurun_error_t *err)
{
    const struct gpurun_outcome *oc = &a->oc;
    const struct rank_result *rr = &a->rr;
    a->state = GPURUN_STATE_OK;
    a->why_rank = -1;
    a->why[0] = '\0';
    /* A rank that failed on its own, not after it was told to stop. */
    struct ended e = {.c = c, .a = a};
    e.own = rr->failed_rank >= 0 && !rr->failed_stopped;
    /* A rank killed by a signal while others were lost with their host
     * was stopped because of that loss (SIGTERM, SIGKILL), or crashed in its
     * MPI library when the peer vanished (Open MPI's TCP transport can
     * SIGSEGV then): the lost host is the cause, the rank is said beside it.
     * A rank that exited with a code of its own stays the cause. */
    e.collateral = e.own && rr->failed_code > 128 && !rr->failed_error[0];
    e.cancel = manager_ended(c, a);
    if (oc->stalled)
        return ended_stalled(&e, err);
    if (oc->timed_out || e.cancel == GPURUN_RM_END_TIME_LIMIT)
        return ended_time_limit(&e, err);
    if (e.cancel == GPURUN_RM_END_NODE_FAILURE && rr->nlost)
        return ended_node_failure(&e, err);
    if (oc->interrupted)
        return ended_interrupted(&e, err);
    if (rr->unwritten[0] && rr->failed_rank < 0)
        return ended_unwritten(&e, err);
    if (rr->nlost && (!e.own || e.collateral))
        return ended_lost(&e, err);
    if (e.own)
        return ended_own_failure(&e, err);
    if (rr->nsilent)
        return ended_silent(&e, err);
    if (rr->failed_rank >= 0 || rr->nstopped)
        return ended_stopped_outside(&e, err);
    if (oc->launcher_status != 0 || rr->finished < c->plan->nranks)
        return ended_launcher_failed(&e, err);
    return ended_ok(&e, err);
}

/* A run that did not end ok keeps what its program printed: a stopped
 * mdrun still writes its Performance table (state and exit status stay as
 * decided; no check is made of them). */
static void read_partial_foms(struct run_ctx *c, struct run_attempt *a)
{
    if (!c->tpl || a->foms.n || !a->state || !strcmp(a->state, GPURUN_STATE_OK) ||
        !strcmp(a->state, GPURUN_STATE_SANITY_FAILED) || !strcmp(a->state, GPURUN_STATE_REFERENCE_FAILED))
        return;
    gpurun_error_t e;
    if (gpurun_fom_read(c->tpl, a->run_dir, gpurun_kvlist_lookup, &a->names, NULL, &a->foms, &e) < 0)
        gpurun_foms_free(&a->foms);
}

/* Why a run that did not end ok has no figure: said in the record. */
static json_t *foms_note(const struct run_ctx *c, const struct run_attempt *a)
{
    if (!c->tpl || !c->tpl->nfoms || !a->state || !strcmp(a->state, GPURUN_STATE_OK))
        return NULL;
    for (size_t i = 0; i < a->foms.n; i++)
        if (a->foms.f[i].n)
            return NULL;
    return json_sprintf("not printed: the run ended as %s (%s) before the program printed its figures%s", a->state,
                        a->why[0] ? a->why : "?", a->watch ? "; its last progress is in 'progress'" : "");
}

/* The record's failure, and on stderr the failing rank's cause and last
 * lines (terminal or not; --quiet: the closing message only). */
static void failure_report(struct run_ctx *c, struct run_attempt *a, int rc)
{
    if (!strcmp(a->state, GPURUN_STATE_OK))
        return;
    int r = a->why_rank;
    read_rank_tail(c, a, r);
    if (r < 0 && !a->tail_read) /* no rank to show: what the launcher said */
        read_tail(a, GPURUN_RUN_LAUNCHER_OUT, NULL, NULL);
    const char *host = NULL;
    if (r >= 0) {
        host = json_string_value(json_object_get(json_array_get(a->rr.bindings, (size_t)r), "host"));
        if (!host)
            host = json_string_value(json_object_get(json_array_get(a->rr.statuses, (size_t)r), "host"));
    }
    a->failure = gpurun_record_failure(r, host, rc, a->why, a->tail.lines, a->tail.n);
    bool ranks_failed = strcmp(a->state, GPURUN_STATE_SANITY_FAILED) && strcmp(a->state, GPURUN_STATE_REFERENCE_FAILED);
    if (c->opts->quiet || !ranks_failed || r < 0 || (!a->tail.n && !a->tail.ncause))
        return;
    /* A rank's own failure has a cause in its output; an interruption or a
     * time limit is its own cause (what mdrun says of the signal is in the
     * last lines). */
    if (a->tail.ncause && !strcmp(a->state, GPURUN_STATE_FAILED)) {
        gpurun_say(stderr, "gpurun: rank %d on %s: the cause, as its output says:\n", r, host ? host : "?");
        for (size_t i = 0; i < a->tail.ncause; i++)
            gpurun_say(stderr, "[%d] %s\n", r, a->tail.cause[i]);
    }
    if (a->tail.n) {
        gpurun_say(stderr, "gpurun: rank %d on %s: its last %zu line%s (%s%s):\n", r, host ? host : "?", a->tail.n,
                   a->tail.n == 1 ? "" : "s", a->tail_file, a->tail.whole ? "" : ", its end");
        for (size_t i = 0; i < a->tail.n; i++)
            gpurun_say(stderr, "[%d] %s\n", r, a->tail.lines[i]);
    }
}

/* A binding the kernel did not give as planned is said, not hidden. */
static void say_warnings(const struct run_ctx *c, const struct rank_result *rr)
{
    size_t i;
    json_t *b;
    json_array_foreach(rr->bindings, i, b)
    {
        size_t k;
        json_t *w;
        json_array_foreach(json_object_get(b, "warnings"), k, w)
            gpurun_say(stderr, "gpurun: warning: rank %zu: %s\n", i, json_string_value(w));
    }
    for (size_t w = 0; w < c->plan->nwarnings; w++)
        if (c->opts->verbose)
            gpurun_say(stderr, "gpurun: plan warning: %s\n", c->plan->warnings[w]);
}

/* The hosts the ranks really ran on, in rank order. */
static json_t *ran_on_hosts(json_t *bindings)
{
    json_t *hosts = json_array(), *seen_hosts = json_object(); /* a set: linear in ranks, whatever the hosts */
    json_t *bnd;
    size_t bi;
    json_array_foreach(bindings, bi, bnd)
    {
        const char *h = json_string_value(json_object_get(bnd, "host"));
        if (h && !json_object_get(seen_hosts, h)) {
            json_object_set_new(seen_hosts, h, json_true());
            json_array_append_new(hosts, json_string(h));
        }
    }
    json_decref(seen_hosts);
    return hosts;
}

/* "plan" is the head's topology repeated for every node; what each host
 * really planned for its own ranks is its plan.HOST.json. */
static json_t *host_plans_json(int dfd, json_t *hosts)
{
    json_t *host_plans = json_object();
    json_t *hj;
    size_t bi;
    json_array_foreach(hosts, bi, hj)
    {
        char *hp = gpurun_host_plan_name(json_string_value(hj));
        json_t *doc = gpurun_read_own_json_at(dfd, hp, hp, NULL);
        json_object_del(doc, "rank_index"); /* for rank steps only */
        free(hp);
        json_object_set_new(host_plans, json_string_value(hj), doc ? doc : json_null());
    }
    return host_plans;
}

/* The record's "mps": this host's daemon (as gpurun started and stopped
 * it), and under "hosts" each host's, from the plan its planner wrote:
 * which hosts started a daemon, which used the user's. */
static json_t *mps_record(struct run_ctx *c, struct run_attempt *a, json_t *hosts, json_t *host_plans)
{
    json_t *per = json_object();
    if (a->mps_json)
        json_object_set(per, a->host, a->mps_json);
    json_t *hj;
    size_t i;
    json_array_foreach(hosts, i, hj)
    {
        const char *name = json_string_value(hj);
        if (!name || !strcmp(name, a->host))
            continue;
        json_t *doc = json_incref(json_object_get(host_plans, name));
        if (!doc) {
            char *hp = gpurun_host_plan_name(name);
            doc = gpurun_read_own_json_at(a->dfd, hp, hp, NULL);
            free(hp);
        }
        json_t *m = json_object_get(doc, "mps");
        if (json_is_object(m))
            json_object_set(per, name, m);
        json_decref(doc);
    }
    if (!a->mps_json && json_object_size(per) == 0) {
        json_decref(per);
        return NULL;
    }
    json_t *rec = a->mps_json ? json_copy(a->mps_json) : json_pack("{s:s}", "mode", gpurun_mps_mode_name(c->job->mps));
    json_object_set_new(rec, "hosts", per);
    return rec;
}

/* The record's site, prices and currency: null where the site says none. */
static void add_site_prices(json_t *record, const gpurun_site_t *site)
{
    json_object_set_new(record, GPURUN_REC_SITE, site ? json_string(site->name) : json_null());
    json_object_set_new(record, GPURUN_REC_PRICE_PER_GPU_HOUR,
                        site && site->price_per_gpu_hour >= 0 ? json_real(site->price_per_gpu_hour) : json_null());
    json_object_set_new(record, GPURUN_REC_SPOT_PRICE_PER_GPU_HOUR,
                        site && site->spot_price_per_gpu_hour >= 0 ? json_real(site->spot_price_per_gpu_hour)
                                                                    : json_null());
    json_object_set_new(record, GPURUN_REC_CURRENCY, site && site->currency ? json_string(site->currency) : json_null());
}

/* A string for the record, or null: a value read from a file need not be
 * UTF-8, which json_string refuses. */
static json_t *string_or_null(const char *s)
{
    json_t *j = s ? json_string(s) : NULL;
    return j ? j : json_null();
}

/* The CPU model as hwloc names it (the first package's CPUModel, from
 * /proc/cpuinfo's "model name" on Linux); NULL when it names none (an
 * exported topology without it). */
/* The CPU the run ran on, as the kernel names it (/proc/cpuinfo's first
 * "model name", what lscpu shows: a virtual machine's CPUID brand string
 * can say another), else hwloc's CPUModel; blanks at the end dropped. */
static const char *cpu_model(const gpurun_topo_t *t)
{
    static char model[256];
    char *buf = NULL;
    size_t len = 0;
    gpurun_error_t e;
    model[0] = '\0';
    if (gpurun_read_file("/proc/cpuinfo", "cpuinfo", 1 << 20, &buf, &len, &e) == 0) {
        const char *l = !strncmp(buf, "model name", 10) ? buf : strstr(buf, "\nmodel name");
        size_t ll = l ? strcspn(l + (*l == '\n'), "\n") : 0;
        const char *colon = l ? memchr(l + (*l == '\n'), ':', ll) : NULL;
        if (colon)
            snprintf(model, sizeof model, "%.*s", (int)strcspn(colon + 1, "\n"), colon + 1);
        free(buf);
    }
    if (!model[0]) {
        hwloc_obj_t pkg = t && t->hw ? hwloc_get_obj_by_type(t->hw, HWLOC_OBJ_PACKAGE, 0) : NULL;
        const char *m = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
        if (!m && t && t->hw)
            m = hwloc_obj_get_info_by_name(hwloc_get_root_obj(t->hw), "CPUModel");
        snprintf(model, sizeof model, "%s", m ? m : "");
    }
    char *p = model + strspn(model, " \t");
    size_t n = strlen(p);
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        p[--n] = '\0';
    return *p ? p : NULL;
}

/* The record's `energy` (energy.h): this host's RAPL counters and GPUs as
 * gpurun read them; every other host's as its first rank step there read
 * them (its status report's "energy", taken out of rank_status).  Then
 * energy per unit of work beside the record's throughput figures.  Runs
 * that failed, timed out or were interrupted have theirs too: the counters
 * were read when the ranks ended, however they ended. */
static void add_energy(struct run_ctx *c, struct run_attempt *a, json_t *record)
{
    json_t *hosts = json_array();
    /* gpurun's host counts when ranks ran there (or none said where they
     * ran): a launcher on a login node starting ranks elsewhere is not the
     * job's energy. */
    json_t *ran = ran_on_hosts(a->rr.bindings);
    bool here = json_array_size(ran) == 0;
    size_t i;
    json_t *st;
    json_array_foreach(ran, i, st)
        here = here || !strcmp(json_string_value(st) ? json_string_value(st) : "", a->host);
    if (here && a->rapl0 && a->rapl1) {
        /* No NVIDIA GPU planned here: nothing missing (a CPU job). */
        json_t *own = gpurun_energy_host_json(a->host, a->rapl0, a->rapl1, a->gpus_monitor,
                                              strcmp(a->mon_why, "no GPUs to monitor") ? a->mon_why : "");
        /* GPUs of other vendors than NVIDIA and AMD: no reader, said per GPU. */
        for (int r = 0; r < c->plan->nranks; r++)
            for (int g = 0; c->plan->ranks[r].node == 0 && g < c->plan->ranks[r].ngpus && g < 64; g++) {
                const gpurun_gpu_t *gpu = &c->topo->gpus[c->plan->ranks[r].gpus[g]];
                if (!strcmp(gpu->vendor, "nvidia") || !strcmp(gpu->vendor, "amd") ||
                    json_array_size(json_object_get(own, "missing")) > 256)
                    continue;
                char why[256];
                snprintf(why, sizeof why, "GPU %s (%s): no energy counter gpurun reads", gpu->pci, gpu->vendor);
                bool dup = false; /* a GPU shared by ranks: once */
                size_t k;
                json_t *m;
                json_array_foreach(json_object_get(own, "missing"), k, m) {
                    const char *w = json_string_value(json_object_get(m, "why"));
                    dup = dup || (w && !strcmp(w, why));
                }
                if (!dup)
                    json_array_append_new(json_object_get(own, "missing"),
                                          json_pack("{s:s, s:s}", "kind", "gpu", "why", why));
            }
        json_array_append_new(hosts, own);
    }
    json_array_foreach(a->rr.statuses, i, st) {
        json_t *e = json_object_get(st, "energy");
        const char *h = json_string_value(json_object_get(e, "host"));
        if (json_is_object(e) && h && strcmp(h, a->host) && json_array_size(hosts) < 4096)
            json_array_append(hosts, e);
        json_object_del(st, "energy");
    }
    /* A host whose first rank step said nothing of energy (killed, or it
     * failed before its program started): said, not left out silently. */
    json_t *h, *have = json_object(); /* a set of the hosts that have a part: linear in hosts */
    json_array_foreach(hosts, i, h)
        if (json_string_value(json_object_get(h, "host")))
            json_object_set_new(have, json_string_value(json_object_get(h, "host")), json_true());
    json_array_foreach(ran, i, h) {
        const char *name = json_string_value(h);
        if (name && !json_object_get(have, name) && json_array_size(hosts) < 4096)
            json_array_append_new(hosts, json_pack("{s:s, s:[], s:[{s:s, s:s}], s:n}", "host", name, "devices", "missing",
                                                   "kind", "host", "why", "its first rank step reported no energy (it was "
                                                   "killed, or failed before its program started)", "measured_s"));
    }
    json_decref(have);
    json_decref(ran);
    /* The resource managers' own figures beside gpurun's (rm.h's energy()): bounded. */
    struct gpurun_energy_accounted acc[GPURUN_RM_ENERGY_MAX];
    size_t nacc = gpurun_rm_energy(acc, GPURUN_RM_ENERGY_MAX);
    json_t *e = gpurun_energy_json(hosts, c->site ? c->site->price_per_kwh : -1,
                                   c->site ? c->site->grams_co2_per_kwh : -1, acc, nacc);
    gpurun_energy_per_unit(json_object_get(record, "foms"), json_number_value(json_object_get(e, "mean_power_W")));
    json_object_set_new(record, GPURUN_REC_ENERGY, e);
}

/* The template's regexes that took too long and were dropped (util.h):
 * the record's notes, and a warning. */
static void add_regex_notes(const struct run_ctx *c, json_t *record)
{
    const struct gpurun_regex_budget *b = c->tpl ? c->tpl->regex_budget : NULL;
    if (!b || !b->ndropped)
        return;
    json_t *notes = json_array();
    for (size_t i = 0; i < b->nnotes; i++) {
        json_array_append_new(notes, json_string(b->notes[i]));
        gpurun_say(stderr, "gpurun: warning: template '%s': %s\n", c->tpl->name, b->notes[i]);
    }
    if (b->ndropped > b->nnotes)
        json_array_append_new(notes, json_sprintf("and %zu more regexes dropped", b->ndropped - b->nnotes));
    if (b->test_hook)
        json_array_append_new(notes, json_sprintf("test hook GPURUN_TEST_REGEX_BUDGET_S: the budget was %g s, not %g s",
                                                  b->limit_s, (double)GPURUN_REGEX_BUDGET_S));
    json_object_set_new(record, GPURUN_REC_NOTES, notes);
}

/* record.json's document for this run, ending with exit status rc. */
static json_t *run_record(struct run_ctx *c, struct run_attempt *a, int rc, int repeat_index)
{
    gpurun_job_t *job = c->job;
    char *s0 = iso_time(a->start), *s1 = iso_time(time(NULL));
    const gpurun_gpu_t *g0 = c->plan->ranks[0].ngpus ? &c->topo->gpus[c->plan->ranks[0].gpus[0]] : NULL;
    json_t *hosts = ran_on_hosts(a->rr.bindings);
    json_t *record = json_pack(
        "{s:s, s:s, s:s?, s:s, s:s, s:f, s:i, s:s, s:i, s:i, s:i, s:i, s:s, s:o, s:s?, s:o, s:i}", GPURUN_REC_RUN_ID,
        strrchr(a->run_dir, '/') + 1, GPURUN_REC_JOB, job->name, GPURUN_REC_TEMPLATE, job->template_name,
        GPURUN_REC_START, s0, GPURUN_REC_END, s1, GPURUN_REC_WALL_S, a->oc.wall_s, GPURUN_REC_EXIT_STATUS, rc,
        GPURUN_REC_STATE, a->state, GPURUN_REC_NODES, c->plan->req.nodes, GPURUN_REC_RANKS, c->plan->nranks,
        GPURUN_REC_GPUS_PER_RANK, c->plan->req.gpus_per_rank, GPURUN_REC_THREADS_PER_RANK, c->plan->ranks[0].threads,
        GPURUN_REC_LAUNCHER, c->launcher->name, GPURUN_REC_HOSTS, hosts, GPURUN_REC_GPU_MODEL, g0 ? g0->name : NULL,
        GPURUN_REC_PARAMS, kv_json(&job->params), GPURUN_REC_REPEAT_INDEX, repeat_index);
    json_object_set_new(record, GPURUN_REC_COMMAND, json_array());
    for (char **arg = a->app; *arg; arg++)
        json_array_append_new(json_object_get(record, GPURUN_REC_COMMAND), json_string(*arg));
    json_object_set_new(record, GPURUN_REC_CONTAINER, c->ctr ? container_json(c, a->launched) : json_null());
    json_object_set_new(record, GPURUN_REC_LAUNCHER_CHOICE, json_string(c->launcher_why));
    if (c->alloc_note[0])
        json_object_set_new(record, GPURUN_REC_ALLOCATION, json_string(c->alloc_note));
    json_object_set_new(record, GPURUN_REC_PLAN, gpurun_plan_json(c->plan));
    json_t *host_plans = json_array_size(hosts) > 1 ? host_plans_json(a->dfd, hosts) : NULL;
    if (host_plans)
        json_object_set_new(record, GPURUN_REC_HOST_PLANS, host_plans);
    if (a->failure)
        json_object_set(record, GPURUN_RECORD_FAILURE, a->failure);
    json_object_set_new(record, GPURUN_REC_BINDINGS, json_incref(a->rr.bindings));
    json_object_set_new(record, GPURUN_REC_RANK_STATUS, json_incref(a->rr.statuses));
    json_object_set_new(record, GPURUN_REC_GPURUN_VERSION, json_string(PACKAGE_VERSION));
    /* The program's own version (the template's `version`) and the CPU: two
     * builds, or two kinds of node, told apart in the report. */
    char *pver = gpurun_version_read(c->tpl, a->run_dir, gpurun_kvlist_lookup, &a->names);
    json_object_set_new(record, GPURUN_REC_PROGRAM_VERSION, string_or_null(pver));
    free(pver);
    json_object_set_new(record, GPURUN_REC_CPU_MODEL, string_or_null(cpu_model(c->topo)));
    json_object_set_new(record, GPURUN_REC_GPUDIRECT, c->gdr ? json_incref(c->gdr) : json_null());
    if (a->rdv_json) {
        if (a->rdv_port > 0)
            json_object_set_new(a->rdv_json, "port", json_integer(a->rdv_port));
        json_object_set(record, GPURUN_REC_RENDEZVOUS, a->rdv_json);
    }
    json_t *mps = mps_record(c, a, hosts, host_plans);
    if (mps)
        json_object_set_new(record, GPURUN_REC_MPS, mps);
    json_object_set_new(record, GPURUN_REC_GPUS_MONITOR, a->gpus_monitor ? json_incref(a->gpus_monitor) : json_null());
    if (!a->gpus_monitor && a->mon_why[0])
        json_object_set_new(record, GPURUN_REC_GPUS_MONITOR_NOTE, json_string(a->mon_why));
    json_object_set_new(record, GPURUN_REC_FOMS, gpurun_foms_json(&a->foms));
    json_t *note = foms_note(c, a);
    if (note)
        json_object_set_new(record, GPURUN_REC_FOMS_NOTE, note);
    /* Kept on every end: what an interrupted or failed run had reached. */
    json_t *progress = gpurun_watch_progress_json(a->watch);
    json_object_set_new(record, GPURUN_REC_PROGRESS, progress ? progress : json_null());
    json_t *conditions = gpurun_watch_conditions_json(a->watch);
    json_object_set_new(record, GPURUN_REC_CONDITIONS, conditions ? conditions : json_null());
    json_t *stall = gpurun_stall_record(a->stall);
    if (stall)
        json_object_set_new(record, GPURUN_REC_STALL, stall);
    json_object_set_new(record, GPURUN_REC_REFERENCES, json_incref(a->refs));
    json_object_set_new(record, GPURUN_REC_CONFIG, json_incref(c->config));
    json_object_set_new(record, GPURUN_REC_GPUS, json_integer((json_int_t)c->plan->nranks * c->plan->req.gpus_per_rank));
    add_site_prices(record, c->site);
    if (c->opts->tune)
        json_object_set(record, GPURUN_REC_TUNE, c->opts->tune);
    if (a->prov) { /* the program's version is known from its log only at the end */
        json_object_set(json_object_get(a->prov, GPURUN_REC_PROV_VERSIONS), GPURUN_REC_PROV_PROGRAM,
                        json_object_get(record, GPURUN_REC_PROGRAM_VERSION));
        json_object_set(record, GPURUN_REC_PROVENANCE, a->prov);
    }
    add_energy(c, a, record);
    add_regex_notes(c, record);
    free(s0);
    free(s1);
    return record;
}

/* Writes the record and adds it to the results database, then says the
 * figures of merit: the exit status, rc or the record's failure. */
static int keep_record(struct run_ctx *c, struct run_attempt *a, json_t *record, int rc, gpurun_error_t *err)
{
    /* A run whose record is not on disk is not a success, and the results
     * database names only records that are. */
    char *p = gpurun_xasprintf("%s/record.json", a->run_dir);
    gpurun_error_t werr;
    if (gpurun_write_json_at(a->dfd, "record.json", p, record, a->fmode, GPURUN_WRITE_SYNC, &werr) < 0) {
        if (rc == 0)
            gpurun_err(err, GPURUN_EXIT_ENV, "the ranks ended well, but the record could not be written: %s; "
                       "the run is not in the results", werr.text);
        else
            gpurun_say(stderr, "gpurun: the record could not be written either: %s\n", werr.text);
        rc = rc ? rc : GPURUN_EXIT_ENV;
    } else if (gpurun_results_add(c->results, p, &werr) < 0) {
        gpurun_say(stderr, "gpurun: warning: the record is kept, but the results database was not updated: %s\n",
                   werr.text);
    }
    free(p);
    if (!c->opts->quiet) {
        const gpurun_foms_t *foms = &a->foms;
        for (size_t f = 0; f < foms->n; f++)
            if (foms->f[f].n)
                gpurun_say(stdout, "gpurun: %s: %s = %g %s\n", c->job->name, foms->f[f].name,
                           foms->f[f].values[foms->f[f].n - 1], foms->f[f].units ? foms->f[f].units : "");
        if (rc == 0)
            gpurun_say(stdout, "gpurun: %s: ok in %.1f s; record %s/record.json\n", c->job->name, a->oc.wall_s,
                       a->run_dir);
    } else if (rc == 0) { /* --quiet: the one line a script or a user still needs */
        const gpurun_foms_t *foms = &a->foms;
        gpurun_say(stdout, "gpurun: %s: ok", c->job->name);
        for (size_t f = 0; f < foms->n; f++)
            if (foms->f[f].n)
                gpurun_say(stdout, ", %s = %g%s%s", foms->f[f].name, foms->f[f].values[foms->f[f].n - 1],
                           foms->f[f].units && *foms->f[f].units ? " " : "", foms->f[f].units ? foms->f[f].units : "");
        gpurun_say(stdout, ", %s\n", a->run_dir);
    }
    return rc;
}

/* What the summary of a scan says of run `a`: its state, first figure of
 * merit and folder. */
static void fill_row(struct scan_row *row, const struct run_attempt *a, int rc)
{
    row->rc = rc;
    row->state = a->state ? a->state : rc ? GPURUN_STATE_FAILED : NULL;
    free(row->folder);
    row->folder = a->run_dir ? gpurun_xstrdup(a->run_dir) : NULL;
    for (size_t f = 0; f < a->foms.n && !row->fom[0]; f++)
        if (a->foms.f[f].n)
            snprintf(row->fom, sizeof row->fom, "%s = %g%s%s", a->foms.f[f].name,
                     a->foms.f[f].values[a->foms.f[f].n - 1], a->foms.f[f].units && *a->foms.f[f].units ? " " : "",
                     a->foms.f[f].units ? a->foms.f[f].units : "");
}

/* The programs of the command and of each setup step, found before a run
 * folder is made or "started" said: a refusal leaves nothing behind.  A
 * word that names the run folder (made later) is left to the run. */
static int check_programs(struct run_ctx *c, gpurun_error_t *err)
{
    struct gpurun_kvlist names = {0};
    run_names(c, "\x01RUN_DIR", &names);
    int rc = 0;
    size_t nsetup = c->tpl ? c->tpl->nsetup : 0;
    for (size_t i = 0; i <= nsetup && rc == 0; i++) {
        const char *line = i < nsetup ? c->tpl->setup[i] : c->command;
        char **argv;
        if (command_argv(i < nsetup ? "setup" : "command", line, &names, &argv, err) < 0) {
            rc = -1;
            break;
        }
        if (!strchr(argv[0], '\x01'))
            rc = c->ctr ? container_program(c, argv, err) : resolve_program(argv, c->job->dir, err);
        if (rc < 0 && i < nsetup) {
            char *msg = gpurun_xstrdup(err->text);
            gpurun_err(err, err->code, "setup step %zu (%s): %s", i + 1, line, msg);
            free(msg);
        }
        gpurun_free_words(argv);
    }
    gpurun_kvlist_clear(&names);
    return rc;
}

/* A stop (SIGINT, SIGTERM, SIGHUP) noted outside the windows that pass it
 * on at once: the run ends here as interrupted, with its record.  `when`
 * says where it was ("during setup").  True when it stops the run. */
static bool stop_noted(struct run_attempt *a, const char *when, int *rcp)
{
    int sig = gpurun_stop_signal();
    if (!sig)
        return false;
    char sb[32];
    a->state = GPURUN_STATE_INTERRUPTED;
    a->why_rank = -1;
    snprintf(a->why, sizeof a->why, "interrupted by %s %s", sig_abbrev(sig, sb, sizeof sb), when);
    a->stops_job = true;
    *rcp = 128 + sig;
    return true;
}

/* The record of a run that ended before its ranks started (a setup step
 * failed, or it was interrupted): what was known, and the exit status. */
static int record_unlaunched(struct run_ctx *c, struct run_attempt *a, int rc, int repeat_index, gpurun_error_t *err)
{
    a->oc.wall_s = difftime(time(NULL), a->start);
    if (!a->rr.bindings)
        a->rr.bindings = json_array();
    if (!a->rr.statuses)
        a->rr.statuses = json_array();
    if (!a->failure)
        a->failure = gpurun_record_failure(-1, NULL, rc, a->why, a->tail.lines, a->tail.n);
    if (!strcmp(a->state, GPURUN_STATE_INTERRUPTED))
        gpurun_err(err, rc, "%s; nothing else was started; run folder %s", a->why, a->run_dir);
    json_t *record = run_record(c, a, rc, repeat_index);
    rc = keep_record(c, a, record, rc, err);
    json_decref(record);
    return rc;
}

/* The record's provenance (provenance.h), made before the ranks start: the
 * job file, template and program as they are now, not at the run's end. */
static json_t *run_provenance(const struct run_ctx *c, struct run_attempt *a)
{
    char driver[128] = "";
    if (c->plan->req.gpus_per_rank > 0)
        gpurun_monitor_driver(c->job->monitor, driver, sizeof driver);
    return gpurun_provenance(&(struct gpurun_prov_in){
        .job = c->job, .tpl = c->tpl, .sets = c->opts->sets, .nsets = c->opts->nsets,
        .program = c->ctr ? NULL : a->app[0], .names = &a->names, .job_dir = c->job_dir,
        .driver = driver[0] ? driver : NULL, .dfd = a->dfd, .fmode = a->fmode});
}

/* One run of the job: its folder, the rank steps' inputs, the setup steps,
 * the ranks, the outcome and the record. */
static int run_once(struct run_ctx *c, int repeat_index, gpurun_error_t *err)
{
    struct run_attempt a = {.setup_fd = -1, .why_rank = -1};
    if (check_programs(c, err) < 0)
        return err->code; /* before the run folder and "started": nothing to clean */
    a.run_dir = make_run_dir(c->results, c->job, &a.dfd, &a.dir_ino, err);
    if (!a.run_dir)
        return err->code;
    a.fmode = run_file_mode(c->job);
    gpurun_say_run_folder(a.dfd, a.fmode); /* where a reader's going away is noted */
    run_names(c, a.run_dir, &a.names);
    int rc = 0;
    json_t *record = NULL;
    a.start = time(NULL);
    if (c->tpl)
        gpurun_template_regex_reset(c->tpl);
    a.watch = gpurun_watch_begin(&(struct gpurun_watch_opts){
        .dir_fd = a.dfd, .run_dir = a.run_dir, .file_mode = a.fmode, .job = c->job->name,
        .nranks = c->plan->nranks, .interval_s = (double)c->job->progress_interval_s,
        .tty = isatty(STDOUT_FILENO) && !c->opts->quiet, .quiet = c->opts->quiet, .tpl = c->tpl,
        .lookup = gpurun_kvlist_lookup, .ctx = &a.names, .timeout_s = (double)c->job->timeout_s});

    if (command_argv("command", c->command, &a.names, &a.app, err) < 0 ||
        (c->ctr ? container_program(c, a.app, err) : resolve_program(a.app, c->job->dir, err)) < 0) {
        rc = err->code;
        goto out;
    }
    if (c->ctr) /* the rank steps start the runtime, which starts the program */
        a.launched = container_argv(c, a.app, a.run_dir);
    a.prov = run_provenance(c, &a);
    if (start_rendezvous(c, &a, err) < 0) {
        rc = a.rc;
        goto out;
    }
    if (write_rank_inputs(c, &a, err) < 0) {
        rc = err->code;
        goto out;
    }
    a.refs = json_object();
    if (stop_noted(&a, "before the setup", &rc) || run_setup_steps(c, &a, err) < 0 ||
        stop_noted(&a, "before the ranks started", &rc)) {
        rc = a.state ? record_unlaunched(c, &a, a.rc ? a.rc : rc, repeat_index, err) : a.rc;
        goto stopped;
    }
    if (launch_ranks(c, &a, err) < 0) {
        rc = a.rc;
        goto out;
    }
    collect_ranks(&a.oc, c->plan->nranks, a.host, &a.rr);
    write_host_files(a.dfd, a.run_dir, a.fmode, &a.rr);
    rc = decide_outcome(c, &a, err);
    if (strcmp(a.state, GPURUN_STATE_INTERRUPTED) && stop_noted(&a, "after the ranks ended", &rc))
        gpurun_err(err, rc, "%s; the record keeps what was measured; run folder %s", a.why, a.run_dir);
    read_partial_foms(c, &a);
    failure_report(c, &a, rc);
    say_warnings(c, &a.rr);
    gpurun_watch_conditions_say(a.watch);
    record = run_record(c, &a, rc, repeat_index);
    rc = keep_record(c, &a, record, rc, err);
stopped:
    if (a.stops_job)
        snprintf(c->stopped, sizeof c->stopped, "%.*s", (int)sizeof c->stopped - 1, a.why);
out:
    if (c->row)
        fill_row(c->row, &a, rc);
    gpurun_watch_end(a.watch, a.state, rc);
    gpurun_stall_free(a.stall);
    stop_mps(&a.mps, a.mps_json); /* a run that failed after the start: never left running */
    gpurun_store_stop(&a.store);
    gpurun_foms_free(&a.foms);
    json_decref(a.refs);
    json_decref(a.prov);
    json_decref(a.mps_json);
    json_decref(a.rdv_json);
    json_decref(a.gpus_monitor);
    free(a.rapl0);
    free(a.rapl1);
    json_decref(record);
    json_decref(a.rr.bindings);
    json_decref(a.rr.statuses);
    json_decref(a.oc.bindings); /* NULL once collect_ranks took them */
    json_decref(a.oc.statuses);
    json_decref(a.oc.stops);
    json_decref(a.failure);
    gpurun_rank_tail_free(&a.tail);
    free(a.tail_file);
    gpurun_launch_cmds_free(&a.cmds);
    if (a.app)
        gpurun_free_words(a.app);
    if (a.launched)
        gpurun_free_words(a.launched);
    gpurun_kvlist_clear(&a.names);
    if (a.setup_fd >= 0)
        close(a.setup_fd);
    close(a.dfd);
    free(a.run_dir);
    return rc;
}

/* A dry run's line on GPUs shared by several ranks, and CUDA MPS. */
static void dry_run_mps(const struct run_ctx *c)
{
    char control[PATH_MAX], groups[256] = "";
    size_t gl = 0;
    int shown = 0;
    for (int r = 0; r < c->plan->nranks && c->plan->ranks[r].node == 0 && gl < sizeof groups - 8; r++) {
        const gpurun_rank_plan_t *rk = &c->plan->ranks[r];
        if (rk->gpu_first_rank != rk->local_rank || rk->gpu_nranks < 2)
            continue;
        gl += (size_t)snprintf(groups + gl, sizeof groups - gl, "%s%d-%d", shown ? ", " : "", r,
                               r + rk->gpu_nranks - 1);
        if (++shown == 4 && r + rk->gpu_nranks < c->plan->nranks) {
            snprintf(groups + gl, sizeof groups - gl, ", ...");
            break;
        }
    }
    bool local = !strcmp(c->launcher->name, "local"), found = gpurun_mps_find_control(control, sizeof control);
    const char *other_hosts = local ? "" : "; the first rank step of each other host starts its own";
    bool none = !gpurun_mps_wanted(c->plan) || c->job->mps == GPURUN_MPS_OFF;
    gpurun_say(stdout, "# ranks_per_gpu = %d: ranks %s share a GPU each; mps = %s: %s%s\n",
               c->plan->req.ranks_per_gpu, groups[0] ? groups : "(none)", gpurun_mps_mode_name(c->job->mps),
               none    ? "no CUDA MPS daemon"
               : found ? "one CUDA MPS daemon would start on this host (" GPURUN_MPS_CONTROL " -d)"
                       : GPURUN_MPS_CONTROL " is not on PATH here: no daemon",
               none ? "" : other_hosts);
}

/* A dry run's line on torchrun's rendezvous. */
static void dry_run_rendezvous(const struct run_ctx *c, const struct gpurun_kvlist *env)
{
    const char *mode = gpurun_kvlist_get(env, GPURUN_ENV_RENDEZVOUS);
    if (mode && !strcmp(mode, "file"))
        gpurun_say(stdout,
                   "# rank environment: %s; rendezvous = file: %s (no network port; the script passes $%s to "
                   "init_process_group), bound %s s\n",
                   c->tpl->rank_env, gpurun_kvlist_get(env, GPURUN_ENV_INIT_METHOD), GPURUN_ENV_INIT_METHOD,
                   gpurun_kvlist_get(env, GPURUN_ENV_RENDEZVOUS_TIMEOUT));
    else
        gpurun_say(stdout, "# rank environment: %s; rendezvous = %s at %s:%s (%s), bound %s s\n", c->tpl->rank_env,
                   mode ? mode : "?", gpurun_kvlist_get(env, "MASTER_ADDR"), gpurun_kvlist_get(env, "MASTER_PORT"),
                   mode && !strcmp(mode, "store")
                       ? "gpurun hosts torch's TCPStore on this host, holding its port until the ranks end; every "
                         "rank is its client"
                       : "rank 0 hosts the store on a port chosen at start: free until rank 0 binds it",
                   gpurun_kvlist_get(env, GPURUN_ENV_RENDEZVOUS_TIMEOUT));
}

/* A dry run's lines on the container, up to the program's. */
static void dry_run_container(const struct run_ctx *c)
{
    if (c->ctr) {
        gpurun_say(stdout, "# container: %s; image %s%s%s\n", c->ctr->why, c->ctr->image,
                   c->ctr->digest ? ", digest " : "", c->ctr->digest ? c->ctr->digest : "");
        if (!strcmp(c->ctr->runtime, "pyxis"))
            gpurun_say(stdout,
                       "# pyxis: srun enters the image before each task, so the rank step itself runs inside it "
                       "and reports the binding from there\n");
        else if (c->ctr->inside)
            gpurun_say(stdout,
                       "# binding reported from inside the container: its entry is %s " GPURUN_INSIDE_ARG " %d\n",
                       c->ctr->inside, GPURUN_INSIDE_FD);
        else
            gpurun_say(stdout, "# binding reported by the rank step, outside the container: %s\n", c->ctr->inside_note);
        gpurun_say(stdout, "# program in the container: ");
    } else {
        gpurun_say(stdout, "# program: ");
    }
}

/* A dry run's table of the ranks' binding, then each rank's environment. */
static void dry_run_ranks(const struct run_ctx *c, const struct gpurun_kvlist *env)
{
    gpurun_say(stdout, "\n%-5s %-4s %-5s %-6s %-20s %-4s %-6s %-20s %s\n", "rank", "node", "local", "GPU", "NIC", "aff",
               "NUMA", "cpus", "threads");
    for (int r = 0; r < c->plan->nranks; r++) {
        const gpurun_rank_plan_t *rk = &c->plan->ranks[r];
        char *cpus = hwloc_bitmap_iszero(rk->cpuset) ? gpurun_xstrdup("(unbound)") : gpurun_cpuset_list(rk->cpuset);
        char *numa = hwloc_bitmap_iszero(rk->nodeset) ? gpurun_xstrdup("-") : gpurun_cpuset_list(rk->nodeset);
        json_t *gp = json_object_get(rk->env, "GPURUN_GPUS"), *np = json_object_get(rk->env, "GPURUN_NICS");
        gpurun_say(stdout, "%-5d %-4d %-5d %-6s %-20s %-4s %-6s %-20s %d\n", rk->rank, rk->node, rk->local_rank,
                   gp ? json_string_value(gp) : "-", np ? json_string_value(np) : "-",
                   rk->nnics ? gpurun_affinity_name(rk->nic_affinity) : "-", numa, cpus, rk->threads);
        free(cpus);
        free(numa);
    }
    gpurun_say(stdout, "\n# environment of each rank\n");
    for (int r = 0; r < c->plan->nranks; r++) {
        const char *k;
        json_t *val;
        gpurun_say(stdout, "rank %d:", r);
        json_object_foreach(c->plan->ranks[r].env, k, val) gpurun_say(stdout, " %s=%s", k, json_string_value(val));
        for (size_t i = 0; i < env->n; i++) {
            /* A job-wide value the rank's own plan holds already, said once. */
            const char *own = json_string_value(json_object_get(c->plan->ranks[r].env, env->items[i].key));
            if (!own || strcmp(own, env->items[i].value))
                gpurun_say(stdout, " %s=%s", env->items[i].key, env->items[i].value);
        }
        gpurun_say(stdout, "\n");
    }
}

static void dry_run(struct run_ctx *c, char *const *app, const struct gpurun_launch_cmds *cmds,
                    char *const *plan_step, const struct gpurun_kvlist *env)
{
    gpurun_say(stdout, "# gpurun dry run of job %s: nothing is started\n", c->job->name);
    gpurun_say(stdout, "# launcher: %s\n", c->launcher_why);
    if (c->gdr)
        gpurun_say(stdout, "# gpudirect = %s: on for %lld of %d ranks\n",
                   json_string_value(json_object_get(c->gdr, "mode")),
                   json_integer_value(json_object_get(c->gdr, "on_ranks")), c->plan->nranks);
    if (c->alloc_note[0])
        gpurun_say(stdout, "# allocation: %s\n", c->alloc_note);
    if (c->plan->req.ranks_per_gpu > 1 || gpurun_mps_wanted(c->plan))
        dry_run_mps(c);
    for (size_t i = 0; c->tpl && i < c->tpl->nsetup; i++)
        gpurun_say(stdout, "# setup %zu: %s\n", i + 1, c->tpl->setup[i]);
    if (c->hpl.active) {
        char what[160];
        gpurun_hpl_edit_text(&c->hpl, what, sizeof what);
        gpurun_say(stdout, "# then in %s (HPL's input): %s\n", c->tpl->hpl_dat, what);
    }
    if (c->tpl && c->tpl->rank_env)
        dry_run_rendezvous(c, env);
    dry_run_container(c);
    print_quoted(app);
    if (plan_step) {
        gpurun_say(stdout,
                   "# pyxis on %d nodes: first a step outside the image plans each host gpurun does not (one task per "
                   "node; no CUDA MPS daemon there), then the container step:\n",
                   c->plan->req.nodes);
        print_quoted(plan_step);
    }
    for (int i = 0; i < cmds->count; i++) {
        for (char **e = cmds->env[i]; e && *e; e++)
            gpurun_say(stdout, "%s ", *e);
        print_quoted(cmds->argv[i]);
    }
    dry_run_ranks(c, env);
    for (size_t w = 0; w < c->plan->nwarnings; w++)
        gpurun_say(stdout, "warning: %s\n", c->plan->warnings[w]);
}

/* Print what one configuration would run, starting nothing. */
static int dry_run_config(struct run_ctx *c, gpurun_error_t *err)
{
    char *rd = gpurun_xasprintf("%s/%s/<run-id>", c->results, c->job->name);
    struct gpurun_kvlist names = {0};
    run_names(c, rd, &names);
    char **app = NULL;
    int rc = 0;
    if (command_argv("command", c->command, &names, &app, err) < 0 ||
        (c->ctr ? container_program(c, app, err) : resolve_program(app, c->job->dir, err)) < 0) {
        free(rd);
        gpurun_kvlist_clear(&names);
        if (app)
            gpurun_free_words(app);
        return err->code;
    }
    char self[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    self[sl > 0 ? sl : 0] = '\0';
    char *export_env[24];
    export_names(export_env);
    char **pyxis = gpurun_container_launcher_options(c->ctr, rd, c->job_dir);
    struct gpurun_launch_request lr = {.nodes = c->plan->req.nodes,
                                       .ranks_per_node = c->plan->req.ranks_per_node,
                                       .nranks = c->plan->nranks,
                                       .oversubscribe = c->plan->req.oversubscribe,
                                       .rank_step = self,
                                       .run_dir = rd,
                                       .app_argv = app,
                                       .export_env = export_env,
                                       .launcher_args = pyxis,
                                       .stop_grace_s = kill_grace(c->tpl),
                                       .stop_signal = c->tpl ? c->tpl->stop_signal : 0};
    /* Each rank's runtime command line is the launcher's, after `--`. */
    char **launched = c->ctr ? container_argv(c, app, rd) : NULL;
    if (launched)
        lr.app_argv = launched;
    struct gpurun_launch_cmds cmds = {0};
    struct gpurun_kvlist env = {0};
    if (job_env(c, &names, rd, 0, &env, err) < 0) /* rd names no folder yet: nothing is checked there */
        rc = err->code;
    else if (c->launcher->commands(&lr, &cmds, err) == 0) {
        char **plan_step = pyxis_plans_hosts(c) ? pyxis_plan_argv(c, self, rd) : NULL;
        dry_run(c, app, &cmds, plan_step, &env);
        if (plan_step)
            gpurun_free_words(plan_step);
    } else {
        rc = err->code;
    }
    gpurun_kvlist_clear(&env);
    if (launched)
        gpurun_free_words(launched);
    gpurun_launch_cmds_free(&cmds);
    if (pyxis)
        gpurun_free_words(pyxis);
    gpurun_free_words(app);
    gpurun_kvlist_clear(&names);
    free(rd);
    return rc;
}

/* The record's "config": what the scan varies in this configuration,
 * layout keys as numbers ({"ranks_per_node": 2, "params.npme": "1"}). */
static json_t *scan_config_json(const gpurun_job_t *job, const struct gpurun_scan_config *sc)
{
    json_t *config = json_object();
    for (size_t i = 0; i < sc->nsets && i < job->nscan; i++) {
        const struct gpurun_scan_axis *ax = &job->scan[i];
        const char *v = strchr(sc->sets[i], '=') + 1;
        json_object_set_new(config, ax->key, ax->values ? json_integer(strtol(v, NULL, 10)) : json_string(v));
    }
    return config;
}

/* The summary at the end of a scan or repeat: one line per run. */
static void scan_summary(const gpurun_job_t *job, const struct scan_row *rows, size_t nrows, size_t ncombo,
                         const char *results)
{
    size_t ok = 0, ran = 0, wc = strlen("configuration"), ws = strlen("state"), wf = strlen("figure of merit");
    for (size_t i = 0; i < nrows; i++) {
        const char *st = rows[i].state ? rows[i].state : "not run";
        ran += rows[i].state != NULL;
        ok += rows[i].state && !strcmp(rows[i].state, GPURUN_STATE_OK);
        size_t cl = strlen(rows[i].config) + (job->repeat > 1 ? 14 : 0); /* ", repeat NNNN" */
        wc = cl > wc ? cl : wc;
        ws = strlen(st) > ws ? strlen(st) : ws;
        wf = strlen(rows[i].fom) > wf ? strlen(rows[i].fom) : wf;
    }
    wc = wc > 74 ? 74 : wc;
    gpurun_say(stdout, "gpurun: %s: summary: %zu of %zu run%s ok (%zu configuration%s x %d repeat%s)\n", job->name, ok,
               nrows, nrows == 1 ? "" : "s", ncombo, ncombo == 1 ? "" : "s", job->repeat, job->repeat == 1 ? "" : "s");
    gpurun_say(stdout, "  %-4s %-*s %-*s %-*s %s\n", "run", (int)wc, "configuration", (int)ws, "state", (int)wf,
               "figure of merit", "run folder");
    size_t rl = strlen(results);
    for (size_t i = 0; i < nrows; i++) {
        char cfg[96];
        const char *conf = rows[i].config[0] ? rows[i].config : "-";
        if (job->repeat > 1) {
            snprintf(cfg, sizeof cfg, "%.60s%srepeat %d", rows[i].config, rows[i].config[0] ? ", " : "",
                     rows[i].repeat);
            conf = cfg;
        }
        const char *folder = rows[i].folder ? rows[i].folder : "-";
        /* relative to the results folder the user named: shorter, and the same on every line */
        if (rows[i].folder && !strncmp(folder, results, rl) && folder[rl] == '/')
            folder += rl + 1;
        gpurun_say(stdout, "  %-4zu %-*.*s %-*s %-*s %s\n", i + 1, (int)wc, (int)wc, conf, (int)ws,
                   rows[i].state ? rows[i].state : "not run", (int)wf, rows[i].fom[0] ? rows[i].fom : "-", folder);
    }
    gpurun_say(stdout, "  run folders under %s%s\n", results,
               ran < nrows ? "; \"not run\": the scan stopped before it" : "");
}

/* Every configuration of a scan, planned against this node (or allocation)
 * and its inputs checked, before the first one runs: one that cannot run is
 * named, with nothing run.  The job is left at the last configuration. */
static int check_inputs(const struct run_ctx *c, gpurun_error_t *err);
static int check_scan_configs(struct run_ctx *c, gpurun_job_t *job, size_t first, size_t last, size_t n,
                              gpurun_error_t *err)
{
    for (size_t k = first; k < last; k++) {
        struct gpurun_scan_config sc;
        gpurun_scan_config(job, k, &sc);
        gpurun_plan_t *plan = NULL;
        int rc = gpurun_scan_apply(job, &sc, err);
        if (rc == 0) {
            gpurun_request_t req;
            char note[256];
            gpurun_request_from_job(&req, job);
            gpurun_alloc_apply(c->topo, &req, note, sizeof note);
            rc = gpurun_plan_create(c->topo, &req, &plan, err);
        }
        struct gpurun_hpl_edit hpl;
        if (rc == 0) /* HPL's grid must fit this configuration's ranks */
            rc = gpurun_hpl_edit_for_job(c->tpl, job, plan->nranks, &hpl, err);
        if (rc == 0) /* its inputs may name what it varies: ${tpr}, ${ranks} */
            rc = check_inputs(c, err);
        gpurun_plan_destroy(plan);
        if (rc < 0) {
            char *text = gpurun_xstrdup(err->text);
            gpurun_err(err, err->code, "configuration %zu of %zu (%s): %s", k + 1, n, sc.text, text);
            free(text);
        }
        gpurun_scan_config_free(&sc);
        if (rc < 0)
            return err->code;
    }
    return 0;
}

/* The template's input files, before anything starts (a dry run's too):
 * with the job's own values (the layout is the node's to decide; inputs
 * name params, not it). */
static int check_inputs(const struct run_ctx *c, gpurun_error_t *err)
{
    if (!c->tpl || (!c->tpl->ninputs && !c->tpl->progress && !c->tpl->hpl_dat))
        return 0;
    const gpurun_job_t *job = c->job;
#define JOB_NUMBER(v) ((v) > 0 ? (long)(v) : 1L)
    struct gpurun_job_values vals = {
        .job = job->name,
        .template_name = job->template_name,
        .job_dir = c->job_dir,
        .run_dir = "RUN_DIR",
        .nodes = JOB_NUMBER(job->nodes),
        .ranks_per_node = JOB_NUMBER(job->ranks_per_node),
        .ranks = JOB_NUMBER(job->nodes) * JOB_NUMBER(job->ranks_per_node),
        .gpus_per_rank = job->gpus_per_rank >= 0 ? job->gpus_per_rank : 1,
        .threads_per_rank = JOB_NUMBER(job->threads_per_rank),
        .repeat = JOB_NUMBER(job->repeat),
    };
#undef JOB_NUMBER
    struct gpurun_kvlist names = {0};
    gpurun_job_names(&names, &vals, c->tpl, &job->params);
    int rc = gpurun_inputs_check(c->tpl, job, c->job_dir, &names, NULL, err);
    struct gpurun_progress_conf pc; /* progress_total once expanded: a number */
    if (rc == 0 && gpurun_progress_from_template(c->tpl, gpurun_kvlist_lookup, &names, &pc, err) < 0)
        rc = -1;
    else if (rc == 0)
        gpurun_progress_conf_free(&pc);
    /* NB and P x Q (their form; the grid against the ranks once planned),
     * and the input they are set in, as HPL reads it. */
    struct gpurun_hpl_edit hpl;
    if (rc == 0 && (gpurun_hpl_edit_for_job(c->tpl, job, 0, &hpl, err) < 0 ||
                    gpurun_hpl_check_from(c->tpl, &hpl, gpurun_kvlist_lookup, &names, c->job_dir, err) < 0))
        rc = -1;
    gpurun_kvlist_clear(&names);
    return rc;
}

/* The job and run folders are mounted at their own paths. */
static int run_folders_mountable(const struct run_ctx *c, gpurun_error_t *err)
{
    for (int i = 0; c->ctr && i < 2; i++) {
        const char *folder = i ? c->results : c->job_dir;
        const char *bad = gpurun_container_path_problem(c->ctr, folder);
        if (bad) {
            char *shown = gpurun_printable(folder);
            gpurun_err(err, GPURUN_EXIT_CONFIG,
                       "the %s %s holds %s: %s mounts it in the container at its own path and cannot carry that; "
                       "nothing was started: %s",
                       i ? "results folder" : "job's folder", shown, bad, c->ctr->runtime,
                       i ? "choose another results folder (job key 'results' or --results)"
                         : "move the job file to a folder whose path has none");
            free(shown);
            return err->code;
        }
    }
    return 0;
}

/* Everything a job needs before its first configuration: the template,
 * site, inputs, MPS folders, container, topology, launcher and manager,
 * and the results folder.  0, or an exit status with err. */
static int run_prepare(struct run_ctx *c, gpurun_error_t *err)
{
    gpurun_job_t *job = c->job;
    const struct gpurun_run_opts *opts = c->opts;
    c->job_dir = realpath(job->dir, NULL);
    if (!c->job_dir)
        c->job_dir = abs_path(job->dir, ".");
    if (gpurun_template_for_job(job, &c->tpl, err) < 0 || gpurun_site_for_job(job, &c->site, err) < 0 ||
        (!job->nscan && check_inputs(c, err) < 0)) /* a scan's: per configuration, below */
        return err->code;
    /* MPS folders the ranks are pointed at: none of another user's. */
    if (gpurun_mps_check_env(job, err) < 0)
        return err->code;
    /* A container: its runtime, image and mounts settled before anything starts. */
    if (gpurun_container_resolve(&job->container, c->tpl ? &c->tpl->container : NULL,
                                 c->site ? &c->site->container : NULL, gpurun_job_section_origin(job, "container.image"),
                                 gpurun_job_origin(job, "container.mounts"),
                                 gpurun_job_section_origin(job, "container.runtime"), job->launcher,
                                 &c->ctr, err) < 0)
        return err->code;
    if (c->ctr)
        container_inside(c);
    if (gpurun_topo_load(NULL, &c->topo, err) < 0 ||
        gpurun_launcher_choose(job->launcher, &c->launcher, c->launcher_why, sizeof c->launcher_why, err) < 0)
        return err->code;
    struct gpurun_rm_alloc alloc;
    c->rm = gpurun_rm_of_launcher(c->launcher->name);
    if (!c->rm)
        c->rm = gpurun_rm_current(&alloc);
    if (c->ctr && !strcmp(c->ctr->runtime, "pyxis") && strcmp(c->launcher->name, "srun")) {
        gpurun_err(err, GPURUN_EXIT_CONFIG,
                   "%s: key 'container.runtime': pyxis runs only under launcher = \"srun\" (srun "
                   "--container-image), and this job's launcher is %s (%s); nothing was started",
                   gpurun_job_section_origin(job, "container.runtime"), c->launcher->name, c->launcher_why);
        return err->code;
    }
    const char *results = opts->results ? opts->results : job->results;
    /* Absolute: ranks start in the run folder and must find it by name. */
    c->results = abs_path(opts->results ? "." : c->job_dir, results);
    return run_folders_mountable(c, err);
}

/* A sweep: the configurations first..last of the scan, each run `repeat`
 * times, and a row per run for the summary when there is more than one. */
struct sweep {
    size_t ncombo, first, last;
    size_t runs, nrows;
    struct scan_row *rows; /* NULL: one run, or a dry run */
    int stopped_rc;        /* the interruption's status */
};

/* Which configurations run (--configuration K: only the K-th, a batch job
 * of gpurun submit), each checked before any runs. */
static int sweep_create(struct run_ctx *c, struct sweep *w, gpurun_error_t *err)
{
    gpurun_job_t *job = c->job;
    const struct gpurun_run_opts *opts = c->opts;
    *w = (struct sweep){.ncombo = gpurun_scan_count(job)};
    w->last = w->ncombo;
    if (opts->configuration && (size_t)opts->configuration > w->ncombo)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "--configuration %ld: the job's scan has %zu configuration%s",
                          opts->configuration, w->ncombo, w->ncombo == 1 ? " (it has no scan)" : "s");
    if (opts->configuration) {
        w->first = (size_t)opts->configuration - 1;
        w->last = w->first + 1;
    }
    if (job->nscan && check_scan_configs(c, job, w->first, w->last, w->ncombo, err) != 0)
        return -1;
    w->nrows = (w->last - w->first) * (size_t)(job->repeat > 0 ? job->repeat : 1);
    w->rows = !opts->dry_run && w->nrows > 1 ? gpurun_xcalloc(w->nrows, sizeof *w->rows) : NULL;
    for (size_t j = 0; w->rows && j < w->nrows; j++) { /* each "not run" until it runs */
        struct gpurun_scan_config one;
        gpurun_scan_config(job, w->first + j / (size_t)job->repeat, &one);
        w->rows[j].config = one.text;
        one.text = NULL;
        w->rows[j].repeat = (int)(j % (size_t)job->repeat) + 1;
        gpurun_scan_config_free(&one);
    }
    return 0;
}

/* The repeats of configuration k, planned in c: the first failure's status. */
static int sweep_repeats(struct run_ctx *c, struct sweep *w, size_t k, const char *text, gpurun_error_t *err)
{
    gpurun_job_t *job = c->job;
    int crc = 0;
    for (int i = 0; i < job->repeat && !c->stopped[0]; i++) {
        struct scan_row *row = w->rows ? &w->rows[(k - w->first) * (size_t)job->repeat + (size_t)i] : NULL;
        if (w->nrows > 1 && !c->opts->quiet) {
            if (job->repeat > 1)
                gpurun_say(stderr, "gpurun: run %zu of %zu: %s%srepeat %d of %d\n", w->runs + 1, w->nrows, text,
                           text[0] ? ", " : "", i + 1, job->repeat);
            else
                gpurun_say(stderr, "gpurun: run %zu of %zu: %s\n", w->runs + 1, w->nrows, text);
        }
        c->row = row;
        int one = run_once(c, i, err);
        c->row = NULL;
        w->runs++;
        if (one != 0 && w->nrows > 1)
            gpurun_say(stderr, "gpurun: %s\n", err->text);
        if (one != 0 && crc == 0)
            crc = one;
        if (c->stopped[0])
            crc = w->stopped_rc = one; /* the interruption's status, whatever failed before */
    }
    return crc;
}

/* Configuration k of the scan: planned, then shown (a dry run) or run. */
static int sweep_config(struct run_ctx *c, struct sweep *w, size_t k, const struct gpurun_scan_config *sc,
                        gpurun_error_t *err)
{
    gpurun_job_t *job = c->job;
    gpurun_request_t req;
    gpurun_request_from_job(&req, job);
    c->config = scan_config_json(job, sc);
    c->req = req;
    gpurun_alloc_apply(c->topo, &req, c->alloc_note, sizeof c->alloc_note);
    int crc = 0;
    if (gpurun_plan_create(c->topo, &req, &c->plan, err) < 0 ||
        gpurun_hpl_edit_for_job(c->tpl, job, c->plan->nranks, &c->hpl, err) < 0 || /* P x Q = the ranks: exit 2 */
        gpurun_gdr_setup(c->plan, job->gpudirect, c->tpl ? &c->tpl->env : NULL, &c->gdr_probe, &c->gdr, err) < 0) {
        crc = err->code; /* gpudirect = on that this node cannot do: exit 3, nothing started */
    } else {
        if (c->tpl && c->tpl->rank_env)
            gpurun_rankenv_torchrun_plan(c->plan);
        if (c->ctr)
            container_env_names(c);
        free(c->command);
        c->command = c->tpl ? (c->plan->req.gpus_per_rank > 0 && c->tpl->gpu_args
                                   ? gpurun_xasprintf("%s %s", c->tpl->command, c->tpl->gpu_args)
                                   : gpurun_xstrdup(c->tpl->command))
                            : gpurun_xstrdup(job->command);
        if (c->opts->dry_run) {
            if (job->nscan)
                gpurun_say(stdout, "%s# configuration %zu of %zu: %s\n", k > w->first ? "\n" : "", k + 1, w->ncombo,
                           sc->text);
            crc = dry_run_config(c, err);
        } else {
            crc = sweep_repeats(c, w, k, sc->text, err);
        }
    }
    gpurun_plan_destroy(c->plan);
    c->plan = NULL;
    json_decref(c->gdr);
    c->gdr = NULL;
    json_decref(c->config);
    c->config = NULL;
    return crc;
}

/* One configuration per scan combination, each run `repeat` times.  The
 * whole scan is planned first: a configuration this node cannot run stops
 * it before anything ran.  A failed run does not stop the sweep (the
 * summary says what failed; the exit status is the first failure's); an
 * interrupted one does. */
static int sweep_run(struct run_ctx *c, struct sweep *w, gpurun_error_t *err)
{
    gpurun_job_t *job = c->job;
    const struct gpurun_run_opts *opts = c->opts;
    int rc = 0;
    for (size_t k = w->first; k < w->last; k++) {
        struct gpurun_scan_config sc;
        gpurun_scan_config(job, k, &sc);
        if (opts->configuration && job->nscan && !opts->quiet && !opts->dry_run)
            gpurun_say(stderr, "gpurun: configuration %zu of %zu: %s\n", k + 1, w->ncombo, sc.text);
        if (gpurun_scan_apply(job, &sc, err) < 0) { /* checked above: not expected */
            gpurun_scan_config_free(&sc);
            return err->code;
        }
        int crc = sweep_config(c, w, k, &sc, err);
        gpurun_scan_config_free(&sc);
        if (crc != 0 && rc == 0)
            rc = crc;
        /* Interrupted, or a request this node cannot meet: stop the sweep. */
        if (c->stopped[0] || crc == GPURUN_EXIT_ENV || crc == GPURUN_EXIT_CONFIG)
            break;
    }
    return rc;
}

/* The summary of a sweep of several runs, and the status it ends with. */
static int sweep_finish(struct run_ctx *c, struct sweep *w, int rc, gpurun_error_t *err)
{
    gpurun_job_t *job = c->job;
    if (w->rows) {
        scan_summary(job, w->rows, w->nrows, w->last - w->first, c->results);
        for (size_t j = 0; j < w->nrows; j++) {
            free(w->rows[j].config);
            free(w->rows[j].folder);
        }
        free(w->rows);
        w->rows = NULL;
    }
    /* Each failure was printed as it came; main prints the first again. */
    if (c->stopped[0] && w->nrows > 1)
        gpurun_err(err, rc = w->stopped_rc, "%s: %s: stopped after %zu of %zu runs%s; see gpurun results", job->name,
                   c->stopped, w->runs, w->nrows, w->runs < w->nrows ? ", the rest not started" : "");
    else if (rc != 0 && w->nrows > 1 && rc != GPURUN_EXIT_ENV && rc != GPURUN_EXIT_CONFIG)
        gpurun_err(err, rc, "%s: at least one run failed (exit status %d, the first failure's); see the summary "
                   "above and gpurun results", job->name, rc);
    return rc;
}

static void run_ctx_destroy(struct run_ctx *c)
{
    free(c->job_dir);
    free(c->command);
    free(c->results);
    gpurun_plan_destroy(c->plan);
    gpurun_gdr_probe_destroy(c->gdr_probe);
    gpurun_topo_destroy(c->topo);
    gpurun_template_destroy(c->tpl);
    gpurun_site_destroy(c->site);
    gpurun_container_run_free(c->ctr);
}

int gpurun_run_job(gpurun_job_t *job, const struct gpurun_run_opts *opts, gpurun_error_t *err)
{
    struct run_ctx c = {.job = job, .opts = opts};
    struct sweep w;
    int rc = run_prepare(&c, err);
    if (rc == 0 && sweep_create(&c, &w, err) < 0)
        rc = err->code;
    if (rc == 0) {
        struct sigaction old_stop[3];
        if (!opts->dry_run) /* a stop at any moment ends the run with its record */
            gpurun_stop_signals(true, old_stop);
        rc = sweep_run(&c, &w, err);
        if (!opts->dry_run)
            gpurun_stop_signals(false, old_stop);
        rc = sweep_finish(&c, &w, rc, err);
    }
    run_ctx_destroy(&c);
    return rc;
}
