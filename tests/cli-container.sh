#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Containers (issue 15): 2 ranks under `local` and `mpirun` in real
# Charliecloud and Podman containers built here from files on the machine
# (a static busybox and the test's own probe script, no registry); each rank
# reports from inside the container its cpus, its memory policy and its
# environment, checked against the plan.  Apptainer is checked by its
# command line (dry run, and a fake `apptainer` that records its arguments).
# Then the bad inputs: exit 2 (or 3 for a missing runtime), nothing started.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

BUSYBOX=$(command -v busybox 2>/dev/null || true)
case "$BUSYBOX" in /*) ;; *) BUSYBOX=/bin/busybox ;; esac
# A static one (ldd refuses it): the image has no libraries.
if [ ! -x "$BUSYBOX" ] || ldd "$BUSYBOX" >/dev/null 2>&1; then
    echo "1..0 # SKIP no static busybox for the test image (Debian: busybox-static)"
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
unset GPURUN_TOPOLOGY
: "${USER:=$(id -un 2>/dev/null || echo gpurun)}" # ch-run needs it
export USER
has_mpirun=$(command -v mpirun >/dev/null 2>&1 && echo 1 || echo 0)
# gpurun-rank, the containers' entry: it reports the binding from inside
# when it is statically linked (it then runs in any image).
RANK=$(realpath "$(dirname "$GPURUN")/gpurun-rank" 2>/dev/null || true)
RANKDIR=$(dirname "$RANK")
inside=0
if [ -x "$RANK" ] && ! ldd "$RANK" >/dev/null 2>&1; then
    inside=1
fi

# The image: a directory for ch-run; the same folder as a tarball for podman.
img=$TMP/img
mkdir -p "$img/bin" "$img/etc" "$img/dev" "$img/proc" "$img/sys" "$img/tmp" "$img/home" "$img/mnt"
cp "$BUSYBOX" "$img/bin/busybox"
ln -s busybox "$img/bin/sh"
for f in passwd group hosts resolv.conf; do : >"$img/etc/$f"; done
# The probe: what the rank's process in the container really got.
cat >"$img/probe" <<'EOF'
#!/bin/busybox sh
cpus=$(/bin/busybox sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
mem=$(/bin/busybox head -1 /proc/self/numa_maps | /bin/busybox cut -d' ' -f2)
echo "probe rank=$GPURUN_RANK cpus=$cpus mem=$mem omp=$OMP_NUM_THREADS foo=$FOO pwd=$(pwd)"
echo "value 4$GPURUN_RANK" >"probe.$GPURUN_RANK.log"
EOF
chmod 755 "$img/probe"

mkdir -p "$TMP/job"
# job NAME RUNTIME IMAGE LAUNCHER: a 2-rank job running the probe.
job() {
    cat >"$TMP/job/$1.conf" <<JOB
command = "/probe"
launcher = "$4"
ranks_per_node = 2
threads_per_rank = 1
env { FOO = "bar" }
container { image = "$3"  runtime = "$2" }
JOB
}

# check_probe RUN_DIR WHAT: each rank's report from inside the container
# matches plan.json, and it ran in the run folder (mounted at its own path).
check_probe() {
    i=0
    bad=""
    while [ "$i" -lt 2 ]; do
        line=$(rank_output "$1" "$i" | grep '^probe ' | head -1)
        want_cpus=$(jq -r ".ranks[$i].cpus" "$1/plan.json")
        want_mem=bind:$(jq -r ".ranks[$i].numa | map(tostring) | join(\",\")" "$1/plan.json")
        want_omp=$(jq -r ".ranks[$i].threads" "$1/plan.json")
        want="probe rank=$i cpus=$want_cpus mem=$want_mem omp=$want_omp foo=bar pwd=$1"
        [ "$line" = "$want" ] || bad="$bad [rank $i: got '$line', wanted '$want']"
        [ -f "$1/probe.$i.log" ] || bad="$bad [rank $i wrote no probe.$i.log in the run folder]"
        i=$((i + 1))
    done
    ok "$([ -z "$bad" ] && echo 0 || echo 1)" "$2: each rank's cpus, memory policy and environment, from inside, match the plan"
    [ -z "$bad" ] || diag "$bad"
    check_reported "$1" "$2"
}

# check_reported RUN_DIR WHAT: the binding each rank reported (record.json)
# is the one its program saw inside, and says it was read there.
check_reported() {
    if [ "$inside" = 0 ]; then
        skip "$2: binding read inside the container: $RANK is not a static program (configure found no static jansson)"
        return
    fi
    i=0
    bad=""
    while [ "$i" -lt 2 ]; do
        line=$(rank_output "$1" "$i" | grep '^probe ' | head -1)
        seen=$(printf '%s\n' "$line" | sed -n 's/.* cpus=\([^ ]*\) mem=\([^ ]*\) .*/\1 \2/p')
        got=$(jq -r ".bindings[$i] | .binding_from + \" \" + .cpus + \" \" + (if .membind == \"bind\" then \"bind:\" + .numa else .membind end)" "$1/record.json")
        [ "$got" = "inside $seen" ] || bad="$bad [rank $i: reported '$got', its program saw '$seen']"
        i=$((i + 1))
    done
    ok "$([ -z "$bad" ] && echo 0 || echo 1)" "$2: each rank's reported binding is read inside the container, as its program sees it"
    [ -z "$bad" ] || diag "$bad"
}

last_run() { ls -d "$TMP/job/results/$1"/*Z-*/ | tail -1 | sed 's:/$::'; }

# ---- Charliecloud, for real ------------------------------------------------
if command -v ch-run >/dev/null 2>&1; then
    job ch charliecloud ../img local
    if [ "$inside" = 1 ]; then
        # ch-run makes no mount point in its read-only image: without a
        # folder for gpurun-rank there, the rank steps report from outside.
        run "$GPURUN" run "$TMP/job/ch.conf" --quiet
        expect_rc 0 "ch-run, the image without a folder for gpurun-rank: 2 ranks run"
        case $RANKDIR in
            /tmp/*) # a build tree under /tmp: ch-run shares the host's /tmp, no mount point needed
                jq -e '.container.binding_from == "inside" and ([.bindings[].binding_from] == ["inside", "inside"])' "$(last_run ch)/record.json" >/dev/null
                ok $? "... gpurun-rank under /tmp, which ch-run shares with the host: the record says the binding is read inside" ;;
            *)
                jq -e --arg dir "$RANKDIR" '.container.binding_from == "rank step" and (.container.inside_note | contains("no folder " + $dir)) and ([.bindings[] | has("binding_from")] == [false, false])' "$(last_run ch)/record.json" >/dev/null
                ok $? "... the record says the binding is the rank step's, and why" ;;
        esac
        mkdir -p "$img$RANKDIR" # the mount point, as a site's image would have it
    fi
    run "$GPURUN" run "$TMP/job/ch.conf" --quiet
    expect_rc 0 "ch-run: 2 ranks under local"
    d=$(last_run ch)
    check_probe "$d" "ch-run, local"
    [ "$(jq -r '.container.runtime + " " + .container.image' "$d/record.json")" = "charliecloud $img" ]
    ok $? "ch-run: the record names the runtime and the image's path"
    if [ "$has_mpirun" = 1 ]; then
        run "$GPURUN" run "$TMP/job/ch.conf" --set launcher=mpirun --quiet
        expect_rc 0 "ch-run: 2 ranks under mpirun"
        check_probe "$(last_run ch)" "ch-run, mpirun"
    else
        skip "ch-run under mpirun: mpirun not found (Debian: openmpi-bin)"
    fi
else
    skip "Charliecloud: ch-run not found (Debian: charliecloud)"
fi

# ---- Podman, for real: a unique image name, removed at the end ---------------
if command -v podman >/dev/null 2>&1; then
    name=localhost/gpurun-test-$$-$(date +%s):probe
    trap 'podman rmi -f "$name" >/dev/null 2>&1; rm -rf "$TMP"' EXIT INT TERM
    tar -C "$img" -cf "$TMP/img.tar" .
    if podman import -q "$TMP/img.tar" "$name" >/dev/null 2>"$TMP/podman.err"; then
        job pod podman "$name" local
        run "$GPURUN" run "$TMP/job/pod.conf" --quiet
        expect_rc 0 "podman: 2 ranks under local"
        d=$(last_run pod)
        check_probe "$d" "podman, local"
        jq -e '.container.runtime == "podman" and (.container.digest | startswith("sha256:"))' "$d/record.json" >/dev/null
        ok $? "podman: the record names the runtime and the image's content digest"
        # A podman that confines every container to rank 0's cpus (as a
        # site's containers.conf or wrapper may): rank 1's program runs on
        # other cpus than the rank step bound, and its report says so.
        cpu0=$(jq -r '.ranks[0].cpus' "$d/plan.json")
        if [ "$cpu0" = "$(jq -r '.ranks[1].cpus' "$d/plan.json")" ]; then
            skip "podman confined to other cpus: both ranks are planned on cpus $cpu0 here"
        elif [ "$inside" = 1 ]; then
            mkdir -p "$TMP/podbin"
            real=$(command -v podman)
            printf '#!/bin/sh\nif [ "$1" = run ]; then shift; exec %s run --cpuset-cpus=%s "$@"; fi\nexec %s "$@"\n' "$real" "$cpu0" "$real" >"$TMP/podbin/podman"
            chmod 755 "$TMP/podbin/podman"
            PATH=$TMP/podbin:$PATH run "$GPURUN" run "$TMP/job/pod.conf" --quiet
            d=$(last_run pod)
            seen=$(rank_output "$d" 1 | grep '^probe ' | head -1 | sed -n 's/.* cpus=\([^ ]*\) .*/\1/p')
            jq -e --arg seen "$seen" --arg cpu0 "$cpu0" '.bindings[1] | .binding_from == "inside" and .cpus == $seen and $seen == $cpu0 and .match == false and .outside.cpus != $cpu0 and (.warnings | any(startswith("inside the container: planned cpus")))' "$d/record.json" >/dev/null
            ok $? "podman --cpuset-cpus=$cpu0: rank 1 reports the cpus its program has inside ($seen), not the rank step's, and a mismatch"
        else
            skip "podman confined to other cpus: $RANK is not a static program"
        fi
        if [ "$has_mpirun" = 1 ]; then
            run "$GPURUN" run "$TMP/job/pod.conf" --set launcher=mpirun --quiet
            expect_rc 0 "podman: 2 ranks under mpirun"
            check_probe "$(last_run pod)" "podman, mpirun"
        else
            skip "podman under mpirun: mpirun not found (Debian: openmpi-bin)"
        fi
    else
        ok 1 "podman import of the test image: $(head -c 300 "$TMP/podman.err")"
    fi
else
    skip "Podman: podman not found (Debian: podman)"
fi

# ---- Apptainer: its command line, through a fake that records it -----------
if command -v apptainer >/dev/null 2>&1; then
    diag "apptainer is installed, but these checks use a fake one: the test builds no SIF image"
else
    skip "a real apptainer: not installed; its command lines are checked through the dry run and a fake apptainer only"
fi
mkdir -p "$TMP/bin"
cat >"$TMP/bin/apptainer" <<EOF
#!/bin/sh
# Records its arguments, then runs the program on the host: exec [--nv|--rocm] [--bind M]... --pwd D IMAGE PROG...
printf '%s\n' "\$*" >>"$TMP/apptainer.args"
[ "\$1" = exec ] || exit 99
shift
while [ \$# -gt 0 ]; do
    case "\$1" in
    --nv | --rocm) shift ;;
    --bind) shift 2 ;;
    --pwd) cd "\$2" || exit 98; shift 2 ;;
    *) shift; break ;; # the image
    esac
done
# FAKE_NO_ENTRY=1: a runtime that starts the program but not gpurun-rank.
if [ "\$FAKE_NO_ENTRY" = 1 ] && [ "\$2" = --inside ]; then shift 4; fi
exec "\$@"
EOF
chmod 755 "$TMP/bin/apptainer"
cp "$img/probe" "$TMP/job/probe"
sed -i "2,\$ s:/bin/busybox:$BUSYBOX:g; 1s:.*:#!$BUSYBOX sh:" "$TMP/job/probe"
: >"$TMP/job/gromacs.sif"
cat >"$TMP/job/app.conf" <<JOB
command = "./probe"
launcher = "local"
ranks_per_node = 2
threads_per_rank = 1
env { FOO = "bar" }
container { image = "gromacs.sif" }
JOB
PATH=$TMP/bin:$PATH run "$GPURUN" run "$TMP/job/app.conf" --quiet
[ "$rc" -eq 0 ] || { d=$(last_run app); sed "s/^/#   /" "$d/vm.out" | head -5; }
expect_rc 0 "fake apptainer (runtime auto picks it first): 2 ranks under local"
d=$(last_run app)
check_probe "$d" "fake apptainer, local"
want="exec --bind $d:$d --bind $TMP/job:$TMP/job --pwd $d $TMP/job/gromacs.sif $TMP/job/probe"
[ "$inside" = 0 ] || want="exec --bind $RANKDIR:$RANKDIR:ro --bind $d:$d --bind $TMP/job:$TMP/job --pwd $d $TMP/job/gromacs.sif $RANK --inside 3 -- $TMP/job/probe"
[ "$(sed -n 1p "$TMP/apptainer.args")" = "$want" ]
ok $? "apptainer exec: gpurun-rank's folder (read-only), run and job folders bound at their own paths, --pwd the run folder, gpurun-rank the entry, no --nv without GPUs"
if [ "$inside" = 1 ]; then
    FAKE_NO_ENTRY=1 PATH=$TMP/bin:$PATH run "$GPURUN" run "$TMP/job/app.conf" --quiet
    expect_rc 0 "a runtime that does not start gpurun-rank: the ranks still run"
    jq -e '[.bindings[] | .binding_from == "rank step" and .cpus != null and (.warnings | any(startswith("no binding report from inside the container")))] == [true, true]' "$(last_run app)/record.json" >/dev/null
    ok $? "... each rank reports the rank step's binding, saying the inside report never came"
fi
if [ "$has_mpirun" = 1 ]; then
    PATH=$TMP/bin:$PATH run "$GPURUN" run "$TMP/job/app.conf" --set launcher=mpirun --quiet
    expect_rc 0 "fake apptainer: 2 ranks under mpirun"
    check_probe "$(last_run app)" "fake apptainer, mpirun"
else
    skip "fake apptainer under mpirun: mpirun not found (Debian: openmpi-bin)"
fi
[ "$(jq -r .container.runtime "$d/record.json")" = apptainer ]
ok $? "the record names apptainer"
# What the record says of an image file: its size, mtime and inode, and a
# SIF's own ID from its header (the file is not hashed).
{
    printf '#!/usr/bin/env run-singularity\n\0'
    printf 'SIF_MAGIC\0'
    printf '01\0'
    printf '02\0'
    printf '\001\002\003\004\005\006\007\010\011\012\013\014\015\016\017\020'
    head -c 64 /dev/zero
} >"$TMP/job/id.sif"
PATH=$TMP/bin:$PATH run "$GPURUN" run "$TMP/job/app.conf" --quiet --set "container.image=$TMP/job/id.sif"
expect_rc 0 "fake apptainer with a SIF image"
jq -e --argjson size "$(stat -c %s "$TMP/job/id.sif")" --argjson ino "$(stat -c %i "$TMP/job/id.sif")" '.container | .sif_id == "01020304-0506-0708-090a-0b0c0d0e0f10" and .image_file.size == $size and .image_file.inode == $ino and (.image_file.mtime_ns > 0) and .digest == null' "$(last_run app)/record.json" >/dev/null
ok $? "the record names a SIF image by its header's ID and its size, mtime and inode (no digest)"

# GPUs: --nv for NVIDIA ranks, --rocm for AMD ones (dry run on a fixture's topology).
PATH=$TMP/bin:$PATH GPURUN_TOPOLOGY=$FIXTURES/2s-4gpu-2nic.xml run "$GPURUN" run "$TMP/job/app.conf" --dry-run --set ranks_per_node=4 --set gpus_per_rank=1
expect_rc 0 "dry run on a 4-GPU topology"
n=$(grep -c -- ' -- [^ ]*/apptainer exec --nv --bind ' "$TMP/out")
[ "$n" -eq 4 ]
ok $? "dry run: the runtime's command line per rank, with --nv (got $n of 4)"
PATH=$TMP/bin:$PATH GPURUN_TOPOLOGY=$FIXTURES/amd-partitioned.xml run "$GPURUN" run "$TMP/job/app.conf" --dry-run --set ranks_per_node=1 --set gpus_per_rank=1
grep -q -- '/apptainer exec --rocm ' "$TMP/out"
ok $? "dry run: --rocm for AMD GPUs"
PATH=$TMP/bin:$PATH run "$GPURUN" run "$TMP/job/app.conf" --dry-run --set container.runtime=singularity
expect_rc 3 "runtime singularity missing: exit 3"
contains "$TMP/err" "install SingularityCE" "... saying what to install"

# ---- bad input: file, line and key; exit 2; nothing started -------------
bad() { # bad NAME EXPECTED-TEXT DESCRIPTION (the job file written as $TMP/job/NAME.conf)
    PATH=$TMP/bin:$PATH run "$GPURUN" run "$TMP/job/$1.conf"
    expect_rc 2 "$3: exit 2"
    contains "$TMP/err" "$2" "$3: the message names the file, line and key"
    [ ! -d "$TMP/job/results/$1" ]
    ok $? "$3: nothing started"
}
printf 'command = "./probe"\nlauncher = "local"\ncontainer {\n  image = "nothere.sif"\n}\n' >"$TMP/job/noimage.conf"
bad noimage "noimage.conf:4: key 'container.image': the image $TMP/job/nothere.sif does not exist" "an image that does not exist"
printf 'command = "./probe"\ncontainer { image = "gromacs.sif"\n runtime = "podmn" }\n' >"$TMP/job/badrt.conf"
bad badrt "badrt.conf:3: key 'container.runtime': unknown runtime 'podmn' (did you mean 'podman'?)" "an unknown runtime"
printf 'command = "./probe"\nlauncher = "local"\ncontainer {\n  runtime = "podman"\n}\n' >"$TMP/job/noimg.conf"
bad noimg "noimg.conf:4: key 'container.image' missing" "a container block without an image"
mkdir -p "$TMP/data" "$TMP/other"
printf 'command = "./probe"\ncontainer { image = "gromacs.sif"\n mounts = {"%s:/in:ro"} }\n' "$TMP/data" >"$TMP/job/colon.conf"
bad colon "colon.conf:3: key 'container.mounts', item 1" "a mount with ':' in a path"
printf 'command = "./probe"\ncontainer { image = "gromacs.sif"\n mounts = {"%s,x"} }\n' "$TMP/data" >"$TMP/job/comma.conf"
bad comma "comma.conf:3: key 'container.mounts', item 1" "a mount with ',' in a path"
mkdir -p "$TMP/job/sites"
cat >"$TMP/job/sites/uni.conf" <<SITE
description = "test site"
container {
  runtime = "apptainer"
  mounts = {"$TMP/data", "/gpurun-test-not-here/scratch"}
  allowed_mounts = {"$TMP/data", "/gpurun-test-not-here"}
}
SITE
printf 'command = "./probe"\nsite = "uni"\ncontainer { image = "gromacs.sif"\n mounts = {"%s"} }\n' "$TMP/other" >"$TMP/job/outside.conf"
bad outside "outside.conf:4: key 'container.mounts': $TMP/other is outside what the site allows" "a mount outside the site's allowed_mounts"
printf 'command = "./probe"\nsite = "uni"\nlauncher = "local"\nranks_per_node = 1\ncontainer { image = "gromacs.sif" }\n' >"$TMP/job/siteok.conf"
PATH=$TMP/bin:$PATH run "$GPURUN" run "$TMP/job/siteok.conf" --dry-run
expect_rc 0 "a site's container block: its runtime and default mounts"
contains "$TMP/out" "--bind $TMP/job:$TMP/job --bind $TMP/data:$TMP/data --bind /gpurun-test-not-here/scratch:/gpurun-test-not-here/scratch --pwd" "... the site's mount in the command line"
contains "$TMP/out" "apptainer, as the site profile asks" "... and the site's runtime"
contains "$TMP/out" "--bind /gpurun-test-not-here/scratch:/gpurun-test-not-here/scratch" "... a site mount need not exist where the profile is read (it describes the cluster's nodes)"

# ---- a site's policy holds whatever a mount comes from (issue 26) ----------
# Each check below passed on the code before: the template's mounts were
# never checked, a site profile beside the job replaced the installed one,
# and ',' and ':' were looked for only in the file's text, not in what a
# mount resolves to.
# A template beside the job that mounts what the site does not allow.
cat >"$TMP/job/wide.conf" <<TPL
description = "a template that mounts a folder of its choice"
command     = "./probe"
container {
  image  = "gromacs.sif"
  mounts = {"$TMP/other"}
}
TPL
printf 'template = "wide"\nsite = "uni"\nlauncher = "local"\nranks_per_node = 1\n' >"$TMP/job/tplwide.conf"
bad tplwide "$TMP/job/wide.conf:5: key 'container.mounts': $TMP/other is outside what the site allows" \
    "a template's mount outside the site's allowed_mounts"
# The site's own mounts: the same rule.
mkdir -p "$TMP/job2/sites"
cp "$TMP/job/gromacs.sif" "$TMP/job/probe" "$TMP/job2/"
sed "s:\"/gpurun-test-not-here\"}:\"$TMP/data\"}:" "$TMP/job/sites/uni.conf" >"$TMP/job2/sites/uni.conf"
printf 'command = "./probe"\nsite = "uni"\nlauncher = "local"\nranks_per_node = 1\ncontainer { image = "gromacs.sif" }\n' >"$TMP/job2/siteown.conf"
PATH=$TMP/bin:$PATH run "$GPURUN" run "$TMP/job2/siteown.conf" --dry-run
expect_rc 2 "a site's own mount outside its allowed_mounts: exit 2"
contains "$TMP/err" "$TMP/job2/sites/uni.conf:4: key 'container.mounts': /gpurun-test-not-here/scratch is outside what the site allows" \
    "... naming the site profile's line"
# A profile beside the job named like one the administrator installed
# (example-univ: apptainer, /scratch /home /projects only) that allows all:
# it is read (its mounts, its runtime), and the installed allowed_mounts
# still hold.
cat >"$TMP/job2/sites/example-univ.conf" <<SITE
description = "the installed profile, relaxed"
container {
  runtime = "apptainer"
  allowed_mounts = {"/"}
}
SITE
installed=$(cd "$top_srcdir" && pwd -P)/templates/sites/example-univ.conf
printf 'command = "./probe"\nsite = "example-univ"\nlauncher = "local"\nranks_per_node = 1\ncontainer { image = "gromacs.sif"\n mounts = {"%s"} }\n' "$TMP/other" >"$TMP/job2/relaxed.conf"
PATH=$TMP/bin:$PATH run "$GPURUN" run "$TMP/job2/relaxed.conf" --dry-run
expect_rc 2 "sites/example-univ.conf beside the job allowing '/', where one is installed: a mount outside the installed allowed_mounts is exit 2"
contains "$TMP/err" "relaxed.conf:6: key 'container.mounts': $TMP/other is outside what the site allows in containers (allowed_mounts of the installed profile $installed: /scratch, ...; $TMP/job2/sites/example-univ.conf, a profile of the same name, does not replace them)" \
    "... naming the installed profile and the one beside the job"
PATH=$TMP/bin:$PATH GPURUN_TEMPLATE_PATH=$TMP/job2/ run "$GPURUN" run "$TMP/job/outside.conf" --dry-run --set site=example-univ
expect_rc 2 "... the same through \$GPURUN_TEMPLATE_PATH"
contains "$TMP/err" "(allowed_mounts of the installed profile $installed: /scratch, ...;" "... naming the installed profile"
PATH=$TMP/bin:$PATH GPURUN_TEMPLATE_PATH=$TMP/job2/:$(cd "$top_srcdir" && pwd -P)/templates run "$GPURUN" run "$TMP/job/outside.conf" --dry-run --set site=example-univ
expect_rc 2 "... also with the installed folder itself in \$GPURUN_TEMPLATE_PATH"
sed -i 's|^  allowed_mounts = {"/"}|  allowed_mounts = {"/"}\n  mounts = {"'"$TMP/other"'"}|' "$TMP/job2/sites/example-univ.conf"
printf 'command = "./probe"\nsite = "example-univ"\nlauncher = "local"\nranks_per_node = 1\ncontainer { image = "gromacs.sif" }\n' >"$TMP/job2/plain.conf"
PATH=$TMP/bin:$PATH run "$GPURUN" run "$TMP/job2/plain.conf" --dry-run
expect_rc 2 "... its own default mount outside the installed allowed_mounts: exit 2"
contains "$TMP/err" "$TMP/job2/sites/example-univ.conf:5: key 'container.mounts': $TMP/other is outside what the site allows in containers (allowed_mounts of the installed profile" \
    "... naming its line"
sed -i '/^  mounts = /d; s/"apptainer"/"singularity"/' "$TMP/job2/sites/example-univ.conf"
mkdir -p "$TMP/sbin"
cp "$TMP/bin/apptainer" "$TMP/sbin/singularity"
PATH=$TMP/sbin:$PATH run "$GPURUN" run "$TMP/job2/plain.conf" --dry-run
expect_rc 0 "... a job that mounts nothing more runs as before, with the profile beside it"
contains "$TMP/out" "singularity, as the site profile asks" "... whose runtime it takes (singularity; the installed one says apptainer)"
rm "$TMP/job2/sites/example-univ.conf"
# Another user's symlinks in a shared folder the site allows: what a mount
# resolves to is what is checked, and what the runtime is given.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
    chmod 755 "$TMP"
    chmod 1777 "$TMP/data"
    as_other() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
    # x,/etc: Apptainer would read "--bind DATA/evil/x,/etc:..." as two
    # binds, the second the host's /etc; y: "DATA/evil/y:/usr/bin:..."
    # would mount the other user's folder over the container's /usr/bin.
    as_other mkdir -p "$TMP/data/evil/x,/etc" "$TMP/data/evil/y:/usr/bin" "$TMP/data/evil/z \$(id)" \
        "$TMP/data/evil/w^/etc" "$TMP/data/evil/sp "
    as_other ln -s "$TMP/data/evil/w^/etc" "$TMP/data/caret"
    as_other ln -s "$TMP/data/evil/sp " "$TMP/data/space"
    as_other ln -s "$TMP/data/evil/x,/etc" "$TMP/data/comma"
    as_other ln -s "$TMP/data/evil/y:/usr/bin" "$TMP/data/colon"
    as_other ln -s "$TMP/data/evil/z \$(id)" "$TMP/data/dollar"
    as_other ln -s "$TMP/other" "$TMP/data/out"
    for m in comma colon; do
        printf 'command = "./probe"\nsite = "uni"\nlauncher = "local"\nranks_per_node = 1\ncontainer { image = "gromacs.sif"\n mounts = {"%s"} }\n' "$TMP/data/$m" >"$TMP/job/ln$m.conf"
    done
    bad lncomma "lncomma.conf:6: key 'container.mounts': the mount '$TMP/data/comma' resolves to $TMP/data/evil/x,/etc, which holds ','" \
        "uid 65534's symlink in an allowed folder to a path with ',' (apptainer)"
    bad lncolon "lncolon.conf:6: key 'container.mounts': the mount '$TMP/data/colon' resolves to $TMP/data/evil/y:/usr/bin, which holds ':'" \
        "uid 65534's symlink in an allowed folder to a path with ':' (apptainer)"
    ! grep -q "evil" "$TMP/apptainer.args"
    ok $? "... apptainer was never given those paths"
    printf 'command = "./probe"\nsite = "uni"\nlauncher = "local"\nranks_per_node = 1\ncontainer { image = "gromacs.sif"\n mounts = {"%s"} }\n' "$TMP/data/out" >"$TMP/job/lnout.conf"
    bad lnout "lnout.conf:6: key 'container.mounts': $TMP/data/out (which resolves to $TMP/other) is outside what the site allows" \
        "uid 65534's symlink in an allowed folder to a folder outside it"
    # The same through the other runtimes' command lines (fakes on PATH).
    mkdir -p "$TMP/rtbin"
    printf '#!/bin/sh\nexit 0\n' >"$TMP/rtbin/ch-run"
    printf '#!/bin/sh\necho sha256:0\n' >"$TMP/rtbin/podman"
    printf '#!/bin/sh\n[ "$1" = --help ] && echo "      --container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH"\nexit 0\n' >"$TMP/rtbin/srun"
    chmod 755 "$TMP/rtbin/ch-run" "$TMP/rtbin/podman" "$TMP/rtbin/srun"
    for rt in charliecloud podman; do
        img=$TMP/img
        [ "$rt" = podman ] && img=localhost/gpurun-test:probe
        PATH=$TMP/rtbin:$PATH run "$GPURUN" run "$TMP/job/lncolon.conf" --dry-run --set container.runtime=$rt --set "container.image=$img"
        expect_rc 2 "$rt: the symlink to a path with ':': exit 2"
        contains "$TMP/err" "resolves to $TMP/data/evil/y:/usr/bin, which holds ':'" "$rt: ... saying why"
    done
    SLURM_JOB_ID=4242 PATH=$TMP/rtbin:$PATH run "$GPURUN" run "$TMP/job/lncomma.conf" --dry-run --set launcher=srun --set container.runtime=pyxis --set "container.image=nvcr.io#hpc/gromacs:2023.2"
    expect_rc 2 "pyxis: the symlink to a path with ',': exit 2"
    contains "$TMP/err" "resolves to $TMP/data/evil/x,/etc, which holds ','" "pyxis: ... saying why"
    printf 'command = "./probe"\nsite = "uni"\nranks_per_node = 1\ncontainer { image = "nvcr.io#hpc/gromacs:2023.2"\n runtime = "pyxis"\n mounts = {"%s"} }\n' "$TMP/data/dollar" >"$TMP/job/lndollar.conf"
    SLURM_JOB_ID=4242 PATH=$TMP/rtbin:$PATH run "$GPURUN" run "$TMP/job/lndollar.conf" --dry-run --set launcher=srun
    expect_rc 2 "pyxis: the symlink to a path with a blank and '\$(...)' (pyxis writes mounts into a shell script, enroot reads fstab lines): exit 2"
    contains "$TMP/err" "which holds a blank" "... saying why"
    PATH=$TMP/bin:$PATH run "$GPURUN" run "$TMP/job/lndollar.conf" --dry-run --set container.runtime=apptainer --set "container.image=$TMP/job/gromacs.sif"
    expect_rc 0 "apptainer takes that same path (blanks and '\$' are plain characters in its --bind)"
    # Apptainer splits --bind with the regexp ([^,^:]+:?) ('^' too) and
    # trims each piece: DATA/evil/w^/etc would bind /etc, "DATA/evil/sp "
    # DATA/evil/sp.
    for m in caret:"'^'" space:"a space at its end"; do
        printf 'command = "./probe"\nsite = "uni"\nlauncher = "local"\nranks_per_node = 1\ncontainer { image = "gromacs.sif"\n mounts = {"%s"} }\n' "$TMP/data/${m%%:*}" >"$TMP/job/ln${m%%:*}.conf"
        PATH=$TMP/bin:$PATH run "$GPURUN" run "$TMP/job/ln${m%%:*}.conf" --dry-run
        expect_rc 2 "apptainer: uid 65534's symlink to a path with ${m#*:}: exit 2"
        contains "$TMP/err" "which holds ${m#*:}" "... saying why"
    done
    PATH=$TMP/rtbin:$PATH run "$GPURUN" run "$TMP/job/lncaret.conf" --dry-run --set container.runtime=charliecloud --set "container.image=$TMP/img"
    expect_rc 0 "ch-run takes that same path ('^' is a plain character in its --bind)"
    chmod 755 "$TMP/data"
else
    for i in $(seq 1 24); do skip "not root or no setpriv: no second user to plant symlinks"; done
fi

# The results folder is mounted at its own path too: one with ',' would be
# two binds for Apptainer.
PATH=$TMP/bin:$PATH run "$GPURUN" run "$TMP/job/siteok.conf" --dry-run --results "$TMP/res,/etc"
expect_rc 2 "a results folder whose path holds ',' (apptainer): exit 2"
contains "$TMP/err" "the results folder $TMP/res,/etc holds ','" "... saying why"

# ---- a template's container block; --set container.KEY
mkdir -p "$TMP/job/tpl"
: >"$TMP/job/tpl/from-template.sif"
cat >"$TMP/job/boxed.conf" <<TPL
description = "a template that brings its image"
command     = "./probe"
container { image = "tpl/from-template.sif" }
TPL
printf 'template = "boxed"\nlauncher = "local"\nranks_per_node = 1\n' >"$TMP/job/usetpl.conf"
PATH=$TMP/bin:$PATH run "$GPURUN" run "$TMP/job/usetpl.conf" --dry-run
expect_rc 0 "a template's container block"
contains "$TMP/out" "image $TMP/job/tpl/from-template.sif" "... its image, relative to the template's folder"
PATH=$TMP/bin:$PATH run "$GPURUN" run "$TMP/job/usetpl.conf" --dry-run --set "container.image=$TMP/job/gromacs.sif" --set "container.mounts=$TMP/data"
expect_rc 0 "--set container.image and container.mounts"
contains "$TMP/out" "--bind $TMP/data:$TMP/data --pwd" "... the mount given by --set"
contains "$TMP/out" "image $TMP/job/gromacs.sif" "... the job's image over the template's"
PATH=$TMP/bin:$PATH run "$GPURUN" run "$TMP/job/usetpl.conf" --dry-run --set container.runtime=dockr
expect_rc 2 "--set container.runtime=dockr: exit 2"
contains "$TMP/err" "--set container.runtime=dockr: key 'container.runtime': unknown runtime 'dockr'" "... naming the --set"

# ---- submit: the batch script runs gpurun run; its comment shows the runtime's command line
printf 'command = "./probe"\nranks_per_node = 2\ngpus_per_rank = 1\ncontainer { image = "gromacs.sif" }\n' >"$TMP/job/sub.conf"
PATH=$TMP/bin:$PATH run "$GPURUN" submit "$TMP/job/sub.conf" --dry-run
expect_rc 0 "submit --dry-run of a container job"
srd="$TMP/job/results/sub/<run-id>"
if [ "$inside" = 1 ]; then
    contains "$TMP/out" "#   $TMP/bin/apptainer exec --nv --bind $RANKDIR:$RANKDIR:ro --bind $srd:$srd --bind $TMP/job:$TMP/job --pwd $srd $TMP/job/gromacs.sif $RANK --inside 3 -- PROGRAM..." "... the script says the runtime's command line of each rank, gpurun-rank its entry"
else
    contains "$TMP/out" "#   $TMP/bin/apptainer exec --nv --bind $srd:$srd --bind $TMP/job:$TMP/job --pwd $srd $TMP/job/gromacs.sif PROGRAM..." "... the script says the runtime's command line of each rank"
fi
contains "$TMP/out" "run '$TMP/job/sub.conf'" "... and runs the job file with gpurun run on the node"
run "$GPURUN" submit "$TMP/job/outside.conf" --dry-run
expect_rc 2 "submit: a mount outside the site's allowed_mounts is exit 2 there too"

# ---- pyxis: srun --container-image, by its command line (dry runs, a fake srun
# whose --help lists the option); tests/cli-pyxis.sh runs it on the test
# cluster with a fake pyxis plugin.
mkdir -p "$TMP/pbin"
printf '#!/bin/sh\n[ "$1" = --help ] && echo "      --container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH"\nexit 0\n' >"$TMP/pbin/srun"
chmod 755 "$TMP/pbin/srun"
printf 'command = "./probe"\nranks_per_node = 2\ncontainer { image = "nvcr.io#hpc/gromacs:2023.2"\n runtime = "pyxis" }\n' >"$TMP/job/pyx.conf"
rd="$TMP/job/results/pyx/<run-id>"
pmounts="$rd:$rd,$TMP/job:$TMP/job"
[ "$inside" = 0 ] || pmounts="$RANKDIR:$RANKDIR:ro,$pmounts"
SLURM_JOB_ID=4242 PATH=$TMP/pbin:$PATH run "$GPURUN" run "$TMP/job/pyx.conf" --dry-run --set launcher=srun
expect_rc 0 "pyxis under srun: dry run"
contains "$TMP/out" "--export=ALL '--container-image=nvcr.io#hpc/gromacs:2023.2' '--container-mounts=$pmounts' '--container-workdir=$rd' " "... srun gets the image, gpurun-rank's folder read-only, the run and job folders, and the working folder"
grep -q "^srun .*--container-workdir=[^ ]* [^ ]*/gpurun-rank --gpurun [^ ]* --version [^ ]* --run-dir [^ ]* -- $TMP/job/probe\$" "$TMP/out"
ok $? "... and then the rank step, with no per-rank runtime between it and the program"
SLURM_JOB_ID=4242 PATH=$TMP/pbin:$PATH run "$GPURUN" run "$TMP/job/pyx.conf" --dry-run --set launcher=srun --set nodes=2
expect_rc 0 "pyxis on 2 nodes: dry run"
grep '^srun ' "$TMP/out" | cut -d' ' -f1-3 >"$TMP/sruns"
printf 'srun --mpi=none --nodes=2\nsrun --mpi=pmix --nodes=2\n' | cmp -s - "$TMP/sruns"
ok $? "... two srun lines: the planning step, then the container step"
grep -q "^srun --mpi=none --nodes=2 --ntasks=2 --ntasks-per-node=1 .*/gpurun rank --plan-only --run-dir '$rd'\$" "$TMP/out" &&
    ! grep '^srun --mpi=none' "$TMP/out" | grep -q container-image
ok $? "... the planning step: one full gpurun rank --plan-only per node, outside the image"
grep -q '^srun --mpi=pmix --nodes=2 --ntasks=4 .*--container-image=' "$TMP/out"
ok $? "... the container step: all 4 ranks in the image"
SLURM_JOB_ID=4242 PATH=$TMP/pbin:$PATH run "$GPURUN" run "$TMP/job/pyx.conf" --dry-run --set launcher=srun
! grep -q -- '--plan-only' "$TMP/out"
ok $? "pyxis on 1 node: no planning step (gpurun plans its own host)"
SLURM_JOB_ID=4242 PATH=$TMP/pbin:$PATH run "$GPURUN" run "$TMP/job/pyx.conf" --dry-run --set container.runtime=auto
contains "$TMP/out" "container: pyxis, the first runtime found (auto: inside Slurm allocation 4242, srun takes --container-image)" "runtime auto inside an allocation where srun takes --container-image: pyxis"
PATH=$TMP/pbin:$PATH run "$GPURUN" run "$TMP/job/pyx.conf" --dry-run --set launcher=local
expect_rc 2 "pyxis under launcher local: exit 2"
contains "$TMP/err" "pyx.conf:4: key 'container.runtime': pyxis (asked by the job) runs only under launcher = \"srun\"" "... naming the file, line and key"
SLURM_JOB_ID=4242 PATH=$TMP/pbin:$PATH run "$GPURUN" run "$TMP/job/pyx.conf" --dry-run --set launcher=mpirun
expect_rc 2 "pyxis under launcher mpirun, inside an allocation: exit 2"
printf '#!/bin/sh\nexit 0\n' >"$TMP/bin/srun"
chmod 755 "$TMP/bin/srun"
SLURM_JOB_ID=4242 PATH=$TMP/bin:$PATH run "$GPURUN" run "$TMP/job/pyx.conf" --dry-run --set launcher=srun
expect_rc 3 "pyxis where srun takes no --container-image: exit 3"
contains "$TMP/err" "lists no --container-image" "... saying pyxis is not loaded"
SLURM_JOB_ID=4242 PATH=$TMP/bin:$PATH run "$GPURUN" run "$TMP/job/pyx.conf" --dry-run --set launcher=srun --set container.runtime=auto
contains "$TMP/out" "container: apptainer, the first runtime found" "runtime auto where srun takes no --container-image: not pyxis"
rm -f "$TMP/bin/srun"
PATH=$TMP/pbin:$PATH run "$GPURUN" submit "$TMP/job/pyx.conf" --dry-run --set gpus_per_rank=0
expect_rc 0 "submit --dry-run of a pyxis job"
contains "$TMP/out" "#   --container-image=nvcr.io#hpc/gromacs:2023.2 --container-mounts=$pmounts --container-workdir=$rd" "... the script says srun's pyxis options"

# ---- doctor: the runtimes there, and whether GPU passthrough would work
PATH=$TMP/bin:$PATH run "$GPURUN" doctor --json
cp "$TMP/out" "$TMP/doctor.json" # jq_out's run replaces $TMP/out
jq_out '.checks[] | select(.id == "containers") | .detail | test("apptainer [^ ]*/bin/apptainer")'
ok $rc "doctor names the container runtimes it finds"
jq -e '.checks[] | select(.id == "containers") | .detail | test("pyxis") | not' "$TMP/doctor.json" >/dev/null
ok $? "... and not pyxis where srun takes no --container-image"
PATH=$TMP/pbin:$TMP/bin:$PATH run "$GPURUN" doctor --json
jq_out '.checks[] | select(.id == "containers") | .detail | test("pyxis [^ ]*/pbin/srun --container-image")'
ok $rc "doctor names pyxis where srun takes --container-image"
if [ ! -e /dev/nvidiactl ]; then
    PATH=$TMP/bin:$PATH GPURUN_TOPOLOGY=$FIXTURES/2s-4gpu-2nic.xml run "$GPURUN" doctor --json
    jq_out '.checks[] | select(.id == "containers") | .status == "WARN" and (.detail | test("no GPU device nodes"))'
    ok $rc "doctor: GPUs in the topology but no /dev/nvidiactl: GPU passthrough would not work (WARN)"
else
    skip "doctor without GPU device nodes: this machine has /dev/nvidiactl"
fi

# ---- the NGC GROMACS example, as a dry run --------------------------------
ex=$top_srcdir/examples/gromacs-ngc/job.conf
PATH=$TMP/bin:$PATH GPURUN_TOPOLOGY=$FIXTURES/2s-4gpu-2nic.xml run "$GPURUN" run "$ex" --dry-run --set launcher=local
expect_rc 2 "examples/gromacs-ngc without its run input: exit 2"
contains "$TMP/err" "key 'params.tpr': input file 'benchMEM.tpr' (" "... naming it"
fake_tpr "$TMP/benchMEM.tpr"
PATH=$TMP/bin:$PATH GPURUN_TOPOLOGY=$FIXTURES/2s-4gpu-2nic.xml run "$GPURUN" run "$ex" --dry-run --set launcher=local \
    --set params.tpr="$TMP/benchMEM.tpr"
expect_rc 0 "examples/gromacs-ngc: dry run"
n=$(grep -c -- '/apptainer exec --nv --bind ' "$TMP/out")
[ "$n" -eq 2 ]
ok $? "... apptainer's command line for each of its 2 ranks (got $n)"
contains "$TMP/out" "docker://nvcr.io/hpc/gromacs:" "... with the NGC image"

done_testing
