"""status.json: the one file to poll, replaced atomically (docs/status.md)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sexpgpu.atomic import read_json, write_json_atomic

STATES = ("running", "done", "failed", "preempted")


class StatusFile:
    """Holds the current status and rewrites the file (temp + fsync + rename) on change."""

    def __init__(self, path: Path, run: str, steps: int, min_interval_s: float = 0.25):
        self.path = Path(path)
        self.min_interval_s = min_interval_s  # routine step updates are throttled
        self._last_write = 0.0
        self.data: dict[str, Any] = {
            "run": run, "state": "running", "step": 0, "steps": steps, "eta_s": None,
            "last_loss": None, "last_eval": None, "targets": None,
            "latest_checkpoint": None, "error": None,
            "started": round(time.time(), 3), "updated": None,
        }

    def update(self, force: bool = False, **fields: Any) -> None:
        state = fields.get("state")
        if state is not None and state not in STATES:
            raise ValueError(f"unknown run state {state!r}")
        self.data.update(fields)
        now = time.time()
        if force or now - self._last_write >= self.min_interval_s:
            self.data["updated"] = round(now, 3)
            write_json_atomic(self.path, self.data)
            self._last_write = now


def read_status(run_dir: Path) -> dict[str, Any] | None:
    path = Path(run_dir) / "status.json"
    return read_json(path) if path.exists() else None
