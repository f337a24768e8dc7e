/* SPDX-License-Identifier: BSD-3-Clause */
/* Measured energy (energy.h): RAPL counter wrap arithmetic, a fake powercap
 * tree read under a root prefix (zones kept and skipped, a file that is no
 * counter, a symlink in place of energy_uj), a host's energy JSON and the
 * record's totals, the units of work of throughput figures and energy per
 * unit. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "energy.h"
#include "slurm/slurm_common.h" /* the Slurm plugin's sacct and slurm.conf readers */
#include "tap.h"

static char tmpdir[] = "/tmp/gpurun-test-energy.XXXXXX";

static void put(const char *zone, const char *file, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/sys/class/powercap/%s", tmpdir, zone);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", p);
    if (system(cmd) != 0)
        abort();
    snprintf(p + strlen(p), sizeof p - strlen(p), "/%s", file);
    FILE *f = fopen(p, "w");
    if (!f)
        abort();
    fputs(text, f);
    fclose(f);
}

static bool near(double got, double want)
{
    return fabs(got - want) <= 1e-9 * (fabs(want) + 1);
}

static void test_delta(void)
{
    const uint64_t max = 262143328850ULL; /* a real package's max_energy_range_uj */
    is_int(gpurun_energy_counter_delta(100, 250, max), 150, "no wrap: end - start");
    ok(gpurun_energy_counter_delta(max - 1000, 500, max) == 1500, "one wrap: (max - start) + end");
    ok(gpurun_energy_counter_delta(max, 0, max) == 0, "at max, then 0: the one-unit step is not counted");
    is_int(gpurun_energy_counter_delta(500, 100, 0), 0, "an end below the start without a max: 0, not huge");
    is_int(gpurun_energy_counter_delta(5000, 100, 1000), 0, "a start above max (a wrong max): 0");
    ok(gpurun_energy_counter_delta(0, UINT64_MAX, 0) == UINT64_MAX, "the whole u64 range without a wrap");
}

static void test_read(void)
{
    put("intel-rapl:0", "name", "package-0\n");
    put("intel-rapl:0", "energy_uj", "999000000\n");
    put("intel-rapl:0", "max_energy_range_uj", "1000000000\n");
    put("intel-rapl:0:0", "name", "core\n");
    put("intel-rapl:0:0", "energy_uj", "1\n");
    put("intel-rapl:0:1", "name", "dram\n");
    put("intel-rapl:0:1", "energy_uj", "5\n");
    put("intel-rapl:1", "name", "package-1\n");
    put("intel-rapl:1", "energy_uj", "12abc\n");
    put("intel-rapl-mmio:0", "name", "package-0\n");
    put("intel-rapl-mmio:0", "energy_uj", "7\n");
    put("intel-rapl:2", "name", "package-2\n");
    char target[600], link[600];
    snprintf(target, sizeof target, "%s/secret", tmpdir);
    snprintf(link, sizeof link, "%s/sys/class/powercap/intel-rapl:2/energy_uj", tmpdir);
    FILE *f = fopen(target, "w");
    fputs("42\n", f);
    fclose(f);
    ok(symlink(target, link) == 0, "(a symlink as intel-rapl:2/energy_uj)");

    struct gpurun_rapl a, b;
    gpurun_rapl_read_at(tmpdir, &a);
    is_int(a.n, 4, "package-0, dram, package-1, package-2: core and the MMIO copy are not read");
    is_str(a.d[0].zone, "intel-rapl:0", "zones in name order");
    is_str(a.d[1].zone, "intel-rapl:0:1", "... the DRAM of package 0 next");
    is_str(a.d[1].kind, "dram", "... of kind dram");
    ok(a.d[0].ok && a.d[0].uj == 999000000 && a.d[0].max_uj == 1000000000, "package-0's counter and range");
    ok(!a.d[2].ok && strstr(a.d[2].why, "intel-rapl:1/energy_uj: not a counter"), "'12abc' is no counter: %s",
       a.d[2].why);
    ok(!a.d[3].ok && strstr(a.d[3].why, "intel-rapl:2/energy_uj"), "a symlink is not followed: %s", a.d[3].why);

    put("intel-rapl:0", "energy_uj", "2000000\n");
    put("intel-rapl:0:1", "energy_uj", "1000005\n");
    gpurun_rapl_read_at(tmpdir, &b);
    b.t = a.t + 2.0; /* two seconds, for the mean power */
    json_t *gpus = json_loads("[{\"pci\": \"0000:13:00.0\", \"index\": 0, \"name\": \"X\", \"energy_J\": 500.0,"
                              " \"power_mean_w\": 240, \"power_peak_w\": 300},"
                              " {\"pci\": \"0000:15:00.0\", \"index\": 1, \"name\": \"Y\", \"energy_J\": null,"
                              " \"power_mean_w\": 100, \"power_peak_w\": 150},"
                              " {\"pci\": \"0000:16:00.0\", \"index\": 2, \"name\": \"Z\", \"energy_J\": null,"
                              " \"power_mean_w\": null, \"energy_note\": \"not supported\"}]",
                              0, NULL);
    json_t *h = gpurun_energy_host_json("h1", &a, &b, gpus, "");
    json_t *dev = json_object_get(h, "devices");
    is_int(json_array_size(dev), 4, "devices: package-0, dram, 2 GPUs");
    ok(near(json_number_value(json_object_get(json_array_get(dev, 0), "J")), 3.0), "package-0: 3 J across the wrap");
    ok(near(json_number_value(json_object_get(json_array_get(dev, 0), "mean_power_W")), 1.5), "... 1.5 W over 2 s");
    ok(near(json_number_value(json_object_get(json_array_get(dev, 1), "J")), 1.0), "dram: 1 J");
    /* Counters read under another root are a test's, never RAPL's (issue 37, item 5). */
    for (int i = 0; i < 2; i++) {
        json_t *d = json_array_get(dev, (size_t)i);
        const char *note = json_string_value(json_object_get(d, "note"));
        ok(!strcmp(json_string_value(json_object_get(d, "source")), "test") && note &&
               !strncmp(note, "test hook root=", 15) && strstr(note, ": measured as rapl, "),
           "%s under another root: source test, the note says so: %s",
           json_string_value(json_object_get(d, "name")), note ? note : "(none)");
    }
    is_str(json_string_value(json_object_get(json_array_get(dev, 3), "source")), "nvml-power-samples",
           "a GPU without a counter: its samples' mean times the time");
    ok(near(json_number_value(json_object_get(json_array_get(dev, 3), "J")), 200.0), "... 100 W x 2 s");
    json_t *miss = json_object_get(h, "missing");
    is_int(json_array_size(miss), 3, "missing: package-1, package-2, GPU 2");
    ok(strstr(json_string_value(json_object_get(json_array_get(miss, 2), "why")), "not supported") != NULL,
       "... the GPU's note is kept");

    json_t *hosts = json_array();
    json_array_append_new(hosts, h);
    struct gpurun_energy_accounted acc = {.manager = "slurm", .joules = -1, .note = "why not"};
    json_t *e = gpurun_energy_json(hosts, 0.5, 300, &acc, 1);
    ok(near(json_number_value(json_object_get(e, "gpu_J")), 700) && near(json_number_value(json_object_get(e, "cpu_J")), 3) &&
           near(json_number_value(json_object_get(e, "dram_J")), 1) &&
           near(json_number_value(json_object_get(e, "total_J")), 704),
       "totals by kind: GPU 700, CPU 3, DRAM 1, all 704 J");
    ok(near(json_number_value(json_object_get(e, "mean_power_W")), 352), "mean power: 704 J / 2 s");
    ok(near(json_number_value(json_object_get(e, "kwh")), 704 / 3.6e6) &&
           near(json_number_value(json_object_get(e, "cost")), 0.5 * 704 / 3.6e6),
       "kWh and cost at 0.5 per kWh");
    ok(fabs(json_number_value(json_object_get(e, "co2_g")) - 300 * 704 / 3.6e6) < 0.001, "CO2 at 300 g per kWh");
    ok(json_is_null(json_object_get(e, "slurm_consumed_J")) &&
           !strcmp(json_string_value(json_object_get(e, "slurm_note")), "why not"),
       "slurm_consumed_J null, with why");
    json_decref(e);
    e = gpurun_energy_json(json_array(), -1, -1, NULL, 0);
    ok(json_is_null(json_object_get(e, "total_J")) && json_is_null(json_object_get(e, "cost")) &&
           json_is_null(json_object_get(e, "mean_power_W")),
       "nothing measured: null, never 0");
    json_decref(e);
    json_decref(gpus);

    /* GPURUN_TEST_SYSFS_ROOT: the snapshot names it; a GPU a test library
     * read (the monitor's test_hook) is marked the same way. */
    setenv(GPURUN_ENV_TEST_SYSFS_ROOT, tmpdir, 1);
    struct gpurun_rapl c;
    gpurun_rapl_read(&c);
    char want[600];
    snprintf(want, sizeof want, "GPURUN_TEST_SYSFS_ROOT=%s", tmpdir);
    ok(c.n == 4 && !strcmp(c.hook, want), "read under $GPURUN_TEST_SYSFS_ROOT: the snapshot's hook: %s", c.hook);
    unsetenv(GPURUN_ENV_TEST_SYSFS_ROOT);
    gpurun_rapl_read(&c);
    is_str(c.hook, "", "... without it: none (this host's /sys)");
    json_t *tg = json_loads("[{\"pci\": \"0000:13:00.0\", \"index\": 0, \"name\": \"X\", \"energy_J\": 5.0,"
                            " \"monitor\": \"nvml\", \"test_hook\": \"GPURUN_NVML_LIBRARY=/t/fake.so\"}]",
                            0, NULL);
    h = gpurun_energy_host_json("h1", NULL, NULL, tg, "");
    json_t *g0 = json_array_get(json_object_get(h, "devices"), 0);
    ok(!strcmp(json_string_value(json_object_get(g0, "source")), "test") &&
           !strcmp(json_string_value(json_object_get(g0, "note")),
                   "test hook GPURUN_NVML_LIBRARY=/t/fake.so: measured as nvml, from what the user chose, not this "
                   "host's own"),
       "a GPU read through GPURUN_NVML_LIBRARY: source test, the note names it");
    json_decref(h);
    json_decref(tg);

    /* A GPU's own measured time (its monitor's) is kept, and a GPU without
     * a counter has its samples' mean times that time, not the host's. */
    json_t *own = json_loads("[{\"pci\": \"0000:13:00.0\", \"name\": \"X\", \"energy_J\": 390.0, \"measured_s\": 1.95},"
                             " {\"pci\": \"0000:15:00.0\", \"name\": \"Y\", \"energy_J\": null,"
                             " \"power_mean_w\": 100, \"measured_s\": 1.9},"
                             " {\"pci\": \"0000:16:00.0\", \"name\": \"Z\", \"energy_J\": 2.0}]",
                             0, NULL);
    h = gpurun_energy_host_json("h1", &a, &b, own, "");
    dev = json_object_get(h, "devices");
    json_t *gx = NULL, *gy = NULL, *gz = NULL;
    size_t k;
    json_t *d;
    json_array_foreach(dev, k, d) {
        const char *nm = json_string_value(json_object_get(d, "name"));
        if (nm && strstr(nm, "(0000:13:00.0)"))
            gx = d;
        else if (nm && strstr(nm, "(0000:15:00.0)"))
            gy = d;
        else if (nm && strstr(nm, "(0000:16:00.0)"))
            gz = d;
    }
    ok(gx && near(json_number_value(json_object_get(gx, "measured_s")), 1.95) &&
           near(json_number_value(json_object_get(gx, "J")), 390.0),
       "a GPU's own measured time is kept beside its counter's energy (1.95 s, 390 J)");
    ok(gy && near(json_number_value(json_object_get(gy, "J")), 190.0) &&
           near(json_number_value(json_object_get(gy, "measured_s")), 1.9),
       "... a GPU without a counter: its samples' mean times its own time (100 W x 1.9 s), not the host's 2 s");
    ok(gz && json_object_get(gz, "measured_s") == NULL, "... a helper that gave no time: none, never the host's");
    json_decref(h);
    json_decref(own);

    struct gpurun_rapl none;
    char empty[600];
    snprintf(empty, sizeof empty, "%s/none", tmpdir);
    gpurun_rapl_read_at(empty, &none);
    ok(none.n == 0 && strstr(none.why, "no RAPL"), "no powercap folder: why: %s", none.why);
}

static void test_units(void)
{
    char w[48];
    double s;
    ok(gpurun_energy_unit_of("ns/day", w, sizeof w, &s) && !strcmp(w, "ns") && s == 86400, "ns/day: ns, a day");
    ok(gpurun_energy_unit_of("GFLOP/s", w, sizeof w, &s) && !strcmp(w, "GFLOP") && s == 1, "GFLOP/s: GFLOP");
    ok(gpurun_energy_unit_of("GFlops", w, sizeof w, &s) && !strcmp(w, "GFLOP") && s == 1, "GFlops: GFLOP");
    ok(gpurun_energy_unit_of("images/s", w, sizeof w, &s) && !strcmp(w, "image"), "images/s: image");
    ok(gpurun_energy_unit_of("timesteps/s", w, sizeof w, &s) && !strcmp(w, "timestep"), "timesteps/s: timestep");
    ok(gpurun_energy_unit_of("katom-step/s", w, sizeof w, &s) && !strcmp(w, "katom-step"), "katom-step/s");
    ok(gpurun_energy_unit_of("GB/s", w, sizeof w, &s) && !strcmp(w, "GB"), "GB/s: GB");
    ok(!gpurun_energy_unit_of("s", w, sizeof w, &s) && !gpurun_energy_unit_of("%", w, sizeof w, &s) &&
           !gpurun_energy_unit_of("hour/ns", w, sizeof w, &s) && !gpurun_energy_unit_of("", w, sizeof w, &s) &&
           !gpurun_energy_unit_of(NULL, w, sizeof w, &s),
       "s, %%, hour/ns, empty: no rate of work");

    json_t *foms = json_loads("{\"ns_per_day\": {\"value\": 100, \"units\": \"ns/day\", \"better\": \"higher\"},"
                              " \"gflops\": {\"value\": 400, \"units\": \"GFLOP/s\", \"better\": \"higher\"},"
                              " \"hour_per_ns\": {\"value\": 0.24, \"units\": \"hour/ns\", \"better\": \"lower\"},"
                              " \"time\": {\"value\": 3, \"units\": \"s\", \"better\": \"lower\"},"
                              " \"none\": {\"value\": null, \"units\": \"ns/day\", \"better\": \"higher\"}}",
                              0, NULL);
    gpurun_energy_per_unit(foms, 300);
    json_t *u = json_object_get(json_object_get(foms, "ns_per_day"), "energy_per_unit");
    ok(near(json_number_value(json_object_get(u, "value")), 300.0 * 86400 / 100) &&
           !strcmp(json_string_value(json_object_get(u, "units")), "J/ns"),
       "100 ns/day at 300 W: 259200 J/ns");
    u = json_object_get(json_object_get(foms, "gflops"), "energy_per_unit");
    ok(near(json_number_value(json_object_get(u, "value")), 0.75) &&
           !strcmp(json_string_value(json_object_get(u, "units")), "J/GFLOP"),
       "400 GFLOP/s at 300 W: 0.75 J/GFLOP");
    ok(!json_object_get(json_object_get(foms, "hour_per_ns"), "energy_per_unit") &&
           !json_object_get(json_object_get(foms, "time"), "energy_per_unit") &&
           !json_object_get(json_object_get(foms, "none"), "energy_per_unit"),
       "none for hour/ns, s, or a figure not found");
    json_decref(foms);
}

/* Slurm's ConsumedEnergy: slurm.conf's AcctGatherEnergyType and sacct's
 * output (cli-energy.sh runs a fake sacct; cli-slurm.sh the real cluster). */
static void test_slurm(void)
{
    ok(gpurun_slurm_conf_gathers("ClusterName=c\nAcctGatherEnergyType=acct_gather_energy/rapl\n") == 1,
       "slurm.conf: acct_gather_energy/rapl gathers");
    ok(gpurun_slurm_conf_gathers("  acctgatherenergytype = acct_gather_energy/ipmi   # BMC\r\n") == 1,
       "... any case, spaces, a comment");
    ok(gpurun_slurm_conf_gathers("ClusterName=c\nSlurmctldPort=1\n") == 0, "none said: Slurm's default, none");
    ok(gpurun_slurm_conf_gathers("AcctGatherEnergyType=acct_gather_energy/none\n") == 0 &&
           gpurun_slurm_conf_gathers("AcctGatherEnergyType=None") == 0,
       "acct_gather_energy/none, None: none");
    ok(gpurun_slurm_conf_gathers("#AcctGatherEnergyType=acct_gather_energy/rapl\n") == 0,
       "a line commented out: none");
    ok(gpurun_slurm_conf_gathers("AcctGatherEnergyType=acct_gather_energy/rapl\n"
                                        "AcctGatherEnergyType=acct_gather_energy/none\n") == 0,
       "the last setting wins");
    ok(gpurun_slurm_conf_gathers("Include /etc/slurm/energy.conf\n") == -1, "an Include: unknown");
    ok(gpurun_slurm_conf_gathers("") == 0, "an empty file: none");

    char why[256] = "";
    ok(gpurun_slurm_sacct_parse("123456\n", why, sizeof why) == 123456, "sacct: 123456 J");
    ok(gpurun_slurm_sacct_parse("  98765 \n4|x\n", why, sizeof why) == 98765, "... the first line, trimmed");
    why[0] = '\0';
    ok(gpurun_slurm_sacct_parse("", why, sizeof why) < 0 && strstr(why, "no ConsumedEnergy"), "empty: none (%s)",
       why);
    why[0] = '\0';
    ok(gpurun_slurm_sacct_parse("0\n", why, sizeof why) < 0 && *why, "0: none (%s)", why);
    why[0] = '\0';
    ok(gpurun_slurm_sacct_parse("18446744073709551614\n", why, sizeof why) < 0 && strstr(why, "unset"),
       "Slurm's no-value: none (%s)", why);
    why[0] = '\0';
    ok(gpurun_slurm_sacct_parse("12.5e3\n", why, sizeof why) < 0 && strstr(why, "no number"), "not digits: none (%s)",
       why);
    why[0] = '\0';
    ok(gpurun_slurm_sacct_parse("sacct: error: \x1b[31mdown\n", why, sizeof why) < 0 && !strchr(why, '\x1b'),
       "an error line: none, control characters not kept");
    ok(gpurun_slurm_sacct_parse(NULL, why, sizeof why) < 0, "NULL: none");
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        skip_all("cannot make a temporary folder");
        return 0;
    }
    test_delta();
    test_read();
    test_units();
    test_slurm();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        diag("could not remove %s", tmpdir);
    return done_testing();
}
