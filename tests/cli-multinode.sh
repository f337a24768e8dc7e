#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Several nodes, on the three-host netns cluster (tests/cluster/NETNS.md):
# gpurun under srun (inside an allocation) and under mpirun (a host list and
# the cluster's rsh agent) on 2 and 3 hosts, running examples/hello and the
# netcheck example; hosts with different topologies (GPURUN_TOPOLOGY=...%h),
# each planning its own ranks; gpurun submit; and faults across hosts: a
# rank failing on the second host, a host's slurmd killed mid-job, a host
# that cannot be reached, SIGTERM to gpurun on the first host.
#
# The cluster gets a state folder, namespace names, a subnet and a slurmctld
# port of its own (from this script's pid), so it does not clash with the
# default netns cluster or with cli-slurm.sh's single-node one.  Everything
# the jobs read or write is in $GPURUN_NETNS_SCRATCH (each host has its own
# /tmp); a build tree under /tmp is bound into every host (netns_share_build).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if [ ! -x "${HELLO:-}" ]; then
    echo "1..0 # SKIP examples/hello/hello not built (configure found no MPI)"
    exit 0
fi
for b in jq mpirun sbatch; do
    if ! command -v "$b" >/dev/null 2>&1; then
        echo "1..0 # SKIP no $b"
        exit 0
    fi
done
# A build tree under /tmp (each host's /tmp is its own): bound into every host.
netns_share_build
[ -x "${NETCHECK:-}" ] || NETCHECK=

cluster=$top_srcdir/tests/cluster/netns-cluster.sh
# One cluster per run of this script: names, subnet and port from the pid.
export GPURUN_NETNS_DIR=/srv/gpurun-mn-$$
export GPURUN_NETNS_PREFIX=gmn$$-
export GPURUN_NETNS_SUBNET=169.254.$((100 + $$ % 150))
export GPURUN_NETNS_SLURMCTLD_PORT=$((17830 + $$ % 80 * 2))
export GPURUN_NETNS_SLURMD_PORT=$((GPURUN_NETNS_SLURMCTLD_PORT + 1))
# A host whose slurmd is gone is declared DOWN after about 2x this.
export GPURUN_NETNS_SLURMD_TIMEOUT=10
# Processes this script starts in the background: killed on the way out.
bg_pids=
cleanup() {
    for p in $bg_pids; do
        kill -KILL "$p" 2>/dev/null
    done
    [ -z "${salloc_id:-}" ] || scancel "$salloc_id" >/dev/null 2>&1
    "$cluster" down >/dev/null 2>&1
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cluster_up "$cluster" "netns cluster"
# Nothing of an allocation this script may run in, nor a topology override.
unset GPURUN_TOPOLOGY SLURM_JOB_ID SLURM_JOBID SLURM_NODELIST SLURM_JOB_NODELIST SLURM_STEP_ID SLURM_NTASKS
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Up to 3 busy-polling ranks share this machine's cores: let them yield.
export OMPI_MCA_mpi_yield_when_idle=1
# The Open MPI ranks' PMIx clients keep the job's data in the hash store,
# not the shared-memory one (gds ds21), whose clients segfault now and then
# (openpmix/openpmix#1114; the usual workaround).  A suspect of the SIGSEGVs
# under srun that hello.sh (below) stands in for, not a proven cause.
export PMIX_MCA_gds=hash
export GPURUN_KILL_GRACE=2
W=$GPURUN_NETNS_SCRATCH
R=$W/results
cd "$W" || exit 1
G=$GPURUN

now_ms() { echo $(($(date +%s%N) / 1000000)); }
# wait_job ID SECONDS: until Slurm no longer lists the job; false on time-out
wait_job() {
    _wj=0
    while squeue -h -j "$1" 2>/dev/null | grep -q . && [ "$_wj" -lt $(($2 * 5)) ]; do
        sleep 0.2
        _wj=$((_wj + 1))
    done
    [ "$_wj" -lt $(($2 * 5)) ]
}
# run_dir JOB: the job's latest run folder
run_dir() { ls -d "$R/$1"/*Z-*/ 2>/dev/null | tail -1 | sed 's:/$::'; }
# wait_files GLOB COUNT SECONDS: until COUNT files match GLOB
# wait_ranks RUN_DIR_GLOB N SECONDS: true once N ranks printed a line
wait_ranks() {
    _wr=0
    while [ "$(ranks_started "$1")" -lt "$2" ] && [ "$_wr" -lt $(($3 * 10)) ]; do
        sleep 0.1
        _wr=$((_wr + 1))
    done
    [ "$(ranks_started "$1")" -ge "$2" ]
}
wait_files() {
    _wf=0
    # shellcheck disable=SC2086 # GLOB is a pattern
    while [ "$(ls $1 2>/dev/null | wc -l)" -lt "$2" ] && [ "$_wf" -lt $(($3 * 10)) ]; do
        sleep 0.1
        _wf=$((_wf + 1))
    done
    # shellcheck disable=SC2086
    [ "$(ls $1 2>/dev/null | wc -l)" -ge "$2" ]
}
# left_on HOST [stepd]: the job's processes still on HOST (rank steps,
# programs, orted; with "stepd" also Slurm's step daemons)
left_on() {
    "$cluster" ps "$1" 2>/dev/null | awk -v s="${2:-}" \
        '$2 == "gpurun" || $2 == "gpurun-rank" || $2 == "hello" || $2 == "netcheck" || $2 == "orted" ||
         $2 == "sleep" || (s != "" && $2 == "slurmstepd")'
}
# gone HOSTS SECONDS [stepd]: true once none of the HOSTS has any left
gone() {
    _gn=0
    while :; do
        left=
        for _gh in $1; do
            left="$left$(left_on "$_gh" "${3:-}")"
        done
        [ -z "$left" ] && return 0
        [ "$_gn" -ge $(($2 * 5)) ] && break
        sleep 0.2
        _gn=$((_gn + 1))
    done
    diag "left running:" "$left"
    return 1
}
hosts_of() { # hosts_of N: "h1 h2 ... hN"
    _hi=1
    _hs=
    while [ "$_hi" -le "$1" ]; do
        _hs="${_hs:+$_hs }h$_hi"
        _hi=$((_hi + 1))
    done
    echo "$_hs"
}
for n in 2 3; do
    for h in $(hosts_of "$n"); do
        echo "$h slots=2"
    done >"$W/hosts.$n"
done

# job NAME NODES RPN LAUNCHER COMMAND [GPUS]: a job file $W/NAME.conf
job() {
    cat >"$W/$1.conf" <<JOB
job = "$1"
command = "$5"
launcher = "$4"
nodes = $2
ranks_per_node = $3
gpus_per_rank = ${6:-0}
threads_per_rank = 1
timeout = "3m"
results = "$R"
JOB
}
# ncjob NAME NODES LAUNCHER: the netcheck template, one rank per host
ncjob() {
    cat >"$W/$1.conf" <<JOB
job = "$1"
template = "netcheck"
launcher = "$3"
nodes = $2
ranks_per_node = 1
gpus_per_rank = 0
threads_per_rank = 1
timeout = "3m"
results = "$R"
params { netcheck = "$NETCHECK"  min = 8  max = 65536  iters = 20 }
JOB
}
# batch NAME NODES BODY: an sbatch script $W/NAME.sh (output $W/NAME.out)
# with 2 tasks per node, submitted; prints the job id.
batch() {
    cat >"$W/$1.sh" <<SCRIPT
#!/bin/sh
#SBATCH --nodes=$2
#SBATCH --ntasks-per-node=2
#SBATCH --no-requeue
#SBATCH --output=$W/$1.out
$3
SCRIPT
    sbatch --parsable "$W/$1.sh" | cut -d';' -f1
}
# on_h1 CMD...: runs CMD on the first host (gpurun's host under mpirun)
on_h1() { "$cluster" exec h1 "$@"; }

# check_hello RUNDIR NODES RPN LAUNCHER WHAT: the record and every rank's
# own report agree on where each rank ran and how it was bound.
check_hello() {
    d=$1 nn=$2 r=$3 l=$4 what=$5
    rec=$d/record.json
    got=$(jq -r '[.state, .launcher, .nodes, .ranks, (.hosts | join(","))] | map(tostring) | join(" ")' "$rec" 2>/dev/null)
    want="ok $l $nn $((nn * r)) $(hosts_of "$nn" | tr ' ' ',')"
    [ "$got" = "$want" ]
    ok $? "$what: record.json says ok, $l, $nn nodes, $((nn * r)) ranks, hosts $(hosts_of "$nn")"
    [ "$got" = "$want" ] || diag "record: $got" "wanted: $want"
    bad=
    i=0
    while [ "$i" -lt $((nn * r)) ]; do
        h=h$((i / r + 1))
        lr=$((i % r))
        b=$(jq -r ".bindings[$i] | [.host, .local_rank, .cpus, .planned_cpus] | map(tostring) | join(\" \")" "$rec")
        pc=$(jq -r ".ranks[$lr].cpus" "$d/plan.$h.json" 2>/dev/null)
        bc=$(echo "$b" | cut -d' ' -f3)
        line=$(rank_output "$d" "$i" 2>/dev/null | grep '^rank=' | head -1)
        case " $line " in
            *" rank=$i size=$((nn * r)) host=$h local_rank=$lr cpus=$bc "*" GPURUN_RANK=$i GPURUN_LOCAL_RANK=$lr "*)
                [ "$b" = "$h $lr $pc $pc" ] || bad="$bad $i(binding $b, $h plan $pc)" ;;
            *) bad="$bad $i($line)" ;;
        esac
        i=$((i + 1))
    done
    [ -z "$bad" ]
    ok $? "$what: each rank ran on its host with its local rank and the cpus of that host's plan (bindings[].host)"
    if [ -n "$bad" ]; then
        diag "wrong ranks:$bad"
        first=${bad# }
        first=${first%%(*}
        diag "rank $first's output:"
        rank_output "$d" "$first" 2>/dev/null | head -n 15 | sed 's/^/#   /'
    fi
    missing=
    for h in $(hosts_of "$nn"); do
        [ -s "$d/plan.$h.json" ] || missing="$missing $h"
    done
    [ -z "$missing" ]
    ok $? "$what: the run folder has plan.HOST.json for every host"
    locks=$(cd "$d" && ls plan.*.lock 2>/dev/null)
    [ -z "$locks" ]
    ok $? "$what: no plan lock file is left in the run folder"
    if [ "$nn" -gt 1 ]; then
        hp=$(jq -r '.host_plans | to_entries | map(select(.value.ranks | length > 0) | .key) | sort | join(" ")' \
            "$d/record.json" 2>/dev/null)
        [ "$hp" = "$(hosts_of "$nn" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')" ]
        ok $? "$what: record.json's host_plans has each host's own plan (got '$hp')"
    fi
}

# check_netcheck RUNDIR NODES LAUNCHER WHAT
check_netcheck() {
    d=$1 nn=$2 l=$3 what=$4
    rank_output "$d" 0 >"$TMP/r0.txt" 2>/dev/null
    got=$(jq -r '[.state, .launcher, (.hosts | join(","))] | join(" ")' "$d/record.json" 2>/dev/null)
    [ "$got" = "ok $l $(hosts_of "$nn" | tr ' ' ',')" ]
    ok $? "$what: netcheck state ok on $(hosts_of "$nn")"
    nl=$(grep -cE '^NETCHECK (latency_us|bandwidth_GBps|allreduce_us): [0-9.eE+-]+$' "$TMP/r0.txt" 2>/dev/null)
    foms=$(jq -r '[.foms.latency_us.value, .foms.bandwidth_GBps.value, .foms.allreduce_us.value] |
        map(select(type == "number" and . > 0)) | length' "$d/record.json" 2>/dev/null)
    [ "$nl" = 3 ] && [ "$foms" = 3 ]
    ok $? "$what: the three NETCHECK summary lines, in the record as figures of merit"
    grep -q '^pair ' "$TMP/r0.txt" 2>/dev/null &&
        ! awk '/^pair / && ($3 == $4 || $3 !~ /^h[0-9]$/ || $4 !~ /^h[0-9]$/) { bad = 1 } END { exit !bad }' "$TMP/r0.txt"
    ok $? "$what: every measured pair spans two hosts"
    grep '^pair ' "$TMP/r0.txt" 2>/dev/null | sed 's/^/#   /'
    grep '^NETCHECK' "$TMP/r0.txt" 2>/dev/null | sed 's/^/#   /'
}

# 1. Under srun, inside an allocation: a batch script calling gpurun run.
for n in 2 3; do
    job "hello-srun$n" "$n" 2 auto "$HELLO"
    # A hello rank dies of SIGSEGV inside MPI_Init in about 1 run in 40
    # under srun on a loaded machine: core files show Debian's Open MPI 4.1
    # TCP BTL handing an early fragment from another host to a NULL
    # active-message callback (mca_btl_tcp.so, endpoint receive handler,
    # before ob1 registered it) -- Open MPI's race, not gpurun's.  Such a
    # run is retried once, and the retry is reported below.
    body="\"$G\" run \"$W/hello-srun$n.conf\" --quiet; rc=\$?
if [ \$rc -eq 139 ]; then echo hello-retried-after-sigsegv; \"$G\" run \"$W/hello-srun$n.conf\" --quiet; rc=\$?; fi
echo hello-exit=\$rc"
    if [ -n "$NETCHECK" ]; then
        ncjob "nc-srun$n" "$n" auto
        body="$body
\"$G\" run \"$W/nc-srun$n.conf\" --quiet; echo netcheck-exit=\$?"
    fi
    t0=$(now_ms)
    id=$(batch "srun$n" "$n" "$body")
    wait_job "$id" 120
    ok $? "srun, $n nodes: the batch job ended"
    diag "srun, $n nodes: batch job of gpurun run (hello, netcheck) $(($(now_ms) - t0)) ms"
    if grep -q hello-retried-after-sigsegv "$W/srun$n.out"; then
        diag "srun, $n nodes: a rank died of SIGSEGV in the first run; retried once"
    fi
    contains "$W/srun$n.out" "hello-exit=0" "srun, $n nodes: gpurun run of hello exits 0 in the batch step"
    check_hello "$(run_dir "hello-srun$n")" "$n" 2 srun "srun, $n nodes"
    if [ -n "$NETCHECK" ]; then
        contains "$W/srun$n.out" "netcheck-exit=0" "srun, $n nodes: gpurun run of netcheck exits 0"
        check_netcheck "$(run_dir "nc-srun$n")" "$n" srun "srun, $n nodes"
    else
        skip "srun, $n nodes: examples/netcheck/netcheck not built"
    fi
done

# 2. Under mpirun outside Slurm, gpurun on the first host, ranks on the
# hosts of a host list, remote ones started through the rsh agent.
for n in 2 3; do
    job "hello-mpi$n" "$n" 2 mpirun "$HELLO"
    t0=$(now_ms)
    run env OMPI_MCA_orte_default_hostfile=$W/hosts.$n timeout 120 "$cluster" exec h1 "$G" run "$W/hello-mpi$n.conf" --quiet
    diag "mpirun, $n nodes: gpurun run of hello $(($(now_ms) - t0)) ms"
    expect_rc 0 "mpirun, $n nodes: gpurun run of hello with a host list exits 0"
    check_hello "$(run_dir "hello-mpi$n")" "$n" 2 mpirun "mpirun, $n nodes"
    if [ -n "$NETCHECK" ]; then
        ncjob "nc-mpi$n" "$n" mpirun
        run env OMPI_MCA_orte_default_hostfile=$W/hosts.$n timeout 120 "$cluster" exec h1 "$G" run "$W/nc-mpi$n.conf" --quiet
        expect_rc 0 "mpirun, $n nodes: gpurun run of netcheck exits 0"
        check_netcheck "$(run_dir "nc-mpi$n")" "$n" mpirun "mpirun, $n nodes"
    else
        skip "mpirun, $n nodes: examples/netcheck/netcheck not built"
    fi
done
# The launcher is told to pass on only variables that are set.
contains_not() { # contains_not FILE TEXT DESCRIPTION
    if grep -qF -- "$2" "$1"; then
        ok 1 "$3"
        grep -F -- "$2" "$1" | head -3 | sed 's/^/#   /'
    else
        ok 0 "$3"
    fi
}
if [ -z "${LD_LIBRARY_PATH:-}" ]; then
    contains_not "$(run_dir hello-mpi2)/launcher.out" "could not find environment variable" \
        "mpirun: gpurun asks mpirun to pass on only variables that are set (no warning in launcher.out)"
fi

# hello.sh: what hello prints, from the environment and the kernel, without
# MPI.  Open MPI under srun's PMIx dies of SIGSEGV here now and then (a rank
# on a second host, in MPI_Init: a call through a null pointer, no frames;
# in 3 of the last 5 clean-clone CI runs, always in the sanitizer pass, never
# when run alone, 36 of 36 under load).  The srun checks of sections 3 and 4
# test gpurun's planning, binding, batch script and record, so they run
# this; MPI across hosts under srun stays checked by 1., with the real hello.
cat >"$W/hello.sh" <<'EOF'
#!/bin/sh
cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
echo "rank=$GPURUN_RANK size=$SLURM_NTASKS host=$(hostname) local_rank=$GPURUN_LOCAL_RANK cpus=$cpus mems=-" \
    "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:--} CUDA_DEVICE_ORDER=${CUDA_DEVICE_ORDER:--}" \
    "UCX_NET_DEVICES=${UCX_NET_DEVICES:--}" \
    "GPURUN_RANK=$GPURUN_RANK GPURUN_LOCAL_RANK=$GPURUN_LOCAL_RANK"
EOF
chmod 0755 "$W/hello.sh"

# 3. Hosts with different topologies: each host plans its own ranks.
cp "$FIXTURES/2s-4gpu-2nic.xml" "$W/topo-h1.xml"
cp "$FIXTURES/gpu-order-not-numa.xml" "$W/topo-h2.xml"
for h in h1 h2; do
    "$G" plan --topology "$W/topo-$h.xml" --ranks-per-node 2 --gpus-per-rank 1 --threads-per-rank 1 --json |
        jq -c '[.ranks[] | [.env.CUDA_VISIBLE_DEVICES, .env.UCX_NET_DEVICES, .cpus]]' >"$TMP/want.$h"
done
# check_het RUNDIR WHAT
check_het() {
    d=$1 what=$2
    [ -s "$d/plan.h1.json" ] && [ -s "$d/plan.h2.json" ]
    ok $? "$what: the run folder has plan.h1.json and plan.h2.json"
    same=0
    for h in h1 h2; do
        jq -c '[.ranks[] | select(.node == 0) | [.env.CUDA_VISIBLE_DEVICES, .env.UCX_NET_DEVICES, .cpus]]' "$d/plan.$h.json" 2>/dev/null |
            cmp -s - "$TMP/want.$h" || same=1
    done
    ok $same "$what: plan.h1.json and plan.h2.json are the plans of each host's own topology"
    bad=
    for i in 0 1 2 3; do
        h=h$((i / 2 + 1))
        lr=$((i % 2))
        wg=$(jq -r ".[$lr][0]" "$TMP/want.$h")
        wn=$(jq -r ".[$lr][1]" "$TMP/want.$h")
        line=$(rank_output "$d" "$i" 2>/dev/null | grep '^rank=' | head -1)
        case " $line " in
            *" host=$h "*" CUDA_VISIBLE_DEVICES=$wg "*" UCX_NET_DEVICES=$wn "*) ;;
            *) bad="$bad $i($line)" ;;
        esac
    done
    [ -z "$bad" ]
    ok $? "$what: every rank got the GPU and NIC of its own host's plan"
    if [ -n "$bad" ]; then
        diag "wrong ranks:$bad"
        for f in "$d"/*.out; do
            diag "$f:"
            head -20 "$f" | sed 's/^/#   /'
        done
    fi
    # The fixtures' own figures: on h2 (GPUs numbered against their NUMA
    # order) local rank 0 gets GPU 3, on h1 GPU 0.
    rank_output "$d" 0 | grep -q ' host=h1 local_rank=0 .*CUDA_VISIBLE_DEVICES=0 ' 2>/dev/null &&
        rank_output "$d" 2 | grep -q ' host=h2 local_rank=0 .*CUDA_VISIBLE_DEVICES=3 ' 2>/dev/null
    ok $? "$what: local rank 0 has CUDA_VISIBLE_DEVICES=0 on h1 and 3 on h2"
}
job het-srun 2 2 auto "$W/hello.sh" 1
id=$(batch het-srun 2 "export GPURUN_TOPOLOGY='$W/topo-%h.xml'
\"$G\" run \"$W/het-srun.conf\" --quiet; echo gpurun-exit=\$?")
wait_job "$id" 120
contains "$W/het-srun.out" "gpurun-exit=0" "heterogeneous, srun: gpurun exits 0 (cpus the fake topologies name are only warnings)"
check_het "$(run_dir het-srun)" "heterogeneous, srun"
job het-mpi 2 2 mpirun "$HELLO" 1
run env GPURUN_TOPOLOGY=$W/topo-%h.xml OMPI_MCA_orte_default_hostfile=$W/hosts.2 \
    timeout 120 "$cluster" exec h1 "$G" run "$W/het-mpi.conf" --quiet
expect_rc 0 "heterogeneous, mpirun: gpurun exits 0"
check_het "$(run_dir het-mpi)" "heterogeneous, mpirun"

# A host whose own topology cannot meet the request (no GPUs on h2): its
# rank step refuses to start, and gpurun says which host and why (exit 3),
# rather than blaming a rank the launcher stopped because of it.
mkdir -p "$W/nogpu"
cp "$FIXTURES/2s-4gpu-2nic.xml" "$W/nogpu/topo-h1.xml"
cp "$FIXTURES/cpu-only-2numa.xml" "$W/nogpu/topo-h2.xml"
job nogpu-srun 2 2 auto "$HELLO --sleep 60" 1
id=$(batch nogpu-srun 2 "export GPURUN_TOPOLOGY='$W/nogpu/topo-%h.xml'
\"$G\" run \"$W/nogpu-srun.conf\" --quiet; echo gpurun-exit=\$?")
wait_job "$id" 120
contains "$W/nogpu-srun.out" "gpurun-exit=3" "a host without GPUs, srun: gpurun exits 3"
grep '^gpurun:' "$W/nogpu-srun.out" | grep -v warning | grep -q 'h2.*cannot run its ranks'
ok $? "a host without GPUs, srun: ... naming h2 and why it cannot run its ranks"
grep '^gpurun:' "$W/nogpu-srun.out" | sed 's/^/#   /'
gone "h1 h2" 60
ok $? "a host without GPUs, srun: nothing of the job is left"
job nogpu-mpi 2 2 mpirun "$HELLO --sleep 60" 1
run env GPURUN_TOPOLOGY=$W/nogpu/topo-%h.xml OMPI_MCA_orte_default_hostfile=$W/hosts.2 \
    timeout 120 "$cluster" exec h1 "$G" run "$W/nogpu-mpi.conf" --quiet
expect_rc 3 "a host without GPUs, mpirun: gpurun exits 3"
grep -v warning "$TMP/err" | grep -q 'h2.*cannot run its ranks'
ok $? "a host without GPUs, mpirun: ... naming h2 and why it cannot run its ranks"
gone "h1 h2" 60
ok $? "a host without GPUs, mpirun: nothing of the job is left"

# 4. gpurun submit of a 2-node job.  Not an MPI program: $W/hello.sh (see
# 3.).
job sub2 2 2 auto "$W/hello.sh"
run "$G" submit "$W/sub2.conf"
expect_rc 0 "gpurun submit of a 2-node job"
id=$(sed -n 's/.*Submitted batch job \([0-9][0-9]*\).*/\1/p' "$TMP/out" | head -1)
[ -n "$id" ] && wait_job "$id" 120
ok $? "... the job ran and ended"
[ -n "$id" ] && [ -s "$R/sub2/slurm-$id.out" ] && grep -q "sub2: ok in" "$R/sub2/slurm-$id.out"
st=$?
ok $st "... its Slurm output is in the results folder and says ok"
# What the job said, to tell gpurun's failures from Open MPI's (see 5. below).
[ "$st" -ne 0 ] && [ -n "$id" ] && tail -n 30 "$R/sub2/slurm-$id.out" 2>/dev/null | sed 's/^/#   slurm: /'
d=$(run_dir sub2)
[ -n "$d" ] && check_hello "$d" 2 2 srun "submit, 2 nodes"

# 5. Faults across hosts.
# A rank on the second host exits 7.  Not an MPI program: what is checked is
# gpurun's, and Open MPI 4.1 under srun's PMIx now and then dies of SIGSEGV
# on this loaded VM before the test's signal or exit (seen twice in clean-clone
# CI runs, rank on h1 and h2).
cat >"$W/exit7.sh" <<'EOF'
#!/bin/sh
echo "rank $GPURUN_RANK started"
[ "$GPURUN_RANK" = 2 ] && exit 7
exec sleep 60
EOF
cat >"$W/sleep600.sh" <<'EOF'
#!/bin/sh
echo "rank $GPURUN_RANK started"
exec sleep 600
EOF
chmod 0755 "$W/exit7.sh" "$W/sleep600.sh"
cmd="$W/exit7.sh"
job exit-srun 2 2 auto "$cmd"
id=$(batch exit-srun 2 "\"$G\" run \"$W/exit-srun.conf\" --quiet; echo gpurun-exit=\$?")
wait_job "$id" 120
contains "$W/exit-srun.out" "gpurun-exit=7" "srun: rank 2 (on h2) exiting 7 makes gpurun exit 7"
contains "$W/exit-srun.out" "rank 2 on h2" "srun: ... and the message names rank 2 and host h2"
gone "h1 h2" 60
ok $? "srun: ... nothing of the job is left on h1 or h2"
job exit-mpi 2 2 mpirun "$cmd"
run env OMPI_MCA_orte_default_hostfile=$W/hosts.2 timeout 120 "$cluster" exec h1 "$G" run "$W/exit-mpi.conf" --quiet
expect_rc 7 "mpirun: rank 2 (on h2) exiting 7 makes gpurun exit 7"
contains "$TMP/err" "rank 2 on h2" "mpirun: ... and the message names rank 2 and host h2"
gone "h1 h2" 60
ok $? "mpirun: ... nothing of the job is left on h1 or h2"

# kill_slurmd HOST / restart_slurmd HOST: by the cluster's pid file, inside the host
kill_slurmd() {
    # shellcheck disable=SC2016 # runs inside the host
    "$cluster" exec "$1" sh -c 'kill -KILL "$(cat "$1")"' sh "$GPURUN_NETNS_DIR/run/slurmd-$1.pid"
}
restart_slurmd() {
    "$cluster" exec "$1" slurmd -f "$SLURM_CONF" -N "$1" >/dev/null 2>&1
    _rs=0
    while [ "$(sinfo -h -n "$1" -o %t 2>/dev/null)" != idle ] && [ "$_rs" -lt 150 ]; do
        sleep 0.2
        _rs=$((_rs + 1))
    done
    gone "$1" 60 stepd
}
# The slurmd of h2 dies while a 2-node job runs; the batch step (and gpurun
# in it) is on h1.  Slurm declares h2 down after about 2 x SlurmdTimeout
# and cancels the job; gpurun must say that h2 was lost, and exit 3.  The cancel's
# SIGTERM reaches the batch shell too, and once that has died slurmstepd
# kills the rest at once: without the trap the message was there only when
# gpurun happened to finish first (a clean-clone CI run lost that race, under
# ASan).  gpurun(1), supervision, says to exec gpurun or trap TERM.
job slurmd-batch 2 2 auto "$HELLO --sleep 600"
id=$(batch slurmd-batch 2 "trap 'echo batch-shell-got-sigterm' TERM
\"$G\" run \"$W/slurmd-batch.conf\" --quiet; echo gpurun-exit=\$?")
wait_ranks "$R/slurmd-batch/*" 4 60
ok $? "slurmd killed, batch: all 4 ranks started"
t0=$(now_ms)
kill_slurmd h2
wait_job "$id" 90
ok $? "slurmd killed, batch: the job ends within 90 s of h2's slurmd dying"
diag "slurmd killed, batch: the job ended $(($(now_ms) - t0)) ms after the kill (SlurmdTimeout=$GPURUN_NETNS_SLURMD_TIMEOUT)"
sed 's/^/#   /' "$W/slurmd-batch.out"
grep '^gpurun:' "$W/slurmd-batch.out" | grep -q 'h2'
ok $? "slurmd killed, batch: gpurun's message names the lost host h2"
# Slurm sent gpurun SIGTERM too, cancelling the job "DUE TO NODE FAILURE":
# the lost host is the cause (exit 3), not an interruption (143).
contains "$W/slurmd-batch.out" "gpurun-exit=3" "slurmd killed, batch: gpurun exits 3, a lost host, though Slurm sent it SIGTERM"
gone "h1 h3" 60
ok $? "slurmd killed, batch: nothing of the job is left on h1 and h3"
restart_slurmd h2
ok $? "slurmd killed, batch: with h2's slurmd back, its orphaned ranks are gone too"

# The same with gpurun run on h1 inside an allocation it is not a step of
# (salloc --no-shell; as from a login node): Slurm does not signal gpurun,
# srun fails with the node and gpurun must say why.
salloc_id=$(salloc -N2 --ntasks-per-node=2 --no-shell 2>&1 | sed -n 's/.*Granted job allocation \([0-9][0-9]*\).*/\1/p')
job slurmd-alloc 2 2 srun "$HELLO --sleep 600"
SLURM_JOB_ID=$salloc_id "$cluster" exec h1 "$G" run "$W/slurmd-alloc.conf" --quiet >"$TMP/alloc.out" 2>"$TMP/alloc.err" &
gpid=$!
bg_pids="$bg_pids $gpid"
wait_ranks "$R/slurmd-alloc/*" 4 60
ok $? "slurmd killed, allocation: all 4 ranks started (allocation $salloc_id)"
t0=$(now_ms)
kill_slurmd h2
n=0
while kill -0 "$gpid" 2>/dev/null && [ "$n" -lt 450 ]; do
    sleep 0.2
    n=$((n + 1))
done
! kill -0 "$gpid" 2>/dev/null
ok $? "slurmd killed, allocation: gpurun ends within 90 s of h2's slurmd dying"
rc=0
wait "$gpid" || rc=$?
diag "slurmd killed, allocation: gpurun exit $rc after $(($(now_ms) - t0)) ms"
sed 's/^/#   /' "$TMP/alloc.err"
[ "$rc" -ne 0 ] && [ "$rc" -ne 143 ] && [ "$rc" -ne 130 ]
ok $? "slurmd killed, allocation: gpurun fails, but not as if it had been interrupted (exit $rc)"
grep -q 'h2' "$TMP/alloc.err"
ok $? "slurmd killed, allocation: gpurun's message names the lost host h2"
! grep -q 'rank [01] on h1 failed first' "$TMP/alloc.err"
ok $? "slurmd killed, allocation: ... and does not blame the ranks on h1 that Slurm stopped"
gone "h1 h3" 60
ok $? "slurmd killed, allocation: nothing of the job is left on h1 and h3"
scancel "$salloc_id" >/dev/null 2>&1
salloc_id=
restart_slurmd h2
ok $? "slurmd killed, allocation: with h2's slurmd back, its orphaned ranks are gone too"

# A host in the host list that does not exist (the agent, as ssh, exits 255).
printf 'h1 slots=2\nh7 slots=2\n' >"$W/hosts.bad"
t0=$(now_ms)
# exit 3, not timeout's 124: gpurun ended by itself (how fast is a diagnostic, never a check)
run env OMPI_MCA_orte_default_hostfile=$W/hosts.bad timeout 60 "$cluster" exec h1 "$G" run "$W/hello-mpi2.conf" --quiet
expect_rc 3 "unreachable host: gpurun exits 3, by itself"
diag "unreachable host: gpurun ended $(($(now_ms) - t0)) ms after its start"
grep -q 'h7' "$TMP/err"
ok $? "unreachable host: ... and the message names h7"
sed 's/^/#   /' "$TMP/err" | head -8
gone "h1" 60
ok $? "unreachable host: nothing is left on h1"

# SIGTERM to gpurun on the first host stops the ranks on every host.
job term-mpi 3 2 mpirun "$HELLO --sleep 600"
# shellcheck disable=SC2016 # runs inside h1
OMPI_MCA_orte_default_hostfile=$W/hosts.3 "$cluster" exec h1 sh -c 'echo $$ >"$1"; shift; exec "$@"' sh "$W/term.pid" \
    "$G" run "$W/term-mpi.conf" --quiet >"$TMP/out" 2>"$TMP/err" &
tpid=$!
bg_pids="$bg_pids $tpid"
wait_ranks "$R/term-mpi/*" 6 60
sleep 0.5
kill -TERM "$(cat "$W/term.pid")"
rc=0
wait "$tpid" || rc=$?
expect_rc 143 "SIGTERM, mpirun, 3 nodes: gpurun on h1 exits 143"
gone "h1 h2 h3" 60
ok $? "SIGTERM, mpirun, 3 nodes: nothing is left on h1, h2 or h3"
job term-srun 3 2 auto "$W/sleep600.sh"
rm -f "$W/term.pid"
id=$(batch term-srun 3 "sh -c 'echo \$\$ >\"$W/term.pid\"; exec \"$G\" run \"$W/term-srun.conf\" --quiet'
echo gpurun-exit=\$?")
wait_ranks "$R/term-srun/*" 6 60
sleep 0.5
kill -TERM "$(cat "$W/term.pid")"
wait_job "$id" 60
contains "$W/term-srun.out" "gpurun-exit=143" "SIGTERM, srun, 3 nodes: gpurun in the batch step exits 143"
gone "h1 h2 h3" 60
ok $? "SIGTERM, srun, 3 nodes: no rank, rank step or gpurun is left on h1, h2 or h3"
# Slurm's own step daemons finish their clean-up after the job has ended
# (seen to take over 10 s on a loaded machine): theirs, not gpurun's.
gone "h1 h2 h3" 60 stepd
ok $? "SIGTERM, srun, 3 nodes: Slurm's step daemons are gone too"

done_testing
