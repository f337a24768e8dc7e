#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make-records.sh DIR N [JOBS]: N records as run.c writes them (plan,
# bindings, rank status, per-GPU monitoring, a figure of merit, a site's
# prices) in DIR/JOB/RUN-ID/record.json, spread over JOBS jobs (default 10),
# each a scan of ranks 1..8 and two params, repeated.  For the tests and
# bench/results.sh of a results folder at size; one awk, no process per run.
set -eu
dir=$1
n=$2
jobs=${3:-10}
mkdir -p "$dir"
awk -v dir="$dir" -v n="$n" -v jobs="$jobs" 'BEGIN {
    for (i = 0; i < n; i++) { # the folders, 200 to a mkdir
        dirs = dirs " \"" dir "/" sprintf("job%03d", i % jobs) "/" sprintf("20250101T%06dZ-%d", int(i / jobs), i % jobs + 1) "\""
        if (i % 200 == 199 || i == n - 1) {
            system("mkdir -p" dirs)
            dirs = ""
        }
    }
    for (i = 0; i < n; i++) {
        j = i % jobs
        k = int(i / jobs)
        ranks = 2 ^ (k % 4)                 # 1, 2, 4, 8
        nsteps = (int(k / 4) % 2) ? 10000 : 5000
        rep = int(k / 8)
        job = sprintf("job%03d", j)
        id = sprintf("20250101T%06dZ-%d", k, j + 1)
        state = (i % 97 == 13) ? "failed" : "ok"
        ns = 100 * ranks * (0.85 + 0.1 * ((i * 7919) % 100) / 100)
        d = dir "/" job "/" id
        f = d "/record.json"
        printf "{\n  \"run_id\": \"%s\",\n  \"job\": \"%s\",\n  \"template\": \"gromacs\",\n", id, job > f
        printf "  \"start\": \"2025-01-01T%02d:%02d:%02dZ\",\n  \"end\": \"2025-01-02T00:00:00Z\",\n", \
            int(k / 3600) % 24, int(k / 60) % 60, k % 60 > f
        printf "  \"wall_s\": %.1f,\n  \"exit_status\": %d,\n  \"state\": \"%s\",\n", 60 + k % 50, \
            state == "ok" ? 0 : 1, state > f
        printf "  \"nodes\": 1,\n  \"ranks\": %d,\n  \"gpus_per_rank\": 1,\n  \"threads_per_rank\": 8,\n", ranks > f
        printf "  \"gpus\": %d,\n  \"launcher\": \"local\",\n  \"hosts\": [\"node1\"],\n", ranks > f
        printf "  \"gpu_model\": \"NVIDIA H200\",\n  \"params\": {\"nsteps\": \"%d\"},\n", nsteps > f
        printf "  \"config\": {\"ranks_per_node\": %d, \"nsteps\": \"%d\"},\n  \"repeat_index\": %d,\n", \
            ranks, nsteps, rep > f
        printf "  \"command\": [\"gmx_mpi\", \"mdrun\", \"-nsteps\", \"%d\"],\n", nsteps > f
        printf "  \"plan\": {\"gpurun_plan\": 1, \"ranks\": [" > f
        for (r = 0; r < ranks; r++)
            printf "%s{\"rank\": %d, \"host\": \"node1\", \"gpus\": [%d], \"cpuset\": \"%d-%d\", \"numa\": %d}", \
                r ? ", " : "", r, r, r * 8, r * 8 + 7, int(r / 4) > f
        printf "]},\n  \"bindings\": [" > f
        for (r = 0; r < ranks; r++)
            printf "%s{\"rank\": %d, \"host\": \"node1\", \"cpus\": \"%d-%d\", \"gpus\": \"%d\", \"ok\": true}", \
                r ? ", " : "", r, r * 8, r * 8 + 7, r > f
        printf "],\n  \"rank_status\": [" > f
        for (r = 0; r < ranks; r++)
            printf "%s{\"rank\": %d, \"exit_status\": 0}", r ? ", " : "", r > f
        printf "],\n  \"gpus_monitor\": [" > f
        for (r = 0; r < ranks; r++)
            printf "%s{\"gpu\": %d, \"util_mean\": %.1f, \"mem_peak_mib\": %d, \"power_mean_w\": %.1f}", \
                r ? ", " : "", r, 80 + r, 30000 + r, 500.5 > f
        printf "],\n  \"foms\": {" > f
        if (state == "ok")
            printf "\"ns_per_day\": {\"value\": %.3f, \"values\": [%.3f], \"units\": \"ns/day\", \"better\": \"higher\", \"file\": \"md.log\"}", ns, ns > f
        printf "},\n  \"references\": {},\n  \"site\": \"aws-p5en\",\n  \"price_per_gpu_hour\": 4.0,\n" > f
        printf "  \"spot_price_per_gpu_hour\": 1.6,\n  \"currency\": \"USD\",\n  \"gpudirect\": null,\n" > f
        printf "  \"gpurun_version\": \"0.1.0\"\n}\n" > f
        close(f)
    }
}'
