/* SPDX-License-Identifier: BSD-3-Clause */
/* ${name} expansion and the splitting of a command line into words
 * (template.h).  gpurun never hands a command to a shell, wordexp() or
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
#include "template.h"
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

static int split_words(const char *line, gpurun_lookup_fn lookup, void *ctx, const char *what, char ***argvp,
                       gpurun_error_t *err)
{
    struct words w = {0};
    struct gpurun_strbuf cur = {0};
    bool in_word = false;
    bool plain = true; /* the word so far has no quote or escape */
    size_t i = 0;
    *argvp = NULL;
    w.v = gpurun_xcalloc(1, sizeof *w.v); /* an empty line: no words, still a vector */
    w.cap = 1;

    while (line[i]) {
        char c = line[i];
        size_t pos = i + 1; /* positions count from 1, as an editor does */
        if (c == ' ' || c == '\t') {
            if (in_word) {
                gpurun_strbuf_add(&cur, "", 0);
                words_add(&w, cur.s);
                cur = (struct gpurun_strbuf){0};
                in_word = false;
                plain = true;
            }
            i++;
            continue;
        }
        if (lookup && c == '$' && line[i + 1] == '{') {
            char *name;
            const char *end;
            const char *value = expand_one(line + i, lookup, ctx, what, &name, &end, err);
            if (!value)
                goto failed;
            bool alone = !in_word && (!*end || *end == ' ' || *end == '\t' || *end == '\n');
            if (alone && !one_word_name(name)) {
                /* a list of arguments: its words, as the user quoted them */
                char **more;
                int rc = gpurun_split_words(value, &more, err);
                if (rc < 0) {
                    char *why = gpurun_xstrdup(err->text);
                    gpurun_err(err, GPURUN_EXIT_CONFIG, "the words of '${%s}', %s", name, why);
                    free(why);
                }
                free(name);
                if (rc < 0)
                    goto failed;
                for (char **m = more; *m; m++)
                    words_add(&w, *m);
                free(more);
            } else {
                free(name);
                if (*value) { /* an empty one, unquoted, makes no word (as in sh) */
                    gpurun_strbuf_add(&cur, value, strlen(value));
                    in_word = true;
                }
                plain = false;
            }
            i = (size_t)(end - line);
            continue;
        }
        if (c == '\\') {
            in_word = true;
            plain = false;
            if (line[i + 1] == '\n') { /* a line continuation */
                i += 2;
            } else if (!line[i + 1]) { /* escapes nothing: kept, as sh does */
                gpurun_strbuf_addc(&cur, c);
                i++;
            } else {
                gpurun_strbuf_addc(&cur, line[i + 1]);
                i += 2;
            }
            continue;
        }
        if (c == '\'') {
            const char *end = strchr(line + i + 1, '\'');
            if (!end)
                goto unterminated;
            gpurun_strbuf_add(&cur, "", 0); /* '' is a word, if an empty one */
            for (const char *q = line + i + 1; q < end;) {
                /* ${name} is gpurun's, not the shell's: expanded in single quotes too */
                if (lookup && q[0] == '$' && q[1] == '{') {
                    char *name;
                    const char *after;
                    const char *value = expand_one(q, lookup, ctx, what, &name, &after, err);
                    if (!value)
                        goto failed;
                    free(name);
                    gpurun_strbuf_add(&cur, value, strlen(value));
                    q = after; /* a name holds no quote: still before `end` */
                } else {
                    gpurun_strbuf_addc(&cur, *q++);
                }
            }
            in_word = true;
            plain = false;
            i = (size_t)(end - line) + 1;
            continue;
        }
        if (c == '"') {
            size_t j = i + 1;
            gpurun_strbuf_add(&cur, "", 0); /* "" is a word, if an empty one */
            for (;;) {
                char d = line[j];
                if (!d)
                    goto unterminated;
                if (d == '"')
                    break;
                if (lookup && d == '$' && line[j + 1] == '{') {
                    char *name;
                    const char *after;
                    const char *value = expand_one(line + j, lookup, ctx, what, &name, &after, err);
                    if (!value)
                        goto failed;
                    free(name);
                    gpurun_strbuf_add(&cur, value, strlen(value));
                    j = (size_t)(after - line);
                    continue;
                }
                if (d == '\\' && line[j + 1] && strchr("\"\\$`", line[j + 1])) {
                    gpurun_strbuf_addc(&cur, line[j + 1]);
                    j += 2;
                } else if (d == '\\' && line[j + 1] == '\n') {
                    j += 2;
                } else if (d == '`' || (d == '$' && line[j + 1] == '(')) {
                    gpurun_free_words(w.v);
                    free(cur.s);
                    return refuse(err, line, "'%s' at position %zu: " NO_SUBST,
                                  d == '`' ? "`" : "$(", j + 1);
                } else {
                    gpurun_strbuf_addc(&cur, d);
                    j++;
                }
            }
            in_word = true;
            plain = false;
            i = j + 1;
            continue;
        }

        const char *refusal = NULL;
        if (c == '`' || (c == '$' && line[i + 1] == '(')) {
            gpurun_free_words(w.v);
            free(cur.s);
            return refuse(err, line, "'%s' at position %zu: " NO_SUBST, c == '`' ? "`" : "$(", pos);
        } else if (c == '\n') {
            refusal = "unquoted line break at position %zu (" NO_SHELL ")";
        } else if (c == '#' && !in_word) {
            refusal = "unquoted '#' at position %zu starts a comment in a shell (" NO_SHELL ")";
        } else if (strchr(";|&<>()", c)) {
            gpurun_free_words(w.v);
            free(cur.s);
            return refuse(err, line, "unquoted '%c' at position %zu (" NO_SHELL ")", c, pos);
        } else if (c == '=' && w.n == 0 && in_word && plain && gpurun_conf_env_name_ok(cur.s)) {
            /* `NAME=value prog`: a shell sets NAME for prog, exec would run "NAME=value" */
            struct gpurun_conf_shown a, b;
            gpurun_free_words(w.v);
            int rc = refuse(err, line,
                            "'%s=' at position 1 sets a variable in a shell, not a program to "
                            "run: put %s in env { }",
                            gpurun_conf_shown(&a, cur.s), gpurun_conf_shown(&b, cur.s));
            free(cur.s);
            return rc;
        }
        if (refusal) {
            gpurun_free_words(w.v);
            free(cur.s);
            return refuse(err, line, refusal, pos);
        }
        gpurun_strbuf_addc(&cur, c);
        in_word = true;
        i++;
    }
    if (in_word) {
        gpurun_strbuf_add(&cur, "", 0);
        words_add(&w, cur.s);
    } else {
        free(cur.s);
    }
    *argvp = w.v;
    return 0;

unterminated:
    gpurun_free_words(w.v);
    free(cur.s);
    return refuse(err, line, "the %s at position %zu is never closed",
                  line[i] == '"' ? "'\"'" : "\"'\"", i + 1);

failed:
    gpurun_free_words(w.v);
    free(cur.s);
    return -1;
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
