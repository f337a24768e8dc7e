#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Build gpurun in a build folder of its own and run every test (make check).
#   tests/run-all.sh              warnings as errors, build/
#   tests/run-all.sh --sanitize   AddressSanitizer + UBSan, build-asan/
# Ends with the line "N passed, N failed, N skipped".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build
flags=--enable-werror
if [ "${1:-}" = --sanitize ]; then
    build=$top/build-asan
    flags="--enable-werror --enable-sanitizers"
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
fi
cd "$top" || exit 1
[ -x configure ] || ./autogen.sh >/dev/null 2>&1 || { echo "autogen.sh failed"; exit 1; }
mkdir -p "$build" && cd "$build" || exit 1
if [ ! -f Makefile ]; then
    # shellcheck disable=SC2086
    "$top/configure" $flags >configure.out 2>&1 || { cat configure.out; echo "0 passed, 1 failed"; exit 1; }
fi
jobs=$(nproc 2>/dev/null || echo 2)
make -j"$jobs" >make.out 2>&1 || { cat make.out; echo "0 passed, 1 failed"; exit 1; }
make -j"$jobs" check >check.out 2>&1
status=$?
grep -E '^(PASS|FAIL|XFAIL|XPASS|SKIP|ERROR)' check.out | grep -v '^PASS' || true
summary() { sed -n "s/^# $1: *\([0-9]*\).*/\1/p" check.out | tail -1; }
pass=$(summary PASS)
fail=$(summary FAIL)
err=$(summary ERROR)
skip=$(summary SKIP)
if [ -z "$pass" ]; then
    tail -40 check.out
    echo "0 passed, 1 failed"
    exit 1
fi
[ "$status" -ne 0 ] && for f in $(find tests -name '*.log' ! -name test-suite.log); do
    grep -q '^not ok\|^ERROR\|Bail out' "$f" && { echo "--- $f"; grep -v '^ok' "$f" | head -40; }
done
echo "${pass:-0} passed, $(( ${fail:-0} + ${err:-0} )) failed, ${skip:-0} skipped"
exit "$status"
