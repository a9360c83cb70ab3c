"""`sexpgpu plot RUN...`: draw the loss and eval curves of one or more run directories into
a PNG, with each run's `deftarget`s as reference lines (drawing lives in sexpgpu/plot.py).

Usage:
  sexpgpu plot RUN... [--out FILE] [--metric NAME]... [--json]
  sexpgpu plot (-h | --help)

Options:
  --out FILE     the PNG to write [default: plot.png]
  --metric NAME  draw only this metric (repeatable): `loss` for the training loss, or an
                 eval metric such as `test/accuracy`
  --json         print what was drawn as JSON
"""

from __future__ import annotations

import sys

import orjson
from docopt import docopt

from sexpgpu.plot import draw


def main(argv: list[str]) -> int:
    args = docopt(__doc__, argv=["plot", *argv])
    drawn = draw(args["RUN"], args["--out"], metrics=args["--metric"] or None)
    if args["--json"]:
        sys.stdout.write(orjson.dumps({"ok": True, **drawn}).decode() + "\n")
    else:
        panels = ", ".join(drawn["panels"])
        sys.stdout.write(f"{drawn['out']}: {len(drawn['runs'])} run(s); {panels}\n")
    return 0
