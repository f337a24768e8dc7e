/* SPDX-License-Identifier: BSD-3-Clause */
/* `--set KEY=VALUE` (job.c): each line of the input is one assignment,
 * applied in order to a job read from the text before a "%%" line (a small
 * fixed job when there is none). */

#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "job.h"

static const char base_job[] = "job = \"fuzz\"\ncommand = \"./app -n ${n}\"\nnodes = 1\n"
                               "params { n = 10 }\nreferences { gflops = \">= 1\" }\n"
                               "scan { nodes = {1, 2} }\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy;
    const char *first, *rest;
    fuzz_split(data, size, &copy, &first, &rest);
    const char *text = rest ? first : base_job, *sets = rest ? rest : first;
    gpurun_job_t *job = NULL;
    gpurun_error_t err;
    if (gpurun_job_parse(text, strlen(text), "fuzz.conf", &job, &err) == 0) {
        char *line = (char *)sets;
        while (line && *line) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            gpurun_job_set(job, line, &err);
            line = nl ? nl + 1 : NULL;
        }
        gpurun_job_destroy(job);
    }
    free(copy);
    return 0;
}
