/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun submit: write the job's batch script for its resource manager
 * (Slurm's sbatch, plugins/rm.h) into its results folder, then hand it to
 * the manager. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "cmd.h"
#include "job.h"
#include "manager.h"
#include "safefile.h"
#include "scan.h"
#include "site.h"
#include "template.h"
#include "job_template.h"
#include "util.h"

static const char submit_usage[] =
    "Usage: gpurun submit JOB.conf [--dry-run] [--set KEY=VALUE]... [--results DIR]\n"
    "\n"
    "Check the job as gpurun run would (its template or command, every ${name},\n"
    "its site profile), write a batch script for its resource manager into\n"
    "RESULTS/<job>/submit-<UTC time>.SUFFIX, then submit it.  The manager: the one\n"
    "of the job's launcher, else the site's scheduler, else the allocation gpurun\n"
    "runs in, else the first below.  On the compute node the script loads the\n"
    "site's modules and runs `gpurun run JOB.conf` with the same --set options.\n"
    "\n"
    "  --dry-run           write and print the script, submit nothing\n"
    "  --set KEY=VALUE     override a job key (MANAGER.KEY=VALUE, ranks_per_node=4)\n"
    "  --results DIR       results folder (default: the job's `results`, relative to it)\n"
    "  -h, --help          this help\n"
    "\n"
    "The layout, the time limit and the keys of the job's MANAGER {} section become\n"
    "the manager's directives; the site's partition, account and batch options\n"
    "follow, unless the job sets the same.  A job with a scan: a batch job per\n"
    "configuration, sized and timed for it (or a job array for configurations of\n"
    "one size), each running gpurun run JOB.conf --configuration K; --dry-run\n"
    "prints every script.\n";

static const char submit_status[] =
    "Exit status: 0 submitted (or written, with --dry-run); 2 bad job file, template,\n"
    "site profile or option; 3 a layout the site's nodes cannot hold, the manager's\n"
    "submit command missing or refusing the job.\n";

/* The usage, each manager's paragraph (rm.h submit_help), the exit status. */
static void put_usage(void)
{
    fputs(submit_usage, stdout);
    for (const gpurun_rm_plugin_t *const *m = gpurun_rm_all(); *m; m++)
        if ((*m)->batch_script && (*m)->submit_help)
            printf("\n%s (.%s scripts, %s):\n%s", (*m)->title, (*m)->script_suffix ? (*m)->script_suffix : "",
                   (*m)->submit_command ? (*m)->submit_command : "", (*m)->submit_help);
    printf("\n%s", submit_status);
}

/* ---- files -------------------------------------------------------------- */

/* Write the script as a new file of ours, mode 0600 whatever the umask,
 * through a descriptor of its folder (O_EXCL, O_NOFOLLOW: never over an
 * earlier script of the same second, nor through a link someone left
 * there), and keep it open: sbatch reads this descriptor, exactly what was
 * written, whatever happens to the folder's names meanwhile.  The results
 * folder and its job folder (each made 0755 when missing, whatever the
 * umask) are checked as `gpurun run` checks them, and the job folder is
 * opened through the results folder's descriptor, never through a symlink:
 * a script that run would refuse is never submitted.  On error nothing is
 * left behind. */
static int write_script(const char *folder, const char *tag, const char *suffix, const char *script, char **pathp,
                        int *fdp, gpurun_error_t *err)
{
    const char *slash = strrchr(folder, '/'); /* RESULTS/JOB, absolute */
    if (!slash || !slash[1])
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "submit: %s: not a results folder and job name", folder);
    char *results = slash == folder ? gpurun_xstrdup("/") : gpurun_xstrndup(folder, (size_t)(slash - folder));
    int rfd = gpurun_open_folder_path(results, "submit: the results folder", 0755, true, err);
    free(results);
    if (rfd < 0)
        return -1;
    int dirfd = gpurun_open_folder_at(rfd, slash + 1, folder, "submit: the job folder", 0755, true, err);
    close(rfd);
    if (dirfd < 0)
        return -1;
    time_t now = time(NULL);
    struct tm tm;
    char stamp[32], name[96];
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    int fd = -1, e = EEXIST;
    for (int i = 1; i <= 100 && fd < 0 && e == EEXIST; i++) {
        if (i == 1)
            snprintf(name, sizeof name, "submit-%s%.20s.%.16s", stamp, tag, suffix);
        else
            snprintf(name, sizeof name, "submit-%s%.20s-%d.%.16s", stamp, tag, i, suffix);
        fd = gpurun_create_at(dirfd, name, O_RDWR, 0600);
        e = fd < 0 ? errno : 0;
    }
    if (fd < 0) {
        close(dirfd);
        return gpurun_err(err, GPURUN_EXIT_ENV, "submit: cannot create the batch script in %s: %s", folder,
                          strerror(e));
    }
    size_t len = strlen(script), off = 0;
    e = fchmod(fd, 0600) < 0 ? errno : 0; /* the umask may have taken bits we want */
    while (off < len && !e) {
        ssize_t n = write(fd, script + off, len - off);
        if (n < 0 && errno != EINTR)
            e = errno;
        else if (n > 0)
            off += (size_t)n;
    }
    if (!e && (fsync(fd) < 0 || lseek(fd, 0, SEEK_SET) < 0))
        e = errno;
    if (e) {
        unlinkat(dirfd, name, 0);
        close(fd);
        close(dirfd);
        return gpurun_err(err, GPURUN_EXIT_ENV, "submit: cannot write the batch script in %s: %s", folder,
                          strerror(e));
    }
    close(dirfd);
    *pathp = gpurun_xasprintf("%s/%s", folder, name);
    *fdp = fd;
    return 0;
}

/* gpurun's own path, for the compute node to run the same gpurun. */
static int self_path(char **pathp, gpurun_error_t *err)
{
    for (size_t size = 256; size <= 65536; size *= 2) {
        char *p = gpurun_xmalloc(size);
        ssize_t n = readlink("/proc/self/exe", p, size);
        if (n < 0) {
            int e = errno;
            free(p);
            return gpurun_err(err, GPURUN_EXIT_ENV, "submit: cannot find gpurun's own path in /proc/self/exe: %s",
                              strerror(e));
        }
        if ((size_t)n < size) {
            p[n] = '\0';
            *pathp = p;
            return 0;
        }
        free(p);
    }
    return gpurun_err(err, GPURUN_EXIT_ENV, "submit: gpurun's own path is too long");
}

/* ---- a scan: a batch job per configuration -------------------------------- */

/* One configuration of a scan as a job of its own: the job file read
 * again, the --set options, then the configuration's values, each fixing
 * its key (gpurun_job_set drops the axis): its layout and time limit are
 * its own.  *textp: what it varies. */
static int config_job(const char *job_path, char *const *sets, size_t nset, const gpurun_job_t *scan_job, size_t k,
                      gpurun_job_t **jobp, char **textp, gpurun_error_t *err)
{
    struct gpurun_scan_config sc;
    gpurun_scan_config(scan_job, k, &sc);
    gpurun_job_t *job = NULL;
    int rc = gpurun_job_load(job_path, &job, err);
    for (size_t i = 0; rc == 0 && i < nset; i++)
        rc = gpurun_job_set(job, sets[i], err);
    for (size_t i = 0; rc == 0 && i < sc.nsets; i++)
        rc = gpurun_job_set(job, sc.sets[i], err);
    if (rc < 0) {
        gpurun_job_destroy(job);
        job = NULL;
    }
    *jobp = job;
    *textp = sc.text;
    sc.text = NULL;
    gpurun_scan_config_free(&sc);
    return rc;
}

/* "configuration K of N (WHAT): " before err's text. */
static int name_config(size_t k, size_t n, const char *text, gpurun_error_t *err)
{
    char *was = gpurun_xstrdup(err->text);
    gpurun_err(err, err->code ? err->code : GPURUN_EXIT_CONFIG, "configuration %zu of %zu (%s): %s", k + 1, n, text,
               was);
    free(was);
    return -1;
}

static bool same_layout(const gpurun_job_t *a, const gpurun_job_t *b)
{
    return a->nodes == b->nodes && a->ranks_per_node == b->ranks_per_node && a->gpus_per_rank == b->gpus_per_rank &&
           a->threads_per_rank == b->threads_per_rank;
}

/* gpurun submit of a scan: every configuration checked as its own job
 * first, then one batch job for each, sized and timed for it; where the
 * manager takes job arrays, configurations of one size share an array
 * whose task indexes are their numbers.  All record into the job's one
 * results folder, as a scan run in one allocation does. */
struct scan_submit {
    const gpurun_job_t *job; /* the scan as the job file writes it */
    const char *job_path, *self;
    char *const *sets;
    size_t nset;
    bool dry;
    size_t n;              /* configurations */
    gpurun_job_t **jobs;   /* each configuration as a job of its own */
    char **texts;          /* what each varies */
    size_t *group, ngroups; /* each configuration's batch job */
    long *numbers;         /* scratch: one group's configuration numbers */
    char **texts_of;       /* scratch: and their texts */
    gpurun_site_t *site;
    const gpurun_rm_plugin_t *rm;
    char *folder;
    char **scripts; /* one per group, made before any is written */
    struct gpurun_strbuf warned, ids;
    size_t submitted;
};

/* The configurations of size group `g`: their numbers (from 1) and texts,
 * in order, and the first one's index; returns how many. */
static size_t group_members(const size_t *group, size_t n, size_t g, char **texts, long *numbers, char **texts_of,
                            size_t *first)
{
    size_t m = 0;
    *first = n;
    for (size_t k = 0; k < n; k++)
        if (group[k] == g) {
            *first = *first < k ? *first : k;
            numbers[m] = (long)k + 1;
            texts_of[m++] = texts[k];
        }
    return m;
}

static void scan_submit_init(struct scan_submit *s, const gpurun_job_t *job, const char *job_path, char *const *sets,
                             size_t nset, bool dry, const char *self)
{
    *s = (struct scan_submit){.job = job, .job_path = job_path, .self = self, .sets = sets, .nset = nset, .dry = dry};
    s->n = gpurun_scan_count(job);
    s->jobs = gpurun_xcalloc(s->n, sizeof *s->jobs);
    s->texts = gpurun_xcalloc(s->n + 1, sizeof *s->texts);
    s->group = gpurun_xcalloc(s->n, sizeof *s->group);
    s->numbers = gpurun_xcalloc(s->n, sizeof *s->numbers);
    s->texts_of = gpurun_xcalloc(s->n, sizeof *s->texts_of);
}

static void scan_submit_destroy(struct scan_submit *s)
{
    for (size_t k = 0; k < s->n; k++)
        gpurun_job_destroy(s->jobs[k]);
    free(s->jobs);
    gpurun_free_words(s->texts);
    free(s->texts_of);
    free(s->group);
    free(s->numbers);
    free(s->folder);
    free(s->warned.s);
    free(s->ids.s);
    for (size_t g = 0; s->scripts && g < s->ngroups; g++)
        free(s->scripts[g]);
    free(s->scripts);
    gpurun_site_destroy(s->site);
}

/* Configuration k checked as a job of its own; its warnings said, each
 * line once, though several configurations share it; the first site kept. */
static int scan_check_config(struct scan_submit *s, size_t k, gpurun_error_t *err)
{
    gpurun_site_t *site = NULL;
    char *warnings = NULL;
    if (config_job(s->job_path, s->sets, s->nset, s->job, k, &s->jobs[k], &s->texts[k], err) < 0 ||
        gpurun_batch_check(s->jobs[k], &site, &warnings, err) < 0) {
        free(warnings);
        return name_config(k, s->n, s->texts[k], err);
    }
    /* where the inputs lie */
    for (char *line = warnings ? strtok(warnings, "\n") : NULL; line; line = strtok(NULL, "\n"))
        if (!s->warned.s || !strstr(s->warned.s, line)) {
            fprintf(stderr, "gpurun: warning: %s\n", line);
            gpurun_strbuf_printf(&s->warned, "%s\n", line);
        }
    free(warnings);
    if (!s->site)
        s->site = site;
    else
        gpurun_site_destroy(site);
    return 0;
}

/* Every configuration checked, the manager and results folder found, the
 * configurations grouped by size (one group each without job arrays). */
static int scan_check(struct scan_submit *s, gpurun_error_t *err)
{
    /* The scan as the file writes it first: a misspelt params.NAME named on its line. */
    gpurun_template_t *tpl = NULL;
    if (gpurun_template_for_job(s->job, &tpl, err) < 0)
        return -1;
    gpurun_template_destroy(tpl);
    for (size_t k = 0; k < s->n; k++)
        if (scan_check_config(s, k, err) < 0)
            return -1;
    char why[256];
    const char *scheduler = s->site ? s->site->scheduler : NULL;
    if (gpurun_rm_for_submit(s->job->launcher, scheduler, &s->rm, why, sizeof why, err) < 0 ||
        gpurun_batch_job_folder(s->job, &s->folder, err) < 0)
        return -1;
    bool arrays = s->rm->array_task_var != NULL;
    for (size_t k = 0; k < s->n; k++) {
        size_t j = 0;
        while (arrays && j < k && !same_layout(s->jobs[j], s->jobs[k]))
            j++;
        s->group[k] = arrays && j < k ? s->group[j] : s->ngroups++;
    }
    fprintf(stderr, "gpurun: %s: a scan of %zu configurations: %zu batch job%s, each sized and timed for its own%s\n",
            s->job->name, s->n, s->ngroups, s->ngroups == 1 ? "" : "s",
            arrays ? " (configurations of one size share a job array)" : "");
    return 0;
}

/* Every script made before any is written: what the manager refuses (a
 * size the site's nodes cannot hold) leaves nothing behind. */
static int scan_make_scripts(struct scan_submit *s, gpurun_error_t *err)
{
    s->scripts = gpurun_xcalloc(s->ngroups + 1, sizeof *s->scripts);
    for (size_t g = 0; g < s->ngroups; g++) {
        size_t first, m = group_members(s->group, s->n, g, s->texts, s->numbers, s->texts_of, &first);
        struct gpurun_batch_configs cfgs = {.count = s->n, .numbers = s->numbers, .n = m, .texts = s->texts_of};
        if (gpurun_batch_script_rm(s->rm, s->jobs[first], s->site, s->job_path, s->self, s->sets, s->nset, &cfgs,
                                   &s->scripts[g], err) < 0)
            return name_config(first, s->n, s->texts[first], err);
    }
    return 0;
}

/* --dry-run: the script on stdout, where it lies on stderr. */
static void say_dry(const char *script, const char *path)
{
    fputs(script, stdout);
    fflush(stdout);
    fprintf(stderr, "gpurun: batch script written to %s; not submitted (--dry-run)\n", path);
}

/* err's text followed by the batch jobs already queued: those stay, say which. */
static int scan_failed(struct scan_submit *s, size_t g, const char *path, gpurun_error_t *err)
{
    char *was = gpurun_xstrdup(err->text);
    gpurun_err(err, err->code, "batch job %zu of %zu (%s): %s; %s", g + 1, s->ngroups, path, was,
               s->submitted ? "the ones before it were submitted:" : "none was submitted");
    free(was);
    if (s->submitted) {
        char *e = gpurun_xasprintf("%s %s", err->text, s->ids.s);
        gpurun_err(err, err->code, "%s", e);
        free(e);
    }
    return -1;
}

/* Group g's script written into the results folder, then printed
 * (--dry-run) or submitted. */
static int scan_send_group(struct scan_submit *s, size_t g, gpurun_error_t *err)
{
    size_t first, m = group_members(s->group, s->n, g, s->texts, s->numbers, s->texts_of, &first);
    const gpurun_rm_plugin_t *rm = s->rm;
    char *script = s->scripts[g], *path = NULL, tag[32], said[256];
    s->scripts[g] = NULL;
    int fd = -1, rc = 0;
    snprintf(tag, sizeof tag, m > 1 ? "-array%ld" : "-config%ld", s->numbers[0]);
    if (write_script(s->folder, tag, rm->script_suffix ? rm->script_suffix : rm->name, script, &path, &fd, err) < 0) {
        free(script);
        if (s->submitted) { /* those stay queued: say which */
            char *e = gpurun_xasprintf("%s; the batch jobs submitted before it: %s", err->text, s->ids.s);
            gpurun_err(err, err->code, "%s", e);
            free(e);
        }
        return -1;
    }
    if (s->dry) {
        if (m > 1)
            printf("%s# ==== batch job %zu of %zu: a job array of configurations %ld-%ld (%zu) of %zu ====\n",
                   g ? "\n" : "", g + 1, s->ngroups, s->numbers[0], s->numbers[m - 1], m, s->n);
        else
            printf("%s# ==== batch job %zu of %zu: configuration %ld of %zu (%s) ====\n", g ? "\n" : "", g + 1,
                   s->ngroups, s->numbers[0], s->n, s->texts_of[0]);
        say_dry(script, path);
    } else if (rm->submit(fd, path, said, sizeof said, err) < 0) {
        rc = scan_failed(s, g, path, err);
    } else {
        printf("Submitted batch job %s\nBatch script: %s\n", said, path);
        gpurun_strbuf_printf(&s->ids, "%s%s", s->submitted ? ", " : "", said);
        s->submitted++;
    }
    if (rc == 0)
        fflush(stdout);
    free(script);
    free(path);
    close(fd);
    return rc;
}

static int submit_scan(const gpurun_job_t *job, const char *job_path, char *const *sets, size_t nset, bool dry,
                       const char *self, gpurun_error_t *err)
{
    struct scan_submit s;
    scan_submit_init(&s, job, job_path, sets, nset, dry, self);
    int rc = scan_check(&s, err) < 0 || scan_make_scripts(&s, err) < 0 ? -1 : 0;
    for (size_t g = 0; rc == 0 && g < s.ngroups; g++)
        rc = scan_send_group(&s, g, err);
    scan_submit_destroy(&s);
    return rc < 0 ? (err->code ? err->code : GPURUN_EXIT_CONFIG) : 0;
}

/* ---- the command ---------------------------------------------------------- */

struct submit_opts {
    bool dry;
    const char *results;
    const char *job_path;
    /* --set as given, plus one for --results: the compute node repeats them. */
    char **sets;
    size_t nset;
};

/* The command line into *o; *done when there is nothing more to do (help
 * printed, or a bad command line): the exit status is returned. */
static int submit_options(int argc, char **argv, struct submit_opts *o, bool *done, gpurun_error_t *err)
{
    enum { O_DRY = 1000, O_SET, O_RESULTS };
    static const struct option opts[] = {
        {"dry-run", no_argument, NULL, O_DRY},
        {"set", required_argument, NULL, O_SET},
        {"results", required_argument, NULL, O_RESULTS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    *done = true;
    optind = 0; /* a full restart (glibc, musl): tests call commands again */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_DRY: o->dry = true; break;
        case O_SET: o->sets[o->nset++] = gpurun_xstrdup(optarg); break;
        case O_RESULTS: o->results = optarg; break;
        case 'h': put_usage(); return 0;
        default: return cmd_bad_option("submit", argv[optind - 1], opts, err);
        }
    }
    if (argc - optind != 1) {
        if (argc - optind == 0)
            gpurun_err(err, GPURUN_EXIT_CONFIG, "submit: which job? Usage: gpurun submit JOB.conf [OPTIONS]");
        else
            gpurun_err(err, GPURUN_EXIT_CONFIG, "submit: one job file, got '%s' and '%s'", argv[optind],
                       argv[optind + 1]);
        return GPURUN_EXIT_CONFIG;
    }
    o->job_path = argv[optind];
    *done = false;
    return 0;
}

/* The job file with the --set options and --results applied. */
static int submit_load(struct submit_opts *o, gpurun_job_t **jobp, gpurun_error_t *err)
{
    if (gpurun_job_load(o->job_path, jobp, err) < 0)
        return -1;
    for (size_t i = 0; i < o->nset; i++)
        if (gpurun_job_set(*jobp, o->sets[i], err) < 0)
            return -1;
    if (!o->results)
        return 0;
    /* Relative to here, as typed; the job's own `results` is relative
     * to the job file.  Carried as a --set, it holds on the node too. */
    char *results_abs = NULL;
    if (gpurun_batch_abspath(o->results, &results_abs, err) < 0) {
        free(results_abs);
        return -1;
    }
    o->sets[o->nset] = gpurun_xasprintf("results=%s", results_abs);
    free(results_abs);
    return gpurun_job_set(*jobp, o->sets[o->nset++], err) < 0 ? -1 : 0;
}

/* A job without a scan: everything checked before anything is written,
 * then its one batch script printed (--dry-run) or submitted. */
static int submit_one(const gpurun_job_t *job, const struct submit_opts *o, gpurun_error_t *err)
{
    gpurun_site_t *site = NULL;
    const gpurun_rm_plugin_t *rm = NULL;
    char *self = NULL, *script = NULL, *folder = NULL, *path = NULL, *warnings = NULL;
    char why[256], said[256];
    int fd = -1, rc = -1;
    int crc = gpurun_batch_check(job, &site, &warnings, err);
    if (warnings) /* where the job's inputs lie, before it waits in the queue */
        for (char *line = strtok(warnings, "\n"); line; line = strtok(NULL, "\n"))
            fprintf(stderr, "gpurun: warning: %s\n", line);
    free(warnings);
    if (crc < 0 || self_path(&self, err) < 0 ||
        gpurun_rm_for_submit(job->launcher, site ? site->scheduler : NULL, &rm, why, sizeof why, err) < 0 ||
        gpurun_batch_script_rm(rm, job, site, o->job_path, self, o->sets, o->nset, NULL, &script, err) < 0 ||
        gpurun_batch_job_folder(job, &folder, err) < 0 ||
        write_script(folder, "", rm->script_suffix ? rm->script_suffix : rm->name, script, &path, &fd, err) < 0)
        goto out;
    if (o->dry) {
        say_dry(script, path);
        rc = 0;
    } else if (rm->submit(fd, path, said, sizeof said, err) == 0) {
        printf("Submitted batch job %s\nBatch script: %s\n", said, path);
        rc = 0;
    }
out:
    gpurun_site_destroy(site);
    free(self);
    free(script);
    free(folder);
    free(path);
    if (fd >= 0)
        close(fd);
    return rc;
}

int cmd_submit(int argc, char **argv, gpurun_error_t *err)
{
    struct submit_opts o = {.sets = gpurun_xcalloc((size_t)argc + 1, sizeof *o.sets)};
    gpurun_job_t *job = NULL;
    char *self = NULL;
    bool done;
    int rc = submit_options(argc, argv, &o, &done, err);
    if (done)
        goto out;
    if (submit_load(&o, &job, err) < 0)
        rc = -1;
    else if (!job->nscan)
        rc = submit_one(job, &o, err);
    else if (self_path(&self, err) < 0) /* a scan: a batch job per configuration */
        rc = -1;
    else
        rc = submit_scan(job, o.job_path, o.sets, o.nset, o.dry, self, err);
    if (rc < 0)
        rc = err->code ? err->code : GPURUN_EXIT_CONFIG;
out:
    for (size_t i = 0; i < o.nset; i++)
        free(o.sets[i]);
    free(o.sets);
    gpurun_job_destroy(job);
    free(self);
    return rc;
}
