/* SPDX-License-Identifier: BSD-3-Clause */
/* simmpi: an `mpirun` that plays many hosts on this one, for the scale tests
 * (tests/cli-scale.sh, bench/scale.sh).  It takes the command line gpurun's
 * mpirun plugin writes (-np N --map-by ppr:R:node ... STEP ARGS...), starts
 * the N/R hosts a few at a time, each in a UTS namespace of its own named
 * sim0000, sim0001, ... (so gpurun's rank step sees another host name), and
 * in each host its R ranks with Open MPI's rank variables.  Needs root, or
 * unprivileged user namespaces, for the UTS namespace.
 *
 *   SIMMPI_CONCURRENCY=K   hosts running at once (default 2)
 *   SIMMPI_LOSE=NAME       that host's ranks are killed (SIGKILL) once all
 *                          have started: a host lost mid-job
 *   SIMMPI_HOST_PREFIX=P   host names P0000... (default "sim")
 * Exit status: the highest of the ranks' (128+N for a signal), as mpirun's. */
#include "config.h"
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static int usage(void)
{
    fprintf(stderr, "simmpi: usage: simmpi -np N --map-by ppr:R:node [--bind-to none] [--oversubscribe] [-x VAR]... "
                    "PROGRAM ARGS...\n");
    return 2;
}

static int status_code(int st)
{
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* One host: its own host name, then its ranks; exits with the highest code. */
static int run_host(int host, int ppn, int np, const char *prefix, const char *lose, char **argv)
{
    char name[64];
    snprintf(name, sizeof name, "%s%04d", prefix, host);
    if (unshare(CLONE_NEWUTS) < 0) {
        if (unshare(CLONE_NEWUSER | CLONE_NEWUTS) < 0) {
            fprintf(stderr, "simmpi: %s: cannot make a UTS namespace: %s\n", name, strerror(errno));
            return 3;
        }
    }
    if (sethostname(name, strlen(name)) < 0) {
        fprintf(stderr, "simmpi: %s: sethostname: %s\n", name, strerror(errno));
        return 3;
    }
    pid_t *pids = calloc((size_t)ppn, sizeof *pids);
    int started = 0;
    for (int l = 0; l < ppn && host * ppn + l < np; l++) {
        pid_t pid = fork();
        if (pid == 0) {
            char v[32];
            snprintf(v, sizeof v, "%d", host * ppn + l);
            setenv("OMPI_COMM_WORLD_RANK", v, 1);
            snprintf(v, sizeof v, "%d", l);
            setenv("OMPI_COMM_WORLD_LOCAL_RANK", v, 1);
            setenv("OMPI_COMM_WORLD_NODE_RANK", v, 1);
            snprintf(v, sizeof v, "%d", np);
            setenv("OMPI_COMM_WORLD_SIZE", v, 1);
            snprintf(v, sizeof v, "%d", ppn);
            setenv("OMPI_COMM_WORLD_LOCAL_SIZE", v, 1);
            execvp(argv[0], argv);
            fprintf(stderr, "simmpi: cannot run %s: %s\n", argv[0], strerror(errno));
            _exit(127);
        }
        if (pid > 0)
            pids[started++] = pid;
    }
    if (lose && !strcmp(lose, name)) {
        usleep(200 * 1000); /* the ranks have started (a lost host need not be exact) */
        for (int i = 0; i < started; i++)
            kill(pids[i], SIGKILL);
    }
    int worst = 0;
    for (int i = 0; i < started; i++) {
        int st;
        while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
            ;
        int c = status_code(st);
        if (c > worst)
            worst = c;
    }
    free(pids);
    return worst;
}

int main(int argc, char **argv)
{
    int np = -1, ppn = -1, i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "-np") && i + 1 < argc)
            np = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--map-by") && i + 1 < argc) {
            if (sscanf(argv[++i], "ppr:%d:node", &ppn) != 1)
                return usage();
        } else if ((!strcmp(argv[i], "--bind-to") || !strcmp(argv[i], "-x")) && i + 1 < argc)
            i++; /* one host: the environment is everyone's already */
        else if (strcmp(argv[i], "--oversubscribe") != 0)
            return usage();
    }
    if (np <= 0 || i >= argc)
        return usage();
    if (ppn <= 0)
        ppn = np;
    const char *c = getenv("SIMMPI_CONCURRENCY");
    int conc = c && atoi(c) > 0 ? atoi(c) : 2;
    const char *prefix = getenv("SIMMPI_HOST_PREFIX") ? getenv("SIMMPI_HOST_PREFIX") : "sim";
    const char *lose = getenv("SIMMPI_LOSE");
    int hosts = (np + ppn - 1) / ppn, next = 0, running = 0, worst = 0;
    while (next < hosts || running > 0) {
        while (running < conc && next < hosts) {
            pid_t pid = fork();
            if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                _exit(run_host(next, ppn, np, prefix, lose, argv + i));
            }
            if (pid < 0) {
                perror("simmpi: fork");
                break;
            }
            running++;
            next++;
        }
        int st;
        pid_t done = wait(&st);
        if (done < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        running--;
        int code = status_code(st);
        if (code > worst)
            worst = code;
    }
    return worst;
}
