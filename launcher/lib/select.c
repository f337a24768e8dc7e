/* SPDX-License-Identifier: BSD-3-Clause */
/* Which runs a command reads (select.h): the one parser of --since,
 * --until, --last, --runs and --where, and the one filter, for report,
 * results and tune. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "select.h"
#include "tune.h"
#include "util.h"

void gpurun_select_init(struct gpurun_select *s)
{
    memset(s, 0, sizeof *s);
    s->since = s->until = NAN;
}

void gpurun_select_free(struct gpurun_select *s)
{
    for (size_t i = 0; i < s->nruns; i++)
        free(s->runs[i]);
    free(s->runs);
    for (size_t i = 0; i < s->nwhere; i++) {
        free(s->where[i].key);
        free(s->where[i].value);
    }
    gpurun_select_init(s);
}

bool gpurun_select_is_option(const char *name)
{
    static const char *const names[] = {"since", "until", "last", "runs", "where"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(name, names[i]))
            return true;
    return false;
}

/* ---- times -------------------------------------------------------------- */

/* Days from 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil): timegm is no C11, mktime is local time. */
static long days_from_civil(long y, long mo, long d)
{
    long yy = mo <= 2 ? y - 1 : y;
    long era = (yy >= 0 ? yy : yy - 399) / 400, yoe = yy - era * 400;
    long doy = (153 * (mo > 2 ? mo - 3 : mo + 9) + 2) / 5 + d - 1;
    return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

static bool fields_ok(int y, int mo, int d, int h, int mi, int sec)
{
    return y >= 0 && y <= 9999 && mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && h >= 0 && h <= 23 && mi >= 0 &&
           mi <= 59 && sec >= 0 && sec <= 60;
}

bool gpurun_parse_utc(const char *s, double *t)
{
    int y, mo, d, h, mi, sec, used = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &used) != 6 || used != 19 ||
        !fields_ok(y, mo, d, h, mi, sec))
        return false;
    const char *p = s + used;
    double frac = 0;
    if (*p == '.') { /* digits only: a fraction under 1 */
        size_t digits = strspn(p + 1, "0123456789");
        if (digits == 0 || digits > 9)
            return false;
        frac = strtod(p, NULL);
        p += 1 + digits;
    }
    long off = 0;
    if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
        int oh, om;
        if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2 || oh < 0 || oh > 23 || om < 0 || om > 59)
            return false;
        off = (*p == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
    } else if (strcmp(p, "Z") != 0) {
        return false;
    }
    *t = (double)days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec + frac - (double)off;
    return true;
}

/* "YYYY-MM-DD", "YYYY-MM-DD[T ]HH:MM[:SS]": local time. */
static bool parse_local(const char *s, double *t)
{
    int y, mo, d, h = 0, mi = 0, sec = 0, used = 0;
    char sep = 0;
    size_t len = strlen(s);
    if (len == 10) {
        if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &used) != 3 || used != 10)
            return false;
    } else if (len == 16 || len == 19) {
        int got = len == 16 ? sscanf(s, "%4d-%2d-%2d%c%2d:%2d%n", &y, &mo, &d, &sep, &h, &mi, &used)
                            : sscanf(s, "%4d-%2d-%2d%c%2d:%2d:%2d%n", &y, &mo, &d, &sep, &h, &mi, &sec, &used);
        if (got != (len == 16 ? 6 : 7) || (size_t)used != len || (sep != 'T' && sep != ' '))
            return false;
    } else {
        return false;
    }
    if (!fields_ok(y, mo, d, h, mi, sec) || y < 1970 || !isdigit((unsigned char)s[0]))
        return false;
    struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi,
                    .tm_sec = sec, .tm_isdst = -1};
    time_t v = mktime(&tm);
    if (v == (time_t)-1)
        return false;
    *t = (double)v;
    return true;
}

bool gpurun_select_parse_time(const char *s, time_t now, double *t)
{
    if (!s || !*s || strlen(s) > 40)
        return false;
    if (gpurun_parse_utc(s, t) || parse_local(s, t))
        return true;
    /* An age: digits and units, ending in a unit (a bare number is no
     * time: seconds or a year?). */
    if (!strchr("smhd", s[strlen(s) - 1]))
        return false;
    long age = gpurun_tune_parse_duration(s);
    if (age < 0)
        return false;
    *t = (double)now - (double)age;
    return true;
}

/* ---- options -------------------------------------------------------------- */

/* The keys --where takes: the record's own (record.h), and any key under
 * these objects. */
static const char *const where_keys[] = {
    GPURUN_REC_RUN_ID,          GPURUN_REC_JOB,          GPURUN_REC_TEMPLATE,   GPURUN_REC_STATE,
    GPURUN_REC_NODES,           GPURUN_REC_RANKS,        GPURUN_REC_GPUS_PER_RANK,
    GPURUN_REC_THREADS_PER_RANK, GPURUN_REC_GPUS,        GPURUN_REC_LAUNCHER,   GPURUN_REC_HOSTS,
    GPURUN_REC_GPU_MODEL,       GPURUN_REC_CPU_MODEL,    GPURUN_REC_PROGRAM_VERSION,
    GPURUN_REC_GPURUN_VERSION,  GPURUN_REC_SITE,         GPURUN_REC_EXIT_STATUS, GPURUN_REC_REPEAT_INDEX,
    GPURUN_REC_CURRENCY,
};
static const char *const where_objects[] = {GPURUN_REC_PARAMS, GPURUN_REC_CONFIG, GPURUN_REC_CONDITIONS,
                                            GPURUN_REC_TUNE, GPURUN_REC_PROVENANCE};

static bool where_key_ok(const char *key)
{
    for (size_t i = 0; i < sizeof where_keys / sizeof *where_keys; i++)
        if (!strcmp(key, where_keys[i]))
            return true;
    for (size_t i = 0; i < sizeof where_objects / sizeof *where_objects; i++) {
        size_t n = strlen(where_objects[i]);
        if (!strncmp(key, where_objects[i], n) && key[n] == '.' && key[n + 1])
            return true;
    }
    return false;
}

static int take_where(struct gpurun_select *s, const char *value, gpurun_error_t *err)
{
    const char *eq = strchr(value, '=');
    if (!eq || eq == value)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "--where '%.64s': expected KEY=VALUE (state=ok, params.nsteps=5000, hosts=node1)", value);
    if (s->nwhere == GPURUN_SELECT_WHERE_MAX)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "--where: at most %d of them", GPURUN_SELECT_WHERE_MAX);
    char *key = gpurun_xstrndup(value, (size_t)(eq - value));
    if (!where_key_ok(key)) {
        int rc = gpurun_err(err, GPURUN_EXIT_CONFIG,
                            "--where '%.64s': '%.64s' is no key runs are selected by: the record's run_id, job, "
                            "template, state, nodes, ranks, gpus_per_rank, threads_per_rank, gpus, launcher, "
                            "hosts, gpu_model, cpu_model, program_version, gpurun_version, site, exit_status, "
                            "repeat_index, or a key under params., config., conditions., tune., provenance.",
                            value, key);
        free(key);
        return rc;
    }
    s->where[s->nwhere].key = key;
    s->where[s->nwhere++].value = gpurun_xstrdup(eq + 1);
    return 0;
}

static int take_runs(struct gpurun_select *s, const char *value, gpurun_error_t *err)
{
    const char *p = value;
    for (;;) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n > 255)
            return gpurun_err(err, GPURUN_EXIT_CONFIG,
                              "--runs '%.64s': expected run ids separated by commas (20250101T000000Z-1,...)", value);
        if (s->nruns == GPURUN_SELECT_RUNS_MAX)
            return gpurun_err(err, GPURUN_EXIT_CONFIG, "--runs: at most %d run ids", GPURUN_SELECT_RUNS_MAX);
        s->runs = gpurun_xrealloc(s->runs, (s->nruns + 1) * sizeof *s->runs);
        s->runs[s->nruns++] = gpurun_xstrndup(p, n);
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

int gpurun_select_option(struct gpurun_select *s, const char *name, const char *value, time_t now,
                         gpurun_error_t *err)
{
    s->any = true;
    if (!strcmp(name, "since") || !strcmp(name, "until")) {
        double t;
        if (!gpurun_select_parse_time(value, now, &t))
            return gpurun_err(err, GPURUN_EXIT_CONFIG,
                              "--%s '%.64s': expected a time: 2025-01-31T12:00:00Z (UTC), 2025-01-31T12:00 or "
                              "2025-01-31 (local), or an age such as 90s, 30m, 2h, 3d",
                              name, value);
        *(name[0] == 's' ? &s->since : &s->until) = t;
        return 0;
    }
    if (!strcmp(name, "last")) {
        char *end;
        errno = 0;
        long n = strtol(value, &end, 10);
        if (errno || end == value || *end || n < 1 || n > GPURUN_SELECT_LAST_MAX || !isdigit((unsigned char)*value))
            return gpurun_err(err, GPURUN_EXIT_CONFIG, "--last '%.64s': expected a count of runs, 1 or more", value);
        s->last = n;
        return 0;
    }
    if (!strcmp(name, "runs"))
        return take_runs(s, value, err);
    if (!strcmp(name, "where"))
        return take_where(s, value, err);
    return gpurun_err(err, GPURUN_EXIT_CONFIG, "--%.64s: not a selection option", name);
}

/* ---- matching -------------------------------------------------------------- */

bool gpurun_run_busy(const json_t *run)
{
    json_t *c = json_object_get(run, GPURUN_REC_CONDITIONS);
    return json_is_true(json_object_get(c, GPURUN_REC_COND_BUSY));
}

/* A record value as --where compares it: a string as it is, a number as
 * a number, true/false, null; an array when any element is. */
static bool value_is(const json_t *v, const char *want, int depth)
{
    char *end;
    switch (json_typeof(v)) {
    case JSON_STRING: return !strcmp(json_string_value(v), want);
    case JSON_INTEGER:
    case JSON_REAL: {
        double w = strtod(want, &end);
        return *want && !*end && w == json_number_value(v);
    }
    case JSON_TRUE: return !strcmp(want, "true");
    case JSON_FALSE: return !strcmp(want, "false");
    case JSON_NULL: return !strcmp(want, "null");
    case JSON_ARRAY: {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) if (depth == 0 && value_is(e, want, 1)) return true;
        return false;
    }
    default: return false;
    }
}

static bool where_holds(const struct gpurun_select_where *w, const json_t *run)
{
    if (!strcmp(w->key, GPURUN_REC_CONDITIONS "." GPURUN_REC_COND_BUSY))
        return !strcmp(w->value, gpurun_run_busy(run) ? "true" : "false");
    const json_t *v = run;
    const char *p = w->key;
    for (int depth = 0; v && depth < 8; depth++) { /* a dotted path, a bounded few levels */
        size_t n = strcspn(p, ".");
        char seg[256];
        if (n >= sizeof seg)
            return false;
        memcpy(seg, p, n);
        seg[n] = '\0';
        v = json_object_get(v, seg);
        if (!p[n])
            return v && value_is(v, w->value, 0);
        p += n + 1;
    }
    return false;
}

bool gpurun_select_match(const struct gpurun_select *s, const json_t *run)
{
    if (!isnan(s->since) || !isnan(s->until)) {
        double t;
        if (!gpurun_parse_utc(gpurun_record_str(run, GPURUN_REC_START), &t))
            return false; /* no readable start: not within any bound */
        if ((!isnan(s->since) && t < s->since) || (!isnan(s->until) && t > s->until))
            return false;
    }
    if (s->nruns) {
        const char *id = gpurun_record_str(run, GPURUN_REC_RUN_ID);
        bool found = false;
        for (size_t i = 0; id && i < s->nruns && !found; i++)
            found = !strcmp(id, s->runs[i]);
        if (!found)
            return false;
    }
    for (size_t i = 0; i < s->nwhere; i++)
        if (!where_holds(&s->where[i], run))
            return false;
    return true;
}

char *gpurun_select_config_key(const json_t *run)
{
    char *params = json_dumps(json_object_get(run, GPURUN_REC_PARAMS), JSON_COMPACT | JSON_SORT_KEYS);
    const char *job = gpurun_record_str(run, GPURUN_REC_JOB);
    char *key = gpurun_xasprintf("%s\x1f%ld %ld %ld %ld\x1f%s", job ? job : "", gpurun_record_int(run, GPURUN_REC_NODES, -1),
                                 gpurun_record_int(run, GPURUN_REC_RANKS, -1),
                                 gpurun_record_int(run, GPURUN_REC_GPUS_PER_RANK, -1),
                                 gpurun_record_int(run, GPURUN_REC_THREADS_PER_RANK, -1), params ? params : "{}");
    free(params);
    return key;
}

/* ---- walking the selected runs --------------------------------------------- */

struct walk {
    const struct gpurun_select *s;
    json_t *counts; /* config key -> matching runs (first pass), then seen so far */
    bool counting;
    gpurun_results_fn fn;
    void *ctx;
};

static int walk_one(json_t *run, void *ctx)
{
    struct walk *w = ctx;
    if (!gpurun_select_match(w->s, run))
        return 0;
    if (w->s->last <= 0)
        return w->fn(run, w->ctx);
    char *key = gpurun_select_config_key(run);
    json_t *n = json_object_get(w->counts, key);
    json_int_t count = n ? json_integer_value(n) : 0;
    int rc = 0;
    if (w->counting) {
        json_object_set_new(w->counts, key, json_integer(count + 1));
    } else {
        /* counts hold what is left: the run is among the last N when at
         * most N are left, itself included. */
        json_object_set_new(w->counts, key, json_integer(count - 1));
        if (count <= w->s->last)
            rc = w->fn(run, w->ctx);
    }
    free(key);
    return rc;
}

int gpurun_select_each(gpurun_results_t *r, const char *job, const struct gpurun_select *s, gpurun_results_fn fn,
                       void *ctx, gpurun_error_t *err)
{
    struct walk w = {.s = s, .fn = fn, .ctx = ctx};
    if (s->last > 0) {
        w.counts = json_object();
        w.counting = true;
        if (gpurun_results_each(r, job, walk_one, &w, err) < 0) {
            json_decref(w.counts);
            return -1;
        }
        w.counting = false;
    }
    int rc = gpurun_results_each(r, job, walk_one, &w, err);
    json_decref(w.counts);
    return rc;
}

char *gpurun_select_text(const struct gpurun_select *s)
{
    struct gpurun_strbuf b = {0};
    for (int i = 0; i < 2; i++) {
        double t = i ? s->until : s->since;
        if (isnan(t))
            continue;
        time_t tt = (time_t)t;
        struct tm tm;
        char when[40] = "?";
        if (gmtime_r(&tt, &tm))
            strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        gpurun_strbuf_printf(&b, "%s%s %s", b.len ? ", " : "", i ? "until" : "since", when);
    }
    if (s->last > 0)
        gpurun_strbuf_printf(&b, "%sthe last %ld run%s per configuration", b.len ? ", " : "", s->last,
                             s->last == 1 ? "" : "s");
    if (s->nruns)
        gpurun_strbuf_printf(&b, "%s%zu run id%s", b.len ? ", " : "", s->nruns, s->nruns == 1 ? "" : "s");
    for (size_t i = 0; i < s->nwhere; i++)
        gpurun_strbuf_printf(&b, "%s%s %s=%s", b.len ? ", " : "", i ? "and" : "where", s->where[i].key,
                             s->where[i].value);
    return b.s ? b.s : gpurun_xstrdup("");
}
