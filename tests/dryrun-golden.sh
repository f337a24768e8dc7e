#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The dry runs and batch scripts of every example, as one build of gpurun
# writes them, compared byte for byte with another's: a refactoring that
# changes nothing a user sees leaves them all identical (issue 41).
#
#   tests/dryrun-golden.sh OLD_GPURUN NEW_GPURUN [OUTDIR]
#   tests/dryrun-golden.sh --record GPURUN OUTDIR
#
# Each case is an example job file (examples/*/job.conf, examples/water-box's
# scan) x where it runs (plain; inside a Slurm allocation and inside a Flux
# instance, both faked by their variables; srun and flux only need to be on
# PATH for a dry run) x site profile (none; every profile in templates/sites)
# x command (`run --dry-run`, `submit --dry-run`), on the topology of
# tests/fixtures/2s-4gpu-2nic.xml (four GPUs: not this machine's, which
# may have none).  Every case runs in the same
# copy of examples/ with the same stub programs on PATH, so the builds see
# the same files.  What is normalised, and only that: the copy's folder and
# the results folder (its path -> @TMP@), the UTC time in submit-*.sbatch
# names and run ids (YYYYMMDDTHHMMSSZ, YYYYMMDD-HHMMSS..., YYYY-MM-DDTHH:MM:SS
# -> @TIME@), each build's folder and source folder (@BUILD@, @SRC@).
# Exit status: 0 all identical, 1 some differ (a diff is printed), 2 usage.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)

record() { # record GPURUN OUTDIR
    local g out=$2 work gbuild gsrc
    g=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
    mkdir -p "$out"
    # The build's own folders (its program and rank step, its templates/sites)
    # differ between the builds compared: named @BUILD@ and @SRC@.
    gbuild=$(cd "$(dirname "$g")/.." && pwd)
    gsrc=$(sed -n 's/^abs_top_srcdir = //p' "$gbuild/Makefile" 2>/dev/null)
    [ -n "$gsrc" ] || gsrc=$(dirname "$gbuild")
    gsrc=$(cd "$gsrc" && pwd)
    work=$(mktemp -d /tmp/gpurun-golden.XXXXXX)
    cp -r "$src/examples" "$work/ex"
    mkdir -p "$work/bin"
    # Stub programs: a dry run looks them up, never starts them.
    for p in gmx gmx_mpi lmp lmp_mpi xhpl namd2 namd3 torchrun hpcg all_reduce_perf stream \
        osu_latency osu_bw apptainer singularity podman enroot; do
        printf '#!/bin/sh\nexit 0\n' >"$work/bin/$p"
        chmod +x "$work/bin/$p"
    done
    : >"$work/ex/gromacs-ngc/benchMEM.tpr"
    for d in hello cg netcheck plan; do
        for p in hello cg netcheck my_app; do
            printf '#!/bin/sh\nexit 0\n' >"$work/ex/$d/$p"
            chmod +x "$work/ex/$d/$p"
        done
    done
    local flux_bin=/opt/flux-core-0.88.0/bin
    local jobs=() j
    for j in "$work"/ex/*/job.conf "$work/ex/water-box/scan.conf"; do jobs+=("$j"); done
    local n=0
    for j in "${jobs[@]}"; do
        local name
        name=$(basename "$(dirname "$j")")-$(basename "$j" .conf)
        for where in plain slurm flux; do
            local envs=(env -i HOME="$work" PATH="$work/bin:$flux_bin:/usr/local/bin:/usr/bin:/bin" LANG=C.UTF-8
                GPURUN_TOPOLOGY_CACHE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
            case $where in
            slurm) envs+=(SLURM_JOB_ID=4242 SLURM_JOB_NUM_NODES=2 SLURM_JOB_GPUS=0,1 SLURM_STEP_GPUS=1
                SLURM_CLUSTER_NAME=golden SLURM_JOB_PARTITION=gpu) ;;
            flux) envs+=(FLUX_URI=local:///nonexistent/golden FLUX_JOB_ID=f2Golden FLUX_JOB_NNODES=2) ;;
            esac
            for site in none $(cd "$src/templates/sites" && ls *.conf | sed 's/\.conf$//'); do
                local set=()
                [ "$site" = none ] || set=(--set "site=$site")
                local tenv=(GPURUN_TOPOLOGY="$src/tests/fixtures/2s-4gpu-2nic.xml")
                    for cmd in run submit; do
                        local c="$name.$where.$site.$cmd"
                        rm -rf "$work/results"
                        (cd "$work/ex" && "${envs[@]}" "${tenv[@]}" "$g" "$cmd" "$j" --dry-run "${set[@]}" \
                            --results "$work/results" >"$out/$c.out" 2>"$out/$c.err"
                            echo "rc=$?" >"$out/$c.rc")
                        # the batch scripts a submit wrote, in name order
                        if [ -d "$work/results" ]; then
                            find "$work/results" -type f -name 'submit-*' | sort | while read -r f; do
                                echo "== ${f#"$work"/}"
                                cat "$f"
                            done >"$out/$c.scripts"
                        fi
                        n=$((n + 1))
                    done
            done
        done
    done
    # normalise: the work folder, UTC times
    for f in "$out"/*; do
        sed -i -e "s#$work#@TMP@#g" -e "s#$gbuild#@BUILD@#g" -e "s#$gsrc#@SRC@#g" \
            -e 's/[0-9]\{8\}T[0-9]\{6\}Z/@TIME@/g' \
            -e 's/[0-9]\{8\}-[0-9]\{6\}\(Z\|-[0-9]\+\)\?/@TIME@/g' \
            -e 's/[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]\(\.[0-9]*\)\?Z\?/@TIME@/g' "$f"
    done
    rm -rf "$work"
    echo "$n" >"$out/CASES"
}

case "${1:-}" in
--record)
    [ $# -eq 3 ] || { echo "usage: $0 --record GPURUN OUTDIR" >&2; exit 2; }
    record "$2" "$3"
    ;;
"" | -h | --help)
    echo "usage: $0 OLD_GPURUN NEW_GPURUN [OUTDIR] | --record GPURUN OUTDIR" >&2
    exit 2
    ;;
*)
    [ $# -ge 2 ] || { echo "usage: $0 OLD_GPURUN NEW_GPURUN [OUTDIR]" >&2; exit 2; }
    out=${3:-$(mktemp -d /tmp/gpurun-golden-cmp.XXXXXX)}
    record "$1" "$out/old"
    record "$2" "$out/new"
    cases=$(cat "$out/old/CASES")
    ok0=$(grep -l '^rc=0' "$out"/old/*.rc | wc -l)
    if diff -r "$out/old" "$out/new" >"$out/diff"; then
        echo "dryrun-golden: $cases cases ($ok0 exit 0), all identical ($out)"
        exit 0
    fi
    echo "dryrun-golden: $cases cases, differences ($out/diff):"
    head -100 "$out/diff"
    exit 1
    ;;
esac
