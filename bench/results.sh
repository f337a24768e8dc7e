#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The results store at size: wall time and peak RSS of `gpurun results
# --rebuild`, `gpurun results` (table, --json, --csv), `gpurun report` and
# `gpurun report --html --svg` over a results folder of SMALL and LARGE
# records (tests/make-records.sh: records as run.c writes them, plan,
# bindings and per-GPU monitoring included), with the ratio LARGE/SMALL of
# each.  Targets (issue 12 §6): at 10,000 records every command under 2 s,
# --rebuild under 10 s, and memory that does not grow with the records.
#
# Usage: bench/results.sh [SMALL [LARGE]]      (1000, 10000)
# Needs GNU time (/usr/bin/time, Debian: time) and a build (GPURUN).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
GPURUN=${GPURUN:-$top/build/launcher/gpurun}
small=${1:-1000}
large=${2:-10000}
case "$small$large" in *[!0-9]* | '') echo "usage: $0 [SMALL [LARGE]]" >&2; exit 2 ;; esac
[ -x "$GPURUN" ] || { echo "build first: $GPURUN not found" >&2; exit 3; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time not found (Debian: time)" >&2; exit 3; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-bench-results.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

# measure NAME N CMD...: "NAME N seconds KiB" into $work/times
measure() {
    name=$1 n=$2
    shift 2
    /usr/bin/time -f '%e %M' -o "$work/t" "$@" >/dev/null 2>"$work/err" || {
        echo "$name at $n failed:" >&2
        cat "$work/err" >&2
        exit 1
    }
    echo "$name $n $(cat "$work/t")" >>"$work/times"
}

for n in "$small" "$large"; do
    d=$work/r$n
    sh "$top/tests/make-records.sh" "$d" "$n" $((n / 100 > 0 ? n / 100 : 1))
    measure "results --rebuild" "$n" "$GPURUN" results --results "$d" --rebuild
    measure "results" "$n" "$GPURUN" results --results "$d"
    measure "results --json" "$n" "$GPURUN" results --results "$d" --json
    measure "results --csv" "$n" "$GPURUN" results --results "$d" --csv
    measure "report" "$n" "$GPURUN" report --results "$d"
    measure "report --html --svg" "$n" "$GPURUN" report --results "$d" --html "$work/r.html" --svg "$work/r.svg"
    rm -rf "$d"
done

echo "gpurun results store: $small and $large records ($(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg))"
awk -v small="$small" -v large="$large" '
    { key = $0; sub(/ [0-9]+ [0-9.]+ [0-9]+$/, "", key)
      n = $(NF - 2); s[key, n] = $(NF - 1); m[key, n] = $NF
      if (!(key in seen)) { seen[key] = 1; order[++k] = key } }
    END {
        printf "%-22s %9s %9s %7s %11s %11s %7s\n", "command", "s@" small, "s@" large, "ratio", "KiB@" small, "KiB@" large, "ratio"
        for (i = 1; i <= k; i++) {
            c = order[i]
            printf "%-22s %9.2f %9.2f %7.1f %11d %11d %7.1f\n", c, s[c, small], s[c, large],
                (s[c, small] > 0 ? s[c, large] / s[c, small] : 0), m[c, small], m[c, large],
                (m[c, small] > 0 ? m[c, large] / m[c, small] : 0)
        }
    }' "$work/times"
