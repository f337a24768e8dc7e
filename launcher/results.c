/* SPDX-License-Identifier: BSD-3-Clause */
/* The results store (SPEC §7): an SQLite index of the run records.
 *
 * Every value reaches SQLite as a bound parameter, never as SQL text.  The
 * database keeps, for each run, the columns a query filters on, its figures
 * of merit (one row each, for users' own SQL) and a summary: the record
 * without its bulk, which is what the commands read back.  It is only an
 * index: whenever it is read it is brought up to date with the records,
 * and --rebuild drops it and reads them all again. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "results.h"
#include "util.h"

#define RECORD_MAX (256u << 20)      /* a record with every rank's binding */
#define MONITOR_KEEP_MAX (64u << 10) /* gpus_monitor kept in the summary below this */
#define BUSY_TIMEOUT_MS 30000        /* a scan's runs and array jobs index at once */
#define NO_INT LONG_MIN

struct gpurun_results {
    sqlite3 *db;
    char *dir;      /* the folder as given */
    char *dir_real; /* realpath() of it */
    bool memory;    /* the folder cannot be written: index in memory */
};

/* ---- warnings --------------------------------------------------------- */

__attribute__((format(printf, 2, 3))) static void warn(struct gpurun_results_log *log,
                                                       const char *fmt, ...)
{
    if (!log)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    if (!s)
        return;
    log->warnings = gpurun_xrealloc(log->warnings, (log->nwarnings + 1) * sizeof *log->warnings);
    log->warnings[log->nwarnings++] = s;
}

void gpurun_results_log_free(struct gpurun_results_log *log)
{
    if (!log)
        return;
    for (size_t i = 0; i < log->nwarnings; i++)
        free(log->warnings[i]);
    free(log->warnings);
    memset(log, 0, sizeof *log);
}

/* ---- reading a record defensively -------------------------------------- */

long gpurun_record_int(const json_t *run, const char *key, long dflt)
{
    json_t *v = json_object_get(run, key);
    if (json_is_integer(v))
        return (long)json_integer_value(v);
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (isfinite(d) && d == floor(d) && fabs(d) < 1e15)
            return (long)d;
    }
    return dflt;
}

double gpurun_record_num(const json_t *run, const char *key)
{
    json_t *v = json_object_get(run, key);
    double d = json_is_number(v) ? json_number_value(v) : NAN;
    return isfinite(d) ? d : NAN;
}

const char *gpurun_record_str(const json_t *run, const char *key)
{
    return json_string_value(json_object_get(run, key));
}

long gpurun_record_gpus(const json_t *run)
{
    long g = gpurun_record_int(run, "gpus", -1);
    if (g >= 0)
        return g;
    long ranks = gpurun_record_int(run, "ranks", -1),
         gpr = gpurun_record_int(run, "gpus_per_rank", -1);
    return ranks >= 0 && gpr >= 0 ? ranks * gpr : -1;
}

bool gpurun_record_fom_value(const json_t *fom, double *v)
{
    json_t *x = json_object_get(fom, "value");
    if (!json_is_number(x)) {
        json_t *vals = json_object_get(fom, "values");
        size_t n = json_is_array(vals) ? json_array_size(vals) : 0;
        x = n ? json_array_get(vals, n - 1) : NULL;
    }
    if (!json_is_number(x) || !isfinite(json_number_value(x)))
        return false;
    *v = json_number_value(x);
    return true;
}

char *gpurun_record_config_text(const json_t *run)
{
    json_t *cfg = json_object_get(run, "config");
    if (!json_is_object(cfg) || json_object_size(cfg) == 0)
        return gpurun_xstrdup("-");
    char *out = gpurun_xstrdup("");
    const char *k;
    json_t *v;
    json_object_foreach(cfg, k, v)
    {
        char *val = json_is_string(v) ? gpurun_xstrdup(json_string_value(v))
                    : json_is_integer(v)
                        ? gpurun_xasprintf("%lld", (long long)json_integer_value(v))
                        : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        char *next = gpurun_xasprintf("%s%s%s=%s", out, *out ? " " : "", k, val ? val : "?");
        free(val);
        free(out);
        out = next;
    }
    return out;
}

char *gpurun_printable(const char *s)
{
    if (!s)
        return gpurun_xstrdup("");
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        n += *p < 0x20 || *p == 0x7f ? 4 : 1;
    char *out = gpurun_xmalloc(n + 1), *o = out;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            o += sprintf(o, "\\x%02x", *p);
        else
            *o++ = (char)*p;
    }
    *o = '\0';
    return out;
}

/* ---- SQLite ------------------------------------------------------------ */

static const char schema_sql[] =
    "CREATE TABLE schema_version(version INTEGER NOT NULL);"
    "CREATE TABLE runs("
    " job TEXT NOT NULL, run_id TEXT NOT NULL,"
    " record TEXT NOT NULL UNIQUE," /* RESULTS-relative path of record.json */
    " template TEXT, state TEXT, exit_status INTEGER, start TEXT, \"end\" TEXT, wall_s REAL,"
    " nodes INTEGER, ranks INTEGER, gpus_per_rank INTEGER, threads_per_rank INTEGER,"
    " gpus INTEGER, gpu_model TEXT, site TEXT, price_per_gpu_hour REAL,"
    " spot_price_per_gpu_hour REAL, currency TEXT,"
    " config TEXT, params TEXT," /* JSON objects */
    " summary TEXT NOT NULL,"    /* the record without plan, bindings, rank_status */
    " PRIMARY KEY (job, run_id));"
    "CREATE INDEX runs_by_start ON runs(job, start);"
    "CREATE TABLE foms("
    " job TEXT NOT NULL, run_id TEXT NOT NULL, name TEXT NOT NULL,"
    " value REAL, units TEXT, better TEXT,"
    " PRIMARY KEY (job, run_id, name));"
    /* Records that could not be read: warned about once, until they change. */
    "CREATE TABLE skipped(record TEXT PRIMARY KEY, mtime INTEGER NOT NULL,"
    " size INTEGER NOT NULL, why TEXT NOT NULL);";

static const char drop_sql[] = "DROP TABLE IF EXISTS foms; DROP TABLE IF EXISTS runs;"
                               "DROP TABLE IF EXISTS skipped; DROP TABLE IF EXISTS schema_version;";

static int db_fail(gpurun_results_t *r, int code, const char *what, gpurun_error_t *err)
{
    return gpurun_err(err, code, "%s/%s: %s: %s", r->dir, GPURUN_RESULTS_DB, what,
                      sqlite3_errmsg(r->db));
}

static int exec(gpurun_results_t *r, const char *sql, gpurun_error_t *err)
{
    if (sqlite3_exec(r->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(r, GPURUN_EXIT_ENV, "cannot update the index", err);
    return 0;
}

static sqlite3_stmt *prepare(gpurun_results_t *r, const char *sql, gpurun_error_t *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) {
        db_fail(r, GPURUN_EXIT_ENV, "cannot read the index", err);
        return NULL;
    }
    return st;
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

static void bind_long(sqlite3_stmt *st, int i, long v)
{
    if (v == NO_INT)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_int64(st, i, v);
}

static void bind_num(sqlite3_stmt *st, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, v);
}

static void bind_json(sqlite3_stmt *st, int i, const json_t *v)
{
    char *s = json_is_object(v) ? json_dumps(v, JSON_COMPACT) : NULL;
    bind_text(st, i, s);
    free(s);
}

/* Runs one statement with its parameters bound; SQLITE_DONE or a row. */
static int step_done(gpurun_results_t *r, sqlite3_stmt *st, gpurun_error_t *err)
{
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        return db_fail(r, GPURUN_EXIT_ENV, "cannot update the index", err);
    return 0;
}

/* WAL lets readers read while a run indexes, but needs shared memory that
 * network and parallel filesystems do not give: there, SQLite's default. */
static bool wal_ok(const char *dir)
{
    static const unsigned long networked[] = {
        0x6969,     /* NFS */
        0x517B,     /* SMB */
        0xFF534D42, /* CIFS */
        0xFE534D42, /* SMB2 */
        0x0BD00BD0, /* Lustre */
        0x47504653, /* GPFS / Spectrum Scale */
        0x19830326, /* BeeGFS */
        0x00C36400, /* CephFS */
        0x5346414F, /* AFS */
        0x01021997, /* 9p */
        0xAAD7AAEA, /* PanFS */
        0x65735546, /* FUSE (sshfs and others) */
    };
    struct statfs fs;
    if (statfs(dir, &fs) < 0)
        return false;
    for (size_t i = 0; i < sizeof networked / sizeof *networked; i++)
        if ((unsigned long)fs.f_type == networked[i])
            return false;
    return true;
}

/* -1 error, 0 no schema, else its version. */
static int schema_version(gpurun_results_t *r)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db,
                           "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "
                           "'schema_version'",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    int have = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    if (have <= 0)
        return have;
    if (sqlite3_prepare_v2(r->db, "SELECT max(version) FROM schema_version", -1, &st, NULL) !=
        SQLITE_OK)
        return -1;
    int v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    return v;
}

static int create_schema(gpurun_results_t *r, gpurun_error_t *err)
{
    char *sql = gpurun_xasprintf("%s%sINSERT INTO schema_version VALUES (%d);", drop_sql,
                                 schema_sql, GPURUN_RESULTS_SCHEMA);
    int rc = exec(r, sql, err);
    free(sql);
    return rc;
}

static void unlink_db(const char *path)
{
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
        char *p = gpurun_xasprintf("%s%s", path, suffixes[i]);
        unlink(p);
        free(p);
    }
}

/* The schema is there and of this version, created or recreated in one
 * transaction so that two processes opening at once agree. */
static int setup_schema(gpurun_results_t *r, bool rebuild, gpurun_error_t *err)
{
    if (exec(r, "BEGIN IMMEDIATE", err) < 0) {
        int code = sqlite3_errcode(r->db);
        if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
            gpurun_err(err, GPURUN_EXIT_ENV,
                       "%s/%s: not a results index gpurun can read (%s): `gpurun results "
                       "--rebuild` recreates it from the records",
                       r->dir, GPURUN_RESULTS_DB, sqlite3_errmsg(r->db));
        return -1;
    }
    int v = schema_version(r);
    int rc = 0;
    if (v < 0)
        rc = db_fail(r, GPURUN_EXIT_ENV,
                     "not a results index gpurun can read (`gpurun results --rebuild` "
                     "recreates it from the records)",
                     err);
    else if (v > GPURUN_RESULTS_SCHEMA && !rebuild)
        rc = gpurun_err(err, GPURUN_EXIT_ENV,
                        "%s/%s: written by a newer gpurun (schema %d; this one reads %d): use "
                        "that gpurun, or `gpurun results --rebuild` to index the records again "
                        "for this one",
                        r->dir, GPURUN_RESULTS_DB, v, GPURUN_RESULTS_SCHEMA);
    else if (v != GPURUN_RESULTS_SCHEMA || rebuild)
        rc = create_schema(r, err);
    if (rc < 0) {
        sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    return exec(r, "COMMIT", err);
}

static int open_db(gpurun_results_t *r, const char *path, gpurun_error_t *err)
{
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    if (sqlite3_open_v2(path, &r->db, flags, NULL) != SQLITE_OK) {
        int rc = gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot open: %s", path,
                            r->db ? sqlite3_errmsg(r->db) : "out of memory");
        sqlite3_close(r->db);
        r->db = NULL;
        return rc;
    }
    sqlite3_busy_timeout(r->db, BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(r->db, 0);
    return 0;
}

int gpurun_results_open(const char *results_dir, bool rebuild, gpurun_results_t **rp,
                        struct gpurun_results_log *log, gpurun_error_t *err)
{
    *rp = NULL;
    struct stat st;
    int serr = stat(results_dir, &st) == 0 ? (S_ISDIR(st.st_mode) ? 0 : ENOTDIR) : errno;
    if (serr == ENOENT || serr == ENOTDIR)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "results folder '%s' not found (runs are kept in RESULTS/JOB/RUN-ID; "
                          "--results DIR names the folder)",
                          results_dir);
    if (serr)
        return gpurun_err(err, GPURUN_EXIT_ENV, "results folder '%s': %s", results_dir,
                          strerror(serr));
    gpurun_results_t *r = gpurun_xcalloc(1, sizeof *r);
    r->dir = gpurun_xstrdup(results_dir);
    char real[PATH_MAX];
    r->dir_real = gpurun_xstrdup(realpath(results_dir, real) ? real : results_dir);
    char *path = gpurun_xasprintf("%s/%s", results_dir, GPURUN_RESULTS_DB);

    bool exists = access(path, F_OK) == 0;
    r->memory = access(results_dir, W_OK) != 0 || (exists && access(path, W_OK) != 0);
    int rc = 0;
    if (r->memory) {
        warn(log, "%s is read-only: the index is kept in memory for this command", path);
        rc = open_db(r, ":memory:", err);
    } else {
        rc = open_db(r, path, err);
        if (rc == 0 && wal_ok(results_dir))
            sqlite3_exec(r->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL); /* or not */
    }
    if (rc == 0 && setup_schema(r, rebuild, err) < 0) {
        rc = -1;
        /* A file that is no database at all: --rebuild starts afresh. */
        if (rebuild && !r->memory) {
            sqlite3_close(r->db);
            r->db = NULL;
            unlink_db(path);
            gpurun_error_clear(err);
            rc = open_db(r, path, err);
            if (rc == 0 && wal_ok(results_dir))
                sqlite3_exec(r->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
            if (rc == 0)
                rc = setup_schema(r, true, err);
        }
    }
    free(path);
    if (rc < 0) {
        gpurun_results_close(r);
        return -1;
    }
    *rp = r;
    return 0;
}

void gpurun_results_close(gpurun_results_t *r)
{
    if (!r)
        return;
    sqlite3_close(r->db);
    free(r->dir);
    free(r->dir_real);
    free(r);
}

/* ---- indexing one record ---------------------------------------------- */

/* The record as the commands read it back: without its bulk. */
static json_t *summary_of(json_t *record, const char *rel)
{
    json_t *s = json_copy(record);
    json_object_del(s, "plan");
    json_object_del(s, "bindings");
    json_object_del(s, "rank_status");
    /* Per-GPU monitoring (monitor.c: a summary per GPU, a few hundred bytes
     * each) is kept for the report; an outsized one stays in the record. */
    json_t *mon = json_object_get(s, "gpus_monitor");
    if (mon) {
        char *d = json_dumps(mon, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!d || strlen(d) > MONITOR_KEEP_MAX)
            json_object_del(s, "gpus_monitor");
        free(d);
    }
    json_object_set_new(s, "record", json_string(rel));
    return s;
}

/* What makes a record indexable; NULL when it is. */
static const char *record_problem(const json_t *rec)
{
    if (!json_is_object(rec))
        return "not a JSON object";
    const char *id = gpurun_record_str(rec, "run_id"), *job = gpurun_record_str(rec, "job");
    if (!id || !*id)
        return "no run_id";
    if (!job || !*job)
        return "no job";
    if (!gpurun_record_str(rec, "state"))
        return "no state";
    return NULL;
}

enum { INDEX_OK, INDEX_SKIPPED, INDEX_ERROR };

/* `replace`: a run already indexed from another record is replaced (an
 * explicit add), else that record is skipped (a sync, which would
 * otherwise flip between the two). */
static int index_record(gpurun_results_t *r, const char *rel, const char *abs, bool replace,
                        char *why, size_t whylen, gpurun_error_t *err)
{
    char *text = NULL;
    size_t len;
    gpurun_error_t rerr = {0};
    /* gpurun_read_file() allocates its limit: the size it has, not 256 MiB. */
    struct stat sb;
    size_t max = stat(abs, &sb) == 0 && sb.st_size >= 0 && (size_t)sb.st_size < RECORD_MAX - 65536
                     ? (size_t)sb.st_size + 65536
                     : RECORD_MAX;
    if (gpurun_read_file(abs, "record", max, &text, &len, &rerr) < 0) {
        size_t n = strnlen(rerr.text, whylen - 1);
        memcpy(why, rerr.text, n);
        why[n] = '\0';
        return INDEX_SKIPPED;
    }
    json_error_t jerr;
    json_t *rec = json_loadb(text, len, 0, &jerr);
    free(text);
    if (!rec) {
        snprintf(why, whylen, "not JSON: line %d column %d: %s", jerr.line, jerr.column, jerr.text);
        return INDEX_SKIPPED;
    }
    const char *problem = record_problem(rec);
    if (problem) {
        snprintf(why, whylen, "not a gpurun record: %s", problem);
        json_decref(rec);
        return INDEX_SKIPPED;
    }
    const char *job = gpurun_record_str(rec, "job"), *id = gpurun_record_str(rec, "run_id");

    int result = INDEX_ERROR;
    sqlite3_stmt *st = NULL;
    json_t *sum = NULL;
    char *sumtext = NULL;
    if (!replace) {
        if (!(st = prepare(r, "SELECT record FROM runs WHERE job = ?1 AND run_id = ?2", err)))
            goto out;
        bind_text(st, 1, job);
        bind_text(st, 2, id);
        if (sqlite3_step(st) == SQLITE_ROW) {
            char *shown = gpurun_printable((const char *)sqlite3_column_text(st, 0));
            snprintf(why, whylen, "the same run (job and run_id) as %s/%s, indexed already", r->dir,
                     shown);
            free(shown);
            result = INDEX_SKIPPED;
            goto out;
        }
        sqlite3_finalize(st);
        st = NULL;
    }
    /* What this record replaces: its figures first, then its row. */
    static const char *const replaced[] = {
        "DELETE FROM foms WHERE (job, run_id) IN (SELECT job, run_id FROM runs "
        "WHERE record = ?1) OR (job = ?2 AND run_id = ?3)",
        "DELETE FROM runs WHERE record = ?1 OR (job = ?2 AND run_id = ?3)",
    };
    for (size_t q = 0; q < sizeof replaced / sizeof *replaced; q++) {
        if (!(st = prepare(r, replaced[q], err)))
            goto out;
        bind_text(st, 1, rel);
        bind_text(st, 2, job);
        bind_text(st, 3, id);
        if (step_done(r, st, err) < 0)
            goto out;
        sqlite3_finalize(st);
        st = NULL;
    }

    if (!(st = prepare(r,
                       "INSERT INTO runs (job, run_id, record, template, state, exit_status, "
                       "start, \"end\", wall_s, nodes, ranks, gpus_per_rank, threads_per_rank, "
                       "gpus, gpu_model, site, price_per_gpu_hour, spot_price_per_gpu_hour, "
                       "currency, config, params, summary) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
                       "?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
                       err)))
        goto out;
    sum = summary_of(rec, rel);
    sumtext = json_dumps(sum, JSON_COMPACT);
    long gpus = gpurun_record_gpus(rec);
    bind_text(st, 1, job);
    bind_text(st, 2, id);
    bind_text(st, 3, rel);
    bind_text(st, 4, gpurun_record_str(rec, "template"));
    bind_text(st, 5, gpurun_record_str(rec, "state"));
    bind_long(st, 6, gpurun_record_int(rec, "exit_status", NO_INT));
    bind_text(st, 7, gpurun_record_str(rec, "start"));
    bind_text(st, 8, gpurun_record_str(rec, "end"));
    bind_num(st, 9, gpurun_record_num(rec, "wall_s"));
    bind_long(st, 10, gpurun_record_int(rec, "nodes", NO_INT));
    bind_long(st, 11, gpurun_record_int(rec, "ranks", NO_INT));
    bind_long(st, 12, gpurun_record_int(rec, "gpus_per_rank", NO_INT));
    bind_long(st, 13, gpurun_record_int(rec, "threads_per_rank", NO_INT));
    bind_long(st, 14, gpus >= 0 ? gpus : NO_INT);
    bind_text(st, 15, gpurun_record_str(rec, "gpu_model"));
    bind_text(st, 16, gpurun_record_str(rec, "site"));
    bind_num(st, 17, gpurun_record_num(rec, "price_per_gpu_hour"));
    bind_num(st, 18, gpurun_record_num(rec, "spot_price_per_gpu_hour"));
    bind_text(st, 19, gpurun_record_str(rec, "currency"));
    bind_json(st, 20, json_object_get(rec, "config"));
    bind_json(st, 21, json_object_get(rec, "params"));
    bind_text(st, 22, sumtext);
    if (step_done(r, st, err) < 0)
        goto out;
    sqlite3_finalize(st);

    if (!(st = prepare(r,
                       "INSERT OR REPLACE INTO foms (job, run_id, name, value, units, better) "
                       "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                       err)))
        goto out;
    const char *name;
    json_t *fom;
    json_object_foreach(json_object_get(rec, "foms"), name, fom)
    {
        double v;
        if (!gpurun_record_fom_value(fom, &v))
            v = NAN; /* the figure was not found: a row saying so */
        sqlite3_reset(st);
        bind_text(st, 1, job);
        bind_text(st, 2, id);
        bind_text(st, 3, name);
        bind_num(st, 4, v);
        bind_text(st, 5, gpurun_record_str(fom, "units"));
        bind_text(st, 6, gpurun_record_str(fom, "better"));
        if (step_done(r, st, err) < 0)
            goto out;
    }
    sqlite3_finalize(st);
    if (!(st = prepare(r, "DELETE FROM skipped WHERE record = ?1", err)))
        goto out;
    bind_text(st, 1, rel);
    if (step_done(r, st, err) < 0)
        goto out;
    result = INDEX_OK;
out:
    sqlite3_finalize(st);
    free(sumtext);
    json_decref(sum);
    json_decref(rec);
    return result;
}

/* RESULTS-relative "JOB/RUN/record.json" of a path, or NULL when it is not
 * a record of this folder. */
static char *relative_record(gpurun_results_t *r, const char *path)
{
    char real[PATH_MAX];
    if (!realpath(path, real))
        return NULL;
    size_t n = strlen(r->dir_real);
    if (strncmp(real, r->dir_real, n) != 0 || real[n] != '/')
        return NULL;
    const char *rel = real + n + 1;
    const char *s1 = strchr(rel, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
    if (!s1 || !s2 || s1 == rel || s2 == s1 + 1 || strcmp(s2 + 1, "record.json") != 0)
        return NULL;
    return gpurun_xstrdup(rel);
}

int gpurun_results_index(gpurun_results_t *r, const char *record_path, gpurun_error_t *err)
{
    char *rel = relative_record(r, record_path);
    if (!rel) {
        if (access(record_path, F_OK) != 0)
            return gpurun_err(err, GPURUN_EXIT_ENV, "%s: %s", record_path, strerror(errno));
        return gpurun_err(
            err, GPURUN_EXIT_CONFIG,
            "%s: not a record of the results folder %s (RESULTS/JOB/RUN-ID/record.json)",
            record_path, r->dir);
    }
    char *abs = gpurun_xasprintf("%s/%s", r->dir_real, rel);
    char why[1024] = "";
    int rc = -1;
    if (exec(r, "BEGIN IMMEDIATE", err) == 0) {
        int res = index_record(r, rel, abs, true, why, sizeof why, err);
        if (res == INDEX_SKIPPED)
            gpurun_err(err, GPURUN_EXIT_ENV, "%s: not indexed: %s", record_path, why);
        if (res == INDEX_OK && exec(r, "COMMIT", err) == 0)
            rc = 0;
        else
            sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
    }
    free(abs);
    free(rel);
    return rc;
}

/* ---- the whole folder -------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of `dir` that are folders, sorted; hidden ones left out. */
static char **subdirs(const char *dir, size_t *np)
{
    *np = 0;
    DIR *dp = opendir(dir);
    if (!dp)
        return NULL;
    char **v = NULL;
    struct dirent *de;
    while ((de = readdir(dp))) {
        if (de->d_name[0] == '.')
            continue;
        char *p = gpurun_xasprintf("%s/%s", dir, de->d_name);
        struct stat st;
        bool is_dir = stat(p, &st) == 0 && S_ISDIR(st.st_mode);
        free(p);
        if (!is_dir)
            continue;
        v = gpurun_xrealloc(v, (*np + 1) * sizeof *v);
        v[(*np)++] = gpurun_xstrdup(de->d_name);
    }
    closedir(dp);
    if (*np)
        qsort(v, *np, sizeof *v, cmp_str);
    return v;
}

static void free_names(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* Whether `st` (?1 the record; ?2, ?3 its mtime and size, if it has them)
 * finds a row. */
static bool row_exists(sqlite3_stmt *st, const char *rel, const struct stat *sb)
{
    sqlite3_reset(st);
    bind_text(st, 1, rel);
    if (sqlite3_bind_parameter_count(st) >= 3) {
        sqlite3_bind_int64(st, 2, (sqlite3_int64)sb->st_mtime);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)sb->st_size);
    }
    return sqlite3_step(st) == SQLITE_ROW;
}

static int sync_folder(gpurun_results_t *r, bool rebuild, struct gpurun_results_log *log,
                       gpurun_error_t *err)
{
    if (rebuild && exec(r, "DELETE FROM foms; DELETE FROM runs; DELETE FROM skipped;", err) < 0)
        return -1;
    if (exec(r, "CREATE TEMP TABLE IF NOT EXISTS seen(record TEXT PRIMARY KEY); DELETE FROM seen;",
             err) < 0)
        return -1;
    sqlite3_stmt *seen = prepare(r, "INSERT OR IGNORE INTO seen VALUES (?1)", err);
    sqlite3_stmt *have = prepare(r, "SELECT 1 FROM runs WHERE record = ?1", err);
    sqlite3_stmt *was_skipped =
        prepare(r, "SELECT 1 FROM skipped WHERE record = ?1 AND mtime = ?2 AND size = ?3", err);
    sqlite3_stmt *skip = prepare(r,
                                 "INSERT OR REPLACE INTO skipped (record, mtime, size, why) "
                                 "VALUES (?1, ?2, ?3, ?4)",
                                 err);
    int rc = seen && have && was_skipped && skip ? 0 : -1;

    size_t njobs = 0;
    char **jobs = rc == 0 ? subdirs(r->dir_real, &njobs) : NULL;
    for (size_t j = 0; rc == 0 && j < njobs; j++) {
        char *jobdir = gpurun_xasprintf("%s/%s", r->dir_real, jobs[j]);
        size_t nruns = 0;
        char **runs = subdirs(jobdir, &nruns);
        for (size_t i = 0; rc == 0 && i < nruns; i++) {
            char *rel = gpurun_xasprintf("%s/%s/record.json", jobs[j], runs[i]);
            char *abs = gpurun_xasprintf("%s/%s", r->dir_real, rel);
            struct stat sb;
            /* A run folder without a record: a run in progress, or one that
             * was killed before it could write it. */
            if (lstat(abs, &sb) == 0) {
                sqlite3_reset(seen);
                bind_text(seen, 1, rel);
                rc = step_done(r, seen, err);
                if (rc == 0 && !row_exists(have, rel, &sb) && !row_exists(was_skipped, rel, &sb)) {
                    char why[1024] = "";
                    int res = index_record(r, rel, abs, false, why, sizeof why, err);
                    if (res == INDEX_OK) {
                        log->indexed++;
                    } else if (res == INDEX_SKIPPED) {
                        char *shown = gpurun_printable(rel);
                        warn(log, "%s/%s: skipped: %s", r->dir, shown, why);
                        free(shown);
                        log->skipped++;
                        sqlite3_reset(skip);
                        bind_text(skip, 1, rel);
                        sqlite3_bind_int64(skip, 2, (sqlite3_int64)sb.st_mtime);
                        sqlite3_bind_int64(skip, 3, (sqlite3_int64)sb.st_size);
                        bind_text(skip, 4, why);
                        rc = step_done(r, skip, err);
                    } else {
                        rc = -1;
                    }
                }
            }
            free(rel);
            free(abs);
        }
        free_names(runs, nruns);
        free(jobdir);
    }
    free_names(jobs, njobs);
    sqlite3_finalize(seen);
    sqlite3_finalize(have);
    sqlite3_finalize(was_skipped);
    sqlite3_finalize(skip);
    if (rc < 0)
        return -1;

    /* Rows whose record is gone: the index follows the records. */
    if (exec(r,
             "DELETE FROM foms WHERE NOT EXISTS (SELECT 1 FROM runs WHERE runs.job = foms.job "
             "AND runs.run_id = foms.run_id AND runs.record IN (SELECT record FROM seen))",
             err) < 0 ||
        exec(r, "DELETE FROM runs WHERE record NOT IN (SELECT record FROM seen)", err) < 0)
        return -1;
    log->dropped += (size_t)sqlite3_changes(r->db);
    return exec(r, "DELETE FROM skipped WHERE record NOT IN (SELECT record FROM seen)", err);
}

int gpurun_results_sync(gpurun_results_t *r, bool rebuild, struct gpurun_results_log *log,
                        gpurun_error_t *err)
{
    struct gpurun_results_log scratch = {0};
    if (!log)
        log = &scratch;
    if (exec(r, "BEGIN IMMEDIATE", err) < 0)
        return -1;
    if (sync_folder(r, rebuild, log, err) < 0 || exec(r, "COMMIT", err) < 0) {
        sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
        gpurun_results_log_free(&scratch);
        return -1;
    }
    gpurun_results_log_free(&scratch);
    return 0;
}

int gpurun_results_runs(gpurun_results_t *r, const char *job, json_t **runsp, gpurun_error_t *err)
{
    *runsp = NULL;
    sqlite3_stmt *st = prepare(r,
                               job ? "SELECT summary FROM runs WHERE job = ?1 ORDER BY start, "
                                     "run_id"
                                   : "SELECT summary FROM runs ORDER BY job, start, run_id",
                               err);
    if (!st)
        return -1;
    if (job)
        bind_text(st, 1, job);
    json_t *runs = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(st, 0);
        json_t *s = text ? json_loads(text, 0, NULL) : NULL;
        if (s)
            json_array_append_new(runs, s);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        json_decref(runs);
        return db_fail(r, GPURUN_EXIT_ENV, "cannot read the index", err);
    }
    *runsp = runs;
    return 0;
}

/* ---- one call each ----------------------------------------------------- */

int gpurun_results_add(const char *results_dir, const char *record_path, gpurun_error_t *err)
{
    gpurun_results_t *r;
    if (gpurun_results_open(results_dir, false, &r, NULL, err) < 0)
        return -1;
    int rc = gpurun_results_index(r, record_path, err);
    gpurun_results_close(r);
    return rc;
}

int gpurun_results_rebuild(const char *results_dir, struct gpurun_results_log *log,
                           gpurun_error_t *err)
{
    gpurun_results_t *r;
    if (gpurun_results_open(results_dir, true, &r, log, err) < 0)
        return -1;
    int rc = gpurun_results_sync(r, true, log, err);
    gpurun_results_close(r);
    return rc;
}
