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
#include "site.h"
#include "util.h"

static const char submit_usage[] =
    "Usage: gpurun submit JOB.conf [--dry-run] [--set KEY=VALUE]... [--results DIR]\n"
    "\n"
    "Check the job as gpurun run would (its template or command, every ${name},\n"
    "its site profile), write a batch script for its resource manager into\n"
    "RESULTS/<job>/submit-<UTC time>.sbatch (Slurm) or .flux (Flux), then submit it\n"
    "with sbatch or flux batch.  The manager: the one of the job's launcher (srun,\n"
    "flux), else the site's scheduler, else the allocation gpurun runs in, else\n"
    "Slurm.  On the compute node the script loads the site's modules and runs\n"
    "`gpurun run JOB.conf` with the same --set options.\n"
    "\n"
    "  --dry-run           write and print the script, submit nothing\n"
    "  --set KEY=VALUE     override a job key (slurm.partition=gpu, ranks_per_node=4)\n"
    "  --results DIR       results folder (default: the job's `results`, relative to it)\n"
    "  -h, --help          this help\n"
    "\n"
    "For Slurm, the layout becomes --nodes, --ntasks-per-node, --gpus-per-node and\n"
    "--cpus-per-task (without threads_per_rank: the site's cores_per_node shared\n"
    "by the ranks); its timeout (times the runs of repeat and scan) --time; each\n"
    "key of its slurm {} section one `#SBATCH --KEY=VALUE` line.  The site's\n"
    "partition, account and sbatch options follow, unless the job sets the same.\n"
    "For Flux, #flux: lines for whole nodes, a slot per rank, the time limit and\n"
    "the job's flux {} keys; the site's partition is the queue, its account the bank.\n"
    "\n"
    "Exit status: 0 submitted (or written, with --dry-run); 2 bad job file, template,\n"
    "site profile or option; 3 a layout the site's nodes cannot hold, sbatch (flux)\n"
    "missing or refusing the job.\n";

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
static int write_script(const char *folder, const char *suffix, const char *script, char **pathp, int *fdp,
                        gpurun_error_t *err)
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
    char stamp[32], name[64];
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    int fd = -1, e = EEXIST;
    for (int i = 1; i <= 100 && fd < 0 && e == EEXIST; i++) {
        if (i == 1)
            snprintf(name, sizeof name, "submit-%s.%.16s", stamp, suffix);
        else
            snprintf(name, sizeof name, "submit-%s-%d.%.16s", stamp, i, suffix);
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

/* ---- the command ---------------------------------------------------------- */

int cmd_submit(int argc, char **argv, gpurun_error_t *err)
{
    enum { O_DRY = 1000, O_SET, O_RESULTS };
    static const struct option opts[] = {
        {"dry-run", no_argument, NULL, O_DRY},
        {"set", required_argument, NULL, O_SET},
        {"results", required_argument, NULL, O_RESULTS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool dry = false;
    const char *results = NULL;
    /* --set as given, plus one for --results: the compute node repeats them. */
    char **sets = gpurun_xcalloc((size_t)argc + 1, sizeof *sets);
    size_t nset = 0;
    int c, rc = GPURUN_EXIT_CONFIG;
    gpurun_job_t *job = NULL;
    gpurun_site_t *site = NULL;
    char *results_abs = NULL, *self = NULL, *script = NULL, *folder = NULL, *path = NULL;
    const gpurun_rm_plugin_t *rm = NULL;
    char why[256], said[256];
    int script_fd = -1;

    optind = 0; /* a full restart (glibc, musl): tests call commands again */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_DRY: dry = true; break;
        case O_SET: sets[nset++] = gpurun_xstrdup(optarg); break;
        case O_RESULTS: results = optarg; break;
        case 'h': fputs(submit_usage, stdout); rc = 0; goto out;
        default: rc = cmd_bad_option("submit", argv[optind - 1], opts, err); goto out;
        }
    }
    if (argc - optind != 1) {
        if (argc - optind == 0)
            gpurun_err(err, GPURUN_EXIT_CONFIG, "submit: which job? Usage: gpurun submit JOB.conf [OPTIONS]");
        else
            gpurun_err(err, GPURUN_EXIT_CONFIG, "submit: one job file, got '%s' and '%s'", argv[optind],
                       argv[optind + 1]);
        goto out;
    }
    const char *job_path = argv[optind];

    if (gpurun_job_load(job_path, &job, err) < 0)
        goto fail;
    for (size_t i = 0; i < nset; i++)
        if (gpurun_job_set(job, sets[i], err) < 0)
            goto fail;
    if (results) {
        /* Relative to here, as typed; the job's own `results` is relative
         * to the job file.  Carried as a --set, it holds on the node too. */
        if (gpurun_batch_abspath(results, &results_abs, err) < 0)
            goto fail;
        sets[nset] = gpurun_xasprintf("results=%s", results_abs);
        if (gpurun_job_set(job, sets[nset++], err) < 0)
            goto fail;
    }
    /* Everything checked before anything is written. */
    char *warnings = NULL;
    int crc = gpurun_batch_check(job, &site, &warnings, err);
    if (warnings) /* where the job's inputs lie, before it waits in the queue */
        for (char *line = strtok(warnings, "\n"); line; line = strtok(NULL, "\n"))
            fprintf(stderr, "gpurun: warning: %s\n", line);
    free(warnings);
    if (crc < 0 || self_path(&self, err) < 0 ||
        gpurun_rm_for_submit(job->launcher, site ? site->scheduler : NULL, &rm, why,
                             sizeof why, err) < 0 ||
        gpurun_batch_script_rm(rm, job, site, job_path, self, sets, nset, &script, err) < 0 ||
        gpurun_batch_job_folder(job, &folder, err) < 0 ||
        write_script(folder, rm->script_suffix ? rm->script_suffix : rm->name, script, &path, &script_fd, err) < 0)
        goto fail;

    if (dry) {
        fputs(script, stdout);
        fflush(stdout);
        fprintf(stderr, "gpurun: batch script written to %s; not submitted (--dry-run)\n", path);
        rc = 0;
        goto out;
    }
    if (rm->submit(script_fd, path, said, sizeof said, err) < 0)
        goto fail;
    printf("Submitted batch job %s\nBatch script: %s\n", said, path);
    rc = 0;
    goto out;
fail:
    rc = err->code ? err->code : GPURUN_EXIT_CONFIG;
out:
    for (size_t i = 0; i < nset; i++)
        free(sets[i]);
    free(sets);
    gpurun_job_destroy(job);
    gpurun_site_destroy(site);
    free(results_abs);
    free(self);
    free(script);
    free(folder);
    free(path);
    if (script_fd >= 0)
        close(script_fd);
    return rc;
}
