#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A real single-node Slurm cluster (munged, slurmctld, slurmd, MpiDefault=pmix)
# brought up for this test and torn down after it: gpurun inside sbatch uses
# srun with PMIx and binds every rank; gpurun submit submits and the job completes.
# A crash while srun stops the other rank is 139, not a lost host; the
# allocation's time limit is state timeout, exit 124.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if [ ! -x "${HELLO:-}" ]; then
    echo "1..0 # SKIP examples/hello/hello not built (configure found no MPI)"
    exit 0
fi
slurm_cluster_up
unset GPURUN_TOPOLOGY
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# wait_job ID [N]: until Slurm no longer lists the job (N x 0.2 s at most, 600 by default)
wait_job() {
    n=0
    while squeue -h -j "$1" 2>/dev/null | grep -q . && [ $n -lt "${2:-600}" ]; do sleep 0.2; n=$((n + 1)); done
}

cat >"$TMP/job.conf" <<JOB
job = "slurmhello"
command = "$HELLO"
ranks_per_node = 2
gpus_per_rank = 0
threads_per_rank = 1
timeout = "2m"
JOB
cat >"$TMP/batch.sh" <<SCRIPT
#!/bin/sh
#SBATCH --nodes=1
#SBATCH --ntasks=2
#SBATCH --output=$TMP/batch.out
"$GPURUN" run "$TMP/job.conf" --quiet
SCRIPT
run sbatch --parsable "$TMP/batch.sh"
expect_rc 0 "sbatch accepts a batch script that calls gpurun run"
id=$(cut -d';' -f1 "$TMP/out")
wait_job "$id"
d=$(ls -d "$TMP"/results/slurmhello/*Z-*/ 2>/dev/null | tail -1 | sed 's:/$::')
[ -n "$d" ] && [ "$(jq -r .state "$d/record.json")" = ok ]
ok $? "the job completed and its record says ok"
[ "$(jq -r .launcher "$d/record.json" 2>/dev/null)" = srun ]
ok $? "inside the allocation gpurun chose srun"
[ -f "$d/launcher.out" ] && [ -f "$d/plan.json" ] && [ "$(jq -r '.ranks[1].binding.rank' "$d"/*.ranks.json 2>/dev/null)" = 1 ]
ok $? "the run folder holds the plan, srun's own output and each rank's binding"
# This cluster gathers no energy (no AcctGatherEnergyType): the record says
# so beside gpurun's own figure, without asking sacct.
jq -e '.energy | has("slurm_consumed_J") and .slurm_consumed_J == null and (.slurm_note | test("AcctGatherEnergyType is none"))' "$d/record.json" >/dev/null
ok $? "Slurm's ConsumedEnergy: null, saying the cluster gathers none ($(jq -c .energy.slurm_note "$d/record.json" 2>/dev/null))"
for i in 0 1; do
    line=$(rank_output "$d" "$i" 2>/dev/null | grep '^rank=' | head -1)
    want=$(jq -r ".ranks[$i].cpus" "$d/plan.json" 2>/dev/null)
    case " $line " in
        *" rank=$i size=2 "*" cpus=$want "*"GPURUN_RANK=$i "*) ok 0 "rank $i: MPI rank $i of 2 under srun --mpi=pmix, bound to cpus $want" ;;
        *) ok 1 "rank $i: MPI rank $i of 2 under srun --mpi=pmix, bound to cpus $want"; diag "$line" ;;
    esac
done

run "$GPURUN" submit "$TMP/job.conf"
expect_rc 0 "gpurun submit"
contains "$TMP/out" "Submitted batch job" "... prints the job id"
id=$(sed -n 's/.*Submitted batch job \([0-9][0-9]*\).*/\1/p' "$TMP/out" | head -1)
wait_job "$id"
n=$(ls -d "$TMP"/results/slurmhello/*Z-*/ | wc -l)
[ "$n" -eq 2 ]
ok $? "the submitted job ran: a second run folder"
d=$(ls -d "$TMP"/results/slurmhello/*Z-*/ | tail -1 | sed 's:/$::')
[ "$(jq -r .state "$d/record.json")" = ok ] && [ "$(jq -r .launcher "$d/record.json")" = srun ]
ok $? "... and completed under srun with state ok"
ls "$TMP"/results/slurmhello/slurm-"$id".out >/dev/null 2>&1
ok $? "... with Slurm's output file in the job's results folder"

# A failing rank under srun: its status passes through sbatch's gpurun.
cat >"$TMP/fail.conf" <<JOB
job = "slurmfail"
command = "$HELLO --exit-rank 1 --exit-code 7 --sleep 20"
ranks_per_node = 2
gpus_per_rank = 0
threads_per_rank = 1
JOB
cat >"$TMP/fail.sh" <<SCRIPT
#!/bin/sh
#SBATCH --ntasks=2
#SBATCH --output=$TMP/fail.out
"$GPURUN" run "$TMP/fail.conf" --quiet
echo "gpurun-exit=\$?"
SCRIPT
run sbatch --parsable "$TMP/fail.sh"
wait_job "$(cut -d';' -f1 "$TMP/out")"
contains "$TMP/fail.out" "gpurun-exit=7" "under srun a rank exiting 7 makes gpurun exit 7"
contains "$TMP/fail.out" "rank 1 on" "... naming rank 1"

# A rank killed by SIGSEGV while the other takes SIGTERM as "stop soon":
# srun's kill-on-bad-exit stops that one (SIGTERM, then SIGKILL) before its
# rank step can report its end; it was stopped, not lost (was exit 3).
cat >"$TMP/segv.conf" <<JOB
job = "slurmsegv"
command = "$HELLO --segv-rank 0 --ignore-term --sleep 30"
ranks_per_node = 2
gpus_per_rank = 0
threads_per_rank = 1
JOB
cat >"$TMP/segv.sh" <<SCRIPT
#!/bin/sh
#SBATCH --ntasks=2
#SBATCH --output=$TMP/segv.out
"$GPURUN" run "$TMP/segv.conf"
echo "gpurun-exit=\$?"
SCRIPT
run sbatch --parsable "$TMP/segv.sh"
wait_job "$(cut -d';' -f1 "$TMP/out")"
contains "$TMP/segv.out" "gpurun-exit=139" "under srun, SIGSEGV in rank 0 while rank 1 ignores SIGTERM: 139, not exit 3"
grep -q 'lost' "$TMP/segv.out"
[ $? -ne 0 ]
ok $? "... no host is called lost"
d=$(ls -d "$TMP"/results/slurmsegv/*Z-*/ 2>/dev/null | tail -1)
[ -n "$d" ] && jq -e '.state == "failed" and .failure.rank == 0 and .failure.reason == "killed by signal SIGSEGV" and
    .rank_status[1].stopped == true' "$d/record.json" >/dev/null
ok $? "... the record: rank 0 failed (SIGSEGV), rank 1 was stopped"

# The water box blowing up (dt = 0.012 ps) on 2 ranks under srun: 139,
# mdrun's SETTLE line on stderr (the batch output) and in the record.
gmx_ok=1
command -v gmx_mpi >/dev/null 2>&1 && command -v gmx >/dev/null 2>&1 || gmx_ok=0
if [ "$gmx_ok" = 1 ] && gmx_needs_rdtscp; then
    gmx_ok=0
fi
if [ "$gmx_ok" = 1 ]; then
    cp -r "$top_srcdir/examples/water-box" "$TMP/blowup"
    chmod -R u+w "$TMP/blowup"
    sed 's/^dt .*/dt                   = 0.012/' "$top_srcdir/examples/water-box/md.mdp" >"$TMP/blowup/md.mdp"
    cat >"$TMP/blowup.sh" <<SCRIPT
#!/bin/sh
#SBATCH --ntasks=2
#SBATCH --output=$TMP/blowup.out
"$GPURUN" run "$TMP/blowup/job.conf" --results "$TMP/blowup-results" --set oversubscribe=true
echo "gpurun-exit=\$?"
SCRIPT
    run sbatch --parsable "$TMP/blowup.sh"
    wait_job "$(cut -d';' -f1 "$TMP/out")"
    contains "$TMP/blowup.out" "gpurun-exit=139" "the water box blowing up on 2 ranks under srun: 139"
    grep -q '^\[[01]\] step [0-9]*: One or more water molecules can not be settled\.$' "$TMP/blowup.out"
    ok $? "... mdrun's SETTLE line first on stderr, in the batch output"
    d=$(ls -d "$TMP"/blowup-results/water-box/*Z-*/ 2>/dev/null | tail -1)
    [ -n "$d" ] && jq -e '.launcher == "srun" and .failure.status == 139 and
        (.failure.reason | test("can not be settled")) and (.failure.tail | length) == 20' "$d/record.json" >/dev/null
    ok $? "... and in the record"
else
    skip "GROMACS not installed, or this CPU lacks the rdtscp its build needs: no blow-up under srun"
fi

# The allocation's time limit (sbatch --time=1, a minute): Slurm ends the
# step (srun: "CANCELLED ... DUE TO TIME LIMIT") and sends gpurun SIGTERM
# too: state timeout, exit 124, not "interrupted".  The batch shell traps
# SIGTERM so that it lives to print gpurun's exit status.
cat >"$TMP/limit.conf" <<JOB
job = "slurmlimit"
command = "$HELLO --sleep 600"
ranks_per_node = 2
gpus_per_rank = 0
threads_per_rank = 1
JOB
cat >"$TMP/limit.sh" <<SCRIPT
#!/bin/sh
#SBATCH --ntasks=2
#SBATCH --time=1
#SBATCH --output=$TMP/limit.out
trap 'echo batch-shell-got-sigterm' TERM
"$GPURUN" run "$TMP/limit.conf"
echo "gpurun-exit=\$?"
SCRIPT
run sbatch --parsable "$TMP/limit.sh"
wait_job "$(cut -d';' -f1 "$TMP/out")" 1500
contains "$TMP/limit.out" "gpurun-exit=124" "the allocation's time limit: gpurun exits 124"
contains "$TMP/limit.out" "gpurun: the allocation's time limit was reached (Slurm cancelled the step): every rank was stopped" \
    "... saying so"
d=$(ls -d "$TMP"/results/slurmlimit/*Z-*/ 2>/dev/null | tail -1)
[ -n "$d" ] && jq -e '.state == "timeout" and .exit_status == 124' "$d/record.json" >/dev/null
ok $? "... the record's state is timeout"

done_testing
