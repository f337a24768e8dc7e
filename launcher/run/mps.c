/* SPDX-License-Identifier: BSD-3-Clause */
/* CUDA MPS: one control daemon per host for ranks that share a GPU, in
 * folders of the run, started before the ranks and quit after them.
 * nvidia-cuda-mps-control is run without a shell: `-d` starts the daemon
 * (the program forks it and returns), "quit" on its stdin stops it. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mps.h"
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

bool gpurun_mps_running(char *pipe_dir, size_t len)
{
    const char *env = getenv("CUDA_MPS_PIPE_DIRECTORY");
    const char *dir = env && *env ? env : DEFAULT_PIPE_DIR;
    if (!control_answers(dir))
        return false;
    snprintf(pipe_dir, len, "%s", dir);
    return true;
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
 * gpurun's open, default signals. */
static void control_child(const struct gpurun_mps *m, int in_fd, int log_fd)
{
    setsid(); /* the daemon it forks is the job's, not the terminal's: Ctrl-C reaches gpurun, which quits it */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    setenv("CUDA_MPS_PIPE_DIRECTORY", m->pipe_dir, 1);
    setenv("CUDA_MPS_LOG_DIRECTORY", m->log_dir, 1);
    if (in_fd < 0)
        in_fd = open("/dev/null", O_RDONLY);
    if (in_fd < 0 || dup2(in_fd, 0) < 0 || (log_fd >= 0 && (dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0)))
        _exit(127);
    long max = sysconf(_SC_OPEN_MAX);
    for (int fd = 3; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
        close(fd);
}

/* Wait for `pid` at most CONTROL_WAIT_S, then kill it.  Its status (128+N
 * for a signal), or -1 when it had to be killed. */
static int wait_control(pid_t pid)
{
    struct timespec step = {0, 20 * 1000 * 1000};
    for (int i = 0; i < CONTROL_WAIT_S * 50; i++) {
        int st;
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (w < 0 && errno != EINTR)
            return -1;
        nanosleep(&step, NULL);
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return -1;
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

/* Run the control program with `input` on its stdin (NULL: none) and
 * `arg` (NULL: none).  Its exit status, or -1. */
static int run_control(const struct gpurun_mps *m, const char *control, const char *arg, const char *input)
{
    int log_fd = open_log(m), in[2] = {-1, -1};
    if (input && pipe2(in, O_CLOEXEC) < 0) {
        if (log_fd >= 0)
            close(log_fd);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        control_child(m, in[0], log_fd);
        if (arg)
            execl(control, control, arg, (char *)NULL);
        else
            execl(control, control, (char *)NULL);
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
    if (input) {
        /* A control program that exits without reading must not kill us. */
        void (*old)(int) = signal(SIGPIPE, SIG_IGN);
        (void)gpurun_write_all(in[1], input, strlen(input));
        close(in[1]);
        signal(SIGPIPE, old);
    }
    return wait_control(pid);
}

/* Until the daemon's control socket is there (the program returns as soon
 * as it has forked the daemon), SOCKET_WAIT_S at most. */
static void wait_socket(const struct gpurun_mps *m)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/control", m->pipe_dir);
    struct timespec step = {0, 20 * 1000 * 1000};
    for (int i = 0; i < SOCKET_WAIT_S * 50 && access(path, F_OK) < 0; i++)
        nanosleep(&step, NULL);
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
                     const char *host, gpurun_error_t *err)
{
    memset(m, 0, sizeof *m);
    if (mode == GPURUN_MPS_OFF)
        return 0;
    char control[PATH_MAX], why[2 * PATH_MAX + 512];
    if (gpurun_mps_running(m->pipe_dir, sizeof m->pipe_dir)) {
        m->active = true;
        snprintf(m->note, sizeof m->note, "ranks use the CUDA MPS daemon already running (pipe folder %s)",
                 m->pipe_dir);
        return 0;
    }
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
    int rc = 0;
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
         * private folder of its own under $TMPDIR (mkdtemp: 0700). */
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

    int st = run_control(m, control, "-d", NULL);
    if (st != 0) {
        if (st < 0)
            snprintf(why, sizeof why, "%s -d could not be run or did not return", control);
        else
            snprintf(why, sizeof why, "%s -d failed with exit status %d; see %s/gpurun-control.log", control, st,
                     m->log_dir);
        if (m->tmp_pipe)
            rmdir(m->pipe_dir);
        m->tmp_pipe = false;
        return not_done(m, mode, err, why);
    }
    m->active = m->ours = true;
    wait_socket(m);
    snprintf(m->note, sizeof m->note, "CUDA MPS daemon started for the ranks sharing GPUs (pipe folder %s, log %s)",
             m->pipe_dir, m->log_dir);
    return 0;
fail:
    close(mfd);
    rc = mode == GPURUN_MPS_ON ? -1 : not_done(m, mode, err, err->text);
    return rc;
}

void gpurun_mps_export(const struct gpurun_mps *m)
{
    if (m->active) {
        setenv("CUDA_MPS_PIPE_DIRECTORY", m->pipe_dir, 1);
        if (m->log_dir[0])
            setenv("CUDA_MPS_LOG_DIRECTORY", m->log_dir, 1);
    }
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

int gpurun_mps_stop(struct gpurun_mps *m, gpurun_error_t *err)
{
    if (!m->ours)
        return 0;
    m->ours = false;
    char control[PATH_MAX];
    int st = gpurun_mps_find_control(control, sizeof control) ? run_control(m, control, NULL, "quit\n") : -1;
    if (m->tmp_pipe && st == 0)
        remove_pipe_dir(m->pipe_dir);
    if (st != 0)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "the CUDA MPS daemon of this job may still run: '%s' with \"quit\" %s; stop it with: echo "
                          "quit | CUDA_MPS_PIPE_DIRECTORY=%s %s",
                          GPURUN_MPS_CONTROL, st < 0 ? "could not be run or did not return" : "failed",
                          m->pipe_dir, GPURUN_MPS_CONTROL);
    return 0;
}
