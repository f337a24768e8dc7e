#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Every run that starts leaves a true record (issue 38 §2-4, §6, §7): a
# setup step that fails is a failed run with its step, cause, status and
# record; a signal at any moment (setup, the ranks, a moment picked at
# random) is 130/143/129 and an interrupted record that blames no rank; a
# program or setup program that is not there is refused before a run
# folder or "started"; the record keeps the last progress; status.json
# follows the progress within seconds, not one progress_interval.  The
# water box's own grompp with a typo in md.mdp, where GROMACS is installed.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

unset SLURM_JOB_ID FLUX_URI GPURUN_KILL_GRACE
J=$TMP/job
mkdir -p "$J"
cat >"$J/steps.conf" <<'EOF2'
description = "a command and a setup step that do what the params say"
command  = "sh -c 'i=0; while [ $i -lt ${steps} ]; do echo step $i; i=$((i+1)); sleep ${pause}; done; echo done'"
setup    = { "sh -c '${setup}'" }
defaults { steps = "3"  pause = "0"  setup = "true" }
failure  = { "^Fatal error:", "^ERROR [0-9]+ \\[file " }
progress = "^step ([0-9]+)$"
progress_groups = "step"
progress_total  = "${steps}"
EOF2
cat >"$J/job.conf" <<'EOF2'
template = "steps"
launcher = "local"
ranks_per_node = 1
gpus_per_rank = 0
EOF2
R=$J/results
G() { "$GPURUN" run "$J/job.conf" --results "$R" "$@"; }
rec() { jq -r "$1" "$R/job/latest/record.json" 2>/dev/null; }

# ---- a setup step that fails ------------------------------------------------------
run G --set "params.setup=echo preparing; echo ERROR 1 [file md.mdp, line 4]:; echo \"  Unknown left-hand 'dtt' in parameter file\"; echo Fatal error:; echo There was 1 error; exit 7"
expect_rc 7 "a setup step that exits 7: gpurun's exit status is the step's own (never 3)"
contains "$TMP/err" "Unknown left-hand 'dtt'" "its cause line is on stderr, found with the template's patterns"
contains "$TMP/err" "setup step 1 (" "naming the step"
[ "$(rec .state)" = failed ] && [ "$(rec .failure.step)" = 1 ] && [ "$(rec .failure.status)" = 7 ] &&
    [ "$(rec .failure.rank)" = null ] && rec .failure.reason | grep -q "Unknown left-hand"
ok $? "a record: state failed, failure {step 1, status 7, no rank, the cause as reason}"
rec '.failure.tail[]' | grep -q '^Fatal error:$'
ok $? "... and the step's last lines as its tail"
run "$GPURUN" results --results "$R"
contains "$TMP/out" "setup step 1: ERROR 1 [file md.mdp, line 4]: Unknown left-hand 'dtt'" "gpurun results lists it, with why"
run "$GPURUN" report --results "$R"
contains "$TMP/out" "Unknown left-hand" "the report's failed runs list it"
run G --set "params.setup=kill -SEGV \$\$"
expect_rc 139 "a setup step killed by SIGSEGV: 139"
[ "$(rec .state)" = failed ] && rec .failure.reason | grep -q SIGSEGV
ok $? "... a failed record that says so ($(rec .failure.reason))"

# ---- refused before anything starts ------------------------------------------------
cat >"$J/missing.conf" <<'EOF2'
command  = "gpurun-no-such-program --flag"
launcher = "local"
ranks_per_node = 1
gpus_per_rank = 0
EOF2
run "$GPURUN" run "$J/missing.conf" --results "$R"
expect_rc 3 "a program not on PATH: exit 3"
contains "$TMP/err" "not found on PATH; nothing was started" "saying so"
! grep -q "0s: started" "$TMP/err" && [ ! -e "$R/missing" ]
ok $? "no 'started' line and no run folder"
cat >"$J/nosetup.conf" <<'EOF2'
description = "a setup step whose program is not there"
command = "true"
setup   = { "gpurun-no-such-setup -x" }
EOF2
printf 'template = "nosetup"\nlauncher = "local"\nranks_per_node = 1\ngpus_per_rank = 0\njob = "nosetup"\n' >"$J/ns.conf"
run "$GPURUN" run "$J/ns.conf" --results "$R"
expect_rc 3 "a setup step's program not on PATH: exit 3"
contains "$TMP/err" "setup step 1 (gpurun-no-such-setup -x): program 'gpurun-no-such-setup' not found" "naming the step"
[ ! -e "$R/nosetup" ]
ok $? "... and no run folder"

# ---- signals ----------------------------------------------------------------------
# wait_for FILE: up to 60 s (a bound, not a timing: each waits for an event)
wait_for() {
    n=0
    while [ ! -e "$1" ] && [ $n -lt 600 ]; do
        sleep 0.1
        n=$((n + 1))
    done
    [ -e "$1" ]
}
# signal_at SIG PARAM...: gpurun run with PARAMs, SIG once the file "here"
# appears in its run folder; rc its exit status
signal_at() {
    sig=$1
    shift
    rm -f "$R/job/latest"
    "$GPURUN" run "$J/job.conf" --results "$R" "$@" >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    wait_for "$R/job/latest/here"
    # with steps to run: once status.json shows one (a bound, not a timing)
    n=0
    while [ "$STEPS_FIRST" = 1 ] && [ $n -lt 600 ]; do
        case $(jq -r .step "$R/job/latest/status.json" 2>/dev/null) in '' | null) ;; *) break ;; esac
        sleep 0.1
        n=$((n + 1))
    done
    kill -"$sig" $pid
    rc=0
    wait $pid || rc=$?
}
signal_at INT --set "params.setup=touch here; exec sleep 60"
[ $rc -eq 130 ]
ok $? "Ctrl-C during a setup step: 130 (got $rc)"
[ "$(rec .state)" = interrupted ] && [ "$(rec .failure.rank)" = null ] && [ "$(rec .exit_status)" = 130 ]
ok $? "... an interrupted record that blames no rank"
contains "$TMP/err" "interrupted by SIGINT during setup step 1" "... saying when"
! grep -q "rank 0" "$TMP/err"
ok $? "... never 'rank 0'"
STEPS_FIRST=1 signal_at TERM --set params.steps=600 --set params.pause=0.1 --set "params.setup=touch here"
[ $rc -eq 143 ]
ok $? "SIGTERM while the ranks run: 143 (got $rc)"
[ "$(rec .state)" = interrupted ] && [ "$(rec .failure.rank)" = null ]
ok $? "... interrupted, no rank blamed"
run "$GPURUN" results --results "$R"
! grep -q "rank 0" "$TMP/out"
ok $? "gpurun results names no rank for it"
[ "$(rec .progress.total)" = 600 ] && [ "$(rec .progress.step)" -ge 0 ] 2>/dev/null
ok $? "the record keeps the last progress: step $(rec .progress.step) of $(rec .progress.total)"
signal_at HUP --set params.steps=600 --set params.pause=0.1 --set "params.setup=touch here"
[ $rc -eq 129 ] && [ "$(rec .state)" = interrupted ]
ok $? "SIGHUP: 129, interrupted (got $rc)"

# A signal at moments picked over the whole run: a run folder is never left
# without its record, and the exit status says what the record says.
bad=0
for d in 0 0.05 0.1 0.15 0.2 0.3 0.4 0.5 0.7 1.0; do
    rm -rf "$R/rnd"
    "$GPURUN" run "$J/job.conf" --results "$R" --set job=rnd --set params.steps=5 --set params.pause=0.05 \
        >/dev/null 2>&1 &
    pid=$!
    sleep $d
    kill -INT $pid 2>/dev/null
    rc=0
    wait $pid || rc=$?
    for f in "$R"/rnd/2*; do
        [ -d "$f" ] || continue
        st=$(jq -r .state "$f/record.json" 2>/dev/null)
        case "$rc:$st" in
        130:interrupted | 0:ok) ;;
        *) bad=$((bad + 1)) && diag "signal after ${d}s: exit $rc, record state '$st' in $f" ;;
        esac
    done
done
ok $bad "SIGINT at 10 moments: every run folder has its record, and its state matches the exit status"

# ---- status.json follows the progress ----------------------------------------------
rm -f "$R/job/latest"
"$GPURUN" run "$J/job.conf" --results "$R" --set params.steps=100000 --set params.pause=0.01 \
    --set "params.setup=true" >"$TMP/out" 2>"$TMP/err" &
pid=$!
n=0
step=null
while [ $n -lt 600 ]; do
    step=$(jq -r .step "$R/job/latest/status.json" 2>/dev/null)
    case $step in '' | null) ;; *) break ;; esac
    sleep 0.1
    n=$((n + 1))
done
kill -INT $pid
wait $pid
[ "$step" != null ] && [ -n "$step" ]
ok $? "status.json shows the step while the run goes (step $step), progress_interval being 10 minutes"
"$GPURUN" status --results "$R" >/dev/null 2>&1
ok $? "gpurun status reads it"

# ---- a timeout foretold -------------------------------------------------------------
run "$GPURUN" run "$J/job.conf" --results "$R" --set params.steps=100000 --set params.pause=0.05 --set timeout=15s
expect_rc 124 "a run whose ETA is past its timeout ends as timeout"
grep -q "warning: at step [0-9]* of 100000 the ETA is .*, but the timeout of 15s stops the run in .*--set params.steps=[0-9]* fits" "$TMP/err"
ok $? "... and was foretold once the ETA was known, with what to change"
[ "$(grep -c 'the ETA is' "$TMP/err")" = 1 ]
ok $? "... once"
run "$GPURUN" run "$J/job.conf" --results "$R" --set params.steps=20 --set params.pause=0.05 --set timeout=10m
! grep -q 'the ETA is' "$TMP/err"
ok $? "a run that ends well within its timeout gets no such warning"

# ---- a clean stop: the template's stop signal and stop_grace -----------------------
# A program that takes 7 s after SIGTERM to write its checkpoint (as mdrun
# finishes its step first): more than gpurun's old 5 s and mpirun's own 1 s.
cat >"$J/ckpt.sh" <<'EOF2'
#!/bin/sh
r=${OMPI_COMM_WORLD_RANK:-${GPURUN_TEST_RANK:-0}}
trap "sleep $1; echo saved >ckpt.\$r; exit 0" TERM
echo ready >ready.$r
while :; do sleep 0.1; done
EOF2
chmod +x "$J/ckpt.sh"
cat >"$J/ckpt.conf" <<'EOF2'
description = "a program that needs seconds to write its checkpoint once told to stop"
command     = "${job_dir}/ckpt.sh ${ckpt_s}"
defaults    { ckpt_s = "7" }
stop_signal = "TERM"
stop_grace  = "40s"
EOF2
printf 'template = "ckpt"\nranks_per_node = 1\ngpus_per_rank = 0\njob = "ckpt"\n' >"$J/ck.conf"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for launcher in local mpirun; do
    if [ $launcher = mpirun ] && ! command -v mpirun >/dev/null 2>&1; then
        for i in 1 2 3 4; do skip "mpirun not installed"; done
        continue
    fi
    rm -rf "$R/ckpt"
    "$GPURUN" run "$J/ck.conf" --results "$R" --set launcher=$launcher >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    wait_for "$R/ckpt/latest/ready.0"
    kill -TERM $pid
    rc=0
    wait $pid || rc=$?
    [ $rc -eq 143 ] && [ -f "$R/ckpt/latest/ckpt.0" ]
    ok $? "$launcher: SIGTERM: the program had its stop_grace and wrote its checkpoint (exit $rc)"
    [ "$(jq -r .state "$R/ckpt/latest/record.json")" = interrupted ]
    ok $? "$launcher: ... the record says interrupted"
    rm -rf "$R/ckpt"
    run "$GPURUN" run "$J/ck.conf" --results "$R" --set launcher=$launcher --set timeout=8s
    [ $rc -eq 124 ] && [ -f "$R/ckpt/latest/ckpt.0" ]
    ok $? "$launcher: the timeout: 124 and the checkpoint written (exit $rc)"
    [ "$(jq -r .state "$R/ckpt/latest/record.json")" = timeout ]
    ok $? "$launcher: ... the record says timeout"
done
cat >"$J/badstop.conf" <<'EOF2'
description = "a stop signal gpurun does not send"
command     = "true"
stop_signal = "KILL"
EOF2
printf 'template = "badstop"\nranks_per_node = 1\ngpus_per_rank = 0\n' >"$J/bs.conf"
run "$GPURUN" run "$J/bs.conf" --results "$R" --dry-run
expect_rc 2 "stop_signal = KILL: exit 2"
contains "$TMP/err" "badstop.conf:3: key 'stop_signal'" "naming the file, line and key"

# ---- the water box's grompp with a typo --------------------------------------------
if command -v gmx >/dev/null 2>&1; then
    cp -r "$top_srcdir/examples/water-box" "$TMP/wb"
    sed -i 's/^dt /dtt /' "$TMP/wb/md.mdp"
    run "$GPURUN" run "$TMP/wb/job.conf" --results "$TMP/wbr" --set launcher=local
    [ "$rc" -ne 3 ] && [ "$rc" -ne 0 ]
    ok $? "the water box with 'dtt' in md.mdp: grompp's own exit status ($rc), not 3"
    contains "$TMP/err" "Unknown left-hand 'dtt'" "grompp's line is on stderr"
    r=$(ls -d "$TMP"/wbr/water-box/2* | head -1)
    [ "$(jq -r .state "$r/record.json")" = failed ] && [ "$(jq -r .failure.step "$r/record.json")" = 3 ]
    ok $? "a failed record naming setup step 3"
else
    for i in 1 2 3; do skip "gmx not installed"; done
fi
done_testing
