/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GPURUN_CONTAINER_H
#define GPURUN_CONTAINER_H

/* Containers, the hybrid way: the host's launcher starts one rank step per
 * rank, the rank step applies the binding and then starts one container
 * process (apptainer / singularity exec, ch-run, podman run) that inherits
 * its cores, memory policy and environment.  The head builds the runtime's
 * command line once (gpurun_container_wrap) and hands it to the launcher as
 * the program: the rank step only execs it.
 *
 * The `container { }` block of job files, templates and site profiles is
 * read by their own files' schemas with the options below, and checked here
 * (gpurun_container_check), so that its errors name the file, line and key
 * as any other's. */

#include <confuse.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

struct gpurun_conf_ctx;

/* The block as a job file, template or site profile wrote it. */
struct gpurun_container_spec {
    char *image;   /* NULL: not given */
    char *runtime; /* NULL: not given ("auto") */
    char **mounts; /* "SRC" or "SRC:DST", NULL-ended; SRC relative to the file's folder */
    size_t nmounts;
    char **allowed; /* site only: folders every mount (the site's, the template's, the job's) must lie in */
    size_t nallowed;
    char *dir;      /* the file's folder: relative image paths and mounts start there */
    /* Site only: the allowed_mounts of the installed profile this one
     * shadows (a file of the user's of the same name), which hold too. */
    char **admin_allowed;
    size_t nadmin_allowed;
    char *admin_file;  /* that installed profile; NULL: none */
    char *file;        /* the file it was read from, for messages; NULL: none */
    char *mounts_from; /* "FILE:LINE" of its `mounts` (or the file), for messages; NULL: none */
};

/* libconfuse options of the block: image, runtime, mounts (job files,
 * templates), and runtime, mounts, allowed_mounts (site profiles). */
#define GPURUN_CONTAINER_JOB_OPTS                                                                  \
    {                                                                                              \
        CFG_STR("image", NULL, CFGF_NONE), CFG_STR("runtime", NULL, CFGF_NONE),                   \
            CFG_STR_LIST("mounts", NULL, CFGF_NONE), CFG_END()                                     \
    }
#define GPURUN_CONTAINER_SITE_OPTS                                                                 \
    {                                                                                              \
        CFG_STR("runtime", NULL, CFGF_NONE), CFG_STR_LIST("mounts", NULL, CFGF_NONE),             \
            CFG_STR_LIST("allowed_mounts", NULL, CFGF_NONE), CFG_END()                             \
    }

/* Pass 3 of a file with a `container` block: the runtime is a known one,
 * the image and every mount exist (relative to the file's folder), no path
 * holds ':' or ','. */
void gpurun_container_check(struct gpurun_conf_ctx *ctx, cfg_t *cfg);
/* The block of cfg as a spec (all NULL when the file has none). */
void gpurun_container_take(const struct gpurun_conf_ctx *ctx, cfg_t *cfg,
                           struct gpurun_container_spec *spec);
void gpurun_container_spec_clear(struct gpurun_container_spec *spec);
bool gpurun_container_wanted(const struct gpurun_container_spec *spec);

/* What a run needs: the job's block over the template's, then the site's. */
struct gpurun_container_run {
    const char *runtime; /* "apptainer" | "singularity" | "charliecloud" | "podman" | "pyxis" */
    char *exe;           /* the runtime program, found on PATH */
    char *image;         /* an absolute path, or a reference the runtime resolves */
    bool image_is_path;
    char *why;           /* how the runtime was chosen */
    char **mounts;       /* "SRC:DST", absolute; the job and run folders added at wrap time */
    size_t nmounts;
    char **env_names;    /* podman: variables passed by name (-e NAME) */
    size_t nenv;
    char *digest;        /* the image's content digest where the runtime gives one, else NULL */
    /* An image file or folder: which one it was, without reading it (a
     * SquashFS or SIF image may be gigabytes): its size, mtime, inode and
     * device; a SIF image's own ID (its header's UUID, set when built). */
    bool have_file;
    long long file_size, file_mtime_ns;
    unsigned long long file_inode, file_dev;
    char *sif_id;
    char *inside;        /* gpurun-rank, the container's entry that reports the binding from inside; NULL: none */
    char *inside_note;   /* why there is none (the rank steps' reports then say the binding they applied) */
};

/* Choose the runtime (the job's, the template's, the site's, else the first
 * of apptainer, singularity, ch-run, podman found on PATH), resolve every
 * mount (the site's, the template's, the job's) with realpath() and check
 * what it resolves to: inside the site's allowed_mounts when it names some,
 * and free of what the chosen runtime splits its mount option on
 * (gpurun_container_path_problem); then find the image's digest.
 * `launcher`: the job's launcher setting (a runtime a resource manager's
 * launch command runs, pyxis, runs only under that launcher; `auto` picks
 * it first inside the manager's allocation where the command takes it).
 * `origin(key)` places an error on the job's line; a runtime missing is
 * exit 3 naming what to install, a mount the site refuses or the runtime
 * cannot carry exit 2, naming the file (and line) it came from. */
int gpurun_container_resolve(const struct gpurun_container_spec *job,
                             const struct gpurun_container_spec *tpl,
                             const struct gpurun_container_spec *site, const char *job_origin_image,
                             const char *job_origin_mounts, const char *job_origin_runtime, const char *launcher,
                             struct gpurun_container_run **runp, gpurun_error_t *err);
void gpurun_container_run_free(struct gpurun_container_run *run);

/* Why `path` cannot be handed to `run`'s runtime as a mount (a static
 * text: "','", "a blank", ...), or NULL when it can.  Every runtime splits
 * "SRC:DST" on ':'; Apptainer/Singularity split --bind on ',', ':' and '^'
 * (the regexp ([^,^:]+:?)), trim each piece of spaces, and older ones read
 * it as CSV ('"' quotes); pyxis splits --container-mounts on ',' and writes
 * each mount into a bash script as `echo "SRC DST FLAGS"` that enroot reads
 * as an fstab line (blanks, '"', '$', '`', '\\' change it); a control
 * character is refused everywhere. */
const char *gpurun_container_path_problem(const struct gpurun_container_run *run, const char *path);

/* A variable the container must see (podman only passes what it is told). */
void gpurun_container_pass_env(struct gpurun_container_run *run, const char *name);

/* The runtime's command line that starts `app` in the container with the
 * run folder and job folder mounted at their own paths, `run_dir` as the
 * working folder, and the GPU option when `gpus` > 0 ("nvidia" | "amd").
 * A new NULL-ended vector (gpurun_free_words). */
char **gpurun_container_wrap(const struct gpurun_container_run *run, char *const *app,
                             const char *run_dir, const char *job_dir, int gpus,
                             const char *gpu_vendor);

/* The same for a rank: with `run->inside`, the container's entry is
 * `INSIDE --inside FD -- app...` (gpurun-rank, its folder mounted read-only
 * at its own path), which reports the binding it finds inside on the
 * descriptor GPURUN_INSIDE_FD (rank.h) and execs the program. */
char **gpurun_container_wrap_rank(const struct gpurun_container_run *run, char *const *app, const char *run_dir,
                                  const char *job_dir, int gpus, const char *gpu_vendor);

/* A runtime that is no program of its own but an option of a resource
 * manager's launch command (rm.h's container: pyxis), as the program that
 * loads the manager plugins tells the library (launcher/run/plugin.c). */
struct gpurun_container_manager {
    const char *program;  /* the launch command, its launcher's name */
    const char *title;    /* the manager in messages */
    const char *option, *install, *outside; /* rm.h's gpurun_rm_container */
    bool inside;          /* gpurun runs inside one of its allocations */
    char where[200];      /* then where, as the manager says it */
    bool (*ready)(const char *program, char *why, size_t len);
};
/* 1 with *out filled when a manager's launch command runs `runtime`, else 0. */
typedef int (*gpurun_container_manager_fn)(const char *runtime, struct gpurun_container_manager *out);
void gpurun_container_set_managers(gpurun_container_manager_fn fn);

/* pyxis: the launch command's options that start every task in the image (a new
 * NULL-ended vector); NULL for the other runtimes. */
char **gpurun_container_launcher_options(const struct gpurun_container_run *run, const char *run_dir,
                                         const char *job_dir);

/* Use `rank_program` (gpurun-rank; NULL: none found) as the container's
 * entry when it can run in any image: a statically linked program.  Else
 * run->inside stays NULL and run->inside_note says why. */
void gpurun_container_set_inside(struct gpurun_container_run *run, const char *rank_program);

/* For `gpurun doctor`: the runtimes on PATH, each with how it would pass
 * this node's GPUs (device nodes, the runtime's GPU option), in `detail`.
 * *gpu_ok: every runtime found would give the ranks their GPUs.  Returns
 * how many runtimes were found. */
int gpurun_container_doctor(bool nvidia_gpus, bool amd_gpus, char *detail, size_t size, bool *gpu_ok);

#endif
