/* SPDX-License-Identifier: BSD-3-Clause */
/* Site profiles (SPEC §4), the results store and the report (SPEC §7):
 * profiles good and bad, every shipped profile, the SQLite index (add,
 * idempotence, rebuild, a corrupt record, hostile strings), the report's
 * arithmetic on hand-made records, and the escaping of SVG and HTML. */
#include "config.h"

#include <errno.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "plugin.h" /* the names of the plugins present */
#include "report.h"
#include "results.h"
#include "site.h"
#include "tap.h"

#define near(got, want, eps, ...)                                                                  \
    (ok(fabs((got) - (want)) <= (eps), __VA_ARGS__)                                                \
         ? 1                                                                                       \
         : (printf("#   got:  %.6g\n#   want: %.6g\n", (double)(got), (double)(want)), 0))

static const char *srcdir(void)
{
    const char *d = getenv("top_srcdir");
    return d && *d ? d : ".";
}

/* ---- site profiles ---------------------------------------------------- */

static gpurun_site_t *site_ok(const char *text, const char *what)
{
    gpurun_site_t *s = NULL;
    gpurun_error_t err = {0};
    int rc = gpurun_site_parse(text, strlen(text), "sites/s.conf", &s, &err);
    if (!ok(rc == 0 && s, "%s: parses", what))
        diag("error: %s", err.text);
    return rc == 0 ? s : NULL;
}

static void test_site_good(void)
{
    setenv("USER", "EVIL", 1); /* libconfuse must not expand ${USER} */
    gpurun_site_t *s = site_ok("# a cluster\n"
                               "description = \"Uni HPC: 4 x A100 per node\"\n"
                               "scheduler = \"slurm\"\n"
                               "launcher  = \"srun\"\n"
                               "partition = \"gpu\"\n"
                               "account   = \"proj-1\"\n"
                               "modules   = { \"gcc/12.2.0\", \"cuda/12.4\" }\n"
                               "sbatch    = { \"--qos=normal\", \"--exclusive\" }\n"
                               "gpus_per_node = 4\n"
                               "scratch   = \"/scratch/${USER}\"\n"
                               "price_per_gpu_hour = 2.5\n"
                               "spot_price_per_gpu_hour = 1\n"
                               "currency  = \"EUR\"\n",
                               "every key");
    if (s) {
        is_str(s->name, "s", "name from the file name");
        is_str(s->path, "sites/s.conf", "path");
        is_str(s->description, "Uni HPC: 4 x A100 per node", "description");
        is_str(s->scheduler, "slurm", "scheduler");
        is_str(s->launcher, "srun", "launcher");
        is_str(s->partition, "gpu", "partition");
        is_str(s->account, "proj-1", "account");
        ok(s->nmodules == 2 && !strcmp(s->modules[0], "gcc/12.2.0") &&
               !strcmp(s->modules[1], "cuda/12.4"),
           "modules, in order");
        ok(s->nbatch_options == 2 && !strcmp(s->batch_options[0], "--qos=normal"), "sbatch lines");
        is_int(s->gpus_per_node, 4, "gpus_per_node");
        is_str(s->scratch, "/scratch/${USER}", "scratch keeps ${USER} for the batch script");
        ok(s->price_per_gpu_hour == 2.5 && s->spot_price_per_gpu_hour == 1.0, "prices");
        is_str(s->currency, "EUR", "currency");
    }
    gpurun_site_destroy(s);
    unsetenv("USER");

    s = site_ok("description = \"a workstation\"\n", "description alone");
    if (s) {
        is_str(s->scheduler, "none", "default scheduler: none");
        is_str(s->launcher, "auto", "default launcher: auto");
        ok(!s->partition && !s->account && !s->scratch && s->nmodules == 0 && s->nbatch_options == 0,
           "optional keys absent");
        ok(s->gpus_per_node == -1 && s->price_per_gpu_hour < 0 && s->spot_price_per_gpu_hour < 0,
           "unknown GPUs and prices are negative");
        is_str(s->currency, "USD", "default currency");
    }
    gpurun_site_destroy(s);
}

static void test_site_bad(void)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"description = \"d\"\npartiton = \"gpu\"\n",
         "s.conf:2: unknown key 'partiton' (did you mean 'partition'?)"},
        {"description = \"d\"\nscheduler = \"slrum\"\n",
         "s.conf:2: key 'scheduler': 'slrum' is not one of slurm, flux, pbs, none (did you mean 'slurm'?)"},
        {"launcher = \"lsf\"\n",
         "s.conf:1: key 'launcher': 'lsf' is not one of auto, mpirun, srun, flux, pbs, local"},
        {"gpus_per_node = \"four\"\n",
         "s.conf:1: key 'gpus_per_node': expected an integer, got 'four'"},
        {"gpus_per_node = 5000\n",
         "s.conf:1: key 'gpus_per_node': 5000 is out of range (0 to 1024)"},
        {"gpus_per_node = {4, 8}\n",
         "s.conf:1: key 'gpus_per_node': expected one value, not a list"},
        {"price_per_gpu_hour = -1\n",
         "s.conf:1: key 'price_per_gpu_hour': -1 is out of range (0 to 1000000)"},
        {"spot_price_per_gpu_hour = \"$4\"\n",
         "s.conf:1: key 'spot_price_per_gpu_hour': expected a price per GPU-hour such as 4.50 (a "
         "number without a currency sign: the key 'currency' names it), got '$4'"},
        {"price_per_gpu_hour = nan\n",
         "s.conf:1: key 'price_per_gpu_hour': expected a price per GPU-hour such as 4.50 (a "
         "number without a currency sign: the key 'currency' names it), got 'nan'"},
        {"description = \"d\"\ncurrency = \"usd\"\n",
         "s.conf:2: key 'currency': 'usd' is not an ISO 4217 currency code (three capital "
         "letters, such as USD or EUR)"},
        {"description = \"d\"\nsbatch = { \"--qos=normal\", \"#SBATCH --exclusive\" }\n",
         "s.conf:2: key 'sbatch', item 2: '#SBATCH --exclusive' is not an sbatch option: write "
         "the option alone, as in \"--qos=normal\" (gpurun adds '#SBATCH')"},
        {"description = \"d\"\nmodules = { \"gcc/12\", \"cuda 12\" }\n",
         "s.conf:2: key 'modules', item 2: 'cuda 12' is not a module name (letters, digits, "
         "'/', '.', '_', '+', '-', ':', '@'; one module per item, as in \"cuda/12.4\")"},
        {"description = \"d\"\npartition = \"a\"\npartition = \"b\"\n",
         "s.conf:3: key 'partition': given twice (first on line 2)"},
        {"description = \"d\"\nscheduler = \"none\"\naccount = \"p\"\n",
         "s.conf:3: key 'account': contradicts 'scheduler' on line 2: scheduler \"none\" has "
         "no accounts"},
        {"description = \"d\"\nlauncher = \"srun\"\nscheduler = \"none\"\n",
         "s.conf:3: key 'scheduler': contradicts 'launcher' on line 2: srun needs scheduler "
         "\"slurm\""},
        {"description = \"d\"\nscratch = \"scratch/me\"\n",
         "s.conf:2: key 'scratch': 'scratch/me' is not an absolute path (a folder such as "
         "\"/scratch/${USER}\")"},
        {"description = \"d\"\naccount = \"a\tb\"\n",
         "s.conf:2: key 'account': control character 0x09 (tab) in the value"},
        {"scheduler = \"slurm\"\n",
         "s.conf: key 'description' missing: one line naming the site and its machines"},
        {"description = \"d\"\npartition = \"gpu\n",
         "s.conf:2: unterminated string: the '\"' here is never closed"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gpurun_site_t *s = NULL;
        gpurun_error_t err = {0};
        int rc = gpurun_site_parse(cases[i].text, strlen(cases[i].text), "s.conf", &s, &err);
        ok(rc == -1 && !s && err.code == GPURUN_EXIT_CONFIG, "bad profile %zu: refused, exit 2",
           i + 1);
        is_str(err.text, cases[i].want, "bad profile %zu: message", i + 1);
        gpurun_site_destroy(s);
    }
}

/* Every profile shipped in templates/sites parses, found by name. */
static void test_site_shipped(void)
{
    char *tpath = NULL, *sites = NULL;
    if (asprintf(&tpath, "%s/templates", srcdir()) < 0 || asprintf(&sites, "%s/sites", tpath) < 0) {
        ok(0, "asprintf");
        return;
    }
    setenv("GPURUN_TEMPLATE_PATH", tpath, 1);
    static const char *const shipped[] = {"local", "example-univ", "aws-p5en"};
    for (size_t i = 0; i < sizeof shipped / sizeof *shipped; i++) {
        gpurun_site_t *s = NULL;
        gpurun_error_t err = {0};
        if (!ok(gpurun_site_load(shipped[i], NULL, &s, &err) == 0 && s, "shipped site %s loads",
                shipped[i]))
            diag("error: %s", err.text);
        if (s)
            is_str(s->name, shipped[i], "site %s: its name", shipped[i]);
        gpurun_site_destroy(s);
    }
    /* And any other profile in the folder. */
    DIR *dp = opendir(sites);
    struct dirent *de;
    size_t n = 0;
    while (dp && (de = readdir(dp))) {
        size_t len = strlen(de->d_name);
        if (len <= 5 || strcmp(de->d_name + len - 5, ".conf") != 0)
            continue;
        char *name = strndup(de->d_name, len - 5);
        gpurun_site_t *s = NULL;
        gpurun_error_t err = {0};
        if (!ok(gpurun_site_load(name, NULL, &s, &err) == 0, "templates/sites/%s parses",
                de->d_name))
            diag("error: %s", err.text);
        gpurun_site_destroy(s);
        free(name);
        n++;
    }
    if (dp)
        closedir(dp);
    ok(n >= 3, "templates/sites holds the shipped profiles (%zu)", n);

    gpurun_site_t *s = NULL;
    gpurun_error_t err = {0};
    if (gpurun_site_load("aws-p5en", NULL, &s, &err) == 0) {
        ok(s->price_per_gpu_hour > 0 && s->spot_price_per_gpu_hour > 0 &&
               s->spot_price_per_gpu_hour < s->price_per_gpu_hour && s->gpus_per_node == 8,
           "aws-p5en: on-demand and spot prices, 8 GPUs");
        gpurun_site_destroy(s);
    }
    if (gpurun_site_load("example-univ", NULL, &s, &err) == 0) {
        ok(!strcmp(s->scheduler, "slurm") && s->partition && !strcmp(s->partition, "gpu") &&
               s->account && s->nmodules > 0 && s->nbatch_options > 0,
           "example-univ: Slurm, partition gpu, account, modules, sbatch lines");
        gpurun_site_destroy(s);
    }
    if (gpurun_site_load("local", NULL, &s, &err) == 0) {
        ok(!strcmp(s->scheduler, "none") && !strcmp(s->launcher, "auto"),
           "local: no scheduler, launcher auto");
        gpurun_site_destroy(s);
    }
    ok(gpurun_site_load("exmple-univ", NULL, &s, &err) == -1 && err.code == GPURUN_EXIT_CONFIG &&
           strncmp(err.text,
                   "site 'exmple-univ' not found (did you mean 'example-univ'?); looked in ",
                   71) == 0 &&
           strstr(err.text, sites),
       "misspelt site: the nearest offered, sites/ folders listed");
    if (err.text[0])
        diag("%s", err.text);
    ok(gpurun_site_load("../x", NULL, &s, &err) == -1 &&
           !strcmp(err.text, "site '../x': not a valid site name (letters, digits, '_', '-', '.'; "
                             "a name on the search path, not a file)"),
       "a path is no site name");
    unsetenv("GPURUN_TEMPLATE_PATH");
    free(tpath);
    free(sites);
}

/* ---- the results store ------------------------------------------------ */

static char base[] = "/tmp/gpurun-test-results.XXXXXX";

static void mkdir_p(const char *path)
{
    char *p = strdup(path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
    free(p);
}

/* A record as run.c writes it (some of its fields). */
static json_t *make_run(const char *job, const char *id, const char *state, long ranks, long gpr,
                        double ns, double price)
{
    json_t *r =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:f, s:i, s:s, s:i, s:i, s:i, s:i, s:s, "
                  "s:{s:s}, s:i, s:{s:i}, s:o, s:s, s:i}",
                  "run_id", id, "job", job, "template", "gromacs", "start", "2025-01-01T00:00:00Z",
                  "end", "2025-01-01T00:01:00Z", "wall_s", 60.0, "exit_status",
                  strcmp(state, "ok") ? 1 : 0, "state", state, "nodes", 1, "ranks", (int)ranks,
                  "gpus_per_rank", (int)gpr, "threads_per_rank", 8, "gpu_model", "H200", "params",
                  "nsteps", "5000", "repeat_index", 0, "config", "ranks_per_node", (int)ranks,
                  "plan", json_object(), "gpurun_version", "0.1.0", "gpus", (int)(ranks * gpr));
    if (!isnan(ns))
        json_object_set_new(r, "foms",
                            json_pack("{s:{s:f, s:[f], s:s, s:s, s:s}}", "ns_per_day", "value", ns,
                                      "values", ns, "units", "ns/day", "better", "higher", "file",
                                      "md.log"));
    if (!isnan(price)) {
        json_object_set_new(r, "price_per_gpu_hour", json_real(price));
        json_object_set_new(r, "spot_price_per_gpu_hour", json_real(price * 0.4));
        json_object_set_new(r, "currency", json_string("USD"));
    } else {
        json_object_set_new(r, "price_per_gpu_hour", json_null());
    }
    return r;
}

/* RESULTS/FOLDER/ID/record.json holding `rec` (stolen); its path. */
static char *put_record(const char *folder, const char *id, json_t *rec)
{
    char *dir = NULL, *path = NULL;
    if (asprintf(&dir, "%s/%s/%s", base, folder, id) < 0 ||
        asprintf(&path, "%s/record.json", dir) < 0)
        abort();
    mkdir_p(dir);
    json_dump_file(rec, path, JSON_INDENT(2));
    json_decref(rec);
    free(dir);
    return path;
}

static size_t count_runs(gpurun_results_t *r, const char *job)
{
    json_t *runs = NULL;
    gpurun_error_t err = {0};
    if (gpurun_results_runs(r, job, &runs, &err) < 0) {
        diag("runs: %s", err.text);
        return (size_t)-1;
    }
    size_t n = json_array_size(runs);
    json_decref(runs);
    return n;
}

static size_t count_all(void)
{
    gpurun_results_t *r;
    gpurun_error_t err = {0};
    if (gpurun_results_open(base, false, &r, NULL, &err) < 0) {
        diag("open: %s", err.text);
        return (size_t)-1;
    }
    size_t n = count_runs(r, NULL);
    gpurun_results_close(r);
    return n;
}

static void unlink_db(void)
{
    static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < 4; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/results.db%s", base, sfx[i]);
        unlink(p);
    }
}

static void test_store(void)
{
    if (!mkdtemp(base)) {
        ok(0, "mkdtemp: %s", strerror(errno));
        return;
    }
    gpurun_error_t err = {0};
    char *p1 = put_record("water", "20250101T000000Z-1",
                          make_run("water", "20250101T000000Z-1", "ok", 1, 1, 100, 4));
    if (!ok(gpurun_results_add(base, p1, &err) == 0, "add a record"))
        diag("error: %s", err.text);
    char *db = NULL;
    if (asprintf(&db, "%s/results.db", base) < 0)
        abort();
    ok(access(db, F_OK) == 0, "RESULTS/results.db created");
    is_int(count_all(), 1, "one run indexed");
    ok(gpurun_results_add(base, p1, &err) == 0, "add it again");
    is_int(count_all(), 1, "idempotent: still one run");

    /* More runs, a corrupt record, a run folder still without a record. */
    char *p2 = put_record("water", "20250101T000100Z-1",
                          make_run("water", "20250101T000100Z-1", "ok", 2, 1, 190, 4));
    char *p3 = put_record("water", "20250101T000200Z-1",
                          make_run("water", "20250101T000200Z-1", "failed", 4, 1, NAN, 4));
    char *bad = NULL;
    if (asprintf(&bad, "%s/water/20250101T000300Z-1", base) < 0)
        abort();
    mkdir_p(bad);
    char *badrec = NULL;
    if (asprintf(&badrec, "%s/record.json", bad) < 0)
        abort();
    FILE *f = fopen(badrec, "w");
    if (f) {
        fputs("{\"run_id\": \"x\", \"job\": ", f); /* cut off mid-write, by hand */
        fclose(f);
    }
    char *inprogress = NULL;
    if (asprintf(&inprogress, "%s/water/20250101T000400Z-1", base) < 0)
        abort();
    mkdir_p(inprogress);

    gpurun_results_t *r = NULL;
    struct gpurun_results_log log = {0};
    ok(gpurun_results_open(base, false, &r, &log, &err) == 0, "open");
    if (!r)
        return;
    ok(gpurun_results_sync(r, false, &log, &err) == 0, "sync with the records");
    is_int(log.indexed, 2, "two new records indexed");
    is_int(log.skipped, 1, "the corrupt one skipped");
    ok(log.nwarnings == 1 &&
           strstr(log.warnings[0], "/water/20250101T000300Z-1/record.json: skipped: not JSON: ") !=
               NULL,
       "with a warning naming it");
    if (log.nwarnings)
        diag("%s", log.warnings[0]);
    is_int(count_runs(r, NULL), 3, "three runs");
    is_int(count_runs(r, "water"), 3, "three of job water");
    is_int(count_runs(r, "wat"), 0, "none of job wat");
    gpurun_results_log_free(&log);
    ok(gpurun_results_sync(r, false, &log, &err) == 0 && log.indexed == 0 && log.nwarnings == 0,
       "sync again: nothing new, the corrupt record not warned about twice");
    gpurun_results_log_free(&log);

    /* What the commands read back. */
    json_t *runs = NULL;
    gpurun_results_runs(r, "water", &runs, &err);
    json_t *first = json_array_get(runs, 0);
    is_str(gpurun_record_str(first, "run_id"), "20250101T000000Z-1", "by start time");
    ok(json_object_get(first, "plan") == NULL, "the summary leaves the plan in the record");
    is_str(gpurun_record_str(first, "record"), "water/20250101T000000Z-1/record.json",
           "and says where the record is");
    json_decref(runs);
    gpurun_results_close(r);

    /* The index follows the records: a removed run is dropped. */
    unlink(p3);
    ok(gpurun_results_open(base, false, &r, &log, &err) == 0 &&
           gpurun_results_sync(r, false, &log, &err) == 0 && log.dropped == 1,
       "a removed record is dropped from the index");
    is_int(count_runs(r, NULL), 2, "two runs left");
    gpurun_results_close(r);
    gpurun_results_log_free(&log);

    /* Rebuild after the database is deleted. */
    unlink_db();
    ok(gpurun_results_rebuild(base, &log, &err) == 0, "rebuild without a database");
    is_int(log.indexed, 2, "rebuild: every good record indexed");
    is_int(log.skipped, 1, "rebuild: the corrupt one skipped again, with a warning");
    is_int(count_all(), 2, "rebuild: two runs");
    gpurun_results_log_free(&log);

    /* A database that is no database: an error naming --rebuild; --rebuild mends it. */
    gpurun_results_close(r = NULL);
    unlink_db();
    f = fopen(db, "w");
    if (f) {
        fputs("this is not an SQLite database, not at all, but it is long enough to look at\n", f);
        fclose(f);
    }
    ok(gpurun_results_open(base, false, &r, NULL, &err) == -1 && err.code == GPURUN_EXIT_CONFIG &&
           strstr(err.text, "not an SQLite database") && strstr(err.text, "leaves it as it is"),
       "a file that is no database: exit 2, left as it is");
    diag("%s", err.text);
    ok(gpurun_results_rebuild(base, &log, &err) == -1 && err.code == GPURUN_EXIT_CONFIG,
       "--rebuild does not remove it either");
    gpurun_results_log_free(&log);
    unlink_db();
    ok(gpurun_results_rebuild(base, &log, &err) == 0 && log.indexed == 2, "moved away: --rebuild indexes again");
    gpurun_results_log_free(&log);

    /* Hostile strings are data. */
    const char *evil = "'; DROP TABLE runs; --";
    json_t *rec = make_run(evil, "20250101T000500Z-1", "ok", 1, 1, 50, NAN);
    json_object_set_new(rec, "params", json_pack("{s:s}", "x\"'); DELETE FROM foms; --", "'||'"));
    char *p4 = put_record("evil", "20250101T000500Z-1", rec);
    ok(gpurun_results_add(base, p4, &err) == 0, "a record with SQL in its job name and params");
    ok(gpurun_results_open(base, false, &r, NULL, &err) == 0, "open");
    is_int(count_runs(r, NULL), 3, "no table dropped: three runs");
    is_int(count_runs(r, evil), 1, "the job name found verbatim");
    gpurun_results_runs(r, evil, &runs, &err);
    json_t *params = json_object_get(json_array_get(runs, 0), "params");
    is_str(json_string_value(json_object_get(params, "x\"'); DELETE FROM foms; --")), "'||'",
           "params stored verbatim");
    json_decref(runs);
    gpurun_results_close(r);

    /* The runs of a scan and array jobs index at once: each waits its turn. */
    enum { WRITERS = 6, EACH = 8 };
    char *paths[WRITERS][EACH];
    for (int w = 0; w < WRITERS; w++)
        for (int i = 0; i < EACH; i++) {
            char id[64];
            snprintf(id, sizeof id, "20250102T0000%02dZ-%d", i, w + 1);
            paths[w][i] =
                put_record("scan", id, make_run("scan", id, "ok", 1 + w, 1, 10.0 * (w + 1), 4));
        }
    fflush(stdout);
    pid_t pids[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        if (pids[w] == 0) {
            int nbad = 0;
            for (int i = 0; i < EACH; i++) {
                gpurun_error_t e = {0};
                if (gpurun_results_add(base, paths[w][i], &e) < 0) {
                    fprintf(stderr, "writer %d: %s\n", w, e.text);
                    nbad++;
                }
            }
            _exit(nbad ? 1 : 0);
        }
    }
    int failed = 0;
    for (int w = 0; w < WRITERS; w++) {
        int st = 0;
        if (pids[w] < 0 || waitpid(pids[w], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
            failed++;
    }
    is_int(failed, 0, "%d processes adding records at once: none fails", WRITERS);
    ok(gpurun_results_open(base, false, &r, NULL, &err) == 0, "open");
    is_int(count_runs(r, "scan"), WRITERS * EACH, "every record of the parallel writers indexed");
    gpurun_results_close(r);
    for (int w = 0; w < WRITERS; w++)
        for (int i = 0; i < EACH; i++)
            free(paths[w][i]);

    /* A record outside the folder is refused. */
    ok(gpurun_results_add(base, "/etc/hostname", &err) == -1,
       "a file outside the folder is refused");
    ok(gpurun_results_open("/nonexistent/results", false, &r, NULL, &err) == -1 &&
           err.code == GPURUN_EXIT_CONFIG,
       "no such folder: exit 2");

    free(p1);
    free(p2);
    free(p3);
    free(p4);
    free(bad);
    free(badrec);
    free(inprogress);
    free(db);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    ok(system(cmd) == 0, "clean up");
}

/* ---- what is not gpurun's is left alone -------------------------------- */

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(1 << 20);
    *len = buf ? fread(buf, 1, 1 << 20, f) : 0;
    fclose(f);
    return buf;
}

/* Opening, syncing, rebuilding and adding a record all fail with exit 2 and
 * leave the file at `db` byte for byte as it was. */
static void untouched(const char *folder, const char *db, const char *rec, const char *what)
{
    size_t n0 = 0, n1 = 0;
    char *before = slurp(db, &n0);
    gpurun_results_t *r = NULL;
    gpurun_error_t err = {0};
    struct gpurun_results_log log = {0};
    ok(gpurun_results_open(folder, false, &r, &log, &err) == -1 && err.code == GPURUN_EXIT_CONFIG,
       "%s: results refused, exit 2", what);
    diag("%s", err.text);
    gpurun_results_close(r);
    err = (gpurun_error_t){0};
    ok(gpurun_results_rebuild(folder, &log, &err) == -1 && err.code == GPURUN_EXIT_CONFIG,
       "%s: --rebuild refused, exit 2", what);
    err = (gpurun_error_t){0};
    ok(gpurun_results_add(folder, rec, &err) == -1 && err.code == GPURUN_EXIT_CONFIG,
       "%s: adding a record refused, exit 2", what);
    gpurun_results_log_free(&log);
    char *after = slurp(db, &n1);
    ok(before && after && n0 == n1 && memcmp(before, after, n0) == 0, "%s: left byte for byte as it was", what);
    free(before);
    free(after);
}

static void test_foreign(void)
{
    char folder[] = "/tmp/gpurun-test-foreign.XXXXXX";
    if (!ok(mkdtemp(folder) != NULL, "a results folder"))
        return;
    char db[300], rec[300], cmd[1024], victim[300], wal[300];
    snprintf(db, sizeof db, "%s/results.db", folder);
    snprintf(wal, sizeof wal, "%s/results.db-wal", folder);
    snprintf(victim, sizeof victim, "%s/victim.db", folder);
    snprintf(rec, sizeof rec, "%s/j/20250101T000000Z-1/record.json", folder);
    snprintf(cmd, sizeof cmd, "%s/j/20250101T000000Z-1", folder);
    mkdir_p(cmd);
    json_t *run = make_run("j", "20250101T000000Z-1", "ok", 1, 1, 100, 4);
    json_dump_file(run, rec, JSON_INDENT(2));
    json_decref(run);

    /* Not SQLite at all. */
    FILE *f = fopen(db, "w");
    if (f) {
        fputs("my notes, not a database\n", f);
        fclose(f);
    }
    untouched(folder, db, rec, "a text file named results.db");
    unlink(db);

    /* SQLite, of someone else: tables named like gpurun's, no schema_version. */
    sqlite3 *h = NULL;
    ok(sqlite3_open(db, &h) == SQLITE_OK &&
           sqlite3_exec(h,
                        "CREATE TABLE runs(x); INSERT INTO runs VALUES ('keep me');"
                        "CREATE TABLE foms(y); CREATE TABLE skipped(z);",
                        NULL, NULL, NULL) == SQLITE_OK,
       "an SQLite database of someone else's, with a table runs");
    sqlite3_close(h);
    untouched(folder, db, rec, "an SQLite database with tables of its own");
    /* ... and one with a schema_version of its own among other tables. */
    ok(sqlite3_open(db, &h) == SQLITE_OK &&
           sqlite3_exec(h, "CREATE TABLE schema_version(version); INSERT INTO schema_version VALUES (1);"
                           "CREATE TABLE accounts(a);",
                        NULL, NULL, NULL) == SQLITE_OK,
       "... with a schema_version and a table accounts");
    sqlite3_close(h);
    untouched(folder, db, rec, "an SQLite database with a schema_version and tables of its own");
    unlink(db);

    /* A symlink in place of results.db, or of its WAL. */
    gpurun_error_t err = {0};
    ok(gpurun_results_rebuild(folder, NULL, &err) == 0, "an index of gpurun's");
    ok(rename(db, victim) == 0 && symlink(victim, db) == 0, "results.db replaced by a symlink to it");
    untouched(folder, victim, rec, "a symlinked results.db");
    f = fopen(db, "r"); /* still the link */
    if (f)
        fclose(f);
    struct stat sb;
    ok(lstat(db, &sb) == 0 && S_ISLNK(sb.st_mode), "the symlink left alone");
    unlink(db);
    /* The WAL stays between commands now (ours): only we could replace it. */
    unlink(wal);
    ok(rename(victim, db) == 0 && symlink(victim, wal) == 0, "a symlink in place of results.db-wal");
    untouched(folder, db, rec, "a symlinked results.db-wal");
    unlink(wal);

    /* Files of another user, and a folder others can write. */
    if (geteuid() != 0) {
        skip("not root: no file of another user can be made (chown)");
    } else {
        ok(chown(db, 4242, 4242) == 0, "results.db owned by uid 4242");
        untouched(folder, db, rec, "a results.db of another user");
        ok(chown(db, 0, 0) == 0, "results.db ours again");
    }
    ok(chmod(folder, 0777) == 0, "the results folder writable by everyone, without the sticky bit");
    gpurun_results_t *r = NULL;
    err = (gpurun_error_t){0};
    ok(gpurun_results_open(folder, false, &r, NULL, &err) == -1 && err.code == GPURUN_EXIT_CONFIG &&
           strstr(err.text, "sticky"),
       "such a folder: refused, exit 2, the sticky bit named");
    diag("%s", err.text);
    gpurun_results_close(r);
    ok(chmod(folder, 01777) == 0 && gpurun_results_open(folder, false, &r, NULL, &err) == 0,
       "with the sticky bit: accepted");
    gpurun_results_close(r);
    chmod(folder, 0700);

    /* Modes: 0644 whatever the umask, for the database and its WAL. */
    unlink(db);
    mode_t old = umask(077);
    r = NULL;
    ok(gpurun_results_open(folder, false, &r, NULL, &err) == 0 && gpurun_results_sync(r, false, NULL, &err) == 0,
       "a new index under umask 077");
    ok(stat(db, &sb) == 0 && (sb.st_mode & 07777) == 0644, "results.db: mode 0644 (%o)", sb.st_mode & 07777);
    snprintf(cmd, sizeof cmd, "%s/results.db-wal", folder);
    if (stat(cmd, &sb) == 0)
        ok((sb.st_mode & 07777) == 0644, "results.db-wal: mode 0644 (%o)", sb.st_mode & 07777);
    else
        skip("no WAL on this filesystem: its mode not checked");
    snprintf(cmd, sizeof cmd, "%s/results.db-shm", folder);
    if (stat(cmd, &sb) == 0)
        ok((sb.st_mode & 07777) == 0644, "results.db-shm: mode 0644 (%o)", sb.st_mode & 07777);
    else
        skip("no WAL on this filesystem: the -shm mode not checked");
    gpurun_results_close(r);
    umask(old);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", folder);
    ok(system(cmd) == 0, "clean up");
}

/* ---- records that are not ours ----------------------------------------- */

static void test_record_files(void)
{
    char top[] = "/tmp/gpurun-test-records.XXXXXX";
    if (!ok(mkdtemp(top) != NULL, "a folder for the results and for what is elsewhere"))
        return;
    char folder[100], path[300], real[300], outside[300], cmd[1024];
    snprintf(folder, sizeof folder, "%s/results", top);
    mkdir(folder, 0755);
    static const char *const ids[] = {"20250101T000001Z-1", "20250101T000002Z-1", "20250101T000003Z-1",
                                      "20250101T000004Z-1"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/j/%s", folder, ids[i]);
        mkdir_p(path);
        snprintf(path, sizeof path, "%s/j/%s/record.json", folder, ids[i]);
        json_t *run = make_run("j", ids[i], "ok", 1, 1, 100, 4);
        json_dump_file(run, path, JSON_INDENT(2));
        json_decref(run);
    }
    /* 2: a symlink to a record elsewhere; 3: a symlinked run folder. */
    snprintf(outside, sizeof outside, "%s/elsewhere", top);
    mkdir(outside, 0755);
    snprintf(path, sizeof path, "%s/j/%s/record.json", folder, ids[1]);
    snprintf(real, sizeof real, "%s/elsewhere/record.json", top);
    ok(rename(path, real) == 0 && symlink(real, path) == 0, "a record.json that is a symlink");
    snprintf(path, sizeof path, "%s/j/%s", folder, ids[2]);
    snprintf(real, sizeof real, "%s/elsewhere/run", top);
    ok(rename(path, real) == 0 && symlink(real, path) == 0, "a run folder that is a symlink");
    bool root = geteuid() == 0;
    snprintf(path, sizeof path, "%s/j/%s/record.json", folder, ids[3]);
    if (root)
        ok(chown(path, 4242, 4242) == 0, "a record.json of uid 4242");

    struct gpurun_results_log log = {0};
    gpurun_error_t err = {0};
    ok(gpurun_results_rebuild(folder, &log, &err) == 0, "--rebuild");
    is_int(log.indexed, root ? 1 : 2, "only the records of ours, in folders of ours, indexed");
    is_int(log.skipped, root ? 3 : 2, "the others skipped");
    bool named[3] = {false, false, false};
    for (size_t i = 0; i < log.nwarnings; i++) {
        diag("%s", log.warnings[i]);
        for (size_t k = 0; k < 3; k++)
            if (strstr(log.warnings[i], ids[k + 1]) &&
                strstr(log.warnings[i], k == 2 ? "owned by another user" : "symlink"))
                named[k] = true;
    }
    ok(named[0] && named[1], "each symlink warned about, named");
    if (root)
        ok(named[2], "the record of another user warned about, named");
    gpurun_results_log_free(&log);
    gpurun_results_t *r = NULL;
    ok(gpurun_results_open(folder, false, &r, &log, &err) == 0, "open");
    is_int(count_runs(r, NULL), root ? 1 : 2, "the index holds only those");
    gpurun_results_close(r);
    gpurun_results_log_free(&log);

    snprintf(path, sizeof path, "%s/j/%s/record.json", folder, ids[1]);
    err = (gpurun_error_t){0};
    ok(gpurun_results_add(folder, path, &err) == -1 && err.code == GPURUN_EXIT_CONFIG && strstr(err.text, "symlink"),
       "adding a symlinked record: refused, exit 2");
    diag("%s", err.text);
    snprintf(path, sizeof path, "%s/j/%s/record.json", folder, ids[2]);
    err = (gpurun_error_t){0};
    ok(gpurun_results_add(folder, path, &err) == -1 && err.code == GPURUN_EXIT_CONFIG,
       "adding a record in a symlinked run folder: refused, exit 2");
    diag("%s", err.text);
    if (root) {
        snprintf(path, sizeof path, "%s/j/%s/record.json", folder, ids[3]);
        err = (gpurun_error_t){0};
        ok(gpurun_results_add(folder, path, &err) == -1 && err.code == GPURUN_EXIT_CONFIG &&
               strstr(err.text, "owned by another user"),
           "adding a record of another user: refused, exit 2");
        diag("%s", err.text);
    }
    snprintf(path, sizeof path, "%s/j/20250101T000009Z-1/record.json", folder);
    err = (gpurun_error_t){0};
    ok(gpurun_results_add(folder, path, &err) == -1 && err.code != 0, "adding a record that is not there: refused");

    /* A record indexed, then replaced by a symlink: it leaves the index. */
    snprintf(path, sizeof path, "%s/j/%s/record.json", folder, ids[0]);
    snprintf(real, sizeof real, "%s/elsewhere/first.json", top);
    ok(rename(path, real) == 0 && symlink(real, path) == 0, "the indexed record replaced by a symlink");
    ok(gpurun_results_open(folder, false, &r, &log, &err) == 0 && gpurun_results_sync(r, false, &log, &err) == 0,
       "sync");
    is_int(count_runs(r, NULL), root ? 0 : 1, "its row dropped");
    gpurun_results_close(r);
    gpurun_results_log_free(&log);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
    ok(system(cmd) == 0, "clean up");
}

/* ---- the report ------------------------------------------------------- */

static json_t *run_fom(const char *job, const char *id, const char *state, long ranks, long gpr,
                       const char *fom, double v, const char *units, const char *better,
                       double price)
{
    json_t *r = make_run(job, id, state, ranks, gpr, NAN, price);
    json_object_set_new(
        r, "foms",
        json_pack("{s:{s:f, s:s, s:s}}", fom, "value", v, "units", units, "better", better));
    return r;
}

static const struct gpurun_report_config *row(const struct gpurun_report_job *j, long res)
{
    for (size_t i = 0; i < j->nconfigs; i++)
        if (j->configs[i].resources == res)
            return &j->configs[i];
    return NULL;
}

static void test_report_scaling(void)
{
    /* 1 GPU 100 ns/day (98, 102), 2 GPUs 190, 4 GPUs 340 (330, 350); a
     * failed 4-GPU run with a figure that must not count. */
    json_t *runs = json_array();
    json_array_append_new(runs, make_run("md", "a", "ok", 1, 1, 98, 4));
    json_array_append_new(runs, make_run("md", "b", "ok", 1, 1, 102, 4));
    json_array_append_new(runs, make_run("md", "c", "ok", 2, 1, 190, 4));
    json_array_append_new(runs, make_run("md", "d", "ok", 4, 1, 330, 4));
    json_array_append_new(runs, make_run("md", "e", "ok", 4, 1, 350, 4));
    json_array_append_new(runs, make_run("md", "f", "failed", 4, 1, 9999, 4));
    json_array_append_new(runs, make_run("md", "g", "timeout", 4, 1, NAN, 4));
    gpurun_report_t *r = gpurun_report_build(runs);
    json_decref(runs);
    is_int(r->njobs, 1, "one job");
    const struct gpurun_report_job *j = &r->jobs[0];
    is_int(j->nconfigs, 3, "three configurations");
    is_int(j->nfoms, 1, "one figure");
    ok(j->by_gpus, "scaling against GPUs");
    is_int(j->nruns, 7, "seven runs");
    is_int(j->nfailed, 2, "two not ok");
    const struct gpurun_report_config *c1 = row(j, 1), *c2 = row(j, 2), *c4 = row(j, 4);
    if (!c1 || !c2 || !c4) {
        ok(0, "configurations by GPUs");
        gpurun_report_destroy(r);
        return;
    }
    ok(j->configs[0].resources == 1 && j->configs[2].resources == 4, "sorted by GPUs");
    is_int(c1->stats[0].n, 2, "1 GPU: two repeats");
    near(c1->stats[0].mean, 100, 1e-9, "1 GPU: mean 100");
    near(c1->stats[0].min, 98, 1e-9, "1 GPU: min 98");
    near(c1->stats[0].max, 102, 1e-9, "1 GPU: max 102");
    is_int(c4->stats[0].n, 2, "4 GPUs: the failed runs are not averaged");
    is_int(c4->nfailed, 2, "4 GPUs: two failed, counted apart");
    near(c4->stats[0].mean, 340, 1e-9, "4 GPUs: mean 340");
    near(c4->stats[0].max, 350, 1e-9, "4 GPUs: max 350, not the failed run's 9999");
    near(c1->stats[0].speedup, 1.0, 1e-12, "speedup 1 at the smallest");
    near(c2->stats[0].speedup, 1.9, 1e-12, "speedup 1.9 on 2 GPUs");
    near(c4->stats[0].speedup, 3.4, 1e-12, "speedup 3.4 on 4 GPUs");
    near(c1->stats[0].efficiency, 1.00, 1e-12, "efficiency 1.00 on 1 GPU");
    near(c2->stats[0].efficiency, 0.95, 1e-12, "efficiency 0.95 on 2 GPUs");
    near(c4->stats[0].efficiency, 0.85, 1e-12, "efficiency 0.85 on 4 GPUs");
    /* cost per ns = GPUs * price / (ns_per_day / 24) */
    is_str(j->foms[0].work_label, "ns", "cost per ns");
    near(c1->stats[0].cost, 1 * 4.0 / (100 / 24.0), 1e-12, "1 GPU: 0.96 USD per ns");
    near(c2->stats[0].cost, 2 * 4.0 / (190 / 24.0), 1e-12, "2 GPUs: cost per ns");
    near(c4->stats[0].cost, 4 * 4.0 / (340 / 24.0), 1e-12, "4 GPUs: cost per ns");
    near(c1->stats[0].spot_cost, 1 * 1.6 / (100 / 24.0), 1e-12, "1 GPU: spot cost per ns");
    is_str(c1->currency, "USD", "currency");
    is_int(gpurun_report_main_fom(j), 0, "the main figure");

    FILE *out = tmpfile();
    gpurun_report_print(r, "results", out);
    rewind(out);
    char text[16384];
    size_t n = fread(text, 1, sizeof text - 1, out);
    text[n] = '\0';
    fclose(out);
    ok(strstr(text, "0.9600 USD") && strstr(text, "  0.95  ") && strstr(text, "  0.85  "),
       "the text table shows cost and efficiencies");
    gpurun_report_destroy(r);

    /* Lower is better: the inverse; no price: no cost. */
    runs = json_array();
    json_array_append_new(
        runs, run_fom("t", "a", "ok", 1, 1, "hour_per_ns", 0.24, "hour/ns", "lower", NAN));
    json_array_append_new(
        runs, run_fom("t", "b", "ok", 2, 1, "hour_per_ns", 0.15, "hour/ns", "lower", NAN));
    r = gpurun_report_build(runs);
    json_decref(runs);
    j = &r->jobs[0];
    near(row(j, 2)->stats[0].speedup, 1.6, 1e-12, "lower is better: speedup 0.24 / 0.15");
    near(row(j, 2)->stats[0].efficiency, 0.8, 1e-12, "lower is better: efficiency 0.8");
    ok(isnan(row(j, 2)->stats[0].cost) && isnan(row(j, 2)->stats[0].spot_cost),
       "no price: no cost");
    gpurun_report_destroy(r);

    /* GFLOP/s on 8 GPUs at 8 USD: per PFLOP; tau/day: per 1000 tau. */
    runs = json_array();
    json_array_append_new(runs,
                          run_fom("hpl", "a", "ok", 8, 1, "gflops", 50000, "GFLOP/s", "higher", 8));
    json_array_append_new(
        runs, run_fom("lj", "a", "ok", 1, 1, "tau_per_day", 1e6, "tau/day", "higher", 4));
    r = gpurun_report_build(runs);
    json_decref(runs);
    is_str(r->jobs[0].name, "hpl", "jobs by name");
    is_str(r->jobs[0].foms[0].work_label, "PFLOP", "GFLOP/s: cost per PFLOP");
    near(r->jobs[0].configs[0].stats[0].cost, 8 * 8.0 / (50000e9 * 3600) * 1e15, 1e-9,
         "HPL: 8 GPUs x 8 USD / (50 TFLOP/s x 3600 s) per PFLOP");
    is_str(r->jobs[1].foms[0].work_label, "1000 tau", "tau/day: cost per 1000 tau");
    near(r->jobs[1].configs[0].stats[0].cost, 4.0 * 24 / 1e6 * 1000, 1e-12, "LJ: per 1000 tau");
    gpurun_report_destroy(r);

    /* From 1 to 64 GPUs: log-log, the ideal line straight. */
    runs = json_array();
    json_array_append_new(runs, make_run("wide", "a", "ok", 1, 1, 1000, NAN));
    json_array_append_new(runs, make_run("wide", "b", "ok", 64, 1, 50000, NAN));
    r = gpurun_report_build(runs);
    json_decref(runs);
    char *svg = gpurun_report_svg(r);
    ok(strstr(svg, ">GPUs (log scale)<") && strstr(svg, ">ns_per_day (ns/day, log scale)<") &&
           strstr(svg, ">50k<") && !strstr(svg, "e+0"),
       "1 to 64 GPUs: log-log axes, ticks without exponents");
    free(svg);
    gpurun_report_destroy(r);

    /* CPU-only: scaling against ranks, no cost per GPU-hour. */
    runs = json_array();
    json_array_append_new(runs,
                          run_fom("cg", "a", "ok", 2, 0, "gflops", 10, "GFLOP/s", "higher", 4));
    json_array_append_new(runs,
                          run_fom("cg", "b", "ok", 8, 0, "gflops", 36, "GFLOP/s", "higher", 4));
    r = gpurun_report_build(runs);
    json_decref(runs);
    j = &r->jobs[0];
    ok(!j->by_gpus, "CPU-only: against ranks");
    near(row(j, 8)->stats[0].efficiency, 0.9, 1e-12, "CPU-only: efficiency 36/10 / (8/2)");
    ok(isnan(row(j, 8)->stats[0].cost), "CPU-only: no cost per GPU-hour");
    gpurun_report_destroy(r);

    /* Two params: two series, each against its own smallest configuration. */
    runs = json_array();
    json_t *a = make_run("s", "a", "ok", 1, 1, 100, NAN),
           *b = make_run("s", "b", "ok", 2, 1, 180, NAN);
    json_t *c = make_run("s", "c", "ok", 2, 1, 50, NAN),
           *d = make_run("s", "d", "ok", 4, 1, 100, NAN);
    json_object_set_new(c, "params", json_pack("{s:s}", "nsteps", "100"));
    json_object_set_new(d, "params", json_pack("{s:s}", "nsteps", "100"));
    json_array_append_new(runs, a);
    json_array_append_new(runs, b);
    json_array_append_new(runs, c);
    json_array_append_new(runs, d);
    r = gpurun_report_build(runs);
    json_decref(runs);
    j = &r->jobs[0];
    is_int(j->nseries, 2, "two series of params");
    ok(j->nconfigs == 4 && j->configs[0].series == 0 && j->configs[2].series == 1 &&
           fabs(j->configs[1].stats[0].efficiency - 0.9) < 1e-12 &&
           fabs(j->configs[3].stats[0].efficiency - 1.0) < 1e-12,
       "each series against its own baseline");
    gpurun_report_destroy(r);

    /* Per-GPU monitoring, as monitor.c writes it into the record. */
    runs = json_array();
    a = make_run("mon", "a", "ok", 2, 1, 100, 4);
    json_object_set_new(a, "gpus_monitor",
                        json_pack("[{s:s, s:f, s:f, s:f}, {s:s, s:f, s:f, s:n}]", "pci",
                                  "0000:03:00.0", "util_mean", 90.0, "mem_peak_mib", 1024.0,
                                  "power_mean_w", 500.0, "pci", "0000:04:00.0", "util_mean", 80.0,
                                  "mem_peak_mib", 2048.0, "power_mean_w"));
    json_array_append_new(runs, a);
    r = gpurun_report_build(runs);
    json_decref(runs);
    out = tmpfile();
    gpurun_report_print(r, "results", out);
    rewind(out);
    n = fread(text, 1, sizeof text - 1, out);
    text[n] = '\0';
    fclose(out);
    ok(strstr(text, "GPU monitoring (last ok run)") &&
           strstr(text, "util 85%, mem peak 2.0 GiB, power 500 W"),
       "gpus_monitor: mean utilisation, highest memory peak, mean power of the GPUs reporting it");
    gpurun_report_destroy(r);

    /* An old record: only run_id, job and state. */
    runs = json_pack("[{s:s, s:s, s:s}, {s:s, s:s}, i]", "run_id", "x", "job", "old", "state", "ok",
                     "job", "noid", "ranks", "two", 3);
    r = gpurun_report_build(runs);
    json_decref(runs);
    ok(r->njobs == 2 && r->jobs[1].nconfigs == 1 && r->jobs[1].configs[0].gpus == -1 &&
           gpurun_report_main_fom(&r->jobs[1]) == -1,
       "old records: unknown fields, no crash");
    svg = gpurun_report_svg(r);
    char *html = gpurun_report_html(r, "results");
    ok(svg && strstr(svg, "nothing to plot") && !strstr(svg, "class=\"scaling\"") && html &&
           strstr(html, "No scaling plot: no run of state ok with a figure of merit"),
       "old records: no plot, and a line saying there is nothing to plot");
    free(svg);
    free(html);
    gpurun_report_destroy(r);
}

/* A run of figures {name: value} with their kinds, on `ranks` GPUs. */
static json_t *run_kinds(const char *job, const char *id, const char *state, long ranks, double ns, double iters)
{
    json_t *r = make_run(job, id, state, ranks, 1, NAN, NAN);
    json_object_set_new(r, "foms",
                        json_pack("{s:{s:f, s:s, s:s, s:s}, s:{s:f, s:s, s:s, s:s}, s:{s:f, s:s, s:s, s:s}}",
                                  "iterations", "value", iters, "units", "", "better", "lower", "kind", "other",
                                  "hour_per_ns", "value", 24 / ns, "units", "hour/ns", "better", "lower", "kind",
                                  "time", "ns_per_day", "value", ns, "units", "ns/day", "better", "higher",
                                  "kind", "throughput"));
    return r;
}

static size_t fom_index(const struct gpurun_report_job *j, const char *name)
{
    for (size_t f = 0; f < j->nfoms; f++)
        if (!strcmp(j->foms[f].name, name))
            return f;
    return 0;
}

/* Issue 30: scaling only where it means something, time figures through
 * their inverse, the spread, the runs not ok, the params alike, where it
 * ran. */
static void test_report_trust(void)
{
    json_t *runs = json_array();
    /* 1 GPU: 31, 56 ns/day; 2 GPUs: 80, 82; iterations 100 then 200
     * (not a speedup of 0.5). */
    json_array_append_new(runs, run_kinds("md", "a", "ok", 1, 31, 100));
    json_array_append_new(runs, run_kinds("md", "b", "ok", 1, 56, 100));
    json_array_append_new(runs, run_kinds("md", "c", "ok", 2, 80, 200));
    json_array_append_new(runs, run_kinds("md", "d", "ok", 2, 82, 200));
    json_t *e = make_run("md", "e", "failed", 2, 1, NAN, NAN);
    json_object_set_new(e, "failure", json_pack("{s:i, s:s, s:i, s:s, s:[]}", "rank", 1, "host", "n1", "status", 1,
                                                "reason", "CUDA error: out of memory", "tail"));
    json_object_set_new(e, "record", json_string("md/e/record.json"));
    json_object_set_new(e, "cpu_model", json_string("Xeon 8480"));
    json_object_set_new(e, "program_version", json_string("2024.3"));
    json_object_set_new(e, "hosts", json_pack("[s, s]", "n1", "n2"));
    json_array_append_new(runs, e);
    gpurun_report_t *r = gpurun_report_build(runs);
    json_decref(runs);
    const struct gpurun_report_job *j = &r->jobs[0];
    size_t nsd = fom_index(j, "ns_per_day"), hpn = fom_index(j, "hour_per_ns"), it = fom_index(j, "iterations");
    const struct gpurun_report_config *c1 = row(j, 1), *c2 = row(j, 2);
    ok(j->foms[nsd].kind == GPURUN_FOM_THROUGHPUT && j->foms[hpn].kind == GPURUN_FOM_TIME &&
           j->foms[it].kind == GPURUN_FOM_OTHER,
       "the records' kinds: throughput, time, other");
    ok(c1 && c2 && isnan(c2->stats[it].speedup) && isnan(c2->stats[it].efficiency),
       "a figure of kind other: no speedup, no efficiency");
    near(c2->stats[nsd].speedup, 81 / 43.5, 1e-12, "ns_per_day: speedup the ratio of the means");
    near(c2->stats[hpn].speedup, c2->stats[nsd].speedup, 1e-12,
         "hour_per_ns: the same speedup as ns_per_day (from its inverse, not a mean of inverses)");
    near(c2->stats[hpn].efficiency, c2->stats[nsd].efficiency, 1e-12, "... and the same efficiency");
    is_int(gpurun_report_main_fom(j), (long)nsd, "the plot shows the throughput, whatever the order");
    double sd = sqrt(((31 - 43.5) * (31 - 43.5) + (56 - 43.5) * (56 - 43.5)) / 1);
    near(c1->stats[nsd].cv, sd / 43.5, 1e-12, "CV: sample standard deviation / mean (40.6%%)");
    ok(c1->stats[nsd].spread_flag && !c2->stats[nsd].spread_flag, "spread flagged above 5%% only");
    is_int(j->nfailed_kept, 1, "the run not ok listed");
    if (j->nfailed_kept == 1) {
        is_str(j->failed[0].state, "failed", "... its state");
        is_str(j->failed[0].reason, "rank 1 on n1: CUDA error: out of memory", "... its reason");
        is_str(j->failed[0].folder, "md/e", "... its folder");
        is_str(j->failed[0].config, "ranks_per_node=2", "... its configuration");
    }
    ok(c2->hosts.n == 2 && !strcmp(c2->cpu_models.v[0], "Xeon 8480") &&
           !strcmp(c2->program_versions.v[0], "2024.3") && !strcmp(c2->gpurun_versions.v[0], "0.1.0"),
       "where it ran: hosts, CPU model, program and gpurun version, of every run");
    is_str(j->params_fixed, "nsteps=5000", "params alike in every configuration: once");
    is_str(c1->params_vary, "-", "... and none left to each row");
    ok(gpurun_report_plots(j), "two configurations: a plot");
    char *svg = gpurun_report_svg(r);
    ok(svg && strstr(svg, "class=\"efficiency\"") && strstr(svg, ">parallel efficiency<"),
       "an efficiency plot beside the figure's");
    free(svg);
    FILE *out = tmpfile();
    gpurun_report_print(r, "results", out);
    rewind(out);
    char text[32768];
    size_t n = fread(text, 1, sizeof text - 1, out);
    text[n] = '\0';
    fclose(out);
    ok(strstr(text, "40.6% !") && strstr(text, "31.00\u201356.00") && strstr(text, "spread between repeats above 5%"),
       "the text: min-max, the CV flagged, the threshold said");
    ok(strstr(text, "Runs not ok: 1") && strstr(text, "CUDA error: out of memory") && strstr(text, "md/e"),
       "the text: the run not ok, its reason and folder");
    gpurun_report_destroy(r);

    /* One configuration: no plot, no speedup; all failed: listed, no plot. */
    runs = json_array();
    json_array_append_new(runs, run_kinds("one", "a", "ok", 2, 80, 1));
    json_array_append_new(runs, run_kinds("one", "b", "ok", 2, 82, 1));
    json_array_append_new(runs, make_run("dead", "c", "timeout", 1, 1, NAN, NAN));
    json_array_append_new(runs, make_run("dead", "d", "failed", 2, 1, NAN, NAN));
    r = gpurun_report_build(runs);
    json_decref(runs);
    const struct gpurun_report_job *dead = &r->jobs[0], *one = &r->jobs[1];
    ok(!gpurun_report_plots(one) && isnan(one->configs[0].stats[fom_index(one, "ns_per_day")].speedup),
       "one configuration: no plot, no speedup of 1 against itself");
    ok(!gpurun_report_plots(dead) && dead->nfailed_kept == 2, "all runs failed: each listed, no plot");
    svg = gpurun_report_svg(r);
    char *html = gpurun_report_html(r, "results");
    ok(svg && !strstr(svg, "class=\"scaling\"") && !strstr(svg, ">ideal") && html &&
           strstr(html, "No scaling plot: one configuration") && strstr(html, "<h3>Runs not ok"),
       "no one-point plot with an ideal legend; the page says why and lists the runs not ok");
    free(svg);
    free(html);
    gpurun_report_destroy(r);

    /* Params that vary: only those in the column; the others once. */
    runs = json_array();
    for (int i = 0; i < 4; i++) {
        char id[8];
        snprintf(id, sizeof id, "p%d", i);
        json_t *x = make_run("scan", id, "ok", 1 + i % 2, 1, 100 + i, NAN);
        json_object_set_new(x, "params", json_pack("{s:s, s:s, s:s}", "nsteps", "5000", "tpr", "/a/very/long/path.tpr",
                                                   "npme", i < 2 ? "0" : "1"));
        json_array_append_new(runs, x);
    }
    r = gpurun_report_build(runs);
    json_decref(runs);
    j = &r->jobs[0];
    ok(j->params_fixed && !strcmp(j->params_fixed, "nsteps=5000 tpr=/a/very/long/path.tpr") &&
           !strcmp(j->configs[0].params_vary, "npme=0") && !strcmp(j->configs[3].params_vary, "npme=1"),
       "params: the alike once, each row only npme");
    gpurun_report_destroy(r);

    /* A record without kinds (before templates said them): by the units. */
    runs = json_array();
    json_array_append_new(runs, run_fom("old", "a", "ok", 1, 1, "iterations", 100, "", "lower", NAN));
    json_array_append_new(runs, run_fom("old", "b", "ok", 2, 1, "iterations", 200, "", "lower", NAN));
    r = gpurun_report_build(runs);
    json_decref(runs);
    ok(r->jobs[0].foms[0].kind == GPURUN_FOM_OTHER && isnan(row(&r->jobs[0], 2)->stats[0].speedup),
       "no kind, no units: other, no scaling");
    gpurun_report_destroy(r);
}

static void test_cost_basis(void)
{
    static const struct {
        const char *units, *better;
        int kind;
        double hours, prefix;
        const char *work;
    } cases[] = {
        {"ns/day", "higher", GPURUN_COST_RATE, 24, 1, "ns"},
        {"GFLOP/s", "higher", GPURUN_COST_RATE, 1 / 3600.0, 1e9, "FLOP"},
        {"TFLOPS", "higher", GPURUN_COST_RATE, 1 / 3600.0, 1e12, "FLOP"},
        {"timesteps/s", "higher", GPURUN_COST_RATE, 1 / 3600.0, 1, "timesteps"},
        {"tau/day", "higher", GPURUN_COST_RATE, 24, 1, "tau"},
        {"hour/ns", "lower", GPURUN_COST_TIME, 1, 1, "ns"},
        {"s", "lower", GPURUN_COST_TIME, 1 / 3600.0, 1, "run"},
        {"iterations", "higher", GPURUN_COST_NONE, 0, 1, ""},
        {"ns/day", "lower", GPURUN_COST_NONE, 0, 1, ""},
        {"", "higher", GPURUN_COST_NONE, 0, 1, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct gpurun_cost_basis b;
        gpurun_cost_basis(cases[i].units, cases[i].better, &b);
        ok((int)b.kind == cases[i].kind && fabs(b.hours - cases[i].hours) < 1e-15 &&
               b.prefix == cases[i].prefix && !strcmp(b.work, cases[i].work),
           "cost basis of '%s' (%s)", cases[i].units, cases[i].better);
    }
    struct gpurun_cost_basis b;
    gpurun_cost_basis("ns/day", "higher", &b);
    near(gpurun_cost_hours(&b, 100), 0.24, 1e-15, "100 ns/day: 0.24 hours per ns");
    ok(isnan(gpurun_cost_hours(&b, 0)) && isnan(gpurun_cost_hours(&b, -1)), "no cost at 0");
}

/* ---- escaping --------------------------------------------------------- */

static void test_escaping(void)
{
    char *e = gpurun_xml_escape("<a href=\"x\">&'\x01</a>");
    is_str(e, "&lt;a href=&quot;x&quot;&gt;&amp;&#39;\\x01&lt;/a&gt;", "XML escaping");
    free(e);

    const char *xss = "<script>alert(1)</script>";
    json_t *runs = json_array();
    json_t *a = make_run(xss, "a", "ok", 1, 1, 50, 4), *b = make_run(xss, "b", "ok", 8, 1, 300, 4);
    json_object_set_new(a, "params", json_pack("{s:s}", "<b>p</b>", "\"&'"));
    json_object_set_new(b, "params", json_pack("{s:s}", "<b>p</b>", "\"&'"));
    json_object_set_new(a, "template", json_string("<img src=x onerror=alert(2)>"));
    json_object_set_new(a, "foms",
                        json_pack("{s:{s:f, s:s, s:s}}", "</text><script>", "value", 50.0, "units",
                                  "ns/day<", "better", "higher"));
    /* Two configurations of the figure: a plot (one alone has none). */
    json_object_set_new(b, "foms",
                        json_pack("{s:{s:f, s:s, s:s}}", "</text><script>", "value", 300.0, "units",
                                  "ns/day<", "better", "higher"));
    json_array_append_new(runs, a);
    json_array_append_new(runs, b);
    gpurun_report_t *r = gpurun_report_build(runs);
    json_decref(runs);
    char *svg = gpurun_report_svg(r), *html = gpurun_report_html(r, "<results>");
    ok(svg && !strstr(svg, "<script") && strstr(svg, "&lt;script&gt;alert(1)&lt;/script&gt;"),
       "SVG: the job name escaped");
    ok(svg && !strstr(svg, "</text><script>") && !strstr(svg, "<b>"),
       "SVG: figure and params escaped");
    ok(svg && !strncmp(svg, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=", 50) &&
           strstr(svg, "</svg>\n"),
       "SVG: a whole document");
    ok(html && !strstr(html, "<script") &&
           strstr(html, "<h2>Job &lt;script&gt;alert(1)&lt;/script&gt;</h2>"),
       "HTML: the job name escaped");
    ok(html && !strstr(html, "<img") && strstr(html, "&lt;img src=x onerror=alert(2)&gt;"),
       "HTML: the template name escaped");
    ok(html && !strstr(html, "<b>") &&
           strstr(html, "Params of every configuration: <code>&lt;b&gt;p&lt;/b&gt;=&quot;&amp;&#39;</code>"),
       "HTML: params escaped");
    ok(html && strstr(html, "&lt;results&gt;") && !strstr(html, "<results>"),
       "HTML: the source escaped");
    ok(html && strstr(html, "Content-Security-Policy") && !strstr(html, "<link") &&
           !strstr(html, "<iframe") && !strstr(html, "url(") && !strstr(html, "https://") &&
           strstr(html, "<svg"),
       "HTML: self-contained, inline SVG, nothing loaded");
    free(svg);
    free(html);
    gpurun_report_destroy(r);

    /* Files are written whole, or not at all. */
    char dir[] = "/tmp/gpurun-test-write.XXXXXX";
    if (!mkdtemp(dir))
        return;
    char path[256], bad[256];
    snprintf(path, sizeof path, "%s/out.svg", dir);
    snprintf(bad, sizeof bad, "%s/no/such/out.svg", dir);
    gpurun_error_t err = {0};
    ok(gpurun_write_text(path, "<svg/>\n", &err) == 0 && access(path, F_OK) == 0, "write a file");
    ok(gpurun_write_text(bad, "x", &err) == -1 && err.code == GPURUN_EXIT_CONFIG &&
           strstr(err.text, "cannot write"),
       "a folder that does not exist: exit 2");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq 1", dir);
    ok(system(cmd) == 0, "no temporary file left");

    /* A symlink where the temporary file used to be (PATH.tmp.PID, known
     * in advance) and one at the path itself: neither is followed, the
     * file it points to is left as it was. */
    char victim[256], planted[300];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(planted, sizeof planted, "%s.tmp.%ld", path, (long)getpid());
    FILE *v = fopen(victim, "w");
    if (v) {
        fputs("precious\n", v);
        fclose(v);
    }
    ok(symlink(victim, planted) == 0, "a symlink planted at the temporary name of old");
    ok(gpurun_write_text(path, "<svg>new</svg>\n", &err) == 0, "the file written all the same");
    snprintf(cmd, sizeof cmd, "grep -qx precious '%s' && test -L '%s' && test ! -L '%s' && grep -q new '%s'",
             victim, planted, path, path);
    ok(system(cmd) == 0, "the planted symlink not followed: its target unchanged");
    unlink(planted);
    unlink(path);
    ok(symlink(victim, path) == 0, "a symlink at the path");
    err = (gpurun_error_t){0};
    ok(gpurun_write_text(path, "x", &err) == -1 && err.code == GPURUN_EXIT_CONFIG && strstr(err.text, "symlink"),
       "a symlink at the path: refused, exit 2");
    diag("%s", err.text);
    snprintf(cmd, sizeof cmd, "grep -qx precious '%s' && test -L '%s'", victim, path);
    ok(system(cmd) == 0, "the symlink and its target left alone");
    unlink(path);
    mode_t old = umask(077);
    ok(gpurun_write_text(path, "x", &err) == 0, "written under umask 077");
    umask(old);
    struct stat sb;
    ok(stat(path, &sb) == 0 && (sb.st_mode & 07777) == 0644, "mode 0644 whatever the umask");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ok(system(cmd) == 0, "clean up");
}

/* The history of a configuration: bounded points, in time order, the
 * figure's drop kept; times read as UTC, offsets included. */
static void test_report_history(void)
{
    json_t *runs = json_array();
    char id[32], start[32];
    for (int i = 0; i < 10000; i++) {
        long t = 1735689600L + 60L * i; /* 2025-01-01T00:00:00Z, a run a minute */
        snprintf(id, sizeof id, "r%05d", i);
        json_t *r = run_fom("drift", id, "ok", 2, 1, "ns_per_day", i < 9900 ? 100 : 50, "ns/day", "higher", NAN);
        time_t tt = (time_t)t;
        struct tm tm;
        gmtime_r(&tt, &tm);
        strftime(start, sizeof start, "%Y-%m-%dT%H:%M:%SZ", &tm);
        json_object_set_new(r, "start", json_string(i == 0 ? "2025-01-01T01:00:00+01:00" : start));
        json_array_append_new(runs, r);
    }
    /* One run of another configuration: no history of its own. */
    json_t *one = run_fom("drift", "x", "ok", 4, 1, "ns_per_day", 300, "ns/day", "higher", NAN);
    json_object_set_new(one, "start", json_string("2025-02-01T00:00:00Z"));
    json_array_append_new(runs, one);
    gpurun_report_t *r = gpurun_report_build(runs);
    const struct gpurun_report_job *j = &r->jobs[0];
    ok(j->history_config >= 0 && j->configs[j->history_config].ranks == 2 && j->history_fom == 0,
       "history: of the configuration with the most runs");
    const struct gpurun_report_stat *st = &j->configs[j->history_config].stats[0];
    size_t n = 0;
    bool ordered = true;
    for (size_t i = 0; i < st->nhistory; i++) {
        n += st->history[i].n;
        ordered &= i == 0 || st->history[i].start > st->history[i - 1].end;
    }
    ok(st->nhistory >= GPURUN_REPORT_HISTORY_MAX / 2 && st->nhistory <= GPURUN_REPORT_HISTORY_MAX,
       "history: 10,000 runs in at most 128 points");
    diag("%zu points of %zu runs", st->nhistory, st->history_per);
    is_int((long)n, 10000, "history: every run in a point");
    ok(ordered, "history: points in time order, apart");
    ok(st->history[0].start == 1735689600.0, "history: 01:00:00+01:00 is 00:00:00Z");
    ok(st->history[0].mean == 100 && st->history[st->nhistory - 1].mean == 50 &&
           st->history[st->nhistory - 1].min == 50,
       "history: the drop at the end shows");
    gpurun_report_destroy(r);

    /* The same runs the other way round (not from the index): in order. */
    json_t *back = json_array();
    for (size_t i = json_array_size(runs); i-- > 0;)
        json_array_append(back, json_array_get(runs, i));
    r = gpurun_report_build(back);
    j = &r->jobs[0];
    st = &j->configs[j->history_config].stats[0];
    ordered = true;
    for (size_t i = 1; i < st->nhistory; i++)
        ordered &= st->history[i].start >= st->history[i - 1].start;
    ok(ordered, "history: runs in any order give points in time order");
    gpurun_report_destroy(r);
    json_decref(back);
    json_decref(runs);

    /* A run each: no history to show. */
    runs = json_array();
    json_array_append_new(runs, run_fom("scan", "a", "ok", 1, 0, "ns_per_day", 30, "ns/day", "higher", NAN));
    json_array_append_new(runs, run_fom("scan", "b", "ok", 2, 0, "ns_per_day", 60, "ns/day", "higher", NAN));
    for (size_t i = 0; i < 2; i++)
        json_object_set_new(json_array_get(runs, i), "start", json_string("2025-01-01T00:00:00Z"));
    r = gpurun_report_build(runs);
    ok(r->jobs[0].history_config == -1, "history: none with one run per configuration");
    gpurun_report_destroy(r);
    json_decref(runs);
}

int main(void)
{
    gpurun_plugins_register();
    test_site_good();
    test_site_bad();
    test_site_shipped();
    test_store();
    test_foreign();
    test_record_files();
    test_cost_basis();
    test_report_scaling();
    test_report_trust();
    test_escaping();
    test_report_history();
    return done_testing();
}
