/* SPDX-License-Identifier: BSD-3-Clause */
/* GPUDirect RDMA: find the pieces on the node, then decide per rank from the
 * PCI path between its GPU and its NIC.  Everything is read below a root
 * folder, and tools come from PATH, so tests stand in a fake sysfs/proc
 * tree and fake ompi_info/ucx_info scripts. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpudirect.h"
#include "tool.h"
#include "util.h"

#define TOOL_OUTPUT_MAX (8u << 20) /* `ompi_info --parsable --all` is about 600 kB */
#define TOOL_TIMEOUT_S 10.0

/* --- reading the root -------------------------------------------------------------- */

static char *under(const char *root, const char *path)
{
    size_t rl = strlen(root);
    while (rl > 0 && root[rl - 1] == '/')
        rl--;
    return gpurun_xasprintf("%.*s%s", (int)rl, root, path);
}

static bool exists(const char *root, const char *path)
{
    char *p = under(root, path);
    struct stat st;
    bool ok = stat(p, &st) == 0;
    free(p);
    return ok;
}

/* The first line of a small file, without its newline; "" when unreadable. */
static void read_line(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    if (!fgets(buf, (int)len, f))
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
}

/* A module is loaded when /sys/module/NAME exists or /proc/modules lists it. */
static bool module_loaded(const char *root, const char *name)
{
    char *p = gpurun_xasprintf("/sys/module/%s", name);
    bool found = exists(root, p);
    free(p);
    if (found)
        return true;
    p = under(root, "/proc/modules");
    FILE *f = fopen(p, "re");
    free(p);
    if (!f)
        return false;
    char line[512];
    size_t nl = strlen(name);
    while (!found && fgets(line, sizeof line, f))
        found = !strncmp(line, name, nl) && (line[nl] == ' ' || line[nl] == '\t');
    fclose(f);
    return found;
}

static int port_cmp(const void *a, const void *b)
{
    const struct gpurun_rdma_port *x = a, *y = b;
    int c = strcmp(x->device, y->device);
    return c ? c : x->port - y->port;
}

static void find_rdma_ports(gpurun_gdr_probe_t *p)
{
    char *cls = under(p->root, "/sys/class/infiniband");
    DIR *d = opendir(cls);
    if (!d) {
        free(cls);
        return;
    }
    int cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof p->ports[0].device)
            continue;
        char *ports = gpurun_xasprintf("%s/%s/ports", cls, e->d_name);
        DIR *pd = opendir(ports);
        for (struct dirent *pe; pd && (pe = readdir(pd));) {
            char *end;
            long n = strtol(pe->d_name, &end, 10);
            if (pe->d_name[0] == '.' || *end || n <= 0 || n > 1024)
                continue;
            if (p->nports == cap) {
                cap = cap ? 2 * cap : 8;
                p->ports = gpurun_xrealloc(p->ports, (size_t)cap * sizeof *p->ports);
            }
            struct gpurun_rdma_port *port = &p->ports[p->nports++];
            memset(port, 0, sizeof *port);
            snprintf(port->device, sizeof port->device, "%.*s", (int)sizeof port->device - 1, e->d_name);
            port->port = (int)n;
            char *sp = gpurun_xasprintf("%s/%ld/state", ports, n);
            char line[128];
            read_line(sp, line, sizeof line);
            free(sp);
            /* "4: ACTIVE" */
            const char *name = strchr(line, ':');
            name = name ? name + 1 : line;
            while (*name == ' ')
                name++;
            snprintf(port->state, sizeof port->state, "%.*s", (int)sizeof port->state - 1, *name ? name : "unknown");
            port->active = strstr(line, "ACTIVE") != NULL;
            p->nactive += port->active;
        }
        if (pd)
            closedir(pd);
        free(ports);
    }
    closedir(d);
    free(cls);
    if (p->nports > 1)
        qsort(p->ports, (size_t)p->nports, sizeof *p->ports, port_cmp);
}

/* The value after `key` up to the end of its line, trimmed, into buf. */
static bool line_value(const char *text, const char *key, char *buf, size_t len)
{
    const char *s = strstr(text, key);
    if (!s)
        return false;
    s += strlen(key);
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strcspn(s, "\r\n");
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    snprintf(buf, len, "%.*s", (int)n, s);
    return true;
}

/* Open MPI: `ompi_info --parsable --all`.  CUDA support is
 * mpi_built_with_cuda_support (4.x) or opal_built_with_cuda_support (5.x),
 * ROCm support opal_built_with_rocm_support (5.x). */
static void probe_ompi(gpurun_gdr_probe_t *p, double timeout)
{
    char *argv[] = {"ompi_info", "--parsable", "--all", NULL};
    char *out = NULL;
    int status;
    if (gpurun_tool_run(argv, timeout, TOOL_OUTPUT_MAX, &out, &status) < 0)
        return;
    if (status != 0 || !strstr(out, "ompi:version:full:")) {
        free(out);
        return;
    }
    p->ompi = true;
    line_value(out, "ompi:version:full:", p->ompi_version, sizeof p->ompi_version);
    p->ompi_cuda = p->ompi_rocm = GPURUN_NO;
    p->ompi_pml_ucx = GPURUN_NO;
    for (char *line = out, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (!strncmp(line, "mca:pml:ucx:", 12))
            p->ompi_pml_ucx = GPURUN_YES;
        const char *v = strstr(line, "_built_with_cuda_support:value:");
        if (v && !strcmp(v + strlen("_built_with_cuda_support:value:"), "true"))
            p->ompi_cuda = GPURUN_YES;
        v = strstr(line, "_built_with_rocm_support:value:");
        if (v && !strcmp(v + strlen("_built_with_rocm_support:value:"), "true"))
            p->ompi_rocm = GPURUN_YES;
    }
    free(out);
}

/* UCX: `ucx_info -v` (version, configure flags) and `ucx_info -d` (the
 * transports this node opened: cuda_copy, cuda_ipc, gdr_copy, rocm_copy). */
static void probe_ucx(gpurun_gdr_probe_t *p, double timeout)
{
    char *argv[] = {"ucx_info", "-v", NULL};
    char *out = NULL;
    int status;
    if (gpurun_tool_run(argv, timeout, TOOL_OUTPUT_MAX, &out, &status) < 0)
        return;
    if (status != 0) {
        free(out);
        return;
    }
    p->ucx = true;
    if (!line_value(out, "Library version:", p->ucx_version, sizeof p->ucx_version))
        line_value(out, "UCT version=", p->ucx_version, sizeof p->ucx_version);
    const char *cfg = strstr(out, "Configured with:");
    size_t cl = cfg ? strcspn(cfg, "\n") : 0;
    char *flags = gpurun_xasprintf("%.*s ", (int)cl, cfg ? cfg : "");
    bool built_cuda = strstr(flags, "--with-cuda") && !strstr(flags, "--with-cuda=no");
    bool built_rocm = strstr(flags, "--with-rocm") && !strstr(flags, "--with-rocm=no");
    free(flags);
    free(out);
    out = NULL;
    char *argd[] = {"ucx_info", "-d", NULL};
    bool cuda = false, rocm = false, gdr = false;
    if (gpurun_tool_run(argd, timeout, TOOL_OUTPUT_MAX, &out, &status) == 0) {
        cuda = strstr(out, "Transport: cuda_copy") || strstr(out, "Transport: cuda_ipc");
        rocm = strstr(out, "Transport: rocm_copy") || strstr(out, "Transport: rocm_ipc");
        gdr = strstr(out, "Transport: gdr_copy") != NULL;
        free(out);
    }
    p->ucx_cuda = cuda || built_cuda ? GPURUN_YES : GPURUN_NO;
    p->ucx_rocm = rocm || built_rocm ? GPURUN_YES : GPURUN_NO;
    p->ucx_gdr_copy = gdr ? GPURUN_YES : GPURUN_NO;
}

/* Below a fake root, proc/self/limits (as Linux writes it) stands in for
 * this process's limit: "Max locked memory  unlimited  unlimited  bytes". */
static bool fake_memlock(const char *root, struct rlimit *rl)
{
    if (!strcmp(root, "/"))
        return false;
    char *p = under(root, "/proc/self/limits");
    FILE *f = fopen(p, "re");
    free(p);
    if (!f)
        return false;
    char line[256];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, "Max locked memory", 17))
            continue;
        const char *v = line + 17;
        while (*v == ' ' || *v == '\t')
            v++;
        if (!strncmp(v, "unlimited", 9)) {
            rl->rlim_cur = rl->rlim_max = RLIM_INFINITY;
            found = true;
        } else {
            char *end;
            unsigned long long n = strtoull(v, &end, 10);
            found = end != v;
            rl->rlim_cur = rl->rlim_max = (rlim_t)n;
        }
    }
    fclose(f);
    return found;
}

int gpurun_gdr_probe(const struct gpurun_gdr_probe_opts *opts, gpurun_gdr_probe_t **probep, gpurun_error_t *err)
{
    struct gpurun_gdr_probe_opts none = {0};
    if (!opts)
        opts = &none;
    const char *root = opts->root && *opts->root ? opts->root : "/";
    struct stat st;
    if (stat(root, &st) < 0 || !S_ISDIR(st.st_mode))
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: not a folder to look for GPUDirect pieces in", root);
    gpurun_gdr_probe_t *p = gpurun_xcalloc(1, sizeof *p);
    p->root = gpurun_xstrdup(root);
    if (module_loaded(root, "nvidia_peermem"))
        snprintf(p->peermem, sizeof p->peermem, "nvidia_peermem");
    else if (module_loaded(root, "nv_peer_mem"))
        snprintf(p->peermem, sizeof p->peermem, "nv_peer_mem");
    p->amdgpu = module_loaded(root, "amdgpu");
    p->gdrcopy = exists(root, "/dev/gdrdrv");
    find_rdma_ports(p);

    struct rlimit rl;
    if (opts->memlock)
        rl = *opts->memlock;
    else if (!fake_memlock(root, &rl) && getrlimit(RLIMIT_MEMLOCK, &rl) < 0)
        rl.rlim_cur = 0;
    p->memlock_unlimited = rl.rlim_cur == RLIM_INFINITY;
    p->memlock_bytes = p->memlock_unlimited ? 0 : (unsigned long long)rl.rlim_cur;

    p->ompi_cuda = p->ompi_rocm = p->ompi_pml_ucx = GPURUN_UNKNOWN;
    p->ucx_cuda = p->ucx_rocm = p->ucx_gdr_copy = GPURUN_UNKNOWN;
    if (!opts->no_tools) {
        double t = opts->tool_timeout_s > 0 ? opts->tool_timeout_s : TOOL_TIMEOUT_S;
        probe_ompi(p, t);
        probe_ucx(p, t);
    }
    *probep = p;
    return 0;
}

void gpurun_gdr_probe_destroy(gpurun_gdr_probe_t *p)
{
    if (!p)
        return;
    free(p->root);
    free(p->ports);
    free(p);
}

static json_t *tristate_json(enum gpurun_tristate t)
{
    return t == GPURUN_UNKNOWN ? json_null() : json_boolean(t == GPURUN_YES);
}

json_t *gpurun_gdr_probe_json(const gpurun_gdr_probe_t *p)
{
    json_t *ports = json_array();
    for (int i = 0; i < p->nports; i++)
        json_array_append_new(ports, json_pack("{s:s, s:i, s:s, s:b}", "device", p->ports[i].device, "port",
                                               p->ports[i].port, "state", p->ports[i].state, "active",
                                               p->ports[i].active));
    json_t *ompi = p->ompi ? json_pack("{s:s, s:o, s:o, s:o}", "version", p->ompi_version, "cuda",
                                       tristate_json(p->ompi_cuda), "rocm", tristate_json(p->ompi_rocm), "pml_ucx",
                                       tristate_json(p->ompi_pml_ucx))
                           : json_null();
    json_t *ucx = p->ucx ? json_pack("{s:s, s:o, s:o, s:o}", "version", p->ucx_version, "cuda",
                                     tristate_json(p->ucx_cuda), "rocm", tristate_json(p->ucx_rocm), "gdr_copy",
                                     tristate_json(p->ucx_gdr_copy))
                         : json_null();
    return json_pack("{s:s, s:o, s:b, s:b, s:o, s:i, s:o, s:b, s:o, s:o}", "root", p->root, "peer_memory",
                     p->peermem[0] ? json_string(p->peermem) : json_null(), "amdgpu", p->amdgpu, "gdrcopy",
                     p->gdrcopy, "rdma_ports", ports, "rdma_active_ports", p->nactive, "memlock",
                     p->memlock_unlimited ? json_string("unlimited") : json_integer((json_int_t)p->memlock_bytes),
                     "memlock_unlimited", p->memlock_unlimited, "open_mpi", ompi, "ucx", ucx);
}

/* --- what is missing ------------------------------------------------------------ */

static void add_missing(char *buf, size_t len, int *n, const char *sentence)
{
    size_t used = strlen(buf);
    if (used + 1 >= len)
        return;
    int w = snprintf(buf + used, len - used, "%s%s", *n ? "; " : "", sentence);
    if (w < 0 || (size_t)w >= len - used) /* cut short: the first reasons are the telling ones */
        buf[len - 1] = '\0';
    (*n)++;
}

int gpurun_gdr_node_missing(const gpurun_gdr_probe_t *p, const char *vendor, char *buf, size_t len)
{
    int n = 0;
    bool amd = vendor && !strcmp(vendor, "amd");
    buf[0] = '\0';
    if (amd && !p->amdgpu)
        add_missing(buf, len, &n, "the amdgpu kernel driver is not loaded (install ROCm's amdgpu-dkms)");
    if (!amd && !p->peermem[0])
        add_missing(buf, len, &n,
                    "no peer-memory kernel module is loaded (modprobe nvidia_peermem; it ships with the NVIDIA "
                    "driver)");
    if (p->nports == 0)
        add_missing(buf, len, &n, "no RDMA device in /sys/class/infiniband (install rdma-core and the NIC driver)");
    else if (p->nactive == 0)
        add_missing(buf, len, &n,
                    "no RDMA port is ACTIVE in /sys/class/infiniband/*/ports/*/state (check the cable and the "
                    "subnet manager: ibstat)");
    if (!p->memlock_unlimited) {
        char s[256];
        snprintf(s, sizeof s,
                 "the locked-memory limit is %llu KiB, not unlimited (set memlock unlimited in "
                 "/etc/security/limits.conf, and PropagateResourceLimitsExcept=MEMLOCK under Slurm)",
                 p->memlock_bytes / 1024);
        add_missing(buf, len, &n, s);
    }
    bool mpi = amd ? p->ompi_rocm == GPURUN_YES || p->ucx_rocm == GPURUN_YES
                   : p->ompi_cuda == GPURUN_YES || p->ucx_cuda == GPURUN_YES;
    if (!mpi) {
        char s[256];
        snprintf(s, sizeof s, "%s (ompi_info: %s; ucx_info: %s)",
                 amd ? "neither Open MPI nor UCX is built with ROCm support"
                     : "neither Open MPI nor UCX is built with CUDA support",
                 p->ompi ? "no" : "not found", p->ucx ? "no" : "not found");
        add_missing(buf, len, &n, s);
    }
    return n;
}

/* --- decisions ------------------------------------------------------------------ */

const char *gpurun_gdr_nccl_level(enum gpurun_affinity a)
{
    switch (a) {
    case GPURUN_AFF_PIX: return "PIX";
    case GPURUN_AFF_PXB: return "PXB";
    case GPURUN_AFF_PHB:
    case GPURUN_AFF_NODE: return "PHB"; /* NCCL: same CPU, through its host bridges */
    default: return "SYS";
    }
}

/* Whether an RDMA NIC can carry it: NULL when yes, else why not. */
static const char *nic_rdma_problem(const gpurun_gdr_probe_t *p, const gpurun_nic_t *nic, char *buf, size_t len)
{
    bool found = false, any_active = false;
    for (int i = 0; i < p->nports; i++) {
        if (strcmp(p->ports[i].device, nic->name))
            continue;
        found = true;
        any_active |= p->ports[i].active;
        if (p->ports[i].port == nic->port && p->ports[i].active)
            return NULL;
    }
    if (found && any_active)
        return NULL; /* the planned port is down, another is up: UCX picks it */
    if (found)
        snprintf(buf, len, "%s has no ACTIVE port", nic->name);
    else
        snprintf(buf, len, "%s (%s) is not an RDMA device in /sys/class/infiniband", nic->name, nic->kind);
    return buf;
}

static void rank_why(struct gpurun_gdr_rank *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rank_why(struct gpurun_gdr_rank *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
}

/* A decision under way: the node's missing pieces, per GPU vendor the job
 * uses, asked once; what stands against `gpudirect = on`. */
struct gdr_deciding {
    const gpurun_gdr_probe_t *p;
    const gpurun_plan_t *plan;
    enum gpurun_gpudirect mode;
    gpurun_gdr_decision_t *d;
    char miss_nv[1024], miss_amd[1024];
    int nmiss_nv, nmiss_amd; /* -1: not asked yet */
    char problems[1536];
    int nproblems, nmissing;
};

/* What the node lacks for this vendor's GPUs; NULL when nothing. */
static const char *gdr_node_missing(struct gdr_deciding *c, bool amd)
{
    if (!c->p)
        return "the node's GPUDirect pieces were not probed";
    char *miss = amd ? c->miss_amd : c->miss_nv;
    int *n = amd ? &c->nmiss_amd : &c->nmiss_nv;
    if (*n < 0)
        *n = gpurun_gdr_node_missing(c->p, amd ? "amd" : "nvidia", miss, sizeof c->miss_nv);
    return *n ? miss : NULL;
}

/* Under `on`, a reason it cannot be, reported once for the node. */
static void gdr_problem(struct gdr_deciding *c, const char *what)
{
    if (c->mode == GPURUN_GPUDIRECT_ON)
        add_missing(c->problems, sizeof c->problems, &c->nproblems, what);
}

/* The rank's GPU and NIC, both usable: on when they are near (or `on`). */
static void gdr_rank_path(struct gdr_deciding *c, const gpurun_rank_plan_t *rp, struct gpurun_gdr_rank *r)
{
    const gpurun_topo_t *t = c->plan->topo;
    const gpurun_nic_t *nic = &t->nics[rp->nics[0]];
    const gpurun_gpu_t *gpu = &t->gpus[rp->gpus[0]];
    const char *aff = gpurun_affinity_name(rp->nic_affinity);
    bool near = rp->nic_affinity == GPURUN_AFF_PIX || rp->nic_affinity == GPURUN_AFF_PXB;
    if (near) {
        r->on = true;
        r->level = gpurun_gdr_nccl_level(rp->nic_affinity);
        rank_why(r, "GPU %s and %s are %s apart: one PCIe switch tree, the NIC reads GPU memory directly", gpu->pci,
                 nic->name, aff);
    } else if (c->mode == GPURUN_GPUDIRECT_ON) {
        r->on = true;
        r->level = gpurun_gdr_nccl_level(rp->nic_affinity);
        rank_why(r, "gpudirect = on in the job, though GPU %s and %s are %s apart (through the CPU: often slower "
                 "than staging in host memory)", gpu->pci, nic->name, aff);
    } else {
        rank_why(r, "GPU %s and %s are %s apart: the path crosses the CPU, where GPUDirect RDMA does not pay",
                 gpu->pci, nic->name, aff);
    }
}

static void gdr_decide_rank(struct gdr_deciding *c, int i)
{
    const gpurun_rank_plan_t *rp = &c->plan->ranks[i];
    struct gpurun_gdr_rank *r = &c->d->ranks[i];
    r->rank = rp->rank;
    r->has_gpu = rp->ngpus > 0;
    if (!r->has_gpu) {
        rank_why(r, "no GPU");
        if (!strstr(c->problems, "no GPU"))
            gdr_problem(c, c->plan->req.gpus_per_rank == 0 ? "the job's ranks have no GPU (gpus_per_rank = 0)"
                                                           : "some ranks have no GPU");
        return;
    }
    r->level = "LOC";
    if (c->mode == GPURUN_GPUDIRECT_OFF) {
        rank_why(r, "gpudirect = off in the job");
        return;
    }
    const char *miss = gdr_node_missing(c, !strcmp(c->plan->topo->gpus[rp->gpus[0]].vendor, "amd"));
    if (miss) {
        rank_why(r, "the node lacks pieces: %s", miss);
        if (!strstr(c->d->missing, miss))
            add_missing(c->d->missing, sizeof c->d->missing, &c->nmissing, miss);
        return; /* `on`: reported once, by the caller */
    }
    if (rp->nnics == 0) {
        rank_why(r, "no high-speed NIC is planned for this rank");
        char s[128];
        snprintf(s, sizeof s, "rank %d has no high-speed NIC", rp->rank);
        gdr_problem(c, s);
        return;
    }
    char nb[256];
    const char *bad = nic_rdma_problem(c->p, &c->plan->topo->nics[rp->nics[0]], nb, sizeof nb); /* p is set here */
    if (bad) {
        rank_why(r, "%s", bad);
        char s[320];
        snprintf(s, sizeof s, "rank %d: %s", rp->rank, bad);
        gdr_problem(c, s);
        return;
    }
    gdr_rank_path(c, rp, r);
}

int gpurun_gdr_decide(const gpurun_gdr_probe_t *p, const gpurun_plan_t *plan, enum gpurun_gpudirect mode,
                      gpurun_gdr_decision_t **decp, gpurun_error_t *err)
{
    struct gdr_deciding c = {.p = p, .plan = plan, .mode = mode, .nmiss_nv = -1, .nmiss_amd = -1};
    gpurun_gdr_decision_t *d = c.d = gpurun_xcalloc(1, sizeof *d);
    d->mode = mode;
    d->nranks = plan->nranks;
    d->ranks = gpurun_xcalloc((size_t)(plan->nranks > 0 ? plan->nranks : 1), sizeof *d->ranks);
    d->pieces = p ? gpurun_gdr_probe_json(p) : json_null();
    for (int i = 0; i < plan->nranks; i++)
        gdr_decide_rank(&c, i);
    if (mode == GPURUN_GPUDIRECT_ON && (d->missing[0] || c.nproblems)) {
        gpurun_err(err, GPURUN_EXIT_ENV, "gpudirect = on, but %s cannot do GPUDirect RDMA: %s%s%s; nothing was started",
                   plan->topo->hostname, d->missing, d->missing[0] && c.nproblems ? "; " : "", c.problems);
        gpurun_gdr_decision_destroy(d);
        return -1;
    }
    for (int i = 0; i < d->nranks; i++)
        d->non += d->ranks[i].on;
    *decp = d;
    return 0;
}

void gpurun_gdr_decision_destroy(gpurun_gdr_decision_t *d)
{
    if (!d)
        return;
    free(d->ranks);
    json_decref(d->pieces);
    free(d);
}

const char *gpurun_gdr_mode_name(enum gpurun_gpudirect m)
{
    return m == GPURUN_GPUDIRECT_ON ? "on" : m == GPURUN_GPUDIRECT_OFF ? "off" : "auto";
}

enum gpurun_gpudirect gpurun_gdr_mode_from_name(const char *s)
{
    return s && !strcmp(s, "on") ? GPURUN_GPUDIRECT_ON : s && !strcmp(s, "off") ? GPURUN_GPUDIRECT_OFF
                                                                                : GPURUN_GPUDIRECT_AUTO;
}

void gpurun_gdr_apply(const gpurun_gdr_decision_t *d, const gpurun_gdr_probe_t *p, gpurun_plan_t *plan,
                      const struct gpurun_kvlist *extra)
{
    /* Open MPI reaches GPUDirect RDMA through UCX, and every rank of a job
     * must pick the same pml: all of them get it when any rank is on (an
     * Open MPI without the UCX pml would not start with it: none then). */
    bool pml = d->non > 0 && (!p || p->ompi_pml_ucx != GPURUN_NO);
    for (int i = 0; i < d->nranks && i < plan->nranks; i++) {
        const struct gpurun_gdr_rank *r = &d->ranks[i];
        json_t *env = plan->ranks[i].env;
        if (!r->has_gpu || !env)
            continue;
        json_object_set_new(env, "UCX_IB_GPU_DIRECT_RDMA", json_string(r->on ? "yes" : "no"));
        json_object_set_new(env, "NCCL_NET_GDR_LEVEL", json_string(r->level ? r->level : "LOC"));
        if (pml)
            json_object_set_new(env, "OMPI_MCA_pml", json_string("ucx"));
        if (!r->on)
            continue;
        for (size_t k = 0; extra && k < extra->n; k++)
            json_object_set_new(env, extra->items[k].key, json_string(extra->items[k].value));
    }
}

json_t *gpurun_gdr_decision_json(const gpurun_gdr_decision_t *d)
{
    json_t *ranks = json_array();
    for (int i = 0; i < d->nranks; i++) {
        const struct gpurun_gdr_rank *r = &d->ranks[i];
        json_array_append_new(ranks, json_pack("{s:i, s:b, s:o, s:s}", "rank", r->rank, "on", r->on, "level",
                                               r->level ? json_string(r->level) : json_null(), "why", r->why));
    }
    return json_pack("{s:s, s:i, s:o, s:o, s:O}", "mode", gpurun_gdr_mode_name(d->mode), "on_ranks", d->non,
                     "ranks", ranks,
                     "missing", d->missing[0] ? json_string(d->missing) : json_null(), "pieces", d->pieces);
}

int gpurun_gdr_setup(gpurun_plan_t *plan, enum gpurun_gpudirect mode, const struct gpurun_kvlist *extra,
                     gpurun_gdr_probe_t **probep, json_t **recordp, gpurun_error_t *err)
{
    bool gpus = false;
    for (int i = 0; i < plan->nranks; i++)
        gpus |= plan->ranks[i].ngpus > 0;
    /* ompi_info and ucx_info take a moment: only when there is something to decide. */
    if (mode != GPURUN_GPUDIRECT_OFF && gpus && !*probep && gpurun_gdr_probe(NULL, probep, err) < 0)
        return -1;
    gpurun_gdr_decision_t *d = NULL;
    if (gpurun_gdr_decide(*probep, plan, mode, &d, err) < 0)
        return -1;
    gpurun_gdr_apply(d, *probep, plan, extra);
    if (recordp)
        *recordp = gpurun_gdr_decision_json(d);
    gpurun_gdr_decision_destroy(d);
    return 0;
}
