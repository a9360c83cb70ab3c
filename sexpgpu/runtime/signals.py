"""SIGTERM/SIGINT during training: note the request, let the loop finish the step.

The loop checks `requested` after every step, writes a checkpoint and closes the
run as `preempted` (exit 75). A second signal restores the previous handler and
re-raises it, so an impatient Ctrl-C twice still stops at once.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopRequests:
    """Context manager installing the handlers (only possible in the main thread)."""

    def __init__(self) -> None:
        self.requested: str | None = None
        self._previous: dict[int, object] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested is not None:  # second signal: stop now
            self._restore()
            signal.raise_signal(signum)
            return
        self.requested = signal.Signals(signum).name

    def _restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def __enter__(self) -> StopRequests:
        if threading.current_thread() is threading.main_thread():
            for signum in STOP_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        self._restore()
