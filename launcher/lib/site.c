/* SPDX-License-Identifier: BSD-3-Clause */
/* Site profiles (SPEC §4): what a cluster's onboarding page tells a
 * newcomer, read with the job file's machinery (confparse.c) so that its
 * errors read "FILE:LINE: key 'KEY': WHAT" too.  Found as sites/NAME.conf on
 * the template search path.  Only this file sees libconfuse's cfg_t. */
#include "config.h"

#include <confuse.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confparse.h"
#include "container.h"
#include "site.h"
#include "template.h"
#include "util.h"

#define SITE_FILE_MAX (256 * 1024)
#define GPUS_PER_NODE_MAX 1024
#define CORES_PER_NODE_MAX 65536
#define PRICE_MAX 1000000.0 /* per GPU-hour: anything above is a typo */

/* ---- parse callbacks: each value checked as libconfuse reads it -------- */

/* The scheduler: a resource manager present (confparse.h), or none. */
static int cb_scheduler(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    static const char *const fixed[] = {"none", NULL};
    return gpurun_conf_plugin_name(cfg, opt, value, "rm", NULL, fixed, result);
}

static int cb_launcher(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    static const char *const fixed[] = {"auto", NULL};
    return gpurun_conf_plugin_name(cfg, opt, value, "launcher", fixed, NULL, result);
}

static int cb_gpus(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    return gpurun_conf_int_in(cfg, opt, value, 0, GPUS_PER_NODE_MAX, result);
}

/* A node has at least one core. */
static int cb_cores(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    return gpurun_conf_int_in(cfg, opt, value, 1, CORES_PER_NODE_MAX, result);
}

/* A plain decimal number: no hex, no inf/nan, no currency sign. */
static int cb_price(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    struct gpurun_conf_shown a;
    const char *p = value ? value : "";
    size_t i = *p == '-' || *p == '+' ? 1 : 0;
    bool ok = (p[i] >= '0' && p[i] <= '9') || (p[i] == '.' && p[i + 1] >= '0' && p[i + 1] <= '9');
    for (const char *c = p + i; ok && *c; c++)
        ok = (*c >= '0' && *c <= '9') || *c == '.' || *c == 'e' || *c == 'E' || *c == '-' ||
             *c == '+';
    char *end = NULL;
    errno = 0;
    double v = ok ? strtod(p, &end) : 0;
    if (!ok || *end || errno == ERANGE || !isfinite(v))
        return gpurun_conf_value_error(
            cfg, opt, "expected %s, got '%s'",
            !strcmp(opt->name, "grams_co2_per_kwh") ? "grams of CO2 per kWh such as 350 (a plain number)"
            : !strcmp(opt->name, "price_per_kwh")
                ? "a price per kWh such as 0.25 (a number without a currency sign: the key 'currency' names it)"
                : "a price per GPU-hour such as 4.50 (a number without a currency sign: the key 'currency' names it)",
            gpurun_conf_shown(&a, value));
    if (v < 0 || v > PRICE_MAX)
        return gpurun_conf_value_error(cfg, opt, "%s is out of range (0 to %.0f)",
                                       gpurun_conf_shown(&a, value), PRICE_MAX);
    *(double *)result = v;
    return 0;
}

/* ---- pass 3: checks that need the whole file --------------------------- */

static bool module_name_ok(const char *s)
{
    if (!*s || *s == '-' || *s == '/')
        return false;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              strchr("/._+-:@", *s)))
            return false;
    return true;
}

/* Each item of a string list: no control character, not empty, and what
 * `item_ok` wants (NULL when any text will do; `hint` says what). */
static void check_list(struct gpurun_conf_ctx *ctx, cfg_t *cfg, const char *key,
                       bool (*item_ok)(const char *), const char *hint)
{
    int line = gpurun_conf_record_line(ctx, key);
    unsigned n = line ? cfg_size(cfg, key) : 0;
    struct gpurun_conf_shown a;
    for (unsigned i = 0; i < n; i++) {
        const char *v = cfg_getnstr(cfg, key, i);
        char buf[128];
        const char *why = v ? gpurun_conf_value_problem(v, true, buf, sizeof buf) : NULL;
        if (why)
            gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK, "key '%s', item %u: %s", key, i + 1,
                             why);
        else if (v && item_ok && !item_ok(v))
            gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK, "key '%s', item %u: '%s' %s", key, i + 1,
                             gpurun_conf_shown(&a, v), hint);
    }
}

static bool batch_option_ok(const char *s)
{
    return s[0] == '-' && s[1] != '\0' && s[1] != ' ';
}

/* The managers' keys of batch options: pairs of key and hint (confparse.h's
 * "rm-site-options", the plugins present), NULL-terminated; none in a
 * program that loads no plugins. */
static const char *const *option_keys(void)
{
    static const char *const none[] = {NULL};
    const char *const *keys = gpurun_conf_plugin_names("rm-site-options");
    return keys ? keys : none;
}

static const char *const string_keys[] = {"description", "partition", "account", "scratch",
                                          "currency"};

/* `complete`: libconfuse read the whole file, so a key it lacks is missing. */
static void check_site(struct gpurun_conf_ctx *ctx, cfg_t *cfg, bool complete)
{
    struct gpurun_conf_shown a;
    gpurun_container_check(ctx, cfg);
    for (size_t i = 0; i < sizeof string_keys / sizeof *string_keys; i++)
        gpurun_conf_check_string(ctx, string_keys[i], cfg_getstr(cfg, string_keys[i]), true);
    if (complete && !cfg_getstr(cfg, "description"))
        gpurun_conf_note(ctx, GPURUN_CONF_NO_LINE, GPURUN_CONF_CHECK,
                         "key 'description' missing: one line naming the site and its machines");

    check_list(ctx, cfg, "modules", module_name_ok,
               "is not a module name (letters, digits, '/', '.', '_', '+', '-', ':', '@'; one "
               "module per item, as in \"cuda/12.4\")");
    for (const char *const *k = option_keys(); k[0] && k[1]; k += 2)
        check_list(ctx, cfg, k[0], batch_option_ok, k[1]);

    const char *scratch = cfg_getstr(cfg, "scratch");
    int line = gpurun_conf_record_line(ctx, "scratch");
    if (line && scratch && *scratch && scratch[0] != '/' && scratch[0] != '$')
        gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK,
                         "key 'scratch': '%s' is not an absolute path (a folder such as "
                         "\"/scratch/${USER}\")",
                         gpurun_conf_shown(&a, scratch));

    const char *cur = cfg_getstr(cfg, "currency");
    line = gpurun_conf_record_line(ctx, "currency");
    if (line && cur && *cur &&
        !(strlen(cur) == 3 && cur[0] >= 'A' && cur[0] <= 'Z' && cur[1] >= 'A' && cur[1] <= 'Z' &&
          cur[2] >= 'A' && cur[2] <= 'Z'))
        gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK,
                         "key 'currency': '%s' is not an ISO 4217 currency code (three capital "
                         "letters, such as USD or EUR)",
                         gpurun_conf_shown(&a, cur));

    /* What only a scheduler has, on a site without one. */
    const char *sched = cfg_getstr(cfg, "scheduler"); /* NULL: refused already */
    if (gpurun_conf_record_line(ctx, "scheduler") && sched && !strcmp(sched, "none")) {
        gpurun_conf_contradiction(ctx, "scheduler", "partition",
                                  "scheduler \"none\" has no partitions");
        gpurun_conf_contradiction(ctx, "scheduler", "account",
                                  "scheduler \"none\" has no accounts");
        for (const char *const *k = option_keys(); k[0] && k[1]; k += 2)
            gpurun_conf_contradiction(ctx, "scheduler", k[0], "scheduler \"none\" runs no batch scripts");
        /* A scheduler's own launch command: the program lists them
         * as kind "rm-launcher", pairs of the manager's name and its
         * launcher's (confparse.h). */
        const char *l = cfg_getstr(cfg, "launcher");
        const char *const *of_rm = gpurun_conf_plugin_names("rm-launcher");
        for (size_t i = 0; l && of_rm && of_rm[i] && of_rm[i + 1]; i += 2)
            if (!strcmp(l, of_rm[i + 1]))
                gpurun_conf_contradiction(ctx, "scheduler", "launcher", "%s needs scheduler \"%s\"", l, of_rm[i]);
    }
}

/* ---- conversion ------------------------------------------------------- */

static char **take_list(cfg_t *cfg, const char *key, size_t *np)
{
    *np = cfg_size(cfg, key);
    char **v = gpurun_xcalloc(*np + 1, sizeof *v);
    for (size_t i = 0; i < *np; i++)
        v[i] = gpurun_xstrdup(cfg_getnstr(cfg, key, (unsigned)i));
    return v;
}

/* The items of every manager's key of batch options, in the keys' order. */
static char **take_options(cfg_t *cfg, size_t *np)
{
    *np = 0;
    for (const char *const *k = option_keys(); k[0] && k[1]; k += 2)
        *np += cfg_size(cfg, k[0]);
    char **v = gpurun_xcalloc(*np + 1, sizeof *v);
    size_t n = 0;
    for (const char *const *k = option_keys(); k[0] && k[1]; k += 2)
        for (unsigned i = 0; i < cfg_size(cfg, k[0]) && n < *np; i++)
            v[n++] = gpurun_xstrdup(cfg_getnstr(cfg, k[0], i));
    return v;
}

static void *convert(const struct gpurun_conf_ctx *ctx, cfg_t *cfg)
{
    gpurun_site_t *s = gpurun_xcalloc(1, sizeof *s);
    s->path = gpurun_xstrdup(ctx->label);
    s->name = gpurun_conf_label_name(ctx->label);
    s->description = gpurun_xstrdup(cfg_getstr(cfg, "description"));
    s->scheduler = gpurun_xstrdup(cfg_getstr(cfg, "scheduler"));
    s->launcher = gpurun_xstrdup(cfg_getstr(cfg, "launcher"));
    s->partition = gpurun_conf_strdup(cfg_getstr(cfg, "partition"));
    s->account = gpurun_conf_strdup(cfg_getstr(cfg, "account"));
    s->modules = take_list(cfg, "modules", &s->nmodules);
    s->batch_options = take_options(cfg, &s->nbatch_options);
    s->gpus_per_node = (int)cfg_getint(cfg, "gpus_per_node");
    s->cores_per_node = (int)cfg_getint(cfg, "cores_per_node");
    gpurun_conf_origins(ctx, &s->from);
    s->scratch = gpurun_conf_strdup(cfg_getstr(cfg, "scratch"));
    s->price_per_gpu_hour = cfg_getfloat(cfg, "price_per_gpu_hour");
    s->spot_price_per_gpu_hour = cfg_getfloat(cfg, "spot_price_per_gpu_hour");
    s->currency = gpurun_xstrdup(cfg_getstr(cfg, "currency"));
    s->price_per_kwh = cfg_getfloat(cfg, "price_per_kwh");
    s->grams_co2_per_kwh = cfg_getfloat(cfg, "grams_co2_per_kwh");
    gpurun_container_take(ctx, cfg, &s->container);
    return s;
}

/* ---- entry points ----------------------------------------------------- */

int gpurun_site_parse(const char *text, size_t len, const char *label, gpurun_site_t **sp,
                      gpurun_error_t *err)
{
    /* The schema.  Local: cfg_init() copies it. */
    cfg_opt_t container_opts[] = GPURUN_CONTAINER_SITE_OPTS;
    cfg_opt_t opts[] = {
        CFG_STR("description", NULL, CFGF_NONE),
        CFG_STR_CB("scheduler", "none", CFGF_NONE, cb_scheduler),
        CFG_STR_CB("launcher", "auto", CFGF_NONE, cb_launcher),
        CFG_STR("partition", NULL, CFGF_NONE),
        CFG_STR("account", NULL, CFGF_NONE),
        CFG_STR_LIST("modules", NULL, CFGF_NONE),
        CFG_INT_CB("gpus_per_node", -1, CFGF_NONE, cb_gpus),
        CFG_INT_CB("cores_per_node", -1, CFGF_NONE, cb_cores),
        CFG_STR("scratch", NULL, CFGF_NONE),
        CFG_FLOAT_CB("price_per_gpu_hour", -1.0, CFGF_NONE, cb_price),
        CFG_FLOAT_CB("spot_price_per_gpu_hour", -1.0, CFGF_NONE, cb_price),
        CFG_STR("currency", "USD", CFGF_NONE),
        CFG_FLOAT_CB("price_per_kwh", -1.0, CFGF_NONE, cb_price),
        CFG_FLOAT_CB("grams_co2_per_kwh", -1.0, CFGF_NONE, cb_price),
        CFG_SEC("container", container_opts, CFGF_NONE),
        CFG_END(),
    };
    /* Then each manager's list of batch options (sbatch = {...}). */
    size_t nfixed = sizeof opts / sizeof *opts - 1, nk = 0;
    const char *const *keys = option_keys();
    while (keys[2 * nk] && keys[2 * nk + 1] && nk < 64)
        nk++;
    cfg_opt_t *schema = gpurun_xcalloc(nfixed + nk + 1, sizeof *schema);
    memcpy(schema, opts, nfixed * sizeof *schema);
    for (size_t i = 0; i < nk; i++)
        schema[nfixed + i] = (cfg_opt_t)CFG_STR_LIST((char *)keys[2 * i], NULL, CFGF_NONE);
    schema[nfixed + nk] = (cfg_opt_t)CFG_END();

    struct gpurun_conf_file f = {.label = label,
                                 .what = "the site profile",
                                 .schema = schema,
                                 .check = check_site,
                                 .convert = convert};
    void *site;
    int rc = gpurun_conf_read(&f, text, len, &site, err);
    free(schema);
    *sp = site;
    return rc;
}

static int site_read(const char *path, gpurun_site_t **sp, gpurun_error_t *err)
{
    char *text;
    size_t len;
    int rc = gpurun_read_file(path, "site profile", SITE_FILE_MAX, &text, &len, err);
    if (rc == 0) {
        rc = gpurun_site_parse(text, len, path, sp, err);
        free(text);
    }
    return rc;
}

/* SPEC §4: a site profile the administrator installed is not relaxed by a
 * file of the same name before it on the search path (beside the job, in
 * $GPURUN_TEMPLATE_PATH or ~/.config): that file is read, for its prices,
 * partitions and the rest, but the installed profile's allowed_mounts hold
 * too (a mount must lie in both lists).  An installed profile that cannot
 * be read stops the run (its policy is not known). */
static int keep_installed_policy(gpurun_site_t *s, const char *name, gpurun_error_t *err)
{
    char *admin;
    if (!gpurun_search_installed("sites", name, s->path, &admin))
        return 0;
    gpurun_site_t *a;
    if (site_read(admin, &a, err) < 0) {
        free(admin);
        gpurun_site_destroy(s);
        return -1;
    }
    if (a->container.nallowed) {
        if (!s->container.file) /* a profile without a container block: named in messages all the same */
            s->container.file = gpurun_xstrdup(s->path);
        s->container.admin_allowed = a->container.allowed;
        s->container.nadmin_allowed = a->container.nallowed;
        a->container.allowed = NULL;
        a->container.nallowed = 0;
        s->container.admin_file = admin;
        admin = NULL;
    }
    free(admin);
    gpurun_site_destroy(a);
    return 0;
}

int gpurun_site_load(const char *name, const char *job_dir, gpurun_site_t **sp, gpurun_error_t *err)
{
    char *path;
    *sp = NULL;
    if (gpurun_search_path_find("site", "sites", name, job_dir, &path, err) < 0)
        return -1;
    int rc = site_read(path, sp, err);
    free(path);
    if (rc == 0 && keep_installed_policy(*sp, name, err) < 0) {
        *sp = NULL;
        return -1;
    }
    return rc;
}

const char *gpurun_site_origin(const gpurun_site_t *s, const char *key)
{
    const char *from = gpurun_kvlist_get(&s->from, key);
    return from ? from : s->path;
}

void gpurun_site_destroy(gpurun_site_t *s)
{
    if (!s)
        return;
    gpurun_container_spec_clear(&s->container);
    gpurun_kvlist_clear(&s->from);
    free(s->path);
    free(s->name);
    free(s->description);
    free(s->scheduler);
    free(s->launcher);
    free(s->partition);
    free(s->account);
    for (size_t i = 0; i < s->nmodules; i++)
        free(s->modules[i]);
    free(s->modules);
    for (size_t i = 0; i < s->nbatch_options; i++)
        free(s->batch_options[i]);
    free(s->batch_options);
    free(s->scratch);
    free(s->currency);
    free(s);
}

int gpurun_site_for_job(const gpurun_job_t *job, gpurun_site_t **sp, gpurun_error_t *err)
{
    char *path;
    *sp = NULL;
    if (!job->site)
        return 0;
    if (gpurun_search_path_find("site", "sites", job->site, job->dir, &path, err) < 0)
        return gpurun_job_locate(job, "site", err);
    int rc = site_read(path, sp, err);
    free(path);
    if (rc == 0 && keep_installed_policy(*sp, job->site, err) < 0) {
        *sp = NULL;
        return -1;
    }
    return rc;
}
