#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# libgpurun as installed: the shared library exports the functions of
# gpurun.h and nothing else (nm -D), under a soname of its own; `make install
# DESTDIR=...` installs it with gpurun.h and gpurun.pc; examples/libgpurun/plan.c,
# built outside the tree with `pkg-config --cflags --libs gpurun` (shared, and
# with --static against libgpurun.a), plans what `gpurun plan --json` plans
# for the same request and topology, and gives a rank's binding and
# environment as the plan has them.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

SO=$top_builddir/lib/.libs/libgpurun.so
if [ ! -f "$SO" ]; then
    echo "1..0 # SKIP $SO not built (configured with --disable-shared?)"
    exit 0
fi
for tool in nm objdump pkg-config jq; do
    if ! command -v $tool >/dev/null 2>&1; then
        echo "1..0 # SKIP $tool not found"
        exit 0
    fi
done
unset MAKEFLAGS MFLAGS MAKELEVEL GPURUN_TOPOLOGY
CC=${LIBGPURUN_CC:-cc}

# ---- what the shared library exports --------------------------------------------
grep -o 'gpurun_[a-z_]*(' "$top_srcdir/launcher/lib/gpurun.h" | tr -d '(' | sort -u >"$TMP/header"
nm -D --defined-only "$SO" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u >"$TMP/exported"
diff -u "$TMP/header" "$TMP/exported" >"$TMP/diff"
ok $? "libgpurun.so exports exactly the $(wc -l <"$TMP/header") functions of gpurun.h"
sed 's/^/#   /' "$TMP/diff" | head -20
sed -n 's/^ *\(gpurun_[a-z_]*\);$/\1/p' "$top_srcdir/launcher/lib/libgpurun.map" | sort -u >"$TMP/map"
cmp -s "$TMP/header" "$TMP/map"
ok $? "launcher/lib/libgpurun.map lists the functions of gpurun.h"
nm "$top_builddir/lib/.libs/libgpurun.so" 2>/dev/null | grep -q ' t gpurun_plan_create$'
ok $? "the internal planner is in it, hidden"
objdump -p "$SO" | awk '$1 == "SONAME" { print $2 }' >"$TMP/soname"
grep -qx 'libgpurun\.so\.[0-9][0-9]*' "$TMP/soname"
ok $? "soname $(cat "$TMP/soname")"

# ---- make install DESTDIR=... ---------------------------------------------------
DEST=$TMP/dest
make -C "$top_builddir" install DESTDIR="$DEST" >"$TMP/install.log" 2>&1
ok $? "make install DESTDIR=$DEST"
pc=$(find "$DEST" -name gpurun.pc -path '*/pkgconfig/*' | head -1)
hdr=$(find "$DEST" -name gpurun.h | head -1)
[ -n "$pc" ] && [ -n "$hdr" ] && [ -n "$(find "$DEST" -name 'libgpurun.so.*' -type f)" ] &&
    [ -n "$(find "$DEST" -name libgpurun.a)" ]
ok $? "installed: gpurun.pc, gpurun.h, libgpurun.so.* and libgpurun.a"
if [ -n "${SPANK_GPURUN:-}" ]; then # built: Slurm's spank.h was found
    spank=$(find "$DEST" -name spank_gpurun.so -path '*/slurm/*' | head -1)
    [ -n "$spank" ] && nm -D --defined-only "$spank" | grep -q ' slurm_spank_task_init\| slurm_spank_user_init'
    ok $? "installed: spank_gpurun.so in the Slurm plugin folder (${spank#"$DEST"})"
else
    skip "spank_gpurun.so not built (no Slurm spank.h): not installed"
fi
if [ -z "$pc" ]; then
    tail -5 "$TMP/install.log" | sed 's/^/#   /'
    done_testing
    exit 1
fi
PKG_CONFIG_PATH=$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
PKG_CONFIG_SYSROOT_DIR=$DEST
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
libdir=$(dirname "$(dirname "$pc")")

# ---- a program outside the tree -------------------------------------------------
mkdir "$TMP/app"
cp "$top_srcdir/examples/libgpurun/plan.c" "$TMP/app/"
cd "$TMP/app" || exit 1
# shellcheck disable=SC2046,SC2086
run $CC -Wall -Wextra -Werror -o plan plan.c $(pkg-config --cflags --libs gpurun)
expect_rc 0 "examples/libgpurun/plan.c builds with pkg-config --cflags --libs gpurun"
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
ldd ./plan | grep -q "$libdir/libgpurun.so"
ok $? "it runs with the installed libgpurun.so"
# libgpurun.a with the libraries gpurun.pc requires privately, shared (a
# fully static link needs every static library of hwloc's too).
reqs=$(pkg-config --print-requires-private gpurun | awk '{ print $1 }' | tr '\n' ' ')
# shellcheck disable=SC2046,SC2086
run $CC -Wall -Wextra -Werror -o plan-static plan.c $(pkg-config --cflags gpurun) "$libdir/libgpurun.a" \
    $(pkg-config --libs $reqs) $(pkg-config --libs-only-other --libs-only-l --static gpurun | grep -o -- '-lm\b')
expect_rc 0 "it builds against libgpurun.a and the libraries gpurun.pc requires ($reqs)"
[ -x ./plan-static ] && ! ldd ./plan-static | grep -q libgpurun
ok $? "... without libgpurun.so"

F=$top_srcdir/tests/fixtures
same_plan() { # same_plan DESCRIPTION ARGS...: plan ARGS = gpurun plan --json ARGS
    what=$1
    shift
    for prog in ./plan ./plan-static; do
        "$prog" "$@" >"$TMP/lib.json" 2>"$TMP/lib.err"
        lrc=$?
        "$GPURUN" plan --json "$@" >"$TMP/cli.json" 2>"$TMP/cli.err"
        crc=$?
        if [ $lrc -eq 0 ] && [ $crc -eq 0 ] && cmp -s "$TMP/lib.json" "$TMP/cli.json"; then
            ok 0 "$prog plans what gpurun plan does: $what"
        else
            ok 1 "$prog plans what gpurun plan does: $what (rc $lrc vs $crc)"
            diff -u "$TMP/cli.json" "$TMP/lib.json" | head -20 | sed 's/^/#   /'
            sed 's/^/#   /' "$TMP/lib.err" | head -3
        fi
    done
}
same_plan "2s-4gpu-2nic, defaults" --topology "$F/2s-4gpu-2nic.xml"
same_plan "2s-4gpu-2nic, 2 ranks x 2 GPUs, 3 threads" --topology "$F/2s-4gpu-2nic.xml" --ranks-per-node 2 \
    --gpus-per-rank 2 --threads-per-rank 3
same_plan "cpu-only-2numa, 4 ranks, SMT" --topology "$F/cpu-only-2numa.xml" --ranks-per-node 4 --gpus-per-rank 0 --smt
same_plan "amd-partitioned, defaults" --topology "$F/amd-partitioned.xml"
same_plan "this node, one rank without GPUs" --ranks-per-node 1 --gpus-per-rank 0

# The trial import of a file runs the installed gpurun-topocheck (found from
# the library's own folder: here a DESTDIR, an installation moved as a
# whole), never a fork of the caller: a pthread_atfork child handler that
# exits would fail the load.
cat >"$TMP/app/nofork.c" <<'C'
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <gpurun.h>
static void child_exits(void) { _exit(99); }
int main(int argc, char **argv)
{
    gpurun_error_t err;
    gpurun_topology_t *t;
    (void)argc;
    pthread_atfork(NULL, NULL, child_exits);
    if (gpurun_topology_load(argv[1], 0, &t, &err)) {
        fprintf(stderr, "%s\n", err.text);
        return err.code;
    }
    gpurun_topology_destroy(t);
    return 0;
}
C
# shellcheck disable=SC2046,SC2086
$CC -Wall -Wextra -Werror -o nofork nofork.c $(pkg-config --cflags --libs gpurun) -lpthread
topocheck=$(find "$DEST" -path '*/libexec/gpurun/gpurun-topocheck' -type f | head -1)
[ -n "$topocheck" ] && [ -x "$topocheck" ]
ok $? "installed: gpurun-topocheck in PREFIX/libexec/gpurun (${topocheck#"$DEST"})"
run ./nofork "$F/2s-4gpu-2nic.xml"
expect_rc 0 "a topology file loads in a caller whose fork handlers would fail it: the trial import is not a fork"
if [ -n "$topocheck" ]; then
    mv "$topocheck" "$topocheck.away"
    run ./nofork "$F/2s-4gpu-2nic.xml"
    expect_rc 2 "... and without gpurun-topocheck the library forks (and this caller's handler fails it)"
    contains "$TMP/err" "exit 99" "... naming the child's exit"
    mv "$topocheck.away" "$topocheck"
fi

# One rank's binding and environment, as the plan has them.
run ./plan --topology "$F/2s-4gpu-2nic.xml" --rank 2
expect_rc 0 "plan --rank 2"
"$GPURUN" plan --json --topology "$F/2s-4gpu-2nic.xml" >"$TMP/cli.json"
want_cpus=$(jq -r '.ranks[2].cpus' "$TMP/cli.json")
want_numa=$(jq -r '.ranks[2].numa | map(tostring) | join(",")' "$TMP/cli.json")
head -1 "$TMP/out" | grep -qx "rank 2 cpus $want_cpus mems $want_numa threads $(jq -r '.ranks[2].threads' "$TMP/cli.json")"
ok $? "rank 2's cpus $want_cpus and NUMA $want_numa"
jq -r '.ranks[2].env | to_entries[] | "\(.key)=\(.value)"' "$TMP/cli.json" >"$TMP/env.want"
tail -n +2 "$TMP/out" >"$TMP/env.got"
cmp -s "$TMP/env.want" "$TMP/env.got"
ok $? "rank 2's environment, in the plan's order ($(tr '\n' ' ' <"$TMP/env.got"))"
run ./plan --topology "$F/2s-4gpu-2nic.xml" --ranks-per-node 0
expect_rc 2 "a bad request is exit 2 from the library's code"
contains "$TMP/err" "ranks_per_node = 0 is out of range" "... with its message"

done_testing
