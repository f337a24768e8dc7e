/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun init: a job file to start from, for a template and a site profile,
 * laid out for this node (or an export, or the site's GPU nodes seen from a
 * login node), every key with a one-line comment.  The text is read back
 * with the job file's own parser before it is written, and it is written
 * completely or not at all, never over a file unless --force. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launcher.h" /* gpurun_which */
#include "batch.h" /* gpurun_batch_rm_site */
#include "manager.h"
#include "cmd.h"
#include "job.h"
#include "plan.h"
#include "site.h"
#include "template.h"
#include "template_base.h"
#include "topology.h"
#include "util.h"

/* The site's resource manager when it writes batch scripts (Slurm, PBS):
 * gpurun submit sends jobs to its compute nodes.  NULL: none. */
static const gpurun_rm_plugin_t *site_batch_rm(const gpurun_site_t *s)
{
    const gpurun_rm_plugin_t *rm = NULL;
    gpurun_error_t ignored = {0};
    if (!s || gpurun_rm_find(s->scheduler, &rm, &ignored) < 0 || !rm->batch_script)
        return NULL;
    return rm;
}

static const char init_usage[] =
    "Usage: gpurun init [--template NAME] [--site NAME] [-o FILE] [--topology FILE.xml] [--force]\n"
    "\n"
    "Write a job file to start from: the template's program and parameters, the layout this\n"
    "node offers (one rank per GPU with 1 GPU each, or without GPUs one rank per NUMA node; the\n"
    "threads each rank gets), the site's launcher, partition and account, every key with a\n"
    "one-line comment (man 5 gpurun.conf). It runs as written: check it with\n"
    "`gpurun run FILE --dry-run`.\n"
    "\n"
    "  -t, --template NAME      a template on the search path (default: generic; gpurun templates)\n"
    "  -s, --site NAME          a site profile (default: local; gpurun templates --sites)\n"
    "  -o, --output FILE        the job file to write (default: job.conf); - for standard output\n"
    "      --topology FILE.xml  lay the job out for an hwloc XML export (gpurun topo --export)\n"
    "                           instead of this node\n"
    "  -f, --force              replace FILE when it exists\n"
    "  -h, --help               this help\n"
    "\n"
    "On a node without GPUs (a login node) of a batch site whose profile gives gpus_per_node, the\n"
    "job is laid out for the site's GPU nodes: check it with `gpurun submit FILE --dry-run`.\n"
    "\n"
    "Exit status: 0 written; 2 bad option, unknown template or site, unreadable topology file,\n"
    "FILE exists (without --force); 3 FILE cannot be written.\n";

/* ---- what init knows of the shipped templates --------------------------- */

struct param_note {
    const char *key;
    const char *value;   /* NULL: the template's default */
    const char *comment;
};


static const struct policy {
    const char *name;
    bool cpu_only;      /* the program runs on CPUs only: gpus_per_rank = 0 */
    bool rank_per_core; /* one single-threaded rank per core (HPL's usual layout) */
    int min_ranks;      /* fewest ranks that make sense (netcheck: a pair) */
    const char *file_param; /* a params key naming an input that must exist */
    bool file_in_job_dir;   /* ... relative to the job file's folder (else absolute) */
    const char *program_param; /* the params key naming the program, if any */
    struct param_note gpu_params[2]; /* params values when the job has GPUs (the CUDA build...) */
    struct param_note params[8];
    const char *notes[4];       /* comment lines after the params section */
} policies[] = {
    {"generic", false, false, 1, NULL, false, "program", {{NULL}},
     {{"program", "nproc", "yours: on PATH, or \"./my_app\" (nproc: the cpus a rank got)"},
      {"args", "", "its arguments, split as sh would (no shell runs them)"},
      {"fom_regex", "^([0-9]+)$", "regex read in rank 0's output: group 1 is the figure"},
      {"fom_units", "cpus", "the figure's units"}},
     {NULL}},
    {"gromacs", false, false, 1, "tpr", false, NULL, {{NULL}},
     {{"tpr", NULL, "run input (gmx grompp -o); checked before anything starts"},
      {"nsteps", NULL, "MD steps; the counters restart halfway (-resethway)"},
      {"pme", NULL, "with GPUs: auto | gpu | cpu; GPU ranks > 1: \"gpu -npme 1\""},
      {"update", NULL, "with GPUs: auto | gpu | cpu"}},
     {NULL}},
    {"lammps", false, false, 1, "input", true, NULL, {{NULL}},
     {{"input", NULL, "the input script, relative to this file's folder"},
      {"nsteps", NULL, "the script's variable nsteps (run ${nsteps})"},
      {"args", NULL, "more LAMMPS options (-sf omp, -k on g 1 ...)"}},
     {NULL}},
    {"hpl", true, true, 1, "input", true, NULL, {{NULL}},
     {{"input", NULL, "hpccinf.txt, relative to this file; its P x Q = the ranks"},
      {"nb", NULL, "empty: the input's NB; \"192\": one NB written into its copy"},
      {"grid", NULL, "empty: the input's P x Q; \"2x4\", auto (most square) or flat"}},
     {NULL}},
    {"cg", false, false, 1, NULL, false, "cg", {{"cg", "cg-cuda", NULL}},
     {{"cg", NULL, "cg (CPU) or cg-cuda (GPU): on PATH, or \"./cg\" (BUILD/examples/cg)"},
      {"n", NULL, "grid edge: n^3 unknowns"},
      {"iters", NULL, "most iterations per solve"},
      {"tol", NULL, "relative residual that ends a solve"},
      {"solves", NULL, "solves per run (cg --repeat); the figure is their mean"},
      {"args", NULL, "more cg options (cg --help)"}},
     {NULL}},
    {"netcheck", false, false, 2, NULL, false, "netcheck", {{"netcheck", "netcheck-cuda", NULL}, {"buffers", "gpu", NULL}},
     {{"netcheck", NULL, "netcheck (CPU) or netcheck-cuda (GPU): on PATH, or \"./netcheck\""},
      {"buffers", NULL, "host | gpu: messages from host or GPU memory (netcheck-cuda)"},
      {"min", NULL, "smallest message, bytes"},
      {"max", NULL, "largest message, bytes (powers of two between)"},
      {"iters", NULL, "iterations per size (a tenth above 64 KiB)"},
      {"args", NULL, "more netcheck options (netcheck --help)"}},
     {"# netcheck measures between rank pairs: at least 2 ranks; nodes = 2 with ranks_per_node = 1",
      "# measures the network between two nodes.", NULL}},
    {"stream", true, false, 1, NULL, false, "stream", {{NULL}},
     {{"stream", NULL, "stream.c built with OpenMP: on PATH, or \"./stream\""},
      {"args", NULL, "its arguments (stream.c takes none: sizes are set when it is built)"}},
     {"# STREAM measures the memory of the node it runs on, one rank: for the whole node,",
      "# ranks_per_node = 1 and threads_per_rank = its cores (rank 0's figure is read).", NULL}},
};

static const struct policy default_policy = {"", false, false, 1, NULL, false, NULL, {{NULL}}, {{NULL}}, {NULL}};

static const struct policy *policy_for(const char *name)
{
    for (size_t i = 0; i < sizeof policies / sizeof *policies; i++)
        if (!strcmp(policies[i].name, name))
            return &policies[i];
    return &default_policy;
}

static const struct param_note *note_for(const struct policy *pol, const char *key)
{
    for (size_t i = 0; i < sizeof pol->params / sizeof *pol->params && pol->params[i].key; i++)
        if (!strcmp(pol->params[i].key, key))
            return &pol->params[i];
    return NULL;
}

/* The names a job gives the template's ${name}s besides params. */
static const char *const job_names[] = {"job",   "nodes",   "ranks_per_node", "ranks",   "gpus_per_rank",
                                        "threads_per_rank", "repeat", "job_dir", "run_dir", "template"};

static bool is_job_name(const char *n)
{
    for (size_t i = 0; i < sizeof job_names / sizeof *job_names; i++)
        if (!strcmp(job_names[i], n))
            return true;
    return false;
}

/* Every ${name} of `s` that neither the defaults nor the job give: the
 * params a job of this template must set. */
static void add_required(const char *s, const gpurun_template_t *t, struct gpurun_kvlist *req)
{
    for (const char *p = s ? strstr(s, "${") : NULL; p; p = strstr(p, "${")) {
        const char *end = strchr(p + 2, '}');
        if (!end)
            return;
        char *name = gpurun_xstrndup(p + 2, (size_t)(end - p - 2));
        if (*name && !is_job_name(name) && !gpurun_kvlist_get(&t->defaults, name) && !gpurun_kvlist_get(req, name))
            gpurun_kvlist_set(req, name, "");
        free(name);
        p = end + 1;
    }
}

static void required_params(const gpurun_template_t *t, struct gpurun_kvlist *req)
{
    add_required(t->command, t, req);
    add_required(t->gpu_args, t, req);
    for (size_t i = 0; i < t->nsetup; i++)
        add_required(t->setup[i], t, req);
    for (size_t i = 0; i < t->nfoms; i++) {
        const struct gpurun_fom *f = &t->foms[i];
        const char *const fields[] = {f->file, f->regex, f->units, f->header, f->row, f->after};
        for (size_t k = 0; k < sizeof fields / sizeof *fields; k++)
            add_required(fields[k], t, req);
    }
}

/* ---- the layout ---------------------------------------------------------- */

struct layout {
    int ranks_per_node, gpus_per_rank, threads_per_rank; /* threads GPURUN_UNSET: left to the node */
    char *from;          /* one line: what it was made for */
    char why_ranks[256]; /* the comment of ranks_per_node */
    bool for_site;       /* the site's GPU nodes, not this node */
};

static int usable_cores(const gpurun_topo_t *t, const gpurun_request_t *req)
{
    hwloc_obj_type_t type = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    int n = 0, all = hwloc_get_nbobjs_by_type(t->hw, type);
    hwloc_const_cpuset_t online = hwloc_topology_get_allowed_cpuset(t->hw);
    for (int i = 0; i < all; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(t->hw, type, (unsigned)i);
        if (o->cpuset && hwloc_bitmap_intersects(o->cpuset, online) &&
            (!req->allowed_cpus || hwloc_bitmap_intersects(o->cpuset, req->allowed_cpus)))
            n++;
    }
    return n;
}

/* Plan `req` on t: the layout the planner resolves, or -1 with err. */
static int try_plan(const gpurun_topo_t *t, const gpurun_request_t *req, struct layout *lay, gpurun_error_t *err)
{
    gpurun_plan_t *p;
    if (gpurun_plan_create(t, req, &p, err) < 0)
        return -1;
    lay->ranks_per_node = p->req.ranks_per_node;
    lay->gpus_per_rank = p->req.gpus_per_rank;
    lay->threads_per_rank = p->ranks[0].threads;
    for (int r = 1; r < p->req.ranks_per_node; r++)
        if (p->ranks[r].threads < lay->threads_per_rank)
            lay->threads_per_rank = p->ranks[r].threads;
    gpurun_plan_destroy(p);
    return 0;
}

static int make_layout(const gpurun_topo_t *t, bool xml_given, const gpurun_site_t *site, const struct policy *pol,
                       struct layout *lay, gpurun_error_t *err)
{
    gpurun_request_t req;
    gpurun_request_init(&req);
    char note[512];
    gpurun_alloc_apply(t, &req, note, sizeof note); /* as gpurun run will */
    int gpus = t->ngpus;
    if (req.nallowed_gpus >= 0) {
        gpus = 0;
        for (int i = 0; i < t->ngpus; i++)
            for (int k = 0; k < req.nallowed_gpus; k++)
                gpus += t->gpus[i].index == req.allowed_gpus[k];
    }
    lay->from = gpurun_xasprintf("host %s (%s): %d GPU%s%s%s%s, %d NUMA node%s, %d cores%s%s", t->hostname,
                                 strcmp(t->source, "local") ? t->source : "this node", gpus, gpus == 1 ? "" : "s",
                                 gpus ? " (" : "",
                                 gpus ? t->gpus[0].name : "", gpus ? ")" : "", t->numa_nodes,
                                 t->numa_nodes == 1 ? "" : "s", t->cores, note[0] ? "; " : "", note);

    /* A login node of a GPU cluster: lay the job out for the compute nodes
     * the site profile describes, which is what `gpurun submit` sends it to. */
    if (gpus == 0 && !xml_given && !pol->cpu_only && site && site->gpus_per_node > 0 &&
        site_batch_rm(site)) {
        lay->for_site = true;
        bool enough = site->gpus_per_node >= pol->min_ranks;
        lay->ranks_per_node = enough ? site->gpus_per_node : pol->min_ranks;
        lay->gpus_per_rank = enough ? 1 : 0; /* too few GPUs for the ranks it needs: host memory */
        lay->threads_per_rank = GPURUN_UNSET;
        free(lay->from);
        lay->from = gpurun_xasprintf("the GPU nodes of site %s (%d GPUs each; this node, %s, has none)", site->name,
                                     site->gpus_per_node, t->hostname);
        snprintf(lay->why_ranks, sizeof lay->why_ranks, "one rank per GPU of a %s GPU node", site->name);
        return 0;
    }

    if (pol->cpu_only)
        req.gpus_per_rank = 0;
    if (pol->rank_per_core) {
        int cores = usable_cores(t, &req);
        req.ranks_per_node = cores > 0 ? cores : 1;
        req.threads_per_rank = 1;
        if (try_plan(t, &req, lay, err) == 0) {
            snprintf(lay->why_ranks, sizeof lay->why_ranks, "one single-threaded rank per core");
            return 0;
        }
        req.ranks_per_node = GPURUN_UNSET;
        req.threads_per_rank = GPURUN_UNSET;
    }
    if (try_plan(t, &req, lay, err) < 0)
        return -1;
    if (lay->gpus_per_rank > 0)
        snprintf(lay->why_ranks, sizeof lay->why_ranks, "one rank per GPU");
    else
        snprintf(lay->why_ranks, sizeof lay->why_ranks, "one rank per NUMA node (%s)",
                 gpus ? "this template runs on CPUs" : "no GPUs");
    if (lay->ranks_per_node < pol->min_ranks) {
        req.ranks_per_node = pol->min_ranks;
        if (try_plan(t, &req, lay, err) < 0) {
            if (lay->gpus_per_rank == 0)
                return -1;
            req.gpus_per_rank = 0; /* fewer GPUs than ranks: host memory */
            if (try_plan(t, &req, lay, err) < 0)
                return -1;
        }
        snprintf(lay->why_ranks, sizeof lay->why_ranks, "the fewest ranks this template needs");
    }
    gpurun_error_clear(err);
    return 0;
}

/* ---- writing the text ---------------------------------------------------- */

static void put_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* `key = VALUE   # comment`, aligned; value already written as libconfuse
 * reads it. */
static void put_line(FILE *f, const char *indent, int keyw, const char *key, const char *value, const char *comment)
{
    int n = fprintf(f, "%s%-*s = %s", indent, keyw, key, value);
    if (comment && *comment) {
        char *c = gpurun_comment_text(comment);
        fprintf(f, "%*s# %s", n < 40 ? 40 - n : 1, "", c);
        free(c);
    }
    fputc('\n', f);
}

/* A comment line, "# TEXT": the text (paths, the template's and site's
 * words, host and GPU names) with every control character written '?',
 * so that nothing in it starts a line of its own, read as a key. */
__attribute__((format(printf, 2, 3))) static void put_comment(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = gpurun_xvasprintf(fmt, ap);
    va_end(ap);
    char *safe = gpurun_comment_text(text);
    fprintf(f, "#%s%s\n", *safe ? " " : "", safe);
    free(safe);
    free(text);
}

static char *quote(const char *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        abort();
    put_quoted(f, s);
    fclose(f);
    return buf;
}

static void put_str(FILE *f, const char *indent, int keyw, const char *key, const char *value, const char *comment)
{
    char *q = quote(value);
    put_line(f, indent, keyw, key, q, comment);
    free(q);
}

static void put_int(FILE *f, int keyw, const char *key, long value, const char *comment)
{
    char v[32];
    snprintf(v, sizeof v, "%ld", value);
    put_line(f, "", keyw, key, v, comment);
}

struct init_opts {
    const char *template_name, *site_name, *output, *xml;
    bool force;
};

struct init_ctx {
    const struct init_opts *o;
    const char *file_shown; /* the job file as the commands in the comments name it */
    char *job_dir;          /* absolute */
    char *job_name;
    const gpurun_template_t *tpl;
    const gpurun_site_t *site;
    const struct policy *pol;
    struct layout lay;
    struct gpurun_kvlist params; /* what the params section holds */
    struct gpurun_kvlist required;
};

static void put_header(FILE *f, const struct init_ctx *c)
{
    const gpurun_template_t *t = c->tpl;
    const gpurun_site_t *s = c->site;
    put_comment(f, "%s: a gpurun job file (man 5 gpurun.conf), written by gpurun %s:", c->file_shown,
                PACKAGE_VERSION);
    put_comment(f, "  gpurun init --template %s --site %s%s%s", t->name, s->name, c->o->xml ? " --topology " : "",
                c->o->xml ? c->o->xml : "");
    put_comment(f, "laid out for %s.", c->lay.from);
    put_comment(f, "%s", "");
    put_comment(f, "Template %s: %s", t->name, t->description);
    put_comment(f, "  %s", t->path);
    put_comment(f, "Site %s: %s", s->name, s->description ? s->description : "");
    put_comment(f, "  %s", s->path);
    if (s->nmodules) {
        struct gpurun_strbuf mods = {0};
        for (size_t i = 0; i < s->nmodules; i++)
            gpurun_strbuf_printf(&mods, " %s", s->modules[i]);
        put_comment(f, "  modules: module load%s%s", mods.s,
                    site_batch_rm(s) ? "   (submit's batch script loads them; for gpurun run, load them)"
                                                   : "   (before gpurun run)");
        free(mods.s);
    }
    if (s->scratch)
        put_comment(f, "  scratch: %s   (large inputs and results folders belong there)", s->scratch);
    put_comment(f, "%s", "");
    put_comment(f, "Check it, then run it:");
    put_comment(f, "  gpurun run %s --dry-run     what would run: launcher command, binding, environment",
                c->file_shown);
    const gpurun_rm_plugin_t *rm = site_batch_rm(s);
    if (rm) {
        put_comment(f, "  gpurun submit %s --dry-run  the %s batch script, not submitted", c->file_shown, rm->title);
        put_comment(f, "  gpurun submit %s            submit it with %s", c->file_shown, rm->submit_command);
    }
    put_comment(f, "  gpurun run %s               run it%s", c->file_shown,
                rm ? " (inside an allocation, or the batch script)" : " here");
    fputs("#   gpurun results; gpurun report    its runs and figures of merit\n\n", f);
}

static const char *launcher_line(const gpurun_site_t *s, char *why, size_t len)
{
    const gpurun_rm_plugin_t *rm = gpurun_rm_of_launcher(s->launcher);
    if (rm) {
        /* A manager's launch command would refuse to run outside an
         * allocation (exit 3), even for --dry-run on a login node; auto
         * picks it inside one. */
        snprintf(why, len, "auto: %s in a %s allocation (as %s), else mpirun | local", s->launcher, rm->title,
                 s->name);
        return "auto";
    }
    /* The first built-in manager's launch command stands for them all. */
    const char *rm_launcher = gpurun_rm_builtin[0]->launcher->name;
    if (!strcmp(s->launcher, "auto"))
        snprintf(why, len, "auto: %s in an allocation, else mpirun, else local", rm_launcher);
    else if (!strcmp(s->launcher, "mpirun"))
        snprintf(why, len, "%s's launcher: auto | mpirun | %s | local", s->name, rm_launcher);
    else
        snprintf(why, len, "%s's: gpurun starts the ranks itself, this node", s->name);
    return s->launcher;
}

static void put_layout(FILE *f, const struct init_ctx *c)
{
    const struct layout *l = &c->lay;
    const int w = 16;
    char why[256];
    put_int(f, w, "nodes", 1, "nodes of the job (1 to 65536); a scan can vary it");
    put_int(f, w, "ranks_per_node", l->ranks_per_node, l->why_ranks);
    put_int(f, w, "gpus_per_rank", l->gpus_per_rank,
            l->gpus_per_rank ? "GPUs each rank gets and sees; 0: CPU only" : "0: CPU only; N: GPUs per rank");
    if (l->threads_per_rank != GPURUN_UNSET)
        put_int(f, w, "threads_per_rank", l->threads_per_rank,
                "cores (OMP_NUM_THREADS) per rank: its share of the node");
    else if (l->for_site && c->site->cores_per_node >= l->ranks_per_node) {
        /* submit asks the rank's share of the site's cores for it. */
        int n = fprintf(f, "#threads_per_rank = %d", c->site->cores_per_node / l->ranks_per_node);
        fprintf(f, "%*s# unset: --cpus-per-task = %s's cores_per_node / ranks\n", n < 40 ? 40 - n : 1, "",
                c->site->name);
    }
    else
        fprintf(f, "#threads_per_rank = 8%*s# set it: without it, %s gives a rank 1 cpu\n", 19, "",
                gpurun_rm_builtin[0]->submit_command); /* the first built-in manager's, for them all */
    put_line(f, "", w, "smt", "false", "true: every hardware thread of a core");
    put_line(f, "", w, "oversubscribe", "false", "true: share GPUs/cores (a warning), not exit 3");
    const char *launcher = launcher_line(c->site, why, sizeof why);
    char *q = quote(launcher);
    put_line(f, "", w, "launcher", q, why);
    free(q);
    put_str(f, "", w, "bind", "closest", "closest: GPU, NIC, cores, memory together | none");
    put_str(f, "", w, "gpu_visibility", "isolate", "isolate: a rank sees only its GPUs | shared");
    put_str(f, "", w, "cpu_locality", "package", "package: GPU-less NUMA nodes too | gpu: near GPUs only");
    put_str(f, "", w, "gpudirect", "auto", "GPU memory straight to the NIC: auto | on | off");
    put_str(f, "", w, "timeout", "30m", "then the ranks are stopped (exit 124); sets submit's --time");
    put_int(f, w, "repeat", 1, "runs per configuration (mean, min, max in gpurun report)");
    put_str(f, "", w, "results", "results", "results folder, next to this file: RESULTS/JOB/RUN-ID/");
}

static void put_params(FILE *f, const struct init_ctx *c)
{
    if (!c->params.n) {
        fputs("\n# params { name = \"value\" }             # the template's ${name}s (it has none)\n", f);
        return;
    }
    int w = 0;
    for (size_t i = 0; i < c->params.n; i++)
        if ((int)strlen(c->params.items[i].key) > w)
            w = (int)strlen(c->params.items[i].key);
    fputs("\nparams {                                # the template's ${name}s (--set params.NAME=V)\n", f);
    for (size_t i = 0; i < c->params.n; i++) {
        const char *k = c->params.items[i].key;
        const struct param_note *pn = note_for(c->pol, k);
        const char *def = gpurun_kvlist_get(&c->tpl->defaults, k);
        char *comment;
        if (pn)
            comment = gpurun_xstrdup(pn->comment);
        else if (gpurun_kvlist_get(&c->required, k))
            comment = gpurun_xasprintf("required: the template uses ${%s}, no default", k);
        else
            comment = gpurun_xasprintf("the template's default%s", def && !*def ? " (empty)" : "");
        put_str(f, "    ", w, k, c->params.items[i].value, comment);
        free(comment);
    }
    fputs("}\n", f);
    for (size_t i = 0; i < sizeof c->pol->notes / sizeof *c->pol->notes && c->pol->notes[i]; i++)
        fprintf(f, "%s\n", c->pol->notes[i]);
}

/* Each manager's lines (slurm { }): the one of the site's scheduler with
 * the site profile's part. */
static void put_managers(FILE *f, const struct init_ctx *c)
{
    const gpurun_site_t *s = c->site;
    struct gpurun_rm_site rs;
    gpurun_batch_rm_site(s, &rs);
    for (const gpurun_rm_plugin_t *const *m = gpurun_rm_all(); *m; m++)
        if ((*m)->init_lines)
            (*m)->init_lines(f, strcmp(s->scheduler, (*m)->name) ? NULL : &rs);
}

static char *job_text(const struct init_ctx *c)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        abort();
    const int w = 16;
    put_header(f, c);
    char *why = gpurun_xasprintf("names its results: results/%s/RUN-ID/", c->job_name);
    put_str(f, "", w, "job", c->job_name, why);
    free(why);
    put_str(f, "", w, "template", c->tpl->name, "program, figures of merit (gpurun templates)");
    put_str(f, "", w, "site", c->site->name, "price per GPU-hour for report (templates --sites)");
    fputc('\n', f);
    put_layout(f, c);
    put_params(f, c);
    fputs("\n# env { OMP_STACKSIZE = \"64M\" }          # more environment for every rank\n", f);
    put_managers(f, c);
    fputs("\n# scan { ranks_per_node = {1, 2, 4} }    # a sweep: one configuration per value\n", f);
    const char *fom = c->tpl->nfoms ? c->tpl->foms[0].name : "value";
    put_comment(f, "references { %s = \">= 1\" }%*s# exit 1 when the last value is outside", fom,
                (int)(strlen(fom) < 15 ? 15 - strlen(fom) : 1), "");
    fclose(f);
    return buf;
}

/* ---- files ---------------------------------------------------------------- */

/* Completely or not at all: a temporary file in the same folder, then
 * link() (never replaces) or, with --force, rename(). */
static int write_atomic(const char *path, const char *text, bool force, gpurun_error_t *err)
{
    char *slash = strrchr(path, '/');
    char *dir = slash ? (slash == path ? gpurun_xstrdup("/") : gpurun_xstrndup(path, (size_t)(slash - path)))
                      : gpurun_xstrdup(".");
    char *tmp = gpurun_xasprintf("%s/.gpurun-init-XXXXXX", dir);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        gpurun_err(err, GPURUN_EXIT_ENV, "init: cannot write in the folder %s: %s", dir, strerror(e));
        free(tmp);
        free(dir);
        return -1;
    }
    mode_t um = umask(0);
    umask(um);
    size_t len = strlen(text), off = 0;
    int e = 0;
    while (off < len && !e) {
        ssize_t n = write(fd, text + off, len - off);
        if (n < 0 && errno != EINTR)
            e = errno;
        else if (n > 0)
            off += (size_t)n;
    }
    if (!e && (fchmod(fd, 0666 & ~um) < 0 || fsync(fd) < 0))
        e = errno;
    if (close(fd) < 0 && !e)
        e = errno;
    if (!e) {
        if (force) {
            if (rename(tmp, path) < 0)
                e = errno;
        } else if (link(tmp, path) == 0) {
            unlink(tmp);
        } else if (errno == EEXIST) {
            e = EEXIST;
        } else { /* no hard links here: look, then rename */
            struct stat st;
            if (lstat(path, &st) == 0)
                e = EEXIST;
            else if (rename(tmp, path) < 0)
                e = errno;
        }
    }
    int rc = 0;
    if (e) {
        unlink(tmp);
        if (e == EEXIST)
            rc = gpurun_err(err, GPURUN_EXIT_CONFIG,
                            "init: %s exists; not replaced: give another file (-o NAME.conf), or --force to "
                            "replace it",
                            path);
        else
            rc = gpurun_err(err, GPURUN_EXIT_ENV, "init: cannot write %s: %s", path, strerror(e));
    }
    free(tmp);
    free(dir);
    return rc;
}

static bool job_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 100 || s[0] == '.' || s[0] == '-')
        return false;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || strchr("._+-", *s)))
            return false;
    return true;
}

/* The job's folder, absolute, and the default job name from the file's. */
static int job_place(struct init_ctx *c, gpurun_error_t *err)
{
    const char *out = c->o->output;
    bool to_stdout = !strcmp(out, "-");
    char *dir = to_stdout ? gpurun_xstrdup(".") : NULL;
    if (!dir) {
        const char *slash = strrchr(out, '/');
        dir = !slash ? gpurun_xstrdup(".") : slash == out ? gpurun_xstrdup("/") : gpurun_xstrndup(out, (size_t)(slash - out));
    }
    c->job_dir = realpath(dir, NULL);
    if (!c->job_dir) {
        int e = errno;
        gpurun_err(err, GPURUN_EXIT_ENV, "init: cannot write %s: its folder %s: %s%s%s%s", out, dir, strerror(e),
                   e == ENOENT ? " (mkdir -p " : "", e == ENOENT ? dir : "", e == ENOENT ? " first)" : "");
        free(dir);
        return -1;
    }
    free(dir);
    struct stat st;
    if (!to_stdout && stat(out, &st) == 0 && S_ISDIR(st.st_mode))
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "init: %s is a folder: give the job file to write (-o %s/job.conf)",
                          out, out);
    const char *base = to_stdout ? "job.conf" : (strrchr(out, '/') ? strrchr(out, '/') + 1 : out);
    size_t n = strlen(base);
    if (!to_stdout && (n <= 5 || strcmp(base + n - 5, ".conf")))
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "init: %s: a job file's name ends in .conf (gpurun JOB.conf runs it): -o %s.conf", out,
                          out);
    char *stem = gpurun_xstrndup(base, n > 5 ? n - 5 : n);
    if (strcmp(stem, "job") && job_name_ok(stem))
        c->job_name = stem; /* else the template's name */
    else
        free(stem);
    c->file_shown = to_stdout ? "JOB.conf" : out;
    return 0;
}

static void fill_params(struct init_ctx *c)
{
    const gpurun_template_t *t = c->tpl;
    required_params(t, &c->required); /* first: what the job must give */
    for (size_t i = 0; i < c->required.n; i++)
        gpurun_kvlist_set(&c->params, c->required.items[i].key, "CHANGE-ME");
    for (size_t i = 0; i < t->defaults.n; i++)
        gpurun_kvlist_set(&c->params, t->defaults.items[i].key, t->defaults.items[i].value);
    const struct policy *pol = c->pol;
    for (size_t i = 0; i < sizeof pol->params / sizeof *pol->params && pol->params[i].key; i++)
        if (pol->params[i].value && gpurun_kvlist_get(&c->params, pol->params[i].key))
            gpurun_kvlist_set(&c->params, pol->params[i].key, pol->params[i].value);
    for (size_t i = 0; i < sizeof pol->gpu_params / sizeof *pol->gpu_params && pol->gpu_params[i].key; i++)
        if (c->lay.gpus_per_rank > 0 && gpurun_kvlist_get(&c->params, pol->gpu_params[i].key))
            gpurun_kvlist_set(&c->params, pol->gpu_params[i].key, pol->gpu_params[i].value);
    /* An input mdrun reads in the run folder: named from the job's. */
    if (pol->file_param && !pol->file_in_job_dir) {
        const char *v = gpurun_kvlist_get(&c->params, pol->file_param);
        if (v && v[0] != '/') {
            char *abs = gpurun_xasprintf("%s/%s", strcmp(c->job_dir, "/") ? c->job_dir : "", v);
            gpurun_kvlist_set(&c->params, pol->file_param, abs);
            free(abs);
        }
    }
}

/* What to do before the job runs, said once it is written. */
static void next_steps(FILE *f, const struct init_ctx *c)
{
    const struct policy *pol = c->pol;
    for (size_t i = 0; i < c->required.n; i++)
        if (!strcmp(gpurun_kvlist_get(&c->params, c->required.items[i].key), "CHANGE-ME"))
            fprintf(f, "gpurun: note: set params.%s in %s: the template needs it and has no default\n",
                    c->required.items[i].key, c->file_shown);
    if (pol->file_param) {
        const char *v = gpurun_kvlist_get(&c->params, pol->file_param);
        char *p = v && v[0] != '/' ? gpurun_xasprintf("%s/%s", c->job_dir, v) : gpurun_xstrdup(v ? v : "");
        struct stat st;
        if (v && stat(p, &st) < 0)
            fprintf(f, "gpurun: note: params.%s = \"%s\": %s does not exist yet; put the %s input there\n",
                    pol->file_param, v, p, c->tpl->name);
        free(p);
    }
    /* The program: the command's first word, from the params. */
    char **words = NULL;
    gpurun_error_t e = {0};
    char *first = NULL;
    if (gpurun_split_words(c->tpl->command, &words, &e) == 0 && words[0])
        first = gpurun_xstrdup(words[0]);
    gpurun_free_words(words);
    if (first && first[0] == '$' && first[1] == '{' && first[strlen(first) - 1] == '}') {
        char *name = gpurun_xstrndup(first + 2, strlen(first) - 3);
        const char *v = gpurun_kvlist_get(&c->params, name);
        free(first);
        first = v ? gpurun_xstrdup(v) : NULL;
        free(name);
    }
    if (first && !strstr(first, "${")) {
        char *p = strchr(first, '/') && first[0] != '/' ? gpurun_xasprintf("%s/%s", c->job_dir, first)
                                                        : gpurun_xstrdup(first);
        char *found = gpurun_which(p);
        if (!found)
            fprintf(f,
                    "gpurun: note: the program '%s' is not found %s: install or build it (or load its module)%s "
                    "before running\n",
                    first, strchr(first, '/') ? "relative to the job file's folder" : "on PATH",
                    pol->program_param ? ", and set its path in params" : "");
        free(found);
        free(p);
    }
    free(first);
    if (c->lay.for_site) {
        char *word = gpurun_shell_word(c->file_shown); /* the commands to copy: one word, whatever its name */
        fprintf(f,
                "gpurun: note: laid out for %s's GPU nodes: `gpurun run --dry-run` here (no GPUs) refuses it; "
                "check it with `gpurun submit %s --dry-run`, or plan it with `gpurun plan %s --topology NODE.xml`\n",
                c->site->name, word, word);
        free(word);
    }
}

/* The command to run next, the job file's path as one shell word. */
static void say_next(const struct init_ctx *c)
{
    char *word = gpurun_shell_word(c->o->output);
    printf("next: gpurun %s %s --dry-run\n", c->lay.for_site ? "submit" : "run", word);
    free(word);
}

/* The command line into *o; *done when there is nothing more to do (help
 * printed, or a bad command line): the exit status is returned. */
static int init_options(int argc, char **argv, struct init_opts *o, bool *done, gpurun_error_t *err)
{
    enum { O_TOPO = 1000 };
    static const struct option opts[] = {
        {"template", required_argument, NULL, 't'}, {"site", required_argument, NULL, 's'},
        {"output", required_argument, NULL, 'o'},   {"topology", required_argument, NULL, O_TOPO},
        {"force", no_argument, NULL, 'f'},          {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    *done = true;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "t:s:o:fh", opts, NULL)) != -1) {
        switch (ch) {
        case 't': o->template_name = optarg; break;
        case 's': o->site_name = optarg; break;
        case 'o': o->output = optarg; break;
        case O_TOPO: o->xml = optarg; break;
        case 'f': o->force = true; break;
        case 'h': fputs(init_usage, stdout); return 0;
        default:
            return cmd_bad_option("init", argv[optind - 1], opts, err);
        }
    }
    if (optind < argc) {
        gpurun_err(err, GPURUN_EXIT_CONFIG,
                   "init: unexpected argument '%s': the job file is given with -o FILE (see gpurun init --help)",
                   argv[optind]);
        return GPURUN_EXIT_CONFIG;
    }
    *done = false;
    return 0;
}

/* The job folder is searched first: a job file named like its template
 * would be read as the template. */
static int check_not_template_name(const char *output, const gpurun_template_t *tpl, gpurun_error_t *err)
{
    if (!strcmp(output, "-"))
        return 0;
    const char *base = strrchr(output, '/') ? strrchr(output, '/') + 1 : output;
    if (!strncmp(base, tpl->name, strlen(tpl->name)) && !strcmp(base + strlen(tpl->name), ".conf"))
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "init: %s would be read as the template '%s' by every job in its folder (a job's folder is "
                          "searched for templates first): name it otherwise, e.g. -o %s-job.conf",
                          output, tpl->name, tpl->name);
    return 0;
}

/* Read back as gpurun run will: a file init writes always parses. */
static int read_back(const struct init_ctx *c, const char *text, gpurun_error_t *err)
{
    gpurun_job_t *job;
    const char *label = strcmp(c->o->output, "-") ? c->o->output : "JOB.conf";
    if (gpurun_job_parse(text, strlen(text), label, &job, err) < 0) {
        char *why = gpurun_xstrdup(err->text);
        gpurun_err(err, GPURUN_EXIT_CONFIG, "init: the job file made from template '%s' does not read back: %s",
                   c->tpl->name, why);
        free(why);
        return -1;
    }
    gpurun_job_destroy(job);
    return 0;
}

/* The job file on stdout (-o -) or written, then what to do next. */
static int put_job(const struct init_ctx *c, const char *text, gpurun_error_t *err)
{
    const struct layout *lay = &c->lay;
    if (!strcmp(c->o->output, "-")) {
        fputs(text, stdout);
        fflush(stdout);
        next_steps(stderr, c);
        return 0;
    }
    if (write_atomic(c->o->output, text, c->o->force, err) < 0)
        return -1;
    printf("gpurun: wrote %s: template %s, site %s; %d rank%s per node, %d GPU%s per rank", c->o->output, c->tpl->name,
           c->site->name, lay->ranks_per_node, lay->ranks_per_node == 1 ? "" : "s", lay->gpus_per_rank,
           lay->gpus_per_rank == 1 ? "" : "s");
    if (lay->threads_per_rank != GPURUN_UNSET)
        printf(", %d thread%s per rank", lay->threads_per_rank, lay->threads_per_rank == 1 ? "" : "s");
    printf("\n");
    fflush(stdout);
    next_steps(stderr, c);
    say_next(c);
    return 0;
}

int cmd_init(int argc, char **argv, gpurun_error_t *err)
{
    struct init_opts o = {.template_name = "generic", .site_name = "local", .output = "job.conf"};
    bool done;
    int rc = init_options(argc, argv, &o, &done, err);
    if (done)
        return rc;

    struct init_ctx c = {.o = &o};
    gpurun_template_t *tpl = NULL;
    gpurun_site_t *site = NULL;
    gpurun_topo_t *topo = NULL;
    char *tpl_path = NULL, *text = NULL;
    if (job_place(&c, err) < 0 || gpurun_template_find(o.template_name, c.job_dir, &tpl_path, err) < 0 ||
        gpurun_template_load(tpl_path, &tpl, err) < 0 || gpurun_site_load(o.site_name, c.job_dir, &site, err) < 0)
        goto fail;
    c.tpl = tpl;
    c.site = site;
    c.pol = policy_for(tpl->name);
    if (check_not_template_name(o.output, tpl, err) < 0)
        goto fail;
    if (!c.job_name)
        c.job_name = gpurun_xstrdup(tpl->name);
    if (gpurun_topo_load(o.xml, &topo, err) < 0 || make_layout(topo, o.xml != NULL, site, c.pol, &c.lay, err) < 0)
        goto fail;
    fill_params(&c);
    text = job_text(&c);
    if (read_back(&c, text, err) < 0 || put_job(&c, text, err) < 0)
        goto fail;
    goto out;
fail:
    rc = err->code ? err->code : GPURUN_EXIT_CONFIG;
out:
    free(text);
    free(tpl_path);
    free(c.job_dir);
    free(c.job_name);
    free(c.lay.from);
    gpurun_kvlist_clear(&c.params);
    gpurun_kvlist_clear(&c.required);
    gpurun_template_destroy(tpl);
    gpurun_site_destroy(site);
    gpurun_topo_destroy(topo);
    return rc;
}
