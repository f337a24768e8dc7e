#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gpurun report as a scaling study and a history (issue 13 §3): efficiency
# of a 2-point scan, the figure of merit over time for one configuration
# (a regression shows as a drop), and no table or column that has nothing to
# show (GPU monitoring of a CPU job, costs without a price); the page
# rendered by headless Chromium.  Records from tests/make-records.sh and by
# hand; the real GROMACS scan is in cli-gromacs.sh.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if ! command -v jq >/dev/null 2>&1; then
    echo "1..0 # SKIP jq not found (Debian: jq)"
    exit 0
fi

# cpu_record DIR RUN-ID JOB RANKS NS START [JQ-EDIT]: a CPU-only run as
# run.c writes it (gpus_per_rank 0, gpus_monitor null, no price), then the
# jq edit.
cpu_record() {
    mkdir -p "$1/$3/$2"
    jq -n --arg id "$2" --arg job "$3" --argjson ranks "$4" --argjson ns "$5" --arg start "$6" '{
        run_id: $id, job: $job, template: "water-box", start: $start, end: $start, wall_s: 9.5,
        exit_status: 0, state: "ok", nodes: 1, ranks: $ranks, gpus_per_rank: 0, threads_per_rank: 1,
        gpus: 0, launcher: "mpirun", hosts: ["node1"], params: {nsteps: "2000"},
        config: {ranks_per_node: $ranks}, repeat_index: 0, gpus_monitor: null,
        price_per_gpu_hour: null, references: {}, gpurun_version: "0.1.0",
        foms: {ns_per_day: {value: $ns, values: [$ns], units: "ns/day", better: "higher"},
               hour_per_ns: {value: (24 / $ns), values: [(24 / $ns)], units: "hour/ns", better: "lower"}}
    } | '"${7:-.}" >"$1/$3/$2/record.json"
}

# column FILE HEAD RANKS: the number in column HEAD (right-aligned: it ends
# where its head ends) of the first table row of FILE whose ranks are RANKS.
column() {
    awk -v head="$2" -v ranks="$3" '
        function end_of(h, line,   p) { p = index(line " ", " " h " "); return p ? p + length(h) : 0 }
        function cell(e, line,   n, a) { n = split(substr(line, 1, e), a, " "); return a[n] }
        !he && end_of("ranks", $0) && end_of(head, $0) { he = end_of(head, $0); re = end_of("ranks", $0); next }
        he && cell(re, $0) == ranks { print cell(he, $0); exit }' "$1"
}

# ---- efficiency of a 2-point scan ---------------------------------------
# make-records.sh: 1 rank 85.0 ns/day, 2 ranks 173.8: speedup 2.04, efficiency 1.02.

S=$TMP/scan
sh "$top_srcdir/tests/make-records.sh" "$S" 2 1
run "$GPURUN" report --results "$S"
expect_rc 0 "a 2-point scan: report"
cp "$TMP/out" "$TMP/scan.txt"
[ "$(column "$TMP/out" speedup 2)" = 2.04 ] && [ "$(column "$TMP/out" efficiency 2)" = 1.02 ] &&
    [ "$(column "$TMP/out" efficiency 1)" = 1.00 ]
ok $? "a 2-point scan: speedup 2.04 and efficiency 1.02 on 2 ranks, 1.00 on 1"
ok "$(grep -q History "$TMP/out" && echo 1 || echo 0)" "a 2-point scan, a run each: no history to show"
run "$GPURUN" report --results "$S" --html "$TMP/scan.html"
grep -q '<th>efficiency</th>' "$TMP/scan.html" && grep -q '<td class="n">1.02</td>' "$TMP/scan.html"
ok $? "a 2-point scan: the page shows the efficiency"
ok "$(grep -q 'class="history"' "$TMP/scan.html" && echo 1 || echo 0)" "a 2-point scan: no history panel"

# ---- GPU monitoring and costs: shown where there is something ----------

# A GPU job with monitoring and a site's prices (make-records.sh).
contains "$TMP/scan.txt" "GPU monitoring" "GPU monitoring data: its table"
contains "$TMP/scan.txt" "util 80%, mem peak 29.3 GiB, power 500 W" "... with the figures"
grep -Eq '  efficiency +cost/ns +spot/ns$' "$TMP/scan.txt" && grep -Eq ' 1\.02 +1\.105 USD +0\.4419 USD$' "$TMP/scan.txt"
ok $? "a site price: the cost and spot columns (2 GPUs x 4 and 1.6 USD x 24 / 173.8 per ns)"
grep -q '<th>cost/ns</th>' "$TMP/scan.html" && grep -q '<h3>GPU monitoring' "$TMP/scan.html"
ok $? "the page: the cost columns and the GPU monitoring table"

# The same GPU job without prices, and with an on-demand price only.
P=$TMP/prices
sh "$top_srcdir/tests/make-records.sh" "$P" 2 1
for f in "$P"/job000/*/record.json; do
    jq '.price_per_gpu_hour = null | del(.spot_price_per_gpu_hour) | del(.currency)' "$f" >"$f.new" && mv "$f.new" "$f"
done
run "$GPURUN" report --results "$P" --html "$TMP/prices.html"
run "$GPURUN" report --results "$P"
ok "$(grep -Eq 'cost/|spot/' "$TMP/out" "$TMP/prices.html" && echo 1 || echo 0)" \
    "no price: no cost or spot column, in the text or the page"
[ "$(column "$TMP/out" efficiency 2)" = 1.02 ]
ok $? "no price: the other columns as they were"
for f in "$P"/job000/*/record.json; do
    jq '.price_per_gpu_hour = 4.0 | .currency = "EUR"' "$f" >"$f.new" && mv "$f.new" "$f"
done
rm -f "$P"/results.db* # records are written once: the index does not look for changed ones
run "$GPURUN" report --results "$P"
grep -Eq '  efficiency +cost/ns$' "$TMP/out" && grep -Eq ' 1\.00 +1\.129 EUR$' "$TMP/out"
ok $? "an on-demand price only: the cost column (4 EUR x 24 / 85 per ns on 1 GPU)"
ok "$(grep -q 'spot/' "$TMP/out" && echo 1 || echo 0)" "... and no spot column"

# A CPU job: null monitoring (what run.c writes without GPUs), no price.
C=$TMP/cpu
cpu_record "$C" 20250101T000100Z-1 wbox 1 30.0 2025-01-01T00:01:00Z
cpu_record "$C" 20250101T000200Z-1 wbox 2 61.0 2025-01-01T00:02:00Z
run "$GPURUN" report --results "$C" --html "$TMP/cpu.html"
run "$GPURUN" report --results "$C"
expect_rc 0 "a CPU job: report"
ok "$(grep -q 'GPU monitoring' "$TMP/out" "$TMP/cpu.html" && echo 1 || echo 0)" \
    "a CPU job: no GPU monitoring table, in the text or the page"
ok "$(grep -Eq 'GPUs/rank|cost/|spot/' "$TMP/out" "$TMP/cpu.html" && echo 1 || echo 0)" \
    "a CPU job: no GPU or cost columns"
[ "$(column "$TMP/out" efficiency 2)" = 1.02 ]
ok $? "a CPU job: efficiency against ranks, 61 / 30 / 2"
# A GPU that reported nothing is no monitoring either.
cpu_record "$C" 20250101T000300Z-1 wbox 2 61.0 2025-01-01T00:03:00Z \
    '.gpus_monitor = [{gpu: 0, util_mean: null, mem_peak_mib: null, power_mean_w: null}]'
run "$GPURUN" report --results "$C"
ok "$(grep -q 'GPU monitoring' "$TMP/out" && echo 1 || echo 0)" "monitoring without a value: no table"

# ---- the history of one configuration ------------------------------------
# 2 ranks run five times, the last at half the figure: a regression.

cpu_record "$C" 20250102T000000Z-1 wbox 2 60.0 2025-01-02T00:00:00Z
cpu_record "$C" 20250103T000000Z-1 wbox 2 62.0 2025-01-03T00:00:00Z
cpu_record "$C" 20250104T000000Z-1 wbox 2 30.5 2025-01-04T00:00:00Z
run "$GPURUN" report --results "$C"
contains "$TMP/out" "History of ns_per_day, ranks_per_node=2: 2 ranks on 1 node" \
    "history: of the configuration with the most runs"
grep -E '^ +2025-01-04T00:00:00Z +1 +30\.50 +30\.50 +30\.50 +-50\.0% +#$' "$TMP/out" >/dev/null
ok $? "history: the last run, 50% below the first, the shortest bar"
grep -E '^ +2025-01-03T00:00:00Z +1 +62\.00 .* \+1\.6% +#{24}$' "$TMP/out" >/dev/null
ok $? "history: the best run, the longest bar"
[ "$(sed -n '/^  History/,/^$/p' "$TMP/out" | grep -c '^  2025-')" -eq 5 ]
ok $? "history: a row per run, by start time"
run "$GPURUN" report --results "$C" --svg "$TMP/cpu.svg" --html "$TMP/cpu.html"
expect_rc 0 "history: report --svg --html"
if command -v xmllint >/dev/null 2>&1; then
    xmllint --noout "$TMP/cpu.svg"
    ok $? "history: the SVG is well-formed XML"
else
    skip "xmllint not found (Debian: libxml2-utils): SVG well-formedness not checked"
fi
# history_points FILE: the points of its history panels.
history_points() {
    awk '/<g class="history"/ { on = 1 } /<g class="scaling"|<\/svg>/ { on = 0 } on && /<circle/ { n++ }
        END { print n + 0 }' "$1"
}
for f in "$TMP/cpu.svg" "$TMP/cpu.html"; do
    n=$(history_points "$f")
    [ "$n" -eq 5 ]
    ok $? "history: ${f##*/} has a panel with a point per run ($n)"
done
contains "$TMP/cpu.svg" "wbox: ns_per_day (ns/day) over time" "history: the panel's title"
contains "$TMP/cpu.svg" "2025-01-04T00:00:00Z: 30.50" "history: each point says when and what"

# Figures at the edges of a double, over time: the plot stays finite.
for v in 1.7976931348623157e308 -1.7976931348623157e308 5e-324 0 -5; do
    E=$TMP/edge
    rm -rf "$E"
    for d in 01 02 03; do
        cpu_record "$E" "202501${d}T000000Z-1" edge 2 1 "2025-01-${d}T00:00:00.5Z" ".foms.ns_per_day.value = $v"
    done
    run timeout 20 "$GPURUN" report --results "$E" --svg "$E/r.svg"
    good=$rc
    if [ "$good" -eq 0 ] && command -v xmllint >/dev/null 2>&1; then
        xmllint --noout "$E/r.svg" 2>/dev/null || good=1
    fi
    grep -Eqi '="[^"]*(inf|nan)|>-?(inf|nan)' "$E/r.svg" 2>/dev/null && good=1
    [ "$(history_points "$E/r.svg")" -eq 3 ] || good=1
    ok "$good" "history of a figure $v: a panel of 3 points, well-formed and finite"
done

# 10,000 records (make-records.sh): a history per job, bounded.
B=$TMP/big
sh "$top_srcdir/tests/make-records.sh" "$B" 10000 1
run "$GPURUN" report --results "$B" --svg "$TMP/big.svg"
expect_rc 0 "10,000 runs of one job: report --svg"
n=$(history_points "$TMP/big.svg")
[ "$n" -ge 64 ] && [ "$n" -le 128 ]
ok $? "10,000 runs: the history has 64 to 128 points ($n)"
rm -rf "$B"

# ---- the page in a browser ------------------------------------------------

if ! find_chromium; then
    skip "chromium not found (Debian: chromium): the page of a CPU job is not rendered"
    skip "chromium not found (Debian: chromium): the DOM of the page is not checked"
else
    browse --screenshot="$TMP/cpu.png" --window-size=1200,2000 "file://$TMP/cpu.html" >/dev/null
    if [ ! -s "$TMP/cpu.png" ]; then
        ok 1 "chromium renders the page of a CPU job"
        tail -5 "$TMP/chromium.log" | sed 's/^/#   /'
    else
        wh=$(png_size "$TMP/cpu.png")
        size=$(wc -c <"$TMP/cpu.png")
        # A blank 1200x2000 page is some kilobytes; tables and two plots more.
        [ "$wh" = 1200x2000 ] && [ "$size" -gt 40000 ]
        ok $? "chromium renders the page of a CPU job: a $wh PNG of $size bytes"
        [ -n "${GPURUN_KEEP_SCREENSHOT:-}" ] && cp "$TMP/cpu.png" "$GPURUN_KEEP_SCREENSHOT"
    fi
    # The page as the browser parsed it: the tables and panels it shows.
    browse --dump-dom "file://$TMP/cpu.html" >"$TMP/cpu.dom"
    [ "$(grep -c "<table>" "$TMP/cpu.dom")" -eq 3 ] && grep -q "<h3>Where it ran</h3>" "$TMP/cpu.dom" && grep -q '<th>efficiency</th>' "$TMP/cpu.dom" &&
        grep -q 'class="history"' "$TMP/cpu.dom" && grep -q 'class="scaling"' "$TMP/cpu.dom" &&
        ! grep -Eq 'GPU monitoring|<th>(cost|spot)/|<th>GPUs' "$TMP/cpu.dom"
    ok $? "in the browser: where it ran, two figure tables with efficiency, both plots, no GPU or cost table or column"
fi

done_testing
