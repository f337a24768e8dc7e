/* SPDX-License-Identifier: BSD-3-Clause */
/* A run's record: its failure, and reading one defensively (record.h). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "util.h"

/* ---- reading a record defensively -------------------------------------- */

long gpurun_record_int(const json_t *run, const char *key, long dflt)
{
    json_t *v = json_object_get(run, key);
    if (json_is_integer(v))
        return (long)json_integer_value(v);
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (isfinite(d) && d == floor(d) && fabs(d) < 1e15)
            return (long)d;
    }
    return dflt;
}

double gpurun_record_num(const json_t *run, const char *key)
{
    json_t *v = json_object_get(run, key);
    double d = json_is_number(v) ? json_number_value(v) : NAN;
    return isfinite(d) ? d : NAN;
}

const char *gpurun_record_str(const json_t *run, const char *key)
{
    return json_string_value(json_object_get(run, key));
}

long gpurun_record_gpus(const json_t *run)
{
    long g = gpurun_record_int(run, GPURUN_REC_GPUS, -1);
    if (g >= 0)
        return g;
    long ranks = gpurun_record_int(run, GPURUN_REC_RANKS, -1),
         gpr = gpurun_record_int(run, GPURUN_REC_GPUS_PER_RANK, -1);
    return ranks >= 0 && gpr >= 0 ? ranks * gpr : -1;
}

bool gpurun_record_fom_value(const json_t *fom, double *v)
{
    json_t *x = json_object_get(fom, GPURUN_REC_FOM_VALUE);
    if (!json_is_number(x)) {
        json_t *vals = json_object_get(fom, GPURUN_REC_FOM_VALUES);
        size_t n = json_is_array(vals) ? json_array_size(vals) : 0;
        x = n ? json_array_get(vals, n - 1) : NULL;
    }
    if (!json_is_number(x) || !isfinite(json_number_value(x)))
        return false;
    *v = json_number_value(x);
    return true;
}

char *gpurun_record_config_text(const json_t *run)
{
    json_t *cfg = json_object_get(run, GPURUN_REC_CONFIG);
    if (!json_is_object(cfg) || json_object_size(cfg) == 0)
        return gpurun_xstrdup("-");
    char *out = gpurun_xstrdup("");
    const char *k;
    json_t *v;
    json_object_foreach(cfg, k, v)
    {
        char *val = json_is_string(v) ? gpurun_xstrdup(json_string_value(v))
                    : json_is_integer(v)
                        ? gpurun_xasprintf("%lld", (long long)json_integer_value(v))
                        : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        char *next = gpurun_xasprintf("%s%s%s=%s", out, *out ? " " : "", k, val ? val : "?");
        free(val);
        free(out);
        out = next;
    }
    return out;
}

/* A JSON string of s; of s fit for a terminal (valid UTF-8) when s is not. */
static json_t *text_json(const char *s)
{
    json_t *j = json_string(s);
    if (!j) {
        char *t = gpurun_terminal_text(s);
        j = json_string(t);
        free(t);
    }
    return j;
}

json_t *gpurun_record_failure(int rank, const char *host, int status, const char *reason, char *const *tail,
                              size_t ntail)
{
    json_t *lines = json_array();
    for (size_t i = 0; i < ntail; i++)
        json_array_append_new(lines, text_json(tail[i]));
    json_t *f = json_object();
    json_object_set_new(f, "rank", rank >= 0 ? json_integer(rank) : json_null());
    json_object_set_new(f, "host", host ? text_json(host) : json_null());
    json_object_set_new(f, "status", json_integer(status));
    json_object_set_new(f, "reason", text_json(reason ? reason : ""));
    json_object_set_new(f, "tail", lines);
    return f;
}

void gpurun_record_failure_step(json_t *failure, int step, const char *command)
{
    json_object_set_new(failure, "step", json_integer(step));
    json_object_set_new(failure, "command", text_json(command));
}

char *gpurun_record_failure_text(const json_t *run)
{
    const json_t *f = json_object_get(run, GPURUN_RECORD_FAILURE);
    if (!json_is_object(f))
        return NULL;
    const char *reason = gpurun_record_str(f, "reason"), *host = gpurun_record_str(f, "host");
    long rank = gpurun_record_int(f, "rank", -1), step = gpurun_record_int(f, "step", -1);
    char *text = step > 0 ? gpurun_xasprintf("setup step %ld: %s", step, reason ? reason : "?")
                 : rank >= 0 ? gpurun_xasprintf("rank %ld on %s: %s", rank, host ? host : "?", reason ? reason : "?")
                           : gpurun_xstrdup(reason ? reason : "?");
    char *shown = gpurun_terminal_text(text);
    free(text);
    return shown;
}

