#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Jobs of real size on one node: gpurun's cost per rank with the local
# launcher and /bin/true at several rank counts (64, 256, 1,024 ranks on the
# node by default), against a bare baseline measured in the same run (the
# same number of /bin/true processes started at once and reaped by a shell,
# no gpurun), and the files each run folder holds.  Interleaved (gpurun, bare,
# gpurun, ...) and reported as medians: these machines are noisy.
#
#   ranks  gpurun_s  bare_s  per_rank_ms  bare_per_ms  over_bare_ms  files
#
# per_rank_ms = gpurun_s / ranks; over_bare_ms = (gpurun_s - bare_s) / ranks.
# The ranks oversubscribe the node's cores (oversubscribe = true).
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
bare() {
    i=0
    while [ "$i" -lt "$1" ]; do
        /bin/true &
        i=$((i + 1))
    done
    wait
}

printf '%-6s %-9s %-8s %-12s %-12s %-13s %s\n' ranks gpurun_s bare_s per_rank_ms bare_per_ms over_bare_ms files
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
        t0=$(now)
        "$GPURUN" run "$tmp/j$n.conf" --quiet >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; exit 1; }
        t1=$(now)
        bare "$n"
        t2=$(now)
        echo "$t1 - $t0" | bc -l >>"$tmp/g$n"
        echo "$t2 - $t1" | bc -l >>"$tmp/b$n"
        r=$((r + 1))
    done
    g=$(median <"$tmp/g$n")
    b=$(median <"$tmp/b$n")
    rd=$(find "$tmp/results/scale$n" -mindepth 1 -maxdepth 1 -type d | head -1)
    files=$(find "$rd" -type f | wc -l)
    printf '%-6d %-9.3f %-8.3f %-12.3f %-12.3f %-13.3f %d\n' "$n" "$g" "$b" "$(echo "$g * 1000 / $n" | bc -l)" \
        "$(echo "$b * 1000 / $n" | bc -l)" "$(echo "($g - $b) * 1000 / $n" | bc -l)" "$files"
    rm -rf "$tmp/results"
done
