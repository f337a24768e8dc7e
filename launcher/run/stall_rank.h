/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_STALL_RANK_H
#define GPURUN_STALL_RANK_H

/* The rank step's side of a stall (docs/running.md, "Stalls"): when gpurun
 * finds the run stalled it sends the launcher a signal that reaches every
 * rank step ($GPURUN_STALL_SIGNAL, not given to the program); each rank
 * step then looks at its own program (thread states, wchan, CPU time over
 * a few seconds, a stack from gdb, eu-stack or py-spy, each bounded in
 * time) and reports one line, MARK "H RANK {sample}", on its standard
 * output as its other reports go.  Nothing is read or written in the run
 * folder, and nothing runs until asked. */

#include <stdbool.h>
#include <sys/types.h>

#define GPURUN_ENV_STALL_SIGNAL "GPURUN_STALL_SIGNAL" /* "N": signal N asks for a sample */
#define GPURUN_STALL_SAMPLE_MAX 3800 /* bytes of a report line: one atomic write on a pipe */

/* Before the program starts: the signal that asks (0: none), its handler
 * set, and a descriptor that polls readable once it came (-1: none). */
int gpurun_stall_rank_setup(int *poll_fd);

/* Before the program starts, with stall detection on: the rank step's
 * standard input, where srun and flux run pass on gpurun's question (a
 * byte; stall_ask_stdin), moved to a descriptor of its own (-1: none);
 * the program gets /dev/null, as the launcher's own input is. */
int gpurun_stall_rank_stdin(void);

/* `*fd` (from gpurun_stall_rank_stdin) polled readable: false when a
 * question came; true at its end, *fd closed and -1. */
bool gpurun_stall_rank_asked(int *fd);

/* In the program's child before exec: its stack may be read by this rank
 * step's descendants where Yama's ptrace_scope is 1 (PR_SET_PTRACER with
 * the rank step's pid; the relation is kept across exec).  0, or -1 with
 * errno (EINVAL where the kernel has no Yama: nothing to allow). */
int gpurun_stall_allow_tracer(pid_t rank_step);

/* `poll_fd` polled readable: drain it and start a sampler (a detached
 * grandchild) for program `pid` of `rank`, whose line goes to standard
 * output.  `ended`: the program is gone already. */
void gpurun_stall_rank_request(int poll_fd, pid_t pid, int rank, const char *host, bool ended, int end_code);

/* For tests and the sampler: one sample of process `pid` as JSON text
 * (malloc'ed), sampled over `window_s` seconds. */
char *gpurun_stall_sample_text(pid_t pid, double window_s);

/* Whether a frame's function is the communication library's: MPI (and
 * Open MPI's, MPICH's, PMIx's insides), NCCL, gloo, PyTorch's c10d,
 * OpenSHMEM.  The rank step keeps a long stack down to the first such
 * frame; gpurun's verdict calls a rank waiting there "waits in MPI". */
bool gpurun_stall_comm_frame(const char *f);

/* The stack tool this host has: "eu-stack", "gdb" or NULL (py-spy is used
 * for a Python program where present). */
const char *gpurun_stall_stack_tool(void);
#endif
