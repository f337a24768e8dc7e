/* SPDX-License-Identifier: BSD-3-Clause */
/* Workload templates (SPEC §3): the search path, and the file read with the
 * job file's machinery (confparse.c), so that both speak with the same
 * "FILE:LINE: key 'KEY': WHAT" errors.  The checks here are those that a
 * template, unlike a job file, needs: every regex compiles and has a group
 * for the value, every ${name} is well written, no command needs a shell. */
#include "config.h"

#include <confuse.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <regex.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "confparse.h"
#include "progress.h"
#include "safefile.h"
#include "template.h"
#include "util.h"

#ifndef GPURUN_PKGDATADIR /* set by the build; this for a standalone one */
#define GPURUN_PKGDATADIR "/usr/local/share/gpurun"
#endif

#define TEMPLATE_FILE_MAX (1024 * 1024)
#define SUGGEST_SCAN_MAX 4096 /* folder entries read for a "did you mean" */

static const char *const titled[] = {"fom", NULL};
static const char *const better_names[] = {"higher", "lower"};
static const char *const kind_names[] = {"throughput", "time", "other"};
static const char *const rank_env_names[] = {"torchrun"};

/* ---- the search path -------------------------------------------------- */

struct dirs {
    char **v;
    bool *installed; /* gpurun's own templates: trusted as gpurun itself is */
    size_t n;
};

static void dirs_add_as(struct dirs *d, char *dir, bool installed)
{
    for (size_t i = 0; i < d->n; i++) {
        if (strcmp(d->v[i], dir) == 0) {
            /* An installed folder also named in $GPURUN_TEMPLATE_PATH is
             * still the installed one (its site profiles hold, below). */
            d->installed[i] = d->installed[i] || installed;
            free(dir);
            return;
        }
    }
    d->v = gpurun_xrealloc(d->v, (d->n + 1) * sizeof *d->v);
    d->installed = gpurun_xrealloc(d->installed, (d->n + 1) * sizeof *d->installed);
    d->installed[d->n] = installed;
    d->v[d->n++] = dir;
}

static void dirs_add(struct dirs *d, char *dir)
{
    dirs_add_as(d, dir, false);
}

static void dirs_free(struct dirs *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->v[i]);
    free(d->v);
    free(d->installed);
}

/* The folders in search order, each once. */
static void search_path(const char *job_dir, struct dirs *d)
{
    if (job_dir && *job_dir)
        dirs_add(d, gpurun_xstrdup(job_dir));
    const char *env = getenv("GPURUN_TEMPLATE_PATH");
    for (const char *p = env; p && *p;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        if (n) /* an empty entry is no folder (not ".", as in $PATH) */
            dirs_add(d, gpurun_xstrndup(p, n));
        p += n + (colon ? 1 : 0);
    }
    const char *home = getenv("HOME");
    if (home && *home)
        dirs_add(d, gpurun_xasprintf("%s/.config/gpurun/templates", home));
    dirs_add_as(d, gpurun_xstrdup(GPURUN_PKGDATADIR "/templates"), true);
    /* Installed elsewhere than configured (a moved --prefix): next to the
     * program, as PREFIX/bin/gpurun and PREFIX/share/gpurun/templates. */
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            char *rel = gpurun_xasprintf("%s/../share/gpurun/templates", exe);
            char *real = realpath(rel, NULL);
            free(rel);
            if (real && strcmp(real, GPURUN_PKGDATADIR "/templates"))
                dirs_add_as(d, real, true);
            else
                free(real);
        }
    }
#ifdef GPURUN_SOURCE_TEMPLATES
    /* Run from a build folder, before `make install`: the source tree's. */
    char *src = realpath(GPURUN_SOURCE_TEMPLATES, NULL);
    if (src)
        dirs_add_as(d, src, true);
#endif
}

/* A template or site profile outside gpurun's own folders runs programs
 * as the user: it must be the user's (or root's) in a folder of theirs,
 * not one another user could have put there or changed (exit 2). */
static int check_found(const char *what, const char *name, const char *folder, const char *path,
                       gpurun_error_t *err)
{
    int fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return 0; /* reading it then says why */
    char *label = gpurun_xasprintf("%s '%s' found in %s: refused: the folder", what, name, path);
    int rc = gpurun_check_folder(fd, folder, label, err);
    free(label);
    close(fd);
    struct stat st;
    if (rc == 0 && stat(path, &st) == 0) {
        if (st.st_uid != geteuid() && st.st_uid != 0)
            rc = gpurun_err(err, GPURUN_EXIT_CONFIG,
                            "%s '%s' found in %s: refused: the file is owned by another user (uid %ld); gpurun "
                            "takes a %s only from you, root or its installed folder",
                            what, name, path, (long)st.st_uid, what);
        else if (st.st_mode & 022)
            rc = gpurun_err(err, GPURUN_EXIT_CONFIG,
                            "%s '%s' found in %s: refused: the file is writable by %s; remove the write bit "
                            "(chmod go-w)",
                            what, name, path, (st.st_mode & 002) ? "everyone" : "its group");
    }
    return rc;
}

/* The nearest name that exists in `sub` of the folders, for a misspelt one. */
static char *nearest_name(const char *name, const struct dirs *d, const char *sub)
{
    char **names = NULL;
    size_t n = 0;
    for (size_t i = 0; i < d->n; i++) {
        char *dir = sub ? gpurun_xasprintf("%s/%s", d->v[i], sub) : gpurun_xstrdup(d->v[i]);
        DIR *dp = opendir(dir);
        free(dir);
        if (!dp)
            continue;
        struct dirent *de;
        for (size_t seen = 0; (de = readdir(dp)) && seen < SUGGEST_SCAN_MAX; seen++) {
            size_t len = strlen(de->d_name);
            if (len <= 5 || strcmp(de->d_name + len - 5, ".conf") != 0)
                continue;
            names = gpurun_xrealloc(names, (n + 1) * sizeof *names);
            names[n++] = gpurun_xstrndup(de->d_name, len - 5);
        }
        closedir(dp);
    }
    const char *near = gpurun_conf_closest(name, (const char *const *)names, n);
    char *found = near ? gpurun_xstrdup(near) : NULL;
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return found;
}

int gpurun_search_path_find(const char *what, const char *sub, const char *name, const char *job_dir,
                            char **pathp, gpurun_error_t *err)
{
    struct gpurun_conf_shown a;
    *pathp = NULL;
    if (!gpurun_conf_plain_name_ok(name))
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s '%s': not a valid %s name (letters, digits, '_', '-', "
                          "'.'; a name on the search path, not a file)",
                          what, gpurun_conf_shown(&a, name), what);
    struct dirs d = {0};
    search_path(job_dir, &d);
    const char *slash = sub ? "/" : "", *s = sub ? sub : "";
    for (size_t i = 0; i < d.n; i++) {
        char *path = gpurun_xasprintf("%s%s%s/%s.conf", d.v[i], slash, s, name);
        struct stat st;
        /* There, or there but unreadable: reading it then says why. */
        if (stat(path, &st) == 0 || (errno != ENOENT && errno != ENOTDIR)) {
            char *folder = gpurun_xasprintf("%s%s%s", d.v[i], slash, s);
            int rc = d.installed[i] ? 0 : check_found(what, name, folder, path, err);
            free(folder);
            dirs_free(&d);
            if (rc < 0) {
                free(path);
                return -1;
            }
            *pathp = path;
            return 0;
        }
        free(path);
    }

    char looked[1536] = "";
    for (size_t i = 0; i < d.n; i++) {
        size_t len = strlen(looked);
        snprintf(looked + len, sizeof looked - len, "%s%s%s%s", i ? ", " : "", d.v[i], slash, s);
    }
    char *near = nearest_name(name, &d, sub);
    if (near)
        gpurun_err(err, GPURUN_EXIT_CONFIG, "%s '%s' not found (did you mean '%s'?); looked in %s",
                   what, name, near, looked);
    else
        gpurun_err(err, GPURUN_EXIT_CONFIG,
                   "%s '%s' not found; looked in %s (GPURUN_TEMPLATE_PATH adds folders)", what,
                   name, looked);
    free(near);
    dirs_free(&d);
    return -1;
}

bool gpurun_search_installed(const char *sub, const char *name, const char *found, char **pathp)
{
    *pathp = NULL;
    if (!gpurun_conf_plain_name_ok(name))
        return false;
    struct dirs d = {0};
    search_path(NULL, &d);
    struct stat mine, st;
    bool have_mine = found && stat(found, &mine) == 0;
    for (size_t i = 0; i < d.n && !*pathp; i++) {
        if (!d.installed[i])
            continue;
        char *p = sub ? gpurun_xasprintf("%s/%s/%s.conf", d.v[i], sub, name)
                      : gpurun_xasprintf("%s/%s.conf", d.v[i], name);
        if (stat(p, &st) == 0 && !(have_mine && st.st_dev == mine.st_dev && st.st_ino == mine.st_ino))
            *pathp = p;
        else
            free(p);
    }
    dirs_free(&d);
    return *pathp != NULL;
}

char **gpurun_search_path(const char *job_dir, size_t *np)
{
    struct dirs d = {0};
    search_path(job_dir, &d);
    free(d.installed);
    *np = d.n;
    return d.v;
}

void gpurun_search_path_free(char **dirs, size_t n)
{
    struct dirs d = {.v = dirs, .n = n};
    dirs_free(&d);
}

int gpurun_template_find(const char *name, const char *job_dir, char **pathp, gpurun_error_t *err)
{
    return gpurun_search_path_find("template", NULL, name, job_dir, pathp, err);
}

/* ---- pass 3: what a template needs ------------------------------------ */

/* Any name will do: only how the ${name}s are written is checked here. */
static const char *any_name(const char *name, void *ctx)
{
    (void)name;
    (void)ctx;
    return "";
}

/* A value gpurun expands and runs as a command: well-written ${name}s, and
 * nothing that needs a shell (checked before expansion, so that positions
 * are the file's; a value may still bring an operator in, and is checked
 * again when the command is split to run). */
static void check_command(struct gpurun_conf_ctx *ctx, int line, const char *what,
                          const char *value, bool is_command)
{
    gpurun_error_t err = {0};
    char *out = NULL;
    char **words = NULL;
    if (gpurun_expand(value, any_name, NULL, what, &out, &err) < 0)
        gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK, "%s", err.text);
    else if (is_command && gpurun_expand_words(value, any_name, NULL, what, &words, &err) < 0)
        gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK, "%s: %s", what, err.text);
    free(out);
    gpurun_free_words(words);
}

/* A regex gpurun reads output with: it compiles, and (with `group`) its
 * first group is what it reads.  One with a ${name} in it is whole only once
 * expanded. */
static void check_regex_group(struct gpurun_conf_ctx *ctx, const char *name, const char *value,
                              bool group)
{
    int line = gpurun_conf_record_line(ctx, name);
    if (!line || !value || !*value)
        return;
    struct gpurun_conf_shown a, b;
    char what[256];
    snprintf(what, sizeof what, "key '%s'", gpurun_conf_shown(&a, name));
    if (strstr(value, "${")) {
        check_command(ctx, line, what, value, false);
        return;
    }
    const char *costly = gpurun_regex_cost_problem(value);
    if (costly) {
        gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK, "%s: '%s' is %s", what, gpurun_conf_shown(&b, value), costly);
        return;
    }
    regex_t re;
    int rc = regcomp(&re, value, REG_EXTENDED);
    if (rc != 0) {
        char why[256];
        regerror(rc, &re, why, sizeof why);
        gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK, "%s: '%s' is not a POSIX extended regex: %s",
                         what, gpurun_conf_shown(&b, value), why);
        return;
    }
    if (group && re.re_nsub < 1)
        gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK,
                         "%s: '%s' has no group: put what it reads in parentheses, as in "
                         "\"([0-9.]+) ns/day\"",
                         what, gpurun_conf_shown(&b, value));
    regfree(&re);
}

static void check_regex(struct gpurun_conf_ctx *ctx, const char *name, const char *value)
{
    check_regex_group(ctx, name, value, true);
}

/* An item of `failure`: a POSIX extended regex that compiles, at a cost
 * bounded as a fom's is. */
static void check_failure_regex(struct gpurun_conf_ctx *ctx, int line, unsigned item, const char *value)
{
    struct gpurun_conf_shown a;
    const char *costly = gpurun_regex_cost_problem(value);
    if (costly) {
        gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK, "key 'failure', item %u: '%s' is %s", item,
                         gpurun_conf_shown(&a, value), costly);
        return;
    }
    regex_t re;
    int rc = regcomp(&re, value, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char why[256];
        regerror(rc, &re, why, sizeof why);
        gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK, "key 'failure', item %u: '%s' is not a POSIX extended regex: %s",
                         item, gpurun_conf_shown(&a, value), why);
        return;
    }
    regfree(&re);
}

/* A fom reads by `regex`, or by `header` and `row` (fom.h); `after`
 * either way. */
static void check_fom_keys(struct gpurun_conf_ctx *ctx, cfg_t *fom, const char *base,
                           bool complete)
{
    struct gpurun_conf_shown a;
    char name[512];
    const char *regex = cfg_getstr(fom, "regex"), *header = cfg_getstr(fom, "header"),
               *row = cfg_getstr(fom, "row");
    int line = gpurun_conf_record_line(ctx, base);
    snprintf(name, sizeof name, "%s.header", base);
    int hline = gpurun_conf_record_line(ctx, name);
    if (regex && header && hline)
        gpurun_conf_note(ctx, hline, GPURUN_CONF_CHECK,
                         "key '%s': not with 'regex': a fom reads by a regex, or by a column's "
                         "header and its row",
                         gpurun_conf_shown(&a, name));
    if (complete && line && header && !row)
        gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK,
                         "key '%s': 'header' without 'row' (a regex the line of values matches, "
                         "as in \"^Performance:\")",
                         gpurun_conf_shown(&a, base));
    snprintf(name, sizeof name, "%s.row", base);
    int rline = gpurun_conf_record_line(ctx, name);
    if (row && !header && rline)
        gpurun_conf_note(ctx, rline, GPURUN_CONF_CHECK,
                         "key '%s': 'row' without 'header' (the heading of the value's column, "
                         "as in \"(ns/day)\")",
                         gpurun_conf_shown(&a, name));
    check_regex_group(ctx, name, row, false);
    snprintf(name, sizeof name, "%s.after", base);
    check_regex_group(ctx, name, cfg_getstr(fom, "after"), false);
    snprintf(name, sizeof name, "%s.header", base);
    if (hline && header && strstr(header, "${")) {
        char what[600];
        snprintf(what, sizeof what, "key '%s'", gpurun_conf_shown(&a, name));
        check_command(ctx, hline, what, header, false);
    }
}

static void check_fom(struct gpurun_conf_ctx *ctx, cfg_t *fom, bool complete)
{
    char *base = gpurun_xasprintf("fom.%s", cfg_title(fom));
    static const char *const fields[] = {"file", "regex", "units", "better", "kind", "header", "row", "after"};
    struct gpurun_conf_shown a, b;
    char name[512];
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        snprintf(name, sizeof name, "%s.%s", base, fields[i]);
        gpurun_conf_check_string(ctx, name, cfg_getstr(fom, fields[i]), true);
    }

    int line = gpurun_conf_record_line(ctx, base);
    if (complete && line && !cfg_getstr(fom, "regex") && !cfg_getstr(fom, "header"))
        gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK,
                         "key '%s': no 'regex' (a POSIX extended regex whose first group is the "
                         "value)",
                         gpurun_conf_shown(&a, base));
    snprintf(name, sizeof name, "%s.regex", base);
    check_regex(ctx, name, cfg_getstr(fom, "regex"));
    check_fom_keys(ctx, fom, base, complete);

    static const char *const expanded[] = {"file", "units"}; /* the regexes are checked above */
    for (size_t i = 0; i < sizeof expanded / sizeof *expanded; i++) {
        snprintf(name, sizeof name, "%s.%s", base, expanded[i]);
        line = gpurun_conf_record_line(ctx, name);
        if (line && cfg_getstr(fom, expanded[i])) {
            char what[600];
            snprintf(what, sizeof what, "key '%s'", gpurun_conf_shown(&a, name));
            check_command(ctx, line, what, cfg_getstr(fom, expanded[i]), false);
        }
    }

    snprintf(name, sizeof name, "%s.better", base);
    line = gpurun_conf_record_line(ctx, name);
    const char *better = cfg_getstr(fom, "better");
    if (line && better && *better && strcmp(better, "higher") != 0 &&
        strcmp(better, "lower") != 0) {
        const char *near = gpurun_conf_closest(better, better_names, 2);
        if (near)
            gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK,
                             "key '%s': '%s' is not one of higher, lower (did you mean '%s'?)",
                             gpurun_conf_shown(&a, name), gpurun_conf_shown(&b, better), near);
        else
            gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK,
                             "key '%s': '%s' is not one of higher, lower",
                             gpurun_conf_shown(&a, name), gpurun_conf_shown(&b, better));
    }

    snprintf(name, sizeof name, "%s.kind", base);
    line = gpurun_conf_record_line(ctx, name);
    const char *kind = cfg_getstr(fom, "kind");
    if (line && kind && strcmp(kind, "throughput") != 0 && strcmp(kind, "time") != 0 &&
        strcmp(kind, "other") != 0) {
        const char *near = gpurun_conf_closest(kind, kind_names, 3);
        gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK,
                         "key '%s': '%s' is not one of throughput, time, other%s%s%s",
                         gpurun_conf_shown(&a, name), gpurun_conf_shown(&b, kind), near ? " (did you mean '" : "",
                         near ? near : "", near ? "'?)" : "");
    }
    free(base);
}

/* The keys that say more of the progress lines: nothing without `progress`. */
static const char *const progress_keys[] = {"progress_groups", "progress_file",        "progress_after",
                                            "progress_total",  "progress_total_file",  "progress_total_regex",
                                            "progress_units",  "progress_scale",       "progress_name"};

/* The progress keys (progress.h): each needs `progress`; the groups are
 * words the regex has groups for; a total is a whole number (or one once
 * expanded), from one place; a scale is a positive number. */
static void check_progress(struct gpurun_conf_ctx *ctx, cfg_t *cfg)
{
    struct gpurun_conf_shown a;
    const char *progress = cfg_getstr(cfg, "progress");
    for (size_t i = 0; i < sizeof progress_keys / sizeof *progress_keys; i++) {
        const char *v = cfg_getstr(cfg, progress_keys[i]);
        int line = gpurun_conf_record_line(ctx, progress_keys[i]);
        gpurun_conf_check_string(ctx, progress_keys[i], v, true);
        if (!line || !v)
            continue;
        if (!progress)
            gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK,
                             "key '%s': without 'progress' (the regex of the progress lines) it says nothing",
                             progress_keys[i]);
        static const char *const expanded[] = {"progress_groups", "progress_file", "progress_total",
                                               "progress_total_file", "progress_units", "progress_name"};
        for (size_t k = 0; k < sizeof expanded / sizeof *expanded; k++)
            if (!strcmp(progress_keys[i], expanded[k])) {
                char what[64];
                snprintf(what, sizeof what, "key '%s'", progress_keys[i]);
                check_command(ctx, line, what, v, false);
            }
    }
    check_regex_group(ctx, "progress_after", cfg_getstr(cfg, "progress_after"), false);
    check_regex(ctx, "progress_total_regex", cfg_getstr(cfg, "progress_total_regex"));

    int gline = gpurun_conf_record_line(ctx, "progress_groups");
    const char *groups = cfg_getstr(cfg, "progress_groups");
    enum gpurun_progress_role roles[GPURUN_PROGRESS_GROUPS_MAX];
    int nroles = 0;
    char why[128];
    if (gline && groups && !strstr(groups, "${") &&
        gpurun_progress_groups(groups, roles, &nroles, why, sizeof why) < 0)
        gpurun_conf_note(ctx, gline, GPURUN_CONF_CHECK, "key 'progress_groups': %s", why);
    else if (gline && nroles && progress && !strstr(progress, "${") && !gpurun_regex_cost_problem(progress)) {
        regex_t re;
        if (regcomp(&re, progress, REG_EXTENDED) == 0) {
            if ((int)re.re_nsub < nroles)
                gpurun_conf_note(ctx, gline, GPURUN_CONF_CHECK,
                                 "key 'progress_groups': names %d groups, and 'progress' has %zu", nroles,
                                 re.re_nsub);
            regfree(&re);
        }
    }

    int tline = gpurun_conf_record_line(ctx, "progress_total");
    const char *total = cfg_getstr(cfg, "progress_total");
    if (tline && total && !strstr(total, "${")) {
        char *end;
        errno = 0;
        (void)strtoll(total, &end, 10);
        if (errno || *end || end == total)
            gpurun_conf_note(ctx, tline, GPURUN_CONF_CHECK, "key 'progress_total': '%s' is not a whole number",
                             gpurun_conf_shown(&a, total));
    }
    int fline = gpurun_conf_record_line(ctx, "progress_total_file");
    int rline = gpurun_conf_record_line(ctx, "progress_total_regex");
    bool file = cfg_getstr(cfg, "progress_total_file"), regex = cfg_getstr(cfg, "progress_total_regex");
    if (fline && file && !regex)
        gpurun_conf_note(ctx, fline, GPURUN_CONF_CHECK,
                         "key 'progress_total_file': without 'progress_total_regex' (the lines whose first "
                         "groups multiply to the total)");
    if (rline && regex && !file)
        gpurun_conf_note(ctx, rline, GPURUN_CONF_CHECK,
                         "key 'progress_total_regex': without 'progress_total_file' (the file it reads)");
    if (tline && total && fline && file)
        gpurun_conf_note(ctx, fline, GPURUN_CONF_CHECK,
                         "key 'progress_total_file': not with 'progress_total' (line %d): the total comes from "
                         "one or the other",
                         tline);

    int sline = gpurun_conf_record_line(ctx, "progress_scale");
    const char *scale = cfg_getstr(cfg, "progress_scale");
    if (sline && scale) {
        char *end;
        errno = 0;
        double v = strtod(scale, &end);
        if (errno || *end || end == scale || !(v > 0) || !isfinite(v) || strpbrk(scale, "xXnNiI"))
            gpurun_conf_note(ctx, sline, GPURUN_CONF_CHECK,
                             "key 'progress_scale': '%s' is not a positive number (as \"86.4\": ps per wall "
                             "second to ns/day)",
                             gpurun_conf_shown(&a, scale));
    }
}

static const char *const string_keys[] = {"description", "command", "gpu_args", "progress", "rank_env",
                                          "hpl_dat", "hpl_dat_from", "base"};
/* Lists of plain text (failure: of regexes); a single string is a list of one. */
static const char *const text_lists[] = {"sanity", "failure", "restart", "inputs", "tune_space", "tune_short"};
static const char *const free_sections[] = {"env", "defaults"};

/* A template's base: another template's plain name (found on the search
 * path); what it lacks may be the base's.  Without one, and read whole, a
 * missing description or command is an error. */
static void check_base_and_required(struct gpurun_conf_ctx *ctx, cfg_t *cfg, bool complete)
{
    const char *base = cfg_getstr(cfg, "base");
    int bline = gpurun_conf_record_line(ctx, "base");
    if (bline && base && !gpurun_conf_plain_name_ok(base)) {
        struct gpurun_conf_shown a;
        gpurun_conf_note(ctx, bline, GPURUN_CONF_CHECK,
                         "key 'base': '%s' is not a template's name (a plain name, as \"gromacs\")",
                         gpurun_conf_shown(&a, base));
    }
    bool whole = complete && !base;
    /* Without a line to name: reported after every error that has one. */
    if (whole && !cfg_getstr(cfg, "description"))
        gpurun_conf_note(ctx, GPURUN_CONF_NO_LINE, GPURUN_CONF_CHECK,
                         "key 'description' missing: one line saying what the template runs "
                         "and measures");
    if (whole && !cfg_getstr(cfg, "command"))
        gpurun_conf_note(ctx, GPURUN_CONF_NO_LINE, GPURUN_CONF_CHECK,
                         "key 'command' missing: the program to run and its arguments");
}

/* The commands it runs: command, gpu_args and every setup step. */
static void check_commands(struct gpurun_conf_ctx *ctx, cfg_t *cfg)
{
    static const char *const commands[] = {"command", "gpu_args"};
    for (size_t i = 0; i < 2; i++) {
        int line = gpurun_conf_record_line(ctx, commands[i]);
        const char *v = cfg_getstr(cfg, commands[i]);
        if (line && v) {
            char what[64];
            snprintf(what, sizeof what, "key '%s'", commands[i]);
            check_command(ctx, line, what, v, true);
        }
    }

    int line = gpurun_conf_record_line(ctx, "setup");
    unsigned nsetup = line ? cfg_size(cfg, "setup") : 0;
    for (unsigned i = 0; i < nsetup; i++) {
        const char *v = cfg_getnstr(cfg, "setup", i);
        char buf[128], what[64];
        snprintf(what, sizeof what, "key 'setup', item %u", i + 1);
        const char *why = v ? gpurun_conf_value_problem(v, true, buf, sizeof buf) : NULL;
        if (why)
            gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK, "%s: %s", what, why);
        else if (v)
            check_command(ctx, line, what, v, true);
    }
}

static void check_text_lists(struct gpurun_conf_ctx *ctx, cfg_t *cfg)
{
    for (size_t k = 0; k < sizeof text_lists / sizeof *text_lists; k++) {
        int tline = gpurun_conf_record_line(ctx, text_lists[k]);
        unsigned n = tline ? cfg_size(cfg, text_lists[k]) : 0;
        for (unsigned i = 0; i < n; i++) {
            const char *v = cfg_getnstr(cfg, text_lists[k], i);
            char buf[128];
            const char *why = v ? gpurun_conf_value_problem(v, true, buf, sizeof buf) : NULL;
            if (why)
                gpurun_conf_note(ctx, tline, GPURUN_CONF_CHECK, "key '%s', item %u: %s", text_lists[k], i + 1, why);
            else if (v && !strcmp(text_lists[k], "failure"))
                check_failure_regex(ctx, tline, i + 1, v);
        }
    }
}

/* The launcher families whose rank environment gpurun can give. */
static void check_rank_env(struct gpurun_conf_ctx *ctx, cfg_t *cfg)
{
    int rline = gpurun_conf_record_line(ctx, "rank_env");
    const char *rank_env = cfg_getstr(cfg, "rank_env");
    if (rline && rank_env && strcmp(rank_env, "torchrun") != 0) {
        struct gpurun_conf_shown a;
        const char *near = gpurun_conf_closest(rank_env, rank_env_names, 1);
        gpurun_conf_note(ctx, rline, GPURUN_CONF_CHECK, "key 'rank_env': '%s' is not one of torchrun%s%s%s",
                         gpurun_conf_shown(&a, rank_env), near ? " (did you mean '" : "", near ? near : "",
                         near ? "'?)" : "");
    }
}

/* hpl_dat: a file of the run folder, named plainly; hpl_dat_from with it. */
static void check_hpl_dat(struct gpurun_conf_ctx *ctx, cfg_t *cfg)
{
    struct gpurun_conf_shown hs;
    int hline = gpurun_conf_record_line(ctx, "hpl_dat");
    const char *hpl = cfg_getstr(cfg, "hpl_dat");
    if (hline && hpl && *hpl && (strchr(hpl, '/') || strstr(hpl, "${") || !strcmp(hpl, ".") || !strcmp(hpl, "..")))
        gpurun_conf_note(ctx, hline, GPURUN_CONF_CHECK,
                         "key 'hpl_dat': '%s' is not a plain file name (the run folder's copy of HPL's input, as "
                         "\"hpccinf.txt\")",
                         gpurun_conf_shown(&hs, hpl));
    int fromline = gpurun_conf_record_line(ctx, "hpl_dat_from");
    if (fromline && cfg_getstr(cfg, "hpl_dat_from")) {
        if (!hpl)
            gpurun_conf_note(ctx, fromline, GPURUN_CONF_CHECK,
                             "key 'hpl_dat_from': without 'hpl_dat' (the copy to edit) it says nothing");
        check_command(ctx, fromline, "key 'hpl_dat_from'", cfg_getstr(cfg, "hpl_dat_from"), false);
    }
}

/* version: a regex with a group; version_file a name to expand. */
static void check_version(struct gpurun_conf_ctx *ctx, cfg_t *cfg)
{
    gpurun_conf_check_string(ctx, "version", cfg_getstr(cfg, "version"), true);
    gpurun_conf_check_string(ctx, "version_file", cfg_getstr(cfg, "version_file"), true);
    check_regex_group(ctx, "version", cfg_getstr(cfg, "version"), true);
    int vline = gpurun_conf_record_line(ctx, "version_file");
    if (vline && cfg_getstr(cfg, "version_file")) {
        if (!cfg_getstr(cfg, "version"))
            gpurun_conf_note(ctx, vline, GPURUN_CONF_CHECK,
                             "key 'version_file': without 'version' (the regex of the version) it says nothing");
        check_command(ctx, vline, "key 'version_file'", cfg_getstr(cfg, "version_file"), false);
    }
}

/* `complete`: libconfuse read the whole file, so a key it lacks is missing
 * (not merely after an error). */
static void check_template(struct gpurun_conf_ctx *ctx, cfg_t *cfg, bool complete)
{
    gpurun_container_check(ctx, cfg);
    for (size_t i = 0; i < sizeof string_keys / sizeof *string_keys; i++)
        gpurun_conf_check_string(ctx, string_keys[i], cfg_getstr(cfg, string_keys[i]), true);
    check_base_and_required(ctx, cfg, complete);
    check_commands(ctx, cfg);
    check_text_lists(ctx, cfg);
    /* Its groups are what progress_groups says; "step" (one) by default. */
    check_regex_group(ctx, "progress", cfg_getstr(cfg, "progress"), !cfg_getstr(cfg, "progress_groups"));
    check_progress(ctx, cfg);
    check_rank_env(ctx, cfg);
    check_hpl_dat(ctx, cfg);
    check_version(ctx, cfg);
    unsigned nfoms = cfg_size(cfg, "fom");
    for (unsigned i = 0; i < nfoms; i++)
        check_fom(ctx, cfg_getnsec(cfg, "fom", i), complete);
    for (size_t s = 0; s < sizeof free_sections / sizeof *free_sections; s++)
        gpurun_conf_check_section(ctx, cfg, free_sections[s]);
}

/* ---- conversion ------------------------------------------------------- */

static void *convert(const struct gpurun_conf_ctx *ctx, cfg_t *cfg)
{
    gpurun_template_t *t = gpurun_xcalloc(1, sizeof *t);
    t->path = gpurun_xstrdup(ctx->label);
    t->name = gpurun_conf_label_name(ctx->label);
    /* NULL only with a base, which gives them (template_base.c). */
    t->description = gpurun_conf_strdup(cfg_getstr(cfg, "description"));
    t->command = gpurun_conf_strdup(cfg_getstr(cfg, "command"));
    t->gpu_args = gpurun_conf_strdup(cfg_getstr(cfg, "gpu_args"));
    t->nsetup = cfg_size(cfg, "setup");
    t->setup = gpurun_xcalloc(t->nsetup, sizeof *t->setup);
    for (size_t i = 0; i < t->nsetup; i++)
        t->setup[i] = gpurun_xstrdup(cfg_getnstr(cfg, "setup", (unsigned)i));
    t->ninputs = cfg_size(cfg, "inputs");
    t->inputs = gpurun_xcalloc(t->ninputs, sizeof *t->inputs);
    for (size_t i = 0; i < t->ninputs; i++)
        t->inputs[i] = gpurun_xstrdup(cfg_getnstr(cfg, "inputs", (unsigned)i));
    t->inputs_line = gpurun_conf_record_line(ctx, "inputs");
    t->defaults_line = gpurun_conf_record_line(ctx, "defaults");
    t->nfoms = cfg_size(cfg, "fom");
    t->foms = gpurun_xcalloc(t->nfoms, sizeof *t->foms);
    for (size_t i = 0; i < t->nfoms; i++) {
        cfg_t *f = cfg_getnsec(cfg, "fom", (unsigned)i);
        struct gpurun_fom *fom = &t->foms[i];
        fom->name = gpurun_xstrdup(cfg_title(f));
        fom->file = gpurun_conf_strdup(cfg_getstr(f, "file"));
        fom->regex = gpurun_conf_strdup(cfg_getstr(f, "regex"));
        fom->header = gpurun_conf_strdup(cfg_getstr(f, "header"));
        fom->row = gpurun_conf_strdup(cfg_getstr(f, "row"));
        fom->after = gpurun_conf_strdup(cfg_getstr(f, "after"));
        fom->optional = cfg_getbool(f, "optional");
        fom->units = gpurun_xstrdup(cfg_getstr(f, "units") ? cfg_getstr(f, "units") : "");
        fom->better = gpurun_xstrdup(cfg_getstr(f, "better") ? cfg_getstr(f, "better") : "higher");
        fom->kind = gpurun_conf_strdup(cfg_getstr(f, "kind"));
    }
    t->nsanity = cfg_size(cfg, "sanity");
    t->sanity_forms = gpurun_xcalloc(t->nsanity, sizeof *t->sanity_forms);
    for (size_t i = 0; i < t->nsanity; i++)
        t->sanity_forms[i] = gpurun_xstrdup(cfg_getnstr(cfg, "sanity", (unsigned)i));
    t->sanity = t->nsanity ? gpurun_xstrdup(t->sanity_forms[0]) : NULL;
    t->nfailure = cfg_size(cfg, "failure");
    t->failure = gpurun_xcalloc(t->nfailure, sizeof *t->failure);
    t->failure_re = gpurun_xcalloc(t->nfailure, sizeof *t->failure_re);
    t->failure_spend = gpurun_xcalloc(t->nfailure, sizeof *t->failure_spend);
    t->regex_budget = gpurun_xcalloc(1, sizeof *t->regex_budget);
    for (size_t i = 0; i < t->nfailure; i++) {
        t->failure[i] = gpurun_xstrdup(cfg_getnstr(cfg, "failure", (unsigned)i));
        /* check_failure_regex passed it; should it still not compile, a
         * pattern that no line (read without its newline) can match. */
        if (regcomp(&t->failure_re[i], t->failure[i], REG_EXTENDED | REG_NOSUB) != 0)
            regcomp(&t->failure_re[i], "\n", REG_EXTENDED | REG_NOSUB);
    }
    gpurun_template_regex_reset(t);
    for (int w = 0; w < 2; w++) { /* gpurun tune's space and short run (tune.h) */
        const char *key = w ? "tune_short" : "tune_space";
        size_t n = cfg_size(cfg, key);
        char **l = gpurun_xcalloc(n + 1, sizeof *l);
        for (size_t i = 0; i < n; i++)
            l[i] = gpurun_xstrdup(cfg_getnstr(cfg, key, (unsigned)i));
        *(w ? &t->tune_short : &t->tune_space) = l;
        *(w ? &t->ntune_short : &t->ntune_space) = n;
    }
    t->nrestart = cfg_size(cfg, "restart");
    t->restart = gpurun_xcalloc(t->nrestart, sizeof *t->restart);
    for (size_t i = 0; i < t->nrestart; i++)
        t->restart[i] = gpurun_xstrdup(cfg_getnstr(cfg, "restart", (unsigned)i));
    t->progress = gpurun_conf_strdup(cfg_getstr(cfg, "progress"));
    t->progress_groups = gpurun_conf_strdup(cfg_getstr(cfg, "progress_groups"));
    t->progress_file = gpurun_conf_strdup(cfg_getstr(cfg, "progress_file"));
    t->version = gpurun_conf_strdup(cfg_getstr(cfg, "version"));
    t->version_file = gpurun_conf_strdup(cfg_getstr(cfg, "version_file"));
    t->progress_after = gpurun_conf_strdup(cfg_getstr(cfg, "progress_after"));
    t->progress_total = gpurun_conf_strdup(cfg_getstr(cfg, "progress_total"));
    t->progress_total_line = gpurun_conf_record_line(ctx, "progress_total");
    t->progress_total_file = gpurun_conf_strdup(cfg_getstr(cfg, "progress_total_file"));
    t->progress_total_regex = gpurun_conf_strdup(cfg_getstr(cfg, "progress_total_regex"));
    t->progress_units = gpurun_conf_strdup(cfg_getstr(cfg, "progress_units"));
    t->progress_name = gpurun_conf_strdup(cfg_getstr(cfg, "progress_name"));
    t->progress_scale = gpurun_conf_strdup(cfg_getstr(cfg, "progress_scale"));
    t->rank_env = gpurun_conf_strdup(cfg_getstr(cfg, "rank_env"));
    t->hpl_dat = gpurun_conf_strdup(cfg_getstr(cfg, "hpl_dat"));
    t->hpl_dat_from = gpurun_conf_strdup(cfg_getstr(cfg, "hpl_dat_from"));
    t->stop_signal = (int)cfg_getint(cfg, "stop_signal");
    t->stop_grace_s = cfg_getint(cfg, "stop_grace");
    t->base = gpurun_conf_strdup(cfg_getstr(cfg, "base"));
    t->own = gpurun_template_own_keys(ctx);
    gpurun_conf_take_kvlist(cfg, "env", &t->env);
    gpurun_conf_take_kvlist(cfg, "defaults", &t->defaults);
    gpurun_container_take(ctx, cfg, &t->container);
    return t;
}

/* ---- entry points ----------------------------------------------------- */

int gpurun_stop_signal_number(const char *name)
{
    static const struct {
        const char *name;
        int sig;
    } sigs[] = {{"TERM", SIGTERM}, {"INT", SIGINT}, {"HUP", SIGHUP}, {"QUIT", SIGQUIT},
                {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"XCPU", SIGXCPU}};
    if (!strncmp(name, "SIG", 3))
        name += 3;
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        if (!strcmp(name, sigs[i].name))
            return sigs[i].sig;
    return 0;
}

static int cb_stop_signal(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    struct gpurun_conf_shown a;
    if (!value || !gpurun_stop_signal_number(value))
        return gpurun_conf_value_error(cfg, opt, "'%s' is not a stop signal: TERM, INT, HUP, QUIT, USR1, USR2 or XCPU",
                                       gpurun_conf_shown(&a, value));
    *(long *)result = gpurun_stop_signal_number(value);
    return 0;
}

static int cb_stop_grace(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    struct gpurun_conf_shown a;
    long secs;
    if (!value || gpurun_parse_duration(value, &secs) < 0 || secs > 3600)
        return gpurun_conf_value_error(cfg, opt, "expected a duration of at most an hour such as \"30s\" or \"2m\", "
                                       "got '%s'", gpurun_conf_shown(&a, value));
    *(long *)result = secs;
    return 0;
}

void gpurun_template_regex_reset(gpurun_template_t *t)
{
    gpurun_regex_budget_init(t->regex_budget);
    for (size_t i = 0; i < t->nfailure; i++)
        gpurun_regex_spend_init(&t->failure_spend[i], "key 'failure', item %zu: '%s'", i + 1, t->failure[i]);
}

int gpurun_template_parse(const char *text, size_t len, const char *label, gpurun_template_t **tp,
                          gpurun_error_t *err)
{
    /* The schema.  Local: cfg_init() copies it. */
    cfg_opt_t fom_opts[] = {
        CFG_STR("file", NULL, CFGF_NONE),
        CFG_STR("regex", NULL, CFGF_NONE),
        CFG_STR("units", NULL, CFGF_NONE),
        CFG_STR("better", NULL, CFGF_NONE),
        CFG_STR("kind", NULL, CFGF_NONE),
        CFG_STR("header", NULL, CFGF_NONE),
        CFG_STR("row", NULL, CFGF_NONE),
        CFG_STR("after", NULL, CFGF_NONE),
        CFG_BOOL_CB("optional", cfg_false, CFGF_NONE, gpurun_conf_cb_bool),
        CFG_END(),
    };
    cfg_opt_t container_opts[] = GPURUN_CONTAINER_JOB_OPTS;
    cfg_opt_t opts[] = {
        CFG_STR("description", NULL, CFGF_NONE),
        CFG_STR("command", NULL, CFGF_NONE),
        CFG_STR("gpu_args", NULL, CFGF_NONE),
        CFG_STR_LIST("setup", NULL, CFGF_NONE),
        CFG_STR_LIST("inputs", NULL, CFGF_NONE),
        CFG_SEC("fom", fom_opts, CFGF_MULTI | CFGF_TITLE | CFGF_NO_TITLE_DUPES),
        CFG_STR_LIST("sanity", NULL, CFGF_NONE),
        CFG_STR_LIST("failure", NULL, CFGF_NONE),
        CFG_STR_LIST("restart", NULL, CFGF_NONE),
        CFG_STR_LIST("tune_space", NULL, CFGF_NONE),
        CFG_STR_LIST("tune_short", NULL, CFGF_NONE),
        CFG_STR("progress", NULL, CFGF_NONE),
        CFG_STR("progress_groups", NULL, CFGF_NONE),
        CFG_STR("progress_file", NULL, CFGF_NONE),
        CFG_STR("version", NULL, CFGF_NONE),
        CFG_STR("version_file", NULL, CFGF_NONE),
        CFG_STR("progress_after", NULL, CFGF_NONE),
        CFG_STR("progress_total", NULL, CFGF_NONE),
        CFG_STR("progress_total_file", NULL, CFGF_NONE),
        CFG_STR("progress_total_regex", NULL, CFGF_NONE),
        CFG_STR("progress_units", NULL, CFGF_NONE),
        CFG_STR("progress_name", NULL, CFGF_NONE),
        CFG_STR("progress_scale", NULL, CFGF_NONE),
        CFG_STR("rank_env", NULL, CFGF_NONE),
        CFG_STR("hpl_dat", NULL, CFGF_NONE),
        CFG_STR("hpl_dat_from", NULL, CFGF_NONE),
        CFG_INT_CB("stop_signal", 0, CFGF_NONE, cb_stop_signal),
        CFG_INT_CB("stop_grace", -1, CFGF_NONE, cb_stop_grace),
        CFG_STR("base", NULL, CFGF_NONE),
        CFG_SEC("env", NULL, CFGF_KEYSTRVAL),
        CFG_SEC("defaults", NULL, CFGF_KEYSTRVAL),
        CFG_SEC("container", container_opts, CFGF_NONE),
        CFG_END(),
    };

    struct gpurun_conf_file f = {.label = label,
                                 .what = "the template",
                                 .schema = opts,
                                 .titled = titled,
                                 .check = check_template,
                                 .convert = convert};
    void *t;
    int rc = gpurun_conf_read(&f, text, len, &t, err);
    *tp = t;
    return rc;
}

int gpurun_template_parse_file(const char *path, gpurun_template_t **tp, gpurun_error_t *err)
{
    char *text;
    size_t len;
    *tp = NULL;
    if (gpurun_read_file(path, "template", TEMPLATE_FILE_MAX, &text, &len, err) < 0)
        return -1;
    int rc = gpurun_template_parse(text, len, path, tp, err);
    free(text);
    return rc;
}

/* The keys a base gives whole (template_base.c).  A string: `n` is 0. A list: `n` is its count. */
const struct gpurun_template_key gpurun_template_keys[] = {
#define S(k) {#k, offsetof(gpurun_template_t, k), 0}
#define L(k, cnt) {#k, offsetof(gpurun_template_t, k), offsetof(gpurun_template_t, cnt)}
    S(description),     S(command),        S(gpu_args),          S(progress),
    S(progress_groups), S(progress_file),  S(progress_after),    S(progress_total),
    S(progress_total_file), S(progress_total_regex), S(progress_units), S(progress_name),
    S(progress_scale),  S(rank_env),       S(hpl_dat),           S(hpl_dat_from),
    S(version),         S(version_file),   L(setup, nsetup),     L(inputs, ninputs),
    L(restart, nrestart), L(tune_space, ntune_space), L(tune_short, ntune_short),
    {"sanity", offsetof(gpurun_template_t, sanity_forms), offsetof(gpurun_template_t, nsanity)},
    {"failure", offsetof(gpurun_template_t, failure), offsetof(gpurun_template_t, nfailure)},
    {"container", 0, 0},
    {"stop_signal", 0, 0}, /* numbers, copied */
    {"stop_grace", 0, 0},
#undef S
#undef L
};
#define NKEYS (sizeof gpurun_template_keys / sizeof *gpurun_template_keys)
const size_t gpurun_template_nkeys = NKEYS;
_Static_assert(NKEYS <= 64, "one bit per key in gpurun_template_t's own");

unsigned long long gpurun_template_own_keys(const struct gpurun_conf_ctx *ctx)
{
    unsigned long long own = 0;
    for (size_t i = 0; i < NKEYS; i++)
        if (gpurun_conf_record_line(ctx, gpurun_template_keys[i].name))
            own |= 1ULL << i;
    return own;
}

void gpurun_template_destroy(gpurun_template_t *t)
{
    if (!t)
        return;
    gpurun_container_spec_clear(&t->container);
    free(t->path);
    free(t->name);
    free(t->description);
    free(t->command);
    free(t->gpu_args);
    for (size_t i = 0; i < t->nsetup; i++)
        free(t->setup[i]);
    free(t->setup);
    for (size_t i = 0; i < t->ninputs; i++)
        free(t->inputs[i]);
    free(t->inputs);
    for (size_t i = 0; i < t->nfoms; i++) {
        free(t->foms[i].name);
        free(t->foms[i].file);
        free(t->foms[i].regex);
        free(t->foms[i].units);
        free(t->foms[i].better);
        free(t->foms[i].kind);
        free(t->foms[i].header);
        free(t->foms[i].row);
        free(t->foms[i].after);
    }
    free(t->foms);
    free(t->sanity);
    for (size_t i = 0; i < t->nsanity; i++)
        free(t->sanity_forms[i]);
    free(t->sanity_forms);
    for (size_t i = 0; i < t->nfailure; i++) {
        free(t->failure[i]);
        regfree(&t->failure_re[i]);
    }
    free(t->failure);
    free(t->failure_re);
    free(t->failure_spend);
    free(t->regex_budget);
    for (size_t i = 0; i < t->ntune_space; i++)
        free(t->tune_space[i]);
    free(t->tune_space);
    for (size_t i = 0; i < t->ntune_short; i++)
        free(t->tune_short[i]);
    free(t->tune_short);
    for (size_t i = 0; i < t->nrestart; i++)
        free(t->restart[i]);
    free(t->restart);
    free(t->progress);
    free(t->progress_groups);
    free(t->progress_file);
    free(t->version);
    free(t->version_file);
    free(t->progress_after);
    free(t->progress_total);
    free(t->progress_total_file);
    free(t->progress_total_regex);
    free(t->progress_units);
    free(t->progress_name);
    free(t->progress_scale);
    free(t->rank_env);
    free(t->hpl_dat);
    free(t->hpl_dat_from);
    free(t->base);
    gpurun_kvlist_clear(&t->env);
    gpurun_kvlist_clear(&t->defaults);
    free(t);
}

static void set_long(struct gpurun_kvlist *names, const char *key, long v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", v);
    gpurun_kvlist_set(names, key, buf);
}

void gpurun_job_names(struct gpurun_kvlist *names, const struct gpurun_job_values *v,
                      const gpurun_template_t *tpl, const struct gpurun_kvlist *params)
{
    gpurun_kvlist_set(names, "job", v->job);
    set_long(names, "nodes", v->nodes);
    set_long(names, "ranks_per_node", v->ranks_per_node);
    set_long(names, "ranks", v->ranks);
    set_long(names, "gpus_per_rank", v->gpus_per_rank);
    set_long(names, "threads_per_rank", v->threads_per_rank);
    set_long(names, "repeat", v->repeat);
    gpurun_kvlist_set(names, "job_dir", v->job_dir);
    gpurun_kvlist_set(names, "run_dir", v->run_dir);
    if (v->template_name)
        gpurun_kvlist_set(names, "template", v->template_name);
    for (size_t i = 0; tpl && i < tpl->defaults.n; i++)
        gpurun_kvlist_set(names, tpl->defaults.items[i].key, tpl->defaults.items[i].value);
    for (size_t i = 0; i < params->n; i++)
        gpurun_kvlist_set(names, params->items[i].key, params->items[i].value);
    for (size_t i = 0; tpl && v->job_dir && i < tpl->ninputs; i++) {
        char name[128];
        const char *val;
        if (gpurun_template_input_name(tpl->inputs[i], name, sizeof name) && (val = gpurun_kvlist_get(names, name)) &&
            *val && *val != '/') {
            char *abs = gpurun_xasprintf("%s/%s", v->job_dir, strncmp(val, "./", 2) ? val : val + 2);
            gpurun_kvlist_set(names, name, abs);
            free(abs);
        }
    }
}

bool gpurun_template_input_name(const char *input, char *name, size_t size)
{
    size_t n = strlen(input);
    if (n < 4 || n - 3 >= size || strncmp(input, "${", 2) != 0 || input[n - 1] != '}')
        return false;
    if (!isalpha((unsigned char)input[2]) && input[2] != '_')
        return false;
    for (size_t i = 2; i < n - 1; i++)
        if (!isalnum((unsigned char)input[i]) && input[i] != '_')
            return false;
    memcpy(name, input + 2, n - 3);
    name[n - 3] = '\0';
    return true;
}
