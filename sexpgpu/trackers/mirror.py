"""The Mirror: events handed over without waiting (a bounded queue), written to the
sinks by one background thread. A sink that fails is dropped and its error becomes a
`warn` event, written by the event log on its own thread; a run never waits on a sink
longer than the grace given at close."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sexpgpu.trackers.sinks import PACKAGES

Factory = Callable[[Path, dict[str, Any]], Any]  # (run dir, the open event) -> a sink

QUEUE_SIZE = 10000
CLOSE_GRACE_S = 30.0  # at the end, how long the run waits for the sinks to flush


class Mirror:
    """Mirrors every event to the sinks `factories` make (at the `open` event); a
    sink's problems are reported under its label (`--log-to wandb`)."""

    def __init__(self, factories: dict[str, Factory], run_dir: Path,
                 labels: dict[str, str] | None = None):
        self.factories = dict(factories)
        self.labels = {name: (labels or {}).get(name, f"--log-to {name}")
                       for name in factories}
        self.run_dir = Path(run_dir)
        self.sinks: dict[str, Any] = {}
        self.problems: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.dropped = 0
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(QUEUE_SIZE)
        self._thread = threading.Thread(target=self._work, name="sexpgpu-trackers",
                                        daemon=True)
        self._thread.start()

    def submit(self, record: dict[str, Any]) -> None:
        """Hand one event over; never blocks (a full queue drops it, counted)."""
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1

    def take_problems(self) -> list[str]:
        """Sink errors reported since the last call (the event log writes them as warn)."""
        out = []
        while True:
            try:
                out.append(self.problems.get_nowait())
            except queue.Empty:
                return out

    def close(self, grace_s: float | None = None) -> None:
        """Flush and close the sinks, waiting at most `grace_s` seconds (default
        CLOSE_GRACE_S, read now so a test can shorten it)."""
        grace_s = CLOSE_GRACE_S if grace_s is None else grace_s
        try:
            self._queue.put(None, timeout=grace_s)
        except queue.Full:
            return
        self._thread.join(grace_s)

    # -- the background thread ------------------------------------------------------

    def _work(self) -> None:
        while True:
            record = self._queue.get()
            if record is None:
                break
            if record.get("event") == "open":
                self._open(record)
            for name, sink in list(self.sinks.items()):
                self._call(name, sink.write, record)
        for name, sink in list(self.sinks.items()):
            self._call(name, sink.close)

    def _open(self, record: dict[str, Any]) -> None:
        for name, factory in self.factories.items():
            if name in self.sinks:
                continue
            try:
                self.sinks[name] = factory(self.run_dir, record)
            except ImportError:
                package, extra = PACKAGES.get(name, (name, name))
                self.problems.put(f"{self.labels[name]}: the {package} package is not "
                                  f"installed (pip install 'sexpgpu[{extra}]'); not mirrored")
            except Exception as exc:  # noqa: BLE001 - any sink failure is a warning only
                self.problems.put(f"{self.labels[name]}: could not start: "
                                  f"{type(exc).__name__}: {exc}; not mirrored")

    def _call(self, name: str, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 - any sink failure is a warning only
            self.sinks.pop(name, None)
            self.problems.put(f"{self.labels[name]}: {type(exc).__name__}: {exc}; "
                              "mirroring to it stopped (events.jsonl has everything)")
