/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun tune: the space, the statistics and the decisions (tune.h). */
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "tune.h"
#include "util.h"

static const char *const layout_keys[] = {"nodes", "ranks_per_node", "gpus_per_rank", "threads_per_rank",
                                          "ranks_per_gpu"};

static bool key_ok(const char *key)
{
    for (size_t i = 0; i < sizeof layout_keys / sizeof *layout_keys; i++)
        if (!strcmp(key, layout_keys[i]))
            return true;
    if (strncmp(key, "params.", 7) != 0 || !key[7])
        return false;
    for (const char *p = key + 7; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.')
            return false;
    return true;
}

/* A value handed on as --set KEY=VALUE: printable, no quotes or spaces
 * that the rewritten job file would have to escape. */
static bool value_ok(const char *v)
{
    if (!*v || strlen(v) > 256 || v[0] == ' ' || v[strlen(v) - 1] == ' ')
        return false;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p < 0x20 || *p == 0x7f || *p == '"' || *p == '\'' || *p == '\\' || *p == '#' || *p == '{' ||
            *p == '}' || *p == ',' || *p == '=')
            return false;
    return true;
}

void gpurun_tune_space_free(struct gpurun_tune_space *sp)
{
    for (size_t a = 0; a < sp->naxes; a++)
        gpurun_axis_free(&sp->axes[a]);
    free(sp->axes);
    for (size_t i = 0; i < sp->nshort; i++)
        free(sp->short_sets[i]);
    free(sp->short_sets);
    free(sp->from);
    memset(sp, 0, sizeof *sp);
}

/* "KEY=V1,V2,..." of a template's tune_space into an axis. */
static int parse_axis(const char *s, const char *tname, struct gpurun_axis *ax, gpurun_error_t *err)
{
    const char *eq = strchr(s, '=');
    memset(ax, 0, sizeof *ax);
    if (!eq || eq == s)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "template '%s': key 'tune_space': '%.64s' is not KEY=V1,V2,...", tname, s);
    ax->key = gpurun_xstrndup(s, (size_t)(eq - s));
    if (!key_ok(ax->key)) {
        gpurun_err(err, GPURUN_EXIT_CONFIG,
                   "template '%s': key 'tune_space': '%.64s' is not a key gpurun tune varies (nodes, "
                   "ranks_per_node, gpus_per_rank, threads_per_rank, ranks_per_gpu, params.NAME)",
                   tname, ax->key);
        gpurun_axis_free(ax);
        return -1;
    }
    ax->texts = gpurun_xcalloc(GPURUN_TUNE_VALUES_MAX + 1, sizeof *ax->texts);
    for (const char *p = eq + 1;;) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        char *v = gpurun_xstrndup(p, n);
        bool dup = false;
        for (size_t i = 0; i < ax->n; i++)
            dup |= !strcmp(ax->texts[i], v);
        if (!value_ok(v) || dup || ax->n == GPURUN_TUNE_VALUES_MAX) {
            gpurun_err(err, GPURUN_EXIT_CONFIG, "template '%s': key 'tune_space': %s: value '%.64s' %s", tname,
                       ax->key, v,
                       dup ? "is listed twice" : ax->n == GPURUN_TUNE_VALUES_MAX ? "is one too many"
                                                                                 : "is empty, or has a quote, comma, brace or control character");
            free(v);
            gpurun_axis_free(ax);
            return -1;
        }
        ax->texts[ax->n++] = v;
        if (!c)
            break;
        p = c + 1;
    }
    return 0;
}

/* A template item for this node: "gpu:" ones where it has GPUs, "cpu:"
 * ones where it has none; *rest is the item without its prefix. */
static bool item_here(const char *item, bool gpus, const char **rest)
{
    *rest = item;
    if (!strncmp(item, "gpu:", 4) || !strncmp(item, "cpu:", 4)) {
        *rest = item + 4;
        return (item[0] == 'g') == gpus;
    }
    return true;
}

int gpurun_tune_space_make(const gpurun_job_t *job, const gpurun_template_t *tpl, bool gpus,
                           struct gpurun_tune_space *sp, gpurun_error_t *err)
{
    memset(sp, 0, sizeof *sp);
    size_t n = job->ntune;
    const char *rest;
    for (size_t i = 0; !job->ntune && tpl && i < tpl->ntune_space; i++)
        n += item_here(tpl->tune_space[i], gpus, &rest);
    if (n == 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: nothing to tune: the job has no tune { } block%s%s%s (e.g. tune { threads_per_rank = "
                          "{1, 2, 4}  params.npme = {0, 1} })",
                          job->path, tpl ? " and template '" : "", tpl ? tpl->name : "",
                          tpl ? "' has no tune_space" : "");
    if (n > GPURUN_TUNE_AXES_MAX)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: tune: %zu keys, more than the %d allowed", job->path, n,
                          GPURUN_TUNE_AXES_MAX);
    sp->axes = gpurun_xcalloc(n, sizeof *sp->axes);
    if (job->ntune) {
        sp->from = gpurun_xstrdup(job->path);
        for (size_t a = 0; a < n; a++) {
            const struct gpurun_axis *src = &job->tune[a];
            for (size_t v = 0; v < src->n; v++)
                if (!value_ok(src->texts[v])) {
                    gpurun_err(err, GPURUN_EXIT_CONFIG,
                               "%s:%d: key 'tune.%s': value '%.64s' is empty, or has a quote, comma, brace or control character",
                               job->path, src->line, src->key, src->texts[v]);
                    gpurun_tune_space_free(sp);
                    return -1;
                }
            gpurun_axis_copy(&sp->axes[sp->naxes++], src);
        }
    } else {
        sp->from = gpurun_xasprintf("template '%s'", tpl->name);
        for (size_t i = 0; i < tpl->ntune_space; i++) {
            if (!item_here(tpl->tune_space[i], gpus, &rest))
                continue;
            if (parse_axis(rest, tpl->name, &sp->axes[sp->naxes], err) < 0) {
                gpurun_tune_space_free(sp);
                return -1;
            }
            sp->naxes++;
        }
    }
    for (size_t a = 0; a < sp->naxes; a++)
        for (size_t b = 0; b < a; b++)
            if (!strcmp(sp->axes[a].key, sp->axes[b].key)) {
                gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: tune: key '%s' given twice", sp->from, sp->axes[a].key);
                gpurun_tune_space_free(sp);
                return -1;
            }
    size_t count = 1;
    for (size_t a = 0; a < sp->naxes; a++) {
        count *= sp->axes[a].n;
        if (count > GPURUN_TUNE_CANDIDATES_MAX) {
            gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: tune: more than %d candidates; narrow the space", sp->from,
                       GPURUN_TUNE_CANDIDATES_MAX);
            gpurun_tune_space_free(sp);
            return -1;
        }
    }
    size_t ns = tpl ? tpl->ntune_short : 0;
    if (ns > GPURUN_TUNE_SHORT_MAX) {
        gpurun_tune_space_free(sp);
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "template '%s': key 'tune_short': more than %d items", tpl->name,
                          GPURUN_TUNE_SHORT_MAX);
    }
    sp->short_sets = gpurun_xcalloc(ns + 1, sizeof *sp->short_sets);
    for (size_t i = 0; i < ns; i++) {
        const char *s = tpl->tune_short[i];
        const char *eq = strchr(s, '=');
        if (!eq || eq == s) {
            gpurun_err(err, GPURUN_EXIT_CONFIG, "template '%s': key 'tune_short': '%.64s' is not KEY=VALUE",
                       tpl->name, s);
            gpurun_tune_space_free(sp);
            return -1;
        }
        sp->short_sets[sp->nshort++] = gpurun_xstrdup(s);
    }
    return 0;
}

size_t gpurun_tune_count(const struct gpurun_tune_space *sp)
{
    return sp->naxes ? gpurun_axes_count(sp->axes, sp->naxes) : 0;
}

const char *gpurun_tune_value(const struct gpurun_tune_space *sp, size_t k, size_t a)
{
    return sp->axes[a].texts[gpurun_axes_pick(sp->axes, sp->naxes, k, a)];
}

size_t gpurun_tune_neighbor(const struct gpurun_tune_space *sp, size_t k, size_t a, size_t v)
{
    return gpurun_axes_neighbor(sp->axes, sp->naxes, k, a, v);
}

char *gpurun_tune_label(const struct gpurun_tune_space *sp, size_t k)
{
    return gpurun_axes_text(sp->axes, sp->naxes, k, " ");
}

static uint64_t fnv(uint64_t h, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    return (h ^ 0xff) * 0x100000001b3ULL; /* a separator: "ab","c" differs from "a","bc" */
}

void gpurun_tune_session(const char *job_name, const struct gpurun_tune_space *sp, char *buf, size_t size)
{
    uint64_t h = fnv(0xcbf29ce484222325ULL, job_name);
    for (size_t a = 0; a < sp->naxes; a++) {
        h = fnv(h, sp->axes[a].key);
        for (size_t v = 0; v < sp->axes[a].n; v++)
            h = fnv(h, sp->axes[a].texts[v]);
    }
    for (size_t i = 0; i < sp->nshort; i++)
        h = fnv(h, sp->short_sets[i]);
    snprintf(buf, size, "%016llx", (unsigned long long)h);
}

long gpurun_tune_parse_duration(const char *s)
{
    long total = 0;
    bool any = false;
    const char *p = s;
    while (*p) {
        if (!isdigit((unsigned char)*p))
            return -1;
        long v = 0;
        int digits = 0;
        while (isdigit((unsigned char)*p)) {
            if (++digits > 9)
                return -1;
            v = v * 10 + (*p++ - '0');
        }
        long unit = 1;
        switch (*p) {
        case 'd': unit = 86400; p++; break;
        case 'h': unit = 3600; p++; break;
        case 'm': unit = 60; p++; break;
        case 's': unit = 1; p++; break;
        case '\0': unit = 1; break;
        default: return -1;
        }
        total += v * unit;
        if (total > 366L * 86400)
            return -1;
        any = true;
    }
    return any ? total : -1;
}

/* ---- statistics and decisions ---------------------------------------- */

void gpurun_tune_stats(const double *v, size_t n, struct gpurun_tune_stats *st)
{
    memset(st, 0, sizeof *st);
    st->n = n;
    if (!n)
        return;
    double sum = 0;
    st->min = st->max = v[0];
    for (size_t i = 0; i < n; i++) {
        sum += v[i];
        st->min = v[i] < st->min ? v[i] : st->min;
        st->max = v[i] > st->max ? v[i] : st->max;
    }
    st->mean = sum / (double)n;
    if (n > 1) {
        double ss = 0;
        for (size_t i = 0; i < n; i++)
            ss += (v[i] - st->mean) * (v[i] - st->mean);
        st->sd = sqrt(ss / (double)(n - 1));
    }
}

double gpurun_tune_pooled_cv(const struct gpurun_tune_cand *c, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        struct gpurun_tune_stats st;
        gpurun_tune_stats(c[i].values, c[i].n, &st);
        if (st.n < 2 || st.mean == 0)
            continue;
        double cv = st.sd / fabs(st.mean);
        num += cv * cv * (double)(st.n - 1);
        den += (double)(st.n - 1);
    }
    return den > 0 ? sqrt(num / den) : GPURUN_TUNE_DEFAULT_CV;
}

/* The standard error of a candidate's mean: its own spread, at least cv
 * of its mean per run (one run, or repeats that happened to agree). */
static double std_error(const struct gpurun_tune_cand *c, double cv, double *mean)
{
    struct gpurun_tune_stats st;
    gpurun_tune_stats(c->values, c->n, &st);
    *mean = st.mean;
    double sd = st.sd > cv * fabs(st.mean) ? st.sd : cv * fabs(st.mean);
    return st.n ? sd / sqrt((double)st.n) : INFINITY;
}

bool gpurun_tune_tied(const struct gpurun_tune_cand *a, const struct gpurun_tune_cand *b, double cv)
{
    double ma, mb;
    double sa = std_error(a, cv, &ma), sb = std_error(b, cv, &mb);
    return fabs(ma - mb) <= GPURUN_TUNE_Z * sqrt(sa * sa + sb * sb);
}

int gpurun_tune_fewer(const struct gpurun_tune_cand *a, const struct gpurun_tune_cand *b)
{
    if (a->gpus != b->gpus)
        return a->gpus < b->gpus ? -1 : 1;
    if (a->ranks != b->ranks)
        return a->ranks < b->ranks ? -1 : 1;
    if (a->threads != b->threads)
        return a->threads < b->threads ? -1 : 1;
    return 0;
}

static double mean_of(const struct gpurun_tune_cand *c)
{
    struct gpurun_tune_stats st;
    gpurun_tune_stats(c->values, c->n, &st);
    return st.mean;
}

/* a better than b by mean alone. */
static bool better(const struct gpurun_tune_cand *a, const struct gpurun_tune_cand *b, bool lower_better)
{
    return lower_better ? mean_of(a) < mean_of(b) : mean_of(a) > mean_of(b);
}

/* b beats a on (mean, resources): a mean as good and resources as few,
 * one of them strictly. */
static bool dominates(const struct gpurun_tune_cand *b, const struct gpurun_tune_cand *a, bool lower_better)
{
    double ma = mean_of(a), mb = mean_of(b);
    bool as_good = lower_better ? mb <= ma : mb >= ma;
    int f = gpurun_tune_fewer(b, a);
    return as_good && f <= 0 && (f < 0 || mb != ma);
}

size_t gpurun_tune_best(const struct gpurun_tune_cand *c, size_t n, bool lower_better, double cv)
{
    size_t top = SIZE_MAX;
    for (size_t i = 0; i < n; i++)
        if (c[i].alive && c[i].n && (top == SIZE_MAX || better(&c[i], &c[top], lower_better)))
            top = i;
    if (top == SIZE_MAX)
        return top;
    size_t pick = top;
    for (size_t i = 0; i < n; i++) {
        if (i == top || !c[i].alive || !c[i].n || !gpurun_tune_tied(&c[i], &c[top], cv))
            continue;
        int f = gpurun_tune_fewer(&c[i], &c[pick]);
        if (f < 0 || (f == 0 && better(&c[i], &c[pick], lower_better)))
            pick = i;
    }
    /* Resources are an objective (ties go to fewer): no candidate may beat
     * the pick on both, or the pick would be outside the Pareto set.  One
     * with a better mean outside the noise of the top cannot be, but tie
     * tests of unequal spreads can make it so: then it is the pick.  Each
     * step moves to one that dominates, so at most n steps. */
    for (size_t step = 0; step < n; step++) {
        size_t next = SIZE_MAX;
        for (size_t i = 0; i < n && next == SIZE_MAX; i++)
            if (i != pick && c[i].alive && c[i].n && dominates(&c[i], &c[pick], lower_better))
                next = i;
        if (next == SIZE_MAX)
            break;
        pick = next;
    }
    return pick;
}

void gpurun_tune_pareto(const struct gpurun_tune_cand *c, size_t n, size_t nobj, const double *means,
                        const bool *lower, bool *in)
{
    for (size_t a = 0; a < n; a++) {
        in[a] = c[a].alive;
        for (size_t o = 0; o < nobj && in[a]; o++)
            in[a] = !isnan(means[a * nobj + o]);
    }
    for (size_t a = 0; a < n; a++) {
        bool dominated = false;
        for (size_t b = 0; b < n && in[a] && !dominated; b++) {
            if (b == a || !c[b].alive)
                continue;
            /* b at least as good on every objective, resources included,
             * and better on one */
            int f = gpurun_tune_fewer(&c[b], &c[a]);
            bool all = f <= 0, strict = f < 0;
            for (size_t o = 0; o < nobj && all; o++) {
                double x = means[a * nobj + o], y = means[b * nobj + o];
                if (isnan(y) || (lower[o] ? y > x : y < x))
                    all = false;
                else if (y != x)
                    strict = true;
            }
            dominated = all && strict;
        }
        if (dominated)
            in[a] = false;
    }
}

static bool rank_lower_better; /* qsort has no context: set just before each sort */
static int by_mean(const void *x, const void *y)
{
    const struct gpurun_tune_cand *a = *(struct gpurun_tune_cand *const *)x, *b = *(struct gpurun_tune_cand *const *)y;
    double ma = mean_of(a), mb = mean_of(b);
    if (ma == mb)
        return gpurun_tune_fewer(a, b);
    return (rank_lower_better ? ma < mb : ma > mb) ? -1 : 1;
}

size_t gpurun_tune_halve(struct gpurun_tune_cand *c, size_t n, bool lower_better, double cv)
{
    struct gpurun_tune_cand **order = gpurun_xcalloc(n + 1, sizeof *order);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (c[i].alive && c[i].n)
            order[m++] = &c[i];
    rank_lower_better = lower_better;
    qsort(order, m, sizeof *order, by_mean);
    size_t keep = (m + 1) / 2, kept = keep;
    for (size_t i = keep; i < m; i++) {
        /* Inside the noise of the best: it may be the best, measured
         * again.  One only as good as the worst kept one is not: keeping
         * it would cost a trial for a layout no better than those kept. */
        if (gpurun_tune_tied(order[i], order[0], cv))
            kept++;
        else
            order[i]->alive = false;
    }
    /* Every round drops one at least, so that the search ends: the worst
     * that is not the pick (a tie goes to the one using fewer resources). */
    if (kept == m && m > 1) {
        size_t pick = gpurun_tune_best(c, n, lower_better, cv);
        size_t d = m - 1;
        if (order[d] == &c[pick])
            d--;
        order[d]->alive = false;
    }
    size_t alive = 0;
    for (size_t i = 0; i < n; i++)
        alive += c[i].alive && c[i].n;
    free(order);
    return alive;
}

/* The last two alive, each measured twice or more (their repeats say what
 * the noise is): when one is better beyond the noise, the other is no
 * longer alive (true); tied, or with one run, false. */
static bool last_two_apart(struct gpurun_tune_cand *c, size_t n, bool lower_better, double cv)
{
    struct gpurun_tune_cand *two[2];
    size_t m = 0;
    for (size_t k = 0; k < n && m < 2; k++)
        if (c[k].alive && c[k].n)
            two[m++] = &c[k];
    if (m != 2 || two[0]->n < 2 || two[1]->n < 2 || gpurun_tune_tied(two[0], two[1], cv))
        return false;
    two[better(two[0], two[1], lower_better) ? 1 : 0]->alive = false;
    return true;
}

size_t gpurun_tune_round(struct gpurun_tune_cand *c, size_t n, bool lower_better, double cv)
{
    size_t alive = gpurun_tune_halve(c, n, lower_better, cv);
    if (alive == 2 && last_two_apart(c, n, lower_better, cv))
        alive = 1;
    return alive;
}

double gpurun_tune_confidence(const struct gpurun_tune_cand *best, const struct gpurun_tune_cand *other,
                              bool lower_better, double cv)
{
    double mb, mo;
    double sb = std_error(best, cv, &mb), so = std_error(other, cv, &mo);
    double se = sqrt(sb * sb + so * so);
    double diff = lower_better ? mo - mb : mb - mo;
    if (!isfinite(se))
        return 0.5;
    if (!(se > 0)) /* no spread measured at all */
        return diff > 0 ? 1.0 : 0.5;
    double d = diff / se;
    double p = 0.5 * erfc(-d / sqrt(2.0));
    return p < 0.5 ? 0.5 : p;
}

double gpurun_tune_cost(double price_per_gpu_hour, long gpus, double fom, const char *units)
{
    const char *slash = units ? strrchr(units, '/') : NULL;
    double per_hour = 0; /* the figure times this: work per hour */
    if (slash) {
        const char *u = slash + 1;
        per_hour = !strcmp(u, "s") || !strcmp(u, "sec") ? 3600
                   : !strcmp(u, "min")                  ? 60
                   : !strcmp(u, "h") || !strcmp(u, "hour") ? 1
                   : !strcmp(u, "day")                  ? 1.0 / 24
                                                        : 0;
    }
    if (!isfinite(price_per_gpu_hour) || price_per_gpu_hour < 0 || gpus <= 0 || !(fom > 0) || per_hour <= 0)
        return NAN;
    return price_per_gpu_hour * (double)gpus / (fom * per_hour);
}

/* ---- the tuned job file ------------------------------------------------ */

/* A token of the libconfuse grammar, enough to find keys, values and
 * sections: comments and strings skipped whole. */
enum tok { T_END, T_WORD, T_STRING, T_EQ, T_LBRACE, T_RBRACE, T_COMMA, T_OTHER };

struct lex {
    const char *s;
    size_t len, pos;
    size_t start; /* of the last token */
};

static enum tok next_tok(struct lex *x)
{
    for (;;) {
        while (x->pos < x->len && isspace((unsigned char)x->s[x->pos]))
            x->pos++;
        if (x->pos >= x->len)
            return T_END;
        const char *p = x->s + x->pos;
        if (*p == '#' || (*p == '/' && x->pos + 1 < x->len && p[1] == '/')) {
            while (x->pos < x->len && x->s[x->pos] != '\n')
                x->pos++;
            continue;
        }
        if (*p == '/' && x->pos + 1 < x->len && p[1] == '*') {
            const char *e = NULL;
            for (size_t i = x->pos + 2; i + 1 < x->len && !e; i++)
                if (x->s[i] == '*' && x->s[i + 1] == '/')
                    e = x->s + i;
            x->pos = e ? (size_t)(e - x->s) + 2 : x->len;
            continue;
        }
        break;
    }
    x->start = x->pos;
    char c = x->s[x->pos];
    if (c == '"' || c == '\'') {
        x->pos++;
        while (x->pos < x->len && x->s[x->pos] != c) {
            if (c == '"' && x->s[x->pos] == '\\' && x->pos + 1 < x->len)
                x->pos++;
            x->pos++;
        }
        if (x->pos >= x->len)
            return T_OTHER; /* unterminated */
        x->pos++;
        return T_STRING;
    }
    x->pos++;
    switch (c) {
    case '=': return T_EQ;
    case '{': return T_LBRACE;
    case '}': return T_RBRACE;
    case ',': return T_COMMA;
    case '(': case ')': case '+': return T_OTHER;
    default: break;
    }
    while (x->pos < x->len && !isspace((unsigned char)x->s[x->pos]) && !strchr("=#{},()\"'", x->s[x->pos]))
        x->pos++;
    return T_WORD;
}

struct span {
    size_t start, end; /* [start, end) of the value; of a whole block for sections */
    bool found;
};

/* Finds, at the top level: each key of `keys` (its value's span), the
 * params block (the span just inside its `{`) and each of `pkeys` in it,
 * and the scan block (whole).  -1 when the text cannot be followed. */
static int find_spans(const char *text, size_t len, char *const *keys, struct span *vals, size_t nkeys,
                      struct span *params_open, struct span *scan)
{
    struct lex x = {.s = text, .len = len};
    int depth = 0;
    char section[32] = "";
    size_t sec_start = 0;
    char word[128];
    enum tok t = next_tok(&x);
    int guard = 0;
    while (t != T_END) {
        if (++guard > 1000000)
            return -1;
        if (t == T_WORD) {
            size_t wl = x.pos - x.start;
            snprintf(word, sizeof word, "%.*s", (int)(wl < sizeof word ? wl : sizeof word - 1), text + x.start);
            size_t wstart = x.start;
            enum tok u = next_tok(&x);
            if (u == T_LBRACE) { /* a section */
                if (depth == 0) {
                    snprintf(section, sizeof section, "%.31s", word);
                    sec_start = wstart;
                    if (!strcmp(word, "params"))
                        *params_open = (struct span){x.pos, x.pos, true};
                }
                depth++;
                t = next_tok(&x);
                continue;
            }
            if (u == T_WORD) { /* a titled section: NAME TITLE { */
                u = next_tok(&x);
                if (u == T_LBRACE) {
                    if (depth == 0) {
                        section[0] = '\0';
                        sec_start = wstart;
                    }
                    depth++;
                    t = next_tok(&x);
                    continue;
                }
                return -1;
            }
            if (u != T_EQ)
                return -1;
            u = next_tok(&x);
            size_t vstart = x.start, vend;
            if (u == T_LBRACE) { /* a list */
                int guard2 = 0;
                while ((u = next_tok(&x)) != T_RBRACE)
                    if (u == T_END || u == T_LBRACE || ++guard2 > 100000)
                        return -1;
            } else if (u != T_WORD && u != T_STRING) {
                return -1;
            }
            vend = x.pos;
            char dotted[192];
            snprintf(dotted, sizeof dotted, "%s%s%s", depth == 1 ? section : "", depth == 1 ? "." : "", word);
            for (size_t k = 0; k < nkeys && depth <= 1; k++)
                if (!strcmp(keys[k], depth == 0 ? word : dotted))
                    vals[k] = (struct span){vstart, vend, true};
            t = next_tok(&x);
            continue;
        }
        if (t == T_RBRACE) {
            if (--depth < 0)
                return -1;
            if (depth == 0 && !strcmp(section, "scan"))
                *scan = (struct span){sec_start, x.pos, true};
            if (depth == 0)
                section[0] = '\0';
        } else if (t != T_COMMA) {
            return -1;
        }
        t = next_tok(&x);
    }
    return depth == 0 ? 0 : -1;
}

struct edit {
    size_t start, end;
    char *with;
};

static int by_start(const void *x, const void *y)
{
    const struct edit *a = x, *b = y;
    return a->start < b->start ? -1 : a->start > b->start ? 1 : 0;
}

char *gpurun_tune_rewrite(const char *text, size_t len, char *const *sets, size_t nsets, const char *header,
                          gpurun_error_t *err)
{
    char **keys = gpurun_xcalloc(nsets + 1, sizeof *keys);
    const char **vals = gpurun_xcalloc(nsets + 1, sizeof *vals);
    struct span *spans = gpurun_xcalloc(nsets + 1, sizeof *spans);
    struct edit *edits = gpurun_xcalloc(nsets + 2, sizeof *edits);
    size_t nedits = 0;
    struct span params = {0}, scan = {0};
    char *out = NULL;
    for (size_t i = 0; i < nsets; i++) {
        const char *eq = strchr(sets[i], '=');
        keys[i] = eq ? gpurun_xstrndup(sets[i], (size_t)(eq - sets[i])) : gpurun_xstrdup(sets[i]);
        vals[i] = eq ? eq + 1 : "";
    }
    if (find_spans(text, len, keys, spans, nsets, &params, &scan) < 0) {
        gpurun_err(err, GPURUN_EXIT_CONFIG, "the job file could not be followed to write the tuned one");
        goto out;
    }
    char *tail = gpurun_xstrdup("");
    char *inparams = gpurun_xstrdup("");
    for (size_t i = 0; i < nsets; i++) {
        bool is_param = !strncmp(keys[i], "params.", 7);
        /* Integers bare, anything else quoted (values hold no quote: tune.c's value_ok). */
        bool digits = *vals[i] && strspn(vals[i], "0123456789") == strlen(vals[i]);
        char *v = gpurun_xasprintf(digits && !is_param ? "%s" : "\"%s\"", vals[i]);
        if (spans[i].found) {
            edits[nedits++] = (struct edit){spans[i].start, spans[i].end, v};
            continue;
        }
        char *n;
        if (is_param) /* into the params block, or a new one at the end */
            n = gpurun_xasprintf("%s%s%s = %s", inparams, *inparams ? "  " : "", keys[i] + 7, v);
        else
            n = gpurun_xasprintf("%s%s = %s   # gpurun tune\n", tail, keys[i], v);
        if (is_param) {
            free(inparams);
            inparams = n;
        } else {
            free(tail);
            tail = n;
        }
        free(v);
    }
    if (params.found && *inparams) {
        edits[nedits++] = (struct edit){params.start, params.start, gpurun_xasprintf("  %s  ", inparams)};
    } else if (*inparams) {
        char *n = gpurun_xasprintf("%sparams { %s }   # gpurun tune\n", tail, inparams);
        free(tail);
        tail = n;
    }
    free(inparams);
    if (scan.found)
        edits[nedits++] = (struct edit){scan.start, scan.end,
                                        gpurun_xstrdup("# (scan { } left out by gpurun tune: one layout)")};
    qsort(edits, nedits, sizeof *edits, by_start);
    size_t cap = len + strlen(header) + strlen(tail) + 64;
    for (size_t i = 0; i < nedits; i++)
        cap += strlen(edits[i].with);
    out = gpurun_xcalloc(cap, 1);
    size_t o = 0, at = 0;
    o += (size_t)snprintf(out + o, cap - o, "%s", header);
    for (size_t i = 0; i < nedits; i++) {
        if (edits[i].start < at) { /* overlapping: a key inside the scan block */
            free(edits[i].with);
            continue;
        }
        memcpy(out + o, text + at, edits[i].start - at);
        o += edits[i].start - at;
        o += (size_t)snprintf(out + o, cap - o, "%s", edits[i].with);
        at = edits[i].end;
        free(edits[i].with);
    }
    memcpy(out + o, text + at, len - at);
    o += len - at;
    if (o && out[o - 1] != '\n')
        out[o++] = '\n';
    o += (size_t)snprintf(out + o, cap - o, "%s", tail);
    free(tail);
out:
    for (size_t i = 0; i < nsets; i++)
        free(keys[i]);
    free(keys);
    free(vals);
    free(spans);
    free(edits);
    return out;
}

/* `key` is one of the keys ("KEY=VALUE") of sets. */
static bool key_of_sets(const char *key, char *const *sets, size_t nsets)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i < nsets; i++)
        if (!strncmp(sets[i], key, kl) && sets[i][kl] == '=')
            return true;
    return false;
}

int gpurun_tune_check_tuned(const char *text, size_t len, const char *out, char *const *sets, size_t nsets,
                            const char *label, gpurun_error_t *err)
{
    gpurun_job_t *orig = NULL, *tuned = NULL;
    int rc = -1;
    if (gpurun_job_parse(text, len, label, &orig, err) < 0 ||
        gpurun_job_parse(out, strlen(out), label, &tuned, err) < 0) {
        char *why = gpurun_xstrdup(err->text);
        gpurun_err(err, GPURUN_EXIT_CONFIG, "the tuned job file would not read back: %s", why);
        free(why);
        goto out;
    }
    for (size_t i = 0; i < tuned->from.n; i++) {
        const char *key = tuned->from.items[i].key;
        if (!gpurun_kvlist_get(&orig->from, key) && !key_of_sets(key, sets, nsets)) {
            const char *line = strrchr(tuned->from.items[i].value, ':'); /* "LABEL:LINE" */
            char *k = gpurun_comment_text(key);
            gpurun_err(err, GPURUN_EXIT_CONFIG,
                       "the tuned job file would set the key '%.64s' (line %s), which neither the job file nor "
                       "the tuned layout sets: not written",
                       k, line ? line + 1 : "?");
            free(k);
            goto out;
        }
    }
    rc = 0;
out:
    gpurun_job_destroy(orig);
    gpurun_job_destroy(tuned);
    return rc;
}
