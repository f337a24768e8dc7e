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
grep -E '^ +2025-01-04T00:00:00Z +1 +30\.50 +30\.50 +30\.50 +-50\.0% ! +#$' "$TMP/out" >/dev/null
ok $? "history: the last run, 50% below the first, flagged, the shortest bar"
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
# history_points FILE: the points of its history panels; history_rings
# FILE: the red rings on the flagged ones.
history_points() {
    awk '/<g class="history"/ { on = 1 } /<g class="(scaling|energy)/ || /<\/svg>/ { on = 0 }
        on && /<circle/ && !/class="flagged"/ { n++ } END { print n + 0 }' "$1"
}
history_rings() {
    awk '/<g class="history"/ { on = 1 } /<g class="(scaling|energy)/ || /<\/svg>/ { on = 0 }
        on && /<circle class="flagged"/ { n++ } END { print n + 0 }' "$1"
}
for f in "$TMP/cpu.svg" "$TMP/cpu.html"; do
    n=$(history_points "$f")
    [ "$n" -eq 5 ]
    ok $? "history: ${f##*/} has a panel with a point per run ($n)"
done
contains "$TMP/cpu.svg" "wbox: ns_per_day (ns/day) over time" "history: the panel's title"
contains "$TMP/cpu.svg" "2025-01-04T00:00:00Z: 30.50" "history: each point says when and what"
[ "$(history_rings "$TMP/cpu.svg")" -eq 1 ] && grep -q '2025-01-04T00:00:00Z: 30.50, -50.0% against the first !' "$TMP/cpu.svg" &&
    grep -q 'a drop is the regression: ringed' "$TMP/cpu.svg"
ok $? "history: the drop the table flags is ringed, and only it ($(history_rings "$TMP/cpu.svg") ring)"

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

# ---- energy: the page's table and trade-off, its history (issue 31) -----
# 1 rank once at 50 ns/day, 100 J/ns; 2 ranks three times at about 91
# ns/day, 60 then 61 then 120 J/ns: the last an energy regression.  The
# configurations' tag is HTML, escaped on the page.
# energy_record RUN-ID RANKS NS J/NS START
energy_record() {
    cpu_record "$TMP/en" "$1" ebox "$2" "$3" "$5" ".config.tag = \"<b>&x\" | .config.zname = \"aééééééééééééé\" | .currency = \"EUR\" |
        .energy = {total_J: 1000, mean_power_W: 250, kwh: 0.000278, cost: 0.5, co2_g: 111} |
        .foms.ns_per_day.energy_per_unit = {value: $4, units: \"J/ns\"}"
}
energy_record 20250201T000000Z-1 1 50 100 2025-02-01T00:00:00Z
energy_record 20250201T000000Z-2 2 90 60 2025-02-01T00:00:00Z
energy_record 20250202T000000Z-1 2 92 61 2025-02-02T00:00:00Z
energy_record 20250203T000000Z-1 2 91 120 2025-02-03T00:00:00Z
run "$GPURUN" report --results "$TMP/en" --html "$TMP/en.html"
expect_rc 0 "energy: report --html"
run "$GPURUN" report --results "$TMP/en"
contains "$TMP/out" "History of ns_per_day's energy per unit (J/ns), the same configuration" \
    "energy: the history of J/ns of the configuration with the most runs"
sed -n "/energy per unit (J\/ns)/,/^\$/p" "$TMP/out" >"$TMP/en.hist"
grep -Eq '^ +2025-02-03T00:00:00Z +1 +120\.0 +120\.0 +120\.0 +\+100\.0% ! +#$' "$TMP/en.hist" &&
    grep -Eq '^ +2025-02-01T00:00:00Z +1 +60\.00 .* - +#{24}$' "$TMP/en.hist" &&
    grep -Eq '^ +2025-02-02T00:00:00Z .* \+1\.7% +#{2,}$' "$TMP/en.hist"
ok $? "energy: a rise of J/ns past 5% flagged with the shortest bar, the lowest the longest, +1.7% not flagged"
grep -q '<h3>Energy ' "$TMP/en.html" && grep -q '<th>ns_per_day J/ns</th>' "$TMP/en.html" &&
    grep -q '<th>EUR/run</th>' "$TMP/en.html" && grep -q '<th>g CO2/run</th>' "$TMP/en.html" &&
    grep -q '<th>kWh/run</th>' "$TMP/en.html" && grep -q '<th>ns/day per kW</th>' "$TMP/en.html" &&
    grep -q '<td class="n">80.33</td>' "$TMP/en.html" && grep -q '<td class="n">364</td>' "$TMP/en.html"
ok $? "energy: the page's table with J/ns (mean 80.33), kWh, cost, CO2 and ns/day per kW (91 / 0.25 kW = 364)"
awk '/<svg class="tradeoff"/ { on = 1 } on { print } /<\/svg>/ { on = 0 }' "$TMP/en.html" >"$TMP/en.svg"
[ "$(grep -c '<circle' "$TMP/en.svg")" -eq 2 ] && grep -q '2 ranks.*: 91.00 ns/day, 80.33 J/ns</title>' "$TMP/en.svg" ||
    grep -q ': 91 ns/day, 80.33 J/ns</title>' "$TMP/en.svg"
ok $? "energy: a trade-off plot of ns/day against J/ns, a point per configuration ($(grep -c '<circle' "$TMP/en.svg"))"
if command -v xmllint >/dev/null 2>&1; then
    xmllint --noout "$TMP/en.svg"
    ok $? "energy: the trade-off plot is well-formed XML"
else
    skip "xmllint not found (Debian: libxml2-utils): the trade-off plot's XML not checked"
fi
grep -q '&lt;b&gt;&amp;x' "$TMP/en.html" && ! grep -q '<b>&x' "$TMP/en.html"
ok $? "energy: the configurations' names escaped on the page"
iconv -f UTF-8 -t UTF-8 "$TMP/en.html" >/dev/null 2>&1
ok $? "energy: the page is UTF-8 where a long configuration name is cut at a character"
grep -q "energy per unit <span" "$TMP/en.html" && grep -q '<td class="n flag">+100.0% !</td>' "$TMP/en.html"
ok $? "energy: the page's history of J/ns, the rise flagged"
# Without the site's prices: no cost or CO2 column on the page.
for f in "$TMP"/en/ebox/*/record.json; do
    jq 'del(.currency) | .energy.cost = null | .energy.co2_g = null' "$f" >"$f.new" && mv "$f.new" "$f"
done
rm -f "$TMP"/en/results.db* # an index of the records as they were
run "$GPURUN" report --results "$TMP/en" --html "$TMP/en.html"
grep -q '<th>kWh/run</th>' "$TMP/en.html" && ! grep -Eq '<th>(cost|EUR)/run</th>|<th>g CO2/run</th>' "$TMP/en.html"
ok $? "energy without prices: the page's table has no cost or CO2 column"

# ---- energy in the SVG file: the trade-off and the history (issue 31) ---
# The same runs as above, in a folder of their own: 1 rank at 50 ns/day and
# 100 J/ns, 2 ranks at 90, 92, 91 ns/day and 60, 61, 120 J/ns.  A name
# with <&"' in the configurations' tag.
# en_record DIR ID RANKS NS J/NS START [JQ-EDIT]
en_record() {
    cpu_record "$1" "$2" ebox "$3" "$4" "$6" ".config.tag = \"<b>&\\\"x'\" |
        .energy = {total_J: 1000, mean_power_W: 250, kwh: 0.000278} |
        .foms.ns_per_day.energy_per_unit = {value: $5, units: \"J/ns\"} | ${7:-.}"
}
# en_records DIR [JQ-EDIT]: those four runs.
en_records() {
    en_record "$1" 20250201T000000Z-1 1 50 100 2025-02-01T00:00:00Z "${2:-.}"
    en_record "$1" 20250201T000000Z-2 2 90 60 2025-02-01T00:00:00Z "${2:-.}"
    en_record "$1" 20250202T000000Z-1 2 92 61 2025-02-02T00:00:00Z "${2:-.}"
    en_record "$1" 20250203T000000Z-1 2 91 120 2025-02-03T00:00:00Z "${2:-.}"
}
# svg_panels FILE: parsed by python3's XML parser (exit 1 when it is not
# one well-formed document, or an attribute holds a number that is not
# finite); prints each top-level panel's class and points (circles with a
# tip) as CLASS=N, then flagged=N (ringed points), elements=N.
svg_panels() {
    python3 - "$1" <<'PY'
import math, re, sys
import xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
num = re.compile(r"^-?[0-9.]+(e[-+]?[0-9]+)?$", re.I)
for e in root.iter():
    for k, v in e.attrib.items():
        for tok in re.split(r"[ ,()]+", v):
            if re.search(r"inf|nan", tok, re.I) and tok.lower() not in ("middle", "none", "end", "start"):
                sys.exit("not finite: %s=%r" % (k, v))
            if num.match(tok) and not math.isfinite(float(tok)):
                sys.exit("not finite: %s=%r" % (k, v))
out = []
for g in root.findall(NS + "g"):
    pts = sum(1 for c in g.iter(NS + "circle") if c.find(NS + "title") is not None)
    out.append("%s=%d" % (g.get("class"), pts))
out.append("flagged=%d" % sum(1 for c in root.iter(NS + "circle") if c.get("class") == "flagged"))
out.append("elements=%d" % sum(1 for _ in root.iter()))
print(" ".join(out))
PY
}
# svg_height FILE: the document's height.
svg_height() { sed -n 's/^<svg xmlns=.* height="\([0-9]*\)".*/\1/p' "$1"; }
# without_energy FILE: the SVG without its energy panels (top-level groups
# of class tradeoff and energy-history), nor its <svg> and title lines.
without_energy() {
    awk '/^<svg xmlns=|^<title>gpurun report:/ { next }
        !skip && /^<g class="(tradeoff|energy-history)"/ { skip = 1; depth = 0 }
        skip { if (/^<g[ >]/) depth++; if (/^<\/g>$/ && --depth == 0) skip = 0; next }
        { print }' "$1"
}

V=$TMP/esvg
en_records "$V"
run "$GPURUN" report --results "$V" --svg "$TMP/esvg.svg"
if ! command -v python3 >/dev/null 2>&1; then
    for i in 1 2 3 4 5 6 7 8 9 10 11; do
        skip "python3 not found: the SVG's energy panels are not parsed"
    done
else
    panels=$(svg_panels "$TMP/esvg.svg")
    good=$?
    case " $panels " in *" tradeoff=2 energy-history=3 "*) ;; *) good=1 ;; esac
    ok $good "energy in the SVG: one well-formed document, finite, with a trade-off panel of 2 points, then a history of 3 ($panels)"
    grep -q '>ebox: ns_per_day against energy per unit (up and left is better)<' "$TMP/esvg.svg" &&
        grep -q '>energy per unit (J/ns)<' "$TMP/esvg.svg" && grep -q '>ns_per_day (ns/day)<' "$TMP/esvg.svg" &&
        grep -q 'ranks_per_node=1 tag=&lt;b&gt;&amp;&quot;x&#39;: 50 ns/day, 100 J/ns</title>' "$TMP/esvg.svg" &&
        grep -q 'ranks_per_node=2 tag=&lt;b&gt;&amp;&quot;x&#39;: 91 ns/day, 80.33 J/ns</title>' "$TMP/esvg.svg"
    ok $? "energy in the SVG: the trade-off's title, axes and a point per configuration, its name escaped"
    grep -q '>ebox: ns_per_day&#39;s energy per unit (J/ns) over time<' "$TMP/esvg.svg" &&
        grep -q '<title>2025-02-03T00:00:00Z: 120.0, +100.0% against the first !</title>' "$TMP/esvg.svg" &&
        grep -q '<title>2025-02-02T00:00:00Z: 61.00</title>' "$TMP/esvg.svg"
    ok $? "energy in the SVG: the history of J/ns, the rise of 100% flagged in its tip, +1.7% not"
    case " $panels " in *" flagged=1 "*) good=0 ;; *) good=1 ;; esac
    ok $good "energy in the SVG: the one flagged point ringed ($panels)"
    awk '/<g class="energy-history"/ { on = 1 } on && /<circle class="flagged" cx="538.2" cy="114.0"/ { f = 1 }
        END { exit !f }' "$TMP/esvg.svg"
    ok $? "energy in the SVG: the ring on the last point, at 120 J/ns"
    grep -q '<g class="tradeoff" transform="translate(0,932)">' "$TMP/esvg.svg" &&
        grep -q '<g class="energy-history" transform="translate(0,1272)">' "$TMP/esvg.svg"
    ok $? "energy in the SVG: below the scaling and history panels"

    # The same runs without energy: no energy panel, and the rest of the
    # file byte for byte as with it (only the document's height and title
    # differ, by the two panels: 330 + 10 + 440 + 10 pixels).
    W=$TMP/esvg-none
    en_records "$W" 'del(.energy) | del(.foms.ns_per_day.energy_per_unit)'
    run "$GPURUN" report --results "$W" --svg "$TMP/none.svg"
    panels=$(svg_panels "$TMP/none.svg")
    good=$?
    case " $panels " in *tradeoff*|*energy-history*|*" flagged="[1-9]*) good=1 ;; esac
    without_energy "$TMP/esvg.svg" >"$TMP/esvg.rest"
    without_energy "$TMP/none.svg" >"$TMP/none.rest"
    cmp -s "$TMP/esvg.rest" "$TMP/none.rest" && [ "$(($(svg_height "$TMP/esvg.svg") - $(svg_height "$TMP/none.svg")))" -eq 790 ] &&
        grep -q '^<title>gpurun report: figure of merit against GPUs, with ideal scaling, parallel efficiency, and over time</title>$' "$TMP/none.svg" ||
        good=1
    ok $good "no energy measured: no energy panel, the SVG as before; with energy, the same and two panels more (790 px; $panels)"

    # Hostile records: energy per unit and power at the edges of a double,
    # units of UTF-8 past the 39 bytes kept and with <&", a negative one.
    for v in 1.7976931348623157e308 5e-324; do
        H=$TMP/esvg-edge
        rm -rf "$H"
        en_records "$H" ".foms.ns_per_day.energy_per_unit.value = $v | .energy.mean_power_W = $v |
            .energy.total_J = 1.7976931348623157e308 | .foms.ns_per_day.value *= 1e306"
        run timeout 20 "$GPURUN" report --results "$H" --svg "$H/r.svg" --html "$H/r.html"
        panels=$(svg_panels "$H/r.svg") && ! grep -Eqi '>-?(inf|nan)<' "$H/r.svg" "$H/r.html" &&
            grep -q '<svg class="tradeoff"' "$H/r.html"
        good=$?
        case " $panels " in *" tradeoff=2 energy-history=3 "*) ;; *) good=1 ;; esac
        ok $good "energy per unit and power of $v: both panels, finite, and the page's trade-off and table too ($panels)"
    done
    H=$TMP/esvg-units
    en_records "$H" '.foms.ns_per_day.energy_per_unit.units = ("J/<&\"x" + ("é" * 30))'
    run "$GPURUN" report --results "$H" --svg "$H/r.svg" --html "$H/r.html"
    panels=$(svg_panels "$H/r.svg") && iconv -f UTF-8 -t UTF-8 "$H/r.svg" >/dev/null 2>&1 &&
        iconv -f UTF-8 -t UTF-8 "$H/r.html" >/dev/null 2>&1 && grep -q '(J/&lt;&amp;&quot;xé' "$H/r.svg"
    ok $? "units of 66 bytes of UTF-8 with <&\": cut at a character, escaped, the SVG and the page UTF-8 ($panels)"
    H=$TMP/esvg-neg
    en_records "$H" '.foms.ns_per_day.energy_per_unit.value = -5'
    run "$GPURUN" report --results "$H" --svg "$H/r.svg" --html "$H/r.html"
    panels=$(svg_panels "$H/r.svg")
    case " $panels " in *tradeoff*|*energy-history*) good=1 ;; *) good=0 ;; esac
    grep -q '>-5<\|>-5.000<' "$H/r.html" && good=1
    ok $good "a negative energy per unit is no measure: no panel, not in the page's table ($panels)"
fi

# Bounds: 300 configurations (a point each at most 200), 300 runs of one
# (a history of at most 128 points).  One jq for all the records.
# many_records DIR N JQ-EXPR: N records, run i from the expression (i = $i).
many_records() {
    seq 1 "$2" | sed "s|^|$1/many/r|" | xargs mkdir -p
    jq -nc --argjson n "$2" 'range(1; $n + 1) as $i | '"$3" |
        awk -v d="$1/many" '{ f = d "/r" NR "/record.json"; print > f; close(f) }'
}
many_expr='{run_id: ("r" + ($i | tostring)), job: "many", state: "ok", nodes: 1, gpus_per_rank: 0,
    threads_per_rank: 1, gpus: 0, params: {}, start: ("2025-03-01T00:00:00Z" | fromdate + $i * 60 | todate),
    energy: {total_J: 1000, mean_power_W: 250},'
M=$TMP/manyconf
many_records "$M" 300 "$many_expr"' ranks: $i, config: {ranks_per_node: $i},
    foms: {ns_per_day: {value: (10 * $i), units: "ns/day", better: "higher",
                        energy_per_unit: {value: (100 + $i), units: "J/ns"}}}}'
run "$GPURUN" report --results "$M" --svg "$TMP/manyconf.svg" --html "$TMP/manyconf.html"
# panel_points FILE CLASS: the points (circles with a tip) of the SVG's panel CLASS.
panel_points() {
    awk -v cls="$2" 'index($0, "<g class=\"") == 1 { on = index($0, "<g class=\"" cls "\"") == 1 }
        /^<\/svg>/ { on = 0 } on && /<circle cx=.*<title>/ { n++ } END { print n + 0 }' "$1"
}
n=$(panel_points "$TMP/manyconf.svg" tradeoff)
size=$(wc -c <"$TMP/manyconf.svg")
[ "$n" -ge 100 ] && [ "$n" -le 200 ] && grep -q '>151 of 300 configurations drawn (one in 2, and the last)<' "$TMP/manyconf.svg" &&
    grep -q '>13 to 151: named in their tips<' "$TMP/manyconf.svg" && [ "$size" -lt 200000 ]
ok $? "300 configurations: the SVG's trade-off draws $n of them (at most 200) and says so, in $size bytes"
n=$(awk '/<svg class="tradeoff"/ { on = 1 } on && /<circle/ { n++ } /<\/svg>/ { on = 0 } END { print n + 0 }' \
    "$TMP/manyconf.html")
[ "$n" -ge 100 ] && [ "$n" -le 200 ]
ok $? "300 configurations: the page's trade-off too ($n points)"
H=$TMP/manyruns
many_records "$H" 300 "$many_expr"' ranks: 2, config: {ranks_per_node: 2},
    foms: {ns_per_day: {value: 100, units: "ns/day", better: "higher",
                        energy_per_unit: {value: (100 + ($i % 7)), units: "J/ns"}}}}'
run "$GPURUN" report --results "$H" --svg "$TMP/manyruns.svg"
n=$(panel_points "$TMP/manyruns.svg" energy-history)
[ "$n" -ge 64 ] && [ "$n" -le 128 ] && grep -q '>of up to 4 runs a point<' "$TMP/manyruns.svg"
ok $? "300 runs of one configuration: the energy history has 64 to 128 points ($n)"

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

# ---- a report a scientist can trust at a glance (issue 30) --------------
# gmx_record DIR JOB ID GPUS NS STATE [JQ-EDIT]: a GROMACS run on GPUs as
# run.c writes it now: fom kinds, cpu_model, program_version, a long list
# of params; a run not ok has no figures and a failure.
gmx_record() {
    mkdir -p "$1/$2/$3"
    jq -n --arg id "$3" --arg job "$2" --argjson g "$4" --argjson ns "$5" --arg state "$6" '{
        run_id: $id, job: $job, template: "gromacs", start: ("2025-02-01T00:00:" + ($id | .[-2:]) + "Z"),
        end: "2025-02-01T01:00:00Z", wall_s: 60, exit_status: (if $state == "ok" then 0 else 1 end),
        state: $state, nodes: 1, ranks: $g, gpus_per_rank: 1, threads_per_rank: 8, gpus: $g,
        launcher: "mpirun", hosts: ["gpu-node07"], gpu_model: "NVIDIA H200",
        cpu_model: "AMD EPYC 9654 96-Core Processor", program_version: "2024.3", gpurun_version: "0.9.0",
        params: {tpr: "/scratch/project/benchmarks/stmv/topol-1066628-atoms.tpr", nsteps: "20000",
                 pme: "gpu", npme: "1", args: "-notunepme -dlb yes -pin on"},
        config: {ranks_per_node: $g}, repeat_index: 0, gpus_monitor: null,
        foms: (if $state == "ok" then
               {ns_per_day: {value: $ns, values: [$ns], units: "ns/day", better: "higher", kind: "throughput"},
                hour_per_ns: {value: (24 / $ns), values: [(24 / $ns)], units: "hour/ns", better: "lower",
                              kind: "time"},
                iterations: {value: 100, values: [100], units: "", better: "lower", kind: "other"}}
               else {} end)
    } | '"${7:-.}" >"$1/$2/$3/record.json"
}
G=$TMP/gmx
# 1 GPU: 31, 56, 44 ns/day (the issue's spread); 2 GPUs: 80-82; 4 GPUs: 150,
# 152 and a run that failed.
gmx_record "$G" stmv r01 1 31 ok
gmx_record "$G" stmv r02 1 56 ok
gmx_record "$G" stmv r03 1 44 ok
gmx_record "$G" stmv r04 2 80 ok
gmx_record "$G" stmv r05 2 82 ok
gmx_record "$G" stmv r06 2 81 ok
gmx_record "$G" stmv r07 4 150 ok
gmx_record "$G" stmv r08 4 152 ok
gmx_record "$G" stmv r09 4 0 failed '.failure = {rank: 2, host: "gpu-node07", status: 1, tail: [],
    reason: "Fatal error: There is no domain decomposition for 4 ranks"}'
gmx_record "$G" single r10 2 90 ok
gmx_record "$G" single r11 2 91 ok
gmx_record "$G" broken r12 1 0 failed '.failure = {rank: 0, host: "gpu-node07", status: 127, tail: [],
    reason: "gmx_mpi: command not found"}'
gmx_record "$G" broken r13 2 0 timeout '.failure = {rank: null, host: null, status: 124, tail: [],
    reason: "time limit reached"}'
run "$GPURUN" report --results "$G"
expect_rc 0 "GROMACS records: report"
sed -n '/^Job stmv/,$p' "$TMP/out" >"$TMP/stmv.txt" # the last job, by name
# section FILE TITLE: the table under the line "  TITLE" of FILE.
section() { sed -n "\\%^  $2\$%,/^\$/p" "$1"; }
section "$TMP/stmv.txt" "ns_per_day (ns/day, higher is better; throughput)" >"$TMP/nsday"
section "$TMP/stmv.txt" "hour_per_ns (hour/ns, lower is better; time)" >"$TMP/hpns"
section "$TMP/stmv.txt" "iterations (lower is better; other: no scaling)" >"$TMP/iter"
[ "$(column "$TMP/nsday" speedup 4)" = 3.46 ] && [ "$(column "$TMP/hpns" speedup 4)" = 3.46 ] &&
    [ "$(column "$TMP/nsday" speedup 2)" = 1.85 ] && [ "$(column "$TMP/hpns" speedup 2)" = 1.85 ]
ok $? "a time figure's speedup from its inverse: hour_per_ns agrees with ns_per_day (1.85, 3.46)"
[ "$(column "$TMP/hpns" efficiency 4)" = 0.86 ]
ok $? "... and its efficiency (0.86 on 4 GPUs)"
[ -s "$TMP/iter" ] && ! grep -Eq 'speedup|efficiency' "$TMP/iter"
ok $? "a figure of kind other (iterations): no speedup or efficiency column"
grep -Eq '^ +1 .* 43\.67 +31\.00–56\.00 +28\.6% ! ' "$TMP/nsday"
ok $? "spread: min-max 31-56 and CV 28.6% on 1 GPU, flagged '!'"
grep -Eq '^ +2 .* 81\.00 +80\.00–82\.00 +1\.2% +1\.85 ' "$TMP/nsday"
ok $? "spread: CV 1.2% on 2 GPUs, not flagged"
contains "$TMP/stmv.txt" "! spread between repeats above 5% (CV, the coefficient of variation" \
    "spread: the threshold and why, under the tables"
contains "$TMP/stmv.txt" "params of every configuration: args=-notunepme -dlb yes -pin on npme=1 nsteps=20000 pme=gpu tpr=" \
    "params alike in every configuration: once, above the tables"
ok "$(grep -q 'params' "$TMP/nsday" && echo 1 || echo 0)" "... and no params column pushing the figures aside"
grep -Eq '^ +4 +1 +4 +ranks_per_node=4 +gpu-node07 +AMD EPYC 9654 96-Core Processor +NVIDIA H200 +2024\.3 +0\.9\.0$' \
    "$TMP/stmv.txt"
ok $? "where it ran: host, CPU model, GPU model, program version, gpurun version per configuration"
grep -Eq '^ +2025-02-01T00:00:09Z +ranks_per_node=4 +failed +rank 2 on gpu-node07: Fatal error: There is no domain decomposition for 4 ranks +stmv/r09$' \
    "$TMP/stmv.txt"
ok $? "runs not ok: start, configuration, state, the record's reason, folder"
sed -n '/^Job broken/,/^Job /p' "$TMP/out" >"$TMP/broken.txt"
grep -Eq 'timeout +time limit reached +broken/r13' "$TMP/broken.txt" &&
    grep -Eq 'failed +rank 0 on gpu-node07: gmx_mpi: command not found +broken/r12' "$TMP/broken.txt" &&
    grep -q 'No plot: no run of state ok with a figure of merit' "$TMP/broken.txt"
ok $? "a job whose runs all failed: each listed, and no plot"
sed -n '/^Job single/,/^Job /p' "$TMP/out" >"$TMP/single.txt"
grep -q 'No plot: one configuration (a plot needs two or more)' "$TMP/single.txt" &&
    ! grep -Eq 'speedup|efficiency' "$TMP/single.txt"
ok $? "a job of one configuration: no plot, no speedup of 1.00 against itself"

run "$GPURUN" report --results "$G" --svg "$TMP/gmx.svg" --html "$TMP/gmx.html"
expect_rc 0 "GROMACS records: report --svg --html"
[ "$(grep -c '<g class="scaling"' "$TMP/gmx.svg")" -eq 1 ] && grep -q '>stmv: ns_per_day (ns/day) against GPUs<' "$TMP/gmx.svg" &&
    ! grep -q '>single: ns_per_day (ns/day) against' "$TMP/gmx.svg" && ! grep -q '>broken: ' "$TMP/gmx.svg"
ok $? "plots only for a job of two configurations or more (not for one, not for none)"
grep -q '<g class="efficiency"' "$TMP/gmx.svg" && grep -q '>parallel efficiency<' "$TMP/gmx.svg" &&
    grep -q '<title>4 GPUs: efficiency 0.86</title>' "$TMP/gmx.svg"
ok $? "an efficiency plot beside the figure's"
grep -q '>measured: mean, bars from min to max<' "$TMP/gmx.svg" &&
    grep -q '>ideal scaling from the smallest configuration<' "$TMP/gmx.svg"
ok $? "the legend: the measured and the ideal line, in full"
grep -q '<td class="n flag">28.6% !</td>' "$TMP/gmx.html" && grep -q '<h3>Runs not ok' "$TMP/gmx.html" &&
    grep -q '<h3>Where it ran</h3>' "$TMP/gmx.html"
ok $? "the page: the flagged spread stands out, the runs not ok and where it ran"
if command -v xmllint >/dev/null 2>&1; then
    xmllint --noout "$TMP/gmx.svg"
    ok $? "the SVG with the efficiency plot is well-formed XML"
else
    skip "xmllint not found (Debian: libxml2-utils): SVG well-formedness not checked"
fi
if ! find_chromium; then
    skip "chromium not found (Debian: chromium): the page at 1400 px is not laid out"
else
    # At 1400 px, the figures are on screen: the page is no wider than the window.
    browse --window-size=1400,1000 --dump-dom "file://$TMP/gmx.html" >"$TMP/gmx.dom"
    browse --screenshot="$TMP/gmx.png" --window-size=1400,1000 "file://$TMP/gmx.html" >/dev/null
    [ "$(png_size "$TMP/gmx.png")" = 1400x1000 ] && grep -q '<th>efficiency</th>' "$TMP/gmx.dom"
    ok $? "chromium lays out the page at 1400 px"
    [ -n "${GPURUN_KEEP_SCREENSHOT:-}" ] && cp "$TMP/gmx.png" "$GPURUN_KEEP_SCREENSHOT.gmx.png"
fi

# The record of a real run: the program's version from its log (the
# template's `version`), the CPU model from hwloc.
if [ ! -x "${HELLO:-}" ]; then
    skip "the hello example is not built (no MPI): no run to record"
    skip "the hello example is not built (no MPI): no run to record"
else
    mkdir -p "$TMP/tpl"
    cat >"$TMP/tpl/hellov.conf" <<'TPL'
description  = "hello, whose setup step writes a log with a version line"
command      = "${hello}"
setup        = { "/bin/sh -c 'printf \"MyProg 7\\nMyProg version:   7.1-beta build 3\\n\" > prog.log'" }
version      = "^MyProg version: *([^ ]+)"
version_file = "prog.log"
TPL
    cat >"$TMP/v.conf" <<JOB
template = "hellov"
launcher = "local"
ranks_per_node = 1
threads_per_rank = 1
params { hello = "$HELLO" }
JOB
    run env GPURUN_TEMPLATE_PATH="$TMP/tpl" "$GPURUN" run "$TMP/v.conf" --quiet --results "$TMP/vres"
    rec=$(ls -d "$TMP"/vres/v/*/ 2>/dev/null | tail -1)record.json
    [ "$(jq -r .program_version "$rec" 2>/dev/null)" = 7.1-beta ]
    ok $? "the record's program_version, read from the log by the template's version"
    want=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -1 | sed 's/[[:space:]]*$//')
    got=$(jq -r .cpu_model "$rec" 2>/dev/null)
    if [ -n "$want" ]; then
        [ "$got" = "$want" ]
        ok $? "the record's cpu_model: /proc/cpuinfo's model name ($got)"
    else
        jq -e 'has("cpu_model")' "$rec" >/dev/null 2>&1
        ok $? "the record has cpu_model (no model name in /proc/cpuinfo: null)"
    fi
fi

done_testing
