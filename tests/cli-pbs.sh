#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# PBS for real (issue 42): OpenPBS as scripts/install-pbs.sh builds it, and
# a one-node complex on this machine (tests/cluster/pbs-complex.sh: its
# PostgreSQL data service, pbs_comm, pbs_server, pbs_sched, pbs_mom), with
# every job through qsub.  Outside a job: doctor's PBS line, launcher = pbs
# refused, gpurun submit's #PBS lines (each value one word for qsub).  On the
# complex: gpurun submit of hello on 2 ranks (launcher = auto picks pbs;
# mpirun with the job's node file, its own binding off, each rank bound by
# gpurun's rank step), a 3-configuration scan as one job array
# (PBS_ARRAY_INDEX), qsub's reading of the quoted values (qstat -f), doctor
# inside a job (the select statement), and, as the complex's user (not root:
# pbs_mom does not track root's processes), a job PBS kills at its walltime
# (timeout, 124, the record written) and gpurun run inside qsub -I.
# Everything the complex started is stopped after.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

PBS_EXEC=${GPURUN_PBS_EXEC:-/opt/pbs}
if [ ! -x "$PBS_EXEC/bin/qsub" ] || [ ! -x "$PBS_EXEC/sbin/pbs_server.bin" ]; then
    echo "1..0 # SKIP no OpenPBS in $PBS_EXEC: scripts/install-pbs.sh builds it from ../shared/vendor"
    exit 0
fi
unset PBS_JOBID PBS_NODEFILE PBS_ARRAY_INDEX SLURM_JOB_ID SLURM_JOBID FLUX_URI GPURUN_TOPOLOGY GPURUN_PLUGIN_PATH
export GPURUN_KILL_GRACE=5
PATH=$PBS_EXEC/bin:$PATH
export PATH
G=$GPURUN
# The results: under a folder PBS's mom may write into (as root, here).
W=$TMP/w
mkdir -p "$W"
cd "$W" || exit 1

cat >"$W/show" <<'EOF'
#!/bin/sh
echo "rank=$GPURUN_RANK local=$GPURUN_LOCAL_RANK ompi=$OMPI_COMM_WORLD_RANK x=${1:-}" \
    "cpus=$(sed -n 's/^Cpus_allowed_list:.//p' /proc/self/status | tr -d '[:space:]')"
EOF
chmod +x "$W/show"
cat >"$W/hello.conf" <<EOF
job = "hello"
site = "pbs-test"
command = "$W/show"
ranks_per_node = 2
gpus_per_rank = 0
threads_per_rank = 1
timeout = "2m"
EOF
# A site on PBS: gpurun submit picks PBS from its scheduler.  qsub passes
# the job no environment of the caller's: the site's -v names the profiles'
# folder for gpurun run in the job.
mkdir -p "$W/sites"
cat >"$W/sites/pbs-test.conf" <<EOF
description = "the one-node PBS test complex"
scheduler = "pbs"
sbatch = { "-v GPURUN_TEMPLATE_PATH=$W" }
EOF
GPURUN_TEMPLATE_PATH=$W
export GPURUN_TEMPLATE_PATH
last_run() { ls -d "$W/results/$1"/*Z-*/ 2>/dev/null | tail -1 | sed 's:/$::'; }

# ---- outside a job -----------------------------------------------------------------
run "$G" doctor
contains "$TMP/out" "PBS               PBS 23.06.06 (qsub); not inside a job" "doctor: PBS's version, not inside a job"
run "$G" run "$W/hello.conf" --set launcher=pbs --dry-run
expect_rc 3 "launcher = pbs outside a PBS job: exit 3"
contains "$TMP/err" "launcher = pbs runs jobs inside a PBS job and PBS_JOBID is not set" "... saying why"
run "$G" submit "$W/hello.conf" --set launcher=pbs --set "pbs.account=a b'c" --dry-run
expect_rc 0 "submit --dry-run: a PBS batch script"
for line in "#PBS -N 'hello'" "#PBS -l 'select=1:ncpus=2:mpiprocs=2'" "#PBS -l 'walltime=00:03:00'" \
    "#PBS -o '$W/results/hello/'" "#PBS -A 'a b'\\''c'"; do
    contains "$TMP/out" "$line" "... $line"
done
run "$G" submit "$W/hello.conf" --set launcher=pbs --set "pbs.select=2" --dry-run
expect_rc 2 "pbs.select: refused, the job's layout writes the select statement"
run "$G" submit "$W/hello.conf" --set launcher=pbs --set "pbs.queue=$(printf 'a\nb')" --dry-run
expect_rc 2 "a value with a line break: refused (it would end the #PBS line)"

# ---- the complex --------------------------------------------------------------------
# PBS refuses a state folder under a world-writable one (/tmp): /var/lib.
mkdir -p /var/lib/gpurun-pbs && chmod 0755 /var/lib/gpurun-pbs
GPURUN_PBS_DIR=/var/lib/gpurun-pbs/cli-$$
export GPURUN_PBS_DIR
C=$top_srcdir/tests/cluster/pbs-complex.sh
stop_complex() {
    sh "$C" stop >/dev/null 2>&1
    rmdir /var/lib/gpurun-pbs 2>/dev/null
}
trap 'stop_complex; rm -rf "$TMP"' EXIT INT TERM
crc=0
sh "$C" start >"$TMP/env" 2>"$TMP/up.err" || crc=$?
if [ "$crc" -eq 77 ]; then
    for i in $(seq 1 20); do skip "no PBS complex here: $(head -n 1 "$TMP/up.err")"; done
    done_testing
    exit
fi
ok "$crc" "a one-node PBS complex (data service, comm, server, sched, mom; node and queue by qmgr)"
if [ "$crc" -ne 0 ]; then
    sed 's/^/#   /' "$TMP/up.err" | tail -40
    done_testing
    exit 1
fi
eval "$(cat "$TMP/env")"
inpbs() { sh "$C" run "$@"; }
# wait_job ID: until PBS says it finished (history), at most 3 minutes.
wait_job() {
    [ -n "$1" ] || return 1
    _n=0
    while [ $_n -lt 180 ]; do
        inpbs qstat -x -f "$1" 2>/dev/null | grep -q '^ *job_state = [FX]' && return 0
        sleep 1
        _n=$((_n + 1))
    done
    return 1
}

# hello on 2 ranks: gpurun submit, qsub, the job runs gpurun run.
run inpbs "$G" submit "$W/hello.conf" --set "pbs.account=a b'c"
expect_rc 0 "gpurun submit: qsub took the job"
id=$(sed -n 's/^Submitted batch job //p' "$TMP/out")
[ -n "$id" ]
ok $? "... it says the job id ($id)"
inpbs qstat -f "$id" >"$TMP/qstat" 2>&1
grep -q "Account_Name = a b'c" "$TMP/qstat" && grep -q "Job_Name = hello" "$TMP/qstat" &&
    grep -q "Resource_List.select = 1:ncpus=2:mpiprocs=2" "$TMP/qstat"
ok $? "... qsub read each #PBS value as written (Account_Name a b'c, the select statement)"
wait_job "$id"
ok $? "... the job finished"
d=$(last_run hello)
jq -e '.state == "ok" and .launcher == "pbs" and (.launcher_choice | startswith("pbs: inside PBS job"))' \
    "$d/record.json" >/dev/null
ok $? "... gpurun ran it with launcher pbs (auto) and wrote its record"
c0=$(jq -r '.bindings[0].cpus' "$d/record.json")
c1=$(jq -r '.bindings[1].cpus' "$d/record.json")
r0=$(rank_output "$d" 0)
r1=$(rank_output "$d" 1)
[ -n "$c0" ] && [ "$c0" != null ] && [ "$c0" != "$c1" ] &&
    [ "${r0##*cpus=}" = "$c0" ] && [ "${r1##*cpus=}" = "$c1" ]
ok $? "... each rank bound by gpurun's rank step, to its own core ($c0, $c1)"
case "$r0 $r1" in
    "rank=0 local=0 ompi=0"*"rank=1 local=1 ompi=1"*) ok 0 "... ranks from Open MPI's variables ($r0 | $r1)" ;;
    *) ok 1 "... ranks from Open MPI's variables ($r0 | $r1)" ;;
esac

# doctor inside a job: the node file and the select statement.
cat >"$W/doctor.sh" <<EOF
#!/bin/sh
#PBS -l select=1:ncpus=2:mpiprocs=2
#PBS -l walltime=00:02:00
#PBS -o $W/doctor.out
#PBS -j oe
$G doctor
$G run $W/hello.conf --dry-run
EOF
id=$(inpbs qsub "$W/doctor.sh")
wait_job "$id"
contains "$W/doctor.out" "select 1:ncpus=2:mpiprocs=2 (1 chunk: 2 MPI processes, 0 GPUs); launch: mpirun with the node file" \
    "doctor inside a job: its hosts, MPI slots and select statement"
grep -q "^mpirun -machinefile $GPURUN_PBS_DIR/home/aux/$id -np 2 --map-by ppr:2:node --bind-to none " "$W/doctor.out"
ok $? "... the launch: mpirun with the job's node file, its own binding off"

# A 3-configuration scan: one job array, PBS_ARRAY_INDEX the configuration.
cat >"$W/scan.conf" <<EOF
job = "scan"
site = "pbs-test"
command = "$W/show \${x}"
ranks_per_node = 2
gpus_per_rank = 0
threads_per_rank = 1
timeout = "2m"
scan { params.x = {a, b, c} }
EOF
run inpbs "$G" submit "$W/scan.conf"
expect_rc 0 "a scan of 3 configurations: submitted"
id=$(sed -n 's/^Submitted batch job //p' "$TMP/out")
s=$(ls "$W"/results/scan/submit-*.pbs)
case $id in *"[]"*) r=0 ;; *) r=1 ;; esac
[ "$r" -eq 0 ] && [ "$(echo "$id" | wc -w)" -eq 1 ] && grep -q "^#PBS -J '1-3'\$" "$s"
ok $? "... as one job array, -J 1-3 ($id)"
wait_job "$id"
ok $? "... the array finished"
jq -r -s 'map(select(.state == "ok" and .launcher == "pbs") | .config["params.x"]) | sort | join(",")' \
    "$W"/results/scan/*Z-*/record.json >"$TMP/configs" 2>/dev/null
xs=$(for d in "$W"/results/scan/*Z-*; do rank_output "$d" 1; done | sed -n 's/.* x=\([a-z]*\) .*/\1/p' | sort | tr '\n' ,)
[ "$(cat "$TMP/configs")" = "a,b,c" ] && [ "$xs" = "a,b,c," ]
ok $? "... each subjob ran its configuration, ok ($(cat "$TMP/configs"))"

# Over its walltime: PBS kills the job, gpurun says timeout (124).  As a
# user, as on a cluster: pbs_mom does not track root's processes (it skips
# uid 0 in /proc), so to it a root job is gone at the first signal and it
# kills the job's process group at once, gpurun with it.
asuser() { inpbs setpriv --reuid="$GPURUN_PBS_UID" --regid="$GPURUN_PBS_UID" --clear-groups \
    env HOME="$GPURUN_PBS_USER_HOME" USER="$GPURUN_PBS_USER" LOGNAME="$GPURUN_PBS_USER" "$@"; }
UH=${GPURUN_PBS_USER_HOME:-}
if [ -z "$UH" ] || ! command -v setpriv >/dev/null 2>&1; then
    why="no user in the complex or no setpriv (util-linux)"
elif ! asuser test -x "$G"; then
    why="this build ($G) is not reachable by another user (a folder of its path is private)"
else
    why=
fi
if [ -n "$why" ]; then
    for i in 1 2 3 4 5; do skip "$why: no job over its walltime as a user"; done
else
    cat >"$UH/long.conf" <<EOF
job = "long"
command = "sleep 300"
ranks_per_node = 2
gpus_per_rank = 0
threads_per_rank = 1
bind = "none"
pbs { walltime = "00:00:08" }
EOF
    chown "$GPURUN_PBS_UID:$GPURUN_PBS_UID" "$UH/long.conf"
    run asuser "$G" submit "$UH/long.conf" --set launcher=pbs
    expect_rc 0 "a job over its walltime (8 s), as user $GPURUN_PBS_USER: submitted"
    id=$(sed -n 's/^Submitted batch job //p' "$TMP/out")
    wait_job "$id"
    ok $? "... PBS ended it"
    d=$(ls -d "$UH/results/long"/*Z-*/ 2>/dev/null | tail -1 | sed 's:/$::')
    grep -rqs "=>> PBS: job killed: walltime" "$UH/results/long/"
    ok $? "... mom said why in the job's standard error"
    [ "$(stat -c %u "$d" 2>/dev/null)" = "$GPURUN_PBS_UID" ]
    ok $? "... the run folder is the user's ($d)"
    jq -e '.state == "timeout" and .exit_status == 124 and (.failure.reason | test("time limit"))' \
        "$d/record.json" >/dev/null 2>&1
    ok $? "... the record: timeout, exit 124, the allocation's time limit ($(jq -c '[.state, .exit_status, .failure.reason]' "$d/record.json" 2>/dev/null))"
    [ -f "$d/record.json" ] || { ls -la "$d" "$UH/results/long/" 2>&1 | sed 's/^/#   /'; for f in "$UH"/results/long/*.ER "$UH"/results/long/*.OU "$d/launcher.out"; do [ -f "$f" ] && { echo "# --- $f"; tail -15 "$f" | sed 's/^/#   /'; }; done; }
fi

# gpurun run inside an interactive allocation (qsub -I), as the user.  qsub
# -I wants a terminal: script(1) gives it one, and its input stays open (a
# FIFO a sleep holds) until qsub ends, since an end of input would end the
# session before the command.
if [ -n "$why" ] || ! command -v script >/dev/null 2>&1; then
    for i in 1 2 3; do skip "${why:-no script(1) to give qsub -I a terminal}: no gpurun run inside qsub -I"; done
else
    sed -e 's/^job = "long"/job = "inter"/' -e '/^pbs {/d' -e '/^bind = /d' -e 's/^command = .*/command = "hostname"/' \
        "$UH/long.conf" >"$UH/inter.conf"
    printf '#!/bin/sh\n"$1" run "$2" >"$3" 2>&1\necho "rc=$?" >>"$3"\n' >"$UH/inter.sh"
    chmod 0755 "$UH/inter.sh"
    chown "$GPURUN_PBS_UID:$GPURUN_PBS_UID" "$UH/inter.conf" "$UH/inter.sh"
    mkfifo "$TMP/tty.in"
    sleep 170 >"$TMP/tty.in" &
    holder=$!
    asuser timeout 160 script -qec "qsub -I -l select=1:ncpus=2:mpiprocs=2 -l walltime=00:02:00 -- \
$UH/inter.sh $G $UH/inter.conf $UH/inter.out" /dev/null <"$TMP/tty.in" >"$TMP/qsubi" 2>&1
    kill "$holder" 2>/dev/null
    grep -q "qsub: job .* ready" "$TMP/qsubi" && grep -q "^rc=0\$" "$UH/inter.out"
    ok $? "qsub -I: gpurun run in the interactive job, exit 0 ($(tr '\n' ' ' <"$TMP/qsubi" | tr -s ' '))"
    d=$(ls -d "$UH/results/inter"/*Z-*/ 2>/dev/null | tail -1 | sed 's:/$::')
    jq -e '.state == "ok" and .launcher == "pbs" and (.launcher_choice | startswith("pbs: inside PBS job"))' \
        "$d/record.json" >/dev/null 2>&1
    ok $? "... launcher pbs, chosen inside the job ($(jq -c '.launcher_choice' "$d/record.json" 2>/dev/null))"
    jq -e '[.bindings[].cpus] | length == 2 and .[0] != .[1]' "$d/record.json" >/dev/null 2>&1
    ok $? "... each rank bound by gpurun, to its own core ($(jq -c '[.bindings[].cpus]' "$d/record.json" 2>/dev/null))"
    [ -f "$d/record.json" ] || sed 's/^/#   /' "$UH/inter.out" "$TMP/qsubi" 2>/dev/null
fi

# ---- the water box ------------------------------------------------------------------
if gmx_needs_rdtscp; then
    skip "this CPU lacks rdtscp, which Debian's GROMACS build needs: no water box through PBS"
elif command -v gmx_mpi >/dev/null 2>&1 && command -v gmx >/dev/null 2>&1; then
    cp -r "$top_srcdir/examples/water-box" "$W/wb"
    run inpbs "$G" submit "$W/wb/job.conf" --set site=pbs-test --set threads_per_rank=1 --set params.nsteps=200 --set timeout=4m \
        --set results="$W/results"
    id=$(sed -n 's/^Submitted batch job //p' "$TMP/out")
    wait_job "$id"
    d=$(last_run water-box)
    jq -e '.state == "ok" and .launcher == "pbs" and .foms.ns_per_day.value > 0' "$d/record.json" >/dev/null
    ok $? "the water box through qsub, 2 ranks: ns/day $(jq '.foms.ns_per_day.value' "$d/record.json" 2>/dev/null)"
    [ -f "$d/record.json" ] && jq -e '.state == "ok"' "$d/record.json" >/dev/null ||
        { cat "$TMP/out" "$TMP/err"; ls -la "$W/wb" "$d"; tail -n 20 "$d"/*.out "$W"/wb/*.o* "$W"/wb/*.e* "$W"/*.o* "$W"/*.e*; } 2>&1 | sed 's/^/#   /' | head -80
else
    skip "no gmx_mpi and gmx (Debian: gromacs-openmpi)"
fi

stop_complex
ns=gpurun-pbs-$(printf '%s' "$GPURUN_PBS_DIR" | cksum | cut -d' ' -f1)
irc=0
inpbs true >/dev/null 2>&1 || irc=$?
[ "$irc" -ne 0 ] && [ ! -e "/run/netns/$ns" ] && [ ! -e "$GPURUN_PBS_DIR" ]
ok $? "the complex stopped: no namespace, no state folder left"
done_testing
