/* SPDX-License-Identifier: BSD-3-Clause */
/* A run's conditions (launcher/lib/conditions.c): /proc's texts, the
 * arithmetic of others' share, the verdict with its threshold and floor,
 * the head's view of many hosts, and the warning's words. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conditions.h"
#include "record.h"
#include "tap.h"

static void test_cores(void)
{
    struct gpurun_cond_cores *c = calloc(1, sizeof *c);
    ok(gpurun_cond_cores_add(c, "0-3,8") == 0 && c->n == 5, "cores: 0-3,8 is five");
    ok(gpurun_cond_cores_add(c, "2,9") == 0 && c->n == 6, "cores: a core named twice counts once");
    char *t = gpurun_cond_cores_text(c);
    is_str(t, "0-3,8-9", "cores: written back as a list");
    free(t);
    ok(gpurun_cond_cores_add(c, "x") < 0 && gpurun_cond_cores_add(c, "3-1") < 0, "cores: not a list refused");
    ok(gpurun_cond_cores_add(c, "100000") == 0 && c->n == 6, "cores: past the bound ignored, not written");
    free(c);
}

static void test_proc_texts(void)
{
    struct gpurun_cond_cores *c = calloc(1, sizeof *c);
    gpurun_cond_cores_add(c, "0,2");
    const char *stat = "cpu  900 0 900 900 0 0 0 0 0 0\n"
                       "cpu0 100 10 50 800 40 5 5 0 0 0\n"
                       "cpu1 999 999 999 999 999 999 999 999 0 0\n"
                       "cpu2 200 0 100 100 0 0 0 20 0 0\n"
                       "intr 1 2 3\n";
    struct gpurun_cond_ticks t;
    ok(gpurun_cond_stat_ticks(stat, c, &t) == 2, "/proc/stat: the two run cores found");
    ok(t.busy == 170 + 320 && t.total == 170 + 840 + 320 + 100,
       "/proc/stat: busy = user nice system irq softirq steal, total adds idle and iowait (%llu, %llu)", t.busy,
       t.total);
    struct gpurun_cond_proc p;
    const char *ps = "1234 (a (b) c) R 77 1234 1234 0 -1 4194304 100 0 0 0 500 250 30 20 20 0 1 0 9000 1000 100 "
                     "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 2 0 0 0 0 0";
    ok(gpurun_cond_proc_stat(ps, &p) == 0, "/proc/PID/stat read");
    ok(p.pid == 1234 && p.ppid == 77 && !strcmp(p.comm, "a (b) c"), "... pid, parent, a name with parentheses");
    ok(p.utime == 500 && p.stime == 250 && p.cutime == 30 && p.cstime == 20 && p.starttime == 9000 &&
           p.processor == 2,
       "... times, start and the CPU it ran on last (%llu %llu %d)", p.utime, p.stime, p.processor);
    ok(gpurun_cond_proc_stat("12 (short) S 1 2", &p) < 0, "... a cut line refused");
    ok(fabs(gpurun_cond_load1("6.52 3.10 1.00 3/400 999\n") - 6.52) < 1e-9 && isnan(gpurun_cond_load1("x")),
       "/proc/loadavg: load1");
    ok(gpurun_cond_mem_available_mib("MemTotal: 1000 kB\nMemAvailable:   2097152 kB\n") == 2048 &&
           gpurun_cond_mem_available_mib("MemTotal: 1 kB\n") == -1,
       "/proc/meminfo: MemAvailable in MiB, -1 when absent");
    const char *info = "processor\t: 0\ncpu MHz\t\t: 1000.0\n\nprocessor\t: 1\ncpu MHz\t\t: 9999.0\n\n"
                       "processor\t: 2\ncpu MHz\t\t: 2000.0\n";
    ok(fabs(gpurun_cond_cpuinfo_mhz(info, c) - 1500) < 1e-9, "/proc/cpuinfo: the run cores' mean MHz");
    free(c);
}

static void test_threshold(void)
{
    double s;
    gpurun_error_t err = {0};
    ok(gpurun_cond_threshold(NULL, &s, &err) == 0 && fabs(s - 0.10) < 1e-12, "threshold: default 10%%");
    ok(gpurun_cond_threshold("off", &s, &err) == 0 && s < 0, "threshold: off");
    ok(gpurun_cond_threshold("20%", &s, &err) == 0 && fabs(s - 0.2) < 1e-12, "threshold: 20%%");
    ok(gpurun_cond_threshold("0.3", &s, &err) == 0 && fabs(s - 0.3) < 1e-12, "threshold: 0.3");
    ok(gpurun_cond_threshold("2", &s, &err) < 0 && strstr(err.text, "GPURUN_BUSY_SHARE=2"),
       "threshold: over 1 refused, naming the knob (%s)", err.text);
    ok(gpurun_cond_threshold("lots", &s, &err) < 0, "threshold: words refused");
    ok(!gpurun_cond_cpu_over(0.3, 0.6, 0.1), "floor: 50%% of a 0.3-second run is not busy");
    ok(gpurun_cond_cpu_over(1.0, 4.0, 0.1), "25%% of 4 core-seconds, 1 of them others': over 10%%");
    ok(!gpurun_cond_cpu_over(1.0, 20.0, 0.1), "5%% is not over 10%%");
    ok(gpurun_cond_cpu_over(2.0, 20.0, 0.1), "10%% exactly is");
    ok(!gpurun_cond_cpu_over(9.0, 10.0, -1), "off: never over");
    ok(gpurun_cond_share(5, 4) == 1 && gpurun_cond_share(-1, 4) == 0 && gpurun_cond_share(1, 0) == 0,
       "share: within 0..1");
}

static json_t *host(double foreign, double cores, const char *stress)
{
    struct gpurun_cond_host h = {.cores = "0-1", .seconds = cores / 2, .foreign_s = foreign, .own_s = 1,
                                 .cores_s = cores, .load1_max = 2.5, .mhz_mean = 2400, .mhz_min = 2300,
                                 .mem_min_mib = 1000, .throttle_events = -1, .samples = 3, .final = true};
    json_t *j = gpurun_cond_host_json(&h);
    json_t *named = json_array();
    if (stress)
        json_array_append_new(named, json_pack("{s:s, s:i, s:s, s:i, s:f}", "name", stress, "pid", 1234, "user",
                                               "alice", "cpu", 0, "share", 0.95));
    json_object_set_new(j, GPURUN_REC_COND_FOREIGN, named);
    json_object_set_new(j, GPURUN_REC_COND_GPU_OTHERS, json_array());
    json_object_set_new(j, GPURUN_REC_COND_GPUS, json_array());
    return j;
}

static void test_verdict(void)
{
    char why[512];
    json_t *h = host(2.0, 4.0, "stress");
    ok(json_is_null(json_object_get(h, GPURUN_REC_COND_THROTTLED)), "host: throttling unknown is null");
    ok(fabs(json_real_value(json_object_get(h, GPURUN_REC_COND_FOREIGN_CPU_SHARE)) - 0.5) < 1e-9, "host: share 0.5");
    ok(gpurun_cond_host_busy(h, 0.1, why, sizeof why), "busy at 50%% over 10%%");
    is_str(why, "other processes took 50% of its cores (stress[1234] 95% of cpu 0)", "... why names who and how much");
    ok(!gpurun_cond_host_busy(h, 0.6, why, sizeof why) && !why[0], "not busy under a 60%% threshold");
    ok(!gpurun_cond_host_busy(h, -1, why, sizeof why), "off: no verdict");
    json_decref(h);
    h = host(0, 4.0, NULL);
    json_array_append_new(json_object_get(h, GPURUN_REC_COND_GPU_OTHERS),
                          json_pack("{s:i, s:s, s:s, s:s}", "pid", 77, "name", "python", "user", "bob", "gpu",
                                    "0000:13:00.0"));
    ok(gpurun_cond_host_busy(h, 0.1, why, sizeof why) && strstr(why, "other processes used its GPUs (python[77] on GPU 0000:13:00.0)"),
       "busy: another process on its GPU (%s)", why);
    json_decref(h);
    h = host(0, 4.0, NULL);
    json_object_set_new(h, GPURUN_REC_COND_THROTTLED, json_true());
    json_object_set_new(h, GPURUN_REC_COND_THROTTLE_EVENTS, json_integer(3));
    json_array_append_new(json_object_get(h, GPURUN_REC_COND_GPUS),
                          json_pack("{s:s, s:o}", "pci", "0000:13:00.0", "slowdown", gpurun_cond_gpu_reasons(0x40 | 0x4 | 0x1)));
    ok(gpurun_cond_host_busy(h, 0.1, why, sizeof why) && strstr(why, "thermally throttled (3 events)") &&
           strstr(why, "its GPUs were slowed down (idle, sw_power_cap, hw_thermal)"),
       "busy: CPU and GPU throttling (%s)", why);
    json_decref(h);
    json_t *r = gpurun_cond_gpu_reasons(0x40 | 0x8 | (1ULL << 40));
    char *t = json_dumps(r, JSON_COMPACT);
    is_str(t, "[\"hw_slowdown\",\"hw_thermal\",\"0x10000000000\"]", "GPU reasons by name, unknown bits as hex");
    free(t);
    json_decref(r);
}

static bool take(struct gpurun_cond_head *hd, const char *name, json_t *h, char **warning)
{
    json_object_set_new(h, "host", json_string(name));
    char *text = json_dumps(h, JSON_COMPACT);
    json_decref(h);
    bool got = gpurun_cond_head_take(hd, "R1", text, strlen(text), warning);
    free(text);
    return got;
}

static void test_head(void)
{
    struct gpurun_cond_head hd;
    gpurun_cond_head_init(&hd, 0.1);
    ok(!gpurun_cond_head_record(&hd), "head: no report, no conditions");
    char *w = NULL;
    ok(take(&hd, "n1", host(0.1, 4.0, NULL), &w) && !w, "head: a quiet host, no warning");
    ok(take(&hd, "n2", host(2.0, 4.0, "stress"), &w) && w, "head: a busy host, a warning");
    is_str(w, "run R1 is running busy on n2: other processes took 50% of its cores (stress[1234] 95% of cpu 0); "
              "figures are likely low", "... in those words");
    free(w);
    ok(take(&hd, "n2", host(3.0, 8.0, "stress"), &w) && !w, "head: said once per host");
    ok(!gpurun_cond_head_take(&hd, "R1", "{\"nohost\":1}", 12, &w) && !gpurun_cond_head_take(&hd, "R1", "[", 1, &w),
       "head: not a host's report, not taken");
    json_t *rec = gpurun_cond_head_record(&hd);
    ok(json_is_true(json_object_get(rec, GPURUN_REC_COND_BUSY)), "record: busy");
    is_str(json_string_value(json_object_get(rec, GPURUN_REC_COND_WHY)),
           "n2: other processes took 38% of its cores (stress[1234] 95% of cpu 0)", "record: why names the host");
    ok(fabs(json_real_value(json_object_get(rec, GPURUN_REC_COND_FOREIGN_CPU_SHARE)) - 0.375) < 1e-9,
       "record: the worst host's share");
    ok(json_real_value(json_object_get(rec, GPURUN_REC_COND_LOAD1)) == 2.5 &&
           json_real_value(json_object_get(rec, GPURUN_REC_COND_CPU_MHZ)) == 2400 &&
           json_is_null(json_object_get(rec, GPURUN_REC_COND_THROTTLED)) &&
           json_is_null(json_object_get(rec, GPURUN_REC_COND_GPU_THROTTLED)) &&
           json_integer_value(json_object_get(rec, GPURUN_REC_COND_GPU_OTHERS)) == 0 &&
           json_object_size(json_object_get(rec, GPURUN_REC_COND_HOSTS)) == 2,
       "record: load1, cpu_mhz, throttled unknown, no GPU read, no GPU others, both hosts");
    ok(json_is_false(json_object_get(json_object_get(json_object_get(rec, "hosts"), "n1"), "busy")),
       "record: the quiet host says busy false");
    json_decref(rec);
    char *end = gpurun_cond_head_end_text(&hd, "R1");
    is_str(end, "run R1 ran busy on n2: other processes took 38% of its cores (stress[1234] 95% of cpu 0); figures "
                "are likely low", "end: one line for the busy host");
    free(end);
    gpurun_cond_head_free(&hd);

    gpurun_cond_head_init(&hd, -1);
    ok(take(&hd, "n2", host(2.0, 4.0, "stress"), &w) && !w, "off: measured, no warning");
    rec = gpurun_cond_head_record(&hd);
    ok(json_is_null(json_object_get(rec, GPURUN_REC_COND_BUSY)) && json_is_null(json_object_get(rec, "busy_share")) &&
           json_real_value(json_object_get(rec, GPURUN_REC_COND_FOREIGN_CPU_SHARE)) == 0.5,
       "off: busy null, the share kept");
    json_decref(rec);
    ok(!gpurun_cond_head_end_text(&hd, "R1"), "off: nothing said at the end");
    gpurun_cond_head_free(&hd);
}

int main(void)
{
    test_cores();
    test_proc_texts();
    test_threshold();
    test_verdict();
    test_head();
    return done_testing();
}
