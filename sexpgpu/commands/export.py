"""`sexpgpu export`: a run's parameters as safetensors or npz (inference/export.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from sexpgpu import humanize, usage
from sexpgpu.atomic import print_json
from sexpgpu.inference.export import check_format, export_run
from sexpgpu.inference.load import load_run

HELP = """\
Write a run's parameters to one file, each tensor named by its parameter path
(`blocks/0/attn/qkv/weight`); a tied parameter is stored once, under its owner's
path. npz needs nothing beyond numpy; safetensors needs the `safetensors` package
(pip install 'sexpgpu[export]'). docs/checkpoints.md loads one into PyTorch.

Usage:
  sexpgpu export RUN --out FILE [--format F] [--checkpoint WHICH] [--runs DIR] [--json]
  sexpgpu export (-h | --help)

Options:
  --out FILE          the file to write (replaced atomically)
  --format F          npz or safetensors [default: npz]
  --checkpoint WHICH  latest, a step number, step-NNNNNN or a checkpoint path
                      [default: latest]
  --runs DIR          where run directories are [default: runs]
  --json              print {"out", "format", "tensors", "bytes"} as JSON

Examples:
  sexpgpu export runs/shakespeare-char-3f2a9c1d --format safetensors --out gpt.safetensors
  sexpgpu export runs/mnist1d-mlp-3f2a9c1d --out mlp.npz --checkpoint 400
"""


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "export", argv)
    check_format(args["--format"])  # before compiling anything
    run = load_run(args["RUN"], args["--checkpoint"], runs=args["--runs"])
    size = export_run(run, args["--format"], Path(args["--out"]))
    if args["--json"]:
        payload = {"out": args["--out"], "format": args["--format"],
                   "tensors": len(run.params), "bytes": size,
                   "checkpoint": str(run.checkpoint)}
        print_json(payload)
    else:
        sys.stderr.write(f"wrote {args['--out']}: {len(run.params)} tensors, "
                         f"{humanize.number(size / 1e6)} MB from {run.run_dir.name} at "
                         f"{run.checkpoint.name}\n")
    return 0
