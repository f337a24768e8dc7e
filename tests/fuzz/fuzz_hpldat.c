/* SPDX-License-Identifier: BSD-3-Clause */
/* HPL's NB and P x Q written into an HPL.dat (hpldat.c): the input is the
 * file, edited three ways (NB, the grid, both).  Beyond the sanitizers, what
 * must hold: no edit gives the input back byte for byte; an edit keeps every
 * byte after line 12; an edit applied to its own output changes nothing. */

#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "hpldat.h"

static void once(const uint8_t *data, size_t size, const struct gpurun_hpl_edit *e)
{
    char *out = NULL, *again = NULL;
    size_t outlen = 0, againlen = 0;
    gpurun_error_t err;
    if (gpurun_hpl_rewrite((const char *)data, size, e, "fuzz.dat", &out, &outlen, &err) < 0) {
        if (out || err.code != GPURUN_EXIT_CONFIG)
            abort();
        return;
    }
    if (!e->active && (outlen != size || memcmp(out, data, size) != 0))
        abort();
    /* The tail after line 12 is the input's own. */
    size_t at = 0;
    for (int l = 0; l < 12 && at < size; l++) {
        const uint8_t *nl = memchr(data + at, '\n', size - at);
        at = nl ? (size_t)(nl - data) + 1 : size;
    }
    size_t tail = size - at;
    if (outlen < tail || memcmp(out + outlen - tail, data + at, tail) != 0)
        abort();
    if (outlen > size + 5 * 40) /* five lines, each at most a number's width longer */
        abort();
    if (gpurun_hpl_rewrite(out, outlen, e, "fuzz.dat", &again, &againlen, &err) < 0 || againlen != outlen ||
        memcmp(again, out, outlen) != 0)
        abort();
    free(again);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gpurun_hpl_edit none = {0}, nb = {.active = true, .nb = 192},
                           grid = {.active = true, .p = 12, .q = 65536},
                           both = {.active = true, .nb = 1, .p = 1, .q = 1};
    once(data, size, &none);
    once(data, size, &nb);
    once(data, size, &grid);
    once(data, size, &both);
    return 0;
}
