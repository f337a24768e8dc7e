/* SPDX-License-Identifier: BSD-3-Clause */
/* The run's record (run_record): what the run was (job, plan, bindings,
 * hosts, MPS, container), how it ended, its figures, energy and cost, the
 * conditions and provenance; then kept in the run folder and the results
 * index (run_keep_record). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "monitor.h"
#include "alloc.h"
#include "container.h"
#include "energy.h"
#include "failure.h"
#include "fom.h"
#include "gpudirect.h"
#include "hpldat.h"
#include "launch.h"
#include "manager.h"
#include "plan.h"
#include "plugin.h"
#include "conditions.h"
#include "rank.h"
#include "rank_conditions.h"
#include "rankenv.h"
#include "record.h"
#include "results.h"
#include "scan.h"
#include "safefile.h"
#include "mps.h"
#include "run_private.h"
#include "site.h"
#include "template.h"
#include "topology.h"
#include "inputs.h"
#include "rendezvous.h"
#include "progress.h"
#include "provenance.h"
#include "runstatus.h"
#include "say.h"
#include "watch.h"
#include "stall.h"
#include "stall_rank.h"
#include "torchrun.h"
#include "util.h"

json_t *run_container_json(const struct run_ctx *c, char *const *launched)
{
    json_t *argv = json_array();
    for (char *const *a = launched; *a; a++)
        json_array_append_new(argv, json_string(*a));
    json_t *file = c->ctr->have_file
                       ? json_pack("{s:I, s:I, s:I, s:I}", "size", (json_int_t)c->ctr->file_size, "mtime_ns",
                                   (json_int_t)c->ctr->file_mtime_ns, "inode", (json_int_t)c->ctr->file_inode,
                                   "device", (json_int_t)c->ctr->file_dev)
                       : json_null();
    return json_pack("{s:s, s:s, s:s, s:s?, s:b, s:s, s:o, s:s, s:s?, s:s?, s:o, s:s?}", "runtime", c->ctr->runtime,
                     "runtime_path", c->ctr->exe, "image", c->ctr->image, "digest", c->ctr->digest, "image_is_path",
                     c->ctr->image_is_path, "why", c->ctr->why, "argv", argv, "binding_from",
                     c->ctr->inside || !strcmp(c->ctr->runtime, "pyxis") ? "inside" : "rank step", "inside_entry",
                     c->ctr->inside, "inside_note",
                     c->ctr->inside_note, "image_file", file, "sif_id", c->ctr->sif_id);
}

char *run_iso_time(time_t t)
{
    char buf[32];
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return gpurun_xstrdup(buf);
}

/* A value that is not UTF-8 is kept as it is, not dropped: writing the
 * document then fails, naming the file, instead of a record that lies. */
json_t *run_kv_json(const struct gpurun_kvlist *kv)
{
    json_t *o = json_object();
    for (size_t i = 0; i < kv->n; i++) {
        json_t *v = json_string(kv->items[i].value);
        json_object_set_new_nocheck(o, kv->items[i].key, v ? v : json_string_nocheck(kv->items[i].value));
    }
    return o;
}

/* The hosts the ranks really ran on, in rank order. */
static json_t *ran_on_hosts(json_t *bindings)
{
    json_t *hosts = json_array(), *seen_hosts = json_object(); /* a set: linear in ranks, whatever the hosts */
    json_t *bnd;
    size_t bi;
    json_array_foreach(bindings, bi, bnd)
    {
        const char *h = json_string_value(json_object_get(bnd, "host"));
        if (h && !json_object_get(seen_hosts, h)) {
            json_object_set_new(seen_hosts, h, json_true());
            json_array_append_new(hosts, json_string(h));
        }
    }
    json_decref(seen_hosts);
    return hosts;
}

/* "plan" is the head's topology repeated for every node; what each host
 * really planned for its own ranks is its plan.HOST.json. */
static json_t *host_plans_json(int dfd, json_t *hosts)
{
    json_t *host_plans = json_object();
    json_t *hj;
    size_t bi;
    json_array_foreach(hosts, bi, hj)
    {
        char *hp = gpurun_host_plan_name(json_string_value(hj));
        json_t *doc = gpurun_read_own_json_at(dfd, hp, hp, NULL);
        json_object_del(doc, "rank_index"); /* for rank steps only */
        free(hp);
        json_object_set_new(host_plans, json_string_value(hj), doc ? doc : json_null());
    }
    return host_plans;
}

/* The record's "mps": this host's daemon (as gpurun started and stopped
 * it), and under "hosts" each host's, from the plan its planner wrote:
 * which hosts started a daemon, which used the user's. */
static json_t *mps_record(struct run_ctx *c, struct run_attempt *a, json_t *hosts, json_t *host_plans)
{
    json_t *per = json_object();
    if (a->mps_json)
        json_object_set(per, a->host, a->mps_json);
    json_t *hj;
    size_t i;
    json_array_foreach(hosts, i, hj)
    {
        const char *name = json_string_value(hj);
        if (!name || !strcmp(name, a->host))
            continue;
        json_t *doc = json_incref(json_object_get(host_plans, name));
        if (!doc) {
            char *hp = gpurun_host_plan_name(name);
            doc = gpurun_read_own_json_at(a->dfd, hp, hp, NULL);
            free(hp);
        }
        json_t *m = json_object_get(doc, "mps");
        if (json_is_object(m))
            json_object_set(per, name, m);
        json_decref(doc);
    }
    if (!a->mps_json && json_object_size(per) == 0) {
        json_decref(per);
        return NULL;
    }
    json_t *rec = a->mps_json ? json_copy(a->mps_json) : json_pack("{s:s}", "mode", gpurun_mps_mode_name(c->job->mps));
    json_object_set_new(rec, "hosts", per);
    return rec;
}

/* The record's site, prices and currency: null where the site says none. */
static void add_site_prices(json_t *record, const gpurun_site_t *site)
{
    json_object_set_new(record, GPURUN_REC_SITE, site ? json_string(site->name) : json_null());
    json_object_set_new(record, GPURUN_REC_PRICE_PER_GPU_HOUR,
                        site && site->price_per_gpu_hour >= 0 ? json_real(site->price_per_gpu_hour) : json_null());
    json_object_set_new(record, GPURUN_REC_SPOT_PRICE_PER_GPU_HOUR,
                        site && site->spot_price_per_gpu_hour >= 0 ? json_real(site->spot_price_per_gpu_hour)
                                                                    : json_null());
    json_object_set_new(record, GPURUN_REC_CURRENCY, site && site->currency ? json_string(site->currency) : json_null());
}

/* A string for the record, or null: a value read from a file need not be
 * UTF-8, which json_string refuses. */
static json_t *string_or_null(const char *s)
{
    json_t *j = s ? json_string(s) : NULL;
    return j ? j : json_null();
}

/* The CPU model as hwloc names it (the first package's CPUModel, from
 * /proc/cpuinfo's "model name" on Linux); NULL when it names none (an
 * exported topology without it). */
/* The CPU the run ran on, as the kernel names it (/proc/cpuinfo's first
 * "model name", what lscpu shows: a virtual machine's CPUID brand string
 * can say another), else hwloc's CPUModel; blanks at the end dropped. */
static const char *cpu_model(const gpurun_topo_t *t)
{
    static char model[256];
    char *buf = NULL;
    size_t len = 0;
    gpurun_error_t e;
    model[0] = '\0';
    if (gpurun_read_file("/proc/cpuinfo", "cpuinfo", 1 << 20, &buf, &len, &e) == 0) {
        const char *l = !strncmp(buf, "model name", 10) ? buf : strstr(buf, "\nmodel name");
        size_t ll = l ? strcspn(l + (*l == '\n'), "\n") : 0;
        const char *colon = l ? memchr(l + (*l == '\n'), ':', ll) : NULL;
        if (colon)
            snprintf(model, sizeof model, "%.*s", (int)strcspn(colon + 1, "\n"), colon + 1);
        free(buf);
    }
    if (!model[0]) {
        hwloc_obj_t pkg = t && t->hw ? hwloc_get_obj_by_type(t->hw, HWLOC_OBJ_PACKAGE, 0) : NULL;
        const char *m = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
        if (!m && t && t->hw)
            m = hwloc_obj_get_info_by_name(hwloc_get_root_obj(t->hw), "CPUModel");
        snprintf(model, sizeof model, "%s", m ? m : "");
    }
    char *p = model + strspn(model, " \t");
    size_t n = strlen(p);
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        p[--n] = '\0';
    return *p ? p : NULL;
}

/* The record's `energy` (energy.h): this host's RAPL counters and GPUs as
 * gpurun read them; every other host's as its first rank step there read
 * them (its status report's "energy", taken out of rank_status).  Then
 * energy per unit of work beside the record's throughput figures.  Runs
 * that failed, timed out or were interrupted have theirs too: the counters
 * were read when the ranks ended, however they ended. */
static void add_energy(struct run_ctx *c, struct run_attempt *a, json_t *record)
{
    json_t *hosts = json_array();
    /* gpurun's host counts when ranks ran there (or none said where they
     * ran): a launcher on a login node starting ranks elsewhere is not the
     * job's energy. */
    json_t *ran = ran_on_hosts(a->rr.bindings);
    bool here = json_array_size(ran) == 0;
    size_t i;
    json_t *st;
    json_array_foreach(ran, i, st)
        here = here || !strcmp(json_string_value(st) ? json_string_value(st) : "", a->host);
    if (here && a->rapl0 && a->rapl1) {
        /* No NVIDIA GPU planned here: nothing missing (a CPU job). */
        json_t *own = gpurun_energy_host_json(a->host, a->rapl0, a->rapl1, a->gpus_monitor,
                                              strcmp(a->mon_why, "no GPUs to monitor") ? a->mon_why : "");
        /* GPUs of other vendors than NVIDIA and AMD: no reader, said per GPU. */
        for (int r = 0; r < c->plan->nranks; r++)
            for (int g = 0; c->plan->ranks[r].node == 0 && g < c->plan->ranks[r].ngpus && g < 64; g++) {
                const gpurun_gpu_t *gpu = &c->topo->gpus[c->plan->ranks[r].gpus[g]];
                if (!strcmp(gpu->vendor, "nvidia") || !strcmp(gpu->vendor, "amd") ||
                    json_array_size(json_object_get(own, "missing")) > 256)
                    continue;
                char why[256];
                snprintf(why, sizeof why, "GPU %s (%s): no energy counter gpurun reads", gpu->pci, gpu->vendor);
                bool dup = false; /* a GPU shared by ranks: once */
                size_t k;
                json_t *m;
                json_array_foreach(json_object_get(own, "missing"), k, m) {
                    const char *w = json_string_value(json_object_get(m, "why"));
                    dup = dup || (w && !strcmp(w, why));
                }
                if (!dup)
                    json_array_append_new(json_object_get(own, "missing"),
                                          json_pack("{s:s, s:s}", "kind", "gpu", "why", why));
            }
        json_array_append_new(hosts, own);
    }
    json_array_foreach(a->rr.statuses, i, st) {
        json_t *e = json_object_get(st, "energy");
        const char *h = json_string_value(json_object_get(e, "host"));
        if (json_is_object(e) && h && strcmp(h, a->host) && json_array_size(hosts) < 4096)
            json_array_append(hosts, e);
        json_object_del(st, "energy");
    }
    /* A host whose first rank step said nothing of energy (killed, or it
     * failed before its program started): said, not left out silently. */
    json_t *h, *have = json_object(); /* a set of the hosts that have a part: linear in hosts */
    json_array_foreach(hosts, i, h)
        if (json_string_value(json_object_get(h, "host")))
            json_object_set_new(have, json_string_value(json_object_get(h, "host")), json_true());
    json_array_foreach(ran, i, h) {
        const char *name = json_string_value(h);
        if (name && !json_object_get(have, name) && json_array_size(hosts) < 4096)
            json_array_append_new(hosts, json_pack("{s:s, s:[], s:[{s:s, s:s}], s:n}", "host", name, "devices", "missing",
                                                   "kind", "host", "why", "its first rank step reported no energy (it was "
                                                   "killed, or failed before its program started)", "measured_s"));
    }
    json_decref(have);
    json_decref(ran);
    /* The resource managers' own figures beside gpurun's (rm.h's energy()): bounded. */
    struct gpurun_energy_accounted acc[GPURUN_RM_ENERGY_MAX];
    size_t nacc = gpurun_rm_energy(acc, GPURUN_RM_ENERGY_MAX);
    json_t *e = gpurun_energy_json(hosts, c->site ? c->site->price_per_kwh : -1,
                                   c->site ? c->site->grams_co2_per_kwh : -1, acc, nacc);
    gpurun_energy_per_unit(json_object_get(record, "foms"), json_number_value(json_object_get(e, "mean_power_W")));
    json_object_set_new(record, GPURUN_REC_ENERGY, e);
}

/* The template's regexes that took too long and were dropped (util.h):
 * the record's notes, and a warning. */
static void add_regex_notes(const struct run_ctx *c, json_t *record)
{
    const struct gpurun_regex_budget *b = c->tpl ? c->tpl->regex_budget : NULL;
    if (!b || !b->ndropped)
        return;
    json_t *notes = json_array();
    for (size_t i = 0; i < b->nnotes; i++) {
        json_array_append_new(notes, json_string(b->notes[i]));
        gpurun_say(stderr, "gpurun: warning: template '%s': %s\n", c->tpl->name, b->notes[i]);
    }
    if (b->ndropped > b->nnotes)
        json_array_append_new(notes, json_sprintf("and %zu more regexes dropped", b->ndropped - b->nnotes));
    if (b->test_hook)
        json_array_append_new(notes, json_sprintf("test hook GPURUN_TEST_REGEX_BUDGET_S: the budget was %g s, not %g s",
                                                  b->limit_s, (double)GPURUN_REGEX_BUDGET_S));
    json_object_set_new(record, GPURUN_REC_NOTES, notes);
}

/* record.json's document for this run, ending with exit status rc. */
json_t *run_record(struct run_ctx *c, struct run_attempt *a, int rc, int repeat_index)
{
    gpurun_job_t *job = c->job;
    char *s0 = run_iso_time(a->start), *s1 = run_iso_time(time(NULL));
    const gpurun_gpu_t *g0 = c->plan->ranks[0].ngpus ? &c->topo->gpus[c->plan->ranks[0].gpus[0]] : NULL;
    json_t *hosts = ran_on_hosts(a->rr.bindings);
    json_t *record = json_pack(
        "{s:s, s:s, s:s?, s:s, s:s, s:f, s:i, s:s, s:i, s:i, s:i, s:i, s:s, s:o, s:s?, s:o, s:i}", GPURUN_REC_RUN_ID,
        strrchr(a->run_dir, '/') + 1, GPURUN_REC_JOB, job->name, GPURUN_REC_TEMPLATE, job->template_name,
        GPURUN_REC_START, s0, GPURUN_REC_END, s1, GPURUN_REC_WALL_S, a->oc.wall_s, GPURUN_REC_EXIT_STATUS, rc,
        GPURUN_REC_STATE, a->state, GPURUN_REC_NODES, c->plan->req.nodes, GPURUN_REC_RANKS, c->plan->nranks,
        GPURUN_REC_GPUS_PER_RANK, c->plan->req.gpus_per_rank, GPURUN_REC_THREADS_PER_RANK, c->plan->ranks[0].threads,
        GPURUN_REC_LAUNCHER, c->launcher->name, GPURUN_REC_HOSTS, hosts, GPURUN_REC_GPU_MODEL, g0 ? g0->name : NULL,
        GPURUN_REC_PARAMS, run_kv_json(&job->params), GPURUN_REC_REPEAT_INDEX, repeat_index);
    json_object_set_new(record, GPURUN_REC_COMMAND, json_array());
    for (char **arg = a->app; *arg; arg++)
        json_array_append_new(json_object_get(record, GPURUN_REC_COMMAND), json_string(*arg));
    json_object_set_new(record, GPURUN_REC_CONTAINER, c->ctr ? run_container_json(c, a->launched) : json_null());
    json_object_set_new(record, GPURUN_REC_LAUNCHER_CHOICE, json_string(c->launcher_why));
    if (c->alloc_note[0])
        json_object_set_new(record, GPURUN_REC_ALLOCATION, json_string(c->alloc_note));
    json_object_set_new(record, GPURUN_REC_PLAN, gpurun_plan_json(c->plan));
    json_t *host_plans = json_array_size(hosts) > 1 ? host_plans_json(a->dfd, hosts) : NULL;
    if (host_plans)
        json_object_set_new(record, GPURUN_REC_HOST_PLANS, host_plans);
    if (a->failure)
        json_object_set(record, GPURUN_RECORD_FAILURE, a->failure);
    json_object_set_new(record, GPURUN_REC_BINDINGS, json_incref(a->rr.bindings));
    json_object_set_new(record, GPURUN_REC_RANK_STATUS, json_incref(a->rr.statuses));
    json_object_set_new(record, GPURUN_REC_GPURUN_VERSION, json_string(PACKAGE_VERSION));
    /* The program's own version (the template's `version`) and the CPU: two
     * builds, or two kinds of node, told apart in the report. */
    char *pver = gpurun_version_read(c->tpl, a->run_dir, gpurun_kvlist_lookup, &a->names);
    json_object_set_new(record, GPURUN_REC_PROGRAM_VERSION, string_or_null(pver));
    free(pver);
    json_object_set_new(record, GPURUN_REC_CPU_MODEL, string_or_null(cpu_model(c->topo)));
    json_object_set_new(record, GPURUN_REC_GPUDIRECT, c->gdr ? json_incref(c->gdr) : json_null());
    if (a->rdv_json) {
        if (a->rdv_port > 0)
            json_object_set_new(a->rdv_json, "port", json_integer(a->rdv_port));
        json_object_set(record, GPURUN_REC_RENDEZVOUS, a->rdv_json);
    }
    json_t *mps = mps_record(c, a, hosts, host_plans);
    if (mps)
        json_object_set_new(record, GPURUN_REC_MPS, mps);
    json_object_set_new(record, GPURUN_REC_GPUS_MONITOR, a->gpus_monitor ? json_incref(a->gpus_monitor) : json_null());
    if (!a->gpus_monitor && a->mon_why[0])
        json_object_set_new(record, GPURUN_REC_GPUS_MONITOR_NOTE, json_string(a->mon_why));
    json_object_set_new(record, GPURUN_REC_FOMS, gpurun_foms_json(&a->foms));
    json_t *note = run_foms_note(c, a);
    if (note)
        json_object_set_new(record, GPURUN_REC_FOMS_NOTE, note);
    /* Kept on every end: what an interrupted or failed run had reached. */
    json_t *progress = gpurun_watch_progress_json(a->watch);
    json_object_set_new(record, GPURUN_REC_PROGRESS, progress ? progress : json_null());
    json_t *conditions = gpurun_watch_conditions_json(a->watch);
    json_object_set_new(record, GPURUN_REC_CONDITIONS, conditions ? conditions : json_null());
    json_t *stall = gpurun_stall_record(a->stall);
    if (stall)
        json_object_set_new(record, GPURUN_REC_STALL, stall);
    json_object_set_new(record, GPURUN_REC_REFERENCES, json_incref(a->refs));
    json_object_set_new(record, GPURUN_REC_CONFIG, json_incref(c->config));
    json_object_set_new(record, GPURUN_REC_GPUS, json_integer((json_int_t)c->plan->nranks * c->plan->req.gpus_per_rank));
    add_site_prices(record, c->site);
    if (c->opts->tune)
        json_object_set(record, GPURUN_REC_TUNE, c->opts->tune);
    if (a->prov) { /* the program's version is known from its log only at the end */
        json_object_set(json_object_get(a->prov, GPURUN_REC_PROV_VERSIONS), GPURUN_REC_PROV_PROGRAM,
                        json_object_get(record, GPURUN_REC_PROGRAM_VERSION));
        json_object_set(record, GPURUN_REC_PROVENANCE, a->prov);
    }
    add_energy(c, a, record);
    add_regex_notes(c, record);
    free(s0);
    free(s1);
    return record;
}

/* Writes the record and adds it to the results database, then says the
 * figures of merit: the exit status, rc or the record's failure. */
int run_keep_record(struct run_ctx *c, struct run_attempt *a, json_t *record, int rc, gpurun_error_t *err)
{
    /* A run whose record is not on disk is not a success, and the results
     * database names only records that are. */
    char *p = gpurun_xasprintf("%s/record.json", a->run_dir);
    gpurun_error_t werr;
    if (gpurun_write_json_at(a->dfd, "record.json", p, record, a->fmode, GPURUN_WRITE_SYNC, &werr) < 0) {
        if (rc == 0)
            gpurun_err(err, GPURUN_EXIT_ENV, "the ranks ended well, but the record could not be written: %s; "
                       "the run is not in the results", werr.text);
        else
            gpurun_say(stderr, "gpurun: the record could not be written either: %s\n", werr.text);
        rc = rc ? rc : GPURUN_EXIT_ENV;
    } else if (gpurun_results_add(c->results, p, &werr) < 0) {
        gpurun_say(stderr, "gpurun: warning: the record is kept, but the results database was not updated: %s\n",
                   werr.text);
    }
    free(p);
    if (!c->opts->quiet) {
        const gpurun_foms_t *foms = &a->foms;
        for (size_t f = 0; f < foms->n; f++)
            if (foms->f[f].n)
                gpurun_say(stdout, "gpurun: %s: %s = %g %s\n", c->job->name, foms->f[f].name,
                           foms->f[f].values[foms->f[f].n - 1], foms->f[f].units ? foms->f[f].units : "");
        if (rc == 0)
            gpurun_say(stdout, "gpurun: %s: ok in %.1f s; record %s/record.json\n", c->job->name, a->oc.wall_s,
                       a->run_dir);
    } else if (rc == 0) { /* --quiet: the one line a script or a user still needs */
        const gpurun_foms_t *foms = &a->foms;
        gpurun_say(stdout, "gpurun: %s: ok", c->job->name);
        for (size_t f = 0; f < foms->n; f++)
            if (foms->f[f].n)
                gpurun_say(stdout, ", %s = %g%s%s", foms->f[f].name, foms->f[f].values[foms->f[f].n - 1],
                           foms->f[f].units && *foms->f[f].units ? " " : "", foms->f[f].units ? foms->f[f].units : "");
        gpurun_say(stdout, ", %s\n", a->run_dir);
    }
    return rc;
}
