/* SPDX-License-Identifier: BSD-3-Clause */
/* Slurm's batch scripts (gpurun submit): #SBATCH lines for the job's
 * layout, time, output file, its slurm { } section and the site profile's
 * options, around the comments and commands gpurun writes (batch.c).
 *
 * sbatch reads the #SBATCH lines up to the first command, and must read
 * exactly what we meant.  Its tokenizer (src/sbatch/opt.c, checked against
 * sbatch 22.05) splits on white space, groups with "..." or '...', drops a
 * backslash and keeps the next byte (but a backslash cannot protect white
 * space), ends the line's options at an unquoted '#', and treats a word
 * 'hetjob' or 'packjob' (any case, anywhere in the line before 19.05) as a
 * heterogeneous-job separator.  Values go in "..." with '"' and '\'
 * escaped; what no quoting can carry (line breaks and other control
 * characters, 'hetjob', 'packjob') is refused.  Comment lines carry no
 * control character, so no text ends one early. */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confparse.h" /* gpurun_conf_shown */
#include "rm.h"
#include "slurm_common.h"
#include "util.h"

#define UNSET (-1L) /* a layout key the job leaves to the node */

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

/* A site's sbatch item is one option: "--name", "--name=value", "-X",
 * "-Xvalue", or an option and one value after a blank ("-t 2:00:00").
 * sbatch splits an #SBATCH line at blanks, so a second option in an item
 * ("--qos=normal --partition=debug") would slip past every check here. */
static const char *one_option_problem(const char *item, char *why, size_t whylen)
{
    if (item[strcspn(item, "\"'\\")]) {
        snprintf(why, whylen, "a quote or backslash: write one option as --name=value, without quotes");
        return why;
    }
    const char *first_end = item + strcspn(item, " \t");
    const char *second = first_end + strspn(first_end, " \t");
    if (!*second)
        return NULL;
    const char *second_end = second + strcspn(second, " \t");
    const char *third = second_end + strspn(second_end, " \t");
    bool attached = memchr(item, '=', (size_t)(first_end - item)) != NULL ||
                    (item[1] != '-' && first_end - item > 2); /* --name=value, -Xvalue */
    if (*second == '-' || *third || attached) {
        snprintf(why, whylen,
                 "'%.*s' after the option: one option per item (\"--qos=normal\"; another option is another "
                 "item)",
                 (int)(strlen(second) > 64 ? 64 : strlen(second)), second);
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
    const struct gpurun_rm_option *user;
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

/* ---- the site's #SBATCH options ------------------------------------------ */

/* sbatch's short options, for telling that "-p gpu" and a job's
 * slurm.partition set one thing. */
static const struct {
    char opt;
    const char *name;
} short_options[] = {
    {'A', "account"}, {'a', "array"},     {'b', "begin"},     {'C', "constraint"}, {'c', "cpus-per-task"},
    {'D', "chdir"},   {'d', "dependency"}, {'e', "error"},    {'G', "gpus"},       {'J', "job-name"},
    {'L', "licenses"}, {'M', "clusters"}, {'N', "nodes"},     {'n', "ntasks"},     {'o', "output"},
    {'p', "partition"}, {'q', "qos"},     {'t', "time"},      {'w', "nodelist"},   {'x', "exclude"},
};

/* One #SBATCH option of the site: the line as the profile writes it, and
 * the long option it sets, for the job to replace. */
struct site_option {
    char *line;   /* "--qos=normal", "-p gpu" */
    char *name;   /* "qos", "partition"; "-X" for a short option not above */
    const char *value; /* into line: after '=' or the blank; "" when none */
    bool gpus;    /* asks for GPUs in its own words */
    bool dropped; /* the job gives the option itself */
};

static void site_options_free(struct site_option *o, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(o[i].line);
        free(o[i].name);
    }
    free(o);
}

/* The site's partition and account, then its sbatch list, each checked and
 * named; the errors name the profile's line.  *np options. */
static int site_options(const struct gpurun_rm_site *site, struct site_option **optsp, size_t *np, gpurun_error_t *err)
{
    struct site_option *o = gpurun_xcalloc(site->noptions + 2, sizeof *o);
    size_t n = 0;
    char why[128];
    const char *no;
    *optsp = NULL;
    *np = 0;
    const struct {
        const char *key, *value;
    } keys[] = {{"partition", site->partition}, {"account", site->account}};
    for (size_t k = 0; k < 2; k++) {
        if (!keys[k].value)
            continue;
        if ((no = sbatch_refusal(keys[k].value, why, sizeof why))) {
            char *where = gpurun_xstrdup(site->origin(site, keys[k].key));
            gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key '%s': cannot go on an #SBATCH line: %s", where,
                       keys[k].key, no);
            free(where);
            site_options_free(o, n);
            return -1;
        }
        /* A value written as a job's slurm{} value is: quoted when needed. */
        char *line = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&line, &len);
        if (!f)
            abort();
        fprintf(f, "--%s=", keys[k].key);
        put_sbatch_value(f, keys[k].value);
        fclose(f);
        o[n].line = line;
        o[n].name = gpurun_xstrdup(keys[k].key);
        o[n].value = keys[k].value;
        n++;
    }
    for (size_t i = 0; i < site->noptions; i++) {
        const char *item = site->options[i];
        bool is_long = item[0] == '-' && item[1] == '-';
        const char *p = item + (is_long ? 2 : 1), *v = p;
        char *name = NULL;
        no = NULL;
        if (item[0] != '-' || !*p) {
            no = "not an sbatch option (write it as \"--qos=normal\")";
        } else if (!(no = sbatch_refusal(item, why, sizeof why)) && !(no = one_option_problem(item, why, sizeof why)) &&
                   is_long) {
            size_t l = strcspn(p, "= \t");
            v = p + l + (p[l] != '\0');
            name = gpurun_xstrndup(p, l);
            if (!gpurun_rm_option_name_ok(name))
                no = "not an sbatch option (write it as \"--qos=normal\")";
        } else if (!no) {
            for (size_t s = 0; s < sizeof short_options / sizeof *short_options && !name; s++)
                if (short_options[s].opt == *p)
                    name = gpurun_xstrdup(short_options[s].name);
            if (!name)
                name = gpurun_xasprintf("-%c", *p);
            v = p + 1;
        }
        if (no) {
            char *where = gpurun_xstrdup(site->origin(site, "sbatch"));
            struct gpurun_conf_shown a;
            gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key 'sbatch', item %zu: '%s': cannot go on an #SBATCH line: %s",
                       where, i + 1, gpurun_conf_shown(&a, item), no);
            free(where);
            free(name);
            site_options_free(o, n);
            return -1;
        }
        while (*v == ' ' || *v == '\t')
            v++;
        for (size_t r = 0; r < sizeof refused / sizeof *refused; r++)
            if (!strcmp(name, refused[r].name)) {
                char *where = gpurun_xstrdup(site->origin(site, "sbatch"));
                gpurun_err(err, GPURUN_EXIT_CONFIG,
                           "%s: key 'sbatch', item %zu: '%s' contradicts the job's layout, which sets --%s (from "
                           "'%s'): take it out of the site profile",
                           where, i + 1, item, refused[r].name, refused[r].use);
                free(where);
                free(name);
                site_options_free(o, n);
                return -1;
            }
        o[n].line = gpurun_xstrdup(item);
        o[n].name = name;
        o[n].value = o[n].line + (v - item);
        o[n].gpus = asks_for_gpus(name, o[n].value) || !strcmp(name, "gpus-per-node");
        n++;
    }
    *optsp = o;
    *np = n;
    return 0;
}

/* ---- the script ------------------------------------------------------------ */

/* Checks every value that goes on an #SBATCH line, before any is written. */
static int check_line(const struct gpurun_rm_batch *job, const char *what, const char *v, gpurun_error_t *err)
{
    char why[128];
    const char *no = sbatch_refusal(v, why, sizeof why);
    if (no)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key '%s': cannot go on an #SBATCH line: %s", job->job_file,
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

/* A layout the site's nodes cannot hold is refused here as `gpurun run`
 * would refuse it on such a node (exit 3), unless the job allows sharing. */
/* GPUs a node's ranks use: ranks_per_gpu ranks share each one. */
static long gpus_per_node(const struct gpurun_rm_batch *job, long rpn, long gpr)
{
    long share = job->ranks_per_gpu > 1 ? job->ranks_per_gpu : 1;
    return share > 1 ? (rpn + share - 1) / share * gpr : rpn * gpr;
}

static int check_site_room(const struct gpurun_rm_batch *job, const struct gpurun_rm_site *site, long rpn, long gpr, long tpr,
                           bool gpus_from_layout, gpurun_error_t *err)
{
    if (!site || job->oversubscribe)
        return 0;
    long cores = site->cores_per_node;
    /* With smt a thread is a hardware thread: the cores it needs depend on
     * threads per core, which the profile does not give. */
    if (cores > 0 && tpr != UNSET && !job->smt && tpr * rpn > cores)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "%s: keys 'ranks_per_node' and 'threads_per_rank': %ld ranks x %ld threads need %ld "
                          "cores on a node; site %s's nodes have %ld (cores_per_node in %s): lower them, or set "
                          "oversubscribe = true to share cores",
                          job->job_file, rpn, tpr, rpn * tpr, site->name, cores, site->path);
    if (cores > 0 && tpr == UNSET && rpn > cores)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "%s: key 'ranks_per_node': %ld ranks on a node of %ld cores (site %s, cores_per_node in "
                          "%s): lower it, or set oversubscribe = true to share cores",
                          job->job_file, rpn, cores, site->name, site->path);
    if (gpus_from_layout && site->gpus_per_node >= 0 && gpr != UNSET &&
        gpus_per_node(job, rpn, gpr) > site->gpus_per_node)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "%s: keys 'ranks_per_node' and 'gpus_per_rank': %ld ranks x %ld GPUs%s need %ld GPUs on a "
                          "node; site %s's nodes have %d (gpus_per_node in %s): lower them, or set oversubscribe "
                          "= true to share GPUs",
                          job->job_file, rpn, gpr, job->ranks_per_gpu > 1 ? " (shared by ranks_per_gpu ranks)" : "",
                          gpus_per_node(job, rpn, gpr), site->name, site->gpus_per_node, site->path);
    return 0;
}

/* The generated lines, in the order written; slurm{} may replace some. */
enum { L_NAME, L_NODES, L_TASKS, L_GPUS, L_CPUS, L_TIME, L_SIGNAL, L_OUTPUT, L_N };

/* What the parts of a batch script share, as slurm_batch_script() works
 * them out before it writes a line. */
struct batch_parts {
    const struct gpurun_rm_batch *job;
    const struct gpurun_rm_site *site;
    long nodes, rpn, gpr, tpr; /* the layout, at its largest */
    struct option_line lines[L_N];
    char **names;              /* slurm{} key names as sbatch options ('_' -> '-') */
    bool gpus_asked;           /* a slurm{} key asks for GPUs in its own words */
    struct site_option *sopts; /* the site's options, some dropped */
    size_t nsopts;
};

/* The job's slurm{} keys: each checked, named as an sbatch option, and set
 * on the generated line of that name. */
static int take_slurm_keys(struct batch_parts *bp, gpurun_error_t *err)
{
    const struct gpurun_rm_batch *job = bp->job;
    for (size_t i = 0; i < job->noptions; i++) {
        const struct gpurun_rm_option *kv = &job->options[i];
        char *what = gpurun_xasprintf("slurm.%s", kv->key);
        if (!gpurun_rm_option_name_ok(kv->key)) {
            gpurun_err(err, GPURUN_EXIT_CONFIG,
                       "%s: key '%s': not an sbatch option name (letters, digits, '_', '-')", job->job_file, what);
            free(what);
            return -1;
        }
        bp->names[i] = gpurun_xstrdup(kv->key);
        for (char *p = bp->names[i]; *p; p++)
            if (*p == '_')
                *p = '-';
        for (size_t r = 0; r < sizeof refused / sizeof *refused; r++)
            if (!strcmp(bp->names[i], refused[r].name)) {
                gpurun_err(err, GPURUN_EXIT_CONFIG,
                           "%s: key '%s': contradicts the job's layout, which sets --%s: use '%s' instead",
                           job->job_file, what, refused[r].name, refused[r].use);
                free(what);
                return -1;
            }
        int bad = check_line(job, what, kv->key, err) < 0 ? -1 : check_line(job, what, kv->value, err);
        free(what);
        if (bad < 0)
            return -1;
        bp->gpus_asked |= asks_for_gpus(bp->names[i], kv->value);
        for (size_t l = 0; l < L_N; l++)
            if (!strcmp(bp->names[i], bp->lines[l].name))
                bp->lines[l].user = kv; /* the last one wins, as in sbatch */
    }
    return 0;
}

/* The --output line: slurm-%j.out in the job's results folder. */
static int output_line(struct batch_parts *bp, gpurun_error_t *err)
{
    const struct gpurun_rm_batch *job = bp->job;
    /* sbatch's file names expand %j, %x, ...: a '%' of the folder is
     * written %%, and a '\' would turn the expansion off. */
    if (strchr(job->folder, '\\'))
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key 'results': the results folder '%s' holds a '\\', which turns off sbatch's "
                          "%%j in file names: choose another folder (--results DIR)",
                          job->job_file, job->folder);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        abort();
    for (const char *p = job->folder; *p; p++) {
        if (*p == '%')
            fputc('%', f);
        fputc(*p, f);
    }
    fputs("/slurm-%j.out", f);
    fclose(f);
    bp->lines[L_OUTPUT].value = buf;
    return check_line(job, "results", bp->lines[L_OUTPUT].value, err);
}

/* The values of the generated lines, from the layout, the site and the
 * job's timeout; `site_gpus`: a site option asks for GPUs. */
static int layout_lines(struct batch_parts *bp, bool site_gpus, gpurun_error_t *err)
{
    const struct gpurun_rm_batch *job = bp->job;
    const struct gpurun_rm_site *site = bp->site;
    struct option_line *lines = bp->lines;
    long rpn = bp->rpn, gpr = bp->gpr, tpr = bp->tpr;
    if (check_line(job, "job", job->job, err) < 0)
        return -1;
    lines[L_NAME].value = gpurun_xstrdup(job->job);
    lines[L_NODES].value = gpurun_xasprintf("%ld", bp->nodes);
    lines[L_TASKS].value = gpurun_xasprintf("%ld", rpn);
    if (!bp->gpus_asked && !lines[L_GPUS].user && !site_gpus) {
        if (gpr == UNSET)
            return gpurun_err(err, GPURUN_EXIT_CONFIG,
                              "%s: key 'gpus_per_rank': gpurun submit needs it, since the compute node's GPUs are "
                              "not known here: set it in the job file (0 for a CPU-only job) or with --set "
                              "gpus_per_rank=N",
                              job->job_file);
        if (gpus_per_node(job, rpn, gpr) > 0)
            lines[L_GPUS].value = gpurun_xasprintf("%ld", gpus_per_node(job, rpn, gpr));
    }
    if (check_site_room(job, site, rpn, gpr, tpr, !bp->gpus_asked && !lines[L_GPUS].user, err) < 0)
        return -1;
    if (tpr != UNSET)
        lines[L_CPUS].value = gpurun_xasprintf("%ld", tpr);
    else if (site && site->cores_per_node > 0 && site->cores_per_node / rpn > 0)
        lines[L_CPUS].value = gpurun_xasprintf("%ld", site->cores_per_node / rpn); /* each rank's share */
    if (job->timeout_s > 0)
        lines[L_TIME].value = slurm_time(job->runs * (job->timeout_s + job->stop_grace_s));
    /* The allocation's end, as the job's own timeout: gpurun (the batch
     * shell, exec'ed) gets SIGTERM that long before it, to stop the ranks
     * with their stop grace and write the record. */
    if (job->stop_grace_s > 0)
        lines[L_SIGNAL].value = gpurun_xasprintf("B:TERM@%ld", job->stop_grace_s);
    if (!lines[L_OUTPUT].user && output_line(bp, err) < 0)
        return -1;
    return 0;
}

/* No option twice: what the job writes replaces the site's, and the site's
 * first of a name its later ones. */
static void drop_repeated_site_options(struct batch_parts *bp)
{
    struct site_option *sopts = bp->sopts;
    for (size_t i = 0; i < bp->nsopts; i++) {
        for (size_t l = 0; l < L_N && !sopts[i].dropped; l++)
            sopts[i].dropped =
                (bp->lines[l].value || bp->lines[l].user) && !strcmp(sopts[i].name, bp->lines[l].name);
        for (size_t k = 0; k < bp->job->noptions && !sopts[i].dropped; k++)
            sopts[i].dropped = !strcmp(sopts[i].name, bp->names[k]);
        for (size_t k = 0; k < i && !sopts[i].dropped; k++)
            sopts[i].dropped = !sopts[k].dropped && !strcmp(sopts[i].name, sopts[k].name);
    }
}

/* The #SBATCH lines: gpurun's, the job's other slurm{} keys, then the
 * site's options, before the first command: sbatch stops reading options
 * there. */
static void put_sbatch_lines(FILE *f, const struct batch_parts *bp)
{
    const struct gpurun_rm_batch *job = bp->job;
    for (size_t l = 0; l < L_N; l++) {
        const char *v = bp->lines[l].user ? bp->lines[l].user->value : bp->lines[l].value;
        if (!v)
            continue;
        fprintf(f, "#SBATCH --%s=", bp->lines[l].name);
        put_sbatch_value(f, v);
        fputc('\n', f);
    }
    for (size_t i = 0; i < job->noptions; i++) {
        bool generated = false;
        for (size_t l = 0; l < L_N && !generated; l++)
            generated = !strcmp(bp->names[i], bp->lines[l].name);
        if (generated)
            continue;
        fprintf(f, "#SBATCH --%s=", bp->names[i]);
        put_sbatch_value(f, job->options[i].value);
        fputc('\n', f);
    }
    bool heading = false;
    for (size_t i = 0; i < bp->nsopts; i++) {
        if (bp->sopts[i].dropped)
            continue;
        if (!heading) {
            fputs("# Site ", f);
            gpurun_rm_put_comment(f, bp->site->name);
            fputs(" (", f);
            gpurun_rm_put_comment(f, bp->site->path);
            fputs("):\n", f);
            heading = true;
        }
        fprintf(f, "#SBATCH %s\n", bp->sopts[i].line);
    }
}


/* The whole script into f, from the parts worked out. */
int slurm_batch_script(const struct gpurun_rm_batch *job, char **scriptp, gpurun_error_t *err)
{
    *scriptp = NULL;
    const struct gpurun_rm_site *site = job->site;
    struct batch_parts bp = {
        .job = job,
        .site = site,
        .nodes = job->nodes,
        .rpn = job->ranks_per_node,
        .gpr = job->gpus_per_rank,
        .tpr = job->threads_per_rank,
        .lines =
            {
                [L_NAME] = {"job-name", NULL, NULL}, [L_NODES] = {"nodes", NULL, NULL},
                [L_TASKS] = {"ntasks-per-node", NULL, NULL}, [L_GPUS] = {"gpus-per-node", NULL, NULL},
                [L_CPUS] = {"cpus-per-task", NULL, NULL}, [L_TIME] = {"time", NULL, NULL},
                [L_SIGNAL] = {"signal", NULL, NULL}, [L_OUTPUT] = {"output", NULL, NULL},
            },
    };
    bp.names = gpurun_xcalloc(job->noptions + 1, sizeof *bp.names);
    int rc = -1;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = NULL;

    if (take_slurm_keys(&bp, err) < 0)
        goto out;
    if (site && site_options(site, &bp.sopts, &bp.nsopts, err) < 0)
        goto out;
    /* The job's GPU request, in any words, replaces the site's; a job that
     * says nothing of GPUs takes the site's. */
    bool job_gpus = bp.gpus_asked || bp.lines[L_GPUS].user || bp.gpr != UNSET, site_gpus = false;
    for (size_t i = 0; i < bp.nsopts; i++) {
        if (bp.sopts[i].gpus && job_gpus)
            bp.sopts[i].dropped = true;
        site_gpus |= bp.sopts[i].gpus && !bp.sopts[i].dropped;
    }
    if (layout_lines(&bp, site_gpus, err) < 0)
        goto out;
    drop_repeated_site_options(&bp);

    f = open_memstream(&buf, &len);
    if (!f)
        abort();
    fputs("#!/bin/bash\n# Slurm batch script written by gpurun " PACKAGE_VERSION " (gpurun submit) for job '", f);
    gpurun_rm_put_comment(f, job->job);
    fputs("'.\n# On the compute node it runs the job file again with gpurun run.\n", f);
    if (bp.lines[L_TIME].value && !bp.lines[L_TIME].user)
        fprintf(f, "# --time: %ld run%s x (timeout %lds + %lds for gpurun to stop the ranks and write the record)\n",
                job->runs, job->runs == 1 ? "" : "s", job->timeout_s, job->stop_grace_s);
    fputs(job->comments ? job->comments : "", f);
    put_sbatch_lines(f, &bp);
    if (job->narray) { /* the tasks' indexes are the configurations' numbers */
        fputs("#SBATCH --array=", f);
        for (size_t i = 0; i < job->narray; i++) {
            size_t j = i;
            while (j + 1 < job->narray && job->array[j + 1] == job->array[j] + 1)
                j++;
            fprintf(f, "%s%ld", i ? "," : "", job->array[i]);
            if (j > i)
                fprintf(f, "-%ld", job->array[j]);
            i = j;
        }
        fputc('\n', f);
    }
    fputs(job->body ? job->body : "", f);
    fclose(f);
    f = NULL;
    *scriptp = buf;
    buf = NULL;
    rc = 0;
out:
    if (f)
        fclose(f);
    free(buf);
    free_lines(bp.lines, L_N, bp.names, job->noptions);
    free(bp.names);
    site_options_free(bp.sopts, bp.nsopts);
    return rc;
}
