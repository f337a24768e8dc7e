/* SPDX-License-Identifier: BSD-3-Clause */
/* This node's discovered topology, kept between runs (topocache.h). */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "safefile.h"
#include "topocache.h"
#include "topo_model.h"
#include "util.h"

extern char **environ;

static bool enabled;
static void (*warn_fn)(const char *text);
static bool warned; /* once per process: one line per gpurun command */

void gpurun_topocache_enable(bool on)
{
    enabled = on;
}

void gpurun_topocache_on_warning(void (*fn)(const char *text))
{
    warn_fn = fn;
}

static void warn_once(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn_once(const char *fmt, ...)
{
    if (warned || !warn_fn)
        return;
    warned = true;
    char text[3 * 4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    warn_fn(text);
}

bool gpurun_topocache_enabled(void)
{
    return enabled;
}

/* What the discovery depends on, one "what=value" line each, then hashed. */
static void key_add(struct gpurun_strbuf *k, const char *what, const char *value)
{
    gpurun_strbuf_printf(k, "%s=%s\n", what, value ? value : "-");
}

static gpurun_topocache_key_fn key_gpus;

void gpurun_topocache_key_gpus(gpurun_topocache_key_fn fn)
{
    key_gpus = fn;
}

static void key_add_cb(void *ctx, const char *what, const char *value)
{
    key_add(ctx, what, value);
}

/* A small file's first line, or NULL. */
static char *first_line(const char *path)
{
    char buf[4096];
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    char *s = fgets(buf, sizeof buf, f) ? gpurun_xstrdup(buf) : NULL;
    fclose(f);
    if (s)
        s[strcspn(s, "\n")] = '\0';
    return s;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of a folder, sorted, each with the first line of its file
 * `sub` when sub is not NULL ("mlx5_0/ports/1/state"). */
static void key_add_folder(struct gpurun_strbuf *k, const char *dir, const char *prefix, const char *sub,
                           const char *need)
{
    DIR *d = opendir(dir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.' && (!prefix || !strncmp(e->d_name, prefix, strlen(prefix)))) {
            if (n == cap)
                names = gpurun_xrealloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
            names[n++] = gpurun_xstrdup(e->d_name);
        }
    if (d)
        closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, name_cmp);
    for (size_t i = 0; i < n; i++) {
        char *line = NULL;
        if (need) { /* only the entries that have it */
            char *p = gpurun_xasprintf("%s/%s/%s", dir, names[i], need);
            bool has = access(p, F_OK) == 0;
            free(p);
            if (!has) {
                free(names[i]);
                continue;
            }
        }
        if (sub) {
            char *p = gpurun_xasprintf("%s/%s/%s", dir, names[i], sub);
            line = first_line(p);
            free(p);
        }
        key_add(k, names[i], line ? line : "");
        free(line);
        free(names[i]);
    }
    free(names);
}

/* Every one of `online` in `allowed` (two cpu-list strings). */
static bool covers(const char *allowed, const char *online)
{
    if (!allowed || !online)
        return false;
    hwloc_bitmap_t a = hwloc_bitmap_alloc(), o = hwloc_bitmap_alloc();
    bool ok = hwloc_bitmap_list_sscanf(a, allowed) == 0 && hwloc_bitmap_list_sscanf(o, online) == 0 &&
              !hwloc_bitmap_iszero(o) && hwloc_bitmap_isincluded(o, a);
    hwloc_bitmap_free(a);
    hwloc_bitmap_free(o);
    return ok;
}

/* The mount point of the cpuset controller from /proc/self/mountinfo:
 * cgroup v1's "cpuset" hierarchy when there is one (a hybrid system keeps
 * cpuset there), else cgroup v2's; *v2 says which.  NULL when neither. */
static char *cpuset_mount(bool *v2)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return NULL;
    char line[4096], *v1 = NULL, *unified = NULL;
    while (fgets(line, sizeof line, f)) {
        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - FSTYPE SOURCE SUPEROPTIONS */
        char *sep = strstr(line, " - "), root[1024], mnt[1024], fstype[64], opts[1024];
        if (!sep || sscanf(line, "%*s %*s %*s %1023s %1023s", root, mnt) != 2 ||
            sscanf(sep + 3, "%63s %*s %1023s", fstype, opts) != 2 || strcmp(root, "/") || strchr(mnt, '\\'))
            continue;
        bool cpuset_opt = false;
        char *save = NULL;
        for (char *o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save))
            cpuset_opt = cpuset_opt || !strcmp(o, "cpuset");
        if (!strcmp(fstype, "cgroup") && cpuset_opt && !v1)
            v1 = gpurun_xstrdup(mnt);
        else if (!strcmp(fstype, "cgroup2") && !unified)
            unified = gpurun_xstrdup(mnt);
    }
    fclose(f);
    *v2 = !v1;
    if (v1) {
        free(unified);
        return v1;
    }
    return unified;
}

/* The first line of DIR/NAME, else of DIR/OLD_NAME when there is one. */
static char *cgroup_file(const char *dir, const char *name, const char *old_name)
{
    char *p = gpurun_xasprintf("%s/%s", dir, name), *line = first_line(p);
    free(p);
    if (!line && old_name) {
        p = gpurun_xasprintf("%s/%s", dir, old_name);
        line = first_line(p);
        free(p);
    }
    return line;
}

/* Whether this process's cpuset cgroup holds every online CPU and memory
 * node.  hwloc takes its allowed sets from the cgroup, not from the
 * affinity mask, so a process bound narrower inside such a cgroup (Slurm's
 * task/affinity, taskset, a launcher's binding) discovers what an unbound
 * one does.  The files are read even for "/": in a cgroup namespace (a
 * container) the root shown is the container's own cgroup.  False whenever
 * it cannot tell. */
static bool cgroup_whole_node(const char *cpu_online, const char *node_online)
{
    char *path = first_line("/proc/self/cpuset");
    if (!path || path[0] != '/' || strstr(path, "/..")) {
        free(path);
        return false;
    }
    bool v2 = false, whole = false;
    char *mnt = cpuset_mount(&v2);
    if (!mnt) {
        free(path);
        return false;
    }
    /* v2: a cgroup without the cpuset controller has the nearest
     * ancestor's sets, so look upwards from it for the first that has. */
    char *dir = gpurun_xasprintf("%s%s", mnt, path);
    for (;;) {
        /* v1 before Linux 4.17 has only cpuset.cpus and cpuset.mems */
        char *cpus = cgroup_file(dir, v2 ? "cpuset.cpus.effective" : "cpuset.effective_cpus", v2 ? NULL : "cpuset.cpus");
        char *mems = cgroup_file(dir, v2 ? "cpuset.mems.effective" : "cpuset.effective_mems", v2 ? NULL : "cpuset.mems");
        bool found = cpus != NULL;
        whole = found && covers(cpus, cpu_online) && (!node_online || (mems && covers(mems, node_online)));
        free(cpus);
        free(mems);
        char *slash = strrchr(dir, '/');
        if (found || !v2 || strlen(dir) <= strlen(mnt) || !slash)
            break;
        *slash = '\0';
    }
    free(dir);
    free(mnt);
    free(path);
    return whole;
}

char *gpurun_topocache_name(void)
{
    const char *off = getenv("GPURUN_TOPOLOGY_CACHE");
    if (!enabled || (off && !strcmp(off, "0")))
        return NULL;
    /* A site's or a user's hwloc settings choose what a discovery finds. */
    for (char **e = environ; e && *e; e++)
        if (!strncmp(*e, "HWLOC_", 6))
            return NULL;
    /* Only a process whose cgroup holds the whole node: hwloc leaves out
     * what a cgroup forbids.  An affinity mask that holds it all says so
     * without looking further. */
    char *cpus = gpurun_proc_status("Cpus_allowed_list"), *mems = gpurun_proc_status("Mems_allowed_list");
    char *cpu_online = first_line("/sys/devices/system/cpu/online");
    char *node_online = first_line("/sys/devices/system/node/online");
    char *name = NULL;
    if ((covers(cpus, cpu_online) && (!node_online || covers(mems, node_online))) ||
        cgroup_whole_node(cpu_online, node_online)) {
        struct gpurun_strbuf k = {0};
        char host[256] = "", api[32];
        gethostname(host, sizeof host - 1);
        snprintf(api, sizeof api, "%x", hwloc_get_api_version());
        char *boot = first_line("/proc/sys/kernel/random/boot_id");
        key_add(&k, "gpurun", PACKAGE_VERSION);
        key_add(&k, "hwloc", api);
        key_add(&k, "boot", boot);
        key_add(&k, "host", host);
        key_add(&k, "cpus", cpu_online);
        key_add(&k, "nodes", node_online);
        /* GPU runtimes' components see what these and the device nodes let
         * them; a port's state says whether an HCA is planned. */
        static const char *const vars[] = {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                                           "GPU_DEVICE_ORDINAL",   "ZE_AFFINITY_MASK",     "ZE_FLAT_DEVICE_HIERARCHY",
                                           NULL};
        for (size_t i = 0; vars[i]; i++)
            key_add(&k, vars[i], getenv(vars[i]));
        if (key_gpus) /* the resource managers' lists of the job's GPUs */
            key_gpus(key_add_cb, &k);
        key_add_folder(&k, "/sys/bus/pci/devices", NULL, NULL, NULL);
        key_add_folder(&k, "/dev", "nvidia", NULL, NULL);
        key_add_folder(&k, "/dev/dri", NULL, NULL, NULL);
        key_add_folder(&k, "/sys/class/infiniband", NULL, "ports/1/state", NULL);
        /* Interfaces of a device only: hwloc finds network interfaces under
         * their (PCI) device, never a veth, bridge or tunnel, which come and
         * go with containers and other jobs' namespaces and would make every
         * discovery a new one. */
        key_add_folder(&k, "/sys/class/net", NULL, "operstate", "device");
        uint64_t h = 14695981039346656037ULL; /* FNV-1a */
        for (size_t i = 0; i < k.len; i++)
            h = (h ^ (unsigned char)k.s[i]) * 1099511628211ULL;
        name = gpurun_xasprintf("topology-%016llx.xml", (unsigned long long)h);
        free(k.s);
        free(boot);
    }
    free(cpus);
    free(mems);
    free(cpu_online);
    free(node_online);
    return name;
}

/* What stands at `name` in `dirfd` that the cache cannot use: the reason
 * in `why` ("is owned by another user (uid 65534)"); false when nothing
 * is there or nothing can be said. */
static bool taken(int dirfd, const char *name, char *why, size_t size)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return false;
    if (S_ISLNK(st.st_mode))
        snprintf(why, size, "is a symlink");
    else if (!S_ISDIR(st.st_mode))
        snprintf(why, size, "is not a folder");
    else if (st.st_uid != geteuid())
        snprintf(why, size, "is owned by another user (uid %ld), who made it first", (long)st.st_uid);
    else if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))
        snprintf(why, size, "is writable by %s", (st.st_mode & 002) ? "everyone" : "its group");
    else
        return false;
    return true;
}

/* The user's own cache folder, where no other user can make anything:
 * $XDG_CACHE_HOME/gpurun, else ~/.cache/gpurun (made 0700). */
static int home_folder(char *shown, size_t len)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0] == '/')
        snprintf(shown, len, "%s/gpurun", xdg);
    else if (home && home[0] == '/')
        snprintf(shown, len, "%s/.cache/gpurun", home);
    else {
        struct passwd *pw = getpwuid(geteuid());
        if (!pw || !pw->pw_dir || pw->pw_dir[0] != '/')
            return -1;
        snprintf(shown, len, "%s/.cache/gpurun", pw->pw_dir);
    }
    gpurun_error_t err;
    int fd = gpurun_open_folder_path(shown, "topology cache folder", 0700, true, &err);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_uid != geteuid())) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The cache folder, opened (made 0700 when missing) and checked: ours,
 * writable by nobody else.  In node-local memory ($XDG_RUNTIME_DIR, else
 * /dev/shm) as gpurun-UID; where another user made that first (anyone can
 * make a name in /dev/shm), in the user's own cache folder instead, which
 * the first such call of the process says (warn_once). */
static int cache_folder(char *shown, size_t len)
{
    const char *base = getenv("XDG_RUNTIME_DIR");
    if (!base || base[0] != '/')
        base = "/dev/shm";
    int bfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char name[64], why[128] = "";
    snprintf(name, sizeof name, "gpurun-%u", (unsigned)getuid());
    snprintf(shown, len, "%s/%s", base, name);
    int fd = -1;
    if (bfd >= 0) {
        gpurun_error_t err;
        fd = gpurun_open_folder_at(bfd, name, shown, "topology cache folder", 0700, true, &err);
        if (fd < 0 && !taken(bfd, name, why, sizeof why))
            why[0] = '\0';
        close(bfd);
    }
    if (fd >= 0)
        return fd;
    char first[4096];
    snprintf(first, sizeof first, "%s", shown);
    fd = home_folder(shown, len);
    if (fd >= 0 && why[0])
        warn_once("the topology cache folder %s %s: not used; the cache is kept in %s instead (remove %s, as its "
                  "owner or root, to have it in memory again)",
                  first, why, shown, first);
    else if (fd < 0)
        warn_once("the topology cache is off: %s %s, and %s cannot be used either; every gpurun command discovers "
                  "the node again",
                  first, why[0] ? why : "cannot be used", shown);
    return fd;
}

int gpurun_topocache_read(const char *name, char **bufp, size_t *lenp)
{
    char shown[4096];
    int dfd = cache_folder(shown, sizeof shown);
    if (dfd < 0)
        return -1;
    gpurun_error_t err;
    int fd = gpurun_open_own_at(dfd, name, NULL, &err);
    close(dfd);
    if (fd < 0)
        return -1;
    size_t cap = 1 << 16, len = 0;
    char *buf = gpurun_xmalloc(cap);
    ssize_t n;
    while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
        len += (size_t)n;
        if (len + 1 == cap) {
            if (cap >= GPURUN_TOPO_MAX_FILE_BYTES)
                break;
            buf = gpurun_xrealloc(buf, cap *= 2);
        }
    }
    close(fd);
    if (n != 0 || len == 0) {
        free(buf);
        return -1;
    }
    buf[len] = '\0';
    *bufp = buf;
    *lenp = len;
    return 0;
}

void gpurun_topocache_write(const char *name, hwloc_topology_t topo)
{
    char *xml = NULL;
    int xlen = 0;
    if (hwloc_topology_export_xmlbuffer(topo, &xml, &xlen, 0) < 0)
        return;
    char shown[4096];
    int dfd = cache_folder(shown, sizeof shown);
    if (dfd >= 0 && xlen > 1) {
        gpurun_error_t err;
        char *path = gpurun_xasprintf("%s/%s", shown, name);
        gpurun_write_atomic_at(dfd, name, path, xml, (size_t)xlen - 1, 0600, 0, &err);
        free(path);
    }
    if (dfd >= 0)
        close(dfd);
    hwloc_free_xmlbuffer(topo, xml);
}
