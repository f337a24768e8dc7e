/* SPDX-License-Identifier: BSD-3-Clause */
/* Files in shared folders: explicit modes, descriptors of folders, no
 * symlinks followed, atomic replacement, owner checks on what is read back. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "safefile.h"
#include "util.h"

/* ".NAME.XXXXXXXX" beside NAME: random, so nobody can plant it in advance. */
static int create_temp_at(int dirfd, const char *name, mode_t mode, char *tmp, size_t tmpsize)
{
    static const char digits[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned char rnd[10];
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
            for (size_t i = 0; i < sizeof rnd; i++)
                rnd[i] = (unsigned char)(rand() ^ getpid() ^ attempt);
        }
        char suffix[sizeof rnd + 1];
        for (size_t i = 0; i < sizeof rnd; i++)
            suffix[i] = digits[rnd[i] % (sizeof digits - 1)];
        suffix[sizeof rnd] = '\0';
        const char *base = strrchr(name, '/');
        base = base ? base + 1 : name;
        if ((size_t)snprintf(tmp, tmpsize, ".%.200s.%s", base, suffix) >= tmpsize) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = gpurun_create_at(dirfd, tmp, O_WRONLY, mode & 0777);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST)
            return -1;
    }
    errno = EEXIST;
    return -1;
}

int gpurun_write_atomic_at(int dirfd, const char *name, const char *shown, const void *data, size_t len, mode_t mode,
                           int flags, gpurun_error_t *err)
{
    if (!shown)
        shown = name;
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: is a symlink; refusing to replace it (remove it if it is yours)",
                          shown);
    char tmp[256];
    int fd = create_temp_at(dirfd, name, mode, tmp, sizeof tmp);
    if (fd < 0)
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot write: %s", shown, strerror(errno));
    int rc = gpurun_write_all(fd, data, len);
    if (rc == 0 && (flags & GPURUN_WRITE_SYNC))
        rc = fsync(fd);
    int e = errno;
    if (close(fd) < 0 && rc == 0) {
        rc = -1;
        e = errno;
    }
    if (rc == 0 && renameat(dirfd, tmp, dirfd, name) < 0) {
        rc = -1;
        e = errno;
    }
    if (rc < 0) {
        unlinkat(dirfd, tmp, 0);
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot write: %s", shown, strerror(e));
    }
    if ((flags & GPURUN_WRITE_SYNC) && fsync(dirfd) < 0 && errno != EINVAL && errno != EBADF)
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s: written, but its folder could not be synced to disk: %s", shown,
                          strerror(errno));
    return 0;
}

/* The folder of `path` as a descriptor, and the last component's name. */
static int open_parent(const char *path, const char **base)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        *base = path;
        return open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    *base = slash + 1;
    char *dir = slash == path ? gpurun_xstrdup("/") : gpurun_xstrndup(path, (size_t)(slash - path));
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    return fd;
}

int gpurun_write_atomic(const char *path, const void *data, size_t len, mode_t mode, int flags, gpurun_error_t *err)
{
    const char *base;
    int dfd = open_parent(path, &base);
    if (dfd < 0)
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot write: its folder: %s", path, strerror(errno));
    if (!*base) {
        close(dfd);
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: is a folder, not a file name", path);
    }
    int rc = gpurun_write_atomic_at(dfd, base, path, data, len, mode, flags, err);
    close(dfd);
    return rc;
}

int gpurun_write_json_at(int dirfd, const char *name, const char *shown, json_t *doc, mode_t mode, int flags,
                         gpurun_error_t *err)
{
    char *text = json_dumps(doc, JSON_INDENT(2));
    if (!text)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "%s: cannot write: the JSON encoder refused the document (a text that is not UTF-8?)",
                          shown ? shown : name);
    size_t len = strlen(text);
    /* jansson ends a document without a newline; files end with one. */
    char *withnl = gpurun_xasprintf("%s\n", text);
    free(text);
    int rc = gpurun_write_atomic_at(dirfd, name, shown, withnl, len + 1, mode, flags, err);
    free(withnl);
    return rc;
}

int gpurun_write_json_file(const char *path, json_t *doc, mode_t mode, int flags, gpurun_error_t *err)
{
    const char *base;
    int dfd = open_parent(path, &base);
    if (dfd < 0)
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot write: its folder: %s", path, strerror(errno));
    int rc = gpurun_write_json_at(dfd, base, path, doc, mode, flags, err);
    close(dfd);
    return rc;
}

const char *gpurun_own_file_problem(const struct stat *st)
{
    if (!S_ISREG(st->st_mode))
        return "not a regular file";
    if (st->st_uid != geteuid())
        return "owned by another user";
    if (st->st_mode & 022)
        return "writable by group or others";
    return NULL;
}

int gpurun_create_at(int dirfd, const char *name, int flags, mode_t mode)
{
    int fd = openat(dirfd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 07777);
    if (fd >= 0 && fchmod(fd, mode & 07777) < 0) { /* openat's mode went through the umask */
        int e = errno;
        close(fd);
        unlinkat(dirfd, name, 0);
        errno = e;
        return -1;
    }
    return fd;
}

int gpurun_open_own_at(int dirfd, const char *name, const char *shown, gpurun_error_t *err)
{
    if (!shown)
        shown = name;
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return gpurun_err(err, errno == ELOOP ? GPURUN_EXIT_CONFIG : GPURUN_EXIT_ENV, "%s: cannot open: %s", shown,
                          errno == ELOOP ? "it is a symlink" : strerror(errno));
    struct stat st;
    const char *why = fstat(fd, &st) < 0 ? strerror(errno) : gpurun_own_file_problem(&st);
    if (why) {
        close(fd);
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: not read: %s", shown, why);
    }
    return fd;
}

int gpurun_check_folder(int fd, const char *path, const char *what, gpurun_error_t *err)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s %s: %s", what, path, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s %s: not a folder", what, path);
    if (st.st_uid != geteuid() && st.st_uid != 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s %s is owned by another user (uid %ld): gpurun keeps runs only in folders of yours; "
                          "choose another results folder (job key 'results' or --results)",
                          what, path, (long)st.st_uid);
    if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s %s is writable by %s without the sticky bit: another user could replace what gpurun "
                          "writes there; remove the write bit (chmod go-w) or set the sticky bit (chmod +t)",
                          what, path, (st.st_mode & 002) ? "everyone" : "its group");
    return 0;
}

int gpurun_open_folder_at(int dirfd, const char *name, const char *shown, const char *what, mode_t mode, bool create,
                          gpurun_error_t *err)
{
    if (!shown)
        shown = name;
    if (create && mkdirat(dirfd, name, mode & 07777) == 0) {
        /* mkdir's mode went through the umask: set it as asked. */
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0 && fchmod(fd, mode & 07777) < 0) {
            close(fd);
            return gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot set its mode: %s", shown, strerror(errno));
        }
        if (fd < 0)
            return gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot open: %s", shown, strerror(errno));
        return fd;
    }
    if (create && errno != EEXIST)
        return gpurun_err(err, GPURUN_EXIT_ENV, "cannot create %s: %s", shown, strerror(errno));
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        struct stat lst; /* O_DIRECTORY makes a symlink ENOTDIR, not ELOOP */
        bool link = e == ELOOP ||
                    (e == ENOTDIR && fstatat(dirfd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(lst.st_mode));
        return gpurun_err(err, e == ELOOP || e == ENOTDIR ? GPURUN_EXIT_CONFIG : GPURUN_EXIT_ENV,
                          "%s %s: cannot open: %s", what, shown,
                          link ? "it is a symlink" : e == ENOTDIR ? "not a folder" : strerror(e));
    }
    if (gpurun_check_folder(fd, shown, what, err) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int gpurun_open_folder_path(const char *path, const char *what, mode_t mode, bool create, gpurun_error_t *err)
{
    bool made = false;
    if (create) {
        char *p = gpurun_xstrdup(path);
        for (char *s = p + 1; *s; s++) {
            if (*s != '/')
                continue;
            *s = '\0';
            if (mkdir(p, mode & 0777) < 0 && errno != EEXIST) {
                int e = errno;
                free(p);
                return gpurun_err(err, GPURUN_EXIT_ENV, "cannot create %s: %s", path, strerror(e));
            }
            *s = '/';
        }
        made = mkdir(p, mode & 0777) == 0;
        int e = errno;
        free(p);
        if (!made && e != EEXIST)
            return gpurun_err(err, GPURUN_EXIT_ENV, "cannot create %s: %s", path, strerror(e));
    }
    /* A folder just made is opened without following a symlink, and its
     * mode (mkdir's went through the umask) set through the descriptor:
     * chmod by path would follow a symlink put in its place by whoever
     * can write the folder above. */
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (made ? O_NOFOLLOW : 0));
    if (fd < 0) {
        int e = errno;
        bool replaced = made && (e == ELOOP || e == ENOTDIR); /* O_DIRECTORY makes a symlink ENOTDIR */
        if (replaced)
            return gpurun_err(err, GPURUN_EXIT_CONFIG,
                              "%s %s: refused: made by gpurun, it was replaced by a symlink or a file at once "
                              "(someone else can write the folder above it)",
                              what, path);
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s %s: cannot open: %s", what, path, strerror(e));
    }
    if (made && fchmod(fd, mode & 07777) < 0) {
        int e = errno;
        close(fd);
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot set its mode: %s", path, strerror(e));
    }
    if (gpurun_check_folder(fd, path, what, err) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* --- folders and files that code is loaded from ------------------------------- */

#define TRUSTED_LINKS_MAX 32  /* symlinks followed on one path, as the kernel's own limit (40) or fewer */
#define TRUSTED_STEPS_MAX 512 /* components walked on one path, links' included */

/* Why a folder on the way to code is not to be trusted, or NULL.  Nobody
 * but this user and root may change what lies below it: it is one of
 * theirs, and others may write in it only with the sticky bit (the kernel
 * then lets nobody else rename or remove what this user or root owns in it,
 * and every entry walked through is checked to be theirs); never in the
 * last folder, where others could add files of their own. */
static const char *trusted_folder_problem(const struct stat *st, bool last)
{
    if (!S_ISDIR(st->st_mode))
        return "is not a folder";
    if (st->st_uid != geteuid() && st->st_uid != 0)
        return "is another user's";
    if ((st->st_mode & 022) && last)
        return "is writable by others (chmod go-w)";
    if ((st->st_mode & 022) && !(st->st_mode & S_ISVTX))
        return "is writable by others without the sticky bit: they could swap what lies below it";
    return NULL;
}

struct trusted_walk {
    int fd;                      /* the folder reached so far (O_PATH) */
    char rest[2 * PATH_MAX + 2]; /* what is left to walk */
    char walked[PATH_MAX];       /* where fd is, for messages */
    unsigned links, steps;
};

static int walk_refuse(struct trusted_walk *w, const char *path, char *why, size_t len, const char *what)
{
    snprintf(why, len, "%s: %s %s", path, w->walked[0] ? w->walked : "/", what);
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    errno = EACCES;
    return -1;
}

/* A symlink at w->walked (open as lfd, a link of this user or root in a
 * folder checked already): what it points to is walked next, with the same
 * checks, from / or from the folder it lies in. */
static int walk_link(struct trusted_walk *w, int lfd, const char *path, char *why, size_t len)
{
    char target[PATH_MAX];
    ssize_t n = readlinkat(lfd, "", target, sizeof target - 1);
    close(lfd);
    if (n <= 0 || ++w->links > TRUSTED_LINKS_MAX)
        return walk_refuse(w, path, why, len, n <= 0 ? "is a symlink that cannot be read" : "is one symlink too many");
    target[n] = '\0';
    char rest[sizeof w->rest];
    if ((size_t)snprintf(rest, sizeof rest, "%s/%s", target, w->rest) >= sizeof rest)
        return walk_refuse(w, path, why, len, "leads to a path too long");
    memcpy(w->rest, rest, sizeof rest);
    if (target[0] == '/') {
        close(w->fd);
        w->fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        w->walked[0] = '\0';
    } else {
        char *slash = strrchr(w->walked, '/'); /* the link's own folder */
        if (slash)
            *slash = '\0';
    }
    return w->fd < 0 ? walk_refuse(w, path, why, len, "cannot be opened") : 0;
}

/* One component `c` from w->fd: into the folder it is, or through the link. */
static int walk_step(struct trusted_walk *w, const char *c, const char *path, char *why, size_t len)
{
    size_t wl = strlen(w->walked);
    snprintf(w->walked + wl, sizeof w->walked - wl, "/%s", c);
    if (++w->steps > TRUSTED_STEPS_MAX)
        return walk_refuse(w, path, why, len, "is too deep");
    int nfd = openat(w->fd, c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (nfd < 0 || fstat(nfd, &st) < 0) {
        int e = errno;
        if (nfd >= 0)
            close(nfd);
        walk_refuse(w, path, why, len, e == ENOENT ? "does not exist" : strerror(e));
        errno = e; /* ENOENT: a folder that is not there, not one refused */
        return -1;
    }
    if (S_ISLNK(st.st_mode) && st.st_uid != geteuid() && st.st_uid != 0) {
        close(nfd);
        return walk_refuse(w, path, why, len, "is a symlink of another user");
    }
    if (S_ISLNK(st.st_mode))
        return walk_link(w, nfd, path, why, len);
    const char *problem = trusted_folder_problem(&st, false);
    close(w->fd);
    w->fd = nfd;
    return problem ? walk_refuse(w, path, why, len, problem) : 0;
}

int gpurun_open_trusted_folder(const char *path, char *why, size_t len)
{
    struct trusted_walk w = {.fd = -1};
    if (!path[0])
        return snprintf(why, len, "an empty element is not a folder"), -1;
    if (path[0] != '/')
        return snprintf(why, len, "%s: a relative folder depends on where gpurun is started", path), -1;
    if (strlen(path) >= PATH_MAX)
        return snprintf(why, len, "%.64s...: too long", path), -1;
    snprintf(w.rest, sizeof w.rest, "%s", path);
    w.fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (w.fd < 0 || fstat(w.fd, &st) < 0 || trusted_folder_problem(&st, false))
        return walk_refuse(&w, path, why, len, "cannot be trusted");
    for (;;) {
        char *p = w.rest;
        while (*p == '/')
            p++;
        if (!*p)
            break;
        size_t cl = strcspn(p, "/");
        char c[NAME_MAX + 1];
        if (cl > NAME_MAX)
            return walk_refuse(&w, path, why, len, "holds a name too long");
        memcpy(c, p, cl);
        c[cl] = '\0';
        memmove(w.rest, p + cl, strlen(p + cl) + 1);
        if (strcmp(c, ".") && walk_step(&w, c, path, why, len) < 0)
            return -1;
    }
    const char *problem = fstat(w.fd, &st) < 0 ? strerror(errno) : trusted_folder_problem(&st, true);
    return problem ? walk_refuse(&w, path, why, len, problem) : w.fd;
}

int gpurun_open_trusted_file_at(int dirfd, const char *name, struct stat *st, char *why, size_t len)
{
    why[0] = '\0';
    /* O_NONBLOCK: a FIFO under the name must not hang the open */
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno != ENOENT)
            snprintf(why, len, "%s", errno == ELOOP ? "a symlink" : strerror(errno));
        return -1;
    }
    const char *problem = NULL;
    if (fstat(fd, st) < 0)
        problem = strerror(errno);
    else if (!S_ISREG(st->st_mode))
        problem = "not a regular file";
    else if (st->st_uid != geteuid() && st->st_uid != 0)
        problem = "another user's";
    else if (st->st_mode & 022)
        problem = "writable by others";
    if (problem) {
        snprintf(why, len, "%s", problem);
        close(fd);
        return -1;
    }
    return fd;
}
