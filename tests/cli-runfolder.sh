#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The run folder is gpurun's own: a results or job folder of another user,
# or one others can write without the sticky bit, is refused; the run folder
# and its files have explicit modes whatever the umask; a rank step refuses a
# folder that is not the one gpurun made (swapped, another user's, with a
# planted env.json) and never follows a planted output symlink; a record that
# cannot be written (read-only folder, failing rename, full disk, text that
# is not UTF-8) is a failure the results database does not claim; a status
# that cannot be written is said as such, not as a lost host.  Two uids.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
    echo "1..0 # SKIP needs root to run as two other uids (setpriv)"
    exit 0
fi
if ! command -v setpriv >/dev/null 2>&1; then
    echo "1..0 # SKIP setpriv (util-linux) not found"
    exit 0
fi
unset GPURUN_TOPOLOGY
victim() { setpriv --reuid=4242 --regid=4242 --clear-groups "$@"; }
attacker() { setpriv --reuid=4343 --regid=4343 --clear-groups "$@"; }
chmod 0755 "$TMP"
mkdir "$TMP/home" "$TMP/shared"
chown 4242:4242 "$TMP/home"
chmod 1777 "$TMP/shared" # a shared scratch folder, as /tmp is
HOME_V=$TMP/home

# The victim's program: says whether a planted variable reached it, and
# leaves a mark when it runs at all.
cat >"$HOME_V/prog" <<'EOF'
#!/bin/sh
echo "EVIL=${EVIL:-none}"
: >"${MARK:-/dev/null}"
echo hello
EOF
chmod 0755 "$HOME_V/prog"
job() { # job FILE [EXTRA LINES]
    {
        printf 'job = "j"\ncommand = "%s"\nlauncher = "local"\nranks_per_node = 1\nthreads_per_rank = 1\n' \
            "$HOME_V/prog"
        [ -n "${2:-}" ] && printf '%s\n' "$2"
    } >"$1"
    chown 4242:4242 "$1"
}
job "$HOME_V/j.conf"
vrun() { # vrun RESULTS [ARGS]: the victim runs the job
    r=$1
    shift
    run victim "$GPURUN" run "$HOME_V/j.conf" --results "$r" --quiet "$@"
}
run_dir() { find "$1" -mindepth 2 -maxdepth 2 -type d | head -1; }
# no_run_in DB: true when results database DB is absent or lists no run
# (sqlite3 would create a missing file: look first).
no_run_in() {
    [ ! -e "$1" ] && return 0
    [ "$(sqlite3 "$1" "SELECT count(*) FROM runs" 2>&1)" = 0 ]
}

# 1. A results folder another user made for us.
attacker mkdir -m 0777 "$TMP/shared/r1"
vrun "$TMP/shared/r1"
expect_rc 2 "a results folder owned by another user is refused (exit 2)"
contains "$TMP/err" "owned by another user" "... saying whose it is"
[ -z "$(ls -A "$TMP/shared/r1")" ]
ok $? "... and nothing was written in it"

# 2. A job folder another user pre-created in a shared (sticky) results folder.
mkdir -m 1777 "$TMP/shared/r2"
attacker mkdir -m 0777 "$TMP/shared/r2/j"
vrun "$TMP/shared/r2"
expect_rc 2 "a job folder owned by another user is refused (exit 2)"
contains "$TMP/err" "job folder" "... naming the job folder"
[ -z "$(ls -A "$TMP/shared/r2/j")" ]
ok $? "... and no run folder was made in it"

# 3. A job folder that is a symlink to the attacker's folder.
mkdir -m 1777 "$TMP/shared/r3"
attacker mkdir -m 0777 "$TMP/shared/evil3"
attacker ln -s "$TMP/shared/evil3" "$TMP/shared/r3/j"
vrun "$TMP/shared/r3"
expect_rc 2 "a job folder that is a symlink is refused (exit 2)"
[ -z "$(ls -A "$TMP/shared/evil3")" ]
ok $? "... and nothing went where it points"

# 4. A results folder of ours that the group can write, without the sticky bit.
victim mkdir -m 0775 "$HOME_V/r4"
chmod 0775 "$HOME_V/r4"
vrun "$HOME_V/r4"
expect_rc 2 "a results folder writable by its group without the sticky bit is refused"
contains "$TMP/err" "sticky bit" "... saying how to fix it"

# 5. A shared sticky results folder works; whatever the umask, nothing in the
#    run folder can be written by others.
mkdir -m 1777 "$TMP/shared/r5"
run victim sh -c "umask 000; exec \"$GPURUN\" run \"$HOME_V/j.conf\" --results \"$TMP/shared/r5\" --quiet"
expect_rc 0 "a run in a shared results folder with the sticky bit, umask 000"
rd=$(run_dir "$TMP/shared/r5")
[ "$(stat -c %a "$rd")" = 700 ]
ok $? "the run folder is 0700 (it is $(stat -c %a "$rd"))"
[ -z "$(find "$rd" -perm /077 ! -type d)" ]
ok $? "no file in it is readable or writable by others: $(find "$rd" -perm /077 ! -type d | head -3 | tr '\n' ' ')"
[ "$(stat -c %a "$TMP/shared/r5/j")" = 755 ]
ok $? "the job folder gpurun made is 0755 whatever the umask"
job "$HOME_V/g.conf" 'run_folder_mode = "group"'
run victim sh -c "umask 000; exec \"$GPURUN\" run \"$HOME_V/g.conf\" --results \"$TMP/shared/r5g\" --quiet"
expect_rc 0 "run_folder_mode = \"group\""
rd=$(run_dir "$TMP/shared/r5g")
[ "$(stat -c %a "$rd")" = 750 ] && [ "$(stat -c %a "$rd/record.json")" = 640 ]
ok $? "... gives a 0750 run folder with 0640 files"
[ -z "$(find "$rd" -perm /022)" ]
ok $? "... and still nothing writable by group or others"
# umask 077 must not take from "group" what it gives: the rank output and
# launcher.out are 0640 like the record, not 0600.
run victim sh -c "umask 077; exec \"$GPURUN\" run \"$HOME_V/g.conf\" --results \"$TMP/shared/r5u\" --quiet"
expect_rc 0 "run_folder_mode = \"group\" under umask 077"
rd=$(run_dir "$TMP/shared/r5u")
odd=$(find "$rd" -type f ! -perm 0640 -printf '%f %m, ')
[ "$(stat -c %a "$rd")" = 750 ] && [ -z "$odd" ] && [ -n "$(find "$rd" -name '*.out')" ]
ok $? "... every file in the run folder is 0640, the output files too (not: $odd)"

# 6. A rank step handed another user's folder with a planted env.json.
rd=$(run_dir "$TMP/shared/r5")
ino=$(stat -c %i "$rd")
attacker mkdir -m 0755 "$TMP/shared/evil6"
cp "$rd"/plan*.json "$rd"/request.json "$rd"/gpudirect.json "$TMP/shared/evil6/" 2>/dev/null
printf '{"EVIL": "1", "LD_PRELOAD": "%s/shared/evil6/evil.so"}\n' "$TMP" >"$TMP/shared/evil6/env.json"
chown -R 4343:4343 "$TMP/shared/evil6"
chmod 0644 "$TMP/shared/evil6"/*
rank_step() { # rank_step DIR INO: the victim's rank step, by hand, as the local launcher starts it
    run victim env GPURUN_OUTPUT="${GPURUN_OUTPUT:-per-host}" GPURUN_LAUNCH_RANK=0 GPURUN_LAUNCH_LOCAL_RANK=0 GPURUN_RUN_DIR_INO="$2" GPURUN_RUN_UID=4242 \
        MARK="$HOME_V/ran" "$GPURUN" rank --run-dir "$1" -- "$HOME_V/prog"
}
rm -f "$HOME_V/ran"
rank_step "$TMP/shared/evil6" "$(stat -c %i "$TMP/shared/evil6")"
[ "$rc" -ne 0 ] && [ ! -e "$HOME_V/ran" ]
ok $? "a rank step refuses a run folder of another user: the program never ran with its env.json (exit $rc)"
contains "$TMP/err" "refused" "... saying it refused the folder"

# 7. The run folder swapped for another (of ours, even) after gpurun made it.
mv "$rd" "$rd.orig"
victim mkdir -m 0700 "$rd"
cp -p "$rd.orig"/plan*.json "$rd.orig"/request.json "$rd.orig"/gpudirect.json "$rd/"
printf '{"EVIL": "1"}\n' >"$rd/env.json"
chown -R 4242:4242 "$rd"
chmod 0600 "$rd/env.json"
rm -f "$HOME_V/ran"
rank_step "$rd" "$ino"
[ "$rc" -ne 0 ] && [ ! -e "$HOME_V/ran" ]
ok $? "a rank step refuses a run folder that is not the one gpurun made (another inode; exit $rc)"
contains "$TMP/err" "not the folder gpurun made" "... saying it was replaced"
rm -rf "$rd"
mv "$rd.orig" "$rd"

# 8. A planted output symlink is never followed: the host's output file,
#    or the rank's own with output = "per-rank".
victim sh -c "echo 'my rc' >\"$HOME_V/bashrc\""
host_out=$(hostname | sed 's/[^A-Za-z0-9._-]/_/g').out
rm -f "$rd/$host_out" "$rd/rank.0.out"
ln -s "$HOME_V/bashrc" "$rd/$host_out"
rank_step "$rd" "$ino"
[ "$(cat "$HOME_V/bashrc")" = "my rc" ]
ok $? "a host output file that is a symlink is not followed: its target is unchanged"
[ "$rc" -ne 0 ]
ok $? "... and that rank fails (exit $rc)"
rm -f "$rd/$host_out"
ln -s "$HOME_V/bashrc" "$rd/rank.0.out"
GPURUN_OUTPUT=per-rank rank_step "$rd" "$ino"
[ "$(cat "$HOME_V/bashrc")" = "my rc" ] && [ "$rc" -ne 0 ]
ok $? "output = per-rank: a rank.0.out that is a symlink is not followed either (exit $rc)"
rm -f "$rd/rank.0.out"

# 9. A run folder that becomes read-only: the ranks' statuses (gpurun's
#    HOST.ranks.json) and the record cannot be written.
cat >"$HOME_V/ro" <<'EOF'
#!/bin/sh
chmod 0500 "$PWD"
EOF
chmod 0755 "$HOME_V/ro"
printf 'job = "ro"\ncommand = "%s"\nlauncher = "local"\nranks_per_node = 1\nthreads_per_rank = 1\n' \
    "$HOME_V/ro" >"$HOME_V/ro.conf"
run victim "$GPURUN" run "$HOME_V/ro.conf" --results "$HOME_V/r9"
expect_rc 3 "ranks whose statuses cannot be written: exit 3, not 0"
contains "$TMP/err" "statuses could not be kept" "... its own message"
contains "$TMP/err" "ranks.json" "... naming the file"
if grep -q "lost" "$TMP/err"; then ok 1 "... not a lost host"; else ok 0 "... not a lost host"; fi
contains "$TMP/err" "record.json" "... and the record that could not be written is named"
if grep -q " ok in " "$TMP/out"; then ok 1 "... nothing says ok"; else ok 0 "... nothing says ok"; fi
chmod -R u+w "$HOME_V/r9"
no_run_in "$HOME_V/r9/results.db"
ok $? "... and results.db does not claim the run"

# 10. A record whose rename fails (a folder where record.json goes).
cat >"$HOME_V/dir" <<'EOF'
#!/bin/sh
mkdir record.json
EOF
chmod 0755 "$HOME_V/dir"
printf 'job = "rn"\ncommand = "%s"\nlauncher = "local"\nranks_per_node = 1\nthreads_per_rank = 1\n' \
    "$HOME_V/dir" >"$HOME_V/rn.conf"
run victim "$GPURUN" run "$HOME_V/rn.conf" --results "$HOME_V/r10"
expect_rc 3 "a record that cannot be renamed into place: exit 3"
contains "$TMP/err" "record.json" "... naming the record"
no_run_in "$HOME_V/r10/results.db"
ok $? "... and results.db does not claim the run"

# 11. A parameter that is not UTF-8: the record cannot be encoded.
printf 'job = "nu"\ncommand = "%s ${note}"\nlauncher = "local"\nranks_per_node = 1\nthreads_per_rank = 1\nparams { note = "x\377y" }\n' \
    "$HOME_V/prog" >"$HOME_V/nu.conf"
run victim "$GPURUN" run "$HOME_V/nu.conf" --results "$HOME_V/r11"
if [ "$rc" -eq 2 ]; then
    ok 0 "a parameter that is not UTF-8 is refused before anything starts (exit 2)"
else
    expect_rc 3 "a record with a parameter that is not UTF-8: exit 3, not ok"
    contains "$TMP/err" "record.json" "... naming the record"
fi
no_run_in "$HOME_V/r11/results.db"
ok $? "... and results.db does not claim the run"

# 12. A full disk: the program fills it, leaving room for its status only.
if mkdir "$TMP/full" && mount -t tmpfs -o size=256k,mode=1777 tmpfs "$TMP/full" 2>/dev/null; then
    cat >"$HOME_V/fill" <<'EOF'
#!/bin/sh
dd if=/dev/zero of=fill bs=4096 2>/dev/null
truncate -s -8192 fill
echo "filled: room for the status, not for a record of more than a page"
EOF
    chmod 0755 "$HOME_V/fill"
    pad=$(printf '%08192d' 0) # a parameter that makes the record larger than the room left
    printf 'job = "full"\ncommand = "%s ${pad}"\nlauncher = "local"\nranks_per_node = 1\nthreads_per_rank = 1\nparams { pad = "%s" }\n' \
        "$HOME_V/fill" "$pad" >"$HOME_V/full.conf"
    run victim "$GPURUN" run "$HOME_V/full.conf" --results "$TMP/full/r"
    [ "$rc" -ne 0 ]
    ok $? "a full disk: the run is not a success (exit $rc)"
    contains "$TMP/err" "record.json" "... and the record that could not be written is named"
    if grep -q " ok in " "$TMP/out"; then ok 1 "... nothing says ok"; else ok 0 "... nothing says ok"; fi
    rm -f "$TMP/full"/r/full/*Z-*/fill
    no_run_in "$TMP/full/r/results.db"
    ok $? "... and results.db does not claim the run"
    umount "$TMP/full"
else
    skip "cannot mount a small tmpfs here (not allowed in this container): no full-disk test"
fi

# 13. gpurun makes the results folder in a folder that others can write (a
# project folder, group-writable, no sticky bit).  Another user replaces it
# with a symlink to a file of the victim's between gpurun's mkdir and its
# setting of the mode (gpurun held there by tests/plant_hook.c): refused, and
# the file keeps its mode (chmod by path would have made it 0755).
if [ -r "${PLANT_HOOK_LIB:-}" ]; then
    P=$TMP/proj13
    mkdir -m 0777 "$P"
    printf 'secret\n' >"$HOME_V/secret"
    chown 4242:4242 "$HOME_V/secret"
    chmod 0600 "$HOME_V/secret"
    rm -f "$TMP/ready" "$TMP/go"
    mkfifo -m 0666 "$TMP/ready" "$TMP/go"
    (
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" LD_PRELOAD="$PLANT_HOOK_LIB" \
            PLANT_MKDIR="$P/r13" PLANT_READY="$TMP/ready" PLANT_GO="$TMP/go" \
            victim "$GPURUN" run "$HOME_V/j.conf" --results "$P/r13" --quiet >"$TMP/out13" 2>"$TMP/err13"
        echo $? >"$TMP/rc13"
    ) &
    held=$(head -c 1 "$TMP/ready")
    [ "$held" = r ]
    ok $? "gpurun is held just after it made the results folder $P/r13"
    attacker sh -c "mv '$P/r13' '$P/r13.moved' && ln -s '$HOME_V/secret' '$P/r13'"
    ok $? "another user, who can write the folder above it, puts a symlink to the victim's file in its place"
    printf g >"$TMP/go"
    wait
    rc=$(cat "$TMP/rc13")
    cat "$TMP/err13" >&2
    [ "$rc" = 2 ]
    ok $? "the replaced results folder is refused: exit 2 (got $rc)"
    grep -q "r13: refused: made by gpurun, it was replaced" "$TMP/err13"
    ok $? "... naming the folder and what happened"
    [ "$(stat -c %a "$HOME_V/secret")" = 600 ]
    ok $? "... and the file the symlink points at keeps its mode 0600 (it is $(stat -c %a "$HOME_V/secret"))"
else
    for i in 1 2 3 4 5; do skip "the plant hook (tests/plant_hook.c) was not built"; done
fi

# 14. The run folder is swapped while a setup step runs (the results folder
# renamed away in the folder above, which others can write, and a tree of
# the other user's put in its place, with the same run folder name and a
# symlink to the victim's file in it): the next setup step and the ranks'
# launcher still start in the folder gpurun made and holds open, not in the
# other user's, and the ranks refuse to run.  No timing: the first setup
# step waits on a FIFO.
P=$TMP/proj14
mkdir -m 0777 "$P"
mkdir "$TMP/tpl14"
rm -f "$TMP/ready" "$TMP/go"
mkfifo -m 0666 "$TMP/ready" "$TMP/go"
cat >"$TMP/tpl14/swap14.conf" <<TPL
description = "two setup steps: the first waits, the second writes in its folder"
command     = "\${prog}"
setup       = { "/bin/sh -c 'echo r > $TMP/ready; cat $TMP/go >/dev/null'", "/bin/sh -c 'echo step2 >> step2.txt'" }
TPL
chown -R 4242:4242 "$TMP/tpl14"
printf 'template = "swap14"\nlauncher = "local"\nranks_per_node = 1\nthreads_per_rank = 1\nparams { prog = "%s" }\n' \
    "$HOME_V/prog" >"$HOME_V/sw.conf"
chown 4242:4242 "$HOME_V/sw.conf"
printf '# bashrc\n' >"$HOME_V/bashrc"
chown 4242:4242 "$HOME_V/bashrc"
(
    victim env GPURUN_TEMPLATE_PATH="$TMP/tpl14" "$GPURUN" run "$HOME_V/sw.conf" --results "$P/r" --quiet \
        >"$TMP/out14" 2>"$TMP/err14"
    echo $? >"$TMP/rc14"
) &
held=$(head -c 1 "$TMP/ready")
[ "$held" = r ]
ok $? "the first setup step waits"
name=$(ls "$P/r/sw" | grep -v "^latest$")
attacker sh -c "mv '$P/r' '$P/r.moved' && mkdir -p '$P/r/sw/$name' && ln -s '$HOME_V/bashrc' '$P/r/sw/$name/step2.txt' && chmod -R a+rwx '$P/r'"
ok $? "another user swaps in a tree of theirs with the same run folder $name"
printf g >"$TMP/go"
wait
rc=$(cat "$TMP/rc14")
cat "$TMP/err14" >&2
[ "$(cat "$HOME_V/bashrc")" = "# bashrc" ]
ok $? "the second setup step did not write through the other user's symlink: ~/.bashrc is as it was"
[ "$(cat "$P/r.moved/sw/$name/step2.txt" 2>/dev/null)" = step2 ]
ok $? "... it ran in the run folder gpurun made (now $P/r.moved/sw/$name)"
[ "$rc" -ne 0 ] && [ ! -e "$P/r/sw/$name/rank.0.out" ] && ! grep -q hello "$P/r.moved/sw/$name"/*.out 2>/dev/null
ok $? "... and the ranks did not run in the swapped folder: not a success (exit $rc)"


# 11. A results folder that cannot be made (a read-only folder, another
#     user's): the message says how to choose another.
mkdir "$TMP/readonly" "$TMP/rojob"
printf 'job = "rf"\ncommand = "/bin/true"\nlauncher = "local"\nranks_per_node = 1\nthreads_per_rank = 1\n' \
    >"$TMP/rojob/rf.conf"
chmod 0555 "$TMP/readonly" "$TMP/rojob"
run victim "$GPURUN" run "$TMP/rojob/rf.conf" --results "$TMP/readonly/results"
expect_rc 3 "a results folder that cannot be made: exit 3"
contains "$TMP/err" "cannot create $TMP/readonly/results: Permission denied; choose a results folder you can write with --results DIR (or the job key \`results\`)" \
    "... naming it, with the hint to use --results DIR or the job key"
run victim "$GPURUN" run "$TMP/rojob/rf.conf"
expect_rc 3 "the default results folder next to a job file in a read-only folder: exit 3"
contains "$TMP/err" "cannot create $TMP/rojob/results: Permission denied; choose a results folder you can write with --results DIR" \
    "... with the same hint"

done_testing
