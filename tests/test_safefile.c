/* SPDX-License-Identifier: BSD-3-Clause */
/* Files in shared folders (launcher/lib/safefile.c): modes whatever the umask,
 * symlinks never followed nor replaced, nothing left behind on error, files
 * and folders of others refused. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dbfile.h"
#include "rank.h"
#include "safefile.h"
#include "tap.h"
#include "util.h"

static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 ? st.st_mode & 07777 : 0;
}

/* gpurun_open_trusted_folder on `path`: the descriptor closed, or -1 with why. */
static int trusted(const char *path, char *why, size_t len)
{
    why[0] = '\0';
    int fd = gpurun_open_trusted_folder(path, why, len);
    if (fd >= 0)
        close(fd);
    return fd >= 0 ? 0 : -1;
}

/* Folders that plugins are loaded from (issue 37): walked from /, nothing
 * on the way that another user could change. */
static void trusted_folders(const char *dir)
{
    char p[600], q[600], why[1200];
    ok(trusted(dir, why, sizeof why) == 0, "a folder of ours (0700 under /tmp, sticky) is trusted: %s", why);
    ok(trusted("tests", why, sizeof why) < 0 && strstr(why, "relative"), "a relative path is refused: %s", why);
    ok(trusted("", why, sizeof why) < 0 && strstr(why, "empty"), "an empty one is refused: %s", why);
    snprintf(p, sizeof p, "%s/missing/deeper", dir);
    ok(trusted(p, why, sizeof why) < 0 && errno == ENOENT, "a missing folder: ENOENT (%s)", why);
    snprintf(p, sizeof p, "%s/w", dir);
    mkdir(p, 0777); /* umask 022 is in force */
    chmod(p, 0777);
    ok(trusted(p, why, sizeof why) < 0 && strstr(why, "writable by others"), "a folder others can write: %s", why);
    snprintf(q, sizeof q, "%s/w/sub", dir);
    mkdir(q, 0755);
    ok(trusted(q, why, sizeof why) < 0 && strstr(why, "without the sticky bit"),
       "... and one below it (a writable ancestor): %s", why);
    chmod(p, 01777);
    ok(trusted(q, why, sizeof why) == 0, "below a sticky one, a folder of ours is trusted: %s", why);
    ok(trusted(p, why, sizeof why) < 0, "the sticky one itself is not (others add files there)");
    if (geteuid() == 0 && chown(q, 4513, 4513) == 0)
        ok(trusted(q, why, sizeof why) < 0 && strstr(why, "another user's"), "another user's folder: %s", why);
    else
        skip("not root: no folder of another user to make");
    snprintf(p, sizeof p, "%s/link", dir);
    ok(symlink(dir, p) == 0 && trusted(p, why, sizeof why) == 0, "our symlink to our folder is followed: %s", why);
    snprintf(p, sizeof p, "%s/relink", dir);
    ok(symlink("./link/./", p) == 0 && trusted(p, why, sizeof why) == 0, "a relative one too: %s", why);
    snprintf(p, sizeof p, "%s/wlink", dir);
    snprintf(q, sizeof q, "%s/w", dir);
    ok(symlink(q, p) == 0 && trusted(p, why, sizeof why) < 0, "a symlink to a writable folder is refused: %s", why);
    snprintf(p, sizeof p, "%s/loop", dir);
    ok(symlink("loop", p) == 0 && trusted(p, why, sizeof why) < 0 && strstr(why, "too many"),
       "a symlink loop ends: %s", why);
    snprintf(p, sizeof p, "%s/plain", dir);
    close(open(p, O_WRONLY | O_CREAT, 0644));
    ok(trusted(p, why, sizeof why) < 0 && strstr(why, "not a folder"), "a file is not a folder: %s", why);
    snprintf(p, sizeof p, "%s//./", dir);
    ok(trusted(p, why, sizeof why) == 0, "'//' and '/./' are walked over: %s", why);

    int dfd = gpurun_open_trusted_folder(dir, why, sizeof why);
    struct stat st;
    ok(gpurun_open_trusted_file_at(dfd, "absent.so", &st, why, sizeof why) < 0 && !why[0],
       "an absent file: -1, nothing to say");
    int fd = gpurun_open_trusted_file_at(dfd, "plain", &st, why, sizeof why);
    ok(fd >= 0 && S_ISREG(st.st_mode), "a file of ours opens: %s", why);
    if (fd >= 0)
        close(fd);
    ok(gpurun_open_trusted_file_at(dfd, "link", &st, why, sizeof why) < 0 && strstr(why, "symlink"),
       "a symlink is refused: %s", why);
    snprintf(p, sizeof p, "%s/fifo", dir);
    ok(mkfifo(p, 0600) == 0 && gpurun_open_trusted_file_at(dfd, "fifo", &st, why, sizeof why) < 0 &&
           strstr(why, "not a regular file"),
       "a FIFO is refused without a hang: %s", why);
    snprintf(p, sizeof p, "%s/plain", dir);
    chmod(p, 0666);
    ok(gpurun_open_trusted_file_at(dfd, "plain", &st, why, sizeof why) < 0 && strstr(why, "writable by others"),
       "a file others can write is refused: %s", why);
    close(dfd);
}

int main(void)
{
    char dir[] = "/tmp/gpurun-safefile.XXXXXX";
    if (!mkdtemp(dir)) {
        skip_all("cannot make a temporary folder");
        return 0;
    }
    char path[512], target[512];
    gpurun_error_t err;
    umask(0);
    snprintf(path, sizeof path, "%s/a.json", dir);
    json_t *doc = json_pack("{s:s}", "k", "v");
    ok(gpurun_write_json_file(path, doc, 0600, 0, &err) == 0, "a JSON file is written");
    is_int(mode_of(path), 0600, "with mode 0600 under umask 0");
    umask(077);
    ok(gpurun_write_json_file(path, doc, 0644, GPURUN_WRITE_SYNC, &err) == 0, "and replaced, synced");
    is_int(mode_of(path), 0644, "with mode 0644 under umask 077");
    umask(022);
    is_int(entries(dir), 1, "no temporary file is left");

    /* A planted symlink is neither followed nor replaced. */
    snprintf(target, sizeof target, "%s/victim", dir);
    FILE *f = fopen(target, "w");
    fputs("precious\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/link.json", dir);
    ok(symlink(target, path) == 0, "a symlink is planted");
    ok(gpurun_write_json_file(path, doc, 0600, 0, &err) < 0, "writing through it is refused");
    ok(strstr(err.text, "symlink") != NULL, "the message says why: %s", err.text);
    char buf[64] = "";
    f = fopen(target, "r");
    ok(f && fgets(buf, sizeof buf, f) && !strcmp(buf, "precious\n"), "its target is untouched");
    if (f)
        fclose(f);
    ok(S_ISLNK(mode_of(path) | S_IFLNK) && access(path, F_OK) == 0, "the symlink is left as it was");
    is_int(entries(dir), 3, "and no temporary file is left");

    /* A document the encoder refuses is an error, and no file at all. */
    json_t *bad = json_object();
    json_object_set_new(bad, "k", json_stringn_nocheck("\xff\xfe", 2));
    snprintf(path, sizeof path, "%s/bad.json", dir);
    ok(gpurun_write_json_file(path, bad, 0600, 0, &err) < 0, "a non-UTF-8 string is an error");
    ok(strstr(err.text, "bad.json") != NULL, "naming the file: %s", err.text);
    ok(access(path, F_OK) != 0, "and nothing is written");
    json_decref(bad);

    /* Reading back: only regular files of ours that nobody else can write. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    int fd = gpurun_open_own_at(dfd, "a.json", NULL, &err);
    ok(fd >= 0, "our own file opens");
    if (fd >= 0)
        close(fd);
    ok(gpurun_open_own_at(dfd, "link.json", NULL, &err) < 0, "a symlink does not: %s", err.text);
    chmod(target, 0666);
    ok(gpurun_open_own_at(dfd, "victim", NULL, &err) < 0, "nor a world-writable file: %s", err.text);

    /* The one test of "a file of ours" (safefile.c, dbfile.c, results.c). */
    struct stat st;
    ok(fstatat(dfd, "a.json", &st, 0) == 0 && gpurun_own_file_problem(&st) == NULL, "ours, 0644: no problem");
    ok(fstatat(dfd, "victim", &st, 0) == 0 && gpurun_own_file_problem(&st) &&
           !strcmp(gpurun_own_file_problem(&st), "writable by group or others"),
       "0666: writable by group or others");
    ok(fstat(dfd, &st) == 0 && gpurun_own_file_problem(&st) &&
           !strcmp(gpurun_own_file_problem(&st), "not a regular file"),
       "a folder: not a regular file");
    if (geteuid() == 0 && fchownat(dfd, "a.json", 4242, 4242, 0) == 0) {
        ok(fstatat(dfd, "a.json", &st, 0) == 0 && gpurun_own_file_problem(&st) &&
               !strcmp(gpurun_own_file_problem(&st), "owned by another user"),
           "uid 4242's: owned by another user");
        fchownat(dfd, "a.json", 0, 0, 0);
    } else {
        skip("not root: cannot give a file to uid 4242");
    }

    /* A file made as results.db's VFS makes its files: the mode exactly,
     * O_EXCL, never through a symlink. */
    umask(077);
    ok(gpurun_db_create_at(dfd, "made.db", 0644) == 0, "a new file is made");
    umask(022);
    snprintf(path, sizeof path, "%s/made.db", dir);
    is_int(mode_of(path), 0644, "with mode 0644 under umask 077");
    ok(gpurun_db_create_at(dfd, "made.db", 0644) == -1 && errno == EEXIST, "again: EEXIST, it is there");
    ok(gpurun_db_create_at(dfd, "link.json", 0644) == -1 && errno == EEXIST, "a symlink: EEXIST, not followed");
    f = fopen(target, "r");
    ok(f && fgets(buf, sizeof buf, f) && !strcmp(buf, "precious\n"), "its target is untouched");
    if (f)
        fclose(f);

    /* Folders: writable by others without the sticky bit is refused. */
    ok(gpurun_check_folder(dfd, dir, "results folder", &err) == 0, "a 0700 folder of ours is fine");
    chmod(dir, 0777);
    ok(gpurun_check_folder(dfd, dir, "results folder", &err) < 0 && err.code == GPURUN_EXIT_CONFIG,
       "a world-writable one is refused (exit 2)");
    ok(strstr(err.text, "sticky") != NULL, "saying what to do: %s", err.text);
    chmod(dir, 01777);
    ok(gpurun_check_folder(dfd, dir, "results folder", &err) == 0, "with the sticky bit it is fine");
    chmod(dir, 0700);
    int sub = gpurun_open_folder_at(dfd, "run", NULL, "run folder", 0700, true, &err);
    ok(sub >= 0, "a folder is created");
    snprintf(path, sizeof path, "%s/run", dir);
    is_int(mode_of(path), 0700, "with mode 0700");
    if (sub >= 0)
        close(sub);
    snprintf(path, sizeof path, "%s/dirlink", dir);
    symlink("/", path);
    ok(gpurun_open_folder_at(dfd, "dirlink", NULL, "run folder", 0700, false, &err) < 0,
       "a symlink to a folder is not opened as one: %s", err.text);
    /* Reading a whole file from a descriptor: /proc files say 0 bytes and
     * have more, so the buffer must grow, and stop at the bound. */
    char *text = NULL;
    size_t len = 0;
    fd = open("/proc/self/status", O_RDONLY);
    int rc = fd >= 0 ? gpurun_read_fd(fd, "/proc/self/status", "status", 1 << 20, &text, &len, &err) : -1;
    ok(rc == 0 && len > 100 && strlen(text) == len && strstr(text, "Pid:"),
       "a file larger than fstat says is read whole (%zu bytes)", len);
    free(text);
    if (fd >= 0)
        close(fd);
    fd = open("/proc/self/status", O_RDONLY);
    ok(fd >= 0 && gpurun_read_fd(fd, "/proc/self/status", "status", 100, &text, &len, &err) < 0 &&
           strstr(err.text, "more than the 100 bytes allowed"),
       "past the bound: refused (%s)", err.text);
    if (fd >= 0)
        close(fd);
    fd = open(dir, O_RDONLY | O_DIRECTORY);
    ok(fd >= 0 && gpurun_read_fd(fd, dir, "job file", 1 << 20, &text, &len, &err) < 0 &&
           strstr(err.text, "not a regular file (a directory)"),
       "a folder: refused (%s)", err.text);
    if (fd >= 0)
        close(fd);

    /* A run file that fails to read is a read error, not JSON cut short:
     * /proc/self/mem is a regular file of ours whose first page reads EIO. */
    int proc = open("/proc/self", O_RDONLY | O_DIRECTORY);
    json_t *got = gpurun_read_own_json_at(proc, "mem", "/proc/self/mem", &err);
    ok(!got && err.code == GPURUN_EXIT_ENV && strstr(err.text, strerror(EIO)),
       "a read error is said as such, exit 3 (%s)", err.text);
    json_decref(got);
    if (proc >= 0)
        close(proc);
    got = gpurun_read_own_json_at(dfd, "a.json", NULL, &err);
    ok(got && json_is_object(got) &&
           !strcmp(json_string_value(json_object_get(got, "k")), "v"),
       "a run file of ours is read: %s", got ? "" : err.text);
    json_decref(got);

    close(dfd);
    json_decref(doc);
    trusted_folders(dir);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        diag("could not remove %s", dir);
    return done_testing();
}
