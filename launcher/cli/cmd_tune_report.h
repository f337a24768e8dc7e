/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_CMD_TUNE_REPORT_H
#define GPURUN_CMD_TUNE_REPORT_H

/* Internal to gpurun tune (cmd_tune_report.c): an objective's name and
 * sense, a mean, and the session's verdict printed. */

#include "cmd_tune_model.h"

const char *cmd_tune_obj_name(const struct tune *t, enum objective o);
bool cmd_tune_obj_lower(const struct tune *t, enum objective o);
double cmd_tune_mean(const double *v, size_t n);
void cmd_tune_report(struct tune *t, size_t best[OBJ_N]);

#endif
