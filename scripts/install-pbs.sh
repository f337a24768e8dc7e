#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Build and install OpenPBS, for the PBS tests (tests/cli-pbs.sh) and
# bench/pbs.sh: Debian 12 does not package it.  Once per machine: an
# installation of the same source in the prefix is reused (its stamp file).
# Nothing is downloaded: the source is the vendored tarball.  Its Debian
# build dependencies are in scripts/install-deps.sh's list.
#
#   scripts/install-pbs.sh [TARBALL]
#
#   TARBALL     default: ../shared/vendor/openpbs-master-COMMIT.tar.gz beside
#               the clone, else $PBS_TARBALL
#   PBS_PREFIX  where to install (default /opt/pbs; the tests look there)
#
# Exit 0: installed (or already there); 77: no tarball (the reason on stderr,
# the PBS tests then skip with it); 1: the build failed.
set -eu
NAME=openpbs-master-cd7ab5e
VERSION=23.06.06 # what this snapshot of master reports itself as
SHA256=92f39749ca212de2e7c90aa654d46f799217ed582ef3b903b8ef1a02019088e4
PREFIX=${PBS_PREFIX:-/opt/pbs}
STAMP=$PREFIX/.gpurun-install-stamp
top=$(cd "$(dirname "$0")/.." && pwd)
say() { printf 'install-pbs: %s\n' "$*" >&2; }

tarball=${1:-${PBS_TARBALL:-$top/../shared/vendor/$NAME.tar.gz}}
# Debian's python3, not another one first on PATH (pyenv): configure takes
# the first python3 on PATH and links the server, mom and hooks against its
# libpython.  --with-python=/usr names /usr/bin/python3 and its -config; PATH
# is the system's for the whole build (the build runs python3 scripts).
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
python=/usr/bin/python3

installed() {
    [ -x "$PREFIX/sbin/pbs_server.bin" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$NAME $SHA256" ]
}
if installed; then
    say "OpenPBS $VERSION ($NAME) is installed in $PREFIX"
    exit 0
fi
if [ ! -f "$tarball" ]; then
    say "no OpenPBS source: $tarball is missing (give its path as the argument, or set PBS_TARBALL)"
    exit 77
fi
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
if [ "$sum" != "$SHA256" ]; then
    say "$tarball is not the vendored $NAME (sha256 $sum)"
    exit 1
fi
if [ ! -x "$python" ] || [ ! -x "$python-config" ]; then
    say "$python and $python-config are needed (apt-get install python3-dev: scripts/install-deps.sh)"
    exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
    say "installing into $PREFIX and running PBS need root"
    exit 1
fi

# One build at a time per prefix (two clones on one machine); the second
# finds the first's installation.
mkdir -p "$(dirname "$PREFIX")"
exec 9>"$PREFIX.lock"
flock 9
if installed; then
    say "OpenPBS $VERSION ($NAME) is installed in $PREFIX"
    exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/install-pbs.XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
say "building OpenPBS $VERSION ($NAME) into $PREFIX (log: $work/build.log while it runs)"
tar -xzf "$tarball" -C "$work"
jobs=$(nproc 2>/dev/null || echo 2)
# A part-installed prefix from a failed build would pass no check: start clean.
rm -rf "$PREFIX"
if ! (cd "$work/$NAME" &&
    ./autogen.sh &&
    ./configure --prefix="$PREFIX" --with-python=/usr PYTHON="$python" &&
    make -j"$jobs" &&
    make install) >"$work/build.log" 2>&1; then
    tail -40 "$work/build.log" >&2
    rm -rf "$PREFIX"
    say "the build failed"
    exit 1
fi
# Which libpython the server links: Debian's (/usr/lib/...), not another.
lib=$(ldd "$PREFIX/sbin/pbs_server.bin" | awk '/libpython/ { print $3 }')
case $lib in
    /usr/lib/* | /lib/*) ;;
    *)
        say "$PREFIX/sbin/pbs_server.bin links libpython '$lib', not Debian's"
        rm -rf "$PREFIX"
        exit 1
        ;;
esac
printf '%s %s\n' "$NAME" "$SHA256" >"$STAMP"
say "OpenPBS $VERSION ($NAME) installed in $PREFIX in $(($(date +%s) - start)) s (libpython: $lib)"
