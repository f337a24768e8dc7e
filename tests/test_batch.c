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
        gpurun_batch_script(job, label, "/opt/gpurun/bin/gpurun", sets, nset, &s, err);
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
    is_int(count_prefix(s, "#SBATCH"), 14, "no other #SBATCH line");
    ok(sbatch_lines_first(s), "every #SBATCH line comes before the first command");
    is_int(count_line(s, "set -euo pipefail"), 1, "the body sets -euo pipefail");
    char *q = quoted(tmp, "/job.conf");
    char *exec_line = gpurun_xasprintf("exec '/opt/gpurun/bin/gpurun' run %s", q);
    free(q);
    is_int(count_line(s, exec_line), 1, "the body execs gpurun run with the job file's absolute path");
    free(exec_line);
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
    if (job && gpurun_batch_script(job, "./job.conf", "/g", NULL, 0, &s, &err) == 0) {
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
            free(job->slurm.items[0].key);
            free(job->slurm.items[0].value);
            job->slurm.items[0].key = gpurun_xstrdup(hostile[i].key);
            job->slurm.items[0].value = gpurun_xstrdup(hostile[i].value);
            gpurun_error_t err = {0};
            char *s = NULL;
            int rc = gpurun_batch_script(job, label, "/g", NULL, 0, &s, &err);
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
        free(job->slurm.items[0].value);
        job->slurm.items[0].value = gpurun_xstrdup(values[i]);
        gpurun_error_t err = {0};
        char *s = NULL;
        char words[4][512];
        int n = -1;
        if (gpurun_batch_script(job, label, "/g", NULL, 0, &s, &err) == 0)
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
        gpurun_batch_script(job, job_path, fake, sets, nset, &s, &err);
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
    write_file(job, "job = \"hello\"\nranks_per_node = 2\ngpus_per_rank = 0\ntimeout = \"5m\"\n", 0644);
    gpurun_error_t err = {0};
    char *out = NULL, *first = NULL;

    char *dry[] = {"submit", job, "--dry-run", "--set", "params.x=it's $(x)", NULL};
    int rc = submit(dry, 5, &out, &err);
    is_int(rc, 0, "submit --dry-run: exit 0");
    if (rc)
        diag("%s", err.text);
    is_int(scripts_in(folder, &first), 1, "it wrote one script into RESULTS/<job>/");
    char *file = NULL;
    struct stat st;
    if (first && gpurun_read_file(first, "script", 1 << 20, &file, NULL, &err) == 0) {
        ok(out && strcmp(out, file) == 0, "it printed exactly the script it wrote");
        ok(strstr(file, " --set 'params.x=it'\\''s $(x)'\n") != NULL, "the --set is in the script, quoted");
        ok(stat(first, &st) == 0 && (st.st_mode & 0777) == 0644, "the script is mode 0644");
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
    write_file(sbatch, "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$FAKE_ARGS\"\necho '4242;clusterA'\n", 0755);
    rc = submit(real, 2, &out, &err);
    is_int(rc, 0, "submit with a working sbatch: exit 0");
    ok(out && strncmp(out, "Submitted batch job 4242 on cluster clusterA\nBatch script: ", 58) == 0,
       "it says which job id sbatch gave");
    char *got = NULL;
    gpurun_read_file(args, "args", 4096, &got, NULL, &err);
    ok(got && strncmp(got, "--parsable\n", 11) == 0 && strstr(got, "/results/hello/submit-"),
       "sbatch got --parsable and the script's path");
    free(got);
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
    write_file(job2, "job = \"nolayout\"\n", 0644);
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
    test_layout();
    test_defaults();
    test_time();
    test_scan_and_overrides();
    test_refused();
    test_sbatch_reads_values();
    test_body_hostile();
    test_command();
    if (chdir("/") == 0)
        nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
