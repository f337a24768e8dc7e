/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun report's plots in SVG (report.h, report_svg.h): scaling,
 * efficiency and history panels, the document.  Moved whole from report.c. */
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
#include "report_svg.h"
#include "report_text.h"
#include "results.h"
#include "safefile.h"
#include "select.h"
#include "util.h"

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
    gpurun_report_esc(b, text);
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
    gpurun_report_esc(b, ylabel);
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
        char *m = gpurun_report_number(st->mean), *e = gpurun_report_fmt_ratio(st->efficiency);
        char *tip = gpurun_xasprintf("%ld %s: mean %s, efficiency %s (n = %zu)", cf->resources,
                                     resource_word(p, cf->resources), m, e, st->n);
        gpurun_report_esc(b, tip);
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
            char *eff = gpurun_report_fmt_ratio(e);
            gpurun_strbuf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"><title>",
                    ax_px(xa, (double)cf->resources), ax_px(&ya, fmin(e, 100)), color);
            char *tip = gpurun_xasprintf("%ld %s: efficiency %s", cf->resources, resource_word(p, cf->resources), eff);
            gpurun_report_esc(b, tip);
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
        gpurun_report_fmt_utc(p->start, when, sizeof when);
        char *tip = p->n == 1 ? gpurun_xasprintf("%s: %s", when, m)
                              : gpurun_xasprintf("%zu runs from %s: mean %s", p->n, when, m);
        double change;
        if (i > 0 && gpurun_report_history_worse(st->history[0].mean, p->mean, flags == FLAGS_LOWER_BETTER, &change)) {
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
        gpurun_report_esc(b, tip);
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
    const char *params = gpurun_report_config_params(job, c);
    char from[32], to[32];
    size_t runs = 0;
    for (size_t i = 0; i < st->nhistory; i++)
        runs += st->history[i].n;
    gpurun_report_fmt_utc(st->history[0].start, from, sizeof from);
    gpurun_report_fmt_utc(st->history[st->nhistory - 1].end, to, sizeof to);
    char *lines[] = {
        gpurun_xstrdup("the configuration with the most runs:"),
        gpurun_xstrdup(strcmp(c->label, "-") != 0 ? c->label : ""),
        gpurun_report_config_size(job, c),
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
void gpurun_report_svg_document(struct gpurun_strbuf *b, const gpurun_report_t *r, bool standalone)
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
        if (standalone && gpurun_report_energy_history(&r->jobs[j])) {
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
        gpurun_report_esc(b, unmeasured);
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
        if (standalone && gpurun_report_energy_history(job)) {
            svg_energy_history_panel(b, job, y);
            y += SVG_H + 10;
        }
    }
    gpurun_strbuf_puts(b, "</svg>\n");
}

char *gpurun_report_svg(const gpurun_report_t *r)
{
    struct gpurun_strbuf b = {0};
    gpurun_report_svg_document(&b, r, true);
    return gpurun_report_done(&b);
}
