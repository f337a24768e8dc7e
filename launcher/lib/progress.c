/* SPDX-License-Identifier: BSD-3-Clause */
/* Progress lines (progress.h): which lines are progress lines, what their
 * groups hold, and the step, percentage, ETA and running figure they give.
 * No I/O here: run/watch.c reads the output and prints. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progress.h"
#include "util.h"

#define RING 16                  /* samples kept for the rates */
#define DEFAULT_WINDOW_S 30.0

static const char *const role_names[] = {"-", "step", "total", "figure", "clock"};

int gpurun_progress_groups(const char *s, enum gpurun_progress_role roles[GPURUN_PROGRESS_GROUPS_MAX], int *np,
                           char *why, size_t whylen)
{
    *np = 0;
    if (!s || !*s) {
        roles[(*np)++] = GPURUN_PROGRESS_STEP;
        return 0;
    }
    if (!strcmp(s, "count"))
        return 0; /* no group: each matching line is one step */
    for (const char *p = s; *p;) {
        p += strspn(p, " \t");
        size_t n = strcspn(p, " \t");
        if (!n)
            break;
        int r = -1;
        for (int k = 0; k <= GPURUN_PROGRESS_CLOCK && r < 0; k++)
            if (strlen(role_names[k]) == n && !strncmp(p, role_names[k], n))
                r = k;
        if (r < 0) {
            snprintf(why, whylen, "'%.*s' is not one of step, total, figure, clock, - (or \"count\" alone)",
                     (int)(n > 40 ? 40 : n), p);
            return -1;
        }
        for (int i = 0; i < *np && r; i++)
            if ((int)roles[i] == r) {
                snprintf(why, whylen, "'%s' twice", role_names[r]);
                return -1;
            }
        if (*np == GPURUN_PROGRESS_GROUPS_MAX) {
            snprintf(why, whylen, "more than %d groups", GPURUN_PROGRESS_GROUPS_MAX);
            return -1;
        }
        roles[(*np)++] = (enum gpurun_progress_role)r;
        p += n;
    }
    bool named = false;
    for (int i = 0; i < *np; i++)
        named = named || roles[i];
    if (!named) {
        snprintf(why, whylen, "no group named (step, total, figure, clock; or \"count\")");
        return -1;
    }
    return 0;
}

struct sample {
    double t, step, clock;
};

struct gpurun_progress {
    regex_t re, after;
    struct gpurun_regex_budget *budget; /* the template's; NULL: none */
    struct gpurun_regex_spend re_spend, after_spend;
    bool has_after, armed;
    int group[GPURUN_PROGRESS_CLOCK + 1]; /* the regex's group of each role; 0: none */
    long long def_total;
    char *units, *name;
    double scale, window;
    char *label;
    size_t label_len;
    char part[GPURUN_PROGRESS_LINE_MAX + 1]; /* a line not yet ended */
    size_t plen;
    bool skipping; /* in a line too long to be one */
    /* what the lines said */
    bool known, has_figure;
    long long step, line_total;
    double figure, clock, seen_t;
    struct sample ring[RING];
    int n;
};

int gpurun_progress_new(const struct gpurun_progress_def *d, gpurun_progress_t **pp, gpurun_error_t *err)
{
    *pp = NULL;
    enum gpurun_progress_role roles[GPURUN_PROGRESS_GROUPS_MAX];
    int nroles;
    char why[128];
    if (gpurun_progress_groups(d->groups, roles, &nroles, why, sizeof why) < 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "progress_groups: %s", why);
    const char *costly = gpurun_regex_cost_problem(d->regex);
    if (!costly && d->after)
        costly = gpurun_regex_cost_problem(d->after);
    if (costly)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "progress: a regex that is %s", costly);
    gpurun_progress_t *p = gpurun_xcalloc(1, sizeof *p);
    int rc = regcomp(&p->re, d->regex, REG_EXTENDED);
    if (rc != 0) {
        regerror(rc, &p->re, why, sizeof why);
        free(p);
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "progress: '%s' is not a POSIX extended regex: %s", d->regex, why);
    }
    if ((int)p->re.re_nsub < nroles) {
        size_t ng = p->re.re_nsub;
        regfree(&p->re);
        free(p);
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "progress: '%s' has %zu group%s, progress_groups names %d",
                          d->regex, ng, ng == 1 ? "" : "s", nroles);
    }
    if (d->after && *d->after) {
        rc = regcomp(&p->after, d->after, REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
            regerror(rc, &p->after, why, sizeof why);
            regfree(&p->re);
            free(p);
            return gpurun_err(err, GPURUN_EXIT_CONFIG, "progress_after: '%s' is not a POSIX extended regex: %s",
                              d->after, why);
        }
        p->has_after = true;
    }
    p->budget = d->budget;
    gpurun_regex_spend_init(&p->re_spend, "key 'progress': '%s'", d->regex);
    gpurun_regex_spend_init(&p->after_spend, "key 'progress_after': '%s'", d->after ? d->after : "");
    for (int i = 0; i < nroles; i++)
        if (roles[i])
            p->group[roles[i]] = i + 1;
    p->name = gpurun_xstrdup(d->name && *d->name ? d->name : "step");
    p->def_total = d->total;
    p->units = d->units && *d->units ? gpurun_xstrdup(d->units) : NULL;
    p->scale = d->scale > 0 && isfinite(d->scale) ? d->scale : 0;
    p->window = d->window_s > 0 ? d->window_s : DEFAULT_WINDOW_S;
    p->line_total = -1;
    *pp = p;
    return 0;
}

void gpurun_progress_free(gpurun_progress_t *p)
{
    if (!p)
        return;
    regfree(&p->re);
    if (p->has_after)
        regfree(&p->after);
    free(p->units);
    free(p->name);
    free(p->label);
    free(p);
}

void gpurun_progress_set_label(gpurun_progress_t *p, const char *label)
{
    free(p->label);
    p->label = label && *label ? gpurun_xstrdup(label) : NULL;
    p->label_len = p->label ? strlen(p->label) : 0;
}

void gpurun_progress_set_total(gpurun_progress_t *p, long long total)
{
    p->def_total = total;
}

/* A group's text as a whole number >= 0, or as a finite number. */
static bool group_whole(const char *s, const regmatch_t *m, long long *out)
{
    if (m->rm_so < 0 || m->rm_eo <= m->rm_so || m->rm_eo - m->rm_so > 30)
        return false;
    char buf[32], *end;
    memcpy(buf, s + m->rm_so, (size_t)(m->rm_eo - m->rm_so));
    buf[m->rm_eo - m->rm_so] = '\0';
    if (buf[0] < '0' || buf[0] > '9')
        return false;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

static bool group_number(const char *s, const regmatch_t *m, double *out)
{
    if (m->rm_so < 0 || m->rm_eo <= m->rm_so || m->rm_eo - m->rm_so > 60)
        return false;
    char buf[64], *end;
    memcpy(buf, s + m->rm_so, (size_t)(m->rm_eo - m->rm_so));
    buf[m->rm_eo - m->rm_so] = '\0';
    if (!strchr("+-.0123456789", buf[0]))
        return false; /* "nan", "inf", hex: strtod would take them */
    errno = 0;
    double v = strtod(buf, &end);
    if (errno || *end || !isfinite(v) || strpbrk(buf, "xXpP"))
        return false;
    *out = v;
    return true;
}

static void add_sample(gpurun_progress_t *p, double t)
{
    struct sample s = {t, (double)p->step, p->clock};
    if (p->n > 0 && s.step < p->ring[p->n - 1].step)
        p->n = 0; /* the counter went back: another part of the run, rates start over */
    /* The newest sample is always the last line's; the one before it is
     * kept only once it is window/RING older than the one before that, so
     * that RING samples span the window, whatever the lines' pace. */
    if ((p->n >= 2 && t - p->ring[p->n - 2].t < p->window / RING) || (p->n >= 1 && t <= p->ring[p->n - 1].t)) {
        p->ring[p->n - 1] = s;
        return;
    }
    if (p->n == RING) {
        memmove(p->ring, p->ring + 1, sizeof p->ring[0] * (RING - 1));
        p->n--;
    }
    p->ring[p->n++] = s;
}

bool gpurun_progress_line(gpurun_progress_t *p, const char *line, size_t len, double t)
{
    if (p->label) {
        if (len < p->label_len || memcmp(line, p->label, p->label_len))
            return false;
        line += p->label_len;
        len -= p->label_len;
    }
    if (len > GPURUN_PROGRESS_LINE_MAX)
        return false;
    char buf[GPURUN_PROGRESS_LINE_MAX + 1];
    memcpy(buf, line, len);
    buf[len] = '\0';
    if (len && buf[len - 1] == '\r')
        buf[len - 1] = '\0';
    if (p->has_after && gpurun_regexec_bounded(p->budget, &p->after_spend, &p->after, buf, 0, NULL, 0) == 0) {
        p->armed = true;
        return false;
    }
    if (p->has_after && !p->armed)
        return false;
    regmatch_t m[GPURUN_PROGRESS_GROUPS_MAX + 1];
    size_t nm = p->re.re_nsub + 1 < GPURUN_PROGRESS_GROUPS_MAX + 1 ? p->re.re_nsub + 1 : GPURUN_PROGRESS_GROUPS_MAX + 1;
    if (gpurun_regexec_bounded(p->budget, &p->re_spend, &p->re, buf, nm, m, 0) != 0)
        return false;
    long long step = p->step + 1, total = -1;
    double figure = 0, clock = 0;
    int g;
    if ((g = p->group[GPURUN_PROGRESS_STEP]) && !group_whole(buf, &m[g], &step))
        return false;
    if ((g = p->group[GPURUN_PROGRESS_TOTAL]) && m[g].rm_so >= 0 && !group_whole(buf, &m[g], &total))
        return false;
    bool has_figure = (g = p->group[GPURUN_PROGRESS_FIGURE]) && m[g].rm_so >= 0;
    if (has_figure && !group_number(buf, &m[g], &figure))
        return false;
    bool has_clock = (g = p->group[GPURUN_PROGRESS_CLOCK]) && m[g].rm_so >= 0;
    if (has_clock && !group_number(buf, &m[g], &clock))
        return false;
    if ((g = p->group[GPURUN_PROGRESS_CLOCK]) && !has_clock)
        return false; /* a rate needs its clock on every line */
    p->armed = false;
    p->known = true;
    p->step = step;
    if (total >= 0)
        p->line_total = total;
    if (has_figure) {
        p->has_figure = true;
        p->figure = figure;
    }
    p->clock = clock;
    p->seen_t = t;
    add_sample(p, t);
    return true;
}

void gpurun_progress_feed(gpurun_progress_t *p, const char *data, size_t len, double t)
{
    while (len) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;
        if (!p->skipping) {
            if (p->plen + take > GPURUN_PROGRESS_LINE_MAX) {
                p->skipping = true;
                p->plen = 0;
            } else {
                memcpy(p->part + p->plen, data, take);
                p->plen += take;
            }
        }
        if (!nl)
            return;
        if (!p->skipping)
            gpurun_progress_line(p, p->part, p->plen, t);
        p->skipping = false;
        p->plen = 0;
        data += take + 1;
        len -= take + 1;
    }
}

void gpurun_progress_gap(gpurun_progress_t *p)
{
    /* What follows starts in the middle of a line: that piece is dropped. */
    p->skipping = true;
    p->plen = 0;
    p->armed = false;
}

/* The samples a rate is taken over: the newest, and the oldest at most a
 * window before it; else (lines that come seldom, or in bursts, as a
 * buffered log's) the newest one older than the newest. */
static bool rate_span(const gpurun_progress_t *p, const struct sample **a, const struct sample **b)
{
    if (p->n < 2)
        return false;
    const struct sample *last = &p->ring[p->n - 1];
    int i = 0;
    while (i < p->n - 1 && last->t - p->ring[i].t > p->window)
        i++;
    if (p->ring[i].t >= last->t)
        for (i = p->n - 2; i >= 0 && p->ring[i].t >= last->t; i--)
            ;
    if (i < 0)
        return false;
    *a = &p->ring[i];
    *b = last;
    return true;
}

void gpurun_progress_view(const gpurun_progress_t *p, double now, struct gpurun_progress_view *v)
{
    memset(v, 0, sizeof *v);
    v->total = -1;
    v->percent = -1;
    v->eta_s = -1;
    v->units = p ? p->units : NULL;
    v->name = p ? p->name : "step";
    /* Counting lines: none yet is 0 done. */
    bool counting = p && !p->group[GPURUN_PROGRESS_STEP];
    if (!p || (!p->known && !counting))
        return;
    v->known = true;
    v->step = p->step;
    v->seen_t = p->seen_t;
    v->total = p->line_total >= 0 ? p->line_total : p->def_total;
    if (v->total > 0)
        v->percent = v->step >= v->total ? 100.0 : 100.0 * (double)v->step / (double)v->total;
    const struct sample *a = NULL, *b = NULL;
    bool span = rate_span(p, &a, &b);
    double dt = span ? b->t - a->t : 0;
    double step_rate = span ? (b->step - a->step) / dt : 0;
    if (v->total >= 0 && v->step >= v->total) {
        v->eta_s = 0;
    } else if (v->total >= 0 && step_rate > 0) {
        double eta = (double)(v->total - v->step) / step_rate - (now - b->t);
        v->eta_s = eta > 0 ? eta : 0;
    }
    if (p->has_figure) {
        v->has_figure = true;
        v->figure = p->figure;
    } else if (p->scale > 0 && span) {
        double r = p->group[GPURUN_PROGRESS_CLOCK] ? (b->clock - a->clock) / dt : step_rate;
        if (r >= 0) {
            v->has_figure = true;
            v->figure = r * p->scale;
        }
    }
}

void gpurun_progress_duration(double s, char *buf, size_t size)
{
    long v = s > 0 && s < 1e9 ? (long)(s + 0.5) : 0;
    if (v < 60)
        snprintf(buf, size, "%lds", v);
    else if (v < 3600)
        snprintf(buf, size, "%ldm%02lds", v / 60, v % 60);
    else if (v < 86400)
        snprintf(buf, size, "%ldh%02ldm", v / 3600, v / 60 % 60);
    else
        snprintf(buf, size, "%ldd%02ldh", v / 86400, v / 3600 % 24);
}

/* A figure with as many digits as it deserves: 45.2, 3.04, 12345. */
static void number_text(double v, char *buf, size_t size)
{
    double a = fabs(v);
    if (a >= 100)
        snprintf(buf, size, "%.0f", v);
    else if (a >= 10)
        snprintf(buf, size, "%.1f", v);
    else if (a >= 1 || a == 0)
        snprintf(buf, size, "%.2f", v);
    else
        snprintf(buf, size, "%.3g", v);
}

size_t gpurun_progress_format(const struct gpurun_progress_view *v, const char *sep, char *buf, size_t size)
{
    if (!size)
        return 0;
    buf[0] = '\0';
    if (!v->known)
        return 0;
    size_t n = 0;
#define PUT(...)                                                                                                      \
    do {                                                                                                              \
        int w_ = snprintf(buf + n, size - n, __VA_ARGS__);                                                             \
        n = w_ < 0 ? n : n + (size_t)w_ >= size ? size - 1 : n + (size_t)w_;                                          \
    } while (0)
    PUT("%s %lld", v->name ? v->name : "step", v->step);
    if (v->total >= 0)
        PUT(" of %lld", v->total);
    if (v->percent >= 0)
        PUT(v->percent < 10 && v->percent > 0 ? " (%.1f%%)" : " (%.0f%%)", v->percent);
    if (v->eta_s >= 0) {
        char d[32];
        gpurun_progress_duration(v->eta_s, d, sizeof d);
        PUT("%sETA %s", sep, d);
    }
    if (v->has_figure) {
        char num[64];
        number_text(v->figure, num, sizeof num);
        PUT("%s%s%s%s", sep, num, v->units ? " " : "", v->units ? v->units : "");
    }
#undef PUT
    return n;
}

long long gpurun_progress_product(const char *text, size_t len, const char *regex)
{
    if (gpurun_regex_cost_problem(regex))
        return -1;
    regex_t re;
    if (regcomp(&re, regex, REG_EXTENDED) != 0)
        return -1;
    long long prod = -1;
    bool bad = re.re_nsub < 1;
    for (const char *line = text; !bad && line < text + len;) {
        const char *nl = memchr(line, '\n', (size_t)(text + len - line));
        size_t ll = nl ? (size_t)(nl - line) : (size_t)(text + len - line);
        char buf[GPURUN_PROGRESS_LINE_MAX + 1];
        if (ll <= GPURUN_PROGRESS_LINE_MAX) {
            memcpy(buf, line, ll);
            buf[ll] = '\0';
            regmatch_t m[2];
            long long v;
            if (regexec(&re, buf, 2, m, 0) == 0) {
                if (!group_whole(buf, &m[1], &v) || (prod > 0 && v > 0 && prod > (1LL << 62) / v))
                    bad = true;
                else
                    prod = prod < 0 ? v : prod * v;
            }
        }
        line += ll + 1;
    }
    regfree(&re);
    return bad ? -1 : prod;
}
