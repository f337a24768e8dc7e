/* SPDX-License-Identifier: BSD-3-Clause */
/* A host's conditions, measured by its first rank step (rank_conditions.h):
 * every file read is bounded, every loop too, and nothing here stops or
 * slows the program: a file that cannot be read makes a figure unknown. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conditions.h"
#include "rank_energy.h"
#include "record.h"
#include "util.h"
#include "rank_conditions.h"

#define TREE_MAX 16384     /* the run's processes on a host */
#define PROC_SCAN_MAX 65536 /* /proc entries read in a scan */
#define SCAN_KEEP_MAX 8192 /* processes on the run's cores kept for the next scan */
#define GPU_OTHERS_MAX 32
#define GPU_WAIT_S 3.0
#define FILE_MAX ((size_t)4 << 20)

/* A small file of /proc or /sys, NUL-terminated, at most `max` bytes;
 * NULL when it cannot be read. */
static char *read_small(const char *path, size_t max)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = gpurun_xmalloc(cap + 1);
    for (;;) {
        if (len == cap) {
            if (cap >= max)
                break;
            cap = cap * 2 > max ? max : cap * 2;
            buf = gpurun_xrealloc(buf, cap + 1);
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    if (len == 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static double boot_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int read_proc_stat(long pid, struct gpurun_cond_proc *pr)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    char *text = read_small(path, 8192);
    int rc = text ? gpurun_cond_proc_stat(text, pr) : -1;
    free(text);
    return rc;
}

/* ---- the run's own processes ------------------------------------------- */

struct pidset {
    long *v;
    size_t n, cap;
};

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

static bool pidset_has(const struct pidset *s, long pid)
{
    return s->n && bsearch(&pid, s->v, s->n, sizeof *s->v, cmp_long);
}

/* The children of every thread of `pid` onto the queue. */
static void add_children(long pid, struct pidset *q)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%ld/task", pid);
    DIR *d = opendir(path);
    struct dirent *e;
    for (int tasks = 0; d && (e = readdir(d)) && tasks < 4096; tasks++) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%ld/task/%.20s/children", pid, e->d_name);
        char *text = read_small(path, 1 << 20);
        for (char *p = text, *end; p && *p && q->n < TREE_MAX; p = end) {
            long c = strtol(p, &end, 10);
            if (end == p)
                break;
            if (c > 0)
                q->v[q->n++] = c;
        }
        free(text);
    }
    if (d)
        closedir(d);
}

/* The run's processes on this host (sorted into *set) and their CPU time
 * in clock ticks: the tree under `root`, each with its reaped children's
 * time (a rank that ended is in its parent's), and `head` by itself. */
static unsigned long long own_ticks(pid_t root, pid_t head, struct pidset *set)
{
    set->n = 0;
    if (!set->v)
        set->v = gpurun_xcalloc(TREE_MAX, sizeof *set->v);
    set->cap = TREE_MAX;
    unsigned long long sum = 0;
    set->v[set->n++] = root;
    for (size_t i = 0; i < set->n; i++) {
        struct gpurun_cond_proc pr;
        if (read_proc_stat(set->v[i], &pr) == 0)
            sum += pr.utime + pr.stime + pr.cutime + pr.cstime;
        add_children(set->v[i], set);
    }
    qsort(set->v, set->n, sizeof *set->v, cmp_long);
    struct gpurun_cond_proc hp;
    if (head > 0 && !pidset_has(set, head) && read_proc_stat(head, &hp) == 0)
        sum += hp.utime + hp.stime; /* its children outside the tree are not the run's */
    return sum;
}

/* gpurun's pid when it is an ancestor of `root` within a few steps (on
 * another host the same number is someone else's process); else 0. */
static pid_t head_ancestor(pid_t root)
{
    const char *v = getenv(GPURUN_ENV_HEAD_PID);
    long head = v ? strtol(v, NULL, 10) : 0;
    long pid = root;
    for (int up = 0; head > 1 && pid > 1 && up < 8; up++) {
        if (pid == head)
            return (pid_t)head;
        struct gpurun_cond_proc pr;
        if (read_proc_stat(pid, &pr) < 0)
            break;
        pid = pr.ppid;
    }
    return 0;
}

/* ---- the cores' figures -------------------------------------------------- */

static long throttle_count(const struct gpurun_cond_cores *c)
{
    long sum = -1;
    for (int i = 0; i < GPURUN_COND_CPUS_MAX; i++) {
        if (!c->on[i])
            continue;
        static const char *const files[] = {"core_throttle_count", "package_throttle_count"};
        for (int f = 0; f < 2; f++) {
            char path[128];
            snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/thermal_throttle/%s", i, files[f]);
            char *t = read_small(path, 64);
            if (t) {
                sum = (sum < 0 ? 0 : sum) + strtol(t, NULL, 10);
                free(t);
            }
        }
    }
    return sum;
}

/* The cores' mean clock now: cpufreq's, else /proc/cpuinfo's. */
static double cores_mhz(const struct gpurun_cond_cores *c)
{
    double sum = 0;
    int n = 0;
    for (int i = 0; i < GPURUN_COND_CPUS_MAX; i++) {
        if (!c->on[i])
            continue;
        char path[128];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq", i);
        char *t = read_small(path, 64);
        long khz = t ? strtol(t, NULL, 10) : 0;
        free(t);
        if (khz > 0)
            sum += (double)khz / 1000, n++;
    }
    if (n)
        return sum / n;
    char *info = read_small("/proc/cpuinfo", FILE_MAX);
    double mhz = info ? gpurun_cond_cpuinfo_mhz(info, c) : NAN;
    free(info);
    return mhz;
}

static void sample_cores(struct gpurun_conditions_probe *p)
{
    char *t = read_small("/proc/loadavg", 256);
    double load = t ? gpurun_cond_load1(t) : NAN;
    free(t);
    if (isfinite(load) && !(p->fig.load1_max >= load))
        p->fig.load1_max = load;
    t = read_small("/proc/meminfo", 1 << 16);
    long mem = t ? gpurun_cond_mem_available_mib(t) : -1;
    free(t);
    if (mem >= 0 && (p->fig.mem_min_mib < 0 || mem < p->fig.mem_min_mib))
        p->fig.mem_min_mib = mem;
    double mhz = cores_mhz(p->cores);
    if (isfinite(mhz)) {
        p->mhz_sum += mhz;
        p->mhz_n++;
        p->fig.mhz_mean = p->mhz_sum / p->mhz_n;
        if (!(p->fig.mhz_min <= mhz))
            p->fig.mhz_min = mhz;
    }
    long thr = throttle_count(p->cores);
    p->fig.throttle_events = thr >= 0 && p->throttle0 >= 0 ? (thr > p->throttle0 ? thr - p->throttle0 : 0) : -1;
}

/* ---- naming the others: one /proc scan --------------------------------- */

struct seen {
    long pid;
    unsigned long long start, ticks;
};
struct gpurun_conditions_scan {
    struct seen *v; /* sorted by pid */
    size_t n;
    double at; /* boot time of the scan */
};

static int cmp_seen(const void *a, const void *b)
{
    long x = ((const struct seen *)a)->pid, y = ((const struct seen *)b)->pid;
    return x < y ? -1 : x > y;
}

/* A user's name from /etc/passwd (no NSS: the rank step may be static),
 * else the uid. */
static void user_name(uid_t uid, const char *passwd, char *out, size_t len)
{
    snprintf(out, len, "%ld", (long)uid);
    for (const char *l = passwd; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *nl = strchr(l, '\n');
        if (!c2 || (nl && c2 > nl) || strtol(c2 + 1, NULL, 10) != (long)uid || c2[1] < '0' || c2[1] > '9')
            continue;
        snprintf(out, len, "%.*s", (int)(c1 - l < 64 ? c1 - l : 64), l);
        return;
    }
}

/* Keep the `k` processes with the most CPU in `top` (sorted, most first). */
struct named {
    long pid;
    char comm[64];
    uid_t uid;
    int cpu;
    double cpu_s;
};
static void top_add(struct named *top, int *k, const struct named *x)
{
    bool full = *k == GPURUN_COND_KEPT_MAX;
    int i = full ? GPURUN_COND_KEPT_MAX - 1 : (*k)++;
    if (full && top[i].cpu_s >= x->cpu_s)
        return;
    top[i] = *x;
    for (; i > 0 && top[i - 1].cpu_s < top[i].cpu_s; i--) {
        struct named t = top[i - 1];
        top[i - 1] = top[i];
        top[i] = t;
    }
}

/* The CPU seconds process `pr` took in the window: since the last scan
 * when that one saw it, else since the run's start (its lifetime's mean
 * rate when it is older than the run). */
static double window_cpu(const struct gpurun_conditions_probe *p, const struct gpurun_cond_proc *pr, double now)
{
    unsigned long long ticks = pr->utime + pr->stime;
    struct seen key = {.pid = pr->pid};
    const struct seen *old = p->scan ? bsearch(&key, p->scan->v, p->scan->n, sizeof key, cmp_seen) : NULL;
    if (old && old->start == pr->starttime)
        return ticks > old->ticks ? (double)(ticks - old->ticks) / (double)p->tck : 0;
    double born = (double)pr->starttime / (double)p->tck, since = p->scan ? p->scan->at : p->t0;
    double age = now - born;
    if (born >= since || age <= 0)
        return (double)ticks / (double)p->tck;
    return (double)ticks / (double)p->tck * (now - since) / age;
}

/* Read /proc once: the processes not the run's that last ran on its cores,
 * the most CPU first, into p->foreign; what was seen kept for the next. */
static void scan_foreign(struct gpurun_conditions_probe *p, const struct pidset *own, double now)
{
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct gpurun_conditions_scan *next = gpurun_xcalloc(1, sizeof *next);
    next->v = gpurun_xcalloc(SCAN_KEEP_MAX, sizeof *next->v);
    next->at = now;
    struct named top[GPURUN_COND_KEPT_MAX];
    int k = 0;
    struct dirent *e;
    for (int n = 0; (e = readdir(d)) && n < PROC_SCAN_MAX; n++) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        struct gpurun_cond_proc pr;
        struct stat st;
        if (*end || pid <= 0 || pidset_has(own, pid) || read_proc_stat(pid, &pr) < 0 || pr.processor < 0 ||
            pr.processor >= GPURUN_COND_CPUS_MAX || !p->cores->on[pr.processor] ||
            fstatat(dirfd(d), e->d_name, &st, 0) < 0)
            continue;
        if (next->n < SCAN_KEEP_MAX)
            next->v[next->n++] = (struct seen){pid, pr.starttime, pr.utime + pr.stime};
        struct named x = {.pid = pid, .uid = st.st_uid, .cpu = pr.processor, .cpu_s = window_cpu(p, &pr, now)};
        gpurun_short_text(x.comm, sizeof x.comm, pr.comm); /* anyone's name: printable ASCII */
        if (x.cpu_s > 0)
            top_add(top, &k, &x);
    }
    closedir(d);
    qsort(next->v, next->n, sizeof *next->v, cmp_seen);
    double window = now - (p->scan ? p->scan->at : p->t0);
    if (p->scan)
        free(p->scan->v);
    free(p->scan);
    p->scan = next;
    char *passwd = k ? read_small("/etc/passwd", FILE_MAX) : NULL;
    json_decref(p->foreign);
    p->foreign = json_array();
    for (int i = 0; i < k; i++) {
        char user[72];
        user_name(top[i].uid, passwd, user, sizeof user);
        double share = window > 0 ? top[i].cpu_s / window : 0;
        json_array_append_new(p->foreign, json_pack("{s:s, s:I, s:s, s:i, s:f, s:f}", "name", top[i].comm, "pid",
                                                    (json_int_t)top[i].pid, "user", user, "cpu", top[i].cpu, "share",
                                                    round((share > 1 ? 1 : share) * 1000) / 1000, "cpu_s",
                                                    round(top[i].cpu_s * 1000) / 1000));
    }
    free(passwd);
}

/* ---- GPUs, through the host's GPU helper ------------------------------- */

/* One line from the helper: "c\n" asks, a JSON line answers.  A helper
 * gone is no signal to us (SIGPIPE held back), only no answer. */
static json_t *ask_gpus(struct gpurun_energy_watch *gw)
{
    if (!gw || gw->pid < 0 || gw->in < 0 || gw->out < 0)
        return NULL;
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigprocmask(SIG_BLOCK, &pipe_set, &old);
    ssize_t w = write(gw->in, "c\n", 2);
    if (w < 0 && errno == EPIPE) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe_set, NULL, &zero);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (w != 2)
        return NULL;
    char buf[1 << 16];
    size_t len = 0;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (len < sizeof buf - 1 && !memchr(buf, '\n', len)) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        double left = GPU_WAIT_S - ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9);
        struct pollfd pf = {.fd = gw->out, .events = POLLIN};
        if (left <= 0 || poll(&pf, 1, (int)(left * 1000) + 1) <= 0)
            break;
        /* a byte at a time up to the newline: what follows is the helper's final answer */
        ssize_t n = read(gw->out, buf + len, 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    return memchr(buf, '\n', len) ? json_loadb(buf, len, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
}

/* A pid on a GPU that is not the run's: {pid, name, user, gpu}; NULL when
 * it is the run's, or not a process this host's /proc shows (another
 * namespace's number: not counted, it could be the run's own). */
static json_t *gpu_other(long pid, const struct pidset *own, const char *pci)
{
    struct gpurun_cond_proc pr;
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%ld", pid);
    if (pid <= 0 || pidset_has(own, pid) || read_proc_stat(pid, &pr) < 0 || stat(path, &st) < 0)
        return NULL;
    char name[64], user[72];
    gpurun_short_text(name, sizeof name, pr.comm);
    char *passwd = read_small("/etc/passwd", FILE_MAX);
    user_name(st.st_uid, passwd, user, sizeof user);
    free(passwd);
    return json_pack("{s:I, s:s, s:s, s:s}", "pid", (json_int_t)pid, "name", name, "user", user, "gpu", pci);
}

/* Fold one GPU's answer into p->gpus (by PCI address) and p->gpu_others. */
static void take_gpu(struct gpurun_conditions_probe *p, const json_t *g, const struct pidset *own)
{
    const char *pci = json_string_value(json_object_get(g, "pci"));
    if (!pci || strlen(pci) > 19)
        return;
    json_t *acc = json_object_get(p->gpus, pci);
    if (!acc) {
        acc = json_pack("{s:s, s:n, s:n, s:I, s:[], s:[]}", "pci", pci, "sm_clock_mhz_min", "sm_clock_max_mhz",
                        "reasons_bits", (json_int_t)0, "reasons", "slowdown");
        json_object_set_new(p->gpus, pci, acc);
    }
    json_t *clk = json_object_get(g, "sm_clock_mhz"), *min = json_object_get(acc, "sm_clock_mhz_min");
    if (json_is_integer(clk) && json_integer_value(clk) >= 0 &&
        (!json_is_integer(min) || json_integer_value(clk) < json_integer_value(min)))
        json_object_set(acc, "sm_clock_mhz_min", clk);
    if (json_is_integer(json_object_get(g, "sm_clock_max_mhz")))
        json_object_set(acc, "sm_clock_max_mhz", json_object_get(g, "sm_clock_max_mhz"));
    json_t *th = json_object_get(g, "throttle");
    if (json_is_integer(th)) {
        unsigned long long bits = (unsigned long long)json_integer_value(json_object_get(acc, "reasons_bits")) |
                                  (unsigned long long)json_integer_value(th);
        json_object_set_new(acc, "reasons_bits", json_integer((json_int_t)bits));
        json_object_set_new(acc, "reasons", gpurun_cond_gpu_reasons(bits));
        json_object_set_new(acc, "slowdown", gpurun_cond_gpu_reasons(bits & GPURUN_COND_GPU_SLOWDOWN));
    }
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(g, "pids"), i, v) {
        long pid = (long)json_integer_value(v);
        char key[32];
        snprintf(key, sizeof key, "%ld", pid);
        if (json_object_size(p->gpu_others) >= GPU_OTHERS_MAX || json_object_get(p->gpu_others, key))
            continue;
        json_t *o = gpu_other(pid, own, pci);
        if (o)
            json_object_set_new(p->gpu_others, key, o);
    }
}

static void sample_gpus(struct gpurun_conditions_probe *p, struct gpurun_energy_watch *gw, const struct pidset *own)
{
    json_t *doc = ask_gpus(gw);
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(doc, "gpus"), i, g) take_gpu(p, g, own);
    json_decref(doc);
}

/* p->gpus as the record has them: a list, without the bits. */
static json_t *gpus_json(const json_t *gpus)
{
    json_t *a = json_array();
    const char *k;
    json_t *g;
    json_object_foreach((json_t *)gpus, k, g) {
        json_t *c = json_copy(g);
        json_object_del(c, "reasons_bits");
        json_array_append_new(a, c);
    }
    return a;
}

static json_t *values(const json_t *obj)
{
    json_t *a = json_array();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v) json_array_append(a, v);
    return a;
}

/* ---- the samples ---------------------------------------------------------- */

/* The run's cores on this host: every local rank's planned cpus; the
 * step's own CPUs when the plan binds none. */
static void find_cores(struct gpurun_cond_cores *c, gpurun_plan_entry_fn plan_entry, int dfd, const char *run_dir,
                       const char *host, mode_t fmode)
{
    for (int local = 0; local < 4096; local++) {
        gpurun_error_t e = {0};
        json_t *entry = plan_entry(dfd, run_dir, host, local, fmode, &e);
        if (!entry)
            break;
        gpurun_cond_cores_add(c, json_string_value(json_object_get(entry, "cpus")));
        json_decref(entry);
    }
    if (c->n)
        return;
    cpu_set_t *set = CPU_ALLOC(GPURUN_COND_CPUS_MAX);
    size_t size = CPU_ALLOC_SIZE(GPURUN_COND_CPUS_MAX);
    if (set && sched_getaffinity(0, size, set) == 0)
        for (int i = 0; i < GPURUN_COND_CPUS_MAX; i++)
            if (CPU_ISSET_S((size_t)i, size, set))
                c->on[i] = 1, c->n++;
    if (set)
        CPU_FREE(set);
}

static bool read_ticks(const struct gpurun_cond_cores *c, struct gpurun_cond_ticks *t)
{
    char *text = read_small("/proc/stat", FILE_MAX);
    int found = text ? gpurun_cond_stat_ticks(text, c, t) : 0;
    free(text);
    return found > 0;
}

static double env_seconds(const char *name, double dflt)
{
    const char *v = getenv(name);
    char *end;
    double s = v && *v ? strtod(v, &end) : 0;
    return v && *v && !*end && isfinite(s) && s >= 0.2 && s <= 86400 ? s : dflt;
}

void gpurun_conditions_begin(struct gpurun_conditions_probe *p, gpurun_plan_entry_fn plan_entry, int dfd,
                             const char *run_dir, const char *host, mode_t fmode)
{
    memset(p, 0, sizeof *p);
    p->cores = gpurun_xcalloc(1, sizeof *p->cores);
    find_cores(p->cores, plan_entry, dfd, run_dir, host, fmode);
    gpurun_error_t e;
    if (gpurun_cond_threshold(getenv(GPURUN_ENV_BUSY_SHARE), &p->threshold, &e) < 0)
        p->threshold = GPURUN_COND_SHARE_DEFAULT; /* gpurun itself refused it and said so */
    p->tck = sysconf(_SC_CLK_TCK);
    p->root = getppid();
    p->head = head_ancestor(p->root);
    if (p->tck <= 0 || !read_ticks(p->cores, &p->ticks0)) {
        free(p->cores);
        p->cores = NULL;
        return; /* no /proc/stat: nothing to measure */
    }
    struct pidset own = {0};
    p->own0 = own_ticks(p->root, p->head, &own);
    free(own.v);
    p->throttle0 = throttle_count(p->cores);
    p->cores_text = gpurun_cond_cores_text(p->cores);
    p->fig = (struct gpurun_cond_host){.cores = p->cores_text, .load1_max = NAN, .mhz_mean = NAN, .mhz_min = NAN,
                                       .mem_min_mib = -1, .throttle_events = -1};
    p->gpus = json_object();
    p->gpu_others = json_object();
    p->period = env_seconds(GPURUN_ENV_CONDITIONS_INTERVAL, GPURUN_CONDITIONS_DEFAULT_S);
    p->t0 = p->next = boot_now(); /* the first sample is due at once */
    p->on = true;
}

int gpurun_conditions_wait_ms(const struct gpurun_conditions_probe *p)
{
    if (!p->on)
        return -1;
    double left = p->next - boot_now();
    return left <= 0 ? 0 : left > 86400 ? 86400000 : (int)(left * 1000) + 1;
}

/* The CPU figures since the start: the cores' busy ticks less the run's. */
static void sample_cpu(struct gpurun_conditions_probe *p, struct pidset *own, double now)
{
    struct gpurun_cond_ticks t;
    unsigned long long mine = own_ticks(p->root, p->head, own);
    if (!read_ticks(p->cores, &t))
        return;
    double tck = (double)p->tck;
    double busy = t.busy > p->ticks0.busy ? (double)(t.busy - p->ticks0.busy) : 0;
    double total = t.total > p->ticks0.total ? (double)(t.total - p->ticks0.total) : 0;
    double self = mine > p->own0 ? (double)(mine - p->own0) : 0;
    p->fig.seconds = now - p->t0;
    p->fig.own_s = self / tck;
    p->fig.cores_s = total / tck;
    p->fig.foreign_s = busy > self ? (busy - self) / tck : 0;
}

json_t *gpurun_conditions_sample(struct gpurun_conditions_probe *p, const char *host, struct gpurun_energy_watch *gw,
                                 bool final)
{
    double now = boot_now();
    if (!p->on || (!final && now < p->next))
        return NULL;
    p->next = now + p->period;
    struct pidset own = {0};
    sample_cpu(p, &own, now);
    sample_cores(p);
    p->fig.samples++;
    p->fig.final = final;
    /* Named over a window of half an interval at least: the end's sample
     * often comes just after the last, and a few ticks name no one right. */
    if (gpurun_cond_cpu_over(p->fig.foreign_s, p->fig.cores_s, p->threshold) &&
        (!p->scan || now - p->scan->at >= p->period / 2))
        scan_foreign(p, &own, now);
    sample_gpus(p, gw, &own);
    free(own.v);
    json_t *doc = gpurun_cond_host_json(&p->fig);
    json_object_set_new(doc, "host", json_string(host));
    json_object_set_new(doc, GPURUN_REC_COND_GPUS, gpus_json(p->gpus));
    json_object_set_new(doc, GPURUN_REC_COND_GPU_OTHERS, values(p->gpu_others));
    json_object_set_new(doc, GPURUN_REC_COND_FOREIGN, p->foreign ? json_incref(p->foreign) : json_array());
    if (final)
        p->on = false;
    return doc;
}

void gpurun_conditions_free(struct gpurun_conditions_probe *p)
{
    free(p->cores);
    free(p->cores_text);
    json_decref(p->gpus);
    json_decref(p->gpu_others);
    json_decref(p->foreign);
    if (p->scan)
        free(p->scan->v);
    free(p->scan);
    memset(p, 0, sizeof *p);
}
