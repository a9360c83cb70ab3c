"""The training loop: drive a compiled TrainingProgram through a RunPlan, nanoGPT-style.

Reads top to bottom: prepare the run directory (new, or resumed from a checkpoint),
open the loaders, then for each step build the microbatches, call the program,
guard against non-finite values, log, evaluate and checkpoint at their cadences,
and stop cleanly on SIGTERM/SIGINT. At the end: final evals, a final checkpoint,
targets. Returns (exit code, summary); the summary is `sexpgpu run --json`'s output.
"""

from __future__ import annotations

import math
import os
import platform
import sys
import time
from contextlib import nullcontext
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

from sexpgpu.data.errors import data_error
from sexpgpu.data.loader import Loader, split_microbatches
from sexpgpu.diagnostics import Diagnostic, Note, SexpError, define_code, render
from sexpgpu.exitcodes import EXIT_ERRORS, EXIT_OK, EXIT_PREEMPTED, EXIT_RUNTIME
from sexpgpu.kernels import threads
from sexpgpu.runtime import checkpoint as ckpt
from sexpgpu.runtime import rundir
from sexpgpu.runtime.evals import check_targets, due, run_eval
from sexpgpu.runtime.events import EventLog
from sexpgpu.runtime.program import (
    diagnostics_of,
    first_nonfinite,
    rng_state_of,
    state_step_of,
)
from sexpgpu.runtime.progress import Progress
from sexpgpu.runtime.signals import StopRequests
from sexpgpu.runtime.spec import RunPlan
from sexpgpu.runtime.status import StatusFile

E_NONFINITE = define_code(
    "E-NONFINITE", "loss or gradient is not finite",
    "A training step produced a NaN or infinite loss or gradient norm. The run stops at "
    "once (exit 3) without checkpointing the damaged parameters, so the last good "
    "checkpoint stays the latest. Common causes: a learning rate too high, log of zero, "
    "division by a vanishing norm, bad values in the data.",
)


def _versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in ("sexpgpu", "numpy", "numba", "llvmlite"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def _finite(*values: Any) -> bool:
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)


def run_training(
    plan: RunPlan,
    program: Any,
    runs_dir: str | Path = "runs",
    resume: str | None = None,
    *,
    stderr: TextIO | None = None,
    status_interval_s: float = 0.25,
    stop: StopRequests | None = None,
    progress: Progress | None = None,
) -> tuple[int, dict[str, Any]]:
    """Train `program` as `plan` says; resume = None, "latest" or a checkpoint/run path.

    Raises SexpError before the run directory is touched (E-RUN-EXISTS,
    E-RESUME-MISMATCH, E-CHECKPOINT, E-RUN-IO); a checkpoint that does not fit the
    program ends the run with exit 1. Data errors (E-DATA), E-NONFINITE and failed
    writes of the run's own files (E-RUN-IO: a full disk) end it with exit 3; a stop
    signal with exit 75; success with 0. status.json is rewritten at most every
    `status_interval_s` seconds for routine step updates (always for state changes).
    `stop`: the handlers `sexpgpu run` installed before compiling (else installed here).
    `progress`: the line a person reads on `stderr` (else one with the default cadence).
    """
    stderr = stderr or sys.stderr
    settings = plan.run  # resolved once by the contract: defrun, then the command line
    the_hash = rundir.plan_hash(plan)
    if stop is not None:
        stop.defer()  # from here on the run has files: a signal lets the step finish

    # ---- the run directory: new, or an existing one continued from a checkpoint
    run_dir = Path(runs_dir) / rundir.slug_for(plan)
    warnings: list[dict[str, str]] = []
    held, resume_from = _open_run_dir(Path(runs_dir), run_dir, plan, resume, warnings)
    try:
        events = EventLog(run_dir / "events.jsonl")
        status = StatusFile(run_dir / "status.json", run_dir.name, settings.steps,
                            min_interval_s=status_interval_s)
        for warning in warnings:
            events.emit("warn", **warning)
    except OSError as exc:
        os.close(held)
        raise rundir.io_error(exc, "opening the run's logs") from None

    summary: dict[str, Any] = {
        "run": run_dir.name, "run_dir": str(run_dir), "plan_hash": the_hash,
        "steps": settings.steps, "step": 0, "state": "running", "last_loss": None,
        "last_eval": None, "targets": [], "targets_met": None, "latest_checkpoint": None,
        "resumed_from": None, "error": None,
    }
    opened = False  # whether the `open` event was written

    def open_event(resumed_from: int | None) -> None:
        nonlocal opened
        fields = _open_fields(plan, settings, the_hash, resumed_from)
        if callable(getattr(program, "device_info", None)):
            fields["gpu"] = program.device_info()  # name, versions, how steps launch
        events.emit("open", **fields)
        opened = True

    def finish(state: str, code: int, diag: Diagnostic | None = None) -> tuple[int, dict]:
        """Close the run. Every write here is attempted even when an earlier one fails
        (a full disk): status.json says `failed` whenever it can still be written."""
        summary.update(state=state, exit_code=code, elapsed_s=round(time.time() - started, 3))
        if diag is not None:
            summary["error"] = diag.to_json()
            stderr.write(render(diag) + "\n")
        failure = summary["error"]
        error = {"code": failure["code"], "message": failure["message"]} if failure else None
        problems = [
            _attempt(status.update, force=True, state=state, error=error,
                     eta_s=0 if state == "done" else None),
            None if opened else _attempt(open_event, None),
            _attempt(events.emit, "close", status=state, summary=summary),
            _attempt(events.close),
        ]
        os.close(held)
        problem = next((p for p in problems if p is not None), None)
        if problem is not None and diag is None:  # the run itself went well, its record did not
            failed = rundir.io_error(problem, "closing the run").diagnostic
            summary.update(state="failed", exit_code=EXIT_RUNTIME, error=failed.to_json())
            stderr.write(render(failed) + "\n")
            return EXIT_RUNTIME, summary
        return code, summary

    started = time.time()
    seed = settings.seed
    step = 0
    last_eval: dict[str, Any] | None = None
    last_step: dict[str, float] = {}  # the last step's outputs (loss, metrics): for targets

    def make_ctx(microstep_base: int) -> dict[str, Any]:
        return {"step": step, "microstep": microstep_base,
                "microbatches": settings.microbatches, "seed": seed, **train.counters(step)}

    def save_checkpoint() -> None:
        meta = {
            "plan_hash": the_hash, "masters_hash": plan.masters_hash,
            "precision": settings.precision, "ctx": make_ctx(step * settings.microbatches),
            "rng": {"seed": seed}, "rng_state": rng_state_of(program),
            "loaders": {name: loader.position() for name, loader in loaders.items()},
            "selection": plan.selection, "last_loss": summary["last_loss"],
            "last_eval": last_eval, "last_step": last_step, "time": time.time(),
        }
        try:
            path = ckpt.write_checkpoint(run_dir, step, program.params(), program.state(), meta)
        except OSError as exc:  # nothing half-written is left; the previous one stays latest
            failed = rundir.io_error(exc, f"writing checkpoint {ckpt.checkpoint_name(step)}")
            good = summary["latest_checkpoint"]
            failed.diagnostic.notes.append(Note(
                f"the last good checkpoint is {Path(good).name}; `--resume latest` continues "
                "from it" if good else "no checkpoint was written before it"))
            raise failed from None
        ckpt.prune(run_dir, settings.keep_checkpoints, protect=path)
        summary["latest_checkpoint"] = str(path)
        events.emit("checkpoint", step=step, path=str(path.relative_to(run_dir)))
        events.sync()
        status.update(force=True, latest_checkpoint=str(path.relative_to(run_dir)))

    def evaluate(names: list[str]) -> None:
        nonlocal last_eval
        ctx = make_ctx(step * settings.microbatches)
        metrics: dict[str, float] = {}
        for ev in plan.evals:
            if ev.name in names:
                progress.evaluating(ev.name)
                values = run_eval(program, ev, loaders[ev.loader], step, ctx)
                events.emit("eval", step=step, name=ev.name, metrics=values)
                metrics.update(values)
        last_eval = {**(last_eval or {}), **metrics, "step": step}
        progress.evaluated(step, metrics)
        summary["last_eval"] = last_eval
        status.update(force=True, last_eval=last_eval)

    try:
        # ---- data: every loader opened before the first step, so a bad file fails fast
        base_dir = Path(plan.file).resolve().parent
        loaders = {spec.name: Loader(spec, base_dir, seed, plan.bounds.get(spec.name))
                   for spec in plan.loaders}
        for wanted in [settings.train_loader, *(ev.loader for ev in plan.evals)]:
            if wanted not in loaders:
                raise data_error(None, f"no loader named {wanted!r}",
                                 expected=", ".join(loaders) or "a defloader")
        train = loaders[settings.train_loader]

        # ---- restore: params and optimizer state in place, loader positions, counters
        if resume_from is not None:
            try:
                saved = ckpt.load_checkpoint(resume_from)
                _restore(program, loaders, saved)
            except SexpError as exc:  # E-CHECKPOINT: the checkpoint does not fit this program
                return finish("failed", EXIT_ERRORS, exc.diagnostic)
            step = saved.step
            last_eval = saved.meta.get("last_eval")
            last_step = dict(saved.meta.get("last_step") or {})
            summary.update(resumed_from=step, latest_checkpoint=str(resume_from), step=step,
                           last_loss=saved.meta.get("last_loss"), last_eval=last_eval)
        open_event(summary["resumed_from"])
        status.update(force=True, step=step, last_eval=last_eval,
                      latest_checkpoint=_relative(resume_from, run_dir))

        if progress is None:
            progress = Progress(stderr)
        progress.steps = progress.pace.steps = settings.steps
        if last_eval:
            progress.evaluated(last_eval["step"], {k: v for k, v in last_eval.items()
                                                   if k != "step"})
        last_saved = step if resume_from is not None else -1
        last_evaluated = last_eval["step"] if last_eval else -1
        with nullcontext(stop) if stop is not None else StopRequests() as stops:
            # ---- the loop
            while step < settings.steps:
                ctx = make_ctx(step * settings.microbatches)
                batch = train.next_batch(step)
                microbatches = split_microbatches(batch, settings.microbatches)
                t0 = time.perf_counter()
                out = program.train_step(microbatches, ctx)
                step_ms = (time.perf_counter() - t0) * 1000.0
                step += 1
                logged = due(settings.log_every, step) or step in (1, settings.steps)

                # a GPU program keeps a step's numbers on the device: read them only
                # when this step logs, evaluates, checkpoints or stops
                bad_step = None
                if callable(getattr(out, "read", None)):
                    if not (logged or stops.requested or due(settings.checkpoint_every, step)
                            or due(settings.diag_every, step)
                            or any(due(ev.every, step) for ev in plan.evals)):
                        continue
                    out, bad_step = out.read()

                # finite guard: stop before anything damaged is saved
                loss, grad_norm = out.get("loss"), out.get("grad_norm")
                if bad_step is not None or not _finite(loss, grad_norm):
                    if bad_step is not None:  # the last good step, found on the device
                        summary.update(step=bad_step - 1)
                    return finish("failed", EXIT_RUNTIME,
                                  _nonfinite(bad_step or step, loss, grad_norm, program, summary))
                summary.update(step=step, last_loss=float(loss))
                last_step = _numbers(out)

                rows = sum(len(next(iter(mb.values()))) for mb in microbatches)
                tokens = train.counters(step)["tokens"] - ctx["tokens"]
                progress.step(step, float(loss), step_ms, rows, tokens)
                if logged:
                    fields = _step_fields(step, out, step_ms, rows, train, ctx)
                    if callable(getattr(program, "transfers", None)):
                        fields.update(program.transfers())  # bytes this step moved
                    events.emit("step", **fields)
                    eta_s = progress.pace.eta_s()
                    status.update(step=step, last_loss=float(loss),
                                  eta_s=None if eta_s is None else round(eta_s, 3))
                if due(settings.diag_every, step):
                    values = diagnostics_of(program, make_ctx(step * settings.microbatches))
                    if values:
                        events.emit("diag", step=step, values=values)
                due_evals = [ev.name for ev in plan.evals if due(ev.every, step)]
                if due_evals:
                    evaluate(due_evals)
                    last_evaluated = step
                if due(settings.checkpoint_every, step):
                    save_checkpoint()
                    last_saved = step
                if stops.requested:
                    if last_saved != step:
                        save_checkpoint()
                    progress.done()
                    events.emit("warn", message=f"stopped by {stops.requested} after step {step}")
                    return finish("preempted", EXIT_PREEMPTED)

            # ---- the end: final evals and checkpoint, then the targets (still under
            # the handlers: a stop signal now lets the finished run close as done)
            if plan.evals and last_evaluated != step:
                evaluate([ev.name for ev in plan.evals])
            progress.done()
            if last_saved != step:
                save_checkpoint()
            # targets: the last step's outputs as `NAME` and `train/NAME`, then the evals
            values = {"loss": summary["last_loss"], "train/loss": summary["last_loss"],
                      **last_step, **{f"train/{k}": v for k, v in last_step.items()},
                      **{k: v for k, v in (last_eval or {}).items() if k != "step"}}
            summary["targets"] = check_targets(plan.targets, values)
            summary["targets_met"] = (all(t["met"] for t in summary["targets"])
                                      if plan.targets else None)
            status.update(targets=summary["targets"])
            return finish("done", EXIT_OK)
    except SexpError as exc:  # a data error (a stage's file, a field), or E-RUN-IO
        return finish("failed", EXIT_RUNTIME, exc.diagnostic)
    except OSError as exc:  # the run's own files: a full disk, a read-only directory
        return finish("failed", EXIT_RUNTIME, rundir.io_error(exc, "writing the run").diagnostic)
    except BaseException as exc:
        summary["error"] = {"code": "E-INTERNAL", "message": f"{type(exc).__name__}: {exc}"}
        finish("failed", EXIT_ERRORS)
        raise


def _attempt(write: Any, *args: Any, **kwargs: Any) -> OSError | None:
    """Run one write of the run's record; the OSError it raised, if any."""
    try:
        write(*args, **kwargs)
    except OSError as exc:
        return exc
    return None


def _open_run_dir(runs_dir: Path, run_dir: Path, plan: RunPlan, resume: str | None,
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
            resume_from = _find_resume(runs_dir, run_dir, plan, resume, warnings)
            rundir.create(run_dir, plan)
        held = rundir.lock(run_dir)  # one process per run directory
    except OSError as exc:
        raise rundir.io_error(exc, "creating the run directory") from None
    try:
        if resume is not None and resume_from is None:
            resume_from = _find_resume(runs_dir, run_dir, plan, resume, warnings)
        ckpt.remove_stale_temps(run_dir)
    except OSError as exc:
        os.close(held)
        raise rundir.io_error(exc, "opening the run directory") from None
    except BaseException:
        os.close(held)
        raise
    return held, resume_from


def _restore(program: Any, loaders: dict[str, Loader], saved: ckpt.Checkpoint) -> None:
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


def _numbers(out: dict[str, Any]) -> dict[str, float]:
    """A step's scalar outputs as plain floats (numpy scalars included)."""
    found: dict[str, float] = {}
    for name, value in out.items():
        try:
            found[name] = float(value)
        except (TypeError, ValueError):
            continue
    return found


def _find_resume(runs_dir: Path, run_dir: Path, plan: RunPlan, resume: str,
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


def _relative(path: Path | None, run_dir: Path) -> str | None:
    """Checkpoint paths in status.json are relative to the run directory when inside it."""
    if path is None:
        return None
    path, run_dir = Path(path).resolve(), run_dir.resolve()
    return str(path.relative_to(run_dir)) if path.is_relative_to(run_dir) else str(path)


def _open_fields(plan: RunPlan, settings: Any, the_hash: str,
                 resumed_from: int | None) -> dict[str, Any]:
    fields = {
        "versions": _versions(), "device": settings.device, "pid": os.getpid(),
        "selection": plan.selection, "resumed_from": resumed_from,
        "plan": {"file": plan.file, "hash": the_hash, "steps": settings.steps,
                 "microbatches": settings.microbatches, "seed": settings.seed,
                 "precision": settings.precision,
                 "loaders": [ld.name for ld in plan.loaders],
                 "evals": [ev.name for ev in plan.evals]},
    }
    if settings.device == "cpu":
        # the BLAS and the thread policy: runs that differ only there can end
        # differently in time, and `sexpgpu diff` shows it
        fields["threads"] = threads.policy().describe()
    return fields


def _step_fields(step: int, out: dict[str, Any], step_ms: float, rows: int,
                 train: Loader, ctx: dict[str, Any]) -> dict[str, Any]:
    after = train.counters(step)  # counters once this step's batch was taken
    fields: dict[str, Any] = {
        "step": step, "loss": float(out["loss"]), "lr": float(out.get("lr", math.nan)),
        "grad_norm": float(out["grad_norm"]), "step_ms": round(step_ms, 4),
        "samples_per_s": round(rows / max(step_ms, 1e-9) * 1000.0, 3),
        "epoch": after["epoch"],
    }
    tokens = after["tokens"] - ctx["tokens"]
    if tokens:
        fields["tokens_per_s"] = round(tokens / max(step_ms, 1e-9) * 1000.0, 3)
    extra = {k: float(v) for k, v in out.items()
             if k not in ("loss", "lr", "grad_norm") and isinstance(v, (int, float))}
    if extra:
        fields["metrics"] = extra
    return fields


def _nonfinite(step: int, loss: Any, grad_norm: Any, program: Any,
               summary: dict[str, Any]) -> Diagnostic:
    tensor = first_nonfinite(program)
    where = f" (first non-finite: {tensor})" if tensor else ""
    good = summary["latest_checkpoint"]
    keep = (f"the last good checkpoint is {Path(good).name}; `--resume latest` continues from it"
            if good else "no checkpoint was written before it")
    diag = Diagnostic(
        E_NONFINITE, f"non-finite {'loss' if not _finite(loss) else 'gradient'} at step {step}",
        expected="finite loss and grad_norm", actual=f"loss {loss}, grad_norm {grad_norm}{where}",
        fix=f"lower the learning rate or check the data; {keep}",
    )
    summary["nonfinite"] = {"step": step, "tensor": tensor}
    return diag
