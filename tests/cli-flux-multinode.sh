#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Flux on two hosts of the netns cluster (tests/cluster/NETNS.md): a Flux
# instance started inside a Slurm allocation of h1 and h2 (srun --mpi=pmi2
# flux start, Flux's brokers bootstrapped by Slurm's PMI-2), and gpurun in
# it with launcher = auto: one rank on each host through flux run, each host
# planning its own, an MPI program (examples/hello) and the water box (real
# GROMACS, Open MPI through Flux's PMI) as one MPI job across both, and a
# rank failing on h2 giving its exit status and host.  Everything the jobs
# read or write is in $GPURUN_NETNS_SCRATCH (each host has its own /tmp).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if ! find_flux; then
    echo "1..0 # SKIP $flux_missing"
    exit 0
fi
if [ ! -x "${HELLO:-}" ]; then
    echo "1..0 # SKIP examples/hello/hello not built (configure found no MPI)"
    exit 0
fi
for b in jq srun; do
    if ! command -v "$b" >/dev/null 2>&1; then
        echo "1..0 # SKIP no $b"
        exit 0
    fi
done
if [ ! -f /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmi2.so ] && [ ! -f /usr/lib64/slurm/mpi_pmi2.so ]; then
    echo "1..0 # SKIP no Slurm mpi/pmi2 plugin, which flux start under srun bootstraps with"
    exit 0
fi
# A build tree under /tmp (each host's /tmp is its own): bound into every host.
netns_share_build

cluster=$top_srcdir/tests/cluster/netns-cluster.sh
# A cluster of this script's own: names, subnet and port from the pid, in
# ranges no other test's cluster uses (cli-multinode.sh: subnets 100-249,
# cli-pyxis-multinode.sh: 60-99, the default cluster: 77; ports from 17817).
export GPURUN_NETNS_DIR=/srv/gpurun-fx-$$
export GPURUN_NETNS_PREFIX=gfx$$-
export GPURUN_NETNS_SUBNET=169.254.$((10 + $$ % 40))
export GPURUN_NETNS_SLURMCTLD_PORT=$((17600 + $$ % 50 * 2))
export GPURUN_NETNS_SLURMD_PORT=$((GPURUN_NETNS_SLURMCTLD_PORT + 1))
trap '"$cluster" down >/dev/null 2>&1; rm -rf "$TMP"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cluster_up "$cluster" "netns cluster"
unset GPURUN_TOPOLOGY SLURM_JOB_ID SLURM_JOBID FLUX_URI FLUX_JOB_ID
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
W=$GPURUN_NETNS_SCRATCH
cd "$W" || exit 1
# in_flux CMD...: CMD as the first program of a Flux instance on h1 and h2
in_flux() {
    run timeout 300 srun -N2 -n2 -c2 --mpi=pmi2 flux start "$@"
}
last_run() { ls -d "$W/results/$1"/*/ 2>/dev/null | tail -1 | sed 's:/$::'; }

cat >"$W/hello.conf" <<EOF
job = "fxhello"
command = "$HELLO"
nodes = 2
ranks_per_node = 1
gpus_per_rank = 0
threads_per_rank = 1
timeout = "3m"
results = "$W/results"
EOF
in_flux "$GPURUN" run "$W/hello.conf" --quiet
expect_rc 0 "hello on h1 and h2, gpurun in a Flux instance started in their Slurm allocation"
d=$(last_run fxhello)
[ "$(jq -c '[.bindings[].host]' "$d/record.json")" = '["h1","h2"]' ]
ok $? "... one rank on each host ($(jq -c '[.bindings[].host]' "$d/record.json" 2>/dev/null))"
jq -e '.launcher == "flux" and (.launcher_choice | startswith("flux: inside Flux instance")) and
       (.host_plans | length) == 2' "$d/record.json" >/dev/null
ok $? "... through flux run, auto's choice inside the instance; each host planned its own rank"
grep -q '^1: rank=1 size=2 host=h2' "$d/h2.out"
ok $? "... and h2's rank is rank 1 of one MPI job of 2 ($(head -1 "$d/h2.out" | cut -c1-40))"

sed "s|^command = .*|command = \"$HELLO --exit-rank 1 --exit-code 9\"|; s|fxhello|fxfail|" "$W/hello.conf" >"$W/fail.conf"
in_flux "$GPURUN" run "$W/fail.conf" --quiet
expect_rc 9 "rank 1 exits 9 on h2: gpurun exits 9"
contains "$TMP/err" "rank 1 on h2" "... naming the rank and its host"

if gmx_needs_rdtscp; then
    for i in $(seq 1 2); do skip "this CPU lacks rdtscp, which Debian's GROMACS build needs: no water box"; done
elif command -v gmx_mpi >/dev/null 2>&1 && command -v gmx >/dev/null 2>&1; then
    cp -r "$top_srcdir/examples/water-box" "$W/wb"
    in_flux "$GPURUN" run "$W/wb/job.conf" --set nodes=2 --set ranks_per_node=1 --set threads_per_rank=1 \
        --set params.nsteps=200 --set results="$W/results" --quiet
    expect_rc 0 "the water box on h1 and h2 under Flux"
    d=$(last_run water-box)
    grep -q 'Using 2 MPI processes' "$d/water-box.log" &&
        [ "$(jq -c '[.bindings[].host]' "$d/record.json")" = '["h1","h2"]' ] &&
        jq -e '.foms.ns_per_day.value > 0' "$d/record.json" >/dev/null
    ok $? "... one MPI job across both hosts, ns/day in the record"
else
    skip "no gmx_mpi and gmx (Debian: gromacs-openmpi)"
    skip "no gmx_mpi and gmx (Debian: gromacs-openmpi)"
fi

done_testing
