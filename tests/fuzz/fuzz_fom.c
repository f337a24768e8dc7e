/* SPDX-License-Identifier: BSD-3-Clause */
/* Figures of merit and the sanity check (fom.c) over an application log:
 * the input is the log, read with every shipped template (templates/NAME.conf
 * of the source tree), each of its figures read from that one file, as
 * `gpurun run` reads a rank's output and `gpurun collect` a named file. */

#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fom.h"
#include "template.h"
#include "template_base.h"

static const char *const shipped[] = {"generic", "gromacs", "lammps", "hpl", "cg",
                                      "netcheck", "hpcg", "nccl-tests", "stream",
                                      "osu-latency", "osu-bw", "namd"};
#define NSHIPPED (sizeof shipped / sizeof *shipped)
static gpurun_template_t *tpl[NSHIPPED];

static const char *lookup(const char *name, void *ctx)
{
    const gpurun_template_t *t = ctx;
    if (!strcmp(name, "job"))
        return "fuzz";
    return gpurun_kvlist_get(&t->defaults, name);
}

static void load_templates(void)
{
    for (size_t i = 0; i < NSHIPPED; i++) {
        char path[4096];
        gpurun_error_t err;
        snprintf(path, sizeof path, "%s/%s.conf", GPURUN_SOURCE_TEMPLATES, shipped[i]);
        if (gpurun_template_load(path, &tpl[i], &err) < 0) {
            fprintf(stderr, "fuzz_fom: %s\n", err.text);
            abort();
        }
        /* Every figure from the rank output: the one file written. */
        for (size_t f = 0; f < tpl[i]->nfoms; f++) {
            free(tpl[i]->foms[f].file);
            tpl[i]->foms[f].file = NULL;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!tpl[0])
        load_templates();
    const char *path = fuzz_file("rank.0.out", data, size);
    char *const files[] = {(char *)path, NULL};
    for (size_t i = 0; i < NSHIPPED; i++) {
        gpurun_foms_t foms = {0};
        gpurun_error_t err;
        char where[512];
        /* run's way (the rank output) for the first half of the
         * templates, collect's (named files) for the rest: one read each */
        if (gpurun_fom_read(tpl[i], fuzz_dir(), lookup, tpl[i], i < NSHIPPED / 2 ? NULL : files, &foms,
                            &err) == 0) {
            json_decref(gpurun_foms_json(&foms));
            gpurun_foms_free(&foms);
        }
        gpurun_sanity_ok(tpl[i], fuzz_dir(), lookup, tpl[i], where, sizeof where);
        gpurun_sanity_in_file(tpl[i], path);
    }
    return 0;
}
