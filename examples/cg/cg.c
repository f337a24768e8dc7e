/* SPDX-License-Identifier: BSD-3-Clause */
/* cg: the project's own FP64 conjugate-gradient benchmark.  It solves the
 * 3-D Poisson problem -lap(u) = f on the unit cube with zero boundary values,
 * discretised with the 7-point stencil on an n x n x n grid of interior
 * points (h = 1 / (n + 1)), matrix-free, with the grid cut into slabs of whole
 * z-planes over the MPI ranks and OpenMP threads inside each rank.
 *
 * The right-hand side is manufactured: u = 64 x(1-x) y(1-y) z(1-z) is a
 * product of quadratics, which the 7-point stencil differentiates exactly,
 * so the discrete solution equals u at every grid point and the error
 * |x - u| measures the solver alone.  (sin(pi x) sin(pi y) sin(pi z), the
 * usual choice, is an eigenvector of the discrete Laplacian: CG would solve
 * it in one iteration, which tests nothing and measures nothing.)
 *
 * Output (rank 0, stdout), one line per solve, then the figure of merit:
 *
 *   cg: n=128 ranks=2 threads=1 iterations=305 residual=8.1e-09 error=2.0e-08 time_s=2.1 gflops=2.9
 *   CG FOM: 2.9 GFLOP/s
 *
 * residual is the true relative residual |b - A x| / |b|, recomputed after
 * the solve; error is |x - u| / |u| (2-norms over the grid).  The FOM line
 * is printed only when every solve converged; the exit status is 0 then,
 * 1 when a solve did not converge, 2 for a usage error.
 *
 * The kernels are in cg_kernels.h (cg_kernels_cpu.c for the CPU); this file
 * holds the algorithm, the decomposition and all of MPI.  A stand-alone
 * program: `mpicc -O2 -fopenmp -o cg cg.c cg_kernels_cpu.c -lm` builds it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_kernels.h"

static const char usage[] =
    "Usage: cg [--n N] [--iters MAX] [--tol T] [--repeat R] [--progress S] [--stage-halos]\n"
    "\n"
    "Solves a 3-D Poisson problem on an N x N x N grid with the conjugate-gradient\n"
    "method in FP64 (7-point stencil, matrix-free, slabs of z-planes over the MPI\n"
    "ranks, OpenMP threads in each rank) and prints one line per solve and the\n"
    "figure of merit:\n"
    "\n"
    "  cg: n=... ranks=... threads=... iterations=... residual=... error=... time_s=... gflops=...\n"
    "  CG FOM: <gflops> GFLOP/s\n"
    "\n"
    "  --n N          grid edge (default 128; at least the number of ranks)\n"
    "  --iters MAX    most iterations per solve (default 5000)\n"
    "  --tol T        stop when |r| / |b| <= T (default 1e-8); 0 runs exactly MAX\n"
    "                 iterations (fixed work, no convergence check)\n"
    "  --repeat R     solves, each from x = 0 (default 1); the FOM is their mean\n"
    "  --progress S   a progress line every S seconds from rank 0 (default 2; 0: none):\n"
    "                 cg progress: solve 1 of 1, iteration 500 of at most 5000, residual 1.2e-05, 3.41 GFLOP/s\n"
    "  --stage-halos  copy halo planes through host buffers, as a device build\n"
    "                 without GPU-aware MPI does (to test that path)\n"
    "\n"
    "Exit status: 0 converged, 1 a solve did not converge, 2 usage error.\n";

struct opts {
    long n, iters, repeat;
    double tol, progress;
    int stage_halos;
};

/* Under LeakSanitizer (a --enable-sanitizers build) the MPI library's own
 * allocations at exit would fail every run: they are not this program's. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
    return 1;
}

static int parse_long(const char *opt, const char *s, long min, long max, long *out, int verbose)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < min || v > max) {
        if (verbose)
            fprintf(stderr, "cg: %s: expected an integer from %ld to %ld, got '%s'\n", opt, min,
                    max, s ? s : "");
        return -1;
    }
    *out = v;
    return 0;
}

/* Every rank parses; only rank 0 (verbose) says what is wrong. */
static int parse_opts(int argc, char **argv, struct opts *o, int verbose)
{
    *o = (struct opts){.n = 128, .iters = 5000, .repeat = 1, .tol = 1e-8, .progress = 2};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            if (verbose)
                fputs(usage, stdout);
            return 1;
        } else if (!strcmp(a, "--n")) {
            rc = parse_long(a, v, 1, 1 << 15, &o->n, verbose), i++;
        } else if (!strcmp(a, "--iters")) {
            rc = parse_long(a, v, 1, 1000000000L, &o->iters, verbose), i++;
        } else if (!strcmp(a, "--repeat")) {
            rc = parse_long(a, v, 1, 1000000L, &o->repeat, verbose), i++;
        } else if (!strcmp(a, "--tol")) {
            char *end;
            errno = 0;
            o->tol = v ? strtod(v, &end) : -1;
            if (!v || !*v || *end || errno || !(o->tol >= 0 && o->tol < 1)) {
                if (verbose)
                    fprintf(stderr, "cg: --tol: expected a number from 0 to 1, got '%s'\n",
                            v ? v : "");
                rc = -1;
            }
            i++;
        } else if (!strcmp(a, "--progress")) {
            char *end;
            errno = 0;
            o->progress = v ? strtod(v, &end) : -1;
            if (!v || !*v || *end || errno || !(o->progress >= 0 && o->progress <= 86400)) {
                if (verbose)
                    fprintf(stderr, "cg: --progress: expected seconds from 0 to 86400, got '%s'\n",
                            v ? v : "");
                rc = -1;
            }
            i++;
        } else if (!strcmp(a, "--stage-halos")) {
            o->stage_halos = 1;
        } else {
            if (verbose)
                fprintf(stderr, "cg: unknown option '%s'\n%s", a, usage);
            rc = -1;
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* ---- the distributed problem -------------------------------------------- */

struct problem {
    struct cg_domain d;
    int rank, size, z0;  /* this rank's planes are z0 + 1 .. z0 + nz (1-based) */
    int lo, hi;          /* neighbour ranks, MPI_PROC_NULL at the boundary */
    int stage;           /* halos through host buffers */
    double *host[4];     /* staging planes: send lo, send hi, recv lo, recv hi */
    MPI_Request req[4];
    double *x, *r, *p, *ap, *b, *u;
};

/* Post the exchange of v's boundary planes: plane 1 goes down, plane nz up;
 * ghost plane 0 comes from below, nz + 1 from above. */
static void halo_start(struct problem *pb, double *v)
{
    const struct cg_domain *d = &pb->d;
    const int count = (int)d->sxy;
    const size_t off[4] = {cg_plane_offset(d, 1), cg_plane_offset(d, d->nz),
                           cg_plane_offset(d, 0), cg_plane_offset(d, d->nz + 1)};
    double *buf[4];
    for (int i = 0; i < 4; i++)
        buf[i] = pb->stage ? pb->host[i] : v + off[i];
    if (pb->stage) {
        if (pb->lo != MPI_PROC_NULL)
            cg_vec_download(buf[0], v, off[0], d->sxy);
        if (pb->hi != MPI_PROC_NULL)
            cg_vec_download(buf[1], v, off[1], d->sxy);
    }
    MPI_Irecv(buf[2], count, MPI_DOUBLE, pb->lo, 1, MPI_COMM_WORLD, &pb->req[0]);
    MPI_Irecv(buf[3], count, MPI_DOUBLE, pb->hi, 0, MPI_COMM_WORLD, &pb->req[1]);
    MPI_Isend(buf[0], count, MPI_DOUBLE, pb->lo, 0, MPI_COMM_WORLD, &pb->req[2]);
    MPI_Isend(buf[1], count, MPI_DOUBLE, pb->hi, 1, MPI_COMM_WORLD, &pb->req[3]);
}

static void halo_finish(struct problem *pb, double *v)
{
    const struct cg_domain *d = &pb->d;
    MPI_Waitall(4, pb->req, MPI_STATUSES_IGNORE);
    if (pb->stage) {
        if (pb->lo != MPI_PROC_NULL)
            cg_vec_upload(v, cg_plane_offset(d, 0), pb->host[2], d->sxy);
        if (pb->hi != MPI_PROC_NULL)
            cg_vec_upload(v, cg_plane_offset(d, d->nz + 1), pb->host[3], d->sxy);
    }
}

/* y = A v: the planes that need no ghost plane are computed while the
 * halos are in flight, then the two boundary planes. */
static void matvec(struct problem *pb, double *v, double *y)
{
    const int nz = pb->d.nz;
    halo_start(pb, v);
    if (nz > 2)
        cg_stencil(&pb->d, v, y, 2, nz);
    halo_finish(pb, v);
    cg_stencil(&pb->d, v, y, 1, 2);
    if (nz > 1)
        cg_stencil(&pb->d, v, y, nz, nz + 1);
}

static double allsum(double local)
{
    double g;
    MPI_Allreduce(&local, &g, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return g;
}

/* u and b = h^2 f, plane by plane on the host, then into the vectors. */
static void manufacture(struct problem *pb, int n)
{
    const struct cg_domain *d = &pb->d;
    const double h = 1.0 / (n + 1);
    double *pu = calloc(d->sxy, sizeof(double)), *pf = calloc(d->sxy, sizeof(double));
    double *q = malloc((size_t)n * sizeof(double));
    if (!pu || !pf || !q) {
        fprintf(stderr, "cg: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int i = 0; i < n; i++) {
        double s = (i + 1) * h;
        q[i] = s * (1.0 - s); /* the quadratic at grid point i + 1 */
    }
    for (int k = 1; k <= d->nz; k++) {
        double qz = q[pb->z0 + k - 1];
        for (int j = 1; j <= n; j++)
            for (int i = 1; i <= n; i++) {
                double qx = q[i - 1], qy = q[j - 1];
                size_t c = (size_t)j * d->sx + (size_t)i;
                pu[c] = 64.0 * qx * qy * qz;
                /* -lap u = 128 (qy qz + qx qz + qx qy): exact for the stencil */
                pf[c] = h * h * 128.0 * (qy * qz + qx * qz + qx * qy);
            }
        cg_vec_upload(pb->u, cg_plane_offset(d, k), pu, d->sxy);
        cg_vec_upload(pb->b, cg_plane_offset(d, k), pf, d->sxy);
    }
    free(pu);
    free(pf);
    free(q);
}

struct solve {
    long iterations;
    int converged;
    double flops, time_s, residual, error;
};

/* Which solve this is, and how often rank 0 says where it stands. */
struct progress {
    long solve, solves;
    double every; /* seconds; 0: never */
};

/* CG from x = 0.  FLOPs, counted as the kernels perform them, per interior
 * cell of the whole grid (N = n^3 cells):
 *   start:         r.r                                    2 N
 *   per iteration: A p (1 mul + 6 add/sub per cell)       7 N
 *                  p.Ap                                   2 N
 *                  x += alpha p                           2 N
 *                  r -= alpha Ap, with r.r in that pass   4 N
 *                  p = r + beta p (not after the last)    2 N
 * that is 17 N per iteration (15 N for the last).  The allreduces' sums
 * and the scalar work are not counted; the residual and error checks after
 * the solve are neither counted nor timed. */
static struct solve cg_solve(struct problem *pb, int n, long maxit, double tol,
                             const struct progress *pr)
{
    const struct cg_domain *d = &pb->d;
    const double cells = (double)n * n * n;
    struct solve s = {0};

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    cg_zero(d, pb->x);
    cg_copy(d, pb->b, pb->r);
    cg_copy(d, pb->b, pb->p);
    double rr = allsum(cg_dot(d, pb->r, pb->r)), bb = rr;
    s.flops = 2 * cells;
    s.converged = bb == 0.0;
    /* Rank 0 alone looks at the clock: no collective, nothing for the
     * others to wait for. */
    double next_line = pb->rank == 0 && pr->every > 0 ? t0 + pr->every : HUGE_VAL;
    while (!s.converged && s.iterations < maxit) {
        matvec(pb, pb->p, pb->ap);
        double pap = allsum(cg_dot(d, pb->p, pb->ap));
        s.flops += 9 * cells;
        if (!(pap > 0.0) || !isfinite(pap))
            break; /* breakdown: A is SPD, so only rounding gets here */
        double alpha = rr / pap;
        cg_axpy(d, alpha, pb->p, pb->x);
        double rr_new = allsum(cg_axpy_norm2(d, -alpha, pb->ap, pb->r));
        s.flops += 6 * cells;
        s.iterations++;
        if (!isfinite(rr_new))
            break;
        if (tol > 0 && sqrt(rr_new / bb) <= tol) {
            s.converged = 1;
            break;
        }
        if (s.iterations == maxit)
            break;
        if (next_line < HUGE_VAL) {
            double now = MPI_Wtime();
            if (now >= next_line) {
                printf("cg progress: solve %ld of %ld, iteration %ld of at most %ld, residual %.3e, %.4f "
                       "GFLOP/s\n",
                       pr->solve, pr->solves, s.iterations, maxit, bb > 0 ? sqrt(rr_new / bb) : 0.0,
                       s.flops / (now - t0) / 1e9);
                fflush(stdout);
                while (next_line <= now)
                    next_line += pr->every;
            }
        }
        cg_xpby(d, pb->r, rr_new / rr, pb->p);
        s.flops += 2 * cells;
        rr = rr_new;
    }
    double t = MPI_Wtime() - t0;
    MPI_Allreduce(&t, &s.time_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

    /* The true residual b - A x (into r) and the error x - u (into p). */
    matvec(pb, pb->x, pb->ap);
    cg_copy(d, pb->b, pb->r);
    cg_axpy(d, -1.0, pb->ap, pb->r);
    s.residual = bb > 0 ? sqrt(allsum(cg_dot(d, pb->r, pb->r)) / bb) : 0.0;
    cg_copy(d, pb->x, pb->p);
    cg_axpy(d, -1.0, pb->u, pb->p);
    s.error = sqrt(allsum(cg_dot(d, pb->p, pb->p)) / allsum(cg_dot(d, pb->u, pb->u)));
    if (tol == 0 && s.iterations == maxit && isfinite(s.residual))
        s.converged = 1; /* fixed work asked for, and done */
    if (!isfinite(s.residual) || !isfinite(s.error))
        s.converged = 0;
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct problem pb = {.lo = MPI_PROC_NULL, .hi = MPI_PROC_NULL};
    MPI_Comm_rank(MPI_COMM_WORLD, &pb.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &pb.size);

    struct opts o;
    int prc = parse_opts(argc, argv, &o, pb.rank == 0);
    if (prc == 0 && o.n < pb.size) {
        if (pb.rank == 0)
            fprintf(stderr, "cg: --n %ld is smaller than the %d ranks: each rank needs a plane\n",
                    o.n, pb.size);
        prc = -1;
    }
    if (prc != 0) {
        MPI_Finalize();
        return prc > 0 ? 0 : 2;
    }
    const int n = (int)o.n;

    /* Slabs: the first n % size ranks get one plane more. */
    int nz = n / pb.size + (pb.rank < n % pb.size);
    pb.z0 = pb.rank * (n / pb.size) + (pb.rank < n % pb.size ? pb.rank : n % pb.size);
    pb.lo = pb.rank > 0 ? pb.rank - 1 : MPI_PROC_NULL;
    pb.hi = pb.rank < pb.size - 1 ? pb.rank + 1 : MPI_PROC_NULL;
    pb.stage = o.stage_halos || !cg_kernels_host_memory();
    cg_domain_init(&pb.d, n, nz);

    double **vecs[] = {&pb.x, &pb.r, &pb.p, &pb.ap, &pb.b, &pb.u};
    int ok = 1;
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++)
        ok &= (*vecs[i] = cg_vec_alloc(&pb.d)) != NULL;
    for (int i = 0; i < 4 && pb.stage; i++)
        ok &= (pb.host[i] = calloc(pb.d.sxy, sizeof(double))) != NULL;
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (!ok)
            fprintf(stderr, "cg: rank %d: out of memory for 6 vectors of %zu doubles\n", pb.rank,
                    pb.d.len);
        MPI_Finalize();
        return 1;
    }
    manufacture(&pb, n);

    const int threads = cg_kernels_threads();
    if (pb.rank == 0) {
        printf("# cg: backend=%s decomposition=slabs stencil=7-point n=%d ranks=%d threads=%d "
               "tol=%g iters=%ld repeat=%ld halos=%s\n",
               cg_kernels_backend(), n, pb.size, threads, o.tol, o.iters, o.repeat,
               pb.stage ? "staged" : "direct");
        fflush(stdout);
    }

    int all_converged = 1;
    double sum_gflops = 0;
    for (long rep = 0; rep < o.repeat; rep++) {
        struct progress pr = {.solve = rep + 1, .solves = o.repeat, .every = o.progress};
        struct solve s = cg_solve(&pb, n, o.iters, o.tol, &pr);
        double gflops = s.time_s > 0 ? s.flops / s.time_s / 1e9 : 0.0;
        sum_gflops += gflops;
        if (pb.rank == 0) {
            printf("cg: n=%d ranks=%d threads=%d iterations=%ld residual=%.6e error=%.6e "
                   "time_s=%.6f gflops=%.4f\n",
                   n, pb.size, threads, s.iterations, s.residual, s.error, s.time_s, gflops);
            fflush(stdout);
            if (!s.converged)
                fprintf(stderr,
                        "cg: solve %ld did not converge: relative residual %.3e after %ld "
                        "iterations (--tol %g, --iters %ld)\n",
                        rep + 1, s.residual, s.iterations, o.tol, o.iters);
        }
        all_converged &= s.converged;
    }
    if (all_converged && pb.rank == 0)
        printf("CG FOM: %.4f GFLOP/s\n", sum_gflops / (double)o.repeat);

    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++)
        cg_vec_free(*vecs[i]);
    for (int i = 0; i < 4; i++)
        free(pb.host[i]);
    MPI_Finalize();
    return all_converged ? 0 : 1;
}
