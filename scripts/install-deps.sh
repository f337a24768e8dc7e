#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Install the Debian packages gpurun needs to build and test. Only this setup
# step needs root; gpurun itself never does.
set -e
SUDO=
if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
fi
PACKAGES="build-essential autoconf automake libtool pkg-config
  libhwloc-dev hwloc libxml2-dev libconfuse-dev libjansson-dev libsqlite3-dev libssl-dev libpmix-dev
  openmpi-bin libopenmpi-dev mpich slurm-wlm munge procps
  gromacs lammps hpcc chromium lmod bash-completion
  jq man-db
  clang libclang-rt-14-dev
  python3-torch python3-torchvision libslurm-dev charliecloud podman busybox-static"
# OpenPBS's build (scripts/install-pbs.sh, from ../shared/vendor: Debian
# does not package it) and its test complex (PostgreSQL, namespaces).
PACKAGES="$PACKAGES
  libx11-dev libxt-dev libedit-dev libical-dev libncurses-dev postgresql postgresql-contrib
  postgresql-server-dev-all python3-dev tcl-dev tk-dev swig libexpat1-dev libssl-dev libxext-dev libxft-dev
  libcjson-dev iproute2 util-linux bc"
# mpich: Hydra's mpirun, which tests/cli-run.sh runs as an MPICH install has
# it; its alternatives rank below Open MPI's (40 against 50), so `mpirun`
# stays Open MPI's.
# clang and its libFuzzer runtime (libclang-rt-14-dev: Debian 12's clang 14)
# build the fuzz harnesses of tests/fuzz; without them make check skips those.
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $PACKAGES
