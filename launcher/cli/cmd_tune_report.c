/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun tune's verdict and what it prints of it (cmd_tune_report.h): the
 * best per objective, why, the Pareto set.  Moved whole from cmd_tune.c. */
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

#include "alloc.h"
#include "cmd.h"
#include "cmd_common.h"
#include "cmd_tune_model.h"
#include "cmd_tune_report.h"
#include "energy.h"
#include "hpldat.h"
#include "job.h"
#include "job_template.h"
#include "manager.h"
#include "plan.h"
#include "provenance.h"
#include "record.h"
#include "results.h"
#include "run.h"
#include "safefile.h"
#include "select.h"
#include "site.h"
#include "template.h"
#include "topology.h"
#include "tune.h"
#include "util.h"

const char *cmd_tune_obj_name(const struct tune *t, enum objective o)
{
    return o == OBJ_COST ? "cost" : o == OBJ_SPOT ? "spot" : o == OBJ_ENERGY ? "energy" : t->fom ? t->fom : "figure";
}

bool cmd_tune_obj_lower(const struct tune *t, enum objective o)
{
    return o == OBJ_FIGURE ? t->fom_lower : true;
}

/* The verdict on objective o, over every candidate measured (the dropped
 * ones too: a pick among the survivors could be beaten by a dropped one on
 * both its figure and its resources, and be outside the Pareto set). */
struct verdict {
    size_t best;   /* SIZE_MAX: none measured */
    size_t top;    /* the best mean */
    size_t second; /* the best mean of the others; SIZE_MAX: none */
    double cv;
};

static struct gpurun_tune_cand cand_view(const struct cand *c, enum objective o)
{
    return (struct gpurun_tune_cand){.values = c->v[o], .n = c->nv[o], .gpus = c->gpus, .ranks = c->ranks,
                                     .threads = c->threads, .runnable = !c->pruned,
                                     .alive = !c->pruned && !c->failed && c->nv[o] > 0};
}

double cmd_tune_mean(const double *v, size_t n)
{
    struct gpurun_tune_stats st;
    gpurun_tune_stats(v, n, &st);
    return st.mean;
}

/* The best mean of the alive ones other than `except`. */
static size_t top_mean(const struct gpurun_tune_cand *tc, size_t n, bool lower, size_t except)
{
    size_t top = SIZE_MAX;
    for (size_t k = 0; k < n; k++) {
        if (k == except || !tc[k].alive)
            continue;
        double m = cmd_tune_mean(tc[k].values, tc[k].n), mt = top == SIZE_MAX ? 0 : cmd_tune_mean(tc[top].values, tc[top].n);
        if (top == SIZE_MAX || (lower ? m < mt : m > mt))
            top = k;
    }
    return top;
}

static struct verdict verdict_for(const struct tune *t, enum objective o)
{
    struct gpurun_tune_cand *tc = gpurun_xcalloc(t->n + 1, sizeof *tc);
    for (size_t k = 0; k < t->n; k++)
        tc[k] = cand_view(&t->c[k], o);
    struct verdict v = {.cv = gpurun_tune_pooled_cv(tc, t->n)};
    v.best = gpurun_tune_best(tc, t->n, cmd_tune_obj_lower(t, o), v.cv);
    v.top = top_mean(tc, t->n, cmd_tune_obj_lower(t, o), SIZE_MAX);
    /* a best whose mean equals the top one is the top: no "0.0 % better" */
    if (v.best != SIZE_MAX && v.top != SIZE_MAX &&
        cmd_tune_mean(tc[v.best].values, tc[v.best].n) == cmd_tune_mean(tc[v.top].values, tc[v.top].n))
        v.top = v.best;
    v.second = v.best == SIZE_MAX ? SIZE_MAX : top_mean(tc, t->n, cmd_tune_obj_lower(t, o), v.best);
    free(tc);
    return v;
}

static void resources_text(const struct cand *c, bool gpus, char *out, size_t n)
{
    char g[48] = "";
    if (gpus)
        snprintf(g, sizeof g, "%ld GPU%s, ", c->gpus, c->gpus == 1 ? "" : "s");
    snprintf(out, n, "%s%ld rank%s, %ld thread%s", g, c->ranks, c->ranks == 1 ? "" : "s", c->threads,
             c->threads == 1 ? "" : "s");
}

/* How much worse a is than b, in percent of b (>= 0 when a is worse). */
static double worse_pct(const struct tune *t, enum objective o, const struct cand *a, const struct cand *b)
{
    double ma = cmd_tune_mean(a->v[o], a->nv[o]), mb = cmd_tune_mean(b->v[o], b->nv[o]);
    return mb != 0 ? 100 * (cmd_tune_obj_lower(t, o) ? ma - mb : mb - ma) / fabs(mb) : 0;
}

/* What happened to candidate k, in words: the state column. */
static void state_text(const struct tune *t, size_t k, const struct verdict *v, char *out, size_t n)
{
    const struct cand *c = &t->c[k];
    enum objective o = t->obj;
    char what[160] = "kept";
    if (c->pruned) {
        snprintf(out, n, "pruned: %.120s", c->pruned);
        return;
    }
    if (c->failed) {
        snprintf(out, n, "failed: %.140s", c->failed);
        return;
    }
    if (!c->nv[o]) {
        snprintf(out, n, "not run (budget)");
        return;
    }
    if (k == v->best) {
        snprintf(what, sizeof what, "best");
    } else if (v->best != SIZE_MAX) {
        const struct cand *b = &t->c[v->best];
        struct gpurun_tune_cand x = cand_view(c, o), y = cand_view(b, o);
        int f = gpurun_tune_fewer(&x, &y);
        double pct = worse_pct(t, o, c, b);
        const char *word = o == OBJ_FIGURE && !t->fom_lower ? "slower" : "worse";
        if (gpurun_tune_tied(&x, &y, v->cv) && f > 0)
            snprintf(what, sizeof what, "tied, more resources");
        else if (gpurun_tune_tied(&x, &y, v->cv) && f == 0)
            snprintf(what, sizeof what, "tied, the same resources, %s by %.1f %%", word, pct > 0 ? pct : 0.0);
        else if (pct > 0)
            snprintf(what, sizeof what, "%s by %.1f %%", word, pct);
        else /* better mean, fewer resources, yet not tied with the fastest */
            snprintf(what, sizeof what, "%s than %s by %.1f %%, beyond the noise", word, t->c[v->top].label,
                     worse_pct(t, o, c, &t->c[v->top]));
    }
    char busy[64] = "";
    if (c->busy_runs)
        snprintf(busy, sizeof busy, " (%zu busy trial%s repeated)", c->busy_runs, c->busy_runs == 1 ? "" : "s");
    if (c->dropped_round >= 0 && k != v->best)
        snprintf(out, n, "dropped after round %d: %s%s", c->dropped_round + 1, what, busy);
    else
        snprintf(out, n, "%s%s", what, busy);
}

/* "best OBJ  LABEL: MEAN, +N% over X (M), confidence C%", never a
 * negative margin: a pick slower than another is tied with it and uses
 * fewer resources (gpurun_tune_best), and says so. */
static void print_best(const struct tune *t, enum objective o, const struct verdict *v)
{
    const struct cand *c = &t->c[v->best];
    double mb = cmd_tune_mean(c->v[o], c->nv[o]);
    printf("%s: %.6g", c->label, mb);
    if (v->second == SIZE_MAX) {
        printf("\n");
        return;
    }
    const struct cand *s = &t->c[v->second];
    double ms = cmd_tune_mean(s->v[o], s->nv[o]);
    struct gpurun_tune_cand a = cand_view(c, o), bb = cand_view(s, o);
    bool tied = gpurun_tune_tied(&a, &bb, v->cv);
    double margin = -worse_pct(t, o, c, s);
    if (margin < 0 || (margin == 0 && gpurun_tune_fewer(&a, &bb) < 0)) {
        printf(", tied with %s (%.6g), within the noise, fewer resources\n", s->label, ms);
        return;
    }
    double conf = gpurun_tune_confidence(&a, &bb, cmd_tune_obj_lower(t, o), v->cv);
    printf(", +%.1f%% over %s (%.6g), confidence %.0f%%%s\n", margin, s->label, ms, 100 * conf,
           tied ? ": within the noise, a tie" : "");
}

/* One line: why the best won. */
static void print_why(const struct tune *t, const struct verdict *v)
{
    enum objective o = t->obj;
    const struct cand *c = &t->c[v->best];
    bool gpus = c->gpus > 0;
    char rb[96], ro[96];
    resources_text(c, gpus, rb, sizeof rb);
    if (v->second == SIZE_MAX) {
        printf("why: the only layout measured\n");
    } else if (v->best != v->top) {
        const struct cand *top = &t->c[v->top];
        resources_text(top, gpus || top->gpus > 0, ro, sizeof ro);
        printf("why: within the noise of the best mean, %s (%.1f %% better), with fewer resources (%s, against "
               "%s): a tie goes to fewer resources\n",
               top->label, worse_pct(t, o, c, top), rb, ro);
    } else {
        const struct cand *s = &t->c[v->second];
        struct gpurun_tune_cand a = cand_view(c, o), b = cand_view(s, o);
        if (!gpurun_tune_tied(&a, &b, v->cv)) {
            printf("why: the best mean, beyond the noise of the next, %s\n", s->label);
        } else {
            resources_text(s, gpus || s->gpus > 0, ro, sizeof ro);
            printf("why: the best mean; %s is within the noise of it but uses %s resources (%s, against %s)\n",
                   s->label, gpurun_tune_fewer(&b, &a) > 0 ? "more" : "as many", ro, rb);
        }
    }
}

/* The Pareto set over the measured objectives and resources. */
static void print_pareto(const struct tune *t, const bool measured[OBJ_N])
{
    double *means = gpurun_xcalloc(t->n * OBJ_N + 1, sizeof *means);
    struct gpurun_tune_cand *tc = gpurun_xcalloc(t->n + 1, sizeof *tc);
    bool *in = gpurun_xcalloc(t->n + 1, sizeof *in), lower[OBJ_N];
    size_t nobj = 0;
    for (int o = 0; o < OBJ_N; o++) {
        if (!measured[o])
            continue;
        lower[nobj] = cmd_tune_obj_lower(t, (enum objective)o);
        for (size_t k = 0; k < t->n; k++)
            means[k * OBJ_N + nobj] = t->c[k].nv[o] ? cmd_tune_mean(t->c[k].v[o], t->c[k].nv[o]) : NAN;
        nobj++;
    }
    /* gpurun_tune_pareto reads rows of nobj: pack them */
    for (size_t k = 0; k < t->n; k++) {
        for (size_t o = 0; o < nobj; o++)
            means[k * nobj + o] = means[k * OBJ_N + o];
        tc[k] = cand_view(&t->c[k], t->obj);
        tc[k].alive = !t->c[k].pruned && !t->c[k].failed;
    }
    gpurun_tune_pareto(tc, t->n, nobj, means, lower, in);
    printf("pareto set (no other layout as good on every measured objective and on resources, and better on "
           "one):");
    for (size_t k = 0; k < t->n; k++)
        if (in[k])
            printf("\n  %s", t->c[k].label);
    printf("\n");
    free(means);
    free(tc);
    free(in);
}

void cmd_tune_report(struct tune *t, size_t best[OBJ_N])
{
    struct verdict vs[OBJ_N];
    for (int o = 0; o < OBJ_N; o++) {
        vs[o] = verdict_for(t, (enum objective)o);
        best[o] = vs[o].best;
    }
    printf("\n%-40s %4s %12s %18s  %s\n", "candidate", "runs", "mean", "spread", "state");
    for (size_t k = 0; k < t->n; k++) {
        struct cand *c = &t->c[k];
        struct gpurun_tune_stats st;
        gpurun_tune_stats(c->v[t->obj], c->nv[t->obj], &st);
        char spread[64] = "-", state[320];
        if (st.n > 1)
            snprintf(spread, sizeof spread, "%.4g-%.4g (%.1f%%)", st.min, st.max,
                     st.mean != 0 ? 100 * st.sd / fabs(st.mean) : 0.0);
        state_text(t, k, &vs[t->obj], state, sizeof state);
        char m[32] = "-";
        if (st.n)
            snprintf(m, sizeof m, "%.6g", st.mean);
        printf("%-40s %4zu %12s %18s  %s\n", c->label, st.n, m, spread, state);
    }
    printf("\n");
    bool measured[OBJ_N];
    for (int o = 0; o < OBJ_N; o++) {
        measured[o] = best[o] != SIZE_MAX;
        const char *what = o == OBJ_FIGURE ? cmd_tune_obj_name(t, OBJ_FIGURE)
                           : o == OBJ_COST ? "cost per unit of work"
                           : o == OBJ_SPOT ? "cost at spot price"
                                           : "energy per unit of work";
        printf("best %-24s ", what);
        if (best[o] == SIZE_MAX) {
            printf("not measured here%s\n",
                   o == OBJ_COST ? " (needs the site's price_per_gpu_hour, GPUs, and a rate figure)"
                   : o == OBJ_SPOT ? " (needs the site's spot_price_per_gpu_hour, GPUs, and a rate figure)"
                   : o == OBJ_ENERGY ? " (no energy_per_unit in the records)"
                                     : "");
            continue;
        }
        print_best(t, (enum objective)o, &vs[o]);
    }
    if (best[t->obj] != SIZE_MAX)
        print_why(t, &vs[t->obj]);
    print_pareto(t, measured);
}
