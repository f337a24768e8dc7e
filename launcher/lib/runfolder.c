/* SPDX-License-Identifier: BSD-3-Clause */
/* A run folder's layout: the names of a host's files, and where rank 0's
 * output is (runfolder.h). */
#include "config.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runfolder.h"
#include "util.h"

static void safe_host(char *safe, size_t size, const char *host)
{
    snprintf(safe, size, "%s", host);
    for (char *c = safe; *c; c++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_", *c))
            *c = '_';
}

char *gpurun_host_plan_name(const char *host)
{
    char safe[256];
    safe_host(safe, sizeof safe, host);
    return gpurun_xasprintf("plan.%s.json", safe);
}

char *gpurun_host_output_name(const char *host)
{
    char safe[256];
    safe_host(safe, sizeof safe, host);
    /* launcher.out is the launcher's: a host of that name gets another */
    return gpurun_xasprintf("%s%s.out", safe, strcmp(safe, "launcher") ? "" : "-host");
}

char *gpurun_host_ranks_name(const char *host)
{
    char safe[256];
    safe_host(safe, sizeof safe, host);
    return gpurun_xasprintf("%s.ranks.json", safe);
}

/* "h1" of "DIR/h1.out" when that is a host's output file (plan.h1.json
 * beside it), else NULL. */
static char *output_host(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t bl = strlen(base);
    if (bl < 5 || strcmp(base + bl - 4, ".out") || !strcmp(base, GPURUN_RUN_LAUNCHER_OUT) ||
        !strncmp(base, "rank.", 5))
        return NULL;
    char *host = gpurun_xasprintf("%.*s", (int)(bl - 4), base);
    if (!strcmp(host, "launcher-host"))
        host[8] = '\0';
    char *plan = gpurun_xasprintf("%.*splan.%s.json", (int)(base - path), path, host);
    struct stat st;
    bool ok = lstat(plan, &st) == 0 && S_ISREG(st.st_mode);
    free(plan);
    if (!ok) {
        free(host);
        return NULL;
    }
    return host;
}

const char *gpurun_rank0_label(const char *path)
{
    char *host = output_host(path);
    free(host);
    return host ? "0: " : NULL;
}

static bool has_rank0_line(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[64];
    bool found = false, at_start = true;
    while (!found && fgets(line, sizeof line, f)) {
        found = at_start && !strncmp(line, "0: ", 3);
        at_start = strchr(line, '\n') != NULL;
    }
    fclose(f);
    return found;
}

char *gpurun_rank0_output(const char *dir, const char **label)
{
    const char *d = dir && *dir ? dir : ".";
    char *p = gpurun_xasprintf("%s/rank.0.out", d);
    struct stat st;
    *label = "";
    if (lstat(p, &st) == 0)
        return p;
    free(p);
    /* One look at the folder: this host's file first (rank 0 is on the
     * first node, most often gpurun's own), then the others in turn. */
    char self[256] = "";
    gethostname(self, sizeof self - 1);
    char *mine = gpurun_host_output_name(self);
    char **cands = NULL;
    size_t n = 0, cap = 0;
    DIR *dh = opendir(d);
    struct dirent *e;
    while (dh && (e = readdir(dh))) {
        char *cand = gpurun_xasprintf("%s/%s", d, e->d_name);
        char *host = output_host(cand);
        free(host);
        if (!host) {
            free(cand);
            continue;
        }
        if (n == cap)
            cands = gpurun_xrealloc(cands, (cap = cap ? 2 * cap : 8) * sizeof *cands);
        cands[n++] = cand;
        if (!strcmp(e->d_name, mine)) { /* mine first */
            cands[n - 1] = cands[0];
            cands[0] = cand;
        }
    }
    if (dh)
        closedir(dh);
    free(mine);
    char *found = NULL;
    for (size_t i = 0; i < n && !found; i++)
        if (has_rank0_line(cands[i]))
            found = gpurun_xstrdup(cands[i]);
    if (!found)
        found = n ? gpurun_xstrdup(cands[0]) : gpurun_xasprintf("%s/rank.0.out", d);
    for (size_t i = 0; i < n; i++)
        free(cands[i]);
    free(cands);
    *label = gpurun_rank0_label(found) ? "0: " : "";
    return found;
}

