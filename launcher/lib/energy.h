/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_ENERGY_H
#define GPURUN_ENERGY_H

/* Measured energy of a run (SPEC §7 `energy`): the CPU packages' and DRAM's
 * RAPL counters in powercap sysfs, read at the start and the end of a run,
 * the GPUs' from the monitor (NVML's total-energy counter), and what the
 * record makes of them: totals, kWh, cost and CO2 at a site's prices, and
 * energy per unit of work beside each throughput figure.
 *
 * Reading energy never fails a run: a counter that cannot be read is a
 * "missing" note saying which file and why. */

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

/* A prefix put before /sys/class/powercap, FOR TESTS ONLY: they build a fake
 * powercap tree there.  Any user can set it and put any energy in their own
 * records, so what is read under it is never said to be RAPL's: its devices'
 * source is "test" and their note names the variable (as for a GPU read
 * through GPURUN_NVML_LIBRARY or GPURUN_ROCM_SMI_LIBRARY). */
#define GPURUN_ENV_TEST_SYSFS_ROOT "GPURUN_TEST_SYSFS_ROOT"
#define GPURUN_ENERGY_SOURCE_TEST "test"
#define GPURUN_POWERCAP_DIR "/sys/class/powercap"

#define GPURUN_RAPL_MAX 32

/* One RAPL domain: a package (kind "cpu") or its DRAM (kind "dram"). */
struct gpurun_rapl_domain {
    char zone[64];   /* "intel-rapl:0", "intel-rapl:0:1" */
    char name[64];   /* powercap's name: "package-0", "dram" */
    const char *kind; /* "cpu" | "dram" */
    uint64_t uj;     /* energy_uj */
    uint64_t max_uj; /* max_energy_range_uj; 0 unknown */
    bool ok;         /* uj was read */
    bool denied;     /* not ok because energy_uj is not ours to read (EACCES, EPERM) */
    char why[768];   /* when not ok: which file and why */
};

struct gpurun_rapl {
    int n;
    struct gpurun_rapl_domain d[GPURUN_RAPL_MAX];
    char why[384]; /* no powercap zone at all: why ("" when some) */
    double t;      /* CLOCK_MONOTONIC seconds of the reading */
    char hook[320]; /* read elsewhere than /sys: "GPURUN_TEST_SYSFS_ROOT=/tmp/x" (printable ASCII); "" when not */
};

/* Reads every package and DRAM domain; never fails (what cannot be read is
 * said in the domain's or the snapshot's why).  Under $GPURUN_TEST_SYSFS_ROOT
 * (or a `root` below) the snapshot's hook says so. */
void gpurun_rapl_read(struct gpurun_rapl *r);
/* The same under the folder `root` (doctor --root; NULL: as above). */
void gpurun_rapl_read_at(const char *root, struct gpurun_rapl *r);

/* How much a counter advanced from `start` to `end`, counting one wrap at
 * `max` (max_energy_range_uj: the counter runs 0..max and wraps to 0); an
 * end below the start without a known max is 0 (unknown, never negative). */
uint64_t gpurun_energy_counter_delta(uint64_t start, uint64_t end, uint64_t max);

/* One host's part of the record's energy.hosts: {"host", "devices": [...],
 * "missing": [...], "measured_s"} from two RAPL snapshots (start, end:
 * NULL end = none) and the monitor's gpus_monitor array (may be NULL; each
 * GPU's "energy_J", "power_mean_w", "power_peak_w"), with `gpu_why` for
 * GPUs that were not measured at all ("" when none).  A device a test hook
 * gave (the snapshot's hook, a GPU's GPURUN_REC_TEST_HOOK) has source
 * "test" and a "note": "test hook GPURUN_TEST_SYSFS_ROOT=/tmp/x: measured as
 * rapl, from what the user chose, not this host's own". */
json_t *gpurun_energy_host_json(const char *host, const struct gpurun_rapl *start, const struct gpurun_rapl *end,
                                json_t *gpus_monitor, const char *gpu_why);

/* A resource manager's own figure of the run's energy (its accounting, as
 * its plugin's energy() gave it; rm.h). */
struct gpurun_energy_accounted {
    const char *manager; /* its name: the record's key "NAME_consumed_J" */
    double joules;       /* < 0: none (null) */
    char note[768];      /* where it came from, or why none; "": no note */
};

/* The record's `energy` from the hosts' parts: totals by kind, mean power
 * (total over the longest host's measured time), the peak of the GPUs'
 * power samples, kWh, cost at price_per_kwh and CO2 at grams_co2_per_kwh
 * (< 0: the site gives none: null), and each of `acc`'s managers' own
 * figure (NAME_consumed_J, null when none, with NAME_note).  Takes `hosts`. */
json_t *gpurun_energy_json(json_t *hosts, double price_per_kwh, double grams_co2_per_kwh,
                           const struct gpurun_energy_accounted *acc, size_t nacc);

/* The unit of work of a throughput figure's units and how many seconds its
 * time unit has: "ns/day" -> "ns", 86400; "GFLOP/s" or "GFlops" -> "GFLOP",
 * 1; "images/s" -> "image", 1; "timesteps/s" -> "timestep", 1.  False for
 * units that are no rate of work (s, %, ...). */
bool gpurun_energy_unit_of(const char *units, char *work, size_t worklen, double *per_s);

/* Adds "energy_per_unit": {"value": J per unit, "units": "J/ns"} to each
 * throughput figure of the record's `foms` object (better = higher, a rate
 * unit above, a positive value), from the run's mean power: J per unit =
 * mean_power_W / (value / per_s), which is total_J over the work done if
 * the figure held for the whole measured time (start-up included, so it is
 * the run's cost, not the best loop's).  Nothing when mean_power_W <= 0. */
void gpurun_energy_per_unit(json_t *foms, double mean_power_w);

/* One line on a record's (or its summary's) energy, for `gpurun results`:
 * "405.6 J (GPU 401.6, CPU 3, DRAM 1), mean 404 W, 0.000113 kWh, 3.4e-05
 * EUR, 0.045 g CO2; value 6.97e+05 J/ns"; when it has an energy section
 * that measured nothing, gpurun_energy_unmeasured's sentence; NULL when it
 * has none (a record before issue 31).  malloc()ed; the caller makes it
 * printable. */
char *gpurun_energy_text(const json_t *run);

/* For a record's `energy` that measured nothing (total_J null): "not
 * measured here: cpu: WHY; gpu: WHY" from its hosts' missing notes, each
 * reason once, at most GPURUN_ENERGY_REASONS_SHOWN of them (then how many
 * more the record has); true.  False (buf "") when `energy` is no object
 * or measured something. */
#define GPURUN_ENERGY_REASONS_SHOWN 3
bool gpurun_energy_unmeasured(const json_t *energy, char *buf, size_t len);

/* What doctor says of RAPL here (under `root`: NULL as gpurun_rapl_read). */
enum gpurun_rapl_state {
    GPURUN_RAPL_READABLE, /* every package and DRAM domain reads */
    GPURUN_RAPL_ABSENT,   /* no powercap folder, or no package or DRAM zone in it: a VM, a CPU without RAPL */
    GPURUN_RAPL_DENIED,   /* some counter is root-only (EACCES/EPERM): an administrator can open it */
    GPURUN_RAPL_BROKEN,   /* some counter cannot be read for another reason */
};
/* A sentence for doctor: readable domains, or why not; the state says
 * which fix applies. */
void gpurun_energy_doctor(const char *root, char *line, size_t len, enum gpurun_rapl_state *state);
/* Whether any RAPL package or DRAM counter reads here (under `root`: NULL
 * as gpurun_rapl_read); when none, why in `why`. */
bool gpurun_rapl_any_readable(const char *root, char *why, size_t len);


#endif
