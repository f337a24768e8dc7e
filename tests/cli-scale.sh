#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Jobs of real size: a run folder holds files per host, not per rank (at
# most 10 + 3 per host; output = "per-rank" adds one file per rank), the
# record still has every rank's binding, status and output location, rank
# 0's figures of merit come from its labelled lines; and while the ranks run
# gpurun waits on pipes, not on the file system (strace: the same number of
# file-system calls for a 2 s and a 6 s job, on a terminal, status.json
# and /proc aside).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

unset GPURUN_TOPOLOGY
job() { # job NAME RANKS COMMAND [EXTRA]
    printf 'job = "%s"\ncommand = "%s"\nlauncher = "local"\nranks_per_node = %s\nthreads_per_rank = 1\noversubscribe = true\nresults = "%s"\n%s\n' \
        "$1" "$3" "$2" "$TMP/results" "${4:-}" >"$TMP/$1.conf"
}
last_run() { ls -d "$TMP"/results/"$1"/*Z-*/ | tail -1 | sed 's:/$::'; }
cat >"$TMP/say" <<'EOF'
#!/bin/sh
echo "hello from $GPURUN_RANK"
echo "to stderr from $GPURUN_RANK" >&2
[ "$GPURUN_RANK" = 0 ] && echo "FOM: 42"
[ "$GPURUN_RANK" = 1 ] && echo "FOM: 7"
printf 'no newline %s' "$GPURUN_RANK"
exit 0
EOF
chmod 0755 "$TMP/say"

job many 16 "$TMP/say"
run "$GPURUN" run "$TMP/many.conf" --quiet
expect_rc 0 "16 ranks on the local launcher"
d=$(last_run many)
nf=$(find "$d" -type f | wc -l)
[ "$nf" -le 13 ]
ok $? "the run folder holds at most 10 + 3 files for one host ($nf: $(ls "$d" | tr '\n' ' '))"
[ -z "$(ls "$d" | grep '^rank\.')" ]
ok $? "... and no file per rank"
host_out=$(hostname | sed 's/[^A-Za-z0-9._-]/_/g')
[ "$(grep -c '^[0-9]*: hello from ' "$d/$host_out.out")" = 16 ]
ok $? "every rank's lines are in $host_out.out, labelled by rank"
grep -q '^3: to stderr from 3$' "$d/$host_out.out" && grep -q '^5: no newline 5$' "$d/$host_out.out"
ok $? "... stderr too, and a last line without newline"
[ "$(awk -F': ' '$2 ~ /from/ { n = split($2, w, " "); if (w[n] != $1) bad = 1 } END { print bad + 0 }' \
    "$d/$host_out.out")" = 0 ]
ok $? "... each line under its own rank's label"
[ "$(jq '[.bindings[] | select(.host and .output.file and .output.label)] | length' "$d/record.json")" = 16 ] &&
    [ "$(jq '[.rank_status[] | select(.exit_code == 0)] | length' "$d/record.json")" = 16 ]
ok $? "the record has every rank's binding, exit status and output location"
[ "$(jq -r '.bindings[7].output | "\(.file) \(.label)"' "$d/record.json")" = "$host_out.out 7: " ]
ok $? "... rank 7's output: its host's file and its label"
[ "$(jq '.ranks | length' "$d/$host_out.ranks.json")" = 16 ] &&
    [ "$(jq '[.ranks[] | select(.binding.rank == .rank and .status.exit_code == 0)] | length' "$d/$host_out.ranks.json")" = 16 ]
ok $? "$host_out.ranks.json: each local rank's binding and status, once"

job per 4 "$TMP/say" 'output = "per-rank"'
run "$GPURUN" run "$TMP/per.conf" --quiet
expect_rc 0 "output = \"per-rank\""
d=$(last_run per)
[ "$(ls "$d" | grep -c '^rank\.[0-9]*\.out$')" = 4 ] && [ ! -e "$d/$host_out.out" ]
ok $? "... one rank.N.out per rank, no host file"
[ "$(cat "$d/rank.2.out")" = "hello from 2
to stderr from 2
no newline 2" ]
ok $? "... as the program wrote it, without labels"

# Rank 0's figure of merit, from its lines only (rank 1 prints another).
mkdir "$TMP/tpl"
cat >"$TMP/tpl/say.conf" <<EOF
description = "prints a figure of merit on two ranks"
command = "$TMP/say"
sanity = "hello from"
fom ft { regex = "^FOM: ([0-9]+)" }
EOF
printf 'template = "say"\nlauncher = "local"\nranks_per_node = 2\nthreads_per_rank = 1\nresults = "%s"\n' \
    "$TMP/results" >"$TMP/t.conf"
run env GPURUN_TEMPLATE_PATH="$TMP/tpl" "$GPURUN" run "$TMP/t.conf" --quiet
expect_rc 0 "a template's figure of merit on 2 ranks"
d=$(ls -d "$TMP"/results/t/*Z-*/ | tail -1)
[ "$(jq -r '.foms.ft.value' "$d/record.json")" = 42 ]
ok $? "... is rank 0's (42), read from its labelled lines, not rank 1's"
d=${d%/}
# --quiet: only the closing line, the figure and the run folder on it.
[ "$(cat "$TMP/out")" = "gpurun: t: ok, ft = 42, $d" ]
ok $? "--quiet prints only 'gpurun: t: ok, ft = 42, RUN-FOLDER' ($(head -c 200 "$TMP/out"))"

# Many hosts, simulated (bench/sim-mpirun plays mpirun on this node): hosts
# that are not alike each plan once, every rank is in the record, 3 files per
# host, and a host whose rank steps die is named as lost.
mkdir "$TMP/simbin"
ln -s "$(cd "$top_srcdir" && pwd)/bench/sim-mpirun" "$TMP/simbin/mpirun"
fx=$(cd "$FIXTURES" && pwd)
export GPURUN_SIM_TOPOLOGIES="$fx/2s-4gpu-2nic.xml $fx/cpu-only-2numa.xml $fx/single-gpu-ws.xml"
cat >"$TMP/sim" <<'EOF'
#!/bin/sh
echo "rank $GPURUN_RANK on $GPURUN_HOST"
[ "$GPURUN_HOST" = "${LOSE:-}" ] && kill -KILL "$PPID"
exit 0
EOF
chmod 0755 "$TMP/sim"
printf 'job = "sim"\ncommand = "%s"\nlauncher = "mpirun"\nnodes = 12\nranks_per_node = 2\nthreads_per_rank = 1\nbind = "none"\noversubscribe = true\nresults = "%s"\n' \
    "$TMP/sim" "$TMP/results" >"$TMP/sim.conf"
run env PATH="$TMP/simbin:$PATH" "$GPURUN" run "$TMP/sim.conf" --quiet
expect_rc 0 "12 simulated hosts x 2 ranks"
d=$(last_run sim)
[ "$(jq '[.host_plans[] | select(.ranks | length == 2)] | length' "$d/record.json")" = 12 ]
ok $? "... each host planned its own ranks, once: 12 host plans in the record"
[ "$(jq '[.host_plans[].topology | tostring] | unique | length' "$d/record.json")" = 3 ]
ok $? "... from three different topologies"
[ "$(jq '[range(0; 24) as $i | select(.bindings[$i].host == .rank_status[$i].host and .rank_status[$i].exit_code == 0)] | length' "$d/record.json")" = 24 ]
ok $? "... and every rank's binding and status is in the record"
nf=$(find "$d" -type f | wc -l)
[ "$nf" -le $((10 + 3 * 12)) ]
ok $? "... in at most 10 + 3 x 12 files ($nf)"
grep -q '^1: rank 1 on sim0001$' "$d/sim0001.out" && grep -q '^23: rank 23 on sim0012$' "$d/sim0012.out"
ok $? "... each host's ranks' lines in its own HOST.out"
run env PATH="$TMP/simbin:$PATH" LOSE=sim0005 "$GPURUN" run "$TMP/sim.conf" --quiet
expect_rc 3 "a simulated host whose rank steps die: exit 3"
contains "$TMP/err" "lost sim0005 (ranks 8, 9)" "... naming the lost host and its ranks"
# A host that cannot be reached at all writes nothing: its ranks are named
# by the node the plan gave them, not only counted.
run env PATH="$TMP/simbin:$PATH" GPURUN_SIM_DOWN="sim0003 sim0004" "$GPURUN" run "$TMP/sim.conf" --quiet
expect_rc 1 "two simulated hosts that cannot be reached: mpirun's exit status"
contains "$TMP/err" "20 of 24 ranks finished; never started (their hosts wrote nothing): node 2 (ranks 4-5), node 3 (ranks 6-7)" \
    "... naming the nodes and ranks that never started"
contains "$TMP/err" "No route to host" "... and what mpirun said"

# No polling: the same file-system calls for a 2 s and a 6 s job.
if ! command -v strace >/dev/null 2>&1 || ! command -v script >/dev/null 2>&1; then
    skip "strace or script (util-linux) not found: no check of file-system calls"
elif ! strace -qq -o /dev/null true 2>/dev/null; then
    skip "strace cannot trace here (ptrace not allowed)"
else
    # One line per call: not the second half of an interrupted one, nor
    # signals or exits. Nor what depends on the node and not on the run's
    # length: the rank steps' look at /proc for the other processes on
    # their cores, and the names of those processes' owners (-y names the
    # file of every descriptor, so a call relative to /proc is seen too).
    # status.json is counted on its own: it is rewritten when the run moved
    # (its hosts came), 5 s apart at most, so a 6 s job may write it once
    # more than a 2 s one, and never more often for lasting longer.
    calls() {
        grep -v -e '<\.\.\. ' -e ' --- SIG' -e ' +++ ' -e '</proc[/>]' -e '"/proc[/"]' -e '"/etc/passwd"' \
            -e '"/etc/group"' -e '"status\.json"' -e '"\.status\.json\.' "$1"
    }
    status_writes() { grep -c '^[0-9]* *renameat(.*"\.status\.json\..*"status\.json")' "$1"; }
    for s in 2 6; do
        job "sleep$s" 2 "/bin/sleep $s"
        # On a terminal (script): gpurun relays output and shows its status line.
        script -qec "strace -f -qq -y -e trace=%file -o '$TMP/strace.$s' '$GPURUN' run '$TMP/sleep$s.conf'" /dev/null \
            >"$TMP/script.$s" 2>&1
        calls "$TMP/strace.$s" | wc -l >"$TMP/calls.$s"
        status_writes "$TMP/strace.$s" >"$TMP/status-writes.$s"
    done
    grep -q "ranks alive" "$TMP/script.6"
    ok $? "on a terminal gpurun shows its status line"
    c2=$(cat "$TMP/calls.2") c6=$(cat "$TMP/calls.6")
    # Polling would add calls in proportion to the 4 s more (the old 100 ms
    # loop added 32); a sanitizer build or the C library may make a call or
    # two more in one run than the other, whatever the duration.
    [ "$c2" -gt 0 ] && [ $((c6 - c2)) -le 4 ] && [ $((c2 - c6)) -le 4 ]
    ok $? "file-system calls of a 2 s job ($c2) and of a 6 s job ($c6) differ by at most 4: no polling"
    w2=$(cat "$TMP/status-writes.2") w6=$(cat "$TMP/status-writes.6")
    [ "$w2" -ge 2 ] && [ "$w6" -ge "$w2" ] && [ "$w6" -le $((w2 + 1)) ]
    ok $? "status.json written at the start and the end, and at most once more for the longer job ($w2, $w6)"
    for s in 2 6; do
        calls "$TMP/strace.$s" |
            sed -e 's/^[0-9]* *//' -e 's/(\([^,)]*\).*/(\1/' -e 's/[0-9]\{6,\}[^"]*//g' | sort >"$TMP/calls-list.$s"
    done
    [ "$c2" -eq "$c6" ] || diff "$TMP/calls-list.2" "$TMP/calls-list.6" | grep '^[<>]' | head -10 | sed 's/^/# /'
fi

done_testing
