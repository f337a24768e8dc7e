#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The plugin loader loads the file it checked (issue 37 §1), as two
# unprivileged users of one project group: a victim whose gpurun loads every
# rm_*.so of $GPURUN_PLUGIN_PATH, and an attacker (tests/race_swap.c)
# exchanging names under it with renameat2(RENAME_EXCHANGE) the whole time.
#   (a) a shared plugin folder with the sticky bit, group-writable: the
#       attacker exchanges a symlink to a root-owned library with one to
#       their own;
#   (b) the victim's own folder (0755) in a setgid project folder (2775): the
#       attacker exchanges it with a folder of theirs;
#   (c) the victim's folder in a sticky folder of everyone's (like /tmp): the
#       attacker cannot move it, and the victim's plugin loads every time.
# The attacker's library (tests/plugin_mark.c) writes a line when its code
# runs: it never may.  Then what is refused without a race: a relative or
# empty element, a plugin of another user, a symlink, a writable folder.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
    echo "1..0 # SKIP needs root to run as two other uids (setpriv)"
    exit 0
fi
for tool in setpriv cc; do
    if ! command -v $tool >/dev/null 2>&1; then
        echo "1..0 # SKIP $tool not found"
        exit 0
    fi
done
unset GPURUN_PLUGIN_PATH SLURM_JOB_ID FLUX_URI
TRIES=${PLUGINRACE_TRIES:-300}
V=4511 A=4512 G=4510
victim() { setpriv --reuid=$V --regid=$V --groups=$G "$@"; }
attacker() { setpriv --reuid=$A --regid=$A --groups=$G "$@"; }
chmod 0755 "$TMP"
L=$TMP/lib
mkdir -m 0755 "$L" "$TMP/marks"
chmod 1777 "$TMP/marks"
MARKS=$TMP/marks/loaded
mklib() { # mklib WHO OUT: a library that marks WHO when loaded
    cc -shared -fPIC -DMARK_FILE="\"$MARKS\"" -DMARK_WHO="\"$1\"" "$top_srcdir/tests/plugin_mark.c" -o "$2"
}
mklib root "$L/root.so" && mklib attacker "$L/evil.so" && mklib victim "$L/victim.so" &&
    cc -O2 "$top_srcdir/tests/race_swap.c" -o "$L/race_swap"
ok $? "the libraries and the exchanger build"
chown $A:$A "$L/evil.so"
chown $V:$V "$L/victim.so"
fix=$top_srcdir/tests/fixtures/2s-4gpu-2nic.xml
printf 'command = "true"\nlauncher = "local"\nranks_per_node = 1\ngpus_per_rank = 0\n' >"$TMP/job.conf"
chmod 0644 "$TMP/job.conf"
count() { grep -c "^$1 uid" "$MARKS" 2>/dev/null || true; }

# tries DIR LOG: the victim's gpurun, TRIES times, loading DIR's plugins
# (a job file that names a launcher loads every resource manager's).
tries() {
    i=0
    while [ $i -lt "$TRIES" ]; do
        GPURUN_PLUGIN_PATH=$1 victim "$GPURUN" plan "$TMP/job.conf" --topology "$fix" >/dev/null 2>>"$2"
        i=$((i + 1))
    done
}
race() { # race A B DIR LOG: the attacker exchanges A and B while the victim tries
    rm -f "$TMP/stop"
    attacker "$L/race_swap" "$1" "$2" "$TMP/stop" >"$TMP/swap.out" 2>&1 &
    swapper=$!
    tries "$3" "$4"
    touch "$TMP/stop"
    wait $swapper
    diag "attacker: $(cat "$TMP/swap.out")"
}

# (a) a sticky, group-writable shared plugin folder.
P=$TMP/proj-plugins
mkdir "$P"
chown 0:$G "$P"
chmod 1775 "$P"
attacker ln -s "$L/root.so" "$P/rm_proj.so"
attacker ln -s "$L/evil.so" "$P/.swap"
: >"$MARKS" && chmod 0666 "$MARKS"
race "$P/rm_proj.so" "$P/.swap" "$P" "$TMP/a.err"
ok "$(count attacker)" "(a) $TRIES tries with symlinks exchanged in a sticky shared folder: the attacker's code ran $(count attacker) times"
grep -q "plugin folder refused: $P: $P is writable by others" "$TMP/a.err"
ok $? "(a) the folder is refused, saying which and why"
[ "$(grep -c "refused" "$TMP/a.err")" -eq "$TRIES" ]
ok $? "(a) said once a run"

# (b) the victim's own folder inside a setgid project folder.
S=$TMP/project
mkdir "$S" "$S/plugins" "$S/evil"
chown 0:$G "$S"
chmod 2775 "$S"
chown $V:$V "$S/plugins"
chown $A:$A "$S/evil"
cp "$L/victim.so" "$S/plugins/rm_proj.so" && chown $V:$V "$S/plugins/rm_proj.so"
cp "$L/evil.so" "$S/evil/rm_proj.so" && chown $A:$A "$S/evil/rm_proj.so"
: >"$MARKS"
race "$S/plugins" "$S/evil" "$S/plugins" "$TMP/b.err"
ok "$(count attacker)" "(b) $TRIES tries with the victim's folder exchanged in a setgid project folder: the attacker's code ran $(count attacker) times"
grep -q "plugin folder refused: $S/plugins: $S is writable by others without the sticky bit" "$TMP/b.err"
ok $? "(b) the project folder is refused as an ancestor, saying why"

# (c) the victim's folder in a sticky folder of everyone's: accepted, and
# nobody else can move it.
T=$TMP/scratch
mkdir "$T" && chmod 1777 "$T"
victim mkdir -m 0755 "$T/mine"
attacker mkdir -m 0755 "$T/theirs"
victim cp "$L/victim.so" "$T/mine/rm_proj.so"
attacker cp "$L/evil.so" "$T/theirs/rm_proj.so"
: >"$MARKS"
TRIES=$((TRIES / 3 + 1)) race "$T/mine" "$T/theirs" "$T/mine" "$TMP/c.err"
ok "$(count attacker)" "(c) a sticky folder of everyone's: the attacker's code never ran"
[ "$(count victim)" -eq $((TRIES / 3 + 1)) ]
ok $? "(c) the victim's own plugin loaded on every try ($(count victim) of $((TRIES / 3 + 1)))"
grep -q '0 exchanges made' "$TMP/swap.out"
ok $? "(c) the kernel refused every exchange (sticky bit)"
! grep -q 'refused' "$TMP/c.err"
ok $? "(c) nothing refused"

# Refused without a race, each said.
refused() { # refused PATHVALUE PATTERN DESCRIPTION
    : >"$MARKS"
    GPURUN_PLUGIN_PATH=$1 victim "$GPURUN" plan "$TMP/job.conf" --topology "$fix" >/dev/null 2>"$TMP/r.err"
    grep -q "$2" "$TMP/r.err" && [ "$(count attacker)" -eq 0 ] && [ "$(count victim)" -eq 0 ]
    ok $? "$3"
    grep -q "$2" "$TMP/r.err" || sed 's/^/#   /' "$TMP/r.err"
}
victim mkdir -m 0755 "$T/rel"
victim cp "$L/victim.so" "$T/rel/rm_proj.so"
cd "$T" || exit 1
refused rel "plugin folder refused: rel: a relative folder" "a relative element is refused"
cd "$T/rel" || exit 1
refused "/nonexistent::" "an empty element" "an empty element is said and not searched"
cd "$TMP" || exit 1
victim mkdir -m 0755 "$T/other"
cp "$L/evil.so" "$T/other/rm_proj.so" && chown $A:$A "$T/other/rm_proj.so"
refused "$T/other" "plugin refused: $T/other/rm_proj.so: another user's" "a plugin of another user is refused"
victim mkdir -m 0755 "$T/link"
victim ln -s "$T/mine/rm_proj.so" "$T/link/rm_proj.so"
refused "$T/link" "plugin refused: $T/link/rm_proj.so: a symlink" "a plugin that is a symlink is refused"
victim mkdir -m 0775 "$T/gw"
victim cp "$L/victim.so" "$T/gw/rm_proj.so"
refused "$T/gw" "plugin folder refused: $T/gw: $T/gw is writable by others" "a folder others can write is refused"
victim mkdir -m 0755 "$T/wf"
victim cp "$L/victim.so" "$T/wf/rm_proj.so"
victim chmod 0666 "$T/wf/rm_proj.so"
refused "$T/wf" "plugin refused: $T/wf/rm_proj.so: writable by others" "a plugin others can write is refused"
victim ln -s "$T/mine" "$T/via-link"
: >"$MARKS"
GPURUN_PLUGIN_PATH=$T/via-link victim "$GPURUN" plan "$TMP/job.conf" --topology "$fix" >/dev/null 2>"$TMP/l.err"
[ "$(count victim)" -eq 1 ] && ! grep -q refused "$TMP/l.err"
ok $? "a folder reached through the user's own symlink is walked and loaded"

done_testing
