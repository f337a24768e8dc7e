/* SPDX-License-Identifier: BSD-3-Clause */
/* How a run ended (run_decide_outcome): from the launch's outcome and what
 * the ranks reported, the exit status, the record's state and failure
 * (whose output, which reason), and the message; a case per function
 * (a stall, a time limit, a lost host, a rank's own failure, ...). */
#include "config.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "failure.h"
#include "record.h"
#include "results.h"
#include "run_private.h"
#include "safefile.h"
#include "say.h"

/* Ranks that reported nothing, not even a binding: their host never
 * started them (down, unreachable, refused by the launcher) and wrote
 * nothing, so no host name is known: said by the node the plan gave them,
 * as ranges ("node 3 (ranks 6-7)"), in one pass over the ranks. */
static bool silent_rank(const struct rank_result *rr, int i)
{
    return json_is_null(json_array_get(rr->bindings, (size_t)i)) &&
           json_is_null(json_array_get(rr->statuses, (size_t)i));
}

/* What a launcher said, for a message when it failed alone: its last
 * whole lines outside Open MPI's "-----" help boxes (the line that names
 * the host, as "ssh: Could not resolve hostname h7", comes before the box),
 * without mpirun's warnings about variables -x names; else its last lines. */
char *run_launcher_tail(int dfd, const char *run_dir)
{
    char *p = gpurun_xasprintf("%s/launcher.out", run_dir);
    char *buf = NULL;
    size_t len = 0;
    gpurun_error_t e;
    char *tail = NULL;
    int fd = gpurun_open_own_at(dfd, GPURUN_RUN_LAUNCHER_OUT, p, &e);
    if (fd >= 0 && gpurun_read_fd(fd, p, "launcher output", 16u << 20, &buf, &len, &e) == 0) {
        enum { KEEP = 8 };
        const char *kept[KEEP], *all[KEEP];
        size_t klen[KEEP], alen[KEEP];
        int nk = 0, na = 0;
        bool box = false;
        for (char *line = buf; line < buf + len;) {
            char *nl = memchr(line, '\n', (size_t)(buf + len - line));
            size_t ll = nl ? (size_t)(nl - line) : (size_t)(buf + len - line);
            bool rule = ll >= 10 && strspn(line, "-") >= 10;
            if (ll) {
                memmove(all, all + (na == KEEP), sizeof all[0] * (size_t)(na == KEEP ? KEEP - 1 : 0));
                memmove(alen, alen + (na == KEEP), sizeof alen[0] * (size_t)(na == KEEP ? KEEP - 1 : 0));
                all[na == KEEP ? KEEP - 1 : na] = line;
                alen[na == KEEP ? KEEP - 1 : na++] = ll;
            }
            if (rule)
                box = !box;
            else if (ll && !box && !memmem(line, ll, "could not find environment variable", 35)) {
                memmove(kept, kept + (nk == KEEP), sizeof kept[0] * (size_t)(nk == KEEP ? KEEP - 1 : 0));
                memmove(klen, klen + (nk == KEEP), sizeof klen[0] * (size_t)(nk == KEEP ? KEEP - 1 : 0));
                kept[nk == KEEP ? KEEP - 1 : nk] = line;
                klen[nk == KEEP ? KEEP - 1 : nk++] = ll;
            }
            line += ll + 1;
        }
        const char **l = nk ? kept : all;
        size_t *ln = nk ? klen : alen;
        int n = nk ? nk : na;
        size_t total = 1;
        for (int i = 0; i < n; i++)
            total += ln[i] + 1;
        tail = gpurun_xcalloc(1, total);
        for (int i = 0, o = 0; i < n; i++) {
            memcpy(tail + o, l[i], ln[i]);
            o += (int)ln[i];
            tail[o++] = i + 1 < n ? '\n' : '\0';
        }
        free(buf);
        char *lines = tail;
        tail = gpurun_xasprintf("%s\n(all of it: %s)", lines, p);
        free(lines);
    }
    if (fd >= 0)
        close(fd);
    free(p);
    return tail;
}

void run_unstarted_ranks(const gpurun_plan_t *plan, struct rank_result *rr)
{
    char *out = rr->unstarted;
    size_t size = sizeof rr->unstarted, used = 0;
    out[0] = '\0';
    for (int i = 0; i < plan->nranks && used < size; i++) {
        if (!silent_rank(rr, i))
            continue;
        int node = plan->ranks[i].node, from = i;
        while (i + 1 < plan->nranks && silent_rank(rr, i + 1) && plan->ranks[i + 1].node == node)
            i++;
        if (from == i)
            used += (size_t)snprintf(out + used, size - used, "%snode %d (rank %d)", used ? ", " : "", node, from);
        else
            used += (size_t)snprintf(out + used, size - used, "%snode %d (ranks %d-%d)", used ? ", " : "", node,
                                     from, i);
    }
    if (used >= size)
        snprintf(out + size - 5, 5, "...");
}

const char *run_signal_name(int code)
{
    return code > 128 && code < 128 + 65 ? strsignal(code - 128) : NULL;
}

/* Setup steps run once, in the run folder, before any rank: 0, or -1
 * (stop_with). */
/* The end of the run folder's `file` into a->tail, read once: its lines
 * that start with `label` only (NULL: all), the cause found with `tpl`'s
 * failure patterns then gpurun's own (NULL: gpurun's own only);
 * a->tail_file names it once read. */
void run_read_tail(struct run_attempt *a, const char *file, const char *label, const gpurun_template_t *tpl)
{
    a->tail_read = true;
    char *shown = gpurun_xasprintf("%s/%s", a->run_dir, file);
    gpurun_error_t e;
    int fd = gpurun_open_own_at(a->dfd, file, shown, &e);
    if (fd >= 0 && gpurun_rank_tail_read(fd, label, gpurun_failure_lines(), tpl, &a->tail, &e) == 0) {
        a->tail_file = shown;
        shown = NULL;
    }
    if (fd >= 0)
        close(fd);
    free(shown);
}

/* The ranks succeeded: read the figures of merit, then the template's
 * sanity text and the job's reference bands (exit 1 when one fails). */
int run_check_results(struct run_ctx *c, struct gpurun_kvlist *names, const char *run_dir, gpurun_foms_t *foms, json_t *refs,
                         const char **state, gpurun_error_t *err)
{
    if (!c->tpl) {
        if (c->job->references.n)
            gpurun_say(stderr, "gpurun: warning: references need a template's figures of merit; not checked\n");
        return 0;
    }
    if (gpurun_fom_read(c->tpl, run_dir, gpurun_kvlist_lookup, names, NULL, foms, err) < 0) {
        *state = GPURUN_STATE_SANITY_FAILED;
        err->code = GPURUN_EXIT_CHECK;
        return GPURUN_EXIT_CHECK;
    }
    char where[512] = "", failed[1024] = "";
    if (!gpurun_sanity_check(c->tpl, run_dir, gpurun_kvlist_lookup, names, where, sizeof where, failed,
                             sizeof failed)) {
        *state = GPURUN_STATE_SANITY_FAILED;
        gpurun_err(err, GPURUN_EXIT_CHECK, "the ranks ended well, but %s; run folder %s", failed, run_dir);
        return GPURUN_EXIT_CHECK;
    }
    for (size_t i = 0; i < foms->n; i++)
        if (foms->f[i].n == 0 && !foms->f[i].optional) {
            *state = GPURUN_STATE_SANITY_FAILED;
            gpurun_err(err, GPURUN_EXIT_CHECK, "the ranks ended well, but no figure '%s' was found in %s",
                       foms->f[i].name, foms->f[i].file ? foms->f[i].file : run_dir);
            return GPURUN_EXIT_CHECK;
        }
    int rc = 0;
    for (size_t r = 0; r < c->job->references.n; r++) {
        const char *name = c->job->references.items[r].key, *spec = c->job->references.items[r].value;
        const struct gpurun_fom_values *fv = NULL;
        for (size_t i = 0; i < foms->n; i++)
            if (!strcmp(foms->f[i].name, name))
                fv = &foms->f[i];
        char why[256] = "";
        int in = 0;
        if (!fv || fv->n == 0)
            snprintf(why, sizeof why, "the template has no figure '%s'", name);
        else if ((in = gpurun_reference_check(spec, fv->values[fv->n - 1], why, sizeof why, err)) < 0)
            return err->code;
        json_object_set_new(refs, name, json_pack("{s:s, s:b}", "spec", spec, "ok", in == 1));
        if (in != 1 && rc == 0) {
            *state = GPURUN_STATE_REFERENCE_FAILED;
            rc = GPURUN_EXIT_CHECK;
            gpurun_err(err, rc, "reference check failed for %s: %s", name, why);
        }
    }
    return rc;
}

/* "SIGSEGV" of a signal number, else "signal N" (into buf). */
const char *run_sig_abbrev(int sig, char *buf, size_t len)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
                 {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
                 {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
                 {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGXCPU, "SIGXCPU"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].sig == sig)
            return names[i].name;
    snprintf(buf, len, "signal %d", sig);
    return buf;
}

/* "exit status 7" or "killed by signal SIGSEGV" for an exit status. */
void run_status_text(int code, char *buf, size_t len)
{
    char sb[32];
    if (code > 128 && code < 128 + 65)
        snprintf(buf, len, "killed by signal %s", run_sig_abbrev(code - 128, sb, sizeof sb));
    else
        snprintf(buf, len, "exit status %d", code);
}

/* Where `rank`'s output is, as its binding says: the file in the run
 * folder (a plain name, nothing else) and the label of its lines there
 * ("3: "; NULL: the file is the rank's own).  NULL: unknown. */
static const char *rank_output_file(const struct rank_result *rr, int rank, const char **label)
{
    json_t *o = json_object_get(json_array_get(rr->bindings, (size_t)rank), "output");
    const char *file = json_string_value(json_object_get(o, "file"));
    *label = json_string_value(json_object_get(o, "label"));
    return file && *file && file[0] != '.' && !strchr(file, '/') ? file : NULL;
}

/* The end of `rank`'s output (a->tail, read once): its last lines and the
 * line that names the cause.  Nothing when the rank has no output here (it
 * never started, or its host's file is on that host's own disk). */
static void read_rank_tail(struct run_ctx *c, struct run_attempt *a, int rank)
{
    if (a->tail_read || rank < 0 || rank >= c->plan->nranks)
        return;
    a->tail_read = true;
    const char *label;
    const char *file = rank_output_file(&a->rr, rank, &label);
    if (file)
        run_read_tail(a, file, label, c->tpl);
}

/* Whether the resource manager ended the step, as its launch command said
 * it (Slurm's "*** STEP 12.0 ON h1 CANCELLED AT ... DUE TO TIME LIMIT ***"),
 * from the launcher's output: its last 64 KiB only. */
static enum gpurun_rm_end manager_ended(const struct run_ctx *c, struct run_attempt *a)
{
    if (!c->rm || !c->rm->ended)
        return GPURUN_RM_END_NONE;
    gpurun_error_t e;
    int fd = gpurun_open_own_at(a->dfd, GPURUN_RUN_LAUNCHER_OUT, GPURUN_RUN_LAUNCHER_OUT, &e);
    if (fd < 0)
        return GPURUN_RM_END_NONE;
    char buf[65536];
    off_t end = lseek(fd, 0, SEEK_END);
    off_t from = end > (off_t)sizeof buf - 1 ? end - (off_t)sizeof buf + 1 : 0;
    ssize_t n = end > 0 ? pread(fd, buf, (size_t)(end - from), from) : 0;
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return c->rm->ended(buf);
}

/* Hosts lost while ranks ran: the message, with what the launcher said. */
static void lost_hosts_error(struct run_ctx *c, struct run_attempt *a, bool collateral, int rc, gpurun_error_t *err)
{
    const struct rank_result *rr = &a->rr;
    char *tail = run_launcher_tail(a->dfd, a->run_dir);
    char also[400] = "";
    if (collateral && rr->failed_code != 128 + SIGTERM && rr->failed_code != 128 + SIGKILL)
        snprintf(also, sizeof also, "; meanwhile rank %d on %s was killed by signal %d (%s)", rr->failed_rank,
                 rr->failed_host, rr->failed_code - 128, run_signal_name(rr->failed_code));
    gpurun_err(err, rc,
               "lost %s: these ranks started and never reported an end (the host, or %s's link to it, failed); "
               "the other ranks were stopped%s; run folder %s; %s said:\n%s",
               rr->lost, c->launcher->name, also, a->run_dir, c->launcher->name, tail ? tail : "(nothing)");
    free(tail);
}

/* The first rank that failed: the message, with the line of its output
 * that names the cause, and where that output is. */
static void failed_rank_error(struct run_attempt *a, int rc, const char *cause, gpurun_error_t *err)
{
    const struct rank_result *rr = &a->rr;
    const char *sig = run_signal_name(rc);
    if (rr->failed_error[0]) {
        gpurun_err(err, rc, "rank %d on %s could not start (exit status %d): %s; run folder %s", rr->failed_rank,
                   rr->failed_host, rc, rr->failed_error, a->run_dir);
        return;
    }
    const char *label;
    const char *file = rank_output_file(rr, rr->failed_rank, &label);
    char where[600];
    if (file && label)
        snprintf(where, sizeof where, "%s/%s (its lines start with '%s')", a->run_dir, file, label);
    else
        snprintf(where, sizeof where, "%s/%s", a->run_dir, file ? file : "launcher.out");
    gpurun_err(err, rc, "rank %d on %s failed first: %s %d%s%s%s%s%s%s; its output: %s", rr->failed_rank,
               rr->failed_host, sig ? "killed by signal" : "exit status", sig ? rc - 128 : rc, sig ? " (" : "",
               sig ? sig : "", sig ? ")" : "", cause ? "; cause: \"" : "", cause ? cause : "", cause ? "\"" : "", where);
}

/* The launcher failed, or not every rank finished: the exit status and
 * the message, with what the launcher said. */
static int launcher_failed_error(struct run_ctx *c, struct run_attempt *a, gpurun_error_t *err)
{
    struct rank_result *rr = &a->rr;
    int rc = a->oc.launcher_status ? a->oc.launcher_status : GPURUN_EXIT_ENV;
    if (rr->finished == 0)
        rc = GPURUN_EXIT_ENV; /* no rank ever ran: the launcher could not start them */
    char *tail = run_launcher_tail(a->dfd, a->run_dir);
    run_unstarted_ranks(c->plan, rr);
    gpurun_err(err, rc, "%s failed (exit status %d) with %d of %d ranks finished%s%s; it said:\n%s",
               c->launcher->name, a->oc.launcher_status, rr->finished, c->plan->nranks,
               rr->unstarted[0] && rr->finished ? "; never started (their hosts wrote nothing): " : "",
               rr->unstarted[0] && rr->finished ? rr->unstarted : "", tail ? tail : "(nothing)");
    free(tail);
    return rc;
}

/* What else happened to the ranks of a run that was interrupted or timed
 * out: a rank that had failed on its own, hosts lost, ranks gone silent. */
static void stopped_notes(struct run_ctx *c, struct run_attempt *a, char *also, size_t len)
{
    const struct rank_result *rr = &a->rr;
    size_t n = 0;
    also[0] = '\0';
    if (rr->failed_rank >= 0 && !rr->failed_stopped) {
        char st[64];
        run_status_text(rr->failed_code, st, sizeof st);
        n += (size_t)snprintf(also + n, len - n, "; rank %d on %s had failed (%s)", rr->failed_rank, rr->failed_host,
                              st);
    }
    if (rr->nlost && n < len)
        n += (size_t)snprintf(also + n, len - n,
                              "; lost %s: these ranks never reported an end (the host, or %s's link to it, failed)",
                              rr->lost, c->launcher->name);
    if (rr->nsilent && n < len)
        snprintf(also + n, len - n, "; %s ended without a report (%s)", rr->silent,
                 a->oc.killed ? "killed with the launcher after the grace period" : "their rank steps were killed");
}

/* The record's reason, cut to its one line (a rank's own error or the
 * silent ranks' list can be longer). */
static void why_set(struct run_attempt *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why_set(struct run_attempt *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->why, sizeof a->why, fmt, ap);
    va_end(ap);
}

/* What decide_outcome found, for the function of the case it is. */
struct ended {
    struct run_ctx *c;
    struct run_attempt *a;
    bool own;        /* a rank failed on its own, not after it was told to stop */
    bool collateral; /* ... killed by a signal while others were lost with their host */
    enum gpurun_rm_end cancel;
};

static int ended_stalled(struct ended *e, gpurun_error_t *err)
{
    struct run_ctx *c = e->c;
    struct run_attempt *a = e->a;
    char also[1600];
    int rc;
    const char *verdict = NULL;
    gpurun_stall_now(a->stall, &verdict);
    rc = GPURUN_EXIT_STALLED;
    a->state = GPURUN_STATE_STALLED;
    json_t *st = gpurun_stall_record(a->stall);
    json_t *culprit = json_array_get(json_object_get(st, "culprits"), 0);
    a->why_rank = culprit ? (int)json_integer_value(json_object_get(culprit, "rank")) : -1;
    json_decref(st);
    snprintf(a->why, sizeof a->why, "stalled: %s", verdict ? verdict : "no progress");
    stopped_notes(c, a, also, sizeof also);
    gpurun_err(err, rc, "%s; on_stall = \"kill\": every rank was stopped%s; run folder %s", a->why, also,
               a->run_dir);
    return rc;
}

static int ended_time_limit(struct ended *e, gpurun_error_t *err)
{
    struct run_ctx *c = e->c;
    struct run_attempt *a = e->a;
    const struct gpurun_outcome *oc = &a->oc;
    const struct rank_result *rr = &a->rr;
    char also[1600];
    int rc;
    /* Slurm's time limit sends SIGTERM to gpurun too, in a batch step:
     * still a time limit, not an interruption. */
    rc = GPURUN_EXIT_TIMEOUT;
    a->state = GPURUN_STATE_TIMEOUT;
    a->why_rank = e->own ? rr->failed_rank : 0;
    if (oc->timed_out)
        snprintf(a->why, sizeof a->why, "time limit of %lds reached (the job's timeout)", c->job->timeout_s);
    else
        snprintf(a->why, sizeof a->why, "the allocation's time limit was reached (%s cancelled the step)",
                 c->rm->title);
    a->stops_job = !oc->timed_out;
    stopped_notes(c, a, also, sizeof also);
    gpurun_err(err, rc, "%s: every rank was stopped%s; run folder %s", a->why, also, a->run_dir);
    return rc;
}

static int ended_node_failure(struct ended *e, gpurun_error_t *err)
{
    struct run_ctx *c = e->c;
    struct run_attempt *a = e->a;
    const struct rank_result *rr = &a->rr;
    int rc;
    /* Slurm cancelled the job because a node failed: it sends gpurun
     * SIGTERM too, in a batch step, but the lost host is the cause. */
    rc = GPURUN_EXIT_ENV;
    a->state = GPURUN_STATE_FAILED;
    a->why_rank = rr->first_lost;
    const char *h = rank_host(rr, rr->first_lost);
    snprintf(a->why, sizeof a->why, "lost with its host %s (%s: a node failed)", h ? h : "?", c->rm->title);
    a->stops_job = true;
    lost_hosts_error(c, a, false, rc, err);
    return rc;
}

static int ended_interrupted(struct ended *e, gpurun_error_t *err)
{
    struct run_ctx *c = e->c;
    struct run_attempt *a = e->a;
    const struct gpurun_outcome *oc = &a->oc;
    const struct rank_result *rr = &a->rr;
    char also[1600];
    int rc;
    char sb[32];
    rc = 128 + oc->interrupted;
    a->state = GPURUN_STATE_INTERRUPTED;
    a->why_rank = e->own ? rr->failed_rank : -1; /* a Ctrl-C is nobody's failure */
    snprintf(a->why, sizeof a->why, "interrupted by %s", run_sig_abbrev(oc->interrupted, sb, sizeof sb));
    a->stops_job = true;
    stopped_notes(c, a, also, sizeof also);
    gpurun_err(err, rc, "%s (%s): every rank was stopped%s; run folder %s", a->why, strsignal(oc->interrupted),
               also, a->run_dir);
    return rc;
}

static int ended_unwritten(struct ended *e, gpurun_error_t *err)
{
    struct run_attempt *a = e->a;
    const struct rank_result *rr = &a->rr;
    int rc = GPURUN_EXIT_ENV;
    a->state = GPURUN_STATE_FAILED;
    snprintf(a->why, sizeof a->why, "the ranks' statuses could not be kept");
    gpurun_err(err, rc, "the ranks ended, but their statuses could not be kept: %s; run folder %s", rr->unwritten,
               a->run_dir);
    return rc;
}

static int ended_lost(struct ended *e, gpurun_error_t *err)
{
    struct run_ctx *c = e->c;
    struct run_attempt *a = e->a;
    const struct rank_result *rr = &a->rr;
    int rc = GPURUN_EXIT_ENV;
    a->state = GPURUN_STATE_FAILED;
    a->why_rank = rr->first_lost;
    const char *h = rank_host(rr, rr->first_lost);
    snprintf(a->why, sizeof a->why, "lost with its host %s (the host, or %s's link to it, failed)", h ? h : "?",
             c->launcher->name);
    lost_hosts_error(c, a, e->collateral, rc, err);
    return rc;
}

static int ended_own_failure(struct ended *e, gpurun_error_t *err)
{
    struct run_ctx *c = e->c;
    struct run_attempt *a = e->a;
    const struct rank_result *rr = &a->rr;
    int rc = rr->failed_code;
    a->state = GPURUN_STATE_FAILED;
    a->why_rank = rr->failed_rank;
    if (rr->failed_error[0])
        why_set(a, "could not start: %s", rr->failed_error);
    else
        run_status_text(rc, a->why, sizeof a->why);
    read_rank_tail(c, a, a->why_rank);
    char *cause = rr->failed_error[0] ? NULL : gpurun_rank_tail_reason(&a->tail);
    failed_rank_error(a, rc, cause, err);
    if (cause)
        snprintf(a->why, sizeof a->why, "%s", cause);
    free(cause);
    return rc;
}

static int ended_silent(struct ended *e, gpurun_error_t *err)
{
    struct run_ctx *c = e->c;
    struct run_attempt *a = e->a;
    const struct gpurun_outcome *oc = &a->oc;
    const struct rank_result *rr = &a->rr;
    int rc;
    /* On gpurun's own host, which is not lost: their rank steps were
     * killed without a chance to report (SIGKILL). */
    rc = oc->launcher_status ? oc->launcher_status : GPURUN_EXIT_ENV;
    a->state = GPURUN_STATE_FAILED;
    why_set(a, "ranks ended without a report: %s", rr->silent);
    gpurun_err(err, rc,
               "%s: these ranks started and their rank steps were killed before they could report how their "
               "program ended (SIGKILL: the kernel's out-of-memory killer, or a kill -9); the other ranks were "
               "stopped; %s exit status %d; run folder %s",
               rr->silent, c->launcher->name, oc->launcher_status, a->run_dir);
    return rc;
}

static int ended_stopped_outside(struct ended *e, gpurun_error_t *err)
{
    struct run_attempt *a = e->a;
    const struct rank_result *rr = &a->rr;
    int rc;
    /* Every rank that failed was told to stop first, and not by gpurun:
     * scancel, the batch system, or someone's kill. */
    char sb[32];
    int r = rr->failed_rank >= 0 ? rr->failed_rank : rr->stop_rank;
    rc = rr->failed_rank >= 0 ? rr->failed_code : 128 + rr->stop_signal;
    a->state = GPURUN_STATE_INTERRUPTED;
    a->why_rank = r;
    snprintf(a->why, sizeof a->why, "stopped from outside gpurun by %s",
             run_sig_abbrev(rr->stop_signal, sb, sizeof sb));
    a->stops_job = true;
    const char *h = rank_host(rr, r);
    gpurun_err(err, rc,
               "the ranks were stopped from outside gpurun: rank %d on %s was the first told to stop, by %s "
               "(scancel, the batch system, or a kill); run folder %s",
               r, h ? h : "?", sb, a->run_dir);
    return rc;
}

static int ended_launcher_failed(struct ended *e, gpurun_error_t *err)
{
    struct run_ctx *c = e->c;
    struct run_attempt *a = e->a;
    const struct gpurun_outcome *oc = &a->oc;
    int rc;
    a->state = GPURUN_STATE_FAILED;
    rc = launcher_failed_error(c, a, err);
    snprintf(a->why, sizeof a->why, "%s failed (exit status %d)", c->launcher->name, oc->launcher_status);
    return rc;
}

static int ended_ok(struct ended *e, gpurun_error_t *err)
{
    struct run_ctx *c = e->c;
    struct run_attempt *a = e->a;
    int rc = run_check_results(c, &a->names, a->run_dir, &a->foms, a->refs, &a->state, err);
    if (rc != 0) {
        a->why_rank = 0;
        snprintf(a->why, sizeof a->why, "%.590s", err->text);
    }
    return rc;
}

/* How the run ended, from the launch's outcome and what the ranks
 * reported: the exit status, a->state, the message in err, and whose
 * output and which reason the record's failure gives (a->why_rank,
 * a->why); the figures of merit and their references when the ranks all
 * ended well. */
int run_decide_outcome(struct run_ctx *c, struct run_attempt *a, gpurun_error_t *err)
{
    const struct gpurun_outcome *oc = &a->oc;
    const struct rank_result *rr = &a->rr;
    a->state = GPURUN_STATE_OK;
    a->why_rank = -1;
    a->why[0] = '\0';
    /* A rank that failed on its own, not after it was told to stop. */
    struct ended e = {.c = c, .a = a};
    e.own = rr->failed_rank >= 0 && !rr->failed_stopped;
    /* A rank killed by a signal while others were lost with their host
     * was stopped because of that loss (SIGTERM, SIGKILL), or crashed in its
     * MPI library when the peer vanished (Open MPI's TCP transport can
     * SIGSEGV then): the lost host is the cause, the rank is said beside it.
     * A rank that exited with a code of its own stays the cause. */
    e.collateral = e.own && rr->failed_code > 128 && !rr->failed_error[0];
    e.cancel = manager_ended(c, a);
    if (oc->stalled)
        return ended_stalled(&e, err);
    if (oc->timed_out || e.cancel == GPURUN_RM_END_TIME_LIMIT)
        return ended_time_limit(&e, err);
    if (e.cancel == GPURUN_RM_END_NODE_FAILURE && rr->nlost)
        return ended_node_failure(&e, err);
    if (oc->interrupted)
        return ended_interrupted(&e, err);
    if (rr->unwritten[0] && rr->failed_rank < 0)
        return ended_unwritten(&e, err);
    if (rr->nlost && (!e.own || e.collateral))
        return ended_lost(&e, err);
    if (e.own)
        return ended_own_failure(&e, err);
    if (rr->nsilent)
        return ended_silent(&e, err);
    if (rr->failed_rank >= 0 || rr->nstopped)
        return ended_stopped_outside(&e, err);
    if (oc->launcher_status != 0 || rr->finished < c->plan->nranks)
        return ended_launcher_failed(&e, err);
    return ended_ok(&e, err);
}

/* A run that did not end ok keeps what its program printed: a stopped
 * mdrun still writes its Performance table (state and exit status stay as
 * decided; no check is made of them). */
void run_read_partial_foms(struct run_ctx *c, struct run_attempt *a)
{
    if (!c->tpl || a->foms.n || !a->state || !strcmp(a->state, GPURUN_STATE_OK) ||
        !strcmp(a->state, GPURUN_STATE_SANITY_FAILED) || !strcmp(a->state, GPURUN_STATE_REFERENCE_FAILED))
        return;
    gpurun_error_t e;
    if (gpurun_fom_read(c->tpl, a->run_dir, gpurun_kvlist_lookup, &a->names, NULL, &a->foms, &e) < 0)
        gpurun_foms_free(&a->foms);
}

/* Why a run that did not end ok has no figure: said in the record. */
json_t *run_foms_note(const struct run_ctx *c, const struct run_attempt *a)
{
    if (!c->tpl || !c->tpl->nfoms || !a->state || !strcmp(a->state, GPURUN_STATE_OK))
        return NULL;
    for (size_t i = 0; i < a->foms.n; i++)
        if (a->foms.f[i].n)
            return NULL;
    return json_sprintf("not printed: the run ended as %s (%s) before the program printed its figures%s", a->state,
                        a->why[0] ? a->why : "?", a->watch ? "; its last progress is in 'progress'" : "");
}

/* The record's failure, and on stderr the failing rank's cause and last
 * lines (terminal or not; --quiet: the closing message only). */
void run_failure_report(struct run_ctx *c, struct run_attempt *a, int rc)
{
    if (!strcmp(a->state, GPURUN_STATE_OK))
        return;
    int r = a->why_rank;
    read_rank_tail(c, a, r);
    if (r < 0 && !a->tail_read) /* no rank to show: what the launcher said */
        run_read_tail(a, GPURUN_RUN_LAUNCHER_OUT, NULL, NULL);
    const char *host = NULL;
    if (r >= 0) {
        host = json_string_value(json_object_get(json_array_get(a->rr.bindings, (size_t)r), "host"));
        if (!host)
            host = json_string_value(json_object_get(json_array_get(a->rr.statuses, (size_t)r), "host"));
    }
    a->failure = gpurun_record_failure(r, host, rc, a->why, a->tail.lines, a->tail.n);
    bool ranks_failed = strcmp(a->state, GPURUN_STATE_SANITY_FAILED) && strcmp(a->state, GPURUN_STATE_REFERENCE_FAILED);
    if (c->opts->quiet || !ranks_failed || r < 0 || (!a->tail.n && !a->tail.ncause))
        return;
    /* A rank's own failure has a cause in its output; an interruption or a
     * time limit is its own cause (what mdrun says of the signal is in the
     * last lines). */
    if (a->tail.ncause && !strcmp(a->state, GPURUN_STATE_FAILED)) {
        gpurun_say(stderr, "gpurun: rank %d on %s: the cause, as its output says:\n", r, host ? host : "?");
        for (size_t i = 0; i < a->tail.ncause; i++)
            gpurun_say(stderr, "[%d] %s\n", r, a->tail.cause[i]);
    }
    if (a->tail.n) {
        gpurun_say(stderr, "gpurun: rank %d on %s: its last %zu line%s (%s%s):\n", r, host ? host : "?", a->tail.n,
                   a->tail.n == 1 ? "" : "s", a->tail_file, a->tail.whole ? "" : ", its end");
        for (size_t i = 0; i < a->tail.n; i++)
            gpurun_say(stderr, "[%d] %s\n", r, a->tail.lines[i]);
    }
}
