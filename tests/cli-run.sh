#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gpurun run with real Open MPI jobs: every rank reports, from inside, the
# cpus it may run on and the variables it got; they must match the plan.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if ! command -v mpirun >/dev/null 2>&1; then
    echo "1..0 # SKIP mpirun not found (Debian: openmpi-bin)"
    exit 0
fi
if [ ! -x "${HELLO:-}" ]; then
    echo "1..0 # SKIP examples/hello/hello not built (configure found no MPI)"
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
unset GPURUN_TOPOLOGY
ncores=$(hwloc-calc --number-of core all 2>/dev/null || nproc)

# job NAME LAUNCHER RANKS [EXTRA LINES]: write $TMP/NAME.conf running hello.
job() {
    cat >"$TMP/$1.conf" <<JOB
command = "\${hello}"
launcher = "$2"
ranks_per_node = $3
threads_per_rank = 1
params { hello = "$HELLO" }
$4
JOB
}

# check_ranks RUN_DIR N SIZE: each rank's own report matches plan.json.
check_ranks() {
    dir=$1
    i=0
    while [ "$i" -lt "$2" ]; do
        line=$(rank_output "$dir" "$i" | grep '^rank=' | head -1)
        field() { printf '%s\n' "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
        want_cpus=$(jq -r ".ranks[$i].cpus" "$dir/plan.json")
        want_threads=$(jq -r ".ranks[$i].env.OMP_NUM_THREADS" "$dir/plan.json")
        [ "$(field cpus)" = "$want_cpus" ] && [ "$(field OMP_NUM_THREADS)" = "$want_threads" ] &&
            [ "$(field GPURUN_RANK)" = "$i" ] && [ "$(field rank)" = "$3" -o "$3" = any ] &&
            [ "$(field size)" = "$4" ] && [ "$(field OMP_PROC_BIND)" = close ]
        ok $? "rank $i runs on cpus $(field cpus) (plan: $want_cpus), ${want_threads} thread(s), GPURUN_RANK=$i, size $(field size)"
        [ "$(jq -r ".bindings[$i].match" "$dir/record.json")" = true ]
        ok $? "rank $i recorded the binding it got, matching the plan"
        i=$((i + 1))
    done
}

last_run() { ls -d "$TMP"/results/"$1"/*Z-*/ | tail -1 | sed 's:/$::'; }

job two mpirun 2
run "$GPURUN" run "$TMP/two.conf" --quiet
expect_rc 0 "2 ranks under mpirun"
d=$(last_run two)
[ "$(jq -r .state "$d/record.json")" = ok ] && [ "$(jq -r .launcher "$d/record.json")" = mpirun ]
ok $? "the record says ok, launched by mpirun"
for i in 0 1; do
    rank_output "$d" "$i" | sed -n "s/^rank=\([0-9]*\) .*/\1/p" >"$TMP/mpirank"
    [ "$(cat "$TMP/mpirank")" = "$i" ]
    ok $? "MPI_Comm_rank of the rank in rank $i's output is $i"
done
check_ranks "$d" 2 any 2

job four mpirun 4 "oversubscribe = true"
run "$GPURUN" run "$TMP/four.conf" --quiet
expect_rc 0 "4 ranks under mpirun with oversubscribe on $ncores cores"
check_ranks "$(last_run four)" 4 any 4

job loc local 2
run "$GPURUN" "$TMP/loc.conf" --quiet
expect_rc 0 "gpurun JOB.conf with the local launcher"
check_ranks "$(last_run loc)" 2 0 1

run "$GPURUN" run "$TMP/two.conf" --dry-run
expect_rc 0 "--dry-run"
contains "$TMP/out" "mpirun -np 2 --map-by ppr:2:node --bind-to none" "the dry run shows the mpirun command line"
contains "$TMP/out" "OMP_NUM_THREADS=1 OMP_PLACES=cores OMP_PROC_BIND=close GPURUN_RANK=1 GPURUN_LOCAL_RANK=1" "... and each rank's environment"
n=$(ls "$TMP/results/two" | wc -l)
run "$GPURUN" run "$TMP/two.conf" --dry-run
[ "$(ls "$TMP/results/two" | wc -l)" = "$n" ]
ok $? "a dry run starts nothing and writes no run folder"

run "$GPURUN" run "$TMP/two.conf" --quiet --set ranks_per_node=1 --set env.GPURUN_TEST_VALUE="a b'c"
expect_rc 0 "--set overrides job keys"
d=$(last_run two)
[ "$(jq '.ranks | length' "$d/plan.json")" = 1 ]
ok $? "--set ranks_per_node=1 gives one rank"
rank_output "$d" 0 >"$TMP/r0"
contains "$TMP/r0" "size=1" "... and MPI sees one rank"

# The plan of another node (GPUs and NICs) still reaches the ranks as
# variables; binding to cpus this machine lacks is reported, not hidden.
job fake local 2 "gpus_per_rank = 1"
run env GPURUN_TOPOLOGY="$FIXTURES/2s-4gpu-2nic.xml" "$GPURUN" run "$TMP/fake.conf" --quiet
d=$(last_run fake)
rank_output "$d" 1 >"$TMP/r1"
contains "$TMP/r1" "CUDA_VISIBLE_DEVICES=2" "rank 1 gets CUDA_VISIBLE_DEVICES of its planned GPU (2 ranks spread: GPU 2)"
contains "$TMP/r1" "UCX_NET_DEVICES=mlx5_1:1" "rank 1 gets UCX_NET_DEVICES of the NIC on its GPU's switch"
if [ "$(hwloc-calc --number-of pu all)" -lt 16 ]; then
    contains "$TMP/err" "gpurun: warning: rank 1: planned cpus 8, got" "a binding the kernel refused is a warning"
    [ "$(jq -r '.bindings[1].match' "$d/record.json")" = false ]
    ok $? "... and is recorded as a mismatch"
else
    skip "this machine has the fixture's cpus: no mismatch to see"
    skip "this machine has the fixture's cpus: no mismatch to see"
fi

# A template found on GPURUN_TEMPLATE_PATH: its setup step runs once, in the
# run folder, before the ranks; its defaults fill ${name}s the job leaves.
mkdir -p "$TMP/tpl"
cat >"$TMP/tpl/hellot.conf" <<'TPL'
description = "hello with a setup step"
command     = "${hello} ${extra}"
setup       = { "/bin/sh -c 'echo prepared >> setup-marker.txt'" }
defaults    { extra = "--sleep 0" }
TPL
cat >"$TMP/t.conf" <<JOB
template = "hellot"
launcher = "local"
ranks_per_node = 2
threads_per_rank = 1
params { hello = "$HELLO" }
JOB
run env GPURUN_TEMPLATE_PATH="$TMP/tpl" "$GPURUN" run "$TMP/t.conf" --quiet
expect_rc 0 "a job on a template from GPURUN_TEMPLATE_PATH"
d=$(last_run t)
[ "$(cat "$d/setup-marker.txt")" = prepared ]
ok $? "the template's setup step ran exactly once, in the run folder"
[ "$(jq -r .template "$d/record.json")" = hellot ] && [ "$(jq -r '.command[1]' "$d/record.json")" = --sleep ]
ok $? "the record names the template and the command its defaults expanded"
sed -i 's/echo prepared/false/' "$TMP/tpl/hellot.conf"
run env GPURUN_TEMPLATE_PATH="$TMP/tpl" "$GPURUN" run "$TMP/t.conf" --quiet
expect_rc 1 "a failing setup step passes its own exit status through (1), before any rank starts"
contains "$TMP/err" "setup step 1 (/bin/sh -c 'false >> setup-marker.txt') failed: exit status 1" "... naming the step"
d=$(last_run t)
[ -z "$(rank_output "$d" 0)" ] && [ ! -e "$d/rank.0.out" ] && [ -z "$(ls "$d" | grep -v -e '^launcher.out$' -e '^setup.log$' | grep '\.out$')" ]
ok $? "... and no rank was started"
run "$GPURUN" run "$TMP/t.conf"
expect_rc 2 "a template that is nowhere on the search path is exit 2"
contains "$TMP/err" "template 'hellot' not found" "... saying so"
ln=$(grep -n '^template' "$TMP/t.conf" | cut -d: -f1)
contains "$TMP/err" "$TMP/t.conf:$ln: key 'template': template 'hellot' not found" "... on the job file's line of the key"
run "$GPURUN" run "$TMP/t.conf" --set template=hellott
expect_rc 2 "a --set template that is nowhere is exit 2"
contains "$TMP/err" "--set template=hellott: key 'template': template 'hellott' not found" "... naming the --set"

# Hydra's mpirun (MPICH, Intel MPI, MVAPICH2) takes other options than Open
# MPI's (before: "unrecognized argument map-by", exit 255).  Which one
# `mpirun` is comes from the file it resolves to and what is beside it.
mkdir -p "$TMP/ompi5" "$TMP/impi"
for f in mpirun ompi_info; do printf '#!/bin/sh\nexit 0\n' >"$TMP/ompi5/$f"; done
for f in mpirun impi_info mpiexec.hydra; do printf '#!/bin/sh\nexit 0\n' >"$TMP/impi/$f"; done
chmod 755 "$TMP/ompi5"/* "$TMP/impi"/*
PATH=$TMP/impi:$PATH run "$GPURUN" run "$TMP/two.conf" --dry-run
contains "$TMP/out" "mpirun -n 2 -ppn 2 -genv I_MPI_PIN off -genv MV2_ENABLE_AFFINITY 0 -genvlist " \
    "an mpirun beside impi_info (Intel MPI): Hydra's options, and Intel MPI's pinning off"
PATH=$TMP/ompi5:$PATH run "$GPURUN" run "$TMP/two.conf" --dry-run
contains "$TMP/out" "mpirun -np 2 --map-by ppr:2:node --bind-to none" "an mpirun beside ompi_info (Open MPI 5): Open MPI's options"
if [ -x /usr/bin/mpirun.mpich ] && [ -x /usr/bin/hydra_pmi_proxy ]; then
    # Debian's mpirun.mpich resolves to mpiexec.hydra, which starts its proxy
    # from its own folder: both, first on PATH, as an MPICH install has them.
    mkdir -p "$TMP/mpich"
    ln -s /usr/bin/mpirun.mpich "$TMP/mpich/mpirun"
    ln -s /usr/bin/hydra_pmi_proxy "$TMP/mpich/hydra_pmi_proxy"
    cat >"$TMP/hydra.conf" <<'JOB'
command = "/bin/sh -c 'echo pmi=$PMI_RANK local=$MPI_LOCALRANKID gpurun=$GPURUN_RANK pin=$I_MPI_PIN value=$GPURUN_TEST_VALUE'"
launcher = "mpirun"
ranks_per_node = 2
threads_per_rank = 1
env { GPURUN_TEST_VALUE = "a b" }
JOB
    # As in a batch job: every rank inherits the batch step's SLURM_PROCID
    # and SLURM_LOCALID, 0; Hydra's own numbers are the ranks'.
    PATH=$TMP/mpich:$PATH SLURM_PROCID=0 SLURM_LOCALID=0 run "$GPURUN" run "$TMP/hydra.conf" --quiet
    expect_rc 0 "2 ranks under MPICH's mpirun (Hydra), SLURM_PROCID=0 inherited by both"
    d=$(last_run hydra)
    [ "$(jq -r .state "$d/record.json")" = ok ] && [ "$(jq -r '[.bindings[].match] | all' "$d/record.json")" = true ]
    ok $? "the record says ok, every rank bound as planned"
    for i in 0 1; do
        rank_output "$d" "$i" >"$TMP/hy$i"
        contains "$TMP/hy$i" "pmi=$i local=$i gpurun=$i pin=off value=a b" "rank $i: Hydra's PMI_RANK and MPI_LOCALRANKID are gpurun's rank $i, with the job's env"
    done
else
    skip "a real run under MPICH's mpirun: /usr/bin/mpirun.mpich not found (Debian: mpich)"
    skip "... its record"
    skip "... rank 0"
    skip "... rank 1"
fi

done_testing
