/* SPDX-License-Identifier: BSD-3-Clause */
/* A host's plan (plan.HOST.json): written with an index of its ranks so
 * that a rank step reads only its own entry, made once per host by the
 * first rank step that finds none (the others wait on its lock and read
 * it), and `gpurun rank --plan-only`; the run folder as a rank step opens
 * it and the JSON files it reads there: rank.h. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "rank_plan.h"
#include "safefile.h"
#include "util.h"
#ifndef GPURUN_RANK_LEAN
/* Only gpurun itself plans a host: gpurun-rank (built with GPURUN_RANK_LEAN)
 * hands planning over to it. */
#include "manager.h"
#include "gpudirect.h"
#include "mps.h"
#endif

json_t *gpurun_read_own_json_at(int dirfd, const char *name, const char *shown, gpurun_error_t *err)
{
    int fd = gpurun_open_own_at(dirfd, name, shown, err);
    if (fd < 0)
        return NULL;
    /* Read whole, then parse: jansson's json_loadfd reads a byte per call. */
    char *buf;
    size_t len;
    int rc = gpurun_read_fd(fd, shown, "run file", (size_t)1 << 30, &buf, &len, err);
    close(fd);
    if (rc < 0) {
        /* A file of gpurun's own that cannot be read: the environment's fault, not the job's. */
        if (err)
            err->code = GPURUN_EXIT_ENV;
        return NULL;
    }
    json_error_t jerr;
    json_t *doc = json_loadb(buf, len, 0, &jerr);
    free(buf);
    if (!doc)
        gpurun_err(err, GPURUN_EXIT_ENV, "%s: line %d: %s", shown, jerr.line, jerr.text);
    return doc;
}

int gpurun_open_run_dir(const char *run_dir, mode_t *file_mode, gpurun_error_t *err)
{
    const char *ino_s = getenv(GPURUN_ENV_RUN_DIR_INO), *uid_s = getenv(GPURUN_ENV_RUN_UID);
    char *end;
    if (!ino_s || !*ino_s || !uid_s || !*uid_s)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "rank step: %s and %s are not set: the rank step is started by gpurun run, not by hand",
                          GPURUN_ENV_RUN_DIR_INO, GPURUN_ENV_RUN_UID);
    unsigned long long want_ino = strtoull(ino_s, &end, 10);
    if (*end)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "rank step: %s=%s is not an inode number", GPURUN_ENV_RUN_DIR_INO,
                          ino_s);
    unsigned long want_uid = strtoul(uid_s, &end, 10);
    if (*end || want_uid != (unsigned long)geteuid())
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "rank step: runs as uid %ld, but gpurun ran as uid %s: the run folder %s is not ours; refused",
                          (long)geteuid(), uid_s, run_dir);
    int fd = open(run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat lst;
    if (fd < 0) /* O_DIRECTORY makes a symlink ENOTDIR, not ELOOP */
        return gpurun_err(err, GPURUN_EXIT_ENV, "rank step: cannot open the run folder %s: %s", run_dir,
                          errno == ELOOP || (errno == ENOTDIR && lstat(run_dir, &lst) == 0 && S_ISLNK(lst.st_mode))
                              ? "it is a symlink"
                              : strerror(errno));
    struct stat st;
    const char *why = NULL;
    if (fstat(fd, &st) < 0)
        why = strerror(errno);
    else if (st.st_uid != geteuid())
        why = "it is owned by another user";
    else if (st.st_mode & 022)
        why = "others can write in it";
    else if ((unsigned long long)st.st_ino != want_ino)
        why = "it is not the folder gpurun made for this run (another inode): it was replaced";
    if (why) {
        close(fd);
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "rank step: run folder %s refused: %s; nothing of it is used",
                          run_dir, why);
    }
    if (file_mode)
        *file_mode = (st.st_mode & 0050) ? 0640 : 0600;
    return fd;
}

/* plan.HOST.json is plain JSON that starts with an index of its ranks:
 *   {"rank_index": "OOOOOOOOOOOOLLLLLLLLLLLL...", "ranks": [\n E0,\n E1\n], ...the rest}
 * 24 digits per local rank (byte offset and length of its entry), so that a
 * rank step reads three small pieces of the file, whatever the number of
 * ranks, instead of parsing every rank's entry. */
#define INDEX_HEAD "{\"rank_index\": \""
#define INDEX_DIGITS 12

int gpurun_write_host_plan_at(int dfd, const char *name, const char *shown, json_t *plan, mode_t mode,
                              gpurun_error_t *err)
{
    json_t *ranks = json_object_get(plan, "ranks");
    size_t n = json_array_size(ranks);
    char **entry = gpurun_xcalloc(n + 1, sizeof *entry);
    json_t *rest = json_copy(plan);
    json_object_del(rest, "ranks");
    json_object_del(rest, "rank_index");
    char *rest_text = json_dumps(rest, JSON_COMPACT);
    json_decref(rest);
    bool bad = !rest_text;
    for (size_t i = 0; i < n && !bad; i++)
        bad = !(entry[i] = json_dumps(json_array_get(ranks, i), JSON_COMPACT));
    int rc;
    if (bad) {
        rc = gpurun_err(err, GPURUN_EXIT_ENV,
                        "%s: cannot write: the JSON encoder refused the plan (a text that is not UTF-8?)", shown);
    } else {
        static const char mid[] = "\",\n\"ranks\": [\n";
        size_t head = strlen(INDEX_HEAD) + 2 * INDEX_DIGITS * n + strlen(mid);
        size_t total = head + 1 + strlen(rest_text) + 4;
        for (size_t i = 0; i < n; i++)
            total += strlen(entry[i]) + 2;
        char *buf = gpurun_xcalloc(total + 1, 1), *w = buf;
        w += sprintf(w, "%s", INDEX_HEAD);
        size_t pos = head;
        for (size_t i = 0; i < n; i++) {
            size_t len = strlen(entry[i]);
            w += sprintf(w, "%0*zu%0*zu", INDEX_DIGITS, pos, INDEX_DIGITS, len);
            pos += len + 2;
        }
        w += sprintf(w, "%s", mid);
        for (size_t i = 0; i < n; i++)
            w += sprintf(w, "%s%s", entry[i], i + 1 < n ? ",\n" : "\n");
        /* the other members after the ranks: "{}" adds none */
        w += sprintf(w, "]%s%s\n", strlen(rest_text) > 2 ? ", " : "}", strlen(rest_text) > 2 ? rest_text + 1 : "");
        rc = gpurun_write_atomic_at(dfd, name, shown, buf, (size_t)(w - buf), mode, 0, err);
        free(buf);
    }
    for (size_t i = 0; i < n; i++)
        free(entry[i]);
    free(entry);
    free(rest_text);
    return rc;
}

static int read_at(int fd, char *buf, size_t len, off_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(fd, buf + got, len - got, off + (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static bool digits(const char *s, size_t n, size_t *v)
{
    *v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        *v = *v * 10 + (size_t)(s[i] - '0');
    }
    return true;
}

/* Local rank `local`'s entry of the host plan open as `fd`, or NULL. */
static json_t *host_plan_entry(int fd, int local, const char *shown, gpurun_error_t *err)
{
    char head[sizeof INDEX_HEAD - 1], ix[2 * INDEX_DIGITS];
    size_t off, len;
    off_t at = (off_t)(sizeof head) + (off_t)local * (off_t)sizeof ix;
    if (read_at(fd, head, sizeof head, 0) < 0 || memcmp(head, INDEX_HEAD, sizeof head) != 0) {
        gpurun_err(err, GPURUN_EXIT_ENV, "%s: not a host plan of gpurun (no rank index)", shown);
        return NULL;
    }
    if (read_at(fd, ix, sizeof ix, at) < 0 || !digits(ix, INDEX_DIGITS, &off) ||
        !digits(ix + INDEX_DIGITS, INDEX_DIGITS, &len))
        return NULL; /* past the index: no such local rank */
    if (len > (64u << 20)) {
        gpurun_err(err, GPURUN_EXIT_ENV, "%s: local rank %d's entry is %zu bytes long", shown, local, len);
        return NULL;
    }
    char *buf = gpurun_xcalloc(len + 1, 1);
    json_error_t jerr;
    json_t *entry = read_at(fd, buf, len, (off_t)off) == 0 ? json_loadb(buf, len, 0, &jerr) : NULL;
    free(buf);
    if (!entry)
        gpurun_err(err, GPURUN_EXIT_ENV, "%s: local rank %d's entry cannot be read", shown, local);
    return entry;
}

/* plan.HOST.json: the plan of this host's ranks.  gpurun writes its own
 * host's; on another host the first rank step to get the lock discovers
 * that host's topology once, plans its ranks with the job's request, and
 * the others read what it wrote (a heterogeneous job plans each host for
 * what it has).  Everything through the run folder's descriptor, and only
 * files of ours are read. */
static char *host_file(const char *host, const char *kind, const char *ext)
{
    char *plan = gpurun_host_plan_name(host); /* plan.SAFE.json */
    char *f = gpurun_xasprintf("%s.%.*s.%s", kind, (int)(strlen(plan) - 10), plan + 5, ext);
    free(plan);
    return f;
}

/* What gpurun_rank_step was started with: gpurun-rank hands a host's
 * planning over to gpurun with them, and the lock it holds as
 * GPURUN_PLAN_LOCK_FD (read, and taken out of the environment, first). */
static const char *step_planner, *step_run_dir;
static char *const *step_app_argv;
static int handed_lock_fd = -1;

void gpurun_host_plan_handover(const char *planner, const char *run_dir, char *const *app_argv, int lock_fd)
{
    step_planner = planner;
    step_run_dir = run_dir;
    step_app_argv = app_argv;
    handed_lock_fd = lock_fd;
}

/* The host's plan lock, held: the one a gpurun-rank handed over (that very
 * file of this run folder, still locked by the open file it passed), or
 * taken now. */
static int plan_lock(int dfd, const char *lock, mode_t fmode)
{
    int fd = handed_lock_fd;
    handed_lock_fd = -1;
    struct stat held, named;
    if (fd > STDERR_FILENO && fstat(fd, &held) == 0 && fstatat(dfd, lock, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
        held.st_dev == named.st_dev && held.st_ino == named.st_ino && S_ISREG(held.st_mode)) {
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        return fd;
    }
    fd = openat(dfd, lock, O_CREAT | O_RDWR | O_NOFOLLOW | O_CLOEXEC, fmode);
    struct stat st;
    /* Whichever step made it, its mode is the run folder's, not the umask's. */
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 07777) != fmode)
        fchmod(fd, fmode);
    if (fd >= 0 && flock(fd, LOCK_EX) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

#ifdef GPURUN_RANK_LEAN
/* Planning a host needs its topology, which is gpurun's work: with the
 * lock held (across exec: flock belongs to the open file), gpurun takes
 * over this rank step and plans.  Returns only when it could not. */
static int plan_handoff(int fd, const char *host, gpurun_error_t *err)
{
    if (!step_planner)
        return gpurun_err(err, GPURUN_EXIT_ENV, "rank step: no gpurun to plan host %s with", host);
    size_t n = 0;
    while (step_app_argv[n])
        n++;
    char **argv = gpurun_xcalloc(n + 6, sizeof *argv); /* and the NULL that ends it */
    argv[0] = (char *)step_planner;
    argv[1] = "rank";
    argv[2] = "--run-dir";
    argv[3] = (char *)step_run_dir;
    argv[4] = "--";
    memcpy(argv + 5, step_app_argv, n * sizeof *argv);
    char num[32];
    snprintf(num, sizeof num, "%d", fd);
    setenv(GPURUN_ENV_PLAN_LOCK_FD, num, 1);
    fcntl(fd, F_SETFD, 0);
    execv(step_planner, argv);
    int e = errno;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    unsetenv(GPURUN_ENV_PLAN_LOCK_FD);
    free(argv);
    return gpurun_err(err, GPURUN_EXIT_ENV, "rank step: cannot run %s to plan host %s: %s", step_planner, host,
                      strerror(e));
}
#endif

#ifndef GPURUN_RANK_LEAN
/* CUDA MPS for this host's ranks that share a GPU, started before its plan
 * is written (the plan says where the ranks find it): the daemon's guard
 * quits it after the host's last rank, so the planner lets go of it. */
static int host_plan_mps(int dfd, const char *run_dir, const char *host, const gpurun_plan_t *p, json_t *gj,
                         json_t *plan, bool plan_only, gpurun_error_t *err)
{
    if (!gpurun_mps_wanted(p))
        return 0;
    enum gpurun_mps_mode mode = gpurun_mps_mode_from_name(json_string_value(json_object_get(gj, "mps")));
    if (plan_only && mode != GPURUN_MPS_OFF) {
        /* A planning step of its own (pyxis): Slurm ends a step's processes
         * with it, so a daemon started here would be gone before the ranks
         * come.  None is started; the record says so. */
        json_object_set_new(plan, "mps",
                            json_pack("{s:s, s:b, s:b, s:b, s:s}", "mode", gpurun_mps_mode_name(mode), "active", 0,
                                      "started", 0, "user_daemon", 0, "note",
                                      "no CUDA MPS daemon on this host: under pyxis it is planned by a step of its "
                                      "own, and a daemon started there would end with that step"));
        return 0;
    }
    struct gpurun_mps m;
    if (gpurun_mps_start(&m, mode, dfd, run_dir, host, p->nranks, err) < 0) {
        char *why = gpurun_xasprintf("%s", err->text);
        gpurun_err(err, err->code, "host %s cannot run its ranks: %s", host, why);
        free(why);
        return -1;
    }
    gpurun_mps_plan_add(&m, mode, plan);
    gpurun_mps_release(&m);
    return 0;
}
#endif

/* Make plan.HOST.json when nobody has yet. */
static int host_plan_make(int dfd, const char *run_dir, const char *host, const char *name, const char *shown,
                          mode_t fmode, bool plan_only, gpurun_error_t *err)
{
    char *lock = host_file(host, "plan", "lock");
    int fd = plan_lock(dfd, lock, fmode);
    if (fd < 0) {
        gpurun_err(err, GPURUN_EXIT_ENV, "rank step: cannot lock %s's plan in %s: %s", host, run_dir, strerror(errno));
        if (fd >= 0)
            close(fd);
        free(lock);
        return -1;
    }
    int rc = 0;
#ifdef GPURUN_RANK_LEAN
    if (faccessat(dfd, name, F_OK, AT_SYMLINK_NOFOLLOW) != 0)
        rc = plan_handoff(fd, host, err);
    (void)run_dir;
    (void)shown;
    (void)plan_only;
#else
    json_t *plan = NULL;
    gpurun_topo_t *topo = NULL;
    if (faccessat(dfd, name, F_OK, AT_SYMLINK_NOFOLLOW) != 0) {
        rc = -1;
        char *rshown = gpurun_xasprintf("%s/%s", run_dir, GPURUN_RUN_REQUEST);
        json_t *rj = gpurun_read_own_json_at(dfd, GPURUN_RUN_REQUEST, rshown, err);
        free(rshown);
        char *gshown = gpurun_xasprintf("%s/%s", run_dir, GPURUN_RUN_GPUDIRECT);
        json_t *gj = rj ? gpurun_read_own_json_at(dfd, GPURUN_RUN_GPUDIRECT, gshown, err) : NULL;
        free(gshown);
        gpurun_request_t req;
        gpurun_plan_t *p = NULL;
        char note[256];
        if (rj && gj && gpurun_topo_load(NULL, &topo, err) == 0) {
            gpurun_request_from_json(&req, rj);
            req.nodes = 1;
            gpurun_alloc_apply(topo, &req, note, sizeof note);
            struct gpurun_kvlist genv = {0};
            const char *k;
            json_t *v;
            json_object_foreach(json_object_get(gj, "env"), k, v) gpurun_kvlist_set(&genv, k, json_string_value(v));
            gpurun_gdr_probe_t *probe = NULL;
            json_t *gdr = NULL;
            if (gpurun_plan_create(topo, &req, &p, err) == 0 &&
                gpurun_gdr_setup(p, gpurun_gdr_mode_from_name(json_string_value(json_object_get(gj, "mode"))),
                                 &genv, &probe, &gdr, err) == 0) {
                plan = gpurun_plan_json(p);
                json_object_set_new(plan, "gpudirect", gdr); /* this host's decision, for the record */
                rc = host_plan_mps(dfd, run_dir, host, p, gj, plan, plan_only, err);
                if (rc == 0)
                    rc = gpurun_write_host_plan_at(dfd, name, shown, plan, fmode, err);
                json_decref(plan);
            } else {
                char *m = gpurun_xasprintf("%s", err->text);
                gpurun_err(err, err->code, "host %s cannot run its ranks: %s", host, m);
                free(m);
            }
            gpurun_gdr_probe_destroy(probe);
            gpurun_kvlist_clear(&genv);
        }
        json_decref(rj);
        json_decref(gj);
        gpurun_plan_destroy(p);
    }
    gpurun_topo_destroy(topo);
#endif
    /* The plan is written (atomically): whoever waits on the lock reads it
     * from now on, so the lock file goes.  The host's topology is in its
     * plan ("topology"): no file more per host. */
    unlinkat(dfd, lock, 0);
    free(lock);
    flock(fd, LOCK_UN);
    close(fd);
    return rc;
}

json_t *gpurun_host_plan_entry(int dfd, const char *run_dir, const char *host, int local, mode_t fmode,
                               gpurun_error_t *err)
{
    char *name = gpurun_host_plan_name(host);
    char *shown = gpurun_xasprintf("%s/%s", run_dir, name);
    json_t *entry = NULL;
    if (faccessat(dfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ||
        host_plan_make(dfd, run_dir, host, name, shown, fmode, false, err) == 0) {
        int fd = gpurun_open_own_at(dfd, name, shown, err);
        if (fd >= 0) {
            gpurun_error_clear(err);
            entry = host_plan_entry(fd, local, shown, err);
            close(fd);
            if (!entry && !err->text[0])
                gpurun_err(err, GPURUN_EXIT_ENV, "rank step: local rank %d is not in %s's plan", local, host);
        }
    }
    free(name);
    free(shown);
    return entry;
}

#ifndef GPURUN_RANK_LEAN
int gpurun_rank_plan_only(const char *run_dir, gpurun_error_t *err)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    char host[256] = "";
    const char *host_env = getenv(GPURUN_ENV_HOST); /* a test launcher playing many hosts on one */
    snprintf(host, sizeof host, "%s", host_env && *host_env ? host_env : "");
    if (!host[0])
        gethostname(host, sizeof host - 1);
    mode_t fmode = 0600;
    int dfd = gpurun_open_run_dir(run_dir, &fmode, err);
    if (dfd < 0) {
        char *why = gpurun_xasprintf("%s", err->text);
        gpurun_err(err, err->code, "host %s cannot run its ranks: %s", host, why);
        free(why);
        return -1;
    }
    char *name = gpurun_host_plan_name(host);
    char *shown = gpurun_xasprintf("%s/%s", run_dir, name);
    /* The host gpurun planned itself already has its plan: nothing to do. */
    int rc = faccessat(dfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0
                 ? 0
                 : host_plan_make(dfd, run_dir, host, name, shown, fmode, true, err);
    if (rc == 0 && faccessat(dfd, name, F_OK, AT_SYMLINK_NOFOLLOW) != 0)
        rc = gpurun_err(err, GPURUN_EXIT_ENV, "host %s cannot run its ranks: %s was not written", host, shown);
    free(name);
    free(shown);
    close(dfd);
    return rc;
}
#endif
