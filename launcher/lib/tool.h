/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_TOOL_H
#define GPURUN_TOOL_H

/* Running a program and reading its output, within a time and a size
 * limit: the one runner behind doctor's and GPUDirect's probes, a
 * resource manager's tools (gpurun_rm_tool) and its accounting queries.
 * argv only, never a shell; the program is looked up on PATH first. */

#include <stdbool.h>
#include <stddef.h>

struct gpurun_tool {
    char *const *argv;  /* argv[0] on PATH, or a path with a '/' */
    int stdin_fd;       /* its standard input; -1: /dev/null */
    bool merge_stderr;  /* its standard error into the output too; else the caller's */
    double timeout_s;   /* killed (its process group too) past it: status 124; 0: no limit */
    size_t max;         /* bytes of output kept (the rest is read and dropped) */
};

/* 0 with its output in *outp (malloc'ed, NUL-terminated) and *statusp (its
 * exit status; 128+N for signal N; 124 when it ran out of time); -1 with
 * *errnop when it could not be started (ENOENT: not on PATH; exec's
 * errno), -2 with *errnop when no pipe or process could be made. */
int gpurun_tool_exec(const struct gpurun_tool *t, char **outp, int *statusp, int *errnop);

/* The probes' shorthand: /dev/null in, standard output and error kept, a
 * limit of timeout_s (0: 10 s); -1 when it could not be started. */
int gpurun_tool_run(char *const argv[], double timeout_s, size_t max, char **outp, int *statusp);

/* A program's first answer (a --version): standard output and error into
 * out (cut to outlen), at most timeout_ms; 0, or -1 with why (it could not
 * start, ran out of time, or failed: its first line). */
int gpurun_capture(char *const argv[], char *out, size_t outlen, int timeout_ms, char *why, size_t len);

#endif
