#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Does gpurun under PBS cost the workload anything?  Inside one PBS job on
# the one-node test complex (tests/cluster/pbs-complex.sh), the water box
# under `gpurun run` (launcher pbs: mpirun with the job's node file, gpurun
# binding each rank) against a plain `mpirun -machinefile $PBS_NODEFILE -np 2
# --bind-to core gmx_mpi mdrun` of the same input, alternated run by run
# (which goes first too), as the ratio of the medians; 0.98 or more is
# expected.  Where GROMACS cannot run (no gmx_mpi, or a CPU without rdtscp,
# which Debian's build needs), the workload is the synthetic one instead:
# a fixed amount of CPU work per rank (a shell loop), the figure the
# slowest rank's own time for it, measured inside the rank as mdrun
# measures its ns/day (lower is better; the ratio is plain / gpurun so that
# >= 0.98 means the same).  It says which it ran.
#   Usage: bench/pbs.sh [REPEATS] [NSTEPS]        (default 3, 2000; root)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
GPURUN=${GPURUN:-$top/build/launcher/gpurun}
repeats=${1:-3}
nsteps=${2:-2000}
[ -x "$GPURUN" ] || { echo "build first (tests/run-all.sh builds build/)"; exit 3; }
EXEC=${GPURUN_PBS_EXEC:-/opt/pbs}
[ -x "$EXEC/bin/qsub" ] || { echo "no OpenPBS in $EXEC: scripts/install-pbs.sh builds it"; exit 3; }
. "$top/tests/lib.sh" # gmx_needs_rdtscp; its $TMP is this run's folder
workload=water
if ! command -v gmx_mpi >/dev/null 2>&1 || ! command -v gmx >/dev/null 2>&1; then
    workload=synthetic why="no gmx_mpi and gmx"
elif gmx_needs_rdtscp; then
    workload=synthetic why="this CPU lacks rdtscp, which Debian's GROMACS build needs"
fi
mkdir -p /var/lib/gpurun-pbs && chmod 0755 /var/lib/gpurun-pbs
GPURUN_PBS_DIR=/var/lib/gpurun-pbs/bench-$$
export GPURUN_PBS_DIR
C=$top/tests/cluster/pbs-complex.sh
trap 'sh "$C" stop >/dev/null 2>&1; rmdir /var/lib/gpurun-pbs 2>/dev/null; rm -rf "$TMP"' EXIT INT TERM
sh "$C" start >"$TMP/env" || { echo "the PBS complex did not start"; exit 3; }
t=$TMP/b
mkdir -p "$t"
if [ "$workload" = water ]; then
    cp "$top/examples/water-box/topol.top" "$top/examples/water-box/md.mdp" "$t/"
    (cd "$t" && gmx -nobackup solvate -cs spc216.gro -box 3.72412 3.72412 3.72412 -o conf.gro -p topol.top &&
        gmx -nobackup grompp -f md.mdp -c conf.gro -p topol.top -o bench.tpr) >"$t/prep.log" 2>&1
    cat >"$t/job.conf" <<JOB
job = "pbsbench"
template = "gromacs"
ranks_per_node = 2
gpus_per_rank = 0
threads_per_rank = 1
params { tpr = "$t/bench.tpr"  nsteps = $nsteps }
env { GMX_MAXBACKUP = "-1" }
JOB
    plain_cmd="gmx_mpi mdrun -s $t/bench.tpr -deffnm $t/plain -ntomp 1 -nsteps $nsteps -resethway -noconfout"
else
    # The same CPU work in every rank: a busy loop of fixed length.
    cat >"$t/spin" <<'SPIN'
#!/bin/sh
s=$(date +%s.%N)
i=0
while [ $i -lt 400000 ]; do i=$((i + 1)); done
echo "elapsed $(echo "$(date +%s.%N) - $s" | bc)"
SPIN
    chmod +x "$t/spin"
    cat >"$t/job.conf" <<JOB
job = "pbsbench"
command = "$t/spin"
ranks_per_node = 2
gpus_per_rank = 0
threads_per_rank = 1
JOB
    plain_cmd="$t/spin"
fi
# The runs, inside one PBS job.
cat >"$t/runs.sh" <<RUNS
#!/bin/sh
#PBS -N pbsbench
#PBS -l select=1:ncpus=2:mpiprocs=2
#PBS -l walltime=01:00:00
#PBS -o $t/job.out
#PBS -j oe
set -eu
perf() { awk '/\(ns\/day\)/ { getline; if (\$1 == "Performance:") v = \$2 } END { print v }' "\$1"; }
slowest() { cat "\$@" | sed -n 's/.*elapsed \([0-9.]*\).*/\1/p' | sort -g | tail -n 1; }
with_gpurun() {
    GPURUN_TEMPLATE_PATH=$top/templates $GPURUN run $t/job.conf --quiet --results $t/results >/dev/null
    d=\$(ls -d $t/results/pbsbench/*Z-*/ | tail -1)
    if [ $workload = water ]; then v=\$(jq -r .foms.ns_per_day.value "\$d/record.json"); else v=\$(slowest "\$d"/*.out); fi
    echo "gpurun \$v" >>$t/figures
}
plain() {
    (cd $t && GMX_MAXBACKUP=-1 mpirun -machinefile "\$PBS_NODEFILE" -np 2 --bind-to core $plain_cmd >$t/plain.out 2>&1)
    if [ $workload = water ]; then v=\$(perf $t/plain.log); else v=\$(slowest $t/plain.out); fi
    echo "plain \$v" >>$t/figures
}
i=0
while [ \$i -lt $repeats ]; do
    if [ \$((i % 2)) -eq 0 ]; then with_gpurun; plain; else plain; with_gpurun; fi
    i=\$((i + 1))
done
echo done >$t/finished
RUNS
id=$(sh "$C" run qsub "$t/runs.sh")
n=0
while [ ! -f "$t/finished" ] && [ $n -lt 3600 ]; do
    sh "$C" run qstat -x -f "$id" 2>/dev/null | grep -q '^ *job_state = [FX]' && break
    sleep 1
    n=$((n + 1))
done
[ -f "$t/finished" ] || { echo "the PBS job $id did not finish its runs:"; cat "$t/job.out" 2>/dev/null; exit 1; }
median() { printf '%s\n' $1 | sort -g | awk '{ a[NR] = $1 } END { print (a[int((NR + 1) / 2)] + a[int(NR / 2) + 1]) / 2 }'; }
g=$(awk '$1 == "gpurun" { print $2 }' "$t/figures" | tr '\n' ' ')
p=$(awk '$1 == "plain" { print $2 }' "$t/figures" | tr '\n' ' ')
if [ "$workload" = water ]; then
    echo "water box, 2 ranks, $nsteps steps, $repeats runs each, alternated in one PBS job $id (ns/day)"
    echo "  gpurun (launcher pbs):         $g  median $(median "$g")"
    echo "  plain mpirun -machinefile:     $p  median $(median "$p")"
    awk -v g="$(median "$g")" -v p="$(median "$p")" \
        'BEGIN { r = g / p; printf "ratio gpurun / plain mpirun = %.3f (%s 0.98)\n", r, (r >= 0.98 ? ">=" : "below") }'
else
    echo "synthetic workload (a fixed CPU loop per rank; not the water box: $why), 2 ranks,"
    echo "$repeats runs each, alternated in one PBS job $id (the slowest rank's seconds, lower is better)"
    echo "  gpurun (launcher pbs):         $g  median $(median "$g")"
    echo "  plain mpirun -machinefile:     $p  median $(median "$p")"
    awk -v g="$(median "$g")" -v p="$(median "$p")" \
        'BEGIN { r = p / g; printf "ratio plain / gpurun time = %.3f (%s 0.98)\n", r, (r >= 0.98 ? ">=" : "below") }'
fi
