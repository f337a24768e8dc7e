# SPDX-License-Identifier: BSD-3-Clause
# TAP helpers for the shell tests (POSIX sh). Tests run from `make check`,
# which exports GPURUN (the built program) and top_srcdir.
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${GPURUN:=$top_srcdir/launcher/gpurun}"
FIXTURES=$top_srcdir/tests/fixtures
GOLDEN=$top_srcdir/tests/golden
SHARED_TOPOLOGIES=${GPURUN_SHARED_TOPOLOGIES:-$top_srcdir/../shared/topologies}
tap_n=0
tap_failed=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM

ok() { # ok STATUS DESCRIPTION: passes when STATUS is 0
    tap_n=$((tap_n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $tap_n - $2"
    else
        echo "not ok $tap_n - $2"
        tap_failed=$((tap_failed + 1))
    fi
}

skip() {
    tap_n=$((tap_n + 1))
    echo "ok $tap_n # SKIP $1"
}

diag() { printf '# %s\n' "$@"; }

# run CMD...: runs it, keeping stdout, stderr and the exit status in
# $TMP/out, $TMP/err and $rc.
run() {
    rc=0
    "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
}

# jq_out FILTER: jq -e FILTER on the last command's stdout, read from a copy
# (run would truncate $TMP/out before jq could read it); sets $rc.
jq_out() {
    cp "$TMP/out" "$TMP/out.json"
    run jq -e "$1" "$TMP/out.json"
}

expect_rc() { # expect_rc WANT DESCRIPTION (after run)
    if [ "$rc" -eq "$1" ]; then
        ok 0 "$2"
    else
        ok 1 "$2 (exit $rc, wanted $1)"
        sed 's/^/#   /' "$TMP/err" | head -5
    fi
}

contains() { # contains FILE TEXT DESCRIPTION
    if grep -qF -- "$2" "$1"; then
        ok 0 "$3"
    else
        ok 1 "$3"
        diag "'$2' not found in:"
        sed 's/^/#   /' "$1" | head -10
    fi
}

done_testing() {
    echo "1..$tap_n"
    [ "$tap_failed" -eq 0 ]
}

# rank_output RUN_DIR RANK: that rank's output, wherever its run folder keeps
# it: rank.N.out (output = "per-rank"), else its lines in its host's
# HOST.out without their "N: " label.
rank_output() {
    if [ -f "$1/rank.$2.out" ]; then
        cat "$1/rank.$2.out"
        return
    fi
    for _ro in "$1"/*.out; do
        case "${_ro##*/}" in launcher.out | rank.*.out) continue ;; esac
        [ -f "$_ro" ] && sed -n "s/^$2: //p" "$_ro"
    done
}
# ranks_started RUN_DIR_GLOB: how many ranks printed a first line yet
ranks_started() {
    # shellcheck disable=SC2086 # a pattern
    cat $1/*.out 2>/dev/null | grep -c '^[0-9][0-9]*: '
}
