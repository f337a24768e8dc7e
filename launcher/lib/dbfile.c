/* SPDX-License-Identifier: BSD-3-Clause */
/* SQLite opens results.db's journal and WAL by name with O_CREAT, and
 * replays a journal or WAL that it finds there into the database.  In a
 * results folder that others may write (sticky), a file planted under that
 * name between two gpurun commands would be read as the index's own.  This
 * VFS wraps the unix one so that every such file is made by us (O_EXCL) or
 * found to be ours before SQLite opens it; the sticky bit then keeps it
 * ours while SQLite has it. */
#include "dbfile.h"
#include "safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static sqlite3_vfs own_vfs;
static int register_rc = SQLITE_ERROR;
static pthread_once_t register_once = PTHREAD_ONCE_INIT;
static _Thread_local char refused[PATH_MAX + 96];

const char *gpurun_db_vfs_refused(void) { return refused; }

void gpurun_db_vfs_clear(void) { refused[0] = '\0'; }

/* The mode a new journal gets: the database's, never writable by others
 * (SQLite does the same, from the umask's side). */
static mode_t journal_mode_for(const char *path, int flags)
{
    mode_t mode = 0644;
    if (!(flags & (SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_WAL)))
        return mode;
    char db[PATH_MAX];
    const char *dash = strrchr(path, '-');
    size_t n = dash ? (size_t)(dash - path) : 0;
    struct stat st;
    if (n == 0 || n >= sizeof db)
        return mode;
    memcpy(db, path, n);
    db[n] = '\0';
    if (lstat(db, &st) == 0 && S_ISREG(st.st_mode))
        mode = st.st_mode & 0644;
    return mode;
}

static int refuse(const char *path, const char *why)
{
    snprintf(refused, sizeof refused, "%s: %s: refused (gpurun's index uses only files of its own)", path,
             why);
    return SQLITE_CANTOPEN;
}

int gpurun_db_create_at(int dfd, const char *name, mode_t mode)
{
    int fd = openat(dfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0)
        return -1;
    /* The mode asked for, whatever the umask. */
    if (fchmod(fd, mode) < 0) {
        int e = errno;
        close(fd);
        unlinkat(dfd, name, 0);
        errno = e;
        return -2;
    }
    close(fd);
    return 0;
}

/* Why NAME in DFD, which is there, may not be used: NULL when it is a file
 * of ours.  *unopened: it could not be opened for another reason than
 * being a symlink (errno's message is returned). */
static const char *found_file_problem(int dfd, const char *name, bool *unopened)
{
    *unopened = false;
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ELOOP)
            return "is a symlink; gpurun does not follow it";
        *unopened = true;
        return strerror(errno);
    }
    struct stat st;
    const char *why = fstat(fd, &st) < 0 ? strerror(errno) : gpurun_own_file_problem(&st);
    close(fd);
    return why;
}

/* SQLITE_OK when PATH is now a file of ours (made here when CREATE and it
 * was missing), or is missing and must not be made (SQLite then fails as
 * it would); SQLITE_CANTOPEN when it is someone else's. */
static int claim(const char *path, bool create, mode_t mode)
{
    if (create) {
        int made = gpurun_db_create_at(AT_FDCWD, path, mode);
        if (made == 0)
            return SQLITE_OK;
        if (made == -2)
            return SQLITE_CANTOPEN;
        if (errno != EEXIST)
            return SQLITE_OK; /* SQLite's own open says why */
    }
    bool unopened;
    const char *why = found_file_problem(AT_FDCWD, path, &unopened);
    if (unopened)
        return SQLITE_OK; /* SQLite's own open says why */
    return why ? refuse(path, why) : SQLITE_OK;
}

static int own_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags)
{
    sqlite3_vfs *base = vfs->pAppData;
    const int named = SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_WAL |
                      SQLITE_OPEN_SUPER_JOURNAL;
    if (name && (flags & named)) {
        int rc = claim(name, flags & SQLITE_OPEN_CREATE, journal_mode_for(name, flags));
        if (rc != SQLITE_OK) {
            file->pMethods = NULL; /* SQLite then does not close it */
            return rc;
        }
    }
    return base->xOpen(base, name, file, flags, out_flags);
}

static int own_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
    sqlite3_vfs *base = vfs->pAppData;
    return base->xDelete(base, name, sync_dir);
}

static int own_access(sqlite3_vfs *vfs, const char *name, int flags, int *res)
{
    sqlite3_vfs *base = vfs->pAppData;
    return base->xAccess(base, name, flags, res);
}

static int own_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
    sqlite3_vfs *base = vfs->pAppData;
    return base->xFullPathname(base, name, n, out);
}

static void register_vfs(void)
{
    sqlite3_vfs *base = sqlite3_vfs_find("unix");
    if (!base)
        base = sqlite3_vfs_find(NULL);
    if (!base)
        return;
    /* Everything else (locks, shared memory, time, randomness) is the base
     * VFS's: the copy keeps its functions, and its iVersion. */
    own_vfs = *base;
    own_vfs.zName = GPURUN_DB_VFS;
    own_vfs.pNext = NULL;
    own_vfs.pAppData = base;
    own_vfs.xOpen = own_open;
    own_vfs.xDelete = own_delete;
    own_vfs.xAccess = own_access;
    own_vfs.xFullPathname = own_full_pathname;
    register_rc = sqlite3_vfs_register(&own_vfs, 0);
}

int gpurun_db_vfs_register(gpurun_error_t *err)
{
    pthread_once(&register_once, register_vfs);
    if (register_rc != SQLITE_OK)
        return gpurun_err(err, GPURUN_EXIT_ENV, "SQLite: cannot register gpurun's file checks (%s)",
                          sqlite3_errstr(register_rc));
    return 0;
}

int gpurun_db_own_file_at(int dfd, const char *shown_dir, const char *name, gpurun_error_t *err)
{
    struct stat db;
    mode_t mode = fstatat(dfd, "results.db", &db, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(db.st_mode)
                      ? (db.st_mode & 0644)
                      : 0644;
    int made = gpurun_db_create_at(dfd, name, mode);
    if (made == 0)
        return 0;
    if (made == -2)
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s/%s: %s", shown_dir, name, strerror(errno));
    if (errno != EEXIST)
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s/%s: cannot create: %s", shown_dir, name, strerror(errno));
    bool unopened;
    const char *why = found_file_problem(dfd, name, &unopened);
    if (why)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s/%s: %s: refused (gpurun's index uses only files of its own)",
                          shown_dir, name, why);
    return 0;
}
