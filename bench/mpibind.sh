#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gpurun's plans against LLNL mpibind's (issue 28): every export of
# ../shared/topologies and tests/fixtures, six cases each (one rank with
# every GPU, with a thread per GPU and with the default; as many ranks as
# cores, oversubscribed; two ranks per GPU; one rank per GPU; one CPU-only
# rank per NUMA node), each judged identical / both valid / gpurun better /
# gpurun worse with the reason (bench/mpibind-compare.c says how).
#
# mpibind is built here, at run time, from its source tarball
# ($MPIBIND_TARBALL, default ../shared/peer/mpibind-d529180.tar.gz) into
# bench/.mpibind/ (git ignores it): never a dependency of gpurun or of its
# tests.  Needs a gpurun build ($GPURUN_BUILD, default build/) for
# libgpurun, autotools, a C compiler, hwloc and jansson.
# Usage: bench/mpibind.sh [FILE.xml...]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${GPURUN_BUILD:-$top/build}
tarball=${MPIBIND_TARBALL:-$top/../shared/peer/mpibind-d529180.tar.gz}
work=$top/bench/.mpibind
shared=${GPURUN_SHARED_TOPOLOGIES:-$top/../shared/topologies}

[ -f "$build/lib/.libs/libgpurun.so" ] || { echo "no libgpurun in $build (build gpurun first, or set GPURUN_BUILD)"; exit 3; }
[ -f "$tarball" ] || { echo "no mpibind source at $tarball (set MPIBIND_TARBALL)"; exit 3; }
for tool in autoreconf make cc pkg-config; do
    command -v $tool >/dev/null || { echo "$tool not found"; exit 3; }
done

# Build mpibind once per tarball (its configure asks git for a version
# unless MPIBIND_VERSION is set, as its README for this snapshot says).
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
if [ "$(cat "$work/built" 2>/dev/null)" != "$sum" ]; then
    rm -rf "$work"
    mkdir -p "$work/src"
    tar -xzf "$tarball" -C "$work/src"
    src=$(find "$work/src" -maxdepth 2 -name configure.ac -exec dirname {} \; | head -1)
    (cd "$src" && MPIBIND_VERSION=0.23.1 ./bootstrap && ./configure --prefix="$work/prefix" --quiet &&
        make -j2 >/dev/null && make install >/dev/null) >"$work/build.log" 2>&1 ||
        { echo "mpibind did not build; see $work/build.log"; exit 3; }
    echo "$sum" >"$work/built"
fi

# The comparison program, against the public libgpurun of this build.
cc -std=gnu11 -O2 -Wall -o "$work/mpibind-compare" "$top/bench/mpibind-compare.c" \
    -I"$top/launcher/lib" -I"$work/prefix/include" \
    -L"$build/lib/.libs" -L"$work/prefix/lib" -lgpurun -lmpibind \
    $(pkg-config --cflags --libs hwloc jansson) \
    -Wl,-rpath,"$build/lib/.libs" -Wl,-rpath,"$work/prefix/lib"

if [ $# -eq 0 ]; then
    [ -d "$shared" ] && set -- "$shared"/*.xml
    set -- "$@" "$top"/tests/fixtures/*.xml
fi
unset GPURUN_TOPOLOGY
echo "mpibind $(tar -tzf "$tarball" | head -1 | tr -d /) from $(basename "$tarball"); gpurun $("$build/launcher/gpurun" --version 2>/dev/null | head -1)"
echo "gpurun plans with oversubscribe = true (mpibind never refuses: it stacks)."
echo
exec "$work/mpibind-compare" "$@"
