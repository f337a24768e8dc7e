/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_DBFILE_H
#define GPURUN_DBFILE_H

#include <sys/types.h>

#include "error.h"

/* The SQLite VFS that results.db is opened with: SQLite's own unix VFS,
 * except that every file it opens by name (the database, its rollback
 * journal, its write-ahead log) must be a regular file of ours that nobody
 * else can write, never a symlink, and a missing one is made by us with
 * O_EXCL.  In a shared folder with the sticky bit nobody can then swap the
 * file under SQLite: a journal or WAL planted there by someone else is
 * refused, never replayed into the index. */
#define GPURUN_DB_VFS "gpurun-own"

/* Registers the VFS once per process (thread-safe); 0 or -1 with err. */
int gpurun_db_vfs_register(gpurun_error_t *err);

/* Why the VFS last refused a file in this thread ("" when it did not):
 * "PATH: owned by another user", for the error message. */
const char *gpurun_db_vfs_refused(void);
void gpurun_db_vfs_clear(void);

/* Makes NAME in DFD a new file with MODE exactly, whatever the umask
 * (O_EXCL, never through a symlink), as the VFS makes every file: 0; -1
 * with errno when it cannot be made (EEXIST: something is there); -2 with
 * errno when it was made but its mode could not be set (removed again). */
int gpurun_db_create_at(int dfd, const char *name, mode_t mode);

/* Makes NAME in DFD ours, as the VFS would (O_EXCL, mode 0644 & mode of
 * like, never a symlink), or checks that it already is: for the files
 * SQLite opens itself, outside the VFS's xOpen (the WAL index -shm).
 * 0, or an error (exit 2 for a file that is not ours). */
int gpurun_db_own_file_at(int dfd, const char *shown_dir, const char *name, gpurun_error_t *err);

#endif
