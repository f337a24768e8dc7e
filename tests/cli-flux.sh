#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Flux for real (issue 29 §3): a 3-broker Flux instance on this machine
# (flux start --test-size=3, flux-core as scripts/install-flux.sh builds
# it), and gpurun in it.  launcher = auto picks flux inside the instance
# (also with a Slurm allocation's variables beside it: the instance is the
# inner one); `flux run` with Flux's own binding off (each rank sees every
# core and no CUDA_VISIBLE_DEVICES of Flux's) while gpurun's rank step binds;
# three "hosts" (the brokers, named flux1 and flux2 by a job shell rc file
# through GPURUN_HOST), each planning its own ranks and finding its local
# rank in FLUX_TASK_LOCAL_ID; a rank failing on the third host is its exit
# status; SIGTERM to gpurun leaves no job running in the instance; the water
# box (real GROMACS, Open MPI through Flux's PMI) on 2 ranks and across two
# brokers; gpurun submit to Flux (flux batch), the job run and its record
# written; doctor's Flux line inside and outside; launcher = flux outside an
# instance refused; and Flux started inside a Slurm allocation (srun
# --mpi=pmi2 flux start) on the one-node Slurm test cluster.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if ! find_flux; then
    echo "1..0 # SKIP $flux_missing"
    exit 0
fi
unset FLUX_URI FLUX_JOB_ID SLURM_JOB_ID SLURM_JOBID GPURUN_TOPOLOGY GPURUN_PLUGIN_PATH
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mpi_yield_when_idle=1 GPURUN_KILL_GRACE=5
# Every broker is this machine: MPI between them on loopback, never on a
# bridge another test's netns cluster makes and removes meanwhile.
export OMPI_MCA_btl_tcp_if_include=127.0.0.0/8
cd "$TMP" || exit 1
G=$GPURUN

# ---- outside an instance ---------------------------------------------------------
# What each rank sees: its numbers, its cores, a CUDA_VISIBLE_DEVICES.
cat >"$TMP/show" <<'EOF'
#!/bin/sh
echo "rank=$GPURUN_RANK local=$GPURUN_LOCAL_RANK task=$FLUX_TASK_RANK" \
    "cpus=$(sed -n 's/^Cpus_allowed_list:.//p' /proc/self/status | tr -d '[:space:]') cvd=${CUDA_VISIBLE_DEVICES-unset}"
EOF
chmod +x "$TMP/show"
cat >"$TMP/job.conf" <<EOF
command = "$TMP/show"
ranks_per_node = 2
gpus_per_rank = 0
threads_per_rank = 1
timeout = "2m"
EOF
run "$G" doctor
contains "$TMP/out" "PASS  Flux              flux-core 0.88.0 (flux run, flux batch); not inside an instance" \
    "doctor, outside an instance: Flux's version and where to get an instance"
run "$G" run "$TMP/job.conf" --set launcher=flux --dry-run
expect_rc 3 "launcher = flux outside a Flux instance: exit 3, nothing started"
contains "$TMP/err" "launcher = flux runs jobs inside a Flux instance and FLUX_URI is not set" "... saying why"

# ---- a 3-broker instance, kept up for the checks -------------------------------------
# Brokers 1 and 2 play hosts flux1 and flux2 (tests/lib.sh).
flux_test_instance 3
# last_run JOB: its newest run folder
last_run() { ls -d "$TMP/results/$1"/*/ 2>/dev/null | tail -1 | sed 's:/$::'; }

run "$G" run "$TMP/job.conf" --dry-run
expect_rc 0 "inside the instance: a dry run"
contains "$TMP/out" "# launcher: flux: inside Flux instance $FLUX_URI" "launcher = auto picks flux, saying why"
contains "$TMP/out" "flux run --nodes=1 --tasks-per-node=2 --exclusive -o cpu-affinity=off -o gpu-affinity=off " \
    "... flux run on whole nodes, Flux's CPU and GPU binding off"
run env SLURM_JOB_ID=4242 "$G" run "$TMP/job.conf" --dry-run
contains "$TMP/out" "# launcher: flux: inside Flux instance" \
    "a Slurm allocation's variables beside FLUX_URI (flux start in a Slurm job): flux, the inner one"

run "$G" run "$TMP/job.conf" --set bind=none --quiet
expect_rc 0 "2 ranks through flux run, bind = none"
d=$(last_run job)
[ "$(rank_output "$d" 0)" = "rank=0 local=0 task=0 cpus=$(sed -n 's/^Cpus_allowed_list:.//p' /proc/self/status | tr -d '[:space:]') cvd=unset" ]
ok $? "... each rank sees every core and no CUDA_VISIBLE_DEVICES: Flux bound nothing ($(rank_output "$d" 0))"
[ "$(rank_output "$d" 1 | cut -d' ' -f1-3)" = "rank=1 local=1 task=1" ]
ok $? "... rank 1 found its rank and local rank in Flux's variables"
run "$G" run "$TMP/job.conf" --quiet
expect_rc 0 "bind = closest: 2 ranks"
d=$(last_run job)
c0=$(jq -r '.bindings[0].cpus' "$d/record.json")
c1=$(jq -r '.bindings[1].cpus' "$d/record.json")
[ -n "$c0" ] && [ "$c0" != null ] && [ "$c0" != "$c1" ] && [ "$(rank_output "$d" 0 | sed 's/.*cpus=\([^ ]*\).*/\1/')" = "$c0" ]
ok $? "... gpurun's rank step bound them, to different cores ($c0, $c1)"
jq -e '.launcher == "flux" and (.launcher_choice | startswith("flux: inside Flux instance"))' "$d/record.json" >/dev/null
ok $? "... the record names flux and why"

# Three hosts: the brokers.
run "$G" run "$TMP/job.conf" --set nodes=3 --set ranks_per_node=1 --set bind=none --quiet
expect_rc 0 "nodes = 3: one rank on each broker"
d=$(last_run job)
[ "$(jq -c '[.bindings[].host]' "$d/record.json")" = "[\"$(hostname)\",\"flux1\",\"flux2\"]" ]
ok $? "... on three hosts, in rank order ($(jq -c '[.bindings[].host]' "$d/record.json"))"
[ "$(jq '.host_plans | length' "$d/record.json")" = 3 ] && [ "$(rank_output "$d" 2 | cut -d' ' -f1-3)" = "rank=2 local=0 task=2" ]
ok $? "... each planned its own rank; rank 2 is local rank 0 of flux2 (FLUX_TASK_LOCAL_ID)"
cat >"$TMP/fail" <<'EOF'
#!/bin/sh
if [ "$GPURUN_RANK" = 2 ]; then echo dying; exit 7; fi
sleep 1
EOF
chmod +x "$TMP/fail"
cat >"$TMP/fail.conf" <<EOF
command = "$TMP/fail"
nodes = 3
ranks_per_node = 1
gpus_per_rank = 0
bind = "none"
EOF
run "$G" run "$TMP/fail.conf" --quiet
expect_rc 7 "rank 2 exits 7 on the third broker: gpurun exits 7"
contains "$TMP/err" "rank 2 on flux2" "... naming the rank and its host"

# SIGTERM to gpurun: every rank stopped, no job left in the instance.
cat >"$TMP/sleep.conf" <<'EOF'
command = "sh -c 'echo started; exec sleep 300'"
nodes = 2
ranks_per_node = 1
gpus_per_rank = 0
bind = "none"
EOF
"$G" run "$TMP/sleep.conf" --quiet >"$TMP/sleep.out" 2>"$TMP/sleep.err" &
gp=$!
n=0
while [ "$(ranks_started "$TMP/results/sleep/*")" -lt 2 ] && [ $n -lt 300 ]; do
    sleep 0.1
    n=$((n + 1))
done
kill -TERM "$gp"
wait "$gp"
rc=$?
[ "$rc" -eq 143 ]
ok $? "SIGTERM to gpurun while its ranks run under flux: exit 143 (got $rc)"
n=0
while [ -n "$(flux jobs -n -o '{id}' 2>/dev/null)" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
[ -z "$(flux jobs -n -o '{id}' 2>/dev/null)" ]
ok $? "... and no job is left running in the instance"
jq -e '.state == "interrupted"' "$(last_run sleep)/record.json" >/dev/null
ok $? "... the record says interrupted"

# ---- doctor inside ---------------------------------------------------------------------
run "$G" doctor
contains "$TMP/out" "PASS  Launcher          flux: inside Flux instance $FLUX_URI" "doctor inside: the launcher auto picks"
contains "$TMP/out" "PASS  Flux              flux-core 0.88.0; inside instance $FLUX_URI (3 brokers)" \
    "... and the instance it is in"

# ---- the water box: GROMACS with Open MPI through Flux's PMI ------------------------------------
if gmx_needs_rdtscp; then
    for i in $(seq 1 5); do skip "this CPU lacks rdtscp, which Debian's GROMACS build needs: no water box"; done
elif command -v gmx_mpi >/dev/null 2>&1 && command -v gmx >/dev/null 2>&1; then
    cp -r "$top_srcdir/examples/water-box" "$TMP/wb"
    run "$G" run "$TMP/wb/job.conf" --set threads_per_rank=1 --set params.nsteps=200 --set timeout=4m \
        --set results="$TMP/results" --quiet
    expect_rc 0 "the water box under flux, 2 ranks (auto)"
    d=$(last_run water-box)
    grep -q 'Using 2 MPI processes' "$d/water-box.log"
    ok $? "... one MPI job of 2 ranks: Open MPI found Flux's PMI"
    jq -e '.foms.ns_per_day.value > 0 and .launcher == "flux"' "$d/record.json" >/dev/null
    ok $? "... ns/day $(jq '.foms.ns_per_day.value' "$d/record.json"), in the record"
    run "$G" run "$TMP/wb/job.conf" --set threads_per_rank=1 --set params.nsteps=200 --set nodes=2 \
        --set ranks_per_node=1 --set bind=none --set timeout=4m --set results="$TMP/results" --quiet
    expect_rc 0 "the water box across two brokers (hosts $(hostname) and flux1)"
    d=$(last_run water-box)
    grep -q 'Using 2 MPI processes' "$d/water-box.log" &&
        [ "$(jq -c '[.bindings[].host]' "$d/record.json")" = "[\"$(hostname)\",\"flux1\"]" ]
    ok $? "... one MPI job over both"
else
    for i in 1 2 3 4 5; do skip "no gmx_mpi and gmx (Debian: gromacs-openmpi)"; done
fi

# ---- gpurun submit: flux batch ---------------------------------------------------------------
run "$G" submit "$TMP/job.conf" --dry-run
expect_rc 0 "submit --dry-run inside the instance: a Flux batch script"
for line in "#flux: --job-name='job'" "#flux: --nodes='1'" "#flux: --nslots='2'" "#flux: --cores-per-slot='1'" \
    "#flux: --exclusive" "#flux: --time-limit='3m'" "#flux: --output='$TMP/results/job/flux-{{id}}.out'"; do
    contains "$TMP/out" "$line" "... $line"
done
s=$(ls -t "$TMP"/results/job/submit-*.flux | head -1)
flux batch --dry-run "$s" >"$TMP/jobspec.json" 2>"$TMP/jobspec.err"
ok $? "flux batch reads the script's directives"
jq -e '.attributes.system.duration == 180 and .attributes.system.job.name == "job" and
       (.resources[0].type == "node" and .resources[0].count == 1 and .resources[0].exclusive == true)' \
    "$TMP/jobspec.json" >/dev/null
ok $? "... as meant: one whole node, 3 minutes, the job's name"
run "$G" submit "$TMP/job.conf" --set 'flux.setattr=user.note=a b;c' --dry-run
s=$(ls -t "$TMP"/results/job/submit-*.flux | head -1)
flux batch --dry-run "$s" >"$TMP/jobspec.json" 2>/dev/null
jq -e '.attributes.user.note == "a b;c"' "$TMP/jobspec.json" >/dev/null
ok $? "a flux { } value with a blank and a ';' stays one value"
run "$G" submit "$TMP/job.conf" --set flux.nodes=2 --dry-run
expect_rc 2 "flux.nodes: refused, the job's layout sets it"
run "$G" submit "$TMP/job.conf"
expect_rc 0 "gpurun submit inside the instance: flux batch"
id=$(sed -n 's/^Submitted batch job //p' "$TMP/out")
[ -n "$id" ]
ok $? "... it says the job id ($id)"
flux job wait-event -t 120 "$id" clean >/dev/null 2>&1
flux job status "$id" >/dev/null 2>&1
ok $? "... the batch job completed"
d=$(last_run job)
jq -e '.state == "ok" and .launcher == "flux"' "$d/record.json" >/dev/null &&
    grep -q "gpurun: job: ok" "$TMP/results/job/flux-$id.out"
ok $? "... gpurun ran the job inside it, with flux run, and wrote its record"

# A scan: Flux takes no job arrays from gpurun, so a batch job per configuration,
# each its own size; all four record into the one results folder.
cat >"$TMP/fscan.conf" <<'EOF2'
job = "fscan"
command = "sh -c 'echo x=${x}'"
gpus_per_rank = 0
threads_per_rank = 1
timeout = "3m"
scan { ranks_per_node = {1, 2}
       params.x = {a, b} }
EOF2
run "$G" submit "$TMP/fscan.conf"
ids=$(sed -n 's/^Submitted batch job //p' "$TMP/out")
[ "$rc" -eq 0 ] && [ "$(echo "$ids" | wc -w)" -eq 4 ]
ok $? "a 2x2 scan: four flux batch jobs ($(echo $ids))"
for id in $ids; do flux job wait-event -t 120 "$id" clean >/dev/null 2>&1; done
jq -r -s 'map(select(.state == "ok") | "\(.config.ranks_per_node) \(.config["params.x"])") | sort | join(",")' \
    "$TMP"/results/fscan/*Z-*/record.json >"$TMP/fconfigs" 2>/dev/null
[ "$(cat "$TMP/fconfigs")" = "1 a,1 b,2 a,2 b" ] &&
    [ "$(grep -l "^#flux: --nslots='2'\$" "$TMP"/results/fscan/submit-*.flux | wc -l)" -eq 2 ]
ok $? "... each ran its configuration, ok, into one results folder ($(cat "$TMP/fconfigs")), 2 of them with 2 slots"

# ---- Flux started inside a Slurm allocation ----------------------------------------------------
if command -v srun >/dev/null 2>&1 && [ -f /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmi2.so ]; then
    stop_flux
    unset FLUX_URI
    slurm_cluster_up
    trap '"$slurm_cluster" down >/dev/null 2>&1; rm -rf "$TMP"' EXIT INT TERM
    run timeout 120 srun -N1 -n1 -c2 --mpi=pmi2 flux start "$G" run "$TMP/job.conf" --set bind=none --quiet
    expect_rc 0 "srun --mpi=pmi2 flux start gpurun run: Flux inside a Slurm allocation"
    d=$(last_run job)
    jq -e '.launcher == "flux" and (.launcher_choice | startswith("flux: inside Flux instance"))' "$d/record.json" >/dev/null
    ok $? "... gpurun ran the ranks with flux run"
else
    skip "no srun or Slurm's mpi/pmi2 plugin"
    skip "no srun or Slurm's mpi/pmi2 plugin"
fi

done_testing
