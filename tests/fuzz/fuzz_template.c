/* SPDX-License-Identifier: BSD-3-Clause */
/* The template reader (template.c, expand.c): any bytes as a template;
 * one that parses reads its figures and sanity text from a fixed small
 * log, so that its regexes, headers and ${name}s are compiled and used. */

#include "fuzz.h"

#include <stdbool.h>
#include <string.h>

#include "fom.h"
#include "template.h"

static const char log_text[] =
    "Loop time of 4.17618 on 2 procs for 200 steps with 32000 atoms\n\n"
    "Performance: 20688.774 tau/day, 47.891 timesteps/s\n"
    "               Core t (s)   Wall t (s)        (%)\n"
    "       Time:      123.456       61.728      200.0\n"
    "                 (ns/day)    (hour/ns)\n"
    "Performance:       28.002        0.857\n"
    "T/V                N    NB     P     Q               Time                 Gflops\n"
    "--------------------------------------------------------------------------------\n"
    "WR11C2R4        2000   128     1     2               0.86              6.225e+00\n"
    "Finished mdrun\nTotal wall time: 0:00:04\n";

/* A fom file of the template stays inside the scratch folder: no absolute
 * path or "..", so that the harness never reads the machine's files. */
static bool files_local(const gpurun_template_t *t)
{
    for (size_t i = 0; i < t->nfoms; i++) {
        const char *f = t->foms[i].file;
        if (f && (f[0] == '/' || strstr(f, "..") || strchr(f, '$')))
            return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool written;
    if (!written) {
        fuzz_file("rank.0.out", (const uint8_t *)log_text, sizeof log_text - 1);
        written = true;
    }
    gpurun_template_t *t = NULL;
    gpurun_error_t err;
    if (gpurun_template_parse((const char *)data, size, "fuzz.conf", &t, &err) == 0) {
        if (files_local(t)) {
            gpurun_foms_t foms = {0};
            char where[512];
            if (gpurun_fom_read(t, fuzz_dir(), NULL, NULL, NULL, &foms, &err) == 0) {
                json_decref(gpurun_foms_json(&foms));
                gpurun_foms_free(&foms);
            }
            gpurun_sanity_ok(t, fuzz_dir(), NULL, NULL, where, sizeof where);
        }
        gpurun_template_destroy(t);
    }
    return 0;
}
