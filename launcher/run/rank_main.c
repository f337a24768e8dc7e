/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun-rank --gpurun GPURUN --version V --run-dir DIR -- PROGRAM ARGS:
 * the rank step (rank.c) as a program of its own, linked with the C
 * library and jansson only, so that a rank's start-up costs little more
 * than the program's: no hwloc, libxml2, SQLite or libconfuse to load.
 * Where a host must be planned it becomes `GPURUN rank` (rank.c), and so it
 * does when it is not of gpurun's version V. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "rank.h"

/* gpurun-rank --inside FD -- PROGRAM ARGS: the entry of a rank's container. */
static int inside(int argc, char **argv)
{
    char *end;
    long fd = strtol(argv[2], &end, 10);
    if (argc < 5 || *end || end == argv[2] || fd < 0 || fd > 1 << 20 || strcmp(argv[3], "--")) {
        fprintf(stderr, "gpurun-rank: usage: gpurun-rank --inside FD -- PROGRAM [ARGS...] (the entry of a rank's "
                        "container, started by the rank step)\n");
        return GPURUN_EXIT_CONFIG;
    }
    return gpurun_rank_inside((int)fd, argv + 4);
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], GPURUN_INSIDE_ARG))
        return inside(argc, argv);
    if (argc < 9 || strcmp(argv[1], "--gpurun") || argv[2][0] != '/' || strcmp(argv[3], "--version") ||
        strcmp(argv[5], "--run-dir") || strcmp(argv[7], "--")) {
        fprintf(stderr, "gpurun-rank: usage: gpurun-rank --gpurun GPURUN --version V --run-dir DIR -- PROGRAM "
                        "[ARGS...] (started by gpurun run, not by hand)\n");
        return GPURUN_EXIT_CONFIG;
    }
    const char *gpurun = argv[2], *run_dir = argv[6];
    if (strcmp(argv[4], PACKAGE_VERSION)) {
        /* Another gpurun's: the rank step is the one of the gpurun that runs the job. */
        argv[3] = (char *)gpurun;
        argv[4] = "rank"; /* GPURUN rank --run-dir DIR -- PROGRAM ARGS */
        execv(gpurun, argv + 3);
        fprintf(stderr, "gpurun-rank: cannot run %s: %s\n", gpurun, strerror(errno));
        return GPURUN_EXIT_ENV;
    }
    gpurun_error_t err = {0};
    int rc = gpurun_rank_step(run_dir, argv + 8, gpurun, &err);
    if (rc < 0) {
        if (err.text[0])
            fprintf(stderr, "gpurun: %s\n", err.text);
        return err.code;
    }
    return rc;
}
