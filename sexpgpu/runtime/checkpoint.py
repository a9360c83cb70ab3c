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
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from sexpgpu.atomic import dumps, fsync_dir, write_file_synced
from sexpgpu.diagnostics import SexpError, define_code, error
from sexpgpu.runtime.schema import errors as schema_errors

E_CHECKPOINT = define_code(
    "E-CHECKPOINT", "no usable checkpoint",
    "`--resume` named a checkpoint that does not exist, does not verify (torn, corrupt, "
    "or malformed: a meta.json field of the wrong type, a step that disagrees with the "
    "manifest or the optimizer state, an array that is not numbers), or does not fit the "
    "program (a parameter or loader is missing or has another shape), or `--resume "
    "latest` found no run to continue.",
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
    """Write step-NNNNNN atomically and return its path. A write that fails (a full disk)
    removes its temp directory and leaves every earlier checkpoint as it was."""
    root = checkpoint_dir(run_dir)
    root.mkdir(parents=True, exist_ok=True)
    final = root / checkpoint_name(step)
    tmp = root / f".tmp-{final.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        _write_into(tmp, step, params, state, meta)
        _rename_into_place(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync_dir(root)
    return final


def _write_into(tmp: Path, step: int, params: dict[str, np.ndarray],
                state: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
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


def _rename_into_place(tmp: Path, final: Path) -> None:
    if not final.exists():
        os.rename(tmp, final)
        return
    # a run resumed before this step wrote it once already: swap, putting it back on failure
    old = _set_aside_name(final, "old")
    os.rename(final, old)
    try:
        os.rename(tmp, final)
    except BaseException:
        os.rename(old, final)
        raise
    shutil.rmtree(old, ignore_errors=True)


# What meta.json must hold (the loop writes more: rng, selection, last_eval, time).
META_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["step", "format", "plan_hash", "loaders"],
    "properties": {
        "step": {"type": "integer", "minimum": 0},
        "format": {"const": FORMAT},
        "plan_hash": {"type": "string"},
        "masters_hash": {"type": "string"},
        "precision": {"type": "string"},
        "ctx": {"type": "object", "required": ["step"],
                "properties": {"step": {"type": "integer", "minimum": 0}},
                "additionalProperties": {"type": "number"}},
        "rng": {"type": "object"},
        "loaders": {"type": "object", "additionalProperties": {"$ref": "#/$defs/position"}},
        "selection": {"type": "object"},
        "last_loss": {"type": ["number", "null"]},
        "last_eval": {"type": ["object", "null"],
                      "properties": {"step": {"type": "integer", "minimum": 0}},
                      "additionalProperties": {"type": ["number", "null"]}},
        "time": {"type": "number"},
    },
    "$defs": {
        "count": {"type": "integer", "minimum": 0},
        "position": {
            "type": "object", "required": ["samples", "tokens", "stages"],
            "properties": {
                "samples": {"$ref": "#/$defs/count"}, "tokens": {"$ref": "#/$defs/count"},
                "stages": {"type": "array", "items": {
                    "type": "object", "required": ["cursor", "draws"],
                    "properties": {"cursor": {"$ref": "#/$defs/count"},
                                   "draws": {"$ref": "#/$defs/count"}}}},
            },
        },
    },
}
FILES = ("params.npz", "state.npz", "meta.json")
_ARRAY_KINDS = "biuf"  # bool, signed, unsigned, float: never objects (pickles) or strings


def verify(path: Path) -> str | None:
    """None when the checkpoint is complete, intact and well-formed, else what is wrong
    with it: the manifest, each file's size and sha256, the meta's fields (and its step
    against the manifest and the directory name), and the arrays' headers (numbers only,
    no pickled objects). The one check every reader of a checkpoint goes through."""
    path = Path(path)
    try:
        manifest = orjson.loads((path / "manifest.json").read_bytes())
    except FileNotFoundError:
        return "no manifest.json (the write never finished)"
    except orjson.JSONDecodeError:
        return "manifest.json is not valid JSON"
    except OSError as exc:
        return f"manifest.json cannot be read ({exc.strerror or exc})"
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or sorted(files) != sorted(FILES):
        return f"manifest.json does not list exactly {', '.join(FILES)}"
    for name, entry in files.items():
        problem = _check_file(path / name, entry)
        if problem is not None:
            return problem
    try:
        meta = orjson.loads((path / "meta.json").read_bytes())
    except orjson.JSONDecodeError:
        return "meta.json is not valid JSON"
    wrong = schema_errors(meta, META_SCHEMA)
    if wrong:
        return f"meta.json is malformed: {wrong[0]}"
    named = _NAME.match(path.name)
    steps = {"meta.json": meta["step"], "manifest.json": manifest.get("step")}
    if named:
        steps["the directory name"] = int(named.group(1))
    if "ctx" in meta:
        steps["the meta's ctx"] = meta["ctx"]["step"]
    if len(set(steps.values())) != 1:
        return "the step disagrees: " + ", ".join(f"{k} says {v}" for k, v in steps.items())
    for name in ("params.npz", "state.npz"):
        problem = _check_arrays(path / name)
        if problem is not None:
            return problem
    return None


def _check_file(path: Path, entry: Any) -> str | None:
    if not (isinstance(entry, dict) and isinstance(entry.get("bytes"), int)
            and isinstance(entry.get("sha256"), str)):
        return f"manifest.json has no size and sha256 for {path.name}"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return f"{path.name} is missing"
    except OSError as exc:
        return f"{path.name} cannot be read ({exc.strerror or exc})"
    if len(data) != entry["bytes"]:
        return f"{path.name} has {len(data)} bytes, the manifest says {entry['bytes']}"
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        return f"{path.name} does not match its sha256"
    return None


def array_headers(path: Path) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Each array's (shape, dtype) from an npz's headers, without reading the data;
    ValueError (or zipfile.BadZipFile) when it is not an npz of .npy arrays."""
    out = {}
    with zipfile.ZipFile(path) as archive:
        for member in archive.namelist():
            if not member.endswith(".npy"):
                raise ValueError(f"{member} is not an .npy array")
            with archive.open(member) as fh:
                version = np.lib.format.read_magic(fh)
                read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                               else np.lib.format.read_array_header_2_0)
                shape, _, dtype = read_header(fh)
            out[member.removesuffix(".npy")] = (tuple(shape), np.dtype(dtype))
    return out


def _check_arrays(path: Path) -> str | None:
    try:
        headers = array_headers(path)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        return f"{path.name} is not an archive of arrays ({exc})"
    for name, (_, dtype) in headers.items():
        if dtype.kind not in _ARRAY_KINDS:
            return f"{path.name} holds {name} of dtype {dtype} (numbers only, never objects)"
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


def find_run(run: str, runs: str = "runs") -> Path:
    """The run directory RUN names: a path, or a run's name under `runs`."""
    for candidate in (Path(run), Path(runs) / run):
        if (candidate / "checkpoints").is_dir() or (candidate / "plan.json").exists():
            root = checkpoint_dir(candidate)
            if root.exists() and not root.is_dir():
                raise error(E_CHECKPOINT, f"{root} is a file, not a directory",
                            expected="a checkpoints directory", actual="a file",
                            fix="move the file away; checkpoints are directories under it")
            return candidate
    raise error(E_CHECKPOINT, f"no run {run!r}",
                actual=f"neither {run} nor {Path(runs) / run} is a run directory",
                fix="give a run directory, or its name with --runs DIR")


def pick(run_dir: Path, which: str | None) -> Path:
    """The checkpoint `which` names: latest (None), a step number, step-NNNNNN or a path."""
    if which in (None, "latest"):
        found = latest_valid(run_dir)
        if found is None:
            raise error(E_CHECKPOINT, f"run {run_dir.name} has no valid checkpoint")
        return found
    if Path(which).is_dir():  # a checkpoint directory given by its path
        return Path(which)
    if which.startswith("step-"):
        name = which
    elif which.isdigit():
        name = checkpoint_name(int(which))
    else:
        raise error(E_CHECKPOINT, f"no checkpoint {which!r} in run {run_dir.name}",
                    expected="latest, a step number, or a name like step-000400",
                    actual=which, fix="list them with `sexpgpu checkpoint ls RUN`")
    return checkpoint_dir(run_dir) / name


def read_meta(path: Path) -> dict[str, Any]:
    """meta.json of a checkpoint that `verify` passed."""
    return orjson.loads((Path(path) / "meta.json").read_bytes())


def checkpoint_error(path: Path, problem: str, **facts: Any) -> SexpError:
    """E-CHECKPOINT: `path` cannot be used because of `problem`."""
    facts.setdefault("fix", "resume from another checkpoint (`sexpgpu checkpoint ls RUN`)")
    return error(E_CHECKPOINT, f"checkpoint {path} cannot be used: {problem}", **facts)


def checked(path: Path) -> Path:
    """`path` when it is a checkpoint that verifies; E-CHECKPOINT otherwise."""
    path = Path(path)
    if not path.is_dir():
        raise checkpoint_error(path, "no such checkpoint directory")
    problem = verify(path)
    if problem is not None:
        raise checkpoint_error(path, problem)
    return path


def load_checkpoint(path: Path) -> Checkpoint:
    """Read a checkpoint that must verify (E-CHECKPOINT otherwise)."""
    path = checked(path)

    def arrays(name: str) -> dict[str, np.ndarray]:
        try:
            with np.load(path / name, allow_pickle=False) as archive:
                return {k: archive[k] for k in archive.files}
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
            raise checkpoint_error(path, f"{name} cannot be read ({exc})") from None

    return Checkpoint(path, arrays("params.npz"), arrays("state.npz"), read_meta(path))


def restore_arrays(kind: str, live: dict[str, np.ndarray], saved: dict[str, np.ndarray],
                   path: Path, copy: Any = None) -> None:
    """Copy saved values into the program's own arrays, in place (same names and shapes);
    `copy(name, array)`, when given, puts each one where the program keeps it instead
    (a GPU program's device arrays: `live` then only says their shapes and dtypes)."""
    if set(live) != set(saved):
        missing = sorted(set(live) ^ set(saved))
        raise error(E_CHECKPOINT, f"checkpoint {path} does not fit the program",
                    expected=f"{kind} {sorted(live)}", actual=f"{kind} {sorted(saved)}",
                    fix=f"these {kind} names differ: {', '.join(missing)}")
    for name, array in live.items():
        if array.shape != saved[name].shape or array.dtype != saved[name].dtype:
            raise error(E_CHECKPOINT, f"checkpoint {path} does not fit the program",
                        expected=f"{kind} {name} of shape {array.shape}, {array.dtype}",
                        actual=f"shape {saved[name].shape}, {saved[name].dtype}")
        if copy is not None:
            copy(name, saved[name])
        else:
            array[...] = saved[name]


def restore_positions(loaders: dict[str, Any], saved: dict[str, Any], path: Path) -> None:
    """Each loader back at its saved position (`loader.restore`); the checkpoint must name
    the same loaders, with the same number of curriculum stages."""
    if set(loaders) != set(saved):
        raise error(E_CHECKPOINT, f"checkpoint {path} does not fit the program",
                    expected=f"loaders {sorted(loaders)}", actual=f"loaders {sorted(saved)}",
                    fix="resume a checkpoint of this run file")
    for name, loader in loaders.items():
        try:
            loader.restore(saved[name])
        except (ValueError, KeyError, TypeError) as exc:
            raise error(E_CHECKPOINT, f"checkpoint {path} does not fit the program",
                        expected=f"a position of loader {name}", actual=str(exc),
                        fix="resume a checkpoint of this run file") from None


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
            _remove(path)


def _set_aside_name(path: Path, why: str) -> Path:
    """Where a checkpoint goes before it is deleted: a `.tmp-` name, which listings
    skip and `remove_stale_temps` clears when a kill left it behind."""
    return path.with_name(f".tmp-{path.name}-{why}-{os.getpid()}")


def _remove(path: Path) -> None:
    """Rename a checkpoint out of the way, then delete it: a reader (the S3 mirror
    uploading it, a resume listing the checkpoints) sees all of it or none, never one
    half deleted (the mirror once found its folder still there with params.npz gone,
    took that for an upload failure and stopped mirroring). A kill mid-delete leaves a
    `.tmp-` folder, which `remove_stale_temps` clears."""
    doomed = _set_aside_name(path, "pruned")
    try:
        os.rename(path, doomed)
    except OSError:
        return  # gone already
    shutil.rmtree(doomed, ignore_errors=True)
