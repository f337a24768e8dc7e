/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_RESULTS_H
#define GPURUN_RESULTS_H

/* The results store (SPEC §7): RESULTS/results.db, an SQLite index of the
 * records RESULTS/JOB/RUN-ID/record.json.  The records are the truth; the
 * database can always be dropped and rebuilt from them, and is brought up
 * to date with them (new records indexed, vanished ones dropped) whenever
 * it is read.  Only results.c sees SQLite. */

#include <jansson.h>

#include "record.h" /* the record's keys and readers, for the callers of results */
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define GPURUN_RESULTS_DB "results.db"
#define GPURUN_RESULTS_SCHEMA 2 /* the schema_version table's value; 2: energy columns (issue 31) */

typedef struct gpurun_results gpurun_results_t;

/* What an indexing pass met.  Warnings are whole sentences naming the
 * record ("RESULTS/j/r/record.json: skipped: not JSON: ..."). */
struct gpurun_results_log {
    size_t indexed; /* records added */
    size_t skipped; /* records that could not be read, each with a warning */
    size_t dropped; /* rows whose record is gone */
    char **warnings;
    size_t nwarnings;
};
void gpurun_results_log_free(struct gpurun_results_log *log);

/* Open (create) RESULTS/results.db.  Where it cannot be written (a folder
 * of someone else's results, a read-only mount), the index is kept in
 * memory for this process and `log` (may be NULL) says so.  A database of
 * an older schema is rebuilt.  Refused with exit 2, and left byte for byte
 * as it is, even with `rebuild`: a results.db that is not gpurun's (not
 * SQLite, or SQLite with tables of its own and no gpurun schema_version),
 * a symlink in place of it or of its -wal, -shm or -journal, one of these
 * owned by another user or writable by others, and a results folder that
 * others can write without the sticky bit (gpurun_check_folder).  A new
 * results.db is made 0644 whatever the umask (its journals take its mode).
 * Errors: exit 2 for a missing folder and the refusals above, 3 otherwise. */
int gpurun_results_open(const char *results_dir, bool rebuild, gpurun_results_t **rp,
                        struct gpurun_results_log *log, gpurun_error_t *err);
void gpurun_results_close(gpurun_results_t *r);

/* Index one record (a path inside the results folder); idempotent on the
 * record's (job, run_id): adding it again replaces the row.  The record is
 * opened through the folder's descriptor, no symlink followed on the way,
 * and must be a regular file of this user's: the index never claims a run
 * whose record is not on disk, or not ours.  Errors: exit 2 for a record
 * that is a symlink, not ours, or not of this folder; 3 for one that
 * cannot be read or is no record, or an index that cannot be written. */
int gpurun_results_index(gpurun_results_t *r, const char *record_path, gpurun_error_t *err);

/* Bring the index up to date with RESULTS/(*)/(*)/record.json; with
 * `rebuild`, drop every row first and index every record again, in one
 * transaction.  A record that cannot be read, a symlink (or in a symlinked
 * folder), or a file of another user (in memory: of neither this user nor
 * the folder's owner) is skipped with a warning naming it (once, until it
 * changes), and its row, if it had one, leaves the index. */
int gpurun_results_sync(gpurun_results_t *r, bool rebuild, struct gpurun_results_log *log,
                        gpurun_error_t *err);

/* The runs (of `job`, or of every job when NULL), by job then start time:
 * a JSON array of the records without their bulk (plan, bindings,
 * rank_status), each with "record": its path relative to the folder. */
int gpurun_results_runs(gpurun_results_t *r, const char *job, json_t **runsp, gpurun_error_t *err);
/* The same runs one at a time, for a folder of any size: fn gets each
 * summary (borrowed: gone when fn returns); a non-zero return stops the
 * walk (negative: an error, returned as -1 with err filled by fn). */
typedef int (*gpurun_results_fn)(json_t *run, void *ctx);
int gpurun_results_each(gpurun_results_t *r, const char *job, gpurun_results_fn fn, void *ctx,
                        gpurun_error_t *err);

/* The jobs of the index, by name: a JSON object {"job": runs}. */
int gpurun_results_jobs(gpurun_results_t *r, json_t **jobsp, gpurun_error_t *err);

/* One call each, for run.c and `gpurun results --rebuild`: run.c calls
 * gpurun_results_add() once record.json is on disk; -1 (err filled, its
 * code as for gpurun_results_open and _index) means the run is not in the
 * index, and the message says why. */
int gpurun_results_add(const char *results_dir, const char *record_path, gpurun_error_t *err);
int gpurun_results_rebuild(const char *results_dir, struct gpurun_results_log *log,
                           gpurun_error_t *err);

/* `s` with every control character written \xNN: what a terminal may be
 * shown of a string from a file. */
char *gpurun_printable(const char *s);

#endif
