/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading a libconfuse file with gpurun's errors (see confparse.h): the
 * scanner that keeps lines and records keys, the capture of libconfuse's
 * messages, the checks that job files, templates and site profiles share,
 * and the one reader that drives the passes for each of them. */
#include "config.h"

#include <confuse.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confparse.h"
#include "util.h"

#define NEST_MAX 8 /* section depth the scanner follows */
/* libconfuse adds each free-form key with a linear lookup and a realloc of
 * the section's whole option array: quadratic, minutes for the 80,000 keys
 * a 1 MiB file can hold.  Real files have dozens. */
#define KEYS_MAX 1024

/* ---- messages --------------------------------------------------------- */

const char *gpurun_conf_shown_n(struct gpurun_conf_shown *b, const char *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        /* Cut between UTF-8 characters: at most the 3 continuation bytes a
         * character can have, so that a run of them (not UTF-8) stops too. */
        if (i >= GPURUN_CONF_SHOWN_MAX && ((c & 0xc0) != 0x80 || i >= GPURUN_CONF_SHOWN_MAX + 3)) {
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

const char *gpurun_conf_shown(struct gpurun_conf_shown *b, const char *s)
{
    return s ? gpurun_conf_shown_n(b, s, strlen(s)) : "";
}

const char *gpurun_conf_closest(const char *word, const char *const *cands, size_t n)
{
    size_t wl = strlen(word);
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t i = 0; i < n; i++) {
        size_t d = gpurun_edit_distance(word, cands[i]);
        /* Two edits to a 3-letter key ("gpus" -> "mps") is another word. */
        if (d < best_d && d < wl && (d == 1 || 2 * d < strlen(cands[i]))) {
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

/* ---- names and values ------------------------------------------------- */

static bool is_alpha_(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

bool gpurun_conf_env_name_ok(const char *s)
{
    if (!is_alpha_(*s))
        return false;
    for (s++; *s; s++)
        if (!is_alpha_(*s) && !is_digit(*s))
            return false;
    return true;
}

bool gpurun_conf_key_name_ok(const char *s)
{
    if (!is_alpha_(*s))
        return false;
    for (s++; *s; s++)
        if (!is_alpha_(*s) && !is_digit(*s) && *s != '.' && *s != '-')
            return false;
    return true;
}

bool gpurun_conf_plain_name_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!is_alpha_(*s) && !is_digit(*s) && *s != '.' && *s != '-')
            return false;
    return true;
}

/* Both kinds of file call their environment section `env`. */
const char *gpurun_conf_key_problem(const char *section, const char *key)
{
    if (strcmp(section, "env") == 0)
        return gpurun_conf_env_name_ok(key) ? NULL : "not a valid environment variable name";
    return gpurun_conf_key_name_ok(key)
               ? NULL
               : "not a valid key name (a letter or '_', then letters, digits, '_', '.', '-')";
}

const char *gpurun_conf_value_problem(const char *value, bool nonempty, char *buf, size_t size)
{
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            snprintf(buf, size, "control character 0x%02x%s in the value", *p,
                     *p == '\n'   ? " (line break)"
                     : *p == '\t' ? " (tab)"
                     : *p == '\r' ? " (carriage return)"
                                  : "");
            return buf;
        }
    }
    if (nonempty && !*value)
        return "empty value";
    return NULL;
}

/* ---- the parse context ------------------------------------------------ */

/* libconfuse 3.3 gives its callbacks no user-data pointer and its lexer is
 * global state, so two parses can never overlap: the context of the parse
 * in progress lives here, set and cleared around cfg_parse_buf(). */
static struct gpurun_conf_ctx *parsing;

void gpurun_conf_note(struct gpurun_conf_ctx *ctx, int line, enum gpurun_conf_rank rank,
                      const char *fmt, ...)
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
__attribute__((format(printf, 4, 5))) static void
cf_note(struct gpurun_conf_ctx *ctx, int line, enum gpurun_conf_rank rank, const char *fmt, ...)
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
enum gstate { G_KEY, G_AFTER_KEY, G_TITLE, G_VALUE, G_LIST_VALUE, G_LIST_SEP };

struct scanner {
    struct gpurun_conf_ctx *ctx;
    const char *in;
    size_t len, i;
    char *out;
    size_t olen;
    int line;

    enum gstate state;
    char *key;   /* the key being assigned */
    char *title; /* its title, in G_TITLE */
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

/* Is the key being read a section written with a title? */
static bool key_is_titled(const struct scanner *sc)
{
    if (!sc->ctx->titled)
        return false;
    char *section = section_path(sc);
    char *name = section[0] ? gpurun_xasprintf("%s.%s", section, sc->key) : gpurun_xstrdup(sc->key);
    bool titled = false;
    for (const char *const *t = sc->ctx->titled; *t && !titled; t++)
        titled = strcmp(*t, name) == 0;
    free(name);
    free(section);
    return titled;
}

static size_t add_record(struct scanner *sc, bool is_section)
{
    struct gpurun_conf_ctx *ctx = sc->ctx;
    struct gpurun_conf_shown a, b;
    if (ctx->nrecs == KEYS_MAX) {
        char *section = section_path(sc);
        gpurun_conf_note(ctx, sc->key_line, GPURUN_CONF_MISREAD,
                         "key '%s%s%s': more than %d keys in the file", section,
                         *section ? "." : "", gpurun_conf_shown(&a, sc->key), KEYS_MAX);
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
    struct gpurun_conf_record *r = &ctx->recs[ctx->nrecs];
    r->section = section;
    r->title = sc->title;
    sc->title = NULL;
    /* A titled section is named by its title too: `fom a {}` and `fom b {}`
     * are two sections, their keys "fom.a.regex" and "fom.b.regex". */
    r->name = gpurun_xasprintf("%s%s%s%s%s", section, section[0] ? "." : "", sc->key,
                               r->title ? "." : "", r->title ? r->title : "");
    r->key = r->name + (section[0] ? strlen(section) + 1 : 0);
    r->line = sc->key_line;
    r->is_section = is_section;
    r->list = false;

    const char *why = gpurun_conf_key_problem(section, sc->key);
    if (why && !r->title)
        gpurun_conf_note(ctx, r->line, GPURUN_CONF_MISREAD, "key '%s': %s",
                         gpurun_conf_shown(&a, r->name), why);
    else if (why)
        gpurun_conf_note(ctx, r->line, GPURUN_CONF_MISREAD, "key '%s%s%s': %s", section,
                         section[0] ? "." : "", gpurun_conf_shown(&a, sc->key), why);
    else if (r->title && !gpurun_conf_key_name_ok(r->title))
        gpurun_conf_note(ctx, r->line, GPURUN_CONF_MISREAD,
                         "key '%s%s%s': title '%s' is not a valid name (a letter or '_', then "
                         "letters, digits, '_', '.', '-')",
                         section, section[0] ? "." : "", gpurun_conf_shown(&a, sc->key),
                         gpurun_conf_shown(&b, r->title));
    return ctx->nrecs++;
}

/* Enter the section just recorded. */
static void open_section(struct scanner *sc, size_t rec)
{
    sc->path_rec[sc->depth] = rec;
    const struct gpurun_conf_record *r = &sc->ctx->recs[rec];
    sc->path[sc->depth++] = gpurun_xstrdup(r->key);
    sc->state = G_KEY;
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
            size_t rec = add_record(sc, true);
            if (!sc->stop)
                open_section(sc, rec);
            return;
        }
        if ((t == T_WORD || t == T_STR) && key_is_titled(sc)) {
            sc->title = gpurun_xstrndup(s, n);
            sc->state = G_TITLE;
            return;
        }
        break;
    case G_TITLE:
        if (t == T_LBRACE && sc->depth < NEST_MAX) {
            size_t rec = add_record(sc, true);
            if (!sc->stop)
                open_section(sc, rec);
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
    struct gpurun_conf_shown a;
    sc->broken = true;
    sc->ctx->broken_line = line;
    snprintf(sc->ctx->broken_tok, sizeof sc->ctx->broken_tok, "%s", gpurun_conf_shown_n(&a, s, n));
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
        gpurun_conf_note(sc->ctx, sc->line, GPURUN_CONF_LEXICAL, "NUL byte in the file");
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
    gpurun_conf_note(sc->ctx, start, GPURUN_CONF_LEXICAL,
                     "unterminated comment: the '/*' here is never closed");
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
    gpurun_conf_note(sc->ctx, start, GPURUN_CONF_LEXICAL,
                     "unterminated string: the %s here is never closed",
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
    struct gpurun_conf_ctx *ctx = sc->ctx;
    struct gpurun_conf_shown a;
    if (sc->state == G_AFTER_KEY || sc->state == G_TITLE) {
        char *section = section_path(sc);
        gpurun_conf_note(ctx, sc->key_line, GPURUN_CONF_LEXICAL,
                         sc->state == G_TITLE
                             ? "key '%s%s%s': '{' and the section missing at the end of the file"
                             : "key '%s%s%s': '=' and a value missing at the end of the file",
                         section, *section ? "." : "", gpurun_conf_shown(&a, sc->key));
        free(section);
    } else if (sc->state == G_VALUE) {
        const struct gpurun_conf_record *r = &ctx->recs[sc->rec];
        gpurun_conf_note(ctx, r->line, GPURUN_CONF_LEXICAL,
                         "key '%s': value missing at the end of the file",
                         gpurun_conf_shown(&a, r->name));
    } else if (sc->state == G_LIST_VALUE || sc->state == G_LIST_SEP) {
        const struct gpurun_conf_record *r = &ctx->recs[sc->rec];
        gpurun_conf_note(ctx, r->line, GPURUN_CONF_LEXICAL,
                         "key '%s': list not closed ('}' missing)", gpurun_conf_shown(&a, r->name));
    } else if (sc->depth > 0) {
        const struct gpurun_conf_record *r = &ctx->recs[sc->path_rec[sc->depth - 1]];
        gpurun_conf_note(ctx, r->line, GPURUN_CONF_LEXICAL,
                         "key '%s': section not closed ('}' missing)",
                         gpurun_conf_shown(&a, r->name));
    }
}

/* What web pages and word processors put into text copied from them (a
 * job file from a cluster's onboarding page): libconfuse would take each
 * into an unquoted word, a key that then matches nothing or a value with
 * the quotes in it. */
static const struct {
    const char *utf8, *what;
    bool quote;
} pasted[] = {
    {"\xe2\x80\x9c", "'\xe2\x80\x9c' (U+201C, a typographic quote)", true},
    {"\xe2\x80\x9d", "'\xe2\x80\x9d' (U+201D, a typographic quote)", true},
    {"\xe2\x80\x9e", "'\xe2\x80\x9e' (U+201E, a typographic quote)", true},
    {"\xe2\x80\x98", "'\xe2\x80\x98' (U+2018, a typographic quote)", true},
    {"\xe2\x80\x99", "'\xe2\x80\x99' (U+2019, a typographic quote)", true},
    {"\xc2\xa0", "a no-break space (U+00A0)", false},
    {"\xe2\x80\xaf", "a narrow no-break space (U+202F)", false},
    {"\xe2\x80\x8b", "a zero-width space (U+200B)", false},
    {"\xe2\x80\x8c", "a zero-width non-joiner (U+200C)", false},
    {"\xe2\x80\x8d", "a zero-width joiner (U+200D)", false},
    {"\xe2\x81\xa0", "a word joiner (U+2060)", false},
    {"\xef\xbb\xbf", "a byte-order mark (U+FEFF)", false},
};

/* The characters libconfuse's word rule ends an unquoted word at. */
static const char word_end[] = " \t\r\n#\"'={}()+,*";

/* The pasted character that starts at `p` (n bytes left), or -1. */
static int pasted_at(const char *p, size_t n)
{
    if (n < 2 || !((unsigned char)*p & 0x80))
        return -1;
    for (size_t k = 0; k < sizeof pasted / sizeof *pasted; k++) {
        size_t l = strlen(pasted[k].utf8);
        if (l <= n && !memcmp(p, pasted[k].utf8, l))
            return (int)k;
    }
    return -1;
}

/* The unquoted word at `from` as it reads, without what was pasted in. */
static char *word_without_pasted(const struct scanner *sc, size_t from)
{
    char *w = gpurun_xmalloc(sc->len - from + 1);
    size_t n = 0;
    for (size_t i = from; i < sc->len && sc->in[i] && !strchr(word_end, sc->in[i]);) {
        int k = pasted_at(sc->in + i, sc->len - i);
        if (k >= 0)
            i += strlen(pasted[k].utf8);
        else
            w[n++] = sc->in[i++];
    }
    w[n] = '\0';
    return w;
}

static void note_pasted(struct scanner *sc, int k, size_t from, int line)
{
    struct gpurun_conf_shown a;
    bool value = sc->state == G_VALUE || sc->state == G_LIST_VALUE;
    const char *fix = !pasted[k].quote ? "an invisible character, as web pages and word processors write them: "
                                         "retype the line with plain spaces"
                      : value          ? "write the value in plain double quotes \"...\""
                                       : "write the key without quotes";
    if (value) {
        gpurun_conf_note(sc->ctx, line, GPURUN_CONF_MISREAD, "key '%s': %s in an unquoted value: %s",
                         gpurun_conf_shown(&a, sc->ctx->recs[sc->rec].name), pasted[k].what, fix);
        return;
    }
    char *word = word_without_pasted(sc, from);
    gpurun_conf_note(sc->ctx, line, GPURUN_CONF_MISREAD, "key '%s': %s in it, outside quotes: %s",
                     gpurun_conf_shown(&a, word), pasted[k].what, fix);
    free(word);
}

/* An unquoted word: up to a character libconfuse's word rule excludes; '/'
 * belongs to it ("http://host/x"), except where it opens a comment. */
static void scan_word(struct scanner *sc)
{
    struct gpurun_conf_ctx *ctx = sc->ctx;
    const char *text = sc->in;
    size_t from = sc->i, out_from = sc->olen;
    int line = sc->line;
    bool noted = false;
    while (sc->i < sc->len) {
        char c = text[sc->i];
        if (c != '\0' && strchr(word_end, c))
            break;
        int k = noted ? -1 : pasted_at(text + sc->i, sc->len - sc->i);
        if (k >= 0) {
            note_pasted(sc, k, from, line);
            noted = true;
        }
        if (c == '/' && peek(sc, 1) == '*')
            break;
        if (c == '$' && peek(sc, 1) == '{') {
            /* libconfuse would replace it from the environment */
            struct gpurun_conf_shown a, b;
            const char *end = memchr(text + sc->i, '}', sc->len - sc->i);
            gpurun_conf_shown_n(&b, text + sc->i, end ? (size_t)(end - (text + sc->i)) + 1 : 2);
            if (sc->state == G_VALUE || sc->state == G_LIST_VALUE)
                gpurun_conf_note(ctx, line, GPURUN_CONF_MISREAD,
                                 "key '%s': %s must be in double quotes: \"%s\"",
                                 gpurun_conf_shown(&a, ctx->recs[sc->rec].name), b.s, b.s);
            else
                gpurun_conf_note(ctx, line, GPURUN_CONF_MISREAD,
                                 "%s must be in double quotes: \"%s\"", b.s, b.s);
            /* ...as one token up to the '}' where the word starts with it */
            if (sc->i == from && end) {
                while (text + sc->i <= end)
                    copy_char(sc);
                break;
            }
        }
        copy_char(sc);
    }
    sc->tok_out = out_from;
    grammar(sc, T_WORD, text + from, sc->i - from, line);
}

/* The text libconfuse is to parse (free() it), with ctx->recs filled and
 * lexical errors noted. */
static char *normalize(struct gpurun_conf_ctx *ctx, const char *text, size_t len)
{
    struct scanner sc = {.ctx = ctx, .in = text, .len = len, .line = 1, .state = G_KEY};
    /* `${` grows by one byte: 3 per 2 at worst. */
    sc.out = gpurun_xmalloc(len + len / 2 + 2);
    /* A UTF-8 byte-order mark opens files that Windows editors save (a job
     * file from an onboarding page): not part of the first key. */
    if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
        sc.i = 3;

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
            scan_word(&sc);
        }
    }
    if (sc.stop)
        sc.olen = sc.stop_at;
    sc.out[sc.olen] = '\0';
    scan_end(&sc);
    free(sc.key);
    free(sc.title);
    for (int d = 0; d < sc.depth; d++)
        free(sc.path[d]);
    return sc.out;
}

/* ---- records ---------------------------------------------------------- */

static int record_cmp(const void *a, const void *b)
{
    const struct gpurun_conf_record *x = *(const struct gpurun_conf_record *const *)a,
                                    *y = *(const struct gpurun_conf_record *const *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x < y ? -1 : x > y);
}

static void sort_records(struct gpurun_conf_ctx *ctx)
{
    free(ctx->sorted);
    ctx->sorted = gpurun_xcalloc(ctx->nrecs, sizeof *ctx->sorted);
    for (size_t i = 0; i < ctx->nrecs; i++)
        ctx->sorted[i] = &ctx->recs[i];
    qsort(ctx->sorted, ctx->nrecs, sizeof *ctx->sorted, record_cmp);
}

const struct gpurun_conf_record *gpurun_conf_find_record(const struct gpurun_conf_ctx *ctx,
                                                         const char *name)
{
    size_t lo = 0, hi = ctx->sorted ? ctx->nrecs : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(ctx->sorted[mid]->name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct gpurun_conf_record *r = NULL;
    for (; ctx->sorted && lo < ctx->nrecs && strcmp(ctx->sorted[lo]->name, name) == 0; lo++)
        r = ctx->sorted[lo];
    return r;
}

int gpurun_conf_record_line(const struct gpurun_conf_ctx *ctx, const char *name)
{
    const struct gpurun_conf_record *r = gpurun_conf_find_record(ctx, name);
    return r ? r->line : 0;
}

void gpurun_conf_origins(const struct gpurun_conf_ctx *ctx, struct gpurun_kvlist *from)
{
    for (size_t i = 0; i < ctx->nrecs; i++) {
        if (ctx->recs[i].is_section)
            continue;
        char *where = gpurun_xasprintf("%s:%d", ctx->label, ctx->recs[i].line);
        gpurun_kvlist_set(from, ctx->recs[i].name, where);
        free(where);
    }
}

/* ---- pass 2: libconfuse ----------------------------------------------- */

/* The section cfg stands for, dotted as records name it: "" at the top
 * level, "scan", "fom.ns_per_day". */
static const char *section_of(cfg_t *cfg, char *buf, size_t size)
{
    const char *name = cfg_name(cfg);
    if (!name || strcmp(name, "root") == 0)
        return "";
    const char *title = cfg_title(cfg);
    snprintf(buf, size, "%s%s%s", name, title ? "." : "", title ? title : "");
    return buf;
}

/* "scan." inside scan{}, "" at the top level. */
static const char *section_prefix(cfg_t *cfg, char *buf, size_t size)
{
    char sbuf[256];
    const char *s = section_of(cfg, sbuf, sizeof sbuf);
    if (!*s)
        return "";
    snprintf(buf, size, "%s.", s);
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

static const cfg_opt_t *schema_opt(cfg_t *cfg, const char *key)
{
    for (size_t i = 0; cfg->opts[i].name; i++)
        if (strcmp(cfg->opts[i].name, key) == 0)
            return &cfg->opts[i];
    return NULL;
}

/* `nodes = {1, 2}` for a key that takes one value: libconfuse only sees an
 * unexpected '{'; the scanner saw which key got the list. */
static const struct gpurun_conf_record *list_for_scalar(const struct gpurun_conf_ctx *ctx,
                                                        cfg_t *cfg, int line)
{
    char sbuf[256];
    const char *section = section_of(cfg, sbuf, sizeof sbuf);
    for (size_t i = 0; i < ctx->nrecs; i++) {
        const struct gpurun_conf_record *r = &ctx->recs[i];
        if (r->line != line || !r->list || strcmp(r->section, section) != 0)
            continue;
        const cfg_opt_t *opt = schema_opt(cfg, r->key);
        if (!opt || !(opt->flags & CFGF_LIST))
            return r;
    }
    return NULL;
}

/* `fom a {}` twice: reported as any key given twice. */
static void duplicate_title(struct gpurun_conf_ctx *ctx, cfg_t *cfg, const char *title)
{
    char sbuf[256];
    const char *section = section_of(cfg, sbuf, sizeof sbuf);
    const struct gpurun_conf_record *first = NULL;
    struct gpurun_conf_shown a;
    for (size_t i = 0; i < ctx->nrecs; i++) {
        const struct gpurun_conf_record *r = &ctx->recs[i];
        if (!r->is_section || !r->title || strcmp(r->title, title) != 0 ||
            strcmp(r->section, section) != 0)
            continue;
        if (!first) {
            first = r;
        } else if (strcmp(r->name, first->name) == 0) {
            cf_note(ctx, r->line, GPURUN_CONF_CONFUSE, "key '%s': given twice (first on line %d)",
                    gpurun_conf_shown(&a, r->name), first->line);
            return;
        }
    }
    cf_note(ctx, cfg->line, GPURUN_CONF_CONFUSE, "title '%s' given twice",
            gpurun_conf_shown(&a, title));
}

/* libconfuse's messages, rewritten as `key 'KEY': WHAT`.  Its format
 * strings are compared untranslated: nothing here calls setlocale(). */
static void on_confuse_error(cfg_t *cfg, const char *fmt, va_list ap)
{
    struct gpurun_conf_ctx *ctx = parsing;
    if (!ctx || ctx->cf_failed)
        return;
    /* libconfuse 3.3 looks every free-form key up as a known option first
     * and reports the miss before it creates the key. */
    if ((cfg->flags & CFGF_KEYSTRVAL) &&
        (strcmp(fmt, "no such option '%s'") == 0 || strncmp(fmt, "no sub-section", 14) == 0))
        return;

    char pbuf[256];
    const char *prefix = section_prefix(cfg, pbuf, sizeof pbuf);
    int line = cfg->line;
    struct gpurun_conf_shown a, b;

    if (strcmp(fmt, "no such option '%s'") == 0) {
        const char *name = va_string(ap);
        size_t n = 0;
        while (cfg->opts[n].name)
            n++;
        const char **cands = gpurun_xcalloc(n, sizeof *cands);
        for (size_t i = 0; i < n; i++)
            cands[i] = cfg->opts[i].name;
        const char *near = gpurun_conf_closest(name, cands, n);
        if (near)
            cf_note(ctx, line, GPURUN_CONF_CONFUSE, "unknown key '%s%s' (did you mean '%s%s'?)",
                    prefix, gpurun_conf_shown(&a, name), prefix, near);
        else
            cf_note(ctx, line, GPURUN_CONF_CONFUSE, "unknown key '%s%s'", prefix,
                    gpurun_conf_shown(&a, name));
        free(cands);
    } else if (strcmp(fmt, "missing equal sign after option '%s'") == 0) {
        cf_note(ctx, line, GPURUN_CONF_CONFUSE, "key '%s%s': '=' missing after the key", prefix,
                gpurun_conf_shown(&a, va_string(ap)));
    } else if (strcmp(fmt, "missing opening brace for section '%s'") == 0) {
        const char *name = va_string(ap);
        const cfg_opt_t *opt = schema_opt(cfg, name);
        cf_note(ctx, line, GPURUN_CONF_CONFUSE, "key '%s%s': a section, written %s %s{ ... }",
                prefix, gpurun_conf_shown(&a, name), gpurun_conf_shown(&b, name),
                opt && (opt->flags & CFGF_TITLE) ? "NAME " : "");
    } else if (strcmp(fmt, "missing title for section '%s'") == 0) {
        const char *name = va_string(ap);
        cf_note(ctx, line, GPURUN_CONF_CONFUSE,
                "key '%s%s': a name is missing, written %s NAME { ... }", prefix,
                gpurun_conf_shown(&a, name), gpurun_conf_shown(&b, name));
    } else if (strcmp(fmt, "found duplicate title '%s'") == 0) {
        duplicate_title(ctx, cfg, va_string(ap));
    } else if (strcmp(fmt, "attempt to append to non-list option '%s'") == 0) {
        cf_note(ctx, line, GPURUN_CONF_CONFUSE,
                "key '%s%s': '+=' appends to a list, this is not one", prefix,
                gpurun_conf_shown(&a, va_string(ap)));
    } else if (strcmp(fmt, "unexpected closing brace") == 0) {
        cf_note(ctx, line, GPURUN_CONF_CONFUSE, "'}' without a section to close");
    } else if (strcmp(fmt, "unexpected token '%s'") == 0) {
        const char *tok = va_string(ap);
        const struct gpurun_conf_record *r =
            strcmp(tok, "{") == 0 ? list_for_scalar(ctx, cfg, line) : NULL;
        if (r)
            cf_note(ctx, line, GPURUN_CONF_CONFUSE, "key '%s': expected one value, not a list",
                    gpurun_conf_shown(&a, r->name));
        else
            cf_note(ctx, line, GPURUN_CONF_CONFUSE, "syntax error at '%s'",
                    gpurun_conf_shown(&a, tok));
    } else if (strcmp(fmt, "premature end of file") == 0) {
        cf_note(ctx, line, GPURUN_CONF_EOF, "unexpected end of the file");
    } else if (strcmp(fmt, "unterminated string constant") == 0) {
        cf_note(ctx, line, GPURUN_CONF_EOF, "unterminated string");
    } else {
        char msg[512];
        vsnprintf(msg, sizeof msg, fmt, ap);
        cf_note(ctx, line, GPURUN_CONF_CONFUSE, "%s", gpurun_conf_shown(&a, msg));
    }
}

int gpurun_conf_value_error(cfg_t *cfg, cfg_opt_t *opt, const char *fmt, ...)
{
    if (!parsing)
        return -1;
    char pbuf[256], what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    cf_note(parsing, cfg->line, GPURUN_CONF_CONFUSE, "key '%s%s': %s",
            section_prefix(cfg, pbuf, sizeof pbuf), cfg_opt_name(opt), what);
    return -1;
}

/* cfg_parse_buf() with the error capture; libconfuse's first error is
 * noted.  Returns cfg_parse_buf()'s code; sorts the records for
 * gpurun_conf_find_record(). */
static int parse(struct gpurun_conf_ctx *ctx, cfg_t *cfg, const char *norm)
{
    cfg_set_error_function(cfg, on_confuse_error);
    parsing = ctx;
    int rc = cfg_parse_buf(cfg, norm);
    parsing = NULL;
    if (rc == CFG_FILE_ERROR)
        return rc;
    if (ctx->cf_failed)
        gpurun_conf_note(ctx, ctx->cf_line, ctx->cf_rank, "%s", ctx->cf_text);
    else if (rc != CFG_SUCCESS) /* libconfuse failed without a word */
        gpurun_conf_note(ctx, cfg->line, GPURUN_CONF_CONFUSE, "syntax error");
    else if (ctx->broken_line) /* the scanner's grammar is stricter */
        gpurun_conf_note(ctx, ctx->broken_line, GPURUN_CONF_CONFUSE, "syntax error at '%s'",
                         ctx->broken_tok);
    sort_records(ctx);
    return rc;
}

/* ---- pass 3 ----------------------------------------------------------- */

/* A key given twice. */
static void check_duplicates(struct gpurun_conf_ctx *ctx)
{
    struct gpurun_conf_shown a;
    for (size_t i = 1; ctx->sorted && i < ctx->nrecs; i++) {
        const struct gpurun_conf_record *r = ctx->sorted[i], *first = ctx->sorted[i - 1];
        if (strcmp(r->name, first->name) == 0)
            gpurun_conf_note(ctx, r->line, GPURUN_CONF_CHECK,
                             "key '%s': given twice (first on line %d)",
                             gpurun_conf_shown(&a, r->name), first->line);
    }
}

void gpurun_conf_check_string(struct gpurun_conf_ctx *ctx, const char *name, const char *value,
                              bool nonempty)
{
    int line = gpurun_conf_record_line(ctx, name);
    if (!line || !value)
        return;
    char buf[128];
    struct gpurun_conf_shown a;
    const char *why = gpurun_conf_value_problem(value, nonempty, buf, sizeof buf);
    if (why)
        gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK, "key '%s': %s", gpurun_conf_shown(&a, name),
                         why);
}

void gpurun_conf_take_kvlist(cfg_t *cfg, const char *section, struct gpurun_kvlist *kv)
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

/* The noted error, if any, into err; 0 when nothing was noted. */
static int finish(const struct gpurun_conf_ctx *ctx, gpurun_error_t *err)
{
    if (!ctx->failed)
        return 0;
    if (ctx->prefix)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: %s", ctx->prefix, ctx->err_text);
    if (ctx->err_line == GPURUN_CONF_NO_LINE)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: %s", ctx->label, ctx->err_text);
    return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s:%d: %s", ctx->label, ctx->err_line,
                      ctx->err_text);
}

/* Frees what the passes allocated in ctx. */
static void ctx_release(struct gpurun_conf_ctx *ctx)
{
    for (size_t i = 0; i < ctx->nrecs; i++) {
        free(ctx->recs[i].name);
        free(ctx->recs[i].section);
        free(ctx->recs[i].title);
    }
    free(ctx->recs);
    free(ctx->sorted);
    ctx->recs = NULL;
    ctx->sorted = NULL;
    ctx->nrecs = ctx->caprecs = 0;
}

int gpurun_conf_enum(cfg_t *cfg, cfg_opt_t *opt, const char *value, const char *const *names, long *result)
{
    size_t n = 0;
    while (names && names[n]) {
        if (value && strcmp(value, names[n]) == 0) {
            *result = (long)n;
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
    struct gpurun_conf_shown a;
    const char *near = value ? gpurun_conf_closest(value, names, n) : NULL;
    if (near)
        return gpurun_conf_value_error(cfg, opt, "'%s' is not one of %s (did you mean '%s'?)",
                                       gpurun_conf_shown(&a, value), list, near);
    return gpurun_conf_value_error(cfg, opt, "'%s' is not one of %s", gpurun_conf_shown(&a, value), list);
}

int gpurun_conf_enum_key(cfg_t *cfg, cfg_opt_t *opt, const char *value,
                         const struct gpurun_conf_enum_key *keys, size_t nkeys, long *result)
{
    const char *const *names = NULL;
    for (size_t i = 0; i < nkeys; i++)
        if (strcmp(keys[i].key, cfg_opt_name(opt)) == 0)
            names = keys[i].names;
    return gpurun_conf_enum(cfg, opt, value, names, result);
}

static gpurun_conf_names_fn plugin_names;

void gpurun_conf_set_plugin_names(gpurun_conf_names_fn fn)
{
    plugin_names = fn;
}

const char *const *gpurun_conf_plugin_names(const char *kind)
{
    return plugin_names ? plugin_names(kind) : NULL;
}

/* Plugins are files KIND_NAME.so: a name is letters, digits, '_', '-'. */
static bool plugin_name_ok(const char *v)
{
    if (!*v || strlen(v) > 64)
        return false;
    for (; *v; v++)
        if (!((*v >= 'a' && *v <= 'z') || (*v >= 'A' && *v <= 'Z') || (*v >= '0' && *v <= '9') || *v == '_' ||
              *v == '-'))
            return false;
    return true;
}

int gpurun_conf_plugin_name(cfg_t *cfg, cfg_opt_t *opt, const char *value, const char *kind,
                            const char *const *before, const char *const *after, void *result)
{
    const char *const *present = gpurun_conf_plugin_names(kind);
    const char *names[128];
    size_t n = 0;
    for (const char *const *f = before; f && *f && n < 127; f++)
        names[n++] = *f;
    for (const char *const *p = present; p && *p && n < 127; p++)
        names[n++] = *p;
    for (const char *const *f = after; f && *f && n < 127; f++)
        names[n++] = *f;
    names[n] = NULL;
    bool found = false;
    for (size_t i = 0; i < n && value && !found; i++)
        found = !strcmp(value, names[i]);
    if (found || (!present && value && plugin_name_ok(value))) {
        *(const char **)result = value;
        return 0;
    }
    long unused;
    return gpurun_conf_enum(cfg, opt, value, names, &unused);
}

int gpurun_conf_int_in(cfg_t *cfg, cfg_opt_t *opt, const char *value, long min, long max, void *result)
{
    struct gpurun_conf_shown a;
    const char *p = value ? value : "";
    const char *d = *p == '-' ? p + 1 : p; /* "-1": out of range, not "not an integer" */
    bool digits = *d != '\0';
    for (const char *c = d; *c; c++)
        digits = digits && *c >= '0' && *c <= '9';
    if (!digits)
        return gpurun_conf_value_error(cfg, opt, "expected an integer, got '%s'", gpurun_conf_shown(&a, value));
    errno = 0;
    long v = strtol(p, NULL, 10);
    if (errno == ERANGE || v < min || v > max)
        return gpurun_conf_value_error(cfg, opt, "%s is out of range (%ld to %ld)", gpurun_conf_shown(&a, value),
                                       min, max);
    *(long *)result = v;
    return 0;
}

int gpurun_conf_cb_bool(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    struct gpurun_conf_shown a;
    int b = value ? cfg_parse_boolean(value) : -1;
    if (b < 0)
        return gpurun_conf_value_error(cfg, opt, "expected true or false, got '%s'",
                                       gpurun_conf_shown(&a, value));
    *(int *)result = b;
    return 0;
}

void gpurun_conf_check_section(struct gpurun_conf_ctx *ctx, cfg_t *cfg, const char *section)
{
    cfg_t *sec = cfg_getsec(cfg, section);
    unsigned n = sec ? cfg_num(sec) : 0;
    for (unsigned i = 0; i < n; i++) {
        cfg_opt_t *opt = cfg_getnopt(sec, i);
        char *name = gpurun_xasprintf("%s.%s", section, cfg_opt_name(opt));
        gpurun_conf_check_string(ctx, name, cfg_opt_getnstr(opt, 0), false);
        free(name);
    }
}

void gpurun_conf_contradiction(struct gpurun_conf_ctx *ctx, const char *k1, const char *k2,
                               const char *why_fmt, ...)
{
    int l1 = gpurun_conf_record_line(ctx, k1), l2 = gpurun_conf_record_line(ctx, k2);
    if (!l1 || !l2)
        return;
    char why[512];
    va_list ap;
    va_start(ap, why_fmt);
    vsnprintf(why, sizeof why, why_fmt, ap);
    va_end(ap);
    if (l2 >= l1)
        gpurun_conf_note(ctx, l2, GPURUN_CONF_CHECK, "key '%s': contradicts '%s' on line %d: %s",
                         k2, k1, l1, why);
    else
        gpurun_conf_note(ctx, l1, GPURUN_CONF_CHECK, "key '%s': contradicts '%s' on line %d: %s",
                         k1, k2, l2, why);
}

char *gpurun_conf_strdup(const char *s)
{
    return s ? gpurun_xstrdup(s) : NULL;
}

/* ---- reading a file --------------------------------------------------- */

int gpurun_conf_read(const struct gpurun_conf_file *f, const char *text, size_t len, void **out,
                     gpurun_error_t *err)
{
    *out = NULL;
    struct gpurun_conf_ctx ctx = {.label = f->label, .prefix = f->prefix, .titled = f->titled};
    char *norm = normalize(&ctx, text, len);
    cfg_opt_t *schema = f->extend ? f->extend(&ctx, f->schema, f->data) : NULL;
    cfg_t *cfg = cfg_init(schema ? schema : f->schema, CFGF_NONE);
    if (!cfg) {
        free(norm);
        ctx_release(&ctx);
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: cannot parse %s: out of memory", f->label,
                          f->what);
    }
    int rc = parse(&ctx, cfg, norm);
    free(norm);
    if (rc == CFG_FILE_ERROR) {
        int e = errno;
        cfg_free(cfg);
        ctx_release(&ctx);
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: cannot parse %s: %s", f->label, f->what,
                          strerror(e));
    }

    /* What the file holds up to the first error is sound: checking it may
     * find an earlier error. */
    check_duplicates(&ctx);
    f->check(&ctx, cfg, rc == CFG_SUCCESS);

    int ret = finish(&ctx, err);
    if (ret == 0)
        *out = f->convert(&ctx, cfg);
    cfg_free(cfg);
    ctx_release(&ctx);
    return ret;
}

char *gpurun_conf_label_name(const char *label)
{
    const char *slash = strrchr(label, '/');
    const char *base = slash ? slash + 1 : label;
    size_t n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".conf") == 0)
        n -= 5;
    return gpurun_xstrndup(base, n);
}
