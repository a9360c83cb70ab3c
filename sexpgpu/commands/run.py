"""`sexpgpu run FILE`: compile the run file, build its kernels and train.

Usage:
  sexpgpu run FILE [--set K=V]... [--variant NAME] [--runs DIR] [--resume WHICH]
                   [--device DEV] [--checkpoint-every N] [--log-every N] [--json]
  sexpgpu run (-h | --help)

Options:
  --set K=V             bind knob K to V (repeatable)
  --variant NAME        bind the knobs of a declared variant
  --runs DIR            where run directories go [default: runs]
  --resume WHICH        continue a run: `latest` or a checkpoint path
  --device DEV          cpu or cuda (default: the file's defrun :device)
  --checkpoint-every N  checkpoint cadence in steps (does not change results)
  --log-every N         step-event cadence in steps (does not change results)
  --json                print the final summary as JSON on standard output
"""

from __future__ import annotations

import sys

from docopt import docopt

from sexpgpu.contract import compile_file
from sexpgpu.selection import from_docopt


def _int(value: str | None) -> int | None:
    return None if value is None else int(value)


def main(argv: list[str]) -> int:
    args = docopt(__doc__, argv=["run", *argv])
    from sexpgpu.runtime.compiled import CompiledProgram
    from sexpgpu.runtime.loop import run_training

    compiled = compile_file(args["FILE"], from_docopt(args))
    plan = compiled.run_plan()
    device = args["--device"] or plan.run.device
    program = CompiledProgram(compiled, plan.run.seed, device=device)
    code, summary = run_training(
        plan, program, args["--runs"], resume=args["--resume"], device=device,
        checkpoint_every=_int(args["--checkpoint-every"]), log_every=_int(args["--log-every"]))
    if args["--json"]:
        import orjson

        sys.stdout.write(orjson.dumps(summary).decode() + "\n")
    else:
        sys.stderr.write(_describe(summary) + "\n")
    return code


def _describe(summary: dict) -> str:
    lines = [f"{summary.get('status', '?')}: step {summary.get('step')} of {summary.get('steps')}"
             f" -> {summary.get('run_dir', '')}"]
    for target in summary.get("targets", []):
        mark = "met" if target.get("met") else "NOT met"
        lines.append(f"  target {target['metric']} {target['op']} {target['value']}: "
                     f"{target.get('actual')} ({mark})")
    return "\n".join(lines)
