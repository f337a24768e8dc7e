/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_REPORT_TEXT_H
#define GPURUN_REPORT_TEXT_H

/* Internal to gpurun report: the tables and words of the text
 * (report_text.c) that the page (report_html.c) and the plots
 * (report_svg.c) show too. */

#include <stdbool.h>
#include <stddef.h>

#include "report.h"

/* A table: heads, alignment and cells (owned). */
struct gpurun_report_table {
    size_t ncols, nrows;
    const char **head;
    bool *right;
    char **cells; /* nrows x ncols, owned */
};

char *gpurun_report_fmt_ratio(double v);
void gpurun_report_table_free(struct gpurun_report_table *t);
bool gpurun_report_any_monitor(const struct gpurun_report_job *job);
struct gpurun_report_table gpurun_report_fom_table(const struct gpurun_report_job *job, size_t f, char **heads);
struct gpurun_report_table gpurun_report_monitor_table(const struct gpurun_report_job *job);
struct gpurun_report_table gpurun_report_where_table(const struct gpurun_report_job *job);
struct gpurun_report_table gpurun_report_listed_table(const struct gpurun_report_failed *list, size_t n);
bool gpurun_report_any_spread_flag(const struct gpurun_report_job *job);
extern const char gpurun_report_spread_note[];
extern const char *const gpurun_report_kind_words[];
extern const char gpurun_report_definitions[];
const char *gpurun_report_job_params(const struct gpurun_report_job *job);
void gpurun_report_fmt_utc(double t, char *buf, size_t n);
char *gpurun_report_config_size(const struct gpurun_report_job *job, const struct gpurun_report_config *c);
const char *gpurun_report_config_params(const struct gpurun_report_job *job, const struct gpurun_report_config *c);
char *gpurun_report_config_words(const struct gpurun_report_job *job, const struct gpurun_report_config *c);
bool gpurun_report_history_worse(double first, double mean, bool lower_better, double *change);
struct gpurun_report_table gpurun_report_history_table(const struct gpurun_report_stat *st, bool lower_better,
                                                       char **head);
const struct gpurun_report_stat *gpurun_report_energy_history(const struct gpurun_report_job *job);
char *gpurun_report_said(const gpurun_report_t *r);

#endif
