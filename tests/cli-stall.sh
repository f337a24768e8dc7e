#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Stalls (docs/running.md, "Stalls"): an MPI program on 4 ranks under
# mpirun hangs one rank in each way tests/hang_mpi.c knows (stopped, a
# spin in its own code, a sleep, a blocked read, gone without MPI
# noticing) or all of them in a receive cycle; gpurun finds the stall,
# names the culprit (none for the deadlock), says so on stderr, in
# status.json and in the record, and with on_stall = "kill" ends the run
# (state stalled, exit 125) leaving no process behind.  Also with no
# stack tool that can read anything (states, wchan and CPU only), as an
# unprivileged uid, and on_stall = "report": `gpurun status` shows the
# live run as stalled.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
    echo "1..0 # SKIP mpicc or mpirun not found (Debian: libopenmpi-dev openmpi-bin)"
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
unset GPURUN_TOPOLOGY
export GPURUN_KILL_GRACE=1
# A unique program name, so that leftovers can be counted.
mark=gpurun-hang-$$
chmod 0755 "$TMP"
mpicc -g -O1 -o "$TMP/$mark" "$top_srcdir/tests/hang_mpi.c" || {
    echo "1..0 # SKIP mpicc could not build tests/hang_mpi.c"
    exit 0
}
leftovers() { pgrep -f "$mark" | grep -v "^$$\$" | wc -l; }
wait_gone() {
    n=0
    while [ "$(leftovers)" -gt 0 ] && [ "$n" -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
    [ "$(leftovers)" -eq 0 ]
}

# job KIND [ON_STALL]: the job file of 4 ranks, rank 1 hanging at step 3.
# 10 s without a step is far past a step's 0.1 s, even on a loaded machine.
job() {
    cat >"$TMP/$1.conf" <<JOB
job = "$1"
command = "$TMP/$mark"
launcher = "mpirun"
ranks_per_node = 4
threads_per_rank = 1
oversubscribe = true
stall_after = "10s"
on_stall = "${2:-kill}"
env { HANG_KIND = "$1"  HANG_AT = "3"  HANG_RANK = "1"  STEP_MS = "100"  HANG_MAX_S = "120" }
JOB
}
rundir() { ls -d "$1"/"$2"/*Z-*/ | tail -1; }

# check KIND RESULTS STATE FRAME: the run of KIND ended stalled, rank 1
# named with STATE (and FRAME in where), said, recorded, nothing left.
check() {
    d=$(rundir "$2" "$1")
    expect_rc 125 "$1: on_stall = kill ends the stalled run with exit 125"
    contains "$TMP/err" "stall: culprit: rank 1 on " "$1: stderr names rank 1"
    run jq -e --arg s "$3" --arg f "$4" '.state == "stalled" and .failure.rank == 1
        and (.stall.culprits | length == 1) and .stall.culprits[0].rank == 1 and .stall.deadlock == false
        and (.stall.culprits[0].state | startswith($s)) and (.stall.culprits[0].where | contains($f))
        and (.stall.culprits[0].host | type == "string") and .stall.after_s == 10 and .stall.detected_s >= 10
        and ([.stall.classes[] | select(.frames | contains("MPI_Allreduce")) | .ranks] == ["0,2-3"] or $f == "")' \
        "$d/record.json"
    ok $rc "$1: record: state stalled, culprit rank 1 $3${4:+ in $4}, the others one class in MPI_Allreduce"
    [ "$(jq -r .state "$d/status.json")" = stalled ] && jq -e '.stall | contains("rank 1")' "$d/status.json" >/dev/null
    ok $? "$1: status.json says stalled, with the verdict"
    wait_gone
    ok $? "$1: every process is gone"
}

R=$TMP/res
for spec in "stop|stopped (T)|" "spin|running|compute_forces" "sleep|blocked outside MPI|wait_a_while" \
    "fifo|blocked outside MPI|read_input" "exit|gone|"; do
    kind=${spec%%|*}
    rest=${spec#*|}
    job "$kind"
    run "$GPURUN" run "$TMP/$kind.conf" --results "$R"
    check "$kind" "$R" "${rest%%|*}" "${rest#*|}"
done

# The receive cycle: every rank waits in MPI; no single rank is named.
job deadlock
run "$GPURUN" run "$TMP/deadlock.conf" --results "$R"
expect_rc 125 "deadlock: exit 125"
contains "$TMP/err" "stall: deadlock: every rank waits in MPI; no single rank to blame" "deadlock: said, nobody blamed"
run jq -e '.state == "stalled" and .stall.deadlock and (.stall.culprits | length == 0) and .failure.rank == null
    and .stall.classes == [{"ranks": "0-3", "count": 4, "state": "waits in MPI", "frames": "main > exchange > MPI_Recv"}]' \
    "$(rundir "$R" deadlock)record.json"
ok $rc "deadlock: record: no culprit, one class of 4 ranks in MPI_Recv"
wait_gone
ok $? "deadlock: every process is gone"

# No stack tool that reads anything: states and wchan still name the
# sleeping rank (S while the others poll in MPI).
mkdir -p "$TMP/nostack"
printf '#!/bin/sh\nexit 1\n' >"$TMP/nostack/gdb"
cp "$TMP/nostack/gdb" "$TMP/nostack/eu-stack"
chmod 0755 "$TMP/nostack/gdb" "$TMP/nostack/eu-stack"
job sleep
run env PATH="$TMP/nostack:$PATH" "$GPURUN" run "$TMP/sleep.conf" --results "$TMP/res-nostack"
expect_rc 125 "no stack tool: still found and ended"
run jq -e '.stall.culprits[0].rank == 1 and (.stall.culprits[0].where | test("^(waiting|blocked outside MPI) \\(S"))' \
    "$(rundir "$TMP/res-nostack" sleep)record.json"
ok $rc "no stack tool: the sleeping rank named from its state (S) among ranks polling in MPI"
wait_gone
ok $? "no stack tool: every process is gone"

# on_stall = report: the run goes on, `gpurun status` lists it as
# stalled with its verdict; gpurun is then interrupted.
job fifo report
"$GPURUN" run "$TMP/fifo.conf" --results "$TMP/res-report" >"$TMP/rep.out" 2>"$TMP/rep.err" </dev/null &
gp=$!
n=0
while ! grep -q "stall: culprit" "$TMP/rep.err" && [ $n -lt 1200 ]; do sleep 0.1; n=$((n + 1)); done
# status.json gets the verdict just after stderr does: up to 60 s more.
n=0
until "$GPURUN" status --results "$TMP/res-report" --json 2>/dev/null | jq -e '.[0].note | contains("rank 1")' >/dev/null 2>&1 ||
    [ $n -ge 300 ]; do
    sleep 0.2
    n=$((n + 1))
done
run "$GPURUN" status --results "$TMP/res-report" --json
jq_out '.[0].shown == "stalled" and (.[0].note | contains("rank 1"))'
ok $rc "on_stall = report: gpurun status shows the live run as stalled, naming rank 1"
run "$GPURUN" status --results "$TMP/res-report"
contains "$TMP/out" "stalled" "... and in its table"
kill -TERM $gp
wait $gp
grep -q "the run goes on (on_stall = \"report\")" "$TMP/rep.err"
ok $? "on_stall = report: said, and the run went on until interrupted"
wait_gone
ok $? "on_stall = report: every process gone after the interrupt"

# 8 ranks on this machine's 2 cores: the stack tools take turns per host
# (stall_rank.c's slots), so that they do not all overrun their bound
# together.  The fake eu-stack and gdb below stand for that contention:
# alone, each is the real gdb; beside another of their kind they hang past
# the bound.  Every rank's state still arrives, the sleeping rank is named,
# and most ranks have their stack (all at once: one per tool at most).
if ! real_gdb=$(command -v gdb); then
    for i in 1 2 3 4; do skip "no gdb: the stack tools' turns need one"; done
else
    mkdir -p "$TMP/turns"
    cat >"$TMP/turns/eu-stack" <<EOF
#!/bin/sh
# A lock its holder's death gives back (a stopped tool leaves none behind).
exec 9>"$TMP/turns/lock"
flock -n 9 || exec sleep 60
pid=\$2
[ "\$1" = -p ] || pid=\$6
"$real_gdb" -nx -batch -iex "set debuginfod enabled off" -p "\$pid" -ex "bt 32"
EOF
    chmod 0755 "$TMP/turns/eu-stack"
    cp "$TMP/turns/eu-stack" "$TMP/turns/gdb"
    job sleep
    sed -e 's/^ranks_per_node = 4/ranks_per_node = 8/' "$TMP/sleep.conf" >"$TMP/sleep8.conf"
    run env PATH="$TMP/turns:$PATH" OMPI_MCA_mpi_yield_when_idle=1 "$GPURUN" run "$TMP/sleep8.conf" --results "$TMP/res8"
    expect_rc 125 "8 ranks: the stalled run is found and ended"
    r8=$(rundir "$TMP/res8" sleep)record.json
    run jq -e '.stall.culprits[0].rank == 1 and ([.stall.classes[] | select(.state | startswith("no answer"))] == [])
        and ([.stall.classes[].count] | add) == 8' "$r8"
    ok $rc "8 ranks: every rank answered with its state, rank 1 named ($(jq -r .stall.verdict "$r8"))"
    stacked=$(jq '[.stall.classes[] | select(.frames != "") | .count] | add // 0' "$r8")
    [ "$stacked" -ge 4 ]
    ok $? "8 ranks: the stack tools took turns: $stacked of 8 ranks have a stack (report_s $(jq .stall.report_s "$r8"))"
    jq -r '.stall.classes[] | "#   \(.count) (\(.ranks)): \(.state): \(.frames)"' "$r8"
    wait_gone
    ok $? "8 ranks: every process is gone"
fi

# An unprivileged uid: nothing needs root (gdb attaches to its own processes).
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1; then
    for i in 1 2 3; do skip "needs root and setpriv to run as another uid"; done
else
    U=$TMP/user
    mkdir -m 0755 "$U"
    chown 4242:4242 "$U"
    job spin
    cp "$TMP/spin.conf" "$U/spin.conf"
    chown 4242:4242 "$U/spin.conf"
    run env HOME="$U" setpriv --reuid=4242 --regid=4242 --clear-groups "$GPURUN" run "$U/spin.conf" --results "$U/res"
    expect_rc 125 "uid 4242: the stalled run is found and ended"
    run jq -e '.stall.culprits[0].rank == 1 and (.stall.culprits[0].where | contains("compute_forces"))' \
        "$(rundir "$U/res" spin)record.json"
    ok $rc "uid 4242: rank 1 named in compute_forces (its stack read without root)"
    wait_gone
    ok $? "uid 4242: every process is gone"
fi

# PyTorch DDP (gloo) on 2 ranks, rank 1 sleeping in Python at step 3: the
# other waits in c10d under some twenty interpreter frames, which the rank
# step keeps down to that call; rank 1 is named.  Debian's torch is
# /usr/bin/python3's.
PY=/usr/bin/python3
if ! real_gdb=$(command -v gdb); then
    for i in 1 2 3; do skip "no gdb: a Python rank's native stack needs one"; done
elif ! "$PY" -c 'import torch, torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
    for i in 1 2 3; do skip "$PY has no torch with gloo (Debian: python3-torch)"; done
else
    # The copy under this test's own name: leftovers are counted by it.
    cp "$top_srcdir/tests/hang_ddp.py" "$TMP/$mark-ddp.py"
    # The port from the pid: two copies of this test do not meet.
    cat >"$TMP/ddp.conf" <<JOB
job = "ddp"
command = "$PY $TMP/$mark-ddp.py"
launcher = "mpirun"
ranks_per_node = 2
threads_per_rank = 1
oversubscribe = true
stall_after = "10s"
on_stall = "kill"
env { MASTER_ADDR = "127.0.0.1"  MASTER_PORT = "$((20000 + $$ % 9000))"  OMP_NUM_THREADS = "1" }
JOB
    run "$GPURUN" run "$TMP/ddp.conf" --results "$TMP/res-ddp"
    expect_rc 125 "DDP: the stalled run is found and ended"
    rd=$(rundir "$TMP/res-ddp" ddp)record.json
    run jq -e '.stall.culprits[0].rank == 1 and (.stall.culprits | length) == 1 and
        ([.stall.classes[] | select(.state == "waits in MPI") | .frames | test("c10d::")] == [true])' "$rd"
    ok $rc "DDP: rank 1 named ($(jq -r .stall.verdict "$rd")); rank 0 waits in c10d ($(jq -r '[.stall.classes[].frames] | join(" | ")' "$rd" | tail -c 300))"
    wait_gone
    ok $? "DDP: every process is gone"
fi

done_testing
