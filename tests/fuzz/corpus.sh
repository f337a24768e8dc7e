#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# corpus.sh TARGET DIR: fill DIR with the seed inputs of a fuzz target, taken
# from the files the project ships (templates, examples, fixtures, test logs)
# plus the few hand-written ones in tests/fuzz/corpus/TARGET.  Used by
# tests/cli-fuzz.sh and bench/fuzz.sh; top_srcdir is the source tree.
set -eu
# corpus.sh --options TARGET: the target's own libFuzzer options
if [ "$1" = --options ]; then
    case $2 in
    fom) echo "-max_len=8192" ;; # logs: what matters is a few lines; long ones only slow it down
    # a job's values past slurmstepd's 4096-byte buffer; an allocation over
    # 64 MB is a finding (a list sized by its numbers: "0-2147483646")
    spank) echo "-max_len=10000 -malloc_limit_mb=64" ;;
    esac
    exit 0
fi
t=$1 dir=$2
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
s=$top_srcdir
mkdir -p "$dir"
n=0
seed() { # seed FILE...: each copied under a name of its own
    for f in "$@"; do
        test -f "$f" || continue
        n=$((n + 1))
        cp "$f" "$dir/seed-$n-$(basename "$f")"
    done
}
jobs="$s/examples/*/job.conf $s/examples/water-box/water-box.conf"
case $t in
job) seed $jobs ;;
set) ;;
template) seed "$s"/templates/*.conf ;;
site) seed "$s"/templates/sites/*.conf ;;
batch)
    # a job, a "%%" line, a site profile: each example with each profile
    for j in $jobs; do
        for p in "$s"/templates/sites/*.conf; do
            n=$((n + 1))
            { cat "$j"; echo '%%'; cat "$p"; } >"$dir/seed-$n-$(basename "$(dirname "$j")")-$(basename "$p")"
        done
    done ;;
topo) seed "$s"/tests/fixtures/*.xml ;;
fom) seed "$s"/tests/logs/*.log "$s"/tests/logs/*.txt "$s"/tests/logs/*.out ;;
record) ;;
hpldat) seed "$s"/examples/hpl/hpccinf.txt ;; # and corpus/hpldat: NBs and grids of several, CRLF, HPL 1.0's
spank) ;; # corpus/spank: job environments, hostile ones among them
*) echo "corpus.sh: unknown target '$t'" >&2; exit 2 ;;
esac
if test -d "$s/tests/fuzz/corpus/$t"; then seed "$s/tests/fuzz/corpus/$t"/*; fi
