/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_REPORT_H
#define GPURUN_REPORT_H

/* `gpurun report` (SPEC §7): the runs of the results store grouped per job
 * and configuration, with the statistics over repeats, the scaling against
 * the smallest configuration and the cost per unit of work; as a text
 * table, an SVG plot, or one self-contained HTML page.  Pure: runs in
 * (the summaries gpurun_results_runs() gives), text out. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "error.h"

/* How a figure's units turn into hours of the whole configuration per unit
 * of work, the basis of its cost:
 *   a rate (better = higher), WORK/TIME: "ns/day", "GFLOP/s", "tau/day",
 *     "timesteps/s", "GFLOPS": hours per unit of WORK = 1 / (value per hour);
 *   a time per work (better = lower), TIME/WORK: "hour/ns", "s/step":
 *     hours per unit of WORK = value in hours;
 *   a time to solution (better = lower), TIME: "s": hours per run.
 * TIME is s, ms, min, h (hour), day (and their plurals).  FLOP counts with
 * an SI prefix are counted in FLOP; the report then picks the prefix
 * (GFLOP, PFLOP) or, for other work, a power of 1000 ("1000 tau") that
 * puts the smallest cost at 0.01 or more.  Other units have no cost. */
struct gpurun_cost_basis {
    enum { GPURUN_COST_NONE, GPURUN_COST_RATE, GPURUN_COST_TIME } kind;
    double hours;  /* of TIME: 1/3600 for "s", 24 for "day" */
    double prefix; /* units of WORK in the figure's: 1e9 for GFLOP */
    bool flop;     /* WORK is FLOP, named by SI prefix */
    char work[64]; /* WORK: "ns", "FLOP", "tau", "run" */
};
int gpurun_cost_basis(const char *units, const char *better, struct gpurun_cost_basis *b);
/* Hours of the configuration per base unit of work at figure `value`; NAN
 * when the basis has none or the value cannot give one (<= 0). */
double gpurun_cost_hours(const struct gpurun_cost_basis *b, double value);

/* A point of a figure's history: one run, or consecutive runs (by start
 * time) taken together once a configuration has more runs than a plot
 * shows. */
struct gpurun_report_point {
    double start, end; /* seconds since the epoch: its first and last run's start */
    size_t n;          /* runs */
    double mean, min, max;
};
/* Points a history keeps: past that, neighbours are taken together in pairs
 * (runs per point doubles), so that 10,000 runs of one configuration cost
 * what 128 do. */
#define GPURUN_REPORT_HISTORY_MAX 128

/* Spread between repeats that is flagged: a coefficient of variation
 * (sample standard deviation / mean) above 5 %.  Repeats of one
 * configuration on the same nodes usually agree within 1-3 %; past 5 % a
 * step in speedup of that size cannot be told from noise (a busy node,
 * clocks, another job's traffic), so the figure is not to be trusted
 * until the cause is known. */
#define GPURUN_REPORT_CV_FLAG 0.05

struct gpurun_report_stat {
    size_t n;                   /* runs of state ok with this figure */
    /* NAN when n = 0.  Of a time figure (hour/ns, s), once finished, the
     * harmonic mean (1 / the mean of its inverse, the throughput): the
     * mean whose ratio its speedup is, so that a row never reads slower
     * beside a speedup above 1 (issue 39); of others the arithmetic mean. */
    double mean, min, max;
    double arith_mean;          /* the arithmetic mean of every kind (the spread is about it) */
    double m2;                  /* sum of squared deviations (Welford), for the variance */
    double cv;                  /* sample standard deviation / mean; NAN under 2 runs or mean 0 */
    bool spread_flag;           /* cv > GPURUN_REPORT_CV_FLAG */
    double inv_mean;            /* mean of 1 / value over the values > 0 (a time figure's throughput) */
    size_t inv_n;
    double speedup, efficiency; /* against the series' smallest configuration; NAN: none */
    double cost, spot_cost;     /* per `work_label` of the figure, in `currency`; NAN: no price */
    /* The figure against the runs' start time (records without a readable
     * "start" are left out), oldest first; at most GPURUN_REPORT_HISTORY_MAX
     * points of `history_per` runs each (the last may have fewer). */
    struct gpurun_report_point *history;
    size_t nhistory, history_cap, history_per;
};

/* The distinct values of a record field over a configuration's runs
 * (hosts, CPU model, program version): the first few, and how many more. */
#define GPURUN_REPORT_VALUES_MAX 4
struct gpurun_report_values {
    char *v[GPURUN_REPORT_VALUES_MAX];
    size_t n, more;
};

/* One configuration of a job: the runs with the same nodes, ranks, GPUs per
 * rank, threads per rank and params. */
struct gpurun_report_config {
    long nodes, ranks, gpus_per_rank, threads_per_rank, gpus; /* -1: unknown */
    long resources;    /* GPUs, or ranks when the job is CPU-only; <= 0: unknown */
    char *params;      /* canonical JSON of the params: the series key */
    char *params_text; /* "key=value ...", "-" when none */
    char *params_vary; /* only the params that differ between the job's configurations; "-" none */
    char *label;       /* the run's scan combination ("config"), "-" when none */
    char *gpu_model;   /* NULL when unknown */
    /* Where and with what it ran, over its runs (ok or not): the record's
     * hosts, cpu_model, gpu_model, program_version, gpurun_version. */
    struct gpurun_report_values hosts, cpu_models, gpu_models, program_versions, gpurun_versions;
    size_t series;     /* index of its params among the job's */
    size_t nok, nfailed;
    size_t nbusy;      /* ok runs whose record says busy, left out of the means (unless include_busy) */
    double price, spot_price;         /* per GPU-hour; NAN: none */
    char *currency;                   /* NULL: none */
    struct gpurun_report_stat *stats; /* one per figure of the job */
    size_t nstats;                    /* while runs are added: the figures so far */
    /* Per-GPU monitoring: the `gpus_monitor` of the configuration's last ok
     * run whose records carry one with a value in it (shown in a table of
     * its own: mean utilisation and power over the GPUs, highest memory
     * peak), NULL otherwise (a CPU job's record has null). */
    json_t *monitor;
    struct gpurun_report_energy *energy; /* report_energy.c; NULL: no ok run measured energy */
    char *energy_unmeasured; /* an ok run's energy that measured nothing: "not measured here: WHY"
                                (energy.h); NULL: none */
};

/* What a figure is (the template's fom `kind`): scaling columns only for
 * throughput (speedup = ratio of means) and time (speedup from its inverse,
 * so that hour/ns agrees with ns/day); never for other (iterations, a
 * residual, a latency). */
enum gpurun_fom_kind { GPURUN_FOM_THROUGHPUT, GPURUN_FOM_TIME, GPURUN_FOM_OTHER };

struct gpurun_report_fom {
    char *name;   /* ns_per_day */
    char *units;  /* "ns/day"; "" when not known */
    char *better; /* "higher" | "lower" */
    /* The record's "kind"; a record without one (before templates said it)
     * by its units: a rate (ns/day, GFLOP/s) throughput, a time per work or
     * a time (hour/ns, s) time, anything else other. */
    enum gpurun_fom_kind kind;
    bool kind_said; /* the records said it */
    struct gpurun_cost_basis basis;
    double work_scale; /* base units of work per unit shown (1e15: PFLOP) */
    char *work_label;  /* "ns", "PFLOP", "1000 tau"; NULL: no cost for these units */
};

/* A run not of state ok, as the report lists it. */
struct gpurun_report_failed {
    char *start;  /* as the record has it; "-" unknown */
    char *config; /* its configuration in words */
    char *state;  /* failed, timeout, ... */
    char *reason; /* the record's failure in one line ("rank 0 on n1: exit status 1"); "-" none */
    char *folder; /* its run folder, relative to the results folder; "-" unknown */
};
/* Failed runs listed per job at most: the latest (the count has them all). */
#define GPURUN_REPORT_FAILED_MAX 20

struct gpurun_report_job {
    char *name;
    char *template_name;            /* NULL when none */
    bool by_gpus;                   /* resources are GPUs; else ranks (CPU-only) */
    struct gpurun_report_fom *foms; /* in the records' order: the first is the main one */
    size_t nfoms;
    struct gpurun_report_config *configs; /* by series, then resources, nodes, ranks */
    size_t nconfigs;
    size_t nseries;
    size_t nruns, nfailed;
    char *params_fixed; /* the params every configuration has alike, "key=value ..."; NULL none */
    struct gpurun_report_failed *failed; /* the latest GPURUN_REPORT_FAILED_MAX, oldest first */
    size_t nfailed_kept;
    /* Ok runs that ran busy (the record's conditions.busy): left out of the
     * means and listed as the failed ones are (state "busy", reason the
     * record's conditions.why), unless the report includes them. */
    size_t nbusy;
    struct gpurun_report_failed *busy;
    size_t nbusy_kept;
    /* The history shown: the main figure of the configuration with the
     * most runs in its history (ties: the first, the smallest), when it has
     * 2 or more; -1 none. */
    long history_config, history_fom;
};

/* Measured energy per configuration (report_energy.c, issue 31): the
 * records' `energy` and each figure's energy_per_unit, averaged over the
 * ok runs that carry them. */
struct gpurun_report_energy {
    size_t n;                     /* ok runs with a measured total_J (>= 0) */
    double joules, kwh;           /* means over those runs (running: no overflow) */
    double watts, cost, co2_g;    /* means over the runs that have them */
    size_t ncost, nco2, nwatts;
    char *currency;               /* of the last run with a cost; NULL: none */
    size_t nfoms;                 /* per_unit[f]: the job's figure f */
    struct gpurun_report_energy_unit {
        double mean; /* over the n runs with a value >= 0 */
        size_t n;
        char units[40]; /* "J/ns" */
        /* Its history over the runs' start times, as a figure's: a rise
         * is the regression here. */
        struct gpurun_report_stat hist;
    } *per_unit;
};
struct gpurun_report_job;
struct gpurun_strbuf;
/* `start`: the run's start (seconds since the epoch), NAN when unknown. */
void gpurun_report_energy_add(const struct gpurun_report_job *job, struct gpurun_report_config *c,
                              const json_t *run, double start);
void gpurun_report_energy_free(struct gpurun_report_config *c);
/* The job's energy table: per configuration, energy, mean power, kWh,
 * cost and CO2 per run, and for each figure with energy per unit, J per
 * unit and throughput per kW; where no configuration measured any, "not
 * measured here" and why (nothing for records before issue 31). */
void gpurun_report_energy_print(const struct gpurun_report_job *job, FILE *out);
/* Why the job's runs measured no energy ("not measured here: WHY"), when
 * no configuration measured any and some ok run said why; NULL otherwise. */
const char *gpurun_report_energy_unmeasured(const struct gpurun_report_job *job);
/* The same table for the HTML page (escaped), and per throughput figure
 * with energy per unit the trade-off: a plot of the figure against its
 * energy per unit, one point per configuration. */
void gpurun_report_energy_html(const struct gpurun_report_job *job, struct gpurun_strbuf *b);
/* Points a plot draws of a series at most (the tables have them all). */
#define GPURUN_REPORT_PLOT_POINTS 200
/* The trade-off plot of figure f (report_energy.c, its one owner, for the
 * page and the --svg file): the figure against its energy per unit, one
 * point per configuration that has both, finite and > 0, at most
 * GPURUN_REPORT_PLOT_POINTS; both axes from 0, up and left is better.
 * shows: whether there is one (2 such configurations or more).  The plot
 * writes its elements, its <title> first, into the caller's <svg> or <g>
 * of GPURUN_REPORT_TRADEOFF_W x _H pixels; `job_name` (NULL: none) heads
 * its heading. */
#define GPURUN_REPORT_TRADEOFF_W 820
#define GPURUN_REPORT_TRADEOFF_H 330
bool gpurun_report_energy_tradeoff_shows(const struct gpurun_report_job *job, size_t f);
void gpurun_report_energy_tradeoff(const struct gpurun_report_job *job, size_t f, const char *job_name,
                                   struct gpurun_strbuf *b);
/* One run's figure `v` into a history (report.c): bounded whatever the
 * number of runs. */
void gpurun_report_history_add(struct gpurun_report_stat *st, double start, double v);

typedef struct gpurun_report {
    struct gpurun_report_job *jobs; /* by name */
    size_t njobs;
    size_t nruns, nfailed;
    /* Set before the runs are added: busy runs count in the means too
     * (`--include-busy`); nbusy counts them either way. */
    bool include_busy;
    size_t nbusy;
    char *selection; /* the runs selected, in words (select.h), said in the heading; NULL: every run */
    struct gpurun_report_building *building; /* between new and finish */
} gpurun_report_t;

/* Group and compute.  `runs` is a JSON array of records (or their
 * summaries); fields that are missing or of the wrong type are unknown. */
gpurun_report_t *gpurun_report_build(const json_t *runs);
/* The same a run at a time, for a results folder of any size: what is kept
 * is per configuration, not per run.  `run` is not kept (copied where
 * needed).  finish computes; the report is then read as built above. */
gpurun_report_t *gpurun_report_new(void);
void gpurun_report_add(gpurun_report_t *r, const json_t *run);
void gpurun_report_finish(gpurun_report_t *r);
void gpurun_report_destroy(gpurun_report_t *r);

/* The figure the plot shows for a job: the first throughput figure with a
 * value, else the first time figure, else the first with a value; -1 none. */
long gpurun_report_main_fom(const struct gpurun_report_job *job);

/* Whether the report has a plot for the job (two configurations or more
 * with a value of its main figure and a GPU or rank count). */
bool gpurun_report_plots(const struct gpurun_report_job *job);

/* Text tables, for a terminal (control characters escaped).  Columns that
 * have nothing to show are left out (costs without a price, GPUs of a
 * CPU-only job, the scan combination of a job without a scan), and so is the
 * GPU monitoring table where no record has a monitoring value. */
void gpurun_report_print(const gpurun_report_t *r, const char *source, FILE *out);
/* An SVG document: per job with two configurations or more, its main
 * figure against GPUs (or ranks), with min-max bars and the ideal-scaling
 * line, beside its parallel efficiency (throughput and time figures), the
 * legend below both; and, where the job has a history, a panel of that
 * figure against the runs' start time.  A job with one configuration, or
 * none with a value, gets no plot.  Every text escaped. */
char *gpurun_report_svg(const gpurun_report_t *r);
/* One HTML page: inline CSS and SVG, no script, no external resource. */
char *gpurun_report_html(const gpurun_report_t *r, const char *source);

/* A figure as the tables show it: four significant digits, without an
 * exponent from 0.001 to 10^7; "-" for NAN. */
char *gpurun_report_number(double v);

/* `s` escaped for XML and HTML text and attribute values. */
char *gpurun_xml_escape(const char *s);

/* Write `text` to `path` completely or not at all (temporary file, rename). */
int gpurun_write_text(const char *path, const char *text, gpurun_error_t *err);

/* Internal to gpurun report's parts (report_text.c, report_svg.c,
 * report_html.c, report_energy.c), from its model (report.c): text escaped
 * for XML/HTML into a buffer, and the buffer's text ("" when empty); a
 * configuration's values as words, two history points as one, what a
 * record's per-GPU monitoring says. */
void gpurun_report_esc(struct gpurun_strbuf *b, const char *s);
char *gpurun_report_done(struct gpurun_strbuf *b);
char *gpurun_report_values_text(const struct gpurun_report_values *vs);
struct gpurun_report_point gpurun_report_point_merge(const struct gpurun_report_point *a,
                                                      const struct gpurun_report_point *b);
char *gpurun_report_fmt_monitor(const json_t *m);

#endif
