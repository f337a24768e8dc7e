#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The pytorch-ddp template (issue 13 §1): torchrun's rank environment given by
# gpurun under the local and mpirun launchers (tests/cli-torch-slurm.sh: srun),
# shown by the dry run; examples/resnet-ddp trained with DDP (gloo, CPU) at 1
# and 2 ranks; a rendezvous that cannot happen (port taken, a rank that never
# comes) ends with an error naming the address and a non-zero exit.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

unset GPURUN_TOPOLOGY
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
PY=/usr/bin/python3
if [ ! -x "$PY" ]; then
    echo "1..0 # SKIP $PY not found (Debian: python3)"
    exit 0
fi
EXAMPLE=$top_srcdir/examples/resnet-ddp

# A stand-in for a training script: prints the variables it got and the
# lines the template reads.
cat >"$TMP/envcheck.py" <<'PYEOF'
import os
names = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
         "GPURUN_RENDEZVOUS_TIMEOUT", "GPURUN_RANK"]
print("ENV " + " ".join("%s=%s" % (n, os.environ.get(n, "-")) for n in names), flush=True)
print("DDP images_per_s: 1\nDDP step_ms: 1\nDDP done", flush=True)
PYEOF

# envjob NAME LAUNCHER RANKS [EXTRA LINES]: a pytorch-ddp job running $script
script=envcheck.py
envjob() {
    cat >"$TMP/$1.conf" <<JOB
template = "pytorch-ddp"
launcher = "$2"
ranks_per_node = $3
gpus_per_rank = 0
threads_per_rank = 1
timeout = "2m"
params { python = "$PY"  script = "$script" }
$4
JOB
}
last_run() { ls -d "$TMP"/results/"$1"/*/ | tail -1 | sed 's:/$::'; }

# check_env RUN_DIR RANKS: each rank got torchrun's variables, the same
# rendezvous as env.json says.
check_env() {
    addr=$(jq -r .MASTER_ADDR "$1/env.json")
    port=$(jq -r .MASTER_PORT "$1/env.json")
    case "$port" in '' | *[!0-9]*) ok 1 "env.json holds a numeric MASTER_PORT (got '$port')" ;;
        *) ok 0 "env.json holds the rendezvous: $addr:$port" ;; esac
    [ "$(jq -r .WORLD_SIZE "$1/env.json")" = "$2" ]
    ok $? "env.json holds WORLD_SIZE=$2, for hosts that plan their own ranks"
    i=0
    while [ "$i" -lt "$2" ]; do
        line=$(rank_output "$1" "$i" | grep '^ENV ' | head -1)
        case "$line " in
            *" RANK=$i WORLD_SIZE=$2 LOCAL_RANK=$i LOCAL_WORLD_SIZE=$2 GROUP_RANK=0 MASTER_ADDR=$addr MASTER_PORT=$port GPURUN_RENDEZVOUS_TIMEOUT=180 GPURUN_RANK=$i "*)
                ok 0 "rank $i: RANK=$i WORLD_SIZE=$2 LOCAL_RANK=$i LOCAL_WORLD_SIZE=$2 GROUP_RANK=0 MASTER_ADDR=$addr MASTER_PORT=$port" ;;
            *) ok 1 "rank $i: torchrun's variables"; diag "$line" ;;
        esac
        i=$((i + 1))
    done
}

run "$GPURUN" templates
contains "$TMP/out" "pytorch-ddp" "gpurun templates lists pytorch-ddp"

# The dry run: every torchrun variable per rank, the port chosen at start.
envjob dry local 2
run "$GPURUN" run "$TMP/dry.conf" --dry-run
expect_rc 0 "a dry run of a 2-rank pytorch-ddp job"
for i in 0 1; do
    line=$(grep "^rank $i:" "$TMP/out")
    case "$line " in
        *" RANK=$i WORLD_SIZE=2 LOCAL_RANK=$i LOCAL_WORLD_SIZE=2 GROUP_RANK=0 "*" MASTER_ADDR="*" MASTER_PORT=<free-port> GPURUN_RENDEZVOUS_TIMEOUT=180 "*)
            ok 0 "dry run: rank $i shows RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT" ;;
        *) ok 1 "dry run: rank $i shows every torchrun variable"; diag "$line" ;;
    esac
done
contains "$TMP/out" "# rank environment: torchrun; rendezvous at " "... and says where the rendezvous is"
run "$GPURUN" run "$TMP/dry.conf" --dry-run --set params.master_port=23456 --set params.rendezvous_timeout=7
grep "^rank 1:" "$TMP/out" | grep -q " MASTER_PORT=23456 GPURUN_RENDEZVOUS_TIMEOUT=7"
ok $? "params.master_port and params.rendezvous_timeout set the job's own port and bound"
run "$GPURUN" run "$TMP/dry.conf" --dry-run --set params.master_port=70000
expect_rc 2 "a master_port that is no TCP port is a configuration error"
contains "$TMP/err" "--set params.master_port=70000: key 'params.master_port': '70000' is not a TCP port" "... naming where it was set and the key"
run "$GPURUN" run "$TMP/dry.conf" --dry-run --set params.rendezvous_timeout=soon
expect_rc 2 "a rendezvous_timeout that is no number of seconds is a configuration error"
contains "$TMP/err" "key 'params.rendezvous_timeout': 'soon' is not a number of seconds" "... naming the key"
# The job's own env{} wins over what gpurun computed.
envjob own local 1 'env { MASTER_ADDR = "10.9.8.7" }'
run "$GPURUN" run "$TMP/own.conf" --dry-run
grep "^rank 0:" "$TMP/out" | grep -q " MASTER_ADDR=10.9.8.7"
ok $? "the job's env { MASTER_ADDR = ... } wins"

# The NCCL variables of the plan beside them: each rank's HCA and its
# interface, GPUDirect's level; on 2 nodes GROUP_RANK is the node's index.
cat >"$TMP/gpus.conf" <<JOB
template = "pytorch-ddp"
nodes = 2
ranks_per_node = 2
gpus_per_rank = 1
launcher = "mpirun"
params { python = "$PY" }
JOB
if command -v mpirun >/dev/null 2>&1; then
    run env GPURUN_TOPOLOGY="$FIXTURES/2s-4gpu-2nic.xml" "$GPURUN" run "$TMP/gpus.conf" --dry-run
    expect_rc 0 "a dry run of 2 nodes x 2 GPU ranks on a topology with a NIC per package"
    for i in 0 1 2 3; do
        l=$((i % 2)); g=$((i / 2))
        line=$(grep "^rank $i:" "$TMP/out")
        case "$line " in
            *" NCCL_IB_HCA==mlx5_$l:1 "*" NCCL_NET_GDR_LEVEL="*" RANK=$i WORLD_SIZE=4 LOCAL_RANK=$l LOCAL_WORLD_SIZE=2 GROUP_RANK=$g GROUP_WORLD_SIZE=2 "*" NCCL_SOCKET_IFNAME=ib$l "*)
                ok 0 "rank $i: NCCL_IB_HCA=mlx5_$l, NCCL_SOCKET_IFNAME=ib$l, NCCL_NET_GDR_LEVEL, RANK=$i LOCAL_RANK=$l GROUP_RANK=$g" ;;
            *) ok 1 "rank $i: the NCCL variables and torchrun's"; diag "$line" ;;
        esac
    done
else
    skip "mpirun not found (Debian: openmpi-bin): no 2-node dry run"
fi

# A template's rank_env must be one gpurun knows.
mkdir "$TMP/tpl"
printf 'description = "x"\ncommand = "true"\nrank_env = "torchrn"\n' >"$TMP/tpl/badenv.conf"
printf 'template = "badenv"\n' >"$TMP/tpl/job.conf"
run "$GPURUN" run "$TMP/tpl/job.conf" --dry-run
expect_rc 2 "rank_env = \"torchrn\" in a template is refused"
contains "$TMP/err" "badenv.conf:3: key 'rank_env': 'torchrn' is not one of torchrun (did you mean 'torchrun'?)" "... with its file, line and the nearest value"

# Under the local launcher and mpirun, each rank really gets them.
envjob envlocal local 2
run "$GPURUN" run "$TMP/envlocal.conf" --quiet
expect_rc 0 "2 ranks of pytorch-ddp under the local launcher"
check_env "$(last_run envlocal)" 2
if command -v mpirun >/dev/null 2>&1; then
    envjob envmpi mpirun 2
    run "$GPURUN" run "$TMP/envmpi.conf" --quiet
    expect_rc 0 "2 ranks of pytorch-ddp under mpirun"
    check_env "$(last_run envmpi)" 2
else
    skip "mpirun not found (Debian: openmpi-bin): no pytorch-ddp run under mpirun"
fi

if ! why=$("$PY" -c 'import torch, torchvision' 2>&1); then
    skip "$PY cannot import torch and torchvision (Debian: python3-torch python3-torchvision): $(printf '%s' "$why" | tail -1)"
    done_testing
    exit
fi

# The example, small: resnet18 on 16x16 images, 2 steps, at 1 and 2 ranks
# (its scan), on CPUs (gloo).
small='params.args=--model resnet18 --image-size 16 --batch-size 4 --steps 2 --warmup 1'
run nice "$GPURUN" run "$EXAMPLE/job.conf" --quiet --results "$TMP/results" --set launcher=local \
    --set gpus_per_rank=0 --set threads_per_rank=1 --set "$small"
expect_rc 0 "examples/resnet-ddp/job.conf at 1 and 2 ranks on CPU"
for n in 1 2; do
    rec=$(grep -l "\"ranks\": $n," "$TMP"/results/resnet-ddp/*/record.json | head -1)
    v=$(jq -r '.foms.images_per_s.value' "$rec" 2>/dev/null)
    [ -n "$rec" ] && [ "$(jq -r .state "$rec")" = ok ] && awk -v v="$v" 'BEGIN { exit !(v > 0) }'
    ok $? "$n rank(s): state ok, images_per_s = $v recorded"
done
d=$(ls -d "$TMP"/results/resnet-ddp/*/ | tail -1)
contains "$d/$(ls "$d" | grep -v -e launcher.out -e '^rank' | grep '\.out$' | head -1)" "backend=gloo device=cpu" "... DDP over gloo on the CPUs"

if command -v mpirun >/dev/null 2>&1; then
    run nice "$GPURUN" run "$EXAMPLE/job.conf" --quiet --results "$TMP/mpiresults" --set launcher=mpirun \
        --set gpus_per_rank=0 --set threads_per_rank=1 --set "$small" --set ranks_per_node=2
    rec=$(ls "$TMP"/mpiresults/resnet-ddp/*/record.json 2>/dev/null | tail -1)
    [ "$rc" -eq 0 ] && [ "$(jq -r .launcher "$rec")" = mpirun ] && [ "$(jq -r .foms.images_per_s.value "$rec")" != null ]
    ok $? "2 DDP ranks under mpirun train and record images_per_s"
fi

# The port taken: rank 0 cannot host the rendezvous; the error names it.
"$PY" -c '
import socket, time
s = socket.socket(); s.bind(("", 0)); s.listen()
print(s.getsockname()[1], flush=True)
time.sleep(600)' >"$TMP/port" 2>/dev/null &
holder=$!
trap 'kill "$holder" 2>/dev/null; rm -rf "$TMP"' EXIT INT TERM
n=0
while [ ! -s "$TMP/port" ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
taken=$(cat "$TMP/port")
run nice "$GPURUN" run "$EXAMPLE/job.conf" --quiet --results "$TMP/taken" --set launcher=local --set gpus_per_rank=0 \
    --set threads_per_rank=1 --set "$small" --set ranks_per_node=1 --set params.master_port="$taken" \
    --set params.rendezvous_timeout=5 --set timeout=5m
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]
ok $? "a rendezvous on a port taken fails with a non-zero exit of the rank's own, not the time limit (exit $rc)"
d=$(ls -d "$TMP"/taken/resnet-ddp/*/ | tail -1)
cat "$d"/*.out >"$TMP/taken.out" 2>/dev/null
contains "$TMP/taken.out" ":$taken (gloo) failed" "... and the rank's error names the address and port"
contains "$TMP/taken.out" "Address already in use" "... and why"
kill "$holder" 2>/dev/null

# A rank that never comes: the job says 2 ranks to torch but starts one.
run nice "$GPURUN" run "$EXAMPLE/job.conf" --quiet --results "$TMP/never" --set launcher=local --set gpus_per_rank=0 \
    --set threads_per_rank=1 --set "$small" --set ranks_per_node=1 --set env.WORLD_SIZE=2 \
    --set params.rendezvous_timeout=2 --set timeout=5m
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]
ok $? "a rendezvous waiting for a rank that never comes ends within its bound, non-zero (exit $rc)"
contains "$TMP/err" "rank 0 on" "... gpurun names the rank that failed"
d=$(ls -d "$TMP"/never/resnet-ddp/*/ | tail -1)
cat "$d"/*.out >"$TMP/never.out" 2>/dev/null
port=$(jq -r .MASTER_PORT "$d/env.json")
addr=$(jq -r .MASTER_ADDR "$d/env.json")
contains "$TMP/never.out" "rank 0 of 2: rendezvous at $addr:$port (gloo) failed" "... and the rank's error names MASTER_ADDR:MASTER_PORT"
contains "$TMP/never.out" "(bound 2 s, GPURUN_RENDEZVOUS_TIMEOUT)" "... and the bound"

# A rank that dies after the rendezvous takes the job down, as any rank
# does: rank 0, waiting in an all-reduce for it, is stopped.
cat >"$TMP/dies.py" <<'PYEOF'
import os, sys, datetime
import torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=300))
if dist.get_rank() == 1:
    os._exit(5)
dist.all_reduce(torch.ones(4))
dist.barrier()
print("DDP images_per_s: 1\nDDP step_ms: 1\nDDP done", flush=True)
PYEOF
script=dies.py
envjob dies local 2
run nice "$GPURUN" run "$TMP/dies.conf" --quiet
expect_rc 5 "a DDP rank exiting 5 after the rendezvous ends the job with its status"
contains "$TMP/err" "rank 1 on" "... naming rank 1"

# Hosts other than gpurun's plan their own ranks (bench/sim-mpirun plays 3
# hosts x 2 ranks here): their ranks get torchrun's values for their place
# in the job, not those of a host's own plan numbered from 0.
mkdir -p "$TMP/simbin" "$TMP/simtpl"
ln -sf "$(cd "$top_srcdir" && pwd)/bench/sim-mpirun" "$TMP/simbin/mpirun"
printf 'description = "env"\ncommand = "sh -c \x27echo TR RANK=$RANK LOCAL_RANK=$LOCAL_RANK GROUP_RANK=$GROUP_RANK WORLD_SIZE=$WORLD_SIZE LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE\x27"\nrank_env = "torchrun"\n' \
    >"$TMP/simtpl/trenv.conf"
printf 'template = "trenv"\nlauncher = "mpirun"\nnodes = 3\nranks_per_node = 2\nthreads_per_rank = 1\nbind = "none"\noversubscribe = true\nresults = "%s"\n' \
    "$TMP/results" >"$TMP/simtpl/trenv-job.conf"
run env PATH="$TMP/simbin:$PATH" GPURUN_TEMPLATE_PATH="$TMP/simtpl" "$GPURUN" run "$TMP/simtpl/trenv-job.conf" --quiet
expect_rc 0 "torchrun's variables on 3 simulated hosts x 2 ranks (mpirun)"
d=$(ls -d "$TMP"/results/trenv-job/*/ | tail -1)
cat "$d"/*.out | sed -n 's/^[0-9]*: TR //p' | sort >"$TMP/trenv.got"
for r in 0 1 2 3 4 5; do
    echo "RANK=$r LOCAL_RANK=$((r % 2)) GROUP_RANK=$((r / 2)) WORLD_SIZE=6 LOCAL_WORLD_SIZE=2"
done | sort >"$TMP/trenv.want"
cmp -s "$TMP/trenv.got" "$TMP/trenv.want"
ok $? "... every rank, on every host, has its own RANK, LOCAL_RANK and GROUP_RANK"
[ -s "$TMP/trenv.got" ] || cat "$d"/*.out >&2
diff "$TMP/trenv.want" "$TMP/trenv.got" >&2 || :

done_testing
