/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun: only the command line lives here; each command has its own file. */
#include "config.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "confparse.h"
#include "plugin.h"
#include "say.h"
#include "topocache.h"

#if defined(__SANITIZE_ADDRESS__)
/* Sanitizer builds only.  The __tls_get_addr interceptor of GCC < 14 (LLVM
 * < 17) takes a dynamic TLS block that glibc >= 2.25 malloc()s at page offset
 * 16 for a glibc 2.19 one and reads its bounds from the 16 bytes before it:
 * ASan's chunk header.  LeakSanitizer's tracer then scans that wild range and
 * dies at exit ("Tracer caught signal 11", exit 1 instead of ours), whenever
 * a dlopen()ed library with TLS (libOpenCL under hwloc's OpenCL plugin, a
 * vendor's NVML) gets such a block: the heap layout decides, a longer job
 * file path is enough.  Without the interceptor nothing is lost: LSan treats
 * what ld.so allocates, these blocks among it, as reachable.  Full stacks
 * for the suppression below.  ASAN_OPTIONS still overrides these. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "intercept_tls_get_addr=0:fast_unwind_on_malloc=0";
}

/* What tests/lsan.supp suppresses, for runs by hand: libpciaccess, in hwloc's
 * PCI plugin, leaks its device list during hwloc_topology_load(); and a
 * thread still in ASan's own start-up at exit holds memory LSan cannot see
 * (GetThreadStackTopAndBottom: the sanitizer runtime's, never gpurun's). */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
    return "print_suppressions=0";
}

const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:hwloc_topology_load\nleak:GetThreadStackTopAndBottom\n";
}
#endif

static const struct {
    const char *name;
    gpurun_cmd_fn fn;
    const char *summary;
} commands[] = {
    {"topo", cmd_topo, "show this node's (or an export's) GPUs, NICs, NUMA nodes and their affinity"},
    {"plan", cmd_plan, "show which GPUs, NICs, cores and memory each rank gets"},
    {"run", cmd_run, "run a job file (also: gpurun JOB.conf)"},
    {"submit", cmd_submit, "write a batch script for a job file and submit it"},
    {"doctor", cmd_doctor, "can this node run GPU jobs well? what to fix"},
    {"collect", cmd_collect, "figures of merit of a template from existing output files"},
    {"results", cmd_results, "list the runs of a results folder (table, JSON or CSV)"},
    {"status", cmd_status, "the running jobs of a results folder: step, ETA, running figure, run folder"},
    {"report", cmd_report, "statistics, scaling and cost per configuration; SVG plot, HTML page"},
    {"init", cmd_init, "write a commented job file for a template and a site, laid out for this node"},
    {"templates", cmd_templates, "list the templates (or --sites: site profiles) a job can name"},
    {"tune", cmd_tune, "search a job's layouts on this node for the fastest, cheapest or greenest"},
    {"diff", cmd_diff, "what differs between two runs: figures (beyond the noise?), conditions, bindings, inputs"},
    {"rerun", cmd_rerun, "run a run again as it was recorded: its kept job and template, its overrides"},
    {"rank", cmd_rank, NULL}, /* the per-rank step launchers start */
};

static void usage(FILE *f)
{
    fprintf(f, "Usage: gpurun COMMAND [OPTIONS]\n\n"
               "Bind MPI ranks to their closest GPUs, NICs, cores and memory.\n\nCommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (commands[i].summary)
            fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n`gpurun JOB.conf` is `gpurun run JOB.conf`. `gpurun COMMAND --help` describes a command;\n"
               "`man gpurun` describes them all.\n");
}

static void say_warning(const char *text)
{
    gpurun_say(stderr, "gpurun: warning: %s\n", text);
}

/* The commands that run jobs: a reader of their output that goes away
 * (`| head`, a full disk) must not end a run before its record (say.h). */
static bool runs_jobs(const char *name)
{
    return !strcmp(name, "run") || !strcmp(name, "tune") || strchr(name, '.') || strchr(name, '/');
}

int main(int argc, char **argv)
{
    gpurun_error_t err = {0};
    gpurun_say_std_fds();
    if (argc >= 2 && runs_jobs(argv[1]))
        gpurun_say_begin();
    gpurun_topocache_enable(true); /* the program's runs share this node's discovery; libgpurun's callers do not */
    gpurun_plugins_register();     /* job files and site profiles name the plugins present */
    /* Said once by the command a user typed, not again by each rank step. */
    if (argc >= 2 && strcmp(argv[1], "rank")) {
        gpurun_topocache_on_warning(say_warning);
        gpurun_plugins_on_warning(say_warning);
    }
    if (argc < 2) {
        usage(stderr);
        return GPURUN_EXIT_CONFIG;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(name, "--version") || !strcmp(name, "-V")) {
        printf("gpurun %s\n", PACKAGE_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(name, commands[i].name))
            continue;
        int rc = commands[i].fn(argc - 1, argv + 1, &err);
        if (rc != 0 && err.text[0])
            gpurun_say(stderr, "gpurun: %s\n", err.text);
        return rc;
    }
    /* `gpurun JOB.conf`: anything that is not a command and looks like a file. */
    if (strchr(name, '.') || strchr(name, '/')) {
        argv[0] = "run";
        int rc = cmd_run(argc, argv, &err);
        if (rc != 0 && err.text[0])
            gpurun_say(stderr, "gpurun: %s\n", err.text);
        return rc;
    }
    const char *names[sizeof commands / sizeof commands[0]];
    size_t n = 0;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (commands[i].summary) /* not `rank`, which only the launchers start */
            names[n++] = commands[i].name;
    const char *near = gpurun_conf_closest(name, names, n);
    if (near)
        fprintf(stderr, "gpurun: '%s' is not a gpurun command (did you mean '%s'? see gpurun --help)\n", name, near);
    else
        fprintf(stderr, "gpurun: '%s' is not a gpurun command (see gpurun --help)\n", name);
    return GPURUN_EXIT_CONFIG;
}
