#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The house's floors (issue 41): plugins use the library only.  No built-in
# plugin's object calls a function that launcher/run defines (nm on the
# objects of this build), and no plugin includes a header of launcher/run
# or launcher/cli: what a plugin calls is in launcher/lib
# (plugin_support.h, installed).  The library includes nothing above it.
. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"

build=$(cd "$(dirname "$GPURUN")/.." && pwd)
top_srcdir=$(cd "$top_srcdir" && pwd)
command -v nm >/dev/null 2>&1 || { echo "1..0 # SKIP nm is not installed"; exit 0; }
ls "$build"/launcher/run/*.o >/dev/null 2>&1 || { echo "1..0 # SKIP no objects in $build/launcher/run"; exit 0; }

# Every function the objects of launcher/run define.
nm -g --defined-only "$build"/launcher/run/*.o 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u >"$TMP/run.syms"
[ -s "$TMP/run.syms" ]
ok $? "launcher/run's objects define functions ($(wc -l <"$TMP/run.syms"))"

# Each plugin object's undefined symbols that run/ defines (the SPANK plugin
# is Slurm's, loaded by slurmd: it links the public library alone).
n=0
: >"$TMP/calls"
for o in $(find "$build/plugins" -name '*.o' ! -path '*/.libs/*' ! -name '*spank*' | sort); do
    n=$((n + 1))
    nm -u "$o" | awk '{ print $NF }' | sort -u | comm -12 - "$TMP/run.syms" | sed "s#^#${o#"$build"/}: #" >>"$TMP/calls"
done
[ "$n" -gt 0 ] && [ ! -s "$TMP/calls" ]
ok $? "no plugin object ($n) calls a function of launcher/run$(head -5 "$TMP/calls" | sed "1s/^/: /" | tr "\n" " " | cut -c1-200)"

# Headers: a plugin's includes name no header of launcher/run or launcher/cli.
( cd "$top_srcdir/launcher/run" && ls *.h; cd "$top_srcdir/launcher/cli" && ls *.h 2>/dev/null ) | sort -u >"$TMP/upper.h"
grep -rhoE '^#include "[^"]+"' "$top_srcdir/plugins" --include='*.c' --include='*.h' | sed 's/.*"\(.*\)"/\1/' |
    sed 's#.*/##' | sort -u | comm -12 - "$TMP/upper.h" >"$TMP/inc"
[ ! -s "$TMP/inc" ]
ok $? "no plugin includes a header of launcher/run or launcher/cli$(tr '\n' ' ' <"$TMP/inc")"

# The library: no include of launcher/run, launcher/cli or a plugin's header.
( cd "$top_srcdir/plugins" && find . -name '*.h' | sed 's#.*/##' ) | sort -u >"$TMP/plug.h"
cat "$TMP/upper.h" "$TMP/plug.h" | sort -u >"$TMP/above.h"
grep -rhoE '^#include "[^"]+"' "$top_srcdir/launcher/lib" --include='*.c' --include='*.h' | sed 's/.*"\(.*\)"/\1/' |
    sed 's#.*/##' | sort -u | comm -12 - "$TMP/above.h" >"$TMP/libinc"
[ ! -s "$TMP/libinc" ]
ok $? "launcher/lib includes nothing above it$(tr '\n' ' ' <"$TMP/libinc")"

# One seam, whole (issue 41): no Slurm name (its variables, programs,
# sections) in the code of launcher/, comments aside: plugins/slurm owns
# them (the built-in managers' list is plugins/managers.def).  What is left
# is named here with why (FILE: NAME): doctor's and gpudirect's fixes name
# Slurm's settings as advice only.
allowed='launcher/run/doctor.c: Slurm
launcher/lib/gpudirect.c: Slurm'
: >"$TMP/slurm"
for f in $(cd "$top_srcdir" && find launcher -name '*.[ch]' | sort); do
    # the code without its comments (cpp keeps strings, drops comments)
    cpp -fpreprocessed -P -w "$top_srcdir/$f" 2>/dev/null | sed 's/%s/ /g' |
        grep -oiE 'SLURM_[A-Z_]+|gpurun_rm_slurm|\bslurm\b|\bsrun\b|\bsbatch\b|#SBATCH|\bsacct[a-z]*|\bsqueue\b|\bscontrol\b|slurmstepd' |
        sort -u | sed "s#^#$f: #" >>"$TMP/slurm"
done
printf '%s\n' "$allowed" | sort >"$TMP/slurm.allowed"
sort -u "$TMP/slurm" | comm -23 - "$TMP/slurm.allowed" >"$TMP/slurm.left"
[ ! -s "$TMP/slurm.left" ]
ok $? "no Slurm name in launcher/'s code$(head -8 "$TMP/slurm.left" | sed '1s/^/: /' | tr '\n' ' ' | cut -c1-400)"

# Monitors say what they handle (issue 41): no monitor's name in the code of
# launcher/ (the built-in ones are listed in plugins/monitors.def); hwloc's
# own names of NVML's OS devices ("nvml0") are the topology's, not a monitor.
: >"$TMP/mon"
for f in $(cd "$top_srcdir" && find launcher -name '*.[ch]' | sort); do
    cpp -fpreprocessed -P -w "$top_srcdir/$f" 2>/dev/null |
        grep -oE '"nvml"|"rocm_smi"|gpurun_monitor_(nvml|rocm_smi)' | sort -u | sed "s#^#$f: #" >>"$TMP/mon"
done
printf '%s\n' 'launcher/lib/gpu_partitions.c: "nvml"' 'launcher/lib/topology.c: "nvml"' >"$TMP/mon.allowed"
sort -u "$TMP/mon" | comm -23 - "$TMP/mon.allowed" >"$TMP/mon.left"
[ ! -s "$TMP/mon.left" ]
ok $? "no monitor named in launcher/'s code$(head -8 "$TMP/mon.left" | sed '1s/^/: /' | tr '\n' ' ' | cut -c1-400)"

done_testing
