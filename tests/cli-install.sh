#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Installed as an HPC tool: configure --prefix=TMP/p, make install; the
# installed gpurun finds its templates and site profiles, its man pages and
# bash completion are installed, and after the prefix is MOVED it still finds
# them (a relocatable install); the Lmod and Environment Modules modulefiles
# load it (skipped, with the reason, where neither is installed); the bash
# completion completes commands, options, templates and sites; the Spack
# recipe compiles and maps its variants onto configure; `make distdir` ships
# contrib/ and docs/.  A build of its own: about 30 s on 2 cores.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

if [ -f "$top_srcdir/config.status" ]; then
    echo "1..0 # SKIP $top_srcdir is configured in the source folder: a second build there is not possible"
    exit 0
fi
if [ ! -x "$top_srcdir/configure" ]; then
    echo "1..0 # SKIP $top_srcdir/configure not found (run ./autogen.sh)"
    exit 0
fi
# The nested build is ours: not part of the make that runs the tests.
unset MAKEFLAGS MFLAGS MAKELEVEL GPURUN_TEMPLATE_PATH GPURUN_TOPOLOGY
jobs=$(nproc 2>/dev/null || echo 2)
P=$TMP/p
mkdir "$TMP/build" "$TMP/home" "$TMP/work"
HOME=$TMP/home # no ~/.config/gpurun of the user's
export HOME

cd "$TMP/build" || exit 1
"$top_srcdir/configure" --prefix="$P" --without-mpi --with-cuda=no >configure.log 2>&1
ok $? "configure --prefix=$P"
{ make -j"$jobs" && make install; } >make.log 2>&1
rc=$?
ok $rc "make && make install"
if [ $rc -ne 0 ]; then
    tail -20 make.log | sed 's/^/#   /'
    done_testing
    exit 1
fi

# ---- what is installed --------------------------------------------------------
for f in bin/gpurun libexec/gpurun/gpurun-rank share/man/man1/gpurun.1 share/man/man5/gpurun.conf.5 \
    share/gpurun/templates/gromacs.conf share/gpurun/templates/sites/example-univ.conf \
    share/bash-completion/completions/gpurun share/modulefiles/gpurun/0.1.0 \
    share/modulefiles/gpurun/0.1.0.lua; do
    [ -f "$P/$f" ]
    ok $? "installed: $f"
done
if command -v man >/dev/null 2>&1; then
    MANPATH=$P/share/man man -w gpurun.conf >"$TMP/out" 2>&1
    grep -q "^$P/share/man/man5/gpurun.conf.5" "$TMP/out"
    ok $? "man -w gpurun.conf finds the installed page"
fi

# installed_finds PREFIX WHAT: the gpurun of PREFIX lists the shipped
# templates and site profiles from PREFIX, and writes a job that it runs.
installed_finds() {
    cd "$TMP/work" || exit 1
    rm -rf ./*
    run "$1/bin/gpurun" --version
    expect_rc 0 "$2: gpurun --version"
    run "$1/bin/gpurun" templates
    expect_rc 0 "$2: gpurun templates"
    for t in generic gromacs lammps hpl cg netcheck pytorch-ddp hpcg nccl-tests stream osu-latency osu-bw namd; do
        grep -q "^$t  .*  $1/share/gpurun/templates/$t.conf\$" "$TMP/out"
        ok $? "$2: template $t from $1/share/gpurun/templates"
    done
    run "$1/bin/gpurun" templates --sites
    for s in local example-univ aws-p5en; do
        grep -q "^$s  .*  $1/share/gpurun/templates/sites/$s.conf\$" "$TMP/out"
        ok $? "$2: site profile $s from $1/share/gpurun/templates/sites"
    done
    run "$1/bin/gpurun" init --template gromacs --site example-univ --topology "$FIXTURES/2s-4gpu-2nic.xml"
    expect_rc 0 "$2: gpurun init --template gromacs --site example-univ"
    grep -q "^#   $1/share/gpurun/templates/gromacs.conf\$" job.conf
    ok $? "$2: ... from the installed gromacs template"
    GPURUN_TOPOLOGY=$FIXTURES/2s-4gpu-2nic.xml run "$1/bin/gpurun" plan job.conf
    expect_rc 0 "$2: gpurun plan of it"
    # The ranks start through the installed gpurun-rank (the prefix's own).
    printf '#!/bin/sh\nreadlink "/proc/$PPID/exe"\n' >"$TMP/work/step" && chmod 0755 "$TMP/work/step"
    printf 'job = "step"\ncommand = "%s"\nlauncher = "local"\nranks_per_node = 2\nthreads_per_rank = 1\noversubscribe = true\nresults = "%s"\n' \
        "$TMP/work/step" "$TMP/work/results" >"$TMP/work/step.conf"
    run "$1/bin/gpurun" run "$TMP/work/step.conf" --quiet
    expect_rc 0 "$2: a 2-rank job"
    [ "$(cat "$TMP"/work/results/step/*Z-*/*.out | grep -c "^[01]: $1/libexec/gpurun/gpurun-rank\$")" = 2 ]
    ok $? "$2: ... its ranks started through $1/libexec/gpurun/gpurun-rank"
    # The examples, as their READMEs say: a copy of one's own, planned with
    # the installed templates (this build has no MPI: no example program;
    # cli-examples.sh runs them).
    cp -R "$1/share/gpurun/examples" "$TMP/work/my-examples"
    ok $? "$2: the examples copied out of $1/share/gpurun/examples"
    for e in hello cg netcheck scaling water-box lj-melt resnet-ddp hpl; do
        GPURUN_TOPOLOGY=$FIXTURES/2s-4gpu-2nic.xml run "$1/bin/gpurun" plan "$TMP/work/my-examples/$e/job.conf"
        expect_rc 0 "$2: gpurun plan my-examples/$e/job.conf"
    done
}
installed_finds "$P" "installed"

# The examples, installed (job files, READMEs, inputs), and uninstalled with
# the rest (make distcheck asks the same).
for f in share/gpurun/examples/scaling/job.conf share/gpurun/examples/scaling/README.md \
    share/gpurun/examples/water-box/water-box.conf share/gpurun/examples/resnet-ddp/train.py; do
    [ -f "$P/$f" ]
    ok $? "installed: $f"
done
{ make -C "$TMP/build" install DESTDIR="$TMP/d2" && make -C "$TMP/build" uninstall DESTDIR="$TMP/d2"; } \
    >"$TMP/d2.log" 2>&1
left=$(find "$TMP/d2" -path '*/examples/*' -type f 2>/dev/null | wc -l)
[ "$left" -eq 0 ] && [ -d "$TMP/d2" ]
ok $? "make uninstall removes the examples ($left files left)"

# ---- moved ------------------------------------------------------------------------
mv "$P" "$TMP/moved"
installed_finds "$TMP/moved" "moved prefix"
P=$TMP/moved

# ---- modulefiles ----------------------------------------------------------------
# module_load INIT FILE: in a bash with INIT sourced, `module load gpurun`
# from a modulepath holding only FILE; prints PATH's first folder, MANPATH,
# gpurun --version and where man finds gpurun.conf(5).
module_load() {
    rm -rf "$TMP/mp" && mkdir -p "$TMP/mp/share/modulefiles/gpurun"
    # The modulefile finds the prefix from its path: a prefix of its own
    # holding links to the moved one's bin and share/man.
    ln -s "$P/bin" "$TMP/mp/bin" && mkdir -p "$TMP/mp/share" && ln -s "$P/share/man" "$TMP/mp/share/man"
    cp "$2" "$TMP/mp/share/modulefiles/gpurun/"
    env -u MANPATH -u XDG_DATA_DIRS -u MODULEPATH -u LOADEDMODULES -u _LMFILES_ bash -c '
        . "$1" >/dev/null 2>&1 || exit 90
        module use "$2/share/modulefiles" && module load gpurun || exit 91
        echo "PATH1=${PATH%%:*}"
        echo "MANPATH=$MANPATH"
        echo "XDG_DATA_DIRS=$XDG_DATA_DIRS"
        gpurun --version
        man -w gpurun.conf 2>/dev/null
        man -w ls >/dev/null 2>&1 && echo "system man pages: yes"
        module unload gpurun && echo "PATH1 after unload=${PATH%%:*}"
    ' sh "$1" "$TMP/mp" >"$TMP/out" 2>"$TMP/err"
}

check_modulefile() { # check_modulefile SYSTEM INIT FILE
    module_load "$2" "$3"
    rc=$?
    ok $rc "$1: module load gpurun ($(basename "$3"))"
    [ $rc -eq 0 ] || sed 's/^/#   /' "$TMP/err" | head -5
    contains "$TMP/out" "PATH1=$TMP/mp/bin" "$1: PATH starts with the prefix's bin"
    contains "$TMP/out" "gpurun 0.1.0" "$1: gpurun --version"
    contains "$TMP/out" "$TMP/mp/share/man/man5/gpurun.conf.5" "$1: man finds gpurun.conf(5)"
    if command -v man >/dev/null 2>&1 && man -w ls >/dev/null 2>&1; then
        contains "$TMP/out" "system man pages: yes" "$1: and still the system's man pages"
    fi
    contains "$TMP/out" "XDG_DATA_DIRS=$TMP/mp/share:/usr/local/share:/usr/share" \
        "$1: XDG_DATA_DIRS for the bash completion, the defaults kept"
    if grep -q "PATH1 after unload" "$TMP/out"; then
        ! grep -q "PATH1 after unload=$TMP/mp/bin" "$TMP/out"
        ok $? "$1: module unload gpurun takes it off PATH"
    fi
}

lmod_init=
for f in "${LMOD_PKG:-/nonexistent}/init/bash" /usr/share/lmod/lmod/init/bash /opt/apps/lmod/lmod/init/bash; do
    [ -f "$f" ] && lmod_init=$f && break
done
if [ -n "$lmod_init" ]; then
    check_modulefile Lmod "$lmod_init" "$P/share/modulefiles/gpurun/0.1.0.lua"
    check_modulefile "Lmod, Tcl modulefile" "$lmod_init" "$P/share/modulefiles/gpurun/0.1.0"
else
    skip "Lmod not found (Debian: lmod): the .lua modulefile is not loaded"
fi
envmod_init=
for f in "${MODULESHOME:-/nonexistent}/init/bash" /usr/share/modules/init/bash /usr/local/Modules/init/bash; do
    [ -f "$f" ] && grep -q modulecmd "$f" 2>/dev/null && envmod_init=$f && break
done
if [ -n "$envmod_init" ]; then
    check_modulefile "Environment Modules" "$envmod_init" "$P/share/modulefiles/gpurun/0.1.0"
else
    skip "Environment Modules not found (Debian: environment-modules, which conflicts with lmod): the Tcl modulefile is not loaded by it"
fi
# As installed: both files in PREFIX/share/modulefiles/gpurun/ (Lmod takes
# the .lua one, Environment Modules the Tcl one: the other has no #%Module).
for init in $lmod_init $envmod_init; do
    env -u MANPATH -u MODULEPATH -u LOADEDMODULES -u _LMFILES_ bash -c '
        . "$1" >/dev/null 2>&1; module use "$2/share/modulefiles" && module load gpurun && command -v gpurun' \
        sh "$init" "$P" >"$TMP/out" 2>"$TMP/err"
    grep -qx "$P/bin/gpurun" "$TMP/out"
    ok $? "$(basename "$(dirname "$(dirname "$init")")"): module load gpurun from PREFIX/share/modulefiles as installed"
done
# A modulefile out of PREFIX/share/modulefiles/gpurun/ says what to set.
if [ -n "$lmod_init" ]; then
    mkdir -p "$TMP/elsewhere/gpurun" && cp "$P/share/modulefiles/gpurun/0.1.0.lua" "$TMP/elsewhere/gpurun/"
    env -u MODULEPATH -u LOADEDMODULES -u _LMFILES_ bash -c '. "$1"; module use "$2"; module load gpurun' \
        sh "$lmod_init" "$TMP/elsewhere" >"$TMP/out" 2>"$TMP/err"
    contains "$TMP/err" "set \`prefix\` in it" "Lmod: a modulefile moved out of its prefix says to set prefix"
fi

# ---- bash completion --------------------------------------------------------
if command -v bash >/dev/null 2>&1; then
    cd "$TMP/work" && : >my.conf && mkdir -p sub
    PATH=$P/bin:$PATH bash -c '
        . "$1"
        # complete LINE: what _gpurun offers at the end of LINE, on one line.
        complete() {
            COMP_LINE=$1 COMP_POINT=${#1} COMP_WORDS=() COMPREPLY=()
            local w
            for w in $1; do
                while [[ $w == *=* ]]; do   # bash breaks words at "="
                    [[ -n ${w%%=*} ]] && COMP_WORDS+=("${w%%=*}")
                    COMP_WORDS+=("=")
                    w=${w#*=}
                done
                [[ -n $w ]] && COMP_WORDS+=("$w")
            done
            [[ $1 == *" " ]] && COMP_WORDS+=("")
            COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
            _gpurun gpurun "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
            printf "%s|" "${COMPREPLY[@]}"
            echo
        }
        echo "commands: $(complete "gpurun ")"
        echo "in: $(complete "gpurun in")"
        echo "init options: $(complete "gpurun init --")"
        echo "templates: $(complete "gpurun init --template ")"
        echo "sites: $(complete "gpurun init --site ex")"
        echo "job files: $(complete "gpurun run ")"
        echo "set: $(complete "gpurun run my.conf --set launcher=m")"
        echo "set keys: $(complete "gpurun run my.conf --set gpus")"
        echo "collect: $(complete "gpurun collect -t l")"
    ' sh "$P/share/bash-completion/completions/gpurun" >"$TMP/out" 2>"$TMP/err"
    ok $? "bash completion: loads and completes"
    contains "$TMP/out" "commands: topo|plan|run|submit|" "... the commands"
    contains "$TMP/out" "|init|templates|" "... init and templates among them"
    contains "$TMP/out" "my.conf|" "... and job files, for gpurun JOB.conf"
    contains "$TMP/out" "in: init|" "... gpurun in<TAB>: init"
    contains "$TMP/out" "init options: --force|--help|--output|--site|--template|--topology|" \
        "... init's options, from its --help"
    contains "$TMP/out" "templates: cg|generic|gromacs|hpcg|hpl|lammps|namd|nccl-tests|netcheck|" "... template names, from gpurun templates"
    contains "$TMP/out" "sites: example-univ|" "... site names, from gpurun templates --sites"
    grep -q "^job files: .*my.conf|" "$TMP/out" && grep -q "^job files: .*sub" "$TMP/out"
    ok $? "... job files (*.conf) and folders for run"
    contains "$TMP/out" "set: mpirun|" "... --set launcher=m: mpirun"
    contains "$TMP/out" "set keys: gpus_per_rank=|" "... --set gpus: gpus_per_rank="
    contains "$TMP/out" "collect: lammps|" "... collect -t l: lammps"
else
    skip "bash not found: the completion is not tried"
fi

# ---- the Spack recipe ---------------------------------------------------------
if command -v python3 >/dev/null 2>&1; then
    mkdir -p "$TMP/spack/spack"
    cat >"$TMP/spack/spack/package.py" <<'EOF'
# Just enough of Spack's package API for contrib/spack/package.py.
import contextlib
recorded = {"versions": [], "variants": [], "depends": []}
def version(v, **kw): recorded["versions"].append((v, kw))
def variant(name, **kw): recorded["variants"].append((name, kw))
def depends_on(spec, when=None, type=None): recorded["depends"].append((spec, when))
def maintainers(*names): pass
@contextlib.contextmanager
def when(spec):
    yield
def _when(spec):
    return lambda f: f
def which(name):
    return lambda *args: None
class Prefix(str):
    pass
class Spec:
    def __init__(self, variants):
        self.variants = variants
    def satisfies(self, s):
        return s.startswith("+") and s[1:] in self.variants
    def __getitem__(self, name):
        o = type("Dep", (), {})()
        o.prefix = Prefix("/spack/" + name)
        return o
class AutotoolsPackage:
    def __init__(self, spec):
        self.spec = spec
    def with_or_without(self, name):
        return ["--with-" + name] if self.spec.satisfies("+" + name) else ["--without-" + name]
EOF
    cat >"$TMP/spack/check.py" <<'EOF'
import importlib.util, sys
import spack.package as sp
import builtins
builtins.when = sp.when
spec = importlib.util.spec_from_file_location("gpurun_package", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
# `when` is both a context manager and a decorator in Spack.
class When:
    def __init__(self, s): self.s = s
    def __enter__(self): return self
    def __exit__(self, *a): return False
    def __call__(self, f): return f
sp.when = When
spec.loader.exec_module(mod)
P = mod.Gpurun
variants = sorted(v for v, _ in sp.recorded["variants"])
deps = sorted(d for d, _ in sp.recorded["depends"])
print("variants", variants)
print("depends", deps)
print("versions", [v for v, _ in sp.recorded["versions"]])
for vs in ([], ["slurm"], ["pmix"], ["cuda"], ["slurm", "pmix", "cuda"]):
    print("+".join(vs) or "default", " ".join(P(sp.Spec(vs)).configure_args()))
EOF
    PYTHONPATH=$TMP/spack run python3 "$TMP/spack/check.py" "$top_srcdir/contrib/spack/package.py"
    expect_rc 0 "contrib/spack/package.py loads against a mock of Spack's API"
    contains "$TMP/out" "variants ['cuda', 'pmix', 'slurm']" "... variants cuda, pmix, slurm"
    for d in "'hwloc@2: +pci'" "'libconfuse@3:'" "'jansson@2.10:'" "'sqlite@3.7:'" "'pkgconfig'"; do
        contains "$TMP/out" "$d" "... depends on $d"
    done
    contains "$TMP/out" "default --without-mpi --without-slurm --without-pmix --without-cuda" \
        "... configure: --without-* by default"
    contains "$TMP/out" "slurm+pmix+cuda --without-mpi --with-slurm --with-pmix --with-cuda=/spack/cuda" \
        "... +slurm +pmix +cuda: --with-slurm --with-pmix --with-cuda=PREFIX"
else
    skip "python3 not found: the Spack recipe is not checked"
fi

# ---- the distribution ---------------------------------------------------------
cd "$TMP/build" || exit 1
make distdir distdir="$TMP/dist" >dist.log 2>&1
ok $? "make distdir"
for f in contrib/bash-completion/gpurun contrib/spack/package.py contrib/modulefiles/gpurun/0.1.0.lua \
    contrib/modulefiles/gpurun/0.1.0 docs/getting-started.md docs/overview.md docs/install.md docs/running.md \
    docs/binding.md docs/internals.md docs/sites/local.md docs/sites/example-univ.md \
    docs/sites/aws-p5en.md doc/gpurun.conf.5 tests/cli-init.sh tests/cli-help.sh tests/cli-install.sh \
    launcher/cli/cmd_init.c launcher/cli/cmd_templates.c; do
    [ -f "$TMP/dist/$f" ]
    ok $? "the tarball holds $f"
done

done_testing
