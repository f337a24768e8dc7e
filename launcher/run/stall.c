/* SPDX-License-Identifier: BSD-3-Clause */
/* The head's side of a stall (stall.h): when, asking, merging, naming. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progress.h"
#include "record.h"
#include "say.h"
#include "stall.h"
#include "stall_rank.h"
#include "util.h"

#define ANSWER_WAIT_S 50.0   /* the ranks' answers, this long at most: named within a minute */
#define REASK_MIN_S 60.0     /* still stalled: asked again this often at least apart */
#define CLASSES_MAX 32
#define CULPRITS_MAX 64
#define NEVER 1e300

enum phase { WATCHING, ASKING, REPORTED };

struct gpurun_stall {
    struct gpurun_stall_opts o;
    enum phase phase;
    double after_used, detected_t, asked_t, reported_t, moved_at_detect;
    json_t *answers;  /* by rank: the sample, or null */
    json_t *statuses; /* borrowed at the last tick */
    json_t *record;   /* the last verdict's stall {...} */
    char verdict[512];
    char said[4096];  /* what was said last: said again only when it changes */
    bool ended_run;
    char at_step[64];
};

gpurun_stall_t *gpurun_stall_new(const struct gpurun_stall_opts *o)
{
    if (o->after_s < 0)
        return NULL;
    gpurun_stall_t *s = gpurun_xcalloc(1, sizeof *s);
    s->o = *o;
    s->o.job = NULL;
    snprintf(s->at_step, sizeof s->at_step, "%s", "");
    s->answers = json_array();
    for (int i = 0; i < o->nranks; i++)
        json_array_append_new(s->answers, json_null());
    s->verdict[0] = '\0';
    s->said[0] = '\0';
    s->o.job = o->job ? gpurun_xstrdup(o->job) : gpurun_xstrdup("job");
    return s;
}

void gpurun_stall_free(gpurun_stall_t *s)
{
    if (!s)
        return;
    json_decref(s->answers);
    json_decref(s->record);
    free((char *)s->o.job);
    free(s);
}

/* How long without progress is a stall now; NEVER while `auto` has no gap yet. */
static double threshold(const gpurun_stall_t *s, double max_gap)
{
    if (s->o.after_s > 0)
        return s->o.after_s;
    if (max_gap <= 0)
        return NEVER;
    double a = GPURUN_STALL_AUTO_FACTOR * max_gap;
    return a > GPURUN_STALL_AUTO_FLOOR_S ? a : GPURUN_STALL_AUTO_FLOOR_S;
}

double gpurun_stall_next(const gpurun_stall_t *s)
{
    if (!s)
        return NEVER;
    if (s->phase == ASKING)
        return s->asked_t + 1.0;
    return NEVER; /* the loop's own second-long wait is soon enough */
}

void gpurun_stall_take(gpurun_stall_t *s, int rank, json_t *doc)
{
    if (!s || s->phase != ASKING || rank < 0 || rank >= s->o.nranks || !json_is_object(doc))
        return;
    json_array_set(s->answers, (size_t)rank, doc);
}

bool gpurun_stall_now(const gpurun_stall_t *s, const char **verdict)
{
    if (verdict)
        *verdict = s && s->verdict[0] ? s->verdict : NULL;
    return s && s->phase != WATCHING;
}

bool gpurun_stall_ended_run(const gpurun_stall_t *s)
{
    return s && s->ended_run;
}

json_t *gpurun_stall_record(const gpurun_stall_t *s)
{
    return s && s->record ? json_incref(s->record) : NULL;
}

/* ---- one rank's answer, in words -------------------------------------- */

enum kind { K_MPI, K_RUNNING, K_BLOCKED, K_STOPPED, K_GONE, K_SILENT, K_UNKNOWN };

struct view {
    enum kind kind;
    char state[96];   /* the class's words */
    char frames[512]; /* "main > exchange > MPI_Allreduce"; "" none */
    char where[512];  /* a culprit's where */
    long pid;
    const char *host;
    const char *stack_note; /* why it has no stack; NULL: it has one, or needs none */
};

/* The frames up to the first of the communication library, joined. */
static bool join_frames(json_t *frames, char *out, size_t size)
{
    size_t n = 0, i;
    json_t *f;
    bool in_comm = false;
    out[0] = '\0';
    json_array_foreach(frames, i, f)
    {
        const char *name = json_string_value(f);
        if (!name || in_comm)
            continue;
        if (n < size)
            n += (size_t)snprintf(out + n, size - n, "%s%s", n ? " > " : "", name);
        in_comm = gpurun_stall_comm_frame(name);
    }
    return in_comm;
}

static void view_of(const json_t *doc, const json_t *status, struct view *v)
{
    memset(v, 0, sizeof *v);
    if (!json_is_object(doc))
        doc = NULL; /* the json null of a rank that has not answered */
    if (!json_is_object(status))
        status = NULL; /* json null: still running */
    v->pid = json_integer_value(json_object_get(doc, "pid"));
    v->host = json_string_value(json_object_get(doc, "host"));
    const char *st = json_string_value(json_object_get(doc, "state"));
    if (json_is_object(status) || (st && !strcmp(st, "gone"))) {
        v->kind = K_GONE;
        const json_t *code = json_object_get(status ? status : doc, "exit_code");
        snprintf(v->state, sizeof v->state, "gone (its process ended%s%lld)", code ? ", exit status " : "",
                 code ? (long long)json_integer_value(code) : 0LL);
        if (!code)
            snprintf(v->state, sizeof v->state, "gone (its process ended)");
        if (!v->host)
            v->host = json_string_value(json_object_get(status, "host"));
        snprintf(v->where, sizeof v->where, "%s", v->state);
        return;
    }
    if (!doc) {
        v->kind = K_SILENT;
        snprintf(v->state, sizeof v->state, "no answer (its rank step or host did not reply)");
        snprintf(v->where, sizeof v->where, "%s", v->state);
        return;
    }
    v->stack_note = json_string_value(json_object_get(doc, "stack_note"));
    const char *wchan = json_string_value(json_object_get(doc, "wchan"));
    double cpu = json_number_value(json_object_get(doc, "cpu"));
    bool in_comm = join_frames(json_object_get(doc, "frames"), v->frames, sizeof v->frames);
    char c = st ? st[0] : '?';
    if (c == 'T' || c == 't') {
        v->kind = K_STOPPED;
        snprintf(v->state, sizeof v->state, "stopped (%c)", c);
    } else if (in_comm) {
        v->kind = K_MPI;
        snprintf(v->state, sizeof v->state, "waits in MPI");
    } else if (c == 'R' || cpu >= 50.0) {
        v->kind = K_RUNNING;
        snprintf(v->state, sizeof v->state, "running (%c)", c); /* the class's: CPU shares differ rank to rank */
    } else {
        v->kind = v->frames[0] ? K_BLOCKED : K_UNKNOWN;
        snprintf(v->state, sizeof v->state, "%s (%c%s%s)", v->frames[0] ? "blocked outside MPI" : "waiting", c,
                 wchan && *wchan ? ", in " : "", wchan && *wchan ? wchan : "");
    }
    if (v->kind == K_RUNNING)
        snprintf(v->where, sizeof v->where, "running (%c, %.0f%% CPU)%s%s", c, cpu, v->frames[0] ? ": " : "",
                 v->frames);
    else
        snprintf(v->where, sizeof v->where, "%s%s%s", v->state, v->frames[0] ? ": " : "", v->frames);
}

/* ---- classes and culprits --------------------------------------------- */

/* "0-2,5" of the ranks in `in` (bounded text). */
static void ranks_text(const bool *in, int n, char *out, size_t size)
{
    size_t len = 0;
    out[0] = '\0';
    for (int r = 0; r < n && len + 24 < size; r++) {
        if (!in[r])
            continue;
        int e = r;
        while (e + 1 < n && in[e + 1])
            e++;
        len += (size_t)(e > r ? snprintf(out + len, size - len, "%s%d-%d", len ? "," : "", r, e)
                              : snprintf(out + len, size - len, "%s%d", len ? "," : "", r));
        r = e;
    }
}

struct klass {
    enum kind kind;
    char state[96], frames[512];
    int count;
    bool *in;
};

/* The class of view `v`, made when new; NULL past CLASSES_MAX. */
static struct klass *class_of(struct klass *cls, int *ncls, const struct view *v, int nranks)
{
    for (int i = 0; i < *ncls; i++)
        if (cls[i].kind == v->kind && !strcmp(cls[i].state, v->state) && !strcmp(cls[i].frames, v->frames))
            return &cls[i];
    if (*ncls >= CLASSES_MAX)
        return NULL;
    struct klass *k = &cls[(*ncls)++];
    k->kind = v->kind;
    snprintf(k->state, sizeof k->state, "%s", v->state);
    snprintf(k->frames, sizeof k->frames, "%s", v->frames);
    k->in = gpurun_xcalloc((size_t)nranks, sizeof *k->in);
    return k;
}

/* Whether rank `r`'s view makes it a culprit, given how many ranks wait
 * in MPI and how the kinds split. */
static bool is_culprit(const struct view *v, int in_mpi, int counts[], int nranks)
{
    if (v->kind == K_STOPPED || v->kind == K_GONE)
        return true;
    if (v->kind == K_MPI || v->kind == K_SILENT)
        return false;
    /* Its stack shows it outside MPI while others wait in MPI. */
    if (in_mpi > 0 && v->frames[0])
        return true;
    /* No stack for it (no tool, or one that took too long): the odd ones
     * out by state, as a rank polling in MPI runs too. */
    return counts[v->kind] * 2 < nranks;
}

static json_t *culprit_json(int r, const struct view *v)
{
    return json_pack("{s:i, s:s?, s:o, s:s, s:s}", "rank", r, "host", v->host,
                     "pid", v->pid > 0 ? json_integer(v->pid) : json_null(), "state", v->state, "where", v->where);
}

static json_t *classes_json(struct klass *cls, int ncls, int nranks)
{
    json_t *a = json_array();
    for (int i = 0; i < ncls; i++) {
        char ranks[512];
        ranks_text(cls[i].in, nranks, ranks, sizeof ranks);
        json_array_append_new(a, json_pack("{s:s, s:i, s:s, s:s}", "ranks", ranks, "count", cls[i].count, "state",
                                           cls[i].state, "frames", cls[i].frames));
        free(cls[i].in);
    }
    return a;
}

/* The verdict, its classes and the other culprits, as said on stderr. */
static void say_lines(const gpurun_stall_t *s, json_t *classes, json_t *culprits, struct gpurun_strbuf *say)
{
    gpurun_strbuf_printf(say, "gpurun: %s: stall: %s\n", s->o.job, s->verdict);
    size_t i;
    json_t *c;
    json_array_foreach(classes, i, c)
    {
        long long k = json_integer_value(json_object_get(c, "count"));
        const char *fr = json_string_value(json_object_get(c, "frames"));
        gpurun_strbuf_printf(say, "gpurun: %s: stall:   %lld rank%s (%s): %s%s%s\n", s->o.job, k, k == 1 ? "" : "s",
                             json_string_value(json_object_get(c, "ranks")),
                             json_string_value(json_object_get(c, "state")), fr && *fr ? ": " : "", fr ? fr : "");
    }
    json_array_foreach(culprits, i, c)
    if (i > 0)
        gpurun_strbuf_printf(say, "gpurun: %s: stall:   also rank %lld on %s: %s\n", s->o.job,
                             json_integer_value(json_object_get(c, "rank")),
                             json_string_value(json_object_get(c, "host")) ? json_string_value(json_object_get(c, "host")) : "?",
                             json_string_value(json_object_get(c, "where")));
}

/* The verdict from the answers: the record's stall, s->verdict, and the
 * lines to say (into `say`). */
static void conclude(gpurun_stall_t *s, double t, struct gpurun_strbuf *say)
{
    int n = s->o.nranks, ncls = 0, in_mpi = 0, counts[K_UNKNOWN + 1] = {0}, nostack = 0;
    const char *why_nostack = NULL;
    struct klass *cls = gpurun_xcalloc(CLASSES_MAX, sizeof *cls);
    struct view *views = gpurun_xcalloc((size_t)n, sizeof *views);
    for (int r = 0; r < n; r++) {
        view_of(json_array_get(s->answers, (size_t)r), json_array_get(s->statuses, (size_t)r), &views[r]);
        counts[views[r].kind]++;
        nostack += views[r].stack_note != NULL;
        if (views[r].stack_note)
            why_nostack = views[r].stack_note;
        in_mpi += views[r].kind == K_MPI;
        struct klass *k = class_of(cls, &ncls, &views[r], n);
        if (k) {
            k->count++;
            k->in[r] = true;
        }
    }
    json_t *culprits = json_array();
    for (int r = 0; r < n; r++)
        if (is_culprit(&views[r], in_mpi, counts, n) && json_array_size(culprits) < CULPRITS_MAX)
            json_array_append_new(culprits, culprit_json(r, &views[r]));
    bool deadlock = !json_array_size(culprits) && in_mpi == n;
    json_t *first = json_array_get(culprits, 0);
    if (deadlock)
        snprintf(s->verdict, sizeof s->verdict, "deadlock: every rank waits in MPI; no single rank to blame");
    else if (first)
        snprintf(s->verdict, sizeof s->verdict, "culprit%s: rank %lld on %s: %s%s",
                 json_array_size(culprits) > 1 ? "s" : "", json_integer_value(json_object_get(first, "rank")),
                 json_string_value(json_object_get(first, "host")) ? json_string_value(json_object_get(first, "host"))
                                                                    : "?",
                 json_string_value(json_object_get(first, "where")),
                 json_array_size(culprits) > 1 ? " (and others below)" : "");
    else if (nostack)
        snprintf(s->verdict, sizeof s->verdict, "no single rank stands out (see the classes); %d rank%s without a "
                 "stack: %s", nostack, nostack == 1 ? "" : "s", why_nostack);
    else
        snprintf(s->verdict, sizeof s->verdict, "no single rank stands out (see the classes)");
    json_t *classes = classes_json(cls, ncls, n);
    json_decref(s->record);
    s->record = json_pack("{s:f, s:f, s:f, s:o, s:o, s:b, s:s}", "after_s", round(s->after_used * 10) / 10,
                          "detected_s", round((s->detected_t - s->o.t0) * 10) / 10, "report_s",
                          round((t - s->detected_t) * 10) / 10, "culprits", culprits, "classes", classes, "deadlock",
                          deadlock, "verdict", s->verdict);
    say_lines(s, json_object_get(s->record, "classes"), json_object_get(s->record, "culprits"), say);
    free(views);
    free(cls);
}

/* Say the verdict, unless it says what was said last. */
static void say_verdict(gpurun_stall_t *s, double t)
{
    struct gpurun_strbuf say = {0};
    conclude(s, t, &say);
    if (say.s && strcmp(say.s, s->said)) {
        gpurun_say(stderr, "%s", say.s);
        gpurun_say(stderr, "gpurun: %s: stall: reported %.1f s after it was found%s\n", s->o.job,
                   t - s->detected_t,
                   s->o.kill ? "; on_stall = \"kill\": stopping every rank" : "; the run goes on (on_stall = \"report\")");
        snprintf(s->said, sizeof s->said, "%s", say.s);
    }
    free(say.s);
}

static void start_asking(gpurun_stall_t *s, double t)
{
    s->phase = ASKING;
    s->asked_t = t;
    json_array_clear(s->answers);
    for (int i = 0; i < s->o.nranks; i++)
        json_array_append_new(s->answers, json_null());
}

/* Every rank answered or ended. */
static bool all_answered(const gpurun_stall_t *s)
{
    for (int r = 0; r < s->o.nranks; r++)
        if (json_is_null(json_array_get(s->answers, (size_t)r)) &&
            !json_is_object(json_array_get(s->statuses, (size_t)r)))
            return false;
    return true;
}

enum gpurun_stall_action gpurun_stall_tick(gpurun_stall_t *s, double t, double moved_t, double max_gap,
                                           json_t *statuses, const char *at_step)
{
    if (!s || s->ended_run)
        return GPURUN_STALL_NONE;
    s->statuses = statuses;
    if (moved_t < s->o.t0)
        moved_t = s->o.t0; /* the setup steps are not the ranks' */
    if (s->phase != WATCHING && moved_t > s->moved_at_detect) {
        gpurun_say(stderr, "gpurun: %s: stall over: progress again%s%s\n", s->o.job, at_step && *at_step ? " at " : "",
                   at_step ? at_step : "");
        s->phase = WATCHING;
        s->verdict[0] = s->said[0] = '\0';
    }
    if (s->phase == WATCHING) {
        double after = threshold(s, max_gap);
        if (after >= NEVER || t - moved_t < after)
            return GPURUN_STALL_NONE;
        s->after_used = after;
        s->detected_t = t;
        s->moved_at_detect = moved_t;
        char d[32];
        gpurun_progress_duration(t - moved_t, d, sizeof d);
        gpurun_say(stderr, "gpurun: %s: stalled: no progress for %s%s%s; %s\n", s->o.job, d,
                   at_step && *at_step ? " at " : "", at_step ? at_step : "",
                   s->o.can_ask ? "asking every rank where it is" : "this launcher cannot reach the rank steps");
        start_asking(s, t);
        return s->o.can_ask ? GPURUN_STALL_ASK : GPURUN_STALL_NONE;
    }
    if (s->phase == ASKING && (all_answered(s) || t - s->asked_t >= ANSWER_WAIT_S || !s->o.can_ask)) {
        s->phase = REPORTED;
        s->reported_t = t;
        say_verdict(s, t);
        if (s->o.kill) {
            s->ended_run = true;
            return GPURUN_STALL_KILL;
        }
        return GPURUN_STALL_NONE;
    }
    double again = s->after_used > REASK_MIN_S ? s->after_used : REASK_MIN_S;
    if (s->phase == REPORTED && t - s->reported_t >= again && s->o.can_ask) {
        start_asking(s, t);
        return GPURUN_STALL_ASK;
    }
    return GPURUN_STALL_NONE;
}
