#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# What gpurun's progress costs in system calls (issue 27 §6): a job of
# DURATION seconds (default 60) whose rank 0 prints a progress line a second,
# run off a terminal under `strace -c` of gpurun itself (not of its children:
# the rank steps copy the output to HOST.out whatever gpurun does), with
#   light: the progress lines only,                      progress_interval 10s
#   heavy: 1 MB of other output a second as well (60 MB), progress_interval 10s
#   eager: the heavy output,                              progress_interval 1s
#   off:   the heavy output,                              progress_interval off
# The file-system calls should follow the interval (light = heavy), not the
# output volume.  Usage: bench/progress-strace.sh [DURATION]
# With STRACE_FOLLOW=1, `strace -c -f`: gpurun and everything it starts (the
# rank steps' copying of the output then counts, with progress or without).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
GPURUN=${GPURUN:-$top/build/launcher/gpurun}
secs=${1:-60}
[ -x "$GPURUN" ] || { echo "build first (tests/run-all.sh builds build/)"; exit 3; }
command -v strace >/dev/null || { echo "strace not found"; exit 3; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/prog" <<'EOF'
#!/bin/sh
# prog SECONDS MB_PER_SECOND: rank 0's progress line every second, and
# MB_PER_SECOND of filler lines with it.
i=0
while [ "$i" -lt "$1" ]; do
    i=$((i + 1))
    if [ "$GPURUN_RANK" = 0 ]; then
        [ "$2" -gt 0 ] && head -c $(($2 * 1000000)) /dev/zero | tr '\0' 'x' | fold -w 99
        echo "step $i of $1 loss 0.5 images_per_s 100"
    fi
    sleep 1
done
EOF
chmod +x "$tmp/prog"
cat >"$tmp/prog.conf" <<EOF
description = "progress lines and filler"
command     = "$tmp/prog \${secs} \${mb}"
defaults    { secs = "60"  mb = "0" }
progress         = "^step ([0-9]+) of ([0-9]+) .*images_per_s ([-+0-9.eE]+)"
progress_groups  = "step total figure"
progress_units   = "images/s"
EOF
printf 'job = "s"\ntemplate = "prog"\nlauncher = "local"\nranks_per_node = 2\nthreads_per_rank = 1\noversubscribe = true\nresults = "%s"\n' \
    "$tmp/results" >"$tmp/job.conf"
calls="openat newfstatat fstat statx pread64 read write renameat rename unlinkat close"
one() { # one NAME MB INTERVAL
    # shellcheck disable=SC2086
    strace -c ${STRACE_FOLLOW:+-f} -o "$tmp/strace.$1" "$GPURUN" run "$tmp/job.conf" --set params.secs="$secs" --set params.mb="$2" \
        --set progress_interval="$3" >/dev/null 2>"$tmp/err.$1" </dev/null
    out=$(du -b "$tmp"/results/s/latest/*.out | awk '$2 !~ /launcher/ { s += $1 } END { print s }')
    printf '%-6s %3s MB/s %4s %10s bytes of output, %2s progress lines |' "$1" "$2" "$3" "$out" \
        "$(grep -c 'ranks alive' "$tmp/err.$1")"
    for c in $calls; do
        printf ' %s %s' "$c" "$(awk -v c="$c" '$NF == c { n = $4 } END { print n + 0 }' "$tmp/strace.$1")"
    done
    printf '\n'
}
if [ -n "${STRACE_FOLLOW:-}" ]; then
    echo "system calls of gpurun and all it starts (strace -c -f) over a ${secs}-second job, 2 ranks, off a terminal:"
else
    echo "gpurun's own system calls (strace -c, no -f) over a ${secs}-second job, 2 ranks, off a terminal:"
fi
one light 0 10s
one heavy 1 10s
one eager 1 1s
one off 1 off
