#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The project's own MPI programs, examples/cg and examples/netcheck: run
# directly under mpirun (the solver converges to the manufactured solution,
# and 1, 2, 3 and 4 ranks agree to rounding; every netcheck line parses and
# every figure is positive and finite), then through gpurun with their
# example jobs and templates (the record says ok and holds the figures).
# make check exports CG and NETCHECK, the built programs.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if ! command -v mpirun >/dev/null 2>&1; then
    echo "1..0 # SKIP mpirun not found (Debian: openmpi-bin)"
    exit 0
fi
if [ ! -x "${CG:-}" ] && [ ! -x "${NETCHECK:-}" ]; then
    echo "1..0 # SKIP examples/cg/cg and examples/netcheck/netcheck not built (configure found no MPI)"
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
unset GPURUN_TOPOLOGY
# One thread per rank: 4 ranks of several spinning OpenMP threads on a small
# machine take minutes.  The templates are found in the source tree.
export OMP_NUM_THREADS=1
GPURUN_TEMPLATE_PATH=$top_srcdir/templates
export GPURUN_TEMPLATE_PATH

mpi() { # mpi NP CMD...: mpirun, as many ranks as asked on any machine
    np=$1
    shift
    run mpirun --oversubscribe -np "$np" "$@"
}

# field NAME FILE: NAME=value from the last `cg:` line of FILE
field() { grep '^cg: ' "$2" | tail -1 | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# close A B REL: |A - B| <= REL * max(|A|, |B|)
close() {
    awk -v a="$1" -v b="$2" -v rel="$3" 'BEGIN {
        d = a - b; if (d < 0) d = -d
        m = a < 0 ? -a : a; n = b < 0 ? -b : b; if (n > m) m = n
        exit !(a != "" && b != "" && d <= rel * m) }'
}

# le A B: A <= B, both numbers
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && b != "" && a + 0 <= b + 0) }'; }

# ---- cg, directly ----------------------------------------------------------
if [ ! -x "${CG:-}" ]; then
    skip "cg tests: examples/cg/cg not built (CG='${CG:-}')"
else
    # Converged solves: tol 1e-8 on a 32^3 grid.
    for np in 1 2 4; do
        mpi "$np" "$CG" --n 32 --tol 1e-8
        cp "$TMP/out" "$TMP/cg.$np"
        expect_rc 0 "cg converges on $np rank(s)"
        line=$(grep '^cg: ' "$TMP/out")
        printf '%s\n' "$line" | grep -Eq '^cg: n=32 ranks='"$np"' threads=1 iterations=[0-9]+ residual=[0-9.e+-]+ error=[0-9.e+-]+ time_s=[0-9.]+ gflops=[0-9.]+$'
        ok $? "cg on $np rank(s) prints its solve line: $line"
        gflops=$(sed -n 's/^CG FOM: \([0-9.]*\) GFLOP\/s$/\1/p' "$TMP/out")
        awk -v g="$gflops" 'BEGIN { exit !(g > 0) }'
        ok $? "... and 'CG FOM: $gflops GFLOP/s', positive"
        le "$(field residual "$TMP/out")" 1e-8
        ok $? "... the true relative residual $(field residual "$TMP/out") is within --tol 1e-8"
        # The discrete solution is the manufactured u exactly (a product of
        # quadratics): what is left is the solver's error, below tol here.
        le "$(field error "$TMP/out")" 1e-8
        ok $? "... the error against the manufactured solution, $(field error "$TMP/out"), is below 1e-8"
    done
    for np in 2 4; do
        it1=$(field iterations "$TMP/cg.1") itn=$(field iterations "$TMP/cg.$np")
        [ -n "$it1" ] && [ "$it1" = "$itn" ] &&
            close "$(field residual "$TMP/cg.1")" "$(field residual "$TMP/cg.$np")" 1e-4 &&
            close "$(field error "$TMP/cg.1")" "$(field error "$TMP/cg.$np")" 1e-4
        ok $? "cg on $np ranks takes the iterations of 1 rank ($itn, $it1) and agrees on residual and error"
    done

    # Fixed work (--tol 0): 30 iterations, far from convergence, where
    # rounding differences stay at rounding size.  3 ranks cut 33 planes
    # unevenly; --stage-halos takes the path of a device build.
    mpi 1 "$CG" --n 33 --tol 0 --iters 30
    cp "$TMP/out" "$TMP/fixed.1"
    expect_rc 0 "cg --tol 0 --iters 30 runs exactly 30 iterations and succeeds"
    [ "$(field iterations "$TMP/fixed.1")" = 30 ]
    ok $? "... iterations=30"
    for run_args in "2" "3" "4" "3 --stage-halos"; do
        # shellcheck disable=SC2086 # the words of run_args
        set -- $run_args
        np=$1
        shift
        mpi "$np" "$CG" --n 33 --tol 0 --iters 30 "$@"
        close "$(field residual "$TMP/fixed.1")" "$(field residual "$TMP/out")" 1e-6 &&
            close "$(field error "$TMP/fixed.1")" "$(field error "$TMP/out")" 1e-6 && [ "$rc" -eq 0 ]
        ok $? "cg --tol 0 on $np ranks${*:+ $*} agrees with 1 rank to the digits printed ($(field residual "$TMP/out"))"
    done

    mpi 1 "$CG" --n 16 --iters 3
    expect_rc 1 "cg that does not converge in --iters exits 1"
    ! grep -q '^CG FOM' "$TMP/out"
    ok $? "... and prints no FOM line"
    contains "$TMP/err" "did not converge" "... and says so"
    mpi 1 "$CG" --n 0
    expect_rc 2 "cg --n 0 is a usage error"
    mpi 2 "$CG" --n 1
    expect_rc 2 "cg with fewer planes than ranks is a usage error"
fi

# ---- netcheck, directly --------------------------------------------------
if [ ! -x "${NETCHECK:-}" ]; then
    skip "netcheck tests: examples/netcheck/netcheck not built (NETCHECK='${NETCHECK:-}')"
else
    mpi 2 "$NETCHECK" --min 1 --max 65536 --iters 50
    expect_rc 0 "netcheck on 2 ranks"
    # Every line is a comment, the buffers, a pair, a measurement or a summary; every
    # number positive and finite; 17 sizes (1 B .. 64 KiB) per test, the
    # allreduce from 8 B (14 sizes).
    awk '
        function num(v) { return v ~ /^[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/ && v + 0 > 0 }
        /^#/ { next }
        /^NETCHECK buffers: host$/ { buffers++; next }
        /^pair 0-1 [^ ]+ [^ ]+$/ { pairs++; next }
        $1 == "latency" && NF == 6 && $3 == "B" && $5 == "us" && $6 == "pair=0-1" && num($2) && num($4) { lat++; next }
        $1 == "bandwidth" && NF == 6 && $3 == "B" && $5 == "GB/s" && $6 == "pair=0-1" && num($2) && num($4) { bw++; next }
        $1 == "allreduce" && NF == 5 && $3 == "B" && $5 == "us" && num($2) && num($4) { ar++; next }
        /^NETCHECK (latency_us|bandwidth_GBps|allreduce_us): / && NF == 3 && num($3) { sum[$2]++; next }
        { print "bad line: " $0; bad++ }
        END { exit !(!bad && buffers == 1 && pairs == 1 && lat == 17 && bw == 17 && ar == 14 &&
                     sum["latency_us:"] == 1 && sum["bandwidth_GBps:"] == 1 && sum["allreduce_us:"] == 1) }
    ' "$TMP/out" >"$TMP/bad"
    ok $? "every netcheck line parses, every figure is positive and finite"
    sed 's/^/#   /' "$TMP/bad" | head -5
    grep '^NETCHECK' "$TMP/out" | sed 's/^/# /'
    # The summary repeats the table's smallest latency and largest bandwidth.
    [ "$(sed -n 's/^latency 1 B \([0-9.]*\) us.*/\1/p' "$TMP/out")" = \
        "$(sed -n 's/^NETCHECK latency_us: //p' "$TMP/out")" ] &&
        [ "$(sed -n 's/^bandwidth 65536 B \([^ ]*\) GB\/s.*/\1/p' "$TMP/out")" = \
            "$(sed -n 's/^NETCHECK bandwidth_GBps: //p' "$TMP/out")" ] &&
        [ "$(sed -n 's/^allreduce 8 B \([0-9.]*\) us$/\1/p' "$TMP/out")" = \
            "$(sed -n 's/^NETCHECK allreduce_us: //p' "$TMP/out")" ]
    ok $? "the NETCHECK lines are the smallest message's latency and allreduce and the largest's bandwidth"

    mpi 4 "$NETCHECK" --min 8 --max 64 --iters 10
    expect_rc 0 "netcheck on 4 ranks"
    grep -q '^pair 0-2 ' "$TMP/out" && grep -q '^pair 1-3 ' "$TMP/out" &&
        [ "$(grep -c '^latency .* pair=1-3$' "$TMP/out")" -eq 4 ]
    ok $? "... measures the pairs (0, 2) and (1, 3)"

    mpi 1 "$NETCHECK"
    expect_rc 2 "netcheck on 1 rank exits 2"
    contains "$TMP/err" "needs at least 2 ranks" "... and says it needs 2 ranks"
    mpi 2 "$NETCHECK" --min 3
    expect_rc 2 "netcheck --min 3 (not a power of two) is a usage error"
    mpi 2 "$NETCHECK" --buffers nowhere
    expect_rc 2 "netcheck --buffers nowhere is a usage error"
fi

# ---- through gpurun, with the example jobs and templates ----------------
# last_record JOB: the newest record.json of JOB
last_record() { ls -d "$TMP"/results/"$1"/*Z-*/ 2>/dev/null | tail -1 | sed 's:/$:/record.json:'; }

# fom_check RECORD NAME: the figure is in the record and positive, once the
# run records figures of merit (skipped before).
fom_check() {
    if ! jq -e 'has("foms")' "$1" >/dev/null 2>&1; then
        skip "$2: this gpurun writes no figures of merit into record.json yet"
        return
    fi
    v=$(jq -r ".foms.$2.value // empty" "$1")
    awk -v v="$v" 'BEGIN { exit !(v != "" && v + 0 > 0) }'
    ok $? "the record holds $2 = $v"
}

if [ -x "${CG:-}" ]; then
    run "$GPURUN" run "$top_srcdir/examples/cg/job.conf" --quiet --results "$TMP/results" \
        --set params.cg="$CG" --set params.n=32
    expect_rc 0 "gpurun run examples/cg/job.conf"
    rec=$(last_record cg)
    [ "$(jq -r .state "$rec" 2>/dev/null)" = ok ] && [ "$(jq -r .template "$rec")" = cg ]
    ok $? "the record says ok, template cg"
    rank_output "$(dirname "$rec")" 0 | grep -q '^CG FOM: '
    ok $? "rank 0's output has the CG FOM line"
    for f in gflops iterations residual; do fom_check "$rec" "$f"; done

    # The scaling example: 1 and 2 ranks, 3 runs each, every one ok.
    run "$GPURUN" run "$top_srcdir/examples/scaling/job.conf" --quiet --results "$TMP/results" \
        --set params.cg="$CG" --set params.n=32
    expect_rc 0 "gpurun run examples/scaling/job.conf"
    n=0 bad=0
    for rec in "$TMP"/results/cg-scaling/*Z-*/record.json; do
        [ -f "$rec" ] || continue
        n=$((n + 1))
        [ "$(jq -r .state "$rec")" = ok ] || bad=$((bad + 1))
    done
    [ "$n" -ge 3 ] && [ "$bad" -eq 0 ]
    ok $? "the scaling job left $n records (at least repeat = 3), all ok"
fi
if [ -x "${NETCHECK:-}" ]; then
    run "$GPURUN" run "$top_srcdir/examples/netcheck/job.conf" --quiet --results "$TMP/results" \
        --set params.netcheck="$NETCHECK" --set params.max=65536 --set params.iters=50
    expect_rc 0 "gpurun run examples/netcheck/job.conf"
    rec=$(last_record netcheck)
    [ "$(jq -r .state "$rec" 2>/dev/null)" = ok ] && [ "$(jq -r .template "$rec")" = netcheck ]
    ok $? "the record says ok, template netcheck"
    for f in latency_us bandwidth_GBps allreduce_us; do fom_check "$rec" "$f"; done
fi

# ---- each example as its README says: the quickstart build, an installation --
# (issue 30: examples/scaling did not run from the quickstart build, '../cg/cg'
# not found.)  From the build folder: the job files `make` put beside the
# programs (BUILD/examples/NAME/job.conf), templates from the source tree.
# From an installation (`make install DESTDIR=...` of this build): the
# examples copied out of PREFIX/share/gpurun/examples, templates the
# installation's own.  Small sizes: the mechanics, not the figures.
# states_ok DIR JOB N: DIR/JOB has N records or more, all of state ok.
states_ok() {
    n=0 bad=0
    for rec in "$1/$2"/*Z-*/record.json; do
        [ -f "$rec" ] || continue
        n=$((n + 1))
        [ "$(jq -r .state "$rec")" = ok ] || bad=$((bad + 1))
    done
    [ "$n" -ge "$3" ] && [ "$bad" -eq 0 ]
}
small_cg="--set params.n=24"
example_runs() { # example_runs WHERE GPURUN-BIN FOLDER-OF-EXAMPLES
    where=$1 bin=$2 ex=$3
    # Skipped only where make built no such program (no MPI): a built one
    # missing from an installation fails.
    if [ -x "${CG:-}" ]; then
        run "$bin" run "$ex/scaling/job.conf" --quiet --results "$TMP/r-$where" $small_cg
        expect_rc 0 "$where: gpurun run .../scaling/job.conf (the cg it names: ../cg/cg)"
        states_ok "$TMP/r-$where" cg-scaling 6
        ok $? "$where: the scaling example, 2 configurations x 3 runs, all ok"
        run "$bin" report --results "$TMP/r-$where" --job cg-scaling
        expect_rc 0 "$where: gpurun report --job cg-scaling"
        grep -q 'gflops (GFLOP/s, higher is better; throughput)' "$TMP/out" && grep -q efficiency "$TMP/out"
        ok $? "$where: the report of the scaling example: GFLOP/s with its efficiency"
        run "$bin" run "$ex/cg/job.conf" --quiet --results "$TMP/r-$where" $small_cg
        expect_rc 0 "$where: gpurun run .../cg/job.conf"
    else
        skip "$where: cg not built (no MPI at configure): the scaling and cg examples"
    fi
    if [ -x "${HELLO:-}" ]; then
        run "$bin" run "$ex/hello/job.conf" --quiet --results "$TMP/r-$where"
        expect_rc 0 "$where: gpurun run .../hello/job.conf"
    else
        skip "$where: hello not built: the hello example"
    fi
    if [ -x "${NETCHECK:-}" ]; then
        run "$bin" run "$ex/netcheck/job.conf" --quiet --results "$TMP/r-$where" --set params.max=4096 \
            --set params.iters=20
        expect_rc 0 "$where: gpurun run .../netcheck/job.conf"
    else
        skip "$where: netcheck not built: the netcheck example"
    fi
}
if command -v jq >/dev/null 2>&1; then
    example_runs build "$GPURUN" "$top_builddir/examples"
    DEST=$TMP/inst
    unset MAKEFLAGS MFLAGS MAKELEVEL
    make -C "$top_builddir" install DESTDIR="$DEST" >"$TMP/install.log" 2>&1
    ok $? "make install DESTDIR=$DEST"
    bin=$(find "$DEST" -path '*/bin/gpurun' -type f | head -1)
    share=${bin%/bin/gpurun}/share/gpurun
    [ -f "$share/examples/scaling/job.conf" ] && [ -f "$share/examples/scaling/README.md" ] &&
        [ -f "$share/examples/water-box/water-box.conf" ] && [ -f "$share/examples/resnet-ddp/train.py" ] &&
        { [ ! -x "${CG:-}" ] || [ -x "$share/examples/cg/cg" ]; }
    ok $? "installed: the examples' job files, READMEs, inputs and built programs in share/gpurun/examples"
    # As the READMEs say: a copy of one's own (the runs write beside the job file).
    cp -R "$share/examples" "$TMP/my-examples"
    # The installation's own templates: none from the source tree (not in a
    # subshell: the test count is this shell's).
    unset GPURUN_TEMPLATE_PATH
    example_runs installed "$bin" "$TMP/my-examples"
    # GROMACS and LAMMPS, where installed (quickstart.sh runs them).
    if command -v gmx_mpi >/dev/null 2>&1 && ! gmx_needs_rdtscp; then
        run "$bin" run "$TMP/my-examples/water-box/job.conf" --quiet \
            --results "$TMP/r-gmx" --set params.nsteps=200
        expect_rc 0 "installed: gpurun run water-box/job.conf (GROMACS)"
        rec=$(ls -d "$TMP"/r-gmx/water-box/*/ | tail -1)record.json
        v=$(jq -r '.program_version // empty' "$rec" 2>/dev/null)
        [ -n "$v" ]
        ok $? "... its record names the GROMACS version ($v)"
    else
        skip "gmx_mpi not found, or it cannot run on this CPU (no rdtscp): the water-box example"
        skip "gmx_mpi not found: no GROMACS version to record"
    fi
    if command -v lmp >/dev/null 2>&1; then
        run "$bin" run "$TMP/my-examples/lj-melt/job.conf" --quiet \
            --results "$TMP/r-lmp" --set params.nsteps=200
        expect_rc 0 "installed: gpurun run lj-melt/job.conf (LAMMPS)"
        rec=$(ls -d "$TMP"/r-lmp/lj-melt/*/ | tail -1)record.json
        v=$(jq -r '.program_version // empty' "$rec" 2>/dev/null)
        [ -n "$v" ]
        ok $? "... its record names the LAMMPS version ($v)"
    else
        skip "lmp not found (Debian: lammps): the lj-melt example"
        skip "lmp not found: no LAMMPS version to record"
    fi
    if /usr/bin/python3 -c 'import torch, torchvision' >/dev/null 2>&1; then
        run "$bin" run "$TMP/my-examples/resnet-ddp/job.conf" --quiet \
            --results "$TMP/r-torch" --set gpus_per_rank=0 --set threads_per_rank=1 \
            --set 'params.args=--model resnet18 --image-size 32 --batch-size 8 --steps 2 --warmup 1'
        expect_rc 0 "installed: the resnet-ddp CPU line of its README"
    else
        skip "/usr/bin/python3 has no torch and torchvision (Debian: python3-torch, python3-torchvision): the resnet-ddp CPU line"
    fi
else
    skip "jq not found (Debian: jq): the examples from the build folder and an installation"
fi

done_testing
