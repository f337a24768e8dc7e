#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Does gpurun under Flux cost the workload anything?  The water box's ns/day
# under `gpurun run` with launcher = "flux" against a plain `flux run -N1
# --tasks-per-node=2 gmx_mpi mdrun` of the same input (Flux's own binding
# on: each task on its core), alternated run by run (which goes first too) in one Flux instance
# (these machines are noisy), as the ratio of the medians; 0.98 or more is
# expected.  flux-core: on PATH, else where scripts/install-flux.sh puts it.
#   Usage: bench/flux.sh [REPEATS] [NSTEPS]        (default 3, 2000)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
GPURUN=${GPURUN:-$top/build/launcher/gpurun}
repeats=${1:-3}
nsteps=${2:-2000}
[ -x "$GPURUN" ] || { echo "build first (tests/run-all.sh builds build/)"; exit 3; }
command -v flux >/dev/null 2>&1 || PATH=${GPURUN_FLUX_PREFIX:-/opt/flux-core-0.88.0}/bin:$PATH
command -v flux >/dev/null 2>&1 || { echo "no flux-core: scripts/install-flux.sh builds it"; exit 3; }
command -v gmx_mpi >/dev/null || { echo "gmx_mpi not found (Debian: gromacs)"; exit 3; }
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GPURUN FLUX_BENCH_REPEATS=$repeats FLUX_BENCH_NSTEPS=$nsteps
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export FLUX_BENCH_TMP=$tmp
# The input, built once as the example builds it.
cp "$top/examples/water-box/topol.top" "$top/examples/water-box/md.mdp" "$tmp/"
(cd "$tmp" && gmx -nobackup solvate -cs spc216.gro -box 3.72412 3.72412 3.72412 -o conf.gro -p topol.top &&
    gmx -nobackup grompp -f md.mdp -c conf.gro -p topol.top -o bench.tpr) >"$tmp/prep.log" 2>&1
cat >"$tmp/job.conf" <<JOB
job = "fluxbench"
template = "gromacs"
launcher = "flux"
ranks_per_node = 2
gpus_per_rank = 0
threads_per_rank = 1
params { tpr = "$tmp/bench.tpr"  nsteps = $nsteps }
env { GMX_MAXBACKUP = "-1" }
JOB
# The runs, as the first program of a one-broker instance.
cat >"$tmp/runs.sh" <<'RUNS'
set -eu
t=$FLUX_BENCH_TMP
perf() { awk '/\(ns\/day\)/ { getline; if ($1 == "Performance:") v = $2 } END { print v }' "$1"; }
with_gpurun() {
    GPURUN_TEMPLATE_PATH="$FLUX_BENCH_TOP/templates" "$GPURUN" run "$t/job.conf" --quiet --results "$t/results" >/dev/null
    d=$(ls -d "$t"/results/fluxbench/*/ | tail -1)
    echo "gpurun $(jq -r .foms.ns_per_day.value "$d/record.json")" >>"$t/figures"
}
plain() {
    (cd "$t" && GMX_MAXBACKUP=-1 flux run -N1 --tasks-per-node=2 gmx_mpi mdrun -s bench.tpr -deffnm plain -ntomp 1 \
        -nsteps "$FLUX_BENCH_NSTEPS" -resethway -noconfout >/dev/null 2>&1)
    echo "plain $(perf "$t/plain.log")" >>"$t/figures"
}
# Alternated, and which goes first alternates too: gpurun, plain; plain,
# gpurun; ...
i=0
while [ "$i" -lt "$FLUX_BENCH_REPEATS" ]; do
    if [ $((i % 2)) -eq 0 ]; then with_gpurun; plain; else plain; with_gpurun; fi
    i=$((i + 1))
done
RUNS
FLUX_BENCH_TOP=$top flux start sh "$tmp/runs.sh"
median() { printf '%s\n' $1 | sort -g | awk '{ a[NR] = $1 } END { print (a[int((NR + 1) / 2)] + a[int(NR / 2) + 1]) / 2 }'; }
g=$(awk '$1 == "gpurun" { print $2 }' "$tmp/figures" | tr '\n' ' ')
p=$(awk '$1 == "plain" { print $2 }' "$tmp/figures" | tr '\n' ' ')
echo "water box, 2 ranks, $nsteps steps, $repeats runs each, alternated in one Flux instance (ns/day)"
echo "  gpurun (launcher = flux): $g  median $(median "$g")"
echo "  plain flux run:           $p  median $(median "$p")"
awk -v g="$(median "$g")" -v p="$(median "$p")" \
    'BEGIN { r = g / p; printf "ratio gpurun / plain flux run = %.3f (%s 0.98)\n", r, (r >= 0.98 ? ">=" : "below") }'
