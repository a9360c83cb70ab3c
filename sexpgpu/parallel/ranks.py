"""What `sexpgpu run` does differently in one process of a data-parallel run: join the
MPI world, compile once (rank 0 first, the others from its cache), wrap the program,
tell the launcher where the run is, and leave without waiting on a lost process."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from sexpgpu import env
from sexpgpu.atomic import write_json_atomic
from sexpgpu.diagnostics import error
from sexpgpu.exitcodes import EXIT_ERRORS, EXIT_OK, EXIT_PREEMPTED
from sexpgpu.parallel.collective import Collective, RankEnded, Single
from sexpgpu.parallel.launch import E_PROCS
from sexpgpu.parallel.program import DataParallelProgram
from sexpgpu.parallel.select import engine
from sexpgpu.runtime import rundir
from sexpgpu.runtime.programs import make_program
from sexpgpu.runtime.signals import STOP_SIGNALS
from sexpgpu.runtime.spec import RunPlan

START_TIMEOUT_S = 1800.0  # the others wait this long for rank 0 to compile the kernels

T = TypeVar("T")


def join(launched: int, flag: str | None) -> Collective:
    """This process's place in the world an MPI launcher started; `--procs` must agree."""
    if flag is not None and flag != str(launched):
        raise error(E_PROCS, f"--procs {flag} under a launcher that started {launched}",
                    expected=f"--procs {launched}, or no --procs",
                    actual=f"--procs {flag}", fix=f"drop --procs (mpiexec -n {launched} "
                    "says how many), or start as many as --procs says")
    if launched == 1:
        return Single()
    # mpi4py initialises MPI on import: only in a process a launcher started
    from sexpgpu.parallel.mpi import MpiCollective

    return MpiCollective(env.collective_timeout_s())


def refuse_unmanaged(tasks: int | None) -> None:
    """E-PROCS for `srun -n N` (N > 1) without an MPI process manager: each task
    would think it is alone and train the whole run into the same directory."""
    if tasks is None or tasks < 2:
        return
    raise error(E_PROCS, f"srun started {tasks} tasks, but MPI did not give them ranks",
                expected=f"the {tasks} tasks joined in one MPI world (PMIx or PMI-2)",
                actual=f"SLURM_PROCID and {tasks} tasks, but no MPI rank variables "
                "(PMIX_RANK, PMI_SIZE, OMPI_COMM_WORLD_SIZE)",
                fix=f"srun --mpi=pmix -n {tasks} sexpgpu run FILE (or --mpi=pmi2; "
                "`srun --mpi=list` shows them), or mpiexec -n N inside the allocation")


def stop_signals(world: Collective) -> tuple[int, ...]:
    """SIGTERM and SIGINT; a rank also stops on SIGUSR1, which mpiexec forwards."""
    return STOP_SIGNALS + ((signal.SIGUSR1,) if world.size > 1 else ())


def compile_once(world: Collective, build: Callable[[], T]) -> T:
    """`build()` on rank 0, then on the others, whose kernels then come from the
    compile cache rank 0 filled. A rank 0 that fails (a diagnostic) ends them all."""
    if world.size == 1:
        return build()
    if world.rank == 0:
        try:
            built = build()
        except BaseException:
            world.broadcast(False, START_TIMEOUT_S)
            raise
        world.broadcast(True, START_TIMEOUT_S)
        return built
    if not world.broadcast(None, START_TIMEOUT_S):
        raise RankEnded(EXIT_ERRORS)
    return build()


def program(world: Collective, compiled: Any, plan: RunPlan, progress: Any) -> Any:
    """The training program of this process: a DataParallelProgram over several."""
    run = plan.run
    if world.size == 1:
        return make_program(compiled, run.seed, device=run.device,
                            diag_every=run.diag_every, progress=progress)
    # --diag: rank 0 samples its first microbatch (the global batch's first of
    # procs x microbatches pieces); the others compile no diagnostics graph
    local = make_program(compiled.data_parallel(), run.seed, device=run.device,
                         diag_every=run.diag_every if world.rank == 0 else 0,
                         progress=progress)
    return DataParallelProgram(local, world)


def connect(world: Collective, program: Any, device: str) -> None:
    """Every rank, once all have compiled: choose the engine that sums the gradients
    (a collective itself: NCCL's unique id, the ranks' agreement) and give it to the
    program."""
    if isinstance(program, DataParallelProgram):
        program.engine = engine(world, device, program.program, env.cuda_simulator())


def place(world: Collective, device: str, cuda: Any = None) -> None:
    """On a machine with several GPUs, each rank on its own: the r-th local rank on
    GPU r mod count, chosen before anything touches the device (NCCL refuses two
    ranks on one GPU; the host-staged path would share it). `cuda`: numba's."""
    if device != "cuda" or world.size == 1 or env.cuda_simulator():
        return
    if cuda is None:
        # numba-cuda: only for a CUDA run of several processes
        from numba import cuda
    count = len(cuda.gpus) if cuda.is_available() else 0
    if count > 1:
        cuda.select_device(world.local_rank() % count)


def announce(world: Collective, runs_dir: Path, plan: RunPlan) -> None:
    """Rank 0 tells `sexpgpu run --procs N` where the run is (to close it if a rank dies)."""
    path = env.launch_info()
    if path is not None and world.rank == 0:
        write_json_atomic(Path(path), {"run_dir": str(runs_dir / rundir.slug_for(plan))})


def ended(world: Collective, code: int) -> int:
    """The exit code. A rank that lost another ends the whole job (MPI_Abort: a
    launcher that would wait for the lost process stops the rest too); a failure every
    rank saw alike (a diagnostic, a non-finite loss) leaves at once, without MPI's
    finalize."""
    if world.size == 1 or code in (EXIT_OK, EXIT_PREEMPTED):
        return code
    sys.stdout.flush()
    sys.stderr.flush()
    if getattr(world, "broken", False):
        world.abort(code)
    os._exit(code)
