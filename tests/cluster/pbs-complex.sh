#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A one-node OpenPBS complex on this machine for the test suite: its data
# service (PostgreSQL), pbs_comm, pbs_server, pbs_sched and pbs_mom, in a
# network namespace of its own.  PBS refuses a loopback address for its host
# ("Could not find any usable IP address"), so the namespace has a veth pair
# with a link-local address, its own host name (a UTS namespace) and its own
# /etc/hosts naming it (a mount namespace, which also gives PostgreSQL a
# socket folder of its own).  The mount namespace also has a user of its own
# (GPURUN_PBS_USER, uid GPURUN_PBS_UID, home under the state folder: in the
# namespace's /etc/passwd and /etc/group, copies of the machine's plus that
# line) and a set-uid pbs_iff, so that jobs run as a user as on a real
# cluster: pbs_mom does not track root's processes (it skips uid 0 when it
# reads /proc), so a root job looks gone at its first signal.  Everything else lives in the state folder:
# PBS_HOME, pbs.conf (PBS_CONF_FILE: /etc/pbs.conf is neither read nor
# written), the logs.  Nothing under /etc is changed.
#
#   tests/cluster/pbs-complex.sh start      build it; print exports for eval
#   tests/cluster/pbs-complex.sh stop       remove exactly what start made
#                                           (after a failed start too)
#   tests/cluster/pbs-complex.sh status     exit 0 when the node is free or busy
#   tests/cluster/pbs-complex.sh run CMD... run CMD inside the complex (its
#                                           namespaces, PBS_CONF_FILE, PATH)
#
# start exits 77 (with a one-line reason on stderr) when a prerequisite is
# missing: root, OpenPBS in $GPURUN_PBS_EXEC (scripts/install-pbs.sh), or
# namespaces here.  The way it runs PBS is ../shared/vendor/README.md's.
#
# Environment:
#   GPURUN_PBS_DIR   state folder, absolute, outside /tmp or not: each
#                    complex has its own, and its names (namespace, host)
#                    come from it, so two complexes do not clash  (required)
#   GPURUN_PBS_EXEC  the OpenPBS installation                  [/opt/pbs]
#   GPURUN_PBS_UP_TIMEOUT  seconds start waits for the node     [60]
#   GPURUN_PBS_UID   uid (and gid) of the complex's user, free on this
#                    machine                                    [4747]
# start also exports GPURUN_PBS_USER and GPURUN_PBS_USER_HOME (owned by it).
set -u

DIR=${GPURUN_PBS_DIR:-}
DIR=${DIR%/}
EXEC=${GPURUN_PBS_EXEC:-/opt/pbs}
UP_TIMEOUT=${GPURUN_PBS_UP_TIMEOUT:-60}
MARK=.gpurun-pbs-complex
CREATED=$DIR/created # "netns NAME" lines, as they are made
HOLDER=$DIR/run/holder.pid
NSID=$DIR/run/netns.id # dev:inode of its network namespace
CONF=$DIR/pbs.conf
HOME_DIR=$DIR/home
USER_NAME=gpurunpbs
USER_UID=${GPURUN_PBS_UID:-4747}
USER_HOME=$DIR/userhome
ADDR=169.254.88.2 # inside the namespace only: every complex may use it
ME=pbs-complex
USAGE="start|stop|status|run CMD..."
# lib.sh's Slurm names (CONF CTLD_PORT ...) are unused here; its helpers
# (say, die, retry, running, need_root, need_bins, make_state) are.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

dir_refused() {
    case $DIR in
        /*) ;;
        *) die "GPURUN_PBS_DIR must be an absolute path: '$DIR'" ;;
    esac
    case $DIR in
        *[!A-Za-z0-9/._-]* | *..*) die "GPURUN_PBS_DIR may hold only letters, digits and / . _ -: $DIR" ;;
    esac
    case $DIR in
        / | /tmp | /var/tmp | /dev/shm* | /etc* | /usr* | /proc* | /sys* | /run* | /var | /home | /root | /srv | /opt*)
            die "refusing to use $DIR as the state folder" ;;
    esac
    [ ${#DIR} -le 80 ] || die "state folder path too long (over 80 bytes): $DIR"
}
[ -n "$DIR" ] || die "set GPURUN_PBS_DIR to the complex's state folder"
dir_refused
case $UP_TIMEOUT in '' | *[!0-9]*) die "GPURUN_PBS_UP_TIMEOUT: not a number: $UP_TIMEOUT" ;; esac

# Names from the folder: a leftover complex keeps its own, another folder
# gets others.
ID=$(printf '%s' "$DIR" | cksum | cut -d' ' -f1)
NS=gpurun-pbs-$ID
HOST=pbs$(printf '%s' "$ID" | cut -c1-6)

# holder_alive: prints the pid of the namespace holder (a "sleep infinity"
# in the complex's network, UTS and mount namespaces) when it lives and sits
# in the namespace this folder made.
holder_alive() {
    [ -r "$HOLDER" ] || return 1
    pid=$(head -n 1 "$HOLDER" 2>/dev/null | tr -dc 0-9)
    [ -n "$pid" ] || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sleep ] || return 1
    a=$(stat -L -c %d:%i "/proc/$pid/ns/net" 2>/dev/null) || return 1
    [ "$a" = "$(cat "$NSID" 2>/dev/null)" ] || return 1
    echo "$pid"
}

# in_complex CMD...: CMD inside the holder's namespaces, with the complex's
# pbs.conf, PBS on PATH before the system's (not a pyenv python: PBS's hooks
# and tools run /usr/bin/python3 anyway).
in_complex() {
    hp=$(holder_alive) || {
        say "the complex is not running (no namespace holder); start it first"
        return 1
    }
    nsenter --target "$hp" --net --uts --mount -- env PBS_CONF_FILE="$CONF" \
        PATH="$EXEC/bin:$EXEC/sbin:/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin" "$@"
}

# pbs_cmd SECONDS CMD...: a PBS command inside the complex, bounded.
pbs_cmd() {
    cmd_secs=$1
    shift
    in_complex timeout "$cmd_secs" "$@"
}

ns_pids() { [ -e "/run/netns/$NS" ] && ip netns pids "$NS" 2>/dev/null | tr '\n' ' '; }
ns_empty() { # sets $left
    left=$(ns_pids)
    [ -z "${left% }" ]
}

missing_prereq() {
    need_root "network namespaces; PBS runs its daemons as root" &&
        need_bins "iproute2, util-linux" ip nsenter unshare setsid stat timeout cksum || return
    for b in sbin/pbs_comm sbin/pbs_server sbin/pbs_sched sbin/pbs_mom bin/qmgr bin/qsub libexec/pbs_habitat; do
        [ -x "$EXEC/$b" ] || {
            echo "no OpenPBS in $EXEC ($EXEC/$b is missing: scripts/install-pbs.sh builds it)"
            return
        }
    done
    getent passwd postgres >/dev/null 2>&1 || {
        echo "no postgres user (PBS's data service runs as it: apt-get install postgresql)"
        return
    }
    if ! err=$(unshare --net --uts --mount --propagation private sh -c '
        echo probe >/proc/sys/kernel/hostname && mount --bind /etc/hosts /etc/hosts' 2>&1); then
        echo "cannot make namespaces here (unshare --net --uts --mount, hostname, bind mount: $(echo "$err" | head -n 1))"
        return
    fi
    if getent passwd "$USER_UID" >/dev/null 2>&1 || getent group "$USER_UID" >/dev/null 2>&1; then
        echo "uid or gid $USER_UID is taken on this machine: set GPURUN_PBS_UID to a free one for the complex's user"
        return
    fi
    ip netns list >/dev/null 2>&1 || echo "ip netns does not work here"
}

# The namespace: a veth pair inside it (both ends: nothing is added to the
# machine's own network), the address on one end.
make_network() {
    echo "netns $NS" >>"$CREATED" # listed before it is made: stop removes it
    err=$(ip netns add "$NS" 2>&1) || { say "cannot create network namespace $NS: $err"; stop_all; exit 77; }
    stat -L -c %d:%i "/run/netns/$NS" >"$NSID" || fail_start "cannot stat /run/netns/$NS"
    err=$(ip -n "$NS" link add pbs0 type veth peer name pbs1 2>&1) ||
        { say "cannot create a veth pair: $err"; stop_all; exit 77; }
    ip -n "$NS" link set lo up && ip -n "$NS" link set pbs1 up &&
        ip -n "$NS" addr add "$ADDR/24" dev pbs0 && ip -n "$NS" link set pbs0 up ||
        fail_start "cannot set up the namespace's network"
}

# The holder: the host name, /etc/hosts naming it, PostgreSQL's socket
# folder (/run/postgresql) the complex's own, /run/netns detached.
start_holder() {
    # shellcheck disable=SC2016 # runs in the new namespaces
    setsid nsenter --net="/run/netns/$NS" unshare --uts --mount --propagation private sh -c '
        set -e
        echo "$1" >/proc/sys/kernel/hostname
        mount --bind "$2/etc/hosts" /etc/hosts
        mount --bind "$2/etc/passwd" /etc/passwd
        mount --bind "$2/etc/group" /etc/group
        mount --bind "$2/etc/pbs_iff" "$4/sbin/pbs_iff"
        mkdir -p /run/postgresql
        mount --bind "$2/pgrun" /run/postgresql
        umount -l /run/netns 2>/dev/null || :
        echo $$ >"$3.new"
        mv "$3.new" "$3"
        exec sleep infinity' holder "$HOST" "$DIR" "$HOLDER" "$EXEC" </dev/null >>"$DIR/log/holder.out" 2>&1 &
}

write_files() {
    {
        echo "# Written by tests/cluster/pbs-complex.sh"
        echo "127.0.0.1 localhost"
        echo "$ADDR $HOST"
    } >"$DIR/etc/hosts"
    # The complex's user, as a site's users are: known to every host.
    { cat /etc/passwd; echo "$USER_NAME:x:$USER_UID:$USER_UID:gpurun PBS test user:$USER_HOME:/bin/sh"; } \
        >"$DIR/etc/passwd"
    { cat /etc/group; echo "$USER_NAME:x:$USER_UID:"; } >"$DIR/etc/group"
    chmod 0644 "$DIR/etc/passwd" "$DIR/etc/group"
    mkdir -p "$USER_HOME" && chown "$USER_UID:$USER_UID" "$USER_HOME" && chmod 0755 "$USER_HOME"
    # qsub as a user authenticates through pbs_iff, which binds a reserved
    # port: set-uid root, as PBS's own post-install makes it.
    cp "$EXEC/sbin/pbs_iff" "$DIR/etc/pbs_iff" && chmod 4755 "$DIR/etc/pbs_iff"
    cat >"$CONF" <<EOF
PBS_EXEC=$EXEC
PBS_HOME=$HOME_DIR
PBS_SERVER=$HOST
PBS_START_SERVER=1
PBS_START_SCHED=1
PBS_START_COMM=1
PBS_START_MOM=1
PBS_MOM_NODE_NAME=$HOST
PBS_CORE_LIMIT=unlimited
PBS_SCP=/usr/bin/scp
PBS_TMPDIR=$DIR/jobtmp
EOF
    chown postgres:postgres "$DIR/pgrun" && chmod 2775 "$DIR/pgrun"
    chmod 1777 "$DIR/jobtmp"
}

# The jobs' environment (PBS_HOME/pbs_environment, which pbs_habitat
# creates): PBS's commands on PATH and this complex's pbs.conf, so that qstat
# works inside a job; the complex runs root's jobs only (acl_roots), and
# Open MPI runs as root only when told so.
job_environment() {
    envf=$HOME_DIR/pbs_environment
    grep -v '^PATH=\|^PBS_CONF_FILE=\|^OMPI_ALLOW_RUN_AS_ROOT' "$envf" 2>/dev/null >"$envf.new"
    {
        echo "PATH=$EXEC/bin:/usr/local/bin:/usr/bin:/bin"
        echo "PBS_CONF_FILE=$CONF"
        echo "OMPI_ALLOW_RUN_AS_ROOT=1"
        echo "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
    } >>"$envf.new"
    mv "$envf.new" "$envf"
}

lockpid() { # lockpid FILE PROGRAM: a PBS daemon's pid from its lock file, if it runs
    [ -r "$1" ] || return 1
    lp=$(head -n 1 "$1" 2>/dev/null | tr -dc 0-9)
    [ -n "$lp" ] && running "$lp" || return 1
    case $(cat "/proc/$lp/comm" 2>/dev/null) in "$2"*) echo "$lp" ;; *) return 1 ;; esac
}

node_state() { pbs_cmd 10 pbsnodes "$HOST" 2>/dev/null | sed -n 's/^ *state = //p' | head -n 1; }
node_usable() {
    st=$(node_state)
    case $st in free | job-busy) return 0 ;; *) return 1 ;; esac
}

qmgr_c() {
    out=$(pbs_cmd 20 qmgr -c "$1" 2>&1) || fail_start "qmgr -c '$1' failed: $out"
}

configure_server() {
    qmgr_c "set server acl_roots += root"
    qmgr_c "set server flatuid = True"
    qmgr_c "set server scheduling = True"
    qmgr_c "set server job_history_enable = True"
    # The scheduler runs every 2 s, not every 10 minutes: tests wait less.
    qmgr_c "set sched scheduler_iteration = 2"
    pbs_cmd 20 qmgr -c "list queue workq" >/dev/null 2>&1 ||
        qmgr_c "create queue workq queue_type = execution"
    qmgr_c "set queue workq enabled = True"
    qmgr_c "set queue workq started = True"
    # Between a walltime kill's SIGTERM and its SIGKILL, gpurun stops the
    # ranks within the template's stop_grace (30 s by default) and writes
    # the record: PBS's default kill_delay, 10 s, can cut that short on a
    # loaded node.  Sites running gpurun set it as long as their grace.
    qmgr_c "set queue workq kill_delay = 60"
    qmgr_c "set server default_queue = workq"
    pbs_cmd 20 qmgr -c "list node $HOST" >/dev/null 2>&1 || qmgr_c "create node $HOST"
}

fail_start() {
    say "$*"
    for f in "$DIR/log/"* "$HOME_DIR/server_logs/"* "$HOME_DIR/mom_logs/"* "$HOME_DIR/spool/db_start.log"; do
        [ -s "$f" ] || continue
        echo "----- $f (last 30 lines)" >&2
        tail -n 30 "$f" >&2
    done
    stop_all
    say "complex stopped; run \"$0 stop\" to remove $DIR"
    exit 1
}

start_daemons() {
    # pbs_habitat makes PBS_HOME and the data service's database.
    in_complex "$EXEC/libexec/pbs_habitat" >"$DIR/log/habitat.out" 2>&1 ||
        fail_start "pbs_habitat failed: $(tail -n 3 "$DIR/log/habitat.out" | tr '\n' ' ')"
    job_environment
    for d in pbs_comm pbs_mom pbs_sched; do
        in_complex "$EXEC/sbin/$d" </dev/null >"$DIR/log/$d.out" 2>&1 ||
            fail_start "$d did not start: $(tail -n 3 "$DIR/log/$d.out" | tr '\n' ' ')"
    done
    # pbs_habitat created the server's database (and ran the server once
    # to fill it): a plain start uses it.  "-t create" here would make the
    # server stop again at once.
    in_complex "$EXEC/sbin/pbs_server" </dev/null >"$DIR/log/pbs_server.out" 2>&1 ||
        fail_start "pbs_server did not start: $(tail -n 3 "$DIR/log/pbs_server.out" | tr '\n' ' ')"
    retry 100 0.2 server_answers || fail_start "pbs_server does not answer (qstat -B)"
}
server_answers() { pbs_cmd 5 qstat -B >/dev/null 2>&1; }

exports() {
    printf "export GPURUN_PBS_DIR='%s'\n" "$DIR"
    printf "export GPURUN_PBS_HOST='%s'\n" "$HOST"
    printf "export GPURUN_PBS_CONF='%s'\n" "$CONF"
    printf "export GPURUN_PBS_USER='%s'\n" "$USER_NAME"
    printf "export GPURUN_PBS_UID='%s'\n" "$USER_UID"
    printf "export GPURUN_PBS_USER_HOME='%s'\n" "$USER_HOME"
}

is_up() {
    [ -f "$DIR/$MARK" ] && holder_alive >/dev/null && node_usable
}

cmd_start() {
    reason=$(missing_prereq)
    if [ -n "$reason" ]; then
        say "$reason"
        exit 77
    fi
    if is_up; then
        exports
        exit 0
    fi
    [ ! -e "$DIR" ] || cmd_stop || exit 1
    [ ! -e "/run/netns/$NS" ] || die "network namespace $NS exists and is not this folder's"
    make_state state run log etc pgrun jobtmp
    chmod 0755 "$DIR" # the data service runs as postgres, under it
    : >"$CREATED"
    make_network
    write_files
    start_holder
    retry 100 0.1 holder_alive >/dev/null || fail_start "the namespace holder did not start"
    start_daemons
    configure_server
    retry "$((UP_TIMEOUT * 5))" 0.2 node_usable || fail_start "node $HOST not free after ${UP_TIMEOUT}s (state: $st)"
    exports
}

# stop_all: the server (qterm), the data service, the other daemons by
# their lock files, then whatever is left in the namespace (jobs, postgres),
# then the namespace.  The folder stays.
stop_all() {
    [ -d "$DIR" ] || return 0
    if holder_alive >/dev/null; then
        pbs_cmd 20 qterm -t quick >/dev/null 2>&1
        retry 50 0.2 server_gone
        pbs_cmd 30 "$EXEC/sbin/pbs_dataservice" stop >/dev/null 2>&1
    fi
    for l in mom_priv/mom.lock sched_priv/sched.lock server_priv/comm.lock server_priv/server.lock; do
        p=$(lockpid "$HOME_DIR/$l" pbs_) && kill -TERM "$p" 2>/dev/null
    done
    if [ -f "$CREATED" ]; then
        victims=$(ns_pids)
        if [ -n "${victims% }" ]; then
            # shellcheck disable=SC2086 # a list of pids
            kill -TERM $victims 2>/dev/null
            retry 30 0.1 ns_empty || {
                # shellcheck disable=SC2086
                kill -KILL $left 2>/dev/null
                retry 30 0.1 ns_empty || say "processes left in namespace $NS: $left"
            }
        fi
        for ns in $(sed -n 's/^netns //p' "$CREATED"); do
            [ -e "/run/netns/$ns" ] && { ip netns del "$ns" || say "could not delete namespace $ns"; }
        done
        rm -f "$CREATED"
    fi
}
server_gone() { ! lockpid "$HOME_DIR/server_priv/server.lock" pbs_ >/dev/null; }

cmd_stop() {
    if [ ! -e "$DIR" ]; then
        [ ! -e "/run/netns/$NS" ] || say "namespace $NS exists but $DIR does not; not touching it"
        return 0
    fi
    if [ ! -f "$DIR/$MARK" ] && [ -n "$(ls -A "$DIR")" ]; then
        die "$DIR exists but was not made by this script; not touching it"
    fi
    stop_all
    rm -rf "$DIR"
}

cmd_status() {
    if is_up; then
        echo "up: $DIR (node $HOST $(node_state))"
        return 0
    fi
    echo "down: $DIR"
    return 1
}

cmd_run() {
    [ $# -ge 1 ] || usage
    # shellcheck disable=SC2016 # runs inside the complex
    in_complex sh -c 'cd "$1" 2>/dev/null || cd /; shift; exec "$@"' sh "$PWD" "$@"
}

[ $# -ge 1 ] || usage
case $1 in
    start) [ $# -eq 1 ] || usage; cmd_start ;;
    stop) [ $# -eq 1 ] || usage; cmd_stop ;;
    status) [ $# -eq 1 ] || usage; cmd_status ;;
    run) shift; cmd_run "$@" ;;
    *) usage ;;
esac
