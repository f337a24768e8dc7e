#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# What gpurun adds to starting a job: `gpurun run` of a trivial 2-rank MPI
# job against a bare `mpirun -np 2` of the same program, interleaved in one
# run (these machines are noisy), as medians and their ratio.
# Usage: bench/launch.sh [REPEATS]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
GPURUN=${GPURUN:-$top/build/launcher/gpurun}
HELLO=${HELLO:-$top/build/examples/hello/hello}
repeats=${1:-20}
[ -x "$GPURUN" ] && [ -x "$HELLO" ] || { echo "build first (tests/run-all.sh builds build/)"; exit 3; }
command -v mpirun >/dev/null || { echo "mpirun not found (Debian: openmpi-bin)"; exit 3; }
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/job.conf" <<JOB
command = "$HELLO"
launcher = "mpirun"
ranks_per_node = 2
threads_per_rank = 1
oversubscribe = true
JOB
now() { date +%s%N; }
tg= tm=
i=0
while [ "$i" -lt "$repeats" ]; do
    t0=$(now); "$GPURUN" run "$tmp/job.conf" --quiet >/dev/null
    t1=$(now); mpirun -np 2 --oversubscribe --bind-to none "$HELLO" >/dev/null
    t2=$(now)
    tg="$tg $(( (t1 - t0) / 1000 ))"
    tm="$tm $(( (t2 - t1) / 1000 ))"
    i=$((i + 1))
done
median() { printf '%s\n' $1 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mg=$(median "$tg")
mm=$(median "$tm")
echo "2-rank job, $repeats runs each, interleaved (median wall time)"
printf '%-52s %8s us\n' "mpirun -np 2 hello" "$mm"
printf '%-52s %8s us\n' "gpurun run job.conf (mpirun, 2 ranks)" "$mg"
awk -v g="$mg" -v m="$mm" 'BEGIN { printf "ratio gpurun / mpirun: %.2f   (gpurun adds %.1f ms)\n", g / m, (g - m) / 1000 }'
