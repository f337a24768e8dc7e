#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gpurun submit of a scan on the real one-node Slurm test cluster
# (tests/cluster/slurm-single.sh): a job array per size, each task running
# its own configuration (gpurun run --configuration $SLURM_ARRAY_TASK_ID);
# every run records into the job's one results folder.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

slurm_cluster_up
unset GPURUN_TOPOLOGY SLURM_JOB_ID SLURM_JOB_GPUS SLURM_STEP_GPUS

# wait_jobs ID...: until Slurm lists none of them (array tasks included; 600 x 0.2 s at most)
wait_jobs() {
    n=0
    while [ $n -lt 600 ] && squeue -h -j "$(echo "$@" | tr ' ' ',')" 2>/dev/null | grep -q .; do
        sleep 0.2
        n=$((n + 1))
    done
}

mkdir -p "$TMP/tpl"
cat >"$TMP/tpl/rate.conf" <<'EOF2'
description = "prints a rate"
command     = "sh -c 'echo rate: ${rate}'"
defaults    { rate = "1" }
fom rate { regex = "rate: ([0-9.]+)"  units = "items/s"  better = "higher" }
EOF2
export GPURUN_TEMPLATE_PATH="$TMP/tpl"
cat >"$TMP/scan.conf" <<'EOF2'
job = "slurmscan"
template = "rate"
gpus_per_rank = 0
threads_per_rank = 1
timeout = "2m"
scan { ranks_per_node = {1, 2}
       params.rate = {1.5, 2.5} }
EOF2

run "$GPURUN" submit "$TMP/scan.conf"
expect_rc 0 "gpurun submit of a 2x2 scan"
[ "$(grep -c '^Submitted batch job [0-9][0-9]*$' "$TMP/out")" -eq 2 ]
ok $? "... two batch jobs (a job array per size)"
ids=$(sed -n 's/^Submitted batch job \([0-9][0-9]*\)$/\1/p' "$TMP/out" | tr '\n' ' ')
# shellcheck disable=SC2086 # the ids, one word each
wait_jobs $ids
R=$TMP/results/slurmscan
[ "$(ls -d "$R"/*Z-*/ 2>/dev/null | wc -l)" -eq 4 ]
ok $? "4 runs, all in the job's one results folder"
jq -e -s 'map(.state) == ["ok", "ok", "ok", "ok"]' "$R"/*Z-*/record.json >/dev/null
ok $? "... each ok"
jq -r -s 'map("\(.config.ranks_per_node) \(.config["params.rate"])") | sort | join(",")' \
    "$R"/*Z-*/record.json >"$TMP/configs"
[ "$(cat "$TMP/configs")" = "1 1.5,1 2.5,2 1.5,2 2.5" ]
ok $? "... each with its own configuration in its record ($(cat "$TMP/configs"))"
jq -e -s 'all(.launcher == "srun")' "$R"/*Z-*/record.json >/dev/null
ok $? "... run with srun inside each array task's allocation"
for d in "$R"/*Z-*/; do
    want=$(jq -r '.config["params.rate"]' "$d/record.json")
    rank_output "$d" 0 | grep -qx "rate: $want" || want=x
    [ "$(jq '.ranks | length' "$d/plan.json")" = "$(jq '.config.ranks_per_node' "$d/record.json")" ] || want=x
    [ "$want" != x ] || break
done
[ "$want" != x ]
ok $? "... each ran its own parameter on its own number of ranks"
[ "$(ls "$R"/slurm-*.out | wc -l)" -eq 4 ]
ok $? "Slurm's output of the 4 array tasks in the results folder"
run "$GPURUN" results --results "$TMP/results" --job slurmscan --json
[ "$rc" -eq 0 ] && [ "$(jq 'if type == "array" then length else (.runs | length) end' "$TMP/out")" -eq 4 ]
ok $? "gpurun results lists the 4 runs of the job"

done_testing
