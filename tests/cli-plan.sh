#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gpurun plan through the command line: golden plans for the fixtures and
# for every real topology in ../shared/topologies (when present), exit codes,
# flags over job files.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

# golden DIR FILE: the JSON plan of DIR/FILE (run from DIR, so that the
# recorded source is the bare file name) must equal tests/golden/FILE.json.
golden() {
    (cd "$1" && "$GPURUN" plan --topology "$2" --json) >"$TMP/plan.json" 2>"$TMP/err"
    if [ ! -f "$GOLDEN/${2%.xml}.json" ]; then
        ok 1 "golden plan for $2 exists (tests/golden/update.sh writes it)"
    elif diff -u "$GOLDEN/${2%.xml}.json" "$TMP/plan.json" >"$TMP/diff"; then
        ok 0 "golden plan for $2"
    else
        ok 1 "golden plan for $2"
        sed 's/^/#   /' "$TMP/diff" | head -30
    fi
}

for f in "$FIXTURES"/*.xml; do
    golden "$FIXTURES" "$(basename "$f")"
done
if [ -d "$SHARED_TOPOLOGIES" ]; then
    for f in "$SHARED_TOPOLOGIES"/*.xml; do
        name=$(basename "$f")
        if [ "$name" = nvidia-dgx2h-16xv100-trimmed.xml ]; then
            # 16 GPUs on 4 PUs: refused by default, so its golden plan shares.
            (cd "$SHARED_TOPOLOGIES" && "$GPURUN" plan --topology "$name" --json --oversubscribe) >"$TMP/plan.json"
            diff -u "$GOLDEN/${name%.xml}.json" "$TMP/plan.json" >"$TMP/diff"
            ok $? "golden plan for $name (oversubscribed)"
            continue
        fi
        golden "$SHARED_TOPOLOGIES" "$name"
    done
else
    skip "no $SHARED_TOPOLOGIES: golden plans of real machines not checked"
fi

X=$FIXTURES/2s-4gpu-2nic.xml
run "$GPURUN" plan --topology "$X"
expect_rc 0 "plan table"
contains "$TMP/out" "0     0    0     0      0000:13:00.0                 mlx5_0               PIX  0      0-3                  4" "table row of rank 0"

run "$GPURUN" plan --topology "$X" --ranks-per-node 8
expect_rc 3 "more ranks than GPUs is exit 3"
contains "$TMP/err" "gpurun: 8 ranks with 1 GPU each need 8 GPUs, but fix-2s4g has 4; use ranks_per_node = 4" "... saying why and what would work"
run "$GPURUN" plan --topology "$X" --ranks-per-node 8 --oversubscribe --json
expect_rc 0 "--oversubscribe shares instead"
jq_out '(.warnings | length) > 0 and .ranks[1].gpus == [0]'
expect_rc 0 "... with a warning in the plan"
run "$GPURUN" plan --topology "$X" --nodes two
expect_rc 2 "a malformed flag value is exit 2"
contains "$TMP/err" "gpurun: plan: --nodes: expected an integer from 1 to 100000, got 'two'" "... naming the flag"
run "$GPURUN" plan --topology "$X" --gpus-per-rank 2 --threads-per-rank 3 --nodes 2 --json
jq_out '(.ranks | length) == 4 and .ranks[3].node == 1 and .ranks[3].env.CUDA_VISIBLE_DEVICES == "2,3"
           and .ranks[0].threads == 3 and .ranks[0].cpus == "0-2"'
expect_rc 0 "flags: 2 nodes x 2 ranks, 2 GPUs and 3 threads per rank"
# VFs spilled onto the bus after their PF's are slices of it, not NICs.
run "$GPURUN" plan --topology "$FIXTURES/sriov-vf-next-bus.xml" --ranks-per-gpu 2 --json
jq_out '[.ranks[].env.UCX_NET_DEVICES] == ["mlx5_0:1","mlx5_0:1","mlx5_0:1","mlx5_0:1"]'
expect_rc 0 "sriov-vf-next-bus: every rank on the PF mlx5_0, none on the VF mlx5_2 of bus 06"
run "$GPURUN" plan --topology "$FIXTURES/cpu-only-2numa.xml" --gpus-per-rank 1
expect_rc 3 "GPUs asked of a CPU-only node is exit 3"

# A job file, and flags that override it.
cat >"$TMP/job.conf" <<'JOB'
job = "demo"
ranks_per_node = 2
gpus_per_rank = 1
threads_per_rank = 2
JOB
run "$GPURUN" plan "$TMP/job.conf" --topology "$X" --json
expect_rc 0 "plan from a job file"
jq_out '(.ranks | length) == 2 and .ranks[1].gpus == [2] and .ranks[0].threads == 2'
expect_rc 0 "... with the job's ranks, GPUs and threads"
run "$GPURUN" plan --topology "$X" "$TMP/job.conf" --ranks-per-node 4 --json
jq_out '(.ranks | length) == 4 and .ranks[0].threads == 2'
expect_rc 0 "a flag overrides the job file, the rest of the job stays"
run "$GPURUN" plan "$top_srcdir/examples/plan/job.conf" --topology "$X"
expect_rc 0 "examples/plan/job.conf plans"

# Intel GPU Max tiles (pvc-tiles.xml): one rank per Level Zero tile, its mask
# a FLAT number, also when the export only counts the tiles; the same GPUs
# exported without them stay whole, the mask then a COMPOSITE number, and
# each plan names the hierarchy it assumes.
run "$GPURUN" plan --topology "$FIXTURES/pvc-tiles.xml" --json
jq_out '(.ranks | length) == 8 and .ranks[3].env.ZE_AFFINITY_MASK == "3" and .ranks[3].gpu_pci == ["0000:2a:00.0"]
           and .ranks[3].env.ZE_FLAT_DEVICE_HIERARCHY == "FLAT" and .ranks[4].nics == ["hsn1"] and .ranks[4].numa == [1]'
expect_rc 0 "pvc: 8 ranks, one per tile, FLAT masks, each on its socket's NIC and DRAM"
sed '/name="ze[0-9]*\.[0-9]*"/,/<\/object>/d' "$FIXTURES/pvc-tiles.xml" >"$TMP/pvc-count.xml"
run "$GPURUN" plan --topology "$TMP/pvc-count.xml" --json
jq_out '(.ranks | length) == 8 and .ranks[3].env.ZE_AFFINITY_MASK == "3" and .ranks[3].gpu_pci == ["0000:2a:00.0"]
           and .ranks[3].env.ZE_FLAT_DEVICE_HIERARCHY == "FLAT"'
expect_rc 0 "pvc with its tiles counted (LevelZeroSubdevices) but not listed: the same 8 ranks"
sed '/LevelZeroSubdevices/d' "$TMP/pvc-count.xml" >"$TMP/pvc-whole.xml"
run "$GPURUN" plan --topology "$TMP/pvc-whole.xml" --json
jq_out '(.ranks | length) == 4 and .ranks[1].env.ZE_AFFINITY_MASK == "1" and .ranks[1].gpu_pci == ["0000:2a:00.0"]
           and .ranks[1].env.ZE_FLAT_DEVICE_HIERARCHY == "COMPOSITE" and .ranks[1].env.ZE_ENABLE_PCI_ID_DEVICE_ORDER == "1"'
expect_rc 0 "pvc without its tiles: 4 whole GPUs, COMPOSITE masks in PCI order"

# cpu_locality (issue 28): GPU ranks share out their package's NUMA nodes
# without GPUs by default; the job key, --set and --cpu-locality keep them
# near their GPUs only.
SNC=$FIXTURES/snc2-3gpu.xml
run "$GPURUN" plan --topology "$SNC" --json
jq_out '[.ranks[].cpus] == ["0-1,4-5","2-3,6-7","8-15"] and .ranks[0].env.OMP_PLACES == "{4}:2,{0}:2"
           and .ranks[0].numa == [0,1]'
expect_rc 0 "snc2: by default each GPU rank also gets a share of its package's NUMA node without GPUs"
run "$GPURUN" plan --topology "$SNC" --cpu-locality gpu --json
jq_out '[.ranks[].cpus] == ["4-5","6-7","8-11"] and .ranks[0].env.OMP_PLACES == "cores"'
expect_rc 0 "--cpu-locality gpu: cores near the GPUs only"
printf 'job = "near"\ncpu_locality = "gpu"\n' >"$TMP/near.conf"
run "$GPURUN" plan "$TMP/near.conf" --topology "$SNC" --json
jq_out '[.ranks[].cpus] == ["4-5","6-7","8-11"]'
expect_rc 0 "cpu_locality = \"gpu\" in the job file"
run "$GPURUN" plan "$TMP/near.conf" --topology "$SNC" --cpu-locality package --json
jq_out '.ranks[2].cpus == "8-15"'
expect_rc 0 "--cpu-locality package overrides the job file"
run "$GPURUN" plan --topology "$SNC" --cpu-locality numa
expect_rc 2 "--cpu-locality numa is exit 2"
contains "$TMP/err" "plan: --cpu-locality: expected package or gpu, got 'numa'" "... naming the values"
run "$GPURUN" plan --topology "$SNC" --ranks-per-node 1 --gpus-per-rank 3 --threads-per-rank 3 --json
jq_out '.ranks[0].cpus == "4-5,8" and .ranks[0].gpu_cpus == {"0":"4","1":"5","2":"8"}'
expect_rc 0 "one rank with 3 GPUs: a core near each, gpu_cpus says which"

done_testing
