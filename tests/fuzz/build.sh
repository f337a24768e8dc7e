#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Build the libFuzzer harnesses of tests/fuzz with clang, apart from the gcc
# build: the library's sources compiled again (fuzzer-no-link, ASan, UBSan)
# into OUT/obj, each harness linked with them into OUT/fuzz-TARGET.  Only
# what changed is compiled again (any header newer than the stamp: all).
# Called by make (Makefile.am) with:
#   FUZZ_CC  clang    SRCDIR  the source tree    OUT  where the programs go
#   FUZZ_CPPFLAGS     -I flags of the library
#   PKGDATADIR, PKGLIBDIR  where gpurun is installed (the library's -D flags)
#   FUZZ_CFLAGS       flags of the libraries found by pkg-config
#   FUZZ_LIBS         libraries to link
#   FUZZ_SOURCES      the library's sources (relative to SRCDIR; .h ignored)
#   FUZZ_TARGETS      job set template ...: tests/fuzz/fuzz_TARGET.c each
#   FUZZ_SPANK_SOURCES  the SPANK plugin's planner sources (target spank):
#                     compiled again with -DNDEBUG into OUT/obj-ndebug, as
#                     distributions build the plugin; fuzz_spank.c includes
#                     plugins/slurm/spank_gpurun.c and is built so too
set -eu
: "${FUZZ_CC:?}" "${SRCDIR:?}" "${OUT:?}" "${FUZZ_TARGETS:?}"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# The -D strings as the library's Makefile.am gives them (no blank in them).
DEFS="-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -DGPURUN_PKGDATADIR=\"${PKGDATADIR:?}\" -DGPURUN_PKGLIBDIR=\"${PKGLIBDIR:?}\"
      -DGPURUN_SOURCE_TEMPLATES=\"$SRCDIR/templates\""
# coverage-ignore.txt: hot loops whose coverage callbacks cost more than
# they guide (see the file).
# clang before 13 names the option otherwise: the list is then left out.
IGNORE=$SRCDIR/tests/fuzz/coverage-ignore.txt
IGNORE_FLAG=-fsanitize-coverage-ignorelist=$IGNORE
echo 'int x;' | "$FUZZ_CC" -fsanitize=fuzzer-no-link "$IGNORE_FLAG" -x c -c -o /dev/null - 2>/dev/null || IGNORE_FLAG=
CFLAGS="-std=c11 -D_GNU_SOURCE -g -O1 $SAN -fsanitize=fuzzer-no-link $IGNORE_FLAG $DEFS ${FUZZ_CPPFLAGS:-}
        ${FUZZ_CFLAGS:-}"
mkdir -p "$OUT/obj"
stamp=$OUT/.built
all=
if test -f "$stamp"; then
    for h in "$SRCDIR"/launcher/*/*.h "$SRCDIR"/plugins/*.h "$SRCDIR"/tests/fuzz/*.h "$IGNORE"; do
        if test "$h" -nt "$stamp"; then all=yes; fi
    done
else
    all=yes
fi

compile() { # SOURCE OBJECT [extra flags]; $also: another file the object is made from
    src=$1 obj=$2
    shift 2
    if test -n "$all" || ! test -f "$obj" || test "$src" -nt "$obj" || { test -n "${also:-}" && test "$also" -nt "$obj"; }; then
        echo "  FUZZCC   $obj"
        # shellcheck disable=SC2086
        "$FUZZ_CC" $CFLAGS "$@" -c -o "$obj" "$src"
    fi
}

objs=
for s in ${FUZZ_SOURCES:-}; do
    case $s in *.c) ;; *) continue ;; esac
    o=$OUT/obj/$(echo "$s" | tr / _ | sed 's/\.c$/.o/')
    compile "$SRCDIR/$s" "$o" -Wall -Wextra -Wno-unused-parameter
    objs="$objs $o"
done
compile "$SRCDIR/tests/fuzz/fuzz_common.c" "$OUT/obj/fuzz_common.o" -Wall -Wextra -Werror
# The SPANK plugin's planner, as a release build has it (-DNDEBUG).
spank_objs=
case " $FUZZ_TARGETS " in *" spank "*)
    mkdir -p "$OUT/obj-ndebug"
    for s in ${FUZZ_SPANK_SOURCES:?target spank needs FUZZ_SPANK_SOURCES}; do
        case $s in *.c) ;; *) continue ;; esac
        o=$OUT/obj-ndebug/$(echo "$s" | tr / _ | sed 's/\.c$/.o/')
        compile "$SRCDIR/$s" "$o" -DNDEBUG -Wall -Wextra -Wno-unused-parameter
        spank_objs="$spank_objs $o"
    done ;;
esac
for t in $FUZZ_TARGETS; do
    link_objs=$objs extra= also=
    if test "$t" = spank; then
        # fuzz_spank.c: the plugin's source, -DNDEBUG; one topology handed
        # out through gpurun_topology_load/destroy (the file says why).
        link_objs=$spank_objs
        extra="-Wl,--wrap=gpurun_topology_load,--wrap=gpurun_topology_destroy"
        also=$SRCDIR/plugins/slurm/spank_gpurun.c
        compile "$SRCDIR/tests/fuzz/fuzz_$t.c" "$OUT/obj/fuzz_$t.o" -Wall -Wextra -Werror -DNDEBUG \
            -DFUZZ_SRCDIR="\"$SRCDIR\"" -I"$SRCDIR/tests/fuzz" -I"$SRCDIR/plugins/slurm"
        also=
    else
        compile "$SRCDIR/tests/fuzz/fuzz_$t.c" "$OUT/obj/fuzz_$t.o" -Wall -Wextra -Werror \
            -I"$SRCDIR/tests/fuzz"
    fi
    prog=$OUT/fuzz-$t
    newer=
    for o in $link_objs "$OUT/obj/fuzz_common.o" "$OUT/obj/fuzz_$t.o"; do
        if ! test -f "$prog" || test "$o" -nt "$prog"; then newer=yes; fi
    done
    if test -n "$newer"; then
        echo "  FUZZLD   $prog"
        # shellcheck disable=SC2086
        "$FUZZ_CC" -g $SAN -fsanitize=fuzzer -o "$prog" "$OUT/obj/fuzz_$t.o" "$OUT/obj/fuzz_common.o" \
            $link_objs $extra ${FUZZ_LIBS:-} -ldl -lm -lpthread
    fi
done
touch "$stamp"
