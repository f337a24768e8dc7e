/* SPDX-License-Identifier: BSD-3-Clause */
/* The report's energy (issue 31), apart from report.c: per configuration,
 * the mean of its ok runs' measured energy, power, kWh, energy cost and
 * CO2, and for each throughput figure its energy per unit of work and the
 * throughput per kW.  report.c calls in three places (add, free, print). */
#include "config.h"
#include "record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "results.h"
#include "util.h"

static double num(const json_t *o, const char *key)
{
    return gpurun_record_num(o, key);
}

void gpurun_report_energy_add(const struct gpurun_report_job *job, struct gpurun_report_config *c,
                              const json_t *run)
{
    const json_t *e = json_object_get(run, GPURUN_REC_ENERGY);
    double total = num(e, "total_J");
    if (isnan(total) || total < 0)
        return; /* a record before issue 31, or nothing measured */
    struct gpurun_report_energy *en = c->energy;
    if (!en)
        en = c->energy = gpurun_xcalloc(1, sizeof *en);
    en->n++;
    en->joules += total;
    double w = num(e, "mean_power_W"), kwh = num(e, "kwh"), cost = num(e, "cost"), co2 = num(e, "co2_g");
    if (!isnan(w)) {
        en->watts += w;
        en->nwatts++;
    }
    en->kwh += isnan(kwh) ? total / 3.6e6 : kwh;
    if (!isnan(cost)) {
        en->cost += cost;
        en->ncost++;
        const char *cur = gpurun_record_str(run, "currency");
        if (cur) {
            free(en->currency);
            en->currency = gpurun_xstrdup(cur);
        }
    }
    if (!isnan(co2)) {
        en->co2_g += co2;
        en->nco2++;
    }
    if (en->nfoms < job->nfoms) {
        en->per_unit = gpurun_xrealloc(en->per_unit, job->nfoms * sizeof *en->per_unit);
        memset(en->per_unit + en->nfoms, 0, (job->nfoms - en->nfoms) * sizeof *en->per_unit);
        en->nfoms = job->nfoms;
    }
    for (size_t f = 0; f < job->nfoms; f++) {
        const json_t *u = json_object_get(json_object_get(json_object_get(run, "foms"), job->foms[f].name),
                                          GPURUN_REC_FOM_ENERGY_PER_UNIT);
        double v = num(u, "value");
        const char *units = gpurun_record_str(u, "units");
        if (isnan(v) || !units)
            continue;
        en->per_unit[f].sum += v;
        en->per_unit[f].n++;
        snprintf(en->per_unit[f].units, sizeof en->per_unit[f].units, "%s", units);
    }
}

void gpurun_report_energy_free(struct gpurun_report_config *c)
{
    if (!c->energy)
        return;
    free(c->energy->currency);
    free(c->energy->per_unit);
    free(c->energy);
    c->energy = NULL;
}

static char *g4(double v)
{
    return isnan(v) ? gpurun_xstrdup("-") : gpurun_xasprintf("%.4g", v);
}

/* One table of its own (report.c's helpers are private to it): left
 * column labels, numbers right-aligned. */
void gpurun_report_energy_print(const struct gpurun_report_job *job, FILE *out)
{
    size_t rows = 0;
    for (size_t c = 0; c < job->nconfigs; c++)
        rows += job->configs[c].energy != NULL;
    if (!rows)
        return;
    /* Columns: configuration, runs, J/run, W, kWh/run, cost/run, g CO2/run,
     * then per figure with energy per unit: J/unit and figure per kW. */
    enum { FIXED = 7 };
    size_t nf = 0;
    size_t *figs = gpurun_xcalloc(job->nfoms + 1, sizeof *figs);
    for (size_t f = 0; f < job->nfoms; f++) {
        bool any = false;
        for (size_t c = 0; c < job->nconfigs && !any; c++) {
            const struct gpurun_report_energy *en = job->configs[c].energy;
            any = en && f < en->nfoms && en->per_unit[f].n;
        }
        if (any)
            figs[nf++] = f;
    }
    size_t ncols = FIXED + 2 * nf;
    char **cells = gpurun_xcalloc((rows + 1) * ncols, sizeof *cells);
    const char *cur = NULL;
    for (size_t c = 0; c < job->nconfigs && !cur; c++)
        cur = job->configs[c].energy ? job->configs[c].energy->currency : NULL;
    cells[0] = gpurun_xstrdup(job->by_gpus ? "GPUs/nodes/ranks" : "nodes/ranks");
    cells[1] = gpurun_xstrdup("runs");
    cells[2] = gpurun_xstrdup("J/run");
    cells[3] = gpurun_xstrdup("mean W");
    cells[4] = gpurun_xstrdup("kWh/run");
    cells[5] = cur ? gpurun_xasprintf("%s/run", cur) : gpurun_xstrdup("cost/run");
    cells[6] = gpurun_xstrdup("g CO2/run");
    for (size_t k = 0; k < nf; k++) {
        const struct gpurun_report_fom *fom = &job->foms[figs[k]];
        const char *units = "J/unit";
        for (size_t c = 0; c < job->nconfigs; c++) {
            const struct gpurun_report_energy *en = job->configs[c].energy;
            if (en && figs[k] < en->nfoms && en->per_unit[figs[k]].n)
                units = en->per_unit[figs[k]].units;
        }
        cells[FIXED + 2 * k] = gpurun_xasprintf("%s %s", fom->name, units);
        cells[FIXED + 2 * k + 1] = gpurun_xasprintf("%s per kW", fom->units && *fom->units ? fom->units : fom->name);
    }
    size_t r = 1;
    for (size_t c = 0; c < job->nconfigs; c++) {
        const struct gpurun_report_config *cf = &job->configs[c];
        const struct gpurun_report_energy *en = cf->energy;
        if (!en)
            continue;
        char **row = &cells[r++ * ncols];
        double n = (double)en->n;
        row[0] = job->by_gpus ? gpurun_xasprintf("%ld/%ld/%ld%s%s", cf->gpus, cf->nodes, cf->ranks,
                                                 strcmp(cf->label, "-") ? " " : "", strcmp(cf->label, "-") ? cf->label : "")
                              : gpurun_xasprintf("%ld/%ld%s%s", cf->nodes, cf->ranks, strcmp(cf->label, "-") ? " " : "",
                                                 strcmp(cf->label, "-") ? cf->label : "");
        row[1] = gpurun_xasprintf("%zu", en->n);
        row[2] = g4(en->joules / n);
        double w = en->nwatts ? en->watts / (double)en->nwatts : NAN;
        row[3] = g4(w);
        row[4] = g4(en->kwh / n);
        row[5] = g4(en->ncost ? en->cost / (double)en->ncost : NAN);
        row[6] = g4(en->nco2 ? en->co2_g / (double)en->nco2 : NAN);
        for (size_t k = 0; k < nf; k++) {
            size_t f = figs[k];
            bool have = f < en->nfoms && en->per_unit[f].n;
            row[FIXED + 2 * k] = g4(have ? en->per_unit[f].sum / (double)en->per_unit[f].n : NAN);
            /* Throughput per kW: the mean figure over the mean power. */
            double mean = f < cf->nstats && cf->stats[f].n ? cf->stats[f].mean : NAN;
            row[FIXED + 2 * k + 1] = g4(!isnan(w) && w > 0 ? mean / (w / 1000.0) : NAN);
        }
    }
    size_t *wd = gpurun_xcalloc(ncols, sizeof *wd);
    for (size_t i = 0; i < (rows + 1) * ncols; i++) {
        char *p = gpurun_printable(cells[i]);
        free(cells[i]);
        cells[i] = p;
        size_t l = strlen(p);
        if (l > wd[i % ncols])
            wd[i % ncols] = l;
    }
    fprintf(out, "\n  Energy (measured; mean over the ok runs that have it)\n");
    for (size_t i = 0; i <= rows; i++) {
        fputs("  ", out);
        for (size_t c = 0; c < ncols; c++) {
            const char *s = cells[i * ncols + c];
            int pad = (int)(wd[c] - strlen(s));
            if (c == 0)
                fprintf(out, "%s%*s", s, pad, "");
            else
                fprintf(out, "%*s%s", pad, "", s);
            fputs(c + 1 < ncols ? "  " : "\n", out);
        }
    }
    for (size_t i = 0; i < (rows + 1) * ncols; i++)
        free(cells[i]);
    free(cells);
    free(wd);
    free(figs);
}
