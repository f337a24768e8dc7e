#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The libFuzzer harnesses of tests/fuzz, briefly: each target runs its seeds
# and its regression inputs (tests/fuzz/regressions/TARGET, every crash found
# so far: none may crash again), then fuzzes for FUZZ_SECONDS (3) from the
# seeds.  A crash, leak, timeout or memory blow-up fails the target, with
# the reproducer named and kept in tests/fuzz-artifacts/TARGET/ (beside the test
# log).  The fuzzing here starts from a fixed seed (FUZZ_SEED, 1; 0: libFuzzer
# picks one), so that one tree gives one verdict: finding new crashes is
# bench/fuzz.sh's work, with random seeds and for longer.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if [ -n "${FUZZ_SKIP:-}" ]; then
    skip "fuzz harnesses not built: $FUZZ_SKIP"
    done_testing
    exit
fi
seconds=${FUZZ_SECONDS:-3}
seed=${FUZZ_SEED:-1}
artifacts=$PWD/tests/fuzz-artifacts
verdict() { # TARGET DESCRIPTION: after run
    if [ "$rc" -eq 0 ]; then
        ok 0 "$2"
    else
        ok 1 "$2 (exit $rc)"
        grep -E 'ERROR|SUMMARY|Running:|Test unit written' "$TMP/err" | head -8 | sed 's/^/#   /'
    fi
}

# spank: only where the SPANK plugin is built (Slurm's spank.h); make sets FUZZ_TARGETS
for t in ${FUZZ_TARGETS:-job set template site batch topo fom record hpldat $([ -x "$FUZZ_BIN/fuzz-spank" ] && echo spank)}; do
    prog=$FUZZ_BIN/fuzz-$t
    if [ ! -x "$prog" ]; then
        ok 1 "$t: $prog was not built"
        continue
    fi
    sh "$top_srcdir/tests/fuzz/corpus.sh" "$t" "$TMP/seeds-$t"
    opts="-rss_limit_mb=2048 -timeout=20 $(sh "$top_srcdir/tests/fuzz/corpus.sh" --options "$t")"
    # the seeds once, in one process
    run "$prog" $opts "$TMP/seeds-$t"/*
    verdict "$t" "$t: its seeds run clean"
    # each regression input once, in a process of its own
    for r in "$top_srcdir/tests/fuzz/regressions/$t"/*; do
        [ -f "$r" ] || continue
        run "$prog" $opts "$r"
        verdict "$t" "$t: regression input $(basename "$r") runs clean"
    done
    rm -rf "$artifacts/$t"
    mkdir -p "$TMP/corpus-$t" "$artifacts/$t"
    run "$prog" -seed="$seed" -max_total_time="$seconds" $opts -print_final_stats=1 \
        -artifact_prefix="$artifacts/$t/" "$TMP/corpus-$t" "$TMP/seeds-$t"
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$TMP/err")
    if [ -z "$execs" ] && [ "$rc" -eq 0 ]; then rc=1; fi # it never got to fuzz
    verdict "$t" "$t: fuzzed ${seconds}s from seed $seed clean (${execs:-no} inputs)"
    for a in "$artifacts/$t"/*; do
        [ -f "$a" ] && diag "$t: reproducer $(basename "$a"), its first bytes:" && od -c "$a" | head -4 | sed 's/^/#   /'
    done
done
done_testing
