#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gpurun diff (issue 39): two runs of a fast program that differ in ranks
# (and in their figure): the figure with its noise verdict, the layout, the
# second rank's binding, the overrides and params named; --json parses; a
# run found by its id; a run that cannot be read exits 2 naming it.
# Never on timing.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if ! command -v jq >/dev/null 2>&1; then
    echo "1..0 # SKIP jq not found (Debian: jq)"
    exit 0
fi
unset GPURUN_TOPOLOGY
cd "$TMP" || exit 1

printf '#!/bin/sh\necho "FOM: $1"\n' >"$TMP/prog.sh"
chmod +x "$TMP/prog.sh"
cat >"$TMP/d.conf" <<'JOB'
template = "generic"
launcher = "local"
ranks_per_node = 1
threads_per_rank = 1
params { program = "./prog.sh"  args = "10" }
JOB
R=$TMP/results/d
runs() { ls "$R" | grep -v '^latest$'; }
nth() { runs | sed -n "${1}p"; }

# Two runs of each configuration: the store gives the figures' noise.
for i in 1 2; do
    run "$GPURUN" run "$TMP/d.conf" --quiet
    expect_rc 0 "run $i of 1 rank"
done
for i in 1 2; do
    run "$GPURUN" run "$TMP/d.conf" --quiet --set ranks_per_node=2 --set params.args=12
    expect_rc 0 "run $i of 2 ranks"
done
A=$(nth 1)
B=$(nth 3)

run "$GPURUN" diff "$R/$A" "$R/$B"
expect_rc 0 "diff of two run folders: exit 0"
cp "$TMP/out" "$TMP/diff.txt"
sed 's/^/# /' "$TMP/diff.txt"
head -3 "$TMP/diff.txt" | grep -q '^figures:$'
ok $? "the figures first"
grep -q '^  value: 10 -> 12 (+20.0%), beyond the noise' "$TMP/diff.txt"
ok $? "... the figure's change, beyond the noise of 2 runs of each"
contains "$TMP/diff.txt" "2 and 2 runs of each configuration" "... with the runs it was judged on"
contains "$TMP/diff.txt" "  ranks: 1 -> 2" "the ranks named"
grep -q '^  rank 1: (none) -> {.*"cpus":' "$TMP/diff.txt"
ok $? "the second rank's binding named, with its cpus"
contains "$TMP/diff.txt" "  params.args: 10 -> 12" "the params"
contains "$TMP/diff.txt" '"ranks_per_node=2","params.args=12"' "the overrides"
! grep -q '^program:' "$TMP/diff.txt" && ! grep -q '^versions:' "$TMP/diff.txt"
ok $? "the same program and versions: not listed"

run "$GPURUN" diff --json "$R/$A" "$R/$B"
expect_rc 0 "diff --json: exit 0"
cp "$TMP/out" "$TMP/diff.json"
jqf() { run jq -e "$1" "$TMP/diff.json"; }
jqf '.differences[0] | .section == "figures" and .noise == "beyond the noise" and .runs_a == 2'
ok $rc "--json parses: the figure first, with its noise verdict"
jqf '[.differences[] | select(.section == "layout" and .key == "ranks" and .a == 1 and .b == 2)] | length == 1'
ok $rc "--json: the ranks"
jqf '[.differences[] | select(.section == "bindings" and .key == "rank 1" and .a == null and .b.cpus != null)] | length == 1'
ok $rc "--json: rank 1's binding"

# By run id (the results folder's index), one run per configuration: no noise.
run "$GPURUN" diff "$(nth 2)" "$(nth 4)" --results "$TMP/results"
expect_rc 0 "diff by run ids"
contains "$TMP/out" "A: " "... the runs found"
run "$GPURUN" diff "$A" "$A"
expect_rc 0 "a run against itself"
contains "$TMP/out" "no differences" "... no differences"

# A program changed between runs: its sha256 named.
echo '# changed' >>"$TMP/prog.sh"
run "$GPURUN" run "$TMP/d.conf" --quiet
C=$(nth 5)
run "$GPURUN" diff "$A" "$C"
grep -q '^program:$' "$TMP/out" && grep -q '^  sha256: [0-9a-f]\{64\} -> [0-9a-f]\{64\}$' "$TMP/out"
ok $? "a changed program: its sha256 named"
grep -q 'value: .*noise' "$TMP/out"
ok $((!$?)) "the same figure: no figure line"

# ---- runs that cannot be read: exit 2, naming them ---------------------
run "$GPURUN" diff "$R/$A" "$TMP/nonesuch"
expect_rc 2 "a run that does not exist: exit 2"
contains "$TMP/err" "nonesuch" "... named"
mkdir -p "$TMP/bad/x/broken"
printf '{"run_id": ' >"$TMP/bad/x/broken/record.json"
run "$GPURUN" diff "$TMP/bad/x/broken" "$R/$A"
expect_rc 2 "a cut-off record: exit 2"
contains "$TMP/err" "$TMP/bad/x/broken/record.json: not JSON" "... the record named"
mkdir -p "$TMP/bad/x/link"
ln -s "$R/$A/record.json" "$TMP/bad/x/link/record.json"
run "$GPURUN" diff "$R/$A" "$TMP/bad/x/link"
expect_rc 2 "a record.json that is a symlink: exit 2"
run "$GPURUN" diff "$R/$A"
expect_rc 2 "one run only: exit 2"

done_testing
