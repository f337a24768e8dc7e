/* SPDX-License-Identifier: BSD-3-Clause */
/* An XML export checked before hwloc reads it, and an hwloc 3 export made
 * one hwloc 2 reads (topo_xml.h).  Moved whole from topology.c. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "safefile.h"
#include "topo_model.h"
#include "topo_xml.h"
#include "util.h"

/* --- refusing malformed exports --------------------------------------------
 *
 * hwloc's XML importer trusts its input: it dereferences complete_cpuset and
 * complete_nodeset without checking they were given (hwloc 2.9 crashes on a
 * root or a child object without them, with its libxml2 parser and with its
 * own), and sizes bitmaps and matrices from numbers in the file.  So gpurun
 * first checks with libxml2 what the importer assumes of every export hwloc
 * writes, and refuses anything else with exit 2, naming the file, the line
 * and the attribute. */

enum xml_kind { XK_NORMAL, XK_MEMORY, XK_IO, XK_MISC };

struct xml_check {
    const char *file;
    gpurun_error_t *err;
    bool v1;  /* hwloc 1.x format: NUMA nodes are in the CPU tree */
    long objects, pus, numa;
    hwloc_bitmap_t root_complete_cpuset;
    unsigned long long *gp;  /* gp_index values seen, to refuse duplicates */
    size_t ngp, capgp;
};

static const char *const set_attrs[] = {"cpuset",         "complete_cpuset", "allowed_cpuset", "online_cpuset",
                                        "nodeset",        "complete_nodeset", "allowed_nodeset"};

static int xml_fail(struct xml_check *c, xmlNodePtr n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int xml_fail(struct xml_check *c, xmlNodePtr n, const char *fmt, ...)
{
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return gpurun_err(c->err, GPURUN_EXIT_CONFIG,
                      "%s:%ld: %s; not a well-formed hwloc export, so gpurun does not load it "
                      "(export the node again with lstopo --of xml FILE)",
                      c->file, n ? (long)xmlGetLineNo(n) : 0L, what);
}

static char *xml_attr(xmlNodePtr n, const char *name)
{
    return (char *)xmlGetProp(n, (const xmlChar *)name);
}

/* hwloc's bitmap syntax, strictly: comma-separated hex words of at most 32
 * bits ("0x000000ff,,0x00000001", a zero word inside left empty), the
 * first possibly "0xf...f" for an infinite set.  *words counts the finite words. */
static bool bitmap_syntax(const char *s, size_t *words, bool *infinite)
{
    *words = 0;
    *infinite = !strncmp(s, "0xf...f", 7);
    if (*infinite) {
        s += 7;
        if (*s == '\0')
            return true;
        if (*s++ != ',')
            return false;
    }
    for (;;) {
        /* hwloc writes a zero word between others as nothing: "0x1,,0x2". */
        if (*s != ',' || *words == 0 || !s[1]) {
            if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
                return false;
            s += 2;
            size_t digits = strspn(s, "0123456789abcdefABCDEF");
            if (digits < 1 || digits > 8)
                return false;
            s += digits;
        }
        (*words)++;
        if (*s == '\0')
            return true;
        if (*s++ != ',')
            return false;
    }
}

/* Parse one set attribute into out (left untouched when absent); -1 with
 * the error when it is malformed or reaches past gpurun's limits. */
static int xml_set(struct xml_check *c, xmlNodePtr n, const char *name, hwloc_bitmap_t out, bool *present)
{
    char *v = xml_attr(n, name);
    *present = v != NULL;
    if (!v)
        return 0;
    size_t words;
    bool infinite;
    bool nodes = strstr(name, "nodeset") != NULL;
    unsigned limit = nodes ? GPURUN_TOPO_MAX_NUMA_INDEX : GPURUN_TOPO_MAX_PU_INDEX;
    int rc = 0;
    if (!bitmap_syntax(v, &words, &infinite))
        rc = xml_fail(c, n, "%s=\"%.40s%s\" is not an hwloc bitmap (0x-prefixed 32-bit hex words, comma-separated)",
                      name, v, strlen(v) > 40 ? "..." : "");
    else if (infinite && !strstr(name, "allowed") && !strstr(name, "online"))
        rc = xml_fail(c, n, "%s is infinite (0xf...f): only the allowed sets may be", name);
    else if (words > (limit + 31) / 32)
        rc = xml_fail(c, n, "%s has %zu words: more %s than gpurun accepts (numbers below %u)", name, words,
                      nodes ? "NUMA nodes" : "PUs", limit);
    else if (hwloc_bitmap_sscanf(out, v) < 0)
        rc = xml_fail(c, n, "%s=\"%.40s\" is not an hwloc bitmap", name, v);
    else if (!infinite && hwloc_bitmap_last(out) >= (int)limit)
        rc = xml_fail(c, n, "%s names %s %d: gpurun accepts numbers below %u", name, nodes ? "NUMA node" : "PU",
                      hwloc_bitmap_last(out), limit);
    xmlFree(v);
    return rc;
}

/* A decimal attribute; *present says whether it was there. */
static int xml_uint(struct xml_check *c, xmlNodePtr n, const char *name, unsigned long long max,
                    unsigned long long *value, bool *present)
{
    char *v = xml_attr(n, name), *end;
    *present = v != NULL;
    if (!v)
        return 0;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    int rc = 0;
    if (end == v || *end || errno || v[0] == '-' || x > max)
        rc = xml_fail(c, n, "%s=\"%.40s\" is not a number from 0 to %llu", name, v, max);
    xmlFree(v);
    *value = x;
    return rc;
}

static int xml_kind_of(struct xml_check *c, xmlNodePtr n, enum xml_kind *kind, hwloc_obj_type_t *type)
{
    char *v = xml_attr(n, "type");
    if (!v)
        return xml_fail(c, n, "an object without a type");
    int rc = 0;
    *type = HWLOC_OBJ_GROUP;
    *kind = XK_NORMAL;
    /* Names older and newer hwloc writes that 2.x reads as Groups/caches. */
    if (!strcasecmp(v, "Cache") || !strcasecmp(v, "Tile") || !strcasecmp(v, "Module") || !strcasecmp(v, "System"))
        *kind = XK_NORMAL;
    else if (hwloc_type_sscanf(v, type, NULL, 0) < 0)
        rc = xml_fail(c, n, "unknown object type \"%.40s\"", v);
    else if (*type == HWLOC_OBJ_NUMANODE || *type == HWLOC_OBJ_MEMCACHE)
        *kind = XK_MEMORY;
    else if (*type == HWLOC_OBJ_BRIDGE || *type == HWLOC_OBJ_PCI_DEVICE || *type == HWLOC_OBJ_OS_DEVICE)
        *kind = XK_IO;
    else if (*type == HWLOC_OBJ_MISC)
        *kind = XK_MISC;
    else
        *kind = XK_NORMAL;
    xmlFree(v);
    return rc;
}

static bool is_element(xmlNodePtr n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && !strcmp((const char *)n->name, name);
}

/* hwloc's importer gives up on a file (and leaks what it read so far) at an
 * attribute it does not know on <info>, <page_type>, <userdata>, and the
 * children of <distances2>: only those of `allowed` (NULL-ended) may be there. */
static int xml_only_attrs(struct xml_check *c, xmlNodePtr n, const char *const *allowed)
{
    for (xmlAttrPtr a = n->properties; a; a = a->next) {
        size_t i = 0;
        while (allowed[i] && strcmp((const char *)a->name, allowed[i]))
            i++;
        if (!allowed[i])
            return xml_fail(c, n, "<%s> with an attribute %.40s that hwloc does not know", (const char *)n->name,
                            (const char *)a->name);
    }
    return 0;
}

/* The element's text as hwloc reads it: its first child, if that is text;
 * hwloc refuses the file unless it is exactly `length` bytes long. */
static const char *xml_text(xmlNodePtr n)
{
    return n->children && n->children->type == XML_TEXT_NODE && n->children->content
               ? (const char *)n->children->content
               : "";
}

static int xml_check_length(struct xml_check *c, xmlNodePtr n, unsigned long long length)
{
    if (strlen(xml_text(n)) != length)
        return xml_fail(c, n, "<%s> whose text is not the %llu characters its length says",
                        (const char *)n->name, length);
    return 0;
}

struct xml_sets {
    hwloc_bitmap_t cpuset, complete_cpuset, nodeset, complete_nodeset;
};

static int xml_check_object(struct xml_check *c, xmlNodePtr n, enum xml_kind parent_kind,
                            hwloc_obj_type_t parent_type, const struct xml_sets *parent, int depth);

/* How many numbers hwloc reads from a distance matrix's <indexes> or
 * <u64values> text: each strtoull's, while one blank separates them. */
static unsigned long long xml_count_numbers(const char *s, bool hetero)
{
    unsigned long long k = 0;
    for (;;) {
        if (hetero) { /* "Type:index" */
            const char *colon = strchr(s, ':');
            if (!*s || !colon)
                return k;
            s = colon + 1;
        }
        char *end;
        strtoull(s, &end, 0);
        if (end == s)
            return k;
        k++;
        if (*end != ' ')
            return k;
        s = end + 1;
    }
}

/* The numbers hwloc sizes arrays from: a distance matrix of nbobjs x nbobjs;
 * and a 2.x matrix (distances2) as its importer wants it, or it gives up on
 * the file. */
static int xml_check_distances(struct xml_check *c, xmlNodePtr n)
{
    unsigned long long nb;
    bool present;
    const char *tag = (const char *)n->name;
    if (xml_uint(c, n, "nbobjs", ULLONG_MAX, &nb, &present) < 0)
        return -1;
    if (!present)
        return xml_fail(c, n, "%s without nbobjs", tag);
    if (nb > GPURUN_TOPO_MAX_DISTANCE_OBJS)
        return xml_fail(c, n, "%s between %llu objects: gpurun accepts at most %d", tag, nb,
                        GPURUN_TOPO_MAX_DISTANCE_OBJS);
    if (is_element(n, "distances"))
        return 0; /* hwloc 1.x: read leniently */
    bool hetero = is_element(n, "distances2hetero");
    char *type = xml_attr(n, "type"), *indexing = xml_attr(n, "indexing");
    hwloc_obj_type_t t;
    unsigned long long kind;
    bool has_kind;
    int rc = xml_uint(c, n, "kind", ULLONG_MAX, &kind, &has_kind);
    if (rc == 0 && (nb == 0 || !has_kind || kind == 0 || (!hetero && (!indexing || !type))))
        rc = xml_fail(c, n, "%s without nbobjs, kind%s", tag, hetero ? "" : ", indexing or type");
    else if (rc == 0 && type && hwloc_type_sscanf(type, &t, NULL, 0) < 0)
        rc = xml_fail(c, n, "%s of an unknown object type \"%.40s\"", tag, type);
    xmlFree(type);
    xmlFree(indexing);
    unsigned long long nindexes = 0, nvalues = 0;
    for (xmlNodePtr ch = n->children; ch && rc == 0; ch = ch->next) {
        if (ch->type != XML_ELEMENT_NODE)
            continue;
        if (is_element(ch, "info")) {
            rc = xml_only_attrs(c, ch, (const char *const[]){"name", "value", NULL});
            continue;
        }
        bool idx = is_element(ch, "indexes");
        if (!idx && !is_element(ch, "u64values")) {
            rc = xml_fail(c, ch, "<%.40s> inside %s", (const char *)ch->name, tag);
            break;
        }
        unsigned long long length;
        bool has_length;
        if (!ch->properties || strcmp((const char *)ch->properties->name, "length") || ch->properties->next)
            rc = xml_fail(c, ch, "<%s> whose only attribute is not length", (const char *)ch->name);
        else if ((rc = xml_uint(c, ch, "length", INT_MAX, &length, &has_length)) == 0)
            rc = xml_check_length(c, ch, length);
        if (rc == 0 && (idx ? nindexes >= nb : nvalues >= nb * nb))
            rc = xml_fail(c, ch, "%s with more %s than its %llu objects have", tag, idx ? "indexes" : "values",
                          nb);
        if (rc == 0) {
            unsigned long long k = xml_count_numbers(xml_text(ch), hetero && idx);
            if (idx)
                nindexes += k < nb - nindexes ? k : nb - nindexes;
            else
                nvalues += k < nb * nb - nvalues ? k : nb * nb - nvalues;
        }
    }
    if (rc == 0 && (nindexes != nb || nvalues != nb * nb))
        rc = xml_fail(c, n, "%s of %llu objects with %llu indexes and %llu values (it needs %llu and %llu)", tag,
                      nb, nindexes, nvalues, nb, nb * nb);
    return rc;
}

static int xml_check_children(struct xml_check *c, xmlNodePtr n, enum xml_kind kind, hwloc_obj_type_t type,
                              const struct xml_sets *sets, int depth)
{
    bool after_object = false;
    long nchildren = 0;
    for (xmlNodePtr ch = n->children; ch; ch = ch->next) {
        if (ch->type != XML_ELEMENT_NODE)
            continue;
        if (is_element(ch, "object")) {
            after_object = true;
            /* hwloc 2.9's importer finds the end of the siblings' list for
             * each child it inserts: 100,000 objects under one parent took
             * minutes. */
            if (++nchildren > GPURUN_TOPO_MAX_CHILDREN)
                return xml_fail(c, ch, "an object with more than %d child objects: gpurun accepts at most %d",
                                GPURUN_TOPO_MAX_CHILDREN, GPURUN_TOPO_MAX_CHILDREN);
            if (xml_check_object(c, ch, kind, type, sets, depth + 1) < 0)
                return -1;
            continue;
        }
        /* hwloc reads an object's own elements before its children, and
         * gives up on one that comes after them. */
        if (after_object)
            return xml_fail(c, ch, "<%.40s> after a child object (hwloc exports write them first)",
                            (const char *)ch->name);
        if (is_element(ch, "info")) {
            char *name = xml_attr(ch, "name"), *value = xml_attr(ch, "value");
            bool good = name && value;
            xmlFree(name);
            xmlFree(value);
            if (!good)
                return xml_fail(c, ch, "an info without both name and value");
            if (xml_only_attrs(c, ch, (const char *const[]){"name", "value", NULL}) < 0)
                return -1;
        } else if (is_element(ch, "distances")) { /* hwloc 1.x puts them inside objects */
            if (xml_check_distances(c, ch) < 0)
                return -1;
        } else if (is_element(ch, "page_type")) {
            if (depth > 0 && type != HWLOC_OBJ_NUMANODE)
                return xml_fail(c, ch, "a page_type inside a %s (only NUMA nodes and the Machine have them)",
                                hwloc_obj_type_string(type));
            if (xml_only_attrs(c, ch, (const char *const[]){"size", "count", NULL}) < 0)
                return -1;
        } else if (is_element(ch, "userdata")) {
            unsigned long long length = 0;
            bool has_length;
            char *encoding = xml_attr(ch, "encoding");
            bool base64 = encoding && !strcmp(encoding, "base64");
            xmlFree(encoding);
            if (xml_only_attrs(c, ch, (const char *const[]){"length", "encoding", "name", NULL}) < 0 ||
                xml_uint(c, ch, "length", INT_MAX / 2, &length, &has_length) < 0 ||
                xml_check_length(c, ch, base64 ? 4 * ((length + 2) / 3) : length) < 0)
                return -1;
        } else {
            return xml_fail(c, ch, "<%.40s> inside an object", (const char *)ch->name);
        }
    }
    return 0;
}

/* Where hwloc 2.x puts each kind; the importer refuses a few of these
 * itself, but not a CPU object below a PU. */
static int xml_check_placement(struct xml_check *c, xmlNodePtr n, enum xml_kind kind, const char *tname,
                               enum xml_kind parent_kind, hwloc_obj_type_t parent_type, bool has_parent)
{
    if (has_parent) {
        if (kind == XK_NORMAL && (parent_kind != XK_NORMAL || parent_type == HWLOC_OBJ_PU))
            return xml_fail(c, n, "a %s object inside a %s", tname, hwloc_obj_type_string(parent_type));
        if (kind == XK_MEMORY && (parent_kind == XK_IO || parent_kind == XK_MISC))
            return xml_fail(c, n, "a %s object inside a %s", tname, hwloc_obj_type_string(parent_type));
        if (kind == XK_IO && (parent_kind == XK_MEMORY || parent_kind == XK_MISC))
            return xml_fail(c, n, "a %s object inside a %s", tname, hwloc_obj_type_string(parent_type));
    } else if (kind != XK_NORMAL) {
        return xml_fail(c, n, "the top object is a %s, not the Machine", tname);
    }
    return 0;
}

/* The importer drops a cache whose level is not its type's, without
 * saying why. */
static int xml_check_cache_level(struct xml_check *c, xmlNodePtr n, hwloc_obj_type_t type, const char *tname)
{
    if (type < HWLOC_OBJ_L1CACHE || type > HWLOC_OBJ_L3ICACHE)
        return 0;
    unsigned long long level, ctype;
    bool has_level, has_ctype;
    bool icache = type >= HWLOC_OBJ_L1ICACHE;
    int want = icache ? (int)(type - HWLOC_OBJ_L1ICACHE) + 1 : (int)(type - HWLOC_OBJ_L1CACHE) + 1;
    if (xml_uint(c, n, "depth", 64, &level, &has_level) < 0 ||
        xml_uint(c, n, "cache_type", ULLONG_MAX, &ctype, &has_ctype) < 0)
        return -1;
    /* hwloc drops the file when the level or the kind (cache_type 2:
     * instructions) is not the type's; it ignores a kind past 2. */
    if (!has_level)
        return xml_fail(c, n, "an %s without its depth", tname);
    if (level != (unsigned long long)want)
        return xml_fail(c, n, "an %s that says it is a level-%llu cache (depth=\"%llu\")", tname, level, level);
    if (icache != (has_ctype && ctype == HWLOC_OBJ_CACHE_INSTRUCTION))
        return xml_fail(c, n, "an %s whose cache_type says it is %s cache", tname,
                        icache ? "not an instruction" : "an instruction");
    return 0;
}

/* Read os_index, and note gp_index for the check for duplicates. */
static int xml_read_indexes(struct xml_check *c, xmlNodePtr n, unsigned long long *os_index, bool *has_os)
{
    unsigned long long gp;
    bool has_gp;
    if (xml_uint(c, n, "gp_index", ULLONG_MAX, &gp, &has_gp) < 0 ||
        xml_uint(c, n, "os_index", UINT_MAX, os_index, has_os) < 0)
        return -1;
    if (has_gp) {
        if (c->ngp == c->capgp) {
            c->capgp = c->capgp ? 2 * c->capgp : 256;
            c->gp = gpurun_xrealloc(c->gp, c->capgp * sizeof *c->gp);
        }
        c->gp[c->ngp++] = gp;
    }
    return 0;
}

/* Parse every set attribute of the object (each checked; the four that
 * matter kept in *s), and say in present[] which were there. */
static int xml_read_sets(struct xml_check *c, xmlNodePtr n, struct xml_sets *s, bool *present)
{
    hwloc_bitmap_t scratch = hwloc_bitmap_alloc();
    int rc = 0;
    for (size_t i = 0; i < sizeof set_attrs / sizeof set_attrs[0] && rc == 0; i++) {
        hwloc_bitmap_t out = !strcmp(set_attrs[i], "cpuset")             ? s->cpuset
                             : !strcmp(set_attrs[i], "complete_cpuset")  ? s->complete_cpuset
                             : !strcmp(set_attrs[i], "nodeset")          ? s->nodeset
                             : !strcmp(set_attrs[i], "complete_nodeset") ? s->complete_nodeset
                                                                         : scratch;
        rc = xml_set(c, n, set_attrs[i], out, &present[i]);
    }
    hwloc_bitmap_free(scratch);
    return rc;
}

/* A CPU or memory object's sets: all four there, each inside its complete
 * one and inside its parent's; the Machine's not empty. */
static int xml_check_cpu_sets(struct xml_check *c, xmlNodePtr n, const char *tname, const struct xml_sets *s,
                              const bool *present, const struct xml_sets *parent, hwloc_obj_type_t parent_type)
{
    /* Every CPU and memory object hwloc exports has its four sets. */
    for (size_t i = 0; i < 7; i++) {
        if (!strcmp(set_attrs[i], "cpuset") || !strcmp(set_attrs[i], "complete_cpuset") ||
            !strcmp(set_attrs[i], "nodeset") || !strcmp(set_attrs[i], "complete_nodeset")) {
            if (!present[i])
                return xml_fail(c, n, "a %s object without %s (hwloc needs cpuset, complete_cpuset, nodeset and "
                                "complete_nodeset on every CPU and memory object)", tname, set_attrs[i]);
        }
    }
    if (!hwloc_bitmap_isincluded(s->cpuset, s->complete_cpuset) ||
        !hwloc_bitmap_isincluded(s->nodeset, s->complete_nodeset))
        return xml_fail(c, n, "a %s object whose cpuset or nodeset is not inside its complete_cpuset or "
                        "complete_nodeset", tname);
    if (parent && (!hwloc_bitmap_isincluded(s->cpuset, parent->cpuset) ||
                   !hwloc_bitmap_isincluded(s->complete_cpuset, parent->complete_cpuset) ||
                   !hwloc_bitmap_isincluded(s->nodeset, parent->nodeset) ||
                   !hwloc_bitmap_isincluded(s->complete_nodeset, parent->complete_nodeset)))
        return xml_fail(c, n, "a %s object with CPUs or NUMA nodes that its parent %s does not have", tname,
                        hwloc_obj_type_string(parent_type));
    if (!parent) {
        if (hwloc_bitmap_iszero(s->cpuset) || hwloc_bitmap_iszero(s->nodeset))
            return xml_fail(c, n, "the Machine has no CPUs or no NUMA node");
        hwloc_bitmap_copy(c->root_complete_cpuset, s->complete_cpuset);
    }
    return 0;
}

/* hwloc sets bit os_index of a PU or NUMA node in its sets; and the
 * counts of both are bounded. */
static int xml_check_pu_or_numa(struct xml_check *c, xmlNodePtr n, hwloc_obj_type_t type, const char *tname,
                                const struct xml_sets *s, unsigned long long os_index, bool has_os)
{
    if (type != HWLOC_OBJ_PU && type != HWLOC_OBJ_NUMANODE)
        return 0;
    bool pu = type == HWLOC_OBJ_PU;
    unsigned limit = pu ? GPURUN_TOPO_MAX_PU_INDEX : GPURUN_TOPO_MAX_NUMA_INDEX;
    hwloc_bitmap_t own = pu ? s->complete_cpuset : s->complete_nodeset;
    if (!has_os || os_index >= limit)
        return xml_fail(c, n, "a %s %s os_index (gpurun needs one below %u)", tname,
                        has_os ? "with a too large" : "without an", limit);
    if (hwloc_bitmap_weight(own) != 1 || !hwloc_bitmap_isset(own, (unsigned)os_index))
        return xml_fail(c, n, "%s P#%llu whose %s is not just %s %llu", tname, os_index,
                        pu ? "complete_cpuset" : "complete_nodeset", pu ? "PU" : "node", os_index);
    if (pu && ++c->pus > GPURUN_TOPO_MAX_PUS)
        return xml_fail(c, n, "more than %d PUs: gpurun accepts at most %d", GPURUN_TOPO_MAX_PUS,
                        GPURUN_TOPO_MAX_PUS);
    if (!pu && ++c->numa > GPURUN_TOPO_MAX_NUMA)
        return xml_fail(c, n, "more than %d NUMA nodes: gpurun accepts at most %d", GPURUN_TOPO_MAX_NUMA,
                        GPURUN_TOPO_MAX_NUMA);
    return 0;
}

static int xml_check_object(struct xml_check *c, xmlNodePtr n, enum xml_kind parent_kind,
                            hwloc_obj_type_t parent_type, const struct xml_sets *parent, int depth)
{
    enum xml_kind kind;
    hwloc_obj_type_t type;
    if (++c->objects > GPURUN_TOPO_MAX_OBJECTS)
        return xml_fail(c, n, "more than %d objects: gpurun accepts at most %d", GPURUN_TOPO_MAX_OBJECTS,
                        GPURUN_TOPO_MAX_OBJECTS);
    /* Real trees are a few dozen levels deep; the importer recurses. */
    if (depth > 256)
        return xml_fail(c, n, "objects nested more than 256 deep");
    if (xml_kind_of(c, n, &kind, &type) < 0)
        return -1;
    if (c->v1 && kind == XK_MEMORY) /* 1.x: NUMA nodes are in the CPU tree, I/O below them */
        kind = XK_NORMAL;
    const char *tname = hwloc_obj_type_string(type);
    if (xml_check_placement(c, n, kind, tname, parent_kind, parent_type, parent != NULL) < 0 ||
        xml_check_cache_level(c, n, type, tname) < 0)
        return -1;
    unsigned long long os_index;
    bool has_os;
    if (xml_read_indexes(c, n, &os_index, &has_os) < 0)
        return -1;

    struct xml_sets s = {hwloc_bitmap_alloc(), hwloc_bitmap_alloc(), hwloc_bitmap_alloc(), hwloc_bitmap_alloc()};
    bool present[sizeof set_attrs / sizeof set_attrs[0]];
    int rc = xml_read_sets(c, n, &s, present);
    if (rc < 0)
        goto out;
    if (kind == XK_IO || kind == XK_MISC) {
        for (size_t i = 0; i < sizeof set_attrs / sizeof set_attrs[0]; i++)
            if (present[i]) {
                rc = xml_fail(c, n, "a %s object with %s (I/O and Misc objects have no CPU sets)", tname,
                              set_attrs[i]);
                goto out;
            }
        /* hwloc names every OS device it writes; gpurun names NICs and
         * GPUs' runtimes by them. */
        char *name = type == HWLOC_OBJ_OS_DEVICE ? xml_attr(n, "name") : NULL;
        bool unnamed = type == HWLOC_OBJ_OS_DEVICE && (!name || !*name);
        xmlFree(name);
        rc = unnamed ? xml_fail(c, n, "an OSDev object without a name")
                     : xml_check_children(c, n, kind, type, parent, depth);
        goto out;
    }
    if (xml_check_cpu_sets(c, n, tname, &s, present, parent, parent_type) < 0 ||
        xml_check_pu_or_numa(c, n, type, tname, &s, os_index, has_os) < 0) {
        rc = -1;
        goto out;
    }
    rc = xml_check_children(c, n, kind, type, &s, depth);
out:
    hwloc_bitmap_free(s.cpuset);
    hwloc_bitmap_free(s.complete_cpuset);
    hwloc_bitmap_free(s.nodeset);
    hwloc_bitmap_free(s.complete_nodeset);
    return rc;
}

static int ull_cmp(const void *a, const void *b)
{
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

/* What follows the top object: distances, CPU kinds, memory attributes. */
static int xml_check_tail(struct xml_check *c, xmlNodePtr n)
{
    if (is_element(n, "distances2") || is_element(n, "distances2hetero") || is_element(n, "distances"))
        return xml_check_distances(c, n);
    if (is_element(n, "cpukind")) {
        bool present;
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        int rc = xml_set(c, n, "cpuset", set, &present);
        if (rc == 0 && !present)
            rc = xml_fail(c, n, "a cpukind without cpuset");
        else if (rc == 0 && (hwloc_bitmap_iszero(set) || !hwloc_bitmap_isincluded(set, c->root_complete_cpuset)))
            rc = xml_fail(c, n, "a cpukind whose cpuset is empty or not the Machine's");
        hwloc_bitmap_free(set);
        return rc;
    }
    return 0;
}

static int xml_check_doc(struct xml_check *c, xmlDocPtr doc)
{
    xmlNodePtr top = xmlDocGetRootElement(doc);
    if (!top || !is_element(top, "topology"))
        return xml_fail(c, top, "the document is not a <topology>");
    /* A newer format than this hwloc reads (an hwloc 3 export was rewritten
     * as 2.0 already): hwloc 2.9 tries a version 20 and leaks on it
     * (fuzz-topo), so it goes no further than here. */
    char *version = xml_attr(top, "version");
    int major = version ? atoi(version) : 1;
    xmlFree(version);
    c->v1 = major < 2;
    unsigned api = hwloc_get_api_version() >> 16;
    if (major > (int)api)
        return gpurun_err(c->err, GPURUN_EXIT_CONFIG,
                          "%s: hwloc XML version %d, newer than the hwloc %u library gpurun uses can read; export "
                          "the node again with hwloc %u's lstopo (lstopo --of xml FILE)",
                          c->file, major, api, api);
    if (doc->intSubset && doc->intSubset->entities)
        return xml_fail(c, top, "the document declares entities (hwloc exports never do)");
    /* hwloc compares the DTD's system identifier without checking there is one. */
    if (doc->intSubset && !doc->intSubset->SystemID)
        return xml_fail(c, top, "a DOCTYPE without a system identifier (hwloc exports write <!DOCTYPE topology "
                                "SYSTEM \"hwloc2.dtd\">)");
    xmlNodePtr first = NULL;
    for (xmlNodePtr n = top->children; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE)
            continue;
        if (!first) {
            first = n;
            if (!is_element(n, "object"))
                return xml_fail(c, n, "the topology starts with <%.40s>, not with the Machine <object>",
                                (const char *)n->name);
            if (xml_check_object(c, n, XK_NORMAL, HWLOC_OBJ_MACHINE, NULL, 0) < 0)
                return -1;
        } else if (is_element(n, "object")) {
            return xml_fail(c, n, "a second top object");
        } else if (xml_check_tail(c, n) < 0) {
            return -1;
        }
    }
    if (!first)
        return xml_fail(c, top, "a topology without objects");
    if (c->numa == 0)
        return xml_fail(c, top, "a topology without a NUMANode object (hwloc refuses one)");
    if (c->ngp > 1) /* hwloc 1.x exports have no gp_index: no array at all */
        qsort(c->gp, c->ngp, sizeof *c->gp, ull_cmp);
    for (size_t i = 1; i < c->ngp; i++)
        if (c->gp[i] == c->gp[i - 1])
            return xml_fail(c, top, "gp_index %llu is given to two objects", c->gp[i]);
    return 0;
}

/* Check an export before hwloc imports it. */
int gpurun_topo_xml_check(const char *file, const char *buf, size_t len, gpurun_error_t *err)
{
    struct xml_check c = {.file = file, .err = err, .root_complete_cpuset = hwloc_bitmap_alloc()};
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (!ctxt)
        abort();
    /* No network, no DTD, no entity substitution; errors come back here
     * instead of on stderr. */
    xmlDocPtr doc = xmlCtxtReadMemory(ctxt, buf, (int)len, file, NULL,
                                      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    int rc;
    if (!doc) {
        xmlErrorPtr e = xmlCtxtGetLastError(ctxt);
        char msg[512] = "not XML";
        if (e && e->message) {
            snprintf(msg, sizeof msg, "%s", e->message);
            msg[strcspn(msg, "\n")] = '\0';
        }
        rc = gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: not an hwloc XML topology (line %d: %s)", file,
                        e ? e->line : 0, msg);
    } else {
        rc = xml_check_doc(&c, doc);
        xmlFreeDoc(doc);
    }
    xmlFreeParserCtxt(ctxt);
    hwloc_bitmap_free(c.root_complete_cpuset);
    free(c.gp);
    return rc;
}

/* --- hwloc 3 exports ---------------------------------------------------------
 *
 * hwloc 3 writes <topology version="3.0">, which the hwloc 2 library refuses
 * outright, and hwloc's own test exports are in that format now.  It differs
 * from 2.0 in three ways, which hwloc 3's own 2.0 export
 * (HWLOC_TOPOLOGY_EXPORT_XML_FLAG_V2) undoes as gpurun does here, in memory,
 * before the checks and the import: an OS device type is a set of flags (4
 * GPU, 8 co-processor, 16 network, 32 OpenFabrics...), which hwloc 2 would
 * read as other types or none, losing every NIC's verbs device; each object
 * has an id="objN" beside its gp_index; and the topology's own infos
 * (HostName, OSName...) follow the root object instead of being inside it.
 * Nothing is re-indented, so the checks' line numbers are the file's. */

#define V3_OSDEV_STORAGE 0x1u
#define V3_OSDEV_MEMORY 0x2u
#define V3_OSDEV_GPU 0x4u
#define V3_OSDEV_COPROC 0x8u
#define V3_OSDEV_NETWORK 0x10u
#define V3_OSDEV_OPENFABRICS 0x20u
#define V3_OSDEV_DMA 0x40u

/* The hwloc 2 osdev_type of a set of hwloc 3 flags; NULL for none (hwloc 3's
 * own 2.0 export then writes no type).  A GPU runtime's device is both a GPU
 * and a co-processor in hwloc 3: co-processor, as hwloc 2 wrote CUDA's. */
static const char *v2_osdev_type(const char *v3)
{
    char *end;
    errno = 0;
    unsigned long t = strtoul(v3, &end, 10);
    if (end == v3 || *end || errno || v3[0] == '-')
        return NULL;
    if (t & (V3_OSDEV_STORAGE | V3_OSDEV_MEMORY))
        return "0"; /* block */
    if (t & V3_OSDEV_OPENFABRICS)
        return "3";
    if (t & V3_OSDEV_NETWORK)
        return "2";
    if (t & V3_OSDEV_COPROC)
        return "5";
    if (t & V3_OSDEV_GPU)
        return "1";
    if (t & V3_OSDEV_DMA)
        return "4";
    return NULL;
}

static void v3_object_to_v2(xmlNodePtr n)
{
    xmlUnsetProp(n, (const xmlChar *)"id");
    char *type = xml_attr(n, "type"), *os = xml_attr(n, "osdev_type");
    if (type && os && !strcmp(type, "OSDev")) {
        const char *v2 = v2_osdev_type(os);
        if (v2)
            xmlSetProp(n, (const xmlChar *)"osdev_type", (const xmlChar *)v2);
        else
            xmlUnsetProp(n, (const xmlChar *)"osdev_type");
    }
    xmlFree(type);
    xmlFree(os);
}

/* Rewrite *buf in place when it is an hwloc 3 export; anything else (and a
 * file libxml2 cannot parse) is left for the checks to judge. */
int gpurun_topo_xml_v3_to_v2(const char *file, char **buf, size_t *len, gpurun_error_t *err)
{
    /* Only a document that says version="3 near its start is parsed here. */
    size_t head = *len < 4096 ? *len : 4096;
    const char *t = memmem(*buf, head, "<topology", 9);
    const char *v = t ? memmem(t, head - (size_t)(t - *buf), "version=", 8) : NULL;
    if (!v || (size_t)(v - *buf) + 10 > head || (v[8] != '"' && v[8] != '\'') || v[9] != '3')
        return 0;
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (!ctxt)
        abort();
    xmlDocPtr doc = xmlCtxtReadMemory(ctxt, *buf, (int)*len, file, NULL,
                                      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    xmlFreeParserCtxt(ctxt);
    xmlNodePtr top = doc ? xmlDocGetRootElement(doc) : NULL;
    char *version = top && is_element(top, "topology") ? xml_attr(top, "version") : NULL;
    if (!version || atoi(version) != 3) {
        xmlFree(version);
        xmlFreeDoc(doc);
        return 0;
    }
    xmlFree(version);
    xmlSetProp(top, (const xmlChar *)"version", (const xmlChar *)"2.0");
    xmlNodePtr root = NULL;
    for (xmlNodePtr n = top->children; n && !root; n = n->next)
        if (is_element(n, "object"))
            root = n;
    /* Every object, depth first without recursion (the checks bound the
     * depth only later). */
    for (xmlNodePtr n = root; n;) {
        if (is_element(n, "object")) {
            v3_object_to_v2(n);
            if (n->children) {
                n = n->children;
                continue;
            }
        }
        while (n != root && !n->next)
            n = n->parent;
        n = n == root ? NULL : n->next;
    }
    /* The topology's infos go where hwloc 2 wrote them: in the root object,
     * before its first child object. */
    xmlNodePtr first_child = NULL;
    for (xmlNodePtr n = root ? root->children : NULL; n && !first_child; n = n->next)
        if (is_element(n, "object"))
            first_child = n;
    for (xmlNodePtr n = top->children, next; root && n; n = next) {
        next = n->next;
        if (!is_element(n, "info"))
            continue;
        xmlUnlinkNode(n);
        if (first_child)
            xmlAddPrevSibling(first_child, n);
        else
            xmlAddChild(root, n);
    }
    xmlChar *out = NULL;
    int size = 0;
    xmlDocDumpMemory(doc, &out, &size);
    xmlFreeDoc(doc);
    if (!out || size <= 0) {
        xmlFree(out);
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot rewrite this hwloc 3 export for hwloc 2", file);
    }
    free(*buf);
    *buf = gpurun_xcalloc((size_t)size + 1, 1);
    memcpy(*buf, out, (size_t)size);
    *len = (size_t)size;
    xmlFree(out);
    return 0;
}
