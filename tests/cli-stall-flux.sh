#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Stalls under Flux (docs/running.md, "Stalls"): `flux run` relays no
# signal, so gpurun asks its rank steps on flux run's standard input, which
# Flux copies to every task.  tests/hang_mpi.c on 4 ranks over two brokers
# of a `flux start --test-size=2` instance (the second broker plays host
# flux1 through a job shell rc file); rank 3, on flux1, hangs (stopped, a
# spin, a blocked read) or every rank waits in a receive cycle.  gpurun
# names rank 3 on flux1 with its state and where it is, in the record.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if ! find_flux; then
    echo "1..0 # SKIP $flux_missing"
    exit 0
fi
if ! command -v mpicc >/dev/null 2>&1; then
    echo "1..0 # SKIP mpicc not found (Debian: libopenmpi-dev)"
    exit 0
fi
unset FLUX_URI FLUX_JOB_ID SLURM_JOB_ID SLURM_JOBID GPURUN_TOPOLOGY GPURUN_PLUGIN_PATH
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mpi_yield_when_idle=1 GPURUN_KILL_GRACE=2
export OMPI_MCA_btl_tcp_if_include=127.0.0.0/8
cd "$TMP" || exit 1
mark=gpurun-hang-$$
mpicc -g -O1 -o "$TMP/$mark" "$top_srcdir/tests/hang_mpi.c" || {
    echo "1..0 # SKIP mpicc could not build tests/hang_mpi.c"
    exit 0
}

flux_test_instance 2

# job KIND: 2 brokers x 2 ranks, rank 3 (on flux1) hanging at step 3.
job() {
    cat >"$TMP/$1.conf" <<JOB
job = "$1"
command = "$TMP/$mark"
launcher = "flux"
nodes = 2
ranks_per_node = 2
threads_per_rank = 1
oversubscribe = true
bind = "none"
stall_after = "10s"
on_stall = "kill"
results = "$TMP/res"
env { HANG_KIND = "$1"  HANG_AT = "3"  HANG_RANK = "3"  STEP_MS = "100"  HANG_MAX_S = "120" }
JOB
}
rundir() { ls -d "$TMP/res/$1"/*Z-*/ 2>/dev/null | tail -1; }

# check KIND STATE FRAME
check() {
    job "$1"
    run timeout 150 "$GPURUN" run "$TMP/$1.conf" --quiet
    d=$(rundir "$1")
    expect_rc 125 "$1: the stalled run under flux run is found and ended (exit 125)"
    contains "$TMP/err" "stall: culprit: rank 3 on flux1" "$1: stderr names rank 3 on flux1"
    ! grep -qE "no answer|SIGUSR1" "$TMP/err"
    ok $? "$1: every rank step answered; no program was killed by the question"
    run jq -e --arg s "$2" --arg f "$3" '.state == "stalled" and .launcher == "flux"
        and (.stall.culprits | length == 1) and .stall.culprits[0].rank == 3 and .stall.culprits[0].host == "flux1"
        and (.stall.culprits[0].state | startswith($s)) and (.stall.culprits[0].where | contains($f))
        and ([.stall.classes[] | select(.frames | contains("MPI_Allreduce")) | .ranks] == ["0-2"] or $f == "")' \
        "${d}record.json"
    ok $rc "$1: record: culprit rank 3 on flux1, $2${3:+ in $3}; the others one class in MPI_Allreduce"
    [ $rc -eq 0 ] || jq -c .stall "${d}record.json" 2>&1 | sed 's/^/# /'
    jq -r '"# table: \(.stall.culprits[0] | "rank \(.rank) on \(.host): \(.where)") report_s \(.stall.report_s)"' \
        "${d}record.json" 2>/dev/null
}
check stop "stopped (T)" ""
check spin "running" "compute_forces"
check fifo "blocked outside MPI" "read_input"

job deadlock
run timeout 150 "$GPURUN" run "$TMP/deadlock.conf" --quiet
expect_rc 125 "deadlock: exit 125"
run jq -e '.stall.deadlock and (.stall.culprits | length == 0)
    and .stall.classes == [{"ranks": "0-3", "count": 4, "state": "waits in MPI", "frames": "main > exchange > MPI_Recv"}]' \
    "$(rundir deadlock)record.json"
ok $rc "deadlock: no culprit, one class of 4 ranks (both brokers) in MPI_Recv"
[ $rc -eq 0 ] || jq -c .stall "$(rundir deadlock)record.json" 2>&1 | sed 's/^/# /'
n=0
while pgrep -f "$mark" >/dev/null && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
! pgrep -f "$mark" >/dev/null
ok $? "no hang program is left"

done_testing
