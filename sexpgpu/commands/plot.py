"""`sexpgpu plot RUN...`: the command over sexpgpu/plot.py, which reads and draws."""

from __future__ import annotations

import sys

from sexpgpu import usage
from sexpgpu.atomic import print_json
from sexpgpu.plot import draw, read_run, series_names

HELP = """\
Draw the curves of one or more runs into a PNG: any series they recorded (loss, lr,
grad_norm, step_ms, each diagnostic, each eval metric), one panel per series, one
colour per run with a legend, targets as dashed lines. Runs that differ in one knob
(a sweep) can be drawn against that knob's values instead of the step.

Usage:
  sexpgpu plot RUN... [--out FILE] [--metric NAME]... [--against KNOB] [--smooth N]
                      [--title TEXT] [--list] [--json]
  sexpgpu plot (-h | --help)

Options:
  --out FILE      the PNG to write [default: plot.png]
  --metric NAME   draw this series (repeatable; default: the loss and every eval
                  metric): `loss`, `lr`, `grad_norm`, `test/accuracy`, a diagnostic
  --against KNOB  one point per run: each series' last value against the value of
                  KNOB in that run (a sweep's knob)
  --smooth N      also draw each step series as a moving average over N logged points
  --title TEXT    the figure's title (default: the run file's name)
  --list          print the series the runs have, draw nothing
  --json          print what was drawn as JSON

Examples:
  sexpgpu plot runs/mnist1d-mlp-3f2a9c1d
  sexpgpu plot runs/shakespeare-char-* --metric loss --metric lr --smooth 20
  sexpgpu plot runs/mnist1d-mlp-lr=* --against lr --metric test/accuracy
"""


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "plot", argv)
    if args["--list"]:
        runs = [read_run(d) for d in args["RUN"]]
        names = series_names(runs)
        if args["--json"]:
            print_json({"ok": True, "series": names})
        else:
            sys.stdout.write("".join(f"{n}\n" for n in names))
        return 0
    smooth = args["--smooth"]
    if smooth is not None and not smooth.isdigit():
        raise usage.usage_error(HELP, "plot", argv)
    drawn = draw(args["RUN"], args["--out"], metrics=args["--metric"] or None,
                 against=args["--against"], smooth=int(smooth or 0), title=args["--title"])
    if args["--json"]:
        print_json({"ok": True, **drawn})
    else:
        panels = ", ".join(drawn["panels"])
        against = f" against {drawn['against']}" if drawn["against"] else ""
        sys.stdout.write(f"{drawn['out']}: {len(drawn['runs'])} run(s); {panels}{against}\n")
    return 0
