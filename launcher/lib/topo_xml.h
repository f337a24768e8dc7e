/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_TOPO_XML_H
#define GPURUN_TOPO_XML_H

/* Internal to topology.c: an XML export refused when malformed (the limits
 * of topo_model.h), and an hwloc 3 export rewritten for hwloc 2 (topo_xml.c). */

#include <stddef.h>

#include "error.h"

int gpurun_topo_xml_check(const char *file, const char *buf, size_t len, gpurun_error_t *err);
int gpurun_topo_xml_v3_to_v2(const char *file, char **buf, size_t *len, gpurun_error_t *err);

#endif
