"""`sexpgpu run FILE`: compile the run file, build its kernels and train.

Usage:
  sexpgpu run FILE [--set K=V]... [--variant NAME] [--runs DIR] [--resume WHICH]
                   [--device DEV] [--precision P] [--checkpoint-every N]
                   [--log-every N] [--diag PATTERN]... [--diag-every N] [--json]
  sexpgpu run (-h | --help)

Options:
  --set K=V             bind knob K to V (repeatable)
  --variant NAME        bind the knobs of a declared variant
  --runs DIR            where run directories go [default: runs]
  --resume WHICH        continue a run: `latest` or a checkpoint path
  --device DEV          cpu or cuda (default: the file's defrun :device)
  --precision P         f32 or bf16 (default: the file's defrun :precision); changes
                        results, so it is part of the plan hash and the run's name
  --checkpoint-every N  checkpoint cadence in steps (does not change results)
  --log-every N         step-event cadence in steps (does not change results)
  --diag PATTERN        sample the diagnostics whose names match this glob, e.g.
                        'grad-norm*' or 'act-rms/blocks/0/*' (repeatable; docs/diagnostics.md)
  --diag-every N        diagnostics cadence in steps (default: defrun :diag-every, else
                        the log cadence; does not change results)
  --json                print the final summary as JSON on standard output
"""

from __future__ import annotations

import sys
from dataclasses import replace

import orjson
from docopt import docopt

from sexpgpu.contract.compile import compile_file
from sexpgpu.contract.plan import run_plan
from sexpgpu.diagnostics import render_all
from sexpgpu.exitcodes import EXIT_PREEMPTED
from sexpgpu.runtime.compiled import KernelProgram
from sexpgpu.runtime.health import cadence
from sexpgpu.runtime.loop import run_training
from sexpgpu.runtime.signals import Stopped, StopRequests
from sexpgpu.selection import from_docopt


def main(argv: list[str]) -> int:
    args = docopt(__doc__, argv=["run", *argv])
    # the stop signals are handled from the start: one that comes while compiling ends
    # the command with 75 (nothing of the run is on disk yet), so a scheduler's retry
    # loop reruns it; once training has begun it checkpoints first (docs/checkpoints.md)
    with StopRequests(abort=True) as stop:
        try:
            return _run(args, stop)
        except Stopped as exc:  # before the run directory existed: nothing to save
            sys.stderr.write(f"sexpgpu run: stopped by {exc.signame} before training began; "
                             "nothing was written, run it again to start\n")
            return EXIT_PREEMPTED


def _run(args: dict, stop: StopRequests) -> int:
    patterns = args["--diag"]
    compiled = compile_file(args["FILE"], from_docopt(args), diagnostics=patterns)
    plan = run_plan(compiled)  # --device, --precision, the cadences: in plan.run
    every = cadence(args["--diag-every"], patterns, plan.run.diag_every, plan.run.log_every)
    if patterns:  # set after the plan hash was taken: the cadence does not change results
        plan.run = replace(plan.run, diag_every=every)
    warnings = list(compiled.warnings)
    if compiled.diagnostics is not None:
        warnings += compiled.diagnostics.warnings
    if warnings:
        sys.stderr.write(render_all(warnings) + "\n")
    program = KernelProgram(compiled, plan.run.seed, device=plan.run.device,
                            diag_every=plan.run.diag_every)
    code, summary = run_training(plan, program, args["--runs"], resume=args["--resume"],
                                 stop=stop)
    if args["--json"]:
        sys.stdout.write(orjson.dumps(summary).decode() + "\n")
    else:
        sys.stderr.write(_describe(summary) + "\n")
    return code


def _describe(summary: dict) -> str:
    lines = [f"{summary.get('state', '?')}: step {summary.get('step')} of {summary.get('steps')}"
             f" -> {summary.get('run_dir', '')}"]
    for target in summary.get("targets", []):
        mark = "met" if target.get("met") else "NOT met"
        lines.append(f"  target {target['metric']} {target['op']} {target['value']}: "
                     f"{target.get('actual')} ({mark})")
    return "\n".join(lines)
