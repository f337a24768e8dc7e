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
#include <fcntl.h>
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

#include "record.h"
#include "results.h"
#include "runstatus.h"
#include "dbfile.h"
#include "safefile.h"
#include "util.h"

#define RECORD_MAX (256u << 20)      /* a record with every rank's binding */
#define MONITOR_KEEP_MAX (64u << 10) /* gpus_monitor kept in the summary below this */
#define BUSY_TIMEOUT_MS 30000        /* a scan's runs and array jobs index at once */
#define NO_INT LONG_MIN

struct gpurun_results {
    sqlite3 *db;
    char *dir;      /* the folder as given */
    char *dir_real; /* realpath() of it */
    int dfd;        /* the folder, open: records and the database are found through it */
    uid_t folder_uid;
    bool memory; /* the folder cannot be written: index in memory */
    sqlite3_stmt *stmts[6]; /* indexing's statements, prepared once (see stmt()) */
};

/* ---- warnings --------------------------------------------------------- */

__attribute__((format(printf, 2, 3))) static void warn(struct gpurun_results_log *log,
                                                       const char *fmt, ...)
{
    if (!log)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *s = gpurun_xvasprintf(fmt, ap);
    va_end(ap);
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
    " energy_J REAL, energy_kwh REAL, energy_cost REAL, co2_g REAL, mean_power_W REAL," /* the record's energy */
    " config TEXT, params TEXT," /* JSON objects */
    " summary TEXT NOT NULL,"    /* the record without plan, bindings, rank_status */
    " PRIMARY KEY (job, run_id));"
    "CREATE INDEX runs_by_start ON runs(job, start);"
    "CREATE TABLE foms("
    " job TEXT NOT NULL, run_id TEXT NOT NULL, name TEXT NOT NULL,"
    " value REAL, units TEXT, better TEXT,"
    " energy_per_unit REAL, energy_units TEXT," /* J per unit of work: 1.2, "J/ns" */
    " PRIMARY KEY (job, run_id, name));"
    /* Records that could not be read: warned about once, until they change. */
    "CREATE TABLE skipped(record TEXT PRIMARY KEY, mtime INTEGER NOT NULL,"
    " size INTEGER NOT NULL, why TEXT NOT NULL);";

static const char drop_sql[] = "DROP TABLE IF EXISTS foms; DROP TABLE IF EXISTS runs;"
                               "DROP TABLE IF EXISTS skipped; DROP TABLE IF EXISTS schema_version;";

static int db_fail(gpurun_results_t *r, int code, const char *what, gpurun_error_t *err)
{
    if (*gpurun_db_vfs_refused())
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: %s", what, gpurun_db_vfs_refused());
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

/* Indexing's statements, prepared on first use and kept: 10,000 records
 * are not 60,000 parses of the same SQL. */
enum { ST_SAME_RUN, ST_DROP_FOMS, ST_DROP_RUN, ST_INSERT_RUN, ST_INSERT_FOM, ST_UNSKIP, ST_COUNT };
static sqlite3_stmt *stmt(gpurun_results_t *r, int id, gpurun_error_t *err)
{
    static const char *const sql[ST_COUNT] = {
        [ST_SAME_RUN] = "SELECT record FROM runs WHERE job = ?1 AND run_id = ?2",
        /* What a record replaces: its figures first, then its row. */
        [ST_DROP_FOMS] = "DELETE FROM foms WHERE (job, run_id) IN (SELECT job, run_id FROM runs "
                         "WHERE record = ?1) OR (job = ?2 AND run_id = ?3)",
        [ST_DROP_RUN] = "DELETE FROM runs WHERE record = ?1 OR (job = ?2 AND run_id = ?3)",
        [ST_INSERT_RUN] = "INSERT INTO runs (job, run_id, record, template, state, exit_status, "
                          "start, \"end\", wall_s, nodes, ranks, gpus_per_rank, threads_per_rank, "
                          "gpus, gpu_model, site, price_per_gpu_hour, spot_price_per_gpu_hour, "
                          "currency, config, params, summary, energy_J, energy_kwh, energy_cost, co2_g, "
                          "mean_power_W) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
                          "?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, "
                          "?25, ?26, ?27)",
        [ST_INSERT_FOM] = "INSERT OR REPLACE INTO foms (job, run_id, name, value, units, better, "
                          "energy_per_unit, energy_units) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        [ST_UNSKIP] = "DELETE FROM skipped WHERE record = ?1",
    };
    _Static_assert(sizeof ((gpurun_results_t *)0)->stmts / sizeof(sqlite3_stmt *) == ST_COUNT, "one per statement");
    if (!r->stmts[id])
        return r->stmts[id] = prepare(r, sql[id], err);
    sqlite3_reset(r->stmts[id]);
    sqlite3_clear_bindings(r->stmts[id]);
    return r->stmts[id];
}

/* Done with them for now: no statement left holding its cursor. */
static void stmts_reset(gpurun_results_t *r)
{
    for (int i = 0; i < ST_COUNT; i++)
        if (r->stmts[i])
            sqlite3_reset(r->stmts[i]);
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

/* What the database holds: -1 unreadable, DB_EMPTY (no table: a file we
 * have just made), DB_FOREIGN (tables, but not gpurun's), else the schema
 * version (1 or more). */
enum { DB_EMPTY = 0, DB_FOREIGN = -2 };
static int schema_version(gpurun_results_t *r)
{
    sqlite3_stmt *st = NULL;
    /* Ours: a schema_version table, and no table of anyone else (but a
     * newer gpurun's, which says so by its version). */
    if (sqlite3_prepare_v2(r->db,
                           "SELECT count(*), sum(name = 'schema_version'), sum(name NOT IN ('schema_version', "
                           "'runs', 'foms', 'skipped')) FROM sqlite_master WHERE type = 'table' AND name NOT "
                           "LIKE 'sqlite\\_%' ESCAPE '\\'",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    int tables = -1, have = 0, others = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        tables = sqlite3_column_int(st, 0);
        have = sqlite3_column_int(st, 1);
        others = sqlite3_column_int(st, 2);
    }
    sqlite3_finalize(st);
    if (tables <= 0)
        return tables < 0 ? -1 : DB_EMPTY;
    if (!have)
        return DB_FOREIGN;
    if (sqlite3_prepare_v2(r->db, "SELECT max(version) FROM schema_version", -1, &st, NULL) != SQLITE_OK)
        return -1;
    int v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    if (v <= 0 || (others && v <= GPURUN_RESULTS_SCHEMA))
        return DB_FOREIGN;
    return v;
}

static int create_schema(gpurun_results_t *r, gpurun_error_t *err)
{
    char *sql = gpurun_xasprintf("%s%sINSERT INTO schema_version VALUES (%d);", drop_sql, schema_sql,
                                 GPURUN_RESULTS_SCHEMA);
    int rc = exec(r, sql, err);
    free(sql);
    return rc;
}

static int not_ours(gpurun_results_t *r, const char *why, gpurun_error_t *err)
{
    return gpurun_err(err, GPURUN_EXIT_CONFIG,
                      "%s/%s: %s: not a results index of gpurun's, so gpurun leaves it as it is; move it "
                      "away (or remove it) and gpurun indexes the records again",
                      r->dir, GPURUN_RESULTS_DB, why);
}

/* The schema is there and of this version, created or recreated in one
 * transaction so that two processes opening at once agree.  A database of
 * someone else's is not touched: nothing is written before it is known to
 * be gpurun's. */
static int setup_schema(gpurun_results_t *r, bool rebuild, gpurun_error_t *err)
{
    if (sqlite3_exec(r->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        int code = sqlite3_errcode(r->db);
        if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
            return not_ours(r, sqlite3_errmsg(r->db), err);
        return db_fail(r, GPURUN_EXIT_ENV, "cannot update the index", err);
    }
    int v = schema_version(r);
    int rc = 0;
    if (v == -1) {
        int code = sqlite3_errcode(r->db);
        rc = code == SQLITE_NOTADB || code == SQLITE_CORRUPT
                 ? not_ours(r, sqlite3_errmsg(r->db), err)
                 : db_fail(r, GPURUN_EXIT_ENV, "cannot read the index", err);
    } else if (v == DB_FOREIGN)
        rc = not_ours(r, "an SQLite database with tables of its own and no gpurun schema_version", err);
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

static int open_db(gpurun_results_t *r, const char *path, int flags, gpurun_error_t *err)
{
    gpurun_db_vfs_clear();
    if (gpurun_db_vfs_register(err) < 0)
        return -1;
    if (sqlite3_open_v2(path, &r->db, flags, strcmp(path, ":memory:") ? GPURUN_DB_VFS : NULL) != SQLITE_OK) {
        int code = r->db ? sqlite3_extended_errcode(r->db) : SQLITE_NOMEM;
        int rc = *gpurun_db_vfs_refused()
                     ? gpurun_err(err, GPURUN_EXIT_CONFIG, "%s", gpurun_db_vfs_refused())
                     : gpurun_err(err, code == SQLITE_CANTOPEN_SYMLINK ? GPURUN_EXIT_CONFIG : GPURUN_EXIT_ENV,
                            "%s: cannot open: %s", path, r->db ? sqlite3_errmsg(r->db) : "out of memory");
        sqlite3_close(r->db);
        r->db = NULL;
        return rc;
    }
    sqlite3_busy_timeout(r->db, BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(r->db, 0);
    /* The WAL and its index stay, files of ours, between commands: deleted
     * at close, each would be a name for someone else to take in a sticky
     * folder until the next gpurun makes it again. */
    int persist = 1;
    sqlite3_file_control(r->db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
    return 0;
}

/* The database and its journals in the folder open as r->dfd: each one
 * there a regular file of ours, writable by nobody else, never a symlink;
 * results.db an SQLite file or empty.  A missing results.db is made here,
 * 0644 whatever the umask (SQLite gives its journals the database's
 * mode).  0, or an error (exit 2) that names the file. */
static int check_db_files(gpurun_results_t *r, gpurun_error_t *err)
{
    static const char *const suffixes[] = {"-wal", "-shm", "-journal", ""};
    for (int attempt = 0; attempt < 2; attempt++) {
        bool missing = false;
        for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
            char name[64];
            snprintf(name, sizeof name, "%s%s", GPURUN_RESULTS_DB, suffixes[i]);
            struct stat sb;
            if (fstatat(r->dfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno != ENOENT)
                    return gpurun_err(err, GPURUN_EXIT_ENV, "%s/%s: %s", r->dir, name, strerror(errno));
                missing = !*suffixes[i];
                continue;
            }
            const char *why = S_ISLNK(sb.st_mode) ? "is a symlink; gpurun does not follow it"
                                                  : gpurun_own_file_problem(&sb);
            if (why)
                return gpurun_err(err, GPURUN_EXIT_CONFIG,
                                  "%s/%s: %s: refused (gpurun keeps its index only in files of its own; "
                                  "move it away, or remove it, and gpurun indexes the records again)",
                                  r->dir, name, why);
            if (*suffixes[i] || sb.st_size == 0)
                continue;
            /* Not SQLite at all: not even opened by SQLite. */
            int fd = openat(r->dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
            char head[16] = {0};
            ssize_t n = fd >= 0 ? read(fd, head, sizeof head) : -1;
            if (fd >= 0)
                close(fd);
            if (n != (ssize_t)sizeof head || memcmp(head, "SQLite format 3", 16) != 0)
                return not_ours(r, n < 0 ? strerror(errno) : "not an SQLite database", err);
        }
        if (!missing)
            return 0;
        if (gpurun_db_create_at(r->dfd, GPURUN_RESULTS_DB, 0644) == 0)
            return 0;
        if (errno == EEXIST)
            continue; /* another gpurun made it just now: check it again */
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s/%s: cannot create: %s", r->dir, GPURUN_RESULTS_DB,
                          strerror(errno));
    }
    return gpurun_err(err, GPURUN_EXIT_ENV, "%s/%s: appears and vanishes; not opened", r->dir, GPURUN_RESULTS_DB);
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
    r->dfd = -1;
    r->dir = gpurun_xstrdup(results_dir);
    char real[PATH_MAX];
    r->dir_real = gpurun_xstrdup(realpath(results_dir, real) ? real : results_dir);
    /* The folder as the user named it (symlinks on the way are theirs);
     * everything in it through this descriptor, never following a link. */
    r->dfd = open(results_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (r->dfd < 0 || fstat(r->dfd, &st) < 0) {
        int rc = gpurun_err(err, GPURUN_EXIT_ENV, "results folder '%s': %s", results_dir, strerror(errno));
        gpurun_results_close(r);
        return rc;
    }
    r->folder_uid = st.st_uid;
    char *path = gpurun_xasprintf("%s/%s", r->dir_real, GPURUN_RESULTS_DB);

    struct stat db;
    bool exists = fstatat(r->dfd, GPURUN_RESULTS_DB, &db, AT_SYMLINK_NOFOLLOW) == 0;
    /* Someone else's results (or a read-only mount): read, never written,
     * even where we could (root; a folder of the group's).  A results.db of
     * ours without write permission is left alone too. */
    r->memory = access(results_dir, W_OK) != 0 || (st.st_uid != geteuid() && st.st_uid != 0) ||
                (exists && S_ISREG(db.st_mode) && db.st_uid == geteuid() && !(db.st_mode & S_IWUSR));
    int rc = 0;
    if (r->memory) {
        warn(log, "%s/%s is read-only: the index is kept in memory for this command", results_dir,
             GPURUN_RESULTS_DB);
        rc = open_db(r, ":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err);
    } else if (gpurun_check_folder(r->dfd, results_dir, "results folder", err) < 0 ||
               check_db_files(r, err) < 0 ||
               /* SQLite opens the WAL index itself, outside the VFS: ours first. */
               (wal_ok(results_dir) && gpurun_db_own_file_at(r->dfd, results_dir, GPURUN_RESULTS_DB "-shm", err) < 0)) {
        rc = -1;
    } else {
        /* Made above: SQLite only opens it, and refuses a symlink (the path
         * is the real one, so only a link in place of results.db counts). */
        rc = open_db(r, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, err);
    }
    if (rc == 0)
        rc = setup_schema(r, rebuild, err);
    /* WAL only once the database is known to be gpurun's: switching writes
     * to the file's header. */
    if (rc == 0 && !r->memory && wal_ok(results_dir))
        sqlite3_exec(r->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL); /* or not */
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
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(r->stmts[i]);
    /* The persistent WAL is not restarted by commits alone: it grew by
     * every run, and every open read all of it again (17 ms of each run's
     * start-up at 140 runs).  Emptied here, without waiting: a reader
     * holding it leaves that to the next command. */
    if (r->db && !r->memory) {
        sqlite3_busy_timeout(r->db, 0);
        sqlite3_wal_checkpoint_v2(r->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    }
    sqlite3_close(r->db);
    if (r->dfd >= 0)
        close(r->dfd);
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
    /* The energy's per-host detail likewise: the totals are always kept. */
    json_t *eh = json_object_get(json_object_get(s, GPURUN_REC_ENERGY), "hosts");
    if (eh) {
        char *d = json_dumps(eh, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!d || strlen(d) > MONITOR_KEEP_MAX)
            json_object_del(json_object_get(s, GPURUN_REC_ENERGY), "hosts");
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
    const char *id = gpurun_record_str(rec, GPURUN_REC_RUN_ID), *job = gpurun_record_str(rec, GPURUN_REC_JOB);
    if (!id || !*id)
        return "no run_id";
    if (!job || !*job)
        return "no job";
    if (!gpurun_record_str(rec, GPURUN_REC_STATE))
        return "no state";
    return NULL;
}

enum { INDEX_OK, INDEX_SKIPPED, INDEX_REFUSED, INDEX_ERROR };

/* Whose records are indexed: ours; in memory (someone else's folder, read
 * only) also the folder owner's. */
static bool owner_ok(const gpurun_results_t *r, uid_t uid)
{
    return uid == geteuid() || (r->memory && uid == r->folder_uid);
}

/* Why the file `sb` is no record to index; NULL when it may be one. */
static const char *record_file_problem(const gpurun_results_t *r, const struct stat *sb, char *buf, size_t n)
{
    if (S_ISLNK(sb->st_mode))
        return "a symlink (gpurun writes records, not links to them)";
    if (!S_ISREG(sb->st_mode))
        return "not a regular file";
    if (!owner_ok(r, sb->st_uid)) {
        snprintf(buf, n, "owned by another user (uid %ld), not by the owner of the results", (long)sb->st_uid);
        return buf;
    }
    return NULL;
}

/* The record RESULTS/JOB/RUN/record.json, opened through the folder's
 * descriptor with no symlink followed on the way, and read whole.  On a
 * problem, INDEX_SKIPPED (cannot be read) or INDEX_REFUSED (not ours, a
 * symlink) with `why`. */
static int read_record(gpurun_results_t *r, const char *rel, char **textp, size_t *lenp, char *why, size_t whylen)
{
    *textp = NULL;
    const char *s1 = strchr(rel, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
    if (!s1 || !s2) {
        snprintf(why, whylen, "not RESULTS/JOB/RUN-ID/record.json");
        return INDEX_REFUSED;
    }
    char *job = gpurun_xstrndup(rel, (size_t)(s1 - rel)), *run = gpurun_xstrndup(s1 + 1, (size_t)(s2 - s1 - 1));
    int jfd = openat(r->dfd, job, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int rfd = jfd >= 0 ? openat(jfd, run, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    int fd = rfd >= 0 ? openat(rfd, s2 + 1, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
    int e = errno;
    free(job);
    free(run);
    if (jfd >= 0)
        close(jfd);
    if (rfd >= 0)
        close(rfd);
    if (fd < 0) {
        bool link = e == ELOOP || e == ENOTDIR;
        snprintf(why, whylen, "%s", link ? "a symlink on the way (gpurun follows none in a results folder)" : strerror(e));
        return link ? INDEX_REFUSED : INDEX_SKIPPED;
    }
    struct stat sb;
    char buf[128];
    const char *problem = fstat(fd, &sb) < 0 ? strerror(errno) : record_file_problem(r, &sb, buf, sizeof buf);
    if (!problem && (size_t)sb.st_size > RECORD_MAX)
        problem = "larger than 256 MiB";
    if (problem) {
        snprintf(why, whylen, "%s", problem);
        close(fd);
        return INDEX_REFUSED;
    }
    gpurun_error_t rerr;
    int rc = gpurun_read_fd(fd, rel, "record", RECORD_MAX, textp, lenp, &rerr);
    close(fd);
    if (rc < 0) {
        /* The caller names the record: its reason only. */
        size_t rl = strlen(rel);
        const char *reason = !strncmp(rerr.text, rel, rl) && !strncmp(rerr.text + rl, ": ", 2) ? rerr.text + rl + 2
                                                                                                 : rerr.text;
        size_t n = strnlen(reason, whylen - 1);
        memcpy(why, reason, n);
        why[n] = '\0';
        return INDEX_SKIPPED;
    }
    return INDEX_OK;
}

/* The record `rel` read and parsed into *recp; on a problem, INDEX_SKIPPED
 * or INDEX_REFUSED with `why`. */
static int load_record(gpurun_results_t *r, const char *rel, json_t **recp, char *why, size_t whylen)
{
    char *text = NULL;
    size_t len;
    *recp = NULL;
    int got = read_record(r, rel, &text, &len, why, whylen);
    if (got != INDEX_OK)
        return got;
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
    *recp = rec;
    return INDEX_OK;
}

/* INDEX_SKIPPED with `why` when the run (job, id) is indexed already from
 * another record; INDEX_OK when it is not; INDEX_ERROR on a database error. */
static int check_same_run(gpurun_results_t *r, const char *job, const char *id, char *why, size_t whylen,
                          gpurun_error_t *err)
{
    sqlite3_stmt *st = stmt(r, ST_SAME_RUN, err);
    if (!st)
        return INDEX_ERROR;
    bind_text(st, 1, job);
    bind_text(st, 2, id);
    if (sqlite3_step(st) != SQLITE_ROW)
        return INDEX_OK;
    char *shown = gpurun_printable((const char *)sqlite3_column_text(st, 0));
    snprintf(why, whylen, "the same run (job and run_id) as %s/%s, indexed already", r->dir, shown);
    free(shown);
    return INDEX_SKIPPED;
}

/* Drops what the record `rel` or the run (job, id) put in the index before. */
static int drop_indexed(gpurun_results_t *r, const char *rel, const char *job, const char *id, gpurun_error_t *err)
{
    static const int replaced[] = {ST_DROP_FOMS, ST_DROP_RUN};
    for (size_t q = 0; q < sizeof replaced / sizeof *replaced; q++) {
        sqlite3_stmt *st = stmt(r, replaced[q], err);
        if (!st)
            return -1;
        bind_text(st, 1, rel);
        bind_text(st, 2, job);
        bind_text(st, 3, id);
        if (step_done(r, st, err) < 0)
            return -1;
    }
    return 0;
}

/* Binds the record's columns of ST_INSERT_RUN after job, run_id, record. */
static void bind_run_columns(sqlite3_stmt *st, const json_t *rec, const char *sumtext)
{
    long gpus = gpurun_record_gpus(rec);
    bind_text(st, 4, gpurun_record_str(rec, GPURUN_REC_TEMPLATE));
    bind_text(st, 5, gpurun_record_str(rec, GPURUN_REC_STATE));
    bind_long(st, 6, gpurun_record_int(rec, GPURUN_REC_EXIT_STATUS, NO_INT));
    bind_text(st, 7, gpurun_record_str(rec, GPURUN_REC_START));
    bind_text(st, 8, gpurun_record_str(rec, GPURUN_REC_END));
    bind_num(st, 9, gpurun_record_num(rec, GPURUN_REC_WALL_S));
    bind_long(st, 10, gpurun_record_int(rec, GPURUN_REC_NODES, NO_INT));
    bind_long(st, 11, gpurun_record_int(rec, GPURUN_REC_RANKS, NO_INT));
    bind_long(st, 12, gpurun_record_int(rec, GPURUN_REC_GPUS_PER_RANK, NO_INT));
    bind_long(st, 13, gpurun_record_int(rec, GPURUN_REC_THREADS_PER_RANK, NO_INT));
    bind_long(st, 14, gpus >= 0 ? gpus : NO_INT);
    bind_text(st, 15, gpurun_record_str(rec, GPURUN_REC_GPU_MODEL));
    bind_text(st, 16, gpurun_record_str(rec, GPURUN_REC_SITE));
    bind_num(st, 17, gpurun_record_num(rec, GPURUN_REC_PRICE_PER_GPU_HOUR));
    bind_num(st, 18, gpurun_record_num(rec, GPURUN_REC_SPOT_PRICE_PER_GPU_HOUR));
    bind_text(st, 19, gpurun_record_str(rec, GPURUN_REC_CURRENCY));
    bind_json(st, 20, json_object_get(rec, GPURUN_REC_CONFIG));
    bind_json(st, 21, json_object_get(rec, GPURUN_REC_PARAMS));
    bind_text(st, 22, sumtext);
    const json_t *energy = json_object_get(rec, GPURUN_REC_ENERGY); /* absent in records before issue 31: NULL columns */
    bind_num(st, 23, gpurun_record_num(energy, "total_J"));
    bind_num(st, 24, gpurun_record_num(energy, "kwh"));
    bind_num(st, 25, gpurun_record_num(energy, "cost"));
    bind_num(st, 26, gpurun_record_num(energy, "co2_g"));
    bind_num(st, 27, gpurun_record_num(energy, "mean_power_W"));
}

/* The run's row, with its summary. */
static int insert_run(gpurun_results_t *r, json_t *rec, const char *rel, const char *job, const char *id,
                      gpurun_error_t *err)
{
    sqlite3_stmt *st = stmt(r, ST_INSERT_RUN, err);
    if (!st)
        return -1;
    json_t *sum = summary_of(rec, rel);
    char *sumtext = json_dumps(sum, JSON_COMPACT);
    bind_text(st, 1, job);
    bind_text(st, 2, id);
    bind_text(st, 3, rel);
    bind_run_columns(st, rec, sumtext);
    int rc = step_done(r, st, err);
    free(sumtext); /* bound SQLITE_TRANSIENT: SQLite keeps its own copy */
    json_decref(sum);
    return rc;
}

/* A row per figure of merit of the run. */
static int insert_foms(gpurun_results_t *r, json_t *rec, const char *job, const char *id, gpurun_error_t *err)
{
    const char *name;
    json_t *fom;
    json_object_foreach(json_object_get(rec, GPURUN_REC_FOMS), name, fom)
    {
        double v;
        if (!gpurun_record_fom_value(fom, &v))
            v = NAN; /* the figure was not found: a row saying so */
        sqlite3_stmt *st = stmt(r, ST_INSERT_FOM, err);
        if (!st)
            return -1;
        bind_text(st, 1, job);
        bind_text(st, 2, id);
        bind_text(st, 3, name);
        bind_num(st, 4, v);
        bind_text(st, 5, gpurun_record_str(fom, GPURUN_REC_FOM_UNITS));
        bind_text(st, 6, gpurun_record_str(fom, GPURUN_REC_FOM_BETTER));
        const json_t *epu = json_object_get(fom, GPURUN_REC_FOM_ENERGY_PER_UNIT);
        bind_num(st, 7, gpurun_record_num(epu, GPURUN_REC_FOM_VALUE));
        bind_text(st, 8, gpurun_record_str(epu, GPURUN_REC_FOM_UNITS));
        if (step_done(r, st, err) < 0)
            return -1;
    }
    return 0;
}

/* `replace`: a run already indexed from another record is replaced (an
 * explicit add), else that record is skipped (a sync, which would
 * otherwise flip between the two). */
static int index_record(gpurun_results_t *r, const char *rel, bool replace, char *why, size_t whylen,
                        gpurun_error_t *err)
{
    json_t *rec;
    int got = load_record(r, rel, &rec, why, whylen);
    if (got != INDEX_OK)
        return got;
    const char *job = gpurun_record_str(rec, GPURUN_REC_JOB), *id = gpurun_record_str(rec, GPURUN_REC_RUN_ID);

    sqlite3_stmt *st;
    int result = replace ? INDEX_OK : check_same_run(r, job, id, why, whylen, err);
    if (result != INDEX_OK)
        goto out;
    result = INDEX_ERROR;
    if (drop_indexed(r, rel, job, id, err) < 0 || insert_run(r, rec, rel, job, id, err) < 0 ||
        insert_foms(r, rec, job, id, err) < 0)
        goto out;
    if (!(st = stmt(r, ST_UNSKIP, err)))
        goto out;
    bind_text(st, 1, rel);
    if (step_done(r, st, err) < 0)
        goto out;
    result = INDEX_OK;
out:
    stmts_reset(r);
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
    struct stat sb;
    if (lstat(record_path, &sb) == 0 && S_ISLNK(sb.st_mode))
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: not indexed: a symlink (gpurun writes records, not links to them)", record_path);
    char *rel = relative_record(r, record_path);
    if (!rel) {
        if (access(record_path, F_OK) != 0)
            return gpurun_err(err, GPURUN_EXIT_ENV, "%s: %s", record_path, strerror(errno));
        return gpurun_err(
            err, GPURUN_EXIT_CONFIG,
            "%s: not a record of the results folder %s (RESULTS/JOB/RUN-ID/record.json)",
            record_path, r->dir);
    }
    char why[1024] = "";
    int rc = -1;
    if (exec(r, "BEGIN IMMEDIATE", err) == 0) {
        int res = index_record(r, rel, true, why, sizeof why, err);
        if (res == INDEX_SKIPPED || res == INDEX_REFUSED)
            gpurun_err(err, res == INDEX_REFUSED ? GPURUN_EXIT_CONFIG : GPURUN_EXIT_ENV, "%s: not indexed: %s",
                       record_path, why);
        if (res == INDEX_OK && exec(r, "COMMIT", err) == 0)
            rc = 0;
        else
            sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
    }
    free(rel);
    return rc;
}

/* ---- the whole folder -------------------------------------------------- */

struct entry {
    char *name;
    bool link; /* a symlink (to a folder or not): not followed, warned about */
    struct stat sb;
};

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

/* The entries of the folder open as `dirfd` that are folders or symlinks,
 * sorted; hidden ones left out.  Nothing is followed. */
static struct entry *subdirs(int dirfd, size_t *np)
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
    struct entry *v = NULL;
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(dp))) {
        if (de->d_name[0] == '.')
            continue;
        struct stat st;
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            !(S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode)))
            continue;
        if (*np == cap) {
            cap = cap ? 2 * cap : 64;
            v = gpurun_xrealloc(v, cap * sizeof *v);
        }
        v[(*np)++] = (struct entry){gpurun_xstrdup(de->d_name), S_ISLNK(st.st_mode), st};
    }
    closedir(dp);
    if (*np)
        qsort(v, *np, sizeof *v, cmp_entry);
    return v;
}

static void free_entries(struct entry *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].name);
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

/* The statements of one pass over the folder, prepared once. */
struct pass {
    sqlite3_stmt *seen, *have, *was_skipped, *skip, *drop_foms, *drop_run;
};

/* `rel` (a record, or a folder in place of one) is seen but not indexed:
 * its row, if any, leaves the index, and it is warned about once, until
 * it changes. */
static int skip_one(gpurun_results_t *r, struct pass *p, const char *rel, const struct stat *sb, const char *why,
                    struct gpurun_results_log *log, gpurun_error_t *err)
{
    for (int q = 0; q < 2; q++) {
        sqlite3_stmt *st = q ? p->drop_run : p->drop_foms;
        sqlite3_reset(st);
        bind_text(st, 1, rel);
        if (step_done(r, st, err) < 0)
            return -1;
        if (q)
            log->dropped += (size_t)sqlite3_changes(r->db);
    }
    if (row_exists(p->was_skipped, rel, sb))
        return 0;
    char *shown = gpurun_printable(rel);
    warn(log, "%s/%s: skipped: %s", r->dir, shown, why);
    free(shown);
    log->skipped++;
    sqlite3_reset(p->skip);
    bind_text(p->skip, 1, rel);
    sqlite3_bind_int64(p->skip, 2, (sqlite3_int64)sb->st_mtime);
    sqlite3_bind_int64(p->skip, 3, (sqlite3_int64)sb->st_size);
    bind_text(p->skip, 4, why);
    return step_done(r, p->skip, err);
}

static int mark_seen(gpurun_results_t *r, struct pass *p, const char *rel, gpurun_error_t *err)
{
    sqlite3_reset(p->seen);
    bind_text(p->seen, 1, rel);
    return step_done(r, p->seen, err);
}

static const char link_why[] = "a symlink (gpurun follows none in a results folder: it makes the folders)";

/* One run folder's record. */
static int sync_run(gpurun_results_t *r, struct pass *p, int jfd, const char *job, const struct entry *run,
                    struct gpurun_results_log *log, gpurun_error_t *err)
{
    char *rel = gpurun_xasprintf("%s/%s/record.json", job, run->name);
    int rc = 0;
    struct stat sb;
    char buf[128];
    if (run->link) {
        rc = mark_seen(r, p, rel, err);
        if (rc == 0)
            rc = skip_one(r, p, rel, &run->sb, link_why, log, err);
    } else {
        char *in = gpurun_xasprintf("%s/record.json", run->name);
        bool there = fstatat(jfd, in, &sb, AT_SYMLINK_NOFOLLOW) == 0;
        free(in);
        /* A run folder without a record: a run in progress, or one that
         * was killed before it could write it. */
        const char *problem = there ? record_file_problem(r, &sb, buf, sizeof buf) : NULL;
        if (there)
            rc = mark_seen(r, p, rel, err);
        if (rc == 0 && problem) {
            rc = skip_one(r, p, rel, &sb, problem, log, err);
        } else if (rc == 0 && there && !row_exists(p->have, rel, &sb) && !row_exists(p->was_skipped, rel, &sb)) {
            char why[1024] = "";
            int res = index_record(r, rel, false, why, sizeof why, err);
            if (res == INDEX_OK)
                log->indexed++;
            else if (res == INDEX_SKIPPED || res == INDEX_REFUSED)
                rc = skip_one(r, p, rel, &sb, why, log, err);
            else
                rc = -1;
        }
    }
    free(rel);
    return rc;
}

static int sync_folder(gpurun_results_t *r, bool rebuild, struct gpurun_results_log *log,
                       gpurun_error_t *err)
{
    if (rebuild && exec(r, "DELETE FROM foms; DELETE FROM runs; DELETE FROM skipped;", err) < 0)
        return -1;
    if (exec(r, "CREATE TEMP TABLE IF NOT EXISTS seen(record TEXT PRIMARY KEY); DELETE FROM seen;",
             err) < 0)
        return -1;
    struct pass p = {
        .seen = prepare(r, "INSERT OR IGNORE INTO seen VALUES (?1)", err),
        .have = prepare(r, "SELECT 1 FROM runs WHERE record = ?1", err),
        .was_skipped = prepare(r, "SELECT 1 FROM skipped WHERE record = ?1 AND mtime = ?2 AND size = ?3", err),
        .skip = prepare(r, "INSERT OR REPLACE INTO skipped (record, mtime, size, why) VALUES (?1, ?2, ?3, ?4)",
                        err),
        .drop_foms = prepare(r,
                             "DELETE FROM foms WHERE (job, run_id) IN (SELECT job, run_id FROM runs WHERE "
                             "record = ?1)",
                             err),
        .drop_run = prepare(r, "DELETE FROM runs WHERE record = ?1", err),
    };
    int rc = p.seen && p.have && p.was_skipped && p.skip && p.drop_foms && p.drop_run ? 0 : -1;

    size_t njobs = 0;
    struct entry *jobs = rc == 0 ? subdirs(r->dfd, &njobs) : NULL;
    for (size_t j = 0; rc == 0 && j < njobs; j++) {
        if (jobs[j].link) { /* a job folder elsewhere: not this folder's */
            rc = mark_seen(r, &p, jobs[j].name, err);
            if (rc == 0)
                rc = skip_one(r, &p, jobs[j].name, &jobs[j].sb, link_why, log, err);
            continue;
        }
        int jfd = openat(r->dfd, jobs[j].name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (jfd < 0)
            continue; /* gone, or not ours to read */
        size_t nruns = 0;
        struct entry *runs = subdirs(jfd, &nruns);
        for (size_t i = 0; rc == 0 && i < nruns; i++)
            if (!(runs[i].link && !strcmp(runs[i].name, GPURUN_LATEST))) /* RESULTS/JOB/latest: no run of its own */
                rc = sync_run(r, &p, jfd, jobs[j].name, &runs[i], log, err);
        free_entries(runs, nruns);
        close(jfd);
    }
    free_entries(jobs, njobs);
    sqlite3_finalize(p.seen);
    sqlite3_finalize(p.have);
    sqlite3_finalize(p.was_skipped);
    sqlite3_finalize(p.skip);
    sqlite3_finalize(p.drop_foms);
    sqlite3_finalize(p.drop_run);
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

int gpurun_results_jobs(gpurun_results_t *r, json_t **jobsp, gpurun_error_t *err)
{
    *jobsp = NULL;
    sqlite3_stmt *st = prepare(r, "SELECT job, count(*) FROM runs GROUP BY job ORDER BY job", err);
    if (!st)
        return -1;
    json_t *jobs = json_object();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (name)
            json_object_set_new(jobs, name, json_integer(sqlite3_column_int64(st, 1)));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        json_decref(jobs);
        return db_fail(r, GPURUN_EXIT_ENV, "cannot read the index", err);
    }
    *jobsp = jobs;
    return 0;
}

int gpurun_results_each(gpurun_results_t *r, const char *job, gpurun_results_fn fn, void *ctx,
                        gpurun_error_t *err)
{
    sqlite3_stmt *st = prepare(r,
                               job ? "SELECT summary FROM runs WHERE job = ?1 ORDER BY start, run_id"
                                   : "SELECT summary FROM runs ORDER BY job, start, run_id",
                               err);
    if (!st)
        return -1;
    if (job)
        bind_text(st, 1, job);
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(st, 0);
        int len = sqlite3_column_bytes(st, 0);
        json_t *s = text ? json_loadb(text, (size_t)len, 0, NULL) : NULL;
        if (s)
            stop = fn(s, ctx);
        json_decref(s);
    }
    sqlite3_finalize(st);
    if (stop < 0)
        return -1;
    if (!stop && rc != SQLITE_DONE)
        return db_fail(r, GPURUN_EXIT_ENV, "cannot read the index", err);
    return 0;
}

static int append_run(json_t *run, void *runs)
{
    json_array_append(runs, run);
    return 0;
}

int gpurun_results_runs(gpurun_results_t *r, const char *job, json_t **runsp, gpurun_error_t *err)
{
    json_t *runs = json_array();
    *runsp = NULL;
    if (gpurun_results_each(r, job, append_run, runs, err) < 0) {
        json_decref(runs);
        return -1;
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
