/* SPDX-License-Identifier: BSD-3-Clause */
/* Slurm's lines in a new job file (gpurun init, rm.h init_lines): its
 * section slurm { } of #SBATCH options, from the site profile's partition,
 * account and the sbatch items that are "--key=value". */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm_common.h"

#define INIT_KEYS_MAX 64 /* the section's keys; more sbatch items go in the comment */

struct init_key {
    char key[64];
    const char *value, *why;
};

/* `key = "VALUE"   # comment`, aligned as the rest of gpurun init's file. */
static void put_key(FILE *f, const char *indent, int keyw, const char *key, const char *value, bool quoted,
                    const char *comment)
{
    int n = fprintf(f, "%s%-*s = ", indent, keyw, key);
    if (quoted) {
        fputc('"', f);
        n++;
        for (const char *s = value; *s; s++, n++) {
            if (*s == '"' || *s == '\\')
                n += fputc('\\', f) != EOF;
            fputc(*s, f);
        }
        fputc('"', f);
        n++;
    } else {
        n += fprintf(f, "%s", value);
    }
    fprintf(f, "%*s# ", n < 40 ? 40 - n : 1, "");
    gpurun_rm_put_comment(f, comment);
    fputc('\n', f);
}

/* An sbatch item "--key=value" as the section's key (dashes as '_'): 1, or
 * 0 for one that is not (--exclusive). */
static int option_key(const char *o, struct init_key *k)
{
    const char *eq = strchr(o, '=');
    if (strncmp(o, "--", 2) || !eq || eq <= o + 2 || !eq[1] || (size_t)(eq - o - 2) >= sizeof k->key)
        return 0;
    size_t n = (size_t)(eq - o - 2);
    for (size_t i = 0; i < n; i++) {
        char c = o[2 + i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return 0;
        k->key[i] = c == '-' ? '_' : c;
    }
    k->key[n] = '\0';
    k->value = eq + 1;
    return 1;
}

static bool have_key(const struct init_key *keys, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(keys[i].key, key))
            return true;
    return false;
}

/* The site's items that are no key of the section, in a comment. */
static void put_rest(FILE *f, const struct gpurun_rm_site *site, const bool *rest, size_t nrest)
{
    fputs("# ", f);
    gpurun_rm_put_comment(f, site->name);
    fputs("'s profile also lists #SBATCH", f);
    for (size_t i = 0; i < site->noptions; i++)
        if (rest[i]) {
            fputc(' ', f);
            gpurun_rm_put_comment(f, site->options[i]);
        }
    fprintf(f, ":\n# no key = value line carries %s; gpurun submit adds %s from the profile.\n",
            nrest == 1 ? "it" : "them", nrest == 1 ? "it" : "them");
}

void gpurun_slurm_init_lines(FILE *f, const struct gpurun_rm_site *site)
{
    if (!site) {
        fputs("\n# slurm { partition = \"gpu\" }           # #SBATCH lines of gpurun submit (no Slurm here)\n", f);
        return;
    }
    struct init_key keys[INIT_KEYS_MAX + 2];
    size_t n = 0, nrest = 0;
    if (site->partition)
        keys[n++] = (struct init_key){"partition", site->partition, "the site's partition for this job"};
    if (site->account)
        keys[n++] = (struct init_key){"account", site->account, "yours: sacctmgr show assoc user=$USER"};
    char from[256];
    snprintf(from, sizeof from, "from %s's sbatch lines", site->name);
    bool *rest = calloc(site->noptions + 1, sizeof *rest);
    if (!rest)
        abort();
    for (size_t i = 0; i < site->noptions; i++) {
        struct init_key k = {.why = from};
        if (!option_key(site->options[i], &k) || n >= INIT_KEYS_MAX) {
            rest[i] = true;
            nrest++;
        } else if (!have_key(keys, n, k.key)) { /* the profile's partition and account win */
            keys[n++] = k;
        }
    }
    int w = 4;
    for (size_t i = 0; i < n; i++)
        if ((int)strlen(keys[i].key) > w)
            w = (int)strlen(keys[i].key);
    fputs("\nslurm {                                 # an #SBATCH --KEY=VALUE line each (submit)\n", f);
    for (size_t i = 0; i < n; i++)
        put_key(f, "    ", w, keys[i].key, keys[i].value, true, keys[i].why);
    put_key(f, "    # ", w - 2 > 0 ? w - 2 : 1, "time", "\"01:00:00\"", false, "default: from timeout (x repeat, scan)");
    fputs("}\n", f);
    if (nrest)
        put_rest(f, site, rest, nrest);
    free(rest);
}
