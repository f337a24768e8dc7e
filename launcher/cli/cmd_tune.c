/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun tune JOB.conf: search the layouts of a job (issue 32).
 *
 * Each candidate of the space (lib/tune.h) is the job with a few --set
 * assignments; it is planned as `gpurun run` plans it, and one the node
 * cannot run is listed with the planner's reason and never started.  The
 * others run as ordinary runs (run/run.c), tagged "tune": {session, trial,
 * candidate} in their records, by successive halving: every candidate once,
 * the better half (and those inside the noise) again, until one is left or
 * the budget is spent.  The results store is the truth: trials of the same
 * session found there are not run again, so an interrupted tune goes on
 * where it stopped. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
#include "cmd_tune_model.h"
#include "cmd_tune_report.h"

#define TUNE_ROUNDS_MAX 16
#define TUNE_PASSES_MAX 3 /* of the axis search */
#define TUNE_FINALISTS 16  /* the axis search's best, handed to the halving */
#define TUNE_BUSY_REPEATS 2 /* a trial that ran busy is run again at most this often */
/* gpurun_err() and the exit status it sets. */
#define TUNE_ERR(err, code, ...) (gpurun_err((err), (code), __VA_ARGS__), (code))

static const char tune_usage[] =
    "Usage: gpurun tune JOB.conf [--objective FIGURE|cost|spot|energy] [--budget DURATION] [--dry-run]\n"
    "                            [--results DIR] [--fresh] [--since TIME] [--until TIME] [--last N]\n"
    "                            [--runs ID,...] [--where KEY=VALUE]...\n"
    "\n"
    "Find the best layout of a job on this node.  The candidates are the job's tune { } block\n"
    "(the keys scan takes, ranks_per_gpu and params.NAME), or else its template's tune_space;\n"
    "each is planned first, and one this node cannot run is listed with the reason and never\n"
    "started.  The others run as ordinary runs, shortened as the template's tune_short says, by\n"
    "successive halving: all once, the better half (and those within the noise) again, until\n"
    "one is left or the budget is spent.  A difference within the noise is a tie, and a tie\n"
    "goes to the layout using fewer GPUs, then ranks, then threads.  Trials are in the results\n"
    "(gpurun results), tagged with the tune session; a tune run again goes on where it stopped.\n"
    "A trial whose record says busy (other processes on its cores or GPUs, or throttling) is\n"
    "never decided on and is run again, at most twice.  An earlier trial is reused only when it\n"
    "was measured with the same gpurun, program and inputs (their hashes in its record, hashed\n"
    "again now) and was not busy.  At the end: the trials and what happened to each, the best\n"
    "layout for each objective with its margin and confidence, why it won, the layouts no other\n"
    "beats on every objective and on resources, and JOB.tuned.conf beside the job file (not\n"
    "written again when a tuned file there says the same).\n"
    "\n"
    "  --objective OBJ    the template's figure of merit by name (default: its first), cost\n"
    "                     (price per GPU-hour of the job's site x GPUs / work), spot (the same\n"
    "                     at the site's spot price), or energy (joules per unit of work, where\n"
    "                     the node measures energy)\n"
    "  --budget DURATION  stop starting trials after this long (90s, 30m, 2h)\n"
    "  --dry-run          list the candidates, the pruned ones with why, and the trials and\n"
    "                     time they would take; start nothing\n"
    "  --results DIR      results folder (default: the job's `results`)\n"
    "  --fresh            reuse no earlier trial: measure every one again\n"
    "  --since, --until, --last, --runs, --where   which earlier trials may be reused, as\n"
    "                     gpurun results selects runs (gpurun results --help)\n"
    "  -h, --help         this help\n"
    "\n"
    "Exit status: 0 a layout was chosen; 1 no candidate produced the figure (or every trial ran\n"
    "busy); 2 bad job file, option or selection value (or an objective not measured here); 3 no candidate can run on this node;\n"
    "130/143 interrupted (run it again to go on).\n";



static void push(struct cand *c, enum objective o, double v)
{
    c->v[o] = gpurun_xrealloc(c->v[o], (c->nv[o] + 1) * sizeof *c->v[o]);
    c->v[o][c->nv[o]++] = v;
}

/* One trial's record into its candidate: the figure, the cost per unit of
 * work (on-demand; spot in the table), the energy per unit.  0 taken; 1 a
 * busy trial (why: the record's why), never decided on; -1 failed. */
static int take_record(struct tune *t, struct cand *c, const json_t *rec, char *why, size_t whylen)
{
    const char *state = gpurun_record_str(rec, GPURUN_REC_STATE);
    if (!state || strcmp(state, GPURUN_STATE_OK) != 0) {
        char *f = gpurun_record_failure_text(rec);
        snprintf(why, whylen, "%s%s%s", state ? state : "no state", f ? ": " : "", f ? f : "");
        free(f);
        return -1;
    }
    if (gpurun_run_busy(rec)) {
        const char *w = gpurun_record_str(json_object_get(rec, GPURUN_REC_CONDITIONS), GPURUN_REC_COND_WHY);
        snprintf(why, whylen, "%.200s", w ? w : "other processes on its cores or GPUs, or throttling");
        return 1;
    }
    json_t *foms = json_object_get(rec, GPURUN_REC_FOMS);
    const char *name;
    json_t *fom = NULL, *e;
    if (t->fom) {
        fom = json_object_get(foms, t->fom);
    } else {
        json_object_foreach(foms, name, e) {
            double x;
            if (gpurun_record_fom_value(e, &x)) {
                fom = e;
                t->fom = gpurun_xstrdup(name);
                const char *b = gpurun_record_str(e, GPURUN_REC_FOM_BETTER);
                t->fom_lower = b && !strcmp(b, "lower");
                break;
            }
        }
    }
    double v;
    if (!fom || !gpurun_record_fom_value(fom, &v) || !isfinite(v)) {
        snprintf(why, whylen, "no figure of merit%s%s in its record", t->fom ? " " : "", t->fom ? t->fom : "");
        return -1;
    }
    push(c, OBJ_FIGURE, v);
    long gpus = gpurun_record_gpus(rec);
    const char *units = gpurun_record_str(fom, GPURUN_REC_FOM_UNITS);
    double cost = t->fom_lower ? NAN : gpurun_tune_cost(gpurun_record_num(rec, GPURUN_REC_PRICE_PER_GPU_HOUR), gpus, v, units);
    double spot = t->fom_lower ? NAN : gpurun_tune_cost(gpurun_record_num(rec, GPURUN_REC_SPOT_PRICE_PER_GPU_HOUR), gpus, v, units);
    if (isfinite(cost))
        push(c, OBJ_COST, cost);
    if (isfinite(spot))
        push(c, OBJ_SPOT, spot);
    json_t *epu = json_object_get(fom, GPURUN_REC_FOM_ENERGY_PER_UNIT);
    double ev = epu ? gpurun_record_num(epu, "value") : NAN;
    if (isfinite(ev) && ev > 0)
        push(c, OBJ_ENERGY, ev);
    double wall = gpurun_record_num(rec, GPURUN_REC_WALL_S);
    if (isfinite(wall))
        c->wall += wall;
    return 0;
}

static struct cand *cand_of(struct tune *t, const char *label)
{
    for (size_t i = 0; label && i < t->n; i++)
        if (!strcmp(t->c[i].label, label))
            return &t->c[i];
    return NULL;
}

/* ---- reusing the store's trials ------------------------------------------ */

/* SHA-256 of a file as its record took it (provenance.h): whole, or
 * sampled; false when it cannot be read. */
static bool hash_now(const char *path, bool sampled, char hex[65])
{
    struct gpurun_file_hash h;
    gpurun_error_t e = {0};
    if (gpurun_hash_file(path, sampled ? 0 : LLONG_MAX, &h, &e) < 0)
        return false;
    memcpy(hex, h.sha256, 65);
    return true;
}

/* Whether the file a record names ({path, sha256, sampled}) is the same
 * now; hashes are kept per path, so that a session's trials hash each file
 * once. */
static bool file_same(struct tune *t, const json_t *f, const char *what, char *why, size_t n)
{
    const char *path = gpurun_record_str(f, "path"), *sha = gpurun_record_str(f, "sha256");
    if (!path || !sha) {
        snprintf(why, n, "its record has no hash of its %s", what);
        return false;
    }
    bool sampled = json_is_true(json_object_get(f, "sampled"));
    char *key = gpurun_xasprintf("%s\n%d", path, sampled);
    const char *now = json_string_value(json_object_get(t->hashes, key));
    if (!now) {
        char hex[65] = "";
        json_object_set_new(t->hashes, key, json_string(hash_now(path, sampled, hex) ? hex : ""));
        now = json_string_value(json_object_get(t->hashes, key));
    }
    free(key);
    if (strcmp(now, sha) != 0) {
        snprintf(why, n, "its %s %.200s %s since", what, path, *now ? "changed" : "cannot be read");
        return false;
    }
    return true;
}

/* Whether a stored trial measured what a trial now would: the same gpurun,
 * program and inputs (the record's provenance, hashed again now). */
static bool same_provenance(struct tune *t, const json_t *run, char *why, size_t n)
{
    const char *v = gpurun_record_str(run, GPURUN_REC_GPURUN_VERSION);
    if (!v || strcmp(v, PACKAGE_VERSION) != 0) {
        snprintf(why, n, "measured with gpurun %.40s, this is %s", v ? v : "(unknown)", PACKAGE_VERSION);
        return false;
    }
    json_t *prov = json_object_get(run, GPURUN_REC_PROVENANCE);
    if (!json_is_object(prov)) {
        snprintf(why, n, "their records have no provenance (the program's and inputs' hashes), so what they "
                         "measured cannot be told the same");
        return false;
    }
    if (!file_same(t, json_object_get(prov, "program"), "program", why, n))
        return false;
    size_t i;
    json_t *in;
    json_array_foreach(json_object_get(prov, "inputs"), i, in) if (!file_same(t, in, "input", why, n)) return false;
    return true;
}

/* The store's trials of this session, for their numbers: a new trial's is
 * past every one. */
static int number_stored(json_t *run, void *ctx)
{
    struct tune *t = ctx;
    json_t *tag = json_object_get(run, GPURUN_REC_TUNE);
    const char *s = tag ? gpurun_record_str(tag, "session") : NULL;
    long trial = s && !strcmp(s, t->session) ? gpurun_record_int(tag, "trial", 0) : 0;
    if (trial >= t->next_trial && trial < INT_MAX)
        t->next_trial = (int)trial + 1;
    return 0;
}

/* The store's selected trials of this session (resumption): reused when
 * they measured what a trial now would, and were not busy. */
static int take_stored(json_t *run, void *ctx)
{
    struct tune *t = ctx;
    json_t *tag = json_object_get(run, GPURUN_REC_TUNE);
    const char *s = tag ? gpurun_record_str(tag, "session") : NULL;
    if (!s || strcmp(s, t->session) != 0)
        return 0;
    struct cand *c = cand_of(t, gpurun_record_str(tag, "candidate"));
    if (!c || c->pruned)
        return 0;
    char why[512];
    if (gpurun_run_busy(run)) {
        t->skipped_busy++;
        return 0;
    }
    if (!same_provenance(t, run, why, sizeof why)) {
        if (!t->skipped_prov++)
            t->skipped_why = gpurun_xstrdup(why);
        return 0;
    }
    if (take_record(t, c, run, why, sizeof why) < 0) {
        const char *state = gpurun_record_str(run, "state");
        if (state && (!strcmp(state, GPURUN_STATE_INTERRUPTED)))
            return 0; /* cut short by the interruption: run it again */
        free(c->failed);
        c->failed = gpurun_xstrdup(why);
    }
    t->reused++;
    return 0;
}

static int read_store(struct tune *t, gpurun_error_t *err)
{
    struct stat st;
    if (stat(t->results, &st) < 0)
        return 0; /* nothing run yet */
    gpurun_results_t *r = NULL;
    if (cmd_results_open(t->results, false, &r, err) != 0)
        return -1;
    t->hashes = json_object();
    int rc = gpurun_results_each(r, t->job->name, number_stored, t, err);
    if (rc == 0 && !t->fresh)
        rc = gpurun_select_each(r, t->job->name, &t->sel, take_stored, t, err);
    gpurun_results_close(r);
    /* Said once each, not per trial. */
    if (t->skipped_busy)
        printf("gpurun tune: %zu earlier trial%s of this session ran busy: not reused\n", t->skipped_busy,
               t->skipped_busy == 1 ? "" : "s");
    if (t->skipped_prov)
        printf("gpurun tune: %zu earlier trial%s of this session not reused: %s\n", t->skipped_prov,
               t->skipped_prov == 1 ? "" : "s", t->skipped_why);
    if (t->fresh && t->next_trial > 1)
        printf("gpurun tune: --fresh: the %d earlier trial%s of this session not reused\n", t->next_trial - 1,
               t->next_trial == 2 ? "" : "s");
    return rc < 0 ? -1 : 0;
}

/* The job as candidate k would run it: its file read again, the short-run
 * assignments and the candidate's applied, no scan. */
static gpurun_job_t *trial_job(const struct tune *t, const struct cand *c, bool shorten, gpurun_error_t *err)
{
    gpurun_job_t *job;
    if (gpurun_job_load(t->job_path, &job, err) < 0)
        return NULL;
    for (size_t i = 0; shorten && i < t->sp.nshort; i++)
        if (gpurun_job_set(job, t->sp.short_sets[i], err) < 0) {
            gpurun_job_destroy(job);
            return NULL;
        }
    for (size_t i = 0; i < c->nsets; i++)
        if (gpurun_job_set(job, c->sets[i], err) < 0) {
            gpurun_job_destroy(job);
            return NULL;
        }
    for (size_t i = 0; i < job->nscan; i++) /* one layout per trial */
        gpurun_axis_free(&job->scan[i]);
    job->nscan = 0;
    job->repeat = 1; /* the search decides the repeats */
    return job;
}

/* The template's HPL input (hpldat.h) for candidate c, planned with
 * `nranks` ranks: a grid whose P x Q is not the ranks prunes it; else
 * c->same says what it runs, with auto and flat resolved, so that two
 * candidates with the same grid run once.  The input the edit goes into
 * is checked once (`checked`), before anything starts: -1 (exit 2) when
 * HPL could not read it so. */
static int hpl_candidate(struct tune *t, struct cand *c, const gpurun_job_t *job, long nranks, bool *checked,
                         gpurun_error_t *err)
{
    struct gpurun_hpl_edit hpl;
    gpurun_error_t e = {0};
    if (gpurun_hpl_edit_for_job(t->tpl, job, nranks, &hpl, &e) < 0) {
        /* "--set params.grid=2x2: key ...": the candidate's own value, named by its label */
        const char *why = e.text, *colon = strstr(e.text, ": key '");
        if (!strncmp(e.text, "--set ", 6) && colon)
            why = colon + 2;
        c->pruned = gpurun_xstrdup(why);
        return 0;
    }
    if (!hpl.active)
        return 0;
    static const char grid_set[] = "params." GPURUN_HPL_GRID_PARAM "=", nb_set[] = "params." GPURUN_HPL_NB_PARAM "=";
    struct gpurun_strbuf sb = {0};
    for (size_t i = 0; i < c->nsets; i++) {
        if (!strncmp(c->sets[i], grid_set, sizeof grid_set - 1) && hpl.p > 0)
            gpurun_strbuf_printf(&sb, "%sparams.%s=%ldx%ld", i ? " " : "", GPURUN_HPL_GRID_PARAM, hpl.p, hpl.q);
        else if (!strncmp(c->sets[i], nb_set, sizeof nb_set - 1) && hpl.nb > 0)
            gpurun_strbuf_printf(&sb, "%sparams.%s=%ld", i ? " " : "", GPURUN_HPL_NB_PARAM, hpl.nb);
        else
            gpurun_strbuf_printf(&sb, "%s%s", i ? " " : "", c->sets[i]);
    }
    c->same = sb.s ? sb.s : gpurun_xstrdup("");
    for (struct cand *o = t->c; o < c; o++)
        if (!o->pruned && o->same && !strcmp(o->same, c->same)) {
            c->pruned = gpurun_xasprintf("the same run as %s here (grid %s: %ld x %ld on %ld rank%s)", o->label,
                                         hpl.grid, hpl.p, hpl.q, nranks, nranks == 1 ? "" : "s");
            return 0;
        }
    if (*checked)
        return 0;
    *checked = true;
    struct gpurun_kvlist names = {0};
    char *jd = realpath(job->dir, NULL);
    struct gpurun_job_values vals = {.job = job->name, .template_name = job->template_name,
                                     .job_dir = jd ? jd : job->dir, .run_dir = "RUN_DIR", .nodes = 1,
                                     .ranks_per_node = nranks, .ranks = nranks, .gpus_per_rank = 0,
                                     .threads_per_rank = 1, .repeat = 1};
    gpurun_job_names(&names, &vals, t->tpl, &job->params);
    int rc = gpurun_hpl_check_from(t->tpl, &hpl, gpurun_kvlist_lookup, &names, vals.job_dir, err);
    gpurun_kvlist_clear(&names);
    free(jd);
    return rc;
}

/* Plan each candidate as `gpurun run` would; those this node cannot run
 * keep the planner's reason. */
static int plan_all(struct tune *t, gpurun_error_t *err)
{
    gpurun_topo_t *topo = NULL;
    bool hpl_checked = false;
    int rc = 0;
    if (gpurun_topo_load(NULL, &topo, err) < 0)
        return -1;
    for (size_t k = 0; k < t->n && rc == 0; k++) {
        struct cand *c = &t->c[k];
        gpurun_error_t e = {0};
        gpurun_job_t *job = trial_job(t, c, true, &e);
        if (!job) {
            c->pruned = gpurun_xstrdup(e.text);
            continue;
        }
        gpurun_request_t req;
        gpurun_request_from_job(&req, job);
        char note[256] = "";
        gpurun_alloc_apply(topo, &req, note, sizeof note);
        gpurun_plan_t *plan = NULL;
        if (gpurun_plan_create(topo, &req, &plan, &e) < 0) {
            c->pruned = gpurun_xstrdup(e.text);
        } else {
            c->ranks = plan->nranks;
            c->gpus = (long)plan->nranks * plan->req.gpus_per_rank;
            c->threads = (long)plan->nranks * (plan->nranks ? plan->ranks[0].threads : 0);
            rc = hpl_candidate(t, c, job, plan->nranks, &hpl_checked, err);
        }
        gpurun_plan_destroy(plan);
        gpurun_job_destroy(job);
    }
    gpurun_topo_destroy(topo);
    return rc;
}

/* A params axis the template does not use is the job's mistake, not a
 * layout this node cannot run: exit 2 before anything starts. */
static int check_params_axes(struct tune *t, gpurun_error_t *err)
{
    for (size_t a = 0; a < t->sp.naxes; a++) {
        const struct gpurun_axis *ax = &t->sp.axes[a];
        if (strncmp(ax->key, "params.", 7) != 0)
            continue;
        gpurun_job_t *job;
        if (gpurun_job_load(t->job_path, &job, err) < 0)
            return -1;
        char *set = gpurun_xasprintf("%s=%s", ax->key, ax->texts[0]);
        int rc = gpurun_job_set(job, set, err);
        if (rc == 0)
            rc = gpurun_template_check_params(t->tpl, job, err);
        free(set);
        gpurun_job_destroy(job);
        if (rc < 0) {
            char *text = gpurun_xstrdup(err->text);
            if (ax->line)
                gpurun_err(err, GPURUN_EXIT_CONFIG, "%s:%d: key 'tune.%s': %s", t->job_path, ax->line, ax->key,
                           text);
            else
                gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: %s: %s", t->sp.from, ax->key, text);
            free(text);
            return -1;
        }
    }
    return 0;
}

/* Trials successive halving makes of n candidates with no ties: round r
 * gives each survivor its (r+1)th run; it ends when one is left, or two
 * each run twice or more (and apart). */
static size_t planned_trials(size_t n)
{
    if (n <= 1)
        return n;
    size_t total = 0;
    for (size_t s = n, round = 0;; round++) {
        total += s;
        size_t next = (s + 1) / 2;
        if (next == 1 || (next == 2 && round >= 1))
            break;
        s = next;
    }
    return total;
}

static void print_candidates(const struct tune *t)
{
    size_t runnable = 0;
    printf("gpurun tune: %s: %zu candidate%s from %s; session %s\n", t->job->name, t->n, t->n == 1 ? "" : "s",
           t->sp.from, t->session);
    for (size_t i = 0; i < t->sp.nshort; i++)
        printf("  trials shortened with --set %s (template's tune_short)\n", t->sp.short_sets[i]);
    for (size_t k = 0; k < t->n; k++) {
        const struct cand *c = &t->c[k];
        if (c->pruned)
            printf("  %-40s pruned: %s\n", c->label, c->pruned);
        else
            printf("  %-40s %ld rank%s, %ld GPU%s, %ld thread%s\n", c->label, c->ranks, c->ranks == 1 ? "" : "s",
                   c->gpus, c->gpus == 1 ? "" : "s", c->threads, c->threads == 1 ? "" : "s");
        runnable += !c->pruned;
    }
    printf("gpurun tune: %zu can run here, %zu pruned\n", runnable, t->n - runnable);
}

static void dry_run(const struct tune *t)
{
    print_candidates(t);
    size_t runnable = 0;
    for (size_t k = 0; k < t->n; k++)
        runnable += !t->c[k].pruned;
    size_t trials = planned_trials(runnable), most = trials;
    if (runnable > GPURUN_TUNE_FULL_MAX) { /* the axis search's lines, then halving */
        size_t line = 1;
        for (size_t a = 0; a < t->sp.naxes; a++)
            line += t->sp.axes[a].n - 1;
        size_t seen = line * TUNE_PASSES_MAX < runnable ? line * TUNE_PASSES_MAX : runnable;
        trials = line + planned_trials(line < TUNE_FINALISTS ? line : TUNE_FINALISTS) - (line < TUNE_FINALISTS ? line : TUNE_FINALISTS);
        most = seen + planned_trials(TUNE_FINALISTS) - TUNE_FINALISTS;
        printf("gpurun tune: more than %d can run: an axis search (each axis in turn, the others held) picks "
               "the finalists\n", GPURUN_TUNE_FULL_MAX);
    }
    char lim[160] = "";
    if (t->job->timeout_s > 0) {
        double total = (double)most * (double)t->job->timeout_s;
        if (t->budget_s > 0 && total > (double)t->budget_s)
            total = (double)t->budget_s;
        snprintf(lim, sizeof lim, "; at most %.0f s (timeout %ld s a trial%s)", total, t->job->timeout_s,
                 t->budget_s > 0 ? ", within --budget" : "");
    } else if (t->budget_s > 0) {
        snprintf(lim, sizeof lim, "; at most %ld s (--budget)", t->budget_s);
    } else {
        snprintf(lim, sizeof lim, "; no timeout or --budget: time not bounded");
    }
    if (most > trials)
        printf("gpurun tune: the search would take %zu to %zu trials (successive halving, more where results tie)%s\n",
               trials, most, lim);
    else
        printf("gpurun tune: the search would take about %zu trial%s (successive halving, more where results tie)%s\n",
               trials, trials == 1 ? "" : "s", lim);
    printf("gpurun tune: dry run: nothing was started\n");
}

static void sync_search(struct tune *t)
{
    for (size_t k = 0; k < t->n; k++) {
        struct cand *c = &t->c[k];
        c->tc.values = c->v[t->obj];
        c->tc.n = c->nv[t->obj];
        c->tc.gpus = c->gpus;
        c->tc.ranks = c->ranks;
        c->tc.threads = c->threads;
        c->tc.runnable = !c->pruned;
        if (c->failed || c->pruned)
            c->tc.alive = false;
    }
}

static volatile int interrupted;

/* One trial of candidate c: an ordinary run, tagged. */
static int run_trial(struct tune *t, struct cand *c, gpurun_error_t *err)
{
    gpurun_job_t *job = trial_job(t, c, true, err);
    if (!job)
        return err->code;
    int n = t->next_trial++, taken = -1;
    json_t *tag = json_pack("{s:s, s:i, s:s}", "session", t->session, "trial", n, "candidate", c->label);
    /* Its overrides, as trial_job applied them: the record's provenance, for gpurun rerun. */
    const char **sets = gpurun_xcalloc(t->sp.nshort + c->nsets + 1, sizeof *sets);
    size_t nsets = 0;
    for (size_t i = 0; i < t->sp.nshort; i++)
        sets[nsets++] = t->sp.short_sets[i];
    for (size_t i = 0; i < c->nsets; i++)
        sets[nsets++] = c->sets[i];
    struct gpurun_run_opts ro = {.quiet = true, .results = t->results, .tune = tag, .sets = sets, .nsets = nsets};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    gpurun_error_t e = {0};
    int rc = gpurun_run_job(job, &ro, &e);
    free(sets);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    t->spent += (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    t->ran++;
    /* Its record: the newest of the job (RESULTS/JOB/latest), which must
     * carry this trial's tag. */
    char *p = gpurun_xasprintf("%s/%s/latest/record.json", t->results, job->name);
    json_t *rec = json_load_file(p, 0, NULL);
    free(p);
    json_t *rtag = rec ? json_object_get(rec, GPURUN_REC_TUNE) : NULL;
    char why[512];
    if (!rtag || !json_equal(rtag, tag)) {
        snprintf(why, sizeof why, "%.400s", rc ? e.text : "its record was not found");
        free(c->failed);
        c->failed = gpurun_xstrdup(why);
    } else if ((taken = take_record(t, c, rec, why, sizeof why)) < 0) {
        const char *state = gpurun_record_str(rec, GPURUN_REC_STATE);
        if (!(state && !strcmp(state, GPURUN_STATE_INTERRUPTED))) {
            free(c->failed);
            c->failed = gpurun_xstrdup(why);
        }
    }
    double v = c->nv[t->obj] ? c->v[t->obj][c->nv[t->obj] - 1] : NAN;
    if (taken == 0)
        c->busy_streak = 0;
    if (taken == 1) {
        c->busy_runs++;
        if (++c->busy_streak > TUNE_BUSY_REPEATS) {
            free(c->failed);
            c->failed = gpurun_xasprintf("busy: all %d of its trials in a row ran busy (%.200s): not decided on",
                                         TUNE_BUSY_REPEATS + 1, why);
        }
        printf("gpurun tune: trial %d: %-40s ran busy (%s): %s\n", n, c->label, why,
               c->failed ? "not repeated again, not decided on" : "not decided on, repeated");
    } else if (!c->failed && isfinite(v))
        printf("gpurun tune: trial %d: %-40s %s = %g\n", n, c->label, cmd_tune_obj_name(t, t->obj), v);
    else
        printf("gpurun tune: trial %d: %-40s %s\n", n, c->label, c->failed ? c->failed : "no value");
    fflush(stdout);
    json_decref(rec);
    json_decref(tag);
    gpurun_job_destroy(job);
    if (rc == 130 || rc == 143) {
        interrupted = rc;
        gpurun_err(err, rc, "%s", e.text);
        return rc;
    }
    return 0;
}

/* RESULTS and RESULTS/JOB, made when missing and checked as `gpurun run`
 * checks them (run.c's make_run_dir: ours or root's, not writable by others
 * without the sticky bit, the job folder opened through the results one and
 * never through a symlink), before the first trial: a folder run refuses
 * gets no trial, and no session file written through someone's symlink. */
static int open_job_folder(struct tune *t, gpurun_error_t *err)
{
    int rfd = gpurun_open_folder_path(t->results, "results folder", 0755, true, err);
    if (rfd < 0)
        return -1;
    char *shown = gpurun_xasprintf("%s/%s", t->results, t->job->name);
    t->jfd = gpurun_open_folder_at(rfd, t->job->name, shown, "job folder", 0755, true, err);
    free(shown);
    close(rfd);
    return t->jfd < 0 ? -1 : 0;
}

/* RESULTS/JOB/tune-SESSION.json, through the job folder's descriptor: a
 * temporary file of ours renamed over it, never through a symlink. */
static void write_session(struct tune *t, const char *state, const struct cand *best)
{
    if (t->jfd < 0)
        return;
    json_t *axes = json_array();
    for (size_t a = 0; a < t->sp.naxes; a++) {
        json_t *vals = json_array();
        for (size_t v = 0; v < t->sp.axes[a].n; v++)
            json_array_append_new(vals, json_string(t->sp.axes[a].texts[v]));
        json_array_append_new(axes, json_pack("{s:s, s:o}", "key", t->sp.axes[a].key, "values", vals));
    }
    json_t *doc = json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:i, s:s?}", "session", t->session, "job", t->job->name,
                            "job_file", t->job_path, "space_from", t->sp.from, "space", axes, "objective",
                            cmd_tune_obj_name(t, t->obj), "trials", t->next_trial - 1, "best", best ? best->label : NULL);
    json_object_set_new(doc, "state", json_string(state));
    char *name = gpurun_xasprintf("tune-%s.json", t->session);
    char *shown = gpurun_xasprintf("%s/%s/%s", t->results, t->job->name, name);
    gpurun_error_t e = {0};
    if (gpurun_write_json_at(t->jfd, name, shown, doc, 0644, 0, &e) < 0)
        fprintf(stderr, "gpurun tune: warning: %s\n", e.text);
    free(shown);
    free(name);
    json_decref(doc);
}

/* The search: every candidate once, then halving.  Trials found in the
 * store count as run. */
/* Runs candidate c until it has `target` values of the objective (those
 * in the store count).  0; 1 when the budget is spent; else an exit
 * status with err. */
static int measure(struct tune *t, struct cand *c, size_t target, gpurun_error_t *err)
{
    while (!c->pruned && !c->failed && c->nv[t->obj] < target) {
        double est = t->ran ? t->spent / (double)t->ran : 0;
        if (t->budget_s > 0 && t->spent + est > (double)t->budget_s)
            return 1;
        size_t before = c->nv[OBJ_FIGURE];
        int rc = run_trial(t, c, err);
        if (rc != 0)
            return rc;
        write_session(t, "running", NULL);
        if (!c->failed && c->nv[t->obj] == 0 && c->nv[OBJ_FIGURE] > before) {
            if (t->obj == OBJ_ENERGY)
                return TUNE_ERR(err, GPURUN_EXIT_CONFIG,
                                "tune: energy is not measured here (the trials' records have no "
                                "energy_per_unit); use --objective %s or cost",
                                t->fom ? t->fom : "FIGURE");
            return TUNE_ERR(err, GPURUN_EXIT_CONFIG,
                            "tune: no cost per unit of work: it needs the site's price (price_per_gpu_hour, "
                            "spot_price_per_gpu_hour), "
                            "GPUs in the layout and a figure that is a rate (units like ns/day, /s)");
        }
    }
    return 0;
}

/* A large space: an axis search finds the finalists.  From the middle of
 * the space, each axis in turn: every value of it, the others held, and
 * the best of that line (a tie to fewer resources) becomes the point; until
 * a pass over the axes moves nothing (at most TUNE_PASSES_MAX passes).  The
 * candidates measured on the way go on to the halving. */
static int axis_search(struct tune *t, gpurun_error_t *err)
{
    size_t point = 0;
    for (size_t a = 0; a < t->sp.naxes; a++)
        point = gpurun_tune_neighbor(&t->sp, point, a, t->sp.axes[a].n / 2);
    if (t->c[point].pruned) /* the runnable candidate nearest in index */
        for (size_t d = 1; d < t->n && t->c[point].pruned; d++) {
            if (point >= d && !t->c[point - d].pruned)
                point -= d;
            else if (point + d < t->n && !t->c[point + d].pruned)
                point += d;
        }
    struct gpurun_tune_cand *tc = gpurun_xcalloc(t->n + 1, sizeof *tc);
    int rc = 0;
    bool moved = true;
    for (int pass = 0; pass < TUNE_PASSES_MAX && moved && rc == 0; pass++) {
        moved = false;
        for (size_t a = 0; a < t->sp.naxes && rc == 0; a++) {
            for (size_t v = 0; v < t->sp.axes[a].n && rc == 0; v++)
                rc = measure(t, &t->c[gpurun_tune_neighbor(&t->sp, point, a, v)], 1, err);
            if (rc != 0)
                break;
            sync_search(t);
            for (size_t k = 0; k < t->n; k++) {
                tc[k] = t->c[k].tc;
                tc[k].alive = false;
            }
            for (size_t v = 0; v < t->sp.axes[a].n; v++) {
                size_t k = gpurun_tune_neighbor(&t->sp, point, a, v);
                tc[k].alive = !t->c[k].pruned && !t->c[k].failed && tc[k].n > 0;
            }
            size_t best = gpurun_tune_best(tc, t->n, cmd_tune_obj_lower(t, t->obj), gpurun_tune_pooled_cv(tc, t->n));
            if (best != SIZE_MAX && best != point) {
                point = best;
                moved = true;
            }
        }
        if (rc == 0)
            printf("gpurun tune: axis search, pass %d: %s%s\n", pass + 1, t->c[point].label,
                   moved ? "" : " (no move: done)");
    }
    /* The finalists: the best TUNE_FINALISTS of the candidates measured
     * (halving would drop the others after a second run each). */
    for (size_t k = 0; k < t->n; k++)
        t->c[k].tc.alive = !t->c[k].pruned && !t->c[k].failed && t->c[k].nv[t->obj] > 0;
    sync_search(t);
    for (;;) {
        size_t alive = 0, worst = SIZE_MAX;
        for (size_t k = 0; k < t->n; k++) {
            if (!t->c[k].tc.alive)
                continue;
            alive++;
            struct gpurun_tune_stats a, b;
            gpurun_tune_stats(t->c[k].tc.values, t->c[k].tc.n, &a);
            if (worst != SIZE_MAX)
                gpurun_tune_stats(t->c[worst].tc.values, t->c[worst].tc.n, &b);
            if (worst == SIZE_MAX || (cmd_tune_obj_lower(t, t->obj) ? a.mean > b.mean : a.mean < b.mean))
                worst = k;
        }
        if (alive <= TUNE_FINALISTS || worst == SIZE_MAX)
            break;
        t->c[worst].tc.alive = false;
        t->c[worst].dropped_round = 0;
    }
    free(tc);
    return rc;
}

/* The search: every candidate once (or, in a large space, those an axis
 * search measured), then halving: the better half, and those within the
 * noise, measured again, until one is left.  Trials found in the store
 * count as run. */
static int search(struct tune *t, gpurun_error_t *err)
{
    size_t runnable = 0;
    for (size_t k = 0; k < t->n; k++) {
        t->c[k].tc.alive = !t->c[k].pruned;
        runnable += !t->c[k].pruned;
    }
    int rc = 0;
    if (runnable > GPURUN_TUNE_FULL_MAX) {
        printf("gpurun tune: %zu candidates can run, more than %d: an axis search picks the finalists\n", runnable,
               GPURUN_TUNE_FULL_MAX);
        rc = axis_search(t, err);
    }
    for (int round = 0; round < TUNE_ROUNDS_MAX && rc == 0; round++) {
        sync_search(t);
        for (size_t k = 0; k < t->n && rc == 0; k++)
            if (t->c[k].tc.alive)
                rc = measure(t, &t->c[k], (size_t)round + 1, err);
        if (rc != 0)
            break;
        sync_search(t);
        struct gpurun_tune_cand *tc = gpurun_xcalloc(t->n, sizeof *tc);
        for (size_t k = 0; k < t->n; k++)
            tc[k] = t->c[k].tc;
        double cv = gpurun_tune_pooled_cv(tc, t->n);
        size_t alive = gpurun_tune_round(tc, t->n, cmd_tune_obj_lower(t, t->obj), cv);
        for (size_t k = 0; k < t->n; k++) {
            if (t->c[k].tc.alive && !tc[k].alive)
                t->c[k].dropped_round = round;
            t->c[k].tc.alive = tc[k].alive;
        }
        free(tc);
        if (alive <= 1)
            break;
    }
    if (rc == 1) {
        printf("gpurun tune: the budget (%ld s) is spent: the search stops here\n", t->budget_s);
        rc = 0;
    }
    return rc;
}


/* Whether `path` is a regular file of ours (no symlink followed) holding
 * exactly `text`. */
static bool same_text(const char *path, const char *text)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    size_t len = strlen(text);
    bool same = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
                (size_t)st.st_size == len;
    char *buf = NULL;
    size_t got = 0;
    gpurun_error_t e = {0};
    same = same && gpurun_read_fd(fd, path, "the tuned job file", len + 1, &buf, &got, &e) == 0 && got == len &&
           !memcmp(buf, text, len);
    gpurun_error_clear(&e);
    free(buf);
    if (fd >= 0)
        close(fd);
    return same;
}

/* JOB.tuned.conf beside the job file, never over anything: O_EXCL, then
 * JOB.tuned.1.conf, ...; none when one of them says the same already
 * (*same set: a tune that found the same again writes no copy). */
static int write_tuned(struct tune *t, const struct cand *c, char **pathp, bool *same, gpurun_error_t *err)
{
    char *text = NULL;
    size_t len = 0;
    if (gpurun_read_file(t->job_path, "the job file", 1024 * 1024, &text, &len, err) < 0)
        return -1;
    /* Free text in the comments: a line break in it would start a line of
     * its own, read as a key (a folder named "p\nrepeat = 7 #"). */
    char *obj = gpurun_comment_text(cmd_tune_obj_name(t, t->obj)), *label = gpurun_comment_text(c->label),
         *job = gpurun_comment_text(t->job_path);
    char *header = gpurun_xasprintf("# Written by gpurun tune (session %s, objective %s): the best layout found,\n"
                                    "#   %s\n# Tune again: gpurun tune %s\n",
                                    t->session, obj, label, job);
    free(obj);
    free(label);
    free(job);
    char *out = gpurun_tune_rewrite(text, len, c->sets, c->nsets, header, err);
    free(header);
    /* It must read as a job file, with no key but the job's and the layout's. */
    if (out && gpurun_tune_check_tuned(text, len, out, c->sets, c->nsets, t->job_path, err) < 0) {
        free(out);
        out = NULL;
    }
    free(text);
    if (!out)
        return -1;
    size_t plen = strlen(t->job_path);
    size_t stem = plen > 5 && !strcmp(t->job_path + plen - 5, ".conf") ? plen - 5 : plen;
    int fd = -1;
    char *path = NULL;
    for (int i = 0; i < 100 && fd < 0; i++) {
        free(path);
        path = i ? gpurun_xasprintf("%.*s.tuned.%d.conf", (int)stem, t->job_path, i)
                 : gpurun_xasprintf("%.*s.tuned.conf", (int)stem, t->job_path);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) {
            gpurun_err(err, GPURUN_EXIT_ENV, "%s: %s", path, strerror(errno));
            break;
        }
        if (fd < 0 && same_text(path, out)) {
            *same = true;
            break;
        }
    }
    int rc = 0;
    if (*same) {
        free(out);
        *pathp = path;
        return 0;
    }
    if (fd < 0) {
        if (!err->text[0])
            gpurun_err(err, GPURUN_EXIT_ENV, "%s: the tuned job files 1 to 99 exist already", t->job_path);
        rc = -1;
    } else if (gpurun_write_all(fd, out, strlen(out)) < 0 || close(fd) < 0) {
        gpurun_err(err, GPURUN_EXIT_ENV, "%s: %s", path, strerror(errno));
        rc = -1;
    }
    free(out);
    if (rc < 0) {
        free(path);
        return -1;
    }
    *pathp = path;
    return 0;
}

/* The end: the tuned file's path as one shell word, so that a line break
 * in it cannot split the command the user copies. */
static void say_written(const struct tune *t, const char *tuned, bool same)
{
    char *word = gpurun_shell_word(tuned);
    printf("\ngpurun tune: %zu trial%s run now, %zu found from before; %s %s\n", t->ran, t->ran == 1 ? "" : "s",
           t->reused, word, same ? "says the same already: not written again" : "written");
    printf("gpurun submit %s\n", word);
    free(word);
}

/* The figure's units as the trials' records will have them: the
 * template's, its ${name}s from its defaults and the job's params; NULL
 * when there is no figure or they do not expand (a trial would say why). */
static char *fom_units(const struct tune *t)
{
    const struct gpurun_fom *f = NULL;
    for (size_t i = 0; t->tpl && t->fom && i < t->tpl->nfoms; i++)
        if (!strcmp(t->tpl->foms[i].name, t->fom))
            f = &t->tpl->foms[i];
    if (!f)
        return NULL;
    struct gpurun_kvlist names = {0};
    for (size_t i = 0; i < t->tpl->defaults.n; i++)
        gpurun_kvlist_set(&names, t->tpl->defaults.items[i].key, t->tpl->defaults.items[i].value);
    for (size_t i = 0; i < t->job->params.n; i++)
        gpurun_kvlist_set(&names, t->job->params.items[i].key, t->job->params.items[i].value);
    char *out = NULL;
    gpurun_error_t e = {0};
    if (gpurun_expand(f->units, gpurun_kvlist_lookup, &names, "units", &out, &e) < 0)
        out = NULL;
    gpurun_error_clear(&e);
    gpurun_kvlist_clear(&names);
    return out;
}

/* Whether a candidate that can run here uses GPUs (their monitor measures
 * their energy; cost is per GPU-hour). */
static bool any_gpus(const struct tune *t)
{
    for (size_t k = 0; k < t->n; k++)
        if (!t->c[k].pruned && t->c[k].gpus > 0)
            return true;
    return false;
}

/* Energy per unit of work: measured energy (a RAPL counter that reads
 * here, or GPUs) and a figure that is a rate of work. */
static int energy_measurable(const struct tune *t, const char *units, gpurun_error_t *err)
{
    char why[1024], work[48];
    double per_s;
    const char *fig = t->fom ? t->fom : "FIGURE";
    if (!any_gpus(t) && !gpurun_rapl_any_readable(NULL, why, sizeof why))
        return TUNE_ERR(err, GPURUN_EXIT_CONFIG,
                        "tune: energy is not measured here: no candidate that can run here uses a GPU, and %s; "
                        "use --objective %s or cost",
                        why, fig);
    if (units && (t->fom_lower || !gpurun_energy_unit_of(units, work, sizeof work, &per_s)))
        return TUNE_ERR(err, GPURUN_EXIT_CONFIG,
                        "tune: energy per unit of work needs a figure that is a rate of work, higher better "
                        "(units like ns/day, GFLOP/s, images/s); %s is %s (units '%.64s')",
                        fig, t->fom_lower ? "lower better" : "no rate", units);
    return 0;
}

/* Cost per unit of work: the site's price per GPU-hour (spot: its spot
 * price), GPUs in a layout, and a figure that is a rate of work. */
static int cost_measurable(const struct tune *t, const char *units, gpurun_error_t *err)
{
    bool spot = t->obj == OBJ_SPOT;
    const char *key = spot ? "spot_price_per_gpu_hour" : "price_per_gpu_hour";
    gpurun_site_t *site = NULL;
    if (gpurun_site_for_job(t->job, &site, err) < 0)
        return err->code;
    double price = !site ? -1 : spot ? site->spot_price_per_gpu_hour : site->price_per_gpu_hour;
    gpurun_site_destroy(site);
    if (price < 0 && !t->job->site)
        return TUNE_ERR(err, GPURUN_EXIT_CONFIG,
                        "tune: --objective %s: no price here: the job names no site (site = \"NAME\", a site "
                        "profile with %s)",
                        cmd_tune_obj_name(t, t->obj), key);
    if (price < 0)
        return TUNE_ERR(err, GPURUN_EXIT_CONFIG, "tune: --objective %s: no price here: site '%.64s' has no %s",
                        cmd_tune_obj_name(t, t->obj), t->job->site, key);
    if (!any_gpus(t))
        return TUNE_ERR(err, GPURUN_EXIT_CONFIG,
                        "tune: --objective %s: the cost is per GPU-hour, and no candidate that can run here uses "
                        "a GPU",
                        cmd_tune_obj_name(t, t->obj));
    if (units && (t->fom_lower || !isfinite(gpurun_tune_cost(1, 1, 1, units))))
        return TUNE_ERR(err, GPURUN_EXIT_CONFIG,
                        "tune: --objective %s needs a figure that is a rate of work, higher better (units like "
                        "ns/day, /s); %s is %s (units '%.64s')",
                        cmd_tune_obj_name(t, t->obj), t->fom ? t->fom : "FIGURE", t->fom_lower ? "lower better" : "no rate",
                        units);
    return 0;
}

/* --objective energy, cost or spot where no trial could give it: refused
 * before any trial (and by --dry-run), exit 2 with why, rather than a
 * trial spent to learn it.  A job with no figure at all (a command, no
 * template's fom) likewise; its dry run still lists the layouts this node
 * can run, saying so. */
static int objective_measurable(const struct tune *t, bool dry, gpurun_error_t *err)
{
    size_t runnable = 0;
    for (size_t k = 0; k < t->n; k++)
        runnable += !t->c[k].pruned;
    if (!runnable) /* none can run: exit 3 says more */
        return 0;
    if (!t->tpl || !t->tpl->nfoms) {
        const char *why = t->tpl ? "its template reads no figure of merit" : "a job with a command reads no figure "
                                                                              "of merit (a template's fom does)";
        if (!dry)
            return TUNE_ERR(err, GPURUN_EXIT_CONFIG, "tune: nothing to compare the layouts by: %s; gpurun tune "
                            "--dry-run lists the layouts this node can run", why);
        printf("gpurun tune: note: %s: this lists the layouts, a tune would refuse (nothing to compare)\n", why);
        return 0;
    }
    if (t->obj == OBJ_FIGURE)
        return 0;
    char *units = fom_units(t);
    int rc = t->obj == OBJ_ENERGY ? energy_measurable(t, units, err) : cost_measurable(t, units, err);
    free(units);
    return rc;
}

static void tune_free(struct tune *t)
{
    for (size_t k = 0; k < t->n; k++) {
        struct cand *c = &t->c[k];
        free(c->label);
        for (size_t i = 0; i < c->nsets; i++)
            free(c->sets[i]);
        free(c->sets);
        free(c->pruned);
        free(c->same);
        free(c->failed);
        for (int o = 0; o < OBJ_N; o++)
            free(c->v[o]);
    }
    free(t->c);
    free(t->fom);
    free(t->results);
    free(t->skipped_why);
    json_decref(t->hashes);
    gpurun_select_free(&t->sel);
    gpurun_tune_space_free(&t->sp);
    gpurun_template_destroy(t->tpl);
    gpurun_job_destroy(t->job);
    if (t->jfd >= 0)
        close(t->jfd);
}

/* The options into t; -1 with err (or 1 after --help: done). */
static int parse_args(struct tune *t, int argc, char **argv, bool *dry, gpurun_error_t *err)
{
    enum { O_DRY = 1000, O_OBJ, O_BUDGET, O_RESULTS, O_FRESH, O_SELECT };
    static const struct option opts[] = {
        {"dry-run", no_argument, NULL, O_DRY},        {"objective", required_argument, NULL, O_OBJ},
        {"budget", required_argument, NULL, O_BUDGET}, {"results", required_argument, NULL, O_RESULTS},
        {"fresh", no_argument, NULL, O_FRESH},         {"since", required_argument, NULL, O_SELECT},
        {"until", required_argument, NULL, O_SELECT},  {"last", required_argument, NULL, O_SELECT},
        {"runs", required_argument, NULL, O_SELECT},   {"where", required_argument, NULL, O_SELECT},
        {"help", no_argument, NULL, 'h'},              {NULL, 0, NULL, 0},
    };
    int c, li = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, &li)) != -1) {
        switch (c) {
        case O_DRY: *dry = true; break;
        case O_FRESH: t->fresh = true; break;
        case O_SELECT:
            if (gpurun_select_option(&t->sel, opts[li].name, optarg, time(NULL), err) < 0) {
                char *text = gpurun_xstrdup(err->text);
                gpurun_err(err, GPURUN_EXIT_CONFIG, "tune: %s", text);
                free(text);
                return -1;
            }
            break;
        case O_OBJ: t->objective = optarg; break;
        case O_BUDGET:
            t->budget_s = gpurun_tune_parse_duration(optarg);
            if (t->budget_s <= 0) {
                gpurun_err(err, GPURUN_EXIT_CONFIG, "tune: --budget '%.64s': expected a duration such as 90s, 30m, 2h",
                           optarg);
                return -1;
            }
            break;
        case O_RESULTS: t->results_opt = optarg; break;
        case 'h': fputs(tune_usage, stdout); return 1;
        default: cmd_bad_option("tune", argv[optind - 1], opts, err); return -1;
        }
    }
    if (argc - optind != 1) {
        gpurun_err(err, GPURUN_EXIT_CONFIG, "tune: give exactly one job file (see gpurun tune --help)");
        return -1;
    }
    t->job_path = argv[optind];
    return 0;
}

/* The objective and the figure it reads; -1 with err for a name that is
 * none of them. */
static int choose_objective(struct tune *t, gpurun_error_t *err)
{
    const char *o = t->objective;
    t->obj = !o                      ? OBJ_FIGURE
             : !strcmp(o, "cost")   ? OBJ_COST
             : !strcmp(o, "spot")   ? OBJ_SPOT
             : !strcmp(o, "energy") ? OBJ_ENERGY
                                    : OBJ_FIGURE;
    if (o && t->obj == OBJ_FIGURE) {
        bool known = !t->tpl;
        for (size_t i = 0; t->tpl && i < t->tpl->nfoms; i++)
            known |= !strcmp(t->tpl->foms[i].name, o);
        if (!known) {
            gpurun_err(err, GPURUN_EXIT_CONFIG,
                       "tune: --objective '%.64s': not a figure of template '%s', nor cost or energy", o, t->tpl->name);
            return -1;
        }
        t->fom = gpurun_xstrdup(o);
    } else if (t->tpl && t->tpl->nfoms) {
        t->fom = gpurun_xstrdup(t->tpl->foms[0].name);
    }
    if (t->fom && t->tpl)
        for (size_t i = 0; i < t->tpl->nfoms; i++)
            if (!strcmp(t->tpl->foms[i].name, t->fom))
                t->fom_lower = t->tpl->foms[i].better && !strcmp(t->tpl->foms[i].better, "lower");
    return 0;
}

/* The job, its space, the objective, the results folder and the
 * candidates with their plans.  0, or -1 with err. */
static int setup(struct tune *t, bool dry, gpurun_error_t *err)
{
    gpurun_topo_t *topo = NULL;
    int rc = gpurun_job_load(t->job_path, &t->job, err) < 0 || gpurun_template_for_job(t->job, &t->tpl, err) < 0 ||
                     gpurun_topo_load(NULL, &topo, err) < 0 ||
                     gpurun_tune_space_make(t->job, t->tpl, topo->ngpus > 0, &t->sp, err) < 0 ||
                     check_params_axes(t, err) < 0 || choose_objective(t, err) < 0
                 ? -1
                 : 0;
    gpurun_topo_destroy(topo);
    if (rc < 0)
        return -1;
    gpurun_tune_session(t->job->name, &t->sp, t->session, sizeof t->session);
    char *jd = realpath(t->job->dir, NULL), cwd[PATH_MAX];
    const char *res = t->results_opt ? t->results_opt : t->job->results;
    if (res[0] == '/')
        t->results = gpurun_xstrdup(res);
    else if (t->results_opt)
        t->results = gpurun_xasprintf("%s/%s", getcwd(cwd, sizeof cwd) ? cwd : ".", res);
    else
        t->results = gpurun_xasprintf("%s/%s", jd ? jd : t->job->dir, res);
    free(jd);
    t->n = gpurun_tune_count(&t->sp);
    t->c = gpurun_xcalloc(t->n, sizeof *t->c);
    for (size_t k = 0; k < t->n; k++) {
        struct cand *cd = &t->c[k];
        cd->label = gpurun_tune_label(&t->sp, k);
        cd->sets = gpurun_xcalloc(t->sp.naxes + 1, sizeof *cd->sets);
        for (size_t a = 0; a < t->sp.naxes; a++)
            cd->sets[cd->nsets++] = gpurun_xasprintf("%s=%s", t->sp.axes[a].key, gpurun_tune_value(&t->sp, k, a));
        cd->dropped_round = -1;
    }
    return plan_all(t, err) < 0 || objective_measurable(t, dry, err) != 0 ? -1 : 0;
}

/* The search over the runnable candidates, the verdict and the tuned
 * file: tune's exit status. */
static int tune_run(struct tune *t, gpurun_error_t *err)
{
    size_t runnable = 0;
    for (size_t k = 0; k < t->n; k++)
        runnable += !t->c[k].pruned;
    print_candidates(t);
    if (!runnable)
        return TUNE_ERR(err, GPURUN_EXIT_ENV, "tune: no candidate can run on this node (see the reasons above)");
    if (open_job_folder(t, err) < 0 || read_store(t, err) < 0)
        return err->code;
    if (t->reused)
        printf("gpurun tune: %zu trial%s of this session found in %s: not run again\n", t->reused,
               t->reused == 1 ? "" : "s", t->results);
    int rc = search(t, err);
    if (rc != 0) {
        write_session(t, interrupted ? "interrupted" : "failed", NULL);
        return rc;
    }
    size_t best[OBJ_N];
    cmd_tune_report(t, best);
    if (best[t->obj] == SIZE_MAX) {
        write_session(t, "failed", NULL);
        return TUNE_ERR(err, 1, "tune: no candidate gave %s; see the table above", cmd_tune_obj_name(t, t->obj));
    }
    write_session(t, "done", &t->c[best[t->obj]]);
    char *tuned = NULL;
    bool same = false;
    if (write_tuned(t, &t->c[best[t->obj]], &tuned, &same, err) < 0)
        return err->code;
    say_written(t, tuned, same);
    free(tuned);
    return 0;
}

int cmd_tune(int argc, char **argv, gpurun_error_t *err)
{
    struct tune t = {.next_trial = 1, .jfd = -1};
    gpurun_select_init(&t.sel);
    bool dry = false;
    int rc = parse_args(&t, argc, argv, &dry, err);
    if (rc == 0 && setup(&t, dry, err) < 0)
        rc = -1;
    if (rc < 0)
        rc = err->code;
    else if (rc > 0)
        rc = 0; /* --help */
    else if (dry)
        dry_run(&t);
    else
        rc = tune_run(&t, err);
    tune_free(&t);
    return rc;
}
