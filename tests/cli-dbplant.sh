#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# results.db's WAL and WAL index in a shared (sticky) results folder: they
# stay, files of ours, between commands, so nobody else can take their
# names; and a WAL planted by another user in the instant between gpurun's
# checks and SQLite's open (held there by tests/plant_hook.c, two FIFOs, no
# timing) is refused, never replayed into the index, and left as it was.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
    echo "1..0 # SKIP needs root to run as two other uids (setpriv)"
    exit 0
fi
if ! command -v setpriv >/dev/null 2>&1; then
    echo "1..0 # SKIP setpriv (util-linux) not found"
    exit 0
fi
if [ ! -r "${PLANT_HOOK_LIB:-}" ]; then
    echo "1..0 # SKIP the plant hook (tests/plant_hook.c) was not built"
    exit 0
fi
victim() { setpriv --reuid=4242 --regid=4242 --clear-groups "$@"; }
attacker() { setpriv --reuid=4343 --regid=4343 --clear-groups "$@"; }
chmod 0755 "$TMP"
R=$TMP/shared
mkdir "$R"
chown 4242:4242 "$R"
chmod 1777 "$R" # the victim's folder, shared with everyone, sticky
owner() { stat -c %u "$1" 2>/dev/null; }

# 1. The WAL and its index are made by gpurun and stay.
run victim "$GPURUN" results --results "$R"
expect_rc 0 "gpurun results in a sticky shared folder of ours"
[ "$(owner "$R/results.db-wal")" = 4242 ] && [ "$(owner "$R/results.db-shm")" = 4242 ]
ok $? "results.db-wal and results.db-shm stay after the command, the victim's"
run attacker sh -c "rm -f '$R/results.db-wal'; printf planted >'$R/results.db-wal'"
[ "$(owner "$R/results.db-wal")" = 4242 ] && [ ! -s "$R/results.db-wal" ]
ok $? "... so another user cannot put a WAL of theirs in its place"

# 2. No WAL yet (a folder an older gpurun left): another user plants one
# while gpurun is between its checks and SQLite's open.
rm -f "$R/results.db-wal" "$R/results.db-shm"
mkfifo -m 0666 "$TMP/ready" "$TMP/go"
printf 'planted WAL: not SQLite, not the victim' >"$TMP/planted"
(
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" LD_PRELOAD="$PLANT_HOOK_LIB" \
        PLANT_READY="$TMP/ready" PLANT_GO="$TMP/go" \
        victim "$GPURUN" results --results "$R" >"$TMP/out2" 2>"$TMP/err2"
    echo $? >"$TMP/rc2"
) &
held=$(head -c 1 "$TMP/ready")
[ "$held" = r ]
ok $? "gpurun is held between its checks and SQLite's open"
attacker sh -c "cp '$TMP/planted' '$R/results.db-wal' && chmod 0666 '$R/results.db-wal'"
ok $? "another user plants results.db-wal meanwhile"
printf g >"$TMP/go"
wait
rc=$(cat "$TMP/rc2")
cat "$TMP/err2" >&2
[ "$rc" = 2 ]
ok $? "the planted WAL is refused: exit 2 (got $rc)"
grep -q "results.db-wal: owned by another user" "$TMP/err2"
ok $? "... naming the file and whose it is"
cmp -s "$TMP/planted" "$R/results.db-wal" && [ "$(owner "$R/results.db-wal")" = 4343 ]
ok $? "... and left byte for byte as it was"
done_testing
