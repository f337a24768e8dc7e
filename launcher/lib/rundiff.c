/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun diff's library half (rundiff.h): finding and reading two runs,
 * their differences section by section, the noise of their figures. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record.h"
#include "results.h"
#include "rundiff.h"
#include "util.h"

#define RECORD_READ_MAX (256u << 20) /* results.c's bound: a record with every rank's binding */
#define FLAT_DEPTH_MAX 4
#define SHOWN_MAX 160 /* a value's characters on a terminal */

/* ---- finding and reading a run -------------------------------------------- */

static bool has_record(const char *dir)
{
    char *p = gpurun_xasprintf("%s/record.json", dir);
    struct stat st;
    bool ok = lstat(p, &st) == 0 && S_ISREG(st.st_mode);
    free(p);
    return ok;
}

struct find_ctx {
    const char *id;
    json_t *found; /* ["JOB/RUN-ID", ...] */
};

static int find_id(json_t *run, void *arg)
{
    struct find_ctx *f = arg;
    const char *id = gpurun_record_str(run, GPURUN_REC_RUN_ID), *rel = gpurun_record_str(run, "record");
    if (id && rel && !strcmp(id, f->id) && json_array_size(f->found) < 16) {
        const char *slash = strrchr(rel, '/');
        json_array_append_new(f->found, json_stringn(rel, slash ? (size_t)(slash - rel) : strlen(rel)));
    }
    return 0;
}

/* The run id `id` in the index of `results_dir`: its folders. */
static json_t *find_in_results(const char *id, const char *results_dir)
{
    struct find_ctx f = {.id = id, .found = json_array()};
    char *db = gpurun_xasprintf("%s/%s", results_dir, GPURUN_RESULTS_DB);
    struct stat st;
    gpurun_results_t *r = NULL;
    struct gpurun_results_log log = {0};
    gpurun_error_t e = {0};
    if (stat(db, &st) == 0 && gpurun_results_open(results_dir, false, &r, &log, &e) == 0 &&
        gpurun_results_sync(r, false, &log, &e) == 0)
        gpurun_results_each(r, NULL, find_id, &f, &e);
    gpurun_results_close(r);
    gpurun_results_log_free(&log);
    gpurun_error_clear(&e);
    free(db);
    return f.found;
}

int gpurun_run_find(const char *arg, const char *results_dir, char **dirp, gpurun_error_t *err)
{
    *dirp = NULL;
    if (has_record(arg)) {
        *dirp = gpurun_xstrdup(arg);
        return 0;
    }
    char *in = gpurun_xasprintf("%s/%s", results_dir, arg);
    if (!strstr(arg, "..") && has_record(in)) {
        *dirp = in;
        return 0;
    }
    free(in);
    json_t *found = strchr(arg, '/') ? json_array() : find_in_results(arg, results_dir);
    size_t n = json_array_size(found);
    if (n == 1)
        *dirp = gpurun_xasprintf("%s/%s", results_dir, json_string_value(json_array_get(found, 0)));
    else if (n > 1)
        gpurun_err(err, GPURUN_EXIT_CONFIG, "run '%s': %zu runs of %s have that id (%s, %s%s): name one as JOB/RUN-ID",
                   arg, n, results_dir, json_string_value(json_array_get(found, 0)),
                   json_string_value(json_array_get(found, 1)), n > 2 ? ", ..." : "");
    else
        gpurun_err(err, GPURUN_EXIT_CONFIG,
                   "run '%s': no such run folder (no %s/record.json), nor a run id of the results folder %s "
                   "(gpurun results lists them; --results DIR names another)",
                   arg, arg, results_dir);
    json_decref(found);
    return n == 1 ? 0 : -1;
}

int gpurun_run_record(const char *run_dir, json_t **recp, gpurun_error_t *err)
{
    *recp = NULL;
    char *path = gpurun_xasprintf("%s/record.json", run_dir);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    char *text = NULL;
    size_t len = 0;
    int rc = -1;
    if (fd < 0)
        gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: cannot be read: %s", path,
                   errno == ELOOP ? "it is a symlink" : strerror(errno));
    else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: not a regular file", path);
    else if (gpurun_read_fd(fd, path, "record", RECORD_READ_MAX, &text, &len, err) == 0) {
        json_error_t je;
        *recp = json_loadb(text, len, 0, &je);
        if (!*recp)
            gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: not JSON: line %d: %s", path, je.line, je.text);
        else if (!json_is_object(*recp) || !gpurun_record_str(*recp, GPURUN_REC_RUN_ID)) {
            gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: not a gpurun record (no run_id)", path);
            json_decref(*recp);
            *recp = NULL;
        } else
            rc = 0;
    }
    if (rc < 0)
        err->code = GPURUN_EXIT_CONFIG;
    if (fd >= 0)
        close(fd);
    free(text);
    free(path);
    return rc;
}

/* ---- the noise of a configuration ------------------------------------------ */

/* Two records are runs of one configuration: same job, layout, params and
 * scan values. */
static bool same_config(const json_t *a, const json_t *b)
{
    static const char *const keys[] = {
        GPURUN_REC_JOB,    GPURUN_REC_NODES,  GPURUN_REC_RANKS,   GPURUN_REC_GPUS_PER_RANK, GPURUN_REC_THREADS_PER_RANK,
        GPURUN_REC_PARAMS, GPURUN_REC_CONFIG, GPURUN_REC_TEMPLATE};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        json_t *x = json_object_get(a, keys[i]), *y = json_object_get(b, keys[i]);
        if (!(x == y || (x && y && json_equal(x, y))))
            return false;
    }
    return true;
}

struct noise_ctx {
    const json_t *rec;
    json_t *sums; /* {"NAME": [n, sum, sumsq]} */
};

static int add_run(json_t *run, void *arg)
{
    struct noise_ctx *c = arg;
    const char *state = gpurun_record_str(run, GPURUN_REC_STATE);
    json_t *busy = json_object_get(json_object_get(run, "conditions"), "busy");
    if (!state || strcmp(state, GPURUN_STATE_OK) != 0 || json_is_true(busy) || !same_config(run, c->rec))
        return 0;
    const char *name;
    json_t *fom;
    json_object_foreach(json_object_get(run, GPURUN_REC_FOMS), name, fom)
    {
        double v;
        if (!gpurun_record_fom_value(fom, &v) || !isfinite(v))
            continue;
        json_t *s = json_object_get(c->sums, name);
        if (!s) {
            s = json_pack("[f, f, f]", 0.0, 0.0, 0.0);
            json_object_set_new(c->sums, name, s);
        }
        for (int k = 0; k < 3; k++)
            json_array_set_new(s, (size_t)k,
                               json_real(json_real_value(json_array_get(s, (size_t)k)) + (k == 0   ? 1
                                                                                          : k == 1 ? v
                                                                                                   : v * v)));
    }
    return 0;
}

char *gpurun_run_results_dir(const char *run_dir)
{
    char real[PATH_MAX];
    char *dir = gpurun_xstrdup(realpath(run_dir, real) ? real : run_dir);
    for (int up = 0; up < 2; up++) { /* RESULTS/JOB/RUN-ID */
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir) {
            free(dir);
            return NULL;
        }
        *slash = '\0';
    }
    return dir;
}

json_t *gpurun_rundiff_noise(const char *run_dir, const json_t *rec)
{
    json_t *out = json_object();
    char *results = gpurun_run_results_dir(run_dir);
    if (!results)
        return out;
    char *db = gpurun_xasprintf("%s/%s", results, GPURUN_RESULTS_DB);
    struct stat st;
    struct noise_ctx c = {.rec = rec, .sums = json_object()};
    gpurun_results_t *r = NULL;
    struct gpurun_results_log log = {0};
    gpurun_error_t e = {0};
    if (stat(db, &st) == 0 && gpurun_results_open(results, false, &r, &log, &e) == 0 &&
        gpurun_results_sync(r, false, &log, &e) == 0)
        gpurun_results_each(r, gpurun_record_str(rec, GPURUN_REC_JOB), add_run, &c, &e);
    gpurun_results_close(r);
    gpurun_results_log_free(&log);
    gpurun_error_clear(&e);
    const char *name;
    json_t *s;
    json_object_foreach(c.sums, name, s)
    {
        double n = json_real_value(json_array_get(s, 0)), sum = json_real_value(json_array_get(s, 1)),
               sq = json_real_value(json_array_get(s, 2)), mean = sum / n;
        double var = n > 1 ? (sq - n * mean * mean) / (n - 1) : NAN;
        json_t *sd = n > 1 ? json_real(sqrt(var > 0 ? var : 0)) : json_null();
        json_object_set_new(out, name, json_pack("{s:i, s:f, s:o}", "n", (json_int_t)n, "mean", mean, "sd", sd));
    }
    json_decref(c.sums);
    free(results);
    free(db);
    return out;
}

/* ---- the differences -------------------------------------------------------- */

static json_t *or_null(json_t *v)
{
    return v ? v : json_null();
}

static size_t section_count(const json_t *out, const char *section)
{
    size_t n = 0, i;
    json_t *d;
    json_array_foreach(out, i, d) n += !strcmp(json_string_value(json_object_get(d, "section")), section);
    return n;
}

/* One difference, when a and b differ (either may be NULL: missing). */
static void add(json_t *out, const char *section, const char *key, json_t *a, json_t *b)
{
    if (a == b || (a && b && json_equal(a, b)) || (!a && json_is_null(b)) || (!b && json_is_null(a)))
        return;
    if (section_count(out, section) >= GPURUN_RUNDIFF_SECTION_MAX)
        return;
    json_array_append_new(
        out, json_pack("{s:s, s:s, s:O, s:O}", "section", section, "key", key, "a", or_null(a), "b", or_null(b)));
}

/* Objects compared key by key (dotted keys), at most FLAT_DEPTH_MAX deep. */
static void add_flat(json_t *out, const char *section, const char *prefix, json_t *a, json_t *b, int depth)
{
    if (depth >= FLAT_DEPTH_MAX || !(json_is_object(a) || json_is_object(b)) ||
        (a && !json_is_object(a) && !json_is_null(a)) || (b && !json_is_object(b) && !json_is_null(b))) {
        add(out, section, *prefix ? prefix : section, a, b);
        return;
    }
    const char *k;
    json_t *v;
    for (int side = 0; side < 2; side++)
        json_object_foreach(side ? b : a, k, v)
        {
            if (side && json_object_get(a, k))
                continue; /* compared from a's side */
            char *key = *prefix ? gpurun_xasprintf("%s.%s", prefix, k) : gpurun_xstrdup(k);
            add_flat(out, section, key, json_object_get(a, k), json_object_get(b, k), depth + 1);
            free(key);
        }
}

static json_t *get2(const json_t *r, const char *k1, const char *k2)
{
    return json_object_get(json_object_get(r, k1), k2);
}

/* The noise verdict of figure `name` into its difference `d`. */
static void noise_verdict(json_t *d, double va, double vb, const json_t *na, const json_t *nb)
{
    double sa = json_number_value(json_object_get(na, "sd")), sb = json_number_value(json_object_get(nb, "sd"));
    bool ka = json_is_number(json_object_get(na, "sd")), kb = json_is_number(json_object_get(nb, "sd"));
    const char *verdict = "noise unknown";
    if (ka || kb) {
        double sd = ka && kb ? sqrt(sa * sa + sb * sb) : ka ? sa * sqrt(2) : sb * sqrt(2);
        verdict = fabs(vb - va) > 2 * sd ? "beyond the noise" : "within the noise";
        json_object_set_new(d, "noise_sd", json_real(sd));
    }
    json_object_set_new(d, "noise", json_string(verdict));
    json_object_set_new(d, "runs_a", json_integer(json_integer_value(json_object_get(na, "n"))));
    json_object_set_new(d, "runs_b", json_integer(json_integer_value(json_object_get(nb, "n"))));
}

static void diff_figures(json_t *out, const json_t *a, const json_t *b, const json_t *noise_a, const json_t *noise_b)
{
    json_t *fa = json_object_get(a, GPURUN_REC_FOMS), *fb = json_object_get(b, GPURUN_REC_FOMS);
    for (int side = 0; side < 2; side++) {
        const char *name;
        json_t *f;
        json_object_foreach(side ? fb : fa, name, f)
        {
            if (side && json_object_get(fa, name))
                continue;
            double va = NAN, vb = NAN;
            bool ha = gpurun_record_fom_value(json_object_get(fa, name), &va),
                 hb = gpurun_record_fom_value(json_object_get(fb, name), &vb);
            if (ha && hb && va == vb)
                continue;
            json_t *d = json_pack("{s:s, s:s, s:o, s:o}", "section", "figures", "key", name, "a",
                                  ha ? json_real(va) : json_null(), "b", hb ? json_real(vb) : json_null());
            const char *units = gpurun_record_str(f, GPURUN_REC_FOM_UNITS);
            json_object_set_new(d, "units", units ? json_string(units) : json_null());
            if (ha && hb && va != 0)
                json_object_set_new(d, "change", json_real(vb / va - 1));
            if (ha && hb)
                noise_verdict(d, va, vb, json_object_get(noise_a, name), json_object_get(noise_b, name));
            json_array_append_new(out, d);
        }
    }
}

static void diff_keys(json_t *out, const char *section, const json_t *a, const json_t *b, const char *const *keys,
                      size_t n)
{
    for (size_t i = 0; i < n; i++)
        add(out, section, keys[i], json_object_get(a, keys[i]), json_object_get(b, keys[i]));
}

/* One rank's binding: the plan's GPUs, NICs, NUMA nodes and cpus, and the
 * cpus and host it reported. */
static json_t *rank_binding(const json_t *r, size_t i)
{
    json_t *p = json_array_get(get2(r, GPURUN_REC_PLAN, "ranks"), i);
    json_t *got = json_array_get(json_object_get(r, GPURUN_REC_BINDINGS), i);
    if (!p && !got)
        return NULL;
    json_t *o = json_object();
    static const char *const plan_keys[] = {"cpus", "gpus", "gpu_pci", "nics", "numa"};
    for (size_t k = 0; k < sizeof plan_keys / sizeof *plan_keys; k++)
        if (json_object_get(p, plan_keys[k]))
            json_object_set(o, plan_keys[k], json_object_get(p, plan_keys[k]));
    if (json_object_get(got, "host"))
        json_object_set(o, "host", json_object_get(got, "host"));
    if (json_object_get(got, "cpus"))
        json_object_set(o, "cpus_reported", json_object_get(got, "cpus"));
    return o;
}

/* Each rank's binding; a rank of one run only is shown whole.  Past the
 * section's bound the ranks that differ are counted, not listed. */
static void diff_bindings(json_t *out, const json_t *a, const json_t *b)
{
    size_t na = json_array_size(get2(a, GPURUN_REC_PLAN, "ranks")),
           nb = json_array_size(get2(b, GPURUN_REC_PLAN, "ranks"));
    size_t n = na > nb ? na : nb, more = 0;
    for (size_t i = 0; i < n && i < GPURUN_RUNDIFF_RANKS_MAX; i++) {
        json_t *ra = rank_binding(a, i), *rb = rank_binding(b, i);
        bool same = ra && rb && json_equal(ra, rb);
        if (!same && section_count(out, "bindings") >= GPURUN_RUNDIFF_SECTION_MAX - 1)
            more++;
        else if (!same) {
            char prefix[48];
            snprintf(prefix, sizeof prefix, "rank %zu", i);
            if (!ra || !rb)
                add(out, "bindings", prefix, ra, rb);
            else
                add_flat(out, "bindings", prefix, ra, rb, 1);
        }
        json_decref(ra);
        json_decref(rb);
    }
    if (n > GPURUN_RUNDIFF_RANKS_MAX)
        json_array_append_new(out, json_pack("{s:s, s:s, s:I, s:I}", "section", "bindings", "key",
                                             "ranks compared (of all)", "a", (json_int_t)GPURUN_RUNDIFF_RANKS_MAX, "b",
                                             (json_int_t)n));
    if (more)
        json_array_append_new(out, json_pack("{s:s, s:s, s:I, s:n}", "section", "bindings", "key",
                                             "more ranks differ (not listed)", "a", (json_int_t)more, "b"));
}

/* Inputs by path: each one's sha256 (and size), one only in a or b. */
static void diff_inputs(json_t *out, const json_t *a, const json_t *b)
{
    json_t *ia = get2(a, GPURUN_REC_PROVENANCE, GPURUN_REC_PROV_INPUTS);
    json_t *ib = get2(b, GPURUN_REC_PROVENANCE, GPURUN_REC_PROV_INPUTS);
    json_t *by_a = json_object(), *by_b = json_object(), *x;
    size_t i;
    json_array_foreach(ia, i, x) if (gpurun_record_str(x, GPURUN_REC_PROV_PATH)) json_object_set(
        by_a, gpurun_record_str(x, GPURUN_REC_PROV_PATH), or_null(json_object_get(x, GPURUN_REC_PROV_SHA256)));
    json_array_foreach(ib, i, x) if (gpurun_record_str(x, GPURUN_REC_PROV_PATH)) json_object_set(
        by_b, gpurun_record_str(x, GPURUN_REC_PROV_PATH), or_null(json_object_get(x, GPURUN_REC_PROV_SHA256)));
    add_flat(out, "inputs", "", by_a, by_b, FLAT_DEPTH_MAX - 1);
    json_decref(by_a);
    json_decref(by_b);
}

/* The conditions two runs ran in: the verdicts, and the measured figures
 * where they differ by more than two runs of one configuration do on a
 * quiet node (a tenth of the cores' time, a point of load, 5 % of the
 * clock); each host's detail stays in the records. */
static void diff_conditions(json_t *out, const json_t *a, const json_t *b)
{
    const json_t *ca = json_object_get(a, GPURUN_REC_CONDITIONS), *cb = json_object_get(b, GPURUN_REC_CONDITIONS);
    static const char *const verdicts[] = {GPURUN_REC_COND_BUSY,          GPURUN_REC_COND_WHY,
                                           GPURUN_REC_COND_THROTTLED,     GPURUN_REC_COND_GPU_THROTTLED,
                                           GPURUN_REC_COND_GPU_OTHERS,    GPURUN_REC_COND_BUSY_SHARE};
    for (size_t i = 0; i < sizeof verdicts / sizeof *verdicts; i++)
        add(out, "conditions", verdicts[i], json_object_get(ca, verdicts[i]), json_object_get(cb, verdicts[i]));
    static const struct {
        const char *key;
        double apart;  /* absolute */
        double rel;    /* of the larger */
    } figures[] = {{GPURUN_REC_COND_FOREIGN_CPU_SHARE, 0.1, 0}, {GPURUN_REC_COND_LOAD1, 1.0, 0},
                   {GPURUN_REC_COND_CPU_MHZ, 0, 0.05}};
    for (size_t i = 0; i < sizeof figures / sizeof *figures; i++) {
        json_t *va = json_object_get(ca, figures[i].key), *vb = json_object_get(cb, figures[i].key);
        if (json_is_number(va) && json_is_number(vb)) {
            double x = json_number_value(va), y = json_number_value(vb), big = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
            if (fabs(x - y) <= figures[i].apart + figures[i].rel * big)
                continue;
        }
        add(out, "conditions", figures[i].key, va, vb);
    }
}

static void diff_sections(json_t *out, const json_t *a, const json_t *b)
{
    diff_conditions(out, a, b);
    static const char *const hw[] = {GPURUN_REC_HOSTS, GPURUN_REC_CPU_MODEL, GPURUN_REC_GPU_MODEL, GPURUN_REC_LAUNCHER};
    diff_keys(out, "hosts and hardware", a, b, hw, sizeof hw / sizeof *hw);
    add(out, "hosts and hardware", "driver",
        json_object_get(get2(a, GPURUN_REC_PROVENANCE, GPURUN_REC_PROV_VERSIONS), GPURUN_REC_PROV_DRIVER),
        json_object_get(get2(b, GPURUN_REC_PROVENANCE, GPURUN_REC_PROV_VERSIONS), GPURUN_REC_PROV_DRIVER));
    static const char *const layout[] = {GPURUN_REC_NODES, GPURUN_REC_RANKS, GPURUN_REC_GPUS_PER_RANK,
                                         GPURUN_REC_THREADS_PER_RANK, GPURUN_REC_GPUS};
    diff_keys(out, "layout", a, b, layout, sizeof layout / sizeof *layout);
    diff_bindings(out, a, b);
    static const char *const job[] = {GPURUN_REC_JOB, GPURUN_REC_TEMPLATE, GPURUN_REC_CONFIG, GPURUN_REC_COMMAND};
    diff_keys(out, "job", a, b, job, sizeof job / sizeof *job);
    add_flat(out, "job", "params", json_object_get(a, GPURUN_REC_PARAMS), json_object_get(b, GPURUN_REC_PARAMS), 1);
    json_t *pa = json_object_get(a, GPURUN_REC_PROVENANCE), *pb = json_object_get(b, GPURUN_REC_PROVENANCE);
    add(out, "job", "overrides", json_object_get(pa, GPURUN_REC_PROV_OVERRIDES),
        json_object_get(pb, GPURUN_REC_PROV_OVERRIDES));
    add(out, "job", "job file sha256", get2(pa, GPURUN_REC_PROV_JOB, GPURUN_REC_PROV_SHA256),
        get2(pb, GPURUN_REC_PROV_JOB, GPURUN_REC_PROV_SHA256));
    add(out, "job", "template sha256", get2(pa, GPURUN_REC_PROV_TEMPLATE, GPURUN_REC_PROV_SHA256),
        get2(pb, GPURUN_REC_PROV_TEMPLATE, GPURUN_REC_PROV_SHA256));
    add_flat(out, "program", "", json_object_get(pa, GPURUN_REC_PROV_PROGRAM),
             json_object_get(pb, GPURUN_REC_PROV_PROGRAM), 1);
    diff_inputs(out, a, b);
    add(out, "versions", "program", json_object_get(a, GPURUN_REC_PROGRAM_VERSION),
        json_object_get(b, GPURUN_REC_PROGRAM_VERSION));
    json_t *va = json_object_get(pa, GPURUN_REC_PROV_VERSIONS), *vb = json_object_get(pb, GPURUN_REC_PROV_VERSIONS);
    add(out, "versions", "mpi", json_object_get(va, GPURUN_REC_PROV_MPI), json_object_get(vb, GPURUN_REC_PROV_MPI));
    add(out, "versions", "gpurun", json_object_get(a, GPURUN_REC_GPURUN_VERSION),
        json_object_get(b, GPURUN_REC_GPURUN_VERSION));
    /* What gpurun set: rank 0's environment (the others differ in their rank only). */
    add_flat(out, "environment", "", json_object_get(json_array_get(get2(a, GPURUN_REC_PLAN, "ranks"), 0), "env"),
             json_object_get(json_array_get(get2(b, GPURUN_REC_PLAN, "ranks"), 0), "env"), 1);
}

static json_t *run_id_json(const char *dir, const json_t *r)
{
    return json_pack("{s:s, s:s?, s:s?, s:s?, s:s?}", "run_dir", dir, "run_id", gpurun_record_str(r, GPURUN_REC_RUN_ID),
                     "job", gpurun_record_str(r, GPURUN_REC_JOB), "start", gpurun_record_str(r, GPURUN_REC_START),
                     "state", gpurun_record_str(r, GPURUN_REC_STATE));
}

json_t *gpurun_rundiff(const char *dir_a, const json_t *a, const json_t *noise_a, const char *dir_b, const json_t *b,
                       const json_t *noise_b)
{
    json_t *out = json_array();
    diff_figures(out, a, b, noise_a, noise_b);
    diff_sections(out, a, b);
    return json_pack("{s:o, s:o, s:o}", "a", run_id_json(dir_a, a), "b", run_id_json(dir_b, b), "differences", out);
}

/* ---- as text ------------------------------------------------------------------ */

/* A value for a terminal: compact JSON (a string bare), cut at SHOWN_MAX. */
static char *shown(const json_t *v)
{
    if (!v || json_is_null(v))
        return gpurun_xstrdup("(none)");
    char *raw = json_is_string(v) ? gpurun_xstrdup(json_string_value(v))
                : json_is_real(v) ? gpurun_xasprintf("%.6g", json_real_value(v))
                : v               ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)
                                  : NULL;
    if (!raw)
        return gpurun_xstrdup("?");
    if (strlen(raw) > SHOWN_MAX)
        memcpy(raw + SHOWN_MAX - 3, "...", 4);
    char *t = gpurun_terminal_text(raw);
    free(raw);
    return t;
}

static void figure_line(struct gpurun_strbuf *b, const json_t *d, const char *a, const char *bv)
{
    const char *units = gpurun_record_str(d, "units");
    gpurun_strbuf_printf(b, "  %s: %s -> %s%s%s", json_string_value(json_object_get(d, "key")), a, bv,
                         units && *units ? " " : "", units ? units : "");
    if (json_is_number(json_object_get(d, "change")))
        gpurun_strbuf_printf(b, " (%+.1f%%)", 100 * json_number_value(json_object_get(d, "change")));
    const char *noise = gpurun_record_str(d, "noise");
    if (noise && json_is_number(json_object_get(d, "noise_sd")))
        gpurun_strbuf_printf(b, ", %s (sd %.3g; %lld and %lld runs of each configuration)", noise,
                             json_number_value(json_object_get(d, "noise_sd")),
                             (long long)json_integer_value(json_object_get(d, "runs_a")),
                             (long long)json_integer_value(json_object_get(d, "runs_b")));
    else if (noise)
        gpurun_strbuf_printf(b, ", %s (fewer than 2 runs of either configuration in the results)", noise);
    gpurun_strbuf_puts(b, "\n");
}

char *gpurun_rundiff_text(const json_t *diff)
{
    struct gpurun_strbuf b = {0};
    const json_t *ra = json_object_get(diff, "a"), *rb = json_object_get(diff, "b");
    char *da = shown(json_object_get(ra, "run_dir")), *db = shown(json_object_get(rb, "run_dir"));
    gpurun_strbuf_printf(&b, "A: %s\nB: %s\n", da, db);
    free(da);
    free(db);
    const char *last = "";
    size_t i;
    json_t *d, *diffs = json_object_get(diff, "differences");
    json_array_foreach(diffs, i, d)
    {
        const char *section = json_string_value(json_object_get(d, "section"));
        if (strcmp(section, last) != 0)
            gpurun_strbuf_printf(&b, "%s:\n", section);
        last = section;
        char *a = shown(json_object_get(d, "a")), *bv = shown(json_object_get(d, "b"));
        char *key = shown(json_object_get(d, "key"));
        if (!strcmp(section, "figures"))
            figure_line(&b, d, a, bv);
        else
            gpurun_strbuf_printf(&b, "  %s: %s -> %s\n", key, a, bv);
        free(a);
        free(bv);
        free(key);
    }
    if (!json_array_size(diffs))
        gpurun_strbuf_puts(&b, "no differences\n");
    return b.s ? b.s : gpurun_xstrdup("");
}
