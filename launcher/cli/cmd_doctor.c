/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun doctor: can this node run GPU jobs well, and what to fix. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "doctor.h"

static const char doctor_usage[] =
    "Usage: gpurun doctor [--json] [--topology FILE.xml] [--root DIR]\n"
    "\n"
    "Check whether this node can run GPU jobs well: launcher and MPI (CUDA-aware?), PMIx, the\n"
    "resource managers, hwloc, GPUs and driver, GPU-NIC affinity, the pieces of GPUDirect RDMA\n"
    "(peer-memory module, GDRCopy, active RDMA ports, locked-memory limit) and each GPU's PCIe\n"
    "link, clocks and power.\n"
    "Every line is PASS, WARN or FAIL, with the fix in one sentence.\n"
    "\n"
    "  --json               print the report as JSON\n"
    "  --topology FILE.xml  check an hwloc XML export instead of this node's topology\n"
    "  --root DIR           read sysfs and /proc below DIR instead of / (for tests: a fake tree;\n"
    "                       its proc/self/limits, when there, gives the locked-memory limit)\n"
    "  -h, --help           this help\n"
    "\n"
    "Tools (mpirun, ompi_info, ucx_info, the resource managers', pmix_info) come from PATH, NVML from\n"
    "libnvidia-ml.so.1 and PMIx from libpmix.so.2 ($GPURUN_NVML_LIBRARY and $GPURUN_PMIX_LIBRARY\n"
    "name others: the tests' fakes).\n"
    "\n"
    "Exit status: 0 no FAIL line, 1 at least one FAIL, 2 bad option or unreadable topology/root.\n";

int cmd_doctor(int argc, char **argv, gpurun_error_t *err)
{
    enum { O_JSON = 1000, O_TOPO, O_ROOT };
    static const struct option opts[] = {
        {"json", no_argument, NULL, O_JSON},
        {"topology", required_argument, NULL, O_TOPO},
        {"root", required_argument, NULL, O_ROOT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct gpurun_doctor_opts o = {0};
    bool json = false;
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        switch (c) {
        case O_JSON: json = true; break;
        case O_TOPO: o.topology = optarg; break;
        case O_ROOT: o.root = optarg; break;
        case 'h': fputs(doctor_usage, stdout); return 0;
        default:
            return cmd_bad_option("doctor", argv[optind - 1], opts, err);
        }
    }
    if (optind < argc) {
        gpurun_err(err, GPURUN_EXIT_CONFIG, "doctor: unexpected argument '%s' (see gpurun doctor --help)",
                   argv[optind]);
        return GPURUN_EXIT_CONFIG;
    }
    json_t *report = NULL;
    if (gpurun_doctor_run(&o, &report, err) < 0)
        return err->code ? err->code : GPURUN_EXIT_CONFIG;
    if (json) {
        char *s = json_dumps(report, JSON_INDENT(2));
        if (s)
            puts(s);
        free(s);
    } else {
        gpurun_doctor_print(report, stdout);
    }
    int rc = json_integer_value(json_object_get(report, "fail")) ? GPURUN_EXIT_CHECK : 0;
    json_decref(report);
    return rc;
}
