#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# CUDA MPS for ranks that share a GPU (ranks_per_gpu > 1), with a fake
# nvidia-cuda-mps-control on PATH that records what it is asked (`-d`,
# "quit" on stdin) and whose "daemon" is a real process: after a normal end,
# a failed rank, a timeout, SIGTERM, SIGINT and SIGKILL to gpurun the daemon
# was quit and no process of it is left, under the local launcher and
# mpirun (also SIGKILL of a rank step), and on two hosts played by
# bench/sim-mpirun, each host planning itself, one daemon per host; its folders are private (0700); a
# daemon the user already runs is used, not replaced; mps = "on" where it
# cannot be done is exit 3, "auto" runs with a note.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

export GPURUN_KILL_GRACE=1
export GPURUN_TOPOLOGY="$FIXTURES/2s-4gpu-2nic.xml" # 4 NVIDIA GPUs, 16 cores
# No daemon of the user's where gpurun looks first (it would be used).
export CUDA_MPS_PIPE_DIRECTORY="$TMP/no-daemon-here"
unset CUDA_MPS_LOG_DIRECTORY

mark=gpurun-mpsd-$$
mkdir -p "$TMP/bin"
cp "$(command -v sleep)" "$TMP/bin/$mark"
cat >"$TMP/bin/nvidia-cuda-mps-control" <<FAKE
#!/bin/sh
log="$TMP/mps.log"
if [ "\$1" = "-d" ]; then
    echo "start pipe=\$CUDA_MPS_PIPE_DIRECTORY log=\$CUDA_MPS_LOG_DIRECTORY modes=\$(stat -c %a "\$CUDA_MPS_PIPE_DIRECTORY")/\$(stat -c %a "\$CUDA_MPS_LOG_DIRECTORY")" >>"\$log"
    "$TMP/bin/$mark" 300 </dev/null >/dev/null 2>&1 &
    echo \$! >"\$CUDA_MPS_PIPE_DIRECTORY/daemon.pid"
    : >"\$CUDA_MPS_PIPE_DIRECTORY/control"
    # FAKE_MPS_HOLD=FILE: return only once FILE exists (a slow start)
    n=0
    while [ -n "\${FAKE_MPS_HOLD:-}" ] && [ ! -e "\$FAKE_MPS_HOLD" ] && [ \$n -lt 600 ]; do sleep 0.1; n=\$((n + 1)); done
    exit 0
fi
read -r cmd
echo "cmd=\$cmd pipe=\$CUDA_MPS_PIPE_DIRECTORY" >>"\$log"
if [ "\$cmd" = quit ]; then
    kill "\$(cat "\$CUDA_MPS_PIPE_DIRECTORY/daemon.pid")"
    rm -f "\$CUDA_MPS_PIPE_DIRECTORY/daemon.pid" "\$CUDA_MPS_PIPE_DIRECTORY/control"
fi
FAKE
chmod 755 "$TMP/bin/nvidia-cuda-mps-control"
PATH_WITH="$TMP/bin:$PATH"
PATH_WITHOUT="$PATH"

cat >"$TMP/rank.sh" <<'RANK'
echo "rank=$GPURUN_RANK cvd=$CUDA_VISIBLE_DEVICES pipe=$CUDA_MPS_PIPE_DIRECTORY logdir=$CUDA_MPS_LOG_DIRECTORY step=$PPID"
case $MODE in
fail) [ "$GPURUN_RANK" = 1 ] && exit 7; sleep 30 ;;
hang) sleep 60 ;;
hold) n=0; while [ ! -e "$RELEASE" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done ;;
esac
exit 0
RANK

job() { # job MODE [EXTRA LINES]; $LAUNCHER (local) and $NODES (1)
    cat >"$TMP/m.conf" <<JOB
command = "/bin/sh \${script}"
launcher = "${LAUNCHER:-local}"
nodes = ${NODES:-1}
ranks_per_node = 2
ranks_per_gpu = 2
threads_per_rank = 1
params { script = "$TMP/rank.sh" }
env { MODE = "$1"  RELEASE = "$TMP/release" }
$2
JOB
}

# A fake daemon, or a guard's socket, still there.
leftovers() { echo $(($(pgrep -f "$mark" | wc -l) + $(find "$TMP/results" -name gpurun-guard 2>/dev/null | wc -l))); }
# wait_gone: true once no fake daemon and no guard is left (60 s at most:
# only a failing run waits that long).
wait_gone() {
    n=0
    while [ "$(leftovers)" -gt 0 ] && [ "$n" -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
    [ "$(leftovers)" -eq 0 ]
}
last_run() { ls -d "$TMP/results/m"/*Z-*/ 2>/dev/null | tail -1 | sed 's,/$,,'; }
wait_running() { # [RANKS]
    n=0
    while [ "$(ranks_started "$TMP/results/m/*")" -lt "${1:-2}" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
}

# check_stopped WHAT: the log shows one start and one quit, of the same
# private pipe folder inside this run's folder, and no daemon is left.
check_stopped() {
    d=$(last_run)
    wait_gone # after a SIGKILL of gpurun, the guard quits the daemon on its own time
    gone=$?
    [ "$(grep -c '^start ' "$TMP/mps.log")" = 1 ]
    ok $? "$1: one daemon started"
    contains "$TMP/mps.log" "start pipe=$d/mps." "$1: ... with its pipe folder in the run folder"
    contains "$TMP/mps.log" "modes=700/700" "$1: ... pipe and log folders mode 0700"
    pipe=$(sed -n 's/^start pipe=\([^ ]*\) .*/\1/p' "$TMP/mps.log")
    contains "$TMP/mps.log" "cmd=quit pipe=$pipe" "$1: ... and quit on the same pipe folder"
    ok $gone "$1: no daemon nor guard left"
}

# Normal end: the ranks see the same GPU and the daemon's folders.
job ok
rm -f "$TMP/mps.log"
run env PATH="$PATH_WITH" "$GPURUN" run "$TMP/m.conf" --quiet --results "$TMP/results"
expect_rc 0 "normal end: exit 0"
check_stopped "normal end"
d=$(last_run)
rank_output "$d" 0 >"$TMP/r0"
rank_output "$d" 1 >"$TMP/r1"
contains "$TMP/r0" "cvd=0 pipe=$pipe logdir=$d/mps." "rank 0: GPU 0, pointed at the daemon"
contains "$TMP/r1" "cvd=0 pipe=$pipe logdir=$d/mps." "rank 1: the same GPU and daemon"
[ "$(jq -r '.mps.started and .mps.stopped' "$d/record.json")" = true ]
ok $? "the record says the daemon was started and stopped"
[ "$(jq -c '.plan.ranks[1].gpu_ranks' "$d/record.json")" = "[0,1]" ]
ok $? "the record's plan says ranks 0 and 1 share a GPU"

job fail
rm -f "$TMP/mps.log"
run timeout 60 env PATH="$PATH_WITH" "$GPURUN" run "$TMP/m.conf" --quiet --results "$TMP/results"
expect_rc 7 "a failed rank: its exit status"
check_stopped "failed rank"

job hang 'timeout = "2s"'
rm -f "$TMP/mps.log"
run timeout -s KILL 60 env PATH="$PATH_WITH" "$GPURUN" run "$TMP/m.conf" --quiet --results "$TMP/results"
expect_rc 124 "timeout: 124"
check_stopped "timeout"

for sig in TERM INT; do
    job hang
    rm -rf "$TMP/mps.log" "$TMP/results"
    PATH="$PATH_WITH" "$GPURUN" run "$TMP/m.conf" --quiet --results "$TMP/results" >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    wait_running
    kill -"$sig" "$pid"
    rc=0
    wait "$pid" || rc=$?
    [ "$sig" = TERM ] && want=143 || want=130
    expect_rc "$want" "SIG$sig to gpurun: $want"
    check_stopped "SIG$sig"
done

# SIGTERM while the daemon starts: gpurun quits it, starts no rank, 143.
job ok
rm -rf "$TMP/mps.log" "$TMP/results" "$TMP/go"
PATH="$PATH_WITH" FAKE_MPS_HOLD="$TMP/go" "$GPURUN" run "$TMP/m.conf" --quiet --results "$TMP/results" \
    >"$TMP/out" 2>"$TMP/err" &
pid=$!
n=0
while ! grep -q '^start ' "$TMP/mps.log" 2>/dev/null && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
kill -TERM "$pid"
: >"$TMP/go"
rc=0
wait "$pid" || rc=$?
expect_rc 143 "SIGTERM while the daemon starts: 143"
contains "$TMP/err" "while the CUDA MPS daemon started: no rank was started" "... saying so"
check_stopped "SIGTERM during the start"
[ "$(ranks_started "$TMP/results/m/*")" = 0 ]
ok $? "... and no rank ran"

# SIGKILL of gpurun: it can quit nothing, the daemon's guard does once the
# host's rank steps are gone (they die with gpurun).
# kill_gpurun_check WHAT: a hanging job started, gpurun SIGKILLed.
kill_gpurun_check() {
    job hang "${EXTRA:-}"
    rm -rf "$TMP/mps.log" "$TMP/results"
    PATH="$PATH_WITH" "$GPURUN" run "$TMP/m.conf" --quiet --results "$TMP/results" >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    wait_running
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null
    check_stopped "$1"
}
kill_gpurun_check "SIGKILL of gpurun, local launcher"

# A run folder path too long for a unix socket: the pipe folder is a private
# mkdtemp one under $TMPDIR instead, which the guard removes after the quit,
# also when gpurun was SIGKILLed.
long="$TMP/results/$(printf 'l%.0s' $(seq 1 70))"
mkdir -p "$TMP/tmpdir"
job hang
rm -rf "$TMP/mps.log" "$TMP/results"
PATH="$PATH_WITH" TMPDIR="$TMP/tmpdir" "$GPURUN" run "$TMP/m.conf" --quiet --results "$long" >"$TMP/out" 2>"$TMP/err" &
pid=$!
n=0
while [ "$(ranks_started "$long/m/*")" -lt 2 ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
kill -KILL "$pid"
wait "$pid" 2>/dev/null
wait_gone
ok $? "a long run folder path, SIGKILL of gpurun: no daemon nor guard left"
contains "$TMP/mps.log" "start pipe=$TMP/tmpdir/gpurun-mps-" "... its pipe folder was a private one under \$TMPDIR"
contains "$TMP/mps.log" "modes=700/700" "... mode 0700"
n=0
while [ -n "$(ls "$TMP/tmpdir")" ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
[ -z "$(ls "$TMP/tmpdir")" ] && grep -q "^cmd=quit pipe=$TMP/tmpdir/gpurun-mps-" "$TMP/mps.log"
ok $? "... quit, and the folder removed"

# Under mpirun (real Open MPI, this host): the same daemon for the ranks,
# quit after them, also when gpurun or a rank step is SIGKILLed; and under
# a stand-in mpirun playing two hosts (bench/sim-mpirun), each host's first
# rank step starts its host's daemon, which its guard quits after the
# host's last rank, however that rank ends.
if command -v mpirun >/dev/null 2>&1; then
    [ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    LAUNCHER=mpirun EXTRA="oversubscribe = true"
    export LAUNCHER
    job ok "$EXTRA"
    rm -rf "$TMP/mps.log" "$TMP/results"
    run env PATH="$PATH_WITH" "$GPURUN" run "$TMP/m.conf" --quiet --results "$TMP/results"
    expect_rc 0 "mpirun: exit 0"
    check_stopped "mpirun"
    d=$(last_run)
    rank_output "$d" 0 >"$TMP/r0"
    rank_output "$d" 1 >"$TMP/r1"
    contains "$TMP/r0" "cvd=0 pipe=$pipe logdir=$d/mps." "mpirun: rank 0 pointed at the daemon"
    contains "$TMP/r1" "cvd=0 pipe=$pipe logdir=$d/mps." "mpirun: rank 1 too"
    [ "$(jq -r '[.mps.hosts[] | select(.started and .stopped and (.user_daemon | not))] | length' \
        "$d/record.json")" = 1 ]
    ok $? "mpirun: the record's mps.hosts says this host started its daemon and stopped it"

    kill_gpurun_check "mpirun, SIGKILL of gpurun"

    job hang "$EXTRA"
    rm -rf "$TMP/mps.log" "$TMP/results"
    PATH="$PATH_WITH" "$GPURUN" run "$TMP/m.conf" --quiet --results "$TMP/results" >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    wait_running
    step=$(rank_output "$(last_run)" 1 | sed -n 's/.* step=\([0-9]*\).*/\1/p' | head -1)
    [ -n "$step" ] && kill -KILL "$step"
    rc=0
    wait "$pid" || rc=$?
    [ "$rc" -ne 0 ]
    ok $? "mpirun, SIGKILL of rank 1's step: the job fails ($rc)"
    check_stopped "mpirun, SIGKILL of a rank step"

    mkdir "$TMP/simbin"
    ln -s "$(cd "$top_srcdir" && pwd)/bench/sim-mpirun" "$TMP/simbin/mpirun"
    NODES=2
    export NODES
    job hold "$EXTRA"
    rm -rf "$TMP/mps.log" "$TMP/results" "$TMP/release"
    PATH="$TMP/simbin:$PATH_WITH" "$GPURUN" run "$TMP/m.conf" --quiet --results "$TMP/results" \
        >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    wait_running 4
    d=$(last_run)
    step=$(grep '^1: rank=1 ' "$d/sim0001.out" | sed -n 's/.* step=\([0-9]*\).*/\1/p')
    [ -n "$step" ] && kill -KILL "$step"
    : >"$TMP/release"
    rc=0
    wait "$pid" || rc=$?
    [ "$rc" -ne 0 ]
    ok $? "two hosts, SIGKILL of rank 1's step on sim0001: the job fails ($rc)"
    for h in sim0001 sim0002; do
        [ "$(grep -c "^start pipe=$d/mps.$h/pipe log=$d/mps.$h/log modes=700/700$" "$TMP/mps.log")" = 1 ]
        ok $? "two hosts: $h started one daemon, its folders 0700, in the run folder"
        contains "$TMP/mps.log" "cmd=quit pipe=$d/mps.$h/pipe" "two hosts: ... and its guard quit it"
        grep "^[0-9]*: rank=" "$d/$h.out" | grep -v "pipe=$d/mps.$h/pipe logdir=$d/mps.$h/log " >"$TMP/bad"
        [ ! -s "$TMP/bad" ] && [ "$(grep -c "^[0-9]*: rank=" "$d/$h.out")" = 2 ]
        ok $? "two hosts: both ranks of $h pointed at $h's daemon"
        [ "$(jq -r --arg h "$h" '.mps.hosts[$h] | .started and (.user_daemon | not)' "$d/record.json")" = true ]
        ok $? "two hosts: the record's mps.hosts says $h started its daemon"
    done
    wait_gone
    ok $? "two hosts: no daemon nor guard left"
    NODES=1
    LAUNCHER=local EXTRA=
else
    for i in $(seq 1 25); do skip "mpirun not found (Debian: openmpi-bin)"; done
fi

# One rank per GPU: nothing to share, no daemon, even with mps = "on".
job ok 'mps = "on"'
rm -f "$TMP/mps.log"
run env PATH="$PATH_WITH" "$GPURUN" run "$TMP/m.conf" --quiet --results "$TMP/results" --set ranks_per_gpu=1
expect_rc 0 "ranks_per_gpu = 1 with mps = on: runs"
[ ! -e "$TMP/mps.log" ]
ok $? "... and starts no daemon"

job ok 'mps = "off"'
run env PATH="$PATH_WITH" "$GPURUN" run "$TMP/m.conf" --quiet --results "$TMP/results"
expect_rc 0 "mps = off: runs"
[ ! -e "$TMP/mps.log" ]
ok $? "... without a daemon"
rank_output "$(last_run)" 1 >"$TMP/r1"
contains "$TMP/r1" "cvd=0 pipe=$TMP/no-daemon-here logdir=" "... the ranks keep the environment they had"

# No control program: on is exit 3 before any rank, auto a note.
job ok 'mps = "on"'
rm -rf "$TMP/results"
run env PATH="$PATH_WITHOUT" "$GPURUN" run "$TMP/m.conf" --quiet --results "$TMP/results"
expect_rc 3 "mps = on without nvidia-cuda-mps-control: exit 3"
contains "$TMP/err" "nvidia-cuda-mps-control is not on PATH" "... saying why"
[ "$(ranks_started "$TMP/results/m/*")" = 0 ]
ok $? "... and no rank ran"
job ok
run env PATH="$PATH_WITHOUT" "$GPURUN" run "$TMP/m.conf" --quiet --results "$TMP/results"
expect_rc 0 "mps = auto without it: runs"
contains "$TMP/err" "note: ranks share GPUs without CUDA MPS" "... with a note"

# A daemon of the user's (a control socket that answers): used, not replaced.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
if [ -n "$PY" ]; then
    mkdir -m 700 "$TMP/userpipe"
    "$PY" -c 'import socket,sys,time
s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8); time.sleep(120)' "$TMP/userpipe/control" &
    pypid=$!
    n=0
    while [ ! -S "$TMP/userpipe/control" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
    job ok 'mps = "on"'
    rm -f "$TMP/mps.log"
    run env PATH="$PATH_WITH" CUDA_MPS_PIPE_DIRECTORY="$TMP/userpipe" "$GPURUN" run "$TMP/m.conf" --quiet \
        --results "$TMP/results"
    expect_rc 0 "a daemon already running: runs"
    [ ! -e "$TMP/mps.log" ]
    ok $? "... starts and quits none"
    rank_output "$(last_run)" 0 >"$TMP/r0"
    contains "$TMP/r0" "pipe=$TMP/userpipe " "... and points the ranks at the user's daemon"
    if command -v mpirun >/dev/null 2>&1; then
        LAUNCHER=mpirun job ok "mps = \"on\"
oversubscribe = true"
        rm -f "$TMP/mps.log"
        run env PATH="$PATH_WITH" CUDA_MPS_PIPE_DIRECTORY="$TMP/userpipe" "$GPURUN" run "$TMP/m.conf" --quiet \
            --results "$TMP/results"
        expect_rc 0 "mpirun, a daemon already running: runs"
        [ ! -e "$TMP/mps.log" ]
        ok $? "... starts and quits none"
        [ "$(jq -r '[.mps.hosts[] | select(.user_daemon and (.started | not))] | length' "$(last_run)/record.json")" = 1 ]
        ok $? "... and the record's mps.hosts says this host used the user's daemon"
    else
        skip "mpirun not found"
        skip "mpirun not found"
        skip "mpirun not found"
    fi
    kill "$pypid" 2>/dev/null
    wait "$pypid" 2>/dev/null
else
    for i in 1 2 3 4 5 6; do skip "no python3 to play a running daemon"; done
fi

# MPS folders another user made (issue 26): never used.  Each check below
# failed on the code before, which used a daemon's socket of the user's in
# such a folder, and let the job's env { } point the ranks at one.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1 && [ -n "$PY" ]; then
    chmod 755 "$TMP"
    mkdir -p "$TMP/shared"
    chmod 1777 "$TMP/shared"
    as_other() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
    as_other mkdir -m 777 "$TMP/shared/mps"
    # A daemon of ours (its socket ours, and it answers) in uid 65534's folder:
    # 65534 can swap the socket for its own daemon's.
    "$PY" -c 'import socket,sys,time
s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8); time.sleep(120)' "$TMP/shared/mps/control" &
    pypid=$!
    n=0
    while [ ! -S "$TMP/shared/mps/control" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
    job ok
    rm -rf "$TMP/mps.log" "$TMP/results"
    run env PATH="$PATH_WITH" CUDA_MPS_PIPE_DIRECTORY="$TMP/shared/mps" "$GPURUN" run "$TMP/m.conf" --quiet \
        --results "$TMP/results"
    expect_rc 2 "CUDA_MPS_PIPE_DIRECTORY naming uid 65534's folder (our daemon's socket in it): exit 2"
    contains "$TMP/err" "CUDA_MPS_PIPE_DIRECTORY=$TMP/shared/mps: the folder is owned by another user (uid 65534)" \
        "... saying whose folder it is"
    [ "$(ranks_started "$TMP/results/m/*")" = 0 ] && [ ! -e "$TMP/mps.log" ]
    ok $? "... no rank ran, no daemon started"
    run env PATH="$PATH_WITH" CUDA_MPS_PIPE_DIRECTORY="$TMP/shared/mps" "$GPURUN" doctor --json
    jq_out '.checks[] | select(.id == "mps") | .status == "FAIL" and (.detail | contains("owned by another user (uid 65534)"))'
    ok $rc "... and gpurun doctor says so (FAIL), not that a daemon of ours runs"
    kill "$pypid" 2>/dev/null
    wait "$pypid" 2>/dev/null
    for v in PIPE LOG; do
        job ok
        sed -i "s|^env { |env { CUDA_MPS_${v}_DIRECTORY = \"$TMP/shared/mps\"  |" "$TMP/m.conf"
        rm -rf "$TMP/mps.log" "$TMP/results"
        run env PATH="$PATH_WITH" "$GPURUN" run "$TMP/m.conf" --quiet --results "$TMP/results"
        expect_rc 2 "the job's env { CUDA_MPS_${v}_DIRECTORY } naming uid 65534's folder: exit 2"
        contains "$TMP/err" "m.conf:8: key 'env.CUDA_MPS_${v}_DIRECTORY': the folder $TMP/shared/mps is owned by another user (uid 65534)" \
            "... naming the job's line"
        [ "$(ranks_started "$TMP/results/m/*")" = 0 ]
        ok $? "... and no rank ran"
    done
    # Ours, but writable by others; a symlink to ours.
    mkdir -m 700 "$TMP/mine"
    mkdir -m 777 "$TMP/wide"
    chmod 777 "$TMP/wide"
    ln -s "$TMP/mine" "$TMP/shared/link"
    for bad in "$TMP/wide:writable by everyone" "$TMP/shared/link:a symlink"; do
        job ok
        run env PATH="$PATH_WITH" CUDA_MPS_PIPE_DIRECTORY="${bad%%:*}" "$GPURUN" run "$TMP/m.conf" --quiet \
            --results "$TMP/results"
        expect_rc 2 "CUDA_MPS_PIPE_DIRECTORY naming a folder that is ${bad#*:}: exit 2"
        contains "$TMP/err" "the folder is ${bad#*:}" "... saying so"
    done
    # The default /tmp/nvidia-mps made by uid 65534 (0777), with a daemon's
    # socket of the user's in it: in a mount namespace of its own whose /tmp
    # is an overlay, so that the machine's /tmp is not touched.  The user is
    # an unprivileged uid; gpurun starts the job's daemon in the run folder
    # and says why it did not use the one running.
    victim=$((40000 + $$ % 20000))
    if [ -e /tmp/nvidia-mps ]; then
        for i in 1 2 3 4 5; do skip "/tmp/nvidia-mps exists on this machine: the default folder is not played here"; done
    elif ! command -v unshare >/dev/null 2>&1 || ! unshare -m sh -c 'mount --make-rprivate / && mount -t tmpfs none "$1"' sh "$TMP/shared" 2>/dev/null; then
        for i in 1 2 3 4 5; do skip "no mount namespace with an overlay /tmp here (unshare -m, mount)"; done
    else
        mkdir -p "$TMP/ovl" "$TMP/vres"
        chown "$victim:$victim" "$TMP/vres"
        : >"$TMP/mps.log"
        chown "$victim" "$TMP/mps.log"
        job ok
        chmod 644 "$TMP/m.conf"
        unshare -m sh -c '
            TMP=$1 PY=$2 victim=$3 GPURUN=$4 P=$5
            mount --make-rprivate / && mount -t tmpfs none "$TMP/ovl" && mkdir "$TMP/ovl/u" "$TMP/ovl/w" && chmod 1777 "$TMP/ovl/u" &&
                mount -t overlay overlay -o "lowerdir=/tmp,upperdir=$TMP/ovl/u,workdir=$TMP/ovl/w" /tmp || exit 9
            setpriv --reuid=65534 --regid=65534 --clear-groups mkdir -m 777 /tmp/nvidia-mps
            as_victim() { setpriv --reuid="$victim" --regid="$victim" --clear-groups "$@"; }
            as_victim "$PY" -c "import socket,sys,time
s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8); time.sleep(120)" /tmp/nvidia-mps/control &
            n=0
            while [ ! -S /tmp/nvidia-mps/control ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
            as_victim env -u CUDA_MPS_PIPE_DIRECTORY PATH="$P" "$GPURUN" run "$TMP/m.conf" --quiet --results "$TMP/vres"                 >"$TMP/ovl/out" 2>"$TMP/ovl/err"
            echo "rc=$?"
            kill $! 2>/dev/null
            sed "s/^/err: /" "$TMP/ovl/err"
            sed "s/^/log: /" "$TMP/mps.log"
            for f in "$TMP"/vres/m/*Z-*/*.out; do [ "${f##*/}" = launcher.out ] || sed "s/^/rank: /" "$f"; done
            ls -d "$TMP"/vres/m/*Z-*/ | sed "s/^/dir: /"
        ' sh "$TMP" "$PY" "$victim" "$GPURUN" "$PATH_WITH" >"$TMP/ns.out" 2>&1
        d=$(sed -n 's,^dir: \(.*\)/$,\1,p' "$TMP/ns.out" | tail -1)
        grep -q "^rc=0$" "$TMP/ns.out"
        ok $? "uid $victim, /tmp/nvidia-mps made by uid 65534 holding its daemon's socket: the job runs"
        [ -n "$d" ] && grep -q "^log: start pipe=$d/mps." "$TMP/ns.out"
        ok $? "... with a daemon of its own, its pipe folder in the run folder"
        [ -n "$d" ] && [ "$(grep -c "^rank: .*pipe=$d/mps\." "$TMP/ns.out")" = 2 ] && ! grep -q "pipe=/tmp/nvidia-mps" "$TMP/ns.out"
        ok $? "... its ranks pointed there, not at /tmp/nvidia-mps"
        [ "$(grep -c '^err: gpurun: warning: the default MPS pipe folder /tmp/nvidia-mps is owned by another user (uid 65534): not used' "$TMP/ns.out")" = 1 ]
        ok $? "... and it says so, once"
        ! grep -q '^err: .*nvidia-mps.*writable' "$TMP/ns.out" && grep -q "^err: .*this job's CUDA MPS daemon runs in $d/mps\." "$TMP/ns.out"
        ok $? "... naming where the job's daemon runs instead"
        grep -q '^err: gpurun: warning: the default MPS' "$TMP/ns.out" || sed 's/^/#   /' "$TMP/ns.out" | head -20
    fi
else
    for i in $(seq 1 19); do skip "not root, no setpriv or no python3: no second user's MPS folders"; done
fi

# Under srun, on the single-node test Slurm cluster (cli-slurm.sh's; free
# ports asked of the kernel): gpurun inside a batch job starts the host's
# daemon and quits it; SIGKILL of gpurun or of a rank step there, and the
# batch script itself waits (bounded) for the daemon to go and says what is
# left before the job ends (Slurm may kill what is left after).
cluster=$top_srcdir/tests/cluster/slurm-single.sh
ports=
[ -n "$PY" ] && ports=$("$PY" -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))' 2>/dev/null)
slurm_up=no
if [ -n "$ports" ] && command -v sbatch >/dev/null 2>&1; then
    set -- $ports
    export GPURUN_SLURM_DIR="$TMP/slurm" GPURUN_SLURMCTLD_PORT=$1 GPURUN_SLURMD_PORT=$2
    trap '"$cluster" down >/dev/null 2>&1; rm -rf "$TMP"' EXIT INT TERM
    rc=0
    "$cluster" up >"$TMP/exports" 2>"$TMP/up.err" || rc=$?
    [ "$rc" -eq 0 ] && slurm_up=yes
    [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && diag "the Slurm test cluster did not come up: $(tail -3 "$TMP/up.err")"
fi
if [ "$slurm_up" = yes ]; then
    . "$TMP/exports"
    # srun_job KILL: a batch job running gpurun; KILL = none, gpurun or step
    srun_job() {
        LAUNCHER=srun
        job "$([ "$1" = none ] && echo ok || echo hang)" 'oversubscribe = true'
        rm -rf "$TMP/mps.log" "$TMP/results" "$TMP/batch.out"
        cat >"$TMP/batch.sh" <<SCRIPT
#!/bin/sh
#SBATCH --nodes=1
#SBATCH --ntasks=2
#SBATCH --output=$TMP/batch.out
"$GPURUN" run "$TMP/m.conf" --quiet --results "$TMP/results" &
pid=\$!
if [ "$1" != none ]; then
    n=0
    while [ "\$(cat "$TMP"/results/m/*Z-*/*.out 2>/dev/null | grep -c '^[0-9]*: rank=')" -lt 2 ] && [ \$n -lt 600 ]; do
        sleep 0.1; n=\$((n + 1))
    done
    step=\$(cat "$TMP"/results/m/*Z-*/*.out | sed -n 's/^1: rank=1 .* step=\\([0-9]*\\).*/\\1/p')
    [ "$1" = gpurun ] && kill -KILL "\$pid"
    [ "$1" = step ] && kill -KILL "\$step"
fi
wait "\$pid"
echo "gpurun rc=\$?"
n=0
while [ "\$(pgrep -f "$mark" | wc -l)" -gt 0 ] && [ \$n -lt 600 ]; do sleep 0.1; n=\$((n + 1)); done
echo "left=\$(pgrep -f "$mark" | wc -l)"
SCRIPT
        id=$(PATH="$PATH_WITH" sbatch --parsable "$TMP/batch.sh" 2>"$TMP/err" | cut -d';' -f1)
        n=0
        while [ -n "$id" ] && squeue -h -j "$id" 2>/dev/null | grep -q . && [ $n -lt 900 ]; do
            sleep 0.2
            n=$((n + 1))
        done
    }
    srun_job none
    contains "$TMP/batch.out" "gpurun rc=0" "srun: the batch job's gpurun ends 0"
    check_stopped "srun"
    contains "$TMP/batch.out" "left=0" "srun: nothing of the daemon left before the batch job ends"
    rank_output "$(last_run)" 1 >"$TMP/r1"
    contains "$TMP/r1" "cvd=0 pipe=$pipe logdir=$(last_run)/mps." "srun: rank 1 pointed at the daemon"
    [ "$(jq -r '.launcher + " " + ([.mps.hosts[] | select(.started and .stopped)] | length | tostring)' \
        "$(last_run)/record.json")" = "srun 1" ]
    ok $? "srun: the record's mps.hosts says the host started its daemon and stopped it"
    for k in gpurun step; do
        srun_job "$k"
        check_stopped "srun, SIGKILL of the $k"
        contains "$TMP/batch.out" "left=0" "srun, SIGKILL of the $k: nothing of the daemon left before the job ends"
    done
    LAUNCHER=local
    rm -f "$TMP/mps.log"
else
    why="no Slurm test cluster ($(tail -1 "$TMP/up.err" 2>/dev/null || echo 'no sbatch or python3'))"
    for i in $(seq 1 21); do skip "$why"; done
fi

# The gromacs template with 2 ranks per GPU, as a dry run on a GPU node's
# topology (a stand-in gmx_mpi: only its path is looked up): -ntomp is each
# rank's share of the cores near its GPU, the GPU flags centres set by hand
# come from params, and the dry run says which ranks share a GPU and that a
# daemon would start.
printf '#!/bin/sh\nexit 0\n' >"$TMP/bin/gmx_mpi"
chmod 755 "$TMP/bin/gmx_mpi"
cat >"$TMP/g.conf" <<JOB
template = "gromacs"
launcher = "local"
ranks_per_gpu = 2
params { pme = "gpu"  npme = "1"  bonded = "gpu"  update = "gpu" }
JOB
fake_tpr "$TMP/bench.tpr" # the template's default input, beside the job
run env PATH="$PATH_WITH" GPURUN_TEMPLATE_PATH="$top_srcdir/templates" "$GPURUN" run --dry-run "$TMP/g.conf" \
    --results "$TMP/results"
expect_rc 0 "gromacs, ranks_per_gpu = 2: dry run"
contains "$TMP/out" "mdrun -s $TMP/bench.tpr -deffnm g -ntomp 2 -nsteps 10000 -resethway -noconfout -nb gpu -pme gpu -npme 1 -bonded gpu -update gpu" \
    "... -ntomp 2 (16 cores, 8 ranks) and the PME/bonded/update flags"
contains "$TMP/out" "# ranks_per_gpu = 2: ranks 0-1, 2-3, 4-5, 6-7 share a GPU each; mps = auto: one CUDA MPS daemon would start" \
    "... says which ranks share a GPU, and the daemon"
[ ! -e "$TMP/mps.log" ] || [ "$(grep -c '^start ' "$TMP/mps.log")" = 0 ]
ok $? "... and starts none"
run env PATH="$PATH_WITH" GPURUN_TEMPLATE_PATH="$top_srcdir/templates" "$GPURUN" run --dry-run "$TMP/g.conf" \
    --results "$TMP/results" --set ranks_per_gpu=1 --set gpus_per_rank=0
expect_rc 0 "gromacs on CPUs: dry run"
contains "$TMP/out" "-ntomp 8 -nsteps 10000 -resethway -noconfout" "... no GPU flags"
! grep -q -- "-nb gpu" "$TMP/out"
ok $? "... none at all"
run env PATH="$PATH_WITH" "$GPURUN" run --dry-run "$TMP/g.conf" --set gpus_per_rank=2
expect_rc 2 "--set gpus_per_rank=2 with ranks_per_gpu = 2: exit 2"
contains "$TMP/err" "--set gpus_per_rank=2: key 'gpus_per_rank': contradicts 'ranks_per_gpu' (2)" "... naming both keys"

done_testing
