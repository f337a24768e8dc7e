/* SPDX-License-Identifier: BSD-3-Clause */
/* mpirun: Open MPI's launcher, or Hydra's (MPICH, Intel MPI, MVAPICH2),
 * whichever `mpirun` on PATH is: they take different options.  gpurun binds
 * every rank itself, so the MPI is told not to (Open MPI: --bind-to none;
 * Intel MPI and MVAPICH2 pin in MPI_Init unless told not to). */
#include "config.h"

#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launcher.h"
#include "util.h"

enum mpirun_kind { MPIRUN_OPEN_MPI, MPIRUN_HYDRA };

static bool executable_in(const char *dir, const char *name)
{
    char *p = gpurun_xasprintf("%s/%s", dir, name);
    bool yes = gpurun_executable_file(p);
    free(p);
    return yes;
}

/* Which MPI the `mpirun` on PATH belongs to, from the file it resolves to and
 * the programs installed beside it (not `mpirun --version`: a process more
 * on every run's start-up).  Debian's mpirun ends in orterun or in
 * mpiexec.hydra; Open MPI 5's and Intel MPI's are files named mpirun, beside
 * ompi_info or prterun, and beside impi_info or mpiexec.hydra.  Unknown: Open
 * MPI, as before there was a choice. */
static enum mpirun_kind mpirun_kind(void)
{
    enum mpirun_kind kind = MPIRUN_OPEN_MPI;
    char *found = gpurun_which("mpirun"), real[PATH_MAX];
    if (!found || !realpath(found, real)) {
        free(found);
        return kind;
    }
    free(found);
    char *name = basename(real);
    if (!strncmp(name, "mpiexec.hydra", 13) || !strcmp(name, "mpirun.mpich") || !strcmp(name, "mpiexec.mpich")) {
        kind = MPIRUN_HYDRA;
    } else if (strncmp(name, "orterun", 7) && strncmp(name, "prterun", 7) && strcmp(name, "mpirun.openmpi")) {
        char *dir = dirname(real);
        static const char *const hydra_beside[] = {"impi_info", "mpiexec.hydra", "mpichversion", "mpiname"};
        bool open_mpi = executable_in(dir, "ompi_info") || executable_in(dir, "prterun");
        for (size_t i = 0; !open_mpi && i < sizeof hydra_beside / sizeof *hydra_beside; i++)
            if (executable_in(dir, hydra_beside[i]))
                kind = MPIRUN_HYDRA;
    }
    return kind;
}

/* Hydra: -ppn ranks per host, -genvlist the names the ranks inherit. */
static void hydra_commands(const struct gpurun_launch_request *req, char ***a)
{
    gpurun_argv_add(a, "-n");
    gpurun_argv_addf(a, "%d", req->nranks);
    gpurun_argv_add(a, "-ppn");
    gpurun_argv_addf(a, "%d", req->ranks_per_node);
    static const char *const no_pinning[][2] = {{"I_MPI_PIN", "off"}, {"MV2_ENABLE_AFFINITY", "0"}};
    for (size_t i = 0; i < sizeof no_pinning / sizeof *no_pinning; i++) {
        gpurun_argv_add(a, "-genv");
        gpurun_argv_add(a, no_pinning[i][0]);
        gpurun_argv_add(a, no_pinning[i][1]);
    }
    struct gpurun_strbuf list = {0};
    for (char *const *e = req->export_env; e && *e; e++)
        gpurun_strbuf_printf(&list, "%s%s", list.len ? "," : "", *e);
    if (list.s) {
        gpurun_argv_add(a, "-genvlist");
        gpurun_argv_add(a, list.s);
        free(list.s);
    }
}

static int mpirun_available(gpurun_error_t *why)
{
    return gpurun_need_program("mpirun", "Debian: openmpi-bin", why);
}

static int mpirun_commands(const struct gpurun_launch_request *req, struct gpurun_launch_cmds *out,
                           gpurun_error_t *err)
{
    (void)err;
    char **a = gpurun_argv_new();
    gpurun_argv_add(&a, "mpirun");
    if (mpirun_kind() == MPIRUN_HYDRA) {
        hydra_commands(req, &a);
        gpurun_argv_add_rank_step(&a, req);
        gpurun_launch_cmds_one(out, a);
        return 0;
    }
    gpurun_argv_addf(&a, "-np");
    gpurun_argv_addf(&a, "%d", req->nranks);
    gpurun_argv_add(&a, "--map-by");
    gpurun_argv_addf(&a, "ppr:%d:node", req->ranks_per_node);
    gpurun_argv_add(&a, "--bind-to");
    gpurun_argv_add(&a, "none");
    if (req->oversubscribe)
        gpurun_argv_add(&a, "--oversubscribe");
    /* Ranks on other nodes get only what -x names. */
    for (char *const *e = req->export_env; e && *e; e++) {
        gpurun_argv_add(&a, "-x");
        gpurun_argv_add(&a, *e);
    }
    /* mpirun's own stop (SIGINT, SIGTERM) sends the ranks SIGCONT, then
     * SIGTERM and SIGKILL a second apart: too little for a program that
     * stops cleanly (mdrun's checkpoint).  It passes SIGUSR2 on as it is:
     * the rank steps give the program the stop signal for it. */
    gpurun_argv_add(&a, "-x");
    gpurun_argv_addf(&a, "GPURUN_STOP_RELAY=%d:%d", SIGUSR2, req->stop_signal > 0 ? req->stop_signal : SIGTERM);
    gpurun_argv_add_rank_step(&a, req);
    gpurun_launch_cmds_one(out, a);
    out->stop_relay = SIGUSR2;
    out->stall_relay = SIGUSR1; /* passed on to the rank steps' groups: the program has its own */
    return 0;
}

const gpurun_launcher_plugin_t gpurun_launcher_mpirun = {
    .abi = GPURUN_LAUNCHER_ABI,
    .name = "mpirun",
    .summary = "Open MPI's mpirun (--bind-to none: gpurun binds), or Hydra's (MPICH, Intel MPI)",
    .available = mpirun_available,
    .commands = mpirun_commands,
};
