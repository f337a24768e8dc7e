#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The rank step is gpurun-rank, a program of its own that loads none of
# gpurun's libraries (hwloc, libxml2, SQLite, libconfuse): every rank of a
# local job starts through it and its binding is still checked and
# reported; on hosts nobody planned, exactly one rank step per host hands
# over to `gpurun rank` to plan (the plan lock held) and the others stay
# lean; a gpurun-rank of another version hands its rank to gpurun; and it
# refuses a run folder that is not gpurun's, as `gpurun rank` does.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

unset GPURUN_TOPOLOGY GPURUN_FULL_RANK_STEP
LEAN=$(cd "$(dirname "$GPURUN")" && pwd)/gpurun-rank
if [ ! -x "$LEAN" ]; then
    echo "1..0 # SKIP $LEAN not built"
    exit 0
fi
# The program tells who started it: its parent is the rank step.
cat >"$TMP/who" <<'EOF'
#!/bin/sh
exe=$(readlink "/proc/$PPID/exe")
libs=$(grep -o -e 'libhwloc[^ ]*' -e 'libxml2[^ ]*' -e 'libsqlite3[^ ]*' -e 'libconfuse[^ ]*' "/proc/$PPID/maps" | sort -u | tr '\n' ' ')
echo "rank $GPURUN_RANK host ${GPURUN_HOST:-here} step ${exe##*/} libs [$libs]"
EOF
chmod 0755 "$TMP/who"
last_run() { ls -d "$TMP"/results/"$1"/*Z-*/ | tail -1 | sed 's:/$::'; }

printf 'job = "lean"\ncommand = "%s"\nlauncher = "local"\nranks_per_node = 4\nthreads_per_rank = 1\noversubscribe = true\nresults = "%s"\n' \
    "$TMP/who" "$TMP/results" >"$TMP/lean.conf"
run "$GPURUN" run "$TMP/lean.conf" --quiet
expect_rc 0 "4 ranks on the local launcher"
d=$(last_run lean)
out=$(ls "$d"/*.out | grep -v launcher.out)
[ "$(grep -c ': rank [0-9] host here step gpurun-rank libs \[\]$' "$out")" = 4 ]
ok $? "every rank started through gpurun-rank, which has none of hwloc, libxml2, SQLite, libconfuse mapped"
[ "$(grep -c 'step gpurun-rank' "$out")" = 4 ] || sed 's/^/#   /' "$out"
[ "$(jq '[.bindings[] | select(.match == true and .cpus == .planned_cpus and (.warnings | length) == 0)] | length' "$d/record.json")" = 4 ]
ok $? "... and each rank's binding is applied, checked and reported as planned"
[ "$(jq -r '[.bindings[].cpus] | join(" ")' "$d/record.json")" = "$(jq -r '[.ranks[].cpus] | join(" ")' "$d/plan.json")" ]
ok $? "... the CPU lists written as the plan writes them"

# Hosts nobody planned (bench/sim-mpirun plays 3 hosts x 3 ranks): one rank
# step per host plans, as gpurun; the other two wait for its plan, lean.
mkdir "$TMP/simbin"
ln -s "$(cd "$top_srcdir" && pwd)/bench/sim-mpirun" "$TMP/simbin/mpirun"
fx=$(cd "$FIXTURES" && pwd)
export GPURUN_SIM_TOPOLOGIES="$fx/2s-4gpu-2nic.xml $fx/cpu-only-2numa.xml $fx/single-gpu-ws.xml"
printf 'job = "sim"\ncommand = "%s"\nlauncher = "mpirun"\nnodes = 3\nranks_per_node = 3\nthreads_per_rank = 1\nbind = "none"\noversubscribe = true\nresults = "%s"\n' \
    "$TMP/who" "$TMP/results" >"$TMP/sim.conf"
run env PATH="$TMP/simbin:$PATH" "$GPURUN" run "$TMP/sim.conf" --quiet
expect_rc 0 "3 simulated hosts x 3 ranks"
d=$(last_run sim)
[ "$(jq '.host_plans | length' "$d/record.json")" = 3 ]
ok $? "... each host planned once: 3 host plans"
good=0
for h in sim0001 sim0002 sim0003; do
    full=$(grep -c "host $h step gpurun libs \[.*libhwloc" "$d/$h.out")
    lean=$(grep -c "host $h step gpurun-rank libs \[\]" "$d/$h.out")
    [ "$full" = 1 ] && [ "$lean" = 2 ] && good=$((good + 1))
    diag "$h: $full rank step(s) as gpurun, $lean as gpurun-rank"
done
[ "$good" = 3 ]
ok $? "... on each, one rank step planned as gpurun and two stayed gpurun-rank"
[ ! -e "$d/plan.sim0001.lock" ] && [ -z "$(ls "$d" | grep '\.lock$')" ]
ok $? "... and no plan lock is left"

# By hand, as a launcher starts it (a run folder of ours, its inode given).
d=$(last_run lean)
ino=$(stat -c %i "$d")
step() { # step VERSION INO DIR: the rank step for local rank 0 of DIR
    run env GPURUN_LAUNCH_RANK=0 GPURUN_LAUNCH_LOCAL_RANK=0 GPURUN_RUN_DIR_INO="$2" GPURUN_RUN_UID="$(id -u)" \
        "$LEAN" --gpurun "$GPURUN" --version "$1" --run-dir "$3" -- "$TMP/who"
}
before=$(wc -l <"$out")
step 0.0.0-other "$ino" "$d"
expect_rc 0 "a gpurun-rank told it is for another gpurun version runs the rank"
[ "$(tail -n +$((before + 1)) "$out" | grep -c ': rank 0 host here step gpurun libs')" = 1 ]
ok $? "... through that gpurun's own rank step"
grep -q '^.gpurun S 0 {' "$TMP/out"
ok $? "... which reports its status on stdout"
step "$("$GPURUN" --version | sed 's/^gpurun //')" "$ino" "$d"
expect_rc 0 "a gpurun-rank of gpurun's version runs the rank itself"
[ "$(tail -n 1 "$out" | grep -c ': rank 0 host here step gpurun-rank libs \[\]$')" = 1 ]
ok $? "... lean"
step "$("$GPURUN" --version | sed 's/^gpurun //')" $((ino + 1)) "$d"
[ "$rc" -ne 0 ] && grep -q "refused" "$TMP/out" && [ "$(wc -l <"$out")" = $((before + 2)) ]
ok $? "gpurun-rank refuses a run folder that is not the one gpurun made (another inode): nothing ran"
ln -s "$d" "$TMP/link"
step "$("$GPURUN" --version | sed 's/^gpurun //')" "$ino" "$TMP/link"
[ "$rc" -ne 0 ] && grep -q "symlink" "$TMP/out"
ok $? "... and a run folder reached through a symlink"
# Started by posix_spawn, a local rank step checks itself that gpurun is
# still its parent (its death signal is set only once it runs).
lines=$(wc -l <"$out")
run env GPURUN_LAUNCH_PARENT=1 GPURUN_LAUNCH_RANK=0 GPURUN_LAUNCH_LOCAL_RANK=0 GPURUN_RUN_DIR_INO="$ino" \
    GPURUN_RUN_UID="$(id -u)" "$LEAN" --gpurun "$GPURUN" --version "$("$GPURUN" --version | sed 's/^gpurun //')" \
    --run-dir "$d" -- "$TMP/who"
[ "$rc" -ne 0 ] && [ "$(wc -l <"$out")" = "$lines" ] && grep -q "gpurun (pid 1) is gone" "$TMP/err"
ok $? "a local rank step whose gpurun is gone (GPURUN_LAUNCH_PARENT is not its parent) runs nothing"
# Started elsewhere, with a plan lock handed over that it does not need
# (its host's plan is there already): the program starts in the run
# folder the rank step checked, and does not inherit the lock.
cat >"$TMP/where" <<'EOF'
#!/bin/sh
if [ -e "/proc/$$/fd/9" ]; then echo "fd9 open"; else echo "fd9 closed"; fi
echo "cwd $(pwd -P)"
EOF
chmod 0755 "$TMP/where"
lines=$(wc -l <"$out")
here=$(pwd)
cd /
run env GPURUN_LAUNCH_RANK=0 GPURUN_LAUNCH_LOCAL_RANK=0 GPURUN_RUN_DIR_INO="$ino" GPURUN_RUN_UID="$(id -u)" \
    GPURUN_PLAN_LOCK_FD=9 "$LEAN" --gpurun "$GPURUN" --version "$("$GPURUN" --version | sed 's/^gpurun //')" \
    --run-dir "$d" -- "$TMP/where" 9>"$TMP/handed.lock"
cd "$here"
[ "$rc" -eq 0 ] && tail -n +$((lines + 1)) "$out" | grep -q ': fd9 closed$'
ok $? "a handed plan lock the rank step does not use is not inherited by the program"
tail -n +$((lines + 1)) "$out" | grep -q ": cwd $(cd "$d" && pwd -P)\$"
ok $? "... which starts in the run folder, not where the rank step was started"
run "$LEAN" --run-dir "$d" -- /bin/true
expect_rc 2 "gpurun-rank by hand, without its arguments: a usage error"

done_testing
