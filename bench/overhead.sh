#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Does gpurun cost the workload anything?  The water box's ns/day under
# `gpurun run` against a bare `mpirun -np 2 gmx_mpi mdrun` of the same input,
# interleaved over repeated runs in one go (these machines are noisy), as the
# ratio of the means.  Usage: bench/overhead.sh [REPEATS] [NSTEPS]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
GPURUN=${GPURUN:-$top/build/launcher/gpurun}
repeats=${1:-5}
nsteps=${2:-2000}
[ -x "$GPURUN" ] || { echo "build first (tests/run-all.sh builds build/)"; exit 3; }
command -v gmx_mpi >/dev/null || { echo "gmx_mpi not found (Debian: gromacs)"; exit 3; }
if gmx_mpi --version 2>/dev/null | grep -q 'RDTSCP usage: *enabled' && ! grep -qw rdtscp /proc/cpuinfo; then
    echo "this CPU lacks rdtscp, which Debian's GROMACS build needs: mdrun cannot run here"
    exit 3
fi
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The input, built once as the example builds it.
cp "$top/examples/water-box/topol.top" "$top/examples/water-box/md.mdp" "$tmp/"
(cd "$tmp" && gmx -nobackup solvate -cs spc216.gro -box 3.72412 3.72412 3.72412 -o conf.gro -p topol.top &&
    gmx -nobackup grompp -f md.mdp -c conf.gro -p topol.top -o bench.tpr) >"$tmp/prep.log" 2>&1
cat >"$tmp/job.conf" <<JOB
job = "overhead"
template = "gromacs"
ranks_per_node = 2
gpus_per_rank = 0
threads_per_rank = 1
oversubscribe = true
launcher = "mpirun"
params { tpr = "$tmp/bench.tpr"  nsteps = $nsteps }
env { GMX_MAXBACKUP = "-1" }
JOB
perf() { awk '/\(ns\/day\)/ { getline; if ($1 == "Performance:") v = $2 } END { print v }' "$1"; }
g= b=
i=0
while [ "$i" -lt "$repeats" ]; do
    GPURUN_TEMPLATE_PATH="$top/templates" "$GPURUN" run "$tmp/job.conf" --quiet --results "$tmp/results" >/dev/null
    d=$(ls -d "$tmp"/results/overhead/*/ | tail -1)
    g="$g $(jq -r .foms.ns_per_day.value "$d/record.json")"
    (cd "$tmp" && mpirun -np 2 --oversubscribe gmx_mpi mdrun -s bench.tpr -deffnm bare -ntomp 1 -nsteps "$nsteps" \
        -resethway -noconfout >/dev/null 2>&1)
    b="$b $(perf "$tmp/bare.log")"
    i=$((i + 1))
done
mean() { printf '%s\n' $1 | awk '{ s += $1; n++ } END { printf "%.3f", s / n }'; }
median() { printf '%s\n' $1 | sort -g | awk '{ a[NR] = $1 } END { print (a[int((NR + 1) / 2)] + a[int(NR / 2) + 1]) / 2 }'; }
echo "water box, 2 ranks, $nsteps steps, $repeats runs each, interleaved (ns/day)"
echo "bare mpirun gmx_mpi mdrun:$b   mean $(mean "$b")  median $(median "$b")"
echo "gpurun run (gromacs):     $g   mean $(mean "$g")  median $(median "$g")"
awk -v g="$(median "$g")" -v b="$(median "$b")" 'BEGIN { printf "ratio gpurun / bare (medians): %.3f\n", g / b }'
