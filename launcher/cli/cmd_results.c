/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun results: the runs of a results folder, from its index (SPEC §7),
 * as a table, a JSON array or CSV (RFC 4180). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cmd_common.h"
#include "energy.h"
#include "report.h"
#include "record.h"
#include "results.h"
#include "select.h"
#include "util.h"

static const char results_usage[] =
    "Usage: gpurun results [--results DIR] [--job NAME] [--json|--csv] [--rebuild]\n"
    "                      [--since TIME] [--until TIME] [--last N] [--runs ID,...] [--where KEY=VALUE]...\n"
    "\n"
    "List the runs of a results folder: run id, job, state, ranks, GPUs, the scan\n"
    "combination, the figures of merit and the wall time; under a run that failed,\n"
    "a line with why (the rank, its host and the line of its output that names the\n"
    "cause). A run whose record says busy (other processes took a share of its cores or\n"
    "GPUs, or they throttled: its figures are likely low) is marked in the column busy,\n"
    "with why on a line under it. The index RESULTS/results.db is brought up to date with the records\n"
    "RESULTS/JOB/RUN-ID/record.json first.\n"
    "\n"
    "  --results DIR   the results folder (default: ./results)\n"
    "  --job NAME      only the runs of this job\n"
    "  --json          a JSON array of the records (without plan, bindings and rank_status)\n"
    "  --csv           CSV (RFC 4180): a row per run, a column per figure of merit, and busy\n"
    "  --rebuild       drop the index and read every record again\n"
    CMD_SELECT_HELP
    "  -h, --help      this help\n"
    "\n"
    "Exit status: 0 listed (no runs included), 2 bad option or selection value, no such folder or a\n"
    "--job that names no job of the folder (the jobs there are named),\n"
    "3 the index cannot be read or written.\n";

/* ---- the table -------------------------------------------------------- */

static char *foms_text(const json_t *run)
{
    char *out = gpurun_xstrdup("");
    const char *name;
    json_t *fom;
    json_object_foreach(json_object_get(run, GPURUN_REC_FOMS), name, fom)
    {
        double v;
        char *num =
            gpurun_record_fom_value(fom, &v) ? gpurun_report_number(v) : gpurun_xstrdup("-");
        const char *units = gpurun_record_str(fom, GPURUN_REC_FOM_UNITS);
        char *next = gpurun_xasprintf("%s%s%s=%s%s%s", out, *out ? ", " : "", name, num,
                                      units && *units ? " " : "", units ? units : "");
        free(num);
        free(out);
        out = next;
    }
    if (!*out) {
        free(out);
        out = gpurun_xstrdup("-");
    }
    return out;
}

enum { C_ID, C_JOB, C_STATE, C_BUSY, C_RANKS, C_GPUS, C_CONFIG, C_FOMS, C_WALL, NCOLS };

/* The table's cells, a row per run: only text is kept of the runs, so a
 * folder of 10,000 runs is a few MiB, not every summary at once. */
struct cells {
    char **v; /* (n + 1) x NCOLS: the head, then the rows */
    char **why; /* n + 1: a failed run's reason, shown on a line of its own under its row; NULL: none */
    char **energy; /* n + 1: the run's measured energy, a line under its row (energy.h); NULL: none */
    char **busy;   /* n + 1: why a busy run was busy, a line under its row; NULL: not busy */
    size_t n, cap;
    bool any_busy; /* the busy column is shown only then */
};

static int add_row(json_t *run, void *ctx)
{
    struct cells *t = ctx;
    if (t->n + 2 > t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->v = gpurun_xrealloc(t->v, t->cap * NCOLS * sizeof *t->v);
        t->why = gpurun_xrealloc(t->why, t->cap * sizeof *t->why);
        t->energy = gpurun_xrealloc(t->energy, t->cap * sizeof *t->energy);
        t->busy = gpurun_xrealloc(t->busy, t->cap * sizeof *t->busy);
    }
    bool busy = gpurun_run_busy(run);
    const char *why = gpurun_record_str(json_object_get(run, GPURUN_REC_CONDITIONS), GPURUN_REC_COND_WHY);
    char *busy_line = gpurun_xasprintf("%s: figures likely low", why ? why : "busy");
    t->busy[t->n + 1] = busy ? gpurun_printable(busy_line) : NULL;
    free(busy_line);
    t->any_busy |= busy;
    t->why[t->n + 1] = gpurun_record_failure_text(run);
    char *energy = gpurun_energy_text(run);
    t->energy[t->n + 1] = energy ? gpurun_printable(energy) : NULL;
    free(energy);
    char **row = &t->v[(++t->n) * NCOLS];
    long ranks = gpurun_record_int(run, GPURUN_REC_RANKS, -1), gpus = gpurun_record_gpus(run);
    double wall = gpurun_record_num(run, GPURUN_REC_WALL_S);
    const char *state = gpurun_record_str(run, GPURUN_REC_STATE);
    row[C_ID] = gpurun_printable(gpurun_record_str(run, GPURUN_REC_RUN_ID));
    row[C_JOB] = gpurun_printable(gpurun_record_str(run, GPURUN_REC_JOB));
    row[C_STATE] = gpurun_printable(state ? state : "?");
    row[C_BUSY] = gpurun_xstrdup(busy ? "busy" : "-");
    row[C_RANKS] = ranks >= 0 ? gpurun_xasprintf("%ld", ranks) : gpurun_xstrdup("-");
    row[C_GPUS] = gpus >= 0 ? gpurun_xasprintf("%ld", gpus) : gpurun_xstrdup("-");
    char *cfg = gpurun_record_config_text(run), *foms = foms_text(run);
    row[C_CONFIG] = gpurun_printable(cfg);
    row[C_FOMS] = gpurun_printable(foms);
    free(cfg);
    free(foms);
    row[C_WALL] = isnan(wall) ? gpurun_xstrdup("-") : gpurun_xasprintf("%.1f", wall);
    return 0;
}

static void cells_free_lines(struct cells *t)
{
    for (size_t r = 1; r <= t->n; r++) {
        free(t->why[r]);
        free(t->energy[r]);
        free(t->busy[r]);
    }
    free(t->why);
    free(t->energy);
    free(t->busy);
}

static size_t text_width(const char *s)
{
    size_t cw = 0;
    for (const char *p = s; *p; p++)
        cw += ((unsigned char)*p & 0xc0) != 0x80;
    return cw;
}

static void print_table(struct cells *t)
{
    static const char *const head[NCOLS] = {
        "run id", "job", "state", "busy", "ranks", "GPUs", "config", "figures of merit", "wall s"};
    static const bool right[NCOLS] = {[C_RANKS] = true, [C_GPUS] = true, [C_WALL] = true};
    size_t n = t->n;
    char **cells = t->v;
    size_t w[NCOLS] = {0};
    for (size_t c = 0; c < NCOLS; c++)
        cells[c] = gpurun_xstrdup(head[c]);
    for (size_t i = 0; i < (n + 1) * NCOLS; i++) {
        size_t cw = text_width(cells[i]);
        if (cw > w[i % NCOLS])
            w[i % NCOLS] = cw;
    }
    for (size_t r = 0; r <= n; r++) {
        for (size_t c = 0; c < NCOLS; c++) {
            if (c == C_BUSY && !t->any_busy)
                continue; /* no run busy: no column of dashes */
            const char *s = cells[r * NCOLS + c];
            int pad = (int)(w[c] - text_width(s));
            if (right[c])
                printf("%*s%s", pad, "", s);
            else
                printf("%s%*s", s, c + 1 < NCOLS ? pad : 0, "");
            fputs(c + 1 < NCOLS ? "  " : "\n", stdout);
        }
        if (r && t->why[r])
            printf("    why: %s\n", t->why[r]);
        if (r && t->busy[r])
            printf("    busy: %s\n", t->busy[r]);
        if (r && t->energy[r])
            printf("    energy: %s\n", t->energy[r]);
    }
    for (size_t i = 0; i < (n + 1) * NCOLS; i++)
        free(cells[i]);
    free(cells);
    cells_free_lines(t);
}

/* ---- CSV (RFC 4180) --------------------------------------------------- */

static void csv_field(const char *s, bool last)
{
    if (!s)
        s = "";
    if (strpbrk(s, ",\"\r\n")) {
        putchar('"');
        for (; *s; s++) {
            if (*s == '"')
                putchar('"');
            putchar(*s);
        }
        putchar('"');
    } else {
        fputs(s, stdout);
    }
    fputs(last ? "\r\n" : ",", stdout);
}

static void csv_long(long v, bool ok)
{
    char b[32] = "";
    if (ok)
        snprintf(b, sizeof b, "%ld", v);
    csv_field(b, false);
}

static void csv_num(double v)
{
    char b[32] = "";
    if (!isnan(v))
        snprintf(b, sizeof b, "%.10g", v);
    csv_field(b, false);
}

/* A column per figure of merit, in order of appearance: a first pass over
 * the runs gathers them. */
struct csv_foms {
    json_t *units; /* name -> units */
    json_t *names;
};

static int csv_gather(json_t *run, void *ctx)
{
    struct csv_foms *cf = ctx;
    const char *name;
    json_t *fom;
    json_object_foreach(json_object_get(run, GPURUN_REC_FOMS), name, fom)
    {
        if (json_object_get(cf->units, name))
            continue;
        const char *u = gpurun_record_str(fom, GPURUN_REC_FOM_UNITS);
        json_object_set_new(cf->units, name, json_string(u ? u : ""));
        json_array_append_new(cf->names, json_string(name));
    }
    return 0;
}

static void csv_head(const struct csv_foms *cf)
{
    static const char *const head[] = {
        "run_id",    "job",   "state",         "exit_status",      "start", "end",      "wall_s",
        "nodes",     "ranks", "gpus_per_rank", "threads_per_rank", "gpus",  "template", "site",
        "gpu_model", "config", "busy"};
    for (size_t k = 0; k < sizeof head / sizeof *head; k++)
        csv_field(head[k], false);
    size_t i;
    json_t *nm;
    json_array_foreach(cf->names, i, nm)
    {
        const char *units = json_string_value(json_object_get(cf->units, json_string_value(nm)));
        char *h = *units ? gpurun_xasprintf("%s (%s)", json_string_value(nm), units)
                         : gpurun_xstrdup(json_string_value(nm));
        csv_field(h, false);
        free(h);
    }
    csv_field("record", true);
}

static int csv_row(json_t *run, void *ctx)
{
    const struct csv_foms *cf = ctx;
    csv_field(gpurun_record_str(run, GPURUN_REC_RUN_ID), false);
    csv_field(gpurun_record_str(run, GPURUN_REC_JOB), false);
    csv_field(gpurun_record_str(run, GPURUN_REC_STATE), false);
    long ex = gpurun_record_int(run, GPURUN_REC_EXIT_STATUS, -1000);
    csv_long(ex, ex != -1000);
    csv_field(gpurun_record_str(run, GPURUN_REC_START), false);
    csv_field(gpurun_record_str(run, GPURUN_REC_END), false);
    csv_num(gpurun_record_num(run, GPURUN_REC_WALL_S));
    static const char *const ints[] = {"nodes", "ranks", "gpus_per_rank", "threads_per_rank"};
    for (size_t k = 0; k < sizeof ints / sizeof *ints; k++) {
        long v = gpurun_record_int(run, ints[k], -1);
        csv_long(v, v >= 0);
    }
    long g = gpurun_record_gpus(run);
    csv_long(g, g >= 0);
    csv_field(gpurun_record_str(run, GPURUN_REC_TEMPLATE), false);
    csv_field(gpurun_record_str(run, GPURUN_REC_SITE), false);
    csv_field(gpurun_record_str(run, GPURUN_REC_GPU_MODEL), false);
    char *cfg = gpurun_record_config_text(run);
    csv_field(strcmp(cfg, "-") ? cfg : "", false);
    free(cfg);
    csv_field(gpurun_run_busy(run) ? "true" : "false", false);
    size_t k;
    json_t *nm;
    json_array_foreach(cf->names, k, nm)
    {
        json_t *fom = json_object_get(json_object_get(run, GPURUN_REC_FOMS), json_string_value(nm));
        double v;
        csv_num(fom && gpurun_record_fom_value(fom, &v) ? v : NAN);
    }
    csv_field(gpurun_record_str(run, "record"), true);
    return 0;
}

/* The JSON array, an element at a time, as json_dumpf(JSON_INDENT(2))
 * writes the whole. */
static int json_element(json_t *run, void *ctx)
{
    size_t *n = ctx;
    char *text = json_dumps(run, JSON_INDENT(2));
    fputs((*n)++ ? ",\n  " : "[\n  ", stdout);
    for (const char *p = text ? text : "null"; *p; p++) {
        putchar(*p);
        if (*p == '\n')
            fputs("  ", stdout);
    }
    free(text);
    return 0;
}

/* ---- the command ------------------------------------------------------ */

int cmd_results(int argc, char **argv, gpurun_error_t *err)
{
    const char *dir = "results", *job = NULL;
    bool json = false, csv = false, rebuild = false;
    const struct cmd_option own[] = {
        {"json", NULL, &json},
        {"csv", NULL, &csv},
        {"rebuild", NULL, &rebuild},
        {NULL, NULL, NULL},
    };
    struct gpurun_select sel;
    gpurun_select_init(&sel);
    int rc = cmd_select_options("results", results_usage, argc, argv, own, &dir, &job, &sel, err);
    if (rc == 1) { /* --help */
        gpurun_select_free(&sel);
        return 0;
    }
    if (rc == 0 && json && csv)
        rc = gpurun_err(err, GPURUN_EXIT_CONFIG, "results: --json or --csv, not both");
    gpurun_results_t *r = NULL;
    if (rc == 0 && (rc = cmd_results_open(dir, rebuild, &r, err)) == 0 &&
        (rc = cmd_results_job_known(r, dir, job, err)) != 0)
        gpurun_results_close(r);
    if (rc != 0) {
        gpurun_select_free(&sel);
        return rc < 0 ? err->code : rc;
    }
    if (json) {
        size_t n = 0;
        if (gpurun_select_each(r, job, &sel, json_element, &n, err) == 0)
            fputs(n ? "\n]\n" : "[]\n", stdout);
    } else if (csv) {
        struct csv_foms cf = {json_object(), json_array()};
        if (gpurun_select_each(r, job, &sel, csv_gather, &cf, err) == 0) {
            csv_head(&cf);
            gpurun_select_each(r, job, &sel, csv_row, &cf, err);
        }
        json_decref(cf.units);
        json_decref(cf.names);
    } else {
        struct cells t = {0};
        int got = gpurun_select_each(r, job, &sel, add_row, &t, err);
        if (got == 0 && t.n == 0) {
            char *shown = gpurun_printable(job);
            printf("no runs%s%s%s in %s\n", job ? " of job " : "", job ? shown : "",
                   sel.any ? " selected" : "", dir);
            free(shown);
        }
        if (got == 0 && t.n) {
            print_table(&t);
        } else {
            for (size_t i = NCOLS; i < (t.n + 1) * NCOLS; i++)
                free(t.v[i]);
            free(t.v);
            cells_free_lines(&t);
        }
    }
    gpurun_results_close(r);
    gpurun_select_free(&sel);
    return err->code ? err->code : 0;
}
