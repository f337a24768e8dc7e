#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Measured energy (issue 31): a run's record carries `energy` from a fake
# NVML whose GPUs draw a known power (FAKE_NVML_POWER_W) and a fake powercap
# tree (GPURUN_TEST_SYSFS_ROOT) whose counters the job itself moves, across
# a counter wrap; figures within 2 % of the truth, energy per unit of work,
# cost and CO2 from the site's prices; a counter root-only (as nobody), a
# GPU without an energy counter, no powercap at all, and a job stopped by
# SIGTERM still record what was used.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if [ -z "${FAKE_NVML:-}" ] || [ ! -r "$FAKE_NVML" ]; then
    FAKE_NVML=$TMP/libnvidia-ml.so.1
    ${CC:-cc} -std=c11 -D_GNU_SOURCE -shared -fPIC -o "$FAKE_NVML" "$top_srcdir/tests/fake_nvml.c" 2>/dev/null ||
        FAKE_NVML=
fi
if [ -z "$FAKE_NVML" ]; then
    echo "1..0 # SKIP no fake NVML (\$FAKE_NVML unset and no C compiler to build tests/fake_nvml.c)"
    exit 0
fi
command -v jq >/dev/null 2>&1 || { echo "1..0 # SKIP jq not found"; exit 0; }
chmod 755 "$TMP"
unset SLURM_JOB_ID

W=200 # watts per fake GPU
# The fixture's GPUs; the job's 2 GPUs are the first two.
GPUS=0000:13:00.0,0000:15:00.0,0000:83:00.0,0000:85:00.0
ROOT=$TMP/sysroot
PC=$ROOT/sys/class/powercap

# zone DIR NAME ENERGY [MAX]: one fake powercap zone.
zone() {
    mkdir -p "$PC/$1"
    echo "$2" >"$PC/$1/name"
    echo "$3" >"$PC/$1/energy_uj"
    [ -z "${4:-}" ] || echo "$4" >"$PC/$1/max_energy_range_uj"
    chmod 644 "$PC/$1/name" "$PC/$1/energy_uj"
}
# The package wraps: 999 J of a 1000 J range, then 2 J: 3 J used.  DRAM 1 J.
# core is inside the package and psys the whole platform: neither counts.
fresh_tree() {
    rm -rf "$ROOT"
    zone intel-rapl:0 package-0 999000000 1000000000
    zone intel-rapl:0:0 core 5 1000000000
    zone intel-rapl:0:1 dram 100 65532610987
    zone intel-rapl:1 psys 7 1000000000
    chmod -R a+rX "$ROOT"
}

mkdir -p "$TMP/tpl/sites"
cat >"$TMP/tpl/sites/green.conf" <<'SITE'
description = "energy prices"
price_per_gpu_hour = 2.00
price_per_kwh = 0.30
grams_co2_per_kwh = 400
currency = "EUR"
SITE
# The job: moves the counters, says its figure, sleeps (or waits to be
# stopped, with a marker first).
cat >"$TMP/job.sh" <<JOB
#!/bin/sh
echo 2000000 >"$PC/intel-rapl:0/energy_uj" 2>/dev/null
echo 1000100 >"$PC/intel-rapl:0:1/energy_uj" 2>/dev/null
echo "Performance: 50.0 ns/day"
touch "\$1.started" 2>/dev/null
sleep "\$2"
JOB
chmod 755 "$TMP/job.sh"
# job NAME SLEEP: a job of the generic template on 2 GPUs, the site above.
job() {
    cat >"$TMP/$1.conf" <<JOB
template = "generic"
launcher = "local"
ranks_per_node = 1
gpus_per_rank = 2
site = "green"
params { program = "$TMP/job.sh"  args = "$TMP/$1 $2"  fom_regex = "Performance: ([0-9.]+) ns/day"  fom_units = "ns/day" }
JOB
    chmod 644 "$TMP/$1.conf"
}
energy_env() {
    env GPURUN_TEMPLATE_PATH="$TMP/tpl" GPURUN_TEST_SYSFS_ROOT="$ROOT" GPURUN_NVML_LIBRARY="$FAKE_NVML" \
        FAKE_NVML_DEVICES="$GPUS" FAKE_NVML_POWER_W=$W GPURUN_TOPOLOGY="$FIXTURES/2s-4gpu-2nic.xml" "$@"
}
record() { ls "$TMP"/results/"$1"/*Z-*/record.json | tail -1; }
# jq: measured(SOURCE; VARIABLE): a device that a test hook gave (issue 37,
# item 5): its source "test", its note naming the variable and what it
# stands in for ("test hook GPURUN_NVML_LIBRARY=...: measured as nvml, ...").
M='def measured(s; v): .source == "test" and (.note | startswith("test hook " + v + "=") and contains(": measured as " + s + ","));'
# near A B: A within 2 % of B (jq expression over the record).
near() { echo "((($1) - ($2)) | fabs) <= 0.02 * (($2) | fabs)"; }
# gpu_power P: every GPU's energy over its own measured time (its monitor's,
# from just after the program started to before the host's last reading)
# within 2 % of P watts, that time inside the host's, and the run's GPU
# energy never more than P per GPU over the host's time.  Not the GPU
# energy over the host's time: the helper's start-up is not in it, and a
# loaded machine makes that a good part of a 1-second run.
gpu_power() {
    echo "(.energy.hosts | all(.measured_s as \$h | [.devices[] | select(.kind == \"gpu\")] |
        length > 0 and all(.measured_s > 0 and .measured_s <= \$h + 0.002 and ($(near '.J / .measured_s' "$1"))))) and
        .energy.gpu_J <= 1.02 * $1 * ([.energy.hosts[].devices[] | select(.kind == \"gpu\")] | length) * .energy.measured_s"
}
gpu_figures() { jq -c '[.energy.gpu_J, .energy.measured_s, [.energy.hosts[].devices[] | select(.kind == "gpu") | [.J, .measured_s]]]' "$1"; }

fresh_tree
job e 1
cd "$TMP" || exit 1
run energy_env "$GPURUN" run "$TMP/e.conf" --quiet
expect_rc 0 "a run with energy counters"
R=$(record e)
jq -e '.energy | type == "object" and (.hosts | length) == 1' "$R" >/dev/null
ok $? "the record has energy, one host"
jq -e "$(gpu_power $W)" "$R" >/dev/null
ok $? "each GPU's energy over its own measured time: ${W} W within 2 %, inside the host's time ($(gpu_figures "$R"))"
jq -e "$M [.energy.hosts[0].devices[] | select(.kind == \"gpu\") | select(measured(\"nvml\"; \"GPURUN_NVML_LIBRARY\") and .mean_power_W == $W and .peak_power_W == $W)] | length == 2" "$R" >/dev/null
ok $? "each GPU: source test (measured as nvml, through GPURUN_NVML_LIBRARY), mean and peak power ${W} W from the samples"
jq -e '[.gpus_monitor[] | .test_hook | startswith("GPURUN_NVML_LIBRARY=")] == [true, true]' "$R" >/dev/null
ok $? "... gpus_monitor names the test hook too"
jq -e "$(near .energy.cpu_J 3)" "$R" >/dev/null
ok $? "package energy across the counter wrap: 3 J ($(jq .energy.cpu_J "$R"))"
jq -e "$(near .energy.dram_J 1)" "$R" >/dev/null
ok $? "DRAM energy: 1 J ($(jq .energy.dram_J "$R"))"
jq -e "$M"' [.energy.hosts[0].devices[] | select(measured("rapl"; "GPURUN_TEST_SYSFS_ROOT")) | .name] == ["package-0 (intel-rapl:0)", "dram (intel-rapl:0:1)"] and
    ([.energy.hosts[0].devices[] | select(.source == "rapl")] | length == 0)' "$R" >/dev/null
ok $? "RAPL: the package and DRAM, not core (inside the package) nor psys; source test under GPURUN_TEST_SYSFS_ROOT, never rapl"
jq -e "$(near .energy.total_J '.energy.gpu_J + .energy.cpu_J + .energy.dram_J') and
    $(near .energy.kwh '.energy.total_J / 3600000') and $(near .energy.mean_power_W '.energy.total_J / .energy.measured_s')" "$R" >/dev/null
ok $? "total, kWh and mean power add up"
jq -e "$(near .energy.cost '.energy.kwh * 0.30') and $(near .energy.co2_g '.energy.kwh * 400')" "$R" >/dev/null
ok $? "cost at the site's price_per_kwh, CO2 at its grams_co2_per_kwh"
jq -e '.foms.value.energy_per_unit.units == "J/ns"' "$R" >/dev/null
ok $? "the ns/day figure has energy_per_unit in J/ns"
jq -e "$(near .foms.value.energy_per_unit.value '.energy.mean_power_W * 86400 / 50')" "$R" >/dev/null
ok $? "J/ns = mean power x 86400 s / (ns/day) ($(jq .foms.value.energy_per_unit.value "$R"))"
jq -e '.energy.slurm_consumed_J == null and .energy.missing == null and .energy.hosts[0].missing == []' "$R" >/dev/null
ok $? "outside Slurm: slurm_consumed_J null; nothing missing"

# Inside Slurm (its variables, launcher local): one bounded sacct for its
# ConsumedEnergy, a fake one on PATH that says what it was asked; the live
# cluster (cli-slurm.sh) has no energy plugin.
mkdir -p "$TMP/bin"
cat >"$TMP/bin/sacct" <<'SACCT'
#!/bin/sh
echo "$*" >"$FAKE_SACCT_ARGS"
case $FAKE_SACCT in
    hang) exec sleep 60 ;;
    fail) echo "sacct: error: Slurm accounting storage is disabled"; exit 1 ;;
    *) [ -z "$FAKE_SACCT" ] || printf '%s\n' "$FAKE_SACCT" 4242.batch ;;
esac
SACCT
chmod 755 "$TMP/bin/sacct"
printf 'ClusterName=t\nAcctGatherEnergyType=acct_gather_energy/rapl\n' >"$TMP/rapl.conf"
printf 'ClusterName=t\n' >"$TMP/none.conf"
# slurm_run CONF STEP SACCT: a run of job s inside "job 4242" (step STEP, "" none).
job s 1
slurm_run() {
    rm -f "$TMP/sacct.args"
    fresh_tree
    run energy_env PATH="$TMP/bin:$PATH" SLURM_JOB_ID=4242 SLURM_STEP_ID="$2" SLURM_CONF="$TMP/$1" \
        FAKE_SACCT="$3" FAKE_SACCT_ARGS="$TMP/sacct.args" "$GPURUN" run "$TMP/s.conf" --quiet
    R=$(record s)
}
slurm_run rapl.conf 3 123456
expect_rc 0 "inside Slurm: a run"
jq -e '.energy.slurm_consumed_J == 123456 and (.energy.slurm_note | test("step 4242.3"))' "$R" >/dev/null
ok $? "... slurm_consumed_J from sacct: 123456 J of step 4242.3 ($(jq -c '.energy | [.slurm_consumed_J, .slurm_note]' "$R"))"
[ "$(cat "$TMP/sacct.args" 2>/dev/null)" = "-j 4242.3 --format=ConsumedEnergyRaw -n -P" ]
ok $? "... asked once: sacct -j 4242.3 --format=ConsumedEnergyRaw -n -P"
slurm_run rapl.conf "" 99
jq -e '.energy.slurm_consumed_J == 99 and (.energy.slurm_note | test("job 4242 so far"))' "$R" >/dev/null &&
    [ "$(cat "$TMP/sacct.args" 2>/dev/null)" = "-j 4242 --format=ConsumedEnergyRaw -n -P" ]
ok $? "in a batch script (no step): the job's so far ($(jq -c .energy.slurm_note "$R"))"
slurm_run none.conf 3 123456
jq -e '.energy.slurm_consumed_J == null and (.energy.slurm_note | test("AcctGatherEnergyType is none"))' "$R" >/dev/null &&
    [ ! -e "$TMP/sacct.args" ]
ok $? "AcctGatherEnergyType none: null, saying so, sacct not asked ($(jq -c .energy.slurm_note "$R"))"
slurm_run rapl.conf 3 ""
jq -e '.energy.slurm_consumed_J == null and (.energy.slurm_note | test("no ConsumedEnergy"))' "$R" >/dev/null
ok $? "sacct gives nothing: null, saying so"
slurm_run rapl.conf 3 fail
jq -e '.energy.slurm_consumed_J == null and (.energy.slurm_note | test("exit status 1.*accounting storage is disabled"))' "$R" >/dev/null
ok $? "sacct fails: null, with its message ($(jq -c .energy.slurm_note "$R"))"
slurm_run rapl.conf 3 hang
expect_rc 0 "sacct that hangs: the run still ok"
jq -e '.energy.slurm_consumed_J == null and (.energy.slurm_note | test("did not answer within 3 s"))' "$R" >/dev/null
ok $? "... null, saying sacct was stopped"

# Killed mid-run: SIGTERM to gpurun (143) still records the energy used.
fresh_tree
job k 60
rm -f "$TMP/k.started"
# env execs gpurun: $! is gpurun's pid.
env GPURUN_TEMPLATE_PATH="$TMP/tpl" GPURUN_TEST_SYSFS_ROOT="$ROOT" GPURUN_NVML_LIBRARY="$FAKE_NVML" \
    FAKE_NVML_DEVICES="$GPUS" FAKE_NVML_POWER_W=$W GPURUN_TOPOLOGY="$FIXTURES/2s-4gpu-2nic.xml" \
    "$GPURUN" run "$TMP/k.conf" --quiet >"$TMP/out" 2>"$TMP/err" &
pid=$!
n=0
while [ ! -e "$TMP/k.started" ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
sleep 0.5
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
expect_rc 143 "SIGTERM while the job runs: 143"
R=$(record k)
jq -e ".state == \"interrupted\" and $(gpu_power $W) and $(near .energy.cpu_J 3)" "$R" >/dev/null
ok $? "... the interrupted run still records its energy (each GPU ${W} W within 2 %, package 3 J: $(gpu_figures "$R"))"

# Past its time limit (124): the energy until gpurun stopped it.
fresh_tree
job t 60
printf 'timeout = "4s"\n' >>"$TMP/t.conf"
run energy_env "$GPURUN" run "$TMP/t.conf" --quiet
expect_rc 124 "a job past its time limit: 124"
R=$(record t)
jq -e ".state == \"timeout\" and $(gpu_power $W) and $(near .energy.cpu_J 3) and .energy.measured_s > 0.5 and .energy.measured_s < 30" "$R" >/dev/null
ok $? "... the timed-out run records its energy until it was stopped ($(gpu_figures "$R"))"

# A GPU without an energy counter: its power samples times the time, said.
fresh_tree
job s 1
run energy_env FAKE_NVML_NO_ENERGY=1 "$GPURUN" run "$TMP/s.conf" --quiet
R=$(record s)
jq -e "$M [.energy.hosts[0].devices[] | select(.kind == \"gpu\" and measured(\"nvml-power-samples\"; \"GPURUN_NVML_LIBRARY\"))] | length == 2" "$R" >/dev/null
ok $? "no energy counter: the GPUs' energy from their power samples, measured as nvml-power-samples"
jq -e '.gpus_monitor[0].energy_J == null and (.gpus_monitor[0].energy_note | test("energy counter"))' "$R" >/dev/null
ok $? "... gpus_monitor says why energy_J is null"

# No powercap at all (a VM): a note, the run goes on.
job v 0
run energy_env GPURUN_TEST_SYSFS_ROOT="$TMP/empty" "$GPURUN" run "$TMP/v.conf" --quiet
expect_rc 0 "no powercap: the run is ok"
R=$(record v)
jq -e '.energy.cpu_J == null and (.energy.hosts[0].missing[0] | .kind == "cpu" and (.why | test("no RAPL")))' "$R" >/dev/null
ok $? "... cpu_J null, and missing says why"

# AMD GPUs: ROCm SMI's energy counter (a fake librocm_smi64 whose GPUs
# draw $AW watts: two MI300X in CPX mode, 4 devices each, as the fixture).
AW=300
amd_env() {
    energy_env GPURUN_TOPOLOGY="$FIXTURES/amd-partitioned.xml" GPURUN_ROCM_SMI_LIBRARY="$FAKE_ROCM_SMI" \
        FAKE_RSMI_DEVICES=0000:03:00.0,0000:43:00.0 FAKE_RSMI_PARTITIONS=4 FAKE_RSMI_POWER_W=$AW "$@"
}
printf 'command = "/bin/sleep 1.2"\nlauncher = "local"\nranks_per_node = 1\ngpus_per_rank = 1\n' >"$TMP/amd.conf"
if [ -n "${FAKE_ROCM_SMI:-}" ] && [ -r "$FAKE_ROCM_SMI" ]; then
    fresh_tree
    run amd_env FAKE_RSMI_INIT_LOG="$TMP/rsmi-init.log" "$GPURUN" run "$TMP/amd.conf" --quiet
    expect_rc 0 "an AMD GPU: a run"
    R=$(record amd)
    jq -e "$M [.energy.hosts[0].devices[] | select(.kind == \"gpu\")] | length == 1 and
        (.[0] | measured(\"rocm_smi\"; \"GPURUN_ROCM_SMI_LIBRARY\") and .mean_power_W == $AW and (.name | test(\"MI250X\")))" "$R" >/dev/null
    ok $? "... its GPU read by ROCm SMI: measured as rocm_smi (through GPURUN_ROCM_SMI_LIBRARY), mean power ${AW} W ($(jq -c '[.energy.hosts[0].devices[] | select(.kind == "gpu")]' "$R"))"
    jq -e "$(gpu_power $AW)" "$R" >/dev/null
    ok $? "... its energy from the counter: ${AW} W over its measured time within 2 % ($(gpu_figures "$R"))"
    jq -e '.gpus_monitor | length == 1 and .[0].monitor == "rocm_smi" and .[0].pci == "0000:03:00.0" and .[0].index == 0' "$R" >/dev/null
    ok $? "... gpus_monitor: one entry (the partitions share the GPU's counter), monitor rocm_smi"
    jq -e '[.energy.hosts[0].missing[] | select(.kind == "gpu")] | length == 0' "$R" >/dev/null
    ok $? "... nothing missing"
    grep -qx '0x400000000000000' "$TMP/rsmi-init.log" && ! grep -qvx '0x400000000000000' "$TMP/rsmi-init.log"
    ok $? "... ROCm SMI started with a mutex of its own (RSMI_INIT_FLAG_THRAD_ONLY_MUTEX), not a named one in /dev/shm"
    # An MI250X's second GCD: its counter stands still and it reads 0 W.
    fresh_tree
    run amd_env FAKE_RSMI_DEVICES=0000:43:00.0,0000:03:00.0 FAKE_RSMI_PARTITIONS=1 FAKE_RSMI_IDLE_ODD=1 \
        "$GPURUN" run "$TMP/amd.conf" --quiet
    R=$(record amd)
    jq -e '.energy.gpu_J == null and ([.energy.hosts[0].missing[] | select(.kind == "gpu")] | length == 1 and
        (.[0].why | test("did not move.*second GCD")))' "$R" >/dev/null
    ok $? "a counter that stands still (an MI250X's second GCD): no energy, and why, never 0 J"
    # No ROCm SMI on the node: a note naming it.
    run amd_env GPURUN_ROCM_SMI_LIBRARY=/nonexistent/librocm_smi64.so "$GPURUN" run "$TMP/amd.conf" --quiet
    R=$(record amd)
    jq -e '[.energy.hosts[0].missing[] | select(.kind == "gpu")] | length == 1 and (.[0].why | test("ROCm SMI is not available"))' "$R" >/dev/null
    ok $? "no ROCm SMI: one missing note naming it ($(jq -c '[.energy.hosts[0].missing[] | select(.kind == "gpu") | .why]' "$R"))"
    run amd_env "$GPURUN" doctor
    contains "$TMP/out" "ROCm SMI's energy counter reads on all 8 ROCm SMI devices (driver 6.8.5)" "doctor: the AMD GPUs' energy counters"
else
    for i in 1 2 3 4 5 6 7 8 9; do skip "no fake ROCm SMI (\$FAKE_ROCM_SMI: make check builds it)"; done
fi
# A CPU-only job: no GPU note.
printf 'command = "/bin/true"\nlauncher = "local"\nranks_per_node = 1\n' >"$TMP/cpu.conf"
run energy_env GPURUN_TOPOLOGY="$FIXTURES/cpu-only-2numa.xml" "$GPURUN" run "$TMP/cpu.conf" --quiet
R=$(record cpu)
jq -e '.energy.gpu_J == null and .energy.hosts[0].missing == [] and .energy.cpu_J != null' "$R" >/dev/null
ok $? "a CPU-only job: CPU energy, no GPU note"

# Root-only counters (Linux >= 5.10): as nobody, a note saying which file,
# why, and how a site enables it; the run is ok.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
    fresh_tree
    chmod 400 "$PC/intel-rapl:0/energy_uj" "$PC/intel-rapl:0:1/energy_uj"
    job p 0
    mkdir -p "$TMP/nobody"
    chown 65534:65534 "$TMP/nobody"
    cd "$TMP/nobody" || exit 1
    run energy_env HOME="$TMP/nobody" setpriv --reuid=65534 --regid=65534 --clear-groups "$GPURUN" run "$TMP/p.conf" --quiet \
        --results "$TMP/nobody/results"
    expect_rc 0 "energy_uj root-only, run as nobody: the run is ok"
    R=$(ls "$TMP"/nobody/results/p/*Z-*/record.json | tail -1)
    jq -e '.energy.cpu_J == null and .energy.dram_J == null and .energy.gpu_J > 0 and
        ([.energy.hosts[0].missing[] | select(.kind == "cpu" or .kind == "dram") | .why |
          test("intel-rapl:0(:1)?/energy_uj: Permission denied.*CVE-2020-8694.*udev")] | length == 2)' "$R" >/dev/null
    ok $? "... missing names each energy_uj, permission denied, CVE-2020-8694 and a udev rule"
    run energy_env HOME="$TMP/nobody" setpriv --reuid=65534 --regid=65534 --clear-groups "$GPURUN" doctor
    contains "$TMP/out" "RAPL: 0 of 2 domain(s) readable" "doctor as nobody: RAPL not readable"
    cd "$TMP" || exit 1
else
    skip "needs root and setpriv to read as nobody"
    skip "needs root and setpriv to read as nobody"
    skip "needs root and setpriv to read as nobody"
fi
fresh_tree
run energy_env "$GPURUN" doctor
contains "$TMP/out" "RAPL: 2 domain(s) readable (package-0, dram)" "doctor: RAPL readable"
contains "$TMP/out" "energy counter" "doctor: a line on the GPUs' energy counters"

# Several hosts (bench/sim-mpirun plays mpirun for 3 simulated hosts on
# this node, each with a powercap tree of its own): each host's first rank
# step reads its own counters; host N's package wraps: 294.967295 J to the
# top of its range, then N J less one uJ.
mkdir -p "$TMP/simbin"
ln -s "$(cd "$top_srcdir" && pwd)/bench/sim-mpirun" "$TMP/simbin/mpirun"
for h in 1 2 3; do
    PC=$TMP/simsys/sim000$h/sys/class/powercap
    zone intel-rapl:0 package-0 4000000000 4294967295
done
PC=$ROOT/sys/class/powercap
cat >"$TMP/sim.sh" <<'JOB'
#!/bin/sh
# The host's other rank may start first: one writer per host, after its
# first rank step read the start.
[ "$GPURUN_HOST" = "${LOSE:-}" ] && kill -KILL "$PPID"
[ "$OMPI_COMM_WORLD_LOCAL_RANK" = 0 ] || exit 0
n=${GPURUN_HOST#sim000}
echo $((n * 1000000 - 1)) >"$GPURUN_TEST_SYSFS_ROOT/sys/class/powercap/intel-rapl:0/energy_uj"
JOB
chmod 755 "$TMP/sim.sh"
printf 'command = "%s"\nlauncher = "mpirun"\nnodes = 3\nranks_per_node = 2\nthreads_per_rank = 1\nbind = "none"\noversubscribe = true\n' \
    "$TMP/sim.sh" >"$TMP/sim.conf"
run env PATH="$TMP/simbin:$PATH" GPURUN_SIM_SYSFS="$TMP/simsys" GPURUN_SIM_TOPOLOGIES="$FIXTURES/cpu-only-2numa.xml" \
    GPURUN_TEST_SYSFS_ROOT="$TMP/empty" "$GPURUN" run "$TMP/sim.conf" --quiet
expect_rc 0 "3 simulated hosts x 2 ranks"
R=$(record sim)
jq -e '[.energy.hosts[].host] == ["sim0001", "sim0002", "sim0003"]' "$R" >/dev/null
ok $? "energy of each host that ran ranks, not of gpurun's own ($(jq -c '[.energy.hosts[].host]' "$R"))"
jq -e "[.energy.hosts[] | .devices[0].J] as \$j | $(near '$j[0]' 295.967294) and $(near '$j[1]' 296.967294) and $(near '$j[2]' 297.967294)" "$R" >/dev/null
ok $? "each host's package energy from its own counters, across the wrap ($(jq -c '[.energy.hosts[].devices[0].J]' "$R"))"
jq -e "$(near .energy.cpu_J 890.901882) and ([.rank_status[] | select(has(\"energy\"))] | length == 0)" "$R" >/dev/null
ok $? "cpu_J sums the hosts; rank_status keeps no copy"
# GPUs on every host: each host's first rank step reads its GPUs through
# the helper (gpurun rank --energy: the monitor, NVML's energy counter).
cat >"$TMP/simg.sh" <<'JOB'
#!/bin/sh
sleep 2
JOB
chmod 755 "$TMP/simg.sh"
printf 'command = "%s"\nlauncher = "mpirun"\nnodes = 3\nranks_per_node = 2\ngpus_per_rank = 1\nthreads_per_rank = 1\nbind = "none"\noversubscribe = true\n' \
    "$TMP/simg.sh" >"$TMP/simg.conf"
run env PATH="$TMP/simbin:$PATH" GPURUN_SIM_SYSFS="$TMP/simsys" GPURUN_SIM_TOPOLOGIES="$FIXTURES/2s-4gpu-2nic.xml" \
    GPURUN_TOPOLOGY="$FIXTURES/2s-4gpu-2nic.xml" GPURUN_NVML_LIBRARY="$FAKE_NVML" FAKE_NVML_DEVICES="$GPUS" \
    FAKE_NVML_POWER_W=$W GPURUN_TEST_SYSFS_ROOT="$TMP/empty" "$GPURUN" run "$TMP/simg.conf" --quiet
expect_rc 0 "3 simulated hosts with 2 GPUs each"
R=$(record simg)
jq -e "$M [.energy.hosts[] | [.devices[] | select(.kind == \"gpu\" and measured(\"nvml\"; \"GPURUN_NVML_LIBRARY\") and .mean_power_W == $W and .peak_power_W == $W)] | length] == [2, 2, 2]" "$R" >/dev/null
ok $? "each host's 2 GPUs read on that host: measured as nvml, power samples ${W} W ($(jq -c '[.energy.hosts[] | {host, gpus: [.devices[] | select(.kind == "gpu") | .J]}]' "$R"))"
jq -e "$(gpu_power $W)" "$R" >/dev/null
ok $? "... each GPU's energy over its own measured time: ${W} W within 2 %, inside its host's time ($(gpu_figures "$R"))"

# AMD GPUs on every host: the helper is given PCI addresses alone and finds
# the monitor that has them (NVML has none of them: ROCm SMI).
if [ -n "${FAKE_ROCM_SMI:-}" ] && [ -r "$FAKE_ROCM_SMI" ]; then
    run env PATH="$TMP/simbin:$PATH" GPURUN_SIM_SYSFS="$TMP/simsys" GPURUN_SIM_TOPOLOGIES="$FIXTURES/amd-partitioned.xml" \
        GPURUN_TOPOLOGY="$FIXTURES/amd-partitioned.xml" GPURUN_NVML_LIBRARY="$FAKE_NVML" FAKE_NVML_DEVICES="$GPUS" \
        GPURUN_ROCM_SMI_LIBRARY="$FAKE_ROCM_SMI" FAKE_RSMI_DEVICES=0000:03:00.0,0000:43:00.0 FAKE_RSMI_PARTITIONS=4 \
        FAKE_RSMI_POWER_W=$AW GPURUN_TEST_SYSFS_ROOT="$TMP/empty" "$GPURUN" run "$TMP/simg.conf" --quiet
    expect_rc 0 "3 simulated hosts with AMD GPUs"
    R=$(record simg)
    jq -e "$M [.energy.hosts[] | [.devices[] | select(.kind == \"gpu\" and measured(\"rocm_smi\"; \"GPURUN_ROCM_SMI_LIBRARY\") and .mean_power_W == $AW)] | length > 0] == [true, true, true] and
        ([.energy.hosts[].missing[] | select(.kind == \"gpu\")] | length == 0)" "$R" >/dev/null
    ok $? "... each host's GPUs read there by ROCm SMI, ${AW} W ($(jq -c '[.energy.hosts[] | {host, gpus: [.devices[] | select(.kind == "gpu") | [.source, .J]]}]' "$R"))"
else
    skip "no fake ROCm SMI (\$FAKE_ROCM_SMI: make check builds it)"
    skip "no fake ROCm SMI (\$FAKE_ROCM_SMI: make check builds it)"
fi

# A host whose rank steps are killed: said in its missing, not left out.
run env PATH="$TMP/simbin:$PATH" GPURUN_SIM_SYSFS="$TMP/simsys" GPURUN_SIM_TOPOLOGIES="$FIXTURES/cpu-only-2numa.xml" \
    GPURUN_TEST_SYSFS_ROOT="$TMP/empty" LOSE=sim0002 "$GPURUN" run "$TMP/sim.conf" --quiet
expect_rc 3 "a simulated host whose rank steps die: exit 3"
R=$(record sim)
jq -e '[.energy.hosts[] | select(.host == "sim0002")][0].missing[0] | .kind == "host" and (.why | test("reported no energy"))' "$R" >/dev/null
ok $? "... its energy says it reported none ($(jq -c '[.energy.hosts[] | {host, n: (.devices | length)}]' "$R"))"

# What results, the results database and the report show of it.
cd "$TMP" || exit 1
run "$GPURUN" results --job e
contains "$TMP/out" "    energy: " "gpurun results: an energy line under the run"
grep -q "energy: [0-9.]* J (GPU [0-9.]*, CPU 3, DRAM 1), mean [0-9.]* W, .* kWh, .* EUR, .* g CO2; value [0-9.e+]* J/ns" "$TMP/out"
ok $? "... with GPU, CPU, DRAM, mean power, kWh, cost, CO2 and J/ns ($(grep energy: "$TMP/out"))"
if command -v sqlite3 >/dev/null 2>&1; then
    R=$(record e)
    got=$(sqlite3 "$TMP/results/results.db" "SELECT r.energy_J, r.energy_kwh, r.energy_cost, r.co2_g, f.energy_per_unit, f.energy_units FROM runs r JOIN foms f USING (job, run_id) WHERE r.job = 'e'")
    want=$(jq -r '[.energy.total_J, .energy.kwh, .energy.cost, .energy.co2_g, .foms.value.energy_per_unit.value, .foms.value.energy_per_unit.units] | map(tostring) | join("|")' "$R")
    awk -v g="$got" -v w="$want" 'BEGIN { n = split(g, a, "|"); split(w, b, "|"); if (n != 6) exit 1
        for (i = 1; i <= 5; i++) if ((a[i] - b[i]) ^ 2 > (1e-6 * b[i]) ^ 2) exit 1; exit a[6] != b[6] }'
    ok $? "results.db: energy_J, energy_kwh, energy_cost, co2_g and the figure's energy_per_unit, energy_units ($got)"
else
    skip "no sqlite3 program to read results.db"
fi
run "$GPURUN" report --job e
contains "$TMP/out" "Energy (measured" "gpurun report: an energy table"
grep -q "value J/ns" "$TMP/out" && grep -q "ns/day per kW" "$TMP/out"
ok $? "... with J per ns and ns/day per kW"

# Nothing measured (issue 38 §10): a CPU job on a machine with no powercap
# at all: results, the report, its page and its plot say "not measured
# here" and why (the record's missing notes), not nothing.
printf 'template = "generic"\nlauncher = "local"\nranks_per_node = 1\nsite = "green"\nparams { program = "/bin/echo"  args = "FOM: 5"  fom_units = "GFLOP/s" }\n' >"$TMP/u.conf"
run energy_env GPURUN_TOPOLOGY="$FIXTURES/cpu-only-2numa.xml" GPURUN_TEST_SYSFS_ROOT="$TMP/empty" \
    "$GPURUN" run "$TMP/u.conf" --quiet
expect_rc 0 "a CPU job where nothing measures energy"
run "$GPURUN" results --job u
contains "$TMP/out" "    energy: not measured here: cpu: $TMP/empty/sys/class/powercap: " \
    "gpurun results: energy not measured here, and why ($(grep energy: "$TMP/out"))"
grep -q "energy: not measured here: cpu: .*no RAPL" "$TMP/out"
ok $? "... the record's reason: no RAPL"
run "$GPURUN" results --job e
grep -q "not measured" "$TMP/out"
[ $? -ne 0 ]
ok $? "... a run that measured energy: no such line"
run "$GPURUN" report --job u
contains "$TMP/out" "  Energy: not measured here: cpu: $TMP/empty/sys/class/powercap: " "gpurun report: energy not measured here, and why"
run "$GPURUN" report --job u --html "$TMP/u.html" --svg "$TMP/u.svg"
expect_rc 0 "report --html --svg of the run"
grep -q '<h3>Energy</h3>' "$TMP/u.html" && grep -q '<p class="meta">not measured here: cpu: .*no RAPL' "$TMP/u.html"
ok $? "... the page: an Energy heading, not measured here and why"
grep -q '<title>gpurun report: .*; energy not measured here: cpu: .*no RAPL' "$TMP/u.svg"
ok $? "... the plot's title: energy not measured here and why"
run "$GPURUN" report --job e
grep -q "not measured" "$TMP/out"
[ $? -ne 0 ]
ok $? "... the report of a run that measured energy: no such line"

# A site's energy keys are numbers.
printf 'grams_co2_per_kwh = "lots"\n' >"$TMP/tpl/sites/bad.conf"
job b 0
sed -i 's/site = "green"/site = "bad"/' "$TMP/b.conf"
run energy_env "$GPURUN" run "$TMP/b.conf" --dry-run
expect_rc 2 "a site's grams_co2_per_kwh that is no number: exit 2"
contains "$TMP/err" "grams of CO2 per kWh" "... saying what it wants"

done_testing
