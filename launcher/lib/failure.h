/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_FAILURE_H
#define GPURUN_FAILURE_H

/* What a failed rank's output says (SPEC §6, §7): its last lines, read
 * from the end of its output file and never more than GPURUN_TAIL_BYTES of
 * it (a rank's output may be gigabytes), and among them the first line that
 * names the cause: one of the template's `failure` patterns, else one that
 * gpurun knows for any program (gpurun_failure_builtin). */

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "template.h"

#define GPURUN_TAIL_BYTES (1u << 20) /* read from a rank's output file, from its end */
#define GPURUN_TAIL_LINES 20         /* the last lines shown and kept, by default */
#define GPURUN_CAUSE_LINES 8         /* at most, after a cause line that ends with ':' */

/* The patterns gpurun looks for in any program's output, after the
 * template's: "Segmentation fault", "CUDA error", "out of memory".
 * NULL-terminated POSIX extended regexes. */
extern const char *const gpurun_failure_builtin[];

struct gpurun_rank_tail {
    char **lines;  /* the last lines, oldest first, without their label, fit for a terminal */
    size_t n;
    char **cause;  /* the first line naming the cause, then the lines of its message
                    * (a line ending with ':' is a title: "Fatal error:"); none: NULL */
    size_t ncause;
    bool whole;    /* the whole file was read (else only its end) */
};

/* Read the end of the output file open as `fd`: with `label` ("3: ", the
 * rank's lines in its host's HOST.out) only the lines that start with it,
 * the label removed; NULL: every line.  Keeps the last `keep` of them and
 * looks for the cause with the template's `failure` patterns (`t` may be
 * NULL) and then the built-in ones.  0, or -1 with err when the file cannot
 * be read. */
int gpurun_rank_tail_read(int fd, const char *label, size_t keep, const gpurun_template_t *t,
                          struct gpurun_rank_tail *out, gpurun_error_t *err);
/* The cause and its message as one line ("Fatal error: The X-size of the
 * box ..."), at most about 500 bytes; NULL when none was found.  Malloc'ed. */
char *gpurun_rank_tail_reason(const struct gpurun_rank_tail *t);
void gpurun_rank_tail_free(struct gpurun_rank_tail *t);

/* How many lines to show and keep: $GPURUN_FAILURE_LINES (0 to 1000), else
 * GPURUN_TAIL_LINES. */
size_t gpurun_failure_lines(void);

#endif
