#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The help and the manual agree: every command `gpurun --help` lists has a
# `gpurun CMD --help` that exits 0 and starts with its usage; every long option
# a command's help lists (its usage and its option table) is in doc/gpurun.1;
# every option doc/gpurun.1's synopsis gives a command is in that command's
# help; every command is in the manual's synopsis.  And both manual pages
# render without a warning.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

MAN1=$top_srcdir/doc/gpurun.1
MAN5=$top_srcdir/doc/gpurun.conf.5

# The manual's text with roff's escaped hyphens as plain ones.
sed 's/\\-/-/g; s/\\f[BIRP]//g' "$MAN1" >"$TMP/man1.txt"

run "$GPURUN" --help
expect_rc 0 "gpurun --help"
awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }' "$TMP/out" >"$TMP/commands"
[ -s "$TMP/commands" ]
ok $? "gpurun --help lists the commands ($(tr '\n' ' ' <"$TMP/commands"))"

# The synopsis of gpurun.1, one line per command: "CMD --opt --opt ...".
awk '
    /^\.SH SYNOPSIS/ { on = 1; next }
    on && /^\.SH/ { if (line != "") print line; exit }
    on && /^\.br/ { print line; line = ""; next }
    on { line = line " " $0 }
' "$TMP/man1.txt" | sed 's/\.[A-Z][A-Z]* //g; s/[][|"]/ /g' >"$TMP/synopsis"

while read -r cmd; do
    run "$GPURUN" "$cmd" --help
    expect_rc 0 "gpurun $cmd --help"
    head -n 1 "$TMP/out" | grep -q "^Usage: gpurun $cmd"
    ok $? "gpurun $cmd --help starts with 'Usage: gpurun $cmd'"
    # Its own options: the usage lines, then the option table (indented
    # lines that start with an option: its column, up to two blanks).
    awk '
        NR == 1 || (usage && /^ +[[a-zA-Z]/) { usage = 1; print; next }
        { usage = 0 }
        /^ +(-[a-zA-Z], )?--[a-z]/ { sub(/^ +/, ""); sub(/  .*/, ""); print }
    ' "$TMP/out" >"$TMP/optlines.$cmd"
    grep -o -e '--[a-z][a-z0-9-]*' "$TMP/optlines.$cmd" | sort -u >"$TMP/opts.$cmd"
    cp "$TMP/out" "$TMP/help.$cmd"
    missing=
    while read -r opt; do
        grep -q -e "$opt\\b" "$TMP/man1.txt" || missing="$missing $opt"
    done <"$TMP/opts.$cmd"
    [ -z "$missing" ]
    ok $? "every long option of gpurun $cmd --help is in gpurun.1${missing:+ (missing:$missing)}"
    # Short ones (but -h) as "-x" next to the long one in the manual.
    missing=
    for pair in $(sed -n 's/^\(-[a-zA-Z]\), \(--[a-z][a-z0-9-]*\).*/\1,\2/p' "$TMP/optlines.$cmd"); do
        short=${pair%%,*}
        [ "$short" = -h ] && continue
        grep -q -e "$short\\b" "$TMP/man1.txt" || missing="$missing $short (${pair#*,})"
    done
    [ -z "$missing" ]
    ok $? "every short option of gpurun $cmd --help is in gpurun.1${missing:+ (missing:$missing)}"
    grep -Eq "^\\.BR? $cmd( |\$)" "$MAN1"
    ok $? "gpurun.1 describes $cmd under COMMANDS"

    # gpurun.1's synopsis line for it (the run line reads "gpurun [run] JOB.conf").
    syn=$(grep -E "^ *gpurun +$cmd( |$)|^ *gpurun +$cmd$" "$TMP/synopsis" | head -n 1)
    [ "$cmd" = run ] && syn=$(grep -E "^ *gpurun +run +JOB" "$TMP/synopsis" | head -n 1)
    if [ -z "$syn" ]; then
        ok 1 "gpurun.1's synopsis has gpurun $cmd"
        continue
    fi
    ok 0 "gpurun.1's synopsis has gpurun $cmd"
    extra=
    for opt in $(printf '%s\n' "$syn" | grep -o -e '--[a-z][a-z0-9-]*' | sort -u); do
        grep -q -e "$opt\\b" "$TMP/help.$cmd" || extra="$extra $opt"
    done
    [ -z "$extra" ]
    ok $? "every option of gpurun.1's synopsis of $cmd is in its --help${extra:+ (not there:$extra)}"
done <"$TMP/commands"

# An unknown command and an unknown option say where to look.
run "$GPURUN" nosuchcommand
expect_rc 2 "an unknown command: exit 2"
contains "$TMP/err" "gpurun --help" "... and points to gpurun --help"
while read -r cmd; do
    run "$GPURUN" "$cmd" --no-such-option
    if [ "$rc" -eq 2 ] && grep -q -e "--help" "$TMP/err"; then ok 0 "gpurun $cmd --no-such-option: exit 2, points to --help"
    else ok 1 "gpurun $cmd --no-such-option: exit 2, points to --help (exit $rc: $(head -c 200 "$TMP/err"))"; fi
done <"$TMP/commands"

# A mistyped command or long option: the nearest one suggested, exit 2.
run "$GPURUN" rn
expect_rc 2 "gpurun rn: exit 2"
contains "$TMP/err" "gpurun: 'rn' is not a gpurun command (did you mean 'run'?" "... did you mean 'run'"
run "$GPURUN" reprot
contains "$TMP/err" "(did you mean 'report'?" "gpurun reprot: did you mean 'report'"
run "$GPURUN" run --dryrun job.conf
expect_rc 2 "gpurun run --dryrun: exit 2"
contains "$TMP/err" "gpurun: run: unknown option '--dryrun' (did you mean '--dry-run'?" "... did you mean '--dry-run'"
# Every long option of every command, one letter doubled.
while read -r cmd; do
    bad=
    for opt in $(cat "$TMP/opts.$cmd"); do
        [ "$opt" = --help ] && continue
        typo=$(printf '%s\n' "$opt" | sed 's/^--\(.\)/--\1\1/')
        run "$GPURUN" "$cmd" "$typo"
        [ "$rc" -eq 2 ] && grep -qF -e "unknown option '$typo' (did you mean '$opt'?" "$TMP/err" ||
            bad="$bad $typo($rc: $(head -c 100 "$TMP/err"))"
    done
    [ -z "$bad" ]
    ok $? "gpurun $cmd: each mistyped long option gets the one meant, exit 2${bad:+ (not:$bad)}"
done <"$TMP/commands"

# Nothing a user reads points at "SPEC §N" (roff: SPEC \(scN), a document
# users do not have: the shipped texts (README, docs, manual pages, examples,
# templates, site profiles), every --help and the program's messages.
refs=$(cd "$top_srcdir" && grep -rnE 'SPEC *(§|\\\(sc)' README.md docs doc examples templates contrib quickstart.sh 2>/dev/null)
[ -z "$refs" ]
ok $? "no shipped text refers to SPEC §${refs:+ ($(printf '%s' "$refs" | head -n 3 | tr '\n' ' '))}"
: >"$TMP/helps"
for cmd in "" $(cat "$TMP/commands"); do
    # shellcheck disable=SC2086
    "$GPURUN" $cmd --help >>"$TMP/helps" 2>&1
done
refs=$(grep -nE 'SPEC *§' "$TMP/helps")
[ -z "$refs" ]
ok $? "no --help refers to SPEC §${refs:+ ($(printf '%s' "$refs" | head -n 3 | tr '\n' ' '))}"
# A message is a string literal: one that names SPEC § is on a line that
# is not a comment's.
refs=$(cd "$top_srcdir" && grep -rnE '"[^"]*SPEC *§' launcher plugins --include='*.c' | grep -vE ':[0-9]+: *(/?\*|//)')
[ -z "$refs" ]
ok $? "no message of the program refers to SPEC §${refs:+ ($(printf '%s' "$refs" | head -n 3 | tr '\n' ' '))}"

# Each section once (a reader looks for SECURITY in one place), and the
# SECURITY section says what the Slurm plugin refuses and which rendezvous to
# use on a shared node (issue 26).
for page in "$MAN1" "$MAN5"; do
    dup=$(grep '^\.SH ' "$page" | sort | uniq -d | tr '\n' ' ')
    [ -z "$dup" ]
    ok $? "$(basename "$page"): every section once${dup:+ (twice: $dup)}"
done
sec=$(awk '/^\.SH SECURITY/ { on = 1; next } on && /^\.SH/ { exit } on' "$MAN1")
echo "$sec" | grep -q 'spank_gpurun.so' && echo "$sec" | grep -q 'open range' &&
    echo "$sec" | grep -q 'params.rendezvous = \\(dqfile\\(dq'
ok $? "gpurun.1's SECURITY says what the SPANK plugin refuses and which rendezvous suits a shared node"

# README.md is the newcomer's page: the two commands of a fresh machine, and
# every page it links to is there.
grep -q '^    \./quickstart\.sh$' "$top_srcdir/README.md" && grep -q '^    tests/run-all\.sh$' "$top_srcdir/README.md"
ok $? "README.md gives ./quickstart.sh and tests/run-all.sh"
missing=
for link in $(grep -o '](\(docs\|examples\|doc\)/[^)]*)' "$top_srcdir/README.md" | sed 's/^](//; s/)$//'); do
    [ -e "$top_srcdir/$link" ] || missing="$missing $link"
done
[ -z "$missing" ]
ok $? "every page README.md links to exists${missing:+ (missing:$missing)}"

# gpurun(1) shows its examples early, right after what gpurun is: NAME,
# SYNOPSIS, DESCRIPTION, EXAMPLES.
order=$(grep '^\.SH ' "$MAN1" | head -n 4 | sed 's/^\.SH //' | tr '\n' ' ')
[ "$order" = "NAME SYNOPSIS DESCRIPTION EXAMPLES " ]
ok $? "gpurun.1: EXAMPLES right after DESCRIPTION (first sections: $order)"
[ "$(grep -c '^\.SH SECURITY' "$MAN1")" -eq 1 ]
ok $? "gpurun.1: one SECURITY section"

# The manual pages render, without a warning.
if command -v man >/dev/null 2>&1 && man --help 2>&1 | grep -q -e '--warnings'; then
    for page in "$MAN1" "$MAN5"; do
        MANWIDTH=100 man --warnings -l "$page" >"$TMP/rendered" 2>"$TMP/warnings"
        [ -s "$TMP/rendered" ] && [ ! -s "$TMP/warnings" ]
        ok $? "man -l $(basename "$page") renders without warnings"
        sed 's/^/#   /' "$TMP/warnings" | head -5
    done
else
    skip "man (man-db, with --warnings) not found: the pages are not rendered"
fi
if command -v groff >/dev/null 2>&1; then
    for page in "$MAN1" "$MAN5" "$top_srcdir/doc/libgpurun.3"; do
        groff -man -ww -z "$page" >"$TMP/warnings" 2>&1
        [ ! -s "$TMP/warnings" ]
        ok $? "groff -man -ww: $(basename "$page") without a warning"
        sed 's/^/#   /' "$TMP/warnings" | head -5
    done
else
    skip "groff not found: the pages are not checked with -ww"
fi

done_testing
