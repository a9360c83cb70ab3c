"""`predict` over a file: the rows of a .npy array through a run's forward, checked
against the forward's input (one row's shape, a dtype numpy can cast safely)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sexpgpu.data.errors import data_error
from sexpgpu.data.files import load_npy
from sexpgpu.diagnostics import error
from sexpgpu.inference.load import LoadedRun
from sexpgpu.runtime.compiled import NP_DTYPES
from sexpgpu.trace.step import E_PREDICT


def input_field(run: LoadedRun) -> tuple[str, tuple[int, ...], str]:
    """The forward's one input (name, one row's shape, dtype): `predict` feeds a file."""
    fields = run.fields()
    if len(fields) != 1:
        shown = ", ".join(f":{k}" for k in fields) or "none"
        raise error(E_PREDICT, "`predict --input` feeds one array; defpredict takes "
                    f"{len(fields)} fields", run.compiled.experiment.span("defpredict"),
                    expected="(defpredict (model &key x) ...) with one batch field",
                    actual=shown, fix="take one field in defpredict, or call "
                    "sexpgpu.load_run(DIR).forward(...) from Python with every field")
    (name, (shape, dtype)), = fields.items()
    return name, shape, dtype


def read_rows(path: Path, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """The rows of `path`, shape (N, *shape); E-DATA when they do not fit the input."""
    array = load_npy(Path(path))
    want = np.dtype(NP_DTYPES[dtype])
    expected = f"an array of shape (N, {', '.join(map(str, shape))}) of {want}"
    if array.ndim != len(shape) + 1 or tuple(array.shape[1:]) != shape or len(array) == 0:
        raise data_error(path, "the rows do not fit the forward's input", expected=expected,
                         actual=f"shape {array.shape} of {array.dtype}",
                         fix="save rows shaped like one training sample, batch first")
    kind_ok = np.can_cast(array.dtype, want, "same_kind") or (
        want.kind == "f" and array.dtype.kind in "iu")
    if not kind_ok:
        raise data_error(path, f"{array.dtype} rows cannot feed a {want} input",
                         expected=expected, actual=f"shape {array.shape} of {array.dtype}",
                         fix=f"save the array as {want}")
    return array.astype(want)


def predict_file(run: LoadedRun, path: Path) -> np.ndarray:
    """The forward's output for every row of the .npy file at `path`."""
    name, shape, dtype = input_field(run)
    return run.forward(**{name: read_rows(path, shape, dtype)})
