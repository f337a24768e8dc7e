#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# How much planning adds to loading a topology: `gpurun plan --json` on the
# largest XML in ../shared/topologies against `hwloc-calc` loading the same
# file, interleaved in one run (these machines are noisy), as a ratio of
# medians.  GPURUN_BASELINE=OTHER/gpurun also times another build the same
# way (say, one before a change to the topology import) and prints the
# difference of medians.  Usage: bench/plan.sh [REPEATS] [FILE.xml]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
GPURUN=${GPURUN:-$top/build/launcher/gpurun}
[ -x "$GPURUN" ] || GPURUN=$top/launcher/gpurun
repeats=${1:-30}
shared=${GPURUN_SHARED_TOPOLOGIES:-$top/../shared/topologies}
xml=${2:-$(ls -S "$shared"/*.xml 2>/dev/null | head -1)}
[ -n "$xml" ] && [ -f "$xml" ] || { echo "no topology XML (give one, or provide $shared)"; exit 3; }
command -v hwloc-calc >/dev/null || { echo "hwloc-calc not found (Debian package hwloc)"; exit 3; }

now() { date +%s%N; }
base=${GPURUN_BASELINE:-}
times_plan=
times_calc=
times_base=
i=0
while [ "$i" -lt "$repeats" ]; do
    t0=$(now); "$GPURUN" plan --topology "$xml" --json >/dev/null 2>&1 || true
    t1=$(now); hwloc-calc -i "$xml" --number-of pu all >/dev/null
    t2=$(now)
    if [ -n "$base" ]; then
        "$base" plan --topology "$xml" --json >/dev/null 2>&1 || true
        t3=$(now)
        times_base="$times_base $(( (t3 - t2) / 1000 ))"
    fi
    times_plan="$times_plan $(( (t1 - t0) / 1000 ))"
    times_calc="$times_calc $(( (t2 - t1) / 1000 ))"
    i=$((i + 1))
done
median() { printf '%s\n' $1 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mp=$(median "$times_plan")
mc=$(median "$times_calc")
echo "topology: $(basename "$xml") ($(wc -c <"$xml") bytes), $repeats runs each, interleaved"
printf '%-44s %8s us\n' "hwloc-calc -i FILE --number-of pu all" "$mc"
printf '%-44s %8s us\n' "gpurun plan --topology FILE --json" "$mp"
awk -v p="$mp" -v c="$mc" 'BEGIN { printf "ratio gpurun plan / hwloc-calc load: %.2f\n", p / c }'
if [ -n "$base" ]; then
    mb=$(median "$times_base")
    printf '%-44s %8s us\n' "baseline $base" "$mb"
    awk -v p="$mp" -v b="$mb" 'BEGIN { printf "gpurun plan - baseline: %+.1f ms\n", (p - b) / 1000 }'
fi
