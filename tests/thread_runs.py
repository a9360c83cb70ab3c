"""A compiled graph run once for each of several thread counts (SEXPGPU_THREADS, the
policy made anew each time): the tests that hold results to one thread's bits."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sexpgpu.kernels import threads


def runs_by_threads(compiled: Any, feed: dict[str, np.ndarray], counts: list[int],
                    monkeypatch: pytest.MonkeyPatch) -> list[dict[str, np.ndarray]]:
    """`compiled.run(feed)` with each thread count of `counts`, in order."""
    results = []
    for count in counts:
        monkeypatch.setenv("SEXPGPU_THREADS", str(count))
        threads.reset()
        try:
            results.append(compiled.run(feed))
        finally:
            threads.reset()
    return results
