/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "error.h"

int gpurun_err(gpurun_error_t *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->text, sizeof err->text, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return -1;
}

void gpurun_error_clear(gpurun_error_t *err)
{
    if (err) {
        err->code = 0;
        err->text[0] = '\0';
    }
}
