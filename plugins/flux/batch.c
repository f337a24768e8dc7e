/* SPDX-License-Identifier: BSD-3-Clause */
/* Flux's batch scripts (gpurun submit): `#flux:` directives for the job's
 * layout, time, output file, its flux { } section and the site profile's
 * options, around the comments and commands gpurun writes (batch.c).
 *
 * flux batch reads the directives (RFC 36, flux/job/directives.py in
 * flux-core 0.88): a line whose only text before "flux:" is not a word
 * character, each split as a POSIX shell would (Python's shlex with
 * punctuation characters: ';', '&', '|', '(' and the like split a word
 * unless quoted; within quotes a backslash escapes a quote or a
 * backslash), a triple quote opening a multi-line value, and none after the
 * first line of the script that is neither a directive, a comment nor
 * blank.  So every value is one single-quoted word with '\' and '\''
 * escaped, a value with a line break, another control character or a
 * triple quote is refused, and gpurun's body, which comes after the
 * directives, has no line that could be read as one. */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flux_common.h"
#include "util.h"

/* Why `v` cannot be a directive's value; NULL when it can. */
static const char *refusal(const char *v, char *why, size_t whylen)
{
    const char *no = gpurun_rm_value_refusal(v, NULL, why, whylen);
    if (no)
        return no;
    if (strstr(v, "'''") || strstr(v, "\"\"\""))
        return "a triple quote (flux batch reads it as a multi-line value)";
    return NULL;
}

/* One word for shlex: single-quoted, '\' and '\'' escaped. */
static void put_word(FILE *f, const char *v)
{
    fputc('\'', f);
    for (; *v; v++) {
        if (*v == '\'' || *v == '\\')
            fputc('\\', f);
        fputc(*v, f);
    }
    fputc('\'', f);
}

/* flux { } keys that would contradict the layout `gpurun run` then plans. */
static const struct {
    const char *name, *use;
} refused[] = {
    {"nodes", "nodes"},
    {"nslots", "nodes' and 'ranks_per_node"},
    {"ntasks", "nodes' and 'ranks_per_node"},
    {"tasks-per-node", "ranks_per_node"},
};

/* The lines gpurun writes; a flux { } key of the same name replaces one. */
enum { L_NAME, L_NODES, L_SLOTS, L_CORES, L_GPUS, L_EXCLUSIVE, L_TIME, L_OUTPUT, L_N };
static const char *const line_names[L_N] = {"job-name",     "nodes",     "nslots",     "cores-per-slot",
                                            "gpus-per-slot", "exclusive", "time-limit", "output"};

static long gpus_per_node(const struct gpurun_rm_batch *b)
{
    long share = b->ranks_per_gpu > 1 ? b->ranks_per_gpu : 1;
    return share > 1 ? (b->ranks_per_node + share - 1) / share * b->gpus_per_rank
                     : b->ranks_per_node * b->gpus_per_rank;
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
    if (site->gpus_per_node >= 0 && b->gpus_per_rank > 0 && gpus_per_node(b) > site->gpus_per_node)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "%s: keys 'ranks_per_node' and 'gpus_per_rank': %ld ranks x %ld GPUs need %ld GPUs on a "
                          "node; site %s's nodes have %d (gpus_per_node in %s): lower them, or set oversubscribe "
                          "= true to share GPUs",
                          b->job_file, rpn, b->gpus_per_rank, gpus_per_node(b), site->name, site->gpus_per_node,
                          site->path);
    return 0;
}

/* The job's flux { } keys, checked; *given[l]: the key that replaces line l. */
static int check_options(const struct gpurun_rm_batch *b, const struct gpurun_rm_option **given,
                         gpurun_error_t *err)
{
    char why[128];
    const char *no;
    for (size_t i = 0; i < b->noptions; i++) {
        const struct gpurun_rm_option *o = &b->options[i];
        char *name = gpurun_xstrdup(o->key);
        for (char *p = name; *p; p++)
            if (*p == '_')
                *p = '-';
        int rc = 0;
        if (!gpurun_rm_option_name_ok(o->key))
            rc = gpurun_err(err, GPURUN_EXIT_CONFIG,
                            "%s: key 'flux.%s': not a flux batch option name (letters, digits, '_', '-')",
                            b->job_file, o->key);
        for (size_t r = 0; rc == 0 && r < sizeof refused / sizeof *refused; r++)
            if (!strcmp(name, refused[r].name))
                rc = gpurun_err(err, GPURUN_EXIT_CONFIG,
                                "%s: key 'flux.%s': contradicts the job's layout, which sets --%s: use '%s' instead",
                                b->job_file, o->key, refused[r].name, refused[r].use);
        if (rc == 0 && (no = refusal(o->value, why, sizeof why)))
            rc = gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key 'flux.%s': cannot go on a #flux: line: %s",
                            b->job_file, o->key, no);
        for (size_t l = 0; rc == 0 && l < L_N; l++)
            if (!strcmp(name, line_names[l]))
                given[l] = o; /* the last one wins, as on flux batch's command line */
        free(name);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* The site's options: each one option, "--name" or "--name=value". */
static int check_site(const struct gpurun_rm_site *site, gpurun_error_t *err)
{
    char why[128];
    const char *no;
    const struct {
        const char *key, *value;
    } keys[] = {{"partition", site->partition}, {"account", site->account}};
    for (size_t k = 0; k < 2; k++)
        if (keys[k].value && (no = refusal(keys[k].value, why, sizeof why)))
            return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key '%s': cannot go on a #flux: line: %s",
                              site->origin(site, keys[k].key), keys[k].key, no);
    for (size_t i = 0; i < site->noptions; i++) {
        const char *item = site->options[i];
        no = refusal(item, why, sizeof why);
        if (!no && (item[0] != '-' || strpbrk(item, " \t")))
            no = "not one flux batch option (write it as \"--setattr=KEY=VALUE\", one option per item)";
        if (no)
            return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key 'sbatch', item %zu: cannot go on a #flux: line: %s",
                              site->origin(site, "sbatch"), i + 1, no);
    }
    return 0;
}

static void directive(FILE *f, const char *name, const char *value)
{
    fprintf(f, "#flux: --%s", name);
    if (value) {
        fputc('=', f);
        put_word(f, value);
    }
    fputc('\n', f);
}

int flux_batch_script(const struct gpurun_rm_batch *b, char **scriptp, gpurun_error_t *err)
{
    *scriptp = NULL;
    const struct gpurun_rm_option *given[L_N] = {0};
    char why[128];
    const char *no;
    if (check_options(b, given, err) < 0 || (b->site && check_site(b->site, err) < 0) || check_site_room(b, err) < 0)
        return -1;
    if ((no = refusal(b->job, why, sizeof why)))
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key 'job': cannot go on a #flux: line: %s", b->job_file, no);
    /* flux batch names the output file from a template: {{id}} */
    if (strstr(b->folder, "{{") || strstr(b->folder, "}}") || refusal(b->folder, why, sizeof why))
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key 'results': the results folder '%s' cannot name flux batch's output file ('{{', "
                          "'}}' or a control character): choose another folder (--results DIR)",
                          b->job_file, b->folder);
    long nodes = b->nodes > 0 ? b->nodes : 1, rpn = b->ranks_per_node;
    char *value[L_N] = {0};
    value[L_NAME] = gpurun_xstrdup(b->job);
    value[L_NODES] = gpurun_xasprintf("%ld", nodes);
    value[L_SLOTS] = gpurun_xasprintf("%ld", nodes * rpn);
    if (b->threads_per_rank > 0)
        value[L_CORES] = gpurun_xasprintf("%ld", b->threads_per_rank);
    else if (b->site && b->site->cores_per_node > 0 && b->site->cores_per_node / rpn > 0)
        value[L_CORES] = gpurun_xasprintf("%ld", b->site->cores_per_node / rpn); /* each rank's share */
    /* Ranks sharing a GPU: the whole nodes (--exclusive) hold them. */
    if (b->gpus_per_rank > 0 && b->ranks_per_gpu <= 1)
        value[L_GPUS] = gpurun_xasprintf("%ld", b->gpus_per_rank);
    long mins = b->timeout_s > 0 ? (b->runs * (b->timeout_s + b->stop_grace_s) + 59) / 60 : 0;
    if (mins)
        value[L_TIME] = gpurun_xasprintf("%ldm", mins);
    value[L_OUTPUT] = gpurun_xasprintf("%s/flux-{{id}}.out", b->folder);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        abort();
    fputs("#!/bin/bash\n# Flux batch script written by gpurun " PACKAGE_VERSION " (gpurun submit) for job '", f);
    gpurun_rm_put_comment(f, b->job);
    fputs("'.\n# On the compute node it runs the job file again with gpurun run, in the instance flux batch "
          "starts.\n",
          f);
    if (mins && !given[L_TIME])
        fprintf(f, "# --time-limit: %ld run%s x (timeout %lds + %lds for gpurun to stop the ranks and write the record)\n",
                b->runs, b->runs == 1 ? "" : "s", b->timeout_s, b->stop_grace_s);
    fputs(b->comments ? b->comments : "", f);
    for (size_t l = 0; l < L_N; l++) {
        if (given[l])
            continue;
        if (l == L_EXCLUSIVE)
            directive(f, line_names[l], NULL); /* whole nodes: gpurun plans them */
        else if (value[l])
            directive(f, line_names[l], value[l]);
    }
    for (size_t i = 0; i < b->noptions; i++) {
        char *name = gpurun_xstrdup(b->options[i].key);
        for (char *p = name; *p; p++)
            if (*p == '_')
                *p = '-';
        directive(f, name, b->options[i].value);
        free(name);
    }
    const struct gpurun_rm_site *site = b->site;
    bool queue = false, bank = false;
    for (size_t i = 0; i < b->noptions; i++) {
        queue |= !strcmp(b->options[i].key, "queue");
        bank |= !strcmp(b->options[i].key, "bank");
    }
    if (site && ((site->partition && !queue) || (site->account && !bank) || site->noptions)) {
        fputs("# Site ", f);
        gpurun_rm_put_comment(f, site->name);
        fputs(" (", f);
        gpurun_rm_put_comment(f, site->path);
        fputs("):\n", f);
        if (site->partition && !queue)
            directive(f, "queue", site->partition);
        if (site->account && !bank)
            directive(f, "bank", site->account);
        for (size_t i = 0; i < site->noptions; i++) {
            fputs("#flux: ", f);
            put_word(f, site->options[i]);
            fputc('\n', f);
        }
    }
    fputs(b->body ? b->body : "", f);
    fclose(f);
    for (size_t l = 0; l < L_N; l++)
        free(value[l]);
    *scriptp = buf;
    return 0;
}
