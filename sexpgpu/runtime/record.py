"""A run's record: the summary (`sexpgpu run --json`), status.json and events.jsonl, kept
together. Every change of the run goes through `transition`, which updates all three
in one place; a rank other than 0 of a multi-process run keeps the summary only (its
record has no files: rank 0 writes the run's)."""

from __future__ import annotations

import os
import time
from typing import Any, TextIO

from sexpgpu.diagnostics import Diagnostic, render
from sexpgpu.exitcodes import EXIT_RUNTIME
from sexpgpu.runtime import rundir
from sexpgpu.runtime.events import EventLog
from sexpgpu.runtime.status import StatusFile


class NoFiles:
    """The event log and status file of a rank that writes neither."""

    data: dict[str, Any] = {}

    def emit(self, event: str, **fields: Any) -> None:
        return None

    def update(self, force: bool = False, **fields: Any) -> None:
        return None

    def sync(self) -> None:
        return None

    def close(self) -> None:
        return None


class RunRecord:
    """The summary, the status file and the event log of one run, updated together."""

    def __init__(self, summary: dict[str, Any], events: EventLog | NoFiles,
                 status: StatusFile | NoFiles, held: int | None, stderr: TextIO):
        self.summary = summary
        self.events = events
        self.status = status
        self.held = held  # the run directory's lock, released at close
        self.stderr = stderr
        self.opened = False  # whether the `open` event was written
        self.started = time.time()

    def transition(self, event: str | None = None, fields: dict[str, Any] | None = None, *,
                   status: dict[str, Any] | None = None, force: bool = False,
                   sync: bool = False, **summary: Any) -> None:
        """One change of the run: the summary's fields, then the event (made durable
        when `sync`), then status.json (rewritten now when `force`, else throttled)."""
        self.summary.update(summary)
        if event is not None:
            self.events.emit(event, **(fields or {}))
            if event == "open":
                self.opened = True
        if sync:
            self.events.sync()
        if status is not None:
            self.status.update(force=force, **status)

    def close(self, state: str, code: int, diag: Diagnostic | None = None,
              open_fields: Any = None) -> tuple[int, dict[str, Any]]:
        """Close the run. Every write here is attempted even when an earlier one fails
        (a full disk): status.json says `failed` whenever it can still be written.
        `open_fields`: makes the `open` event when the run ends before writing it."""
        summary = self.summary
        summary.update(state=state, exit_code=code,
                       elapsed_s=round(time.time() - self.started, 3))
        if diag is not None:
            summary["error"] = diag.to_json()
            self.stderr.write(render(diag) + "\n")
        failure = summary["error"]
        error = {"code": failure["code"], "message": failure["message"]} if failure else None
        problems = [
            attempt(self.status.update, force=True, state=state, error=error,
                    eta_s=0 if state == "done" else None),
            None if self.opened or open_fields is None
            else attempt(lambda: self.transition("open", open_fields())),
            attempt(self.events.emit, "close", status=state, summary=summary),
            attempt(self.events.close),
        ]
        if self.held is not None:
            os.close(self.held)
        problem = next((p for p in problems if p is not None), None)
        if problem is not None and diag is None:  # the run itself went well, its record did not
            failed = rundir.io_error(problem, "closing the run").diagnostic
            summary.update(state="failed", exit_code=EXIT_RUNTIME, error=failed.to_json())
            self.stderr.write(render(failed) + "\n")
            return EXIT_RUNTIME, summary
        return code, summary


def attempt(write: Any, *args: Any, **kwargs: Any) -> OSError | None:
    """Run one write of the run's record; the OSError it raised, if any."""
    try:
        write(*args, **kwargs)
    except OSError as exc:
        return exc
    return None
