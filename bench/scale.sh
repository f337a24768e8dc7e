#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Jobs of real size on one node: gpurun's cost per rank with the local
# launcher and /bin/true at several rank counts (64, 256, 1,024 ranks on the
# node by default), against a bare baseline measured in the same run (the
# same number of /bin/true processes started at once and reaped by a shell,
# no gpurun), and the files each run folder holds.  Interleaved (gpurun, bare,
# gpurun, ...) and reported as medians: these machines are noisy, so the
# processor time (user + system of gpurun and all under it, GNU time) is
# given beside the wall time: it is what a busy node's load changes least.
#
#   ranks  gpurun_s  bare_s  x_bare  over_bare_ms  cpu_ms  bare_cpu_ms  cpu_over_ms  files
#
# x_bare = gpurun_s / bare_s; over_bare_ms = (gpurun_s - bare_s) / ranks;
# cpu_ms, bare_cpu_ms: processor time per rank; cpu_over_ms = their
# difference.  Last, the per-rank costs over bare at the largest rank count
# as a multiple of those at the smallest (the goal: at most 1.2), and what
# each rank more costs over bare between them (gpurun's fixed work, the
# same for any number of ranks, left out: the goal, at most 1 ms).
# The ranks oversubscribe the node's cores (oversubscribe = true).
# GPURUN_FULL_RANK_STEP=1 makes the ranks start through `gpurun rank` (the
# whole program) instead of gpurun-rank, to compare.
#
# Then many hosts, simulated (bench/sim-mpirun plays mpirun for H hosts x 8
# ranks on this node, three topologies mixed; $SCALE_HOSTS, default
# "100 1000", "" to skip), one run each:
#
#   hosts  ranks  wall_s  launcher_s  head_s  peak_rss_mb  files  in_record
#
# head_s = wall_s - launcher_s: gpurun's own work (planning, writing the
# inputs, merging the hosts' reports, the record); peak_rss_mb is the
# largest resident size of gpurun and every process under it (GNU time);
# in_record: ranks with a binding and a status / host plans in record.json.
#
# Last, the results store at 1,000 and 10,000 records: bench/results.sh, which
# prints each command's time and memory and their ratio 10,000/1,000
# ($SCALE_RECORDS, default "1000 10000", "" to skip).
#
# Usage: bench/scale.sh [REPEATS [RANKS...]]      (5; 64 256 1024)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
GPURUN=${GPURUN:-$top/build/launcher/gpurun}
repeats=${1:-5}
[ $# -gt 0 ] && shift
sizes=${*:-64 256 1024}
case "$repeats" in *[!0-9]* | '' | 0) echo "usage: $0 [REPEATS [RANKS...]]" >&2; exit 2 ;; esac
for n in $sizes; do
    case "$n" in *[!0-9]* | '' | 0) echo "usage: $0 [REPEATS [RANKS...]]" >&2; exit 2 ;; esac
done
[ -x "$GPURUN" ] || { echo "build first: no $GPURUN" >&2; exit 3; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now() { date +%s.%N; }
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# bare N: N processes started at once and reaped, as a launcher would
bare_sh='i=0; while [ "$i" -lt "$1" ]; do /bin/true & i=$((i + 1)); done; wait'

[ -x /usr/bin/time ] || { echo "GNU time (/usr/bin/time) not found" >&2; exit 3; }
# timed FILE CMD...: appends "wall cpu" (seconds) of CMD to FILE.  The wall
# time is the clock's, in ns, around GNU time (whose %e counts in 10 ms: 40
# ms between the two sides at 64 ranks was a quarter of its own step); the
# processor time is GNU time's, summed over every process under CMD.
timed() {
    f=$1
    shift
    t0=$(now)
    /usr/bin/time -f '%U %S' -o "$tmp/time" "$@" || return 1
    t1=$(now)
    tail -1 "$tmp/time" | awk -v w="$(echo "$t1 - $t0" | bc -l)" '{print w, $1 + $2}' >>"$f"
}
printf '%-6s %-9s %-8s %-7s %-13s %-7s %-12s %-12s %s\n' ranks gpurun_s bare_s x_bare over_bare_ms cpu_ms \
    bare_cpu_ms cpu_over_ms files
small='' big='' first_over='' first_cpu='' last_over='' last_cpu=
for n in $sizes; do
    cat >"$tmp/j$n.conf" <<EOF
job = "scale$n"
command = "/bin/true"
launcher = "local"
ranks_per_node = $n
threads_per_rank = 1
oversubscribe = true
results = "$tmp/results"
EOF
    : >"$tmp/g$n"
    : >"$tmp/b$n"
    r=0
    while [ "$r" -lt "$repeats" ]; do
        timed "$tmp/g$n" "$GPURUN" run "$tmp/j$n.conf" --quiet >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; exit 1; }
        timed "$tmp/b$n" sh -c "$bare_sh" sh "$n"
        r=$((r + 1))
    done
    g=$(cut -d' ' -f1 "$tmp/g$n" | median) gc=$(cut -d' ' -f2 "$tmp/g$n" | median)
    b=$(cut -d' ' -f1 "$tmp/b$n" | median) bc=$(cut -d' ' -f2 "$tmp/b$n" | median)
    rd=$(find "$tmp/results/scale$n" -mindepth 1 -maxdepth 1 -type d | head -1)
    files=$(find "$rd" -type f | wc -l)
    over=$(echo "($g - $b) * 1000 / $n" | bc -l) cover=$(echo "($gc - $bc) * 1000 / $n" | bc -l)
    printf '%-6d %-9.3f %-8.3f %-7.2f %-13.3f %-7.3f %-12.3f %-12.3f %d\n' "$n" "$g" "$b" "$(echo "$g / $b" | bc -l)" \
        "$over" "$(echo "$gc * 1000 / $n" | bc -l)" "$(echo "$bc * 1000 / $n" | bc -l)" "$cover" "$files"
    [ -n "$first_over" ] || small=$n first_over=$over first_cpu=$cover sg=$g sb=$b sgc=$gc sbc=$bc
    big=$n last_over=$over last_cpu=$cover
    rm -rf "$tmp/results"
done
if [ "$big" != "$small" ]; then
    printf 'per rank over bare, %s ranks against %s: wall x%.2f, cpu x%.2f\n' "$big" "$small" \
        "$(echo "$last_over / $first_over" | bc -l)" "$(echo "$last_cpu / $first_cpu" | bc -l)"
    # What one rank more costs, gpurun's fixed work (planning, record) left out.
    printf 'each rank more, over bare (%s to %s ranks): wall %.3f ms, cpu %.3f ms\n' "$small" "$big" \
        "$(echo "(($g - $sg) - ($b - $sb)) * 1000 / ($big - $small)" | bc -l)" \
        "$(echo "(($gc - $sgc) - ($bc - $sbc)) * 1000 / ($big - $small)" | bc -l)"
fi

if [ -n "${SCALE_HOSTS-100 1000}" ]; then
    mkdir "$tmp/bin"
    ln -s "$top/bench/sim-mpirun" "$tmp/bin/mpirun"
    fx=$top/tests/fixtures
    export GPURUN_SIM_TOPOLOGIES="$fx/2s-4gpu-2nic.xml $fx/cpu-only-2numa.xml $fx/single-gpu-ws.xml"
    echo
    printf '%-6s %-6s %-8s %-11s %-7s %-12s %-6s %s\n' hosts ranks wall_s launcher_s head_s peak_rss_mb files in_record
    for h in ${SCALE_HOSTS-100 1000}; do
        cat >"$tmp/h$h.conf" <<EOF
job = "hosts$h"
command = "/bin/true"
launcher = "mpirun"
nodes = $h
ranks_per_node = 8
threads_per_rank = 1
bind = "none"
oversubscribe = true
results = "$tmp/results"
EOF
        : >"$tmp/times"
        t0=$(now)
        PATH="$tmp/bin:$PATH" GPURUN_SIM_TIMES="$tmp/times" /usr/bin/time -f %M -o "$tmp/rss" \
            "$GPURUN" run "$tmp/h$h.conf" --quiet >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; exit 1; }
        t1=$(now)
        l0=$(sed -n 1p "$tmp/times") l1=$(sed -n 2p "$tmp/times")
        rd=$(find "$tmp/results/hosts$h" -mindepth 1 -maxdepth 1 -type d | head -1)
        inrec=$(jq -r '"\([range(0; .ranks) as $i | select(.bindings[$i].host and .rank_status[$i].exit_code == 0)] | length)/\(.host_plans | length)"' \
            "$rd/record.json")
        printf '%-6d %-6d %-8.2f %-11.2f %-7.2f %-12.1f %-6d %s\n' "$h" $((h * 8)) "$(echo "$t1 - $t0" | bc -l)" \
            "$(echo "$l1 - $l0" | bc -l)" "$(echo "($t1 - $t0) - ($l1 - $l0)" | bc -l)" \
            "$(echo "$(tail -1 "$tmp/rss") / 1024" | bc -l)" "$(find "$rd" -type f | wc -l)" "$inrec"
        rm -rf "$tmp/results"
    done
fi

records=${SCALE_RECORDS-1000 10000}
if [ -n "$records" ]; then
    echo
    # shellcheck disable=SC2086 # two numbers
    GPURUN=$GPURUN sh "$top/bench/results.sh" $records
fi
