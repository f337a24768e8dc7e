/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_CONFPARSE_H
#define GPURUN_CONFPARSE_H

/* Reading a libconfuse file with gpurun's errors: what the job file (job.c)
 * and templates (template.c) share.  Internal to the library.
 *
 * gpurun_conf_read() makes three passes over a file:
 *  1. A scanner that mirrors libconfuse's lexer.  It blanks the comments
 *     (libconfuse 3.3 miscounts lines after every comment), escapes `${`
 *     inside double-quoted strings (libconfuse would replace it from the
 *     environment, and gpurun's own ${name} must survive), and records every
 *     `key =` and `key {` with its line: libconfuse keeps no lines, silently
 *     keeps the last of two equal keys and creates free-form keys on the fly.
 *  2. cfg_parse_buf() on the normalized text, its messages rewritten as
 *     `key 'KEY': WHAT`; parse callbacks report through
 *     gpurun_conf_value_error().
 *  3. The duplicates check, then the caller's checks on the whole file, each
 *     proposing an error with gpurun_conf_note(); the earliest one is
 *     reported as "FILE:LINE: WHAT", so that the user fixes a file from the
 *     top down.  Only then is the file converted to the caller's struct. */

#include <confuse.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "util.h"

/* ---- messages --------------------------------------------------------- */

#define GPURUN_CONF_SHOWN_MAX 48 /* bytes of a value quoted back in a message */

/* A key or value quoted back in a message: control characters escaped and
 * long ones cut, so that a message never carries what a terminal acts on. */
struct gpurun_conf_shown {
    char s[GPURUN_CONF_SHOWN_MAX * 4 + 8];
};

const char *gpurun_conf_shown_n(struct gpurun_conf_shown *b, const char *s, size_t n);
const char *gpurun_conf_shown(struct gpurun_conf_shown *b, const char *s); /* NULL: "" */

/* The closest of `cands` to a misspelt `word`: within two edits, or else a
 * prefix either way; NULL when none is close enough to help. */
const char *gpurun_conf_closest(const char *word, const char *const *cands, size_t n);

/* ---- names and values ------------------------------------------------- */

/* [A-Za-z_][A-Za-z0-9_]*: what an environment variable may be called. */
bool gpurun_conf_env_name_ok(const char *s);
/* A letter or '_', then letters, digits, '_', '.', '-': no `|` or `=` for
 * libconfuse to read as a path into another section. */
bool gpurun_conf_key_name_ok(const char *s);
/* Letters, digits, '_', '-', '.': a file name with no folder in it (template
 * names). */
bool gpurun_conf_plain_name_ok(const char *s);

/* What is wrong with the key `key` of `section` ("" at the top level), in
 * the words the file's errors use ("not a valid environment variable name"),
 * or NULL when nothing is. */
const char *gpurun_conf_key_problem(const char *section, const char *key);

/* What is wrong with a string value: "control character 0x09 (tab) in the
 * value", "empty value" (when `nonempty`), or NULL when nothing is.  `buf`
 * holds the words when they need formatting. */
const char *gpurun_conf_value_problem(const char *value, bool nonempty, char *buf, size_t size);

/* ---- the parse context ------------------------------------------------ */

/* When two errors sit on one line, the lower rank is reported: what
 * libconfuse would silently misread (a key like "scan|nodes", an unquoted
 * ${X}) comes first, then libconfuse's own errors, then the scanner's, so
 * that an unterminated string beats libconfuse's "premature end of file". */
enum gpurun_conf_rank {
    GPURUN_CONF_MISREAD,
    GPURUN_CONF_CONFUSE,
    GPURUN_CONF_LEXICAL,
    GPURUN_CONF_EOF,
    GPURUN_CONF_CHECK,
};

/* The line of an error about something the file lacks: reported as
 * "FILE: WHAT", after every error that has a line. */
#define GPURUN_CONF_NO_LINE INT_MAX

/* One `key =` or `key {` of the file, as the scanner saw it. */
struct gpurun_conf_record {
    char *name;      /* dotted: "scan.nodes", "fom.ns_per_day.regex" */
    char *section;   /* "" at the top level, "fom.ns_per_day" in a titled one */
    const char *key; /* points into name */
    char *title;     /* `fom NAME {`: NAME; else NULL */
    int line;
    bool is_section;
    bool list; /* the value was a {list} */
};

struct gpurun_conf_ctx {
    const char *label;  /* the file name in messages */
    const char *prefix; /* not NULL: errors read "PREFIX: WHAT" (a --set
                           assignment written as a file) */
    /* Sections written `name TITLE { ... }` (CFGF_TITLE), dotted, NULL-ended;
     * NULL for none. */
    const char *const *titled;

    /* The error to report: the earliest one in the file. */
    bool failed;
    int err_line;
    enum gpurun_conf_rank err_rank;
    char err_text[1536];
    /* libconfuse's first report: later ones are follow-ups, and a section's
     * parent reports with its own stale line. */
    bool cf_failed;
    int cf_line;
    enum gpurun_conf_rank cf_rank;
    char cf_text[1536];
    /* Where the scanner lost track of the grammar: libconfuse should say
     * why; if it does not, this is the error. */
    int broken_line;
    char broken_tok[sizeof(struct gpurun_conf_shown)];

    struct gpurun_conf_record *recs; /* in file order */
    size_t nrecs, caprecs;
    struct gpurun_conf_record **sorted; /* by name, then file order */
};

/* Propose an error: kept if it is the earliest so far. */
void gpurun_conf_note(struct gpurun_conf_ctx *ctx, int line, enum gpurun_conf_rank rank,
                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* For libconfuse parse callbacks: notes `key 'KEY': WHAT` on the value's
 * line and returns -1. */
int gpurun_conf_value_error(cfg_t *cfg, cfg_opt_t *opt, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The last record of `name`, NULL when the file does not set it. */
const struct gpurun_conf_record *gpurun_conf_find_record(const struct gpurun_conf_ctx *ctx,
                                                         const char *name);
int gpurun_conf_record_line(const struct gpurun_conf_ctx *ctx, const char *name); /* 0: none */
/* Every key the file set, dotted ("template", "params.nsteps"), to
 * "LABEL:LINE": the structs keep no lines, and later messages (a template
 * not found, a --set checked against it) must still point at the file. */
void gpurun_conf_origins(const struct gpurun_conf_ctx *ctx, struct gpurun_kvlist *from);

/* Pass 3 helper: control characters (and emptiness) in the value of the key
 * `name` (nothing when the file does not set it). */
void gpurun_conf_check_string(struct gpurun_conf_ctx *ctx, const char *name, const char *value,
                              bool nonempty);

/* The free-form section `section` of cfg (CFGF_KEYSTRVAL) as a list. */
void gpurun_conf_take_kvlist(cfg_t *cfg, const char *section, struct gpurun_kvlist *kv);

/* A value that must be one of `names` (NULL-terminated): its index in
 * *result, else an error listing them, with the nearest when one is close. */
int gpurun_conf_enum(cfg_t *cfg, cfg_opt_t *opt, const char *value, const char *const *names, long *result);

/* The names of each key of a file that takes one of a list.  libconfuse's
 * callbacks get no user data: a file's callback hands its table to
 * gpurun_conf_enum_key(), which finds the option's own names in it. */
struct gpurun_conf_enum_key {
    const char *key;
    const char *const *names;
};
int gpurun_conf_enum_key(cfg_t *cfg, cfg_opt_t *opt, const char *value,
                         const struct gpurun_conf_enum_key *keys, size_t nkeys, long *result);

/* ---- names of plugins ------------------------------------------------- */

/* Keys that name a plugin (a job's launcher and monitor, a site's launcher
 * and scheduler) take the names of the plugins present, which only the
 * program can list (launcher/run/plugin.c: the built-in ones and those in
 * its plugin folders).  It hands the library a function that lists a
 * kind's names ("launcher", "rm", "monitor"), NULL-terminated, before it
 * reads a file; until then (a program that loads no plugins) any name of
 * letters, digits, '_' and '-' passes. */
typedef const char *const *(*gpurun_conf_names_fn)(const char *kind);
void gpurun_conf_set_plugin_names(gpurun_conf_names_fn fn);
/* The kind's names (NULL: no list known). */
const char *const *gpurun_conf_plugin_names(const char *kind);

/* For a string key's parse callback: `value` is one of `before` ("auto"),
 * the name of a plugin of `kind` present, or one of `after` ("none");
 * else "'X' is not one of auto, mpirun, ..." (the names in that order)
 * with the nearest when one is close.  *(const char **)result = value. */
int gpurun_conf_plugin_name(cfg_t *cfg, cfg_opt_t *opt, const char *value, const char *kind,
                            const char *const *before, const char *const *after, void *result);

/* For an integer key's parse callback: `value` as digits only, from min to
 * max, into *(long *)result; else "expected an integer, got 'X'" or "X is
 * out of range (MIN to MAX)". */
int gpurun_conf_int_in(cfg_t *cfg, cfg_opt_t *opt, const char *value, long min, long max, void *result);

/* A libconfuse parse callback for a true/false key. */
int gpurun_conf_cb_bool(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result);

/* Pass 3 helpers: control characters in each value of the free-form
 * section `section`; two keys that cannot both hold, when the file sets
 * both: "key 'K2': contradicts 'K1' on line L: WHY" on the later line. */
void gpurun_conf_check_section(struct gpurun_conf_ctx *ctx, cfg_t *cfg, const char *section);
void gpurun_conf_contradiction(struct gpurun_conf_ctx *ctx, const char *k1, const char *k2,
                               const char *why_fmt, ...) __attribute__((format(printf, 4, 5)));

/* A copy of a value that may be NULL (then NULL). */
char *gpurun_conf_strdup(const char *s);

/* ---- reading a file --------------------------------------------------- */

/* A file of one kind (job file, template, site profile), to be read. */
struct gpurun_conf_file {
    const char *label;         /* the file name in messages */
    const char *prefix;        /* as in gpurun_conf_ctx */
    const char *what;          /* "LABEL: cannot parse WHAT: out of memory" */
    cfg_opt_t *schema;         /* cfg_init() copies it */
    const char *const *titled; /* as in gpurun_conf_ctx */
    /* Pass 3 after the duplicates check.  `complete`: libconfuse read the
     * whole file, so a key it lacks is missing (not merely after an error). */
    void (*check)(struct gpurun_conf_ctx *ctx, cfg_t *cfg, bool complete);
    /* The plain struct, made only when no error was noted. */
    void *(*convert)(const struct gpurun_conf_ctx *ctx, cfg_t *cfg);
    /* Optional, after pass 1: a schema with options for keys only the file
     * names (the job's scan { params.NAME = {...} }), in place of `schema`
     * for this file; NULL keeps `schema`.  `data` is the caller's, to hold
     * what it built until gpurun_conf_read() returns. */
    cfg_opt_t *(*extend)(const struct gpurun_conf_ctx *ctx, cfg_opt_t *schema, void *data);
    void *data;
};

/* The three passes over `text`, then f->convert(): its result in *out, or
 * NULL and the earliest error in err (exit 2) as "LABEL:LINE: WHAT", "LABEL:
 * WHAT" when it has no line, or "PREFIX: WHAT" when f->prefix is set. */
int gpurun_conf_read(const struct gpurun_conf_file *f, const char *text, size_t len, void **out,
                     gpurun_error_t *err);

/* The name a file gives by default: its base name without ".conf". */
char *gpurun_conf_label_name(const char *label);

#endif
