#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gpurun topo through the command line: tables, JSON, export round trip,
# the live node compared with hwloc's own tools, and bad input.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

run "$GPURUN" topo --topology "$FIXTURES/2s-4gpu-2nic.xml"
expect_rc 0 "topo of a fixture"
contains "$TMP/out" "mlx5_0       0000:14:00.0   infiniband  ib0      0      0-7,16-23" "NIC row: PCI, kind, netdev, NUMA, cpus"
contains "$TMP/out" "0    0000:13:00.0   nvidia  NVIDIA A100-SXM4-40GB        0      0-7,16-23" "GPU row"
contains "$TMP/out" "GPU0   X      PIX    SYS    SYS    PIX    SYS    0-7,16-23         0" "affinity matrix row as nvidia-smi topo -m"
contains "$TMP/out" "Not planned for MPI:" "plain Ethernet listed apart"
grep -Eq '^  eth0 +0000:01:00.0 +ethernet +plain Ethernet$' "$TMP/out"
ok $? "... with its PCI address, kind and why"

run "$GPURUN" topo --topology "$FIXTURES/2s-4gpu-2nic.xml" --json
expect_rc 0 "topo --json"
jq_out '.gpurun_topo == 1 and .topology.cores == 16 and (.topology.gpus | length) == 4
           and .topology.affinity.gpu_nic[0] == ["PIX","SYS"] and (.topology.ethernet[0].name == "eth0")'
expect_rc 0 "topo --json has the topology and the affinity matrix"
cp "$TMP/out" "$TMP/topo.json"

run "$GPURUN" topo --topology "$FIXTURES/gpu-order-not-numa.xml" --json
jq_out '.topology.offline_pus == "7,15,31" and .topology.pus == 29'
expect_rc 0 "offline PUs are reported and not counted"

run "$GPURUN" topo --topology "$FIXTURES/2s-4gpu-2nic.xml" --export "$TMP/exported.xml"
expect_rc 0 "topo --export"
run "$GPURUN" plan --topology "$TMP/exported.xml" --json
jq 'del(.topology.source)' "$TMP/out" >"$TMP/a.json"
"$GPURUN" plan --topology "$FIXTURES/2s-4gpu-2nic.xml" --json | jq 'del(.topology.source)' >"$TMP/b.json"
cmp -s "$TMP/a.json" "$TMP/b.json"
ok $? "an exported topology plans exactly like the original"

run env GPURUN_TOPOLOGY="$FIXTURES/cpu-only-2numa.xml" "$GPURUN" topo --json
jq_out '.topology.hostname == "fix-cpuonly"'
expect_rc 0 "GPURUN_TOPOLOGY stands in an export for the live node"

# %h: one variable names each host's own export.
short=$(hostname | cut -d. -f1)
cp "$FIXTURES/2s-4gpu-2nic.xml" "$TMP/topo-$short.xml"
run env GPURUN_TOPOLOGY="$TMP/topo-%h.xml" "$GPURUN" topo --json
jq_out '.topology.hostname == "fix-2s4g"'
expect_rc 0 "GPURUN_TOPOLOGY's %h is this host's name"

# The live node: gpurun must count what hwloc's own tools count.
unset GPURUN_TOPOLOGY
run "$GPURUN" topo --json
expect_rc 0 "topo of this node"
pus=$(jq .topology.pus "$TMP/out")
if command -v hwloc-calc >/dev/null 2>&1; then
    want=$(hwloc-calc --number-of pu all)
    [ "$pus" = "$want" ]
    ok $? "live PUs ($pus) = hwloc-calc --number-of pu all ($want)"
    want=$(hwloc-calc --number-of core all)
    [ "$(jq .topology.cores "$TMP/out")" = "$want" ]
    ok $? "live cores = hwloc-calc --number-of core all ($want)"
else
    skip "hwloc-calc not installed"
    skip "hwloc-calc not installed"
fi
run "$GPURUN" topo --export "$TMP/live.xml"
expect_rc 0 "export this node"
run "$GPURUN" topo --topology "$TMP/live.xml" --json
[ "$(jq .topology.pus "$TMP/out")" = "$pus" ]
ok $? "this node's export reloads with the same PUs"

run "$GPURUN" topo --topology "$TMP"
expect_rc 2 "a directory as topology is exit 2"
contains "$TMP/err" "is not a regular file (a directory)" "... and says so"
printf 'not xml\n' >"$TMP/bad.xml"
run "$GPURUN" topo --topology "$TMP/bad.xml"
expect_rc 2 "a file that is not hwloc XML is exit 2"
contains "$TMP/err" "bad.xml: not an hwloc XML topology" "... and names the file"
run "$GPURUN" topo --topology "$TMP/missing.xml"
expect_rc 2 "a missing topology file is exit 2"
run "$GPURUN" topo --bogus
expect_rc 2 "an unknown option is exit 2"
contains "$TMP/err" "gpurun: topo: unknown or incomplete option '--bogus'" "... naming the option"
run "$GPURUN" topo --help
expect_rc 0 "topo --help"
contains "$TMP/out" "Usage: gpurun topo" "topo --help prints the usage"

done_testing
