/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "energy.h"
#include "rank_energy.h"
#include "rank_conditions.h"
#include "rank.h"
#include "stall_rank.h"
#include "rankenv.h"
#include "safefile.h"

/* The first of these variables that is set: launchers name ranks differently.
 * Open MPI's and Hydra's come before the resource manager's, since an
 * mpirun inside a batch job inherits the batch step's SLURM_PROCID, and
 * Hydra's proxies started by srun have one SLURM_PROCID per host. */
static int env_first_int(const char *const *names, int *out, const char **which)
{
    for (; *names; names++) {
        const char *v = getenv(*names);
        char *end;
        if (!v || !*v)
            continue;
        long n = strtol(v, &end, 10);
        if (*end || n < 0 || n > 1 << 24)
            continue;
        *out = (int)n;
        *which = *names;
        return 0;
    }
    return -1;
}

enum { RANK_VARS_MAX = 8 };
static const char *const rank_vars[] = {"GPURUN_LAUNCH_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", NULL};
static const char *const local_vars[] = {"GPURUN_LAUNCH_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                         "PMI_LOCAL_RANK", NULL};

/* The launchers' names, then the resource manager's (GPURUN_RANK_VARS:
 * item `which` of it, 0 the rank, 1 the local rank) into out, and the
 * list as a message says it ("A, B, C") into shown. */
static void rank_var_list(const char *const *launchers, int which, const char **out, char *store, size_t storelen,
                          char *shown, size_t shownlen)
{
    size_t n = 0, sl = 0;
    shown[0] = '\0';
    for (; *launchers && n < RANK_VARS_MAX - 2; launchers++) {
        out[n++] = *launchers;
        sl += (size_t)snprintf(shown + sl, sl < shownlen ? shownlen - sl : 0, "%s%s", sl ? ", " : "", *launchers);
    }
    const char *rm = getenv(GPURUN_ENV_RANK_VARS);
    store[0] = '\0';
    if (rm) {
        const char *v = rm;
        for (int i = 0; i < which && v; i++)
            v = strchr(v, ',') ? strchr(v, ',') + 1 : NULL;
        size_t len = v ? strcspn(v, ",") : 0;
        /* a variable's name: letters, digits, '_' */
        if (len && len < storelen && strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") >= len) {
            snprintf(store, storelen, "%.*s", (int)len, v);
            out[n++] = store;
            snprintf(shown + sl, sl < shownlen ? shownlen - sl : 0, ", %s", store);
        }
    }
    out[n] = NULL;
}

static char *iso_now(void)
{
    struct timespec ts;
    struct tm tm;
    char buf[64];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    return gpurun_xasprintf("%s.%03ldZ", buf, ts.tv_nsec / 1000000);
}

static json_int_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (json_int_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A set of CPU or NUMA OS indexes, as many bits as it needs: the rank step
 * reads and writes hwloc's list syntax ("0-3,8") without hwloc. */
struct idset {
    size_t words;
    unsigned long *w;
};
#define IDSET_BITS (8 * sizeof(unsigned long))
#define IDSET_MAX (1 << 20)

static void idset_add(struct idset *s, size_t i)
{
    if (i / IDSET_BITS >= s->words) {
        size_t n = i / IDSET_BITS + 1;
        s->w = gpurun_xrealloc(s->w, n * sizeof *s->w);
        memset(s->w + s->words, 0, (n - s->words) * sizeof *s->w);
        s->words = n;
    }
    s->w[i / IDSET_BITS] |= 1UL << (i % IDSET_BITS);
}

static bool idset_has(const struct idset *s, size_t i)
{
    return i / IDSET_BITS < s->words && (s->w[i / IDSET_BITS] & (1UL << (i % IDSET_BITS)));
}

static long idset_last(const struct idset *s)
{
    for (size_t i = s->words * IDSET_BITS; i-- > 0;)
        if (idset_has(s, i))
            return (long)i;
    return -1;
}

static bool idset_equal(const struct idset *a, const struct idset *b)
{
    size_t n = a->words > b->words ? a->words : b->words;
    for (size_t i = 0; i < n; i++)
        if ((i < a->words ? a->w[i] : 0) != (i < b->words ? b->w[i] : 0))
            return false;
    return true;
}

/* "0-3,8": -1 when it is not such a list. */
static int idset_parse(struct idset *s, const char *list)
{
    const char *p = list;
    while (*p) {
        char *end;
        unsigned long a = strtoul(p, &end, 10), b = a;
        if (end == p || a >= IDSET_MAX)
            return -1;
        p = end;
        if (*p == '-') {
            b = strtoul(p + 1, &end, 10);
            if (end == p + 1 || b < a || b >= IDSET_MAX)
                return -1;
            p = end;
        }
        for (unsigned long i = a; i <= b; i++)
            idset_add(s, i);
        if (*p == ',')
            p++;
        else if (*p)
            return -1;
    }
    return 0;
}

/* hwloc's list syntax, as gpurun_cpuset_list writes the plan's: "" when empty. */
static char *idset_format(const struct idset *s)
{
    size_t cap = 16, len = 0;
    char *out = gpurun_xcalloc(cap, 1);
    long last = idset_last(s);
    for (long i = 0; i <= last; i++) {
        if (!idset_has(s, (size_t)i))
            continue;
        long j = i;
        while (j + 1 <= last && idset_has(s, (size_t)j + 1))
            j++;
        char item[48];
        int n = j > i ? snprintf(item, sizeof item, "%s%ld-%ld", len ? "," : "", i, j)
                      : snprintf(item, sizeof item, "%s%ld", len ? "," : "", i);
        while (len + (size_t)n + 1 > cap)
            out = gpurun_xrealloc(out, cap *= 2);
        memcpy(out + len, item, (size_t)n + 1);
        len += (size_t)n;
        i = j;
    }
    return out;
}

static void idset_clear(struct idset *s)
{
    free(s->w);
    s->w = NULL;
    s->words = 0;
}

static void nodes_of(json_t *numa, struct idset *set)
{
    size_t i;
    json_t *v;
    json_array_foreach(numa, i, v) if (json_is_integer(v) && json_integer_value(v) >= 0 &&
                                       json_integer_value(v) < IDSET_MAX) idset_add(set, (size_t)json_integer_value(v));
}

/* The kernel's binding calls, made directly: a rank needs no topology to
 * apply a plan that names PU and NUMA OS indexes, and loading one costs
 * more than the rest of the rank step together. */
#define RANK_MPOL_DEFAULT 0
#define RANK_MPOL_BIND 2

static int set_cpus(const struct idset *want)
{
    long last = idset_last(want);
    if (last < 0)
        return -1;
    size_t size = CPU_ALLOC_SIZE(last + 1);
    cpu_set_t *set = CPU_ALLOC(last + 1);
    CPU_ZERO_S(size, set);
    for (long i = 0; i <= last; i++)
        if (idset_has(want, (size_t)i))
            CPU_SET_S((size_t)i, size, set);
    int rc = sched_setaffinity(0, size, set);
    CPU_FREE(set);
    return rc;
}

static void get_cpus(struct idset *got)
{
    idset_clear(got);
    for (int n = 1024; n <= 1 << 20; n *= 2) {
        size_t size = CPU_ALLOC_SIZE(n);
        cpu_set_t *set = CPU_ALLOC(n);
        int rc = sched_getaffinity(0, size, set);
        if (rc == 0)
            for (int i = 0; i < n; i++)
                if (CPU_ISSET_S((size_t)i, size, set))
                    idset_add(got, (size_t)i);
        CPU_FREE(set);
        if (rc == 0 || errno != EINVAL)
            return;
    }
}

#define NODEMASK_WORDS 64 /* 4096 NUMA nodes */

static long set_memory(const struct idset *nodes)
{
    unsigned long mask[NODEMASK_WORDS] = {0};
    for (size_t i = 0; i < NODEMASK_WORDS * 64; i++)
        if (idset_has(nodes, i))
            mask[i / 64] |= 1UL << (i % 64);
    return syscall(SYS_set_mempolicy, RANK_MPOL_BIND, mask, (unsigned long)NODEMASK_WORDS * 64);
}

static int get_memory(struct idset *nodes)
{
    unsigned long mask[NODEMASK_WORDS] = {0};
    int mode = RANK_MPOL_DEFAULT;
    idset_clear(nodes);
    if (syscall(SYS_get_mempolicy, &mode, mask, (unsigned long)NODEMASK_WORDS * 64, NULL, 0UL) < 0)
        return RANK_MPOL_DEFAULT;
    for (size_t i = 0; i < NODEMASK_WORDS * 64; i++)
        if (mask[i / 64] & (1UL << (i % 64)))
            idset_add(nodes, i);
    return mode;
}

/* Apply the cpu and memory binding; report what the kernel gives back.
 * Memory policy is set for this thread: fork and exec pass it on. */
static void bind_rank(json_t *entry, json_t *report)
{
    json_t *warnings = json_object_get(report, "warnings");
    const char *cpus = json_string_value(json_object_get(entry, "cpus"));
    if (!cpus) {
        json_object_set_new(report, "match", json_true()); /* bind = none: nothing to check */
        return;
    }
    struct idset want = {0}, got = {0}, nwant = {0}, ngot = {0};
    if (idset_parse(&want, cpus) < 0)
        idset_clear(&want); /* not a list: bound to nothing, reported as a mismatch */
    errno = EINVAL;
    if (set_cpus(&want) < 0)
        json_array_append_new(warnings, json_sprintf("cannot bind to cpus %s: %s", cpus, strerror(errno)));
    nodes_of(json_object_get(entry, "numa"), &nwant);
    bool bind_numa = idset_last(&nwant) >= 0;
    if (bind_numa && set_memory(&nwant) < 0) {
        char *s = idset_format(&nwant);
        json_array_append_new(warnings, json_sprintf("cannot bind memory to NUMA %s: %s", s, strerror(errno)));
        free(s);
    }
    get_cpus(&got);
    int mode = get_memory(&ngot);
    char *g = idset_format(&got), *ng = idset_format(&ngot);
    json_object_set_new(report, "cpus", json_string(g));
    json_object_set_new(report, "numa", json_string(ng));
    json_object_set_new(report, "membind", json_string(mode == RANK_MPOL_BIND ? "bind" : "other"));
    bool match = idset_last(&want) >= 0 && idset_equal(&want, &got) &&
                 (!bind_numa || (mode == RANK_MPOL_BIND && idset_equal(&nwant, &ngot)));
    json_object_set_new(report, "match", json_boolean(match));
    if (!match) {
        char *nw = idset_format(&nwant);
        json_array_append_new(warnings, json_sprintf("planned cpus %s, got %s; planned memory bound to NUMA %s, got %s (%s)",
                                                     cpus, g, nw, *ng ? ng : "-", mode == RANK_MPOL_BIND ? "bound" : "not bound"));
        free(nw);
    }
    free(g);
    free(ng);
    idset_clear(&want);
    idset_clear(&got);
    idset_clear(&nwant);
    idset_clear(&ngot);
}

/* The variables that say which GPUs a program may use: read inside the
 * container too, where a runtime may drop or rewrite them. */
static const char *const gpu_vars[] = {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                                       "HIP_VISIBLE_DEVICES",  "GPU_DEVICE_ORDINAL",     "ZE_AFFINITY_MASK"};

/* The memory nodes this process's cpuset allows ("0-1"): a container's
 * cgroup may allow fewer than the host's. */
static char *mems_allowed(void)
{
    return gpurun_proc_status("Mems_allowed_list");
}

int gpurun_rank_inside(int fd, char *const *app_argv)
{
    struct stat st;
    /* Only into the rank step's pipe, never into whatever a hand-started
     * gpurun-rank --inside finds on that descriptor. */
    if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
        struct idset cpus = {0}, nodes = {0};
        get_cpus(&cpus);
        int mode = get_memory(&nodes);
        char *c = idset_format(&cpus), *n = idset_format(&nodes), *mems = mems_allowed();
        json_t *gpu = json_object();
        for (size_t i = 0; i < sizeof gpu_vars / sizeof *gpu_vars; i++)
            if (getenv(gpu_vars[i]))
                json_object_set_new(gpu, gpu_vars[i], json_string(getenv(gpu_vars[i])));
        json_t *r = json_pack("{s:s, s:s, s:s, s:s?, s:o, s:I}", "cpus", c, "numa", n, "membind",
                              mode == RANK_MPOL_BIND ? "bind" : "other", "mems_allowed", mems, "gpu_env", gpu,
                              "pid", (json_int_t)getpid());
        char *text = r ? json_dumps(r, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
        if (text) {
            size_t len = strlen(text);
            text[len] = '\n'; /* one line, one write: the rank step reads up to the newline */
            gpurun_write_all(fd, text, len + 1);
        }
        free(text);
        json_decref(r);
        free(c);
        free(n);
        free(mems);
        idset_clear(&cpus);
        idset_clear(&nodes);
    }
    if (fd > STDERR_FILENO)
        close(fd);
    execvp(app_argv[0], app_argv);
    int e = errno;
    fprintf(stderr, "gpurun: inside the container: cannot run %s: %s\n", app_argv[0], strerror(e));
    return e == ENOENT ? 127 : 126;
}

static void set_env_object(json_t *obj)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) if (json_is_string(v)) setenv(k, json_string_value(v), 1);
}

/* The gpurun that plans a host and samples its GPUs' energy (gpurun-rank
 * has neither); NULL: this program. */
static const char *step_planner;
static volatile sig_atomic_t child_pid;
/* The first signal that told the rank step to stop while its program ran
 * (the launcher stopping the job, gpurun's Ctrl-C or time limit, the batch
 * system), and whether the program's end was reported already. */
static volatile sig_atomic_t stop_signal, program_ended;
/* GPURUN_MARK "T RANK {\"signal\":", made before the handlers are set: the
 * handler only appends the number. */
static char stop_head[64];
static size_t stop_head_len;

static bool is_stop_signal(int sig)
{
    return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT;
}

/* Whether the program has ended already: a zombie (looked at, not reaped:
 * WNOWAIT), or reaped (ECHILD: it was our child). */
static bool child_gone(pid_t pid)
{
    siginfo_t si = {0};
    int rc = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT);
    return rc == 0 ? si.si_pid == pid : errno == ECHILD;
}

/* The stop report, at once and from the handler (write() only): the
 * launcher may kill this rank step before its program ends (GROMACS takes
 * its SIGTERM as "stop within N steps", and mpirun's SIGKILL comes first),
 * and gpurun must still know that this rank was stopped from outside, not
 * lost with its host, nor the cause of the failure. */
static void report_stop(int sig)
{
    char line[sizeof stop_head + 16];
    size_t n = stop_head_len;
    memcpy(line, stop_head, n);
    char digits[12];
    int d = 0;
    for (unsigned v = (unsigned)sig; d == 0 || v; v /= 10)
        digits[d++] = (char)('0' + v % 10);
    while (d)
        line[n++] = digits[--d];
    line[n++] = '}';
    line[n++] = '\n';
    ssize_t w = write(STDOUT_FILENO, line, n);
    (void)w;
}

/* $GPURUN_STOP_RELAY "FROM:TO": a launcher's relayed signal FROM (mpirun's
 * SIGUSR2, plugins/launcher.h) is gpurun's stop, given to the program as TO
 * (the template's stop signal).  0: none. */
static volatile sig_atomic_t relay_from, relay_to;

static void read_stop_relay(void)
{
    const char *v = getenv("GPURUN_STOP_RELAY");
    int from, to;
    char end;
    if (v && sscanf(v, "%d:%d%c", &from, &to, &end) == 2 && from > 0 && from < 65 && to > 0 && to < 65 &&
        to != SIGKILL && to != SIGSTOP) {
        relay_from = from;
        relay_to = to;
    }
}

static void forward(int sig)
{
    int e = errno;
    if (relay_from && sig == relay_from)
        sig = relay_to;
    pid_t pid = (pid_t)child_pid;
    /* A signal that comes once the program has ended (the launcher
     * stopping the job because of this very rank) stops nothing. */
    if (is_stop_signal(sig) && !stop_signal && !program_ended && pid > 0 && !child_gone(pid)) {
        stop_signal = sig;
        if (stop_head_len)
            report_stop(sig);
    }
    if (pid > 0)
        kill(pid, sig);
    errno = e;
}

static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT};

/* What a rank step tells gpurun goes through its standard output (the
 * launcher forwards it to gpurun's pipe), one line per report, each written
 * with one write(): GPURUN_MARK KIND RANK PAYLOAD.  Nothing of this touches
 * the run folder, so gpurun waits on a pipe, not on files. */
static void report_line(char kind, int rank, const char *payload, size_t len)
{
    size_t room = strlen(GPURUN_MARK) + 32 + len + 2;
    char *buf = gpurun_xcalloc(room, 1);
    int head = snprintf(buf, room, "%s%c %d ", GPURUN_MARK, kind, rank);
    memcpy(buf + head, payload, len);
    buf[(size_t)head + len] = '\n';
    gpurun_write_all(STDOUT_FILENO, buf, (size_t)head + len + 1);
    free(buf);
}

static void report_json(char kind, int rank, json_t *doc)
{
    char *text = json_dumps(doc, JSON_COMPACT | JSON_ENSURE_ASCII);
    if (text) {
        report_line(kind, rank, text, strlen(text));
        free(text);
    }
}

/* The rank step failed before the program started: say so in the rank's
 * status, so that gpurun names this rank, its host and why (and not the
 * ranks the launcher stopped because of it). */
static int failed_before_start(int rank, const char *host, gpurun_error_t *err)
{
    char *end = iso_now();
    json_t *st = json_pack("{s:i, s:s, s:i, s:i, s:s, s:I, s:s}", "rank", rank, "host", host, "exit_code", err->code,
                           "signal", 0, "end", end, "end_ns", now_ns(), "error", err->text);
    report_json('S', rank, st);
    json_decref(st);
    free(end);
    return -1;
}

/* The rank's output file: its host's (HOST.out, shared by the host's rank
 * steps, lines labelled) or its own (rank.N.out).  Made by whoever comes
 * first, with O_EXCL; the others open that one, never through a symlink,
 * and only if it is a plain file of ours. */
static int open_output(int dfd, const char *name, mode_t fmode, bool shared)
{
    int fd = gpurun_create_at(dfd, name, O_WRONLY | O_APPEND, fmode);
    if (fd >= 0 || errno != EEXIST || !shared)
        return fd;
    fd = openat(dfd, name, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1 ||
                    (st.st_mode & 022))) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    if (fd >= 0)
        fcntl(fd, F_SETFL, O_APPEND);
    return fd;
}

/* Everything the parts of a rank step share about their rank. */
struct rank_step {
    int rank, local;
    char host[256];
    char num[32]; /* the rank as text: GPURUN_RANK, and its lines' label */
    mode_t fmode;
    int dfd;        /* the run folder */
    json_t *entry;  /* the rank's entry in its host's plan */
    json_t *report; /* what the 'B' report says */
    bool per_rank, relay;
    int out; /* the rank's output file */
    /* In a container whose entry is gpurun-rank --inside: its report's pipe
     * (-1: closed), what came so far, and whether the 'B' report went. */
    bool inside, inside_sent;
    int inside_fd;
    size_t inside_len;
    char inside_buf[8192];
    /* The program: its pid, a pidfd that polls readable when it ends (-1:
     * none, its end is seen when its output ends), when it started, and,
     * once it has ended and been reported, its exit code and signal. */
    pid_t pid;
    int pidfd;
    char *start;
    bool ended;
    int code, term_signal;
    /* The first rank step of a host reads its RAPL counters around the
     * program, for the record's energy of a host gpurun does not run on
     * (gpurun reads its own host's itself); NULL for the others. */
    struct gpurun_rapl *rapl0;
    char *gpu_pcis;                 /* the host plan's GPUs, "PCI,PCI"; NULL: none */
    struct gpurun_energy_watch gw;  /* their energy, through the helper */
    struct gpurun_conditions_probe cond; /* the host's conditions: its first rank step's */
    int stall_fd;                   /* readable: gpurun asks where the program is (stall_rank.h); -1 */
    int ask_fd;                     /* the same asked on standard input (srun, flux run); -1 */
};

/* The host's conditions when a sample is due, or the end's: a 'C' report. */
static void conditions_report(struct rank_step *s, bool final)
{
    json_t *c = gpurun_conditions_sample(&s->cond, s->host, &s->gw, final);
    if (c)
        report_json('C', s->rank, c);
    json_decref(c);
}

/* ---- the binding read inside the container --------------------------- */

/* Whether the program is a container whose entry reports from inside;
 * the variable is the rank step's, not the program's. */
static bool inside_wanted(void)
{
    const char *v = getenv(GPURUN_ENV_INSIDE);
    bool on = v && !strcmp(v, "1");
    unsetenv(GPURUN_ENV_INSIDE);
    return on;
}

/* Put what the container's entry saw into the rank's report: its cpus,
 * memory policy and nodes, checked against the plan, and the visible-GPU
 * variables against the ones the rank step set; the rank step's own view
 * kept as "outside".  No report (the runtime did not start, or could not
 * run gpurun-rank in the image): the outside view, saying so. */
static void take_inside_report(json_t *report, json_t *entry, const char *text, size_t len)
{
    json_t *in = len ? json_loadb(text, len, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
    json_t *warnings = json_object_get(report, "warnings");
    if (!json_is_object(in) || !json_is_string(json_object_get(in, "cpus"))) {
        json_object_set_new(report, "binding_from", json_string("rank step"));
        json_array_append_new(warnings,
                              json_string("no binding report from inside the container (the runtime did not "
                                          "start gpurun-rank there): this is the binding the rank step applied "
                                          "outside it"));
        json_decref(in);
        return;
    }
    static const char *const fields[] = {"cpus", "numa", "membind", "match"};
    json_t *outside = json_object();
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        if (json_object_get(report, fields[i]))
            json_object_set(outside, fields[i], json_object_get(report, fields[i]));
    json_object_set_new(report, "outside", outside);
    const char *cpus = json_string_value(json_object_get(in, "cpus"));
    const char *numa = json_string_value(json_object_get(in, "numa"));
    const char *membind = json_string_value(json_object_get(in, "membind"));
    json_object_set_new(report, "binding_from", json_string("inside"));
    json_object_set_new(report, "cpus", json_string(cpus));
    json_object_set_new(report, "numa", json_string(numa ? numa : ""));
    json_object_set_new(report, "membind", json_string(membind ? membind : "other"));
    json_object_set(report, "mems_allowed", json_object_get(in, "mems_allowed"));
    json_object_set(report, "gpu_env", json_object_get(in, "gpu_env"));
    json_object_set(report, "inside_pid", json_object_get(in, "pid"));
    bool match = true;
    const char *want_cpus = json_string_value(json_object_get(entry, "cpus"));
    if (want_cpus) { /* bind = none: nothing to check */
        struct idset want = {0}, got = {0}, nwant = {0}, ngot = {0};
        if (idset_parse(&want, want_cpus) < 0)
            idset_clear(&want);
        if (idset_parse(&got, cpus) < 0)
            idset_clear(&got);
        nodes_of(json_object_get(entry, "numa"), &nwant);
        if (numa && idset_parse(&ngot, numa) < 0)
            idset_clear(&ngot);
        bool bound = membind && !strcmp(membind, "bind");
        match = idset_last(&want) >= 0 && idset_equal(&want, &got) &&
                (idset_last(&nwant) < 0 || (bound && idset_equal(&nwant, &ngot)));
        if (!match) {
            char *nw = idset_format(&nwant);
            json_array_append_new(warnings,
                                  json_sprintf("inside the container: planned cpus %s, got %s; planned memory bound "
                                               "to NUMA %s, got %s (%s)",
                                               want_cpus, cpus, nw, numa && *numa ? numa : "-",
                                               bound ? "bound" : "not bound"));
            free(nw);
        }
        idset_clear(&want);
        idset_clear(&got);
        idset_clear(&nwant);
        idset_clear(&ngot);
    }
    json_t *genv = json_object_get(in, "gpu_env"), *penv = json_object_get(entry, "env");
    for (size_t i = 0; i < sizeof gpu_vars / sizeof *gpu_vars; i++) {
        const char *set = json_object_get(penv, gpu_vars[i]) ? getenv(gpu_vars[i]) : NULL;
        const char *seen = json_string_value(json_object_get(genv, gpu_vars[i]));
        if (set && (!seen || strcmp(set, seen))) {
            match = false;
            json_array_append_new(warnings, json_sprintf("inside the container: %s is %s, the rank step set %s",
                                                         gpu_vars[i], seen ? seen : "not set", set));
        }
    }
    json_object_set_new(report, "match", json_boolean(match));
    json_decref(in);
}

/* The report is in (a line), or will never come: the rank's 'B' report. */
static void inside_done(struct rank_step *s)
{
    if (s->inside_fd >= 0)
        close(s->inside_fd);
    s->inside_fd = -1;
    if (s->inside_sent)
        return;
    s->inside_sent = true;
    take_inside_report(s->report, s->entry, s->inside_buf, s->inside_len);
    report_json('B', s->rank, s->report);
}

static void inside_read(struct rank_step *s)
{
    ssize_t n = read(s->inside_fd, s->inside_buf + s->inside_len, sizeof s->inside_buf - 1 - s->inside_len);
    if (n < 0 && errno == EINTR)
        return;
    if (n > 0)
        s->inside_len += (size_t)n;
    /* EOF: every holder is gone (the runtime failed, or the entry wrote
     * nothing); a line: the entry's report, whoever still holds the pipe. */
    if (n <= 0 || memchr(s->inside_buf, '\n', s->inside_len) || s->inside_len == sizeof s->inside_buf - 1)
        inside_done(s);
}

/* The program's output has ended: a report still in the pipe is read, and
 * the 'B' report goes, with or without it. */
static void inside_finish(struct rank_step *s)
{
    if (!s->inside)
        return;
    if (s->inside_fd >= 0 && fcntl(s->inside_fd, F_SETFL, O_NONBLOCK) == 0)
        inside_read(s);
    inside_done(s);
}

/* ---- the program's end ------------------------------------------------ */

/* The 'S' report: how the program ended, and whether the rank step had
 * been told to stop before (then this rank did not fail on its own). */
static void report_status(struct rank_step *s)
{
    char *end = iso_now();
    json_t *st = json_pack("{s:i, s:s, s:i, s:i, s:s, s:s, s:I}", "rank", s->rank, "host", s->host, "exit_code",
                           s->code, "signal", s->term_signal, "start", s->start, "end", end, "end_ns", now_ns());
    if (stop_signal) {
        json_object_set_new(st, "stopped", json_true());
        json_object_set_new(st, "stop_signal", json_integer(stop_signal));
    }
    if (s->rapl0) {
        struct gpurun_rapl *r1 = gpurun_xcalloc(1, sizeof *r1);
        char gwhy[320];
        json_t *gpus = gpurun_energy_watch_end(&s->gw, gwhy, sizeof gwhy);
        gpurun_rapl_read(r1);
        json_object_set_new(st, "energy", gpurun_energy_host_json(s->host, s->rapl0, r1, gpus, gwhy));
        json_decref(gpus);
        free(r1);
        free(s->rapl0);
        s->rapl0 = NULL;
    }
    report_json('S', s->rank, st);
    json_decref(st);
    free(end);
}

/* The program has ended (waitpid's `status`): said before anything else,
 * its last output included, since the launcher may kill this rank step as
 * soon as another rank's end is known. */
static void program_end(struct rank_step *s, int status)
{
    program_ended = 1;
    s->ended = true;
    s->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    s->term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    inside_finish(s); /* the binding report first, if it was still to come */
    report_status(s);
    /* The conditions' last sample after: it must not hold back the end
     * nor the GPUs' energy (the helper is gone: no GPU figures in it). */
    conditions_report(s, true);
}

/* The pidfd polled readable: the program has ended; reap it. */
static void program_poll_end(struct rank_step *s)
{
    int status;
    pid_t got;
    while ((got = waitpid(s->pid, &status, WNOHANG)) < 0 && errno == EINTR)
        ;
    if (got == s->pid) {
        program_end(s, status);
    } else { /* not reapable after all: its end is seen at the output's end, without spinning on the pidfd */
        close(s->pidfd);
        s->pidfd = -1;
    }
}

/* Wait until the program's output `in` has something (or has ended),
 * taking on the way the container's binding report and the program's end,
 * each as soon as it comes. */
static void wait_output(struct rank_step *s, int in)
{
    for (;;) {
        struct pollfd p[5] = {{.fd = in, .events = POLLIN},
                              {.fd = s->inside_fd, .events = POLLIN},
                              {.fd = s->ended ? -1 : s->pidfd, .events = POLLIN},
                              {.fd = s->stall_fd, .events = POLLIN},
                              {.fd = s->ask_fd, .events = POLLIN}};
        if (p[1].fd < 0 && p[2].fd < 0 && p[3].fd < 0 && p[4].fd < 0 && !s->cond.on)
            return; /* nothing but the output: read() waits */
        int ready = poll(p, 5, gpurun_conditions_wait_ms(&s->cond));
        conditions_report(s, false);
        if (ready < 0) {
            if (errno != EINTR)
                return;
            continue;
        }
        if (p[1].revents)
            inside_read(s);
        if (p[2].revents)
            program_poll_end(s);
        if (p[3].revents)
            gpurun_stall_rank_request(s->stall_fd, s->pid, s->rank, s->host, s->ended, s->code);
        if (p[4].revents && !gpurun_stall_rank_asked(&s->ask_fd))
            gpurun_stall_rank_request(s->stall_fd, s->pid, s->rank, s->host, s->ended, s->code);
        if (p[0].revents)
            return;
    }
}

/* Copy the program's output from `in` to the rank's file: per host, each
 * line as "RANK: line" in one write (so that the host's ranks never mix
 * within a line); per rank, as it is.  With `relay`, also to gpurun's pipe
 * for the terminal. */
static void copy_output(struct rank_step *s, int in)
{
    enum { CHUNK = 3072 }; /* a labelled line stays one atomic write */
    char buf[CHUNK], line[CHUNK + 32];
    size_t len = 0;
    bool labelled = !s->per_rank;
    for (;;) {
        wait_output(s, in);
        ssize_t n = read(in, buf + len, sizeof buf - len);
        if (n < 0 && errno == EINTR)
            continue;
        bool eof = n <= 0;
        if (!eof)
            len += (size_t)n;
        if (!labelled && !eof) {
            gpurun_write_all(s->out, buf + len - (size_t)n, (size_t)n);
            if (!s->relay) {
                len = 0;
                continue;
            }
        }
        size_t start = 0;
        for (;;) {
            char *nl = memchr(buf + start, '\n', len - start);
            size_t ll;
            if (nl)
                ll = (size_t)(nl - (buf + start));
            else if ((eof && len > start) || (start == 0 && len == sizeof buf))
                ll = len - start; /* the last line without a newline, or a very long one: what we have */
            else
                break;
            if (labelled) {
                int h = snprintf(line, sizeof line, "%d: ", s->rank);
                memcpy(line + h, buf + start, ll);
                line[(size_t)h + ll] = '\n';
                gpurun_write_all(s->out, line, (size_t)h + ll + 1);
            }
            if (s->relay)
                report_line('O', s->rank, buf + start, ll);
            start += ll + (nl ? 1 : 0);
        }
        memmove(buf, buf + start, len - start);
        len -= start;
        if (eof)
            break;
    }
}

/* In the forked child: the report's pipe as GPURUN_INSIDE_FD, inherited. */
static void give_inside_fd(int w)
{
    if (w == GPURUN_INSIDE_FD)
        fcntl(w, F_SETFD, 0);
    else
        dup2(w, GPURUN_INSIDE_FD);
}

/* Check that gpurun is still there, note what the step was started with,
 * and take up a plan lock handed over by gpurun-rank. */
static int step_begin(const char *run_dir, char *const *app_argv, const char *planner, gpurun_error_t *err)
{
    /* Whatever started us dies: so do we, and so does the program below. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    const char *launch_parent = getenv("GPURUN_LAUNCH_PARENT"); /* the local launcher's gpurun */
    if (launch_parent && *launch_parent && strtol(launch_parent, NULL, 10) != (long)getppid())
        return gpurun_err(err, 137, "rank step: gpurun (pid %s) is gone", launch_parent);
    step_planner = planner;
    int lock_fd = -1;
    const char *handed = getenv(GPURUN_ENV_PLAN_LOCK_FD);
    if (handed) {
        char *end;
        long fd = strtol(handed, &end, 10);
        /* Not inherited by the program, whether or not the lock is used:
         * the plan may be there already, or the lock made anew. */
        if (*handed && !*end && fd > STDERR_FILENO && fd < 1 << 20 && fcntl((int)fd, F_SETFD, FD_CLOEXEC) == 0)
            lock_fd = (int)fd;
        unsetenv(GPURUN_ENV_PLAN_LOCK_FD); /* not the program's */
    }
    gpurun_host_plan_handover(planner, run_dir, app_argv, lock_fd);
    return 0;
}

/* Open the run folder, find the local rank and its entry in the host's
 * plan, and read the job's env.json into *jobenv.  On failure nothing is
 * left open. */
static int step_read_plan(struct rank_step *s, const char *run_dir, json_t **jobenv, gpurun_error_t *err)
{
    /* Nothing of a folder that is not the one gpurun made, ours and closed
     * to others, is read or written. */
    s->dfd = gpurun_open_run_dir(run_dir, &s->fmode, err);
    if (s->dfd < 0)
        return -1;
    const char *local_var, *names[RANK_VARS_MAX];
    char store[64], shown[256];
    rank_var_list(local_vars, 1, names, store, sizeof store, shown, sizeof shown);
    if (env_first_int(names, &s->local, &local_var) < 0) {
        gpurun_err(err, GPURUN_EXIT_ENV, "rank step: rank %d has no local rank in the environment (none of %s)",
                   s->rank, shown);
        close(s->dfd);
        return -1;
    }
    s->entry = gpurun_host_plan_entry(s->dfd, run_dir, s->host, s->local, s->fmode, err);
    if (s->entry && json_integer_value(json_object_get(s->entry, "node")) != 0) {
        json_decref(s->entry);
        s->entry = NULL;
        gpurun_err(err, GPURUN_EXIT_ENV, "rank step: local rank %d (from %s) is not in %s's plan", s->local,
                   local_var, s->host);
    }
    char *env_shown = gpurun_xasprintf("%s/%s", run_dir, GPURUN_RUN_ENV);
    *jobenv = s->entry ? gpurun_read_own_json_at(s->dfd, GPURUN_RUN_ENV, env_shown, err) : NULL;
    free(env_shown);
    if (!*jobenv) {
        json_decref(s->entry);
        close(s->dfd);
        return -1;
    }
    return 0;
}

/* The GPUs of this host's plan, "PCI,PCI" (at most GPURUN_ENERGY_PCIS_MAX),
 * for its first rank step's energy; NULL when none. */
static char *host_gpus(struct rank_step *s, const char *run_dir)
{
    struct gpurun_strbuf b = {0};
    int n = 0;
    for (int local = 0; local < 4096 && n < GPURUN_ENERGY_PCIS_MAX; local++) {
        gpurun_error_t e = {0};
        json_t *entry = local == s->local ? json_incref(s->entry)
                                          : gpurun_host_plan_entry(s->dfd, run_dir, s->host, local, s->fmode, &e);
        if (!entry)
            break;
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(entry, "gpu_pci"), i, p) {
            const char *pci = json_string_value(p);
            if (!pci || !*pci || strlen(pci) > 19 || strchr(pci, ',') || n >= GPURUN_ENERGY_PCIS_MAX ||
                (b.len && strstr(b.s, pci)))
                continue;
            gpurun_strbuf_printf(&b, "%s%s", b.len ? "," : "", pci);
            n++;
        }
        json_decref(entry);
    }
    if (n)
        return b.s;
    free(b.s);
    return NULL;
}

/* Start the rank's report, set its environment (the plan's, the rank's,
 * then the job's) and bind it as planned. */
static void step_set_up_rank(struct rank_step *s, json_t *jobenv)
{
    s->report = json_object();
    json_object_set_new(s->report, "warnings", json_array());
    json_object_set_new(s->report, "rank", json_integer(s->rank));
    json_object_set_new(s->report, "local_rank", json_integer(s->local));
    json_object_set_new(s->report, "host", json_string(s->host));
    json_object_set_new(s->report, "planned_cpus", json_copy(json_object_get(s->entry, "cpus")));
    json_object_set_new(s->report, "planned_numa", json_copy(json_object_get(s->entry, "numa")));

    snprintf(s->num, sizeof s->num, "%d", s->rank); /* the host plan numbers its ranks from 0 */
    json_t *env = gpurun_rankenv_rank(json_object_get(s->entry, "env"), jobenv, s->rank, s->local);
    set_env_object(env);
    json_decref(env);
    json_decref(jobenv);
    bind_rank(s->entry, s->report);
}

/* Ranks under a CUDA MPS daemon of the job's: a connection to its guard,
 * held by this rank step for the rank's life and inherited by nobody
 * (close-on-exec), so that the guard sees the rank end however it ends
 * (the kernel closes a killed process's sockets). */
static void step_join_mps(struct rank_step *s)
{
    const char *path = json_string_value(json_object_get(s->entry, "mps_guard"));
    if (!path)
        return;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = -1, e = ENAMETOOLONG;
    if (strlen(path) < sizeof sa.sun_path) {
        memcpy(sa.sun_path, path, strlen(path) + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            return; /* kept open until this process ends */
        e = errno;
    }
    if (fd >= 0)
        close(fd);
    json_array_append_new(json_object_get(s->report, "warnings"),
                          json_sprintf("cannot reach the CUDA MPS guard %s: %s (the daemon may stop before this "
                                       "rank ends)", path, strerror(e)));
}

/* Open the rank's output file and say in the report which it is; the run
 * folder is closed either way. */
static int step_open_output(struct rank_step *s, const char *run_dir, gpurun_error_t *err)
{
    /* A planted name (a symlink to make us append to someone's file) is
     * refused, not followed. */
    const char *mode = getenv(GPURUN_ENV_OUTPUT);
    s->per_rank = mode && !strcmp(mode, "per-rank");
    const char *relay_s = getenv(GPURUN_ENV_RELAY);
    s->relay = relay_s && !strcmp(relay_s, "1");
    char *oname = s->per_rank ? gpurun_xasprintf("rank.%d.out", s->rank) : gpurun_host_output_name(s->host);
    s->out = open_output(s->dfd, oname, s->fmode, !s->per_rank);
    if (s->out < 0) {
        gpurun_err(err, GPURUN_EXIT_ENV, "rank %d: cannot create its output %s/%s: %s", s->rank, run_dir, oname,
                   errno == ELOOP ? "it is a symlink" : errno == EEXIST ? "it exists already" : strerror(errno));
        free(oname);
        close(s->dfd);
        return -1;
    }
    /* The program starts in the folder that was checked, not in whatever
     * the launcher's path names now (a folder swapped in after the check). */
    if (fchdir(s->dfd) < 0) {
        gpurun_err(err, GPURUN_EXIT_ENV, "rank %d: cannot enter the run folder %s: %s", s->rank, run_dir,
                   strerror(errno));
        free(oname);
        close(s->out);
        close(s->dfd);
        return -1;
    }
    close(s->dfd);
    json_object_set_new(s->report, "output",
                        s->per_rank ? json_pack("{s:s}", "file", oname)
                                    : json_pack("{s:s, s:s+}", "file", oname, "label", s->num, ": "));
    free(oname);
    return 0;
}

/* In the forked child: the program, its output and errors into the pipe,
 * the forwarded signals back to their defaults. */
static void exec_program(int pipe_out, int inside_w, pid_t parent, int rank, char *const *app_argv, int stall_sig)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(137);
    /* Its stack readable by the rank step's sampler where Yama allows
     * only ancestors (ptrace_scope 1); the signal that asks is not its. */
    if (stall_sig) {
        gpurun_stall_allow_tracer(parent);
        signal(stall_sig, SIG_DFL);
    }
    /* A launcher that relays a stop (mpirun) signals the rank step's whole
     * process group: the program in one of its own gets the stop signal
     * once, from the rank step, never the relayed one. */
    if (relay_from)
        setpgid(0, 0);
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
        sigaction(forwarded[i], &dfl, NULL);
    dup2(pipe_out, STDOUT_FILENO);
    dup2(pipe_out, STDERR_FILENO);
    if (inside_w >= 0)
        give_inside_fd(inside_w);
    execvp(app_argv[0], app_argv);
    fprintf(stderr, "gpurun: rank %d: cannot run %s: %s\n", rank, app_argv[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
}

/* A descriptor that polls readable when process `pid` (our child) ends,
 * or -1 where the kernel has none (before Linux 5.3). */
static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0)
        fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
#else
    (void)pid;
    return -1;
#endif
}

/* Run the program with signals forwarded to it and its output copied to
 * the rank's file; its end is reported ('S') as soon as it comes (with a
 * pidfd), else when its output ends.  0, or -1 when there is no pipe for
 * its output.  Closes the output file. */
static int step_run_program(struct rank_step *s, char *const *app_argv, gpurun_error_t *err)
{
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        gpurun_err(err, GPURUN_EXIT_ENV, "rank %d: cannot make a pipe: %s", s->rank, strerror(errno));
        close(s->out);
        inside_finish(s);
        return -1;
    }
    int inside_pipe[2] = {-1, -1};
    if (s->inside && pipe2(inside_pipe, O_CLOEXEC) < 0)
        inside_pipe[0] = inside_pipe[1] = -1; /* no report then: the outside view, saying so */
    s->inside_fd = inside_pipe[0];
    fflush(NULL);
    stop_head_len = (size_t)snprintf(stop_head, sizeof stop_head, "%sT %d {\"signal\":", GPURUN_MARK, s->rank);
    read_stop_relay();
    struct sigaction sa = {.sa_handler = forward};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
        sigaddset(&sa.sa_mask, forwarded[i]); /* one handler at a time: one stop report */
    sa.sa_flags = SA_RESTART;
    for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
        sigaction(forwarded[i], &sa, NULL);
    int stall_sig = gpurun_stall_rank_setup(&s->stall_fd); /* over forward(): that signal is gpurun's */
    s->ask_fd = gpurun_stall_rank_stdin(); /* before the fork: the program's standard input is /dev/null */
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        exec_program(pipefd[1], inside_pipe[1], parent, s->rank, app_argv, stall_sig);
    close(pipefd[1]);
    if (inside_pipe[1] >= 0)
        close(inside_pipe[1]);
    int status = 0;
    s->pid = pid;
    s->pidfd = -1;
    if (pid < 0) {
        dprintf(s->out, "%s%sgpurun: rank %d: cannot start %s: %s\n", s->per_rank ? "" : s->num,
                s->per_rank ? "" : ": ", s->rank, app_argv[0], strerror(errno));
        status = 126 << 8;
    } else {
        child_pid = pid;
        s->pidfd = open_pidfd(pid);
        /* The host's GPUs' energy from now to the program's end: a helper
         * (the full gpurun) started once the program runs, never before. */
        if (s->rapl0)
            gpurun_energy_watch_start(&s->gw, step_planner ? step_planner : "/proc/self/exe", s->gpu_pcis);
        conditions_report(s, false); /* the start's sample */
        copy_output(s, pipefd[0]);
        if (!s->ended)
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
    }
    if (!s->ended)
        program_end(s, status);
    if (s->pidfd >= 0)
        close(s->pidfd);
    inside_finish(s);
    close(pipefd[0]);
    close(s->out);
    return 0;
}

int gpurun_rank_step(const char *run_dir, char *const *app_argv, const char *planner, gpurun_error_t *err)
{
    if (step_begin(run_dir, app_argv, planner, err) < 0)
        return -1;
    struct rank_step s = {.fmode = 0600, .dfd = -1, .out = -1, .inside_fd = -1, .stall_fd = -1, .ask_fd = -1, .gw = {.pid = -1, .in = -1, .out = -1}};
    const char *rank_var, *names[RANK_VARS_MAX];
    char store[64], shown[256];
    rank_var_list(rank_vars, 0, names, store, sizeof store, shown, sizeof shown);
    if (env_first_int(names, &s.rank, &rank_var) < 0)
        return gpurun_err(err, GPURUN_EXIT_ENV, "rank step: no rank in the environment (none of %s)", shown);
    const char *host_env = getenv(GPURUN_ENV_HOST); /* a test launcher playing many hosts on one */
    snprintf(s.host, sizeof s.host, "%s", host_env && *host_env ? host_env : "");
    if (!s.host[0])
        gethostname(s.host, sizeof s.host - 1);
    json_t *jobenv;
    if (step_read_plan(&s, run_dir, &jobenv, err) < 0)
        return failed_before_start(s.rank, s.host, err);
    step_set_up_rank(&s, jobenv);
    if (s.local == 0) {
        s.gpu_pcis = host_gpus(&s, run_dir);
        gpurun_conditions_begin(&s.cond, gpurun_host_plan_entry, s.dfd, run_dir, s.host, s.fmode);
    }
    step_join_mps(&s);
    if (step_open_output(&s, run_dir, err) < 0) {
        json_decref(s.report);
        json_decref(s.entry);
        free(s.gpu_pcis);
        gpurun_conditions_free(&s.cond);
        return failed_before_start(s.rank, s.host, err);
    }
    char *start = iso_now();
    json_object_set_new(s.report, "start", json_string(start));
    json_object_set_new(s.report, "pid", json_integer(getpid()));
    /* In a container with gpurun-rank as its entry, the report waits for
     * what that entry sees inside. */
    s.inside = inside_wanted();
    if (!s.inside)
        report_json('B', s.rank, s.report);

    s.start = start;
    if (s.local == 0) {
        s.rapl0 = gpurun_xcalloc(1, sizeof *s.rapl0);
        gpurun_rapl_read(s.rapl0);
    }
    int rc = step_run_program(&s, app_argv, err);
    gpurun_conditions_free(&s.cond);
    free(s.rapl0);
    free(s.gpu_pcis);
    json_decref(s.report);
    json_decref(s.entry);
    free(start);
    if (rc < 0)
        return failed_before_start(s.rank, s.host, err);
    return s.code;
}
