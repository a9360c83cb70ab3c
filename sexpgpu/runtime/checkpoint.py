"""Checkpoints: `checkpoints/step-NNNNNN/` with params, optimizer state and meta.

meta.json holds the step, ctx, RNG seed, loader positions and the plan hash.
A checkpoint is written into a temp directory, every file fsynced, the manifest
(sha256 of each file) written last, then the directory renamed into place, so a
directory named `step-*` with a manifest that verifies is complete. `latest` is
the newest one that verifies; a torn or corrupt one is skipped, never chosen.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from sexpgpu.atomic import dumps, fsync_dir, write_file_synced
from sexpgpu.diagnostics import define_code, error

E_CHECKPOINT = define_code(
    "E-CHECKPOINT", "no usable checkpoint",
    "`--resume` named a checkpoint that does not exist, does not verify (torn or corrupt), "
    "or does not fit the program (a parameter is missing or has another shape), or "
    "`--resume latest` found no run to continue.",
)

FORMAT = 1
_NAME = re.compile(r"^step-(\d{6,})$")


def checkpoint_dir(run_dir: Path) -> Path:
    return Path(run_dir) / "checkpoints"


def checkpoint_name(step: int) -> str:
    return f"step-{step:06d}"


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **{name: np.asarray(a) for name, a in arrays.items()})
    return buf.getvalue()


def write_checkpoint(run_dir: Path, step: int, params: dict[str, np.ndarray],
                     state: dict[str, np.ndarray], meta: dict[str, Any]) -> Path:
    """Write step-NNNNNN atomically and return its path."""
    root = checkpoint_dir(run_dir)
    root.mkdir(parents=True, exist_ok=True)
    final = root / checkpoint_name(step)
    tmp = root / f".tmp-{final.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    files = {
        "params.npz": _npz_bytes(params),
        "state.npz": _npz_bytes(state),
        "meta.json": dumps({**meta, "step": step, "format": FORMAT}),
    }
    manifest = {"format": FORMAT, "step": step, "files": {}}
    for name, data in files.items():
        write_file_synced(tmp / name, data)
        manifest["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    write_file_synced(tmp / "manifest.json", dumps(manifest))  # last: it marks completeness
    fsync_dir(tmp)
    if final.exists():  # a run resumed before this step wrote it once already
        old = root / f".old-{final.name}-{os.getpid()}"
        os.rename(final, old)
        os.rename(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, final)
    fsync_dir(root)
    return final


def verify(path: Path) -> str | None:
    """None when the checkpoint is complete and intact, else what is wrong with it."""
    path = Path(path)
    try:
        manifest = orjson.loads((path / "manifest.json").read_bytes())
    except FileNotFoundError:
        return "no manifest.json (the write never finished)"
    except orjson.JSONDecodeError:
        return "manifest.json is not valid JSON"
    for name, entry in manifest.get("files", {}).items():
        try:
            data = (path / name).read_bytes()
        except FileNotFoundError:
            return f"{name} is missing"
        if len(data) != entry["bytes"]:
            return f"{name} has {len(data)} bytes, the manifest says {entry['bytes']}"
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            return f"{name} does not match its sha256"
    return None


def list_checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    """Every step-NNNNNN directory, oldest first (verified or not)."""
    root = checkpoint_dir(run_dir)
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if (m := _NAME.match(p.name))]
    return sorted(found)


def latest_valid(run_dir: Path,
                 on_skip: Callable[[Path, str], None] | None = None) -> Path | None:
    """The newest checkpoint that verifies; each newer bad one is reported to on_skip."""
    for _, path in reversed(list_checkpoints(run_dir)):
        problem = verify(path)
        if problem is None:
            return path
        if on_skip is not None:
            on_skip(path, problem)
    return None


@dataclass
class Checkpoint:
    path: Path
    params: dict[str, np.ndarray]
    state: dict[str, np.ndarray]
    meta: dict[str, Any]

    @property
    def step(self) -> int:
        return int(self.meta["step"])


def read_meta(path: Path) -> dict[str, Any]:
    return orjson.loads((Path(path) / "meta.json").read_bytes())


def load_checkpoint(path: Path) -> Checkpoint:
    """Read a checkpoint that must verify (E-CHECKPOINT otherwise)."""
    path = Path(path)
    problem = verify(path) if path.is_dir() else "no such checkpoint directory"
    if problem is not None:
        raise error(E_CHECKPOINT, f"checkpoint {path} cannot be used: {problem}",
                    fix="resume from another checkpoint (`sexpgpu checkpoint ls RUN`)")

    def arrays(name: str) -> dict[str, np.ndarray]:
        with np.load(path / name, allow_pickle=False) as archive:
            return {k: archive[k] for k in archive.files}

    return Checkpoint(path, arrays("params.npz"), arrays("state.npz"), read_meta(path))


def restore_arrays(kind: str, live: dict[str, np.ndarray], saved: dict[str, np.ndarray],
                   path: Path) -> None:
    """Copy saved values into the program's own arrays, in place (same names and shapes)."""
    if set(live) != set(saved):
        missing = sorted(set(live) ^ set(saved))
        raise error(E_CHECKPOINT, f"checkpoint {path} does not fit the program",
                    expected=f"{kind} {sorted(live)}", actual=f"{kind} {sorted(saved)}",
                    fix=f"these {kind} names differ: {', '.join(missing)}")
    for name, array in live.items():
        if array.shape != saved[name].shape:
            raise error(E_CHECKPOINT, f"checkpoint {path} does not fit the program",
                        expected=f"{kind} {name} of shape {array.shape}",
                        actual=f"shape {saved[name].shape}")
        array[...] = saved[name]


def remove_stale_temps(run_dir: Path) -> None:
    """Delete half-written `.tmp-*` directories left by a process killed mid-write."""
    root = checkpoint_dir(run_dir)
    if root.is_dir():
        for path in root.glob(".tmp-step-*"):
            shutil.rmtree(path, ignore_errors=True)


def prune(run_dir: Path, keep: int, protect: Path) -> None:
    """Keep the newest `keep` checkpoints (always `protect`, the one just written)."""
    if keep <= 0:
        return
    for _, path in list_checkpoints(run_dir)[:-keep]:
        if path != protect:
            shutil.rmtree(path, ignore_errors=True)
