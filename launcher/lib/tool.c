/* SPDX-License-Identifier: BSD-3-Clause */
/* The one bounded tool runner (tool.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"
#include "util.h"

#define TOOL_TIMEOUT_S 10.0

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The child, between fork and exec: async-signal-safe calls only.  exec's
 * errno goes back through `errfd` (closed unwritten when exec works). */
static void child(const struct gpurun_tool *t, const char *path, int outfd, int errfd)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL); /* the caller may have blocked some */
    signal(SIGPIPE, SIG_DFL);               /* nor what it ignores */
    if (t->timeout_s > 0)
        setpgid(0, 0); /* a group of its own, killed whole at the limit */
    int in = t->stdin_fd >= 0 ? t->stdin_fd : open("/dev/null", O_RDONLY);
    if (in >= 0 && in != STDIN_FILENO)
        dup2(in, STDIN_FILENO);
    dup2(outfd, STDOUT_FILENO);
    if (t->merge_stderr)
        dup2(outfd, STDERR_FILENO);
    execv(path, t->argv);
    int e = errno;
    ssize_t unused = write(errfd, &e, sizeof e);
    (void)unused;
    _exit(127);
}

/* Reads fd to its end or the deadline (0: none), keeping `max` bytes. */
static char *read_bounded(int fd, size_t max, double deadline, bool *late)
{
    size_t cap = 4096, len = 0;
    char *buf = gpurun_xmalloc(cap);
    *late = false;
    for (;;) {
        double left = deadline > 0 ? deadline - now_s() : 1e9;
        if (left <= 0) {
            *late = true;
            break;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, deadline > 0 ? (int)(left * 1000) + 1 : -1);
        if (pr <= 0)
            continue; /* EINTR, or the deadline check above ends it */
        char chunk[16384];
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* EOF: every writer is gone */
        /* Read to the end even past the limit: the tool must not block. */
        size_t keep = len < max ? ((size_t)n < max - len ? (size_t)n : max - len) : 0;
        if (len + keep + 1 > cap) {
            while (len + keep + 1 > cap)
                cap *= 2;
            buf = gpurun_xrealloc(buf, cap);
        }
        memcpy(buf + len, chunk, keep);
        len += keep;
    }
    buf[len] = '\0';
    return buf;
}

static void kill_tool(pid_t pid, bool group)
{
    if (group)
        kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
}

/* Waits for the tool; past the deadline (0: none) it is killed.  Its status. */
static int reap(pid_t pid, double deadline, bool late, bool group)
{
    if (late)
        kill_tool(pid, group);
    int st = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, deadline > 0 && !late ? WNOHANG : 0);
        if (w == pid)
            break;
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return 1;
        if (now_s() >= deadline) {
            late = true;
            kill_tool(pid, group);
            continue;
        }
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (late) {
        if (group)
            kill(-pid, SIGKILL); /* what it left behind */
        return 124;
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
}

int gpurun_tool_exec(const struct gpurun_tool *t, char **outp, int *statusp, int *errnop)
{
    *outp = NULL;
    *statusp = 0;
    *errnop = 0;
    char *path = gpurun_which(t->argv[0]);
    if (!path) {
        *errnop = ENOENT;
        return -1;
    }
    int out[2], errp[2];
    if (pipe2(out, O_CLOEXEC) < 0) {
        *errnop = errno;
        free(path);
        return -2;
    }
    if (pipe2(errp, O_CLOEXEC) < 0) {
        *errnop = errno;
        close(out[0]);
        close(out[1]);
        free(path);
        return -2;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        child(t, path, out[1], errp[1]);
    int fork_errno = errno;
    free(path);
    close(out[1]);
    close(errp[1]);
    if (pid < 0) {
        close(out[0]);
        close(errp[0]);
        *errnop = fork_errno;
        return -2;
    }
    bool group = t->timeout_s > 0;
    if (group)
        setpgid(pid, pid); /* whichever of parent and child gets here first */
    double deadline = t->timeout_s > 0 ? now_s() + t->timeout_s : 0;
    bool late;
    char *buf = read_bounded(out[0], t->max, deadline, &late);
    close(out[0]);
    int exec_errno = 0;
    ssize_t got;
    while ((got = read(errp[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR)
        ;
    close(errp[0]);
    *statusp = reap(pid, deadline, late, group);
    if (got == (ssize_t)sizeof exec_errno) {
        free(buf);
        *errnop = exec_errno;
        return -1;
    }
    *outp = buf;
    return 0;
}

int gpurun_tool_run(char *const argv[], double timeout_s, size_t max, char **outp, int *statusp)
{
    struct gpurun_tool t = {
        .argv = argv, .stdin_fd = -1, .merge_stderr = true, .timeout_s = timeout_s > 0 ? timeout_s : TOOL_TIMEOUT_S,
        .max = max};
    int e;
    return gpurun_tool_exec(&t, outp, statusp, &e) < 0 ? -1 : 0;
}

int gpurun_capture(char *const argv[], char *out, size_t outlen, int timeout_ms, char *why, size_t len)
{
    struct gpurun_tool t = {.argv = argv, .stdin_fd = -1, .merge_stderr = true,
                            .timeout_s = timeout_ms > 0 ? timeout_ms / 1000.0 : TOOL_TIMEOUT_S,
                            .max = outlen > 1 ? outlen - 1 : 1};
    char *o = NULL;
    int status = 0, e = 0;
    out[0] = '\0';
    if (gpurun_tool_exec(&t, &o, &status, &e) < 0) {
        snprintf(why, len, "cannot run %s: %s", argv[0], strerror(e));
        return -1;
    }
    snprintf(out, outlen, "%s", o);
    free(o);
    if (status == 124) {
        snprintf(why, len, "%s did not answer within %d s (stopped)", argv[0], timeout_ms / 1000);
        return -1;
    }
    if (status != 0) {
        char first[160];
        out[strcspn(out, "\r\n")] = '\0'; /* its first line */
        gpurun_short_text(first, sizeof first, out);
        snprintf(why, len, "%s failed (%s %d)%s%s", argv[0], status > 128 ? "signal" : "exit status",
                 status > 128 ? status - 128 : status, *first ? ": " : "", first);
        return -1;
    }
    return 0;
}
