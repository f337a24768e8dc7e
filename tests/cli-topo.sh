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

# Malformed exports (issue 11): hwloc 2.9's importer crashes on some (no
# complete sets on the root or on a child), misreads others.  gpurun refuses
# every one with exit 2, naming the file and what is wrong, in topo and plan.
for f in "$FIXTURES"/malformed/*.xml; do
    name=malformed/$(basename "$f")
    run "$GPURUN" topo --topology "$f"
    expect_rc 2 "topo refuses $name"
    contains "$TMP/err" "$(basename "$f")" "... naming the file"
    grep -Eq 'not (a well-formed hwloc export|an hwloc XML topology)' "$TMP/err"
    ok $? "... saying it is not a well-formed export"
    run "$GPURUN" plan --topology "$f" --json
    expect_rc 2 "plan refuses $name"
done
run "$GPURUN" topo --topology "$FIXTURES/malformed/root-no-complete-sets.xml"
contains "$TMP/err" "root-no-complete-sets.xml:4: a Machine object without complete_cpuset" \
    "the refusal names the line and the attribute"
# A NIC's OS devices without names: gpurun died of SIGSEGV naming the NIC.
sh "$FIXTURES/malformed/generate.sh" "$FIXTURES/2s-4gpu-2nic.xml" "$TMP/mangled-2nic"
run "$GPURUN" plan --topology "$TMP/mangled-2nic/osdev-without-name.xml" --json
expect_rc 2 "plan refuses a NIC whose OS devices have no name"
contains "$TMP/err" "osdev-without-name.xml:54: an OSDev object without a name" "... naming the line"
# The same manglings of every real export, made here: each refused with exit 2.
if [ -d "$SHARED_TOPOLOGIES" ]; then
    for src in "$SHARED_TOPOLOGIES"/*.xml; do
        base=$(basename "$src" .xml)
        sh "$FIXTURES/malformed/generate.sh" "$src" "$TMP/mangled/$base"
        bad=
        for f in "$TMP/mangled/$base"/*.xml; do
            run "$GPURUN" plan --topology "$f" --json
            [ "$rc" -eq 2 ] || bad="$bad $(basename "$f") (exit $rc)"
        done
        [ -z "$bad" ]
        ok $? "every mangling of $base.xml is refused with exit 2${bad:+:$bad}"
    done
else
    skip "no $SHARED_TOPOLOGIES: manglings of real exports not checked"
fi

# Limits (doc/gpurun.1, LIMITS).  gpus_xml N: one PU and N A100s on one
# host bridge.  16384 GPUs once took more than 4 GB and 300 s in the GPU x GPU
# matrix; now any export past 256 GPUs is refused with exit 2.
gpus_xml() {
    cat <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" allowed_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" allowed_nodeset="0x00000001" gp_index="1">
    <info name="HostName" value="many-gpus"/>
    <object type="Package" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="2">
      <object type="NUMANode" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="3" local_memory="1073741824"/>
      <object type="Core" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="4">
        <object type="PU" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="5"/>
      </object>
XML
    # one host bridge per PCI domain of 256 GPUs, as on a real machine
    awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) {
        if (i % 256 == 0)
            printf "%s      <object type=\"Bridge\" gp_index=\"%d\" bridge_type=\"0-1\" depth=\"0\" bridge_pci=\"%04x:[00-ff]\">\n", (i ? "      </object>\n" : ""), 6 + i / 256, int(i / 256)
        printf "        <object type=\"PCIDev\" gp_index=\"%d\" pci_busid=\"%04x:%02x:00.0\" pci_type=\"0302 [10de:20b0] [10de:134f] a1\"/>\n", 1000 + i, int(i / 256), i % 256 }
      if (n > 0) printf "      </object>\n" }'
    printf '    </object>\n  </object>\n</topology>\n'
}
gpus_xml 16384 >"$TMP/gpus-16384.xml"
run "$GPURUN" plan --topology "$TMP/gpus-16384.xml" --json
expect_rc 2 "an export with 16384 GPUs is refused"
contains "$TMP/err" "gpus-16384.xml: 16384 GPUs, more than gpurun plans for (at most 256 GPUs" "... saying the limit"
run "$GPURUN" topo --topology "$TMP/gpus-16384.xml" --json
expect_rc 2 "... by topo too"
gpus_xml 256 >"$TMP/gpus-256.xml"
run "$GPURUN" topo --topology "$TMP/gpus-256.xml" --json
jq_out '(.topology.gpus | length) == 256 and (.topology.affinity.gpu_gpu | length) == 256'
expect_rc 0 "256 GPUs, the limit, still load"
# Objects: 100 Misc objects below the Package, each with 1001 Misc below it.
misc_xml() { # misc_xml PARENTS CHILDREN
    gpus_xml 0 | sed '/^    <\/object>/,$d'
    awk -v p="$1" -v c="$2" 'BEGIN { g = 100; for (i = 0; i < p; i++) {
        printf "      <object type=\"Misc\" gp_index=\"%d\">\n", g++
        for (j = 0; j < c; j++) printf "        <object type=\"Misc\" gp_index=\"%d\"/>\n", g++
        printf "      </object>\n" } }'
    printf '    </object>\n  </object>\n</topology>\n'
}
misc_xml 100 1001 >"$TMP/objects.xml"
run "$GPURUN" topo --topology "$TMP/objects.xml"
expect_rc 2 "an export of more than 100000 objects is refused"
contains "$TMP/err" "more than 100000 objects" "... saying the limit"
# Children: hwloc 2.9 inserts each child at the end of its siblings' list,
# so 100000 objects under one parent took minutes to import; 4096 is the most.
misc_xml 1 4097 >"$TMP/children.xml"
run "$GPURUN" topo --topology "$TMP/children.xml"
expect_rc 2 "an object with 4097 child objects is refused"
contains "$TMP/err" "children.xml:4108: an object with more than 4096 child objects: gpurun accepts at most 4096" \
    "... naming the line and the limit"
misc_xml 1 4096 >"$TMP/children.xml"
run "$GPURUN" topo --topology "$TMP/children.xml"
expect_rc 0 "4096 child objects, the limit, still load"

# An HCA whose every port is down (not cabled, no subnet manager: Port1State
# 1) is listed apart and never planned; one port down of two is still a NIC.
sed '/name="mlx5_0"/,/<\/object>/s/"Port1State" value="4"/"Port1State" value="1"/' \
    "$FIXTURES/2s-4gpu-2nic.xml" >"$TMP/down.xml"
run "$GPURUN" topo --topology "$TMP/down.xml" --json
jq_out '[.topology.nics[].name] == ["mlx5_1"] and (.topology.ethernet | map(select(.name == "mlx5_0"))[0].note
           | test("no port active"))'
expect_rc 0 "an HCA with no port active is listed apart, saying why"
run "$GPURUN" plan --topology "$TMP/down.xml" --json
jq_out '[.ranks[].nics[0]] == ["mlx5_1", "mlx5_1", "mlx5_1", "mlx5_1"] and .ranks[0].nic_affinity == "SYS"'
expect_rc 0 "... and never planned: socket 0's ranks get socket 1's HCA (SYS)"
sed 's/"Port1State" value="4"/"Port1State" value="1"/' "$FIXTURES/vpi-mlx4.xml" >"$TMP/port2.xml"
run "$GPURUN" plan --topology "$TMP/port2.xml" --json
jq_out '.ranks[0].env.UCX_NET_DEVICES == "mlx4_0:2"'
expect_rc 0 "a NIC with one of two ports active is planned on that port"

# Slingshot 400's Cassini 2 (HPE 1590:0371, Ethernet class, netdev hsnN)
# is a Slingshot NIC, not plain Ethernet.
run "$GPURUN" topo --topology "$FIXTURES/slingshot400-2s-4gpu.xml" --json
jq_out '[.topology.nics[] | .name + "=" + .kind] == ["hsn0=slingshot", "hsn1=slingshot"]'
expect_rc 0 "cassini 2: hsn0 and hsn1 are Slingshot NICs"
run "$GPURUN" plan --topology "$FIXTURES/slingshot400-2s-4gpu.xml" --ranks-per-gpu 2 --json
jq_out '[.ranks[].env.GPURUN_NICS] == ["hsn0","hsn0","hsn0","hsn0","hsn1","hsn1","hsn1","hsn1"]'
expect_rc 0 "... each rank on the Cassini beside its GPU"

# The VFs of a BlueField (15b3:a2d3), in an export made without pci.ids (no
# "Virtual Function" in a name): slices of their PF, listed apart.
sed -e 's/\[15b3:101c\] \[15b3:101c\]/[15b3:a2d3] [15b3:a2d3]/' -e '/ConnectX-6 Virtual Function/d' \
    "$FIXTURES/sriov-host.xml" >"$TMP/bluefield-vf.xml"
run "$GPURUN" topo --topology "$TMP/bluefield-vf.xml" --json
jq_out '[.topology.nics[].name] == ["mlx5_0", "mlx5_3"]'
expect_rc 0 "BlueField VFs known by their device id alone are not NICs of their own"

# A GPU runtime device under no PCI device (Jetson's SoC GPU) is named, not
# planned, and the plan says so.
run "$GPURUN" topo --topology "$FIXTURES/jetson-soc-gpu.xml"
expect_rc 0 "jetson: topo"
contains "$TMP/out" "GPU runtime devices under no PCI device (not planned): cuda0" "... names cuda0 as not planned"
run "$GPURUN" topo --topology "$FIXTURES/jetson-soc-gpu.xml" --json
jq_out '.topology.gpus_without_pci == "cuda0" and (.topology.gpus | length) == 0'
expect_rc 0 "... in the JSON too"
# Ten such devices: the first eight named, the rest counted (an export may
# hold thousands, and the list was built by copying it whole for each).
awk '/name="cuda0"/ { b = 1 } b { blk = blk $0 "\n" } !b { print }
     b && /<\/object>/ { b = 0; for (i = 0; i < 10; i++) { x = blk; gsub(/cuda0/, "cuda" i, x)
         gsub(/gp_index="[0-9]+"/, "gp_index=\"" 2000 + i "\"", x); printf "%s", x } }' \
    "$FIXTURES/jetson-soc-gpu.xml" >"$TMP/ten-soc.xml"
run "$GPURUN" topo --topology "$TMP/ten-soc.xml" --json
jq_out '.topology.gpus_without_pci == "cuda0, cuda1, cuda2, cuda3, cuda4, cuda5, cuda6, cuda7 and 2 more"'
expect_rc 0 "ten devices under no PCI device: eight named, two counted"

# The safety net: whatever the checks miss and crashes hwloc's import is an
# exit 2 too.  A stand-in hwloc_topology_load() that crashes, preloaded (not
# in a sanitizer build, whose runtime must come first).
if ! command -v "${CC:-cc}" >/dev/null 2>&1; then
    skip "no C compiler to build the crashing hwloc_topology_load stand-in"
elif ldd "$GPURUN" 2>/dev/null | grep -q 'libasan\|libubsan'; then
    skip "sanitizer build: a preloaded library would come before the sanitizer runtime"
else
    cat >"$TMP/crash.c" <<'C'
#include <signal.h>
int hwloc_topology_load(void *topology);
int hwloc_topology_load(void *topology) { (void)topology; raise(SIGSEGV); return -1; }
C
    "${CC:-cc}" -shared -fPIC -o "$TMP/crash.so" "$TMP/crash.c"
    run env LD_PRELOAD="$TMP/crash.so" "$GPURUN" topo --topology "$FIXTURES/2s-4gpu-2nic.xml"
    expect_rc 2 "hwloc crashing on an export that passes the checks is exit 2, not a crash"
    contains "$TMP/err" "2s-4gpu-2nic.xml: hwloc crashed importing this file (signal 11" "... naming the file and the signal"
fi

done_testing
