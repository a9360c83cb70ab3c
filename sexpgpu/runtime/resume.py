"""Where a run starts: its directory created or reopened (and locked), the checkpoint
a resume continues from, and that checkpoint written back into the program and loaders."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sexpgpu.data.loader import Loader
from sexpgpu.runtime import checkpoint as ckpt
from sexpgpu.runtime import rundir
from sexpgpu.runtime.program import state_step_of
from sexpgpu.runtime.spec import RunPlan


def open_run_dir(runs_dir: Path, run_dir: Path, plan: RunPlan, resume: str | None,
                  warnings: list[dict[str, str]]) -> tuple[int, Path | None]:
    """Create or reopen the run directory and hold its lock: (lock fd, checkpoint to
    resume from). Raises SexpError; an OSError here (a file where a directory should be,
    a full or read-only disk) is E-RUN-IO."""
    try:
        rundir.check_layout(run_dir)
        resume_from = None
        if resume is None:
            rundir.create(run_dir, plan)
        elif not run_dir.exists():
            resume_from = find_resume(runs_dir, run_dir, plan, resume, warnings)
            rundir.create(run_dir, plan)
        held = rundir.lock(run_dir)  # one process per run directory
    except OSError as exc:
        raise rundir.io_error(exc, "creating the run directory") from None
    try:
        if resume is not None and resume_from is None:
            resume_from = find_resume(runs_dir, run_dir, plan, resume, warnings)
        ckpt.remove_stale_temps(run_dir)
    except OSError as exc:
        os.close(held)
        raise rundir.io_error(exc, "opening the run directory") from None
    except BaseException:
        os.close(held)
        raise
    return held, resume_from


def restore(program: Any, loaders: dict[str, Loader], saved: ckpt.Checkpoint) -> None:
    """Write a checkpoint back into the program and the loaders; E-CHECKPOINT when it
    does not fit them (names, shapes, stages, or a step its optimizer state contradicts)."""
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
    ckpt.restore_positions(loaders, saved.meta["loaders"], saved.path)
    rng_state = saved.meta.get("rng_state")
    if rng_state is not None:
        if not callable(getattr(program, "set_rng_state", None)):
            raise ckpt.checkpoint_error(saved.path, "it holds an RNG state this program has "
                                        "no use for", expected="rng_state null",
                                        actual="an rng_state")
        program.set_rng_state(rng_state)


def find_resume(runs_dir: Path, run_dir: Path, plan: RunPlan, resume: str,
                 warnings: list[dict[str, str]]) -> Path | None:
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
