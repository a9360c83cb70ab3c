"""What a person reads on standard error while a run compiles and trains: the kernels as
they compile (`compiling kernels 12/37 (9 cached)`), then one training line (step, loss,
step time, throughput, the last eval, the time left from the steady-state pace).

On a terminal the line is rewritten in place; off one (nohup, Slurm logs) a plain line
is printed every `every_s` seconds (0: none). The numbers here are for reading; events
and status.json keep full precision.
"""

from __future__ import annotations

import shutil
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TextIO

from sexpgpu import humanize

TTY_REDRAW_S = 0.1  # a terminal line is redrawn at most ten times a second
PACE_WINDOW_S = 60.0  # the ETA follows the pace of the last minute (evals included)


class Pace:
    """Seconds left, from the wall-clock pace of recent steps: marks are taken as steps
    end, so the first step's own time (it pays for warming caches) is never in the
    pace, while evaluations between steps are: they are part of the time a run takes."""

    def __init__(self, steps: int, clock: Callable[[], float] = time.monotonic):
        self.steps, self.clock = steps, clock
        self.marks: deque[tuple[int, float]] = deque()

    def mark(self, step: int) -> None:
        now = self.clock()
        self.marks.append((step, now))
        while len(self.marks) > 2 and now - self.marks[1][1] > PACE_WINDOW_S:
            self.marks.popleft()

    def eta_s(self) -> float | None:
        """None until two steps after the first were marked."""
        if len(self.marks) < 2:
            return None
        (s0, t0), (s1, t1) = self.marks[0], self.marks[-1]
        if s1 <= s0:
            return None
        return max(0.0, (self.steps - s1) * (t1 - t0) / (s1 - s0))


class Progress:
    """The progress of one run on `stream`. Call `kernel` while compiling, `step` after
    each step, `evaluating`/`evaluated` around evals, `done` at the end."""

    def __init__(self, stream: TextIO, steps: int = 0, every_s: float = 30.0,
                 tty: bool | None = None, clock: Callable[[], float] = time.monotonic):
        self.stream, self.steps, self.every_s, self.clock = stream, steps, every_s, clock
        self.tty = (hasattr(stream, "isatty") and stream.isatty()) if tty is None else tty
        self.pace = Pace(steps, clock)
        self.started = clock()
        self.last_shown = -1e18
        self.line_open = False        # a terminal line is waiting for its newline
        self.compile_started: float | None = None
        self.compiled_kernels = 0
        self.cached_kernels = 0
        self.last_eval: dict[str, float] = {}
        self.eval_step: int | None = None
        self.state: dict[str, Any] = {}
        self.activity = ""            # `evaluating test` while an eval runs
        self.printed_step = -1        # the step of the last training line shown

    # -- compiling ----------------------------------------------------------------

    def lowering(self, graph: str) -> None:
        if self.compile_started is None:
            self.compile_started = self.clock()
        if self.tty:  # off a terminal the kernel count says enough
            self._show(f"lowering {graph}", force=True)

    def kernel(self, done: int, total: int, cached: bool) -> None:
        """One kernel function compiled (or loaded from numba's cache) of `total`."""
        if self.compile_started is None:
            self.compile_started = self.clock()
        self.compiled_kernels, self.cached_kernels = done, self.cached_kernels + bool(cached)
        hits = f" ({self.cached_kernels} cached)" if self.cached_kernels else ""
        took = humanize.duration(self.clock() - self.compile_started)
        self._show(f"compiling kernels {done}/{total}{hits}  {took}", force=done == 1)

    def compiled(self) -> None:
        """The compile phase ended: one line that stays."""
        if self.compile_started is None:
            return
        n, hits = self.compiled_kernels, self.cached_kernels
        took = humanize.duration(self.clock() - self.compile_started)
        if n == 0:
            text = f"kernels ready in {took}"
        elif hits == n:
            text = f"kernels ready in {took} (all {n} from the cache)"
        else:
            text = f"compiled {n - hits} kernels in {took}" + (
                f" ({hits} more from the cache)" if hits else "")
        self._print(text)

    # -- training -----------------------------------------------------------------

    def step(self, step: int, loss: float, step_ms: float, rows: int, tokens: int) -> None:
        self.pace.mark(step)
        self.state = {"step": step, "loss": loss, "step_ms": step_ms, "rows": rows,
                      "tokens": tokens}
        self.activity = ""
        if self._show(self.training_line(), force=step in (1, self.steps)):
            self.printed_step = step

    def evaluating(self, name: str) -> None:
        self.activity = f"evaluating {name}"
        if self.tty and self.state:
            self._show(self.training_line(), force=True)

    def evaluated(self, step: int, metrics: dict[str, float]) -> None:
        self.last_eval.update(metrics)
        self.eval_step, self.activity = step, ""

    def done(self) -> None:
        """The training ended: the last line stays (off a terminal it is printed)."""
        if self.state and (self.tty or self.printed_step != self.state["step"]):
            self._show(self.training_line(), force=True)
        if self.line_open:
            self.stream.write("\n")
            self.stream.flush()
            self.line_open = False

    def training_line(self) -> str:
        s = self.state
        parts = [f"step {s['step']}/{self.steps}", f"loss {humanize.number(s['loss'])}",
                 f"{humanize.milliseconds(s['step_ms'])}/step"]
        seconds = s["step_ms"] / 1000.0
        if seconds > 0:
            if s["tokens"]:
                parts.append(humanize.rate(s["tokens"] / seconds, "tokens"))
            elif s["rows"]:
                parts.append(humanize.rate(s["rows"] / seconds, "samples"))
        if self.last_eval:
            shown = " ".join(f"{k} {humanize.number(v)}" for k, v in self.last_eval.items())
            parts.append(f"{shown} (step {self.eval_step})")
        if self.activity:
            parts.append(self.activity)
        eta = self.pace.eta_s()
        if eta is not None and s["step"] < self.steps:
            parts.append(f"eta {humanize.duration(eta)}")
        return "  ".join(parts)

    # -- writing ------------------------------------------------------------------

    def _show(self, text: str, force: bool = False) -> bool:
        """A line that replaces the last on a terminal; off one, printed when `every_s`
        has passed since the last (or when forced: the first and last of a phase).
        Whether it was written."""
        now = self.clock()
        if self.tty:
            if not force and now - self.last_shown < TTY_REDRAW_S:
                return False
            width = shutil.get_terminal_size((100, 24)).columns - 1
            self.stream.write("\r" + text[:width] + "\x1b[K")
            self.line_open = True
        else:
            if self.every_s <= 0 or (not force and now - self.last_shown < self.every_s):
                return False
            self.stream.write(text + "\n")
        self.stream.flush()
        self.last_shown = now
        return True

    def _print(self, text: str) -> None:
        """A line that stays, on a terminal or not (unless progress is off)."""
        if self.tty:
            self.stream.write("\r" + text + "\x1b[K\n")
            self.line_open = False
        elif self.every_s > 0:
            self.stream.write(text + "\n")
        else:
            return
        self.stream.flush()
        self.last_shown = -1e18  # the next phase's first line shows at once
