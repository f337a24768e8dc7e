#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gpurun rerun (issue 39): a run again from the job file and template text
# kept in its run folder, with its overrides, into a new run with the same
# params, whatever the job file says now; a warning names what changed since
# (the job file, the program, an input).  Never on timing.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if ! command -v jq >/dev/null 2>&1; then
    echo "1..0 # SKIP jq not found (Debian: jq)"
    exit 0
fi
unset GPURUN_TOPOLOGY
cd "$TMP" || exit 1

# The program prints its argument and the input's first line as figures.
cat >"$TMP/prog.sh" <<'PROG'
#!/bin/sh
echo "FOM: $1"
echo "IN: $(head -1 "$2")"
PROG
chmod +x "$TMP/prog.sh"
echo 5 >"$TMP/in.dat"
# A template of the job's own, on generic, with an input.
cat >"$TMP/withinput.conf" <<'TPL'
description = "generic, with an input file"
base        = "generic"
command     = "${program} ${args} ${input}"
inputs      = { "${input}" }
TPL
cat >"$TMP/r.conf" <<'JOB'
template = "withinput"
launcher = "local"
ranks_per_node = 1
threads_per_rank = 1
params { program = "./prog.sh"  args = "10"  input = "in.dat" }
JOB
R=$TMP/results/r
runs() { ls "$R" | grep -v '^latest$'; }
rec() { echo "$R/$1/record.json"; }

run "$GPURUN" run "$TMP/r.conf" --quiet --set params.args=12 --set ranks_per_node=2
expect_rc 0 "the first run, with two overrides"
A=$(runs | head -1)
[ -f "$R/$A/job.conf" ] && cmp -s "$R/$A/job.conf" "$TMP/r.conf" && cmp -s "$R/$A/templates/withinput.conf" "$TMP/withinput.conf" &&
    [ -f "$R/$A/templates/generic.conf" ]
ok $? "the run folder keeps the job file, its template and the template's base"
run jq -e --arg s "$(sha256sum "$TMP/r.conf" | cut -d' ' -f1)" --arg p "$(sha256sum "$TMP/prog.sh" | cut -d' ' -f1)" \
    --arg i "$(sha256sum "$TMP/in.dat" | cut -d' ' -f1)" '.provenance |
    .job.sha256 == $s and .program.sha256 == $p and .inputs[0].sha256 == $i and .inputs[0].sampled == false and
    .overrides == ["params.args=12", "ranks_per_node=2"] and (.versions | has("gpurun") and has("mpi") and has("program"))' "$(rec "$A")"
ok $rc "the record's provenance: the job's, program's and input's sha256, the overrides, the versions"

# The job file changed since: the rerun runs the kept text, and says so.
sed 's/args = "10"/args = "99"/' "$TMP/r.conf" >"$TMP/r.conf.new" && mv "$TMP/r.conf.new" "$TMP/r.conf"
run "$GPURUN" rerun "$R/$A" --quiet
expect_rc 0 "rerun of a run folder: exit 0"
B=$(runs | sed -n 2p)
[ -n "$B" ] && [ "$B" != "$A" ]
ok $? "a new run ($B)"
run jq -e --slurpfile a "$(rec "$A")" '.params == $a[0].params and .ranks == 2 and .params.args == "12" and
    .foms.value.value == 12 and .provenance.overrides == $a[0].provenance.overrides' "$(rec "$B")"
ok $rc "... with the same params, ranks and overrides, not the job file's args now"
run "$GPURUN" rerun "$R/$A" --quiet
contains "$TMP/err" "job file (the kept copy is run) $TMP/r.conf changed since" "the warning names the changed job file"
grep -q 'program .* changed' "$TMP/err"
ok $((!$?)) "... and not the program, which did not change"

# The program and the input changed: the warning names both.
echo '# changed' >>"$TMP/prog.sh"
echo 6 >"$TMP/in.dat"
run "$GPURUN" rerun "$A" --quiet
expect_rc 0 "rerun by run id: exit 0"
contains "$TMP/err" "warning: since the run" "a warning"
grep -q "program $TMP/.*prog.sh changed since (sha256 [0-9a-f]*\.\.\. then" "$TMP/err"
ok $? "... naming the program"
contains "$TMP/err" "input $TMP/in.dat changed since" "... naming the input"
rm "$TMP/in.dat"
run "$GPURUN" rerun "$A" --dry-run
contains "$TMP/err" "input $TMP/in.dat: gone or unreadable since" "an input gone: named"

# A run of a scan: its one configuration again, with the same scan values.
echo 5 >"$TMP/in.dat"
cat >"$TMP/s.conf" <<'JOB'
template = "withinput"
launcher = "local"
threads_per_rank = 1
params { program = "./prog.sh"  args = "1"  input = "in.dat" }
scan { ranks_per_node = {1, 2}  params.args = {"3", "4"} }
JOB
run "$GPURUN" run "$TMP/s.conf" --quiet
expect_rc 0 "a scan of 4 configurations"
S=$TMP/results/s
third=$(ls "$S" | grep -v '^latest$' | sed -n 3p)
run "$GPURUN" rerun "$S/$third" --quiet
expect_rc 0 "rerun of the scan's third run"
new=$(ls "$S" | grep -v '^latest$' | sed -n 5p)
[ -n "$new" ] && [ "$(ls "$S" | grep -vc '^latest$')" = 5 ]
ok $? "... one run, not the scan"
run jq -e --slurpfile a "$S/$third/record.json" '.config == $a[0].config and .config.ranks_per_node == 2 and
    .params == $a[0].params and .ranks == 2' "$S/$new/record.json"
ok $rc "... of the same configuration (scan values, params, ranks)"
run "$GPURUN" diff "$S/$third" "$S/$new"
expect_rc 0 "diff of a run and its rerun"
# Only what was measured may differ: the conditions the runs ran beside.
grep -q "no differences" "$TMP/out" ||
    ! grep -qE '^(figures|hosts and hardware|layout|bindings|job|program|inputs|versions|environment):' "$TMP/out"
ok $? "... no differences but the conditions measured ($(tr '\n' ' ' <"$TMP/out" | cut -c1-300))"

# ---- runs that cannot be rerun -------------------------------------------
run "$GPURUN" rerun "$TMP/nonesuch"
expect_rc 2 "a run that does not exist: exit 2"
contains "$TMP/err" "nonesuch" "... named"
mkdir -p "$TMP/old/j/1"
jq 'del(.provenance)' "$(rec "$A")" >"$TMP/old/j/1/record.json"
run "$GPURUN" rerun "$TMP/old/j/1"
expect_rc 2 "a run without a kept job file (an older gpurun's): exit 2"
contains "$TMP/err" "kept no copy of its job file" "... said why"

done_testing
