/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun report (SPEC §7): runs grouped per job and configuration, their
 * statistics, scaling and cost; written as text, SVG or HTML by hand.
 *
 * Every string that comes from a record (job names, params, units, GPU
 * models) is untrusted: escaped for XML/HTML where it goes into the SVG or
 * the page, its control characters written \xNN where it goes to a
 * terminal.  The page has no script and loads nothing (its
 * Content-Security-Policy says so too). */
#include "config.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "report.h"
#include "record.h"
#include "results.h"
#include "safefile.h"
#include "select.h"
#include "util.h"

/* XML/HTML text and attribute values: the five special characters, and
 * control characters (not allowed in XML 1.0) written as visible \xNN. */
static void besc(struct gpurun_strbuf *b, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '&': gpurun_strbuf_puts(b, "&amp;"); break;
        case '<': gpurun_strbuf_puts(b, "&lt;"); break;
        case '>': gpurun_strbuf_puts(b, "&gt;"); break;
        case '"': gpurun_strbuf_puts(b, "&quot;"); break;
        case '\'': gpurun_strbuf_puts(b, "&#39;"); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                gpurun_strbuf_printf(b, "\\x%02x", *p);
            else
                gpurun_strbuf_add(b, (const char *)p, 1);
        }
    }
}

static char *bdone(struct gpurun_strbuf *b)
{
    if (!b->s)
        gpurun_strbuf_puts(b, "");
    return b->s;
}

char *gpurun_xml_escape(const char *s)
{
    struct gpurun_strbuf b = {0};
    besc(&b, s);
    return bdone(&b);
}

int gpurun_write_text(const char *path, const char *text, gpurun_error_t *err)
{
    /* A random temporary name beside it (O_EXCL, O_NOFOLLOW), mode 0644
     * whatever the umask, then a rename; a symlink at `path` is refused. */
    if (gpurun_write_atomic(path, text, strlen(text), 0644, 0, err) < 0) {
        err->code = GPURUN_EXIT_CONFIG; /* a file the user named: a usage error */
        return -1;
    }
    return 0;
}

/* ---- units and cost --------------------------------------------------- */

/* Hours in one `u`, 0 when `u` is no time unit. */
static double time_hours(const char *u, size_t n)
{
    static const struct {
        const char *name;
        double hours;
    } units[] = {
        {"s", 1 / 3600.0},
        {"sec", 1 / 3600.0},
        {"secs", 1 / 3600.0},
        {"second", 1 / 3600.0},
        {"seconds", 1 / 3600.0},
        {"ms", 1 / 3600e3},
        {"min", 1 / 60.0},
        {"mins", 1 / 60.0},
        {"minute", 1 / 60.0},
        {"minutes", 1 / 60.0},
        {"h", 1},
        {"hr", 1},
        {"hrs", 1},
        {"hour", 1},
        {"hours", 1},
        {"d", 24},
        {"day", 24},
        {"days", 24},
    };
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (strlen(units[i].name) == n && strncasecmp(u, units[i].name, n) == 0)
            return units[i].hours;
    return 0;
}

/* "FLOP", "GFLOP", "TFlop", "kflop", "GFLOPS": the prefix's power of ten in
 * *scale; *per_s when the unit ends in S (FLOP per second).  0 when `u` is
 * no FLOP count. */
static int flop_unit(const char *u, size_t n, double *scale, bool *per_s)
{
    static const char prefixes[] = "kMGTPE";
    *scale = 1;
    if (n >= 5 && strncasecmp(u + 1, "flop", 4) == 0) {
        const char *p = u[0] == 'K' ? prefixes : strchr(prefixes, u[0]);
        if (!p)
            return 0;
        *scale = pow(1000, (double)(p - prefixes + 1));
        u++;
        n--;
    }
    if (n == 4 && strncasecmp(u, "flop", 4) == 0) {
        *per_s = false;
        return 1;
    }
    if (n == 5 && strncasecmp(u, "flops", 5) == 0) {
        *per_s = true;
        return 1;
    }
    return 0;
}

static bool work_name_ok(const char *s, size_t n)
{
    if (n == 0 || n >= sizeof((struct gpurun_cost_basis *)0)->work)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

int gpurun_cost_basis(const char *units, const char *better, struct gpurun_cost_basis *b)
{
    memset(b, 0, sizeof *b);
    b->kind = GPURUN_COST_NONE;
    b->prefix = 1;
    if (!units || !*units)
        return -1;
    bool lower = better && strcmp(better, "lower") == 0;
    const char *slash = strrchr(units, '/');
    double scale;
    bool per_s;
    if (!slash) {
        size_t n = strlen(units);
        if (!lower && flop_unit(units, n, &scale, &per_s) && per_s) { /* "GFLOPS" */
            b->kind = GPURUN_COST_RATE;
            b->hours = 1 / 3600.0;
            b->prefix = scale;
            b->flop = true;
            snprintf(b->work, sizeof b->work, "FLOP");
        } else if (lower && time_hours(units, n) > 0) { /* time to solution */
            b->kind = GPURUN_COST_TIME;
            b->hours = time_hours(units, n);
            snprintf(b->work, sizeof b->work, "run");
        }
        return b->kind == GPURUN_COST_NONE ? -1 : 0;
    }
    const char *num = units, *den = slash + 1;
    size_t nnum = (size_t)(slash - units), nden = strlen(den);
    if (!lower) {
        double h = time_hours(den, nden);
        if (h <= 0)
            return -1;
        if (flop_unit(num, nnum, &scale, &per_s) && !per_s) {
            b->prefix = scale;
            b->flop = true;
            snprintf(b->work, sizeof b->work, "FLOP");
        } else if (work_name_ok(num, nnum)) {
            snprintf(b->work, sizeof b->work, "%.*s", (int)nnum, num);
        } else {
            return -1;
        }
        b->kind = GPURUN_COST_RATE;
        b->hours = h;
        return 0;
    }
    double h = time_hours(num, nnum);
    if (h <= 0 || !work_name_ok(den, nden))
        return -1;
    b->kind = GPURUN_COST_TIME;
    b->hours = h;
    snprintf(b->work, sizeof b->work, "%s", den);
    return 0;
}

double gpurun_cost_hours(const struct gpurun_cost_basis *b, double value)
{
    if (!(value > 0) || !isfinite(value))
        return NAN;
    switch (b->kind) {
    case GPURUN_COST_RATE: return b->hours / (value * b->prefix);
    case GPURUN_COST_TIME: return value * b->hours;
    default: return NAN;
    }
}

/* ---- grouping --------------------------------------------------------- */

static char *params_text(const json_t *params)
{
    struct gpurun_strbuf b = {0};
    const char *k;
    json_t *v;
    /* Sorted, as the key is. */
    const char **keys = gpurun_xcalloc(json_object_size(params) + 1, sizeof *keys);
    size_t n = 0;
    json_object_foreach((json_t *)params, k, v) keys[n++] = k;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
            const char *t = keys[j];
            keys[j] = keys[j - 1];
            keys[j - 1] = t;
        }
    for (size_t i = 0; i < n; i++) {
        v = json_object_get(params, keys[i]);
        char *val = json_is_string(v) ? gpurun_xstrdup(json_string_value(v))
                                      : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        gpurun_strbuf_printf(&b, "%s%s=%s", i ? " " : "", keys[i], val ? val : "?");
        free(val);
    }
    free(keys);
    if (!n)
        gpurun_strbuf_puts(&b, "-");
    return bdone(&b);
}

static bool monitor_shows(const json_t *m);

struct pending {   /* what a job needs while it is being grouped */
    char **series; /* params keys in order of appearance */
    size_t last;   /* the configuration of the last run: repeats come in a row */
};

/* What a report needs while runs are added; freed by finish. */
struct gpurun_report_building {
    struct pending *pend; /* one per job */
    size_t last_job;
};

/* The kind a record says, where the figure has none yet. */
static void fom_kind_from(struct gpurun_report_fom *f, const json_t *fom)
{
    const char *k = f->kind_said ? NULL : gpurun_record_str(fom, GPURUN_REC_FOM_KIND);
    if (!k)
        return;
    static const struct {
        const char *name;
        enum gpurun_fom_kind kind;
    } kinds[] = {{"throughput", GPURUN_FOM_THROUGHPUT}, {"time", GPURUN_FOM_TIME}, {"other", GPURUN_FOM_OTHER}};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (strcmp(k, kinds[i].name) == 0) {
            f->kind = kinds[i].kind;
            f->kind_said = true;
        }
}

static size_t find_fom(struct gpurun_report_job *job, const char *name, const json_t *fom)
{
    for (size_t i = 0; i < job->nfoms; i++)
        if (strcmp(job->foms[i].name, name) == 0) {
            fom_kind_from(&job->foms[i], fom);
            return i;
        }
    job->foms = gpurun_xrealloc(job->foms, (job->nfoms + 1) * sizeof *job->foms);
    struct gpurun_report_fom *f = &job->foms[job->nfoms];
    memset(f, 0, sizeof *f);
    f->name = gpurun_xstrdup(name);
    const char *u = gpurun_record_str(fom, GPURUN_REC_FOM_UNITS), *b = gpurun_record_str(fom, GPURUN_REC_FOM_BETTER);
    f->units = gpurun_xstrdup(u ? u : "");
    f->better = gpurun_xstrdup(b && strcmp(b, "lower") == 0 ? "lower" : "higher");
    f->kind = GPURUN_FOM_OTHER;
    fom_kind_from(f, fom);
    return job->nfoms++;
}

static struct gpurun_report_config *find_config(struct gpurun_report_job *job, struct pending *p,
                                                const json_t *run)
{
    long nodes = gpurun_record_int(run, GPURUN_REC_NODES, -1), ranks = gpurun_record_int(run, GPURUN_REC_RANKS, -1);
    long gpr = gpurun_record_int(run, GPURUN_REC_GPUS_PER_RANK, -1),
         tpr = gpurun_record_int(run, GPURUN_REC_THREADS_PER_RANK, -1);
    json_t *params = json_object_get(run, GPURUN_REC_PARAMS);
    char *key = json_is_object(params) ? json_dumps(params, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (!key)
        key = gpurun_xstrdup("{}");
    for (size_t k = 0; k < job->nconfigs; k++) {
        size_t i = k == 0 && p->last < job->nconfigs ? p->last : k == p->last ? 0 : k;
        struct gpurun_report_config *c = &job->configs[i];
        if (c->nodes == nodes && c->ranks == ranks && c->gpus_per_rank == gpr &&
            c->threads_per_rank == tpr && strcmp(c->params, key) == 0) {
            free(key);
            p->last = i;
            return c;
        }
    }
    size_t s = 0;
    while (s < job->nseries && strcmp(p->series[s], key) != 0)
        s++;
    if (s == job->nseries) {
        p->series = gpurun_xrealloc(p->series, (s + 1) * sizeof *p->series);
        p->series[s] = gpurun_xstrdup(key);
        job->nseries++;
    }
    job->configs = gpurun_xrealloc(job->configs, (job->nconfigs + 1) * sizeof *job->configs);
    struct gpurun_report_config *c = &job->configs[job->nconfigs++];
    memset(c, 0, sizeof *c);
    c->nodes = nodes;
    c->ranks = ranks;
    c->gpus_per_rank = gpr;
    c->threads_per_rank = tpr;
    c->gpus = gpurun_record_gpus(run);
    c->params = key;
    c->params_text = json_is_object(params) ? params_text(params) : gpurun_xstrdup("-");
    c->label = gpurun_record_config_text(run);
    c->series = s;
    c->price = c->spot_price = NAN;
    p->last = job->nconfigs - 1;
    return c;
}

/* One more value of a record field into a configuration's distinct ones. */
static void values_add(struct gpurun_report_values *vs, const char *v)
{
    if (!v || !*v)
        return;
    for (size_t i = 0; i < vs->n; i++)
        if (strcmp(vs->v[i], v) == 0)
            return;
    if (vs->n < GPURUN_REPORT_VALUES_MAX)
        vs->v[vs->n++] = gpurun_xstrdup(v);
    else if (vs->more < SIZE_MAX)
        vs->more++; /* counted, not told apart: a bound, whatever the runs */
}

static void values_free(struct gpurun_report_values *vs)
{
    for (size_t i = 0; i < vs->n; i++)
        free(vs->v[i]);
}

/* The values in a line: "a, b (and 3 more)"; "-" none. */
static char *values_text(const struct gpurun_report_values *vs)
{
    struct gpurun_strbuf b = {0};
    for (size_t i = 0; i < vs->n; i++)
        gpurun_strbuf_printf(&b, "%s%s", i ? ", " : "", vs->v[i]);
    if (vs->more)
        gpurun_strbuf_printf(&b, " (and %zu more)", vs->more);
    if (!vs->n)
        gpurun_strbuf_puts(&b, "-");
    return bdone(&b);
}

static void listed_free(struct gpurun_report_failed *f)
{
    free(f->start);
    free(f->config);
    free(f->state);
    free(f->reason);
    free(f->folder);
}

/* A run into one of its job's lists (not ok, busy): the latest
 * GPURUN_REPORT_FAILED_MAX.  `state` NULL: the record's; `reason` NULL:
 * the record's failure. */
static void listed_add(struct gpurun_report_failed **list, size_t *nkept, const struct gpurun_report_config *c,
                       const json_t *run, const char *state, const char *reason)
{
    if (*nkept == GPURUN_REPORT_FAILED_MAX) {
        listed_free(&(*list)[0]);
        memmove(*list, *list + 1, (GPURUN_REPORT_FAILED_MAX - 1) * sizeof **list);
        (*nkept)--;
    }
    if (!*list)
        *list = gpurun_xcalloc(GPURUN_REPORT_FAILED_MAX, sizeof **list);
    struct gpurun_report_failed *f = &(*list)[(*nkept)++];
    const char *start = gpurun_record_str(run, GPURUN_REC_START), *rec = gpurun_record_str(run, "record");
    if (!state)
        state = gpurun_record_str(run, GPURUN_REC_STATE);
    f->start = gpurun_xstrdup(start ? start : "-");
    f->state = gpurun_xstrdup(state ? state : "unknown");
    char *why = reason ? gpurun_xstrdup(reason) : gpurun_record_failure_text(run);
    f->reason = why ? why : gpurun_xstrdup("-");
    /* "record" is JOB/RUN-ID/record.json: the folder is what precedes it. */
    const char *slash = rec ? strrchr(rec, '/') : NULL;
    f->folder = slash ? gpurun_xasprintf("%.*s", (int)(slash - rec), rec) : gpurun_xstrdup("-");
    if (strcmp(c->label, "-") != 0)
        f->config = gpurun_xstrdup(c->label);
    else
        f->config = gpurun_xasprintf("%ld rank%s on %ld node%s%s%s", c->ranks, c->ranks == 1 ? "" : "s", c->nodes,
                                     c->nodes == 1 ? "" : "s", strcmp(c->params_text, "-") ? "; " : "",
                                     strcmp(c->params_text, "-") ? c->params_text : "");
}

/* Statistics for the job's figures so far (figures appear as runs come). */
static void reserve_stats(struct gpurun_report_config *c, size_t nfoms)
{
    if (c->nstats >= nfoms && c->stats)
        return;
    c->stats = gpurun_xrealloc(c->stats, (nfoms + 1) * sizeof *c->stats);
    for (size_t f = c->nstats; f <= nfoms; f++) {
        memset(&c->stats[f], 0, sizeof c->stats[f]);
        c->stats[f].speedup = c->stats[f].efficiency = NAN;
        c->stats[f].cv = NAN;
        c->stats[f].cost = c->stats[f].spot_cost = NAN;
    }
    c->nstats = nfoms;
}

/* Two neighbouring points as one: weights under 1, so that figures near
 * DBL_MAX do not overflow. */
static struct gpurun_report_point point_merge(const struct gpurun_report_point *a,
                                              const struct gpurun_report_point *b)
{
    struct gpurun_report_point m = {.n = a->n + b->n};
    m.start = fmin(a->start, b->start);
    m.end = fmax(a->end, b->end);
    m.mean = a->mean * ((double)a->n / (double)m.n) + b->mean * ((double)b->n / (double)m.n);
    m.min = fmin(a->min, b->min);
    m.max = fmax(a->max, b->max);
    return m;
}

/* One run's figure into its configuration's history: bounded, whatever
 * the number of runs (pairs taken together when it is full). */
void gpurun_report_history_add(struct gpurun_report_stat *st, double start, double v)
{
    struct gpurun_report_point p = {.start = start, .end = start, .n = 1, .mean = v, .min = v, .max = v};
    if (st->history_per == 0)
        st->history_per = 1;
    if (st->nhistory == GPURUN_REPORT_HISTORY_MAX && st->history[st->nhistory - 1].n >= st->history_per) {
        for (size_t i = 0; i < st->nhistory / 2; i++)
            st->history[i] = point_merge(&st->history[2 * i], &st->history[2 * i + 1]);
        st->nhistory /= 2;
        st->history_per *= 2;
    }
    struct gpurun_report_point *last = st->nhistory ? &st->history[st->nhistory - 1] : NULL;
    if (last && last->n < st->history_per) {
        *last = point_merge(last, &p);
        return;
    }
    if (st->nhistory == st->history_cap) {
        st->history_cap = st->history_cap ? 2 * st->history_cap : 8;
        st->history = gpurun_xrealloc(st->history, st->history_cap * sizeof *st->history);
    }
    st->history[st->nhistory++] = p;
}

static int cmp_point(const void *pa, const void *pb)
{
    const struct gpurun_report_point *a = pa, *b = pb;
    return a->start < b->start ? -1 : a->start > b->start;
}

/* The history worth a plot: the main figure of the configuration with the
 * most runs in it, 2 at least.  Runs come by start time from the index;
 * from elsewhere they may not, and the points are put in order. */
static void pick_history(struct gpurun_report_job *job)
{
    job->history_config = job->history_fom = -1;
    long f = gpurun_report_main_fom(job);
    size_t most = 1;
    for (size_t c = 0; f >= 0 && c < job->nconfigs; c++) {
        struct gpurun_report_stat *st = &job->configs[c].stats[f];
        size_t runs = 0;
        for (size_t i = 0; i < st->nhistory; i++)
            runs += st->history[i].n;
        if (runs > most) {
            most = runs;
            job->history_config = (long)c;
            job->history_fom = f;
        }
    }
    for (size_t c = 0; c < job->nconfigs; c++)
        for (size_t k = 0; k < job->nfoms; k++) {
            if (job->configs[c].stats[k].nhistory > 1)
                qsort(job->configs[c].stats[k].history, job->configs[c].stats[k].nhistory,
                      sizeof(struct gpurun_report_point), cmp_point);
            struct gpurun_report_energy *en = job->configs[c].energy;
            if (en && k < en->nfoms && en->per_unit[k].hist.nhistory > 1)
                qsort(en->per_unit[k].hist.history, en->per_unit[k].hist.nhistory, sizeof(struct gpurun_report_point),
                      cmp_point);
        }
}

static bool is_ok(const json_t *run)
{
    const char *s = gpurun_record_str(run, GPURUN_REC_STATE);
    return s && strcmp(s, "ok") == 0;
}

static int cmp_config(const void *pa, const void *pb)
{
    const struct gpurun_report_config *a = pa, *b = pb;
    const long ka[] = {(long)a->series, a->resources,     a->nodes,
                       a->ranks,        a->gpus_per_rank, a->threads_per_rank};
    const long kb[] = {(long)b->series, b->resources,     b->nodes,
                       b->ranks,        b->gpus_per_rank, b->threads_per_rank};
    for (size_t i = 0; i < sizeof ka / sizeof *ka; i++)
        if (ka[i] != kb[i])
            return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

static int cmp_job(const void *pa, const void *pb)
{
    const struct gpurun_report_job *a = pa, *b = pb;
    return strcmp(a->name, b->name);
}

/* Speedup, efficiency against each series' smallest configuration: of a
 * throughput figure, the ratio of the means; of a time figure (hour/ns, s
 * to solution), the ratio of the means of its inverse, the throughput
 * (equivalently, of the harmonic means of the times), so that hour_per_ns
 * gives the speedup ns_per_day gives for the same runs: the mean of the
 * times is not the inverse of the mean throughput (ns/day 31 and 56 make
 * 43.5 ns/day, but their hour/ns a mean of 0.60, i.e. 40 ns/day).  The
 * throughput is what adds up over runs of equal work; none for other
 * figures (iterations, a residual), whose ratio is no speedup. */
static void scaling(struct gpurun_report_job *job, size_t f)
{
    enum gpurun_fom_kind kind = job->foms[f].kind;
    /* One configuration scales against nothing: no 1.00 to read into. */
    size_t sized = 0;
    for (size_t i = 0; i < job->nconfigs && sized < 2; i++)
        sized += job->configs[i].resources > 0 && job->configs[i].stats[f].n > 0;
    if (kind == GPURUN_FOM_OTHER || sized < 2)
        return;
    if (kind == GPURUN_FOM_TIME) {
        for (size_t s = 0; s < job->nseries; s++) {
            const struct gpurun_report_config *base = NULL;
            for (size_t i = 0; i < job->nconfigs && !base; i++) {
                const struct gpurun_report_config *c = &job->configs[i];
                if (c->series == s && c->resources > 0 && c->stats[f].inv_n > 0 && c->stats[f].inv_mean > 0)
                    base = c;
            }
            for (size_t i = 0; base && i < job->nconfigs; i++) {
                struct gpurun_report_config *c = &job->configs[i];
                struct gpurun_report_stat *st = &c->stats[f];
                if (c->series != s || c->resources <= 0 || st->inv_n == 0 || !(st->inv_mean > 0))
                    continue;
                st->speedup = st->inv_mean / base->stats[f].inv_mean;
                st->efficiency = st->speedup / ((double)c->resources / (double)base->resources);
            }
        }
        return;
    }
    bool lower = strcmp(job->foms[f].better, "lower") == 0;
    for (size_t s = 0; s < job->nseries; s++) {
        const struct gpurun_report_config *base = NULL;
        for (size_t i = 0; i < job->nconfigs && !base; i++) {
            const struct gpurun_report_config *c = &job->configs[i];
            if (c->series == s && c->resources > 0 && c->stats[f].n > 0 && c->stats[f].mean > 0)
                base = c; /* sorted: the first is the smallest */
        }
        if (!base)
            continue;
        double bm = base->stats[f].mean;
        for (size_t i = 0; i < job->nconfigs; i++) {
            struct gpurun_report_config *c = &job->configs[i];
            struct gpurun_report_stat *st = &c->stats[f];
            if (c->series != s || c->resources <= 0 || st->n == 0 || !(st->mean > 0))
                continue;
            st->speedup = lower ? bm / st->mean : st->mean / bm;
            st->efficiency = st->speedup / ((double)c->resources / (double)base->resources);
        }
    }
}

/* Cost per unit of work shown, in a unit that puts the smallest at 0.01 or
 * more (prices are cents; a cost of 2e-07 per FLOP helps nobody). */
static void costs(struct gpurun_report_job *job, size_t f)
{
    struct gpurun_report_fom *fom = &job->foms[f];
    if (gpurun_cost_basis(fom->units, fom->better, &fom->basis) < 0)
        return;
    double least = INFINITY;
    for (size_t i = 0; i < job->nconfigs; i++) {
        struct gpurun_report_config *c = &job->configs[i];
        struct gpurun_report_stat *st = &c->stats[f];
        double h = st->n ? gpurun_cost_hours(&fom->basis, st->mean) : NAN;
        if (c->gpus > 0 && !isnan(h)) {
            st->cost = c->price >= 0 ? (double)c->gpus * c->price * h : NAN;
            st->spot_cost = c->spot_price >= 0 ? (double)c->gpus * c->spot_price * h : NAN;
        }
        if (st->cost > 0 && st->cost < least)
            least = st->cost;
        if (st->spot_cost > 0 && st->spot_cost < least)
            least = st->spot_cost;
    }
    static const char *const flop_names[] = {"FLOP",  "kFLOP", "MFLOP", "GFLOP",
                                             "TFLOP", "PFLOP", "EFLOP"};
    static const char *const scale_names[] = {"", "1000 ", "million ", "billion ", "trillion "};
    size_t steps = 0, max_steps = fom->basis.flop ? 6 : 4;
    double scale = 1;
    while (isfinite(least) && least * scale < 0.01 && steps < max_steps) {
        scale *= 1000;
        steps++;
    }
    fom->work_scale = scale;
    fom->work_label = fom->basis.flop
                          ? gpurun_xstrdup(flop_names[steps])
                          : gpurun_xasprintf("%s%s", scale_names[steps], fom->basis.work);
    for (size_t i = 0; i < job->nconfigs; i++) {
        job->configs[i].stats[f].cost *= scale;
        job->configs[i].stats[f].spot_cost *= scale;
    }
}

/* A figure whose records said no kind: by its units (report.h). */
static void infer_kind(struct gpurun_report_fom *f)
{
    if (f->kind_said)
        return;
    struct gpurun_cost_basis b;
    gpurun_cost_basis(f->units, f->better, &b);
    f->kind = b.kind == GPURUN_COST_RATE   ? GPURUN_FOM_THROUGHPUT
              : b.kind == GPURUN_COST_TIME ? GPURUN_FOM_TIME
                                           : GPURUN_FOM_OTHER;
}

/* The params alike in every configuration, once (job->params_fixed), and
 * each configuration's others (params_vary): a long list of params, the
 * same on every row, no longer pushes the figures off the screen. */
static void split_params(struct gpurun_report_job *job)
{
    json_t **p = gpurun_xcalloc(job->nconfigs + 1, sizeof *p);
    for (size_t i = 0; i < job->nconfigs; i++) {
        p[i] = json_loads(job->configs[i].params, 0, NULL);
        if (!json_is_object(p[i])) {
            json_decref(p[i]);
            p[i] = json_object();
        }
    }
    json_t *fixed = job->nconfigs ? json_deep_copy(p[0]) : json_object();
    const char *k;
    json_t *v, *tmp;
    json_object_foreach_safe(fixed, tmp, k, v)
    {
        for (size_t i = 1; i < job->nconfigs; i++)
            if (!json_equal(v, json_object_get(p[i], k))) {
                json_object_del(fixed, k);
                break;
            }
    }
    job->params_fixed = json_object_size(fixed) ? params_text(fixed) : NULL;
    for (size_t i = 0; i < job->nconfigs; i++) {
        json_object_foreach(fixed, k, v) json_object_del(p[i], k);
        job->configs[i].params_vary = params_text(p[i]);
        json_decref(p[i]);
    }
    json_decref(fixed);
    free(p);
}

static void finish_job(struct gpurun_report_job *job)
{
    for (size_t f = 0; f < job->nfoms; f++)
        infer_kind(&job->foms[f]);
    split_params(job);
    job->by_gpus = false;
    for (size_t i = 0; i < job->nconfigs; i++)
        job->by_gpus |= job->configs[i].gpus > 0;
    for (size_t i = 0; i < job->nconfigs; i++) {
        struct gpurun_report_config *c = &job->configs[i];
        c->resources = job->by_gpus ? c->gpus : c->ranks;
        for (size_t f = 0; f < job->nfoms; f++) {
            struct gpurun_report_stat *st = &c->stats[f];
            if (!st->n)
                st->mean = st->min = st->max = NAN;
            /* The sample standard deviation over the mean: what the spread
             * is worth against a difference between configurations. */
            st->cv = st->n >= 2 && st->mean != 0 ? sqrt(st->m2 / (double)(st->n - 1)) / fabs(st->mean) : NAN;
            st->spread_flag = st->cv > GPURUN_REPORT_CV_FLAG;
            st->arith_mean = st->mean;
            /* A time figure's mean is the one its speedup is the ratio of:
             * the inverse of its throughput's mean (every value > 0). */
            if (job->foms[f].kind == GPURUN_FOM_TIME && st->n && st->inv_n == st->n && st->inv_mean > 0)
                st->mean = 1 / st->inv_mean;
        }
    }
    if (job->nconfigs > 1)
        qsort(job->configs, job->nconfigs, sizeof *job->configs, cmp_config);
    for (size_t f = 0; f < job->nfoms; f++) {
        scaling(job, f);
        costs(job, f);
    }
    pick_history(job);
}

gpurun_report_t *gpurun_report_new(void)
{
    gpurun_report_t *r = gpurun_xcalloc(1, sizeof *r);
    r->building = gpurun_xcalloc(1, sizeof *r->building);
    return r;
}

/* One run's value of a figure into its configuration's statistics. */
static void stat_add(struct gpurun_report_stat *st, double v, bool has_start, double start)
{
    if (has_start)
        gpurun_report_history_add(st, start, v);
    st->min = st->n == 0 || v < st->min ? v : st->min;
    st->max = st->n == 0 || v > st->max ? v : st->max;
    st->n++;
    /* A running mean: the sum of figures near DBL_MAX overflows; the
     * squared deviations (Welford) for the spread. */
    double before = st->n > 1 ? st->mean : v;
    st->mean = (st->mean - st->mean / (double)st->n) + v / (double)st->n;
    st->m2 += (v - before) * (v - st->mean);
    if (v > 0 && isfinite(1 / v)) { /* a time figure's throughput: its inverse */
        st->inv_n++;
        st->inv_mean += (1 / v - st->inv_mean) / (double)st->inv_n;
    }
}

void gpurun_report_add(gpurun_report_t *r, const json_t *run)
{
    struct gpurun_report_building *bd = r->building;
    const char *name = gpurun_record_str(run, GPURUN_REC_JOB);
    if (!bd || !json_is_object(run) || !name)
        return;
    /* Runs come by job: the last job first. */
    size_t j = bd->last_job < r->njobs && strcmp(r->jobs[bd->last_job].name, name) == 0 ? bd->last_job : 0;
    while (j < r->njobs && strcmp(r->jobs[j].name, name) != 0)
        j++;
    if (j == r->njobs) {
        r->jobs = gpurun_xrealloc(r->jobs, (j + 1) * sizeof *r->jobs);
        bd->pend = gpurun_xrealloc(bd->pend, (j + 1) * sizeof *bd->pend);
        memset(&r->jobs[j], 0, sizeof r->jobs[j]);
        memset(&bd->pend[j], 0, sizeof bd->pend[j]);
        r->jobs[j].name = gpurun_xstrdup(name);
        r->njobs++;
    }
    bd->last_job = j;
    struct gpurun_report_job *job = &r->jobs[j];
    if (!job->template_name && gpurun_record_str(run, GPURUN_REC_TEMPLATE))
        job->template_name = gpurun_xstrdup(gpurun_record_str(run, GPURUN_REC_TEMPLATE));
    struct gpurun_report_config *c = find_config(job, &bd->pend[j], run);
    const char *fname;
    json_t *fom;
    json_object_foreach(json_object_get(run, GPURUN_REC_FOMS), fname, fom)
    {
        if (json_is_object(fom))
            find_fom(job, fname, fom);
    }
    reserve_stats(c, job->nfoms);

    /* Where and with what it ran: of every run, ok or not. */
    size_t hi;
    json_t *h;
    json_array_foreach(json_object_get(run, GPURUN_REC_HOSTS), hi, h) values_add(&c->hosts, json_string_value(h));
    values_add(&c->cpu_models, gpurun_record_str(run, GPURUN_REC_CPU_MODEL));
    values_add(&c->gpu_models, gpurun_record_str(run, GPURUN_REC_GPU_MODEL));
    values_add(&c->program_versions, gpurun_record_str(run, GPURUN_REC_PROGRAM_VERSION));
    values_add(&c->gpurun_versions, gpurun_record_str(run, GPURUN_REC_GPURUN_VERSION));

    /* Runs not ok are counted apart, never averaged, and listed. */
    job->nruns++;
    r->nruns++;
    if (!is_ok(run)) {
        c->nfailed++;
        job->nfailed++;
        r->nfailed++;
        listed_add(&job->failed, &job->nfailed_kept, c, run, NULL, NULL);
        return;
    }
    /* A busy run's figures are likely low: listed, out of the means. */
    if (gpurun_run_busy(run)) {
        r->nbusy++;
        job->nbusy++;
        c->nbusy++;
        if (!r->include_busy) {
            const char *why = gpurun_record_str(json_object_get(run, GPURUN_REC_CONDITIONS), GPURUN_REC_COND_WHY);
            listed_add(&job->busy, &job->nbusy_kept, c, run, "busy", why ? why : "busy");
            return;
        }
    }
    c->nok++;
    double price = gpurun_record_num(run, GPURUN_REC_PRICE_PER_GPU_HOUR),
           spot = gpurun_record_num(run, GPURUN_REC_SPOT_PRICE_PER_GPU_HOUR);
    if (price >= 0)
        c->price = price;
    if (spot >= 0)
        c->spot_price = spot;
    const char *cur = gpurun_record_str(run, GPURUN_REC_CURRENCY);
    if (cur && (price >= 0 || spot >= 0)) {
        free(c->currency);
        c->currency = gpurun_xstrdup(cur);
    }
    double start = 0;
    bool has_start = gpurun_parse_utc(gpurun_record_str(run, GPURUN_REC_START), &start);
    gpurun_report_energy_add(job, c, run, has_start ? start : NAN);
    const char *model = gpurun_record_str(run, GPURUN_REC_GPU_MODEL);
    if (model && !c->gpu_model)
        c->gpu_model = gpurun_xstrdup(model);
    json_t *mon = json_object_get(run, GPURUN_REC_GPUS_MONITOR);
    if (monitor_shows(mon)) { /* a CPU job's null, or GPUs that reported nothing: no table */
        json_decref(c->monitor);
        c->monitor = json_incref(mon); /* outlives the run, which the caller frees */
    }
    json_object_foreach(json_object_get(run, GPURUN_REC_FOMS), fname, fom)
    {
        double v;
        if (json_is_object(fom) && gpurun_record_fom_value(fom, &v))
            stat_add(&c->stats[find_fom(job, fname, fom)], v, has_start, start);
    }
}

void gpurun_report_finish(gpurun_report_t *r)
{
    struct gpurun_report_building *bd = r->building;
    if (!bd)
        return;
    for (size_t j = 0; j < r->njobs; j++) {
        for (size_t c = 0; c < r->jobs[j].nconfigs; c++)
            reserve_stats(&r->jobs[j].configs[c], r->jobs[j].nfoms);
        finish_job(&r->jobs[j]);
        for (size_t s = 0; s < r->jobs[j].nseries; s++)
            free(bd->pend[j].series[s]);
        free(bd->pend[j].series);
    }
    free(bd->pend);
    free(bd);
    r->building = NULL;
    if (r->njobs > 1)
        qsort(r->jobs, r->njobs, sizeof *r->jobs, cmp_job);
}

gpurun_report_t *gpurun_report_build(const json_t *runs)
{
    gpurun_report_t *r = gpurun_report_new();
    size_t i;
    json_t *run;
    json_array_foreach((json_t *)runs, i, run) gpurun_report_add(r, run);
    gpurun_report_finish(r);
    return r;
}

void gpurun_report_destroy(gpurun_report_t *r)
{
    if (!r)
        return;
    gpurun_report_finish(r); /* what a report left unfinished holds */
    for (size_t j = 0; j < r->njobs; j++) {
        struct gpurun_report_job *job = &r->jobs[j];
        for (size_t f = 0; f < job->nfoms; f++) {
            free(job->foms[f].name);
            free(job->foms[f].units);
            free(job->foms[f].better);
            free(job->foms[f].work_label);
        }
        free(job->foms);
        for (size_t c = 0; c < job->nconfigs; c++) {
            struct gpurun_report_config *cf = &job->configs[c];
            free(cf->params);
            free(cf->params_text);
            free(cf->params_vary);
            values_free(&cf->hosts);
            values_free(&cf->cpu_models);
            values_free(&cf->gpu_models);
            values_free(&cf->program_versions);
            values_free(&cf->gpurun_versions);
            free(cf->label);
            free(cf->gpu_model);
            free(cf->currency);
            for (size_t f = 0; f < cf->nstats; f++)
                free(cf->stats[f].history);
            free(cf->stats);
            json_decref(cf->monitor);
            gpurun_report_energy_free(cf);
        }
        free(job->configs);
        for (size_t i = 0; i < job->nfailed_kept; i++)
            listed_free(&job->failed[i]);
        free(job->failed);
        for (size_t i = 0; i < job->nbusy_kept; i++)
            listed_free(&job->busy[i]);
        free(job->busy);
        free(job->params_fixed);
        free(job->name);
        free(job->template_name);
    }
    free(r->jobs);
    free(r->selection);
    free(r);
}

long gpurun_report_main_fom(const struct gpurun_report_job *job)
{
    /* A throughput first, then a time: what scales is what a plot of
     * scaling is for (cg's GFLOP/s, not its iterations). */
    static const enum gpurun_fom_kind order[] = {GPURUN_FOM_THROUGHPUT, GPURUN_FOM_TIME, GPURUN_FOM_OTHER};
    for (size_t k = 0; k < sizeof order / sizeof *order; k++)
        for (size_t f = 0; f < job->nfoms; f++)
            for (size_t c = 0; job->foms[f].kind == order[k] && c < job->nconfigs; c++)
                if (job->configs[c].stats[f].n > 0)
                    return (long)f;
    return -1;
}

bool gpurun_report_plots(const struct gpurun_report_job *job)
{
    long f = gpurun_report_main_fom(job);
    size_t points = 0;
    for (size_t c = 0; f >= 0 && c < job->nconfigs && points < 2; c++)
        points += job->configs[c].stats[f].n > 0 && job->configs[c].resources > 0;
    return points >= 2;
}

/* ---- tables ----------------------------------------------------------- */

char *gpurun_report_number(double v)
{
    if (isnan(v))
        return gpurun_xstrdup("-");
    double a = fabs(v);
    if (a == 0)
        return gpurun_xstrdup("0");
    if (a >= 1e7 || a < 1e-3)
        return gpurun_xasprintf("%.3e", v);
    int digits = 3 - (int)floor(log10(a));
    return gpurun_xasprintf("%.*f", digits < 0 ? 0 : digits, v);
}

static char *fmt_ratio(double v)
{
    return isnan(v) ? gpurun_xstrdup("-") : gpurun_xasprintf("%.2f", v);
}

static char *fmt_cost(double v, const char *currency)
{
    if (isnan(v))
        return gpurun_xstrdup("-");
    char *n = gpurun_report_number(v);
    char *s = gpurun_xasprintf("%s%s%s", n, currency ? " " : "", currency ? currency : "");
    free(n);
    return s;
}

/* A figure's spread over its repeats: "98.00\u2013102.0"; "-" under 2. */
static char *fmt_range(const struct gpurun_report_stat *st)
{
    if (st->n < 2)
        return st->n ? gpurun_report_number(st->min) : gpurun_xstrdup("-");
    char *lo = gpurun_report_number(st->min), *hi = gpurun_report_number(st->max);
    char *s = gpurun_xasprintf("%s\u2013%s", lo, hi);
    free(lo);
    free(hi);
    return s;
}

/* The coefficient of variation, "2.0%", flagged "40.6% !" above
 * GPURUN_REPORT_CV_FLAG; "-" under 2 repeats. */
static char *fmt_cv(const struct gpurun_report_stat *st)
{
    if (!isfinite(st->cv))
        return gpurun_xstrdup("-");
    return gpurun_xasprintf("%.1f%%%s", st->cv * 100, st->spread_flag ? " !" : "");
}

static char *fmt_long(long v)
{
    return v < 0 ? gpurun_xstrdup("-") : gpurun_xasprintf("%ld", v);
}

/* What per-GPU monitoring says of a configuration.  A record's gpus_monitor
 * (monitor.c) is an array with an object per GPU: util_mean (%),
 * mem_peak_mib, power_mean_w, ... each null when the GPU does not report it.
 * Shown: utilisation and power averaged over the GPUs, the highest memory
 * peak.  A flat object of numbers (a summary) is shown as key=value. */
static char *fmt_monitor(const json_t *m)
{
    struct gpurun_strbuf b = {0};
    if (json_is_array(m)) {
        double util = 0, power = 0, mem = -1;
        size_t nu = 0, np = 0;
        size_t i;
        json_t *g;
        json_array_foreach((json_t *)m, i, g)
        {
            double v = gpurun_record_num(g, "util_mean");
            if (!isnan(v)) {
                util += v;
                nu++;
            }
            v = gpurun_record_num(g, "power_mean_w");
            if (!isnan(v)) {
                power += v;
                np++;
            }
            v = gpurun_record_num(g, "mem_peak_mib");
            if (!isnan(v) && v > mem)
                mem = v;
        }
        if (nu)
            gpurun_strbuf_printf(&b, "util %.0f%%", util / (double)nu);
        if (mem >= 0)
            gpurun_strbuf_printf(&b, "%smem peak %.1f GiB", b.len ? ", " : "", mem / 1024);
        if (np)
            gpurun_strbuf_printf(&b, "%spower %.0f W", b.len ? ", " : "", power / (double)np);
    } else if (json_is_object(m)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)m, k, v)
        {
            if (!json_is_number(v))
                continue;
            char *n = gpurun_report_number(json_number_value(v));
            gpurun_strbuf_printf(&b, "%s%s=%s", b.len ? " " : "", k, n);
            free(n);
        }
    }
    if (!b.len)
        gpurun_strbuf_puts(&b, "-");
    return bdone(&b);
}

static bool monitor_shows(const json_t *m)
{
    char *text = m ? fmt_monitor(m) : NULL;
    bool shows = text && strcmp(text, "-") != 0;
    free(text);
    return shows;
}

struct table {
    size_t ncols, nrows;
    const char **head;
    bool *right;
    char **cells; /* nrows x ncols, owned */
};

static void table_col(struct table *t, const char *head, bool right)
{
    t->head = gpurun_xrealloc(t->head, (t->ncols + 1) * sizeof *t->head);
    t->right = gpurun_xrealloc(t->right, (t->ncols + 1) * sizeof *t->right);
    t->head[t->ncols] = head;
    t->right[t->ncols++] = right;
}

static void table_free(struct table *t)
{
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t->head);
    free(t->right);
}

/* Leave out the columns that have nothing to show: "-" in every row (costs
 * without a price, GPUs of a CPU-only job, the scan combination of a job
 * without a scan). */
static void table_prune(struct table *t)
{
    bool *keep = gpurun_xcalloc(t->ncols + 1, sizeof *keep);
    size_t kept = 0;
    for (size_t c = 0; c < t->ncols; c++) {
        keep[c] = t->nrows == 0;
        for (size_t r = 0; r < t->nrows && !keep[c]; r++)
            keep[c] = strcmp(t->cells[r * t->ncols + c], "-") != 0;
        kept += keep[c];
    }
    char **cells = gpurun_xcalloc(t->nrows * kept + 1, sizeof *cells);
    size_t k = 0;
    for (size_t i = 0; i < t->nrows * t->ncols; i++) {
        if (keep[i % t->ncols])
            cells[k++] = t->cells[i];
        else
            free(t->cells[i]);
    }
    k = 0;
    for (size_t c = 0; c < t->ncols; c++)
        if (keep[c]) {
            t->head[k] = t->head[c];
            t->right[k++] = t->right[c];
        }
    free(t->cells);
    free(keep);
    t->cells = cells;
    t->ncols = kept;
}

static bool any_monitor(const struct gpurun_report_job *job)
{
    for (size_t c = 0; c < job->nconfigs; c++)
        if (job->configs[c].monitor)
            return true;
    return false;
}

/* The table of one figure of a job: a row per configuration.  Column
 * heads point into `heads` (freed by the caller). */
static struct table fom_table(const struct gpurun_report_job *job, size_t f, char **heads)
{
    const struct gpurun_report_fom *fom = &job->foms[f];
    struct table t = {0};
    table_col(&t, "GPUs", true);
    table_col(&t, "nodes", true);
    table_col(&t, "ranks", true);
    table_col(&t, "GPUs/rank", true);
    table_col(&t, "threads/rank", true);
    table_col(&t, "params", false); /* only those that vary: the others are above the table */
    table_col(&t, "config", false);
    table_col(&t, "n", true);
    table_col(&t, "failed", true);
    table_col(&t, "mean", true);
    table_col(&t, "min\u2013max", true);
    table_col(&t, "CV", true);
    table_col(&t, "speedup", true);
    table_col(&t, "efficiency", true);
    heads[0] =
        fom->work_label ? gpurun_xasprintf("cost/%s", fom->work_label) : gpurun_xstrdup("cost");
    heads[1] =
        fom->work_label ? gpurun_xasprintf("spot/%s", fom->work_label) : gpurun_xstrdup("spot");
    table_col(&t, heads[0], true);
    table_col(&t, heads[1], true);

    t.nrows = job->nconfigs;
    t.cells = gpurun_xcalloc(t.nrows * t.ncols, sizeof *t.cells);
    for (size_t r = 0; r < job->nconfigs; r++) {
        const struct gpurun_report_config *c = &job->configs[r];
        const struct gpurun_report_stat *st = &c->stats[f];
        char **row = &t.cells[r * t.ncols];
        size_t k = 0;
        /* A CPU-only job's GPUs are no figure to show. */
        row[k++] = fmt_long(job->by_gpus ? c->gpus : -1);
        row[k++] = fmt_long(c->nodes);
        row[k++] = fmt_long(c->ranks);
        row[k++] = fmt_long(job->by_gpus ? c->gpus_per_rank : -1);
        row[k++] = fmt_long(c->threads_per_rank);
        row[k++] = gpurun_xstrdup(c->params_vary);
        row[k++] = gpurun_xstrdup(c->label);
        row[k++] = gpurun_xasprintf("%zu", st->n);
        row[k++] = gpurun_xasprintf("%zu", c->nfailed);
        row[k++] = gpurun_report_number(st->mean);
        row[k++] = fmt_range(st);
        row[k++] = fmt_cv(st);
        row[k++] = fmt_ratio(st->speedup);
        row[k++] = fmt_ratio(st->efficiency);
        row[k++] = fmt_cost(st->cost, c->currency);
        row[k++] = fmt_cost(st->spot_cost, c->currency);
    }
    table_prune(&t);
    return t;
}

/* Per-GPU monitoring of each configuration, when the records carry it:
 * one table per job, not a column of every figure's. */
static struct table monitor_table(const struct gpurun_report_job *job)
{
    struct table t = {0};
    table_col(&t, "GPUs", true);
    table_col(&t, "nodes", true);
    table_col(&t, "ranks", true);
    table_col(&t, "params", false);
    table_col(&t, "config", false);
    table_col(&t, "GPU monitoring (last ok run)", false);
    t.nrows = job->nconfigs;
    t.cells = gpurun_xcalloc(t.nrows * t.ncols, sizeof *t.cells);
    for (size_t r = 0; r < job->nconfigs; r++) {
        const struct gpurun_report_config *c = &job->configs[r];
        char **row = &t.cells[r * t.ncols];
        size_t k = 0;
        row[k++] = fmt_long(c->gpus);
        row[k++] = fmt_long(c->nodes);
        row[k++] = fmt_long(c->ranks);
        row[k++] = gpurun_xstrdup(c->params_vary);
        row[k++] = gpurun_xstrdup(c->label);
        row[k++] = fmt_monitor(c->monitor);
    }
    table_prune(&t);
    return t;
}

/* Where and with what each configuration ran: hosts, CPU and GPU model,
 * the program's version (the template's `version`) and gpurun's; two
 * builds of a program, or two kinds of node, show as two values. */
static struct table where_table(const struct gpurun_report_job *job)
{
    struct table t = {0};
    table_col(&t, "GPUs", true);
    table_col(&t, "nodes", true);
    table_col(&t, "ranks", true);
    table_col(&t, "params", false);
    table_col(&t, "config", false);
    table_col(&t, "hosts", false);
    table_col(&t, "CPU", false);
    table_col(&t, "GPU", false);
    table_col(&t, "program version", false);
    table_col(&t, "gpurun", false);
    t.nrows = job->nconfigs;
    t.cells = gpurun_xcalloc(t.nrows * t.ncols + 1, sizeof *t.cells);
    for (size_t r = 0; r < job->nconfigs; r++) {
        const struct gpurun_report_config *c = &job->configs[r];
        char **row = &t.cells[r * t.ncols];
        size_t k = 0;
        row[k++] = fmt_long(job->by_gpus ? c->gpus : -1);
        row[k++] = fmt_long(c->nodes);
        row[k++] = fmt_long(c->ranks);
        row[k++] = gpurun_xstrdup(c->params_vary); /* with the label: two rows never read alike */
        row[k++] = gpurun_xstrdup(c->label);
        row[k++] = values_text(&c->hosts);
        row[k++] = values_text(&c->cpu_models);
        row[k++] = values_text(&c->gpu_models);
        row[k++] = values_text(&c->program_versions);
        row[k++] = values_text(&c->gpurun_versions);
    }
    table_prune(&t);
    return t;
}

/* The runs not ok: when, which configuration, state, reason, folder. */
static struct table listed_table(const struct gpurun_report_failed *list, size_t n)
{
    struct table t = {0};
    table_col(&t, "start (UTC)", false);
    table_col(&t, "configuration", false);
    table_col(&t, "state", false);
    table_col(&t, "reason", false);
    table_col(&t, "folder", false);
    t.nrows = n;
    t.cells = gpurun_xcalloc(t.nrows * t.ncols + 1, sizeof *t.cells);
    for (size_t r = 0; r < n; r++) {
        const struct gpurun_report_failed *f = &list[r];
        char **row = &t.cells[r * t.ncols];
        row[0] = gpurun_xstrdup(f->start);
        row[1] = gpurun_xstrdup(f->config);
        row[2] = gpurun_xstrdup(f->state);
        row[3] = gpurun_xstrdup(f->reason);
        row[4] = gpurun_xstrdup(f->folder);
    }
    return t;
}

/* Whether any figure's spread is flagged. */
static bool any_spread_flag(const struct gpurun_report_job *job)
{
    for (size_t c = 0; c < job->nconfigs; c++)
        for (size_t f = 0; f < job->nfoms; f++)
            if (job->configs[c].stats[f].spread_flag)
                return true;
    return false;
}

static const char spread_note[] =
    "! spread between repeats above 5% (CV, the coefficient of variation: sample standard deviation / mean). "
    "Repeats on the same nodes usually agree within 1-3%; past 5% a difference between configurations of "
    "that size is noise, not scaling: look for another job on the nodes, clocks or thermal limits, or "
    "a cold first run, before trusting the mean.";

static const char *const kind_words[] = {"throughput", "time", "other: no scaling"};

/* Display width of UTF-8 text: one column per character. */
static size_t width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

static void table_print(const struct table *t, FILE *out)
{
    size_t *w = gpurun_xcalloc(t->ncols, sizeof *w);
    char **shown = gpurun_xcalloc(t->nrows * t->ncols, sizeof *shown);
    for (size_t c = 0; c < t->ncols; c++)
        w[c] = width(t->head[c]);
    for (size_t i = 0; i < t->nrows * t->ncols; i++) {
        shown[i] = gpurun_printable(t->cells[i]);
        size_t cw = width(shown[i]);
        if (cw > w[i % t->ncols])
            w[i % t->ncols] = cw;
    }
    for (size_t r = 0; r <= t->nrows; r++) {
        fputs("  ", out);
        for (size_t c = 0; c < t->ncols; c++) {
            const char *s = r == 0 ? t->head[c] : shown[(r - 1) * t->ncols + c];
            size_t pad = w[c] - width(s);
            if (t->right[c])
                fprintf(out, "%*s%s", (int)pad, "", s);
            else
                fprintf(out, "%s%*s", s, c + 1 < t->ncols ? (int)pad : 0, "");
            fputs(c + 1 < t->ncols ? "  " : "\n", out);
        }
    }
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(shown[i]);
    free(shown);
    free(w);
}

static const char definitions[] =
    "mean = the arithmetic mean over the runs, for throughput and other figures; for time figures "
    "(hour/ns, s) the harmonic mean (the inverse of the mean throughput), the mean their speedup is "
    "the ratio of, so that a smaller time is always a speedup above 1; "
    "speedup = mean / mean of the smallest configuration with the same params, for throughput "
    "figures; for time figures (hour/ns, s) that configuration's mean / this one's, "
    "so that hour_per_ns and ns_per_day agree; none for other figures (iterations, a "
    "residual); efficiency = speedup / (GPUs / GPUs of that configuration), ranks "
    "for a CPU-only job; min\u2013max and CV (standard deviation / mean) are the spread over the "
    "repeats, flagged ! above 5%; cost = GPUs x price per GPU-hour x hours the configuration takes "
    "for one unit of work at the mean figure (for ns/day: GPUs x price / (ns_per_day / 24) "
    "per ns), on demand and spot, from the prices the records carry (a site profile); - "
    "where there is none.  Only runs of state ok are averaged; the others are counted as "
    "failed.  A run whose record says busy (other processes took a share of its cores or GPUs, "
    "or they throttled: its figures are likely low) is listed and left out of the means, unless "
    "--include-busy.";

/* The params of a job of one series (with several, each row shows its
 * own); NULL when none. */
static const char *job_params(const struct gpurun_report_job *job)
{
    return job->params_fixed;
}

/* ---- history --------------------------------------------------------- */

/* Rows of the text history at most: a terminal's screenful. */
#define HISTORY_ROWS 16

/* A time as the records write it, to the second. */
static void fmt_utc(double t, char *buf, size_t n)
{
    time_t secs = (time_t)floor(t);
    struct tm tm;
    if (!isfinite(t) || !gmtime_r(&secs, &tm) || !strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, n, "-");
}

/* A configuration's size in words: "2 ranks on 1 node, 2 GPUs". */
static char *config_size(const struct gpurun_report_job *job, const struct gpurun_report_config *c)
{
    char *gpus = job->by_gpus ? gpurun_xasprintf(", %ld GPU%s", c->gpus, c->gpus == 1 ? "" : "s")
                              : gpurun_xstrdup("");
    char *s = gpurun_xasprintf("%ld rank%s on %ld node%s%s", c->ranks, c->ranks == 1 ? "" : "s", c->nodes,
                               c->nodes == 1 ? "" : "s", gpus);
    free(gpus);
    return s;
}

/* The params that tell a configuration apart where its scan combination
 * does not (a scan's combination names its params); NULL when none. */
static const char *config_params(const struct gpurun_report_job *job, const struct gpurun_report_config *c)
{
    (void)job; /* the configuration knows its varying params */
    return strcmp(c->params_vary, "-") != 0 && strcmp(c->label, "-") == 0 ? c->params_vary : NULL;
}

/* The configuration a history is of, in words: "ranks_per_node=2: 2 ranks
 * on 1 node, 2 GPUs". */
static char *config_words(const struct gpurun_report_job *job, const struct gpurun_report_config *c)
{
    char *size = config_size(job, c);
    const char *params = config_params(job, c);
    char *s = gpurun_xasprintf("%s%s%s%s%s", strcmp(c->label, "-") != 0 ? c->label : "",
                               strcmp(c->label, "-") != 0 ? ": " : "", size, params ? "; " : "",
                               params ? params : "");
    free(size);
    return s;
}

/* The shown history's points taken together into at most `max` rows;
 * returns how many (`out` has room for `max`). */
static size_t history_rows(const struct gpurun_report_stat *st, size_t max, struct gpurun_report_point *out)
{
    size_t per = (st->nhistory + max - 1) / max, n = 0;
    for (size_t i = 0; i < st->nhistory; i++) {
        if (i % per == 0)
            out[n++] = st->history[i];
        else
            out[n - 1] = point_merge(&out[n - 1], &st->history[i]);
    }
    return n;
}

/* The change of a point's `mean` against the `first` one's, in percent
 * (NAN: none, as from a first of 0), and whether it is flagged: worse than
 * the first by more than the spread flagged between repeats (a drop where
 * higher is better, a rise where lower is).  The text, the page and the
 * SVG flag by this one rule. */
static bool history_worse(double first, double mean, bool lower_better, double *change)
{
    *change = first != 0 ? (mean / first - 1) * 100 : NAN;
    return isfinite(*change) && (lower_better ? *change : -*change) > GPURUN_REPORT_CV_FLAG * 100;
}

/* The text history: a row per run (or per few runs), its change against
 * the first and a bar, so that a regression shows as a drop whichever way
 * the figure is better (`lower_better`: the bar is longest at the lowest
 * mean); a change worse than the first by more than the spread flagged
 * between repeats is flagged " !". */
static struct table history_table(const struct gpurun_report_stat *st, bool lower_better, char **head)
{
    struct table t = {0};
    table_col(&t, "start (UTC)", false);
    table_col(&t, "runs", true);
    table_col(&t, "mean", true);
    table_col(&t, "min", true);
    table_col(&t, "max", true);
    table_col(&t, "vs first", true);
    struct gpurun_report_point rows[HISTORY_ROWS];
    t.nrows = history_rows(st, HISTORY_ROWS, rows);
    /* The bars span the lowest mean to the highest: a drop of some percent
     * shows, as on a sparkline. */
    double lo = INFINITY, hi = -INFINITY;
    for (size_t r = 0; r < t.nrows; r++) {
        lo = fmin(lo, rows[r].mean);
        hi = fmax(hi, rows[r].mean);
    }
    char *l = gpurun_report_number(lo), *h = gpurun_report_number(hi);
    *head = lower_better ? gpurun_xasprintf("%s to %s", h, l) : gpurun_xasprintf("%s to %s", l, h);
    free(l);
    free(h);
    table_col(&t, *head, false);
    t.cells = gpurun_xcalloc(t.nrows * t.ncols, sizeof *t.cells);
    for (size_t r = 0; r < t.nrows; r++) {
        char **row = &t.cells[r * t.ncols], when[32];
        fmt_utc(rows[r].start, when, sizeof when);
        row[0] = gpurun_xstrdup(when);
        row[1] = gpurun_xasprintf("%zu", rows[r].n);
        row[2] = gpurun_report_number(rows[r].mean);
        row[3] = gpurun_report_number(rows[r].min);
        row[4] = gpurun_report_number(rows[r].max);
        double change;
        bool worse = history_worse(rows[0].mean, rows[r].mean, lower_better, &change);
        row[5] = r == 0 || !isfinite(change) ? gpurun_xstrdup("-")
                                             : gpurun_xasprintf("%+.1f%%%s", change, worse ? " !" : "");
        double share = hi > lo ? (rows[r].mean / 2 - lo / 2) / (hi / 2 - lo / 2) : 1; /* halves: no overflow */
        if (lower_better && hi > lo)
            share = 1 - share;
        row[6] = gpurun_xasprintf("%.*s", 1 + (int)lround(23 * (isfinite(share) ? share : 0)),
                                  "########################");
    }
    return t;
}

/* The energy per unit of the history's configuration and figure, when it
 * has 2 points or more; NULL otherwise. */
static const struct gpurun_report_stat *energy_history(const struct gpurun_report_job *job)
{
    if (job->history_config < 0)
        return NULL;
    const struct gpurun_report_energy *en = job->configs[job->history_config].energy;
    size_t f = (size_t)job->history_fom;
    return en && f < en->nfoms && en->per_unit[f].hist.nhistory > 1 ? &en->per_unit[f].hist : NULL;
}

static void print_history(const struct gpurun_report_job *job, FILE *out)
{
    if (job->history_config < 0)
        return;
    const struct gpurun_report_config *c = &job->configs[job->history_config];
    const struct gpurun_report_fom *fom = &job->foms[job->history_fom];
    const struct gpurun_report_stat *st = &c->stats[job->history_fom];
    char *words = config_words(job, c), *w = gpurun_printable(words), *fn = gpurun_printable(fom->name);
    fprintf(out, "\n  History of %s, %s (the configuration with the most runs)\n", fn, w);
    free(words);
    free(w);
    free(fn);
    char *head;
    struct table t = history_table(st, !strcmp(fom->better, "lower"), &head);
    table_print(&t, out);
    table_free(&t);
    free(head);
    /* Its energy per unit over the same runs: a rise is the regression. */
    const struct gpurun_report_stat *eh = energy_history(job);
    if (eh) {
        const struct gpurun_report_energy_unit *u = &c->energy->per_unit[job->history_fom];
        char *un = gpurun_printable(u->units);
        fn = gpurun_printable(fom->name);
        fprintf(out, "\n  History of %s's energy per unit (%s), the same configuration\n", fn, un);
        free(fn);
        free(un);
        t = history_table(eh, true, &head);
        table_print(&t, out);
        table_free(&t);
        free(head);
    }
}

static void print_job(const struct gpurun_report_job *job, FILE *out)
{
    char *name = gpurun_printable(job->name), *tpl = gpurun_printable(job->template_name);
    fprintf(out, "\nJob %s%s%s: %zu run%s, %zu not ok; scaling against %s\n", name,
            job->template_name ? ", template " : "", job->template_name ? tpl : "", job->nruns,
            job->nruns == 1 ? "" : "s", job->nfailed, job->by_gpus ? "GPUs" : "ranks (CPU-only)");
    free(name);
    free(tpl);
    const char *params = job_params(job);
    if (params) {
        char *p = gpurun_printable(params);
        fprintf(out, "  params of every configuration: %s\n", p);
        free(p);
    }
    struct table wt = where_table(job);
    if (wt.ncols > 3) { /* more than the size: something is known of where it ran */
        fprintf(out, "\n  Where it ran\n");
        table_print(&wt, out);
    }
    table_free(&wt);
    if (job->nfoms == 0)
        fprintf(out, "  no figures of merit in these runs\n");
    for (size_t f = 0; f < job->nfoms; f++) {
        const struct gpurun_report_fom *fom = &job->foms[f];
        char *fn = gpurun_printable(fom->name), *fu = gpurun_printable(fom->units);
        fprintf(out, "\n  %s (%s%s%s is better; %s)\n", fn, fu, *fu ? ", " : "", fom->better,
                kind_words[fom->kind]);
        free(fn);
        free(fu);
        char *heads[2];
        struct table t = fom_table(job, f, heads);
        table_print(&t, out);
        table_free(&t);
        free(heads[0]);
        free(heads[1]);
    }
    if (any_spread_flag(job))
        fprintf(out, "\n  %s\n", spread_note);
    if (job->nfailed) {
        fprintf(out, "\n  Runs not ok: %zu%s (folders in the results folder)\n", job->nfailed,
                job->nfailed > job->nfailed_kept ? ", the latest shown" : "");
        struct table t = listed_table(job->failed, job->nfailed_kept);
        table_print(&t, out);
        table_free(&t);
    }
    if (job->nbusy_kept) {
        fprintf(out, "\n  Busy runs, left out of the means: %zu%s\n", job->nbusy,
                job->nbusy > job->nbusy_kept ? ", the latest shown" : "");
        struct table t = listed_table(job->busy, job->nbusy_kept);
        table_print(&t, out);
        table_free(&t);
    }
    if (!gpurun_report_plots(job))
        fprintf(out, "\n  No plot: %s\n",
                gpurun_report_main_fom(job) < 0 ? "no run of state ok with a figure of merit"
                                                : "one configuration (a plot needs two or more)");
    if (any_monitor(job)) {
        fprintf(out, "\n  GPU monitoring\n");
        struct table t = monitor_table(job);
        table_print(&t, out);
        table_free(&t);
    }
    gpurun_report_energy_print(job, out);
    print_history(job, out);
}

/* What the report's heading says once of the runs it read: the selection,
 * and the busy runs left out of the means (or kept); NULL: nothing. */
static char *report_said(const gpurun_report_t *r)
{
    struct gpurun_strbuf b = {0};
    if (r->selection && *r->selection)
        gpurun_strbuf_printf(&b, "Runs selected: %s.", r->selection);
    if (r->nbusy && !r->include_busy)
        gpurun_strbuf_printf(&b, "%s%zu busy run%s (other processes on %s cores or GPUs, or throttling: figures "
                             "likely low) left out of the means and listed under %s job; --include-busy keeps "
                             "them.", b.len ? " " : "", r->nbusy, r->nbusy == 1 ? "" : "s",
                             r->nbusy == 1 ? "its" : "their", r->nbusy == 1 ? "its" : "their");
    else if (r->nbusy)
        gpurun_strbuf_printf(&b, "%s%zu busy run%s kept in the means (--include-busy): %s figures are likely "
                             "low.", b.len ? " " : "", r->nbusy, r->nbusy == 1 ? "" : "s",
                             r->nbusy == 1 ? "its" : "their");
    return b.s;
}

void gpurun_report_print(const gpurun_report_t *r, const char *source, FILE *out)
{
    char *src = gpurun_printable(source);
    fprintf(out, "gpurun report of %s: %zu run%s of %zu job%s, %zu not ok\n", src, r->nruns,
            r->nruns == 1 ? "" : "s", r->njobs, r->njobs == 1 ? "" : "s", r->nfailed);
    free(src);
    char *said = report_said(r);
    if (said) {
        char *p = gpurun_printable(said);
        fprintf(out, "%s\n", p);
        free(p);
        free(said);
    }
    for (size_t j = 0; j < r->njobs; j++)
        print_job(&r->jobs[j], out);
    if (!r->njobs)
        return;
    /* The definitions, folded for a terminal. */
    fputc('\n', out);
    const char *p = definitions;
    while (*p) {
        size_t n = strlen(p);
        if (n > 100) {
            n = 100;
            while (n > 0 && p[n] != ' ')
                n--;
            if (n == 0)
                n = 100;
        }
        fprintf(out, "%.*s\n", (int)n, p);
        p += n;
        while (*p == ' ')
            p++;
    }
}

/* ---- the plot --------------------------------------------------------- */

#define SVG_W 840
#define SVG_H 440
#define PLOT_L 80
#define PLOT_R 560
#define PLOT_T 50
#define PLOT_B 370

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                      "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

struct axis {
    double lo, hi; /* of the value, or of its logarithm */
    int log;       /* 0: linear; else the base of a log scale (2, 10) */
    int px0, px1;  /* pixels of lo and hi */
};

/* Pixels of `v`, kept finite and near the plot whatever the value (a
 * figure near DBL_MAX, a denormal, 0 on a log scale). */
static double ax_px(const struct axis *a, double v)
{
    double u = a->log ? log(v) / log(a->log) : v;
    double px = a->px0 + (u - a->lo) / (a->hi - a->lo) * (a->px1 - a->px0);
    if (isnan(px))
        return a->px0;
    return fmin(fmax(px, -1000.0), SVG_W + 1000.0);
}

/* A step of 1, 2 or 5 times a power of ten giving about `n` ticks of
 * `range` (finite, DBL_MIN or more: the caller sees to it). */
static double nice_step(double range, int n)
{
    double raw = range / n, mag = pow(10, floor(log10(raw))), f = raw / mag;
    double step = mag * (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10);
    return isfinite(step) && step > 0 ? step : range;
}

/* Ticks at most: every loop over ticks ends, whatever the data. */
#define MAX_TICKS 24
/* A plot stays a plot (and a file of some kilobytes) with 10,000 runs: so
 * many series drawn, so many points of each; the tables have them all. */
#define MAX_SERIES 12
#define MAX_POINTS GPURUN_REPORT_PLOT_POINTS

static void svg_text(struct gpurun_strbuf *b, double x, double y, const char *anchor, const char *extra,
                     const char *text)
{
    gpurun_strbuf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s>", x, y, anchor, extra);
    besc(b, text);
    gpurun_strbuf_puts(b, "</text>\n");
}

/* A tick label: 250, 0.5, 2.5k, 4M, 1.2G; no exponents. */
static void svg_number(double v, char *out, size_t n)
{
    double a = fabs(v);
    if (a < 1e-12)
        snprintf(out, n, "0");
    else if (a >= 1e9)
        snprintf(out, n, "%gG", v / 1e9);
    else if (a >= 1e6)
        snprintf(out, n, "%gM", v / 1e6);
    else if (a >= 1e4)
        snprintf(out, n, "%gk", v / 1e3);
    else
        snprintf(out, n, "%g", v);
}

static void y_tick(struct gpurun_strbuf *b, const struct axis *ya, double v)
{
    char num[64];
    double py = ax_px(ya, v);
    gpurun_strbuf_printf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e6e6e6\"/>\n", PLOT_L,
            py, PLOT_R, py);
    gpurun_strbuf_printf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#333333\"/>\n",
            PLOT_L - 5, py, PLOT_L, py);
    svg_number(v, num, sizeof num);
    svg_text(b, PLOT_L - 8, py + 4, "end", "", num);
}

/* What the parts of a scaling panel share: the job and the figure of merit
 * plotted, the extent of the data, the axes, each series' baseline. */
struct scaling_plot {
    const struct gpurun_report_job *job;
    size_t f;          /* the figure of merit plotted */
    bool lower;        /* lower is better: the ideal line falls */
    const char *xname; /* "GPUs" or "ranks" */
    double xmin, xmax, ymin, ymax;
    struct axis xa, ya;
    double xstep; /* of a linear x axis */
    /* Per series: its first configuration with a value; NULL: none. */
    const struct gpurun_report_config **base;
};

/* The extent of the data and of each series' ideal line; the baselines. */
static void scaling_extent(struct scaling_plot *p)
{
    const struct gpurun_report_job *job = p->job;
    size_t f = p->f;
    bool lower = p->lower;
    double xmin = INFINITY, xmax = 0, ymin = INFINITY, ymax = 0;
    for (size_t c = 0; c < job->nconfigs; c++) {
        const struct gpurun_report_config *cf = &job->configs[c];
        const struct gpurun_report_stat *st = &cf->stats[f];
        if (st->n == 0 || cf->resources <= 0)
            continue;
        xmin = fmin(xmin, (double)cf->resources);
        xmax = fmax(xmax, (double)cf->resources);
        ymax = fmax(ymax, st->max);
        if (st->min > 0)
            ymin = fmin(ymin, st->min);
    }
    /* The baseline of each series: the first configuration with a value. */
    const struct gpurun_report_config **base = gpurun_xcalloc(job->nseries + 1, sizeof *base);
    for (size_t c = 0; c < job->nconfigs; c++) {
        const struct gpurun_report_config *cf = &job->configs[c];
        if (!base[cf->series] && cf->stats[f].n > 0 && cf->resources > 0 && cf->stats[f].mean > 0)
            base[cf->series] = cf;
    }
    for (size_t s = 0; s < job->nseries; s++)
        if (base[s]) {
            double bx = (double)base[s]->resources, by = base[s]->stats[f].mean;
            ymax = fmax(ymax, lower ? by : by * xmax / bx);
            ymin = fmin(ymin, lower ? by * bx / xmax : by);
        }
    /* The ideal line of a figure near DBL_MAX overflows; a denormal has no
     * tick step: the axis spans normal numbers only. */
    ymax = isfinite(ymax) ? ymax : DBL_MAX;
    if (!(ymin >= 1e-300) || !isfinite(ymin))
        ymin = isfinite(ymin) && ymin > 0 ? 1e-300 : INFINITY;
    p->xmin = xmin;
    p->xmax = xmax;
    p->ymin = ymin;
    p->ymax = ymax;
    p->base = base;
}

/* The scales, and the x axis' span; the y axis' span comes with its ticks. */
static void scaling_axes(struct scaling_plot *p)
{
    struct axis xa = {.px0 = PLOT_L, .px1 = PLOT_R}, ya = {.px0 = PLOT_B, .px1 = PLOT_T};
    double xmin = p->xmin, xmax = p->xmax, ymin = p->ymin;
    /* GPUs from 1 to 64: log-log, where ideal scaling is a straight line. */
    xa.log = xmax / xmin >= 16 ? 2 : 0;
    ya.log = xa.log && ymin > 0 && isfinite(ymin) ? 10 : 0;
    double xstep = 1;
    if (xa.log) {
        xa.lo = floor(log2(xmin)) - 0.3;
        xa.hi = ceil(log2(xmax)) + 0.3;
    } else {
        xstep = nice_step(xmax > 0 ? xmax : 1, 6);
        if (xstep < 1)
            xstep = 1;
        xa.lo = 0;
        xa.hi = ceil(xmax * 1.05 / xstep) * xstep;
        if (xa.hi <= xmax)
            xa.hi += xstep;
    }
    p->xa = xa;
    p->ya = ya;
    p->xstep = xstep;
}

/* A log y axis: its span, and ticks at 1, 2, 5 (or finer) per decade. */
static void y_log_ticks(struct gpurun_strbuf *b, struct axis *ya, double ymin, double ymax)
{
    ya->lo = log10(ymin);
    ya->hi = log10(ymax);
    double pad = fmax(0.08 * (ya->hi - ya->lo), (0.6 - (ya->hi - ya->lo)) / 2);
    ya->lo -= pad;
    ya->hi += pad;
    static const double fine[] = {1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9}, some[] = {1, 2, 5}, one[] = {1};
    double span = ya->hi - ya->lo;
    const double *m = span < 1.2 ? fine : span < 3 ? some : one;
    size_t nm = span < 1.2 ? 10 : span < 3 ? 3 : 1;
    /* From 1e-300 to 1e308: a decade in every few, not 600 ticks. */
    int estep = span > 10 ? (int)ceil(span / 10) : 1;
    for (int e = (int)floor(ya->lo); e <= (int)ceil(ya->hi); e += estep)
        for (size_t k = 0; k < nm; k++) {
            double v = m[k] * pow(10, e);
            if (log10(v) >= ya->lo && log10(v) <= ya->hi)
                y_tick(b, ya, v);
        }
}

/* A linear y axis from 0: its span, and its ticks. */
static void y_linear_ticks(struct gpurun_strbuf *b, struct axis *ya, double ymax)
{
    /* 5% above the top, short of infinity; at least a normal number. */
    double top = ymax > 0 ? fmin(ymax, DBL_MAX / 1.05) * 1.05 : 1;
    top = fmax(top, 1e-300);
    double ystep = nice_step(top, 6);
    double nsteps = fmin(ceil(top / ystep), MAX_TICKS - 1);
    ya->lo = 0;
    ya->hi = fmin(nsteps * ystep, DBL_MAX);
    double last = fmin(ya->hi * (1 + 1e-9), DBL_MAX);
    for (int i = 0; i < MAX_TICKS && i * ystep <= last; i++)
        y_tick(b, ya, i * ystep);
}

static void x_tick(struct gpurun_strbuf *b, const struct axis *xa, double v)
{
    char num[64];
    double px = ax_px(xa, v);
    gpurun_strbuf_printf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e6e6e6\"/>\n", px, PLOT_T,
            px, PLOT_B);
    gpurun_strbuf_printf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#333333\"/>\n", px, PLOT_B,
            px, PLOT_B + 5);
    svg_number(v, num, sizeof num);
    svg_text(b, px, PLOT_B + 19, "middle", "", num);
}

/* Grid, ticks and their labels. */
static void scaling_ticks(struct gpurun_strbuf *b, struct scaling_plot *p)
{
    gpurun_strbuf_puts(b, "<g font-size=\"12\" fill=\"#333333\">\n");
    if (p->ya.log)
        y_log_ticks(b, &p->ya, p->ymin, p->ymax);
    else
        y_linear_ticks(b, &p->ya, p->ymax);
    const struct axis *xa = &p->xa;
    if (xa->log) {
        for (int e = (int)ceil(xa->lo); e <= (int)floor(xa->hi); e++)
            x_tick(b, xa, pow(2, e));
    } else {
        for (int i = 0; i < MAX_TICKS && xa->lo + i * p->xstep <= xa->hi + p->xstep * 1e-9; i++)
            x_tick(b, xa, xa->lo + i * p->xstep);
    }
    gpurun_strbuf_puts(b, "</g>\n");
}

/* The plot's frame and the axes' labels. */
static void scaling_labels(struct gpurun_strbuf *b, const struct scaling_plot *p)
{
    const struct gpurun_report_fom *fom = &p->job->foms[p->f];
    gpurun_strbuf_printf(b,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
            "stroke=\"#333333\"/>\n",
            PLOT_L, PLOT_T, PLOT_R - PLOT_L, PLOT_B - PLOT_T);
    char *xlabel = gpurun_xasprintf("%s%s", p->xname, p->xa.log ? " (log scale)" : "");
    svg_text(b, (PLOT_L + PLOT_R) / 2.0, PLOT_B + 42, "middle", " font-size=\"13\"", xlabel);
    free(xlabel);
    bool ylog = p->ya.log;
    char *ylabel = gpurun_xasprintf("%s%s%s%s%s", fom->name, *fom->units || ylog ? " (" : "", fom->units,
                                    *fom->units && ylog ? ", " : "",
                                    ylog          ? "log scale)"
                                    : *fom->units ? ")"
                                                  : "");
    gpurun_strbuf_printf(b,
            "<text x=\"0\" y=\"0\" text-anchor=\"middle\" font-size=\"13\" "
            "transform=\"translate(22,%.1f) rotate(-90)\">",
            (PLOT_T + PLOT_B) / 2.0);
    besc(b, ylabel);
    gpurun_strbuf_puts(b, "</text>\n");
    free(ylabel);
}

/* "GPU", "rank", or the axis' plural: what `n` of them are called. */
static const char *resource_word(const struct scaling_plot *p, long n)
{
    return n == 1 ? (p->job->by_gpus ? "GPU" : "rank") : p->xname;
}

/* Series s's ideal line: its baseline's value, scaled by the resources. */
static void series_ideal_line(struct gpurun_strbuf *b, const struct scaling_plot *p, size_t s, const char *color)
{
    double bx = (double)p->base[s]->resources, by = p->base[s]->stats[p->f].mean, xmax = p->xmax;
    gpurun_strbuf_printf(b,
            "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" "
            "stroke-dasharray=\"6 4\" opacity=\"0.7\" points=\"",
            color);
    for (int i = 0; i <= 48; i++) {
        double x = p->xa.log ? pow(2, log2(bx) + (log2(xmax) - log2(bx)) * i / 48.0) : bx + (xmax - bx) * i / 48.0;
        double y = p->lower ? by * bx / x : by * x / bx;
        gpurun_strbuf_printf(b, "%s%.1f,%.1f", i ? " " : "", ax_px(&p->xa, x), ax_px(&p->ya, y));
    }
    gpurun_strbuf_puts(b, "\"/>\n");
}

/* Series s's measured line, its min-max bars and points: every stride-th
 * configuration of the series, and its last. */
static void series_measured(struct gpurun_strbuf *b, const struct scaling_plot *p, size_t s, const char *color)
{
    const struct gpurun_report_job *job = p->job;
    size_t f = p->f;
    size_t npts = 0, last = 0;
    for (size_t c = 0; c < job->nconfigs; c++)
        if (job->configs[c].series == s && job->configs[c].stats[f].n > 0 && job->configs[c].resources > 0) {
            npts++;
            last = c;
        }
    size_t stride = (npts + MAX_POINTS - 1) / MAX_POINTS, nth = 0;
    gpurun_strbuf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
    bool first = true;
    for (size_t c = 0; c < job->nconfigs; c++) {
        const struct gpurun_report_config *cf = &job->configs[c];
        if (cf->series != s || cf->stats[f].n == 0 || cf->resources <= 0 || (nth++ % stride && c != last))
            continue;
        gpurun_strbuf_printf(b, "%s%.1f,%.1f", first ? "" : " ", ax_px(&p->xa, (double)cf->resources),
                ax_px(&p->ya, cf->stats[f].mean));
        first = false;
    }
    gpurun_strbuf_puts(b, "\"/>\n");
    nth = 0;
    for (size_t c = 0; c < job->nconfigs; c++) {
        const struct gpurun_report_config *cf = &job->configs[c];
        const struct gpurun_report_stat *st = &cf->stats[f];
        if (cf->series != s || st->n == 0 || cf->resources <= 0 || (nth++ % stride && c != last))
            continue;
        double px = ax_px(&p->xa, (double)cf->resources);
        if (st->max > st->min)
            gpurun_strbuf_printf(b,
                    "<path d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f\" "
                    "stroke=\"%s\" fill=\"none\"/>\n",
                    px, ax_px(&p->ya, st->min), ax_px(&p->ya, st->max), px - 4, ax_px(&p->ya, st->min), px + 4,
                    px - 4, ax_px(&p->ya, st->max), px + 4, color);
        gpurun_strbuf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"><title>", px,
                ax_px(&p->ya, st->mean), color);
        char *m = gpurun_report_number(st->mean), *e = fmt_ratio(st->efficiency);
        char *tip = gpurun_xasprintf("%ld %s: mean %s, efficiency %s (n = %zu)", cf->resources,
                                     resource_word(p, cf->resources), m, e, st->n);
        besc(b, tip);
        free(tip);
        free(m);
        free(e);
        gpurun_strbuf_puts(b, "</title></circle>\n");
    }
}

/* The scaling panel: the figure against GPUs at left, the parallel
 * efficiency at right (each a plot of the history panel's size, PLOT_L to
 * PLOT_R inside its half), the legend below both, a row per series, cut
 * to what the panel's width holds: never cut off at the right. */
#define HALF_W 600
#define SCALING_W (2 * HALF_W)
#define LEGEND_ROW 20
/* Characters of a legend entry at most: the panel's width at 12 px. */
#define LEGEND_CHARS 140

static size_t drawn_series(const struct scaling_plot *p, size_t *left_out)
{
    size_t drawn = 0, out = 0;
    for (size_t s = 0; s < p->job->nseries; s++)
        if (p->base[s]) {
            if (drawn < MAX_SERIES)
                drawn++;
            else
                out++;
        }
    if (left_out)
        *left_out = out;
    return drawn;
}

/* Height of the legend: an entry per row, the ideal line's one more. */
static double legend_height(size_t drawn)
{
    return (double)(drawn + 1) * LEGEND_ROW + 12;
}

/* `text` cut to LEGEND_CHARS characters (at a character), "..." added. */
static char *legend_cut(const char *text)
{
    size_t chars = 0, i = 0;
    for (; text[i]; i++)
        if (((unsigned char)text[i] & 0xc0) != 0x80 && ++chars > LEGEND_CHARS - 3)
            break;
    if (!text[i])
        return gpurun_xstrdup(text);
    return gpurun_xasprintf("%.*s...", (int)i, text);
}

static void legend_entry(struct gpurun_strbuf *b, size_t i, double y0, const char *color, bool dashed,
                         const char *text)
{
    double x = PLOT_L, y = y0 + (double)i * LEGEND_ROW;
    gpurun_strbuf_printf(b,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"%s\"%s/>\n", x, y,
            x + 28, y, color, dashed ? "1.5" : "2", dashed ? " stroke-dasharray=\"6 4\"" : "");
    if (!dashed)
        gpurun_strbuf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n", x + 14, y, color);
    char *cut = legend_cut(text);
    svg_text(b, x + 36, y + 4, "start", " font-size=\"12\"", cut);
    free(cut);
}

/* Per series: the ideal line (throughput and time figures), the measured
 * line, min-max bars and points; the legend below the plots. */
static void scaling_series(struct gpurun_strbuf *b, const struct scaling_plot *p, bool ideal, double legend_y)
{
    size_t drawn = 0, left_out = 0, entry = 0;
    drawn_series(p, &left_out);
    for (size_t s = 0; s < p->job->nseries; s++) {
        if (!p->base[s] || drawn == MAX_SERIES)
            continue;
        drawn++;
        const char *color = palette[s % (sizeof palette / sizeof *palette)];
        if (ideal)
            series_ideal_line(b, p, s, color);
        series_measured(b, p, s, color);
        const char *vary = p->base[s]->params_vary;
        char *what = p->job->nseries > 1 && strcmp(vary, "-") != 0
                         ? gpurun_xasprintf("measured: %s", vary)
                         : gpurun_xstrdup("measured: mean, bars from min to max");
        legend_entry(b, entry++, legend_y, color, false, what);
        free(what);
    }
    if (ideal) {
        char *t = gpurun_xasprintf("ideal scaling from the smallest configuration%s",
                                   p->job->nseries > 1 ? " of each series" : "");
        legend_entry(b, entry++, legend_y, "#555555", true, t);
        free(t);
    }
    if (left_out) {
        char *t = gpurun_xasprintf("%zu more series of params not drawn (the tables have them)", left_out);
        svg_text(b, PLOT_L, legend_y + (double)entry * LEGEND_ROW, "start", " font-size=\"11\"", t);
        free(t);
    }
}

/* The right half: each series' parallel efficiency against GPUs (or
 * ranks), 1 the ideal. */
static void efficiency_plot(struct gpurun_strbuf *b, const struct scaling_plot *p)
{
    const struct gpurun_report_job *job = p->job;
    size_t f = p->f;
    double top = 1;
    for (size_t c = 0; c < job->nconfigs; c++)
        if (isfinite(job->configs[c].stats[f].efficiency))
            top = fmax(top, fmin(job->configs[c].stats[f].efficiency, 100));
    gpurun_strbuf_printf(b, "<g class=\"efficiency\" transform=\"translate(%d,0)\">\n", HALF_W);
    svg_text(b, PLOT_L, 28, "start", " font-size=\"15\" font-weight=\"bold\"", "parallel efficiency");
    struct axis ya = {.px0 = PLOT_B, .px1 = PLOT_T};
    gpurun_strbuf_puts(b, "<g font-size=\"12\" fill=\"#333333\">\n");
    y_linear_ticks(b, &ya, top * 1.1);
    const struct axis *xa = &p->xa;
    if (xa->log) {
        for (int e = (int)ceil(xa->lo); e <= (int)floor(xa->hi); e++)
            x_tick(b, xa, pow(2, e));
    } else {
        for (int i = 0; i < MAX_TICKS && xa->lo + i * p->xstep <= xa->hi + p->xstep * 1e-9; i++)
            x_tick(b, xa, xa->lo + i * p->xstep);
    }
    gpurun_strbuf_puts(b, "</g>\n");
    gpurun_strbuf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333333\"/>\n",
            PLOT_L, PLOT_T, PLOT_R - PLOT_L, PLOT_B - PLOT_T);
    char *xlabel = gpurun_xasprintf("%s%s", p->xname, xa->log ? " (log scale)" : "");
    svg_text(b, (PLOT_L + PLOT_R) / 2.0, PLOT_B + 42, "middle", " font-size=\"13\"", xlabel);
    free(xlabel);
    gpurun_strbuf_printf(b,
            "<text x=\"0\" y=\"0\" text-anchor=\"middle\" font-size=\"13\" "
            "transform=\"translate(22,%.1f) rotate(-90)\">speedup / (%s / %s of the smallest)</text>\n",
            (PLOT_T + PLOT_B) / 2.0, p->xname, p->xname);
    double y1 = ax_px(&ya, 1);
    gpurun_strbuf_printf(b,
            "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#555555\" stroke-width=\"1.5\" "
            "stroke-dasharray=\"6 4\"/>\n",
            PLOT_L, y1, PLOT_R, y1);
    size_t drawn = 0;
    for (size_t s = 0; s < job->nseries && drawn < MAX_SERIES; s++) {
        if (!p->base[s])
            continue;
        drawn++;
        const char *color = palette[s % (sizeof palette / sizeof *palette)];
        /* As the measured line: every stride-th configuration, and the last. */
        size_t npts = 0, last = 0, nth = 0;
        for (size_t c = 0; c < job->nconfigs; c++)
            if (job->configs[c].series == s && isfinite(job->configs[c].stats[f].efficiency) &&
                job->configs[c].resources > 0) {
                npts++;
                last = c;
            }
        size_t stride = (npts + MAX_POINTS - 1) / MAX_POINTS;
        gpurun_strbuf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
        bool first = true;
        for (size_t c = 0; c < job->nconfigs; c++) {
            const struct gpurun_report_config *cf = &job->configs[c];
            double e = cf->stats[f].efficiency;
            if (cf->series != s || !isfinite(e) || cf->resources <= 0 || (nth++ % stride && c != last))
                continue;
            gpurun_strbuf_printf(b, "%s%.1f,%.1f", first ? "" : " ", ax_px(xa, (double)cf->resources),
                    ax_px(&ya, fmin(e, 100)));
            first = false;
        }
        gpurun_strbuf_puts(b, "\"/>\n");
        nth = 0;
        for (size_t c = 0; c < job->nconfigs; c++) {
            const struct gpurun_report_config *cf = &job->configs[c];
            double e = cf->stats[f].efficiency;
            if (cf->series != s || !isfinite(e) || cf->resources <= 0 || (nth++ % stride && c != last))
                continue;
            char *eff = fmt_ratio(e);
            gpurun_strbuf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"><title>",
                    ax_px(xa, (double)cf->resources), ax_px(&ya, fmin(e, 100)), color);
            char *tip = gpurun_xasprintf("%ld %s: efficiency %s", cf->resources, resource_word(p, cf->resources), eff);
            besc(b, tip);
            gpurun_strbuf_puts(b, "</title></circle>\n");
            free(tip);
            free(eff);
        }
    }
    gpurun_strbuf_puts(b, "</g>\n");
}

/* The scaling panel's height: the plots and the legend below them. */
static double scaling_panel_height(const struct gpurun_report_job *job)
{
    long f = gpurun_report_main_fom(job);
    if (f < 0)
        return SVG_H;
    struct scaling_plot p = {.job = job, .f = (size_t)f};
    p.lower = strcmp(job->foms[f].better, "lower") == 0;
    scaling_extent(&p);
    double h = SVG_H - 20 + legend_height(drawn_series(&p, NULL));
    free(p.base);
    return h;
}

static void svg_panel(struct gpurun_strbuf *b, const struct gpurun_report_job *job, double y0)
{
    double height = scaling_panel_height(job);
    gpurun_strbuf_printf(b, "<g class=\"scaling\" transform=\"translate(0,%.0f)\">\n", y0);
    gpurun_strbuf_printf(b,
            "<rect x=\"0.5\" y=\"0.5\" width=\"%d\" height=\"%.0f\" fill=\"#ffffff\" "
            "stroke=\"#d0d0d0\"/>\n",
            SCALING_W - 1, height - 1);
    long f = gpurun_report_main_fom(job);
    struct scaling_plot p = {.job = job, .xname = job->by_gpus ? "GPUs" : "ranks"};
    const struct gpurun_report_fom *fom = &job->foms[f];
    p.f = (size_t)f;
    p.lower = strcmp(fom->better, "lower") == 0;
    char *title = gpurun_xasprintf("%s: %s%s%s%s against %s", job->name, fom->name, *fom->units ? " (" : "",
                                   fom->units, *fom->units ? ")" : "", p.xname);
    svg_text(b, PLOT_L, 28, "start", " font-size=\"15\" font-weight=\"bold\"", title);
    free(title);
    scaling_extent(&p);
    scaling_axes(&p);
    scaling_ticks(b, &p);
    scaling_labels(b, &p);
    bool scaled = fom->kind != GPURUN_FOM_OTHER;
    scaling_series(b, &p, scaled, SVG_H - 8);
    if (scaled)
        efficiency_plot(b, &p);
    else
        svg_text(b, HALF_W + (PLOT_L + PLOT_R) / 2.0, (PLOT_T + PLOT_B) / 2.0, "middle", " font-size=\"13\"",
                 "no efficiency: the figure is no throughput or time");
    free(p.base);
    gpurun_strbuf_puts(b, "</g>\n");
}

/* ---- the history panel ------------------------------------------------ */

/* A step of time for about `n` ticks of `span` seconds: seconds, minutes,
 * hours, days, weeks, months of 30 days, years of 365. */
static double time_step(double span, int n)
{
    static const double steps[] = {1,     2,     5,     10,     15,     30,     60,      120,     300,
                                   600,   900,   1800,  3600,   7200,   10800,  21600,   43200,   86400,
                                   172800, 604800, 1209600, 2592000, 7776000, 31536000};
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
        if (span / steps[i] <= n)
            return steps[i];
    return 31536000 * fmax(1, nice_step(span / 31536000, n));
}

/* The time axis: ticks at multiples of the step (UTC midnights for days),
 * labelled as much of the time as the step needs. */
static void time_axis(struct gpurun_strbuf *b, const struct axis *xa)
{
    double step = time_step(xa->hi - xa->lo, 5);
    const char *format = step < 60 ? "%H:%M:%S" : step < 86400 ? "%H:%M" : "%Y-%m-%d";
    double first = ceil(xa->lo / step) * step;
    for (int i = 0; i < MAX_TICKS && first + i * step <= xa->hi; i++) {
        double t = first + i * step, px = ax_px(xa, t);
        time_t secs = (time_t)t;
        struct tm tm;
        char label[32];
        if (!gmtime_r(&secs, &tm) || !strftime(label, sizeof label, format, &tm))
            continue;
        gpurun_strbuf_printf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e6e6e6\"/>\n", px,
                             PLOT_T, px, PLOT_B);
        gpurun_strbuf_printf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#333333\"/>\n", px,
                             PLOT_B, px, PLOT_B + 5);
        svg_text(b, px, PLOT_B + 19, "middle", "", label);
    }
}

/* A linear value axis over [lo, hi] and 0, with some room above: its
 * extent into `ya`, its ticks into `b`.  Finite for any finite figures. */
static void value_axis(struct gpurun_strbuf *b, struct axis *ya, double lo, double hi)
{
    lo = lo < 0 ? fmax(lo, -DBL_MAX / 1.05) * 1.05 : 0;
    hi = hi > 0 ? fmin(hi, DBL_MAX / 1.05) * 1.05 : lo < 0 ? 0 : 1; /* all 0: an axis to 1 */
    double half = fmax(hi / 2 - lo / 2, 1e-300); /* half the span: no overflow */
    double step = nice_step(half, 3);
    ya->lo = fmax(floor(lo / step) * step, -DBL_MAX);
    ya->hi = fmin(ceil(hi / step) * step, DBL_MAX);
    if (ya->hi <= ya->lo)
        ya->hi = ya->lo + step;
    for (int i = 0; i < MAX_TICKS; i++) {
        double v = ya->lo + i * step;
        if (!isfinite(v) || v > ya->hi * (1 + 1e-9))
            break;
        y_tick(b, ya, v);
    }
}

/* The time of a point: its run's start, or the middle of its runs'. */
static double point_time(const struct gpurun_report_point *p)
{
    return p->start / 2 + p->end / 2;
}

/* How a history panel marks its points: each point flagged against the
 * first with a red ring and its change in its tip, as the tables flag it
 * " !": a rise is the regression where lower is better (energy per unit,
 * a time), a drop where higher is (a throughput). */
enum history_flags { FLAGS_LOWER_BETTER, FLAGS_HIGHER_BETTER };

/* The points of a history: the line of the means, min-max bars, and a
 * circle per point that says what it is. */
static void history_marks(struct gpurun_strbuf *b, const struct gpurun_report_stat *st, const struct axis *xa,
                          const struct axis *ya, const char *color, enum history_flags flags)
{
    gpurun_strbuf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
    for (size_t i = 0; i < st->nhistory; i++)
        gpurun_strbuf_printf(b, "%s%.1f,%.1f", i ? " " : "", ax_px(xa, point_time(&st->history[i])),
                             ax_px(ya, st->history[i].mean));
    gpurun_strbuf_puts(b, "\"/>\n");
    for (size_t i = 0; i < st->nhistory; i++) {
        const struct gpurun_report_point *p = &st->history[i];
        double px = ax_px(xa, point_time(p));
        if (p->max > p->min)
            gpurun_strbuf_printf(b, "<path d=\"M%.1f %.1fV%.1f\" stroke=\"%s\" fill=\"none\"/>\n", px,
                                 ax_px(ya, p->min), ax_px(ya, p->max), color);
        char when[32], *m = gpurun_report_number(p->mean);
        fmt_utc(p->start, when, sizeof when);
        char *tip = p->n == 1 ? gpurun_xasprintf("%s: %s", when, m)
                              : gpurun_xasprintf("%zu runs from %s: mean %s", p->n, when, m);
        double change;
        if (i > 0 && history_worse(st->history[0].mean, p->mean, flags == FLAGS_LOWER_BETTER, &change)) {
            gpurun_strbuf_printf(b,
                                 "<circle class=\"flagged\" cx=\"%.1f\" cy=\"%.1f\" r=\"7.5\" fill=\"none\" "
                                 "stroke=\"#d62728\" stroke-width=\"2\"/>\n",
                                 px, ax_px(ya, p->mean));
            char *t = gpurun_xasprintf("%s, %+.1f%% against the first !", tip, change);
            free(tip);
            tip = t;
        }
        gpurun_strbuf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>", px,
                             ax_px(ya, p->mean), color);
        besc(b, tip);
        gpurun_strbuf_puts(b, "</title></circle>\n");
        free(tip);
        free(m);
    }
}

/* `text` cut to what fits right of the plot, at a character. */
static void svg_side_text(struct gpurun_strbuf *b, double y, const char *text)
{
    char cut[44];
    snprintf(cut, sizeof cut, "%s", text);
    if (strlen(text) >= sizeof cut)
        for (size_t k = sizeof cut - 4; k > 0; k--)
            if (((unsigned char)cut[k] & 0xc0) != 0x80) {
                snprintf(cut + k, sizeof cut - k, "...");
                break;
            }
    svg_text(b, PLOT_R + 16, y, "start", " font-size=\"12\"", cut);
}

/* What the history is of and spans, right of the plot; the y of a line
 * below. */
static double history_legend(struct gpurun_strbuf *b, const struct gpurun_report_job *job,
                           const struct gpurun_report_stat *st)
{
    const struct gpurun_report_config *c = &job->configs[job->history_config];
    const char *params = config_params(job, c);
    char from[32], to[32];
    size_t runs = 0;
    for (size_t i = 0; i < st->nhistory; i++)
        runs += st->history[i].n;
    fmt_utc(st->history[0].start, from, sizeof from);
    fmt_utc(st->history[st->nhistory - 1].end, to, sizeof to);
    char *lines[] = {
        gpurun_xstrdup("the configuration with the most runs:"),
        gpurun_xstrdup(strcmp(c->label, "-") != 0 ? c->label : ""),
        config_size(job, c),
        gpurun_xstrdup(params ? params : ""),
        gpurun_xasprintf("%zu runs, mean and min-max", runs),
        st->history_per > 1 ? gpurun_xasprintf("of up to %zu runs a point", st->history_per) : gpurun_xstrdup(""),
        gpurun_xasprintf("from %s", from),
        gpurun_xasprintf("to %s", to),
    };
    double y = PLOT_T + 12;
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        if (*lines[i]) {
            svg_side_text(b, y, lines[i]);
            y += 18;
        }
        free(lines[i]);
    }
    return y;
}

/* A history of the job's history configuration, `st`, against the runs'
 * start time, as the panel `cls` headed `title`; `flags`: how its points
 * are marked. */
static void history_panel(struct gpurun_strbuf *b, const struct gpurun_report_job *job,
                          const struct gpurun_report_stat *st, const char *cls, const char *title,
                          enum history_flags flags, double y0)
{
    gpurun_strbuf_printf(b, "<g class=\"%s\" transform=\"translate(0,%.0f)\">\n", cls, y0);
    gpurun_strbuf_printf(b,
                         "<rect x=\"0.5\" y=\"0.5\" width=\"%d\" height=\"%d\" fill=\"#ffffff\" "
                         "stroke=\"#d0d0d0\"/>\n",
                         SVG_W - 1, SVG_H - 1);
    svg_text(b, PLOT_L, 28, "start", " font-size=\"15\" font-weight=\"bold\"", title);

    double t0 = st->history[0].start, t1 = st->history[st->nhistory - 1].end, lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < st->nhistory; i++) {
        lo = fmin(lo, st->history[i].min);
        hi = fmax(hi, st->history[i].max);
    }
    double pad = t1 > t0 ? (t1 - t0) * 0.05 : 60;
    struct axis xa = {.lo = t0 - pad, .hi = t1 + pad, .px0 = PLOT_L, .px1 = PLOT_R},
                ya = {.px0 = PLOT_B, .px1 = PLOT_T};
    gpurun_strbuf_puts(b, "<g font-size=\"12\" fill=\"#333333\">\n");
    value_axis(b, &ya, lo, hi);
    time_axis(b, &xa);
    gpurun_strbuf_puts(b, "</g>\n");
    gpurun_strbuf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333333\"/>\n",
                         PLOT_L, PLOT_T, PLOT_R - PLOT_L, PLOT_B - PLOT_T);
    svg_text(b, (PLOT_L + PLOT_R) / 2.0, PLOT_B + 42, "middle", " font-size=\"13\"", "start of the run (UTC)");
    history_marks(b, st, &xa, &ya, palette[0], flags);
    double y = history_legend(b, job, st);
    bool rise = flags == FLAGS_LOWER_BETTER;
    svg_side_text(b, y, rise ? "a rise is the regression: ringed" : "a drop is the regression: ringed");
    char *t = gpurun_xasprintf("red, more than %g%% %s the first", GPURUN_REPORT_CV_FLAG * 100, rise ? "above" : "below");
    svg_side_text(b, y + 18, t);
    free(t);
    gpurun_strbuf_puts(b, "</g>\n");
}

/* A job's main figure against the start time of the runs of one
 * configuration: a regression (a drop in a throughput) ringed. */
static void svg_history_panel(struct gpurun_strbuf *b, const struct gpurun_report_job *job, double y0)
{
    const struct gpurun_report_fom *fom = &job->foms[job->history_fom];
    char *title = gpurun_xasprintf("%s: %s%s%s%s over time", job->name, fom->name, *fom->units ? " (" : "",
                                   fom->units, *fom->units ? ")" : "");
    history_panel(b, job, &job->configs[job->history_config].stats[job->history_fom], "history", title,
                  fom->better && !strcmp(fom->better, "lower") ? FLAGS_LOWER_BETTER : FLAGS_HIGHER_BETTER, y0);
    free(title);
}

/* The same configuration's energy per unit of that figure over the same
 * runs: a regression shows as a rise, flagged points ringed. */
static void svg_energy_history_panel(struct gpurun_strbuf *b, const struct gpurun_report_job *job, double y0)
{
    const struct gpurun_report_fom *fom = &job->foms[job->history_fom];
    const struct gpurun_report_energy_unit *u = &job->configs[job->history_config].energy->per_unit[job->history_fom];
    char *title = gpurun_xasprintf("%s: %s's energy per unit (%s) over time", job->name, fom->name, u->units);
    history_panel(b, job, &u->hist, "energy-history", title, FLAGS_LOWER_BETTER, y0);
    free(title);
}

/* The job's main figure against its energy per unit, one point per
 * configuration (report_energy.c draws it, for the page too). */
static bool tradeoff_shows(const struct gpurun_report_job *job)
{
    long f = gpurun_report_main_fom(job);
    return f >= 0 && gpurun_report_energy_tradeoff_shows(job, (size_t)f);
}

static void svg_tradeoff_panel(struct gpurun_strbuf *b, const struct gpurun_report_job *job, double y0)
{
    gpurun_strbuf_printf(b, "<g class=\"tradeoff\" transform=\"translate(0,%.0f)\">\n", y0);
    gpurun_strbuf_printf(b,
                         "<rect x=\"0.5\" y=\"0.5\" width=\"%d\" height=\"%d\" fill=\"#ffffff\" "
                         "stroke=\"#d0d0d0\"/>\n",
                         SVG_W - 1, GPURUN_REPORT_TRADEOFF_H - 1);
    gpurun_report_energy_tradeoff(job, (size_t)gpurun_report_main_fom(job), job->name, b);
    gpurun_strbuf_puts(b, "</g>\n");
}

/* The panels, one per job that has a plot and one per history, stacked;
 * `standalone` (the --svg file) adds the XML prolog and, below each job's
 * panels, its energy ones where its records measured energy: the
 * trade-off and the history of the energy per unit (the page has the
 * trade-off beside its energy table, and that history as a table). */
static void svg_document(struct gpurun_strbuf *b, const gpurun_report_t *r, bool standalone)
{
    double height = 0;
    size_t panels = 0;
    bool energy = false;
    for (size_t j = 0; j < r->njobs; j++) {
        if (gpurun_report_plots(&r->jobs[j])) {
            height += scaling_panel_height(&r->jobs[j]) + 10;
            panels++;
        }
        if (r->jobs[j].history_config >= 0) {
            height += SVG_H + 10;
            panels++;
        }
        if (standalone && tradeoff_shows(&r->jobs[j])) {
            height += GPURUN_REPORT_TRADEOFF_H + 10;
            panels++;
            energy = true;
        }
        if (standalone && energy_history(&r->jobs[j])) {
            height += SVG_H + 10;
            panels++;
            energy = true;
        }
    }
    height = panels ? height - 10 : SVG_H;
    if (standalone)
        gpurun_strbuf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    gpurun_strbuf_printf(b,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
            "viewBox=\"0 0 %d %.0f\" font-family=\"DejaVu Sans, Helvetica, Arial, "
            "sans-serif\" role=\"img\">\n",
            SCALING_W, height, SCALING_W, height);
    gpurun_strbuf_printf(b, "<title>gpurun report: figure of merit against GPUs, with ideal scaling, "
                            "parallel efficiency, and over time%s",
                         energy ? "; its energy per unit against it and over time" : "");
    /* The file's energy place, its panels, left out: said why, once. */
    const char *unmeasured = NULL;
    for (size_t j = 0; standalone && !energy && !unmeasured && j < r->njobs; j++)
        unmeasured = gpurun_report_energy_unmeasured(&r->jobs[j]);
    if (unmeasured) {
        gpurun_strbuf_puts(b, "; energy ");
        besc(b, unmeasured);
    }
    gpurun_strbuf_puts(b, "</title>\n");
    if (!panels)
        svg_text(b, SCALING_W / 2.0, SVG_H / 2.0, "middle", " font-size=\"14\"",
                 r->njobs ? "nothing to plot: a plot needs two configurations or more with a figure of merit "
                            "(runs of state ok)"
                          : "no runs to plot");
    double y = 0;
    for (size_t j = 0; j < r->njobs; j++) {
        const struct gpurun_report_job *job = &r->jobs[j];
        if (gpurun_report_plots(job)) {
            svg_panel(b, job, y);
            y += scaling_panel_height(job) + 10;
        }
        if (job->history_config >= 0) {
            svg_history_panel(b, job, y);
            y += SVG_H + 10;
        }
        if (standalone && tradeoff_shows(job)) {
            svg_tradeoff_panel(b, job, y);
            y += GPURUN_REPORT_TRADEOFF_H + 10;
        }
        if (standalone && energy_history(job)) {
            svg_energy_history_panel(b, job, y);
            y += SVG_H + 10;
        }
    }
    gpurun_strbuf_puts(b, "</svg>\n");
}

char *gpurun_report_svg(const gpurun_report_t *r)
{
    struct gpurun_strbuf b = {0};
    svg_document(&b, r, true);
    return bdone(&b);
}

/* ---- the page --------------------------------------------------------- */

static const char css[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;"
    "margin:24px auto;max-width:1160px;padding:0 16px;color:#1d1d1f;background:#fff}"
    "h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:28px 0 6px;padding-top:12px;"
    "border-top:1px solid #ddd}h3{font-size:15px;margin:16px 0 6px}"
    ".meta,.note{color:#555;font-size:13px}.scroll{overflow-x:auto}"
    "table{border-collapse:collapse;font-size:12.5px;margin:4px 0 12px}"
    "th,td{border:1px solid #d6d6d6;padding:3px 6px;white-space:nowrap}"
    "th{background:#eef2f7;text-align:left}td.n{text-align:right;"
    "font-variant-numeric:tabular-nums}tr:nth-child(even) td{background:#fafafa}"
    "svg{max-width:100%;height:auto;display:block;margin:8px 0}"
    "td.flag{background:#fde2e1!important;color:#8a1c13;font-weight:600}"
    "td.wrap{white-space:normal;max-width:28em;overflow-wrap:anywhere}"
    ".warn{color:#8a1c13;font-size:13px}"
    "code{font-size:12px}";

static void html_table(struct gpurun_strbuf *b, const struct table *t)
{
    gpurun_strbuf_puts(b, "<div class=\"scroll\"><table>\n<tr>");
    for (size_t c = 0; c < t->ncols; c++) {
        gpurun_strbuf_puts(b, "<th>");
        besc(b, t->head[c]);
        gpurun_strbuf_puts(b, "</th>");
    }
    gpurun_strbuf_puts(b, "</tr>\n");
    for (size_t r = 0; r < t->nrows; r++) {
        gpurun_strbuf_puts(b, "<tr>");
        for (size_t c = 0; c < t->ncols; c++) {
            const char *cell = t->cells[r * t->ncols + c];
            size_t len = strlen(cell);
            /* A flagged spread ("40.6% !") stands out; long text (params,
             * reasons, versions) wraps instead of pushing the figures off. */
            bool flag = len > 2 && strcmp(cell + len - 2, " !") == 0;
            gpurun_strbuf_puts(b, flag          ? "<td class=\"n flag\">"
                                  : t->right[c] ? "<td class=\"n\">"
                                                : "<td class=\"wrap\">");
            besc(b, cell);
            gpurun_strbuf_puts(b, "</td>");
        }
        gpurun_strbuf_puts(b, "</tr>\n");
    }
    gpurun_strbuf_puts(b, "</table></div>\n");
}

/* The page's head and the line saying what it reports and when. */
static void html_head(struct gpurun_strbuf *b, const gpurun_report_t *r, const char *source)
{
    gpurun_strbuf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
              "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
              "style-src 'unsafe-inline'\">\n"
              "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
              "<title>gpurun report: ");
    besc(b, source);
    gpurun_strbuf_printf(b, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>gpurun report</h1>\n", css);

    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    gpurun_strbuf_puts(b, "<p class=\"meta\">");
    gpurun_strbuf_printf(b, "%zu run%s of %zu job%s, %zu not ok, in <code>", r->nruns, r->nruns == 1 ? "" : "s",
            r->njobs, r->njobs == 1 ? "" : "s", r->nfailed);
    besc(b, source);
    gpurun_strbuf_printf(b, "</code>; written %s by gpurun %s.</p>\n", stamp, PACKAGE_VERSION);
    char *said = report_said(r);
    if (said) {
        gpurun_strbuf_puts(b, "<p class=\"warn\">");
        besc(b, said);
        gpurun_strbuf_puts(b, "</p>\n");
        free(said);
    }
}

/* A job's heading, its template and params, and where it ran. */
static void html_job_intro(struct gpurun_strbuf *b, const struct gpurun_report_job *job)
{
    gpurun_strbuf_puts(b, "<section>\n<h2>Job ");
    besc(b, job->name);
    gpurun_strbuf_puts(b, "</h2>\n<p class=\"meta\">");
    if (job->template_name) {
        gpurun_strbuf_puts(b, "Template <code>");
        besc(b, job->template_name);
        gpurun_strbuf_puts(b, "</code>; ");
    }
    gpurun_strbuf_printf(b, "%zu run%s, %zu not ok; scaling against %s.</p>\n", job->nruns,
            job->nruns == 1 ? "" : "s", job->nfailed,
            job->by_gpus ? "GPUs" : "ranks (CPU-only)");
    const char *params = job_params(job);
    if (params) {
        gpurun_strbuf_puts(b, "<p class=\"meta\">Params of every configuration: <code>");
        besc(b, params);
        gpurun_strbuf_puts(b, "</code></p>\n");
    }
    struct table wt = where_table(job);
    if (wt.ncols > 3) {
        gpurun_strbuf_puts(b, "<h3>Where it ran</h3>\n");
        html_table(b, &wt);
    }
    table_free(&wt);
}

/* A table per figure of merit, and the spread warning. */
static void html_job_foms(struct gpurun_strbuf *b, const struct gpurun_report_job *job)
{
    if (job->nfoms == 0)
        gpurun_strbuf_puts(b, "<p>No figures of merit in these runs.</p>\n");
    for (size_t f = 0; f < job->nfoms; f++) {
        const struct gpurun_report_fom *fom = &job->foms[f];
        gpurun_strbuf_puts(b, "<h3>");
        besc(b, fom->name);
        gpurun_strbuf_puts(b, " <span class=\"meta\">(");
        besc(b, fom->units);
        gpurun_strbuf_printf(b, "%s%s is better; %s)</span></h3>\n", *fom->units ? ", " : "", fom->better,
                kind_words[fom->kind]);
        char *heads[2];
        struct table t = fom_table(job, f, heads);
        html_table(b, &t);
        table_free(&t);
        free(heads[0]);
        free(heads[1]);
    }
    if (any_spread_flag(job)) {
        gpurun_strbuf_puts(b, "<p class=\"warn\">");
        besc(b, spread_note);
        gpurun_strbuf_puts(b, "</p>\n");
    }
}

/* The runs not ok, the busy runs and the GPU monitoring of a job. */
static void html_job_runs(struct gpurun_strbuf *b, const struct gpurun_report_job *job)
{
    if (job->nfailed) {
        gpurun_strbuf_printf(b, "<h3>Runs not ok <span class=\"meta\">(%zu%s; folders in the results "
                "folder)</span></h3>\n", job->nfailed, job->nfailed > job->nfailed_kept ? ", the latest shown" : "");
        struct table t = listed_table(job->failed, job->nfailed_kept);
        html_table(b, &t);
        table_free(&t);
    }
    if (job->nbusy_kept) {
        gpurun_strbuf_printf(b, "<h3>Busy runs, left out of the means <span class=\"meta\">(%zu%s)</span></h3>\n",
                             job->nbusy, job->nbusy > job->nbusy_kept ? ", the latest shown" : "");
        struct table t = listed_table(job->busy, job->nbusy_kept);
        html_table(b, &t);
        table_free(&t);
    }
    if (any_monitor(job)) {
        gpurun_strbuf_puts(b, "<h3>GPU monitoring <span class=\"meta\">(utilisation and power: mean "
                  "over the GPUs; memory: the highest peak)</span></h3>\n");
        struct table t = monitor_table(job);
        html_table(b, &t);
        table_free(&t);
    }
}

/* The history of a job's energy per unit, where it has one. */
static void html_job_energy_history(struct gpurun_strbuf *b, const struct gpurun_report_job *job)
{
    const struct gpurun_report_stat *eh = energy_history(job);
    if (!eh)
        return;
    const struct gpurun_report_config *c = &job->configs[job->history_config];
    gpurun_strbuf_puts(b, "<h3>History of ");
    besc(b, job->foms[job->history_fom].name);
    gpurun_strbuf_puts(b, "&#39;s energy per unit <span class=\"meta\">(");
    besc(b, c->energy->per_unit[job->history_fom].units);
    gpurun_strbuf_puts(b, "; ");
    char *words = config_words(job, c);
    besc(b, words);
    free(words);
    gpurun_strbuf_printf(b, "; a rise is a regression, flagged past %g %%)</span></h3>\n",
                         GPURUN_REPORT_CV_FLAG * 100);
    char *head;
    struct table t = history_table(eh, true, &head);
    html_table(b, &t);
    table_free(&t);
    free(head);
}

/* A job's section of the page. */
static void html_job(struct gpurun_strbuf *b, const struct gpurun_report_job *job)
{
    html_job_intro(b, job);
    html_job_foms(b, job);
    html_job_runs(b, job);
    gpurun_report_energy_html(job, b);
    html_job_energy_history(b, job);
    /* The job's plots: its own SVG, where it has one. */
    if (gpurun_report_plots(job) || job->history_config >= 0) {
        gpurun_report_t one = {.jobs = (struct gpurun_report_job *)job, .njobs = 1};
        svg_document(b, &one, false);
    }
    if (!gpurun_report_plots(job))
        gpurun_strbuf_printf(b, "<p class=\"meta\">No scaling plot: %s.</p>\n",
                gpurun_report_main_fom(job) < 0 ? "no run of state ok with a figure of merit"
                                                : "one configuration (a plot needs two or more)");
    gpurun_strbuf_puts(b, "</section>\n");
}

char *gpurun_report_html(const gpurun_report_t *r, const char *source)
{
    struct gpurun_strbuf b = {0};
    html_head(&b, r, source);
    for (size_t j = 0; j < r->njobs; j++)
        html_job(&b, &r->jobs[j]);
    if (!r->njobs)
        gpurun_strbuf_puts(&b, "<p>No runs.</p>\n");
    gpurun_strbuf_puts(&b, "<p class=\"note\">");
    besc(&b, definitions);
    gpurun_strbuf_puts(&b, "</p>\n</body>\n</html>\n");
    return bdone(&b);
}
