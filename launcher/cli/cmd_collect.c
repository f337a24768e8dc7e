/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun collect: a template's figures of merit read from output that
 * already exists (a log from a run gpurun did not start, a run folder's
 * files), as a table or as JSON. */
#include "config.h"

#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd.h"
#include "fom.h"
#include "template.h"
#include "template_base.h"
#include "util.h"

static const char collect_usage[] =
    "Usage: gpurun collect --template NAME FILE... [--json]\n"
    "\n"
    "Read the figures of merit of template NAME (gromacs, lammps, hpl, ...) from each\n"
    "FILE, as a run of that template would, and print them: every value in file\n"
    "order when a file holds several runs.\n"
    "\n"
    "  -t, --template NAME  the template, found as for a job: ./NAME.conf,\n"
    "                       $GPURUN_TEMPLATE_PATH, ~/.config/gpurun/templates, then\n"
    "                       the installed templates\n"
    "      --json           one JSON document instead of the table\n"
    "  -h, --help           this help\n"
    "\n"
    "Exit status: 0 every file holds its figures and the template's sanity text;\n"
    "1 a file lacks a figure (one the template does not mark optional, or all of\n"
    "them) or the sanity text; 2 bad option, unknown template, unreadable file.\n";

/* The shortest text that reads back as the same double. */
static void fmt_value(char *buf, size_t len, double v)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

/* The values of one figure as "1.5, 2.25", or "-" when none. */
static char *values_text(const struct gpurun_fom_values *v)
{
    if (!v->n)
        return gpurun_xstrdup("-");
    size_t cap = v->n * 26 + 1, len = 0;
    char *s = gpurun_xmalloc(cap);
    s[0] = '\0';
    for (size_t i = 0; i < v->n; i++) {
        char num[32];
        fmt_value(num, sizeof num, v->values[i]);
        len += (size_t)snprintf(s + len, cap - len, "%s%s", i ? ", " : "", num);
    }
    return s;
}

struct file_result {
    const char *file;
    int sanity;      /* 1 passed (or none asked), 0 failed, -1 unreadable */
    char why[1024];  /* why it failed */
    size_t found;    /* figures found */
    size_t missing;  /* figures the template requires that were not found */
};

static void print_table(const gpurun_template_t *t, const gpurun_foms_t *foms, size_t nfiles)
{
    size_t nf = t->nfoms;
    size_t wfile = 4, wfom = 3, wval = 5;
    char **vals = gpurun_xcalloc(foms->n ? foms->n : 1, sizeof *vals);
    for (size_t i = 0; i < foms->n; i++) {
        vals[i] = values_text(&foms->f[i]);
        size_t a = strlen(foms->f[i].file), b = strlen(foms->f[i].name), c = strlen(vals[i]);
        wfile = a > wfile ? a : wfile;
        wfom = b > wfom ? b : wfom;
        wval = c > wval ? c : wval;
    }
    printf("%-*s  %-*s  %-*s  %s\n", (int)wfile, "file", (int)wfom, "fom", (int)wval, "value", "units");
    for (size_t k = 0; k < nfiles; k++)
        for (size_t j = 0; j < nf; j++) {
            size_t i = k * nf + j;
            const struct gpurun_fom_values *v = &foms->f[i];
            printf("%-*s  %-*s  %-*s  %s%s\n", (int)wfile, v->file, (int)wfom, v->name, (int)wval, vals[i],
                   v->units ? v->units : "",
                   v->n ? "" : v->optional ? "  (not found; optional)" : "  (not found)");
        }
    for (size_t i = 0; i < foms->n; i++) {
        if (foms->f[i].note)
            printf("note: %s: %s: %s\n", foms->f[i].file, foms->f[i].name, foms->f[i].note);
        free(vals[i]);
    }
    free(vals);
}

static json_t *collect_json(const gpurun_template_t *t, const gpurun_foms_t *foms, const struct file_result *res,
                            size_t nfiles, bool ok)
{
    json_t *files = json_array();
    size_t nf = t->nfoms;
    for (size_t k = 0; k < nfiles; k++) {
        gpurun_foms_t one = {.f = foms->f + k * nf, .n = nf};
        json_t *f = json_pack("{s:s, s:o, s:o}", "file", res[k].file, "sanity",
                              t->nsanity || t->nfailure ? json_boolean(res[k].sanity == 1) : json_null(), "foms",
                              gpurun_foms_json(&one));
        json_array_append_new(files, f);
    }
    return json_pack("{s:i, s:s, s:s, s:s?, s:o, s:b}", "gpurun_collect", 1, "template", t->name, "template_path",
                     t->path, "sanity_text", t->sanity, "files", files, "ok", ok);
}

/* The options: the template's name, --json; the files follow (optind). */
static int collect_options(int argc, char **argv, const char **name, bool *json, gpurun_error_t *err)
{
    enum { O_JSON = 1000 };
    static const struct option opts[] = {
        {"template", required_argument, NULL, 't'},
        {"json", no_argument, NULL, O_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 0; /* a full restart (glibc, musl): tests call commands again */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "t:h", opts, NULL)) != -1) {
        switch (c) {
        case 't': *name = optarg; break;
        case O_JSON: *json = true; break;
        case 'h': fputs(collect_usage, stdout); return 1;
        default:
            cmd_bad_option("collect", argv[optind - 1], opts, err);
            return -1;
        }
    }
    if (!*name)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "collect: which template? Usage: gpurun collect --template NAME FILE... [--json]");
    if (optind >= argc)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "collect: no file to read. Usage: gpurun collect --template %s FILE...", *name);
    return 0;
}

static int collect_template(const char *name, gpurun_template_t **tp, gpurun_error_t *err)
{
    char *path = NULL;
    gpurun_template_t *t = NULL;
    if (gpurun_template_find(name, ".", &path, err) < 0 || gpurun_template_load(path, &t, err) < 0) {
        free(path);
        err->code = GPURUN_EXIT_CONFIG;
        return -1;
    }
    free(path);
    if (t->nfoms == 0) {
        gpurun_err(err, GPURUN_EXIT_CONFIG, "collect: template '%s' (%s) reads no figure of merit", t->name,
                   t->path);
        gpurun_template_destroy(t);
        return -1;
    }
    *tp = t;
    return 0;
}

/* Each file's sanity and which figures it gave; true when all are good. */
static bool collect_check(const gpurun_template_t *t, const gpurun_foms_t *foms, char *const *files, size_t nfiles,
                          struct file_result *res)
{
    bool ok = true;
    for (size_t k = 0; k < nfiles; k++) {
        res[k].file = files[k];
        res[k].sanity = gpurun_sanity_file_check(t, files[k], res[k].why, sizeof res[k].why);
        for (size_t j = 0; j < t->nfoms; j++) {
            const struct gpurun_fom_values *v = &foms->f[k * t->nfoms + j];
            if (v->n)
                res[k].found++;
            else if (!v->optional)
                res[k].missing++;
        }
        ok = ok && res[k].sanity == 1 && res[k].found && !res[k].missing;
    }
    return ok;
}

/* What was wrong with each file, on stderr after the table. */
static void collect_warnings(const gpurun_template_t *t, const gpurun_foms_t *foms, const struct file_result *res,
                             size_t nfiles)
{
    /* A regex that took too long, dropped (util.h): the files after it were not read with it. */
    for (size_t i = 0; i < t->regex_budget->nnotes; i++)
        fprintf(stderr, "gpurun: collect: warning: template '%s': %s\n", t->name, t->regex_budget->notes[i]);
    for (size_t k = 0; k < nfiles; k++) {
        if (!res[k].found)
            fprintf(stderr, "gpurun: collect: %s: no figure of merit of template '%s' found\n", res[k].file,
                    t->name);
        else if (res[k].missing)
            for (size_t j = 0; j < t->nfoms; j++) {
                const struct gpurun_fom_values *v = &foms->f[k * t->nfoms + j];
                if (!v->n && !v->optional)
                    fprintf(stderr, "gpurun: collect: %s: figure '%s' not found\n", res[k].file, v->name);
            }
        if (res[k].sanity != 1)
            fprintf(stderr, "gpurun: collect: %s: sanity check of template '%s': %s\n", res[k].file, t->name,
                    res[k].why);
    }
}

int cmd_collect(int argc, char **argv, gpurun_error_t *err)
{
    const char *name = NULL;
    bool json = false;
    int rc = collect_options(argc, argv, &name, &json, err);
    if (rc != 0)
        return rc > 0 ? 0 : err->code;
    char *const *files = argv + optind;
    size_t nfiles = (size_t)(argc - optind);
    gpurun_template_t *t = NULL;
    if (collect_template(name, &t, err) < 0)
        return GPURUN_EXIT_CONFIG;

    /* argv is NULL-terminated after the files, as gpurun_fom_read wants. */
    gpurun_foms_t foms;
    if (gpurun_fom_read(t, ".", NULL, NULL, files, &foms, err) < 0) {
        char text[sizeof err->text];
        memcpy(text, err->text, sizeof text);
        gpurun_err(err, GPURUN_EXIT_CONFIG, "collect: %.2000s", text);
        gpurun_template_destroy(t);
        return GPURUN_EXIT_CONFIG;
    }
    struct file_result *res = gpurun_xcalloc(nfiles, sizeof *res);
    bool ok = collect_check(t, &foms, files, nfiles, res);
    if (json) {
        json_t *doc = collect_json(t, &foms, res, nfiles, ok);
        char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
        puts(s ? s : "{}");
        free(s);
        json_decref(doc);
    } else {
        print_table(t, &foms, nfiles);
    }
    fflush(stdout);
    collect_warnings(t, &foms, res, nfiles);
    free(res);
    gpurun_foms_free(&foms);
    gpurun_template_destroy(t);
    return ok ? 0 : GPURUN_EXIT_CHECK;
}
