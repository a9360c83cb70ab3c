"""Batch bands (kernels/bands.py): a run of serial kernels that keep to their batch
rows runs as one parallel loop over bands of rows, each band the whole run; what
strays from its rows (a sum over the batch, a gather, a neighbour's row, a store
into a buffer read whole) is refused or moved after the run."""

from __future__ import annotations

import re
from itertools import combinations

import numpy as np
import pytest
from sexpgpu.autodiff.grad import grad
from sexpgpu.kernels import bands
from sexpgpu.kernels.lower import lower
from sexpgpu.kernels.memplan import Together, plan_memory
from sexpgpu.kernels.source import KernelCode
from test_kernels_executor import _slice
from thread_runs import runs_by_threads

from sexpgpu import kernels
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.reference import run_reference

SIZES = {"x": 64 * 32, "h": 64 * 32, "stack": 64 * 5 * 32, "w": 32 * 32, "b": 32, "s": 32,
         "y": 64 * 32, "j": 64 * 64}


def _code(params: list[str], reads: list[str], writes: list[str]) -> KernelCode:
    return KernelCode("k0", params, [("i0", 64)], [], reads=reads, writes=writes)


def _band(lines: list[str], params: list[str], writes: list[str]) -> bands.Banded | None:
    reads = [p for p in params if p not in writes]
    return bands.banded(_code(params, reads, writes), lines, 64, SIZES)


def _rows(lines: list[str], params: list[str], writes: list[str]) -> dict | None:
    """Each buffer's (row length, stored) in the kernel's bands, or None: refused."""
    band = _band(lines, params, writes)
    return None if band is None else {k: (a.row, a.stores) for k, a in band.accesses.items()}


def test_a_loop_keeps_to_its_rows_when_every_index_stays_in_its_row() -> None:
    # row i0 of x and of the stack's slot 2, the bias whole: rows of 32 and of 160
    lines = ["for i0 in range(64):",
             "    for i1 in range(32):",
             "        lin = i0 * 32 + i1",
             "        at0_ = 64",
             "        v1 = (x[lin]) + (b[i1])",
             "        stack[((i0 * 160 + at0_) & 0xffffffffff) + i1] = v1"]
    assert _rows(lines, ["x", "b", "stack"], ["stack"]) == {
        "x": (32, False), "b": (0, False), "stack": (160, True)}
    # a flat loop over the same rows: 32 iterations make one row
    flat = _band(["for lin in range(2048):", "    y[lin] = x[lin]"], ["x", "y"], ["y"])
    assert flat is not None and flat.per_row == 32


@pytest.mark.parametrize("lines, params, writes", [
    # the next row's element: a neighbour's band
    (["for i0 in range(64):", "    for i1 in range(32):",
      "        y[i0 * 32 + i1] = x[i0 * 32 + i1 + 32]"], ["x", "y"], ["y"]),
    # a sum over the batch: the first loop is not the rows
    (["for o in range(32):", "    s[o] = np.float32(0.0)", "for i0 in range(64):",
      "    for o in range(32):", "        s[o] = s[o] + x[i0 * 32 + o]"], ["x", "s"], ["s"]),
    # a gather: an index read from a buffer
    (["for i0 in range(64):", "    y[i0] = x[h[i0]]"], ["x", "h", "y"], ["y"]),
    # a store into a buffer every row shares
    (["for i0 in range(64):", "    for i1 in range(32):",
      "        b[i1] = x[i0 * 32 + i1]"], ["x", "b"], ["b"]),
    # an index that is not affine (a product of two loop variables)
    (["for i0 in range(64):", "    for i1 in range(32):",
      "        y[i0 * 32 + i1] = x[i0 * i1]"], ["x", "y"], ["y"]),
    # a statement after the first loop (each band would run it)
    (["for i0 in range(64):", "    y[i0 * 32] = x[i0 * 32]", "y[0] = x[0]"], ["x", "y"], ["y"]),
    # control flow the analysis does not follow
    (["for i0 in range(64):", "    if i0 > 3:", "        y[i0 * 32] = x[i0 * 32]"],
     ["x", "y"], ["y"]),
])
def test_a_loop_that_strays_from_its_rows_is_refused(lines: list[str], params: list[str],
                                                      writes: list[str]) -> None:
    assert _band(lines, params, writes) is None


def test_row_views_keep_to_their_rows() -> None:
    # a concat's copy: row i0 of x and of h into their parts of row i0 of j (64 wide)
    lines = ["for i0 in range(64):",
             "    d_ = j[i0 * 64:i0 * 64 + 32]",
             "    s_ = x[i0 * 32:i0 * 32 + 32]",
             "    for i1 in range(32):",
             "        d_[i1] = s_[i1]",
             "    d_ = j[i0 * 64 + 32:i0 * 64 + 32 + 32]",
             "    s_ = h[i0 * 32:i0 * 32 + 32]",
             "    for i1 in range(32):",
             "        d_[i1] = s_[i1]"]
    assert _rows(lines, ["x", "h", "j"], ["j"]) == {
        "x": (32, False), "h": (32, False), "j": (64, True)}


@pytest.mark.parametrize("lines", [
    # a view one element into the next row
    ["for i0 in range(64):", "    d_ = j[i0 * 64:i0 * 64 + 65]", "    for i1 in range(32):",
     "        d_[i1] = x[i0 * 32 + i1]"],
    # an element read through the view past the row
    ["for i0 in range(64):", "    s_ = x[i0 * 32:i0 * 32 + 32]", "    for i1 in range(64):",
     "        j[i0 * 64 + i1] = s_[i1 + 1]"],
    # a store through a view of a buffer every row shares
    ["for i0 in range(64):", "    d_ = b[0:32]", "    for i1 in range(32):",
     "        d_[i1] = x[i0 * 32 + i1]"],
    # a view passed whole
    ["for i0 in range(64):", "    s_ = x[i0 * 32:i0 * 32 + 32]", "    j[i0 * 64] = f(s_)"],
])
def test_a_row_view_that_strays_is_refused(lines: list[str]) -> None:
    assert _band(lines, ["x", "b", "j"], ["j", "b"]) is None


def test_an_sgemm_keeps_to_its_output_rows() -> None:
    # h (rows of 32) @ w into slot 1 of the stack: h by rows, w whole, out by rows
    band = _band(["gemm_nn(h, 0, 32, w, 0, 32, stack, 32, 160, 64, 32, 32, 0.0)"],
                 ["h", "w", "stack"], ["stack"])
    assert band is not None and band.gemm
    assert {k: a.row for k, a in band.accesses.items()} == {"h": 32, "w": 0, "stack": 160}
    assert bands.band_lines(band, 32)[1] == (
        "gemm_nn(h, 0 + c * 0x400, 32, w, 0, 32, stack, 32 + c * 0x1400, 160, "
        "min(0x20, 64 - c * 0x20), 32, 32, 0.0)")
    # its rows not the batch's, or its output overlapping an operand: refused
    assert _band(["gemm_nn(h, 0, 32, w, 0, 32, y, 0, 32, 32, 32, 64, 0.0)"],
                 ["h", "w", "y"], ["y"]) is None


def _places(**overlapping: tuple[int, int]) -> dict[str, bands.Place]:
    places = {name: (name, 0, size * 4) for name, size in SIZES.items()}
    places.update({name: ("arena", start, start + SIZES[name] * 4)
                   for name, (start, _) in overlapping.items()})
    return places


def _plan(kernels_: list[tuple[list[str], list[str], list[str]]],
          places: dict[str, bands.Place]) -> list[bands.Run]:
    codes = [_code(p, [x for x in p if x not in w], w) for _, p, w in kernels_]
    found = [bands.banded(c, lines, 64, SIZES) for c, (lines, _, _) in zip(codes, kernels_)]
    return bands.plan_runs(codes, found, [True] * len(codes), places,
                           dict.fromkeys(SIZES, 4))


_MATMUL = (["gemm_nn(x, 0, 32, w, 0, 32, h, 0, 32, 64, 32, 32, 0.0)"], ["x", "w", "h"], ["h"])
_TANH = (["for i0 in range(64):", "    for i1 in range(32):",
          "        y[i0 * 32 + i1] = math.tanh(h[i0 * 32 + i1])"], ["h", "y"], ["y"])
_BATCH_SUM = (["for o in range(32):", "    s[o] = np.float32(0.0)", "for i0 in range(64):",
               "    for o in range(32):", "        s[o] = s[o] + h[i0 * 32 + o]"],
              ["h", "s"], ["s"])
_STACK = (["for i0 in range(64):", "    for i1 in range(32):",
           "        stack[i0 * 160 + i1] = y[i0 * 32 + i1]"], ["y", "stack"], ["stack"])


def test_runs_keep_apart_the_bytes_that_bands_share(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bands, "MIN_RUN_WORK", 0)
    monkeypatch.setattr(bands, "MIN_KERNEL_WORK", 0)
    monkeypatch.setattr(bands, "MIN_RUN_LINKS", 0)
    monkeypatch.setattr(bands, "band_count", lambda rows: 2)
    # apart in memory: one run of three, the batch sum moved after it
    (run,) = _plan([_MATMUL, _BATCH_SUM, _TANH, _STACK], _places())
    assert (run.kernels, run.moved) == ([0, 2, 3], [1])
    # y reuses h's bytes with the same rows: band c of one is band c of the other
    (run,) = _plan([_MATMUL, _TANH], _places(h=(0, 0), y=(0, 0)))
    assert run.kernels == [0, 1]
    # the stack (rows of 160) over y's bytes (rows of 32): band 1 of y lies in band 0
    # of the stack, so the store waits for the run before it
    assert [r.kernels for r in _plan([_MATMUL, _TANH, _STACK],
                                     _places(y=(0, 0), stack=(0, 0)))] == [[0, 1]]
    # a kernel after the moved sum writes what the sum reads: the run ends there
    assert [(r.kernels, r.moved) for r in _plan([_MATMUL, _BATCH_SUM, _MATMUL, _TANH],
                                                _places())] == [([2, 3], [])]


def _recurrence(batch: int, hidden: int, steps: int) -> Graph:
    """h = tanh(h @ w + x_t) over `steps`, the states stacked, the batch sums of each
    step's product (a bias gradient's shape: a kernel of its own) added up."""
    g = Graph("bands")
    h, w = g.input("h", (batch, hidden)), g.input("w", (hidden, hidden))
    xs = g.input("xs", (batch, steps, hidden))
    states, sums = [], []
    for t in range(steps):
        x = g.apply("reshape", _slice(g, xs, 1, t, t + 1), shape=(batch, hidden))
        product = g.apply("matmul", h, w)
        h = g.apply("tanh", g.apply("add", product, x))
        states.append(g.apply("reshape", h, shape=(batch, 1, hidden)))
        sums.append(g.apply("sum", product, axes=(0,)))
    g.output("stack", g.apply("concat", *states, axis=1))
    total = sums[0]
    for s in sums[1:]:
        total = g.apply("add", total, s)
    g.output("sums", total)
    return g


def test_a_recurrence_runs_in_bands_with_the_serial_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    # the states' chain in two bands of 40 rows (one run, the batch sums after it):
    # the serial kernels' bits, NaN, inf and -0 included; one thread and two alike
    monkeypatch.setattr(bands, "band_count", lambda rows: 2)
    g = _recurrence(batch=80, hidden=48, steps=6)
    rng = np.random.default_rng(11)
    inputs = {v.name: rng.standard_normal(v.shape).astype(np.float32) for v in g.inputs}
    inputs["w"] /= np.float32(8.0)
    inputs["xs"][3, 2, :3] = (np.nan, np.inf, -0.0)
    inputs["xs"][50, 0, :2] = (-np.inf, -0.0)
    banded = kernels.compile(g)
    assert banded.source.count("launch.bands(2, ") == 1
    got = banded.run(inputs)
    monkeypatch.setattr(bands, "MIN_RUN_WORK", 1 << 62)
    serial = kernels.compile(g)
    assert "launch.bands" not in serial.source
    want = serial.run(inputs)
    for name in want:
        assert got[name].tobytes() == want[name].tobytes(), name
    reference = run_reference(g, inputs)
    for name, value in reference.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-4, err_msg=name)
    # the NaN of row 3 from step 2 on (all its units from step 3), in its row alone
    assert np.isnan(got["stack"][3, 3:]).all() and np.isnan(got["stack"][3, 2, 0])
    assert not np.isnan(got["stack"][3, :2]).any()
    assert not np.isnan(np.delete(got["stack"], 3, axis=0)).any()
    for result in runs_by_threads(banded, inputs, [1, 2], monkeypatch):
        assert result["stack"].tobytes() == got["stack"].tobytes()


def test_the_memory_plan_lets_a_run_share_bytes_only_band_for_band() -> None:
    # a chain of products, each its own kernel: alone, two slots alternate; in a run of
    # batch bands (kernels 1..5), values share bytes only at one offset with the same
    # size and row length, and nothing else of the run meets them
    g = Graph("chain")
    x = g.input("x", (64, 64))
    h, values = x, []
    for _ in range(8):
        h = g.apply("matmul", h, x)
        values.append(h)
    g.output("y", h)
    program = lower(g)
    assert plan_memory(program).peak_bytes == 2 * 64 * 64 * 4
    rows = {v: (256 if k % 3 else 128) for k, v in enumerate(values[1:6], 1)}
    plan = plan_memory(program, [Together(1, 5, rows)])
    run = list(rows)
    for a, b in combinations(run, 2):
        a0, b0 = plan.slot_of[a], plan.slot_of[b]
        if a0 < b0 + 64 * 64 * 4 and b0 < a0 + 64 * 64 * 4:
            assert a0 == b0 and rows[a] == rows[b], (a, b)
    shared = {plan.slot_of[v] for v in run if rows[v] == 256}
    assert len(shared) < sum(rows[v] == 256 for v in run)  # per-step values still share
    assert plan.peak_bytes <= (len(shared) + 4) * 64 * 64 * 4


def _serial_bits_and_reference(g: Graph, banded, inputs: dict, monkeypatch: pytest.MonkeyPatch
                                ) -> dict[str, np.ndarray]:
    """`banded`'s results, checked bit for bit against the same graph compiled with no
    band run and within f32 rounding against the reference interpreter."""
    got = banded.run(inputs)
    monkeypatch.setattr(bands, "MIN_RUN_WORK", 1 << 62)
    want = kernels.compile(g).run(inputs)
    for name in want:
        assert got[name].tobytes() == want[name].tobytes(), name
    for name, value in run_reference(g, inputs).items():
        np.testing.assert_allclose(got[name], value, rtol=2e-4, atol=2e-4, err_msg=name)
    return got


def test_a_recurrence_and_its_gradient_run_in_bands_with_the_serial_bits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a two-gate cell: z = h w + b, h = tanh(z[:, :64] + x_t) * sigmoid(z[:, 64:]). The
    # backward's chain (each step's joined gate gradient, its product with w) runs in
    # bands too, each step's bias gradient (a sum over the batch) moved after it; the
    # gradients are the serial kernels' bits and match the reference interpreter's
    monkeypatch.setattr(bands, "band_count", lambda rows: 2)
    g = Graph("bands_grad")
    h, w = g.input("h", (64, 64)), g.input("w", (64, 128))
    b, xs = g.input("b", (128,)), g.input("xs", (64, 6, 64))
    for t in range(6):
        x = g.apply("reshape", _slice(g, xs, 1, t, t + 1), shape=(64, 64))
        z = g.apply("add", g.apply("matmul", h, w), b)
        h = g.apply("mul", g.apply("tanh", g.apply("add", _slice(g, z, 1, 0, 64), x)),
                    g.apply("sigmoid", _slice(g, z, 1, 64, 128)))
    loss = g.apply("sum", g.apply("mul", h, h), axes=(0, 1))
    for value, d in grad(g, loss, [w, b]).items():
        g.output(f"d{value.name}", d)
    g.output("loss", loss)
    rng = np.random.default_rng(12)
    inputs = {v.name: rng.standard_normal(v.shape).astype(np.float32) for v in g.inputs}
    inputs["w"] /= np.float32(8.0)
    inputs["xs"][7, 2, :2] = (np.inf, -0.0)
    banded = kernels.compile(g)
    assert banded.source.count("launch.bands(2, ") >= 2  # forward and backward
    _serial_bits_and_reference(g, banded, inputs, monkeypatch)


def test_joined_gate_gradients_run_in_the_bands(monkeypatch: pytest.MonkeyPatch) -> None:
    # a GRU's backward joins each step's gate pieces twice, two joins sharing pieces:
    # both concats (along the units, row by row) run inside the step's band run, with
    # the serial kernels' bits, the reference's values and any thread count's bits
    monkeypatch.setattr(bands, "band_count", lambda rows: 2)
    g = Graph("joins")
    h, w, v = g.input("h", (64, 32)), g.input("w", (32, 96)), g.input("v", (96, 32))
    xs = g.input("xs", (64, 5, 32))
    sums = []
    for t in range(5):
        x = g.apply("reshape", _slice(g, xs, 1, t, t + 1), shape=(64, 32))
        z = g.apply("matmul", h, w)
        a = g.apply("tanh", _slice(g, z, 1, 0, 32))
        s = g.apply("sigmoid", _slice(g, z, 1, 32, 64))
        c = g.apply("mul", _slice(g, z, 1, 64, 96), x)
        h = g.apply("matmul", g.apply("concat", a, s, c, axis=1), v)
        sums.append(g.apply("sum", g.apply("concat", a, s, x, axis=1), axes=(0,)))
    g.output("h", h)
    total = sums[0]
    for s in sums[1:]:
        total = g.apply("add", total, s)
    g.output("sums", total)
    rng = np.random.default_rng(13)
    inputs = {v.name: rng.standard_normal(v.shape).astype(np.float32) for v in g.inputs}
    inputs["w"] /= np.float32(8.0)
    inputs["v"] /= np.float32(8.0)
    inputs["xs"][9, 1, :3] = (np.nan, -np.inf, -0.0)
    banded = kernels.compile(g)
    joins = {f for f, ops in re.findall(r"import \w+ as (f\d+)  # (.*)", banded.source)
             if ops == "concat"}
    in_bands = set(re.findall(r"\((f\d+), ", "".join(
        line for line in banded.source.splitlines() if "launch.bands(" in line)))
    assert joins and joins <= in_bands
    got = _serial_bits_and_reference(g, banded, inputs, monkeypatch)
    for result in runs_by_threads(banded, inputs, [1, 2], monkeypatch):
        assert result["h"].tobytes() == got["h"].tobytes()
