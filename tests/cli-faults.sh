#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Faults: a failing rank's status passes through and the rank is named; the
# time limit, SIGTERM and SIGKILL to gpurun leave no process behind; a
# missing program, or a launcher that cannot run here, fails at once.  Under
# mpirun and under the local launcher.  A rank the launcher kills after
# another failed is stopped, not lost; Ctrl-C and SIGTERM are "interrupted";
# the failing rank's cause and last lines go to stderr and the record.
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
# wait_running [JOB]: until both ranks of the job in the background run, that
# is have written their line (hello does after MPI_Init, then sleeps); 60 s at most.
wait_running() {
    n=0
    while [ "$(cat "$TMP"/results/"${1:-f}"/*Z-*/*.out 2>/dev/null | grep -c '^\([0-9]*: \)\{0,1\}rank=')" -lt 2 ] && [ $n -lt 600 ]; do
        sleep 0.1; n=$((n + 1))
    done
}
# record [JOB]: the record of the job's last run
record() { echo "$(ls -d "$TMP"/results/"${1:-f}"/*Z-*/ | tail -1)record.json"; }
# Ctrl-C reaches a program started in the background of a script only with
# SIGINT's default action back (sh ignores it there): $with_sigint COMMAND,
# a simple command, so that $! is the program's pid.
with_sigint="env --default-signal=INT"
if ! env --default-signal=INT true 2>/dev/null; then
    printf '%s\n' 'import os, signal, sys' 'signal.signal(signal.SIGINT, signal.SIG_DFL)' \
        'os.execvp(sys.argv[1], sys.argv[1:])' >"$TMP/sigint.py"
    with_sigint="python3 $TMP/sigint.py"
fi

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

    # The other rank takes SIGTERM as "stop soon" (GROMACS does) and the
    # launcher kills it before its rank step can report its end: that rank
    # was stopped, not lost with its host, and the crash stays the cause.
    rm -rf "$TMP/results"
    job "$L" "--segv-rank 0 --ignore-term --sleep 30"
    run timeout 60 "$GPURUN" run "$TMP/f.conf"
    expect_rc 139 "$L: SIGSEGV in rank 0 while rank 1 ignores SIGTERM: 139, not exit 3"
    grep -q 'lost' "$TMP/err"
    [ $? -ne 0 ]
    ok $? "$L: ... and no host is called lost"
    contains "$TMP/err" "rank 0 on $(hostname) failed first: killed by signal 11" "$L: ... rank 0 failed first"
    jq -e '.state == "failed" and .exit_status == 139 and .failure.rank == 0 and .failure.status == 139 and
        .failure.reason == "killed by signal SIGSEGV" and (.failure.tail | length) == 1 and
        .rank_status[1].stopped == true and .rank_status[1].stop_signal == 15' "$(record)" >/dev/null
    ok $? "$L: ... the record: failure {rank 0, 139, killed by signal SIGSEGV, its last line}, rank 1 stopped by SIGTERM"
    wait_gone
    ok $? "$L: nothing left after it"

    job "$L" "--hang-rank 1" 'timeout = "2s"'
    # The hang guard kills with SIGKILL (137), so 124 is gpurun's own.
    run timeout -s KILL 60 "$GPURUN" run "$TMP/f.conf" --quiet
    expect_rc 124 "$L: a rank hanging past timeout gives 124"
    contains "$TMP/err" "time limit of 2s reached" "$L: ... and says so"
    jq -e '.state == "timeout" and .failure.rank == 0 and .failure.status == 124 and
        (.failure.reason | startswith("time limit of 2s reached"))' "$(record)" >/dev/null
    ok $? "$L: ... the record: timeout, and its failure says why"
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
    contains "$TMP/err" "interrupted by SIGTERM (Terminated): every rank was stopped" "$L: ... saying interrupted"
    grep -q 'never reported\|lost' "$TMP/err"
    [ $? -ne 0 ]
    ok $? "$L: ... not that ranks never reported an end, nor a lost host"
    jq -e '.state == "interrupted" and .exit_status == 143 and .failure.reason == "interrupted by SIGTERM"' \
        "$(record)" >/dev/null
    ok $? "$L: ... the record's state is interrupted"
    wait_gone
    ok $? "$L: ... and no process is left"

    # Ctrl-C: SIGINT, the program ignoring SIGTERM (the launcher's stop).
    job "$L" "--ignore-term --sleep 60"
    rm -rf "$TMP/results"
    $with_sigint "$GPURUN" run "$TMP/f.conf" --quiet >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    wait_running
    kill -INT "$pid"
    rc=0
    wait "$pid" || rc=$?
    expect_rc 130 "$L: Ctrl-C (SIGINT) to gpurun while ranks run gives 130"
    contains "$TMP/err" "interrupted by SIGINT (Interrupt): every rank was stopped" "$L: ... saying interrupted"
    grep -q 'never reported\|lost' "$TMP/err"
    [ $? -ne 0 ]
    ok $? "$L: ... not that ranks never reported an end, nor a lost host"
    jq -e '.state == "interrupted" and .exit_status == 130 and .failure.reason == "interrupted by SIGINT"' \
        "$(record)" >/dev/null
    ok $? "$L: ... the record's state is interrupted"
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

# A scan interrupted in its first run stops there, saying so.
printf 'command = "%s --sleep 60"\nlauncher = "local"\nranks_per_node = 2\nthreads_per_rank = 1\nrepeat = 3\n' \
    "$TMP/$mark" >"$TMP/s.conf"
rm -rf "$TMP/results"
$with_sigint "$GPURUN" run "$TMP/s.conf" --quiet >"$TMP/out" 2>"$TMP/err" &
pid=$!
wait_running s
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
expect_rc 130 "Ctrl-C in the first of 3 repeats: 130"
contains "$TMP/err" "gpurun: s: interrupted by SIGINT: stopped after 1 of 3 runs, the rest not started" "... saying so"
grep -q 'at least one run failed' "$TMP/err"
[ $? -ne 0 ]
ok $? "... not that a run failed"
[ "$(ls -d "$TMP"/results/s/*Z-*/ | wc -l)" -eq 1 ]
ok $? "... and no further run started"
wait_gone
ok $? "... nothing left"

# The failing rank's cause and last lines, off a terminal: the first line
# that names the cause (gpurun's own pattern here: CUDA error), then its
# last 20 lines, on stderr and in the record.
cat >"$TMP/cause.sh" <<'EOF'
#!/bin/sh
echo "rank $GPURUN_RANK starting"
if [ "$GPURUN_RANK" = 1 ]; then
    i=0
    while [ $i -lt 30 ]; do echo "rank 1 before $i"; i=$((i + 1)); done
    echo "CUDA error: an illegal memory access was encountered" >&2
    i=0
    while [ $i -lt 25 ]; do echo "rank 1 after $i"; i=$((i + 1)); done
    exit 4
fi
exec sleep 30
EOF
chmod 0755 "$TMP/cause.sh"
printf 'job = "c"\ncommand = "%s"\nlauncher = "local"\nranks_per_node = 2\nthreads_per_rank = 1\n' "$TMP/cause.sh" >"$TMP/c.conf"
run timeout 60 "$GPURUN" run "$TMP/c.conf"
expect_rc 4 "a rank exiting 4 after a CUDA error: 4"
h=$(hostname)
grep -A1 "^gpurun: rank 1 on $h: the cause, as its output says:$" "$TMP/err" | tail -1 |
    grep -qx '\[1\] CUDA error: an illegal memory access was encountered'
ok $? "... the cause first on stderr, labelled with the rank"
[ "$(grep -c '^\[1\] rank 1 after' "$TMP/err")" -eq 20 ] && grep -q '^\[1\] rank 1 after 24$' "$TMP/err" &&
    ! grep -q '^\[1\] rank 1 after 4$' "$TMP/err" && grep -q "^gpurun: rank 1 on $h: its last 20 lines (" "$TMP/err"
ok $? "... then its last 20 lines"
tail -1 "$TMP/err" | grep -qF "gpurun: rank 1 on $h failed first: exit status 4; cause: \"CUDA error: an illegal memory access was encountered\""
ok $? "... and last, gpurun's message with the cause"
jq -e --arg h "$h" '.failure == {rank: 1, host: $h, status: 4,
    reason: "CUDA error: an illegal memory access was encountered", tail: [range(5; 25) | "rank 1 after \(.)"]}' \
    "$(record c)" >/dev/null
ok $? "... the record's failure: rank, host, status, reason and its last 20 lines"
run timeout 60 env GPURUN_FAILURE_LINES=3 "$GPURUN" run "$TMP/c.conf"
[ "$(grep -c '^\[1\] rank 1 after' "$TMP/err")" -eq 3 ] && [ "$(jq '.failure.tail | length' "$(record c)")" -eq 3 ]
ok $? "GPURUN_FAILURE_LINES=3: three lines"
run timeout 60 "$GPURUN" run "$TMP/c.conf" --quiet
! grep -q '^\[1\]' "$TMP/err" && grep -qF 'cause: "CUDA error' "$TMP/err"
ok $? "--quiet: only the closing message, with the cause"
# On a terminal, the same after the relayed output.
if command -v script >/dev/null 2>&1; then
    script -qec "timeout 60 '$GPURUN' run '$TMP/c.conf'" /dev/null >"$TMP/tty" 2>&1
    grep -q "the cause, as its output says:" "$TMP/tty" && grep -q '^\[1\] rank 1 after 24' "$TMP/tty"
    ok $? "on a terminal: the cause and the last lines too"
else
    skip "script (util-linux) not found: no run on a terminal"
fi
# gpurun results: the reason on a line under the run.
run "$GPURUN" results --results "$TMP/results" --job c
contains "$TMP/out" "    why: rank 1 on $h: CUDA error: an illegal memory access was encountered" \
    "gpurun results: the reason on a line of its own under the run"
run "$GPURUN" results --results "$TMP/results" --job c --json
jq_out 'length >= 3 and all(.[].failure; .rank == 1 and .status == 4 and (.tail | length) >= 3 and
    .reason == "CUDA error: an illegal memory access was encountered")'
ok "$rc" "gpurun results --json: each run's whole failure object"

cat >"$TMP/m.conf" <<JOB
command = "no-such-program-$$ --flag"
ranks_per_node = 2
JOB
run timeout 60 "$GPURUN" run "$TMP/m.conf"
expect_rc 3 "a missing program is exit 3"
[ -z "$(ls -d "$TMP"/results/m/*Z-*/rank.* "$TMP"/results/m/*Z-*/launcher.out 2>/dev/null)" ]
ok $? "... at once: no rank or launcher was started"
contains "$TMP/err" "program 'no-such-program-$$' not found on PATH; nothing was started" "... saying which program"

# A template's failure pattern that is slow on long lines (issue 37, item 4):
# "((a|b|ab|ba)*){40}x" compiles small, but glibc takes about a quarter of a
# second on each line of 8 KiB, and gpurun reads up to 1 MiB of a failed
# rank's output.  The run's budget for matching drops it, with a note in the
# record and a warning; gpurun's own patterns still find the cause.
mkdir -p "$TMP/slowre"
cat >"$TMP/slowre/slowfail.conf" <<'EOF'
description = "a failure pattern slow on long lines"
command     = "sh ${job_dir}/slowfail.sh"
failure     = { "((a|b|ab|ba)*){40}x" }
EOF
cat >"$TMP/slowre/slowfail.sh" <<'EOF'
s=ab
while [ ${#s} -lt 8192 ]; do s=$s$s; done
i=0
while [ $i -lt 64 ]; do echo "$s"; i=$((i + 1)); done
echo "CUDA error: boom"
exit 3
EOF
printf 'job = "slowre"\ntemplate = "slowfail"\nlauncher = "local"\nranks_per_node = 1\nthreads_per_rank = 1\n' \
    >"$TMP/slowre/job.conf"
# The budget set to none (GPURUN_TEST_REGEX_BUDGET_S=0): dropped whatever
# this machine's speed, not only where the 2 s run out.
run timeout 120 env GPURUN_TEST_REGEX_BUDGET_S=0 GPURUN_TEMPLATE_PATH="$TMP/slowre" "$GPURUN" run "$TMP/slowre/job.conf" --quiet \
    --results "$TMP/results"
expect_rc 3 "a slow failure pattern: the rank's status"
jq -e '(.notes | length) == 2 and (.notes[1] | startswith("test hook GPURUN_TEST_REGEX_BUDGET_S")) and
    (.notes[0] | startswith("key '"'"'failure'"'"', item 1: '"'"'((a|b|ab|ba)*){40}x'"'"': dropped: it took ")) and
    .failure.reason == "CUDA error: boom"' "$(record slowre)" >/dev/null
ok $? "... the record notes the pattern dropped past the run's budget; gpurun's own patterns find the cause"
contains "$TMP/err" "gpurun: warning: template 'slowfail': key 'failure', item 1:" "... and a warning says so"

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
