/* SPDX-License-Identifier: BSD-3-Clause */
/* ${name} expansion and the splitting of a command line into words
 * (expand.h).  gpurun never hands a command to a shell, wordexp() or
 * popen(): what a shell would do beyond splitting words is refused, so
 * that a command means the same here as in the user's terminal or not at
 * all. */
#include "config.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confparse.h"
#include "expand.h"
#include "util.h"

/* ---- ${name} ---------------------------------------------------------- */

static bool name_start(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool name_char(char c)
{
    return name_start(c) || (c >= '0' && c <= '9');
}

/* "WHAT: '${name}' is not set", with the nearest name when the table can
 * list its names. */
static int unset_name(const char *name, gpurun_lookup_fn lookup, void *ctx, const char *what,
                      gpurun_error_t *err)
{
    const char *near = NULL;
    const char **names = NULL;
    if (lookup == gpurun_kvlist_lookup && ctx) {
        const struct gpurun_kvlist *l = ctx;
        names = gpurun_xcalloc(l->n, sizeof *names);
        for (size_t i = 0; i < l->n; i++)
            names[i] = l->items[i].key;
        near = gpurun_conf_closest(name, names, l->n);
    }
    int rc = near ? gpurun_err(err, GPURUN_EXIT_CONFIG,
                               "%s: '${%s}' is not set (did you mean '${%s}'?)", what, name, near)
                  : gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: '${%s}' is not set", what, name);
    free(names);
    return rc;
}

int gpurun_expand(const char *in, gpurun_lookup_fn lookup, void *ctx, const char *what, char **outp,
                  gpurun_error_t *err)
{
    struct gpurun_strbuf b = {0};
    struct gpurun_conf_shown a;
    const char *p = in;
    *outp = NULL;
    if (!what)
        what = "value";
    gpurun_strbuf_add(&b, "", 0);
    for (;;) {
        const char *d = strstr(p, "${");
        if (!d) {
            gpurun_strbuf_add(&b, p, strlen(p));
            break;
        }
        gpurun_strbuf_add(&b, p, (size_t)(d - p));
        const char *n = d + 2, *e = n;
        if (name_start(*e))
            for (e++; name_char(*e); e++)
                ;
        if (e == n || *e != '}') {
            const char *close = strchr(n, '}');
            free(b.s);
            if (!close)
                return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: '${' without a closing '}'", what);
            if (close == n)
                return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: empty '${}'", what);
            return gpurun_err(err, GPURUN_EXIT_CONFIG,
                              "%s: '${%s}' is not a valid name (a letter or '_', then letters, "
                              "digits, '_')",
                              what, gpurun_conf_shown_n(&a, n, (size_t)(close - n)));
        }
        char *name = gpurun_xstrndup(n, (size_t)(e - n));
        const char *value = lookup(name, ctx);
        if (!value) {
            unset_name(name, lookup, ctx, what, err);
            free(name);
            free(b.s);
            return -1;
        }
        gpurun_strbuf_add(&b, value, strlen(value));
        free(name);
        p = e + 1;
    }
    *outp = b.s;
    return 0;
}

/* ---- words ------------------------------------------------------------ */

struct words {
    char **v;
    size_t n, cap;
};

static void words_add(struct words *w, char *word)
{
    if (w->n + 2 > w->cap) {
        w->cap = w->cap ? 2 * w->cap : 8;
        w->v = gpurun_xrealloc(w->v, w->cap * sizeof *w->v);
    }
    w->v[w->n++] = word;
    w->v[w->n] = NULL;
}

void gpurun_free_words(char **argv)
{
    if (!argv)
        return;
    for (char **p = argv; *p; p++)
        free(*p);
    free(argv);
}

/* What a shell would make of the character at `pos`, said as a refusal. */
__attribute__((format(printf, 3, 4))) static int refuse(gpurun_error_t *err, const char *line,
                                                        const char *fmt, ...)
{
    struct gpurun_conf_shown a;
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return gpurun_err(err, GPURUN_EXIT_CONFIG, "'%s': %s", gpurun_conf_shown(&a, line), what);
}

#define NO_SHELL "gpurun runs no shell: quote it to pass it to the program"
#define NO_SUBST "command substitution needs a shell, and gpurun runs none"

const char *const gpurun_job_value_names[] = {"job",           "template",         "job_dir", "run_dir",
                                              "nodes",         "ranks_per_node",   "ranks",   "gpus_per_rank",
                                              "threads_per_rank", "repeat",        NULL};

/* The job's own values are a path or a number: always inside the word they
 * are in.  Any other name (params, the template's defaults) standing alone
 * as an unquoted word may hold several arguments (args = "-n 5"). */
static bool one_word_name(const char *name)
{
    for (const char *const *n = gpurun_job_value_names; *n; n++)
        if (!strcmp(*n, name))
            return true;
    return false;
}

/* The ${name} at `d` (pointing at '$'): its value, or an error as
 * gpurun_expand() gives it; *endp is past the '}'. */
static const char *expand_one(const char *d, gpurun_lookup_fn lookup, void *ctx, const char *what, char **namep,
                              const char **endp, gpurun_error_t *err)
{
    struct gpurun_conf_shown a;
    const char *n = d + 2, *e = n;
    *namep = NULL;
    if (name_start(*e))
        for (e++; name_char(*e); e++)
            ;
    if (e == n || *e != '}') {
        const char *close = strchr(n, '}');
        if (!close)
            gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: '${' without a closing '}'", what);
        else if (close == n)
            gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: empty '${}'", what);
        else
            gpurun_err(err, GPURUN_EXIT_CONFIG,
                       "%s: '${%s}' is not a valid name (a letter or '_', then letters, digits, '_')", what,
                       gpurun_conf_shown_n(&a, n, (size_t)(close - n)));
        return NULL;
    }
    char *name = gpurun_xstrndup(n, (size_t)(e - n));
    const char *value = lookup(name, ctx);
    if (!value) {
        unset_name(name, lookup, ctx, what, err);
        free(name);
        return NULL;
    }
    *namep = name;
    *endp = e + 1;
    return value;
}

/* What split_words() keeps while it goes along the line. */
struct splitter {
    const char *line;
    gpurun_lookup_fn lookup; /* NULL: ${name} is not expanded */
    void *ctx;
    const char *what;
    gpurun_error_t *err;
    struct words w;
    struct gpurun_strbuf cur; /* the word being made */
    bool in_word;
    bool plain; /* the word so far has no quote or escape */
};

/* A blank after a word: the word is complete. */
static void end_word(struct splitter *s)
{
    gpurun_strbuf_add(&s->cur, "", 0);
    words_add(&s->w, s->cur.s);
    s->cur = (struct gpurun_strbuf){0};
    s->in_word = false;
    s->plain = true;
}

/* The ${name} at `q` inside quotes: its value, always inside the word; *afterp is past the '}'. */
static int add_quoted_name(struct splitter *s, const char *q, const char **afterp)
{
    char *name;
    const char *value = expand_one(q, s->lookup, s->ctx, s->what, &name, afterp, s->err);
    if (!value)
        return -1;
    free(name);
    gpurun_strbuf_add(&s->cur, value, strlen(value));
    return 0;
}

/* An unquoted ${name} at line[*ip]: standing alone as a word, a list of
 * arguments (one_word_name() aside); otherwise part of the word. */
static int take_unquoted_name(struct splitter *s, size_t *ip)
{
    char *name;
    const char *end;
    const char *value = expand_one(s->line + *ip, s->lookup, s->ctx, s->what, &name, &end, s->err);
    if (!value)
        return -1;
    bool alone = !s->in_word && (!*end || *end == ' ' || *end == '\t' || *end == '\n');
    if (alone && !one_word_name(name)) {
        /* a list of arguments: its words, as the user quoted them */
        char **more;
        int rc = gpurun_split_words(value, &more, s->err);
        if (rc < 0) {
            char *why = gpurun_xstrdup(s->err->text);
            gpurun_err(s->err, GPURUN_EXIT_CONFIG, "the words of '${%s}', %s", name, why);
            free(why);
        }
        free(name);
        if (rc < 0)
            return -1;
        for (char **m = more; *m; m++)
            words_add(&s->w, *m);
        free(more);
    } else {
        free(name);
        if (*value) { /* an empty one, unquoted, makes no word (as in sh) */
            gpurun_strbuf_add(&s->cur, value, strlen(value));
            s->in_word = true;
        }
        s->plain = false;
    }
    *ip = (size_t)(end - s->line);
    return 0;
}

/* An unquoted backslash at line[*ip]. */
static void take_backslash(struct splitter *s, size_t *ip)
{
    const char *line = s->line;
    size_t i = *ip;
    s->in_word = true;
    s->plain = false;
    if (line[i + 1] == '\n') { /* a line continuation */
        i += 2;
    } else if (!line[i + 1]) { /* escapes nothing: kept, as sh does */
        gpurun_strbuf_addc(&s->cur, line[i]);
        i++;
    } else {
        gpurun_strbuf_addc(&s->cur, line[i + 1]);
        i += 2;
    }
    *ip = i;
}

/* The quote at line[i] has no closing one. */
static int refuse_unterminated(struct splitter *s, size_t i)
{
    return refuse(s->err, s->line, "the %s at position %zu is never closed",
                  s->line[i] == '"' ? "'\"'" : "\"'\"", i + 1);
}

/* The '...' that starts at line[*ip]. */
static int take_single_quoted(struct splitter *s, size_t *ip)
{
    const char *line = s->line;
    const char *end = strchr(line + *ip + 1, '\'');
    if (!end)
        return refuse_unterminated(s, *ip);
    gpurun_strbuf_add(&s->cur, "", 0); /* '' is a word, if an empty one */
    for (const char *q = line + *ip + 1; q < end;) {
        /* ${name} is gpurun's, not the shell's: expanded in single quotes too */
        if (s->lookup && q[0] == '$' && q[1] == '{') {
            if (add_quoted_name(s, q, &q) < 0)
                return -1;
            /* a name holds no quote: q is still before `end` */
        } else {
            gpurun_strbuf_addc(&s->cur, *q++);
        }
    }
    s->in_word = true;
    s->plain = false;
    *ip = (size_t)(end - line) + 1;
    return 0;
}

/* The "..." that starts at line[*ip]: backslash escapes " \ $ ` and a line
 * break; command substitution is refused. */
static int take_double_quoted(struct splitter *s, size_t *ip)
{
    const char *line = s->line;
    size_t j = *ip + 1;
    gpurun_strbuf_add(&s->cur, "", 0); /* "" is a word, if an empty one */
    for (;;) {
        char d = line[j];
        if (!d)
            return refuse_unterminated(s, *ip);
        if (d == '"')
            break;
        if (s->lookup && d == '$' && line[j + 1] == '{') {
            const char *after;
            if (add_quoted_name(s, line + j, &after) < 0)
                return -1;
            j = (size_t)(after - line);
            continue;
        }
        if (d == '\\' && line[j + 1] && strchr("\"\\$`", line[j + 1])) {
            gpurun_strbuf_addc(&s->cur, line[j + 1]);
            j += 2;
        } else if (d == '\\' && line[j + 1] == '\n') {
            j += 2;
        } else if (d == '`' || (d == '$' && line[j + 1] == '(')) {
            return refuse(s->err, line, "'%s' at position %zu: " NO_SUBST, d == '`' ? "`" : "$(", j + 1);
        } else {
            gpurun_strbuf_addc(&s->cur, d);
            j++;
        }
    }
    s->in_word = true;
    s->plain = false;
    *ip = j + 1;
    return 0;
}

/* Any other unquoted character at line[*ip]: part of the word, unless a
 * shell would make more of it. */
static int take_unquoted_char(struct splitter *s, size_t *ip)
{
    const char *line = s->line;
    size_t i = *ip;
    char c = line[i];
    size_t pos = i + 1; /* positions count from 1, as an editor does */
    const char *refusal = NULL;
    if (c == '`' || (c == '$' && line[i + 1] == '(')) {
        return refuse(s->err, line, "'%s' at position %zu: " NO_SUBST, c == '`' ? "`" : "$(", pos);
    } else if (c == '\n') {
        refusal = "unquoted line break at position %zu (" NO_SHELL ")";
    } else if (c == '#' && !s->in_word) {
        refusal = "unquoted '#' at position %zu starts a comment in a shell (" NO_SHELL ")";
    } else if (strchr(";|&<>()", c)) {
        return refuse(s->err, line, "unquoted '%c' at position %zu (" NO_SHELL ")", c, pos);
    } else if (c == '=' && s->w.n == 0 && s->in_word && s->plain && gpurun_conf_env_name_ok(s->cur.s)) {
        /* `NAME=value prog`: a shell sets NAME for prog, exec would run "NAME=value" */
        struct gpurun_conf_shown a, b;
        return refuse(s->err, line,
                      "'%s=' at position 1 sets a variable in a shell, not a program to "
                      "run: put %s in env { }",
                      gpurun_conf_shown(&a, s->cur.s), gpurun_conf_shown(&b, s->cur.s));
    }
    if (refusal)
        return refuse(s->err, line, refusal, pos);
    gpurun_strbuf_addc(&s->cur, c);
    s->in_word = true;
    *ip = i + 1;
    return 0;
}

static int split_words(const char *line, gpurun_lookup_fn lookup, void *ctx, const char *what, char ***argvp,
                       gpurun_error_t *err)
{
    struct splitter s = {.line = line, .lookup = lookup, .ctx = ctx, .what = what, .err = err, .plain = true};
    size_t i = 0;
    int rc = 0;
    *argvp = NULL;
    s.w.v = gpurun_xcalloc(1, sizeof *s.w.v); /* an empty line: no words, still a vector */
    s.w.cap = 1;

    while (line[i] && rc == 0) {
        char c = line[i];
        if (c == ' ' || c == '\t') {
            if (s.in_word)
                end_word(&s);
            i++;
        } else if (lookup && c == '$' && line[i + 1] == '{') {
            rc = take_unquoted_name(&s, &i);
        } else if (c == '\\') {
            take_backslash(&s, &i);
        } else if (c == '\'') {
            rc = take_single_quoted(&s, &i);
        } else if (c == '"') {
            rc = take_double_quoted(&s, &i);
        } else {
            rc = take_unquoted_char(&s, &i);
        }
    }
    if (rc < 0) {
        gpurun_free_words(s.w.v);
        free(s.cur.s);
        return -1;
    }
    if (s.in_word) {
        gpurun_strbuf_add(&s.cur, "", 0);
        words_add(&s.w, s.cur.s);
    } else {
        free(s.cur.s);
    }
    *argvp = s.w.v;
    return 0;
}

int gpurun_split_words(const char *line, char ***argvp, gpurun_error_t *err)
{
    return split_words(line, NULL, NULL, NULL, argvp, err);
}

int gpurun_expand_words(const char *line, gpurun_lookup_fn lookup, void *ctx, const char *what, char ***argvp,
                        gpurun_error_t *err)
{
    return split_words(line, lookup, ctx, what ? what : "value", argvp, err);
}
