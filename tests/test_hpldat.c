/* SPDX-License-Identifier: BSD-3-Clause */
/* HPL's NB and P x Q in a copy of its input (lib/hpldat.c): the values
 * the params nb and grid may take (whole numbers and grids only: nothing
 * else reaches the file), auto and flat, P x Q against the ranks, the
 * rewrite of HPL.dat's lines 7-8 and 10-12 with every other byte kept,
 * inputs HPL would not read so refused with their line, and the template
 * keys hpl_dat and hpl_dat_from. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hpldat.h"
#include "job.h"
#include "tap.h"
#include "template.h"
#include "job_template.h"
#include "util.h"

/* netlib HPL's sample, as hpcc's hpccinf.txt has it (its PTRANS lines after). */
static const char hpl_dat[] =
    "HPLinpack benchmark input file\n"
    "Innovative Computing Laboratory, University of Tennessee\n"
    "HPL.out      output file name (if any)\n"
    "6            device out (6=stdout,7=stderr,file)\n"
    "1            # of problems sizes (N)\n"
    "2000         Ns\n"
    "1            # of NBs\n"
    "128          NBs\n"
    "0            PMAP process mapping (0=Row-,1=Column-major)\n"
    "1            # of process grids (P x Q)\n"
    "1            Ps\n"
    "2            Qs\n"
    "16.0         threshold\n"
    "1            # of panel fact\n"
    "2            PFACTs (0=left, 1=Crout, 2=Right)\n"
    "##### This line (no. 32) is ignored (it serves as a separator). ######\n"
    "0                               Number of additional problem sizes for PTRANS\n"
    "1200 10000 30000                values of N\n";

/* text with `from` replaced by `to` (once; the test's own strings). */
static char *swap(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    if (!at)
        return gpurun_xstrdup("(not found)");
    return gpurun_xasprintf("%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
}

static int make(const char *nb, const char *grid, long nranks, struct gpurun_hpl_edit *e, gpurun_error_t *err)
{
    memset(err, 0, sizeof *err);
    return gpurun_hpl_edit_make(nb, "job.conf:12", grid, "job.conf:13", nranks, e, err);
}

static void test_values(void)
{
    struct gpurun_hpl_edit e;
    gpurun_error_t err;
    ok(make(NULL, NULL, 2, &e, &err) == 0 && !e.active, "nb and grid unset: no edit");
    ok(make("", "", 2, &e, &err) == 0 && !e.active, "nb and grid empty (the template's defaults): no edit");
    ok(make("192", "", 2, &e, &err) == 0 && e.active && e.nb == 192 && e.p == 0, "nb 192 alone: NB only");
    ok(make("1", NULL, 2, &e, &err) == 0 && e.nb == 1, "nb 1: the smallest");
    ok(make("65536", NULL, 2, &e, &err) == 0 && e.nb == 65536, "nb 65536: the largest");
    ok(make("64\n", NULL, 2, &e, &err) < 0 && strstr(err.text, "job.conf:12: key 'params.nb': '64\\x0a'"),
       "nb '64\\n' refused, shown escaped");
    static const char *const bad_nb[] = {"0",  "-64", "+64", "64 ", " 64", "1e3", "0x40", "64k", "6;4",
                                         "$(id)", "`id`", "65537", "9999999999", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad_nb / sizeof *bad_nb; i++) {
        int rc = make(bad_nb[i], NULL, 2, &e, &err);
        ok(rc < 0 && err.code == GPURUN_EXIT_CONFIG &&
               strstr(err.text, "job.conf:12: key 'params.nb': ") == err.text && strstr(err.text, "not a block size"),
           "nb '%s' refused (exit 2), naming the file, line and key", bad_nb[i]);
    }

    static const struct { long n, p, q; } squares[] = {{1, 1, 1},  {2, 1, 2},  {3, 1, 3},  {4, 2, 2},
                                                      {6, 2, 3},  {7, 1, 7},  {8, 2, 4},  {12, 3, 4},
                                                      {16, 4, 4}, {18, 3, 6}, {64, 8, 8}, {96, 8, 12}};
    for (size_t i = 0; i < sizeof squares / sizeof *squares; i++) {
        int rc = make(NULL, "auto", squares[i].n, &e, &err);
        ok(rc == 0 && e.p == squares[i].p && e.q == squares[i].q && !strcmp(e.grid, "auto"),
           "grid auto on %ld ranks: %ld x %ld (got %ld x %ld)", squares[i].n, squares[i].p, squares[i].q, e.p, e.q);
    }
    ok(make(NULL, "flat", 6, &e, &err) == 0 && e.p == 1 && e.q == 6, "grid flat on 6 ranks: 1 x 6");
    ok(make(NULL, "2x4", 8, &e, &err) == 0 && e.p == 2 && e.q == 4, "grid 2x4 on 8 ranks");
    ok(make(NULL, "4X2", 8, &e, &err) == 0 && e.p == 4 && e.q == 2, "grid 4X2 on 8 ranks (P > Q is HPL's to allow)");
    ok(make(NULL, "2x2", 0, &e, &err) == 0 && e.p == 2, "grid 2x2 with the ranks not known yet: its form only");
    int rc = make(NULL, "2x2", 2, &e, &err);
    ok(rc < 0 && err.code == GPURUN_EXIT_CONFIG, "grid 2x2 on 2 ranks: refused (exit 2)");
    is_str(err.text,
           "job.conf:13: key 'params.grid': '2x2': P x Q = 4 but the layout has 2 ranks (HPL runs one process per "
           "grid cell; grid = \"auto\" fits any count)",
           "... saying P x Q and the ranks");
    rc = make(NULL, "1x2", 1, &e, &err);
    ok(rc < 0 && strstr(err.text, "P x Q = 2 but the layout has 1 rank "), "grid 1x2 on 1 rank: refused");
    static const char *const bad_grid[] = {"2x",   "x2",  "2x2x2", "0x4", "4x0",   "2*2",    "2 x 2", "2x-1",
                                           "auto;", "Auto", "square", "-1x-2", "1x99999", "2x2;id", "x", "2"};
    for (size_t i = 0; i < sizeof bad_grid / sizeof *bad_grid; i++) {
        rc = make(NULL, bad_grid[i], 4, &e, &err);
        ok(rc < 0 && strstr(err.text, "job.conf:13: key 'params.grid': ") == err.text &&
               strstr(err.text, "is not a process grid"),
           "grid '%s' refused, naming the file, line and key", bad_grid[i]);
    }
    char text[160];
    make("96", "auto", 4, &e, &err);
    gpurun_hpl_edit_text(&e, text, sizeof text);
    is_str(text, "NB 96, P x Q 2 x 2 (grid auto)", "the edit in words, for the dry run");
}

/* rewrite: 0 and *out, or -1 and err. */
static int rewrite(const char *text, size_t len, const char *nb, const char *grid, long nranks, char **out,
                   size_t *outlen, gpurun_error_t *err)
{
    struct gpurun_hpl_edit e;
    if (make(nb, grid, nranks, &e, err) < 0)
        return -1;
    return gpurun_hpl_rewrite(text, len, &e, "hpccinf.txt", out, outlen, err);
}

static void test_rewrite(void)
{
    gpurun_error_t err;
    char *out = NULL;
    size_t outlen = 0;
    size_t len = strlen(hpl_dat);

    ok(rewrite(hpl_dat, len, NULL, NULL, 2, &out, &outlen, &err) == 0 && outlen == len &&
           !memcmp(out, hpl_dat, len),
       "no edit: the input byte for byte");
    free(out);

    char *want = swap(hpl_dat, "128          NBs", "64           NBs");
    ok(rewrite(hpl_dat, len, "64", NULL, 2, &out, &outlen, &err) == 0, "nb 64: rewritten");
    is_str(out, want, "... line 8 only, the label where it was");
    ok(outlen == strlen(out), "... its length");
    free(want);
    free(out);

    char *w1 = swap(hpl_dat, "1            Ps", "2            Ps");
    want = swap(w1, "2            Qs", "3            Qs");
    ok(rewrite(hpl_dat, len, NULL, "2x3", 6, &out, &outlen, &err) == 0, "grid 2x3: rewritten");
    is_str(out, want, "... lines 11 and 12 only");
    free(w1);
    free(want);
    /* Again on its own output: the same. */
    char *again = NULL;
    size_t againlen = 0;
    ok(rewrite(out, outlen, NULL, "2x3", 6, &again, &againlen, &err) == 0 && againlen == outlen &&
           !memcmp(again, out, outlen),
       "... and the same again on its own output");
    free(again);
    free(out);

    /* Several NBs and grids: one of each, the counts 1. */
    char *a = swap(hpl_dat, "1            # of NBs\n128          NBs", "3            # of NBs\n96 128 192   NBs");
    char *b = swap(a, "1            # of process grids (P x Q)\n1            Ps\n2            Qs",
                   "2            # of process grids (P x Q)\n1 2          Ps\n4 2          Qs");
    want = swap(hpl_dat, "128          NBs", "256          NBs");
    ok(rewrite(b, strlen(b), "256", "auto", 4, &out, &outlen, &err) == 0, "3 NBs and 2 grids: rewritten");
    char *w2 = swap(want, "1            Ps\n2            Qs", "2            Ps\n2            Qs");
    is_str(out, w2, "... to one NB (256) and one grid (2 x 2), the counts 1");
    free(w2);
    free(want);
    free(out);
    free(a);

    /* Windows line ends stay; a value wider than the label's column
     * gets one blank before it. */
    char crlf[] = "a\r\nb\r\nc\r\nd\r\ne\r\nf\r\n1  # of NBs\r\n8  NBs\r\n0 PMAP\r\n1 # of process grids\r\n1 Ps\r\n1 Qs\r\n";
    ok(rewrite(crlf, strlen(crlf), "12345", "2x3", 6, &out, &outlen, &err) == 0, "CRLF input: rewritten");
    is_str(out,
           "a\r\nb\r\nc\r\nd\r\ne\r\nf\r\n1  # of NBs\r\n12345 NBs\r\n0 PMAP\r\n1 # of process grids\r\n2 Ps\r\n3 Qs\r\n",
           "... with its CR LF ends, one blank before a label the value reaches");
    free(out);
    /* No newline at the end of line 12. */
    char *cut = gpurun_xasprintf("%.*s", (int)(strstr(hpl_dat, "2            Qs") + 15 - hpl_dat), hpl_dat);
    ok(rewrite(cut, strlen(cut), NULL, "flat", 3, &out, &outlen, &err) == 0 &&
           !strcmp(out + strlen(out) - 16, "\n3            Qs"),
       "an input that ends on line 12 without a newline");
    free(out);
    free(cut);

    /* Inputs HPL would not read as these lines: refused, naming the line. */
    ok(rewrite("1\n2\n3\n", 6, "64", NULL, 2, &out, &outlen, &err) < 0 && err.code == GPURUN_EXIT_CONFIG &&
           strstr(err.text, "hpccinf.txt: 3 lines: not an HPL.dat"),
       "3 lines: refused");
    /* HPL 1.0's file has no PMAP line: its line 10 is Ps. */
    char *old = swap(hpl_dat, "0            PMAP process mapping (0=Row-,1=Column-major)\n", "");
    ok(rewrite(old, strlen(old), NULL, "1x2", 2, &out, &outlen, &err) < 0 &&
           strstr(err.text, "hpccinf.txt:10: not HPL.dat's line of the count of process grids") &&
           strstr(err.text, "'1            Ps'"),
       "HPL 1.0's input (no PMAP line) with a grid: refused at line 10, shown");
    ok(rewrite(old, strlen(old), "64", NULL, 2, &out, &outlen, &err) == 0, "... with NB only: lines 7-8 are NB there too");
    free(out);
    free(old);
    char *many = swap(hpl_dat, "1            # of NBs", "21           # of NBs");
    ok(rewrite(many, strlen(many), "64", NULL, 2, &out, &outlen, &err) < 0 &&
           strstr(err.text, "hpccinf.txt:7: 21 block sizes: HPL reads 1 to 20"),
       "21 NBs: refused (HPL reads 20 at most)");
    free(many);
    char *short2 = swap(hpl_dat, "1            # of NBs", "2            # of NBs");
    ok(rewrite(short2, strlen(short2), "64", NULL, 2, &out, &outlen, &err) < 0 &&
           strstr(err.text, "hpccinf.txt:8: not HPL.dat's line of the block sizes"),
       "a count of 2 NBs and one value: refused at line 8");
    free(short2);
    char *word = swap(hpl_dat, "128          NBs", "12x8         NBs");
    ok(rewrite(word, strlen(word), "64", NULL, 2, &out, &outlen, &err) < 0 && strstr(err.text, "hpccinf.txt:8: "),
       "an NB that is not a number: refused");
    free(word);
    char *nolabel = swap(hpl_dat, "1            Ps", "1");
    ok(rewrite(nolabel, strlen(nolabel), NULL, "1x2", 2, &out, &outlen, &err) < 0 &&
           strstr(err.text, "hpccinf.txt:11: "),
       "a Ps line without its label: refused");
    free(nolabel);
    char nul[sizeof hpl_dat];
    memcpy(nul, hpl_dat, sizeof hpl_dat);
    nul[2] = '\0';
    ok(rewrite(nul, len, "64", NULL, 2, &out, &outlen, &err) < 0 && strstr(err.text, "NUL"), "a NUL byte: refused");
    /* Bounded: no more than GPURUN_HPLDAT_MAX bytes are looked at. */
    size_t big = GPURUN_HPLDAT_MAX + 1;
    char *huge = gpurun_xmalloc(big + 1);
    memset(huge, '\n', big);
    memcpy(huge, hpl_dat, len);
    huge[big] = '\0';
    ok(rewrite(huge, big, "64", NULL, 2, &out, &outlen, &err) < 0 && strstr(err.text, "more than the 262144"),
       "an input of 256 KiB and a byte: refused");
    ok(rewrite(huge, big - 1, "64", NULL, 2, &out, &outlen, &err) == 0 && outlen == big - 1 &&
           !memcmp(out + len, huge + len, big - 1 - len),
       "... of 256 KiB: rewritten, its length and tail kept (NB 64 for 128, the label where it was)");
    free(out);
    free(huge);
    /* One very long line 3: read past, not into a fixed buffer. */
    char *longl = gpurun_xmalloc(200000);
    memset(longl, 'x', 200000);
    char *lt = gpurun_xasprintf("a\nb\n%.*s\n%s", 199990, longl, strstr(hpl_dat, "6            device"));
    ok(rewrite(lt, strlen(lt), "32", "auto", 2, &out, &outlen, &err) == 0 && outlen == strlen(lt) &&
           strstr(out, "\n32           NBs\n"),
       "a 199990-byte line elsewhere: kept, the NB line rewritten");
    free(out);
    free(lt);
    free(longl);
    free(b);
}

static gpurun_template_t *tpl_of(const char *text, gpurun_error_t *err)
{
    gpurun_template_t *t = NULL;
    memset(err, 0, sizeof *err);
    if (gpurun_template_parse(text, strlen(text), "hpl.conf", &t, err) < 0)
        return NULL;
    return t;
}

static gpurun_job_t *job_of(const char *text, gpurun_error_t *err)
{
    gpurun_job_t *job = NULL;
    memset(err, 0, sizeof *err);
    if (gpurun_job_parse(text, strlen(text), "job.conf", &job, err) < 0)
        return NULL;
    return job;
}

static void test_template(void)
{
    gpurun_error_t err;
    gpurun_template_t *t = tpl_of("description = \"hpl\"\ncommand = \"hpcc ${args}\"\n"
                                  "setup = { \"cp ${input} hpccinf.txt\" }\n"
                                  "defaults { input = \"in.txt\"  args = \"\"  nb = \"\"  grid = \"auto\" }\n"
                                  "hpl_dat = \"hpccinf.txt\"\nhpl_dat_from = \"${input}\"\n",
                                  &err);
    ok(t && t->hpl_dat && !strcmp(t->hpl_dat, "hpccinf.txt") && !strcmp(t->hpl_dat_from, "${input}"),
       "hpl_dat and hpl_dat_from read");
    gpurun_job_t *job = job_of("template = \"hpl\"\nranks_per_node = 4\nparams {\n  nb = \"96\"\n}\n", &err);
    struct gpurun_hpl_edit e;
    ok(job && gpurun_template_check_params(t, job, &err) == 0, "params.nb: a param the template uses (hpl_dat)");
    ok(gpurun_hpl_edit_for_job(t, job, 4, &e, &err) == 0 && e.nb == 96 && e.p == 2 && e.q == 2,
       "the job's nb, the template's default grid (auto: 2 x 2 on 4 ranks)");
    gpurun_job_destroy(job);
    job = job_of("template = \"hpl\"\nparams {\n  grid = \"2x2\"\n}\n", &err);
    ok(gpurun_hpl_edit_for_job(t, job, 2, &e, &err) < 0 &&
           strstr(err.text, "job.conf:3: key 'params.grid': '2x2': P x Q = 4 but the layout has 2 ranks"),
       "the job's grid against 2 ranks: refused, naming job.conf:3");
    gpurun_job_destroy(job);

    /* hpl_dat_from: checked before anything starts, with its line. */
    char path[] = "test_hpldat-XXXXXX";
    int fd = mkstemp(path);
    char *old = swap(hpl_dat, "0            PMAP process mapping (0=Row-,1=Column-major)\n", "");
    ok(fd >= 0 && gpurun_write_all(fd, old, strlen(old)) == 0 && close(fd) == 0, "an HPL 1.0 input written");
    struct gpurun_kvlist names = {0};
    gpurun_kvlist_set(&names, "input", path);
    make(NULL, "1x2", 2, &e, &err);
    ok(gpurun_hpl_check_from(t, &e, gpurun_kvlist_lookup, &names, ".", &err) < 0 && err.code == GPURUN_EXIT_CONFIG &&
           strstr(err.text, "/test_hpldat-") && strstr(err.text, ":10: not HPL.dat's line") &&
           strstr(err.text, "nothing was started"),
       "hpl_dat_from that HPL 1.0 wrote, with a grid: refused before anything starts, naming its path and line");
    make(NULL, NULL, 2, &e, &err);
    ok(gpurun_hpl_check_from(t, &e, gpurun_kvlist_lookup, &names, ".", &err) == 0,
       "... and not read at all with no edit");
    unlink(path);
    free(old);
    gpurun_kvlist_clear(&names);
    gpurun_template_destroy(t);

    t = tpl_of("description = \"x\"\ncommand = \"x\"\nhpl_dat = \"../hpccinf.txt\"\n", &err);
    ok(!t && strstr(err.text, "hpl.conf:3: key 'hpl_dat': '../hpccinf.txt' is not a plain file name"),
       "hpl_dat with a '/': refused, naming the line");
    t = tpl_of("description = \"x\"\ncommand = \"x\"\nhpl_dat_from = \"in.txt\"\n", &err);
    ok(!t && strstr(err.text, "hpl.conf:3: key 'hpl_dat_from': without 'hpl_dat'"), "hpl_dat_from alone: refused");
    t = tpl_of("description = \"x\"\ncommand = \"x ${args}\"\ndefaults { args = \"\" }\n", &err);
    job = job_of("template = \"x\"\nparams { nb = \"64\" }\n", &err);
    ok(t && job && gpurun_template_check_params(t, job, &err) < 0 && strstr(err.text, "key 'params.nb': not used"),
       "params.nb for a template without hpl_dat: not used (exit 2)");
    ok(gpurun_hpl_edit_for_job(t, job, 2, &e, &err) == 0 && !e.active, "... and no edit there");
    gpurun_job_destroy(job);
    gpurun_template_destroy(t);
}

int main(void)
{
    test_values();
    test_rewrite();
    test_template();
    return done_testing();
}
