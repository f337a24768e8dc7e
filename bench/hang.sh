#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench/hang.sh: how gpurun names a stalled rank (docs/running.md, "Stalls").
# Each hang kind of tests/hang_mpi.c (stop, spin, sleep, fifo, exit,
# deadlock) on 4 and 8 ranks under mpirun, on_stall = "kill", and a
# PyTorch DDP rank (gloo) where python3 has torch; one table: kind, ranks,
# the culprit named, the classes, and the seconds from found to named
# (report_s) and from the last progress to named (about after_s + report_s).
#   bench/hang.sh [GPURUN] [RANKS...]     (default: launcher/gpurun, 4 8)
# Environment: STALL_AFTER (default 5s), KINDS (default all six), PYTHON
# (default /usr/bin/python3, the one Debian's python3-torch is for).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
GPURUN=${1:-${GPURUN:-$top/build/launcher/gpurun}}
[ $# -gt 0 ] && shift
sizes=${*:-4 8}
kinds=${KINDS:-stop spin sleep fifo exit deadlock}
after=${STALL_AFTER:-5s}
# Debian's torch is /usr/bin/python3's (a pyenv or venv python3 first on
# PATH has none); PYTHON picks another.
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=python3
W=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-hang.XXXXXX")
trap 'rm -rf "$W"' EXIT INT TERM
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export GPURUN_KILL_GRACE=1
mpicc -g -O1 -o "$W/hang" "$top/tests/hang_mpi.c" || { echo "bench/hang.sh: mpicc failed" >&2; exit 3; }

# one KIND RANKS COMMAND: a run; its row of the table.
one() {
    cat >"$W/j.conf" <<JOB
job = "h"
command = "$3"
launcher = "mpirun"
ranks_per_node = $2
threads_per_rank = 1
oversubscribe = true
stall_after = "$after"
on_stall = "kill"
env { HANG_KIND = "$1"  HANG_AT = "2"  HANG_RANK = "1"  STEP_MS = "100"  HANG_MAX_S = "120" }
JOB
    t0=$(date +%s)
    timeout 300 "$GPURUN" run "$W/j.conf" --results "$W/res" --quiet >/dev/null 2>"$W/err"
    rc=$?
    wall=$(($(date +%s) - t0))
    rec=$(ls -d "$W"/res/h/*Z-*/ | tail -1)record.json
    jq -r --arg k "$1" --arg n "$2" --arg rc "$rc" --arg wall "$wall" '
        [$k, $n, (if .stall.deadlock then "none (deadlock)"
                  else ([.stall.culprits[] | "rank \(.rank): \(.state)"] | join("; ")) end),
         ([.stall.classes[] | "\(.count)x \(.state)\(if .frames != "" then ": " + .frames else "" end)"] | join(" | ")),
         (.stall.report_s | tostring), ((.stall.after_s + .stall.report_s) * 10 | round / 10 | tostring),
         "\($rc)/\($wall)s"] | @tsv' "$rec" 2>/dev/null ||
        printf '%s\t%s\tno record (exit %s)\t\t\t\t\n' "$1" "$2" "$rc"
}

{
    printf 'kind\tranks\tculprit named\tclasses\tfound->named s\tstall->named s\texit/wall\n'
    for n in $sizes; do
        for k in $kinds; do one "$k" "$n" "$W/hang"; done
    done
    if "$PY" -c 'import torch, torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
        printf '#!/bin/sh\nexport MASTER_ADDR=127.0.0.1 MASTER_PORT=29533\nexec %s %s\n' "$PY" "$top/tests/hang_ddp.py" >"$W/ddp.sh"
        chmod +x "$W/ddp.sh"
        one ddp-sleep 4 "$W/ddp.sh"
    else
        printf 'ddp-sleep\t4\tskipped: %s has no torch with gloo here\t\t\t\t\n' "$PY"
    fi
} | column -t -s "$(printf '\t')"
