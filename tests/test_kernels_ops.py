"""Every registered op, compiled by `kernels` for the CPU, against the reference
interpreter over the op's own samples and over their special-value variant (one
compiled graph per op and set of cases); indexed ops' bad indices are E-INDEX."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from op_cases import assert_same_values, case_graph
from sexpgpu.kernels.structured import RENDERERS

from sexpgpu import kernels
from sexpgpu.diagnostics import SexpError, Span
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.ops._sampling import index_error_samples, special_samples
from sexpgpu.ir.ops.registry import OPS, get_op
from sexpgpu.ir.reference import run_reference

get_op("add")  # registers every op family
# kinds the lowering handles without a renderer (a composition has no node at all)
GENERIC_KINDS = ("elementwise", "reduce", "view", "composite")


def sample_graph(name: str, seed: int = 0) -> tuple[Graph, dict[str, np.ndarray]]:
    """One graph holding every sample of op `name` side by side."""
    return case_graph(name, get_op(name).samples(np.random.default_rng(seed)))


def test_every_op_has_a_kernel() -> None:
    """A structured op's renderer is registered under its name in kernels/structured.py
    (the IR never imports the kernels): every opaque op has one, every renderer an op."""
    missing = [name for name, op in OPS.items()
               if op.kind not in GENERIC_KINDS and name not in RENDERERS]
    assert not missing, f"ops with no kernel renderer: {missing}"
    stray = sorted(set(RENDERERS) - set(OPS))
    assert not stray, f"renderers of no registered op: {stray}"
    no_body = [name for name, op in OPS.items() if op.kind == "elementwise" and not op.scalar]
    assert not no_body, f"elementwise ops with no scalar body: {no_body}"


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_matches_reference(name: str) -> None:
    if get_op(name).samples is None:
        pytest.skip(f"{name} has no samples")
    g, inputs = sample_graph(name)
    expected = run_reference(g, {k: v.copy() for k, v in inputs.items()})
    got = kernels.compile(g).run(inputs)
    assert set(got) == set(expected)
    for key, want in expected.items():
        assert_same_values(got[key], want, key)


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_special_values_match_reference(name: str) -> None:
    """Every op's samples again with ±0, subnormals, ±inf, NaN, ±3e38, ±1e4 (and
    in-range negative indices; for elementwise ops every value against every
    other): the compiled CPU kernels give what the reference gives."""
    g, inputs = case_graph(name, special_samples(get_op(name), np.random.default_rng(1)))
    expected = run_reference(g, {k: v.copy() for k, v in inputs.items()})
    got = kernels.compile(g).run(inputs)
    assert set(got) == set(expected)
    for key, want in expected.items():
        assert_same_values(got[key], want, key)


INDEXED = sorted(name for name, op in OPS.items() if "indices" in op.extra)


@pytest.mark.parametrize("name", INDEXED)
def test_op_index_out_of_range_is_e_index(name: str) -> None:
    """An index just past either end of its axis: E-INDEX from the reference and
    from the compiled kernels, at the op's line."""
    cases = index_error_samples(get_op(name), np.random.default_rng(1))
    assert cases, f"{name} declares index inputs but no sample has an index"
    for case in cases:
        g, inputs = case_graph(name, [case])
        for run in (partial(run_reference, g), kernels.compile(g).run):
            with pytest.raises(SexpError) as info:
                run({k: v.copy() for k, v in inputs.items()})
            assert info.value.diagnostic.code == "E-INDEX", name


@pytest.mark.parametrize("where", ["output", "inside a loop"])
def test_f16_is_a_diagnostic(where: str) -> None:
    g = Graph("f16")
    x = g.input("x", (3,))
    with g.at(Span("model.sx", 4, 2)):
        half = g.apply("cast", x, dtype="f16")
    if where == "output":
        g.output("y", half)
    else:  # never stored: the loop would convert through it
        g.output("y", g.apply("cast", g.apply("exp", half), dtype="f32"))
    with pytest.raises(SexpError) as info:
        kernels.compile(g)
    assert info.value.diagnostic.code == "E-KERNEL-DTYPE"
    assert info.value.diagnostic.span == Span("model.sx", 4, 2)


def test_nan_propagates_through_max_min_and_argmax() -> None:
    """numpy's rules: maximum/minimum are NaN where either side is, amax/amin over
    a NaN are NaN (every reduction layout), argmax is the first NaN's index."""
    g = Graph("nan")
    a, b = g.input("a", (4, 5)), g.input("b", (4, 5))
    g.output("maximum", g.apply("maximum", a, b))
    g.output("minimum", g.apply("minimum", a, b))
    for op in ("amax", "amin"):
        for axes in ((0,), (1,), None):
            g.output(f"{op}{axes}", g.apply(op, a, axes=axes))
    g.output("argmax", g.apply("argmax", a, axis=1))
    g.output("sign", g.apply("sign", a))
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    x[1, 2] = x[3, 0] = x[3, 4] = np.nan
    inputs = {"a": x, "b": x[::-1].copy()}
    want = run_reference(g, {k: v.copy() for k, v in inputs.items()})
    got = kernels.compile(g).run(inputs)
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)
    assert got["argmax"].tolist() == [4, 2, 4, 0]
