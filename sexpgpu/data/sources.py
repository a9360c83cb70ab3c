"""The built-in sources by name: `open_source("mnist1d", {"split": "train"}, base_dir)`.

Each source turns its options into an ArrayData or a TokenData. Option names use
underscores (the compiler maps `:val-fraction` to `val_fraction`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable, Collection
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from sexpgpu import env
from sexpgpu.atomic import dumps, fsync_dir
from sexpgpu.data import mnist1d
from sexpgpu.data.dataset import ArrayData, TokenData
from sexpgpu.data.errors import data_error
from sexpgpu.data.files import npy_source, npz_source, tokens_source
from sexpgpu.data.synthetic import synthetic_source
from sexpgpu.data.text import text_source

Data = ArrayData | TokenData


@lru_cache(maxsize=4)
def _mnist1d_arrays(args: mnist1d.Mnist1dArgs) -> dict[str, np.ndarray]:
    """Generate once per process, and once per machine through the data cache."""
    key = hashlib.sha256(dumps(args.to_json())).hexdigest()[:16]
    cache = env.cache_dir() / "data" / f"mnist1d-{key}.npz"
    if cache.exists():
        try:
            with np.load(cache, allow_pickle=False) as archive:
                return {name: archive[name] for name in archive.files}
        except (ValueError, OSError, EOFError):
            pass  # a damaged cache entry is regenerated below
    arrays = mnist1d.generate(args)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(f".{cache.name}.tmp-{os.getpid()}.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, cache)
    fsync_dir(cache.parent)
    return arrays


def mnist1d_source(options: dict[str, Any]) -> ArrayData:
    """`(mnist1d :split :train|:test [:seed 42 ...])`: x float32 (N, 40), y int64 (N,)."""
    names = {f.name for f in dataclasses.fields(mnist1d.Mnist1dArgs)}
    overrides = {k: v for k, v in options.items() if k in names}
    unknown = set(options) - names - {"split", "dtype"}
    if unknown:
        raise data_error(
            None, f"mnist1d has no option {sorted(unknown)[0]!r}",
            expected="split, dtype or " + ", ".join(sorted(names)),
        )
    if "padding" in overrides:
        overrides["padding"] = tuple(overrides["padding"])
    args = mnist1d.Mnist1dArgs(**overrides)
    if not isinstance(args.num_samples, int) or args.num_samples < mnist1d.DIGITS:
        raise data_error(None, f"mnist1d cannot make {args.num_samples!r} samples",
                         expected=f"num-samples of at least {mnist1d.DIGITS} (one a digit)")
    arrays = _mnist1d_arrays(args)
    split = str(options.get("split", "train"))
    if split not in ("train", "test"):
        raise data_error(None, f"mnist1d has no split {split!r}", expected="train or test")
    suffix = "" if split == "train" else "_test"
    dtype = np.dtype(options.get("dtype", "float32"))
    # the reference's training code casts to float32 (torch.Tensor) just like this
    return ArrayData(
        {"x": arrays["x" + suffix].astype(dtype), "y": arrays["y" + suffix].astype(np.int64)},
        origin=f"mnist1d {split}",
    )


SOURCES: dict[str, Callable[[dict[str, Any], Path], Data]] = {
    "mnist1d": lambda options, base: mnist1d_source(options),
    "npz": npz_source,
    "npy": npy_source,
    "tokens": tokens_source,
    "text": text_source,
    "synthetic": lambda options, base: synthetic_source(options),
}
# sources of named arrays that can read only the arrays a loader's :fields select
SELECTING = {"npz": npz_source, "npy": npy_source}


def open_source(name: str, options: dict[str, Any], base_dir: Path,
                names: Collection[str] | None = None) -> Data:
    """Open a source by name; unknown names and unreadable files are E-DATA. `names`: the
    arrays the loader reads (its :fields), when it selects; only those must fit together."""
    key = name.lstrip(":")
    if names and key in SELECTING:
        return SELECTING[key](dict(options), Path(base_dir), names)
    opener = SOURCES.get(key)
    if opener is None:
        raise data_error(None, f"unknown data source {name!r}", expected=", ".join(SOURCES))
    return opener(dict(options), Path(base_dir))
