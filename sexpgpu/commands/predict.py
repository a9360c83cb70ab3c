"""`sexpgpu predict`: a trained model's outputs for the rows of a .npy file."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np

from sexpgpu import usage
from sexpgpu.atomic import print_json, write_bytes_atomic
from sexpgpu.inference.load import load_run
from sexpgpu.inference.predict import predict_file

HELP = """\
Run a trained model forward (the run file's defpredict, no loss, no optimizer) on
every row of a .npy file. Without --out, prints each row's argmax (the predicted
class) and its value; with --out, writes every output to a .npy file.

Usage:
  sexpgpu predict RUN --input FILE [--out FILE] [--checkpoint WHICH] [--runs DIR]
                      [--json]
  sexpgpu predict (-h | --help)

Options:
  --input FILE        a .npy array of rows shaped like one training sample
  --out FILE          write the outputs (rows first) to this .npy file
  --checkpoint WHICH  latest, a step number, step-NNNNNN or a checkpoint path
                      [default: latest]
  --runs DIR          where run directories are [default: runs]
  --json              print {"argmax": [...], "outputs": [...]} as JSON

RUN is a run directory, or a run's name under --runs.

Examples:
  sexpgpu predict runs/mnist1d-mlp-3f2a9c1d --input rows.npy
  sexpgpu predict runs/mnist1d-mlp-3f2a9c1d --input rows.npy --out logits.npy
"""


def _save(path: Path, array: np.ndarray) -> None:
    buf = io.BytesIO()
    np.save(buf, array)
    write_bytes_atomic(path, buf.getvalue())


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "predict", argv)
    run = load_run(args["RUN"], args["--checkpoint"], runs=args["--runs"])
    sys.stderr.write(f"predict: {run.run_dir.name} at {run.checkpoint.name}\n")
    out = predict_file(run, Path(args["--input"]))
    flat = out.reshape(len(out), -1)
    best = flat.argmax(axis=1)
    if args["--out"]:
        _save(Path(args["--out"]), out)
        sys.stderr.write(f"wrote {args['--out']}: {out.shape} {out.dtype}\n")
    if args["--json"]:
        payload = {"argmax": best.tolist(), "shape": list(out.shape),
                   "outputs": None if args["--out"] else out.tolist()}
        print_json(payload)
    elif not args["--out"]:
        for row, (k, value) in enumerate(zip(best, flat.max(axis=1))):
            sys.stdout.write(f"{row}\t{int(k)}\t{float(value):.6g}\n")
    return 0
