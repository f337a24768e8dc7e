#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# netcheck's buffers, --buffers host|gpu (SPEC §3: host and GPU buffers).
# The host-only build refuses gpu with a message on rank 0 and exit 2 before
# any traffic.  netcheck-cuda, where configure found CUDA, runs host buffers,
# and with no GPU visible fails on every rank, "no CUDA device visible: ...",
# exit 3, in seconds; with a GPU it measures.  The GPU path itself (every
# message copied off the GPU into pinned host memory and back, or device
# pointers to a CUDA-aware MPI; the data checked through copies; a rank
# without a GPU or with a failing copy) runs on a fake GPU whose "device"
# memory is host memory (tests/netcheck_gpu_fake.c).  Last, the template
# passes params.buffers to the program.
# make check exports NETCHECK, NETCHECK_CUDA and NETCHECK_FAKEGPU.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if ! command -v mpirun >/dev/null 2>&1; then
    echo "1..0 # SKIP mpirun not found (Debian: openmpi-bin)"
    exit 0
fi
if [ ! -x "${NETCHECK:-}" ]; then
    echo "1..0 # SKIP examples/netcheck/netcheck not built (configure found no MPI)"
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
unset GPURUN_TOPOLOGY NETCHECK_CUDA_AWARE NETCHECK_FAKE_GPU
GPURUN_TEMPLATE_PATH=$top_srcdir/templates
export GPURUN_TEMPLATE_PATH

# mpi NP CMD...: mpirun, any machine; a hang is exit 124 after 60 s (no
# assertion on time: only that the guard did not have to stop it).
mpi() {
    np=$1
    shift
    run timeout 60 mpirun --oversubscribe -np "$np" "$@"
}

# figures FILE: every measurement line parses, the three NETCHECK figures
# are there and positive (2 ranks, --min 1 --max 262144: 19 sizes, the
# allreduce from 8 B: 16).
figures() {
    awk '
        function num(v) { return v ~ /^[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/ && v + 0 > 0 }
        /^#/ || /^NETCHECK buffers: / { next }
        /^pair 0-1 [^ ]+ [^ ]+$/ { pairs++; next }
        $1 == "latency" && NF == 6 && $3 == "B" && $5 == "us" && num($2) && num($4) { lat++; next }
        $1 == "bandwidth" && NF == 6 && $3 == "B" && $5 == "GB/s" && num($2) && num($4) { bw++; next }
        $1 == "allreduce" && NF == 5 && $3 == "B" && $5 == "us" && num($2) && num($4) { ar++; next }
        /^NETCHECK (latency_us|bandwidth_GBps|allreduce_us): / && NF == 3 && num($3) { sum++; next }
        { bad++ }
        END { exit !(!bad && pairs == 1 && lat == 19 && bw == 19 && ar == 16 && sum == 3) }
    ' "$1"
}

# buffers_line FILE: the text after "NETCHECK buffers: "
buffers_line() { sed -n 's/^NETCHECK buffers: //p' "$1"; }

SIZES="--min 1 --max 262144 --iters 20"

# ---- the host-only build ----------------------------------------------------
# shellcheck disable=SC2086 # the words of SIZES
mpi 2 "$NETCHECK" $SIZES
expect_rc 0 "netcheck, host buffers (the default)"
[ "$(buffers_line "$TMP/out")" = host ] && figures "$TMP/out"
ok $? "... says 'NETCHECK buffers: host' and every figure parses"
# shellcheck disable=SC2086
mpi 2 "$NETCHECK" $SIZES --buffers host
[ "$rc" -eq 0 ] && [ "$(buffers_line "$TMP/out")" = host ]
ok $? "netcheck --buffers host: the same"

mpi 2 "$NETCHECK" --buffers gpu
expect_rc 2 "netcheck --buffers gpu, built without CUDA: exit 2"
contains "$TMP/err" "netcheck: built without CUDA: --buffers gpu needs netcheck-cuda" "... and says so"
[ "$(grep -c 'built without CUDA' "$TMP/err")" -eq 1 ] && ! grep -q . "$TMP/out"
ok $? "... once (rank 0), before any measurement (no output)"
mpi 2 "$NETCHECK" --buffers device
expect_rc 2 "netcheck --buffers device: a usage error"
contains "$TMP/err" "expected host or gpu, got 'device'" "... naming the kinds"
mpi 2 env NETCHECK_CUDA_AWARE=yes "$NETCHECK" --min 8 --max 8 --iters 1
expect_rc 2 "NETCHECK_CUDA_AWARE=yes: a usage error (0 or 1)"

# ---- netcheck-cuda -------------------------------------------------------------
# gpu_count: the GPUs nvidia-smi lists here (0 without it)
gpu_count() { nvidia-smi -L 2>/dev/null | grep -c '^GPU '; }

if [ ! -x "${NETCHECK_CUDA:-}" ]; then
    skip "netcheck-cuda tests: not built (NETCHECK_CUDA='${NETCHECK_CUDA:-}'; configure found no nvcc and libcudart)"
else
    # shellcheck disable=SC2086
    mpi 2 "$NETCHECK_CUDA" $SIZES
    [ "$rc" -eq 0 ] && [ "$(buffers_line "$TMP/out")" = host ] && figures "$TMP/out"
    ok $? "netcheck-cuda, host buffers: no GPU needed"

    # No GPU visible (an empty CUDA_VISIBLE_DEVICES hides any there is).
    mpi 2 env CUDA_VISIBLE_DEVICES='' "$NETCHECK_CUDA" --buffers gpu --min 8 --max 64 --iters 5
    expect_rc 3 "netcheck-cuda --buffers gpu without a visible GPU: exit 3"
    contains "$TMP/err" "netcheck: rank 0: no CUDA device visible: cudaGetDeviceCount: " "... rank 0 says why"
    contains "$TMP/err" "netcheck: rank 1: no CUDA device visible: cudaGetDeviceCount: " "... and rank 1"
    ! grep -q '^NETCHECK' "$TMP/out" && [ "$rc" -ne 124 ]
    ok $? "... without a measurement, not stopped by the 60 s guard"
    grep 'no CUDA device' "$TMP/err" | head -1 | sed 's/^/# /'

    if [ "$(gpu_count)" -ge 1 ]; then
        # shellcheck disable=SC2086
        mpi 2 "$NETCHECK_CUDA" $SIZES --buffers gpu
        expect_rc 0 "netcheck-cuda --buffers gpu on this machine's GPUs"
        buffers_line "$TMP/out" | grep -Eq '^gpu \((CUDA-aware MPI|staged through host: .*)\)$' &&
            figures "$TMP/out"
        ok $? "... '$(buffers_line "$TMP/out")', every figure parses"
    else
        skip "netcheck-cuda on a GPU: none here (nvidia-smi -L lists none)"
    fi
fi

# ---- the GPU path on a fake GPU -------------------------------------------------
if [ ! -x "${NETCHECK_FAKEGPU:-}" ]; then
    skip "fake-GPU tests: tests/netcheck-fakegpu not built (NETCHECK_FAKEGPU='${NETCHECK_FAKEGPU:-}')"
else
    F=$NETCHECK_FAKEGPU
    # shellcheck disable=SC2086
    mpi 2 env NETCHECK_CUDA_AWARE=0 "$F" $SIZES --buffers gpu
    expect_rc 0 "fake GPU, staged through pinned host memory"
    [ "$(buffers_line "$TMP/out")" = "gpu (staged through host: NETCHECK_CUDA_AWARE=0)" ] &&
        figures "$TMP/out" && grep -q '^# netcheck: .* buffers=gpu$' "$TMP/out" &&
        grep -q "^# rank 0's GPU: fake GPU" "$TMP/out"
    ok $? "... says it is staged, names the GPU, every figure parses"
    # shellcheck disable=SC2086
    mpi 2 env NETCHECK_CUDA_AWARE=1 "$F" $SIZES --buffers gpu
    [ "$rc" -eq 0 ] && [ "$(buffers_line "$TMP/out")" = "gpu (CUDA-aware MPI: NETCHECK_CUDA_AWARE=1)" ] &&
        figures "$TMP/out"
    ok $? "fake GPU, device pointers to MPI (NETCHECK_CUDA_AWARE=1): '$(buffers_line "$TMP/out")'"
    if ompi_info --parsable --all 2>/dev/null | grep -q 'opal_built_with_cuda_support:value:false'; then
        mpi 2 "$F" --min 8 --max 64 --iters 5 --buffers gpu
        [ "$rc" -eq 0 ] &&
            [ "$(buffers_line "$TMP/out")" = "gpu (staged through host: MPI is not CUDA-aware)" ]
        ok $? "Open MPI without CUDA support (MPIX_Query_cuda_support): staged, and says so"
    else
        skip "MPIX_Query_cuda_support: this MPI is not an Open MPI built without CUDA"
    fi
    mpi 4 env NETCHECK_CUDA_AWARE=0 "$F" --min 8 --max 4096 --iters 5 --buffers gpu
    [ "$rc" -eq 0 ] && grep -q '^pair 1-3 ' "$TMP/out" && grep -q '^NETCHECK allreduce_us: ' "$TMP/out"
    ok $? "fake GPU, staged, 4 ranks: the pairs (0, 2) and (1, 3)"

    # Rank 1's uploads change a byte: the checks see it through the copies.
    for aware in 0 1; do
        mpi 2 env NETCHECK_FAKE_GPU=corrupt NETCHECK_CUDA_AWARE=$aware "$F" --min 8 --max 4096 --iters 5 --buffers gpu
        [ "$rc" -eq 1 ] && grep -q 'arrived wrong' "$TMP/err" && ! grep -q '^NETCHECK latency_us' "$TMP/out"
        ok $? "fake GPU corrupting rank 1's data (NETCHECK_CUDA_AWARE=$aware): exit 1, no figures"
    done

    # Rank 1 has no GPU, rank 0 has: both agree before any message.
    mpi 2 env NETCHECK_FAKE_GPU=none "$F" --buffers gpu --min 8 --max 64 --iters 5
    expect_rc 3 "fake GPU missing on rank 1 only: exit 3"
    contains "$TMP/err" "netcheck: rank 1: no CUDA device visible: " "... rank 1 says why"
    contains "$TMP/err" "netcheck: rank 0: another rank could not set up its buffers" "... rank 0 says it waits on no one"
    [ "$rc" -ne 124 ]
    ok $? "... no hang (not stopped by the 60 s guard)"

    # A copy fails in the middle of the ping-pong, while rank 0 waits.
    mpi 2 env NETCHECK_FAKE_GPU=fail NETCHECK_CUDA_AWARE=0 "$F" --buffers gpu --min 8 --max 64 --iters 50
    expect_rc 3 "fake GPU copy failing on rank 1 mid-measurement: exit 3 (MPI_Abort)"
    contains "$TMP/err" "netcheck: rank 1: cudaMemcpy: fake failure" "... naming the call"
    [ "$rc" -ne 124 ]
    ok $? "... no hang (not stopped by the 60 s guard)"
fi

# ---- through gpurun: params.buffers --------------------------------------------
cat >"$TMP/gpu.conf" <<EOF
job      = "nc-gpu"
template = "netcheck"
nodes = 1
ranks_per_node = 2
params { netcheck = "$NETCHECK"  max = 64  iters = 5  buffers = "gpu" }
EOF
run "$GPURUN" run "$TMP/gpu.conf" --dry-run
[ "$rc" -eq 0 ] && grep -q "^# program: $NETCHECK --min 8 --max 64 --iters 5 --buffers gpu$" "$TMP/out"
ok $? "gpurun run --dry-run, params { buffers = \"gpu\" }: the program gets --buffers gpu"
run "$GPURUN" run "$top_srcdir/examples/netcheck/job.conf" --dry-run --set params.netcheck="$NETCHECK"
[ "$rc" -eq 0 ] && grep -q '^# program: .* --buffers host$' "$TMP/out"
ok $? "... examples/netcheck/job.conf: --buffers host"
run "$GPURUN" run "$top_srcdir/examples/netcheck/job.conf" --dry-run --set params.netcheck="$NETCHECK" \
    --set params.buffers=gpu
[ "$rc" -eq 0 ] && grep -q '^# program: .* --buffers gpu$' "$TMP/out"
ok $? "... --set params.buffers=gpu: --buffers gpu"

run "$GPURUN" run "$TMP/gpu.conf" --quiet --results "$TMP/results"
expect_rc 2 "gpurun run of buffers = \"gpu\" with the host-only netcheck: the rank's exit 2"
rundir=$(ls -d "$TMP"/results/nc-gpu/*Z-*/ 2>/dev/null | tail -1)
[ "$(jq -r .state "$rundir/record.json" 2>/dev/null)" = failed ] &&
    rank_output "$rundir" 0 | grep -q 'built without CUDA: --buffers gpu needs netcheck-cuda'
ok $? "... the record says failed, rank 0's output says why"

if [ -x "${NETCHECK_FAKEGPU:-}" ]; then
    cat >"$TMP/fake.conf" <<EOF
job      = "nc-fake"
template = "netcheck"
nodes = 1
ranks_per_node = 2
env    { NETCHECK_CUDA_AWARE = "0" }
params { netcheck = "$NETCHECK_FAKEGPU"  max = 4096  iters = 10  buffers = "gpu" }
EOF
    run "$GPURUN" run "$TMP/fake.conf" --quiet --results "$TMP/results"
    expect_rc 0 "gpurun run, buffers = \"gpu\" on the fake GPU"
    rundir=$(ls -d "$TMP"/results/nc-fake/*Z-*/ 2>/dev/null | tail -1)
    [ "$(jq -r .state "$rundir/record.json" 2>/dev/null)" = ok ] &&
        rank_output "$rundir" 0 | grep -q '^NETCHECK buffers: gpu (staged through host: NETCHECK_CUDA_AWARE=0)$'
    ok $? "... the record says ok; rank 0's output says the buffers were staged GPU memory"
    if jq -e 'has("foms")' "$rundir/record.json" >/dev/null 2>&1; then
        v=$(jq -r '.foms.bandwidth_GBps.value // empty' "$rundir/record.json")
        awk -v v="$v" 'BEGIN { exit !(v != "" && v + 0 > 0) }'
        ok $? "... and holds bandwidth_GBps = $v"
    else
        skip "figures of merit: this gpurun writes none into record.json yet"
    fi
else
    skip "gpurun run on the fake GPU: tests/netcheck-fakegpu not built"
fi

done_testing
