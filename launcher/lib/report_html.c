/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun report as a page (report.h): the text's tables and the SVG
 * plots in one HTML file with no script.  Moved whole from report.c. */
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

static void html_table(struct gpurun_strbuf *b, const struct gpurun_report_table *t)
{
    gpurun_strbuf_puts(b, "<div class=\"scroll\"><table>\n<tr>");
    for (size_t c = 0; c < t->ncols; c++) {
        gpurun_strbuf_puts(b, "<th>");
        gpurun_report_esc(b, t->head[c]);
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
            gpurun_report_esc(b, cell);
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
    gpurun_report_esc(b, source);
    gpurun_strbuf_printf(b, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>gpurun report</h1>\n", css);

    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    gpurun_strbuf_puts(b, "<p class=\"meta\">");
    gpurun_strbuf_printf(b, "%zu run%s of %zu job%s, %zu not ok, in <code>", r->nruns, r->nruns == 1 ? "" : "s",
            r->njobs, r->njobs == 1 ? "" : "s", r->nfailed);
    gpurun_report_esc(b, source);
    gpurun_strbuf_printf(b, "</code>; written %s by gpurun %s.</p>\n", stamp, PACKAGE_VERSION);
    char *said = gpurun_report_said(r);
    if (said) {
        gpurun_strbuf_puts(b, "<p class=\"warn\">");
        gpurun_report_esc(b, said);
        gpurun_strbuf_puts(b, "</p>\n");
        free(said);
    }
}

/* A job's heading, its template and params, and where it ran. */
static void html_job_intro(struct gpurun_strbuf *b, const struct gpurun_report_job *job)
{
    gpurun_strbuf_puts(b, "<section>\n<h2>Job ");
    gpurun_report_esc(b, job->name);
    gpurun_strbuf_puts(b, "</h2>\n<p class=\"meta\">");
    if (job->template_name) {
        gpurun_strbuf_puts(b, "Template <code>");
        gpurun_report_esc(b, job->template_name);
        gpurun_strbuf_puts(b, "</code>; ");
    }
    gpurun_strbuf_printf(b, "%zu run%s, %zu not ok; scaling against %s.</p>\n", job->nruns,
            job->nruns == 1 ? "" : "s", job->nfailed,
            job->by_gpus ? "GPUs" : "ranks (CPU-only)");
    const char *params = gpurun_report_job_params(job);
    if (params) {
        gpurun_strbuf_puts(b, "<p class=\"meta\">Params of every configuration: <code>");
        gpurun_report_esc(b, params);
        gpurun_strbuf_puts(b, "</code></p>\n");
    }
    struct gpurun_report_table wt = gpurun_report_where_table(job);
    if (wt.ncols > 3) {
        gpurun_strbuf_puts(b, "<h3>Where it ran</h3>\n");
        html_table(b, &wt);
    }
    gpurun_report_table_free(&wt);
}

/* A table per figure of merit, and the spread warning. */
static void html_job_foms(struct gpurun_strbuf *b, const struct gpurun_report_job *job)
{
    if (job->nfoms == 0)
        gpurun_strbuf_puts(b, "<p>No figures of merit in these runs.</p>\n");
    for (size_t f = 0; f < job->nfoms; f++) {
        const struct gpurun_report_fom *fom = &job->foms[f];
        gpurun_strbuf_puts(b, "<h3>");
        gpurun_report_esc(b, fom->name);
        gpurun_strbuf_puts(b, " <span class=\"meta\">(");
        gpurun_report_esc(b, fom->units);
        gpurun_strbuf_printf(b, "%s%s is better; %s)</span></h3>\n", *fom->units ? ", " : "", fom->better,
                gpurun_report_kind_words[fom->kind]);
        char *heads[2];
        struct gpurun_report_table t = gpurun_report_fom_table(job, f, heads);
        html_table(b, &t);
        gpurun_report_table_free(&t);
        free(heads[0]);
        free(heads[1]);
    }
    if (gpurun_report_any_spread_flag(job)) {
        gpurun_strbuf_puts(b, "<p class=\"warn\">");
        gpurun_report_esc(b, gpurun_report_spread_note);
        gpurun_strbuf_puts(b, "</p>\n");
    }
}

/* The runs not ok, the busy runs and the GPU monitoring of a job. */
static void html_job_runs(struct gpurun_strbuf *b, const struct gpurun_report_job *job)
{
    if (job->nfailed) {
        gpurun_strbuf_printf(b, "<h3>Runs not ok <span class=\"meta\">(%zu%s; folders in the results "
                "folder)</span></h3>\n", job->nfailed, job->nfailed > job->nfailed_kept ? ", the latest shown" : "");
        struct gpurun_report_table t = gpurun_report_listed_table(job->failed, job->nfailed_kept);
        html_table(b, &t);
        gpurun_report_table_free(&t);
    }
    if (job->nbusy_kept) {
        gpurun_strbuf_printf(b, "<h3>Busy runs, left out of the means <span class=\"meta\">(%zu%s)</span></h3>\n",
                             job->nbusy, job->nbusy > job->nbusy_kept ? ", the latest shown" : "");
        struct gpurun_report_table t = gpurun_report_listed_table(job->busy, job->nbusy_kept);
        html_table(b, &t);
        gpurun_report_table_free(&t);
    }
    if (gpurun_report_any_monitor(job)) {
        gpurun_strbuf_puts(b, "<h3>GPU monitoring <span class=\"meta\">(utilisation and power: mean "
                  "over the GPUs; memory: the highest peak)</span></h3>\n");
        struct gpurun_report_table t = gpurun_report_monitor_table(job);
        html_table(b, &t);
        gpurun_report_table_free(&t);
    }
}

/* The history of a job's energy per unit, where it has one. */
static void html_job_energy_history(struct gpurun_strbuf *b, const struct gpurun_report_job *job)
{
    const struct gpurun_report_stat *eh = gpurun_report_energy_history(job);
    if (!eh)
        return;
    const struct gpurun_report_config *c = &job->configs[job->history_config];
    gpurun_strbuf_puts(b, "<h3>History of ");
    gpurun_report_esc(b, job->foms[job->history_fom].name);
    gpurun_strbuf_puts(b, "&#39;s energy per unit <span class=\"meta\">(");
    gpurun_report_esc(b, c->energy->per_unit[job->history_fom].units);
    gpurun_strbuf_puts(b, "; ");
    char *words = gpurun_report_config_words(job, c);
    gpurun_report_esc(b, words);
    free(words);
    gpurun_strbuf_printf(b, "; a rise is a regression, flagged past %g %%)</span></h3>\n",
                         GPURUN_REPORT_CV_FLAG * 100);
    char *head;
    struct gpurun_report_table t = gpurun_report_history_table(eh, true, &head);
    html_table(b, &t);
    gpurun_report_table_free(&t);
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
        gpurun_report_svg_document(b, &one, false);
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
    gpurun_report_esc(&b, gpurun_report_definitions);
    gpurun_strbuf_puts(&b, "</p>\n</body>\n</html>\n");
    return gpurun_report_done(&b);
}
