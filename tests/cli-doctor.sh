#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gpurun doctor on made-up nodes: a fake sysfs/proc root (--root), a
# topology fixture (--topology), fake tools first and alone on PATH (shell
# scripts using only builtins, standing in for mpirun, ompi_info, ucx_info,
# srun, sbatch and pmix_info), and the fake NVML library (tests/fake_nvml.c,
# built by make check as $FAKE_NVML; built here with cc when run by hand).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

unset GPURUN_TOPOLOGY SLURM_JOB_ID SLURM_JOB_NUM_NODES
export CUDA_MPS_PIPE_DIRECTORY="$TMP/no-mps-daemon" # not a daemon this machine may run
export GPURUN_PMIX_LIBRARY=/nonexistent/libpmix.so.2 # only the fake pmix_info counts
fixture=$FIXTURES/2s-4gpu-2nic.xml
gpus=0000:13:00.0,0000:15:00.0,0000:83:00.0,0000:85:00.0

if [ -z "${FAKE_NVML:-}" ] || [ ! -r "$FAKE_NVML" ]; then
    FAKE_NVML=$TMP/libnvidia-ml.so.1
    ${CC:-cc} -std=c11 -D_GNU_SOURCE -shared -fPIC -o "$FAKE_NVML" "$top_srcdir/tests/fake_nvml.c" 2>/dev/null ||
        FAKE_NVML=
fi

# tool DIR NAME BODY: a fake tool (sh, builtins only).
tool() {
    mkdir -p "$1"
    printf '#!/bin/sh\n%s\n' "$3" >"$1/$2"
    chmod +x "$1/$2"
}

# A good node: every piece of GPUDirect there, a CUDA-aware Open MPI.
good=$TMP/good-bin
tool "$good" mpirun 'echo "mpirun (Open MPI) 5.0.3"; echo; echo "Report bugs to https://www.open-mpi.org/community/help/"'
tool "$good" ompi_info 'printf "%s\n" "package:Open MPI fake" "ompi:version:full:5.0.3" \
  "mca:pml:ucx:version:\"mca:2.1.0\"" "mca:opal:base:param:opal_built_with_cuda_support:value:true"'
tool "$good" ucx_info 'case $1 in -v) echo "# Library version: 1.16.0"; echo "# Configured with: --with-cuda=/usr/local/cuda" ;;
  -d) echo "#      Transport: cuda_copy"; echo "#      Transport: gdr_copy" ;; esac'
tool "$good" srun 'echo "slurm 23.11.4"'
tool "$good" sbatch 'echo "slurm 23.11.4"'
tool "$good" nvidia-cuda-mps-control 'exit 0'
tool "$good" pmix_info 'echo "                 Package: OpenPMIx fake"; echo "                    PMIx: 4.2.9"'
tool "$good" gdb 'exit 0' # a stalled run's stacks (issue 40): found on PATH
root=$TMP/good-root
mkdir -p "$root/sys/module/nvidia_peermem" "$root/dev" "$root/proc"
: >"$root/dev/gdrdrv"
for d in mlx5_0 mlx5_1; do
    mkdir -p "$root/sys/class/infiniband/$d/ports/1"
    echo "4: ACTIVE" >"$root/sys/class/infiniband/$d/ports/1/state"
done
# RAPL readable (issue 31): one package and its DRAM.
for z in intel-rapl:0:package-0 intel-rapl:0:0:dram; do
    mkdir -p "$root/sys/class/powercap/${z%:*}"
    echo "${z##*:}" >"$root/sys/class/powercap/${z%:*}/name"
    echo 1000 >"$root/sys/class/powercap/${z%:*}/energy_uj"
done

# doctor ARGS...: gpurun doctor on the good node's tools and fake NVML.
doctor() {
    run env PATH="$good" GPURUN_NVML_LIBRARY="${FAKE_NVML:-/nonexistent}" FAKE_NVML_DEVICES="$gpus" \
        "$GPURUN" doctor --topology "$fixture" --root "$root" "$@"
}

if [ -z "$FAKE_NVML" ]; then
    echo "1..0 # SKIP no fake NVML (\$FAKE_NVML unset and no C compiler to build tests/fake_nvml.c)"
    exit 0
fi

# Locked memory: the fake root's proc/self/limits stands in for this process's.
limits() { # limits ROOT VALUE
    mkdir -p "$1/proc/self"
    printf 'Limit                     Soft Limit           Hard Limit           Units\n' >"$1/proc/self/limits"
    printf 'Max locked memory         %-20s %-20s bytes\n' "$2" "$2" >>"$1/proc/self/limits"
}
limits "$root" unlimited

doctor
expect_rc 0 "a good node: no FAIL, exit 0"
contains "$TMP/out" "PASS  Launcher          mpirun: found on PATH" "launcher line"
contains "$TMP/out" "PASS  MPI               mpirun (Open MPI) 5.0.3; CUDA-aware" "mpirun version, CUDA-aware"
contains "$TMP/out" "PASS  Slurm             slurm 23.11.4 (srun, sbatch); not inside an allocation" "Slurm versions"
contains "$TMP/out" "PASS  PMIx              pmix_info: PMIx: 4.2.9" "PMIx from pmix_info"
contains "$TMP/out" "PASS  hwloc             hwloc " "hwloc runtime version"
contains "$TMP/out" "PASS  GPUs              4 x NVIDIA A100-SXM4-40GB (0000:13:00.0, 0000:15:00.0" "GPUs from the topology"
contains "$TMP/out" "PASS  NVIDIA driver     driver 550.54.15; NVML sees all 4 GPUs" "driver from NVML"
contains "$TMP/out" "PASS  GPU 0 health      0000:13:00.0 PCIe Gen4 x16 (max Gen4 x16), SM 1410 of 1410 MHz, 35 C" "GPU health line"
contains "$TMP/out" "PASS  GPU-NIC affinity  4 of 4 GPUs have a high-speed NIC on their PCIe switch" "affinity summary"
contains "$TMP/out" "PASS  Peer memory       nvidia_peermem loaded" "peer memory"
contains "$TMP/out" "PASS  GDRCopy           /dev/gdrdrv present" "GDRCopy"
contains "$TMP/out" "PASS  RDMA ports        2 of 2 ACTIVE: mlx5_0:1, mlx5_1:1" "RDMA ports"
contains "$TMP/out" "PASS  GPUDirect RDMA    ready for 4 of 4 GPUs" "GPUDirect summary"
contains "$TMP/out" "PASS  Locked memory     unlimited" "memlock unlimited (proc/self/limits of the fake root)"
contains "$TMP/out" "PASS  CUDA MPS          $good/nvidia-cuda-mps-control: gpurun starts a daemon" "MPS control on PATH"
contains "$TMP/out" "0 WARN, 0 FAIL: this node is ready for GPU jobs" "summary line"
grep -q 'fix:' "$TMP/out"
[ $? -ne 0 ]
ok $? "no fix lines when everything passes"

doctor --json
expect_rc 0 "--json"
cp "$TMP/out" "$TMP/doctor.json" # `run` writes $TMP/out: jq must read a copy
run jq -e '.gpurun_doctor == 1 and .fail == 0 and .host == "fix-2s4g"
           and ([.checks[].status] | all(. == "PASS" or . == "WARN" or . == "FAIL"))
           and ([.checks[].id] | index("gpudirect") != null and index("gpu3") != null and index("memlock") != null)
           and (.checks[] | select(.id == "mpi") | .status == "PASS" and .fix == null)
           and .gpudirect.peer_memory == "nvidia_peermem" and .gpudirect.gdrcopy == true
           and .gpudirect.open_mpi.cuda == true and .gpudirect.ucx.gdr_copy == true' "$TMP/doctor.json"
expect_rc 0 "--json: every check with id, status and fix, and the GPUDirect pieces"

# A GPU whose link trained narrow, one that is held down by heat.
run env PATH="$good" GPURUN_NVML_LIBRARY="$FAKE_NVML" FAKE_NVML_DEVICES="$gpus" FAKE_NVML_LINK=4,4,8,16 \
    "$GPURUN" doctor --topology "$fixture" --root "$root"
expect_rc 0 "WARN lines alone: exit 0"
contains "$TMP/out" "WARN  GPU 2 health      PCIe link x8 of x16: 0000:83:00.0" "narrow PCIe link is a WARN"
contains "$TMP/out" "fix: reseat the GPU or check the slot and BIOS bifurcation" "... with its fix"
run env PATH="$good" GPURUN_NVML_LIBRARY="$FAKE_NVML" FAKE_NVML_DEVICES="$gpus" FAKE_NVML_THROTTLE=0x41 \
    "$GPURUN" doctor --topology "$fixture" --root "$root"
contains "$TMP/out" "WARN  GPU 0 health      clocks held down: HW thermal" "thermal slowdown is a WARN"
run env PATH="$good" GPURUN_NVML_LIBRARY="$FAKE_NVML" FAKE_NVML_DEVICES="0000:13:00.0,0000:15:00.0" \
    "$GPURUN" doctor --topology "$fixture" --root "$root"
contains "$TMP/out" "WARN  NVIDIA driver     driver 550.54.15; NVML sees 2 GPUs, the topology 4" "NVML missing GPUs"

# Slurm installed but broken; the same node inside an allocation.
broken=$TMP/broken-bin
cp -R "$good" "$broken"
tool "$broken" srun 'echo "srun: fatal: Could not establish a configuration source" >&2; exit 1'
run env PATH="$broken" GPURUN_NVML_LIBRARY="$FAKE_NVML" FAKE_NVML_DEVICES="$gpus" \
    "$GPURUN" doctor --topology "$fixture" --root "$root"
contains "$TMP/out" "WARN  Slurm             srun does not work: srun: fatal: Could not establish a configuration source" "a broken srun is a WARN"
contains "$TMP/out" "fix: check that slurm.conf is readable" "... with its fix"
run env PATH="$good" GPURUN_NVML_LIBRARY="$FAKE_NVML" FAKE_NVML_DEVICES="$gpus" SLURM_JOB_ID=4242 SLURM_JOB_NUM_NODES=2 \
    "$GPURUN" doctor --topology "$fixture" --root "$root"
contains "$TMP/out" "inside allocation 4242 (2 nodes)" "inside an allocation"
contains "$TMP/out" "PASS  Launcher          srun: inside Slurm allocation 4242" "srun chosen inside an allocation"

# MPICH's Hydra: the version is on the line after "HYDRA build details:".
hydra=$TMP/hydra-bin
tool "$hydra" mpirun 'printf "HYDRA build details:\n    Version:                                 4.0.2\n    Release Date:                            Thu Apr  7 12:34:45 CDT 2022\n"'
run env PATH="$hydra" GPURUN_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 \
    "$GPURUN" doctor --topology "$fixture" --root "$root"
contains "$TMP/out" "MPI               mpirun (MPICH Hydra) 4.0.2;" "MPICH's mpirun: its name and version"

# A bare node: no tools, no driver, no RDMA, limited locked memory.
bare=$TMP/bare-bin
mkdir -p "$bare" "$TMP/bare-root/sys"
limits "$TMP/bare-root" 65536
run env PATH="$bare" GPURUN_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 \
    "$GPURUN" doctor --topology "$fixture" --root "$TMP/bare-root"
expect_rc 1 "a bare node: FAIL, exit 1"
contains "$TMP/out" "FAIL  NVIDIA driver     4 NVIDIA GPUs on the PCI bus, but NVML is not available" "no NVML is a FAIL"
contains "$TMP/out" "fix: install the NVIDIA driver" "... with its fix"
contains "$TMP/out" "WARN  Launcher          local: no Slurm or Flux or PBS allocation and no mpirun on PATH" "no MPI launcher: WARN"
contains "$TMP/out" "WARN  MPI               no mpirun on PATH" "no mpirun: WARN"
contains "$TMP/out" "PASS  Slurm             not installed" "no Slurm: fine"
contains "$TMP/out" "WARN  stall stacks      neither gdb nor eu-stack on PATH" "no gdb nor eu-stack: WARN (issue 40)"
contains "$TMP/out" "fix: install gdb (Debian: apt install gdb)" "... saying what to install"
contains "$TMP/out" "WARN  Peer memory       neither nvidia_peermem nor nv_peer_mem is loaded" "no peer memory"
contains "$TMP/out" "fix: sudo modprobe nvidia_peermem" "... with its fix"
contains "$TMP/out" "WARN  RDMA ports        no RDMA device in /sys/class/infiniband" "no RDMA device"
contains "$TMP/out" "WARN  Locked memory     limited to 64 KiB" "limited locked memory"
contains "$TMP/out" "WARN  GPUDirect RDMA    not possible here: no peer-memory kernel module" "GPUDirect not possible, and why"
contains "$TMP/out" "1 FAIL: fix the FAIL lines before running GPU jobs here" "summary names the FAIL"
contains "$TMP/out" "WARN  CUDA MPS          nvidia-cuda-mps-control not on PATH" "no MPS control: WARN"
# CPU energy (issue 38 §10): a node with no powercap at all (a VM, a CPU
# without RAPL) has no counters an administrator could open, and doctor
# says so; one whose counters are root-only is told to ask for them.
contains "$TMP/out" "WARN  CPU energy        RAPL: this machine exposes no RAPL counters (a VM or a CPU without RAPL)" \
    "no powercap folder: this machine exposes no RAPL counters"
contains "$TMP/out" "fix: nothing for an administrator to open: there are no counters" "... nothing to ask an administrator for"
grep -q "ask the administrator" "$TMP/out"
[ $? -ne 0 ]
ok $? "... and no advice to ask the administrator"
mkdir -p "$TMP/bare-root/sys/class/powercap/intel-rapl-mmio:0"
run env PATH="$bare" GPURUN_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 \
    "$GPURUN" doctor --topology "$fixture" --root "$TMP/bare-root"
contains "$TMP/out" "RAPL: this machine exposes no RAPL counters (a VM or a CPU without RAPL)" \
    "a powercap folder with no package or DRAM zone: the same"
grep -q "ask the administrator" "$TMP/out"
[ $? -ne 0 ]
ok $? "... no advice to ask the administrator"
# Root-only counters: read as nobody (root reads any file), else made unreadable.
cp -R "$root" "$TMP/denied-root"
as_other=
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
    chmod 755 "$TMP"
    chmod -R a+rX "$TMP/denied-root" "$good"
    chmod 400 "$TMP"/denied-root/sys/class/powercap/*/energy_uj
    as_other="$(command -v setpriv) --reuid=65534 --regid=65534 --clear-groups" # env runs it on PATH=$good
elif [ "$(id -u)" -ne 0 ]; then
    chmod 000 "$TMP"/denied-root/sys/class/powercap/*/energy_uj
fi
if [ "$(id -u)" -ne 0 ] || [ -n "$as_other" ]; then
    run env PATH="$good" HOME="$TMP" GPURUN_NVML_LIBRARY="$FAKE_NVML" FAKE_NVML_DEVICES="$gpus" $as_other \
        "$GPURUN" doctor --topology "$fixture" --root "$TMP/denied-root"
    contains "$TMP/out" "WARN  CPU energy        RAPL: 0 of 2 domain(s) readable; " "root-only counters: none readable"
    contains "$TMP/out" "fix: ask the administrator to let a trusted group read /sys/class/powercap/intel-rapl:*/energy_uj (a chmod or a udev rule" \
        "... ask the administrator: a chmod or a udev rule"
    grep -q "exposes no RAPL counters" "$TMP/out"
    [ $? -ne 0 ]
    ok $? "... not told that the machine has none"
else
    for i in 1 2 3; do skip "root without setpriv: cannot read as another user"; done
fi

# Without a fake limits file the real limit counts: lowered here, it shows.
mkdir -p "$TMP/empty-root"
run sh -c 'ulimit -l 64 && exec env PATH="$1" "$2" doctor --topology "$3" --root "$4" --json' sh "$bare" "$GPURUN" \
    "$fixture" "$TMP/empty-root"
cp "$TMP/out" "$TMP/doctor.json"
run jq -e '.gpudirect.memlock == 65536' "$TMP/doctor.json"
expect_rc 0 "no proc/self/limits below the root: getrlimit's limit (ulimit -l 64)"

# Not CUDA-aware; RDMA ports down; the older peer-memory module in /proc/modules.
plain=$TMP/plain-bin
cp -R "$good" "$plain"
tool "$plain" ompi_info 'printf "%s\n" "ompi:version:full:4.1.4" "mca:mpi:base:param:mpi_built_with_cuda_support:value:false"'
tool "$plain" ucx_info 'exit 1'
mkdir -p "$TMP/plain-root/proc" "$TMP/plain-root/sys/class/infiniband/mlx5_0/ports/1"
echo "nv_peer_mem 16384 0 - Live 0x0 (OE)" >"$TMP/plain-root/proc/modules"
echo "1: DOWN" >"$TMP/plain-root/sys/class/infiniband/mlx5_0/ports/1/state"
run env PATH="$plain" GPURUN_NVML_LIBRARY="$FAKE_NVML" FAKE_NVML_DEVICES="$gpus" \
    "$GPURUN" doctor --topology "$fixture" --root "$TMP/plain-root"
contains "$TMP/out" "WARN  MPI               mpirun (Open MPI) 5.0.3; not CUDA-aware (Open MPI: built without it; UCX: no ucx_info)" "MPI not CUDA-aware: WARN"
contains "$TMP/out" "PASS  Peer memory       nv_peer_mem loaded" "nv_peer_mem from /proc/modules"
contains "$TMP/out" "WARN  RDMA ports        1 RDMA port, none ACTIVE" "RDMA port down"

# Other topologies: no GPU at all; AMD GPUs with and without amdgpu.
run env PATH="$good" "$GPURUN" doctor --topology "$FIXTURES/cpu-only-2numa.xml" --root "$root"
expect_rc 1 "no GPU: exit 1"
contains "$TMP/out" "FAIL  GPUs              no GPU in fix-cpuonly's topology" "no GPU is a FAIL"
grep -q "GPUDirect RDMA\|Peer memory" "$TMP/out"
[ $? -ne 0 ]
ok $? "no GPU: no GPU-only lines"
mkdir -p "$TMP/amd-root/sys/module/amdgpu"
run env PATH="$good" "$GPURUN" doctor --topology "$FIXTURES/amd-partitioned.xml" --root "$TMP/amd-root"
contains "$TMP/out" "PASS  AMD driver        amdgpu kernel driver loaded (2 GPUs)" "AMD: amdgpu loaded"
contains "$TMP/out" "PASS  GPUs              2 x AMD Instinct MI300X (0000:03:00.0, 0000:43:00.0" "AMD: PCI GPUs counted once"
contains "$TMP/out" "WARN  MPI               mpirun (Open MPI) 5.0.3; not ROCm-aware" "AMD: MPI must be ROCm-aware"
run env PATH="$good" "$GPURUN" doctor --topology "$FIXTURES/amd-partitioned.xml" --root "$root"
expect_rc 1 "AMD GPUs without amdgpu: exit 1"
contains "$TMP/out" "FAIL  AMD driver" "AMD: no amdgpu is a FAIL"

# Usage.
run "$GPURUN" doctor --help
expect_rc 0 "--help"
contains "$TMP/out" "--root DIR" "--help documents --root (for tests)"
run "$GPURUN" doctor --bogus
expect_rc 2 "an unknown option is exit 2"
run "$GPURUN" doctor extra
expect_rc 2 "an argument is exit 2"
run "$GPURUN" doctor --root "$TMP/no-such-root" --topology "$fixture"
expect_rc 2 "a missing root is exit 2"
run "$GPURUN" doctor --topology "$TMP/no-such.xml"
expect_rc 2 "a missing topology is exit 2"

# What a tool prints is quoted, never sent raw to the terminal (issue 11,
# item 7): escape codes and bytes that are not UTF-8 are shown as \xNN.
hostile=$TMP/hostile-bin
cp -R "$good" "$hostile"
tool "$hostile" mpirun 'printf "mpirun (Open MPI) 5.0.3 \033]0;owned\007\033[2J\n"'
tool "$hostile" pmix_info 'printf "                    PMIx: 4.2.9\377\n"'
run env PATH="$hostile" GPURUN_NVML_LIBRARY="$FAKE_NVML" FAKE_NVML_DEVICES="$gpus" \
    "$GPURUN" doctor --topology "$fixture" --root "$root"
esc=$(printf '\033')
bel=$(printf '\007')
! grep -q "[$esc$bel]" "$TMP/out"
ok $? "a tool's escape codes do not reach the terminal"
contains "$TMP/out" 'mpirun (Open MPI) 5.0.3 \x1b]0;owned\x07\x1b[2J' "... they are shown as \\xNN"
contains "$TMP/out" '4.2.9\xff' "... and so is a byte that is not UTF-8"
run env PATH="$hostile" GPURUN_NVML_LIBRARY="$FAKE_NVML" FAKE_NVML_DEVICES="$gpus" \
    "$GPURUN" doctor --topology "$fixture" --root "$root" --json
jq_out '[.checks[] | select(.detail | test("owned|4.2.9"))] | length == 2'
ok $rc "... and the JSON report keeps the check (its text is UTF-8)"

done_testing
