/* SPDX-License-Identifier: BSD-3-Clause */
/* The NVML monitor against the fake libnvidia-ml.so.1 (tests/fake_nvml.c):
 * `make check` builds it and names it in $FAKE_NVML; run by hand, this test
 * builds it itself with cc.  Means and peaks are checked against the fake's
 * script; a missing library leaves the monitor unavailable, not failing. */
#include "config.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "gpudirect.h" /* gpurun_tool_run */
#include "monitor.h"
#include "plugin.h"
#include "tap.h"

static char tmp[256];

/* tests/SRC built with cc into the shared object SO, with one -D flag;
 * false, with a note, when it cannot be (no compiler). */
static bool build_so(const char *src_name, const char *so, const char *define)
{
    const char *top = getenv("top_srcdir") ? getenv("top_srcdir") : ".";
    char src[512], inc_l[512], inc_p[512];
    snprintf(src, sizeof src, "%s/tests/%s", top, src_name);
    /* launcher/lib: the plugin headers' error.h (else the C library's
     * <error.h> is found, and nothing builds) */
    snprintf(inc_l, sizeof inc_l, "-I%s/launcher/lib", top);
    snprintf(inc_p, sizeof inc_p, "-I%s/plugins", top);
    const char *cc = getenv("CC") && *getenv("CC") && !strchr(getenv("CC"), ' ') ? getenv("CC") : "cc";
    char *argv[] = {(char *)cc, "-std=c11", (char *)define, "-shared", "-fPIC", inc_l, inc_p, "-o", (char *)so, src,
                    NULL};
    char *out = NULL;
    int st = -1;
    bool built = gpurun_tool_run(argv, 60, 65536, &out, &st) == 0 && st == 0;
    if (!built)
        diag("could not build %s: %s", so, out ? out : "no compiler");
    free(out);
    return built;
}

static const char *fake_library(void)
{
    static char path[512];
    const char *made = getenv("FAKE_NVML");
    if (made && access(made, R_OK) == 0)
        return made;
    snprintf(path, sizeof path, "%s/libnvidia-ml.so.1", tmp);
    return build_so("fake_nvml.c", path, "-D_GNU_SOURCE") ? path : NULL;
}

/* Monitors and launchers from shared objects go through one loader: the
 * search path, the symbol, the interface check and its messages. */
static void test_shared_objects(void)
{
    char mon[512], launch[512], old[512];
    snprintf(mon, sizeof mon, "%s/monitor_fake.so", tmp);
    snprintf(launch, sizeof launch, "%s/launcher_fake.so", tmp);
    snprintf(old, sizeof old, "%s/monitor_old.so", tmp);
    if (!build_so("fake_plugin.c", mon, "-DFAKE_ABI_DELTA=0") ||
        !build_so("fake_plugin.c", launch, "-DFAKE_ABI_DELTA=0") ||
        !build_so("fake_plugin.c", old, "-DFAKE_ABI_DELTA=1")) {
        skip("no C compiler to build tests/fake_plugin.c");
        return;
    }
    char path[600];
    snprintf(path, sizeof path, "/nonexistent:%s", tmp);
    setenv("GPURUN_PLUGIN_PATH", path, 1);
    gpurun_error_t err = {0};
    const gpurun_monitor_plugin_t *m = NULL;
    ok(gpurun_monitor_find("fake", &m, &err) == 0 && m && !strcmp(m->summary, "a monitor for the loader's tests"),
       "monitor_fake.so found on $GPURUN_PLUGIN_PATH (%s)", err.text);
    const gpurun_launcher_plugin_t *l = NULL;
    ok(gpurun_launcher_find("fake", &l, &err) == 0 && l && !strcmp(l->summary, "a launcher for the loader's tests"),
       "launcher_fake.so found on $GPURUN_PLUGIN_PATH (%s)", err.text);
    ok(gpurun_launcher_find("local", &l, &err) == 0 && !strcmp(l->name, "local"), "a built-in launcher comes first");
    ok(gpurun_monitor_find("old", &m, &err) < 0 && err.code == GPURUN_EXIT_ENV, "another interface version: refused");
    char want[1024];
    snprintf(want, sizeof want, "old: monitor plugin interface version %d, gpurun needs %d", GPURUN_MONITOR_ABI + 1,
             GPURUN_MONITOR_ABI);
    is_str(err.text, want, "the version message");
    ok(gpurun_monitor_find("a/b", &m, &err) < 0 && err.code == GPURUN_EXIT_CONFIG, "a path is no monitor name");
    is_str(err.text, "'a/b' is not a monitor name", "the monitor name message");
    ok(gpurun_launcher_find("", &l, &err) < 0 && err.code == GPURUN_EXIT_CONFIG, "nor is an empty launcher name");
    is_str(err.text, "'' is not a launcher name", "the launcher name message");
    ok(gpurun_monitor_find("nosuch", &m, &err) < 0 && err.code == GPURUN_EXIT_ENV, "no such monitor");
    is_str(err.text,
           "no monitor 'nosuch': built in are nvml and rocm_smi; plugins are looked for as monitor_nosuch.so in "
           "$GPURUN_PLUGIN_PATH and " GPURUN_PKGLIBDIR,
           "the missing monitor message");
    ok(gpurun_launcher_find("nosuch", &l, &err) < 0 && err.code == GPURUN_EXIT_ENV, "no such launcher");
    is_str(err.text,
           "no launcher 'nosuch': built in are mpirun, srun, flux, pbs and local; plugins are looked for as "
           "launcher_nosuch.so in $GPURUN_PLUGIN_PATH and " GPURUN_PKGLIBDIR,
           "the missing launcher message");
    /* A plugin another user could have changed is code gpurun will not run. */
    chmod(mon, 0666);
    ok(gpurun_monitor_find("fake", &m, &err) < 0 && err.code == GPURUN_EXIT_ENV &&
           strstr(err.text, "monitor_fake.so: writable by others; nothing of it is loaded"),
       "a plugin file others can write: refused (%s)", err.text);
    chmod(mon, 0755);
    chmod(tmp, 0777);
    /* the folders are walked once for a $GPURUN_PLUGIN_PATH: another value */
    snprintf(path, sizeof path, "/nonexistent:%s/", tmp);
    setenv("GPURUN_PLUGIN_PATH", path, 1);
    ok(gpurun_launcher_find("fake", &l, &err) < 0 &&
           strstr(err.text, " is writable by others") && strstr(err.text, "plugin folder "),
       "a plugin in a folder others can write: refused, naming the folder (%s)", err.text);
    chmod(tmp, 01777);
    snprintf(path, sizeof path, "/nonexistent:%s//", tmp);
    setenv("GPURUN_PLUGIN_PATH", path, 1);
    /* others could add plugin files of their own there (issue 37) */
    ok(gpurun_launcher_find("fake", &l, &err) < 0 && strstr(err.text, " is writable by others"),
       "... with the sticky bit too: the plugin folder itself (%s)", err.text);
    chmod(tmp, 0700);
    unsetenv("GPURUN_PLUGIN_PATH");
    unlink(mon);
    unlink(launch);
    unlink(old);
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) < 0)
        ;
}

/* The fake's script: reading k of GPU d. */
static double util_at(int d, long k) { return 10.0 * (d + 1) + 10.0 * (double)(k % 4); }
static double mem_at(int d, long k) { return 1024.0 * (d + 1) + 256.0 * (double)(k % 4); }
static double power_at(int d, long k) { return 100.0 + 50.0 * d + 25.0 * (double)(k % 4); }

static void expect(double (*f)(int, long), int d, long n, double *mean, double *peak)
{
    double sum = 0, max = 0;
    for (long k = 0; k < n; k++) {
        sum += f(d, k);
        if (k == 0 || f(d, k) > max)
            max = f(d, k);
    }
    *mean = n ? sum / (double)n : 0;
    *peak = max;
}

static bool near(double a, double b)
{
    return fabs(a - b) < 1e-6;
}

static void test_missing(const gpurun_monitor_plugin_t *p)
{
    setenv("GPURUN_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    gpurun_error_t why = {0};
    ok(p->available(&why) < 0 && strstr(why.text, "NVML is not available"),
       "missing library: unavailable, with why (%s)", why.text);
    const char *pcis[] = {"0000:13:00.0"};
    char note[512];
    gpurun_monitor_session_t *s = gpurun_monitor_begin("auto", pcis, NULL, 1, note, sizeof note);
    ok(s == NULL && strstr(note, "libnvidia-ml.so.1"), "missing library: begin() gives no session and a note");
    ok(gpurun_monitor_end(NULL) == NULL, "missing library: end(NULL) is NULL, the run goes on");
}

static void test_sampling(const gpurun_monitor_plugin_t *p, const char *lib)
{
    setenv("GPURUN_NVML_LIBRARY", lib, 1);
    setenv("FAKE_NVML_DEVICES", "0000:13:00.0,0000:15:00.0,0000:83:00.0", 1);
    unsetenv("FAKE_NVML_NO_POWER");
    gpurun_error_t err = {0};
    ok(p->available(&err) == 0, "fake NVML: available (%s)", err.text);

    /* Two of the three GPUs, by PCI address (one in NVML's long form). */
    const char *ids[] = {"0000:15:00.0", "00000000:13:00.0"};
    gpurun_monitor_t *m = NULL;
    if (!ok(p->start(ids, 2, 0.02, &m, &err) == 0, "start on two GPUs by PCI bus id (%s)", err.text))
        return;
    sleep_s(0.25);
    struct gpurun_monitor_result r = {0};
    ok(p->stop(m, &r) == 0 && r.ngpus == 2, "stop: two GPUs");
    if (r.ngpus == 2) {
        const struct gpurun_gpu_stats *a = &r.gpus[0], *b = &r.gpus[1];
        is_str(a->pci, "0000:15:00.0", "first GPU as asked");
        is_str(b->pci, "0000:13:00.0", "NVML's long bus id normalised");
        ok(a->index == 1 && b->index == 0, "NVML indexes (%d, %d)", a->index, b->index);
        /* On a fixed grid from the start, late ticks caught up: one per
         * 0.02 s of the session's own time, however long sleep_s() took. */
        ok(a->samples >= 1 && a->samples <= (long)(r.seconds / 0.02) + 2,
           "0.02 s apart: a sample per 0.02 s of the %.3f s session at most (%ld)", r.seconds, a->samples);
        ok(a->util_n == a->samples && a->mem_n == a->samples && a->power_n == a->samples,
           "every metric read at every sample");
        for (int g = 0; g < 2; g++) {
            const struct gpurun_gpu_stats *s = &r.gpus[g];
            int d = s->index;
            double mean, peak;
            expect(util_at, d, s->util_n, &mean, &peak);
            ok(near(s->util_mean, mean) && near(s->util_peak, peak),
               "GPU %d utilisation mean %.3f peak %.0f (want %.3f, %.0f)", d, s->util_mean, s->util_peak, mean, peak);
            expect(mem_at, d, s->mem_n, &mean, &peak);
            ok(near(s->mem_mean_mib, mean) && near(s->mem_peak_mib, peak), "GPU %d memory mean %.3f peak %.0f MiB", d,
               s->mem_mean_mib, s->mem_peak_mib);
            expect(power_at, d, s->power_n, &mean, &peak);
            ok(near(s->power_mean_w, mean) && near(s->power_peak_w, peak), "GPU %d power mean %.3f peak %.0f W", d,
               s->power_mean_w, s->power_peak_w);
        }
        ok(r.seconds >= 0.2 && r.seconds < 5, "the session lasted %.2f s", r.seconds);
        json_t *j = gpurun_monitor_json(&r);
        json_t *g0 = json_array_get(j, 0);
        ok(json_array_size(j) == 2 && !strcmp(json_string_value(json_object_get(g0, "pci")), "0000:15:00.0") &&
               json_integer_value(json_object_get(g0, "index")) == 1 &&
               json_is_real(json_object_get(g0, "util_mean")) &&
               json_is_real(json_object_get(g0, "util_peak")) && json_is_real(json_object_get(g0, "mem_mean_mib")) &&
               json_is_real(json_object_get(g0, "mem_peak_mib")) && json_is_real(json_object_get(g0, "power_mean_w")) &&
               json_is_real(json_object_get(g0, "power_peak_w")) &&
               json_integer_value(json_object_get(g0, "samples")) == a->samples,
           "gpus_monitor JSON has every key");
        json_decref(j);
    }
    gpurun_monitor_result_free(&r);

    /* By index, and a GPU that does not report its power. */
    setenv("FAKE_NVML_NO_POWER", "1", 1);
    const char *idx[] = {"2"};
    m = NULL;
    if (ok(p->start(idx, 1, 0.01, &m, &err) == 0, "start by index")) {
        sleep_s(0.05);
        memset(&r, 0, sizeof r);
        p->stop(m, &r);
        ok(r.ngpus == 1 && !strcmp(r.gpus[0].pci, "0000:83:00.0") && r.gpus[0].samples >= 1 && r.gpus[0].power_n == 0,
           "by index: PCI address found, power not supported");
        json_t *j = gpurun_monitor_json(&r);
        ok(json_is_null(json_object_get(json_array_get(j, 0), "power_mean_w")) &&
               json_is_null(json_object_get(json_array_get(j, 0), "power_peak_w")),
           "unsupported power is null in the JSON");
        json_decref(j);
        gpurun_monitor_result_free(&r);
    }
    unsetenv("FAKE_NVML_NO_POWER");

    /* Stopped at once, whether its thread ran or not: one sample at least
     * (its first, "at once"), and its own time in the JSON. */
    m = NULL;
    if (ok(p->start(idx, 1, 10.0, &m, &err) == 0, "start, 10 s apart")) {
        memset(&r, 0, sizeof r);
        p->stop(m, &r);
        ok(r.ngpus == 1 && r.gpus[0].samples >= 1 && r.gpus[0].samples <= 2 && r.gpus[0].power_n == r.gpus[0].samples,
           "stopped at once: its one sample all the same (%ld)", r.ngpus == 1 ? r.gpus[0].samples : -1L);
        json_t *j = gpurun_monitor_json(&r);
        json_t *ms = json_object_get(json_array_get(j, 0), "measured_s");
        ok(json_is_number(ms) && json_number_value(ms) >= 0 && json_number_value(ms) < 10,
           "... and its measured time, start to stop (%.3f s)", json_number_value(ms));
        json_decref(j);
        gpurun_monitor_result_free(&r);
    }

    /* A GPU NVML does not know: start fails, saying which. */
    const char *bad[] = {"0000:99:00.0"};
    m = NULL;
    gpurun_error_clear(&err);
    ok(p->start(bad, 1, 0.1, &m, &err) < 0 && strstr(err.text, "0000:99:00.0") && strstr(err.text, "Not Found"),
       "an unknown PCI address is refused (%s)", err.text);

    /* The sampler must not take signals gpurun waits for with sigwaitinfo(). */
    sigset_t usr1, old;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, &old);
    m = NULL;
    if (p->start(ids, 1, 0.01, &m, &err) == 0) {
        kill(getpid(), SIGUSR1); /* delivered to the sampler, it would end this test */
        struct timespec wait = {2, 0};
        ok(sigtimedwait(&usr1, NULL, &wait) == SIGUSR1,
           "the sampling thread blocks signals: the main thread gets them");
        memset(&r, 0, sizeof r);
        p->stop(m, &r);
        gpurun_monitor_result_free(&r);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);

    /* The run's two calls. */
    setenv("GPURUN_MONITOR_INTERVAL", "0.02", 1);
    const char *pcis[] = {"0000:13:00.0"};
    char note[256] = "x";
    gpurun_monitor_session_t *s = gpurun_monitor_begin("auto", pcis, NULL, 1, note, sizeof note);
    ok(s != NULL && note[0] == '\0', "begin(): a session");
    sleep_s(0.1);
    json_t *j = gpurun_monitor_end(s);
    ok(json_is_array(j) && json_array_size(j) == 1 &&
           json_integer_value(json_object_get(json_array_get(j, 0), "samples")) >= 1,
       "end(): the gpus_monitor array");
    json_decref(j);

    /* NVML that does not start. */
    setenv("FAKE_NVML_INIT_FAIL", "1", 1);
    gpurun_error_clear(&err);
    ok(p->available(&err) < 0 && strstr(err.text, "Unknown Error"), "nvmlInit failing: unavailable (%s)", err.text);
    unsetenv("FAKE_NVML_INIT_FAIL");
}

static void test_health(const gpurun_monitor_plugin_t *p)
{
    setenv("FAKE_NVML_DEVICES", "0000:13:00.0,0000:15:00.0", 1);
    setenv("FAKE_NVML_LINK", "3,4,8,16", 1);
    setenv("FAKE_NVML_THROTTLE", "0x48", 1);
    setenv("FAKE_NVML_DRIVER", "535.104.05", 1);
    struct gpurun_gpu_health *h = NULL;
    int n = 0;
    char driver[80];
    gpurun_error_t err = {0};
    if (!ok(p->health && p->health(&h, &n, driver, sizeof driver, &err) == 0, "health (%s)", err.text))
        return;
    is_str(driver, "535.104.05", "health: driver version");
    ok(n == 2 && !strcmp(h[1].pci, "0000:15:00.0") && h[1].index == 1, "health: two GPUs by PCI address");
    ok(n == 2 && h[0].pcie_gen == 3 && h[0].pcie_gen_max == 4 && h[0].pcie_width == 8 && h[0].pcie_width_max == 16,
       "health: PCIe link current vs max");
    ok(n == 2 && h[0].throttle_known &&
           h[0].throttle == (GPURUN_THROTTLE_HW_SLOWDOWN | GPURUN_THROTTLE_HW_THERMAL),
       "health: throttle reasons");
    ok(n == 2 && near(h[0].power_limit_w, 400) && h[0].sm_clock_max_mhz == 1410 && h[0].temperature_c == 35,
       "health: power limit, clocks, temperature");
    free(h);
    unsetenv("FAKE_NVML_LINK");
    unsetenv("FAKE_NVML_THROTTLE");
    unsetenv("FAKE_NVML_DRIVER");
}

/* The rocm_smi monitor against tests/fake_rocm_smi.c ($FAKE_ROCM_SMI). */
static void test_rocm_smi(const char *nvml_lib)
{
    const char *lib = getenv("FAKE_ROCM_SMI");
    if (!lib || access(lib, R_OK) != 0) {
        skip("no fake ROCm SMI ($FAKE_ROCM_SMI: make check builds it)");
        return;
    }
    const gpurun_monitor_plugin_t *p = NULL;
    gpurun_error_t err = {0};
    ok(gpurun_monitor_find("rocm_smi", &p, &err) == 0 && p && !strcmp(p->name, "rocm_smi"),
       "the rocm_smi monitor is built in");
    setenv("GPURUN_ROCM_SMI_LIBRARY", "/nonexistent/librocm_smi64.so", 1);
    ok(p->available(&err) < 0 && strstr(err.text, "ROCm SMI is not available"), "no ROCm SMI: unavailable (%s)",
       err.text);
    setenv("GPURUN_ROCM_SMI_LIBRARY", lib, 1);
    setenv("FAKE_RSMI_DEVICES", "0000:03:00.0,0000:43:00.0", 1);
    setenv("FAKE_RSMI_PARTITIONS", "4", 1);
    setenv("FAKE_RSMI_POWER_W", "250", 1);
    gpurun_error_clear(&err);
    ok(p->available(&err) == 0, "fake ROCm SMI: available (%s)", err.text);

    /* By PCI address: the first partition of a partitioned GPU (the BDF id
     * has the partition in bits 31-28), and by index. */
    const char *ids[] = {"0000:43:00.0", "0000:03:00.0", "6"};
    gpurun_monitor_t *m = NULL;
    if (!ok(p->start(ids, 3, 0.02, &m, &err) == 0, "start on 3 GPUs (%s)", err.text))
        return;
    sleep_s(0.3);
    struct gpurun_monitor_result r = {0};
    p->stop(m, &r);
    ok(r.ngpus == 3 && r.gpus[0].index == 4 && r.gpus[1].index == 0 && r.gpus[2].index == 6,
       "PCI 43:00.0 is device 4, 03:00.0 device 0 (their first partitions), \"6\" device 6 (%d %d %d)",
       r.ngpus > 2 ? r.gpus[0].index : -1, r.ngpus > 2 ? r.gpus[1].index : -1, r.ngpus > 2 ? r.gpus[2].index : -1);
    ok(r.ngpus == 3 && !strcmp(r.gpus[0].pci, "0000:43:00.0") && !strcmp(r.gpus[2].pci, "0000:43:00.0"),
       "PCI addresses without the partition bits");
    ok(r.ngpus == 3 && r.gpus[0].energy_known && fabs(r.gpus[0].energy_j / r.seconds - 250) < 0.02 * 250,
       "energy from the counter (ticks of 15.3 uJ): 250 W within 2 %% (%.3f J in %.3f s)",
       r.ngpus ? r.gpus[0].energy_j : -1, r.seconds);
    ok(r.ngpus == 3 && r.gpus[1].power_n > 0 && near(r.gpus[1].power_mean_w, 250) &&
           near(r.gpus[1].util_mean, 40) && near(r.gpus[1].mem_mean_mib, 2048) && !strcmp(r.gpus[1].name, "AMD Instinct MI250X"),
       "power, busy, VRAM and name of device 0");
    gpurun_monitor_result_free(&r);

    /* Partitions numbered in the function bits: found as function 0. */
    setenv("FAKE_RSMI_DEVICES", "0000:03:00.2,0000:03:00.1", 1);
    setenv("FAKE_RSMI_PARTITIONS", "1", 1);
    const char *fn0[] = {"0000:03:00.0"}, *bad[] = {"0000:99:00.0"};
    m = NULL;
    ok(p->start(fn0, 1, 1, &m, &err) == 0 && p->stop(m, &r) == 0 && r.ngpus == 1 && r.gpus[0].index == 0,
       "partitions in the function bits: function 0 asked, the lowest device of that slot");
    gpurun_monitor_result_free(&r);
    ok(p->start(bad, 1, 1, &m, &err) < 0 && strstr(err.text, "ROCm SMI has no GPU 0000:99:00.0"),
       "an unknown PCI address is refused (%s)", err.text);

    /* No energy counter: a note; power still sampled. */
    setenv("FAKE_RSMI_NO_ENERGY", "1", 1);
    m = NULL;
    ok(p->start(fn0, 1, 0.02, &m, &err) == 0 && (sleep_s(0.05), p->stop(m, &r) == 0) && r.ngpus == 1 &&
           !r.gpus[0].energy_known && strstr(r.gpus[0].energy_why, "NOT_SUPPORTED") && r.gpus[0].power_n > 0,
       "no energy counter: energy unknown, with why (%s)", r.ngpus ? r.gpus[0].energy_why : "");
    gpurun_monitor_result_free(&r);
    unsetenv("FAKE_RSMI_NO_ENERGY");

    /* health for doctor */
    setenv("FAKE_RSMI_DEVICES", "0000:03:00.0,0000:43:00.0", 1);
    struct gpurun_gpu_health *h = NULL;
    int n = 0;
    char driver[64];
    ok(p->health(&h, &n, driver, sizeof driver, &err) == 0 && n == 2 && !strcmp(driver, "6.8.5") &&
           !strcmp(h[1].pci, "0000:43:00.0") && near(h[1].power_w, 250) && near(h[1].power_limit_w, 560) &&
           h[1].temperature_c == 55 && h[1].energy_counter && h[1].pcie_gen == -1,
       "health: PCI, driver, power and cap, junction temperature, energy counter");
    free(h);

    /* A run with GPUs of both vendors: each to its monitor; one vendor's
     * monitor missing leaves its GPUs in the array with why. */
    setenv("GPURUN_NVML_LIBRARY", nvml_lib, 1);
    setenv("FAKE_NVML_DEVICES", "0000:13:00.0", 1);
    const char *pcis[] = {"0000:13:00.0", "0000:43:00.0"};
    const char *vendors[] = {"nvidia", "amd"};
    char note[512] = "x";
    gpurun_monitor_session_t *s = gpurun_monitor_begin("auto", pcis, vendors, 2, note, sizeof note);
    json_t *j = gpurun_monitor_end(s);
    ok(s && note[0] == '\0' && json_array_size(j) == 2 &&
           !strcmp(json_string_value(json_object_get(json_array_get(j, 0), "monitor")), "nvml") &&
           !strcmp(json_string_value(json_object_get(json_array_get(j, 1), "monitor")), "rocm_smi") &&
           json_is_number(json_object_get(json_array_get(j, 1), "energy_J")),
       "NVIDIA and AMD GPUs: nvml and rocm_smi, each entry naming its monitor");
    json_decref(j);
    /* Vendor unknown (a rank step's helper): NVML does not have it, ROCm SMI does. */
    const char *amd_only[] = {"0000:43:00.0"};
    s = gpurun_monitor_begin("auto", amd_only, NULL, 1, note, sizeof note);
    j = gpurun_monitor_end(s);
    ok(json_array_size(j) == 1 && !strcmp(json_string_value(json_object_get(json_array_get(j, 0), "monitor")), "rocm_smi"),
       "vendor unknown: the monitor that has the GPU (rocm_smi after nvml)");
    json_decref(j);
    setenv("GPURUN_ROCM_SMI_LIBRARY", "/nonexistent/librocm_smi64.so", 1);
    s = gpurun_monitor_begin("auto", pcis, vendors, 2, note, sizeof note);
    j = gpurun_monitor_end(s);
    json_t *amd = json_array_get(j, 1);
    ok(s && json_array_size(j) == 2 && json_is_number(json_object_get(json_array_get(j, 0), "energy_J")) &&
           json_is_null(json_object_get(amd, "energy_J")) && json_is_null(json_object_get(amd, "power_mean_w")) &&
           strstr(json_string_value(json_object_get(amd, "energy_note")), "ROCm SMI is not available"),
       "no ROCm SMI beside NVML: the AMD GPU listed with null figures and why");
    json_decref(j);
    s = gpurun_monitor_begin("auto", amd_only, NULL, 1, note, sizeof note);
    ok(s == NULL && strstr(note, "NVML has no GPU 0000:43:00.0") && strstr(note, "ROCm SMI is not available"),
       "vendor unknown, neither has it: no session, both reasons (%s)", note);
    unsetenv("GPURUN_ROCM_SMI_LIBRARY");
    unsetenv("FAKE_RSMI_DEVICES");
    unsetenv("FAKE_RSMI_PARTITIONS");
    unsetenv("FAKE_RSMI_POWER_W");
}

int main(void)
{
    snprintf(tmp, sizeof tmp, "%s/gpurun-mon.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp)) {
        skip_all("cannot make a temp folder");
        return 0;
    }
    const gpurun_monitor_plugin_t *p = NULL;
    gpurun_error_t err = {0};
    ok(gpurun_monitor_find("nvml", &p, &err) == 0 && p && p->abi == GPURUN_MONITOR_ABI, "the nvml monitor is built in");
    ok(gpurun_monitor_find("nosuch", &p, &err) < 0 && strstr(err.text, "monitor_nosuch.so"),
       "an unknown monitor names where it looked");
    /* Monitors say what they handle (issue 41): their callers name none. */
    const gpurun_monitor_plugin_t *nv = NULL, *rs = NULL;
    ok(gpurun_monitor_find("nvml", &nv, &err) == 0 && gpurun_monitor_find("rocm_smi", &rs, &err) == 0 &&
           nv->vendors && !strcmp(nv->vendors[0], "nvidia") && !nv->vendors[1] && rs->vendors &&
           !strcmp(rs->vendors[0], "amd") && !rs->vendors[1] && !strcmp(nv->library_env, "GPURUN_NVML_LIBRARY") &&
           !strcmp(rs->library_env, "GPURUN_ROCM_SMI_LIBRARY"),
       "each built-in monitor names its vendors and its library's variable");
    ok(!strcmp(gpurun_monitor_builtin_name(0), "nvml") && !strcmp(gpurun_monitor_builtin_name(1), "rocm_smi") &&
           !gpurun_monitor_builtin_name(2),
       "the built-in monitors, in the order auto tries them");
    ok(gpurun_monitor_find("nosuch", &p, &err) < 0 && strstr(err.text, "built in are nvml and rocm_smi"),
       "an unknown monitor's message lists the built-in ones, from the list ('%s')", err.text);
    gpurun_monitor_find("nvml", &p, &err);
    test_shared_objects();
    test_missing(p);
    const char *lib = fake_library();
    if (lib) {
        test_sampling(p, lib);
        test_health(p);
        test_rocm_smi(lib);
    } else {
        skip("no fake NVML: no C compiler to build tests/fake_nvml.c");
    }
    char path[512];
    snprintf(path, sizeof path, "%s/libnvidia-ml.so.1", tmp);
    unlink(path);
    rmdir(tmp);
    return done_testing();
}
