/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun rank --run-dir DIR -- PROGRAM ARGS: the per-rank step every
 * launcher starts; gpurun rank --plan-only --run-dir DIR: plan this host
 * only (pyxis: outside the image, before the container step).  Both
 * internal; see rank.h. */
#include "config.h"

#include <string.h>

#include "cmd.h"
#include "rank.h"
#include "rank_energy.h"

int cmd_rank(int argc, char **argv, gpurun_error_t *err)
{
    if (argc == 3 && !strcmp(argv[1], "--energy")) /* a first rank step's GPU energy helper */
        return gpurun_rank_energy_helper(argv[2]);
    if (argc == 4 && !strcmp(argv[1], "--plan-only") && !strcmp(argv[2], "--run-dir"))
        return gpurun_rank_plan_only(argv[3], err) < 0 ? err->code : 0;
    if (argc < 5 || strcmp(argv[1], "--run-dir") || strcmp(argv[3], "--")) {
        gpurun_err(err, GPURUN_EXIT_CONFIG, "rank: usage: gpurun rank --run-dir DIR -- PROGRAM [ARGS...] "
                                            "(started by gpurun run, not by hand)");
        return GPURUN_EXIT_CONFIG;
    }
    int rc = gpurun_rank_step(argv[2], argv + 4, NULL, err);
    return rc < 0 ? err->code : rc;
}
