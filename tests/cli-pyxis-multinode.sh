#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# pyxis (container runtime "pyxis", issue 15) on two hosts of the netns
# cluster (tests/cluster/NETNS.md), with the fake pyxis SPANK plugin
# (tests/fake_pyxis.c) in its plugstack.conf.  The rank steps of a pyxis
# job run in the image, where full gpurun is not: the fake's hide= makes
# gpurun's file unreachable for every task given an image, as in a real
# one.  gpurun plans the second host first with a step outside the image
# (gpurun rank --plan-only); the container step's ranks then run on both
# hosts, bound as planned, and the record has both hosts' plans.  Without
# that step the second host's first rank step could not plan its host.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

need_spank_h # SPANK_H, to build the fake pyxis plugin
for b in cc jq sbatch squeue; do
    if ! command -v "$b" >/dev/null 2>&1; then
        echo "1..0 # SKIP no $b"
        exit 0
    fi
done
# A build tree under /tmp (each host's /tmp is its own): bound into every host.
netns_share_build
RANK=$(realpath "$(dirname "$GPURUN")/gpurun-rank")
if ldd "$RANK" >/dev/null 2>&1; then
    echo "1..0 # SKIP gpurun-rank is not the static rank step here (no static jansson): the rank step is full gpurun"
    exit 0
fi
# The plugin and what it records: seen by every host (in the build tree).
P=$(mktemp -d "$(dirname "$(realpath "$GPURUN")")/pyxis-mn.XXXXXX") || exit 1
chmod 755 "$P"
if ! cc -std=c11 -shared -fPIC -o "$P/fake_pyxis.so" "$top_srcdir/tests/fake_pyxis.c" 2>"$TMP/cc.err"; then
    rm -rf "$P"
    echo "1..0 # SKIP the fake pyxis plugin does not build here: $(head -c 300 "$TMP/cc.err")"
    exit 0
fi
export GPURUN_SLURM_PLUGSTACK="$TMP/plugstack.conf"
echo "required $P/fake_pyxis.so out=$P/pyxis.log hide=$(realpath "$GPURUN")" >"$GPURUN_SLURM_PLUGSTACK"

cluster=$top_srcdir/tests/cluster/netns-cluster.sh
# A cluster of this script's own: names, subnet and ports from the pid.
export GPURUN_NETNS_DIR=/srv/gpurun-pmn-$$
export GPURUN_NETNS_PREFIX=gpm$$-
export GPURUN_NETNS_SUBNET=169.254.$((60 + $$ % 40))
export GPURUN_NETNS_SLURMCTLD_PORT=$((18030 + $$ % 80 * 2))
export GPURUN_NETNS_SLURMD_PORT=$((GPURUN_NETNS_SLURMCTLD_PORT + 1))
export GPURUN_NETNS_NHOSTS=2
cleanup() {
    "$cluster" down >/dev/null 2>&1
    rm -rf "$TMP" "$P"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cluster_up "$cluster" "netns cluster"
unset GPURUN_TOPOLOGY SLURM_JOB_ID SLURM_JOBID SLURM_NODELIST SLURM_JOB_NODELIST SLURM_STEP_ID SLURM_NTASKS
W=$GPURUN_NETNS_SCRATCH

cat >"$W/probe.sh" <<'PROBE'
#!/bin/sh
echo "probe rank=$GPURUN_RANK host=$(hostname) cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)"
PROBE
chmod 755 "$W/probe.sh"
cat >"$W/pyx.conf" <<JOB
job = "pyx"
command = "./probe.sh"
nodes = 2
ranks_per_node = 1
gpus_per_rank = 0
threads_per_rank = 1
timeout = "2m"
results = "$W/results"
container { image = "nvcr.io#hpc/fake:1"  runtime = "pyxis" }
JOB
cat >"$W/pyx.sh" <<SCRIPT
#!/bin/sh
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --no-requeue
#SBATCH --output=$W/pyx.out
"$GPURUN" run "$W/pyx.conf" --quiet --set launcher=srun
echo "gpurun-exit=\$?"
SCRIPT
id=$(sbatch --parsable "$W/pyx.sh" | cut -d';' -f1)
n=0
while squeue -h -j "$id" 2>/dev/null | grep -q . && [ $n -lt 900 ]; do sleep 0.2; n=$((n + 1)); done
d=$(ls -d "$W"/results/pyx/*Z-*/ 2>/dev/null | tail -1 | sed 's:/$::')
contains "$W/pyx.out" "gpurun-exit=0" "a 2-node pyxis job exits 0"
[ -n "$d" ] || sed 's/^/#   /' "$W/pyx.out" | head -30
[ -n "$d" ] && jq -e '.state == "ok" and .container.runtime == "pyxis" and (.hosts | join(",")) == "h1,h2"' \
    "$d/record.json" >/dev/null
ok $? "its record says ok, runtime pyxis, hosts h1 and h2"
[ -n "$d" ] && jq -e '(.host_plans | keys) == ["h1", "h2"] and ([.host_plans[].ranks | length > 0] | all)' \
    "$d/record.json" >/dev/null
ok $? "the record has both hosts' plans"
[ "$(grep -c ' image=nvcr.io#hpc/fake:1 ' "$P/pyxis.log" 2>/dev/null)" = 2 ]
ok $? "pyxis was given the image for both ranks (the planning step, outside the image, was not)"
for i in 0 1; do
    h=h$((i + 1))
    line=$(rank_output "$d" "$i" 2>/dev/null | grep '^probe ' | head -1)
    cpus=$(jq -r ".bindings[$i].cpus" "$d/record.json" 2>/dev/null)
    pc=$(jq -r ".host_plans.$h.ranks[0].cpus" "$d/record.json" 2>/dev/null)
    [ "$line" = "probe rank=$i host=$h cpus=$cpus" ] && [ "$cpus" = "$pc" ]
    ok $? "rank $i ran on $h, bound as $h's plan says ($line; planned $pc)"
done
[ -f "$d/plan-step.log" ]
ok $? "the planning step's output is in the run folder (plan-step.log)"

# A host that cannot run its ranks (no GPUs on h2, from its topology) ends
# the job in the planning step, naming h2 and why (exit 3): no container
# task, so no rank, was started.
mkdir -p "$W/nogpu"
cp "$top_srcdir/tests/fixtures/2s-4gpu-2nic.xml" "$W/nogpu/topo-h1.xml"
cp "$top_srcdir/tests/fixtures/cpu-only-2numa.xml" "$W/nogpu/topo-h2.xml"
sed -e 's/^gpus_per_rank = 0/gpus_per_rank = 1/' -e 's/^job = "pyx"/job = "pyxnogpu"/' "$W/pyx.conf" >"$W/pyxnogpu.conf"
sed -e "s|^\"|export GPURUN_TOPOLOGY='$W/nogpu/topo-%h.xml'\n\"|" -e 's|pyx\.conf|pyxnogpu.conf|; s|pyx\.out|pyxnogpu.out|' \
    "$W/pyx.sh" >"$W/pyxnogpu.sh"
: >"$P/pyxis.log"
id=$(sbatch --parsable "$W/pyxnogpu.sh" | cut -d';' -f1)
n=0
while squeue -h -j "$id" 2>/dev/null | grep -q . && [ $n -lt 900 ]; do sleep 0.2; n=$((n + 1)); done
contains "$W/pyxnogpu.out" "gpurun-exit=3" "a host without GPUs: gpurun exits 3"
grep '^gpurun:' "$W/pyxnogpu.out" | grep -v warning | grep -q 'h2 cannot run its ranks'
ok $? "... naming h2 and why it cannot run its ranks"
grep '^gpurun:' "$W/pyxnogpu.out" | grep -v warning | head -3 | sed 's/^/#   /'
[ ! -s "$P/pyxis.log" ]
ok $? "... before any rank started (no task was given the image)"

# Ranks sharing a GPU (both hosts with 4 GPUs, from their topologies; mps =
# auto): no CUDA MPS daemon is started by h2's planning step (it would end
# with that step), and h2's plan and the record say so.
mkdir -p "$W/gpus"
cp "$top_srcdir/tests/fixtures/2s-4gpu-2nic.xml" "$W/gpus/topo-h1.xml"
cp "$top_srcdir/tests/fixtures/2s-4gpu-2nic.xml" "$W/gpus/topo-h2.xml"
sed -e 's/^gpus_per_rank = 0/gpus_per_rank = 1\nranks_per_gpu = 2/' -e 's/^ranks_per_node = 1/ranks_per_node = 2/' \
    -e 's/^job = "pyx"/job = "pyxmps"/' "$W/pyx.conf" >"$W/pyxmps.conf"
sed -e "s|^\"|export GPURUN_TOPOLOGY='$W/gpus/topo-%h.xml'\n\"|" -e 's|pyx\.conf|pyxmps.conf|; s|pyx\.out|pyxmps.out|' \
    -e 's|ntasks-per-node=1|ntasks-per-node=2|' "$W/pyx.sh" >"$W/pyxmps.sh"
id=$(sbatch --parsable "$W/pyxmps.sh" | cut -d';' -f1)
n=0
while squeue -h -j "$id" 2>/dev/null | grep -q . && [ $n -lt 900 ]; do sleep 0.2; n=$((n + 1)); done
d=$(ls -d "$W"/results/pyxmps/*Z-*/ 2>/dev/null | tail -1 | sed 's:/$::')
contains "$W/pyxmps.out" "gpurun-exit=0" "ranks sharing a GPU on 2 hosts under pyxis: gpurun exits 0"
[ -n "$d" ] && jq -e '.host_plans.h2.mps | .started == false and .active == false and (.note | test("pyxis"))' \
    "$d/record.json" >/dev/null && jq -e '.mps.hosts.h2.note | test("pyxis")' "$d/record.json" >/dev/null
ok $? "... h2's planning step started no CUDA MPS daemon, and its plan and the record say why"
[ -n "$d" ] && jq -r '.mps.hosts.h2.note' "$d/record.json" | sed 's/^/#   /'
[ -n "$d" ] || sed 's/^/#   /' "$W/pyxmps.out" | head -10
done_testing
