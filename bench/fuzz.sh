#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The libFuzzer harnesses of tests/fuzz, each for SECONDS (wall clock), one
# after the other, from the same seeds as tests/cli-fuzz.sh: prints per
# target the inputs executed, inputs per wall and per CPU second (on a shared
# machine the CPU rate is the one to extrapolate from), and the crashes
# (leaks and sanitizer reports included), out-of-memory runs and timeouts.
# Fuzzing goes on after a finding (libFuzzer's -fork=1 -ignore_*), and every
# reproducer is kept in ARTIFACTS/TARGET/ (default fuzz-artifacts/):
# minimise one with `fuzz-TARGET -minimize_crash=1 -runs=100000 FILE`, then
# make it a regression input (tests/fuzz/regressions/TARGET/, README.md there).
#
# Usage: bench/fuzz.sh [SECONDS [TARGET...]]        (120, every target built;
#                                                    spank needs Slurm's spank.h)
# Needs the harnesses built: `make fuzz` in a build configured with clang
# found (FUZZ_BIN: their folder, default build/tests/fuzz).  The corpus grown
# is kept in CORPUS/TARGET (default: a temporary folder, removed).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
FUZZ_BIN=${FUZZ_BIN:-$top/build/tests/fuzz}
ARTIFACTS=${ARTIFACTS:-$PWD/fuzz-artifacts}
seconds=${1:-120}
case "$seconds" in *[!0-9]* | '') echo "usage: $0 [SECONDS [TARGET...]]" >&2; exit 2 ;; esac
[ $# -gt 0 ] && shift
targets=${*:-job set template site batch topo fom record $([ -x "$FUZZ_BIN/fuzz-spank" ] && echo spank)}
work=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-fuzz-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
CORPUS=${CORPUS:-$work/corpus}
export top_srcdir="$top"

printf '%-9s %7s %11s %9s %9s %12s %8s %5s %8s\n' target wall_s execs exec/s cpu_s exec/cpu_s crashes ooms timeouts
total_found=0
for t in $targets; do
    prog=$FUZZ_BIN/fuzz-$t
    if [ ! -x "$prog" ]; then
        echo "$0: $prog not built (make fuzz)" >&2
        exit 2
    fi
    sh "$top/tests/fuzz/corpus.sh" "$t" "$work/seeds-$t"
    mkdir -p "$CORPUS/$t" "$ARTIFACTS/$t"
    start=$(date +%s)
    # shellcheck disable=SC2046
    /usr/bin/time -f '%U %S' -o "$work/time-$t" "$prog" -fork=1 -ignore_crashes=1 -ignore_ooms=1 \
        -ignore_timeouts=1 -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=20 \
        $(sh "$top/tests/fuzz/corpus.sh" --options "$t") -artifact_prefix="$ARTIFACTS/$t/" \
        "$CORPUS/$t" "$work/seeds-$t" >"$work/log-$t" 2>&1 || true
    wall=$(($(date +%s) - start))
    # the last status line: "#N: cov: ... oom/timeout/crash: O/T/C time: ..."
    last=$(grep -E '^#[0-9]+: cov:' "$work/log-$t" | tail -1)
    execs=$(echo "$last" | sed -n 's/^#\([0-9]*\):.*/\1/p')
    found=$(echo "$last" | sed -n 's|.*oom/timeout/crash: \([0-9]*\)/\([0-9]*\)/\([0-9]*\).*|\1 \2 \3|p')
    set -- ${found:-? ? ?}
    # the last line: GNU time puts "Command exited with non-zero status N" before it
    cpu=$(tail -n 1 "$work/time-$t" | awk '{ printf "%.1f", $1 + $2 }')
    awk -v t="$t" -v w="$wall" -v e="${execs:-0}" -v c="$cpu" -v o="$1" -v to="$2" -v cr="$3" 'BEGIN {
        printf "%-9s %7d %11d %9.0f %9.1f %12.0f %8s %5s %8s\n", t, w, e, (w ? e / w : 0), c, (c > 0 ? e / c : 0), cr, o, to }'
    for n in "$@"; do case $n in [0-9]*) total_found=$((total_found + n)) ;; esac; done
    if [ -z "$execs" ]; then
        echo "# $t: no status line; the end of its log:" && tail -5 "$work/log-$t" | sed 's/^/#   /'
    fi
done
n=$(find "$ARTIFACTS" -type f | wc -l)
echo "# reproducers kept in $ARTIFACTS: $n"
[ "$total_found" -eq 0 ]
