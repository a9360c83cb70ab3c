"""Which engine sums a data-parallel step's gradients (the `open` event's
`collective`): on the CPU the world's MPI (`mpi`); on CUDA NCCL (`nccl`) when every
rank has a real GPU and libnccl loads, else the host-staged MPI path (`mpi-host`).
Every rank must choose alike, so the ranks agree through one MPI mean.
SEXPGPU_COLLECTIVE (auto, nccl, mpi-host) overrides the choice on CUDA."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sexpgpu import env
from sexpgpu.diagnostics import error
from sexpgpu.parallel.launch import E_PROCS
from sexpgpu.parallel.libnccl import NcclError, load
from sexpgpu.parallel.nccl import NcclReducer
from sexpgpu.parallel.staged import HostStaged


def nccl_here(simulated: bool, load: Callable[[], tuple[Any, str]]) -> tuple[Any, str]:
    """(the NCCL library or None, its version or why not) on this rank."""
    if simulated:
        return None, "numba's CUDA simulator has no GPU memory for NCCL"
    return load()


def choose(world: Any, device: str, here: tuple[Any, str]) -> str:
    """"mpi", "nccl" or "mpi-host", the same on every rank of `world`."""
    if device != "cuda":
        return "mpi"
    wanted = env.collective()
    lib, why = here
    everyone = world.mean({"nccl": 1.0 if lib is not None else 0.0})["nccl"] == 1.0
    if wanted == "nccl" and not everyone:
        raise error(E_PROCS, "SEXPGPU_COLLECTIVE=nccl, but NCCL cannot run on every rank",
                    expected="a GPU and libnccl.so.2 on every rank",
                    actual=why if lib is None else "another rank has no GPU or no NCCL",
                    fix="pip install 'sexpgpu[nccl]' on every node, or "
                    "SEXPGPU_COLLECTIVE=auto (the host-staged MPI all-reduce)")
    return "nccl" if everyone and wanted != "mpi-host" else "mpi-host"


def engine(world: Any, device: str, program: Any, simulated: bool = False,
           loader: Callable[[], tuple[Any, str]] = load) -> Any:
    """The object whose `allreduce_sum` sums `program.gradients()` across `world`:
    the world itself on the CPU. `simulated`: numba's CUDA simulator runs the step."""
    if device != "cuda":
        return world
    here = nccl_here(simulated, loader)
    if choose(world, device, here) == "nccl":
        try:
            return NcclReducer(world, here[0], program)
        except NcclError as exc:
            raise error(E_PROCS, f"NCCL could not start on rank {world.rank} of {world.size}",
                        expected="a communicator of every rank's GPU", actual=str(exc),
                        fix="NCCL_DEBUG=INFO says why; SEXPGPU_COLLECTIVE=mpi-host sums "
                        "the gradients through host memory instead") from None
    return HostStaged(world, program.stream(), program.host_buffer)
