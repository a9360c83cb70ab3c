"""A run's parameters as one file another framework reads: npz (numpy, always) or
safetensors (the `safetensors` package's numpy API, an optional extra). Tensor names are
the parameter paths (`blocks/0/attn/qkv/weight`); a tied parameter is stored once, under
its owner's path, and the metadata names its other uses."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import orjson

from sexpgpu.atomic import write_bytes_atomic
from sexpgpu.diagnostics import error
from sexpgpu.inference.load import LoadedRun
from sexpgpu.usage import E_USAGE, UsageError

FORMATS = ("npz", "safetensors")


def metadata(run: LoadedRun) -> dict[str, str]:
    """Where the tensors came from, as strings (safetensors metadata is str -> str)."""
    return {"sexpgpu.run": run.run_dir.name, "sexpgpu.checkpoint": run.checkpoint.name,
            "sexpgpu.plan_hash": str(run.plan.get("plan_hash", "")),
            "sexpgpu.aliases": orjson.dumps(run.compiled.aliases).decode()}


def check_format(fmt: str) -> None:
    """E-USAGE for a format export does not write."""
    if fmt not in FORMATS:
        raise UsageError(*error(E_USAGE, f"--format {fmt}: not a format export writes",
                                expected=" or ".join(FORMATS), actual=fmt,
                                fix="--format npz").diagnostics)


def export_bytes(run: LoadedRun, fmt: str) -> bytes:
    """The parameters of `run` in format `fmt` (npz or safetensors)."""
    check_format(fmt)
    arrays = {path: np.ascontiguousarray(a) for path, a in run.params.items()}
    if fmt == "npz":
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        return buf.getvalue()
    if fmt == "safetensors":
        try:
            # an optional extra (pip install 'sexpgpu[export]'): only this format needs it
            from safetensors.numpy import save
        except ImportError:
            raise UsageError(*error(
                E_USAGE, "--format safetensors needs the safetensors package",
                expected="safetensors installed", actual="not importable",
                fix="pip install 'sexpgpu[export]' (or --format npz, which needs nothing)",
            ).diagnostics) from None
        return save(arrays, metadata=metadata(run))


def export_run(run: LoadedRun, fmt: str, out: Path) -> int:
    """Write the export atomically; returns its size in bytes."""
    data = export_bytes(run, fmt)
    write_bytes_atomic(Path(out), data)
    return len(data)
