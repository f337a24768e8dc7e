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
 * status: 0 ok, 1 a message arrived wrong (no NETCHECK lines then), 2 usage
 * error or fewer than 2 ranks.
 *
 * Buffers are allocated and checked through `struct buffers` (host memory
 * here); a CUDA build (issue 5) adds a "device" kind next to the host one,
 * selected with --buffers device.  A stand-alone program:
 * `mpicc -O2 -o netcheck netcheck.c` builds it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: netcheck [--min BYTES] [--max BYTES] [--iters N] [--warmup N] [--window W]\n"
    "                [--buffers host]\n"
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
    "  --buffers K   where the buffers live: host (device buffers: a CUDA build)\n"
    "\n"
    "Output: `latency 8 B 1.234 us pair=0-1`, `bandwidth 1048576 B 9.874 GB/s\n"
    "pair=0-1`, `allreduce 8 B 4.560 us` lines (allreduce from 8 B: doubles), the\n"
    "host names of each pair, and the summary lines `NETCHECK latency_us: X`\n"
    "(smallest message), `NETCHECK bandwidth_GBps: Y` (largest message), both for\n"
    "the slowest pair, and `NETCHECK allreduce_us: Z` (smallest message).\n"
    "\n"
    "Exit status: 0 ok, 1 a message arrived corrupted, 2 usage error or fewer than\n"
    "2 ranks.\n";

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

/* ---- buffers: the seam for device memory --------------------------------- */

/* A kind of buffer memory.  MPI is handed the pointers alloc returns; the
 * other functions reach the contents, so that a device kind can implement
 * them with its own copies.  fill/check: a byte pattern that depends on the
 * seed; fill_doubles/check_doubles: every double equal to v.  The checks
 * return the number of wrong elements. */
struct buffers {
    const char *name;
    void *(*alloc)(size_t bytes);
    void (*release)(void *p);
    void (*clear)(void *p, size_t bytes);
    void (*fill)(void *p, size_t bytes, unsigned seed);
    size_t (*check)(const void *p, size_t bytes, unsigned seed);
    void (*fill_doubles)(void *p, size_t count, double v);
    size_t (*check_doubles)(const void *p, size_t count, double v);
};

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

static void host_release(void *p)
{
    free(p);
}

static void host_clear(void *p, size_t bytes)
{
    memset(p, 0, bytes);
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

static const struct buffers buffer_kinds[] = {
    {"host", host_alloc, host_release, host_clear, host_fill, host_check, host_fill_doubles,
     host_check_doubles},
    /* {"device", ...}: the CUDA build (issue 5) */
};

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
            if (!v || strcmp(v, "host") != 0) {
                if (verbose)
                    fprintf(stderr,
                            "netcheck: --buffers: '%s' is not a kind this build has (host; device "
                            "buffers need a CUDA build)\n",
                            v ? v : "");
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
    const struct buffers *buf;
    int rank, size;
    void *sbuf, *rbuf; /* --max bytes; the largest window of messages */
    size_t bad;        /* wrong elements seen by this rank */
};

enum { TAG_PING = 10, TAG_PONG, TAG_DATA, TAG_ACK };

/* Half the round trip, in microseconds (on rank a; 0 elsewhere). */
static double latency(struct ctx *c, int a, int b, long bytes)
{
    const long warm = scaled(c->o->warmup, bytes), iters = scaled(c->o->iters, bytes);
    const int me_a = c->rank == a, count = (int)bytes;
    if (me_a)
        c->buf->fill(c->sbuf, (size_t)bytes, (unsigned)bytes);
    c->buf->clear(c->rbuf, (size_t)bytes);
    double t0 = 0;
    for (long it = 0; it < warm + iters; it++) {
        if (it == warm)
            t0 = MPI_Wtime();
        if (me_a) {
            MPI_Send(c->sbuf, count, MPI_BYTE, b, TAG_PING, MPI_COMM_WORLD);
            MPI_Recv(c->rbuf, count, MPI_BYTE, b, TAG_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(c->rbuf, count, MPI_BYTE, a, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(c->rbuf, count, MPI_BYTE, a, TAG_PONG, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    if (!me_a)
        return 0;
    c->bad += c->buf->check(c->rbuf, (size_t)bytes, (unsigned)bytes); /* the echo */
    return t / (2.0 * (double)iters) * 1e6;
}

/* One way, a to b, in GB/s (on rank a; 0 elsewhere). */
static double bandwidth(struct ctx *c, int a, int b, long bytes)
{
    const long warm = scaled(c->o->warmup, bytes), iters = scaled(c->o->iters, bytes);
    const long window = window_for(c->o, bytes);
    const int me_a = c->rank == a, count = (int)bytes;
    MPI_Request req[1024];
    unsigned char *rbuf = c->rbuf;
    if (me_a)
        c->buf->fill(c->sbuf, (size_t)bytes, (unsigned)bytes + 1);
    else
        c->buf->clear(c->rbuf, (size_t)(bytes * window));
    double t0 = 0;
    for (long it = 0; it < warm + iters; it++) {
        if (it == warm)
            t0 = MPI_Wtime();
        if (me_a) {
            /* Sends may share a buffer (MPI-3); receives each get their own. */
            for (long w = 0; w < window; w++)
                MPI_Isend(c->sbuf, count, MPI_BYTE, b, TAG_DATA, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall((int)window, req, MPI_STATUSES_IGNORE);
            MPI_Recv(NULL, 0, MPI_BYTE, b, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (long w = 0; w < window; w++)
                MPI_Irecv(rbuf + w * bytes, count, MPI_BYTE, a, TAG_DATA, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall((int)window, req, MPI_STATUSES_IGNORE);
            MPI_Send(NULL, 0, MPI_BYTE, a, TAG_ACK, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    if (!me_a) {
        for (long w = 0; w < window; w++)
            c->bad += c->buf->check(rbuf + w * bytes, (size_t)bytes, (unsigned)bytes + 1);
        return 0;
    }
    return (double)bytes * (double)window * (double)iters / t / 1e9;
}

/* MPI_Allreduce of bytes / 8 doubles: microseconds per call, this rank. */
static double allreduce(struct ctx *c, long bytes)
{
    const long warm = scaled(c->o->warmup, bytes), iters = scaled(c->o->iters, bytes);
    const int count = (int)(bytes / 8);
    c->buf->fill_doubles(c->sbuf, (size_t)count, c->rank + 1.0);
    c->buf->clear(c->rbuf, (size_t)bytes);
    for (long it = 0; it < warm; it++)
        MPI_Allreduce(c->sbuf, c->rbuf, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long it = 0; it < iters; it++)
        MPI_Allreduce(c->sbuf, c->rbuf, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    /* 1 + 2 + ... + size: exact in doubles */
    c->bad += c->buf->check_doubles(c->rbuf, (size_t)count, c->size * (c->size + 1.0) / 2.0);
    return t / (double)iters * 1e6;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct ctx c = {.buf = &buffer_kinds[0]};
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
    c.sbuf = c.buf->alloc((size_t)ar_max);
    c.rbuf = c.buf->alloc((size_t)rbytes);
    double *lat = calloc((size_t)npairs * nsizes, sizeof(double));
    double *bw = calloc((size_t)npairs * nsizes, sizeof(double));
    double *lat0 = calloc((size_t)npairs * nsizes, sizeof(double));
    double *bw0 = calloc((size_t)npairs * nsizes, sizeof(double));
    char(*hosts)[MPI_MAX_PROCESSOR_NAME] = calloc((size_t)c.size, MPI_MAX_PROCESSOR_NAME);
    int ok = c.sbuf && c.rbuf && lat && bw && lat0 && bw0 && hosts, all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (!ok)
            fprintf(stderr, "netcheck: rank %d: out of memory for %ld + %ld bytes of buffers\n",
                    c.rank, ar_max, rbytes);
        MPI_Finalize();
        return 1;
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

    int rc = 0;
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
               c.size, nhosts, npairs, o.min, o.max, o.iters, o.warmup, o.window, c.buf->name);
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

    c.buf->release(c.sbuf);
    c.buf->release(c.rbuf);
    free(lat);
    free(bw);
    free(lat0);
    free(bw0);
    free(hosts);
    MPI_Finalize();
    return rc;
}
