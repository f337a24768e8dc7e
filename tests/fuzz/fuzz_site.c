/* SPDX-License-Identifier: BSD-3-Clause */
/* The site profile reader (site.c): any bytes as sites/NAME.conf. */

#include "fuzz.h"

#include "site.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gpurun_site_t *site = NULL;
    gpurun_error_t err;
    if (gpurun_site_parse((const char *)data, size, "fuzz.conf", &site, &err) == 0)
        gpurun_site_destroy(site);
    return 0;
}
