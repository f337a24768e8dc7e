/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "error.h"

void gpurun_verr(gpurun_error_t *err, int code, const char *fmt, va_list ap)
{
    if (err) {
        vsnprintf(err->text, sizeof err->text, fmt, ap);
        err->code = code;
    }
}

int gpurun_err(gpurun_error_t *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gpurun_verr(err, code, fmt, ap);
    va_end(ap);
    return -1;
}

void gpurun_error_clear(gpurun_error_t *err)
{
    if (err) {
        err->code = 0;
        err->text[0] = '\0';
    }
}
