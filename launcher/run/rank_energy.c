/* SPDX-License-Identifier: BSD-3-Clause */
/* A host's energy, read by its first rank step (issue 31): its RAPL
 * counters in the step itself, its GPUs through a helper, `gpurun rank
 * --energy PCI,...`, which runs the GPU monitor (NVML's energy counter,
 * power samples) from the program's start until its standard input ends,
 * then prints the monitor's JSON.  A helper because gpurun-rank is linked
 * statically where it can be, and NVML is a shared library to dlopen(). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "rank_energy.h"
#include "util.h"

#ifndef GPURUN_RANK_LEAN
#include "monitor.h"

/* The health of the GPUs at `pcis` that one monitor sees, onto gpus. */
static void add_health(const gpurun_monitor_plugin_t *plugin, const char *const *pcis, int n, json_t *gpus)
{
    gpurun_error_t err = {0};
    struct gpurun_gpu_health *h = NULL;
    int nh = 0;
    char driver[96];
    if (plugin->health && plugin->health(&h, &nh, driver, sizeof driver, &err) == 0) {
        for (int i = 0; i < nh; i++) {
            bool ours = false;
            for (int k = 0; k < n && !ours; k++)
                ours = !strcasecmp(h[i].pci, pcis[k]);
            if (!ours)
                continue;
            json_t *pids = json_array();
            for (int k = 0; k < h[i].nprocs && k < GPURUN_HEALTH_PIDS_MAX; k++)
                json_array_append_new(pids, json_integer(h[i].pids[k]));
            json_array_append_new(gpus, json_pack("{s:s, s:i, s:i, s:o, s:o}", "pci", h[i].pci, "sm_clock_mhz",
                                                  h[i].sm_clock_mhz, "sm_clock_max_mhz", h[i].sm_clock_max_mhz,
                                                  "throttle", h[i].throttle_known ? json_integer((json_int_t)h[i].throttle)
                                                                                  : json_null(),
                                                  "pids", pids));
        }
    }
    free(h);
}

/* Moved whole from rank_conditions.c: the helper's answer to a conditions
 * sample's question, from every built-in monitor that reports health (each
 * sees the GPUs of its vendors). */
void gpurun_conditions_gpu_answer(const char *const *pcis, int n)
{
    json_t *gpus = json_array();
    const char *name;
    for (size_t i = 0; (name = gpurun_monitor_builtin_name(i)); i++) {
        const gpurun_monitor_plugin_t *plugin;
        gpurun_error_t err;
        if (gpurun_monitor_find(name, &plugin, &err) == 0)
            add_health(plugin, pcis, n, gpus);
    }
    json_t *doc = json_pack("{s:o}", "gpus", gpus);
    char *text = json_dumps(doc, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(doc);
    if (text) {
        size_t len = strlen(text);
        text[len] = '\n'; /* one line: the rank step reads up to it */
        gpurun_write_all(STDOUT_FILENO, text, len + 1);
        free(text);
    }
}

int gpurun_rank_energy_helper(const char *list)
{
    /* Stopped by its input's end, not by the signals its rank's job gets. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    char buf[GPURUN_ENERGY_PCIS_MAX * 20 + 1];
    snprintf(buf, sizeof buf, "%s", list ? list : "");
    const char *pcis[GPURUN_ENERGY_PCIS_MAX];
    int n = 0;
    for (char *sv = NULL, *t = strtok_r(buf, ",", &sv); t && n < GPURUN_ENERGY_PCIS_MAX; t = strtok_r(NULL, ",", &sv))
        pcis[n++] = t;
    char why[512] = "";
    gpurun_monitor_session_t *m = gpurun_monitor_begin("auto", pcis, NULL, n, why, sizeof why);
    /* Each 'c' read: the GPUs' conditions, a line (rank_conditions.h). */
    char in[256];
    ssize_t got;
    while ((got = read(STDIN_FILENO, in, sizeof in)) > 0 || (got < 0 && errno == EINTR))
        for (ssize_t i = 0; i < got; i++)
            if (in[i] == 'c')
                gpurun_conditions_gpu_answer(pcis, n);
    json_t *gpus = gpurun_monitor_end(m);
    json_t *out = json_pack("{s:o, s:s}", "gpus_monitor", gpus ? gpus : json_null(), "why", why);
    char *text = json_dumps(out, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(out);
    if (text) {
        gpurun_write_all(STDOUT_FILENO, text, strlen(text));
        free(text);
    }
    return 0;
}
#endif

void gpurun_energy_watch_start(struct gpurun_energy_watch *w, const char *gpurun, const char *pcis)
{
    w->pid = -1;
    w->in = w->out = -1;
    w->why[0] = '\0';
    if (!pcis || !*pcis)
        return;
    int in[2], out[2];
    if (!gpurun || pipe2(in, O_CLOEXEC) < 0) {
        snprintf(w->why, sizeof w->why, "no gpurun to read this host's GPUs with");
        return;
    }
    if (pipe2(out, O_CLOEXEC) < 0) {
        close(in[0]);
        close(in[1]);
        snprintf(w->why, sizeof w->why, "cannot make a pipe: %s", strerror(errno));
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        /* Nothing else of the rank step's (a plan lock, the output pipe):
         * the helper holds only its two pipes and standard error. */
        long max = sysconf(_SC_OPEN_MAX);
        for (long fd = 3; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
            close((int)fd);
        execl(gpurun, gpurun, "rank", "--energy", pcis, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    if (pid < 0) {
        close(in[1]);
        close(out[0]);
        snprintf(w->why, sizeof w->why, "cannot start %s rank --energy: %s", gpurun, strerror(errno));
        return;
    }
    w->pid = pid;
    w->in = in[1];
    w->out = out[0];
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

json_t *gpurun_energy_watch_end(struct gpurun_energy_watch *w, char *why, size_t whylen)
{
    snprintf(why, whylen, "%s", w->why);
    if (w->pid < 0)
        return NULL;
    close(w->in); /* the helper's cue */
    char *buf = gpurun_xcalloc(GPURUN_ENERGY_HELPER_MAX + 1, 1);
    size_t len = 0;
    double until = now_s() + GPURUN_ENERGY_HELPER_WAIT_S;
    for (;;) {
        double left = until - now_s();
        struct pollfd p = {.fd = w->out, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) == 0)
            break;
        ssize_t n = read(w->out, buf + len, GPURUN_ENERGY_HELPER_MAX - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || (len += (size_t)n) >= GPURUN_ENERGY_HELPER_MAX)
            break;
    }
    close(w->out);
    int status = 0;
    if (waitpid(w->pid, &status, WNOHANG) == 0) {
        kill(w->pid, SIGKILL);
        while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    w->pid = -1;
    /* Its last line: before it may come answers to the conditions' asks
     * (rank_conditions.h) that came too late to be read then. */
    while (len && buf[len - 1] == '\n')
        len--;
    size_t from = len;
    while (from && buf[from - 1] != '\n')
        from--;
    json_t *doc = json_loadb(buf + from, len - from, 0, NULL);
    free(buf);
    json_t *gpus = json_is_array(json_object_get(doc, "gpus_monitor")) ? json_incref(json_object_get(doc, "gpus_monitor"))
                                                                       : NULL;
    const char *hw = json_string_value(json_object_get(doc, "why"));
    if (!doc)
        snprintf(why, whylen, "the GPU energy helper said nothing readable (exit status %d)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    else if (!gpus)
        snprintf(why, whylen, "%s", hw && *hw ? hw : "no GPU monitor");
    json_decref(doc);
    return gpus;
}
