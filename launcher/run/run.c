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
#include "failure.h"
#include "rank_conditions.h"
#include "rankenv.h"
#include "results.h"
#include "safefile.h"
#include "run_private.h"
#include "provenance.h"
#include "runstatus.h"
#include "say.h"
#include "stall_rank.h"
#include "torchrun.h"

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

char *run_abs_path(const char *dir, const char *p)
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
        char *p = run_abs_path(job_dir, argv[0]);
        found = gpurun_which(p);
        free(p);
    } else {
        found = gpurun_which(argv[0]);
    }
    if (!found) {
        if (strchr(argv[0], '/')) {
            char *p = run_abs_path(job_dir, argv[0]);
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
    const char *h = rank_host(rr, i);
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
        const char *h = rank_host(rr, i);
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = silent_as(rr, stops, j, self, want) &&
                   !strcmp(h, rank_host(rr, j));
        if (seen)
            continue;
        int n = 0;
        char ranks[256] = "";
        size_t ru = 0;
        for (int j = i; j < nranks; j++) {
            const char *hj = rank_host(rr, j);
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
        const char *h = rank_host(rr, i);
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



/* The variables a rank step sets, by name, for a runtime that passes only
 * what it is told (podman): the plan's, the job's and the template's env,
 * torchrun's, and the MPI and resource managers' ones by prefix (podman -e
 * 'OMPI_*', 'SLURM_*'). */
void run_container_env_names(struct run_ctx *c)
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
    char *p = run_abs_path(c->job_dir, app[0] + (strncmp(app[0], "./", 2) ? 0 : 2));
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
void run_container_inside(struct run_ctx *c)
{
    char self[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    self[sl > 0 ? sl : 0] = '\0';
    gpurun_container_set_inside(c->ctr, sl > 0 ? gpurun_rank_program(self) : NULL);
    /* through the manager's launch command (pyxis), the rank step itself is inside */
    if (c->ctr->inside && !gpurun_rm_of_runtime(c->ctr->runtime))
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
    json_t *env = run_kv_json(&envkv);
    gpurun_kvlist_clear(&envkv);
    if (wrc == 0)
        wrc = gpurun_write_json_at(a->dfd, GPURUN_RUN_ENV, p, env, a->fmode, 0, err);
    json_decref(env);
    free(p);
    /* Another host's rank step decides GPUDirect (and CUDA MPS) for its own ranks with these. */
    p = gpurun_xasprintf("%s/%s", a->run_dir, GPURUN_RUN_GPUDIRECT);
    json_t *gj = json_pack("{s:s, s:o, s:s}", "mode", gpurun_gdr_mode_name(c->job->gpudirect), "env",
                           c->tpl ? run_kv_json(&c->tpl->env) : json_object(), "mps", gpurun_mps_mode_name(c->job->mps));
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

static bool stop_noted(struct run_attempt *a, const char *when, int *rcp);

/* Setup step i failed with `code` (128+N: killed by signal N; -1: not
 * started): a failed run like a rank's, its cause found in setup.log with
 * the template's failure patterns, said on stderr and kept in the record. */
static void setup_failed(struct run_ctx *c, struct run_attempt *a, size_t i, int code, const char *log,
                         gpurun_error_t *err)
{
    run_read_tail(a, "setup.log", NULL, c->tpl);
    char *cause = gpurun_rank_tail_reason(&a->tail);
    char status[64];
    if (code < 0)
        snprintf(status, sizeof status, "could not be started");
    else
        run_status_text(code, status, sizeof status);
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
        .kill = c->job->on_stall == GPURUN_ON_STALL_KILL, .can_ask = a->cmds.stall_relay > 0 || a->cmds.stall_ask_stdin,
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
/* A runtime that enters the image through the manager's launch command
 * (pyxis) plans each host outside the image first (rm.h's per_node). */
static const struct gpurun_rm_container *plans_hosts_outside(const struct run_ctx *c)
{
    const gpurun_rm_plugin_t *m = c->ctr && c->plan->req.nodes > 1 ? gpurun_rm_of_runtime(c->ctr->runtime) : NULL;
    return m && m->container->per_node ? m->container : NULL;
}

static char **plan_step_argv(const struct run_ctx *c, const struct gpurun_rm_container *rc, const char *self,
                             const char *run_dir)
{
    char **a = gpurun_argv_new();
    rc->per_node(&a, c->plan->req.nodes);
    gpurun_argv_add(&a, self);
    gpurun_argv_add(&a, "rank");
    gpurun_argv_add(&a, "--plan-only");
    gpurun_argv_add(&a, "--run-dir");
    gpurun_argv_add(&a, run_dir);
    return a;
}

/* Runs the planning step, its output in plan-step.log: 0, or -1
 * (stop_with) with what it said (the host that cannot run its ranks). */
static int plan_hosts_outside(struct run_ctx *c, struct run_attempt *a, const struct gpurun_rm_container *rc,
                              const char *self, gpurun_error_t *err)
{
    char *log = gpurun_xasprintf("%s/plan-step.log", a->run_dir);
    int fd = gpurun_create_at(a->dfd, "plan-step.log", O_RDWR | O_APPEND, a->fmode);
    if (fd < 0) {
        gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot create: %s", log, strerror(errno));
        free(log);
        return stop_with(a, GPURUN_EXIT_ENV);
    }
    char **argv = plan_step_argv(c, rc, self, a->run_dir);
    int code = gpurun_run_step(argv, a->dfd, a->run_dir, fd, err);
    if (code > 0) {
        char said[4096];
        off_t end = lseek(fd, 0, SEEK_END);
        off_t from = end > (off_t)sizeof said - 1 ? end - (off_t)sizeof said + 1 : 0;
        ssize_t n = end > 0 ? pread(fd, said, (size_t)(end - from), from) : 0;
        said[n > 0 ? n : 0] = '\0';
        gpurun_err(err, GPURUN_EXIT_ENV,
                   "%s: the step that plans each host outside the image (%s, one gpurun rank --plan-only per "
                   "node) failed with exit status %d: no rank was started; run folder %s; it said (%s):\n%s",
                   rc->runtime, argv[0], code, a->run_dir, log, said[0] ? said : "(nothing)");
    }
    gpurun_free_words(argv);
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
    const struct gpurun_rm_container *outside = plans_hosts_outside(c);
    if (outside && plan_hosts_outside(c, a, outside, self, err) < 0)
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
    snprintf(a->why, sizeof a->why, "interrupted by %s %s", run_sig_abbrev(sig, sb, sizeof sb), when);
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
    rc = run_keep_record(c, a, record, rc, err);
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
int run_once(struct run_ctx *c, int repeat_index, gpurun_error_t *err)
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
    rc = run_decide_outcome(c, &a, err);
    if (strcmp(a.state, GPURUN_STATE_INTERRUPTED) && stop_noted(&a, "after the ranks ended", &rc))
        gpurun_err(err, rc, "%s; the record keeps what was measured; run folder %s", a.why, a.run_dir);
    run_read_partial_foms(c, &a);
    run_failure_report(c, &a, rc);
    say_warnings(c, &a.rr);
    gpurun_watch_conditions_say(a.watch);
    record = run_record(c, &a, rc, repeat_index);
    rc = run_keep_record(c, &a, record, rc, err);
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

/* Print what one configuration would run, starting nothing. */
int run_dry_run_config(struct run_ctx *c, gpurun_error_t *err)
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
        const struct gpurun_rm_container *outside = plans_hosts_outside(c);
        char **plan_step = outside ? plan_step_argv(c, outside, self, rd) : NULL;
        run_dry_run_print(c, app, &cmds, plan_step, &env);
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
