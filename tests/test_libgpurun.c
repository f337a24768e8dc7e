/* SPDX-License-Identifier: BSD-3-Clause */
/* libgpurun through its public header only (linked with libgpurun.la):
 * the golden plans of tests/golden for the fixtures and the real machine
 * exports, the request's checks, one rank's binding and environment, an
 * allocation it must stay inside, applying and reading back a binding, and
 * separate handles planned from separate threads at once. */
#include "config.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpurun.h"
#include "proc_status.h"
#include "tap.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len < 2)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    buf[len] = '\0';
    while (len && buf[len - 1] == '\n')
        buf[--len] = '\0';
    return buf;
}

/* The default plan of DIR/NAME.xml (loaded from DIR, so that the recorded
 * source is the bare name, as the golden files have it). */
static char *default_plan(const char *dir, const char *name, int over, gpurun_error_t *err)
{
    char cwd[4096], xml[512];
    if (!getcwd(cwd, sizeof cwd) || chdir(dir) != 0)
        return NULL;
    snprintf(xml, sizeof xml, "%s.xml", name);
    char *doc = NULL;
    gpurun_topology_t *t = NULL;
    gpurun_plan_request_t *r = NULL;
    gpurun_placement_t *p = NULL;
    if (access(xml, R_OK) == 0 && gpurun_topology_load(xml, 0, &t, err) == 0 &&
        gpurun_plan_request_create(&r, err) == 0 && gpurun_plan_request_set(r, GPURUN_REQ_OVERSUBSCRIBE, over, err) == 0 &&
        gpurun_placement_create(t, r, &p, err) == 0)
        gpurun_placement_json(p, GPURUN_JSON_INDENT, &doc, err);
    gpurun_placement_destroy(p);
    gpurun_plan_request_destroy(r);
    gpurun_topology_destroy(t);
    if (chdir(cwd) != 0)
        abort();
    return doc;
}

static void golden_plans(const char *top)
{
    char golden[4096], fixtures[4096], shared[4096];
    snprintf(golden, sizeof golden, "%s/tests/golden", top);
    snprintf(fixtures, sizeof fixtures, "%s/tests/fixtures", top);
    const char *env = getenv("GPURUN_SHARED_TOPOLOGIES");
    snprintf(shared, sizeof shared, "%s", env ? env : "");
    if (!env)
        snprintf(shared, sizeof shared, "%s/../shared/topologies", top);
    DIR *d = opendir(golden);
    ok(d != NULL, "golden plans in %s", golden);
    if (!d)
        return;
    int planned = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".json"))
            continue;
        char name[256], path[4096 + 256];
        snprintf(name, sizeof name, "%.*s", (int)(n - 5), e->d_name);
        snprintf(path, sizeof path, "%s/%s", golden, e->d_name);
        gpurun_error_t err = {0, ""};
        char *want = slurp(path);
        /* As tests/cli-plan.sh: a machine whose default plan it cannot
         * meet has the golden plan of an oversubscribed one. */
        char *got = NULL;
        for (int over = 0; over < 2 && !got && (!over || err.code == GPURUN_ERR_ENV); over++) {
            err.code = 0;
            got = default_plan(fixtures, name, over, &err);
            if (!got && !err.code)
                got = default_plan(shared, name, over, &err);
        }
        if (!got && !err.code) {
            diag("%s: no %s.xml in the fixtures or %s", e->d_name, name, shared);
            free(want);
            continue;
        }
        is_str(got ? got : err.text, want, "golden plan for %s through libgpurun", name);
        planned++;
        free(got);
        free(want);
    }
    closedir(d);
    ok(planned >= 10, "planned %d of the golden files", planned);
}

static void request_checks(void)
{
    gpurun_error_t err;
    gpurun_plan_request_t *r;
    is_int(gpurun_plan_request_create(&r, &err), 0, "request created");
    is_int(gpurun_plan_request_set(r, GPURUN_REQ_NODES, 0, &err), GPURUN_ERR_CONFIG, "nodes = 0 refused");
    ok(strstr(err.text, "nodes = 0") != NULL, "the message names the key and value: %s", err.text);
    is_int(gpurun_plan_request_set(r, GPURUN_REQ_RANKS_PER_NODE, GPURUN_REQ_AUTO, &err), 0, "ranks_per_node auto");
    is_int(gpurun_plan_request_set(r, (enum gpurun_request_key)999, 1, &err), GPURUN_ERR_CONFIG, "unknown key refused");
    is_int(gpurun_plan_request_set_json(r, "{\"ranks_per_node\": 2, \"bind\": \"none\"}", &err), 0,
           "set from JSON: %s", err.text);
    is_int(gpurun_plan_request_set_json(r, "{\"ranks_pre_node\": 2}", &err), GPURUN_ERR_CONFIG, "misspelt key refused");
    ok(strstr(err.text, "ranks_pre_node") != NULL, "the message names it: %s", err.text);
    is_int(gpurun_plan_request_set_json(r, "{\"bind\": \"tight\"}", &err), GPURUN_ERR_CONFIG, "bad bind refused");
    is_int(gpurun_plan_request_set_json(r, "{\"smt\": 1}", &err), GPURUN_ERR_CONFIG, "smt must be a boolean");
    is_int(gpurun_plan_request_set_json(r, "[1]", &err), GPURUN_ERR_CONFIG, "not an object refused");
    is_int(gpurun_plan_request_allow_cpus(r, "0-3,x", &err), GPURUN_ERR_CONFIG, "bad cpu list refused");
    is_int(gpurun_plan_request_allow_gpus(r, "zero", &err), GPURUN_ERR_CONFIG, "bad GPU list refused");
    gpurun_plan_request_destroy(r);

    gpurun_topology_t *t = (gpurun_topology_t *)&err;
    int rc = gpurun_topology_load("/nonexistent/gpurun-topology.xml", 0, &t, &err);
    ok(rc == GPURUN_ERR_CONFIG || rc == GPURUN_ERR_ENV, "a missing XML file is an error (%d)", rc);
    ok(t == NULL && strstr(err.text, "/nonexistent/gpurun-topology.xml") != NULL, "it names the file: %s", err.text);
    is_int(gpurun_topology_load(NULL, 0x80, &t, &err), GPURUN_ERR_CONFIG, "unknown flags refused");
    ok(gpurun_api_version() == GPURUN_API_VERSION, "API version %d", gpurun_api_version());
}

static void binding_checks(const char *top)
{
    char xml[4096];
    snprintf(xml, sizeof xml, "%s/tests/fixtures/2s-4gpu-2nic.xml", top);
    gpurun_error_t err;
    gpurun_topology_t *t;
    if (gpurun_topology_load(xml, 0, &t, &err) != 0) {
        ok(0, "load %s: %s", xml, err.text);
        return;
    }
    is_int(gpurun_topology_count(t, GPURUN_COUNT_GPUS), 4, "4 GPUs");
    is_int(gpurun_topology_count(t, GPURUN_COUNT_NICS), 2, "2 high-speed NICs");
    is_int(gpurun_topology_count(t, GPURUN_COUNT_CORES), 16, "16 cores");
    char *doc;
    is_int(gpurun_topology_json(t, GPURUN_JSON_FULL, &doc, &err), 0, "topology JSON");
    ok(strstr(doc, "\"gpurun_topo\":1") && strstr(doc, "\"ethernet\""), "the document of gpurun topo --json");
    free(doc);

    gpurun_plan_request_t *r;
    gpurun_placement_t *p;
    gpurun_binding_t *b;
    gpurun_plan_request_create(&r, &err);
    is_int(gpurun_placement_create(t, r, &p, &err), 0, "default plan");
    is_int(gpurun_placement_ranks(p), 4, "one rank per GPU");
    is_int(gpurun_binding_get(p, 0, 4, &b, &err), GPURUN_ERR_CONFIG, "no local rank 4");
    is_int(gpurun_binding_get(p, 0, 1, &b, &err), 0, "local rank 1");
    is_int(gpurun_binding_rank(b), 1, "its rank");
    is_str(gpurun_binding_getenv(b, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID", "CUDA_DEVICE_ORDER");
    ok(gpurun_binding_getenv(b, "CUDA_VISIBLE_DEVICES") != NULL, "CUDA_VISIBLE_DEVICES=%s",
       gpurun_binding_getenv(b, "CUDA_VISIBLE_DEVICES"));
    ok(gpurun_binding_getenv(b, "UCX_NET_DEVICES") != NULL, "UCX_NET_DEVICES=%s", gpurun_binding_getenv(b, "UCX_NET_DEVICES"));
    ok(*gpurun_binding_cpus(b) && *gpurun_binding_mems(b), "cpus %s, NUMA %s", gpurun_binding_cpus(b),
       gpurun_binding_mems(b));
    const char *v;
    ok(gpurun_binding_env(b, 0, &v) && v && !gpurun_binding_env(b, gpurun_binding_env_count(b), &v), "env by index");
    gpurun_binding_destroy(b);
    gpurun_placement_destroy(p);

    /* An allocation of cores 8-11 and GPU 2 only: the plan stays inside it. */
    gpurun_plan_request_set(r, GPURUN_REQ_RANKS_PER_NODE, 1, &err);
    is_int(gpurun_plan_request_allow_cpus(r, "8-11,24-27", &err), 0, "allow cpus");
    is_int(gpurun_plan_request_allow_gpus(r, "2", &err), 0, "allow GPU 2");
    is_int(gpurun_placement_create(t, r, &p, &err), 0, "plan in the allocation: %s", err.text);
    gpurun_plan_request_destroy(r); /* the placement keeps its own copy */
    if (p && gpurun_binding_get(p, 0, 0, &b, &err) == 0) {
        is_str(gpurun_binding_getenv(b, "CUDA_VISIBLE_DEVICES"), "2", "the allowed GPU");
        is_str(gpurun_binding_cpus(b), "8-11", "the allowed cores");
        gpurun_binding_destroy(b);
    }
    gpurun_placement_destroy(p);
    gpurun_topology_destroy(t);
}

/* cpu_locality (API 2): a GPU rank's share of its package's NUMA nodes
 * without GPUs, or its GPU's cores only. */
static void cpu_locality_checks(const char *top)
{
    char xml[4096];
    snprintf(xml, sizeof xml, "%s/tests/fixtures/snc2-3gpu.xml", top);
    gpurun_error_t err;
    gpurun_topology_t *t;
    if (gpurun_topology_load(xml, 0, &t, &err) != 0) {
        ok(0, "load %s: %s", xml, err.text);
        return;
    }
    const char *want[] = {"0-1,4-5", "4-5", "4-5", "0-1,4-5"};
    gpurun_plan_request_t *r;
    gpurun_plan_request_create(&r, &err);
    for (int i = 0; i < 4; i++) {
        const char *how = i == 0 ? "by default" : i == 1 ? "with GPURUN_REQ_CPUS_GPU" : i == 2 ? "from JSON \"gpu\""
                                                                                            : "from JSON \"package\"";
        int rc = i == 1   ? gpurun_plan_request_set(r, GPURUN_REQ_CPU_LOCALITY, GPURUN_REQ_CPUS_GPU, &err)
                 : i == 2 ? gpurun_plan_request_set_json(r, "{\"cpu_locality\": \"gpu\"}", &err)
                 : i == 3 ? gpurun_plan_request_set_json(r, "{\"cpu_locality\": \"package\"}", &err)
                          : 0;
        gpurun_placement_t *p = NULL;
        gpurun_binding_t *b = NULL;
        if (rc == 0)
            rc = gpurun_placement_create(t, r, &p, &err);
        if (rc == 0)
            rc = gpurun_binding_get(p, 0, 0, &b, &err);
        is_str(rc == 0 ? gpurun_binding_cpus(b) : err.text, want[i], "snc2: local rank 0's cpus %s", how);
        gpurun_binding_destroy(b);
        gpurun_placement_destroy(p);
    }
    is_int(gpurun_plan_request_set(r, GPURUN_REQ_CPU_LOCALITY, 2, &err), GPURUN_ERR_CONFIG, "cpu_locality 2 refused");
    is_int(gpurun_plan_request_set_json(r, "{\"cpu_locality\": \"numa\"}", &err), GPURUN_ERR_CONFIG,
           "cpu_locality \"numa\" refused");
    gpurun_plan_request_destroy(r);
    gpurun_topology_destroy(t);
}

/* Apply a one-core binding on this node, inside what this process may use,
 * to a child (by pid) and to the calling thread of another; read both back. */
static void apply_checks(void)
{
    gpurun_error_t err;
    char *mine = NULL, *mems = NULL;
    int got_mine = gpurun_binding_read(0, &mine, &mems, &err);
    is_int(got_mine, 0, "read this thread's binding: cpus %s", got_mine ? err.text : mine);
    gpurun_topology_t *t;
    if (gpurun_topology_load(NULL, 0, &t, &err) != 0) {
        ok(0, "live topology: %s", err.text);
        free(mine);
        free(mems);
        return;
    }
    gpurun_plan_request_t *r;
    gpurun_placement_t *p = NULL;
    gpurun_binding_t *b = NULL;
    gpurun_plan_request_create(&r, &err);
    gpurun_plan_request_set(r, GPURUN_REQ_RANKS_PER_NODE, 1, &err);
    gpurun_plan_request_set(r, GPURUN_REQ_GPUS_PER_RANK, 0, &err);
    gpurun_plan_request_set(r, GPURUN_REQ_THREADS_PER_RANK, 1, &err);
    gpurun_plan_request_allow_cpus(r, mine, &err);
    int rc = gpurun_placement_create(t, r, &p, &err);
    if (rc == 0)
        rc = gpurun_binding_get(p, 0, 0, &b, &err);
    is_int(rc, 0, "one rank of one core on this node: %s", rc ? err.text : gpurun_binding_cpus(b));
    if (rc == 0) {
        pid_t child = fork();
        if (child == 0) {
            pause();
            _exit(0);
        }
        is_int(gpurun_binding_apply(b, child, &err), 0, "apply to pid %d: %s", (int)child, err.text);
        char *got = NULL;
        is_int(gpurun_binding_read(child, &got, NULL, &err), 0, "read pid %d back", (int)child);
        is_str(got, gpurun_binding_cpus(b), "the child got the planned cpus");
        free(got);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);

        child = fork();
        if (child == 0) {
            char *c = NULL, *m = NULL;
            int same = gpurun_binding_apply(b, 0, NULL) == 0 && gpurun_binding_read(0, &c, &m, NULL) == 0 &&
                       !strcmp(c, gpurun_binding_cpus(b)) && !strcmp(m, gpurun_binding_mems(b));
            _exit(same ? 0 : 1);
        }
        int status = -1;
        waitpid(child, &status, 0);
        ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a process that applies its own binding reads back cpus %s, memory NUMA %s",
           gpurun_binding_cpus(b), gpurun_binding_mems(b));
    }
    is_int(gpurun_binding_apply(b, -1, &err), GPURUN_ERR_CONFIG, "a negative pid refused");
    gpurun_binding_destroy(b);
    gpurun_placement_destroy(p);
    gpurun_plan_request_destroy(r);
    gpurun_topology_destroy(t);
    free(mine);
    free(mems);
}

struct planner {
    const char *xml;
    char *doc;
    int rc;
};

static void *plan_thread(void *arg)
{
    struct planner *w = arg;
    gpurun_error_t err;
    gpurun_topology_t *t = NULL;
    gpurun_plan_request_t *r = NULL;
    gpurun_placement_t *p = NULL;
    w->rc = gpurun_topology_load(w->xml, 0, &t, &err);
    if (!w->rc)
        w->rc = gpurun_plan_request_create(&r, &err);
    if (!w->rc)
        w->rc = gpurun_plan_request_set(r, GPURUN_REQ_THREADS_PER_RANK, 2, &err);
    if (!w->rc)
        w->rc = gpurun_placement_create(t, r, &p, &err);
    if (!w->rc)
        w->rc = gpurun_placement_json(p, 0, &w->doc, &err);
    gpurun_placement_destroy(p);
    gpurun_plan_request_destroy(r);
    gpurun_topology_destroy(t);
    return NULL;
}

/* A caller's other thread that is always in the allocator: a fork of this
 * process (under GCC 12's ASan, whose allocator lock the child inherits
 * held) would hang in the trial import until its alarm. */
static volatile int churning = 1;
static void *churn_thread(void *arg)
{
    (void)arg;
    while (churning) {
        void *a[64];
        for (int i = 0; i < 64; i++)
            a[i] = malloc((size_t)(16 + i * 24));
        for (int i = 0; i < 64; i++)
            free(a[i]);
    }
    return NULL;
}

/* Where a load forks, its child ends here: the load then fails. */
static void fork_child_exits(void) { _exit(99); }

static void thread_checks(const char *top)
{
    char xml[4096];
    snprintf(xml, sizeof xml, "%s/tests/fixtures/2s-4gpu-2nic.xml", top);
    struct planner alone = {xml, NULL, 0}, w[4];
    plan_thread(&alone);
    /* All at once: loading no longer forks, so nothing is staged. */
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        w[i] = alone;
        w[i].doc = NULL;
        pthread_create(&th[i], NULL, plan_thread, &w[i]);
    }
    int same = alone.rc == 0 && alone.doc;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        same = same && w[i].rc == 0 && w[i].doc && !strcmp(w[i].doc, alone.doc);
        free(w[i].doc);
    }
    ok(same, "4 threads with handles of their own plan what one thread plans");

    /* The trial import is a program of its own: a fork would run the
     * caller's pthread_atfork handlers in its child, posix_spawn does not. */
    pthread_t churn;
    pthread_create(&churn, NULL, churn_thread, NULL);
    pthread_atfork(NULL, NULL, fork_child_exits);
    int loaded = 0;
    for (int i = 0; i < 20; i++) {
        struct planner one = {xml, NULL, 0};
        plan_thread(&one);
        loaded += one.rc == 0 && one.doc && !strcmp(one.doc, alone.doc);
        free(one.doc);
    }
    churning = 0;
    pthread_join(churn, NULL);
    is_int(loaded, 20, "20 loads while another thread is always in malloc, with a pthread_atfork child handler "
                       "that exits, all plan the same: no load forks this process");
    free(alone.doc);
}

/* allow_cpus / allow_gpus of `list` in a child: its code, message and how
 * much its resident memory grew (KiB); a signal (an assertion inside hwloc's
 * bitmap loop, a write past allowed_gpus) is code 1000 + the signal. */
struct allowed {
    int rc;
    long grown_kb;
    char text[256];
};

static struct allowed allow_in_child(bool gpus, const char *list)
{
    struct allowed a = {1000, -1, ""};
    int fds[2];
    if (pipe(fds) < 0)
        return a;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60); /* a hang guard */
        FILE *cr = fopen("/proc/self/clear_refs", "we"); /* VmHWM from here */
        if (cr) {
            fputs("5", cr);
            fclose(cr);
        }
        long rss0 = status_kb("VmRSS");
        gpurun_error_t err = {0};
        gpurun_plan_request_t *r = NULL;
        struct allowed c = {-1, 0, ""};
        if (gpurun_plan_request_create(&r, &err) == 0)
            c.rc = gpus ? gpurun_plan_request_allow_gpus(r, list, &err) : gpurun_plan_request_allow_cpus(r, list, &err);
        gpurun_plan_request_destroy(r);
        c.grown_kb = status_kb("VmHWM") - rss0;
        snprintf(c.text, sizeof c.text, "%.255s", err.text);
        _exit(write(fds[1], &c, sizeof c) == sizeof c ? 0 : 1);
    }
    close(fds[1]);
    int status = 0;
    if (pid < 0 || read(fds[0], &a, sizeof a) != sizeof a)
        a.rc = 1000;
    close(fds[0]);
    if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFSIGNALED(status))
        a.rc = 1000 + WTERMSIG(status);
    return a;
}

/* A resource manager's lists may be a job's text (the SPANK plugin reads
 * them from the job's environment): open and huge ranges are refused before
 * anything is allocated, and no list fills more than the request holds. */
static void allow_list_checks(void)
{
    const struct {
        bool gpus;
        const char *list;
        int rc;
        const char *why;
    } lists[] = {
        {true, "0-", GPURUN_ERR_CONFIG, "open range"},
        {true, "2,0-", GPURUN_ERR_CONFIG, "open range"},
        {true, "-1", GPURUN_ERR_CONFIG, "negative"},
        {true, "0-2147483646", GPURUN_ERR_CONFIG, "too large"},
        {true, "0-4294967296", GPURUN_ERR_CONFIG, "too large"},
        {true, "4096", GPURUN_ERR_CONFIG, "too large"},
        {true, "0-256", GPURUN_ERR_CONFIG, "at most 256"},
        {true, "3-1", GPURUN_ERR_CONFIG, "backwards"},
        {true, ",", GPURUN_ERR_CONFIG, "empty item"},
        {true, "1,", GPURUN_ERR_CONFIG, "empty item"},
        {true, "GPU-5bb9e2b3", GPURUN_ERR_CONFIG, "UUID"},
        {true, "1,MIG-5bb9e2b3", GPURUN_ERR_CONFIG, "UUID"},
        {true, "1\nforged", GPURUN_ERR_CONFIG, "\\x0a"},
        {true, "0-255", 0, NULL},
        {true, "4095", 0, NULL},
        {true, "", 0, NULL},
        {false, "0-", GPURUN_ERR_CONFIG, "open range"},
        {false, "0-2147483646", GPURUN_ERR_CONFIG, "too large"},
        {false, "65536", GPURUN_ERR_CONFIG, "too large"},
        {false, "", GPURUN_ERR_CONFIG, "empty"},
        {false, "0-65535", 0, NULL},
        {false, "0-3,8-11", 0, NULL},
    };
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        struct allowed a = allow_in_child(lists[i].gpus, lists[i].list);
        char shown[32];
        snprintf(shown, sizeof shown, "%s", lists[i].list);
        for (char *c = shown; *c; c++)
            *c = *c < 0x20 ? '?' : *c; /* one TAP line */
        ok(a.rc == lists[i].rc && (!lists[i].why || strstr(a.text, lists[i].why)) && a.grown_kb >= 0 &&
               a.grown_kb < 16 * 1024,
           "allow_%s '%.20s': %s, resident memory +%ld KiB", lists[i].gpus ? "gpus" : "cpus", shown,
           lists[i].rc ? "refused" : "taken", a.grown_kb);
        if (a.rc != lists[i].rc || (lists[i].why && !strstr(a.text, lists[i].why)))
            diag("code %d (1000+: killed by that signal), message: %s", a.rc, a.text);
    }
}

int main(void)
{
    const char *top = getenv("top_srcdir");
    if (!top)
        top = ".";
    unsetenv("GPURUN_TOPOLOGY"); /* the library never reads it unless asked */
    golden_plans(top);
    request_checks();
    allow_list_checks();
    binding_checks(top);
    cpu_locality_checks(top);
    apply_checks();
    thread_checks(top);
    return done_testing();
}
