/* SPDX-License-Identifier: BSD-3-Clause */
/* GPUDirect RDMA: the probe on fake sysfs/proc roots built here in a temp
 * folder, with fake ompi_info/ucx_info scripts first on PATH; per-rank
 * decisions on tests/fixtures/2s-4gpu-2nic.xml always, and on the real
 * exports of ../shared/topologies (jureca: PIX, on; p4d: PHB, off in auto;
 * g4dn: SYS, off) when that folder exists. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpudirect.h"
#include "plan.h"
#include "tap.h"

static char tmp[256];
static const struct rlimit unlimited = {RLIM_INFINITY, RLIM_INFINITY};
static const struct rlimit limited = {64 * 1024, 64 * 1024};

/* mkdir -p of tmp/REL's folder, then write TEXT into tmp/REL (TEXT NULL: a folder). */
static void put(const char *rel, const char *text, int mode)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tmp, rel);
    for (char *s = path + strlen(tmp) + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(path, 0755);
            *s = '/';
        }
    if (!text) {
        mkdir(path, 0755);
        return;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        diag("cannot write %s: %s", path, strerror(errno));
        return;
    }
    fputs(text, f);
    fclose(f);
    chmod(path, (mode_t)mode);
}

static const char *at(const char *rel)
{
    static char buf[4][1024];
    static int slot;
    char *b = buf[slot++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", tmp, rel);
    return b;
}

static char fixture_path[4096];
static const char *fixture(const char *name)
{
    const char *top = getenv("top_srcdir");
    snprintf(fixture_path, sizeof fixture_path, "%s/tests/fixtures/%s", top ? top : ".", name);
    return fixture_path;
}

static char shared_path[4096];
static const char *shared(const char *name)
{
    const char *env = getenv("GPURUN_SHARED_TOPOLOGIES");
    const char *top = getenv("top_srcdir");
    if (env && *env)
        snprintf(shared_path, sizeof shared_path, "%s/%s", env, name);
    else
        snprintf(shared_path, sizeof shared_path, "%s/../shared/topologies/%s", top ? top : ".", name);
    return access(shared_path, R_OK) == 0 ? shared_path : NULL;
}

/* An active (or down) port 1 of an RDMA device below root ROOT. */
static void rdma(const char *root, const char *dev, int active)
{
    char rel[256];
    snprintf(rel, sizeof rel, "%s/sys/class/infiniband/%s/ports/1/state", root, dev);
    put(rel, active ? "4: ACTIVE\n" : "1: DOWN\n", 0644);
}

static void fake_tools(const char *bin, bool cuda, bool pml_ucx)
{
    char rel[256], text[2048];
    snprintf(rel, sizeof rel, "%s/ompi_info", bin);
    snprintf(text, sizeof text,
             "#!/bin/sh\n"
             "# fake ompi_info --parsable --all: the lines gpurun reads\n"
             "cat <<'EOF'\n"
             "package:Open MPI fake\n"
             "ompi:version:full:5.0.3\n"
             "%s"
             "mca:pml:ob1:version:\"mca:2.1.0\"\n"
             "mca:opal:base:param:opal_built_with_cuda_support:value:%s\n"
             "mca:opal:base:param:opal_built_with_cuda_support:enumerator:value:1:true\n"
             "mca:opal:base:param:opal_built_with_rocm_support:value:false\n"
             "EOF\n",
             pml_ucx ? "mca:pml:ucx:version:\"mca:2.1.0\"\n" : "", cuda ? "true" : "false");
    put(rel, text, 0755);
    snprintf(rel, sizeof rel, "%s/ucx_info", bin);
    snprintf(text, sizeof text,
             "#!/bin/sh\n"
             "# fake ucx_info -v / -d\n"
             "case $1 in\n"
             "-v) echo '# Library version: 1.16.0'\n"
             "    echo '# Configured with: --enable-mt %s' ;;\n"
             "-d) echo '# Memory domain: self'\n"
             "    echo '#      Transport: self'\n"
             "    %s ;;\n"
             "*) exit 1 ;;\n"
             "esac\n",
             cuda ? "--with-cuda=/usr/local/cuda --with-gdrcopy=/usr" : "--without-cuda",
             cuda ? "echo '#      Transport: cuda_copy'; echo '#      Transport: gdr_copy'" : ":");
    put(rel, text, 0755);
}

static void set_path(const char *bin)
{
    char p[1024];
    snprintf(p, sizeof p, "%s:/usr/bin:/bin", at(bin));
    setenv("PATH", p, 1);
}

static gpurun_gdr_probe_t *probe(const char *root, const struct rlimit *ml)
{
    struct gpurun_gdr_probe_opts o = {.root = at(root), .memlock = ml, .tool_timeout_s = 10};
    gpurun_gdr_probe_t *p = NULL;
    gpurun_error_t err = {0};
    if (gpurun_gdr_probe(&o, &p, &err) < 0)
        diag("probe %s: %s", root, err.text);
    return p;
}

static const char *env(const gpurun_plan_t *p, int rank, const char *key)
{
    json_t *v = json_object_get(p->ranks[rank].env, key);
    return v ? json_string_value(v) : NULL;
}

static gpurun_plan_t *plan_for(gpurun_topo_t *t, int gpus_per_rank)
{
    gpurun_request_t r;
    gpurun_request_init(&r);
    if (gpus_per_rank >= 0)
        r.gpus_per_rank = gpus_per_rank;
    gpurun_plan_t *p = NULL;
    gpurun_error_t err = {0};
    if (gpurun_plan_create(t, &r, &p, &err) < 0)
        diag("plan: %s", err.text);
    return p;
}

static void test_tool_run(void)
{
    put("bin-misc/chatty", "#!/bin/sh\necho out; echo err >&2; exit 3\n", 0755);
    put("bin-misc/sleepy", "#!/bin/sh\necho started\nsleep 30\n", 0755);
    put("bin-misc/loud", "#!/bin/sh\ni=0; while [ $i -lt 2000 ]; do echo 0123456789abcdef; i=$((i+1)); done\n", 0755);
    set_path("bin-misc");
    char *out = NULL;
    int status = -1;
    char *a1[] = {"chatty", NULL};
    ok(gpurun_tool_run(a1, 5, 1024, &out, &status) == 0, "tool_run: a tool on PATH runs");
    ok(out && strstr(out, "out\n") && strstr(out, "err\n"), "tool_run: stdout and stderr are captured");
    is_int(status, 3, "tool_run: its exit status");
    free(out);
    char *a2[] = {"sleepy", NULL};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    out = NULL;
    ok(gpurun_tool_run(a2, 0.3, 1024, &out, &status) == 0, "tool_run: a hanging tool is run");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    is_int(status, 124, "tool_run: a hanging tool is killed at its time-out (status 124)");
    ok(took < 5, "tool_run: ... promptly (%.2f s)", took);
    ok(out && strstr(out, "started"), "tool_run: what it said before is kept");
    free(out);
    char *a3[] = {"loud", NULL};
    out = NULL;
    ok(gpurun_tool_run(a3, 10, 100, &out, &status) == 0 && out && strlen(out) == 100 && status == 0,
       "tool_run: output beyond the limit is read and dropped, the tool ends normally");
    free(out);
    char *a4[] = {"no-such-tool-here", NULL};
    ok(gpurun_tool_run(a4, 1, 100, &out, &status) == -1, "tool_run: a tool not on PATH is -1");
}

static void test_probe(void)
{
    /* An empty root, no tools: nothing found, everything missing. */
    put("empty/sys", NULL, 0);
    put("bin-none/.keep", "", 0644);
    set_path("bin-none");
    setenv("PATH", at("bin-none"), 1); /* not even the real ompi_info */
    gpurun_gdr_probe_t *p = probe("empty", &limited);
    if (!ok(p != NULL, "probe: an empty root"))
        return;
    ok(!p->peermem[0] && !p->gdrcopy && p->nports == 0 && !p->memlock_unlimited && p->memlock_bytes == 65536,
       "probe: empty root has no peer memory, GDRCopy, RDMA port; memlock 64 KiB");
    ok(!p->ompi && !p->ucx && p->ompi_cuda == GPURUN_UNKNOWN && p->ucx_cuda == GPURUN_UNKNOWN,
       "probe: no ompi_info/ucx_info on PATH: unknown");
    char miss[1024];
    is_int(gpurun_gdr_node_missing(p, "nvidia", miss, sizeof miss), 4, "probe: four pieces missing for NVIDIA");
    ok(strstr(miss, "nvidia_peermem") && strstr(miss, "RDMA device") && strstr(miss, "64 KiB") &&
           strstr(miss, "CUDA support") && strstr(miss, "not found"),
       "probe: each missing piece is named with its fix (%s)", miss);
    gpurun_gdr_probe_destroy(p);

    /* Everything there. */
    put("full/sys/module/nvidia_peermem/refcnt", "0\n", 0644);
    put("full/dev/gdrdrv", "", 0644);
    rdma("full", "mlx5_0", 1);
    rdma("full", "mlx5_1", 1);
    put("full/sys/class/infiniband/mlx5_1/ports/2/state", "1: DOWN\n", 0644);
    fake_tools("bin-cuda", true, true);
    set_path("bin-cuda");
    p = probe("full", &unlimited);
    if (!ok(p != NULL, "probe: a full root"))
        return;
    is_str(p->peermem, "nvidia_peermem", "probe: nvidia_peermem from /sys/module");
    ok(p->gdrcopy, "probe: GDRCopy from /dev/gdrdrv");
    ok(p->nports == 3 && p->nactive == 2, "probe: 3 RDMA ports, 2 ACTIVE (%d, %d)", p->nports, p->nactive);
    ok(p->nports == 3 && !strcmp(p->ports[2].device, "mlx5_1") && p->ports[2].port == 2 &&
           !strcmp(p->ports[2].state, "DOWN") && !p->ports[2].active,
       "probe: ports sorted, state names read");
    ok(p->memlock_unlimited, "probe: memlock unlimited (injected)");
    ok(p->ompi && !strcmp(p->ompi_version, "5.0.3") && p->ompi_cuda == GPURUN_YES && p->ompi_pml_ucx == GPURUN_YES &&
           p->ompi_rocm == GPURUN_NO,
       "probe: Open MPI 5.0.3, CUDA-aware, UCX pml");
    ok(p->ucx && !strcmp(p->ucx_version, "1.16.0") && p->ucx_cuda == GPURUN_YES && p->ucx_gdr_copy == GPURUN_YES,
       "probe: UCX 1.16.0 with cuda_copy and gdr_copy");
    is_int(gpurun_gdr_node_missing(p, "nvidia", miss, sizeof miss), 0, "probe: nothing missing for NVIDIA");
    ok(gpurun_gdr_node_missing(p, "amd", miss, sizeof miss) == 2 && strstr(miss, "amdgpu") && strstr(miss, "ROCm"),
       "probe: an AMD GPU would need amdgpu and ROCm-aware MPI (%s)", miss);
    json_t *j = gpurun_gdr_probe_json(p);
    ok(json_is_true(json_object_get(j, "gdrcopy")) &&
           !strcmp(json_string_value(json_object_get(j, "peer_memory")), "nvidia_peermem") &&
           json_integer_value(json_object_get(j, "rdma_active_ports")) == 2 &&
           !strcmp(json_string_value(json_object_get(j, "memlock")), "unlimited") &&
           json_is_true(json_object_get(json_object_get(j, "open_mpi"), "cuda")),
       "probe: JSON of the pieces");
    json_decref(j);
    gpurun_gdr_probe_destroy(p);

    /* The older module, listed only in /proc/modules; tools without CUDA. */
    put("proc/proc/modules", "ib_core 438272 8 rdma_ucm, Live 0x0\nnv_peer_mem 16384 0 - Live 0x0 (OE)\n", 0644);
    fake_tools("bin-nocuda", false, true);
    set_path("bin-nocuda");
    p = probe("proc", &unlimited);
    if (p) {
        is_str(p->peermem, "nv_peer_mem", "probe: nv_peer_mem from /proc/modules");
        ok(p->ompi_cuda == GPURUN_NO && p->ucx_cuda == GPURUN_NO, "probe: tools without CUDA say no");
        gpurun_gdr_node_missing(p, "nvidia", miss, sizeof miss);
        ok(strstr(miss, "CUDA support (ompi_info: no; ucx_info: no)") != NULL, "probe: ... and it is named (%s)",
           miss);
        gpurun_gdr_probe_destroy(p);
    }
    struct gpurun_gdr_probe_opts bad = {.root = at("no-such-root")};
    gpurun_error_t err = {0};
    ok(gpurun_gdr_probe(&bad, &p, &err) < 0 && err.code == GPURUN_EXIT_CONFIG, "probe: a missing root is an error");
}

static const struct gpurun_kv gmx_kv[] = {{"GMX_ENABLE_DIRECT_GPU_COMM", "1"}};
static const struct gpurun_kvlist gmx = {(struct gpurun_kv *)gmx_kv, 1};

static void test_fixture(void)
{
    gpurun_topo_t *t = NULL;
    gpurun_error_t err = {0};
    if (!ok(gpurun_topo_load(fixture("2s-4gpu-2nic.xml"), &t, &err) == 0, "fixture 2s-4gpu-2nic loads"))
        return;
    set_path("bin-cuda");
    gpurun_gdr_probe_t *full = probe("full", &unlimited);

    /* auto, every piece there, GPU and HCA on one switch: on. */
    gpurun_plan_t *p = plan_for(t, -1);
    gpurun_gdr_decision_t *d = NULL;
    ok(gpurun_gdr_decide(full, p, GPURUN_GPUDIRECT_AUTO, &d, &err) == 0 && d, "fixture auto: decided");
    if (d) {
        is_int(d->non, 4, "fixture auto: all 4 ranks on (PIX)");
        ok(strstr(d->ranks[0].why, "PIX apart") != NULL, "fixture auto: rank 0 says why (%s)", d->ranks[0].why);
        gpurun_gdr_apply(d, full, p, &gmx);
        is_str(env(p, 0, "UCX_IB_GPU_DIRECT_RDMA"), "yes", "fixture auto: UCX_IB_GPU_DIRECT_RDMA=yes");
        is_str(env(p, 0, "NCCL_NET_GDR_LEVEL"), "PIX", "fixture auto: NCCL_NET_GDR_LEVEL=PIX");
        is_str(env(p, 0, "OMPI_MCA_pml"), "ucx", "fixture auto: OMPI_MCA_pml=ucx");
        is_str(env(p, 3, "GMX_ENABLE_DIRECT_GPU_COMM"), "1", "fixture auto: the template's env {} when on");
        is_str(env(p, 2, "UCX_NET_DEVICES"), "mlx5_1:1", "fixture auto: UCX_NET_DEVICES stays as planned");
        is_str(env(p, 2, "NCCL_IB_HCA"), "=mlx5_1:1", "fixture auto: NCCL_IB_HCA stays as planned");
        json_t *j = gpurun_gdr_decision_json(d);
        ok(!strcmp(json_string_value(json_object_get(j, "mode")), "auto") &&
               json_integer_value(json_object_get(j, "on_ranks")) == 4 &&
               json_is_null(json_object_get(j, "missing")) &&
               json_is_true(json_object_get(json_array_get(json_object_get(j, "ranks"), 1), "on")) &&
               json_object_get(j, "pieces"),
           "fixture auto: the record's JSON");
        json_decref(j);
        gpurun_gdr_decision_destroy(d);
    }
    gpurun_plan_destroy(p);

    /* off: every GPU rank told so. */
    p = plan_for(t, -1);
    d = NULL;
    ok(gpurun_gdr_decide(full, p, GPURUN_GPUDIRECT_OFF, &d, &err) == 0 && d && d->non == 0, "fixture off: all off");
    if (d) {
        gpurun_gdr_apply(d, full, p, &gmx);
        ok(!strcmp(env(p, 1, "UCX_IB_GPU_DIRECT_RDMA"), "no") && !strcmp(env(p, 1, "NCCL_NET_GDR_LEVEL"), "LOC") &&
               !env(p, 1, "OMPI_MCA_pml") && !env(p, 1, "GMX_ENABLE_DIRECT_GPU_COMM"),
           "fixture off: UCX ...=no, NCCL_NET_GDR_LEVEL=LOC, nothing else");
        gpurun_gdr_decision_destroy(d);
    }
    gpurun_plan_destroy(p);

    /* mlx5_1's port down: ranks 2 and 3 off in auto, an error with on. */
    rdma("half", "mlx5_0", 1);
    rdma("half", "mlx5_1", 0);
    put("half/sys/module/nvidia_peermem", NULL, 0);
    gpurun_gdr_probe_t *half = probe("half", &unlimited);
    p = plan_for(t, -1);
    d = NULL;
    ok(half && gpurun_gdr_decide(half, p, GPURUN_GPUDIRECT_AUTO, &d, &err) == 0 && d,
       "fixture, mlx5_1 down: auto decided");
    if (d) {
        ok(d->non == 2 && d->ranks[0].on && d->ranks[1].on && !d->ranks[2].on && !d->ranks[3].on,
           "fixture, mlx5_1 down: ranks 0 and 1 on, 2 and 3 off");
        ok(strstr(d->ranks[2].why, "mlx5_1 has no ACTIVE port") != NULL, "fixture, mlx5_1 down: why (%s)",
           d->ranks[2].why);
        gpurun_gdr_apply(d, half, p, &gmx);
        ok(!strcmp(env(p, 2, "UCX_IB_GPU_DIRECT_RDMA"), "no") && !strcmp(env(p, 2, "NCCL_NET_GDR_LEVEL"), "LOC") &&
               !env(p, 2, "GMX_ENABLE_DIRECT_GPU_COMM") && !strcmp(env(p, 0, "UCX_IB_GPU_DIRECT_RDMA"), "yes") &&
               !strcmp(env(p, 0, "GMX_ENABLE_DIRECT_GPU_COMM"), "1"),
           "fixture, mlx5_1 down: env per rank");
        ok(!strcmp(env(p, 0, "OMPI_MCA_pml"), "ucx") && !strcmp(env(p, 3, "OMPI_MCA_pml"), "ucx"),
           "fixture, mlx5_1 down: one pml for every rank of the job (OMPI_MCA_pml=ucx on all)");
        gpurun_gdr_decision_destroy(d);
    }
    d = NULL;
    gpurun_error_clear(&err);
    ok(half && gpurun_gdr_decide(half, p, GPURUN_GPUDIRECT_ON, &d, &err) < 0 && err.code == GPURUN_EXIT_ENV,
       "fixture, mlx5_1 down: gpudirect = on is exit 3");
    ok(strstr(err.text, "rank 2: mlx5_1 has no ACTIVE port") && strstr(err.text, "rank 3:") &&
           strstr(err.text, "nothing was started"),
       "fixture, mlx5_1 down: the error names what is missing (%s)", err.text);
    gpurun_plan_destroy(p);
    gpurun_gdr_probe_destroy(half);

    /* An empty node: auto quietly off and says why; on lists every piece. */
    setenv("PATH", at("bin-none"), 1);
    gpurun_gdr_probe_t *empty = probe("empty", &limited);
    p = plan_for(t, -1);
    d = NULL;
    ok(empty && gpurun_gdr_decide(empty, p, GPURUN_GPUDIRECT_AUTO, &d, &err) == 0 && d && d->non == 0,
       "empty node, auto: every rank off, no error");
    if (d) {
        ok(d->missing[0] && strstr(d->ranks[0].why, "lacks pieces"), "empty node, auto: missing pieces recorded");
        gpurun_gdr_apply(d, empty, p, NULL);
        is_str(env(p, 0, "NCCL_NET_GDR_LEVEL"), "LOC", "empty node, auto: NCCL told not to use GDR");
        gpurun_gdr_decision_destroy(d);
    }
    d = NULL;
    gpurun_error_clear(&err);
    ok(empty && gpurun_gdr_decide(empty, p, GPURUN_GPUDIRECT_ON, &d, &err) < 0 && err.code == GPURUN_EXIT_ENV &&
           strstr(err.text, "nvidia_peermem") && strstr(err.text, "RDMA") && strstr(err.text, "locked-memory") &&
           strstr(err.text, "CUDA support"),
       "empty node, on: exit 3 listing peer memory, RDMA, memlock, CUDA-aware MPI");
    gpurun_plan_destroy(p);
    gpurun_gdr_probe_destroy(empty);

    /* Open MPI without the UCX pml: no OMPI_MCA_pml, it would not start. */
    put("bin-noucx/.keep", "", 0644);
    fake_tools("bin-noucx", true, false);
    set_path("bin-noucx");
    gpurun_gdr_probe_t *noucx = probe("full", &unlimited);
    p = plan_for(t, -1);
    d = NULL;
    if (noucx && gpurun_gdr_decide(noucx, p, GPURUN_GPUDIRECT_AUTO, &d, &err) == 0) {
        gpurun_gdr_apply(d, noucx, p, NULL);
        ok(d->non == 4 && !env(p, 0, "OMPI_MCA_pml"), "no UCX pml in Open MPI: on, without OMPI_MCA_pml");
        gpurun_gdr_decision_destroy(d);
    } else {
        ok(0, "no UCX pml in Open MPI: decided");
    }
    gpurun_plan_destroy(p);
    gpurun_gdr_probe_destroy(noucx);

    /* CPU-only ranks: nothing added in auto; `on` makes no sense. */
    p = plan_for(t, 0);
    d = NULL;
    if (p && gpurun_gdr_decide(full, p, GPURUN_GPUDIRECT_AUTO, &d, &err) == 0) {
        gpurun_gdr_apply(d, full, p, &gmx);
        ok(d->non == 0 && !env(p, 0, "UCX_IB_GPU_DIRECT_RDMA") && !env(p, 0, "NCCL_NET_GDR_LEVEL"),
           "CPU-only ranks: no GPUDirect variables");
        gpurun_gdr_decision_destroy(d);
    } else {
        ok(0, "CPU-only ranks: decided");
    }
    gpurun_error_clear(&err);
    ok(p && gpurun_gdr_decide(full, p, GPURUN_GPUDIRECT_ON, &d, &err) < 0 && strstr(err.text, "no GPU"),
       "CPU-only ranks, on: exit 3 (%s)", err.text);
    gpurun_plan_destroy(p);

    /* The one call run.c makes: off never probes; not probed is off. */
    gpurun_gdr_probe_t *cached = NULL;
    json_t *rec = NULL;
    p = plan_for(t, -1);
    ok(gpurun_gdr_setup(p, GPURUN_GPUDIRECT_OFF, &gmx, &cached, &rec, &err) == 0 && !cached &&
           json_is_null(json_object_get(rec, "pieces")) && !strcmp(env(p, 0, "UCX_IB_GPU_DIRECT_RDMA"), "no"),
       "setup, off: nothing probed, every GPU rank told no");
    json_decref(rec);
    d = NULL;
    ok(gpurun_gdr_decide(NULL, p, GPURUN_GPUDIRECT_AUTO, &d, &err) == 0 && d->non == 0 &&
           strstr(d->ranks[0].why, "not probed"),
       "decide without a probe, auto: off, not probed");
    gpurun_gdr_decision_destroy(d);
    d = NULL;
    ok(gpurun_gdr_decide(NULL, p, GPURUN_GPUDIRECT_ON, &d, &err) < 0 && err.code == GPURUN_EXIT_ENV,
       "decide without a probe, on: exit 3");
    gpurun_plan_destroy(p);
    p = plan_for(t, -1);
    rec = NULL;
    ok(gpurun_gdr_setup(p, GPURUN_GPUDIRECT_AUTO, NULL, &cached, &rec, &err) == 0 && cached &&
           !strcmp(json_string_value(json_object_get(rec, "mode")), "auto") &&
           json_is_object(json_object_get(rec, "pieces")) && env(p, 3, "NCCL_NET_GDR_LEVEL"),
       "setup, auto: this node probed once, decided, applied");
    gpurun_gdr_probe_t *first = cached;
    json_decref(rec);
    gpurun_plan_destroy(p);
    p = plan_for(t, -1);
    ok(gpurun_gdr_setup(p, GPURUN_GPUDIRECT_AUTO, NULL, &cached, NULL, &err) == 0 && cached == first,
       "setup, auto again: the probe is reused");
    gpurun_plan_destroy(p);
    gpurun_gdr_probe_destroy(cached);
    ok(gpurun_gdr_mode_from_name("on") == GPURUN_GPUDIRECT_ON &&
           gpurun_gdr_mode_from_name("off") == GPURUN_GPUDIRECT_OFF &&
           gpurun_gdr_mode_from_name(NULL) == GPURUN_GPUDIRECT_AUTO &&
           !strcmp(gpurun_gdr_mode_name(GPURUN_GPUDIRECT_ON), "on"),
       "mode names both ways");

    gpurun_gdr_probe_destroy(full);
    gpurun_topo_destroy(t);
}

/* A real export: a fake root with its RDMA devices active, then the
 * decisions in auto (and on). */
static void test_real(const char *file, const char *label, const char *const *devs, int want_on, const char *aff)
{
    const char *path = shared(file);
    if (!path) {
        skip("%s: ../shared/topologies/%s not present", label, file);
        return;
    }
    char root[64];
    snprintf(root, sizeof root, "real-%s", label);
    char rel[128];
    snprintf(rel, sizeof rel, "%s/sys/module/nvidia_peermem", root);
    put(rel, NULL, 0);
    for (const char *const *dv = devs; *dv; dv++)
        rdma(root, *dv, 1);
    set_path("bin-cuda");
    gpurun_gdr_probe_t *pr = probe(root, &unlimited);
    gpurun_topo_t *t = NULL;
    gpurun_error_t err = {0};
    if (!pr || gpurun_topo_load(path, &t, &err) < 0) {
        ok(0, "%s: loads (%s)", label, err.text);
        gpurun_gdr_probe_destroy(pr);
        return;
    }
    gpurun_plan_t *p = plan_for(t, -1);
    gpurun_gdr_decision_t *d = NULL;
    if (p && gpurun_gdr_decide(pr, p, GPURUN_GPUDIRECT_AUTO, &d, &err) == 0) {
        is_int(d->non, want_on, "%s auto: %d of %d ranks on", label, want_on, d->nranks);
        bool named = true;
        for (int i = 0; i < d->nranks; i++)
            named &= strstr(d->ranks[i].why, aff) != NULL;
        ok(named, "%s auto: every rank's reason names %s (%s)", label, aff, d->ranks[0].why);
        gpurun_gdr_apply(d, pr, p, NULL);
        is_str(env(p, 0, "UCX_IB_GPU_DIRECT_RDMA"), want_on ? "yes" : "no", "%s auto: rank 0's UCX variable", label);
        gpurun_gdr_decision_destroy(d);
    } else {
        ok(0, "%s: decided (%s)", label, err.text);
    }
    gpurun_plan_destroy(p);
    /* on: the user insists, the node can: every rank on at its real level. */
    p = plan_for(t, -1);
    d = NULL;
    if (p && gpurun_gdr_decide(pr, p, GPURUN_GPUDIRECT_ON, &d, &err) == 0) {
        gpurun_gdr_apply(d, pr, p, NULL);
        ok(d->non == d->nranks &&
               !strcmp(env(p, 0, "NCCL_NET_GDR_LEVEL"), gpurun_gdr_nccl_level(p->ranks[0].nic_affinity)),
           "%s on: every rank on, NCCL_NET_GDR_LEVEL=%s", label, env(p, 0, "NCCL_NET_GDR_LEVEL"));
        gpurun_gdr_decision_destroy(d);
    } else {
        ok(0, "%s on: decided (%s)", label, err.text);
    }
    gpurun_plan_destroy(p);
    gpurun_topo_destroy(t);
    gpurun_gdr_probe_destroy(pr);
}

static int rm_rf(const char *path)
{
    char *argv[] = {"rm", "-rf", (char *)path, NULL};
    char *out = NULL;
    int st = 0;
    setenv("PATH", "/usr/bin:/bin", 1);
    if (gpurun_tool_run(argv, 30, 4096, &out, &st) == 0)
        free(out);
    return st;
}

int main(void)
{
    snprintf(tmp, sizeof tmp, "%s/gpurun-gdr.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp)) {
        skip_all("cannot make a temp folder");
        return 0;
    }
    const char *saved = getenv("PATH");
    char *path = strdup(saved ? saved : "/usr/bin:/bin");
    test_tool_run();
    test_probe();
    test_fixture();
    static const char *const jureca[] = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", NULL};
    static const char *const p4d[] = {"rdmap16s27", "rdmap32s27", "rdmap144s27", "rdmap160s27", NULL};
    static const char *const g4dn[] = {"rdmap197s0", NULL};
    test_real("jureca-dc-gpu-jrc0323.xml", "jureca", jureca, 4, "PIX");
    test_real("aws-p4d-8xa100.xml", "p4d", p4d, 0, "PHB");
    test_real("aws-g4dn-metal-8xt4.xml", "g4dn", g4dn, 0, "apart: the path crosses the CPU");
    rm_rf(tmp);
    setenv("PATH", path, 1);
    free(path);
    return done_testing();
}
