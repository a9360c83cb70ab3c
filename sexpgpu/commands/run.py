"""`sexpgpu run`: compile the run file, build its kernels (with compile progress) and
hand the program to the training loop (runtime/loop.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from sexpgpu import env, humanize, usage
from sexpgpu.atomic import print_json
from sexpgpu.contract.compile import compile_file
from sexpgpu.contract.plan import run_plan
from sexpgpu.devices import require_usable
from sexpgpu.diagnostics import error, render_all
from sexpgpu.exitcodes import EXIT_PREEMPTED
from sexpgpu.kernels import workers
from sexpgpu.parallel import ranks
from sexpgpu.parallel.collective import Collective, RankEnded, Single
from sexpgpu.parallel.launch import launch
from sexpgpu.record import replace
from sexpgpu.runtime.health import cadence
from sexpgpu.runtime.loop import run_training
from sexpgpu.runtime.programs import record_memory
from sexpgpu.runtime.progress import Progress
from sexpgpu.runtime.rundir import slug_for
from sexpgpu.runtime.signals import Stopped, StopRequests
from sexpgpu.s3 import runs as s3_runs
from sexpgpu.s3.store import is_s3, parse
from sexpgpu.selection import E_RUN_FLAG, Selection, from_docopt
from sexpgpu.trackers import config as trackers

HELP = """\
Train a run file. Progress goes to standard error: the kernels as they compile, then
a line with the step, loss, step time, throughput, the last eval and the time left (a
plain line every --progress-every seconds when standard error is not a terminal).
The run directory runs/<name>/ holds plan.json, events.jsonl, status.json and the
checkpoints; a run is never overwritten.

Usage:
  sexpgpu run FILE [--set K=V]... [--variant NAME] [--runs DIR] [--resume WHICH]
                   [--device DEV] [--precision P] [--checkpoint-every N] [--log-every N]
                   [--diag PATTERN]... [--diag-every N] [--progress-every S] [--procs N]
                   [--log-to SINKS] [--json]
  sexpgpu run (-h | --help)

Options:
  --set K=V             bind knob K to V (repeatable)
  --variant NAME        bind the knobs of a variant the file declares
  --runs DIR            where run directories go, or s3://BUCKET/PREFIX to mirror
                        them there (docs/environment.md, "S3") [default: runs]
  --resume WHICH        continue a stopped run: `latest`, or a checkpoint path
  --device DEV          cpu or cuda (default: the file's defrun :device)
  --precision P         f32 or bf16 (default: the file's defrun :precision); changes
                        results, so it is part of the plan hash and the run's name
  --checkpoint-every N  checkpoint every N steps (never changes results)
  --log-every N         write a step event every N steps (never changes results)
  --diag PATTERN        sample the diagnostics whose names match this glob, e.g.
                        'grad-norm*' (repeatable; `sexpgpu docs diagnostics`)
  --diag-every N        diagnostics cadence in steps (default: defrun :diag-every,
                        else the log cadence; never changes results)
  --progress-every S    seconds between progress lines when standard error is not
                        a terminal; 0 for none [default: 30]
  --procs N             data-parallel processes, started through mpiexec (default:
                        defrun :procs; under mpiexec or srun, the number they started)
  --log-to SINKS        mirror the events to trackers: tensorboard, wandb, mlflow,
                        comma-separated (default: SEXPGPU_LOG_TO); events.jsonl
                        stays complete whatever a tracker does
  --json                print the final summary as JSON on standard output

KEY=VALUE after FILE is the same as --set KEY=VALUE.

Examples:
  sexpgpu run examples/mnist1d-mlp.sx
  sexpgpu run examples/mnist1d-mlp.sx steps=500 lr=3e-2
  sexpgpu run examples/mnist1d-mlp.sx --resume latest
  sexpgpu run examples/mnist1d-mlp.sx --json > summary.json
  sexpgpu run examples/mnist1d-mlp.sx --procs 2
"""


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "run", argv)
    launched = env.mpi_world_size()
    if launched is None and args["--device"] in (None, "cpu"):
        # with a cold kernel cache the compile workers start now and warm up while
        # this process evaluates and traces the file (kernels/workers.py)
        workers.start_early()
    if launched is None:
        ranks.refuse_unmanaged(env.slurm_step_tasks())  # srun -n N without PMI
        procs = _procs(args)
        if procs > 1:  # start this command N times through mpiexec, and wait for them
            workers.release()
            return launch(argv, procs)
        world: Collective = Single()
    else:  # one of the processes mpiexec or srun started: its rank from MPI
        world = ranks.join(launched, args["--procs"])
    # the stop signals are handled from the start: one that comes while compiling ends
    # the command with 75 (nothing of the run is on disk yet), so a scheduler's retry
    # loop reruns it; once training has begun it checkpoints first (docs/checkpoints.md)
    with StopRequests(abort=True, signals=ranks.stop_signals(world)) as stop:
        try:
            return ranks.ended(world, _run(args, stop, world))
        except Stopped as exc:  # before the run directory existed: nothing to save
            sys.stderr.write(f"sexpgpu run: stopped by {exc.signame} before training began; "
                             "nothing was written, run it again to start\n")
            return ranks.ended(world, EXIT_PREEMPTED)
        except RankEnded as exc:  # rank 0 refused the run and said why
            return ranks.ended(world, exc.code)


def _procs(args: dict) -> int:
    """The processes the command line or the file asks for (the file evaluated only)."""
    # evaluating the file checks --procs against the batch (E-RUN) before any launch
    exp = compile_file(args["FILE"], from_docopt(args), trace=False).experiment
    return exp.run.procs if exp.run is not None else 1


def _run(args: dict, stop: StopRequests, world: Collective) -> int:
    selection = from_docopt(args)
    if world.size > 1:
        selection.run["procs"] = str(world.size)
    if world.rank != 0:
        # rank 0 speaks for the run: the others print nothing
        sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    plan, program, progress = ranks.compile_once(
        world, lambda: _build(args, selection, world))
    ranks.connect(world, program, plan.run.device)
    runs = _runs_dir(args["--runs"], plan, args["--resume"], world)
    ranks.announce(world, Path(runs), plan)
    code, summary = run_training(plan, program, runs, resume=args["--resume"],
                                 stop=stop, progress=progress, world=world)
    if args["--json"]:
        print_json(summary)
    else:
        sys.stderr.write(describe(summary) + "\n")
    return code


def _runs_dir(runs: str, plan: Any, resume: str | None, world: Collective) -> str:
    """The local runs folder: with `--runs s3://...` a staging folder that rank 0
    mirrors to S3 as the run goes (the other ranks write nothing)."""
    if not is_s3(runs):
        return runs
    if world.rank != 0:
        return str(s3_runs.staging_dir(parse(runs)))
    return str(s3_runs.prepare(parse(runs), slug_for(plan), resume))


def _build(args: dict, selection: Selection, world: Collective) -> tuple:
    """Compile the file and build this process's program: (plan, program, progress)."""
    patterns = args["--diag"]
    trackers.select(args["--log-to"])  # checked before compiling: a typo is exit 2 now
    compiled = compile_file(args["FILE"], selection, diagnostics=patterns)
    plan = run_plan(compiled, memory=False)  # --device, --precision, the cadences: in plan.run
    ranks.place(world, plan.run.device)  # each rank on its own GPU, before any is touched
    require_usable(plan.run.device)  # E-DEVICE-UNAVAILABLE before any kernel is generated
    every = cadence(args["--diag-every"], patterns, plan.run.diag_every, plan.run.log_every)
    if patterns:  # set after the plan hash was taken: the cadence does not change results
        plan.run = replace(plan.run, diag_every=every)
    warnings = list(compiled.warnings)
    if compiled.diagnostics is not None:
        warnings += compiled.diagnostics.warnings
    if warnings:
        sys.stderr.write(render_all(warnings) + "\n")
    progress = Progress(sys.stderr, plan.run.steps, every_s=_seconds(args["--progress-every"]))
    program = ranks.program(world, compiled, plan, progress)
    record_memory(plan, program)
    workers.release()  # started early for a compile that did not need them (CUDA, cached)
    return plan, program, progress


def _seconds(raw: str) -> float:
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise error(
            E_RUN_FLAG, f"--progress-every {raw}: not a number of seconds",
            expected="seconds >= 0 (0: no progress lines off a terminal)", actual=raw,
            fix="--progress-every 30")
    return seconds


def describe(summary: dict) -> str:
    """The final lines a person reads: state, steps, time, the last loss and eval, targets."""
    took = summary.get("elapsed_s")
    lines = [f"{summary.get('state', '?')}: step {summary.get('step')} of {summary.get('steps')}"
             + (f" in {humanize.duration(took)}" if took is not None else "")
             + f" -> {summary.get('run_dir', '')}"]
    facts = []
    if summary.get("last_loss") is not None:
        facts.append(f"loss {humanize.number(summary['last_loss'])}")
    for key, value in (summary.get("last_eval") or {}).items():
        if key != "step":
            facts.append(f"{key} {humanize.number(value)}")
    if facts:
        lines.append("  " + "  ".join(facts))
    for target in summary.get("targets", []):
        mark = "met" if target.get("met") else "NOT met"
        lines.append(f"  target {target['metric']} {target['op']} "
                     f"{humanize.number(target['value'])}: "
                     f"{humanize.number(target.get('actual'))} ({mark})")
    return "\n".join(lines)
