"""The batch fields a loader hands the objective, as (shape of one sample, dtype),
worked out from the declaration alone: `check` reads no data. Files are only
required to exist (npz/npy headers are read, never their arrays)."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

from sexpgpu.contract.collect import E_LOADER
from sexpgpu.data.errors import E_DATA
from sexpgpu.data.spec import LoaderSpec
from sexpgpu.diagnostics import Span, error

Field = tuple[tuple[int, ...], str]

_NP_DTYPES = {"float32": "f32", "float64": "f32", "float16": "f16", "int64": "i64",
              "int32": "i32", "int16": "i32", "uint8": "i32", "uint16": "i32", "bool": "bool"}


def _data_error(path: Any, what: str, span: Span | None, fix: str) -> Exception:
    return error(E_DATA, f"{path}: {what}", span, expected="an existing readable file",
                 actual=what, fix=fix)


def resolve_path(raw: Any, base: Path) -> Path:
    path = Path(str(raw)).expanduser()
    return path if path.is_absolute() else base / path


def _need_file(path: Path, span: Span | None, knob_hint: str) -> None:
    if not path.is_file():
        raise _data_error(path, "file not found", span,
                          f"create the file or point the loader elsewhere{knob_hint}")


def _header(path: Path, member: str | None) -> tuple[tuple[int, ...], str]:
    """Shape and dtype from an .npy header (inside an .npz when member is given)."""
    import numpy as np  # only npy/npz loaders read headers: kept off check's import path

    def read(fh: Any) -> tuple[tuple[int, ...], str]:
        fmt = np.lib.format
        version = fmt.read_magic(fh)
        header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, _, dtype = header(fh)
        where = f"{path.name}:{member}" if member else path.name
        if np.dtype(dtype).kind not in "biuf":  # objects (pickles), strings, records
            raise ValueError(f"{where} holds {np.dtype(dtype)}, not numbers")
        if not shape or shape[0] == 0:
            raise ValueError(f"{where} has no rows (shape {tuple(shape)})")
        return tuple(shape), _NP_DTYPES.get(np.dtype(dtype).name, "f32")

    if member is None:
        with open(path, "rb") as fh:
            return read(fh)
    with zipfile.ZipFile(path) as archive, archive.open(member + ".npy") as fh:
        return read(fh)


def batch_fields(spec: LoaderSpec, base: Path, span: Span | None) -> dict[str, Field]:
    """Field name -> (per-sample shape, dtype) for the loader's (first stage's) source."""
    opts = spec.options
    hint = " (or --set the knob that holds the path)"
    if spec.source == "mnist1d":
        length = int(opts.get("final_seq_length", opts.get("final-seq-length", 40)))
        raw = {"x": ((length,), "f32"), "y": ((), "i64")}
    elif spec.source == "synthetic":
        dim = int(opts.get("dim", 8))
        task = str(opts.get("task", ""))
        raw = {"x": ((dim,), "f32"), "y": ((), "f32" if task == "linear-regression" else "i64")}
    elif spec.source in ("text", "tokens"):
        context = int(opts.get("context", 0))
        if context < 1:
            raise error(E_LOADER, f"defloader {spec.name}: {spec.source} needs :context", span,
                        expected=":context N (tokens per window)", actual="none",
                        fix=f"({spec.source} PATH :context 64)")
        _need_file(resolve_path(opts.get("path"), base), span, hint)
        raw = {"x": ((context,), "i64"), "y": ((context,), "i64")}
    elif spec.source == "npz":
        path = resolve_path(opts.get("path"), base)
        _need_file(path, span, hint)
        try:
            with zipfile.ZipFile(path) as archive:
                names = [n[:-4] for n in archive.namelist() if n.endswith(".npy")]
            raw = {}
            for name in names:
                shape, dtype = _header(path, name)
                raw[name] = (shape[1:], dtype)
        except (OSError, ValueError, zipfile.BadZipFile) as exc:
            raise _data_error(path, f"not a readable npz of numbers ({exc})", span,
                              "rewrite it with numpy.savez") from None
    elif spec.source == "npy":
        paths = opts.get("path")
        named = paths if isinstance(paths, dict) else {str(opts.get("field", "x")): paths}
        raw = {}
        for name, raw_path in named.items():
            path = resolve_path(raw_path, base)
            _need_file(path, span, hint)
            try:
                shape, dtype = _header(path, None)
            except (OSError, ValueError, EOFError) as exc:
                raise _data_error(path, f"not a readable npy of numbers ({exc})", span,
                                  "rewrite it with numpy.save") from None
            raw[name] = (shape[1:], dtype)
    else:
        raw = {}
    if spec.fields:
        missing = [src for src in spec.fields.values() if src not in raw]
        if missing:
            raise error(E_LOADER, f"defloader {spec.name}: no array `{missing[0]}`", span,
                        expected=", ".join(sorted(raw)), actual=missing[0],
                        fix="change the loader's :fields")
        return {out: raw[src] for out, src in spec.fields.items()}
    return raw
