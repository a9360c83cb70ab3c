"""File sources: npy/npz arrays and flat token files (read by memory map)."""

from __future__ import annotations

import zipfile
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np

from sexpgpu.data.dataset import ArrayData, TokenData
from sexpgpu.data.errors import data_error
from sexpgpu.s3.cache import local_copy
from sexpgpu.s3.store import is_s3


def resolve(path: Any, base_dir: Path) -> Path:
    """A data path: absolute, relative to the run file's directory, or `s3://BUCKET/KEY`
    (the object's verified copy in the cache)."""
    if not isinstance(path, (str, Path)) or str(path) == "":
        raise data_error(None, "the source needs a :path", fix="add :path \"data/file.npz\"")
    if is_s3(path):
        return local_copy(str(path))
    p = Path(path).expanduser()
    return p if p.is_absolute() else (base_dir / p)


def _require_file(path: Path) -> None:
    if not path.exists():
        raise data_error(path, "no such file", fix="check the path (relative to the run file)")
    if not path.is_file():
        raise data_error(path, "not a regular file")


def load_npy(path: Path, mmap: bool = False) -> np.ndarray:
    _require_file(path)
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise data_error(path, f"not a readable .npy file ({exc})") from None


def npz_source(options: dict[str, Any], base_dir: Path,
               names: Collection[str] | None = None) -> ArrayData:
    """`(npz :path P)`: the arrays in the archive by name; `names` (the loader's :fields)
    reads only those, so one file can hold a train and a test split of other lengths."""
    path = resolve(options.get("path"), base_dir)
    _require_file(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            _require_names(path, names, archive.files)
            arrays = {name: archive[name] for name in archive.files
                      if not names or name in names}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise data_error(path, f"not a readable .npz archive ({exc})") from None
    return ArrayData(arrays, origin=str(path))


def _require_names(path: Path, names: Collection[str] | None, present: list[str]) -> None:
    missing = sorted(set(names or ()) - set(present))
    if missing:
        raise data_error(path, f"the source has no array {missing[0]!r}",
                         expected=", ".join(sorted(present)), fix="change the loader's :fields")


def npy_source(options: dict[str, Any], base_dir: Path,
               names: Collection[str] | None = None) -> ArrayData:
    """`(npy :path P :field x)` or `(npy :path (:x "x.npy" :y "y.npy"))`; `names` reads
    only those files."""
    paths = options.get("path")
    if isinstance(paths, dict):
        _require_names(resolve(next(iter(paths.values())), base_dir), names, list(paths))
        arrays = {name: load_npy(resolve(p, base_dir)) for name, p in paths.items()
                  if not names or name in names}
        return ArrayData(arrays, origin=", ".join(str(p) for p in paths.values()))
    path = resolve(paths, base_dir)
    return ArrayData({options.get("field", "x"): load_npy(path)}, origin=str(path))


def tokens_source(options: dict[str, Any], base_dir: Path) -> TokenData:
    """`(tokens :path P :dtype uint16 :context T)`: a raw .bin (nanoGPT) or a 1-D .npy."""
    path = resolve(options.get("path"), base_dir)
    _require_file(path)
    context = int(options.get("context", 0))
    if path.suffix == ".npy":
        tokens = load_npy(path, mmap=True)
    else:
        dtype = np.dtype(options.get("dtype", "uint16"))
        if path.stat().st_size % dtype.itemsize:
            raise data_error(
                path, "file size is not a whole number of tokens",
                expected=f"a multiple of {dtype.itemsize} bytes ({dtype})",
                actual=f"{path.stat().st_size} bytes", fix="set :dtype to the file's token type",
            )
        if path.stat().st_size == 0:
            raise data_error(path, "the token file is empty")
        tokens = np.memmap(path, dtype=dtype, mode="r")
    return TokenData(tokens, context, options.get("vocab_size"), origin=str(path))
