#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# pyxis (container runtime "pyxis", issue 15) on the real one-node test
# cluster: a fake pyxis SPANK plugin built here (tests/fake_pyxis.c) makes
# the real srun take --container-image, --container-mounts and
# --container-workdir and records what each task got.  Inside an sbatch
# allocation, runtime "auto" picks pyxis (srun --help lists
# --container-image); gpurun's srun passes the image, gpurun-rank's folder
# (read-only), the run and job folders at their own paths, and the run
# folder as working folder; both ranks run.  The fake enters no image: what
# a real pyxis and enroot do inside is not checked here.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

need_spank_h # SPANK_H, to build the fake pyxis plugin
for tool in cc jq srun sbatch squeue; do
    if ! command -v $tool >/dev/null 2>&1; then
        echo "1..0 # SKIP $tool not found"
        exit 0
    fi
done
if ! cc -std=c11 -shared -fPIC -o "$TMP/fake_pyxis.so" "$top_srcdir/tests/fake_pyxis.c" 2>"$TMP/cc.err"; then
    echo "1..0 # SKIP the fake pyxis plugin does not build here: $(head -c 300 "$TMP/cc.err")"
    exit 0
fi
unset GPURUN_TOPOLOGY SLURM_CPU_BIND SLURM_GPU_BIND
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# Two free TCP ports, from the kernel.
ports=$(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))' 2>/dev/null) || ports="16967 16968"
set -- $ports
export GPURUN_SLURM_DIR="$TMP/slurm" GPURUN_SLURMCTLD_PORT=$1 GPURUN_SLURMD_PORT=$2
export GPURUN_SLURM_PLUGSTACK="$TMP/plugstack.conf"
echo "required $TMP/fake_pyxis.so out=$TMP/pyxis.log" >"$GPURUN_SLURM_PLUGSTACK"
cluster=$top_srcdir/tests/cluster/slurm-single.sh
trap '"$cluster" down >/dev/null 2>&1; rm -rf "$TMP"' EXIT INT TERM
cluster_up "$cluster" "Slurm test cluster"

srun --help >"$TMP/help" 2>&1
contains "$TMP/help" "--container-image" "the real srun lists the fake pyxis's --container-image"

wait_job() { # until Slurm no longer lists the job (bounded)
    n=0
    while squeue -h -j "$1" 2>/dev/null | grep -q . && [ $n -lt 600 ]; do sleep 0.2; n=$((n + 1)); done
}

RANK=$(realpath "$(dirname "$GPURUN")/gpurun-rank")
RANKDIR=$(dirname "$RANK")
mkdir -p "$TMP/job"
cat >"$TMP/job/probe.sh" <<'PROBE'
#!/bin/sh
echo "probe rank=$GPURUN_RANK cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status) pwd=$(pwd)"
PROBE
chmod 755 "$TMP/job/probe.sh"
cat >"$TMP/job/pyx.conf" <<JOB
job = "pyx"
command = "./probe.sh"
ranks_per_node = 2
gpus_per_rank = 0
threads_per_rank = 1
timeout = "2m"
container { image = "nvcr.io#hpc/fake:1" }
JOB
cat >"$TMP/batch.sh" <<SCRIPT
#!/bin/sh
#SBATCH --nodes=1
#SBATCH --ntasks=2
#SBATCH --output=$TMP/batch.out
"$GPURUN" run "$TMP/job/pyx.conf" --quiet
echo "gpurun-exit=\$?"
SCRIPT
run sbatch --parsable "$TMP/batch.sh"
expect_rc 0 "sbatch takes a batch script that runs a container job"
wait_job "$(cut -d';' -f1 "$TMP/out")"
d=$(ls -d "$TMP"/job/results/pyx/*Z-*/ 2>/dev/null | tail -1 | sed 's:/$::')
contains "$TMP/batch.out" "gpurun-exit=0" "gpurun run exits 0 inside the allocation"
[ -n "$d" ] && jq -e '.state == "ok" and .launcher == "srun" and .container.runtime == "pyxis" and (.container.why | contains("auto"))' "$d/record.json" >/dev/null
ok $? "runtime auto inside the allocation picked pyxis; the job ran under srun and its record says ok"
[ -n "$d" ] || { sed 's/^/#   /' "$TMP/batch.out" | head -20; }

# What each task got from srun, as the plugin saw it.
mounts="$d:$d,$TMP/job:$TMP/job"
ldd "$RANK" >/dev/null 2>&1 || mounts="$RANKDIR:$RANKDIR:ro,$mounts"
for i in 0 1; do
    want="task=$i image=nvcr.io#hpc/fake:1 mounts=$mounts workdir=$d"
    got=$(grep "^task=$i " "$TMP/pyxis.log" 2>/dev/null)
    [ "$got" = "$want" ]
    ok $? "task $i: srun gave pyxis the image, gpurun-rank's folder read-only, the run and job folders, the run folder as working folder"
    [ "$got" = "$want" ] || diag "got '$got'" "wanted '$want'"
done
[ "$(wc -l <"$TMP/pyxis.log")" -eq 2 ]
ok $? "one container per rank, no per-rank runtime of gpurun's own (the plugin saw 2 tasks)"
for i in 0 1; do
    line=$(rank_output "$d" "$i" | grep '^probe ' | head -1)
    cpus=$(jq -r ".bindings[$i].cpus" "$d/record.json")
    [ "$line" = "probe rank=$i cpus=$cpus pwd=$d" ]
    ok $? "rank $i ran, bound as it reported, in the run folder ($line)"
done

done_testing
