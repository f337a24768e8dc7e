/* SPDX-License-Identifier: BSD-3-Clause */
/* The scratch folder and input helpers of the harnesses (fuzz.h). */

#include "fuzz.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[4096];

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    rmdir(dir);
}

const char *fuzz_dir(void)
{
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/gpurun-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            abort();
        }
        atexit(remove_dir);
    }
    return dir;
}

const char *fuzz_file(const char *name, const uint8_t *data, size_t size)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(path);
        abort();
    }
    for (size_t off = 0; off < size;) {
        ssize_t n = write(fd, data + off, size - off);
        if (n <= 0) {
            perror(path);
            abort();
        }
        off += (size_t)n;
    }
    close(fd);
    return path;
}

char *fuzz_string(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

void fuzz_split(const uint8_t *data, size_t size, char **copyp, const char **first, const char **rest)
{
    char *s = fuzz_string(data, size);
    *copyp = s;
    *first = s;
    *rest = NULL;
    for (char *line = s; line;) {
        char *nl = strchr(line, '\n');
        if (!strncmp(line, "%%", 2) && (line[2] == '\n' || line[2] == '\0')) {
            *rest = nl ? nl + 1 : line + 2;
            *line = '\0'; /* the first part ends with the newline before "%%" */
            return;
        }
        line = nl ? nl + 1 : NULL;
    }
}
