"""`sexpgpu sweep`: every point of a declared `defsweep`, each run as `sexpgpu run` runs
it, then a table of final metrics and targets."""

from __future__ import annotations

import contextlib
import io
import sys
from typing import Any

import orjson

from sexpgpu import usage
from sexpgpu.atomic import print_json
from sexpgpu.commands import run
from sexpgpu.contract.forms import check_shape, read_forms
from sexpgpu.diagnostics import SexpError, define_code, error, render_all
from sexpgpu.exitcodes import EXIT_PREEMPTED
from sexpgpu.parallel import points as parallel
from sexpgpu.parallel.slurm import emit
from sexpgpu.selection import (
    E_RUN_FLAG,
    Binder,
    Selection,
    SweepDecl,
    from_docopt,
    show,
    value_kind,
)

HELP = """\
Run every point of a sweep the file declares (defsweep), each exactly as `sexpgpu
run` runs it (in order, or --jobs at a time, each its own process with the cores
divided among them); then a table of each point's final metrics and targets. With
`--emit slurm` it prints a Slurm job-array script instead: one array task per point.

Usage:
  sexpgpu sweep FILE NAME [--set K=V]... [--variant NAME] [--runs DIR] [--resume WHICH]
                          [--device DEV] [--checkpoint-every N] [--log-every N]
                          [--progress-every S] [--jobs N] [--emit KIND] [--json]
  sexpgpu sweep (-h | --help)

Options:
  --set K=V             bind knob K in every point (not a knob the sweep varies)
  --variant NAME        bind a variant in every point (default: the sweep's :variant)
  --runs DIR            where run directories go [default: runs]
  --resume WHICH        continue each point's run: `latest` or a checkpoint path
  --device DEV          cpu or cuda (default: the file's defrun :device)
  --checkpoint-every N  checkpoint every N steps (never changes results)
  --log-every N         write a step event every N steps (never changes results)
  --progress-every S    seconds between progress lines off a terminal; 0 for none
                        [default: 30]
  --jobs N              run N points at a time on this machine [default: 1]
  --emit KIND           `slurm`: print a Slurm job-array script (one task per point, each
                        resumed with --resume latest when requeued) and run nothing
  --json                print every point's summary as one JSON object

KEY=VALUE after NAME is the same as --set KEY=VALUE.

Examples:
  sexpgpu sweep examples/mnist1d-mlp.sx lr-scan
  sexpgpu sweep examples/mnist1d-mlp.sx lr-scan steps=1000 --json
  sexpgpu sweep examples/mnist1d-mlp.sx lr-scan --jobs 3
  sexpgpu sweep examples/mnist1d-mlp.sx lr-scan --emit slurm > lr-scan.sbatch
"""

E_SWEEP_SET = define_code(
    "E-SWEEP-SET", "--set names a knob the sweep varies",
    "`sexpgpu sweep FILE NAME --set K=V` binds K in every point; a knob the sweep itself "
    "varies would be overridden in every point, so the sweep would run one point many times.",
)

RUN_FLAGS = ("--runs", "--resume", "--device", "--checkpoint-every", "--log-every")


def declared_sweep(path: str, name: str, selection: Selection) -> SweepDecl:
    """The sweep `name` of the file, checked by the selection module (did-you-mean on a typo)."""
    _, forms = read_forms(path)
    decls = check_shape(forms, path).decls
    Binder(decls, Selection(dict(selection.sets), selection.variant, name, 0))
    return decls.sweeps[name]


def cli_text(value: Any) -> str:
    """A knob value as `--set` reads it back (strings bare, the rest as Lisp prints them)."""
    return value if value_kind(value) == "string" else show(value)


def run_point(argv: list[str]) -> tuple[int, dict[str, Any]]:
    """One `sexpgpu run` in this process; its `--json` summary captured from stdout."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            code = run.main([*argv, "--json"])
    except SexpError as exc:  # a point that cannot start: report it, go on with the rest
        sys.stderr.write(render_all(exc.diagnostics) + "\n")
        return 1, {"state": "failed", "error": exc.diagnostic.to_json()}
    lines = out.getvalue().strip().splitlines()
    return code, orjson.loads(lines[-1]) if lines else {"state": "failed"}


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "sweep", argv)
    path, name = args["FILE"], args["NAME"]
    selection = from_docopt(args)
    sweep = declared_sweep(path, name, selection)
    for key in selection.sets:
        if key in sweep.axes:
            raise error(E_SWEEP_SET, f"`--set {key}` fixes a knob sweep `{name}` varies",
                        sweep.span, expected=f"--set for knobs other than "
                        f"{', '.join(sweep.axes)}", actual=f"--set {key}",
                        fix=f"drop --set {key}, or declare a sweep that does not vary it")
    common = [f"--set={item}" for item in args["--set"]]
    variant = selection.variant or sweep.variant
    if variant:
        common.append(f"--variant={variant}")
    common += [f"{flag}={args[flag]}" for flag in RUN_FLAGS if args[flag] is not None]
    common.append(f"--progress-every={args['--progress-every']}")
    points = sweep.points()
    argvs = [[path, *common, *(f"--set={k}={cli_text(v)}" for k, v in point.items())]
             for point in points]
    if args["--emit"] is not None:
        sys.stdout.write(emit(args["--emit"], path, name, argvs, args["--runs"]))
        return 0
    jobs = _jobs(args["--jobs"])
    if jobs > 1:
        outcomes = parallel.run_points(argvs, jobs, name)
    else:
        outcomes = _in_order(argvs, points, name)
    results: list[dict[str, Any]] = []
    worst = 0
    for index, (code, summary) in enumerate(outcomes):
        results.append({"point": index, "set": {k: cli_text(v) for k, v in points[index].items()},
                        "exit_code": code, **summary})
        worst = worst or code
    report = {"ok": worst == 0, "file": path, "sweep": name, "points": results,
              "planned": len(points)}
    if args["--json"]:
        print_json(report)
    else:
        sys.stdout.write(table(results))
    return worst


def _in_order(argvs: list[list[str]], points: list[dict[str, Any]], name: str
              ) -> list[tuple[int, dict[str, Any]]]:
    """Each point in this process, one after the other; a stop signal ends the sweep."""
    outcomes = []
    for index, point in enumerate(points):
        shown = " ".join(f"{k}={cli_text(v)}" for k, v in point.items())
        sys.stderr.write(f"sweep {name}: point {index + 1} of {len(points)}: {shown}\n")
        code, summary = run_point(argvs[index])
        outcomes.append((code, summary))
        if code == EXIT_PREEMPTED:  # the user stopped it: leave the rest for a later sweep
            break
    return outcomes


def _jobs(raw: str) -> int:
    if not raw.isdigit() or int(raw) < 1:
        raise error(E_RUN_FLAG, f"--jobs {raw}: not a number of points at a time",
                    expected="an integer >= 1", actual=raw, fix="--jobs 2")
    return int(raw)


def _number(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else "-" if value is None else str(value)


def table(results: list[dict[str, Any]]) -> str:
    """One row per point: its knobs, state, last loss, final eval metrics, targets met."""
    metrics: list[str] = []
    for r in results:
        for key in (r.get("last_eval") or {}):
            if key != "step" and key not in metrics:
                metrics.append(key)
    knobs = list(results[0]["set"]) if results else []
    header = ["point", *knobs, "state", "loss", *metrics, "targets", "run"]
    rows = [header]
    for r in results:
        last_eval = r.get("last_eval") or {}
        met = r.get("targets_met")
        state = str(r.get("state"))
        if r.get("error"):
            state += f" ({r['error']['code']})"
        rows.append([str(r["point"]), *(r["set"][k] for k in knobs), state,
                     _number(r.get("last_loss")), *(_number(last_eval.get(m)) for m in metrics),
                     "-" if met is None else "met" if met else "NOT met",
                     str(r.get("run_dir") or "-")])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() + "\n"
                   for row in rows)
