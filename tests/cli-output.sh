#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gpurun's own output on its bad day (issue 38 §1, §9): a reader that went
# away (`| head -1`, a pipe closed before gpurun writes, stdout on a full
# disk, stderr closed) never ends a run: gpurun goes on to the record and
# exits with the run's own status, and the run folder says what was lost;
# the programs it starts still get SIGPIPE at its default; and stdout and
# stderr in one file (`>f 2>&1`) hold gpurun's lines in the order it said
# them.  Never on timing: the program waits for a file the test makes.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

unset GPURUN_TOPOLOGY
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
J=$TMP/job
mkdir -p "$J/tpl"
chmod 0755 "$TMP"

# The program: its SIGPIPE disposition as the kernel sees it (SigIgn of the
# grep it starts, which inherits the shell's), then, once $GO exists when
# the job names one (bounded wait), its figure of merit.
cat >"$J/prog" <<'EOF'
#!/bin/sh
grep '^SigIgn' /proc/self/status
n=0
while [ -n "${GO:-}" ] && [ ! -e "$GO" ] && [ $n -lt 1500 ]; do sleep 0.2; n=$((n + 1)); done
echo "FOM: 42"
EOF
chmod 0755 "$J/prog"
cat >"$J/tpl/say.conf" <<EOF
description = "prints its SIGPIPE disposition and a figure of merit"
command = "$J/prog"
setup = { "/bin/sh -c 'grep ^SigIgn /proc/self/status > setup-sigign.txt'" }
fom ft { regex = "^FOM: ([0-9]+)" }
EOF
export GPURUN_TEMPLATE_PATH="$J/tpl"

# job NAME [EXTRA LINE]: $J/NAME.conf, one rank of the template on this node,
# its results in $TMP/r-NAME.
job() {
    printf 'job = "%s"\ntemplate = "say"\nlauncher = "local"\nranks_per_node = 1\nthreads_per_rank = 1\nresults = "%s"\n%s\n' \
        "$1" "$TMP/r-$1" "${2:-}" >"$J/$1.conf"
}

# recorded NAME DESCRIPTION: the run's exit status (in $TMP/rc.NAME) is 0,
# its record says ok, and gpurun results lists it.
recorded() {
    d=$(ls -d "$TMP/r-$1/$1"/*Z-*/ 2>/dev/null | tail -1)
    d=${d%/}
    [ "$(cat "$TMP/rc.$1" 2>/dev/null)" = 0 ]
    ok $? "$2: gpurun exits 0, the run's own status (got $(cat "$TMP/rc.$1" 2>/dev/null))"
    [ -n "$d" ] && [ "$(jq -r .state "$d/record.json" 2>/dev/null)" = ok ] &&
        [ "$(jq -r .foms.ft.value "$d/record.json")" = 42 ]
    ok $? "... its record.json is there and says ok, with the figure of merit"
    run "$GPURUN" results --results "$TMP/r-$1" --json
    jq_out "length == 1 and .[0].state == \"ok\""
    ok $rc "... and gpurun results lists it"
}

# ---- a reader that goes away ---------------------------------------------
job head
{
    "$GPURUN" run "$J/head.conf" 2>"$TMP/err.head"
    echo $? >"$TMP/rc.head"
} | head -1 >"$TMP/out.head"
recorded head "gpurun run JOB | head -1"
grep -q '^gpurun: head: 1 rank ' "$TMP/out.head"
ok $? "... head got gpurun's first line"

# The reader closes its end before the program ends, so gpurun's closing
# lines meet a pipe without a reader whatever the timing (EPIPE; SIGPIPE
# killed gpurun before: exit 141, no record).
job gone "env { GO = \"$TMP/gone\" }"
{
    "$GPURUN" run "$J/gone.conf" 2>"$TMP/err.gone"
    echo $? >"$TMP/rc.gone"
} | {
    exec 0<&-
    : >"$TMP/gone"
}
recorded gone "a reader that closed the pipe before gpurun's closing lines"
grep -q '^stdout: gone since .* (Broken pipe): gpurun wrote nothing more there' "$d/output-lost.txt" 2>/dev/null
ok $? "... the run folder says once that stdout went away ($(cat "$d/output-lost.txt" 2>/dev/null))"
! grep -q stderr "$d/output-lost.txt" 2>/dev/null && [ "$(grep -c . "$d/output-lost.txt")" = 1 ]
ok $? "... and nothing of stderr, which was still there"
grep -q "^gpurun: gone: 0s: started" "$TMP/err.gone"
ok $? "... stderr still got gpurun's lines"

job full
"$GPURUN" run "$J/full.conf" >/dev/full 2>"$TMP/err.full"
echo $? >"$TMP/rc.full"
recorded full "stdout on /dev/full (ENOSPC)"
grep -q '^stdout: gone since .* (No space left on device)' "$d/output-lost.txt" 2>/dev/null
ok $? "... the run folder says stdout was lost ($(cat "$d/output-lost.txt" 2>/dev/null))"

# stderr closed: a file gpurun opens later must not become its stderr.
job closed
"$GPURUN" run "$J/closed.conf" >"$TMP/out.closed" 2>&-
echo $? >"$TMP/rc.closed"
recorded closed "stderr closed (2>&-)"
! grep -rl "gpurun: closed: " "$d" >/dev/null 2>&1
ok $? "... no line of gpurun's own went into a file of the run folder"
grep -q '^gpurun: closed: ok in ' "$TMP/out.closed"
ok $? "... and stdout still got the closing line"

# ---- the programs gpurun starts: SIGPIPE at its default -------------------
# (bit 13 of SigIgn, 0x1000: ignored; an ignored signal stays ignored
# through exec, and a shell cannot take it back)
d=$(ls -d "$TMP/r-head/head"/*Z-*/ | tail -1)
ign=$(cat "$d"/*.out | sed -n 's/.*SigIgn:[[:space:]]*\([0-9a-f]*\).*/\1/p' | head -1)
[ -n "$ign" ] && [ $((0x$ign & 0x1000)) = 0 ]
ok $? "a rank's program starts with SIGPIPE at its default (SigIgn $ign)"
ign=$(sed -n 's/SigIgn:[[:space:]]*\([0-9a-f]*\).*/\1/p' "$d/setup-sigign.txt" 2>/dev/null)
[ -n "$ign" ] && [ $((0x$ign & 0x1000)) = 0 ]
ok $? "... and so does a setup step (SigIgn $ign)"

# ---- one ordered stream ----------------------------------------------------
# repeat = 2 into one file: run 1's lines, its figure and closing line among
# them, all before "run 2 of 2".
job order "repeat = 2"
"$GPURUN" run "$J/order.conf" >"$TMP/both" 2>&1
echo $? >"$TMP/rc.order"
[ "$(cat "$TMP/rc.order")" = 0 ]
ok $? "repeat = 2 into one file (>f 2>&1): exit 0"
line_of() { grep -n -- "$1" "$TMP/both" | head -1 | cut -d: -f1; }
r1=$(line_of "run 1 of 2")
r2=$(line_of "run 2 of 2")
f1=$(line_of "gpurun: order: ft = 42")
k1=$(line_of "gpurun: order: ok in ")
[ -n "$r1" ] && [ -n "$r2" ] && [ -n "$f1" ] && [ -n "$k1" ] && [ "$r1" -lt "$f1" ] && [ "$f1" -lt "$k1" ] &&
    [ "$k1" -lt "$r2" ]
ok $? "... run 1's figure (line $f1) and closing line ($k1) stand between 'run 1 of 2' ($r1) and 'run 2 of 2' ($r2)"
[ "$(grep -c "gpurun: order: ok in " "$TMP/both")" = 2 ] &&
    [ "$(grep -n "gpurun: order: ok in " "$TMP/both" | tail -1 | cut -d: -f1)" -gt "$r2" ]
ok $? "... and run 2's closing line comes after 'run 2 of 2'"
[ "$(grep -n "summary: 2 of 2 runs ok" "$TMP/both" | cut -d: -f1)" -gt "$(grep -n "gpurun: order: ok in " "$TMP/both" | tail -1 | cut -d: -f1)" ]
ok $? "... the summary last"
[ $tap_failed = 0 ] || sed 's/^/#   /' "$TMP/both"

done_testing
