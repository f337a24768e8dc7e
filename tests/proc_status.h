/* SPDX-License-Identifier: BSD-3-Clause */
/* A number of this process's /proc/self/status (VmHWM, VmRSS: kB), for the
 * tests that bound what a hostile input may cost; -1 when it is not there. */
#ifndef GPURUN_TESTS_PROC_STATUS_H
#define GPURUN_TESTS_PROC_STATUS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline long status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    long v = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':')
            v = strtol(line + n + 1, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

#endif
