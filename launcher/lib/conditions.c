/* SPDX-License-Identifier: BSD-3-Clause */
/* A run's conditions: /proc's texts, a host's figures, the verdict and
 * its words (conditions.h).  Pure: the rank step reads the files. */
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conditions.h"
#include "record.h"
#include "util.h"

/* ---- the run's cores ---------------------------------------------------- */

int gpurun_cond_cores_add(struct gpurun_cond_cores *c, const char *list)
{
    const char *p = list ? list : "";
    while (*p) {
        char *end;
        unsigned long a = strtoul(p, &end, 10), b = a;
        if (end == p || !isdigit((unsigned char)*p))
            return -1;
        p = end;
        if (*p == '-') {
            b = strtoul(p + 1, &end, 10);
            if (end == p + 1 || b < a)
                return -1;
            p = end;
        }
        for (unsigned long i = a; i <= b && i < GPURUN_COND_CPUS_MAX; i++)
            if (!c->on[i]) {
                c->on[i] = 1;
                c->n++;
            }
        if (*p == ',')
            p++;
        else if (*p)
            return -1;
    }
    return 0;
}

char *gpurun_cond_cores_text(const struct gpurun_cond_cores *c)
{
    struct gpurun_strbuf b = {0};
    gpurun_strbuf_puts(&b, "");
    for (int i = 0; i < GPURUN_COND_CPUS_MAX; i++) {
        if (!c->on[i])
            continue;
        int j = i;
        while (j + 1 < GPURUN_COND_CPUS_MAX && c->on[j + 1])
            j++;
        if (j > i)
            gpurun_strbuf_printf(&b, "%s%d-%d", b.len ? "," : "", i, j);
        else
            gpurun_strbuf_printf(&b, "%s%d", b.len ? "," : "", i);
        i = j;
    }
    return b.s;
}

/* ---- /proc's texts ------------------------------------------------------ */

int gpurun_cond_stat_ticks(const char *text, const struct gpurun_cond_cores *c, struct gpurun_cond_ticks *out)
{
    out->busy = out->total = 0;
    int found = 0;
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        unsigned cpu;
        unsigned long long v[8] = {0};
        /* user nice system idle iowait irq softirq steal (guest is in user) */
        int n = sscanf(line, "cpu%u %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1], &v[2], &v[3],
                       &v[4], &v[5], &v[6], &v[7]);
        if (n < 5 || cpu >= GPURUN_COND_CPUS_MAX || !c->on[cpu])
            continue;
        unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        out->busy += busy;
        out->total += busy + v[3] + v[4];
        found++;
    }
    return found;
}

int gpurun_cond_proc_stat(const char *text, struct gpurun_cond_proc *p)
{
    memset(p, 0, sizeof *p);
    /* The name is in parentheses and may hold anything, ')' too: the
     * fields start after the last ')'. */
    const char *open = strchr(text, '('), *close = strrchr(text, ')');
    if (!open || !close || close < open)
        return -1;
    p->pid = strtol(text, NULL, 10);
    size_t nl = (size_t)(close - open - 1);
    snprintf(p->comm, sizeof p->comm, "%.*s", (int)(nl < sizeof p->comm ? nl : sizeof p->comm - 1), open + 1);
    const char *f = close + 1;
    unsigned long long v[40] = {0};
    int n = 0;
    /* field 3 (state) is f's first word; v[k] is field k + 4 (proc(5)) */
    while (*f == ' ')
        f++;
    if (!*f)
        return -1;
    f++; /* the state letter */
    while (n < 40 && *f) {
        char *end;
        while (*f == ' ')
            f++;
        long long x = strtoll(f, &end, 10);
        if (end == f)
            break;
        v[n++] = x < 0 ? 0 : (unsigned long long)x;
        f = end;
    }
    if (n < 36) /* up to field 39, the processor */
        return -1;
    p->ppid = (long)v[0];
    p->utime = v[10];
    p->stime = v[11];
    p->cutime = v[12];
    p->cstime = v[13];
    p->starttime = v[18];
    p->processor = (int)v[35];
    return 0;
}

double gpurun_cond_load1(const char *loadavg)
{
    char *end;
    double v = loadavg ? strtod(loadavg, &end) : NAN;
    return loadavg && end != loadavg && isfinite(v) && v >= 0 ? v : NAN;
}

long gpurun_cond_mem_available_mib(const char *meminfo)
{
    const char *p = meminfo ? strstr(meminfo, "MemAvailable:") : NULL;
    if (!p || (p != meminfo && p[-1] != '\n'))
        return -1;
    long long kib = strtoll(p + strlen("MemAvailable:"), NULL, 10);
    return kib > 0 ? (long)(kib / 1024) : -1;
}

double gpurun_cond_cpuinfo_mhz(const char *cpuinfo, const struct gpurun_cond_cores *c)
{
    double sum = 0;
    int n = 0;
    long cpu = -1;
    for (const char *line = cpuinfo; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        double mhz;
        if (!strncmp(line, "processor", 9) && strchr(line, ':'))
            cpu = strtol(strchr(line, ':') + 1, NULL, 10);
        else if (!strncmp(line, "cpu MHz", 7) && strchr(line, ':') &&
                 sscanf(strchr(line, ':') + 1, "%lf", &mhz) == 1 && cpu >= 0 && cpu < GPURUN_COND_CPUS_MAX &&
                 c->on[cpu] && isfinite(mhz) && mhz > 0) {
            sum += mhz;
            n++;
        }
    }
    return n ? sum / n : NAN;
}

/* ---- GPUs ---------------------------------------------------------------- */

json_t *gpurun_cond_gpu_reasons(unsigned long long reasons)
{
    static const char *const names[] = {"idle",       "app_clocks", "sw_power_cap", "hw_slowdown",
                                        "sync_boost", "sw_thermal", "hw_thermal",   "hw_power_brake"};
    json_t *a = json_array();
    for (unsigned i = 0; i < 64; i++) {
        if (!(reasons & (1ULL << i)))
            continue;
        if (i < sizeof names / sizeof *names)
            json_array_append_new(a, json_string(names[i]));
        else
            json_array_append_new(a, json_sprintf("0x%llx", 1ULL << i));
    }
    return a;
}

/* ---- a host's figures --------------------------------------------------- */

static json_t *num(double v, double scale)
{
    return isfinite(v) ? json_real(round(v * scale) / scale) : json_null();
}

double gpurun_cond_share(double foreign_s, double cores_s)
{
    if (!(cores_s > 0) || !isfinite(foreign_s) || foreign_s <= 0)
        return 0;
    return foreign_s >= cores_s ? 1 : foreign_s / cores_s;
}

bool gpurun_cond_cpu_over(double foreign_s, double cores_s, double threshold)
{
    return threshold >= 0 && foreign_s >= GPURUN_COND_FLOOR_S &&
           gpurun_cond_share(foreign_s, cores_s) >= threshold;
}

json_t *gpurun_cond_host_json(const struct gpurun_cond_host *h)
{
    json_t *o = json_object();
    json_object_set_new(o, GPURUN_REC_COND_CORES, json_string(h->cores ? h->cores : ""));
    json_object_set_new(o, GPURUN_REC_COND_SECONDS, num(h->seconds, 1000));
    json_object_set_new(o, GPURUN_REC_COND_FOREIGN_CPU_S, num(h->foreign_s > 0 ? h->foreign_s : 0, 1000));
    json_object_set_new(o, GPURUN_REC_COND_OWN_CPU_S, num(h->own_s, 1000));
    json_object_set_new(o, GPURUN_REC_COND_CORES_CPU_S, num(h->cores_s, 1000));
    json_object_set_new(o, GPURUN_REC_COND_FOREIGN_CPU_SHARE, num(gpurun_cond_share(h->foreign_s, h->cores_s), 1e4));
    json_object_set_new(o, GPURUN_REC_COND_LOAD1, num(h->load1_max, 100));
    json_object_set_new(o, GPURUN_REC_COND_CPU_MHZ, num(h->mhz_mean, 10));
    json_object_set_new(o, GPURUN_REC_COND_CPU_MHZ_MIN, num(h->mhz_min, 10));
    json_object_set_new(o, GPURUN_REC_COND_MEM_AVAILABLE_MIB, h->mem_min_mib >= 0 ? json_integer(h->mem_min_mib)
                                                                                  : json_null());
    json_object_set_new(o, GPURUN_REC_COND_THROTTLE_EVENTS,
                        h->throttle_events >= 0 ? json_integer(h->throttle_events) : json_null());
    json_object_set_new(o, GPURUN_REC_COND_THROTTLED,
                        h->throttle_events >= 0 ? json_boolean(h->throttle_events > 0) : json_null());
    json_object_set_new(o, GPURUN_REC_COND_SAMPLES, json_integer(h->samples));
    json_object_set_new(o, GPURUN_REC_COND_FINAL, json_boolean(h->final));
    return o;
}

/* ---- the verdict ------------------------------------------------------- */

int gpurun_cond_threshold(const char *text, double *share, gpurun_error_t *err)
{
    *share = GPURUN_COND_SHARE_DEFAULT;
    if (!text || !*text)
        return 0;
    if (!strcmp(text, "off")) {
        *share = -1;
        return 0;
    }
    char *end;
    double v = strtod(text, &end);
    bool percent = *end == '%';
    if (end != text && percent)
        end++, v /= 100;
    if (end == text || *end || !isfinite(v) || v < 0 || v > 1)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s=%s: not a share of the run's cores' time (0.1 or 10%%) nor \"off\"",
                          GPURUN_ENV_BUSY_SHARE, text);
    *share = v;
    return 0;
}

static double jnum(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* "stress[1234] 95% of cpu 0, ..." of the host's named processes. */
static void named_text(const json_t *host, struct gpurun_strbuf *b)
{
    size_t i;
    json_t *p;
    int n = 0;
    json_array_foreach(json_object_get(host, GPURUN_REC_COND_FOREIGN), i, p) {
        if (n == GPURUN_COND_NAMED_MAX)
            break;
        const char *name = json_string_value(json_object_get(p, "name"));
        char shown[64];
        gpurun_short_text(shown, sizeof shown, name ? name : "?");
        gpurun_strbuf_printf(b, "%s%s[%lld] %.0f%% of cpu %lld", n ? ", " : " (", shown,
                             (long long)json_integer_value(json_object_get(p, "pid")),
                             100 * jnum(p, "share"), (long long)json_integer_value(json_object_get(p, "cpu")));
        n++;
    }
    if (n)
        gpurun_strbuf_puts(b, ")");
}

static void gpu_others_text(const json_t *others, struct gpurun_strbuf *b)
{
    size_t i;
    json_t *p;
    json_array_foreach(others, i, p) {
        if (i == GPURUN_COND_NAMED_MAX) {
            gpurun_strbuf_printf(b, ", ... (%zu in all)", json_array_size(others));
            break;
        }
        const char *name = json_string_value(json_object_get(p, "name"));
        char shown[64];
        gpurun_short_text(shown, sizeof shown, name ? name : "?");
        gpurun_strbuf_printf(b, "%s%s[%lld] on GPU %s", i ? ", " : " (", shown,
                             (long long)json_integer_value(json_object_get(p, "pid")),
                             json_string_value(json_object_get(p, "gpu")) ? json_string_value(json_object_get(p, "gpu"))
                                                                         : "?");
    }
    if (json_array_size(others))
        gpurun_strbuf_puts(b, ")");
}

/* The GPUs' slowdown reasons seen, "hw_thermal, sw_thermal"; "" when none. */
static void gpu_slowdown_text(const json_t *host, struct gpurun_strbuf *b)
{
    size_t i, k;
    json_t *g, *r;
    json_array_foreach(json_object_get(host, GPURUN_REC_COND_GPUS), i, g) {
        json_array_foreach(json_object_get(g, "slowdown"), k, r) {
            const char *s = json_string_value(r);
            if (s && (!b->s || !strstr(b->s, s)))
                gpurun_strbuf_printf(b, "%s%s", b->len ? ", " : "", s);
        }
    }
}

bool gpurun_cond_host_busy(const json_t *host, double threshold, char *why, size_t whylen)
{
    if (whylen)
        why[0] = '\0';
    if (threshold < 0 || !json_is_object(host))
        return false;
    struct gpurun_strbuf b = {0};
    double fs = jnum(host, GPURUN_REC_COND_FOREIGN_CPU_S), cs = jnum(host, GPURUN_REC_COND_CORES_CPU_S);
    if (gpurun_cond_cpu_over(fs, cs, threshold)) {
        gpurun_strbuf_printf(&b, "other processes took %.0f%% of its cores", 100 * gpurun_cond_share(fs, cs));
        named_text(host, &b);
    }
    json_t *others = json_object_get(host, GPURUN_REC_COND_GPU_OTHERS);
    if (json_array_size(others)) {
        gpurun_strbuf_printf(&b, "%sother processes used its GPUs", b.len ? "; " : "");
        gpu_others_text(others, &b);
    }
    if (json_is_true(json_object_get(host, GPURUN_REC_COND_THROTTLED)))
        gpurun_strbuf_printf(&b, "%sits CPUs were thermally throttled (%lld events)", b.len ? "; " : "",
                             (long long)json_integer_value(json_object_get(host, GPURUN_REC_COND_THROTTLE_EVENTS)));
    struct gpurun_strbuf g = {0};
    gpu_slowdown_text(host, &g);
    if (g.len)
        gpurun_strbuf_printf(&b, "%sits GPUs were slowed down (%s)", b.len ? "; " : "", g.s);
    free(g.s);
    bool busy = b.len > 0;
    if (busy && whylen)
        snprintf(why, whylen, "%s", b.s);
    free(b.s);
    return busy;
}

/* ---- the head's view ---------------------------------------------------- */

void gpurun_cond_head_init(struct gpurun_cond_head *h, double threshold)
{
    h->threshold = threshold;
    h->hosts = json_object();
    h->said = json_object();
}

void gpurun_cond_head_free(struct gpurun_cond_head *h)
{
    json_decref(h->hosts);
    json_decref(h->said);
    h->hosts = h->said = NULL;
}

#define HOSTS_MAX 100000 /* more hosts than any job has: a bound, not a limit */

bool gpurun_cond_head_take(struct gpurun_cond_head *h, const char *run_id, const char *payload, size_t len,
                           char **warning)
{
    *warning = NULL;
    json_t *doc = json_loadb(payload, len, 0, NULL);
    const char *host = json_string_value(json_object_get(doc, "host"));
    if (!json_is_object(doc) || !host || !*host || strlen(host) > 255 ||
        (!json_object_get(h->hosts, host) && json_object_size(h->hosts) >= HOSTS_MAX)) {
        json_decref(doc);
        return false;
    }
    char hostname[256];
    snprintf(hostname, sizeof hostname, "%s", host);
    json_object_del(doc, "host");
    char why[2048];
    bool busy = gpurun_cond_host_busy(doc, h->threshold, why, sizeof why);
    json_object_set_new(doc, GPURUN_REC_COND_BUSY, h->threshold < 0 ? json_null() : json_boolean(busy));
    json_object_set_new(doc, GPURUN_REC_COND_WHY, busy ? json_string(why) : json_null());
    json_object_set_new(h->hosts, hostname, doc);
    if (busy && !json_object_get(h->said, hostname)) {
        json_object_set_new(h->said, hostname, json_true());
        char *shown = gpurun_terminal_text(hostname);
        *warning = gpurun_xasprintf("run %s is running busy on %s: %s; figures are likely low", run_id, shown, why);
        free(shown);
    }
    return true;
}

/* The worst host's value of a number: the most (max) or the least. */
static json_t *worst(const json_t *hosts, const char *key, bool max)
{
    double best = NAN;
    const char *k;
    json_t *h;
    json_object_foreach((json_t *)hosts, k, h) {
        double v = jnum(h, key);
        if (isfinite(v) && (!isfinite(best) || (max ? v > best : v < best)))
            best = v;
    }
    return isfinite(best) ? json_real(best) : json_null();
}

/* true when a host says true, false when one says false and none true,
 * null when none says. */
static json_t *any_true(const json_t *hosts, const char *key)
{
    const char *k;
    json_t *h;
    bool known = false;
    json_object_foreach((json_t *)hosts, k, h) {
        json_t *v = json_object_get(h, key);
        if (json_is_true(v))
            return json_true();
        known = known || json_is_false(v);
    }
    return known ? json_false() : json_null();
}

/* Whether any host read its GPUs, and whether one was slowed down. */
static json_t *gpu_throttled(const json_t *hosts)
{
    const char *k;
    json_t *h, *g;
    bool read = false;
    json_object_foreach((json_t *)hosts, k, h) {
        size_t i;
        json_array_foreach(json_object_get(h, GPURUN_REC_COND_GPUS), i, g) {
            read = true;
            if (json_array_size(json_object_get(g, "slowdown")))
                return json_true();
        }
    }
    return read ? json_false() : json_null();
}

/* "HOST: why; HOST2: why" of the busy hosts, at most GPURUN_COND_HOSTS_SAID. */
static char *busy_why(const json_t *hosts, int *nbusy)
{
    struct gpurun_strbuf b = {0};
    const char *k;
    json_t *h;
    *nbusy = 0;
    json_object_foreach((json_t *)hosts, k, h) {
        if (!json_is_true(json_object_get(h, GPURUN_REC_COND_BUSY)))
            continue;
        if ((*nbusy)++ < GPURUN_COND_HOSTS_SAID)
            gpurun_strbuf_printf(&b, "%s%s: %s", b.len ? "; " : "", k,
                                 json_string_value(json_object_get(h, GPURUN_REC_COND_WHY)));
    }
    if (*nbusy > GPURUN_COND_HOSTS_SAID)
        gpurun_strbuf_printf(&b, "; and %d more hosts", *nbusy - GPURUN_COND_HOSTS_SAID);
    return b.s;
}

json_t *gpurun_cond_head_record(const struct gpurun_cond_head *h)
{
    if (!h->hosts || json_object_size(h->hosts) == 0)
        return NULL;
    int nbusy;
    char *why = busy_why(h->hosts, &nbusy);
    json_t *o = json_object();
    json_object_set_new(o, GPURUN_REC_COND_BUSY, h->threshold < 0 ? json_null() : json_boolean(nbusy > 0));
    json_object_set_new(o, GPURUN_REC_COND_WHY, why ? json_string(why) : json_null());
    free(why);
    json_object_set_new(o, GPURUN_REC_COND_FOREIGN_CPU_SHARE, worst(h->hosts, GPURUN_REC_COND_FOREIGN_CPU_SHARE, true));
    json_object_set_new(o, GPURUN_REC_COND_LOAD1, worst(h->hosts, GPURUN_REC_COND_LOAD1, true));
    json_object_set_new(o, GPURUN_REC_COND_CPU_MHZ, worst(h->hosts, GPURUN_REC_COND_CPU_MHZ, false));
    json_object_set_new(o, GPURUN_REC_COND_THROTTLED, any_true(h->hosts, GPURUN_REC_COND_THROTTLED));
    json_object_set_new(o, GPURUN_REC_COND_GPU_THROTTLED, gpu_throttled(h->hosts));
    size_t others = 0;
    const char *k;
    json_t *v;
    json_object_foreach(h->hosts, k, v) others += json_array_size(json_object_get(v, GPURUN_REC_COND_GPU_OTHERS));
    json_object_set_new(o, GPURUN_REC_COND_GPU_OTHERS, json_integer((json_int_t)others));
    json_object_set_new(o, GPURUN_REC_COND_BUSY_SHARE, h->threshold < 0 ? json_null() : json_real(h->threshold));
    json_object_set_new(o, GPURUN_REC_COND_HOSTS, json_deep_copy(h->hosts));
    return o;
}

char *gpurun_cond_head_end_text(const struct gpurun_cond_head *h, const char *run_id)
{
    struct gpurun_strbuf b = {0};
    const char *k;
    json_t *v;
    int n = 0;
    json_object_foreach(h->hosts, k, v) {
        if (!json_is_true(json_object_get(v, GPURUN_REC_COND_BUSY)))
            continue;
        if (n++ < GPURUN_COND_HOSTS_SAID) {
            char *shown = gpurun_terminal_text(k);
            gpurun_strbuf_printf(&b, "%srun %s ran busy on %s: %s; figures are likely low", b.len ? "\n" : "", run_id,
                                 shown, json_string_value(json_object_get(v, GPURUN_REC_COND_WHY)));
            free(shown);
        }
    }
    if (n > GPURUN_COND_HOSTS_SAID)
        gpurun_strbuf_printf(&b, "\nrun %s ran busy on %d more hosts (the record's conditions names them)", run_id,
                             n - GPURUN_COND_HOSTS_SAID);
    return b.s;
}
