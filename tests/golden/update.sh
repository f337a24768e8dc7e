#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Rewrite the golden plans after a deliberate planner change; review the diff
# (git diff tests/golden) before committing it.
set -e
top=$(cd "$(dirname "$0")/../.." && pwd)
GPURUN=${GPURUN:-$top/build/launcher/gpurun}
case $GPURUN in /*) ;; *) GPURUN=$(pwd)/$GPURUN ;; esac
shared=${GPURUN_SHARED_TOPOLOGIES:-$top/../shared/topologies}
for f in "$top"/tests/fixtures/*.xml; do
    (cd "$top/tests/fixtures" && "$GPURUN" plan --topology "$(basename "$f")" --json) \
        >"$top/tests/golden/$(basename "${f%.xml}").json"
done
if [ -d "$shared" ]; then
    for f in "$shared"/*.xml; do
        name=$(basename "$f")
        extra=
        [ "$name" = nvidia-dgx2h-16xv100-trimmed.xml ] && extra=--oversubscribe
        (cd "$shared" && "$GPURUN" plan --topology "$name" --json $extra) >"$top/tests/golden/${name%.xml}.json"
    done
fi
