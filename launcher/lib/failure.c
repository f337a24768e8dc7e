/* SPDX-License-Identifier: BSD-3-Clause */
/* What a failed rank's output says: its last lines, read from the end of
 * its output file, and the first of them that names the cause. */
#include "config.h"

#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "failure.h"
#include "util.h"

const char *const gpurun_failure_builtin[] = {"Segmentation fault", "CUDA error", "[Oo]ut of memory", NULL};

#define LINE_MAX_KEPT 1000 /* bytes of one line kept: a progress bar without newlines is one line */

size_t gpurun_failure_lines(void)
{
    const char *v = getenv("GPURUN_FAILURE_LINES");
    char *end;
    long n = v && *v ? strtol(v, &end, 10) : -1;
    return v && *v && !*end && n >= 0 && n <= 1000 ? (size_t)n : GPURUN_TAIL_LINES;
}

/* One line of the window, without its label; not NUL-terminated. */
struct span {
    const char *s;
    size_t len;
};

static bool blank(struct span l)
{
    for (size_t i = 0; i < l.len; i++)
        if (l.s[i] != ' ' && l.s[i] != '\t')
            return false;
    return true;
}

/* A rule under a message ("-----...", GROMACS's), which ends it. */
static bool rule(struct span l)
{
    size_t d = 0;
    for (size_t i = 0; i < l.len; i++) {
        if (l.s[i] == '-')
            d++;
        else if (l.s[i] != ' ')
            return false;
    }
    return d >= 5;
}

/* A title: the line ends with ':', and its message follows ("Fatal error:"). */
static bool title(struct span l)
{
    size_t n = l.len;
    while (n && (l.s[n - 1] == ' ' || l.s[n - 1] == '\t'))
        n--;
    return n && l.s[n - 1] == ':';
}

static char *shown(struct span l)
{
    size_t n = l.len < LINE_MAX_KEPT ? l.len : LINE_MAX_KEPT;
    char *raw = gpurun_xstrndup(l.s, n);
    char *t = gpurun_terminal_text(raw);
    free(raw);
    return t;
}

/* The first line (of `n`) that one of `re` matches, or n: each matched on
 * its first GPURUN_REGEX_LINE_MAX bytes, the template's charged to their
 * budget (`spend` NULL: gpurun's own, not charged). */
static size_t first_match(const struct span *lines, size_t n, const regex_t *re, size_t nre,
                          struct gpurun_regex_spend *spend, struct gpurun_regex_budget *budget)
{
    if (!nre)
        return n;
    char *buf = gpurun_xmalloc(GPURUN_REGEX_LINE_MAX + 1);
    size_t found = n;
    for (size_t i = 0; i < n && found == n; i++) {
        size_t len = lines[i].len < GPURUN_REGEX_LINE_MAX ? lines[i].len : GPURUN_REGEX_LINE_MAX;
        memcpy(buf, lines[i].s, len);
        buf[len] = '\0';
        for (size_t k = 0; k < nre && found == n; k++)
            if ((spend ? gpurun_regexec_bounded(budget, &spend[k], &re[k], buf, 0, NULL, 0)
                       : regexec(&re[k], buf, 0, NULL, 0)) == 0)
                found = i;
    }
    free(buf);
    return found;
}

static size_t builtin_match(const struct span *lines, size_t n)
{
    size_t nb = 0;
    while (gpurun_failure_builtin[nb])
        nb++;
    regex_t *re = gpurun_xcalloc(nb, sizeof *re);
    size_t ok = 0;
    for (size_t i = 0; i < nb; i++)
        if (regcomp(&re[ok], gpurun_failure_builtin[i], REG_EXTENDED | REG_NOSUB) == 0)
            ok++;
    size_t found = first_match(lines, n, re, ok, NULL, NULL);
    for (size_t i = 0; i < ok; i++)
        regfree(&re[i]);
    free(re);
    return found;
}

/* Reads [from, from + len) of fd into a new buffer; *got what came. */
static char *read_window(int fd, off_t from, size_t len, size_t *got, gpurun_error_t *err)
{
    char *buf = gpurun_xmalloc(len + 1);
    size_t n = 0;
    while (n < len) {
        ssize_t r = pread(fd, buf + n, len - n, from + (off_t)n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            gpurun_err(err, GPURUN_EXIT_ENV, "cannot read: %s", strerror(errno));
            free(buf);
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    *got = n;
    return buf;
}

int gpurun_rank_tail_read(int fd, const char *label, size_t keep, const gpurun_template_t *t,
                          struct gpurun_rank_tail *out, gpurun_error_t *err)
{
    memset(out, 0, sizeof *out);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return gpurun_err(err, GPURUN_EXIT_ENV, "cannot read: %s", strerror(errno));
    if (!S_ISREG(st.st_mode))
        return gpurun_err(err, GPURUN_EXIT_ENV, "not a plain file");
    off_t size = st.st_size, from = size > (off_t)GPURUN_TAIL_BYTES ? size - (off_t)GPURUN_TAIL_BYTES : 0;
    size_t len;
    char *buf = read_window(fd, from, (size_t)(size - from), &len, err);
    if (!buf)
        return -1;
    out->whole = from == 0;
    const char *p = buf, *end = buf + len;
    if (from > 0) { /* the window starts inside a line: not that one */
        const char *nl = memchr(p, '\n', len);
        p = nl ? nl + 1 : end;
    }
    size_t llen = label ? strlen(label) : 0, n = 0, cap = 0;
    struct span *lines = NULL;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        struct span l = {p, nl ? (size_t)(nl - p) : (size_t)(end - p)};
        p = nl ? nl + 1 : end;
        if (llen) {
            if (l.len < llen || memcmp(l.s, label, llen))
                continue;
            l.s += llen;
            l.len -= llen;
        }
        if (l.len && l.s[l.len - 1] == '\r')
            l.len--;
        if (n == cap)
            lines = gpurun_xrealloc(lines, (cap = cap ? 2 * cap : 256) * sizeof *lines);
        lines[n++] = l;
    }
    size_t first = n > keep ? n - keep : 0;
    out->n = n - first;
    out->lines = gpurun_xcalloc(out->n + 1, sizeof *out->lines);
    for (size_t i = first; i < n; i++)
        out->lines[i - first] = shown(lines[i]);
    /* The template's patterns first: they know the program; then gpurun's. */
    size_t at = t ? first_match(lines, n, t->failure_re, t->nfailure, t->failure_spend, t->regex_budget) : n;
    if (at == n)
        at = builtin_match(lines, n);
    if (at < n) {
        size_t last = at;
        if (title(lines[at]))
            while (last + 1 < n && last - at < GPURUN_CAUSE_LINES && !blank(lines[last + 1]) && !rule(lines[last + 1]))
                last++;
        out->ncause = last - at + 1;
        out->cause = gpurun_xcalloc(out->ncause + 1, sizeof *out->cause);
        for (size_t i = at; i <= last; i++)
            out->cause[i - at] = shown(lines[i]);
    }
    free(lines);
    free(buf);
    return 0;
}

char *gpurun_rank_tail_reason(const struct gpurun_rank_tail *t)
{
    if (!t->ncause)
        return NULL;
    enum { MAX = 500 };
    char *out = gpurun_xcalloc(1, MAX + 8);
    size_t o = 0;
    for (size_t i = 0; i < t->ncause && o < MAX; i++) {
        const char *s = t->cause[i];
        while (*s == ' ')
            s++;
        size_t l = strlen(s);
        while (l && s[l - 1] == ' ')
            l--;
        if (!l)
            continue;
        if (o)
            out[o++] = ' ';
        size_t room = MAX - o;
        if (l > room) {
            /* cut on a character's start, not inside one */
            while (room && ((unsigned char)s[room] & 0xc0) == 0x80)
                room--;
            memcpy(out + o, s, room);
            o += room;
            memcpy(out + o, "...", 4);
            return out;
        }
        memcpy(out + o, s, l);
        o += l;
    }
    out[o] = '\0';
    return out;
}

void gpurun_rank_tail_free(struct gpurun_rank_tail *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->lines[i]);
    free(t->lines);
    for (size_t i = 0; i < t->ncause; i++)
        free(t->cause[i]);
    free(t->cause);
    memset(t, 0, sizeof *t);
}
