/* SPDX-License-Identifier: BSD-3-Clause */
/* The rank step's look at its own stalled program (stall_rank.h). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "rank_report.h"
#include "safefile.h"
#include "stall_rank.h"
#include "util.h"

#define SAMPLE_WINDOW_S 2.0   /* CPU time over this long: running or waiting */
#define TOOL_TIMEOUT_S 20.0   /* a stack tool that takes longer is stopped */
#define STACK_START_BY_S 36.0 /* after the question: a stack not begun by then is left out */
#define ANSWER_BY_S 45.0      /* after the question: every answer sent (the head waits 50 s) */
#define SLOTS_MAX 64          /* stack tools at once on a host, at most */
#define TOOL_OUTPUT_MAX 262144
#define PROCS_MAX 64          /* the program and its descendants looked at */
#define THREADS_MAX 1024
#define FRAMES_MAX 8
#define FRAME_LEN_MAX 64

#ifndef PR_SET_PTRACER
#define PR_SET_PTRACER 0x59616d61
#endif

static int stall_pipe[2] = {-1, -1};
static pid_t sampler = -1;

static void on_stall_signal(int sig)
{
    (void)sig;
    int e = errno;
    ssize_t w = write(stall_pipe[1], "s", 1);
    (void)w;
    errno = e;
}

int gpurun_stall_rank_setup(int *poll_fd)
{
    *poll_fd = -1;
    const char *v = getenv(GPURUN_ENV_STALL_SIGNAL);
    char *end;
    long sig = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || sig <= 0 || sig >= 65 || sig == SIGKILL || sig == SIGSTOP)
        return 0;
    if (pipe2(stall_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return 0;
    struct sigaction sa = {.sa_handler = on_stall_signal, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction((int)sig, &sa, NULL);
    *poll_fd = stall_pipe[0];
    return (int)sig;
}

int gpurun_stall_rank_stdin(void)
{
    const char *v = getenv(GPURUN_ENV_STALL_SIGNAL);
    if (!v || !*v)
        return -1;
    int fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || null < 0 || dup2(null, STDIN_FILENO) < 0) {
        if (fd >= 0)
            close(fd);
        if (null >= 0)
            close(null);
        return -1;
    }
    close(null);
    return fd;
}

bool gpurun_stall_rank_asked(int *fd)
{
    char buf[64];
    ssize_t n;
    while ((n = read(*fd, buf, sizeof buf)) < 0 && errno == EINTR)
        ;
    if (n > 0)
        return false;
    close(*fd); /* its end (the launcher's /dev/null) or an error: not watched again */
    *fd = -1;
    return true;
}

int gpurun_stall_allow_tracer(pid_t rank_step)
{
    return prctl(PR_SET_PTRACER, (unsigned long)rank_step, 0, 0, 0);
}

/* ---- /proc ------------------------------------------------------------ */

/* A small file of /proc, NUL-terminated; false when it cannot be read. */
static bool read_small(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n < 0)
        return false;
    buf[n] = '\0';
    return true;
}

struct thread_look {
    char state;
    unsigned long long ticks;
};

/* A task's state and CPU ticks (utime + stime) from its stat file. */
static bool task_stat(pid_t pid, pid_t tid, struct thread_look *t)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    if (!read_small(path, buf, sizeof buf))
        return false;
    char *p = strrchr(buf, ')'); /* the name may hold spaces and ')' */
    if (!p || p[1] != ' ')
        return false;
    t->state = p[2];
    unsigned long long ut = 0, st = 0;
    p += 2;
    for (int field = 3; field < 14 && p; field++)
        p = strchr(p + 1, ' ');
    if (!p || sscanf(p, " %llu %llu", &ut, &st) != 2)
        return false;
    t->ticks = ut + st;
    return true;
}

struct proc_look {
    int nthreads, running;
    char state;              /* the main thread's */
    unsigned long long ticks; /* all threads' */
};

static bool proc_look(pid_t pid, struct proc_look *l)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return false;
    memset(l, 0, sizeof *l);
    struct dirent *e;
    while ((e = readdir(d)) && l->nthreads < THREADS_MAX) {
        long tid = strtol(e->d_name, NULL, 10);
        struct thread_look t;
        if (tid <= 0 || !task_stat(pid, (pid_t)tid, &t))
            continue;
        l->nthreads++;
        l->ticks += t.ticks;
        l->running += t.state == 'R';
        if (tid == pid)
            l->state = t.state;
    }
    closedir(d);
    return l->nthreads > 0 && l->state;
}

/* The process the rank is: the program, or its deepest descendant (a
 * shell script or a container runtime's child).  0 when it is gone. */
static pid_t rank_process(pid_t pid)
{
    pid_t q[PROCS_MAX];
    size_t head = 0, n = 0;
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (access(path, F_OK) < 0)
        return 0;
    q[n++] = pid;
    pid_t last = pid;
    while (head < n) {
        pid_t p = q[head++];
        last = p;
        snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)p, (int)p);
        if (!read_small(path, buf, sizeof buf))
            continue;
        for (char *s = buf, *end; n < PROCS_MAX; s = end) {
            long c = strtol(s, &end, 10);
            if (end == s || c <= 0)
                break;
            q[n++] = (pid_t)c;
        }
    }
    return last;
}

/* ---- stacks ----------------------------------------------------------- */

static bool on_path(const char *name, char *out, size_t size)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/bin:/bin";
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        if (n && n + strlen(name) + 2 <= size) {
            snprintf(out, size, "%.*s/%s", (int)n, p, name);
            if (access(out, X_OK) == 0)
                return true;
        }
        p += n + (p[n] == ':');
    }
    return false;
}

const char *gpurun_stall_stack_tool(void)
{
    char buf[4096];
    if (on_path("eu-stack", buf, sizeof buf))
        return "eu-stack";
    if (on_path("gdb", buf, sizeof buf))
        return "gdb";
    return NULL;
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Stop a tool that overran: SIGTERM (gdb detaches), SIGKILL 2 s later. */
static void stop_tool(pid_t t)
{
    kill(t, SIGTERM);
    for (int i = 0; i < 40 && waitpid(t, NULL, WNOHANG) == 0; i++)
        nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    if (kill(t, SIGKILL) == 0)
        waitpid(t, NULL, 0);
}

/* One of this host's stack-tool slots, held while its descriptor is open:
 * at most half the host's CPUs run a stack tool at once, so that the ranks
 * of a full node take turns instead of all overrunning their bound
 * together.  A node-local lock file of this user per slot (another user's
 * file, or a link, is not used).  The descriptor, -1 when no slot came
 * free by `until`, or -2 when the host has no usable slot (run unbounded). */
static int stack_slot(double until)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int slots = cpus > 3 ? (int)(cpus / 2) : 1, usable = 0;
    if (slots > SLOTS_MAX)
        slots = SLOTS_MAX;
    for (;;) {
        usable = 0;
        for (int k = 0; k < slots; k++) {
            char path[96];
            snprintf(path, sizeof path, "/dev/shm/gpurun-stack-%u.%d", (unsigned)geteuid(), k);
            int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
            struct stat st;
            if (fd < 0 || fstat(fd, &st) < 0 || gpurun_own_file_problem(&st)) {
                if (fd >= 0)
                    close(fd);
                continue;
            }
            usable++;
            if (flock(fd, LOCK_EX | LOCK_NB) == 0)
                return fd;
            close(fd);
        }
        if (!usable)
            return -2;
        if (mono() >= until)
            return -1;
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
    }
}

/* Run a stack tool; its standard output (bounded), or NULL.  *overran
 * when it was stopped at `timeout_s`. */
static char *run_tool(char *const argv[], double timeout_s, bool *overran)
{
    int p[2];
    *overran = false;
    if (pipe2(p, O_CLOEXEC) < 0)
        return NULL;
    pid_t t = fork();
    if (t == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int null = open("/dev/null", O_RDWR);
        dup2(null, STDIN_FILENO);
        dup2(null, STDERR_FILENO);
        dup2(p[1], STDOUT_FILENO);
        execv(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    if (t < 0) {
        close(p[0]);
        return NULL;
    }
    struct gpurun_strbuf b = {0};
    double until = mono() + timeout_s;
    char chunk[4096];
    for (double now; (now = mono()) < until;) {
        struct pollfd pf = {.fd = p[0], .events = POLLIN};
        if (poll(&pf, 1, (int)((until - now) * 1000) + 1) <= 0)
            continue;
        ssize_t n = read(p[0], chunk, sizeof chunk);
        if (n <= 0)
            break;
        if (b.len < TOOL_OUTPUT_MAX)
            gpurun_strbuf_add(&b, chunk, (size_t)n);
    }
    *overran = mono() >= until;
    close(p[0]);
    if (*overran)
        stop_tool(t);
    else
        waitpid(t, NULL, 0);
    return b.s;
}

/* A frame's function as people read it: "__GI___libc_read" is "read". */
static void frame_name(const char *s, size_t n, char *out, size_t size)
{
    static const char *const prefixes[] = {"__GI_", "__libc_", "__", "_"};
    for (bool cut = true; cut;) {
        cut = false;
        for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
            size_t pl = strlen(prefixes[i]);
            if (n > pl + 1 && !strncmp(s, prefixes[i], pl) && !(n == 6 && !strncmp(s, "_start", 6))) {
                s += pl;
                n -= pl;
                cut = true;
            }
        }
    }
    if (n > 5 && !strncmp(s, "PMPI_", 5)) { /* Open MPI's MPI_X is PMPI_X */
        s++;
        n--;
    }
    snprintf(out, size, "%.*s", (int)(n < size - 1 ? n : size - 1), s);
}

/* The function of a frame line: gdb's "#3  0x.. in f (a=1) at x.c:4",
 * eu-stack's "#3  0x..  f", py-spy's "    f (x.py:4)"; false for none. */
static bool parse_frame(const char *line, char *out, size_t size)
{
    const char *p = line;
    if (*p == '#') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++;
    } else if (strncmp(p, "    ", 4)) {
        return false;
    }
    p += strspn(p, " \t");
    if (!strncmp(p, "0x", 2)) {
        p += strcspn(p, " \t");
        p += strspn(p, " \t");
        if (!strncmp(p, "in ", 3))
            p += 3;
    }
    size_t n = strcspn(p, " \t(\n");
    if (!n || (n == 2 && !strncmp(p, "??", 2)))
        return false;
    frame_name(p, n, out, size);
    return true;
}

static bool startup_frame(const char *f)
{
    return !strcmp(f, "_start") || !strncmp(f, "start_main", 10) || !strncmp(f, "start_call_main", 15) ||
           !strcmp(f, "clone") || !strcmp(f, "clone3") || !strcmp(f, "start_thread");
}

/* Whether a thread's header names thread `pid`: gdb's "(LWP PID)",
 * eu-stack's "TID PID:"; py-spy's first thread is its main one. */
static int thread_header(const char *line, pid_t pid)
{
    char want[32];
    if (!strncmp(line, "Thread ", 7) || !strncmp(line, "TID ", 4)) {
        snprintf(want, sizeof want, "LWP %d)", (int)pid);
        if (strstr(line, want))
            return 1;
        snprintf(want, sizeof want, "TID %d:", (int)pid);
        return !strncmp(line, want, strlen(want)) || strstr(line, "MainThread") ? 1 : -1;
    }
    return 0;
}

bool gpurun_stall_comm_frame(const char *f)
{
    static const char *const p[] = {"MPI_", "ompi_", "mca_", "opal_", "PMIx", "pmix", "MPIR_", "MPIDI",
                                    "nccl", "gloo::", "shmem_", NULL};
    for (size_t i = 0; p[i]; i++)
        if (!strncmp(f, p[i], strlen(p[i])))
            return true;
    return strstr(f, "::gloo::") || strstr(f, "c10d::"); /* c10d:: anywhere: torch::c10d::… too */
}

/* The main thread's frames, outermost first, the start-up frames left
 * out, FRAMES_MAX at most; into a JSON array. */
static json_t *main_frames(char *text, pid_t pid)
{
    char names[64][FRAME_LEN_MAX];
    int n = 0, in = -1; /* -1: before any header (a single thread has none) */
    bool done = false;
    for (char *line = text, *next; line && *line && !done; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        int h = thread_header(line, pid);
        if (h) {
            done = in == 1 && n > 0;
            in = h;
            if (!done)
                n = 0;
            continue;
        }
        if (in != -1 && in != 1)
            continue;
        if (n < 64 && parse_frame(line, names[n], sizeof names[n]) && !startup_frame(names[n]))
            n++;
    }
    /* Outermost first.  Too many: the outermost three, then down to the
     * first call into the communication library when there is one (below
     * it the library's own frames differ from rank to rank; a Python
     * rank's wait in c10d sits under twenty interpreter frames), else the
     * innermost rest. */
    int comm = -1;
    for (int i = n - 1; i >= 0 && comm < 0; i--)
        if (gpurun_stall_comm_frame(names[i]))
            comm = i;
    json_t *a = json_array();
    for (int i = n - 1; i >= 0; i--) {
        int depth = n - 1 - i; /* 0: the outermost */
        bool keep = n <= FRAMES_MAX || depth < 3 ||
                    (comm >= 0 ? i >= comm && i < comm + FRAMES_MAX - 3 : i < FRAMES_MAX - 3);
        if (keep)
            json_array_append_new(a, json_string(names[i]));
    }
    return a;
}

static bool is_python(pid_t pid)
{
    char path[64], comm[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    return read_small(path, comm, sizeof comm) && !strncmp(comm, "python", 6);
}

/* How long the next stack tool may take: TOOL_TIMEOUT_S, less near the
 * time the answer is due. */
static double tool_limit(double asked)
{
    double left = asked + ANSWER_BY_S - mono();
    return left < 1.0 ? 1.0 : left < TOOL_TIMEOUT_S ? left : TOOL_TIMEOUT_S;
}

/* The main thread's stack from the tools here, into doc's "frames" and
 * "tool" (null and "stack_note" when none could be had).  Begun only when
 * one of the host's slots is free before `asked` + STACK_START_BY_S, and
 * done by `asked` + ANSWER_BY_S. */
static void add_stack(json_t *doc, pid_t pid, double asked)
{
    char tool[4096], pidtxt[24];
    snprintf(pidtxt, sizeof pidtxt, "%d", (int)pid);
    const char *name = NULL, *note = NULL;
    char *text = NULL;
    bool overran = false;
    int slot = stack_slot(asked + STACK_START_BY_S);
    if (slot == -1)
        note = "no stack: the host's stack tools were busy with other ranks until the answer was due";
    if (!note && is_python(pid) && on_path("py-spy", tool, sizeof tool)) {
        name = "py-spy";
        text = run_tool((char *[]){tool, "dump", "--pid", pidtxt, NULL}, tool_limit(asked), &overran);
    }
    if (!note && !text && on_path("eu-stack", tool, sizeof tool)) {
        name = "eu-stack";
        text = run_tool((char *[]){tool, "-p", pidtxt, NULL}, tool_limit(asked), &overran);
    }
    if (!note && !text && on_path("gdb", tool, sizeof tool)) {
        name = "gdb";
        text = run_tool((char *[]){tool, "-nx", "-batch", "-iex", "set debuginfod enabled off", "-p", pidtxt,
                                   "-ex", "bt 32", NULL}, /* the main thread's: gdb selects it on attach */
                        tool_limit(asked), &overran);
    }
    if (slot >= 0)
        close(slot); /* the next rank's turn */
    json_t *frames = text ? main_frames(text, pid) : json_array();
    if (!json_array_size(frames))
        json_object_set_new(doc, "stack_note",
                            json_string(note       ? note
                                        : !name    ? "no stack tool (install gdb or elfutils' eu-stack)"
                                        : overran  ? "the stack tool took too long"
                                                   : "the stack tool read nothing (ptrace refused?)"));
    json_object_set_new(doc, "tool", name ? json_string(name) : json_null());
    json_object_set_new(doc, "frames", frames);
    free(text);
}

char *gpurun_stall_sample_text(pid_t pid, double window_s)
{
    double asked = mono();
    json_t *doc = json_object();
    pid_t rp = pid > 0 ? rank_process(pid) : 0;
    struct proc_look a, b;
    char path[64], wchan[64] = "", comm[64] = "";
    if (!rp || !proc_look(rp, &a)) {
        json_object_set_new(doc, "state", json_string("gone"));
    } else {
        double t0 = mono();
        nanosleep(&(struct timespec){(time_t)window_s, (long)((window_s - (double)(long)window_s) * 1e9)}, NULL);
        double dt = mono() - t0;
        if (!proc_look(rp, &b)) {
            json_object_set_new(doc, "state", json_string("gone"));
        } else {
            snprintf(path, sizeof path, "/proc/%d/wchan", (int)rp);
            read_small(path, wchan, sizeof wchan);
            snprintf(path, sizeof path, "/proc/%d/comm", (int)rp);
            read_small(path, comm, sizeof comm);
            comm[strcspn(comm, "\n")] = '\0';
            long hz = sysconf(_SC_CLK_TCK);
            double cpu = dt > 0 && hz > 0 ? (double)(b.ticks - a.ticks) / (double)hz / dt * 100.0 : 0;
            json_object_set_new(doc, "pid", json_integer(rp));
            json_object_set_new(doc, "comm", json_string(comm));
            json_object_set_new(doc, "state", json_sprintf("%c", b.state));
            json_object_set_new(doc, "wchan", json_string(strcmp(wchan, "0") ? wchan : ""));
            json_object_set_new(doc, "cpu", json_real((double)(long)(cpu * 10) / 10));
            json_object_set_new(doc, "threads", json_integer(b.nthreads));
            json_object_set_new(doc, "running", json_integer(b.running));
            /* A stopped process is left alone: attaching would wake it. */
            if (b.state != 'T' && b.state != 't')
                add_stack(doc, rp, asked);
        }
    }
    char *text = json_dumps(doc, JSON_COMPACT | JSON_ENSURE_ASCII);
    /* Bounded: frames go from the middle until the line fits. */
    json_t *frames = json_object_get(doc, "frames");
    while (text && strlen(text) > GPURUN_STALL_SAMPLE_MAX - 64 && json_array_size(frames) > 1) {
        json_array_remove(frames, json_array_size(frames) > 2 ? 1 : 0);
        free(text);
        text = json_dumps(doc, JSON_COMPACT | JSON_ENSURE_ASCII);
    }
    json_decref(doc);
    return text;
}

/* The sampler: this rank's line, in one write (under PIPE_BUF: never
 * mixed with the rank step's own reports). */
static void sampler_main(pid_t pid, int rank, const char *host, bool ended, int end_code)
{
    static const int dfl[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT};
    for (size_t i = 0; i < sizeof dfl / sizeof *dfl; i++)
        signal(dfl[i], SIG_DFL);
    char *text = ended ? NULL : gpurun_stall_sample_text(pid, SAMPLE_WINDOW_S);
    json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
    if (!doc) {
        doc = json_pack("{s:s}", "state", "gone");
        if (ended)
            json_object_set_new(doc, "exit_code", json_integer(end_code));
    }
    json_object_set_new(doc, "host", json_string(host));
    free(text);
    text = json_dumps(doc, JSON_COMPACT | JSON_ENSURE_ASCII);
    char line[GPURUN_STALL_SAMPLE_MAX + 64];
    int n = text ? snprintf(line, sizeof line, "%sH %d %s\n", GPURUN_MARK, rank, text) : -1;
    if (n > 0 && (size_t)n < sizeof line)
        gpurun_write_all(STDOUT_FILENO, line, (size_t)n);
    free(text);
    json_decref(doc);
    _exit(0);
}

void gpurun_stall_rank_request(int poll_fd, pid_t pid, int rank, const char *host, bool ended, int end_code)
{
    char buf[64];
    while (read(poll_fd, buf, sizeof buf) > 0)
        ;
    /* One sampler at a time: a request while one runs is answered by it. */
    if (sampler > 0 && waitpid(sampler, NULL, WNOHANG) == 0)
        return;
    pid_t parent = getpid();
    sampler = fork();
    if (sampler == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(0);
        sampler_main(pid, rank, host, ended, end_code);
    }
}
