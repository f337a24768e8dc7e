/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inputs.h"

/* ---- GROMACS run input (.tpr) ------------------------------------------- */

/* The header as tpxio.cpp writes it (XDR, big-endian): the version string,
 * the precision of reals, the file version and generation, a tag, natoms,
 * ngtc, the FEP state and lambda, six presence flags, and from file version
 * 119 (tpxv_AddSizeField, GROMACS 2020) with generation 27 the body's size
 * in bytes as a 64-bit integer; the body follows. */
struct xdr {
    const unsigned char *b;
    size_t n, pos;
    bool short_;
};

static int64_t xdr_int(struct xdr *x, int bytes)
{
    if (x->pos + (size_t)bytes > x->n) {
        x->short_ = true;
        x->pos = x->n;
        return -1;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | x->b[x->pos + (size_t)i];
    x->pos += (size_t)bytes;
    return bytes == 4 ? (int64_t)(int32_t)(uint32_t)v : (int64_t)v;
}

/* gmx_fio_do_string: the length with its terminator, then an XDR string
 * (length, bytes padded to 4).  The text's start into `text`. */
static bool xdr_string(struct xdr *x, char *text, size_t size)
{
    int64_t whole = xdr_int(x, 4), len = xdr_int(x, 4);
    if (x->short_ || len < 0 || len > 1024 || whole != len + 1)
        return false;
    size_t padded = ((size_t)len + 3) / 4 * 4;
    if (x->pos + padded > x->n) {
        x->short_ = true;
        return false;
    }
    size_t keep = (size_t)len < size - 1 ? (size_t)len : size - 1;
    memcpy(text, x->b + x->pos, keep);
    text[keep] = '\0';
    x->pos += padded;
    return true;
}

int gpurun_tpr_check(const unsigned char *b, size_t n, off_t size, char *why, size_t wsize)
{
    struct xdr x = {.b = b, .n = n};
    char text[64];
    if (!xdr_string(&x, text, sizeof text) || strncmp(text, "VERSION", 7) != 0) {
        snprintf(why, wsize, "is not a GROMACS run input (.tpr): it does not start with one's header%s",
                 size < 64 ? " (it is nearly empty)" : "");
        return -1;
    }
    int64_t precision = xdr_int(&x, 4), version = xdr_int(&x, 4);
    if (precision != 4 && precision != 8) {
        snprintf(why, wsize, "is not a GROMACS run input (.tpr): its header gives reals of %lld bytes", (long long)precision);
        return -1;
    }
    if (version < 58 || version > 100000) {
        snprintf(why, wsize, "is not a run input GROMACS 4.0 or later wrote (file version %lld)", (long long)version);
        return -1;
    }
    if (version >= 77 && version <= 79 && !xdr_string(&x, text, sizeof text))
        goto cut;
    int64_t generation = xdr_int(&x, 4);
    if (version >= 81 && !xdr_string(&x, text, sizeof text))
        goto cut;
    int64_t natoms = xdr_int(&x, 4), ngtc = xdr_int(&x, 4);
    if (x.short_)
        goto cut;
    if (natoms <= 0 || ngtc < 0) {
        snprintf(why, wsize, "is not a run input GROMACS can start: its header gives %lld atoms", (long long)natoms);
        return -1;
    }
    if (version < 62)
        x.pos += 4 + (size_t)precision;
    if (version >= 79)
        xdr_int(&x, 4);
    x.pos += (size_t)precision; /* lambda */
    for (int i = 0; i < 6; i++)
        xdr_int(&x, 4);
    if (x.short_ || x.pos > n)
        goto cut;
    if (version >= 119 && generation >= 27) {
        int64_t body = xdr_int(&x, 8);
        if (x.short_)
            goto cut;
        off_t have = size - (off_t)x.pos;
        if (body < 0 || (off_t)body > have) {
            snprintf(why, wsize,
                     "is cut short: its header announces %lld bytes of body, the file holds %lld (a copy or "
                     "transfer that did not finish?)",
                     (long long)body, (long long)have);
            return -1;
        }
    }
    return 0;
cut:
    snprintf(why, wsize, "is cut short: the file (%lld bytes) ends inside its header", (long long)size);
    return -1;
}

/* ---- the inputs ---------------------------------------------------------- */

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !strcmp(s + n - t, tail);
}

/* "job.conf:12: key 'params.tpr'" and the like: where input `i`'s value
 * comes from. */
static char *input_origin(const gpurun_template_t *t, const gpurun_job_t *job, size_t i)
{
    char name[128];
    if (gpurun_template_input_name(t->inputs[i], name, sizeof name)) {
        char *key = gpurun_xasprintf("params.%s", name);
        char *o = NULL;
        if (gpurun_kvlist_get(&job->params, name))
            o = gpurun_xasprintf("%s: key '%s'", gpurun_job_origin(job, key), key);
        free(key);
        if (o)
            return o;
        if (gpurun_kvlist_get(&t->defaults, name)) {
            if (t->defaults_line)
                return gpurun_xasprintf("%s:%d: key 'defaults.%s' (the template's default; a job sets params.%s)",
                                        t->path, t->defaults_line, name, name);
            return gpurun_xasprintf("%s: key 'defaults.%s' (the template's default; a job sets params.%s)", t->path,
                                    name, name);
        }
    }
    if (t->inputs_line)
        return gpurun_xasprintf("%s:%d: key 'inputs', item %zu", t->path, t->inputs_line, i + 1);
    return gpurun_xasprintf("%s: key 'inputs', item %zu", t->path, i + 1);
}

/* Where other hosts usually cannot see `path`: a reason, or NULL. */
static const char *unseen_elsewhere(const char *path, char *fs, size_t size)
{
    static const char *const private_dirs[] = {"/tmp/", "/var/tmp/", "/dev/shm/", "/run/user/"};
    for (size_t i = 0; i < sizeof private_dirs / sizeof *private_dirs; i++)
        if (!strncmp(path, private_dirs[i], strlen(private_dirs[i]))) {
            snprintf(fs, size, "%.*s", (int)strlen(private_dirs[i]) - 1, private_dirs[i]);
            return "a folder every host has its own of";
        }
    if (gpurun_shared_fs(path, fs, size) == 0)
        return "a file system of this host's own";
    return NULL;
}

static int check_one(const gpurun_template_t *t, const gpurun_job_t *job, size_t i, const char *path,
                     const char *as_given, char **warnings, gpurun_error_t *err)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    int e = errno;
    struct stat st;
    const char *problem = NULL;
    bool missing = fd < 0 && (e == ENOENT || e == ENOTDIR);
    char why[512] = "";
    if (fd < 0)
        problem = e == ENOENT    ? "does not exist"
                  : e == EACCES  ? "cannot be read by you (permission denied)"
                  : e == ENOTDIR ? "does not exist (a part of its path is not a folder)"
                                 : strerror(e);
    else if (fstat(fd, &st) < 0)
        problem = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        problem = S_ISDIR(st.st_mode) ? "is a folder, not a file" : "is not a regular file";
    else if (ends_with(path, ".tpr")) {
        unsigned char head[512];
        ssize_t n = pread(fd, head, sizeof head, 0);
        if (n < 0)
            problem = strerror(errno);
        else if (gpurun_tpr_check(head, (size_t)n, st.st_size, why, sizeof why) < 0)
            problem = why;
    }
    if (fd >= 0)
        close(fd);
    if (problem) {
        char *where = input_origin(t, job, i);
        char *shown = strcmp(as_given, path) ? gpurun_xasprintf("'%s' (%s)", as_given, path) : gpurun_xstrdup(path);
        gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: input file %s %s%s; nothing was started", where, shown, problem,
                   missing && as_given[0] != '/' ? " (a relative path is the job file's folder's)" : "");
        free(shown);
        free(where);
        return -1;
    }
    char fs[64];
    const char *unseen = warnings ? unseen_elsewhere(path, fs, sizeof fs) : NULL;
    if (unseen) {
        char *line = gpurun_xasprintf("%sinput file %s is on %s (%s): compute nodes usually cannot see it\n",
                                      *warnings ? *warnings : "", path, fs, unseen);
        free(*warnings);
        *warnings = line;
    }
    return 0;
}

char *gpurun_input_path(const gpurun_template_t *t, size_t i, const char *job_dir, struct gpurun_kvlist *names,
                        char **expandedp, gpurun_error_t *err)
{
    char *what = gpurun_xasprintf("%s: key 'inputs', item %zu", t->path, i + 1);
    char *path = NULL;
    int rc = gpurun_expand(t->inputs[i], gpurun_kvlist_lookup, names, what, &path, err);
    free(what);
    if (rc < 0)
        return NULL;
    char *full = !*path || path[0] == '/'
                     ? gpurun_xstrdup(path)
                     : gpurun_xasprintf("%s/%s", job_dir, strncmp(path, "./", 2) ? path : path + 2);
    if (expandedp)
        *expandedp = path;
    else
        free(path);
    return full;
}

int gpurun_inputs_check(const gpurun_template_t *t, const gpurun_job_t *job, const char *job_dir,
                        struct gpurun_kvlist *names, char **warnings, gpurun_error_t *err)
{
    for (size_t i = 0; t && i < t->ninputs; i++) {
        char *path = NULL, *full = gpurun_input_path(t, i, job_dir, names, &path, err);
        if (!full)
            return -1;
        if (!*full) {
            free(full);
            free(path);
            continue;
        }
        /* What the user wrote, for the message: the param's own value. */
        char name[128];
        const char *given = NULL;
        if (gpurun_template_input_name(t->inputs[i], name, sizeof name))
            given = gpurun_kvlist_get(&job->params, name) ? gpurun_kvlist_get(&job->params, name)
                                                           : gpurun_kvlist_get(&t->defaults, name);
        int rc = check_one(t, job, i, full, given ? given : path, warnings, err);
        free(full);
        free(path);
        if (rc < 0)
            return -1;
    }
    return 0;
}
