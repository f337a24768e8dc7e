#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The water-box example under gpurun: GROMACS builds the box, runs on 2 ranks,
# and the ns/day gpurun records equals the one in GROMACS's own md.log; the
# shipped gromacs template on its run input (inputs checked before anything
# starts, ${args}); its scan over ranks (1, 2) gives a report with the
# parallel efficiency.  The box blowing up (a time step too long) is a crash
# (139) with mdrun's lines on stderr and in the record; Ctrl-C is
# "interrupted" (130).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if ! command -v gmx_mpi >/dev/null 2>&1 || ! command -v gmx >/dev/null 2>&1; then
    echo "1..0 # SKIP GROMACS not installed (Debian: gromacs)"
    exit 0
fi
# Debian's build uses rdtscp; mdrun refuses to start on CPUs (often virtual
# ones) that do not offer it.
if gmx_needs_rdtscp; then
    echo "1..0 # SKIP this CPU lacks rdtscp, which Debian's GROMACS build needs: mdrun refuses to start here"
    exit 0
fi
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset GPURUN_TOPOLOGY
run "$GPURUN" run "$top_srcdir/examples/water-box/job.conf" --results "$TMP/results" --quiet \
    --set oversubscribe=true --set params.nsteps=500
expect_rc 0 "the water box runs under gpurun on 2 ranks"
d=$(ls -d "$TMP"/results/water-box/*Z-*/ | tail -1)
own=$(awk '/\(ns\/day\)/ { getline; if ($1 == "Performance:") print $2 }' "$d/water-box.log" | tail -1)
rec=$(jq -r '.foms.ns_per_day.value' "$d/record.json")
[ -n "$own" ] && awk -v a="$own" -v b="$rec" 'BEGIN { exit !(a + 0 == b + 0) }'
ok $? "gpurun recorded $rec ns/day, GROMACS's md.log says $own"
[ "$(jq -r .state "$d/record.json")" = ok ]
ok $? "the record's state is ok (Finished mdrun found)"

# The shipped gromacs template on a run input beside the job (issue 27 §3,
# §4): a relative ${tpr} is the job file's folder's and reaches mdrun as an
# absolute path (mdrun runs in the run folder); ${args} adds mdrun's own
# options.  A missing, cut short or non-.tpr input is refused by run, its
# dry run and submit before anything starts or is queued (exit 2, naming
# the job file's line, the key and the path), and no run folder is made.
J=$TMP/tprjob
mkdir -p "$J"
cp "$d/bench.tpr" "$J/water.tpr"
size=$(wc -c <"$J/water.tpr")
head -c $((size / 2)) "$J/water.tpr" >"$J/cut.tpr"
cp "$top_srcdir/examples/water-box/md.mdp" "$J/mdp.tpr"
tprjob() { # tprjob TPR: $J/job.conf running the shipped template on it
    printf 'template = "gromacs"\nranks_per_node = 2\ngpus_per_rank = 0\nthreads_per_rank = 1\noversubscribe = true\nresults = "%s"\nparams {\n    tpr = "%s"\n    nsteps = 200\n    args = "-v -nstlist 20"\n}\n' \
        "$TMP/tprres" "$1" >"$J/job.conf"
}
tprjob water.tpr
run "$GPURUN" run "$J/job.conf" --quiet
expect_rc 0 "the gromacs template runs on tpr = \"water.tpr\", relative to the job file's folder"
r=$(ls -d "$TMP"/tprres/job/*Z-*/ 2>/dev/null | tail -1)
jq -e --arg p "$J/water.tpr" '.command | (index($p) != null) and (index("-v") != null) and (index("-nstlist") != null)' \
    "$r/record.json" >/dev/null 2>&1
ok $? "... mdrun got the absolute path $J/water.tpr and params.args' -v -nstlist 20"
for bad in nosuch.tpr cut.tpr mdp.tpr; do
    case $bad in
        nosuch.tpr) why="does not exist (a relative path is the job file's folder's)" ;;
        cut.tpr) why="is cut short: its header announces" ;;
        mdp.tpr) why="is not a GROMACS run input (.tpr)" ;;
    esac
    tprjob $bad
    before=$(ls "$TMP"/tprres/job 2>/dev/null | wc -l)
    for cmd in "run" "run --dry-run" "submit --dry-run"; do
        # shellcheck disable=SC2086
        run "$GPURUN" $cmd "$J/job.conf"
        expect_rc 2 "gpurun $cmd on tpr = \"$bad\" is refused (exit 2)"
        contains "$TMP/err" "$J/job.conf:8: key 'params.tpr': input file '$bad' ($J/$bad) $why" "... naming the line, key, path and why"
    done
    [ "$(ls "$TMP"/tprres/job 2>/dev/null | wc -l)" -eq "$before" ] && ! ls "$TMP"/tprres/job/submit-* >/dev/null 2>&1
    ok $? "... and nothing was started or written: no run folder, no batch script"
done
tprjob water.tpr
run "$GPURUN" submit "$J/job.conf" --dry-run
case "$J" in
    /tmp/* | /var/tmp/*)
        contains "$TMP/err" "gpurun: warning: input file $J/water.tpr is on /" "submit warns that compute nodes usually cannot see an input under /tmp" ;;
    *)
        fs=$(stat -f -c %T "$J")
        case $fs in
            ext2/ext3 | xfs | btrfs | tmpfs) contains "$TMP/err" "gpurun: warning: input file $J/water.tpr is on " "submit warns that compute nodes usually cannot see an input on $fs" ;;
            *) skip "the test folder is on $fs: no warning to show" ;;
        esac ;;
esac
expect_rc 0 "... and writes the batch script all the same"

# The same box with a time step far too long (dt = 0.012 ps): SETTLE cannot
# keep the water rigid and mdrun dies of SIGSEGV, the other rank taking
# mpirun's SIGTERM as "stop within N steps" until mpirun kills it.  The
# crash is the cause (139), not a lost host (gpurun said exit 3 here), and
# mdrun's own lines are on stderr and in the record.
cp -r "$top_srcdir/examples/water-box" "$TMP/blowup"
chmod -R u+w "$TMP/blowup"
sed 's/^dt .*/dt                   = 0.012/' "$top_srcdir/examples/water-box/md.mdp" >"$TMP/blowup/md.mdp"
if command -v mpirun >/dev/null 2>&1; then
    run "$GPURUN" run "$TMP/blowup/job.conf" --results "$TMP/blowup-results" --set oversubscribe=true \
        --set launcher=mpirun
    expect_rc 139 "the water box blowing up on 2 ranks under mpirun: 139, not exit 3"
    grep -q 'lost' "$TMP/err"
    [ $? -ne 0 ]
    ok $? "... no host is called lost"
    grep -q '^\[[01]\] step [0-9]*: One or more water molecules can not be settled\.$' "$TMP/err" &&
        grep -q 'failed first: killed by signal 11 (Segmentation fault); cause: "step [0-9]*: One or more water molecules can not be settled\."' "$TMP/err"
    ok $? "... mdrun's SETTLE line first on stderr, and in gpurun's message"
    d=$(ls -d "$TMP"/blowup-results/water-box/*Z-*/ | tail -1)
    jq -e '.state == "failed" and .exit_status == 139 and .failure.status == 139 and
        (.failure.reason | test("^step [0-9]+: One or more water molecules can not be settled[.]$")) and
        (.failure.tail | length) == 20 and ([.rank_status[] | select(.stopped == true)] | length) == 1' \
        "$d/record.json" >/dev/null
    ok $? "... the record: failure with mdrun's line as its reason and the rank's last 20 lines; the other rank stopped"
else
    skip "mpirun not found: no blow-up under mpirun"
fi

# Ctrl-C while mdrun runs: interrupted, 130, whatever mdrun makes of the
# signal (it stops within some steps, or is killed).
with_sigint="env --default-signal=INT"
env --default-signal=INT true 2>/dev/null || with_sigint=
if [ -n "$with_sigint" ]; then
    $with_sigint "$GPURUN" run "$top_srcdir/examples/water-box/job.conf" --results "$TMP/int" --quiet \
        --set oversubscribe=true --set params.nsteps=5000000 >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    n=0
    while ! grep -qs '^Started mdrun' "$TMP"/int/water-box/*/water-box.log && [ $n -lt 1200 ]; do
        sleep 0.1
        n=$((n + 1))
    done
    kill -INT "$pid"
    rc=0
    wait "$pid" || rc=$?
    expect_rc 130 "Ctrl-C while mdrun runs on 2 ranks: 130"
    contains "$TMP/err" "interrupted by SIGINT (Interrupt): every rank was stopped" "... saying interrupted"
    d=$(ls -d "$TMP"/int/water-box/*Z-*/ | tail -1)
    jq -e '.state == "interrupted" and .exit_status == 130 and .failure.reason == "interrupted by SIGINT"' \
        "$d/record.json" >/dev/null
    ok $? "... the record's state is interrupted"
else
    skip "env --default-signal not found (coreutils 8.31): no Ctrl-C test"
fi

# The scaling study: examples/water-box/scan.conf on 1 and 2 ranks, then
# the report's speedup and efficiency against 1 rank.
run "$GPURUN" run "$top_srcdir/examples/water-box/scan.conf" --results "$TMP/scan" --quiet \
    --set oversubscribe=true --set params.nsteps=500
expect_rc 0 "the water-box scan runs on 1 and 2 ranks"
[ "$(ls -d "$TMP"/scan/water-box-scan/*Z-*/ | wc -l)" -eq 2 ] &&
    jq -e -s 'map(.state == "ok") | all' "$TMP"/scan/water-box-scan/*Z-*/record.json >/dev/null
ok $? "... two runs, both ok"
run "$GPURUN" report --results "$TMP/scan" --html "$TMP/scan.html"
run "$GPURUN" report --results "$TMP/scan"
expect_rc 0 "the scan's report"
# The ns_per_day table's row of 2 ranks: its efficiency (right-aligned,
# ending where its head ends) is a number.
eff=$(awk '/ns_per_day/ { t = 1; next }
    t && !e { p = index($0 " ", " efficiency "); if (p) { e = p + 10; r = index($0 " ", " ranks ") + 5 }; next }
    t && e { n = split(substr($0, 1, r), a, " "); if (a[n] == 2) { n = split(substr($0, 1, e), a, " "); print a[n]; exit } }' "$TMP/out")
echo "$eff" | grep -Eq '^[0-9]+\.[0-9][0-9]$'
ok $? "the report shows the parallel efficiency on 2 ranks ($eff)"
grep -q '<th>efficiency</th>' "$TMP/scan.html" && ! grep -Eq 'GPU monitoring|<th>cost/' "$TMP/scan.html"
ok $? "the scan's page: efficiency, and no GPU monitoring or cost for this CPU job"
# The same page as a browser shows it: rendered, and its tables as parsed.
if ! find_chromium; then
    skip "chromium not found (Debian: chromium): the scan's page is not rendered"
else
    for what in --screenshot="$TMP/scan.png" --dump-dom; do
        browse --window-size=1200,2000 "$what" "file://$TMP/scan.html" >"$TMP/scan.dom"
    done
    size=$(wc -c <"$TMP/scan.png" 2>/dev/null || echo 0)
    [ -n "$(png_size "$TMP/scan.png")" ] && [ "$size" -gt 40000 ] &&
        tables=$(grep -o '<table[ >]' "$TMP/scan.dom" | wc -l) &&
        filled=$(awk 'BEGIN { RS = "</table>" } /<table[ >]/ && /<td/ { n++ } END { print n + 0 }' "$TMP/scan.dom") &&
        # ns/day, hour/ns, where it ran (and energy where this machine measures it): none empty
        [ "$tables" -ge 3 ] && [ "$tables" -eq "$filled" ] && grep -q '<th>efficiency</th>' "$TMP/scan.dom" &&
        grep -q '<th>program version</th>' "$TMP/scan.dom" &&
        ! grep -Eq 'GPU monitoring|<th>(cost|spot)/|<th>GPUs' "$TMP/scan.dom"
    ok $? "in Chromium: the scan's page ($size-byte PNG): ns/day and hour/ns tables with efficiency, where it ran (program version), no empty table"
fi
done_testing
