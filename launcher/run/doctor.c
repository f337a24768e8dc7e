/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun doctor: one screen telling a newcomer whether this node can run GPU
 * jobs well, and what to fix.  Each check adds one line; nothing here
 * changes the machine. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monitor.h"
#include "container.h"
#include "doctor.h"
#include "mps.h"
#include "gpudirect.h"
#include "manager.h"
#include "plugin.h"
#include "topology.h"
#include "energy.h"
#include "stall_rank.h"
#include "util.h"

#define VERSION_OUTPUT_MAX (64u << 10)

static const char *const status_names[] = {"PASS", "WARN", "FAIL"};

struct doctor {
    json_t *checks;
    int counts[3];
    double timeout;
};

static void check(struct doctor *d, const char *id, const char *title, enum gpurun_check_status st, const char *fix,
                  const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void check(struct doctor *d, const char *id, const char *title, enum gpurun_check_status st, const char *fix,
                  const char *fmt, ...)
{
    char raw[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    /* A detail quotes what tools printed: their escape codes (and bytes that
     * are not UTF-8, which JSON cannot hold) are shown as \xNN, never sent
     * to the terminal. */
    char *detail = gpurun_terminal_text(raw);
    json_array_append_new(d->checks, json_pack("{s:s, s:s, s:s, s:s, s:o}", "id", id, "title", title, "status",
                                               status_names[st], "detail", detail, "fix",
                                               st != GPURUN_CHECK_PASS && fix ? json_string(fix) : json_null()));
    free(detail);
    d->counts[st]++;
}

/* What a tool says, in one line: the first line holding `want` (else the
 * first line) when it succeeds, its last line (where tools put the fatal
 * error) when it fails.  Returns the tool's exit status, or -1 when it is
 * not on PATH. */
static int tool_line(struct doctor *d, char *const argv[], const char *want, char *buf, size_t len)
{
    char *out = NULL;
    int status;
    buf[0] = '\0';
    if (gpurun_tool_run(argv, d->timeout, VERSION_OUTPUT_MAX, &out, &status) < 0)
        return -1;
    const char *line = out;
    if (status != 0) {
        size_t n = strlen(out);
        while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r' || out[n - 1] == ' '))
            out[--n] = '\0';
        const char *nl = strrchr(out, '\n');
        line = nl ? nl + 1 : out;
    } else if (want) { /* the first line that holds `want`, else the first line */
        const char *w = strstr(out, want);
        if (w) {
            while (w > out && w[-1] != '\n')
                w--;
            line = w;
        }
    }
    while (*line == ' ' || *line == '\t')
        line++;
    size_t n = strcspn(line, "\r\n");
    snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), line);
    free(out);
    return status;
}

/* --- launchers, MPI, resource managers ------------------------------------------------- */

static void check_launcher(struct doctor *d)
{
    const gpurun_launcher_plugin_t *p;
    char why[256] = "";
    gpurun_error_t err = {0};
    if (gpurun_launcher_choose("auto", &p, why, sizeof why, &err) < 0) {
        check(d, "launcher", "Launcher", GPURUN_CHECK_FAIL, "reinstall gpurun: its built-in launchers are missing",
              "%s", err.text);
        return;
    }
    if (!strcmp(p->name, "local"))
        check(d, "launcher", "Launcher", GPURUN_CHECK_WARN,
              "install Open MPI (Debian: apt install openmpi-bin) or run inside a Slurm allocation, so that ranks "
              "form one MPI job",
              "%s: ranks start as single-process MPI jobs on this node only", why);
    else
        check(d, "launcher", "Launcher", GPURUN_CHECK_PASS, NULL, "%s", why);
}

static void check_mpi(struct doctor *d, const gpurun_gdr_probe_t *probe, bool nvidia, bool amd)
{
    char line[256];
    char *argv[] = {"mpirun", "--version", NULL};
    int st = tool_line(d, argv, "mpirun", line, sizeof line);
    if (st < 0) {
        check(d, "mpi", "MPI", GPURUN_CHECK_WARN,
              "install Open MPI (Debian: apt install openmpi-bin libopenmpi-dev) or load your site's MPI module",
              "no mpirun on PATH");
        return;
    }
    if (!line[0])
        snprintf(line, sizeof line, "mpirun (version unknown)");
    /* MPICH's Hydra names itself on one line and its version on the next */
    char version[200];
    if (!strncmp(line, "HYDRA build details", 19) && tool_line(d, argv, "Version:", version, sizeof version) == 0 &&
        !strncmp(version, "Version:", 8))
        snprintf(line, sizeof line, "mpirun (MPICH Hydra) %s", version + 8 + strspn(version + 8, " \t"));
    bool cuda = probe->ompi_cuda == GPURUN_YES || probe->ucx_cuda == GPURUN_YES;
    bool rocm = probe->ompi_rocm == GPURUN_YES || probe->ucx_rocm == GPURUN_YES;
    bool known = probe->ompi || probe->ucx;
    char aware[128];
    snprintf(aware, sizeof aware, "%s%s%s", cuda ? "CUDA-aware" : "", cuda && rocm ? ", " : "",
             rocm ? "ROCm-aware" : "");
    if ((nvidia && !cuda) || (amd && !rocm)) {
        const char *what = nvidia ? "CUDA" : "ROCm";
        if (!known)
            check(d, "mpi", "MPI", GPURUN_CHECK_WARN,
                  "ask your site which MPI module is GPU-aware; without it GPU buffers go through host memory",
                  "%s; cannot tell whether it is %s-aware (no ompi_info or ucx_info on PATH)", line, what);
        else
            check(d, "mpi", "MPI", GPURUN_CHECK_WARN,
                  "use an Open MPI or UCX built with GPU support (often a module such as openmpi/cuda); without it "
                  "GPU buffers go through host memory",
                  "%s; not %s-aware (Open MPI: %s; UCX: %s)", line, what,
                  probe->ompi ? "built without it" : "no ompi_info", probe->ucx ? "built without it" : "no ucx_info");
        return;
    }
    check(d, "mpi", "MPI", GPURUN_CHECK_PASS, NULL, "%s%s%s", line, aware[0] ? "; " : "", aware);
}

/* Resource managers report through these (plugins/rm.h). */
static void rm_check(void *ctx, const char *id, const char *title, int status, const char *fix, const char *detail)
{
    enum gpurun_check_status st = status == 2 ? GPURUN_CHECK_FAIL : status == 1 ? GPURUN_CHECK_WARN : GPURUN_CHECK_PASS;
    check(ctx, id, title, st, fix, "%s", detail);
}

static int rm_tool_line(void *ctx, char *const argv[], const char *want, char *buf, size_t len)
{
    return tool_line(ctx, argv, want, buf, len);
}

/* Each resource manager's lines (Slurm: srun and sbatch, PMIx). */
static void check_managers(struct doctor *d)
{
    struct gpurun_rm_doctor rd = {.ctx = d, .check = rm_check, .tool_line = rm_tool_line};
    for (const gpurun_rm_plugin_t *const *m = gpurun_rm_all(); *m; m++)
        if ((*m)->doctor)
            (*m)->doctor(&rd);
}

/* --- hwloc, GPUs, driver, affinity ------------------------------------------------------- */

/* Whether topo->gpus[i] is the first entry of its PCI function (a GPU split
 * into partitions is listed once per partition). */
static bool first_of_pci(const gpurun_topo_t *t, int i)
{
    for (int e = 0; e < i; e++)
        if (t->gpus[e].pcidev == t->gpus[i].pcidev)
            return false;
    return true;
}

static void check_hwloc(struct doctor *d, const gpurun_topo_t *t)
{
    unsigned v = hwloc_get_api_version();
    int npci = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_PCI_DEVICE);
    if ((v >> 16) != (HWLOC_API_VERSION >> 16)) {
        check(d, "hwloc", "hwloc", GPURUN_CHECK_FAIL, "rebuild gpurun against the hwloc it runs with",
              "runtime hwloc %u.%u.%u, but gpurun was built for %u.x", v >> 16, (v >> 8) & 0xff, v & 0xff,
              (unsigned)(HWLOC_API_VERSION >> 16));
        return;
    }
    if (npci == 0) {
        check(d, "hwloc", "hwloc", GPURUN_CHECK_WARN,
              "install hwloc with PCI support (Debian: libhwloc-plugins) so GPUs and NICs can be placed",
              "hwloc %u.%u.%u sees no PCI device in %s", v >> 16, (v >> 8) & 0xff, v & 0xff, t->source);
        return;
    }
    check(d, "hwloc", "hwloc", GPURUN_CHECK_PASS, NULL, "hwloc %s (API %u.%u at run time); %d PCI devices in %s",
          HWLOC_VERSION, v >> 16, (v >> 8) & 0xff, npci, t->source);
}

static void check_gpus(struct doctor *d, const gpurun_topo_t *t)
{
    if (t->ngpus == 0) {
        check(d, "gpus", "GPUs", GPURUN_CHECK_FAIL,
              "run on a GPU node; if this one has GPUs, check lspci and that hwloc has PCI support",
              "no GPU in %s's topology", t->hostname);
        return;
    }
    char list[512] = "", parts[64] = "";
    size_t l = 0;
    int npci = 0;
    for (int i = 0; i < t->ngpus; i++)
        if (first_of_pci(t, i)) {
            npci++;
            if (l < sizeof list - 1)
                l += (size_t)snprintf(list + l, sizeof list - l, "%s%s", l ? ", " : "", t->gpus[i].pci);
        }
    bool same = true;
    for (int i = 1; i < t->ngpus; i++)
        same &= !strcmp(t->gpus[i].name, t->gpus[0].name);
    if (npci < t->ngpus)
        snprintf(parts, sizeof parts, ", %d partitions", t->ngpus);
    check(d, "gpus", "GPUs", GPURUN_CHECK_PASS, NULL, "%d x %s (%s%s)", npci, same ? t->gpus[0].name : "mixed models",
          list, parts);
}

/* RAPL: whether CPU and DRAM energy can be recorded here, and the fix
 * that applies: none to ask for where the machine has no counters at all
 * (a VM, a CPU without RAPL), an administrator's where they are root-only. */
static void check_energy(struct doctor *d, const char *root)
{
    char line[1024];
    enum gpurun_rapl_state st;
    gpurun_energy_doctor(root, line, sizeof line, &st);
    const char *fix =
        st == GPURUN_RAPL_ABSENT
            ? "nothing for an administrator to open: there are no counters; on bare metal with an Intel or AMD "
              "CPU, load the kernel module intel_rapl_msr; the runs still record GPU energy"
        : st == GPURUN_RAPL_DENIED
            ? "ask the administrator to let a trusted group read /sys/class/powercap/intel-rapl:*/energy_uj (a "
              "chmod or a udev rule, see docs/energy.md); the runs still record GPU energy"
            : "check the counters named above (docs/energy.md); the runs still record GPU energy";
    check(d, "energy_rapl", "CPU energy", st == GPURUN_RAPL_READABLE ? GPURUN_CHECK_PASS : GPURUN_CHECK_WARN, fix,
          "%s", line);
}

/* How many of the node's GPUs (partitions counted once) are of one of
 * `vendors` (a monitor's). */
static int gpus_of(const gpurun_topo_t *t, const char *const *vendors)
{
    int n = 0;
    for (int i = 0; vendors && i < t->ngpus; i++)
        for (const char *const *v = vendors; *v && first_of_pci(t, i); v++)
            if (!strcmp(t->gpus[i].vendor, *v)) {
                n++;
                break;
            }
    return n;
}

/* The kernel driver of AMD GPUs (the probe's), then each built-in
 * monitor's own lines for the GPUs of its vendors (driver, energy,
 * health: plugins/monitor.h's doctor). */
static void check_driver(struct doctor *d, const gpurun_gdr_probe_t *probe, const gpurun_topo_t *t, int namd)
{
    if (namd > 0) {
        if (probe->amdgpu)
            check(d, "driver_amd", "AMD driver", GPURUN_CHECK_PASS, NULL, "amdgpu kernel driver loaded (%d GPU%s)",
                  namd, namd == 1 ? "" : "s");
        else
            check(d, "driver_amd", "AMD driver", GPURUN_CHECK_FAIL,
                  "install ROCm's amdgpu-dkms and reboot (rocm-smi should then list the GPUs)",
                  "AMD GPUs are on the PCI bus, but the amdgpu kernel driver is not loaded");
    }
    struct gpurun_rm_doctor rd = {.ctx = d, .check = rm_check, .tool_line = rm_tool_line};
    const char *name;
    for (size_t i = 0; (name = gpurun_monitor_builtin_name(i)); i++) {
        const gpurun_monitor_plugin_t *m;
        gpurun_error_t e;
        int n;
        if (gpurun_monitor_find(name, &m, &e) == 0 && m->doctor && (n = gpus_of(t, m->vendors)) > 0)
            m->doctor(&rd, n);
    }
}

/* GPUs with a high-speed NIC at PIX/PXB: returns how many. */
static int check_affinity(struct doctor *d, const gpurun_topo_t *t)
{
    if (t->nhsnics == 0) {
        check(d, "affinity", "GPU-NIC affinity", GPURUN_CHECK_WARN,
              "fine on one node; for several, use nodes with InfiniBand, RoCE, EFA or Slingshot",
              "no high-speed NIC: jobs across nodes go over Ethernet");
        return 0;
    }
    int near = 0, npci = 0;
    enum gpurun_affinity worst = GPURUN_AFF_PIX;
    for (int g = 0; g < t->ngpus; g++) {
        if (!first_of_pci(t, g))
            continue;
        npci++;
        enum gpurun_affinity best = GPURUN_AFF_SYS;
        for (int n = 0; n < t->nhsnics; n++) {
            enum gpurun_affinity a = gpurun_pci_affinity(t, t->gpus[g].pcidev, t->nics[n].pcidev, NULL);
            if (a < best)
                best = a;
        }
        near += best <= GPURUN_AFF_PXB;
        if (best > worst)
            worst = best;
    }
    if (near == npci)
        check(d, "affinity", "GPU-NIC affinity", GPURUN_CHECK_PASS, NULL,
              "%d of %d GPUs have a high-speed NIC on their PCIe switch (PIX/PXB); %d NIC%s", near, npci,
              t->nhsnics, t->nhsnics == 1 ? "" : "s");
    else
        check(d, "affinity", "GPU-NIC affinity", GPURUN_CHECK_WARN,
              "nothing to fix on this node: gpurun still picks the nearest NIC, and gpudirect = auto stays off where "
              "the path crosses the CPU",
              "%d of %d GPUs have a high-speed NIC on their PCIe switch; the farthest GPU's nearest NIC is %s away",
              near, npci, gpurun_affinity_name(worst));
    return near;
}

/* --- GPUDirect pieces ----------------------------------------------------------- */

static void check_gpudirect(struct doctor *d, const gpurun_gdr_probe_t *p, int nnvidia, int namd, int near, int ngpus)
{
    if (nnvidia > 0) {
        if (p->peermem[0])
            check(d, "peermem", "Peer memory", GPURUN_CHECK_PASS, NULL, "%s loaded", p->peermem);
        else
            check(d, "peermem", "Peer memory", GPURUN_CHECK_WARN,
                  "sudo modprobe nvidia_peermem (and list it in /etc/modules-load.d/) for GPUDirect RDMA",
                  "neither nvidia_peermem nor nv_peer_mem is loaded: NICs cannot read GPU memory");
        if (p->gdrcopy)
            check(d, "gdrcopy", "GDRCopy", GPURUN_CHECK_PASS, NULL, "/dev/gdrdrv present");
        else
            check(d, "gdrcopy", "GDRCopy", GPURUN_CHECK_WARN,
                  "install GDRCopy and load its gdrdrv module for low-latency small GPU messages (optional)",
                  "/dev/gdrdrv not found");
    }
    if (p->nports == 0) {
        check(d, "rdma", "RDMA ports", GPURUN_CHECK_WARN,
              "install rdma-core and the NIC's driver where the node has an InfiniBand/RoCE/EFA NIC",
              "no RDMA device in /sys/class/infiniband");
    } else {
        char list[512] = "";
        size_t l = 0;
        for (int i = 0; i < p->nports && l < sizeof list - 1; i++)
            if (p->ports[i].active)
                l += (size_t)snprintf(list + l, sizeof list - l, "%s%s:%d", l ? ", " : "", p->ports[i].device,
                                      p->ports[i].port);
        if (p->nactive == 0)
            check(d, "rdma", "RDMA ports", GPURUN_CHECK_WARN,
                  "check the cable and the subnet manager (ibstat shows each port's state)",
                  "%d RDMA port%s, none ACTIVE", p->nports, p->nports == 1 ? "" : "s");
        else
            check(d, "rdma", "RDMA ports", GPURUN_CHECK_PASS, NULL, "%d of %d ACTIVE: %s", p->nactive, p->nports,
                  list);
    }
    if (p->memlock_unlimited)
        check(d, "memlock", "Locked memory", GPURUN_CHECK_PASS, NULL, "unlimited");
    else
        check(d, "memlock", "Locked memory", GPURUN_CHECK_WARN,
              "set '* - memlock unlimited' in /etc/security/limits.conf (under Slurm also "
              "PropagateResourceLimitsExcept=MEMLOCK); RDMA needs to pin buffers",
              "limited to %llu KiB", p->memlock_bytes / 1024);
    if (ngpus == 0)
        return;
    char miss[1024] = "";
    int nmiss = nnvidia > 0 ? gpurun_gdr_node_missing(p, "nvidia", miss, sizeof miss)
                            : gpurun_gdr_node_missing(p, namd > 0 ? "amd" : "nvidia", miss, sizeof miss);
    if (nmiss)
        check(d, "gpudirect", "GPUDirect RDMA", GPURUN_CHECK_WARN,
              "see the lines above; gpudirect = auto turns it off until then, and GPU buffers go through host memory",
              "not possible here: %s", miss);
    else if (near == 0)
        check(d, "gpudirect", "GPUDirect RDMA", GPURUN_CHECK_WARN,
              "nothing to install: this node's GPUs and NICs meet only through the CPU (gpudirect = auto keeps it off)",
              "every piece is there, but no GPU has a NIC on its PCIe switch");
    else
        check(d, "gpudirect", "GPUDirect RDMA", GPURUN_CHECK_PASS, NULL,
              "ready for %d of %d GPUs (the others' NICs are across the CPU)%s", near, ngpus,
              p->gdrcopy ? "; GDRCopy too" : "");
}

/* Container runtimes, for jobs with a container { } block: optional, so
 * none is not a failure; a runtime that would not pass the GPUs is. */
static void check_containers(struct doctor *d, bool nvidia, bool amd)
{
    char detail[900];
    bool gpu_ok;
    int n = gpurun_container_doctor(nvidia, amd, detail, sizeof detail, &gpu_ok);
    if (n == 0)
        check(d, "containers", "containers", GPURUN_CHECK_PASS, NULL,
              "no container runtime (apptainer, singularity, ch-run, podman) on PATH; only jobs with a container "
              "block need one");
    else
        check(d, "containers", "containers", gpu_ok ? GPURUN_CHECK_PASS : GPURUN_CHECK_WARN,
              nvidia ? "install the NVIDIA Container Toolkit and run `nvidia-ctk cdi generate "
                       "--output=/etc/cdi/nvidia.yaml` (podman), or load the GPU driver so that /dev/nvidiactl exists"
                     : "load the GPU driver so that its device nodes (/dev/kfd, /dev/dri) exist",
              "%s", detail);
}

/* CUDA MPS, which ranks sharing a GPU (ranks_per_gpu > 1) run under. */
static void check_mps(struct doctor *d, int nnvidia)
{
    char dir[PATH_MAX], control[PATH_MAX], why[PATH_MAX + 256];
    if (nnvidia == 0)
        return;
    int running = gpurun_mps_running(dir, sizeof dir, why, sizeof why);
    if (running < 0)
        check(d, "mps", "CUDA MPS", GPURUN_CHECK_FAIL,
              "unset CUDA_MPS_PIPE_DIRECTORY or point it at a folder of yours (mode 0700)",
              "%s; gpurun run refuses every job while it is set so", why);
    else if (running > 0)
        check(d, "mps", "CUDA MPS", GPURUN_CHECK_PASS, NULL,
              "a daemon of yours runs (pipe folder %s): jobs with ranks_per_gpu > 1 use it", dir);
    else if (why[0] && gpurun_mps_find_control(control, sizeof control))
        check(d, "mps", "CUDA MPS", GPURUN_CHECK_WARN,
              "ask its owner or root to remove it, if nobody runs an MPS daemon there",
              "%s; gpurun starts each job's own daemon in its run folder (%s)", why, control);
    else if (gpurun_mps_find_control(control, sizeof control))
        check(d, "mps", "CUDA MPS", GPURUN_CHECK_PASS, NULL,
              "%s: gpurun starts a daemon for each job with ranks_per_gpu > 1", control);
    else
        check(d, "mps", "CUDA MPS", GPURUN_CHECK_WARN,
              "install the driver's " GPURUN_MPS_CONTROL " (NVIDIA's packages: nvidia-cuda-mps, or the CUDA "
              "toolkit's) so that ranks sharing a GPU run side by side, not in turns",
              GPURUN_MPS_CONTROL " not on PATH: ranks sharing a GPU (ranks_per_gpu > 1) take turns on it");
}

/* A stalled run's rank steps read their program's stack with gdb or
 * eu-stack (stall_rank.c); without either, states, wchan and CPU time
 * still name the culprit.  Yama's ptrace_scope 1 is covered by
 * PR_SET_PTRACER; 2 and 3 leave the stacks out. */
static void check_stack_tool(struct doctor *d)
{
    const char *tool = gpurun_stall_stack_tool();
    char scope[16] = "";
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
    if (f) {
        if (!fgets(scope, sizeof scope, f))
            scope[0] = '\0';
        fclose(f);
    }
    scope[strcspn(scope, "\n")] = '\0';
    bool barred = scope[0] == '2' || scope[0] == '3';
    if (!tool)
        check(d, "stack", "stall stacks", GPURUN_CHECK_WARN,
              "install gdb (Debian: apt install gdb) or elfutils' eu-stack (Debian: apt install elfutils); "
              "py-spy (pip install py-spy) for Python ranks",
              "neither gdb nor eu-stack on PATH: a stalled run names its culprit from process states, wchan and "
              "CPU time only, without stacks");
    else if (barred)
        check(d, "stack", "stall stacks", GPURUN_CHECK_WARN,
              "ask root for kernel.yama.ptrace_scope = 1 (PR_SET_PTRACER then lets the rank step read its program)",
              "%s on PATH, but Yama's ptrace_scope is %s: a stalled run's stacks cannot be read", tool, scope);
    else
        check(d, "stack", "stall stacks", GPURUN_CHECK_PASS, NULL,
              "%s on PATH: a stalled run's ranks are shown with their stacks (%s)", tool,
              scope[0] == '1' ? "Yama ptrace_scope 1: each rank step allows its own sampler (PR_SET_PTRACER)"
              : scope[0]      ? "Yama ptrace_scope 0"
                              : "no Yama here: a process may read its own user's processes");
}

int gpurun_doctor_run(const struct gpurun_doctor_opts *opts, json_t **reportp, gpurun_error_t *err)
{
    struct gpurun_doctor_opts none = {0};
    if (!opts)
        opts = &none;
    gpurun_topo_t *t = NULL;
    if (gpurun_topo_load(opts->topology, &t, err) < 0)
        return -1;
    struct gpurun_gdr_probe_opts po = {.root = opts->root, .memlock = opts->memlock,
                                       .tool_timeout_s = opts->tool_timeout_s};
    gpurun_gdr_probe_t *probe = NULL;
    if (gpurun_gdr_probe(&po, &probe, err) < 0) {
        gpurun_topo_destroy(t);
        return -1;
    }
    struct doctor d = {.checks = json_array(), .timeout = opts->tool_timeout_s > 0 ? opts->tool_timeout_s : 10};
    int nnvidia = 0, namd = 0, npci = 0; /* PCI GPUs, partitions counted once */
    for (int i = 0; i < t->ngpus; i++) {
        if (!first_of_pci(t, i))
            continue;
        npci++;
        nnvidia += !strcmp(t->gpus[i].vendor, "nvidia");
        namd += !strcmp(t->gpus[i].vendor, "amd");
    }

    check_launcher(&d);
    check_mpi(&d, probe, nnvidia > 0, namd > 0);
    check_managers(&d);
    check_hwloc(&d, t);
    check_gpus(&d, t);
    check_driver(&d, probe, t, namd);
    check_energy(&d, opts->root);
    int near = t->ngpus > 0 ? check_affinity(&d, t) : 0;
    check_gpudirect(&d, probe, nnvidia, namd, near, npci);
    check_containers(&d, nnvidia > 0, namd > 0);
    check_mps(&d, nnvidia);
    check_stack_tool(&d);

    *reportp = json_pack("{s:i, s:s, s:s, s:o, s:i, s:i, s:i, s:o}", "gpurun_doctor", 1, "host", t->hostname,
                         "topology", t->source, "checks", d.checks, "pass", d.counts[GPURUN_CHECK_PASS], "warn",
                         d.counts[GPURUN_CHECK_WARN], "fail", d.counts[GPURUN_CHECK_FAIL], "gpudirect",
                         gpurun_gdr_probe_json(probe));
    gpurun_gdr_probe_destroy(probe);
    gpurun_topo_destroy(t);
    return 0;
}

void gpurun_doctor_print(const json_t *r, FILE *f)
{
    fprintf(f, "gpurun doctor: can %s run GPU jobs well? (%s)\n\n",
            json_string_value(json_object_get(r, "host")), json_string_value(json_object_get(r, "topology")));
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(r, "checks"), i, c)
    {
        fprintf(f, "%-4s  %-17s %s\n", json_string_value(json_object_get(c, "status")),
                json_string_value(json_object_get(c, "title")), json_string_value(json_object_get(c, "detail")));
        const char *fix = json_string_value(json_object_get(c, "fix"));
        if (fix)
            fprintf(f, "      %-17s fix: %s\n", "", fix);
    }
    long long fail = json_integer_value(json_object_get(r, "fail"));
    fprintf(f, "\n%lld PASS, %lld WARN, %lld FAIL: %s\n", json_integer_value(json_object_get(r, "pass")),
            json_integer_value(json_object_get(r, "warn")), fail,
            fail ? "fix the FAIL lines before running GPU jobs here"
                 : json_integer_value(json_object_get(r, "warn")) ? "GPU jobs can run; the WARN lines cost performance"
                                                                 : "this node is ready for GPU jobs");
}
