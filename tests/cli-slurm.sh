#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A real single-node Slurm cluster (munged, slurmctld, slurmd, MpiDefault=pmix)
# brought up for this test and torn down after it: gpurun inside sbatch uses
# srun with PMIx and binds every rank; gpurun submit submits and the job completes.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if [ ! -x "${HELLO:-}" ]; then
    echo "1..0 # SKIP examples/hello/hello not built (configure found no MPI)"
    exit 0
fi
slurm_cluster_up
unset GPURUN_TOPOLOGY
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# wait_job ID: until Slurm no longer lists the job (bounded)
wait_job() {
    n=0
    while squeue -h -j "$1" 2>/dev/null | grep -q . && [ $n -lt 600 ]; do sleep 0.2; n=$((n + 1)); done
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

done_testing
