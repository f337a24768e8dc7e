/* SPDX-License-Identifier: BSD-3-Clause */
/* The batch script of `gpurun submit`: the resource manager's directives
 * (plugins/rm.h: Slurm's #SBATCH lines, plugins/slurm/sbatch.c), around
 * what gpurun writes itself: comments (a container's command line), then
 * a body that runs the same job file with `gpurun run` on the compute node.
 *
 * bash reads the body: every word there is single-quoted, a quote inside
 * spelled '\'', so no byte is ever code.  Comment lines carry no control
 * character, so no text ends one early.
 *
 * A site profile (SPEC §4) adds what every job of the site needs: its batch
 * options where the job gives none of the same name (the manager's
 * business), its module loads, its scratch folder.  Before any of it,
 * gpurun_batch_check() does the checks `gpurun run` makes before it looks
 * at the node. */
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
#include "hpldat.h"
#include "manager.h"
#include "plugin_support.h" /* gpurun_rank_program */
#include "template.h"
#include "job_template.h"
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
    /* HPL's NB and P x Q (hpldat.h): their form, the input they go into,
     * and the grid against the ranks where the job fixes them. */
    struct gpurun_hpl_edit hpl;
    long nranks = !job->nscan && job->nodes > 0 && job->ranks_per_node > 0 ? (long)job->nodes * job->ranks_per_node : 0;
    if (rc == 0)
        rc = gpurun_hpl_edit_for_job(tpl, job, nranks, &hpl, err);
    if (rc == 0)
        rc = gpurun_hpl_check_from(tpl, &hpl, gpurun_kvlist_lookup, &names, dir, err);
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


/* ---- the body ------------------------------------------------------------- */

static void put_shell_word(FILE *f, const char *s)
{
    gpurun_rm_put_shell_word(f, s);
}

/* Text for a comment line: a control character would end the comment (a
 * line break) or act on a terminal, so each is written '?'. */
static void put_comment_text(FILE *f, const char *s)
{
    gpurun_rm_put_comment(f, s);
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


/* A container job: the runtime's command line each rank step will start
 * inside its binding, as `gpurun run` on the node builds it (the runtime
 * found here; the node's may sit elsewhere).  A mount the site refuses is
 * exit 2 here already; a runtime this node lacks is only said. */
static int put_container(FILE *f, const gpurun_rm_plugin_t *rm, const gpurun_job_t *job, const gpurun_site_t *site,
                         const char *abs_job, long gpr, gpurun_error_t *err)
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
                                     /* the script runs inside the allocation, where auto is
                                      * the manager's launch command */
                                     !strcmp(job->launcher, "auto") && rm->launcher ? rm->launcher->name
                                                                                   : job->launcher,
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
        const gpurun_rm_plugin_t *by = gpurun_rm_of_runtime(ctr->runtime); /* pyxis: its launch command */
        if (pyxis)
            fprintf(f, ". %s starts each rank step in the image, with:\n#  ", by ? by->launcher->name : "the launcher");
        else
            fputs(". Each rank step starts, inside its binding:\n#  ", f);
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


/* The site's module loads and scratch folder, if it has them. */
static int put_site_setup(FILE *f, const gpurun_rm_plugin_t *rm, const gpurun_site_t *site, gpurun_error_t *err)
{
    if (site && site->nmodules) {
        fputs("# Site ", f);
        put_comment_text(f, site->name);
        fprintf(f, "'s modules.  `module` comes with the environment %s passes on,\n",
                rm->submit_command ? rm->submit_command : rm->name);
        fputs("# else from /etc/profile; module scripts may read unset variables: +u.\n"
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

/* The site profile as a manager sees it (plugins/rm.h). */
static const char *site_origin(const struct gpurun_rm_site *rs, const char *key)
{
    return gpurun_site_origin(rs->priv, key);
}

void gpurun_batch_rm_site(const gpurun_site_t *site, struct gpurun_rm_site *out)
{
    *out = (struct gpurun_rm_site){
        .name = site->name,
        .path = site->path,
        .partition = site->partition,
        .account = site->account,
        .options = (const char *const *)site->batch_options,
        .noptions = site->nbatch_options,
        .cores_per_node = site->cores_per_node,
        .gpus_per_node = site->gpus_per_node,
        .origin = site_origin,
        .priv = site,
    };
}

/* gpurun's part of the script: the comments (a container's command line)
 * and the body, each in a malloc'ed string; -1 with err when one cannot be
 * written (a mount the site refuses, a scratch folder bash would run). */
static int script_parts(const gpurun_rm_plugin_t *rm, const gpurun_job_t *job, const gpurun_site_t *site,
                        const char *abs_job, long gpr, const char *gpurun_path, char *const *set_args, size_t nset,
                        const struct gpurun_batch_configs *cfgs, char **commentsp, char **bodyp, gpurun_error_t *err)
{
    size_t len;
    FILE *f = open_memstream(commentsp, &len);
    if (!f)
        abort();
    for (size_t i = 0; cfgs && i < cfgs->n; i++) {
        if (cfgs->n > 1 && i == 0)
            fprintf(f, "# A job array of %zu configurations of the scan's %zu, each task the configuration its index "
                       "names (%s):\n", cfgs->n, cfgs->count, rm->array_task_var);
        fprintf(f, "# Configuration %ld of %zu: ", cfgs->numbers[i], cfgs->count);
        put_comment_text(f, cfgs->texts[i]);
        fputc('\n', f);
    }
    int rc = put_container(f, rm, job, site, abs_job, gpr, err);
    fclose(f);
    if (rc < 0)
        return -1;
    f = open_memstream(bodyp, &len);
    if (!f)
        abort();
    fputs("set -euo pipefail\n", f);
    rc = put_site_setup(f, rm, site, err);
    fputs("exec ", f);
    put_shell_word(f, gpurun_path);
    fputs(" run ", f);
    put_shell_word(f, abs_job);
    for (size_t i = 0; i < nset; i++) {
        fputs(" --set ", f);
        put_shell_word(f, set_args[i]);
    }
    if (cfgs && cfgs->n > 1) /* the variable's name is the plugin's, not the user's */
        fprintf(f, " --configuration \"${%s}\"", rm->array_task_var);
    else if (cfgs)
        fprintf(f, " --configuration %ld", cfgs->numbers[0]);
    fputc('\n', f);
    fclose(f);
    return rc;
}

int gpurun_batch_script_rm(const gpurun_rm_plugin_t *rm, const gpurun_job_t *job, const gpurun_site_t *site,
                           const char *job_path, const char *gpurun_path, char *const *set_args, size_t nset,
                           const struct gpurun_batch_configs *cfgs, char **scriptp, gpurun_error_t *err)
{
    *scriptp = NULL;
    if (cfgs && (!cfgs->n || (cfgs->n > 1 && !rm->array_task_var)))
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "submit: %s takes no job arrays from gpurun", rm->title);
    long rpn = layout_max(job, "ranks_per_node", job->ranks_per_node);
    if (rpn == GPURUN_UNSET)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key 'ranks_per_node': gpurun submit needs it, since the compute node's GPUs "
                          "are not known here: set it in the job file or with --set ranks_per_node=N",
                          job->path);
    char *folder = NULL, *abs_job = NULL, *comments = NULL, *body = NULL;
    int rc = -1;
    if (gpurun_batch_job_folder(job, &folder, err) < 0 || gpurun_batch_abspath(job_path, &abs_job, err) < 0)
        goto out;
    long gpr = layout_max(job, "gpus_per_rank", job->gpus_per_rank);
    /* What cannot be written of gpurun's part is said only after what the
     * manager refuses, as when the script was written in one go. */
    gpurun_error_t parts_err = {0};
    int parts = script_parts(rm, job, site, abs_job, gpr, gpurun_path, set_args, nset, cfgs, &comments, &body,
                             &parts_err);
    struct gpurun_rm_site rs = {0};
    if (site)
        gpurun_batch_rm_site(site, &rs);
    const struct gpurun_kvlist *section = gpurun_job_manager_options(job, rm->name);
    struct gpurun_rm_option *options = gpurun_xcalloc(section->n + 1, sizeof *options);
    for (size_t i = 0; i < section->n; i++)
        options[i] = (struct gpurun_rm_option){section->items[i].key, section->items[i].value};
    struct gpurun_rm_batch b = {
        .job = job->name,
        .job_file = job->path,
        .nodes = layout_max(job, "nodes", job->nodes),
        .ranks_per_node = rpn,
        .gpus_per_rank = gpr,
        .threads_per_rank = layout_max(job, "threads_per_rank", job->threads_per_rank),
        .ranks_per_gpu = job->ranks_per_gpu,
        .oversubscribe = job->oversubscribe,
        .smt = job->smt,
        .timeout_s = job->timeout_s,
        .runs = runs_of(job),
        .stop_grace_s = STOP_GRACE_S,
        .options = options,
        .noptions = section->n,
        .folder = folder,
        .site = site ? &rs : NULL,
        .comments = comments ? comments : "",
        .body = body ? body : "",
        .array = cfgs && cfgs->n > 1 ? cfgs->numbers : NULL,
        .narray = cfgs && cfgs->n > 1 ? cfgs->n : 0,
    };
    rc = rm->batch_script(&b, scriptp, err);
    free(options);
    if (rc == 0 && parts < 0) {
        free(*scriptp);
        *scriptp = NULL;
        *err = parts_err;
        rc = -1;
    }
out:
    free(folder);
    free(abs_job);
    free(comments);
    free(body);
    return rc;
}

int gpurun_batch_script(const gpurun_job_t *job, const gpurun_site_t *site, const char *job_path,
                        const char *gpurun_path, char *const *set_args, size_t nset, char **scriptp,
                        gpurun_error_t *err)
{
    const gpurun_rm_plugin_t *rm;
    char why[256];
    *scriptp = NULL;
    if (gpurun_rm_for_submit(job->launcher, site ? site->scheduler : NULL, &rm, why,
                             sizeof why, err) < 0)
        return -1;
    return gpurun_batch_script_rm(rm, job, site, job_path, gpurun_path, set_args, nset, NULL, scriptp, err);
}
