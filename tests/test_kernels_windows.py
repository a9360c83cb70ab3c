"""unfold and fold on the CPU: a row (n, c) at a time, each window offset over the
output positions whose input lies inside (kernels/structured.py's `_window_rows`).
Against the numpy references (sexpgpu/ir/ops/conv.py) bit for bit: a fold adds a
position's windows in the reference's order, offset by offset."""

from __future__ import annotations

import numpy as np
import pytest
from sexpgpu.kernels import threads

from sexpgpu import kernels
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.ops.registry import get_op

CASES = [  # x shape, kernel, stride, padding
    ((1, 2, 30, 30), (7, 7), (2, 2), (3, 3)),  # a ResNet stem's window
    ((2, 3, 7), (3,), (2,), (1,)),
    ((1, 2, 7), (3,), (3,), (2,)),            # windows wholly in the padding
    ((3, 2, 9), (5,), (2,), (1,)),
    ((2, 1, 8), (2,), (3,), (0,)),            # positions no window covers
    ((2, 3, 5, 6), (2, 3), (2, 1), (1, 1)),
    ((2, 1, 4, 5), (3, 3), (2, 3), (2, 0)),
    ((1, 1, 3, 4, 5), (2, 2, 3), (1, 2, 2), (1, 0, 1)),
]


def _graph(shape: tuple[int, ...], kernel, stride, padding) -> tuple[Graph, tuple[int, ...]]:
    g = Graph("windows")
    x = g.input("x", shape)
    attrs = {"kernel": kernel, "stride": stride, "padding": padding}
    cols = g.apply("unfold", x, **attrs)
    c = g.input("c", cols.shape)
    g.output("cols", cols)
    g.output("y", g.apply("fold", c, shape=shape, **attrs))
    return g, cols.shape


def _check(shape, kernel, stride, padding, rng: np.random.Generator) -> dict:
    g, cols_shape = _graph(shape, kernel, stride, padding)
    feed = {"x": rng.standard_normal(shape).astype(np.float32),
            "c": rng.standard_normal(cols_shape).astype(np.float32)}
    got = kernels.compile(g).run(feed)
    attrs = {"kernel": kernel, "stride": stride, "padding": padding}
    want_cols = get_op("unfold").reference(feed["x"], **attrs)
    want_y = get_op("fold").reference(feed["c"], shape=shape, **attrs)
    assert got["cols"].tobytes() == want_cols.tobytes()
    assert got["y"].tobytes() == want_y.tobytes()
    return got


@pytest.mark.parametrize(("shape", "kernel", "stride", "padding"), CASES)
def test_windows_match_the_references_bit_for_bit(shape, kernel, stride, padding) -> None:
    _check(shape, kernel, stride, padding, np.random.default_rng(len(shape)))


def _window_texts(shape, kernel, stride, padding) -> list[str]:
    g, _ = _graph(shape, kernel, stride, padding)
    texts = kernels.compile(g).generated.kernel_sources
    windows = [t[t.index("def kernel("):] for t in texts if "(unfold)" in t or "(fold)" in t]
    assert len(windows) == 2
    return windows


def test_the_position_loops_have_no_index_test() -> None:
    """The positions' bounds are worked out once per window offset: no `%`, `//` or
    `if` inside the loops over positions (`for o...`); the text grows with the last
    axis's offsets only (the others are loops: a 7x7 window wholly unrolled took
    15 s to compile)."""
    small = _window_texts((2, 3, 5, 6), (2, 3), (2, 1), (1, 1))
    for text in small:
        lines = text.splitlines()
        first = next(i for i, line in enumerate(lines) if line.strip().startswith("for o0 "))
        depth = len(lines[first]) - len(lines[first].lstrip())
        nest = [line for line in lines[first + 1:] if len(line) - len(line.lstrip()) > depth]
        assert nest and not any(op in line for line in nest for op in ("%", "//", "if "))
    big = _window_texts((1, 2, 30, 30), (7, 7), (2, 2), (3, 3))
    one_row = _window_texts((1, 2, 30, 30), (2, 7), (2, 2), (1, 3))
    assert [len(t.splitlines()) for t in big] == [len(t.splitlines()) for t in one_row]


@pytest.mark.parametrize("count", [1, 2])
def test_rows_shared_by_threads_give_the_same_bits(count: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Big enough to be a chunk function (PARALLEL_WORK): any thread count, the
    references' bits."""
    shape = (96, 64, 256)  # 6.3M element-operations a fold
    g, _ = _graph(shape, (3,), (2,), (1,))
    assert threads.parallel_worth(np.prod(shape) * 3)
    monkeypatch.setenv("SEXPGPU_THREADS", str(count))
    threads.reset()
    try:
        _check(shape, (3,), (2,), (1,), np.random.default_rng(5))
    finally:
        threads.reset()
    texts = kernels.compile(g).generated.kernel_sources
    assert any("def chunk(" in t and "(fold)" in t for t in texts)
