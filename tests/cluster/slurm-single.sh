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
#   GPURUN_SLURM_PLUGSTACK     a plugstack.conf whose lines the cluster's gets
#                              (SPANK plugins under test) [none: empty]
set -u

DIR=${GPURUN_SLURM_DIR:-/tmp/gpurun-slurm}
DIR=${DIR%/}
CTLD_PORT=${GPURUN_SLURMCTLD_PORT:-16817}
SLURMD_PORT=${GPURUN_SLURMD_PORT:-16818}
UP_TIMEOUT=${GPURUN_SLURM_UP_TIMEOUT:-30}
SLURMD_TIMEOUT=60
MARK=.gpurun-slurm-single
CONF=$DIR/slurm.conf
SLURMD_PID=$DIR/run/slurmd.pid
ME=slurm-single
TORN_DOWN="daemons stopped"
USAGE="up|down|status"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

dir_refused() {
    case $DIR in
        / | /tmp | /tmp/ | /etc* | /usr* | /var | /var/ | /home | /home/ | /root | /root/)
            die "refusing to use $DIR as the state folder" ;;
    esac
}
check_settings GPURUN_SLURM_DIR "$CTLD_PORT" "$SLURMD_PORT" "$UP_TIMEOUT"

# Prints the pids of the slurmstepd processes of this cluster: slurmd was
# started with SLURM_CONF=$CONF, and its step daemons inherit it.
our_stepds() {
    command -v pgrep >/dev/null 2>&1 || return 0
    for p in $(pgrep -x slurmstepd); do
        if tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qxF "SLURM_CONF=$CONF"; then
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
    REAP="$REAP $victims"
}

# teardown: the daemons, then any stray steps; until init has reaped them.
teardown() {
    stop_slurm "$SLURMD_PID" slurmd
    kill_stray_steps
    wait_reaped
}

exports() {
    printf "export SLURM_CONF='%s'\n" "$CONF"
    printf "export GPURUN_SLURM_DIR='%s'\n" "$DIR"
}

node_state() { # prints the node's state as sinfo sees it ("idle", "idle*", ...)
    slurm_cmd 3 sinfo -h -N -o %T 2>/dev/null | head -n 1
}
up_detail() { echo "node $(node_state)"; }

is_up() {
    ctl_up || return 1
    pid_alive "$SLURMD_PID" slurmd >/dev/null || return 1
    case $(node_state) in
        idle | mixed | allocated | completing) return 0 ;;
    esac
    return 1
}

cmd_down() {
    [ -e "$DIR" ] || return 0
    # No slurmstepd outlives the cluster (the jobs' end awaited 10 s at most).
    down_state 100 0.1
}

# Prints why the cluster cannot be brought up here, or nothing.
missing_prereq() {
    need_root "slurmd runs jobs as any user; SlurmUser=root" &&
        need_bins "munge, slurmctld, slurmd, slurm-client" munged slurmctld slurmd sinfo squeue scancel &&
        need_mungekey
}

write_conf() {
    host=$(hostname -s 2>/dev/null || hostname)
    slurmd_node || return 1
    nodename=$(printf '%s\n' "$node" | sed 's/^NodeName=\([^ ]*\).*/\1/')
    printf '%s\n' "$nodename" >"$DIR/nodename"
    {
        conf_head gpurun-test
        cat <<EOF
SlurmctldHost=$host(127.0.0.1)
SlurmdSpoolDir=$DIR/spool
# Slurm's PMIx plugin makes /tmp/spmix_appdir_<uid>_<job>.<step> under TmpFS;
# keep it in the folder so two clusters on one machine (job ids restart at 1)
# cannot collide there.
TmpFS=$DIR/tmp
SlurmdPidFile=$SLURMD_PID
SlurmdLogFile=$DIR/log/slurmd.log
EOF
        conf_common
        echo "$node NodeAddr=127.0.0.1 State=UNKNOWN"
        echo "PartitionName=debug Nodes=$nodename Default=YES MaxTime=INFINITE State=UP"
    } >"$CONF" || return 1
    if [ -n "${GPURUN_SLURM_PLUGSTACK:-}" ]; then
        cat "$GPURUN_SLURM_PLUGSTACK" >"$DIR/plugstack.conf"
    fi
}

node_idle() {
    state=$(node_state)
    [ "$state" = idle ]
}
# The pid files appear right after the fork; a daemon that died (port in
# use, bad config) is reported at once.
daemons_alive() {
    if [ "$1" -ge 2 ] || [ -f "$CTLD_PID" ]; then
        exited_if_dead "$CTLD_PID" slurmctld slurmctld
    fi
    if [ "$1" -ge 2 ] || [ -f "$SLURMD_PID" ]; then
        exited_if_dead "$SLURMD_PID" slurmd slurmd
    fi
}
not_idle() { echo "node not idle after ${UP_TIMEOUT}s (state: '${state:-no answer}')"; }

cmd_up() {
    up_begin
    # The daemons inherit every open descriptor; one that is a pipe (say
    # "up 5>&1 | cat", or a harness's) would keep its reader waiting until
    # "down".  Close 3-9 (what sh can name); stdio is redirected below.
    exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
    for p in "$CTLD_PORT" "$SLURMD_PORT"; do
        if port_busy "$p"; then
            die "TCP port $p is in use (another cluster?); set GPURUN_SLURMCTLD_PORT/GPURUN_SLURMD_PORT"
        fi
    done
    make_state state spool run log tmp
    start_munged || fail_up "munged did not start"
    write_conf || fail_up "could not write slurm.conf (slurmd -C failed?)"
    start_slurmctld
    start_daemon slurmd slurmd slurmd -f "$CONF"
    wait_up 0.1 node_idle daemons_alive not_idle
    exports
}

[ $# -eq 1 ] || usage
case $1 in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    *) usage ;;
esac
