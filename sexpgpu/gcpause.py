"""The cyclic garbage collector paused around work that makes many long-lived objects
and few cycles: importing the compiler's modules, compiling a run file (a GRU's
7000 nodes). Its passes over those objects were 10-15% of a `sexpgpu check`."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """The collector off inside (a few MB more at the peak) and back on after, with
    what was made inside moved to the oldest generation unscanned (freeze, then
    unfreeze), so that the first allocation after does not scan it all at once: the
    next full collection, if the process lives that long, frees its cycles."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if enabled:
            gc.enable()
