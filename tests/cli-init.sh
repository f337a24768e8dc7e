#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gpurun init and gpurun templates: a job file for every shipped template and
# site profile that `gpurun run --dry-run` accepts as written (or refuses
# with exit 3 because the template's program is not installed here), on a
# GPU node, on this node, and from a login node of a GPU cluster; every key
# commented; -o -; never over a file without --force; the listing of
# templates and site profiles (table and --json), shadowing and broken files;
# and the examples of gpurun.conf(5).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

GPURUN_TEMPLATE_PATH=$top_srcdir/templates
export GPURUN_TEMPLATE_PATH
unset GPURUN_TOPOLOGY SLURM_JOB_ID SLURM_JOB_GPUS SLURM_STEP_GPUS
# The project's own programs (cg, netcheck), where the build made them.
for d in cg netcheck; do
    [ -n "${top_builddir:-}" ] && [ -d "$top_builddir/examples/$d" ] && PATH=$top_builddir/examples/$d:$PATH
done
export PATH
GPUNODE=$FIXTURES/2s-4gpu-2nic.xml
CPUNODE=$FIXTURES/cpu-only-2numa.xml
TEMPLATES="generic gromacs lammps hpl cg netcheck pytorch-ddp hpcg nccl-tests stream osu-latency osu-bw namd"
SITES="local example-univ aws-p5en"
have_jq=false
command -v jq >/dev/null 2>&1 && have_jq=true

# provide_inputs: the input files the generated jobs name, beside them (run
# and submit check a template's inputs before anything starts or is queued).
provide_inputs() {
    fake_tpr bench.tpr
    for f in in.lammps hpccinf.txt train.py run.namd; do : >"$f"; done
}

# dry_run_ok FILE WHAT: `gpurun run FILE --dry-run` succeeds, or is exit 3
# because the program the template runs is not on this machine.
dry_run_ok() {
    run "$GPURUN" run "$1" --dry-run
    if [ "$rc" -eq 0 ]; then
        ok 0 "$2: gpurun run --dry-run"
        return
    fi
    prog=$(sed -n "s/^gpurun: program '\([^']*\)' not found.*/\1/p" "$TMP/err")
    if [ "$rc" -eq 3 ] && [ -n "$prog" ] && ! command -v "$prog" >/dev/null 2>&1; then
        ok 0 "$2: gpurun run --dry-run: exit 3, '$prog' is not installed here"
    else
        ok 1 "$2: gpurun run --dry-run (exit $rc)"
        sed 's/^/#   /' "$TMP/err" | head -5
    fi
}

# every_key_commented FILE: each `key = value` line carries a comment.
every_key_commented() {
    ! grep -E '^[[:space:]]*[A-Za-z_][A-Za-z0-9_.-]*[[:space:]]*=' "$1" | grep -v '#' | grep -q .
}

# ---- templates ---------------------------------------------------------------
mkdir "$TMP/empty" && cd "$TMP/empty" || exit 1
run "$GPURUN" templates
expect_rc 0 "gpurun templates"
for t in $TEMPLATES; do
    grep -q "^$t  .*  $top_srcdir/templates/$t.conf\$" "$TMP/out"
    ok $? "... lists $t, its description and its file"
done
head -n 1 "$TMP/out" | grep -q '^NAME  *DESCRIPTION  *PATH$'
ok $? "... under a NAME DESCRIPTION PATH header"
run "$GPURUN" templates --sites
expect_rc 0 "gpurun templates --sites"
for s in $SITES; do
    grep -q "^$s  .*  $top_srcdir/templates/sites/$s.conf\$" "$TMP/out"
    ok $? "... lists the site profile $s"
done
run "$GPURUN" templates --bogus
expect_rc 2 "gpurun templates --bogus: exit 2"
run "$GPURUN" templates extra
expect_rc 2 "gpurun templates with an argument: exit 2"

if $have_jq; then
    run "$GPURUN" templates --json
    expect_rc 0 "gpurun templates --json"
    cp "$TMP/out" "$TMP/t.json"
    jq_out '.gpurun_templates == 1 and ([.templates[].name] | sort == ["cg","generic","gromacs","hpcg","hpl","lammps","namd","nccl-tests","netcheck","osu-bw","osu-latency","pytorch-ddp","stream"])'
    ok $rc "... version 1, the thirteen shipped templates"
    run jq -e 'all(.templates[]; (.description | type) == "string" and .error == null and (.path | endswith(".conf"))
               and .shadows == [])' "$TMP/t.json"
    ok $rc "... each with its description, path, no error, nothing shadowed"
    run jq -e '.templates[] | select(.name == "gromacs") | .foms == ["ns_per_day","hour_per_ns"]' "$TMP/t.json"
    ok $rc "... and its figures of merit"
    run jq -e '.search_path[0] == "."' "$TMP/t.json"
    ok $rc "... the search path starts with this folder"
    run "$GPURUN" templates --sites --json
    jq_out '[.sites[] | select(.name == "example-univ") | .scheduler, .launcher, .partition, .gpus_per_node, .currency]
            == ["slurm","srun","gpu",4,"EUR"]'
    ok $rc "gpurun templates --sites --json: example-univ's keys"
else
    skip "jq not found (Debian: jq): templates --json not checked"
fi

# A template of this folder shadows the installed one; a job file named like
# a template hides it, and is named in a warning; a broken template on the
# path is listed with why.
mkdir "$TMP/shadow" "$TMP/extra" && cd "$TMP/shadow" || exit 1
sed 's/^description *=.*/description = "my own generic"/' "$top_srcdir/templates/generic.conf" >generic.conf
printf 'template = "gromacs"\nranks_per_node = 1\n' >gromacs.conf
printf 'description = "broken"\ncommand = "x ${"\n' >"$TMP/extra/broken.conf"
GPURUN_TEMPLATE_PATH=$TMP/extra:$top_srcdir/templates run "$GPURUN" templates
expect_rc 0 "templates with a shadowing, a hidden and a broken one: exit 0"
grep -q '^generic  *my own generic  *\./generic.conf$' "$TMP/out"
ok $? "... this folder's generic.conf wins"
grep -q "^gromacs  .*  $top_srcdir/templates/gromacs.conf\$" "$TMP/out"
ok $? "... the job file gromacs.conf is no template: the installed gromacs is listed"
contains "$TMP/err" "./gromacs.conf is not a template, yet a job in this folder naming template 'gromacs' reads it" \
    "... and a warning says a job here would read the job file"
grep -q '^broken  *(cannot be read: .*broken.conf:2' "$TMP/out"
ok $? "... the broken template is listed with its file:line"
if $have_jq; then
    GPURUN_TEMPLATE_PATH=$TMP/extra:$top_srcdir/templates run "$GPURUN" templates --json
    jq_out '(.templates[] | select(.name == "generic") | .shadows == ["'"$top_srcdir"'/templates/generic.conf"])
            and (.templates[] | select(.name == "broken") | .error != null and .description == null)'
    ok $rc "... JSON: what generic.conf shadows, the broken one's error"
fi

# ---- init: every template and site profile -----------------------------------
# On a GPU node (an export of one), on this node, and, for the Slurm site,
# from a node without GPUs (a login node), where the job is laid out for the
# site's GPU nodes.
for where in gpu here; do
    for s in $SITES; do
        for t in $TEMPLATES; do
            d=$TMP/init-$where-$s-$t
            mkdir "$d" && cd "$d" || exit 1
            if [ $where = gpu ]; then GPURUN_TOPOLOGY=$GPUNODE; export GPURUN_TOPOLOGY; fi
            run "$GPURUN" init --template "$t" --site "$s"
            expect_rc 0 "[$where] init --template $t --site $s"
            if [ $t = gromacs ] && [ $where = gpu ] && [ $s = local ]; then
                # Before its run input is there: the newcomer is told where to put it.
                contains "$TMP/err" "gpurun: note: params.tpr = \"$d/bench.tpr\": $d/bench.tpr does not exist yet; put the gromacs input there" \
                    "[$where] $t/$s: init says where the run input goes"
                GPURUN_TOPOLOGY=$GPUNODE run "$GPURUN" run job.conf --dry-run
                expect_rc 2 "[$where] $t/$s: a dry run before the run input is there: exit 2"
                contains "$TMP/err" "gpurun: job.conf:" "... naming the job file's line"
                contains "$TMP/err" "key 'params.tpr': input file $d/bench.tpr does not exist" "... the key and the path"
            fi
            provide_inputs
            every_key_commented job.conf
            ok $? "[$where] $t/$s: every key has its comment"
            grep -q "^template *= \"$t\"" job.conf && grep -q "^site *= \"$s\"" job.conf
            ok $? "[$where] $t/$s: names its template and site"
            login=false
            [ $where = here ] && [ $s = example-univ ] && ! "$GPURUN" topo | grep -q '^GPU' &&
                ! grep -q '^gpus_per_rank *= 0' job.conf && login=true
            if $login; then
                # This node has no GPUs: laid out for the site's 4-GPU nodes.
                grep -q '^ranks_per_node *= 4 ' job.conf && grep -q '^gpus_per_rank *= 1 ' job.conf
                ok $? "[$where] $t/$s: laid out for example-univ's GPU nodes (4 ranks x 1 GPU)"
                run "$GPURUN" run job.conf --dry-run
                expect_rc 3 "[$where] $t/$s: run --dry-run on a node without GPUs: exit 3"
                run "$GPURUN" submit job.conf --dry-run
                expect_rc 0 "[$where] $t/$s: submit --dry-run"
                contains "$TMP/out" "#SBATCH --gpus-per-node=4" "[$where] $t/$s: the batch script asks for 4 GPUs"
            else
                dry_run_ok job.conf "[$where] $t/$s"
            fi
            unset GPURUN_TOPOLOGY
        done
    done
done

# What a site gives the job.
cd "$TMP/init-gpu-example-univ-gromacs" || exit 1
for line in 'partition *= "gpu"' 'account *= "proj-example"' 'qos *= "normal"' 'constraint *= "a100_80gb"'; do
    grep -q "^    $line" job.conf
    ok $? "example-univ: slurm { $line }"
done
contains job.conf "--exclusive" "example-univ: --exclusive, which no key can carry, is named"
contains job.conf "module load gcc/12.2.0 openmpi/4.1.6 cuda/12.4" "example-univ: its modules are named"
grep -q '^launcher *= "auto" ' job.conf
ok $? "example-univ (srun): launcher auto, which picks srun inside an allocation"
grep -q '^ranks_per_node *= 4 ' job.conf && grep -q '^gpus_per_rank *= 1 ' job.conf &&
    grep -q '^threads_per_rank *= 4 ' job.conf
ok $? "a 4-GPU, 16-core node: 4 ranks x 1 GPU x 4 threads"
grep -q "^    tpr *= \"$TMP/init-gpu-example-univ-gromacs/bench.tpr\"" job.conf
ok $? "gromacs: params.tpr is absolute, next to the job file (mdrun runs in the run folder)"
run "$GPURUN" submit job.conf --dry-run
expect_rc 0 "example-univ: submit --dry-run"
for l in '#SBATCH --partition=gpu' '#SBATCH --account=proj-example' '#SBATCH --qos=normal' \
    '#SBATCH --gpus-per-node=4' '#SBATCH --ntasks-per-node=4' '#SBATCH --time=00:31:00'; do
    contains "$TMP/out" "$l" "... $l"
done
cd "$TMP/init-gpu-aws-p5en-generic" || exit 1
grep -q '^launcher *= "mpirun" ' job.conf
ok $? "aws-p5en: its launcher, mpirun"
! grep -q '^slurm' job.conf
ok $? "aws-p5en (no Slurm): no slurm section"
cd "$TMP/init-gpu-local-netcheck" || exit 1
grep -q '^ranks_per_node *= 4 ' job.conf
ok $? "netcheck on 4 GPUs: 4 ranks"
grep -q '^ *netcheck *= "netcheck-cuda"' job.conf && grep -q '^ *buffers *= "gpu"' job.conf
ok $? "netcheck on GPUs: the CUDA build, messages from GPU memory"
GPURUN_TOPOLOGY=$FIXTURES/single-gpu-ws.xml run "$GPURUN" init -t netcheck -o - --force
grep -q '^ranks_per_node *= 2 ' "$TMP/out" && grep -q '^gpus_per_rank *= 0 ' "$TMP/out"
ok $? "netcheck on a 1-GPU node: 2 ranks (the fewest it needs), host memory"
grep -q '^ *netcheck *= "netcheck"' "$TMP/out" && grep -q '^ *buffers *= "host"' "$TMP/out"
ok $? "... the host build, host buffers"
GPURUN_TOPOLOGY=$CPUNODE run "$GPURUN" init -t hpl -o -
grep -q '^ranks_per_node *= 12 ' "$TMP/out" && grep -q '^threads_per_rank *= 1 ' "$TMP/out" &&
    grep -q '^gpus_per_rank *= 0 ' "$TMP/out"
ok $? "hpl on 2 x 6 cores: one single-threaded rank per core, no GPU"
GPURUN_TOPOLOGY=$CPUNODE run "$GPURUN" init -o -
grep -q '^ranks_per_node *= 2 ' "$TMP/out" && grep -q '^gpus_per_rank *= 0 ' "$TMP/out"
ok $? "generic on 2 NUMA nodes without GPUs: one rank per NUMA node, CPU only"

# From a login node (no GPUs; here an export of a CPU-only node given as
# this node) of a GPU cluster: laid out for the site's GPU nodes.  Given as
# --topology, a CPU node is what the job is for.
mkdir "$TMP/login" && cd "$TMP/login" || exit 1
GPURUN_TOPOLOGY=$CPUNODE run "$GPURUN" init -t lammps -s example-univ
expect_rc 0 "login node: init --site example-univ"
grep -q '^ranks_per_node *= 4 ' job.conf && grep -q '^gpus_per_rank *= 1 ' job.conf &&
    grep -q '^#threads_per_rank' job.conf
ok $? "... 4 ranks x 1 GPU, threads left to the compute node"
contains "$TMP/err" "gpurun submit job.conf --dry-run" "... and says how to check it from here"
provide_inputs
GPURUN_TOPOLOGY=$CPUNODE run "$GPURUN" run job.conf --dry-run
expect_rc 3 "... gpurun run --dry-run on the login node: exit 3"
run "$GPURUN" submit job.conf --dry-run
expect_rc 0 "... gpurun submit --dry-run"
run "$GPURUN" init -t lammps -s example-univ --topology "$CPUNODE" -o cpu.conf
grep -q '^gpus_per_rank *= 0 ' cpu.conf
ok $? "--topology of a CPU node: a CPU job"

# ---- init: files ---------------------------------------------------------------
mkdir "$TMP/files" && cd "$TMP/files" || exit 1
run "$GPURUN" init -o -
expect_rc 0 "init -o -"
[ ! -e job.conf ] && [ -z "$(ls -A)" ]
ok $? "... writes no file"
cp "$TMP/out" stdout.conf
run "$GPURUN" plan stdout.conf
expect_rc 0 "... what it prints is a job file"
run "$GPURUN" init
expect_rc 0 "init (job.conf)"
contains "$TMP/out" "next: gpurun run job.conf --dry-run" "... says what to do next"
# Issue 37: the path in the file's first comment line: a line break in a
# folder's name started a line of its own, read as a key of the job.
nl="$TMP/files/nl
run_folder_mode = \"group\" #"
mkdir "$nl"
run "$GPURUN" init -o "$nl/job.conf"
expect_rc 0 "init in a folder whose name holds a line break"
grep -q '^run_folder_mode' "$nl/job.conf"
ok $((!$?)) "... the job file sets no run_folder_mode: the line break did not start a line"
contains "$nl/job.conf" "# $TMP/files/nl?run_folder_mode = \"group\" #/job.conf: a gpurun job file" \
    "... its first comment shows it as '?'"
contains "$TMP/out" "next: gpurun run '$TMP/files/nl'\$'\\012''run_folder_mode = \"group\" #/job.conf' --dry-run" \
    "... and the command it suggests quotes the path: one line"
cp "$CPUNODE" "$nl/node.xml"
run "$GPURUN" init --topology "$nl/node.xml" -o nl-topo.conf
[ "$rc" -eq 0 ] && ! grep -q '^run_folder_mode' nl-topo.conf && grep -q "^#   gpurun init .* --topology $TMP/files/nl?run" nl-topo.conf
ok $? "init --topology from that folder: its path (said once) adds no key either"
rm -rf "$nl" nl-topo.conf
cksum job.conf >sum
printf 'ranks_per_node = 1\n' >other.conf
run "$GPURUN" init -t gromacs
expect_rc 2 "init again: exit 2"
contains "$TMP/err" "job.conf exists; not replaced" "... says the file exists"
contains "$TMP/err" "--force" "... and how to replace it"
cksum job.conf | cmp -s - sum
ok $? "... job.conf is untouched"
run "$GPURUN" init -t gromacs -o other.conf
expect_rc 2 "init -o an existing file: exit 2"
run "$GPURUN" init -t gromacs --force
expect_rc 0 "init --force"
grep -q '^template *= "gromacs"' job.conf
ok $? "... replaced job.conf"
[ -z "$(ls -A | grep '^\.gpurun-init-')" ]
ok $? "no temporary file left"
run "$GPURUN" init -t generic -o generic.conf
expect_rc 2 "init -o generic.conf for template generic: exit 2 (it would be read as the template)"
[ ! -e generic.conf ]
ok $? "... nothing written"
run "$GPURUN" init -o job.txt
expect_rc 2 "init -o job.txt: exit 2 (a job file ends in .conf)"
run "$GPURUN" init -o "$TMP/no/such/folder/job.conf"
expect_rc 3 "init -o into a missing folder: exit 3"
contains "$TMP/err" "mkdir -p" "... says to create the folder"
run "$GPURUN" init -t gromac
expect_rc 2 "init -t gromac: exit 2"
contains "$TMP/err" "did you mean 'gromacs'?" "... did you mean 'gromacs'"
run "$GPURUN" init -s example-uni
expect_rc 2 "init -s example-uni: exit 2"
contains "$TMP/err" "did you mean 'example-univ'?" "... did you mean 'example-univ'"
run "$GPURUN" init --topology "$TMP/none.xml" -o x.conf
expect_rc 2 "init --topology of a missing file: exit 2"
run "$GPURUN" init stray
expect_rc 2 "init with an argument: exit 2"
run "$GPURUN" init -o named.conf
grep -q '^job *= "named"' named.conf
ok $? "the job is named after its file (named.conf)"

# A template of one's own without defaults: its ${names} are left to fill.
mkdir "$TMP/mine" && cd "$TMP/mine" || exit 1
cat >solver.conf <<'EOF'
description = "a solver"
command     = "${solver} --steps ${nsteps} --out ${job}.out"
defaults    { nsteps = "10" }
fom rate    { regex = "rate: ([0-9.]+)" }
EOF
run "$GPURUN" init -t solver -o run1.conf
expect_rc 0 "init for a template of this folder"
grep -q '^    solver *= "CHANGE-ME" *# required' run1.conf && grep -q '^    nsteps *= "10"' run1.conf
ok $? "... its name without default is to fill in, its default is written"
contains "$TMP/err" "set params.solver in run1.conf" "... and init says so"

# A job as init writes it runs (generic: nproc, its cpus as the figure).
cd "$TMP/files" || exit 1
"$GPURUN" init --force -o job.conf >/dev/null 2>&1
run "$GPURUN" run job.conf --set launcher=local --quiet
expect_rc 0 "generic's placeholder runs as written (launcher local)"
rec=$(ls results/generic/*Z-*/record.json 2>/dev/null | head -n 1)
if $have_jq && [ -n "$rec" ]; then
    run jq -e '.state == "ok" and .foms.value.value >= 1 and .foms.value.units == "cpus"' "$rec"
    ok $rc "... its record: state ok, value = the cpus of rank 0"
else
    [ -n "$rec" ]
    ok $? "... and keeps a record"
fi

# ---- gpurun.conf(5): its examples are files gpurun reads ----------------------
mkdir -p "$TMP/man/sites" && cd "$TMP/man" || exit 1
awk '/^\.SH EXAMPLES/ { on = 1 } on && /^\.nf/ { n++; f = "block" n; next } on && /^\.fi/ { f = ""; next }
     f != "" { print > f }' "$top_srcdir/doc/gpurun.conf.5"
for b in block1 block2 block3 block4 block5; do sed -i 's/\\-/-/g; s/\\e/\\/g' "$b"; done
cp block1 water.conf && cp block2 stream.conf && cp block3 mysolver.conf && cp block4 sites/mycentre.conf
run "$GPURUN" plan water.conf --topology "$GPUNODE"
expect_rc 0 "gpurun.conf(5): the GROMACS job file reads and plans"
run "$GPURUN" plan stream.conf --topology "$GPUNODE"
expect_rc 0 "gpurun.conf(5): the job file without a template reads and plans"
if $have_jq; then
    run "$GPURUN" templates --json
    jq_out '.templates[] | select(.name == "mysolver") | .error == null'
    ok $rc "gpurun.conf(5): the template reads"
    run "$GPURUN" templates --sites --json
    jq_out '.sites[] | select(.name == "mycentre") | .error == null and .gpus_per_node == 8'
    ok $rc "gpurun.conf(5): the site profile reads"
fi
grep -q 'gpurun init --template gromacs --site mycentre -o water.conf' block5
ok $? "gpurun.conf(5): the commands block is where the test expects it"

done_testing
