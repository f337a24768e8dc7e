#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Which runs report and results read (issue 39): --since, --until, --last N
# (per configuration), --runs, --where; busy runs (record key
# conditions.busy) marked by results, left out of the report's means and
# listed unless --include-busy; a time figure's mean is its harmonic mean,
# so that its table agrees with its speedup.  Records written by hand.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if ! command -v jq >/dev/null 2>&1; then
    echo "1..0 # SKIP jq not found (Debian: jq)"
    exit 0
fi

# rec ID RANKS NS START BUSY [HOST]: a CPU-only run of job water in $R;
# BUSY true/false/none (none: a record from before conditions were kept).
R=$TMP/results
rec() {
    mkdir -p "$R/water/$1"
    jq -n --arg id "$1" --argjson ranks "$2" --argjson ns "$3" --arg start "$4" --arg busy "$5" \
        --arg host "${6:-node1}" '{
        run_id: $id, job: "water", template: "water-box", start: $start, end: $start, wall_s: 9.5,
        exit_status: 0, state: "ok", nodes: 1, ranks: $ranks, gpus_per_rank: 0, threads_per_rank: 1,
        gpus: 0, launcher: "mpirun", hosts: [$host], params: {nsteps: "2000"},
        config: {ranks_per_node: $ranks}, repeat_index: 0, gpus_monitor: null,
        price_per_gpu_hour: null, references: {}, gpurun_version: "0.1.0",
        foms: {ns_per_day: {value: $ns, values: [$ns], units: "ns/day", better: "higher", kind: "throughput"},
               hour_per_ns: {value: (24 / $ns), values: [(24 / $ns)], units: "hour/ns", better: "lower",
                             kind: "time"}}
    } | if $busy == "none" then .
        else .conditions = {busy: ($busy == "true"), why: "2 other processes took 71 % of cpus 0-1"} end' \
        >"$R/water/$1/record.json"
}
# 1 rank: 30 and 30 ns/day, quiet; 2 ranks: 10 and 100 (mean 55: speedup
# 1.83, though the arithmetic mean of their hour/ns, 1.32, is above 1
# rank's 0.8); a busy run of each at 3 and 5 ns/day on node2.
rec r1 1 30 2026-01-01T01:00:00Z none
rec r2 1 30 2026-01-01T02:00:00Z false
rec r3 2 10 2026-01-01T03:00:00Z none
rec r4 2 100 2026-01-01T04:00:00Z false
rec r5 1 3 2026-01-01T05:00:00Z true node2
rec r6 2 5 2026-01-01T06:00:00Z true node2

# row FILE FIGURE RANKS: the table row of FIGURE for RANKS ranks.
row() { awk -v f="$2" -v r="$3" '/^  [a-z_]+ \(/ { t = $1 } t == f && $1 == 1 && $2 == r { print; exit }' "$1"; }
# n_of, mean_of FILE FIGURE RANKS: the row's n and mean.
n_of() { row "$@" | awk '{ print $5 }'; }
mean_of() { row "$@" | awk '{ print $7 }'; }

# ---- busy runs ----------------------------------------------------------
run "$GPURUN" report --results "$R"
expect_rc 0 "report"
cp "$TMP/out" "$TMP/report.txt"
[ "$(n_of "$TMP/report.txt" ns_per_day 1)" = 2 ] && [ "$(mean_of "$TMP/report.txt" ns_per_day 1)" = 30.00 ]
ok $? "the busy run left out of 1 rank's mean: n 2, mean 30.00 ($(row "$TMP/report.txt" ns_per_day 1))"
contains "$TMP/report.txt" "2 busy runs (other processes on their cores or GPUs, or throttling: figures likely low) left out of the means" \
    "... said at the top"
contains "$TMP/report.txt" "Busy runs, left out of the means: 2" "... and listed under the job"
grep -q "ranks_per_node=2  busy   2 other processes took 71 % of cpus 0-1  water/r6" "$TMP/report.txt"
ok $? "... each with its configuration, why and folder"
run "$GPURUN" report --results "$R" --include-busy
[ "$(n_of "$TMP/out" ns_per_day 1)" = 3 ] && [ "$(mean_of "$TMP/out" ns_per_day 1)" = 21.00 ]
ok $? "--include-busy: kept in the means, n 3, mean 21.00"
contains "$TMP/out" "2 busy runs kept in the means (--include-busy): their figures are likely low" "... and said"

run "$GPURUN" results --results "$R"
expect_rc 0 "results"
grep -q "^r5 .* busy " "$TMP/out" && grep -q "^r2 .* - " "$TMP/out" && grep -q "^r1 .* - " "$TMP/out"
ok $? "results marks the busy runs, not the quiet ones, nor one from before conditions were kept"
contains "$TMP/out" "busy: 2 other processes took 71 % of cpus 0-1: figures likely low" "... with why under it"
run "$GPURUN" results --results "$R" --where conditions.busy=true --json
[ "$(jq -r '[.[].run_id] | join(",")' "$TMP/out")" = "r5,r6" ]
ok $? "--where conditions.busy=true: the busy runs"

# ---- means that agree -----------------------------------------------------
[ "$(mean_of "$TMP/report.txt" hour_per_ns 2)" = 0.4364 ] && [ "$(mean_of "$TMP/report.txt" hour_per_ns 1)" = 0.8000 ]
ok $? "hour_per_ns: 2 ranks' mean 0.4364 (24 / 55, the harmonic mean), below 1 rank's 0.8000, beside its speedup"
row "$TMP/report.txt" hour_per_ns 2 | grep -q " 1.83 "
ok $? "... of 1.83, as ns_per_day's"
[ "$(grep -c "harmonic mean" "$TMP/report.txt")" = 1 ]
ok $? "the method said once"

# ---- selection --------------------------------------------------------------
ids() { run "$GPURUN" results --results "$R" --json "$@"; jq -r '[.[].run_id] | join(",")' "$TMP/out"; }
[ "$(ids --since 2026-01-01T03:00:00Z)" = "r3,r4,r5,r6" ]
ok $? "--since: the runs started then or later"
[ "$(ids --until 2026-01-01T02:00:00Z)" = "r1,r2" ]
ok $? "--until: the runs started then or earlier"
[ "$(ids --since 2026-01-01T02:00:00Z --until 2026-01-01T04:00:00Z)" = "r2,r3,r4" ]
ok $? "--since and --until: between"
[ "$(ids --last 1)" = "r5,r6" ]
ok $? "--last 1: the last run of each configuration"
[ "$(ids --last 1 --where conditions.busy=false)" = "r2,r4" ]
ok $? "--last 1 counts among the runs the other options select"
[ "$(ids --runs r4,r1)" = "r1,r4" ]
ok $? "--runs: those runs"
[ "$(ids --where hosts=node2)" = "r5,r6" ]
ok $? "--where hosts=node2: the runs on node2"
[ "$(ids --where params.nsteps=2000 --where ranks=2)" = "r3,r4,r6" ]
ok $? "--where params.nsteps=2000 --where ranks=2: both must hold"
[ "$(ids --where state=failed)" = "" ]
ok $? "--where state=failed: none"
run "$GPURUN" report --results "$R" --since 2026-01-01T04:00:00Z
[ "$(n_of "$TMP/out" ns_per_day 2)" = 1 ] && [ "$(mean_of "$TMP/out" ns_per_day 2)" = 100.0 ] &&
    [ "$(n_of "$TMP/out" ns_per_day 1)" = 0 ] && [ "$(mean_of "$TMP/out" ns_per_day 1)" = - ]
ok $? "report --since: the means of the runs selected (2 ranks: r4 only; 1 rank: only its busy run, no mean)"
run "$GPURUN" report --results "$R" --last 1 --include-busy
[ "$(mean_of "$TMP/out" ns_per_day 1)" = 3.000 ]
ok $? "report --last 1 --include-busy: the last run's figure"

for bad in "--since yesterday" "--until 2026-13-01" "--last 0" "--last x" "--runs ," "--where nsteps" "--where =1"; do
    # shellcheck disable=SC2086
    run "$GPURUN" results --results "$R" $bad
    expect_rc 2 "results $bad: exit 2"
    contains "$TMP/err" "${bad%% *}" "... naming ${bad%% *}"
done

done_testing
