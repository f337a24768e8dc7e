/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_FUZZ_H
#define GPURUN_FUZZ_H

/* What the libFuzzer harnesses of tests/fuzz/ share: a private scratch
 * folder for the parsers that only read files, and the input as a string. */

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A folder of this process's own (made once, removed at exit). */
const char *fuzz_dir(void);
/* `data` written to fuzz_dir()/name, replacing it; the path (static). */
const char *fuzz_file(const char *name, const uint8_t *data, size_t size);
/* The input as a NUL-terminated copy (malloc'ed). */
char *fuzz_string(const uint8_t *data, size_t size);
/* The input split at the first line that is exactly "%%": *rest is NULL
 * when there is none.  Both point into the copy *copyp (free it). */
void fuzz_split(const uint8_t *data, size_t size, char **copyp, const char **first, const char **rest);

#endif
