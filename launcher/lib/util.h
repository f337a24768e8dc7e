/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_UTIL_H
#define GPURUN_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <regex.h>
#include <stddef.h>

#include "error.h"

/* Read a whole regular file of at most `max` bytes into a NUL-terminated
 * buffer.  A directory, FIFO, device or over-long file is refused with a
 * message naming `what` ("job file") and the path, never a hang. */
int gpurun_read_file(const char *path, const char *what, size_t max, char **bufp, size_t *lenp,
                     gpurun_error_t *err);

/* The same for the file open as `fd` (left open; read from where it
 * stands): for a file opened with checks of the caller's own. */
int gpurun_read_fd(int fd, const char *path, const char *what, size_t max, char **bufp, size_t *lenp,
                   gpurun_error_t *err);

/* Write all of data to fd, again after EINTR and short writes: 0, or -1
 * with errno set. */
int gpurun_write_all(int fd, const void *data, size_t len);
/* `path` is a regular file this process may execute. */
bool gpurun_executable_file(const char *path);
/* The value of `field:` in /proc/self/status ("Mems_allowed_list": "0-1"),
 * or NULL.  The caller frees it. */
char *gpurun_proc_status(const char *field);

/* Allocation that never returns NULL: on exhaustion the program aborts,
 * since no caller could report anything useful either. */
void *gpurun_xmalloc(size_t n);
void *gpurun_xcalloc(size_t n, size_t size);
void *gpurun_xrealloc(void *p, size_t n);
char *gpurun_xstrdup(const char *s);
char *gpurun_xstrndup(const char *s, size_t n);
char *gpurun_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *gpurun_xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* The length of the well-formed UTF-8 character at `s` (1 to 4), or 0 for
 * a byte that does not start one (overlong forms, surrogates and code
 * points past U+10FFFF are not well formed).  *cpp: its code point. */
size_t gpurun_utf8_char(const char *s, unsigned long *cpp);

/* `in` fit for a terminal: every control character (C0, DEL, C1) and every
 * byte that is not well-formed UTF-8 written as \xNN, a tab as a blank.
 * Malloc'ed. */
char *gpurun_terminal_text(const char *in);

/* `in` fit for a comment line of a file gpurun writes (a job file, a
 * batch script): every control character (C0, DEL, C1) and every byte that
 * is not well-formed UTF-8 written '?', so that nothing in it can end the
 * comment and start a line of its own.  NULL reads as "".  Malloc'ed.  The
 * one helper for free text (paths, names, descriptions) in comments. */
char *gpurun_comment_text(const char *in);

/* `in` as one shell word for a command line printed for the user to copy:
 * as it is when it holds only letters, digits and _-+.,/:=@%; else
 * single-quoted ('\'' for a quote), each control character or byte that
 * is not well-formed UTF-8 as $'\NNN' (bash, zsh, ksh), so that the line
 * never breaks and pastes back as the same bytes.  Malloc'ed. */
char *gpurun_shell_word(const char *in);

/* At most len-1 bytes of `in` for a one-line message: every byte that is
 * not printable ASCII written as \xNN, and "..." where it was cut.  For
 * values someone else chose (a job's environment in slurmstepd's log). */
void gpurun_short_text(char *out, size_t len, const char *in);

/* A list of numbers as Linux and hwloc write cpu lists ("0-3,8,10-11"):
 * decimal numbers and ranges LO-HI with LO <= HI, joined by commas, each
 * number below `limit`.  The whole text is checked first, and refused
 * (-1, *why a static phrase) when it is empty, has an empty item (",",
 * "1,,2", "1,"), an open range ("0-", "-1"), a range that runs backwards,
 * a number not below `limit`, or another character; only then is add()
 * called once per item, in order.  So the cost is the text's length and
 * nothing is ever sized by a number the text holds. */
int gpurun_id_list_parse(const char *list, unsigned limit, void (*add)(unsigned lo, unsigned hi, void *arg),
                         void *arg, const char **why);

/* Levenshtein distance, for "did you mean" suggestions. */
size_t gpurun_edit_distance(const char *a, const char *b);

/* An ordered list of string pairs, keys unique: job sections, name tables
 * for ${name}, where each key of a file was set. */
struct gpurun_kv {
    char *key;
    char *value;
};

struct gpurun_kvlist {
    struct gpurun_kv *items;
    size_t n;
};

/* A key set again is replaced (in place: the order is the first setting's). */
void gpurun_kvlist_set(struct gpurun_kvlist *l, const char *key, const char *value);
const char *gpurun_kvlist_get(const struct gpurun_kvlist *l, const char *key); /* NULL: none */
const char *gpurun_kvlist_lookup(const char *name, void *list); /* a gpurun_lookup_fn */
void gpurun_kvlist_clear(struct gpurun_kvlist *l); /* frees the items, leaves it empty */

/* A string that grows as it is written; s is NULL until something is. */
struct gpurun_strbuf {
    char *s;
    size_t len, cap;
};
void gpurun_strbuf_add(struct gpurun_strbuf *b, const char *s, size_t n);
void gpurun_strbuf_addc(struct gpurun_strbuf *b, char c);
void gpurun_strbuf_puts(struct gpurun_strbuf *b, const char *s);
void gpurun_strbuf_printf(struct gpurun_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* What makes a POSIX extended regex too costly to compile, or NULL: glibc's
 * regcomp() copies a subexpression for each `+` and each repeat of an
 * interval, so nested or stacked repetitions ("a++++++++++++++++++++",
 * "(a{1,255}){1,255}") take gigabytes, and deep nesting its stack. */
const char *gpurun_regex_cost_problem(const char *re);

/* Matching a template's regexes in bounded time.  Some patterns that
 * compile small still take time that grows with the square of a line's
 * length ("(a|ab)*(b|bb)*x": 6 s on a line of 64 KiB), so a template's
 * regex sees at most the first GPURUN_REGEX_LINE_MAX bytes of a line (a
 * tenth of a second at worst), and a run's regexes share a budget: each may
 * take 1 ms a line and 1 s a MB of text, and those that take more may
 * together take GPURUN_REGEX_BUDGET_S beyond that; the one that goes past it
 * is dropped (it matches nothing more), with a note for the record.  Time is
 * CLOCK_MONOTONIC's.  A sound regex runs at 10 MB/s or more. */
#define GPURUN_REGEX_LINE_MAX 8192
#define GPURUN_REGEX_BUDGET_S 2.0
#define GPURUN_REGEX_NOTES_MAX 8

struct gpurun_regex_budget {
    double over_s;  /* what the regexes slower than their allowance took beyond it, together */
    double limit_s; /* GPURUN_REGEX_BUDGET_S (a test may set less) */
    char notes[GPURUN_REGEX_NOTES_MAX][400]; /* one for each regex dropped */
    size_t nnotes;  /* notes kept; ndropped may be more */
    size_t ndropped;
    bool test_hook; /* limit_s from $GPURUN_TEST_REGEX_BUDGET_S */
};

/* One regex's account in a run (zeroed: nothing spent). */
struct gpurun_regex_spend {
    double spent_s, allowed_s;
    size_t calls;
    bool dropped;
    char what[200]; /* names it in the note: "key 'failure', item 2: '(a|ab)*x'" */
};

/* A budget with nothing spent. */
void gpurun_regex_budget_init(struct gpurun_regex_budget *b);
/* `s` with nothing spent, named by printf(fmt, ...), cut short and in
 * printable ASCII as gpurun_short_text() writes it. */
void gpurun_regex_spend_init(struct gpurun_regex_spend *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* regexec(re, text, nmatch, m, flags) charged to `s` and `b` (b NULL: not
 * bounded); REG_NOMATCH once the regex is dropped. */
int gpurun_regexec_bounded(struct gpurun_regex_budget *b, struct gpurun_regex_spend *s, const regex_t *re,
                           const char *text, size_t nmatch, regmatch_t *m, int flags);

/* Whether `path` lies on a file system other hosts share (NFS, Lustre,
 * GPFS, BeeGFS, CephFS, ...): 1, 0 (its type's name in `fs`), -1 when it
 * cannot be told. */
int gpurun_shared_fs(const char *path, char *fs, size_t size);

/* Absolute path of a program on PATH (a relative or empty entry resolved
 * against the current folder now), or of a path with a '/'; NULL: none. */
char *gpurun_which(const char *prog);

/* Seconds in "90", "90s", "30m", "1h30m", "2d12h", "01:00:00", "45:00",
 * "1-00:00:00"; 0 and "none" mean no limit (job keys timeout,
 * progress_interval; template key stop_grace).  -1: not a duration. */
int gpurun_parse_duration(const char *s, long *out);


#endif
