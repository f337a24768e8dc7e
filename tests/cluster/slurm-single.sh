#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A real single-node Slurm cluster on localhost for the test suite, kept
# entirely in a state folder of its own (nothing under /etc is touched).
#
#   tests/cluster/slurm-single.sh up       start munged, slurmctld, slurmd; print exports
#   tests/cluster/slurm-single.sh down     stop exactly those daemons, remove the folder
#   tests/cluster/slurm-single.sh status   exit 0 when the cluster is up
#
#   eval "$(tests/cluster/slurm-single.sh up)" || exit
#
# up exits 77 (with a one-line reason on stderr) when a prerequisite is
# missing, so a TAP test can skip.  See tests/cluster/README.md.
#
# Environment:
#   GPURUN_SLURM_DIR           state folder          [/tmp/gpurun-slurm]
#   GPURUN_SLURMCTLD_PORT      slurmctld port        [16817]
#   GPURUN_SLURMD_PORT         slurmd port           [16818]
#   GPURUN_SLURM_UP_TIMEOUT    seconds to wait for the node to be idle [30]
set -u

DIR=${GPURUN_SLURM_DIR:-/tmp/gpurun-slurm}
DIR=${DIR%/}
CTLD_PORT=${GPURUN_SLURMCTLD_PORT:-16817}
SLURMD_PORT=${GPURUN_SLURMD_PORT:-16818}
UP_TIMEOUT=${GPURUN_SLURM_UP_TIMEOUT:-30}
MARK=.gpurun-slurm-single
CONF=$DIR/slurm.conf
MUNGE_DIR=$DIR/munge
SOCKET=$MUNGE_DIR/munge.socket
MUNGE_PID=$MUNGE_DIR/munged.pid
CTLD_PID=$DIR/run/slurmctld.pid
SLURMD_PID=$DIR/run/slurmd.pid

# Slurm and munge binaries usually live in sbin, which a non-login PATH lacks.
PATH=$PATH:/usr/sbin:/sbin:/usr/local/sbin
export PATH

say() { printf 'slurm-single: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

usage() {
    echo "usage: $0 up|down|status" >&2
    exit 2
}

case $DIR in
    /*) ;;
    *) die "GPURUN_SLURM_DIR must be an absolute path: $DIR" ;;
esac
case $DIR in
    / | /tmp | /tmp/ | /etc* | /usr* | /var | /var/ | /home | /home/ | /root | /root/)
        die "refusing to use $DIR as the state folder" ;;
esac
# Unix socket paths (munge.socket, slurmd's per-step sockets in the spool
# folder) must fit in 108 bytes.
if [ ${#DIR} -gt 64 ]; then
    die "state folder path too long for Unix sockets (over 64 bytes): $DIR"
fi
for p in "$CTLD_PORT" "$SLURMD_PORT" "$UP_TIMEOUT"; do
    case $p in
        '' | *[!0-9]*) die "not a number: '$p'" ;;
    esac
done

# pid_alive PIDFILE NAME: prints the pid when PIDFILE names a live process
# whose program is NAME and whose command line names this state folder
# (each daemon is started with -f $CONF or --socket=$SOCKET): a stale file
# or a reused pid never makes us signal someone else's process.
pid_alive() {
    [ -r "$1" ] || return 1
    pid=$(head -n 1 "$1" 2>/dev/null | tr -dc 0-9)
    [ -n "$pid" ] || return 1
    [ -r "/proc/$pid/cmdline" ] || return 1
    cmdline=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null)
    exe=$(printf '%s\n' "$cmdline" | head -n 1)
    [ "${exe##*/}" = "$2" ] || return 1
    case $cmdline in
        *"$DIR/"*) ;;
        *) return 1 ;;
    esac
    echo "$pid"
}

# stop_daemons PIDFILE NAME [PIDFILE NAME]...: SIGTERM to each live one
# together (each takes about 2 s to stop), wait up to $STOP_WAIT tenths of
# a second (20 s), then SIGKILL.
STOP_WAIT=200
stop_daemons() {
    pids=
    while [ $# -ge 2 ]; do
        if p=$(pid_alive "$1" "$2"); then
            kill -TERM "$p" 2>/dev/null
            pids="$pids $p:$2"
        fi
        shift 2
    done
    i=0
    while [ "$i" -lt "$STOP_WAIT" ]; do
        left=
        for e in $pids; do
            [ -d "/proc/${e%%:*}" ] && left="$left $e"
        done
        [ -n "$left" ] || return 0
        sleep 0.1
        i=$((i + 1))
    done
    for e in $left; do
        say "${e#*:} (pid ${e%%:*}) did not stop on SIGTERM; sending SIGKILL"
        kill -KILL "${e%%:*}" 2>/dev/null
    done
    sleep 0.2
}

# Prints the pids of the slurmstepd processes of this cluster: slurmd was
# started with SLURM_CONF=$CONF, and its step daemons inherit it.
our_stepds() {
    command -v pgrep >/dev/null 2>&1 || return 0
    for p in $(pgrep -x slurmstepd); do
        if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$CONF"; then
            echo "$p"
        fi
    done
}

descendants() { # descendants PID: all processes below PID
    for c in $(pgrep -P "$1"); do
        echo "$c"
        descendants "$c"
    done
}

# Steps left behind when the daemons died before "down" could cancel the
# jobs (proctrack/linuxproc: the tasks are the stepd's descendants).
kill_stray_steps() {
    stepds=$(our_stepds)
    [ -n "$stepds" ] || return 0
    victims=
    for p in $stepds; do
        victims="$victims $p $(descendants "$p")"
    done
    say "killing stray job steps:$(echo "$victims" | tr '\n' ' ')"
    # shellcheck disable=SC2086 # a list of pids
    kill -KILL $victims 2>/dev/null
    i=0
    while [ "$i" -lt 30 ]; do # until init has reaped them (3 s at most)
        left=
        for p in $victims; do
            [ -d "/proc/$p" ] && left=1
        done
        [ -n "$left" ] || break
        sleep 0.1
        i=$((i + 1))
    done
}

exports() {
    printf "export SLURM_CONF='%s'\n" "$CONF"
    printf "export GPURUN_SLURM_DIR='%s'\n" "$DIR"
}

node_state() { # prints the node's state as sinfo sees it ("idle", "idle*", ...)
    SLURM_CONF=$CONF timeout 3 sinfo -h -N -o %T 2>/dev/null | head -n 1
}

is_up() {
    [ -f "$DIR/$MARK" ] || return 1
    pid_alive "$MUNGE_PID" munged >/dev/null || return 1
    pid_alive "$CTLD_PID" slurmctld >/dev/null || return 1
    pid_alive "$SLURMD_PID" slurmd >/dev/null || return 1
    case $(node_state) in
        idle | mixed | allocated | completing) return 0 ;;
    esac
    return 1
}

cmd_status() {
    if is_up; then
        echo "up: $DIR (node $(node_state))"
        return 0
    fi
    echo "down: $DIR"
    return 1
}

cmd_down() {
    [ -e "$DIR" ] || return 0
    # Only ever remove a folder this script made (or an empty one).
    if [ ! -f "$DIR/$MARK" ] && ! { [ -d "$DIR" ] && [ -z "$(ls -A "$DIR")" ]; }; then
        die "$DIR exists but was not made by this script; not touching it"
    fi
    # Cancel what is still queued or running, so that no slurmstepd outlives
    # the cluster (bounded: 10 s).
    if pid_alive "$CTLD_PID" slurmctld >/dev/null &&
        pid_alive "$MUNGE_PID" munged >/dev/null; then
        jobs=$(SLURM_CONF=$CONF timeout 5 squeue -h -o %i 2>/dev/null)
        if [ -n "$jobs" ]; then
            # shellcheck disable=SC2086 # a list of job ids
            SLURM_CONF=$CONF timeout 5 scancel $jobs >/dev/null 2>&1
            i=0
            while [ "$i" -lt 100 ] &&
                [ -n "$(SLURM_CONF=$CONF timeout 5 squeue -h -o %i 2>/dev/null)" ]; do
                sleep 0.1
                i=$((i + 1))
            done
        fi
    fi
    stop_daemons "$SLURMD_PID" slurmd "$CTLD_PID" slurmctld
    # munged last: the Slurm daemons may still sign messages while stopping.
    stop_daemons "$MUNGE_PID" munged
    kill_stray_steps
    rm -rf "$DIR"
}

# Prints why the cluster cannot be brought up here, or nothing.
missing_prereq() {
    if [ "$(id -u)" != 0 ]; then
        echo "needs root (slurmd runs jobs as any user; SlurmUser=root)"
        return
    fi
    for b in munged slurmctld slurmd sinfo squeue scancel; do
        command -v "$b" >/dev/null 2>&1 || {
            echo "no $b binary (install munge, slurmctld, slurmd, slurm-client)"
            return
        }
    done
    if ! command -v mungekey >/dev/null 2>&1 && [ ! -r /dev/urandom ]; then
        echo "no mungekey and no /dev/urandom to make a munge key"
    fi
}

show_logs() {
    for f in "$MUNGE_DIR/munged.log" "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" \
        "$DIR/log/slurmctld.out" "$DIR/log/slurmd.out" "$DIR/log/munged.out"; do
        [ -s "$f" ] || continue
        echo "----- $f (last 40 lines)" >&2
        tail -n 40 "$f" >&2
    done
}

# fail_up MESSAGE: print it and the logs, stop what this run started (the
# folder and its logs stay until "down"), exit 1.
fail_up() {
    say "$*"
    show_logs
    # A slurmd that never registered sits in 10 s network timeouts; no
    # state is worth saving here.
    STOP_WAIT=30
    stop_daemons "$SLURMD_PID" slurmd "$CTLD_PID" slurmctld
    stop_daemons "$MUNGE_PID" munged
    say "daemons stopped; logs kept in $DIR/log until \"$0 down\""
    exit 1
}

# port_busy PORT: true when something listens on TCP PORT (needs ss).
port_busy() {
    command -v ss >/dev/null 2>&1 || return 1
    [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]
}

start_munged() {
    mkdir -p "$MUNGE_DIR" || return 1
    # munged wants: the key 0600 and owned by its user; the socket folder
    # searchable by all (0755) and not writable by group/other.
    chmod 0755 "$DIR" "$MUNGE_DIR"
    if command -v mungekey >/dev/null 2>&1; then
        mungekey --create --keyfile="$MUNGE_DIR/munge.key" >/dev/null 2>&1
    fi
    if [ ! -s "$MUNGE_DIR/munge.key" ]; then
        dd if=/dev/urandom of="$MUNGE_DIR/munge.key" bs=1024 count=1 2>/dev/null || return 1
    fi
    chmod 0600 "$MUNGE_DIR/munge.key"
    set -- --socket="$SOCKET" --key-file="$MUNGE_DIR/munge.key" \
        --pid-file="$MUNGE_PID" --log-file="$MUNGE_DIR/munged.log" \
        --seed-file="$MUNGE_DIR/munged.seed"
    # munged forks once its socket is ready.  When the folder sits under a
    # group/world-writable parent that is not sticky, munged refuses; --force
    # turns those checks into warnings.
    if ! munged "$@" </dev/null >>"$DIR/log/munged.out" 2>&1; then
        say "munged refused to start; retrying with --force"
        munged --force "$@" </dev/null >>"$DIR/log/munged.out" 2>&1 || return 1
    fi
    [ -S "$SOCKET" ]
}

write_conf() {
    host=$(hostname -s 2>/dev/null || hostname)
    # The node line as slurmd sees this machine (first line; the second is UpTime).
    node=$(SLURM_CONF=/dev/null slurmd -C 2>/dev/null | sed -n '/^NodeName=/p' | head -n 1)
    [ -n "$node" ] || node=$(slurmd -C 2>/dev/null | sed -n '/^NodeName=/p' | head -n 1)
    [ -n "$node" ] || return 1
    nodename=$(printf '%s\n' "$node" | sed 's/^NodeName=\([^ ]*\).*/\1/')
    printf '%s\n' "$nodename" >"$DIR/nodename"
    cat >"$CONF" <<EOF
# Written by tests/cluster/slurm-single.sh; removed by "down".
ClusterName=gpurun-test
# Job ids start at 1 in every fresh cluster; two clusters on one machine
# would then share Open MPI session dirs (/tmp/ompi.<host>.<uid>/jf.*, from
# the job and step ids) and output file names.  Start each cluster's ids at
# its slurmctld port times 1000 (ports differ between live clusters).
FirstJobId=$((CTLD_PORT * 1000 + 1))
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SOCKET
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
# Slurm's PMIx plugin makes /tmp/spmix_appdir_<uid>_<job>.<step> under TmpFS;
# keep it in the folder so two clusters on one machine (job ids restart at 1)
# cannot collide there.
TmpFS=$DIR/tmp
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$SLURMD_PID
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$DIR/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
MpiDefault=pmix
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# Reject jobs this node can never run (e.g. -n 4 on 2 cores) instead of
# leaving them pending forever (Reason=PartitionConfig).
EnforcePartLimits=ALL
MailProg=/bin/true
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
MinJobAge=300
KillWait=5
Waittime=0
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$nodename Default=YES MaxTime=INFINITE State=UP
EOF
    : >"$DIR/plugstack.conf"
}

cmd_up() {
    reason=$(missing_prereq)
    if [ -n "$reason" ]; then
        say "$reason"
        exit 77
    fi
    if is_up; then
        exports
        return 0
    fi
    # Half up, or left over from a failed run: start again from nothing.
    cmd_down || exit 1
    # The daemons inherit every open descriptor; one that is a pipe (say
    # "up 5>&1 | cat", or a harness's) would keep its reader waiting until
    # "down".  Close 3-9 (what sh can name); stdio is redirected below.
    exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
    for p in "$CTLD_PORT" "$SLURMD_PORT"; do
        if port_busy "$p"; then
            die "TCP port $p is in use (another cluster?); set GPURUN_SLURMCTLD_PORT/GPURUN_SLURMD_PORT"
        fi
    done
    umask 022
    mkdir -p "$DIR" || die "cannot create $DIR"
    : >"$DIR/$MARK"
    mkdir -p "$DIR/state" "$DIR/spool" "$DIR/run" "$DIR/log" "$DIR/tmp" || fail_up "cannot create folders in $DIR"
    start_munged || fail_up "munged did not start"
    write_conf || fail_up "could not write slurm.conf (slurmd -C failed?)"
    SLURM_CONF=$CONF
    export SLURM_CONF
    # The daemons fork into the background; their stdio must not hold the
    # caller's pipe (eval "$(... up)" would wait for them).
    slurmctld -f "$CONF" </dev/null >>"$DIR/log/slurmctld.out" 2>&1 ||
        fail_up "slurmctld failed to start"
    slurmd -f "$CONF" </dev/null >>"$DIR/log/slurmd.out" 2>&1 ||
        fail_up "slurmd failed to start"
    # Wall-clock deadline: one sinfo can itself take seconds when something
    # else answers on the port.
    start=$(date +%s)
    while :; do
        state=$(node_state)
        case $state in
            idle) break ;;
        esac
        now=$(date +%s)
        # The pid files appear right after the fork; a daemon that died
        # (port in use, bad config) is reported at once.
        if [ $((now - start)) -ge 2 ] || [ -f "$CTLD_PID" ]; then
            pid_alive "$CTLD_PID" slurmctld >/dev/null || fail_up "slurmctld exited"
        fi
        if [ $((now - start)) -ge 2 ] || [ -f "$SLURMD_PID" ]; then
            pid_alive "$SLURMD_PID" slurmd >/dev/null || fail_up "slurmd exited"
        fi
        if [ $((now - start)) -ge "$UP_TIMEOUT" ]; then
            fail_up "node not idle after ${UP_TIMEOUT}s (state: '${state:-no answer}')"
        fi
        sleep 0.1
    done
    exports
}

[ $# -eq 1 ] || usage
case $1 in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    *) usage ;;
esac
