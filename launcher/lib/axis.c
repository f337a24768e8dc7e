/* SPDX-License-Identifier: BSD-3-Clause */
/* The axes of a scan or a tune space, and their configurations: axis.h. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "axis.h"
#include "expand.h"
#include "util.h"

void gpurun_axis_free(struct gpurun_axis *ax)
{
    free(ax->key);
    gpurun_free_words(ax->texts); /* NULL-ended, as every maker leaves it */
    free(ax->values);
    memset(ax, 0, sizeof *ax);
}

void gpurun_axis_copy(struct gpurun_axis *dst, const struct gpurun_axis *src)
{
    *dst = *src;
    dst->key = gpurun_xstrdup(src->key);
    dst->texts = gpurun_xcalloc(src->n + 1, sizeof *dst->texts);
    for (size_t v = 0; v < src->n; v++)
        dst->texts[v] = gpurun_xstrdup(src->texts[v]);
    if (src->values) {
        dst->values = gpurun_xcalloc(src->n ? src->n : 1, sizeof *dst->values);
        memcpy(dst->values, src->values, src->n * sizeof *dst->values);
    }
}

/* How many configurations one step of axis `a` skips: the product of the
 * lengths of the axes after it. */
static size_t stride(const struct gpurun_axis *axes, size_t naxes, size_t a)
{
    size_t inner = 1;
    for (size_t b = a + 1; b < naxes; b++)
        inner *= axes[b].n ? axes[b].n : 1;
    return inner;
}

size_t gpurun_axes_count(const struct gpurun_axis *axes, size_t naxes)
{
    return naxes ? stride(axes, naxes, 0) * (axes[0].n ? axes[0].n : 1) : 1;
}

size_t gpurun_axes_pick(const struct gpurun_axis *axes, size_t naxes, size_t k, size_t a)
{
    return axes[a].n ? (k / stride(axes, naxes, a)) % axes[a].n : 0;
}

size_t gpurun_axes_neighbor(const struct gpurun_axis *axes, size_t naxes, size_t k, size_t a, size_t v)
{
    size_t inner = stride(axes, naxes, a);
    return k - gpurun_axes_pick(axes, naxes, k, a) * inner + v * inner;
}

char **gpurun_axes_sets(const struct gpurun_axis *axes, size_t naxes, size_t k, size_t *n)
{
    char **sets = gpurun_xcalloc(naxes + 1, sizeof *sets);
    size_t m = 0;
    for (size_t a = 0; a < naxes; a++)
        if (axes[a].n)
            sets[m++] = gpurun_xasprintf("%s=%s", axes[a].key, axes[a].texts[gpurun_axes_pick(axes, naxes, k, a)]);
    if (n)
        *n = m;
    return sets;
}

char *gpurun_axes_text(const struct gpurun_axis *axes, size_t naxes, size_t k, const char *sep)
{
    char **sets = gpurun_axes_sets(axes, naxes, k, NULL);
    struct gpurun_strbuf b = {0};
    for (size_t i = 0; sets[i]; i++)
        gpurun_strbuf_printf(&b, "%s%s", i ? sep : "", sets[i]);
    gpurun_free_words(sets);
    return b.s ? b.s : gpurun_xstrdup("");
}
