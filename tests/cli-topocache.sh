#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The topology cache (launcher/lib/topocache.c): the live node's discovery
# kept between runs in a folder of the user's own; what it gives is what a
# discovery gives; it is used only where it fits, and never when someone
# else's file or folder stands in its place: where another user made its
# folder first, it is said once and the cache kept in the user's own cache
# folder.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

unset GPURUN_TOPOLOGY GPURUN_TOPOLOGY_CACHE SLURM_JOB_ID
for v in $(env | sed -n 's/^\(HWLOC_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export XDG_RUNTIME_DIR="$TMP/rt"
mkdir -p "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
cache=$XDG_RUNTIME_DIR/gpurun-$(id -u)
ncpus=$(getconf _NPROCESSORS_ONLN)

# config_reads FILE: PCI config-space opens in an strace -e openat log.
config_reads() { grep -c '/sys/bus/pci/devices/[^"]*/config"' "$1"; }
has_strace=$(command -v strace >/dev/null 2>&1 && strace -qq -o /dev/null true 2>/dev/null && echo 1 || echo 0)

run "$GPURUN" topo --json
expect_rc 0 "a first live topo"
cp "$TMP/out" "$TMP/first.json"
f=$(ls "$cache" 2>/dev/null | head -1)
[ -n "$f" ] && [ "$(stat -c %a "$cache")" = 700 ] && [ "$(stat -c %a "$cache/$f")" = 600 ] &&
    [ "$(stat -c %u "$cache/$f")" = "$(id -u)" ]
ok $? "it keeps the node's export: $cache/$f, folder 0700, file 0600, ours"
grep -q '<topology version=' "$cache/$f"
ok $? "... an hwloc export"

run env GPURUN_TOPOLOGY_CACHE=0 "$GPURUN" topo --json
cmp -s "$TMP/out" "$TMP/first.json"
ok $? "topo --json from the cache is a live discovery's"
run "$GPURUN" topo --json
cmp -s "$TMP/out" "$TMP/first.json"
ok $? "... and again"
run "$GPURUN" topo --export "$TMP/cached.xml"
run env GPURUN_TOPOLOGY_CACHE=0 "$GPURUN" topo --export "$TMP/live.xml"
cmp -s "$TMP/cached.xml" "$TMP/live.xml"
ok $? "topo --export from the cache is byte for byte a live discovery's"

if [ "$has_strace" = 1 ]; then
    strace -f -qq -e trace=openat -o "$TMP/st.cached" "$GPURUN" topo >/dev/null 2>&1
    strace -f -qq -e trace=openat -o "$TMP/st.live" env GPURUN_TOPOLOGY_CACHE=0 "$GPURUN" topo >/dev/null 2>&1
    [ "$(config_reads "$TMP/st.cached")" -eq 0 ] && [ "$(config_reads "$TMP/st.live")" -gt 0 ]
    ok $? "from the cache no PCI config space is read ($(config_reads "$TMP/st.cached") against $(config_reads "$TMP/st.live"))"
    # A virtual network interface (another job's veth, a container's
    # bridge, a test cluster's namespaces) that appears is no reason to
    # discover the node again: hwloc never sees one.
    dummy=gtc$$
    if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null 2>&1 &&
        ip link add "$dummy" type veth peer name "${dummy}p" 2>/dev/null; then
        strace -f -qq -e trace=openat -o "$TMP/st.dummy" "$GPURUN" topo >/dev/null 2>&1
        ip link del "$dummy" 2>/dev/null
        [ "$(config_reads "$TMP/st.dummy")" -eq 0 ]
        ok $? "... also after a virtual network interface appeared ($(config_reads "$TMP/st.dummy") PCI reads)"
    else
        skip "not root, or no ip/veth interfaces: no virtual interface made"
    fi
    strace -f -qq -e trace=openat -o "$TMP/st.hwloc" env HWLOC_COMPONENTS=-gl "$GPURUN" topo >/dev/null 2>&1
    [ "$(config_reads "$TMP/st.hwloc")" -gt 0 ]
    ok $? "an HWLOC_ variable (a site's choice of what to discover): a live discovery"
    # A narrower mask in a cgroup that holds the whole node (Slurm's
    # task/affinity, taskset): hwloc's allowed sets are the cgroup's, so the
    # cache fits.  Known only where this cgroup's cpuset files can be read.
    cg=$(cat /proc/self/cpuset 2>/dev/null)
    cg_cpus=
    for f in "/sys/fs/cgroup/cpuset$cg/cpuset.effective_cpus" "/sys/fs/cgroup$cg/cpuset.cpus.effective"; do
        [ -n "$cg" ] && [ -r "$f" ] && cg_cpus=$(cat "$f") && break
    done
    if [ "$ncpus" -lt 2 ] || ! command -v taskset >/dev/null 2>&1; then
        skip "one cpu or no taskset: no narrower mask to try"
        skip "... its export"
    elif [ "$cg_cpus" != "$(cat /sys/devices/system/cpu/online)" ]; then
        skip "this cgroup's cpuset ('$cg', cpus '$cg_cpus') is not the whole node or cannot be read"
        skip "... its export"
    else
        strace -f -qq -e trace=openat -o "$TMP/st.mask" taskset -c 0 "$GPURUN" topo >/dev/null 2>&1
        [ "$(config_reads "$TMP/st.mask")" -eq 0 ]
        ok $? "taskset -c 0 in a cgroup of the whole node ($cg: $cg_cpus): the cache"
        taskset -c 0 "$GPURUN" topo --export "$TMP/mask.xml" >/dev/null 2>&1
        cmp -s "$TMP/mask.xml" "$TMP/live.xml"
        ok $? "... and its export is byte for byte the unbound live discovery's"
    fi
    # A cpuset cgroup of one CPU (cgroup v1, root): hwloc leaves the other
    # CPUs out, so not the cache.
    v1=/sys/fs/cgroup/cpuset
    if [ "$ncpus" -gt 1 ] && [ "$(id -u)" -eq 0 ] && [ "$cg" = / ] && [ -w "$v1/cgroup.procs" ] &&
        mkdir "$v1/gpurun-test-$$" 2>/dev/null; then
        echo 0 >"$v1/gpurun-test-$$/cpuset.cpus" && cat "$v1/cpuset.mems" >"$v1/gpurun-test-$$/cpuset.mems" &&
            sh -c 'echo $$ >"$1/cgroup.procs" && exec strace -f -qq -e trace=openat -o "$2" "$3" topo --export "$4"' \
                sh "$v1/gpurun-test-$$" "$TMP/st.cg" "$GPURUN" "$TMP/cg.xml" >/dev/null 2>&1
        rmdir "$v1/gpurun-test-$$"
        [ "$(config_reads "$TMP/st.cg")" -gt 0 ] && ! cmp -s "$TMP/cg.xml" "$TMP/live.xml"
        ok $? "in a cpuset cgroup of cpu 0: a live discovery, which differs from the whole node's"
    else
        skip "not root, not in cgroup v1's root cpuset, or no cpuset cgroup can be made: no narrower cgroup"
    fi
else
    skip "strace cannot trace here: PCI reads not counted"
    skip "... HWLOC_ variable"
    skip "... narrower mask"
    skip "... its export"
    skip "... narrower cgroup"
fi

# A run: the ranks and the record as with a live discovery.
cat >"$TMP/t.conf" <<'JOB'
template = "generic"
params { program = "/bin/echo"  args = "FOM: 1.5" }
launcher = "local"
ranks_per_node = 2
oversubscribe = true
JOB
run "$GPURUN" run "$TMP/t.conf" --quiet --results "$TMP/res"
expect_rc 0 "gpurun run with the cache"
d=$(ls -d "$TMP"/res/*/*Z-*/ | tail -1)
[ "$(jq -r .state "$d/record.json")" = ok ] && cmp -s "$d/topology.xml" "$TMP/live.xml"
ok $? "... its record is ok, and its topology.xml is the live discovery's"

# Not ours, not a file, not sound: never read, never followed.
f=$(ls "$cache" | head -1)
printf 'not xml' >"$cache/$f"
run "$GPURUN" topo --json
[ "$rc" -eq 0 ] && cmp -s "$TMP/out" "$TMP/first.json"
ok $? "a cached file hwloc cannot load: a live discovery instead"
# Another node's export in our own file: not this node.
f=$(ls "$cache" | head -1)
cp "$FIXTURES/2s-4gpu-2nic.xml" "$cache/$f"
chmod 600 "$cache/$f"
run "$GPURUN" topo --json
[ "$rc" -eq 0 ] && cmp -s "$TMP/out" "$TMP/first.json"
ok $? "a cached export of another host (HostName fix-2s4g): a live discovery"
# Another node's export, group-writable (someone else may have written it).
f=$(ls "$cache" | head -1)
cp "$FIXTURES/2s-4gpu-2nic.xml" "$cache/$f"
chmod 620 "$cache/$f"
run "$GPURUN" topo --json
[ "$rc" -eq 0 ] && cmp -s "$TMP/out" "$TMP/first.json"
ok $? "a group-writable cached file is not read: a live discovery"
rm -f "$cache/$f"
ln -s "$TMP/first.json" "$cache/$f"
run "$GPURUN" topo --json
[ "$rc" -eq 0 ] && cmp -s "$TMP/out" "$TMP/first.json" && [ -L "$cache/$f" ] && jq -e .gpurun_topo "$TMP/first.json" >/dev/null
ok $? "a symlink in the file's place is not followed, not replaced, and what it points to is untouched"
rm -f "$cache/$f"
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
    # Another user's folder in our cache's place (made before we ran).
    other=$TMP/rt2
    mkdir -p "$other/gpurun-0" "$TMP/h0"
    chmod 755 "$other" && chown 65534:65534 "$other/gpurun-0" && chmod 700 "$other/gpurun-0"
    run env XDG_RUNTIME_DIR="$other" HOME="$TMP/h0" "$GPURUN" topo --json
    [ "$rc" -eq 0 ] && cmp -s "$TMP/out" "$TMP/first.json" && [ -z "$(ls -A "$other/gpurun-0")" ]
    ok $? "a cache folder of another user's is not used: nothing written there"
    # An unprivileged user: a folder and file of its own, not root's.
    mkdir -p "$TMP/rt3"
    chown 65534:65534 "$TMP/rt3"
    chmod 700 "$TMP/rt3"
    chmod 755 "$TMP"
    setpriv --reuid=65534 --regid=65534 --clear-groups env XDG_RUNTIME_DIR="$TMP/rt3" "$GPURUN" topo --json \
        >"$TMP/u.json" 2>"$TMP/u.err"
    cmp -s "$TMP/u.json" "$TMP/first.json" && [ "$(stat -c %u "$TMP/rt3/gpurun-65534")" = 65534 ] &&
        [ "$(stat -c %a "$TMP/rt3/gpurun-65534")" = 700 ]
    ok $? "uid 65534 keeps its own cache (0700, its own) and sees the same node"

    # uid 65534 makes another user's cache folder first, in a folder anyone
    # can write as /dev/shm (1777).  The victim, uid $victim with a home of
    # its own, is told once and keeps its cache in its own cache folder
    # (before: the cache was off for good, and nothing was said).
    victim=$((40000 + $$ % 20000))
    shm=$TMP/shm
    vhome=$TMP/vhome
    mkdir -p "$shm" "$vhome" "$TMP/vres"
    chmod 1777 "$shm"
    chown "$victim:$victim" "$vhome" "$TMP/vres"
    chmod 700 "$vhome"
    setpriv --reuid=65534 --regid=65534 --clear-groups mkdir -m 755 "$shm/gpurun-$victim"
    as_victim() { setpriv --reuid="$victim" --regid="$victim" --clear-groups env HOME="$vhome" XDG_RUNTIME_DIR="$shm" "$@"; }
    as_victim "$GPURUN" topo --json >"$TMP/v.json" 2>"$TMP/v.err"
    vcache=$vhome/.cache/gpurun
    want="gpurun: warning: the topology cache folder $shm/gpurun-$victim is owned by another user (uid 65534), who made it first: not used; the cache is kept in $vcache instead"
    [ "$(grep -c 'topology cache' "$TMP/v.err")" = 1 ] && grep -qF "$want" "$TMP/v.err"
    ok $? "uid $victim, its cache folder made first by uid 65534: one warning naming it, its owner and where the cache goes"
    [ -n "$(cat "$TMP/v.err")" ] || diag "nothing was said"
    vf=$(ls "$vcache" 2>/dev/null | head -1)
    cmp -s "$TMP/v.json" "$TMP/first.json" && [ -n "$vf" ] && [ "$(stat -c %u:%a "$vcache")" = "$victim:700" ] &&
        [ "$(stat -c %u:%a "$vcache/$vf")" = "$victim:600" ] && [ -z "$(ls -A "$shm/gpurun-$victim")" ]
    ok $? "... the same node, cached in $vcache (0700, its file 0600, the victim's), nothing in the squatted folder"
    if [ "$has_strace" = 1 ]; then
        # Once more first: what the name hashes (network interfaces among
        # it) may change while other tests run beside this one.
        as_victim "$GPURUN" topo >/dev/null 2>&1
        strace -f -qq -e trace=openat -o "$TMP/st.victim" setpriv --reuid="$victim" --regid="$victim" --clear-groups \
            env HOME="$vhome" XDG_RUNTIME_DIR="$shm" "$GPURUN" topo >/dev/null 2>&1
        [ "$(config_reads "$TMP/st.victim")" -eq 0 ]
        ok $? "... and the next command reads it: no PCI config space read ($(config_reads "$TMP/st.victim"))"
    else
        skip "strace cannot trace here: the next command's reads not counted"
    fi
    # A run over two simulated hosts (bench/sim-mpirun): each host's first
    # rank step plans its host from the topology too; the warning is the
    # command's, said once, not once more by every rank step.
    mkdir -p "$TMP/simbin"
    ln -sf "$(cd "$top_srcdir" && pwd)/bench/sim-mpirun" "$TMP/simbin/mpirun"
    printf 'job = "sim"\ncommand = "/bin/true"\nlauncher = "mpirun"\nnodes = 2\nranks_per_node = 2\nthreads_per_rank = 1\noversubscribe = true\n' >"$TMP/sim.conf"
    chmod 644 "$TMP/sim.conf"
    as_victim PATH="$TMP/simbin:$PATH" "$GPURUN" run "$TMP/sim.conf" --quiet --results "$TMP/vres" >"$TMP/v.out" 2>"$TMP/v.err"
    vrc=$?
    n=$(grep -c 'topology cache' "$TMP/v.err")
    # The rank steps' own stderr goes to the run folder's launcher.out.
    steps=$(cat "$TMP"/vres/sim/*Z-*/launcher.out 2>/dev/null | grep -c 'topology cache')
    [ "$vrc" -eq 0 ] && [ "$n" = 1 ] && [ "$steps" = 0 ] && [ -s "$TMP"/vres/sim/*Z-*/plan.sim0002.json ]
    ok $? "gpurun run on two simulated hosts as uid $victim: exit $vrc, the warning said $n time(s) by gpurun and $steps by the rank steps that planned the hosts (1 and 0 wanted)"
else
    skip "not root or no setpriv: no second user"
    skip "... uid 65534"
    for i in 1 2 3 4; do skip "not root or no setpriv: no second user to make the victim's cache folder"; done
fi

run env GPURUN_TOPOLOGY_CACHE=0 XDG_RUNTIME_DIR="$TMP/rt4" "$GPURUN" topo --json
[ "$rc" -eq 0 ] && [ ! -e "$TMP/rt4" ]
ok $? "GPURUN_TOPOLOGY_CACHE=0: nothing kept"

done_testing
