"""The batch fields a loader hands the objective, as (shape of one sample, dtype),
worked out from the declaration and the data's headers alone: `check` never reads
data. npy/npz headers and file sizes are read when the files are there, and every
problem they reveal (arrays of different lengths, too few tokens, a dtype no
tensor has) is E-DATA at check. A missing file is W-DATA-ABSENT where the shapes
are known without it (text and tokens, from :context; npz/npy arrays whose shapes
the loader declares with :shapes); otherwise npz/npy shapes come from their
headers, so those files must exist."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from sexpgpu.contract.collect import E_LOADER
from sexpgpu.data.errors import E_DATA
from sexpgpu.data.spec import LoaderSpec
from sexpgpu.diagnostics import Diagnostic, Span, define_code, error
from sexpgpu.ir.types import DTYPES
from sexpgpu.s3.cache import local_copy
from sexpgpu.s3.store import is_s3

W_DATA_ABSENT = define_code(
    "W-DATA-ABSENT", "data file absent: checked without it",
    "A loader's data file does not exist, but the shapes of its batches are known "
    "without it (text and token sources take them from :context, npz/npy sources from "
    "a declared :shapes), so `check` traced "
    "every graph anyway. What only the data can tell (file size, the vocabulary) was "
    "not checked; `run` needs the file and stops with E-DATA before the first step.",
)

Field = tuple[tuple[int, ...], str]


def resolve_path(raw: Any, base: Path) -> Path:
    if is_s3(raw):  # an S3 object: its verified copy, downloaded once into the cache
        return local_copy(str(raw))
    path = Path(str(raw)).expanduser()
    return path if path.is_absolute() else base / path


def ir_dtype(kind: str, itemsize: int) -> str | None:
    """The tensor dtype an array of numpy kind/itemsize is fed as (the runtime converts
    it); None when no tensor holds it (complex, strings, objects, dates)."""
    if kind == "b":
        return "bool"
    if kind == "f":
        return "f16" if itemsize == 2 else "f32"
    if kind == "i":
        return "i64" if itemsize == 8 else "i32"
    if kind == "u":
        return "i64" if itemsize >= 4 else "i32"
    return None


class Header:
    """What one .npy header says: the full shape and the numpy dtype."""

    def __init__(self, shape: tuple[int, ...], kind: str, itemsize: int, name: str):
        self.shape, self.kind, self.itemsize, self.name = shape, kind, itemsize, name


def _read_header(fh: Any) -> tuple[tuple[int, ...], Any]:
    import numpy as np  # only npy/npz loaders read headers: kept off check's import path

    fmt = np.lib.format
    version = fmt.read_magic(fh)
    read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
    shape, _, dtype = read(fh)
    return tuple(shape), np.dtype(dtype)


def _zipfile() -> Any:
    # zipfile (with shutil, bz2 and lzma) only for npz archives: off check's imports
    import zipfile
    return zipfile


def npy_header(path: Path, member: str | None = None) -> Header:
    """The header of an .npy file, or of `member` inside an .npz archive."""
    if member is None:
        with open(path, "rb") as fh:
            shape, dtype = _read_header(fh)
    else:
        zipfile = _zipfile()
        with zipfile.ZipFile(path) as archive, archive.open(member + ".npy") as fh:
            shape, dtype = _read_header(fh)
    return Header(shape, dtype.kind, dtype.itemsize, dtype.name)


class FieldReader:
    """Works out one loader's fields; warnings (W-DATA-ABSENT) are collected."""

    def __init__(self, spec: LoaderSpec, base: Path, span: Span | None,
                 warnings: list[Diagnostic] | None = None):
        self.spec, self.base, self.span = spec, base, span
        self.warnings = warnings if warnings is not None else []

    # -- diagnostics ------------------------------------------------------------

    def _data_error(self, path: Any, what: str, *, expected: str, actual: str,
                    fix: str) -> Exception:
        return error(E_DATA, f"defloader {self.spec.name}: {path}: {what}", self.span,
                     expected=expected, actual=actual, fix=fix)

    def _missing(self, path: Path) -> Exception:
        return self._data_error(
            path, "file not found", expected="an existing readable file, or the arrays' "
            "shapes declared with :shapes", actual="file not found",
            fix="create the file or point the loader elsewhere (or --set the knob that holds "
            "the path); to check without it, declare :shapes '(:x ((40) :f32) :y (() :i64))")

    def _absent(self, path: Path, shapes_from: str) -> None:
        self.warnings.append(Diagnostic(
            W_DATA_ABSENT, f"defloader {self.spec.name}: {path} does not exist: checked "
            "without it", self.span, expected="the data file (for `run`)",
            actual="file not found", fix="create the file or --set the knob that holds "
            f"its path before `sexpgpu run`; shapes came from {shapes_from}"))

    def _declared(self) -> dict[str, Field] | None:
        """npz/npy `:shapes '(:x ((40) :f32) :y (() :i64))`: each array's shape of one
        sample and dtype, so check works without the file (and compares the header)."""
        shapes = self.spec.options.get("shapes")
        if shapes is None:
            return None
        out: dict[str, Field] = {}
        for name, entry in (shapes.items() if isinstance(shapes, dict) else [(None, shapes)]):
            dims, dtype = (entry + [None, None])[:2] if isinstance(entry, list) else (None, None)
            dims = [] if dims is None else dims
            if (name is None or not isinstance(dims, list) or dtype not in DTYPES
                    or not all(isinstance(d, int) and d > 0 for d in dims)):
                raise error(E_LOADER, f"defloader {self.spec.name}: malformed :shapes",
                            self.span, expected="'(:NAME ((DIM ...) :DTYPE) ...), e.g. "
                            "'(:x ((40) :f32) :y (() :i64))", actual=str(shapes),
                            fix="one entry per array: its shape of one sample, then its dtype")
            out[name] = (tuple(dims), dtype)
        return out

    # -- sources -----------------------------------------------------------------

    def fields(self) -> dict[str, Field]:
        """Field name -> (per-sample shape, dtype), after :fields selects and renames."""
        spec = self.spec
        opts = spec.options
        if spec.source == "mnist1d":
            length = int(opts.get("final_seq_length", 40))
            raw = {"x": ((length,), "f32"), "y": ((), "i64")}
        elif spec.source == "synthetic":
            dim = int(opts.get("dim", 8))
            task = str(opts.get("task", ""))
            raw = {"x": ((dim,), "f32"),
                   "y": ((), "f32" if task == "linear-regression" else "i64")}
        elif spec.source in ("text", "tokens"):
            raw = self._stream()
        elif spec.source in ("npz", "npy"):
            raw = self._named_arrays()
        else:
            raw = {}
        if spec.fields:
            missing = [src for src in spec.fields.values() if src not in raw]
            if missing:
                raise error(E_LOADER, f"defloader {spec.name}: no array `{missing[0]}`",
                            self.span, expected=", ".join(sorted(raw)), actual=missing[0],
                            fix="change the loader's :fields")
            return {out: raw[src] for out, src in spec.fields.items()}
        return raw

    def _stream(self) -> dict[str, Field]:
        """text and tokens: windows of :context ids; the file's size says whether it
        holds one window (and each split of a text one)."""
        spec, opts = self.spec, self.spec.options
        context = int(opts.get("context", 0))
        if context < 1:
            raise error(E_LOADER, f"defloader {spec.name}: {spec.source} needs :context",
                        self.span, expected=":context N (tokens per window)", actual="none",
                        fix=f"({spec.source} PATH :context 64)")
        path = resolve_path(opts.get("path"), self.base)
        if not path.is_file():
            self._absent(path, ":context")
        elif spec.source == "text":
            self._text_size(path, context)
        else:
            self._token_count(path, context)
        return {"x": ((context,), "i64"), "y": ((context,), "i64")}

    def _text_size(self, path: Path, context: int) -> None:
        size = path.stat().st_size  # characters <= bytes: an upper bound on the tokens
        fraction = float(self.spec.options.get("val_fraction", 0.1))
        split = str(self.spec.options.get("split", "train"))
        most = (int(size * (1.0 - fraction)) if split == "train"
                else math.ceil(size * fraction))
        if most < context + 1:
            raise self._data_error(
                path, f"too short for one window of the {split} split",
                expected=f"at least context + 1 = {context + 1} characters in the split",
                actual=f"{size} bytes in the file, at most {most} in the {split} split",
                fix="use a longer text or a smaller :context")

    def _token_count(self, path: Path, context: int) -> None:
        if path.suffix == ".npy":
            header = self._header(path, None)
            if len(header.shape) != 1 or header.kind not in "iu":
                raise self._data_error(
                    path, "a token stream must be a flat integer array",
                    expected="a 1-D integer array", actual=f"{header.name} {header.shape}",
                    fix="save the tokens with numpy.save(path, ids.ravel())")
            count = header.shape[0]
        else:
            import numpy as np  # the item size of the declared token dtype

            itemsize = np.dtype(self.spec.options.get("dtype", "uint16")).itemsize
            size = path.stat().st_size
            if size % itemsize:
                raise self._data_error(
                    path, "file size is not a whole number of tokens",
                    expected=f"a multiple of {itemsize} bytes", actual=f"{size} bytes",
                    fix="set :dtype to the file's token type")
            count = size // itemsize
        if count < context + 1:
            raise self._data_error(
                path, "too few tokens for one window",
                expected=f"at least context + 1 = {context + 1} tokens",
                actual=f"{count} tokens", fix="use more data or a smaller :context")

    def _header(self, path: Path, member: str | None) -> Header:
        zipfile = _zipfile()
        try:
            return npy_header(path, member)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            kind = "npz" if member is not None else "npy"
            raise self._data_error(path, f"not a readable .{kind} file ({exc})",
                                   expected=f"an .{kind} file numpy can read", actual=str(exc),
                                   fix=f"rewrite it with numpy.{'savez' if member else 'save'}"
                                   ) from None

    def _named_arrays(self) -> dict[str, Field]:
        """npz/npy fields from the headers; from :shapes when the file is absent (and
        then the header must agree with :shapes when it is there)."""
        declared = self._declared()
        read = self._npz_headers if self.spec.source == "npz" else self._npy_headers
        headers = read(declared is not None)
        if headers is None:
            assert declared is not None
            return declared
        raw = self._arrays(headers)
        for name, field in (declared or {}).items():
            if raw.get(name) != field:
                path = headers[name][0] if name in headers else next(iter(headers.values()))[0]
                found = f"{_show(raw[name])}" if name in raw else "no such array"
                raise self._data_error(path, f"array `{name}` is not what :shapes declares",
                                       expected=f"{name} {_show(field)}",
                                       actual=f"{name} {found}",
                                       fix="correct :shapes, or the file")
        return raw

    def _npz_headers(self, optional: bool = False) -> dict[str, tuple[Path, Header]] | None:
        path = resolve_path(self.spec.options.get("path"), self.base)
        if not path.is_file():
            if optional:
                self._absent(path, ":shapes")
                return None
            raise self._missing(path)
        zipfile = _zipfile()
        try:
            with zipfile.ZipFile(path) as archive:
                names = [n[:-4] for n in archive.namelist() if n.endswith(".npy")]
        except (OSError, zipfile.BadZipFile) as exc:
            raise self._data_error(path, f"not a readable .npz file ({exc})",
                                   expected="an .npz archive", actual=str(exc),
                                   fix="rewrite it with numpy.savez") from None
        return {name: (path, self._header(path, name)) for name in names}

    def _npy_headers(self, optional: bool = False) -> dict[str, tuple[Path, Header]] | None:
        paths = self.spec.options.get("path")
        named = (paths if isinstance(paths, dict)
                 else {str(self.spec.options.get("field", "x")): paths})
        out = {}
        for name, raw_path in named.items():
            path = resolve_path(raw_path, self.base)
            if not path.is_file():
                if optional:
                    self._absent(path, ":shapes")
                    return None
                raise self._missing(path)
            out[name] = (path, self._header(path, None))
        return out

    def _arrays(self, headers: dict[str, tuple[Path, Header]]) -> dict[str, Field]:
        """Fields of named arrays: the ones the loader reads (its :fields, else all) must
        each have rows, share their number of rows and have a tensor dtype."""
        wanted = list(self.spec.fields.values()) or list(headers)
        rows: dict[str, int] = {}
        raw: dict[str, Field] = {}
        for name, (path, header) in headers.items():
            dtype = ir_dtype(header.kind, header.itemsize)
            if name not in wanted:
                raw[name] = (header.shape[1:], dtype or "f32")  # listed, never read
                continue
            if not header.shape:
                raise self._data_error(
                    path, f"array `{name}` is a scalar: it has no rows",
                    expected="an array with one row per sample", actual=f"{name} shape ()",
                    fix="leave it out with the loader's :fields")
            if dtype is None:
                raise self._data_error(
                    path, f"array `{name}` holds {header.name}, not numbers a tensor holds",
                    expected="bool, integer or float", actual=header.name,
                    fix="convert it before saving, or leave it out with :fields")
            if header.shape[0] == 0:
                raise self._data_error(
                    path, f"array `{name}` has no rows", expected="at least one sample",
                    actual=f"{name} shape {header.shape}", fix="write the samples into it")
            rows[name] = header.shape[0]
            raw[name] = (header.shape[1:], dtype)
        if len(set(rows.values())) > 1:
            listing = ", ".join(f"{name} {count}" for name, count in rows.items())
            path = next(iter(headers.values()))[0]
            raise self._data_error(
                path, "the arrays this loader reads have different numbers of rows",
                expected="one row per sample in every array read together", actual=listing,
                fix="select arrays of one split with :fields, e.g. :fields (:x \"x\" :y \"y\")"
                if not self.spec.fields else "fix the arrays, or select matching ones with "
                ":fields")
        return raw


def _show(field: Field) -> str:
    shape, dtype = field
    return f"({' '.join(map(str, shape))}) {dtype}"


def batch_fields(spec: LoaderSpec, base: Path, span: Span | None,
                 warnings: list[Diagnostic] | None = None) -> dict[str, Field]:
    """Field name -> (per-sample shape, dtype) for the loader's (first stage's) source;
    W-DATA-ABSENT warnings are appended to `warnings`."""
    return FieldReader(spec, base, span, warnings).fields()
