/* SPDX-License-Identifier: BSD-3-Clause */
/* Measured energy (energy.h): RAPL domains in powercap sysfs, counter
 * wrap, a host's and the run's `energy` object, and energy per unit of
 * work.  Nothing here fails a run: a counter that cannot be read is a note. */
#include "config.h"
#include "record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "energy.h"
#include "error.h"
#include "util.h"

#define COUNTER_TEXT_MAX 64 /* a u64 in decimal and a newline, with room */
#define NAME_TEXT_MAX 64

/* How a site lets users read RAPL (said in notes and by doctor). */
#define RAPL_ENABLE_HINT                                                                                  \
    "energy_uj is root-only since Linux 5.10 (CVE-2020-8694, the PLATYPUS power side channel); an "      \
    "administrator who accepts that risk can let a trusted group read it, e.g. a udev rule "             \
    "SUBSYSTEM==\"powercap\", ACTION==\"add\", RUN+=\"/bin/chgrp power /sys%p/energy_uj\", "             \
    "RUN+=\"/bin/chmod g+r /sys%p/energy_uj\" (or the same chgrp/chmod at boot)"

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The powercap folder: $GPURUN_TEST_SYSFS_ROOT/sys/class/powercap in tests,
 * else /sys/class/powercap; `hook` says which root was put before it ("":
 * none). */
static void powercap_dir(const char *root, char *out, size_t len, char *hook, size_t hooklen)
{
    const char *var = root ? "root" : GPURUN_ENV_TEST_SYSFS_ROOT;
    if (!root)
        root = getenv(GPURUN_ENV_TEST_SYSFS_ROOT);
    if (root && !strcmp(root, "/"))
        root = "";
    snprintf(out, len, "%s%s", root && *root ? root : "", GPURUN_POWERCAP_DIR);
    hook[0] = '\0';
    if (root && *root) {
        char text[sizeof ((struct gpurun_rapl *)0)->hook];
        snprintf(text, sizeof text, "%s=%s", var, root);
        gpurun_short_text(hook, hooklen, text); /* printable ASCII: the record's JSON takes it */
    }
}

/* Up to len-1 bytes of the file `zone`/`file` under the folder dfd, never
 * through a symlink as its last part; 0, or -1 with errno. */
static int read_small(int dfd, const char *zone, const char *file, char *buf, size_t len)
{
    char rel[160];
    snprintf(rel, sizeof rel, "%s/%s", zone, file);
    int fd = openat(dfd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got < len - 1) {
        ssize_t n = read(fd, buf + got, len - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

/* A counter file: a plain decimal u64. */
static int read_counter(int dfd, const char *zone, const char *file, uint64_t *v)
{
    char buf[COUNTER_TEXT_MAX];
    if (read_small(dfd, zone, file, buf, sizeof buf) < 0)
        return -1;
    char *end;
    errno = 0;
    if (buf[0] < '0' || buf[0] > '9') {
        errno = EINVAL;
        return -1;
    }
    unsigned long long x = strtoull(buf, &end, 10);
    if (errno || *end) {
        errno = EINVAL;
        return -1;
    }
    *v = (uint64_t)x;
    return 0;
}

static bool rapl_zone_name(const char *d)
{
    /* intel-rapl:N[:M] (Intel, and AMD through intel_rapl_msr); amd-rapl:
     * should a kernel name them so.  intel-rapl-mmio: repeats the packages
     * through MMIO and would count them twice. */
    return !strncmp(d, "intel-rapl:", 11) || !strncmp(d, "amd-rapl:", 9);
}

static int zone_cmp(const void *a, const void *b)
{
    return strcmp(((const struct gpurun_rapl_domain *)a)->zone, ((const struct gpurun_rapl_domain *)b)->zone);
}

void gpurun_rapl_read(struct gpurun_rapl *r)
{
    gpurun_rapl_read_at(NULL, r);
}

void gpurun_rapl_read_at(const char *root, struct gpurun_rapl *r)
{
    char dir[4096];
    memset(r, 0, sizeof *r);
    powercap_dir(root, dir, sizeof dir, r->hook, sizeof r->hook);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        int e = errno;
        snprintf(r->why, sizeof r->why, "%.200s: %s (no RAPL: the kernel module intel_rapl_msr is not loaded, or a "
                 "virtual machine)", dir, strerror(e));
        if (dfd >= 0)
            close(dfd);
        r->t = mono_s();
        return;
    }
    struct dirent *e;
    int seen = 0;
    while ((e = readdir(d)) && r->n < GPURUN_RAPL_MAX && seen++ < 4096) {
        if (!rapl_zone_name(e->d_name) || strlen(e->d_name) >= sizeof r->d[0].zone)
            continue;
        char name[NAME_TEXT_MAX];
        if (read_small(dfd, e->d_name, "name", name, sizeof name) < 0)
            continue;
        const char *kind = !strncmp(name, "package-", 8) ? "cpu" : !strcmp(name, "dram") ? "dram" : NULL;
        if (!kind) /* core, uncore, psys: inside a package, or the whole platform */
            continue;
        struct gpurun_rapl_domain *z = &r->d[r->n++];
        snprintf(z->zone, sizeof z->zone, "%s", e->d_name);
        snprintf(z->name, sizeof z->name, "%s", name);
        z->kind = kind;
        if (read_counter(dfd, e->d_name, "max_energy_range_uj", &z->max_uj) < 0)
            z->max_uj = 0;
    }
    closedir(d); /* closes dfd */
    qsort(r->d, (size_t)r->n, sizeof r->d[0], zone_cmp);
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    /* The counters last and together, so that start and end are close in
     * time for every domain. */
    r->t = mono_s();
    for (int i = 0; i < r->n; i++) {
        struct gpurun_rapl_domain *z = &r->d[i];
        if (dfd >= 0 && read_counter(dfd, z->zone, "energy_uj", &z->uj) == 0) {
            z->ok = true;
            continue;
        }
        int err = dfd >= 0 ? errno : EBADF;
        z->denied = err == EACCES || err == EPERM;
        if (z->denied)
            snprintf(z->why, sizeof z->why, "%.200s/%s/energy_uj: %s: %s", dir, z->zone, strerror(err), RAPL_ENABLE_HINT);
        else
            snprintf(z->why, sizeof z->why, "%.200s/%s/energy_uj: %s", dir, z->zone,
                     err == EINVAL ? "not a counter" : strerror(err));
    }
    if (dfd >= 0)
        close(dfd);
    if (r->n == 0)
        snprintf(r->why, sizeof r->why, "%.200s has no RAPL package or DRAM zone (intel_rapl_msr not loaded, or a "
                 "virtual machine)", dir);
}

uint64_t gpurun_energy_counter_delta(uint64_t start, uint64_t end, uint64_t max)
{
    if (end >= start)
        return end - start;
    if (max == 0 || start > max) /* no range known: unknown, not a huge number */
        return 0;
    /* The counter went past max back to 0 once.  The kernel's max is the
     * hardware counter's 32 bits times its energy unit, so the step from max
     * to 0 is one unit (about 61 uJ), not counted here, as RAPL readers
     * (perf, scaphandre) do not: at most one unit per wrap too little. */
    return (max - start) + end;
}

/* Three decimals: joules and watts to the milli, stable in records. */
static json_t *num(double v)
{
    return json_real(round(v * 1000.0) / 1000.0);
}

static json_t *missing(const char *kind, const char *why)
{
    return json_pack("{s:s, s:s}", "kind", kind, "why", why);
}

/* A device a test hook gave: never said to be what it stands in for. */
static void mark_test(json_t *dev, const char *hook)
{
    const char *as = json_string_value(json_object_get(dev, "source"));
    json_object_set_new(dev, "note", json_sprintf("test hook %s: measured as %s, from what the user chose, not this "
                                                  "host's own", hook, as ? as : "?"));
    json_object_set_new(dev, "source", json_string(GPURUN_ENERGY_SOURCE_TEST));
}

static void add_gpus(json_t *devices, json_t *miss, json_t *gpus_monitor, const char *gpu_why, double secs)
{
    if (!json_is_array(gpus_monitor)) {
        if (gpu_why && *gpu_why)
            json_array_append_new(miss, missing("gpu", gpu_why));
        return;
    }
    size_t i;
    json_t *g;
    json_array_foreach(gpus_monitor, i, g) {
        json_t *ej = json_object_get(g, "energy_J");
        json_t *pm = json_object_get(g, "power_mean_w"), *pp = json_object_get(g, "power_peak_w");
        const char *pci = json_string_value(json_object_get(g, "pci"));
        const char *model = json_string_value(json_object_get(g, "name"));
        json_t *idx = json_object_get(g, "index");
        char name[192];
        if (json_is_integer(idx))
            snprintf(name, sizeof name, "GPU %lld %s (%s)", (long long)json_integer_value(idx), model ? model : "",
                     pci ? pci : "?");
        else
            snprintf(name, sizeof name, "GPU %s (%s)", model ? model : "", pci ? pci : "?");
        double j;
        /* The GPU's own window: its monitor started after the program and
         * stopped before the host's last reading (older helpers: none). */
        json_t *gs = json_object_get(g, "measured_s");
        double gsecs = json_is_number(gs) && json_number_value(gs) > 0 ? json_number_value(gs) : 0;
        /* The monitor that read it (record.h: older records name none). */
        const char *mon = json_string_value(json_object_get(g, "monitor"));
        char source[48];
        if (!mon || !*mon || strlen(mon) > 32)
            mon = GPURUN_REC_GPU_MONITOR_UNNAMED;
        if (json_is_number(ej)) {
            j = json_number_value(ej);
            snprintf(source, sizeof source, "%s", mon);
        } else if (json_is_number(pm) && (gsecs > 0 || secs > 0)) {
            /* No energy counter (before Volta, before MI100): the power
             * samples' mean over the time they were taken in, said as such. */
            j = json_number_value(pm) * (gsecs > 0 ? gsecs : secs);
            snprintf(source, sizeof source, "%s-power-samples", mon);
        } else {
            const char *note = json_string_value(json_object_get(g, "energy_note"));
            char why[400];
            snprintf(why, sizeof why, "%s: %s", name, note ? note : "neither an energy counter nor power samples");
            json_array_append_new(miss, missing("gpu", why));
            continue;
        }
        json_t *dev = json_pack("{s:s, s:s, s:o, s:o, s:o, s:s}", "kind", "gpu", "name", name, "J", num(j),
                                "mean_power_W", json_is_number(pm) ? num(json_number_value(pm)) : json_null(),
                                "peak_power_W", json_is_number(pp) ? num(json_number_value(pp)) : json_null(),
                                "source", source);
        if (gsecs > 0)
            json_object_set_new(dev, "measured_s", num(gsecs));
        const char *hook = json_string_value(json_object_get(g, GPURUN_REC_TEST_HOOK));
        if (hook && *hook)
            mark_test(dev, hook);
        json_array_append_new(devices, dev);
    }
}

json_t *gpurun_energy_host_json(const char *host, const struct gpurun_rapl *start, const struct gpurun_rapl *end,
                                json_t *gpus_monitor, const char *gpu_why)
{
    json_t *devices = json_array(), *miss = json_array();
    double secs = start && end ? end->t - start->t : 0;
    if (secs < 0)
        secs = 0;
    if (start && end) {
        if (start->n == 0)
            json_array_append_new(miss, missing("cpu", start->why));
        for (int i = 0; i < start->n; i++) {
            const struct gpurun_rapl_domain *a = &start->d[i], *b = NULL;
            for (int k = 0; k < end->n && !b; k++)
                if (!strcmp(end->d[k].zone, a->zone))
                    b = &end->d[k];
            if (!a->ok || !b || !b->ok) {
                json_array_append_new(miss, missing(a->kind, !a->ok ? a->why : b ? b->why : "the zone went away"));
                continue;
            }
            double j = (double)gpurun_energy_counter_delta(a->uj, b->uj, a->max_uj ? a->max_uj : b->max_uj) / 1e6;
            char name[160];
            snprintf(name, sizeof name, "%s (%s)", a->name, a->zone);
            json_t *dev = json_pack("{s:s, s:s, s:o, s:o, s:n, s:s}", "kind", a->kind, "name", name, "J", num(j),
                                    "mean_power_W", secs > 0 ? num(j / secs) : json_null(), "peak_power_W",
                                    "source", "rapl");
            const char *hook = start->hook[0] ? start->hook : end->hook;
            if (hook[0])
                mark_test(dev, hook);
            json_array_append_new(devices, dev);
        }
    } else {
        json_array_append_new(miss, missing("cpu", "RAPL was not read on this host"));
    }
    add_gpus(devices, miss, gpus_monitor, gpu_why, secs);
    return json_pack("{s:s, s:o, s:o, s:o}", "host", host, "devices", devices, "missing", miss, "measured_s",
                     num(secs));
}

json_t *gpurun_energy_json(json_t *hosts, double price_per_kwh, double grams_co2_per_kwh,
                           const struct gpurun_energy_accounted *acc, size_t nacc)
{
    double by[3] = {0, 0, 0}; /* gpu, cpu, dram */
    double secs = 0, peak = 0;
    bool any[3] = {false, false, false}, any_peak = false;
    size_t i, k;
    json_t *h, *d;
    json_array_foreach(hosts, i, h) {
        json_t *s = json_object_get(h, "measured_s");
        if (json_is_number(s) && json_number_value(s) > secs)
            secs = json_number_value(s);
        json_array_foreach(json_object_get(h, "devices"), k, d) {
            const char *kind = json_string_value(json_object_get(d, "kind"));
            int w = kind && !strcmp(kind, "gpu") ? 0 : kind && !strcmp(kind, "cpu") ? 1 : 2;
            double j = json_number_value(json_object_get(d, "J"));
            by[w] += j;
            any[w] = true;
            /* The peak: each GPU's highest sample, each RAPL domain at its
             * mean (RAPL gives no samples); an upper bound of the draw. */
            json_t *p = json_object_get(d, "peak_power_W");
            if (!json_is_number(p))
                p = json_object_get(d, "mean_power_W");
            if (json_is_number(p)) {
                peak += json_number_value(p);
                any_peak = true;
            }
        }
    }
    double total = by[0] + by[1] + by[2];
    bool measured = any[0] || any[1] || any[2];
    double kwh = total / 3.6e6;
    json_t *o = json_object();
    json_object_set_new(o, "total_J", measured ? num(total) : json_null());
    json_object_set_new(o, "gpu_J", any[0] ? num(by[0]) : json_null());
    json_object_set_new(o, "cpu_J", any[1] ? num(by[1]) : json_null());
    json_object_set_new(o, "dram_J", any[2] ? num(by[2]) : json_null());
    json_object_set_new(o, "measured_s", num(secs));
    json_object_set_new(o, "mean_power_W", measured && secs > 0 ? num(total / secs) : json_null());
    json_object_set_new(o, "peak_power_W", any_peak ? num(peak) : json_null());
    json_object_set_new(o, "kwh", measured ? json_real(kwh) : json_null());
    json_object_set_new(o, "cost", measured && price_per_kwh >= 0 ? json_real(kwh * price_per_kwh) : json_null());
    json_object_set_new(o, "co2_g", measured && grams_co2_per_kwh >= 0 ? num(kwh * grams_co2_per_kwh) : json_null());
    for (size_t m = 0; m < nacc; m++) { /* each resource manager's own figure: "NAME_consumed_J" */
        char key[96];
        snprintf(key, sizeof key, GPURUN_REC_ENERGY_RM_CONSUMED_J, acc[m].manager);
        json_object_set_new(o, key, acc[m].joules >= 0 ? num(acc[m].joules) : json_null());
        snprintf(key, sizeof key, GPURUN_REC_ENERGY_RM_NOTE, acc[m].manager);
        if (acc[m].note[0])
            json_object_set_new(o, key, json_string(acc[m].note));
    }
    json_object_set_new(o, "hosts", hosts);
    return o;
}

/* "images" -> "image"; "ns", "class" stay. */
static void singular(char *w)
{
    size_t n = strlen(w);
    if (n > 3 && w[n - 1] == 's' && w[n - 2] != 's')
        w[n - 1] = '\0';
}

bool gpurun_energy_unit_of(const char *units, char *work, size_t worklen, double *per_s)
{
    if (!units || !*units || worklen < 2)
        return false;
    size_t n = strlen(units);
    /* GFlops, TFLOPS, Mflops: FLOP per second. */
    if (n > 5 && n < 16 && !strcasecmp(units + n - 5, "flops")) {
        snprintf(work, worklen, "%.*sFLOP", (int)(n - 5), units);
        *per_s = 1;
        return true;
    }
    const char *slash = strrchr(units, '/');
    if (!slash || slash == units || (size_t)(slash - units) >= worklen || (size_t)(slash - units) > 32)
        return false;
    const char *t = slash + 1;
    static const struct {
        const char *name;
        double s;
    } times[] = {{"s", 1},         {"sec", 1},          {"second", 1},  {"seconds", 1}, {"min", 60},
                 {"minute", 60},   {"h", 3600},         {"hr", 3600},   {"hour", 3600}, {"day", 86400},
                 {"d", 86400}};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
        if (!strcasecmp(t, times[i].name)) {
            snprintf(work, worklen, "%.*s", (int)(slash - units), units);
            singular(work);
            *per_s = times[i].s;
            return true;
        }
    return false;
}

void gpurun_energy_per_unit(json_t *foms, double mean_power_w)
{
    if (!json_is_object(foms) || !(mean_power_w > 0))
        return;
    const char *key;
    json_t *f;
    json_object_foreach(foms, key, f) {
        const char *better = json_string_value(json_object_get(f, "better"));
        json_t *v = json_object_get(f, "value");
        char work[48], units[64];
        double per_s;
        if ((better && strcmp(better, "higher")) || !json_is_number(v) || !(json_number_value(v) > 0) ||
            !gpurun_energy_unit_of(json_string_value(json_object_get(f, "units")), work, sizeof work, &per_s))
            continue;
        double rate = json_number_value(v) / per_s; /* units of work per second */
        double j = mean_power_w / rate;
        snprintf(units, sizeof units, "J/%s", work);
        /* Six significant figures: J/GFLOP is small, J/ns large. */
        char text[32];
        snprintf(text, sizeof text, "%.6g", j);
        json_object_set_new(f, GPURUN_REC_FOM_ENERGY_PER_UNIT, json_pack("{s:f, s:s}", "value", strtod(text, NULL), "units", units));
    }
}

void gpurun_energy_doctor(const char *root, char *line, size_t len, enum gpurun_rapl_state *state)
{
    struct gpurun_rapl r;
    gpurun_rapl_read_at(root, &r);
    if (r.n == 0) {
        /* Nothing an administrator can open: no counters exist here. */
        *state = GPURUN_RAPL_ABSENT;
        snprintf(line, len, "RAPL: this machine exposes no RAPL counters (a VM or a CPU without RAPL): %s; CPU and "
                 "DRAM energy are not recorded", r.why);
        return;
    }
    char names[256] = "";
    int good = 0;
    const char *denied = NULL, *other = NULL;
    for (int i = 0; i < r.n; i++) {
        if (r.d[i].ok) {
            size_t u = strlen(names);
            snprintf(names + u, sizeof names - u, "%s%s", good ? ", " : "", r.d[i].name);
            good++;
        } else if (r.d[i].denied && !denied) {
            denied = r.d[i].why;
        } else if (!r.d[i].denied && !other) {
            other = r.d[i].why;
        }
    }
    if (good == r.n) {
        *state = GPURUN_RAPL_READABLE;
        snprintf(line, len, "RAPL: %d domain(s) readable (%s): CPU and DRAM energy are recorded", good, names);
        return;
    }
    *state = denied ? GPURUN_RAPL_DENIED : GPURUN_RAPL_BROKEN;
    snprintf(line, len, "RAPL: %d of %d domain(s) readable; %s", good, r.n, denied ? denied : other);
}

bool gpurun_rapl_any_readable(const char *root, char *why, size_t len)
{
    struct gpurun_rapl r;
    gpurun_rapl_read_at(root, &r);
    for (int i = 0; i < r.n; i++)
        if (r.d[i].ok)
            return true;
    if (r.n == 0)
        snprintf(why, len, "this machine exposes no RAPL counters (a VM or a CPU without RAPL): %s", r.why);
    else
        snprintf(why, len, "none of its %d RAPL counter(s) reads: %s", r.n, r.d[0].why);
    return false;
}

/* Appends to a bounded line. */
static void add(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(char *buf, size_t len, const char *fmt, ...)
{
    size_t u = strlen(buf);
    if (u + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + u, len - u, fmt, ap);
    va_end(ap);
}

bool gpurun_energy_unmeasured(const json_t *energy, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!json_is_object(energy) || json_is_number(json_object_get(energy, "total_J")))
        return false;
    add(buf, len, "not measured here");
    /* Each reason once: the hosts of a cluster mostly say the same. */
    json_t *seen = json_object();
    size_t i, k, shown = 0, more = 0;
    json_t *h, *m;
    json_array_foreach(json_object_get(energy, "hosts"), i, h) {
        json_array_foreach(json_object_get(h, "missing"), k, m) {
            const char *kind = json_string_value(json_object_get(m, "kind"));
            const char *why = json_string_value(json_object_get(m, "why"));
            if (!why || !*why)
                continue;
            char key[1024];
            snprintf(key, sizeof key, "%s: %s", kind ? kind : "?", why);
            if (json_object_get(seen, key) || json_object_size(seen) >= 4096)
                continue;
            json_object_set_new(seen, key, json_true());
            if (shown < GPURUN_ENERGY_REASONS_SHOWN)
                add(buf, len, "%s%s", shown++ ? "; " : ": ", key);
            else
                more++;
        }
    }
    json_decref(seen);
    if (!shown) /* the index drops an outsized hosts list: the record has it */
        add(buf, len, json_object_get(energy, "hosts") ? " (no host reported its counters)"
                                                        : " (record.json says why)");
    if (more)
        add(buf, len, "; and %zu more reason%s in the record", more, more == 1 ? "" : "s");
    return true;
}

char *gpurun_energy_text(const json_t *run)
{
    const json_t *e = json_object_get(run, GPURUN_REC_ENERGY);
    json_t *total = json_object_get(e, "total_J");
    char line[1024] = "";
    if (!json_is_number(total)) {
        if (!gpurun_energy_unmeasured(e, line, sizeof line))
            return NULL;
        char *out = strdup(line);
        if (!out)
            abort();
        return out;
    }
    add(line, sizeof line, "%.4g J", json_number_value(total));
    static const char *const kinds[][2] = {{"gpu_J", "GPU"}, {"cpu_J", "CPU"}, {"dram_J", "DRAM"}};
    int parts = 0;
    for (size_t k = 0; k < 3; k++) {
        json_t *v = json_object_get(e, kinds[k][0]);
        if (json_is_number(v))
            add(line, sizeof line, "%s%s %.4g", parts++ ? ", " : " (", kinds[k][1], json_number_value(v));
    }
    if (parts)
        add(line, sizeof line, ")");
    json_t *v = json_object_get(e, "mean_power_W");
    if (json_is_number(v))
        add(line, sizeof line, ", mean %.4g W", json_number_value(v));
    add(line, sizeof line, ", %.3g kWh", json_number_value(json_object_get(e, "kwh")));
    v = json_object_get(e, "cost");
    const char *cur = json_string_value(json_object_get(run, "currency"));
    if (json_is_number(v))
        add(line, sizeof line, ", %.3g %s", json_number_value(v), cur ? cur : "");
    v = json_object_get(e, "co2_g");
    if (json_is_number(v))
        add(line, sizeof line, ", %.3g g CO2", json_number_value(v));
    const char *name;
    json_t *f;
    parts = 0;
    json_object_foreach((json_t *)json_object_get(run, "foms"), name, f) {
        json_t *u = json_object_get(f, GPURUN_REC_FOM_ENERGY_PER_UNIT);
        json_t *uv = json_object_get(u, "value");
        const char *units = json_string_value(json_object_get(u, "units"));
        if (json_is_number(uv) && units)
            add(line, sizeof line, "%s%s %.4g %s", parts++ ? ", " : "; ", name, json_number_value(uv), units);
    }
    size_t n = 0;
    json_t *h;
    size_t i;
    json_array_foreach(json_object_get(e, "hosts"), i, h)
        n += json_array_size(json_object_get(h, "missing"));
    if (n)
        add(line, sizeof line, "; %zu counter%s not read (the record says why)", n, n == 1 ? "" : "s");
    char *out = strdup(line);
    if (!out)
        abort();
    return out;
}

