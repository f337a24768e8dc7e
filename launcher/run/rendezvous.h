/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_RENDEZVOUS_H
#define GPURUN_RENDEZVOUS_H

/* The rendezvous store that gpurun hosts for a torchrun template
 * (params.rendezvous = "store", the default): torch's own TCPStore, in a
 * small Python process of gpurun's on this host, that binds its port
 * itself (the kernel's choice for "auto", else the job's number) and holds
 * it until the ranks have ended.  No port is chosen and then let go, so
 * another user of the host can neither take it before the job does nor
 * listen in its place; the ranks are all its clients
 * (TORCHELASTIC_USE_AGENT_STORE, as under torchrun's agent). */

#include <sys/types.h>

#include "error.h"

/* How long the store may take to listen (Python's start and torch's
 * import), at most. */
#define GPURUN_STORE_START_S 300L

struct gpurun_store {
    pid_t pid; /* 0: none */
    int port;
};

/* Starts `argv` (an interpreter that can import torch.distributed, the
 * container runtime's command around it where the job has one) with
 * gpurun_store_args() appended, in the run folder open as `dir_fd`, its
 * chatter into `log_fd`, and waits up to `bound_s` for it to listen.
 * 0 with s->port, or an error (exit 3, or 128+N when gpurun was
 * interrupted meanwhile) that says why, with the end of `log_path`'s text. */
int gpurun_store_start(char *const *argv, int port, long bound_s, int dir_fd, const char *run_dir,
                       int log_fd, const char *log_path, struct gpurun_store *s, gpurun_error_t *err);

/* The arguments of the store's interpreter: -c PROGRAM PORT WORLD BOUND,
 * appended to *argv (gpurun_argv_add). */
void gpurun_store_args(char ***argv, int port, int world_size, long bound_s);

/* Ends the store (once; nothing when there is none). */
void gpurun_store_stop(struct gpurun_store *s);

#endif
