/* SPDX-License-Identifier: BSD-3-Clause */
/* The built SPANK plugin (spank_gpurun.so) driven in-process as slurmstepd
 * drives it, with hostile job environments: this program exports the SPANK
 * API the plugin calls (spank_getenv, spank_setenv, spank_get_item,
 * spank_remote, spank_context, spank_strerror, slurm_error, slurm_info;
 * linked -rdynamic),
 * dlopens the plugin, and runs each case in a child of its own (init, the
 * --gpurun option, init_post_opt, user_init, task_init for some tasks,
 * exit) under an alarm() and, outside ASan, an RLIMIT_AS bound.  A case
 * passes when the child ends normally, its resident memory grew by at most
 * 64 MiB, every log line is one line of at most 4 KiB, and the outcome is
 * the one wanted (bound; or refused with a message and no GPU variable set).
 * It runs for every plugin named in SPANK_GPURUN (the normal build) and
 * SPANK_GPURUN_NDEBUG (the same sources built with -DNDEBUG, as
 * distributions build them: there hwloc's assertions are gone).
 * TEST_SPANK_VERBOSE=1 shows every child's report, not only a failed one's. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hwloc.h>
#include <slurm/spank.h>

#include "proc_status.h"
#include "tap.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

#define CASE_SECONDS 60           /* a hang guard, never a measure */
#define RSS_GROWTH_KB (64 * 1024) /* what a case may add to the child's resident memory */
#define LOG_MAX 4096              /* a log line longer than this is a finding */

/* --- the job a case describes -------------------------------------------- */

#define TASK_FAIL INT_MIN /* spank_get_item(S_TASK_ID) fails */

enum expect {
    BOUND,        /* planned, every task bound, no error */
    BOUND_NO_GPU, /* the same, and no task given a GPU index */
    REFUSED,      /* an error naming `msg`, no variable set, tasks run unbound */
    TASK_REFUSED, /* planned, but the task ids are refused */
    NOTHING,      /* the plugin stays out (off, srun's side), no error */
    OPT_REFUSED,  /* --gpurun's value refused */
    ANY,          /* only the bounds: no crash, bounded memory and time */
};

struct scase {
    const char *name;
    const char *args[8]; /* plugstack.conf arguments after the path */
    const char *opt;     /* --gpurun's value */
    bool opt_given;      /* the option was used (opt may be NULL: --gpurun alone) */
    const char *env[4];  /* the job's environment, NAME=VALUE */
    int64_t ntasks;      /* S_JOB_LOCAL_TASK_COUNT; -1: the item fails */
    int tasks[4];        /* S_TASK_ID of each task_init */
    int ntask_ids;
    bool local; /* srun's side (S_CTX_LOCAL) */
    enum expect expect;
    const char *msg; /* in the error, for REFUSED and OPT_REFUSED */
};

static const struct scase *cur;
static int cur_task;
static int report_fd = -1;
static char fixture[4200], workdir[4096];

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
    char line[LOG_MAX * 4 + 64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof line - 1 ? (size_t)n : sizeof line - 2;
    line[len++] = '\n';
    for (size_t off = 0; off < len;) {
        ssize_t w = write(report_fd, line + off, len - off);
        if (w <= 0)
            _exit(3);
        off += (size_t)w;
    }
}

/* A log line: its length, and its control characters written as \xNN
 * (a raw newline in slurmd's log forges a line of its own). */
static void log_line(const char *kind, const char *fmt, va_list ap)
{
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        _exit(4);
    size_t len = strlen(msg);
    char shown[LOG_MAX * 4 + 1];
    size_t n = 0;
    bool control = false;
    for (size_t i = 0; i < len && n + 5 < sizeof shown; i++) {
        unsigned char c = (unsigned char)msg[i];
        if (c < 0x20 || c == 0x7f) {
            control = true;
            n += (size_t)snprintf(shown + n, sizeof shown - n, "\\x%02x", c);
        } else
            shown[n++] = (char)c;
    }
    shown[n] = '\0';
    report("%s %zu %d %s", kind, len, control, shown);
    free(msg);
}

/* --- the SPANK API, as Slurm 22.05's src/common/spank.c answers ---------- */

void slurm_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line("error", fmt, ap);
    va_end(ap);
}

void slurm_info(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line("info", fmt, ap);
    va_end(ap);
}

int spank_remote(spank_t sp)
{
    (void)sp;
    return !cur->local;
}

spank_context_t spank_context(void)
{
    return cur->local ? S_CTX_LOCAL : S_CTX_REMOTE;
}

spank_err_t spank_getenv(spank_t sp, const char *var, char *buf, int len)
{
    (void)sp;
    if (cur->local)
        return ESPANK_NOT_REMOTE;
    if (!var || !buf || len < 0)
        return ESPANK_BAD_ARG;
    size_t vl = strlen(var);
    for (size_t i = 0; i < 4 && cur->env[i]; i++) {
        if (strncmp(cur->env[i], var, vl) || cur->env[i][vl] != '=')
            continue;
        const char *val = cur->env[i] + vl + 1;
        size_t n = strlen(val);
        if (len > 0) { /* strlcpy */
            size_t c = n < (size_t)len - 1 ? n : (size_t)len - 1;
            memcpy(buf, val, c);
            buf[c] = '\0';
        }
        return n >= (size_t)len ? ESPANK_NOSPACE : ESPANK_SUCCESS;
    }
    return ESPANK_ENV_NOEXIST;
}

const char *spank_strerror(spank_err_t e)
{
    return e == ESPANK_NOSPACE ? "Buffer too small" : e == ESPANK_ENV_NOEXIST ? "Environment variable does not exist"
                                                                               : "Generic error";
}

spank_err_t spank_setenv(spank_t sp, const char *var, const char *val, int overwrite)
{
    (void)sp;
    (void)overwrite;
    if (cur->local)
        return ESPANK_NOT_REMOTE;
    if (!var || !val)
        return ESPANK_BAD_ARG;
    report("setenv %s=%.200s", var, val);
    return ESPANK_SUCCESS;
}

spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
    (void)sp;
    va_list ap;
    va_start(ap, item);
    spank_err_t rc = ESPANK_SUCCESS;
    switch (item) {
    case S_JOB_LOCAL_TASK_COUNT:
        if (cur->ntasks < 0)
            rc = ESPANK_ERROR;
        else
            *va_arg(ap, uint32_t *) = (uint32_t)cur->ntasks;
        break;
    case S_TASK_ID:
        if (cur_task == TASK_FAIL)
            rc = ESPANK_NOT_TASK;
        else
            *va_arg(ap, int *) = cur_task;
        break;
    case S_JOB_ID:
        *va_arg(ap, uint32_t *) = 4242;
        break;
    case S_JOB_STEPID:
        *va_arg(ap, uint32_t *) = 7;
        break;
    default:
        rc = ESPANK_BAD_ARG;
    }
    va_end(ap);
    return rc;
}

/* --- one case in a child ------------------------------------------------- */

struct plugin {
    const char *label, *path;
    spank_f *init, *post_opt, *user_init, *task_init, *exit;
    struct spank_option *options;
};

static void child(const struct plugin *p, const struct scase *c, int fd)
{
    report_fd = fd;
    cur = c;
    alarm(CASE_SECONDS);
    /* VmHWM from here: the peak resident memory reset to what is resident. */
    int cr = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (cr < 0 || write(cr, "5", 1) != 1)
        report("note clear_refs: %s", strerror(errno));
    if (cr >= 0)
        close(cr);
    long rss0 = status_kb("VmRSS");
#ifndef UNDER_ASAN
    /* ASan reserves terabytes of shadow: there only VmHWM bounds a case. */
    long vm = status_kb("VmSize");
    struct rlimit rl = {(rlim_t)(vm + 1024 * 1024) * 1024, (rlim_t)(vm + 1024 * 1024) * 1024};
    if (vm > 0)
        setrlimit(RLIMIT_AS, &rl);
#endif
    spank_t sp = (spank_t)(uintptr_t)0x5ba9c;
    char *av[9];
    int ac = 0;
    for (; ac < 8 && c->args[ac]; ac++)
        av[ac] = (char *)c->args[ac];
    av[ac] = NULL;
    report("rc init %d", p->init(sp, ac, av));
    if (c->opt_given)
        report("rc opt %d", p->options[0].cb(p->options[0].val, c->opt, !c->local));
    report("rc post %d", p->post_opt(sp, ac, av));
    report("rc user %d", p->user_init(sp, ac, av));
    for (int i = 0; i < c->ntask_ids; i++) {
        cur_task = c->tasks[i];
        report("rc task %d", p->task_init(sp, ac, av));
    }
    report("rc exit %d", p->exit(sp, ac, av));
    report("rss %ld", status_kb("VmHWM") - rss0);
    report("done 1");
}

/* The child's report: lines of `kind rest`. */
struct outcome {
    char *text;
    int status;
};

static struct outcome run_case(const struct plugin *p, const struct scase *c)
{
    struct outcome o = {NULL, -1};
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return o;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        child(p, c, fds[1]);
        _exit(0);
    }
    close(fds[1]);
    size_t cap = 1 << 16, len = 0;
    o.text = malloc(cap);
    for (;;) {
        char buf[4096];
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (len + (size_t)n + 1 > cap && cap < (1 << 22))
            o.text = realloc(o.text, cap *= 4);
        size_t take = len + (size_t)n + 1 <= cap ? (size_t)n : cap - len - 1;
        memcpy(o.text + len, buf, take);
        len += take;
    }
    o.text[len] = '\0';
    close(fds[0]);
    if (pid > 0)
        waitpid(pid, &o.status, 0);
    return o;
}

/* The value of the first line `kind rest...` (after "kind "), or NULL. */
static const char *line_of(const char *text, const char *kind)
{
    size_t n = strlen(kind);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, kind, n) && l[n] == ' ')
            return l + n + 1;
    return NULL;
}

static int rc_of(const char *text, const char *what)
{
    char kind[32];
    snprintf(kind, sizeof kind, "rc %s", what);
    const char *v = line_of(text, kind);
    return v ? atoi(v) : 999;
}

static bool task_rcs_are(const char *text, int want)
{
    for (const char *l = text; (l = strstr(l, "rc task ")); l += 8)
        if (atoi(l + 8) != want)
            return false;
    return true;
}

static bool required(const struct scase *c)
{
    for (int i = 0; i < 8 && c->args[i]; i++)
        if (!strcmp(c->args[i], "required"))
            return true;
    return false;
}

/* Every error message: one line, at most LOG_MAX bytes; true when one
 * holds `msg` (NULL: any). */
static bool errors_ok(const char *text, const char *msg, bool *clean, char *why, size_t wl)
{
    bool found = false;
    *clean = true;
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, "error ", 6) && strncmp(l, "info ", 5))
            continue;
        const char *v = strchr(l, ' ') + 1;
        char *end;
        long len = strtol(v, &end, 10);
        int control = atoi(end);
        if (len > LOG_MAX || control) {
            if (*clean)
                snprintf(why, wl, "a log line of %ld bytes%s", len, control ? " with control characters" : "");
            *clean = false;
        }
        const char *nl = strchr(l, '\n');
        if (!strncmp(l, "error ", 6) && (!msg || (memmem(l, nl ? (size_t)(nl - l) : strlen(l), msg, strlen(msg)))))
            found = true;
    }
    return found;
}

static void check(const struct plugin *p, const struct scase *c)
{
    struct outcome o = run_case(p, c);
    char why[512] = "";
    const char *t = o.text ? o.text : "";
    bool clean = true, gpu_set = strstr(t, "setenv CUDA_VISIBLE_DEVICES=") || strstr(t, "setenv ROCR_VISIBLE_DEVICES="),
         any_set = strstr(t, "\nsetenv ") != NULL,
         err_found = errors_ok(t, c->msg, &clean, why, sizeof why), any_error = strstr(t, "\nerror ") != NULL;
    const char *rss = line_of(t, "rss");
    long grown = rss ? atol(rss) : -1;
    int want = required(c) ? -1 : 0;
    if (!WIFEXITED(o.status) || WEXITSTATUS(o.status) != 0)
        snprintf(why, sizeof why, "the child %s %d%s", WIFSIGNALED(o.status) ? "was killed by signal" : "exited",
                 WIFSIGNALED(o.status) ? WTERMSIG(o.status) : WEXITSTATUS(o.status),
                 WIFSIGNALED(o.status) && WTERMSIG(o.status) == SIGALRM ? " (over the alarm)" : "");
    else if (!line_of(t, "done"))
        snprintf(why, sizeof why, "the child did not finish its callbacks");
    else if (grown < 0 || grown > RSS_GROWTH_KB)
        snprintf(why, sizeof why, "its resident memory grew by %ld KiB (bound %d)", grown, RSS_GROWTH_KB);
    else if (!clean)
        ; /* why says */
    else if (rc_of(t, "init") != 0 || rc_of(t, "exit") != 0 || rc_of(t, "post") != 0)
        snprintf(why, sizeof why, "init, init_post_opt or exit did not return 0");
    else
        switch (c->expect) {
        case BOUND:
        case BOUND_NO_GPU:
            if (rc_of(t, "user") != 0 || !task_rcs_are(t, 0) || any_error || !strstr(t, "setenv GPURUN_LOCAL_RANK="))
                snprintf(why, sizeof why, "not bound: user_init %d, an error %d", rc_of(t, "user"), any_error);
            else if (c->expect == BOUND_NO_GPU) {
                const char *g = strstr(t, "setenv CUDA_VISIBLE_DEVICES=");
                if (g && g[28] >= '0' && g[28] <= '9')
                    snprintf(why, sizeof why, "a task was given a GPU: %.40s", g);
            }
            break;
        case REFUSED:
            if (!err_found)
                snprintf(why, sizeof why, "no error saying '%s'", c->msg);
            else if (any_set)
                snprintf(why, sizeof why, "variables were set (GPU ones: %d)", gpu_set);
            else if (rc_of(t, "user") != want || !task_rcs_are(t, want))
                snprintf(why, sizeof why, "user_init or task_init did not return %d", want);
            break;
        case TASK_REFUSED:
            if (rc_of(t, "user") != 0 || !err_found || any_set || !task_rcs_are(t, want))
                snprintf(why, sizeof why, "the task was not refused with '%s' (user_init %d, set %d)", c->msg,
                         rc_of(t, "user"), any_set);
            break;
        case NOTHING:
            if (any_set || any_error || rc_of(t, "user") != 0 || !task_rcs_are(t, 0))
                snprintf(why, sizeof why, "the plugin did something (set %d, error %d)", any_set, any_error);
            break;
        case OPT_REFUSED:
            if (rc_of(t, "opt") != -1 || !err_found || any_set)
                snprintf(why, sizeof why, "--gpurun's value was not refused with '%s'", c->msg);
            break;
        case ANY:
            break;
        }
    if (!ok(!why[0], "%s: %s", p->label, c->name) || getenv("TEST_SPANK_VERBOSE")) {
        diag("%s", why);
        char *show = strndup(t, 1500);
        for (char *l = strtok(show, "\n"); l; l = strtok(NULL, "\n"))
            diag("  %s", l);
        free(show);
    }
    free(o.text);
}

/* --- the cases ----------------------------------------------------------- */

static char *repeat(const char *prefix, const char *unit, size_t total)
{
    char *s = malloc(total + 1);
    size_t n = snprintf(s, total + 1, "%s", prefix), u = strlen(unit);
    while (n + u <= total) {
        memcpy(s + n, unit, u);
        n += u;
    }
    while (n < total)
        s[n++] = '0';
    s[n] = '\0';
    return s;
}

/* 0: the fixture (2 sockets, 4 GPUs, 2 NICs) restricted to the PUs this
 * process may use, as tests/cli-spank.sh gives it to slurmstepd: the plan
 * then fits this node's cpus, and its bindings can be applied.  1: this
 * node has none of its cpus (skipped); -1: failed. */
static int restricted_fixture(void)
{
    const char *top = getenv("top_srcdir"), *tmp = getenv("TMPDIR");
    char src[4096];
    snprintf(src, sizeof src, "%s/tests/fixtures/2s-4gpu-2nic.xml", top ? top : "..");
    snprintf(workdir, sizeof workdir, "%s/gpurun-test-spank.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    hwloc_topology_t t = NULL;
    hwloc_bitmap_t mine = hwloc_bitmap_alloc();
    cpu_set_t set;
    int rc = -1;
    if (!mkdtemp(workdir)) {
        diag("cannot make a folder under %s: %s", tmp && *tmp ? tmp : "/tmp", strerror(errno));
        return -1;
    }
    snprintf(fixture, sizeof fixture, "topology=%s/node.xml", workdir);
    if (hwloc_topology_init(&t) == 0 && hwloc_topology_set_xml(t, src) == 0 &&
        hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_ALL) == 0 && hwloc_topology_load(t) == 0 &&
        sched_getaffinity(0, sizeof set, &set) == 0) {
        /* the kernel's mask: hwloc's calls answer for the fixture's machine */
        for (int i = 0; i < CPU_SETSIZE; i++)
            if (CPU_ISSET(i, &set))
                hwloc_bitmap_set(mine, (unsigned)i);
        hwloc_bitmap_and(mine, mine, hwloc_topology_get_topology_cpuset(t));
        if (hwloc_bitmap_iszero(mine)) {
            printf("1..0 # SKIP this process's cpus are none of the fixture's 0-31\n");
            rc = 1;
        } else if (hwloc_topology_restrict(t, mine, 0) == 0 && hwloc_topology_export_xml(t, fixture + 9, 0) == 0)
            rc = 0;
        else
            diag("cannot restrict %s to this process's cpus: %s", src, strerror(errno));
    } else
        diag("cannot load %s with hwloc: %s", src, strerror(errno));
    if (t)
        hwloc_topology_destroy(t);
    hwloc_bitmap_free(mine);
    if (rc)
        rmdir(workdir);
    return rc;
}

#define TOPO fixture
#define ON .opt_given = true
#define T1 .ntasks = 1, .tasks = {0}, .ntask_ids = 1
#define T2 .ntasks = 2, .tasks = {0, 1}, .ntask_ids = 2

int main(void)
{
    struct plugin plugins[2] = {{.label = "plugin", .path = getenv("SPANK_GPURUN")},
                                {.label = "NDEBUG plugin", .path = getenv("SPANK_GPURUN_NDEBUG")}};
    int nplugins = 0;
    for (int i = 0; i < 2; i++) {
        struct plugin *p = &plugins[i];
        if (!p->path || !*p->path)
            continue;
        void *h = dlopen(p->path, RTLD_NOW | RTLD_LOCAL);
        if (!ok(h != NULL, "%s %s loads (its SPANK symbols are this program's)", p->label, p->path)) {
            diag("%s", dlerror());
            continue;
        }
        p->init = (spank_f *)dlsym(h, "slurm_spank_init");
        p->post_opt = (spank_f *)dlsym(h, "slurm_spank_init_post_opt");
        p->user_init = (spank_f *)dlsym(h, "slurm_spank_user_init");
        p->task_init = (spank_f *)dlsym(h, "slurm_spank_task_init");
        p->exit = (spank_f *)dlsym(h, "slurm_spank_exit");
        p->options = dlsym(h, "spank_options");
        if (!ok(p->init && p->post_opt && p->user_init && p->task_init && p->exit && p->options && p->options[0].cb,
                "%s exports the callbacks and the --gpurun option", p->label))
            continue;
        plugins[nplugins++] = *p;
    }
    if (nplugins == 0 && tap_n == 0) {
        skip_all("spank_gpurun.so not built (configure found no slurm/spank.h: Debian libslurm-dev)");
        return 0;
    }
    int fx = restricted_fixture();
    if (fx == 1)
        return 0; /* skipped */
    if (!ok(fx == 0, "the fixture restricted to this process's cpus: %s", fixture + 9))
        return done_testing();

    char *long5000 = repeat("", "0,", 5000), *fits = repeat("", "0,", 4095), *just_over = repeat("", "0,", 4096),
         *mega = repeat("", "1,", 1 << 20), *long_opt = repeat("", "x", 10000), *long_topo = repeat("topology=", "/a", 5000),
         *binds_long = repeat("", "cpu,", 5000);
    char e_long5000[5100], e_fits[4200], e_just_over[4200], e_binds[5100], *e_mega = malloc((1 << 20) + 64);
    snprintf(e_long5000, sizeof e_long5000, "SLURM_STEP_GPUS=%s", long5000);
    snprintf(e_fits, sizeof e_fits, "CUDA_VISIBLE_DEVICES=%s", fits);
    snprintf(e_just_over, sizeof e_just_over, "CUDA_VISIBLE_DEVICES=%s", just_over);
    snprintf(e_binds, sizeof e_binds, "GPURUN_SPANK_SLURM_BINDS=%s", binds_long);
    snprintf(e_mega, (1 << 20) + 64, "CUDA_VISIBLE_DEVICES=%s", mega);

    const struct scase cases[] = {
        /* what works */
        {"--gpurun, no GPU list: bound", {TOPO}, ON, .env = {NULL}, T1, .expect = BOUND},
        {"--gpurun, CUDA_VISIBLE_DEVICES=0,1: bound", {TOPO}, ON, .env = {"CUDA_VISIBLE_DEVICES=0,1"}, T1,
         .expect = BOUND},
        {"SLURM_STEP_GPUS=0-1 (a range): bound", {TOPO}, ON, .env = {"SLURM_STEP_GPUS=0-1"}, T1, .expect = BOUND},
        {"CUDA_VISIBLE_DEVICES of 4095 bytes (fits the buffer): bound", {TOPO}, ON, .env = {e_fits}, T1,
         .expect = BOUND},
        {"CUDA_VISIBLE_DEVICES='' is no list: bound", {TOPO}, ON, .env = {"CUDA_VISIBLE_DEVICES="}, T1, .expect = BOUND},
        {"no --gpurun, default off: nothing", {TOPO}, .env = {"CUDA_VISIBLE_DEVICES=0-"}, T1, .expect = NOTHING},
        {"--gpurun=off: nothing", {TOPO}, "off", ON, .env = {"CUDA_VISIBLE_DEVICES=0-"}, T1, .expect = NOTHING},
        {"srun's side (local): nothing", {TOPO}, ON, .env = {"CUDA_VISIBLE_DEVICES=0-"}, T1, .local = true,
         .expect = NOTHING},
        {"GPURUN_SPANK_SLURM_BINDS=cpu: bound, cpus left to Slurm", {TOPO}, ON,
         .env = {"GPURUN_SPANK_SLURM_BINDS=cpu"}, T1, .expect = BOUND},
        /* GPU lists a job controls */
        {"CUDA_VISIBLE_DEVICES=0- (open range)", {TOPO}, ON, .env = {"CUDA_VISIBLE_DEVICES=0-"}, T1,
         .expect = REFUSED, .msg = "open range"},
        {"CUDA_VISIBLE_DEVICES=0- (open range), 2 tasks", {TOPO}, ON, .env = {"CUDA_VISIBLE_DEVICES=0-"}, T2,
         .expect = REFUSED, .msg = "CUDA_VISIBLE_DEVICES"},
        {"CUDA_VISIBLE_DEVICES=3,0- (open range last)", {TOPO}, ON, .env = {"CUDA_VISIBLE_DEVICES=3,0-"}, T1,
         .expect = REFUSED, .msg = "open range"},
        {"SLURM_STEP_GPUS=0-", {TOPO}, ON, .env = {"SLURM_STEP_GPUS=0-"}, T1, .expect = REFUSED, .msg = "open range"},
        {"SLURM_JOB_GPUS=0-", {TOPO}, ON, .env = {"SLURM_JOB_GPUS=0-"}, T1, .expect = REFUSED, .msg = "open range"},
        {"ROCR_VISIBLE_DEVICES=0-", {TOPO}, ON, .env = {"ROCR_VISIBLE_DEVICES=0-"}, T1, .expect = REFUSED,
         .msg = "open range"},
        {"CUDA_VISIBLE_DEVICES=0-2147483646 (huge range)", {TOPO}, ON, .env = {"CUDA_VISIBLE_DEVICES=0-2147483646"}, T1,
         .expect = REFUSED, .msg = "4096"},
        {"CUDA_VISIBLE_DEVICES=0-4294967295", {TOPO}, ON, .env = {"CUDA_VISIBLE_DEVICES=0-4294967295"}, T1,
         .expect = REFUSED, .msg = "4096"},
        {"CUDA_VISIBLE_DEVICES=99999999999999999999999", {TOPO}, ON,
         .env = {"CUDA_VISIBLE_DEVICES=99999999999999999999999"}, T1, .expect = REFUSED, .msg = "4096"},
        {"CUDA_VISIBLE_DEVICES=4096", {TOPO}, ON, .env = {"CUDA_VISIBLE_DEVICES=4096"}, T1, .expect = REFUSED,
         .msg = "4096"},
        {"CUDA_VISIBLE_DEVICES=0-4095 (more than 256 GPUs)", {TOPO}, ON, .env = {"CUDA_VISIBLE_DEVICES=0-4095"}, T1,
         .expect = REFUSED, .msg = "256"},
        {"CUDA_VISIBLE_DEVICES=-1 (CUDA's 'no GPU'): bound without GPUs", {TOPO}, ON,
         .env = {"CUDA_VISIBLE_DEVICES=-1"}, T1, .expect = BOUND_NO_GPU},
        {"CUDA_VISIBLE_DEVICES=0,1 gives a GPU (the check above can fail)", {TOPO}, ON,
         .env = {"CUDA_VISIBLE_DEVICES=0,1"}, T1, .expect = BOUND},
        {"SLURM_STEP_GPUS=-1 (no such form from Slurm)", {TOPO}, ON, .env = {"SLURM_STEP_GPUS=-1"}, T1,
         .expect = REFUSED, .msg = "SLURM_STEP_GPUS"},
        {"CUDA_VISIBLE_DEVICES=-1,0", {TOPO}, ON, .env = {"CUDA_VISIBLE_DEVICES=-1,0"}, T1, .expect = REFUSED,
         .msg = "CUDA_VISIBLE_DEVICES"},
        {"CUDA_VISIBLE_DEVICES=3-1 (backwards)", {TOPO}, ON, .env = {"CUDA_VISIBLE_DEVICES=3-1"}, T1,
         .expect = REFUSED, .msg = "CUDA_VISIBLE_DEVICES"},
        {"CUDA_VISIBLE_DEVICES=1--3", {TOPO}, ON, .env = {"CUDA_VISIBLE_DEVICES=1--3"}, T1, .expect = REFUSED,
         .msg = "CUDA_VISIBLE_DEVICES"},
        {"CUDA_VISIBLE_DEVICES=, (commas only)", {TOPO}, ON, .env = {"CUDA_VISIBLE_DEVICES=,"}, T1, .expect = REFUSED,
         .msg = "CUDA_VISIBLE_DEVICES"},
        {"CUDA_VISIBLE_DEVICES=,,,", {TOPO}, ON, .env = {"CUDA_VISIBLE_DEVICES=,,,"}, T1, .expect = REFUSED,
         .msg = "CUDA_VISIBLE_DEVICES"},
        {"CUDA_VISIBLE_DEVICES=0,,1", {TOPO}, ON, .env = {"CUDA_VISIBLE_DEVICES=0,,1"}, T1, .expect = REFUSED,
         .msg = "CUDA_VISIBLE_DEVICES"},
        {"CUDA_VISIBLE_DEVICES=0,x (not digits)", {TOPO}, ON, .env = {"CUDA_VISIBLE_DEVICES=0,x"}, T1,
         .expect = REFUSED, .msg = "CUDA_VISIBLE_DEVICES"},
        {"CUDA_VISIBLE_DEVICES=' 1'", {TOPO}, ON, .env = {"CUDA_VISIBLE_DEVICES= 1"}, T1, .expect = REFUSED,
         .msg = "CUDA_VISIBLE_DEVICES"},
        {"CUDA_VISIBLE_DEVICES with a newline (log injection)", {TOPO}, ON,
         .env = {"CUDA_VISIBLE_DEVICES=0\nslurmstepd: forged line"}, T1, .expect = REFUSED,
         .msg = "CUDA_VISIBLE_DEVICES"},
        {"CUDA_VISIBLE_DEVICES=GPU-<uuid>", {TOPO}, ON,
         .env = {"CUDA_VISIBLE_DEVICES=GPU-5bb9e2b3-1a2b-3c4d-5e6f-0123456789ab"}, T1, .expect = REFUSED,
         .msg = "UUID"},
        {"CUDA_VISIBLE_DEVICES=MIG-<uuid>", {TOPO}, ON,
         .env = {"CUDA_VISIBLE_DEVICES=MIG-5bb9e2b3-1a2b-3c4d-5e6f-0123456789ab"}, T1, .expect = REFUSED,
         .msg = "UUID"},
        {"CUDA_VISIBLE_DEVICES=0,GPU-<uuid>", {TOPO}, ON, .env = {"CUDA_VISIBLE_DEVICES=0,GPU-5bb9e2b3"}, T1,
         .expect = REFUSED, .msg = "UUID"},
        {"CUDA_VISIBLE_DEVICES of 4096 bytes (one past the buffer)", {TOPO}, ON, .env = {e_just_over}, T1,
         .expect = REFUSED, .msg = "longer"},
        {"CUDA_VISIBLE_DEVICES of 1 MiB", {TOPO}, ON, .env = {e_mega}, T1, .expect = REFUSED, .msg = "longer"},
        {"SLURM_STEP_GPUS over 4096 bytes does not fall through to CUDA_VISIBLE_DEVICES", {TOPO}, ON,
         .env = {e_long5000, "CUDA_VISIBLE_DEVICES=1"}, T1, .expect = REFUSED, .msg = "SLURM_STEP_GPUS"},
        {"GPURUN_SPANK_SLURM_BINDS over 4096 bytes", {TOPO}, ON, .env = {e_binds}, T1, .expect = REFUSED,
         .msg = "GPURUN_SPANK_SLURM_BINDS"},
        {"required: CUDA_VISIBLE_DEVICES=0- fails the tasks", {TOPO, "required"}, ON,
         .env = {"CUDA_VISIBLE_DEVICES=0-"}, T2, .expect = REFUSED, .msg = "open range"},
        {"required: CUDA_VISIBLE_DEVICES=GPU-<uuid> fails the tasks", {TOPO, "required"}, ON,
         .env = {"CUDA_VISIBLE_DEVICES=GPU-5bb9e2b3"}, T1, .expect = REFUSED, .msg = "UUID"},
        {"required: a good list binds", {TOPO, "required"}, ON, .env = {"CUDA_VISIBLE_DEVICES=1"}, T1, .expect = BOUND},
        /* --gpurun's value */
        {"--gpurun=bogus", {TOPO}, "bogus", ON, T1, .expect = OPT_REFUSED, .msg = "not one of"},
        {"--gpurun of 10000 bytes", {TOPO}, long_opt, ON, T1, .expect = OPT_REFUSED, .msg = "not one of"},
        {"--gpurun with a newline", {TOPO}, "closest\nslurmstepd: forged", ON, T1, .expect = OPT_REFUSED,
         .msg = "not one of"},
        {"--gpurun=verbose: bound", {TOPO}, "verbose", ON, T1, .expect = BOUND},
        /* plugstack.conf arguments (the site's, yet never a crash) */
        {"plugstack: default=bogus, default=verbose", {TOPO, "default=bogus", "default=verbose"}, ON, T1,
         .expect = ANY},
        {"plugstack: topology= of 10000 bytes", {long_topo}, ON, T1, .expect = ANY},
        {"plugstack: an argument with a newline", {TOPO, "verb\nose"}, ON, T1, .expect = ANY},
        {"plugstack: a topology that does not load", {"topology=/nonexistent/gpurun.xml"}, ON, T1, .expect = REFUSED,
         .msg = "nonexistent"},
        {"plugstack: a topology path with a control character (fuzz-spank)", {"topology=/nonexistent/\002.xml"}, ON,
         T1, .expect = REFUSED, .msg = "nonexistent/\\x02.xml"},
        /* Slurm's task counts and ids */
        {"S_JOB_LOCAL_TASK_COUNT = 0", {TOPO}, ON, .ntasks = 0, .tasks = {0}, .ntask_ids = 1, .expect = REFUSED,
         .msg = "task"},
        {"S_JOB_LOCAL_TASK_COUNT fails", {TOPO}, ON, .ntasks = -1, .tasks = {0}, .ntask_ids = 1, .expect = REFUSED,
         .msg = "task"},
        {"S_JOB_LOCAL_TASK_COUNT = 2^31", {TOPO}, ON, .ntasks = INT64_C(2147483648), .tasks = {0}, .ntask_ids = 1,
         .expect = REFUSED, .msg = "task"},
        {"S_JOB_LOCAL_TASK_COUNT = 2^32-1", {TOPO}, ON, .ntasks = INT64_C(4294967295), .tasks = {0}, .ntask_ids = 1,
         .expect = REFUSED, .msg = "task"},
        {"S_JOB_LOCAL_TASK_COUNT = 4097", {TOPO}, ON, .ntasks = 4097, .tasks = {0}, .ntask_ids = 1, .expect = REFUSED,
         .msg = "task"},
        {"S_JOB_LOCAL_TASK_COUNT = 4096", {TOPO}, ON, .ntasks = 4096, .tasks = {0, 4095}, .ntask_ids = 2,
         .expect = ANY},
        {"S_TASK_ID = -1", {TOPO}, ON, .ntasks = 2, .tasks = {-1}, .ntask_ids = 1, .expect = TASK_REFUSED,
         .msg = "task"},
        {"S_TASK_ID = 2 of 2 tasks", {TOPO}, ON, .ntasks = 2, .tasks = {2}, .ntask_ids = 1, .expect = TASK_REFUSED,
         .msg = "task"},
        {"S_TASK_ID = INT_MAX", {TOPO}, ON, .ntasks = 2, .tasks = {INT_MAX}, .ntask_ids = 1, .expect = TASK_REFUSED,
         .msg = "task"},
        {"S_TASK_ID fails", {TOPO}, ON, .ntasks = 2, .tasks = {TASK_FAIL}, .ntask_ids = 1, .expect = TASK_REFUSED,
         .msg = "task"},
    };
    for (int i = 0; i < nplugins; i++)
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
            check(&plugins[i], &cases[k]);
    if (nplugins < 2)
        skip("SPANK_GPURUN_NDEBUG not given: the release build of the plugin was not driven");
    free(long5000);
    free(fits);
    free(just_over);
    free(mega);
    free(long_opt);
    free(long_topo);
    free(binds_long);
    free(e_mega);
    unlink(fixture + 9);
    rmdir(workdir);
    return done_testing();
}
