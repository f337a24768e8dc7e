#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Sanitizer builds: LeakSanitizer's check at exit survives a dynamic TLS block
# that its __tls_get_addr interceptor (GCC < 14, LLVM < 17) misreads.
# tests/dtls/dtls-trigger.so puts one at page offset 16 before main(), where
# the heap layout alone put libOpenCL's (hwloc's OpenCL plugin) and crashed
# the tracer: "Tracer caught signal 11", exit 1 instead of the program's.
# And gpurun run by hand needs no LSAN_OPTIONS for the libraries' leaks.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

dtls=${top_builddir:-.}/tests/dtls
victim=${top_builddir:-.}/tests/dtls-victim
if [ ! -f "$dtls/dtls-trigger.so" ] || [ ! -f "$dtls/dtls-module.so" ] || [ ! -x "$victim" ]; then
    echo "1..0 # SKIP $dtls/dtls-*.so or $victim not built (make check builds them)"
    exit 0
fi
# The trigger's block comes back to ld.so only without quarantine; gpurun is
# linked to the ASan runtime, so the preloaded trigger comes before it.
trigger_asan="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1:verify_asan_link_order=0:quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
suite_lsan=${LSAN_OPTIONS:-}
# LSAN_OPTIONS as the suite had them before: suppressions, no TLS setting.
plain_lsan=suppressions=$top_srcdir/tests/lsan.supp:print_suppressions=0:fast_unwind_on_malloc=0
triggered() { # triggered LSAN_OPTIONS CMD...: runs CMD under the trigger
    lsan=$1
    shift
    run env LD_PRELOAD="$dtls/dtls-trigger.so" DTLS_MODULE="$dtls/dtls-module.so" ASAN_OPTIONS="$trigger_asan" \
        LSAN_OPTIONS="$lsan" "$@"
}

triggered "$plain_lsan" "$GPURUN" --version
if grep -q 'dtls-trigger: not under AddressSanitizer' "$TMP/err"; then
    echo "1..0 # SKIP gpurun is not built with AddressSanitizer (configure --enable-sanitizers)"
    exit 0
fi
contains "$TMP/err" "dtls-trigger: TLS block at page offset 16" "the trigger puts a TLS block at page offset 16"
expect_rc 0 "gpurun --version exits 0 with it, by its own sanitizer defaults"
! grep -q 'Tracer caught' "$TMP/err"
ok $? "... and LeakSanitizer's tracer does not crash"

# By hand, without the suite's LSAN_OPTIONS: gpurun carries the suppression
# of tests/lsan.supp for the library leak of live discovery (hwloc's PCI
# plugin, libpciaccess) and the full stacks it needs.
run env -u LSAN_OPTIONS -u GPURUN_TOPOLOGY "$GPURUN" topo
expect_rc 0 "gpurun topo of this node without LSAN_OPTIONS exits 0"
! grep -q 'LeakSanitizer' "$TMP/err"
ok $? "... with no leak report"

triggered "$suite_lsan" "$victim"
contains "$TMP/err" "dtls-trigger: TLS block at page offset 16" "the same for a test program"
expect_rc 0 "... which exits 0 under the suite's LSAN_OPTIONS"

done_testing
