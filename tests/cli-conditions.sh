#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The conditions of every run (issue 39, items 1 and 2): the record's
# `conditions` with sane figures and a verdict that agrees with its own
# share and threshold, never naming the run's own processes (4 ranks on
# the cores of 2: they share cores); two spinning processes pinned on the
# run's cores make it busy: warned while it runs and at its end, naming
# them, in status.json and in the record; other processes on its GPUs and
# a GPU's thermal slowdown (the fake NVML) make it busy too, the run's own
# process on its GPU does not; GPURUN_BUSY_SHARE=off measures and says
# nothing; a tune whose trials all run busy repeats each twice and decides
# on none.  Never on the machine being idle (make check runs two tests at
# once): the quiet run's verdict is checked against its own figures, and
# the spinners take half of the cores however loaded the machine is.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null 2>&1 || { echo "1..0 # SKIP jq not found"; exit 0; }
command -v taskset >/dev/null 2>&1 || { echo "1..0 # SKIP taskset (util-linux) not found"; exit 0; }
[ -r /proc/stat ] || { echo "1..0 # SKIP no /proc/stat"; exit 0; }
unset GPURUN_BUSY_SHARE GPURUN_TOPOLOGY SLURM_JOB_ID
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
chmod 0755 "$TMP"
R=$TMP/results
J=$TMP/job
mkdir -p "$J"

# The run's program: spins until $GO exists (at most 120 s, a bound).
cat >"$J/cond-rank" <<'EOF'
#!/bin/sh
end=$(($(date +%s) + ${SPIN_MAX:-120}))
while [ ! -e "$GO" ] && [ "$(date +%s)" -lt "$end" ]; do i=0; while [ $i -lt 2000 ]; do i=$((i + 1)); done; done
echo "done"
EOF
# Another user's load: yes(1) under a name of its own, a tight loop that
# forks nothing, so it takes its full share of a core however loaded the
# machine is (a shell loop forking date(1) did not on a loaded machine).
command -v yes >/dev/null 2>&1 || { echo "1..0 # SKIP yes (coreutils) not found"; exit 0; }
cp "$(command -v yes)" "$J/cond-hog"
chmod 0755 "$J/cond-rank" "$J/cond-hog"
# hog [taskset -c CPUS]: start one, its pid in $hog; killed by that pid
# once done with, on the test's exit, and after 300 s whatever happens.
hogs=
trap 'for p in $hogs; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT INT TERM
hog() {
    "$@" "$J/cond-hog" >/dev/null 2>&1 &
    hog=$!
    (sleep 300; kill "$hog" 2>/dev/null) >/dev/null 2>&1 &
    hogs="$hogs $hog $!"
}
printf 'job = "p"\ncommand = "%s"\nlauncher = "local"\nranks_per_node = 4\nthreads_per_rank = 1\noversubscribe = true\nresults = "%s"\nprogress_interval = "1s"\n' \
    "$J/cond-rank" "$R" >"$J/job.conf"

# wait_for FILE TEXT: until FILE holds TEXT, at most 120 s (a bound).
wait_for() {
    _wf=0
    while ! grep -qF -- "$2" "$1" 2>/dev/null; do
        [ $_wf -ge 600 ] && return 1
        sleep 0.2
        _wf=$((_wf + 1))
    done
}
latest() { printf '%s/p/%s' "$R" "$(readlink "$R/p/latest")"; }

# ---- (a) a run as the machine is: figures sane, verdict consistent -------
run env GO=/nonexistent SPIN_MAX=2 "$GPURUN" run "$J/job.conf"
expect_rc 0 "a run of 4 spinning ranks on the cores of 2"
D=$(latest)
cp "$TMP/err" "$TMP/quiet.err"
jq -e '.conditions | type == "object" and (.hosts | length) == 1 and
    (.foreign_cpu_share >= 0 and .foreign_cpu_share <= 1) and .load1 >= 0 and
    (.cpu_mhz == null or .cpu_mhz > 0) and (.throttled == null or (.throttled | type) == "boolean") and
    .gpu_throttled == null and .gpu_others == 0 and .busy_share == 0.1' "$D/record.json" >/dev/null
ok $? "the record has conditions: share within 0..1, load1, cpu_mhz, throttled, no GPU, threshold 0.1 ($(jq -c '.conditions | del(.hosts)' "$D/record.json"))"
jq -e '.conditions.hosts[] | (.cores | length) > 0 and .own_cpu_s > 0 and .cores_cpu_s > 0 and
    .samples >= 2 and .final == true and .mem_available_mib > 0' "$D/record.json" >/dev/null
ok $? "... its host: the run's cores, its own CPU time, several samples up to the end ($(jq -c '.conditions.hosts[] | del(.foreign, .gpus, .gpu_others)' "$D/record.json"))"
jq -e '.conditions | .busy == ([.hosts[] | (.foreign_cpu_s >= 0.5 and .foreign_cpu_share >= 0.1) or .throttled == true] | any)' \
    "$D/record.json" >/dev/null
ok $? "busy agrees with its share, the 0.5 s floor and the threshold"
# Its ranks by their name, gpurun by its pid (other tests' gpurun may
# well be named: they are other processes).
jq -e --argjson head "$(jq .pid "$D/status.json")" '[.conditions.hosts[].foreign[]] |
    all(.name != "cond-rank" and .pid != $head)' "$D/record.json" >/dev/null
ok $? "the run's own processes are never named as others ($(jq -c '[.conditions.hosts[].foreign[] | [.name, .pid]]' "$D/record.json"))"
if jq -e '.conditions.busy' "$D/record.json" >/dev/null; then
    grep -q "ran busy on" "$TMP/quiet.err"
    ok $? "busy (the machine was loaded): said at the end"
else
    ! grep -q "busy" "$TMP/quiet.err"
    ok $? "not busy: nothing said about it"
fi
diag "a run as the machine was: its stderr:" "$(cat "$TMP/quiet.err")"
CORES=$(jq -r '.conditions.hosts[].cores' "$D/record.json")

# ---- (b) two spinners pinned on the run's cores --------------------------
# At a higher priority where allowed (root): on a machine loaded by
# others (make check, other builds) they still take more than those.
hog nice -n -5 taskset -c "$CORES"
h1=$hog
hog nice -n -5 taskset -c "$CORES"
h2=$hog
env GO="$TMP/go" "$GPURUN" run "$J/job.conf" >"$TMP/busy.out" 2>"$TMP/busy.err" </dev/null &
pid=$!
wait_for "$TMP/busy.err" "is running busy on"
ok $? "while it runs: a warning on stderr"
D=$(latest)
# status.json says it just after stderr does: up to 60 s more.
n=0
until jq -e '.conditions.busy == true' "$D/status.json" >/dev/null 2>&1 || [ $n -ge 300 ]; do
    sleep 0.2
    n=$((n + 1))
done
jq -e '.conditions.busy == true and (.conditions.why | test("took [0-9]+% of its cores \\(.*\\[[0-9]+\\] [0-9]+% of cpu"))' \
    "$D/status.json" >/dev/null
ok $? "... and status.json says busy, naming who ($(jq -c .conditions "$D/status.json" 2>&1 | head -c 400))"
: >"$TMP/go"
wait $pid
rc=$?
kill "$h1" "$h2"
wait "$h1" "$h2" 2>/dev/null
cp "$TMP/busy.err" "$TMP/err"
expect_rc 0 "the busy run ends well"
grep -Eq "^gpurun: warning: run [^ ]+ is running busy on [^ ]+: other processes took [0-9]+% of its cores \([^)]*\[[0-9]+\] [0-9]+% of cpu [0-9]+.*\); figures are likely low$" "$TMP/busy.err"
ok $? "the warning while it ran names who took it: name, pid, share, cpu"
# Who is named depends on what else runs (other tests, builds): the end's
# warning names the record's first five, the spinners are in its list.
grep -qF "ran busy on $(jq -r '.conditions.hosts | to_entries[0] | "\(.key): \(.value.why)"' "$D/record.json"); figures are likely low" "$TMP/busy.err"
ok $? "... and the one at its end: the record's why"
[ "$(grep -c "ran busy on" "$TMP/busy.err")" -eq 1 ] && [ "$(grep -c "is running busy on" "$TMP/busy.err")" -eq 1 ]
ok $? "each said once"
diag "the busy run's warnings:" "$(grep busy "$TMP/busy.err")"
jq -e --argjson a "$h1" --argjson b "$h2" '.conditions | .busy == true and .foreign_cpu_share >= 0.1 and
    ([.hosts[].foreign[] | select(.name == "cond-hog") | .pid] | (index($a) != null or index($b) != null)) and
    ([.hosts[].foreign[].name] | all(. != "cond-rank")) and
    ([.hosts[].foreign[] | select(.name == "cond-hog") | .user, .share, .cpu] | all(. != null))' "$D/record.json" >/dev/null
ok $? "the record: busy, the share, the spinners named with user, share and cpu, the ranks not ($(jq -c '.conditions | [.foreign_cpu_share, [.hosts[].foreign[] | [.name, .pid, .share]]]' "$D/record.json"))"
jq -e '.conditions.busy == true and .state == "ok"' "$D/status.json" >/dev/null
ok $? "status.json at the end: busy"

# ---- (c) off: measured, nothing said -------------------------------------
hog taskset -c "$CORES"
h1=$hog
run env GO=/nonexistent SPIN_MAX=2 GPURUN_BUSY_SHARE=off "$GPURUN" run "$J/job.conf"
kill "$h1"
wait "$h1" 2>/dev/null
D=$(latest)
expect_rc 0 "GPURUN_BUSY_SHARE=off"
! grep -q busy "$TMP/err" && jq -e '.conditions.busy == null and .conditions.busy_share == null and
    .conditions.foreign_cpu_share >= 0' "$D/record.json" >/dev/null
ok $? "... no verdict, no warning, the figures kept"
run env GPURUN_BUSY_SHARE=lots "$GPURUN" run "$J/job.conf" --set env.GO=/nonexistent --set env.SPIN_MAX=0
contains "$TMP/err" "GPURUN_BUSY_SHARE=lots: not a share" "a threshold that is not one: said, the default used"

# ---- (d) the GPUs: another process on them, a thermal slowdown -----------
if [ -n "${FAKE_NVML:-}" ] && [ -r "$FAKE_NVML" ]; then
    hog env
    h1=$hog
    printf 'job = "g"\ncommand = "%s"\nlauncher = "local"\nranks_per_node = 1\ngpus_per_rank = 1\nresults = "%s"\n' \
        "$J/cond-rank" "$R" >"$J/gpu.conf"
    run env GO=/nonexistent SPIN_MAX=2 GPURUN_NVML_LIBRARY="$FAKE_NVML" FAKE_NVML_DEVICES=0000:13:00.0,0000:15:00.0 \
        FAKE_NVML_PROCS="$h1,parent" FAKE_NVML_THROTTLE=0x41 GPURUN_TOPOLOGY="$FIXTURES/2s-4gpu-2nic.xml" \
        "$GPURUN" run "$J/gpu.conf"
    kill "$h1"
    wait "$h1" 2>/dev/null
    expect_rc 0 "a run on a GPU that another process uses and that slows down for heat"
    G=$(ls "$R"/g/*Z-*/record.json | tail -1)
    jq -e --argjson h "$h1" '.conditions | .busy == true and .gpu_others == 1 and .gpu_throttled == true and
        ([.hosts[].gpu_others[] | [.pid, .name, .gpu]] == [[$h, "cond-hog", "0000:13:00.0"]]) and
        ([.hosts[].gpus[] | .pci, .reasons, .slowdown] == ["0000:13:00.0", ["idle", "hw_thermal"], ["hw_thermal"]]) and
        (.why | contains("other processes used its GPUs (cond-hog[\($h)] on GPU 0000:13:00.0)")) and
        (.why | contains("its GPUs were slowed down (hw_thermal)"))' "$G" >/dev/null
    ok $? "busy: the other process on its GPU named, the run's own not; hw_thermal ($(jq -c '.conditions | del(.hosts)' "$G"))"
    grep -q "ran busy on .*other processes used its GPUs (cond-hog\[$h1\] on GPU 0000:13:00.0)" "$TMP/err"
    ok $? "... and said"
else
    skip "no fake NVML (\$FAKE_NVML unset): the GPUs' conditions"
    skip "no fake NVML (\$FAKE_NVML unset): the GPUs' conditions"
    skip "no fake NVML (\$FAKE_NVML unset): the GPUs' conditions"
fi

# ---- (e) tune never decides on a busy trial: it repeats it ---------------
# Each candidate's one rank spins 3 s and prints its figure; a spinner is
# pinned on each CPU that rank is bound to (from the dry run's table), so
# every trial runs busy: each is repeated twice, none decided on, exit 1.
cat >"$J/tprog.sh" <<'EOF'
#!/bin/sh
end=$(($(date +%s) + 3))
while [ "$(date +%s)" -lt "$end" ]; do i=0; while [ $i -lt 2000 ]; do i=$((i + 1)); done; done
echo "FOM: $1"
EOF
chmod 0755 "$J/tprog.sh"
printf 'template = "generic"\nlauncher = "local"\nranks_per_node = 1\nthreads_per_rank = 1\nresults = "%s"\nparams { program = "%s"  args = "10" }\ntune { params.args = {"10", "20"} }\n' \
    "$R" "$J/tprog.sh" >"$J/tune.conf"
run "$GPURUN" run "$J/tune.conf" --dry-run
TCPUS=$(awk '$1 == "rank" && $2 == "node" { t = 1; next } t && $1 == "0" { print $8; exit }' "$TMP/out")
[ -n "$TCPUS" ] && [ "$TCPUS" != "(unbound)" ]
ok $? "the tune's rank 0 is bound to cpus '$TCPUS' (dry run)"
thogs=
for cpu in $(echo "$TCPUS" | tr ',' ' ' | awk '{ for (i = 1; i <= NF; i++) { n = split($i, r, "-"); for (c = r[1]; c <= r[n] && c < r[1] + 16; c++) print c } }'); do
    hog nice -n -5 taskset -c "$cpu"
    thogs="$thogs $hog"
done
run "$GPURUN" tune "$J/tune.conf"
for p in $thogs; do kill "$p" 2>/dev/null; done
wait $thogs 2>/dev/null
expect_rc 1 "a tune whose every trial ran busy: exit 1, nothing decided"
[ "$(grep -c 'ran busy (.*): not decided on, repeated$' "$TMP/out")" -eq 4 ] &&
    [ "$(grep -c 'ran busy (.*): not repeated again, not decided on$' "$TMP/out")" -eq 2 ]
ok $? "each candidate's busy trial repeated twice, then not decided on ($(grep -c 'ran busy' "$TMP/out") busy trials said)"
grep -q "busy: all 3 of its trials in a row ran busy" "$TMP/out" "$TMP/err"
ok $? "... and said why at the end"
! grep -q "tuned job file\|\.tuned\.conf\|\.tuned\.[0-9]*\.conf" "$TMP/out"
ok $? "... no tuned job file written"
diag "the busy tune's output:"
head -40 "$TMP/out" | cut -c1-300 | sed 's/^/# /'

done_testing
