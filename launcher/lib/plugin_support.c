/* SPDX-License-Identifier: BSD-3-Clause */
/* What plugins call (plugin_support.h): argv and launch commands for
 * launcher plugins, the rank step they start, and the helpers manager
 * plugins write scripts and run their tools with.  In the library, below
 * launcher/run and plugins/, so that a plugin needs nothing above it. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_support.h"
#include "tool.h"
#include "util.h"

/* --- launcher plugins -------------------------------------------------------- */

char **gpurun_argv_new(void)
{
    return gpurun_xcalloc(1, sizeof(char *));
}

void gpurun_argv_add(char ***argv, const char *s)
{
    size_t n = 0;
    while ((*argv)[n])
        n++;
    *argv = gpurun_xrealloc(*argv, (n + 2) * sizeof(char *));
    (*argv)[n] = gpurun_xstrdup(s);
    (*argv)[n + 1] = NULL;
}

void gpurun_argv_addf(char ***argv, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = gpurun_xvasprintf(fmt, ap);
    va_end(ap);
    gpurun_argv_add(argv, s);
    free(s);
}

void gpurun_argv_free(char **argv)
{
    if (!argv)
        return;
    for (char **a = argv; *a; a++)
        free(*a);
    free(argv);
}

void gpurun_launch_cmds_free(struct gpurun_launch_cmds *c)
{
    for (int i = 0; i < c->count; i++) {
        gpurun_argv_free(c->argv[i]);
        gpurun_argv_free(c->env[i]);
    }
    free(c->argv);
    free(c->env);
    c->argv = c->env = NULL;
    c->count = 0;
}

void gpurun_launch_cmds_one(struct gpurun_launch_cmds *out, char **argv)
{
    out->count = 1;
    out->argv = gpurun_xcalloc(1, sizeof(char **));
    out->env = gpurun_xcalloc(1, sizeof(char **));
    out->argv[0] = argv;
    out->env[0] = gpurun_argv_new();
}

static int (*launcher_lookup)(const char *, const struct gpurun_launcher_plugin **, gpurun_error_t *);

void gpurun_launcher_lookup_set(int (*find)(const char *name, const struct gpurun_launcher_plugin **pp,
                                            gpurun_error_t *why))
{
    launcher_lookup = find;
}

int gpurun_launcher_named(const char *name, const struct gpurun_launcher_plugin **pp, gpurun_error_t *why)
{
    *pp = NULL;
    if (!launcher_lookup)
        return gpurun_err(why, GPURUN_EXIT_ENV, "launcher %s: no launcher table in this program", name);
    return launcher_lookup(name, pp, why);
}

const char *gpurun_rank_program(const char *gpurun_path)
{
    static char *found, *found_for;
    if (found_for && !strcmp(found_for, gpurun_path))
        return found;
    free(found);
    free(found_for);
    found = NULL;
    found_for = gpurun_xstrdup(gpurun_path);
    const char *full = getenv("GPURUN_FULL_RANK_STEP"); /* "1": `gpurun rank` (to compare) */
    if (full && !strcmp(full, "1"))
        return NULL;
    const char *slash = strrchr(gpurun_path, '/');
    int dl = slash ? (int)(slash - gpurun_path) : 1;
    const char *dir = slash ? gpurun_path : ".";
    char *cand[] = {gpurun_xasprintf("%.*s/gpurun-rank", dl, dir),
                    gpurun_xasprintf("%.*s/../libexec/gpurun/gpurun-rank", dl, dir),
#ifdef GPURUN_PKGLIBEXECDIR /* (not in the fuzz harnesses' builds) */
                    gpurun_xstrdup(GPURUN_PKGLIBEXECDIR "/gpurun-rank"),
#endif
                    NULL};
    for (size_t i = 0; cand[i]; i++) {
        if (!found && gpurun_executable_file(cand[i]))
            found = realpath(cand[i], NULL);
        free(cand[i]);
    }
    return found;
}

void gpurun_argv_add_rank_step(char ***argv, const struct gpurun_launch_request *req)
{
    /* The lean rank step when there is one: it runs `gpurun rank` itself
     * when it must (a host to plan; another version of it). */
    const char *lean = gpurun_rank_program(req->rank_step);
    if (lean) {
        gpurun_argv_add(argv, lean);
        gpurun_argv_add(argv, "--gpurun");
        gpurun_argv_add(argv, req->rank_step);
        gpurun_argv_add(argv, "--version");
        gpurun_argv_add(argv, PACKAGE_VERSION);
        gpurun_argv_add(argv, "--run-dir");
        gpurun_argv_add(argv, req->run_dir);
        gpurun_argv_add(argv, "--");
        for (char *const *a = req->app_argv; *a; a++)
            gpurun_argv_add(argv, *a);
        return;
    }
    gpurun_argv_add(argv, req->rank_step);
    gpurun_argv_add(argv, "rank");
    gpurun_argv_add(argv, "--run-dir");
    gpurun_argv_add(argv, req->run_dir);
    gpurun_argv_add(argv, "--");
    for (char *const *a = req->app_argv; *a; a++)
        gpurun_argv_add(argv, *a);
}

int gpurun_need_program(const char *prog, const char *hint, gpurun_error_t *why)
{
    char *p = gpurun_which(prog);
    if (!p)
        return gpurun_err(why, GPURUN_EXIT_ENV, "%s was not found on PATH%s%s%s", prog, hint ? " (" : "",
                          hint ? hint : "", hint ? ")" : "");
    free(p);
    return 0;
}

/* --- resource-manager plugins ------------------------------------------------ */

void gpurun_rm_put_comment(FILE *f, const char *s)
{
    char *t = gpurun_comment_text(s); /* the one escaping of gpurun's comments (util.h) */
    fputs(t, f);
    free(t);
}

void gpurun_rm_check(const struct gpurun_rm_doctor *d, const char *id, const char *title, int status,
                     const char *fix, const char *fmt, ...)
{
    char detail[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    d->check(d->ctx, id, title, status, fix, detail);
}

int gpurun_rm_submit_tool(char *const argv[], int script_fd, size_t max, const char *name, const char *where,
                          const char *title, const char *script, char **outp, gpurun_error_t *err)
{
    int status = 0, e = 0;
    *outp = NULL;
    int rc = gpurun_rm_tool(argv, script_fd, max, outp, &status, &e);
    if (rc == -2)
        return gpurun_err(err, GPURUN_EXIT_ENV, "submit: cannot start %s: %s", name, strerror(e));
    if (rc < 0 && e == ENOENT)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "submit: %s was not found on PATH: is this %s? The batch script is at %s; submit it with %s "
                          "where %s runs.",
                          argv[0], where, script, name, title);
    if (rc < 0)
        return gpurun_err(err, GPURUN_EXIT_ENV, "submit: cannot run %s: %s (the batch script is at %s)", name,
                          strerror(e), script);
    if (status > 128 && status < 128 + 65)
        gpurun_err(err, GPURUN_EXIT_ENV, "submit: %s was killed by signal %d; the batch script is at %s", name,
                   status - 128, script);
    else if (status != 0)
        gpurun_err(err, GPURUN_EXIT_ENV,
                   "submit: %s refused the job (exit status %d, its message is above); the batch script is at %s",
                   name, status, script);
    if (status == 0)
        return 0;
    free(*outp);
    *outp = NULL;
    return -1;
}

const char *gpurun_rm_value_refusal(const char *v, const char *cr_note, char *why, size_t whylen)
{
    if (!*v)
        return "empty value";
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p < 0x20 || *p == 0x7f) {
            bool cr = *p == '\r' && cr_note;
            snprintf(why, whylen, "control character 0x%02x%s%s%s", *p, *p == '\n' ? " (line break)" : cr ? " (" : "",
                     cr ? cr_note : "", cr ? ")" : "");
            return why;
        }
    return NULL;
}

static bool id_byte(unsigned char c, enum gpurun_rm_id_bytes bytes)
{
    if (bytes == GPURUN_RM_ID_DIGITS)
        return c >= '0' && c <= '9';
    return c >= 0x21 && c != 0x7f && (c < 0x80 || bytes == GPURUN_RM_ID_UTF8);
}

size_t gpurun_rm_job_id(const char *out, const char *ends, enum gpurun_rm_id_bytes bytes, size_t max,
                        const char **idp)
{
    const char *p = out + strspn(out, " \t\r\n");
    size_t len = strcspn(p, ends);
    bool ok = len > 0 && len < max;
    for (size_t i = 0; i < len && ok; i++)
        ok = id_byte((unsigned char)p[i], bytes);
    *idp = p;
    return ok ? len : 0;
}

int gpurun_rm_output_says(const char *out, const char *const rules[][GPURUN_RM_LINE_WORDS], size_t nrules)
{
    for (const char *line = out; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        for (size_t r = 0; r < nrules; r++) {
            bool all = rules[r][0] != NULL;
            for (size_t w = 0; all && w < GPURUN_RM_LINE_WORDS && rules[r][w]; w++)
                all = memmem(line, n, rules[r][w], strlen(rules[r][w])) != NULL;
            if (all)
                return (int)r;
        }
        line = nl ? nl + 1 : NULL;
    }
    return -1;
}

void gpurun_rm_put_shell_word(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", f);
        else
            fputc(*s, f);
    }
    fputc('\'', f);
}

bool gpurun_rm_option_name_ok(const char *k)
{
    if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z')))
        return false;
    for (; *k; k++)
        if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') || *k == '_' ||
              *k == '-'))
            return false;
    return true;
}

int gpurun_rm_tool(char *const argv[], int stdin_fd, size_t max, char **outp, int *statusp, int *errnop)
{
    struct gpurun_tool t = {.argv = argv, .stdin_fd = stdin_fd, .max = max};
    return gpurun_tool_exec(&t, outp, statusp, errnop);
}

int gpurun_rm_query(char *const argv[], double timeout_s, size_t max, char **outp, int *statusp, int *errnop)
{
    struct gpurun_tool t = {.argv = argv, .stdin_fd = -1, .merge_stderr = true, .timeout_s = timeout_s, .max = max};
    return gpurun_tool_exec(&t, outp, statusp, errnop);
}
