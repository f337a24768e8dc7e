/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun rank --run-dir DIR -- PROGRAM ARGS: the per-rank step every
 * launcher starts (internal; see rank.h). */
#include "config.h"

#include <string.h>

#include "cmd.h"
#include "rank.h"

int cmd_rank(int argc, char **argv, gpurun_error_t *err)
{
    if (argc < 5 || strcmp(argv[1], "--run-dir") || strcmp(argv[3], "--")) {
        gpurun_err(err, GPURUN_EXIT_CONFIG, "rank: usage: gpurun rank --run-dir DIR -- PROGRAM [ARGS...] "
                                            "(started by gpurun run, not by hand)");
        return GPURUN_EXIT_CONFIG;
    }
    int rc = gpurun_rank_step(argv[2], argv + 4, NULL, err);
    return rc < 0 ? err->code : rc;
}
