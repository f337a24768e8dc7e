#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The pytorch-ddp template (issue 13 §1): torchrun's rank environment given by
# gpurun under the local and mpirun launchers (tests/cli-torch-slurm.sh: srun),
# shown by the dry run; examples/resnet-ddp trained with DDP (gloo, CPU) at 1
# and 2 ranks; a rendezvous that cannot happen (port taken, a rank that never
# comes) ends with an error naming the address and a non-zero exit.  The
# rendezvous (issue 26 §2): gpurun's own store holds its port from its bind
# to the end, so another user who squats the port in the window rank 0 had
# before cannot take it (two uids, real PyTorch); the file:// rendezvous in
# the run folder uses no port.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

unset GPURUN_TOPOLOGY
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
PY=/usr/bin/python3
if [ ! -x "$PY" ]; then
    echo "1..0 # SKIP $PY not found (Debian: python3)"
    exit 0
fi
EXAMPLE=$top_srcdir/examples/resnet-ddp
torch=no
"$PY" -c 'import torch, torchvision' >/dev/null 2>&1 && torch=yes
# gpurun's rendezvous store (the default) runs torch where gpurun runs:
# without torch the variables are checked with rank 0's (rank0).
RDV=store
[ $torch = yes ] || RDV=rank0

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
params { python = "$PY"  script = "$script"  rendezvous = "${RDV}" }
$4
JOB
}
last_run() { ls -d "$TMP"/results/"$1"/*Z-*/ | tail -1 | sed 's:/$::'; }

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
        *" RANK=$i WORLD_SIZE=2 LOCAL_RANK=$i LOCAL_WORLD_SIZE=2 GROUP_RANK=0 "*" MASTER_ADDR="*" MASTER_PORT=<store-port> "*" GPURUN_RENDEZVOUS_TIMEOUT=180 "*)
            ok 0 "dry run: rank $i shows RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT" ;;
        *) ok 1 "dry run: rank $i shows every torchrun variable"; diag "$line" ;;
    esac
done
contains "$TMP/out" "# rank environment: torchrun; rendezvous = $RDV at " "... and says where the rendezvous is"
run "$GPURUN" run "$TMP/dry.conf" --dry-run --set params.rendezvous=store
for v in TORCHELASTIC_USE_AGENT_STORE=True TORCHELASTIC_RESTART_COUNT=0 GPURUN_INIT_METHOD=env:// GPURUN_RENDEZVOUS=store; do
    grep "^rank 1:" "$TMP/out" | grep -q " $v "
    ok $? "rendezvous = store: every rank is a client of gpurun's store: $v"
done
contains "$TMP/out" "gpurun hosts torch's TCPStore on this host, holding its port until the ranks end" "... and the dry run says who holds the port"
run "$GPURUN" run "$TMP/dry.conf" --dry-run --set params.rendezvous=file
grep "^rank 0:" "$TMP/out" | grep -q " GPURUN_INIT_METHOD=file://$TMP/results/dry/<run-id>/rendezvous.store "
ok $? "rendezvous = file: GPURUN_INIT_METHOD names a file in the run folder"
! grep "^rank 0:" "$TMP/out" | grep -q -e "MASTER_PORT=" -e "MASTER_ADDR="
ok $? "... and no MASTER_ADDR or MASTER_PORT: no network port"
run "$GPURUN" run "$TMP/dry.conf" --dry-run --set params.rendezvous=rank0
grep "^rank 0:" "$TMP/out" | grep -q " MASTER_PORT=<free-port> " && ! grep -q TORCHELASTIC_USE_AGENT_STORE "$TMP/out"
ok $? "rendezvous = rank0: rank 0 hosts it on a port chosen at start (torchrun's standalone way)"
run "$GPURUN" run "$TMP/dry.conf" --dry-run --set params.rendezvous=tcp
expect_rc 2 "a rendezvous that is none of store, file, rank0 is a configuration error"
contains "$TMP/err" "--set params.rendezvous=tcp: key 'params.rendezvous': 'tcp' is not one of store" "... naming where it was set and the key"
run "$GPURUN" run "$TMP/dry.conf" --dry-run --set params.master_port=23456 --set params.rendezvous_timeout=7
grep "^rank 1:" "$TMP/out" | grep " MASTER_PORT=23456 " | grep -q " GPURUN_RENDEZVOUS_TIMEOUT=7\( \|$\)"
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
params { python = "$PY"  script = "envcheck.py" }
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

# rendezvous = file needs every host to see the run folder: 2 hosts
# (bench/sim-mpirun) with the results on this host's own file system are
# refused before anything starts.
fstype=$(stat -f -c %T "$TMP" 2>/dev/null)
case "$fstype" in
    ext2/ext3 | ext4 | xfs | btrfs | tmpfs | overlayfs | zfs)
        mkdir -p "$TMP/simbin"
        ln -sf "$(cd "$top_srcdir" && pwd)/bench/sim-mpirun" "$TMP/simbin/mpirun"
        envjob file2 mpirun 1 'nodes = 2
bind = "none"'
        run env PATH="$TMP/simbin:$PATH" "$GPURUN" run "$TMP/file2.conf" --set params.rendezvous=file
        expect_rc 3 "rendezvous = file on 2 hosts with the run folder on $fstype is refused (exit 3)"
        contains "$TMP/err" "is on $(echo "$fstype" | sed 's:ext2/ext3:ext4:'), a file system of this host only, so ranks on the other 1 host cannot meet there" "... saying why"
        ;;
    *) skip "the test folder is on $fstype: no local-file-system refusal to show" ;;
esac

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
    rec=$(grep -l "\"ranks\": $n," "$TMP"/results/resnet-ddp/*Z-*/record.json | head -1)
    v=$(jq -r '.foms.images_per_s.value' "$rec" 2>/dev/null)
    [ -n "$rec" ] && [ "$(jq -r .state "$rec")" = ok ] && awk -v v="$v" 'BEGIN { exit !(v > 0) }'
    ok $? "$n rank(s): state ok, images_per_s = $v recorded"
done
d=$(ls -d "$TMP"/results/resnet-ddp/*Z-*/ | tail -1)
contains "$d/$(ls "$d" | grep -v -e launcher.out -e '^rank' | grep '\.out$' | head -1)" "backend=gloo device=cpu" "... DDP over gloo on the CPUs"

if command -v mpirun >/dev/null 2>&1; then
    run nice "$GPURUN" run "$EXAMPLE/job.conf" --quiet --results "$TMP/mpiresults" --set launcher=mpirun \
        --set gpus_per_rank=0 --set threads_per_rank=1 --set "$small" --set ranks_per_node=2
    rec=$(ls "$TMP"/mpiresults/resnet-ddp/*Z-*/record.json 2>/dev/null | tail -1)
    [ "$rc" -eq 0 ] && [ "$(jq -r .launcher "$rec")" = mpirun ] && [ "$(jq -r .foms.images_per_s.value "$rec")" != null ]
    ok $? "2 DDP ranks under mpirun train and record images_per_s"
fi

# A fixed port taken: gpurun's store cannot bind it, so nothing starts
# (exit 3, naming the port); with rendezvous = rank0, rank 0 cannot host the
# rendezvous and its error names the address.
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
expect_rc 3 "rendezvous = store on a port taken: nothing starts (exit 3)"
contains "$TMP/err" "TCPStore on port $taken) could not start:" "... naming the port"
contains "$TMP/err" "Address already in use" "... and why"
run nice "$GPURUN" run "$EXAMPLE/job.conf" --quiet --results "$TMP/taken0" --set launcher=local --set gpus_per_rank=0 \
    --set threads_per_rank=1 --set "$small" --set ranks_per_node=1 --set params.master_port="$taken" \
    --set params.rendezvous_timeout=5 --set timeout=5m --set params.rendezvous=rank0
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]
ok $? "rendezvous = rank0 on a port taken fails with a non-zero exit of the rank's own, not the time limit (exit $rc)"
d=$(ls -d "$TMP"/taken0/resnet-ddp/*Z-*/ | tail -1)
cat "$d"/*.out >"$TMP/taken.out" 2>/dev/null
contains "$TMP/taken.out" ":$taken (gloo) failed" "... and the rank's error names the address and port"
contains "$TMP/taken.out" "Address already in use" "... and why"
kill "$holder" 2>/dev/null

# Another user squats the rendezvous port between gpurun's start and rank
# 0's rendezvous (issue 26 §2: a user who watches ps and listens on every
# free port).  The test plays that user exactly: rank 0, before it meets
# the others, tells uid 65534 the port (a FIFO), and waits until that user
# has tried to listen there.  gpurun's store holds the port from its own
# bind, so the squatter cannot have it and the job trains; with rank 0
# hosting the store (rendezvous = rank0, torchrun's way) the squatter takes
# it and the job fails.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
    SQ=$TMP/squat
    chmod 755 "$TMP" && mkdir -p "$SQ/victim" && chmod 1777 "$SQ"
    cat >"$SQ/squatter.py" <<'PYEOF'
import errno, os, select, socket, sys, time
fifo, report = sys.argv[1], sys.argv[2]
signal_deadline = time.time() + 300
with open(fifo) as f:                      # rank 0 says its port
    port = int(f.readline())
held, why = [], []
for family, addr in ((socket.AF_INET6, "::"), (socket.AF_INET, "0.0.0.0")):
    for opt in (None, socket.SO_REUSEADDR, socket.SO_REUSEPORT):
        s = socket.socket(family, socket.SOCK_STREAM)
        if opt is not None:
            s.setsockopt(socket.SOL_SOCKET, opt, 1)
        try:
            s.bind((addr, port)); s.listen(64); held.append(s); break
        except OSError as e:
            why.append("%s:%d %s" % (addr, port, errno.errorcode.get(e.errno, e.errno))); s.close()
with open(report + ".tmp", "w") as r:
    r.write("took %d\n" % port if held else "refused %d %s\n" % (port, "; ".join(why)))
os.rename(report + ".tmp", report)
# While the victim's job runs: whoever connects here talks to the squatter.
end = time.time() + 20
while held and time.time() < end:
    ready, _, _ = select.select(held, [], [], 0.5)
    for s in ready:
        c, peer = s.accept()
        c.settimeout(2)
        try:
            data = c.recv(64)
        except OSError:
            data = b""
        with open(report, "a") as r:
            r.write("connected from %s, %d bytes\n" % (peer[0], len(data)))
        c.close()
PYEOF
    cat >"$SQ/victim/ddp.py" <<'PYEOF'
import datetime, os, sys, time
import torch, torch.distributed as dist
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
if rank == 0:  # the window: the squatter acts now, before the rendezvous
    with open(os.environ["SQUAT_FIFO"], "w") as f:
        f.write(os.environ["MASTER_PORT"] + "\n")
    report = os.environ["SQUAT_REPORT"]
    for _ in range(600):
        if os.path.exists(report):
            break
        time.sleep(0.1)
dist.init_process_group("gloo", init_method=os.environ.get("GPURUN_INIT_METHOD", "env://"), rank=rank, world_size=world,
                        timeout=datetime.timedelta(seconds=20))
t = torch.ones(4) * (rank + 1)
dist.all_reduce(t)
print("allreduce %g" % t[0].item(), flush=True)
if rank == 0:
    print("DDP images_per_s: 1\nDDP step_ms: 1\nDDP done", flush=True)
PYEOF
    cat >"$SQ/victim/job.conf" <<JOB
template = "pytorch-ddp"
launcher = "local"
ranks_per_node = 2
gpus_per_rank = 0
threads_per_rank = 1
timeout = "3m"
results = "$SQ/victim/results"
params { python = "$PY"  script = "ddp.py" }
env { SQUAT_FIFO = "$SQ/port.fifo"  SQUAT_REPORT = "$SQ/report" }
JOB
    chown -R 65533:65533 "$SQ/victim"
    squat_run() { # squat_run MODE: the victim (uid 65533) runs the job while uid 65534 squats
        rm -f "$SQ/port.fifo" "$SQ/report"
        mkfifo -m 666 "$SQ/port.fifo"
        setpriv --reuid=65534 --regid=65534 --clear-groups timeout 300 "$PY" "$SQ/squatter.py" "$SQ/port.fifo" \
            "$SQ/report" 2>"$SQ/squatter.err" &
        squatter=$!
        run setpriv --reuid=65533 --regid=65533 --clear-groups env HOME="$SQ/victim" \
            "$GPURUN" run "$SQ/victim/job.conf" --set params.rendezvous="$1"
        kill "$squatter" 2>/dev/null
        wait "$squatter" 2>/dev/null
    }
    if [ $torch = yes ]; then
        squat_run store
        expect_rc 0 "rendezvous = store: uid 65533's 2 DDP ranks train while uid 65534 squats the port"
        grep -q "^refused " "$SQ/report"
        ok $? "... the squatter could not listen on the store's port ($(head -1 "$SQ/report" 2>/dev/null))"
        ! grep -q "^connected" "$SQ/report"
        ok $? "... and no rank talked to the squatter"
        d=$(ls -d "$SQ"/victim/results/job/*Z-*/ | tail -1)
        [ "$(jq -r .rendezvous.mode "$d/record.json")" = store ] &&
            [ "$(jq -r .rendezvous.port "$d/record.json")" = "$(head -1 "$SQ/report" | cut -d' ' -f2)" ]
        ok $? "... the record says the rendezvous was gpurun's store, on that port"
        ! pgrep -u 65533 -f GPURUN_STORE_PORT >/dev/null
        ok $? "... and the store is gone with the job"
        # The old way, to show the squatter is real: rank 0 hosts the store.
        squat_run rank0
        [ "$rc" -ne 0 ]
        ok $? "rendezvous = rank0: the squatter takes the port and the job fails (exit $rc)"
        grep -q "^took " "$SQ/report"
        ok $? "... the squatter listened on the port rank 0 was to bind ($(head -1 "$SQ/report" 2>/dev/null))"
    else
        skip "$PY cannot import torch: no squatted rendezvous with real PyTorch"
    fi
else
    skip "not root or no setpriv: no second user to squat the rendezvous port"
fi

# No port at all: torch's FileStore in the private run folder, named by
# GPURUN_INIT_METHOD; the ranks get no MASTER_ADDR or MASTER_PORT.
cat >"$TMP/filerdv.py" <<'PYEOF'
import datetime, os
import torch, torch.distributed as dist
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
print("METHOD %s MASTER_PORT=%s" % (os.environ.get("GPURUN_INIT_METHOD"), os.environ.get("MASTER_PORT", "-")), flush=True)
dist.init_process_group("gloo", init_method=os.environ["GPURUN_INIT_METHOD"], rank=rank, world_size=world,
                        timeout=datetime.timedelta(seconds=60))
t = torch.ones(2) * (rank + 1)
dist.all_reduce(t)
print("allreduce %g" % t[0].item(), flush=True)
if rank == 0:
    print("DDP images_per_s: 1\nDDP step_ms: 1\nDDP done", flush=True)
PYEOF
script=filerdv.py
envjob filerdv local 2
run nice "$GPURUN" run "$TMP/filerdv.conf" --quiet --set params.rendezvous=file
expect_rc 0 "rendezvous = file: 2 DDP ranks meet through a file, no network port"
d=$(last_run filerdv)
[ "$(cat "$d"/*.out | grep -c "METHOD file://$d/rendezvous.store MASTER_PORT=-")" -eq 2 ]
ok $? "... each rank was given file://RUN_DIR/rendezvous.store and no MASTER_PORT"
[ "$(cat "$d"/*.out | grep -c "allreduce 3")" -eq 2 ]
ok $? "... and their all-reduce summed both ranks"
[ "$(jq -r .rendezvous.mode "$d/record.json")" = file ] && [ "$(jq -r '.rendezvous.port // "none"' "$d/record.json")" = none ]
ok $? "... the record says rendezvous file, with no port"

# A rank that never comes: the job says 2 ranks to torch but starts one.
run nice "$GPURUN" run "$EXAMPLE/job.conf" --quiet --results "$TMP/never" --set launcher=local --set gpus_per_rank=0 \
    --set threads_per_rank=1 --set "$small" --set ranks_per_node=1 --set env.WORLD_SIZE=2 \
    --set params.rendezvous_timeout=2 --set timeout=5m
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]
ok $? "a rendezvous waiting for a rank that never comes ends within its bound, non-zero (exit $rc)"
contains "$TMP/err" "rank 0 on" "... gpurun names the rank that failed"
d=$(ls -d "$TMP"/never/resnet-ddp/*Z-*/ | tail -1)
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
printf 'description = "env"\ncommand = "sh -c \x27echo TR RANK=$RANK LOCAL_RANK=$LOCAL_RANK GROUP_RANK=$GROUP_RANK WORLD_SIZE=$WORLD_SIZE LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE\x27"\nrank_env = "torchrun"\ndefaults { python = "%s"  rendezvous = "%s" }\n' \
    "$PY" "$RDV" >"$TMP/simtpl/trenv.conf"
printf 'template = "trenv"\nlauncher = "mpirun"\nnodes = 3\nranks_per_node = 2\nthreads_per_rank = 1\nbind = "none"\noversubscribe = true\nresults = "%s"\n' \
    "$TMP/results" >"$TMP/simtpl/trenv-job.conf"
run env PATH="$TMP/simbin:$PATH" GPURUN_TEMPLATE_PATH="$TMP/simtpl" "$GPURUN" run "$TMP/simtpl/trenv-job.conf" --quiet
expect_rc 0 "torchrun's variables on 3 simulated hosts x 2 ranks (mpirun)"
d=$(ls -d "$TMP"/results/trenv-job/*Z-*/ | tail -1)
cat "$d"/*.out | sed -n 's/^[0-9]*: TR //p' | sort >"$TMP/trenv.got"
for r in 0 1 2 3 4 5; do
    echo "RANK=$r LOCAL_RANK=$((r % 2)) GROUP_RANK=$((r / 2)) WORLD_SIZE=6 LOCAL_WORLD_SIZE=2"
done | sort >"$TMP/trenv.want"
cmp -s "$TMP/trenv.got" "$TMP/trenv.want"
ok $? "... every rank, on every host, has its own RANK, LOCAL_RANK and GROUP_RANK"
[ -s "$TMP/trenv.got" ] || cat "$d"/*.out >&2
diff "$TMP/trenv.want" "$TMP/trenv.got" >&2 || :

done_testing
