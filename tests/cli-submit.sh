#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# gpurun submit without Slurm: what `gpurun run` would refuse is refused
# before any script is written (wrong template or site, on the job file's
# line; a layout the site's nodes cannot hold); a job of a site profile gets
# the site's #SBATCH lines (the job's own winning, none twice), its module
# loads and its scratch folder; and the real submit path hands that script
# to a fake sbatch on PATH.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

GPURUN_TEMPLATE_PATH=$top_srcdir/templates
export GPURUN_TEMPLATE_PATH
unset GPURUN_TOPOLOGY SLURM_JOB_ID SLURM_JOB_GPUS SLURM_STEP_GPUS

mkdir "$TMP/w" && cd "$TMP/w" || exit 1

# no_script NAME: nothing was written for job NAME
no_script() {
    ! ls "$TMP/w/results/$1" >/dev/null 2>&1
}

# ---- refused before anything is written -----------------------------------

cat >bad-template.conf <<'JOB'
job = "badtpl"
template = "gromacz"
ranks_per_node = 4
gpus_per_rank = 1
JOB
run "$GPURUN" submit bad-template.conf --dry-run
expect_rc 2 "a template not on the search path: exit 2"
contains "$TMP/err" "bad-template.conf:2: key 'template': template 'gromacz' not found (did you mean 'gromacs'?)" \
    "... named by the job file, line and key, with the nearest template"
no_script badtpl
ok $? "... and no batch script written"
[ ! -s "$TMP/out" ]
ok $? "... nothing printed on stdout"

run "$GPURUN" submit bad-template.conf --dry-run --set template=lammbs
expect_rc 2 "a template from --set not found: exit 2"
contains "$TMP/err" "--set template=lammbs: key 'template': template 'lammbs' not found (did you mean 'lammps'?)" \
    "... named by its --set"

cat >bad-site.conf <<'JOB'
job = "badsite"
command = "hostname"
site = "example-uni"
ranks_per_node = 1
gpus_per_rank = 0
JOB
run "$GPURUN" submit bad-site.conf --dry-run
expect_rc 2 "a site profile not found: exit 2"
contains "$TMP/err" "bad-site.conf:3: key 'site': site 'example-uni' not found (did you mean 'example-univ'?)" \
    "... on the job file's line"
no_script badsite
ok $? "... and no batch script written"

cat >unset-name.conf <<'JOB'
job = "unsetname"
template = "generic"
ranks_per_node = 1
gpus_per_rank = 0
params { prgram = "./a.out" }
JOB
run "$GPURUN" submit unset-name.conf --dry-run
expect_rc 2 "a misspelt params key: exit 2, as gpurun run would"
contains "$TMP/err" "unset-name.conf:5: key 'params.prgram': not used: template 'generic' has no '\${prgram}' and no default of that name (did you mean 'params.program'?)" \
    "... naming the job file, line and key, with the nearest name"
no_script unsetname
ok $? "... and no batch script written"

cat >neither.conf <<'JOB'
job = "neither"
ranks_per_node = 1
gpus_per_rank = 0
JOB
run "$GPURUN" submit neither.conf --dry-run
expect_rc 2 "neither a template nor a command: exit 2"

mkdir sites
cat >sites/hostile.conf <<'SITE'
description = "modules a shell would act on"
scheduler = "slurm"
modules = { "gcc/12", "foo; rm -rf /" }
SITE
cat >hostile.conf <<'JOB'
job = "hostile"
command = "hostname"
site = "hostile"
ranks_per_node = 1
gpus_per_rank = 0
JOB
run "$GPURUN" submit hostile.conf --dry-run
expect_rc 2 "a site profile with a module name a shell would act on: exit 2"
contains "$TMP/err" "sites/hostile.conf:3: key 'modules', item 2: 'foo; rm -rf /' is not a module name" \
    "... named by the profile's line"

cat >toobig.conf <<'JOB'
job = "toobig"
command = "hostname"
site = "example-univ"
ranks_per_node = 4
gpus_per_rank = 1
threads_per_rank = 32
JOB
run "$GPURUN" submit toobig.conf --dry-run
expect_rc 3 "4 ranks x 32 threads on example-univ's 64-core nodes: exit 3"
contains "$TMP/err" "need 128 cores on a node; site example-univ's nodes have 64 (cores_per_node in" "... said why"
run "$GPURUN" submit toobig.conf --dry-run --set ranks_per_node=8 --set threads_per_rank=4
expect_rc 3 "8 ranks x 1 GPU on example-univ's 4-GPU nodes: exit 3"

# ---- a job of example-univ ---------------------------------------------------

cat >water.conf <<'JOB'
job = "water"
template = "gromacs"
site = "example-univ"
ranks_per_node = 4
gpus_per_rank = 1
timeout = "30m"
params { tpr = "bench.tpr" }
slurm { qos = "high" }
JOB
fake_tpr bench.tpr # submit checks the template's inputs before it writes anything
run "$GPURUN" submit water.conf --dry-run
expect_rc 0 "submit --dry-run of an example-univ job"
cp "$TMP/out" water.sbatch
for l in '#SBATCH --partition=gpu' '#SBATCH --account=proj-example' '#SBATCH --constraint=a100_80gb' \
    '#SBATCH --exclusive' '#SBATCH --qos=high' '#SBATCH --cpus-per-task=16' '#SBATCH --gpus-per-node=4' \
    "module load 'gcc/12.2.0'" "module load 'openmpi/4.1.6'" "module load 'cuda/12.4'" \
    "export GPURUN_SCRATCH='/scratch/'\"\${USER}\""; do
    grep -qxF -- "$l" water.sbatch || grep -qF -- "$l   #" water.sbatch
    ok $? "... $l"
done
[ "$(grep -c '^#SBATCH --qos' water.sbatch)" -eq 1 ]
ok $? "... one --qos: the job's slurm.qos replaces the site's"
[ "$(grep '^#SBATCH' water.sbatch | sed 's/^#SBATCH \([^= ]*\).*/\1/' | sort | uniq -d)" = "" ]
ok $? "... no option twice"
head -1 water.sbatch | grep -qx '#!/bin/bash'
ok $? "... #!/bin/bash first"
# sbatch reads options up to the first command: every #SBATCH line before it.
awk '/^#SBATCH/ { if (body) bad = 1; next } /^[^#]/ { body = 1 } END { exit bad }' water.sbatch
ok $? "... every #SBATCH line before the first command"
awk '/^set -euo pipefail$/ { s = NR } /^module load / && !m { m = NR } /^exec / { e = NR }
     END { exit !(s && m && e && s < m && m < e) }' water.sbatch
ok $? "... set -euo pipefail, then the modules, then exec"
grep -qx "exec '$GPURUN' run '$TMP/w/water.conf'" water.sbatch ||
    grep -q "^exec '.*gpurun' run '$TMP/w/water.conf'\$" water.sbatch
ok $? "... exec gpurun run with the job file's absolute path, quoted"
bash -n water.sbatch
ok $? "... bash -n accepts it"
s=$(ls results/water/submit-*.sbatch 2>/dev/null | head -1)
[ -n "$s" ] && cmp -s "$s" water.sbatch
ok $? "... the script printed is the one written in RESULTS/water/"

# A job without a site: none of the site's lines.
cat >plain.conf <<'JOB'
job = "plain"
command = "hostname"
ranks_per_node = 2
gpus_per_rank = 0
JOB
run "$GPURUN" submit plain.conf --dry-run
expect_rc 0 "submit --dry-run of a job without a site"
! grep -q -e '^module' -e 'GPURUN_SCRATCH' -e '^# Site' -e '--cpus-per-task' "$TMP/out"
ok $? "... no module load, scratch, site lines or --cpus-per-task"

# ---- the real path, with a fake sbatch ------------------------------------

mkdir "$TMP/bin"
cat >"$TMP/bin/sbatch" <<'FAKE'
#!/bin/sh
printf '%s\n' "$@" >"$FAKE_SBATCH_ARGS"
# Another user's move, between gpurun's write and sbatch's read: every
# script in the folder is replaced by name.
for f in results/water/submit-*.sbatch; do
    rm -f "$f" && printf '#!/bin/bash\necho swapped\n' >"$f"
done
# sbatch reads the file named last, else its standard input.
s=-
for a; do s=$a; done
if [ "$s" = --parsable ] || [ "$s" = - ]; then cat; else cat "$s"; fi >"$FAKE_SBATCH_ARGS.script"
echo 777
FAKE
chmod +x "$TMP/bin/sbatch"
FAKE_SBATCH_ARGS=$TMP/sbatch.args
export FAKE_SBATCH_ARGS
PATH=$TMP/bin:$PATH run "$GPURUN" submit water.conf
expect_rc 0 "submit with a (fake) sbatch on PATH"
contains "$TMP/out" "Submitted batch job 777" "... prints the job id"
head -1 "$TMP/sbatch.args" | grep -qx -- '--parsable'
ok $? "... sbatch got --parsable"
[ "$(cat "$TMP/sbatch.args")" = --parsable ]
ok $? "... and no path: the script comes on its standard input"
grep -qx "module load 'cuda/12.4'" "$TMP/sbatch.args.script" && grep -qx '#SBATCH --account=proj-example' \
    "$TMP/sbatch.args.script"
ok $? "... a script with the site's lines and modules"
! grep -q swapped "$TMP/sbatch.args.script"
ok $? "... what gpurun wrote, not a file swapped in by name before sbatch read it"
rm -f "$TMP/sbatch.args"
PATH=$TMP/bin:$PATH run "$GPURUN" submit bad-template.conf
expect_rc 2 "a wrong template with a (fake) sbatch: exit 2"
[ ! -e "$TMP/sbatch.args" ]
ok $? "... sbatch never called"

# The batch script is mode 0600 whatever the umask (issue 11, item 13).
(umask 0 && "$GPURUN" submit water.conf --dry-run >/dev/null 2>"$TMP/err")
s=$(sed -n 's/^gpurun: batch script written to \(.*\); not submitted.*/\1/p' "$TMP/err")
[ -n "$s" ] && [ "$(stat -c %a "$s")" = 600 ]
ok $? "the batch script is mode 0600, even with umask 0"

# A results folder others can write into is refused (issue 11, HIGH 1).
rm -f "$TMP/sbatch.args"
chmod 0777 results/water
PATH=$TMP/bin:$PATH run "$GPURUN" submit water.conf
expect_rc 2 "a results folder everyone can write: exit 2"
contains "$TMP/err" "results/water is writable by everyone without the sticky bit" "... said so, the folder named"
[ ! -e "$TMP/sbatch.args" ]
ok $? "... sbatch never called"
chmod 0755 results/water
# ... the results folder itself too, as run checks it on the node (before,
# only the job folder was checked, and run refused what submit had sent).
mkdir -m 0777 "$TMP/w/open"
run "$GPURUN" submit water.conf --dry-run --set results="$TMP/w/open"
expect_rc 2 "submit: a results folder everyone can write, without the sticky bit: exit 2"
contains "$TMP/err" "open is writable by everyone without the sticky bit" "... said so, the results folder named"
[ ! -e "$TMP/w/open/water" ]
ok $? "... and nothing made in it"
# A job folder that is a symlink (planted in a shared sticky results folder)
# is refused, not followed: nothing is written where it points.
mkdir -m 1777 "$TMP/w/sticky"
mkdir "$TMP/w/elsewhere"
ln -s "$TMP/w/elsewhere" "$TMP/w/sticky/water"
run "$GPURUN" submit water.conf --dry-run --set results="$TMP/w/sticky"
expect_rc 2 "submit: a job folder that is a symlink: exit 2"
contains "$TMP/err" "water: cannot open: it is a symlink" "... said so"
[ -z "$(ls -A "$TMP/w/elsewhere")" ]
ok $? "... and no script written where it points"

# Site sbatch items: one option each (issue 11, item 13).
mkdir -p "$TMP/w2/sites"
printf '%s\n' 'description = "two options in one item"' 'scheduler = "slurm"' \
    'sbatch = { "--qos=normal",' '           "--qos=normal --partition=debug" }' >"$TMP/w2/sites/two.conf"
printf 'job = "two"\ncommand = "true"\nsite = "two"\nranks_per_node = 1\ngpus_per_rank = 0\n' >"$TMP/w2/job.conf"
run "$GPURUN" submit "$TMP/w2/job.conf" --dry-run
expect_rc 2 "a site sbatch item with two options: exit 2"
contains "$TMP/err" "$TMP/w2/sites/two.conf:3: key 'sbatch', item 2: '--qos=normal --partition=debug'" \
    "... the site file, line, key and item named"

# Every documented name in a job's own command passes submit's check as it
# passes run's (fuzz finding a), whatever the job folder's name.
mkdir -p "$TMP/n b'c"
printf '%s\n' 'command = "/bin/echo ${job_dir} ${run_dir} ${ranks} ${job} ${nodes}"' 'ranks_per_node = 2' \
    'gpus_per_rank = 0' >"$TMP/n b'c/names.conf"
run "$GPURUN" submit "$TMP/n b'c/names.conf" --dry-run
expect_rc 0 "submit: \${job_dir}, \${run_dir}, \${ranks} in a job's command pass the check"

done_testing
