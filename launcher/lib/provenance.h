/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_PROVENANCE_H
#define GPURUN_PROVENANCE_H

/* A run's provenance (record key `provenance`): what it ran from, so that
 * `gpurun diff` can say why two runs differ and `gpurun rerun` can run one
 * again as it was.  The job file's and its template's text (and each base
 * the template inherits) are kept in the run folder; the program and the
 * template's inputs are named with their SHA-256 (libcrypto), a large file
 * by its size and a sampled hash. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "error.h"
#include "job.h"
#include "template.h"
#include "util.h"

/* A file up to this size is hashed whole; a larger one by its first,
 * middle and last MiB ("sampled": true). */
#define GPURUN_PROV_WHOLE_MAX (64LL << 20)
#define GPURUN_PROV_SAMPLE (1LL << 20)
/* At most this many inputs named; at most this many bytes hashed whole in
 * one run (the inputs after it are sampled): a run's start stays short. */
#define GPURUN_PROV_INPUTS_MAX 64
#define GPURUN_PROV_WHOLE_BUDGET (512LL << 20)
/* The job's and templates' text kept: the parsers' own limit. */
#define GPURUN_PROV_TEXT_MAX (1024 * 1024)
/* `mpirun --version`: once per gpurun process, at most this long. */
#define GPURUN_PROV_VERSION_TIMEOUT_MS 3000

/* In the run folder, beside record.json. */
#define GPURUN_PROV_JOB_COPY "job.conf"
#define GPURUN_PROV_TEMPLATES_DIR "templates" /* NAME.conf: the template and each base */

struct gpurun_file_hash {
    char sha256[65]; /* lower-case hex */
    long long size;
    bool sampled; /* first, middle and last MiB only */
};

/* SHA-256 of `len` bytes, as hex. */
void gpurun_sha256_hex(const void *data, size_t len, char hex[65]);
/* The hash of the regular file open as `fd` of `size` bytes: whole when
 * size <= whole_max, else sampled.  0, or -1 with err. */
int gpurun_hash_fd(int fd, long long size, long long whole_max, struct gpurun_file_hash *h, gpurun_error_t *err);
/* The same for a path: a regular file (a FIFO or device is refused, never
 * read), opened without blocking. */
int gpurun_hash_file(const char *path, long long whole_max, struct gpurun_file_hash *h, gpurun_error_t *err);

/* What a run's provenance is made of.  Borrowed. */
struct gpurun_prov_in {
    const gpurun_job_t *job;
    const gpurun_template_t *tpl; /* NULL: a job with a command */
    const char *const *sets;      /* the command line's KEY=VALUE overrides, in order */
    size_t nsets;
    const char *program;         /* the program as found (PATH searched); NULL: in a container */
    struct gpurun_kvlist *names; /* what the template's inputs expand with */
    const char *job_dir;         /* absolute */
    const char *driver;          /* the GPU driver's version; NULL: none or unknown */
    int dfd;                     /* the run folder, for the copies */
    mode_t fmode;                /* the run folder's files' mode */
};

/* The record's `provenance` {job {path, sha256, copy}, template {name,
 * path, sha256, copy, bases [...]}, overrides [...], program {path, sha256,
 * size, sampled}, inputs [{path, size, sha256, sampled}], versions
 * {gpurun, mpi, driver; program: set by run.c from the log at the end},
 * notes [...]}, the copies written.  Never fails:
 * what could not be read or kept is null, with a note. */
json_t *gpurun_provenance(const struct gpurun_prov_in *in);

/* The kept copies of run folder `run_dir` for gpurun rerun: *jobp the job
 * file's copy, *tplp the template's (NULL for a job without one), from the
 * record `rec`.  0, or -1 with err (exit 2: a run without them). */
int gpurun_provenance_copies(const json_t *rec, const char *run_dir, char **jobp, char **tplp, gpurun_error_t *err);

/* What changed since the run of record `rec`: its program's and inputs'
 * SHA-256 now (gone, or changed), its job file and template where they
 * were, gpurun's version, and whether `host` (this one) was one of its
 * hosts: a line each, malloc'ed; NULL when nothing did. */
char *gpurun_provenance_changes(const json_t *rec, const char *host);

#endif
