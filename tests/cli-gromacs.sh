#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The water-box example under gpurun: GROMACS builds the box, runs on 2 ranks,
# and the ns/day gpurun records equals the one in GROMACS's own md.log.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if ! command -v gmx_mpi >/dev/null 2>&1 || ! command -v gmx >/dev/null 2>&1; then
    echo "1..0 # SKIP GROMACS not installed (Debian: gromacs)"
    exit 0
fi
# Debian's build uses rdtscp; mdrun refuses to start on CPUs (often virtual
# ones) that do not offer it.
if gmx_mpi --version 2>/dev/null | grep -q 'RDTSCP usage: *enabled' && ! grep -qw rdtscp /proc/cpuinfo; then
    echo "1..0 # SKIP this CPU lacks rdtscp, which Debian's GROMACS build needs: mdrun refuses to start here"
    exit 0
fi
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset GPURUN_TOPOLOGY
run "$GPURUN" run "$top_srcdir/examples/water-box/job.conf" --results "$TMP/results" --quiet \
    --set oversubscribe=true --set params.nsteps=500
expect_rc 0 "the water box runs under gpurun on 2 ranks"
d=$(ls -d "$TMP"/results/water-box/*/ | tail -1)
own=$(awk '/\(ns\/day\)/ { getline; if ($1 == "Performance:") print $2 }' "$d/water-box.log" | tail -1)
rec=$(jq -r '.foms.ns_per_day.value' "$d/record.json")
[ -n "$own" ] && awk -v a="$own" -v b="$rec" 'BEGIN { exit !(a + 0 == b + 0) }'
ok $? "gpurun recorded $rec ns/day, GROMACS's md.log says $own"
[ "$(jq -r .state "$d/record.json")" = ok ]
ok $? "the record's state is ok (Finished mdrun found)"
done_testing
