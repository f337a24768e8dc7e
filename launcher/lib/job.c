/* SPDX-License-Identifier: BSD-3-Clause */
/* The job file (SPEC §2): libconfuse does the grammar, this file the rest.
 *
 * Three passes over a job file (gpurun_conf_read(), shared with templates
 * and site profiles):
 *  1. comments blanked, `${` kept from libconfuse's environment expansion,
 *     every `key =` recorded with its line;
 *  2. cfg_parse_buf() on the normalized text, with parse callbacks that
 *     check each typed value as it is read;
 *  3. checks that need the whole file (duplicates, free-form sections,
 *     contradicting keys, ${name} in `command`), then conversion to the plain
 *     gpurun_job_t.
 * Every check proposes an error with its line; the earliest in the file wins,
 * so the user fixes a file from the top down.
 *
 * `--set KEY=VALUE` goes through the same passes: the assignment is written
 * as a one-key job file, so that its value meets exactly the file's checks;
 * then the keys it contradicts are checked against the job it changes. */
#include "config.h"

#include <confuse.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confparse.h"
#include "container.h"
#include "job.h"
#include "template.h"
#include "template_base.h"
#include "util.h"

#define JOB_FILE_MAX (1024 * 1024)
#define TIMEOUT_MAX (366L * 24 * 3600)
#define PROGRESS_INTERVAL_MAX (24L * 3600)
#define PROGRESS_INTERVAL_DEFAULT (10L * 60)
#define SCAN_VALUES_MAX 64 /* values of one scan axis */
#define SCAN_RUNS_MAX 1024 /* combinations of all axes */
#define TUNE_PARAMS_MAX 32 /* params.NAME axes of a tune block */
#define TUNE_VALUES_MAX 64 /* values of one tune axis */

/* ---- the schema's limits ---------------------------------------------- */

static const struct int_limit {
    const char *key;
    long min, max;
} int_limits[] = {
    {"nodes", 1, 65536},           {"ranks_per_node", 1, 4096}, {"gpus_per_rank", 0, 64},
    {"threads_per_rank", 1, 4096}, {"repeat", 1, 10000},
    {"ranks_per_gpu", 1, 64},
};

/* Indexed by the enum values of job.h. */
static const char *const bind_names[] = {
    [GPURUN_BIND_CLOSEST] = "closest", [GPURUN_BIND_NONE] = "none", NULL};
static const char *const gpuvis_names[] = {
    [GPURUN_GPUVIS_ISOLATE] = "isolate", [GPURUN_GPUVIS_SHARED] = "shared", NULL};
static const char *const cpuloc_names[] = {
    [GPURUN_CPULOC_PACKAGE] = "package", [GPURUN_CPULOC_GPU] = "gpu", NULL};
static const char *const gpudirect_names[] = {[GPURUN_GPUDIRECT_AUTO] = "auto",
                                              [GPURUN_GPUDIRECT_ON] = "on",
                                              [GPURUN_GPUDIRECT_OFF] = "off",
                                              NULL};
static const char *const mps_names[] = {
    [GPURUN_MPS_AUTO] = "auto", [GPURUN_MPS_ON] = "on", [GPURUN_MPS_OFF] = "off", NULL};
static const char *const run_folder_mode_names[] = {
    [GPURUN_RUN_FOLDER_PRIVATE] = "private", [GPURUN_RUN_FOLDER_GROUP] = "group", NULL};
static const char *const output_names[] = {
    [GPURUN_OUTPUT_PER_HOST] = "per-host", [GPURUN_OUTPUT_PER_RANK] = "per-rank", NULL};

static const char *const on_stall_names[] = {
    [GPURUN_ON_STALL_REPORT] = "report", [GPURUN_ON_STALL_KILL] = "kill", NULL};

static const struct gpurun_conf_enum_key enum_keys[] = {
    {"on_stall", on_stall_names},
    {"bind", bind_names},
    {"gpu_visibility", gpuvis_names},
    {"cpu_locality", cpuloc_names},
    {"gpudirect", gpudirect_names},
    {"mps", mps_names},
    {"run_folder_mode", run_folder_mode_names},
    {"output", output_names},
};

/* The sections whose keys the user chooses: these, then one for each
 * resource manager present (slurm { partition = "gpu" }): its batch
 * scripts' options. */
static const char *const own_sections[] = {"params", "env", "references"};

/* The resource managers' names (the plugins present, confparse.h); none in
 * a program that loads no plugins. */
static const char *const *manager_names(void)
{
    static const char *const none[] = {NULL};
    const char *const *names = gpurun_conf_plugin_names("rm");
    return names ? names : none;
}

#define SECTIONS_MAX 64

/* own_sections and the managers', NULL-terminated, into out[SECTIONS_MAX]. */
static size_t free_sections(const char **out)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof own_sections / sizeof *own_sections; i++)
        out[n++] = own_sections[i];
    for (const char *const *m = manager_names(); *m && n < SECTIONS_MAX - 1; m++)
        out[n++] = *m;
    out[n] = NULL;
    return n;
}

/* A job's launcher and monitor: "auto" (and "none": no monitor), or a
 * plugin present (confparse.h). */
static int cb_launcher(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    static const char *const fixed[] = {"auto", NULL};
    return gpurun_conf_plugin_name(cfg, opt, value, "launcher", fixed, NULL, result);
}

static int cb_monitor(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    static const char *const fixed[] = {"auto", "none", NULL};
    return gpurun_conf_plugin_name(cfg, opt, value, "monitor", fixed, NULL, result);
}

/* Decimal only (libconfuse's strtol(..., 0) would read "010" as 8), within
 * the key's limits. */
static int cb_int(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    const struct int_limit *lim = NULL;
    for (size_t i = 0; i < sizeof int_limits / sizeof *int_limits; i++)
        if (strcmp(int_limits[i].key, cfg_opt_name(opt)) == 0)
            lim = &int_limits[i];
    return gpurun_conf_int_in(cfg, opt, value, lim ? lim->min : 0, lim ? lim->max : 0, result);
}

static int cb_enum(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    return gpurun_conf_enum_key(cfg, opt, value, enum_keys, sizeof enum_keys / sizeof *enum_keys,
                                result);
}

static int cb_timeout(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    struct gpurun_conf_shown a;
    long secs;
    if (!value || gpurun_parse_duration(value, &secs) < 0)
        return gpurun_conf_value_error(
            cfg, opt,
            "expected a duration such as \"30m\", \"1h30m\", \"90s\", \"01:00:00\" or "
            "\"none\", got '%s'",
            gpurun_conf_shown(&a, value));
    if (secs > TIMEOUT_MAX)
        return gpurun_conf_value_error(cfg, opt, "'%s' is out of range (at most 366 days)",
                                       gpurun_conf_shown(&a, value));
    *(long *)result = secs;
    return 0;
}

/* progress_interval: a duration as `timeout` takes, of a second to a day,
 * or "off" (also "none", 0): no progress lines. */
static int cb_progress_interval(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    struct gpurun_conf_shown a;
    long secs;
    if (value && strcmp(value, "off") == 0) {
        *(long *)result = 0;
        return 0;
    }
    if (!value || gpurun_parse_duration(value, &secs) < 0)
        return gpurun_conf_value_error(cfg, opt,
                                       "expected a duration such as \"10m\", \"30s\", \"1h\" or \"off\", got '%s'",
                                       gpurun_conf_shown(&a, value));
    if (secs > PROGRESS_INTERVAL_MAX)
        return gpurun_conf_value_error(cfg, opt, "'%s' is out of range (at most a day; \"off\" for none)",
                                       gpurun_conf_shown(&a, value));
    *(long *)result = secs;
    return 0;
}

/* stall_after: "auto" (0), "off" (-1), or a duration of a second to a
 * week. */
static int cb_stall_after(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    struct gpurun_conf_shown a;
    long secs;
    if (value && (!strcmp(value, "auto") || !strcmp(value, "off"))) {
        *(long *)result = !strcmp(value, "auto") ? GPURUN_STALL_AFTER_AUTO : GPURUN_STALL_AFTER_OFF;
        return 0;
    }
    if (!value || gpurun_parse_duration(value, &secs) < 0 || secs < 1)
        return gpurun_conf_value_error(cfg, opt,
                                       "expected \"auto\", \"off\" or a duration such as \"10m\" or \"30s\", got '%s'",
                                       gpurun_conf_shown(&a, value));
    if (secs > 7 * 86400)
        return gpurun_conf_value_error(cfg, opt, "'%s' is out of range (at most a week; \"off\" for none)",
                                       gpurun_conf_shown(&a, value));
    *(long *)result = secs;
    return 0;
}

/* ---- pass 3: checks that need the whole file --------------------------- */

static bool job_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 100 || s[0] == '.' || s[0] == '-')
        return false;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              strchr("._+-", *s)))
            return false;
    return true;
}

static const char *const string_keys[] = {"job", "template", "command", "site", "results"};

static void check_strings(struct gpurun_conf_ctx *ctx, cfg_t *cfg)
{
    for (size_t i = 0; i < sizeof string_keys / sizeof *string_keys; i++)
        gpurun_conf_check_string(ctx, string_keys[i], cfg_getstr(cfg, string_keys[i]), true);
    const char *job = cfg_getstr(cfg, "job");
    int line = gpurun_conf_record_line(ctx, "job");
    struct gpurun_conf_shown a;
    if (line && job && *job && !job_name_ok(job))
        gpurun_conf_note(
            ctx, line, GPURUN_CONF_CHECK,
            "key 'job': '%s' is not a valid job name (letters, digits, '.', '_', '+', '-'; it "
            "names "
            "the results folder)",
            gpurun_conf_shown(&a, job));
    /* A template is found by name on the search path, never by a path. */
    const char *tpl = cfg_getstr(cfg, "template");
    line = gpurun_conf_record_line(ctx, "template");
    if (line && tpl && *tpl && !gpurun_conf_plain_name_ok(tpl))
        gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK,
                         "key 'template': '%s' is not a valid template name (letters, digits, "
                         "'_', '-', '.'; a name on the search path, not a file)",
                         gpurun_conf_shown(&a, tpl));

    const char *sections[SECTIONS_MAX];
    for (size_t s = 0, n = free_sections(sections); s < n; s++)
        gpurun_conf_check_section(ctx, cfg, sections[s]);
}

/* A scan axis over a template parameter: `params.NAME = {...}`, strings. */
static bool is_scan_param(const char *key)
{
    return strncmp(key, "params.", 7) == 0 && key[7];
}

/* Two equal values in one axis: the later one's index in *at. */
static bool repeated_value(cfg_opt_t *opt, bool str, unsigned *at)
{
    unsigned n = cfg_opt_size(opt);
    for (unsigned i = 0; i < n; i++)
        for (unsigned j = 0; j < i; j++)
            if (str ? strcmp(cfg_opt_getnstr(opt, i), cfg_opt_getnstr(opt, j)) == 0
                    : cfg_opt_getnint(opt, i) == cfg_opt_getnint(opt, j)) {
                *at = i;
                return true;
            }
    return false;
}

static void check_scan(struct gpurun_conf_ctx *ctx, cfg_t *cfg)
{
    cfg_t *scan = cfg_getsec(cfg, "scan");
    size_t runs = 1;
    struct gpurun_conf_shown a;
    for (size_t i = 0; scan && i < ctx->nrecs; i++) {
        const struct gpurun_conf_record *r = &ctx->recs[i];
        if (strcmp(r->section, "scan") != 0 || r->is_section)
            continue;
        cfg_opt_t *opt = cfg_getopt(scan, r->key);
        if (!opt) /* not a key of the scan: libconfuse said so */
            continue;
        bool str = is_scan_param(r->key);
        unsigned n = cfg_opt_size(opt);
        if (n == 0) {
            gpurun_conf_note(ctx, r->line, GPURUN_CONF_CHECK, "key '%s': empty list", r->name);
            continue;
        }
        if (n > SCAN_VALUES_MAX) {
            gpurun_conf_note(ctx, r->line, GPURUN_CONF_CHECK,
                             "key '%s': %u values, more than the %d allowed", r->name, n,
                             SCAN_VALUES_MAX);
            continue;
        }
        for (unsigned v = 0; str && v < n; v++) {
            char buf[96];
            const char *why = gpurun_conf_value_problem(cfg_opt_getnstr(opt, v), true, buf, sizeof buf);
            if (why)
                gpurun_conf_note(ctx, r->line, GPURUN_CONF_CHECK, "key '%s': value %u: %s", r->name,
                                 v + 1, why);
        }
        unsigned twice;
        if (repeated_value(opt, str, &twice)) {
            if (str)
                gpurun_conf_note(ctx, r->line, GPURUN_CONF_CHECK, "key '%s': '%s' listed twice",
                                 r->name, gpurun_conf_shown(&a, cfg_opt_getnstr(opt, twice)));
            else
                gpurun_conf_note(ctx, r->line, GPURUN_CONF_CHECK, "key '%s': %ld listed twice",
                                 r->name, cfg_opt_getnint(opt, twice));
        }
        runs *= n;
        if (runs > SCAN_RUNS_MAX) {
            gpurun_conf_note(ctx, r->line, GPURUN_CONF_CHECK,
                             "key '%s': the scan makes more than %d runs", r->name, SCAN_RUNS_MAX);
            break;
        }
    }
}

static bool list_has(cfg_t *scan, const char *key, bool (*pred)(long))
{
    cfg_opt_t *opt = scan ? cfg_getopt(scan, key) : NULL;
    for (unsigned i = 0; opt && i < cfg_opt_size(opt); i++)
        if (pred(cfg_opt_getnint(opt, i)))
            return true;
    return false;
}

static bool more_than_one(long v)
{
    return v > 1;
}

static bool is_zero(long v)
{
    return v == 0;
}

static void check_contradictions(struct gpurun_conf_ctx *ctx, cfg_t *cfg)
{
    cfg_t *scan = cfg_getsec(cfg, "scan");
    gpurun_conf_contradiction(ctx, "template", "command",
                              "a job runs a template or a command, not both");
    const char *launcher = cfg_getstr(cfg, "launcher"); /* NULL: refused already */
    if (launcher && !strcmp(launcher, "local")) {
        if (cfg_getint(cfg, "nodes") > 1)
            gpurun_conf_contradiction(ctx, "launcher", "nodes",
                                      "launcher \"local\" runs on this node only, nodes = %ld",
                                      cfg_getint(cfg, "nodes"));
        if (list_has(scan, "nodes", more_than_one))
            gpurun_conf_contradiction(
                ctx, "launcher", "scan.nodes",
                "launcher \"local\" runs on this node only, the scan asks for more nodes");
    }
    if (cfg_getint(cfg, "ranks_per_gpu") > 1) {
        /* Sharing one GPU and spanning several are two different layouts. */
        if (cfg_getint(cfg, "gpus_per_rank") > 1)
            gpurun_conf_contradiction(ctx, "ranks_per_gpu", "gpus_per_rank",
                                      "ranks share one GPU each, gpus_per_rank = %ld",
                                      cfg_getint(cfg, "gpus_per_rank"));
        if (cfg_getint(cfg, "gpus_per_rank") == 0)
            gpurun_conf_contradiction(ctx, "ranks_per_gpu", "gpus_per_rank",
                                      "ranks share a GPU, gpus_per_rank = 0");
        if (list_has(scan, "gpus_per_rank", more_than_one))
            gpurun_conf_contradiction(ctx, "ranks_per_gpu", "scan.gpus_per_rank",
                                      "ranks share one GPU each, the scan has gpus_per_rank > 1");
        if (list_has(scan, "gpus_per_rank", is_zero))
            gpurun_conf_contradiction(ctx, "ranks_per_gpu", "scan.gpus_per_rank",
                                      "ranks share a GPU, the scan has gpus_per_rank = 0");
    }
    if (cfg_getint(cfg, "gpu_visibility") == GPURUN_GPUVIS_SHARED) {
        if (cfg_getint(cfg, "gpus_per_rank") == 0)
            gpurun_conf_contradiction(ctx, "gpu_visibility", "gpus_per_rank",
                                      "\"shared\" chooses a GPU for each rank, gpus_per_rank = 0");
        if (list_has(scan, "gpus_per_rank", is_zero))
            gpurun_conf_contradiction(
                ctx, "gpu_visibility", "scan.gpus_per_rank",
                "\"shared\" chooses a GPU for each rank, the scan has gpus_per_rank = 0");
    }
}

/* `command` without a template: every ${name} must be a params key or a
 * job key.  (With a template, its defaults may supply names: checked when
 * the template is read.) */
static void check_command_names(struct gpurun_conf_ctx *ctx, cfg_t *cfg)
{
    const char *cmd = cfg_getstr(cfg, "command");
    int line = gpurun_conf_record_line(ctx, "command");
    if (!cmd || !line || cfg_getstr(cfg, "template"))
        return;

    /* params, then the job's own values: exactly what a run's table holds
     * (gpurun_job_names()), job_dir, run_dir and ranks included */
    cfg_t *params = cfg_getsec(cfg, "params");
    size_t nparams = params ? cfg_num(params) : 0, n = 0;
    size_t nvalues = 0;
    while (gpurun_job_value_names[nvalues])
        nvalues++;
    const char **names = gpurun_xcalloc(nparams + nvalues + ctx->nrecs, sizeof *names);
    for (size_t i = 0; i < nparams; i++)
        names[n++] = cfg_opt_name(cfg_getnopt(params, (unsigned)i));
    for (size_t i = 0; i < ctx->nrecs; i++) /* a scan's params.NAME sets ${NAME} too */
        if (!strcmp(ctx->recs[i].section, "scan") && !ctx->recs[i].is_section && is_scan_param(ctx->recs[i].key))
            names[n++] = ctx->recs[i].key + 7;
    for (size_t i = 0; i < nvalues; i++)
        if (strcmp(gpurun_job_value_names[i], "template") != 0) /* no template here */
            names[n++] = gpurun_job_value_names[i];

    struct gpurun_conf_shown a;
    for (const char *p = strstr(cmd, "${"); p; p = strstr(p, "${")) {
        const char *end = strchr(p + 2, '}');
        if (!end) {
            gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK,
                             "key 'command': '${' without a closing '}'");
            break;
        }
        if (end == p + 2) {
            gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK, "key 'command': empty '${}'");
            break;
        }
        char *name = gpurun_xstrndup(p + 2, (size_t)(end - p - 2));
        bool known = false;
        for (size_t i = 0; i < n && !known; i++)
            known = strcmp(name, names[i]) == 0;
        if (!known) {
            const char *near = gpurun_conf_closest(name, names, n);
            if (near)
                gpurun_conf_note(
                    ctx, line, GPURUN_CONF_CHECK,
                    "key 'command': '${%s}' is unset: no params key or job key of that name (did "
                    "you mean '%s'?)",
                    gpurun_conf_shown(&a, name), near);
            else
                gpurun_conf_note(
                    ctx, line, GPURUN_CONF_CHECK,
                    "key 'command': '${%s}' is unset: no params key or job key of that name",
                    gpurun_conf_shown(&a, name));
        }
        free(name);
        if (!known)
            break;
        p = end + 1;
    }
    free(names);
}

/* Where a string is not UTF-8: the byte offset of the first bad sequence,
 * or -1 when it is. */
static long not_utf8_at(const char *s)
{
    for (size_t i = 0, n; s[i]; i += n)
        if (!(n = gpurun_utf8_char(s + i, NULL)))
            return (long)i;
    return -1;
}

/* ${VAR} in an env value: the launching environment's (SPEC §2). */
static const char *launch_env(const char *name, void *ctx)
{
    (void)ctx;
    return getenv(name);
}

/* Each env value is UTF-8 (the run's records are JSON, and a value their
 * encoder refuses would be dropped), and each ${VAR} in it is set where
 * gpurun was started: an unset one is an error, not a silent literal. */
static void check_env(struct gpurun_conf_ctx *ctx, cfg_t *cfg)
{
    cfg_t *sec = cfg_getsec(cfg, "env");
    unsigned n = sec ? cfg_num(sec) : 0;
    struct gpurun_conf_shown a;
    for (unsigned i = 0; i < n; i++) {
        cfg_opt_t *opt = cfg_getnopt(sec, i);
        const char *value = cfg_opt_getnstr(opt, 0);
        char *name = gpurun_xasprintf("env.%s", cfg_opt_name(opt));
        int line = gpurun_conf_record_line(ctx, name);
        long bad = value ? not_utf8_at(value) : -1;
        if (line && bad >= 0) {
            gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK,
                             "key '%s': the value is not UTF-8 (byte 0x%02x at offset %ld): the ranks' "
                             "environment is recorded as JSON text",
                             gpurun_conf_shown(&a, name), (unsigned char)value[bad], bad);
        } else if (line && value) {
            gpurun_error_t e = {0};
            char *what = gpurun_xasprintf("key '%s'", gpurun_conf_shown(&a, name)), *out = NULL;
            if (gpurun_expand(value, launch_env, NULL, what, &out, &e) < 0)
                gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK, "%s%s", e.text,
                                 strstr(e.text, "is not set") ? " in the environment gpurun was started from" : "");
            free(what);
            free(out);
        }
        free(name);
    }
}

/* A job's name names its results folder: one from the file name meets the
 * rules of the `job` key too (`...conf` would make it "..": a run folder
 * outside the results). */
static void check_file_job_name(struct gpurun_conf_ctx *ctx, cfg_t *cfg)
{
    if (cfg_getstr(cfg, "job"))
        return;
    char *name = gpurun_conf_label_name(ctx->label);
    struct gpurun_conf_shown a;
    if (*name && !job_name_ok(name))
        gpurun_conf_note(ctx, GPURUN_CONF_NO_LINE, GPURUN_CONF_CHECK,
                         "the job name '%s', taken from the file name, is not a valid job name (letters, "
                         "digits, '.', '_', '+', '-', at most 100, not starting with '.' or '-'; it names "
                         "the results folder): rename the file or set `job = \"NAME\"`",
                         gpurun_conf_shown(&a, name));
    free(name);
}

/* ---- conversion ------------------------------------------------------- */

static void take_scan(const struct gpurun_conf_ctx *ctx, cfg_t *cfg, gpurun_job_t *job)
{
    cfg_t *scan = cfg_getsec(cfg, "scan");
    size_t n = 0;
    for (size_t i = 0; scan && i < ctx->nrecs; i++)
        n += strcmp(ctx->recs[i].section, "scan") == 0 && !ctx->recs[i].is_section;
    job->scan = gpurun_xcalloc(n ? n : 1, sizeof *job->scan);
    for (size_t i = 0; scan && i < ctx->nrecs; i++) {
        const struct gpurun_conf_record *r = &ctx->recs[i];
        if (strcmp(r->section, "scan") != 0 || r->is_section)
            continue;
        cfg_opt_t *opt = cfg_getopt(scan, r->key);
        struct gpurun_axis *ax = &job->scan[job->nscan++];
        bool str = is_scan_param(r->key);
        ax->key = gpurun_xstrdup(r->key);
        ax->line = r->line;
        ax->n = cfg_opt_size(opt);
        ax->values = str ? NULL : gpurun_xcalloc(ax->n, sizeof *ax->values);
        ax->texts = gpurun_xcalloc(ax->n + 1, sizeof *ax->texts);
        for (size_t v = 0; v < ax->n; v++) {
            if (str) {
                ax->texts[v] = gpurun_xstrdup(cfg_opt_getnstr(opt, (unsigned)v));
            } else {
                ax->values[v] = cfg_opt_getnint(opt, (unsigned)v);
                ax->texts[v] = gpurun_xasprintf("%ld", ax->values[v]);
            }
        }
    }
}

/* tune { }: each key the file sets, its values as strings (the layout
 * keys' were checked as integers by their callbacks). */
static void take_tune(const struct gpurun_conf_ctx *ctx, cfg_t *cfg, gpurun_job_t *job)
{
    cfg_t *tune = cfg_getsec(cfg, "tune");
    for (size_t i = 0; tune && i < ctx->nrecs; i++) {
        const struct gpurun_conf_record *r = &ctx->recs[i];
        if (strcmp(r->section, "tune") != 0 || r->is_section)
            continue;
        cfg_opt_t *opt = cfg_getopt(tune, r->key);
        if (!opt)
            continue;
        job->tune = gpurun_xrealloc(job->tune, (job->ntune + 1) * sizeof *job->tune);
        struct gpurun_axis *ax = &job->tune[job->ntune++];
        memset(ax, 0, sizeof *ax);
        ax->key = gpurun_xstrdup(r->key);
        ax->line = r->line;
        ax->n = cfg_opt_size(opt);
        ax->texts = gpurun_xcalloc(ax->n + 1, sizeof *ax->texts);
        for (size_t v = 0; v < ax->n; v++)
            ax->texts[v] = opt->type == CFGT_INT
                                ? gpurun_xasprintf("%ld", cfg_opt_getnint(opt, (unsigned)v))
                                : gpurun_xstrdup(cfg_opt_getnstr(opt, (unsigned)v));
    }
}

/* Each key of tune { }: a list, not empty, not too long, no value twice;
 * at most TUNE_PARAMS_MAX params.NAME keys. */
static void check_tune(struct gpurun_conf_ctx *ctx, cfg_t *cfg)
{
    cfg_t *tune = cfg_getsec(cfg, "tune");
    size_t nparams = 0;
    for (size_t i = 0; tune && i < ctx->nrecs; i++) {
        const struct gpurun_conf_record *r = &ctx->recs[i];
        if (strcmp(r->section, "tune") != 0 || r->is_section)
            continue;
        if (is_scan_param(r->key) && ++nparams == TUNE_PARAMS_MAX + 1)
            gpurun_conf_note(ctx, r->line, GPURUN_CONF_CHECK, "key '%s': more than %d params.NAME keys in tune",
                             r->name, TUNE_PARAMS_MAX);
        cfg_opt_t *opt = cfg_getopt(tune, r->key);
        unsigned n = opt ? cfg_opt_size(opt) : 0;
        if (n == 0)
            gpurun_conf_note(ctx, r->line, GPURUN_CONF_CHECK, "key '%s': empty list", r->name);
        else if (n > TUNE_VALUES_MAX)
            gpurun_conf_note(ctx, r->line, GPURUN_CONF_CHECK, "key '%s': %u values, more than the %d allowed",
                             r->name, n, TUNE_VALUES_MAX);
        for (unsigned a = 0; a < n && n <= TUNE_VALUES_MAX; a++) {
            char buf[128];
            if (opt->type == CFGT_STR) {
                const char *why = gpurun_conf_value_problem(cfg_opt_getnstr(opt, a), true, buf, sizeof buf);
                if (why)
                    gpurun_conf_note(ctx, r->line, GPURUN_CONF_CHECK, "key '%s': %s", r->name, why);
            }
            for (unsigned b = 0; b < a; b++) {
                bool same = opt->type == CFGT_INT
                                ? cfg_opt_getnint(opt, a) == cfg_opt_getnint(opt, b)
                                : strcmp(cfg_opt_getnstr(opt, a), cfg_opt_getnstr(opt, b)) == 0;
                if (same)
                    gpurun_conf_note(ctx, r->line, GPURUN_CONF_CHECK, "key '%s': value %u is listed twice",
                                     r->name, a + 1);
            }
        }
    }
}

static void *convert(const struct gpurun_conf_ctx *ctx, cfg_t *cfg)
{
    const char *label = ctx->label;
    gpurun_job_t *job = gpurun_xcalloc(1, sizeof *job);
    job->path = gpurun_xstrdup(label);
    const char *slash = strrchr(label, '/');
    job->dir = !slash           ? gpurun_xstrdup(".")
               : slash == label ? gpurun_xstrdup("/")
                                : gpurun_xstrndup(label, (size_t)(slash - label));
    if (cfg_getstr(cfg, "job")) {
        job->name = gpurun_xstrdup(cfg_getstr(cfg, "job"));
    } else {
        job->name = gpurun_conf_label_name(label);
        if (!*job->name) {
            free(job->name);
            job->name = gpurun_xstrdup("job");
        }
    }
    job->template_name = gpurun_conf_strdup(cfg_getstr(cfg, "template"));
    job->command = gpurun_conf_strdup(cfg_getstr(cfg, "command"));
    job->site = gpurun_conf_strdup(cfg_getstr(cfg, "site"));
    job->nodes = (int)cfg_getint(cfg, "nodes");
    job->ranks_per_node = (int)cfg_getint(cfg, "ranks_per_node");
    job->gpus_per_rank = (int)cfg_getint(cfg, "gpus_per_rank");
    job->threads_per_rank = (int)cfg_getint(cfg, "threads_per_rank");
    job->smt = cfg_getbool(cfg, "smt");
    job->oversubscribe = cfg_getbool(cfg, "oversubscribe");
    job->ranks_per_gpu = (int)cfg_getint(cfg, "ranks_per_gpu");
    job->mps = (enum gpurun_mps_mode)cfg_getint(cfg, "mps");
    job->launcher = gpurun_xstrdup(cfg_getstr(cfg, "launcher"));
    job->monitor = gpurun_xstrdup(cfg_getstr(cfg, "monitor"));
    job->bind = (enum gpurun_bind)cfg_getint(cfg, "bind");
    job->gpu_visibility = (enum gpurun_gpu_visibility)cfg_getint(cfg, "gpu_visibility");
    job->cpu_locality = (enum gpurun_cpu_locality)cfg_getint(cfg, "cpu_locality");
    job->gpudirect = (enum gpurun_gpudirect)cfg_getint(cfg, "gpudirect");
    job->timeout_s = cfg_getint(cfg, "timeout");
    job->progress_interval_s = cfg_getint(cfg, "progress_interval");
    job->stall_after_s = cfg_getint(cfg, "stall_after");
    job->on_stall = (enum gpurun_on_stall)cfg_getint(cfg, "on_stall");
    job->repeat = (int)cfg_getint(cfg, "repeat");
    job->results = gpurun_xstrdup(cfg_getstr(cfg, "results"));
    job->run_folder_mode = (enum gpurun_run_folder_mode)cfg_getint(cfg, "run_folder_mode");
    job->output = (enum gpurun_output)cfg_getint(cfg, "output");
    gpurun_conf_take_kvlist(cfg, "params", &job->params);
    gpurun_conf_origins(ctx, &job->from);
    gpurun_conf_take_kvlist(cfg, "env", &job->env);
    for (size_t i = 0; i < job->env.n; i++) { /* checked by check_env(): every ${VAR} is set */
        char *v = NULL;
        gpurun_error_t e = {0};
        if (gpurun_expand(job->env.items[i].value, launch_env, NULL, NULL, &v, &e) == 0) {
            free(job->env.items[i].value);
            job->env.items[i].value = v;
        }
    }
    const char *const *managers = manager_names();
    while (managers[job->nmanagers])
        job->nmanagers++;
    job->managers = gpurun_xcalloc(job->nmanagers + 1, sizeof *job->managers);
    for (size_t i = 0; i < job->nmanagers; i++) {
        job->managers[i].name = gpurun_xstrdup(managers[i]);
        gpurun_conf_take_kvlist(cfg, managers[i], &job->managers[i].options);
    }
    gpurun_conf_take_kvlist(cfg, "references", &job->references);
    take_scan(ctx, cfg, job);
    take_tune(ctx, cfg, job);
    gpurun_container_take(ctx, cfg, &job->container);
    return job;
}

/* Pass 3.  A --set assignment alone (ctx->prefix) gets the checks of its
 * own value: gpurun_job_set() checks what needs the whole job. */
static void check_job(struct gpurun_conf_ctx *ctx, cfg_t *cfg, bool complete)
{
    check_strings(ctx, cfg);
    check_scan(ctx, cfg);
    check_tune(ctx, cfg);
    check_env(ctx, cfg);
    gpurun_container_check(ctx, cfg);
    if (ctx->prefix)
        return;
    check_file_job_name(ctx, cfg);
    check_contradictions(ctx, cfg);
    if (complete) /* unset names need the whole file */
        check_command_names(ctx, cfg);
}

/* ---- entry points ----------------------------------------------------- */

/* The params.NAME keys of scan { } and tune { }, which only the file
 * names: a string list each, added to that section's schema (after pass 1,
 * from its records).  Holds the arrays until the read is done. */
static const char *const param_sections[] = {"scan", "tune"};
#define NPARAM_SECTIONS (sizeof param_sections / sizeof *param_sections)
struct params_schema {
    cfg_opt_t *top, *sub[NPARAM_SECTIONS];
};

/* `section`'s options (`sec`) with its params.NAME keys added; NULL when
 * the file gives none.  Bounded by the file's records (check_tune bounds
 * tune's). */
static cfg_opt_t *section_with_params(const struct gpurun_conf_ctx *ctx, const cfg_opt_t *sec, const char *section)
{
    size_t nparams = 0, nsub = 0;
    for (size_t i = 0; i < ctx->nrecs; i++)
        nparams += !strcmp(ctx->recs[i].section, section) && !ctx->recs[i].is_section &&
                   is_scan_param(ctx->recs[i].key);
    if (!nparams)
        return NULL;
    while (sec->subopts[nsub].name)
        nsub++;
    cfg_opt_t *sub = gpurun_xcalloc(nsub + nparams + 1, sizeof *sub);
    memcpy(sub, sec->subopts, nsub * sizeof *sub);
    size_t n = nsub;
    for (size_t i = 0; i < ctx->nrecs; i++) {
        const struct gpurun_conf_record *r = &ctx->recs[i];
        if (strcmp(r->section, section) != 0 || r->is_section || !is_scan_param(r->key) ||
            !gpurun_conf_key_name_ok(r->key + 7))
            continue;
        bool seen = false; /* twice: the duplicates check says so */
        for (size_t j = nsub; j < n && !seen; j++)
            seen = !strcmp(sub[j].name, r->key);
        if (!seen)
            sub[n++] = (cfg_opt_t)CFG_STR_LIST((char *)r->key, NULL, CFGF_NONE);
    }
    sub[n] = (cfg_opt_t)CFG_END();
    return sub;
}

static cfg_opt_t *params_schema(const struct gpurun_conf_ctx *ctx, cfg_opt_t *schema, void *data)
{
    struct params_schema *ps = data;
    size_t ntop = 0;
    while (schema[ntop].name)
        ntop++;
    bool any = false;
    for (size_t k = 0; k < NPARAM_SECTIONS; k++) {
        size_t at = 0;
        while (at < ntop && strcmp(schema[at].name, param_sections[k]) != 0)
            at++;
        if (at == ntop)
            continue;
        ps->sub[k] = section_with_params(ctx, &schema[at], param_sections[k]);
        if (!ps->sub[k])
            continue;
        if (!any) {
            ps->top = gpurun_xcalloc(ntop + 1, sizeof *ps->top);
            memcpy(ps->top, schema, (ntop + 1) * sizeof *ps->top);
            any = true;
        }
        ps->top[at].subopts = ps->sub[k];
    }
    return any ? ps->top : NULL;
}

/* `set_prefix`: the text is a --set assignment written as a file; its
 * errors read "PREFIX: WHAT", and the checks that need the whole job are
 * left to gpurun_job_set(). */
static int parse_job(const char *text, size_t len, const char *label, const char *set_prefix,
                     gpurun_job_t **jobp, gpurun_error_t *err)
{
    /* The schema.  Local: cfg_init() copies it. */
    cfg_opt_t scan_opts[] = {
        CFG_INT_LIST_CB("nodes", NULL, CFGF_NONE, cb_int),
        CFG_INT_LIST_CB("ranks_per_node", NULL, CFGF_NONE, cb_int),
        CFG_INT_LIST_CB("gpus_per_rank", NULL, CFGF_NONE, cb_int),
        CFG_INT_LIST_CB("threads_per_rank", NULL, CFGF_NONE, cb_int),
        CFG_END(),
    };
    /* tune { }: the layout keys scan takes and ranks_per_gpu (the
     * params.NAME keys of both come from params_schema()). */
    cfg_opt_t tune_opts[] = {
        CFG_INT_LIST_CB("nodes", NULL, CFGF_NONE, cb_int),
        CFG_INT_LIST_CB("ranks_per_node", NULL, CFGF_NONE, cb_int),
        CFG_INT_LIST_CB("gpus_per_rank", NULL, CFGF_NONE, cb_int),
        CFG_INT_LIST_CB("threads_per_rank", NULL, CFGF_NONE, cb_int),
        CFG_INT_LIST_CB("ranks_per_gpu", NULL, CFGF_NONE, cb_int),
        CFG_END(),
    };
    cfg_opt_t container_opts[] = GPURUN_CONTAINER_JOB_OPTS;
    cfg_opt_t opts[] = {
        CFG_STR("job", NULL, CFGF_NONE),
        CFG_STR("template", NULL, CFGF_NONE),
        CFG_STR("command", NULL, CFGF_NONE),
        CFG_STR("site", NULL, CFGF_NONE),
        CFG_INT_CB("nodes", 1, CFGF_NONE, cb_int),
        CFG_INT_CB("ranks_per_node", GPURUN_UNSET, CFGF_NONE, cb_int),
        CFG_INT_CB("gpus_per_rank", GPURUN_UNSET, CFGF_NONE, cb_int),
        CFG_INT_CB("threads_per_rank", GPURUN_UNSET, CFGF_NONE, cb_int),
        CFG_BOOL_CB("smt", cfg_false, CFGF_NONE, gpurun_conf_cb_bool),
        CFG_BOOL_CB("oversubscribe", cfg_false, CFGF_NONE, gpurun_conf_cb_bool),
        CFG_INT_CB("ranks_per_gpu", 1, CFGF_NONE, cb_int),
        CFG_INT_CB("mps", GPURUN_MPS_AUTO, CFGF_NONE, cb_enum),
        CFG_STR_CB("launcher", "auto", CFGF_NONE, cb_launcher),
        CFG_STR_CB("monitor", "auto", CFGF_NONE, cb_monitor),
        CFG_INT_CB("bind", GPURUN_BIND_CLOSEST, CFGF_NONE, cb_enum),
        CFG_INT_CB("gpu_visibility", GPURUN_GPUVIS_ISOLATE, CFGF_NONE, cb_enum),
        CFG_INT_CB("cpu_locality", GPURUN_CPULOC_PACKAGE, CFGF_NONE, cb_enum),
        CFG_INT_CB("gpudirect", GPURUN_GPUDIRECT_AUTO, CFGF_NONE, cb_enum),
        CFG_INT_CB("timeout", 0, CFGF_NONE, cb_timeout),
        CFG_INT_CB("progress_interval", PROGRESS_INTERVAL_DEFAULT, CFGF_NONE, cb_progress_interval),
        CFG_INT_CB("stall_after", GPURUN_STALL_AFTER_AUTO, CFGF_NONE, cb_stall_after),
        CFG_INT_CB("on_stall", GPURUN_ON_STALL_REPORT, CFGF_NONE, cb_enum),
        CFG_INT_CB("repeat", 1, CFGF_NONE, cb_int),
        CFG_STR("results", "results", CFGF_NONE),
        CFG_INT_CB("run_folder_mode", GPURUN_RUN_FOLDER_PRIVATE, CFGF_NONE, cb_enum),
        CFG_INT_CB("output", GPURUN_OUTPUT_PER_HOST, CFGF_NONE, cb_enum),
        CFG_SEC("params", NULL, CFGF_KEYSTRVAL),
        CFG_SEC("env", NULL, CFGF_KEYSTRVAL),
        CFG_SEC("references", NULL, CFGF_KEYSTRVAL),
        CFG_SEC("scan", scan_opts, CFGF_NONE),
        CFG_SEC("tune", tune_opts, CFGF_NONE),
        CFG_SEC("container", container_opts, CFGF_NONE),
        CFG_END(),
    };
    /* Then a section for each resource manager: slurm { }. */
    size_t nfixed = sizeof opts / sizeof *opts - 1, nm = 0;
    const char *const *managers = manager_names();
    while (managers[nm] && nm < SECTIONS_MAX)
        nm++;
    cfg_opt_t *schema = gpurun_xcalloc(nfixed + nm + 1, sizeof *schema);
    memcpy(schema, opts, nfixed * sizeof *schema);
    for (size_t i = 0; i < nm; i++)
        schema[nfixed + i] = (cfg_opt_t)CFG_SEC((char *)managers[i], NULL, CFGF_KEYSTRVAL);
    schema[nfixed + nm] = (cfg_opt_t)CFG_END();

    struct params_schema ps = {0};
    struct gpurun_conf_file f = {.label = label,
                                 .prefix = set_prefix,
                                 .what = "the job file",
                                 .schema = schema,
                                 .check = check_job,
                                 .convert = convert,
                                 .extend = params_schema,
                                 .data = &ps};
    void *job;
    int rc = gpurun_conf_read(&f, text, len, &job, err);
    free(schema);
    free(ps.top);
    for (size_t k = 0; k < NPARAM_SECTIONS; k++)
        free(ps.sub[k]);
    *jobp = job;
    return rc;
}

int gpurun_job_parse(const char *text, size_t len, const char *label, gpurun_job_t **jobp,
                     gpurun_error_t *err)
{
    return parse_job(text, len, label, NULL, jobp, err);
}

int gpurun_job_load(const char *path, gpurun_job_t **jobp, gpurun_error_t *err)
{
    char *text;
    size_t len;
    *jobp = NULL;
    if (gpurun_read_file(path, "job file", JOB_FILE_MAX, &text, &len, err) < 0)
        return -1;
    int rc = gpurun_job_parse(text, len, path, jobp, err);
    free(text);
    return rc;
}

/* ---- --set KEY=VALUE -------------------------------------------------- */

/* The value as a double-quoted libconfuse string: '"' and '\' escaped; the
 * scanner keeps `${` from libconfuse's expansion as it does in a file. */
static char *quoted(const char *value)
{
    char *q = gpurun_xmalloc(2 * strlen(value) + 3), *o = q;
    *o++ = '"';
    for (const char *p = value; *p; p++) {
        if (*p == '"' || *p == '\\')
            *o++ = '\\';
        *o++ = *p;
    }
    *o++ = '"';
    *o = '\0';
    return q;
}

/* The string keys of the job, NULL for the others. */
static char **str_field(gpurun_job_t *job, const char *key)
{
    return strcmp(key, "job") == 0        ? &job->name
           : strcmp(key, "template") == 0 ? &job->template_name
           : strcmp(key, "command") == 0  ? &job->command
           : strcmp(key, "site") == 0     ? &job->site
           : strcmp(key, "results") == 0  ? &job->results
           : strcmp(key, "launcher") == 0 ? &job->launcher
           : strcmp(key, "monitor") == 0  ? &job->monitor
                                          : NULL;
}

/* A value fixed by --set overrides the scan over that key: one run per
 * combination of the other axes. */
static void drop_scan_axis(gpurun_job_t *job, const char *key)
{
    for (size_t i = 0; i < job->nscan; i++) {
        if (strcmp(job->scan[i].key, key) != 0)
            continue;
        gpurun_axis_free(&job->scan[i]);
        memmove(&job->scan[i], &job->scan[i + 1], (job->nscan - i - 1) * sizeof *job->scan);
        job->nscan--;
        return;
    }
}

static bool scan_has(const gpurun_job_t *job, const char *key, bool (*pred)(long))
{
    for (size_t i = 0; i < job->nscan; i++)
        if (strcmp(job->scan[i].key, key) == 0)
            for (size_t v = 0; v < job->scan[i].n; v++)
                if (pred(job->scan[i].values[v]))
                    return true;
    return false;
}

/* The keys of the file's check_contradictions(), checked on the job as the
 * assignment of `key` would leave it (`next`; the job before it held). */
static int set_contradictions(const gpurun_job_t *next, const char *key, const char *prefix,
                              gpurun_error_t *err)
{
    struct gpurun_conf_shown a;
    bool is_tpl = strcmp(key, "template") == 0, is_cmd = strcmp(key, "command") == 0;
    if ((is_tpl || is_cmd) && next->template_name && next->command)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key '%s': contradicts '%s' (%s): a job runs a template or a "
                          "command, not both (--set %s= before this one drops the %s)",
                          prefix, key, is_cmd ? "template" : "command",
                          gpurun_conf_shown(&a, is_cmd ? next->template_name : next->command),
                          is_cmd ? "template" : "command", is_cmd ? "template" : "command");

    bool local = !strcmp(next->launcher, "local");
    if (local && next->nodes > 1 && strcmp(key, "launcher") == 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key 'launcher': contradicts 'nodes' (%d): launcher \"local\" runs "
                          "on this node only, nodes = %d",
                          prefix, next->nodes, next->nodes);
    if (local && next->nodes > 1 && strcmp(key, "nodes") == 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key 'nodes': contradicts 'launcher' (local): launcher \"local\" "
                          "runs on this node only, nodes = %d",
                          prefix, next->nodes);
    if (local && strcmp(key, "launcher") == 0 && scan_has(next, "nodes", more_than_one))
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key 'launcher': contradicts 'scan.nodes': launcher \"local\" runs "
                          "on this node only, the scan asks for more nodes",
                          prefix);

    bool is_rpg = strcmp(key, "ranks_per_gpu") == 0, is_gpr = strcmp(key, "gpus_per_rank") == 0;
    if (next->ranks_per_gpu > 1 && (next->gpus_per_rank > 1 || next->gpus_per_rank == 0) && (is_rpg || is_gpr))
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key '%s': contradicts '%s' (%d): ranks share %s GPU, gpus_per_rank = %d", prefix,
                          key, is_rpg ? "gpus_per_rank" : "ranks_per_gpu",
                          is_rpg ? next->gpus_per_rank : next->ranks_per_gpu,
                          next->gpus_per_rank ? "one" : "a", next->gpus_per_rank);
    if (next->ranks_per_gpu > 1 && is_rpg && scan_has(next, "gpus_per_rank", more_than_one))
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key 'ranks_per_gpu': contradicts 'scan.gpus_per_rank': ranks share one GPU each, "
                          "the scan has gpus_per_rank > 1",
                          prefix);

    bool shared = next->gpu_visibility == GPURUN_GPUVIS_SHARED;
    if (shared && next->gpus_per_rank == 0 && strcmp(key, "gpu_visibility") == 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key 'gpu_visibility': contradicts 'gpus_per_rank' (0): \"shared\" "
                          "chooses a GPU for each rank, gpus_per_rank = 0",
                          prefix);
    if (shared && next->gpus_per_rank == 0 && strcmp(key, "gpus_per_rank") == 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key 'gpus_per_rank': contradicts 'gpu_visibility' (shared): "
                          "\"shared\" chooses a GPU for each rank, gpus_per_rank = 0",
                          prefix);
    if (shared && strcmp(key, "gpu_visibility") == 0 && scan_has(next, "gpus_per_rank", is_zero))
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: key 'gpu_visibility': contradicts 'scan.gpus_per_rank': \"shared\" "
                          "chooses a GPU for each rank, the scan has gpus_per_rank = 0",
                          prefix);
    return 0;
}

/* Copy the top-level `key` of `from` (a job parsed from the assignment
 * alone) into `to`.  A string is moved out of `from` when `move`, else
 * only pointed to (`to` then borrows it and must not be destroyed). */
static void take_key(gpurun_job_t *to, gpurun_job_t *from, const char *key, bool move)
{
    char **to_s = str_field(to, key), **from_s = str_field(from, key);
    if (to_s && move) {
        free(*to_s);
        *to_s = *from_s;
        *from_s = NULL;
    } else if (to_s) {
        *to_s = *from_s;
    } else if (strcmp(key, "nodes") == 0)
        to->nodes = from->nodes;
    else if (strcmp(key, "ranks_per_node") == 0)
        to->ranks_per_node = from->ranks_per_node;
    else if (strcmp(key, "gpus_per_rank") == 0)
        to->gpus_per_rank = from->gpus_per_rank;
    else if (strcmp(key, "threads_per_rank") == 0)
        to->threads_per_rank = from->threads_per_rank;
    else if (strcmp(key, "smt") == 0)
        to->smt = from->smt;
    else if (strcmp(key, "oversubscribe") == 0)
        to->oversubscribe = from->oversubscribe;
    else if (strcmp(key, "ranks_per_gpu") == 0)
        to->ranks_per_gpu = from->ranks_per_gpu;
    else if (strcmp(key, "mps") == 0)
        to->mps = from->mps;
    else if (strcmp(key, "bind") == 0)
        to->bind = from->bind;
    else if (strcmp(key, "gpu_visibility") == 0)
        to->gpu_visibility = from->gpu_visibility;
    else if (strcmp(key, "cpu_locality") == 0)
        to->cpu_locality = from->cpu_locality;
    else if (strcmp(key, "gpudirect") == 0)
        to->gpudirect = from->gpudirect;
    else if (strcmp(key, "timeout") == 0)
        to->timeout_s = from->timeout_s;
    else if (strcmp(key, "progress_interval") == 0)
        to->progress_interval_s = from->progress_interval_s;
    else if (strcmp(key, "stall_after") == 0)
        to->stall_after_s = from->stall_after_s;
    else if (strcmp(key, "on_stall") == 0)
        to->on_stall = from->on_stall;
    else if (strcmp(key, "repeat") == 0)
        to->repeat = from->repeat;
    else if (strcmp(key, "run_folder_mode") == 0)
        to->run_folder_mode = from->run_folder_mode;
    else if (strcmp(key, "output") == 0)
        to->output = from->output;
}

struct gpurun_kvlist *gpurun_job_section(gpurun_job_t *job, const char *section)
{
    if (strcmp(section, "params") == 0)
        return &job->params;
    if (strcmp(section, "env") == 0)
        return &job->env;
    if (strcmp(section, "references") == 0)
        return &job->references;
    for (size_t i = 0; i < job->nmanagers; i++)
        if (!strcmp(job->managers[i].name, section))
            return &job->managers[i].options;
    return NULL;
}

const struct gpurun_kvlist *gpurun_job_manager_options(const gpurun_job_t *job, const char *manager)
{
    static const struct gpurun_kvlist none = {0};
    for (size_t i = 0; i < job->nmanagers; i++)
        if (!strcmp(job->managers[i].name, manager))
            return &job->managers[i].options;
    return &none;
}

static int parse_job(const char *text, size_t len, const char *label, const char *set_prefix,
                     gpurun_job_t **jobp, gpurun_error_t *err);

/* NAME = VALUE as a job file would have it, in the block SECTION (NULL: at
 * the top), parsed alone and so checked as the file's key would be: a job
 * of that one key, or NULL with err. */
static gpurun_job_t *parse_one_key(const char *section, const char *name, const char *value, const char *prefix,
                                   gpurun_error_t *err)
{
    char *q = quoted(value);
    char *text = section ? gpurun_xasprintf("%s {\n%s = %s\n}\n", section, name, q)
                         : gpurun_xasprintf("%s = %s\n", name, q);
    free(q);
    gpurun_job_t *one;
    int rc = parse_job(text, strlen(text), "--set", prefix, &one, err);
    free(text);
    return rc < 0 ? NULL : one;
}

/* container.image=..., container.runtime=...: the block's key, checked as
 * the file's would be (a relative image is relative to the current folder). */
static int set_container_key(gpurun_job_t *job, const char *prefix, const char *name, const char *value,
                             gpurun_error_t *err)
{
    gpurun_job_t *one = parse_one_key("container", name, value, prefix, err);
    if (!one)
        return -1;
    struct gpurun_container_spec *to = &job->container, *from = &one->container;
    char **field = !strcmp(name, "image") ? &to->image : !strcmp(name, "runtime") ? &to->runtime : NULL;
    if (field) {
        free(*field);
        *field = !strcmp(name, "image") ? from->image : from->runtime;
        if (!strcmp(name, "image"))
            from->image = NULL;
        else
            from->runtime = NULL;
        if (!to->dir) {
            to->dir = from->dir;
            from->dir = NULL;
        }
    } else { /* mounts: the list replaced */
        for (size_t i = 0; i < to->nmounts; i++)
            free(to->mounts[i]);
        free(to->mounts);
        to->mounts = from->mounts;
        to->nmounts = from->nmounts;
        from->mounts = NULL;
        from->nmounts = 0;
    }
    char *dotted = gpurun_xasprintf("container.%s", name);
    gpurun_kvlist_set(&job->from, dotted, prefix);
    free(dotted);
    gpurun_job_destroy(one);
    return 0;
}

/* SECTION.NAME=VALUE: one key of a free-form section, created or replaced;
 * a scan over params.NAME dropped unless `keep_scan`. */
static int set_section_key(gpurun_job_t *job, const char *prefix, const char *key,
                           const char *value, bool keep_scan, gpurun_error_t *err)
{
    struct gpurun_conf_shown a, b;
    const char *dot = strchr(key, '.');
    char *section = gpurun_xstrndup(key, (size_t)(dot - key));
    const char *name = dot + 1;
    int rc = -1;
    if (!strcmp(section, "container")) {
        free(section);
        return set_container_key(job, prefix, name, value, err);
    }
    if (!gpurun_job_section(job, section)) {
        const char *sections[SECTIONS_MAX];
        const char *near = gpurun_conf_closest(section, sections, free_sections(sections));
        if (strcmp(section, "scan") == 0)
            gpurun_err(err, GPURUN_EXIT_CONFIG,
                       "%s: key '%s': a scan is set in the job file; --set %s=VALUE fixes one "
                       "value",
                       prefix, gpurun_conf_shown(&a, key), gpurun_conf_shown(&b, name));
        else if (near)
            gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: unknown key '%s' (did you mean '%s.%s'?)",
                       prefix, gpurun_conf_shown(&a, key), near, gpurun_conf_shown(&b, name));
        else
            gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: unknown key '%s'", prefix,
                       gpurun_conf_shown(&a, key));
        goto out;
    }
    const char *why = gpurun_conf_key_problem(section, name);
    if (why) {
        gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key '%s': %s", prefix, gpurun_conf_shown(&a, key),
                   why);
        goto out;
    }
    gpurun_job_t *one = parse_one_key(section, name, value, prefix, err);
    if (one) {
        rc = 0;
        const struct gpurun_kvlist *got = gpurun_job_section(one, section);
        if (got->n == 1)
            gpurun_kvlist_set(gpurun_job_section(job, section), got->items[0].key, got->items[0].value);
        if (got->n == 1) {
            char *dotted = gpurun_xasprintf("%s.%s", section, got->items[0].key);
            gpurun_kvlist_set(&job->from, dotted, prefix);
            if (!keep_scan)
                drop_scan_axis(job, dotted);
            free(dotted);
        }
        gpurun_job_destroy(one);
    }
out:
    free(section);
    return rc;
}

/* The parameter of the job or of its template that a bare KEY that is no
 * job key most likely means (--set nsteps=100 for params.nsteps), or NULL;
 * to be freed. */
static char *param_meant(const gpurun_job_t *job, const char *key)
{
    gpurun_template_t *t = NULL;
    gpurun_error_t e;
    char *path;
    if (job->template_name && gpurun_template_find(job->template_name, job->dir, &path, &e) == 0) {
        if (gpurun_template_load(path, &t, &e) < 0)
            t = NULL;
        free(path);
    }
    size_t n = job->params.n + (t ? t->defaults.n : 0), k = 0;
    const char **names = gpurun_xcalloc(n + 1, sizeof *names);
    for (size_t i = 0; i < job->params.n; i++)
        names[k++] = job->params.items[i].key;
    for (size_t i = 0; t && i < t->defaults.n; i++)
        names[k++] = t->defaults.items[i].key;
    const char *near = gpurun_conf_closest(key, names, k);
    char *meant = near ? gpurun_xstrdup(near) : NULL;
    free(names);
    gpurun_template_destroy(t);
    return meant;
}

static int set_key(gpurun_job_t *job, const char *prefix, const char *key, const char *value,
                   bool keep_scan, gpurun_error_t *err)
{
    struct gpurun_conf_shown a;
    if (strchr(key, '.'))
        return set_section_key(job, prefix, key, value, keep_scan, err);
    const char *why = gpurun_conf_key_problem("", key);
    if (why)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key '%s': %s", prefix,
                          gpurun_conf_shown(&a, key), why);

    /* The keys a job may leave out: an empty value drops them, which is how
     * a command replaces the job's template. */
    char **optional =
        strcmp(key, "template") == 0 || strcmp(key, "command") == 0 || strcmp(key, "site") == 0
            ? str_field(job, key)
            : NULL;
    if (optional && !*value) {
        free(*optional);
        *optional = NULL;
        gpurun_kvlist_set(&job->from, key, prefix);
        return 0;
    }

    gpurun_job_t *one = parse_one_key(NULL, key, value, prefix, err);
    if (!one) {
        /* A parameter's name without "params.": said, before a job key's
         * near miss unless the parameter's is exact. */
        char *meant = strstr(err->text, ": unknown key '") ? param_meant(job, key) : NULL;
        if (meant && (!strcmp(meant, key) || !strstr(err->text, "(did you mean")))
            gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: unknown key '%s' (did you mean 'params.%s'?)", prefix,
                       gpurun_conf_shown(&a, key), meant);
        free(meant);
        return -1;
    }

    /* The job as the assignment would leave it, its strings borrowed. */
    gpurun_job_t next = *job;
    take_key(&next, one, key, false);
    size_t nscan = job->nscan;
    struct gpurun_axis *scan = gpurun_xcalloc(nscan, sizeof *scan);
    next.scan = scan;
    next.nscan = 0;
    for (size_t i = 0; i < nscan; i++)
        if (strcmp(job->scan[i].key, key) != 0)
            scan[next.nscan++] = job->scan[i];
    int rc = set_contradictions(&next, key, prefix, err);
    free(scan);

    if (rc == 0) {
        take_key(job, one, key, true);
        if (!keep_scan)
            drop_scan_axis(job, key);
        gpurun_kvlist_set(&job->from, key, prefix);
    }
    gpurun_job_destroy(one);
    return rc;
}

const char *gpurun_job_origin(const gpurun_job_t *job, const char *key)
{
    const char *from = gpurun_kvlist_get(&job->from, key);
    return from ? from : job->path ? job->path : job->name;
}

const char *gpurun_job_section_origin(const gpurun_job_t *job, const char *key)
{
    const char *dot = strchr(key, '.');
    size_t n = dot ? (size_t)(dot - key) : strlen(key);
    if (gpurun_kvlist_get(&job->from, key))
        return gpurun_kvlist_get(&job->from, key);
    for (size_t i = 0; i < job->from.n; i++)
        if (!strncmp(job->from.items[i].key, key, n) && job->from.items[i].key[n] == '.')
            return job->from.items[i].value;
    return job->path ? job->path : job->name;
}

int gpurun_job_locate(const gpurun_job_t *job, const char *key, gpurun_error_t *err)
{
    char *text = gpurun_xstrdup(err->text);
    struct gpurun_conf_shown a;
    gpurun_err(err, err->code, "%s: key '%s': %s", gpurun_job_origin(job, key), gpurun_conf_shown(&a, key), text);
    free(text);
    return -1;
}

int gpurun_job_set(gpurun_job_t *job, const char *assignment, gpurun_error_t *err)
{
    struct gpurun_conf_shown a;
    char *prefix = gpurun_xasprintf("--set %s", gpurun_conf_shown(&a, assignment));
    const char *eq = strchr(assignment, '=');
    int rc;
    if (!eq)
        rc = gpurun_err(err, GPURUN_EXIT_CONFIG,
                        "%s: '=' missing: expected KEY=VALUE, such as ranks_per_node=4", prefix);
    else if (eq == assignment)
        rc = gpurun_err(err, GPURUN_EXIT_CONFIG,
                        "%s: the key is missing: expected KEY=VALUE, such as ranks_per_node=4",
                        prefix);
    else {
        char *key = gpurun_xstrndup(assignment, (size_t)(eq - assignment));
        rc = set_key(job, prefix, key, eq + 1, false, err);
        free(key);
    }
    free(prefix);
    return rc;
}

int gpurun_job_set_scanned(gpurun_job_t *job, const char *assignment, const char *origin,
                           gpurun_error_t *err)
{
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment)
        return gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: '%s': expected KEY=VALUE", origin, assignment);
    char *key = gpurun_xstrndup(assignment, (size_t)(eq - assignment));
    int rc = set_key(job, origin, key, eq + 1, true, err);
    free(key);
    return rc;
}

void gpurun_job_destroy(gpurun_job_t *job)
{
    if (!job)
        return;
    free(job->path);
    free(job->dir);
    free(job->name);
    free(job->template_name);
    free(job->command);
    free(job->site);
    free(job->text_file);
    free(job->template_file);
    free(job->results);
    gpurun_kvlist_clear(&job->params);
    gpurun_kvlist_clear(&job->from);
    gpurun_kvlist_clear(&job->env);
    for (size_t i = 0; i < job->nmanagers; i++) {
        free(job->managers[i].name);
        gpurun_kvlist_clear(&job->managers[i].options);
    }
    free(job->managers);
    free(job->launcher);
    free(job->monitor);
    gpurun_kvlist_clear(&job->references);
    for (size_t i = 0; i < job->nscan; i++)
        gpurun_axis_free(&job->scan[i]);
    free(job->scan);
    for (size_t i = 0; i < job->ntune; i++)
        gpurun_axis_free(&job->tune[i]);
    free(job->tune);
    gpurun_container_spec_clear(&job->container);
    free(job);
}

const char *gpurun_mps_mode_name(enum gpurun_mps_mode m)
{
    return (size_t)m < sizeof mps_names / sizeof *mps_names - 1 ? mps_names[m] : "?";
}

