/* SPDX-License-Identifier: BSD-3-Clause */
/* A minimal TAP producer for the unit tests (automake's tap-driver reads it). */
#ifndef GPURUN_TAP_H
#define GPURUN_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

static inline int tap_ok(int cond, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline int tap_ok(int cond, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (!cond) {
        tap_failed++;
        printf("#   failed at %s:%d\n", file, line);
    }
    fflush(stdout);
    return cond;
}

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
static inline int tap_is_str(const char *got, const char *want, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static inline int tap_is_str(const char *got, const char *want, const char *file, int line, const char *fmt, ...)
{
    int cond = got && want && strcmp(got, want) == 0;
    va_list ap;
    printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (!cond) {
        tap_failed++;
        printf("#   failed at %s:%d\n#   got:  '%s'\n#   want: '%s'\n", file, line, got ? got : "(null)",
               want ? want : "(null)");
    }
    fflush(stdout);
    return cond;
}

#define is_str(got, want, ...) tap_is_str((got), (want), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(got, want, ...)                                                        \
    (ok((long)(got) == (long)(want), __VA_ARGS__)                                     \
         ? 1                                                                          \
         : (printf("#   got:  %ld\n#   want: %ld\n", (long)(got), (long)(want)), 0))
#define diag(...) (printf("# "), printf(__VA_ARGS__), printf("\n"))
#define skip_all(...) (printf("1..0 # SKIP "), printf(__VA_ARGS__), printf("\n"))
#define skip(...) (printf("ok %d # SKIP ", ++tap_n), printf(__VA_ARGS__), printf("\n"))
#define done_testing() (printf("1..%d\n", tap_n), tap_failed ? 1 : 0)

#endif
