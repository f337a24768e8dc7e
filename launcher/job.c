/* SPDX-License-Identifier: BSD-3-Clause */
/* The job file (SPEC §2): libconfuse does the grammar, this file the rest.
 *
 * Three passes over a job file:
 *  1. normalize(): a scanner that mirrors libconfuse's lexer.  It blanks the
 *     comments (libconfuse 3.3 miscounts lines after every comment), escapes
 *     `${` inside double-quoted strings (libconfuse would replace it from the
 *     environment, and gpurun's own ${name} must survive), and records every
 *     `key =` with its line: libconfuse keeps no lines, silently keeps the
 *     last of two equal keys and creates free-form keys on the fly.
 *  2. cfg_parse_buf() on the normalized text, with parse callbacks that check
 *     each typed value as it is read.
 *  3. Checks that need the whole file (duplicates, free-form sections,
 *     contradicting keys, ${name} in `command`), then conversion to the plain
 *     gpurun_job_t.
 * Every check proposes an error with its line; the earliest in the file wins,
 * so the user fixes a file from the top down. */
#include "config.h"

#include <confuse.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "util.h"

#define JOB_FILE_MAX (1024 * 1024)
#define TIMEOUT_MAX (366L * 24 * 3600)
#define SCAN_VALUES_MAX 64 /* values of one scan axis */
#define SCAN_RUNS_MAX 1024 /* combinations of all axes */
#define NEST_MAX 8         /* section depth the scanner follows */
/* libconfuse adds each free-form key with a linear lookup and a realloc of
 * the section's whole option array: quadratic, minutes for the 80,000 keys
 * a 1 MiB file can hold.  Real job files have dozens. */
#define KEYS_MAX 1024
#define SHOWN_MAX 48 /* bytes of a value quoted back in a message */

/* ---- the schema's limits ---------------------------------------------- */

static const struct int_limit {
    const char *key;
    long min, max;
} int_limits[] = {
    {"nodes", 1, 65536},           {"ranks_per_node", 1, 4096}, {"gpus_per_rank", 0, 64},
    {"threads_per_rank", 1, 4096}, {"repeat", 1, 10000},
};

/* Indexed by the enum values of job.h. */
static const char *const launcher_names[] = {[GPURUN_LAUNCHER_AUTO] = "auto",
                                             [GPURUN_LAUNCHER_MPIRUN] = "mpirun",
                                             [GPURUN_LAUNCHER_SRUN] = "srun",
                                             [GPURUN_LAUNCHER_LOCAL] = "local",
                                             NULL};
static const char *const bind_names[] = {
    [GPURUN_BIND_CLOSEST] = "closest", [GPURUN_BIND_NONE] = "none", NULL};
static const char *const gpuvis_names[] = {
    [GPURUN_GPUVIS_ISOLATE] = "isolate", [GPURUN_GPUVIS_SHARED] = "shared", NULL};
static const char *const gpudirect_names[] = {[GPURUN_GPUDIRECT_AUTO] = "auto",
                                              [GPURUN_GPUDIRECT_ON] = "on",
                                              [GPURUN_GPUDIRECT_OFF] = "off",
                                              NULL};

static const struct enum_key {
    const char *key;
    const char *const *names;
} enum_keys[] = {
    {"launcher", launcher_names},
    {"bind", bind_names},
    {"gpu_visibility", gpuvis_names},
    {"gpudirect", gpudirect_names},
};

/* The sections whose keys the user chooses. */
static const char *const free_sections[] = {"params", "env", "slurm", "references"};

/* ---- messages --------------------------------------------------------- */

/* A key or value quoted back in a message: control characters escaped and
 * long ones cut, so that a message never carries what a terminal acts on. */
struct shown {
    char s[SHOWN_MAX * 4 + 8];
};

static const char *shown_n(struct shown *b, const char *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (i >= SHOWN_MAX && (c & 0xc0) != 0x80) { /* cut between UTF-8 characters */
            memcpy(b->s + o, "...", 3);
            o += 3;
            break;
        }
        if (c < 0x20 || c == 0x7f)
            o += (size_t)snprintf(b->s + o, sizeof b->s - o, "\\x%02x", c);
        else
            b->s[o++] = (char)c;
    }
    b->s[o] = '\0';
    return b->s;
}

static const char *shown(struct shown *b, const char *s)
{
    return s ? shown_n(b, s, strlen(s)) : "";
}

/* The closest of `cands` to a misspelt `word`: within two edits, or else a
 * prefix either way; NULL when none is close enough to help. */
static const char *closest(const char *word, const char *const *cands, size_t n)
{
    size_t wl = strlen(word);
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t i = 0; i < n; i++) {
        size_t d = gpurun_edit_distance(word, cands[i]);
        if (d < best_d && d < wl) {
            best = cands[i];
            best_d = d;
        }
    }
    if (best || wl < 3)
        return best;
    for (size_t i = 0; i < n; i++) {
        size_t cl = strlen(cands[i]);
        if (strncmp(word, cands[i], wl < cl ? wl : cl) == 0 && cl >= 3)
            return cands[i];
    }
    return NULL;
}

/* ---- the parse context ------------------------------------------------ */

/* When two errors sit on one line, the lower rank is reported: what
 * libconfuse would silently misread (a key like "scan|nodes", an unquoted
 * ${X}) comes first, then libconfuse's own errors, then the scanner's, so
 * that an unterminated string beats libconfuse's "premature end of file". */
enum rank { RANK_MISREAD, RANK_CONFUSE, RANK_LEXICAL, RANK_EOF, RANK_CHECK };

/* One `key =` or `key {` of the file, as the scanner saw it. */
struct record {
    char *name;      /* dotted: "scan.nodes" */
    char *section;   /* "" at the top level */
    const char *key; /* points into name */
    int line;
    bool is_section;
    bool list; /* the value was a {list} */
};

struct parse_ctx {
    const char *label;
    /* The error to report: the earliest one in the file. */
    bool failed;
    int err_line;
    enum rank err_rank;
    char err_text[1536];
    /* libconfuse's first report: later ones are follow-ups, and a section's
     * parent reports with its own stale line. */
    bool cf_failed;
    int cf_line;
    enum rank cf_rank;
    char cf_text[1536];
    /* Where the scanner lost track of the grammar: libconfuse should say
     * why; if it does not, this is the error. */
    int broken_line;
    char broken_tok[sizeof(struct shown)];

    struct record *recs;
    size_t nrecs, caprecs;
    struct record **sorted; /* by name, then file order */
};

/* libconfuse 3.3 gives its callbacks no user-data pointer and its lexer is
 * global state, so two parses can never overlap: the context of the parse
 * in progress lives here, set and cleared around cfg_parse_buf(). */
static struct parse_ctx *parsing;

/* Propose an error: kept if it is the earliest so far. */
__attribute__((format(printf, 4, 5))) static void note(struct parse_ctx *ctx, int line,
                                                       enum rank rank, const char *fmt, ...)
{
    if (ctx->failed && (line > ctx->err_line || (line == ctx->err_line && rank >= ctx->err_rank)))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err_text, sizeof ctx->err_text, fmt, ap);
    va_end(ap);
    ctx->failed = true;
    ctx->err_line = line;
    ctx->err_rank = rank;
}

/* An error found while libconfuse parses: only the first one counts. */
__attribute__((format(printf, 4, 5))) static void cf_note(struct parse_ctx *ctx, int line,
                                                          enum rank rank, const char *fmt, ...)
{
    if (ctx->cf_failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->cf_text, sizeof ctx->cf_text, fmt, ap);
    va_end(ap);
    ctx->cf_failed = true;
    ctx->cf_line = line;
    ctx->cf_rank = rank;
}

/* ---- pass 1: the scanner ---------------------------------------------- */

enum tok { T_WORD, T_STR, T_LBRACE, T_RBRACE, T_EQ, T_PLUSEQ, T_COMMA, T_PAREN };

/* libconfuse's grammar, as far as records need it. */
enum gstate { G_KEY, G_AFTER_KEY, G_VALUE, G_LIST_VALUE, G_LIST_SEP };

struct scanner {
    struct parse_ctx *ctx;
    const char *in;
    size_t len, i;
    char *out;
    size_t olen;
    int line;

    enum gstate state;
    char *key; /* the key being assigned */
    int key_line;
    size_t tok_out; /* where the token given to grammar() starts in the output */
    size_t key_out; /* where the key starts there */
    bool stop;      /* the output ends at `stop_at`: libconfuse must not see the rest */
    size_t stop_at;
    size_t rec; /* its record */
    char *path[NEST_MAX];
    size_t path_rec[NEST_MAX];
    int depth;
    bool broken; /* lost track: libconfuse reports the error */
};

static bool env_name_ok(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return false;
    return true;
}

/* Keys are names: no `|` or `=` for libconfuse to read as a path into
 * another section, nothing ${name} could not spell. */
static bool key_name_ok(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '.' || *s == '-'))
            return false;
    return true;
}

/* The sections the scanner is in, dotted: "" at the top level. */
static char *section_path(const struct scanner *sc)
{
    size_t plen = 0;
    for (int d = 0; d < sc->depth; d++)
        plen += strlen(sc->path[d]) + 1;
    char *section = gpurun_xmalloc(plen + 1);
    section[0] = '\0';
    for (int d = 0; d < sc->depth; d++) {
        if (d)
            strcat(section, ".");
        strcat(section, sc->path[d]);
    }
    return section;
}

static size_t add_record(struct scanner *sc, bool is_section)
{
    struct parse_ctx *ctx = sc->ctx;
    if (ctx->nrecs == KEYS_MAX) {
        struct shown a;
        char *section = section_path(sc);
        note(ctx, sc->key_line, RANK_MISREAD, "key '%s%s%s': more than %d keys in the file",
             section, *section ? "." : "", shown(&a, sc->key), KEYS_MAX);
        free(section);
        sc->stop = true;
        sc->stop_at = sc->key_out;
        sc->broken = true;
        return 0;
    }
    if (ctx->nrecs == ctx->caprecs) {
        ctx->caprecs = ctx->caprecs ? 2 * ctx->caprecs : 32;
        ctx->recs = gpurun_xrealloc(ctx->recs, ctx->caprecs * sizeof *ctx->recs);
    }
    char *section = section_path(sc);
    struct record *r = &ctx->recs[ctx->nrecs];
    r->section = section;
    r->name = section[0] ? gpurun_xasprintf("%s.%s", section, sc->key) : gpurun_xstrdup(sc->key);
    r->key = r->name + (section[0] ? strlen(section) + 1 : 0);
    r->line = sc->key_line;
    r->is_section = is_section;
    r->list = false;

    struct shown a;
    if (strcmp(section, "env") == 0 && !env_name_ok(r->key))
        note(ctx, r->line, RANK_MISREAD, "key '%s': not a valid environment variable name",
             shown(&a, r->name));
    else if (!key_name_ok(r->key))
        note(
            ctx, r->line, RANK_MISREAD,
            "key '%s': not a valid key name (a letter or '_', then letters, digits, '_', '.', '-')",
            shown(&a, r->name));
    return ctx->nrecs++;
}

static void grammar(struct scanner *sc, enum tok t, const char *s, size_t n, int line)
{
    if (sc->broken)
        return;
    switch (sc->state) {
    case G_KEY:
        if (t == T_WORD || t == T_STR) {
            free(sc->key);
            sc->key = gpurun_xstrndup(s, n);
            sc->key_line = line;
            sc->key_out = sc->tok_out;
            sc->state = G_AFTER_KEY;
            return;
        }
        if (t == T_RBRACE && sc->depth > 0) {
            free(sc->path[--sc->depth]);
            return;
        }
        break;
    case G_AFTER_KEY:
        if (t == T_EQ || t == T_PLUSEQ) {
            sc->rec = add_record(sc, false);
            sc->state = G_VALUE;
            return;
        }
        if (t == T_LBRACE && sc->depth < NEST_MAX) {
            sc->path_rec[sc->depth] = add_record(sc, true);
            if (sc->stop)
                return;
            sc->path[sc->depth++] = sc->key;
            sc->key = NULL;
            sc->state = G_KEY;
            return;
        }
        break;
    case G_VALUE:
        if (t == T_WORD || t == T_STR) {
            sc->state = G_KEY;
            return;
        }
        if (t == T_LBRACE) {
            sc->ctx->recs[sc->rec].list = true;
            sc->state = G_LIST_VALUE;
            return;
        }
        break;
    case G_LIST_VALUE:
    case G_LIST_SEP:
        if (t == T_RBRACE) {
            sc->state = G_KEY;
            return;
        }
        if (sc->state == G_LIST_VALUE && (t == T_WORD || t == T_STR)) {
            sc->state = G_LIST_SEP;
            return;
        }
        if (sc->state == G_LIST_SEP && t == T_COMMA) {
            sc->state = G_LIST_VALUE;
            return;
        }
        break;
    }
    struct shown a;
    sc->broken = true;
    sc->ctx->broken_line = line;
    snprintf(sc->ctx->broken_tok, sizeof sc->ctx->broken_tok, "%s", shown_n(&a, s, n));
}

static void emit(struct scanner *sc, char c)
{
    sc->out[sc->olen++] = c;
}

static char peek(const struct scanner *sc, size_t k)
{
    return sc->i + k < sc->len ? sc->in[sc->i + k] : '\0';
}

/* A NUL would end the text for libconfuse: report it, pass a space. */
static void copy_char(struct scanner *sc)
{
    char c = sc->in[sc->i++];
    if (c == '\0') {
        note(sc->ctx, sc->line, RANK_LEXICAL, "NUL byte in the file");
        c = ' ';
    } else if (c == '\n') {
        sc->line++;
    }
    emit(sc, c);
}

/* Comments become blanks, line breaks stay: libconfuse never sees one. */
static void skip_comment(struct scanner *sc, bool block)
{
    int start = sc->line;
    if (!block) {
        while (sc->i < sc->len && sc->in[sc->i] != '\n') {
            emit(sc, ' ');
            sc->i++;
        }
        return;
    }
    emit(sc, ' ');
    emit(sc, ' ');
    sc->i += 2;
    while (sc->i < sc->len) {
        if (sc->in[sc->i] == '*' && peek(sc, 1) == '/') {
            emit(sc, ' ');
            emit(sc, ' ');
            sc->i += 2;
            return;
        }
        if (sc->in[sc->i] == '\n') {
            copy_char(sc);
        } else {
            emit(sc, ' ');
            sc->i++;
        }
    }
    note(sc->ctx, start, RANK_LEXICAL, "unterminated comment: the '/*' here is never closed");
}

/* A quoted string, copied.  In double quotes libconfuse replaces ${VAR}
 * (up to the next '}', even past the closing quote) from the environment,
 * an unset VAR by nothing; `\$` is its escape for a plain '$', so every `${`
 * becomes `\${` and reaches the value unchanged. */
static void scan_string(struct scanner *sc)
{
    char quote = sc->in[sc->i];
    int start = sc->line;
    size_t from = sc->i + 1, out_from = sc->olen;
    emit(sc, quote);
    sc->i++;
    while (sc->i < sc->len) {
        char c = sc->in[sc->i];
        if (c == quote) {
            emit(sc, quote);
            sc->i++;
            sc->tok_out = out_from;
            grammar(sc, T_STR, sc->in + from, sc->i - 1 - from, start);
            return;
        }
        if (c == '\\' && sc->i + 1 < sc->len) { /* an escape: two characters, whatever they are */
            emit(sc, c);
            sc->i++;
            copy_char(sc);
        } else if (quote == '"' && c == '$' && peek(sc, 1) == '{') {
            emit(sc, '\\');
            emit(sc, '$');
            emit(sc, '{');
            sc->i += 2;
        } else {
            copy_char(sc);
        }
    }
    note(sc->ctx, start, RANK_LEXICAL, "unterminated string: the %s here is never closed",
         quote == '"' ? "'\"'" : "\"'\"");
    /* A '\' before the end would meet no rule of libconfuse's lexer, and
     * flex's default copies such input to stdout. */
    sc->stop = true;
    sc->stop_at = out_from;
}

/* Where the scanner stands at the end of the file. */
static void scan_end(struct scanner *sc)
{
    if (sc->broken || sc->stop)
        return;
    struct parse_ctx *ctx = sc->ctx;
    struct shown a;
    if (sc->state == G_AFTER_KEY) {
        char *section = section_path(sc);
        note(ctx, sc->key_line, RANK_LEXICAL,
             "key '%s%s%s': '=' and a value missing at the end of the file", section,
             *section ? "." : "", shown(&a, sc->key));
        free(section);
    } else if (sc->state == G_VALUE) {
        const struct record *r = &ctx->recs[sc->rec];
        note(ctx, r->line, RANK_LEXICAL, "key '%s': value missing at the end of the file",
             shown(&a, r->name));
    } else if (sc->state == G_LIST_VALUE || sc->state == G_LIST_SEP) {
        const struct record *r = &ctx->recs[sc->rec];
        note(ctx, r->line, RANK_LEXICAL, "key '%s': list not closed ('}' missing)",
             shown(&a, r->name));
    } else if (sc->depth > 0) {
        const struct record *r = &ctx->recs[sc->path_rec[sc->depth - 1]];
        note(ctx, r->line, RANK_LEXICAL, "key '%s': section not closed ('}' missing)",
             shown(&a, r->name));
    }
}

static char *normalize(struct parse_ctx *ctx, const char *text, size_t len)
{
    struct scanner sc = {.ctx = ctx, .in = text, .len = len, .line = 1, .state = G_KEY};
    /* `${` grows by one byte: 3 per 2 at worst. */
    sc.out = gpurun_xmalloc(len + len / 2 + 2);

    while (sc.i < len && !sc.stop) {
        char c = text[sc.i];
        if (c == '#' || (c == '/' && peek(&sc, 1) == '/')) {
            skip_comment(&sc, false);
        } else if (c == '/' && peek(&sc, 1) == '*') {
            skip_comment(&sc, true);
        } else if (c == '"' || c == '\'') {
            scan_string(&sc);
        } else if (c == '+' && peek(&sc, 1) == '=') {
            sc.tok_out = sc.olen;
            grammar(&sc, T_PLUSEQ, text + sc.i, 2, sc.line);
            emit(&sc, '+');
            emit(&sc, '=');
            sc.i += 2;
        } else if (c != '\0' && strchr("{}=,()", c)) {
            sc.tok_out = sc.olen;
            grammar(&sc,
                    c == '{'   ? T_LBRACE
                    : c == '}' ? T_RBRACE
                    : c == '=' ? T_EQ
                    : c == ',' ? T_COMMA
                               : T_PAREN,
                    text + sc.i, 1, sc.line);
            copy_char(&sc);
        } else if (c != '\0' && strchr(" \t\r\n+*", c)) {
            copy_char(&sc); /* libconfuse skips these (a lone '+' or '*' too) */
        } else {
            /* An unquoted word: up to a character libconfuse's word rule
             * excludes; '/' belongs to it ("http://host/x"), except where
             * it opens a comment. */
            size_t from = sc.i, out_from = sc.olen;
            int line = sc.line;
            const char *end = NULL;
            while (sc.i < len) {
                c = text[sc.i];
                if (c != '\0' && strchr(" \t\r\n#\"'={}()+,*", c))
                    break;
                if (c == '/' && peek(&sc, 1) == '*')
                    break;
                if (c == '$' && peek(&sc, 1) == '{') {
                    /* libconfuse would replace it from the environment */
                    struct shown a, b;
                    end = memchr(text + sc.i, '}', len - sc.i);
                    shown_n(&b, text + sc.i, end ? (size_t)(end - (text + sc.i)) + 1 : 2);
                    if (sc.state == G_VALUE || sc.state == G_LIST_VALUE)
                        note(ctx, line, RANK_MISREAD,
                             "key '%s': %s must be in double quotes: \"%s\"",
                             shown(&a, ctx->recs[sc.rec].name), b.s, b.s);
                    else
                        note(ctx, line, RANK_MISREAD, "%s must be in double quotes: \"%s\"", b.s,
                             b.s);
                    /* ...as one token up to the '}' where the word starts with it */
                    if (sc.i == from && end) {
                        while (text + sc.i <= end)
                            copy_char(&sc);
                        break;
                    }
                }
                copy_char(&sc);
            }
            sc.tok_out = out_from;
            grammar(&sc, T_WORD, text + from, sc.i - from, line);
        }
    }
    if (sc.stop)
        sc.olen = sc.stop_at;
    sc.out[sc.olen] = '\0';
    scan_end(&sc);
    free(sc.key);
    for (int d = 0; d < sc.depth; d++)
        free(sc.path[d]);
    return sc.out;
}

static int record_cmp(const void *a, const void *b)
{
    const struct record *x = *(const struct record *const *)a,
                        *y = *(const struct record *const *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x < y ? -1 : x > y);
}

static void sort_records(struct parse_ctx *ctx)
{
    ctx->sorted = gpurun_xcalloc(ctx->nrecs, sizeof *ctx->sorted);
    for (size_t i = 0; i < ctx->nrecs; i++)
        ctx->sorted[i] = &ctx->recs[i];
    qsort(ctx->sorted, ctx->nrecs, sizeof *ctx->sorted, record_cmp);
}

/* The last record of `name`, NULL when the file does not set it. */
static const struct record *find_record(const struct parse_ctx *ctx, const char *name)
{
    size_t lo = 0, hi = ctx->nrecs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(ctx->sorted[mid]->name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct record *r = NULL;
    for (; lo < ctx->nrecs && strcmp(ctx->sorted[lo]->name, name) == 0; lo++)
        r = ctx->sorted[lo];
    return r;
}

static int record_line(const struct parse_ctx *ctx, const char *name)
{
    const struct record *r = find_record(ctx, name);
    return r ? r->line : 0;
}

/* ---- pass 2: libconfuse ----------------------------------------------- */

/* "scan." inside scan{}, "" at the top level. */
static const char *section_prefix(cfg_t *cfg, char *buf, size_t size)
{
    const char *name = cfg_name(cfg);
    if (!name || strcmp(name, "root") == 0)
        return "";
    snprintf(buf, size, "%s.", name);
    return buf;
}

static const char *va_string(va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    const char *s = va_arg(aq, const char *);
    va_end(aq);
    return s ? s : "";
}

/* libconfuse's messages, rewritten as `key 'KEY': WHAT`.  Its format
 * strings are compared untranslated: nothing here calls setlocale(). */
static void on_confuse_error(cfg_t *cfg, const char *fmt, va_list ap)
{
    struct parse_ctx *ctx = parsing;
    if (!ctx || ctx->cf_failed)
        return;
    /* libconfuse 3.3 looks every free-form key up as a known option first
     * and reports the miss before it creates the key. */
    if ((cfg->flags & CFGF_KEYSTRVAL) &&
        (strcmp(fmt, "no such option '%s'") == 0 || strncmp(fmt, "no sub-section", 14) == 0))
        return;

    char pbuf[64];
    const char *prefix = section_prefix(cfg, pbuf, sizeof pbuf);
    int line = cfg->line;
    struct shown a, b;

    if (strcmp(fmt, "no such option '%s'") == 0) {
        const char *name = va_string(ap);
        size_t n = 0;
        while (cfg->opts[n].name)
            n++;
        const char **cands = gpurun_xcalloc(n, sizeof *cands);
        for (size_t i = 0; i < n; i++)
            cands[i] = cfg->opts[i].name;
        const char *near = closest(name, cands, n);
        if (near)
            cf_note(ctx, line, RANK_CONFUSE, "unknown key '%s%s' (did you mean '%s%s'?)", prefix,
                    shown(&a, name), prefix, near);
        else
            cf_note(ctx, line, RANK_CONFUSE, "unknown key '%s%s'", prefix, shown(&a, name));
        free(cands);
    } else if (strcmp(fmt, "missing equal sign after option '%s'") == 0) {
        cf_note(ctx, line, RANK_CONFUSE, "key '%s%s': '=' missing after the key", prefix,
                shown(&a, va_string(ap)));
    } else if (strcmp(fmt, "missing opening brace for section '%s'") == 0) {
        const char *name = va_string(ap);
        cf_note(ctx, line, RANK_CONFUSE, "key '%s%s': a section, written %s { ... }", prefix,
                shown(&a, name), shown(&b, name));
    } else if (strcmp(fmt, "attempt to append to non-list option '%s'") == 0) {
        cf_note(ctx, line, RANK_CONFUSE, "key '%s%s': '+=' appends to a list, this is not one",
                prefix, shown(&a, va_string(ap)));
    } else if (strcmp(fmt, "unexpected closing brace") == 0) {
        cf_note(ctx, line, RANK_CONFUSE, "'}' without a section to close");
    } else if (strcmp(fmt, "unexpected token '%s'") == 0) {
        const char *tok = va_string(ap);
        /* `nodes = {1, 2}`: the scanner saw which key got the list */
        for (size_t i = 0; i < ctx->nrecs; i++) {
            const struct record *r = &ctx->recs[i];
            if (r->line == line && r->list && strcmp(tok, "{") == 0 &&
                strcmp(r->section, "scan") != 0) {
                cf_note(ctx, line, RANK_CONFUSE, "key '%s': expected one value, not a list",
                        shown(&a, r->name));
                return;
            }
        }
        cf_note(ctx, line, RANK_CONFUSE, "syntax error at '%s'", shown(&a, tok));
    } else if (strcmp(fmt, "premature end of file") == 0) {
        cf_note(ctx, line, RANK_EOF, "unexpected end of the file");
    } else if (strcmp(fmt, "unterminated string constant") == 0) {
        cf_note(ctx, line, RANK_EOF, "unterminated string");
    } else {
        char msg[512];
        vsnprintf(msg, sizeof msg, fmt, ap);
        cf_note(ctx, line, RANK_CONFUSE, "%s", shown(&a, msg));
    }
}

/* A parse callback's error: `key 'KEY': WHAT` on the value's line. */
__attribute__((format(printf, 3, 4))) static int value_error(cfg_t *cfg, cfg_opt_t *opt,
                                                             const char *fmt, ...)
{
    if (!parsing)
        return -1;
    char pbuf[64], what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    cf_note(parsing, cfg->line, RANK_CONFUSE, "key '%s%s': %s",
            section_prefix(cfg, pbuf, sizeof pbuf), cfg_opt_name(opt), what);
    return -1;
}

/* Decimal only: libconfuse's strtol(..., 0) would read "010" as 8. */
static int parse_long(const char *s, long *out)
{
    const char *p = s;
    if (*p == '-')
        p++;
    if (*p < '0' || *p > '9')
        return -1;
    for (; *p; p++)
        if (*p < '0' || *p > '9')
            return -1;
    errno = 0;
    long v = strtol(s, NULL, 10);
    if (errno == ERANGE)
        return -2;
    *out = v;
    return 0;
}

static int cb_int(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    const struct int_limit *lim = NULL;
    for (size_t i = 0; i < sizeof int_limits / sizeof *int_limits; i++)
        if (strcmp(int_limits[i].key, cfg_opt_name(opt)) == 0)
            lim = &int_limits[i];
    struct shown a;
    long v;
    int rc = parse_long(value ? value : "", &v);
    if (rc == -1)
        return value_error(cfg, opt, "expected an integer, got '%s'", shown(&a, value));
    if (rc == -2 || !lim || v < lim->min || v > lim->max)
        return value_error(cfg, opt, "%s is out of range (%ld to %ld)", shown(&a, value),
                           lim ? lim->min : 0, lim ? lim->max : 0);
    *(long *)result = v;
    return 0;
}

static int cb_enum(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    const char *const *names = NULL;
    for (size_t i = 0; i < sizeof enum_keys / sizeof *enum_keys; i++)
        if (strcmp(enum_keys[i].key, cfg_opt_name(opt)) == 0)
            names = enum_keys[i].names;
    size_t n = 0;
    while (names && names[n]) {
        if (value && strcmp(value, names[n]) == 0) {
            *(long *)result = (long)n;
            return 0;
        }
        n++;
    }
    char list[256] = "";
    for (size_t i = 0; i < n; i++) {
        strncat(list, names[i], sizeof list - strlen(list) - 1);
        if (i + 1 < n)
            strncat(list, ", ", sizeof list - strlen(list) - 1);
    }
    struct shown a;
    const char *near = value ? closest(value, names, n) : NULL;
    if (near)
        return value_error(cfg, opt, "'%s' is not one of %s (did you mean '%s'?)", shown(&a, value),
                           list, near);
    return value_error(cfg, opt, "'%s' is not one of %s", shown(&a, value), list);
}

static int cb_bool(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    struct shown a;
    int b = value ? cfg_parse_boolean(value) : -1;
    if (b < 0)
        return value_error(cfg, opt, "expected true or false, got '%s'", shown(&a, value));
    *(int *)result = b;
    return 0;
}

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

/* Seconds in "90", "90s", "30m", "1h30m", "2d12h", "01:00:00", "45:00",
 * "1-00:00:00"; 0 and "none" mean no limit.  -1: not a duration. */
static int parse_duration(const char *s, long *out)
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

static int cb_timeout(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    struct shown a;
    long secs;
    if (!value || parse_duration(value, &secs) < 0)
        return value_error(
            cfg, opt,
            "expected a duration such as \"30m\", \"1h30m\", \"90s\", \"01:00:00\" or "
            "\"none\", got '%s'",
            shown(&a, value));
    if (secs > TIMEOUT_MAX)
        return value_error(cfg, opt, "'%s' is out of range (at most 366 days)", shown(&a, value));
    *(long *)result = secs;
    return 0;
}

/* ---- pass 3: checks that need the whole file --------------------------- */

static void check_duplicates(struct parse_ctx *ctx)
{
    struct shown a;
    for (size_t i = 1; i < ctx->nrecs; i++) {
        const struct record *r = ctx->sorted[i], *first = ctx->sorted[i - 1];
        if (strcmp(r->name, first->name) == 0)
            note(ctx, r->line, RANK_CHECK, "key '%s': given twice (first on line %d)",
                 shown(&a, r->name), first->line);
    }
}

static void check_string(struct parse_ctx *ctx, const char *name, const char *value, bool nonempty)
{
    int line = record_line(ctx, name);
    if (!line || !value)
        return;
    struct shown a;
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            note(ctx, line, RANK_CHECK, "key '%s': control character 0x%02x%s in the value",
                 shown(&a, name), *p,
                 *p == '\n'   ? " (line break)"
                 : *p == '\t' ? " (tab)"
                 : *p == '\r' ? " (carriage return)"
                              : "");
            return;
        }
    }
    if (nonempty && !*value)
        note(ctx, line, RANK_CHECK, "key '%s': empty value", shown(&a, name));
}

/* The job name names the results folder. */
static bool job_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 100 || s[0] == '.' || s[0] == '-')
        return false;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              strchr("._+-", *s)))
            return false;
    return true;
}

static const char *const string_keys[] = {"job", "template", "command", "site", "results"};

static void check_strings(struct parse_ctx *ctx, cfg_t *cfg)
{
    for (size_t i = 0; i < sizeof string_keys / sizeof *string_keys; i++)
        check_string(ctx, string_keys[i], cfg_getstr(cfg, string_keys[i]), true);
    const char *job = cfg_getstr(cfg, "job");
    int line = record_line(ctx, "job");
    struct shown a;
    if (line && job && *job && !job_name_ok(job))
        note(ctx, line, RANK_CHECK,
             "key 'job': '%s' is not a valid job name (letters, digits, '.', '_', '+', '-'; it "
             "names "
             "the results folder)",
             shown(&a, job));

    for (size_t s = 0; s < sizeof free_sections / sizeof *free_sections; s++) {
        cfg_t *sec = cfg_getsec(cfg, free_sections[s]);
        unsigned n = sec ? cfg_num(sec) : 0;
        for (unsigned i = 0; i < n; i++) {
            cfg_opt_t *opt = cfg_getnopt(sec, i);
            char *name = gpurun_xasprintf("%s.%s", free_sections[s], cfg_opt_name(opt));
            check_string(ctx, name, cfg_opt_getnstr(opt, 0), false);
            free(name);
        }
    }
}

/* Two keys that cannot both hold: reported on the later one's line. */
__attribute__((format(printf, 4, 5))) static void
contradiction(struct parse_ctx *ctx, const char *k1, const char *k2, const char *why_fmt, ...)
{
    int l1 = record_line(ctx, k1), l2 = record_line(ctx, k2);
    if (!l1 || !l2)
        return;
    char why[512];
    va_list ap;
    va_start(ap, why_fmt);
    vsnprintf(why, sizeof why, why_fmt, ap);
    va_end(ap);
    if (l2 >= l1)
        note(ctx, l2, RANK_CHECK, "key '%s': contradicts '%s' on line %d: %s", k2, k1, l1, why);
    else
        note(ctx, l1, RANK_CHECK, "key '%s': contradicts '%s' on line %d: %s", k1, k2, l2, why);
}

static const char *const scan_keys[] = {"nodes", "ranks_per_node", "gpus_per_rank",
                                        "threads_per_rank"};

static bool repeated_value(cfg_opt_t *opt, long *v)
{
    unsigned n = cfg_opt_size(opt);
    for (unsigned i = 0; i < n; i++)
        for (unsigned j = 0; j < i; j++)
            if (cfg_opt_getnint(opt, i) == cfg_opt_getnint(opt, j)) {
                *v = cfg_opt_getnint(opt, i);
                return true;
            }
    return false;
}

static void check_scan(struct parse_ctx *ctx, cfg_t *cfg)
{
    cfg_t *scan = cfg_getsec(cfg, "scan");
    size_t runs = 1;
    for (size_t k = 0; scan && k < sizeof scan_keys / sizeof *scan_keys; k++) {
        char name[64];
        snprintf(name, sizeof name, "scan.%s", scan_keys[k]);
        int line = record_line(ctx, name);
        if (!line)
            continue;
        cfg_opt_t *opt = cfg_getopt(scan, scan_keys[k]);
        unsigned n = cfg_opt_size(opt);
        if (n == 0) {
            note(ctx, line, RANK_CHECK, "key '%s': empty list", name);
            continue;
        }
        if (n > SCAN_VALUES_MAX) {
            note(ctx, line, RANK_CHECK, "key '%s': %u values, more than the %d allowed", name, n,
                 SCAN_VALUES_MAX);
            continue;
        }
        long twice;
        if (repeated_value(opt, &twice))
            note(ctx, line, RANK_CHECK, "key '%s': %ld listed twice", name, twice);
        runs *= n;
        if (runs > SCAN_RUNS_MAX) {
            note(ctx, line, RANK_CHECK, "key '%s': the scan makes more than %d runs", name,
                 SCAN_RUNS_MAX);
            break;
        }
    }
}

static bool list_has(cfg_t *scan, const char *key, bool (*pred)(long))
{
    cfg_opt_t *opt = scan ? cfg_getopt(scan, key) : NULL;
    for (unsigned i = 0; opt && i < cfg_opt_size(opt); i++)
        if (pred(cfg_opt_getnint(opt, i)))
            return true;
    return false;
}

static bool more_than_one(long v)
{
    return v > 1;
}

static bool is_zero(long v)
{
    return v == 0;
}

static void check_contradictions(struct parse_ctx *ctx, cfg_t *cfg)
{
    cfg_t *scan = cfg_getsec(cfg, "scan");
    contradiction(ctx, "template", "command", "a job runs a template or a command, not both");
    if (cfg_getint(cfg, "launcher") == GPURUN_LAUNCHER_LOCAL) {
        if (cfg_getint(cfg, "nodes") > 1)
            contradiction(ctx, "launcher", "nodes",
                          "launcher \"local\" runs on this node only, nodes = %ld",
                          cfg_getint(cfg, "nodes"));
        if (list_has(scan, "nodes", more_than_one))
            contradiction(
                ctx, "launcher", "scan.nodes",
                "launcher \"local\" runs on this node only, the scan asks for more nodes");
    }
    if (cfg_getint(cfg, "gpu_visibility") == GPURUN_GPUVIS_SHARED) {
        if (cfg_getint(cfg, "gpus_per_rank") == 0)
            contradiction(ctx, "gpu_visibility", "gpus_per_rank",
                          "\"shared\" chooses a GPU for each rank, gpus_per_rank = 0");
        if (list_has(scan, "gpus_per_rank", is_zero))
            contradiction(ctx, "gpu_visibility", "scan.gpus_per_rank",
                          "\"shared\" chooses a GPU for each rank, the scan has gpus_per_rank = 0");
    }
}

/* `command` without a template: every ${name} must be a params key or a
 * job key.  (With a template, its defaults may supply names: checked when
 * the template is read.) */
static void check_command_names(struct parse_ctx *ctx, cfg_t *cfg)
{
    const char *cmd = cfg_getstr(cfg, "command");
    int line = record_line(ctx, "command");
    if (!cmd || !line || cfg_getstr(cfg, "template"))
        return;

    cfg_t *params = cfg_getsec(cfg, "params");
    size_t nparams = params ? cfg_num(params) : 0, n = 0;
    size_t nopts = 0;
    while (cfg->opts[nopts].name)
        nopts++;
    const char **names = gpurun_xcalloc(nparams + nopts, sizeof *names);
    for (size_t i = 0; i < nparams; i++)
        names[n++] = cfg_opt_name(cfg_getnopt(params, (unsigned)i));
    for (size_t i = 0; i < nopts; i++)
        if (cfg->opts[i].type != CFGT_SEC)
            names[n++] = cfg->opts[i].name;

    struct shown a;
    for (const char *p = strstr(cmd, "${"); p; p = strstr(p, "${")) {
        const char *end = strchr(p + 2, '}');
        if (!end) {
            note(ctx, line, RANK_CHECK, "key 'command': '${' without a closing '}'");
            break;
        }
        if (end == p + 2) {
            note(ctx, line, RANK_CHECK, "key 'command': empty '${}'");
            break;
        }
        char *name = gpurun_xstrndup(p + 2, (size_t)(end - p - 2));
        bool known = false;
        for (size_t i = 0; i < n && !known; i++)
            known = strcmp(name, names[i]) == 0;
        if (!known) {
            const char *near = closest(name, names, n);
            if (near)
                note(ctx, line, RANK_CHECK,
                     "key 'command': '${%s}' is unset: no params key or job key of that name (did "
                     "you mean '%s'?)",
                     shown(&a, name), near);
            else
                note(ctx, line, RANK_CHECK,
                     "key 'command': '${%s}' is unset: no params key or job key of that name",
                     shown(&a, name));
        }
        free(name);
        if (!known)
            break;
        p = end + 1;
    }
    free(names);
}

/* ---- conversion ------------------------------------------------------- */

static void take_kvlist(cfg_t *cfg, const char *section, struct gpurun_kvlist *kv)
{
    cfg_t *sec = cfg_getsec(cfg, section);
    unsigned n = sec ? cfg_num(sec) : 0;
    kv->items = gpurun_xcalloc(n, sizeof *kv->items);
    kv->n = 0;
    for (unsigned i = 0; i < n; i++) {
        cfg_opt_t *opt = cfg_getnopt(sec, i);
        const char *value = cfg_opt_getnstr(opt, 0);
        if (!value)
            continue;
        kv->items[kv->n].key = gpurun_xstrdup(cfg_opt_name(opt));
        kv->items[kv->n].value = gpurun_xstrdup(value);
        kv->n++;
    }
}

/* Axes in the order of the file: the sweep nests as the user wrote it. */
static void take_scan(const struct parse_ctx *ctx, cfg_t *cfg, gpurun_job_t *job)
{
    cfg_t *scan = cfg_getsec(cfg, "scan");
    job->scan = gpurun_xcalloc(sizeof scan_keys / sizeof *scan_keys, sizeof *job->scan);
    for (size_t i = 0; scan && i < ctx->nrecs; i++) {
        const struct record *r = &ctx->recs[i];
        if (strcmp(r->section, "scan") != 0 || r->is_section)
            continue;
        cfg_opt_t *opt = cfg_getopt(scan, r->key);
        struct gpurun_scan_axis *ax = &job->scan[job->nscan++];
        ax->key = gpurun_xstrdup(r->key);
        ax->n = cfg_opt_size(opt);
        ax->values = gpurun_xcalloc(ax->n, sizeof *ax->values);
        for (size_t v = 0; v < ax->n; v++)
            ax->values[v] = cfg_opt_getnint(opt, (unsigned)v);
    }
}

static char *opt_strdup(const char *s)
{
    return s ? gpurun_xstrdup(s) : NULL;
}

static gpurun_job_t *convert(const struct parse_ctx *ctx, cfg_t *cfg, const char *label)
{
    gpurun_job_t *job = gpurun_xcalloc(1, sizeof *job);
    job->path = gpurun_xstrdup(label);
    const char *slash = strrchr(label, '/');
    job->dir = !slash           ? gpurun_xstrdup(".")
               : slash == label ? gpurun_xstrdup("/")
                                : gpurun_xstrndup(label, (size_t)(slash - label));
    if (cfg_getstr(cfg, "job")) {
        job->name = gpurun_xstrdup(cfg_getstr(cfg, "job"));
    } else {
        const char *base = slash ? slash + 1 : label;
        size_t n = strlen(base);
        if (n > 5 && strcmp(base + n - 5, ".conf") == 0)
            n -= 5;
        job->name = n ? gpurun_xstrndup(base, n) : gpurun_xstrdup("job");
    }
    job->template_name = opt_strdup(cfg_getstr(cfg, "template"));
    job->command = opt_strdup(cfg_getstr(cfg, "command"));
    job->site = opt_strdup(cfg_getstr(cfg, "site"));
    job->nodes = (int)cfg_getint(cfg, "nodes");
    job->ranks_per_node = (int)cfg_getint(cfg, "ranks_per_node");
    job->gpus_per_rank = (int)cfg_getint(cfg, "gpus_per_rank");
    job->threads_per_rank = (int)cfg_getint(cfg, "threads_per_rank");
    job->smt = cfg_getbool(cfg, "smt");
    job->oversubscribe = cfg_getbool(cfg, "oversubscribe");
    job->launcher = (enum gpurun_launcher)cfg_getint(cfg, "launcher");
    job->bind = (enum gpurun_bind)cfg_getint(cfg, "bind");
    job->gpu_visibility = (enum gpurun_gpu_visibility)cfg_getint(cfg, "gpu_visibility");
    job->gpudirect = (enum gpurun_gpudirect)cfg_getint(cfg, "gpudirect");
    job->timeout_s = cfg_getint(cfg, "timeout");
    job->repeat = (int)cfg_getint(cfg, "repeat");
    job->results = gpurun_xstrdup(cfg_getstr(cfg, "results"));
    take_kvlist(cfg, "params", &job->params);
    take_kvlist(cfg, "env", &job->env);
    take_kvlist(cfg, "slurm", &job->slurm);
    take_kvlist(cfg, "references", &job->references);
    take_scan(ctx, cfg, job);
    return job;
}

/* ---- entry points ----------------------------------------------------- */

int gpurun_job_parse(const char *text, size_t len, const char *label, gpurun_job_t **jobp,
                     gpurun_error_t *err)
{
    /* The schema.  Local: cfg_init() copies it. */
    cfg_opt_t scan_opts[] = {
        CFG_INT_LIST_CB("nodes", NULL, CFGF_NONE, cb_int),
        CFG_INT_LIST_CB("ranks_per_node", NULL, CFGF_NONE, cb_int),
        CFG_INT_LIST_CB("gpus_per_rank", NULL, CFGF_NONE, cb_int),
        CFG_INT_LIST_CB("threads_per_rank", NULL, CFGF_NONE, cb_int),
        CFG_END(),
    };
    cfg_opt_t opts[] = {
        CFG_STR("job", NULL, CFGF_NONE),
        CFG_STR("template", NULL, CFGF_NONE),
        CFG_STR("command", NULL, CFGF_NONE),
        CFG_STR("site", NULL, CFGF_NONE),
        CFG_INT_CB("nodes", 1, CFGF_NONE, cb_int),
        CFG_INT_CB("ranks_per_node", GPURUN_UNSET, CFGF_NONE, cb_int),
        CFG_INT_CB("gpus_per_rank", GPURUN_UNSET, CFGF_NONE, cb_int),
        CFG_INT_CB("threads_per_rank", GPURUN_UNSET, CFGF_NONE, cb_int),
        CFG_BOOL_CB("smt", cfg_false, CFGF_NONE, cb_bool),
        CFG_BOOL_CB("oversubscribe", cfg_false, CFGF_NONE, cb_bool),
        CFG_INT_CB("launcher", GPURUN_LAUNCHER_AUTO, CFGF_NONE, cb_enum),
        CFG_INT_CB("bind", GPURUN_BIND_CLOSEST, CFGF_NONE, cb_enum),
        CFG_INT_CB("gpu_visibility", GPURUN_GPUVIS_ISOLATE, CFGF_NONE, cb_enum),
        CFG_INT_CB("gpudirect", GPURUN_GPUDIRECT_AUTO, CFGF_NONE, cb_enum),
        CFG_INT_CB("timeout", 0, CFGF_NONE, cb_timeout),
        CFG_INT_CB("repeat", 1, CFGF_NONE, cb_int),
        CFG_STR("results", "results", CFGF_NONE),
        CFG_SEC("params", NULL, CFGF_KEYSTRVAL),
        CFG_SEC("env", NULL, CFGF_KEYSTRVAL),
        CFG_SEC("slurm", NULL, CFGF_KEYSTRVAL),
        CFG_SEC("references", NULL, CFGF_KEYSTRVAL),
        CFG_SEC("scan", scan_opts, CFGF_NONE),
        CFG_END(),
    };

    *jobp = NULL;
    struct parse_ctx ctx = {.label = label};
    char *norm = normalize(&ctx, text, len);

    cfg_t *cfg = cfg_init(opts, CFGF_NONE);
    if (!cfg) {
        free(norm);
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: cannot parse the job file: out of memory",
                          label);
    }
    cfg_set_error_function(cfg, on_confuse_error);
    parsing = &ctx;
    int rc = cfg_parse_buf(cfg, norm);
    parsing = NULL;
    free(norm);
    if (rc == CFG_FILE_ERROR) {
        cfg_free(cfg);
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: cannot parse the job file: %s", label,
                          strerror(errno));
    }
    if (ctx.cf_failed)
        note(&ctx, ctx.cf_line, ctx.cf_rank, "%s", ctx.cf_text);
    else if (rc != CFG_SUCCESS) /* libconfuse failed without a word */
        note(&ctx, cfg->line, RANK_CONFUSE, "syntax error");
    else if (ctx.broken_line) /* the scanner's grammar is stricter */
        note(&ctx, ctx.broken_line, RANK_CONFUSE, "syntax error at '%s'", ctx.broken_tok);

    /* What the file holds up to the first error is sound: checking it may
     * find an earlier error.  Unset names need the whole file. */
    sort_records(&ctx);
    check_duplicates(&ctx);
    check_strings(&ctx, cfg);
    check_scan(&ctx, cfg);
    check_contradictions(&ctx, cfg);
    if (rc == CFG_SUCCESS)
        check_command_names(&ctx, cfg);

    int ret = 0;
    if (ctx.failed)
        ret = gpurun_err(err, GPURUN_EXIT_CONFIG, "%s:%d: %s", label, ctx.err_line, ctx.err_text);
    else
        *jobp = convert(&ctx, cfg, label);

    cfg_free(cfg);
    for (size_t i = 0; i < ctx.nrecs; i++) {
        free(ctx.recs[i].name);
        free(ctx.recs[i].section);
    }
    free(ctx.recs);
    free(ctx.sorted);
    return ret;
}

int gpurun_job_load(const char *path, gpurun_job_t **jobp, gpurun_error_t *err)
{
    char *text;
    size_t len;
    *jobp = NULL;
    if (gpurun_read_file(path, "job file", JOB_FILE_MAX, &text, &len, err) < 0)
        return -1;
    int rc = gpurun_job_parse(text, len, path, jobp, err);
    free(text);
    return rc;
}

static void free_kvlist(struct gpurun_kvlist *kv)
{
    for (size_t i = 0; i < kv->n; i++) {
        free(kv->items[i].key);
        free(kv->items[i].value);
    }
    free(kv->items);
}

void gpurun_job_destroy(gpurun_job_t *job)
{
    if (!job)
        return;
    free(job->path);
    free(job->dir);
    free(job->name);
    free(job->template_name);
    free(job->command);
    free(job->site);
    free(job->results);
    free_kvlist(&job->params);
    free_kvlist(&job->env);
    free_kvlist(&job->slurm);
    free_kvlist(&job->references);
    for (size_t i = 0; i < job->nscan; i++) {
        free(job->scan[i].key);
        free(job->scan[i].values);
    }
    free(job->scan);
    free(job);
}

const char *gpurun_launcher_name(enum gpurun_launcher l)
{
    return (size_t)l < sizeof launcher_names / sizeof *launcher_names - 1 ? launcher_names[l] : "?";
}
