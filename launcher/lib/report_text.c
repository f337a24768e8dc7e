/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun report as text (report.h): its tables, the history, the whole
 * report for a terminal; the tables are the page's too (report_text.h).
 * Moved whole from report.c. */
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

#include "record.h"
#include "report.h"
#include "report_text.h"
#include "results.h"
#include "safefile.h"
#include "select.h"
#include "util.h"

/* ---- tables ----------------------------------------------------------- */

char *gpurun_report_fmt_ratio(double v)
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


static void table_col(struct gpurun_report_table *t, const char *head, bool right)
{
    t->head = gpurun_xrealloc(t->head, (t->ncols + 1) * sizeof *t->head);
    t->right = gpurun_xrealloc(t->right, (t->ncols + 1) * sizeof *t->right);
    t->head[t->ncols] = head;
    t->right[t->ncols++] = right;
}

void gpurun_report_table_free(struct gpurun_report_table *t)
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
static void table_prune(struct gpurun_report_table *t)
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

bool gpurun_report_any_monitor(const struct gpurun_report_job *job)
{
    for (size_t c = 0; c < job->nconfigs; c++)
        if (job->configs[c].monitor)
            return true;
    return false;
}

/* The table of one figure of a job: a row per configuration.  Column
 * heads point into `heads` (freed by the caller). */
struct gpurun_report_table gpurun_report_fom_table(const struct gpurun_report_job *job, size_t f, char **heads)
{
    const struct gpurun_report_fom *fom = &job->foms[f];
    struct gpurun_report_table t = {0};
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
        row[k++] = gpurun_report_fmt_ratio(st->speedup);
        row[k++] = gpurun_report_fmt_ratio(st->efficiency);
        row[k++] = fmt_cost(st->cost, c->currency);
        row[k++] = fmt_cost(st->spot_cost, c->currency);
    }
    table_prune(&t);
    return t;
}

/* Per-GPU monitoring of each configuration, when the records carry it:
 * one table per job, not a column of every figure's. */
struct gpurun_report_table gpurun_report_monitor_table(const struct gpurun_report_job *job)
{
    struct gpurun_report_table t = {0};
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
        row[k++] = gpurun_report_fmt_monitor(c->monitor);
    }
    table_prune(&t);
    return t;
}

/* Where and with what each configuration ran: hosts, CPU and GPU model,
 * the program's version (the template's `version`) and gpurun's; two
 * builds of a program, or two kinds of node, show as two values. */
struct gpurun_report_table gpurun_report_where_table(const struct gpurun_report_job *job)
{
    struct gpurun_report_table t = {0};
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
        row[k++] = gpurun_report_values_text(&c->hosts);
        row[k++] = gpurun_report_values_text(&c->cpu_models);
        row[k++] = gpurun_report_values_text(&c->gpu_models);
        row[k++] = gpurun_report_values_text(&c->program_versions);
        row[k++] = gpurun_report_values_text(&c->gpurun_versions);
    }
    table_prune(&t);
    return t;
}

/* The runs not ok: when, which configuration, state, reason, folder. */
struct gpurun_report_table gpurun_report_listed_table(const struct gpurun_report_failed *list, size_t n)
{
    struct gpurun_report_table t = {0};
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
bool gpurun_report_any_spread_flag(const struct gpurun_report_job *job)
{
    for (size_t c = 0; c < job->nconfigs; c++)
        for (size_t f = 0; f < job->nfoms; f++)
            if (job->configs[c].stats[f].spread_flag)
                return true;
    return false;
}

const char gpurun_report_spread_note[] =
    "! spread between repeats above 5% (CV, the coefficient of variation: sample standard deviation / mean). "
    "Repeats on the same nodes usually agree within 1-3%; past 5% a difference between configurations of "
    "that size is noise, not scaling: look for another job on the nodes, clocks or thermal limits, or "
    "a cold first run, before trusting the mean.";

const char *const gpurun_report_kind_words[] = {"throughput", "time", "other: no scaling"};

/* Display width of UTF-8 text: one column per character. */
static size_t width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

static void table_print(const struct gpurun_report_table *t, FILE *out)
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

const char gpurun_report_definitions[] =
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
const char *gpurun_report_job_params(const struct gpurun_report_job *job)
{
    return job->params_fixed;
}

/* ---- history --------------------------------------------------------- */

/* Rows of the text history at most: a terminal's screenful. */
#define HISTORY_ROWS 16

/* A time as the records write it, to the second. */
void gpurun_report_fmt_utc(double t, char *buf, size_t n)
{
    time_t secs = (time_t)floor(t);
    struct tm tm;
    if (!isfinite(t) || !gmtime_r(&secs, &tm) || !strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, n, "-");
}

/* A configuration's size in words: "2 ranks on 1 node, 2 GPUs". */
char *gpurun_report_config_size(const struct gpurun_report_job *job, const struct gpurun_report_config *c)
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
const char *gpurun_report_config_params(const struct gpurun_report_job *job, const struct gpurun_report_config *c)
{
    (void)job; /* the configuration knows its varying params */
    return strcmp(c->params_vary, "-") != 0 && strcmp(c->label, "-") == 0 ? c->params_vary : NULL;
}

/* The configuration a history is of, in words: "ranks_per_node=2: 2 ranks
 * on 1 node, 2 GPUs". */
char *gpurun_report_config_words(const struct gpurun_report_job *job, const struct gpurun_report_config *c)
{
    char *size = gpurun_report_config_size(job, c);
    const char *params = gpurun_report_config_params(job, c);
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
            out[n - 1] = gpurun_report_point_merge(&out[n - 1], &st->history[i]);
    }
    return n;
}

/* The change of a point's `mean` against the `first` one's, in percent
 * (NAN: none, as from a first of 0), and whether it is flagged: worse than
 * the first by more than the spread flagged between repeats (a drop where
 * higher is better, a rise where lower is).  The text, the page and the
 * SVG flag by this one rule. */
bool gpurun_report_history_worse(double first, double mean, bool lower_better, double *change)
{
    *change = first != 0 ? (mean / first - 1) * 100 : NAN;
    return isfinite(*change) && (lower_better ? *change : -*change) > GPURUN_REPORT_CV_FLAG * 100;
}

/* The text history: a row per run (or per few runs), its change against
 * the first and a bar, so that a regression shows as a drop whichever way
 * the figure is better (`lower_better`: the bar is longest at the lowest
 * mean); a change worse than the first by more than the spread flagged
 * between repeats is flagged " !". */
struct gpurun_report_table gpurun_report_history_table(const struct gpurun_report_stat *st, bool lower_better,
                                                       char **head)
{
    struct gpurun_report_table t = {0};
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
        gpurun_report_fmt_utc(rows[r].start, when, sizeof when);
        row[0] = gpurun_xstrdup(when);
        row[1] = gpurun_xasprintf("%zu", rows[r].n);
        row[2] = gpurun_report_number(rows[r].mean);
        row[3] = gpurun_report_number(rows[r].min);
        row[4] = gpurun_report_number(rows[r].max);
        double change;
        bool worse = gpurun_report_history_worse(rows[0].mean, rows[r].mean, lower_better, &change);
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
const struct gpurun_report_stat *gpurun_report_energy_history(const struct gpurun_report_job *job)
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
    char *words = gpurun_report_config_words(job, c), *w = gpurun_printable(words), *fn = gpurun_printable(fom->name);
    fprintf(out, "\n  History of %s, %s (the configuration with the most runs)\n", fn, w);
    free(words);
    free(w);
    free(fn);
    char *head;
    struct gpurun_report_table t = gpurun_report_history_table(st, !strcmp(fom->better, "lower"), &head);
    table_print(&t, out);
    gpurun_report_table_free(&t);
    free(head);
    /* Its energy per unit over the same runs: a rise is the regression. */
    const struct gpurun_report_stat *eh = gpurun_report_energy_history(job);
    if (eh) {
        const struct gpurun_report_energy_unit *u = &c->energy->per_unit[job->history_fom];
        char *un = gpurun_printable(u->units);
        fn = gpurun_printable(fom->name);
        fprintf(out, "\n  History of %s's energy per unit (%s), the same configuration\n", fn, un);
        free(fn);
        free(un);
        t = gpurun_report_history_table(eh, true, &head);
        table_print(&t, out);
        gpurun_report_table_free(&t);
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
    const char *params = gpurun_report_job_params(job);
    if (params) {
        char *p = gpurun_printable(params);
        fprintf(out, "  params of every configuration: %s\n", p);
        free(p);
    }
    struct gpurun_report_table wt = gpurun_report_where_table(job);
    if (wt.ncols > 3) { /* more than the size: something is known of where it ran */
        fprintf(out, "\n  Where it ran\n");
        table_print(&wt, out);
    }
    gpurun_report_table_free(&wt);
    if (job->nfoms == 0)
        fprintf(out, "  no figures of merit in these runs\n");
    for (size_t f = 0; f < job->nfoms; f++) {
        const struct gpurun_report_fom *fom = &job->foms[f];
        char *fn = gpurun_printable(fom->name), *fu = gpurun_printable(fom->units);
        fprintf(out, "\n  %s (%s%s%s is better; %s)\n", fn, fu, *fu ? ", " : "", fom->better,
                gpurun_report_kind_words[fom->kind]);
        free(fn);
        free(fu);
        char *heads[2];
        struct gpurun_report_table t = gpurun_report_fom_table(job, f, heads);
        table_print(&t, out);
        gpurun_report_table_free(&t);
        free(heads[0]);
        free(heads[1]);
    }
    if (gpurun_report_any_spread_flag(job))
        fprintf(out, "\n  %s\n", gpurun_report_spread_note);
    if (job->nfailed) {
        fprintf(out, "\n  Runs not ok: %zu%s (folders in the results folder)\n", job->nfailed,
                job->nfailed > job->nfailed_kept ? ", the latest shown" : "");
        struct gpurun_report_table t = gpurun_report_listed_table(job->failed, job->nfailed_kept);
        table_print(&t, out);
        gpurun_report_table_free(&t);
    }
    if (job->nbusy_kept) {
        fprintf(out, "\n  Busy runs, left out of the means: %zu%s\n", job->nbusy,
                job->nbusy > job->nbusy_kept ? ", the latest shown" : "");
        struct gpurun_report_table t = gpurun_report_listed_table(job->busy, job->nbusy_kept);
        table_print(&t, out);
        gpurun_report_table_free(&t);
    }
    if (!gpurun_report_plots(job))
        fprintf(out, "\n  No plot: %s\n",
                gpurun_report_main_fom(job) < 0 ? "no run of state ok with a figure of merit"
                                                : "one configuration (a plot needs two or more)");
    if (gpurun_report_any_monitor(job)) {
        fprintf(out, "\n  GPU monitoring\n");
        struct gpurun_report_table t = gpurun_report_monitor_table(job);
        table_print(&t, out);
        gpurun_report_table_free(&t);
    }
    gpurun_report_energy_print(job, out);
    print_history(job, out);
}

/* What the report's heading says once of the runs it read: the selection,
 * and the busy runs left out of the means (or kept); NULL: nothing. */
char *gpurun_report_said(const gpurun_report_t *r)
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
    char *said = gpurun_report_said(r);
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
    const char *p = gpurun_report_definitions;
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
