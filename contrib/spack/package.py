# SPDX-License-Identifier: BSD-3-Clause
# Spack recipe for gpurun.  To use it before it is in Spack's builtin
# repository:
#   spack repo create ~/spack-gpurun && mkdir -p ~/spack-gpurun/packages/gpurun
#   cp contrib/spack/package.py ~/spack-gpurun/packages/gpurun/
#   spack repo add ~/spack-gpurun
#   spack install gpurun +slurm +pmix
# Spack's module files for it (spack module lmod refresh gpurun) set PATH,
# MANPATH and, below, XDG_DATA_DIRS for the bash completion.

from spack.package import *


class Gpurun(AutotoolsPackage):
    """Launches MPI jobs (Open MPI, Slurm) with every rank bound to its closest
    GPUs, high-speed NICs, cores and NUMA memory, found from the node's hwloc
    topology; reads each run's figures of merit (GROMACS, LAMMPS, HPL, ...)
    into a results database and reports scaling and cost.  BSD-3-Clause."""

    homepage = "https://github.com/gpurun/gpurun"
    # Release tarballs are `make dist` output (configure included).
    url = "https://github.com/gpurun/gpurun/releases/download/v0.1.0/gpurun-0.1.0.tar.gz"
    git = "https://github.com/gpurun/gpurun.git"

    version("main", branch="main")
    # Placeholder: replace with `sha256sum gpurun-0.1.0.tar.gz` of the release.
    version("0.1.0", sha256="0000000000000000000000000000000000000000000000000000000000000000")

    variant("slurm", default=False, description="Slurm support: srun and sbatch found at build time")
    variant("pmix", default=False, description="use PMIx")
    variant(
        "cuda",
        default=False,
        description="build the CUDA examples (cg-cuda) with nvcc; gpurun itself loads NVML at run time",
    )

    depends_on("c", type="build")  # Spack >= 0.23: the C compiler is a dependency
    depends_on("pkgconfig", type="build")
    depends_on("hwloc@2: +pci")
    depends_on("libconfuse@3:")
    depends_on("jansson@2.10:")
    depends_on("sqlite@3.7:")
    depends_on("openssl")  # libcrypto: SHA-256 of a run's program and inputs
    depends_on("slurm", when="+slurm")
    depends_on("pmix", when="+pmix")
    depends_on("cuda", when="+cuda")

    # A git checkout has no configure yet.
    with when("@main"):
        depends_on("autoconf", type="build")
        depends_on("automake", type="build")
        depends_on("m4", type="build")

    @when("@main")
    def autoreconf(self, spec, prefix):
        which("sh")("./autogen.sh")

    def configure_args(self):
        spec = self.spec
        args = [
            # The MPI examples are for the test suite only, never installed.
            "--without-mpi",
        ]
        args.extend(self.with_or_without("slurm"))
        args.extend(self.with_or_without("pmix"))
        if spec.satisfies("+cuda"):
            args.append("--with-cuda={0}".format(spec["cuda"].prefix))
        else:
            args.append("--without-cuda")
        return args

    def setup_run_environment(self, env):
        # bash-completion finds share/bash-completion/completions/gpurun here.
        env.prepend_path("XDG_DATA_DIRS", self.prefix.share)
