#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Stalls across hosts under Slurm (docs/running.md, "Stalls"), on the
# three-host netns cluster (tests/cluster/NETNS.md): tests/hang_mpi.c on 4
# ranks, 2 on h1 and 2 on h2, under srun --mpi=pmix from a batch job that
# an unprivileged uid (nobody) submitted.  Rank 3, on h2, hangs in each way
# the program knows (stopped, a spin in its own code, a sleep, a blocked
# read, gone without MPI noticing), or every rank waits in a receive cycle.
# gpurun on h1 asks the rank steps through srun, and names the culprit
# (rank 3 on h2), its state and where it is, in the record's `stall`.  The
# question must reach the rank steps without killing the programs (srun
# signals every process of the step: the program gets it too).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for b in jq mpicc sbatch setpriv; do
    if ! command -v "$b" >/dev/null 2>&1; then
        echo "1..0 # SKIP no $b"
        exit 0
    fi
done
if [ "$(id -u)" -ne 0 ]; then
    echo "1..0 # SKIP needs root to build the netns cluster and to submit as another uid"
    exit 0
fi
if ! getent passwd nobody >/dev/null 2>&1; then
    echo "1..0 # SKIP no user nobody to submit the jobs as (slurmd needs a passwd entry)"
    exit 0
fi
netns_share_build

cluster=$top_srcdir/tests/cluster/netns-cluster.sh
# A cluster of its own: names, subnet and port from this script's pid.
export GPURUN_NETNS_DIR=/srv/gpurun-st-$$
export GPURUN_NETNS_PREFIX=gst$$-
export GPURUN_NETNS_SUBNET=169.254.$((100 + ($$ + 75) % 150))
export GPURUN_NETNS_SLURMCTLD_PORT=$((17990 + $$ % 80 * 2))
export GPURUN_NETNS_SLURMD_PORT=$((GPURUN_NETNS_SLURMCTLD_PORT + 1))
cleanup() {
    [ -z "${jobid:-}" ] || scancel "$jobid" >/dev/null 2>&1
    "$cluster" down >/dev/null 2>&1
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cluster_up "$cluster" "netns cluster"
unset GPURUN_TOPOLOGY SLURM_JOB_ID SLURM_JOBID SLURM_NODELIST SLURM_JOB_NODELIST SLURM_STEP_ID SLURM_NTASKS

W=$GPURUN_NETNS_SCRATCH
U=$W/u
mkdir -m 0755 "$U"
chown 65534:65534 "$U"
mark=gpurun-hang-$$
mpicc -g -O1 -o "$U/$mark" "$top_srcdir/tests/hang_mpi.c" || {
    echo "1..0 # SKIP mpicc could not build tests/hang_mpi.c"
    exit 0
}
chmod 0755 "$U/$mark"

# job KIND: 2 hosts x 2 ranks, rank 3 (on h2) hanging at step 3.
job() {
    cat >"$U/$1.conf" <<JOB
job = "$1"
command = "$U/$mark"
launcher = "srun"
nodes = 2
ranks_per_node = 2
threads_per_rank = 1
oversubscribe = true
stall_after = "10s"
on_stall = "kill"
results = "$U/res"
env { HANG_KIND = "$1"  HANG_AT = "3"  HANG_RANK = "3"  STEP_MS = "100"  HANG_MAX_S = "150" }
JOB
}
kinds="stop spin sleep fifo exit deadlock"
body=
for k in $kinds; do
    job "$k"
    body="$body
t0=\$(date +%s); \"$GPURUN\" run \"$U/$k.conf\" --quiet 2>\"$U/$k.err\"; echo \"$k exit=\$? wall=\$((\$(date +%s) - t0))\""
done
cat >"$U/stall.sh" <<SCRIPT
#!/bin/sh
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --no-requeue
#SBATCH --time=20
#SBATCH --output=$U/stall.out
export HOME=$U OMPI_MCA_mpi_yield_when_idle=1 PMIX_MCA_gds=hash GPURUN_KILL_GRACE=2
$body
SCRIPT
chown -R 65534:65534 "$U"

# The unprivileged uid submits; its batch step runs gpurun on h1.
cd "$U" || exit 1
jobid=$(env HOME="$U" setpriv --reuid=65534 --regid=65534 --clear-groups sbatch --parsable "$U/stall.sh" | cut -d';' -f1)
[ -n "$jobid" ]
ok $? "uid nobody submitted the batch job ($jobid)"
n=0
while squeue -h -j "$jobid" 2>/dev/null | grep -q . && [ $n -lt 3000 ]; do
    sleep 0.2
    n=$((n + 1))
done
[ $n -lt 3000 ]
ok $? "the batch job ended"
jobid=
diag "$(cat "$U/stall.out" 2>/dev/null | grep -E '^[a-z]+ exit=')"
rundir() { ls -d "$U/res/$1"/*Z-*/ 2>/dev/null | tail -1; }

# check KIND STATE FRAME: rank 3 on h2 named with STATE (FRAME in where).
check() {
    d=$(rundir "$1")
    grep -q "^$1 exit=125 " "$U/stall.out"
    ok $? "$1: on_stall = kill ended the stalled run with exit 125 ($(grep "^$1 exit=" "$U/stall.out"))"
    contains "$U/$1.err" "stall: culprit: rank 3 on h2" "$1: stderr names rank 3 on h2"
    run jq -e --arg s "$2" --arg f "$3" '.state == "stalled" and .launcher == "srun"
        and (.stall.culprits | length == 1) and .stall.culprits[0].rank == 3 and .stall.culprits[0].host == "h2"
        and (.stall.culprits[0].state | startswith($s)) and (.stall.culprits[0].where | contains($f))
        and .stall.deadlock == false and .stall.after_s == 10
        and ([.stall.classes[] | select(.frames | contains("MPI_Allreduce")) | .ranks] == ["0-2"] or $f == "")' \
        "${d}record.json"
    ok $rc "$1: record: culprit rank 3 on h2, $2${3:+ in $3}; the others one class in MPI_Allreduce"
    [ $rc -eq 0 ] || jq -c .stall "${d}record.json" 2>&1 | sed 's/^/# /'
    jq -r --arg k "$1" '"table: \($k)\t\(.stall.culprits[0] | "rank \(.rank) on \(.host): \(.where)")\treport_s \(.stall.report_s)"' \
        "${d}record.json" 2>/dev/null | sed 's/^/# /'
}
check stop "stopped (T)" ""
check spin "running" "compute_forces"
check sleep "blocked outside MPI" "wait_a_while"
check fifo "blocked outside MPI" "read_input"
check exit "gone" ""

d=$(rundir deadlock)
grep -q "^deadlock exit=125 " "$U/stall.out"
ok $? "deadlock: exit 125"
run jq -e '.state == "stalled" and .stall.deadlock and (.stall.culprits | length == 0)
    and .stall.classes == [{"ranks": "0-3", "count": 4, "state": "waits in MPI", "frames": "main > exchange > MPI_Recv"}]' \
    "${d}record.json"
ok $rc "deadlock: record: no culprit, one class of 4 ranks (both hosts) in MPI_Recv"
[ $rc -eq 0 ] || jq -c .stall "${d}record.json" 2>&1 | sed 's/^/# /'

# Every rank step answered, and the question killed no program (srun
# signals every process of a step: a relayed SIGUSR1 did, exit 138).
bad=
for k in $kinds; do
    grep -qE "no answer|SIGUSR1|exit status 138" "$U/$k.err" 2>/dev/null && bad="$bad $k"
done
[ -z "$bad" ]
ok $? "every rank answered and none was killed by the question${bad:+ (not in:$bad)}"
left=
for h in h1 h2; do
    left="$left$("$cluster" ps "$h" 2>/dev/null | awk -v m="$mark" 'index($0, m) || $2 == "gpurun-rank"')"
done
[ -z "$left" ]
ok $? "no process is left on h1 or h2"
[ -z "$left" ] || diag "left: $left"

done_testing
