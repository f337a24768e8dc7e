#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The hpl template's NB and P x Q (params nb and grid, templates/hpl.conf)
# and its default tune space (issue 32 §1-2): a job that sets neither runs
# the same command and input as before; set, they reach hpccinf.txt and
# hpcc runs them; values that are not a whole number or a grid, and grids
# whose P x Q is not the ranks, stop before anything starts; gpurun tune
# lists the template's candidates, prunes the grids that cannot be, and
# runs the others with real hpcc (N = 400, 2 ranks: seconds).  Never on
# timing.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

unset GPURUN_TOPOLOGY GPURUN_TEMPLATE_PATH
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# hpcc and mpirun to run HPL; without them the dry runs use a stand-in.
real=yes
command -v hpcc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1 || real=
cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
[ "$cores" -ge 2 ] || real=
mkdir -p "$TMP/bin" "$TMP/hpl" "$TMP/old"
if [ -z "$real" ] && ! command -v hpcc >/dev/null 2>&1; then
    printf '#!/bin/sh\nexit 0\n' >"$TMP/bin/hpcc"
    chmod 755 "$TMP/bin/hpcc"
fi
PATH=$TMP/bin:$PATH
export PATH

# The example's input with N = 400.
sed 's/^2000         Ns$/400          Ns/' "$top_srcdir/examples/hpl/hpccinf.txt" >"$TMP/hpl/hpccinf.txt"
grep -q '^400          Ns$' "$TMP/hpl/hpccinf.txt"
ok $? "the example's input, N = 400"

# job NAME [PARAMS] [MORE]: $TMP/hpl/NAME.conf, 2 ranks of hpcc.
job() {
    cat >"$TMP/hpl/$1.conf" <<JOB
job = "$1"
template = "hpl"
launcher = "mpirun"
nodes = 1
ranks_per_node = 2
gpus_per_rank = 0
threads_per_rank = 1
timeout = "2m"
params { input = "hpccinf.txt" $2 }
$3
JOB
}
# row DIR: hpcc's HPL result row in DIR/hpccoutf.txt, as "N NB P Q".
row() { awk '/^W[RC][0-9]/ { print $2, $3, $4, $5; exit }' "$1/hpccoutf.txt" 2>/dev/null; }

# ---- not tuned: the same dry run and the same input ------------------------
# The template before nb and grid: the shipped one without them.
sed -e '/^hpl_dat/d' -e 's/  nb = ""  grid = ""//' "$top_srcdir/templates/hpl.conf" >"$TMP/old/hpl.conf"
! grep -q 'hpl_dat\|nb = ""' "$TMP/old/hpl.conf" && grep -q '^hpl_dat ' "$top_srcdir/templates/hpl.conf"
ok $? "the template without nb, grid and hpl_dat, as it was"
job plain
run "$GPURUN" run "$TMP/hpl/plain.conf" --dry-run
cp "$TMP/out" "$TMP/dry.new"
expect_rc 0 "dry run of a job that sets neither nb nor grid"
run env GPURUN_TEMPLATE_PATH="$TMP/old" "$GPURUN" run "$TMP/hpl/plain.conf" --dry-run
cmp -s "$TMP/out" "$TMP/dry.new"
ok $? "... the same, byte for byte, as with the template before nb and grid"
[ "$(grep -c '^# setup' "$TMP/dry.new")" = 1 ] && ! grep -q 'HPL.s input' "$TMP/dry.new"
ok $? "... one setup step (the copy), nothing set in it"
run "$GPURUN" plan "$TMP/hpl/plain.conf"
cp "$TMP/out" "$TMP/plan.new"
run env GPURUN_TEMPLATE_PATH="$TMP/old" "$GPURUN" plan "$TMP/hpl/plain.conf"
cmp -s "$TMP/out" "$TMP/plan.new"
ok $? "gpurun plan: the same too"

# ---- set: what the dry run says, and refused values --------------------------
job set 'nb = "64"  grid = "2x1"'
run "$GPURUN" run "$TMP/hpl/set.conf" --dry-run
expect_rc 0 "dry run with nb 64 and grid 2x1"
contains "$TMP/out" "# then in hpccinf.txt (HPL's input): NB 64, P x Q 2 x 1 (grid 2x1)" "... says what it sets in hpccinf.txt"
job flat 'grid = "flat"'
run "$GPURUN" run "$TMP/hpl/flat.conf" --dry-run
contains "$TMP/out" "P x Q 1 x 2 (grid flat)" "grid flat on 2 ranks: 1 x 2"

job bad 'nb = "64; touch pwned"'
run "$GPURUN" run "$TMP/hpl/bad.conf" --results "$TMP/results-bad"
expect_rc 2 "nb '64; touch pwned': exit 2"
contains "$TMP/err" "bad.conf:9: key 'params.nb': '64; touch pwned' is not a block size" "... naming the file, line and key"
[ ! -e "$TMP/results-bad" ] && [ ! -e pwned ] && [ ! -e "$TMP/hpl/pwned" ]
ok $? "... nothing started, no results folder, nothing run"
run "$GPURUN" run "$TMP/hpl/plain.conf" --set 'params.grid=1x2$(touch pwned)' --results "$TMP/results-bad"
expect_rc 2 "--set params.grid='1x2\$(touch pwned)': exit 2"
contains "$TMP/err" "--set params.grid=1x2\$(touch pwned): key 'params.grid'" "... naming the --set"
[ ! -e "$TMP/results-bad" ] && [ ! -e pwned ]
ok $? "... nothing started"
job square 'grid = "2x2"'
run "$GPURUN" run "$TMP/hpl/square.conf" --results "$TMP/results-bad"
expect_rc 2 "grid 2x2 on 2 ranks: exit 2"
contains "$TMP/err" "square.conf:9: key 'params.grid': '2x2': P x Q = 4 but the layout has 2 ranks" \
    "... P x Q = 4 but the layout has 2 ranks"
[ ! -e "$TMP/results-bad" ]
ok $? "... nothing started"
run "$GPURUN" submit "$TMP/hpl/square.conf" --dry-run
expect_rc 2 "gpurun submit of it: exit 2 before anything is queued"
contains "$TMP/err" "square.conf:9: key 'params.grid': '2x2': P x Q = 4" "... saying why"
# HPL 1.0's input has no PMAP line: its line 10 is not the grids' count.
grep -v '^0            PMAP' "$TMP/hpl/hpccinf.txt" >"$TMP/hpl/old.txt"
sed -e 's/^job = "plain"/job = "oldin"/' -e 's/input = "hpccinf.txt"/input = "old.txt"  grid = "auto"/' \
    "$TMP/hpl/plain.conf" >"$TMP/hpl/oldin.conf"
run "$GPURUN" run "$TMP/hpl/oldin.conf" --dry-run
expect_rc 2 "an input without HPL 2's PMAP line, and a grid to set: exit 2"
contains "$TMP/err" "$TMP/hpl/old.txt:10: not HPL.dat's line of the count of process grids" "... naming the input and its line"

# ---- gpurun tune --dry-run: the template's space -------------------------------
GPURUN_TOPOLOGY=$FIXTURES/cpu-only-2numa.xml run "$GPURUN" tune "$TMP/hpl/plain.conf" --dry-run
expect_rc 0 "tune --dry-run of an hpl job with no tune block"
contains "$TMP/out" "32 candidates from template 'hpl'" "the template's space: 4 NBs x 2 grids x 4 rank counts"
contains "$TMP/out" "params.nb=192 params.grid=auto ranks_per_node=8 8 ranks, 0 GPUs, 8 threads" "... NB 192, grid auto on 8 ranks"
contains "$TMP/out" "params.nb=64 params.grid=flat ranks_per_node=2 pruned: the same run as params.nb=64 params.grid=auto ranks_per_node=2 here (grid flat: 1 x 2 on 2 ranks)" \
    "flat on 2 ranks: the same run as auto, pruned"
contains "$TMP/out" "24 can run here, 8 pruned" "24 of 32 run there (auto and flat alike on 1 and 2 ranks)"
GPURUN_TOPOLOGY=$FIXTURES/single-gpu-ws.xml run "$GPURUN" tune "$TMP/hpl/plain.conf" --dry-run
contains "$TMP/out" "8 candidates from template 'hpl'" "on a node with a GPU: NB and grid, no ranks per node"

# A job's own grids: those whose P x Q is not its ranks are pruned.
job grids '' 'tune { params.nb = {"32", "64"}  params.grid = {"auto", "flat", "2x1", "2x2"} }'
GPURUN_TOPOLOGY=$FIXTURES/cpu-only-2numa.xml run "$GPURUN" tune "$TMP/hpl/grids.conf" --dry-run
expect_rc 0 "tune --dry-run of the job's own grids"
[ "$(grep -c "params.grid=2x2 *pruned: key 'params.grid': '2x2': P x Q = 4 but the layout has 2 ranks" "$TMP/out")" = 2 ]
ok $? "grid 2x2 pruned for both NBs: P x Q = 4 but the layout has 2 ranks"
contains "$TMP/out" "params.nb=32 params.grid=2x1             2 ranks, 0 GPUs, 2 threads" "grid 2x1 can run"
contains "$TMP/out" "4 can run here, 4 pruned" "4 of 8 run (auto and 2x1 for each NB)"
contains "$TMP/out" "nothing was started" "... nothing started"

# ---- a real tune ---------------------------------------------------------------
if [ -n "$real" ]; then
    run "$GPURUN" run "$TMP/hpl/plain.conf" --results "$TMP/results-plain" --quiet
    expect_rc 0 "hpcc run of the job that sets neither (N = 400, 2 ranks)"
    cmp -s "$TMP/hpl/hpccinf.txt" "$TMP/results-plain/plain/latest/hpccinf.txt"
    ok $? "... its hpccinf.txt is the input, byte for byte"
    [ "$(row "$TMP/results-plain/plain/latest")" = "400 128 1 2" ]
    ok $? "... hpcc ran the input's NB 128, 1 x 2 ($(row "$TMP/results-plain/plain/latest"))"

    run "$GPURUN" run "$TMP/hpl/set.conf" --results "$TMP/results-set" --quiet
    expect_rc 0 "hpcc run with nb 64 and grid 2x1"
    diff "$TMP/hpl/hpccinf.txt" "$TMP/results-set/set/latest/hpccinf.txt" >"$TMP/diff"
    printf '%s\n' 8c8 '< 128          NBs' --- '> 64           NBs' 11,12c11,12 '< 1            Ps' \
        '< 2            Qs' --- '> 2            Ps' '> 1            Qs' | cmp -s - "$TMP/diff"
    ok $? "... its hpccinf.txt differs in lines 8, 11 and 12 only"
    [ "$(row "$TMP/results-set/set/latest")" = "400 64 2 1" ]
    ok $? "... hpcc ran NB 64, 2 x 1 ($(row "$TMP/results-set/set/latest"))"

    run "$GPURUN" tune "$TMP/hpl/grids.conf" --results "$TMP/results-tune"
    expect_rc 0 "a real tune of hpcc: 2 NBs x 4 grids on 2 ranks"
    cp "$TMP/out" "$TMP/tune.out"
    ! grep -q "trial [0-9]*: .*grid=\(2x2\|flat\)" "$TMP/tune.out"
    ok $? "... no trial of a pruned grid (2x2) or of one run already (flat)"
    # Each trial's hpccoutf.txt: the NB and P x Q its candidate asked for.
    n=0
    bad=0
    for d in "$TMP"/results-tune/grids/*Z-*; do
        cand=$(jq -r '.tune.candidate' "$d/record.json")
        case $cand in
        "params.nb=32 params.grid=auto") want="400 32 1 2" ;;
        "params.nb=64 params.grid=auto") want="400 64 1 2" ;;
        "params.nb=32 params.grid=2x1") want="400 32 2 1" ;;
        "params.nb=64 params.grid=2x1") want="400 64 2 1" ;;
        *) want="(none: $cand)" ;;
        esac
        got=$(row "$d")
        n=$((n + 1))
        [ "$got" = "$want" ] || { bad=$((bad + 1)); diag "$cand: hpcc ran '$got', wanted '$want'"; }
    done
    [ "$n" -ge 4 ] && [ "$bad" = 0 ]
    ok $? "each of the $n trials ran the NB and P x Q of its candidate (hpccoutf.txt)"
    contains "$TMP/tune.out" "best gflops" "the tune chose a layout"
    grep -q '^params {  nb = "\(32\|64\)"  grid = "\(auto\|2x1\)" .*input = "hpccinf.txt"' "$TMP/hpl/grids.tuned.conf"
    ok $? "grids.tuned.conf holds the chosen nb and grid"
    run "$GPURUN" run "$TMP/hpl/grids.tuned.conf" --dry-run
    expect_rc 0 "... and reads as a job file"
else
    for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
        skip "hpcc, mpirun or a second core not found here: no real HPL run"
    done
fi

done_testing
