/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_SAFEFILE_H
#define GPURUN_SAFEFILE_H

/* Files in folders that other users share (results, scratch, project
 * folders): every file is created with an explicit mode whatever the umask,
 * through a descriptor of its folder, never through a symlink, and replaced
 * only by an atomic rename of a file of ours. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <jansson.h>

#include "error.h"

enum gpurun_write_flags {
    GPURUN_WRITE_SYNC = 1, /* fsync the file and its folder: a record must be on disk before we say so */
};

/* Write `len` bytes as `name` in the folder open as `dirfd`: a new file with
 * a random name (O_EXCL, O_NOFOLLOW), mode `mode` exactly, then renamed over
 * `name`.  A `name` that is a symlink is refused and left alone.  On error
 * nothing is left behind; `shown` names the final path in messages. */
int gpurun_write_atomic_at(int dirfd, const char *name, const char *shown, const void *data, size_t len, mode_t mode,
                           int flags, gpurun_error_t *err);

/* The same for a path: its folder is opened (not followed if a symlink is
 * the last component of the path itself, which is refused). */
int gpurun_write_atomic(const char *path, const void *data, size_t len, mode_t mode, int flags, gpurun_error_t *err);

/* JSON documents, indented.  A document the encoder refuses (a string that is
 * not UTF-8) is an error naming the path, not an empty file. */
int gpurun_write_json_at(int dirfd, const char *name, const char *shown, json_t *doc, mode_t mode, int flags,
                         gpurun_error_t *err);
int gpurun_write_json_file(const char *path, json_t *doc, mode_t mode, int flags, gpurun_error_t *err);

/* Create the new file `name` in the folder `dirfd` (O_EXCL, O_NOFOLLOW, and
 * `flags`, e.g. O_WRONLY | O_APPEND), with mode `mode` exactly, whatever the
 * umask.  Returns its descriptor, or -1 with errno set and nothing left. */
int gpurun_create_at(int dirfd, const char *name, int flags, mode_t mode);

/* Why a file with the status `st` is not one of ours: "not a regular file",
 * "owned by another user" or "writable by group or others"; NULL when it is
 * a regular file of this user that nobody else can write.  The one test of
 * what gpurun reads back or hands to SQLite in a shared folder. */
const char *gpurun_own_file_problem(const struct stat *st);

/* Open a file of ours in the folder `dirfd` for reading: not a symlink, a
 * regular file, owned by this user and writable by nobody else.  Returns a
 * descriptor or -1 with err filled (exit 2 for a file that is not ours). */
int gpurun_open_own_at(int dirfd, const char *name, const char *shown, gpurun_error_t *err);

/* Is the folder open as `fd` safe to keep our files in?  Refused (exit 2,
 * with `what` and `path` named): owned by another user (root's folders are
 * accepted), or writable by group or others without the sticky bit. */
int gpurun_check_folder(int fd, const char *path, const char *what, gpurun_error_t *err);

/* Open (creating with `mode` when missing) the folder `name` in `dirfd`,
 * without following a symlink, and check it as gpurun_check_folder does.
 * Returns its descriptor, or -1 with err filled. */
int gpurun_open_folder_at(int dirfd, const char *name, const char *shown, const char *what, mode_t mode, bool create,
                          gpurun_error_t *err);

/* Open an existing folder by path (a path from the user: symlinks in it are
 * the user's own choice), creating missing components with `mode`, and check
 * the last one as gpurun_check_folder does. */
int gpurun_open_folder_path(const char *path, const char *what, mode_t mode, bool create, gpurun_error_t *err);

/* A folder that code is loaded from (plugins): walked from / one component
 * at a time (openat, O_PATH, O_NOFOLLOW), symlinks of this user or root
 * followed by reading them and walking on with the same checks.  Every
 * folder on the way is this user's or root's, and none is writable by
 * others unless it has the sticky bit; the last one not at all.  Returns an
 * O_PATH descriptor of the folder reached, or -1 with `why` filled (which
 * folder, why; errno ENOENT when a folder on the way is missing).
 * Relative and empty paths are refused. */
int gpurun_open_trusted_folder(const char *path, char *why, size_t len);

/* Open `name` in the trusted folder `dirfd` for reading (O_NOFOLLOW): a
 * regular file of this user or root that nobody else can write.  Returns a
 * descriptor with its status in *st; -1 with `why` empty when there is no
 * such file, filled when one is there but refused. */
int gpurun_open_trusted_file_at(int dirfd, const char *name, struct stat *st, char *why, size_t len);

#endif
