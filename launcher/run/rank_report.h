/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_RANK_REPORT_H
#define GPURUN_RANK_REPORT_H

/* The mark of a rank step's report lines (rank.c writes them, run.c and
 * watch.c read them), apart from rank.h so that the parts of a rank step
 * (stall_rank.c) may write one without the rank step's interface. */

/* A rank step's reports on its standard output, one line each:
 *   MARK "B RANK {binding}"  MARK "S RANK {status}"  MARK "O RANK line of output" (relay only)
 *   MARK "T RANK {\"signal\":N}": told to stop (SIGTERM, SIGINT, SIGHUP, SIGQUIT) while its program
 *   ran, sent at once: the launcher may kill the rank step before the program ends.  The status
 *   then says "stopped": true and "stop_signal": N. */
#define GPURUN_MARK "\036gpurun "

#endif
