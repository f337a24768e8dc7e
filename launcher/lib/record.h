/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_RECORD_H
#define GPURUN_RECORD_H

/* A run's record (record.json, SPEC §7): its keys, its states, its failure,
 * and reading one defensively.  The one module that spells the record's
 * keys: run.c writes them, results.c indexes them, report.c and `gpurun
 * results` read them, all through these names. */

#include <stdbool.h>

#include <jansson.h>

/* ---- its keys ----------------------------------------------------------- */
#define GPURUN_REC_RUN_ID "run_id"                         /* the run folder's name */
#define GPURUN_REC_JOB "job"
#define GPURUN_REC_TEMPLATE "template"
#define GPURUN_REC_START "start"                           /* UTC, ISO 8601 */
#define GPURUN_REC_END "end"
#define GPURUN_REC_WALL_S "wall_s"                         /* seconds */
#define GPURUN_REC_EXIT_STATUS "exit_status"               /* as gpurun exited */
#define GPURUN_REC_STATE "state"                           /* one of GPURUN_STATE_* */
#define GPURUN_REC_NODES "nodes"
#define GPURUN_REC_RANKS "ranks"
#define GPURUN_REC_GPUS_PER_RANK "gpus_per_rank"
#define GPURUN_REC_THREADS_PER_RANK "threads_per_rank"
#define GPURUN_REC_GPUS "gpus"                             /* ranks x gpus_per_rank */
#define GPURUN_REC_LAUNCHER "launcher"
#define GPURUN_REC_LAUNCHER_CHOICE "launcher_choice"       /* why that launcher */
#define GPURUN_REC_ALLOCATION "allocation"                 /* what the resource manager gave */
#define GPURUN_REC_HOSTS "hosts"                           /* [host names] */
#define GPURUN_REC_GPU_MODEL "gpu_model"
#define GPURUN_REC_CPU_MODEL "cpu_model"                   /* hwloc's CPUModel; null: unknown */
#define GPURUN_REC_PROGRAM_VERSION "program_version"       /* the template's `version` from the log; null */
#define GPURUN_REC_PARAMS "params"                         /* {the template params} */
#define GPURUN_REC_REPEAT_INDEX "repeat_index"
#define GPURUN_REC_COMMAND "command"                       /* [argv] */
#define GPURUN_REC_CONTAINER "container"
#define GPURUN_REC_PLAN "plan"                             /* the plan JSON */
#define GPURUN_REC_HOST_PLANS "host_plans"                 /* each host's own plan */
#define GPURUN_REC_BINDINGS "bindings"                     /* what the ranks reported */
#define GPURUN_REC_RANK_STATUS "rank_status"
#define GPURUN_REC_GPURUN_VERSION "gpurun_version"
#define GPURUN_REC_GPUDIRECT "gpudirect"
#define GPURUN_REC_RENDEZVOUS "rendezvous"                 /* torchrun templates */
#define GPURUN_REC_MPS "mps"
#define GPURUN_REC_GPUS_MONITOR "gpus_monitor"             /* {util_mean, mem_peak_mib, power_mean_w, ...} */
#define GPURUN_REC_GPUS_MONITOR_NOTE "gpus_monitor_note"   /* why none */
/* inside each entry of GPURUN_REC_GPUS_MONITOR */
#define GPURUN_REC_TEST_HOOK "test_hook" /* "GPURUN_NVML_LIBRARY=/x.so": read through a library a test chose */
/* A gpus_monitor entry's "monitor" in records from before entries named
 * theirs: the one gpurun had then, NVML. */
#define GPURUN_REC_GPU_MONITOR_UNNAMED "nvml"
#define GPURUN_REC_FOMS "foms"                             /* {NAME: {value, values, units, better, file}} */
#define GPURUN_REC_REFERENCES "references"
#define GPURUN_REC_CONFIG "config"                         /* what varies in a scan */
#define GPURUN_REC_SITE "site"
#define GPURUN_REC_PRICE_PER_GPU_HOUR "price_per_gpu_hour"
#define GPURUN_REC_SPOT_PRICE_PER_GPU_HOUR "spot_price_per_gpu_hour"
#define GPURUN_REC_CURRENCY "currency"
#define GPURUN_REC_ENERGY "energy"                         /* measured energy: energy.h says its keys */
/* inside GPURUN_REC_ENERGY */
/* a resource manager's own figure (its plugin's energy(); e.g. Slurm's
 * "slurm_consumed_J"): J, null when none; and where it came from, or why none */
#define GPURUN_REC_ENERGY_RM_CONSUMED_J "%s_consumed_J"
#define GPURUN_REC_ENERGY_RM_NOTE "%s_note"
#define GPURUN_REC_FOMS_NOTE "foms_note"   /* why figures are missing from a run that did not end ok */
#define GPURUN_REC_PROGRESS "progress" /* the last known: {step, total, figure, units, at_s}; null: none seen */
/* {after_s, detected_s, report_s, culprits [{rank, host, pid, state, where}], classes [{ranks, count,
 * state, frames}], deadlock, verdict}: the last stall found (run/stall.h); absent: none */
#define GPURUN_REC_STALL "stall"
#define GPURUN_REC_TUNE "tune"                             /* gpurun tune's trial: {session, trial, candidate} */
#define GPURUN_REC_NOTES "notes"                           /* [sentences]: what the record lacks and why (a
                                                            * template regex dropped past its time budget) */
#define GPURUN_REC_PROVENANCE "provenance"                 /* what the run ran from: provenance.h */
/* inside GPURUN_REC_PROVENANCE */
#define GPURUN_REC_PROV_JOB "job"             /* {path, sha256, copy}: the job file, kept as copy */
#define GPURUN_REC_PROV_TEMPLATE "template"   /* {name, path, sha256, copy, bases [{name, path, sha256, copy}]} */
#define GPURUN_REC_PROV_OVERRIDES "overrides" /* ["KEY=VALUE"]: the command line's, in order */
#define GPURUN_REC_PROV_PROGRAM "program"     /* {path, size, sha256, sampled} */
#define GPURUN_REC_PROV_INPUTS "inputs"       /* [{path, size, sha256, sampled}] */
#define GPURUN_REC_PROV_VERSIONS "versions"   /* {program, mpi, driver, gpurun} */
#define GPURUN_REC_PROV_NOTES "notes"         /* [sentences]: what could not be read or kept */
/* inside those */
#define GPURUN_REC_PROV_PATH "path"
#define GPURUN_REC_PROV_NAME "name"
#define GPURUN_REC_PROV_SHA256 "sha256"
#define GPURUN_REC_PROV_SIZE "size"
#define GPURUN_REC_PROV_SAMPLED "sampled" /* true: the first, middle and last MiB hashed, not the whole */
#define GPURUN_REC_PROV_COPY "copy"       /* the kept copy, relative to the run folder */
#define GPURUN_REC_PROV_BASES "bases"
#define GPURUN_REC_PROV_GPURUN "gpurun"
#define GPURUN_REC_PROV_MPI "mpi"         /* the first line of `mpirun --version`; null: none */
#define GPURUN_REC_PROV_DRIVER "driver"   /* the GPU driver's version (the monitor's); null: none */
#define GPURUN_REC_CONDITIONS "conditions"   /* what the run ran beside: conditions.h; null: none reported */
/* inside GPURUN_REC_CONDITIONS (the run's: the worst host's figures) */
#define GPURUN_REC_COND_BUSY "busy"                    /* true/false; null: the verdict is off */
#define GPURUN_REC_COND_WHY "why"                      /* one line; null when not busy */
#define GPURUN_REC_COND_FOREIGN_CPU_SHARE "foreign_cpu_share" /* others' share of the run's cores' time, 0..1 */
#define GPURUN_REC_COND_LOAD1 "load1"                  /* the highest 1-minute load seen */
#define GPURUN_REC_COND_CPU_MHZ "cpu_mhz"              /* the run's cores' mean clock; null: unknown */
#define GPURUN_REC_COND_THROTTLED "throttled"          /* CPU thermal throttling seen; null: unknown */
#define GPURUN_REC_COND_GPU_THROTTLED "gpu_throttled"  /* GPU thermal/hardware slowdown seen; null: no GPU read */
#define GPURUN_REC_COND_GPU_OTHERS "gpu_others"        /* other processes seen on the run's GPUs (a count;
                                                        * a host's entry lists them) */
#define GPURUN_REC_COND_HOSTS "hosts"                  /* {HOST: its figures, as its rank step sent them} */
#define GPURUN_REC_COND_BUSY_SHARE "busy_share"        /* the threshold used; null: off */
/* inside each host of GPURUN_REC_COND_HOSTS, besides the keys above */
#define GPURUN_REC_COND_CORES "cores"                  /* "0-3,8": the run's cores there */
#define GPURUN_REC_COND_SECONDS "seconds"              /* measured from the start to the last sample */
#define GPURUN_REC_COND_FOREIGN_CPU_S "foreign_cpu_s"  /* CPU seconds others took on those cores */
#define GPURUN_REC_COND_OWN_CPU_S "own_cpu_s"          /* the run's own processes there */
#define GPURUN_REC_COND_CORES_CPU_S "cores_cpu_s"      /* the cores' time: cores x seconds */
#define GPURUN_REC_COND_CPU_MHZ_MIN "cpu_mhz_min"
#define GPURUN_REC_COND_MEM_AVAILABLE_MIB "mem_available_mib" /* the least seen */
#define GPURUN_REC_COND_THROTTLE_EVENTS "throttle_events"    /* thermal_throttle counts; null: unknown */
#define GPURUN_REC_COND_GPUS "gpus"                    /* [{pci, sm_clock_mhz_min, sm_clock_max_mhz, reasons}] */
#define GPURUN_REC_COND_FOREIGN "foreign"              /* [{name, pid, user, cpu, share}]: named when over */
#define GPURUN_REC_COND_SAMPLES "samples"
#define GPURUN_REC_COND_FINAL "final"                  /* the end's sample is in */
/* inside each entry of GPURUN_REC_FOMS */
#define GPURUN_REC_FOM_VALUE "value"
#define GPURUN_REC_FOM_VALUES "values"
#define GPURUN_REC_FOM_UNITS "units"
#define GPURUN_REC_FOM_BETTER "better"
#define GPURUN_REC_FOM_FILE "file"
#define GPURUN_REC_FOM_ENERGY_PER_UNIT "energy_per_unit"     /* {value, units}: J/ns, J/GFLOP, J/image, ... */
#define GPURUN_REC_FOM_KIND "kind"                         /* throughput | time | other */

/* ---- its states and failure -------------------------------------------- */

#define GPURUN_STATE_OK "ok"
#define GPURUN_STATE_FAILED "failed"
#define GPURUN_STATE_TIMEOUT "timeout"
#define GPURUN_STATE_INTERRUPTED "interrupted"
#define GPURUN_STATE_SANITY_FAILED "sanity_failed"
#define GPURUN_STATE_REFERENCE_FAILED "reference_failed"
#define GPURUN_STATE_STALLED "stalled" /* ended by on_stall = "kill" */

/* The record's "failure", for every state but ok: {"rank": the rank that
 * failed first, or whose output was running (null: none, the launcher
 * failed), "host": its host (null: unknown), "status": the run's exit
 * status, "reason": one line (the line of its output that names the cause,
 * else "exit status N", "killed by signal SIGSEGV", "time limit reached",
 * ...), "tail": [its last lines]}.  rank < 0: null; host NULL: null. */
#define GPURUN_RECORD_FAILURE "failure"
json_t *gpurun_record_failure(int rank, const char *host, int status, const char *reason, char *const *tail,
                              size_t ntail);
/* A failure in a setup step (1-based) rather than a rank: "step": N and
 * "command": the step's line as the template has it. */
void gpurun_record_failure_step(json_t *failure, int step, const char *command);
/* A run's failure in one line, fit for a terminal: "rank 0 on vm: REASON"
 * (or REASON alone); NULL when the run has none.  Malloc'ed. */
char *gpurun_record_failure_text(const json_t *run);

/* ---- reading a record defensively (any field may be missing) ---------- */

/* An integer field, or `dflt` when missing or not an integer. */
long gpurun_record_int(const json_t *run, const char *key, long dflt);
/* A number field, or NAN. */
double gpurun_record_num(const json_t *run, const char *key);
/* A string field, or NULL. */
const char *gpurun_record_str(const json_t *run, const char *key);
/* Total GPUs: "gpus", else ranks * gpus_per_rank; -1 unknown. */
long gpurun_record_gpus(const json_t *run);
/* The value of one entry of "foms": its "value", else the last of its
 * "values"; false when there is none. */
bool gpurun_record_fom_value(const json_t *fom, double *v);
/* The run's configuration as "key=value key=value" ("config", else "-"). */
char *gpurun_record_config_text(const json_t *run);

#endif
