# shellcheck shell=sh
# SPDX-License-Identifier: BSD-3-Clause
# What slurm-single.sh and netns-cluster.sh share: sourced by both, after
# they set
#
#   ME         their name, for messages ("slurm-single: ...")
#   USAGE      their commands, for the usage line
#   DIR MARK   the state folder and the marker file "down" looks for
#   CONF CTLD_PORT SLURMD_PORT SLURMD_TIMEOUT UP_TIMEOUT
#
# and before they define the functions this file calls back:
#
#   dir_refused        dies when $DIR is not a folder to use
#   missing_prereq     prints why the cluster cannot run here, or nothing
#   is_up, up_detail   the cluster is up; how it looks then (for status)
#   exports            the export lines "up" prints
#   teardown           stops (and waits for) every process the cluster runs
#
# POSIX sh has no local variables: those of the functions here have names
# of their own (stop_*, reap_p, ...) so as not to clobber the caller's; the
# few the scripts read are said at each function (pid, node, ...).

# Slurm and munge binaries usually live in sbin, which a non-login PATH lacks.
PATH=$PATH:/usr/sbin:/sbin:/usr/local/sbin
export PATH

MUNGE_DIR=$DIR/munge
SOCKET=$MUNGE_DIR/munge.socket
MUNGE_PID=$MUNGE_DIR/munged.pid
CTLD_PID=$DIR/run/slurmctld.pid

say() { printf '%s: %s\n' "$ME" "$*" >&2; }
die() { say "$*"; exit 1; }
usage() {
    echo "usage: $0 $USAGE" >&2
    exit 2
}

# check_settings DIRVAR NUMBER...: $DIR (named DIRVAR in the environment) is
# absolute, not refused by dir_refused and short enough; each NUMBER is one.
check_settings() {
    case $DIR in
        /*) ;;
        *) die "$1 must be an absolute path: $DIR" ;;
    esac
    dir_refused
    # Unix socket paths (munge.socket, slurmd's per-step sockets in the spool
    # folder) must fit in 108 bytes.
    if [ ${#DIR} -gt 64 ]; then
        die "state folder path too long for Unix sockets (over 64 bytes): $DIR"
    fi
    shift
    for set_num in "$@"; do
        case $set_num in
            '' | *[!0-9]*) die "not a number: '$set_num'" ;;
        esac
    done
}

# retry TRIES PAUSE CMD...: runs CMD until it succeeds, at most TRIES times,
# sleeping PAUSE seconds after each failure; fails when CMD never did.
retry() {
    try_n=0
    try_max=$1
    try_pause=$2
    shift 2
    while [ "$try_n" -lt "$try_max" ]; do
        "$@" && return 0
        sleep "$try_pause"
        try_n=$((try_n + 1))
    done
    return 1
}

# slurm_cmd SECONDS CMD...: a Slurm client command on this cluster, bounded.
slurm_cmd() {
    cmd_secs=$1
    shift
    SLURM_CONF=$CONF timeout "$cmd_secs" "$@"
}

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

# ctl_up: the marker is there, and munged and slurmctld run from this folder.
ctl_up() {
    [ -f "$DIR/$MARK" ] || return 1
    pid_alive "$MUNGE_PID" munged >/dev/null || return 1
    pid_alive "$CTLD_PID" slurmctld >/dev/null
}

# running PID: the process exists and is not a zombie.  This machine's
# init reaps exited processes only after a second or two; a zombie has
# already let go of its ports (and namespaces), so the teardown moves on and
# waits for the reaping once, at the end (wait_reaped).
running() {
    st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$st" ] && [ "${st%% *}" != Z ]
}

REAP= # every pid the teardown signalled

# stop_daemons PIDFILE NAME [PIDFILE NAME]...: SIGTERM to each live one
# together (each takes about 2 s to stop), wait up to $STOP_WAIT tenths of
# a second (20 s), then SIGKILL.
STOP_WAIT=200
stop_daemons() {
    stop_pids=
    while [ $# -ge 2 ]; do
        if stop_p=$(pid_alive "$1" "$2"); then
            kill -TERM "$stop_p" 2>/dev/null
            stop_pids="$stop_pids $stop_p:$2"
            REAP="$REAP $stop_p"
        fi
        shift 2
    done
    retry "$STOP_WAIT" 0.1 none_running && return 0
    for stop_e in $stop_left; do
        say "${stop_e#*:} (pid ${stop_e%%:*}) did not stop on SIGTERM; sending SIGKILL"
        kill -KILL "${stop_e%%:*}" 2>/dev/null
    done
    sleep 0.2
}
none_running() { # of $stop_pids; those that are go in $stop_left
    stop_left=
    for stop_e in $stop_pids; do
        running "${stop_e%%:*}" && stop_left="$stop_left $stop_e"
    done
    [ -z "$stop_left" ]
}

# wait_reaped: until no pid in $REAP is left in /proc, zombies included, so
# that "pgrep" right after "down" shows nothing of ours (3 s at most).
wait_reaped() { retry 30 0.1 all_reaped; }
all_reaped() {
    for reap_p in $REAP; do
        [ -d "/proc/$reap_p" ] && return 1
    done
    return 0
}

# stop_slurm [PIDFILE NAME]...: these daemons and slurmctld together, then
# munged last: the Slurm daemons may still sign messages while stopping.
stop_slurm() {
    stop_daemons "$@" "$CTLD_PID" slurmctld
    stop_daemons "$MUNGE_PID" munged
}

# cancel_jobs TRIES PAUSE [SQUEUE-OPTION...]: cancel what is still queued or
# running, so that slurmd ends its steps; then ask squeue (with the options)
# up to TRIES times, PAUSE seconds apart, until it lists none.
cancel_jobs() {
    ctl_up || return 0
    jobs=$(slurm_cmd 5 squeue -h -o %i 2>/dev/null)
    [ -n "$jobs" ] || return 0
    # shellcheck disable=SC2086 # a list of job ids
    slurm_cmd 5 scancel $jobs >/dev/null 2>&1
    cancel_tries=$1
    cancel_pause=$2
    shift 2
    retry "$cancel_tries" "$cancel_pause" no_jobs "$@"
}
no_jobs() { # no_jobs SQUEUE-OPTION...
    [ -z "$(slurm_cmd 5 squeue -h -o %i "$@" 2>/dev/null)" ]
}

# down_state [SQUEUE-OPTION...]: "down" for a state folder that exists:
# only ever remove a folder this script made (or an empty one); cancel the
# jobs (cancel_jobs with these arguments), teardown, remove the folder.
down_state() {
    if [ ! -f "$DIR/$MARK" ] && ! { [ -d "$DIR" ] && [ -z "$(ls -A "$DIR")" ]; }; then
        die "$DIR exists but was not made by this script; not touching it"
    fi
    cancel_jobs "$@"
    teardown
    rm -rf "$DIR"
}

cmd_status() {
    if is_up; then
        echo "up: $DIR ($(up_detail))"
        return 0
    fi
    echo "down: $DIR"
    return 1
}

# need_root WHY, need_bins HINT BINARY..., need_mungekey: for
# missing_prereq; each prints why not and fails.
need_root() {
    [ "$(id -u)" = 0 ] && return 0
    echo "needs root ($1)"
    return 1
}
need_bins() {
    bins_hint=$1
    shift
    for bin in "$@"; do
        command -v "$bin" >/dev/null 2>&1 || {
            echo "no $bin binary (install $bins_hint)"
            return 1
        }
    done
}
need_mungekey() {
    command -v mungekey >/dev/null 2>&1 && return 0
    [ -r /dev/urandom ] && return 0
    echo "no mungekey and no /dev/urandom to make a munge key"
    return 1
}

# up_begin: the start of "up".  Exits 77 when missing_prereq names a
# reason; prints the exports and exits 0 when the cluster is up already;
# otherwise (half up, or left over from a failed run) takes down what is
# there, to start again from nothing.
up_begin() {
    reason=$(missing_prereq)
    if [ -n "$reason" ]; then
        say "$reason"
        exit 77
    fi
    if is_up; then
        exports
        exit 0
    fi
    cmd_down || exit 1
}

# make_state FOLDER...: the state folder, its marker ("down" removes only a
# folder holding it) and these folders in it.
make_state() {
    umask 022
    mkdir -p "$DIR" || die "cannot create $DIR"
    : >"$DIR/$MARK"
    (cd "$DIR" && mkdir -p "$@") || fail_up "cannot create folders in $DIR"
}

# show_logs: the tail of each log (munged's, then what is in $DIR/log).
show_logs() {
    for log_f in "$MUNGE_DIR/munged.log" "$DIR/log/"*; do
        [ -s "$log_f" ] || continue
        echo "----- $log_f (last 40 lines)" >&2
        tail -n 40 "$log_f" >&2
    done
}

# fail_up MESSAGE: print it and the logs, stop what this run started
# (teardown: the folder and its logs stay until "down"), say so (with
# $TORN_DOWN), exit 1.
fail_up() {
    say "$*"
    show_logs
    # A slurmd that never registered sits in 10 s network timeouts; no
    # state is worth saving here.
    STOP_WAIT=30
    teardown
    say "$TORN_DOWN; logs kept in $DIR/log until \"$0 down\""
    exit 1
}

# port_busy PORT: true when something listens on TCP PORT here (needs ss).
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

# slurmd_node: sets $node to the node line of "slurmd -C" (this machine as
# slurmd sees it: the first line; the second is UpTime), or fails.
slurmd_node() {
    node=$(SLURM_CONF=/dev/null slurmd -C 2>/dev/null | sed -n '/^NodeName=/p' | head -n 1)
    [ -n "$node" ] || node=$(slurmd -C 2>/dev/null | sed -n '/^NodeName=/p' | head -n 1)
    [ -n "$node" ]
}

# conf_head CLUSTERNAME, conf_common: the first lines of slurm.conf, and the
# settings both clusters share; the script prints its own in between and
# the node and partition lines after.  conf_common also makes the empty
# plugstack.conf it names (so that /etc/slurm/plugstack.conf is not read).
conf_head() {
    echo "# Written by tests/cluster/$ME.sh; removed by \"down\"."
    echo "ClusterName=$1"
}
conf_common() {
    : >"$DIR/plugstack.conf"
    cat <<EOF
# Job ids start at 1 in every fresh cluster; two clusters on one machine
# would then share Open MPI session dirs (/tmp/ompi.<host>.<uid>/jf.*, from
# the job and step ids) and output file names.  Start each cluster's ids at
# its slurmctld port times 1000 (ports differ between live clusters).
FirstJobId=$((CTLD_PORT * 1000 + 1))
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SOCKET
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmctldPidFile=$CTLD_PID
SlurmctldLogFile=$DIR/log/slurmctld.log
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
SlurmdTimeout=$SLURMD_TIMEOUT
InactiveLimit=0
MinJobAge=300
KillWait=5
Waittime=0
EOF
}

# start_daemon LOG WHAT CMD...: runs CMD, a daemon that forks into the
# background; its stdio must not hold the caller's pipe (eval "$(... up)"
# would wait for it), so it gets /dev/null and $DIR/log/LOG.out.  "up"
# fails with "WHAT failed to start" when CMD does.
start_daemon() {
    daemon_log=$1
    daemon_what=$2
    shift 2
    "$@" </dev/null >>"$DIR/log/$daemon_log.out" 2>&1 || fail_up "$daemon_what failed to start"
}

start_slurmctld() {
    SLURM_CONF=$CONF
    export SLURM_CONF
    start_daemon slurmctld slurmctld slurmctld -f "$CONF"
}

# wait_up PAUSE READY ALIVE LATE: runs READY every PAUSE seconds until it
# succeeds (the nodes are idle).  Against a wall-clock deadline: one sinfo
# can itself take seconds when something else answers on the port.  Before
# each pause ALIVE SECONDS-SO-FAR fails "up" when a daemon exited, and
# after $UP_TIMEOUT seconds "up" fails with what LATE prints.
wait_up() {
    up_start=$(date +%s)
    while ! $2; do
        up_secs=$(($(date +%s) - up_start))
        $3 "$up_secs"
        [ "$up_secs" -lt "$UP_TIMEOUT" ] || fail_up "$($4)"
        sleep "$1"
    done
}

# exited_if_dead PIDFILE NAME WHAT: for ALIVE; "up" fails with "WHAT
# exited" when the daemon is not running.
exited_if_dead() {
    pid_alive "$1" "$2" >/dev/null || fail_up "$3 exited"
}
