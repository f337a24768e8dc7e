#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Progress a user can follow (issue 27 §5): off a terminal, a progress line
# on stderr at the start and every progress_interval (step k of N, percent,
# ETA, the running figure), none with --quiet; on a terminal the status line
# shows them; gpurun status lists the run while it runs, after it ends, and
# as stale once its gpurun was killed; RESULTS/JOB/latest names the newest
# run folder, and one another user planted is left alone (two uids); the
# real water box (GROMACS) reports its steps and ns/day from md.log.  Never
# on timing: the program prints known lines and waits for a file between
# them; the test waits (bounded) for what gpurun says.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

unset GPURUN_TOPOLOGY
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=$TMP/results
J=$TMP/job
mkdir -p "$J"
chmod 0755 "$TMP"

# wait_for FILE TEXT: until FILE holds TEXT, at most 120 s (a bound, not a
# measure: the test never asserts on how long it took).
wait_for() {
    _wf=0
    while ! grep -qF -- "$2" "$1" 2>/dev/null; do
        [ $_wf -ge 600 ] && return 1
        sleep 0.2
        _wf=$((_wf + 1))
    done
}
# wait_status JQ: until gpurun status --json on $R says JQ, at most 120 s
# (nothing printed is no answer: jq 1.6 -e passes empty input).
wait_status() {
    _ws=0
    until _wo=$("$GPURUN" status --results "$R" --json 2>/dev/null) && [ -n "$_wo" ] &&
        printf '%s\n' "$_wo" | jq -e "$1" >/dev/null 2>&1; do
        [ $_ws -ge 600 ] && return 1
        sleep 0.2
        _ws=$((_ws + 1))
    done
}

# Rank 0 prints step 1, waits for $GO.1, prints step 3, waits for $GO.2,
# prints step 10; the other ranks only wait.  Each wait is bounded.
cat >"$J/prog" <<'EOF'
#!/bin/sh
say() { if [ "$GPURUN_RANK" = 0 ]; then echo "step $1 of 10 loss 0.5 images_per_s $2"; fi; }
hold() { n=0; while [ ! -e "$GO.$1" ] && [ $n -lt 1500 ]; do sleep 0.2; n=$((n + 1)); done; }
echo "starting"
say 1 100
hold 1
say 3 300
hold 2
say 10 1000
EOF
chmod 0755 "$J/prog"
cat >"$J/prog.conf" <<EOF
description = "a program that prints progress lines"
command     = "$J/prog"
progress         = "^step ([0-9]+) of ([0-9]+) .*images_per_s ([-+0-9.eE]+)"
progress_groups  = "step total figure"
progress_units   = "images/s"
EOF
printf 'job = "p"\ntemplate = "prog"\nlauncher = "local"\nranks_per_node = 2\nthreads_per_rank = 1\noversubscribe = true\nresults = "%s"\nprogress_interval = "1s"\nenv { GO = "%s" }\n' \
    "$R" "$TMP/go" >"$J/job.conf"

# ---- off a terminal -----------------------------------------------------
"$GPURUN" run "$J/job.conf" >"$TMP/o1" 2>"$TMP/e1" </dev/null &
pid=$!
wait_for "$TMP/e1" "step 1 of 10 (10%), 100 images/s; ranks alive 2/2"
ok $? "off a terminal: a progress line on stderr with step k of N, percent, the figure and the ranks alive"
contains "$TMP/e1" "gpurun: p: 0s: started; a progress line every 1s here, and at any time: gpurun status" \
    "... and one at the start, saying how often and where else to look"
# status.json is rewritten just after the line is printed: wait for it.
wait_status '.[0].step == 1 and .[0].ranks_alive == 2'
run "$GPURUN" status --results "$R"
expect_rc 0 "gpurun status while the job runs"
contains "$TMP/out" "running" "... shows it running"
contains "$TMP/out" "1/10 (10%)" "... its step k of N and percent"
contains "$TMP/out" "100 images/s" "... and its running figure"
run "$GPURUN" status --results "$R" --json
jq_out '.[0].shown == "running" and .[0].job == "p" and .[0].step == 1 and .[0].total == 10 and
    .[0].figure == 100 and .[0].units == "images/s" and (.[0].hosts | length) == 1 and .[0].ranks_alive == 2'
ok $rc "gpurun status --json: job, state, step, total, figure, hosts, ranks alive"
d=$(jq -r '.[0].run_dir' "$TMP/out.json")
[ -n "$d" ] && [ -d "$d" ] && [ "$(readlink "$R/p/latest")" = "${d##*/}" ]
ok $? "RESULTS/JOB/latest names the run folder (${d##*/}), relative"
[ "$(stat -c %a "$d/status.json")" = 600 ]
ok $? "status.json has the run folder's file mode (0600)"
: >"$TMP/go.1"
wait_for "$TMP/e1" "step 3 of 10 (30%), ETA "
ok $? "the next line: step 3 of 10, with an ETA from the two"
contains "$TMP/e1" "300 images/s; ranks alive" "... and the figure the program printed last"
: >"$TMP/go.2"
wait $pid
rc=$?
cp "$TMP/e1" "$TMP/err"
expect_rc 0 "the job ends well"
! grep -q "ranks alive" "$TMP/o1"
ok $? "progress lines go to stderr, not stdout"
run "$GPURUN" status --results "$R"
contains "$TMP/out" "no running job in $R" "after the end: gpurun status lists no running job"
run "$GPURUN" status --results "$R" --job p --json
jq_out '.[0].shown == "ok" and .[0].state == "ok" and .[0].exit_status == 0 and .[0].step == 10 and
    .[0].eta_s == null and .[0].ranks_alive == 0'
ok $rc "... and with --job, the run's final state and last step (10 of 10)"

# ---- --quiet ------------------------------------------------------------
"$GPURUN" run "$J/job.conf" --quiet --set env.GO="$TMP/q" >"$TMP/o2" 2>"$TMP/e2" </dev/null &
pid=$!
# A report was made (status.json holds the step read at one) before the end.
wait_status '[.[] | select(.shown == "running" and .step == 1)] | length == 1'
ok $? "--quiet: the run reports (status.json) all the same"
: >"$TMP/q.1"
: >"$TMP/q.2"
wait $pid
! grep -q -e "ranks alive" -e "started; a progress line" "$TMP/e2" && [ "$(wc -l <"$TMP/o2")" -eq 1 ] &&
    grep -q '^gpurun: p: ok, .*/p/[0-9TZ]*-[0-9]*$' "$TMP/o2"
ok $? "--quiet prints no progress line, and on success only the closing line ($(head -c 200 "$TMP/o2"))"

# ---- on a terminal ------------------------------------------------------
if ! command -v script >/dev/null 2>&1; then
    skip "script (util-linux) not found: no terminal"
    skip "script (util-linux) not found: no terminal"
    skip "script (util-linux) not found: no terminal"
else
    script -qfec "'$GPURUN' run '$J/job.conf' --set env.GO='$TMP/t'" "$TMP/typescript" >/dev/null 2>&1 </dev/null &
    spid=$!
    wait_for "$TMP/typescript" "step 1 of 10 (10%)  100 images/s"
    ok $? "on a terminal, the status line shows step k of N, percent and the figure"
    : >"$TMP/t.1"
    wait_for "$TMP/typescript" "step 3 of 10 (30%)  ETA "
    ok $? "... then the ETA too"
    : >"$TMP/t.2"
    wait $spid
    ! grep -q "started; a progress line" "$TMP/typescript"
    ok $? "... and no progress lines of their own on a terminal"
fi

# ---- a head killed ------------------------------------------------------
"$GPURUN" run "$J/job.conf" --set env.GO="$TMP/k" >/dev/null 2>&1 </dev/null &
pid=$!
wait_status '[.[] | select(.shown == "running" and .step == 1)] | length == 1'
kill -9 $pid
wait $pid 2>/dev/null
: >"$TMP/k.1"
: >"$TMP/k.2"
run "$GPURUN" status --results "$R"
contains "$TMP/out" "stale" "gpurun status: a run whose gpurun was killed (SIGKILL) is stale, not running"
contains "$TMP/out" "is gone: killed, or its host restarted" "... saying why"

# ---- RESULTS/JOB/latest with two users ---------------------------------
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1; then
    for i in 1 2 3 4 5 6 7; do skip "needs root and setpriv for a second uid"; done
else
    victim() { setpriv --reuid=4242 --regid=4242 --clear-groups "$@"; }
    attacker() { setpriv --reuid=4343 --regid=4343 --clear-groups "$@"; }
    V=$TMP/victim
    mkdir -p "$V"
    chown 4242:4242 "$V"
    printf 'job = "v"\ncommand = "/bin/true"\nlauncher = "local"\nranks_per_node = 1\nthreads_per_rank = 1\n' >"$V/v.conf"
    chown 4242:4242 "$V/v.conf"
    # The victim's job folder, open to everyone with the sticky bit (gpurun
    # takes such a folder: nobody can replace what is in it).
    victim mkdir -m 0755 "$V/res"
    victim mkdir -m 1777 "$V/res/v"
    mkdir -m 0777 "$TMP/evil"
    attacker ln -s "$TMP/evil" "$V/res/v/latest"
    run victim "$GPURUN" run "$V/v.conf" --results "$V/res" --quiet
    expect_rc 0 "a latest another user planted (a symlink) does not stop the run"
    contains "$TMP/err" "$V/res/v/latest is another user's symlink, not a symlink gpurun made: left alone" \
        "... it is left alone, and said"
    [ "$(readlink "$V/res/v/latest")" = "$TMP/evil" ] && [ -z "$(ls -A "$TMP/evil")" ]
    ok $? "... still theirs, and nothing was written through it"
    attacker rm "$V/res/v/latest"
    attacker mkdir "$V/res/v/latest"
    run victim "$GPURUN" run "$V/v.conf" --results "$V/res" --quiet
    contains "$TMP/err" "$V/res/v/latest is a folder, not a symlink gpurun made: left alone" \
        "a folder named latest another user put there: left alone, and said"
    [ -d "$V/res/v/latest" ] && [ ! -L "$V/res/v/latest" ] && [ -z "$(ls -A "$V/res/v/latest")" ]
    ok $? "... still their empty folder"
    # A run folder another user made in the open job folder, whose status
    # says it runs: not the victim's, not shown.
    attacker mkdir -m 0755 "$V/res/v/20990101T000000Z-1"
    attacker sh -c "printf '{\"state\": \"running\", \"job\": \"v\"}\n' >'$V/res/v/20990101T000000Z-1/status.json'"
    run victim "$GPURUN" status --results "$V/res" --job v
    ! grep -q 20990101T000000Z-1 "$TMP/out" && grep -q "of another user (or not safe to read) skipped" "$TMP/err"
    ok $? "gpurun status: another user's run folder in an open job folder is not read, and said"
fi

# ---- the water box: GROMACS's md.log ------------------------------------
# mdrun is stopped (SIGSTOP) once md.log has a block, until gpurun has
# reported it, so that whatever the machine's speed gpurun sees two blocks
# at two times: a rate (ns/day) and an ETA.
if ! command -v gmx_mpi >/dev/null 2>&1 || ! command -v gmx >/dev/null 2>&1; then
    for i in 1 2 3 4; do skip "GROMACS not installed (Debian: gromacs)"; done
elif gmx_needs_rdtscp; then
    for i in 1 2 3 4; do skip "this CPU lacks rdtscp, which Debian's GROMACS build needs"; done
else
    W=$TMP/wres
    "$GPURUN" run "$top_srcdir/examples/water-box/job.conf" --results "$W" --set oversubscribe=true \
        --set params.nsteps=3000 --set progress_interval=1s >"$TMP/wo" 2>"$TMP/we" </dev/null &
    pid=$!
    # mdrun_pids: the mdrun processes of this run (their folder is the run's)
    mdrun_pids() {
        for p in $(pgrep -x gmx_mpi 2>/dev/null); do
            [ "$(readlink "/proc/$p/cwd" 2>/dev/null)" = "$(readlink -f "$W/water-box/latest" 2>/dev/null)" ] &&
                echo "$p"
        done
    }
    # hold_at STEP: stop mdrun once md.log has reached STEP, until gpurun
    # says a step at least that far; then let it go on.
    hold_at() {
        _h=0
        until awk -v s="$1" '/^ +Step +Time$/ { getline; if ($1 + 0 >= s) f = 1 } END { exit !f }' \
            "$W/water-box/latest/water-box.log" 2>/dev/null; do
            [ $_h -ge 1500 ] && return 1
            sleep 0.1
            _h=$((_h + 1))
        done
        pids=$(mdrun_pids)
        # shellcheck disable=SC2086
        [ -n "$pids" ] && kill -STOP $pids
        got=$(awk '/^ +Step +Time$/ { getline; s = $1 } END { print s }' "$W/water-box/latest/water-box.log")
        wait_for "$TMP/we" "step $got of 3000"
        _r=$?
        # shellcheck disable=SC2086
        [ -n "$pids" ] && kill -CONT $pids
        return $_r
    }
    hold_at 0 && hold_at 500
    ok $? "the water box off a terminal: gpurun says each md.log block it saw (stopped there until it did)"
    wait $pid
    rc=$?
    cp "$TMP/we" "$TMP/err"
    expect_rc 0 "... and the run ends well"
    grep -Eq "gpurun: water-box: [0-9hms]+: step [1-9][0-9]* of 3000 \([0-9.]+%\), ETA [0-9hms]+, [0-9.]+ ns/day; ranks alive 2/2" "$TMP/we"
    ok $? "... a line with step k of N, percent, ETA and ns/day from md.log (no mdrun -v)"
    jq -e '.state == "ok" and .step == 3000 and .total == 3000 and .units == "ns/day" and .figure > 0' \
        "$W/water-box/latest/status.json" >/dev/null
    ok $? "... and status.json ends with step 3000 of 3000 and ns/day"
fi

done_testing
