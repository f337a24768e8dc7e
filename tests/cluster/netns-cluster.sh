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
#   GPURUN_SLURM_PLUGSTACK        a plugstack.conf whose lines the cluster's gets
#   GPURUN_NETNS_SHARE            folders under /tmp or /dev/shm (blank-separated,
#                                 absolute) every host sees at their own paths
#                                 through its private /tmp: a build tree there []
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
CREATED=$DIR/created # "netns NAME" / "link NAME" lines, as they are made
AGENT=$DIR/rsh-agent
HOSTFILE=$DIR/hostfile
SCRATCH=$DIR/scratch
BRIDGE=${PREFIX}br
ME=netns-cluster
TORN_DOWN="cluster taken down"
USAGE="up|down|status|exec HOST CMD...|ps HOST"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

dir_refused() {
    case $DIR in
        *[!A-Za-z0-9/._-]*) die "GPURUN_NETNS_DIR may hold only letters, digits and / . _ -: $DIR" ;;
    esac
    case $DIR in
        / | /tmp | /tmp/* | /dev/shm* | /etc* | /usr* | /proc* | /sys* | /run | /var | /home | /root | /srv)
            die "refusing to use $DIR as the state folder (and each host's /tmp is private: keep it outside /tmp)" ;;
    esac
}
check_settings GPURUN_NETNS_DIR "$CTLD_PORT" "$SLURMD_PORT" "$UP_TIMEOUT" "$SLURMD_TIMEOUT" "$NHOSTS"
SHARE=
for p in ${GPURUN_NETNS_SHARE:-}; do
    case $p in
        *[!A-Za-z0-9/._-]* | *..* | *//*) die "GPURUN_NETNS_SHARE: a folder may hold only letters, digits and / . _ -: $p" ;;
        /tmp/?* | /dev/shm/?*) [ -d "$p" ] || die "GPURUN_NETNS_SHARE: not a folder: $p"
            SHARE="$SHARE ${p%/}" ;;
        *) ;; # outside /tmp and /dev/shm every host sees it anyway
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

# kill_netns NS...: every process still inside these network namespaces
# (the holders, step daemons and tasks left over, orted, what "exec"
# started): SIGTERM, up to 1 s, SIGKILL, up to 2 s more.  Only namespaces
# this script made are ever passed here.
netns_pids() {
    for ns in "$@"; do
        [ -e "/run/netns/$ns" ] && ip netns pids "$ns" 2>/dev/null
    done | tr '\n' ' '
}
netns_empty() { # sets $left
    left=$(netns_pids "$@")
    [ -z "${left% }" ]
}
kill_netns() {
    victims=$(netns_pids "$@")
    [ -n "${victims% }" ] || return 0
    REAP="$REAP $victims"
    # shellcheck disable=SC2086 # a list of pids
    kill -TERM $victims 2>/dev/null
    # (a zombie has left its namespace already)
    # slurmstepd ignores SIGTERM: no use waiting long.
    retry 10 0.1 netns_empty "$@" && return 0
    REAP="$REAP $left"
    # shellcheck disable=SC2086 # a list of pids
    kill -KILL $left 2>/dev/null
    retry 20 0.1 netns_empty "$@" && return 0
    say "processes left in namespaces $*: $left"
}

node_states() { # "h1 idle" lines as sinfo sees them
    slurm_cmd 5 sinfo -h -N -o '%N %T' 2>/dev/null
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
    ctl_up || return 1
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

up_detail() { node_states | tr '\n' ',' | sed 's/,$//; s/,/, /g'; }

# teardown: stop the daemons, empty and delete the namespaces, delete the
# links; what was made is listed in $CREATED.  The folder stays.
teardown() {
    [ -d "$DIR" ] || return 0
    set --
    for h in $HOSTS; do
        set -- "$@" "$(slurmd_pidfile "$h")" slurmd
    done
    stop_slurm "$@"
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
    # Cancel what is still queued or running, so that slurmd ends its steps
    # (waiting 1 s at most); kill_netns gets whatever is left (a host whose
    # slurmd was killed keeps its steps).
    down_state 5 0.2 -t PD,R,CG
}

# Prints why the cluster cannot be brought up here, or nothing.
missing_prereq() {
    need_root "network namespaces, bridge, slurmd with SlurmUser=root" &&
        need_bins "iproute2, util-linux, munge, slurmctld, slurmd, slurm-client" \
            ip nsenter unshare setsid stat timeout munged slurmctld slurmd sinfo squeue scancel &&
        need_mungekey || return
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

# no_net MESSAGE: the kernel or container does not let us build the network.
no_net() {
    say "$*"
    STOP_WAIT=30
    teardown
    rm -rf "$DIR"
    exit 77
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
    # The shared folders (GPURUN_NETNS_SHARE) are bound to $DIR/share/HOST/N
    # before the host's own /tmp and /dev/shm hide them, then back at their
    # own paths inside those.
    # shellcheck disable=SC2016 # the script runs in the new namespaces
    setsid nsenter --net="/run/netns/$(ns_of "$1")" \
        unshare --uts --mount --propagation private sh -c '
            set -e
            echo "$1" >/proc/sys/kernel/hostname
            i=0
            for p in $5; do
                i=$((i + 1))
                mkdir -p "$4/$i"
                mount --bind "$p" "$4/$i"
            done
            mount -t tmpfs -o mode=1777 "tmpfs-$1" /tmp
            [ ! -d /dev/shm ] || mount -t tmpfs -o mode=1777 "shm-$1" /dev/shm
            i=0
            for p in $5; do
                i=$((i + 1))
                mkdir -p "$p"
                mount --bind "$4/$i" "$p"
                umount "$4/$i"
            done
            mount --bind "$2" /etc/hosts
            umount -l /run/netns 2>/dev/null || :
            echo $$ >"$3.new"
            mv "$3.new" "$3"
            exec sleep infinity' holder "$1" "$DIR/etc/hosts" "$pf" "$DIR/share/$1" "$SHARE" \
        </dev/null >>"$DIR/log/holder-$1.out" 2>&1 &
}

write_conf() {
    # The machine as slurmd sees it; every host claims all of it.
    slurmd_node || return 1
    hw=$(printf '%s\n' "$node" | sed 's/^NodeName=[^ ]* *//')
    CPUS=$(printf '%s\n' "$hw" | sed -n 's/.*CPUs=\([0-9]*\).*/\1/p')
    [ -n "$CPUS" ] || CPUS=1
    nodes=$(echo "$HOSTS" | tr ' ' ',')
    {
        conf_head gpurun-netns
        cat <<EOF
SlurmctldHost=$ROOTHOST($GATEWAY)
# %n: the node name; every host has its own spool, pid and log file.
SlurmdSpoolDir=$DIR/spool/%n
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmdLogFile=$DIR/log/slurmd-%n.log
# Each host's /tmp is its own (PMIx makes /tmp/spmix_appdir_<uid>_<job>.<step>
# on every host of a step; a shared /tmp collides).
TmpFS=/tmp
EOF
        conf_common
        # A test's SPANK plugins (tests/cli-pyxis-multinode.sh: a fake pyxis).
        if [ -n "${GPURUN_SLURM_PLUGSTACK:-}" ]; then
            cat "$GPURUN_SLURM_PLUGSTACK" >"$DIR/plugstack.conf"
        fi
        for h in $HOSTS; do
            echo "NodeName=$h NodeAddr=$(addr_of "$h") $hw State=UNKNOWN"
        done
        echo "PartitionName=batch Nodes=$nodes Default=YES MaxTime=INFINITE State=UP"
    } >"$CONF"
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

holders_up() { # sets $h to the first host whose holder is not (yet) there
    for h in $HOSTS; do
        holder_alive "$h" >/dev/null || return 1
    done
}
all_idle() {
    states=$(node_states)
    [ "$(printf '%s\n' "$states" | grep -c ' idle$')" -eq "$NHOSTS" ]
}
daemons_alive() {
    [ "$1" -ge 2 ] || return 0
    exited_if_dead "$CTLD_PID" slurmctld slurmctld
    for h in $HOSTS; do
        exited_if_dead "$(slurmd_pidfile "$h")" slurmd "slurmd on $h"
    done
}
not_idle() { echo "hosts not all idle after ${UP_TIMEOUT}s (sinfo: $(echo "$states" | tr '\n' ' '))"; }

cmd_up() {
    up_begin
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
    set -- state spool run log etc scratch
    for h in $HOSTS; do
        set -- "$@" "spool/$h"
    done
    make_state "$@"
    chmod 1777 "$SCRATCH"
    : >"$CREATED"
    make_network
    write_hosts
    for h in $HOSTS; do
        start_holder "$h"
    done
    start_munged || fail_up "munged did not start"
    write_conf || fail_up "could not write slurm.conf (slurmd -C failed?)"
    write_agent
    retry 100 0.1 holders_up || fail_up "host $h: namespace holder did not start"
    start_slurmctld
    for h in $HOSTS; do
        start_daemon "slurmd-$h" "slurmd on $h" in_host "$h" slurmd -f "$CONF" -N "$h"
    done
    wait_up 0.2 all_idle daemons_alive not_idle
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
