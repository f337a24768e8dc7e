/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_RUN_PRIVATE_H
#define GPURUN_RUN_PRIVATE_H

/* What run.c, outcome.c and run_record.c share: one run's context and attempt, what its
 * ranks reported, and what run.c asks of the other two (they ask nothing of it).  Not an
 * interface: only these three include it. */

#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include <jansson.h>

#include "container.h"
#include "fom.h"
#include "gpudirect.h"
#include "hpldat.h"
#include "launch.h"
#include "manager.h"
#include "mps.h"
#include "plan.h"
#include "plugin.h"
#include "rank.h"
#include "rendezvous.h"
#include "run_opts.h"
#include "site.h"
#include "stall.h"
#include "template.h"
#include "topology.h"
#include "util.h"
#include "watch.h"

struct rank_result {
    /* The first rank that failed on its own (not told to stop first), else
     * the first that failed after it was told to stop; -1 if none. */
    int failed_rank;
    bool failed_stopped; /* no rank failed on its own: failed_rank was stopped */
    int failed_code;
    char failed_host[256];
    char failed_error[512]; /* why its rank step could not start the program, or "" */
    int finished;       /* ranks that wrote a status */
    /* Ranks that started (a binding) and never reported an end, nor that
     * they were told to stop, by host ("h2 (ranks 2, 3)"): on another
     * host than gpurun's, lost with their host (or the launcher's daemon
     * there); on gpurun's own host, killed without a word (SIGKILL). */
    int nlost;
    char lost[512];
    int nsilent;
    char silent[512];
    int first_lost;     /* the first of those lost ranks, -1 */
    /* Ranks told to stop (a 'T' report) and killed before they could
     * report their program's end: stopped, neither lost nor failed. */
    int nstopped;
    int stop_rank, stop_signal; /* the first rank told to stop and the signal; -1, 0: none */
    char unstarted[512]; /* "node 3 (ranks 6-7)": ranks that reported nothing at all */
    json_t *bindings;   /* what every rank reported */
    json_t *statuses;
    char unwritten[2048]; /* why a host's HOST.ranks.json could not be written, or "" */
};

struct run_ctx {
    gpurun_job_t *job;
    const struct gpurun_run_opts *opts;
    gpurun_template_t *tpl;
    gpurun_topo_t *topo;
    gpurun_plan_t *plan;
    const gpurun_launcher_plugin_t *launcher;
    /* The resource manager of the launcher (srun: Slurm), else of the
     * allocation gpurun runs in; NULL: none. */
    const gpurun_rm_plugin_t *rm;
    char launcher_why[256];
    char alloc_note[256];
    char *command;       /* template command (+ gpu_args), unexpanded */
    char *results;
    gpurun_site_t *site;
    json_t *config;      /* this configuration's scan values: {"ranks_per_node": 2} */
    gpurun_request_t req; /* as the job asks, before this node resolved it: other hosts plan with it */
    gpurun_gdr_probe_t *gdr_probe; /* this node's GPUDirect pieces: probed once per gpurun run */
    json_t *gdr;                   /* this configuration's GPUDirect decision, for its records */
    char *job_dir;        /* the job file's folder, absolute */
    char stopped[200];    /* why the last run stopped the whole job (interrupted, the allocation's time
                           * limit), or "": a scan or repeat goes no further */
    struct gpurun_container_run *ctr; /* the container the ranks run in; NULL: none */
    struct scan_row *row; /* where run_once says how the run went, for a scan's summary; NULL: nowhere */
    struct gpurun_hpl_edit hpl; /* this configuration's NB and P x Q for the template's hpl_dat; inactive: none */
};

/* One run of a scan or repeat, for the summary table at its end. */
struct scan_row {
    char *config;    /* what varies ("ranks_per_node=2, params.npme=1"), "" none */
    int repeat;      /* 1-based */
    const char *state; /* the record's; NULL: not started or no record */
    char fom[160];   /* "ns_per_day = 41.2 ns/day"; "" none */
    char *folder;    /* the run folder; NULL: none was made */
    int rc;
};

/* One run of the job, from its folder's creation to its record: what the
 * steps of run_once share. */
struct run_attempt {
    char *run_dir;
    int dfd; /* the run folder's descriptor */
    ino_t dir_ino;
    mode_t fmode;                 /* the run folder's files' mode */
    char host[256];               /* this host's name */
    struct gpurun_kvlist names;   /* what the template's {names} expand to */
    char **app;                   /* the program and its arguments */
    char **launched;              /* what the rank steps start instead (the container runtime); NULL: app */
    time_t start;
    struct gpurun_launch_cmds cmds;
    struct gpurun_outcome oc;
    struct rank_result rr;
    json_t *gpus_monitor;
    char mon_why[512]; /* why there is no GPU monitor, or "" */
    struct gpurun_rapl *rapl0, *rapl1; /* this host's RAPL counters around the ranks; NULL: not read */
    int setup_fd;      /* setup.log; -1 until a setup step runs */
    struct gpurun_mps mps;
    json_t *mps_json;
    struct gpurun_store store; /* the rendezvous store gpurun hosts, if any */
    int rdv_port;              /* MASTER_PORT: the store's, or rank 0's to bind; 0: none */
    json_t *rdv_json;          /* the record's "rendezvous"; NULL: not a torchrun template */
    gpurun_watch_t *watch; /* progress lines and status.json (watch.h) */
    gpurun_stall_t *stall; /* stall detection (stall.h); NULL: off */
    int rc;            /* the exit status a step that stopped the run ended with */
    const char *state; /* the record's: GPURUN_STATE_OK, ... (results.h) */
    int why_rank;      /* the rank the record's failure names (its output): -1 none */
    char why[600];     /* the failure's reason, one line */
    bool tail_read;
    struct gpurun_rank_tail tail; /* the end of why_rank's output */
    char *tail_file;
    json_t *failure;   /* the record's failure; NULL: none */
    bool stops_job;    /* interrupted, or the allocation ended: no further run of a scan */
    gpurun_foms_t foms;
    json_t *refs;
    json_t *prov; /* the record's provenance, made at the start */
};

/* The host rank r reported from (its binding); NULL: it reported nothing. */
static inline const char *rank_host(const struct rank_result *rr, int r)
{
    return r < 0 ? NULL : json_string_value(json_object_get(json_array_get(rr->bindings, (size_t)r), "host"));
}

/* run_record.c: the run's record, made and kept */
/* run.c, for run_job.c: one run of the configuration planned in c (its
 * repeat_index-th), a dry run's lines instead, and what a configuration
 * needs of the container before it runs. */
int run_once(struct run_ctx *c, int repeat_index, gpurun_error_t *err);
int run_dry_run_config(struct run_ctx *c, gpurun_error_t *err);
void run_container_inside(struct run_ctx *c);
/* run_dry.c: a dry run's lines, from the launcher's commands `cmds` (and
 * a container's planning step) for the program `app`. */
void run_dry_run_print(const struct run_ctx *c, char *const *app, const struct gpurun_launch_cmds *cmds,
                       char *const *plan_step, const struct gpurun_kvlist *env);
void run_container_env_names(struct run_ctx *c);
/* `p` made absolute against `dir` (malloc'ed). */
char *run_abs_path(const char *dir, const char *p);
json_t *run_record(struct run_ctx *c, struct run_attempt *a, int rc, int repeat_index);
int run_keep_record(struct run_ctx *c, struct run_attempt *a, json_t *record, int rc, gpurun_error_t *err);
json_t *run_container_json(const struct run_ctx *c, char *const *launched);
char *run_iso_time(time_t t);
json_t *run_kv_json(const struct gpurun_kvlist *kv);

/* outcome.c: how a run ended, and what its record and stderr say of it */
const char *run_sig_abbrev(int sig, char *buf, size_t len);
void run_status_text(int code, char *buf, size_t len);
int run_decide_outcome(struct run_ctx *c, struct run_attempt *a, gpurun_error_t *err);
void run_read_partial_foms(struct run_ctx *c, struct run_attempt *a);
json_t *run_foms_note(const struct run_ctx *c, const struct run_attempt *a);
void run_failure_report(struct run_ctx *c, struct run_attempt *a, int rc);
char *run_launcher_tail(int dfd, const char *run_dir);
void run_unstarted_ranks(const gpurun_plan_t *plan, struct rank_result *rr);
const char *run_signal_name(int code);
void run_read_tail(struct run_attempt *a, const char *file, const char *label, const gpurun_template_t *tpl);
int run_check_results(struct run_ctx *c, struct gpurun_kvlist *names, const char *run_dir, gpurun_foms_t *foms,
                      json_t *refs, const char **state, gpurun_error_t *err);

#endif
