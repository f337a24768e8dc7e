/* SPDX-License-Identifier: BSD-3-Clause */
/* PBS's batch scripts (gpurun submit): #PBS lines for the job's name, its
 * select statement, whole nodes, walltime, output files, array, its pbs { }
 * section and the site profile's options, around the comments and commands
 * gpurun writes (batch.c).
 *
 * qsub reads #PBS lines up to the first line that is neither blank nor a
 * comment (OpenPBS src/cmds/qsub_sup.c get_script), joins a line ending in
 * '\' with the next, refuses a script holding a carriage return, and splits
 * each line into words as a shell would in part (src/cmds/qsub.c make_argv):
 * at blanks, "..." and '...' group (no escape inside), and a backslash
 * outside quotes keeps the next byte; '#' is an ordinary byte there.  So every
 * value is one single-quoted word with a quote written '\'' (as bash reads
 * it too), and control characters are refused.  The server allows a job
 * name of letters, digits and "-_+." only (230 at most): others become '_'. */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbs_common.h"
#include "util.h"

#define JOBNAME_MAX 230 /* PBS_MAXJOBNAME */

/* Why `v` cannot be a #PBS value; NULL when it can. */
static const char *refusal(const char *v, char *why, size_t whylen)
{
    return gpurun_rm_value_refusal(v, "carriage return: qsub refuses the script", why, whylen);
}

/* pbs { } keys with a #PBS option of their own; any other key is a
 * resource: "-l KEY=VALUE". */
static const struct {
    const char *key, *opt;
} named[] = {{"queue", "-q"}, {"account", "-A"}, {"project", "-P"}};

/* pbs { } keys that would contradict the select statement gpurun writes. */
static const char *const refused[] = {"select", "nodes", "ncpus", "mpiprocs", "ngpus", "nodect"};

static const char *named_opt(const char *key)
{
    for (size_t i = 0; i < sizeof named / sizeof *named; i++)
        if (!strcmp(key, named[i].key))
            return named[i].opt;
    return NULL;
}

static const struct gpurun_rm_option *job_option(const struct gpurun_rm_batch *b, const char *key)
{
    const struct gpurun_rm_option *o = NULL;
    for (size_t i = 0; i < b->noptions; i++)
        if (!strcmp(b->options[i].key, key))
            o = &b->options[i]; /* the last one wins */
    return o;
}

static int check_options(const struct gpurun_rm_batch *b, gpurun_error_t *err)
{
    char why[128];
    const char *no;
    for (size_t i = 0; i < b->noptions; i++) {
        const struct gpurun_rm_option *o = &b->options[i];
        bool ok = gpurun_rm_option_name_ok(o->key) && !strchr(o->key, '-');
        if (!ok)
            return gpurun_err(err, GPURUN_EXIT_CONFIG,
                              "%s: key 'pbs.%s': not a PBS resource or option name (letters, digits, '_')",
                              b->job_file, o->key);
        for (size_t r = 0; r < sizeof refused / sizeof *refused; r++)
            if (!strcmp(o->key, refused[r]))
                return gpurun_err(err, GPURUN_EXIT_CONFIG,
                                  "%s: key 'pbs.%s': contradicts the job's layout, which gpurun writes as the select "
                                  "statement: use 'nodes', 'ranks_per_node', 'gpus_per_rank' and 'threads_per_rank' "
                                  "instead",
                                  b->job_file, o->key);
        if ((no = refusal(o->value, why, sizeof why)))
            return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key 'pbs.%s': cannot go on a #PBS line: %s", b->job_file,
                              o->key, no);
    }
    return 0;
}

/* A site's batch option is one #PBS option: "-X" or "-X VALUE" ("-l
 * place=scatter", "-W group_list=g"), without quotes or backslashes, so
 * that qsub reads the words the profile shows. */
static int check_site(const struct gpurun_rm_site *site, gpurun_error_t *err)
{
    char why[128];
    const char *no;
    const struct {
        const char *key, *value;
    } keys[] = {{"partition", site->partition}, {"account", site->account}};
    for (size_t k = 0; k < 2; k++)
        if (keys[k].value && (no = refusal(keys[k].value, why, sizeof why)))
            return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key '%s': cannot go on a #PBS line: %s",
                              site->origin(site, keys[k].key), keys[k].key, no);
    for (size_t i = 0; i < site->noptions; i++) {
        const char *item = site->options[i];
        no = refusal(item, why, sizeof why);
        size_t w1 = strcspn(item, " ");
        const char *rest = item + w1 + (item[w1] == ' ');
        if (!no && (item[0] != '-' || !((item[1] >= 'A' && item[1] <= 'Z') || (item[1] >= 'a' && item[1] <= 'z')) ||
                    item[strcspn(item, "\"'\\\t")] || (item[w1] && (w1 != 2 || !*rest || strchr(rest, ' ')))))
            no = "not one qsub option (write it as \"-l place=scatter\": -X and at most one value, no quotes)";
        if (no)
            return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key 'sbatch', item %zu: cannot go on a #PBS line: %s",
                              site->origin(site, "sbatch"), i + 1, no);
    }
    return 0;
}

static long gpus_per_node(const struct gpurun_rm_batch *b)
{
    if (b->gpus_per_rank <= 0)
        return 0;
    long share = b->ranks_per_gpu > 1 ? b->ranks_per_gpu : 1;
    return (b->ranks_per_node + share - 1) / share * b->gpus_per_rank;
}

/* A layout the site's nodes cannot hold, as `gpurun run` would refuse it on
 * such a node (exit 3), unless the job allows sharing. */
static int check_site_room(const struct gpurun_rm_batch *b, gpurun_error_t *err)
{
    const struct gpurun_rm_site *site = b->site;
    if (!site || b->oversubscribe)
        return 0;
    long rpn = b->ranks_per_node, tpr = b->threads_per_rank, cores = site->cores_per_node;
    if (cores > 0 && tpr > 0 && !b->smt && tpr * rpn > cores)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "%s: keys 'ranks_per_node' and 'threads_per_rank': %ld ranks x %ld threads need %ld "
                          "cores on a node; site %s's nodes have %ld (cores_per_node in %s): lower them, or set "
                          "oversubscribe = true to share cores",
                          b->job_file, rpn, tpr, rpn * tpr, site->name, cores, site->path);
    if (site->gpus_per_node >= 0 && gpus_per_node(b) > site->gpus_per_node)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "%s: keys 'ranks_per_node' and 'gpus_per_rank': %ld ranks x %ld GPUs need %ld GPUs on a "
                          "node; site %s's nodes have %d (gpus_per_node in %s): lower them, or set oversubscribe "
                          "= true to share GPUs",
                          b->job_file, rpn, b->gpus_per_rank, gpus_per_node(b), site->name, site->gpus_per_node,
                          site->path);
    return 0;
}

static void directive(FILE *f, const char *opt, const char *value)
{
    fprintf(f, "#PBS %s ", opt);
    gpurun_rm_put_shell_word(f, value);
    fputc('\n', f);
}

/* "-l select=N:ncpus=C:ngpus=G:mpiprocs=R": N chunks of a whole node's
 * share each, R MPI processes in each (the node file's lines). */
static char *select_value(const struct gpurun_rm_batch *b)
{
    long nodes = b->nodes > 0 ? b->nodes : 1, rpn = b->ranks_per_node > 0 ? b->ranks_per_node : 1;
    long ncpus = rpn;
    if (b->threads_per_rank > 0)
        ncpus = rpn * b->threads_per_rank;
    else if (b->site && b->site->cores_per_node > 0)
        ncpus = b->site->cores_per_node; /* the node: its cores are the ranks' to share */
    long gpus = gpus_per_node(b);
    char g[32] = "";
    if (gpus > 0)
        snprintf(g, sizeof g, ":ngpus=%ld", gpus);
    return gpurun_xasprintf("select=%ld:ncpus=%ld%s:mpiprocs=%ld", nodes, ncpus, g, rpn);
}

/* PBS's job name: the job's, with what the server refuses written '_'. */
static char *job_name(const char *job)
{
    char *n = gpurun_xstrndup(job, strnlen(job, JOBNAME_MAX)); /* copies n bytes */
    for (char *p = n; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr("-_+.", *p)))
            *p = '_';
    return n;
}

/* "-J A-B:S" when the configurations are one progression; else "-J 1-N"
 * and *remap (the script maps task i to the i-th configuration). */
static char *array_value(const struct gpurun_rm_batch *b, bool *remap)
{
    long first = b->array[0], step = b->array[1] - b->array[0];
    *remap = step < 1;
    for (size_t i = 2; i < b->narray && !*remap; i++)
        *remap = b->array[i] - b->array[i - 1] != step;
    if (*remap)
        return gpurun_xasprintf("1-%zu", b->narray);
    long last = b->array[b->narray - 1];
    return step == 1 ? gpurun_xasprintf("%ld-%ld", first, last) : gpurun_xasprintf("%ld-%ld:%ld", first, last, step);
}

/* The output files: in the results folder (a folder as -o's path: PBS
 * names the file JOBNAME.oSEQ, a subjob's JOBNAME.oSEQ.INDEX).  qsub reads
 * "HOST:PATH": a ':' in the folder would be a host. */
static int check_folder(const struct gpurun_rm_batch *b, gpurun_error_t *err)
{
    char why[128];
    if (strchr(b->folder, ':') || refusal(b->folder, why, sizeof why))
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key 'results': the results folder '%s' cannot name qsub's output files (a ':', which "
                          "qsub reads as HOST:PATH, or a control character): choose another folder (--results DIR)",
                          b->job_file, b->folder);
    return 0;
}

static void put_header(FILE *f, const struct gpurun_rm_batch *b, bool walltime)
{
    fputs("#!/bin/bash\n# PBS batch script written by gpurun " PACKAGE_VERSION " (gpurun submit) for job '", f);
    gpurun_rm_put_comment(f, b->job);
    fputs("'.\n# On the first node of the job it runs the job file again with gpurun run.\n", f);
    if (walltime)
        fprintf(f, "# walltime: %ld run%s x (timeout %lds + %lds for gpurun to stop the ranks and write the record)\n",
                b->runs, b->runs == 1 ? "" : "s", b->timeout_s, b->stop_grace_s);
    fputs(b->comments ? b->comments : "", f);
}

/* The job's pbs { } keys: queue, account, project as their options; the
 * others as resources.  walltime and place replace gpurun's. */
static void put_job_options(FILE *f, const struct gpurun_rm_batch *b)
{
    for (size_t i = 0; i < b->noptions; i++) {
        const struct gpurun_rm_option *o = &b->options[i];
        if (job_option(b, o->key) != o)
            continue; /* a later one of the same key wins */
        const char *opt = named_opt(o->key);
        if (opt) {
            directive(f, opt, o->value);
            continue;
        }
        char *res = gpurun_xasprintf("%s=%s", o->key, o->value);
        directive(f, "-l", res);
        free(res);
    }
}

static void put_site_options(FILE *f, const struct gpurun_rm_batch *b)
{
    const struct gpurun_rm_site *site = b->site;
    bool queue = job_option(b, "queue"), account = job_option(b, "account");
    if (!site || !((site->partition && !queue) || (site->account && !account) || site->noptions))
        return;
    fputs("# Site ", f);
    gpurun_rm_put_comment(f, site->name);
    fputs(" (", f);
    gpurun_rm_put_comment(f, site->path);
    fputs("):\n", f);
    if (site->partition && !queue)
        directive(f, "-q", site->partition);
    if (site->account && !account)
        directive(f, "-A", site->account);
    for (size_t i = 0; i < site->noptions; i++)
        fprintf(f, "#PBS %s\n", site->options[i]);
}

static void put_directives(FILE *f, const struct gpurun_rm_batch *b, long secs, bool *remap)
{
    char *v = job_name(b->job);
    directive(f, "-N", v);
    free(v);
    v = select_value(b);
    directive(f, "-l", v);
    free(v);
    if (!job_option(b, "place"))
        directive(f, "-l", "place=scatter:excl"); /* whole nodes: gpurun plans them */
    if (secs > 0 && !job_option(b, "walltime")) {
        v = gpurun_xasprintf("walltime=%02ld:%02ld:%02ld", secs / 3600, secs / 60 % 60, secs % 60);
        directive(f, "-l", v);
        free(v);
    }
    v = gpurun_xasprintf("%s/", b->folder);
    directive(f, "-o", v);
    directive(f, "-e", v);
    free(v);
    *remap = false;
    if (b->narray > 1) {
        v = array_value(b, remap);
        directive(f, "-J", v);
        free(v);
    }
    put_job_options(f, b);
    put_site_options(f, b);
}

int pbs_batch_script(const struct gpurun_rm_batch *b, char **scriptp, gpurun_error_t *err)
{
    *scriptp = NULL;
    char why[128];
    const char *no;
    if (check_options(b, err) < 0 || (b->site && check_site(b->site, err) < 0) || check_site_room(b, err) < 0 ||
        check_folder(b, err) < 0)
        return -1;
    if ((no = refusal(b->job, why, sizeof why)))
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key 'job': cannot go on a #PBS line: %s", b->job_file, no);
    long secs = b->timeout_s > 0 ? b->runs * (b->timeout_s + b->stop_grace_s) : 0;
    secs = (secs + 59) / 60 * 60; /* whole minutes, as the other managers' */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        abort();
    bool remap = false;
    put_header(f, b, secs > 0 && !job_option(b, "walltime"));
    put_directives(f, b, secs, &remap);
    if (remap) {
        /* After the directives: qsub reads none past a command. */
        fputs("# PBS arrays are one range: task I runs the I-th of these configurations.\ngpurun_configurations=(",
              f);
        for (size_t i = 0; i < b->narray; i++)
            fprintf(f, "%s%ld", i ? " " : "", b->array[i]);
        fputs(")\nPBS_ARRAY_INDEX=${gpurun_configurations[PBS_ARRAY_INDEX-1]}\n", f);
    }
    fputs(b->body ? b->body : "", f);
    fclose(f);
    *scriptp = buf;
    return 0;
}
