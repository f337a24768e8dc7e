/* SPDX-License-Identifier: BSD-3-Clause */
/* An MPI program that hangs on purpose (tests/cli-stall.sh, bench/hang.sh):
 * every rank takes a step (an MPI_Allreduce), rank 0 prints "step k of N",
 * and at step $HANG_AT rank $HANG_RANK hangs as $HANG_KIND says:
 *   stop      SIGSTOP to itself
 *   spin      a loop in its own code (compute_forces)
 *   sleep     a long sleep (wait_a_while)
 *   fifo      a read of a pipe nobody writes (read_input)
 *   exit      _exit(0) without MPI_Finalize, a child keeping its output open
 *   deadlock  every rank receives from its neighbour: a cycle
 * Every hang is bounded (HANG_MAX_S, default 300 s). */
#define _GNU_SOURCE
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double max_s;

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

__attribute__((noinline)) static void compute_forces(void)
{
    volatile double x = 1.0;
    time_t until = time(NULL) + (time_t)max_s;
    while (time(NULL) < until)
        for (int i = 0; i < 1000000; i++)
            x = x * 1.0000001 + 1e-9;
}

__attribute__((noinline)) static void wait_a_while(void)
{
    sleep((unsigned)max_s);
}

__attribute__((noinline)) static void read_input(void)
{
    int p[2];
    char c;
    if (pipe(p) == 0) {
        alarm((unsigned)max_s);
        ssize_t n = read(p[0], &c, 1); /* we hold the writing end: blocks */
        (void)n;
    }
}

/* Gone without MPI noticing: a child holds the output open, the rank ends. */
__attribute__((noinline)) static void vanish(void)
{
    pid_t step = getppid();
    if (fork() == 0) {
        for (int i = 0; i < (int)max_s && kill(step, 0) == 0; i++)
            sleep(1);
        _exit(0);
    }
    _exit(0);
}

__attribute__((noinline)) static void exchange(int rank, int size, int deadlock)
{
    double v = rank, sum = 0;
    if (deadlock) {
        MPI_Recv(&sum, 1, MPI_DOUBLE, (rank + 1) % size, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return;
    }
    MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

static void hang(const char *kind)
{
    if (!strcmp(kind, "stop"))
        raise(SIGSTOP);
    else if (!strcmp(kind, "spin"))
        compute_forces();
    else if (!strcmp(kind, "sleep"))
        wait_a_while();
    else if (!strcmp(kind, "fifo"))
        read_input();
    else if (!strcmp(kind, "exit"))
        vanish();
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *kind = getenv("HANG_KIND") ? getenv("HANG_KIND") : "none";
    int at = env_int("HANG_AT", 3), who = env_int("HANG_RANK", 1), steps = env_int("STEPS", 1000);
    int pause_ms = env_int("STEP_MS", 200);
    max_s = env_int("HANG_MAX_S", 300);
    for (int k = 1; k <= steps; k++) {
        int deadlock = k == at && !strcmp(kind, "deadlock");
        if (k == at && rank == who && !deadlock)
            hang(kind);
        exchange(rank, size, deadlock);
        if (rank == 0) {
            printf("step %d of %d\n", k, steps);
            fflush(stdout);
        }
        usleep((useconds_t)pause_ms * 1000);
    }
    MPI_Finalize();
    return 0;
}
