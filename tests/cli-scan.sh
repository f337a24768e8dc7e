#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Scans under gpurun run: a scan over template parameters (params.NAME),
# the whole scan planned and its inputs checked before the first run (a
# configuration that cannot run is named, nothing run), "run k of N" before
# each run, and the summary table at the end, also when a run failed.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

unset GPURUN_TOPOLOGY
mkdir -p "$TMP/tpl"
# A template that prints a rate and exits with ${code}: its figure of merit
# is read from the rank output.
cat >"$TMP/tpl/rate.conf" <<'EOF2'
description = "prints a rate, exits with a code"
command     = "sh -c 'echo rate: ${rate}; exit ${code}'"
inputs      = { "${input}" }
defaults    { rate = "1"  code = "0"  input = "in.dat" }
fom rate { regex = "rate: ([0-9.]+)"  units = "items/s"  better = "higher" }
EOF2
export GPURUN_TEMPLATE_PATH="$TMP/tpl"
: >"$TMP/in.dat"
: >"$TMP/other.dat"

# ---- the whole scan checked first ---------------------------------------
cat >"$TMP/big.conf" <<'EOF2'
template = "rate"
launcher = "local"
threads_per_rank = 1
scan { ranks_per_node = {1, 4096}
       params.rate = {1, 2} }
EOF2
run "$GPURUN" run "$TMP/big.conf" --results "$TMP/r-big"
expect_rc 3 "a scan whose configuration 3 cannot run here: exit 3"
contains "$TMP/err" "gpurun: configuration 3 of 4 (ranks_per_node=4096, params.rate=1): " \
    "... naming the configuration and what varies in it"
[ ! -e "$TMP/r-big" ] && ! grep -q 'run 1 of' "$TMP/err"
ok $? "... before anything ran: no results folder, no run started"
run "$GPURUN" run "$TMP/big.conf" --results "$TMP/r-big" --dry-run
[ "$rc" -eq 3 ] && [ ! -s "$TMP/out" ] && grep -q "configuration 3 of 4 (ranks_per_node=4096" "$TMP/err"
ok $? "... --dry-run too: exit 3 naming it, no configuration shown"

# The same with a scan over the layout alone (no params): configuration 1
# would run here, configuration 2 not; neither runs.
cat >"$TMP/big2.conf" <<'EOF2'
template = "rate"
launcher = "local"
threads_per_rank = 1
scan { ranks_per_node = {1, 4096} }
EOF2
run "$GPURUN" run "$TMP/big2.conf" --results "$TMP/r-big2"
[ "$rc" -eq 3 ] && grep -q "^gpurun: configuration 2 of 2 (ranks_per_node=4096): " "$TMP/err" && [ ! -e "$TMP/r-big2" ]
ok $? "a layout scan whose second configuration cannot run: exit 3 naming it, configuration 1 not run either"

# A configuration's own input missing: found before the first run.
cat >"$TMP/inputs.conf" <<'EOF2'
template = "rate"
launcher = "local"
ranks_per_node = 1
threads_per_rank = 1
scan { params.input = {"in.dat", "other.dat", "missing.dat"} }
EOF2
run "$GPURUN" run "$TMP/inputs.conf" --results "$TMP/r-in"
[ "$rc" -eq 2 ] || [ "$rc" -eq 3 ]
ok $? "configuration 3 of 3 has an input that is not there: exit 2 or 3 (exit $rc)"
contains "$TMP/err" "configuration 3 of 3 (params.input=missing.dat): " "... naming it"
[ ! -e "$TMP/r-in" ]
ok $? "... nothing run"

# ---- --dry-run shows every configuration ---------------------------------
cat >"$TMP/two.conf" <<'EOF2'
template = "rate"
launcher = "local"
threads_per_rank = 1
scan { ranks_per_node = {1, 2}
       params.rate = {1.5, 2.5} }
EOF2
run "$GPURUN" run "$TMP/two.conf" --results "$TMP/r-dry" --dry-run
expect_rc 0 "a 2x2 scan's dry run"
[ "$(grep -c '^# configuration [1-4] of 4: ranks_per_node=[12], params.rate=[12].5$' "$TMP/out")" -eq 4 ] &&
    grep -q "echo rate: 2.5" "$TMP/out" && [ ! -e "$TMP/r-dry" ]
ok $? "... shows all 4 configurations, params expanded in each, nothing run"

# ---- run k of N, a failed configuration, the summary ---------------------
cat >"$TMP/sweep.conf" <<'EOF2'
template = "rate"
launcher = "local"
ranks_per_node = 1
threads_per_rank = 1
scan { params.code = {0, 7}
       params.rate = {1.5, 2.5} }
EOF2
run "$GPURUN" run "$TMP/sweep.conf" --results "$TMP/r-sweep"
expect_rc 7 "a scan with a failing configuration: the first failure's exit status (7)"
for k in 1 2 3 4; do
    grep -q "^gpurun: run $k of 4: params.code=[07], params.rate=[12].5$" "$TMP/err" || k=x
    [ "$k" != x ] || break
done
[ "$k" = 4 ] && grep -q '^gpurun: run 3 of 4: params.code=7, params.rate=1.5$' "$TMP/err"
ok $? "each run starts with 'run k of 4: what varies' on stderr"
[ "$(ls -d "$TMP"/r-sweep/sweep/*Z-*/ | wc -l)" -eq 4 ]
ok $? "... the scan went on past the failed configuration: 4 run folders"
contains "$TMP/out" "gpurun: sweep: summary: 2 of 4 runs ok (4 configurations x 1 repeat)" "a summary at the end"
grep -Eq '^  run +configuration +state +figure of merit +run folder$' "$TMP/out" &&
    grep -Eq '^  1 +params.code=0, params.rate=1.5 +ok +rate = 1.5 items/s +sweep/[0-9TZ-]+$' "$TMP/out" &&
    grep -Eq '^  2 +params.code=0, params.rate=2.5 +ok +rate = 2.5 items/s +sweep/' "$TMP/out" &&
    grep -Eq '^  3 +params.code=7, params.rate=1.5 +failed +.* sweep/' "$TMP/out" &&
    grep -Eq '^  4 +params.code=7, params.rate=2.5 +failed +.* sweep/' "$TMP/out"
ok $? "... a table: configuration, state, figure of merit with units, run folder"
contains "$TMP/err" "at least one run failed (exit status 7, the first failure's)" "... and the failure said last"
jq -e -s 'map(.config["params.rate"]) | sort == ["1.5", "1.5", "2.5", "2.5"]' \
    "$TMP"/r-sweep/sweep/*Z-*/record.json >/dev/null
ok $? "each record's config holds its params values"
[ "$(jq -r '.config["params.code"]' "$TMP/r-sweep/sweep/latest/record.json")" = 7 ] &&
    grep -q '^0: rate: 2.5' "$TMP"/r-sweep/sweep/latest/*.out
ok $? "... and the run ran with them"

# repeat without a scan: run k of N says which repeat
cat >"$TMP/rep.conf" <<'EOF2'
template = "rate"
launcher = "local"
ranks_per_node = 1
threads_per_rank = 1
repeat = 2
EOF2
run "$GPURUN" run "$TMP/rep.conf" --results "$TMP/r-rep"
expect_rc 0 "two repeats"
grep -q '^gpurun: run 1 of 2: repeat 1 of 2$' "$TMP/err" && grep -q '^gpurun: run 2 of 2: repeat 2 of 2$' "$TMP/err" &&
    grep -Eq '^  2 +repeat 2 +ok +rate = 1 items/s ' "$TMP/out"
ok $? "... 'run 2 of 2: repeat 2 of 2', and both in the summary"

# ---- gpurun submit of a scan: a batch job per configuration ---------------
unset SLURM_JOB_ID SLURM_JOB_GPUS SLURM_STEP_GPUS
cat >"$TMP/sub.conf" <<'EOF2'
template = "rate"
gpus_per_rank = 1
threads_per_rank = 2
timeout = "10m"
repeat = 2
scan { ranks_per_node = {1, 2, 4}
       params.rate = {1, 2, 3} }
EOF2
run "$GPURUN" submit "$TMP/sub.conf" --dry-run
expect_rc 0 "submit --dry-run of a 3x3 scan (Slurm)"
contains "$TMP/err" "gpurun: sub: a scan of 9 configurations: 3 batch jobs, each sized and timed for its own" \
    "... 3 batch jobs, said first"
[ "$(grep -c '^#!/bin/bash$' "$TMP/out")" -eq 3 ] && [ "$(ls "$TMP"/results/sub/submit-*.sbatch | wc -l)" -eq 3 ]
ok $? "... 3 scripts shown and written, one per size"
for size in 1:1-3 2:4-6 4:7-9; do
    rpn=${size%%:*} tasks=${size#*:}
    # the script of this size: from its heading to the next
    awk -v want="configurations $tasks (3) of 9" 'index($0, "# ==== batch job") == 1 { on = index($0, want) > 0 } on' \
        "$TMP/out" >"$TMP/one.sbatch"
    grep -qx "#SBATCH --ntasks-per-node=$rpn" "$TMP/one.sbatch" && grep -qx "#SBATCH --gpus-per-node=$rpn" "$TMP/one.sbatch" &&
        grep -qx '#SBATCH --cpus-per-task=2' "$TMP/one.sbatch" && grep -qx '#SBATCH --nodes=1' "$TMP/one.sbatch" &&
        grep -qx "#SBATCH --array=$tasks" "$TMP/one.sbatch" &&
        grep -qx '#SBATCH --time=00:22:00' "$TMP/one.sbatch" &&
        grep -q "run '$TMP/sub.conf' --configuration \"\${SLURM_ARRAY_TASK_ID}\"\$" "$TMP/one.sbatch" &&
        grep -qx "# Configuration $((${tasks%-*} + 1)) of 9: ranks_per_node=$rpn, params.rate=2" "$TMP/one.sbatch"
    ok $? "... ranks_per_node=$rpn: its own size ($rpn tasks, $rpn GPUs), an array of configurations $tasks, each task's time 2 x (10m + 1m) = 22m"
done
# A scan of the layout alone: as many jobs as sizes, none asking for the
# largest size for the sum of all time limits (3 x 2 x 11m = 01:06:00).
sed '/params.rate/d; s/^scan { ranks_per_node = {1, 2, 4}$/scan { ranks_per_node = {1, 2, 4} }/' "$TMP/sub.conf" >"$TMP/sub2.conf"
run "$GPURUN" submit "$TMP/sub2.conf" --dry-run
[ "$rc" -eq 0 ] && [ "$(grep -c '^#!/bin/bash$' "$TMP/out")" -eq 3 ] &&
    [ "$(grep -cx '#SBATCH --time=00:22:00' "$TMP/out")" -eq 3 ] && ! grep -q 'SBATCH --time=01:06:00' "$TMP/out" &&
    [ "$(grep -c '^#SBATCH --ntasks-per-node=[124]$' "$TMP/out")" -eq 3 ] && ! grep -q 'SBATCH --array' "$TMP/out" &&
    [ "$(grep -c "^exec .* --configuration [123]\$" "$TMP/out")" -eq 3 ]
ok $? "a scan over ranks_per_node {1, 2, 4}: 3 jobs of 1, 2, 4 tasks, 22m each, not one of 4 tasks for 01:06:00"

# Flux takes no arrays from gpurun: one job per configuration.
run "$GPURUN" submit "$TMP/sub.conf" --dry-run --set launcher=flux
[ "$rc" -eq 0 ] && [ "$(grep -c '^#!/bin/bash$' "$TMP/out")" -eq 9 ] &&
    [ "$(grep -c "^exec .* --set 'launcher=flux' --configuration [1-9]\$" "$TMP/out")" -eq 9 ] &&
    [ "$(grep -c "^#flux: --time-limit='22m'\$" "$TMP/out")" -eq 9 ] &&
    [ "$(grep -c "^#flux: --nslots='4'\$" "$TMP/out")" -eq 3 ]
ok $? "with Flux: 9 jobs, one per configuration, each its own size and 22m"

cat >"$TMP/subbad.conf" <<'EOF2'
template = "rate"
gpus_per_rank = 0
threads_per_rank = 1
ranks_per_node = 1
scan { params.rate = {1, 2}
       params.code = {0, 1} }
EOF2
run "$GPURUN" submit "$TMP/subbad.conf" --dry-run --set params.rate=3
[ "$rc" -eq 0 ] && [ "$(grep -c '^#!/bin/bash$' "$TMP/out")" -eq 1 ] && grep -q '#SBATCH --array=1-2' "$TMP/out" &&
    grep -qx '# Configuration 2 of 2: params.code=1' "$TMP/out"
ok $? "--set of a scanned parameter fixes it: a 2-configuration array"

# A configuration the site's nodes cannot hold: named, nothing written.
mkdir -p "$TMP/tpl/sites"
printf 'description = "small nodes"\ncores_per_node = 4\ngpus_per_node = 4\n' >"$TMP/tpl/sites/small.conf"
run "$GPURUN" submit "$TMP/sub.conf" --dry-run --set site=small --results "$TMP/r-small"
[ "$rc" -eq 3 ] && grep -q "^gpurun: configuration 7 of 9 (ranks_per_node=4, params.rate=1): " "$TMP/err" &&
    grep -q "need 8 cores on a node" "$TMP/err" && [ ! -e "$TMP/r-small" ] && [ ! -s "$TMP/out" ]
ok $? "submit: configuration 7 of 9 needs more cores than the site's nodes have: exit 3 naming it, nothing written"

# A misspelt parameter in a scan: file, line, key, and the template's default it meant.
printf 'template = "rate"\nranks_per_node = 1\nscan {\n  params.rat = {1, 2} }\n' >"$TMP/typo.conf"
run "$GPURUN" run "$TMP/typo.conf" --dry-run
[ "$rc" -eq 2 ] && grep -q "^gpurun: $TMP/typo.conf:4: key 'scan.params.rat': not used: template 'rate' has no '\${rat}' and no default of that name (did you mean 'scan.params.rate'?)" "$TMP/err"
ok $? "scan { params.rat }: exit 2 on its line, did you mean 'scan.params.rate'"
run "$GPURUN" submit "$TMP/typo.conf" --dry-run --set gpus_per_rank=0
[ "$rc" -eq 2 ] && grep -q "typo.conf:4: key 'scan.params.rat': not used" "$TMP/err"
ok $? "... submit too"

# --configuration K runs that one configuration (a batch job's body does so).
run "$GPURUN" run "$TMP/sweep.conf" --results "$TMP/r-one" --configuration 2
[ "$rc" -eq 0 ] && [ "$(ls -d "$TMP"/r-one/sweep/*Z-*/ | wc -l)" -eq 1 ] &&
    [ "$(jq -c .config "$TMP/r-one/sweep/latest/record.json")" = '{"params.code":"0","params.rate":"2.5"}' ] &&
    grep -q '^gpurun: configuration 2 of 4: params.code=0, params.rate=2.5$' "$TMP/err"
ok $? "run --configuration 2: that configuration alone, its record's config as in the whole scan"
run "$GPURUN" run "$TMP/sweep.conf" --results "$TMP/r-one" --configuration 5
[ "$rc" -eq 2 ] && grep -q -- "--configuration 5: the job's scan has 4 configurations" "$TMP/err"
ok $? "... --configuration 5 of 4: exit 2"

done_testing
