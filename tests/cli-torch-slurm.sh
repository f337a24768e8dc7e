#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# pytorch-ddp under srun, on the real one-node Slurm test cluster
# (tests/cluster/README.md): inside an sbatch job gpurun launches with srun,
# every rank gets torchrun's variables with the rendezvous the batch step
# chose, and examples/resnet-ddp trains with 2 DDP ranks (gloo, CPU).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

PY=/usr/bin/python3
if [ ! -x "$PY" ]; then
    echo "1..0 # SKIP $PY not found (Debian: python3)"
    exit 0
fi
slurm_cluster_up
unset GPURUN_TOPOLOGY

wait_job() {
    n=0
    while squeue -h -j "$1" 2>/dev/null | grep -q . && [ $n -lt 900 ]; do sleep 0.2; n=$((n + 1)); done
}

cat >"$TMP/envcheck.py" <<'PYEOF'
import os
names = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT"]
print("ENV " + " ".join("%s=%s" % (n, os.environ.get(n, "-")) for n in names), flush=True)
print("DDP images_per_s: 1\nDDP step_ms: 1\nDDP done", flush=True)
PYEOF
torch=no
"$PY" -c 'import torch, torchvision' >/dev/null 2>&1 && torch=yes
# gpurun's own rendezvous store needs torch where gpurun runs; without it
# the variables are checked with rank 0's (no rank here meets another).
rdv=store
[ $torch = yes ] || rdv=rank0
cat >"$TMP/envjob.conf" <<JOB
job = "torchenv"
template = "pytorch-ddp"
ranks_per_node = 2
gpus_per_rank = 0
threads_per_rank = 1
timeout = "2m"
params { python = "$PY"  script = "envcheck.py"  rendezvous = "$rdv" }
JOB
cat >"$TMP/batch.sh" <<SCRIPT
#!/bin/sh
#SBATCH --nodes=1
#SBATCH --ntasks=2
#SBATCH --output=$TMP/batch.out
"$GPURUN" run "$TMP/envjob.conf" --quiet
echo "env-exit=\$?"
if [ $torch = yes ]; then
    nice "$GPURUN" run "$top_srcdir/examples/resnet-ddp/job.conf" --quiet --results "$TMP/results" \
        --set gpus_per_rank=0 --set threads_per_rank=1 --set ranks_per_node=2 \
        --set 'params.args=--model resnet18 --image-size 16 --batch-size 4 --steps 2 --warmup 1'
    echo "ddp-exit=\$?"
fi
SCRIPT
run sbatch --parsable "$TMP/batch.sh"
expect_rc 0 "sbatch accepts a batch script running pytorch-ddp jobs"
wait_job "$(cut -d';' -f1 "$TMP/out")"
contains "$TMP/batch.out" "env-exit=0" "2 pytorch-ddp ranks under srun end well"
d=$(ls -d "$TMP"/results/torchenv/*Z-*/ 2>/dev/null | tail -1 | sed 's:/$::')
[ -n "$d" ] && [ "$(jq -r .launcher "$d/record.json")" = srun ]
ok $? "... launched by srun"
addr=$(jq -r .MASTER_ADDR "$d/env.json" 2>/dev/null)
port=$(jq -r .MASTER_PORT "$d/env.json" 2>/dev/null)
for i in 0 1; do
    line=$(rank_output "$d" "$i" 2>/dev/null | grep '^ENV ' | head -1)
    case "$line " in
        *" RANK=$i WORLD_SIZE=2 LOCAL_RANK=$i LOCAL_WORLD_SIZE=2 GROUP_RANK=0 MASTER_ADDR=$addr MASTER_PORT=$port "*)
            ok 0 "rank $i under srun: RANK=$i WORLD_SIZE=2 LOCAL_RANK=$i GROUP_RANK=0 MASTER_ADDR=$addr MASTER_PORT=$port" ;;
        *) ok 1 "rank $i under srun: torchrun's variables"; diag "$line" ;;
    esac
done
if [ $torch = yes ]; then
    contains "$TMP/batch.out" "ddp-exit=0" "examples/resnet-ddp with 2 DDP ranks under srun"
    rec=$(ls "$TMP"/results/resnet-ddp/*Z-*/record.json 2>/dev/null | tail -1)
    [ -n "$rec" ] && [ "$(jq -r .launcher "$rec")" = srun ] && [ "$(jq -r .foms.images_per_s.value "$rec")" != null ]
    ok $? "... launched by srun, images_per_s recorded ($(jq -r .foms.images_per_s.value "$rec" 2>/dev/null))"
else
    skip "$PY cannot import torch and torchvision (Debian: python3-torch python3-torchvision): no DDP run under srun"
fi
done_testing
