"""Lowering, the memory plan, the executor and the on-disk cache: fused graphs
against the reference interpreter, in-place updates, one-call steps, and a
second compile in a new process that compiles nothing."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from sexpgpu.kernels import threads
from sexpgpu.kernels.lower import FILL_READ_ROW, FILL_ROW, LOOP_VIEW_ROW, lower
from sexpgpu.kernels.memplan import _lowest_gap, plan_memory
from thread_runs import runs_by_threads

from sexpgpu import kernels
from sexpgpu.diagnostics import SexpError, Span
from sexpgpu.ir import build
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.reference import run_reference

ROOT = Path(__file__).resolve().parent.parent


def _c(g: Graph, value: float):
    return g.apply("full", shape=(), dtype="f32", value=value)


def chain_graph() -> Graph:
    """A softmax-like chain with broadcasting, views and reductions."""
    g = Graph("chain")
    x = g.input("x", (7, 9))
    b = g.input("b", (9,))
    with g.at(Span("model.sx", 3, 5)):
        z = g.apply("mul", g.apply("add", x, b), _c(g, 0.5))
        m = g.apply("amax", z, axes=(1,), keepdims=True)
        e = g.apply("exp", g.apply("sub", z, g.apply("broadcast_to", m, shape=(7, 9))))
        s = g.apply("sum", e, axes=(1,), keepdims=False)
        p = g.apply("div", e, g.apply("reshape", s, shape=(7, 1)))
        g.output("p", p)
        g.output("total", g.apply("sum", g.apply("square", p), axes=None))
    return g


def test_chain_fuses_and_matches_reference() -> None:
    g = chain_graph()
    program = lower(g)
    loops = [k for k in program.kernels if k.kind == "loop"]
    # add+mul+amax | sub+exp+sum | div+square+sum: three loops for eight ops
    assert len(program.kernels) == len(loops) == 3
    r = np.random.default_rng(1)
    inputs = {"x": r.standard_normal((7, 9)).astype(np.float32),
              "b": r.standard_normal(9).astype(np.float32)}
    compiled = kernels.compile(g)
    got = compiled.run(inputs)
    want = run_reference(g, inputs)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-6)
    assert "model.sx:3:5" in compiled.source
    assert "graph hash" in compiled.source.splitlines()[0]


def test_memory_plan_reuses_buffers() -> None:
    g = Graph("plan")
    x = g.input("x", (64, 64))
    h = x
    for _ in range(6):
        # each matmul is its own kernel, so every intermediate needs a buffer
        h = g.apply("matmul", h, x)
    g.output("y", h)
    plan = plan_memory(lower(g))
    assert plan.naive_bytes == 6 * 64 * 64 * 4
    assert plan.peak_bytes == 2 * 64 * 64 * 4  # two slots, alternating (the last is the output)


def test_the_lowest_gap_is_the_lowest_offset_that_overlaps_nothing() -> None:
    """Against every candidate tried in turn: 0 and each range's end, the lowest whose
    [offset, offset + size) meets no range."""
    rng = np.random.default_rng(0)
    for _ in range(500):
        count = int(rng.integers(0, 8))
        starts = np.sort(rng.integers(0, 100, count)).astype(np.int64)
        ends = starts + rng.integers(1, 40, count)
        size = int(rng.integers(1, 50))
        free = [c for c in sorted({0, *ends.tolist()})
                if not any(s < c + size and c < e for s, e in zip(starts, ends))]
        assert _lowest_gap(size, starts, ends) == free[0]


def test_memory_plan_shares_bytes_between_dtypes() -> None:
    """A bf16 step mixes uint16 and float32 buffers: a dead value's bytes take values of
    the other dtype, so the arena is the most bytes alive at once."""
    g = Graph("mixed")
    x = g.input("x", (64, 64))
    h = x
    for k in range(6):
        # alternate f32 products with bf16 copies of them, each read by the next product
        h = g.apply("matmul", h, x)
        if k % 2:
            h = g.apply("cast", g.apply("cast", h, dtype="bf16"), dtype="f32")
    g.output("y", h)
    plan = plan_memory(lower(g))
    alive = 2 * 64 * 64 * 4 + 64 * 64 * 2  # a product, its bf16 copy and its f32 widening
    assert plan.peak_bytes <= alive
    compiled = kernels.compile(g)
    xs = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32) / 8
    want = run_reference(g, {"x": xs})["y"]
    np.testing.assert_allclose(compiled.run({"x": xs})["y"], want, rtol=1e-5, atol=1e-6)


def test_updates_in_place_and_outputs_are_fresh() -> None:
    g = Graph("sgd")
    p = g.input("p", (5, 3), role="param")
    grad = g.input("g", (5, 3))
    new = g.apply("sub", p, g.apply("mul", grad, _c(g, 0.1)))
    g.update(p, new)
    g.output("norm", g.apply("sum", g.apply("square", new), axes=None))
    compiled = kernels.compile(g)
    params = np.ones((5, 3), np.float32)
    ones = np.ones((5, 3), np.float32)
    first = compiled.run({"p": params, "g": ones})
    np.testing.assert_allclose(params, 0.9)
    compiled.run({"p": params, "g": ones})
    np.testing.assert_allclose(params, 0.8, rtol=1e-6)
    np.testing.assert_allclose(first["norm"], 15 * 0.81, rtol=1e-6)
    # step is plain Python calling the njit kernels (an njit step re-optimises
    # every kernel linked into it: superlinear compile time on big graphs)
    assert type(compiled.module.step).__name__ == "function"
    assert type(compiled.module.f0).__name__ == "CPUDispatcher"


def test_optimizer_updates_store_into_their_inputs() -> None:
    # Adam's new parameters and moments are written straight into the input
    # arrays: no buffer, no copy-back, one array parameter per updated input
    from sexpgpu.kernels import demo

    prog = demo.mlp_step().compile("kernels")
    runner = prog.runner
    assert set(runner.program.in_place.values()) == set(runner.program.graph.updates)
    assert "[:] =" not in runner.source
    ref = demo.mlp_step().compile("reference")
    for seed in range(3):
        got, want = prog(**demo.batch(seed)), ref(**demo.batch(seed))
        np.testing.assert_allclose(got["loss"], want["loss"], rtol=1e-5)
    for name, value in prog.params.items():
        np.testing.assert_allclose(value, ref.params[name], rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("case,in_place", [("read-later", False), ("returned", False),
                                           ("sliced", True)])
def test_update_in_place_only_when_the_old_value_is_no_longer_needed(case: str,
                                                                     in_place: bool) -> None:
    g = Graph("sgd")
    p = g.input("p", (4, 3), role="param")
    grad = g.input("g", (4, 3))
    new = g.apply("sub", p, g.apply("mul", grad, _c(g, 0.5)))
    if case == "sliced":  # every row reads the old row 1, copied out by its own kernel first
        new = g.apply("sub", new, g.apply("broadcast_to", g.apply("slice", p, starts=(1, 0),
                      stops=(2, 3), steps=(None, None)), shape=(4, 3)))
    g.update(p, new)
    if case == "read-later":  # the old value is read after the update is made
        g.output("old_sum", g.apply("sum", g.apply("add", new, g.apply("square", p)), axes=None))
    if case == "returned":
        g.output("old", g.apply("stop_gradient", p))
    compiled = kernels.compile(g)
    assert bool(compiled.program.in_place) == in_place
    start = np.arange(12, dtype=np.float32).reshape(4, 3)
    params, ones = start.copy(), np.ones((4, 3), np.float32)
    got = compiled.run({"p": params, "g": ones})
    want_params = start.copy()
    want = run_reference(g, {"p": want_params, "g": ones})
    np.testing.assert_allclose(params, want_params, rtol=1e-6)
    assert not np.allclose(params, start)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-6, err_msg=name)


def _heads(g: Graph, qkv, lo: int, heads: int, width: int):
    """(B, T, 3C) -> the (B, H, T, D) heads of columns lo:lo+width, as attention cuts them."""
    b, t, _ = qkv.shape
    part = g.apply("slice", qkv, starts=(None, None, lo), stops=(None, None, lo + width),
                   steps=(None, None, None))
    split = g.apply("reshape", part, shape=(b, t, heads, width // heads))
    return g.apply("permute", split, perm=(0, 2, 1, 3))


@pytest.mark.parametrize("loop_reads", [None, "q", "k^T"])
def test_attention_heads_are_strided_views_of_the_projection(loop_reads: str | None) -> None:
    g = Graph("heads")
    width = 2 * LOOP_VIEW_ROW  # two heads, rows long enough for loops to read in place
    qkv = g.input("qkv", (3, 5, 3 * width))
    q, k, v = (_heads(g, qkv, lo, 2, width) for lo in (0, width, 2 * width))
    k_t = g.apply("permute", k, perm=(0, 1, 3, 2))
    scores = g.apply("matmul", q, k_t)   # (3, 2, 5, 5)
    g.output("out", g.apply("matmul", scores, v))
    # a loop reads a view after the matmul read it in place: q's rows (its last axis)
    # lie contiguous in qkv, so the loop reads them there too; k^T's last axis strides
    # by a row of qkv, so one kernel copies it out for the loop (the matmul keeps the view)
    if loop_reads == "q":
        g.output("q2", g.apply("mul", q, q))
    if loop_reads == "k^T":
        g.output("k2", g.apply("mul", k_t, k_t))
    compiled = kernels.compile(g)
    copies = [k.nodes[0].op for k in compiled.program.kernels if k.kind == "op"
              and k.nodes[0].op in ("slice", "permute")]
    assert copies == (["permute"] if loop_reads == "k^T" else [])
    inputs = {"qkv": np.random.default_rng(2).standard_normal(qkv.shape).astype(np.float32)}
    got, want = compiled.run(inputs), run_reference(g, inputs)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-5, err_msg=name)


def _slice(g: Graph, x, axis: int, start: int, stop: int):
    starts, stops = [None] * len(x.shape), [None] * len(x.shape)
    starts[axis], stops[axis] = start, stop
    return g.apply("slice", x, starts=tuple(starts), stops=tuple(stops),
                   steps=(None,) * len(x.shape))


def test_loops_read_column_blocks_and_rows_where_they_lie() -> None:
    # an LSTM step: four gates are column blocks of one product, the step's input a
    # row of the whole sequence's; loops (elementwise, a reduction, one broadcast
    # into a bigger loop) read them in place, with no kernel copying them out, unless
    # the rows are too short to fill vectors (LOOP_VIEW_ROW)
    width = LOOP_VIEW_ROW
    for gate, copies in ((width, []), (width // 2, ["slice"] * 4)):
        g = Graph("gates")
        h, w = g.input("h", (6, 5)), g.input("w", (5, 4 * gate))
        xs = g.input("xs", (6, 7, 4 * gate))
        x_t = g.apply("reshape", _slice(g, xs, 1, 3, 4), shape=(6, 4 * gate))
        pre = g.apply("add", g.apply("matmul", h, w), x_t)
        i, f, c, o = (_slice(g, pre, 1, k * gate, (k + 1) * gate) for k in range(4))
        cell = g.apply("add", g.apply("mul", g.apply("sigmoid", i), g.apply("tanh", c)),
                       g.apply("sigmoid", f))
        g.output("h2", g.apply("mul", g.apply("sigmoid", o), g.apply("tanh", cell)))
        g.output("f_sum", g.apply("sum", f, axes=(0,)))
        row = g.apply("broadcast_to", _slice(g, w, 0, 2, 3), shape=(6, 4 * gate))
        g.output("wide", g.apply("mul", row, x_t))
        compiled = kernels.compile(g)
        ops = [n.op for k in compiled.program.kernels for n in k.nodes
               if n.op in ("slice", "reshape")]
        assert ops == copies, (gate, ops)
        rng = np.random.default_rng(4)
        inputs = {v.name: rng.standard_normal(v.shape).astype(np.float32) for v in (h, w, xs)}
        inputs["xs"][0, 3, :3] = (np.nan, np.inf, -0.0)  # special values reach the loops
        got, want = compiled.run(inputs), run_reference(g, inputs)
        for name, value in want.items():
            np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6, err_msg=name)


def test_loops_store_into_the_concats_that_stack_them() -> None:
    # an RNN's hidden states stacked over time: each step's loop stores its state into
    # the stack, which the next step's matmul and a weight gradient's transposed matmul
    # read in place (sgemm with a leading dimension); a cell's four gate gradients
    # joined: one loop stores into four column blocks. No concat kernel runs where the
    # rows are FILL_ROW long; shorter rows keep the concats (a flat loop and a copy
    # beat stores through short rows). A state the next step's loop reads too (a
    # GRU's) is stored into its stack only from rows of FILL_READ_ROW. A concat whose
    # piece a loop reads before any matmul does keeps its kernel (storing ahead would
    # split that loop from the one making the piece)
    short = FILL_ROW // 2
    for hidden in (short, FILL_ROW, FILL_READ_ROW):
        g = Graph("stack")
        h, w = g.input("h", (5, hidden)), g.input("w", (hidden, hidden))
        a = g.input("a", (5, hidden))
        states, mixed, m = [], [], h
        for _ in range(3):
            h = g.apply("tanh", g.apply("add", g.apply("matmul", h, w), a))
            states.append(h)
            m = g.apply("add", g.apply("mul", g.apply("tanh", g.apply("matmul", m, w)), a), m)
            mixed.append(m)
        for name, values in (("hs", states), ("ms", mixed)):
            g.output(name, g.apply("concat", *(g.apply("reshape", s, shape=(5, 1, hidden))
                                               for s in values), axis=1))
        g.output("wgrad", g.apply("matmul", g.apply("permute", states[1], perm=(1, 0)), h))
        square = g.apply("mul", a, a)
        g.output("gates", g.apply("concat", g.apply("sigmoid", a), g.apply("tanh", a),
                                  square, g.apply("exp", a), axis=1))
        e = g.apply("add", a, a)
        g.output("kept", g.apply("concat", e, g.apply("add", e, a), axis=0))
        compiled = kernels.compile(g)
        kept = sorted(k.nodes[0].outputs[0].shape for k in compiled.program.kernels
                      if k.nodes[0].op == "concat")
        stacks = [(5, 3, hidden)] * (2 if hidden < FILL_ROW else hidden < FILL_READ_ROW)
        joins = [(5, 4 * hidden)] * (hidden < FILL_ROW)
        assert kept == sorted(stacks + joins + [(10, hidden)]), (hidden, kept)
        rng = np.random.default_rng(6)
        inputs = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in
                  (("h", (5, hidden)), ("w", (hidden, hidden)), ("a", (5, hidden)))}
        inputs["w"] /= np.float32(np.sqrt(hidden))
        inputs["a"][0, :3] = (np.nan, np.inf, -0.0)  # special values reach the stores
        got, want = compiled.run(inputs), run_reference(g, inputs)
        for name, value in want.items():  # f32 sums of 128 products against float64
            np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-5, err_msg=name)


def _matmul_kernels(compiled) -> list[list[str]]:
    return [[n.op for n in k.nodes] for k in compiled.program.kernels
            if any(n.op == "matmul" for n in k.nodes)]


def test_sums_of_matmuls_run_as_one_kernel_of_accumulating_products(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # an unrolled RNN's weight gradient: one product a time step, states read
    # transposed from their stack (a leading dimension), gradients from buffers,
    # added up by a chain of adds; one kernel computes the sum, its threads sharing
    # one split of the output. Two products stay two matmuls and an add; a product
    # of a view sgemm cannot read in place (a column of every other row) leaves the
    # sum as it was; CUDA keeps each product its own kernel. The split is the
    # shape's and the machine's: one thread and two give the same bits
    steps, batch, hidden, width = 5, 100, 64, 256
    g = Graph("sums")
    hs = g.input("hs", (batch, steps, hidden))
    grads = [g.input(f"d{t}", (batch, width)) for t in range(steps)]
    w = g.input("w", (width, width))
    terms = [g.apply("matmul", g.apply("permute", g.apply(
        "reshape", _slice(g, hs, 1, t, t + 1), shape=(batch, hidden)), perm=(1, 0)), grads[t])
        for t in range(steps)]
    total = terms[0]
    for term in terms[1:]:
        total = g.apply("add", total, term)
    g.output("dw", total)
    g.output("pair", g.apply("add", g.apply("matmul", grads[0], w), g.apply("matmul", grads[1], w)))
    # every other unit of a step's state: strides (steps * hidden, 2)
    halves = g.apply("slice", hs, starts=(None, None, None), stops=(None, None, None),
                     steps=(None, None, 2))
    odd = [g.apply("matmul", g.apply("reshape", _slice(g, halves, 1, t, t + 1),
                                     shape=(batch, hidden // 2)),
                   _slice(g, w, 0, 0, hidden // 2)) for t in range(3)]
    g.output("strided", g.apply("add", g.apply("add", odd[0], odd[1]), odd[2]))
    compiled = kernels.compile(g)
    assert _matmul_kernels(compiled).count(["matmul"] * steps + ["add"] * (steps - 1)) == 1
    assert _matmul_kernels(compiled).count(["matmul"]) == 2 + 3
    cuda = lower(g, device="cuda")
    assert sum(n.op == "matmul" for k in cuda.kernels for n in k.nodes
               if len(k.nodes) == 1) == steps + 2 + 3
    rng = np.random.default_rng(8)
    inputs = {v.name: rng.standard_normal(v.shape).astype(np.float32) for v in g.inputs}
    inputs["d2"][0, :3] = (np.nan, np.inf, -0.0)  # special values reach the sum
    got, want = compiled.run(inputs), run_reference(g, inputs)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-4, err_msg=name)
    assert np.isnan(got["dw"]).any() and not np.isnan(got["dw"]).all()
    if threads.env.usable_cores() > 1:
        assert any("def chunk(" in text and "1.0)" in text
                   for text in compiled.generated.kernel_sources)
    for result in runs_by_threads(compiled, inputs, [1, 2], monkeypatch):
        assert result["dw"].tobytes() == got["dw"].tobytes()


def test_matmuls_over_an_inner_dimension_of_one_are_elementwise_products() -> None:
    # an RNN's input projection of one feature: the product joins the loop adding
    # the bias (no matmul kernel); its numbers are the matmul's, a product of -0
    # summed onto zero (+0, as numpy's matmul), NaN and inf as they come
    g = Graph("outer")
    x, w, b = g.input("x", (7, 1)), g.input("w", (1, 12)), g.input("b", (12,))
    xs, ws = g.input("xs", (3, 5, 1)), g.input("ws", (1, 4))
    g.output("proj", g.apply("add", g.apply("matmul", x, w), b))
    g.output("batched", g.apply("matmul", xs, ws))
    g.output("zero", g.apply("matmul", x, w))
    compiled = kernels.compile(g)
    assert _matmul_kernels(compiled) == []
    rng = np.random.default_rng(9)
    inputs = {v.name: rng.standard_normal(v.shape).astype(np.float32) for v in g.inputs}
    inputs["x"][:4, 0] = (-1.0, -0.0, np.nan, np.inf)
    inputs["w"][0, :3] = (0.0, 2.0, -np.inf)
    got = compiled.run(inputs)
    with np.errstate(invalid="ignore"):  # inf * 0
        want = {"proj": np.matmul(inputs["x"], inputs["w"]) + inputs["b"],
                "batched": np.matmul(inputs["xs"], inputs["ws"]),
                "zero": np.matmul(inputs["x"], inputs["w"])}
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    assert not np.signbit(got["zero"][0, 0]) and got["zero"][0, 0] == 0  # -1 * 0


def test_merged_heads_are_read_in_place_by_concat_and_copied_once_for_matmul() -> None:
    # (B, H, T, D) -> (B, T, H, D) -> (B, T, C): no strides describe the merge, so a
    # concat reads it by index arithmetic and a matmul gets one copy, not two
    g = Graph("merge")
    y, w = g.input("y", (2, 3, 5, 4)), g.input("w", (12, 6))
    merged = g.apply("reshape", g.apply("permute", y, perm=(0, 2, 1, 3)), shape=(2, 5, 12))
    g.output("joined", g.apply("concat", merged, g.apply("slice", merged, starts=(None, None, 3),
                               stops=(None, None, 7), steps=(None, None, None)), axis=2))
    g.output("proj", g.apply("matmul", merged, w))
    compiled = kernels.compile(g)
    ops = [k.nodes[0].op for k in compiled.program.kernels if k.kind == "op"]
    assert ops == ["reshape", "concat", "matmul"]   # the one copy, then both read it
    r = np.random.default_rng(4)
    inputs = {"y": r.standard_normal((2, 3, 5, 4)).astype(np.float32),
              "w": r.standard_normal((12, 6)).astype(np.float32)}
    got, want = compiled.run(inputs), run_reference(g, inputs)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("shape,strides,new,want", [
    ((4, 6), (6, 1), (2, 2, 6), (12, 6, 1)),             # split a contiguous axis
    ((3, 4), (12, 1), (3, 2, 2), (12, 2, 1)),            # a slice's rows stay apart
    ((3, 2, 4), (8, 1, 2), (3, 8), None),                # permuted axes do not merge
    ((2, 3, 4), (48, 16, 1), (2, 12), None),             # rows with a gap do not merge
    ((2, 3, 4), (24, 8, 2), (6, 4), (8, 2)),             # a strided run merges on its own
    ((5, 1, 3), (3, 3, 1), (15,), (1,)),
])
def test_reshaped_strides(shape, strides, new, want) -> None:
    from sexpgpu.kernels.views import reshaped_strides

    assert reshaped_strides(shape, strides, new) == want
    if want is not None:  # the same elements, read the same way as numpy's view
        base = np.arange(200)
        old = np.lib.stride_tricks.as_strided(base, shape, [s * 8 for s in strides])
        view = np.lib.stride_tricks.as_strided(base, new, [s * 8 for s in want])
        np.testing.assert_array_equal(view, old.reshape(new))


def test_graphs_share_kernel_modules() -> None:
    # a run's eval graph repeats its step graph's loops: one module, compiled once
    def graph(name: str, scale: float) -> Graph:
        g = Graph(name)
        x = g.input("x", (4, 6))
        g.output("y", g.apply("tanh", g.apply("mul", x, _c(g, scale))))
        return g

    first, second = kernels.compile(graph("a", 3.0)), kernels.compile(graph("b", 3.0))
    assert first.source != second.source                      # the graph name is in its header
    assert first.generated.kernel_sources == second.generated.kernel_sources
    assert first.module.f0 is second.module.f0


@pytest.mark.parametrize("bad, code_part", [
    ({"g": np.ones((5, 3), np.float32)}, "no array for input 'p'"),
    ({"p": np.ones((5, 3), np.float32), "g": np.ones((3, 5), np.float32)}, "wrong shape"),
    ({"p": np.ones((5, 3), np.float64), "g": np.ones((5, 3), np.float32)}, "updated in place"),
])
def test_wrong_inputs_are_diagnostics(bad, code_part) -> None:
    g = Graph("sgd")
    p = g.input("p", (5, 3), role="param")
    grad = g.input("g", (5, 3))
    g.update(p, g.apply("sub", p, grad))
    compiled = kernels.compile(g)
    with pytest.raises(SexpError) as info:
        compiled.run(bad)
    assert info.value.diagnostic.code == "E-RUN-INPUT"
    assert code_part in info.value.diagnostic.message


def test_an_updated_array_reshaped_or_retyped_in_place_is_checked_again() -> None:
    """The step takes last step's checked view of an updated input without checking
    it again, unless its shape or dtype was reassigned in place since."""
    g = Graph("sgd")
    p = g.input("p", (5, 3), role="param")
    grad = g.input("g", (5, 3))
    g.update(p, g.apply("sub", p, grad))
    compiled = kernels.compile(g)
    param, step = np.ones((5, 3), np.float32), np.ones((5, 3), np.float32)
    compiled.run({"p": param, "g": step})
    compiled.run({"p": param, "g": step})
    np.testing.assert_array_equal(param, -1.0)  # updated in the caller's array, twice
    param.shape = (3, 5)
    with pytest.raises(SexpError, match="wrong shape"):
        compiled.run({"p": param, "g": step})
    param.shape = (5, 3)
    param.dtype = np.int32
    with pytest.raises(SexpError, match="updated in place"):
        compiled.run({"p": param, "g": step})


def test_bf16_storage_round_trip() -> None:
    g = Graph("bf16")
    x = g.input("x", (1000,))
    h = g.apply("cast", x, dtype="bf16")
    g.output("h", h)
    g.output("back", g.apply("mul", g.apply("cast", h, dtype="f32"), _c(g, 2.0)))
    x0 = np.random.default_rng(2).standard_normal(1000).astype(np.float32)
    got = kernels.compile(g).run({"x": x0})
    want = run_reference(g, {"x": x0})
    np.testing.assert_array_equal(got["h"], want["h"])
    np.testing.assert_array_equal(got["back"], want["back"])


def test_mlp_step_matches_reference_and_learns() -> None:
    from sexpgpu.kernels import demo

    fn = demo.mlp_step(batch=16, sizes=(8, 16, 4), lr=1e-2)
    compiled, reference = fn.compile("kernels"), fn.compile("reference")
    losses = []
    for step in range(20):
        data = demo.batch(step % 4, n=16, d=8, classes=4)
        got, want = compiled(**data), reference(**data)
        np.testing.assert_allclose(got["loss"], want["loss"], rtol=1e-4)
        losses.append(float(got["loss"]))
    for name, value in compiled.arrays.items():
        np.testing.assert_allclose(value, reference.arrays[name], rtol=1e-3, atol=1e-5)
    assert losses[-1] < losses[0]


CACHE_SCRIPT = textwrap.dedent("""
    import json, time
    import numpy as np
    t0 = time.perf_counter()
    from sexpgpu import kernels
    from sexpgpu.kernels import demo
    fn = demo.mlp_step(batch=8, sizes=(6, 12, 3))
    prog = fn.compile("kernels")
    out = prog(**demo.batch(0, n=8, d=6, classes=3))
    from numba.core.dispatcher import Dispatcher
    module = prog.runner.module
    compiled = [n for n in dir(module) if isinstance(getattr(module, n), Dispatcher)
                for sig in getattr(module, n).stats.cache_misses]
    print(json.dumps({"loss": float(out["loss"]), "misses": compiled,
                      "seconds": time.perf_counter() - t0}))
""")


def test_second_compile_in_new_process_compiles_nothing(tmp_path) -> None:
    env = {**os.environ, "SEXPGPU_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", CACHE_SCRIPT], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert runs[0]["misses"], "the first run should compile (cold cache)"
    assert runs[1]["misses"] == [], "the second run should load every kernel from the cache"
    assert runs[0]["loss"] == runs[1]["loss"]
    assert list((tmp_path / "kernels").glob("sexpgpu_kernels_*.py"))


def views_graph() -> Graph:
    """Transposes read by matmul in place, broadcasts read by loops and by a
    structured op, reshapes of constants and identities of broadcasts."""
    g = Graph("views")
    a = g.input("a", (2, 5, 3))
    b = g.input("b", (4, 5))
    v = g.input("v", (3,))
    at = g.apply("permute", a, perm=(0, 2, 1))                        # (2, 3, 5)
    bt = g.apply("permute", b, perm=(1, 0))                           # (5, 4)
    g.output("mm", g.apply("matmul", at, bt))                         # (2, 3, 4)
    g.output("at2", g.apply("exp", at))                               # transpose by a loop
    wide = g.apply("broadcast_to", v, shape=(5, 3))
    same = g.apply("stop_gradient", wide)
    g.output("loop", g.apply("mul", same, g.apply("reshape", _c(g, 2.0), shape=(1, 1))))
    g.output("blas", g.apply("matmul", a, g.apply("broadcast_to", g.apply(
        "reshape", v, shape=(3, 1)), shape=(3, 2))))
    return g


def test_views_cost_no_kernel_and_match_reference() -> None:
    g = views_graph()
    ops = [n.op for k in lower(g).kernels for n in k.nodes]
    assert ops.count("permute") == 1        # only the transpose a loop reads is copied
    r = np.random.default_rng(3)
    inputs = {"a": r.standard_normal((2, 5, 3)).astype(np.float32),
              "b": r.standard_normal((4, 5)).astype(np.float32),
              "v": r.standard_normal(3).astype(np.float32)}
    got = kernels.compile(g).run(inputs)
    want = run_reference(g, inputs)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)


def merged_heads_graph() -> Graph:
    """Heads merged after a permute (a reshape no strides describe), copied alone and
    concatenated with another such and a plain input, as attention's backward does."""
    g = Graph("merged-heads")
    xs = [g.input(f"x{k}", (2, 3, 4, 5)) for k in range(2)]            # (B nh T hs)
    merged = [g.apply("reshape", g.apply("permute", x, perm=(0, 2, 1, 3)), shape=(2, 4, 15))
              for x in xs]                                               # (B T C)
    plain = g.input("p", (2, 4, 6))
    g.output("copy", g.apply("exp", merged[0]))
    g.output("cat", g.apply("concat", merged[0], plain, merged[1], axis=2))
    g.output("cat0", g.apply("concat", merged[1], merged[0], axis=0))
    return g


def test_merged_heads_are_copied_by_strides_over_their_grid() -> None:
    g = merged_heads_graph()
    r = np.random.default_rng(5)
    inputs = {"x0": r.standard_normal((2, 3, 4, 5)).astype(np.float32),
              "x1": r.standard_normal((2, 3, 4, 5)).astype(np.float32),
              "p": r.standard_normal((2, 4, 6)).astype(np.float32)}
    compiled = kernels.compile(g)
    got = compiled.run(inputs)
    want = run_reference(g, inputs)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, err_msg=name)
    # the CPU loops index the grid (B T nh hs): no index is divided, and the innermost
    # loop copies a row slice (indexed by its variable alone: vectorised)
    sources = "".join(compiled.generated.kernel_sources)
    assert "concat" in sources and " // " not in sources and " % " not in sources
    assert "d_ = " in sources and "s_ = " in sources


def test_a_concat_of_a_transposed_view_copies_element_by_element() -> None:
    """An input whose last axis is strided (a permute read in place) has no row
    slice to copy: its loop reads it by strides, and the plain input beside it by
    row slices."""
    g = Graph("concat-transposed")
    x, y = g.input("x", (5, 3, 4)), g.input("y", (4, 3, 2))
    g.output("joined", g.apply("concat", g.apply("permute", x, perm=(2, 1, 0)), y, axis=2))
    compiled = kernels.compile(g)
    assert [k.nodes[0].op for k in compiled.program.kernels] == ["concat"]  # x in place
    r = np.random.default_rng(6)
    inputs = {"x": r.standard_normal((5, 3, 4)).astype(np.float32),
              "y": r.standard_normal((4, 3, 2)).astype(np.float32)}
    np.testing.assert_array_equal(compiled.run(inputs)["joined"],
                                  run_reference(g, inputs)["joined"])
    sources = "".join(compiled.generated.kernel_sources)
    assert sources.count("d_ = ") == 1  # y's rows; x's loop reads by strides


@pytest.mark.parametrize(("parts", "axis", "stacked", "dtype"), [
    (10, 1, True, "f32"), (8, 2, True, "f32"), (9, 0, True, "bf16"), (7, 1, False, "f32")])
def test_a_concat_of_many_like_inputs_copies_them_in_one_loop(parts: int, axis: int,
                                                              stacked: bool, dtype: str) -> None:
    """Many inputs of one shape and dtype (an unrolled RNN's states stacked) are copied
    by one loop nest over a tuple of their buffers, equal bit for bit to the reference
    with NaN, infinities and -0 among them; fewer keep a nest each."""
    g = Graph("stack")
    xs = [g.input(f"x{k}", (3, 2, 5), dtype) for k in range(parts)]
    g.output("joined", g.apply("concat", *xs, axis=axis))
    compiled = kernels.compile(g)
    r = np.random.default_rng(parts)
    inputs = {f"x{k}": r.standard_normal((3, 2, 5)).astype(np.float32) for k in range(parts)}
    inputs["x3"].flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    got, want = compiled.run(inputs)["joined"], run_reference(g, inputs)["joined"]
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    source = "".join(compiled.generated.kernel_sources)
    assert ("for k_ in range(" in source) == stacked
    assert source.count("d_ = ") == (1 if stacked else parts)


def test_a_concat_of_many_inputs_with_a_view_among_them_keeps_a_nest_each() -> None:
    """An input read where it lies (a permute) is not a buffer like the others: each
    input keeps its own loop nest, and the result is the reference's."""
    g = Graph("stack-view")
    xs = [g.input(f"x{k}", (4, 3, 5)) for k in range(8)]
    t = g.input("t", (5, 3, 4))
    g.output("joined", g.apply("concat", *xs, g.apply("permute", t, perm=(2, 1, 0)), axis=2))
    compiled = kernels.compile(g)
    assert [k.nodes[0].op for k in compiled.program.kernels] == ["concat"]  # t in place
    r = np.random.default_rng(9)
    inputs = {f"x{k}": r.standard_normal((4, 3, 5)).astype(np.float32) for k in range(8)}
    inputs["t"] = r.standard_normal((5, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(compiled.run(inputs)["joined"],
                                  run_reference(g, inputs)["joined"])
    assert "for k_ in range(" not in "".join(compiled.generated.kernel_sources)


@pytest.mark.parametrize("kind", ["broadcast", "full", "reshaped-full"])
def test_a_value_loops_inline_is_copied_before_a_later_reader_needs_it(kind: str) -> None:
    """A loop reads a broadcast in place; a matmul placed after that loop closed
    needs its elements: the copy kernel runs before the matmul, and the loop still
    reads the source (it once read a buffer filled later). A constant tensor is
    filled first and read like any value by both."""
    g = Graph(f"late-copy-{kind}")
    x, w, c = g.input("x", (3, 4)), g.input("w", (4, 2)), g.input("c", (4,))
    if kind == "broadcast":
        b = g.apply("broadcast_to", c, shape=(3, 4))
    elif kind == "full":
        b = g.apply("full", shape=(3, 4), dtype="f32", value=0.5)
    else:
        b = g.apply("reshape", g.apply("full", shape=(12,), dtype="f32", value=0.5),
                    shape=(3, 4))
    g.output("s", g.apply("sum", g.apply("add", x, b), axes=None))
    g.output("m", g.apply("matmul", b, w))
    ops = [[n.op for n in k.nodes] for k in lower(g).kernels]
    assert ops[:2] == ([["add", "sum"], ["broadcast_to"]] if kind == "broadcast" else
                       [["full"], ["add", "sum"]])
    r = np.random.default_rng(6)
    inputs = {k: r.standard_normal(v.shape).astype(np.float32) for k, v in
              (("x", x), ("w", w), ("c", c))}
    got, want = kernels.compile(g).run(inputs), run_reference(g, inputs)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("value", [-np.inf, np.inf, np.nan, -0.0, 3e38, 1e-40, 0.9, 7])
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_constants_are_literals_of_their_dtype(value: float, dtype: str) -> None:
    """A `full` of any value compiles, inlined in a loop (a scalar broadcast) and
    filled into a buffer (a tensor), and equals the reference bit for bit (bf16:
    rounded as the reference rounds)."""
    g = Graph("constants")
    x = g.input("x", (3,), dtype)
    c = g.apply("broadcast_to", g.apply("full", shape=(), dtype=dtype, value=value), shape=(3,))
    g.output("sum", g.apply("add", x, c))
    g.output("fill", g.apply("full", shape=(2,), dtype=dtype, value=value))
    inputs = {"x": np.zeros(3, np.float32)}
    compiled = kernels.compile(g)
    got, want = compiled.run(inputs), run_reference(g, inputs)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    if value == 0.9 and dtype == "f32":
        # the shortest decimal that rounds to the f32, not its f64 expansion
        assert "np.float32(0.9)" in "".join(compiled.generated.kernel_sources)


def _indexed_graph() -> Graph:
    """Every op that indexes, each at its own line."""
    g = Graph("indexed")
    table, idx = g.input("table", (4, 3)), g.input("idx", (2, 3), "i64")
    for line, (name, build_fn) in enumerate((
            ("take", lambda: g.apply("take", table, idx, axis=0)),
            ("scatter", lambda: g.apply("scatter_add", g.apply(
                "full", shape=(2, 3, 5), dtype="f32", value=1.5), idx, axis=0, size=4)),
            ("along", lambda: build.take_along_axis(g, g.apply("permute", table, perm=(1, 0)),
                                                    g.apply("reshape", idx, shape=(3, 2)), 1)),
            ("onehot", lambda: build.one_hot(g, idx, 4)))):
        with g.at(Span("model.sx", line + 1, 1)):
            g.output(name, build_fn())
    return g


def test_an_index_out_of_range_is_e_index_from_reference_and_kernels() -> None:
    """The index rule: [-n, n) is valid, negative from the end (numpy's take); any
    other index is E-INDEX at the op's line, from the reference and the compiled
    step alike, which never reads outside a buffer for it; the next good step runs."""
    g = _indexed_graph()
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    good = {"table": table, "idx": np.array([[0, -1, 3], [-4, 2, 2]])}
    compiled = kernels.compile(g)
    want = run_reference(g, dict(good))
    np.testing.assert_array_equal(want["take"], table[[[0, 3, 3], [0, 2, 2]]])
    for bad, first in ((4, "model.sx:1:1"), (-5, "model.sx:1:1")):
        idx = good["idx"].copy()
        idx[1, 1] = bad
        for run in (lambda feed: run_reference(g, feed), compiled.run):
            with pytest.raises(SexpError) as info:
                run({"table": table, "idx": idx})
            diag = info.value.diagnostic
            assert (diag.code, str(diag.span), diag.actual) == ("E-INDEX", first, str(bad))
            assert diag.expected == "an index in [-4, 3]"
        got = compiled.run(good)  # the error flag was cleared
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)


@pytest.mark.parametrize("name, line", [("scatter", 2), ("along", 3), ("onehot", 4)])
def test_each_indexed_op_checks_its_indices(name: str, line: int) -> None:
    g = _indexed_graph()
    idx = np.array([[0, 1, 2], [3, 0, 9]])
    with pytest.raises(SexpError) as info:
        kernels.compile(g, outputs=[name]).run({"table": np.ones((4, 3), np.float32),
                                                "idx": idx})
    assert info.value.diagnostic.code == "E-INDEX"
    assert str(info.value.diagnostic.span) == f"model.sx:{line}:1"
    assert info.value.diagnostic.message.startswith(
        {"scatter": "scatter_add", "along": "take_along_axis", "onehot": "one_hot"}[name])


@pytest.mark.parametrize("axes", [(1,), (0,), (0, 2)])
def test_sibling_reductions_share_one_loop(axes: tuple) -> None:
    """Reductions of one loop over the same axes, placed one after another, are
    one kernel with an accumulator each (rows and, on the CPU, the walk of
    leading axes), NaN-propagating max/min among them; a reduction over other
    axes starts its own kernel."""
    g = Graph("siblings")
    x = g.input("x", (3, 4, 5))
    d = g.apply("sub", x, g.apply("full", shape=(), dtype="f32", value=0.5))
    sq = g.apply("square", d)
    outs = [g.apply("sum", sq, axes=axes), g.apply("sum", d, axes=axes),
            g.apply("amax", d, axes=axes), g.apply("amin", sq, axes=axes),
            g.apply("sum", d, axes=(2,))]
    for k, v in enumerate(outs):
        g.output(f"r{k}", v)
    groups = [[n.op for n in k.nodes] for k in lower(g).kernels]
    assert groups == [["sub", "square", "sum", "sum", "amax", "amin"], ["sum"]]
    xs = np.random.default_rng(4).standard_normal((3, 4, 5)).astype(np.float32)
    xs[1, 2, 3] = np.nan
    got, want = kernels.compile(g).run({"x": xs}), run_reference(g, {"x": xs})
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_adjacent_reduced_axes_read_through_lin_are_one_loop() -> None:
    """A convolution's bias gradient after its relu (axes 0, 2, 3 of N C H W): H and W
    are one loop of H*W (28 alone left 16-lane vectors mostly unused); an axis an
    operand reads by its own index (a per-row scale broadcast along H) keeps its
    loop. Both against numpy, NaN included."""
    g = Graph("bias-grad")
    y, dy = g.input("y", (4, 3, 28, 28)), g.input("dy", (4, 3, 28, 28))
    scale = g.input("scale", (28, 1))
    masked = g.apply("where", g.apply("gt", y, g.apply("full", shape=(), dtype="f32",
                                                       value=0.0)), dy,
                     g.apply("full", shape=(), dtype="f32", value=0.0))
    g.output("db", g.apply("sum", masked, axes=(0, 2, 3)))
    g.output("ds", g.apply("sum", g.apply("mul", masked, scale), axes=(0, 2, 3)))
    compiled = kernels.compile(g)
    texts = [t for t in compiled.generated.kernel_sources if "sum" in t.splitlines()[0]]
    assert any("in range(784)" in t for t in texts)           # H and W merged
    assert any("in range(28)" in t and "i2" in t for t in texts)  # H read by index
    r = np.random.default_rng(8)
    feed = {"y": r.standard_normal((4, 3, 28, 28)).astype(np.float32),
            "dy": r.standard_normal((4, 3, 28, 28)).astype(np.float32),
            "scale": r.standard_normal((28, 1)).astype(np.float32)}
    feed["dy"][2, 1, 5, 7] = np.nan
    feed["y"][2, 1, 5, 7] = 1.0
    got = compiled.run(feed)
    mask = np.where(feed["y"] > 0, feed["dy"].astype(np.float64), 0.0)
    np.testing.assert_allclose(got["db"], mask.sum(axis=(0, 2, 3)), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got["ds"], (mask * feed["scale"]).sum(axis=(0, 2, 3)),
                               rtol=1e-5, atol=1e-4)
    assert np.isnan(got["db"][1]) and not np.isnan(got["db"][0])


@pytest.mark.parametrize("seed", range(24))
def test_joined_loop_axes_keep_every_broadcast(seed: int) -> None:
    """Random broadcasts of three operands into one loop (axes of 1 among them, some
    joined, some not): the loop's values against numpy's, and the 2-d CNN's relu
    after a bias walks H*W as one loop."""
    r = np.random.default_rng(seed)
    domain = tuple(int(n) for n in r.choice([1, 2, 3, 5], size=int(r.integers(2, 6))))
    shapes = [tuple(n if r.random() < 0.6 else 1 for n in domain)[int(r.integers(0, 2)):]
              for _ in range(3)]
    shapes[0] = domain  # one operand walks the whole loop
    g = Graph("joined")
    xs = [g.input(f"x{k}", shape) for k, shape in enumerate(shapes)]
    y = g.apply("mul", g.apply("add", xs[0], xs[1]), g.apply("exp", xs[2]))
    g.output("y", g.apply("sub", y, xs[1]))
    feed = {f"x{k}": r.standard_normal(shape).astype(np.float32)
            for k, shape in enumerate(shapes)}
    got = kernels.compile(g).run(feed)["y"]
    x0, x1, x2 = (feed[f"x{k}"].astype(np.float64) for k in range(3))
    np.testing.assert_allclose(got, (x0 + x1) * np.exp(x2) - x1, rtol=2e-6, atol=1e-6,
                               err_msg=str(shapes))


def test_a_bias_and_relu_over_images_walk_each_channel_as_one_loop() -> None:
    g = Graph("bias-relu")
    x, b = g.input("x", (4, 3, 28, 28)), g.input("b", (3, 1, 1))
    g.output("y", g.apply("relu", g.apply("add", x, b)))
    texts = kernels.compile(g).generated.kernel_sources
    assert any("in range(784)" in t and "in range(28)" not in t for t in texts)


def test_transpose_of_a_transpose_is_the_source_buffer() -> None:
    # a linear layer: forward x @ W^T, input gradient g @ (W^T)^T = g @ W
    g = Graph("linear-grad")
    x, w, dy = g.input("x", (3, 4)), g.input("w", (5, 4)), g.input("dy", (3, 5))
    wt = g.apply("permute", w, perm=(1, 0))
    g.output("y", g.apply("matmul", x, wt))
    g.output("dx", g.apply("matmul", dy, g.apply("permute", wt, perm=(1, 0))))
    assert [n.op for k in lower(g).kernels for n in k.nodes] == ["matmul", "matmul"]
    r = np.random.default_rng(5)
    inputs = {k: r.standard_normal(v.shape).astype(np.float32) for k, v in
              (("x", x), ("w", w), ("dy", dy))}
    got, want = kernels.compile(g).run(inputs), run_reference(g, inputs)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)


def _kernel_functions(compiled) -> list[str]:
    """The step module's kernel functions, one per distinct kernel text."""
    names = re.findall(r"^from sexpgpu_kernels_\w+ import kernel as (f\d+)", compiled.source,
                       re.MULTILINE)
    assert len(names) == len(compiled.generated.kernel_sources)
    return names


def test_repeated_loops_share_one_function() -> None:
    # an unrolled recurrence repeats the same loop over other buffers: compile it once
    g = Graph("unrolled")
    h = g.input("h", (4, 6))
    w = g.input("w", (6, 6))
    for _ in range(5):
        h = g.apply("tanh", g.apply("add", g.apply("matmul", h, w), _c(g, 0.1)))
    g.output("h", h)
    compiled = kernels.compile(g)
    shared = _kernel_functions(compiled)
    assert len(shared) == 2          # one matmul, one add+tanh loop, each called 5 times
    r = np.random.default_rng(4)
    inputs = {"h": r.standard_normal((4, 6)).astype(np.float32),
              "w": r.standard_normal((6, 6)).astype(np.float32) * 0.3}
    np.testing.assert_allclose(compiled.run(inputs)["h"], run_reference(g, inputs)["h"],
                               rtol=1e-5, atol=1e-6)


def test_loops_differing_only_in_offsets_share_one_function() -> None:
    # offsets are arguments: an unrolled RNN's time slices compile once
    g = Graph("offsets")
    x = g.input("x", (10, 6))
    for k, start in enumerate([2, 3, 6]):  # (0 and 1 stay literals)
        part = g.apply("slice", x, starts=(start, 0), stops=(start + 4, 6), steps=(1, 1))
        g.output(f"y{k}", g.apply("tanh", g.apply("matmul", part, g.apply("permute", part,
                                                                          perm=(1, 0)))))
    compiled = kernels.compile(g)
    calls = re.findall(r"^    (f\d+)\(", compiled.source, re.MULTILINE)
    defined = _kernel_functions(compiled)
    assert len(calls) == 3 * len(defined)          # every kernel's function serves 3 slices
    x0 = np.random.default_rng(5).standard_normal((10, 6)).astype(np.float32)
    got, want = compiled.run({"x": x0}), run_reference(g, {"x": x0})
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_long_single_loops_of_different_sizes_share_one_function() -> None:
    # an optimizer's update of each parameter: one loop per tensor, the same text but
    # for its length, which is an argument when the loop is long (short ones unroll)
    from sexpgpu.kernels.codegen import FLAT_SHARED_TRIPS

    g = Graph("flat")
    sizes = [FLAT_SHARED_TRIPS, 3 * FLAT_SHARED_TRIPS + 5, 7]
    for k, n in enumerate(sizes):
        x = g.input(f"x{k}", (n,))
        g.output(f"y{k}", g.apply("tanh", g.apply("mul", x, _c(g, 0.5))))
    compiled = kernels.compile(g)
    assert len(_kernel_functions(compiled)) == 2       # the two long loops share one
    assert f"range({sizes[2]})" in "".join(compiled.generated.kernel_sources)
    r = np.random.default_rng(6)
    inputs = {f"x{k}": r.standard_normal(n).astype(np.float32) for k, n in enumerate(sizes)}
    got, want = compiled.run(inputs), run_reference(g, inputs)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-7, err_msg=name)


def test_whole_tensor_sums_of_different_shapes_share_one_function() -> None:
    # a grad norm: each parameter's sum of squares, whatever its shape, is one loop
    # over its elements with the count as an argument; a max keeps numpy's NaN
    from sexpgpu.kernels.codegen import FLAT_SHARED_TRIPS

    g = Graph("norms")
    shapes = [(FLAT_SHARED_TRIPS,), (16, 9), (3, 5, 7), (2, 3)]
    for k, shape in enumerate(shapes):
        x = g.input(f"x{k}", shape)
        g.output(f"s{k}", g.apply("sum", g.apply("mul", x, x), axes=None, keepdims=False))
        g.output(f"m{k}", g.apply("amax", x, axes=None, keepdims=False))
    compiled = kernels.compile(g)
    texts = "".join(compiled.generated.kernel_sources)
    assert texts.count("for lin in range(n0):") == 2   # the long sums and maxes
    assert "range(6)" in texts and "for i0 in" not in texts
    r = np.random.default_rng(7)
    inputs = {f"x{k}": r.standard_normal(s).astype(np.float32) for k, s in enumerate(shapes)}
    inputs["x1"][4, 2] = np.nan
    inputs["x2"][0, 0, 1] = np.inf
    got, want = compiled.run(inputs), run_reference(g, inputs)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, err_msg=name)
    assert np.isnan(got["m1"]) and np.isnan(got["s1"]) and got["s2"] == np.inf


def test_nested_loops_differing_only_in_their_batch_share_one_function() -> None:
    # a step graph and an evaluate graph of another batch: a broadcasting loop nest's
    # outermost trip count is an argument, its inner ones stay literal (they unroll);
    # a reduction keeps its counts (LLVM proves its loads and stores apart with them)
    sources = []
    for batch in (100, 37):
        g = Graph(f"batch{batch}")
        x, b = g.input("x", (batch, 6)), g.input("b", (6,))
        y = g.apply("tanh", g.apply("add", x, g.apply("broadcast_to", b, shape=(batch, 6))))
        g.output("y", y)
        g.output("s", g.apply("sum", x, axes=(0,), keepdims=False))
        compiled = kernels.compile(g)
        r = np.random.default_rng(batch)
        inputs = {"x": r.standard_normal((batch, 6)).astype(np.float32),
                  "b": r.standard_normal(6).astype(np.float32)}
        got, want = compiled.run(inputs), run_reference(g, inputs)
        for name in want:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-6)
        sources.append(set(compiled.generated.kernel_sources))
    shared = sources[0] & sources[1]
    assert len(shared) == 1 and "range(6)" in next(iter(shared))
    assert all(len(s) == 2 for s in sources)  # the sums differ: their counts stay


def test_parametrized_source_keeps_floats_exponents_bounds_and_strides() -> None:
    from sexpgpu.kernels.codegen import _parametrized

    lines, values = _parametrized(["for i0 in range(25):",
                                   "    p1[i0 * 75 + 3] = p0[i0 - 12] ** 3 * 2.5e-05 + 1e+10"])
    assert values == ["3", "12"]
    assert lines == ["for i0 in range(25):",
                     "    p1[i0 * 75 + n0] = p0[i0 - n1] ** 3 * 2.5e-05 + 1e+10"]


def test_batched_matmuls_become_one_sgemm() -> None:
    # a weight gradient sum(x^T g, batch) is one kernel (one sgemm over the
    # stacked rows); a batch times a shared weight is one sgemm; a matmul whose
    # product is also read elsewhere keeps its own kernel
    g = Graph("sgemm")
    x, dy = g.input("x", (3, 4, 5)), g.input("dy", (3, 4, 6))
    w = g.input("w", (6, 5))
    prod_ = g.apply("matmul", g.apply("permute", x, perm=(0, 2, 1)), dy)     # (3, 5, 6)
    g.output("dw", g.apply("sum", prod_, axes=(0,)))                         # (5, 6)
    g.output("y", g.apply("matmul", x, g.apply("permute", w, perm=(1, 0))))  # (3, 4, 6)
    again = g.apply("matmul", g.apply("permute", dy, perm=(0, 2, 1)), x)     # (3, 6, 5)
    g.output("again", again)
    g.output("again_sum", g.apply("sum", again, axes=(0,)))
    program = lower(g)
    ops = [[n.op for n in k.nodes] for k in program.kernels]
    assert ["matmul", "sum"] in ops
    assert ops.count(["matmul"]) == 2
    compiled = kernels.compile(g)
    sgemms = [src for src in compiled.generated.kernel_sources if "kernel (matmul" in src]
    assert len(sgemms) == 3
    assert sum("for " in src for src in sgemms) == 1                   # only `again` loops
    r = np.random.default_rng(4)
    inputs = {"x": r.standard_normal((3, 4, 5)).astype(np.float32),
              "dy": r.standard_normal((3, 4, 6)).astype(np.float32),
              "w": r.standard_normal((6, 5)).astype(np.float32)}
    got = compiled.run(inputs)
    want = run_reference(g, inputs)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5, err_msg=name)


def test_kernels_on_runs_the_step_on_the_given_arrays_each_call() -> None:
    # the benchmarks' call of a step's kernels alone: state updated in place by each
    # call, as `run` would, with the inputs it was made with
    g = Graph("kernels_on")
    a, b = g.input("a", (5, 7)), g.input("b", (7, 3))
    c = g.input("c", (5, 3), role="state")
    g.update(c, g.apply("add", c, g.apply("matmul", a, b)))
    r = np.random.default_rng(7)
    inputs = {x: r.standard_normal(shape).astype(np.float32)
              for x, shape in (("a", (5, 7)), ("b", (7, 3)), ("c", (5, 3)))}
    start = inputs["c"].copy()
    product = inputs["a"].astype(np.float64) @ inputs["b"]
    call = kernels.compile(g).kernels_on(inputs)
    call()
    np.testing.assert_allclose(inputs["c"], start + product, rtol=1e-5, atol=1e-5)
    call()
    np.testing.assert_allclose(inputs["c"], start + 2 * product, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("reshaped", [False, True])
def test_a_weight_gradient_of_merged_heads_is_one_sgemm(reshaped: bool) -> None:
    # the attention output's projection: heads merged after a permute are copied
    # once for the forward matmul; the weight gradient reads them (or a reshape of
    # them) from that copy and still folds its batch sum into one sgemm
    g = Graph("fold-view")
    y, w = g.input("y", (2, 3, 5, 4)), g.input("w", (12, 6))
    dy = g.input("dy", (2, 5, 6))
    merged = g.apply("reshape", g.apply("permute", y, perm=(0, 2, 1, 3)), shape=(2, 5, 12))
    g.output("proj", g.apply("matmul", merged, w))
    if reshaped:
        merged = g.apply("reshape", g.apply("reshape", merged, shape=(10, 12)), shape=(2, 5, 12))
    dy_t = g.apply("permute", dy, perm=(0, 2, 1))
    g.output("dw", g.apply("sum", g.apply("matmul", dy_t, merged), axes=(0,)))   # (6, 12)
    program = lower(g)
    assert ["matmul", "sum"] in [[n.op for n in k.nodes] for k in program.kernels]
    r = np.random.default_rng(5)
    inputs = {"y": r.standard_normal((2, 3, 5, 4)).astype(np.float32),
              "w": r.standard_normal((12, 6)).astype(np.float32),
              "dy": r.standard_normal((2, 5, 6)).astype(np.float32)}
    got, want = kernels.compile(g).run(inputs), run_reference(g, inputs)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5, err_msg=name)


def test_scatter_add_matches_gather_bit_for_bit() -> None:
    # the CPU scatter adds rows in index order, as the gather body sums them
    g = Graph("scatter")
    src, idx = g.input("src", (50, 8)), g.input("idx", (50,), "i64")
    g.output("out", g.apply("scatter_add", src, idx, axis=0, size=7))
    r = np.random.default_rng(5)
    inputs = {"src": r.standard_normal((50, 8)).astype(np.float32),
              "idx": r.integers(-7, 7, 50)}
    got = kernels.compile(g).run(inputs)["out"]
    want = np.zeros((7, 8), np.float32)
    for j, t in enumerate(inputs["idx"]):
        want[t] = want[t] + inputs["src"][j]
    np.testing.assert_array_equal(got, want)


def _mathfn(names: list[str], compiled: bool) -> list:
    """The kernels.mathfn helpers as Python, or compiled as the kernels call them
    (kernels/scalars.py: the kernels' flags, calling each other compiled)."""
    from sexpgpu.kernels import mathfn, scalars

    return [getattr(scalars if compiled else mathfn, name) for name in names]


def _ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in units of the f32 spacing at the exact value (finite ones)."""
    spacing = np.spacing(np.abs(exact.astype(np.float32))).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / spacing


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "njit"])
def test_f32_exp_and_tanh_are_within_two_ulp(compiled: bool) -> None:
    exp32, tanh32 = _mathfn(["fast_exp32", "fast_tanh32"], compiled)
    r = np.random.default_rng(7)
    xs = np.concatenate([np.linspace(-110.0, 95.0, 20001), r.standard_normal(5000) * 3,
                         [-87.5, -103.97, -104.0, -150.0, 88.4, 88.7, 88.72, 88.73, 100.0]]
                        ).astype(np.float32)
    with np.errstate(all="ignore"):  # the Python forms warn where f32 overflows
        exact = np.exp(xs.astype(np.float64))
        got = np.array([exp32(x) for x in xs], np.float32)
        finite = np.isfinite(exact.astype(np.float32))
    assert _ulps(got[finite], exact[finite]).max() <= 1.0
    assert np.array_equal(np.isinf(got), ~finite)        # overflow exactly where f32 does
    ts = np.concatenate([np.linspace(-12.0, 12.0, 20001), r.standard_normal(5000) * 1e-3,
                         [0.625, -0.625, 1e-30, 40.0]]).astype(np.float32)
    exact = np.tanh(ts.astype(np.float64))
    nan, inf = np.float32(np.nan), np.float32(np.inf)
    with np.errstate(all="ignore"):
        got = np.array([tanh32(x) for x in ts], np.float32)
        assert np.isnan(exp32(nan)) and np.isnan(tanh32(nan))
        assert exp32(-inf) == 0.0 and exp32(inf) == inf and tanh32(-inf) == -1.0
        assert np.signbit(tanh32(np.float32(-0.0)))
    assert _ulps(got, exact).max() <= 2.0


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "njit"])
def test_f32_sigmoid_is_one_over_one_plus_the_f32_exp_bit_for_bit(compiled: bool) -> None:
    # fast_sigmoid32 scales e^-x once, with no subnormal path: the same bits as
    # 1 / (1 + fast_exp32(-x)) everywhere, where the exponential overflows (x below
    # -88.72: 0) or its subnormal results vanish beside 1 (above 87: 1) included
    exp32, sigmoid32 = _mathfn(["fast_exp32", "fast_sigmoid32"], compiled)
    r = np.random.default_rng(11)
    nan, inf, one = np.float32(np.nan), np.float32(np.inf), np.float32(1.0)
    xs = np.concatenate([np.linspace(-110.0, 110.0, 40001), r.standard_normal(5000) * 5,
                         [-88.38, -88.4, -88.5, -88.72, -88.73, -89.0, -103.9, -150.0, 87.0,
                          87.5, 104.0, 0.0, -0.0, 1e-30, inf, -inf]]).astype(np.float32)
    with np.errstate(all="ignore"):  # the Python forms warn where f32 overflows
        want = np.array([one / (one + exp32(-x)) for x in xs], np.float32)
        got = np.array([sigmoid32(x) for x in xs], np.float32)
        assert np.isnan(sigmoid32(nan))
        assert sigmoid32(-inf) == 0.0 and sigmoid32(inf) == 1.0 and sigmoid32(-0.0) == 0.5
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
    normal = xs > -87.0  # the exact sigmoid a normal f32 number
    exact = 1.0 / (1.0 + np.exp(-xs[normal].astype(np.float64)))
    assert _ulps(got[normal], exact).max() <= 2.0


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "njit"])
def test_fast_log_equals_libm_after_f32_rounding(compiled: bool) -> None:
    import math

    (fast_log,) = _mathfn(["fast_log"], compiled)
    r = np.random.default_rng(9)
    xs = np.concatenate([r.random(20000) * 10.0 ** r.integers(-45, 38, 20000),
                         np.geomspace(0.5, 2.0, 20001),
                         [1.4142135, 1.4142137, 0.70710677, 1.0, 2.0, 1e-45, 3.4e38]]
                        ).astype(np.float32).astype(np.float64)
    got = np.array([fast_log(float(x)) for x in xs]).astype(np.float32)
    with np.errstate(divide="ignore"):  # 1e-45 rounds to 0 in f32 among the draws
        np.testing.assert_array_equal(got, np.log(xs).astype(np.float32))
    assert fast_log(5e-324) == math.log(5e-324)  # an f64 subnormal, scaled first
    assert fast_log(0.0) == -math.inf and fast_log(-0.0) == -math.inf
    assert fast_log(math.inf) == math.inf
    assert all(math.isnan(fast_log(v)) for v in (-1.0, -math.inf, math.nan))


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "njit"])
def test_f32_erf_is_within_one_point_two_ulp(compiled: bool) -> None:
    import math

    (erf32,) = _mathfn(["fast_erf32"], compiled)
    r = np.random.default_rng(8)
    xs = np.concatenate([np.linspace(-6.0, 6.0, 40001), r.standard_normal(10000),
                         r.uniform(0.9, 0.95, 5000), np.geomspace(1e-38, 1.0, 2000),
                         [0.921875, 0.92187506, 3.92, 4.0, 1e30]]).astype(np.float32)
    xs = np.concatenate([xs, -xs])
    exact = np.array([math.erf(float(x)) for x in xs])
    # the Python form squares 1e30 in f32, and its small branch (not selected) is inf - inf
    with np.errstate(over="ignore", invalid="ignore"):
        got = np.array([erf32(x) for x in xs], np.float32)
    assert _ulps(got, exact).max() <= 1.2
    nan, inf = np.float32(np.nan), np.float32(np.inf)
    with np.errstate(invalid="ignore"):  # the Python form makes NaN an int32 on the way
        assert np.isnan(erf32(nan)) and erf32(inf) == 1.0 and erf32(-inf) == -1.0
    assert np.signbit(erf32(np.float32(-0.0)))


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "njit"])
def test_fast_exp_and_tanh_equal_libm_after_f32_rounding(compiled: bool) -> None:
    import math

    fast_exp, fast_tanh = _mathfn(["fast_exp", "fast_tanh"], compiled)
    r = np.random.default_rng(6)
    xs = np.concatenate([r.standard_normal(20000) * s for s in (1e-9, 1e-3, 0.05, 1.0, 4.0, 30.0)]
                        + [np.array([0.0, -0.0, 0.0625, -0.0625, np.inf, -np.inf])])
    got = np.array([fast_tanh(float(x)) for x in xs], np.float32)
    np.testing.assert_array_equal(got, np.tanh(xs).astype(np.float32))
    assert np.isnan(fast_tanh(float("nan"))) and np.signbit(fast_tanh(-0.0))
    xs = np.concatenate([xs, r.uniform(-110.0, 90.0, 20000), [-745.0, -709.5, 88.8, 1e308]])
    with np.errstate(over="ignore"):
        want = np.exp(xs).astype(np.float32)
        got = np.array([fast_exp(float(x)) for x in xs]).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    assert math.isnan(fast_exp(float("nan")))


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "njit"])
def test_fast_erf_equals_libm_after_f32_rounding(compiled: bool) -> None:
    import math

    fast_exp, fast_erf = _mathfn(["fast_exp", "fast_erf"], compiled)
    r = np.random.default_rng(8)
    xs = np.concatenate([r.standard_normal(5000) * s for s in (1e-30, 1e-9, 1e-3, 0.5, 1.0, 3.0)]
                        + [np.linspace(-7.0, 7.0, 14001),
                           [0.0, -0.0, 1.0, -1.0, 6.0, -6.0, np.inf, -np.inf, 1e-310]])
    got = np.array([fast_erf(float(x)) for x in xs], np.float32)
    np.testing.assert_array_equal(got, np.array([math.erf(x) for x in xs], np.float32))
    assert math.isnan(fast_erf(float("nan"))) and np.signbit(fast_erf(-0.0))


def test_an_identity_of_a_view_is_the_view() -> None:
    """A broadcast to its own shape (or a stop_gradient) of a strided view read by a
    concat: no copy kernel for the identity, whose buffer nothing would hold."""
    g = Graph("identity-view")
    x = g.input("x", (2, 4))
    edge = g.apply("slice", x, starts=(None, 3), stops=(None, 4), steps=None)
    same = g.apply("broadcast_to", edge, shape=(2, 1))
    g.output("y", g.apply("concat", x, same, g.apply("stop_gradient", edge), axis=1))
    xs = np.arange(8, dtype=np.float32).reshape(2, 4)
    got = kernels.compile(g).run({"x": xs})["y"]
    np.testing.assert_array_equal(got, np.concatenate([xs, xs[:, 3:], xs[:, 3:]], axis=1))
