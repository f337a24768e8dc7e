/* SPDX-License-Identifier: BSD-3-Clause */
/* netcheck: the project's own MPI check of the network a job gets.
 *
 *   latency    ping-pong between the two ranks of a pair; half the round trip
 *   bandwidth  one way, windows of nonblocking sends, each window acknowledged
 *   allreduce  MPI_Allreduce (sum of doubles) over all ranks; the slowest rank
 *
 * over message sizes from --min to --max bytes (powers of two).  The pairs are
 * (i, i + size/2) for i < size/2, measured one pair at a time so that each
 * sees the network alone; with ranks placed by node in order (what gpurun and
 * mpirun do), a 2-node job pairs every rank with one on the other node.
 *
 * Output (rank 0, stdout): a '#' line before each table, then
 *
 *   NETCHECK buffers: host            (or gpu, and how MPI gets the data)
 *   pair 0-1 node1 node2
 *   latency 8 B 1.234 us pair=0-1
 *   bandwidth 1048576 B 9.874 GB/s pair=0-1
 *   allreduce 8 B 4.560 us
 *   NETCHECK latency_us: 1.234        (smallest message, slowest pair)
 *   NETCHECK bandwidth_GBps: 9.874    (largest message, slowest pair)
 *   NETCHECK allreduce_us: 4.560      (smallest message)
 *
 * Every message is checked: the ping-pong's echo against what was sent, each
 * bandwidth window and each allreduce result against the known answer.  Exit
 * status: 0 ok, 1 a message arrived wrong (no NETCHECK figures then), 2 usage
 * error or fewer than 2 ranks, 3 the buffers could not be set up.
 *
 * --buffers gpu (netcheck-cuda: this file linked with netcheck_gpu_cuda.cu)
 * puts the buffers in the rank's GPU, as the OSU benchmarks' `-d cuda` does.
 * A CUDA-aware MPI (Open MPI's MPIX_Query_cuda_support) is handed the device
 * pointers; any other MPI gets pinned host copies, each message copied off
 * the sender's GPU and onto the receiver's inside the timed loop, and the
 * output says so (NETCHECK_CUDA_AWARE=1 or 0 overrides the question).  The
 * data are filled and checked on the host, through copies.  Without CUDA
 * (netcheck_gpu_none.c), --buffers gpu is refused.
 * By hand: `mpicc -O2 -o netcheck netcheck.c netcheck_gpu_none.c`. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <math.h>
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* MPIX_Query_cuda_support */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netcheck_gpu.h"

static const char usage[] =
    "Usage: netcheck [--min BYTES] [--max BYTES] [--iters N] [--warmup N] [--window W]\n"
    "                [--buffers host|gpu]\n"
    "\n"
    "Measures point-to-point latency (ping-pong, half the round trip) and bandwidth\n"
    "(windows of nonblocking sends) between the pairs of ranks (i, i + size/2),\n"
    "one pair at a time, and MPI_Allreduce over all ranks, for message sizes from\n"
    "--min to --max (powers of two).  Needs at least 2 ranks.\n"
    "\n"
    "  --min BYTES   smallest message (default 8)\n"
    "  --max BYTES   largest message (default 4194304)\n"
    "  --iters N     timed iterations per size (default 1000; a tenth of that\n"
    "                above 64 KiB)\n"
    "  --warmup N    untimed iterations first (default a tenth of --iters)\n"
    "  --window W    messages in flight per bandwidth window (default 64; fewer\n"
    "                for large messages: at most 64 MiB in flight)\n"
    "  --buffers K   where the buffers live: host (default) or gpu (device memory,\n"
    "                netcheck-cuda only: handed to MPI when it is CUDA-aware, else\n"
    "                staged through pinned host memory, copies included in the\n"
    "                figures; every rank takes one GPU).  NETCHECK_CUDA_AWARE=1\n"
    "                or 0 in the environment says whether MPI is CUDA-aware,\n"
    "                for MPIs that cannot be asked (Open MPI can)\n"
    "\n"
    "Output: `latency 8 B 1.234 us pair=0-1`, `bandwidth 1048576 B 9.874 GB/s\n"
    "pair=0-1`, `allreduce 8 B 4.560 us` lines (allreduce from 8 B: doubles), the\n"
    "host names of each pair, and the summary lines `NETCHECK latency_us: X`\n"
    "(smallest message), `NETCHECK bandwidth_GBps: Y` (largest message), both for\n"
    "the slowest pair, and `NETCHECK allreduce_us: Z` (smallest message); first\n"
    "`NETCHECK buffers: host`, `gpu (CUDA-aware MPI)` or `gpu (staged through host:\n"
    "MPI is not CUDA-aware)`.\n"
    "\n"
    "Exit status: 0 ok, 1 a message arrived corrupted, 2 usage error or fewer than\n"
    "2 ranks, 3 the buffers could not be set up (no CUDA device, a CUDA error, out\n"
    "of memory).\n";

#define LARGE_MSG 65536L             /* above this, a tenth of the iterations */
#define MAX_IN_FLIGHT (64L << 20)    /* bytes in one bandwidth window, at most */

struct opts {
    long min, max, iters, warmup, window;
    const char *buffers;
};

/* Under LeakSanitizer (a --enable-sanitizers build) the MPI library's own
 * allocations at exit would fail every run: they are not this program's. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
    return 1;
}

/* ---- buffers: host or GPU memory --------------------------------------- */

static unsigned char pattern(size_t i, unsigned seed)
{
    return (unsigned char)((i * 131u + seed * 17u + 7u) & 0xffu);
}

static void *host_alloc(size_t bytes)
{
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (p)
        memset(p, 0, rounded ? rounded : 64);
    return p;
}

static void host_fill(void *p, size_t bytes, unsigned seed)
{
    unsigned char *b = p;
    for (size_t i = 0; i < bytes; i++)
        b[i] = pattern(i, seed);
}

static size_t host_check(const void *p, size_t bytes, unsigned seed)
{
    const unsigned char *b = p;
    size_t bad = 0;
    for (size_t i = 0; i < bytes; i++)
        bad += b[i] != pattern(i, seed);
    return bad;
}

static void host_fill_doubles(void *p, size_t count, double v)
{
    double *d = p;
    for (size_t i = 0; i < count; i++)
        d[i] = v;
}

static size_t host_check_doubles(const void *p, size_t count, double v)
{
    const double *d = p;
    size_t bad = 0;
    for (size_t i = 0; i < count; i++)
        bad += d[i] != v;
    return bad;
}

/* ---- options ------------------------------------------------------------- */

static int parse_long(const char *opt, const char *s, long min, long max, long *out, int verbose)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < min || v > max) {
        if (verbose)
            fprintf(stderr, "netcheck: %s: expected an integer from %ld to %ld, got '%s'\n", opt,
                    min, max, s ? s : "");
        return -1;
    }
    *out = v;
    return 0;
}

static int power_of_two(long v)
{
    return v > 0 && (v & (v - 1)) == 0;
}

/* Every rank parses; only rank 0 (verbose) says what is wrong.  1: --help. */
static int parse_opts(int argc, char **argv, struct opts *o, int verbose)
{
    *o = (struct opts){.min = 8, .max = 4L << 20, .iters = 1000, .warmup = -1, .window = 64,
                       .buffers = "host"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            if (verbose)
                fputs(usage, stdout);
            return 1;
        } else if (!strcmp(a, "--min")) {
            rc = parse_long(a, v, 1, 1L << 30, &o->min, verbose), i++;
        } else if (!strcmp(a, "--max")) {
            rc = parse_long(a, v, 1, 1L << 30, &o->max, verbose), i++;
        } else if (!strcmp(a, "--iters")) {
            rc = parse_long(a, v, 1, 100000000L, &o->iters, verbose), i++;
        } else if (!strcmp(a, "--warmup")) {
            rc = parse_long(a, v, 0, 100000000L, &o->warmup, verbose), i++;
        } else if (!strcmp(a, "--window")) {
            rc = parse_long(a, v, 1, 1024, &o->window, verbose), i++;
        } else if (!strcmp(a, "--buffers")) {
            o->buffers = v, i++;
            if (!v || (strcmp(v, "host") != 0 && strcmp(v, "gpu") != 0)) {
                if (verbose)
                    fprintf(stderr, "netcheck: --buffers: expected host or gpu, got '%s'\n",
                            v ? v : "");
                rc = -1;
            } else if (!strcmp(v, "gpu") && !nc_gpu_built()) {
                /* Every rank knows it: refused before any MPI traffic. */
                if (verbose)
                    fprintf(stderr, "netcheck: built without CUDA: --buffers gpu needs "
                                    "netcheck-cuda (make builds it when configure finds nvcc)\n");
                rc = -1;
            }
        } else {
            if (verbose)
                fprintf(stderr, "netcheck: unknown option '%s'\n%s", a, usage);
            rc = -1;
        }
        if (rc < 0)
            return -1;
    }
    for (int m = 0; m < 2; m++) {
        long v = m ? o->max : o->min;
        if (!power_of_two(v)) {
            if (verbose)
                fprintf(stderr, "netcheck: %s %ld: not a power of two\n", m ? "--max" : "--min", v);
            return -1;
        }
    }
    if (o->min > o->max) {
        if (verbose)
            fprintf(stderr, "netcheck: --min %ld is larger than --max %ld\n", o->min, o->max);
        return -1;
    }
    const char *aware = getenv("NETCHECK_CUDA_AWARE");
    if (aware && *aware && strcmp(aware, "0") != 0 && strcmp(aware, "1") != 0) {
        if (verbose)
            fprintf(stderr, "netcheck: NETCHECK_CUDA_AWARE: expected 0 or 1, got '%s'\n", aware);
        return -1;
    }
    if (o->warmup < 0)
        o->warmup = o->iters / 10;
    return 0;
}

/* Iterations for a message size: fewer for large messages. */
static long scaled(long n, long bytes)
{
    if (bytes <= LARGE_MSG)
        return n;
    return n ? (n + 9) / 10 : 0;
}

static long window_for(const struct opts *o, long bytes)
{
    long w = MAX_IN_FLIGHT / bytes;
    return w < 1 ? 1 : w < o->window ? w : o->window;
}

/* ---- the tests ------------------------------------------------------------ */

struct ctx {
    const struct opts *o;
    int rank, size;
    int gpu;           /* --buffers gpu: sbuf and rbuf are device memory */
    int staged;        /* ... and MPI is handed pinned host copies of them */
    void *sbuf, *rbuf; /* --max bytes; the largest window of messages */
    void *smpi, *rmpi; /* what MPI is handed: sbuf and rbuf, or their stages */
    void *scratch;     /* gpu: host memory the fills and checks go through */
    size_t bad;        /* wrong elements seen by this rank */
};

enum { TAG_PING = 10, TAG_PONG, TAG_DATA, TAG_ACK };

/* A CUDA call failed in the middle of the measurements, where the other
 * ranks may be waiting on this one: only MPI_Abort ends them all. */
static void cuda_failed(const struct ctx *c, const char *err)
{
    fprintf(stderr, "netcheck: rank %d: %s\n", c->rank, err);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

static void to_device(const struct ctx *c, void *dev, const void *host, size_t bytes)
{
    char err[256];
    if (nc_gpu_upload(dev, host, bytes, err, sizeof err) != 0)
        cuda_failed(c, err);
}

static void to_host(const struct ctx *c, void *host, const void *dev, size_t bytes)
{
    char err[256];
    if (nc_gpu_download(host, dev, bytes, err, sizeof err) != 0)
        cuda_failed(c, err);
}

/* Staged GPU buffers: before MPI sends from a stage, the data leaves the
 * GPU; after MPI receives into one, it goes to the GPU.  No-ops otherwise. */
static void stage_out(const struct ctx *c, void *stage, const void *dev, size_t bytes)
{
    if (c->staged)
        to_host(c, stage, dev, bytes);
}

static void stage_in(const struct ctx *c, void *dev, const void *stage, size_t bytes)
{
    if (c->staged)
        to_device(c, dev, stage, bytes);
}

/* The data: written and checked on the host, through scratch for the GPU. */
static void clear(const struct ctx *c, void *p, size_t bytes)
{
    char err[256];
    if (!c->gpu)
        memset(p, 0, bytes);
    else if (nc_gpu_clear(p, bytes, err, sizeof err) != 0)
        cuda_failed(c, err);
}

static void fill(const struct ctx *c, void *p, size_t bytes, unsigned seed)
{
    host_fill(c->gpu ? c->scratch : p, bytes, seed);
    if (c->gpu)
        to_device(c, p, c->scratch, bytes);
}

static size_t check(const struct ctx *c, const void *p, size_t bytes, unsigned seed)
{
    if (c->gpu)
        to_host(c, c->scratch, p, bytes);
    return host_check(c->gpu ? c->scratch : p, bytes, seed);
}

static void fill_doubles(const struct ctx *c, void *p, size_t count, double v)
{
    host_fill_doubles(c->gpu ? c->scratch : p, count, v);
    if (c->gpu)
        to_device(c, p, c->scratch, count * sizeof(double));
}

static size_t check_doubles(const struct ctx *c, const void *p, size_t count, double v)
{
    if (c->gpu)
        to_host(c, c->scratch, p, count * sizeof(double));
    return host_check_doubles(c->gpu ? c->scratch : p, count, v);
}

/* Half the round trip, in microseconds (on rank a; 0 elsewhere).  Staged,
 * every message leaves the sender's GPU and lands in the receiver's. */
static double latency(struct ctx *c, int a, int b, long bytes)
{
    const long warm = scaled(c->o->warmup, bytes), iters = scaled(c->o->iters, bytes);
    const int me_a = c->rank == a, count = (int)bytes;
    const size_t n = (size_t)bytes;
    if (me_a)
        fill(c, c->sbuf, n, (unsigned)bytes);
    clear(c, c->rbuf, n);
    double t0 = 0;
    for (long it = 0; it < warm + iters; it++) {
        if (it == warm)
            t0 = MPI_Wtime();
        if (me_a) {
            stage_out(c, c->smpi, c->sbuf, n);
            MPI_Send(c->smpi, count, MPI_BYTE, b, TAG_PING, MPI_COMM_WORLD);
            MPI_Recv(c->rmpi, count, MPI_BYTE, b, TAG_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            stage_in(c, c->rbuf, c->rmpi, n);
        } else {
            MPI_Recv(c->rmpi, count, MPI_BYTE, a, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            stage_in(c, c->rbuf, c->rmpi, n);
            stage_out(c, c->rmpi, c->rbuf, n); /* the echo leaves from the GPU */
            MPI_Send(c->rmpi, count, MPI_BYTE, a, TAG_PONG, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    if (!me_a)
        return 0;
    c->bad += check(c, c->rbuf, n, (unsigned)bytes); /* the echo */
    return t / (2.0 * (double)iters) * 1e6;
}

/* One way, a to b, in GB/s (on rank a; 0 elsewhere). */
static double bandwidth(struct ctx *c, int a, int b, long bytes)
{
    const long warm = scaled(c->o->warmup, bytes), iters = scaled(c->o->iters, bytes);
    const long window = window_for(c->o, bytes);
    const int me_a = c->rank == a, count = (int)bytes;
    const size_t n = (size_t)bytes;
    MPI_Request req[1024];
    unsigned char *rbuf = c->rbuf, *smpi = c->smpi, *rmpi = c->rmpi;
    if (me_a)
        fill(c, c->sbuf, n, (unsigned)bytes + 1);
    else
        clear(c, c->rbuf, n * (size_t)window);
    double t0 = 0;
    for (long it = 0; it < warm + iters; it++) {
        if (it == warm)
            t0 = MPI_Wtime();
        if (me_a) {
            /* Sends may share a buffer (MPI-3); staged, each message is
             * copied off the GPU into a stage of its own, which no send in
             * flight is reading. */
            for (long w = 0; w < window; w++) {
                unsigned char *src = c->staged ? smpi + w * bytes : smpi;
                stage_out(c, src, c->sbuf, n);
                MPI_Isend(src, count, MPI_BYTE, b, TAG_DATA, MPI_COMM_WORLD, &req[w]);
            }
            MPI_Waitall((int)window, req, MPI_STATUSES_IGNORE);
            MPI_Recv(NULL, 0, MPI_BYTE, b, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (long w = 0; w < window; w++)
                MPI_Irecv(rmpi + w * bytes, count, MPI_BYTE, a, TAG_DATA, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall((int)window, req, MPI_STATUSES_IGNORE);
            stage_in(c, rbuf, rmpi, n * (size_t)window);
            MPI_Send(NULL, 0, MPI_BYTE, a, TAG_ACK, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    if (!me_a) {
        for (long w = 0; w < window; w++)
            c->bad += check(c, rbuf + w * bytes, n, (unsigned)bytes + 1);
        return 0;
    }
    return (double)bytes * (double)window * (double)iters / t / 1e9;
}

/* MPI_Allreduce of bytes / 8 doubles: microseconds per call, this rank. */
static double allreduce(struct ctx *c, long bytes)
{
    const long warm = scaled(c->o->warmup, bytes), iters = scaled(c->o->iters, bytes);
    const int count = (int)(bytes / 8);
    const size_t n = (size_t)count * sizeof(double);
    fill_doubles(c, c->sbuf, (size_t)count, c->rank + 1.0);
    clear(c, c->rbuf, (size_t)bytes);
    double t0 = 0;
    for (long it = 0; it < warm + iters; it++) {
        if (it == warm) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        stage_out(c, c->smpi, c->sbuf, n);
        MPI_Allreduce(c->smpi, c->rmpi, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        stage_in(c, c->rbuf, c->rmpi, n);
    }
    double t = MPI_Wtime() - t0;
    /* 1 + 2 + ... + size: exact in doubles */
    c->bad += check_doubles(c, c->rbuf, (size_t)count, c->size * (c->size + 1.0) / 2.0);
    return t / (double)iters * 1e6;
}

/* Whether to hand MPI device pointers, and the buffers line that says so.
 * NETCHECK_CUDA_AWARE=1 or 0 decides (for an MPI that cannot be asked, such
 * as MVAPICH2-GDR); else Open MPI's MPIX_Query_cuda_support(); else no. */
static int mpi_cuda_aware(const char **how)
{
    const char *env = getenv("NETCHECK_CUDA_AWARE");
    if (env && *env) {
        int yes = !strcmp(env, "1"); /* parse_opts took 0 or 1 only */
        *how = yes ? "gpu (CUDA-aware MPI: NETCHECK_CUDA_AWARE=1)"
                   : "gpu (staged through host: NETCHECK_CUDA_AWARE=0)";
        return yes;
    }
#if defined(MPIX_CUDA_AWARE_SUPPORT)
    if (MPIX_Query_cuda_support() == 1) {
        *how = "gpu (CUDA-aware MPI)";
        return 1;
    }
    *how = "gpu (staged through host: MPI is not CUDA-aware)";
#else
    *how = "gpu (staged through host: this MPI cannot say whether it is CUDA-aware; "
           "NETCHECK_CUDA_AWARE=1 hands it device pointers)";
#endif
    return 0;
}

/* Set up the buffers: 0, or -1 with err filled (this rank only). */
static int setup_buffers(struct ctx *c, long sbytes, long rbytes, char *gpu_name, size_t namelen,
                         char *err, size_t errlen)
{
    const size_t s = (size_t)sbytes, r = (size_t)rbytes;
    if (!c->gpu) {
        c->smpi = c->sbuf = host_alloc(s);
        c->rmpi = c->rbuf = host_alloc(r);
        if (!c->sbuf || !c->rbuf) {
            snprintf(err, errlen, "out of memory for %ld + %ld bytes of buffers", sbytes, rbytes);
            return -1;
        }
        return 0;
    }
    if (nc_gpu_init(gpu_name, namelen, err, errlen) != 0 ||
        nc_gpu_alloc(&c->sbuf, s, err, errlen) != 0 ||
        nc_gpu_alloc(&c->rbuf, r, err, errlen) != 0 ||
        nc_gpu_host_alloc(&c->scratch, r, err, errlen) != 0)
        return -1;
    if (!c->staged) {
        c->smpi = c->sbuf;
        c->rmpi = c->rbuf;
        return 0;
    }
    /* The sender's stage holds a window too: one message each. */
    return nc_gpu_host_alloc(&c->smpi, r, err, errlen) != 0 ||
                   nc_gpu_host_alloc(&c->rmpi, r, err, errlen) != 0
               ? -1
               : 0;
}

static void release_buffers(struct ctx *c)
{
    char err[256];
    if (!c->gpu) {
        free(c->sbuf);
        free(c->rbuf);
        return;
    }
    void *dev[] = {c->sbuf, c->rbuf}, *host[] = {c->scratch, c->staged ? c->smpi : NULL,
                                                 c->staged ? c->rmpi : NULL};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
        if (nc_gpu_free(dev[i], err, sizeof err) != 0)
            fprintf(stderr, "netcheck: rank %d: %s\n", c->rank, err);
    for (size_t i = 0; i < sizeof host / sizeof *host; i++)
        if (nc_gpu_host_free(host[i], err, sizeof err) != 0)
            fprintf(stderr, "netcheck: rank %d: %s\n", c->rank, err);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct ctx c = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c.size);

    struct opts o;
    int prc = parse_opts(argc, argv, &o, c.rank == 0);
    if (prc == 0 && c.size < 2) {
        fprintf(stderr,
                "netcheck: needs at least 2 ranks, got %d: run it with `mpirun -np 2 netcheck` or "
                "more ranks (gpurun: ranks_per_node = 2, or nodes = 2)\n",
                c.size);
        prc = -1;
    }
    if (prc != 0) {
        MPI_Finalize();
        return prc > 0 ? 0 : 2;
    }
    c.o = &o;
    c.gpu = !strcmp(o.buffers, "gpu");
    const char *how = "host";
    c.staged = c.gpu && !mpi_cuda_aware(&how);

    int nsizes = 0;
    for (long s = o.min; s <= o.max; s *= 2)
        nsizes++;
    const long ar_min = o.min < 8 ? 8 : o.min, ar_max = o.max < 8 ? 8 : o.max;
    int npairs = c.size / 2, half = c.size / 2;

    /* The receive buffer holds the largest window; the allreduce needs ar_max. */
    long rbytes = ar_max;
    for (long s = o.min; s <= o.max; s *= 2)
        if (s * window_for(&o, s) > rbytes)
            rbytes = s * window_for(&o, s);
    char gpu_name[256] = "", err[512] = "";
    int ok = setup_buffers(&c, ar_max, rbytes, gpu_name, sizeof gpu_name, err, sizeof err) == 0;
    double *lat = calloc((size_t)npairs * nsizes, sizeof(double));
    double *bw = calloc((size_t)npairs * nsizes, sizeof(double));
    double *lat0 = calloc((size_t)npairs * nsizes, sizeof(double));
    double *bw0 = calloc((size_t)npairs * nsizes, sizeof(double));
    char(*hosts)[MPI_MAX_PROCESSOR_NAME] = calloc((size_t)c.size, MPI_MAX_PROCESSOR_NAME);
    if (ok && !(lat && bw && lat0 && bw0 && hosts)) {
        snprintf(err, sizeof err, "out of memory for the tables");
        ok = 0;
    }
    /* Every rank agrees before any message: one without its GPU or its
     * memory must not leave the others waiting on it. */
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    int rc = 0;
    if (!all_ok) {
        if (!ok)
            fprintf(stderr, "netcheck: rank %d: %s\n", c.rank, err);
        else if (c.rank == 0)
            fprintf(stderr, "netcheck: rank 0: another rank could not set up its buffers\n");
        rc = 3;
        goto done;
    }

    char me[MPI_MAX_PROCESSOR_NAME] = "";
    int len = 0;
    MPI_Get_processor_name(me, &len);
    MPI_Gather(me, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);

    /* One pair at a time; the other ranks wait. */
    for (int p = 0; p < npairs; p++) {
        int a = p, b = p + half;
        if (c.rank == a || c.rank == b) {
            int i = 0;
            for (long s = o.min; s <= o.max; s *= 2, i++)
                lat[p * nsizes + i] = latency(&c, a, b, s);
            i = 0;
            for (long s = o.min; s <= o.max; s *= 2, i++)
                bw[p * nsizes + i] = bandwidth(&c, a, b, s);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* Each figure was measured on its pair's first rank; the others hold 0. */
    MPI_Reduce(lat, lat0, npairs * nsizes, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(bw, bw0, npairs * nsizes, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    int nar = 0;
    for (long s = ar_min; s <= ar_max; s *= 2)
        nar++;
    double ar[64], ar0[64];
    int k = 0;
    for (long s = ar_min; s <= ar_max; s *= 2, k++)
        ar[k] = allreduce(&c, s);
    MPI_Reduce(ar, ar0, nar, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    unsigned long bad = c.bad, all_bad = 0;
    MPI_Reduce(&bad, &all_bad, 1, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);

    if (c.rank == 0) {
        int nhosts = 0;
        for (int r = 0; r < c.size; r++) {
            int seen = 0;
            for (int q = 0; q < r && !seen; q++)
                seen = !strcmp(hosts[q], hosts[r]);
            nhosts += !seen;
        }
        printf("# netcheck: ranks=%d hosts=%d pairs=%d min=%ld max=%ld iters=%ld warmup=%ld "
               "window=%ld buffers=%s\n",
               c.size, nhosts, npairs, o.min, o.max, o.iters, o.warmup, o.window, o.buffers);
        /* Staged GPU buffers measure the copies too: say so, by the figures. */
        printf("NETCHECK buffers: %s\n", how);
        if (c.gpu)
            printf("# rank 0's GPU: %s\n", gpu_name);
        for (int p = 0; p < npairs; p++)
            printf("pair %d-%d %s %s\n", p, p + half, hosts[p], hosts[p + half]);

        double lat_worst = 0, bw_worst = INFINITY;
        printf("# latency: ping-pong, half the round trip, microseconds\n");
        for (int p = 0; p < npairs; p++) {
            int i = 0;
            for (long s = o.min; s <= o.max; s *= 2, i++)
                printf("latency %ld B %.3f us pair=%d-%d\n", s, lat0[p * nsizes + i], p, p + half);
            if (lat0[p * nsizes] > lat_worst)
                lat_worst = lat0[p * nsizes];
        }
        printf("# bandwidth: one way, windows of nonblocking sends, GB/s (1e9 B/s)\n");
        for (int p = 0; p < npairs; p++) {
            int i = 0;
            for (long s = o.min; s <= o.max; s *= 2, i++)
                printf("bandwidth %ld B %.4g GB/s pair=%d-%d\n", s, bw0[p * nsizes + i], p,
                       p + half);
            if (bw0[p * nsizes + nsizes - 1] < bw_worst)
                bw_worst = bw0[p * nsizes + nsizes - 1];
        }
        printf("# allreduce: MPI_Allreduce, sum of doubles over %d ranks, microseconds (slowest "
               "rank)\n",
               c.size);
        k = 0;
        for (long s = ar_min; s <= ar_max; s *= 2, k++)
            printf("allreduce %ld B %.3f us\n", s, ar0[k]);
        if (all_bad) {
            fprintf(stderr, "netcheck: %lu bytes or doubles arrived wrong: the network or the MPI "
                            "library corrupts messages\n",
                    all_bad);
            rc = 1;
        } else {
            printf("NETCHECK latency_us: %.3f\n", lat_worst);
            printf("NETCHECK bandwidth_GBps: %.4g\n", bw_worst);
            printf("NETCHECK allreduce_us: %.3f\n", ar0[0]);
        }
        fflush(stdout);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);

done:
    release_buffers(&c);
    free(lat);
    free(bw);
    free(lat0);
    free(bw0);
    free(hosts);
    MPI_Finalize();
    return rc;
}
