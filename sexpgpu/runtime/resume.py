"""Where a run starts: its directory created or reopened (and locked), the checkpoint
a resume continues from, and that checkpoint written back into the program and loaders."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sexpgpu.data.loader import Loader
from sexpgpu.diagnostics import define_code, error
from sexpgpu.runtime import checkpoint as ckpt
from sexpgpu.runtime import rundir
from sexpgpu.runtime.program import state_step_of
from sexpgpu.runtime.spec import RunPlan

E_RESUME_PROCS = define_code(
    "E-RESUME-PROCS", "resuming with another number of processes",
    "A checkpoint of a data-parallel run holds each process's data position and RNG "
    "streams, and its optimizer step was traced for that many processes. It continues "
    "only with the same `--procs` (or `defrun :procs`) it was written with.",
)

def open_run_dir(runs_dir: Path, run_dir: Path, plan: RunPlan, resume: str | None,
                 warnings: list[dict[str, str]], procs: int = 1) -> tuple[int, Path | None]:
    """Create or reopen the run directory and hold its lock: (lock fd, checkpoint to
    resume from). Raises SexpError; an OSError here (a file where a directory should be,
    a full or read-only disk) is E-RUN-IO. `procs`: the run's processes, which a
    checkpoint to resume must have been written by (E-RESUME-PROCS)."""
    try:
        rundir.check_layout(run_dir)
        resume_from = None
        if resume is None:
            rundir.create(run_dir, plan)
        elif not run_dir.exists():
            resume_from = find_resume(runs_dir, run_dir, plan, resume, warnings, procs)
            rundir.create(run_dir, plan)
        held = rundir.lock(run_dir)  # one process per run directory
    except OSError as exc:
        raise rundir.io_error(exc, "creating the run directory") from None
    try:
        if resume is not None and resume_from is None:
            resume_from = find_resume(runs_dir, run_dir, plan, resume, warnings, procs)
        ckpt.remove_stale_temps(run_dir)
    except OSError as exc:
        os.close(held)
        raise rundir.io_error(exc, "opening the run directory") from None
    except BaseException:
        os.close(held)
        raise
    return held, resume_from


def restore(program: Any, loaders: dict[str, Loader], saved: ckpt.Checkpoint,
            rank: int = 0) -> None:
    """Write a checkpoint back into the program and the loaders; E-CHECKPOINT when it
    does not fit them (names, shapes, stages, or a step its optimizer state contradicts).
    `rank`: a data-parallel rank takes its own loader positions and RNG streams."""
    restore = getattr(program, "restore", None)
    if callable(restore):  # a GPU program loads them straight to its device
        restore(saved.params, saved.state, saved.path)
    else:
        ckpt.restore_arrays("params", program.params(), saved.params, saved.path)
        ckpt.restore_arrays("state", program.state(), saved.state, saved.path)
    counted = state_step_of(program)
    if counted is not None and counted != saved.step:
        raise ckpt.checkpoint_error(
            saved.path, f"its meta says step {saved.step}, its optimizer state has taken "
            f"{counted} steps", expected=f"{saved.step} steps in the optimizer state",
            actual=f"{counted} steps")
    mine = saved.meta["ranks"][rank] if "ranks" in saved.meta else saved.meta
    ckpt.restore_positions(loaders, mine["loaders"], saved.path)
    rng_state = mine.get("rng_state")
    if rng_state is not None:
        if not callable(getattr(program, "set_rng_state", None)):
            raise ckpt.checkpoint_error(saved.path, "it holds an RNG state this program has "
                                        "no use for", expected="rng_state null",
                                        actual="an rng_state")
        program.set_rng_state(rng_state)


def find_resume(runs_dir: Path, run_dir: Path, plan: RunPlan, resume: str,
                warnings: list[dict[str, str]], procs: int = 1) -> Path | None:
    """The checkpoint to continue from (None: start this run's directory from step 0)."""
    def skipped(path: Path, problem: str) -> None:
        warnings.append({"message": f"skipped checkpoint {path.name}: {problem}"})

    if resume == "latest":
        if not run_dir.exists():
            raise rundir.no_run_to_resume(runs_dir, plan)
        found = ckpt.latest_valid(run_dir, on_skip=skipped)
        if found is None:
            warnings.append({"message": "no valid checkpoint yet; starting from step 0"})
            return None
    else:
        found = Path(resume)
        if (found / "checkpoints").is_dir():  # a run directory: its newest good checkpoint
            found = ckpt.latest_valid(found, on_skip=skipped) or found / "checkpoints"
        ckpt.load_checkpoint(found)  # E-CHECKPOINT when it does not verify
    meta = ckpt.read_meta(found)
    if meta.get("plan_hash") != rundir.plan_hash(plan):
        if not _other_precision(meta, plan):
            raise rundir.refuse_mismatch(found.parent.parent, plan, found)
        # the same plan in another precision: the checkpoint's f32 masters and optimizer
        # state are what this run holds too (the bf16 copies are made from them)
        warnings.append({"message": f"continuing {found.name}, written in "
                                    f":{meta['precision']}, in :{plan.run.precision}"})
    written_by = int(meta.get("world_size", 1))
    if written_by != procs:
        raise error(E_RESUME_PROCS, f"checkpoint {found.name} was written by {written_by} "
                    f"process{'es' if written_by > 1 else ''}; this run has {procs}",
                    expected=f"--procs {written_by}", actual=f"--procs {procs}",
                    fix=f"resume with --procs {written_by} (each process's data position "
                    "and the gradient buffers are saved per process count)")
    return found


def _other_precision(meta: dict[str, Any], plan: RunPlan) -> bool:
    """The checkpoint was written by this plan under another precision."""
    return (bool(plan.masters_hash) and meta.get("masters_hash") == plan.masters_hash
            and meta.get("precision") not in (None, plan.run.precision))


def relative(path: Path | None, run_dir: Path) -> str | None:
    """Checkpoint paths in status.json are relative to the run directory when inside it."""
    if path is None:
        return None
    path, run_dir = Path(path).resolve(), run_dir.resolve()
    return str(path.relative_to(run_dir)) if path.is_relative_to(run_dir) else str(path)
