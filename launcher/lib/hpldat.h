/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_HPLDAT_H
#define GPURUN_HPLDAT_H

/* HPL's block size and process grid, set in a copy of its input (an
 * HPL.dat: netlib HPL's, hpcc's hpccinf.txt, NVIDIA's and AMD's HPL), for
 * a template that names that copy with `hpl_dat` (templates/hpl.conf):
 * what `gpurun tune` varies for HPL.  The params `nb` and `grid` set them;
 * empty (the default), the input is left as it is, byte for byte.
 *
 * HPL reads its input by line number, not by label: line 7 holds the count
 * of block sizes and line 8 the sizes; line 10 the count of process grids,
 * lines 11 and 12 the Ps and the Qs (line 9 is the process mapping, which
 * HPL 1.0's files lack: their lines 10 to 12 are not these, and their
 * labels say so).  An edit sets the count to 1 and the line to the one
 * value, keeping each label where it was; everything else is copied as it
 * is.  No value reaches a shell: they are whole numbers, written by this
 * code into a file. */

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "job.h"
#include "template.h"

#define GPURUN_HPL_NB_PARAM "nb"
#define GPURUN_HPL_GRID_PARAM "grid"
/* An HPL.dat is a few hundred bytes; hpcc's a few kilobytes. */
#define GPURUN_HPLDAT_MAX (256 * 1024)
/* HPL's own bound on the count of a list (HPL_MAX_PARAM). */
#define GPURUN_HPL_LIST_MAX 20
#define GPURUN_HPL_NB_MAX 65536L
#define GPURUN_HPL_DIM_MAX 65536L /* P and Q each */

struct gpurun_hpl_edit {
    bool active;   /* nb or grid set: the file is rewritten */
    long nb;       /* 0: the input's own block sizes */
    long p, q;     /* 0: the input's own grids */
    char grid[32]; /* the grid as asked: "auto", "flat", "2x4"; "" when not set */
};

/* The edit that `nb` and `grid` ask for (NULL or "": the input's own).
 * nb: a whole number from 1 to GPURUN_HPL_NB_MAX.  grid: "PxQ" (P and Q
 * whole numbers from 1), "auto" (the most square grid P <= Q of `nranks`
 * ranks) or "flat" (1 x nranks); P x Q must equal `nranks`.  `nranks` 0:
 * not known yet, the form only is checked (auto and flat: 1 x 1).  Errors
 * (exit 2) start with `nb_origin` or `grid_origin` and the key: "job.conf:12:
 * key 'params.grid': '2x2': P x Q = 4 but the layout has 2 ranks". */
int gpurun_hpl_edit_make(const char *nb, const char *nb_origin, const char *grid, const char *grid_origin,
                         long nranks, struct gpurun_hpl_edit *e, gpurun_error_t *err);

/* The most square grid of n ranks: the largest P <= sqrt(n) that divides
 * n, and Q = n / P. */
void gpurun_hpl_auto_grid(long n, long *p, long *q);

/* `text` (`len` bytes, at most GPURUN_HPLDAT_MAX; `label` names it in
 * messages) with the edit applied: a new string (*outp, *outlen), the
 * text's own bytes everywhere else.  Errors (exit 2) name the label and
 * line: an input that is not an HPL.dat as HPL reads it (too few lines, a
 * count that is not 1 to 20, fewer values than it says, a label that is
 * not the one HPL has on that line). */
int gpurun_hpl_rewrite(const char *text, size_t len, const struct gpurun_hpl_edit *e, const char *label,
                       char **outp, size_t *outlen, gpurun_error_t *err);

/* The edit the job asks for with `tpl` (its hpl_dat), for `nranks` ranks
 * (0: not known yet): the params nb and grid, the job's over the
 * template's defaults, each error naming where the value was set (the
 * job's line or --set, else the template).  No hpl_dat: inactive. */
int gpurun_hpl_edit_for_job(const gpurun_template_t *tpl, const gpurun_job_t *job, long nranks,
                            struct gpurun_hpl_edit *e, gpurun_error_t *err);

/* The template's hpl_dat_from (the file the setup steps copy: ${input}),
 * expanded with `lookup` and relative to `job_dir`, read and the edit
 * tried on it: an input the edit cannot follow is refused before
 * anything starts (exit 2, naming its path and line).  0 when the edit is
 * inactive or the template has no hpl_dat_from. */
int gpurun_hpl_check_from(const gpurun_template_t *tpl, const struct gpurun_hpl_edit *e, gpurun_lookup_fn lookup,
                          void *ctx, const char *job_dir, gpurun_error_t *err);

/* "NB 128, P x Q 1 x 2 (grid auto)": what the edit sets, for a dry run. */
void gpurun_hpl_edit_text(const struct gpurun_hpl_edit *e, char *buf, size_t size);

#endif
