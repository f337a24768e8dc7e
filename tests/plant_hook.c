/* SPDX-License-Identifier: BSD-3-Clause */
/* Preloaded into gpurun by tests/cli-dbplant.sh: holds gpurun at its first
 * sqlite3_open_v2 of a file, after gpurun has checked results.db's files
 * and before SQLite opens them, until another user has planted a file in
 * the folder.  That race in a sticky shared results folder, made exact
 * with two FIFOs instead of timing: PLANT_READY is written when gpurun is
 * there, PLANT_GO read before it goes on. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct sqlite3 sqlite3;
typedef int open_fn(const char *, sqlite3 **, int, const char *);
int sqlite3_open_v2(const char *file, sqlite3 **db, int flags, const char *vfs);

int sqlite3_open_v2(const char *file, sqlite3 **db, int flags, const char *vfs)
{
    static int held;
    open_fn *real = (open_fn *)dlsym(RTLD_NEXT, "sqlite3_open_v2");
    const char *ready = getenv("PLANT_READY"), *go = getenv("PLANT_GO");
    if (!held && ready && go && strcmp(file, ":memory:") != 0) {
        held = 1;
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
    return real(file, db, flags, vfs);
}
