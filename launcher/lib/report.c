/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun report (SPEC §7), its model: runs grouped per job and
 * configuration, their statistics, scaling, cost and energy; written as
 * text (report_text.c), SVG (report_svg.c) or HTML (report_html.c) by hand,
 * the energy's tables and plot by report_energy.c.
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

#include "energy.h"
#include "report.h"
#include "record.h"
#include "results.h"
#include "safefile.h"
#include "select.h"
#include "util.h"

/* XML/HTML text and attribute values: the five special characters, and
 * control characters (not allowed in XML 1.0) written as visible \xNN. */
void gpurun_report_esc(struct gpurun_strbuf *b, const char *s)
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

char *gpurun_report_done(struct gpurun_strbuf *b)
{
    if (!b->s)
        gpurun_strbuf_puts(b, "");
    return b->s;
}

char *gpurun_xml_escape(const char *s)
{
    struct gpurun_strbuf b = {0};
    gpurun_report_esc(&b, s);
    return gpurun_report_done(&b);
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
    return gpurun_report_done(&b);
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
char *gpurun_report_values_text(const struct gpurun_report_values *vs)
{
    struct gpurun_strbuf b = {0};
    for (size_t i = 0; i < vs->n; i++)
        gpurun_strbuf_printf(&b, "%s%s", i ? ", " : "", vs->v[i]);
    if (vs->more)
        gpurun_strbuf_printf(&b, " (and %zu more)", vs->more);
    if (!vs->n)
        gpurun_strbuf_puts(&b, "-");
    return gpurun_report_done(&b);
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
struct gpurun_report_point gpurun_report_point_merge(const struct gpurun_report_point *a,
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
            st->history[i] = gpurun_report_point_merge(&st->history[2 * i], &st->history[2 * i + 1]);
        st->nhistory /= 2;
        st->history_per *= 2;
    }
    struct gpurun_report_point *last = st->nhistory ? &st->history[st->nhistory - 1] : NULL;
    if (last && last->n < st->history_per) {
        *last = gpurun_report_point_merge(last, &p);
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

/* What per-GPU monitoring says of a configuration.  A record's gpus_monitor
 * (monitor.c) is an array with an object per GPU: util_mean (%),
 * mem_peak_mib, power_mean_w, ... each null when the GPU does not report it.
 * Shown: utilisation and power averaged over the GPUs, the highest memory
 * peak.  A flat object of numbers (a summary) is shown as key=value. */
char *gpurun_report_fmt_monitor(const json_t *m)
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
    return gpurun_report_done(&b);
}

static bool monitor_shows(const json_t *m)
{
    char *text = m ? gpurun_report_fmt_monitor(m) : NULL;
    bool shows = text && strcmp(text, "-") != 0;
    free(text);
    return shows;
}

/* ---- energy (moved whole from report_energy.c) ---------------------------- */

static double num(const json_t *o, const char *key)
{
    return gpurun_record_num(o, key);
}

/* A running mean over *n values: a sum of figures near DBL_MAX overflows
 * (the values are >= 0, so that v - mean does not). */
static void mean_add(double *mean, size_t *n, double v)
{
    (*n)++;
    *mean += (v - *mean) / (double)*n;
}

/* A measured quantity: finite and >= 0; anything else (a record not of
 * gpurun's writing) is not measured. */
static double measured(const json_t *o, const char *key)
{
    double v = num(o, key);
    return v >= 0 ? v : NAN;
}

void gpurun_report_energy_add(const struct gpurun_report_job *job, struct gpurun_report_config *c,
                              const json_t *run, double start)
{
    const json_t *e = json_object_get(run, GPURUN_REC_ENERGY);
    double total = measured(e, "total_J");
    if (isnan(total)) { /* nothing measured: why, once (a record before issue 31 says nothing) */
        char why[1024];
        if (!c->energy_unmeasured && gpurun_energy_unmeasured(e, why, sizeof why))
            c->energy_unmeasured = gpurun_xstrdup(why);
        return;
    }
    struct gpurun_report_energy *en = c->energy;
    if (!en)
        en = c->energy = gpurun_xcalloc(1, sizeof *en);
    double w = measured(e, "mean_power_W"), kwh = measured(e, "kwh"), cost = measured(e, "cost"),
           co2 = measured(e, "co2_g");
    size_t n = en->n;
    mean_add(&en->joules, &n, total);
    mean_add(&en->kwh, &en->n, isnan(kwh) ? total / 3.6e6 : kwh);
    if (!isnan(w))
        mean_add(&en->watts, &en->nwatts, w);
    if (!isnan(cost)) {
        mean_add(&en->cost, &en->ncost, cost);
        const char *cur = gpurun_record_str(run, "currency");
        if (cur) {
            free(en->currency);
            en->currency = gpurun_xstrdup(cur);
        }
    }
    if (!isnan(co2))
        mean_add(&en->co2_g, &en->nco2, co2);
    if (en->nfoms < job->nfoms) {
        en->per_unit = gpurun_xrealloc(en->per_unit, job->nfoms * sizeof *en->per_unit);
        memset(en->per_unit + en->nfoms, 0, (job->nfoms - en->nfoms) * sizeof *en->per_unit);
        en->nfoms = job->nfoms;
    }
    for (size_t f = 0; f < job->nfoms; f++) {
        const json_t *u = json_object_get(json_object_get(json_object_get(run, "foms"), job->foms[f].name),
                                          GPURUN_REC_FOM_ENERGY_PER_UNIT);
        double v = measured(u, "value");
        const char *units = gpurun_record_str(u, "units");
        if (isnan(v) || !units)
            continue;
        struct gpurun_report_energy_unit *pu = &en->per_unit[f];
        mean_add(&pu->mean, &pu->n, v);
        if (!isnan(start))
            gpurun_report_history_add(&pu->hist, start, v);
        /* Cut at a character, never inside one: the SVG and the page are UTF-8. */
        size_t len = strlen(units);
        if (len >= sizeof pu->units) {
            len = sizeof pu->units - 1;
            while (len > 0 && ((unsigned char)units[len] & 0xc0) == 0x80)
                len--;
        }
        memcpy(pu->units, units, len);
        pu->units[len] = '\0';
    }
}

void gpurun_report_energy_free(struct gpurun_report_config *c)
{
    free(c->energy_unmeasured);
    c->energy_unmeasured = NULL;
    if (!c->energy)
        return;
    free(c->energy->currency);
    for (size_t f = 0; f < c->energy->nfoms; f++)
        free(c->energy->per_unit[f].hist.history);
    free(c->energy->per_unit);
    free(c->energy);
    c->energy = NULL;
}
