/* SPDX-License-Identifier: BSD-3-Clause */
/* The Slurm SPANK plugin (plugins/slurm/spank_gpurun.c) as slurmstepd runs
 * it, over what a job controls: its environment, --gpurun's value, Slurm's
 * task count and task ids (and the plugstack arguments, though they are the
 * site's).  build.sh compiles this file, which includes the plugin's source,
 * and the planner's sources apart with -DNDEBUG, as distributions build the
 * plugin: there hwloc's assertions are gone, and a loop over an infinite
 * bitmap writes on instead of aborting (ASan sees it).
 *
 * The input is lines (at most 8 arguments, 16 variables, 8 tasks):
 *   a ARG           a plugstack.conf argument
 *   o VALUE         --gpurun=VALUE; "o" alone: --gpurun without a value
 *   e NAME=VALUE    a variable of the job's environment (spank_getenv)
 *   n COUNT|fail    S_JOB_LOCAL_TASK_COUNT (as uint32_t; "fail": an error) [1]
 *   t ID|fail       a task_init with S_TASK_ID = ID (as int)
 *   l               srun's side (S_CTX_LOCAL) instead of slurmstepd's
 * In a value, "\n" stands for a newline.  Each input runs slurm_spank_init,
 * the option, init_post_opt, user_init, task_init for each task and exit.
 *
 * The topology is the site's (plugstack's topology= or the live node), never
 * the job's: -Wl,--wrap=gpurun_topology_load,--wrap=gpurun_topology_destroy
 * hand out one fixture (tests/fixtures/2s-4gpu-2nic.xml restricted to this
 * process's cpus, loaded once; a path naming "nonexistent" fails as a
 * missing file does).  task_init applies bindings to this process: its cpu
 * affinity and memory policy are put back after each.
 *
 * Checked besides the sanitizers: every log line is one line of at most
 * 4 KiB, and after an error in user_init no task gets a variable.
 * FUZZ_SPANK_LOG=1 prints the plugin's log lines and variables on stderr. */

#include "fuzz.h"

#include <errno.h>
#include <hwloc.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "spank_gpurun.c"

#define MAX_ARGS 8
#define MAX_ENV 16
#define MAX_TASKS 8
#define TASK_FAIL INT32_MIN
#define LOG_MAX 4096

static struct {
    char *args[MAX_ARGS + 1];
    int nargs;
    const char *opt;
    bool opt_given;
    const char *env[MAX_ENV];
    int nenv;
    bool ntasks_fail;
    uint32_t ntasks;
    int tasks[MAX_TASKS];
    int ntask_ids;
    bool local;
    /* what happened */
    int task;
    bool in_user_init, user_init_error, set_after_error;
} job;

/* --- the SPANK API -------------------------------------------------------- */

static bool show_log(void) /* FUZZ_SPANK_LOG=1: the log and variables on stderr */
{
    static int show = -1;
    if (show < 0)
        show = getenv("FUZZ_SPANK_LOG") != NULL;
    return show;
}

static void log_check(const char *fmt, va_list ap)
{
    char line[LOG_MAX + 2];
    int n = vsnprintf(line, sizeof line, fmt, ap);
    if (n < 0 || n > LOG_MAX) {
        fprintf(stderr, "fuzz-spank: a log line of %d bytes\n", n);
        abort();
    }
    if (show_log())
        fprintf(stderr, "log: %s\n", line);
    for (const char *p = line; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) {
            fprintf(stderr, "fuzz-spank: a log line with control character 0x%02x: %s\n", (unsigned char)*p, line);
            abort();
        }
}

void slurm_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_check(fmt, ap);
    va_end(ap);
    if (job.in_user_init)
        job.user_init_error = true;
}

void slurm_info(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_check(fmt, ap);
    va_end(ap);
}

int spank_remote(spank_t sp)
{
    (void)sp;
    return !job.local;
}

spank_context_t spank_context(void)
{
    return job.local ? S_CTX_LOCAL : S_CTX_REMOTE;
}

const char *spank_strerror(spank_err_t e)
{
    return e == ESPANK_NOSPACE ? "Buffer too small" : "Generic error";
}

/* As Slurm 22.05's: strlcpy into buf, ESPANK_NOSPACE when it was cut. */
spank_err_t spank_getenv(spank_t sp, const char *var, char *buf, int len)
{
    (void)sp;
    if (job.local)
        return ESPANK_NOT_REMOTE;
    if (!var || !buf || len < 0)
        return ESPANK_BAD_ARG;
    size_t vl = strlen(var);
    for (int i = 0; i < job.nenv; i++) {
        if (strncmp(job.env[i], var, vl) || job.env[i][vl] != '=')
            continue;
        const char *val = job.env[i] + vl + 1;
        size_t n = strlen(val);
        if (len > 0) {
            size_t c = n < (size_t)len - 1 ? n : (size_t)len - 1;
            memcpy(buf, val, c);
            buf[c] = '\0';
        }
        return n >= (size_t)len ? ESPANK_NOSPACE : ESPANK_SUCCESS;
    }
    return ESPANK_ENV_NOEXIST;
}

spank_err_t spank_setenv(spank_t sp, const char *var, const char *val, int overwrite)
{
    (void)sp;
    (void)overwrite;
    if (job.local)
        return ESPANK_NOT_REMOTE;
    if (!var || !val)
        return ESPANK_BAD_ARG;
    if (job.user_init_error)
        job.set_after_error = true;
    if (show_log())
        fprintf(stderr, "setenv: %s=%s\n", var, val);
    return ESPANK_SUCCESS;
}

spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
    (void)sp;
    va_list ap;
    va_start(ap, item);
    spank_err_t rc = ESPANK_SUCCESS;
    if (item == S_JOB_LOCAL_TASK_COUNT && !job.ntasks_fail)
        *va_arg(ap, uint32_t *) = job.ntasks;
    else if (item == S_TASK_ID && job.task != TASK_FAIL)
        *va_arg(ap, int *) = job.task;
    else if (item == S_JOB_ID || item == S_JOB_STEPID)
        *va_arg(ap, uint32_t *) = 7;
    else
        rc = ESPANK_ERROR;
    va_end(ap);
    return rc;
}

/* --- the site's topology, once ------------------------------------------- */

int __real_gpurun_topology_load(const char *xml, unsigned flags, gpurun_topology_t **topop, gpurun_error_t *err);
void __real_gpurun_topology_destroy(gpurun_topology_t *t);
int __wrap_gpurun_topology_load(const char *xml, unsigned flags, gpurun_topology_t **topop, gpurun_error_t *err);
void __wrap_gpurun_topology_destroy(gpurun_topology_t *t);

static gpurun_topology_t *fixture;

/* The fixture restricted to the cpus this process may use, as
 * tests/cli-spank.sh gives it to slurmstepd: plans fit, bindings apply. */
static void load_fixture(void)
{
    char src[4200];
    snprintf(src, sizeof src, "%s/tests/fixtures/2s-4gpu-2nic.xml", FUZZ_SRCDIR);
    hwloc_topology_t t;
    hwloc_bitmap_t mine = hwloc_bitmap_alloc();
    cpu_set_t set;
    if (hwloc_topology_init(&t) < 0 || hwloc_topology_set_xml(t, src) < 0 ||
        hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_ALL) < 0 || hwloc_topology_load(t) < 0 ||
        sched_getaffinity(0, sizeof set, &set) < 0) {
        fprintf(stderr, "fuzz-spank: cannot load %s: %s\n", src, strerror(errno));
        abort();
    }
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &set))
            hwloc_bitmap_set(mine, (unsigned)i);
    hwloc_bitmap_and(mine, mine, hwloc_topology_get_topology_cpuset(t));
    char *xml = NULL;
    int len = 0;
    if (hwloc_bitmap_iszero(mine) || hwloc_topology_restrict(t, mine, 0) < 0 ||
        hwloc_topology_export_xmlbuffer(t, &xml, &len, 0) < 0) {
        fprintf(stderr, "fuzz-spank: cannot restrict %s to this process's cpus\n", src);
        abort();
    }
    const char *path = fuzz_file("node.xml", (const uint8_t *)xml, (size_t)len - 1);
    hwloc_free_xmlbuffer(t, xml);
    hwloc_topology_destroy(t);
    hwloc_bitmap_free(mine);
    gpurun_error_t err;
    if (__real_gpurun_topology_load(path, 0, &fixture, &err) != 0) {
        fprintf(stderr, "fuzz-spank: %s\n", err.text);
        abort();
    }
}

int __wrap_gpurun_topology_load(const char *xml, unsigned flags, gpurun_topology_t **topop, gpurun_error_t *err)
{
    (void)flags;
    if (xml && strstr(xml, "nonexistent")) {
        *topop = NULL;
        snprintf(err->text, sizeof err->text, "%s: cannot open topology file: No such file or directory", xml);
        err->code = GPURUN_ERR_CONFIG;
        return GPURUN_ERR_CONFIG;
    }
    *topop = fixture;
    err->code = GPURUN_OK;
    err->text[0] = '\0';
    return GPURUN_OK;
}

void __wrap_gpurun_topology_destroy(gpurun_topology_t *t)
{
    if (t != fixture)
        __real_gpurun_topology_destroy(t);
}

/* --- the input ------------------------------------------------------------ */

/* "\n" in a value stands for a newline. */
static void unescape(char *s)
{
    char *o = s;
    for (; *s; s++)
        if (s[0] == '\\' && s[1] == 'n') {
            *o++ = '\n';
            s++;
        } else
            *o++ = *s;
    *o = '\0';
}

static void parse(char *text)
{
    memset(&job, 0, sizeof job);
    job.ntasks = 1;
    for (char *line = text; line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char kind = line[0], *v = line[0] && line[1] == ' ' ? line + 2 : line + (line[0] != '\0');
        unescape(v);
        if (kind == 'a' && job.nargs < MAX_ARGS)
            job.args[job.nargs++] = v;
        else if (kind == 'o') {
            job.opt_given = true;
            job.opt = line[1] == ' ' ? v : NULL;
        } else if (kind == 'e' && job.nenv < MAX_ENV)
            job.env[job.nenv++] = v;
        else if (kind == 'n') {
            job.ntasks_fail = !strcmp(v, "fail");
            job.ntasks = (uint32_t)strtoull(v, NULL, 10);
        } else if (kind == 't' && job.ntask_ids < MAX_TASKS)
            job.tasks[job.ntask_ids++] = !strcmp(v, "fail") ? TASK_FAIL : (int)strtol(v, NULL, 10);
        else if (kind == 'l')
            job.local = true;
        line = nl ? nl + 1 : NULL;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static cpu_set_t affinity;
    if (!fixture) {
        load_fixture();
        if (sched_getaffinity(0, sizeof affinity, &affinity) < 0)
            abort();
    }
    char *text = fuzz_string(data, size);
    parse(text);
    memset(&st, 0, sizeof st); /* as a fresh slurmstepd loads the plugin */
    spank_t sp = (spank_t)&job;
    slurm_spank_init(sp, job.nargs, job.args);
    if (job.opt_given)
        spank_options[0].cb(spank_options[0].val, job.opt, !job.local);
    slurm_spank_init_post_opt(sp, job.nargs, job.args);
    job.in_user_init = true;
    slurm_spank_user_init(sp, job.nargs, job.args);
    job.in_user_init = false;
    for (int i = 0; i < job.ntask_ids; i++) {
        job.task = job.tasks[i];
        slurm_spank_task_init(sp, job.nargs, job.args);
        /* a binding applied to this process: put back */
        sched_setaffinity(0, sizeof affinity, &affinity);
        syscall(SYS_set_mempolicy, 0 /* MPOL_DEFAULT */, NULL, 0UL);
    }
    slurm_spank_exit(sp, job.nargs, job.args);
    if (job.set_after_error) {
        fprintf(stderr, "fuzz-spank: user_init refused the step, yet a task got variables\n");
        abort();
    }
    free(text);
    return 0;
}
