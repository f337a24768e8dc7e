/* SPDX-License-Identifier: BSD-3-Clause */
/* The report's energy (issue 31) shown: per configuration, the mean of its
 * ok runs' measured energy, power, kWh, energy cost and CO2, and for each
 * throughput figure its energy per unit of work and the throughput per kW,
 * as a table (report_text.c), on the page (report_html.c) and as the
 * trade-off plot (report_svg.c).  The figures themselves are the model's
 * (report.c: gpurun_report_energy_add). */
#include "config.h"
#include "record.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "energy.h"
#include "report.h"
#include "results.h"
#include "util.h"


static char *g4(double v)
{
    return isfinite(v) ? gpurun_xasprintf("%.4g", v) : gpurun_xstrdup("-");
}

/* The configuration in a few words: "GPUs/nodes/ranks LABEL". */
static char *config_cell(const struct gpurun_report_job *job, const struct gpurun_report_config *cf)
{
    bool label = strcmp(cf->label, "-") != 0;
    return job->by_gpus ? gpurun_xasprintf("%ld/%ld/%ld%s%s", cf->gpus, cf->nodes, cf->ranks, label ? " " : "",
                                           label ? cf->label : "")
                        : gpurun_xasprintf("%ld/%ld%s%s", cf->nodes, cf->ranks, label ? " " : "", label ? cf->label : "");
}

/* The figures with energy per unit in some configuration. */
static bool has_per_unit(const struct gpurun_report_energy *en, size_t f)
{
    return en && f < en->nfoms && en->per_unit[f].n;
}

/* The energy table as cells, raw (the caller makes them printable or
 * escapes them): a head row and a row per configuration with energy, NULL
 * when none.  Columns: configuration, runs, J/run, W, kWh/run, cost/run,
 * g CO2/run, then per figure with energy per unit: J/unit and figure per
 * kW.  `figs` gets those figures (malloc'ed, *nf of them). */
enum { FIXED = 7 };
static char **energy_cells(const struct gpurun_report_job *job, size_t *nrows, size_t *ncols, size_t **figs,
                           size_t *nf)
{
    size_t rows = 0;
    for (size_t c = 0; c < job->nconfigs; c++)
        rows += job->configs[c].energy != NULL;
    if (!rows)
        return NULL;
    *nf = 0;
    *figs = gpurun_xcalloc(job->nfoms + 1, sizeof **figs);
    for (size_t f = 0; f < job->nfoms; f++) {
        bool any = false;
        for (size_t c = 0; c < job->nconfigs && !any; c++)
            any = has_per_unit(job->configs[c].energy, f);
        if (any)
            (*figs)[(*nf)++] = f;
    }
    *ncols = FIXED + 2 * *nf;
    *nrows = rows + 1;
    char **cells = gpurun_xcalloc((rows + 1) * *ncols, sizeof *cells);
    const char *cur = NULL;
    for (size_t c = 0; c < job->nconfigs && !cur; c++)
        cur = job->configs[c].energy ? job->configs[c].energy->currency : NULL;
    cells[0] = gpurun_xstrdup(job->by_gpus ? "GPUs/nodes/ranks" : "nodes/ranks");
    cells[1] = gpurun_xstrdup("runs");
    cells[2] = gpurun_xstrdup("J/run");
    cells[3] = gpurun_xstrdup("mean W");
    cells[4] = gpurun_xstrdup("kWh/run");
    cells[5] = cur ? gpurun_xasprintf("%s/run", cur) : gpurun_xstrdup("cost/run");
    cells[6] = gpurun_xstrdup("g CO2/run");
    for (size_t k = 0; k < *nf; k++) {
        size_t f = (*figs)[k];
        const struct gpurun_report_fom *fom = &job->foms[f];
        const char *units = "J/unit";
        for (size_t c = 0; c < job->nconfigs; c++)
            if (has_per_unit(job->configs[c].energy, f))
                units = job->configs[c].energy->per_unit[f].units;
        cells[FIXED + 2 * k] = gpurun_xasprintf("%s %s", fom->name, units);
        cells[FIXED + 2 * k + 1] = gpurun_xasprintf("%s per kW", fom->units && *fom->units ? fom->units : fom->name);
    }
    size_t r = 1;
    for (size_t c = 0; c < job->nconfigs; c++) {
        const struct gpurun_report_config *cf = &job->configs[c];
        const struct gpurun_report_energy *en = cf->energy;
        if (!en)
            continue;
        char **row = &cells[r++ * *ncols];
        row[0] = config_cell(job, cf);
        row[1] = gpurun_xasprintf("%zu", en->n);
        row[2] = g4(en->joules);
        double w = en->nwatts ? en->watts : NAN;
        row[3] = g4(w);
        row[4] = g4(en->kwh);
        row[5] = g4(en->ncost ? en->cost : NAN);
        row[6] = g4(en->nco2 ? en->co2_g : NAN);
        for (size_t k = 0; k < *nf; k++) {
            size_t f = (*figs)[k];
            row[FIXED + 2 * k] = g4(has_per_unit(en, f) ? en->per_unit[f].mean : NAN);
            /* Throughput per kW: the mean figure over the mean power. */
            double mean = f < cf->nstats && cf->stats[f].n ? cf->stats[f].mean : NAN;
            row[FIXED + 2 * k + 1] = g4(!isnan(w) && w > 0 ? mean / (w / 1000.0) : NAN);
        }
    }
    return cells;
}

static void cells_free(char **cells, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(cells[i]);
    free(cells);
}

const char *gpurun_report_energy_unmeasured(const struct gpurun_report_job *job)
{
    const char *why = NULL;
    for (size_t c = 0; c < job->nconfigs; c++) {
        if (job->configs[c].energy)
            return NULL;
        if (!why)
            why = job->configs[c].energy_unmeasured;
    }
    return why;
}

/* One table of its own (report.c's helpers are private to it): left
 * column labels, numbers right-aligned. */
void gpurun_report_energy_print(const struct gpurun_report_job *job, FILE *out)
{
    size_t nrows, ncols, *figs = NULL, nf;
    char **cells = energy_cells(job, &nrows, &ncols, &figs, &nf);
    const char *why = gpurun_report_energy_unmeasured(job);
    if (why) {
        char *p = gpurun_printable(why);
        fprintf(out, "\n  Energy: %s\n", p);
        free(p);
    }
    if (!cells)
        return;
    size_t *wd = gpurun_xcalloc(ncols, sizeof *wd);
    for (size_t i = 0; i < nrows * ncols; i++) {
        char *p = gpurun_printable(cells[i]);
        free(cells[i]);
        cells[i] = p;
        size_t l = strlen(p);
        if (l > wd[i % ncols])
            wd[i % ncols] = l;
    }
    fprintf(out, "\n  Energy (measured; mean over the ok runs that have it)\n");
    for (size_t i = 0; i < nrows; i++) {
        fputs("  ", out);
        for (size_t c = 0; c < ncols; c++) {
            const char *s = cells[i * ncols + c];
            int pad = (int)(wd[c] - strlen(s));
            if (c == 0)
                fprintf(out, "%s%*s", s, pad, "");
            else
                fprintf(out, "%*s%s", pad, "", s);
            fputs(c + 1 < ncols ? "  " : "\n", out);
        }
    }
    cells_free(cells, nrows * ncols);
    free(wd);
    free(figs);
}

/* ---- the HTML page ------------------------------------------------------ */

static void esc(struct gpurun_strbuf *b, const char *s)
{
    char *e = gpurun_xml_escape(s);
    gpurun_strbuf_puts(b, e);
    free(e);
}

/* The trade-off plot's frame, in SVG pixels. */
enum { TW = GPURUN_REPORT_TRADEOFF_W, TH = GPURUN_REPORT_TRADEOFF_H, TL = 80, TR = 440, TT = 40, TB = 280 };
/* Configurations named right of the plot at most (as series in a legend). */
enum { TNAMED = 12 };

/* A number for an axis or a tip: 4 significant digits. */
static void tnum(struct gpurun_strbuf *b, double v)
{
    char *s = g4(v);
    esc(b, s);
    free(s);
}

/* Configuration c's point of figure f, (energy per unit, figure): both
 * finite and > 0, else none (a ratio of 0 or of a negative is no point). */
static bool tradeoff_point(const struct gpurun_report_job *job, size_t c, size_t f, double *x, double *y)
{
    const struct gpurun_report_config *cf = &job->configs[c];
    if (!has_per_unit(cf->energy, f) || f >= cf->nstats || !cf->stats[f].n)
        return false;
    *x = cf->energy->per_unit[f].mean;
    *y = cf->stats[f].mean;
    return isfinite(*x) && isfinite(*y) && *x > 0 && *y > 0;
}

/* The points, their extent and energy units; how many. */
static size_t tradeoff_extent(const struct gpurun_report_job *job, size_t f, double *xmax, double *ymax,
                              const char **units, size_t *last)
{
    size_t n = 0;
    double x, y;
    *xmax = *ymax = 0;
    *units = "J/unit";
    for (size_t c = 0; c < job->nconfigs; c++) {
        if (!tradeoff_point(job, c, f, &x, &y))
            continue;
        *xmax = fmax(*xmax, x);
        *ymax = fmax(*ymax, y);
        *units = job->configs[c].energy->per_unit[f].units;
        *last = c;
        n++;
    }
    return n;
}

bool gpurun_report_energy_tradeoff_shows(const struct gpurun_report_job *job, size_t f)
{
    double xmax, ymax;
    const char *units;
    size_t last;
    return f < job->nfoms && tradeoff_extent(job, f, &xmax, &ymax, &units, &last) >= 2;
}

/* An axis' top: 10% above the largest value, short of infinity. */
static double tradeoff_top(double max)
{
    return fmin(max, DBL_MAX / 1.1) * 1.1;
}

/* A name right of the plot, cut at a character to what fits. */
static void tradeoff_name(struct gpurun_strbuf *b, size_t i, const char *name)
{
    gpurun_strbuf_printf(b, "<text x=\"%d\" y=\"%zu\" font-size=\"11\">%zu: ", TR + 12, (size_t)TT + 8 + 18 * i,
                         i + 1);
    char cut[56];
    snprintf(cut, sizeof cut, "%s", name);
    if (strlen(name) >= sizeof cut) /* cut at a character, never inside one */
        for (size_t k = sizeof cut - 4; k > 0; k--)
            if (((unsigned char)cut[k] & 0xc0) != 0x80) {
                snprintf(cut + k, sizeof cut - k, "...");
                break;
            }
    esc(b, cut);
    gpurun_strbuf_puts(b, "</text>\n");
}

/* Figure f against its energy per unit, one point per configuration that
 * has both (the caller has seen to 2 at least: the table says the rest);
 * both axes from 0, so that ratios read true.  Up and left is better.  At
 * most GPURUN_REPORT_PLOT_POINTS points: every k-th configuration and the
 * last, as the scaling plot draws them. */
void gpurun_report_energy_tradeoff(const struct gpurun_report_job *job, size_t f, const char *job_name,
                                   struct gpurun_strbuf *b)
{
    const struct gpurun_report_fom *fom = &job->foms[f];
    double xmax, ymax, x, y;
    const char *units;
    size_t last = 0, n = tradeoff_extent(job, f, &xmax, &ymax, &units, &last);
    if (n < 2)
        return;
    xmax = tradeoff_top(xmax);
    ymax = tradeoff_top(ymax);
    size_t stride = (n + GPURUN_REPORT_PLOT_POINTS - 1) / GPURUN_REPORT_PLOT_POINTS;
    gpurun_strbuf_puts(b, "<title>");
    esc(b, fom->name);
    gpurun_strbuf_puts(b, " against its energy per unit, one point per configuration</title>\n");
    gpurun_strbuf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333333\"/>\n",
                         TL, TT, TR - TL, TB - TT);
    gpurun_strbuf_printf(b, "<text x=\"%d\" y=\"24\" font-size=\"14\" font-weight=\"bold\">", TL);
    if (job_name) {
        esc(b, job_name);
        gpurun_strbuf_puts(b, ": ");
    }
    esc(b, fom->name);
    gpurun_strbuf_puts(b, " against energy per unit (up and left is better)</text>\n");
    /* Ticks at 0, half and the top of each axis (halves: no overflow). */
    for (int k = 0; k <= 2; k++) {
        double fx = TL + (TR - TL) * k / 2.0, fy = TB - (TB - TT) * k / 2.0;
        gpurun_strbuf_printf(b, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">", fx, TB + 16);
        tnum(b, xmax * (k / 2.0));
        gpurun_strbuf_printf(b, "</text>\n<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">", TL - 6,
                             fy + 4);
        tnum(b, ymax * (k / 2.0));
        gpurun_strbuf_puts(b, "</text>\n");
    }
    gpurun_strbuf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">energy per unit (",
                         (TL + TR) / 2, TB + 38);
    esc(b, units);
    gpurun_strbuf_printf(b, ")</text>\n<text x=\"16\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\" "
                            "transform=\"rotate(-90 16 %d)\">",
                         (TT + TB) / 2, (TT + TB) / 2);
    esc(b, fom->name);
    if (fom->units && *fom->units) {
        gpurun_strbuf_puts(b, " (");
        esc(b, fom->units);
        gpurun_strbuf_puts(b, ")");
    }
    gpurun_strbuf_puts(b, "</text>\n");
    size_t i = 0, nth = 0;
    for (size_t c = 0; c < job->nconfigs; c++) {
        if (!tradeoff_point(job, c, f, &x, &y) || (nth++ % stride && c != last))
            continue;
        const struct gpurun_report_config *cf = &job->configs[c];
        /* x <= xmax and y <= ymax: within the frame, finite. */
        double px = TL + (TR - TL) * (x / xmax), py = TB - (TB - TT) * (y / ymax);
        char *name = config_cell(job, cf);
        gpurun_strbuf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#1f77b4\"><title>", px, py);
        esc(b, name);
        gpurun_strbuf_puts(b, ": ");
        tnum(b, y);
        gpurun_strbuf_puts(b, " ");
        esc(b, fom->units);
        gpurun_strbuf_puts(b, ", ");
        tnum(b, x);
        gpurun_strbuf_puts(b, " ");
        esc(b, units);
        gpurun_strbuf_puts(b, "</title></circle>\n");
        /* The configurations named right of the plot, numbered at their point. */
        gpurun_strbuf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%zu</text>\n", px + 6, py - 6, i + 1);
        if (i < TNAMED)
            tradeoff_name(b, i, name);
        free(name);
        i++;
    }
    /* What is not named or not drawn: the table and the tips have it. */
    size_t line = TNAMED;
    if (i > TNAMED)
        gpurun_strbuf_printf(b, "<text x=\"%d\" y=\"%zu\" font-size=\"11\">%d to %zu: named in their tips</text>\n",
                             TR + 12, (size_t)TT + 8 + 18 * line++, TNAMED + 1, i);
    if (stride > 1)
        gpurun_strbuf_printf(b,
                             "<text x=\"%d\" y=\"%zu\" font-size=\"11\">%zu of %zu configurations drawn (one in "
                             "%zu, and the last)</text>\n",
                             TR + 12, (size_t)TT + 8 + 18 * line, i, n, stride);
}

void gpurun_report_energy_html(const struct gpurun_report_job *job, struct gpurun_strbuf *b)
{
    size_t nrows, ncols, *figs = NULL, nf;
    char **cells = energy_cells(job, &nrows, &ncols, &figs, &nf);
    const char *why = gpurun_report_energy_unmeasured(job);
    if (why) {
        gpurun_strbuf_puts(b, "<h3>Energy</h3>\n<p class=\"meta\">");
        esc(b, why);
        gpurun_strbuf_puts(b, "</p>\n");
    }
    if (!cells)
        return;
    gpurun_strbuf_puts(b, "<h3>Energy <span class=\"meta\">(measured; mean over the ok runs that have it; "
                          "cost per unit of work in the tables above)</span></h3>\n<div class=\"scroll\"><table>\n");
    /* A column with nothing to show (cost and CO2 without a site's prices)
     * is left out, as the page's other tables do. */
    bool *shown = gpurun_xcalloc(ncols, sizeof *shown);
    for (size_t c = 0; c < ncols; c++)
        for (size_t r = 1; r < nrows && !shown[c]; r++)
            shown[c] = strcmp(cells[r * ncols + c], "-") != 0;
    for (size_t r = 0; r < nrows; r++) {
        gpurun_strbuf_puts(b, "<tr>");
        for (size_t c = 0; c < ncols; c++) {
            if (!shown[c])
                continue;
            gpurun_strbuf_puts(b, r == 0 ? "<th>" : c == 0 ? "<td class=\"wrap\">" : "<td class=\"n\">");
            esc(b, cells[r * ncols + c]);
            gpurun_strbuf_puts(b, r == 0 ? "</th>" : "</td>");
        }
        gpurun_strbuf_puts(b, "</tr>\n");
    }
    gpurun_strbuf_puts(b, "</table></div>\n");
    free(shown);
    for (size_t k = 0; k < nf; k++) {
        if (!gpurun_report_energy_tradeoff_shows(job, figs[k]))
            continue;
        gpurun_strbuf_printf(b,
                             "<svg class=\"tradeoff\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                             "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, "
                             "sans-serif\" role=\"img\">\n",
                             TW, TH, TW, TH);
        gpurun_report_energy_tradeoff(job, figs[k], NULL, b);
        gpurun_strbuf_puts(b, "</svg>\n");
    }
    cells_free(cells, nrows * ncols);
    free(figs);
}
