#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gpurun's start-up time on several hosts: `gpurun run` of a trivial job
# (examples/hello, no work) on 1, 2 and 3 hosts of the netns test cluster
# (tests/cluster/NETNS.md) against a bare `srun` and a bare `mpirun` of the
# same program on the same hosts, interleaved in one run (these machines are
# noisy), as medians and ratios.
#
#   srun:   inside one allocation (salloc --no-shell) held for the whole run;
#           bare: srun --mpi=pmix --cpu-bind=none -N H --ntasks-per-node R hello
#           gpurun: gpurun run job.conf (launcher srun, nodes = H)
#   mpirun: outside Slurm, a host list of H hosts, remote hosts through the
#           cluster's rsh agent;
#           bare: mpirun --hostfile hosts.H -np H*R --map-by ppr:R:node --bind-to none hello
#           gpurun: gpurun run job.conf (launcher mpirun, same host list)
#
# Every command is started and timed on the first host, h1, by one driver
# script (no per-run cost of entering the host).  Uses the cluster of the
# environment when it is up ($GPURUN_NETNS_DIR and the exports of
# `netns-cluster.sh up`), else brings up one of its own and takes it down.
#
# GPURUN_COMPARE=/path/to/another/gpurun (e.g. a build of main) times that
# build too, in the same interleaved runs, with its own results folder, so
# that a change is seen against its parent under the same load.
#
# Usage: bench/startup.sh [REPEATS [RANKS_PER_NODE]]      (7, 1)
# Needs root (the cluster), Slurm, Open MPI and a build (GPURUN, HELLO).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
GPURUN=${GPURUN:-$top/build/launcher/gpurun}
HELLO=${HELLO:-$top/build/examples/hello/hello}
CMP=${GPURUN_COMPARE:-}
repeats=${1:-7}
rpn=${2:-1}
case "$repeats$rpn" in *[!0-9]* | '') echo "usage: $0 [REPEATS [RANKS_PER_NODE]]" >&2; exit 2 ;; esac
[ "$repeats" -ge 1 ] && [ "$rpn" -ge 1 ] || { echo "usage: $0 [REPEATS [RANKS_PER_NODE]]" >&2; exit 2; }
[ -x "$GPURUN" ] && [ -x "$HELLO" ] || { echo "build first (tests/run-all.sh builds build/)" >&2; exit 3; }
[ -z "$CMP" ] || [ -x "$CMP" ] || { echo "GPURUN_COMPARE=$CMP is not a program" >&2; exit 3; }
case "$GPURUN $HELLO $CMP" in
    /tmp/* | *" /tmp/"*) echo "the build must be outside /tmp: each host of the cluster has its own /tmp" >&2; exit 3 ;;
esac
for b in mpirun srun salloc scancel; do
    command -v "$b" >/dev/null 2>&1 || { echo "$b not found (Debian: openmpi-bin, slurm-client)" >&2; exit 3; }
done
cluster=$top/tests/cluster/netns-cluster.sh
own=
salloc_id=
tmp=$(mktemp -d)
cleanup() {
    [ -z "$salloc_id" ] || scancel "$salloc_id" >/dev/null 2>&1 || :
    [ -z "${W:-}" ] || rm -rf "$W/startup-bench.$$"
    [ -z "$own" ] || "$cluster" down >/dev/null 2>&1 || :
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -n "${GPURUN_NETNS_DIR:-}" ] && [ -n "${GPURUN_NETNS_SCRATCH:-}" ] && [ -n "${SLURM_CONF:-}" ] &&
    "$cluster" status >/dev/null 2>&1; then
    echo "using the netns cluster in $GPURUN_NETNS_DIR"
else
    # One of our own, apart from the default cluster and the test suite's.
    export GPURUN_NETNS_DIR=/srv/gpurun-bench-$$
    export GPURUN_NETNS_PREFIX=gbn$$-
    export GPURUN_NETNS_SUBNET=169.254.$((100 + ($$ + 75) % 150))
    export GPURUN_NETNS_SLURMCTLD_PORT=$((17990 + $$ % 4 * 2))
    export GPURUN_NETNS_SLURMD_PORT=$((GPURUN_NETNS_SLURMCTLD_PORT + 1))
    own=1
    rc=0
    "$cluster" up >"$tmp/exports" 2>"$tmp/up.err" || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "the netns cluster did not come up (exit $rc): $(tail -3 "$tmp/up.err")" >&2
        [ "$rc" -eq 77 ] && exit 3
        exit 1
    fi
    . "$tmp/exports"
    echo "brought up a netns cluster in $GPURUN_NETNS_DIR"
fi
unset GPURUN_TOPOLOGY SLURM_JOB_ID SLURM_JOBID
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# PMIx's shared-memory data store segfaults Open MPI's ranks under srun now
# and then (openpmix/openpmix#1114; cli-multinode sets the same): seen once
# as hello killed by signal 11 on h2, 3 hosts, which ends the whole run.
export PMIX_MCA_gds=hash
# More ranks than cores on this machine: let waiting ranks yield (both sides).
export OMPI_MCA_mpi_yield_when_idle=1
W=$GPURUN_NETNS_SCRATCH
B=$W/startup-bench.$$
mkdir -p "$B"
nhosts=$(echo "$GPURUN_NETNS_HOSTS" | wc -w)
maxh=3
[ "$nhosts" -ge 3 ] || maxh=$nhosts

# One allocation of every host for the srun runs, held for the whole run.
salloc_id=$(salloc -N "$maxh" --ntasks-per-node="$rpn" --no-shell 2>&1 |
    sed -n 's/.*Granted job allocation \([0-9][0-9]*\).*/\1/p')
[ -n "$salloc_id" ] || { echo "salloc -N $maxh --ntasks-per-node=$rpn --no-shell failed" >&2; exit 1; }

h=1
while [ "$h" -le "$maxh" ]; do
    i=1
    while [ "$i" -le "$h" ]; do
        echo "h$i slots=$rpn"
        i=$((i + 1))
    done >"$B/hosts.$h"
    for l in srun mpirun; do
        cat >"$B/$l$h.conf" <<JOB
job = "$l$h"
command = "$HELLO"
launcher = "$l"
nodes = $h
ranks_per_node = $rpn
gpus_per_rank = 0
threads_per_rank = 1
timeout = "2m"
results = "$B/results"
JOB
    done
    h=$((h + 1))
done

# The driver, run inside h1: every start timed there, interleaved.
cat >"$B/driver.sh" <<'DRIVER'
#!/bin/sh
# driver.sh DIR REPEATS RPN MAXH GPURUN HELLO ALLOCATION [GPURUN_COMPARE]:
# prints "WHAT HOSTS MICROSECONDS" lines; exits 1 at the first failed start.
set -u
B=$1 repeats=$2 rpn=$3 maxh=$4 G=$5 HELLO=$6 alloc=$7 C=${8:-}
now() { date +%s%N; }
t() { # t WHAT HOSTS CMD...: run CMD, print its wall time
    what=$1 th=$2
    shift 2
    t0=$(now)
    if ! "$@" >"$B/last.out" 2>&1; then
        echo "FAILED $what $th: $*" >&2
        tail -5 "$B/last.out" >&2
        exit 1
    fi
    echo "$what $th $((($(now) - t0) / 1000))"
}
r=0
while [ "$r" -lt "$repeats" ]; do
    h=1
    while [ "$h" -le "$maxh" ]; do
        n=$((h * rpn))
        # Alternate the order each repeat: neither side always runs first.
        if [ $((r % 2)) -eq 0 ]; then
            t srun "$h" env SLURM_JOB_ID="$alloc" srun --mpi=pmix --cpu-bind=none -N "$h" -n "$n" --ntasks-per-node="$rpn" "$HELLO"
            t gpurun-srun "$h" env SLURM_JOB_ID="$alloc" "$G" run "$B/srun$h.conf" --quiet
            t mpirun "$h" mpirun --hostfile "$B/hosts.$h" -np "$n" --map-by "ppr:$rpn:node" --bind-to none "$HELLO"
            t gpurun-mpirun "$h" env OMPI_MCA_orte_default_hostfile="$B/hosts.$h" "$G" run "$B/mpirun$h.conf" --quiet
            if [ -n "$C" ]; then
                t cmp-srun "$h" env SLURM_JOB_ID="$alloc" "$C" run "$B/srun$h.conf" --quiet --results "$B/results-cmp"
                t cmp-mpirun "$h" env OMPI_MCA_orte_default_hostfile="$B/hosts.$h" "$C" run "$B/mpirun$h.conf" --quiet --results "$B/results-cmp"
            fi
        else
            if [ -n "$C" ]; then
                t cmp-mpirun "$h" env OMPI_MCA_orte_default_hostfile="$B/hosts.$h" "$C" run "$B/mpirun$h.conf" --quiet --results "$B/results-cmp"
                t cmp-srun "$h" env SLURM_JOB_ID="$alloc" "$C" run "$B/srun$h.conf" --quiet --results "$B/results-cmp"
            fi
            t gpurun-mpirun "$h" env OMPI_MCA_orte_default_hostfile="$B/hosts.$h" "$G" run "$B/mpirun$h.conf" --quiet
            t mpirun "$h" mpirun --hostfile "$B/hosts.$h" -np "$n" --map-by "ppr:$rpn:node" --bind-to none "$HELLO"
            t gpurun-srun "$h" env SLURM_JOB_ID="$alloc" "$G" run "$B/srun$h.conf" --quiet
            t srun "$h" env SLURM_JOB_ID="$alloc" srun --mpi=pmix --cpu-bind=none -N "$h" -n "$n" --ntasks-per-node="$rpn" "$HELLO"
        fi
        h=$((h + 1))
    done
    r=$((r + 1))
done
DRIVER
echo "timing: $repeats repeats, $rpn rank(s) per host, hosts 1..$maxh (allocation $salloc_id) ..."
cd "$W"
"$cluster" exec h1 sh "$B/driver.sh" "$B" "$repeats" "$rpn" "$maxh" "$GPURUN" "$HELLO" "$salloc_id" "$CMP" >"$tmp/times"

median() { # median WHAT HOSTS: in ms
    awk -v w="$1" -v h="$2" '$1 == w && $2 == h { print $3 }' "$tmp/times" | sort -n |
        awk '{ a[NR] = $1 } END { if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) / 1000 }'
}
echo
echo "Start-up of a trivial job (hello, $rpn rank(s) per host): median wall time of $repeats interleaved runs, ms"
printf '%-6s %-6s %10s %13s %7s %10s %15s %7s\n' hosts ranks srun "gpurun(srun)" ratio mpirun "gpurun(mpirun)" ratio
h=1
while [ "$h" -le "$maxh" ]; do
    s=$(median srun "$h")
    gs=$(median gpurun-srun "$h")
    m=$(median mpirun "$h")
    gm=$(median gpurun-mpirun "$h")
    awk -v h="$h" -v n="$((h * rpn))" -v s="$s" -v gs="$gs" -v m="$m" -v gm="$gm" 'BEGIN {
        printf "%-6d %-6d %10.0f %13.0f %6.2fx %10.0f %15.0f %6.2fx\n", h, n, s, gs, gs / s, m, gm, gm / m }'
    h=$((h + 1))
done
echo
echo "gpurun adds (median gpurun - median bare), ms:"
h=1
while [ "$h" -le "$maxh" ]; do
    awk -v h="$h" -v s="$(median srun "$h")" -v gs="$(median gpurun-srun "$h")" \
        -v m="$(median mpirun "$h")" -v gm="$(median gpurun-mpirun "$h")" 'BEGIN {
        printf "  %d host%s: srun %+.0f, mpirun %+.0f\n", h, h == 1 ? " " : "s", gs - s, gm - m }'
    h=$((h + 1))
done
if [ -n "$CMP" ]; then
    echo
    echo "$CMP in the same runs (its own results folder), ms:"
    printf '%-6s %10s %13s %7s %10s %15s %7s\n' hosts srun "cmp(srun)" ratio mpirun "cmp(mpirun)" ratio
    h=1
    while [ "$h" -le "$maxh" ]; do
        awk -v h="$h" -v s="$(median srun "$h")" -v gs="$(median cmp-srun "$h")" \
            -v m="$(median mpirun "$h")" -v gm="$(median cmp-mpirun "$h")" 'BEGIN {
            printf "%-6d %10.0f %13.0f %6.2fx %10.0f %15.0f %6.2fx\n", h, s, gs, gs / s, m, gm, gm / m }'
        h=$((h + 1))
    done
fi
