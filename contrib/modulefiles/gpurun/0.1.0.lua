-- SPDX-License-Identifier: BSD-3-Clause
-- gpurun 0.1.0, an Lmod modulefile.
--
-- `make install` puts it in PREFIX/share/modulefiles/gpurun/0.1.0.lua, and it
-- takes PREFIX from its own path, so that wherever the installation is (moved
-- too):
--   module use PREFIX/share/modulefiles
--   module load gpurun
-- A centre that keeps its modulefiles elsewhere copies this file there and
-- sets `prefix` below to the installation.
--
-- gpurun finds its templates and site profiles by itself (next to the
-- program: PREFIX/share/gpurun/templates), so GPURUN_TEMPLATE_PATH is left
-- to the user; a centre adds its own site profiles with
--   prepend_path("GPURUN_TEMPLATE_PATH", "/path/to/centre/templates")
-- (a folder holding sites/NAME.conf).

local prefix = nil

if not prefix then
    local found, n = myFileName():gsub("/share/modulefiles/gpurun/[^/]+$", "")
    if n ~= 1 then
        LmodError("gpurun: this modulefile (" .. myFileName() .. ") is not in PREFIX/share/modulefiles/gpurun/: " ..
                  "set `prefix` in it to gpurun's installation prefix")
    end
    prefix = found
end

whatis("Name: gpurun")
whatis("Version: 0.1.0")
whatis("Category: tools, MPI, GPU")
whatis("Description: launches MPI jobs with every rank bound to its closest GPUs, NICs, cores and memory")
whatis("URL: https://github.com/gpurun/gpurun")

help([[
gpurun 0.1.0: launches MPI jobs (Open MPI, Slurm) with every rank bound to its
closest GPUs, high-speed NICs, cores and NUMA memory, found from the node's
topology; reads figures of merit (GROMACS, LAMMPS, HPL, ...) and reports them.

  gpurun templates                 the workloads it knows
  gpurun init --template gromacs   a commented job file, laid out for this node
  gpurun run job.conf --dry-run    what would run
  man gpurun, man gpurun.conf      the manual
]])

prepend_path("PATH", pathJoin(prefix, "bin"))
-- An empty MANPATH means man's own path: an empty item keeps it.
if (os.getenv("MANPATH") or "") == "" then
    append_path("MANPATH", "")
end
prepend_path("MANPATH", pathJoin(prefix, "share/man"))
-- bash-completion looks for completions/gpurun in each XDG_DATA_DIRS folder.
-- Unset, that variable means /usr/local/share:/usr/share: keep them.
if (os.getenv("XDG_DATA_DIRS") or "") == "" then
    append_path("XDG_DATA_DIRS", "/usr/local/share")
    append_path("XDG_DATA_DIRS", "/usr/share")
end
prepend_path("XDG_DATA_DIRS", pathJoin(prefix, "share"))
