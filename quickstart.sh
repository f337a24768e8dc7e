#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Set up (Debian packages, build) and show what gpurun sees and plans on this
# node.  Only the package step needs root (it uses sudo when not root).
set -e
cd "$(dirname "$0")"
scripts/install-deps.sh
[ -x configure ] || ./autogen.sh >/dev/null 2>&1
mkdir -p build
cd build
[ -f Makefile ] || ../configure >configure.out
make -j"$(nproc)" >make.out
echo "== gpurun topo"
./launcher/gpurun topo
echo
echo "== gpurun plan"
./launcher/gpurun plan
if [ -x examples/hello/hello ]; then
    # As root, Open MPI wants to be told that this is meant.
    [ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    echo
    echo "== gpurun run examples/hello/job.conf (every rank reports where it runs)"
    ./launcher/gpurun run examples/hello/job.conf --set oversubscribe=true
    cat "$(ls -d examples/hello/results/hello/*/ | tail -1)"rank.*.out
fi
