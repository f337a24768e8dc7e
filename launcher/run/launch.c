/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch.h"
#include "rank.h"
#include "safefile.h"
#include "say.h"
#include "stall.h"
#include "util.h"
#include "watch.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sigset_supervised(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGCHLD);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
}

#define RELAY_KILL_S 5.0 /* after a relayed stop's grace: the launcher's own stop, then SIGKILL */

/* A stop asked for (SIGINT, SIGTERM, SIGHUP) while gpurun was between the
 * windows that wait for signals (making the run folder, writing inputs,
 * collecting, writing the record): the first one, 0 for none. */
static volatile sig_atomic_t stop_sig;

static void note_stop(int sig)
{
    if (!stop_sig)
        stop_sig = sig;
}

void gpurun_stop_signals(bool catch, struct sigaction old[3])
{
    static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = note_stop;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], catch ? &sa : &old[i], catch ? &old[i] : NULL);
    if (catch)
        stop_sig = 0;
}

int gpurun_stop_signal(void)
{
    return stop_sig;
}

/* In a window that waits for signals (blocked, read with sigwaitinfo or a
 * signalfd): a stop noted before it is raised again, to be read there. */
static void replay_stop(void)
{
    if (stop_sig)
        raise(stop_sig);
}

/* In the child, between fork and exec: its own process group (so that one
 * kill reaches all it starts), death with gpurun, and a clean signal state. */
static void child_setup(pid_t parent, int cwd_fd, const char *cwd, const sigset_t *oldmask, int out_fd)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(143);
    if (cwd_fd >= 0 && fchdir(cwd_fd) < 0) {
        dprintf(out_fd >= 0 ? out_fd : STDERR_FILENO, "gpurun: cannot enter %s: %s\n", cwd, strerror(errno));
        _exit(126);
    }
    if (out_fd >= 0) {
        dup2(out_fd, STDOUT_FILENO);
        dup2(out_fd, STDERR_FILENO);
    }
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        close(null);
    }
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, oldmask, NULL);
}

static int exit_status(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int gpurun_run_step(char *const *argv, int cwd_fd, const char *cwd, int fd, gpurun_error_t *err)
{
    sigset_t set, old;
    sigset_supervised(&set);
    sigprocmask(SIG_BLOCK, &set, &old);
    replay_stop();
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) {
        child_setup(parent, cwd_fd, cwd, &old, fd);
        execvp(argv[0], argv);
        dprintf(STDERR_FILENO, "gpurun: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status = 0, rc;
    if (pid < 0) {
        rc = gpurun_err(err, GPURUN_EXIT_ENV, "cannot start %s: %s", argv[0], strerror(errno));
    } else {
        /* A setup step obeys Ctrl-C like the ranks do. */
        for (;;) {
            siginfo_t info;
            int sig = sigwaitinfo(&set, &info);
            if (sig == SIGCHLD && waitpid(pid, &status, WNOHANG) == pid)
                break;
            if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
                note_stop(sig);
                kill(-pid, sig);
            }
        }
        rc = exit_status(status);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}

pid_t gpurun_start_service(char *const *argv, int cwd_fd, const char *cwd, int log_fd, int *out_fd,
                           gpurun_error_t *err)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        gpurun_err(err, GPURUN_EXIT_ENV, "cannot start %s: pipe: %s", argv[0], strerror(errno));
        return -1;
    }
    sigset_t set, old;
    sigset_supervised(&set);
    sigprocmask(SIG_BLOCK, &set, &old);
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) {
        sigset_t none; /* whatever the caller blocks, it must hear SIGTERM */
        sigemptyset(&none);
        child_setup(parent, cwd_fd, cwd, &none, log_fd);
        dup2(p[1], STDOUT_FILENO); /* its answers; its chatter goes to the log */
        execvp(argv[0], argv);
        dprintf(STDERR_FILENO, "gpurun: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int e = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        gpurun_err(err, GPURUN_EXIT_ENV, "cannot start %s: %s", argv[0], strerror(e));
        return -1;
    }
    *out_fd = p[0];
    return pid;
}

int gpurun_stop_service(pid_t pid, double grace_s)
{
    if (pid <= 0)
        return 0;
    kill(-pid, SIGTERM);
    kill(pid, SIGTERM);
    int status = 0;
    double until = now_s() + grace_s;
    pid_t got;
    while ((got = waitpid(pid, &status, WNOHANG)) == 0 && now_s() < until) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (got == 0) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        while ((got = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
            ;
    }
    return got == pid ? exit_status(status) : -1;
}

/* What comes through the launcher's standard output: the rank steps'
 * reports (GPURUN_MARK lines: bindings, statuses, output for a terminal)
 * and the launcher's own text, which goes to launcher.out. */
struct reader {
    const struct gpurun_supervise *sv;
    struct gpurun_outcome *out;
    int log_fd;
    char buf[65536];
    size_t len;
    bool *status_shown;
};

static void clear_status(struct reader *r)
{
    if (*r->status_shown) {
        gpurun_say(stdout, "\r\033[K");
        *r->status_shown = false;
    }
}

static void take_line(struct reader *r, char *line, size_t len)
{
    size_t ml = strlen(GPURUN_MARK);
    char *end;
    if (len > ml + 2 && !memcmp(line, GPURUN_MARK, ml) && line[ml + 1] == ' ') {
        char kind = line[ml];
        line[len] = '\0';
        long rank = strtol(line + ml + 2, &end, 10);
        if (end != line + ml + 2 && *end == ' ' && rank >= 0 && rank < r->sv->nranks) {
            const char *payload = end + 1;
            size_t plen = len - (size_t)(payload - line);
            json_t *slot = kind == 'B'   ? r->out->bindings
                           : kind == 'S' ? r->out->statuses
                           : kind == 'T' ? r->out->stops
                                         : NULL;
            if (slot && json_is_null(json_array_get(slot, (size_t)rank))) {
                json_t *doc = json_loadb(payload, plen, 0, NULL);
                if (json_is_object(doc)) {
                    json_array_set_new(slot, (size_t)rank, doc);
                    if (kind == 'B')
                        r->out->nbound++;
                    else if (kind == 'S')
                        r->out->nended++;
                } else {
                    json_decref(doc);
                }
            } else if (kind == 'H') {
                json_t *doc = json_loadb(payload, plen, 0, NULL);
                gpurun_stall_take(r->sv->stall, (int)rank, doc);
                json_decref(doc);
            } else if (kind == 'O' && r->sv->relay_output) {
                clear_status(r);
                gpurun_say(stdout, "[%ld] %.*s\n", rank, (int)plen, payload);
            }
            if (kind == 'O' && rank == 0)
                gpurun_watch_line(r->sv->watch, payload, plen, now_s());
            else if (kind == 'C')
                gpurun_watch_conditions(r->sv->watch, payload, plen);
            if (kind == 'O')
                gpurun_watch_output(r->sv->watch, now_s());
            return;
        }
    }
    if (r->log_fd >= 0) {
        line[len] = '\n';
        if (write(r->log_fd, line, len + 1) < 0) { /* launcher.out is best effort */
        }
    }
}

/* Read what is there; at EOF (`flush`), a last line without newline too.
 * Returns false at end of file. */
static bool read_pipe(struct reader *r, int fd, bool flush)
{
    ssize_t n = read(fd, r->buf + r->len, sizeof r->buf - 1 - r->len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return true;
    bool eof = n <= 0;
    if (!eof)
        r->len += (size_t)n;
    size_t start = 0;
    for (;;) {
        char *nl = memchr(r->buf + start, '\n', r->len - start);
        size_t ll;
        if (nl)
            ll = (size_t)(nl - (r->buf + start));
        else if (((eof || flush) && r->len > start) || (start == 0 && r->len == sizeof r->buf - 1))
            ll = r->len - start;
        else
            break;
        take_line(r, r->buf + start, ll);
        start += ll + (nl ? 1 : 0);
    }
    memmove(r->buf, r->buf + start, r->len - start);
    r->len -= start;
    return !eof;
}

/* `extra` ("NAME=VALUE") over the environment, as putenv would: a new
 * vector of pointers, the strings not copied. */
static char **env_with(char *const *extra)
{
    extern char **environ;
    size_t n = 0, k = 0;
    while (environ[n])
        n++;
    for (char *const *e = extra; e && *e; e++)
        k++;
    char **env = gpurun_xcalloc(n + k + 1, sizeof *env);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        bool over = false;
        for (char *const *e = extra; e && *e && !over; e++) {
            size_t nl = strcspn(*e, "=");
            over = !strncmp(environ[i], *e, nl) && environ[i][nl] == '=';
        }
        if (!over)
            env[m++] = environ[i];
    }
    for (char *const *e = extra; e && *e; e++)
        env[m++] = *e;
    return env;
}

/* A rank step that guards itself against gpurun's death (the local
 * launcher's: GPURUN_LAUNCH_PARENT) starts without a copy of gpurun's
 * address space (posix_spawn: vfork and exec), as child_setup would set it
 * up but for the death signal, which it sets itself: with 1,024 ranks,
 * copying and tearing down gpurun's mappings per rank is most of what
 * gpurun itself adds.  -1 when it cannot: fork then. */
static pid_t spawn_rank_step(char *const *argv, char *const *extra, int cwd_fd, const sigset_t *oldmask,
                             int log_fd, int pipe_fd, int in_fd)
{
    bool guarded = false;
    for (char *const *e = extra; e && *e; e++)
        guarded = guarded || !strncmp(*e, "GPURUN_LAUNCH_PARENT=", 21);
    if (!guarded)
        return -1;
    posix_spawnattr_t at;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_init(&fa);
    sigset_t dfl;
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    posix_spawnattr_setsigdefault(&at, &dfl);
    posix_spawnattr_setsigmask(&at, oldmask);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (cwd_fd >= 0)
        posix_spawn_file_actions_addfchdir_np(&fa, cwd_fd);
    if (log_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, log_fd, STDERR_FILENO);
    posix_spawn_file_actions_adddup2(&fa, pipe_fd, STDOUT_FILENO);
    if (in_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, in_fd, STDIN_FILENO);
    else
        posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    char **env = env_with(extra);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, env);
    free(env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    return rc == 0 ? pid : -1;
}

/* What gpurun_launch() keeps while the launchers run. */
struct launch {
    const struct gpurun_launch_cmds *cmds;
    const struct gpurun_supervise *sv;
    struct gpurun_outcome *out;
    int n; /* launchers */
    pid_t *pids;
    bool *alive;
    int nalive;
    int logfd;  /* launcher.out, or -1 */
    int pfd[2]; /* the pipe the rank steps report through */
    int ask[2]; /* the launchers' standard input, gpurun asks a stall there (stall_ask_stdin); -1 */
    int sfd;    /* a signalfd of the supervised signals, or -1 */
    sigset_t set, old;
    double t0;
    bool stopping;  /* the launchers were told to stop... */
    bool relaying;  /* ...through their relayed signal, their own stop still to come */
    double kill_at; /* ...and get SIGKILL after this */
    double last_status;
    bool status_shown;
    bool pipe_open;
    struct reader *rd;
    char stall_said[512]; /* what status.json says of a stall: written when it changes */
};

/* An outcome with a null binding and status for each rank, to be filled
 * in from what the rank steps report. */
static void outcome_init(struct gpurun_outcome *out, int nranks)
{
    memset(out, 0, sizeof *out);
    out->bindings = json_array();
    out->statuses = json_array();
    out->stops = json_array();
    for (int i = 0; i < nranks; i++) {
        json_array_append_new(out->bindings, json_null());
        json_array_append_new(out->statuses, json_null());
        json_array_append_new(out->stops, json_null());
    }
}

/* Starts the launchers, each in its own process group, until one cannot
 * start; returns how many did. */
static int start_launchers(struct launch *L)
{
    const struct gpurun_launch_cmds *cmds = L->cmds;
    int started = 0;
    pid_t parent = getpid();
    for (int i = 0; i < L->n; i++) {
        pid_t pid = spawn_rank_step(cmds->argv[i], cmds->env[i], L->sv->dir_fd, &L->old, L->logfd, L->pfd[1],
                                    L->ask[0]);
        if (pid < 0)
            pid = fork();
        if (pid == 0) {
            child_setup(parent, L->sv->dir_fd, L->sv->run_dir, &L->old, L->logfd);
            dup2(L->pfd[1], STDOUT_FILENO); /* the rank steps' reports come to us */
            if (L->ask[0] >= 0)
                dup2(L->ask[0], STDIN_FILENO);
            for (char **e = cmds->env[i]; e && *e; e++)
                putenv(*e);
            execvp(cmds->argv[i][0], cmds->argv[i]);
            dprintf(STDERR_FILENO, "gpurun: cannot run %s: %s\n", cmds->argv[i][0], strerror(errno));
            _exit(127);
        }
        if (pid < 0)
            break;
        setpgid(pid, pid); /* also here: no race with a signal sent right after fork */
        L->pids[i] = pid;
        L->alive[i] = true;
        started++;
    }
    return started;
}

static void signal_alive(struct launch *L, int sig)
{
    for (int j = 0; j < L->n; j++)
        if (L->alive[j])
            kill(-L->pids[j], sig);
}

/* Sends `sig` to the launchers still alive; the first time, SIGKILL is
 * due after the grace period.  A clean stop (Ctrl-C, SIGTERM, the timeout)
 * through a launcher that relays a signal (plugins/launcher.h): that one
 * first, the launcher's own stop (SIGTERM) when the grace is over, then
 * SIGKILL RELAY_KILL_S later. */
static void stop_launchers(struct launch *L, double t, int sig, bool clean)
{
    if (!L->stopping) {
        L->stopping = true;
        L->kill_at = t + L->sv->grace_s;
        if (clean && L->cmds->stop_relay > 0) {
            L->relaying = true;
            sig = L->cmds->stop_relay;
        }
    } else if (L->relaying) {
        sig = L->cmds->stop_relay; /* a second Ctrl-C: again, through the launcher */
    }
    signal_alive(L, sig);
}

/* The grace is over: SIGKILL, or first the launcher's own stop when the
 * stop went through a relayed signal. */
static void grace_over(struct launch *L, double t)
{
    if (L->relaying) {
        L->relaying = false;
        L->kill_at = t + RELAY_KILL_S;
        signal_alive(L, SIGTERM);
        return;
    }
    L->out->killed = true;
    signal_alive(L, SIGKILL);
}

/* How long poll() may wait: until the timeout, the SIGKILL or the next
 * status line, and a second at most. */
static int poll_wait_ms(const struct launch *L, double t)
{
    const struct gpurun_supervise *sv = L->sv;
    double next = t + 1.0;
    if (sv->timeout_s > 0 && !L->stopping)
        next = L->t0 + sv->timeout_s < next ? L->t0 + sv->timeout_s : next;
    if (L->stopping && L->kill_at < next)
        next = L->kill_at;
    if (sv->status_line && L->last_status + 0.5 < next)
        next = L->last_status + 0.5;
    if (sv->watch && gpurun_watch_next(sv->watch) < next)
        next = gpurun_watch_next(sv->watch);
    int wait_ms = next > t ? (int)((next - t) * 1000) + 1 : 0;
    return L->sfd >= 0 ? wait_ms : (wait_ms < 100 ? wait_ms : 100);
}

/* Ctrl-C, SIGTERM and SIGHUP go on to the launchers' process groups
 * (SIGHUP as SIGTERM); the first one is the outcome's. */
static void forward_signals(struct launch *L, double t)
{
    struct signalfd_siginfo si;
    while (L->sfd >= 0 && read(L->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
            note_stop(sig);
            if (!L->out->interrupted)
                L->out->interrupted = sig;
            /* the template's stop signal: what lets its program stop cleanly */
            stop_launchers(L, t, L->sv->stop_signal > 0 ? L->sv->stop_signal : sig == SIGHUP ? SIGTERM : sig, true);
        }
    }
}

static void reap_launchers(struct launch *L, double t)
{
    for (int i = 0; i < L->n; i++) {
        int status;
        if (!L->alive[i] || waitpid(L->pids[i], &status, WNOHANG) != L->pids[i])
            continue;
        L->alive[i] = false;
        L->nalive--;
        int code = exit_status(status);
        if (code > L->out->launcher_status)
            L->out->launcher_status = code;
        /* One failure ends the job, as mpirun and srun do. */
        if (code != 0 && L->nalive > 0 && !L->stopping)
            stop_launchers(L, t, SIGTERM, false);
    }
}

/* The status line on the terminal: elapsed time, ranks alive, progress
 * (step k of N, percent, ETA, the running figure); cut to the terminal's
 * width, so that it never wraps (a wrapped line is not cleared by \r). */
static void show_status(struct launch *L, double t)
{
    int el = (int)(t - L->t0);
    char line[512], progress[256];
    int n = snprintf(line, sizeof line, "[gpurun] %02d:%02d:%02d  ranks alive %d/%d", el / 3600, el / 60 % 60,
                     el % 60, L->out->nbound - L->out->nended, L->sv->nranks);
    if (gpurun_watch_status(L->sv->watch, t, progress, sizeof progress))
        n += snprintf(line + n, sizeof line - (size_t)n, "  %s", progress);
    if (L->stopping)
        snprintf(line + n, sizeof line - (size_t)n, "  stopping");
    struct winsize ws;
    int width = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col - 1 : (int)sizeof line - 1;
    gpurun_say(stdout, "\r\033[K%.*s", width, line);
    L->status_shown = true;
    L->last_status = t;
}

/* A stall (stall.h): found from the watch's progress, the rank steps
 * asked through the launcher's relayed signal, the run stopped with the
 * stop machinery when on_stall = "kill". */
static void stall_tick(struct launch *L, double t)
{
    const struct gpurun_supervise *sv = L->sv;
    if (!sv->stall || L->stopping)
        return;
    double gap;
    char at[96];
    double moved = gpurun_watch_moved(sv->watch, &gap, at, sizeof at);
    enum gpurun_stall_action act = gpurun_stall_tick(sv->stall, t, moved, gap, L->out->statuses, at);
    const char *verdict;
    bool now = gpurun_stall_now(sv->stall, &verdict);
    const char *said = now ? (verdict ? verdict : "stalled: asking the ranks where they are") : "";
    if (strcmp(said, L->stall_said)) {
        snprintf(L->stall_said, sizeof L->stall_said, "%s", said);
        gpurun_watch_stalled(sv->watch, now ? said : NULL);
    }
    if (act == GPURUN_STALL_ASK && L->ask[1] >= 0) {
        /* A line: flux run passes its input on a line at a time. */
        ssize_t w = send(L->ask[1], "?\n", 2, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)w;
    } else if (act == GPURUN_STALL_ASK && L->cmds->stall_relay > 0)
        for (int j = 0; j < L->n; j++)
            if (L->alive[j])
                kill(L->pids[j], L->cmds->stall_relay); /* the launcher itself: it passes it on */
    if (act == GPURUN_STALL_KILL) {
        L->out->stalled = true;
        stop_launchers(L, t, sv->stop_signal > 0 ? sv->stop_signal : SIGTERM, true);
    }
}

/* Wait on the pipe, the signals and the children only: nothing of the
 * run folder is looked at while the ranks run but what the watch looks at,
 * at most once per its interval (watch.h). */
static void supervise_launchers(struct launch *L)
{
    const struct gpurun_supervise *sv = L->sv;
    while (L->nalive > 0) {
        int wait_ms = poll_wait_ms(L, now_s());
        struct pollfd pf[2] = {{.fd = L->pipe_open ? L->pfd[0] : -1, .events = POLLIN},
                               {.fd = L->sfd, .events = POLLIN}};
        int pr = poll(pf, 2, wait_ms);
        double t = now_s();
        if (pr > 0 && (pf[0].revents & (POLLIN | POLLHUP)))
            L->pipe_open = read_pipe(L->rd, L->pfd[0], false);
        forward_signals(L, t);
        /* Children are reaped whatever woke us: a SIGCHLD may be merged. */
        reap_launchers(L, t);
        if (!L->stopping && sv->timeout_s > 0 && t - L->t0 > sv->timeout_s) {
            L->out->timed_out = true;
            stop_launchers(L, t, L->sv->stop_signal > 0 ? L->sv->stop_signal : SIGTERM, true);
        }
        if (L->stopping && t > L->kill_at && L->nalive > 0)
            grace_over(L, t);
        gpurun_watch_tick(sv->watch, t, L->out->bindings, L->out->nbound - L->out->nended);
        stall_tick(L, t);
        if (sv->status_line && t - L->last_status >= 0.5 && L->nalive > 0)
            show_status(L, t);
    }
}

/* Whatever a launcher left in its process group goes with it; what
 * the rank steps said before is still in the pipe. */
static void drain_pipe(struct launch *L)
{
    struct reader *rd = L->rd;
    for (int j = 0; j < L->n; j++)
        kill(-L->pids[j], SIGKILL);
    fcntl(L->pfd[0], F_SETFL, O_NONBLOCK);
    while (L->pipe_open) {
        size_t before = rd->len;
        ssize_t avail = 0;
        L->pipe_open = read_pipe(rd, L->pfd[0], false);
        if (L->pipe_open && rd->len == before && (ioctl(L->pfd[0], FIONREAD, &avail) < 0 || avail == 0))
            break; /* nothing more now: a process that outlived its group holds the pipe */
    }
    if (rd->len)
        read_pipe(rd, L->pfd[0], true);
    close(L->pfd[0]);
    if (L->status_shown)
        gpurun_say(stdout, "\r\033[K");
}

int gpurun_launch(const struct gpurun_launch_cmds *cmds, const struct gpurun_supervise *sv,
                  struct gpurun_outcome *out, gpurun_error_t *err)
{
    outcome_init(out, sv->nranks);
    struct launch L = {.cmds = cmds, .sv = sv, .out = out, .n = cmds->count, .pipe_open = true, .ask = {-1, -1}};
    if (sv->stall && cmds->stall_ask_stdin && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, L.ask) < 0)
        L.ask[0] = L.ask[1] = -1; /* the stall is still found and said, not sampled */
    L.pids = gpurun_xcalloc((size_t)L.n, sizeof *L.pids);
    L.alive = gpurun_xcalloc((size_t)L.n, sizeof *L.alive);
    L.logfd = gpurun_create_at(sv->dir_fd, GPURUN_RUN_LAUNCHER_OUT, O_WRONLY | O_APPEND, sv->file_mode);
    if (pipe2(L.pfd, O_CLOEXEC) < 0) {
        if (L.logfd >= 0)
            close(L.logfd);
        free(L.pids);
        free(L.alive);
        return gpurun_err(err, GPURUN_EXIT_ENV, "cannot make a pipe: %s", strerror(errno));
    }
    sigset_supervised(&L.set);
    sigprocmask(SIG_BLOCK, &L.set, &L.old);
    L.sfd = signalfd(-1, &L.set, SFD_CLOEXEC | SFD_NONBLOCK);
    replay_stop();
    L.t0 = now_s();
    int started = start_launchers(&L);
    close(L.pfd[1]);
    if (L.ask[0] >= 0)
        close(L.ask[0]);
    if (started == 0) {
        close(L.pfd[0]);
        if (L.ask[1] >= 0)
            close(L.ask[1]);
        if (L.sfd >= 0)
            close(L.sfd);
        if (L.logfd >= 0)
            close(L.logfd);
        sigprocmask(SIG_SETMASK, &L.old, NULL);
        free(L.pids);
        free(L.alive);
        return gpurun_err(err, GPURUN_EXIT_ENV, "could not start %s: %s", cmds->argv[0][0], strerror(errno));
    }

    L.rd = gpurun_xcalloc(1, sizeof *L.rd);
    L.rd->sv = sv;
    L.rd->out = out;
    L.rd->log_fd = L.logfd;
    L.rd->status_shown = &L.status_shown;
    L.nalive = started;
    supervise_launchers(&L);
    if (L.ask[1] >= 0)
        close(L.ask[1]);
    drain_pipe(&L);
    if (L.logfd >= 0)
        close(L.logfd);
    if (L.sfd >= 0)
        close(L.sfd);
    free(L.rd);
    /* A stop that came in the meantime is the caller's to see (noted);
     * SIGCHLD is dropped.  One the outcome holds already was handled here. */
    struct timespec zero = {0, 0};
    for (int sig; (sig = sigtimedwait(&L.set, NULL, &zero)) > 0;)
        if (sig != SIGCHLD)
            note_stop(sig);
    if (out->interrupted)
        stop_sig = 0;
    sigprocmask(SIG_SETMASK, &L.old, NULL);
    out->wall_s = now_s() - L.t0;
    free(L.pids);
    free(L.alive);
    return 0;
}
