/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_PLUGIN_SUPPORT_H
#define GPURUN_PLUGIN_SUPPORT_H

/* What plugins call: the launch request a launcher plugin turns into
 * commands, and the helpers launcher and resource-manager plugins build
 * argv, scripts and tool runs with.  Part of gpurun's library
 * (launcher/lib/plugin_support.c), installed as <gpurun/plugin_support.h>
 * (launcher.h and rm.h include it); a plugin calls nothing else of gpurun
 * but error.h's gpurun_err() and these (tests/cli-layers.sh checks). */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "error.h"

struct gpurun_launch_request {
    int nodes;
    int ranks_per_node;
    int nranks;
    bool oversubscribe;
    const char *rank_step;      /* absolute path of the gpurun program */
    const char *run_dir;        /* the run folder (plan.json, topology.xml, host plans, HOST.out) */
    char *const *app_argv;      /* the program and its arguments */
    char *const *export_env;    /* NULL-terminated names the ranks must inherit */
    /* Options for the launcher itself, before the rank step (srun: pyxis's
     * --container-image, --container-mounts, --container-workdir); NULL:
     * none.  Added last: plugins built before it never read it. */
    char *const *launcher_args;
    /* Seconds the ranks have between the stop signal and SIGKILL (the
     * template's stop_grace): a launcher that kills ranks itself on a stop
     * (mpirun) is told to wait as long.  Added last, as above. */
    double stop_grace_s;
    int stop_signal; /* what the program gets on a stop (SIGTERM by default) */
};

/* What a plugin starts: argv[i] run with extra environment env[i]
 * ("NAME=VALUE" strings, NULL-terminated); `count` processes. */
struct gpurun_launch_cmds {
    int count;
    char ***argv;
    char ***env;
    /* A signal the launcher passes on to every rank as it is, for a launcher
     * whose own stop gives the ranks too little time (Open MPI's mpirun:
     * SIGCONT, SIGTERM, SIGKILL a second apart): gpurun sends it for a stop
     * instead, the rank steps give the program the stop signal for it
     * ($GPURUN_STOP_RELAY, "FROM:TO"), and the launcher gets SIGTERM only
     * when the grace is over.  0: none (the launcher gets the stop signal).
     * Added last: gpurun zeroes the struct for plugins built before it. */
    int stop_relay;
    /* A signal the launcher passes on to every rank step and not to the
     * program (mpirun: to the rank step's process group, the program has
     * its own; local: the launcher is the rank step): gpurun asks the rank
     * steps where a stalled program is with it ($GPURUN_STALL_SIGNAL).
     * 0: none, a stall is found and said but not sampled.  Added last. */
    int stall_relay;
    /* 1: the launcher copies its standard input to every rank step (srun,
     * flux run) while it signals every process of the step, the program
     * too: gpurun asks with a byte on the launcher's standard input instead
     * of stall_relay, and no signal reaches the program.  Added last. */
    int stall_ask_stdin;
};

/* --- launcher plugins -------------------------------------------------------- */

char **gpurun_argv_new(void);
void gpurun_argv_add(char ***argv, const char *s);
void gpurun_argv_addf(char ***argv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gpurun_argv_free(char **argv);
void gpurun_launch_cmds_free(struct gpurun_launch_cmds *c);
/* The rank step's argv: STEP rank --run-dir DIR -- APP... appended to argv. */
void gpurun_argv_add_rank_step(char ***argv, const struct gpurun_launch_request *req);
/* Absolute path of a program on PATH (a relative or empty entry resolved
 * against the current folder now), or of a path with a '/'; NULL: none. */
char *gpurun_which(const char *prog);
/* 0 when prog is on PATH; else -1 with why: "PROG was not found on PATH",
 * then " (HINT)" when hint is not NULL (where to get it). */
int gpurun_need_program(const char *prog, const char *hint, gpurun_error_t *why);
/* out becomes one process, argv (out owns it now), with no extra environment. */
void gpurun_launch_cmds_one(struct gpurun_launch_cmds *out, char **argv);
/* Another launcher by its name ("mpirun"), for a launcher that is that one
 * with some changes (PBS's: mpirun with the job's node file): 0 and *pp, or
 * -1 with why.  gpurun's launcher table answers (gpurun_launcher_lookup_set);
 * a plugin never names another's symbol. */
struct gpurun_launcher_plugin;
int gpurun_launcher_named(const char *name, const struct gpurun_launcher_plugin **pp, gpurun_error_t *why);
void gpurun_launcher_lookup_set(int (*find)(const char *name, const struct gpurun_launcher_plugin **pp,
                                            gpurun_error_t *why));
/* gpurun-rank, the rank step without the rest of gpurun (no hwloc, no
 * SQLite, ...: its start-up is most of a rank's cost), for the gpurun at
 * `gpurun_path`: beside it (a build folder), in ../libexec/gpurun (installed,
 * the prefix moved or not) or in the configured pkglibexecdir.  NULL when
 * none is there: `gpurun rank` then does it all. */
const char *gpurun_rank_program(const char *gpurun_path);

/* --- resource-manager plugins ------------------------------------------------ */

/* Text for a comment line of a script: control characters (C0, DEL, C1)
 * and bytes that are not UTF-8 written '?' (gpurun_comment_text()). */
void gpurun_rm_put_comment(FILE *f, const char *s);
/* One bash word: single-quoted, a quote written '\''. */
void gpurun_rm_put_shell_word(FILE *f, const char *s);
/* A name fit for a long option of a manager's batch command (sbatch,
 * flux batch): a letter, then letters, digits, '_' and '-' (job.c also
 * allows '.' in section keys: refused here). */
bool gpurun_rm_option_name_ok(const char *name);
/* A manager's submit command (argv, on PATH) with the script written at
 * `script` on its standard input (script_fd): 0 with its output in *outp
 * (malloc'ed, at most `max` bytes) when it exited 0; else -1 with err
 * (GPURUN_EXIT_ENV) naming `name` ("flux batch"): it could not start (not
 * on PATH: "is this WHERE? ... submit it with NAME where TITLE runs."), was
 * killed by a signal, or refused the job. */
int gpurun_rm_submit_tool(char *const argv[], int script_fd, size_t max, const char *name, const char *where,
                          const char *title, const char *script, char **outp, gpurun_error_t *err);

/* The bytes a job id may hold: digits (sbatch --parsable); printable ASCII
 * (qsub: "12.server"); those and bytes over 0x7f but DEL (flux batch:
 * "ƒ" and base 58). */
enum gpurun_rm_id_bytes { GPURUN_RM_ID_DIGITS, GPURUN_RM_ID_ASCII, GPURUN_RM_ID_UTF8 };
/* The job id a submit command printed in `out`: after leading blanks, the
 * bytes up to the first of `ends` (" \t\r\n") or the end, every one of
 * `bytes`, at least one and fewer than `max`.  Its length with *idp at its
 * start, or 0: none. */
size_t gpurun_rm_job_id(const char *out, const char *ends, enum gpurun_rm_id_bytes bytes, size_t max,
                        const char **idp);
/* A launcher's output read line by line for what the manager said of the
 * step: each row of `rules` is up to GPURUN_RM_LINE_WORDS words (unused
 * ones NULL) that one line must all hold.  The index of the first row that
 * a line holds, the rows tried in order on each line from the first line;
 * -1 when no line holds one.  slurm's "CANCELLED AT ... DUE TO TIME
 * LIMIT", flux's "job.exception ... type=timeout". */
#define GPURUN_RM_LINE_WORDS 4
int gpurun_rm_output_says(const char *out, const char *const rules[][GPURUN_RM_LINE_WORDS], size_t nrules);
/* What a manager's doctor() reports through: one line each (status 0 PASS,
 * 1 WARN, 2 FAIL; fix NULL on PASS), and a tool's one line of output (its
 * first line holding `want`, else its first; its last when it fails), its
 * exit status, or -1 when it is not on PATH. */
struct gpurun_rm_doctor {
    void *ctx;
    void (*check)(void *ctx, const char *id, const char *title, int status, const char *fix, const char *detail);
    int (*tool_line)(void *ctx, char *const argv[], const char *want, char *buf, size_t len);
};

/* Why `v` cannot be the value of a batch script's directive: "empty value",
 * "control character 0x0a (line break)" (0x0d: " (CR_NOTE)" when cr_note
 * is not NULL) in `why`; NULL when it can. */
const char *gpurun_rm_value_refusal(const char *v, const char *cr_note, char *why, size_t whylen);

/* One doctor line through d->check(), its detail formatted. */
void gpurun_rm_check(const struct gpurun_rm_doctor *d, const char *id, const char *title, int status,
                     const char *fix, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Run argv (on PATH, no shell) with standard input `stdin_fd` and standard
 * output captured into *outp (malloc'ed, at most `max` bytes kept; the
 * rest is read and dropped), standard error the caller's.  0 with *statusp
 * (128+N for signal N); -1 with *errnop when it could not be started
 * (ENOENT: not on PATH). */
int gpurun_rm_tool(char *const argv[], int stdin_fd, size_t max, char **outp, int *statusp, int *errnop);
/* A query of the manager's (its accounting): argv as above with standard
 * input /dev/null, standard error kept with the output, killed past
 * timeout_s (status 124). */
int gpurun_rm_query(char *const argv[], double timeout_s, size_t max, char **outp, int *statusp, int *errnop);

#endif
