/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_RUNFOLDER_H
#define GPURUN_RUNFOLDER_H

/* A run folder's layout, which gpurun run, its rank steps and the readers
 * of finished runs (fom.c, results) share: the files' names, the names of
 * a host's files, where rank 0's output is, and how a rank in a container
 * reports what it sees inside. */

/* Files of a run folder, shared by the rank step and the run.  At most 10
 * files plus 3 per host:
 *   plan.json request.json topology.xml env.json gpudirect.json  gpurun, before the ranks
 *   setup.log                    gpurun, the template's setup steps
 *   launcher.out                 gpurun: the launcher's own output
 *   record.json                  gpurun, once, at the end
 *   plan.HOST.json               gpurun for its own host; for another, the first rank step there
 *   HOST.out                     the host's rank steps: every line of its ranks as "RANK: line"
 *                                (output = "per-rank": rank.N.out instead, as the program wrote it)
 *   HOST.ranks.json              gpurun, once, when the ranks have ended: each local rank's
 *                                binding and exit status (as the rank steps reported them)
 *   rendezvous.log               gpurun: what its rendezvous store said (torchrun templates)
 *   rendezvous.store             the ranks' file:// rendezvous (params.rendezvous = "file")
 *   output-lost.txt              gpurun, only when its own stdout or stderr went away (say.h) */
#define GPURUN_RUN_PLAN "plan.json"
#define GPURUN_RUN_TOPOLOGY "topology.xml"
#define GPURUN_RUN_ENV "env.json"
#define GPURUN_RUN_REQUEST "request.json"
#define GPURUN_RUN_GPUDIRECT "gpudirect.json" /* {"mode": "auto", "env": {the template's env}} */
#define GPURUN_RUN_LAUNCHER_OUT "launcher.out"
#define GPURUN_RUN_RENDEZVOUS_LOG "rendezvous.log"
#define GPURUN_RUN_OUTPUT_LOST "output-lost.txt"

/* A rank in a container: its entry there is `gpurun-rank --inside FD --
 * PROGRAM ARGS`, which reports the binding it finds inside (one JSON line)
 * on descriptor FD and execs the program.  GPURUN_ENV_INSIDE="1" tells the
 * rank step to open that descriptor for it and to report that binding. */
#define GPURUN_ENV_INSIDE "GPURUN_INSIDE_REPORT"
#define GPURUN_INSIDE_FD 3
#define GPURUN_INSIDE_ARG "--inside"

/* "plan.HOST.json", "HOST.out", "HOST.ranks.json": the host name made safe
 * for a file name. */
char *gpurun_host_plan_name(const char *host);
char *gpurun_host_output_name(const char *host);
char *gpurun_host_ranks_name(const char *host);

/* Where rank 0's output is in run folder `dir`: rank.0.out, or its host's
 * HOST.out, whose lines of rank 0 start with *label ("0: "; else "").
 * NULL when neither is there. */
char *gpurun_rank0_output(const char *dir, const char **label);
/* The label of rank 0's lines when `path` is a host's output file of a run
 * folder (HOST.out beside plan.HOST.json), else NULL. */
const char *gpurun_rank0_label(const char *path);

#endif
