/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_CMD_H
#define GPURUN_CMD_H

#include <getopt.h>

#include "error.h"

/* A command returns its exit status; on failure it fills err and main
 * prints it. argv[0] is the command's name. */
typedef int (*gpurun_cmd_fn)(int argc, char **argv, gpurun_error_t *err);

int cmd_topo(int argc, char **argv, gpurun_error_t *err);
int cmd_plan(int argc, char **argv, gpurun_error_t *err);
int cmd_run(int argc, char **argv, gpurun_error_t *err);
int cmd_rank(int argc, char **argv, gpurun_error_t *err);
int cmd_submit(int argc, char **argv, gpurun_error_t *err);
int cmd_doctor(int argc, char **argv, gpurun_error_t *err);
int cmd_collect(int argc, char **argv, gpurun_error_t *err);
int cmd_results(int argc, char **argv, gpurun_error_t *err);
int cmd_report(int argc, char **argv, gpurun_error_t *err);
int cmd_init(int argc, char **argv, gpurun_error_t *err);
int cmd_templates(int argc, char **argv, gpurun_error_t *err);
int cmd_status(int argc, char **argv, gpurun_error_t *err);
int cmd_tune(int argc, char **argv, gpurun_error_t *err);
int cmd_diff(int argc, char **argv, gpurun_error_t *err);
int cmd_rerun(int argc, char **argv, gpurun_error_t *err);

/* "CMD: unknown or incomplete option 'ARG' (see gpurun CMD --help)" in err,
 * for getopt's '?' (ARG: argv[optind - 1]), with the nearest of the
 * command's long options `opts` (ended by a NULL name; may be NULL) when
 * one is close: "(did you mean '--dry-run'?)"; returns GPURUN_EXIT_CONFIG. */
int cmd_bad_option(const char *cmd, const char *arg, const struct option *opts, gpurun_error_t *err);

/* Strict integer option parsing shared by the commands. */
int cmd_parse_int(const char *cmd, const char *opt, const char *s, int min, int max, int *out,
                  gpurun_error_t *err);

#endif
