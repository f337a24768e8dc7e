/* SPDX-License-Identifier: BSD-3-Clause */
/* status.json and RESULTS/JOB/latest (runstatus.h): made safely by the run,
 * read back by `gpurun status` with bounded work and the owner checks of
 * the rest of gpurun. */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runstatus.h"
#include "safefile.h"
#include "util.h"

#define JOB_ENTRIES_MAX 100000 /* entries of a folder read, at most */

/* ---- RESULTS/JOB/latest ----------------------------------------------- */

int gpurun_latest_update(int jfd, const char *job_shown, const char *run_name, char *why, size_t whylen)
{
    struct stat st;
    if (fstat(jfd, &st) < 0) {
        snprintf(why, whylen, "%s/%s: not updated: %s", job_shown, GPURUN_LATEST, strerror(errno));
        return -1;
    }
    if (st.st_uid != geteuid()) {
        /* A job folder of root's that we may write (a shared sticky one):
         * its `latest` would be whoever ran last. */
        snprintf(why, whylen, "%s/%s: not made: the job folder is not yours (uid %ld)", job_shown, GPURUN_LATEST,
                 (long)st.st_uid);
        return 1;
    }
    if (fstatat(jfd, GPURUN_LATEST, &st, AT_SYMLINK_NOFOLLOW) == 0 && (!S_ISLNK(st.st_mode) || st.st_uid != geteuid())) {
        snprintf(why, whylen, "%s/%s is %s, not a symlink gpurun made: left alone (the newest run folder is %s/%s)",
                 job_shown, GPURUN_LATEST,
                 !S_ISLNK(st.st_mode) ? (S_ISDIR(st.st_mode) ? "a folder" : "a file") : "another user's symlink",
                 job_shown, run_name);
        return 1;
    }
    static const char digits[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    char tmp[64];
    int e = EEXIST;
    for (int attempt = 0; attempt < 100 && e == EEXIST; attempt++) {
        unsigned char rnd[10];
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
            for (size_t i = 0; i < sizeof rnd; i++)
                rnd[i] = (unsigned char)(rand() ^ getpid() ^ attempt);
        char *p = tmp + snprintf(tmp, sizeof tmp, "." GPURUN_LATEST ".");
        for (size_t i = 0; i < sizeof rnd; i++)
            *p++ = digits[rnd[i] % (sizeof digits - 1)];
        *p = '\0';
        /* symlinkat fails on any name that exists: the O_EXCL of links. */
        e = symlinkat(run_name, jfd, tmp) == 0 ? 0 : errno;
    }
    if (e) {
        snprintf(why, whylen, "%s/%s: not updated: %s", job_shown, GPURUN_LATEST, strerror(e));
        return -1;
    }
    /* rename replaces a symlink (ours, checked above) without following
     * it, and fails on a folder put there since. */
    if (renameat(jfd, tmp, jfd, GPURUN_LATEST) < 0) {
        e = errno;
        unlinkat(jfd, tmp, 0);
        snprintf(why, whylen, "%s/%s: not updated: %s", job_shown, GPURUN_LATEST, strerror(e));
        return -1;
    }
    return 0;
}

/* ---- processes -------------------------------------------------------- */

/* Field 22 of /proc/PID/stat (after the command, which may hold blanks
 * and parentheses: read from the last ')'), 0 when unknown. */
static unsigned long long proc_start(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    p++;
    /* fields 3.. follow: state is field 3, starttime field 22 */
    for (int field = 3; field < 22; field++) {
        p += strspn(p, " ");
        p += strcspn(p, " ");
        if (!*p)
            return 0;
    }
    return strtoull(p, NULL, 10);
}

static void boot_id(char *out, size_t size)
{
    out[0] = '\0';
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, size - 1);
    close(fd);
    out[n > 0 ? n : 0] = '\0';
    out[strcspn(out, "\n")] = '\0';
}

void gpurun_proc_id_self(struct gpurun_proc_id *id)
{
    id->pid = (long)getpid();
    id->start = proc_start(id->pid);
    boot_id(id->boot_id, sizeof id->boot_id);
}

bool gpurun_proc_id_alive(const struct gpurun_proc_id *id)
{
    if (id->pid <= 0 || (kill((pid_t)id->pid, 0) < 0 && errno == ESRCH))
        return false;
    char now[40];
    boot_id(now, sizeof now);
    if (id->boot_id[0] && now[0] && strcmp(now, id->boot_id))
        return false; /* the host was started again since */
    unsigned long long start = proc_start(id->pid);
    return !id->start || !start || start == id->start;
}

/* ---- reading ---------------------------------------------------------- */

const char *gpurun_status_judge(json_t *doc, time_t now, const char *host, char *note, size_t notelen)
{
    note[0] = '\0';
    const char *state = json_string_value(json_object_get(doc, "state"));
    if (!state)
        return "unknown";
    /* A stalled run goes on (on_stall = "report") until it ends: alive,
     * or stale, as a running one; its final status.json has exit_status. */
    bool stalled = !strcmp(state, "stalled") && !json_object_get(doc, "exit_status");
    if (strcmp(state, "running") && !stalled)
        return state;
    const char *alive = stalled ? "stalled" : "running";
    const char *verdict = json_string_value(json_object_get(doc, "stall"));
    if (stalled && verdict)
        snprintf(note, notelen, "%s", verdict); /* the culprit, or the deadlock */
    const char *their = json_string_value(json_object_get(doc, "host"));
    if (their && host && !strcmp(their, host)) {
        struct gpurun_proc_id id = {.pid = (long)json_integer_value(json_object_get(doc, "pid")),
                                    .start = (unsigned long long)json_integer_value(json_object_get(doc, "pid_start"))};
        const char *b = json_string_value(json_object_get(doc, "boot_id"));
        snprintf(id.boot_id, sizeof id.boot_id, "%s", b ? b : "");
        if (!gpurun_proc_id_alive(&id)) {
            snprintf(note, notelen, "its gpurun (pid %ld on %s) is gone: killed, or its host restarted", id.pid,
                     their);
            return "stale";
        }
        return alive;
    }
    json_int_t updated = json_integer_value(json_object_get(doc, "updated_s"));
    json_int_t every = json_integer_value(json_object_get(doc, "interval_s"));
    json_int_t late = 2 * (every > 0 ? every : 600) + 120;
    if (updated > 0 && (json_int_t)now - updated > late) {
        char ago[32];
        long a = (long)((json_int_t)now - updated);
        snprintf(ago, sizeof ago, a >= 3600 ? "%ldh%02ldm" : "%ldm%02lds", a >= 3600 ? a / 3600 : a / 60,
                 a >= 3600 ? a / 60 % 60 : a % 60);
        snprintf(note, notelen, "no update for %s (it writes every %llds; its gpurun on %s cannot be asked from here)",
                 ago, (long long)(every > 0 ? every : 600), their ? their : "?");
        return "stale";
    }
    return alive;
}

/* RUN ids as gpurun makes them: 20250101T000000Z-12. */
static bool run_id_like(const char *s)
{
    for (int i = 0; i < 16; i++) {
        char c = s[i];
        bool want_digit = i != 8 && i != 15;
        if (want_digit ? !isdigit((unsigned char)c) : c != (i == 8 ? 'T' : 'Z'))
            return false;
    }
    if (s[16] != '-' || !isdigit((unsigned char)s[17]))
        return false;
    for (const char *p = s + 17; *p; p++)
        if (!isdigit((unsigned char)*p) || p - s > 24)
            return false;
    return true;
}

/* Newest first: the time, then the number after it. */
static int cmp_runs(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    int c = strncmp(y, x, 16);
    if (c)
        return c;
    long nx = strtol(x + 17, NULL, 10), ny = strtol(y + 17, NULL, 10);
    return ny > nx ? 1 : ny < nx ? -1 : 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names in the folder open as `dirfd` that `want` takes: one readdir,
 * at most JOB_ENTRIES_MAX entries looked at. */
static char **folder_names(int dirfd, bool (*want)(int, const char *), size_t *np)
{
    *np = 0;
    int fd = dup(dirfd);
    DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dp) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    rewinddir(dp);
    char **v = NULL;
    size_t cap = 0;
    struct dirent *de;
    for (size_t seen = 0; (de = readdir(dp)) && seen < JOB_ENTRIES_MAX; seen++) {
        if (de->d_name[0] == '.' || !want(dirfd, de->d_name))
            continue;
        if (*np == cap) {
            cap = cap ? 2 * cap : 32;
            v = gpurun_xrealloc(v, cap * sizeof *v);
        }
        v[(*np)++] = gpurun_xstrdup(de->d_name);
    }
    closedir(dp);
    return v;
}

static void free_names(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static bool want_folder(int dirfd, const char *name)
{
    struct stat st;
    return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

static bool want_run(int dirfd, const char *name)
{
    (void)dirfd; /* the name says it; the folder is checked when opened */
    return run_id_like(name);
}

/* RUN/status.json when RUN is a folder of ours (not a symlink) and the
 * file one of ours of sane size; NULL otherwise (*foreign: not ours). */
static json_t *read_status(int jfd, const char *run, bool *foreign)
{
    *foreign = false;
    int rfd = openat(jfd, run, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (rfd < 0)
        return NULL;
    struct stat st;
    if (fstat(rfd, &st) < 0 || st.st_uid != geteuid()) {
        *foreign = true;
        close(rfd);
        return NULL;
    }
    gpurun_error_t e;
    int fd = gpurun_open_own_at(rfd, GPURUN_RUN_STATUS, GPURUN_RUN_STATUS, &e);
    close(rfd);
    if (fd < 0) {
        *foreign = e.code == GPURUN_EXIT_CONFIG; /* there, but a symlink or not ours */
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0;
    int rc = gpurun_read_fd(fd, GPURUN_RUN_STATUS, "run status", GPURUN_STATUS_FILE_MAX, &buf, &len, &e);
    close(fd);
    json_t *doc = rc == 0 ? json_loadb(buf, len, 0, NULL) : NULL;
    free(buf);
    if (doc && !json_is_object(doc)) {
        json_decref(doc);
        doc = NULL;
    }
    return doc;
}

/* One job folder's runs to show, into `runs`. */
static void scan_job(int rfd, const char *results, const char *job, bool newest_too, time_t now, const char *host,
                     json_t *runs, size_t *skipped)
{
    int jfd = openat(rfd, job, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (jfd < 0)
        return;
    gpurun_error_t e;
    char *shown = gpurun_xasprintf("%s/%s", results, job);
    if (gpurun_check_folder(jfd, shown, "job folder", &e) < 0) {
        (*skipped)++;
        free(shown);
        close(jfd);
        return;
    }
    size_t n = 0;
    char **names = folder_names(jfd, want_run, &n);
    if (n)
        qsort(names, n, sizeof *names, cmp_runs);
    json_t *newest = NULL;
    bool any = false;
    for (size_t i = 0; i < n && i < GPURUN_STATUS_RUNS_MAX; i++) {
        bool foreign;
        json_t *doc = read_status(jfd, names[i], &foreign);
        if (foreign)
            (*skipped)++;
        if (!doc)
            continue;
        char note[512];
        const char *state = gpurun_status_judge(doc, now, host, note, sizeof note);
        json_object_set_new(doc, "shown", json_string(state));
        json_object_set_new(doc, "note", json_string(note));
        json_object_set_new(doc, "run_dir", json_sprintf("%s/%s", shown, names[i]));
        json_object_set_new(doc, "run_id", json_string(names[i]));
        if (!json_object_get(doc, "job"))
            json_object_set_new(doc, "job", json_string(job));
        if (!strcmp(state, "running") || !strcmp(state, "stale") ||
            (!strcmp(state, "stalled") && !json_object_get(doc, "exit_status"))) {
            json_array_append(runs, doc);
            any = true;
        }
        if (!newest)
            newest = json_incref(doc);
        json_decref(doc);
    }
    if (newest_too && !any && newest)
        json_array_append(runs, newest);
    json_decref(newest);
    free_names(names, n);
    free(shown);
    close(jfd);
}

int gpurun_status_scan(const char *results, const char *job, json_t **runsp, size_t *skippedp,
                       gpurun_error_t *err)
{
    *runsp = NULL;
    *skippedp = 0;
    if (job && (!*job || job[0] == '.' || strchr(job, '/')))
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "--job '%s': not a job name", job);
    int rfd = gpurun_open_folder_path(results, "results folder", 0755, false, err);
    if (rfd < 0) {
        if (err->code != GPURUN_EXIT_CONFIG)
            err->code = GPURUN_EXIT_CONFIG;
        return -1;
    }
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    time_t now = time(NULL);
    json_t *runs = json_array();
    if (job) {
        scan_job(rfd, results, job, true, now, host, runs, skippedp);
    } else {
        size_t n = 0;
        char **jobs = folder_names(rfd, want_folder, &n);
        if (n)
            qsort(jobs, n, sizeof *jobs, cmp_names);
        for (size_t i = 0; i < n; i++)
            scan_job(rfd, results, jobs[i], false, now, host, runs, skippedp);
        free_names(jobs, n);
    }
    close(rfd);
    *runsp = runs;
    return 0;
}
