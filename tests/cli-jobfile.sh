#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The job file through the command line (SPEC §2): only regular files of
# sane size are read, a bad one is exit 2 with `FILE:LINE: ...` on stderr,
# and nothing hangs.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

topo=$FIXTURES/2s-4gpu-2nic.xml

# A job file must never make gpurun wait; timeout(1) is not POSIX, so the
# limit is applied only where it exists.
limit=
if command -v timeout >/dev/null 2>&1; then
    limit="timeout 10"
fi

plan() { # plan JOBFILE: `gpurun plan` of it on the fixture
    run $limit "$GPURUN" plan "$1" --topology "$topo"
}

mkdir "$TMP/dir.conf"
plan "$TMP/dir.conf"
expect_rc 2 "a directory as job file: exit 2"
contains "$TMP/err" "not a regular file" "a directory as job file: says so"

if mkfifo "$TMP/fifo.conf"; then
    plan "$TMP/fifo.conf"
    expect_rc 2 "a FIFO as job file: exit 2 at once, no wait for a writer"
    contains "$TMP/err" "not a regular file" "a FIFO as job file: says so"
else
    skip "mkfifo failed: no FIFO check"
    skip "mkfifo failed: no FIFO check"
fi

plan /dev/zero
expect_rc 2 "/dev/zero as job file: exit 2"
contains "$TMP/err" "not a regular file" "/dev/zero as job file: says so"

plan "$TMP/missing.conf"
expect_rc 2 "a missing job file: exit 2"
contains "$TMP/err" "$TMP/missing.conf" "a missing job file: named"

dd if=/dev/zero of="$TMP/big.conf" bs=1024 count=1025 2>/dev/null # 1 KiB over
plan "$TMP/big.conf"
expect_rc 2 "a job file over 1 MiB: exit 2"
contains "$TMP/err" "more than the 1048576 allowed" "a job file over 1 MiB: says so"

cat >"$TMP/bad.conf" <<'EOF'
# a typo on line 3
nodes = 1
rank_per_node = 2
EOF
plan "$TMP/bad.conf"
expect_rc 2 "an unknown key: exit 2"
contains "$TMP/err" \
    "gpurun: $TMP/bad.conf:3: unknown key 'rank_per_node' (did you mean 'ranks_per_node'?)" \
    "an unknown key: file, line, key and the valid one near it"

cat >"$TMP/dup.conf" <<'EOF'
nodes = 1
ranks_per_node = 2
nodes = 1
EOF
plan "$TMP/dup.conf"
expect_rc 2 "a duplicate key: exit 2"
contains "$TMP/err" "gpurun: $TMP/dup.conf:3: key 'nodes': given twice (first on line 1)" \
    "a duplicate key: both lines"

cat >"$TMP/good.conf" <<'EOF'
# Two ranks of one GPU each: the 2-socket, 4-GPU fixture has room.
command = "./app -n ${nsteps}"
ranks_per_node = 2
gpus_per_rank = 1
timeout = "30m"
params { nsteps = 100 }
EOF
plan "$TMP/good.conf"
expect_rc 0 "a valid job file: exit 0"
test -s "$TMP/out"
ok $? "a valid job file: a plan on stdout"

# A params key that the job's template neither declares nor uses is an
# unknown key (SPEC §2): exit 2 on its line, before anything starts.
dry() { # dry JOBFILE [ARGS]: `gpurun run --dry-run` of it on the fixture
    f=$1
    shift
    GPURUN_TOPOLOGY=$topo GPURUN_TEMPLATE_PATH=$top_srcdir/templates \
        run $limit "$GPURUN" run "$f" --dry-run --results "$TMP/results" "$@"
}

cat >"$TMP/typo.conf" <<'EOF'
template = "gromacs"
params {
    tpr   = "bench.tpr"
    nstep = 10
}
EOF
dry "$TMP/typo.conf"
expect_rc 2 "a params key the template does not use: exit 2"
contains "$TMP/err" \
    "gpurun: $TMP/typo.conf:4: key 'params.nstep': not used: template 'gromacs' has no '\${nstep}' and no default of that name (did you mean 'params.nsteps'?)" \
    "a params key the template does not use: file, line, key and the one near it"
test ! -e "$TMP/results"
ok $? "a params key the template does not use: nothing started"

sed 's/nstep = 10/nsteps = 10/' "$TMP/typo.conf" >"$TMP/fixed.conf"
dry "$TMP/fixed.conf" --set params.pmee=gpu
expect_rc 2 "a params key from --set the template does not use: exit 2"
contains "$TMP/err" \
    "gpurun: --set params.pmee=gpu: key 'params.pmee': not used: template 'gromacs' has no '\${pmee}' and no default of that name (did you mean 'params.pme'?)" \
    "a params key from --set the template does not use: named as the --set"

cat >"$TMP/cmd.conf" <<'EOF'
command  = "true ${n}"
launcher = "local"
ranks_per_node = 2
params { n = 1  m = 2 }
EOF
dry "$TMP/cmd.conf"
expect_rc 2 "a params key the command does not use: exit 2"
contains "$TMP/err" "gpurun: $TMP/cmd.conf:4: key 'params.m': not used: the command has no '\${m}'" \
    "a params key the command does not use: file, line and key"
dry "$TMP/cmd.conf" --set 'command=true ${n} ${m}'
expect_rc 0 "... used by the command --set gives it: exit 0"

# ${name} is expanded into words (issue 11, item 9): a job in a folder whose
# name has a blank and an apostrophe runs a shipped template's setup step and
# command, and each value stays one piece of its word.
odd="$TMP/a b'c"
mkdir -p "$odd" "$TMP/bin"
echo "input for hpcc" >"$odd/hpccinf.txt"
cat >"$TMP/bin/hpcc" <<'EOF'
#!/bin/sh
# a stand-in for hpcc: its input must be here, its table goes where hpcc's would
cmp -s hpccinf.txt "$GPURUN_TEST_INPUT" || exit 9
cat >hpccoutf.txt <<'OUT'
T/V                N    NB     P     Q               Time                 Gflops
--------------------------------------------------------------------------------
WR11C2R4        2000   128     1     1               0.86              6.225e+00
                1 tests completed and passed residual checks,
                0 tests completed and failed residual checks,
OUT
EOF
cat >"$TMP/bin/args" <<'EOF'
#!/bin/sh
printf '[%s]\n' "$@" >args.txt
EOF
chmod 755 "$TMP/bin/hpcc" "$TMP/bin/args"
cat >"$odd/bench.conf" <<'EOF'
template = "hpl"
launcher = "local"
ranks_per_node = 1
gpus_per_rank = 0
EOF
run env PATH="$TMP/bin:$PATH" GPURUN_TEST_INPUT="$odd/hpccinf.txt" "$GPURUN" run "$odd/bench.conf" --dry-run
expect_rc 0 "a shipped template's setup in a folder named \"a b'c\": the dry run works"
run env PATH="$TMP/bin:$PATH" GPURUN_TEST_INPUT="$odd/hpccinf.txt" "$GPURUN" run "$odd/bench.conf" --quiet
expect_rc 0 "... and so does the run: the setup copied \${job_dir}/\${input}, the program read it"
d=$(ls -d "$odd"/results/bench/*Z-*/ 2>/dev/null | head -1)
cmp -s "$odd/hpccinf.txt" "${d}hpccinf.txt"
ok $? "... the setup step's copy is in the run folder"

# Every documented name works in a job's own command (fuzz finding a), and a
# ${run_dir} in a dry run is the placeholder as one word (fuzz finding b).
cat >"$odd/names.conf" <<'EOF'
command = "args ${job_dir} ${run_dir} ${ranks} x${job_dir}x '${job}' ${extra}"
launcher = "local"
ranks_per_node = 1
gpus_per_rank = 0
params { extra = "-n 5" }
EOF
run env PATH="$TMP/bin:$PATH" "$GPURUN" run "$odd/names.conf" --dry-run
expect_rc 0 "\${job_dir}, \${run_dir}, \${ranks} in a job's command: the dry run works"
contains "$TMP/out" "/results/names/<run-id>'" "... the run folder's placeholder is one quoted word"
run env PATH="$TMP/bin:$PATH" "$GPURUN" run "$odd/names.conf" --quiet
expect_rc 0 "... and so does the run"
d=$(ls -d "$odd"/results/names/*Z-*/ 2>/dev/null | head -1)
printf '[%s]\n' "$odd" "${d%/}" 1 "x${odd}x" names -n 5 >"$TMP/want.txt"
cmp -s "$TMP/want.txt" "${d}args.txt"
ok $? "... each value is one argument, blank and apostrophe kept; a params list alone gives its words"
mkdir -p "$TMP/tpl"
cat >"$TMP/tpl/rundir.conf" <<'EOF'
description = "a template whose command names the run folder"
command     = "true ${run_dir}/out ${job_dir}"
EOF
printf 'template = "rundir"\nlauncher = "local"\nranks_per_node = 1\ngpus_per_rank = 0\n' >"$TMP/tpl/j.conf"
run "$GPURUN" run "$TMP/tpl/j.conf" --dry-run
expect_rc 0 "a template's \${run_dir}: the dry run works"

# A back-reference in any of a template's regexes (issue 37, item 4): glibc
# matches "(.*)(.*)(.*)\1\2\3x" on one line of 400 characters for minutes,
# past any timeout; it is exit 2 when the template is read, naming file,
# line and key.
br='(.*)(.*)(.*)\\1\\2\\3x'
for key in failure progress version fom; do
    {
        printf 'description = "a back-reference in %s"\ncommand = "true"\n' "$key"
        case $key in
        failure) printf 'failure = { "^Fatal", "%s" }\n' "$br" ;;
        fom) printf 'fom f {\n    regex = "%s"\n}\n' "$br" ;;
        *) printf '%s = "%s"\n' "$key" "$br" ;;
        esac
    } >"$TMP/tpl/br-$key.conf"
    printf 'template = "br-%s"\nlauncher = "local"\nranks_per_node = 1\ngpus_per_rank = 0\n' "$key" \
        >"$TMP/tpl/br-$key.job.conf"
    run $limit "$GPURUN" run "$TMP/tpl/br-$key.job.conf" --dry-run
    expect_rc 2 "a back-reference in a template's $key regex: exit 2"
    case $key in
    failure) where="3: key 'failure', item 2" ;;
    fom) where="4: key 'fom.f.regex'" ;;
    *) where="3: key '$key'" ;;
    esac
    contains "$TMP/err" "br-$key.conf:$where: '(.*)(.*)(.*)\1\2\3x' is too costly to match: a back-reference" \
        "... naming the file, line and key"
done

# env values (issue 11, item 7; fuzz finding c): UTF-8 only, and ${VAR} is
# the launching environment's, an unset one an error.
printf 'command = "true"\nlauncher = "local"\nenv {\n  A = "x\377y"\n}\n' >"$TMP/latin1.conf"
dry "$TMP/latin1.conf"
expect_rc 2 "an env value that is not UTF-8: exit 2"
contains "$TMP/err" "gpurun: $TMP/latin1.conf:4: key 'env.A': the value is not UTF-8" \
    "... file, line and key named"
cat >"$TMP/envvar.conf" <<'EOF'
command = "true"
launcher = "local"
env {
  A = "<${GPURUN_TEST_FROM}>"
  B = "${GPURUN_TEST_UNSET_NAME}"
}
EOF
run env -u GPURUN_TEST_UNSET_NAME GPURUN_TEST_FROM=here GPURUN_TOPOLOGY="$topo" "$GPURUN" run "$TMP/envvar.conf" --dry-run
expect_rc 2 "an env value naming an unset variable: exit 2"
contains "$TMP/err" \
    "gpurun: $TMP/envvar.conf:5: key 'env.B': '\${GPURUN_TEST_UNSET_NAME}' is not set in the environment gpurun was started from" \
    "... file, line, key and the variable named"
sed '/GPURUN_TEST_UNSET_NAME/d' "$TMP/envvar.conf" >"$TMP/envset.conf"
run env GPURUN_TEST_FROM=here GPURUN_TOPOLOGY="$topo" "$GPURUN" run "$TMP/envset.conf" --dry-run
expect_rc 0 "an env value naming a set variable: exit 0"
contains "$TMP/out" " A=<here>" "... the ranks get its value, not the text \${...}"

# Job names from the file name (issue 11, item 10) meet the `job` key's rules.
for bad in "..." ".hidden" "-x"; do
    printf 'command = "true"\nlauncher = "local"\n' >"$TMP/$bad.conf"
    dry "$TMP/$bad.conf"
    expect_rc 2 "a job file named '$bad.conf': exit 2"
    contains "$TMP/err" "gpurun: $TMP/$bad.conf: the job name '$bad', taken from the file name, is not a valid job name" \
        "... the file named, and why"
done
printf 'job = "fine"\ncommand = "true"\nlauncher = "local"\n' >"$TMP/....conf"
dry "$TMP/....conf"
expect_rc 0 "... a valid \`job\` key in such a file: exit 0"

# A relative or empty PATH entry (issue 11, item 12): the program is found
# once, against the folder gpurun started in, and that one runs, though the
# ranks start in the run folder.
mkdir -p "$TMP/rel/tools"
printf '#!/bin/sh\necho from-tools >marker.txt\n' >"$TMP/rel/tools/relprog"
printf '#!/bin/sh\necho from-cwd >marker.txt\n' >"$TMP/rel/cwdprog"
chmod 755 "$TMP/rel/tools/relprog" "$TMP/rel/cwdprog"
printf 'command = "relprog"\nlauncher = "local"\nranks_per_node = 1\ngpus_per_rank = 0\n' >"$TMP/rel/rel.conf"
printf 'command = "cwdprog"\nlauncher = "local"\nranks_per_node = 1\ngpus_per_rank = 0\n' >"$TMP/rel/cwd.conf"
run sh -c 'cd "$1" && PATH="tools:$PATH" exec "$2" run rel.conf --dry-run' sh "$TMP/rel" "$GPURUN"
contains "$TMP/out" "# program: $TMP/rel/tools/relprog" "a relative PATH entry: the program is named by its absolute path"
run sh -c 'cd "$1" && PATH="tools:$PATH" exec "$2" run rel.conf --quiet' sh "$TMP/rel" "$GPURUN"
expect_rc 0 "... and it runs, from the run folder"
grep -qx from-tools "$TMP"/rel/results/rel/*Z-*/marker.txt 2>/dev/null
ok $? "... the program that ran is the one found"
run sh -c 'cd "$1" && PATH="$PATH:" exec "$2" run cwd.conf --dry-run' sh "$TMP/rel" "$GPURUN"
contains "$TMP/out" "# program: $TMP/rel/cwdprog" "an empty PATH entry is the folder gpurun started in, made absolute"

# Templates and site profiles outside gpurun's installed folder (issue 11,
# item 8): found in a folder others can write, or owned by another user, they
# are refused; the installed ones are gpurun's own.
own() { # own DIR: a job folder with a template and a site profile of its own
    mkdir -p "$1/sites"
    printf 'description = "mine"\ncommand = "true"\n' >"$1/mine.conf"
    printf 'description = "my site"\nscheduler = "slurm"\n' >"$1/sites/mysite.conf"
    printf 'template = "mine"\nlauncher = "local"\nranks_per_node = 1\ngpus_per_rank = 0\n' >"$1/job.conf"
    printf 'command = "true"\nsite = "mysite"\nlauncher = "local"\nranks_per_node = 1\ngpus_per_rank = 0\n' \
        >"$1/sited.conf"
}
own "$TMP/trust"
dry "$TMP/trust/job.conf"
expect_rc 0 "a template of mine in my job folder: accepted"
chmod 0777 "$TMP/trust"
dry "$TMP/trust/job.conf"
expect_rc 2 "... in a folder everyone can write: exit 2"
contains "$TMP/err" "template 'mine' found in $TMP/trust/mine.conf: refused: the folder $TMP/trust is writable by everyone without the sticky bit" \
    "... said so, the template and folder named"
chmod 1777 "$TMP/trust"
dry "$TMP/trust/job.conf"
expect_rc 0 "... with the sticky bit (no one replaces my file): accepted"
chmod 0755 "$TMP/trust"
chmod 0664 "$TMP/trust/mine.conf"
dry "$TMP/trust/job.conf"
expect_rc 2 "a template its group can write: exit 2"
chmod 0644 "$TMP/trust/mine.conf"
chmod 0775 "$TMP/trust/sites"
dry "$TMP/trust/sited.conf"
expect_rc 2 "a site profile in a sites/ folder its group can write: exit 2"
contains "$TMP/err" "site 'mysite' found in $TMP/trust/sites/mysite.conf: refused: the folder $TMP/trust/sites is writable by its group" \
    "... said so"
chmod 0755 "$TMP/trust/sites"
own "$TMP/tpath"
mv "$TMP/tpath/mine.conf" "$TMP/tpath/other.conf"
mkdir -p "$TMP/shared-tpl"
sed 's/mine/other/' "$TMP/tpath/job.conf" >"$TMP/trust/other-job.conf"
cp "$TMP/tpath/other.conf" "$TMP/shared-tpl/other.conf"
chmod 0777 "$TMP/shared-tpl"
run env GPURUN_TOPOLOGY=$topo GPURUN_TEMPLATE_PATH="$TMP/shared-tpl" "$GPURUN" run "$TMP/trust/other-job.conf" --dry-run
expect_rc 2 "a template in a \$GPURUN_TEMPLATE_PATH folder everyone can write: exit 2"
contains "$TMP/err" "found in $TMP/shared-tpl/other.conf: refused" "... said so"
if [ "$(id -u)" -eq 0 ]; then
    chmod 0755 "$TMP/shared-tpl"
    chown 4242:4242 "$TMP/shared-tpl/other.conf"
    run env GPURUN_TOPOLOGY=$topo GPURUN_TEMPLATE_PATH="$TMP/shared-tpl" "$GPURUN" run "$TMP/trust/other-job.conf" --dry-run
    expect_rc 2 "a template owned by another user: exit 2"
    contains "$TMP/err" "refused: the file is owned by another user (uid 4242)" "... said so"
    chown 4242:4242 "$TMP/shared-tpl"
    chown 0:0 "$TMP/shared-tpl/other.conf"
    run env GPURUN_TOPOLOGY=$topo GPURUN_TEMPLATE_PATH="$TMP/shared-tpl" "$GPURUN" run "$TMP/trust/other-job.conf" --dry-run
    expect_rc 2 "a template in a folder another user owns: exit 2"
    contains "$TMP/err" "is owned by another user (uid 4242)" "... said so"
    chown 0:0 "$TMP/shared-tpl"
else
    skip "not root: no file of another user to make"
    skip "not root: no file of another user to make"
    skip "not root: no folder of another user to make"
    skip "not root: no folder of another user to make"
fi

# ---- a job file copied from a web page or saved by a Windows editor --------
# A UTF-8 byte-order mark and CRLF line ends are read; typographic quotes
# and invisible spaces outside quotes are named, exit 2.
printf '\357\273\277job = "pasted"\r\ncommand = "/bin/true"\r\nranks_per_node = 2\r\ngpus_per_rank = 1\r\n' \
    >"$TMP/bom.conf"
plan "$TMP/bom.conf"
expect_rc 0 "a job file with a byte-order mark and CRLF line ends: planned"
contains "$TMP/out" "Plan for" "... the plan is shown"
printf 'command = \342\200\234/bin/true\342\200\235\nranks_per_node = 2\n' >"$TMP/quotes.conf"
plan "$TMP/quotes.conf"
expect_rc 2 "typographic quotes around the command: exit 2"
contains "$TMP/err" "quotes.conf:1: key 'command': '“' (U+201C, a typographic quote) in an unquoted value" \
    "... names the file, line, key and character"
printf 'command = "/bin/true"\nranks_per_node\302\240= 2\n' >"$TMP/nbsp.conf"
plan "$TMP/nbsp.conf"
expect_rc 2 "a no-break space after a key: exit 2"
contains "$TMP/err" "nbsp.conf:2: key 'ranks_per_node': a no-break space (U+00A0) in it, outside quotes" \
    "... names the file, line, key and character"


# A bare --set name that is a parameter of the job or its template is said
# with its params. prefix (exit 2); a job key's near miss still gets the key.
dry "$TMP/fixed.conf" --set nsteps=100
expect_rc 2 "--set nsteps=100 (the job's parameter, without params.): exit 2"
contains "$TMP/err" "gpurun: --set nsteps=100: unknown key 'nsteps' (did you mean 'params.nsteps'?)" \
    "... did you mean 'params.nsteps'"
dry "$TMP/fixed.conf" --set npme=1
expect_rc 2 "--set npme=1 (a default of the template only): exit 2"
contains "$TMP/err" "gpurun: --set npme=1: unknown key 'npme' (did you mean 'params.npme'?)" \
    "... did you mean 'params.npme', from the template's defaults"
dry "$TMP/fixed.conf" --set nstep=100
contains "$TMP/err" "gpurun: --set nstep=100: unknown key 'nstep' (did you mean 'params.nsteps'?)" \
    "--set nstep=100: the parameter near it"
dry "$TMP/fixed.conf" --set node=2
expect_rc 2 "--set node=2: exit 2"
contains "$TMP/err" "gpurun: --set node=2: unknown key 'node' (did you mean 'nodes'?)" "... did you mean 'nodes'"
dry "$TMP/fixed.conf" --set zzqx=2
if grep -q "did you mean" "$TMP/err"; then ok 1 "--set zzqx=2: nothing near, nothing suggested"
else ok 0 "--set zzqx=2: nothing near, nothing suggested"; fi

done_testing
