#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gpurun results and gpurun report on a results folder of hand-made records:
# the table, JSON, CSV, --rebuild, the text report, the SVG plot and the HTML
# page, which headless Chromium renders to a PNG when it is installed.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if ! command -v jq >/dev/null 2>&1; then
    echo "1..0 # SKIP jq not found (Debian: jq)"
    exit 0
fi

R=$TMP/results
XSS='<script>alert(1)</script>'
EVIL="'; DROP TABLE runs; --"

# record FOLDER RUN-ID JOB STATE RANKS NS_PER_DAY|-: a record as run.c
# writes it, at 4 USD (spot 1.60) per GPU-hour.
record() {
    mkdir -p "$R/$1/$2"
    jq -n --arg id "$2" --arg job "$3" --arg state "$4" --argjson ranks "$5" --arg ns "$6" '{
        run_id: $id, job: $job, template: "gromacs",
        start: ("2025-01-01T00:" + ($id | .[11:13]) + ":00Z"), end: "2025-01-01T01:00:00Z",
        wall_s: 61.5, exit_status: (if $state == "ok" then 0 else 1 end), state: $state,
        nodes: 1, ranks: $ranks, gpus_per_rank: 1, threads_per_rank: 8,
        launcher: "local", launcher_choice: "test", hosts: ["node1"], gpu_model: "NVIDIA H200",
        params: {nsteps: "5000"}, repeat_index: 0, command: ["gmx_mpi", "mdrun"],
        plan: {gpurun_plan: 1}, bindings: [], rank_status: [], gpurun_version: "0.1.0",
        config: {ranks_per_node: $ranks}, site: "aws-p5en",
        price_per_gpu_hour: 4.0, spot_price_per_gpu_hour: 1.6, currency: "USD",
        gpus: $ranks, references: {},
        foms: (if $ns == "-" then {} else {ns_per_day: {value: ($ns | tonumber),
               values: [($ns | tonumber)], units: "ns/day", better: "higher", file: "md.log"}} end)
    }' >"$R/$1/$2/record.json"
}

record water 20250101T000100Z-1 water ok 1 98
record water 20250101T000200Z-1 water ok 1 102
record water 20250101T000300Z-1 water ok 2 190
record water 20250101T000400Z-1 water ok 4 330
record water 20250101T000500Z-1 water ok 4 350
record water 20250101T000600Z-1 water failed 4 -
record xss 20250101T000700Z-1 "$XSS" ok 1 50
record xss 20250101T000800Z-1 "$XSS" ok 8 300
record evil 20250101T000900Z-1 "$EVIL" ok 1 10
record comma 20250101T001000Z-1 'a,"b"' ok 1 10
mkdir -p "$R/water/20250101T001100Z-1" # a run still going: no record yet
mkdir -p "$R/water/20250101T001200Z-1" # a record cut off
printf '{"run_id": "x", "job": ' >"$R/water/20250101T001200Z-1/record.json"
NRUNS=10

# ---- gpurun results ---------------------------------------------------

run "$GPURUN" results --results "$R"
expect_rc 0 "results: a table"
contains "$TMP/out" "run id" "results: the header"
contains "$TMP/out" "ns_per_day=190.0 ns/day" "results: figures with units"
contains "$TMP/out" "ranks_per_node=2" "results: the scan combination"
contains "$TMP/err" "20250101T001200Z-1/record.json: skipped: not JSON" "results: a corrupt record skipped, with a warning"
[ -f "$R/results.db" ]
ok $? "results: RESULTS/results.db created"
ok "$([ "$(grep -c '^2025' "$TMP/out")" -eq "$NRUNS" ] && echo 0 || echo 1)" "results: one line per run"

run "$GPURUN" results --results "$R"
ok "$([ ! -s "$TMP/err" ] && echo 0 || echo 1)" "results again: the corrupt record is not warned about twice"

run "$GPURUN" results --results "$R" --json
expect_rc 0 "results --json"
ok "$(jq -e "length == $NRUNS" "$TMP/out" >/dev/null && echo 0 || echo 1)" "--json: an array of every run"
ok "$(jq -e 'all(.[]; .plan == null and .bindings == null and (.record | endswith("/record.json")))' "$TMP/out" >/dev/null && echo 0 || echo 1)" \
    "--json: records without their bulk, each saying where it is"
ok "$(jq -e --arg e "$EVIL" 'map(select(.job == $e)) | length == 1' "$TMP/out" >/dev/null && echo 0 || echo 1)" \
    "--json: a job name with SQL in it, verbatim"
ok "$(jq -e '[.[] | select(.job == "water")] | length == 6' "$TMP/out" >/dev/null && echo 0 || echo 1)" \
    "--json: no table was dropped"

run "$GPURUN" results --results "$R" --csv
expect_rc 0 "results --csv"
head -1 "$TMP/out" | grep -q '^run_id,job,state,exit_status,.*,ns_per_day (ns/day),record'
ok $? "--csv: the header, a column per figure with its units"
ok "$([ "$(tr -cd '\r' <"$TMP/out" | wc -c)" -eq $((NRUNS + 1)) ] && echo 0 || echo 1)" "--csv: CRLF line ends (RFC 4180)"
contains "$TMP/out" '20250101T001000Z-1,"a,""b""",ok,' "--csv: a field with a comma and quotes, quoted"
contains "$TMP/out" "20250101T000300Z-1,water,ok,0,2025-01-01T00:03:00Z," "--csv: fields in order"

run "$GPURUN" results --results "$R" --job water --json
ok "$(jq -e 'length == 6 and all(.[]; .job == "water")' "$TMP/out" >/dev/null && echo 0 || echo 1)" "--job: that job's runs"

rm -f "$R/results.db" "$R/results.db-wal" "$R/results.db-shm"
run "$GPURUN" results --results "$R" --rebuild --json
expect_rc 0 "results --rebuild without a database"
contains "$TMP/err" "rebuilt: $NRUNS records indexed, 1 skipped" "--rebuild: every record read again"
ok "$(jq -e "length == $NRUNS" "$TMP/out" >/dev/null && echo 0 || echo 1)" "--rebuild: every run listed"

rm -rf "$R/comma"
run "$GPURUN" results --results "$R" --json
ok "$(jq -e "length == $((NRUNS - 1))" "$TMP/out" >/dev/null && echo 0 || echo 1)" "a removed run folder leaves the index"
NRUNS=$((NRUNS - 1))

run "$GPURUN" results --results "$TMP/nowhere"
expect_rc 2 "results: no such folder: exit 2"
contains "$TMP/err" "results folder '$TMP/nowhere' not found" "results: no such folder: said"
run "$GPURUN" results --results "$R" --json --csv
expect_rc 2 "results: --json and --csv: exit 2"
contains "$TMP/err" "gpurun: results: --json or --csv, not both" "results: --json and --csv: said"
run "$GPURUN" results --results "$R" --job
contains "$TMP/err" "gpurun: results: unknown or incomplete option '--job' (see gpurun results --help)" \
    "results: an option without its value: named"
run "$GPURUN" results --re "$R"
contains "$TMP/err" "gpurun: results: unknown or incomplete option '--re'" "results: --re is --results or --rebuild"
run "$GPURUN" results --help
expect_rc 0 "results --help"

# ---- a results.db that is not gpurun's ----------------------------------
# Left byte for byte as it was by results, --rebuild and report (exit 2).

F=$TMP/foreign
mkdir -p "$F/water"
cp -R "$R/water/20250101T000100Z-1" "$F/water/"
foreign_untouched() { # foreign_untouched WHAT: results.db of $F against $F/before
    for args in "results" "results --rebuild" "report"; do
        # shellcheck disable=SC2086 # the command and its option are words
        run "$GPURUN" $args --results "$F"
        expect_rc 2 "$1: gpurun $args: exit 2"
        cmp -s "$F/results.db" "$F/before"
        ok $? "$1: gpurun $args: results.db left byte for byte as it was"
    done
    contains "$TMP/err" "leaves it as it is" "$1: said"
}
printf 'my notes, not a database\n' >"$F/results.db"
cp "$F/results.db" "$F/before"
foreign_untouched "a text file named results.db"
rm -f "$F/results.db"
if command -v sqlite3 >/dev/null 2>&1; then
    sqlite3 "$F/results.db" "CREATE TABLE runs(x); INSERT INTO runs VALUES ('mine'); CREATE TABLE notes(n);"
    cp "$F/results.db" "$F/before"
    foreign_untouched "an SQLite database with tables of its own"
    cat >"$TMP/true.conf" <<'JOB'
command = "/bin/true"
launcher = "local"
ranks_per_node = 1
threads_per_rank = 1
JOB
    run "$GPURUN" run "$TMP/true.conf" --quiet --results "$F"
    expect_rc 0 "a run beside a results.db not gpurun's: the run itself is ok"
    contains "$TMP/err" "results database was not updated: $F/results.db: an SQLite database with tables of its own" \
        "... the index not updated, said"
    cmp -s "$F/results.db" "$F/before" && [ -n "$(find "$F/true" -name record.json)" ]
    ok $? "... the record written, results.db left byte for byte as it was"
    rm -rf "$F/true"
    [ "$(sqlite3 "$F/results.db" 'SELECT x FROM runs')" = mine ]
    ok $? "its table runs still there"
    rm -f "$F/results.db"
else
    skip "sqlite3 not found (Debian: sqlite3): an SQLite database of someone else's not made"
fi
"$GPURUN" results --results "$F" >/dev/null 2>&1
mv "$F/results.db" "$F/real.db"
ln -s real.db "$F/results.db"
cp "$F/real.db" "$F/before"
run "$GPURUN" results --results "$F"
expect_rc 2 "a symlink in place of results.db: exit 2"
contains "$TMP/err" "results.db: is a symlink; gpurun does not follow it" "a symlink in place of results.db: said"
[ -L "$F/results.db" ] && cmp -s "$F/real.db" "$F/before"
ok $? "the symlink and its target left alone"
rm -f "$F/results.db"
chmod 0777 "$F"
run "$GPURUN" results --results "$F"
expect_rc 2 "a results folder everyone can write, without the sticky bit: exit 2"
contains "$TMP/err" "without the sticky bit" "... said"
chmod 0755 "$F"

# Someone else's results folder, read-only to them: indexed in memory from
# the owner's records; a record of a third user in it is skipped.
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1; then
    skip "not root, or no setpriv: another user's view of these results not checked"
else
    O=$TMP/others
    mkdir -p "$O/water"
    cp -R "$R/water/20250101T000100Z-1" "$R/water/20250101T000200Z-1" "$O/water/"
    chown 4343:4343 "$O/water/20250101T000200Z-1/record.json"
    chmod 755 "$TMP" "$O"
    setpriv --reuid=4242 --regid=4242 --clear-groups "$GPURUN" results --results "$O" --json >"$TMP/out" 2>"$TMP/err"
    ok "$(jq -e 'length == 1 and .[0].run_id == "20250101T000100Z-1"' "$TMP/out" >/dev/null && echo 0 || echo 1)" \
        "another user reads these results: the owner's records, in memory"
    contains "$TMP/err" "20250101T000200Z-1/record.json: skipped: owned by another user (uid 4343)" \
        "... a record of a third user skipped, named"
    [ ! -e "$O/results.db" ]
    ok $? "... and nothing written"
    chmod 700 "$TMP"
    # Root, who could write anywhere, reading a folder of uid 4242's.
    chown 4242:4242 "$O"
    run "$GPURUN" results --results "$O" --json
    ok "$(jq -e 'length == 1' "$TMP/out" >/dev/null && echo 0 || echo 1)" "root reads a folder of another user's: in memory"
    [ ! -e "$O/results.db" ]
    ok $? "... writing nothing into it"
fi

# ---- gpurun report ----------------------------------------------------

run "$GPURUN" report --results "$R" --job water
expect_rc 0 "report: text tables"
contains "$TMP/out" "ns_per_day (ns/day, higher is better; throughput)" "report: the figure, its units, direction and kind"
contains "$TMP/out" "0.9600 USD" "report: cost per ns on 1 GPU (4 USD x 24 / 100)"
grep -E '^ +4 +1 +4 +1 +8 +ranks_per_node=4 +2 +1 +340\.0 +330\.0–350\.0 +4\.2% +3\.40 +0\.85 ' "$TMP/out" >/dev/null
ok $? "report: 4 GPUs: n 2, 1 failed, mean 340, min-max 330-350, CV 4.2%, speedup 3.40, efficiency 0.85"
contains "$TMP/out" "  0.95  " "report: efficiency 0.95 on 2 GPUs"

run "$GPURUN" report --results "$R" --html "$TMP/report.html" --svg "$TMP/plot.svg"
expect_rc 0 "report --html --svg"
[ -s "$TMP/report.html" ] && [ -s "$TMP/plot.svg" ]
ok $? "report: both files written"
ok "$(grep -q '<script' "$TMP/report.html" "$TMP/plot.svg" && echo 1 || echo 0)" "report: no <script> anywhere"
contains "$TMP/report.html" '&lt;script&gt;alert(1)&lt;/script&gt;' "report: the job name escaped in the page"
contains "$TMP/plot.svg" '&lt;script&gt;alert(1)&lt;/script&gt;' "report: the job name escaped in the plot"
ok "$(grep -Eq '(src|href)=|@import|url\(' "$TMP/report.html" && echo 1 || echo 0)" "report: the page loads nothing"
if command -v xmllint >/dev/null 2>&1; then
    xmllint --noout "$TMP/plot.svg" 2>"$TMP/err"
    ok $? "report: the SVG is well-formed XML"
else
    skip "xmllint not found (Debian: libxml2-utils): SVG well-formedness not checked"
fi
ls "$TMP" | grep -q '\.tmp\.'
ok $((1 - $?)) "report: no temporary file left"

# The page where a symlink is (planted by someone, or left by the user):
# refused, and the symlink and what it points to left alone.
echo precious >"$TMP/victim"
ln -s "$TMP/victim" "$TMP/link.html"
run "$GPURUN" report --results "$R" --html "$TMP/link.html"
expect_rc 2 "report --html onto a symlink: exit 2"
contains "$TMP/err" "link.html: is a symlink; refusing to replace it" "report --html onto a symlink: said"
[ -L "$TMP/link.html" ] && [ "$(cat "$TMP/victim")" = precious ]
ok $? "report --html onto a symlink: the symlink and its target left alone"
rm -f "$TMP/umask.svg"
(umask 077 && "$GPURUN" report --results "$R" --svg "$TMP/umask.svg" >/dev/null 2>&1)
[ "$(stat -c %a "$TMP/umask.svg" 2>/dev/null)" = 644 ]
ok $? "report --svg under umask 077: mode 644 all the same"

run "$GPURUN" report --results "$R" --svg "$TMP/no/such/plot.svg"
expect_rc 2 "report: an SVG file that cannot be written: exit 2"

# A job the folder does not have: exit 2, naming the jobs there are and the
# closest (issue 30: it was "0 runs of 0 jobs" and exit 0).
for cmd in report results; do
    run "$GPURUN" $cmd --results "$R" --job watr
    expect_rc 2 "$cmd --job of no job: exit 2"
    contains "$TMP/err" "gpurun: no job 'watr' in $R (did you mean 'water'?); its jobs: " "$cmd --job of no job: the closest named"
    grep -Eq "its jobs: .*water \([0-9]+ runs\)" "$TMP/err"
    ok $? "$cmd --job of no job: the jobs there are, with their runs"
    [ ! -s "$TMP/out" ]
    ok $? "$cmd --job of no job: no report, no table"
done
E=$TMP/empty-results
mkdir -p "$E"
run "$GPURUN" report --results "$E" --job water
expect_rc 2 "report --job in a folder without runs: exit 2"
contains "$TMP/err" "no job 'water' in $E: it has no runs" "... said"

run "$GPURUN" report --results "$R" --svg
contains "$TMP/err" "gpurun: report: unknown or incomplete option '--svg' (see gpurun report --help)" \
    "report: an option without its value: named"
run "$GPURUN" report --re "$R" --jo water
expect_rc 0 "report: --re and --jo are --results and --job (report has no --rebuild)"
contains "$TMP/out" "ns_per_day (ns/day, higher is better; throughput)" "... the report of water"

# ---- figures at the edges of a double ---------------------------------
# Each value on one configuration, and on 1 and 64 GPUs (log axes): the
# report, the page and the plot finish (under timeout 20), the plot is XML
# and has no inf or nan coordinate.  NaN and Infinity are no JSON numbers:
# as strings they are no value; bare, the record is no JSON and is skipped.

edge() { # edge FOLDER VALUE-JSON GPUS...
    folder=$1 value=$2
    shift 2
    i=0
    for g in "$@"; do
        i=$((i + 1))
        mkdir -p "$folder/edge/20250101T00000${i}Z-1"
        printf '{"run_id": "20250101T00000%sZ-1", "job": "edge", "state": "ok", "nodes": 1, "ranks": %s, "gpus_per_rank": 1, "threads_per_rank": 1, "foms": {"x": {"value": %s, "units": "ns/day", "better": "higher"}}}\n' \
            "$i" "$g" "$value" >"$folder/edge/20250101T00000${i}Z-1/record.json"
    done
}
n=0
for v in 1.5e308 1.7976931348623157e308 -1.7976931348623157e308 8e307 1e300 5e-324 1e-310 2.2250738585072014e-308 \
    0 -5 1 '"NaN"' '"Infinity"' NaN; do
    for gpus in 1 "1 64" "3 5"; do
        n=$((n + 1))
        E=$TMP/edge$n
        # shellcheck disable=SC2086 # the GPU counts are words
        edge "$E" "$v" $gpus
        run timeout 20 "$GPURUN" report --results "$E" --html "$E/r.html" --svg "$E/r.svg"
        good=$rc
        run timeout 20 "$GPURUN" report --results "$E"
        [ "$rc" -eq 0 ] || good=$rc
        if [ "$good" -eq 0 ] && command -v xmllint >/dev/null 2>&1; then
            xmllint --noout "$E/r.svg" 2>/dev/null || good=1
        fi
        grep -Eqi '="[^"]*(inf|nan)' "$E/r.svg" 2>/dev/null && good=1
        ok "$good" "report of a figure $v on GPUs $gpus: finishes, plot well-formed and finite"
    done
done

# ---- what results and report share ------------------------------------

for cmd in results report; do
    run "$GPURUN" $cmd --results "$R" --tabel
    expect_rc 2 "$cmd: an unknown option: exit 2"
    contains "$TMP/err" "gpurun: $cmd: unknown or incomplete option '--tabel' (see gpurun $cmd --help)" \
        "$cmd: an unknown option: named"
    run "$GPURUN" $cmd --results "$R" "$R"
    expect_rc 2 "$cmd: an argument: exit 2"
    contains "$TMP/err" "gpurun: $cmd: unexpected argument '$R' (the folder is --results DIR)" "$cmd: an argument: said"
done

# ---- a results folder of 10,000 records (issue 12 §6) --------------------
# Correctness at size; bench/results.sh measures the times and the memory.

BIG=$TMP/big
sh "$top_srcdir/tests/make-records.sh" "$BIG" 10000 100
find "$BIG" -name record.json | sed "s|^$BIG/||" | sort >"$TMP/big.want"
run "$GPURUN" results --results "$BIG" --rebuild
expect_rc 0 "10,000 records: --rebuild"
contains "$TMP/err" "rebuilt: 10000 records indexed, 0 skipped" "10,000 records: every one indexed"
ok "$([ "$(grep -c '^2025' "$TMP/out")" -eq 10000 ] && echo 0 || echo 1)" "10,000 records: the table, a line each"
run "$GPURUN" results --results "$BIG" --json
cp "$TMP/out" "$TMP/big.json"
jq -r '.[].record' "$TMP/big.json" | sort >"$TMP/big.got"
cmp -s "$TMP/big.want" "$TMP/big.got"
ok $? "10,000 records: --json lists every record, once"
ok "$(jq -e 'length == 10000 and all(.[]; .plan == null and .bindings == null)' "$TMP/big.json" >/dev/null && echo 0 || echo 1)" \
    "10,000 records: --json, summaries"
run "$GPURUN" results --results "$BIG" --csv
ok "$([ "$(grep -c '/record.json' "$TMP/out")" -eq 10000 ] && echo 0 || echo 1)" \
    "10,000 records: --csv, a row each"
run "$GPURUN" results --results "$BIG" --job job042 --json
ok "$(jq -e 'length == 100 and all(.[]; .job == "job042")' "$TMP/out" >/dev/null && echo 0 || echo 1)" \
    "10,000 records: --job, that job's 100"
run "$GPURUN" report --results "$BIG"
expect_rc 0 "10,000 records: report"
nfailed=$(jq '[.[] | select(.state != "ok")] | length' "$TMP/big.json")
contains "$TMP/out" "10000 runs of 100 jobs, $nfailed not ok" "10,000 records: report counts every run"
run "$GPURUN" report --results "$BIG" --html "$TMP/big.html" --svg "$TMP/big.svg"
expect_rc 0 "10,000 records: report --html --svg"
ok "$([ "$(grep -c '<h2>Job job' "$TMP/big.html")" -eq 100 ] && echo 0 || echo 1)" "10,000 records: a section per job"
if command -v xmllint >/dev/null 2>&1; then
    xmllint --noout "$TMP/big.svg" 2>/dev/null
    ok $? "10,000 records: the plot is well-formed XML"
else
    skip "xmllint not found (Debian: libxml2-utils)"
fi
rm -rf "$BIG"

# Many configurations in one job: one series of 3,000 and 39 of one each.
# The plot draws a bounded number of series and of points in each.
W=$TMP/wide
awk -v dir="$W/wide" 'BEGIN {
    for (i = 1; i <= 3039; i++) {
        d = dir "/r" i
        if (i % 300 == 1 || i == 3039) { system("mkdir -p " dirs " " d); dirs = "" } else dirs = dirs " " d
    }
    for (i = 1; i <= 3039; i++) {
        f = dir "/r" i "/record.json"
        printf "{\"run_id\": \"r%d\", \"job\": \"wide\", \"state\": \"ok\", \"nodes\": 1, \"ranks\": %d, \"gpus_per_rank\": 1, \"threads_per_rank\": 1, \"params\": {\"p\": \"%s\"}, \"foms\": {\"x\": {\"value\": %d, \"units\": \"ns/day\"}}}\n", \
            i, i <= 3000 ? i : 1, i <= 3000 ? "big" : "s" i, i > f
        close(f)
    }
}'
run "$GPURUN" report --results "$W" --svg "$TMP/wide.svg"
expect_rc 0 "3,000 configurations of one series and 39 of others: report --svg"
circles=$(grep -c '<circle' "$TMP/wide.svg")
# Points in the figure's plot and in the efficiency plot beside it.
ok "$([ "$circles" -le $((2 * (200 + 1 + 11) + 12)) ] && echo 0 || echo 1)" \
    "the plots draw at most 12 series, at most 200 points of each ($circles circles)"
contains "$TMP/wide.svg" "28 more series of params not drawn" "the plot says what it left out"
rm -rf "$W"

# ---- the page in a browser --------------------------------------------

if ! find_chromium; then
    skip "chromium not found (Debian: chromium): the page is not rendered"
else
    browse --screenshot="$TMP/report.png" --window-size=1200,900 "file://$TMP/report.html" >>"$TMP/chromium.log"
    if [ ! -s "$TMP/report.png" ]; then
        ok 1 "chromium renders the page"
        tail -5 "$TMP/chromium.log" | sed 's/^/#   /'
    else
        wh=$(png_size "$TMP/report.png")
        size=$(wc -c <"$TMP/report.png")
        [ "${wh%x*}" = 1200 ] && [ "$size" -gt 20000 ]
        ok $? "chromium renders the page: a 1200-pixel-wide PNG of $size bytes"
        if [ -n "${GPURUN_KEEP_SCREENSHOT:-}" ]; then
            cp "$TMP/report.png" "$GPURUN_KEEP_SCREENSHOT"
        fi
    fi
fi

done_testing
