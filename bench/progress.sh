#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Does progress cost the workload anything (issue 27 §6)?  The water box's
# ns/day under `gpurun run` with progress at its most eager (a line and a
# look at md.log every second: progress_interval = "1s", 600 times the
# default) against progress off (progress_interval = "off") and against a
# bare `mpirun -np 2 gmx_mpi mdrun` of the same input, alternated over
# REPEATS rounds in one go (these machines are shared and noisy), as the
# ratio of the medians (and the median of the round-by-round ratios); and
# gpurun's own CPU time per run, which the ranks could have had.
# Usage: bench/progress.sh [REPEATS] [NSTEPS]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
GPURUN=${GPURUN:-$top/build/launcher/gpurun}
repeats=${1:-3}
nsteps=${2:-5000}
[ -x "$GPURUN" ] || { echo "build first (tests/run-all.sh builds build/)"; exit 3; }
command -v gmx_mpi >/dev/null || { echo "gmx_mpi not found (Debian: gromacs)"; exit 3; }
if gmx_mpi --version 2>/dev/null | grep -q 'RDTSCP usage: *enabled' && ! grep -qw rdtscp /proc/cpuinfo; then
    echo "this CPU lacks rdtscp, which Debian's GROMACS build needs: mdrun cannot run here"
    exit 3
fi
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$top/examples/water-box/topol.top" "$top/examples/water-box/md.mdp" "$tmp/"
(cd "$tmp" && gmx -nobackup solvate -cs spc216.gro -box 3.72412 3.72412 3.72412 -o conf.gro -p topol.top &&
    gmx -nobackup grompp -f md.mdp -c conf.gro -p topol.top -o bench.tpr) >"$tmp/prep.log" 2>&1
cat >"$tmp/job.conf" <<JOB
job = "progress"
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
# one INTERVAL: a gpurun run, off a terminal; its ns/day, and (in
# $tmp/cpu.INTERVAL) gpurun's own CPU time, user + system, from its
# /proc/PID/stat while it runs (its children's are not in it).
one() {
    GPURUN_TEMPLATE_PATH="$top/templates" "$GPURUN" run "$tmp/job.conf" --results "$tmp/results" \
        --set progress_interval="$1" >/dev/null 2>"$tmp/err.$1" </dev/null &
    p=$! last=0
    while kill -0 "$p" 2>/dev/null; do
        t=$(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$p/stat" 2>/dev/null) && [ -n "$t" ] && last=$t
        sleep 0.2
    done
    wait "$p"
    echo "$last" >>"$tmp/cpu.$1"
    jq -r .foms.ns_per_day.value "$tmp/results/progress/latest/record.json"
}
on= off= bare=
i=0
while [ "$i" -lt "$repeats" ]; do
    on="$on $(one 1s)"
    off="$off $(one off)"
    (cd "$tmp" && mpirun -np 2 --oversubscribe gmx_mpi mdrun -s bench.tpr -deffnm bare -ntomp 1 -nsteps "$nsteps" \
        -resethway -noconfout >/dev/null 2>&1 </dev/null)
    bare="$bare $(perf "$tmp/bare.log")"
    i=$((i + 1))
done
lines=$(grep -c "ranks alive" "$tmp/err.1s" || true)
hz=$(getconf CLK_TCK)
cpu() { awk -v hz="$hz" '{ s = s sprintf(" %.2f", $1 / hz) } END { print s }' "$tmp/cpu.$1"; }
median() { printf '%s\n' $1 | sort -g | awk '{ a[NR] = $1 } END { print (a[int((NR + 1) / 2)] + a[int(NR / 2) + 1]) / 2 }'; }
echo "water box, 2 ranks, $nsteps steps, $repeats rounds (progress 1s, progress off, bare), alternated (ns/day)"
echo "gpurun, progress_interval 1s:  $on   median $(median "$on")   ($lines progress lines in the last run)"
echo "gpurun, progress_interval off: $off   median $(median "$off")"
echo "bare mpirun gmx_mpi mdrun:     $bare   median $(median "$bare")"
awk -v a="$(median "$on")" -v b="$(median "$off")" -v c="$(median "$bare")" \
    'BEGIN { printf "ratio progress on / off (medians): %.3f\nratio progress on / bare (medians): %.3f\n", a / b, a / c }'
# Round by round (each pair ran back to back): less of the machine's drift.
pairs=$(printf '%s\n%s\n' "$on" "$off" | awk 'NR == 1 { n = split($0, a) } NR == 2 { split($0, b); for (i = 1; i <= n; i++) print a[i] / b[i] }')
echo "ratio progress on / off, round by round: $(echo $pairs)   median $(median "$pairs")"
echo "gpurun's own CPU seconds (user + system) per run: progress 1s:$(cpu 1s)   off:$(cpu off)"
