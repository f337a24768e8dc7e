/* SPDX-License-Identifier: BSD-3-Clause */
/* Slurm's own figure of a run's energy (rm.h's energy()): sacct's
 * ConsumedEnergyRaw of the step gpurun runs in, or of the job so far, where
 * slurm.conf gathers energy at all. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rm.h"
#include "slurm_common.h"
#include "util.h" /* gpurun_read_file, gpurun_short_text */

int gpurun_slurm_conf_gathers(const char *text)
{
    int gathers = 0;
    /* Line by line, bounded by the text (read with a size limit). */
    for (const char *l = text; l && *l;) {
        const char *end = strchr(l, '\n');
        size_t n = end ? (size_t)(end - l) : strlen(l);
        const char *p = l;
        while (p < l + n && (*p == ' ' || *p == '\t'))
            p++;
        size_t rest = (size_t)(l + n - p);
        static const char key[] = "AcctGatherEnergyType", inc[] = "Include";
        if (rest > sizeof inc - 1 && !strncasecmp(p, inc, sizeof inc - 1) && (p[7] == ' ' || p[7] == '\t'))
            return -1; /* the setting may be in a file included: unknown here */
        if (rest >= sizeof key - 1 && !strncasecmp(p, key, sizeof key - 1)) {
            const char *v = p + sizeof key - 1;
            while (v < l + n && (*v == ' ' || *v == '\t'))
                v++;
            if (v < l + n && *v == '=') {
                v++;
                while (v < l + n && (*v == ' ' || *v == '\t'))
                    v++;
                size_t vn = (size_t)(l + n - v);
                while (vn && (v[vn - 1] == ' ' || v[vn - 1] == '\t' || v[vn - 1] == '\r' || v[vn - 1] == '#'))
                    vn--;
                const char *hash = memchr(v, '#', vn);
                if (hash)
                    vn = (size_t)(hash - v);
                while (vn && (v[vn - 1] == ' ' || v[vn - 1] == '\t'))
                    vn--;
                /* The last setting wins, as in Slurm. */
                gathers = vn && !((vn == 4 && !strncasecmp(v, "none", 4)) ||
                                  (vn == 23 && !strncasecmp(v, "acct_gather_energy/none", 23)));
            }
        }
        l = end ? end + 1 : NULL;
    }
    return gathers;
}

double gpurun_slurm_sacct_parse(const char *out, char *why, size_t len)
{
    /* The first line: the step's, or the job's allocation (its steps follow). */
    const char *p = out ? out : "";
    size_t n = strcspn(p, "\n");
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\r' || p[n - 1] == '\t'))
        n--;
    while (n && (*p == ' ' || *p == '\t')) {
        p++;
        n--;
    }
    if (n == 0) {
        snprintf(why, len, "sacct gave no ConsumedEnergy (Slurm gathered none for it)");
        return -1;
    }
    char digits[24];
    if (n >= sizeof digits || strspn(p, "0123456789") != n) {
        char cut[80];
        snprintf(cut, sizeof cut, "%.*s", (int)(n < sizeof cut ? n : sizeof cut - 1), p);
        for (char *c = cut; *c; c++)
            if ((unsigned char)*c < 0x20 || (unsigned char)*c == 0x7f)
                *c = '?';
        snprintf(why, len, "sacct's ConsumedEnergyRaw is no number of joules: %s", cut);
        return -1;
    }
    memcpy(digits, p, n);
    digits[n] = '\0';
    double j = strtod(digits, NULL);
    /* 0: nothing gathered; past 1e15 J (a petajoule): Slurm's "no value" (NO_VAL64). */
    if (j <= 0 || j > 1e15) {
        snprintf(why, len, "sacct gave ConsumedEnergy %s (Slurm gathered none for it)", j <= 0 ? "0" : "unset");
        return -1;
    }
    return j;
}

/* One bounded sacct: its output in *outp, or -1 with why (it could not run,
 * did not end in time: killed, or ended with a failure). */
static int sacct(char *const argv[], char **outp, char *why, size_t len)
{
    int status = 0, e = 0;
    int rc = gpurun_rm_query(argv, GPURUN_SACCT_TIMEOUT_MS / 1000.0, 1023, outp, &status, &e);
    if (rc < 0) {
        snprintf(why, len, "cannot run %s: %s", argv[0], strerror(e));
        return -1;
    }
    if (status == 124) {
        snprintf(why, len, "%s did not answer within %d s (stopped)", argv[0], GPURUN_SACCT_TIMEOUT_MS / 1000);
        free(*outp);
        *outp = NULL;
        return -1;
    }
    if (status != 0) {
        char first[160];
        (*outp)[strcspn(*outp, "\r\n")] = '\0'; /* its first line */
        gpurun_short_text(first, sizeof first, *outp);
        snprintf(why, len, "%s failed (%s %d)%s%s", argv[0], status > 128 ? "signal" : "exit status",
                 status > 128 ? status - 128 : status, *first ? ": " : "", first);
        free(*outp);
        *outp = NULL;
        return -1;
    }
    return 0;
}

double gpurun_slurm_energy(char *note, size_t len)
{
    const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
    if (!job || !*job) {
        snprintf(note, len, "not inside a Slurm allocation");
        return -1;
    }
    size_t jn = strlen(job);
    if (jn > 20 || strspn(job, "0123456789") != jn) {
        snprintf(note, len, "SLURM_JOB_ID is no job number: Slurm's ConsumedEnergy not read");
        return -1;
    }
    /* A step of the job's own (srun gpurun ...): that step's; in a batch
     * script (no step, or the batch and extern steps' numbers past
     * 0xfffffff0) the job's so far. */
    bool own_step = step && *step && strlen(step) <= 10 && strspn(step, "0123456789") == strlen(step) &&
                    strtoul(step, NULL, 10) < 0xfffffff0UL;
    char id[48];
    snprintf(id, sizeof id, "%s%s%s", job, own_step ? "." : "", own_step ? step : "");
    /* slurm.conf where it can be read: AcctGatherEnergyType none (the
     * default) means there is nothing to ask sacct for. */
    const char *conf = getenv("SLURM_CONF");
    if (!conf || !*conf)
        conf = "/etc/slurm/slurm.conf";
    char *text = NULL;
    size_t tlen;
    gpurun_error_t err = {0};
    if (gpurun_read_file(conf, "slurm.conf", 1 << 20, &text, &tlen, &err) == 0) {
        int g = gpurun_slurm_conf_gathers(text);
        free(text);
        if (g == 0) {
            snprintf(note, len,
                     "the site's AcctGatherEnergyType is none (%s): Slurm gathers no energy; an administrator "
                     "sets it (acct_gather_energy/rapl, /ipmi, /gpu) to have ConsumedEnergy",
                     conf);
            return -1;
        }
    }
    gpurun_error_clear(&err);
    char *argv[] = {"sacct", "-j", id, "--format=ConsumedEnergyRaw", "-n", "-P", NULL};
    char *out = NULL, why[512];
    if (sacct(argv, &out, why, sizeof why) < 0) {
        snprintf(note, len, "Slurm's ConsumedEnergy of %s %s not read: %s", own_step ? "step" : "job", id, why);
        return -1;
    }
    double j = gpurun_slurm_sacct_parse(out, why, sizeof why);
    free(out);
    if (j < 0)
        snprintf(note, len, "%s %s: %s", own_step ? "step" : "job", id, why);
    else
        snprintf(note, len, own_step ? "sacct's ConsumedEnergyRaw of step %s"
                                     : "sacct's ConsumedEnergyRaw of job %s so far (the allocation's, steps "
                                       "before this run included)",
                 id);
    return j;
}
