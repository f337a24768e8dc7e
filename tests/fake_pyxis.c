/* SPDX-License-Identifier: BSD-3-Clause */
/* A stand-in for NVIDIA's pyxis in the test cluster's plugstack.conf
 * (tests/cli-pyxis.sh): it registers pyxis's --container-image,
 * --container-mounts and --container-workdir, so that the real srun takes
 * them, and records per task what it was given (one line per task, one
 * write, in the file of its argument out=PATH).  It enters no image: the
 * task runs on the host, in the working folder it was given.  With the
 * argument hide=PATH (tests/cli-pyxis-multinode.sh) the file PATH is not
 * there for a task that was given an image, as full gpurun is not in a
 * real image: the task gets a mount namespace of its own with /dev/null
 * bound over PATH. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include <slurm/spank.h>

SPANK_PLUGIN(pyxis, 1);

static char *given[3]; /* image, mounts, workdir */

static int take(int val, const char *optarg, int remote)
{
    (void)remote;
    if (val < 0 || val > 2)
        return -1;
    free(given[val]);
    given[val] = strdup(optarg ? optarg : "");
    return 0;
}

struct spank_option spank_options[] = {
    {"container-image", "[USER@][REGISTRY#]IMAGE[:TAG]|PATH", "[fake pyxis] the image", 1, 0, take},
    {"container-mounts", "SRC[:DST[:FLAGS]][,...]", "[fake pyxis] bind mounts", 1, 1, take},
    {"container-workdir", "PATH", "[fake pyxis] working folder in the image", 1, 2, take},
    SPANK_OPTIONS_TABLE_END};

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
    const char *out = NULL, *hide = NULL;
    for (int i = 0; i < ac; i++) {
        if (!strncmp(av[i], "out=", 4))
            out = av[i] + 4;
        if (!strncmp(av[i], "hide=", 5))
            hide = av[i] + 5;
    }
    if (!out || !given[0])
        return 0;
    if (hide && (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
                 mount("/dev/null", hide, NULL, MS_BIND, NULL) < 0)) {
        slurm_error("fake pyxis: cannot hide %s from the task", hide);
        return -1;
    }
    uint32_t task = 0;
    if (spank_get_item(sp, S_TASK_GLOBAL_ID, &task) != ESPANK_SUCCESS)
        return -1;
    if (given[2] && chdir(given[2]) < 0) {
        slurm_error("fake pyxis: cannot enter the working folder %s", given[2]);
        return -1;
    }
    char line[16384];
    int n = snprintf(line, sizeof line, "task=%u image=%s mounts=%s workdir=%s\n", (unsigned)task, given[0],
                     given[1] ? given[1] : "", given[2] ? given[2] : "");
    int fd = open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || n < 0 || (size_t)n >= sizeof line || write(fd, line, (size_t)n) != n) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return 0;
}
