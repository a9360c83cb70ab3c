"""SIGTERM/SIGINT for `sexpgpu run`, from the moment it starts.

Until the training loop has opened its run directory nothing of the run is on disk,
so a stop signal (during compiling, kernel building) ends it at once: the handler
raises `Stopped`, which the command turns into exit 75, and rerunning starts over
with nothing lost. Once the loop takes over (`defer()`), a signal is only noted: the
loop checks `requested` after every step, writes a checkpoint and closes the run as
`preempted` (exit 75). A second signal restores the previous handler and re-raises
it, so an impatient Ctrl-C twice still stops at once.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stopped(KeyboardInterrupt):
    """A stop signal before the run directory existed: nothing to save, exit 75."""

    def __init__(self, signame: str):
        super().__init__(signame)
        self.signame = signame


class StopRequests:
    """Context manager installing the handlers (only possible in the main thread).

    `abort=True`: a signal raises Stopped until `defer()` is called; otherwise (and
    after `defer()`) it only sets `requested`.
    """

    def __init__(self, abort: bool = False, signals: tuple[int, ...] = STOP_SIGNALS) -> None:
        self.requested: str | None = None
        self.abort = abort
        self.signals = signals  # a data-parallel rank adds SIGUSR1 (what mpiexec forwards)
        self._previous: dict[int, object] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested is not None:  # second signal: stop now
            self._restore()
            signal.raise_signal(signum)
            return
        self.requested = signal.Signals(signum).name
        if self.abort:
            raise Stopped(self.requested)

    def defer(self) -> None:
        """From now on a signal lets the current step finish (the run has files)."""
        self.abort = False

    def _restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def __enter__(self) -> StopRequests:
        if threading.current_thread() is threading.main_thread():
            for signum in self.signals:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        self._restore()
