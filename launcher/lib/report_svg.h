/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_REPORT_SVG_H
#define GPURUN_REPORT_SVG_H

/* Internal to gpurun report: the SVG document (report_svg.c), standalone
 * (--svg) or in the page (report_html.c). */

#include <stdbool.h>

#include "report.h"
#include "util.h"

void gpurun_report_svg_document(struct gpurun_strbuf *b, const gpurun_report_t *r, bool standalone);

#endif
