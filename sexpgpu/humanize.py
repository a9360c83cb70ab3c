"""Numbers as a person reads them, for every line a command prints for people (progress,
summaries, explain, diff, plot legends); JSON output keeps full precision."""

from __future__ import annotations

import math
from typing import Any


def number(x: Any) -> str:
    """4 significant digits (`0.416`, `1.234`, `1e-08`, `3e-05`); integers as written;
    t/nil for flags; `-` for none."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "t" if x else "nil"
    if isinstance(x, int):
        return str(x)
    if not isinstance(x, float):
        return str(x)
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    if x == int(x) and abs(x) < 1e6:
        return str(int(x))
    return f"{x:.4g}"


def rate(per_s: float, unit: str) -> str:
    """`65.8k samples/s`, `1.2M tokens/s`, `812 samples/s`."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if per_s >= scale:
            return f"{per_s / scale:.3g}{suffix} {unit}/s"
    return f"{per_s:.3g} {unit}/s"


def milliseconds(ms: float) -> str:
    """A step's time: `0.31 ms`, `12.4 ms`, `312 ms`, `1.24 s`."""
    if ms >= 1000:
        return f"{ms / 1000:.3g} s"
    return f"{ms:.3g} ms"


def duration(seconds: float) -> str:
    """Time left or taken: `4.2s`, `38s`, `3m12s`, `1h02m`."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
