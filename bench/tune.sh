#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# How good is `gpurun tune`'s pick, and how much does it save (issue 32)?
#
# (a) A program of known figures: synth.sh X Y Z prints a throughput that is
#     a known function of its three parameters (a peak whose best Y moves
#     with X, so the axes interact) times seeded noise of 3 % (normal, the
#     seed counting the starts: the bench is the same each time).  250
#     candidates (X 0-9, Y 0-4, Z 0-4).  Tune's pick against the known best
#     (goal: within 5 %), and tune's time against an exhaustive search that
#     runs every candidate once through `gpurun run` (goal: at most 25 %).
# (b) The water box (examples/water-box) on this node: tune's pick against
#     the best of running every candidate 3 times (goal: within 3 %, in at
#     most 40 % of that time).  Skipped with the reason where GROMACS cannot
#     run; give B=0 to skip it.
# Usage: bench/tune.sh            (GPURUN: the program, default build/launcher/gpurun)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
GPURUN=${GPURUN:-$top/build/launcher/gpurun}
[ -x "$GPURUN" ] || { echo "build first (tests/run-all.sh builds build/)"; exit 3; }
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset GPURUN_TOPOLOGY
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# ---- (a) ---------------------------------------------------------------------
# f(x, y, z): the true figure (no noise).
F='function f(x, y, z) { return 50 + 1000 * exp(-(x - 6.2) ^ 2 / 12 - (y - 1.7 - 0.15 * x) ^ 2 / 6 - (z - 3.1) ^ 2 / 10) }'
cat >"$tmp/synth.sh" <<PROG
#!/bin/sh
# The figure of candidate X Y Z, with 3 % noise seeded by the start count.
n=\$(cat "\$(dirname "\$0")/count" 2>/dev/null || echo 0)
n=\$((n + 1))
echo "\$n" >"\$(dirname "\$0")/count"
awk -v x="\$1" -v y="\$2" -v z="\$3" -v seed="\$n" '$F
BEGIN { srand(seed); u1 = rand(); u2 = rand(); if (u1 < 1e-12) u1 = 1e-12
        g = sqrt(-2 * log(u1)) * cos(6.283185307 * u2)
        printf "FOM: %.3f\n", f(x, y, z) * (1 + 0.03 * g) }'
PROG
chmod +x "$tmp/synth.sh"
cat >"$tmp/synth.conf" <<'TPL'
description = "bench/tune.sh: a throughput of known shape with seeded noise"
command     = "${program} ${x} ${y} ${z}"
defaults    { program = "./synth.sh"  x = "0"  y = "0"  z = "0" }
fom value   { regex = "^FOM: ([-+0-9.eE]+)"  units = "items/s"  better = "higher" }
TPL
cat >"$tmp/synth-job.conf" <<'JOB'
job = "synth"
template = "synth"
launcher = "local"
ranks_per_node = 1
threads_per_rank = 1
tune { params.x = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}  params.y = {0, 1, 2, 3, 4}  params.z = {0, 1, 2, 3, 4} }
JOB
best=$(awk "$F"'BEGIN { b = -1; for (x = 0; x < 10; x++) for (y = 0; y < 5; y++) for (z = 0; z < 5; z++)
                       if (f(x, y, z) > b) { b = f(x, y, z); w = x " " y " " z }; print w, b }')
echo "(a) synthetic program, 250 candidates (x 0-9, y 0-4, z 0-4), noise 3 %"
echo "    known best: x y z = $(echo "$best" | cut -d' ' -f1-3), figure $(echo "$best" | cut -d' ' -f4)"

# The exhaustive search: each candidate once.
t0=$(now)
for x in 0 1 2 3 4 5 6 7 8 9; do for y in 0 1 2 3 4; do for z in 0 1 2 3 4; do
    "$GPURUN" run "$tmp/synth-job.conf" --results "$tmp/exh" --quiet \
        --set params.x=$x --set params.y=$y --set params.z=$z
done; done; done
t1=$(now)
exh_s=$(secs "$t0" "$t1")
exh_pick=$("$GPURUN" results --results "$tmp/exh" --job synth --json |
    jq -r 'max_by(.foms.value.value) | "\(.params.x) \(.params.y) \(.params.z)"')

t0=$(now)
"$GPURUN" tune "$tmp/synth-job.conf" --results "$tmp/tune" >"$tmp/tune-a.out"
t1=$(now)
tune_s=$(secs "$t0" "$t1")
pick=$(sed -n 's/^best value *params.x=\([0-9]*\) params.y=\([0-9]*\) params.z=\([0-9]*\):.*/\1 \2 \3/p' "$tmp/tune-a.out")
trials=$(grep -c '^gpurun tune: trial ' "$tmp/tune-a.out")
awk -v best="$best" -v pick="$pick" -v exh="$exh_pick" -v ts="$tune_s" -v es="$exh_s" -v n="$trials" "$F"'
BEGIN { split(best, b, " "); split(pick, p, " "); split(exh, e, " ")
        fp = f(p[1], p[2], p[3]); fe = f(e[1], e[2], e[3])
        printf "    tune:       x y z = %s, true figure %.1f = %.1f %% of the best (goal >= 95 %%): %s\n",
               pick, fp, 100 * fp / b[4], (fp >= 0.95 * b[4] ? "met" : "NOT met")
        printf "                %d trials in %.1f s = %.1f %% of the exhaustive search'"'"'s time (goal <= 25 %%): %s\n",
               n, ts, 100 * ts / es, (ts <= 0.25 * es ? "met" : "NOT met")
        printf "                (%d trials = %.1f %% of the exhaustive search'"'"'s 250 runs)\n", n, 100 * n / 250
        printf "    exhaustive: 250 runs in %.1f s; its pick (best single run) x y z = %s, true figure %.1f (%.1f %%)\n",
               es, exh, fe, 100 * fe / b[4] }'

# ---- (b) ---------------------------------------------------------------------
echo "(b) the water box on this node (examples/water-box)"
if [ "${B:-1}" = 0 ]; then
    echo "    skipped (B=0)"
    exit 0
fi
if ! command -v gmx_mpi >/dev/null || ! command -v gmx >/dev/null; then
    echo "    skipped: gmx_mpi or gmx not found (Debian: gromacs, gromacs-openmpi)"
    exit 0
fi
if gmx_mpi --version 2>/dev/null | grep -q 'RDTSCP usage: *enabled' && ! grep -qw rdtscp /proc/cpuinfo; then
    echo "    skipped: this CPU lacks rdtscp, which this GROMACS build needs"
    exit 0
fi
ncores=$(hwloc-calc --number-of core all 2>/dev/null || nproc)
cp "$top/examples/water-box/water-box.conf" "$top/examples/water-box/topol.top" "$top/examples/water-box/md.mdp" "$tmp/"
# Ranks 1 and 2, threads 1 and 2 (what fits is planned; the rest pruned), and
# two neighbour-list intervals; the template's 2000 steps, the counters reset
# halfway (tune's trials: its tune_short, 1000 steps).  wb: the water box
# (base, beside it) with -nstlist ${nstlist} (gromacs's ${nstlist_arg} takes
# the option whole: a plain number here keeps the labels below short).
cat >"$tmp/wb.conf" <<'TPL'
base     = "water-box"
command  = "gmx_mpi mdrun -s ${tpr} -deffnm ${job} -ntomp ${threads_per_rank} -nsteps ${nsteps} -resethway -noconfout -nstlist ${nstlist}"
defaults { nstlist = "10" }
TPL
cat >"$tmp/wb-job.conf" <<'JOB'
job = "wb"
template = "wb"
launcher = "mpirun"
nodes = 1
gpus_per_rank = 0
timeout = "10m"
env { GMX_MAXBACKUP = "-1" }
tune { ranks_per_node = {1, 2}  threads_per_rank = {1, 2}  params.nstlist = {10, 40} }
JOB
"$GPURUN" tune "$tmp/wb-job.conf" --results "$tmp/wbd" --dry-run >"$tmp/wb-dry.out" 2>&1 || true
cands=$(grep -v 'pruned:' "$tmp/wb-dry.out" |
    sed -n 's/^  \(ranks_per_node=[0-9]* threads_per_rank=[0-9]* params.nstlist=[0-9]*\) .*[0-9] rank.*/\1/p')
echo "    $(grep -c 'pruned:' "$tmp/wb-dry.out") pruned (more cores than the node has): not run by either search"
echo "    $(echo "$cands" | grep -c .) candidates can run on $ncores cores:"
# Round robin (every candidate once, three times over): a spell of load on
# this shared machine then falls on several candidates, not on one's three runs.
t0=$(now)
for _ in 1 2 3; do
    echo "$cands" | while read -r c; do
        sets=$(echo "$c" | sed 's/\([^ ]*\)/--set \1/g')
        # shellcheck disable=SC2086
        "$GPURUN" run "$tmp/wb-job.conf" --results "$tmp/wbx" --quiet $sets >/dev/null 2>&1 || echo "    run failed: $c"
    done
done
t1=$(now)
wexh_s=$(secs "$t0" "$t1")
"$GPURUN" results --results "$tmp/wbx" --job wb --json >"$tmp/wbx.json"
jq -r 'group_by("\(.ranks) \(.threads_per_rank) \(.params.nstlist)") | .[] |
       "    exhaustive: ranks \(.[0].ranks) threads \(.[0].threads_per_rank) nstlist \(.[0].params.nstlist): " +
       "\([.[] | .foms.ns_per_day.value] | add / length | . * 10 | round / 10) ns/day (mean of \(length))"' "$tmp/wbx.json"
wbest=$(jq -r 'group_by("\(.ranks) \(.threads_per_rank) \(.params.nstlist)") |
               map({k: "\(.[0].ranks) \(.[0].threads_per_rank) \(.[0].params.nstlist)",
                    m: ([.[] | .foms.ns_per_day.value] | add / length)}) | max_by(.m) | "\(.k) \(.m)"' "$tmp/wbx.json")
t0=$(now)
"$GPURUN" tune "$tmp/wb-job.conf" --results "$tmp/wbt" >"$tmp/tune-b.out" 2>&1 || true
t1=$(now)
wtune_s=$(secs "$t0" "$t1")
wpick=$(sed -n 's/^best ns_per_day *ranks_per_node=\([0-9]*\) threads_per_rank=\([0-9]*\) params.nstlist=\([0-9]*\):.*/\1 \2 \3/p' "$tmp/tune-b.out")
wtrials=$(grep -c '^gpurun tune: trial ' "$tmp/tune-b.out" || true)
# The pick's figure: its mean in the exhaustive runs (the same measure for both).
wpf=$(jq -r --arg k "$wpick" 'map(select("\(.ranks) \(.threads_per_rank) \(.params.nstlist)" == $k) | .foms.ns_per_day.value) |
                              if length > 0 then add / length else 0 end' "$tmp/wbx.json")
awk -v best="$wbest" -v pick="$wpick" -v pf="$wpf" -v ts="$wtune_s" -v es="$wexh_s" -v n="$wtrials" '
BEGIN { split(best, b, " ")
        printf "    best of 3 runs each: ranks threads nstlist = %s %s %s, %.2f ns/day; %.1f s in all\n", b[1], b[2], b[3], b[4], es
        if (pick == "") { print "    tune picked nothing: see its output"; exit }
        printf "    tune:       ranks threads nstlist = %s: %.2f ns/day = %.1f %% of the best (goal >= 97 %%): %s\n",
               pick, pf, 100 * pf / b[4], (pf >= 0.97 * b[4] ? "met" : "NOT met")
        printf "                %d trials in %.1f s = %.1f %% of the exhaustive time (goal <= 40 %%): %s\n",
               n, ts, 100 * ts / es, (ts <= 0.4 * es ? "met" : "NOT met") }'
