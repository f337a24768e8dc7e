/* SPDX-License-Identifier: BSD-3-Clause */
/* gpurun templates: the templates (or, with --sites, the site profiles) a job
 * in this folder can name, as the search path finds them: the first
 * NAME.conf wins, later ones of the same name are shadowed. */
#include "config.h"

#include <dirent.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "cmd.h"
#include "confparse.h"
#include "results.h" /* gpurun_printable */
#include "site.h"
#include "template.h"
#include "template_base.h"
#include "util.h"

#define ENTRY_FILE_MAX (1024 * 1024)
#define ENTRIES_MAX 4096 /* per folder: a folder of thousands is not a template folder */

static const char templates_usage[] =
    "Usage: gpurun templates [--sites] [--json]\n"
    "\n"
    "List the templates a job in this folder can name (template = \"NAME\"), with their\n"
    "description and the file that is used, in search-path order: this folder,\n"
    "$GPURUN_TEMPLATE_PATH, ~/.config/gpurun/templates, the installed templates. The first\n"
    "NAME.conf found wins; later ones of the same name are shadowed.\n"
    "\n"
    "  --sites      list the site profiles (sites/NAME.conf on the same path) instead\n"
    "  --json       one JSON document (gpurun_templates: 1) instead of the table\n"
    "  -h, --help   this help\n"
    "\n"
    "A file in this folder that is not a template (a job file) is left out, with a warning\n"
    "when it hides a template of the same name. Exit status: 0 listed, 2 bad option.\n";

struct entry {
    char *name;
    char *path;
    char *error; /* NULL: read; else why it cannot be */
    json_t *info; /* description and, for sites, their keys */
    json_t *shadows;
};

struct listing {
    struct entry *v;
    size_t n;
};

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

static struct entry *find_entry(struct listing *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].name, name))
            return &l->v[i];
    return NULL;
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

/* Read one file as a template or a site profile: NULL and *why on failure. */
static json_t *read_entry(const char *path, bool sites, char **why)
{
    gpurun_error_t err = {0};
    char *text;
    size_t len;
    json_t *info = NULL;
    *why = NULL;
    if (gpurun_read_file(path, sites ? "site profile" : "template", ENTRY_FILE_MAX, &text, &len, &err) < 0) {
        *why = gpurun_xstrdup(err.text);
        return NULL;
    }
    if (sites) {
        gpurun_site_t *s;
        if (gpurun_site_parse(text, len, path, &s, &err) == 0) {
            info = json_pack("{s:o, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:s}", "description",
                             str_or_null(s->description), "scheduler", s->scheduler, "launcher", s->launcher,
                             "partition", str_or_null(s->partition), "account", str_or_null(s->account),
                             "gpus_per_node", s->gpus_per_node >= 0 ? json_integer(s->gpus_per_node) : json_null(),
                             "scratch", str_or_null(s->scratch), "price_per_gpu_hour",
                             s->price_per_gpu_hour >= 0 ? json_real(s->price_per_gpu_hour) : json_null(),
                             "spot_price_per_gpu_hour",
                             s->spot_price_per_gpu_hour >= 0 ? json_real(s->spot_price_per_gpu_hour) : json_null(),
                             "currency", s->currency ? s->currency : "");
            gpurun_site_destroy(s);
        }
    } else {
        gpurun_template_t *t = NULL;
        /* A base's figures and description are the template's too. */
        int rc = gpurun_template_parse(text, len, path, &t, &err);
        if (rc == 0)
            rc = gpurun_template_inherit(t, &err);
        if (rc == 0) {
            json_t *foms = json_array();
            for (size_t i = 0; i < t->nfoms; i++)
                json_array_append_new(foms, json_string(t->foms[i].name));
            info = json_pack("{s:o, s:o}", "description", str_or_null(t->description), "foms", foms);
        }
        gpurun_template_destroy(t);
    }
    free(text);
    if (!info)
        *why = gpurun_xstrdup(err.text);
    return info;
}

/* The NAME.conf files of one folder, names sorted (readdir's order is the
 * file system's). */
static char **conf_names(const char *dir, size_t *np)
{
    *np = 0;
    DIR *dp = opendir(dir);
    if (!dp)
        return NULL;
    char **names = NULL;
    struct dirent *de;
    while ((de = readdir(dp)) && *np < ENTRIES_MAX) {
        size_t len = strlen(de->d_name);
        if (len <= 5 || strcmp(de->d_name + len - 5, ".conf") != 0)
            continue;
        char *name = gpurun_xstrndup(de->d_name, len - 5);
        char *path = gpurun_xasprintf("%s/%s", dir, de->d_name);
        struct stat st;
        bool ok = gpurun_conf_plain_name_ok(name) && stat(path, &st) == 0 && S_ISREG(st.st_mode);
        free(path);
        if (!ok) {
            free(name);
            continue;
        }
        names = gpurun_xrealloc(names, (*np + 1) * sizeof *names);
        names[(*np)++] = name;
    }
    closedir(dp);
    for (size_t i = 1; i < *np; i++) /* few names: insertion sort */
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    return names;
}

/* `here` is the folder of the job (this folder): a file there that is not
 * a template is a job file, not a broken template. */
struct hidden {
    char *name, *path, *why;
};

static void list_folder(const char *dir, bool here, bool sites, struct listing *l, struct hidden **hid,
                        size_t *nhid)
{
    char *folder = sites ? gpurun_xasprintf("%s/sites", dir) : gpurun_xstrdup(dir);
    size_t n;
    char **names = conf_names(folder, &n);
    for (size_t i = 0; i < n; i++) {
        char *path = gpurun_xasprintf("%s/%s.conf", folder, names[i]);
        struct entry *e = find_entry(l, names[i]);
        if (e) { /* an earlier folder's wins */
            json_array_append_new(e->shadows, json_string(path));
            free(path);
            continue;
        }
        char *why;
        json_t *info = read_entry(path, sites, &why);
        if (!info && here) {
            *hid = gpurun_xrealloc(*hid, (*nhid + 1) * sizeof **hid);
            (*hid)[(*nhid)++] = (struct hidden){gpurun_xstrdup(names[i]), path, why};
            continue;
        }
        l->v = gpurun_xrealloc(l->v, (l->n + 1) * sizeof *l->v);
        l->v[l->n++] = (struct entry){gpurun_xstrdup(names[i]), path, why, info, json_array()};
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(folder);
}

/* A file of this folder that a job here would take for a template (or
 * site) found further on the path, and that is not one. */
static void warn_hidden(const struct listing *l, const struct hidden *hid, size_t nhid, bool sites)
{
    const char *what = sites ? "site profile" : "template";
    for (size_t h = 0; h < nhid; h++) {
        for (size_t i = 0; i < l->n; i++) {
            if (strcmp(l->v[i].name, hid[h].name))
                continue;
            char *p = gpurun_printable(hid[h].path), *q = gpurun_printable(l->v[i].path);
            fprintf(stderr,
                    "gpurun: warning: %s is not a %s, yet a job in this folder naming %s '%s' reads it, "
                    "not %s: rename it (a job file named after its template hides the template)\n",
                    p, what, what, hid[h].name, q);
            free(p);
            free(q);
        }
    }
}

static void print_table(const struct listing *l)
{
    size_t wn = 4, wd = 11;
    char **desc = gpurun_xcalloc(l->n + 1, sizeof *desc);
    for (size_t i = 0; i < l->n; i++) {
        const struct entry *e = &l->v[i];
        const char *d = e->info ? json_string_value(json_object_get(e->info, "description")) : NULL;
        char *shown = e->error ? gpurun_xasprintf("(cannot be read: %s)", e->error) : gpurun_xstrdup(d ? d : "-");
        desc[i] = gpurun_printable(shown);
        free(shown);
        if (strlen(e->name) > wn)
            wn = strlen(e->name);
        size_t cw = 0;
        for (const char *p = desc[i]; *p; p++)
            cw += ((unsigned char)*p & 0xc0) != 0x80;
        if (cw > wd && !e->error)
            wd = cw;
    }
    if (wd > 80)
        wd = 80;
    printf("%-*s  %-*s  %s\n", (int)wn, "NAME", (int)wd, "DESCRIPTION", "PATH");
    for (size_t i = 0; i < l->n; i++) {
        size_t cw = 0;
        for (const char *p = desc[i]; *p; p++)
            cw += ((unsigned char)*p & 0xc0) != 0x80;
        char *path = gpurun_printable(l->v[i].path);
        printf("%-*s  %s%*s  %s\n", (int)wn, l->v[i].name, desc[i], cw < wd ? (int)(wd - cw) : 0, "", path);
        free(path);
        free(desc[i]);
    }
    free(desc);
}

static json_t *listing_json(const struct listing *l, char **dirs, size_t ndirs, bool sites)
{
    json_t *path = json_array(), *items = json_array();
    for (size_t i = 0; i < ndirs; i++)
        if (sites) {
            char *d = gpurun_xasprintf("%s/sites", dirs[i]);
            json_array_append_new(path, json_string(d));
            free(d);
        } else {
            json_array_append_new(path, json_string(dirs[i]));
        }
    for (size_t i = 0; i < l->n; i++) {
        const struct entry *e = &l->v[i];
        json_t *o = json_pack("{s:s, s:s}", "name", e->name, "path", e->path);
        if (e->info)
            json_object_update(o, e->info);
        else
            json_object_set_new(o, "description", json_null());
        json_object_set_new(o, "error", str_or_null(e->error));
        json_object_set(o, "shadows", e->shadows);
        json_array_append_new(items, o);
    }
    return json_pack("{s:i, s:o, s:o}", "gpurun_templates", 1, "search_path", path, sites ? "sites" : "templates",
                     items);
}

int cmd_templates(int argc, char **argv, gpurun_error_t *err)
{
    enum { O_JSON = 1000, O_SITES };
    static const struct option opts[] = {
        {"json", no_argument, NULL, O_JSON},
        {"sites", no_argument, NULL, O_SITES},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false, sites = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_JSON: json = true; break;
        case O_SITES: sites = true; break;
        case 'h': fputs(templates_usage, stdout); return 0;
        default:
            return cmd_bad_option("templates", argv[optind - 1], opts, err);
        }
    }
    if (optind < argc) {
        gpurun_err(err, GPURUN_EXIT_CONFIG, "templates: no arguments expected, got '%s' (see gpurun templates --help)",
                   argv[optind]);
        return GPURUN_EXIT_CONFIG;
    }

    size_t ndirs;
    char **dirs = gpurun_search_path(".", &ndirs);
    struct listing l = {0};
    struct hidden *hid = NULL;
    size_t nhid = 0;
    /* One folder reached by two names ($GPURUN_TEMPLATE_PATH with "..", the
     * installed one through a link) is read once: its files shadow nothing. */
    char **real = gpurun_xcalloc(ndirs, sizeof *real);
    for (size_t i = 0; i < ndirs; i++) {
        real[i] = realpath(dirs[i], NULL);
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = real[i] && real[k] && !strcmp(real[i], real[k]);
        if (!seen)
            list_folder(dirs[i], i == 0, sites, &l, &hid, &nhid);
    }
    for (size_t i = 0; i < ndirs; i++)
        free(real[i]);
    free(real);
    if (l.n > 1)
        qsort(l.v, l.n, sizeof *l.v, entry_cmp);
    warn_hidden(&l, hid, nhid, sites);

    if (json) {
        json_t *doc = listing_json(&l, dirs, ndirs, sites);
        json_dumpf(doc, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(doc);
    } else if (l.n) {
        print_table(&l);
    } else {
        fprintf(stderr, "gpurun: no %s found; looked in", sites ? "site profiles" : "templates");
        for (size_t i = 0; i < ndirs; i++)
            fprintf(stderr, "%s %s%s", i ? "," : "", dirs[i], sites ? "/sites" : "");
        fprintf(stderr, " (GPURUN_TEMPLATE_PATH adds folders)\n");
    }

    for (size_t i = 0; i < l.n; i++) {
        free(l.v[i].name);
        free(l.v[i].path);
        free(l.v[i].error);
        json_decref(l.v[i].info);
        json_decref(l.v[i].shadows);
    }
    free(l.v);
    for (size_t h = 0; h < nhid; h++) {
        free(hid[h].name);
        free(hid[h].path);
        free(hid[h].why);
    }
    free(hid);
    gpurun_search_path_free(dirs, ndirs);
    return 0;
}
