# SPDX-License-Identifier: BSD-3-Clause
# TAP helpers for the shell tests (POSIX sh). Tests run from `make check`,
# which exports GPURUN (the built program) and top_srcdir.
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${GPURUN:=$top_srcdir/launcher/gpurun}"
FIXTURES=$top_srcdir/tests/fixtures
GOLDEN=$top_srcdir/tests/golden
SHARED_TOPOLOGIES=${GPURUN_SHARED_TOPOLOGIES:-$top_srcdir/../shared/topologies}
# A test sees the node as a live discovery does, whatever an earlier test or
# run left in the topology cache: tests/cli-topocache.sh turns it on, with
# a cache folder of its own.
export GPURUN_TOPOLOGY_CACHE=0
# The busy verdict off (its figures still measured) in every test but
# tests/cli-conditions.sh, which unsets it: `make check` runs two tests at
# once on two cores, so each test's ranks are the other's "other
# processes", and a verdict would add warnings to a run's output and its
# record with the suite's own load, not the test's doing.
export GPURUN_BUSY_SHARE=off
tap_n=0
tap_failed=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM

# fake_tpr FILE: the smallest file gpurun takes for a GROMACS run input (a
# GROMACS 2022 header announcing the 16 bytes of body that follow): for dry
# runs and submit, which check a template's inputs; mdrun would refuse it.
fake_tpr() {
    printf '\000\000\000\017\000\000\000\016VERSION 2022.5\000\000\000\000\000\004\000\000\000\177\000\000\000\034\000\000\000\010\000\000\000\007release\000\000\000\000\003\000\000\000\001\000\000\000\000\000\000\000\000\000\000\000\001\000\000\000\001\000\000\000\001\000\000\000\000\000\000\000\000\000\000\000\001\000\000\000\000\000\000\000\020\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000' >"$1"
}

# gmx_needs_rdtscp: true when GROMACS's mdrun cannot start on this CPU:
# Debian's build uses the rdtscp instruction, which some (often virtual)
# CPUs do not offer.
gmx_needs_rdtscp() {
    gmx_mpi --version 2>/dev/null | grep -q 'RDTSCP usage: *enabled' && ! grep -qw rdtscp /proc/cpuinfo
}

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

# todo WHY: a known defect, said as TAP's expected failure (XFAIL): counted
# and shown in every log, not a pass; it turns into an ok check once fixed.
todo() {
    tap_n=$((tap_n + 1))
    echo "not ok $tap_n # TODO $1"
}

diag() { printf '# %s\n' "$@"; }

# run CMD...: runs it, keeping stdout, stderr and the exit status in
# $TMP/out, $TMP/err and $rc.
run() {
    rc=0
    "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
}

# jq_out FILTER: jq -e FILTER on the last command's stdout, read from a copy
# (run would truncate $TMP/out before jq could read it); sets $rc.  Empty
# output fails (rc 4, as jq -e's "no result"): jq 1.6 -e exits 0 on empty
# input, which passed the check of a command that printed nothing.
jq_out() {
    cp "$TMP/out" "$TMP/out.json"
    if [ ! -s "$TMP/out.json" ]; then
        cp "$TMP/err" "$TMP/err.cmd" 2>/dev/null
        run sh -c 'echo "jq_out: the command printed nothing; its stderr:" >&2; cat "$1" >&2; exit 4' sh \
            "$TMP/err.cmd"
        return
    fi
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
# ranks_started RUN_DIR_GLOB: how many ranks printed a first line yet (in
# the run folders the glob names: RESULTS/JOB/latest, a symlink to one of
# them, is not counted twice)
ranks_started() {
    # shellcheck disable=SC2086 # a pattern
    for _rs in $1; do
        [ -L "$_rs" ] || cat "$_rs"/*.out 2>/dev/null
    done | grep -c '^[0-9][0-9]*: '
}

# free_ports N: N TCP ports that nothing listens on now, from the kernel:
# tests run side by side and bring up clusters of their own, so no fixed
# ones.  Without python3, ports from the pid (still apart from the others).
free_ports() {
    python3 -c 'import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))' "$1" 2>/dev/null ||
        awk -v n="$1" -v p=$$ 'BEGIN { for (i = 0; i < n; i++) printf "%d ", 20000 + p % 4000 * 8 + i }'
}

# need_spank_h: SPANK_H, Slurm's spank.h, or the whole test skipped saying
# why (a test that builds a SPANK plugin of its own).
need_spank_h() {
    SPANK_H=
    for _sh_d in /usr/include /usr/local/include; do
        [ -f "$_sh_d/slurm/spank.h" ] && SPANK_H=$_sh_d/slurm/spank.h
    done
    if [ -z "$SPANK_H" ]; then
        echo "1..0 # SKIP no slurm/spank.h to build the fake pyxis plugin (Debian: libslurm-dev)"
        exit 0
    fi
}

# cluster_up SCRIPT WHAT: brings up a test cluster (SCRIPT up, a script of
# tests/cluster/) and sources the exports it prints.  A missing
# prerequisite (exit 77) skips the whole test, saying why; a cluster that
# does not come up bails out.  The caller tears it down (SCRIPT down).
cluster_up() {
    _cu_rc=0
    "$1" up >"$TMP/exports" 2>"$TMP/up.err" || _cu_rc=$?
    if [ "$_cu_rc" -eq 77 ]; then
        echo "1..0 # SKIP no $2: $(tail -1 "$TMP/up.err")"
        exit 0
    fi
    if [ "$_cu_rc" -ne 0 ]; then
        echo "Bail out! the $2 did not come up: $(tail -3 "$TMP/up.err" | tr '\n' ' ')"
        exit 1
    fi
    . "$TMP/exports"
}

# netns_share_build: each host of the netns cluster has a /tmp and a
# /dev/shm of its own; a build or source tree there (a clone under /tmp) is
# bound into every host at its own path (GPURUN_NETNS_SHARE, before
# cluster_up).  The folders of the programs the test runs and both trees.
netns_share_build() {
    _ns=
    for _p in "$top_srcdir" "${top_builddir:-}" "$(dirname "$GPURUN")" ${HELLO:+"$(dirname "$HELLO")"} \
        ${NETCHECK:+"$(dirname "$NETCHECK")"}; do
        [ -n "$_p" ] && [ -d "$_p" ] || continue
        _p=$(realpath "$_p")
        case $_p in
            /tmp/* | /dev/shm/*) _ns="$_ns $_p" ;;
        esac
    done
    export GPURUN_NETNS_SHARE="$_ns"
}

# slurm_cluster_up: the one-node Slurm test cluster
# (tests/cluster/slurm-single.sh) in $TMP/slurm, on two free ports unless
# GPURUN_SLURMCTLD_PORT and GPURUN_SLURMD_PORT say which, torn down when
# the test exits; as cluster_up otherwise.  GPURUN_SLURM_PLUGSTACK, when
# set, is the cluster's.
slurm_cluster_up() {
    # shellcheck disable=SC2046 # two words
    set -- $(free_ports 2)
    export GPURUN_SLURM_DIR="$TMP/slurm"
    export GPURUN_SLURMCTLD_PORT="${GPURUN_SLURMCTLD_PORT:-$1}" GPURUN_SLURMD_PORT="${GPURUN_SLURMD_PORT:-$2}"
    slurm_cluster=$top_srcdir/tests/cluster/slurm-single.sh
    trap '"$slurm_cluster" down >/dev/null 2>&1; rm -rf "$TMP"' EXIT INT TERM
    cluster_up "$slurm_cluster" "Slurm test cluster"
}

# find_flux: flux-core's flux on PATH: the one there, else the one
# scripts/install-flux.sh installs ($GPURUN_FLUX_PREFIX, default
# /opt/flux-core-0.88.0); false, with $flux_missing saying why, when there is
# none that works.
find_flux() {
    _ff=${GPURUN_FLUX_PREFIX:-/opt/flux-core-0.88.0}/bin
    if ! command -v flux >/dev/null 2>&1 && [ -x "$_ff/flux" ]; then
        PATH=$_ff:$PATH
        export PATH
    fi
    command -v flux >/dev/null 2>&1 && flux version >/dev/null 2>&1 && return 0
    flux_missing="no flux-core (no flux on PATH nor in ${_ff%/bin}): scripts/install-flux.sh builds it from ../shared/vendor/flux-core-0.88.0.tar.gz"
    [ -f "$top_srcdir/../shared/vendor/flux-core-0.88.0.tar.gz" ] || flux_missing="$flux_missing, which is not there"
    return 1
}

# flux_test_instance N: a `flux start --test-size=N` instance of this test's
# own, kept up until the test exits (its EXIT trap stops it, then removes
# $TMP), with FLUX_URI exported.  Brokers 1..N-1 play hosts flux1, flux2...:
# a job shell rc file sets GPURUN_HOST in their tasks (the job shell reads
# its rc path from the job's environment: gpurun's).  One TAP check says the
# instance is up; when it is not, its log is printed and the test ends.
flux_test_instance() {
    mkdir -p "$TMP/shellrc"
    echo 'if shell.info.rank > 0 then shell.setenv ("GPURUN_HOST", "flux" .. shell.info.rank) end' \
        >"$TMP/shellrc/gpurun-host.lua"
    FLUX_SHELL_RC_PATH=$TMP/shellrc
    export FLUX_SHELL_RC_PATH
    flux start --test-size="$1" \
        sh -c 'echo $$ >"$1.pid" && echo "$FLUX_URI" >"$1.tmp" && mv "$1.tmp" "$1" && exec sleep 3600' sh "$TMP/uri" \
        >"$TMP/flux-start.log" 2>&1 &
    flux_pid=$!
    # The instance ends when its initial program does: a TERM to flux start
    # alone left its brokers (and the sleep) running after the test.
    trap 'stop_flux; rm -rf "$TMP"' EXIT
    _n=0
    while [ ! -s "$TMP/uri" ] && [ $_n -lt 600 ]; do sleep 0.1; _n=$((_n + 1)); done
    [ -s "$TMP/uri" ]
    ok $? "flux start --test-size=$1: an instance of $1 brokers"
    if [ ! -s "$TMP/uri" ]; then
        sed 's/^/#   /' "$TMP/flux-start.log" | tail -10
        done_testing
        exit 1
    fi
    FLUX_URI=$(cat "$TMP/uri")
    export FLUX_URI
}
stop_flux() {
    [ -s "$TMP/uri.pid" ] && kill -TERM "$(cat "$TMP/uri.pid")" 2>/dev/null
    wait "$flux_pid" 2>/dev/null
}

# find_chromium: sets $chromium to the headless browser on PATH (chromium,
# chromium-browser or google-chrome); false, and empty, when there is none.
find_chromium() {
    for chromium in chromium chromium-browser google-chrome; do
        command -v "$chromium" >/dev/null 2>&1 && return 0
    done
    chromium=
    return 1
}

# browse ARGS...: that Chromium, headless, of this test's own (its HOME and
# profile in $TMP, nothing fetched on its own), for at most 120 s; what it
# says on stderr is added to $TMP/chromium.log.
browse() {
    mkdir -p "$TMP/home" "$TMP/profile"
    HOME=$TMP/home timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$TMP/profile" "$@" 2>>"$TMP/chromium.log"
}

# png_size FILE: WIDTHxHEIGHT of the PNG image FILE; nothing when FILE is
# no PNG.
png_size() {
    [ "$(head -c 8 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || return 0
    od -An -j16 -N8 -tu1 "$1" |
        awk '{print ($1*16777216 + $2*65536 + $3*256 + $4) "x" ($5*16777216 + $6*65536 + $7*256 + $8)}'
}
