#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gpurun tune (issue 32) with a fast program of known figures: a candidate
# the node cannot run is listed and never started; --dry-run starts nothing;
# every trial is an ordinary run tagged in its record; an interrupted tune
# goes on without repeating trials; a tie goes to fewer resources; the
# tuned job file is written beside the job, never over a file, and runs.
# Never on timing.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

unset GPURUN_TOPOLOGY

# The program: its figure is its argument; each start is logged with it.
# With $TMP/hold present, the third start waits (for the interruption).
cat >"$TMP/prog.sh" <<'PROG'
#!/bin/sh
log=$(dirname "$0")/starts
echo "fom=$1 threads=${OMP_NUM_THREADS:-?}" >>"$log"
n=$(wc -l <"$log")
if [ -f "$(dirname "$0")/hold" ] && [ "$n" -eq 3 ]; then
    : >"$(dirname "$0")/holding"
    i=0
    while [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
fi
echo "FOM: $1"
PROG
chmod +x "$TMP/prog.sh"

# job NAME TUNE-BLOCK: $TMP/NAME.conf running prog.sh with the generic template.
job() {
    cat >"$TMP/$1.conf" <<JOB
template = "generic"
launcher = "local"
ranks_per_node = 1
threads_per_rank = 1
params { program = "./prog.sh"  args = "10" }
$2
JOB
}
# jqf FILE FILTER: jq -e on a file; sets $rc.
jqf() { run jq -e "$2" "$1"; }
starts() { if [ -f "$TMP/starts" ]; then wc -l <"$TMP/starts" | tr -d ' '; else echo 0; fi; }
# with_prov RESULTS: records that name no provenance are given the one a
# gpurun that records it writes (prog.sh's SHA-256 now), then the index is
# read again: tune reuses only trials whose program and inputs it can tell
# unchanged.  Records that have one keep it.
with_prov() {
    sha=$(sha256sum "$TMP/prog.sh" | cut -d' ' -f1)
    for r in "$1"/*/*/record.json; do
        jq --arg p "$TMP/prog.sh" --arg s "$sha" \
            'if .provenance then . else .provenance = {program: {path: $p, sha256: $s, sampled: false}, inputs: []} end' \
            "$r" >"$r.new" && mv "$r.new" "$r"
    done
    "$GPURUN" results --results "$1" --rebuild >/dev/null 2>&1
}

# ---- pruning and --dry-run ----------------------------------------------
job prune 'tune { threads_per_rank = {1, 4096}  params.args = {"10", "20"} }'
run "$GPURUN" tune "$TMP/prune.conf" --dry-run
expect_rc 0 "tune --dry-run"
contains "$TMP/out" "threads_per_rank=4096 params.args=10" "the dry run lists the candidate with 4096 threads"
grep -F "threads_per_rank=4096 params.args=20" "$TMP/out" | grep -q "pruned: .*4096 threads"
ok $? "... as pruned, with the planner's reason"
contains "$TMP/out" "2 can run here, 2 pruned" "2 of 4 candidates can run here"
contains "$TMP/out" "would take about 2 trials" "the trials the search would take"
contains "$TMP/out" "nothing was started" "... and nothing was started"
[ "$(starts)" = 0 ] && [ ! -e "$TMP/results" ]
ok $? "the dry run started no program and made no results folder"

run "$GPURUN" tune "$TMP/prune.conf"
expect_rc 0 "tune with two candidates pruned"
[ "$(starts)" -ge 2 ] && ! grep -q "threads=4096" "$TMP/starts"
ok $? "the candidates that can run ran ($(starts) starts), the pruned ones never"
contains "$TMP/out" "best value                    threads_per_rank=1 params.args=20: 20" "the best: the figure 20"
contains "$TMP/out" "gpurun submit $TMP/prune.tuned.conf" "the submit line of the tuned job file"

# Every trial is an ordinary run in the results, tagged.
run "$GPURUN" results --results "$TMP/results" --job prune --json
cp "$TMP/out" "$TMP/prune.json"
jqf "$TMP/prune.json" '[.[] | select(.tune.session and .tune.trial and .tune.candidate)] | length == '"$(starts)"
ok $rc "gpurun results shows every trial with its tune session, number and candidate"
jqf "$TMP/prune.json" '[.[] | .tune.candidate | select(startswith("threads_per_rank=4096"))] | length == 0'
ok $rc "... and no trial of a pruned candidate"
session=$(jq -r '.[0].tune.session' "$TMP/prune.json")
[ -f "$TMP/results/prune/tune-$session.json" ] &&
    [ "$(jq -r '.state + " " + .best' "$TMP/results/prune/tune-$session.json")" = "done threads_per_rank=1 params.args=20" ]
ok $? "RESULTS/JOB/tune-SESSION.json says the session is done and its best"

# ---- the tuned job file --------------------------------------------------
cp "$TMP/prune.conf" "$TMP/prune.conf.orig"
[ -f "$TMP/prune.tuned.conf" ] && cmp -s "$TMP/prune.conf" "$TMP/prune.conf.orig"
ok $? "prune.tuned.conf written beside the job file, which is unchanged"
grep -q '^params { program = "./prog.sh"  args = "20" }$' "$TMP/prune.tuned.conf" &&
    grep -q '^threads_per_rank = 1$' "$TMP/prune.tuned.conf"
ok $? "the tuned file holds the best layout"
rm -f "$TMP/starts"
run "$GPURUN" run "$TMP/prune.tuned.conf" --results "$TMP/results-tuned" --quiet
expect_rc 0 "the tuned job file runs"
[ "$(cat "$TMP/starts")" = "fom=20 threads=1" ]
ok $? "... with the best layout"
with_prov "$TMP/results"
n0=$(starts)
run "$GPURUN" tune "$TMP/prune.conf"
expect_rc 0 "tune again"
[ "$(starts)" = "$n0" ]
ok $? "... runs no trial: all of them are in the results, measured with this program"
contains "$TMP/out" "prune.tuned.conf says the same already: not written again" "... and says its tuned file holds the same"
[ ! -e "$TMP/prune.tuned.1.conf" ]
ok $? "... writing no copy of it (prune.tuned.1.conf)"
echo "# edited" >>"$TMP/prune.tuned.conf"
cp "$TMP/prune.tuned.conf" "$TMP/tuned.before"
ln -s "$TMP/elsewhere" "$TMP/prune.tuned.1.conf"
run "$GPURUN" tune "$TMP/prune.conf"
[ -f "$TMP/prune.tuned.2.conf" ] && [ ! -e "$TMP/elsewhere" ] && cmp -s "$TMP/prune.tuned.conf" "$TMP/tuned.before"
ok $? "an edited tuned file: prune.tuned.2.conf written, never over it, a symlink in the way passed over"

# ---- what is reused: the same program, not busy, unless --fresh ------------
cp "$TMP/prog.sh" "$TMP/prog.sh.orig"
echo "# changed" >>"$TMP/prog.sh"
n0=$(starts)
run "$GPURUN" tune "$TMP/prune.conf"
expect_rc 0 "tune after prog.sh changed"
[ "$(starts)" -gt "$n0" ]
ok $? "... measures again ($(starts) starts, $n0 before): the trials were of another program"
contains "$TMP/out" "not reused: its program $TMP/prog.sh changed since" "... and says why"
cp "$TMP/prog.sh.orig" "$TMP/prog.sh"
rm -rf "$TMP/results/prune"
run "$GPURUN" tune "$TMP/prune.conf"
with_prov "$TMP/results"
for r in "$TMP"/results/prune/*/record.json; do
    jq '.conditions = {busy: true, why: "2 other processes took 60 % of cpu 0"}' "$r" >"$r.new" && mv "$r.new" "$r"
done
"$GPURUN" results --results "$TMP/results" --rebuild >/dev/null 2>&1
n0=$(starts)
run "$GPURUN" tune "$TMP/prune.conf"
expect_rc 0 "tune when the earlier trials ran busy"
[ "$(starts)" -eq $((n0 + 2)) ]
ok $? "... measures both again ($(starts) starts, $n0 before): a busy trial is never reused"
contains "$TMP/out" "2 earlier trials of this session ran busy: not reused" "... and says so"
with_prov "$TMP/results"
n0=$(starts)
run "$GPURUN" tune "$TMP/prune.conf"
[ "$(starts)" = "$n0" ]
ok $? "the quiet trials now in the results: tune again runs none"
run "$GPURUN" tune "$TMP/prune.conf" --fresh
expect_rc 0 "tune --fresh"
[ "$(starts)" -eq $((n0 + 2)) ]
ok $? "... measures every candidate again ($(starts) starts, $n0 before)"
contains "$TMP/out" "--fresh: the 4 earlier trials of this session not reused" "... saying how many it left"
with_prov "$TMP/results"
n0=$(starts)
run "$GPURUN" tune "$TMP/prune.conf" --where params.args=20
[ "$(starts)" -eq $((n0 + 1)) ]
ok $? "tune --where params.args=20: reuses that candidate's trials only, measures the other ($(starts) starts, $n0 before)"
run "$GPURUN" tune "$TMP/prune.conf" --where nosuchkey=1
expect_rc 2 "tune --where with a key records do not have: exit 2"
run "$GPURUN" tune "$TMP/prune.conf" --since yesterday
expect_rc 2 "tune --since yesterday: exit 2"
contains "$TMP/err" "--since 'yesterday': expected a time" "... naming the option and what it takes"

# ---- resumption ------------------------------------------------------------
# 4 candidates apart: 4 trials, then the better 2 again: 6 trials in all.
rm -f "$TMP/starts"
# repeat = 3: the search decides the repeats; each trial is one run.
job resume 'repeat = 3
tune { params.args = {"10", "20", "30", "40"} }'
: >"$TMP/hold"
"$GPURUN" tune "$TMP/resume.conf" >"$TMP/tune1.out" 2>&1 &
pid=$!
i=0
while [ ! -f "$TMP/holding" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
rm -f "$TMP/hold"
with_prov "$TMP/results"
[ "$rc" -eq 130 ] && [ "$(starts)" = 3 ]
ok $? "tune interrupted in its third trial (exit $rc, $(starts) starts)"
run "$GPURUN" tune "$TMP/resume.conf"
expect_rc 0 "tune again goes on"
contains "$TMP/out" "2 trials of this session found" "it found the 2 trials done before"
[ "$(starts)" = 7 ]
ok $? "6 trials and the interrupted one: $(starts) starts (a tune run over would make 9)"
run "$GPURUN" results --results "$TMP/results" --job resume --json
cp "$TMP/out" "$TMP/resume.json"
jqf "$TMP/resume.json" '([.[] | select(.state == "ok") | .tune.trial] | length == 6 and (unique | length) == 6) and
        ([.[] | select(.state == "interrupted")] | length == 1)'
ok $rc "the results: 6 trials ok with distinct numbers, 1 interrupted"
jqf "$TMP/resume.json" '[.[] | select(.state == "ok" and .tune.candidate == "params.args=10")] | length == 1'
ok $rc "... the candidate done before the interruption ran once"
grep -q 'args = "40"' "$TMP/resume.tuned.conf"
ok $? "the best of the resumed tune: 40"

# ---- the last two, apart beyond the noise ----------------------------------
# 6 candidates of exact figures: 6 trials, the better 3 again, then the last
# two (60 and 50, twice each, no spread) are apart: no third round.
rm -f "$TMP/starts"
job apart 'tune { params.args = {"10", "20", "30", "40", "50", "60"} }'
run "$GPURUN" tune "$TMP/apart.conf"
expect_rc 0 "tune of 6 candidates apart"
[ "$(starts)" = 9 ]
ok $? "6 + 3 trials: the last two, measured twice and apart, are not measured again ($(starts) starts; 11 before)"
grep -q 'args = "60"' "$TMP/apart.tuned.conf"
ok $? "... and the best is 60"

# ---- a tie goes to fewer resources -----------------------------------------
rm -f "$TMP/starts"
job tie 'tune { threads_per_rank = {2, 1} }'
run "$GPURUN" tune "$TMP/tie.conf"
expect_rc 0 "tune of two layouts with the same figure"
contains "$TMP/out" "best value                    threads_per_rank=1: 10, tied with threads_per_rank=2 (10), within the noise, fewer resources" \
    "the tie goes to 1 thread, listed second: tied with 2 threads, fewer resources"
grep "^threads_per_rank=2 " "$TMP/out" | grep -q "tied, more resources$"
ok $? "... the 2-thread layout's state says it tied and uses more resources"
contains "$TMP/out" "why: the best mean; threads_per_rank=2 is within the noise of it but uses more resources" "... and one line says why"
grep -q '^threads_per_rank = 1$' "$TMP/tie.tuned.conf"
ok $? "... which the tuned file holds"

# ---- the pytorch-ddp template's own space -------------------------------------
# Its tune_space (issue 32 §1: precision and batch size) with no tune { }
# block, planned on recorded nodes: the batch size and precision options it
# passes after ${args}, the precisions a node without GPUs has, ranks per
# node where there are no GPUs, and the layouts the node cannot hold pruned
# with the planner's reason.  The job's command is unchanged when not tuning.
cp "$top_srcdir/examples/resnet-ddp/train.py" "$TMP/train.py"
ddp() {
    cat >"$TMP/$1.conf" <<JOB
template = "pytorch-ddp"
launcher = "local"
ranks_per_node = 1
gpus_per_rank = $2
threads_per_rank = $3
timeout = "2m"
params { python = "/usr/bin/python3"  script = "train.py"
         args = "--model resnet18 --image-size 32 --classes 10 --steps 2 --warmup 1 --batch-size 2" }
$4
JOB
}
ddp ddpcpu 0 4
GPURUN_TOPOLOGY=$FIXTURES/cpu-only-2numa.xml run "$GPURUN" tune "$TMP/ddpcpu.conf" --dry-run
expect_rc 0 "tune --dry-run of a pytorch-ddp job with no tune block, on a node without GPUs"
contains "$TMP/out" "18 candidates from template 'pytorch-ddp'" "the template's space: 3 batch sizes x 2 precisions x 3 rank counts"
contains "$TMP/out" "params.batch_arg=--batch-size 128 params.precision_arg=--precision bf16 ranks_per_node=2 2 ranks, 0 GPUs, 8 threads" \
    "... a candidate with its batch size, precision and ranks"
grep -q "precision tf32\|precision fp16" "$TMP/out"
ok $((!$?)) "... and no GPU-only precision (tf32, fp16) on a node without GPUs"
[ "$(grep -c 'ranks_per_node=4 pruned: 2 ranks with 4 threads each need 8 cores in NUMA node 0' "$TMP/out")" = 6 ]
ok $? "the 6 candidates with 4 ranks of 4 threads pruned, with the planner's reason"
contains "$TMP/out" "12 can run here, 6 pruned" "12 of 18 can run there"
ddp ddpgpu 1 1
GPURUN_TOPOLOGY=$FIXTURES/single-gpu-ws.xml run "$GPURUN" tune "$TMP/ddpgpu.conf" --dry-run
expect_rc 0 "tune --dry-run of a pytorch-ddp job on a node with a GPU"
contains "$TMP/out" "12 candidates from template 'pytorch-ddp'" "the space there: 3 batch sizes x 4 precisions"
contains "$TMP/out" "params.batch_arg=--batch-size 64 params.precision_arg=--precision fp16 1 rank, 1 GPU, 1 thread" \
    "... fp16 among them, on the GPU"
GPURUN_TOPOLOGY=$FIXTURES/cpu-only-2numa.xml run "$GPURUN" run "$TMP/ddpcpu.conf" --dry-run
grep -q '^# program: /usr/bin/python3 .*/train.py --model resnet18 --image-size 32 --classes 10 --steps 2 --warmup 1 --batch-size 2$' "$TMP/out"
ok $? "not tuning, the job's command is the one it was: no batch or precision option added"

# A real short tune of a CPU job: two batch sizes of the template's
# batch_arg, each trial a DDP run of examples/resnet-ddp/train.py.
if /usr/bin/python3 -c 'import torch, torchvision' >/dev/null 2>&1; then
    [ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    ddp ddprun 0 1 'tune { params.batch_arg = {"--batch-size 2", "--batch-size 4"} }'
    sed -i 's/^params {/params { rendezvous = "file"/' "$TMP/ddprun.conf"
    run "$GPURUN" tune "$TMP/ddprun.conf" --results "$TMP/results-ddp"
    expect_rc 0 "a short tune of a pytorch-ddp CPU job"
    [ "$(cat "$TMP"/results-ddp/ddprun/*Z-*/*.out | grep -c 'DDP model=resnet18 .* batch=2 ')" -ge 1 ] &&
        [ "$(cat "$TMP"/results-ddp/ddprun/*Z-*/*.out | grep -c 'DDP model=resnet18 .* batch=4 ')" -ge 1 ]
    ok $? "the trials trained with batch 2 and batch 4: the option after \${args} is the one the script took"
    grep -q '^params { .*batch_arg = "--batch-size [24]"' "$TMP/ddprun.tuned.conf"
    ok $? "ddprun.tuned.conf holds the chosen batch size in the job's params"
else
    skip "python3 with torch and torchvision not found: no real pytorch-ddp tune"
    skip "python3 with torch and torchvision not found: no tuned file"
fi

# gromacs: -nstlist through its own parameter, after ${args} (kept): a
# params axis the template uses, so tune plans it (the input is checked
# only when a trial runs).
cat >"$TMP/gmx.conf" <<JOB
template = "gromacs"
launcher = "local"
ranks_per_node = 1
gpus_per_rank = 0
threads_per_rank = 1
params { tpr = "water.tpr"  args = "-pin on" }
tune { params.nstlist_arg = {"-nstlist 100", "-nstlist 200"} }
JOB
GPURUN_TOPOLOGY=$FIXTURES/cpu-only-2numa.xml run "$GPURUN" tune "$TMP/gmx.conf" --dry-run
expect_rc 0 "tune --dry-run of a gromacs job over params.nstlist_arg"
contains "$TMP/out" "params.nstlist_arg=-nstlist 200          1 rank, 0 GPUs, 1 thread" "... lists -nstlist 200 as a candidate"

# ---- nothing a path holds adds a key; tune writes only where run would --------
# Issue 37: a job in a folder named "nl<newline>repeat = 7 #": its path in
# the tuned file's header comment had the newline write "repeat = 7" as a
# key of its own, which ran the tuned job 7 times.
nl="$TMP/nl
repeat = 7 #"
mkdir "$nl"
cat >"$nl/job.conf" <<JOB
template = "generic"
launcher = "local"
ranks_per_node = 1
threads_per_rank = 1
params { program = "$TMP/prog.sh"  args = "10" }
tune { params.args = {"10", "20"} }
JOB
rm -f "$TMP/starts"
run "$GPURUN" tune "$nl/job.conf" --results "$TMP/results-nl"
expect_rc 0 "tune of a job in a folder whose name holds a line break"
grep -q '^repeat' "$nl/job.tuned.conf"
ok $((!$?)) "the tuned file sets no repeat: the line break did not start a line of its own"
contains "$nl/job.tuned.conf" "# Tune again: gpurun tune $TMP/nl?repeat = 7 #/job.conf" "... its header shows it as '?'"
contains "$TMP/out" "gpurun submit '$TMP/nl'\$'\\012''repeat = 7 #/job.tuned.conf'" \
    "the submit line quotes the path: one line, pasted back as the same bytes"
rm -f "$TMP/starts"
run "$GPURUN" run "$nl/job.tuned.conf" --results "$TMP/results-nl2" --quiet
[ "$rc" -eq 0 ] && [ "$(starts)" = 1 ]
ok $? "the tuned job runs once, not 7 times (exit $rc, $(starts) starts)"

# A shared results folder (sticky, 1777) where another user put the job's
# folder as a symlink to a folder of theirs: gpurun run refuses it, so tune
# starts no trial, and writes no tune-SESSION.json through the symlink.
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1; then
    skip "not root or no setpriv: cannot make a folder as another user (uid 65534)"
    skip "not root or no setpriv: no symlinked job folder"
else
    chmod 711 "$TMP"
    mkdir -m 1777 "$TMP/shared" "$TMP/open"
    setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
        'mkdir -m 777 "$1/open/theirs" && ln -s "$1/open/theirs" "$1/shared/tie"' sh "$TMP"
    rm -f "$TMP/starts"
    run "$GPURUN" tune "$TMP/tie.conf" --results "$TMP/shared"
    expect_rc 2 "tune with RESULTS/JOB another user's symlink: exit 2, as gpurun run"
    contains "$TMP/err" "it is a symlink" "... saying the job folder is a symlink"
    [ "$(starts)" = 0 ] && [ -L "$TMP/shared/tie" ] && [ -d "$TMP/open/theirs" ] && [ -z "$(ls -A "$TMP/open/theirs")" ]
    ok $? "no trial started, and nothing (no tune-*.json) written in the symlink's target"
fi

# ---- errors ------------------------------------------------------------------
job bad 'tune { params.arg = {"1", "2"} }'
run "$GPURUN" tune "$TMP/bad.conf"
expect_rc 2 "a params axis the template does not use: exit 2"
contains "$TMP/err" "bad.conf:6: key 'tune.params.arg'" "... naming the file, line and key"
job none ''
run "$GPURUN" tune "$TMP/none.conf"
expect_rc 2 "no tune block and a template with no space: exit 2"
contains "$TMP/err" "nothing to tune" "... saying so"
job all 'tune { threads_per_rank = {4096} }'
run "$GPURUN" tune "$TMP/all.conf"
expect_rc 3 "every candidate pruned: exit 3"
run "$GPURUN" tune "$TMP/tie.conf" --budget soon
expect_rc 2 "--budget soon: exit 2"

# ---- objectives that cannot be had here (issue 38 §10) ---------------------
# Energy with no RAPL counter (an empty fake sysfs) and no GPU, cost or spot
# without a price, a job with no figure at all: refused before any trial,
# its dry run too (exit 2, saying why); no program started, no run folder.
# rjob NAME EXTRA-KEYS: a job whose figure is a rate (GFLOP/s).
rjob() {
    cat >"$TMP/$1.conf" <<JOB
template = "generic"
launcher = "local"
ranks_per_node = 1
threads_per_rank = 1
params { program = "./prog.sh"  args = "10"  fom_units = "GFLOP/s" }
tune { params.args = {"10", "20"} }
$2
JOB
}
untouched() { [ "$(starts)" = 0 ] && [ ! -e "$TMP/results-obj" ]; }
rm -f "$TMP/starts"
rjob en ''
for dry in --dry-run ""; do
    run env GPURUN_TOPOLOGY="$FIXTURES/cpu-only-2numa.xml" GPURUN_TEST_SYSFS_ROOT="$TMP/empty" \
        "$GPURUN" tune "$TMP/en.conf" --objective energy --results "$TMP/results-obj" $dry
    expect_rc 2 "--objective energy ${dry:-(a tune)}, no RAPL counter and no GPU: exit 2"
    contains "$TMP/err" "energy is not measured here: no candidate that can run here uses a GPU, and this machine exposes no RAPL counters (a VM or a CPU without RAPL)" \
        "... saying why"
    untouched
    ok $? "... before any trial: nothing started, no run folder"
done
mkdir -p "$TMP/rapl/sys/class/powercap/intel-rapl:0"
echo package-0 >"$TMP/rapl/sys/class/powercap/intel-rapl:0/name"
echo 5 >"$TMP/rapl/sys/class/powercap/intel-rapl:0/energy_uj"
run env GPURUN_TOPOLOGY="$FIXTURES/cpu-only-2numa.xml" GPURUN_TEST_SYSFS_ROOT="$TMP/rapl" \
    "$GPURUN" tune "$TMP/en.conf" --objective energy --results "$TMP/results-obj" --dry-run
expect_rc 0 "a RAPL counter that reads: --objective energy --dry-run lists the candidates"
run env GPURUN_TOPOLOGY="$FIXTURES/cpu-only-2numa.xml" GPURUN_TEST_SYSFS_ROOT="$TMP/rapl" \
    "$GPURUN" tune "$TMP/tie.conf" --objective energy --results "$TMP/results-obj" --dry-run
expect_rc 2 "... a figure that is no rate of work (no units): exit 2"
contains "$TMP/err" "energy per unit of work needs a figure that is a rate of work" "... saying so"
run "$GPURUN" tune "$TMP/en.conf" --objective cost --results "$TMP/results-obj"
expect_rc 2 "--objective cost without a site: exit 2"
contains "$TMP/err" "tune: --objective cost: no price here: the job names no site" "... saying so"
mkdir -p "$TMP/sites"
printf 'description = "on demand only"\nprice_per_gpu_hour = 2.0\ncurrency = "EUR"\n' >"$TMP/sites/od.conf"
rjob od 'site = "od"
gpus_per_rank = 1'
run env GPURUN_TOPOLOGY="$FIXTURES/single-gpu-ws.xml" "$GPURUN" tune "$TMP/od.conf" --objective spot --results "$TMP/results-obj"
expect_rc 2 "--objective spot, a site with no spot price: exit 2"
contains "$TMP/err" "tune: --objective spot: no price here: site 'od' has no spot_price_per_gpu_hour" "... saying so"
run env GPURUN_TOPOLOGY="$FIXTURES/single-gpu-ws.xml" "$GPURUN" tune "$TMP/od.conf" --objective cost --results "$TMP/results-obj" --dry-run
expect_rc 0 "--objective cost with the site's price and a GPU: the dry run lists the candidates"
sed -i 's/^gpus_per_rank = 1$/gpus_per_rank = 0/' "$TMP/od.conf"
run env GPURUN_TOPOLOGY="$FIXTURES/cpu-only-2numa.xml" "$GPURUN" tune "$TMP/od.conf" --objective cost --results "$TMP/results-obj"
expect_rc 2 "--objective cost with no GPU in any candidate: exit 2"
contains "$TMP/err" "the cost is per GPU-hour, and no candidate that can run here uses a GPU" "... saying so"
printf 'command = "./prog.sh 10"\nlauncher = "local"\nranks_per_node = 1\ntune { threads_per_rank = {1, 2} }\n' >"$TMP/cmd.conf"
run "$GPURUN" tune "$TMP/cmd.conf" --results "$TMP/results-obj" --dry-run
expect_rc 0 "a job with a command (no figure): the dry run lists the layouts"
contains "$TMP/out" "reads no figure of merit" "... saying a tune would have nothing to compare"
run "$GPURUN" tune "$TMP/cmd.conf" --results "$TMP/results-obj"
expect_rc 2 "... and the tune refuses: exit 2"
contains "$TMP/err" "nothing to compare the layouts by" "... saying why"
untouched
ok $? "every refusal came before any trial: nothing started, no run folder"

# ---- every shipped example can be tuned as shipped (issue 38 §11) -----------
# Its dry run, on this node and on a node of 4 GPUs: exit 0.
for j in "$top_srcdir"/examples/*/job.conf; do
    name=$(basename "$(dirname "$j")")
    for topo in "" "$FIXTURES/2s-4gpu-2nic.xml"; do
        run env ${topo:+GPURUN_TOPOLOGY="$topo"} "$GPURUN" tune "$j" --dry-run --results "$TMP/results-examples"
        expect_rc 0 "gpurun tune examples/$name/job.conf --dry-run${topo:+ (4 GPUs)}$(grep -h 'gpurun: ' "$TMP/err" | head -1 | sed 's/^/: /')"
    done
done
[ ! -e "$TMP/results-examples" ]
ok $? "... and they made no results folder"

done_testing
