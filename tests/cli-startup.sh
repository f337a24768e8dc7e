#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Start-up work that does not follow the job (issue 12 §4): the results
# index's WAL is emptied at the end of each command, so that opening the
# index does not read again every run the folder ever had; and a live
# topology discovery does not look for X displays (hwloc's GL component),
# finding the same topology all the same.  No timing: what is checked is the
# WAL's size and which calls are made.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

unset GPURUN_TOPOLOGY HWLOC_COMPONENTS
printf 'job = "t"\ncommand = "/bin/true"\nlauncher = "local"\nranks_per_node = 1\nthreads_per_rank = 1\ngpus_per_rank = 0\noversubscribe = true\nresults = "%s"\n' \
    "$TMP/results" >"$TMP/t.conf"

run "$GPURUN" run "$TMP/t.conf" --quiet
expect_rc 0 "a first run"
wal=$TMP/results/results.db-wal
if [ ! -f "$wal" ]; then
    skip "no WAL in $TMP/results (a file system SQLite's WAL is not used on)"
else
    first=$(wc -c <"$wal")
    i=0
    while [ "$i" -lt 4 ]; do
        "$GPURUN" run "$TMP/t.conf" --quiet || break
        i=$((i + 1))
    done
    after=$(wc -c <"$wal")
    [ "$i" -eq 4 ] && [ "$after" -le "$first" ] && [ "$after" -eq 0 ]
    ok $? "results.db-wal does not grow with the runs: $first bytes after one run, $after after five"
    run "$GPURUN" results --results "$TMP/results" --json
    [ "$rc" -eq 0 ] && [ "$(jq length "$TMP/out")" = 5 ]
    ok $? "... and the index has all five runs"
fi

# hwloc's GL component, where installed, connects to X displays :0 to :9.
# LeakSanitizer cannot run under ptrace: off for the traced runs (ASan builds).
traced_asan="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
if ! command -v strace >/dev/null 2>&1; then
    skip "strace not found (Debian: strace)"
elif ! strace -qq -o /dev/null true 2>/dev/null; then
    skip "strace cannot trace here (ptrace not allowed)"
elif ! for p in /usr/lib/*/hwloc/hwloc_gl.so /usr/lib/hwloc/hwloc_gl.so /usr/lib64/hwloc/hwloc_gl.so; do
    [ -f "$p" ] && break
done; then
    skip "hwloc's GL plugin (hwloc_gl.so) is not installed: nothing to leave out"
else
    run strace -f -e trace=connect -o "$TMP/connect" env ASAN_OPTIONS="$traced_asan" "$GPURUN" topo --json
    [ "$rc" -eq 0 ] && ! grep -q 'X11-unix\|htons(600[0-9])' "$TMP/connect"
    ok $? "a live discovery tries no X display ($(grep -c 'X11-unix' "$TMP/connect") tries)"
    run strace -f -e trace=connect -o "$TMP/connect2" env ASAN_OPTIONS="$traced_asan" HWLOC_COMPONENTS= "$GPURUN" topo --json
    grep -q 'X11-unix' "$TMP/connect2"
    ok $? "... while HWLOC_COMPONENTS, set by a site, is left to choose (GL tried)"
fi
run "$GPURUN" topo --export "$TMP/trimmed.xml"
r1=$rc
run env HWLOC_COMPONENTS= "$GPURUN" topo --export "$TMP/full.xml"
[ "$r1" -eq 0 ] && [ "$rc" -eq 0 ] && cmp -s "$TMP/trimmed.xml" "$TMP/full.xml"
ok $? "the live topology is the one a discovery with every component finds"
done_testing
