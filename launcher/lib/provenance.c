/* SPDX-License-Identifier: BSD-3-Clause */
/* A run's provenance (provenance.h): hashes, the kept job and template
 * text, the overrides and the versions it ran with. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "confparse.h"
#include "tool.h"
#include "inputs.h"
#include "provenance.h"
#include "record.h"
#include "safefile.h"

/* A base's base, and so on: template_base.c's depth, a loop ends here too. */
#define BASES_MAX 8

/* ---- hashing ------------------------------------------------------------ */

static void hex_of(const unsigned char *md, unsigned n, char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < n && i < 32; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[64] = '\0';
}

void gpurun_sha256_hex(const void *data, size_t len, char hex[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
    hex_of(md, n, hex);
}

/* `len` bytes of fd from `off` into the digest. */
static int hash_range(EVP_MD_CTX *ctx, int fd, long long off, long long len, unsigned char *buf, size_t bufsize)
{
    while (len > 0) {
        size_t want = len < (long long)bufsize ? (size_t)len : bufsize;
        ssize_t r = pread(fd, buf, want, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -1 : (errno = EIO, -1); /* shorter than its size: it changed while read */
        EVP_DigestUpdate(ctx, buf, (size_t)r);
        off += r;
        len -= r;
    }
    return 0;
}

int gpurun_hash_fd(int fd, long long size, long long whole_max, struct gpurun_file_hash *h, gpurun_error_t *err)
{
    memset(h, 0, sizeof *h);
    h->size = size;
    h->sampled = size > whole_max && size > 3 * GPURUN_PROV_SAMPLE; /* the samples apart, within the file */
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    size_t bufsize = 1 << 16;
    unsigned char *buf = gpurun_xmalloc(bufsize);
    int rc = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 ? 0 : (errno = ENOMEM, -1);
    if (rc == 0 && !h->sampled)
        rc = hash_range(ctx, fd, 0, size, buf, bufsize);
    else if (rc == 0) { /* the first, middle and last MiB, in that order */
        long long s = GPURUN_PROV_SAMPLE, mid = size / 2 - s / 2;
        rc = hash_range(ctx, fd, 0, s, buf, bufsize);
        if (rc == 0)
            rc = hash_range(ctx, fd, mid, s, buf, bufsize);
        if (rc == 0)
            rc = hash_range(ctx, fd, size - s, s, buf, bufsize);
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    int e = errno;
    if (rc == 0 && EVP_DigestFinal_ex(ctx, md, &n) == 1)
        hex_of(md, n, h->sha256);
    else
        rc = gpurun_err(err, GPURUN_EXIT_ENV, "cannot be read: %s", strerror(e ? e : EIO));
    EVP_MD_CTX_free(ctx);
    free(buf);
    return rc;
}

int gpurun_hash_file(const char *path, long long whole_max, struct gpurun_file_hash *h, gpurun_error_t *err)
{
    memset(h, 0, sizeof *h);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return gpurun_err(err, GPURUN_EXIT_ENV, "%s: cannot be read: %s", path, strerror(errno));
    struct stat st;
    int rc;
    if (fstat(fd, &st) < 0)
        rc = gpurun_err(err, GPURUN_EXIT_ENV, "%s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = gpurun_err(err, GPURUN_EXIT_ENV, "%s: not a regular file", path);
    else if ((rc = gpurun_hash_fd(fd, (long long)st.st_size, whole_max, h, err)) < 0) {
        char *why = gpurun_xstrdup(err->text);
        gpurun_err(err, err->code, "%s: %s", path, why);
        free(why);
    }
    close(fd);
    return rc;
}

/* ---- the kept text ------------------------------------------------------- */

static void note(json_t *notes, const char *fmt, const char *a, const char *b)
{
    json_array_append_new(notes, json_sprintf(fmt, a, b));
}

/* `len` bytes as the new file `name` of folder `dfd` (O_EXCL, O_NOFOLLOW). */
static int keep_text(int dfd, const char *name, const char *text, size_t len, mode_t fmode)
{
    int fd = gpurun_create_at(dfd, name, O_WRONLY, fmode);
    if (fd < 0)
        return -1;
    int rc = gpurun_write_all(fd, text, len);
    int e = errno;
    if (close(fd) < 0 && rc == 0)
        return -1;
    if (rc < 0) {
        unlinkat(dfd, name, 0);
        errno = e;
    }
    return rc;
}

/* {path, sha256, copy} of the text of `path`, kept as `copy` in `dfd`;
 * the text in *textp (NULL: not wanted). */
static json_t *kept_file(const char *path, int dfd, const char *copy, const char *shown_copy, mode_t fmode,
                         json_t *notes, char **textp, size_t *lenp)
{
    char *text = NULL;
    size_t len = 0;
    gpurun_error_t e = {0};
    json_t *j = json_pack("{s:s, s:n, s:n}", GPURUN_REC_PROV_PATH, path, GPURUN_REC_PROV_SHA256, GPURUN_REC_PROV_COPY);
    if (gpurun_read_file(path, "file", GPURUN_PROV_TEXT_MAX, &text, &len, &e) < 0) {
        note(notes, "%s%s", e.text, " (not kept)");
        gpurun_error_clear(&e);
        return j;
    }
    char hex[65];
    gpurun_sha256_hex(text, len, hex);
    json_object_set_new(j, GPURUN_REC_PROV_SHA256, json_string(hex));
    if (keep_text(dfd, copy, text, len, fmode) == 0)
        json_object_set_new(j, GPURUN_REC_PROV_COPY, json_string(shown_copy));
    else
        note(notes, "the copy of %s in the run folder could not be written: %s", path, strerror(errno));
    if (textp) {
        *textp = text;
        *lenp = len;
    } else {
        free(text);
    }
    return j;
}

/* The bases of the template read from `path` (text `text`), each kept as
 * templates/BASE.conf, found as template_base.c finds them: on the search
 * path from the template's own folder. */
static json_t *kept_bases(const char *path, char *text, size_t len, int tdfd, mode_t fmode, json_t *notes)
{
    json_t *bases = json_array();
    char *cur = gpurun_xstrdup(path);
    for (int depth = 0; text && depth < BASES_MAX; depth++) {
        gpurun_template_t *t = NULL;
        gpurun_error_t e = {0};
        int rc = gpurun_template_parse(text, len, cur, &t, &e);
        free(text);
        text = NULL;
        char *bpath = NULL, *dir = gpurun_xstrdup(cur), *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        if (rc == 0 && t->base && gpurun_template_find(t->base, slash ? dir : ".", &bpath, &e) == 0) {
            char *copy = gpurun_xasprintf("%s.conf", t->base);
            char *shown = gpurun_xasprintf("%s/%s", GPURUN_PROV_TEMPLATES_DIR, copy);
            json_t *b = kept_file(bpath, tdfd, copy, shown, fmode, notes, &text, &len);
            json_object_set_new(b, GPURUN_REC_PROV_NAME, json_string(t->base));
            json_array_append_new(bases, b);
            free(copy);
            free(shown);
            free(cur);
            cur = bpath;
        } else {
            free(bpath);
        }
        gpurun_error_clear(&e);
        gpurun_template_destroy(t);
        free(dir);
    }
    free(text);
    free(cur);
    return bases;
}

static json_t *kept_template(const struct gpurun_prov_in *in, json_t *notes)
{
    if (!in->tpl || !in->tpl->path || !in->job->template_name)
        return json_null();
    mode_t dmode = in->fmode | ((in->fmode & 0444) >> 2) | 0100; /* 0600: 0700; 0640: 0750 */
    gpurun_error_t e = {0};
    int tdfd = gpurun_open_folder_at(in->dfd, GPURUN_PROV_TEMPLATES_DIR, NULL, "the run folder's", dmode, true, &e);
    char *copy = gpurun_xasprintf("%s.conf", in->job->template_name);
    char *shown = gpurun_xasprintf("%s/%s", GPURUN_PROV_TEMPLATES_DIR, copy);
    char *text = NULL;
    size_t len = 0;
    json_t *t;
    if (tdfd < 0) {
        note(notes, "%s%s", e.text, " (the template is not kept)");
        t = json_pack("{s:s, s:n, s:n}", GPURUN_REC_PROV_PATH, in->tpl->path, GPURUN_REC_PROV_SHA256,
                      GPURUN_REC_PROV_COPY);
        gpurun_error_clear(&e);
    } else {
        t = kept_file(in->tpl->path, tdfd, copy, shown, in->fmode, notes, &text, &len);
        json_object_set_new(t, GPURUN_REC_PROV_BASES, kept_bases(in->tpl->path, text, len, tdfd, in->fmode, notes));
        close(tdfd);
    }
    json_object_set_new(t, GPURUN_REC_PROV_NAME, json_string(in->job->template_name));
    free(copy);
    free(shown);
    return t;
}

/* ---- program, inputs, versions ------------------------------------------- */

/* {path, size, sha256, sampled} of `path`, the bytes hashed whole taken
 * from *budget. */
/* "/a/./b" as "/a/b": a path said plainly (the job's "./prog" found in its
 * folder), the same file. */
static char *plain_path(const char *path)
{
    char *out = gpurun_xstrdup(path), *p;
    while ((p = strstr(out, "/./")))
        memmove(p, p + 2, strlen(p + 2) + 1);
    return out;
}

static json_t *file_json(const char *path, long long *budget, json_t *notes)
{
    struct gpurun_file_hash h;
    gpurun_error_t e = {0};
    long long whole = *budget < GPURUN_PROV_WHOLE_MAX ? *budget : GPURUN_PROV_WHOLE_MAX;
    char *plain = plain_path(path);
    json_t *j = json_pack("{s:s, s:n, s:n, s:b}", GPURUN_REC_PROV_PATH, plain, GPURUN_REC_PROV_SIZE,
                          GPURUN_REC_PROV_SHA256, GPURUN_REC_PROV_SAMPLED, 0);
    free(plain);
    if (gpurun_hash_file(path, whole, &h, &e) < 0) {
        note(notes, "%s%s", e.text, "");
        gpurun_error_clear(&e);
        return j;
    }
    if (!h.sampled)
        *budget -= h.size;
    json_object_set_new(j, GPURUN_REC_PROV_SIZE, json_integer(h.size));
    json_object_set_new(j, GPURUN_REC_PROV_SHA256, json_string(h.sha256));
    json_object_set_new(j, GPURUN_REC_PROV_SAMPLED, json_boolean(h.sampled));
    return j;
}

static json_t *inputs_json(const struct gpurun_prov_in *in, long long *budget, json_t *notes)
{
    json_t *inputs = json_array();
    size_t n = in->tpl ? in->tpl->ninputs : 0;
    for (size_t i = 0; i < n; i++) {
        if (i == GPURUN_PROV_INPUTS_MAX) {
            json_array_append_new(notes, json_sprintf("inputs: the first %d of %zu named", GPURUN_PROV_INPUTS_MAX, n));
            break;
        }
        gpurun_error_t e = {0};
        char *path = gpurun_input_path(in->tpl, i, in->job_dir, in->names, NULL, &e);
        if (!path)
            note(notes, "%s%s", e.text, "");
        else if (*path)
            json_array_append_new(inputs, file_json(path, budget, notes));
        free(path);
        gpurun_error_clear(&e);
    }
    return inputs;
}

/* The first line of `mpirun --version`, once per process: the MPI the
 * launchers start (the same module environment); NULL: none on PATH. */
static const char *mpi_version(void)
{
    static bool done;
    static char line[160];
    if (done)
        return line[0] ? line : NULL;
    done = true;
    char *found = gpurun_which("mpirun");
    if (!found)
        return NULL;
    char out[1024], why[256];
    char *argv[] = {found, "--version", NULL};
    if (gpurun_capture(argv, out, sizeof out, GPURUN_PROV_VERSION_TIMEOUT_MS, why, sizeof why) == 0) {
        out[strcspn(out, "\r\n")] = '\0';
        gpurun_short_text(line, sizeof line, out);
    }
    free(found);
    return line[0] ? line : NULL;
}

/* ---- the whole ----------------------------------------------------------- */

json_t *gpurun_provenance(const struct gpurun_prov_in *in)
{
    json_t *notes = json_array(), *p = json_object();
    const gpurun_job_t *job = in->job;
    const char *text_file = job->text_file ? job->text_file : job->path;
    json_t *j =
        text_file
            ? kept_file(text_file, in->dfd, GPURUN_PROV_JOB_COPY, GPURUN_PROV_JOB_COPY, in->fmode, notes, NULL, NULL)
            : json_pack("{s:n, s:n, s:n}", GPURUN_REC_PROV_PATH, GPURUN_REC_PROV_SHA256, GPURUN_REC_PROV_COPY);
    if (job->path) { /* absolute, for gpurun rerun from anywhere; read from the kept copy by a rerun */
        const char *base = strrchr(job->path, '/');
        char *abs = job->path[0] == '/' || !in->job_dir
                        ? gpurun_xstrdup(job->path)
                        : gpurun_xasprintf("%s/%s", in->job_dir, base ? base + 1 : job->path);
        json_object_set_new(j, GPURUN_REC_PROV_PATH, json_string(abs));
        free(abs);
    }
    json_object_set_new(p, GPURUN_REC_PROV_JOB, j);
    json_object_set_new(p, GPURUN_REC_PROV_TEMPLATE, kept_template(in, notes));
    json_t *sets = json_array();
    for (size_t i = 0; i < in->nsets; i++)
        json_array_append_new(sets, json_string(in->sets[i]));
    json_object_set_new(p, GPURUN_REC_PROV_OVERRIDES, sets);
    long long budget = GPURUN_PROV_WHOLE_BUDGET;
    if (in->program)
        json_object_set_new(p, GPURUN_REC_PROV_PROGRAM, file_json(in->program, &budget, notes));
    else
        json_object_set_new(p, GPURUN_REC_PROV_PROGRAM,
                            json_pack("{s:n, s:n, s:s}", GPURUN_REC_PROV_PATH, GPURUN_REC_PROV_SHA256, "note",
                                      "in the container: the image's digest names it"));
    json_object_set_new(p, GPURUN_REC_PROV_INPUTS, inputs_json(in, &budget, notes));
    const char *mpi = mpi_version();
    json_object_set_new(p, GPURUN_REC_PROV_VERSIONS,
                        json_pack("{s:s, s:s?, s:s?}", GPURUN_REC_PROV_GPURUN, PACKAGE_VERSION, GPURUN_REC_PROV_MPI,
                                  mpi, GPURUN_REC_PROV_DRIVER, in->driver));
    json_object_set_new(p, GPURUN_REC_PROV_NOTES, notes);
    return p;
}

int gpurun_provenance_copies(const json_t *rec, const char *run_dir, char **jobp, char **tplp, gpurun_error_t *err)
{
    *jobp = *tplp = NULL;
    json_t *p = json_object_get(rec, GPURUN_REC_PROVENANCE);
    const char *jc = gpurun_record_str(json_object_get(p, GPURUN_REC_PROV_JOB), GPURUN_REC_PROV_COPY);
    json_t *t = json_object_get(p, GPURUN_REC_PROV_TEMPLATE);
    const char *tc = gpurun_record_str(t, GPURUN_REC_PROV_COPY);
    if (!jc || strcmp(jc, GPURUN_PROV_JOB_COPY) != 0)
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: the run kept no copy of its job file (a run of an older gpurun, or its copy "
                          "could not be written): it cannot be run again as it was",
                          run_dir);
    const char *tname = gpurun_record_str(t, GPURUN_REC_PROV_NAME);
    if (json_is_object(t) && (!tc || !tname || !gpurun_conf_plain_name_ok(tname) ||
                              strncmp(tc, GPURUN_PROV_TEMPLATES_DIR "/", sizeof GPURUN_PROV_TEMPLATES_DIR) != 0 ||
                              strchr(tc + sizeof GPURUN_PROV_TEMPLATES_DIR, '/')))
        return gpurun_err(err, GPURUN_EXIT_CONFIG,
                          "%s: the run kept no copy of its template: it cannot be run again as it was", run_dir);
    *jobp = gpurun_xasprintf("%s/%s", run_dir, GPURUN_PROV_JOB_COPY);
    if (json_is_object(t))
        *tplp = gpurun_xasprintf("%s/%s", run_dir, tc);
    return 0;
}

/* A file's hash now against the record's entry `f` ({path, sha256,
 * sampled}): a line when it changed or is gone, appended to b. */
static void file_changed(struct gpurun_strbuf *b, const char *what, const json_t *f)
{
    const char *path = gpurun_record_str(f, GPURUN_REC_PROV_PATH), *was = gpurun_record_str(f, GPURUN_REC_PROV_SHA256);
    if (!path || !was)
        return;
    struct gpurun_file_hash h;
    gpurun_error_t e = {0};
    bool sampled = json_is_true(json_object_get(f, GPURUN_REC_PROV_SAMPLED));
    if (gpurun_hash_file(path, sampled ? 0 : GPURUN_PROV_WHOLE_MAX, &h, &e) < 0)
        gpurun_strbuf_printf(b, "%s %s: gone or unreadable since (%s)\n", what, path, e.text);
    else if (strcmp(h.sha256, was) != 0)
        gpurun_strbuf_printf(b, "%s %s changed since (sha256 %.12s... then, %.12s... now)\n", what, path, was,
                             h.sha256);
    gpurun_error_clear(&e);
}

char *gpurun_provenance_changes(const json_t *rec, const char *host)
{
    struct gpurun_strbuf b = {0};
    json_t *p = json_object_get(rec, GPURUN_REC_PROVENANCE);
    file_changed(&b, "program", json_object_get(p, GPURUN_REC_PROV_PROGRAM));
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(p, GPURUN_REC_PROV_INPUTS), i, f) file_changed(&b, "input", f);
    file_changed(&b, "job file (the kept copy is run)", json_object_get(p, GPURUN_REC_PROV_JOB));
    file_changed(&b, "template (the kept copy is run)", json_object_get(p, GPURUN_REC_PROV_TEMPLATE));
    const char *was = gpurun_record_str(rec, GPURUN_REC_GPURUN_VERSION);
    if (was && strcmp(was, PACKAGE_VERSION) != 0)
        gpurun_strbuf_printf(&b, "gpurun %s then, %s now\n", was, PACKAGE_VERSION);
    json_t *hosts = json_object_get(rec, GPURUN_REC_HOSTS), *h;
    bool there = false;
    json_array_foreach(hosts, i, h) there = there || (json_is_string(h) && host && !strcmp(json_string_value(h), host));
    if (host && json_array_size(hosts) && !there) {
        char *list = json_dumps(hosts, JSON_COMPACT);
        gpurun_strbuf_printf(&b, "hosts: it ran on %.200s, this is %s\n", list ? list : "?", host);
        free(list);
    }
    return b.s;
}
