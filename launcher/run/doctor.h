/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_DOCTOR_H
#define GPURUN_DOCTOR_H

/* gpurun doctor: can this node run GPU jobs well?  Every check is one line,
 * PASS / WARN / FAIL, with the fix in one sentence.  Checks read files under
 * a root folder ("/", or a fake sysfs/proc tree for tests), run tools from
 * PATH without a shell (fake scripts in tests) and load NVML at run time
 * ($GPURUN_NVML_LIBRARY: the fake one in tests). */

#include <stdbool.h>
#include <stdio.h>
#include <sys/resource.h>

#include <jansson.h>

#include "error.h"

enum gpurun_check_status { GPURUN_CHECK_PASS, GPURUN_CHECK_WARN, GPURUN_CHECK_FAIL };

struct gpurun_doctor_opts {
    const char *root;             /* NULL: "/" */
    const char *topology;         /* NULL: this node (or $GPURUN_TOPOLOGY) */
    const struct rlimit *memlock; /* NULL: getrlimit() */
    double tool_timeout_s;        /* <= 0: 10 s per tool */
};

/* Run every check.  *reportp:
 *   {"gpurun_doctor": 1, "host", "topology",
 *    "checks": [{"id", "title", "status": "PASS|WARN|FAIL", "detail", "fix"}],
 *    "pass", "warn", "fail", "gpudirect": {the pieces}}
 * -1 (exit 2) only when the topology or the root cannot be read. */
int gpurun_doctor_run(const struct gpurun_doctor_opts *opts, json_t **reportp, gpurun_error_t *err);

/* The report as the one screen `gpurun doctor` prints. */
void gpurun_doctor_print(const json_t *report, FILE *f);

#endif
