/* SPDX-License-Identifier: BSD-3-Clause */
/* Figures of merit (fom.h): files read line by line, every fom that reads a
 * file fed each line once; the template's sanity text; reference bands. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "confparse.h"
#include "fom.h"
#include "record.h"
#include "runfolder.h"
#include "util.h"

#define LINE_KEEP GPURUN_REGEX_LINE_MAX /* bytes of a line looked at; the rest is skipped */
#define NUMBER_MAX 64         /* characters of a number */
#define NOTE_MAX 480

/* ---- reading a file line by line --------------------------------------- */

struct lines {
    FILE *f;
    char *buf;      /* the line, tabs expanded, NUL-terminated */
    size_t len, cap;
    long no;        /* line number, from 1 */
    bool complete;  /* ended by a newline (not cut short at the end of the file) */
    const char *label; /* a host's output file: only the lines that start with it (rank 0's), without it */
};

/* Only regular files: a FIFO or a device would hang or never end. */
static int lines_open(struct lines *l, const char *path, gpurun_error_t *err)
{
    memset(l, 0, sizeof *l);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "cannot read %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "cannot read %s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "cannot read %s: %s", path,
                          S_ISDIR(st.st_mode) ? "a folder, not a file" : "not a regular file");
    }
    l->f = fdopen(fd, "r");
    if (!l->f) {
        int e = errno;
        close(fd);
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "cannot read %s: %s", path, strerror(e));
    }
    l->label = gpurun_rank0_label(path);
    return 0;
}

static void lines_close(struct lines *l)
{
    if (l->f)
        fclose(l->f);
    free(l->buf);
    memset(l, 0, sizeof *l);
}

static void put(struct lines *l, char c)
{
    if (l->len + 2 > l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->buf = gpurun_xrealloc(l->buf, l->cap);
    }
    l->buf[l->len++] = c;
}

/* The next line, or false at the end of the file (or a read error: what
 * was read stands).  Tabs become spaces to the next multiple of 8, so that
 * columns are where a terminal shows them; a NUL becomes a character that is
 * neither blank nor part of a number; a trailing CR goes. */
static bool lines_next(struct lines *l)
{
    int c;
    bool any = false, other = false;
    size_t raw = 0, ll = l->label ? strlen(l->label) : 0;
again:
    l->len = 0;
    l->complete = false;
    while ((c = getc_unlocked(l->f)) != EOF) {
        any = true;
        if (c == '\n') {
            l->complete = true;
            break;
        }
        if (raw < ll) { /* the label of the rank's lines in its host's file */
            other |= c != l->label[raw++];
            continue;
        }
        if (l->len >= LINE_KEEP)
            continue;
        if (c == '\t') {
            do
                put(l, ' ');
            while (l->len % 8 && l->len < LINE_KEEP);
        } else {
            put(l, c ? (char)c : '\x7f');
        }
    }
    if (!any)
        return false;
    if (other || raw < ll) { /* another rank's line */
        l->no++;
        any = other = false;
        raw = 0;
        goto again;
    }
    if (l->len && l->buf[l->len - 1] == '\r')
        l->len--;
    put(l, '\0');
    l->len--;
    l->no++;
    return true;
}

/* ---- numbers ----------------------------------------------------------- */

/* The number s[0..n) holds in full, or why it is not one. */
static const char *parse_number(const char *s, size_t n, double *out)
{
    while (n && isspace((unsigned char)*s))
        s++, n--;
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    if (n == 0)
        return "is empty, not a number";
    if (n > NUMBER_MAX)
        return "is too long for a number";
    char buf[NUMBER_MAX + 1];
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (strpbrk(buf, "xX"))
        return "is not a decimal number";
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (end == buf || *end)
        return "is not a number";
    if (errno == ERANGE)
        return "is out of range for a double";
    if (!isfinite(v))
        return "is not a finite number";
    *out = v;
    return NULL;
}

/* ---- one fom's reading ------------------------------------------------- */

/* A compiled pattern: kept for the process (below), or compiled for one
 * reading past that cap. */
struct pattern {
    const regex_t *re; /* NULL: none */
    regex_t *own;
    struct gpurun_regex_spend spend; /* its time matching in this reading */
};

struct scan {
    const struct gpurun_fom *fom;
    struct gpurun_fom_values *out;
    struct pattern re, row, after;
    struct gpurun_regex_budget *budget; /* the template's */
    char *header; /* expanded */
    bool armed;   /* an `after` line came since the last value (always, without after) */
    bool pending; /* the last non-blank line was a header line */
    size_t hs, he; /* the heading's columns on that line */
    size_t hright; /* words to the right of it there */
    size_t cap;       /* of out->values */
    char note[NOTE_MAX];
    size_t nskipped;
};

static void skipped(struct scan *s, long line, const char *text, size_t n, const char *why)
{
    if (s->nskipped++ == 0) {
        char shown[NUMBER_MAX + 8];
        size_t k = 0;
        for (size_t i = 0; i < n && k < NUMBER_MAX; i++)
            shown[k++] = isprint((unsigned char)text[i]) ? text[i] : '?';
        shown[k] = '\0';
        snprintf(s->note, sizeof s->note, "line %ld: '%s' %s, skipped", line, shown, why);
    }
}

static void add_value(struct scan *s, double v)
{
    if (s->out->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->out->values = gpurun_xrealloc(s->out->values, s->cap * sizeof *s->out->values);
    }
    s->out->values[s->out->n++] = v;
}

/* A value's text was found on the line: take it, or say why not.  On a line
 * cut short at the end of the file it is never taken: the number may be cut
 * too. */
static void take(struct scan *s, const struct lines *l, const char *text, size_t n)
{
    double v;
    const char *why = parse_number(text, n, &v);
    if (!l->complete)
        skipped(s, l->no, text, n, "is on the last line, which has no newline (cut short?)");
    else if (why)
        skipped(s, l->no, text, n, why);
    else
        add_value(s, v);
    if (s->after.re)
        s->armed = false;
}

static bool blank(char c)
{
    return c == ' ';
}

/* Blank, or a rule of ----- or =====: what tables put between a header
 * and its rows. */
static bool rule_line(const char *p)
{
    for (; *p; p++)
        if (!strchr(" -=_+*|:", *p))
            return false;
    return true;
}

/* The heading on the line as a whole word (or words): its columns. */
static bool find_header(const char *line, const char *header, size_t *hs, size_t *he)
{
    size_t hn = strlen(header);
    if (!hn)
        return false;
    for (const char *p = line; (p = strstr(p, header)); p++) {
        bool before = p == line || blank(p[-1]);
        bool after = p[hn] == '\0' || blank(p[hn]);
        if (before && after) {
            *hs = (size_t)(p - line);
            *he = *hs + hn;
            return true;
        }
    }
    return false;
}

static size_t count_words(const char *p)
{
    size_t n = 0;
    while (*p) {
        while (blank(*p))
            p++;
        if (!*p)
            break;
        n++;
        while (*p && !blank(*p))
            p++;
    }
    return n;
}

/* The row under a header: the word printed under the heading (the one that
 * shares the most columns with it), else, when none does, the word as far
 * from the right as the heading is on the header line. */
static void read_row(struct scan *s, const struct lines *l, size_t from)
{
    struct {
        size_t s, e;
    } w[64];
    size_t n = 0;
    const char *line = l->buf;
    for (size_t i = from; line[i] && n < sizeof w / sizeof *w;) {
        while (blank(line[i]))
            i++;
        if (!line[i])
            break;
        w[n].s = i;
        while (line[i] && !blank(line[i]))
            i++;
        w[n++].e = i;
    }
    size_t best = 0, bestov = 0;
    bool tie = false;
    for (size_t i = 0; i < n; i++) {
        size_t lo = w[i].s > s->hs ? w[i].s : s->hs, hi = w[i].e < s->he ? w[i].e : s->he;
        size_t ov = hi > lo ? hi - lo : 0;
        if (ov > bestov) {
            best = i;
            bestov = ov;
            tie = false;
        } else if (ov && ov == bestov) {
            tie = true;
        }
    }
    if (bestov && !tie) {
        take(s, l, line + w[best].s, w[best].e - w[best].s);
    } else if (tie) {
        skipped(s, l->no, s->header, strlen(s->header), "stands over two words of its row equally");
        if (s->after.re)
            s->armed = false;
    } else if (n > s->hright) {
        size_t i = n - 1 - s->hright;
        take(s, l, line + w[i].s, w[i].e - w[i].s);
    } else {
        skipped(s, l->no, s->header, strlen(s->header), "has no word under it in its row");
        if (s->after.re)
            s->armed = false;
    }
}

static int match(struct scan *s, struct pattern *p, const char *text, size_t nm, regmatch_t *m, int flags)
{
    return gpurun_regexec_bounded(s->budget, &p->spend, p->re, text, nm, m, flags);
}

static void scan_line(struct scan *s, const struct lines *l)
{
    const char *line = l->buf;
    regmatch_t m[2];
    if (s->after.re && !s->armed) {
        if (match(s, &s->after, line, 0, NULL, 0) == 0)
            s->armed = true;
        s->pending = false;
        return;
    }
    if (s->header) {
        if (s->pending) {
            /* Every row of the table, not only the first: HPL run without
             * its residual check prints one header over all its tests. */
            if (match(s, &s->row, line, 1, m, 0) == 0) {
                read_row(s, l, (size_t)m[0].rm_eo);
                return;
            }
            if (rule_line(line))
                return;
            s->pending = false;
        }
        size_t hs, he;
        if (find_header(line, s->header, &hs, &he)) {
            s->pending = true;
            s->hs = hs;
            s->he = he;
            s->hright = count_words(line + he);
        }
        return;
    }
    /* Every match on the line, left to right. */
    int flags = 0;
    for (const char *p = line; *p || p == line;) {
        if (match(s, &s->re, p, 2, m, flags) != 0)
            break;
        if (m[1].rm_so >= 0)
            take(s, l, p + m[1].rm_so, (size_t)(m[1].rm_eo - m[1].rm_so));
        if (s->after.re && !s->armed)
            break;
        p += m[0].rm_eo > 0 ? m[0].rm_eo : 1;
        flags = REG_NOTBOL;
        if (p > line + l->len)
            break;
    }
}

/* ---- reading every fom ------------------------------------------------- */

static char *expand(const char *in, gpurun_lookup_fn lookup, void *ctx, const char *what, gpurun_error_t *err)
{
    char *out;
    if (!in)
        return NULL;
    if (gpurun_expand(in, lookup, ctx, what, &out, err) < 0)
        return NULL;
    return out;
}

/* Compiled patterns, kept until the process ends: `collect` reads a
 * template's figures from many files with the same patterns, and compiling
 * one costs more than scanning a log with it. */
#define PATTERNS_KEPT 128
static struct {
    char *text;
    regex_t re;
} kept[PATTERNS_KEPT];
static size_t nkept;

static void pattern_release(struct pattern *p)
{
    if (p->own) {
        regfree(p->own);
        free(p->own);
    }
    memset(p, 0, sizeof *p);
}

static int compile(struct pattern *p, const char *value, const char *fom, const char *key, bool group,
                   gpurun_error_t *err)
{
    struct gpurun_conf_shown a;
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < nkept && !p->re; i++)
        if (!strcmp(kept[i].text, value))
            p->re = &kept[i].re;
    if (!p->re) {
        const char *costly = gpurun_regex_cost_problem(value);
        if (costly)
            return gpurun_err(err, GPURUN_EXIT_CONFIG, "fom %s: %s '%s' is %s", fom, key,
                              gpurun_conf_shown(&a, value), costly);
        regex_t *re = nkept < PATTERNS_KEPT ? &kept[nkept].re : (p->own = gpurun_xmalloc(sizeof *p->own));
        int rc = regcomp(re, value, REG_EXTENDED);
        if (rc != 0) {
            char why[256];
            regerror(rc, re, why, sizeof why);
            free(p->own);
            p->own = NULL;
            return gpurun_err(err, GPURUN_EXIT_CONFIG, "fom %s: %s '%s' is not a POSIX extended regex: %s", fom,
                              key, gpurun_conf_shown(&a, value), why);
        }
        if (!p->own)
            kept[nkept++].text = gpurun_xstrdup(value);
        p->re = re;
    }
    gpurun_regex_spend_init(&p->spend, "key 'fom.%s.%s': '%s'", fom, key, value);
    if (group && p->re->re_nsub < 1) {
        pattern_release(p);
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "fom %s: %s '%s' has no group for the value", fom, key,
                          gpurun_conf_shown(&a, value));
    }
    return 0;
}

static void scan_release(struct scan *s)
{
    pattern_release(&s->re);
    pattern_release(&s->row);
    pattern_release(&s->after);
    free(s->header);
    memset(s, 0, sizeof *s);
}

/* Ready fom `f` to read into `out` (whose file is set). */
static int scan_init(struct scan *s, const struct gpurun_fom *f, struct gpurun_fom_values *out,
                     struct gpurun_regex_budget *budget, gpurun_lookup_fn lookup, void *ctx, gpurun_error_t *err)
{
    memset(s, 0, sizeof *s);
    s->fom = f;
    s->out = out;
    s->budget = budget;
    char what[300];
    int rc = 0;
    char *v;
    snprintf(what, sizeof what, "fom %s: units", f->name);
    if (!(out->units = expand(f->units ? f->units : "", lookup, ctx, what, err)))
        return -1;
    if (f->regex) {
        snprintf(what, sizeof what, "fom %s: regex", f->name);
        if (!(v = expand(f->regex, lookup, ctx, what, err)))
            return -1;
        rc = compile(&s->re, v, f->name, "regex", true, err);
        free(v);
    } else if (f->header) {
        snprintf(what, sizeof what, "fom %s: header", f->name);
        if (!(s->header = expand(f->header, lookup, ctx, what, err)))
            return -1;
        snprintf(what, sizeof what, "fom %s: row", f->name);
        if (!(v = expand(f->row ? f->row : "", lookup, ctx, what, err)))
            return -1;
        rc = compile(&s->row, v, f->name, "row", false, err);
        free(v);
    } else {
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "fom %s: neither 'regex' nor 'header'", f->name);
    }
    if (rc == 0 && f->after) {
        snprintf(what, sizeof what, "fom %s: after", f->name);
        if (!(v = expand(f->after, lookup, ctx, what, err)))
            return -1;
        rc = compile(&s->after, v, f->name, "after", false, err);
        free(v);
    }
    s->armed = !s->after.re;
    return rc;
}

/* Feed every line of `path` to the scans. */
static int scan_file(const char *path, struct scan *const *scans, size_t n, gpurun_error_t *err)
{
    struct lines l;
    if (lines_open(&l, path, err) < 0)
        return -1;
    while (lines_next(&l))
        for (size_t i = 0; i < n; i++)
            scan_line(scans[i], &l);
    lines_close(&l);
    return 0;
}

static void scan_finish(struct scan *s)
{
    if (s->nskipped) {
        size_t len = strlen(s->note);
        if (s->nskipped > 1)
            snprintf(s->note + len, sizeof s->note - len, " (and %zu more)", s->nskipped - 1);
        s->out->note = gpurun_xstrdup(s->note);
    }
}

static char *join_path(const char *dir, const char *file)
{
    if (file[0] == '/' || !dir || !*dir)
        return gpurun_xstrdup(file);
    return gpurun_xasprintf("%s/%s", dir, file);
}

static const char *defaults_lookup(const char *name, void *ctx)
{
    return gpurun_kvlist_lookup(name, ctx);
}

/* The file fom `f` reads in a run folder. */
static char *fom_path(const struct gpurun_fom *f, const char *dir, gpurun_lookup_fn lookup, void *ctx,
                      gpurun_error_t *err)
{
    const char *label;
    if (!f->file)
        return gpurun_rank0_output(dir, &label);
    char what[300];
    snprintf(what, sizeof what, "fom %s: file", f->name);
    char *file = expand(f->file, lookup, ctx, what, err);
    if (!file)
        return NULL;
    char *path = join_path(dir, file);
    free(file);
    return path;
}

int gpurun_fom_read(const gpurun_template_t *t, const char *dir, gpurun_lookup_fn lookup, void *ctx,
                    char *const *files, gpurun_foms_t *out, gpurun_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (!lookup) {
        lookup = defaults_lookup;
        ctx = (void *)&t->defaults;
    }
    size_t nfiles = 0;
    while (files && files[nfiles])
        nfiles++;
    size_t nf = t->nfoms;
    out->n = files ? nfiles * nf : nf;
    out->f = gpurun_xcalloc(out->n ? out->n : 1, sizeof *out->f);
    struct scan *scans = gpurun_xcalloc(out->n ? out->n : 1, sizeof *scans);
    struct scan **group = gpurun_xcalloc(out->n ? out->n : 1, sizeof *group);
    bool *done = gpurun_xcalloc(out->n ? out->n : 1, sizeof *done);
    int rc = 0;

    for (size_t i = 0; i < out->n && rc == 0; i++) {
        const struct gpurun_fom *f = &t->foms[i % (nf ? nf : 1)];
        struct gpurun_fom_values *v = &out->f[i];
        v->name = gpurun_xstrdup(f->name);
        v->better = gpurun_xstrdup(f->better ? f->better : "higher");
        v->kind = f->kind ? gpurun_xstrdup(f->kind) : NULL;
        v->optional = f->optional;
        v->file = files ? gpurun_xstrdup(files[i / nf]) : fom_path(f, dir, lookup, ctx, err);
        if (!v->file || scan_init(&scans[i], f, v, t->regex_budget, lookup, ctx, err) < 0)
            rc = -1;
    }
    /* Each file once, with every fom that reads it. */
    for (size_t i = 0; i < out->n && rc == 0; i++) {
        if (done[i])
            continue;
        size_t n = 0;
        for (size_t j = i; j < out->n; j++)
            if (!done[j] && strcmp(out->f[j].file, out->f[i].file) == 0) {
                group[n++] = &scans[j];
                done[j] = true;
            }
        rc = scan_file(out->f[i].file, group, n, err);
    }
    for (size_t i = 0; i < out->n; i++) {
        if (rc == 0)
            scan_finish(&scans[i]);
        scan_release(&scans[i]);
    }
    free(scans);
    free(group);
    free(done);
    if (rc < 0)
        gpurun_foms_free(out);
    return rc;
}

char *gpurun_version_read(const gpurun_template_t *t, const char *dir, gpurun_lookup_fn lookup, void *ctx)
{
    if (!t || !t->version)
        return NULL;
    if (!lookup) {
        lookup = defaults_lookup;
        ctx = (void *)&t->defaults;
    }
    gpurun_error_t err;
    char *path = NULL, *re_text = expand(t->version, lookup, ctx, "version", &err);
    if (!re_text)
        return NULL;
    if (t->version_file) {
        char *file = expand(t->version_file, lookup, ctx, "version_file", &err);
        if (file)
            path = join_path(dir, file);
        free(file);
    } else {
        const char *label;
        path = gpurun_rank0_output(dir, &label);
    }
    regex_t re;
    bool compiled = !gpurun_regex_cost_problem(re_text) && regcomp(&re, re_text, REG_EXTENDED) == 0;
    struct gpurun_regex_spend spend;
    gpurun_regex_spend_init(&spend, "key 'version': '%s'", re_text);
    char *found = NULL;
    struct lines l;
    if (compiled && re.re_nsub >= 1 && path && lines_open(&l, path, &err) == 0) {
        while (!found && l.no < GPURUN_VERSION_LINES && lines_next(&l)) {
            regmatch_t m[2];
            if (gpurun_regexec_bounded(t->regex_budget, &spend, &re, l.buf, 2, m, 0) != 0 || m[1].rm_so < 0)
                continue;
            size_t n = (size_t)(m[1].rm_eo - m[1].rm_so), k = 0;
            found = gpurun_xcalloc(GPURUN_VERSION_MAX + 1, 1);
            for (size_t i = 0; i < n && k < GPURUN_VERSION_MAX; i++) {
                unsigned char c = (unsigned char)l.buf[m[1].rm_so + (regoff_t)i];
                if (c >= 0x20 && c != 0x7f)
                    found[k++] = (char)c;
            }
            if (k == 0) {
                free(found);
                found = NULL;
            }
        }
        lines_close(&l);
    }
    if (compiled)
        regfree(&re);
    free(re_text);
    free(path);
    return found;
}

void gpurun_foms_free(gpurun_foms_t *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++) {
        free(f->f[i].name);
        free(f->f[i].units);
        free(f->f[i].better);
        free(f->f[i].kind);
        free(f->f[i].file);
        free(f->f[i].values);
        free(f->f[i].note);
    }
    free(f->f);
    f->f = NULL;
    f->n = 0;
}

json_t *gpurun_foms_json(const gpurun_foms_t *f)
{
    json_t *o = json_object();
    for (size_t i = 0; f && i < f->n; i++) {
        const struct gpurun_fom_values *v = &f->f[i];
        json_t *vals = json_array();
        for (size_t k = 0; k < v->n; k++)
            json_array_append_new(vals, json_real(v->values[k]));
        json_t *e = json_pack("{s:o, s:o, s:s, s:s, s:s}", GPURUN_REC_FOM_VALUE,
                              v->n ? json_real(v->values[v->n - 1]) : json_null(), GPURUN_REC_FOM_VALUES, vals,
                              GPURUN_REC_FOM_UNITS, v->units ? v->units : "", GPURUN_REC_FOM_BETTER,
                              v->better ? v->better : "higher", GPURUN_REC_FOM_FILE, v->file ? v->file : "");
        if (v->kind)
            json_object_set_new(e, GPURUN_REC_FOM_KIND, json_string(v->kind));
        if (v->note)
            json_object_set_new(e, "note", json_string(v->note));
        if (v->optional)
            json_object_set_new(e, "optional", json_true());
        json_object_set_new(o, v->name, e);
    }
    return o;
}

/* ---- sanity ------------------------------------------------------------ */

/* Whether a sanity or restart text is on the line: anywhere in it, or, for
 * a text written with a leading ^, at its start.  LAMMPS echoes its input
 * into its log, comments too: an echoed line that mentions "ERROR: " does
 * not start with it, the error message itself does. */
static bool text_on_line(const char *line, const char *text)
{
    if (text[0] == '^')
        return strncmp(line, text + 1, strlen(text + 1)) == 0;
    return strstr(line, text) != NULL;
}

/* What one file says: *found when one of the template's sanity forms
 * appears in a line of it, *bad (the line number) when a failure text
 * does, with which in *badtext; -1 when the file cannot be read.  Only
 * what comes after the file's last `restart` line counts: GROMACS appends
 * a continuation (mdrun -cpi) to md.log after the earlier part's last
 * checkpoint, and the earlier part may have been stopped by a signal. */
static int file_scan(const gpurun_template_t *t, const char *path, bool *found, long *bad,
                     const char **badtext)
{
    struct lines l;
    gpurun_error_t err;
    if (lines_open(&l, path, &err) < 0)
        return -1;
    bool seen = false; /* this file's own, reset by a restart line */
    long failed = 0;
    const char *which = NULL;
    /* Without restart texts the first failure, or the sanity text where no
     * failure text is looked for, settles it. */
    while ((t->nrestart || (!failed && (!(*found || seen) || t->nfailure))) && lines_next(&l)) {
        for (size_t i = 0; i < t->nrestart; i++)
            if (text_on_line(l.buf, t->restart[i])) {
                seen = false;
                failed = 0;
                which = NULL;
                break;
            }
        for (size_t i = 0; i < t->nsanity && !seen; i++)
            seen = text_on_line(l.buf, t->sanity_forms[i]);
        for (size_t i = 0; i < t->nfailure && !failed; i++)
            if (gpurun_regexec_bounded(t->regex_budget, &t->failure_spend[i], &t->failure_re[i], l.buf, 0, NULL, 0) ==
                0) {
                failed = l.no;
                which = t->failure[i];
            }
    }
    lines_close(&l);
    *found = *found || seen;
    if (failed && !*bad) {
        *bad = failed;
        *badtext = which;
    }
    return 0;
}

/* "'a'" or "any of 'a', 'b'" into buf. */
static void forms_text(const gpurun_template_t *t, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "%s", t->nsanity > 1 ? "any of " : "");
    for (size_t i = 0; i < t->nsanity && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s'%s'", i ? ", " : "", t->sanity_forms[i]);
}

/* The sentence for a check that failed, into why. */
static void sanity_why(const gpurun_template_t *t, const char *shown, long bad, const char *badtext,
                       const char *searched, char *why, size_t whylen)
{
    if (!why || !whylen)
        return;
    if (bad) {
        snprintf(why, whylen, "'%s' appears in %s, line %ld", badtext, shown, bad);
    } else {
        char forms[512];
        forms_text(t, forms, sizeof forms);
        snprintf(why, whylen, "%s does not appear in %s", forms, searched);
    }
}

int gpurun_sanity_file_check(const gpurun_template_t *t, const char *path, char *why, size_t whylen)
{
    if (why && whylen)
        why[0] = '\0';
    if (!t->nsanity && !t->nfailure)
        return 1;
    bool found = !t->nsanity;
    long bad = 0;
    const char *badtext = NULL;
    if (file_scan(t, path, &found, &bad, &badtext) < 0) {
        if (why && whylen)
            snprintf(why, whylen, "cannot read %s", path);
        return -1;
    }
    if (found && !bad)
        return 1;
    sanity_why(t, path, bad, badtext, path, why, whylen);
    return 0;
}

int gpurun_sanity_in_file(const gpurun_template_t *t, const char *path)
{
    return gpurun_sanity_file_check(t, path, NULL, 0);
}

/* "a, b" into where, without overflowing it. */
static void where_add(char *where, size_t len, const char *what)
{
    if (!where || !len)
        return;
    size_t n = strlen(where);
    snprintf(where + n, len - n, "%s%s", n ? ", " : "", what);
}

bool gpurun_sanity_check(const gpurun_template_t *t, const char *dir, gpurun_lookup_fn lookup, void *ctx,
                         char *where, size_t wherelen, char *why, size_t whylen)
{
    if (where && wherelen)
        where[0] = '\0';
    if (why && whylen)
        why[0] = '\0';
    if (!t->nsanity && !t->nfailure)
        return true;
    if (!lookup) {
        lookup = defaults_lookup;
        ctx = (void *)&t->defaults;
    }
    /* The fom files, each once, then rank 0's output. */
    char **paths = gpurun_xcalloc(t->nfoms + 1, sizeof *paths);
    size_t n = 0;
    for (size_t i = 0; i < t->nfoms; i++) {
        gpurun_error_t err;
        if (!t->foms[i].file)
            continue;
        char *p = fom_path(&t->foms[i], dir, lookup, ctx, &err);
        bool seen = false;
        for (size_t k = 0; p && k < n; k++)
            seen = seen || strcmp(paths[k], p) == 0;
        if (p && !seen)
            paths[n++] = p;
        else
            free(p);
    }
    const char *label;
    paths[n++] = gpurun_rank0_output(dir, &label);
    /* A failure text is looked for in every file, even once a form was found. */
    bool found = !t->nsanity;
    long bad = 0;
    const char *badtext = NULL;
    char badfile[256] = "";
    size_t dlen = dir ? strlen(dir) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *shown = paths[i];
        if (dlen && strncmp(shown, dir, dlen) == 0 && shown[dlen] == '/')
            shown += dlen + 1;
        if (!bad && (!found || t->nfailure)) {
            file_scan(t, paths[i], &found, &bad, &badtext);
            if (bad)
                snprintf(badfile, sizeof badfile, "%s", shown);
        }
        where_add(where, wherelen, shown);
        free(paths[i]);
    }
    free(paths);
    if (found && !bad)
        return true;
    sanity_why(t, badfile, bad, badtext, where ? where : "", why, whylen);
    return false;
}

bool gpurun_sanity_ok(const gpurun_template_t *t, const char *dir, gpurun_lookup_fn lookup, void *ctx,
                      char *where, size_t wherelen)
{
    return gpurun_sanity_check(t, dir, lookup, ctx, where, wherelen, NULL, 0);
}

/* ---- reference bands --------------------------------------------------- */

static const char band_forms[] =
    "expected NUMBER +- NUMBER[%], >= NUMBER, > NUMBER, <= NUMBER, < NUMBER or LOW..HIGH, as in "
    "\"90 +-10%\", \">= 80\" or \"80..100\"";

static void skip_blanks(const char **p)
{
    while (isspace((unsigned char)**p))
        (*p)++;
}

/* A finite number at *p (no hex, no nan): advances past it. */
static bool read_number(const char **p, double *v)
{
    skip_blanks(p);
    const char *s = *p;
    size_t n = 0;
    while (s[n] && (isdigit((unsigned char)s[n]) || strchr("+-.eE", s[n]))) {
        /* "80..100": a second '.' right after one ends the number */
        if (s[n] == '.' && s[n + 1] == '.')
            break;
        /* "90+-5": a sign not after an exponent ends it */
        if (n && (s[n] == '+' || s[n] == '-') && s[n - 1] != 'e' && s[n - 1] != 'E')
            break;
        n++;
    }
    if (!n || parse_number(s, n, v))
        return false;
    *p = s + n;
    return true;
}

int gpurun_reference_parse(const char *spec, struct gpurun_band *b, gpurun_error_t *err)
{
    struct gpurun_conf_shown a;
    const char *p = spec ? spec : "";
    double x, y;
    memset(b, 0, sizeof *b);
    b->lo = -HUGE_VAL;
    b->hi = HUGE_VAL;
    skip_blanks(&p);
    bool ok = false;
    if (p[0] == '>' || p[0] == '<') {
        bool greater = p[0] == '>', open = p[1] != '=';
        p += open ? 1 : 2;
        if (read_number(&p, &x)) {
            if (greater) {
                b->lo = x;
                b->lo_open = open;
            } else {
                b->hi = x;
                b->hi_open = open;
            }
            ok = true;
        }
    } else if (read_number(&p, &x)) {
        skip_blanks(&p);
        if (p[0] == '+' && p[1] == '-') {
            p += 2;
            if (read_number(&p, &y) && y >= 0) {
                skip_blanks(&p);
                double tol = y;
                if (*p == '%') {
                    p++;
                    tol = fabs(x) * y / 100.0;
                }
                b->lo = x - tol;
                b->hi = x + tol;
                ok = isfinite(b->lo) && isfinite(b->hi);
            }
        } else if (p[0] == '.' && p[1] == '.') {
            p += 2;
            if (read_number(&p, &y) && x <= y) {
                b->lo = x;
                b->hi = y;
                ok = true;
            }
        } else if (!*p) {
            return gpurun_err(err, GPURUN_EXIT_CONFIG,
                              "reference '%s': a bare number is not a band (a measured figure never equals "
                              "it exactly); %s",
                              gpurun_conf_shown(&a, spec), band_forms);
        }
    }
    skip_blanks(&p);
    if (!ok || *p)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "reference '%s': %s", gpurun_conf_shown(&a, spec), band_forms);
    return 0;
}

int gpurun_reference_check(const char *spec, double value, char *why, size_t whylen, gpurun_error_t *err)
{
    struct gpurun_band b;
    if (gpurun_reference_parse(spec, &b, err) < 0)
        return -1;
    bool in = isfinite(value) && (b.lo_open ? value > b.lo : value >= b.lo) &&
              (b.hi_open ? value < b.hi : value <= b.hi);
    if (why && whylen) {
        char range[128];
        if (isinf(b.lo))
            snprintf(range, sizeof range, "%s %g", b.hi_open ? "<" : "<=", b.hi);
        else if (isinf(b.hi))
            snprintf(range, sizeof range, "%s %g", b.lo_open ? ">" : ">=", b.lo);
        else
            snprintf(range, sizeof range, "%g .. %g", b.lo, b.hi);
        snprintf(why, whylen, "%g is %s '%s' (%s)", value, in ? "inside" : "outside", spec, range);
    }
    return in ? 1 : 0;
}
