/* SPDX-License-Identifier: BSD-3-Clause */
/* CUDA MPS: one control daemon per host for ranks that share a GPU, in
 * folders of the run, started before the host's ranks and quit after them
 * by its guard (see mps.h).  nvidia-cuda-mps-control is run without a
 * shell: `-d` starts the daemon (the program forks it and returns), "quit"
 * on its stdin stops it. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mps.h"
#include "results.h" /* gpurun_printable */
#include "safefile.h"
#include "util.h"

/* Waits, bounded so that a stuck control program cannot hang gpurun. */
#define CONTROL_WAIT_S 30
#define SOCKET_WAIT_S 5
#define DEFAULT_PIPE_DIR "/tmp/nvidia-mps"

bool gpurun_mps_wanted(const gpurun_plan_t *plan)
{
    for (int r = 0; r < plan->nranks && plan->ranks[r].node == 0; r++) {
        const gpurun_rank_plan_t *rk = &plan->ranks[r];
        if (rk->ngpus > 0 && rk->gpu_nranks > 1 && !strcmp(plan->topo->gpus[rk->gpus[0]].vendor, "nvidia"))
            return true;
    }
    return false;
}

enum gpurun_mps_mode gpurun_mps_mode_from_name(const char *name)
{
    return name && !strcmp(name, "on") ? GPURUN_MPS_ON : name && !strcmp(name, "off") ? GPURUN_MPS_OFF : GPURUN_MPS_AUTO;
}

bool gpurun_mps_find_control(char *buf, size_t len)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        if (n > 0) {
            snprintf(buf, len, "%.*s/%s", (int)n, path, GPURUN_MPS_CONTROL);
            struct stat st;
            if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
                return true;
        }
        path += n + (path[n] == ':');
    }
    buf[0] = '\0';
    return false;
}

/* A control socket in `dir` that is ours and answers. */
static bool control_answers(const char *dir)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if ((size_t)snprintf(sa.sun_path, sizeof sa.sun_path, "%s/control", dir) >= sizeof sa.sun_path)
        return false;
    struct stat st;
    if (lstat(sa.sun_path, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid())
        return false;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    bool up = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    return up;
}

bool gpurun_mps_folder_problem(const char *dir, char *why, size_t size)
{
    struct stat st;
    if (lstat(dir, &st) < 0)
        return false; /* nothing there: nothing of anyone's to use */
    if (S_ISLNK(st.st_mode))
        snprintf(why, size, "is a symlink");
    else if (!S_ISDIR(st.st_mode))
        snprintf(why, size, "is not a folder");
    else if (st.st_uid != geteuid() && st.st_uid != 0)
        snprintf(why, size, "is owned by another user (uid %ld)", (long)st.st_uid);
    else if (st.st_mode & 022)
        snprintf(why, size, "is writable by %s", (st.st_mode & 002) ? "everyone" : "its group");
    else
        return false;
    return true;
}

int gpurun_mps_running(char *pipe_dir, size_t len, char *why, size_t whylen)
{
    const char *env = getenv("CUDA_MPS_PIPE_DIRECTORY");
    const char *dir = env && *env ? env : DEFAULT_PIPE_DIR;
    char what[128];
    why[0] = '\0';
    if (gpurun_mps_folder_problem(dir, what, sizeof what)) {
        char *shown = gpurun_printable(dir);
        if (env && *env)
            snprintf(why, whylen,
                     "CUDA_MPS_PIPE_DIRECTORY=%s: the folder %s: gpurun never uses an MPS folder another user "
                     "could change (its daemon could be theirs); unset it, or name a folder of yours (mode 0700)",
                     shown, what);
        else
            snprintf(why, whylen, "the default MPS pipe folder %s %s: not used", shown, what);
        free(shown);
        return env && *env ? -1 : 0;
    }
    if (!control_answers(dir))
        return 0;
    snprintf(pipe_dir, len, "%s", dir);
    return 1;
}

int gpurun_mps_check_env(const gpurun_job_t *job, gpurun_error_t *err)
{
    static const char *const names[] = {"CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY"};
    for (size_t i = 0; i < 2; i++) {
        const char *in_job = job ? gpurun_kvlist_get(&job->env, names[i]) : NULL;
        const char *v = in_job ? in_job : getenv(names[i]);
        char what[128];
        if (!v || !*v || !gpurun_mps_folder_problem(v, what, sizeof what))
            continue;
        char *key = gpurun_xasprintf("env.%s", names[i]), *shown = gpurun_printable(v);
        if (in_job)
            gpurun_err(err, GPURUN_EXIT_CONFIG,
                       "%s: key '%s': the folder %s %s: an MPS pipe or log folder another user could change is "
                       "never used (the daemon there could be theirs); name a folder of yours (mode 0700), or "
                       "leave the key out and gpurun keeps the daemon's folders in the run folder",
                       gpurun_job_origin(job, key), key, shown, what);
        else
            gpurun_err(err, GPURUN_EXIT_CONFIG,
                       "%s=%s: the folder %s: an MPS pipe or log folder another user could change is never used (the "
                       "daemon there could be theirs); unset it, or name a folder of yours (mode 0700)",
                       names[i], shown, what);
        free(key);
        free(shown);
        return -1;
    }
    return 0;
}

static void safe_host(char *safe, size_t size, const char *host)
{
    snprintf(safe, size, "%s", host && *host ? host : "localhost");
    for (char *c = safe; *c; c++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_", *c))
            *c = '_';
}

/* A folder of the run, 0700 whatever it was made with. */
static int private_folder(int dirfd, const char *name, const char *shown, gpurun_error_t *err)
{
    int fd = gpurun_open_folder_at(dirfd, name, shown, "MPS folder", 0700, true, err);
    if (fd >= 0 && fchmod(fd, 0700) < 0) {
        gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot set its mode: %s", shown, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* In the child: the daemon's folders, output to the log, nothing else of
 * the guard's open, default signals. */
static void control_child(const struct gpurun_mps *m, int in_fd, int log_fd)
{
    setsid();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    setenv("CUDA_MPS_PIPE_DIRECTORY", m->pipe_dir, 1);
    setenv("CUDA_MPS_LOG_DIRECTORY", m->log_dir, 1);
    if (in_fd < 0)
        in_fd = open("/dev/null", O_RDONLY);
    if (in_fd < 0 || dup2(in_fd, 0) < 0 || (log_fd >= 0 && (dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0)))
        _exit(127);
    close_range(3, ~0U, 0);
}

static int open_log(const struct gpurun_mps *m)
{
    int dfd = open(m->log_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    int fd = openat(dfd, "gpurun-control.log", O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    close(dfd);
    return fd;
}

/* What a mkdtemp() pipe folder still holds (sockets the daemon left), then
 * the folder. */
static void remove_pipe_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0)
        close(fd);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlinkat(fd, e->d_name, 0);
    if (d)
        closedir(d);
    rmdir(dir);
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* poll()'s timeout for a deadline: 0 once it has passed. */
static int ms_until(double deadline)
{
    double d = deadline - mono_now();
    return d <= 0 ? 0 : d > 1e6 ? 1000000000 : (int)(d * 1000) + 1;
}

/* The guard: a process of its own session (gpurun's or a rank step's end
 * does not take it along) that runs the control program, and is the
 * subreaper of the daemon it forks, so the daemon's end is a child's exit
 * here.  It waits on descriptors only: its signals (a signalfd), the
 * listening socket, the planner's link and the ranks' connections. */
struct guard {
    const struct gpurun_mps *m;
    const char *control;
    int nlocal;                 /* the host's ranks, from its plan */
    int listen_fd, holder_fd, sig_fd;
    int *ranks;                 /* connections of ranks still running */
    size_t nranks, cap;
    int arrived;                /* ranks that ever connected */
    pid_t control_pid;          /* a control program running, or 0 */
    int control_status;
    bool daemon_ours;           /* the daemon is our descendant: its end is seen */
    bool no_children;
    int stop_signal;            /* SIGTERM, SIGINT or SIGHUP that came */
};

/* A host's ranks come within this of one another; once every rank that
 * came has gone, the guard waits this long for the rest before it quits. */
#define ARRIVE_WAIT_S 30
#define DAEMON_EXIT_WAIT_S 10
#define STATUS_WAIT_S (CONTROL_WAIT_S + SOCKET_WAIT_S + 10)

static void guard_reap(struct guard *g)
{
    for (;;) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p > 0) {
            if (p == g->control_pid) {
                g->control_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                g->control_pid = 0;
            }
            continue;
        }
        g->no_children = p < 0 && errno == ECHILD;
        return;
    }
}

static void guard_signals(struct guard *g)
{
    struct signalfd_siginfo si;
    while (read(g->sig_fd, &si, sizeof si) == (ssize_t)sizeof si)
        if (si.ssi_signo != SIGCHLD)
            g->stop_signal = (int)si.ssi_signo;
    guard_reap(g);
}

/* Run the control program with `arg` (NULL: none) and `input` on its
 * stdin (NULL: none): its exit status (128+N for a signal), or -1 when it
 * could not be run or had to be killed after CONTROL_WAIT_S. */
static int guard_control(struct guard *g, const char *arg, const char *input)
{
    int log_fd = open_log(g->m), in[2] = {-1, -1};
    if (input && pipe2(in, O_CLOEXEC) < 0) {
        if (log_fd >= 0)
            close(log_fd);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        control_child(g->m, in[0], log_fd);
        if (arg)
            execl(g->control, g->control, arg, (char *)NULL);
        else
            execl(g->control, g->control, (char *)NULL);
        _exit(127);
    }
    if (log_fd >= 0)
        close(log_fd);
    if (in[0] >= 0)
        close(in[0]);
    if (pid < 0) {
        if (in[1] >= 0)
            close(in[1]);
        return -1;
    }
    g->control_pid = pid;
    g->control_status = -1;
    if (input) { /* SIGPIPE is ignored here: a program that does not read cannot kill the guard */
        (void)gpurun_write_all(in[1], input, strlen(input));
        close(in[1]);
    }
    double deadline = mono_now() + CONTROL_WAIT_S;
    while (g->control_pid) {
        struct pollfd p = {.fd = g->sig_fd, .events = POLLIN};
        int n = poll(&p, 1, ms_until(deadline));
        if (n == 0) {
            kill(pid, SIGKILL);
            while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
            g->control_pid = 0;
            return -1;
        }
        if (n > 0)
            guard_signals(g);
    }
    return g->control_status;
}

/* Until the daemon's control socket is there (the program may return as
 * soon as it has forked the daemon), SOCKET_WAIT_S at most: woken by
 * inotify on the pipe folder, not by looking again and again. */
static void guard_wait_socket(const struct guard *g, int ino_fd)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/control", g->m->pipe_dir);
    double deadline = mono_now() + SOCKET_WAIT_S;
    while (ino_fd >= 0 && access(path, F_OK) < 0) {
        struct pollfd p = {.fd = ino_fd, .events = POLLIN};
        if (poll(&p, 1, ms_until(deadline)) <= 0)
            return;
        char events[4096];
        (void)!read(ino_fd, events, sizeof events);
    }
}

static void guard_say(const char *what, const struct guard *g)
{
    dprintf(STDERR_FILENO, "gpurun mps guard: %s (%d of %d ranks came, %zu still running)\n", what, g->arrived,
            g->nlocal, g->nranks);
}

/* Ranks connect, and hold their connection; the planner's link says 'q'
 * (quit now) or closes.  Returns when the daemon is to be quit; false when
 * it has ended by itself. */
static bool guard_watch(struct guard *g)
{
    double idle_since = -1; /* nobody holds the daemon, some ranks have not come */
    for (;;) {
        bool idle = g->holder_fd < 0 && g->nranks == 0;
        if (!idle)
            idle_since = -1;
        else if (idle_since < 0)
            idle_since = mono_now();
        if (g->stop_signal)
            return true;
        if (idle && (g->arrived >= g->nlocal || mono_now() >= idle_since + ARRIVE_WAIT_S))
            return true;
        if (g->daemon_ours && g->no_children)
            return false;
        size_t np = 3 + g->nranks;
        struct pollfd *pf = gpurun_xcalloc(np, sizeof *pf);
        pf[0] = (struct pollfd){.fd = g->sig_fd, .events = POLLIN};
        pf[1] = (struct pollfd){.fd = g->listen_fd, .events = POLLIN};
        pf[2] = (struct pollfd){.fd = g->holder_fd, .events = POLLIN}; /* -1: not polled */
        for (size_t i = 0; i < g->nranks; i++)
            pf[3 + i] = (struct pollfd){.fd = g->ranks[i], .events = POLLIN};
        int n = poll(pf, (nfds_t)np, idle ? ms_until(idle_since + ARRIVE_WAIT_S) : -1);
        if (n < 0 && errno != EINTR) {
            free(pf);
            return true;
        }
        if (n > 0 && pf[0].revents)
            guard_signals(g);
        for (size_t i = g->nranks; n > 0 && i-- > 0;) { /* a rank gone: its end of the connection closed */
            char buf[64];
            if (!pf[3 + i].revents)
                continue;
            ssize_t r = read(g->ranks[i], buf, sizeof buf);
            if (r > 0 || (r < 0 && (errno == EAGAIN || errno == EINTR)))
                continue;
            close(g->ranks[i]);
            g->ranks[i] = g->ranks[--g->nranks];
        }
        if (n > 0 && pf[2].revents) {
            char c;
            ssize_t r = read(g->holder_fd, &c, 1);
            if (r == 1 && c == 'q') {
                free(pf);
                return true;
            }
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                close(g->holder_fd);
                g->holder_fd = -1;
            }
        }
        for (int c; n > 0 && (pf[1].revents & POLLIN) &&
                    (c = accept4(g->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0;) {
            if (g->nranks == g->cap)
                g->ranks = gpurun_xrealloc(g->ranks, (g->cap = g->cap ? 2 * g->cap : 16) * sizeof *g->ranks);
            g->ranks[g->nranks++] = c;
            g->arrived++;
        }
        free(pf);
    }
}

static _Noreturn void guard_main(const struct gpurun_mps *m, const char *control, int nlocal, int listen_fd,
                                 int holder_fd, int status_fd)
{
    int log_fd = open_log(m), null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    int out = log_fd >= 0 ? log_fd : null_fd;
    if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
        _exit(1);
    /* Nothing else of the planner's stays open: a launcher's output pipe
     * held here would keep the launcher waiting. */
    int keep[3] = {listen_fd, holder_fd, status_fd}, lo = 3;
    for (int i = 0; i < 3; i++) /* keep[] ascending */
        for (int j = i + 1; j < 3; j++)
            if (keep[j] < keep[i]) {
                int t = keep[i];
                keep[i] = keep[j];
                keep[j] = t;
            }
    for (int i = 0; i < 3; i++) {
        if (keep[i] > lo)
            close_range((unsigned)lo, (unsigned)keep[i] - 1, 0);
        lo = keep[i] + 1;
    }
    close_range((unsigned)lo, ~0U, 0);
    signal(SIGPIPE, SIG_IGN);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    struct guard g = {.m = m, .control = control, .nlocal = nlocal, .listen_fd = listen_fd, .holder_fd = holder_fd};
    g.sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    prctl(PR_SET_NAME, "gpurun-mpsguard"); /* what ps shows, not gpurun's own name */
    fcntl(listen_fd, F_SETFL, O_NONBLOCK);
    fcntl(holder_fd, F_SETFL, O_NONBLOCK);
    int ino_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (ino_fd >= 0 && inotify_add_watch(ino_fd, m->pipe_dir, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR) < 0) {
        close(ino_fd);
        ino_fd = -1;
    }
    int st = g.sig_fd < 0 ? -1 : guard_control(&g, "-d", NULL);
    if (st != 0) {
        unlink(m->guard);
        dprintf(status_fd, "fail %d\n", st);
        _exit(1);
    }
    guard_reap(&g);
    g.daemon_ours = !g.no_children; /* else started elsewhere (not forked): its end is not seen */
    guard_wait_socket(&g, ino_fd);
    if (ino_fd >= 0)
        close(ino_fd);
    dprintf(status_fd, "ok\n");
    close(status_fd);
    if (!guard_watch(&g)) {
        guard_say("the daemon ended by itself", &g);
        if (g.holder_fd >= 0)
            dprintf(g.holder_fd, "gone\n");
        unlink(m->guard);
        if (m->tmp_pipe)
            remove_pipe_dir(m->pipe_dir);
        _exit(0);
    }
    guard_say(g.holder_fd >= 0 ? "asked to quit the daemon" : g.stop_signal ? "signalled: quitting the daemon"
                                                                             : "quitting the daemon",
              &g);
    st = guard_control(&g, NULL, "quit\n");
    /* The daemon's own end, so that once gpurun has the answer nothing of
     * it is left; bounded. */
    for (double until = mono_now() + DAEMON_EXIT_WAIT_S; st == 0 && g.daemon_ours && !g.no_children;) {
        struct pollfd p = {.fd = g.sig_fd, .events = POLLIN};
        if (poll(&p, 1, ms_until(until)) <= 0)
            break;
        guard_signals(&g);
    }
    if (g.holder_fd >= 0)
        dprintf(g.holder_fd, "quit %d\n", st);
    unlink(m->guard);
    if (m->tmp_pipe && st == 0)
        remove_pipe_dir(m->pipe_dir);
    _exit(0);
}

/* Read a line from fd, STATUS-like bounds: "" when none came in time. */
static void read_reply(int fd, char *buf, size_t size, double wait_s)
{
    size_t len = 0;
    double deadline = mono_now() + wait_s;
    while (len + 1 < size && !memchr(buf, '\n', len)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, ms_until(deadline));
        if (n < 0 && errno == EINTR)
            continue; /* gpurun notes SIGINT/SIGTERM while the daemon starts, and waits on */
        if (n <= 0)
            break;
        ssize_t r = read(fd, buf + len, size - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
}

/* The guard's socket, the guard (double fork: a session of its own, no
 * child of the planner), and its word on the daemon's start: 0, or -1
 * with why. */
static int start_guard(struct gpurun_mps *m, const char *control, int nlocal, char *why, size_t whylen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if ((size_t)snprintf(m->guard, sizeof m->guard, "%s/%s", m->pipe_dir, GPURUN_MPS_GUARD) >= sizeof sa.sun_path) {
        snprintf(why, whylen, "the socket path %s is too long", m->guard);
        m->guard[0] = '\0';
        return -1;
    }
    memcpy(sa.sun_path, m->guard, strlen(m->guard) + 1);
    int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), hold[2] = {-1, -1}, st[2] = {-1, -1};
    unlink(m->guard);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, SOMAXCONN) < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, hold) < 0 || pipe2(st, O_CLOEXEC) < 0) {
        snprintf(why, whylen, "cannot make the socket %s for its guard: %s", m->guard, strerror(errno));
        for (int *fd = (int[]){lfd, hold[0], hold[1], st[0], st[1]}, i = 0; i < 5; i++)
            if (fd[i] >= 0)
                close(fd[i]);
        unlink(m->guard);
        m->guard[0] = '\0';
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        setsid();
        pid_t g = fork();
        if (g == 0) {
            close(hold[0]);
            close(st[0]);
            guard_main(m, control, nlocal, lfd, hold[1], st[1]);
        }
        _exit(g < 0 ? 1 : 0);
    }
    close(lfd);
    close(hold[1]);
    close(st[1]);
    while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    char reply[64];
    read_reply(st[0], reply, sizeof reply, STATUS_WAIT_S);
    close(st[0]);
    int code = -1;
    if (!strcmp(reply, "ok\n")) {
        m->holder_fd = hold[0];
        return 0;
    }
    close(hold[0]);
    if (sscanf(reply, "fail %d", &code) == 1 && code > 0)
        snprintf(why, whylen, "%s -d failed with exit status %d; see %s/gpurun-control.log", control, code,
                 m->log_dir);
    else
        snprintf(why, whylen, "%s -d could not be run or did not return", control);
    unlink(m->guard);
    m->guard[0] = '\0';
    return -1;
}

static int not_done(struct gpurun_mps *m, enum gpurun_mps_mode mode, gpurun_error_t *err, const char *why)
{
    if (mode == GPURUN_MPS_ON)
        return gpurun_err(err, GPURUN_EXIT_ENV, "mps = \"on\", but %s", why);
    snprintf(m->note, sizeof m->note, "ranks share GPUs without CUDA MPS: %s", why);
    return 0;
}

/* Room in a socket address for the daemon's sockets in `dir`. */
static bool fits_sockets(const char *dir)
{
    struct sockaddr_un sa;
    return strlen(dir) + sizeof "/nvidia-server" + 16 < sizeof sa.sun_path;
}

int gpurun_mps_start(struct gpurun_mps *m, enum gpurun_mps_mode mode, int run_fd, const char *run_dir,
                     const char *host, int nlocal, gpurun_error_t *err)
{
    memset(m, 0, sizeof *m);
    m->holder_fd = -1;
    if (mode == GPURUN_MPS_OFF)
        return 0;
    char control[PATH_MAX], why[2 * PATH_MAX + 512], passed[PATH_MAX + 256];
    int running = gpurun_mps_running(m->pipe_dir, sizeof m->pipe_dir, passed, sizeof passed);
    if (running < 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s", passed);
    if (running > 0) {
        m->active = true;
        snprintf(m->note, sizeof m->note, "ranks use the CUDA MPS daemon already running (pipe folder %s)",
                 m->pipe_dir);
        return 0;
    }
    m->pipe_dir[0] = '\0';
    if (!gpurun_mps_find_control(control, sizeof control))
        return not_done(m, mode, err, GPURUN_MPS_CONTROL " is not on PATH (it comes with the NVIDIA driver)");

    char safe[256], name[300];
    safe_host(safe, sizeof safe, host);
    snprintf(name, sizeof name, "mps.%s", safe);
    char *shown = gpurun_xasprintf("%s/%s", run_dir, name);
    int mfd = private_folder(run_fd, name, shown, err);
    free(shown);
    if (mfd < 0)
        return mode == GPURUN_MPS_ON ? -1 : not_done(m, mode, err, err->text);
    snprintf(m->log_dir, sizeof m->log_dir, "%s/%s/log", run_dir, name);
    snprintf(m->pipe_dir, sizeof m->pipe_dir, "%s/%s/pipe", run_dir, name);
    int lfd = private_folder(mfd, "log", m->log_dir, err);
    if (lfd < 0)
        goto fail;
    close(lfd);
    if (fits_sockets(m->pipe_dir)) {
        int pfd = private_folder(mfd, "pipe", m->pipe_dir, err);
        if (pfd < 0)
            goto fail;
        close(pfd);
    } else {
        /* A socket path holds about 100 bytes: a deep run folder gets a
         * private folder of its own under $TMPDIR (mkdtemp: 0700), which
         * the guard removes after the quit. */
        const char *tmp = getenv("TMPDIR");
        snprintf(m->pipe_dir, sizeof m->pipe_dir, "%s/gpurun-mps-XXXXXX",
                 tmp && *tmp && strlen(tmp) < 60 ? tmp : "/tmp");
        if (!mkdtemp(m->pipe_dir)) {
            snprintf(why, sizeof why, "cannot make a pipe folder %s: %s", m->pipe_dir, strerror(errno));
            close(mfd);
            return not_done(m, mode, err, why);
        }
        m->tmp_pipe = true;
    }
    close(mfd);

    if (start_guard(m, control, nlocal, why, sizeof why) < 0) {
        if (m->tmp_pipe)
            rmdir(m->pipe_dir);
        m->tmp_pipe = false;
        return not_done(m, mode, err, why);
    }
    m->active = m->ours = true;
    snprintf(m->note, sizeof m->note, "CUDA MPS daemon started for the ranks sharing GPUs (pipe folder %s, log %s)%s%s",
             m->pipe_dir, m->log_dir, passed[0] ? "; " : "", passed);
    if (passed[0]) /* said, not only recorded: a daemon of the user's may be left unused */
        snprintf(m->warning, sizeof m->warning, "%s; this job's CUDA MPS daemon runs in %s instead", passed,
                 m->pipe_dir);
    return 0;
fail:
    close(mfd);
    return mode == GPURUN_MPS_ON ? -1 : not_done(m, mode, err, err->text);
}

void gpurun_mps_plan_add(const struct gpurun_mps *m, enum gpurun_mps_mode mode, json_t *plan)
{
    json_object_set_new(plan, "mps", gpurun_mps_json(m, mode));
    json_t *e;
    size_t i;
    json_array_foreach(json_object_get(plan, "ranks"), i, e)
    {
        if (!m->active || json_integer_value(json_object_get(e, "node")) != 0)
            continue;
        json_t *env = json_object_get(e, "env");
        if (!json_is_object(env))
            json_object_set_new(e, "env", env = json_object());
        json_object_set_new(env, "CUDA_MPS_PIPE_DIRECTORY", json_string(m->pipe_dir));
        if (m->log_dir[0])
            json_object_set_new(env, "CUDA_MPS_LOG_DIRECTORY", json_string(m->log_dir));
        if (m->guard[0])
            json_object_set_new(e, "mps_guard", json_string(m->guard));
    }
}

json_t *gpurun_mps_json(const struct gpurun_mps *m, enum gpurun_mps_mode mode)
{
    bool started = m->active && m->guard[0];
    return json_pack("{s:s, s:b, s:b, s:b, s:s?, s:s?, s:s}", "mode", gpurun_mps_mode_name(mode), "active",
                     m->active, "started", started, "user_daemon", m->active && !started, "pipe_dir",
                     m->active ? m->pipe_dir : NULL, "log_dir", m->active && m->log_dir[0] ? m->log_dir : NULL,
                     "note", m->note);
}

void gpurun_mps_release(struct gpurun_mps *m)
{
    if (m->ours && m->holder_fd >= 0)
        close(m->holder_fd);
    m->holder_fd = -1;
    m->ours = false;
}

int gpurun_mps_stop(struct gpurun_mps *m, gpurun_error_t *err)
{
    if (!m->ours)
        return 0;
    /* The guard quits it (one place that does, whoever asks) and answers
     * "quit STATUS", or "gone" when the daemon had ended by itself. */
    char reply[64] = "";
    int st = -1;
    if (send(m->holder_fd, "q", 1, MSG_NOSIGNAL) == 1 || errno == EPIPE)
        read_reply(m->holder_fd, reply, sizeof reply, CONTROL_WAIT_S + DAEMON_EXIT_WAIT_S + 5);
    gpurun_mps_release(m);
    if (!strcmp(reply, "gone\n"))
        st = 0;
    else if (sscanf(reply, "quit %d", &st) != 1)
        st = -1;
    if (st != 0)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "the CUDA MPS daemon of this job may still run: '%s' with \"quit\" %s; stop it with: echo "
                          "quit | CUDA_MPS_PIPE_DIRECTORY=%s %s",
                          GPURUN_MPS_CONTROL, st < 0 ? "could not be run or did not return" : "failed",
                          m->pipe_dir, GPURUN_MPS_CONTROL);
    return 0;
}
