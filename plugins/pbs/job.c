/* SPDX-License-Identifier: BSD-3-Clause */
/* What a PBS job says of itself: its node file ($PBS_NODEFILE, read safely
 * and bounded), its select statement (qstat -f's Resource_List.select), its
 * standard error (where mom writes why it killed the job), and which
 * mpiexec it has. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pbs_common.h"

/* Distinct host names among those seen: a node file lists each host's
 * lines together, so only a change of name is looked up (at 1,000 hosts,
 * a thousand short searches). */
struct host_set {
    char **names;
    int n;
};

static int host_seen(struct host_set *s, const char *name, size_t len)
{
    for (int i = s->n - 1; i >= 0; i--)
        if (strlen(s->names[i]) == len && !memcmp(s->names[i], name, len))
            return 1;
    if (s->n >= PBS_HOSTS_MAX)
        return -1;
    char **grown = realloc(s->names, (size_t)(s->n + 1) * sizeof *grown);
    if (!grown)
        abort();
    s->names = grown;
    s->names[s->n] = strndup(name, len);
    if (!s->names[s->n])
        abort();
    s->n++;
    return 0;
}

static void host_set_free(struct host_set *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->names[i]);
    free(s->names);
}

/* The file's lines into out; -1 with why for a line no host name can be. */
static int count_hosts(const char *buf, size_t len, struct pbs_nodes *out, char *why, size_t whylen)
{
    struct host_set set = {0};
    const char *prev = NULL;
    size_t prevlen = 0;
    int rc = 0;
    for (size_t at = 0; at < len && rc == 0;) {
        const char *line = buf + at, *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) : len - at;
        at += n + 1;
        if (n == 0)
            continue;
        bool blank = false;
        for (size_t i = 0; i < n && !blank; i++)
            blank = line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\0';
        if (n >= sizeof out->first || blank) {
            snprintf(why, whylen, "line %ld is not a host name", out->slots + 1);
            rc = -1;
            break;
        }
        out->slots++;
        if (prev && prevlen == n && !memcmp(prev, line, n)) {
            if (out->hosts == 1)
                out->first_slots++;
            continue;
        }
        prev = line;
        prevlen = n;
        int seen = host_seen(&set, line, n);
        if (seen < 0) {
            snprintf(why, whylen, "more than %d hosts", PBS_HOSTS_MAX);
            rc = -1;
        } else if (!seen && ++out->hosts == 1) {
            memcpy(out->first, line, n);
            out->first[n] = '\0';
            out->first_slots = 1;
        }
    }
    host_set_free(&set);
    return rc;
}

int pbs_nodefile_read(const char *path, struct pbs_nodes *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    if (!path || path[0] != '/') {
        snprintf(why, whylen, "PBS_NODEFILE is %s", path ? "not an absolute path" : "not set");
        return -1;
    }
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        snprintf(why, whylen, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    const char *no = !S_ISREG(st.st_mode)                          ? "not a regular file"
                     : st.st_uid != 0 && st.st_uid != geteuid()    ? "owned by another user"
                     : (st.st_mode & 022)                          ? "writable by group or others"
                     : st.st_size > PBS_NODEFILE_MAX               ? "larger than 16 MiB"
                                                                   : NULL;
    if (no) {
        snprintf(why, whylen, "%s: %s", path, no);
        close(fd);
        return -1;
    }
    size_t len = (size_t)st.st_size, got = 0;
    char *buf = malloc(len + 1);
    if (!buf)
        abort();
    while (got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    int rc = count_hosts(buf, got, out, why, whylen);
    free(buf);
    if (rc == 0 && out->hosts == 0) {
        snprintf(why, whylen, "%s lists no host", path);
        rc = -1;
    }
    return rc;
}

/* "ncpus=8" of a chunk into *v; 1 when `key` matched, -1 for a bad number. */
static int chunk_number(const char *item, size_t n, const char *key, long *v)
{
    size_t kl = strlen(key);
    if (n <= kl + 1 || strncmp(item, key, kl) || item[kl] != '=')
        return 0;
    char *end;
    errno = 0;
    long x = strtol(item + kl + 1, &end, 10);
    if (errno || x < 0 || end != item + n)
        return -1;
    *v = x;
    return 1;
}

/* One chunk: an optional count, then ":"-separated resources. */
static int chunk_parse(const char *s, size_t n, struct pbs_chunk *c)
{
    *c = (struct pbs_chunk){.count = 1, .ncpus = -1, .ngpus = -1, .mpiprocs = -1};
    size_t at = 0;
    if (n && s[0] >= '0' && s[0] <= '9') {
        char *end;
        errno = 0;
        c->count = strtol(s, &end, 10);
        if (errno || c->count < 1 || (end != s + n && (*end != ':' || end + 1 == s + n)))
            return -1; /* "2:" names no resource */
        at = (size_t)(end - s) + (end != s + n);
    }
    while (at < n) {
        const char *item = s + at;
        size_t il = strcspn(item, ":");
        if (il > n - at)
            il = n - at;
        int r = 0;
        if (!il || memchr(item, '=', il) == NULL)
            return -1;
        if ((r = chunk_number(item, il, "ncpus", &c->ncpus)) == 0 &&
            (r = chunk_number(item, il, "ngpus", &c->ngpus)) == 0)
            r = chunk_number(item, il, "mpiprocs", &c->mpiprocs);
        if (r < 0)
            return -1;
        at += il + 1;
    }
    return 0;
}

int pbs_select_parse(const char *select, struct pbs_chunk *chunks, size_t max, size_t *n, char *why, size_t whylen)
{
    *n = 0;
    size_t len = strlen(select);
    for (size_t at = 0; at <= len;) {
        size_t cl = strcspn(select + at, "+");
        if (*n >= max) {
            snprintf(why, whylen, "more than %zu chunks", max);
            return -1;
        }
        if (cl == 0 || chunk_parse(select + at, cl, &chunks[*n]) < 0) {
            snprintf(why, whylen, "chunk %zu ('%.*s') is not COUNT:RESOURCE=VALUE:...", *n + 1,
                     (int)(cl > 60 ? 60 : cl), select + at);
            return -1;
        }
        (*n)++;
        at += cl + 1;
    }
    return 0;
}

/* The last `len` bytes (at most) of the file open as `fd`, when it is a
 * regular file: read through a descriptor of our own (the job's may be
 * open for writing only), checked to be the same file. */
static size_t file_tail(int fd, char *buf, size_t len)
{
    struct stat st, st2;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
        return 0;
    char self[32];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    int rfd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (rfd < 0)
        return 0;
    size_t got = 0;
    if (fstat(rfd, &st2) == 0 && st2.st_dev == st.st_dev && st2.st_ino == st.st_ino && S_ISREG(st2.st_mode)) {
        off_t from = st2.st_size > (off_t)len ? st2.st_size - (off_t)len : 0;
        ssize_t r = pread(rfd, buf, len, from);
        got = r > 0 ? (size_t)r : 0;
    }
    close(rfd);
    return got;
}

bool pbs_walltime_killed(void)
{
    static const char word[] = "=>> PBS: job killed: walltime ";
    const char *job = getenv("PBS_JOBID");
    if (!job || !*job)
        return false;
    char buf[8192];
    struct stat s1, s2;
    bool same = fstat(1, &s1) == 0 && fstat(2, &s2) == 0 && s1.st_dev == s2.st_dev && s1.st_ino == s2.st_ino;
    for (int fd = 2; fd >= (same ? 2 : 1); fd--) {
        size_t n = file_tail(fd, buf, sizeof buf - 1);
        buf[n] = '\0';
        /* A NUL in the tail would hide what follows from strstr: skip past. */
        for (size_t at = 0; at < n; at += strlen(buf + at) + 1)
            if (strstr(buf + at, word))
                return true;
    }
    return false;
}

bool pbs_mpiexec_is_pals(void)
{
    char *argv[] = {"mpiexec", "--version", NULL};
    char *out = NULL;
    int status = 0, e = 0;
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int rc = gpurun_rm_tool(argv, devnull, 4096, &out, &status, &e);
    if (devnull >= 0)
        close(devnull);
    bool pals = rc == 0 && out && (strstr(out, "PALS") || strstr(out, "Hewlett Packard Enterprise"));
    free(out);
    return pals;
}
