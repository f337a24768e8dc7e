/* SPDX-License-Identifier: BSD-3-Clause */
/* The job file (SPEC §2): every malformed input names file, line and key;
 * well-formed ones give the right values. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job.h"
#include "plugin.h" /* the names of the plugins present */
#include "tap.h"

/* ---- malformed inputs ------------------------------------------------- */

struct bad {
    const char *what;
    const char *text;
    size_t len; /* 0: strlen(text); set for text with a NUL in it */
    const char *want;
};

static const struct bad bad[] = {
    /* unknown keys */
    {"unknown key, near a valid one", "nodes = 1\nrank_per_node = 2\n", 0,
     "job.conf:2: unknown key 'rank_per_node' (did you mean 'ranks_per_node'?)"},
    {"unknown key, prefix of a valid one", "gpus = 1\n", 0,
     "job.conf:1: unknown key 'gpus' (did you mean 'gpus_per_rank'?)"},
    {"unknown key, nothing near", "colour = \"red\"\n", 0, "job.conf:1: unknown key 'colour'"},
    {"unknown key in scan{}, lines counted past comments",
     "# a comment\n// another\n/* a block\n   comment */ nodes = 1 # trailing\n"
     "scan { rank_per_node = {1, 2} }\n",
     0, "job.conf:5: unknown key 'scan.rank_per_node' (did you mean 'scan.ranks_per_node'?)"},
    {"unknown section", "param { nsteps = 10 }\n", 0,
     "job.conf:1: unknown key 'param' (did you mean 'params'?)"},
    /* duplicates */
    {"duplicate key", "nodes = 1\nranks_per_node = 2\n\nnodes = 2\n", 0,
     "job.conf:4: key 'nodes': given twice (first on line 1)"},
    {"duplicate key in params{}", "params {\n  a = 1\n  b = 2\n  a = 3\n}\n", 0,
     "job.conf:4: key 'params.a': given twice (first on line 2)"},
    {"duplicate section", "env { A = \"1\" }\nenv { B = \"2\" }\n", 0,
     "job.conf:2: key 'env': given twice (first on line 1)"},
    /* types and ranges */
    {"integer expected", "nodes = two\n", 0,
     "job.conf:1: key 'nodes': expected an integer, got 'two'"},
    {"no fractions", "\nthreads_per_rank = 2.5\n", 0,
     "job.conf:2: key 'threads_per_rank': expected an integer, got '2.5'"},
    {"nodes below range", "nodes = 0\n", 0,
     "job.conf:1: key 'nodes': 0 is out of range (1 to 65536)"},
    {"gpus_per_rank above range", "gpus_per_rank = 65\n", 0,
     "job.conf:1: key 'gpus_per_rank': 65 is out of range (0 to 64)"},
    {"ranks_per_node overflows", "ranks_per_node = 99999999999999999999999\n", 0,
     "job.conf:1: key 'ranks_per_node': 99999999999999999999999 is out of range (1 to 4096)"},
    {"repeat below range", "repeat = 0\n", 0,
     "job.conf:1: key 'repeat': 0 is out of range (1 to 10000)"},
    {"scan value out of range", "scan {\n  gpus_per_rank = {1, 2,\n                   100}\n}\n", 0,
     "job.conf:3: key 'scan.gpus_per_rank': 100 is out of range (0 to 64)"},
    {"scan list empty", "scan { nodes = {} }\n", 0, "job.conf:1: key 'scan.nodes': empty list"},
    {"scan value twice", "scan { ranks_per_node = {1, 2, 1} }\n", 0,
     "job.conf:1: key 'scan.ranks_per_node': 1 listed twice"},
    {"list for a single value", "nodes = {1, 2}\n", 0,
     "job.conf:1: key 'nodes': expected one value, not a list"},
    {"bad enum, near a valid value", "launcher = \"mpi\"\n", 0,
     "job.conf:1: key 'launcher': 'mpi' is not one of auto, mpirun, srun, flux, pbs, local (did you mean "
     "'mpirun'?)"},
    {"bad enum", "gpu_visibility = \"everything\"\n", 0,
     "job.conf:1: key 'gpu_visibility': 'everything' is not one of isolate, shared"},
    {"bad cpu_locality", "cpu_locality = \"numa\"\n", 0,
     "job.conf:1: key 'cpu_locality': 'numa' is not one of package, gpu"},
    {"bad boolean", "smt = maybe\n", 0,
     "job.conf:1: key 'smt': expected true or false, got 'maybe'"},
    {"bad timeout", "timeout = \"30 minutes\"\n", 0,
     "job.conf:1: key 'timeout': expected a duration such as \"30m\", \"1h30m\", \"90s\", "
     "\"01:00:00\" or \"none\", got '30 minutes'"},
    {"timeout units out of order", "timeout = \"30m1h\"\n", 0,
     "job.conf:1: key 'timeout': expected a duration such as \"30m\", \"1h30m\", \"90s\", "
     "\"01:00:00\" or \"none\", got '30m1h'"},
    {"timeout too long", "timeout = \"400d\"\n", 0,
     "job.conf:1: key 'timeout': '400d' is out of range (at most 366 days)"},
    {"bad progress_interval", "\nprogress_interval = \"often\"\n", 0,
     "job.conf:2: key 'progress_interval': expected a duration such as \"10m\", \"30s\", \"1h\" or \"off\", "
     "got 'often'"},
    {"progress_interval too long", "progress_interval = \"2d\"\n", 0,
     "job.conf:1: key 'progress_interval': '2d' is out of range (at most a day; \"off\" for none)"},
    /* control characters, escaped in the message */
    {"tab in command", "command = \"./app\\t-n 1\"\n", 0,
     "job.conf:1: key 'command': control character 0x09 (tab) in the value"},
    {"raw BEL in a params value", "params {\n  a = 1\n  b = \"x\ay\"\n}\n", 0,
     "job.conf:3: key 'params.b': control character 0x07 in the value"},
    {"line break in an env value", "env { A = \"1\n2\" }\n", 0,
     "job.conf:1: key 'env.A': control character 0x0a (line break) in the value"},
    {"control character in a value, shown escaped", "launcher = \"srun\x1b[2J\"\n", 0,
     "job.conf:1: key 'launcher': 'srun\\x1b[2J' is not one of auto, mpirun, srun, flux, pbs, local (did you "
     "mean 'srun'?)"},
    {"NUL byte", "nodes = 1\nrepeat = 2\0\n", sizeof "nodes = 1\nrepeat = 2\0\n" - 1,
     "job.conf:2: NUL byte in the file"},
    /* ${name} */
    {"unset ${name} in command, near a param",
     "command = \"./app -n ${nstep}\"\nparams { nsteps = 5 }\n", 0,
     "job.conf:1: key 'command': '${nstep}' is unset: no params key or job key of that name (did "
     "you mean 'nsteps'?)"},
    {"unset ${name} in command", "command = \"./app ${input}\"\n", 0,
     "job.conf:1: key 'command': '${input}' is unset: no params key or job key of that name"},
    {"${ without }", "command = \"./app ${job\"\n", 0,
     "job.conf:1: key 'command': '${' without a closing '}'"},
    {"unquoted ${VAR}: libconfuse would take it from the environment", "params { n = ${N} }\n", 0,
     "job.conf:1: key 'params.n': ${N} must be in double quotes: \"${N}\""},
    /* contradictions */
    {"template and command", "template = \"gromacs\"\nnodes = 1\ncommand = \"./app\"\n", 0,
     "job.conf:3: key 'command': contradicts 'template' on line 1: a job runs a template or a "
     "command, not both"},
    {"local launcher on several nodes", "nodes = 2\nlauncher = \"local\"\n", 0,
     "job.conf:2: key 'launcher': contradicts 'nodes' on line 1: launcher \"local\" runs on this "
     "node only, nodes = 2"},
    {"local launcher, scan over nodes", "launcher = local\nscan { nodes = {1, 2} }\n", 0,
     "job.conf:2: key 'scan.nodes': contradicts 'launcher' on line 1: launcher \"local\" runs on "
     "this node only, the scan asks for more nodes"},
    {"shared GPUs without GPUs", "gpu_visibility = \"shared\"\ngpus_per_rank = 0\n", 0,
     "job.conf:2: key 'gpus_per_rank': contradicts 'gpu_visibility' on line 1: \"shared\" chooses "
     "a "
     "GPU for each rank, gpus_per_rank = 0"},
    {"ranks_per_gpu with several GPUs per rank", "ranks_per_gpu = 2\ngpus_per_rank = 2\n", 0,
     "job.conf:2: key 'gpus_per_rank': contradicts 'ranks_per_gpu' on line 1: ranks share one GPU each, "
     "gpus_per_rank = 2"},
    {"ranks_per_gpu without GPUs", "gpus_per_rank = 0\nranks_per_gpu = 4\n", 0,
     "job.conf:2: key 'ranks_per_gpu': contradicts 'gpus_per_rank' on line 1: ranks share a GPU, "
     "gpus_per_rank = 0"},
    {"ranks_per_gpu, scan over GPUs per rank", "ranks_per_gpu = 2\nscan { gpus_per_rank = {1, 2} }\n", 0,
     "job.conf:2: key 'scan.gpus_per_rank': contradicts 'ranks_per_gpu' on line 1: ranks share one GPU "
     "each, the scan has gpus_per_rank > 1"},
    {"ranks_per_gpu out of range", "ranks_per_gpu = 0\n", 0,
     "job.conf:1: key 'ranks_per_gpu': 0 is out of range (1 to 64)"},
    {"bad mps", "mps = \"yes\"\n", 0, "job.conf:1: key 'mps': 'yes' is not one of auto, on, off"},
    /* names */
    {"env key not a variable name", "env {\n  1BAD = \"x\"\n}\n", 0,
     "job.conf:2: key 'env.1BAD': not a valid environment variable name"},
    {"key that libconfuse reads as a path", "\"scan|nodes\" = {3}\n", 0,
     "job.conf:1: key 'scan|nodes': not a valid key name (a letter or '_', then letters, digits, "
     "'_', '.', '-')"},
    {"job name with a slash", "job = \"../elsewhere\"\n", 0,
     "job.conf:1: key 'job': '../elsewhere' is not a valid job name (letters, digits, '.', '_', "
     "'+', '-'; it names the results folder)"},
    {"empty template", "template = \"\"\n", 0, "job.conf:1: key 'template': empty value"},
    /* syntax */
    {"unterminated string", "nodes = 1\ncommand = \"./app\n\nrepeat = 2\n", 0,
     "job.conf:2: unterminated string: the '\"' here is never closed"},
    /* libconfuse's lexer would echo that backslash to stdout, breaking this TAP stream */
    {"unterminated string ending in a backslash", "command = \"abc\\", 0,
     "job.conf:1: unterminated string: the '\"' here is never closed"},
    {"unterminated string at a key", "nodes = 1\n\"abc\n", 0,
     "job.conf:2: unterminated string: the '\"' here is never closed"},
    {"unterminated section", "nodes = 1\nparams {\n  a = 1\n", 0,
     "job.conf:2: key 'params': section not closed ('}' missing)"},
    {"unterminated comment", "nodes = 1 /* to be\ncontinued\n", 0,
     "job.conf:1: unterminated comment: the '/*' here is never closed"},
    {"value missing", "nodes = 1\nrepeat =\n", 0,
     "job.conf:2: key 'repeat': value missing at the end of the file"},
    {"brace without a section", "nodes = 1\n}\n", 0, "job.conf:2: '}' without a section to close"},
    {"missing =", "nodes 2\n", 0, "job.conf:1: key 'nodes': '=' missing after the key"},
    {"section given a value", "params = \"a\"\n", 0,
     "job.conf:1: key 'params': a section, written params { ... }"},
    {"bad escape", "command = \"a\\8\"\n", 0, "job.conf:1: bad escape sequence '\\8'"},
    /* pasted from a web page or a word processor */
    {"typographic quotes around a value", "nodes = 1\ncommand = \xe2\x80\x9c./app\xe2\x80\x9d\n", 0,
     "job.conf:2: key 'command': '\xe2\x80\x9c' (U+201C, a typographic quote) in an unquoted value: write the "
     "value in plain double quotes \"...\""},
    {"typographic single quotes", "params { a = \xe2\x80\x98x\xe2\x80\x99 }\n", 0,
     "job.conf:1: key 'params.a': '\xe2\x80\x98' (U+2018, a typographic quote) in an unquoted value: write the "
     "value in plain double quotes \"...\""},
    {"typographic quotes around a key", "env {\n  \xe2\x80\x9c" "A\xe2\x80\x9d = \"1\"\n}\n", 0,
     "job.conf:2: key 'A': '\xe2\x80\x9c' (U+201C, a typographic quote) in it, outside quotes: write the key "
     "without quotes"},
    {"no-break space between key and =", "nodes = 1\nrepeat\xc2\xa0= 2\n", 0,
     "job.conf:2: key 'repeat': a no-break space (U+00A0) in it, outside quotes: an invisible character, as web "
     "pages and word processors write them: retype the line with plain spaces"},
    {"no-break space in a value", "nodes =\xc2\xa0" "2\n", 0,
     "job.conf:1: key 'nodes': a no-break space (U+00A0) in an unquoted value: an invisible character, as web "
     "pages and word processors write them: retype the line with plain spaces"},
    {"zero-width space before a key", "nodes = 1\n\xe2\x80\x8brepeat = 2\n", 0,
     "job.conf:2: key 'repeat': a zero-width space (U+200B) in it, outside quotes: an invisible character, as web "
     "pages and word processors write them: retype the line with plain spaces"},
    {"byte-order mark after the first line", "nodes = 1\n\xef\xbb\xbfrepeat = 2\n", 0,
     "job.conf:2: key 'repeat': a byte-order mark (U+FEFF) in it, outside quotes: an invisible character, as web "
     "pages and word processors write them: retype the line with plain spaces"},
    {"earliest error wins", "nodes = 1\nrepeat = 0\nnodes = 2\n", 0,
     "job.conf:2: key 'repeat': 0 is out of range (1 to 10000)"},
};

static void test_bad(void)
{
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const struct bad *b = &bad[i];
        gpurun_job_t *job = (gpurun_job_t *)&job; /* must be reset */
        gpurun_error_t err = {0};
        size_t len = b->len ? b->len : strlen(b->text);
        int rc = gpurun_job_parse(b->text, len, "job.conf", &job, &err);
        ok(rc == -1 && err.code == GPURUN_EXIT_CONFIG && job == NULL, "%s: refused, exit code 2",
           b->what);
        is_str(err.text, b->want, "%s: message", b->what);
        if (rc == 0)
            gpurun_job_destroy(job);
    }
}

/* ---- well-formed inputs ----------------------------------------------- */

static gpurun_job_t *parse_ok(const char *text, const char *label, const char *what)
{
    gpurun_job_t *job = NULL;
    gpurun_error_t err = {0};
    int rc = gpurun_job_parse(text, strlen(text), label, &job, &err);
    if (!ok(rc == 0 && job, "%s: parses", what))
        diag("error: %s", err.text);
    return rc == 0 ? job : NULL;
}

static const char *kv(const struct gpurun_kvlist *l, size_t i, int key)
{
    if (i >= l->n)
        return NULL;
    return key ? l->items[i].key : l->items[i].value;
}

/* The example of SPEC §2, word for word (its `command` line is a comment
 * there, since a job has a template or a command). */
static const char spec_example[] =
    "job      = \"water-box\"        # name; default: file name without .conf\n"
    "template = \"gromacs\"          # see §3; or, for any program:\n"
    "# command  = \"./my_app -n ${nsteps}\"   # instead of a template's command\n"
    "site     = \"example-univ\"     # optional site profile, see §4\n"
    "\n"
    "nodes            = 1\n"
    "ranks_per_node   = 2\n"
    "gpus_per_rank    = 1          # 0: CPU-only\n"
    "threads_per_rank = 4          # OMP_NUM_THREADS; default: the rank's share of cores\n"
    "launcher  = \"auto\"            # auto | mpirun | srun | local\n"
    "bind      = \"closest\"         # closest | none  (none: gpurun sets no affinity at all)\n"
    "gpu_visibility = \"isolate\"    # isolate: each rank sees only its GPUs; shared: all GPUs "
    "visible, device chosen for it\n"
    "gpudirect = \"auto\"            # auto | on | off\n"
    "timeout   = \"30m\"\n"
    "repeat    = 1\n"
    "results   = \"results\"         # results folder, relative to the job file\n"
    "\n"
    "params { tpr = \"bench.tpr\"  nsteps = 5000 }      # template parameters, ${name} in the "
    "template\n"
    "env    { GMX_MAXBACKUP = \"-1\" }                 # extra environment for every rank\n"
    "scan   { ranks_per_node = {1, 2} }              # optional sweep: one run per combination\n"
    "slurm  { partition = \"gpu\"  account = \"proj\"  time = \"01:00:00\" }\n"
    "references { ns_per_day = \"90 +-10%\" }          # optional regression check on a figure of "
    "merit\n";

static void test_spec_example(void)
{
    gpurun_job_t *job = parse_ok(spec_example, "examples/water.conf", "SPEC §2 example");
    if (!job)
        return;
    is_str(job->path, "examples/water.conf", "path");
    is_str(job->dir, "examples", "dir");
    is_str(job->name, "water-box", "job");
    is_str(job->template_name, "gromacs", "template");
    ok(job->command == NULL, "no command");
    is_str(job->site, "example-univ", "site");
    is_int(job->nodes, 1, "nodes");
    is_int(job->ranks_per_node, 2, "ranks_per_node");
    is_int(job->gpus_per_rank, 1, "gpus_per_rank");
    is_int(job->threads_per_rank, 4, "threads_per_rank");
    ok(!job->smt && !job->oversubscribe, "smt and oversubscribe off");
    is_str(job->launcher, "auto", "launcher");
    is_int(job->bind, GPURUN_BIND_CLOSEST, "bind");
    is_int(job->gpu_visibility, GPURUN_GPUVIS_ISOLATE, "gpu_visibility");
    is_int(job->cpu_locality, GPURUN_CPULOC_PACKAGE, "cpu_locality: package by default");
    is_int(job->gpudirect, GPURUN_GPUDIRECT_AUTO, "gpudirect");
    is_int(job->timeout_s, 1800, "timeout");
    is_int(job->repeat, 1, "repeat");
    is_str(job->results, "results", "results");

    is_int(job->params.n, 2, "params: two");
    is_str(kv(&job->params, 0, 1), "tpr", "params[0] key");
    is_str(kv(&job->params, 0, 0), "bench.tpr", "params[0] value");
    is_str(kv(&job->params, 1, 1), "nsteps", "params[1] key");
    is_str(kv(&job->params, 1, 0), "5000", "params[1] value");
    is_int(job->env.n, 1, "env: one");
    is_str(kv(&job->env, 0, 1), "GMX_MAXBACKUP", "env key");
    is_str(kv(&job->env, 0, 0), "-1", "env value");
    const struct gpurun_kvlist *slurm = gpurun_job_manager_options(job, "slurm");
    is_int(slurm->n, 3, "slurm: three");
    is_str(kv(slurm, 0, 1), "partition", "slurm[0] key");
    is_str(kv(slurm, 0, 0), "gpu", "slurm[0] value");
    is_str(kv(slurm, 1, 1), "account", "slurm[1] key");
    is_str(kv(slurm, 1, 0), "proj", "slurm[1] value");
    is_str(kv(slurm, 2, 1), "time", "slurm[2] key");
    is_str(kv(slurm, 2, 0), "01:00:00", "slurm[2] value");
    is_int(job->references.n, 1, "references: one");
    is_str(kv(&job->references, 0, 1), "ns_per_day", "references key");
    is_str(kv(&job->references, 0, 0), "90 +-10%", "references value");
    is_int(job->nscan, 1, "scan: one axis");
    if (job->nscan == 1) {
        is_str(job->scan[0].key, "ranks_per_node", "scan axis key");
        ok(job->scan[0].n == 2 && job->scan[0].values[0] == 1 && job->scan[0].values[1] == 2,
           "scan axis values {1, 2}");
    }
    is_str(job->monitor, "auto", "monitor: auto by default");
    gpurun_job_destroy(job);
}

static void test_defaults(void)
{
    static const char *const empties[] = {"", "\n\n",
                                          "# only a comment\n// and another\n/* and one more */"};
    for (size_t i = 0; i < sizeof empties / sizeof *empties; i++) {
        gpurun_job_t *job = parse_ok(empties[i], "job.conf", "empty file");
        if (!job)
            continue;
        is_str(job->name, "job", "default name from the label");
        is_str(job->dir, ".", "default dir");
        ok(!job->template_name && !job->command && !job->site, "no template, command, site");
        is_int(job->nodes, 1, "nodes default 1");
        is_int(job->ranks_per_node, GPURUN_UNSET, "ranks_per_node unset");
        is_int(job->gpus_per_rank, GPURUN_UNSET, "gpus_per_rank unset");
        is_int(job->threads_per_rank, GPURUN_UNSET, "threads_per_rank unset");
        ok(!job->smt && !job->oversubscribe, "smt, oversubscribe off");
        ok(!strcmp(job->launcher, "auto") && job->bind == GPURUN_BIND_CLOSEST &&
               job->gpu_visibility == GPURUN_GPUVIS_ISOLATE &&
               job->gpudirect == GPURUN_GPUDIRECT_AUTO,
           "enums at their defaults");
        is_int(job->timeout_s, 0, "no time limit");
        is_int(job->progress_interval_s, 600, "progress_interval 10m");
        is_int(job->repeat, 1, "repeat 1");
        is_int(job->ranks_per_gpu, 1, "ranks_per_gpu 1");
        ok(job->mps == GPURUN_MPS_AUTO, "mps auto");
        is_str(job->results, "results", "results");
        ok(job->params.n == 0 && job->env.n == 0 && gpurun_job_manager_options(job, "slurm")->n == 0 && job->references.n == 0 &&
               job->nscan == 0,
           "no params, env, slurm, references, scan");
        gpurun_job_destroy(job);
    }
}

static void test_values(void)
{
    gpurun_job_t *job =
        parse_ok("launcher = srun bind = none gpu_visibility = shared cpu_locality = gpu\n"
                 "gpudirect = off smt = yes oversubscribe = true\n"
                 "gpus_per_rank = 2 nodes = 4 repeat = 3 results = \"out/runs\"\n"
                 "scan { threads_per_rank = {8, 4} nodes = 1 gpus_per_rank = {1, 2} }\n",
                 "job.conf", "every enum and bool");
    if (job) {
        ok(!strcmp(job->launcher, "srun") && job->bind == GPURUN_BIND_NONE &&
               job->gpu_visibility == GPURUN_GPUVIS_SHARED && job->cpu_locality == GPURUN_CPULOC_GPU &&
               job->gpudirect == GPURUN_GPUDIRECT_OFF,
           "enums");
        ok(job->smt && job->oversubscribe, "booleans");
        ok(job->nodes == 4 && job->gpus_per_rank == 2 && job->repeat == 3, "integers");
        is_str(job->results, "out/runs", "results");
        is_int(job->nscan, 3, "three scan axes");
        if (job->nscan == 3) {
            ok(strcmp(job->scan[0].key, "threads_per_rank") == 0 && job->scan[0].n == 2 &&
                   job->scan[0].values[0] == 8 && job->scan[0].values[1] == 4,
               "scan axes in the file's order, values in theirs");
            ok(strcmp(job->scan[1].key, "nodes") == 0 && job->scan[1].n == 1,
               "a single value is a list");
            is_str(job->scan[2].key, "gpus_per_rank", "third axis");
        }
        gpurun_job_destroy(job);
    }
}

static void test_timeouts(void)
{
    static const struct {
        const char *text;
        long secs;
    } forms[] = {
        {"\"30m\"", 1800},
        {"\"1h30m\"", 5400},
        {"\"90s\"", 90},
        {"\"2h\"", 7200},
        {"\"01:00:00\"", 3600},
        {"\"45:00\"", 2700},
        {"90", 90},
        {"\"3600\"", 3600},
        {"0", 0},
        {"\"none\"", 0},
        {"\"1d12h\"", 129600},
        {"\"1-00:00:00\"", 86400},
        {"\"2h0m30s\"", 7230},
        {"\"366d\"", 31622400},
    };
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        char text[64], what[96];
        snprintf(text, sizeof text, "timeout = %s\n", forms[i].text);
        snprintf(what, sizeof what, "timeout = %s", forms[i].text);
        gpurun_job_t *job = parse_ok(text, "job.conf", what);
        if (job) {
            is_int(job->timeout_s, forms[i].secs, "%s: %ld s", what, forms[i].secs);
            gpurun_job_destroy(job);
        }
    }
    /* progress_interval takes the same durations, and "off". */
    static const struct {
        const char *text;
        long secs;
    } every[] = {{"\"1s\"", 1}, {"\"10m\"", 600}, {"\"1h\"", 3600}, {"\"off\"", 0}, {"\"none\"", 0}, {"0", 0}};
    for (size_t i = 0; i < sizeof every / sizeof *every; i++) {
        char text[64], what[96];
        snprintf(text, sizeof text, "progress_interval = %s\n", every[i].text);
        snprintf(what, sizeof what, "progress_interval = %s", every[i].text);
        gpurun_job_t *job = parse_ok(text, "job.conf", what);
        if (job) {
            is_int(job->progress_interval_s, every[i].secs, "%s: %ld s", what, every[i].secs);
            gpurun_job_destroy(job);
        }
    }
    gpurun_job_t *job = parse_ok("", "job.conf", "no progress_interval");
    gpurun_error_t err = {0};
    if (job) {
        ok(gpurun_job_set(job, "progress_interval=2s", &err) == 0 && job->progress_interval_s == 2,
           "--set progress_interval=2s");
        gpurun_job_destroy(job);
    }
}

/* libconfuse expands ${VAR} from the environment in double quotes; gpurun's
 * ${name} must reach the job unchanged even when VAR is set. */
static void test_dollar_preserved(void)
{
    setenv("nsteps", "EVIL", 1);
    setenv("tpr", "EVIL", 1);
    setenv("GPURUN_TEST_X", "EVIL", 1);
    gpurun_job_t *job = parse_ok(
        "command = \"./app -n ${nsteps} -s ${tpr} -j ${job} -t ${threads_per_rank}\"\n"
        "params { nsteps = 10  tpr = \"${GPURUN_TEST_X}.tpr\"  d = \"${GPURUN_TEST_X:-x}\" }\n"
        "env { PATH = \"/opt/bin:${PATH}\"  Q = '${nsteps}'  E = \"\\${tpr}\" }\n"
        "slurm { comment = \"${nsteps} # not a comment\" }\n"
        "references { ns_per_day = \"${tpr} }\" }\n",
        "job.conf", "${name} in every kind of value");
    if (job) {
        is_str(job->command, "./app -n ${nsteps} -s ${tpr} -j ${job} -t ${threads_per_rank}",
               "command keeps ${name}");
        is_str(kv(&job->params, 1, 0), "${GPURUN_TEST_X}.tpr", "params value keeps ${name}");
        is_str(kv(&job->params, 2, 0), "${GPURUN_TEST_X:-x}",
               "libconfuse's ${VAR:-default} not applied");
        /* env values are the exception (SPEC §2): ${VAR} is the launching
         * environment's, expanded by gpurun, whatever the quotes */
        char *path = gpurun_xasprintf("/opt/bin:%s", getenv("PATH"));
        is_str(kv(&job->env, 0, 0), path, "env value: ${PATH} is the launching environment's");
        free(path);
        is_str(kv(&job->env, 1, 0), "EVIL", "... in single quotes too");
        is_str(kv(&job->env, 2, 0), "EVIL", "... and after libconfuse's \\$");
        is_str(kv(gpurun_job_manager_options(job, "slurm"), 0, 0), "${nsteps} # not a comment",
               "'#' inside quotes is no comment");
        is_str(kv(&job->references, 0, 0), "${tpr} }", "'}' inside quotes");
        gpurun_job_destroy(job);
    }
    unsetenv("nsteps");
    unsetenv("tpr");
    unsetenv("GPURUN_TEST_X");
}

static void test_names(void)
{
    static const struct {
        const char *label, *name, *dir;
    } labels[] = {
        {"job.conf", "job", "."},      {"some/dir/water-box.conf", "water-box", "some/dir"},
        {"/abs.conf", "abs", "/"},     {"bench", "bench", "."},
    };
    for (size_t i = 0; i < sizeof labels / sizeof *labels; i++) {
        gpurun_job_t *job = parse_ok("nodes = 1\n", labels[i].label, labels[i].label);
        if (job) {
            is_str(job->name, labels[i].name, "%s: name", labels[i].label);
            is_str(job->dir, labels[i].dir, "%s: dir", labels[i].label);
            is_str(job->path, labels[i].label, "label %zu: path as given", i);
            gpurun_job_destroy(job);
        }
    }
    /* A name from the file name meets the `job` key's rules (issue 11, item 10). */
    static const char *const bad_labels[] = {"dir/.conf", "...conf", "dir/.hidden.conf", "-x.conf", "a b.conf"};
    for (size_t i = 0; i < sizeof bad_labels / sizeof *bad_labels; i++) {
        gpurun_job_t *job = NULL;
        gpurun_error_t err = {0};
        int rc = gpurun_job_parse("nodes = 1\n", strlen("nodes = 1\n"), bad_labels[i], &job, &err);
        char *want = gpurun_xasprintf("%s: the job name '", bad_labels[i]);
        ok(rc < 0 && err.code == 2 && !strncmp(err.text, want, strlen(want)) &&
               strstr(err.text, "taken from the file name, is not a valid job name"),
           "%s: refused, the file named", bad_labels[i]);
        free(want);
        gpurun_job_destroy(job);
        job = parse_ok("job = \"ok\"\nnodes = 1\n", bad_labels[i], "... with a `job` key, accepted");
        gpurun_job_destroy(job);
    }
    /* Every name the man page documents works in a job's command; what a
     * run gives no value (a key such as results) is refused here already. */
    gpurun_job_t *job = parse_ok("command = \"./app ${n} ${nodes} ${job_dir} ${run_dir} ${ranks} ${job}\"\n"
                                 "params { n = 3 }\n", "x.conf", "command with ${job_dir}, ${run_dir}, ${ranks}");
    gpurun_job_destroy(job);
    {
        gpurun_error_t err = {0};
        const char *text = "command = \"./app ${results}\"\n";
        int rc = gpurun_job_parse(text, strlen(text), "x.conf", &job, &err);
        ok(rc < 0 && strstr(err.text, "x.conf:1: key 'command': '${results}' is unset"),
           "${results}, a key but no value a run gives: refused at once");
    }
    job = parse_ok("command = \"./app ${n} ${nodes}\" params { n = 3 }\n"
                                 "job = \"cg_1.5+gpu\"\n",
                                 "x.conf", "command with params and job keys");
    if (job) {
        is_str(job->name, "cg_1.5+gpu", "job overrides the file name");
        gpurun_job_destroy(job);
    }
    job = parse_ok("template = \"generic\"\nparams { msg = \"${anything}\" }\n", "x.conf",
                   "a template's names are not checked here");
    gpurun_job_destroy(job);
    job = parse_ok("results = http://host/path\nparams { url = a//b }\n", "x.conf",
                   "unquoted words keep '//'");
    if (job) {
        is_str(job->results, "http://host/path", "results with //");
        is_str(kv(&job->params, 0, 0), "a//b", "params value with //");
        gpurun_job_destroy(job);
    }
    job = parse_ok("nodes = 2\r\nrepeat = 3\r\n", "x.conf", "CRLF line ends");
    if (job) {
        ok(job->nodes == 2 && job->repeat == 3, "CRLF values");
        gpurun_job_destroy(job);
    }
    /* Windows editors open a UTF-8 file with a byte-order mark. */
    job = parse_ok("\xef\xbb\xbfjob = \"bom\"\r\nnodes = 2\r\n", "x.conf", "a UTF-8 byte-order mark first");
    if (job) {
        ok(!strcmp(job->name, "bom") && job->nodes == 2, "byte-order mark: the first key is read");
        gpurun_job_destroy(job);
    }
    /* In quotes they are the value's own text. */
    job = parse_ok("command = \"./app \xe2\x80\x9cq\xe2\x80\x9d \xc2\xa0x\"\n", "x.conf",
                   "typographic quotes and a no-break space in double quotes");
    if (job) {
        is_str(job->command, "./app \xe2\x80\x9cq\xe2\x80\x9d \xc2\xa0x", "quoted: kept as written");
        gpurun_job_destroy(job);
    }
}

static void test_load(void)
{
    char dir[] = "/tmp/gpurun-test-job.XXXXXX";
    if (!mkdtemp(dir)) {
        ok(0, "mkdtemp: %s", strerror(errno));
        return;
    }
    char path[256];
    snprintf(path, sizeof path, "%s/bench.conf", dir);
    FILE *fp = fopen(path, "w");
    fputs("ranks_per_node = 4\n", fp);
    fclose(fp);

    gpurun_job_t *job = NULL;
    gpurun_error_t err = {0};
    char *dirname = strdup(dir); /* a pointer, for is_str() */
    ok(gpurun_job_load(path, &job, &err) == 0 && job, "load a file");
    if (job) {
        is_str(job->name, "bench", "load: name from the file name");
        is_str(job->dir, dirname, "load: dir");
        is_int(job->ranks_per_node, 4, "load: value");
        gpurun_job_destroy(job);
    }

    job = (gpurun_job_t *)&job;
    ok(gpurun_job_load(dir, &job, &err) == -1 && err.code == GPURUN_EXIT_CONFIG && !job,
       "a directory: refused");
    ok(strstr(err.text, "not a regular file") != NULL, "a directory: says so (%s)", err.text);

    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s/fifo.conf", dir);
    if (mkfifo(fifo, 0600) == 0) {
        ok(gpurun_job_load(fifo, &job, &err) == -1 && err.code == GPURUN_EXIT_CONFIG,
           "a FIFO: refused, no hang");
        unlink(fifo);
    } else {
        skip("mkfifo: %s", strerror(errno));
    }

    ok(gpurun_job_load("/dev/zero", &job, &err) == -1 && err.code == GPURUN_EXIT_CONFIG,
       "/dev/zero: refused");
    snprintf(path, sizeof path, "%s/missing.conf", dir);
    ok(gpurun_job_load(path, &job, &err) == -1 && err.code == GPURUN_EXIT_CONFIG,
       "missing file: refused");

    snprintf(path, sizeof path, "%s/bad.conf", dir);
    fp = fopen(path, "w");
    fputs("nodes = 1\nrank_per_node = 2\n", fp);
    fclose(fp);
    char *want = NULL;
    if (asprintf(&want, "%s:2: unknown key 'rank_per_node' (did you mean 'ranks_per_node'?)",
                 path) < 0)
        want = NULL;
    ok(gpurun_job_load(path, &job, &err) == -1 && err.code == GPURUN_EXIT_CONFIG,
       "bad key: refused");
    is_str(err.text, want, "bad key: message names the file");
    free(want);
    unlink(path);

    snprintf(path, sizeof path, "%s/bench.conf", dir);
    unlink(path);
    rmdir(dir);
    free(dirname);
}

/* libconfuse adds free-form keys in quadratic time: a file is held to 1024
 * keys, checked before libconfuse sees them, so that a 1 MiB file of keys
 * is refused at once. */
static char *many_params(size_t n, size_t *lenp)
{
    size_t cap = n * 32 + 64, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text + len, cap - len, "params {\n");
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(text + len, cap - len, "  key%zu = \"v%zu\"\n", i, i);
    len += (size_t)snprintf(text + len, cap - len, "}\n");
    *lenp = len;
    return text;
}

static void test_many_keys(void)
{
    size_t len;
    char *text = many_params(1023, &len); /* and the section: 1024 */
    gpurun_job_t *job = NULL;
    gpurun_error_t err = {0};
    ok(gpurun_job_parse(text, len, "big.conf", &job, &err) == 0 && job && job->params.n == 1023,
       "1024 keys parse");
    if (job)
        is_str(kv(&job->params, 1022, 0), "v1022", "the last of them");
    gpurun_job_destroy(job);
    free(text);

    text = many_params(40000, &len);
    job = (gpurun_job_t *)&job;
    ok(gpurun_job_parse(text, len, "big.conf", &job, &err) == -1 &&
           err.code == GPURUN_EXIT_CONFIG && !job,
       "40000 keys: refused");
    is_str(err.text, "big.conf:1025: key 'params.key1023': more than 1024 keys in the file",
           "40000 keys: message");
    free(text);
}

/* ranks_per_gpu and mps from a file and from --set, with the
 * contradiction of several GPUs per rank found either way. */
static void test_ranks_per_gpu(void)
{
    gpurun_job_t *job = parse_ok("ranks_per_gpu = 3\nmps = \"on\"\n", "job.conf", "ranks_per_gpu, mps");
    if (job) {
        is_int(job->ranks_per_gpu, 3, "ranks_per_gpu = 3 read");
        ok(job->mps == GPURUN_MPS_ON, "mps = on read");
        gpurun_error_t err = {0};
        ok(gpurun_job_set(job, "mps=off", &err) == 0 && job->mps == GPURUN_MPS_OFF, "--set mps=off");
        ok(gpurun_job_set(job, "gpus_per_rank=2", &err) == -1 && err.code == GPURUN_EXIT_CONFIG,
           "--set gpus_per_rank=2 with ranks_per_gpu = 3: exit 2");
        is_str(err.text,
               "--set gpus_per_rank=2: key 'gpus_per_rank': contradicts 'ranks_per_gpu' (3): ranks share one GPU, "
               "gpus_per_rank = 2",
               "... naming both keys");
        is_int(job->gpus_per_rank, GPURUN_UNSET, "... and the job is unchanged");
        gpurun_job_destroy(job);
    }
    job = parse_ok("gpus_per_rank = 2\n", "job.conf", "two GPUs per rank");
    if (job) {
        gpurun_error_t err = {0};
        ok(gpurun_job_set(job, "ranks_per_gpu=2", &err) == -1 && err.code == GPURUN_EXIT_CONFIG,
           "--set ranks_per_gpu=2 with gpus_per_rank = 2: exit 2");
        is_str(err.text,
               "--set ranks_per_gpu=2: key 'ranks_per_gpu': contradicts 'gpus_per_rank' (2): ranks share one GPU, "
               "gpus_per_rank = 2",
               "... naming both keys");
        ok(gpurun_job_set(job, "gpus_per_rank=1", &err) == 0 && gpurun_job_set(job, "ranks_per_gpu=2", &err) == 0 &&
               job->ranks_per_gpu == 2,
           "--set gpus_per_rank=1 --set ranks_per_gpu=2 is fine");
        ok(gpurun_job_set(job, "ranks_per_gpu=65", &err) == -1 && strstr(err.text, "out of range"),
           "--set ranks_per_gpu=65 is out of range");
        gpurun_job_destroy(job);
    }
}

int main(void)
{
    gpurun_plugins_register();
    test_ranks_per_gpu();
    test_bad();
    test_spec_example();
    test_defaults();
    test_values();
    test_timeouts();
    test_dollar_preserved();
    test_names();
    test_load();
    test_many_keys();
    return done_testing();
}
