#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A resource manager a site adds without rebuilding gpurun (issue 29 §2):
# `make install DESTDIR=...` installs the plugin interfaces (<gpurun/rm.h>,
# launcher.h, monitor.h, error.h) and gpurun-plugin.pc; tests/fake_rm.c,
# built outside the tree with `pkg-config --cflags gpurun-plugin`, is
# rm_fake.so in a folder of $GPURUN_PLUGIN_PATH.  Then gpurun, as built:
# takes its name in a job file (launcher = "fakerun"), a site profile
# (scheduler = "fake") and --set, with did-you-mean for a misspelt one and
# the names present listed; runs ranks through its launch command, each
# rank finding its number in the manager's own variables (FAKE_TASK_RANK,
# through GPURUN_RANK_VARS); picks it for launcher = auto inside its
# allocation (FAKE_JOB), with the GPUs it names; writes and submits its
# batch scripts; shows its doctor line; and refuses one built for another
# interface version, saying so.  A monitor's name is checked too.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

for tool in pkg-config cc; do
    if ! command -v $tool >/dev/null 2>&1; then
        echo "1..0 # SKIP $tool not found"
        exit 0
    fi
done
unset MAKEFLAGS MFLAGS MAKELEVEL GPURUN_PLUGIN_PATH FAKE_JOB FAKE_GPUS SLURM_JOB_ID FLUX_URI
CC=${LIBGPURUN_CC:-cc}

# ---- the installed interface ------------------------------------------------------
DEST=$TMP/dest
make -C "$top_builddir" install DESTDIR="$DEST" >"$TMP/install.log" 2>&1
ok $? "make install DESTDIR=$DEST"
pc=$(find "$DEST" -name gpurun-plugin.pc -path '*/pkgconfig/*' | head -1)
inc=$(find "$DEST" -name rm.h -path '*/gpurun/*' | head -1)
[ -n "$pc" ] && [ -n "$inc" ] && [ -f "${inc%/rm.h}/launcher.h" ] && [ -f "${inc%/rm.h}/error.h" ] &&
    [ -f "${inc%/rm.h}/monitor.h" ]
ok $? "installed: gpurun-plugin.pc and <gpurun/rm.h>, launcher.h, monitor.h, error.h"
if [ -z "$pc" ] || [ -z "$inc" ]; then
    done_testing
    exit 1
fi
# The .pc file names the configured prefix; DESTDIR moved it.
prefix=$(sed -n 's/^prefix=//p' "$pc")
cflags=$(PKG_CONFIG_PATH=${pc%/*} pkg-config --define-variable=prefix="$DEST$prefix" --cflags gpurun-plugin)
plugindir=$(PKG_CONFIG_PATH=${pc%/*} pkg-config --variable=plugindir gpurun-plugin)
[ "$plugindir" = "$prefix/lib/gpurun" ] || [ -n "$plugindir" ]
ok $? "pkg-config --variable=plugindir gpurun-plugin: $plugindir"
PLUG=$TMP/plugins
mkdir -p "$PLUG" "$TMP/bad"
# shellcheck disable=SC2086 # cflags are words
$CC -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror $cflags -fPIC -shared -o "$PLUG/rm_fake.so" \
    "$top_srcdir/tests/fake_rm.c" 2>"$TMP/cc.err"
ok $? "tests/fake_rm.c builds against the installed headers alone, as rm_fake.so"
sed 's/^/#   /' "$TMP/cc.err" | head -5
# shellcheck disable=SC2086
$CC -std=c11 -D_GNU_SOURCE $cflags -fPIC -shared -DFAKE_ABI_DELTA=1 -o "$TMP/bad/rm_old.so" \
    "$top_srcdir/tests/fake_rm.c"
ok $? "... and for another interface version, as rm_old.so"

# ---- names -------------------------------------------------------------------------
cd "$TMP" || exit 1
cat >"$TMP/job.conf" <<'EOF'
command = "sh -c 'echo rank=$GPURUN_RANK local=$GPURUN_LOCAL_RANK task=$FAKE_TASK_RANK'"
launcher = "fakerun"
ranks_per_node = 2
gpus_per_rank = 0
EOF
run "$GPURUN" run "$TMP/job.conf" --dry-run
expect_rc 2 "without the plugin, launcher = \"fakerun\" is refused (exit 2)"
contains "$TMP/err" "job.conf:2: key 'launcher': 'fakerun' is not one of auto, mpirun, srun" \
    "... naming the file, the line and the launchers present"
export GPURUN_PLUGIN_PATH=$PLUG
run "$GPURUN" run "$TMP/job.conf" --dry-run --set launcher=fakerum
expect_rc 2 "with it, a misspelt --set launcher=fakerum is refused"
contains "$TMP/err" "(did you mean 'fakerun'?)" "... with the nearest name, the plugin's launch command"
run "$GPURUN" run "$TMP/job.conf" --dry-run --set monitor=nvmll
expect_rc 2 "monitor = nvmll: refused"
contains "$TMP/err" "key 'monitor': 'nvmll' is not one of auto, none, nvml, rocm_smi (did you mean 'nvml'?)" \
    "... with the monitors present (every built-in one) and the nearest"
run "$GPURUN" run "$TMP/job.conf" --dry-run --set monitor=rocm_smi
expect_rc 0 "monitor = rocm_smi, a built-in monitor, is a monitor"
run "$GPURUN" run "$TMP/job.conf" --dry-run --set fake.queue=debug
expect_rc 0 "the manager's own section of the job file (fake.queue) is a key"
run "$GPURUN" run "$TMP/job.conf" --dry-run --set fakr.queue=debug
expect_rc 2 "... a misspelt one is not"
contains "$TMP/err" "(did you mean 'fake.queue'?)" "... and the nearest section is named"

# ---- its launch command -----------------------------------------------------------------
run "$GPURUN" run "$TMP/job.conf" --dry-run
expect_rc 0 "launcher = \"fakerun\": a dry run"
contains "$TMP/out" "FAKE_TASK_RANK=1 " "... one process per rank, told its rank the manager's way"
run "$GPURUN" run "$TMP/job.conf" --quiet
expect_rc 0 "the job runs through the plugin's launch command"
rd=$(ls -d "$TMP"/results/job/*/ | head -1)
[ "$(rank_output "$rd" 1)" = "rank=1 local=1 task=1" ]
ok $? "rank 1 found its rank and local rank in FAKE_TASK_RANK/FAKE_TASK_LOCAL ($(rank_output "$rd" 1))"
jq -e '.launcher == "fakerun"' "$rd/record.json" >/dev/null
ok $? "the record names the launcher"

# ---- auto inside its allocation ------------------------------------------------------------
run env FAKE_JOB=7 FAKE_GPUS=0 "$GPURUN" run "$TMP/job.conf" --dry-run --set launcher=auto
expect_rc 0 "launcher = auto inside a fake allocation"
contains "$TMP/out" "# launcher: fakerun: inside Fake allocation 7" "... picks its launch command, saying why"
contains "$TMP/out" "# allocation: Fake GPUs 0" "... and plans with the GPUs it names"

# ---- batch scripts and submission -------------------------------------------------------------
mkdir -p "$TMP/sites/sites" "$TMP/bin"
printf 'description = "d"\nscheduler = "fake"\npartition = "short"\n' >"$TMP/sites/sites/fakesite.conf"
printf 'description = "d"\nscheduler = "fakr"\n' >"$TMP/sites/sites/typo.conf"
printf '#!/bin/sh\ncat >"%s/submitted"\necho 4242\n' "$TMP" >"$TMP/bin/fakesubmit"
chmod +x "$TMP/bin/fakesubmit"
export GPURUN_TEMPLATE_PATH=$TMP/sites
run "$GPURUN" submit "$TMP/job.conf" --dry-run --set site=typo --set launcher=auto
expect_rc 2 "a site profile's misspelt scheduler: exit 2"
contains "$TMP/err" "key 'scheduler': 'fakr' is not one of slurm, flux, pbs, fake, none (did you mean 'fake'?)" \
    "... listing the managers present"
run "$GPURUN" submit "$TMP/job.conf" --dry-run --set site=fakesite --set launcher=auto --set fake.mem=4G
expect_rc 0 "submit --dry-run for a site whose scheduler is the plugin"
contains "$TMP/out" "#FAKE nodes=1 tasks=2 gpus=0" "... the manager's directives for the layout"
contains "$TMP/out" "#FAKE mem=4G" "... the job's fake { } section"
contains "$TMP/out" "#FAKE queue=short" "... the site's partition"
contains "$TMP/out" "exec '$GPURUN' run '$TMP/job.conf'" "... gpurun's body"
ls "$TMP"/results/job/submit-*.fake >/dev/null 2>&1
ok $? "... written as submit-TIME.fake, the manager's suffix"
run env PATH="$TMP/bin:$PATH" "$GPURUN" submit "$TMP/job.conf" --set launcher=fakerun
expect_rc 0 "submit with the job's launcher fakerun: the fake manager takes it"
contains "$TMP/out" "Submitted batch job 4242" "... the id its submit command gave"
grep -q '^#FAKE nodes=1' "$TMP/submitted"
ok $? "... and the script reached fakesubmit on its standard input"

# A scan through the plugin: a job array per size (interface version 2).
printf 'command = "echo ${x}"\nlauncher = "fakerun"\ngpus_per_rank = 0\nscan { ranks_per_node = {1, 2}\n params.x = {a, b} }\n' \
    >"$TMP/scan.conf"
run "$GPURUN" submit "$TMP/scan.conf" --dry-run
[ "$rc" -eq 0 ] && [ "$(grep -c '^#FAKE nodes=1 tasks=[12] gpus=0$' "$TMP/out")" -eq 2 ] &&
    grep -qx '#FAKE array=1,2' "$TMP/out" && grep -qx '#FAKE array=3,4' "$TMP/out" &&
    [ "$(grep -c "^exec .* --configuration \"\${FAKE_TASK}\"\$" "$TMP/out")" -eq 2 ]
ok $? "a 2x2 scan through the plugin: two job arrays of its own, each task its configuration from FAKE_TASK"

# ---- doctor, and a plugin of another interface version ---------------------------------------------
run "$GPURUN" doctor
contains "$TMP/out" "Fake              not inside one" "gpurun doctor shows the plugin's line"
export GPURUN_PLUGIN_PATH=$PLUG:$TMP/bad
printf 'description = "d"\nscheduler = "old"\n' >"$TMP/sites/sites/old.conf"
run "$GPURUN" submit "$TMP/job.conf" --dry-run --set site=old --set launcher=auto
expect_rc 3 "a manager built for another interface version: refused (exit 3)"
contains "$TMP/err" "old: resource manager plugin interface version 4, gpurun needs 3" "... saying so"

done_testing
