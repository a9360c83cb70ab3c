"""events.jsonl: one JSON object per line, each with an "event" field (docs/events.md).

Lines are flushed as they are written, so a reader (or a crash) loses at most the
line being written; a torn last line left by a killed process is cut off when the
log is reopened, so every line in the file parses.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from sexpgpu.atomic import dumps, naming
from sexpgpu.trackers.config import mirror_for

EVENTS = ("open", "step", "eval", "diag", "checkpoint", "warn", "annotation", "close")


def _cut_torn_tail(path: Path) -> None:
    """Drop a last line that has no newline (a write interrupted by a kill)."""
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    with open(path, "r+b") as fh:
        fh.truncate(data.rfind(b"\n") + 1)


class EventLog:
    """Appends events to a run's events.jsonl, and hands each to the trackers the run
    mirrors to (trackers/; their errors come back here as `warn` events)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        _cut_torn_tail(self.path)
        self._fh = open(self.path, "ab")
        self._mirror = mirror_for(self.path.parent)

    def emit(self, event: str, **fields: Any) -> dict[str, Any]:
        if event not in EVENTS:
            raise ValueError(f"unknown event kind {event!r}")
        if self._mirror is not None:  # a sink's errors so far, before this event
            for message in self._mirror.take_problems():
                self._write({"event": "warn", "time": round(time.time(), 6),
                             "message": message})
        record = self._write({"event": event, "time": round(time.time(), 6), **fields})
        if self._mirror is not None:
            self._mirror.submit(record)
        return record

    def _write(self, record: dict[str, Any]) -> dict[str, Any]:
        try:
            self._fh.write(dumps(record) + b"\n")
            self._fh.flush()
        except OSError as exc:  # a full disk: the line may be torn, cut on reopen
            raise naming(exc, self.path) from exc
        return record

    def sync(self) -> None:
        """Make everything written so far durable (at checkpoints and close)."""
        try:
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError as exc:
            raise naming(exc, self.path) from exc

    def close(self) -> None:
        if self._mirror is not None:  # the trackers flush; what they report now is late
            self._mirror.close()
            for message in self._mirror.take_problems():
                sys.stderr.write(f"warning: {message}\n")
            self._mirror = None
        if not self._fh.closed:
            try:
                self.sync()
            finally:
                self._fh.close()


def read_events(path: Path) -> list[dict[str, Any]]:
    """Every complete event in a log, in order. A last line without its newline is
    being written by a live run (or was torn by a kill) and is left out."""
    data = Path(path).read_bytes()
    out = []
    for line in data[:data.rfind(b"\n") + 1].split(b"\n"):
        if line.strip():
            try:
                out.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue  # a line torn by a full disk before the log was reopened
    return out


def last_by_step(events: list[dict[str, Any]], kind: str = "step") -> dict[int, dict[str, Any]]:
    """The latest record of each step (a resumed run repeats the steps it redoes)."""
    return {e["step"]: e for e in events if e.get("event") == kind}
