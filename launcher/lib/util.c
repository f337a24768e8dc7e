/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

int gpurun_read_fd(int fd, const char *path, const char *what, size_t max, char **bufp, size_t *lenp,
                   gpurun_error_t *err)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: cannot read %s: %s", path, what, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: the %s is not a regular file (%s)", path, what,
                          S_ISDIR(st.st_mode)    ? "a directory"
                          : S_ISFIFO(st.st_mode) ? "a FIFO"
                          : S_ISCHR(st.st_mode)  ? "a character device"
                          : S_ISBLK(st.st_mode)  ? "a block device"
                          : S_ISSOCK(st.st_mode) ? "a socket"
                                                 : "not a file");
    if ((size_t)st.st_size > max)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: the %s is %lld bytes, more than the %zu allowed", path,
                          what, (long long)st.st_size, max);
    /* Room for what fstat says and a byte more, to see the end without
     * another read; more only if it grows meanwhile (never past max + 1). */
    size_t cap = (size_t)st.st_size + 1, len = 0;
    char *buf = gpurun_xmalloc(cap + 1);
    for (;;) {
        if (len == cap) {
            if (cap > max) { /* it grew while we read it */
                free(buf);
                return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: the %s is more than the %zu bytes allowed", path,
                                  what, max);
            }
            cap = cap > max / 2 ? max + 1 : cap * 2;
            buf = gpurun_xrealloc(buf, cap + 1);
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: cannot read %s: %s", path, what, strerror(e));
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    *bufp = buf;
    if (lenp)
        *lenp = len;
    return 0;
}

int gpurun_read_file(const char *path, const char *what, size_t max, char **bufp, size_t *lenp,
                     gpurun_error_t *err)
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: cannot open %s: %s", path, what,
                          strerror(errno));
    int rc = gpurun_read_fd(fd, path, what, max, bufp, lenp, err);
    close(fd);
    return rc;
}

int gpurun_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0) {
            errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

bool gpurun_executable_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

char *gpurun_proc_status(const char *field)
{
    FILE *f = fopen("/proc/self/status", "re");
    char line[8192];
    char *found = NULL;
    size_t fl = strlen(field);
    while (f && !found && fgets(line, sizeof line, f))
        if (!strncmp(line, field, fl) && line[fl] == ':') {
            char *v = line + fl + 1 + strspn(line + fl + 1, " \t");
            v[strcspn(v, "\n")] = '\0';
            found = gpurun_xstrdup(v);
        }
    if (f)
        fclose(f);
    return found;
}

void *gpurun_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        abort();
    return p;
}

void *gpurun_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        abort();
    return p;
}

void *gpurun_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        abort();
    return p;
}

char *gpurun_xstrdup(const char *s)
{
    char *p = strdup(s);
    if (!p)
        abort();
    return p;
}

char *gpurun_xstrndup(const char *s, size_t n)
{
    char *p = gpurun_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *gpurun_xvasprintf(const char *fmt, va_list ap)
{
    char *s;
    if (vasprintf(&s, fmt, ap) < 0)
        abort(); /* out of memory, as gpurun_xmalloc() would */
    return s;
}

char *gpurun_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = gpurun_xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}

size_t gpurun_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t *row = gpurun_xcalloc(lb + 1, sizeof *row);
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    size_t d = row[lb];
    free(row);
    return d;
}

/* ---- key/value lists ------------------------------------------------- */

void gpurun_kvlist_set(struct gpurun_kvlist *l, const char *key, const char *value)
{
    for (size_t i = 0; i < l->n; i++) {
        if (strcmp(l->items[i].key, key) == 0) {
            char *v = gpurun_xstrdup(value); /* value may be the old one */
            free(l->items[i].value);
            l->items[i].value = v;
            return;
        }
    }
    l->items = gpurun_xrealloc(l->items, (l->n + 1) * sizeof *l->items);
    l->items[l->n].key = gpurun_xstrdup(key);
    l->items[l->n].value = gpurun_xstrdup(value);
    l->n++;
}

const char *gpurun_kvlist_get(const struct gpurun_kvlist *l, const char *key)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i].key, key) == 0)
            return l->items[i].value;
    return NULL;
}

const char *gpurun_kvlist_lookup(const char *name, void *list)
{
    return gpurun_kvlist_get(list, name);
}

void gpurun_kvlist_clear(struct gpurun_kvlist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].key);
        free(l->items[i].value);
    }
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

/* ---- growing strings ---------------------------------------------------- */

void gpurun_strbuf_add(struct gpurun_strbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->s = gpurun_xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void gpurun_strbuf_addc(struct gpurun_strbuf *b, char c)
{
    gpurun_strbuf_add(b, &c, 1);
}

void gpurun_strbuf_puts(struct gpurun_strbuf *b, const char *s)
{
    gpurun_strbuf_add(b, s, strlen(s));
}

void gpurun_strbuf_printf(struct gpurun_strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = gpurun_xvasprintf(fmt, ap);
    va_end(ap);
    gpurun_strbuf_add(b, s, strlen(s));
    free(s);
}

size_t gpurun_utf8_char(const char *s, unsigned long *cpp)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned c = p[0];
    size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (!n || (n == 2 && c < 0xc2))
        return 0;
    unsigned long cp = n == 1 ? c : c & (0x7fu >> n);
    for (size_t k = 1; k < n; k++) {
        if ((p[k] & 0xc0) != 0x80) /* the NUL at the end stops here too */
            return 0;
        cp = cp << 6 | (p[k] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    if (cpp)
        *cpp = cp;
    return n;
}

/* A C0 or C1 control character, DEL, or a byte that starts no well-formed
 * UTF-8 character (n == 0). */
static bool control_char(size_t n, unsigned long cp)
{
    return !n || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0);
}

char *gpurun_terminal_text(const char *in)
{
    struct gpurun_strbuf b = {0};
    gpurun_strbuf_add(&b, "", 0);
    for (const char *p = in; *p;) {
        unsigned long cp = 0;
        size_t n = gpurun_utf8_char(p, &cp);
        if (*p == '\t') {
            gpurun_strbuf_addc(&b, ' ');
            p++;
        } else if (control_char(n, cp)) {
            /* an escape sequence would reach the terminal: shown, not sent */
            for (size_t k = 0; k < (n ? n : 1); k++)
                gpurun_strbuf_printf(&b, "\\x%02x", (unsigned char)p[k]);
            p += n ? n : 1;
        } else {
            gpurun_strbuf_add(&b, p, n);
            p += n;
        }
    }
    return b.s;
}

char *gpurun_comment_text(const char *in)
{
    struct gpurun_strbuf b = {0};
    gpurun_strbuf_add(&b, "", 0);
    for (const char *p = in ? in : ""; *p;) {
        unsigned long cp = 0;
        size_t n = gpurun_utf8_char(p, &cp);
        if (control_char(n, cp))
            gpurun_strbuf_addc(&b, '?'); /* a line break would start a line of its own */
        else
            gpurun_strbuf_add(&b, p, n);
        p += n ? n : 1;
    }
    return b.s;
}

char *gpurun_shell_word(const char *in)
{
    static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+.,/:=@%";
    if (*in && strspn(in, plain) == strlen(in))
        return gpurun_xstrdup(in);
    struct gpurun_strbuf b = {0};
    bool quoted = false;
    for (const char *p = in; *p;) {
        unsigned long cp = 0;
        size_t n = gpurun_utf8_char(p, &cp);
        bool ctl = control_char(n, cp), quote = *p == '\'';
        if ((ctl || quote) == quoted) { /* close the quotes before \' and $'\NNN', open them after */
            gpurun_strbuf_addc(&b, '\'');
            quoted = !quoted;
        }
        if (quote)
            gpurun_strbuf_puts(&b, "\\'");
        for (size_t k = 0; ctl && k < (n ? n : 1); k++)
            gpurun_strbuf_printf(&b, "$'\\%03o'", (unsigned char)p[k]);
        if (!ctl && !quote)
            gpurun_strbuf_add(&b, p, n);
        p += n ? n : 1;
    }
    if (quoted || !b.s)
        gpurun_strbuf_puts(&b, quoted ? "'" : "''");
    return b.s;
}

void gpurun_short_text(char *out, size_t len, const char *in)
{
    if (!len)
        return;
    size_t n = 0;
    for (const char *p = in; *p; p++) {
        unsigned char c = (unsigned char)*p;
        bool plain = c >= 0x20 && c < 0x7f;
        /* room for this byte, and for "..." should more follow */
        if (n + (plain ? 1 : 4) + (p[1] ? 3 : 0) >= len) {
            snprintf(out + n, len - n, "%s", len - n > 3 ? "..." : "");
            return;
        }
        if (plain)
            out[n++] = (char)c;
        else
            n += (size_t)snprintf(out + n, len - n, "\\x%02x", c);
    }
    out[n] = '\0';
}

/* One number of an id list at *pp, below limit: its digits are read only
 * while the value stays below it (no overflow, whatever their count). */
static bool id_number(const char **pp, bool after_dash, unsigned limit, unsigned *v, const char **why)
{
    const char *p = *pp;
    if (*p < '0' || *p > '9') {
        *why = !*p || *p == ',' ? (after_dash ? "an open range (\"0-\")" : "an empty item")
               : *p == '-'      ? "an open range or a negative number"
                                : "a character other than digits, ',' and '-'";
        return false;
    }
    unsigned long n = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        if ((n = n * 10 + (unsigned long)(*p - '0')) >= limit) {
            *why = "a number too large";
            return false;
        }
    *v = (unsigned)n;
    *pp = p;
    return true;
}

static int id_list_scan(const char *list, unsigned limit, void (*add)(unsigned, unsigned, void *), void *arg,
                        const char **why)
{
    if (!*list) {
        *why = "it is empty";
        return -1;
    }
    for (const char *p = list;;) {
        unsigned lo, hi;
        if (!id_number(&p, false, limit, &lo, why))
            return -1;
        hi = lo;
        if (*p == '-') {
            p++;
            if (!id_number(&p, true, limit, &hi, why))
                return -1;
            if (hi < lo) {
                *why = "a range that runs backwards";
                return -1;
            }
        }
        if (*p && *p != ',') {
            *why = *p == '-' ? "a range of ranges" : "a character other than digits, ',' and '-'";
            return -1;
        }
        if (add)
            add(lo, hi, arg);
        if (!*p)
            return 0;
        p++; /* the comma: a number must follow */
    }
}

int gpurun_id_list_parse(const char *list, unsigned limit, void (*add)(unsigned lo, unsigned hi, void *arg),
                         void *arg, const char **why)
{
    const char *unused;
    if (!why)
        why = &unused;
    if (!list) {
        *why = "it is empty";
        return -1;
    }
    if (id_list_scan(list, limit, NULL, NULL, why) < 0)
        return -1;
    return add ? id_list_scan(list, limit, add, arg, why) : 0;
}

/* ---- the cost of a regex --------------------------------------------- */

/* Roughly the nodes of glibc's parse tree (several hundred bytes each). */
#define REGEX_NODES_MAX 100000
#define REGEX_DEPTH_MAX 200
/* regcomp's epsilon closures: a run of parts that can each match nothing
 * ("a?a?a?...", "(a?b?){3000}") gives every node a closure over the rest
 * of the run, so memory grows with the run's square (6,000 "a?": 280 MB;
 * "(a?b?){3000}": 1.4 GB).  Measured, 3,000 copies stay under 20 MB. */
#define REGEX_NULLABLE_RUN_MAX 3000

struct re_cost {
    size_t worst_run; /* nodes in the longest run of parts that can match nothing */
    bool backref;     /* a back-reference, \1 to \9, outside brackets */
};

static size_t re_add(size_t a, size_t b)
{
    return a + b > REGEX_NODES_MAX ? REGEX_NODES_MAX + 1 : a + b;
}

static size_t re_mul(size_t a, size_t b)
{
    return a && b > (REGEX_NODES_MAX + 1) / a ? REGEX_NODES_MAX + 1 : a * b;
}

static size_t re_seq(const char **p, int depth, bool *nullable, struct re_cost *c);

static size_t re_atom(const char **p, int depth, bool *nullable, struct re_cost *c)
{
    const char *s = *p;
    *nullable = false;
    if (*s == '(') {
        *p = s + 1;
        size_t n = depth >= REGEX_DEPTH_MAX ? REGEX_NODES_MAX + 1 : re_seq(p, depth + 1, nullable, c);
        if (**p == ')')
            (*p)++;
        return re_add(n, 1);
    }
    if (*s == '[') { /* a bracket expression is one node, whatever it holds */
        s++;
        if (*s == '^')
            s++;
        if (*s == ']')
            s++;
        while (*s && *s != ']') {
            if (*s == '[' && (s[1] == ':' || s[1] == '.' || s[1] == '=')) {
                char end = s[1];
                s += 2;
                while (*s && !(*s == end && s[1] == ']'))
                    s++;
                if (*s)
                    s += 2;
            } else {
                s++;
            }
        }
        *p = *s ? s + 1 : s;
        return 1;
    }
    if (*s == '\\' && s[1] >= '1' && s[1] <= '9')
        c->backref = true;
    /* anchors match an empty string */
    *nullable = *s == '^' || *s == '$' || (*s == '\\' && s[1] && strchr("bB<>`'", s[1]));
    *p = s + (*s == '\\' && s[1] ? 2 : 1);
    return 1;
}

/* `{m}`, `{m,}`, `{m,n}` at *p: how many copies regcomp makes (0: not one);
 * *none: m is 0 (the repeat may match nothing). */
static size_t re_interval(const char **p, bool *none)
{
    const char *s = *p + 1;
    size_t m = 0, n = 0;
    bool comma = false, digits = false;
    for (; *s >= '0' && *s <= '9'; s++, digits = true)
        m = m > REGEX_NODES_MAX ? m : m * 10 + (size_t)(*s - '0');
    if (*s == ',') {
        comma = true;
        for (s++; *s >= '0' && *s <= '9'; s++)
            n = n > REGEX_NODES_MAX ? n : n * 10 + (size_t)(*s - '0');
    }
    if (!digits || *s != '}')
        return 0;
    *p = s + 1;
    *none = m == 0;
    return (comma && n > m ? n : m) + 1;
}

/* The nodes of a sequence of alternatives up to ')' or the end; *nullable:
 * it can match an empty string. */
static size_t re_seq(const char **p, int depth, bool *nullable, struct re_cost *c)
{
    size_t total = 0, run = 0;
    bool alt_nullable = true;
    *nullable = false;
    while (**p && **p != ')' && total <= REGEX_NODES_MAX) {
        if (**p == '|') {
            (*p)++;
            *nullable = *nullable || alt_nullable;
            alt_nullable = true;
            run = 0;
            continue;
        }
        bool null;
        size_t item = re_atom(p, depth, &null, c);
        for (;;) {
            size_t k;
            bool none;
            if (**p == '*' || **p == '?') {
                /* a* is (a+)?: on what can already match nothing, the same
                 * closures as a + ("D" and 96 "*": 1.8 s, 90 MB) */
                if (**p == '*' && null)
                    item = re_mul(item, 4);
                item = re_add(item, 1);
                null = true;
                (*p)++;
            } else if (**p == '+') {
                /* A + on what can match nothing: each copy's closure takes
                 * in the next ones, so the cost quadruples ("a?++++++++++++":
                 * 5 s and 900 MB), not doubles. */
                item = re_mul(item, null ? 4 : 2);
                (*p)++;
            } else if (**p == '{' && (k = re_interval(p, &none)) > 0) {
                item = re_mul(item, 4 * k); /* each optional copy takes a few nodes more */
                null = null || none;
            } else {
                break;
            }
        }
        total = re_add(total, item);
        alt_nullable = alt_nullable && null;
        run = null ? re_add(run, item) : 0;
        if (run > c->worst_run)
            c->worst_run = run;
    }
    *nullable = *nullable || alt_nullable;
    return total;
}

const char *gpurun_regex_cost_problem(const char *re)
{
    size_t total = 0;
    const char *p = re;
    struct re_cost c = {0};
    while (*p && total <= REGEX_NODES_MAX) {
        bool nullable;
        total = re_add(total, re_seq(&p, 0, &nullable, &c));
        if (*p == ')')
            p++;
    }
    /* glibc matches a back-reference by trying every way the groups
     * before it can split the line: "(.*)(.*)(.*)\1\2\3x" takes minutes
     * on a line of 100 characters, and no compiled size shows it. */
    if (c.backref)
        return "too costly to match: a back-reference (\\1 to \\9) makes matching a line take time exponential in "
               "its length; write out the text it repeats";
    if (total > REGEX_NODES_MAX)
        return "too costly to compile: its repetitions (a + or an interval {m,n} on a repeated or nested part) "
               "multiply its size past 100000 copies";
    if (c.worst_run > REGEX_NULLABLE_RUN_MAX)
        return "too costly to compile: a run of parts that can each match nothing (a?, a*, a{0,n} and their "
               "repeats) more than 3000 copies long";
    return NULL;
}

/* ---- matching in bounded time ------------------------------------------ */

static double mono_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

void gpurun_regex_budget_init(struct gpurun_regex_budget *b)
{
    memset(b, 0, sizeof *b);
    b->limit_s = GPURUN_REGEX_BUDGET_S;
    /* Tests: a smaller budget, so that a slow regex is dropped whatever
     * the machine's speed (the record's note names the variable). */
    const char *v = getenv("GPURUN_TEST_REGEX_BUDGET_S");
    char *end;
    double s = v && *v ? strtod(v, &end) : -1;
    if (v && *v && !*end && s >= 0 && s < GPURUN_REGEX_BUDGET_S) {
        b->limit_s = s;
        b->test_hook = true;
    }
}

/* What `s` took beyond its allowance; 0 when within it. */
static double regex_over(const struct gpurun_regex_spend *s)
{
    return s->spent_s > s->allowed_s ? s->spent_s - s->allowed_s : 0;
}

void gpurun_regex_spend_init(struct gpurun_regex_spend *s, const char *fmt, ...)
{
    memset(s, 0, sizeof *s);
    char text[sizeof s->what * 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    gpurun_short_text(s->what, sizeof s->what, text); /* printable ASCII: the record's JSON takes it */
}

static void regex_drop(struct gpurun_regex_budget *b, struct gpurun_regex_spend *s)
{
    s->dropped = true;
    b->ndropped++;
    if (b->nnotes < GPURUN_REGEX_NOTES_MAX)
        snprintf(b->notes[b->nnotes++], sizeof b->notes[0],
                 "%s: dropped: it took %.1f s on %zu line%s, more than a run allows its regexes (1 ms a line "
                 "and 1 s a MB, and %g s beyond that); the lines after those were not matched with it",
                 s->what, s->spent_s, s->calls, s->calls == 1 ? "" : "s", b->limit_s);
}

int gpurun_regexec_bounded(struct gpurun_regex_budget *b, struct gpurun_regex_spend *s, const regex_t *re,
                           const char *text, size_t nmatch, regmatch_t *m, int flags)
{
    if (!b)
        return regexec(re, text, nmatch, m, flags);
    if (s->dropped)
        return REG_NOMATCH;
    double before = regex_over(s), t0 = mono_now();
    int rc = regexec(re, text, nmatch, m, flags);
    s->spent_s += mono_now() - t0;
    s->allowed_s += 1e-3 + (double)strnlen(text, GPURUN_REGEX_LINE_MAX + 1) / 1e6;
    s->calls++;
    double after = regex_over(s);
    b->over_s += after - before;
    if (after > 0 && b->over_s > b->limit_s)
        regex_drop(b, s);
    return rc;
}

/* Types of file system that several hosts mount (statfs f_type; Linux's
 * magic.h and the vendors'), and some that are a host's own. */
static const struct {
    unsigned long magic;
    const char *name;
    bool shared;
} fs_types[] = {
    {0x6969, "nfs", true},           {0x0BD00BD0, "lustre", true},     {0x47504653, "gpfs", true},
    {0x19830326, "beegfs", true},    {0x00C36400, "cephfs", true},     {0xFF534D42, "cifs", true},
    {0xFE534D42, "smb2", true},      {0xAAD7AAEA, "panfs", true},      {0x5346414F, "afs", true},
    {0x6B414653, "afs", true},       {0x01161970, "gfs2", true},       {0x7461636F, "ocfs2", true},
    {0xEF53, "ext4", false},         {0x58465342, "xfs", false},       {0x9123683E, "btrfs", false},
    {0x01021994, "tmpfs", false},    {0x794C7630, "overlayfs", false}, {0x2FC12FC1, "zfs", false},
    {0x858458F6, "ramfs", false},    {0xF2F52010, "f2fs", false},
};

int gpurun_shared_fs(const char *path, char *fs, size_t size)
{
    struct statfs st;
    if (size)
        fs[0] = '\0';
    if (statfs(path, &st) < 0)
        return -1;
    for (size_t i = 0; i < sizeof fs_types / sizeof fs_types[0]; i++)
        if ((unsigned long)st.f_type == fs_types[i].magic) {
            snprintf(fs, size, "%s", fs_types[i].name);
            return fs_types[i].shared;
        }
    snprintf(fs, size, "type 0x%lx", (unsigned long)st.f_type);
    return -1;
}

/* `path` made absolute against the current folder, as it is now: the
 * program found is the one that runs, whatever folder it is started in. */
static char *absolute(const char *path)
{
    if (path[0] == '/')
        return gpurun_xstrdup(path);
    char *cwd = getcwd(NULL, 0);
    if (!cwd)
        return NULL;
    const char *rest = path[0] == '.' && path[1] == '/' ? path + 2 : path;
    char *abs = gpurun_xasprintf("%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "", rest);
    free(cwd);
    return abs;
}

char *gpurun_which(const char *prog)
{
    if (!*prog)
        return NULL;
    if (strchr(prog, '/'))
        return gpurun_executable_file(prog) ? absolute(prog) : NULL;
    const char *path = getenv("PATH");
    char *dirs = gpurun_xstrdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
    char *found = NULL;
    /* Every entry, empty ones ("", a leading or trailing ':') included: each
     * is the current folder, as for execvp(). */
    for (char *d = dirs, *next; d && !found; d = next) {
        char *colon = strchr(d, ':');
        next = colon ? colon + 1 : NULL;
        if (colon)
            *colon = '\0';
        char *c = gpurun_xasprintf("%s/%s", *d ? d : ".", prog);
        if (gpurun_executable_file(c))
            found = absolute(c);
        free(c);
    }
    free(dirs);
    return found;
}

/* --- durations ---------------------------------------------------------------- */

/* Up to 9 digits: no overflow in the sums below. */
static int read_digits(const char **pp, long *v)
{
    const char *p = *pp;
    int n = 0;
    *v = 0;
    while (*p >= '0' && *p <= '9') {
        if (++n > 9)
            return -1;
        *v = *v * 10 + (*p++ - '0');
    }
    *pp = p;
    return n;
}

/* "[D-]H:MM:SS" or "M:SS", as Slurm writes them. */
static int parse_clock(const char *s, long *out)
{
    const char *p = s;
    long days = 0, f[3];
    int nf = 0;
    bool has_days = strchr(s, '-') != NULL;
    if (has_days && (read_digits(&p, &days) <= 0 || *p++ != '-'))
        return -1;
    for (;;) {
        long v;
        int n = read_digits(&p, &v);
        if (n <= 0 || nf == 3 || (nf > 0 && (n != 2 || v > 59)))
            return -1;
        f[nf++] = v;
        if (*p != ':')
            break;
        p++;
    }
    if (*p || nf < 2 || (has_days && nf != 3))
        return -1;
    *out = days * 86400 + (nf == 3 ? f[0] * 3600 + f[1] * 60 + f[2] : f[0] * 60 + f[1]);
    return 0;
}

int gpurun_parse_duration(const char *s, long *out)
{
    static const struct {
        char unit;
        long secs;
    } units[] = {{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}};
    if (strcmp(s, "none") == 0) {
        *out = 0;
        return 0;
    }
    if (strchr(s, ':'))
        return parse_clock(s, out);
    const char *p = s;
    long total = 0;
    size_t next = 0; /* units in order, each once */
    while (*p) {
        long v;
        if (read_digits(&p, &v) <= 0)
            return -1;
        if (!*p) {
            if (next) /* "1h30": 30 what? */
                return -1;
            total = v;
            break;
        }
        size_t u = next;
        while (u < sizeof units / sizeof *units && units[u].unit != *p)
            u++;
        if (u == sizeof units / sizeof *units)
            return -1;
        total += v * units[u].secs;
        next = u + 1;
        p++;
    }
    if (p == s)
        return -1;
    *out = total;
    return 0;
}

