/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_ERROR_H
#define GPURUN_ERROR_H

#include <stdarg.h>

/* Exit codes of SPEC §1: library functions carry one in the error so that
 * main can exit with it without guessing. */
enum gpurun_exit {
    GPURUN_EXIT_OK = 0,
    GPURUN_EXIT_CHECK = 1,   /* ranks ok, sanity/reference/figure missing */
    GPURUN_EXIT_CONFIG = 2,  /* usage or configuration error */
    GPURUN_EXIT_ENV = 3,     /* environment or topology cannot run the job */
    GPURUN_EXIT_TIMEOUT = 124,
    GPURUN_EXIT_STALLED = 125, /* ended because it stalled (on_stall = "kill") */
};

/* The same type as the public gpurun.h's (libgpurun's callers pass theirs
 * straight through): keep the two in step. */
#ifndef GPURUN_ERROR_T_DEFINED
#define GPURUN_ERROR_T_DEFINED
typedef struct gpurun_error {
    int code;          /* an enum gpurun_exit value */
    char text[2048];   /* one or more sentences, no trailing newline */
} gpurun_error_t;
#endif

/* Fill err (if not NULL) and return -1, so callers can write
 * `return gpurun_err(err, GPURUN_EXIT_CONFIG, "...", ...);` */
int gpurun_err(gpurun_error_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The same, from a va_list, returning nothing: for wrappers that return
 * another value (libgpurun's functions return the code). */
void gpurun_verr(gpurun_error_t *err, int code, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

void gpurun_error_clear(gpurun_error_t *err);

#endif
