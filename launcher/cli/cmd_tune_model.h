/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_CMD_TUNE_MODEL_H
#define GPURUN_CMD_TUNE_MODEL_H

/* Internal to gpurun tune: a session and its candidates as data (cmd_tune.c
 * runs them, cmd_tune_report.c judges and prints them). */

#include "provenance.h"
#include "alloc.h"
#include "hpldat.h"
#include "cmd.h"
#include "cmd_common.h"
#include "energy.h"
#include "job.h"
#include "manager.h"
#include "plan.h"
#include "record.h"
#include "results.h"
#include "run.h"
#include "select.h"
#include "safefile.h"
#include "site.h"
#include "template.h"
#include "job_template.h"
#include "topology.h"
#include "tune.h"
#include "util.h"
#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

enum objective { OBJ_FIGURE, OBJ_COST, OBJ_SPOT, OBJ_ENERGY, OBJ_N };

struct cand {
    char *label;
    char **sets; /* the candidate's --set assignments (its axes) */
    size_t nsets;
    char *pruned; /* why it cannot run here (or need not: the same run as another); NULL: it can */
    char *same;   /* what it runs, HPL's grid resolved ("params.grid=1x2 ..."): two alike run once */
    char *failed; /* why a trial failed; it is out of the search */
    long gpus, ranks, threads;
    /* per objective, the trials' values */
    double *v[OBJ_N];
    size_t nv[OBJ_N];
    double wall; /* seconds of its trials */
    size_t busy_runs;  /* trials whose record said busy: not decided on, repeated */
    int busy_streak;   /* busy trials in a row */
    int dropped_round; /* -1: not dropped */
    struct gpurun_tune_cand tc; /* the search's view of the chosen objective */
};

struct tune {
    const char *job_path;
    gpurun_job_t *job;
    gpurun_template_t *tpl;
    struct gpurun_tune_space sp;
    char session[20];
    const char *results_opt;
    char *results; /* absolute */
    const char *objective;
    enum objective obj;
    char *fom;     /* the figure's name; NULL until known */
    bool fom_lower; /* better = lower */
    struct cand *c;
    size_t n;
    int next_trial;
    long budget_s;
    double spent;
    size_t ran, reused;
    bool fresh;               /* --fresh: no trial of the store reused */
    struct gpurun_select sel; /* which of the store's trials may be reused */
    size_t skipped_busy, skipped_prov;
    char *skipped_why;        /* the first reason a trial was not reused */
    json_t *hashes;           /* path -> its SHA-256 now */
    int jfd; /* RESULTS/JOB, opened as gpurun run opens it: the session file goes there */
};

#endif
