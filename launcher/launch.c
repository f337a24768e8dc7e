/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch.h"
#include "rank.h"
#include "util.h"

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

/* In the child, between fork and exec: its own process group (so that one
 * kill reaches all it starts), death with gpurun, and a clean signal state. */
static void child_setup(pid_t parent, const char *cwd, const sigset_t *oldmask, int out_fd)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(143);
    if (cwd && chdir(cwd) < 0) {
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

int gpurun_run_step(char *const *argv, const char *cwd, int fd, gpurun_error_t *err)
{
    sigset_t set, old;
    sigset_supervised(&set);
    sigprocmask(SIG_BLOCK, &set, &old);
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) {
        child_setup(parent, cwd, &old, fd);
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
            if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP)
                kill(-pid, sig);
        }
        rc = exit_status(status);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* Rank output, relayed to a terminal line by line with a [rank] label. */
struct relay {
    int fd;
    char buf[4096];
    size_t len;
};

static int open_rank_file(int dfd, int rank, const char *what)
{
    char name[64];
    snprintf(name, sizeof name, "rank.%d.%s", rank, what);
    return openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
}

static void relay_poll(struct relay *r, int nranks, int dfd, bool *status_shown, bool flush_all)
{
    for (int i = 0; i < nranks; i++) {
        if (r[i].fd < 0) {
            r[i].fd = open_rank_file(dfd, i, "out");
            if (r[i].fd < 0)
                continue;
        }
        for (;;) {
            ssize_t n = read(r[i].fd, r[i].buf + r[i].len, sizeof r[i].buf - 1 - r[i].len);
            if (n <= 0)
                break;
            r[i].len += (size_t)n;
            char *start = r[i].buf, *nl;
            while ((nl = memchr(start, '\n', r[i].len - (size_t)(start - r[i].buf)))) {
                if (*status_shown) {
                    fputs("\r\033[K", stdout);
                    *status_shown = false;
                }
                printf("[%d] %.*s\n", i, (int)(nl - start), start);
                start = nl + 1;
            }
            r[i].len -= (size_t)(start - r[i].buf);
            memmove(r[i].buf, start, r[i].len);
            if (r[i].len == sizeof r[i].buf - 1) { /* a very long line: show what we have */
                printf("[%d] %.*s\n", i, (int)r[i].len, r[i].buf);
                r[i].len = 0;
            }
        }
        if (flush_all && r[i].len) {
            printf("[%d] %.*s\n", i, (int)r[i].len, r[i].buf);
            r[i].len = 0;
        }
    }
    fflush(stdout);
}

static int count_rank_files(int dfd, int nranks, const char *what)
{
    int n = 0;
    for (int i = 0; i < nranks; i++) {
        char name[64];
        snprintf(name, sizeof name, "rank.%d.%s", i, what);
        n += faccessat(dfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
    }
    return n;
}

/* The last step number the template's progress pattern finds in rank 0's output. */
static long progress_step(int dfd, const regex_t *re)
{
    int fd = open_rank_file(dfd, 0, "out");
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    long step = -1;
    char line[1024];
    regmatch_t m[2];
    if (fseek(f, -65536, SEEK_END) < 0)
        rewind(f);
    while (fgets(line, sizeof line, f))
        if (regexec(re, line, 2, m, 0) == 0 && m[1].rm_so >= 0)
            step = strtol(line + m[1].rm_so, NULL, 10);
    fclose(f);
    return step;
}

int gpurun_launch(const struct gpurun_launch_cmds *cmds, const struct gpurun_supervise *sv,
                  struct gpurun_outcome *out, gpurun_error_t *err)
{
    memset(out, 0, sizeof *out);
    int n = cmds->count;
    pid_t *pids = gpurun_xcalloc((size_t)n, sizeof *pids);
    bool *alive = gpurun_xcalloc((size_t)n, sizeof *alive);
    int logfd = openat(sv->dir_fd, "launcher.out", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC,
                       sv->file_mode);
    sigset_t set, old;
    sigset_supervised(&set);
    sigprocmask(SIG_BLOCK, &set, &old);
    double t0 = now_s();
    int started = 0;
    pid_t parent = getpid();
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            child_setup(parent, sv->cwd, &old, logfd);
            for (char **e = cmds->env[i]; e && *e; e++)
                putenv(*e);
            execvp(cmds->argv[i][0], cmds->argv[i]);
            dprintf(STDERR_FILENO, "gpurun: cannot run %s: %s\n", cmds->argv[i][0], strerror(errno));
            _exit(127);
        }
        if (pid < 0)
            break;
        setpgid(pid, pid); /* also here: no race with a signal sent right after fork */
        pids[i] = pid;
        alive[i] = true;
        started++;
    }
    if (logfd >= 0)
        close(logfd);
    if (started == 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        free(pids);
        free(alive);
        return gpurun_err(err, GPURUN_EXIT_ENV, "could not start %s: %s", cmds->argv[0][0], strerror(errno));
    }

    regex_t re;
    bool have_re = sv->progress_regex && regcomp(&re, sv->progress_regex, REG_EXTENDED) == 0;
    struct relay *relay = gpurun_xcalloc((size_t)sv->nranks, sizeof *relay);
    for (int i = 0; i < sv->nranks; i++)
        relay[i].fd = -1;
    bool stopping = false, status_shown = false;
    double kill_at = 0, last_status = 0;
    int nalive = started;
    while (nalive > 0) {
        struct timespec tick = {0, 100 * 1000 * 1000};
        siginfo_t info;
        int sig = sigtimedwait(&set, &info, &tick);
        double t = now_s();
        if (sig == SIGCHLD || sig < 0) {
            for (int i = 0; i < n; i++) {
                int status;
                if (!alive[i] || waitpid(pids[i], &status, WNOHANG) != pids[i])
                    continue;
                alive[i] = false;
                nalive--;
                int code = exit_status(status);
                if (code > out->launcher_status)
                    out->launcher_status = code;
                /* One failure ends the job, as mpirun and srun do. */
                if (code != 0 && nalive > 0 && !stopping) {
                    stopping = true;
                    kill_at = t + sv->grace_s;
                    for (int j = 0; j < n; j++)
                        if (alive[j])
                            kill(-pids[j], SIGTERM);
                }
            }
        } else if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
            if (!out->interrupted)
                out->interrupted = sig;
            if (!stopping) {
                stopping = true;
                kill_at = t + sv->grace_s;
            }
            for (int j = 0; j < n; j++)
                if (alive[j])
                    kill(-pids[j], sig == SIGHUP ? SIGTERM : sig);
        }
        if (!stopping && sv->timeout_s > 0 && t - t0 > sv->timeout_s) {
            out->timed_out = true;
            stopping = true;
            kill_at = t + sv->grace_s;
            for (int j = 0; j < n; j++)
                if (alive[j])
                    kill(-pids[j], SIGTERM);
        }
        if (stopping && t > kill_at)
            for (int j = 0; j < n; j++)
                if (alive[j])
                    kill(-pids[j], SIGKILL);
        if (sv->relay_output)
            relay_poll(relay, sv->nranks, sv->dir_fd, &status_shown, false);
        if (sv->status_line && t - last_status > 0.5 && nalive > 0) {
            int up = count_rank_files(sv->dir_fd, sv->nranks, "binding.json");
            int done = count_rank_files(sv->dir_fd, sv->nranks, "status.json");
            long step = have_re ? progress_step(sv->dir_fd, &re) : -1;
            int el = (int)(t - t0);
            printf("\r\033[K[gpurun] %02d:%02d:%02d  ranks alive %d/%d", el / 3600, el / 60 % 60, el % 60, up - done,
                   sv->nranks);
            if (step >= 0)
                printf("  step %ld", step);
            if (stopping)
                printf("  stopping");
            fflush(stdout);
            status_shown = true;
            last_status = t;
        }
    }
    if (sv->relay_output)
        relay_poll(relay, sv->nranks, sv->dir_fd, &status_shown, true);
    if (status_shown) {
        fputs("\r\033[K", stdout);
        fflush(stdout);
    }
    /* Whatever a launcher left in its process group goes with it. */
    for (int j = 0; j < n; j++)
        kill(-pids[j], SIGKILL);
    for (int i = 0; i < sv->nranks; i++)
        if (relay[i].fd >= 0)
            close(relay[i].fd);
    free(relay);
    if (have_re)
        regfree(&re);
    /* Signals that came in the meantime are the caller's to see; drop them. */
    struct timespec zero = {0, 0};
    while (sigtimedwait(&set, NULL, &zero) > 0)
        ;
    sigprocmask(SIG_SETMASK, &old, NULL);
    out->wall_s = now_s() - t0;
    free(pids);
    free(alive);
    return 0;
}
