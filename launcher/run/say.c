/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun's own output (say.h): in order, and never the end of a run. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runfolder.h"
#include "safefile.h"
#include "say.h"

/* Index 0 is stdout, 1 stderr. */
static struct {
    int lost[2];       /* the errno of the write that failed; 0: still written */
    char since[2][24]; /* when, UTC */
    int dir_fd;        /* the latest run folder (our copy), or -1 */
    mode_t mode;
} S = {.dir_fd = -1};

static FILE *stream(int i)
{
    return i ? stderr : stdout;
}

void gpurun_say_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        int n = open("/dev/null", fd ? O_WRONLY : O_RDONLY); /* the lowest free descriptor: fd itself */
        if (n > fd) {
            dup2(n, fd);
            close(n);
        }
    }
}

static void on_sigpipe(int sig)
{
    (void)sig; /* the write that raised it fails with EPIPE, which gpurun_say() sees */
}

void gpurun_say_begin(void)
{
    struct sigaction sa = {.sa_handler = on_sigpipe, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, NULL);
}

/* The note of the lost streams in the run folder, replaced whole: best
 * effort, since there is nowhere left to say that it failed. */
static void write_note(void)
{
    if (S.dir_fd < 0 || !(S.lost[0] || S.lost[1]))
        return;
    char text[512];
    size_t n = 0;
    for (int i = 0; i < 2; i++)
        if (S.lost[i] && n < sizeof text)
            n += (size_t)snprintf(text + n, sizeof text - n,
                                  "%s: gone since %s (%s): gpurun wrote nothing more there; the run went on\n",
                                  i ? "stderr" : "stdout", S.since[i], strerror(S.lost[i]));
    if (n >= sizeof text)
        n = sizeof text - 1;
    gpurun_error_t e;
    gpurun_write_atomic_at(S.dir_fd, GPURUN_RUN_OUTPUT_LOST, NULL, text, n, S.mode, 0, &e);
}

/* Flushes stream i; `e` is the errno of a write just made to it.  A write
 * that failed for good ends the stream: what it still holds is dropped, so
 * that exit() does not try again either. */
static void settle(int i, int e)
{
    FILE *f = stream(i);
    errno = 0;
    if (fflush(f) != 0)
        e = errno;
    if (!ferror(f))
        return;
    clearerr(f);
    if (e == EINTR || e == EAGAIN)
        return; /* a line lost, the reader still there */
    S.lost[i] = e ? e : EIO;
    __fpurge(f);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(S.since[i], sizeof S.since[i], "%Y-%m-%dT%H:%M:%SZ", &tm);
    write_note();
}

void gpurun_say(FILE *f, const char *fmt, ...)
{
    int i = f == stderr;
    if (S.lost[i])
        return;
    if (!S.lost[!i])
        settle(!i, 0); /* what the other stream holds comes first */
    va_list ap;
    va_start(ap, fmt);
    errno = 0;
    vfprintf(stream(i), fmt, ap);
    va_end(ap);
    settle(i, errno);
}

void gpurun_say_run_folder(int dir_fd, mode_t mode)
{
    if (S.dir_fd >= 0)
        close(S.dir_fd);
    S.dir_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
    S.mode = mode;
    write_note();
}
