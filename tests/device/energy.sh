#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# For a machine with an NVIDIA GPU (the project's H200 device machine), in
# one go, well under 10 minutes: builds gpurun with the CUDA examples, runs
# cg (CUDA, 1 rank per GPU) and netcheck (CUDA, GPU buffers, 2 ranks sharing
# GPU 0) under gpurun with the local launcher, and prints one table:
#   - each run's GPU energy from NVML's counter (record.json energy), the
#     monitor's mean and peak power, J per unit of work;
#   - nvidia-smi's power.draw and total_energy_consumption read before and
#     after each run (its counter's difference against gpurun's: they should
#     agree within a few %, nvidia-smi reading a little earlier and later);
#   - the binding each rank reported from inside (record.json bindings:
#     cpus and CUDA_VISIBLE_DEVICES against the plan).
# Run from the repository root:  sh tests/device/energy.sh
# Needs: a C compiler, nvcc (CUDA), Open MPI, hwloc, jansson, libconfuse,
# SQLite (scripts/install-deps.sh), jq, nvidia-smi.  Writes only under
# ${ENERGY_OUT:-$OUT or ./device-energy}: the build and the results.
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
out=${ENERGY_OUT:-${OUT:-$top/device-energy}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=$out/build
log=$out/energy.log
: >"$log"
say() { printf '%s\n' "$*" | tee -a "$log"; }
die() { say "energy.sh: $*"; exit 1; }

for tool in nvidia-smi jq cc make; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found"
done
command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] || die "nvcc not found (CUDA toolkit)"
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
jobs=$(nproc 2>/dev/null || echo 4)

say "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

# --- build (out of tree, CUDA examples) ------------------------------------
if [ ! -x "$build/launcher/gpurun" ] || [ ! -x "$build/examples/cg/cg-cuda" ]; then
    say "== building in $build"
    (cd "$top" && [ -x configure ] || ./autogen.sh) >>"$log" 2>&1 || die "autogen.sh failed (see $log)"
    mkdir -p "$build"
    (cd "$build" && "$top/configure" --with-cuda >>"$log" 2>&1) || die "configure --with-cuda failed (see $log)"
    (cd "$build" && make -j"$jobs" >>"$log" 2>&1) || die "make failed (see $log)"
fi
gpurun=$build/launcher/gpurun
cg=$build/examples/cg/cg-cuda
netcheck=$build/examples/netcheck/netcheck-cuda
if [ ! -x "$cg" ] || [ ! -x "$netcheck" ]; then
    die "no CUDA examples in $build (configure did not find nvcc?)"
fi

# --- nvidia-smi before and after: total_energy_consumption is mJ ----------
smi() { # smi: "power_W energy_mJ" of GPU 0
    nvidia-smi -i 0 --query-gpu=power.draw,total_energy_consumption --format=csv,noheader,nounits |
        tr -d ' ' | awk -F, '{ print $1, $2 }'
}

res=$out/results
jobdir=$out/jobs
mkdir -p "$jobdir"
# Each rank says, from inside, what it got, then becomes the program.
for p in cg netcheck; do
    if [ "$p" = cg ]; then prog=$cg; else prog=$netcheck; fi
    {
        echo '#!/bin/sh'
        # shellcheck disable=SC2016 # expanded by the wrapper, at run time
        echo 'echo "gpurun-binding rank=${GPURUN_RANK:-?} CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset} cpus=$(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"'
        printf 'exec "%s" "$@"\n' "$prog"
    } >"$jobdir/wrap-$p.sh"
    chmod 755 "$jobdir/wrap-$p.sh"
done
cat >"$jobdir/cg-cuda.conf" <<EOF
template = "cg"
launcher = "local"
ranks_per_node = 1
gpus_per_rank = 1
timeout = "3m"
params { cg = "$jobdir/wrap-cg.sh"  n = "256"  iters = "3000"  solves = "3" }
EOF
cat >"$jobdir/netcheck-cuda.conf" <<EOF
template = "netcheck"
launcher = "local"
ranks_per_node = 2
ranks_per_gpu = 2
threads_per_rank = 1
timeout = "3m"
params { netcheck = "$jobdir/wrap-netcheck.sh"  buffers = "gpu"  iters = "2000" }
EOF

rows=$out/rows.txt
: >"$rows"
for j in cg-cuda netcheck-cuda; do
    before=$(smi)
    say "== gpurun run $j (nvidia-smi before: $before)"
    rc=0
    "$gpurun" run "$jobdir/$j.conf" --results "$res" >>"$log" 2>&1 || rc=$?
    after=$(smi)
    name=$j
    # shellcheck disable=SC2012 # run ids are [0-9TZ-]
    rec=$(ls "$res/$name"/*Z-*/record.json 2>/dev/null | tail -1 || true)
    if [ -z "$rec" ]; then
        say "$j: exit $rc, no record (see $log)"
        continue
    fi
    smi_j=$(printf '%s %s\n' "$before" "$after" | awk '{ printf "%.1f", ($4 - $2) / 1000 }')
    smi_w=$(printf '%s %s\n' "$before" "$after" | awk '{ printf "%.0f/%.0f", $1, $3 }')
    # The binding each rank reported from inside, against the plan.
    inside=$(sed -n 's/^[0-9]*: gpurun-binding rank=\([^ ]*\) CUDA_VISIBLE_DEVICES=\([^ ]*\) cpus=\(.*\)$/r\1:CVD=\2,cpus=\3/p' \
        "$(dirname "$rec")"/*.out 2>/dev/null | sort | tr '\n' ' ')
    planned=$(jq -r '[.plan.ranks[] | "r\(.rank):CVD=\(.env.CUDA_VISIBLE_DEVICES // "unset"),cpus=\(.cpus)"] | join(" ")' "$rec")
    jq -r --arg job "$j" --arg rc "$rc" --arg smij "$smi_j" --arg smiw "$smi_w" --arg inside "${inside:-none}" \
        --arg planned "$planned" '
        def n: if . == null then "-" else (. * 10 | round / 10 | tostring) end;
        [$job, $rc, .state, (.wall_s | n), (.energy.gpu_J | n), $smij,
         (if .energy.gpu_J and ($smij | tonumber) > 0 then (.energy.gpu_J / ($smij | tonumber) * 100 | round | tostring) + "%" else "-" end),
         ((.gpus_monitor // [])[0].power_mean_w | n), ((.gpus_monitor // [])[0].power_peak_w | n), $smiw,
         (.energy.cpu_J | n), (.energy.mean_power_W | n),
         ([.foms[] | select(.energy_per_unit) | "\(.energy_per_unit.value) \(.energy_per_unit.units)"] | join(",") | if . == "" then "-" else . end),
         "inside: \($inside)| planned: \($planned)| match: \([.bindings[] | .match] | map(tostring) | join(","))"
        ] | @tsv' "$rec" >>"$rows"
    jq -c '.energy | {total_J, gpu_J, cpu_J, dram_J, measured_s, mean_power_W, hosts: [.hosts[] | {host, missing}]}' "$rec" >>"$log"
done

say ""
say "== energy and power: gpurun (NVML counter, monitor samples) against nvidia-smi (GPU 0)"
{
    printf 'job\texit\tstate\twall_s\tgpurun_GPU_J\tsmi_J\tgpurun/smi\tmean_W\tpeak_W\tsmi_W_before/after\tCPU_J\ttotal_W\tJ_per_unit\tbindings\n'
    cat "$rows"
} | column -t -s "$(printf '\t')" | tee -a "$log"
say ""
say "doctor's energy lines:"
"$gpurun" doctor 2>&1 | awk '/^(PASS|WARN|FAIL) +(GPU|CPU) energy/ { print; e = 1; next } e && /^ +fix:/ { print } { e = 0 }' |
    tee -a "$log"
say "log: $log"
