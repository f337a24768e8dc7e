#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gpurun collect: the shipped templates' figures of merit read from real
# GROMACS, LAMMPS, hpcc, HPCG, nccl-tests, STREAM, OMB and NAMD output (tests/logs), as
# a table and as JSON, and its exit status: 1 when a file lacks a figure or the sanity text, 2 for a
# file that cannot be read, an unknown template or a bad option.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if ! command -v jq >/dev/null 2>&1; then
    echo "1..0 # SKIP jq not found (Debian: jq)"
    exit 0
fi
LOGS=$top_srcdir/tests/logs
GPURUN_TEMPLATE_PATH=$top_srcdir/templates
export GPURUN_TEMPLATE_PATH

# ---- GROMACS -----------------------------------------------------------------
run "$GPURUN" collect --template gromacs "$LOGS/gromacs-water-2ranks.log"
expect_rc 0 "collect --template gromacs md.log"
contains "$TMP/out" "ns_per_day   12.218  ns/day" "the table: ns_per_day, its value and units"
contains "$TMP/out" "hour_per_ns  1.964   hour/ns" "... and hour_per_ns"
# The figure is GROMACS's own: the (ns/day) column of its Performance: line.
own=$(awk '/\(ns\/day\)/ { getline; if ($1 == "Performance:") print $2 }' "$LOGS/gromacs-water-2ranks.log")
run "$GPURUN" collect --template gromacs "$LOGS/gromacs-water-2ranks.log" --json
expect_rc 0 "collect --json"
[ "$(jq -r '.files[0].foms.ns_per_day.value' "$TMP/out")" = "$own" ]
ok $? "JSON ns_per_day is the md.log's own Performance: figure ($own)"
[ "$(jq -r '[.gpurun_collect, .template, .ok, .files[0].sanity, .files[0].foms.ns_per_day.units] | join(" ")' \
    "$TMP/out")" = "1 gromacs true true ns/day" ]
ok $? "JSON: version 1, template, ok, sanity found, units"

run "$GPURUN" collect -t gromacs "$LOGS/gromacs-water-detailed.log" --json
expect_rc 0 "GMX_DETAILED_PERF_STATS layout"
[ "$(jq -c '[.files[0].foms.ns_per_day.values, .files[0].foms.hour_per_ns.values]' "$TMP/out")" = "[[60.916],[0.394]]" ]
ok $? "... read by the (ns/day) and (hour/ns) headers, not by position"

run "$GPURUN" collect --template gromacs "$LOGS/gromacs-water-em.log"
expect_rc 1 "a minimisation log has no ns/day: exit 1"
contains "$TMP/err" "gromacs-water-em.log: no figure of merit of template 'gromacs' found" "... and says so"
contains "$TMP/out" "(not found)" "... the table says not found"

run "$GPURUN" collect --template gromacs "$LOGS/gromacs-water-2ranks.log" "$LOGS/gromacs-water-em.log" --json
expect_rc 1 "two files, one without a figure: exit 1"
[ "$(jq -c '[.ok, .files[0].foms.ns_per_day.value, .files[1].foms.ns_per_day.value, .files[1].foms.ns_per_day.values]' \
    "$TMP/out")" = '[false,12.218,null,[]]' ]
ok $? "... JSON: the figure of the first, null and [] for the second, ok false"

# A log cut short before mdrun's final report: no figure, no sanity text.
head -n 500 "$LOGS/gromacs-water-2ranks.log" >"$TMP/cut.log"
run "$GPURUN" collect --template gromacs "$TMP/cut.log"
expect_rc 1 "a log cut short: exit 1"
contains "$TMP/err" "sanity check of template 'gromacs': 'Finished mdrun' does not appear in" "... the sanity text is missing"

# A continuation (mdrun -cpi, appending) that died after a finished part: the
# earlier Performance: table and 'Finished mdrun' are in the log, so is the
# continuation's fatal error.
cat "$LOGS/gromacs-water-2ranks.log" "$LOGS/gromacs-append-fatal.txt" > "$TMP/appended.log"
run "$GPURUN" collect --template gromacs "$TMP/appended.log"
expect_rc 1 "an appended md.log whose continuation died: exit 1"
contains "$TMP/err" "sanity check of template 'gromacs': '^Fatal error:' appears in $TMP/appended.log, line 630" \
    "... naming the fatal error's line"

# Real md.logs of GROMACS 2022.5.  A run stopped by SIGTERM (after -resethway's
# reset) writes its Performance: table and 'Finished mdrun' as if it completed,
# and exits 1; continued to its end by mdrun -cpi (appending after the TERM
# line) it passes; a run stopped by -maxh exits 0 and passes.
run "$GPURUN" collect --template gromacs "$LOGS/gromacs-water-term.log"
expect_rc 1 "a GROMACS run stopped by SIGTERM: exit 1"
contains "$TMP/err" "sanity check of template 'gromacs': '^Received the ' appears in $LOGS/gromacs-water-term.log, line 526" \
    "... naming the signal's line"
run "$GPURUN" collect --template gromacs "$LOGS/gromacs-water-term-cont.log" "$LOGS/gromacs-water-maxh.log" --json
expect_rc 0 "the same continued to its end (mdrun -cpi), and a run stopped by -maxh: exit 0"
[ "$(jq -c '[.files[].sanity, .files[].foms.ns_per_day.values[]]' "$TMP/out")" = "[true,true,32.989,21.052]" ]
ok $? "... the continuation's ns/day, and the -maxh run's"

# ---- LAMMPS ------------------------------------------------------------------
run "$GPURUN" collect --template lammps "$LOGS/lammps-lj-2runs.log" --json
expect_rc 0 "collect --template lammps, a log of two runs"
[ "$(jq -c '.files[0].foms | [.tau_per_day.values, .timesteps_per_s.values, .loop_time.values]' "$TMP/out")" = \
    "[[413628.071,536655.071],[957.472,1242.257],[0.522208,0.402493]]" ]
ok $? "every run's figures, in order"
[ "$(jq -c '.files[0].foms.ns_per_day | [.value, .optional]' "$TMP/out")" = "[null,true]" ]
ok $? "lj units: no ns/day, an optional figure"
run "$GPURUN" collect --template lammps "$LOGS/lammps-lj-2runs.log"
contains "$TMP/out" "413628.071, 536655.071" "the table lists both runs"
run "$GPURUN" collect --template lammps "$LOGS/lammps-argon-real.log" "$LOGS/lammps-print-fake.log" --json
expect_rc 0 "real units, and a script printing fake Performance: lines"
[ "$(jq -c '[.files[0].foms.ns_per_day.value, .files[0].foms.hours_per_ns.value, .files[1].foms.tau_per_day.values]' \
    "$TMP/out")" = "[381.169,0.063,[505099.572]]" ]
ok $? "ns/day and hours/ns in real units; the fake lines are not read"

# electron units: "Performance: X fs/day, 0.000 hours/fs, Y timesteps/s".
run "$GPURUN" collect --template lammps "$LOGS/lammps-electron-eff-ch4.log" --json
expect_rc 0 "LAMMPS in electron units"
[ "$(jq -c '.files[0].foms | [.fs_per_day.value, .fs_per_day.units, .ns_per_day.value, .timesteps_per_s.value]' \
    "$TMP/out")" = '[26577371.575,"fs/day",null,61521.693]' ]
ok $? "... fs/day read, in fs/day, not as ns/day"

# LAMMPS before 2016 prints no Performance: line (nor does any version after a
# minimisation, or in si or cgs units): the loop time is the figure.  Its
# OpenMP builds of 2012-2015 write "on N procs (M MPI x T OpenMP) for".
run "$GPURUN" collect --template lammps "$LOGS/lammps-30apr2015-melt.log" "$LOGS/lammps-openmp-2013-loop.log" --json
expect_rc 0 "LAMMPS of 2013-2015: no Performance: line, exit 0"
[ "$(jq -c '[.files[].foms.loop_time.values[], .files[].foms.timesteps_per_s.values[]]' "$TMP/out")" = \
    "[0.21125,0.115472]" ]
ok $? "... the loop time of each, also in the '(1 MPI x 1 OpenMP)' form"

# A `run 0` (before a run: the initial thermo; after it: the energies again)
# writes "Loop time of 1.014e-06 on 2 procs for 0 steps with 4000 atoms": it
# measured nothing, and the last value is the one a reference checks.
run "$GPURUN" collect --template lammps "$LOGS/lammps-lj-run0.log" --json
expect_rc 0 "LAMMPS: a run 0 before and after the run"
[ "$(jq -c '.files[0].foms | [.loop_time.values, .loop_time.value, .tau_per_day.values]' "$TMP/out")" = \
    "[[0.621949],0.621949,[208377.313]]" ]
ok $? "... the loop time of the run of 300 steps only, not the run 0s'"
sed '/^run             \${nsteps}/q' "$LOGS/lammps-lj-run0.log" >"$TMP/run0-only.log"
run "$GPURUN" collect --template lammps "$TMP/run0-only.log"
expect_rc 1 "a log whose only loop is a run 0: exit 1"
contains "$TMP/err" "run0-only.log: no figure of merit of template 'lammps' found" "... no loop time, said"

# ---- HPL (hpcc) --------------------------------------------------------------
run "$GPURUN" collect --template hpl "$LOGS/hpcc-2tests-hpccoutf.txt" --json
expect_rc 0 "collect --template hpl hpccoutf.txt"
[ "$(jq -c '.files[0].foms | [.gflops.values, .gflops.units, .time_s.values]' "$TMP/out")" = \
    '[[4.184,5.456],"GFLOP/s",[0.16,0.41]]' ]
ok $? "both HPL tests' GFLOP/s and times"
# The same with a negative threshold (no residual check): HPL prints one header
# over both tests' rows.
run "$GPURUN" collect --template hpl "$LOGS/hpcc-nocheck-hpccoutf.txt" --json
[ "$(jq -c '.files[0].foms | [.gflops.values, .time_s.values]' "$TMP/out")" = '[[0.7774,1.656],[0.86,1.36]]' ]
ok $? "HPL without its residual check: both rows under the one header"
[ "$(jq -c '[.ok, .files[0].sanity]' "$TMP/out")" = '[true,true]' ]
ok $? "... and it passes: its input turned the check off, and HPL says its tests completed"

# ---- a template next to where collect runs -----------------------------------
mkdir "$TMP/here"
cat >"$TMP/here/mine.conf" <<'EOF'
description = "test"
command     = "true"
fom rate    { regex = "rate: ([^ ]+)"  units = "items/s" }
EOF
printf 'rate: 1.5\nrate: nan\nrate: 2\n' >"$TMP/here/out.txt"
(cd "$TMP/here" && "$GPURUN" collect --template mine out.txt) >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_rc 0 "a template in the current folder"
contains "$TMP/out" "out.txt  rate  1.5, 2  items/s" "... every finite value"
contains "$TMP/out" "note: out.txt: rate: line 2: 'nan' is not a finite number, skipped" "... nan skipped, said"

# ---- errors --------------------------------------------------------------------
run "$GPURUN" collect --template gromacs "$TMP/no-such.log"
expect_rc 2 "a missing file: exit 2"
contains "$TMP/err" "no-such.log: No such file or directory" "... named"
run "$GPURUN" collect --template gromacs "$TMP"
expect_rc 2 "a folder: exit 2"
run "$GPURUN" collect --template gromcs "$LOGS/gromacs-water-2ranks.log"
expect_rc 2 "an unknown template: exit 2"
contains "$TMP/err" "template 'gromcs' not found (did you mean 'gromacs'?)" "... with the nearest name"
run "$GPURUN" collect "$LOGS/gromacs-water-2ranks.log"
expect_rc 2 "no --template: exit 2"
run "$GPURUN" collect --template gromacs
expect_rc 2 "no file: exit 2"
run "$GPURUN" collect --template gromacs --csv "$LOGS/gromacs-water-2ranks.log"
expect_rc 2 "an unknown option: exit 2"
contains "$TMP/err" "unknown or incomplete option '--csv'" "... named"
# ---- real forms of success other than the closing lines (issue 11) -----------
run "$GPURUN" collect --template lammps "$LOGS/lammps-lj-quit.log"
expect_rc 0 "a LAMMPS script ended by quit (no 'Total wall time:'): exit 0"
run "$GPURUN" collect --template lammps "$LOGS/lammps-error-2nd-run.log"
expect_rc 1 "a LAMMPS script whose second run died with ERROR: exit 1, though its first run's figures are there"
contains "$TMP/err" "sanity check of template 'lammps': '^ERROR: ' appears in $LOGS/lammps-error-2nd-run.log, line 22" \
    "... saying what appears where"
run "$GPURUN" collect --template hpl "$LOGS/hpl-nvidia-23.10.out" "$LOGS/hpl-nvidia-24.09.out" --json
expect_rc 0 "NVIDIA's HPL (PASSED per test, no summary): exit 0"
[ "$(jq -c '[.files[].sanity, .files[1].foms.gflops.values]' "$TMP/out")" = "[true,true,[935600,937300]]" ]
ok $? "... sanity true for both, the GFLOP/s of each test"
# The T/V of the row is not always netlib's eight characters: NVIDIA's HPL
# (HPC-Benchmarks 23.10 and later) prints WC0, AMD's Zen HPL WR0XR8C48.
run "$GPURUN" collect --template hpl "$LOGS/hpl-nvidia-25.04.out" "$LOGS/hpl-amd-zen4.out" --json
expect_rc 0 "NVIDIA's WC0 and AMD's WR0XR8C48 rows: exit 0"
[ "$(jq -c '[.files[].foms.gflops.values[], .files[].foms.time_s.values[]]' "$TMP/out")" = "[337000,1011,52.88,344.99]" ]
ok $? "... their GFLOP/s and times"
# hpcc with two HPL tests, the second too big for malloc: HPL skips it ("HPL
# ERROR from process # 0 ... Memory allocation failed for A, x and b. Skip.")
# and its summary still has "0 tests completed and failed residual checks,".
run "$GPURUN" collect --template hpl "$LOGS/hpcc-skip-hpccoutf.txt"
expect_rc 1 "an HPL test skipped (malloc failed): exit 1"
contains "$TMP/err" "sanity check of template 'hpl': '^HPL ERROR ' appears in $LOGS/hpcc-skip-hpccoutf.txt, line 324" \
    "... naming HPL's error line"
sed 's/\.\.\.\.\.\. PASSED/...... FAILED/' "$LOGS/hpl-nvidia-23.10.out" >"$TMP/hpl-failed.out"
run "$GPURUN" collect --template hpl "$TMP/hpl-failed.out"
expect_rc 1 "... with its residual check FAILED: exit 1"
contains "$TMP/err" "sanity check of template 'hpl': '[.]{6} FAILED' appears in $TMP/hpl-failed.out, line " \
    "... saying what appears where"

# ---- HPCG, nccl-tests, STREAM ----------------------------------------------
# HPCG's official rating: the 3.1 report (reference HPCG's file, NVIDIA's
# stdout) and 3.0's YAML; not the "2.4 rating" nor the raw GFLOP/s lines.
run "$GPURUN" collect --template hpcg "$LOGS/hpcg-3.1-reference.txt" "$LOGS/hpcg-nvidia-stdout.txt" \
    "$LOGS/hpcg-3.0-yaml-summary.txt" --json
expect_rc 0 "collect --template hpcg: HPCG 3.1, NVIDIA's, 3.0: exit 0"
[ "$(jq -c '[.files[].foms.gflops.values[]]' "$TMP/out")" = "[3.18753,72.8829,0.773687]" ]
ok $? "... each one's VALID rating, in GFLOP/s"
# The verdict HPCG writes when a check failed (ReportResults.cpp), and no rating.
sed -e 's/^Spectral Convergence Tests::Result=PASSED/Spectral Convergence Tests::Result=FAILED/' \
    -e '/^Final Summary::/d' "$LOGS/hpcg-3.1-reference.txt" >"$TMP/hpcg-invalid.txt"
printf '%s\n' 'Final Summary::HPCG result is=INVALID.' \
    'Final Summary::Please review the YAML file contents=You may NOT submit these results for consideration.' \
    >>"$TMP/hpcg-invalid.txt"
run "$GPURUN" collect --template hpcg "$TMP/hpcg-invalid.txt"
expect_rc 1 "an INVALID HPCG run: exit 1"
contains "$TMP/err" "sanity check of template 'hpcg': 'HPCG result is=INVALID' appears in $TMP/hpcg-invalid.txt, line 119" \
    "... naming HPCG's verdict"
# NVIDIA's HPCG of 2017 printed "final = 202.6 GF" and no verdict.
run "$GPURUN" collect --template hpcg "$LOGS/hpcg-nvidia-k80-2017.txt"
expect_rc 1 "NVIDIA's HPCG of 2017 (no verdict on its output): exit 1"

run "$GPURUN" collect --template nccl-tests "$LOGS/nccl-tests-2.18.2-gh200.log" "$LOGS/nccl-tests-a100-16gpu.log" --json
expect_rc 0 "collect --template nccl-tests: 2.18.2 and an older one, exit 0"
[ "$(jq -c '[.files[].foms.busbw_avg.values[]], .files[0].foms.busbw_avg.units' "$TMP/out" | tr '\n' ' ')" = \
    '[14.9966,220.921] "GB/s" ' ]
ok $? "... their average bus bandwidth, GB/s"
run "$GPURUN" collect --template nccl-tests "$LOGS/nccl-tests-2.17.8-wrong.log"
expect_rc 1 "nccl-tests with wrong results (4 out of bounds): exit 1"
contains "$TMP/err" "sanity check of template 'nccl-tests': ' FAILED' appears in $LOGS/nccl-tests-2.17.8-wrong.log, line 37" \
    "... naming the Out of bounds line"

run "$GPURUN" collect --template stream "$LOGS/stream-5.10-lpi4a.txt" --json
expect_rc 0 "collect --template stream: exit 0"
[ "$(jq -c '.files[0].foms | [.triad_MBps.value, .copy_MBps.value, .scale_MBps.value, .add_MBps.value, .triad_MBps.units]' \
    "$TMP/out")" = '[6125.3,8239.8,8119,6132.5,"MB/s"]' ]
ok $? "... Triad, Copy, Scale, Add in MB/s"
run "$GPURUN" collect --template stream "$LOGS/stream-5.10-failed-sam460ex.txt"
expect_rc 1 "STREAM whose arrays failed validation: exit 1"
contains "$TMP/err" "sanity check of template 'stream': 'Failed Validation on array' appears in $LOGS/stream-5.10-failed-sam460ex.txt, line 29" \
    "... naming the failed validation"

# ---- OSU Micro-Benchmarks, NAMD ---------------------------------------------
run "$GPURUN" collect --template osu-latency "$LOGS/osu-5.7-latency-pkb.txt" "$LOGS/osu-5.7-allreduce-full-pkb.txt" \
    "$LOGS/osu-7.5-latency-cxi.txt" "$LOGS/osu-7.5-latency-validation.txt" "$LOGS/osu-7.3-bcast-ompi.txt" --json
expect_rc 0 "collect --template osu-latency: OMB 5.7, 7.5, 7.3: exit 0"
[ "$(jq -c '[.files[].foms.latency_us.values[]]' "$TMP/out")" = "[56.51,49.34,3.34,3.07,14.23]" ]
ok $? "... the latency of 8 bytes, us"
run "$GPURUN" collect --template osu-bw "$LOGS/osu-7.3-bw-efa.txt" "$LOGS/osu-5.8-bw-azure.txt" \
    "$LOGS/osu-7.5-bibw-cuda-validation.txt" --json
expect_rc 0 "collect --template osu-bw: OMB 7.3, 5.8, 7.5: exit 0"
[ "$(jq -c '[.files[].foms.bandwidth_MBps.values[]]' "$TMP/out")" = "[12148.06,24453.38,46437.18]" ]
ok $? "... the bandwidth of 4 MiB, MB/s"
run "$GPURUN" collect --template osu-bw "$LOGS/osu-5.7-bw-pkb.txt"
expect_rc 1 "osu-bw on a run that stopped at 8 bytes: exit 1"
# A message received wrong under --validation (VALIDATION_STATUS: Fail).
sed 's/^4       \(.*\)Pass$/4       \1Fail/' "$LOGS/osu-7.5-bibw-cuda-validation.txt" >"$TMP/osu-fail.txt"
run "$GPURUN" collect --template osu-bw "$TMP/osu-fail.txt"
expect_rc 1 "osu-bw with a Fail row of --validation: exit 1"
contains "$TMP/err" "appears in $TMP/osu-fail.txt, line 7" "... naming the Fail row"
run "$GPURUN" collect --template namd "$LOGS/namd-2.13-apoa1-64cpu.txt" "$LOGS/namd-2.13-stmv-1cpu.txt" --json
expect_rc 0 "collect --template namd: NAMD 2.13 apoa1 and stmv: exit 0"
[ "$(jq -c '[.files[].foms.days_per_ns.value, .files[].foms.s_per_step.value]' "$TMP/out")" = \
    "[0.132556,66.1242,0.0114528,5.71313]" ]
ok $? "... the last Benchmark time line's days/ns and s/step"
{ sed '/^WallClock:/d' "$LOGS/namd-2.13-apoa1-64cpu.txt"
  echo 'FATAL ERROR: Periodic cell has become too small for original patch grid!'; } >"$TMP/namd-fatal.txt"
run "$GPURUN" collect --template namd "$TMP/namd-fatal.txt"
expect_rc 1 "NAMD stopped by a FATAL ERROR: exit 1"
contains "$TMP/err" "sanity check of template 'namd': 'FATAL ERROR:' appears in $TMP/namd-fatal.txt, line 3" \
    "... naming the FATAL ERROR line"

run "$GPURUN" collect --help
expect_rc 0 "--help"
contains "$TMP/out" "Usage: gpurun collect --template NAME FILE... [--json]" "... shows the usage"

done_testing
