/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_TEMPLATE_BASE_H
#define GPURUN_TEMPLATE_BASE_H

/* A template read whole: its file and its `base`'s keys (template_base.c),
 * above template.h's reading of one file. */

#include "error.h"
#include "template.h"

/* Read a template file, and its base's keys that it does not set (as
 * gpurun_template_inherit); errors name the file, line and key (exit 2). */
int gpurun_template_load(const char *path, gpurun_template_t **tp, gpurun_error_t *err);
/* The keys of t's base (and its base's, at most 7 deep) that t does not
 * set, the base found on the search path from t's folder (t->path's):
 * strings and lists whole, defaults and env name by name, figures by
 * title, a container block whole.  Nothing when t has no base.  Exit 2:
 * the base not found or not readable, a loop, or no command or
 * description in either. */
int gpurun_template_inherit(gpurun_template_t *t, gpurun_error_t *err);
#endif
