/* SPDX-License-Identifier: BSD-3-Clause */
/* Preloaded into gpurun to hold it at one point of a race until another
 * user has acted, made exact with two FIFOs instead of timing: PLANT_READY
 * is written when gpurun is there, PLANT_GO read before it goes on.
 * - tests/cli-dbplant.sh: at its first sqlite3_open_v2 of a file, after
 *   gpurun has checked results.db's files and before SQLite opens them.
 * - tests/cli-runfolder.sh, with PLANT_MKDIR=PATH: just after gpurun has
 *   made the folder PATH (named as gpurun names it), before it sets its
 *   mode.  The SQLite hold is then off. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void hold(void)
{
    const char *ready = getenv("PLANT_READY"), *go = getenv("PLANT_GO");
    if (!ready || !go)
        return;
    char c = 'r';
    int fd = open(ready, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (write(fd, &c, 1) != 1)
            c = 0;
        close(fd);
    }
    fd = open(go, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &c, 1) != 1)
            c = 0;
        close(fd);
    }
}

typedef struct sqlite3 sqlite3;
typedef int open_fn(const char *, sqlite3 **, int, const char *);
int sqlite3_open_v2(const char *file, sqlite3 **db, int flags, const char *vfs);

int sqlite3_open_v2(const char *file, sqlite3 **db, int flags, const char *vfs)
{
    static int held;
    open_fn *real = (open_fn *)dlsym(RTLD_NEXT, "sqlite3_open_v2");
    if (!held && !getenv("PLANT_MKDIR") && strcmp(file, ":memory:") != 0) {
        held = 1;
        hold();
    }
    return real(file, db, flags, vfs);
}

typedef int mkdir_fn(const char *, mode_t);

int mkdir(const char *path, mode_t mode)
{
    static int held;
    mkdir_fn *real = (mkdir_fn *)dlsym(RTLD_NEXT, "mkdir");
    int rc = real(path, mode);
    const char *which = getenv("PLANT_MKDIR");
    if (rc == 0 && !held && which && !strcmp(path, which)) {
        held = 1;
        hold();
    }
    return rc;
}
