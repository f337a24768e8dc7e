#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The Slurm SPANK plugin (plugins/slurm/spank_gpurun.so) on the real
# one-node test cluster, enabled by a plugstack.conf of this test's
# (GPURUN_SLURM_PLUGSTACK) with a topology XML as plugin argument: a fixture
# restricted to the PUs this node has, so that GPU and NIC variables are set
# on a node without GPUs and the binding can really be applied.  `srun -n 2
# --gpurun` tasks report, from inside, their cpus (Cpus_allowed_list), memory
# policy and environment: as `gpurun plan --json` plans them for the same
# request and topology.  Without --gpurun nothing changes; with an explicit
# --cpu-bind the cpus are Slurm's and the environment still gpurun's; a
# topology that cannot be loaded is logged and the tasks run as without the
# plugin, unless the site made it `required`.  A job's hostile GPU list
# (CUDA_VISIBLE_DEVICES=0-, a huge range, a UUID) is refused with a message,
# with the plugin and with its -DNDEBUG build, and slurmd and the steps
# after it live on (issue 26).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if [ ! -f "${SPANK_GPURUN:-}" ]; then
    echo "1..0 # SKIP spank_gpurun.so not built (configure found no slurm/spank.h: Debian libslurm-dev)"
    exit 0
fi
for tool in lstopo-no-graphics hwloc-calc jq srun; do
    if ! command -v $tool >/dev/null 2>&1; then
        echo "1..0 # SKIP $tool not found"
        exit 0
    fi
done
unset GPURUN_TOPOLOGY SLURM_CPU_BIND SLURM_GPU_BIND

# The fixture restricted to this node's PUs (those the fixture has too).
FIX=$top_srcdir/tests/fixtures/2s-4gpu-2nic.xml
live=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
pus=
for part in $(echo "$live" | tr ',' ' '); do
    lo=${part%-*} hi=${part#*-}
    i=$lo
    while [ "$i" -le "$hi" ] && [ "$i" -le 31 ]; do pus="$pus pu:$i"; i=$((i + 1)); done
done
# shellcheck disable=SC2086
mask=$(hwloc-calc -i "$FIX" --pi $pus 2>/dev/null)
XML=$TMP/node.xml
lstopo-no-graphics -i "$FIX" --restrict "$mask" --of xml "$XML" 2>"$TMP/lstopo.err"
ok $? "the fixture restricted to this node's PUs ($live: $mask)"
"$GPURUN" plan --json --topology "$XML" --ranks-per-node 2 >"$TMP/plan.json" 2>"$TMP/plan.err"
if [ $? -ne 0 ]; then
    echo "1..0 # SKIP this node's PUs ($live) cannot take 2 ranks of the fixture: $(cat "$TMP/plan.err")"
    exit 0
fi

export GPURUN_SLURM_PLUGSTACK="$TMP/plugstack.conf"
echo "optional $SPANK_GPURUN topology=$XML" >"$GPURUN_SLURM_PLUGSTACK"
slurm_cluster_up
PLUGSTACK=$GPURUN_SLURM_DIR/plugstack.conf # read again by every srun and slurmstepd

# What a task reports from inside: its cpus, its memory policy (as its
# child grep sees it in numa_maps) and the variables gpurun sets.
cat >"$TMP/report.sh" <<'EOF'
#!/bin/sh
cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
mem=$(grep -o -m1 'bind:[0-9,-]*' /proc/self/numa_maps)
echo "task=$SLURM_LOCALID cpus=$cpus mem=${mem#bind:} CVD=${CUDA_VISIBLE_DEVICES:-} ORDER=${CUDA_DEVICE_ORDER:-} UCX=${UCX_NET_DEVICES:-} NCCL=${NCCL_IB_HCA:-} OMP=${OMP_NUM_THREADS:-} PLACES=${OMP_PLACES:-} LOCAL=${GPURUN_LOCAL_RANK:-} JOB=$SLURM_JOB_ID.$SLURM_STEP_ID"
EOF
chmod 755 "$TMP/report.sh"
got_line() { # got_line I: what task I reported (srun -l), less its step id
    sed -n "s/^ *$1: //p" "$TMP/out" | sed 's/ JOB=.*//'
}
want() { # want I: the line task I reports when bound as planned
    jq -r --argjson i "$1" '.ranks[$i] | "task=\($i) cpus=\(.cpus) mem=\(.numa | map(tostring) | join(",")) CVD=\(.env.CUDA_VISIBLE_DEVICES // "") ORDER=\(.env.CUDA_DEVICE_ORDER // "") UCX=\(.env.UCX_NET_DEVICES // "") NCCL=\(.env.NCCL_IB_HCA // "") OMP=\(.env.OMP_NUM_THREADS // "") PLACES=\(.env.OMP_PLACES // "") LOCAL=\(.env.GPURUN_LOCAL_RANK // "")"' "$TMP/plan.json"
}

run srun -n 2 --gpurun -l "$TMP/report.sh"
expect_rc 0 "srun -n 2 --gpurun"
for i in 0 1; do
    got=$(got_line $i)
    exp=$(want $i)
    [ "$got" = "$exp" ]
    ok $? "task $i is bound and set up as gpurun plan gives: $exp"
    [ "$got" = "$exp" ] || diag "got: $got"
done
grep -q 'CVD=[0-9]' "$TMP/out" && grep -q 'UCX=mlx5_' "$TMP/out"
ok $? "... GPU and NIC variables from the topology given to the plugin"

# One discovery and plan per step and node (slurmstepd's), one binding per task.
run srun -n 2 --gpurun=verbose -l "$TMP/report.sh"
expect_rc 0 "srun -n 2 --gpurun=verbose"
step=$(sed -n 's/^ *0: .*JOB=\([0-9][0-9]*\)\.\([0-9][0-9]*\).*/\1.\2/p' "$TMP/out")
[ "$(grep -c "gpurun: step $step: planned 2 tasks" "$GPURUN_SLURM_DIR/log/slurmd.log")" -eq 1 ] &&
    [ "$(grep -c "gpurun: task [01]: cpus" "$GPURUN_SLURM_DIR/log/slurmd.log")" -eq 2 ]
ok $? "step $step planned once on the node, for both its tasks (slurmd.log)"

run srun -n 2 -l "$TMP/report.sh"
expect_rc 0 "srun -n 2 without --gpurun"
! grep -q 'CVD=[0-9]\|LOCAL=[0-9]' "$TMP/out"
ok $? "... the plugin sets nothing (the site default is off)"

run srun -n 2 --gpurun --cpu-bind=none -l "$TMP/report.sh"
expect_rc 0 "srun --gpurun --cpu-bind=none"
got=$(got_line 1)
case "$got" in
    *"cpus=$live "*"CVD=$(jq -r '.ranks[1].env.CUDA_VISIBLE_DEVICES' "$TMP/plan.json") "*) ok 0 "... the cpus are Slurm's ($live), the GPUs gpurun's" ;;
    *) ok 1 "... the cpus are Slurm's ($live), the GPUs gpurun's"; diag "got: $got" ;;
esac
contains "$TMP/err" "leaves it alone" "... and the plugin says so"

# The site's default: every step gets gpurun's binding without --gpurun.
echo "optional $SPANK_GPURUN default=closest topology=$XML" >"$PLUGSTACK"
run srun -n 2 -l "$TMP/report.sh"
[ "$(got_line 0)" = "$(want 0)" ]
ok $? "with default=closest in plugstack.conf a plain srun is bound as planned"
run srun -n 2 --gpurun=off -l "$TMP/report.sh"
! grep -q 'LOCAL=[0-9]' "$TMP/out"
ok $? "... and --gpurun=off opts out"

# cpu_locality=gpu (plugstack.conf) is planned as gpurun plan --cpu-locality gpu plans it; an unknown value
# is logged and ignored.
echo "optional $SPANK_GPURUN default=closest cpu_locality=gpu topology=$XML" >"$PLUGSTACK"
"$GPURUN" plan --json --topology "$XML" --ranks-per-node 2 --cpu-locality gpu >"$TMP/plan.json"
run srun -n 2 -l "$TMP/report.sh"
[ "$(got_line 0)" = "$(want 0)" ] && [ "$(got_line 1)" = "$(want 1)" ]
ok $? "cpu_locality=gpu in plugstack.conf: tasks bound as gpurun plan --cpu-locality gpu plans them"
! grep -q "argument 'cpu_locality=gpu' not understood" "$TMP/err" "$GPURUN_SLURM_DIR/log/slurmd.log"
ok $? "... an argument the plugin knows"
echo "optional $SPANK_GPURUN default=closest cpu_locality=numa topology=$XML" >"$PLUGSTACK"
run srun -n 2 -l "$TMP/report.sh"
grep -q "argument 'cpu_locality=numa' not understood" "$TMP/err" "$GPURUN_SLURM_DIR/log/slurmd.log"
ok $? "cpu_locality=numa: logged as not understood"
"$GPURUN" plan --json --topology "$XML" --ranks-per-node 2 >"$TMP/plan.json"
[ "$(got_line 0)" = "$(want 0)" ]
ok $? "... and ignored: the default plan"

# A failure never fails the job unless the site says so.
echo "optional $SPANK_GPURUN default=closest topology=$TMP/missing.xml" >"$PLUGSTACK"
run srun -n 2 -l "$TMP/report.sh"
expect_rc 0 "a topology the plugin cannot load: the tasks still run"
grep -q '^ *1: task=1 ' "$TMP/out" && ! grep -q 'LOCAL=[0-9]' "$TMP/out"
ok $? "... as without the plugin"
grep -q "missing.xml" "$TMP/err" || grep -q "missing.xml" "$GPURUN_SLURM_DIR"/log/slurmd.log 2>/dev/null
ok $? "... and the reason is logged"
# Slurm ignores what an optional plugin returns: a site that wants failures
# to count lists it as required, and gives it the argument required.
echo "required $SPANK_GPURUN default=closest topology=$TMP/missing.xml" >"$PLUGSTACK"
run srun -n 2 -l "$TMP/report.sh"
expect_rc 0 "listed as required in plugstack.conf, without its argument required: the tasks still run"
echo "required $SPANK_GPURUN default=closest required topology=$TMP/missing.xml" >"$PLUGSTACK"
run srun -n 2 -l "$TMP/report.sh"
# (Slurm 22.05's srun exits 0 when no task could start: the tasks' absence
# and Slurm's own message are what count.)
! grep -q 'task=' "$TMP/out" && grep -q 'user_init() failed' "$TMP/err"
ok $? "with the argument required the step fails instead: no task starts"
grep -q 'failing the task' "$TMP/err"
ok $? "... saying why"

# A job's own GPU list (issue 26): srun passes the user's environment on,
# and slurmstepd (root) reads it.  An open range ("0-": an infinite hwloc
# set, which aborted slurmstepd on hwloc's assertion, or with -DNDEBUG wrote
# past the request's array until it crashed), a huge one and a UUID list are
# refused with a message (slurm_error in slurmstepd: srun's stderr and
# slurmd's log); the task runs unbound with the plugin optional and does not
# start with `required`; each such step's slurmstepd runs to its end, slurmd
# lives on and the next step is bound as planned.  Both builds of the
# plugin: the normal one and the release one (-DNDEBUG, as distributions
# build it; paths without blanks).  `timeout 120`: srun waited 10 minutes for the stepd that died.
slurmd_pid=$(cat "$GPURUN_SLURM_DIR/run/slurmd.pid" 2>/dev/null)
log=$GPURUN_SLURM_DIR/log/slurmd.log
plugins=$SPANK_GPURUN
if [ -f "${SPANK_GPURUN_NDEBUG:-}" ]; then
    plugins="$plugins $SPANK_GPURUN_NDEBUG"
else
    diag "SPANK_GPURUN_NDEBUG (make check builds it) not found: the -DNDEBUG plugin is not run here"
fi
for plugin in $plugins; do
    case $plugin in *ndebug*) build="the -DNDEBUG plugin" ;; *) build="the plugin" ;; esac
    echo "optional $plugin topology=$XML" >"$PLUGSTACK"
    steps=
    for value in 0- 0-2147483646 GPU-5bb9e2b3-1a2b-3c4d-5e6f-0123456789ab; do
        # the task as without --gpurun: Slurm's own binding, the job's variable
        run env CUDA_VISIBLE_DEVICES="$value" srun -n 1 -l "$TMP/report.sh"
        unbound=$(got_line 0)
        lines=$(wc -l <"$log")
        run env CUDA_VISIBLE_DEVICES="$value" timeout 120 srun -n 1 --gpurun -l "$TMP/report.sh"
        got=$(got_line 0)
        if [ -n "$got" ] && [ "$got" = "$unbound" ]; then
            ok 0 "$build, CUDA_VISIBLE_DEVICES=$value srun --gpurun: the task runs unbound ($got)"
        else
            ok 1 "$build, CUDA_VISIBLE_DEVICES=$value srun --gpurun: the task runs unbound"
            diag "got: $got (exit $rc); unbound: $unbound"
            sed 's/^/#   /' "$TMP/err" | head -5
        fi
        { cat "$TMP/err"; tail -n +"$((lines + 1))" "$log"; } >"$TMP/said"
        contains "$TMP/said" "the job's CUDA_VISIBLE_DEVICES refused" \
            "... refused with a message: $(grep -m1 -o "gpurun: the job's.*" "$TMP/said" | cut -c1-160)"
        steps="$steps $(tail -n +"$((lines + 1))" "$log" | sed -n 's/.*launch task StepId=\([0-9.]*\) request.*/\1/p' | tail -n 1)"
    done
    echo "required $plugin required topology=$XML" >"$PLUGSTACK"
    lines=$(wc -l <"$log")
    run env CUDA_VISIBLE_DEVICES=0- timeout 120 srun -n 1 --gpurun -l "$TMP/report.sh"
    ! grep -q 'task=' "$TMP/out" && grep -q "the job's CUDA_VISIBLE_DEVICES refused.*failing the task" "$TMP/err"
    ok $? "$build, required: CUDA_VISIBLE_DEVICES=0- fails the step, saying why"
    steps="$steps $(tail -n +"$((lines + 1))" "$log" | sed -n 's/.*launch task StepId=\([0-9.]*\) request.*/\1/p' | tail -n 1)"
    # A stepd logs "done with job" last (after srun has its tasks' end: 30 s
    # at most by its own timers; waited for up to 120 s on a loaded machine).
    ended=0 n=0
    while [ $n -lt 240 ]; do
        ended=0
        for step in $steps; do grep -qF "[$step] done with job" "$log" && ended=$((ended + 1)); done
        [ $ended -eq 4 ] && break
        sleep 0.5
        n=$((n + 1))
    done
    [ $ended -eq 4 ]
    ok $? "... the slurmstepd of each of those 4 steps ran to its end ($ended of steps$steps: done with job)"
    kill -0 "$slurmd_pid" 2>/dev/null && [ "$(cat "$GPURUN_SLURM_DIR/run/slurmd.pid")" = "$slurmd_pid" ]
    ok $? "... slurmd ($slurmd_pid) lives on"
    echo "optional $plugin topology=$XML" >"$PLUGSTACK"
    run srun -n 2 --gpurun -l "$TMP/report.sh"
    [ "$(got_line 0)" = "$(want 0)" ] && [ "$(got_line 1)" = "$(want 1)" ]
    ok $? "... and the next step is bound as planned"
done

done_testing
