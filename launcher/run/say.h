/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_SAY_H
#define GPURUN_SAY_H

/* gpurun's own output, on a terminal or in a batch job's file: every line
 * `gpurun run` says (its progress, figures, failures and warnings, the rank
 * output it relays, the status line) goes through gpurun_say(), so that
 *  - the lines come out in the order they were said, also where stdout and
 *    stderr are one file (`>f 2>&1`, slurm-*.out): each is flushed as said,
 *    after what the other stream still held;
 *  - a reader that went away never ends a run: the first write error on a
 *    stream (EPIPE: `| head`, less quit; EIO: the terminal hung up; ENOSPC:
 *    a full disk) ends gpurun's writing there, the latest run folder says so
 *    once (GPURUN_RUN_OUTPUT_LOST), and the run goes on to its end, its
 *    record and its own exit status. */

#include <stdio.h>
#include <sys/types.h>

/* Descriptors 0, 1 and 2 open, on /dev/null where they were closed: a file
 * gpurun opens later must never become its stdout or stderr. */
void gpurun_say_std_fds(void);

/* For the commands that run jobs: SIGPIPE no longer ends gpurun, its writes
 * fail with EPIPE instead.  Caught by a handler that does nothing rather
 * than ignored: a caught signal is back at its default in every program
 * gpurun execs (ranks, setup steps, launchers), an ignored one would not be. */
void gpurun_say_begin(void);

/* printf to `f`, stdout or stderr; nothing once that stream has gone. */
void gpurun_say(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The run folder (open as `dir_fd`, copied) that a lost stream's note goes
 * into, until the next one; its files have mode `mode`.  A stream already
 * lost is noted there at once: this run's output went nowhere either. */
void gpurun_say_run_folder(int dir_fd, mode_t mode);

#endif
