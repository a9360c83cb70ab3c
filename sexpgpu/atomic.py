"""Crash-safe file writes (temp file, fsync, rename) and the one JSON encoding, shared
by the runtime's run directories and the data caches: a reader (a poller of status.json,
a resume looking for checkpoints) sees the old file or the new one, never a torn one."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import orjson

from sexpgpu.record import asdict, is_record


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


def naming(exc: OSError, path: Path) -> OSError:
    """The same error with the file it was about (a failed write() does not say)."""
    if exc.filename is not None:
        return exc
    return OSError(exc.errno, exc.strerror or str(exc), str(path))


def write_file_synced(path: Path, data: bytes) -> None:
    """Write and fsync one file in place (used inside a temp directory)."""
    try:
        with open(path, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise naming(exc, path) from exc


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` atomically: temp + fsync + rename. On failure (a full
    disk) the old file stays as it was and the temp file is removed."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        write_file_synced(tmp, data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def _encodable(obj: Any) -> Any:
    """What orjson does not encode itself: a record (sexpgpu/record.py), as its fields
    (orjson knows dataclasses, which records replaced on the check path)."""
    if is_record(obj):
        return asdict(obj)
    raise TypeError(f"Type is not JSON serializable: {obj.__class__.__name__}")


def dumps(obj: Any) -> bytes:
    """The one JSON encoding: orjson, numpy scalars and arrays and records allowed."""
    return orjson.dumps(obj, default=_encodable,
                        option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)


def print_json(payload: Any) -> None:
    """A command's `--json` answer: one line on stdout."""
    sys.stdout.write(dumps(payload).decode() + "\n")


def write_json_atomic(path: Path, obj: Any) -> None:
    write_bytes_atomic(path, dumps(obj) + b"\n")


def read_json(path: Path) -> Any:
    return orjson.loads(Path(path).read_bytes())
