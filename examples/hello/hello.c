/* SPDX-License-Identifier: BSD-3-Clause */
/* hello: every MPI rank prints one line of key=value fields saying where it
 * runs and what binding it got, so that tests (and users) can check what
 * gpurun set up:
 *
 *   rank=1 size=2 host=vm local_rank=1 cpus=2-3 mems=0 CUDA_VISIBLE_DEVICES=1 ...
 *
 * Options make one rank fail in a chosen way, to test how a launcher passes
 * failures on.  A stand-alone program: `mpicc -o hello hello.c` builds it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_* macros, open_memstream */
#endif

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* What gpurun exports per rank (gpurun(1), ENVIRONMENT OF EACH RANK), in the order printed. */
static const char *const vars[] = {
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "ROCR_VISIBLE_DEVICES", "UCX_NET_DEVICES",
    "NCCL_IB_HCA",          "OMP_NUM_THREADS",   "OMP_PLACES",           "OMP_PROC_BIND",
    "GPURUN_RANK",          "GPURUN_LOCAL_RANK",
};

static const char usage[] =
    "Usage: hello [--exit-rank R --exit-code C] [--segv-rank R] [--hang-rank R]\n"
    "             [--ignore-term] [--sleep S]\n"
    "\n"
    "Every rank prints one line: rank, size, host, local rank, the CPUs and NUMA\n"
    "memory it may use, and the variables gpurun sets ('-' when unset).\n"
    "\n"
    "  --exit-rank R --exit-code C   rank R exits with status C without MPI_Finalize\n"
    "  --segv-rank R                 rank R dies of SIGSEGV\n"
    "  --hang-rank R                 rank R sleeps forever\n"
    "  --ignore-term                 every rank ignores SIGTERM\n"
    "  --sleep S                     every rank sleeps S seconds before MPI_Finalize\n"
    "\n"
    "R is a rank (\"1\"), a list (\"0,2\") or \"all\"; the options repeat.  A rank is the\n"
    "job's: GPURUN_RANK where gpurun set it (its local launcher starts every rank as\n"
    "an MPI singleton, rank 0 of 1), else the MPI rank.\n";

#define RANKS_MAX 64

/* The ranks an option names. */
struct ranks {
    bool all;
    long v[RANKS_MAX];
    int n;
};

struct opts {
    struct ranks exit_ranks, segv_ranks, hang_ranks;
    long exit_code;
    int ignore_term;
    double sleep_s;
};

/* Under LeakSanitizer (a --enable-sanitizers build) the MPI library's own
 * allocations at exit would fail every run: they are not this program's. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
    return 1;
}

static int parse_long(const char *opt, const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < min || v > max) {
        fprintf(stderr, "hello: %s: expected an integer from %ld to %ld, got '%s'\n", opt, min, max,
                s ? s : "");
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_ranks(const char *opt, const char *s, struct ranks *r)
{
    if (s && !strcmp(s, "all")) {
        r->all = true;
        return 0;
    }
    char *copy = strdup(s ? s : ""), *save = NULL;
    int rc = copy ? 0 : -1;
    for (char *t = strtok_r(copy, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
        if (r->n == RANKS_MAX) {
            fprintf(stderr, "hello: %s: more than %d ranks\n", opt, RANKS_MAX);
            rc = -1;
        } else {
            rc = parse_long(opt, t, 0, INT_MAX, &r->v[r->n++]);
        }
    }
    if (!rc && (!s || !*s))
        rc = parse_long(opt, s, 0, INT_MAX, &r->v[0]); /* says what was expected */
    free(copy);
    return rc;
}

static bool names(const struct ranks *r, long rank)
{
    for (int i = 0; i < r->n; i++)
        if (r->v[i] == rank)
            return true;
    return r->all;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.exit_code = 0};
    int have_code = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            exit(0);
        } else if (!strcmp(a, "--exit-rank")) {
            rc = parse_ranks(a, v, &o->exit_ranks), i++;
        } else if (!strcmp(a, "--exit-code")) {
            rc = parse_long(a, v, 0, 255, &o->exit_code), i++, have_code = 1;
        } else if (!strcmp(a, "--segv-rank")) {
            rc = parse_ranks(a, v, &o->segv_ranks), i++;
        } else if (!strcmp(a, "--hang-rank")) {
            rc = parse_ranks(a, v, &o->hang_ranks), i++;
        } else if (!strcmp(a, "--ignore-term")) {
            o->ignore_term = 1;
        } else if (!strcmp(a, "--sleep")) {
            char *end;
            errno = 0;
            o->sleep_s = v ? strtod(v, &end) : -1;
            if (!v || !*v || *end || errno || !(o->sleep_s >= 0 && o->sleep_s <= 1e6)) {
                fprintf(stderr, "hello: --sleep: expected seconds from 0 to 1000000, got '%s'\n",
                        v ? v : "");
                rc = -1;
            }
            i++;
        } else {
            fprintf(stderr, "hello: unknown option '%s'\n%s", a, usage);
            rc = -1;
        }
        if (rc < 0)
            return -1;
    }
    if ((o->exit_ranks.n || o->exit_ranks.all) != have_code) {
        fprintf(stderr, "hello: --exit-rank and --exit-code go together\n");
        return -1;
    }
    return 0;
}

/* A value as one field: bytes that would split or garble the line are
 * escaped (\xNN, \\), an empty value is "", an unset one "-". */
static void put_value(FILE *f, const char *v)
{
    if (!v) {
        fputc('-', f);
        return;
    }
    if (!*v)
        fputs("\"\"", f);
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if (*p <= ' ' || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else if (*p == '\\')
            fputs("\\\\", f);
        else
            fputc(*p, f);
    }
}

/* The CPUs this process may run on, in list form ("0-3,8"). */
static void put_cpus(FILE *f)
{
    /* The set must cover every CPU the kernel knows: grow it until it does. */
    for (int n = 1024; n <= (1 << 20); n *= 2) {
        cpu_set_t *set = CPU_ALLOC((size_t)n);
        size_t size = CPU_ALLOC_SIZE((size_t)n);
        if (!set)
            break;
        CPU_ZERO_S(size, set);
        if (sched_getaffinity(0, size, set) < 0) {
            CPU_FREE(set);
            if (errno == EINVAL)
                continue;
            break;
        }
        int first = 1;
        for (int c = 0; c < n; c++) {
            if (!CPU_ISSET_S((size_t)c, size, set))
                continue;
            int e = c;
            while (e + 1 < n && CPU_ISSET_S((size_t)e + 1, size, set))
                e++;
            fprintf(f, "%s%d", first ? "" : ",", c);
            if (e > c)
                fprintf(f, "-%d", e);
            first = 0;
            c = e;
        }
        if (first)
            fputc('-', f);
        CPU_FREE(set);
        return;
    }
    fputc('?', f);
}

/* The NUMA nodes this process may allocate from, as the kernel lists them. */
static void put_mems(FILE *f)
{
    FILE *st = fopen("/proc/self/status", "r");
    char line[4096];
    while (st && fgets(line, sizeof line, st)) {
        if (strncmp(line, "Mems_allowed_list:", 18) != 0)
            continue;
        char *v = line + 18;
        v += strspn(v, " \t");
        v[strcspn(v, "\n")] = '\0';
        put_value(f, v);
        fclose(st);
        return;
    }
    if (st)
        fclose(st);
    fputc('-', f);
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse_opts(argc, argv, &o) < 0)
        return 2;

    MPI_Init(&argc, &argv);
    int rank, size, local_rank;
    MPI_Comm node;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);

    /* In effect before the line appears: a test that saw the line may send
     * SIGTERM and know it is ignored. */
    if (o.ignore_term)
        signal(SIGTERM, SIG_IGN);

    char host[256] = "?";
    if (gethostname(host, sizeof host - 1) < 0)
        strcpy(host, "?");

    /* Built in memory, then written with one write(): lines of ranks that
     * share a pipe never mix. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        perror("hello: open_memstream");
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
    fprintf(f, "rank=%d size=%d host=", rank, size);
    put_value(f, host);
    fprintf(f, " local_rank=%d cpus=", local_rank);
    put_cpus(f);
    fputs(" mems=", f);
    put_mems(f);
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        fprintf(f, " %s=", vars[i]);
        put_value(f, getenv(vars[i]));
    }
    fputc('\n', f);
    fclose(f);
    fflush(stdout);
    for (size_t off = 0; off < len;) {
        ssize_t n = write(STDOUT_FILENO, buf + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    free(buf);

    /* The job's rank: under gpurun's local launcher every MPI rank is 0. */
    long job_rank = rank;
    const char *gr = getenv("GPURUN_RANK");
    if (gr && *gr) {
        char *end;
        long v = strtol(gr, &end, 10);
        if (!*end && v >= 0)
            job_rank = v;
    }
    /* _exit: exit() would run the MPI library's destructors while its
     * progress threads still run, and under PMIx that crashes now and then
     * (SIGSEGV instead of the status asked for: tests/cli-multinode.sh). */
    if (names(&o.exit_ranks, job_rank))
        _exit((int)o.exit_code);
    if (names(&o.segv_ranks, job_rank)) {
        /* The default action, not an MPI library's handler, and no core
         * file left behind by a deliberate crash. */
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
    }
    if (names(&o.hang_ranks, job_rank))
        for (;;)
            pause();
    if (o.sleep_s > 0) {
        struct timespec ts = {(time_t)o.sleep_s, (long)((o.sleep_s - (double)(time_t)o.sleep_s) * 1e9)};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
    }
    MPI_Finalize();
    return 0;
}
