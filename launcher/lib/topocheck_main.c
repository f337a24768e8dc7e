/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun-topocheck [NAME] < XML: imports the hwloc XML on its standard input
 * once and exits: 0 (imported), 3 (hwloc refused it cleanly), anything else
 * or a signal (hwloc crashed or hung).  topology.c runs it before importing
 * a topology file in its own process, so that a file that crashes hwloc is
 * an error message, not a crash.  A program of its own, not a fork: a fork
 * of a threaded caller inherits whatever lock another thread held (the
 * allocator's, libxml2's) and can hang on it.  NAME is only for ps. */
#include "config.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hwloc.h>

#include "topology.h"

int main(void)
{
    /* Only the XML importer is wanted: hwloc's discovery plugins (and the
     * X and OpenCL libraries they pull in) cost a millisecond to load. */
    if (!getenv("HWLOC_PLUGINS_BLACKLIST"))
        setenv("HWLOC_PLUGINS_BLACKLIST", "hwloc_gl,hwloc_opencl,hwloc_pci,hwloc_cuda,hwloc_nvml,hwloc_rsmi,"
                                          "hwloc_levelzero", 1);
    /* A hang is a failure too. */
    signal(SIGALRM, SIG_DFL);
    alarm(120);
    struct stat st;
    if (fstat(STDIN_FILENO, &st) < 0 || st.st_size < 0 || (unsigned long long)st.st_size > GPURUN_TOPO_MAX_FILE_BYTES)
        return 4;
    size_t len = (size_t)st.st_size;
    char *buf = malloc(len + 1);
    if (!buf)
        return 4;
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(STDIN_FILENO, buf + got, len - got, (off_t)got);
        if (n <= 0)
            return 4;
        got += (size_t)n;
    }
    buf[len] = '\0';
    hwloc_topology_t hw;
    if (hwloc_topology_init(&hw) < 0)
        return 4;
    /* As topology.c imports an export: everything its writer kept. */
    hwloc_topology_set_io_types_filter(hw, HWLOC_TYPE_FILTER_KEEP_ALL);
    if (hwloc_topology_set_xmlbuffer(hw, buf, (int)len + 1) < 0 || hwloc_topology_load(hw) < 0) {
        hwloc_topology_destroy(hw);
        free(buf);
        return 3;
    }
    hwloc_topology_destroy(hw);
    free(buf);
    return 0;
}
