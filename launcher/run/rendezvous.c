/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "launch.h"
#include "rendezvous.h"
#include "util.h"

/* The store: torch's TCPStore as the master, on the port given (0: the
 * kernel's choice, taken in the same bind that holds it), not waiting for
 * workers; its port on standard output once it listens; then it serves
 * until gpurun stops it or goes (SIGTERM, also from PR_SET_PDEATHSIG, or a
 * new parent). */
static const char store_program[] =
    "import datetime, os, signal, sys, time\n"
    "def say(text):\n"
    "    sys.stdout.write(text + '\\n')\n"
    "    sys.stdout.flush()\n"
    "port, world, bound = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])\n"
    "parent = os.getppid()\n"
    "signal.signal(signal.SIGTERM, lambda *a: os._exit(0))\n"
    "try:\n"
    "    from torch.distributed import TCPStore\n"
    "except Exception as e:\n"
    "    say('GPURUN_STORE_ERROR cannot import torch.distributed (%s: %s)' % (type(e).__name__, e))\n"
    "    sys.exit(3)\n"
    "try:\n"
    "    store = TCPStore('127.0.0.1', port, world, True, datetime.timedelta(seconds=bound),\n"
    "                     wait_for_workers=False)\n"
    "except Exception as e:\n"
    "    text = str(e).strip()\n"
    "    say('GPURUN_STORE_ERROR %s' % (text.splitlines()[0] if text else type(e).__name__))\n"
    "    sys.exit(3)\n"
    "say('GPURUN_STORE_PORT %d' % store.port)\n"
    "os.dup2(2, 1)\n"
    "while os.getppid() == parent:\n"
    "    time.sleep(1)\n";

void gpurun_store_args(char ***argv, int port, int world_size, long bound_s)
{
    gpurun_argv_add(argv, "-c");
    gpurun_argv_add(argv, store_program);
    gpurun_argv_addf(argv, "%d", port);
    gpurun_argv_addf(argv, "%d", world_size);
    gpurun_argv_addf(argv, "%ld", bound_s);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The last line of what the store wrote to its log, for a message. */
static void log_tail(int log_fd, char *buf, size_t size)
{
    buf[0] = '\0';
    off_t end = lseek(log_fd, 0, SEEK_END);
    if (end <= 0)
        return;
    off_t from = end > (off_t)size - 1 ? end - (off_t)size + 1 : 0;
    ssize_t n = pread(log_fd, buf, (size_t)(end - from), from);
    buf[n > 0 ? n : 0] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    char *last = strrchr(buf, '\n');
    if (last)
        memmove(buf, last + 1, strlen(last + 1) + 1);
}

/* The store being waited for: its output read line by line until it says
 * its port or its error, ends, or the bound passes. */
struct store_wait {
    char *const *argv;
    int port; /* asked for; 0: any */
    long bound_s;
    const char *run_dir, *log_path;
    int log_fd, out, sfd;
    char line[4096];
    size_t len;
    struct gpurun_store *s;
};

/* One line of the store's: 1 when it says its port, -1 its error, 0 else. */
static int store_line(struct store_wait *w, const char *line, gpurun_error_t *err)
{
    long p;
    char *end;
    if (!strncmp(line, "GPURUN_STORE_PORT ", 18) && (p = strtol(line + 18, &end, 10)) > 0 && p < 65536 && !*end) {
        w->s->port = (int)p;
        return 1;
    }
    if (strncmp(line, "GPURUN_STORE_ERROR ", 19))
        return 0;
    char on[32] = "";
    if (w->port)
        snprintf(on, sizeof on, " on port %d", w->port);
    return gpurun_err(err, GPURUN_EXIT_ENV,
                      "the rendezvous store (%s with torch.distributed.TCPStore%s) could not start: %s; no "
                      "rank was started",
                      w->argv[0], on, line + 19);
}

/* What it wrote since: 0 to wait on, 1 listening, -1 failed. */
static int store_read(struct store_wait *w, gpurun_error_t *err)
{
    ssize_t got = read(w->out, w->line + w->len, sizeof w->line - 1 - w->len);
    if (got < 0 && errno == EINTR)
        return 0;
    if (got <= 0) { /* it ended without a word */
        char said[1024];
        log_tail(w->log_fd, said, sizeof said);
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "the rendezvous store (%s with torch.distributed.TCPStore) ended before it listened%s%s; "
                          "no rank was started; its output: %s",
                          w->argv[0], said[0] ? ": " : "", said, w->log_path);
    }
    w->len += (size_t)got;
    w->line[w->len] = '\0';
    char *nl;
    while ((nl = strchr(w->line, '\n'))) {
        *nl = '\0';
        int said = store_line(w, w->line, err);
        if (said)
            return said;
        size_t rest = w->len - (size_t)(nl + 1 - w->line);
        memmove(w->line, nl + 1, rest + 1);
        w->len = rest;
    }
    if (w->len == sizeof w->line - 1) /* a line that long is none of ours */
        w->len = 0;
    return 0;
}

static int store_wait(struct store_wait *w, gpurun_error_t *err)
{
    double until = now_s() + (double)w->bound_s;
    for (;;) {
        double left = until - now_s();
        if (left <= 0)
            return gpurun_err(err, GPURUN_EXIT_ENV,
                              "the rendezvous store (%s with torch.distributed.TCPStore) did not listen within %ld "
                              "s; no rank was started; its output: %s",
                              w->argv[0], w->bound_s, w->log_path);
        struct pollfd pf[2] = {{.fd = w->out, .events = POLLIN}, {.fd = w->sfd, .events = POLLIN}};
        int n = poll(pf, w->sfd >= 0 ? 2 : 1, (int)(left * 1000) + 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (w->sfd >= 0 && (pf[1].revents & POLLIN)) {
            struct signalfd_siginfo si;
            int sig = read(w->sfd, &si, sizeof si) == (ssize_t)sizeof si ? (int)si.ssi_signo : SIGTERM;
            return gpurun_err(err, 128 + sig,
                              "interrupted by %s while the rendezvous store started: no rank was "
                              "started; run folder %s",
                              strsignal(sig), w->run_dir);
        }
        if (!(pf[0].revents & (POLLIN | POLLHUP)))
            continue;
        int said = store_read(w, err);
        if (said)
            return said > 0 ? 0 : -1;
    }
}

int gpurun_store_start(char *const *argv, int port, long bound_s, int dir_fd, const char *run_dir,
                       int log_fd, const char *log_path, struct gpurun_store *s, gpurun_error_t *err)
{
    s->pid = 0;
    s->port = 0;
    struct store_wait w = {.argv = argv, .port = port, .bound_s = bound_s, .run_dir = run_dir,
                           .log_path = log_path, .log_fd = log_fd, .out = -1, .s = s};
    /* Ctrl-C while the store starts: stop it, start no rank. */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &old);
    w.sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    pid_t pid = gpurun_start_service(argv, dir_fd, run_dir, log_fd, &w.out, err);
    int rc = -1;
    if (pid >= 0) {
        s->pid = pid;
        rc = store_wait(&w, err);
    }
    if (w.out >= 0)
        close(w.out);
    if (w.sfd >= 0)
        close(w.sfd);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        gpurun_store_stop(s);
    return rc;
}

void gpurun_store_stop(struct gpurun_store *s)
{
    if (s->pid > 0)
        gpurun_stop_service(s->pid, 5.0);
    s->pid = 0;
}
