/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun submit's batch script (SPEC §1): the #SBATCH lines a job gives, what
 * sbatch's own tokenizer reads from them, a body that carries hostile paths
 * and --set values to a fake gpurun byte for byte, and the command's file,
 * dry run and sbatch handling with a fake sbatch.  No Slurm needed. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "batch.h"
#include "cmd.h"
#include "job.h"
#include "plugin.h" /* gpurun_plugins_register: the managers' site keys (sbatch) */
#include "site.h"
#include "tap.h"
#include "util.h"

static char tmp[256]; /* this test's folder, also its current folder */

/* ---- helpers ------------------------------------------------------------ */

static gpurun_job_t *parse(const char *label, const char *text)
{
    gpurun_job_t *job = NULL;
    gpurun_error_t err = {0};
    if (gpurun_job_parse(text, strlen(text), label, &job, &err) < 0)
        diag("parse failed: %s", err.text);
    return job;
}

/* The script for a job file text, or NULL with err filled. */
static char *script_of(const char *text, char *const *sets, size_t nset, gpurun_error_t *err)
{
    char *label = gpurun_xasprintf("%s/job.conf", tmp);
    gpurun_job_t *job = parse(label, text);
    char *s = NULL;
    if (job)
        gpurun_batch_script(job, NULL, label, "/opt/gpurun/bin/gpurun", sets, nset, &s, err);
    gpurun_job_destroy(job);
    free(label);
    return s;
}

/* a then b as one single-quoted shell word, the way the body spells it. */
static char *quoted(const char *a, const char *b)
{
    char *both = gpurun_xasprintf("%s%s", a, b), *q = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&q, &n);
    fputc('\'', f);
    for (const char *p = both; *p; p++) {
        if (*p == '\'')
            fputs("'\\''", f);
        else
            fputc(*p, f);
    }
    fputc('\'', f);
    fclose(f);
    free(both);
    return q;
}

/* How many lines of `s` are exactly `line`. */
static int count_line(const char *s, const char *line)
{
    int n = 0;
    size_t len = strlen(line);
    for (const char *p = s; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p) : strlen(p);
        if (l == len && memcmp(p, line, len) == 0)
            n++;
        p = nl ? nl + 1 : NULL;
    }
    return n;
}

static int count_prefix(const char *s, const char *prefix)
{
    int n = 0;
    size_t len = strlen(prefix);
    for (const char *p = s; p && *p;) {
        if (strncmp(p, prefix, len) == 0)
            n++;
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : NULL;
    }
    return n;
}

/* sbatch reads #SBATCH lines only before the first command. */
static bool sbatch_lines_first(const char *s)
{
    bool body = false;
    for (const char *p = s; p && *p;) {
        if (strncmp(p, "#SBATCH", 7) == 0 && body)
            return false;
        if (*p != '#' && *p != '\n')
            body = true;
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : NULL;
    }
    return true;
}

/* The #SBATCH lines sbatch reads: those before the first command. */
static const char *sbatch_options(const char *s)
{
    static char opts[8192];
    size_t o = 0;
    for (const char *p = s; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p) + 1 : strlen(p);
        if (*p != '#' && *p != '\n')
            break;
        if (strncmp(p, "#SBATCH", 7) == 0 && o + l < sizeof opts) {
            memcpy(opts + o, p, l);
            o += l;
        }
        p = nl ? nl + 1 : NULL;
    }
    opts[o] = '\0';
    return opts;
}

/* The words sbatch reads from one #SBATCH line: its _get_argument() of
 * src/sbatch/opt.c (Slurm 17.11 to 24.x) redone.  White space splits, "..."
 * and '...' group, a backslash keeps the next byte (not white space), an
 * unquoted '#' ends the line.  Returns the number of words, or -1 for what
 * sbatch rejects (unmatched quote, a word starting with ':'). */
static int sbatch_words(const char *line, char words[][512], int max)
{
    if (strncmp(line, "#SBATCH", 7) != 0)
        return -1;
    const char *p = line + 7;
    int n = 0;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == ':')
            return -1;
        if (!*p || *p == '\n' || n == max)
            return n;
        size_t i = 0;
        bool quoted = false, escape = false, any = false;
        char q = 0;
        while ((quoted || (*p != ' ' && *p != '\t')) && *p != '\n' && *p) {
            if (escape) {
                escape = false;
            } else if (*p == '\\') {
                escape = true;
                p++;
                continue;
            } else if (quoted) {
                if (*p == q) {
                    quoted = false;
                    p++;
                    continue;
                }
            } else if (*p == '"' || *p == '\'') {
                quoted = true;
                q = *p++;
                continue;
            } else if (*p == '#') {
                break;
            }
            any = true;
            if (i < 511)
                words[n][i++] = *p;
            p++;
        }
        if (quoted)
            return -1;
        words[n][i] = '\0';
        if (any || i)
            n++;
        if (*p == '#' && !quoted)
            return n;
    }
}

/* The line of `s` that starts with `prefix`, copied (static buffer). */
static const char *line_of(const char *s, const char *prefix)
{
    static char line[2048];
    size_t len = strlen(prefix);
    for (const char *p = s; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p) : strlen(p);
        if (strncmp(p, prefix, len) == 0 && l < sizeof line) {
            memcpy(line, p, l);
            line[l] = '\0';
            return line;
        }
        p = nl ? nl + 1 : NULL;
    }
    return "";
}

static int write_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd < 0)
        return -1;
    size_t len = strlen(text);
    ssize_t n = write(fd, text, len);
    close(fd);
    return n == (ssize_t)len ? 0 : -1;
}

/* Run argv[0] (a path) and return its exit status, or -1. */
static int run(char *const argv[])
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* The one word sbatch reads from the #SBATCH line of option `opt` ("--output="). */
static const char *sbatch_reads(const char *s, const char *opt)
{
    static char words[2][512];
    char *prefix = gpurun_xasprintf("#SBATCH %s", opt);
    int n = sbatch_words(line_of(s, prefix), words, 2);
    free(prefix);
    return n == 1 ? words[0] : "(not one word)";
}

/* ---- #SBATCH lines ------------------------------------------------------ */

static void test_layout(void)
{
    gpurun_error_t err = {0};
    char *s = script_of("job = \"water\"\nnodes = 2\nranks_per_node = 4\ngpus_per_rank = 1\n"
                        "threads_per_rank = 8\ntimeout = \"30m\"\n"
                        "slurm { partition = \"gpu\" account = \"proj\" qos = \"high\"\n"
                        "        constraint = \"a100&ib\" mem = \"64G\" reservation = \"maint_1\"\n"
                        "        mail_type = \"END,FAIL\" }\n",
                        NULL, 0, &err);
    if (!ok(s != NULL, "a full job gives a script"))
        diag("%s", err.text);
    if (!s)
        return;
    ok(strncmp(s, "#!/bin/bash\n", 12) == 0, "it starts with #!/bin/bash");
    is_int(count_line(s, "#SBATCH --job-name=water"), 1, "--job-name is the job's name");
    is_int(count_line(s, "#SBATCH --nodes=2"), 1, "--nodes");
    is_int(count_line(s, "#SBATCH --ntasks-per-node=4"), 1, "--ntasks-per-node is ranks_per_node");
    is_int(count_line(s, "#SBATCH --gpus-per-node=4"), 1, "--gpus-per-node is ranks_per_node x gpus_per_rank");
    is_int(count_line(s, "#SBATCH --cpus-per-task=8"), 1, "--cpus-per-task is threads_per_rank");
    is_int(count_line(s, "#SBATCH --time=00:31:00"), 1, "--time is the timeout plus a minute to stop and record");
    char *want = gpurun_xasprintf("--output=%s/results/water/slurm-%%j.out", tmp);
    is_str(sbatch_reads(s, "--output="), want, "--output goes into RESULTS/<job>/, relative to the job file");
    free(want);
    is_int(count_line(s, "#SBATCH --partition=gpu"), 1, "slurm.partition");
    is_int(count_line(s, "#SBATCH --account=proj"), 1, "slurm.account");
    is_int(count_line(s, "#SBATCH --qos=high"), 1, "slurm.qos");
    is_int(count_line(s, "#SBATCH --constraint=a100&ib"), 1, "slurm.constraint");
    is_int(count_line(s, "#SBATCH --mem=64G"), 1, "slurm.mem");
    is_int(count_line(s, "#SBATCH --reservation=maint_1"), 1, "slurm.reservation: the value keeps its '_'");
    is_int(count_line(s, "#SBATCH --mail-type=END,FAIL"), 1, "slurm.mail_type becomes --mail-type");
    is_int(count_line(s, "#SBATCH --signal=B:TERM@60"), 1,
           "--signal: gpurun (the batch shell) gets SIGTERM a minute before the limit, to stop the ranks cleanly");
    is_int(count_prefix(s, "#SBATCH"), 15, "no other #SBATCH line");
    ok(sbatch_lines_first(s), "every #SBATCH line comes before the first command");
    is_int(count_line(s, "set -euo pipefail"), 1, "the body sets -euo pipefail");
    char *q = quoted(tmp, "/job.conf");
    char *exec_line = gpurun_xasprintf("exec '/opt/gpurun/bin/gpurun' run %s", q);
    free(q);
    is_int(count_line(s, exec_line), 1, "the body execs gpurun run with the job file's absolute path");
    free(exec_line);
    free(s);
}

/* ranks_per_gpu ranks share each GPU: the node's GPUs are the ranks over it. */
static void test_ranks_per_gpu(void)
{
    gpurun_error_t err = {0};
    char *s = script_of("job = \"small\"\nranks_per_node = 8\ngpus_per_rank = 1\nranks_per_gpu = 2\n", NULL, 0, &err);
    if (!ok(s != NULL, "ranks_per_gpu = 2: a script"))
        diag("%s", err.text);
    ok(s && count_line(s, "#SBATCH --ntasks-per-node=8") == 1 && count_line(s, "#SBATCH --gpus-per-node=4") == 1,
       "8 ranks at 2 per GPU ask 8 tasks and 4 GPUs per node");
    free(s);
    s = script_of("job = \"small\"\nranks_per_node = 3\ngpus_per_rank = 1\nranks_per_gpu = 2\n", NULL, 0, &err);
    ok(s && count_line(s, "#SBATCH --gpus-per-node=2") == 1, "3 ranks at 2 per GPU ask 2 GPUs");
    free(s);
}

static void test_defaults(void)
{
    gpurun_error_t err = {0};
    char *s = script_of("ranks_per_node = 2\ngpus_per_rank = 0\n", NULL, 0, &err);
    if (!ok(s != NULL, "a CPU-only job without timeout gives a script"))
        diag("%s", err.text);
    if (!s)
        return;
    is_int(count_line(s, "#SBATCH --job-name=job"), 1, "the job name defaults to the file name");
    is_int(count_line(s, "#SBATCH --nodes=1"), 1, "--nodes defaults to 1");
    is_int(count_prefix(s, "#SBATCH --gpus-per-node"), 0, "no --gpus-per-node for gpus_per_rank = 0");
    is_int(count_prefix(s, "#SBATCH --cpus-per-task"), 0, "no --cpus-per-task without threads_per_rank");
    is_int(count_prefix(s, "#SBATCH --time"), 0, "no --time without timeout or slurm.time");
    free(s);

    /* A relative job path is made absolute from the current folder. */
    gpurun_job_t *job = parse("job.conf", "ranks_per_node = 1\ngpus_per_rank = 0\nresults = \"out\"\n");
    s = NULL;
    if (job && gpurun_batch_script(job, NULL, "./job.conf", "/g", NULL, 0, &s, &err) == 0) {
        char *q = quoted(tmp, "/job.conf");
        char *want = gpurun_xasprintf("exec '/g' run %s", q);
        free(q);
        is_int(count_line(s, want), 1, "./job.conf becomes CWD/job.conf");
        free(want);
        want = gpurun_xasprintf("--output=%s/out/job/slurm-%%j.out", tmp);
        is_str(sbatch_reads(s, "--output="), want, "a relative results folder is relative to the job file's folder");
        free(want);
    } else {
        ok(0, "relative job path: %s", err.text);
    }
    free(s);
    gpurun_job_destroy(job);
}

static void test_time(void)
{
    static const struct {
        const char *text, *want, *what;
    } cases[] = {
        {"timeout = \"2d\"\n", "#SBATCH --time=2-00:01:00", "days: D-HH:MM:SS"},
        {"timeout = \"1h30m\"\nrepeat = 2\n", "#SBATCH --time=03:02:00", "repeat: every run gets its timeout"},
        {"timeout = \"90s\"\n", "#SBATCH --time=00:03:00", "seconds round up to minutes"},
        {"timeout = \"10m\"\nscan { ranks_per_node = {1, 2} threads_per_rank = {1, 2, 4} }\n",
         "#SBATCH --time=01:06:00", "scan: every combination gets its timeout"},
        {"timeout = \"30m\"\nslurm { time = \"01:00:00\" }\n", "#SBATCH --time=01:00:00",
         "slurm.time replaces the one from timeout"},
        {"slurm { time = \"4:00:00\" }\n", "#SBATCH --time=4:00:00", "slurm.time without timeout"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *text = gpurun_xasprintf("ranks_per_node = 1\ngpus_per_rank = 0\n%s", cases[i].text);
        gpurun_error_t err = {0};
        char *s = script_of(text, NULL, 0, &err);
        if (!s)
            diag("%s", err.text);
        ok(s && count_line(s, cases[i].want) == 1 && count_prefix(s, "#SBATCH --time=") == 1, "--time: %s",
           cases[i].what);
        free(s);
        free(text);
    }
}

static void test_scan_and_overrides(void)
{
    gpurun_error_t err = {0};
    char *s = script_of("nodes = 1\nranks_per_node = 1\ngpus_per_rank = 1\n"
                        "scan { nodes = {1, 2} ranks_per_node = {1, 4, 2} gpus_per_rank = {1, 2} }\n",
                        NULL, 0, &err);
    ok(s && count_line(s, "#SBATCH --nodes=2") == 1 && count_line(s, "#SBATCH --ntasks-per-node=4") == 1 &&
           count_line(s, "#SBATCH --gpus-per-node=8") == 1,
       "a scan asks for its largest run");
    free(s);

    s = script_of("ranks_per_node = 2\ngpus_per_rank = 1\nthreads_per_rank = 2\n"
                  "slurm { job_name = \"mine\" output = \"/scratch/%x-%j.out\" cpus_per_task = \"4\" }\n",
                  NULL, 0, &err);
    ok(s && count_line(s, "#SBATCH --job-name=mine") == 1 && count_prefix(s, "#SBATCH --job-name") == 1,
       "slurm.job_name replaces the job's name, once");
    ok(s && count_line(s, "#SBATCH --output=/scratch/%x-%j.out") == 1 && count_prefix(s, "#SBATCH --output") == 1,
       "slurm.output replaces the results file, its %% patterns kept");
    ok(s && count_line(s, "#SBATCH --cpus-per-task=4") == 1 && count_prefix(s, "#SBATCH --cpus-per-task") == 1,
       "slurm.cpus_per_task replaces threads_per_rank's");
    free(s);

    s = script_of("ranks_per_node = 2\nslurm { gres = \"gpu:a100:2\" }\n", NULL, 0, &err);
    ok(s && count_line(s, "#SBATCH --gres=gpu:a100:2") == 1 && count_prefix(s, "#SBATCH --gpus-per-node") == 0,
       "slurm.gres asking for GPUs: no --gpus-per-node, and gpus_per_rank may stay unset");
    free(s);
    s = script_of("ranks_per_node = 2\ngpus_per_rank = 1\nslurm { gpus_per_node = \"h100:2\" }\n", NULL, 0, &err);
    ok(s && count_line(s, "#SBATCH --gpus-per-node=h100:2") == 1 && count_prefix(s, "#SBATCH --gpus-per-node") == 1,
       "slurm.gpus_per_node (typed GPUs) replaces gpurun's");
    free(s);
}

static void test_refused(void)
{
    static const struct {
        const char *text, *want, *what;
    } cases[] = {
        {"gpus_per_rank = 1\n", "key 'ranks_per_node': gpurun submit needs it", "ranks_per_node unset"},
        {"ranks_per_node = 2\n", "key 'gpus_per_rank': gpurun submit needs it", "gpus_per_rank unset"},
        {"ranks_per_node = 2\ngpus_per_rank = 0\nslurm { nodes = \"3\" }\n",
         "key 'slurm.nodes': contradicts the job's layout, which sets --nodes: use 'nodes' instead", "slurm.nodes"},
        {"ranks_per_node = 2\ngpus_per_rank = 0\nslurm { ntasks_per_node = \"3\" }\n",
         "key 'slurm.ntasks_per_node': contradicts the job's layout", "slurm.ntasks_per_node"},
        {"ranks_per_node = 2\ngpus_per_rank = 0\nslurm { comment = \"x hetjob y\" }\n",
         "key 'slurm.comment': cannot go on an #SBATCH line: 'hetjob' (sbatch reads it", "'hetjob' in a value"},
        {"ranks_per_node = 2\ngpus_per_rank = 0\nslurm { comment = \"PackJob\" }\n",
         "key 'slurm.comment': cannot go on an #SBATCH line: 'packjob'", "'packjob' in any case"},
        {"job = \"my-hetjob\"\nranks_per_node = 2\ngpus_per_rank = 0\n",
         "key 'job': cannot go on an #SBATCH line: 'hetjob'", "'hetjob' in the job name"},
        {"ranks_per_node = 2\ngpus_per_rank = 0\nslurm { partition = \"\" }\n",
         "key 'slurm.partition': cannot go on an #SBATCH line: empty value", "an empty value"},
        {"ranks_per_node = 2\ngpus_per_rank = 0\nresults = \"a\\\\b\"\n", "key 'results': the results folder",
         "a backslash in the results folder"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gpurun_error_t err = {0};
        char *s = script_of(cases[i].text, NULL, 0, &err);
        ok(!s && err.code == GPURUN_EXIT_CONFIG && strstr(err.text, cases[i].want), "refused (exit 2): %s",
           cases[i].what);
        if (s || !strstr(err.text, cases[i].want))
            diag("got: %s", s ? "a script" : err.text);
        free(s);
    }

    /* The file cannot hold these (job.c refuses control characters and odd
     * key names), but --set or later code might: the script must not. */
    char *label = gpurun_xasprintf("%s/job.conf", tmp);
    gpurun_job_t *job = parse(label, "ranks_per_node = 1\ngpus_per_rank = 0\nslurm { partition = \"gpu\" }\n");
    if (job) {
        static const struct {
            const char *key, *value, *want;
        } hostile[] = {
            {"partition", "gpu\n#SBATCH --uid=0", "key 'slurm.partition': cannot go on an #SBATCH line: control "
                                                  "character 0x0a (line break)"},
            {"partition", "gpu\r", "control character 0x0d (carriage return)"},
            {"partition", "a\tb", "control character 0x09 (tab)"},
            {"mem.x", "1", "key 'slurm.mem.x': not an sbatch option name"},
            {"hetjob", "1", "key 'slurm.hetjob': cannot go on an #SBATCH line: 'hetjob'"},
        };
        for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++) {
            struct gpurun_kvlist *slurm = gpurun_job_section(job, "slurm");
            free(slurm->items[0].key);
            free(slurm->items[0].value);
            slurm->items[0].key = gpurun_xstrdup(hostile[i].key);
            slurm->items[0].value = gpurun_xstrdup(hostile[i].value);
            gpurun_error_t err = {0};
            char *s = NULL;
            int rc = gpurun_batch_script(job, NULL, label, "/g", NULL, 0, &s, &err);
            ok(rc < 0 && !s && err.code == GPURUN_EXIT_CONFIG && strstr(err.text, hostile[i].want),
               "refused (exit 2) and named: slurm %s = %s", hostile[i].key,
               hostile[i].value[strcspn(hostile[i].value, "\r\n\t")] ? "(control character)" : hostile[i].value);
            if (!strstr(err.text, hostile[i].want))
                diag("got: %s", err.text);
            free(s);
        }
    }
    gpurun_job_destroy(job);
    free(label);
}

/* What sbatch reads back from each line equals the value written. */
static void test_sbatch_reads_values(void)
{
    static const char *const values[] = {
        "plain", "two words", "it's", "say \"hi\"", "#1 fan", "back\\slash", "50%", "a  b ' \" # \\ $(x) `y` ;|&",
    };
    char *label = gpurun_xasprintf("%s/job.conf", tmp);
    gpurun_job_t *job = parse(label, "ranks_per_node = 1\ngpus_per_rank = 0\nslurm { comment = \"x\" }\n");
    for (size_t i = 0; job && i < sizeof values / sizeof *values; i++) {
        free(gpurun_job_section(job, "slurm")->items[0].value);
        gpurun_job_section(job, "slurm")->items[0].value = gpurun_xstrdup(values[i]);
        gpurun_error_t err = {0};
        char *s = NULL;
        char words[4][512];
        int n = -1;
        if (gpurun_batch_script(job, NULL, label, "/g", NULL, 0, &s, &err) == 0)
            n = sbatch_words(line_of(s, "#SBATCH --comment="), words, 4);
        char *want = gpurun_xasprintf("--comment=%s", values[i]);
        ok(n == 1 && strcmp(words[0], want) == 0, "sbatch reads back one word --comment=%s", values[i]);
        if (n != 1 || strcmp(words[0], want) != 0)
            diag("line: %s", s ? line_of(s, "#SBATCH --comment=") : err.text);
        free(want);
        free(s);
    }
    gpurun_job_destroy(job);
    free(label);

    /* A '%' of the results folder is literal in sbatch's file name. */
    gpurun_error_t err = {0};
    char *s = script_of("ranks_per_node = 1\ngpus_per_rank = 0\nresults = \"100% done\"\n", NULL, 0, &err);
    char *want = gpurun_xasprintf("#SBATCH --output=\"%s/100%%%% done/job/slurm-%%j.out\"", tmp);
    ok(s && count_line(s, want) == 1, "a '%%' and a space in the results folder: written %%%%, quoted");
    if (s && count_line(s, want) != 1)
        diag("got: %s", line_of(s, "#SBATCH --output"));
    free(want);
    free(s);
}

/* ---- the body: hostile words reach gpurun byte for byte ------------------ */

static void test_body_hostile(void)
{
    char *pwned[3];
    for (int i = 0; i < 3; i++)
        pwned[i] = gpurun_xasprintf("%s/pwned-%d", tmp, i);
    /* A folder, a fake gpurun and --set values a shell would act on. */
    /* Commands name files relative to the current folder (a folder name
     * holds no '/'): bash runs the script in this test's folder. */
    char *dir = gpurun_xasprintf("%s/d'ir \"x\" $(touch pwned-0) `touch pwned-1`", tmp);
    char *fake = gpurun_xasprintf("%s/fake gpurun's", tmp);
    char *out = gpurun_xasprintf("%s/argv.bin", tmp);
    char *job_path = gpurun_xasprintf("%s/job.conf", dir);
    char *script_path = gpurun_xasprintf("%s/hostile.sbatch", tmp);
    char *sets[] = {
        "params.q=it's",
        "params.dq=say \"hi\"",
        gpurun_xstrdup("params.cmd=$(touch pwned-2)"),
        gpurun_xstrdup("params.bq=`touch pwned-2`"),
        "params.sp=a  b\tc ",
        "params.nl=line1\nline2\n#SBATCH --uid=0\n",
        "params.misc=\\ $HOME ${HOME} !! * ~ ; | & > < '' \"\" '\\''",
        "params.empty=",
    };
    size_t nset = sizeof sets / sizeof *sets;

    ok(mkdir(dir, 0755) == 0, "a job folder named with quotes, $() and backquotes");
    write_file(job_path, "ranks_per_node = 1\ngpus_per_rank = 0\nparams { p = \"$(touch x)\" }\n", 0644);
    write_file(fake, "#!/bin/sh\nprintf '%s\\0' \"$@\" > \"$FAKE_ARGV\"\n", 0755);
    gpurun_job_t *job = NULL;
    gpurun_error_t err = {0};
    char *s = NULL;
    if (gpurun_job_load(job_path, &job, &err) == 0)
        gpurun_batch_script(job, NULL, job_path, fake, sets, nset, &s, &err);
    if (!ok(s != NULL, "a script for hostile paths and values"))
        diag("%s", err.text);
    gpurun_job_destroy(job);
    if (s) {
        write_file(script_path, s, 0644);
        /* The value's "\n#SBATCH --uid=0" starts a line inside quotes, after
         * the first command: neither sbatch nor bash reads it as one. */
        ok(!strstr(sbatch_options(s), "--uid"), "a line break in a value adds no option sbatch reads");
        char *bash_n[] = {"/bin/bash", "-n", script_path, NULL};
        is_int(run(bash_n), 0, "bash -n accepts the script");
        setenv("FAKE_ARGV", out, 1);
        char *bash[] = {"/bin/bash", script_path, NULL};
        is_int(run(bash), 0, "bash runs the script; the fake gpurun ran");
        unsetenv("FAKE_ARGV");

        /* The expected argv, NUL-separated as the fake wrote it. */
        char *want = NULL;
        size_t wlen = 0;
        FILE *w = open_memstream(&want, &wlen);
        fprintf(w, "run%c%s%c", 0, job_path, 0);
        for (size_t i = 0; i < nset; i++)
            fprintf(w, "--set%c%s%c", 0, sets[i], 0);
        fclose(w);
        char *got = NULL;
        size_t glen = 0;
        gpurun_read_file(out, "argv", 1 << 20, &got, &glen, &err);
        ok(got && glen == wlen && memcmp(got, want, wlen) == 0,
           "gpurun got 'run', the job path and every --set byte for byte");
        free(got);
        free(want);
        for (int i = 0; i < 3; i++)
            ok(!exists(pwned[i]), "no command inside a path or value ran (%s)", strrchr(pwned[i], '/') + 1);
        /* The canary works: unquoted, the same words do create the file. */
        char *canary[] = {"/bin/bash", "-c", "echo $(touch pwned-canary) >/dev/null", NULL};
        ok(run(canary) == 0 && exists("pwned-canary"), "(the same $(touch) unquoted does create its file)");
        char *x = gpurun_xasprintf("%s/x", dir);
        ok(!exists(x), "the job's own params are not in the script");
        free(x);
    }
    free(s);
    free(sets[2]);
    free(sets[3]);
    for (int i = 0; i < 3; i++)
        free(pwned[i]);
    free(dir);
    free(fake);
    free(out);
    free(job_path);
    free(script_path);
}

/* ---- site profiles ------------------------------------------------------- */

/* A site profile read from a file in the test folder, so that its errors
 * can name the file's lines. */
static gpurun_site_t *site_of(const char *name, const char *text)
{
    char *path = gpurun_xasprintf("%s/%s.conf", tmp, name);
    gpurun_site_t *site = NULL;
    gpurun_error_t err = {0};
    write_file(path, text, 0644);
    if (gpurun_site_parse(text, strlen(text), path, &site, &err) < 0)
        diag("site parse failed: %s", err.text);
    free(path);
    return site;
}

static char *site_script(const gpurun_site_t *site, const char *text, gpurun_error_t *err)
{
    char *label = gpurun_xasprintf("%s/job.conf", tmp);
    gpurun_job_t *job = parse(label, text);
    char *s = NULL;
    gpurun_error_clear(err);
    if (job)
        gpurun_batch_script(job, site, label, "/g", NULL, 0, &s, err);
    gpurun_job_destroy(job);
    free(label);
    return s;
}

/* The text after the last #SBATCH line: what bash runs. */
static const char *body_of(const char *s)
{
    const char *body = s;
    for (const char *p = s; p && *p;) {
        const char *nl = strchr(p, '\n');
        if (strncmp(p, "#SBATCH", 7) == 0 && nl)
            body = nl + 1;
        p = nl ? nl + 1 : NULL;
    }
    return body;
}

static void test_site_lines(void)
{
    gpurun_site_t *site = site_of("uni", "description = \"a cluster\"\nscheduler = \"slurm\"\n"
                                         "partition = \"gpu a100\"\naccount = \"proj-x\"\n"
                                         "modules = { \"gcc/12.2.0\", \"cuda/12.4\" }\n"
                                         "sbatch = { \"--qos=normal\", \"--constraint=a100\", \"--exclusive\",\n"
                                         "           \"-t 2:00:00\", \"--mail-type END\", \"--qos=low\" }\n"
                                         "gpus_per_node = 4\n");
    if (!ok(site != NULL, "a Slurm site profile"))
        return;
    gpurun_error_t err = {0};
    char *s = site_script(site, "ranks_per_node = 2\ngpus_per_rank = 1\n", &err);
    if (!ok(s != NULL, "a job of the site gives a script"))
        diag("%s", err.text);
    if (s) {
        is_str(sbatch_reads(s, "--partition="), "--partition=gpu a100", "the site's partition, quoted for sbatch");
        is_int(count_line(s, "#SBATCH --account=proj-x"), 1, "the site's account");
        is_int(count_line(s, "#SBATCH --qos=normal"), 1, "the site's sbatch options, as the profile writes them");
        is_int(count_line(s, "#SBATCH --constraint=a100"), 1, "... --constraint");
        is_int(count_line(s, "#SBATCH --exclusive"), 1, "... --exclusive, which takes no value");
        is_int(count_line(s, "#SBATCH -t 2:00:00"), 1, "... a short option with its value (no timeout in the job)");
        is_int(count_line(s, "#SBATCH --mail-type END"), 1, "... an option and its value after a blank");
        is_int(count_prefix(s, "#SBATCH --qos"), 1, "the site's second --qos is left out: no option twice");
        ok(sbatch_lines_first(s), "every #SBATCH line comes before the first command");
        char *heading = gpurun_xasprintf("# Site uni (%s/uni.conf):", tmp);
        is_int(count_line(s, heading), 1, "a comment says which site profile the lines come from");
        free(heading);
        is_int(count_line(s, "set -euo pipefail"), 1, "set -euo pipefail");
        is_int(count_line(s, "module load 'gcc/12.2.0'"), 1, "module load, the name single-quoted");
        is_int(count_line(s, "module load 'cuda/12.4'"), 1, "... each module, in order");
        const char *set = strstr(s, "set -euo pipefail\n"), *mod = strstr(s, "module load"), *ex = strstr(s, "exec ");
        ok(set && mod && ex && set < mod && mod < ex, "set, then the modules, then exec gpurun");
        ok(strstr(body_of(s), "#SBATCH") == NULL && !strstr(s, "GPURUN_SCRATCH"),
           "no option after the first command; no scratch folder when the site has none");
    }
    free(s);

    /* The job's own words win, once each. */
    s = site_script(site,
                    "ranks_per_node = 2\ngpus_per_rank = 1\ntimeout = \"10m\"\n"
                    "slurm { partition = \"debug\" qos = \"high\" mail_type = \"FAIL\" }\n",
                    &err);
    if (s) {
        ok(count_line(s, "#SBATCH --partition=debug") == 1 && count_prefix(s, "#SBATCH --partition") == 1,
           "slurm.partition replaces the site's partition");
        ok(count_line(s, "#SBATCH --qos=high") == 1 && count_prefix(s, "#SBATCH --qos") == 1,
           "slurm.qos replaces the site's --qos lines");
        ok(count_prefix(s, "#SBATCH -t") == 0 && count_prefix(s, "#SBATCH --time=") == 1,
           "the job's timeout (--time) replaces the site's -t");
        ok(count_prefix(s, "#SBATCH --mail-type") == 1, "slurm.mail_type replaces the site's --mail-type END");
        is_int(count_line(s, "#SBATCH --account=proj-x"), 1, "what the job does not give still comes from the site");
    } else {
        ok(0, "a job overriding its site: %s", err.text);
    }
    free(s);
    s = site_script(site,
                    "ranks_per_node = 1\ngpus_per_rank = 0\ntimeout = \"1m\"\n"
                    "slurm { partition = \"p\" account = \"a\" qos = \"q\" constraint = \"c\" exclusive = \"user\"\n"
                    "        mail_type = \"NONE\" }\n",
                    &err);
    ok(s && !strstr(s, "# Site uni (") && count_prefix(s, "#SBATCH --exclusive") == 1,
       "a job that replaces every site option: no site heading, nothing twice");
    free(s);
    gpurun_site_destroy(site);

    /* GPUs: the job's request, in any words, replaces the site's. */
    site = site_of("gres", "description = \"d\"\nscheduler = \"slurm\"\nsbatch = { \"--gres=gpu:4\", \"--gres-flags=enforce-binding\" }\n");
    s = site ? site_script(site, "ranks_per_node = 4\n", &err) : NULL;
    ok(s && count_line(s, "#SBATCH --gres=gpu:4") == 1 && count_prefix(s, "#SBATCH --gpus-per-node") == 0,
       "a job silent on GPUs takes the site's --gres=gpu:4 (gpus_per_rank may stay unset)");
    if (!s)
        diag("%s", err.text);
    free(s);
    s = site ? site_script(site, "ranks_per_node = 2\ngpus_per_rank = 1\n", &err) : NULL;
    ok(s && count_prefix(s, "#SBATCH --gres=gpu") == 0 && count_line(s, "#SBATCH --gpus-per-node=2") == 1 &&
           count_line(s, "#SBATCH --gres-flags=enforce-binding") == 1,
       "gpus_per_rank replaces the site's GPU option (and no other)");
    free(s);
    s = site ? site_script(site, "ranks_per_node = 2\ngpus_per_rank = 0\n", &err) : NULL;
    ok(s && count_prefix(s, "#SBATCH --gres=gpu") == 0 && count_prefix(s, "#SBATCH --gpus") == 0,
       "a CPU-only job (gpus_per_rank = 0) asks for no GPU, whatever the site says");
    free(s);
    gpurun_site_destroy(site);

    /* Site options the script cannot carry, named on the profile's line. */
    static const struct {
        const char *sbatch, *want, *what;
    } bad[] = {
        {"\"--nodes=1\"", "/bad.conf:3: key 'sbatch', item 1: '--nodes=1' contradicts the job's layout, which sets --nodes",
         "--nodes"},
        {"\"--qos=a\", \"-n 4\"", "/bad.conf:3: key 'sbatch', item 2: '-n 4' contradicts the job's layout, which sets --ntasks",
         "-n (--ntasks)"},
        {"\"--comment=my hetjob\"", "/bad.conf:3: key 'sbatch', item 1: '--comment=my hetjob': cannot go on an #SBATCH line: 'hetjob'",
         "'hetjob'"},
        {"\"--=x\"", "key 'sbatch', item 1: '--=x': cannot go on an #SBATCH line: not an sbatch option", "no option name"},
        {"\"--qos=normal\", \"--qos=normal --partition=debug\"",
         "/bad.conf:3: key 'sbatch', item 2: '--qos=normal --partition=debug': cannot go on an #SBATCH line: "
         "'--partition=debug' after the option: one option per item",
         "two options in one item (a hidden --partition)"},
        {"\"--mail-type END --partition=debug\"", "item 1: '--mail-type END --partition=debug': cannot go on an "
         "#SBATCH line: 'END --partition=debug' after the option", "an option, a value and another option"},
        {"\"--qos=a b\"", "item 1: '--qos=a b': cannot go on an #SBATCH line: 'b' after the option", "a word after --name=value"},
        {"\"--comment='x --partition=y'\"", "item 1: '--comment='x --partition=y'': cannot go on an #SBATCH line: a quote",
         "a quote"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *text = gpurun_xasprintf("description = \"d\"\nscheduler = \"slurm\"\nsbatch = { %s }\n", bad[i].sbatch);
        site = site_of("bad", text);
        s = site ? site_script(site, "ranks_per_node = 2\ngpus_per_rank = 0\n", &err) : NULL;
        ok(site && !s && err.code == 2 && strstr(err.text, bad[i].want), "a site's %s: refused (exit 2), named", bad[i].what);
        if (site && !strstr(err.text, bad[i].want))
            diag("got: %s", s ? "a script" : err.text);
        free(s);
        free(text);
        gpurun_site_destroy(site);
    }
}

static void test_site_cores(void)
{
    gpurun_error_t err = {0};
    gpurun_site_t *site = site_of("cores", "description = \"d\"\nscheduler = \"slurm\"\n"
                                           "gpus_per_node = 4\ncores_per_node = 64\n");
    if (!ok(site && site->cores_per_node == 64, "cores_per_node is read"))
        return;
    char *s = site_script(site, "ranks_per_node = 4\ngpus_per_rank = 1\n", &err);
    ok(s && count_line(s, "#SBATCH --cpus-per-task=16") == 1,
       "no threads_per_rank: --cpus-per-task is the rank's share of cores_per_node");
    free(s);
    s = site_script(site, "ranks_per_node = 2\ngpus_per_rank = 1\nscan { ranks_per_node = {1, 4} }\n", &err);
    ok(s && count_line(s, "#SBATCH --cpus-per-task=16") == 1, "... shared by the most ranks of the scan");
    free(s);
    s = site_script(site, "ranks_per_node = 4\ngpus_per_rank = 1\nthreads_per_rank = 8\n", &err);
    ok(s && count_line(s, "#SBATCH --cpus-per-task=8") == 1, "threads_per_rank still gives --cpus-per-task");
    free(s);
    s = site_script(site, "ranks_per_node = 4\ngpus_per_rank = 1\nslurm { cpus_per_task = \"2\" }\n", &err);
    ok(s && count_line(s, "#SBATCH --cpus-per-task=2") == 1 && count_prefix(s, "#SBATCH --cpus-per-task") == 1,
       "slurm.cpus_per_task replaces the share");
    free(s);

    s = site_script(site, "ranks_per_node = 4\ngpus_per_rank = 1\nthreads_per_rank = 32\n", &err);
    ok(!s && err.code == 3 && strstr(err.text, "4 ranks x 32 threads need 128 cores on a node; site cores's nodes "
                                               "have 64 (cores_per_node in "),
       "threads_per_rank x ranks_per_node over cores_per_node: exit 3, said so");
    if (s || err.code != 3)
        diag("got: %s", s ? "a script" : err.text);
    free(s);
    s = site_script(site, "ranks_per_node = 2\ngpus_per_rank = 1\nthreads_per_rank = 16\n"
                          "scan { ranks_per_node = {2, 8} }\n", &err);
    ok(!s && err.code == 3, "... for the largest run of a scan");
    free(s);
    s = site_script(site, "ranks_per_node = 4\ngpus_per_rank = 1\nthreads_per_rank = 32\nsmt = true\n", &err);
    ok(s != NULL, "... not with smt = true (hardware threads: the profile counts cores)");
    free(s);
    s = site_script(site, "ranks_per_node = 4\ngpus_per_rank = 1\nthreads_per_rank = 32\noversubscribe = true\n", &err);
    ok(s != NULL, "... nor with oversubscribe = true");
    free(s);
    s = site_script(site, "ranks_per_node = 8\ngpus_per_rank = 1\n", &err);
    ok(!s && err.code == 3 && strstr(err.text, "need 8 GPUs on a node; site cores's nodes have 4 (gpus_per_node"),
       "ranks_per_node x gpus_per_rank over gpus_per_node: exit 3");
    free(s);
    s = site_script(site, "ranks_per_node = 100\ngpus_per_rank = 0\n", &err);
    ok(!s && err.code == 3 && strstr(err.text, "100 ranks on a node of 64 cores"), "more ranks than cores: exit 3");
    free(s);
    gpurun_site_destroy(site);

    /* The key itself. */
    static const struct {
        const char *value, *want;
    } bad[] = {
        {"0", "cores.conf:2: key 'cores_per_node': 0 is out of range (1 to 65536)"},
        {"65537", "key 'cores_per_node': 65537 is out of range (1 to 65536)"},
        {"\"many\"", "key 'cores_per_node': expected an integer, got 'many'"},
        {"-4", "key 'cores_per_node'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *text = gpurun_xasprintf("description = \"d\"\ncores_per_node = %s\n", bad[i].value);
        gpurun_site_t *b = NULL;
        gpurun_error_clear(&err);
        int rc = gpurun_site_parse(text, strlen(text), "cores.conf", &b, &err);
        ok(rc < 0 && !b && err.code == 2 && strstr(err.text, bad[i].want), "cores_per_node = %s: refused, named",
           bad[i].value);
        if (!strstr(err.text, bad[i].want))
            diag("got: %s", err.text);
        gpurun_site_destroy(b);
        free(text);
    }
    site = site_of("nocores", "description = \"d\"\n");
    ok(site && site->cores_per_node == -1, "cores_per_node defaults to unknown");
    gpurun_site_destroy(site);
}

/* Module names and the scratch folder reach bash as data: a fake `module`
 * and a fake gpurun record what they got. */
static void test_site_body_hostile(void)
{
    char *bin = gpurun_xasprintf("%s/modbin", tmp);
    char *module = gpurun_xasprintf("%s/module", bin);
    char *fake = gpurun_xasprintf("%s/fake-gpurun", tmp);
    char *margs = gpurun_xasprintf("%s/module.args", tmp);
    char *scratch_out = gpurun_xasprintf("%s/scratch.txt", tmp);
    char *script_path = gpurun_xasprintf("%s/site.sbatch", tmp);
    mkdir(bin, 0755);
    write_file(module, "#!/bin/sh\nprintf '%s\\0' \"$@\" >> \"$FAKE_MODULE_ARGS\"\n", 0755);
    write_file(fake, "#!/bin/sh\nprintf '%s' \"$GPURUN_SCRATCH\" > \"$FAKE_SCRATCH\"\n", 0755);
    unlink(margs);

    /* site.c refuses such names in a file; the script must not rely on it. */
    static const char *const modules[] = {
        "gcc/12.2.0", "foo; touch pwned-m0", "it's $(touch pwned-m1)", "`touch pwned-m2`", "a\nb", "-x",
    };
    gpurun_site_t *site = gpurun_xcalloc(1, sizeof *site);
    site->path = gpurun_xasprintf("%s/odd\ntouch pwned-m3.conf", tmp);
    site->name = gpurun_xstrdup("odd\ntouch pwned-m4");
    site->scheduler = gpurun_xstrdup("slurm");
    site->launcher = gpurun_xstrdup("auto");
    site->nmodules = sizeof modules / sizeof *modules;
    site->modules = gpurun_xcalloc(site->nmodules, sizeof *site->modules);
    for (size_t i = 0; i < site->nmodules; i++)
        site->modules[i] = gpurun_xstrdup(modules[i]);
    site->nbatch_options = 1;
    site->batch_options = gpurun_xcalloc(1, sizeof *site->batch_options);
    site->batch_options[0] = gpurun_xstrdup("--qos=normal");
    site->gpus_per_node = -1;
    site->cores_per_node = -1;
    site->scratch = gpurun_xstrdup("/scratch/${FAKE_USER}/$FAKE_SUB/it's x`y`");

    char *label = gpurun_xasprintf("%s/job.conf", tmp);
    gpurun_job_t *job = parse(label, "ranks_per_node = 1\ngpus_per_rank = 0\n");
    gpurun_error_t err = {0};
    char *s = NULL;
    if (job)
        gpurun_batch_script(job, site, label, fake, NULL, 0, &s, &err);
    if (!ok(s != NULL, "a script for hostile module names and scratch folder"))
        diag("%s", err.text);
    if (s) {
        write_file(script_path, s, 0644);
        ok(count_line(s, "module load 'foo; touch pwned-m0'") == 1, "a module name is one single-quoted word");
        char *bash_n[] = {"/bin/bash", "-n", script_path, NULL};
        is_int(run(bash_n), 0, "bash -n accepts the script");
        char *path_old = gpurun_xstrdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
        char *path_new = gpurun_xasprintf("%s:%s", bin, path_old);
        setenv("PATH", path_new, 1);
        setenv("FAKE_MODULE_ARGS", margs, 1);
        setenv("FAKE_SCRATCH", scratch_out, 1);
        setenv("FAKE_USER", "u s", 1);
        setenv("FAKE_SUB", "$(touch pwned-m5)", 1);
        char *bash[] = {"/bin/bash", script_path, NULL};
        is_int(run(bash), 0, "bash runs it: the fake module, then the fake gpurun");

        char *want = NULL;
        size_t wlen = 0;
        FILE *w = open_memstream(&want, &wlen);
        for (size_t i = 0; i < sizeof modules / sizeof *modules; i++)
            fprintf(w, "load%c%s%c", 0, modules[i], 0);
        fclose(w);
        char *got = NULL;
        size_t glen = 0;
        gpurun_read_file(margs, "args", 1 << 20, &got, &glen, &err);
        ok(got && glen == wlen && memcmp(got, want, wlen) == 0, "module got 'load' and each name byte for byte");
        free(got);
        free(want);
        got = NULL;
        gpurun_read_file(scratch_out, "scratch", 1 << 20, &got, NULL, &err);
        is_str(got ? got : "", "/scratch/u s/$(touch pwned-m5)/it's x`y`",
               "GPURUN_SCRATCH: ${NAME} and $NAME expanded by bash, nothing else");
        free(got);
        for (int i = 0; i <= 5; i++) {
            char *p = gpurun_xasprintf("%s/pwned-m%d", tmp, i);
            ok(!exists(p), "nothing in a module name, site name or path or scratch ran (pwned-m%d)", i);
            free(p);
        }

        unsetenv("FAKE_USER");
        unlink(scratch_out);
        ok(run(bash) != 0 && !exists(scratch_out), "a scratch variable unset on the node stops the script before gpurun");
        setenv("PATH", path_old, 1);
        unsetenv("FAKE_MODULE_ARGS");
        unsetenv("FAKE_SCRATCH");
        unsetenv("FAKE_SUB");
        free(path_old);
        free(path_new);
    }
    free(s);

    /* A '$' that asks bash for more than a variable. */
    static const char *const scratch_bad[] = {"/scratch/$(whoami)", "/s/${USER:-x}", "/s/$", "/s/${USER"};
    for (size_t i = 0; job && i < sizeof scratch_bad / sizeof *scratch_bad; i++) {
        free(site->scratch);
        site->scratch = gpurun_xstrdup(scratch_bad[i]);
        s = NULL;
        gpurun_error_clear(&err);
        int rc = gpurun_batch_script(job, site, label, fake, NULL, 0, &s, &err);
        ok(rc < 0 && !s && err.code == 2 && strstr(err.text, "key 'scratch'") &&
               strstr(err.text, "only ${NAME} and $NAME are expanded"),
           "scratch %s: refused (exit 2)", scratch_bad[i]);
        free(s);
    }
    gpurun_job_destroy(job);
    gpurun_site_destroy(site);
    free(label);
    free(bin);
    free(module);
    free(fake);
    free(margs);
    free(scratch_out);
    free(script_path);
}

/* ---- what run would refuse, refused before the queue ----------------------- */

static int check_of(const char *dir, const char *text, char *const *sets, size_t nset, gpurun_site_t **sitep,
                    gpurun_error_t *err)
{
    char *path = gpurun_xasprintf("%s/%s/job.conf", tmp, dir);
    gpurun_job_t *job = NULL;
    *sitep = NULL;
    write_file(path, text, 0644);
    gpurun_error_clear(err);
    int rc = gpurun_job_load(path, &job, err);
    for (size_t i = 0; rc == 0 && i < nset; i++)
        rc = gpurun_job_set(job, sets[i], err);
    if (rc == 0)
        rc = gpurun_batch_check(job, sitep, NULL, err);
    gpurun_job_destroy(job);
    free(path);
    return rc;
}

static void test_check(void)
{
    char *dir = gpurun_xasprintf("%s/chk", tmp);
    mkdir(dir, 0755);
    char *tpl = gpurun_xasprintf("%s/mytpl.conf", dir);
    write_file(tpl,
               "description = \"a test template\"\ncommand = \"prog -n ${nsteps} -t ${threads_per_rank} "
               "-o ${run_dir}/${job}.out\"\n"
               "gpu_args = \"--gpu ${gpu_flag}\"\nsetup = { \"prep ${input}\" }\ndefaults { nsteps = 10 }\n",
               0644);
    gpurun_error_t err = {0};
    gpurun_site_t *site = NULL;

    int rc = check_of("chk", "template = \"mytpl\"\ngpus_per_rank = 0\nparams { input = \"in\" }\n", NULL, 0, &site, &err);
    ok(rc == 0 && !site, "a job whose template's names are all set: checked, no site");
    if (rc)
        diag("%s", err.text);

    rc = check_of("chk", "job = \"j\"\ntemplate = \"gromacz\"\n", NULL, 0, &site, &err);
    char *want = gpurun_xasprintf("%s/job.conf:2: key 'template': template 'gromacz' not found (did you mean "
                                  "'gromacs'?); looked in ",
                                  dir);
    ok(rc < 0 && err.code == 2 && strncmp(err.text, want, strlen(want)) == 0,
       "a template not on the search path: exit 2, on the job file's line and key");
    if (strncmp(err.text, want, strlen(want)))
        diag("got: %s", err.text);
    free(want);

    char *sets[] = {"template=nosuch"};
    rc = check_of("chk", "template = \"mytpl\"\n", sets, 1, &site, &err);
    ok(rc < 0 && err.code == 2 && strncmp(err.text, "--set template=nosuch: key 'template': template 'nosuch' not "
                                                    "found", 60) == 0,
       "... or on the --set that named it");
    if (rc == 0 || strncmp(err.text, "--set template=nosuch", 21))
        diag("got: %s", err.text);

    rc = check_of("chk", "template = \"mytpl\"\nparams { input = \"in\" }\n\nsite = \"exampl-univ\"\n", NULL, 0, &site,
                  &err);
    want = gpurun_xasprintf("%s/job.conf:4: key 'site': site 'exampl-univ' not found (did you mean 'example-univ'?)", dir);
    ok(rc < 0 && err.code == 2 && strncmp(err.text, want, strlen(want)) == 0, "a site not found: exit 2, its line");
    if (strncmp(err.text, want, strlen(want)))
        diag("got: %s", err.text);
    free(want);

    rc = check_of("chk", "gpus_per_rank = 0\n", NULL, 0, &site, &err);
    ok(rc < 0 && err.code == 2 && strstr(err.text, "the job names neither a template nor a command"),
       "neither a template nor a command: exit 2");

    rc = check_of("chk", "template = \"mytpl\"\ngpus_per_rank = 0\nparams { nstep = 5 input = \"in\" }\n", NULL, 0,
                  &site, &err);
    want = gpurun_xasprintf("%s/job.conf:3: key 'params.nstep': not used: template 'mytpl' has no '${nstep}'", dir);
    ok(rc < 0 && err.code == 2 && strncmp(err.text, want, strlen(want)) == 0,
       "a params key the template does not use: exit 2 on its line, as in run");
    if (rc == 0 || strncmp(err.text, want, strlen(want)))
        diag("got: %s", rc ? err.text : "accepted");
    free(want);
    rc = check_of("chk", "template = \"mytpl\"\ngpus_per_rank = 0\n", NULL, 0, &site, &err);
    want = gpurun_xasprintf("%s: key 'setup', item 1: '${input}' is not set", tpl);
    ok(rc < 0 && err.code == 2 && strncmp(err.text, want, strlen(want)) == 0,
       "a setup step's ${name} unset: exit 2, naming the template and key");
    if (strncmp(err.text, want, strlen(want)))
        diag("got: %s", err.text);
    free(want);
    rc = check_of("chk", "template = \"mytpl\"\ngpus_per_rank = 1\nparams { input = \"in\" }\n", NULL, 0, &site,
                  &err);
    want = gpurun_xasprintf("%s: key 'gpu_args': '${gpu_flag}' is not set", tpl);
    ok(rc < 0 && err.code == 2 && strncmp(err.text, want, strlen(want)) == 0,
       "gpu_args of a job with GPUs: its ${name}s must be set too");
    if (strncmp(err.text, want, strlen(want)))
        diag("got: %s", err.text);
    free(want);
    rc = check_of("chk", "template = \"mytpl\"\nparams { input = \"in; rm -rf x\" gpu_flag = \"1\" }\n", NULL, 0,
                  &site, &err);
    ok(rc < 0 && err.code == 2 && strstr(err.text, "key 'setup', item 1: the words of '${input}', 'in; rm -rf x': unquoted ';'"),
       "a value that makes the words a shell's: exit 2, as run would");
    if (rc == 0 || !strstr(err.text, "key 'setup', item 1"))
        diag("got: %s", rc ? err.text : "accepted");

    write_file(tpl, "description = \"broken\"\ncommand = \"prog\"\nnosuchkey = 1\n", 0644);
    rc = check_of("chk", "template = \"mytpl\"\n", NULL, 0, &site, &err);
    want = gpurun_xasprintf("%s:3: ", tpl);
    ok(rc < 0 && err.code == 2 && strncmp(err.text, want, strlen(want)) == 0 && strstr(err.text, "nosuchkey"),
       "a template with an error: exit 2, the template's own file, line and key");
    if (strncmp(err.text, want, strlen(want)))
        diag("got: %s", err.text);
    free(want);

    /* The template's input: refused while it is missing, checked as run would. */
    rc = check_of("chk", "template = \"gromacs\"\nsite = \"example-univ\"\nparams { tpr = \"b.tpr\" }\n", NULL, 0,
                  &site, &err);
    ok(rc < 0 && err.code == 2 && strstr(err.text, "job.conf:3: key 'params.tpr': input file 'b.tpr' (") &&
           strstr(err.text, "/chk/b.tpr) does not exist"),
       "a shipped template whose run input is missing: exit 2, the job's line, key and path");
    gpurun_site_destroy(site);
    site = NULL;
    /* The smallest GROMACS 2022 run input: header, and the 16 bytes of body it announces. */
    static const unsigned char tpr[116] = {
        0, 0, 0, 15, 0, 0, 0, 14, 'V', 'E', 'R', 'S', 'I', 'O', 'N', ' ', '2', '0', '2', '2', '.', '5', 0, 0,
        0, 0, 0, 4, 0, 0, 0, 127, 0, 0, 0, 28, 0, 0, 0, 8, 0, 0, 0, 7, 'r', 'e', 'l', 'e', 'a', 's', 'e', 0,
        0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 16};
    char *tpr_path = gpurun_xasprintf("%s/b.tpr", dir);
    FILE *tf = fopen(tpr_path, "wb");
    ok(tf && fwrite(tpr, 1, sizeof tpr, tf) == sizeof tpr && fclose(tf) == 0, "a run input written");
    free(tpr_path);
    rc = check_of("chk", "template = \"gromacs\"\nsite = \"example-univ\"\nparams { tpr = \"b.tpr\" }\n", NULL, 0,
                  &site, &err);
    ok(rc == 0 && site && !strcmp(site->name, "example-univ") && site->cores_per_node == 64,
       "a shipped template and site: checked, the site profile returned");
    if (rc)
        diag("%s", err.text);
    gpurun_site_destroy(site);
    site = NULL;

    char *sites = gpurun_xasprintf("%s/sites", dir);
    char *bad = gpurun_xasprintf("%s/sites/bad.conf", dir);
    mkdir(sites, 0755);
    write_file(bad, "description = \"d\"\nmodules = { \"foo; rm -rf /\" }\n", 0644);
    rc = check_of("chk", "command = \"hostname\"\nsite = \"bad\"\n", NULL, 0, &site, &err);
    want = gpurun_xasprintf("%s:2: key 'modules', item 1: 'foo; rm -rf /' is not a module name", bad);
    ok(rc < 0 && err.code == 2 && !site && strncmp(err.text, want, strlen(want)) == 0,
       "a site profile with a hostile module name: exit 2, its line");
    if (strncmp(err.text, want, strlen(want)))
        diag("got: %s", err.text);
    free(want);
    free(sites);
    free(bad);
    free(tpl);
    free(dir);
}

/* ---- the command, with a fake sbatch -------------------------------------- */

/* cmd_submit() with stdout into a file; returns its exit status. */
static int submit(char **argv, int argc, char **stdoutp, gpurun_error_t *err)
{
    char *cap = gpurun_xasprintf("%s/stdout.txt", tmp);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    int fd = open(cap, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    close(fd);
    gpurun_error_clear(err);
    int rc = cmd_submit(argc, argv, err);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    *stdoutp = NULL;
    gpurun_read_file(cap, "stdout", 1 << 20, stdoutp, NULL, err);
    free(cap);
    return rc;
}

/* The submit-*.sbatch files in `dir`, counted; the first one's path kept. */
static int scripts_in(const char *dir, char **first)
{
    int n = 0;
    *first = NULL;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strncmp(e->d_name, "submit-", 7) == 0 && strstr(e->d_name, ".sbatch")) {
            if (!*first)
                *first = gpurun_xasprintf("%s/%s", dir, e->d_name);
            n++;
        }
    if (d)
        closedir(d);
    return n;
}

static void test_command(void)
{
    char *jobdir = gpurun_xasprintf("%s/cmd", tmp);
    char *job = gpurun_xasprintf("%s/job.conf", jobdir);
    char *folder = gpurun_xasprintf("%s/results/hello", jobdir);
    mkdir(jobdir, 0755);
    write_file(job, "job = \"hello\"\ncommand = \"hostname\"\nranks_per_node = 2\ngpus_per_rank = 0\ntimeout = \"5m\"\n",
               0644);
    gpurun_error_t err = {0};
    char *out = NULL, *first = NULL;

    char *dry[] = {"submit", job, "--dry-run", "--set", "env.GREETING=it's $(x)", NULL};
    mode_t umask_was = umask(0); /* the script's mode must not come from the umask */
    int rc = submit(dry, 5, &out, &err);
    umask(umask_was);
    is_int(rc, 0, "submit --dry-run: exit 0");
    if (rc)
        diag("%s", err.text);
    is_int(scripts_in(folder, &first), 1, "it wrote one script into RESULTS/<job>/");
    char *file = NULL;
    struct stat st;
    if (first && gpurun_read_file(first, "script", 1 << 20, &file, NULL, &err) == 0) {
        ok(out && strcmp(out, file) == 0, "it printed exactly the script it wrote");
        ok(strstr(file, " --set 'env.GREETING=it'\\''s $(x)'\n") != NULL, "the --set is in the script, quoted");
        ok(stat(first, &st) == 0 && (st.st_mode & 0777) == 0600, "the script is mode 0600, whatever the umask");
        const char *base = strrchr(first, '/') + 1;
        ok(strlen(base) == strlen("submit-20250101T120000Z.sbatch") && base[15] == 'T' && base[22] == 'Z',
           "it is named submit-<UTC time>.sbatch (%s)", base);
    } else {
        ok(0, "the script can be read back");
    }
    free(file);
    free(out);
    free(first);
    char *dry2[] = {"submit", job, "--dry-run", NULL}; /* getopt reordered dry[] */
    rc = submit(dry2, 3, &out, &err);
    is_int(scripts_in(folder, &first), 2, "a second submit keeps the first script (in the same second: submit-TIME-2)");
    free(out);
    free(first);

    /* --results DIR: relative to the current folder, carried to the node. */
    char *res[] = {"submit", job, "--dry-run", "--results", "elsewhere", NULL};
    rc = submit(res, 5, &out, &err);
    char *rfolder = gpurun_xasprintf("%s/elsewhere/hello", tmp);
    char *rtmp = gpurun_xasprintf("results=%s", tmp);
    char *q = quoted(rtmp, "/elsewhere");
    char *rset = gpurun_xasprintf(" --set %s\n", q);
    free(q);
    free(rtmp);
    int n = scripts_in(rfolder, &first);
    ok(rc == 0 && n == 1 && out && strstr(out, rset),
       "--results DIR: the script goes there and the node gets --set results=ABS");
    free(first);
    free(out);
    free(rfolder);
    free(rset);

    /* A fake sbatch first on PATH. */
    char *bin = gpurun_xasprintf("%s/bin", tmp);
    char *sbatch = gpurun_xasprintf("%s/sbatch", bin);
    char *args = gpurun_xasprintf("%s/sbatch.args", tmp);
    mkdir(bin, 0755);
    char *path_old = gpurun_xstrdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    char *path_new = gpurun_xasprintf("%s:%s", bin, path_old);
    setenv("PATH", path_new, 1);
    setenv("FAKE_ARGS", args, 1);

    char *real[] = {"submit", job, NULL};
    write_file(sbatch,
               "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$FAKE_ARGS\"\ncat > \"$FAKE_ARGS.script\"\n"
               "echo '4242;clusterA'\n",
               0755);
    rc = submit(real, 2, &out, &err);
    is_int(rc, 0, "submit with a working sbatch: exit 0");
    ok(out && strncmp(out, "Submitted batch job 4242 on cluster clusterA\nBatch script: ", 58) == 0,
       "it says which job id sbatch gave");
    char *got = NULL;
    gpurun_read_file(args, "args", 4096, &got, NULL, &err);
    is_str(got, "--parsable\n", "sbatch got --parsable and no path: the script comes on its stdin");
    free(got);
    got = NULL;
    char *given = gpurun_xasprintf("%s.script", args), *written = NULL;
    gpurun_read_file(given, "script", 1 << 20, &got, NULL, &err);
    /* The script sbatch read is one of those written (the last submit's). */
    bool same = false;
    DIR *dp = opendir(folder);
    for (struct dirent *de; got && dp && !same && (de = readdir(dp));) {
        if (strncmp(de->d_name, "submit-", 7))
            continue;
        char *p = gpurun_xasprintf("%s/%s", folder, de->d_name);
        if (gpurun_read_file(p, "script", 1 << 20, &written, NULL, &err) == 0)
            same = !strcmp(got, written) && strstr(got, "#SBATCH") && !strstr(got, "GREETING");
        free(written);
        written = NULL;
        free(p);
    }
    if (dp)
        closedir(dp);
    ok(same, "... exactly a script written in RESULTS/<job>/ (this submit's)");
    free(got);
    free(given);
    free(out);

    write_file(sbatch,
               "#!/bin/sh\necho 'sbatch: error: Batch job submission failed: Invalid partition name specified' "
               ">&2\nexit 1\n",
               0755);
    rc = submit(real, 2, &out, &err);
    ok(rc == 3 && strstr(err.text, "sbatch refused the job (exit status 1"), "sbatch failing: exit 3, said so");
    free(out);

    write_file(sbatch, "#!/bin/sh\necho 'nonsense'\n", 0755);
    rc = submit(real, 2, &out, &err);
    ok(rc == 3 && strstr(err.text, "sbatch printed no job id"), "sbatch printing no id: exit 3");
    free(out);

    setenv("PATH", tmp, 1); /* no sbatch there */
    rc = submit(real, 2, &out, &err);
    ok(rc == 3 && strstr(err.text, "sbatch was not found on PATH"), "no sbatch: exit 3, said so");
    free(out);
    setenv("PATH", path_old, 1);
    unsetenv("FAKE_ARGS");

    /* Errors before anything is written. */
    char *bad_set[] = {"submit", job, "--set", "no_such_key=1", NULL};
    rc = submit(bad_set, 4, &out, &err);
    is_int(rc, 2, "a bad --set: exit 2");
    free(out);
    char *nojob[] = {"submit", "--dry-run", NULL};
    rc = submit(nojob, 2, &out, &err);
    ok(rc == 2 && strstr(err.text, "which job?"), "no job file: exit 2");
    free(out);
    char *badopt[] = {"submit", job, "--frobnicate", NULL};
    rc = submit(badopt, 3, &out, &err);
    ok(rc == 2 && strstr(err.text, "--frobnicate"), "an unknown option: exit 2, named");
    free(out);
    char *job2 = gpurun_xasprintf("%s/nolayout.conf", jobdir);
    write_file(job2, "job = \"nolayout\"\ncommand = \"hostname\"\n", 0644);
    char *nolayout[] = {"submit", job2, "--dry-run", NULL};
    rc = submit(nolayout, 3, &out, &err);
    char *f2 = gpurun_xasprintf("%s/results/nolayout", jobdir);
    ok(rc == 2 && strstr(err.text, "ranks_per_node") && !exists(f2),
       "a job Slurm cannot size: exit 2, nothing written");
    free(out);
    free(f2);
    free(job2);

    free(path_old);
    free(path_new);
    free(bin);
    free(sbatch);
    free(args);
    free(jobdir);
    free(job);
    free(folder);
}

int main(void)
{
    snprintf(tmp, sizeof tmp, "%s/gpurun-test-batch-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp) || chdir(tmp) < 0) {
        skip_all("cannot make a temporary folder: %s", strerror(errno));
        return 0;
    }
    gpurun_plugins_register();
    test_layout();
    test_ranks_per_gpu();
    test_defaults();
    test_time();
    test_scan_and_overrides();
    test_refused();
    test_sbatch_reads_values();
    test_body_hostile();
    test_site_lines();
    test_site_cores();
    test_site_body_hostile();
    test_check();
    test_command();
    if (chdir("/") == 0)
        nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
