/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun run: a job from start to end (gpurun_run_job): its template, site,
 * container, topology and launcher settled (run_prepare), every
 * configuration of its scan planned and checked before the first runs,
 * each one run `repeat` times through run.c's run_once() (or shown:
 * a dry run), and the summary of a sweep of several runs. */

#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failure.h"
#include "rankenv.h"
#include "results.h"
#include "scan.h"
#include "run.h"
#include "run_private.h"
#include "job_template.h"
#include "inputs.h"
#include "progress_template.h"
#include "say.h"

/* The record's "config": what the scan varies in this configuration,
 * layout keys as numbers ({"ranks_per_node": 2, "params.npme": "1"}). */
static json_t *scan_config_json(const gpurun_job_t *job, const struct gpurun_scan_config *sc)
{
    json_t *config = json_object();
    for (size_t i = 0; i < sc->nsets && i < job->nscan; i++) {
        const struct gpurun_axis *ax = &job->scan[i];
        const char *v = strchr(sc->sets[i], '=') + 1;
        json_object_set_new(config, ax->key, ax->values ? json_integer(strtol(v, NULL, 10)) : json_string(v));
    }
    return config;
}

/* The summary at the end of a scan or repeat: one line per run. */
static void scan_summary(const gpurun_job_t *job, const struct scan_row *rows, size_t nrows, size_t ncombo,
                         const char *results)
{
    size_t ok = 0, ran = 0, wc = strlen("configuration"), ws = strlen("state"), wf = strlen("figure of merit");
    for (size_t i = 0; i < nrows; i++) {
        const char *st = rows[i].state ? rows[i].state : "not run";
        ran += rows[i].state != NULL;
        ok += rows[i].state && !strcmp(rows[i].state, GPURUN_STATE_OK);
        size_t cl = strlen(rows[i].config) + (job->repeat > 1 ? 14 : 0); /* ", repeat NNNN" */
        wc = cl > wc ? cl : wc;
        ws = strlen(st) > ws ? strlen(st) : ws;
        wf = strlen(rows[i].fom) > wf ? strlen(rows[i].fom) : wf;
    }
    wc = wc > 74 ? 74 : wc;
    gpurun_say(stdout, "gpurun: %s: summary: %zu of %zu run%s ok (%zu configuration%s x %d repeat%s)\n", job->name, ok,
               nrows, nrows == 1 ? "" : "s", ncombo, ncombo == 1 ? "" : "s", job->repeat, job->repeat == 1 ? "" : "s");
    gpurun_say(stdout, "  %-4s %-*s %-*s %-*s %s\n", "run", (int)wc, "configuration", (int)ws, "state", (int)wf,
               "figure of merit", "run folder");
    size_t rl = strlen(results);
    for (size_t i = 0; i < nrows; i++) {
        char cfg[96];
        const char *conf = rows[i].config[0] ? rows[i].config : "-";
        if (job->repeat > 1) {
            snprintf(cfg, sizeof cfg, "%.60s%srepeat %d", rows[i].config, rows[i].config[0] ? ", " : "",
                     rows[i].repeat);
            conf = cfg;
        }
        const char *folder = rows[i].folder ? rows[i].folder : "-";
        /* relative to the results folder the user named: shorter, and the same on every line */
        if (rows[i].folder && !strncmp(folder, results, rl) && folder[rl] == '/')
            folder += rl + 1;
        gpurun_say(stdout, "  %-4zu %-*.*s %-*s %-*s %s\n", i + 1, (int)wc, (int)wc, conf, (int)ws,
                   rows[i].state ? rows[i].state : "not run", (int)wf, rows[i].fom[0] ? rows[i].fom : "-", folder);
    }
    gpurun_say(stdout, "  run folders under %s%s\n", results,
               ran < nrows ? "; \"not run\": the scan stopped before it" : "");
}

/* Every configuration of a scan, planned against this node (or allocation)
 * and its inputs checked, before the first one runs: one that cannot run is
 * named, with nothing run.  The job is left at the last configuration. */
static int check_inputs(const struct run_ctx *c, gpurun_error_t *err);
static int check_scan_configs(struct run_ctx *c, gpurun_job_t *job, size_t first, size_t last, size_t n,
                              gpurun_error_t *err)
{
    for (size_t k = first; k < last; k++) {
        struct gpurun_scan_config sc;
        gpurun_scan_config(job, k, &sc);
        gpurun_plan_t *plan = NULL;
        int rc = gpurun_scan_apply(job, &sc, err);
        if (rc == 0) {
            gpurun_request_t req;
            char note[256];
            gpurun_request_from_job(&req, job);
            gpurun_alloc_apply(c->topo, &req, note, sizeof note);
            rc = gpurun_plan_create(c->topo, &req, &plan, err);
        }
        struct gpurun_hpl_edit hpl;
        if (rc == 0) /* HPL's grid must fit this configuration's ranks */
            rc = gpurun_hpl_edit_for_job(c->tpl, job, plan->nranks, &hpl, err);
        if (rc == 0) /* its inputs may name what it varies: ${tpr}, ${ranks} */
            rc = check_inputs(c, err);
        gpurun_plan_destroy(plan);
        if (rc < 0) {
            char *text = gpurun_xstrdup(err->text);
            gpurun_err(err, err->code, "configuration %zu of %zu (%s): %s", k + 1, n, sc.text, text);
            free(text);
        }
        gpurun_scan_config_free(&sc);
        if (rc < 0)
            return err->code;
    }
    return 0;
}

/* The template's input files, before anything starts (a dry run's too):
 * with the job's own values (the layout is the node's to decide; inputs
 * name params, not it). */
static int check_inputs(const struct run_ctx *c, gpurun_error_t *err)
{
    if (!c->tpl || (!c->tpl->ninputs && !c->tpl->progress && !c->tpl->hpl_dat))
        return 0;
    const gpurun_job_t *job = c->job;
#define JOB_NUMBER(v) ((v) > 0 ? (long)(v) : 1L)
    struct gpurun_job_values vals = {
        .job = job->name,
        .template_name = job->template_name,
        .job_dir = c->job_dir,
        .run_dir = "RUN_DIR",
        .nodes = JOB_NUMBER(job->nodes),
        .ranks_per_node = JOB_NUMBER(job->ranks_per_node),
        .ranks = JOB_NUMBER(job->nodes) * JOB_NUMBER(job->ranks_per_node),
        .gpus_per_rank = job->gpus_per_rank >= 0 ? job->gpus_per_rank : 1,
        .threads_per_rank = JOB_NUMBER(job->threads_per_rank),
        .repeat = JOB_NUMBER(job->repeat),
    };
#undef JOB_NUMBER
    struct gpurun_kvlist names = {0};
    gpurun_job_names(&names, &vals, c->tpl, &job->params);
    int rc = gpurun_inputs_check(c->tpl, job, c->job_dir, &names, NULL, err);
    struct gpurun_progress_conf pc; /* progress_total once expanded: a number */
    if (rc == 0 && gpurun_progress_from_template(c->tpl, gpurun_kvlist_lookup, &names, &pc, err) < 0)
        rc = -1;
    else if (rc == 0)
        gpurun_progress_conf_free(&pc);
    /* NB and P x Q (their form; the grid against the ranks once planned),
     * and the input they are set in, as HPL reads it. */
    struct gpurun_hpl_edit hpl;
    if (rc == 0 && (gpurun_hpl_edit_for_job(c->tpl, job, 0, &hpl, err) < 0 ||
                    gpurun_hpl_check_from(c->tpl, &hpl, gpurun_kvlist_lookup, &names, c->job_dir, err) < 0))
        rc = -1;
    gpurun_kvlist_clear(&names);
    return rc;
}

/* The job and run folders are mounted at their own paths. */
static int run_folders_mountable(const struct run_ctx *c, gpurun_error_t *err)
{
    for (int i = 0; c->ctr && i < 2; i++) {
        const char *folder = i ? c->results : c->job_dir;
        const char *bad = gpurun_container_path_problem(c->ctr, folder);
        if (bad) {
            char *shown = gpurun_printable(folder);
            gpurun_err(err, GPURUN_EXIT_CONFIG,
                       "the %s %s holds %s: %s mounts it in the container at its own path and cannot carry that; "
                       "nothing was started: %s",
                       i ? "results folder" : "job's folder", shown, bad, c->ctr->runtime,
                       i ? "choose another results folder (job key 'results' or --results)"
                         : "move the job file to a folder whose path has none");
            free(shown);
            return err->code;
        }
    }
    return 0;
}

/* Everything a job needs before its first configuration: the template,
 * site, inputs, MPS folders, container, topology, launcher and manager,
 * and the results folder.  0, or an exit status with err. */
static int run_prepare(struct run_ctx *c, gpurun_error_t *err)
{
    gpurun_job_t *job = c->job;
    const struct gpurun_run_opts *opts = c->opts;
    c->job_dir = realpath(job->dir, NULL);
    if (!c->job_dir)
        c->job_dir = run_abs_path(job->dir, ".");
    if (gpurun_template_for_job(job, &c->tpl, err) < 0 || gpurun_site_for_job(job, &c->site, err) < 0 ||
        (!job->nscan && check_inputs(c, err) < 0)) /* a scan's: per configuration, below */
        return err->code;
    /* MPS folders the ranks are pointed at: none of another user's. */
    if (gpurun_mps_check_env(job, err) < 0)
        return err->code;
    /* A container: its runtime, image and mounts settled before anything starts. */
    if (gpurun_container_resolve(&job->container, c->tpl ? &c->tpl->container : NULL,
                                 c->site ? &c->site->container : NULL, gpurun_job_section_origin(job, "container.image"),
                                 gpurun_job_origin(job, "container.mounts"),
                                 gpurun_job_section_origin(job, "container.runtime"), job->launcher,
                                 &c->ctr, err) < 0)
        return err->code;
    if (c->ctr)
        run_container_inside(c);
    if (gpurun_topo_load(NULL, &c->topo, err) < 0 ||
        gpurun_launcher_choose(job->launcher, &c->launcher, c->launcher_why, sizeof c->launcher_why, err) < 0)
        return err->code;
    struct gpurun_rm_alloc alloc;
    c->rm = gpurun_rm_of_launcher(c->launcher->name);
    if (!c->rm)
        c->rm = gpurun_rm_current(&alloc);
    /* A runtime of a manager's launch command (pyxis) needs that launcher. */
    const gpurun_rm_plugin_t *ctr_rm = c->ctr ? gpurun_rm_of_runtime(c->ctr->runtime) : NULL;
    if (ctr_rm && strcmp(c->launcher->name, ctr_rm->launcher->name)) {
        gpurun_err(err, GPURUN_EXIT_CONFIG,
                   "%s: key 'container.runtime': %s runs only under launcher = \"%s\" (%s %s), and this job's "
                   "launcher is %s (%s); nothing was started",
                   gpurun_job_section_origin(job, "container.runtime"), c->ctr->runtime, ctr_rm->launcher->name,
                   ctr_rm->launcher->name, ctr_rm->container->option, c->launcher->name, c->launcher_why);
        return err->code;
    }
    const char *results = opts->results ? opts->results : job->results;
    /* Absolute: ranks start in the run folder and must find it by name. */
    c->results = run_abs_path(opts->results ? "." : c->job_dir, results);
    return run_folders_mountable(c, err);
}

/* A sweep: the configurations first..last of the scan, each run `repeat`
 * times, and a row per run for the summary when there is more than one. */
struct sweep {
    size_t ncombo, first, last;
    size_t runs, nrows;
    struct scan_row *rows; /* NULL: one run, or a dry run */
    int stopped_rc;        /* the interruption's status */
};

/* Which configurations run (--configuration K: only the K-th, a batch job
 * of gpurun submit), each checked before any runs. */
static int sweep_create(struct run_ctx *c, struct sweep *w, gpurun_error_t *err)
{
    gpurun_job_t *job = c->job;
    const struct gpurun_run_opts *opts = c->opts;
    *w = (struct sweep){.ncombo = gpurun_scan_count(job)};
    w->last = w->ncombo;
    if (opts->configuration && (size_t)opts->configuration > w->ncombo)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "--configuration %ld: the job's scan has %zu configuration%s",
                          opts->configuration, w->ncombo, w->ncombo == 1 ? " (it has no scan)" : "s");
    if (opts->configuration) {
        w->first = (size_t)opts->configuration - 1;
        w->last = w->first + 1;
    }
    if (job->nscan && check_scan_configs(c, job, w->first, w->last, w->ncombo, err) != 0)
        return -1;
    w->nrows = (w->last - w->first) * (size_t)(job->repeat > 0 ? job->repeat : 1);
    w->rows = !opts->dry_run && w->nrows > 1 ? gpurun_xcalloc(w->nrows, sizeof *w->rows) : NULL;
    for (size_t j = 0; w->rows && j < w->nrows; j++) { /* each "not run" until it runs */
        struct gpurun_scan_config one;
        gpurun_scan_config(job, w->first + j / (size_t)job->repeat, &one);
        w->rows[j].config = one.text;
        one.text = NULL;
        w->rows[j].repeat = (int)(j % (size_t)job->repeat) + 1;
        gpurun_scan_config_free(&one);
    }
    return 0;
}

/* The repeats of configuration k, planned in c: the first failure's status. */
static int sweep_repeats(struct run_ctx *c, struct sweep *w, size_t k, const char *text, gpurun_error_t *err)
{
    gpurun_job_t *job = c->job;
    int crc = 0;
    for (int i = 0; i < job->repeat && !c->stopped[0]; i++) {
        struct scan_row *row = w->rows ? &w->rows[(k - w->first) * (size_t)job->repeat + (size_t)i] : NULL;
        if (w->nrows > 1 && !c->opts->quiet) {
            if (job->repeat > 1)
                gpurun_say(stderr, "gpurun: run %zu of %zu: %s%srepeat %d of %d\n", w->runs + 1, w->nrows, text,
                           text[0] ? ", " : "", i + 1, job->repeat);
            else
                gpurun_say(stderr, "gpurun: run %zu of %zu: %s\n", w->runs + 1, w->nrows, text);
        }
        c->row = row;
        int one = run_once(c, i, err);
        c->row = NULL;
        w->runs++;
        if (one != 0 && w->nrows > 1)
            gpurun_say(stderr, "gpurun: %s\n", err->text);
        if (one != 0 && crc == 0)
            crc = one;
        if (c->stopped[0])
            crc = w->stopped_rc = one; /* the interruption's status, whatever failed before */
    }
    return crc;
}

/* Configuration k of the scan: planned, then shown (a dry run) or run. */
static int sweep_config(struct run_ctx *c, struct sweep *w, size_t k, const struct gpurun_scan_config *sc,
                        gpurun_error_t *err)
{
    gpurun_job_t *job = c->job;
    gpurun_request_t req;
    gpurun_request_from_job(&req, job);
    c->config = scan_config_json(job, sc);
    c->req = req;
    gpurun_alloc_apply(c->topo, &req, c->alloc_note, sizeof c->alloc_note);
    int crc = 0;
    if (gpurun_plan_create(c->topo, &req, &c->plan, err) < 0 ||
        gpurun_hpl_edit_for_job(c->tpl, job, c->plan->nranks, &c->hpl, err) < 0 || /* P x Q = the ranks: exit 2 */
        gpurun_gdr_setup(c->plan, job->gpudirect, c->tpl ? &c->tpl->env : NULL, &c->gdr_probe, &c->gdr, err) < 0) {
        crc = err->code; /* gpudirect = on that this node cannot do: exit 3, nothing started */
    } else {
        if (c->tpl && c->tpl->rank_env)
            gpurun_rankenv_torchrun_plan(c->plan);
        if (c->ctr)
            run_container_env_names(c);
        free(c->command);
        c->command = c->tpl ? (c->plan->req.gpus_per_rank > 0 && c->tpl->gpu_args
                                   ? gpurun_xasprintf("%s %s", c->tpl->command, c->tpl->gpu_args)
                                   : gpurun_xstrdup(c->tpl->command))
                            : gpurun_xstrdup(job->command);
        if (c->opts->dry_run) {
            if (job->nscan)
                gpurun_say(stdout, "%s# configuration %zu of %zu: %s\n", k > w->first ? "\n" : "", k + 1, w->ncombo,
                           sc->text);
            crc = run_dry_run_config(c, err);
        } else {
            crc = sweep_repeats(c, w, k, sc->text, err);
        }
    }
    gpurun_plan_destroy(c->plan);
    c->plan = NULL;
    json_decref(c->gdr);
    c->gdr = NULL;
    json_decref(c->config);
    c->config = NULL;
    return crc;
}

/* One configuration per scan combination, each run `repeat` times.  The
 * whole scan is planned first: a configuration this node cannot run stops
 * it before anything ran.  A failed run does not stop the sweep (the
 * summary says what failed; the exit status is the first failure's); an
 * interrupted one does. */
static int sweep_run(struct run_ctx *c, struct sweep *w, gpurun_error_t *err)
{
    gpurun_job_t *job = c->job;
    const struct gpurun_run_opts *opts = c->opts;
    int rc = 0;
    for (size_t k = w->first; k < w->last; k++) {
        struct gpurun_scan_config sc;
        gpurun_scan_config(job, k, &sc);
        if (opts->configuration && job->nscan && !opts->quiet && !opts->dry_run)
            gpurun_say(stderr, "gpurun: configuration %zu of %zu: %s\n", k + 1, w->ncombo, sc.text);
        if (gpurun_scan_apply(job, &sc, err) < 0) { /* checked above: not expected */
            gpurun_scan_config_free(&sc);
            return err->code;
        }
        int crc = sweep_config(c, w, k, &sc, err);
        gpurun_scan_config_free(&sc);
        if (crc != 0 && rc == 0)
            rc = crc;
        /* Interrupted, or a request this node cannot meet: stop the sweep. */
        if (c->stopped[0] || crc == GPURUN_EXIT_ENV || crc == GPURUN_EXIT_CONFIG)
            break;
    }
    return rc;
}

/* The summary of a sweep of several runs, and the status it ends with. */
static int sweep_finish(struct run_ctx *c, struct sweep *w, int rc, gpurun_error_t *err)
{
    gpurun_job_t *job = c->job;
    if (w->rows) {
        scan_summary(job, w->rows, w->nrows, w->last - w->first, c->results);
        for (size_t j = 0; j < w->nrows; j++) {
            free(w->rows[j].config);
            free(w->rows[j].folder);
        }
        free(w->rows);
        w->rows = NULL;
    }
    /* Each failure was printed as it came; main prints the first again. */
    if (c->stopped[0] && w->nrows > 1)
        gpurun_err(err, rc = w->stopped_rc, "%s: %s: stopped after %zu of %zu runs%s; see gpurun results", job->name,
                   c->stopped, w->runs, w->nrows, w->runs < w->nrows ? ", the rest not started" : "");
    else if (rc != 0 && w->nrows > 1 && rc != GPURUN_EXIT_ENV && rc != GPURUN_EXIT_CONFIG)
        gpurun_err(err, rc, "%s: at least one run failed (exit status %d, the first failure's); see the summary "
                   "above and gpurun results", job->name, rc);
    return rc;
}

static void run_ctx_destroy(struct run_ctx *c)
{
    free(c->job_dir);
    free(c->command);
    free(c->results);
    gpurun_plan_destroy(c->plan);
    gpurun_gdr_probe_destroy(c->gdr_probe);
    gpurun_topo_destroy(c->topo);
    gpurun_template_destroy(c->tpl);
    gpurun_site_destroy(c->site);
    gpurun_container_run_free(c->ctr);
}

int gpurun_run_job(gpurun_job_t *job, const struct gpurun_run_opts *opts, gpurun_error_t *err)
{
    struct run_ctx c = {.job = job, .opts = opts};
    struct sweep w;
    int rc = run_prepare(&c, err);
    if (rc == 0 && sweep_create(&c, &w, err) < 0)
        rc = err->code;
    if (rc == 0) {
        struct sigaction old_stop[3];
        if (!opts->dry_run) /* a stop at any moment ends the run with its record */
            gpurun_stop_signals(true, old_stop);
        rc = sweep_run(&c, &w, err);
        if (!opts->dry_run)
            gpurun_stop_signals(false, old_stop);
        rc = sweep_finish(&c, &w, rc, err);
    }
    run_ctx_destroy(&c);
    return rc;
}
