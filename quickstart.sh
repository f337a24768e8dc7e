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
# As root, Open MPI wants to be told that this is meant.
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ -x examples/hello/hello ]; then
    echo
    echo "== gpurun run examples/hello/job.conf (every rank reports where it runs)"
    ./launcher/gpurun run examples/hello/job.conf --quiet
    # One output file per host, every line labelled with its rank.
    run=$(ls -d examples/hello/results/hello/*/ | tail -1)
    for out in "$run"*.out; do
        [ "${out##*/}" = launcher.out ] || cat "$out"
    done
fi
echo
echo "== gpurun run ../examples/water-box/job.conf (GROMACS, 2 ranks: ns/day)"
if gmx_mpi --version 2>/dev/null | grep -q 'RDTSCP usage: *enabled' && ! grep -qw rdtscp /proc/cpuinfo; then
    # Debian's GROMACS is built to use rdtscp; mdrun refuses CPUs without it
    # (often virtual ones).  Show the same path with LAMMPS instead.
    echo "GROMACS cannot run on this CPU: Debian's gmx_mpi needs the rdtscp instruction, which"
    echo "this CPU does not offer (mdrun stops at start-up). Running the LAMMPS example instead:"
    ./launcher/gpurun run ../examples/lj-melt/job.conf --results results
else
    ./launcher/gpurun run ../examples/water-box/job.conf --results results
fi
echo
echo "== gpurun results; gpurun report --html results/report.html"
./launcher/gpurun results --results results
./launcher/gpurun report --results results --html results/report.html
echo
echo "Next: a scaling study, the water box on 1 and 2 ranks, and its report (speedup, parallel efficiency):"
echo "  build/launcher/gpurun run examples/water-box/scan.conf --results build/results"
echo "  build/launcher/gpurun report --results build/results --job water-box-scan"
