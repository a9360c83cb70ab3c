"""The training loop: drive a compiled TrainingProgram through a RunPlan, nanoGPT-style.

`run_training` reads top to bottom: open the run (its directory, new or resumed from a
checkpoint), restore, then step until done; each step builds the microbatches, calls the
program, guards against non-finite values, logs, evaluates and checkpoints at their
cadences, and stops cleanly on SIGTERM/SIGINT. At the end: final evals, a final
checkpoint, targets. The `Run` object owns all of it; its RunRecord (record.py) writes
the summary, status.json and events.jsonl together. Returns (exit code, summary); the
summary is `sexpgpu run --json`'s output.
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
from sexpgpu.diagnostics import Diagnostic, Note, SexpError, define_code
from sexpgpu.exitcodes import EXIT_ERRORS, EXIT_OK, EXIT_PREEMPTED, EXIT_RUNTIME
from sexpgpu.kernels import threads
from sexpgpu.parallel.collective import Collective, RankEnded, Single
from sexpgpu.runtime import checkpoint as ckpt
from sexpgpu.runtime import rundir
from sexpgpu.runtime.evals import check_targets, due, run_eval
from sexpgpu.runtime.events import EventLog
from sexpgpu.runtime.program import diagnostics_of, first_nonfinite, rng_state_of
from sexpgpu.runtime.progress import Progress
from sexpgpu.runtime.record import NoFiles, RunRecord
from sexpgpu.runtime.resume import open_run_dir, relative, restore
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
    world: Collective | None = None,
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
    `world`: the processes of a data-parallel run (rank 0 writes the run's files; every
    rank trains on its shard of each batch); None for one process.
    """
    if stop is not None:
        stop.defer()  # from here on the run has files: a signal lets the step finish
    run = Run(plan, program, stderr or sys.stderr, progress, world or Single())
    run.open(Path(runs_dir), resume, status_interval_s)
    try:
        failed = run.restore()
        if failed is not None:  # E-CHECKPOINT: the checkpoint does not fit this program
            return run.close("failed", EXIT_ERRORS, failed)
        run.begin()
        with nullcontext(stop) if stop is not None else StopRequests() as stops:
            while run.step < run.settings.steps:
                ended = run.train_step(stops)
                if ended is not None:
                    return ended
            return run.finish()
    except SexpError as exc:  # a data error (a stage's file, a field), or E-RUN-IO
        return run.close("failed", EXIT_RUNTIME, exc.diagnostic)
    except OSError as exc:  # the run's own files: a full disk, a read-only directory
        return run.close("failed", EXIT_RUNTIME,
                         rundir.io_error(exc, "writing the run").diagnostic)
    except RankEnded as exc:  # another rank than 0: rank 0 ended the run and said why
        return run.close("failed", exc.code)
    except BaseException as exc:
        run.summary["error"] = {"code": "E-INTERNAL", "message": f"{type(exc).__name__}: {exc}"}
        run.close("failed", EXIT_ERRORS)
        raise


class Run:
    """One training run: open (its directory and record), restore (a checkpoint),
    train_step, evaluate, checkpoint, close. Every change of state goes through its
    RunRecord, so the summary, status.json and events.jsonl never disagree."""

    def __init__(self, plan: RunPlan, program: Any, stderr: TextIO,
                 progress: Progress | None = None, world: Collective | None = None):
        self.plan = plan
        self.program = program
        self.settings = plan.run  # resolved once by the contract: defrun, then the command line
        self.plan_hash = rundir.plan_hash(plan)
        self.stderr = stderr
        self.progress = progress
        self.world = world or Single()
        self.step = 0
        self.last_eval: dict[str, Any] | None = None
        self.last_step: dict[str, float] = {}  # the last step's outputs: for targets
        self.last_saved = -1
        self.last_evaluated = -1
        self.resume_from: Path | None = None
        self.loaders: dict[str, Loader] = {}

    # -- open and close -------------------------------------------------------------

    def open(self, runs_dir: Path, resume: str | None, status_interval_s: float) -> None:
        """Create or reopen the run directory and its logs. Raises SexpError before
        anything of the run is written (the refusals of resume.open_run_dir). Rank 0
        alone opens the directory; the other ranks learn from it where to resume."""
        self.run_dir = runs_dir / rundir.slug_for(self.plan)
        if self.world.rank != 0:
            opened = self.world.broadcast(None)
            if opened is None:  # rank 0 refused it (and says why)
                raise RankEnded(EXIT_ERRORS)
            self.resume_from = opened["resume_from"]
            self.record = RunRecord(self._summary(), NoFiles(), NoFiles(), None, self.stderr)
            return
        try:
            self._open_files(runs_dir, resume, status_interval_s)
        except BaseException:
            self.world.broadcast(None)
            raise
        self.world.broadcast({"resume_from": self.resume_from})

    def _open_files(self, runs_dir: Path, resume: str | None, status_interval_s: float) -> None:
        warnings: list[dict[str, str]] = []
        held, self.resume_from = open_run_dir(runs_dir, self.run_dir, self.plan, resume,
                                              warnings, self.world.size)
        try:
            events = EventLog(self.run_dir / "events.jsonl")
            status = StatusFile(self.run_dir / "status.json", self.run_dir.name,
                                self.settings.steps, min_interval_s=status_interval_s)
            for warning in warnings:
                events.emit("warn", **warning)
        except OSError as exc:
            os.close(held)
            raise rundir.io_error(exc, "opening the run's logs") from None
        self.record = RunRecord(self._summary(), events, status, held, self.stderr)

    def _summary(self) -> dict[str, Any]:
        return {
            "run": self.run_dir.name, "run_dir": str(self.run_dir),
            "plan_hash": self.plan_hash, "steps": self.settings.steps, "step": 0,
            "state": "running", "last_loss": None, "last_eval": None, "targets": [],
            "targets_met": None, "latest_checkpoint": None, "resumed_from": None,
            "error": None,
        }

    @property
    def summary(self) -> dict[str, Any]:
        return self.record.summary

    def close(self, state: str, code: int, diag: Diagnostic | None = None
              ) -> tuple[int, dict[str, Any]]:
        """The run's end in every case: its state, exit code and error in the record."""
        return self.record.close(state, code, diag, open_fields=lambda: self._open_fields(None))

    def _open_fields(self, resumed_from: int | None) -> dict[str, Any]:
        fields = _open_fields(self.plan, self.settings, self.plan_hash, resumed_from)
        fields["world_size"] = self.world.size
        if self.world.size > 1:  # how the gradients are summed: mpi, mpi-host or nccl
            fields["collective"] = getattr(self.program, "collective", self.world.name)
        if callable(getattr(self.program, "device_info", None)):
            fields["gpu"] = self.program.device_info()  # name, versions, how steps launch
        return fields

    # -- restore and begin ------------------------------------------------------------

    def restore(self) -> Diagnostic | None:
        """Open every loader (a bad file fails before the first step), then write the
        checkpoint being resumed back into the program and loaders. The diagnostic
        (E-CHECKPOINT) when the checkpoint does not fit the program."""
        base_dir = Path(self.plan.file).resolve().parent
        seed = self.settings.seed
        self.loaders = {spec.name: Loader(spec, base_dir, seed, self.plan.bounds.get(spec.name))
                        for spec in self.plan.loaders}
        for wanted in [self.settings.train_loader, *(ev.loader for ev in self.plan.evals)]:
            if wanted not in self.loaders:
                raise data_error(None, f"no loader named {wanted!r}",
                                 expected=", ".join(self.loaders) or "a defloader")
        self.train = self.loaders[self.settings.train_loader]
        if self.resume_from is None:
            return None
        try:
            saved = ckpt.load_checkpoint(self.resume_from)
            restore(self.program, self.loaders, saved, self.world.rank)
        except SexpError as exc:
            return exc.diagnostic
        self.step = self.last_saved = saved.step
        self.last_eval = saved.meta.get("last_eval")
        self.last_step = dict(saved.meta.get("last_step") or {})
        self.record.transition(resumed_from=saved.step, step=saved.step,
                               latest_checkpoint=str(self.resume_from),
                               last_loss=saved.meta.get("last_loss"), last_eval=self.last_eval)
        return None

    def begin(self) -> None:
        """The `open` event and the first status; the progress line picks up a resume."""
        self.record.transition("open", self._open_fields(self.summary["resumed_from"]),
                               status={"step": self.step, "last_eval": self.last_eval,
                                       "latest_checkpoint": relative(self.resume_from,
                                                                     self.run_dir)},
                               force=True)
        if self.progress is None:
            self.progress = Progress(self.stderr)
        self.progress.steps = self.progress.pace.steps = self.settings.steps
        if self.last_eval:
            self.progress.evaluated(self.last_eval["step"],
                                    {k: v for k, v in self.last_eval.items() if k != "step"})
        self.last_evaluated = self.last_eval["step"] if self.last_eval else -1

    # -- one step ---------------------------------------------------------------------

    def ctx(self) -> dict[str, Any]:
        settings = self.settings
        return {"step": self.step, "microstep": self.step * settings.microbatches,
                "microbatches": settings.microbatches, "seed": settings.seed,
                **self.train.counters(self.step)}

    def train_step(self, stops: StopRequests) -> tuple[int, dict[str, Any]] | None:
        """One optimizer step, then whatever is due after it (log, diagnostics, evals,
        a checkpoint). The run's end when it ended here (non-finite, a stop signal)."""
        settings, plan = self.settings, self.plan
        ctx = self.ctx()
        batch = self.train.next_batch(self.step)
        if self.world.size > 1:  # every rank reads the global batch and takes its rows
            batch = split_microbatches(batch, self.world.size)[self.world.rank]
        microbatches = split_microbatches(batch, settings.microbatches)
        t0 = time.perf_counter()
        out = self.program.train_step(microbatches, ctx)
        step_ms = (time.perf_counter() - t0) * 1000.0
        self.step += 1
        step = self.step
        logged = due(settings.log_every, step) or step in (1, settings.steps)

        # a GPU program keeps a step's numbers on the device: read them only
        # when this step logs, evaluates, checkpoints or stops
        bad_step = None
        if callable(getattr(out, "read", None)):
            if not (logged or stops.requested or due(settings.checkpoint_every, step)
                    or due(settings.diag_every, step)
                    or any(due(ev.every, step) for ev in plan.evals)):
                return None
            out, bad_step = out.read()

        # finite guard: stop before anything damaged is saved
        loss, grad_norm = out.get("loss"), out.get("grad_norm")
        if bad_step is not None or not _finite(loss, grad_norm):
            if bad_step is not None:  # the last good step, found on the device
                self.summary.update(step=bad_step - 1)
            return self.close("failed", EXIT_RUNTIME, _nonfinite(
                bad_step or step, loss, grad_norm, self.program, self.summary))
        self.last_step = _numbers(out)

        rows = sum(len(next(iter(mb.values()))) for mb in microbatches) * self.world.size
        tokens = self.train.counters(step)["tokens"] - ctx["tokens"]
        self.progress.step(step, float(loss), step_ms, rows, tokens)
        if logged:
            fields = _step_fields(step, out, step_ms, rows, self.train, ctx)
            if callable(getattr(self.program, "transfers", None)):
                fields.update(self.program.transfers())  # bytes this step moved
            eta_s = self.progress.pace.eta_s()
            self.record.transition("step", fields, step=step, last_loss=float(loss),
                                   status={"step": step, "last_loss": float(loss),
                                           "eta_s": None if eta_s is None else round(eta_s, 3)})
        else:
            self.record.transition(step=step, last_loss=float(loss))
        if due(settings.diag_every, step):
            values = diagnostics_of(self.program, self.ctx())
            if values:
                self.record.transition("diag", {"step": step, "values": values})
        due_evals = [ev.name for ev in plan.evals if due(ev.every, step)]
        if due_evals:
            self.evaluate(due_evals)
        if due(settings.checkpoint_every, step):
            self.checkpoint()
        requested = self._stop_requested(stops)
        if requested:
            if self.last_saved != step:
                self.checkpoint()
            self.progress.done()
            self.record.transition("warn", {"message": f"stopped by {requested} "
                                                       f"after step {step}"})
            return self.close("preempted", EXIT_PREEMPTED)
        return None

    def _stop_requested(self, stops: StopRequests) -> str | None:
        """The stop signal, agreed by every rank: one rank signalled stops them all
        after the same step (rank 0 checkpoints it; all exit 75)."""
        if self.world.size == 1:
            return stops.requested
        anyone = self.world.mean({"stop": 1.0 if stops.requested else 0.0})["stop"] > 0
        return (stops.requested or "a signal to another rank") if anyone else None

    # -- evaluate, checkpoint ------------------------------------------------------------

    def evaluate(self, names: list[str]) -> None:
        """The evaluation passes `names`, each one `eval` event, then the summary and status."""
        ctx = self.ctx()
        metrics: dict[str, float] = {}
        for ev in self.plan.evals:
            if ev.name in names:
                self.progress.evaluating(ev.name)
                values = run_eval(self.program, ev, self.loaders[ev.loader], self.step, ctx)
                self.record.transition("eval", {"step": self.step, "name": ev.name,
                                                "metrics": values})
                metrics.update(values)
        self.last_eval = {**(self.last_eval or {}), **metrics, "step": self.step}
        self.last_evaluated = self.step
        self.progress.evaluated(self.step, metrics)
        self.record.transition(last_eval=self.last_eval, status={"last_eval": self.last_eval},
                               force=True)

    def checkpoint(self) -> None:
        """Write this step's checkpoint (params, optimizer state, loader positions,
        counters), prune the old ones, and record it; E-RUN-IO when it cannot be written."""
        # each rank's data position and RNG streams (a rank's entry in `ranks`)
        ranks = self.world.gather({
            "loaders": {name: loader.position() for name, loader in self.loaders.items()},
            "rng_state": rng_state_of(self.program)})
        if self.world.rank != 0:  # rank 0 writes it; the others learn whether it could
            if not self.world.broadcast(None):
                raise RankEnded(EXIT_RUNTIME)
            self.last_saved = self.step
            return
        try:
            self._write_checkpoint(ranks)
        except BaseException:
            self.world.broadcast(False)
            raise
        self.world.broadcast(True)

    def _write_checkpoint(self, ranks: list[dict[str, Any]] | None) -> None:
        meta = {
            "plan_hash": self.plan_hash, "masters_hash": self.plan.masters_hash,
            "precision": self.settings.precision, "ctx": self.ctx(),
            "rng": {"seed": self.settings.seed}, "rng_state": rng_state_of(self.program),
            "loaders": {name: loader.position() for name, loader in self.loaders.items()},
            "selection": self.plan.selection, "last_loss": self.summary["last_loss"],
            "last_eval": self.last_eval, "last_step": self.last_step, "time": time.time(),
        }
        if self.world.size > 1:
            meta.update(world_size=self.world.size, ranks=ranks)
        step, run_dir = self.step, self.run_dir
        try:
            path = ckpt.write_checkpoint(run_dir, step, self.program.params(),
                                         self.program.state(), meta)
        except OSError as exc:  # nothing half-written is left; the previous one stays latest
            failed = rundir.io_error(exc, f"writing checkpoint {ckpt.checkpoint_name(step)}")
            good = self.summary["latest_checkpoint"]
            failed.diagnostic.notes.append(Note(
                f"the last good checkpoint is {Path(good).name}; `--resume latest` continues "
                "from it" if good else "no checkpoint was written before it"))
            raise failed from None
        ckpt.prune(run_dir, self.settings.keep_checkpoints, protect=path)
        self.last_saved = step
        where = str(path.relative_to(run_dir))
        self.record.transition("checkpoint", {"step": step, "path": where}, sync=True,
                               latest_checkpoint=str(path),
                               status={"latest_checkpoint": where}, force=True)

    # -- the end -------------------------------------------------------------------------

    def finish(self) -> tuple[int, dict[str, Any]]:
        """After the last step: final evals and checkpoint, then the targets (still under
        the handlers: a stop signal now lets the finished run close as done)."""
        if self.plan.evals and self.last_evaluated != self.step:
            self.evaluate([ev.name for ev in self.plan.evals])
        self.progress.done()
        if self.last_saved != self.step:
            self.checkpoint()
        # targets: the last step's outputs as `NAME` and `train/NAME`, then the evals
        last_loss, last_step = self.summary["last_loss"], self.last_step
        values = {"loss": last_loss, "train/loss": last_loss,
                  **last_step, **{f"train/{k}": v for k, v in last_step.items()},
                  **{k: v for k, v in (self.last_eval or {}).items() if k != "step"}}
        targets = check_targets(self.plan.targets, values)
        met = all(t["met"] for t in targets) if self.plan.targets else None
        self.record.transition(targets=targets, targets_met=met, status={"targets": targets})
        return self.close("done", EXIT_OK)


def _numbers(out: dict[str, Any]) -> dict[str, float]:
    """A step's scalar outputs as plain floats (numpy scalars included)."""
    found: dict[str, float] = {}
    for name, value in out.items():
        try:
            found[name] = float(value)
        except (TypeError, ValueError):
            continue
    return found


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
