/* SPDX-License-Identifier: BSD-3-Clause */
/* Containers: the `container { }` block and the runtimes' command lines.
 * See container.h for the design (the head builds the command line, the
 * rank step execs it inside its binding). */
#include "config.h"

#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "confparse.h"
#include "container.h"
#include "runfolder.h" /* GPURUN_INSIDE_FD */
#include "results.h" /* gpurun_printable */
#include "util.h"

/* In the order `auto` tries them; the program each runs. */
static const struct runtime {
    const char *name, *program, *install;
} runtimes[] = {
    {"apptainer", "apptainer", "Apptainer (https://apptainer.org; packages 'apptainer' in EPEL and the PPA)"},
    {"singularity", "singularity", "SingularityCE (https://sylabs.io; package 'singularity-ce')"},
    {"charliecloud", "ch-run", "Charliecloud (package 'charliecloud', or spack install charliecloud)"},
    {"podman", "podman", "Podman (package 'podman')"},
    /* Not a program of its own (program NULL): a resource manager's launch
     * command enters the image before each task starts (its plugin says
     * which, gpurun_container_set_managers()). */
    {"pyxis", NULL, NULL},
};
#define NRUNTIMES (sizeof runtimes / sizeof *runtimes)
#define NRUNTIMES_ON_PATH (NRUNTIMES - 1) /* what `auto` looks for on PATH */
static const char *const runtime_names[] = {"auto", "apptainer", "singularity", "charliecloud", "podman", "pyxis"};

static const struct runtime *runtime_named(const char *name)
{
    for (size_t i = 0; i < NRUNTIMES; i++)
        if (!strcmp(runtimes[i].name, name))
            return &runtimes[i];
    return NULL;
}

/* ---- checking the block ------------------------------------------------ */

static char *file_dir(const char *label)
{
    const char *slash = strrchr(label, '/');
    return !slash          ? gpurun_xstrdup(".")
           : slash == label ? gpurun_xstrdup("/")
                            : gpurun_xstrndup(label, (size_t)(slash - label));
}

static char *under(const char *dir, const char *p)
{
    return p[0] == '/' ? gpurun_xstrdup(p) : gpurun_xasprintf("%s/%s", dir, p);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* A file or folder, not a reference such as docker://nvcr.io/hpc/gromacs:2023.2
 * or nvcr.io/hpc/gromacs:2023.2 that the runtime pulls or finds in its store. */
static bool image_is_path(const char *image, const char *dir)
{
    if (strstr(image, "://"))
        return false;
    if (image[0] == '/' || !strncmp(image, "./", 2) || !strncmp(image, "../", 3))
        return true;
    static const char *const suffixes[] = {".sif", ".simg", ".sqfs", ".squashfs", ".img"};
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++)
        if (ends_with(image, suffixes[i]))
            return true;
    char *p = under(dir, image);
    struct stat st;
    bool there = stat(p, &st) == 0;
    free(p);
    return there;
}

/* A mount "SRC" or "SRC:DST": one ':' at most (it separates them), no ','
 * (apptainer's --bind and podman's -v read it as a list or an option). */
static const char *mount_problem(const char *m, const char *dir, bool must_exist, char *buf, size_t size)
{
    const char *colon = strchr(m, ':');
    if (strchr(m, ','))
        return "',' in a path: apptainer and podman would read it as two mounts or an option; "
               "mount a folder whose path has none";
    if (colon && strchr(colon + 1, ':'))
        return "':' in a path: a mount is \"SRC\" or \"SRC:DST\", and ':' separates the two";
    if (colon == m || (colon && !colon[1]))
        return "empty path: a mount is \"SRC\" or \"SRC:DST\"";
    if (colon && colon[1] != '/')
        return "the destination is not an absolute path";
    char *src = colon ? gpurun_xstrndup(m, (size_t)(colon - m)) : gpurun_xstrdup(m);
    char *p = under(dir, src);
    struct stat st;
    const char *why = NULL;
    if (must_exist && stat(p, &st) < 0) {
        snprintf(buf, size, "%s does not exist (%s)", p, strerror(errno));
        why = buf;
    }
    free(src);
    free(p);
    return why;
}

void gpurun_container_check(struct gpurun_conf_ctx *ctx, cfg_t *cfg)
{
    cfg_t *sec = cfg_getsec(cfg, "container");
    if (!sec || !gpurun_conf_find_record(ctx, "container"))
        return;
    struct gpurun_conf_shown a, b;
    char *dir = file_dir(ctx->label);
    /* A site profile describes the cluster's nodes, not this one: its
     * folders need not exist where the profile is read. */
    bool site = !cfg_getopt(sec, "image");
    const char *image = site ? NULL : cfg_getstr(sec, "image");
    int line = gpurun_conf_record_line(ctx, "container.image");
    gpurun_conf_check_string(ctx, "container.image", image, true);
    if (line && image && *image && !strchr(image, '\n') && image_is_path(image, dir)) {
        char *p = under(dir, image);
        struct stat st;
        if (stat(p, &st) < 0)
            gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK,
                             "key 'container.image': the image %s does not exist (%s); a relative path "
                             "starts at the file's folder, a registry image is written as "
                             "docker://REGISTRY/NAME:TAG",
                             gpurun_conf_shown(&a, p), strerror(errno));
        else if (strchr(p, ':') || strchr(p, ','))
            gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK,
                             "key 'container.image': ':' or ',' in the image's path %s: the runtimes' "
                             "options cannot carry it",
                             gpurun_conf_shown(&a, p));
        free(p);
    }
    const char *rt = cfg_getstr(sec, "runtime");
    line = gpurun_conf_record_line(ctx, "container.runtime");
    if (line && rt) {
        bool known = false;
        for (size_t i = 0; i < sizeof runtime_names / sizeof *runtime_names; i++)
            known = known || !strcmp(rt, runtime_names[i]);
        const char *near = known ? NULL
                                 : gpurun_conf_closest(rt, runtime_names, sizeof runtime_names / sizeof *runtime_names);
        if (!known)
            gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK,
                             "key 'container.runtime': unknown runtime '%s'%s%s%s (one of auto, apptainer, "
                             "singularity, charliecloud, podman, pyxis)",
                             gpurun_conf_shown(&a, rt), near ? " (did you mean '" : "", near ? near : "",
                             near ? "'?)" : "");
    }
    static const char *const lists[] = {"mounts", "allowed_mounts"};
    for (size_t l = 0; l < sizeof lists / sizeof *lists; l++) {
        if (!cfg_getopt(sec, lists[l]))
            continue;
        char key[64];
        snprintf(key, sizeof key, "container.%s", lists[l]);
        line = gpurun_conf_record_line(ctx, key);
        unsigned n = line ? cfg_size(sec, lists[l]) : 0;
        for (unsigned i = 0; i < n; i++) {
            const char *m = cfg_getnstr(sec, lists[l], i);
            char buf[512];
            const char *why = m ? gpurun_conf_value_problem(m, true, buf, sizeof buf) : NULL;
            if (!why && m && l == 0)
                why = mount_problem(m, dir, !site, buf, sizeof buf);
            else if (!why && m && (m[0] != '/' || strchr(m, ':') || strchr(m, ',')))
                why = "not an absolute folder path without ':' or ','";
            if (why)
                gpurun_conf_note(ctx, line, GPURUN_CONF_CHECK, "key '%s', item %u ('%s'): %s", key, i + 1,
                                 gpurun_conf_shown(&b, m), why);
        }
    }
    free(dir);
}

static char **take_list(cfg_t *sec, const char *key, size_t *np)
{
    *np = cfg_getopt(sec, key) ? cfg_size(sec, key) : 0;
    char **v = gpurun_xcalloc(*np + 1, sizeof *v);
    for (size_t i = 0; i < *np; i++)
        v[i] = gpurun_xstrdup(cfg_getnstr(sec, key, (unsigned)i));
    return v;
}

void gpurun_container_take(const struct gpurun_conf_ctx *ctx, cfg_t *cfg, struct gpurun_container_spec *spec)
{
    memset(spec, 0, sizeof *spec);
    cfg_t *sec = cfg_getsec(cfg, "container");
    if (!sec || !gpurun_conf_find_record(ctx, "container"))
        return;
    spec->dir = file_dir(ctx->label);
    spec->image = cfg_getopt(sec, "image") ? gpurun_conf_strdup(cfg_getstr(sec, "image")) : NULL;
    spec->runtime = gpurun_conf_strdup(cfg_getstr(sec, "runtime"));
    spec->mounts = take_list(sec, "mounts", &spec->nmounts);
    spec->allowed = take_list(sec, "allowed_mounts", &spec->nallowed);
    int line = gpurun_conf_record_line(ctx, "container.mounts");
    spec->mounts_from = line ? gpurun_xasprintf("%s:%d", ctx->label, line) : gpurun_xstrdup(ctx->label);
    spec->file = gpurun_xstrdup(ctx->label);
}

void gpurun_container_spec_clear(struct gpurun_container_spec *spec)
{
    if (!spec)
        return;
    free(spec->image);
    free(spec->runtime);
    for (size_t i = 0; i < spec->nmounts; i++)
        free(spec->mounts[i]);
    free(spec->mounts);
    for (size_t i = 0; i < spec->nallowed; i++)
        free(spec->allowed[i]);
    free(spec->allowed);
    for (size_t i = 0; i < spec->nadmin_allowed; i++)
        free(spec->admin_allowed[i]);
    free(spec->admin_allowed);
    free(spec->admin_file);
    free(spec->dir);
    free(spec->mounts_from);
    free(spec->file);
    memset(spec, 0, sizeof *spec);
}

bool gpurun_container_wanted(const struct gpurun_container_spec *spec)
{
    return spec && spec->image;
}

/* ---- resolving -------------------------------------------------------- */

static void add_word(char ***v, size_t *n, char *w)
{
    *v = gpurun_xrealloc(*v, (*n + 2) * sizeof **v);
    (*v)[(*n)++] = w;
    (*v)[*n] = NULL;
}

/* `path` is `folder` or inside it. */
static bool inside(const char *path, const char *folder)
{
    size_t n = strlen(folder);
    while (n > 1 && folder[n - 1] == '/')
        n--;
    return !strncmp(path, folder, n) && (path[n] == '\0' || path[n] == '/' || (n == 1 && folder[0] == '/'));
}

/* Runs `argv` (stdin and stderr /dev/null) and reads at most `cap` bytes of
 * its standard output into `buf` (NUL-terminated): the bytes read, or -1
 * when it could not be started; *status is how it ended. */
static ssize_t read_output(char *const *argv, char *buf, size_t cap, int *status)
{
    int fds[2];
    *status = 1;
    buf[0] = '\0';
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(fds[1], STDOUT_FILENO);
        if (null >= 0) {
            dup2(null, STDIN_FILENO);
            dup2(null, STDERR_FILENO);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t r;
    while (pid > 0 && got < cap && (r = read(fds[0], buf + got, cap - got)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        got += (size_t)r;
    }
    close(fds[0]);
    while (pid > 0 && waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
    buf[got] = '\0';
    return pid > 0 ? (ssize_t)got : -1;
}

/* The first line of `argv`'s standard output, or NULL (it failed). */
static char *first_line_of(char *const *argv)
{
    char buf[512];
    int status;
    if (read_output(argv, buf, sizeof buf - 1, &status) < 0)
        return NULL;
    buf[strcspn(buf, "\n")] = '\0';
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && buf[0] ? gpurun_xstrdup(buf) : NULL;
}

static gpurun_container_manager_fn manager_of;

void gpurun_container_set_managers(gpurun_container_manager_fn fn)
{
    manager_of = fn;
}

/* The manager whose launch command runs `rt` (no program of its own): 1
 * with *m, else 0. */
static int runtime_manager(const struct runtime *rt, struct gpurun_container_manager *m)
{
    memset(m, 0, sizeof *m);
    return !rt->program && manager_of ? manager_of(rt->name, m) : 0;
}

/* Whether the job's launcher setting leaves the manager's launch command possible. */
static bool manager_launcher(const struct gpurun_container_manager *m, const char *launcher)
{
    return !launcher || !strcmp(launcher, m->program) || (!strcmp(launcher, "auto") && m->inside);
}

/* The image to run: a file or folder (r->image its real path) or a name
 * for the runtime. */
static int resolve_image(struct gpurun_container_run *r, const struct gpurun_container_spec *img_from,
                         const struct gpurun_container_spec *job, const char *job_origin_image, gpurun_error_t *err)
{
    r->image_is_path = image_is_path(img_from->image, img_from->dir ? img_from->dir : ".");
    if (!r->image_is_path) {
        r->image = gpurun_xstrdup(img_from->image);
        return 0;
    }
    char *p = under(img_from->dir ? img_from->dir : ".", img_from->image);
    r->image = realpath(p, NULL);
    if (!r->image) {
        gpurun_err(err, GPURUN_EXIT_CONFIG, "%s: key 'container.image': the image %s does not exist (%s)",
                   img_from == job ? job_origin_image : "the template", p, strerror(errno));
        free(p);
        return -1;
    }
    /* The file's text was checked; a symlink may lead elsewhere. */
    const char *bad = gpurun_container_path_problem(NULL, r->image);
    if (bad) {
        char *shown = gpurun_printable(r->image);
        gpurun_err(err, GPURUN_EXIT_CONFIG,
                   "%s: key 'container.image': the image %s resolves to %s, which holds %s: the runtimes' options "
                   "cannot carry it; refused",
                   img_from == job ? job_origin_image : "the template", p, shown, bad);
        free(shown);
        free(p);
        return -1;
    }
    free(p);
    return 0;
}

/* A runtime asked for by name: r->exe its program (a manager's launch
 * command for pyxis), checked; -1 with err when it cannot run here. */
static int asked_runtime(struct gpurun_container_run *r, const struct runtime *rt, const char *by,
                         const char *launcher, const char *origin, gpurun_error_t *err)
{
    struct gpurun_container_manager m;
    bool managed = runtime_manager(rt, &m) == 1;
    if (!rt->program && !managed)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "container runtime '%s' (asked by %s): no resource manager present runs it; nothing was "
                          "started",
                          rt->name, by);
    const char *program = managed ? m.program : rt->program, *install = managed ? m.install : rt->install;
    r->exe = gpurun_which(program);
    if (!r->exe)
        return gpurun_err(err, GPURUN_EXIT_ENV,
                          "container runtime '%s' (asked by %s) not found: no '%s' on PATH; nothing was started: "
                          "install %s, load its module, or choose another runtime (container.runtime)",
                          rt->name, by, program, install);
    char why[512];
    if (managed && !manager_launcher(&m, launcher)) {
        char outside[300] = "";
        if (launcher && !strcmp(launcher, "auto"))
            snprintf(outside, sizeof outside, " outside a %s allocation (%s)", m.title, m.outside);
        gpurun_err(err, GPURUN_EXIT_CONFIG,
                   "%s: key 'container.runtime': %s (asked by %s) runs only under launcher = \"%s\" (%s %s), and "
                   "this job's launcher is '%s'%s",
                   origin, rt->name, by, m.program, m.program, m.option, launcher, outside);
    } else if (managed && !m.ready(r->exe, why, sizeof why)) {
        gpurun_err(err, GPURUN_EXIT_ENV, "container runtime '%s' (asked by %s): %s; nothing was started: install %s",
                   rt->name, by, why, install);
    } else {
        r->why = gpurun_xasprintf("%s, as %s asks", rt->name, by);
        return 0;
    }
    free(r->exe);
    r->exe = NULL;
    return -1;
}

/* auto: a runtime of a manager's launch command first (pyxis), inside its
 * allocation where that command would launch and takes it. */
static const struct runtime *auto_manager_runtime(struct gpurun_container_run *r, const char *launcher)
{
    for (size_t i = NRUNTIMES_ON_PATH; i < NRUNTIMES; i++) {
        struct gpurun_container_manager m;
        if (runtime_manager(&runtimes[i], &m) != 1 || !m.inside || !manager_launcher(&m, launcher) ||
            !(r->exe = gpurun_which(m.program)))
            continue;
        if (m.ready(r->exe, NULL, 0)) {
            r->why = gpurun_xasprintf("%s, the first runtime found (auto: inside %s, %s takes %s)", runtimes[i].name,
                                      m.where, m.program, m.option);
            return &runtimes[i];
        }
        free(r->exe);
        r->exe = NULL;
    }
    return NULL;
}

/* The runtime: the job's, the template's, the site's, else the first found.
 * Sets r->exe and r->why; NULL when it is not there. */
static const struct runtime *choose_runtime(struct gpurun_container_run *r, const struct gpurun_container_spec *job,
                                            const struct gpurun_container_spec *tpl,
                                            const struct gpurun_container_spec *site, const char *launcher,
                                            const char *origin, gpurun_error_t *err)
{
    const char *asked = NULL, *by = NULL;
    const struct gpurun_container_spec *order[] = {job, tpl, site};
    static const char *const who[] = {"the job", "the template", "the site profile"};
    for (size_t i = 0; i < 3 && !asked; i++)
        if (order[i] && order[i]->runtime && strcmp(order[i]->runtime, "auto")) {
            asked = order[i]->runtime;
            by = who[i];
        }
    const struct runtime *rt = asked ? runtime_named(asked) : NULL;
    if (rt)
        return asked_runtime(r, rt, by, launcher, origin, err) < 0 ? NULL : rt;
    if ((rt = auto_manager_runtime(r, launcher)))
        return rt;
    for (size_t i = 0; i < NRUNTIMES_ON_PATH && !r->exe; i++)
        if ((r->exe = gpurun_which(runtimes[i].program)))
            rt = &runtimes[i];
    if (!rt) {
        gpurun_err(err, GPURUN_EXIT_ENV,
                   "container runtime 'auto': none of apptainer, singularity, ch-run, podman is on PATH; "
                   "nothing was started: install one (%s; or %s) or load its module",
                   runtimes[0].install, runtimes[2].install);
        return NULL;
    }
    r->why = gpurun_xasprintf("%s, the first runtime found (auto: apptainer, singularity, ch-run, podman)", rt->name);
    return rt;
}

/* Whether `src` (resolved) is inside one of the `n` folders, as written or
 * as they resolve (/home may be a link). */
static bool mount_allowed(char *const *allowed, size_t n, const char *src)
{
    bool ok = false;
    for (size_t k = 0; k < n && !ok; k++) {
        char *real = realpath(allowed[k], NULL);
        ok = inside(src, allowed[k]) || (real && inside(src, real));
        free(real);
    }
    return ok;
}

/* A "." or ".." component: what an unresolved path must not hold before it
 * is compared with a folder as text. */
static bool has_dot_component(const char *p)
{
    for (const char *c = p; *c; c++)
        if ((c == p || c[-1] == '/') && c[0] == '.' && (!c[1] || c[1] == '/' || (c[1] == '.' && (!c[2] || c[2] == '/'))))
            return true;
    return false;
}

/* Whether `s` ends in a character Go's unicode.IsSpace takes for a space
 * (Apptainer trims each piece of --bind with strings.TrimSpace): a blank,
 * U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F,
 * U+3000 (control characters are refused before). */
static bool ends_in_space(const char *s)
{
    size_t n = strlen(s);
    const unsigned char *e = (const unsigned char *)s + n;
    if (n >= 1 && e[-1] == ' ')
        return true;
    if (n >= 2 && e[-2] == 0xc2 && (e[-1] == 0x85 || e[-1] == 0xa0))
        return true;
    if (n < 3)
        return false;
    unsigned cp = ((unsigned)(e[-3] & 0x0f) << 12) | ((unsigned)(e[-2] & 0x3f) << 6) | (e[-1] & 0x3f);
    return (e[-3] & 0xf0) == 0xe0 && (e[-2] & 0xc0) == 0x80 && (e[-1] & 0xc0) == 0x80 &&
           (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f ||
            cp == 0x205f || cp == 0x3000);
}

const char *gpurun_container_path_problem(const struct gpurun_container_run *r, const char *path)
{
    bool pyxis = r && r->runtime && !strcmp(r->runtime, "pyxis");
    bool csv = r && r->runtime && (!strcmp(r->runtime, "apptainer") || !strcmp(r->runtime, "singularity"));
    if (csv && ends_in_space(path))
        return "a space at its end (Apptainer and Singularity trim each piece of --bind: another folder would be "
               "mounted)";
    for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
        if (*c < 0x20 || *c == 0x7f)
            return "a control character";
        if (*c == ':')
            return "':' (it separates a mount's source from its destination)";
        if (*c == ',')
            return "',' (Apptainer, Singularity and pyxis read it as the end of one mount and the start of "
                   "another)";
        if (*c == '^' && csv)
            return "'^' (Apptainer and Singularity split --bind on it as on ',' and ':')";
        if (*c == '"' && (csv || pyxis))
            return pyxis ? "'\"' (pyxis writes each mount into a shell script between double quotes)"
                         : "'\"' (Apptainer and Singularity read --bind as comma-separated values, where it quotes)";
        if (pyxis && (*c == ' ' || *c == '$' || *c == '`' || *c == '\\'))
            return *c == ' ' ? "a blank (enroot reads pyxis's mounts as fstab lines, where it separates fields)"
                             : "'$', '`' or '\\' (pyxis writes each mount into a shell script between double quotes, "
                               "where they are expanded)";
    }
    return NULL;
}

/* Mounts: the site's defaults, the template's, the job's.  Each resolved
 * (a symlink is what it points to), each within the site's allowed folders
 * when it names some, and none holding what the runtime splits on. */
static int check_mount(const struct gpurun_container_run *r, const struct gpurun_container_spec *site,
                       const char *from, const char *m, const char *abs, const char *real, const char *dst,
                       gpurun_error_t *err)
{
    const char *bad_src = gpurun_container_path_problem(r, real ? real : abs);
    const char *bad_dst = dst ? gpurun_container_path_problem(r, dst) : NULL;
    bool moved = real && strcmp(real, abs);
    char *shown_m = gpurun_printable(m), *shown_abs = gpurun_printable(abs), *shown_real = gpurun_printable(real);
    char *shown_dst = gpurun_printable(dst);
    int rc = 0;
    if (bad_src || bad_dst)
        rc = gpurun_err(err, GPURUN_EXIT_CONFIG,
                        "%s: key 'container.mounts': the mount '%s' %s %s, which holds %s: %s cannot carry that in "
                        "a mount; refused",
                        from, shown_m, bad_src ? (moved ? "resolves to" : "is") : "goes to",
                        bad_src ? (real ? shown_real : shown_abs) : shown_dst, bad_src ? bad_src : bad_dst,
                        r->runtime);
    else if (site && (site->nallowed || site->nadmin_allowed) && !real && has_dot_component(abs))
        rc = gpurun_err(err, GPURUN_EXIT_CONFIG,
                        "%s: key 'container.mounts': %s does not exist here and holds '.' or '..': it cannot be "
                        "checked against the site's allowed_mounts; refused",
                        from, shown_abs);
    else if (site && site->nallowed && !mount_allowed(site->allowed, site->nallowed, real ? real : abs))
        rc = gpurun_err(err, GPURUN_EXIT_CONFIG,
                        "%s: key 'container.mounts': %s%s%s%s is outside what the site allows in containers "
                        "(allowed_mounts of %s: %s%s)",
                        from, shown_abs, moved ? " (which resolves to " : "", moved ? shown_real : "", moved ? ")" : "",
                        site->file ? site->file : "the site profile", site->allowed[0],
                        site->nallowed > 1 ? ", ..." : "");
    else if (site && site->nadmin_allowed &&
             !mount_allowed(site->admin_allowed, site->nadmin_allowed, real ? real : abs))
        rc = gpurun_err(err, GPURUN_EXIT_CONFIG,
                        "%s: key 'container.mounts': %s%s%s%s is outside what the site allows in containers "
                        "(allowed_mounts of the installed profile %s: %s%s; %s, a profile of the same name, "
                        "does not replace them)",
                        from, shown_abs, moved ? " (which resolves to " : "", moved ? shown_real : "", moved ? ")" : "",
                        site->admin_file, site->admin_allowed[0], site->nadmin_allowed > 1 ? ", ..." : "",
                        site->file ? site->file : "the site profile");
    free(shown_m);
    free(shown_abs);
    free(shown_real);
    free(shown_dst);
    return rc;
}

static int resolve_mounts(struct gpurun_container_run *r, const struct gpurun_container_spec *job,
                          const struct gpurun_container_spec *tpl, const struct gpurun_container_spec *site,
                          const char *job_origin_mounts, gpurun_error_t *err)
{
    const struct gpurun_container_spec *mfrom[] = {site, tpl, job};
    static const char *const who[] = {"the site profile", "the template", "the job"};
    for (size_t s = 0; s < 3; s++)
        for (size_t i = 0; mfrom[s] && i < mfrom[s]->nmounts; i++) {
            const char *m = mfrom[s]->mounts[i];
            const char *from = s == 2 && job_origin_mounts ? job_origin_mounts
                               : mfrom[s]->mounts_from    ? mfrom[s]->mounts_from
                                                          : who[s];
            const char *colon = strchr(m, ':');
            char *src = colon ? gpurun_xstrndup(m, (size_t)(colon - m)) : gpurun_xstrdup(m);
            char *abs = under(mfrom[s]->dir ? mfrom[s]->dir : ".", src);
            char *real = realpath(abs, NULL);
            int rc = check_mount(r, site, from, m, abs, real, colon ? colon + 1 : NULL, err);
            if (rc == 0)
                add_word(&r->mounts, &r->nmounts,
                         gpurun_xasprintf("%s:%s", real ? real : abs, colon ? colon + 1 : real ? real : abs));
            free(real);
            free(abs);
            free(src);
            if (rc < 0)
                return -1;
        }
    return 0;
}

/* A SIF file's ID: the UUID in its global header (after the 32-byte launch
 * line, "SIF_MAGIC", a 3-byte version and a 3-byte architecture). */
static char *sif_id(int fd)
{
    unsigned char h[64];
    if (pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h + 32, "SIF_MAGIC", 9))
        return NULL;
    const unsigned char *u = h + 48;
    return gpurun_xasprintf("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
                            u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

/* Which image file or folder ran, from its inode: no hashing of gigabytes
 * on every run. */
static void image_identity(struct gpurun_container_run *r)
{
    int fd = open(r->image, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        if (fd >= 0)
            close(fd);
        return;
    }
    r->have_file = true;
    r->file_size = (long long)st.st_size;
    r->file_mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    r->file_inode = (unsigned long long)st.st_ino;
    r->file_dev = (unsigned long long)st.st_dev;
    if (S_ISREG(st.st_mode))
        r->sif_id = sif_id(fd);
    close(fd);
}

int gpurun_container_resolve(const struct gpurun_container_spec *job, const struct gpurun_container_spec *tpl,
                             const struct gpurun_container_spec *site, const char *job_origin_image,
                             const char *job_origin_mounts, const char *job_origin_runtime, const char *launcher,
                             struct gpurun_container_run **runp,
                             gpurun_error_t *err)
{
    *runp = NULL;
    const struct gpurun_container_spec *img_from = gpurun_container_wanted(job) ? job : tpl;
    if (!gpurun_container_wanted(img_from)) {
        if (job && job->dir) /* a block, but nothing to run */
            return gpurun_err(err, GPURUN_EXIT_CONFIG,
                              "%s: key 'container.image' missing: the container block needs an image (a file or "
                              "folder, or docker://REGISTRY/NAME:TAG), here or in the template",
                              job_origin_image);
        return 0;
    }
    struct gpurun_container_run *r = gpurun_xcalloc(1, sizeof *r);
    if (resolve_image(r, img_from, job, job_origin_image, err) < 0) {
        gpurun_container_run_free(r);
        return -1;
    }
    const struct runtime *rt = choose_runtime(r, job, tpl, site, launcher, job_origin_runtime, err);
    if (!rt) {
        gpurun_container_run_free(r);
        return -1;
    }
    r->runtime = rt->name;
    if (r->image_is_path && !strcmp(rt->name, "podman")) {
        gpurun_err(err, GPURUN_EXIT_CONFIG,
                   "%s: key 'container.image': podman runs images from its store, not the file %s: `podman load` "
                   "or `podman import` it and give its name",
                   img_from == job ? job_origin_image : "the template", r->image);
        gpurun_container_run_free(r);
        return -1;
    }
    if (resolve_mounts(r, job, tpl, site, job_origin_mounts, err) < 0) {
        gpurun_container_run_free(r);
        return -1;
    }

    if (r->image_is_path)
        image_identity(r);
    /* What the record can name the image by: podman's content digest. */
    if (!strcmp(rt->name, "podman")) {
        char *argv[] = {r->exe, "image", "inspect", "--format", "{{.Digest}}", r->image, NULL};
        r->digest = first_line_of(argv);
    }
    *runp = r;
    return 0;
}

void gpurun_container_run_free(struct gpurun_container_run *r)
{
    if (!r)
        return;
    free(r->exe);
    free(r->image);
    free(r->why);
    free(r->digest);
    free(r->sif_id);
    free(r->inside);
    free(r->inside_note);
    for (size_t i = 0; i < r->nmounts; i++)
        free(r->mounts[i]);
    free(r->mounts);
    for (size_t i = 0; i < r->nenv; i++)
        free(r->env_names[i]);
    free(r->env_names);
    free(r);
}

void gpurun_container_pass_env(struct gpurun_container_run *r, const char *name)
{
    for (size_t i = 0; i < r->nenv; i++)
        if (!strcmp(r->env_names[i], name))
            return;
    add_word(&r->env_names, &r->nenv, gpurun_xstrdup(name));
}

/* ---- the command line --------------------------------------------------- */

/* podman: the limits the rank step itself has.  podman's default (1048576)
 * is more than an unprivileged runc may set where the host's hard limits are
 * lower ("error setting rlimit type 7: operation not permitted"), and
 * podman lowers its own RLIMIT_NPROC to kernel.pid_max, so nproc is capped
 * there. */
static char *ulimit_arg(const char *name, int resource)
{
    struct rlimit rl;
    if (getrlimit(resource, &rl) < 0)
        return NULL;
    if (resource == RLIMIT_NPROC) {
        FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
        unsigned long long pid_max = 0;
        if (f && fscanf(f, "%llu", &pid_max) == 1 && pid_max > 0) {
            if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > pid_max)
                rl.rlim_max = pid_max;
            if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > rl.rlim_max)
                rl.rlim_cur = rl.rlim_max;
        }
        if (f)
            fclose(f);
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_max == RLIM_INFINITY)
        return gpurun_xasprintf("%s=-1:-1", name);
    return gpurun_xasprintf("%s=%llu:%llu", name, (unsigned long long)rl.rlim_cur,
                            (unsigned long long)rl.rlim_max);
}

/* The GPU device nodes of this node that exist.  Every GPU of the node is
 * passed: the rank's CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES number the
 * node's GPUs, and a container holding only /dev/nvidia1 would call it 0. */
static const char *const cdi_specs[] = {"/etc/cdi/nvidia.yaml", "/etc/cdi/nvidia.json", "/var/run/cdi/nvidia.yaml",
                                        "/var/run/cdi/nvidia.json", NULL};

/* NVIDIA's Container Device Interface spec (nvidia-ctk cdi generate): with
 * it podman injects the devices and the host's driver libraries. */
static const char *nvidia_cdi(void)
{
    for (size_t i = 0; cdi_specs[i]; i++)
        if (access(cdi_specs[i], R_OK) == 0)
            return cdi_specs[i];
    return NULL;
}

static void gpu_devices(const char *vendor, char ***v, size_t *n)
{
    static const char *const nvidia[] = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                                         "/dev/nvidia-modeset"};
    static const char *const amd[] = {"/dev/kfd", "/dev/dri"};
    bool is_amd = vendor && !strcmp(vendor, "amd");
    if (!is_amd && nvidia_cdi()) {
        add_word(v, n, gpurun_xstrdup("--device"));
        add_word(v, n, gpurun_xstrdup("nvidia.com/gpu=all"));
        return;
    }
    const char *const *list = is_amd ? amd : nvidia;
    size_t count = is_amd ? 2 : 4;
    for (size_t i = 0; i < count; i++)
        if (access(list[i], F_OK) == 0) {
            add_word(v, n, gpurun_xstrdup("--device"));
            add_word(v, n, gpurun_xstrdup(list[i]));
        }
    for (int g = 0; !is_amd && g < 256; g++) {
        char dev[32];
        snprintf(dev, sizeof dev, "/dev/nvidia%d", g);
        if (access(dev, F_OK) < 0)
            continue;
        add_word(v, n, gpurun_xstrdup("--device"));
        add_word(v, n, gpurun_xstrdup(dev));
    }
}

/* Whether `path` is a statically linked ELF program (no PT_INTERP): one
 * that runs in any image, whatever C library the image has or lacks. */
static bool static_program(const char *path, char *why, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    Elf64_Ehdr eh;
    bool ok = false;
    if (fd < 0 || pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr)) {
        snprintf(why, size, "%s is not a 64-bit ELF program", path);
    } else {
        ok = true;
        for (unsigned i = 0; i < eh.e_phnum && ok; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (Elf64_Off)i * sizeof ph)) != (ssize_t)sizeof ph)
                ok = false;
            else if (ph.p_type == PT_INTERP)
                ok = false;
        }
        if (!ok)
            snprintf(why, size, "%s is not statically linked (configure found no static jansson), so it may not "
                                "run in the image", path);
    }
    if (fd >= 0)
        close(fd);
    return ok;
}

/* ch-run mounts the image read-only and makes no mount point in it: the
 * folder of gpurun-rank must be in the image (a directory image, checked
 * here), or under /tmp, which ch-run shares with the host. */
static bool ch_mount_point(const struct gpurun_container_run *r, const char *program, char *why, size_t size)
{
    const char *slash = strrchr(program, '/');
    char *dir = gpurun_xstrndup(program, slash && slash != program ? (size_t)(slash - program) : 1);
    bool ok = !strncmp(dir, "/tmp/", 5);
    if (!ok && r->image_is_path) {
        char *in = gpurun_xasprintf("%s%s", r->image, dir);
        struct stat st;
        ok = stat(in, &st) == 0 && S_ISDIR(st.st_mode);
        free(in);
    }
    if (!ok)
        snprintf(why, size,
                 "ch-run makes no mount point in a read-only image and the image has no folder %s for gpurun-rank "
                 "(make one in the image, an empty folder)",
                 dir);
    free(dir);
    return ok;
}

void gpurun_container_set_inside(struct gpurun_container_run *r, const char *rank_program)
{
    free(r->inside);
    free(r->inside_note);
    r->inside = r->inside_note = NULL;
    char why[PATH_MAX + 128];
    if (!rank_program)
        r->inside_note = gpurun_xstrdup("no gpurun-rank beside gpurun (or GPURUN_FULL_RANK_STEP=1)");
    else if (gpurun_container_path_problem(r, rank_program))
        r->inside_note = gpurun_xasprintf("the path of %s holds %s: %s cannot carry it in a mount", rank_program,
                                          gpurun_container_path_problem(r, rank_program), r->runtime);
    else if (!static_program(rank_program, why, sizeof why))
        r->inside_note = gpurun_xstrdup(why);
    else if (!strcmp(r->runtime, "charliecloud") && !ch_mount_point(r, rank_program, why, sizeof why))
        r->inside_note = gpurun_xstrdup(why);
    else
        r->inside = gpurun_xstrdup(rank_program);
}

/* The mounts of a rank's container: gpurun-rank's folder (read-only, first,
 * so that the run and job folders, which may lie below it, are not hidden),
 * the run folder and the job folder at their own paths, then the site's,
 * template's and job's. */
struct mount_list {
    char *own[3]; /* what own_mounts adds; NULL: none */
    bool ro[3];
};

static void own_mounts(struct mount_list *ml, const struct gpurun_container_run *r, bool inside, const char *run_dir,
                       const char *job_dir)
{
    memset(ml, 0, sizeof *ml);
    if (inside && r->inside) {
        const char *slash = strrchr(r->inside, '/');
        char *dir = gpurun_xstrndup(r->inside, slash && slash != r->inside ? (size_t)(slash - r->inside) : 1);
        ml->own[0] = gpurun_xasprintf("%s:%s", dir, dir);
        ml->ro[0] = true;
        free(dir);
    }
    ml->own[1] = gpurun_xasprintf("%s:%s", run_dir, run_dir);
    ml->own[2] = strcmp(job_dir, run_dir) ? gpurun_xasprintf("%s:%s", job_dir, job_dir) : NULL;
}

static void wrap_mounts(char ***v, size_t *n, const struct mount_list *ml, const struct gpurun_container_run *r,
                        const char *opt, const char *ro_suffix, bool joined)
{
    for (size_t i = 0; i < 3 + r->nmounts; i++) {
        const char *m = i < 3 ? ml->own[i] : r->mounts[i - 3];
        if (!m)
            continue;
        const char *ro = i < 3 && ml->ro[i] ? ro_suffix : "";
        if (joined) {
            add_word(v, n, gpurun_xasprintf("%s=%s%s", opt, m, ro));
        } else {
            add_word(v, n, gpurun_xstrdup(opt));
            add_word(v, n, gpurun_xasprintf("%s%s", m, ro));
        }
    }
}

/* pyxis's options for srun: the image, the mounts (gpurun-rank's folder
 * read-only, the run and job folders, the site's, template's and job's),
 * and the working folder. */
static char **pyxis_options(const struct gpurun_container_run *r, const char *run_dir, const char *job_dir)
{
    struct mount_list ml;
    own_mounts(&ml, r, true, run_dir, job_dir);
    char **v = NULL;
    size_t n = 0;
    add_word(&v, &n, gpurun_xasprintf("--container-image=%s", r->image));
    size_t len = 0;
    char *mounts = gpurun_xstrdup("");
    for (size_t i = 0; i < 3 + r->nmounts; i++) {
        const char *m = i < 3 ? ml.own[i] : r->mounts[i - 3];
        if (!m)
            continue;
        char *next = gpurun_xasprintf("%s%s%s%s", mounts, len ? "," : "", m, i < 3 && ml.ro[i] ? ":ro" : "");
        free(mounts);
        mounts = next;
        len = strlen(mounts);
    }
    add_word(&v, &n, gpurun_xasprintf("--container-mounts=%s", mounts));
    add_word(&v, &n, gpurun_xasprintf("--container-workdir=%s", run_dir));
    free(mounts);
    for (size_t i = 0; i < 3; i++)
        free(ml.own[i]);
    return v;
}

char **gpurun_container_launcher_options(const struct gpurun_container_run *r, const char *run_dir,
                                         const char *job_dir)
{
    return r && !strcmp(r->runtime, "pyxis") ? pyxis_options(r, run_dir, job_dir) : NULL;
}

/* pyxis: a rank needs no wrapper (the srun that starts the rank steps
 * enters the image before each); anything else (a setup step) is a
 * one-task srun with the same options. */
static char **pyxis_wrap(const struct gpurun_container_run *r, char *const *app, const char *run_dir,
                         const char *job_dir, bool rank)
{
    char **v = NULL;
    size_t n = 0;
    if (!rank) {
        add_word(&v, &n, gpurun_xstrdup(r->exe));
        add_word(&v, &n, gpurun_xstrdup("--nodes=1"));
        add_word(&v, &n, gpurun_xstrdup("--ntasks=1"));
        char **opts = pyxis_options(r, run_dir, job_dir);
        for (char **o = opts; *o; o++)
            add_word(&v, &n, *o);
        free(opts);
    }
    for (char *const *a = app; *a; a++)
        add_word(&v, &n, gpurun_xstrdup(*a));
    return v;
}

static char **wrap(const struct gpurun_container_run *r, char *const *app, const char *run_dir, const char *job_dir,
                   int gpus, const char *gpu_vendor, bool inside)
{
    char **v = NULL;
    size_t n = 0;
    bool amd = gpu_vendor && !strcmp(gpu_vendor, "amd");
    if (!strcmp(r->runtime, "pyxis"))
        return pyxis_wrap(r, app, run_dir, job_dir, inside);
    inside = inside && r->inside;
    /* The run folder and job folder at their own paths: figures of merit
     * are read, and relative paths of the job resolved, as for any run. */
    struct mount_list ml;
    own_mounts(&ml, r, inside, run_dir, job_dir);
    add_word(&v, &n, gpurun_xstrdup(r->exe));
    if (!strcmp(r->runtime, "apptainer") || !strcmp(r->runtime, "singularity")) {
        add_word(&v, &n, gpurun_xstrdup("exec"));
        if (gpus > 0)
            add_word(&v, &n, gpurun_xstrdup(amd ? "--rocm" : "--nv"));
        wrap_mounts(&v, &n, &ml, r, "--bind", ":ro", false);
        add_word(&v, &n, gpurun_xstrdup("--pwd"));
        add_word(&v, &n, gpurun_xstrdup(run_dir));
        add_word(&v, &n, gpurun_xstrdup(r->image));
    } else if (!strcmp(r->runtime, "charliecloud")) {
        /* ch-run keeps the rank step's environment; --set-env adds the
         * image's own (ch-image writes it to /ch/environment).  Its binds
         * take no read-only flag. */
        wrap_mounts(&v, &n, &ml, r, "--bind", "", true);
        add_word(&v, &n, gpurun_xasprintf("--cd=%s", run_dir));
        char *envfile = gpurun_xasprintf("%s/ch/environment", r->image);
        if (!r->image_is_path || access(envfile, R_OK) == 0)
            add_word(&v, &n, gpurun_xstrdup("--set-env"));
        free(envfile);
        add_word(&v, &n, gpurun_xstrdup(r->image));
        add_word(&v, &n, gpurun_xstrdup("--"));
    } else { /* podman */
        static const char *const fixed[] = {"run", "--rm", "--network=host", "--ipc=host", "--pid=host"};
        for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
            add_word(&v, &n, gpurun_xstrdup(fixed[i]));
        if (geteuid() != 0) /* rootless: files in the run folder stay the user's */
            add_word(&v, &n, gpurun_xstrdup("--userns=keep-id"));
        if (inside) /* podman passes no descriptor above 2 unless told: the inside report's */
            add_word(&v, &n, gpurun_xasprintf("--preserve-fds=%d", GPURUN_INSIDE_FD - 2));
        static const struct {
            const char *name;
            int resource;
        } limits[] = {{"nofile", RLIMIT_NOFILE}, {"nproc", RLIMIT_NPROC}};
        for (size_t i = 0; i < 2; i++) {
            char *u = ulimit_arg(limits[i].name, limits[i].resource);
            if (u) {
                add_word(&v, &n, gpurun_xstrdup("--ulimit"));
                add_word(&v, &n, u);
            }
        }
        wrap_mounts(&v, &n, &ml, r, "-v", ":ro", false);
        add_word(&v, &n, gpurun_xasprintf("--workdir=%s", run_dir));
        /* By name: podman takes each value from the rank step's own
         * environment, so every rank's own values reach its container. */
        for (size_t i = 0; i < r->nenv; i++) {
            add_word(&v, &n, gpurun_xstrdup("-e"));
            add_word(&v, &n, gpurun_xstrdup(r->env_names[i]));
        }
        if (gpus > 0)
            gpu_devices(gpu_vendor, &v, &n);
        add_word(&v, &n, gpurun_xstrdup(r->image));
    }
    if (inside) {
        add_word(&v, &n, gpurun_xstrdup(r->inside));
        add_word(&v, &n, gpurun_xstrdup(GPURUN_INSIDE_ARG));
        add_word(&v, &n, gpurun_xasprintf("%d", GPURUN_INSIDE_FD));
        add_word(&v, &n, gpurun_xstrdup("--"));
    }
    for (char *const *a = app; *a; a++)
        add_word(&v, &n, gpurun_xstrdup(*a));
    for (size_t i = 0; i < 3; i++)
        free(ml.own[i]);
    return v;
}

char **gpurun_container_wrap(const struct gpurun_container_run *r, char *const *app, const char *run_dir,
                             const char *job_dir, int gpus, const char *gpu_vendor)
{
    return wrap(r, app, run_dir, job_dir, gpus, gpu_vendor, false);
}

char **gpurun_container_wrap_rank(const struct gpurun_container_run *r, char *const *app, const char *run_dir,
                                  const char *job_dir, int gpus, const char *gpu_vendor)
{
    return wrap(r, app, run_dir, job_dir, gpus, gpu_vendor, true);
}

/* ---- doctor ----------------------------------------------------------- */

int gpurun_container_doctor(bool nvidia_gpus, bool amd_gpus, char *detail, size_t size, bool *gpu_ok)
{
    size_t used = 0;
    int found = 0;
    *gpu_ok = true;
    detail[0] = '\0';
    bool nv_dev = access("/dev/nvidiactl", F_OK) == 0, kfd = access("/dev/kfd", F_OK) == 0;
    const char *cdi = nvidia_cdi();
    for (size_t i = 0; i < NRUNTIMES; i++) {
        struct gpurun_container_manager m;
        bool pyxis = runtime_manager(&runtimes[i], &m) == 1; /* a manager's launch command runs it */
        const char *program = pyxis ? m.program : runtimes[i].program;
        char *exe = program ? gpurun_which(program) : NULL;
        if (exe && pyxis && !m.ready(exe, NULL, 0)) { /* the launch command without it */
            free(exe);
            exe = NULL;
        }
        if (!exe)
            continue;
        found++;
        const char *gpu = "";
        if (nvidia_gpus || amd_gpus) {
            bool devs = nvidia_gpus ? nv_dev : kfd;
            if (pyxis)
                gpu = devs ? " (GPUs: enroot's NVIDIA hook, from the task's CUDA_VISIBLE_DEVICES)"
                           : " (GPUs: no GPU device nodes)";
            else if (!strcmp(runtimes[i].program, "podman"))
                gpu = amd_gpus && !nvidia_gpus ? (kfd ? " (GPUs: --device /dev/kfd /dev/dri)" : " (GPUs: no /dev/kfd)")
                      : cdi                    ? " (GPUs: --device nvidia.com/gpu=all, CDI spec found)"
                      : nv_dev ? " (GPUs: --device /dev/nvidia*; no CDI spec: the image must bring the driver's "
                                 "libraries)"
                               : " (GPUs: no /dev/nvidiactl)";
            else if (!strcmp(runtimes[i].program, "ch-run"))
                gpu = devs ? " (GPUs: device nodes shared; inject the driver's libraries with ch-fromhost --nvidia)"
                           : " (GPUs: no GPU device nodes)";
            else
                gpu = devs ? (nvidia_gpus ? " (GPUs: --nv)" : " (GPUs: --rocm)") : " (GPUs: no GPU device nodes)";
            if (!devs || (!strcmp(runtimes[i].program, "podman") && nvidia_gpus && !cdi))
                *gpu_ok = false;
        }
        int w = snprintf(detail + used, size - used, "%s%s %s%s%s%s", found > 1 ? "; " : "", runtimes[i].name, exe,
                         pyxis ? " " : "", pyxis ? m.option : "", gpu);
        if (w > 0 && (size_t)w < size - used)
            used += (size_t)w;
        free(exe);
    }
    return found;
}
