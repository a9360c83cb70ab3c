"""Crash-safe file writes (temp file, fsync, rename) and the one JSON encoding, shared
by the runtime's run directories and the data caches: a reader (a poller of status.json,
a resume looking for checkpoints) sees the old file or the new one, never a torn one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson


def fsync_dir(path: Path) -> None:
    """Make a rename or create inside `path` durable (a no-op where unsupported)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_file_synced(path: Path, data: bytes) -> None:
    """Write and fsync one file in place (used inside a temp directory)."""
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` atomically: temp + fsync + rename."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    write_file_synced(tmp, data)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def dumps(obj: Any) -> bytes:
    """The one JSON encoding: orjson, numpy scalars and arrays allowed."""
    return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)


def write_json_atomic(path: Path, obj: Any) -> None:
    write_bytes_atomic(path, dumps(obj) + b"\n")


def read_json(path: Path) -> Any:
    return orjson.loads(Path(path).read_bytes())
