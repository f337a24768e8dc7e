/* SPDX-License-Identifier: BSD-3-Clause */
/* The Slurm batch script of `gpurun submit`: #SBATCH lines, then a body
 * that runs the same job file with `gpurun run` on the compute node.
 *
 * Two readers see the script, and each must read exactly what we meant:
 *  - sbatch reads the #SBATCH lines up to the first command.  Its tokenizer
 *    (src/sbatch/opt.c, checked against sbatch 22.05) splits on white space,
 *    groups with "..." or '...', drops a backslash and keeps the next byte
 *    (but a backslash cannot protect white space), ends the line's options
 *    at an unquoted '#', and treats a word 'hetjob' or 'packjob' (any
 *    case, anywhere in the line before 19.05) as a heterogeneous-job
 *    separator.  Values go in "..." with '"' and '\' escaped; what no
 *    quoting can carry (line breaks and other control characters,
 *    'hetjob', 'packjob') is refused.
 *  - bash reads the body: every word there is single-quoted, a quote
 *    inside spelled '\'', so no byte is ever code. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "util.h"

/* Per run, on top of the job's timeout: gpurun's own grace period to stop
 * the ranks, then the record (SPEC §7).  A batch limit of exactly the
 * timeout would let Slurm kill gpurun before it says why the run ended. */
#define STOP_GRACE_S 60

int gpurun_batch_abspath(const char *path, char **absp, gpurun_error_t *err)
{
    if (path[0] == '/') {
        *absp = gpurun_xstrdup(path);
        return 0;
    }
    char *cwd = getcwd(NULL, 0);
    if (!cwd)
        return gpurun_err(err, GPURUN_EXIT_ENV, "cannot tell the current folder: %s", strerror(errno));
    /* "./job.conf" and "." name the same file as "job.conf" and the folder. */
    while (path[0] == '.' && path[1] == '/') {
        path += 2;
        while (*path == '/')
            path++;
    }
    if (strcmp(path, ".") == 0 || !*path)
        *absp = cwd;
    else {
        *absp = gpurun_xasprintf("%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "", path);
        free(cwd);
    }
    return 0;
}

int gpurun_batch_job_folder(const gpurun_job_t *job, char **pathp, gpurun_error_t *err)
{
    char *results;
    if (job->results[0] == '/') {
        results = gpurun_xstrdup(job->results);
    } else {
        char *both = gpurun_xasprintf("%s/%s", job->dir, job->results);
        int rc = gpurun_batch_abspath(both, &results, err);
        free(both);
        if (rc < 0)
            return -1;
    }
    size_t n = strlen(results);
    while (n > 1 && results[n - 1] == '/')
        results[--n] = '\0';
    *pathp = gpurun_xasprintf("%s%s%s", results, n > 1 ? "/" : "", job->name);
    free(results);
    return 0;
}

/* ---- what an #SBATCH line can carry ------------------------------------ */

/* Why `v` cannot be an #SBATCH value; NULL when it can. */
static const char *sbatch_refusal(const char *v, char *why, size_t whylen)
{
    if (!*v)
        return "empty value";
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p < 0x20 || *p == 0x7f) {
            snprintf(why, whylen, "control character 0x%02x%s", *p,
                     *p == '\n' ? " (line break)" : *p == '\t' ? " (tab)" : *p == '\r' ? " (carriage return)" : "");
            return why;
        }
    static const char *const separators[] = {"hetjob", "packjob"};
    for (size_t i = 0; i < sizeof separators / sizeof *separators; i++)
        if (strcasestr(v, separators[i])) {
            snprintf(why, whylen, "'%s' (sbatch reads it as a heterogeneous-job separator)",
                     separators[i]);
            return why;
        }
    return NULL;
}

/* A checked value, quoted only when sbatch would otherwise split or cut it. */
static void put_sbatch_value(FILE *f, const char *v)
{
    if (!v[strcspn(v, " \"'#\\")]) {
        fputs(v, f);
        return;
    }
    fputc('"', f);
    for (; *v; v++) {
        if (*v == '"' || *v == '\\')
            fputc('\\', f);
        fputc(*v, f);
    }
    fputc('"', f);
}

/* sbatch long options are letters, digits and '-'; job.c also allows '.'. */
static bool option_name_ok(const char *k)
{
    if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z')))
        return false;
    for (; *k; k++)
        if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') || *k == '_' ||
              *k == '-'))
            return false;
    return true;
}

/* ---- the job's request -------------------------------------------------- */

/* The largest value a layout key takes over the scan: the allocation must
 * hold every run of the sweep. */
static long layout_max(const gpurun_job_t *job, const char *key, long value)
{
    for (size_t i = 0; i < job->nscan; i++) {
        if (strcmp(job->scan[i].key, key) != 0)
            continue;
        long m = GPURUN_UNSET;
        for (size_t v = 0; v < job->scan[i].n; v++)
            if (job->scan[i].values[v] > m)
                m = job->scan[i].values[v];
        return m;
    }
    return value;
}

static long runs_of(const gpurun_job_t *job)
{
    long runs = job->repeat > 0 ? job->repeat : 1;
    for (size_t i = 0; i < job->nscan; i++)
        runs *= job->scan[i].n ? (long)job->scan[i].n : 1;
    return runs;
}

/* Slurm's [D-]HH:MM:SS, rounded up to whole minutes (Slurm's own unit). */
static char *slurm_time(long secs)
{
    long mins = (secs + 59) / 60;
    long days = mins / 1440, h = mins / 60 % 24, m = mins % 60;
    return days ? gpurun_xasprintf("%ld-%02ld:%02ld:00", days, h, m) : gpurun_xasprintf("%02ld:%02ld:00", h, m);
}

/* A line gpurun writes itself.  A slurm{} key of the same name replaces
 * its value (the user's explicit choice: slurm.time, slurm.output, ...). */
struct option_line {
    const char *name; /* sbatch's long option */
    char *value;      /* NULL: no line */
    const struct gpurun_kv *user;
};

/* slurm{} keys that would contradict the layout `gpurun run` then plans. */
static const struct {
    const char *name;
    const char *use; /* the job key to use instead */
} refused[] = {
    {"nodes", "nodes"},
    {"ntasks", "nodes' and 'ranks_per_node"},
    {"ntasks-per-node", "ranks_per_node"},
};

/* Options that ask for GPUs in their own words (typed GPUs "a100:4", GRES):
 * with one of them, gpurun's --gpus-per-node would ask twice. */
static bool asks_for_gpus(const char *name, const char *value)
{
    return !strcmp(name, "gpus") || !strcmp(name, "gpus-per-task") || !strcmp(name, "gpus-per-socket") ||
           (!strcmp(name, "gres") && strstr(value, "gpu"));
}

/* ---- the script --------------------------------------------------------- */

static void put_shell_word(FILE *f, const char *s)
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

/* Checks every value that goes on an #SBATCH line, before any is written. */
static int check_line(const gpurun_job_t *job, const char *what, const char *v, gpurun_error_t *err)
{
    char why[128];
    const char *no = sbatch_refusal(v, why, sizeof why);
    if (no)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key '%s': cannot go on an #SBATCH line: %s", job->path,
                          what, no);
    return 0;
}

static void free_lines(struct option_line *lines, size_t n, char **names, size_t nnames)
{
    for (size_t i = 0; i < n; i++)
        free(lines[i].value);
    for (size_t i = 0; i < nnames; i++)
        free(names[i]);
}

int gpurun_batch_script(const gpurun_job_t *job, const char *job_path, const char *gpurun_path,
                        char *const *set_args, size_t nset, char **scriptp, gpurun_error_t *err)
{
    *scriptp = NULL;
    long nodes = layout_max(job, "nodes", job->nodes);
    long rpn = layout_max(job, "ranks_per_node", job->ranks_per_node);
    long gpr = layout_max(job, "gpus_per_rank", job->gpus_per_rank);
    long tpr = layout_max(job, "threads_per_rank", job->threads_per_rank);
    if (rpn == GPURUN_UNSET)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key 'ranks_per_node': gpurun submit needs it, since the compute node's GPUs "
                          "are not known here: set it in the job file or with --set ranks_per_node=N",
                          job->path);

    /* The generated lines, in the order written; slurm{} may replace some. */
    enum { L_NAME, L_NODES, L_TASKS, L_GPUS, L_CPUS, L_TIME, L_OUTPUT, L_N };
    struct option_line lines[L_N] = {
        [L_NAME] = {"job-name", NULL, NULL}, [L_NODES] = {"nodes", NULL, NULL},
        [L_TASKS] = {"ntasks-per-node", NULL, NULL}, [L_GPUS] = {"gpus-per-node", NULL, NULL},
        [L_CPUS] = {"cpus-per-task", NULL, NULL}, [L_TIME] = {"time", NULL, NULL},
        [L_OUTPUT] = {"output", NULL, NULL},
    };
    /* slurm{} key names as sbatch options ('_' -> '-'). */
    char **names = gpurun_xcalloc(job->slurm.n, sizeof *names);
    bool gpus_asked = false;
    int rc = -1;
    char *folder = NULL, *abs_job = NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = NULL;

    for (size_t i = 0; i < job->slurm.n; i++) {
        const struct gpurun_kv *kv = &job->slurm.items[i];
        char *what = gpurun_xasprintf("slurm.%s", kv->key);
        if (!option_name_ok(kv->key)) {
            gpurun_err(err, GPURUN_EXIT_CONFIG,
                       "%s: key '%s': not an sbatch option name (letters, digits, '_', '-')", job->path, what);
            free(what);
            goto out;
        }
        names[i] = gpurun_xstrdup(kv->key);
        for (char *p = names[i]; *p; p++)
            if (*p == '_')
                *p = '-';
        for (size_t r = 0; r < sizeof refused / sizeof *refused; r++)
            if (!strcmp(names[i], refused[r].name)) {
                gpurun_err(err, GPURUN_EXIT_CONFIG,
                           "%s: key '%s': contradicts the job's layout, which sets --%s: use '%s' instead",
                           job->path, what, refused[r].name, refused[r].use);
                free(what);
                goto out;
            }
        int bad = check_line(job, what, kv->key, err) < 0 ? -1 : check_line(job, what, kv->value, err);
        free(what);
        if (bad < 0)
            goto out;
        gpus_asked |= asks_for_gpus(names[i], kv->value);
        for (size_t l = 0; l < L_N; l++)
            if (!strcmp(names[i], lines[l].name))
                lines[l].user = kv; /* the last one wins, as in sbatch */
    }

    if (check_line(job, "job", job->name, err) < 0)
        goto out;
    lines[L_NAME].value = gpurun_xstrdup(job->name);
    lines[L_NODES].value = gpurun_xasprintf("%ld", nodes);
    lines[L_TASKS].value = gpurun_xasprintf("%ld", rpn);
    if (!gpus_asked && !lines[L_GPUS].user) {
        if (gpr == GPURUN_UNSET) {
            gpurun_err(err, GPURUN_EXIT_CONFIG,
                       "%s: key 'gpus_per_rank': gpurun submit needs it, since the compute node's GPUs are "
                       "not known here: set it in the job file (0 for a CPU-only job) or with --set "
                       "gpus_per_rank=N",
                       job->path);
            goto out;
        }
        if (rpn * gpr > 0)
            lines[L_GPUS].value = gpurun_xasprintf("%ld", rpn * gpr);
    }
    if (tpr != GPURUN_UNSET)
        lines[L_CPUS].value = gpurun_xasprintf("%ld", tpr);
    if (job->timeout_s > 0)
        lines[L_TIME].value = slurm_time(runs_of(job) * (job->timeout_s + STOP_GRACE_S));
    if (!lines[L_OUTPUT].user) {
        if (gpurun_batch_job_folder(job, &folder, err) < 0)
            goto out;
        /* sbatch's file names expand %j, %x, ...: a '%' of the folder is
         * written %%, and a '\' would turn the expansion off. */
        if (strchr(folder, '\\')) {
            gpurun_err(err, GPURUN_EXIT_CONFIG,
                       "%s: key 'results': the results folder '%s' holds a '\\', which turns off sbatch's "
                       "%%j in file names: choose another folder (--results DIR)",
                       job->path, folder);
            goto out;
        }
        f = open_memstream(&buf, &len);
        if (!f)
            abort();
        for (const char *p = folder; *p; p++) {
            if (*p == '%')
                fputc('%', f);
            fputc(*p, f);
        }
        fputs("/slurm-%j.out", f);
        fclose(f);
        f = NULL;
        lines[L_OUTPUT].value = buf;
        buf = NULL;
        if (check_line(job, "results", lines[L_OUTPUT].value, err) < 0)
            goto out;
    }
    if (gpurun_batch_abspath(job_path, &abs_job, err) < 0)
        goto out;

    f = open_memstream(&buf, &len);
    if (!f)
        abort();
    fprintf(f,
            "#!/bin/bash\n"
            "# Slurm batch script written by gpurun %s (gpurun submit) for job '%s'.\n"
            "# On the compute node it runs the job file again with gpurun run.\n",
            PACKAGE_VERSION, job->name);
    if (lines[L_TIME].value && !lines[L_TIME].user)
        fprintf(f, "# --time: %ld run%s x (timeout %lds + %ds for gpurun to stop the ranks and write the record)\n",
                runs_of(job), runs_of(job) == 1 ? "" : "s", job->timeout_s, STOP_GRACE_S);
    for (size_t l = 0; l < L_N; l++) {
        const char *v = lines[l].user ? lines[l].user->value : lines[l].value;
        if (!v)
            continue;
        fprintf(f, "#SBATCH --%s=", lines[l].name);
        put_sbatch_value(f, v);
        fputc('\n', f);
    }
    for (size_t i = 0; i < job->slurm.n; i++) {
        bool generated = false;
        for (size_t l = 0; l < L_N && !generated; l++)
            generated = !strcmp(names[i], lines[l].name);
        if (generated)
            continue;
        fprintf(f, "#SBATCH --%s=", names[i]);
        put_sbatch_value(f, job->slurm.items[i].value);
        fputc('\n', f);
    }
    /* Hook: a site profile (SPEC §4) adds its #SBATCH lines here, before
     * the first command (sbatch stops reading options there), and its
     * module loads after `set`. */
    fputs("set -euo pipefail\n", f);
    fputs("exec ", f);
    put_shell_word(f, gpurun_path);
    fputs(" run ", f);
    put_shell_word(f, abs_job);
    for (size_t i = 0; i < nset; i++) {
        fputs(" --set ", f);
        put_shell_word(f, set_args[i]);
    }
    fputc('\n', f);
    fclose(f);
    f = NULL;
    *scriptp = buf;
    buf = NULL;
    rc = 0;
out:
    if (f)
        fclose(f);
    free(buf);
    free(folder);
    free(abs_job);
    free_lines(lines, L_N, names, job->slurm.n);
    free(names);
    return rc;
}
