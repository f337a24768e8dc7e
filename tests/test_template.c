/* SPDX-License-Identifier: BSD-3-Clause */
/* Templates (SPEC §3), their search path, ${name} expansion, the splitting
 * of commands into words, and `--set KEY=VALUE` on a job. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inputs.h"
#include "job.h"
#include "plugin.h" /* the names of the plugins present */
#include "tap.h"
#include "template.h"
#include "job_template.h"
#include "template_base.h"

#ifndef GPURUN_PKGDATADIR /* as template.c has it in a standalone build */
#define GPURUN_PKGDATADIR "/usr/local/share/gpurun"
#endif

/* ---- well-formed templates -------------------------------------------- */

/* The example of SPEC §3, with a real regex, and every field. */
static const char spec_example[] =
    "# GROMACS: the example of SPEC §3\n"
    "description = \"GROMACS mdrun: MD throughput in ns/day\"\n"
    "command     = \"gmx_mpi mdrun -s ${tpr} -deffnm ${job} -ntomp ${threads_per_rank} "
    "-nsteps ${nsteps} -resethway -noconfout\"\n"
    "gpu_args    = \"-nb gpu -pme gpu -update gpu\"     # appended when gpus_per_rank > 0\n"
    "setup       = { \"gmx grompp -f md.mdp -c conf.gro -p topol.top -o ${tpr}\",\n"
    "                \"echo 'ready'\" }   # run once, before the ranks\n"
    "fom ns_per_day { file = \"${job}.log\"  regex = \"Performance: +([0-9.]+)\"  units = "
    "\"ns/day\"  better = \"higher\" }\n"
    "fom hour_per_ns {\n"
    "    file   = \"${job}.log\"\n"
    "    regex  = \"Performance: +[0-9.]+ +([0-9.]+)\"\n"
    "    units  = \"hour/ns\"\n"
    "    better = \"lower\"\n"
    "}\n"
    "sanity      = \"Finished mdrun\"                   # must appear, else the run failed\n"
    "progress    = \"step ([0-9]+)\"                    # optional: drives the progress line\n"
    "env         { GMX_ENABLE_DIRECT_GPU_COMM = \"1\" } # applied when gpudirect is on\n"
    "defaults    { nsteps = 10000  tpr = \"bench.tpr\" }\n";

static gpurun_template_t *parse_ok(const char *text, const char *label, const char *what)
{
    gpurun_template_t *t = NULL;
    gpurun_error_t err = {0};
    int rc = gpurun_template_parse(text, strlen(text), label, &t, &err);
    if (!ok(rc == 0 && t, "%s: parses", what))
        diag("error: %s", err.text);
    return rc == 0 ? t : NULL;
}

static void test_spec_example(void)
{
    setenv("tpr", "EVIL", 1); /* libconfuse must not expand ${tpr} from here */
    gpurun_template_t *t = parse_ok(spec_example, "templates/gromacs.conf", "SPEC §3 example");
    unsetenv("tpr");
    if (!t)
        return;
    is_str(t->path, "templates/gromacs.conf", "path");
    is_str(t->name, "gromacs", "name from the file name");
    is_str(t->description, "GROMACS mdrun: MD throughput in ns/day", "description");
    is_str(t->command,
           "gmx_mpi mdrun -s ${tpr} -deffnm ${job} -ntomp ${threads_per_rank} -nsteps ${nsteps} "
           "-resethway -noconfout",
           "command keeps ${name}");
    is_str(t->gpu_args, "-nb gpu -pme gpu -update gpu", "gpu_args");
    is_int(t->nsetup, 2, "two setup steps");
    if (t->nsetup == 2) {
        is_str(t->setup[0], "gmx grompp -f md.mdp -c conf.gro -p topol.top -o ${tpr}", "setup 1");
        is_str(t->setup[1], "echo 'ready'", "setup 2");
    }
    is_int(t->nfoms, 2, "two figures of merit");
    if (t->nfoms == 2) {
        is_str(t->foms[0].name, "ns_per_day", "fom 1 name");
        is_str(t->foms[0].file, "${job}.log", "fom 1 file");
        is_str(t->foms[0].regex, "Performance: +([0-9.]+)", "fom 1 regex");
        is_str(t->foms[0].units, "ns/day", "fom 1 units");
        is_str(t->foms[0].better, "higher", "fom 1 better");
        is_str(t->foms[1].name, "hour_per_ns", "fom 2 name, in file order");
        is_str(t->foms[1].units, "hour/ns", "fom 2 units");
        is_str(t->foms[1].better, "lower", "fom 2 better");
    }
    is_str(t->sanity, "Finished mdrun", "sanity");
    is_str(t->progress, "step ([0-9]+)", "progress");
    ok(t->env.n == 1 && strcmp(t->env.items[0].key, "GMX_ENABLE_DIRECT_GPU_COMM") == 0 &&
           strcmp(t->env.items[0].value, "1") == 0,
       "env");
    ok(t->defaults.n == 2 && strcmp(t->defaults.items[0].key, "nsteps") == 0 &&
           strcmp(t->defaults.items[0].value, "10000") == 0 &&
           strcmp(t->defaults.items[1].value, "bench.tpr") == 0,
       "defaults");
    gpurun_template_destroy(t);
}

static void test_minimal(void)
{
    gpurun_template_t *t = parse_ok("description = \"any program\"\ncommand = \"./app\"\n"
                                    "fom value { regex = \"value: ([0-9.eE+-]+)\" }\n",
                                    "generic", "minimal template");
    if (!t)
        return;
    is_str(t->name, "generic", "name from a label without .conf");
    ok(!t->gpu_args && !t->sanity && !t->progress && t->nsetup == 0, "optional keys absent");
    ok(t->env.n == 0 && t->defaults.n == 0, "no env, no defaults");
    if (t->nfoms == 1) {
        ok(t->foms[0].file == NULL, "fom without file: the rank output");
        is_str(t->foms[0].units, "", "units default to \"\"");
        is_str(t->foms[0].better, "higher", "better defaults to higher");
    }
    gpurun_template_destroy(t);

    /* A regex with a ${name} is checked once expanded, not here. */
    t = parse_ok("description = \"d\"\ncommand = \"./app\"\n"
                 "fom value { regex = \"${fom_regex}\" }\ndefaults { fom_regex = \"x\" }\n",
                 "generic.conf", "regex from a parameter");
    if (t)
        is_str(t->foms[0].regex, "${fom_regex}", "regex kept unexpanded");
    gpurun_template_destroy(t);
}

/* ---- malformed templates ---------------------------------------------- */

struct bad {
    const char *what;
    const char *text;
    const char *want;
};

#define HEAD "description = \"d\"\ncommand = \"./app\"\n" /* lines 1-2 */

static const struct bad bad[] = {
    {"unknown key, near a valid one", "descripton = \"d\"\ncommand = \"./app\"\n",
     "tpl.conf:1: unknown key 'descripton' (did you mean 'description'?)"},
    {"unknown key in a fom, lines counted past comments",
     HEAD "# a comment\n/* a block\n comment */ fom a {\n  regx = \"(x)\"\n}\n",
     "tpl.conf:6: unknown key 'fom.a.regx' (did you mean 'fom.a.regex'?)"},
    {"fom without a name", HEAD "fom { regex = \"(x)\" }\n",
     "tpl.conf:3: key 'fom': a name is missing, written fom NAME { ... }"},
    {"fom given a value", HEAD "fom = \"(x)\"\n",
     "tpl.conf:3: key 'fom': a name is missing, written fom NAME { ... }"},
    {"fom name twice",
     HEAD "fom a { regex = \"(x)\" }\nfom b { regex = \"(y)\" }\n"
          "fom a { regex = \"(z)\" }\n",
     "tpl.conf:5: key 'fom.a': given twice (first on line 3)"},
    {"fom name not a name", HEAD "fom \"ns per day\" { regex = \"(x)\" }\n",
     "tpl.conf:3: key 'fom': title 'ns per day' is not a valid name (a letter or '_', then "
     "letters, digits, '_', '.', '-')"},
    {"key twice", "description = \"d\"\ncommand = \"./a\"\n\ncommand = \"./b\"\n",
     "tpl.conf:4: key 'command': given twice (first on line 2)"},
    {"key twice in a fom", HEAD "fom a {\n  regex = \"(x)\"\n  regex = \"(y)\"\n}\n",
     "tpl.conf:5: key 'fom.a.regex': given twice (first on line 4)"},
    {"fom without regex", HEAD "fom a { units = \"s\" }\n",
     "tpl.conf:3: key 'fom.a': no 'regex' (a POSIX extended regex whose first group is the "
     "value)"},
    {"regex without a group", HEAD "fom a { regex = \"Performance: [0-9.]+\" }\n",
     "tpl.conf:3: key 'fom.a.regex': 'Performance: [0-9.]+' has no group: put what it reads in "
     "parentheses, as in \"([0-9.]+) ns/day\""},
    {"better not higher or lower", HEAD "fom a { regex = \"(x)\" better = \"lowr\" }\n",
     "tpl.conf:3: key 'fom.a.better': 'lowr' is not one of higher, lower (did you mean "
     "'lower'?)"},
    {"better far from both", HEAD "fom a { regex = \"(x)\" better = \"faster\" }\n",
     "tpl.conf:3: key 'fom.a.better': 'faster' is not one of higher, lower"},
    {"empty units", HEAD "fom a { regex = \"(x)\" units = \"\" }\n",
     "tpl.conf:3: key 'fom.a.units': empty value"},
    {"progress without a group", HEAD "progress = \"step [0-9]+\"\n",
     "tpl.conf:3: key 'progress': 'step [0-9]+' has no group: put what it reads in parentheses, "
     "as in \"([0-9.]+) ns/day\""},
    {"command missing", "description = \"d\"\nsanity = \"done\"\n",
     "tpl.conf: key 'command' missing: the program to run and its arguments"},
    {"description missing", "command = \"./app\"\n",
     "tpl.conf: key 'description' missing: one line saying what the template runs and "
     "measures"},
    {"an error with a line comes before a missing key", "command = \"./app\"\nsmt = true\n",
     "tpl.conf:2: unknown key 'smt'"},
    {"command through a pipe", "description = \"d\"\ncommand = \"./app -n ${n} | tee log\"\n",
     "tpl.conf:2: key 'command': './app -n ${n} | tee log': unquoted '|' at position 15 (gpurun "
     "runs no shell: quote it to pass it to the program)"},
    {"${ without } in command", "description = \"d\"\ncommand = \"./app -n ${n\"\n",
     "tpl.conf:2: key 'command': '${' without a closing '}'"},
    {"${ without } in fom units", HEAD "fom a { regex = \"(x)\"  units = \"${u\" }\n",
     "tpl.conf:3: key 'fom.a.units': '${' without a closing '}'"},
    {"bad ${name} in gpu_args", HEAD "gpu_args = \"-gpu ${gpu id}\"\n",
     "tpl.conf:3: key 'gpu_args': '${gpu id}' is not a valid name (a letter or '_', then "
     "letters, digits, '_')"},
    {"empty setup step", HEAD "setup = {\"make\", \"\"}\n",
     "tpl.conf:3: key 'setup', item 2: empty value"},
    {"setup step with a tab", HEAD "setup = {\"make\\tall\"}\n",
     "tpl.conf:3: key 'setup', item 1: control character 0x09 (tab) in the value"},
    {"setup step with a redirection", HEAD "setup = {\"make\",\n \"gen > in.txt\"}\n",
     "tpl.conf:3: key 'setup', item 2: 'gen > in.txt': unquoted '>' at position 5 (gpurun runs "
     "no shell: quote it to pass it to the program)"},
    {"list for a single value", HEAD "progress = {\"a\", \"b\"}\n",
     "tpl.conf:3: key 'progress': expected one value, not a list"},
    {"env name not a variable name", HEAD "env {\n  GMX-X = \"1\"\n}\n",
     "tpl.conf:4: key 'env.GMX-X': not a valid environment variable name"},
    {"line break in a default", HEAD "defaults { msg = \"a\nb\" }\n",
     "tpl.conf:3: key 'defaults.msg': control character 0x0a (line break) in the value"},
    {"empty gpu_args", HEAD "gpu_args = \"\"\n", "tpl.conf:3: key 'gpu_args': empty value"},
    {"unquoted ${X}", HEAD "defaults { n = ${N} }\n",
     "tpl.conf:3: key 'defaults.n': ${N} must be in double quotes: \"${N}\""},
    {"unterminated string", HEAD "sanity = \"done\n",
     "tpl.conf:3: unterminated string: the '\"' here is never closed"},
    {"fom not closed", HEAD "fom a {\n  regex = \"(x)\"\n",
     "tpl.conf:3: key 'fom.a': section not closed ('}' missing)"},
    {"fom name at the end of the file", HEAD "fom a",
     "tpl.conf:3: key 'fom': '{' and the section missing at the end of the file"},
    /* The progress keys (issue 27 §5). */
    {"progress_groups with a word it does not know", HEAD "progress = \"(x) (y)\"\nprogress_groups = \"step time\"\n",
     "tpl.conf:4: key 'progress_groups': 'time' is not one of step, total, figure, clock, - (or \"count\" alone)"},
    {"progress_groups naming one twice", HEAD "progress = \"(x) (y)\"\nprogress_groups = \"step step\"\n",
     "tpl.conf:4: key 'progress_groups': 'step' twice"},
    {"progress_groups naming more groups than the regex has",
     HEAD "progress = \"step ([0-9]+)\"\nprogress_groups = \"step clock\"\n",
     "tpl.conf:4: key 'progress_groups': names 2 groups, and 'progress' has 1"},
    {"progress_file without progress", HEAD "progress_file = \"md.log\"\n",
     "tpl.conf:3: key 'progress_file': without 'progress' (the regex of the progress lines) it says nothing"},
    {"progress_total that is not a number", HEAD "progress = \"(x)\"\nprogress_total = \"lots\"\n",
     "tpl.conf:4: key 'progress_total': 'lots' is not a whole number"},
    {"progress_scale that is not a positive number", HEAD "progress = \"(x)\"\nprogress_scale = \"-1\"\n",
     "tpl.conf:4: key 'progress_scale': '-1' is not a positive number (as \"86.4\": ps per wall second to "
     "ns/day)"},
    {"progress_scale that is nan", HEAD "progress = \"(x)\"\nprogress_scale = \"nan\"\n",
     "tpl.conf:4: key 'progress_scale': 'nan' is not a positive number (as \"86.4\": ps per wall second to "
     "ns/day)"},
    {"progress_total_file without its regex", HEAD "progress = \"(x)\"\nprogress_total_file = \"in.txt\"\n",
     "tpl.conf:4: key 'progress_total_file': without 'progress_total_regex' (the lines whose first groups "
     "multiply to the total)"},
    {"progress_total_regex without a group",
     HEAD "progress = \"(x)\"\nprogress_total_file = \"in.txt\"\nprogress_total_regex = \"# of\"\n",
     "tpl.conf:5: key 'progress_total_regex': '# of' has no group: put what it reads in parentheses, as in "
     "\"([0-9.]+) ns/day\""},
    {"progress_total and progress_total_file both",
     HEAD "progress = \"(x)\"\nprogress_total = \"5\"\nprogress_total_file = \"in.txt\"\n"
          "progress_total_regex = \"([0-9]+)\"\n",
     "tpl.conf:5: key 'progress_total_file': not with 'progress_total' (line 4): the total comes from one or the "
     "other"},
    {"progress with a bad ${name}", HEAD "progress = \"(x)\"\nprogress_total = \"${n steps}\"\n",
     "tpl.conf:4: key 'progress_total': '${n steps}' is not a valid name (a letter or '_', then letters, "
     "digits, '_')"},
};

/* The fom's kind, and the version keys (issue 30). */
static const struct bad bad_kind[] = {
    {"fom kind misspelt", HEAD "fom a {\n  regex = \"([0-9.]+)\"\n  kind = \"throughpt\"\n}\n",
     "tpl.conf:5: key 'fom.a.kind': 'throughpt' is not one of throughput, time, other (did you mean 'throughput'?)"},
    {"fom kind unknown", HEAD "fom a {\n  regex = \"([0-9.]+)\"\n  kind = \"speed\"\n}\n",
     "tpl.conf:5: key 'fom.a.kind': 'speed' is not one of throughput, time, other"},
    {"version without a group", HEAD "version = \"GROMACS version:\"\n",
     "tpl.conf:3: key 'version': 'GROMACS version:' has no group: put what it reads in parentheses, as in "
     "\"([0-9.]+) ns/day\""},
    {"version_file without version", HEAD "version_file = \"${job}.log\"\n",
     "tpl.conf:3: key 'version_file': without 'version' (the regex of the version) it says nothing"},
};

/* Regexes that do not compile: the message ends in the C library's words
 * for what is wrong, which differ between C libraries. */
static const struct bad bad_regex[] = {
    {"regex that does not compile", HEAD "fom a {\n  regex = \"([0-9.]+\"\n}\n",
     "tpl.conf:4: key 'fom.a.regex': '([0-9.]+' is not a POSIX extended regex: "},
    {"progress that does not compile", HEAD "progress = \"step (\"\n",
     "tpl.conf:3: key 'progress': 'step (' is not a POSIX extended regex: "},
    {"progress_after that does not compile", HEAD "progress = \"(x)\"\nprogress_after = \"[a\"\n",
     "tpl.conf:4: key 'progress_after': '[a' is not a POSIX extended regex: "},
};
static const char *const bad_regex_re[] = {"([0-9.]+", "step (", "[a"};

static void check_bad(const struct bad *b, const char *regex)
{
    gpurun_template_t *t = (gpurun_template_t *)&t; /* must be reset */
    gpurun_error_t err = {0};
    int rc = gpurun_template_parse(b->text, strlen(b->text), "tpl.conf", &t, &err);
    ok(rc == -1 && err.code == GPURUN_EXIT_CONFIG && t == NULL, "%s: refused, exit code 2",
       b->what);
    char want[1024];
    snprintf(want, sizeof want, "%s", b->want);
    if (regex) {
        regex_t re;
        int e = regcomp(&re, regex, REG_EXTENDED);
        if (e == 0)
            regfree(&re);
        size_t n = strlen(want);
        regerror(e, &re, want + n, sizeof want - n);
    }
    is_str(err.text, want, "%s: message", b->what);
    if (rc == 0)
        gpurun_template_destroy(t);
}

static void test_bad(void)
{
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        check_bad(&bad[i], NULL);
    for (size_t i = 0; i < sizeof bad_regex / sizeof *bad_regex; i++)
        check_bad(&bad_regex[i], bad_regex_re[i]);
    for (size_t i = 0; i < sizeof bad_kind / sizeof *bad_kind; i++)
        check_bad(&bad_kind[i], NULL);
}

/* ---- the search path -------------------------------------------------- */

static char *mkdirs(const char *base, const char *sub)
{
    char *path = NULL;
    if (asprintf(&path, "%s/%s", base, sub) < 0)
        return NULL;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
    if (system(cmd) != 0) {
        free(path);
        return NULL;
    }
    return path;
}

static void put(const char *dir, const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    if (fp) {
        fputs(text, fp);
        fclose(fp);
    }
}

static void drop(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
}

static void want_found(const char *name, const char *job_dir, const char *dir, const char *what)
{
    char *path = NULL, *want = NULL;
    gpurun_error_t err = {0};
    int rc = gpurun_template_find(name, job_dir, &path, &err);
    if (asprintf(&want, "%s/%s.conf", dir, name) < 0)
        want = NULL;
    if (!ok(rc == 0, "%s: found", what))
        diag("error: %s", err.text);
    is_str(path, want, "%s: path", what);
    free(path);
    free(want);
}

static void test_search(void)
{
    char base[] = "/tmp/gpurun-test-tpl.XXXXXX";
    if (!mkdtemp(base)) {
        ok(0, "mkdtemp: %s", strerror(errno));
        return;
    }
    char *jobdir = mkdirs(base, "job");
    char *p1 = mkdirs(base, "p1");
    char *p2 = mkdirs(base, "p2");
    char *home = mkdirs(base, "home");
    char *user = mkdirs(base, "home/.config/gpurun/templates");
    if (!jobdir || !p1 || !p2 || !home || !user) {
        ok(0, "make the folders");
        return;
    }
    char *saved_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    char *tpath = NULL;
    if (asprintf(&tpath, "%s::%s", p1, p2) < 0) /* an empty entry is skipped */
        tpath = NULL;
    setenv("GPURUN_TEMPLATE_PATH", tpath, 1);
    setenv("HOME", home, 1);

    static const char text[] = "description = \"d\"\ncommand = \"./app\"\n";
    put(jobdir, "t.conf", text);
    put(p1, "t.conf", text);
    put(p2, "t.conf", text);
    put(user, "t.conf", text);
    want_found("t", jobdir, jobdir, "the job's folder first");
    drop(jobdir, "t.conf");
    want_found("t", jobdir, p1, "then $GPURUN_TEMPLATE_PATH, in order");
    drop(p1, "t.conf");
    want_found("t", jobdir, p2, "then its next folder");
    drop(p2, "t.conf");
    want_found("t", jobdir, user, "then ~/.config/gpurun/templates");
    want_found("t", NULL, user, "no job folder");

    gpurun_template_t *t = NULL;
    gpurun_error_t err = {0};
    char *found = NULL;
    if (gpurun_template_find("t", jobdir, &found, &err) == 0) {
        ok(gpurun_template_load(found, &t, &err) == 0 && t, "load what was found");
        if (t)
            is_str(t->name, "t", "loaded: name");
        gpurun_template_destroy(t);
    }
    free(found);
    drop(user, "t.conf");

    /* Not found: every folder named, in order; the nearest name offered. */
    char *want = NULL;
    found = (char *)&found;
    /* A build also looks in its source tree's templates, last. */
    char *src = NULL;
#ifdef GPURUN_SOURCE_TEMPLATES
    char *real = realpath(GPURUN_SOURCE_TEMPLATES, NULL);
    if (real && asprintf(&src, ", %s", real) < 0)
        src = NULL;
    free(real);
#endif
    if (asprintf(&want,
                 "template 't' not found; looked in %s, %s, %s, %s, %s%s (GPURUN_TEMPLATE_PATH adds "
                 "folders)",
                 jobdir, p1, p2, user, GPURUN_PKGDATADIR "/templates", src ? src : "") < 0)
        want = NULL;
    ok(gpurun_template_find("t", jobdir, &found, &err) == -1 && err.code == GPURUN_EXIT_CONFIG &&
           !found,
       "not found: exit code 2");
    is_str(err.text, want, "not found: the folders searched");
    free(want);

    put(p2, "gromacs.conf", text);
    if (asprintf(&want,
                 "template 'gromcs' not found (did you mean 'gromacs'?); looked in %s, %s, "
                 "%s, %s, %s%s",
                 jobdir, p1, p2, user, GPURUN_PKGDATADIR "/templates", src ? src : "") < 0)
        want = NULL;
    ok(gpurun_template_find("gromcs", jobdir, &found, &err) == -1, "misspelt: not found");
    is_str(err.text, want, "misspelt: the nearest template offered");
    free(want);
    drop(p2, "gromacs.conf");
    free(src);

    static const char *const badnames[] = {"../t", "a/b", "", "t conf"};
    for (size_t i = 0; i < sizeof badnames / sizeof *badnames; i++) {
        if (asprintf(&want,
                     "template '%s': not a valid template name (letters, digits, '_', '-', '.'; a "
                     "name on the search path, not a file)",
                     badnames[i]) < 0)
            want = NULL;
        ok(gpurun_template_find(badnames[i], jobdir, &found, &err) == -1 &&
               err.code == GPURUN_EXIT_CONFIG,
           "name '%s': refused", badnames[i]);
        is_str(err.text, want, "name '%s': message", badnames[i]);
        free(want);
    }

    if (saved_home)
        setenv("HOME", saved_home, 1);
    else
        unsetenv("HOME");
    unsetenv("GPURUN_TEMPLATE_PATH");
    free(saved_home);
    free(tpath);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    ok(system(cmd) == 0, "clean up");
    free(jobdir);
    free(p1);
    free(p2);
    free(home);
    free(user);
}

/* ---- ${name} ---------------------------------------------------------- */

static const char *no_names(const char *name, void *ctx)
{
    (void)ctx;
    return strcmp(name, "known") == 0 ? "K" : NULL;
}

static void test_expand(void)
{
    struct gpurun_kvlist vars = {0};
    gpurun_kvlist_set(&vars, "nsteps", "100");
    gpurun_kvlist_set(&vars, "tpr", "old.tpr");
    gpurun_kvlist_set(&vars, "tpr", "bench.tpr"); /* replaced */
    gpurun_kvlist_set(&vars, "job", "water");
    gpurun_kvlist_set(&vars, "dollar", "${nsteps}");
    is_int(vars.n, 4, "a key set again is replaced");
    is_str(gpurun_kvlist_get(&vars, "tpr"), "bench.tpr", "the later value");

    static const struct {
        const char *in, *want;
    } good[] = {
        {"gmx -s ${tpr} -nsteps ${nsteps}", "gmx -s bench.tpr -nsteps 100"},
        {"${job}${nsteps}", "water100"},
        {"${job}", "water"},
        {"no names at all", "no names at all"},
        {"", ""},
        {"$job $ {job} $$ {job} }", "$job $ {job} $$ {job} }"},
        {"${dollar}", "${nsteps}"},
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        char *out = NULL;
        gpurun_error_t err = {0};
        int rc =
            gpurun_expand(good[i].in, gpurun_kvlist_lookup, &vars, "key 'command'", &out, &err);
        if (!ok(rc == 0, "expand '%s'", good[i].in))
            diag("error: %s", err.text);
        is_str(out, good[i].want, "expand '%s': result", good[i].in);
        free(out);
    }

    static const struct {
        const char *in, *want;
    } badx[] = {
        {"-n ${nstep}", "key 'command': '${nstep}' is not set (did you mean '${nsteps}'?)"},
        {"${input}", "key 'command': '${input}' is not set"},
        {"-n ${nsteps", "key 'command': '${' without a closing '}'"},
        {"${job}${", "key 'command': '${' without a closing '}'"},
        {"${}", "key 'command': empty '${}'"},
        {"${1x}", "key 'command': '${1x}' is not a valid name (a letter or '_', then letters, "
                  "digits, '_')"},
        {"${a.b}", "key 'command': '${a.b}' is not a valid name (a letter or '_', then letters, "
                   "digits, '_')"},
    };
    for (size_t i = 0; i < sizeof badx / sizeof *badx; i++) {
        char *out = (char *)&out;
        gpurun_error_t err = {0};
        int rc =
            gpurun_expand(badx[i].in, gpurun_kvlist_lookup, &vars, "key 'command'", &out, &err);
        ok(rc == -1 && err.code == GPURUN_EXIT_CONFIG && out == NULL, "'%s': refused, exit 2",
           badx[i].in);
        is_str(err.text, badx[i].want, "'%s': message", badx[i].in);
    }

    /* Any lookup function works; only a kvlist can suggest. */
    char *out = NULL;
    gpurun_error_t err = {0};
    ok(gpurun_expand("a ${known} b", no_names, NULL, "x", &out, &err) == 0, "own lookup");
    is_str(out, "a K b", "own lookup: result");
    free(out);
    ok(gpurun_expand("${knwn}", no_names, NULL, "template gromacs: key 'command'", &out, &err) ==
           -1,
       "own lookup: unknown name");
    is_str(err.text, "template gromacs: key 'command': '${knwn}' is not set",
           "own lookup: no suggestion");
    gpurun_kvlist_clear(&vars);
    ok(vars.n == 0 && vars.items == NULL, "cleared");
}

/* ---- words ------------------------------------------------------------ */

static void test_words(void)
{
    static const struct {
        const char *line;
        const char *want[8];
    } good[] = {
        {"gmx_mpi mdrun -s bench.tpr", {"gmx_mpi", "mdrun", "-s", "bench.tpr"}},
        {"  a\t b  ", {"a", "b"}},
        {"", {NULL}},
        {" \t ", {NULL}},
        {"echo 'a b' \"c d\"", {"echo", "a b", "c d"}},
        {"x '' \"\" y", {"x", "", "", "y"}},
        {"a'b'\"c\"d", {"abcd"}},
        {"'$(ls) `ls` ; | & < > ( ) \\ \"'", {"$(ls) `ls` ; | & < > ( ) \\ \""}},
        {"\"a \\\" \\\\ \\$ \\` \\n b\"", {"a \" \\ $ ` \\n b"}},
        {"\"; | & < > ( ) '\"", {"; | & < > ( ) '"}},
        {"a\\ b \\; \\'x\\' \\\\", {"a b", ";", "'x'", "\\"}},
        {"-s ${tpr} $HOME ~ * ? [a]", {"-s", "${tpr}", "$HOME", "~", "*", "?", "[a]"}},
        {"a#b \"#\" '#'", {"a#b", "#", "#"}},
        {"./app x=1 'A'=1", {"./app", "x=1", "A=1"}},
        {"trailing\\", {"trailing\\"}},
        {"line\\\ncontinued", {"linecontinued"}},
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        char **argv = NULL;
        gpurun_error_t err = {0};
        int rc = gpurun_split_words(good[i].line, &argv, &err);
        if (!ok(rc == 0 && argv, "split [%s]", good[i].line)) {
            diag("error: %s", err.text);
            continue;
        }
        size_t n = 0, wn = 0;
        while (argv[n])
            n++;
        while (good[i].want[wn])
            wn++;
        int same = n == wn;
        for (size_t k = 0; same && k < n; k++)
            same = strcmp(argv[k], good[i].want[k]) == 0;
        if (!ok(same, "split [%s]: %zu words as expected", good[i].line, wn))
            for (size_t k = 0; k < n; k++)
                diag("word %zu: [%s]", k, argv[k]);
        gpurun_free_words(argv);
    }

    static const struct {
        const char *line, *want;
    } badw[] = {
        {"./app ; rm -rf x",
         "'./app ; rm -rf x': unquoted ';' at position 7 (gpurun runs no shell: quote it to pass "
         "it to the program)"},
        {"a|b", "'a|b': unquoted '|' at position 2 (gpurun runs no shell: quote it to pass it to "
                "the program)"},
        {"a && b", "'a && b': unquoted '&' at position 3 (gpurun runs no shell: quote it to pass "
                   "it to the program)"},
        {"a < in", "'a < in': unquoted '<' at position 3 (gpurun runs no shell: quote it to pass "
                   "it to the program)"},
        {"a 2>err", "'a 2>err': unquoted '>' at position 4 (gpurun runs no shell: quote it to "
                    "pass it to the program)"},
        {"(a)", "'(a)': unquoted '(' at position 1 (gpurun runs no shell: quote it to pass it to "
                "the program)"},
        {"a b)", "'a b)': unquoted ')' at position 4 (gpurun runs no shell: quote it to pass it "
                 "to the program)"},
        {"a `id`", "'a `id`': '`' at position 3: command substitution needs a shell, and gpurun "
                   "runs none"},
        {"a \"`id`\"", "'a \"`id`\"': '`' at position 4: command substitution needs a shell, and "
                       "gpurun runs none"},
        {"a $(id)", "'a $(id)': '$(' at position 3: command substitution needs a shell, and "
                    "gpurun runs none"},
        {"a \"x$(id)\"", "'a \"x$(id)\"': '$(' at position 5: command substitution needs a shell, "
                         "and gpurun runs none"},
        {"a 'b", "'a 'b': the \"'\" at position 3 is never closed"},
        {"a \"b\\\"", "'a \"b\\\"': the '\"' at position 3 is never closed"},
        {"a # note", "'a # note': unquoted '#' at position 3 starts a comment in a shell (gpurun "
                     "runs no shell: quote it to pass it to the program)"},
        {"a\nb", "'a\\x0ab': unquoted line break at position 2 (gpurun runs no shell: quote it "
                 "to pass it to the program)"},
        {"OMP_NUM_THREADS=4 ./app", "'OMP_NUM_THREADS=4 ./app': 'OMP_NUM_THREADS=' at position 1 "
                                    "sets a variable in a shell, not a program to run: put "
                                    "OMP_NUM_THREADS in env { }"},
    };
    for (size_t i = 0; i < sizeof badw / sizeof *badw; i++) {
        char **argv = (char **)&argv;
        gpurun_error_t err = {0};
        int rc = gpurun_split_words(badw[i].line, &argv, &err);
        ok(rc == -1 && err.code == GPURUN_EXIT_CONFIG && argv == NULL, "[%s]: refused, exit 2",
           badw[i].line);
        is_str(err.text, badw[i].want, "[%s]: message", badw[i].line);
    }
    gpurun_free_words(NULL);
}

/* ${name} expanded into words (issue 11, item 9): a value is never parsed
 * again, except a params value alone as an unquoted word (a list). */
static void test_expand_words(void)
{
    struct gpurun_kvlist v = {0};
    gpurun_kvlist_set(&v, "job_dir", "/p/a b'c");
    gpurun_kvlist_set(&v, "run_dir", "/p/results/j/<run-id>");
    gpurun_kvlist_set(&v, "job", "j");
    gpurun_kvlist_set(&v, "args", "--steps 10 'x y'");
    gpurun_kvlist_set(&v, "empty", "");
    gpurun_kvlist_set(&v, "semi", "a;b");
    static const struct {
        const char *line;
        const char *want[8];
    } good[] = {
        {"cp ${job_dir}/in .", {"cp", "/p/a b'c/in", "."}},
        {"prog ${job_dir}", {"prog", "/p/a b'c"}},
        {"prog \"${job_dir}\" '${job_dir}'", {"prog", "/p/a b'c", "/p/a b'c"}},
        {"prog ${run_dir}", {"prog", "/p/results/j/<run-id>"}},
        {"prog ${args}", {"prog", "--steps", "10", "x y"}},
        {"prog \"${args}\"", {"prog", "--steps 10 'x y'"}},
        {"prog -a${args}", {"prog", "-a--steps 10 'x y'"}},
        {"prog ${empty} x", {"prog", "x"}},
        {"prog \"${empty}\"", {"prog", ""}},
        {"prog ${semi}x", {"prog", "a;bx"}},
        {"prog \\${job}", {"prog", "${job}"}},
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        char **argv = NULL;
        gpurun_error_t err = {0};
        int rc = gpurun_expand_words(good[i].line, gpurun_kvlist_lookup, &v, "key 'command'", &argv, &err);
        if (!ok(rc == 0 && argv, "expand into words [%s]", good[i].line)) {
            diag("error: %s", err.text);
            continue;
        }
        size_t n = 0, wn = 0;
        while (argv[n])
            n++;
        while (good[i].want[wn])
            wn++;
        int same = n == wn;
        for (size_t k = 0; same && k < n; k++)
            same = strcmp(argv[k], good[i].want[k]) == 0;
        if (!ok(same, "[%s]: %zu words as expected", good[i].line, wn))
            for (size_t k = 0; k < n; k++)
                diag("word %zu: [%s]", k, argv[k]);
        gpurun_free_words(argv);
    }
    static const struct {
        const char *line, *want;
    } refused[] = {
        {"prog ${nope}", "key 'command': '${nope}' is not set"},
        {"prog \"${nope}\"", "key 'command': '${nope}' is not set"},
        {"prog ${semi}", "the words of '${semi}', 'a;b': unquoted ';' at position 2"},
        {"prog ${job", "key 'command': '${' without a closing '}'"},
        {"prog ; ${job}", "'prog ; ${job}': unquoted ';' at position 6"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        char **argv = (char **)&argv;
        gpurun_error_t err = {0};
        int rc = gpurun_expand_words(refused[i].line, gpurun_kvlist_lookup, &v, "key 'command'", &argv, &err);
        ok(rc == -1 && err.code == GPURUN_EXIT_CONFIG && argv == NULL && !strncmp(err.text, refused[i].want, strlen(refused[i].want)),
           "[%s]: refused, exit 2", refused[i].line);
        if (strncmp(err.text, refused[i].want, strlen(refused[i].want)))
            diag("got: %s", err.text);
    }
    gpurun_kvlist_clear(&v);
}

/* ---- --set KEY=VALUE -------------------------------------------------- */

static gpurun_job_t *job_from(const char *text)
{
    gpurun_job_t *job = NULL;
    gpurun_error_t err = {0};
    if (gpurun_job_parse(text, strlen(text), "jobs/water.conf", &job, &err) < 0)
        diag("job: %s", err.text);
    return job;
}

static int set_ok(gpurun_job_t *job, const char *assignment)
{
    gpurun_error_t err = {0};
    int rc = gpurun_job_set(job, assignment, &err);
    if (!ok(rc == 0, "--set %s", assignment))
        diag("error: %s", err.text);
    return rc == 0;
}

static const char base_job[] = "template = \"gromacs\"\n"
                               "nodes = 2\n"
                               "ranks_per_node = 4\n"
                               "params { nsteps = 5000  tpr = \"bench.tpr\" }\n"
                               "env { OMP_STACKSIZE = \"512M\" }\n"
                               "scan { ranks_per_node = {1, 2}  threads_per_rank = {4, 8} }\n";

static void test_set_good(void)
{
    gpurun_job_t *job = job_from(base_job);
    if (!ok(job != NULL, "base job parses"))
        return;
    if (set_ok(job, "nodes=4"))
        is_int(job->nodes, 4, "nodes");
    if (set_ok(job, "ranks_per_node=8")) {
        is_int(job->ranks_per_node, 8, "ranks_per_node");
        ok(job->nscan == 1 && strcmp(job->scan[0].key, "threads_per_rank") == 0,
           "a key set by --set leaves the scan");
    }
    if (set_ok(job, "launcher=srun"))
        is_str(job->launcher, "srun", "launcher");
    if (set_ok(job, "timeout=1h30m"))
        is_int(job->timeout_s, 5400, "timeout");
    if (set_ok(job, "timeout=01:00:00"))
        is_int(job->timeout_s, 3600, "timeout, Slurm's way");
    if (set_ok(job, "smt=yes") && set_ok(job, "oversubscribe=false"))
        ok(job->smt && !job->oversubscribe, "booleans");
    if (set_ok(job, "gpu_visibility=shared") && set_ok(job, "gpudirect=off") &&
        set_ok(job, "bind=none"))
        ok(job->gpu_visibility == GPURUN_GPUVIS_SHARED && job->gpudirect == GPURUN_GPUDIRECT_OFF &&
               job->bind == GPURUN_BIND_NONE,
           "enums");
    if (set_ok(job, "cpu_locality=gpu"))
        is_int(job->cpu_locality, GPURUN_CPULOC_GPU, "--set cpu_locality=gpu");
    if (set_ok(job, "repeat=3"))
        is_int(job->repeat, 3, "repeat");
    if (set_ok(job, "params.nsteps=100")) {
        is_int(job->params.n, 2, "params: replaced, not added");
        is_str(job->params.items[0].value, "100", "params.nsteps");
    }
    if (set_ok(job, "params.new=x=y")) /* the first '=' splits */
        ok(job->params.n == 3 && strcmp(job->params.items[2].key, "new") == 0 &&
               strcmp(job->params.items[2].value, "x=y") == 0,
           "params: a new key, a value with '='");
    setenv("HOME", "/EVIL", 1);
    if (set_ok(job, "env.PATH=${HOME}/bin:\\x \"q\""))
        is_str(job->env.items[1].value, "/EVIL/bin:\\x \"q\"",
               "env value: ${VAR} the launching environment's (SPEC §2), '\\', '\"' kept");
    if (set_ok(job, "slurm.partition=gpu") && set_ok(job, "references.ns_per_day=90 +-10%")) {
        ok(gpurun_job_manager_options(job, "slurm")->n == 1 &&
               strcmp(gpurun_job_manager_options(job, "slurm")->items[0].value, "gpu") == 0,
           "slurm");
        ok(job->references.n == 1 && strcmp(job->references.items[0].value, "90 +-10%") == 0,
           "references");
    }
    if (set_ok(job, "job=water-2") && set_ok(job, "results=out/runs") && set_ok(job, "site=uni"))
        ok(strcmp(job->name, "water-2") == 0 && strcmp(job->results, "out/runs") == 0 &&
               strcmp(job->site, "uni") == 0,
           "strings");
    if (set_ok(job, "site="))
        ok(job->site == NULL, "an empty site drops it");
    if (set_ok(job, "template=lammps"))
        is_str(job->template_name, "lammps", "template replaced");
    if (set_ok(job, "template=") && set_ok(job, "command=./app -n ${nsteps}")) {
        ok(job->template_name == NULL, "an empty template drops it");
        is_str(job->command, "./app -n ${nsteps}", "then a command may replace it");
    }
    if (set_ok(job, "command=") && set_ok(job, "template=gromacs"))
        ok(job->command == NULL && strcmp(job->template_name, "gromacs") == 0,
           "and back to a template");
    gpurun_job_destroy(job);
}

static void test_set_bad(void)
{
    static const struct {
        const char *job, *set, *want;
    } cases[] = {
        {base_job, "nodes=two", "--set nodes=two: key 'nodes': expected an integer, got 'two'"},
        {base_job, "rank_per_node=2",
         "--set rank_per_node=2: unknown key 'rank_per_node' (did you mean 'ranks_per_node'?)"},
        {base_job, "colour=red", "--set colour=red: unknown key 'colour'"},
        {base_job, "nodes",
         "--set nodes: '=' missing: expected KEY=VALUE, such as "
         "ranks_per_node=4"},
        {base_job, "=4",
         "--set =4: the key is missing: expected KEY=VALUE, such as "
         "ranks_per_node=4"},
        {base_job, "nodes=0", "--set nodes=0: key 'nodes': 0 is out of range (1 to 65536)"},
        {base_job, "gpus_per_rank=65",
         "--set gpus_per_rank=65: key 'gpus_per_rank': 65 is out of range (0 to 64)"},
        {base_job, "threads_per_rank=2.5",
         "--set threads_per_rank=2.5: key 'threads_per_rank': expected an integer, got '2.5'"},
        {base_job, "launcher=mpi",
         "--set launcher=mpi: key 'launcher': 'mpi' is not one of auto, mpirun, srun, flux, pbs, local (did "
         "you mean 'mpirun'?)"},
        {base_job, "smt=maybe", "--set smt=maybe: key 'smt': expected true or false, got 'maybe'"},
        {base_job, "timeout=30 minutes",
         "--set timeout=30 minutes: key 'timeout': expected a duration such as \"30m\", "
         "\"1h30m\", \"90s\", \"01:00:00\" or \"none\", got '30 minutes'"},
        {base_job, "timeout=400d",
         "--set timeout=400d: key 'timeout': '400d' is out of range (at most 366 days)"},
        {base_job, "command=./app",
         "--set command=./app: key 'command': contradicts 'template' (gromacs): a job runs a "
         "template or a command, not both (--set template= before this one drops the template)"},
        {"command = \"./app\"\n", "template=gromacs",
         "--set template=gromacs: key 'template': contradicts 'command' (./app): a job runs a "
         "template or a command, not both (--set command= before this one drops the command)"},
        {base_job, "launcher=local",
         "--set launcher=local: key 'launcher': contradicts 'nodes' (2): launcher \"local\" runs "
         "on this node only, nodes = 2"},
        {"launcher = local\n", "nodes=3",
         "--set nodes=3: key 'nodes': contradicts 'launcher' (local): launcher \"local\" runs on "
         "this node only, nodes = 3"},
        {"scan { nodes = {1, 2} }\n", "launcher=local",
         "--set launcher=local: key 'launcher': contradicts 'scan.nodes': launcher \"local\" runs "
         "on this node only, the scan asks for more nodes"},
        {"gpu_visibility = shared\n", "gpus_per_rank=0",
         "--set gpus_per_rank=0: key 'gpus_per_rank': contradicts 'gpu_visibility' (shared): "
         "\"shared\" chooses a GPU for each rank, gpus_per_rank = 0"},
        {"gpus_per_rank = 0\n", "gpu_visibility=shared",
         "--set gpu_visibility=shared: key 'gpu_visibility': contradicts 'gpus_per_rank' (0): "
         "\"shared\" chooses a GPU for each rank, gpus_per_rank = 0"},
        {base_job, "command=./a\tb",
         "--set command=./a\\x09b: key 'command': control character 0x09 (tab) in the value"},
        {"command = \"./app\"\n", "env.A=1\n2",
         "--set env.A=1\\x0a2: key 'env.A': control character 0x0a (line break) in the value"},
        {base_job, "env.1BAD=x",
         "--set env.1BAD=x: key 'env.1BAD': not a valid environment variable name"},
        {base_job, "params.a|b=x",
         "--set params.a|b=x: key 'params.a|b': not a valid key name (a letter or '_', then "
         "letters, digits, '_', '.', '-')"},
        {base_job, "x y=1",
         "--set x y=1: key 'x y': not a valid key name (a letter or '_', then letters, digits, "
         "'_', '.', '-')"},
        {base_job, "paramz.n=1",
         "--set paramz.n=1: unknown key 'paramz.n' (did you mean 'params.n'?)"},
        {base_job, "params=x", "--set params=x: key 'params': a section, written params { ... }"},
        {base_job, "scan.nodes=1",
         "--set scan.nodes=1: key 'scan.nodes': a scan is set in the job file; --set nodes=VALUE "
         "fixes one value"},
        {base_job, "job=../x",
         "--set job=../x: key 'job': '../x' is not a valid job name (letters, digits, '.', '_', "
         "'+', '-'; it names the results folder)"},
        {base_job, "job=", "--set job=: key 'job': empty value"},
        {base_job, "template=../evil",
         "--set template=../evil: key 'template': '../evil' is not a valid template name "
         "(letters, digits, '_', '-', '.'; a name on the search path, not a file)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gpurun_job_t *job = job_from(cases[i].job);
        if (!job) {
            ok(0, "job for --set %s", cases[i].set);
            continue;
        }
        int nodes = job->nodes;
        char *tpl = job->template_name ? strdup(job->template_name) : NULL;
        size_t nenv = job->env.n;
        gpurun_error_t err = {0};
        int rc = gpurun_job_set(job, cases[i].set, &err);
        ok(rc == -1 && err.code == GPURUN_EXIT_CONFIG, "--set %s: refused, exit 2", cases[i].set);
        is_str(err.text, cases[i].want, "--set %s: message", cases[i].set);
        ok(job->nodes == nodes && job->env.n == nenv &&
               ((!tpl && !job->template_name) ||
                (tpl && job->template_name && strcmp(tpl, job->template_name) == 0)) &&
               (strcmp(cases[i].set, "command=./app") != 0 || job->command == NULL),
           "--set %s: the job unchanged", cases[i].set);
        free(tpl);
        gpurun_job_destroy(job);
    }
}

/* ---- params the template does not use -------------------------------- */

/* Each string gpurun expands names one parameter; `d` is only a default. */
static const char params_tpl[] =
    "description = \"d\"\n"
    "command = \"./app ${c} -n ${job}\"\n"
    "gpu_args = \"${g}\"\n"
    "setup = { \"./prep ${s}\" }\n"
    "fom a { file = \"${f}.log\"  regex = \"${r}\"  units = \"${u}\" }\n"
    "fom b { header = \"${h}\"  row = \"^${w}\"  after = \"${x}\" }\n"
    "sanity = \"done\"\n"
    "defaults { d = \"1\" }\n";

/* The error of gpurun_template_check_params() for `job_text` after the
 * --set assignments `sets` (NULL-ended), "" when none. */
static char *check_params(const gpurun_template_t *t, const char *job_text,
                          const char *const *sets)
{
    gpurun_job_t *job = job_from(job_text);
    if (!job)
        return strdup("(the job does not parse)");
    gpurun_error_t err = {0};
    for (size_t i = 0; sets && sets[i]; i++)
        if (gpurun_job_set(job, sets[i], &err) < 0) {
            gpurun_job_destroy(job);
            return strdup(err.text);
        }
    int rc = gpurun_template_check_params(t, job, &err);
    gpurun_job_destroy(job);
    if (rc < 0 && err.code != GPURUN_EXIT_CONFIG)
        return strdup("(not exit 2)");
    return strdup(rc < 0 ? err.text : "");
}

static void want_params(const gpurun_template_t *t, const char *job_text,
                        const char *const *sets, const char *want, const char *what)
{
    char *got = check_params(t, job_text, sets);
    is_str(got, want, "%s", what);
    free(got);
}

static void test_params(void)
{
    gpurun_template_t *t = parse_ok(params_tpl, "templates/tpl.conf", "params template");
    if (!t)
        return;
    static const char *const used[] = {"c", "g", "s", "f", "r", "u", "h", "w", "x", "d", "job"};
    for (size_t i = 0; i < sizeof used / sizeof *used; i++) {
        char job[128], what[128];
        snprintf(job, sizeof job, "template = \"tpl\"\nparams { %s = \"1\" }\n", used[i]);
        snprintf(what, sizeof what, "params.%s: used by the template", used[i]);
        want_params(t, job, NULL, "", what);
    }

    want_params(t, "template = \"tpl\"\n# the file's own line\nparams {\n  c = 1\n  cc = 2\n}\n",
                NULL,
                "jobs/water.conf:5: key 'params.cc': not used: template 'tpl' has no '${cc}' and "
                "no default of that name (did you mean 'params.c'?)",
                "an unused key: file, line, and the used key near it");
    want_params(t, "template = \"tpl\"\nparams { zzzzz = 1  yyyyy = 2 }\n", NULL,
                "jobs/water.conf:2: key 'params.zzzzz': not used: template 'tpl' has no "
                "'${zzzzz}' and no default of that name",
                "an unused key, nothing near: the first in the file");
    want_params(t, "template = \"tpl\"\nparams { sanity = 1 }\n", NULL,
                "jobs/water.conf:2: key 'params.sanity': not used: template 'tpl' has no "
                "'${sanity}' and no default of that name",
                "a template key's name is no parameter");

    static const char *const set_new[] = {"params.dd=3", NULL};
    want_params(t, "template = \"tpl\"\nparams { d = 1 }\n", set_new,
                "--set params.dd=3: key 'params.dd': not used: template 'tpl' has no '${dd}' and "
                "no default of that name (did you mean 'params.d'?)",
                "an unused key from --set: named as the --set");
    static const char *const set_old[] = {"params.q=3", NULL};
    want_params(t, "template = \"tpl\"\nparams {\n  q = 1\n}\n", set_old,
                "--set params.q=3: key 'params.q': not used: template 'tpl' has no '${q}' and no "
                "default of that name",
                "a file's unused key set again by --set: named as the --set");
    static const char *const set_used[] = {"params.c=3", NULL};
    want_params(t, "template = \"tpl\"\nparams { c = 1 }\n", set_used, "",
                "--set of a used key");

    /* A job without a template: its command alone uses params. */
    want_params(NULL, "command = \"./app ${a}\"\nparams { a = 1 }\n", NULL, "",
                "command: a key it uses");
    want_params(NULL, "command = \"./app ${a}\"\nparams {\n  a = 1\n  b = 2\n}\n", NULL,
                "jobs/water.conf:4: key 'params.b': not used: the command has no '${b}'",
                "command: a key it does not use");
    want_params(NULL, "command = \"./app ${nsteps}\"\nparams { nstep = 1  nsteps = 2 }\n",
                NULL,
                "jobs/water.conf:2: key 'params.nstep': not used: the command has no '${nstep}' "
                "(did you mean 'params.nsteps'?)",
                "command: a misspelt key, and the one near it");
    static const char *const set_cmd[] = {"params.b=1", "command=./app ${b}", NULL};
    want_params(NULL, "command = \"./app\"\n", set_cmd, "",
                "command: a key, then a command that uses it, both by --set");
    static const char *const set_bad_cmd[] = {"params.b=1", "command=./app ${b", NULL};
    want_params(NULL, "command = \"./app\"\n", set_bad_cmd,
                "command: '${' without a closing '}'",
                "command by --set that does not expand: that error");
    gpurun_template_destroy(t);
}

/* Every shipped template parses (make check sets top_srcdir). */
static void test_shipped(void)
{
    const char *top = getenv("top_srcdir");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/templates", top && *top ? top : ".");
    DIR *dp = opendir(dir);
    size_t n = 0;
    struct dirent *de;
    while (dp && (de = readdir(dp))) {
        size_t len = strlen(de->d_name);
        if (len <= 5 || strcmp(de->d_name + len - 5, ".conf") != 0)
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        gpurun_template_t *t = NULL;
        gpurun_error_t err = {0};
        if (!ok(gpurun_template_load(path, &t, &err) == 0, "shipped %s parses", de->d_name))
            diag("error: %s", err.text);
        gpurun_template_destroy(t);
        n++;
    }
    if (dp)
        closedir(dp);
    if (n == 0)
        skip("no shipped templates in %s", dir);

    gpurun_template_t *t = (gpurun_template_t *)&t;
    gpurun_error_t err = {0};
    ok(gpurun_template_load("/tmp", &t, &err) == -1 && err.code == GPURUN_EXIT_CONFIG && !t,
       "a directory as template: refused");
    is_str(err.text, "/tmp: the template is not a regular file (a directory)",
           "a directory as template: message");
}

/* ---- a template's base ------------------------------------------------ */

static const char *kv(const struct gpurun_kvlist *l, const char *key)
{
    const char *v = gpurun_kvlist_get(l, key);
    return v ? v : "(none)";
}

/* load DIR/NAME.conf; its error into err (NULL template on failure). */
static gpurun_template_t *load_in(const char *dir, const char *name, gpurun_error_t *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.conf", dir, name);
    gpurun_template_t *t = NULL;
    memset(err, 0, sizeof *err);
    if (gpurun_template_load(path, &t, err) < 0)
        return NULL;
    return t;
}

/* `base`: a template takes its base's keys unless it sets them; defaults
 * and env name by name, figures by title; `inputs = { }` sets none. */
static void test_base(void)
{
    char dir[] = "/tmp/gpurun-test-base.XXXXXX";
    if (!mkdtemp(dir)) {
        ok(0, "mkdtemp: %s", strerror(errno));
        return;
    }
    char *saved = getenv("GPURUN_TEMPLATE_PATH") ? strdup(getenv("GPURUN_TEMPLATE_PATH")) : NULL;
    setenv("GPURUN_TEMPLATE_PATH", dir, 1);
    put(dir, "b.conf",
        "description = \"the base\"\ncommand = \"./app ${n} ${m}\"\ngpu_args = \"--gpu\"\n"
        "inputs = { \"${in}\" }\nsanity = \"done\"\nfailure = \"^fatal\"\n"
        "tune_space = { \"params.n=1,2\" }\ntune_short = { \"params.m=1\" }\n"
        "defaults { n = \"1\"  m = \"2\"  in = \"x.dat\" }\nenv { A = \"1\"  B = \"2\" }\n"
        "fom speed { regex = \"speed ([0-9.]+)\"  units = \"x/s\" }\n"
        "fom time { regex = \"time ([0-9.]+)\"  units = \"s\"  better = \"lower\" }\n");
    put(dir, "d.conf",
        "base = \"b\"\ndescription = \"derived\"\nsetup = { \"./prep\" }\ninputs = { }\n"
        "defaults { m = \"9\"  k = \"3\" }\nenv { B = \"7\" }\n"
        "fom time { regex = \"took ([0-9.]+)\"  units = \"s\"  better = \"lower\" }\n"
        "fom extra { regex = \"extra ([0-9.]+)\" }\n");
    gpurun_error_t err;
    gpurun_template_t *t = load_in(dir, "d", &err);
    if (!ok(t != NULL, "a template with a base loads"))
        diag("error: %s", err.text);
    if (t) {
        is_str(t->description, "derived", "its own description");
        is_str(t->command, "./app ${n} ${m}", "the base's command");
        is_str(t->gpu_args, "--gpu", "the base's gpu_args");
        ok(t->nsetup == 1 && !strcmp(t->setup[0], "./prep"), "its own setup");
        ok(t->ninputs == 0, "inputs = { }: none, not the base's");
        ok(t->nsanity == 1 && !strcmp(t->sanity, "done") && t->nfailure == 1 &&
               regexec(&t->failure_re[0], "fatal: x", 0, NULL, 0) == 0,
           "the base's sanity and failure (compiled)");
        ok(t->ntune_space == 1 && !strcmp(t->tune_space[0], "params.n=1,2") && t->ntune_short == 1,
           "the base's tune_space and tune_short");
        ok(!strcmp(kv(&t->defaults, "n"), "1") && !strcmp(kv(&t->defaults, "m"), "9") &&
               !strcmp(kv(&t->defaults, "k"), "3") && !strcmp(kv(&t->defaults, "in"), "x.dat"),
           "defaults name by name: n=%s m=%s k=%s", kv(&t->defaults, "n"), kv(&t->defaults, "m"),
           kv(&t->defaults, "k"));
        ok(!strcmp(kv(&t->env, "A"), "1") && !strcmp(kv(&t->env, "B"), "7"), "env name by name");
        ok(t->nfoms == 3 && !strcmp(t->foms[0].name, "speed") && !strcmp(t->foms[1].name, "time") &&
               !strcmp(t->foms[1].regex, "took ([0-9.]+)") && !strcmp(t->foms[2].name, "extra"),
           "figures by title: the base's order, its own 'time', then its own others");
        is_str(t->base, "b", "t->base names it");
    }
    gpurun_template_destroy(t);

    /* The base of a base; the template's own `base` on the path first. */
    put(dir, "e.conf", "base = \"d\"\ncommand = \"./other\"\n");
    t = load_in(dir, "e", &err);
    ok(t && !strcmp(t->command, "./other") && !strcmp(t->description, "derived") && t->ntune_space == 1 &&
           t->ninputs == 0,
       "a base's base: its keys too (%s)", t ? "" : err.text);
    gpurun_template_destroy(t);

    /* Errors: no such base, itself, a loop, a base that is no name, nothing gives a command. */
    put(dir, "nob.conf", "base = \"nosuch\"\ndescription = \"x\"\n");
    ok(!load_in(dir, "nob", &err) && err.code == GPURUN_EXIT_CONFIG && strstr(err.text, "nob.conf: key 'base': ") &&
           strstr(err.text, "'nosuch' not found"),
       "a base not found: exit 2, naming key 'base' (%s)", err.text);
    put(dir, "self.conf", "base = \"self\"\ndescription = \"x\"\n");
    ok(!load_in(dir, "self", &err) && strstr(err.text, "'self' is this template itself"), "itself as base: %s",
       err.text);
    put(dir, "l1.conf", "base = \"l2\"\n");
    put(dir, "l2.conf", "base = \"l1\"\n");
    ok(!load_in(dir, "l1", &err) && strstr(err.text, "(a loop?)"), "a loop: refused (%s)", err.text);
    put(dir, "path.conf", "base = \"../b\"\ndescription = \"x\"\n");
    ok(!load_in(dir, "path", &err) && strstr(err.text, "key 'base': '../b' is not a template's name"),
       "a base that is a path: refused (%s)", err.text);
    put(dir, "nodesc.conf", "base = \"b0\"\ncommand = \"./x\"\n");
    put(dir, "b0.conf", "command = \"./y\"\n");
    ok(!load_in(dir, "b0", &err), "without a base, command and description are still required");
    put(dir, "b0.conf", "description = \"no command\"\n");
    put(dir, "nodesc.conf", "base = \"b0\"\ndescription = \"x\"\n");
    ok(!load_in(dir, "nodesc", &err) && strstr(err.text, "b0.conf: key 'command' missing"),
       "a base (one with no base) without a command: its own error: %s", err.text);

    const char *names[] = {"b", "d", "e", "nob", "self", "l1", "l2", "path", "nodesc", "b0"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char f[64];
        snprintf(f, sizeof f, "%s.conf", names[i]);
        drop(dir, f);
    }
    rmdir(dir);
    if (saved)
        setenv("GPURUN_TEMPLATE_PATH", saved, 1);
    else
        unsetenv("GPURUN_TEMPLATE_PATH");
    free(saved);

    /* The water-box example: templates/gromacs.conf's keys, its own setup. */
    const char *top = getenv("top_srcdir");
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/water-box/water-box.conf", top && *top ? top : ".");
    t = NULL;
    memset(&err, 0, sizeof err);
    if (!ok(gpurun_template_load(path, &t, &err) == 0, "examples/water-box/water-box.conf loads"))
        diag("error: %s", err.text);
    if (t) {
        ok(t->ntune_space > 0 && t->nfoms == 2 && !strcmp(t->foms[0].name, "ns_per_day") && t->nsetup == 3 &&
               t->ninputs == 0 && strstr(t->command, "gmx_mpi mdrun") && t->ntune_short == 1 &&
               !strcmp(t->tune_short[0], "params.nsteps=1000"),
           "... with gromacs's tune_space (%zu items), command and figures, its own setup and tune_short",
           t->ntune_space);
        ok(!strcmp(kv(&t->defaults, "nsteps"), "2000") && !strcmp(kv(&t->defaults, "npme"), "-1"),
           "... gromacs's defaults, its own nsteps (%s)", kv(&t->defaults, "nsteps"));
    }
    gpurun_template_destroy(t);
}

/* ---- input files (`inputs`) and GROMACS run inputs ---------------------- */

/* A .tpr header as GROMACS 2022 writes it (XDR): version string, precision,
 * file version 127, generation 28, tag, natoms, ngtc, fep_state, lambda,
 * six flags, the body size; `body` bytes follow. */
static size_t tpr_bytes(unsigned char *b, int version, int generation, long long body, size_t body_have)
{
    size_t n = 0;
#define PUT32(v)                                                                                                      \
    do {                                                                                                              \
        uint32_t u_ = (uint32_t)(v);                                                                                  \
        b[n++] = (unsigned char)(u_ >> 24), b[n++] = (unsigned char)(u_ >> 16), b[n++] = (unsigned char)(u_ >> 8),   \
        b[n++] = (unsigned char)u_;                                                                                   \
    } while (0)
#define PUTSTR(s)                                                                                                     \
    do {                                                                                                              \
        size_t l_ = strlen(s);                                                                                        \
        PUT32(l_ + 1);                                                                                                \
        PUT32(l_);                                                                                                    \
        memcpy(b + n, s, l_);                                                                                         \
        n += l_;                                                                                                      \
        while (n % 4)                                                                                                 \
            b[n++] = 0;                                                                                               \
    } while (0)
    PUTSTR("VERSION 2022.5");
    PUT32(4);
    PUT32(version);
    PUT32(generation);
    PUTSTR("release");
    PUT32(2652); /* natoms */
    PUT32(1);    /* ngtc */
    PUT32(0);    /* fep_state */
    PUT32(0);    /* lambda, a float */
    for (int i = 0; i < 6; i++)
        PUT32(1);
    if (version >= 119 && generation >= 27) {
        PUT32((uint64_t)body >> 32);
        PUT32(body);
    }
    memset(b + n, 0x5a, body_have);
    return n + body_have;
#undef PUT32
#undef PUTSTR
}

static void test_tpr(void)
{
    unsigned char b[4096];
    char why[512];
    size_t n = tpr_bytes(b, 127, 28, 1000, 1000);
    ok(gpurun_tpr_check(b, 512, (off_t)n, why, sizeof why) == 0, "tpr: a whole GROMACS 2022 run input passes");
    size_t cut = tpr_bytes(b, 127, 28, 1000, 400);
    ok(gpurun_tpr_check(b, 512, (off_t)cut, why, sizeof why) == -1 && strstr(why, "is cut short: its header "
                                                                                "announces 1000 bytes of body, "
                                                                                "the file holds 400"),
       "tpr: a body cut short is refused, saying how much is there (%s)", why);
    n = tpr_bytes(b, 110, 26, 0, 50);
    ok(gpurun_tpr_check(b, (size_t)n, (off_t)n, why, sizeof why) == 0,
       "tpr: a GROMACS 2018 input (no body size) passes on its header");
    /* Every length of a header cut anywhere: refused, never read past. */
    size_t whole = tpr_bytes(b, 127, 28, 0, 0);
    int passed = 0;
    for (size_t k = 0; k < whole; k++) {
        unsigned char *part = malloc(k ? k : 1);
        memcpy(part, b, k);
        if (gpurun_tpr_check(part, k, (off_t)k, why, sizeof why) != -1)
            passed++;
        free(part);
    }
    ok(passed == 0, "tpr: a header cut at any of its %zu bytes is refused (%d passed)", whole, passed);
    const char text[] = "not a tpr at all, just text\n";
    ok(gpurun_tpr_check((const unsigned char *)text, sizeof text - 1, (off_t)sizeof text - 1, why, sizeof why) == -1 &&
           strstr(why, "is not a GROMACS run input (.tpr)"),
       "tpr: a text file is refused (%s)", why);
    tpr_bytes(b, 127, 28, 1000, 1000);
    b[12] = 'X'; /* "VERXION" */
    ok(gpurun_tpr_check(b, 512, 2000, why, sizeof why) == -1, "tpr: a header without VERSION is refused");
    n = tpr_bytes(b, 127, 28, -5, 10);
    ok(gpurun_tpr_check(b, (size_t)n, (off_t)n, why, sizeof why) == -1, "tpr: a negative body size is refused");
    n = tpr_bytes(b, 12, 28, 0, 10);
    ok(gpurun_tpr_check(b, (size_t)n, (off_t)n, why, sizeof why) == -1 && strstr(why, "file version 12"),
       "tpr: a file version before GROMACS 4.0 is refused (%s)", why);
}

static void test_inputs(void)
{
    char dir[] = "/tmp/gpurun-inputs.XXXXXX";
    if (!mkdtemp(dir)) {
        skip("mkdtemp: %s", strerror(errno));
        return;
    }
    char path[512];
    unsigned char b[4096];
    size_t n = tpr_bytes(b, 127, 28, 100, 100);
    snprintf(path, sizeof path, "%s/good.tpr", dir);
    FILE *f = fopen(path, "w");
    fwrite(b, 1, n, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/cut.tpr", dir);
    f = fopen(path, "w");
    fwrite(b, 1, n - 30, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/in.lj", dir);
    f = fopen(path, "w");
    fputs("units lj\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/text.tpr", dir);
    f = fopen(path, "w");
    fputs("title = a .mdp, not a .tpr\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/sub", dir);
    mkdir(path, 0700);

    const char *tpl_text = "description = \"t\"\ncommand = \"prog -s ${tpr} -in ${job_dir}/${lj} ${args}\"\n"
                           "inputs = { \"${tpr}\", \"${job_dir}/${lj}\", \"${extra}\" }\n"
                           "defaults { tpr = \"good.tpr\"  lj = \"in.lj\"  args = \"\"  extra = \"\" }\n";
    gpurun_template_t *t = parse_ok(tpl_text, "/tpl/t.conf", "a template with inputs");
    if (!t)
        return;
    ok(t->ninputs == 3 && t->inputs_line == 3 && t->defaults_line == 4, "inputs: 3 items, lines 3 (inputs) and 4");
    struct {
        const char *tpr, *want; /* want: NULL passes, else a piece of the message */
    } cases[] = {
        {NULL, NULL},
        {"good.tpr", NULL},
        {"./good.tpr", NULL},
        {"nosuch.tpr", "job.conf:7: key 'params.tpr': input file 'nosuch.tpr' (DIR/nosuch.tpr) does not exist (a "
                       "relative path is the job file's folder's); nothing was started"},
        {"cut.tpr", "input file 'cut.tpr' (DIR/cut.tpr) is cut short"},
        {"text.tpr", "input file 'text.tpr' (DIR/text.tpr) is not a GROMACS run input"},
        {"sub", "input file 'sub' (DIR/sub) is a folder, not a file"},
        {"DIR/good.tpr", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char jobtext[1024], tpr[512] = "", want[1024] = "";
        if (cases[i].tpr) {
            const char *d = strstr(cases[i].tpr, "DIR");
            snprintf(tpr, sizeof tpr, "%s%s", d ? dir : "", d ? d + 3 : cases[i].tpr);
        }
        if (cases[i].want) {
            const char *d = strstr(cases[i].want, "DIR");
            snprintf(want, sizeof want, "%.*s%s%s", (int)(d ? d - cases[i].want : (long)strlen(cases[i].want)),
                     cases[i].want, d ? dir : "", d ? d + 3 : "");
        }
        snprintf(jobtext, sizeof jobtext, "template = \"t\"\n\n\n\n\nparams {\n%s%s%s}\n",
                 tpr[0] ? "  tpr = \"" : "", tpr, tpr[0] ? "\"\n" : "");
        gpurun_job_t *job = NULL;
        gpurun_error_t err = {0};
        char jobpath[600];
        snprintf(jobpath, sizeof jobpath, "%s/job.conf", dir);
        if (gpurun_job_parse(jobtext, strlen(jobtext), jobpath, &job, &err) < 0) {
            ok(0, "inputs case %zu: job parses (%s)", i, err.text);
            continue;
        }
        struct gpurun_job_values v = {.job = "j", .job_dir = dir, .run_dir = "/r", .nodes = 1, .ranks_per_node = 1,
                                      .ranks = 1, .gpus_per_rank = 0, .threads_per_rank = 1, .repeat = 1};
        struct gpurun_kvlist names = {0};
        gpurun_job_names(&names, &v, t, &job->params);
        int rc = gpurun_inputs_check(t, job, dir, &names, NULL, &err);
        if (!cases[i].want) {
            char abs[600];
            snprintf(abs, sizeof abs, "%s/good.tpr", dir);
            ok(rc == 0 && !strcmp(gpurun_kvlist_get(&names, "tpr"), abs),
               "inputs: tpr = %s passes, ${tpr} expands to %s", tpr[0] ? tpr : "(the default)",
               gpurun_kvlist_get(&names, "tpr"));
            if (rc)
                diag("%s", err.text);
        } else {
            ok(rc == -1 && err.code == GPURUN_EXIT_CONFIG && strstr(err.text, want), "inputs: tpr = %s refused: %s",
               tpr, err.text);
            if (!strstr(err.text, want))
                diag("wanted: %s", want);
        }
        gpurun_kvlist_clear(&names);
        gpurun_job_destroy(job);
    }
    /* An item of the template's own missing: its line says so. */
    snprintf(path, sizeof path, "%s/in.lj", dir);
    unlink(path);
    gpurun_job_t *job = NULL;
    gpurun_error_t err = {0};
    char jobpath[600];
    snprintf(jobpath, sizeof jobpath, "%s/job.conf", dir);
    gpurun_job_parse("template = \"t\"\n", 15, jobpath, &job, &err);
    struct gpurun_job_values v = {.job = "j", .job_dir = dir, .run_dir = "/r", .nodes = 1, .ranks_per_node = 1,
                                  .ranks = 1, .threads_per_rank = 1, .repeat = 1};
    struct gpurun_kvlist names = {0};
    gpurun_job_names(&names, &v, t, &job->params);
    char *warn = NULL;
    int rc = gpurun_inputs_check(t, job, dir, &names, &warn, &err);
    ok(rc == -1 && strstr(err.text, "/tpl/t.conf:3: key 'inputs', item 2: input file ") &&
           strstr(err.text, "/in.lj does not exist"),
       "inputs: an item of the template's own, missing, is reported on its line: %s", err.text);
    free(warn);
    gpurun_kvlist_clear(&names);
    gpurun_job_destroy(job);
    gpurun_template_destroy(t);
    const char *const made[] = {"good.tpr", "cut.tpr", "in.lj", "text.tpr", "sub"};
    for (size_t i = 0; i < sizeof made / sizeof *made; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, made[i]);
        if (unlink(path) < 0 && errno == EISDIR)
            rmdir(path);
        else if (errno == EPERM)
            rmdir(path);
    }
    rmdir(dir);
}

int main(void)
{
    gpurun_plugins_register();
    test_spec_example();
    test_minimal();
    test_bad();
    test_search();
    test_shipped();
    test_base();
    test_expand();
    test_words();
    test_expand_words();
    test_set_good();
    test_set_bad();
    test_params();
    test_tpr();
    test_inputs();
    return done_testing();
}
