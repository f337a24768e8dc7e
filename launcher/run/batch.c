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
 *    inside spelled '\'', so no byte is ever code.  Comment lines carry
 *    no control character, so no text ends one early.
 *
 * A site profile (SPEC §4) adds what every job of the site needs: its
 * #SBATCH options where the job gives none of the same name, its module
 * loads, its scratch folder.  Before any of it, gpurun_batch_check() does
 * the checks `gpurun run` makes before it looks at the node. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "inputs.h"
#include "confparse.h"
#include "container.h"
#include "rank.h" /* gpurun_rank_program */
#include "template.h"
#include "util.h"

/* Per run, on top of the job's timeout: gpurun's own grace period to stop
 * the ranks, then the record (SPEC §7).  A batch limit of exactly the
 * timeout would let Slurm kill gpurun before it says why the run ended. */
#define STOP_GRACE_S 60

/* A job file or site profile scanned again for a key's line. */
#define FILE_SCAN_MAX (1024 * 1024)

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

/* ---- what `gpurun run` would refuse --------------------------------------- */

/* "FILE:LINE" of a site profile's key, as a string of its own. */
static char *file_origin(const gpurun_site_t *site, const char *key)
{
    return gpurun_xstrdup(gpurun_site_origin(site, key));
}

/* `text` expanded with `names` and split into words, as `gpurun run` will;
 * what it would refuse is refused here, said as "WHAT: ...". */
static int check_words(struct gpurun_kvlist *names, const char *what, const char *text, gpurun_error_t *err)
{
    char **words;
    int rc = gpurun_expand_words(text, gpurun_kvlist_lookup, names, what, &words, err);
    if (rc < 0 && strncmp(err->text, what, strlen(what)) != 0) { /* a refusal, not an unset name */
        char *why = gpurun_xstrdup(err->text);
        gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: %s", what, why);
        free(why);
    }
    if (rc < 0)
        return -1;
    if (!words[0])
        rc = gpurun_err(err, GPURUN_EXIT_CONFIG, "%s is empty after expansion", what);
    gpurun_free_words(words);
    return rc;
}

/* The program line, the template's gpu_args (when a run may have GPUs) and
 * setup steps, with the names a run gives them (gpurun_job_names(): params
 * over the template's defaults over the job's keys).  Numbers the node
 * decides stand in as 1: only whether a name is set, and the words, are
 * checked. */
static int check_commands(const gpurun_job_t *job, const gpurun_template_t *tpl, char **warnings,
                          gpurun_error_t *err)
{
    struct gpurun_kvlist names = {0};
    long nodes = layout_max(job, "nodes", job->nodes), rpn = layout_max(job, "ranks_per_node", job->ranks_per_node);
    long gpr = layout_max(job, "gpus_per_rank", job->gpus_per_rank);
    char *dir = NULL, *folder = NULL;
    int rc = -1;
    if (gpurun_batch_abspath(job->dir, &dir, err) < 0 || gpurun_batch_job_folder(job, &folder, err) < 0)
        goto out;
    /* Numbers the node decides stand in as 1. */
    long tpr = layout_max(job, "threads_per_rank", job->threads_per_rank);
    char *run_dir = gpurun_xasprintf("%s/RUN-ID", folder);
    struct gpurun_job_values vals = {
        .job = job->name,
        .template_name = job->template_name,
        .job_dir = dir,
        .run_dir = run_dir,
        .nodes = nodes == GPURUN_UNSET ? 1 : nodes,
        .ranks_per_node = rpn == GPURUN_UNSET ? 1 : rpn,
        .ranks = nodes == GPURUN_UNSET || rpn == GPURUN_UNSET ? 1 : nodes * rpn,
        .gpus_per_rank = gpr == GPURUN_UNSET ? 1 : gpr,
        .threads_per_rank = tpr == GPURUN_UNSET ? 1 : tpr,
        .repeat = job->repeat == GPURUN_UNSET ? 1 : job->repeat,
    };
    gpurun_job_names(&names, &vals, tpl, &job->params);
    free(run_dir);

    const char *label = tpl ? tpl->path : job->path ? job->path : job->name;
    char *what = gpurun_xasprintf("%s: key 'command'", label);
    rc = check_words(&names, what, tpl ? tpl->command : job->command, err);
    free(what);
    if (rc == 0 && tpl && tpl->gpu_args && gpr != 0) {
        what = gpurun_xasprintf("%s: key 'gpu_args'", label);
        rc = check_words(&names, what, tpl->gpu_args, err);
        free(what);
    }
    for (size_t i = 0; rc == 0 && tpl && i < tpl->nsetup; i++) {
        what = gpurun_xasprintf("%s: key 'setup', item %zu", label, i + 1);
        rc = check_words(&names, what, tpl->setup[i], err);
        free(what);
    }
    /* The inputs, before the job waits in the queue for them. */
    if (rc == 0)
        rc = gpurun_inputs_check(tpl, job, dir, &names, warnings, err);
out:
    gpurun_kvlist_clear(&names);
    free(dir);
    free(folder);
    return rc;
}

int gpurun_batch_check(const gpurun_job_t *job, gpurun_site_t **sitep, char **warnings, gpurun_error_t *err)
{
    gpurun_template_t *tpl = NULL;
    gpurun_site_t *site = NULL;
    char *path = NULL;
    int rc = -1;
    *sitep = NULL;
    if (gpurun_template_for_job(job, &tpl, err) < 0 || gpurun_site_for_job(job, &site, err) < 0)
        goto out;
    if (check_commands(job, tpl, warnings, err) < 0)
        goto out;
    *sitep = site;
    site = NULL;
    rc = 0;
out:
    free(path);
    gpurun_template_destroy(tpl);
    gpurun_site_destroy(site);
    return rc;
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
static int site_options(const gpurun_site_t *site, struct site_option **optsp, size_t *np, gpurun_error_t *err)
{
    struct site_option *o = gpurun_xcalloc(site->nsbatch + 2, sizeof *o);
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
            char *where = file_origin(site, keys[k].key);
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
    for (size_t i = 0; i < site->nsbatch; i++) {
        const char *item = site->sbatch[i];
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
            if (!option_name_ok(name))
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
            char *where = file_origin(site, "sbatch");
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
                char *where = file_origin(site, "sbatch");
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

/* ---- the body ------------------------------------------------------------- */

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

/* Text for a comment line: a control character would end the comment (a
 * line break) or act on a terminal, so each is written '?'. */
static void put_comment_text(FILE *f, const char *s)
{
    for (; *s; s++)
        fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
}

static bool env_name_char(char c, bool first)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || (!first && c >= '0' && c <= '9');
}

/* The site's scratch folder as one bash word: its ${NAME} and $NAME left
 * for bash to expand ("${NAME}"), everything else single-quoted.  Any other
 * '$' is refused: it would ask bash for more than a variable. */
static int put_scratch(FILE *f, const gpurun_site_t *site, gpurun_error_t *err)
{
    const char *s = site->scratch;
    while (*s) {
        size_t lit = strcspn(s, "$");
        if (lit) {
            char *part = gpurun_xstrndup(s, lit);
            put_shell_word(f, part);
            free(part);
            s += lit;
            continue;
        }
        bool braced = s[1] == '{';
        const char *name = s + 1 + braced, *e = name;
        while (env_name_char(*e, e == name))
            e++;
        if (e == name || (braced && *e != '}')) {
            char *where = file_origin(site, "scratch");
            struct gpurun_conf_shown a;
            gpurun_err(err, GPURUN_EXIT_CONFIG,
                       "%s: key 'scratch': '%s': only ${NAME} and $NAME are expanded in the batch script (a '$' "
                       "followed by anything else asks the shell for more than a variable)",
                       where, gpurun_conf_shown(&a, site->scratch));
            free(where);
            return -1;
        }
        fprintf(f, "\"${%.*s}\"", (int)(e - name), name);
        s = e + braced;
    }
    return 0;
}

/* ---- the script ------------------------------------------------------------ */

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

/* A layout the site's nodes cannot hold is refused here as `gpurun run`
 * would refuse it on such a node (exit 3), unless the job allows sharing. */
/* GPUs a node's ranks use: ranks_per_gpu ranks share each one. */
static long gpus_per_node(const gpurun_job_t *job, long rpn, long gpr)
{
    long share = job->ranks_per_gpu > 1 ? job->ranks_per_gpu : 1;
    return share > 1 ? (rpn + share - 1) / share * gpr : rpn * gpr;
}

static int check_site_room(const gpurun_job_t *job, const gpurun_site_t *site, long rpn, long gpr, long tpr,
                           bool gpus_from_layout, gpurun_error_t *err)
{
    if (!site || job->oversubscribe)
        return 0;
    long cores = site->cores_per_node;
    /* With smt a thread is a hardware thread: the cores it needs depend on
     * threads per core, which the profile does not give. */
    if (cores > 0 && tpr != GPURUN_UNSET && !job->smt && tpr * rpn > cores)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "%s: keys 'ranks_per_node' and 'threads_per_rank': %ld ranks x %ld threads need %ld "
                          "cores on a node; site %s's nodes have %ld (cores_per_node in %s): lower them, or set "
                          "oversubscribe = true to share cores",
                          job->path, rpn, tpr, rpn * tpr, site->name, cores, site->path);
    if (cores > 0 && tpr == GPURUN_UNSET && rpn > cores)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "%s: key 'ranks_per_node': %ld ranks on a node of %ld cores (site %s, cores_per_node in "
                          "%s): lower it, or set oversubscribe = true to share cores",
                          job->path, rpn, cores, site->name, site->path);
    if (gpus_from_layout && site->gpus_per_node >= 0 && gpr != GPURUN_UNSET &&
        gpus_per_node(job, rpn, gpr) > site->gpus_per_node)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "%s: keys 'ranks_per_node' and 'gpus_per_rank': %ld ranks x %ld GPUs%s need %ld GPUs on a "
                          "node; site %s's nodes have %d (gpus_per_node in %s): lower them, or set oversubscribe "
                          "= true to share GPUs",
                          job->path, rpn, gpr, job->ranks_per_gpu > 1 ? " (shared by ranks_per_gpu ranks)" : "",
                          gpus_per_node(job, rpn, gpr), site->name, site->gpus_per_node, site->path);
    return 0;
}

/* A container job: the runtime's command line each rank step will start
 * inside its binding, as `gpurun run` on the node builds it (the runtime
 * found here; the node's may sit elsewhere).  A mount the site refuses is
 * exit 2 here already; a runtime this node lacks is only said. */
static int put_container(FILE *f, const gpurun_job_t *job, const gpurun_site_t *site, const char *abs_job, long gpr,
                         gpurun_error_t *err)
{
    gpurun_template_t *tpl = NULL;
    gpurun_error_t e = {0};
    /* gpurun_batch_check() has reported a template that cannot be read. */
    if (job->template_name && gpurun_template_for_job(job, &tpl, &e) < 0)
        tpl = NULL;
    memset(&e, 0, sizeof e);
    struct gpurun_container_run *ctr = NULL;
    int rc = 0;
    if (gpurun_container_wanted(&job->container) || (tpl && gpurun_container_wanted(&tpl->container))) {
        if (gpurun_container_resolve(&job->container, tpl ? &tpl->container : NULL, site ? &site->container : NULL,
                                     gpurun_job_section_origin(job, "container.image"),
                                     gpurun_job_origin(job, "container.mounts"),
                                     gpurun_job_section_origin(job, "container.runtime"),
                                     /* the script runs inside the allocation, where auto is srun */
                                     job->launcher == GPURUN_LAUNCHER_AUTO ? "srun" : gpurun_launcher_name(job->launcher),
                                     &ctr, &e) < 0) {
            if (e.code != GPURUN_EXIT_ENV) {
                *err = e;
                rc = -1;
            } else {
                char *cut = strstr(e.text, "; nothing was started");
                if (cut)
                    *cut = '\0';
                fputs("# Container: the compute node must have the runtime; on this node, ", f);
                put_comment_text(f, e.text);
                fputc('\n', f);
            }
        }
    }
    if (ctr) {
        char self[4096];
        ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
        if (sl > 0) { /* pyxis mounts gpurun-rank's folder */
            self[sl] = '\0';
            gpurun_container_set_inside(ctr, gpurun_rank_program(self));
        }
        char *dir = gpurun_xstrndup(abs_job, (size_t)(strrchr(abs_job, '/') - abs_job));
        char *run = job->results[0] == '/' ? gpurun_xasprintf("%s/%s/<run-id>", job->results, job->name)
                                           : gpurun_xasprintf("%s/%s/%s/<run-id>", dir, job->results, job->name);
        char *app[] = {"PROGRAM...", NULL};
        char **pyxis = gpurun_container_launcher_options(ctr, run, dir);
        char **argv = pyxis ? pyxis
                             : gpurun_container_wrap_rank(ctr, app, run, dir, gpr == GPURUN_UNSET ? 1 : (int)gpr, NULL);
        fputs("# Container: ", f);
        put_comment_text(f, ctr->why);
        fputs(pyxis ? ". srun starts each rank step in the image, with:\n#  "
                    : ". Each rank step starts, inside its binding:\n#  ",
              f);
        for (char **a = argv; *a; a++) {
            fputc(' ', f);
            put_comment_text(f, *a);
        }
        fputc('\n', f);
        gpurun_free_words(argv);
        free(run);
        free(dir);
    }
    gpurun_container_run_free(ctr);
    gpurun_template_destroy(tpl);
    return rc;
}

/* The generated lines, in the order written; slurm{} may replace some. */
enum { L_NAME, L_NODES, L_TASKS, L_GPUS, L_CPUS, L_TIME, L_OUTPUT, L_N };

/* What the parts of a batch script share, as gpurun_batch_script() works
 * them out before it writes a line. */
struct batch_parts {
    const gpurun_job_t *job;
    const gpurun_site_t *site;
    long nodes, rpn, gpr, tpr; /* the layout, at its largest */
    struct option_line lines[L_N];
    char **names;              /* slurm{} key names as sbatch options ('_' -> '-') */
    bool gpus_asked;           /* a slurm{} key asks for GPUs in its own words */
    struct site_option *sopts; /* the site's options, some dropped */
    size_t nsopts;
    char *folder, *abs_job;
};

/* The job's slurm{} keys: each checked, named as an sbatch option, and set
 * on the generated line of that name. */
static int take_slurm_keys(struct batch_parts *bp, gpurun_error_t *err)
{
    const gpurun_job_t *job = bp->job;
    for (size_t i = 0; i < job->slurm.n; i++) {
        const struct gpurun_kv *kv = &job->slurm.items[i];
        char *what = gpurun_xasprintf("slurm.%s", kv->key);
        if (!option_name_ok(kv->key)) {
            gpurun_err(err, GPURUN_EXIT_CONFIG,
                       "%s: key '%s': not an sbatch option name (letters, digits, '_', '-')", job->path, what);
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
                           job->path, what, refused[r].name, refused[r].use);
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
    const gpurun_job_t *job = bp->job;
    if (gpurun_batch_job_folder(job, &bp->folder, err) < 0)
        return -1;
    /* sbatch's file names expand %j, %x, ...: a '%' of the folder is
     * written %%, and a '\' would turn the expansion off. */
    if (strchr(bp->folder, '\\'))
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key 'results': the results folder '%s' holds a '\\', which turns off sbatch's "
                          "%%j in file names: choose another folder (--results DIR)",
                          job->path, bp->folder);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        abort();
    for (const char *p = bp->folder; *p; p++) {
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
    const gpurun_job_t *job = bp->job;
    const gpurun_site_t *site = bp->site;
    struct option_line *lines = bp->lines;
    long rpn = bp->rpn, gpr = bp->gpr, tpr = bp->tpr;
    if (check_line(job, "job", job->name, err) < 0)
        return -1;
    lines[L_NAME].value = gpurun_xstrdup(job->name);
    lines[L_NODES].value = gpurun_xasprintf("%ld", bp->nodes);
    lines[L_TASKS].value = gpurun_xasprintf("%ld", rpn);
    if (!bp->gpus_asked && !lines[L_GPUS].user && !site_gpus) {
        if (gpr == GPURUN_UNSET)
            return gpurun_err(err, GPURUN_EXIT_CONFIG,
                              "%s: key 'gpus_per_rank': gpurun submit needs it, since the compute node's GPUs are "
                              "not known here: set it in the job file (0 for a CPU-only job) or with --set "
                              "gpus_per_rank=N",
                              job->path);
        if (gpus_per_node(job, rpn, gpr) > 0)
            lines[L_GPUS].value = gpurun_xasprintf("%ld", gpus_per_node(job, rpn, gpr));
    }
    if (check_site_room(job, site, rpn, gpr, tpr, !bp->gpus_asked && !lines[L_GPUS].user, err) < 0)
        return -1;
    if (tpr != GPURUN_UNSET)
        lines[L_CPUS].value = gpurun_xasprintf("%ld", tpr);
    else if (site && site->cores_per_node > 0 && site->cores_per_node / rpn > 0)
        lines[L_CPUS].value = gpurun_xasprintf("%ld", site->cores_per_node / rpn); /* each rank's share */
    if (job->timeout_s > 0)
        lines[L_TIME].value = slurm_time(runs_of(job) * (job->timeout_s + STOP_GRACE_S));
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
        for (size_t k = 0; k < bp->job->slurm.n && !sopts[i].dropped; k++)
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
    const gpurun_job_t *job = bp->job;
    for (size_t l = 0; l < L_N; l++) {
        const char *v = bp->lines[l].user ? bp->lines[l].user->value : bp->lines[l].value;
        if (!v)
            continue;
        fprintf(f, "#SBATCH --%s=", bp->lines[l].name);
        put_sbatch_value(f, v);
        fputc('\n', f);
    }
    for (size_t i = 0; i < job->slurm.n; i++) {
        bool generated = false;
        for (size_t l = 0; l < L_N && !generated; l++)
            generated = !strcmp(bp->names[i], bp->lines[l].name);
        if (generated)
            continue;
        fprintf(f, "#SBATCH --%s=", bp->names[i]);
        put_sbatch_value(f, job->slurm.items[i].value);
        fputc('\n', f);
    }
    bool heading = false;
    for (size_t i = 0; i < bp->nsopts; i++) {
        if (bp->sopts[i].dropped)
            continue;
        if (!heading) {
            fputs("# Site ", f);
            put_comment_text(f, bp->site->name);
            fputs(" (", f);
            put_comment_text(f, bp->site->path);
            fputs("):\n", f);
            heading = true;
        }
        fprintf(f, "#SBATCH %s\n", bp->sopts[i].line);
    }
}

/* The site's module loads and scratch folder, if it has them. */
static int put_site_setup(FILE *f, const gpurun_site_t *site, gpurun_error_t *err)
{
    if (site && site->nmodules) {
        fputs("# Site ", f);
        put_comment_text(f, site->name);
        fputs("'s modules.  `module` comes with the environment sbatch passes on,\n"
              "# else from /etc/profile; module scripts may read unset variables: +u.\n"
              "set +u\n"
              "type module >/dev/null 2>&1 || . /etc/profile || true\n",
              f);
        for (size_t i = 0; i < site->nmodules; i++) {
            fputs("module load ", f);
            put_shell_word(f, site->modules[i]);
            fputc('\n', f);
        }
        fputs("set -u\n", f);
    }
    if (site && site->scratch && *site->scratch) {
        fputs("export GPURUN_SCRATCH=", f);
        if (put_scratch(f, site, err) < 0)
            return -1;
        fputs("   # the site's scratch folder\n", f);
    }
    return 0;
}

/* The whole script into f, from the parts worked out. */
static int put_script(FILE *f, const struct batch_parts *bp, const char *gpurun_path, char *const *set_args,
                      size_t nset, gpurun_error_t *err)
{
    const gpurun_job_t *job = bp->job;
    fputs("#!/bin/bash\n# Slurm batch script written by gpurun " PACKAGE_VERSION " (gpurun submit) for job '", f);
    put_comment_text(f, job->name);
    fputs("'.\n# On the compute node it runs the job file again with gpurun run.\n", f);
    if (bp->lines[L_TIME].value && !bp->lines[L_TIME].user)
        fprintf(f, "# --time: %ld run%s x (timeout %lds + %ds for gpurun to stop the ranks and write the record)\n",
                runs_of(job), runs_of(job) == 1 ? "" : "s", job->timeout_s, STOP_GRACE_S);
    if (put_container(f, job, bp->site, bp->abs_job, bp->gpr, err) < 0)
        return -1;
    put_sbatch_lines(f, bp);
    fputs("set -euo pipefail\n", f);
    if (put_site_setup(f, bp->site, err) < 0)
        return -1;
    fputs("exec ", f);
    put_shell_word(f, gpurun_path);
    fputs(" run ", f);
    put_shell_word(f, bp->abs_job);
    for (size_t i = 0; i < nset; i++) {
        fputs(" --set ", f);
        put_shell_word(f, set_args[i]);
    }
    fputc('\n', f);
    return 0;
}

int gpurun_batch_script(const gpurun_job_t *job, const gpurun_site_t *site, const char *job_path,
                        const char *gpurun_path, char *const *set_args, size_t nset, char **scriptp,
                        gpurun_error_t *err)
{
    *scriptp = NULL;
    struct batch_parts bp = {
        .job = job,
        .site = site,
        .nodes = layout_max(job, "nodes", job->nodes),
        .rpn = layout_max(job, "ranks_per_node", job->ranks_per_node),
        .gpr = layout_max(job, "gpus_per_rank", job->gpus_per_rank),
        .tpr = layout_max(job, "threads_per_rank", job->threads_per_rank),
        .lines =
            {
                [L_NAME] = {"job-name", NULL, NULL}, [L_NODES] = {"nodes", NULL, NULL},
                [L_TASKS] = {"ntasks-per-node", NULL, NULL}, [L_GPUS] = {"gpus-per-node", NULL, NULL},
                [L_CPUS] = {"cpus-per-task", NULL, NULL}, [L_TIME] = {"time", NULL, NULL},
                [L_OUTPUT] = {"output", NULL, NULL},
            },
    };
    if (bp.rpn == GPURUN_UNSET)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key 'ranks_per_node': gpurun submit needs it, since the compute node's GPUs "
                          "are not known here: set it in the job file or with --set ranks_per_node=N",
                          job->path);
    bp.names = gpurun_xcalloc(job->slurm.n, sizeof *bp.names);
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
    bool job_gpus = bp.gpus_asked || bp.lines[L_GPUS].user || bp.gpr != GPURUN_UNSET, site_gpus = false;
    for (size_t i = 0; i < bp.nsopts; i++) {
        if (bp.sopts[i].gpus && job_gpus)
            bp.sopts[i].dropped = true;
        site_gpus |= bp.sopts[i].gpus && !bp.sopts[i].dropped;
    }
    if (layout_lines(&bp, site_gpus, err) < 0)
        goto out;
    drop_repeated_site_options(&bp);
    if (gpurun_batch_abspath(job_path, &bp.abs_job, err) < 0)
        goto out;

    f = open_memstream(&buf, &len);
    if (!f)
        abort();
    if (put_script(f, &bp, gpurun_path, set_args, nset, err) < 0)
        goto out;
    fclose(f);
    f = NULL;
    *scriptp = buf;
    buf = NULL;
    rc = 0;
out:
    if (f)
        fclose(f);
    free(buf);
    free(bp.folder);
    free(bp.abs_job);
    free_lines(bp.lines, L_N, bp.names, job->slurm.n);
    free(bp.names);
    site_options_free(bp.sopts, bp.nsopts);
    return rc;
}
