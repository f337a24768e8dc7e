#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Build and install flux-core, for the Flux tests (tests/cli-flux.sh) and
# bench/flux.sh: Debian 12 does not package it.  Once per machine: an
# installation of the same version in the prefix is reused (`flux version`).
# Nothing is downloaded: the source is the vendored tarball.
#
#   scripts/install-flux.sh [--no-deps] [TARBALL]
#
#   TARBALL      default: ../shared/vendor/flux-core-VERSION.tar.gz beside the
#                clone, else $FLUX_TARBALL
#   FLUX_PREFIX  where to install (default /opt/flux-core-VERSION; the tests
#                look there)
#   --no-deps    do not install the Debian build dependencies (apt-get)
#
# Exit 0: installed (or already there); 77: no tarball (the reason on stderr,
# the Flux tests then skip with it); 1: the build failed.
set -eu
VERSION=0.88.0
SHA256=a3a13e8306f9702f76fc91be3cf05e88c77a5e22b2b41d15eb4550d5dbaefdd0
PREFIX=${FLUX_PREFIX:-/opt/flux-core-$VERSION}
top=$(cd "$(dirname "$0")/.." && pwd)
say() { printf 'install-flux: %s\n' "$*" >&2; }

deps=yes
if [ "${1:-}" = --no-deps ]; then
    deps=no
    shift
fi
tarball=${1:-${FLUX_TARBALL:-$top/../shared/vendor/flux-core-$VERSION.tar.gz}}

installed() {
    # `flux version` prints "commands:    0.88.0" first.
    [ -x "$PREFIX/bin/flux" ] &&
        "$PREFIX/bin/flux" version 2>/dev/null | awk '$1 == "commands:" { v = $2 } END { exit v != "'"$VERSION"'" }'
}
if installed; then
    say "flux-core $VERSION is installed in $PREFIX"
    exit 0
fi
if [ ! -f "$tarball" ]; then
    say "no flux-core $VERSION source: $tarball is missing (give its path as the argument)"
    exit 77
fi
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
if [ "$sum" != "$SHA256" ]; then
    say "$tarball is not flux-core $VERSION's vendored tarball (sha256 $sum)"
    exit 1
fi

if [ "$deps" = yes ]; then
    SUDO=
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    # scripts/install-deps.sh installs what gpurun needs; these are flux-core's
    # (../shared/vendor/README.md).
    export DEBIAN_FRONTEND=noninteractive
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -qq --no-install-recommends autoconf automake libtool make pkg-config libc6-dev \
        libzmq3-dev uuid-dev libjansson-dev liblz4-dev libarchive-dev libhwloc-dev libsqlite3-dev lua5.3 \
        liblua5.3-dev lua-posix python3-dev python3-cffi python3-ply python3-setuptools python3-yaml jq >&2
fi

# One build at a time per prefix (two clones on one machine); the second
# finds the first's installation.
mkdir -p "$(dirname "$PREFIX")"
exec 9>"$PREFIX.lock"
flock 9
if installed; then
    say "flux-core $VERSION is installed in $PREFIX"
    exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/install-flux.XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
say "building flux-core $VERSION into $PREFIX (log: $work/build.log while it runs)"
tar -xzf "$tarball" -C "$work"
jobs=$(nproc 2>/dev/null || echo 2)
# The Debian python3 the build dependencies above are installed for, not
# another one first on PATH (pyenv): flux's commands run with this one.
python=/usr/bin/python3
[ -x "$python" ] || python=$(command -v python3)
# A part-installed prefix from a failed build would pass no check: start clean.
rm -rf "$PREFIX"
if ! (cd "$work/flux-core-$VERSION" &&
    FLUX_VERSION=$VERSION ./autogen.sh &&
    ./configure --prefix="$PREFIX" --disable-docs PYTHON="$python" &&
    make -j"$jobs" &&
    make install) >"$work/build.log" 2>&1; then
    tail -40 "$work/build.log" >&2
    rm -rf "$PREFIX"
    say "the build failed"
    exit 1
fi
if ! installed; then
    say "$PREFIX/bin/flux version does not say $VERSION"
    exit 1
fi
say "flux-core $VERSION installed in $PREFIX in $(($(date +%s) - start)) s"
