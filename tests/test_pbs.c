/* SPDX-License-Identifier: BSD-3-Clause */
/* PBS's pure parts (plugins/pbs), with no PBS running: the select
 * statement's chunks, the node file (hosts, slots, files refused), the
 * batch script's #PBS lines (hostile values quoted or refused, job
 * arrays), the job inside PBS_JOBID, and mom's walltime word read from
 * this process's standard error.  The real complex is tests/cli-pbs.sh. */
#include "config.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../plugins/pbs/pbs_common.h"
#include "manager.h"
#include "tap.h"

static void test_select(void)
{
    struct pbs_chunk c[4];
    size_t n = 0;
    char why[128] = "";
    ok(pbs_select_parse("2:ncpus=8:ngpus=2:mpiprocs=8+1:ncpus=4:mem=1gb", c, 4, &n, why, sizeof why) == 0 && n == 2 &&
           c[0].count == 2 && c[0].ncpus == 8 && c[0].ngpus == 2 && c[0].mpiprocs == 8 && c[1].count == 1 &&
           c[1].ncpus == 4 && c[1].ngpus == -1 && c[1].mpiprocs == -1,
       "select: two chunks, counts and resources (%s)", why);
    ok(pbs_select_parse("ncpus=2", c, 4, &n, why, sizeof why) == 0 && n == 1 && c[0].count == 1 && c[0].ncpus == 2,
       "select: a chunk without a count is one");
    const char *bad[] = {"", "2:", "2:ncpus", "0:ncpus=1", "2:ncpus=x", "2:ncpus=-1", "1:ncpus=1+", "x=1++y=2", NULL};
    for (const char **b = bad; *b; b++)
        ok(pbs_select_parse(*b, c, 4, &n, why, sizeof why) < 0, "select '%s' refused: %s", *b, why);
    ok(pbs_select_parse("1:ncpus=1+1:ncpus=1+1:ncpus=1+1:ncpus=1+1:ncpus=1", c, 4, &n, why, sizeof why) < 0 &&
           strstr(why, "more than 4 chunks"),
       "select: more chunks than room refused (%s)", why);
}

static char *write_file(const char *dir, const char *name, const char *text, mode_t mode)
{
    char *p = NULL;
    if (asprintf(&p, "%s/%s", dir, name) < 0)
        abort();
    FILE *f = fopen(p, "w");
    if (!f)
        abort();
    fputs(text, f);
    fclose(f);
    chmod(p, mode);
    return p;
}

static void test_nodefile(const char *dir)
{
    struct pbs_nodes nodes;
    char why[256] = "";
    char *p = write_file(dir, "nodes", "n1\nn1\nn1\nn2\nn2\nn3\nn3\nn3\n", 0644);
    ok(pbs_nodefile_read(p, &nodes, why, sizeof why) == 0 && nodes.hosts == 3 && nodes.slots == 8 &&
           nodes.first_slots == 3 && !strcmp(nodes.first, "n1"),
       "node file: 3 hosts, 8 slots, the first n1 with 3 (%s)", why);
    free(p);
    p = write_file(dir, "again", "n1\nn2\nn1\n", 0644);
    ok(pbs_nodefile_read(p, &nodes, why, sizeof why) == 0 && nodes.hosts == 2 && nodes.slots == 3,
       "node file: a host listed again later is one host");
    free(p);
    p = write_file(dir, "open", "n1\n", 0666);
    ok(pbs_nodefile_read(p, &nodes, why, sizeof why) < 0 && strstr(why, "writable by group or others"),
       "node file others may write: refused (%s)", why);
    free(p);
    p = write_file(dir, "blank", "n1\nn 2\n", 0644);
    ok(pbs_nodefile_read(p, &nodes, why, sizeof why) < 0 && strstr(why, "line 2"), "a line with a blank: %s", why);
    free(p);
    p = write_file(dir, "empty", "\n\n", 0644);
    ok(pbs_nodefile_read(p, &nodes, why, sizeof why) < 0 && strstr(why, "lists no host"), "no host: %s", why);
    char *link = NULL;
    if (asprintf(&link, "%s/link", dir) < 0 || symlink(p, link) < 0)
        abort();
    ok(pbs_nodefile_read(link, &nodes, why, sizeof why) < 0, "a symbolic link refused (%s)", why);
    ok(pbs_nodefile_read("relative", &nodes, why, sizeof why) < 0 && strstr(why, "not an absolute path"),
       "a relative path refused (%s)", why);
    free(link);
    free(p);
}

static const char *origin(const struct gpurun_rm_site *site, const char *key)
{
    (void)key;
    return site->path;
}

static void test_batch(void)
{
    struct gpurun_rm_option opts[] = {{"account", "a b'c$(x)"}, {"mem", "4gb"}};
    const char *site_opts[] = {"-l place=scatter", "-W group_list=hpc"};
    struct gpurun_rm_site site = {.name = "uni", .path = "/s/uni.conf", .partition = "gpuq", .account = "proj",
                                  .options = site_opts, .noptions = 2, .cores_per_node = 64, .gpus_per_node = 4,
                                  .origin = origin};
    long configs[] = {2, 4, 6};
    struct gpurun_rm_batch b = {.job = "wb x", .job_file = "job.conf", .nodes = 2, .ranks_per_node = 4,
                                .gpus_per_rank = 1, .threads_per_rank = -1, .ranks_per_gpu = 1, .timeout_s = 600,
                                .runs = 2, .stop_grace_s = 60, .options = opts, .noptions = 2, .folder = "/r/wb",
                                .site = &site, .comments = "# c\n", .body = "exec g\n", .array = configs,
                                .narray = 3};
    char *s = NULL;
    gpurun_error_t err = {0};
    ok(pbs_batch_script(&b, &s, &err) == 0 && s, "a PBS batch script (%s)", err.text);
    if (s) {
        ok(strstr(s, "#PBS -N 'wb_x'\n#PBS -l 'select=2:ncpus=64:ngpus=4:mpiprocs=4'\n#PBS -l 'place=scatter:excl'\n"
                     "#PBS -l 'walltime=00:22:00'\n#PBS -o '/r/wb/'\n#PBS -e '/r/wb/'\n#PBS -J '2-6:2'\n") != NULL,
           "... name, select (the site's cores, 4 GPUs, 4 MPI processes per node), whole nodes, 22 min, array");
        ok(strstr(s, "#PBS -A 'a b'\\''c$(x)'\n#PBS -l 'mem=4gb'\n") && !strstr(s, "'proj'") &&
               strstr(s, "#PBS -q 'gpuq'\n#PBS -l place=scatter\n#PBS -W group_list=hpc\n"),
           "... the job's account one quoted word, replacing the site's; the site's queue and options");
        ok(strstr(s, "# c\n#PBS") && strstr(s, "\nexec g\n") && !strstr(s, "gpurun_configurations"),
           "... comments before the directives, the body after; a progression needs no map");
        free(s);
    }
    long odd[] = {1, 2, 5};
    b.array = odd;
    ok(pbs_batch_script(&b, &s, &err) == 0 && strstr(s, "#PBS -J '1-3'\n") &&
           strstr(s, "gpurun_configurations=(1 2 5)\nPBS_ARRAY_INDEX=${gpurun_configurations[PBS_ARRAY_INDEX-1]}\n"),
       "configurations 1, 2, 5: -J 1-3 and a map after the directives");
    free(s);
    b.array = NULL;
    b.narray = 0;
    struct gpurun_rm_option bad[][1] = {{{"queue", "a\nb"}}, {{"queue", "a\rb"}}, {{"select", "2"}},
                                        {{"ngpus", "1"}},    {{"x-y", "1"}},      {{"queue", ""}}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        b.options = bad[i];
        b.noptions = 1;
        err = (gpurun_error_t){0};
        ok(pbs_batch_script(&b, &s, &err) < 0 && err.code == GPURUN_EXIT_CONFIG && strstr(err.text, "pbs."),
           "pbs.%s refused: %s", bad[i][0].key, err.text);
    }
    b.noptions = 0;
    const char *bad_site[] = {"-l a b", "--qos=x", "-l 'x'"};
    for (size_t i = 0; i < 3; i++) {
        site.options = &bad_site[i];
        site.noptions = 1;
        err = (gpurun_error_t){0};
        ok(pbs_batch_script(&b, &s, &err) < 0 && err.code == GPURUN_EXIT_CONFIG, "site option '%s' refused: %s",
           bad_site[i], err.text);
    }
    site.noptions = 0;
    b.folder = "/r/host:x";
    ok(pbs_batch_script(&b, &s, &err) < 0 && strstr(err.text, "HOST:PATH"), "a ':' in the folder: %s", err.text);
}

static void test_allocation_and_walltime(const char *dir)
{
    const gpurun_rm_plugin_t *m = NULL;
    gpurun_error_t err = {0};
    ok(gpurun_rm_find("pbs", &m, &err) == 0 && m && !strcmp(m->launcher->name, "pbs") &&
           !strcmp(m->array_task_var, "PBS_ARRAY_INDEX") && !strcmp(m->submit_command, "qsub"),
       "pbs: registered, launcher pbs, qsub, PBS_ARRAY_INDEX");
    if (!m)
        return;
    struct gpurun_rm_alloc a;
    memset(&a, 0, sizeof a);
    unsetenv("PBS_JOBID");
    ok(m->allocation(&a) == 0, "no PBS_JOBID: not inside a job");
    char *p = write_file(dir, "nf", "h1\nh1\nh2\nh2\n", 0644);
    setenv("PBS_JOBID", "12.server", 1);
    setenv("PBS_NODEFILE", p, 1);
    ok(m->allocation(&a) == 1 && a.nodes == 2 && !strcmp(a.job, "PBS job 12.server: 2 hosts, 4 MPI slots"),
       "inside a job: %s", a.job);
    free(p);

    /* mom's word in this process's standard error, a regular file. */
    char *e = write_file(dir, "job.e", "", 0600);
    int saved = dup(2), fd = open(e, O_WRONLY | O_APPEND);
    ok(m->ended("") == GPURUN_RM_END_NONE, "no walltime word: PBS did not end it");
    dup2(fd, 2);
    dprintf(2, "some output\n=>> PBS: job killed: walltime 65 exceeded limit 60\n");
    enum gpurun_rm_end end = m->ended("");
    dup2(saved, 2);
    close(fd);
    close(saved);
    ok(end == GPURUN_RM_END_TIME_LIMIT, "mom's walltime word in the job's standard error: the time limit");
    unsetenv("PBS_JOBID");
    unsetenv("PBS_NODEFILE");
    free(e);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int main(void)
{
    char dir[] = "/tmp/gpurun-test-pbs.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    test_select();
    test_nodefile(dir);
    test_batch();
    test_allocation_and_walltime(dir);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
