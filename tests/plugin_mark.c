/* SPDX-License-Identifier: BSD-3-Clause */
/* A library whose constructor says it was loaded, for
 * tests/cli-pluginrace.sh: it appends "MARK_WHO uid N" to MARK_FILE (both
 * given with -D when the test builds it).  Loaded as rm_NAME.so it is no
 * plugin (no gpurun_rm_plugin), so gpurun says so; what counts is that its
 * code ran, and as whom. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void mark(void)
{
    char line[128];
    int n = snprintf(line, sizeof line, "%s uid %ld\n", MARK_WHO, (long)geteuid());
    int fd = open(MARK_FILE, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd >= 0) {
        if (write(fd, line, (size_t)n) < 0)
            n = 0;
        close(fd);
    }
}
