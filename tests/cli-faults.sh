#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Faults: a failing rank's status passes through and the rank is named; the
# time limit, SIGTERM and SIGKILL to gpurun leave no process behind; a
# missing program, or a launcher that cannot run here, fails at once.  Under
# mpirun and under the local launcher.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if [ ! -x "${HELLO:-}" ]; then
    echo "1..0 # SKIP examples/hello/hello not built (configure found no MPI)"
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
unset GPURUN_TOPOLOGY
export GPURUN_KILL_GRACE=1
launchers=local
command -v mpirun >/dev/null 2>&1 && launchers="local mpirun"

# A copy of hello under a unique name, so that leftovers can be counted.
mark=gpurun-fault-$$
cp "$HELLO" "$TMP/$mark"
leftovers() { pgrep -f "$mark" | grep -v "^$$\$" | wc -l; }
# wait_gone: true once no process of this test is left.  A correct gpurun
# leaves none once it has exited; the 60 s only end a failing run, so that a
# loaded machine's slow reaping is no failure.
wait_gone() {
    n=0
    while [ "$(leftovers)" -gt 0 ] && [ "$n" -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
    [ "$(leftovers)" -eq 0 ]
}
# wait_running: until both ranks of the job in the background run, that is
# have written their line (hello does after MPI_Init, then sleeps); 60 s at most.
wait_running() {
    n=0
    while [ "$(cat "$TMP"/results/f/*Z-*/*.out 2>/dev/null | grep -c '^\([0-9]*: \)\{0,1\}rank=')" -lt 2 ] && [ $n -lt 600 ]; do
        sleep 0.1; n=$((n + 1))
    done
}

job() { # job LAUNCHER ARGS [EXTRA]
    cat >"$TMP/f.conf" <<JOB
command = "$TMP/$mark $2"
launcher = "$1"
ranks_per_node = 2
threads_per_rank = 1
$3
JOB
}

for L in $launchers; do
    job "$L" "--exit-rank 1 --exit-code 7 --sleep 30"
    run timeout 60 "$GPURUN" run "$TMP/f.conf" --quiet
    expect_rc 7 "$L: a rank exiting 7 makes gpurun exit 7"
    contains "$TMP/err" "rank 1 on" "$L: ... and names rank 1"
    contains "$TMP/err" "exit status 7" "$L: ... with its exit status"
    wait_gone
    ok $? "$L: the other rank was stopped"

    job "$L" "--segv-rank 0 --sleep 30"
    run timeout 60 "$GPURUN" run "$TMP/f.conf" --quiet
    expect_rc 139 "$L: a rank killed by SIGSEGV makes gpurun exit 139"
    contains "$TMP/err" "rank 0 on" "$L: ... naming rank 0"
    contains "$TMP/err" "killed by signal 11" "$L: ... and the signal"
    wait_gone
    ok $? "$L: nothing left after the SIGSEGV"

    job "$L" "--hang-rank 1" 'timeout = "2s"'
    # The hang guard kills with SIGKILL (137), so 124 is gpurun's own.
    run timeout -s KILL 60 "$GPURUN" run "$TMP/f.conf" --quiet
    expect_rc 124 "$L: a rank hanging past timeout gives 124"
    contains "$TMP/err" "time limit of 2s reached" "$L: ... and says so"
    wait_gone
    ok $? "$L: every process gone with it"

    job "$L" "--ignore-term --hang-rank 0 --hang-rank 1" 'timeout = "2s"'
    run timeout -s KILL 60 "$GPURUN" run "$TMP/f.conf" --quiet
    expect_rc 124 "$L: ranks ignoring SIGTERM still end at the time limit"
    wait_gone
    ok $? "$L: ... killed after the grace period, none left"

    job "$L" "--sleep 60"
    rm -rf "$TMP/results" # wait_running looks at the only run there
    "$GPURUN" run "$TMP/f.conf" --quiet >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    wait_running
    kill -TERM "$pid"
    rc=0
    wait "$pid" || rc=$?
    expect_rc 143 "$L: SIGTERM to gpurun while ranks run gives 143"
    wait_gone
    ok $? "$L: ... and no process is left"

    rm -rf "$TMP/results"
    "$GPURUN" run "$TMP/f.conf" --quiet >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    wait_running
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null
    wait_gone
    ok $? "$L: SIGKILL to gpurun leaves no rank behind"
    rm -rf "$TMP/results"
done

cat >"$TMP/m.conf" <<JOB
command = "no-such-program-$$ --flag"
ranks_per_node = 2
JOB
run timeout 60 "$GPURUN" run "$TMP/m.conf"
expect_rc 3 "a missing program is exit 3"
[ -z "$(ls -d "$TMP"/results/m/*Z-*/rank.* "$TMP"/results/m/*Z-*/launcher.out 2>/dev/null)" ]
ok $? "... at once: no rank or launcher was started"
contains "$TMP/err" "program 'no-such-program-$$' not found on PATH; nothing was started" "... saying which program"

# A launcher that cannot run here fails before anything starts, saying why:
# srun outside an allocation or not on PATH, mpirun not on PATH.  On a saved
# topology, so that this node's hardware plays no part.
mkdir -p "$TMP/nobin"
for L in srun mpirun; do
    printf 'command = "%s"\nlauncher = "%s"\nranks_per_node = 2\n' "$TMP/$mark" "$L" >"$TMP/$L.conf"
done
export GPURUN_TOPOLOGY="$FIXTURES/cpu-only-2numa.xml"
run env -u SLURM_JOB_ID "$GPURUN" run "$TMP/srun.conf"
expect_rc 3 "launcher = srun outside a Slurm allocation: exit 3"
contains "$TMP/err" "gpurun: launcher = srun runs jobs inside a Slurm allocation and SLURM_JOB_ID is not set: submit with gpurun submit JOB.conf, run inside salloc, or set launcher = \"auto\"" "... saying how to get one"
run env SLURM_JOB_ID=4242 PATH="$TMP/nobin" "$GPURUN" run "$TMP/srun.conf"
expect_rc 3 "launcher = srun without srun on PATH: exit 3"
contains "$TMP/err" "gpurun: srun was not found on PATH" "... saying so"
run env PATH="$TMP/nobin" "$GPURUN" run "$TMP/mpirun.conf"
expect_rc 3 "launcher = mpirun without mpirun on PATH: exit 3"
contains "$TMP/err" "gpurun: mpirun was not found on PATH (Debian: openmpi-bin)" "... saying where to get it"

done_testing
