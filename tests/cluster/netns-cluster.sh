#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A real three-host Slurm cluster on one machine for the test suite: one
# network namespace per host (own address on a bridge, own host name, own
# /tmp and /dev/shm), munged and slurmctld in the root namespace, one slurmd
# per host, and an rsh agent that lets Open MPI's mpirun start ranks on the
# hosts.  Everything lives in a state folder of its own (outside /tmp, since
# each host has a private /tmp); nothing under /etc is touched.
#
#   tests/cluster/netns-cluster.sh up            build it; print exports for eval
#   tests/cluster/netns-cluster.sh down          remove exactly what up made
#   tests/cluster/netns-cluster.sh status        exit 0 when the cluster is up
#   tests/cluster/netns-cluster.sh exec HOST CMD...   run CMD inside HOST
#   tests/cluster/netns-cluster.sh ps HOST       list HOST's processes
#
#   eval "$(tests/cluster/netns-cluster.sh up)" || exit
#
# up exits 77 (with a one-line reason on stderr) when a prerequisite is
# missing or namespaces cannot be made here, so a TAP test can skip.
# See tests/cluster/NETNS.md.
#
# Environment:
#   GPURUN_NETNS_DIR              state folder (not under /tmp)  [/srv/gpurun-netns]
#   GPURUN_NETNS_PREFIX           prefix of the namespace, bridge and veth names [gpurun-]
#   GPURUN_NETNS_SUBNET           link-local /24: 169.254.N (or 169.254.N.0/24) [169.254.77]
#   GPURUN_NETNS_NHOSTS           number of hosts, 1..9          [3]
#   GPURUN_NETNS_SLURMCTLD_PORT   slurmctld port                 [17817]
#   GPURUN_NETNS_SLURMD_PORT      slurmd port (in each host)     [17818]
#   GPURUN_NETNS_SLURMD_TIMEOUT   SlurmdTimeout: seconds before a silent
#                                 host is marked DOWN            [30]
#   GPURUN_NETNS_UP_TIMEOUT       seconds to wait for all hosts to be idle [60]
set -u

DIR=${GPURUN_NETNS_DIR:-/srv/gpurun-netns}
DIR=${DIR%/}
PREFIX=${GPURUN_NETNS_PREFIX:-gpurun-}
SUBNET=${GPURUN_NETNS_SUBNET:-169.254.77}
NHOSTS=${GPURUN_NETNS_NHOSTS:-3}
CTLD_PORT=${GPURUN_NETNS_SLURMCTLD_PORT:-17817}
SLURMD_PORT=${GPURUN_NETNS_SLURMD_PORT:-17818}
SLURMD_TIMEOUT=${GPURUN_NETNS_SLURMD_TIMEOUT:-30}
UP_TIMEOUT=${GPURUN_NETNS_UP_TIMEOUT:-60}
MARK=.gpurun-netns-cluster
CONF=$DIR/slurm.conf
MUNGE_DIR=$DIR/munge
SOCKET=$MUNGE_DIR/munge.socket
MUNGE_PID=$MUNGE_DIR/munged.pid
CTLD_PID=$DIR/run/slurmctld.pid
CREATED=$DIR/created # "netns NAME" / "link NAME" lines, as they are made
AGENT=$DIR/rsh-agent
HOSTFILE=$DIR/hostfile
SCRATCH=$DIR/scratch
BRIDGE=${PREFIX}br

# Slurm and munge binaries usually live in sbin, which a non-login PATH lacks.
PATH=$PATH:/usr/sbin:/sbin:/usr/local/sbin
export PATH

say() { printf 'netns-cluster: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

usage() {
    echo "usage: $0 up|down|status|exec HOST CMD...|ps HOST" >&2
    exit 2
}

case $DIR in
    /*) ;;
    *) die "GPURUN_NETNS_DIR must be an absolute path: $DIR" ;;
esac
case $DIR in
    *[!A-Za-z0-9/._-]*) die "GPURUN_NETNS_DIR may hold only letters, digits and / . _ -: $DIR" ;;
esac
case $DIR in
    / | /tmp | /tmp/* | /dev/shm* | /etc* | /usr* | /proc* | /sys* | /run | /var | /home | /root | /srv)
        die "refusing to use $DIR as the state folder (and each host's /tmp is private: keep it outside /tmp)" ;;
esac
# Unix socket paths (munge.socket, slurmd's per-step sockets in the spool
# folder) must fit in 108 bytes.
if [ ${#DIR} -gt 64 ]; then
    die "state folder path too long for Unix sockets (over 64 bytes): $DIR"
fi
for p in "$CTLD_PORT" "$SLURMD_PORT" "$UP_TIMEOUT" "$SLURMD_TIMEOUT" "$NHOSTS"; do
    case $p in
        '' | *[!0-9]*) die "not a number: '$p'" ;;
    esac
done
[ "$NHOSTS" -ge 1 ] && [ "$NHOSTS" -le 9 ] || die "GPURUN_NETNS_NHOSTS must be 1..9: $NHOSTS"
# Interface names are at most 15 bytes: PREFIX + "h9" / "br".
case $PREFIX in
    '' | *[!A-Za-z0-9_-]*) die "GPURUN_NETNS_PREFIX may hold only letters, digits, _ and -: '$PREFIX'" ;;
esac
[ ${#PREFIX} -le 12 ] || die "GPURUN_NETNS_PREFIX too long (12 at most; interface names are 15): $PREFIX"
# Link-local only (169.254.0.0/16; its first and last /24 are reserved).
SUBNET_SET=$SUBNET
SUBNET=${SUBNET%/24}
SUBNET=${SUBNET%.0}
case $SUBNET in
    169.254.[0-9] | 169.254.[0-9][0-9] | 169.254.[0-9][0-9][0-9]) ;;
    *) die "GPURUN_NETNS_SUBNET must be a link-local /24, 169.254.N with N in 1..254: '$SUBNET_SET'" ;;
esac
n=${SUBNET#169.254.}
[ "$n" -ge 1 ] && [ "$n" -le 254 ] || die "GPURUN_NETNS_SUBNET must be 169.254.N with N in 1..254: '$SUBNET_SET'"
CIDR=$SUBNET.0/24
GATEWAY=$SUBNET.1

HOSTS=
i=1
while [ "$i" -le "$NHOSTS" ]; do
    HOSTS="${HOSTS:+$HOSTS }h$i"
    i=$((i + 1))
done

ns_of() { echo "$PREFIX$1"; }              # network namespace of host hN
veth_of() { echo "$PREFIX$1"; }            # its veth end in the root namespace
addr_of() { echo "$SUBNET.$((10 + ${1#h}))"; } # h1 -> .11
holder_pidfile() { echo "$DIR/run/holder-$1.pid"; }
slurmd_pidfile() { echo "$DIR/run/slurmd-$1.pid"; }
netns_idfile() { echo "$DIR/run/netns-$1.id"; } # dev:inode of its network namespace

is_host() {
    for h in $HOSTS; do
        [ "$h" = "$1" ] && return 0
    done
    return 1
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

# holder_alive HOST: prints the pid of the host's namespace holder (a
# "sleep infinity" inside the host's network, UTS and mount namespaces) when
# it lives and sits in this cluster's network namespace for HOST.
holder_alive() {
    f=$(holder_pidfile "$1")
    [ -r "$f" ] || return 1
    pid=$(head -n 1 "$f" 2>/dev/null | tr -dc 0-9)
    [ -n "$pid" ] || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sleep ] || return 1
    # The namespace's identity was recorded when it was made (inside a host
    # /run/netns is detached, so this works from anywhere).
    a=$(stat -L -c %d:%i "/proc/$pid/ns/net" 2>/dev/null) || return 1
    [ "$a" = "$(cat "$(netns_idfile "$1")" 2>/dev/null)" ] || return 1
    echo "$pid"
}

# in_host HOST CMD...: runs CMD inside HOST's namespaces (network, UTS and
# mount, so also its private /tmp and /dev/shm).
in_host() {
    hp=$(holder_alive "$1") || {
        say "host $1 is not running (no namespace holder); is the cluster up?"
        return 1
    }
    shift
    nsenter --target "$hp" --net --uts --mount -- "$@"
}

# running PID: the process exists and is not a zombie.  This machine's
# init reaps exited processes only after a second or two; a zombie has
# already let go of its ports and namespaces, so the teardown moves on and
# waits for the reaping once, at the end (wait_reaped).
running() {
    st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$st" ] && [ "${st%% *}" != Z ]
}

REAP= # every pid the teardown signalled

# stop_daemons PIDFILE NAME [PIDFILE NAME]...: SIGTERM to each live one
# together, wait up to $STOP_WAIT tenths of a second (20 s), then SIGKILL.
STOP_WAIT=200
stop_daemons() {
    pids=
    while [ $# -ge 2 ]; do
        if p=$(pid_alive "$1" "$2"); then
            kill -TERM "$p" 2>/dev/null
            pids="$pids $p:$2"
            REAP="$REAP $p"
        fi
        shift 2
    done
    i=0
    left=
    while [ "$i" -lt "$STOP_WAIT" ]; do
        left=
        for e in $pids; do
            running "${e%%:*}" && left="$left $e"
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

# wait_reaped: until no pid in $REAP is left in /proc, zombies included, so
# that "pgrep" right after "down" shows nothing of ours (3 s at most).
wait_reaped() {
    i=0
    while [ "$i" -lt 30 ]; do
        left=
        for p in $REAP; do
            [ -d "/proc/$p" ] && left=1
        done
        [ -n "$left" ] || return 0
        sleep 0.1
        i=$((i + 1))
    done
}

# kill_netns NS...: every process still inside these network namespaces
# (the holders, step daemons and tasks left over, orted, what "exec"
# started): SIGTERM, up to 1 s, SIGKILL, up to 2 s more.  Only namespaces
# this script made are ever passed here.
netns_pids() {
    for ns in "$@"; do
        [ -e "/run/netns/$ns" ] && ip netns pids "$ns" 2>/dev/null
    done | tr '\n' ' '
}
kill_netns() {
    victims=$(netns_pids "$@")
    [ -n "${victims% }" ] || return 0
    REAP="$REAP $victims"
    # shellcheck disable=SC2086 # a list of pids
    kill -TERM $victims 2>/dev/null
    i=0
    while [ "$i" -lt 30 ]; do
        # (a zombie has left its namespace already)
        left=$(netns_pids "$@")
        [ -n "${left% }" ] || return 0
        # slurmstepd ignores SIGTERM: no use waiting long.
        if [ "$i" -eq 10 ]; then
            REAP="$REAP $left"
            # shellcheck disable=SC2086 # a list of pids
            kill -KILL $left 2>/dev/null
        fi
        sleep 0.1
        i=$((i + 1))
    done
    say "processes left in namespaces $*: $left"
}

node_states() { # "h1 idle" lines as sinfo sees them
    SLURM_CONF=$CONF timeout 5 sinfo -h -N -o '%N %T' 2>/dev/null
}

exports() {
    printf "export SLURM_CONF='%s'\n" "$CONF"
    printf "export GPURUN_NETNS_DIR='%s'\n" "$DIR"
    printf "export GPURUN_NETNS_HOSTS='%s'\n" "$HOSTS"
    printf "export GPURUN_NETNS_RSH_AGENT='%s'\n" "$AGENT"
    printf "export GPURUN_NETNS_HOSTFILE='%s'\n" "$HOSTFILE"
    printf "export GPURUN_NETNS_SCRATCH='%s'\n" "$SCRATCH"
    printf "export OMPI_MCA_plm_rsh_agent='%s'\n" "$AGENT"
    printf "export OMPI_MCA_oob_tcp_if_include='%s'\n" "$CIDR"
    printf "export OMPI_MCA_btl_tcp_if_include='%s'\n" "$CIDR"
}

is_up() {
    [ -f "$DIR/$MARK" ] || return 1
    pid_alive "$MUNGE_PID" munged >/dev/null || return 1
    pid_alive "$CTLD_PID" slurmctld >/dev/null || return 1
    for h in $HOSTS; do
        holder_alive "$h" >/dev/null || return 1
        pid_alive "$(slurmd_pidfile "$h")" slurmd >/dev/null || return 1
    done
    states=$(node_states)
    for h in $HOSTS; do
        case " $(printf '%s\n' "$states" | sed -n "s/^$h //p" | head -n 1) " in
            " idle " | " mixed " | " allocated " | " completing ") ;;
            *) return 1 ;;
        esac
    done
    return 0
}

cmd_status() {
    if is_up; then
        echo "up: $DIR ($(node_states | tr '\n' ',' | sed 's/,$//; s/,/, /g'))"
        return 0
    fi
    echo "down: $DIR"
    return 1
}

# teardown: stop the daemons, empty and delete the namespaces, delete the
# links; what was made is listed in $CREATED.  The folder stays.
teardown() {
    [ -d "$DIR" ] || return 0
    set --
    for h in $HOSTS; do
        set -- "$@" "$(slurmd_pidfile "$h")" slurmd
    done
    stop_daemons "$@" "$CTLD_PID" slurmctld
    # munged last: the Slurm daemons may still sign messages while stopping.
    stop_daemons "$MUNGE_PID" munged
    [ -f "$CREATED" ] || { wait_reaped; return 0; }
    # Their processes first, then the links (a veth pair goes with its root
    # end), then the namespaces.
    # shellcheck disable=SC2046 # names without blanks
    kill_netns $(sed -n 's/^netns //p' "$CREATED")
    for l in $(sed -n 's/^link //p' "$CREATED" | sort -r); do
        ip link show dev "$l" >/dev/null 2>&1 || continue
        ip link del dev "$l" 2>/dev/null || ! ip link show dev "$l" >/dev/null 2>&1 ||
            say "could not delete link $l"
    done
    for ns in $(sed -n 's/^netns //p' "$CREATED"); do
        [ -e "/run/netns/$ns" ] && { ip netns del "$ns" || say "could not delete namespace $ns"; }
    done
    rm -f "$CREATED"
    wait_reaped
}

cmd_down() {
    if [ ! -e "$DIR" ]; then
        for h in $HOSTS; do
            [ -e "/run/netns/$(ns_of "$h")" ] &&
                say "namespace $(ns_of "$h") exists but $DIR does not; not touching it"
        done
        return 0
    fi
    # Only ever remove a folder this script made (or an empty one).
    if [ ! -f "$DIR/$MARK" ] && ! { [ -d "$DIR" ] && [ -z "$(ls -A "$DIR")" ]; }; then
        die "$DIR exists but was not made by this script; not touching it"
    fi
    # Cancel what is still queued or running, so that slurmd ends its steps
    # (waiting 1 s at most); kill_netns gets whatever is left (a host whose
    # slurmd was killed keeps its steps).
    if pid_alive "$CTLD_PID" slurmctld >/dev/null &&
        pid_alive "$MUNGE_PID" munged >/dev/null; then
        jobs=$(SLURM_CONF=$CONF timeout 5 squeue -h -o %i 2>/dev/null)
        if [ -n "$jobs" ]; then
            # shellcheck disable=SC2086 # a list of job ids
            SLURM_CONF=$CONF timeout 5 scancel $jobs >/dev/null 2>&1
            i=0
            while [ "$i" -lt 5 ] &&
                [ -n "$(SLURM_CONF=$CONF timeout 5 squeue -h -o %i -t PD,R,CG 2>/dev/null)" ]; do
                sleep 0.2
                i=$((i + 1))
            done
        fi
    fi
    teardown
    rm -rf "$DIR"
}

# Prints why the cluster cannot be brought up here, or nothing.
missing_prereq() {
    if [ "$(id -u)" != 0 ]; then
        echo "needs root (network namespaces, bridge, slurmd with SlurmUser=root)"
        return
    fi
    for b in ip nsenter unshare setsid stat timeout munged slurmctld slurmd sinfo squeue scancel; do
        command -v "$b" >/dev/null 2>&1 || {
            echo "no $b binary (install iproute2, util-linux, munge, slurmctld, slurmd, slurm-client)"
            return
        }
    done
    if ! command -v mungekey >/dev/null 2>&1 && [ ! -r /dev/urandom ]; then
        echo "no mungekey and no /dev/urandom to make a munge key"
        return
    fi
    # What each host's holder does (start_holder), on a throwaway tmpfs.
    # shellcheck disable=SC2016 # runs in the new namespaces
    if ! err=$(unshare --net --uts --mount --propagation private sh -c '
        echo probe >/proc/sys/kernel/hostname && mount -t tmpfs probe /tmp' 2>&1); then
        echo "cannot make namespaces here (unshare --net --uts --mount, hostname, tmpfs on /tmp: $(echo "$err" | head -n 1))"
        return
    fi
    if ! ip netns list >/dev/null 2>&1; then
        echo "ip netns does not work here"
    fi
}

show_logs() {
    for f in "$MUNGE_DIR/munged.log" "$DIR/log/"*; do
        [ -s "$f" ] || continue
        echo "----- $f (last 40 lines)" >&2
        tail -n 40 "$f" >&2
    done
}

# fail_up MESSAGE: print it and the logs, take down what this run made
# (the folder and its logs stay until "down"), exit 1.
fail_up() {
    say "$*"
    show_logs
    STOP_WAIT=30
    teardown
    say "cluster taken down; logs kept in $DIR/log until \"$0 down\""
    exit 1
}

# no_net MESSAGE: the kernel or container does not let us build the network.
no_net() {
    say "$*"
    STOP_WAIT=30
    teardown
    rm -rf "$DIR"
    exit 77
}

port_busy() { # port_busy PORT: something listens on TCP PORT here (needs ss)
    command -v ss >/dev/null 2>&1 || return 1
    [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]
}

# v6off IFACE [NS]: no IPv6 addresses on the cluster's links, so that nothing
# (Open MPI's oob/btl included) picks an fe80:: address.
v6off() {
    if [ $# -eq 2 ]; then
        nsenter --net="/run/netns/$2" sh -c \
            "[ -w /proc/sys/net/ipv6/conf/$1/disable_ipv6 ] && echo 1 >/proc/sys/net/ipv6/conf/$1/disable_ipv6" \
            2>/dev/null
    else
        [ -w "/proc/sys/net/ipv6/conf/$1/disable_ipv6" ] &&
            echo 1 >"/proc/sys/net/ipv6/conf/$1/disable_ipv6" 2>/dev/null
    fi
    return 0
}

make_network() {
    # Each name goes on the list before it is made: a "down" after an "up"
    # killed at any point removes it (names are checked to be free above).
    echo "link $BRIDGE" >>"$CREATED"
    err=$(ip link add "$BRIDGE" type bridge 2>&1) || no_net "cannot create a bridge: $err"
    v6off "$BRIDGE"
    ip addr add "$GATEWAY/24" dev "$BRIDGE" || fail_up "cannot address the bridge"
    ip link set "$BRIDGE" up || fail_up "cannot bring the bridge up"
    for h in $HOSTS; do
        ns=$(ns_of "$h")
        veth=$(veth_of "$h")
        echo "netns $ns" >>"$CREATED"
        err=$(ip netns add "$ns" 2>&1) || no_net "cannot create network namespace $ns: $err"
        stat -L -c %d:%i "/run/netns/$ns" >"$(netns_idfile "$h")" || fail_up "cannot stat /run/netns/$ns"
        echo "link $veth" >>"$CREATED"
        err=$(ip link add "$veth" type veth peer name eth0 netns "$ns" 2>&1) ||
            no_net "cannot create a veth pair: $err"
        v6off "$veth"
        v6off eth0 "$ns"
        ip link set "$veth" master "$BRIDGE" up &&
            ip -n "$ns" link set lo up &&
            ip -n "$ns" addr add "$(addr_of "$h")/24" dev eth0 &&
            ip -n "$ns" link set eth0 up ||
            fail_up "cannot set up the network of $h"
    done
}

# /etc/hosts as every host sees it (bind-mounted in its mount namespace):
# the hosts and the root namespace by name, over the bridge.
write_hosts() {
    {
        echo "# Written by tests/cluster/netns-cluster.sh"
        echo "127.0.0.1 localhost"
        echo "::1 localhost ip6-localhost ip6-loopback"
        echo "$GATEWAY $ROOTHOST"
        for h in $HOSTS; do
            echo "$(addr_of "$h") $h"
        done
    } >"$DIR/etc/hosts"
}

# start_holder HOST: a "sleep infinity" in the host's network namespace and
# in new UTS and mount namespaces (host name; private /tmp and /dev/shm;
# /etc/hosts above; /run/netns detached).  slurmd, the rsh agent and "exec"
# all enter these namespaces, so each host has one consistent view.
start_holder() {
    pf=$(holder_pidfile "$1")
    # shellcheck disable=SC2016 # the script runs in the new namespaces
    setsid nsenter --net="/run/netns/$(ns_of "$1")" \
        unshare --uts --mount --propagation private sh -c '
            set -e
            echo "$1" >/proc/sys/kernel/hostname
            mount -t tmpfs -o mode=1777 "tmpfs-$1" /tmp
            [ ! -d /dev/shm ] || mount -t tmpfs -o mode=1777 "shm-$1" /dev/shm
            mount --bind "$2" /etc/hosts
            umount -l /run/netns 2>/dev/null || :
            echo $$ >"$3.new"
            mv "$3.new" "$3"
            exec sleep infinity' holder "$1" "$DIR/etc/hosts" "$pf" \
        </dev/null >>"$DIR/log/holder-$1.out" 2>&1 &
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
    if ! munged "$@" </dev/null >>"$DIR/log/munged.out" 2>&1; then
        say "munged refused to start; retrying with --force"
        munged --force "$@" </dev/null >>"$DIR/log/munged.out" 2>&1 || return 1
    fi
    [ -S "$SOCKET" ]
}

write_conf() {
    # The machine as slurmd sees it; every host claims all of it.
    node=$(SLURM_CONF=/dev/null slurmd -C 2>/dev/null | sed -n '/^NodeName=/p' | head -n 1)
    [ -n "$node" ] || node=$(slurmd -C 2>/dev/null | sed -n '/^NodeName=/p' | head -n 1)
    [ -n "$node" ] || return 1
    hw=$(printf '%s\n' "$node" | sed 's/^NodeName=[^ ]* *//')
    CPUS=$(printf '%s\n' "$hw" | sed -n 's/.*CPUs=\([0-9]*\).*/\1/p')
    [ -n "$CPUS" ] || CPUS=1
    nodes=$(echo "$HOSTS" | tr ' ' ',')
    {
        cat <<EOF
# Written by tests/cluster/netns-cluster.sh; removed by "down".
ClusterName=gpurun-netns
# Job ids apart from any other test cluster on this machine (see
# slurm-single.sh): the slurmctld port times 1000.
FirstJobId=$((CTLD_PORT * 1000 + 1))
SlurmctldHost=$ROOTHOST($GATEWAY)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SOCKET
CredType=cred/munge
StateSaveLocation=$DIR/state
# %n: the node name; every host has its own spool, pid and log file.
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
# Each host's /tmp is its own (PMIx makes /tmp/spmix_appdir_<uid>_<job>.<step>
# on every host of a step; a shared /tmp collides).
TmpFS=/tmp
PlugStackConfig=$DIR/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
MpiDefault=pmix
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
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
        for h in $HOSTS; do
            echo "NodeName=$h NodeAddr=$(addr_of "$h") $hw State=UNKNOWN"
        done
        echo "PartitionName=batch Nodes=$nodes Default=YES MaxTime=INFINITE State=UP"
    } >"$CONF"
    : >"$DIR/plugstack.conf"
    for h in $HOSTS; do
        echo "$h slots=$CPUS"
    done >"$HOSTFILE"
}

# The rsh agent: Open MPI runs "AGENT HOST COMMAND-STRING" as it would ssh.
write_agent() {
    cat >"$AGENT" <<EOF
#!/bin/sh
# Written by tests/cluster/netns-cluster.sh: an ssh stand-in for this
# cluster's hosts.  AGENT [-opts] HOST COMMAND...: the words of COMMAND are
# joined with spaces and run by /bin/sh inside HOST's namespaces (network,
# host name, mount: its own /tmp), from \$HOME, with a login-like
# environment (HOME USER LOGNAME SHELL PATH LANG and OMPI_ALLOW_RUN_AS_ROOT*
# pass; nothing else), as ssh would.  HOST: a name ($HOSTS) or its address.
DIR='$DIR'
SUBNET='$SUBNET'
EOF
    cat >>"$AGENT" <<'EOF'
while [ $# -gt 0 ]; do
    case $1 in
        -*) shift ;; # ssh-style flags (no values) are ignored
        *) break ;;
    esac
done
if [ $# -lt 2 ]; then
    echo "usage: $0 HOST COMMAND..." >&2
    exit 255
fi
host=${1#*@}
shift
case $host in
    "$SUBNET".1[1-9]) host=h${host#"$SUBNET".1} ;;
    h[1-9]) ;;
    *) echo "$0: unknown host: $host" >&2; exit 255 ;;
esac
pid=$(head -n 1 "$DIR/run/holder-$host.pid" 2>/dev/null | tr -dc 0-9)
if [ -z "$pid" ] || [ "$(cat "/proc/$pid/comm" 2>/dev/null)" != sleep ] ||
    [ "$(stat -L -c %d:%i "/proc/$pid/ns/net" 2>/dev/null)" != \
        "$(cat "$DIR/run/netns-$host.id" 2>/dev/null)" ]; then
    echo "$0: host $host is not up" >&2
    exit 255
fi
set -- HOME="${HOME:-/}" USER="${USER:-$(id -un)}" LOGNAME="${LOGNAME:-$(id -un)}" \
    SHELL=/bin/sh PATH="$PATH" LANG="${LANG:-C}" \
    ${OMPI_ALLOW_RUN_AS_ROOT:+OMPI_ALLOW_RUN_AS_ROOT=$OMPI_ALLOW_RUN_AS_ROOT} \
    ${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:+OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=$OMPI_ALLOW_RUN_AS_ROOT_CONFIRM} \
    /bin/sh -c 'cd 2>/dev/null || cd /; eval "$1"' "$host" "$*"
exec nsenter --target "$pid" --net --uts --mount -- env -i "$@"
EOF
    chmod 0755 "$AGENT"
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
    for h in $HOSTS; do
        [ ! -e "/run/netns/$(ns_of "$h")" ] ||
            die "network namespace $(ns_of "$h") exists and is not this cluster's; set GPURUN_NETNS_PREFIX"
        ! ip link show dev "$(veth_of "$h")" >/dev/null 2>&1 ||
            die "link $(veth_of "$h") exists and is not this cluster's; set GPURUN_NETNS_PREFIX"
    done
    ! ip link show dev "$BRIDGE" >/dev/null 2>&1 ||
        die "link $BRIDGE exists and is not this cluster's; set GPURUN_NETNS_PREFIX"
    if ip -4 -o addr show 2>/dev/null | grep -qF " inet $SUBNET."; then
        die "addresses in $CIDR are in use here (another cluster?); set GPURUN_NETNS_SUBNET"
    fi
    if port_busy "$CTLD_PORT"; then
        die "TCP port $CTLD_PORT is in use (another cluster?); set GPURUN_NETNS_SLURMCTLD_PORT"
    fi
    ROOTHOST=$(hostname -s 2>/dev/null || hostname 2>/dev/null || cat /proc/sys/kernel/hostname)
    umask 022
    mkdir -p "$DIR" || die "cannot create $DIR"
    : >"$DIR/$MARK"
    mkdir -p "$DIR/state" "$DIR/spool" "$DIR/run" "$DIR/log" "$DIR/etc" "$SCRATCH" ||
        fail_up "cannot create folders in $DIR"
    chmod 1777 "$SCRATCH"
    for h in $HOSTS; do
        mkdir -p "$DIR/spool/$h" || fail_up "cannot create folders in $DIR"
    done
    : >"$CREATED"
    make_network
    write_hosts
    for h in $HOSTS; do
        start_holder "$h"
    done
    start_munged || fail_up "munged did not start"
    write_conf || fail_up "could not write slurm.conf (slurmd -C failed?)"
    write_agent
    i=0
    for h in $HOSTS; do
        while ! holder_alive "$h" >/dev/null; do
            [ "$i" -lt 100 ] || fail_up "host $h: namespace holder did not start"
            sleep 0.1
            i=$((i + 1))
        done
    done
    SLURM_CONF=$CONF
    export SLURM_CONF
    # The daemons fork into the background; their stdio must not hold the
    # caller's pipe (eval "$(... up)" would wait for them).
    slurmctld -f "$CONF" </dev/null >>"$DIR/log/slurmctld.out" 2>&1 ||
        fail_up "slurmctld failed to start"
    for h in $HOSTS; do
        in_host "$h" slurmd -f "$CONF" -N "$h" </dev/null >>"$DIR/log/slurmd-$h.out" 2>&1 ||
            fail_up "slurmd on $h failed to start"
    done
    start=$(date +%s)
    while :; do
        states=$(node_states)
        nidle=$(printf '%s\n' "$states" | grep -c ' idle$')
        [ "$nidle" -eq "$NHOSTS" ] && break
        now=$(date +%s)
        if [ $((now - start)) -ge 2 ]; then
            pid_alive "$CTLD_PID" slurmctld >/dev/null || fail_up "slurmctld exited"
            for h in $HOSTS; do
                pid_alive "$(slurmd_pidfile "$h")" slurmd >/dev/null || fail_up "slurmd on $h exited"
            done
        fi
        if [ $((now - start)) -ge "$UP_TIMEOUT" ]; then
            fail_up "hosts not all idle after ${UP_TIMEOUT}s (sinfo: $(echo "$states" | tr '\n' ' '))"
        fi
        sleep 0.2
    done
    exports
}

cmd_exec() {
    [ $# -ge 2 ] || usage
    is_host "$1" || die "no host $1 (hosts: $HOSTS)"
    h=$1
    shift
    # shellcheck disable=SC2016 # runs inside the host
    in_host "$h" sh -c 'cd "$1" 2>/dev/null || cd /; shift; exec "$@"' sh "$PWD" "$@"
}

# ps HOST: "PID PROGRAM ARGS..." for each process inside HOST but its
# namespace holder (slurmd, step daemons, tasks, orted, ...).  Hosts share
# the machine's pid namespace: pgrep/pkill inside a host see every host, so
# tests look here (or use the pid files in $DIR/run) instead.
cmd_ps() {
    [ $# -eq 1 ] || usage
    is_host "$1" || die "no host $1 (hosts: $HOSTS)"
    hp=$(holder_alive "$1") || die "host $1 is not running"
    for p in $(ip netns pids "$(ns_of "$1")" 2>/dev/null); do
        [ "$p" = "$hp" ] && continue
        args=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || continue
        printf '%s %s %s\n' "$p" "$(cat "/proc/$p/comm" 2>/dev/null)" "${args% }"
    done
}

[ $# -ge 1 ] || usage
case $1 in
    up) [ $# -eq 1 ] || usage; cmd_up ;;
    down) [ $# -eq 1 ] || usage; cmd_down ;;
    status) [ $# -eq 1 ] || usage; cmd_status ;;
    exec) shift; cmd_exec "$@" ;;
    ps) shift; cmd_ps "$@" ;;
    *) usage ;;
esac
