#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Files gpurun writes where others may have planted things: a predicted
# temporary name, a symlink at the final path, the umask.
. "$(dirname "$0")/lib.sh"

fix=$FIXTURES/2s-4gpu-2nic.xml

# topo --export: a symlink planted at the old PATH.tmp.PID name is not followed.
echo precious >"$TMP/victim"
out=$TMP/export.xml
run sh -c 'ln -s "$1" "$2.tmp.$$" && exec "$3" topo --topology "$4" --export "$2"' sh "$TMP/victim" "$out" "$GPURUN" "$fix"
expect_rc 0 "topo --export with a planted temporary-name symlink"
contains "$TMP/victim" precious "the symlink's target is untouched"
run grep -c '<topology' "$out"
ok $((rc)) "the export is written in full"
run sh -c 'umask 000; exec "$1" topo --topology "$2" --export "$3"' sh "$GPURUN" "$fix" "$out"
mode=$(stat -c %a "$out")
ok $([ "$mode" = 644 ] && echo 0 || echo 1) "the export is 0644 under umask 000 (got $mode)"
rm -f "$out"
ln -s "$TMP/victim" "$out"
run "$GPURUN" topo --topology "$fix" --export "$out"
expect_rc 2 "an export path that is a symlink is refused"
contains "$TMP/err" "symlink" "saying so"
contains "$TMP/victim" precious "and its target is untouched"
ok $([ -L "$out" ] && echo 0 || echo 1) "the symlink is left as it was"

done_testing
