/* SPDX-License-Identifier: BSD-3-Clause */
/* HPL's NB and P x Q in a copy of its input (hpldat.h). */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "confparse.h"
#include "hpldat.h"
#include "util.h"

/* A whole number from 1 to max written with digits only (no sign, no
 * blank, no exponent); -1 otherwise. */
static long whole(const char *s, size_t n, long max)
{
    if (n == 0 || n > 9)
        return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v >= 1 && v <= max ? v : -1;
}

void gpurun_hpl_auto_grid(long n, long *p, long *q)
{
    long best = 1;
    for (long d = 1; d <= n / d; d++)
        if (n % d == 0)
            best = d;
    *p = best;
    *q = n > 0 ? n / best : 1;
}

int gpurun_hpl_edit_make(const char *nb, const char *nb_origin, const char *grid, const char *grid_origin,
                         long nranks, struct gpurun_hpl_edit *e, gpurun_error_t *err)
{
    struct gpurun_conf_shown a;
    memset(e, 0, sizeof *e);
    if (nb && *nb) {
        e->nb = whole(nb, strlen(nb), GPURUN_HPL_NB_MAX);
        if (e->nb < 0)
            return gpurun_err(err, GPURUN_EXIT_CONFIG,
                              "%s%skey 'params.%s': '%s' is not a block size: a whole number from 1 to %ld (or empty: "
                              "the input's own)",
                              nb_origin ? nb_origin : "", nb_origin ? ": " : "", GPURUN_HPL_NB_PARAM,
                              gpurun_conf_shown(&a, nb), GPURUN_HPL_NB_MAX);
        e->active = true;
    }
    if (!grid || !*grid)
        return 0;
    const char *go = grid_origin ? grid_origin : "", *gs = grid_origin ? ": " : "";
    long n = nranks > 0 ? nranks : 1;
    if (!strcmp(grid, "auto")) {
        gpurun_hpl_auto_grid(n, &e->p, &e->q);
    } else if (!strcmp(grid, "flat")) {
        e->p = 1;
        e->q = n;
    } else {
        const char *x = strpbrk(grid, "xX");
        e->p = x ? whole(grid, (size_t)(x - grid), GPURUN_HPL_DIM_MAX) : -1;
        e->q = x ? whole(x + 1, strlen(x + 1), GPURUN_HPL_DIM_MAX) : -1;
        if (e->p < 0 || e->q < 0)
            return gpurun_err(err, GPURUN_EXIT_CONFIG,
                              "%s%skey 'params.%s': '%s' is not a process grid: PxQ (P and Q whole numbers from 1 to "
                              "%ld, as 2x4), auto (the most square P <= Q for the ranks) or flat (1 x the ranks)",
                              go, gs, GPURUN_HPL_GRID_PARAM, gpurun_conf_shown(&a, grid), GPURUN_HPL_DIM_MAX);
        if (nranks > 0 && e->p * e->q != nranks)
            return gpurun_err(err, GPURUN_EXIT_CONFIG,
                              "%s%skey 'params.%s': '%s': P x Q = %ld but the layout has %ld rank%s (HPL runs one "
                              "process per grid cell; grid = \"auto\" fits any count)",
                              go, gs, GPURUN_HPL_GRID_PARAM, gpurun_conf_shown(&a, grid), e->p * e->q, nranks,
                              nranks == 1 ? "" : "s");
    }
    snprintf(e->grid, sizeof e->grid, "%.31s", grid);
    e->active = true;
    return 0;
}

/* ---- the rewrite --------------------------------------------------------- */

#define HPL_LINES 12 /* the lines read here: 1 to 12 */

struct line {
    size_t start, end; /* [start, end) without its '\n' */
};

/* Line `no` (1-based) of HPL.dat and what its label must hold. */
struct role {
    int no;
    const char *what;  /* in messages */
    const char *label; /* a word of its label ("grid": in any case) */
    const char *like;  /* the line as HPL's own sample writes it */
};
static const struct role nbs_count = {7, "count of block sizes", "NB", "1            # of NBs"};
static const struct role nbs = {8, "block sizes", "NB", "128          NBs"};
static const struct role grids_count = {10, "count of process grids", "grid", "1            # of process grids (P x Q)"};
static const struct role ps = {11, "Ps", "P", "1            Ps"};
static const struct role qs = {12, "Qs", "Q", "2            Qs"};

/* The first `want` blank-separated words of the line, each a whole number
 * (the first into *first), then its label: where it starts (*label_at,
 * from the line's start).  -1 when the line is not so. */
static int values(const char *s, size_t n, size_t want, long *first, size_t *label_at)
{
    size_t i = 0;
    for (size_t k = 0; k < want; k++) {
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        size_t w = i;
        while (i < n && s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            i++;
        long v = whole(s + w, i - w, 999999999L);
        if (v < 0)
            return -1;
        if (k == 0)
            *first = v;
    }
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    *label_at = i;
    return 0;
}

static bool has_word(const char *s, size_t n, const char *word)
{
    size_t wl = strlen(word);
    bool icase = wl > 2; /* "grid", "Grid"; but NB, P and Q as HPL writes them */
    for (size_t i = 0; i + wl <= n; i++)
        if (icase ? !strncasecmp(s + i, word, wl) : !strncmp(s + i, word, wl))
            return true;
    return false;
}

/* Checks line r of the text (its `want` values and label); *count: its
 * first value, *label_at: where its label starts. */
static int check_line(const char *text, const struct line *ln, const struct role *r, size_t want, const char *label,
                      long *count, size_t *label_at, gpurun_error_t *err)
{
    const struct line *l = &ln[r->no - 1];
    const char *s = text + l->start;
    size_t n = l->end - l->start;
    struct gpurun_conf_shown a;
    if (values(s, n, want, count, label_at) < 0 || !has_word(s + *label_at, n - *label_at, r->label))
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s:%d: not HPL.dat's line of the %s (HPL reads its input by line number: line %d holds "
                          "%zu whole number%s then a label naming %s, as '%s'): '%s'",
                          label, r->no, r->what, r->no, want, want == 1 ? "" : "s", r->label, r->like,
                          gpurun_conf_shown_n(&a, s, n));
    return 0;
}

/* The line with its values replaced by `v`, its label where it was. */
static void put_line(struct gpurun_strbuf *o, const char *text, const struct line *l, size_t label_at, long v)
{
    char num[24];
    int w = snprintf(num, sizeof num, "%ld", v);
    gpurun_strbuf_add(o, num, (size_t)w);
    for (size_t c = (size_t)w; c < label_at || c == (size_t)w; c++)
        gpurun_strbuf_add(o, " ", 1);
    gpurun_strbuf_add(o, text + l->start + label_at, l->end - l->start - label_at);
}

int gpurun_hpl_rewrite(const char *text, size_t len, const struct gpurun_hpl_edit *e, const char *label,
                       char **outp, size_t *outlen, gpurun_error_t *err)
{
    *outp = NULL;
    *outlen = 0;
    if (len > GPURUN_HPLDAT_MAX)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: %zu bytes, more than the %d an HPL input may have here",
                          label, len, GPURUN_HPLDAT_MAX);
    struct line ln[HPL_LINES];
    size_t nl = 0, at = 0;
    while (nl < HPL_LINES && at < len) {
        const char *nlp = memchr(text + at, '\n', len - at);
        size_t end = nlp ? (size_t)(nlp - text) : len;
        ln[nl++] = (struct line){at, end};
        at = nlp ? end + 1 : len;
    }
    if (nl < HPL_LINES)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: %zu line%s: not an HPL.dat (HPL reads NB on lines 7 and 8, P x Q on lines 10 to 12)",
                          label, nl, nl == 1 ? "" : "s");
    if (memchr(text, '\0', len))
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: holds a NUL byte: not an HPL.dat", label);
    long newv[HPL_LINES + 1] = {0};
    size_t label_at[HPL_LINES + 1] = {0};
    bool edit[HPL_LINES + 1] = {false};
    long count, dummy;
    if (e->nb > 0) {
        if (check_line(text, ln, &nbs_count, 1, label, &count, &label_at[7], err) < 0)
            return -1;
        if (count > GPURUN_HPL_LIST_MAX)
            return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s:7: %ld block sizes: HPL reads 1 to %d", label, count,
                              GPURUN_HPL_LIST_MAX);
        if (check_line(text, ln, &nbs, (size_t)count, label, &dummy, &label_at[8], err) < 0)
            return -1;
        newv[7] = 1, newv[8] = e->nb;
        edit[7] = edit[8] = true;
    }
    if (e->p > 0) {
        if (check_line(text, ln, &grids_count, 1, label, &count, &label_at[10], err) < 0)
            return -1;
        if (count > GPURUN_HPL_LIST_MAX)
            return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s:10: %ld process grids: HPL reads 1 to %d", label, count,
                              GPURUN_HPL_LIST_MAX);
        if (check_line(text, ln, &ps, (size_t)count, label, &dummy, &label_at[11], err) < 0 ||
            check_line(text, ln, &qs, (size_t)count, label, &dummy, &label_at[12], err) < 0)
            return -1;
        newv[10] = 1, newv[11] = e->p, newv[12] = e->q;
        edit[10] = edit[11] = edit[12] = true;
    }
    struct gpurun_strbuf o = {0};
    size_t from = 0; /* copied up to here */
    for (int no = 1; no <= HPL_LINES; no++) {
        if (!edit[no])
            continue;
        const struct line *l = &ln[no - 1];
        gpurun_strbuf_add(&o, text + from, l->start - from);
        put_line(&o, text, l, label_at[no], newv[no]);
        from = l->end;
    }
    gpurun_strbuf_add(&o, text + from, len - from);
    *outlen = o.len;
    *outp = o.s ? o.s : gpurun_xstrdup("");
    return 0;
}

/* ---- from the job ---------------------------------------------------------- */

/* A param's value, the job's over the template's default, and where it
 * was set. */
static const char *param(const gpurun_template_t *tpl, const gpurun_job_t *job, const char *name,
                         const char **origin)
{
    const char *v = gpurun_kvlist_get(&job->params, name);
    if (v) {
        char *dotted = gpurun_xasprintf("params.%s", name);
        *origin = gpurun_job_origin(job, dotted);
        free(dotted);
        return v;
    }
    *origin = tpl->path;
    return gpurun_kvlist_get(&tpl->defaults, name);
}

int gpurun_hpl_edit_for_job(const gpurun_template_t *tpl, const gpurun_job_t *job, long nranks,
                            struct gpurun_hpl_edit *e, gpurun_error_t *err)
{
    memset(e, 0, sizeof *e);
    if (!tpl || !tpl->hpl_dat)
        return 0;
    const char *nbo, *go;
    const char *nb = param(tpl, job, GPURUN_HPL_NB_PARAM, &nbo), *grid = param(tpl, job, GPURUN_HPL_GRID_PARAM, &go);
    return gpurun_hpl_edit_make(nb, nbo, grid, go, nranks, e, err);
}

int gpurun_hpl_check_from(const gpurun_template_t *tpl, const struct gpurun_hpl_edit *e, gpurun_lookup_fn lookup,
                          void *ctx, const char *job_dir, gpurun_error_t *err)
{
    if (!e->active || !tpl || !tpl->hpl_dat_from)
        return 0;
    char *what = gpurun_xasprintf("%s: key 'hpl_dat_from'", tpl->path);
    char *from = NULL;
    int rc = gpurun_expand(tpl->hpl_dat_from, lookup, ctx, what, &from, err);
    free(what);
    if (rc < 0)
        return -1;
    char *path = from[0] == '/' || !job_dir ? gpurun_xstrdup(from) : gpurun_xasprintf("%s/%s", job_dir, from);
    free(from);
    char *text = NULL, *out = NULL;
    size_t len = 0, outlen = 0;
    rc = gpurun_read_file(path, "HPL input", GPURUN_HPLDAT_MAX, &text, &len, err);
    if (rc == 0)
        rc = gpurun_hpl_rewrite(text, len, e, path, &out, &outlen, err);
    if (rc < 0) {
        char *why = gpurun_xstrdup(err->text);
        gpurun_err(err, GPURUN_EXIT_CONFIG, "%s (params %s and %s set NB and P x Q in its copy %s); nothing was "
                   "started", why, GPURUN_HPL_NB_PARAM, GPURUN_HPL_GRID_PARAM, tpl->hpl_dat);
        free(why);
    }
    free(text);
    free(out);
    free(path);
    return rc < 0 ? -1 : 0;
}

void gpurun_hpl_edit_text(const struct gpurun_hpl_edit *e, char *buf, size_t size)
{
    int n = 0;
    buf[0] = '\0';
    if (e->nb > 0)
        n = snprintf(buf, size, "NB %ld", e->nb);
    if (e->p > 0 && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "%sP x Q %ld x %ld (grid %s)", n ? ", " : "", e->p, e->q, e->grid);
}
