"""The precision pass (sexpgpu/ir/precision.py), op by op on the reference interpreter:
under bf16 every op the pass touches agrees with f32 to what bf16 storage allows, and an
f32 island agrees with f32 exactly. Then the pass's decisions (where casts go, what
stays f32) and that lowering fuses its casts. No numba compile here but the last test.

The tolerance: bf16 keeps 8 significant bits, so one rounding is off by at most 2^-9
relative (half a unit in the last place); we allow 2^-8 per rounding. An op reads its
bf16 inputs exactly (widening is exact) and computes in f32, so against the f32 op on
the same rounded inputs only the rounding of its own result remains."""

from __future__ import annotations

import numpy as np
import pytest
from step_cases import sgd_step

from sexpgpu.ir.graph import Graph, Value
from sexpgpu.ir.ops.registry import OPS, get_op
from sexpgpu.ir.precision import lower_precision
from sexpgpu.ir.reference import round_bf16, run_reference

get_op("add")  # registers every op family
ROUNDING = 2.0 ** -8  # per rounding to bf16 (its half-ulp is 2^-9 relative)
STATISTICS = ("sum", "amax", "amin")  # reductions: accumulated and kept in f32


def _dtype(a: np.ndarray) -> str:
    if a.dtype == np.bool_:
        return "bool"
    return "i64" if np.issubdtype(a.dtype, np.integer) else "f32"


def _storage(dtype: str) -> type:
    return {"f32": np.float32, "i64": np.int64, "bool": np.bool_}[dtype]


def _touched(name: str) -> list[tuple[list[np.ndarray], dict]]:
    """The op's samples with an f32 input or output: the cases the pass rewrites."""
    cases = []
    for arrays, attrs in get_op(name).samples(np.random.default_rng(0)):
        if attrs.get("dtype") == "f16":
            continue  # no kernel storage for f16 (E-KERNEL-DTYPE), nothing to lower
        arrays = [np.asarray(a) for a in arrays]
        if any(_dtype(a) == "f32" for a in arrays) or attrs.get("dtype", "f32") == "f32":
            cases.append((arrays, attrs))
    return cases


TOUCHED = sorted(name for name, op in OPS.items() if op.samples is not None and _touched(name))
# a composition is its primitives (each tested on its own): its result rounds once per
# stored primitive, and a statistic inside it (a sum) may leave its result f32
PRIMITIVE = [name for name in TOUCHED if OPS[name].kind != "composite"]
COMPOSITE = [name for name in TOUCHED if OPS[name].kind == "composite"]


def _stored_op_graph(name: str, arrays: list[np.ndarray], attrs: dict,
                     island: bool = False) -> tuple[Graph, dict, int]:
    """x_i -> h_i = x_i * 1 (an activation, made in the "forward") -> op(h...) in the
    "backward", which reads each h_i from memory, so as stored -> y moved by a reshape
    (stored, as a later kernel would read it) -> output. Returns (graph, inputs,
    where the op's section starts)."""
    g = Graph(f"one-{name}")
    inputs, held = {}, []
    for j, a in enumerate(arrays):
        dtype = _dtype(a)
        inputs[f"x{j}"] = a.astype(_storage(dtype))
        x = g.input(f"x{j}", a.shape, dtype)
        if dtype == "f32":
            x = g.apply("mul", x, g.apply("full", shape=(), dtype="f32", value=1.0))
        held.append(x)
    start = len(g.nodes)
    with g.numerics("f32" if island else None):
        out = get_op(name).apply_case(g, held, attrs)
        for k, y in enumerate(out if isinstance(out, tuple) else (out,)):
            moved = g.apply("reshape", y, shape=y.shape)
            g.output(f"y{k}", moved)
    return g, inputs, start


def _rounded(inputs: dict) -> dict:
    return {k: round_bf16(v) if v.dtype == np.float32 else v for k, v in inputs.items()}


def _bf16_against_f32(name: str, arrays: list, attrs: dict) -> tuple[Graph, int, list]:
    """The op's stored graph, and (key, bf16 result, f32 result on the activations as
    stored, where both are finite) for each float output; the other outputs (integers,
    booleans) and the finite pattern must agree exactly."""
    g, inputs, start = _stored_op_graph(name, arrays, attrs)
    low = lower_precision(g, "bf16", forward_end=start).graph
    got = run_reference(low, dict(inputs))
    want = run_reference(g, _rounded(inputs))
    floats = []
    for key, y in want.items():
        b = got[key]
        assert b.shape == y.shape and b.dtype == y.dtype, (name, key)
        if y.dtype.kind != "f":
            np.testing.assert_array_equal(b, y, err_msg=f"{name} {attrs}")
            continue
        finite = np.isfinite(y)
        np.testing.assert_array_equal(np.isfinite(b), finite, err_msg=name)
        floats.append((key, b[finite], y[finite]))
    return g, start, floats


@pytest.mark.parametrize("name", PRIMITIVE)
def test_bf16_op_agrees_with_f32_to_one_rounding(name: str) -> None:
    for arrays, attrs in _touched(name):
        _, _, floats = _bf16_against_f32(name, arrays, attrs)
        for key, b, y in floats:
            bound = ROUNDING * np.abs(y) + 1e-30
            assert np.all(np.abs(b - y) <= bound), (name, attrs, key)
            kept = int(key[1:]) in OPS[name].extra.get("f32_outputs", ())
            if name not in STATISTICS and not kept and any(_dtype(a) == "f32" for a in arrays):
                # stored as bf16: every value is one (a statistic stays f32, as does
                # an output the op declares f32: attention's row logsumexp)
                np.testing.assert_array_equal(round_bf16(b), b, err_msg=name)


@pytest.mark.parametrize("name", COMPOSITE)
def test_bf16_composition_agrees_with_f32_per_rounding(name: str) -> None:
    """A composition of k primitives rounds up to k times: each rounding is off by 2^-8
    of the values in flight, so against the output's scale the error stays within k
    of them (a matmul chain's small outputs are sums of larger terms)."""
    for arrays, attrs in _touched(name):
        g, start, floats = _bf16_against_f32(name, arrays, attrs)
        roundings = len(g.nodes) - start - len(g.outputs)  # its nodes, not the reshapes
        for key, b, y in floats:
            scale = np.abs(y).max(initial=0.0) + 1e-30
            error = np.abs(b - y).max(initial=0.0)
            assert error <= roundings * ROUNDING * scale, (name, attrs, key, roundings)


@pytest.mark.parametrize("name", TOUCHED)
def test_f32_island_agrees_with_f32_exactly(name: str) -> None:
    """The op inside (with-numerics (:f32) ...) in a bf16 step: its inputs are the bf16
    activations as stored, and from those on it computes exactly as an f32 step."""
    for arrays, attrs in _touched(name):
        g, inputs, start = _stored_op_graph(name, arrays, attrs, island=True)
        low = lower_precision(g, "bf16", forward_end=start).graph
        got = run_reference(low, dict(inputs))
        want = run_reference(g, _rounded(inputs))
        for key, y in want.items():
            np.testing.assert_array_equal(got[key], y, err_msg=f"{name} {attrs}")


def _mlp_step(island: str | None = None) -> tuple[Graph, int, int, dict[str, np.ndarray]]:
    """A two-layer MLP's training step: forward, backward, SGD on the weights."""
    g = Graph("mlp")
    x = g.input("x", (8, 6), role="data")
    y = g.input("y", (8,), "i64", role="data")
    w1, b1 = g.input("w1", (16, 6), role="param"), g.input("b1", (16,), role="param")
    w2 = g.input("w2", (4, 16), role="param")
    h = g.apply("relu", g.apply("add", g.apply("matmul", x, g.apply(
        "permute", w1, perm=(1, 0))), b1))
    logits = g.apply("matmul", h, g.apply("permute", w2, perm=(1, 0)))
    with g.numerics(island):
        from sexpgpu.ir import build

        onehot = build.one_hot(g, y, 4)
        logp = build.log_softmax(g, logits, -1)
        loss = g.apply("neg", build.mean(g, g.apply("sum", g.apply("mul", logp, onehot),
                                                    axes=(-1,)), None, False))
    forward, update, grads = sgd_step(g, loss, [w1, b1, w2], 0.1)
    g.output("loss", loss)
    g.output("gw1", grads[w1])
    r = np.random.default_rng(3)
    inputs = {"x": r.standard_normal((8, 6)).astype(np.float32),
              "y": r.integers(0, 4, 8), "w1": r.standard_normal((16, 6)).astype(np.float32),
              "b1": r.standard_normal(16).astype(np.float32),
              "w2": r.standard_normal((4, 16)).astype(np.float32)}
    return g, forward, update, inputs


def _ops(g: Graph) -> list[str]:
    return [f"{n.op}:{n.outputs[0].dtype}" for n in g.nodes]


def test_f32_graph_is_returned_unchanged() -> None:
    g, forward, update, _ = _mlp_step()
    assert lower_precision(g, "f32", forward, update).graph is g
    whole_island, forward, update, _ = _mlp_step(island="f32")
    for node in whole_island.nodes:
        node.numerics = "f32"
    assert lower_precision(whole_island, "bf16", forward, update).graph is whole_island


def test_bf16_step_keeps_f32_masters_loss_and_update() -> None:
    g, forward, update, inputs = _mlp_step()
    low = lower_precision(g, "bf16", forward, update)
    assert low.graph.inputs == g.inputs  # the f32 masters (and the batch) are the inputs
    assert all(t.dtype == "f32" and v.dtype == "f32" for t, v in low.graph.updates.items())
    assert low.graph.outputs["loss"].dtype == "f32"
    ops = _ops(low.graph)
    # weights and activations reach the matmuls as bf16 values widened exactly
    assert ops.count("cast:bf16") >= 4 and "matmul:f32" in ops
    # the update section computes in f32 from f32 gradients: no cast there
    assert not any(op.startswith("cast") for op in ops[low.update_from:])
    ref = run_reference(g, {k: v.copy() for k, v in inputs.items()})
    arrays = {k: v.copy() for k, v in inputs.items()}
    got = run_reference(low.graph, arrays)
    assert abs(got["loss"] - ref["loss"]) <= 8 * ROUNDING * abs(ref["loss"])
    np.testing.assert_allclose(got["gw1"], ref["gw1"], rtol=0.05,
                               atol=0.05 * np.abs(ref["gw1"]).max())


def test_statistics_stay_f32_and_activations_are_stored_bf16() -> None:
    """Softmax's max and sum and the loss are f32; the saved activations the backward
    reads (the hidden layer) are bf16 values."""
    g, forward, update, _ = _mlp_step()
    low = lower_precision(g, "bf16", forward, update).graph
    reductions = [n for n in low.nodes if n.op in ("sum", "amax")]
    assert reductions and all(n.outputs[0].dtype == "f32" for n in reductions)
    saved = {v.id for n in low.nodes[forward:] for v in n.inputs}
    made = {v.id: v for n in low.nodes[:forward] for v in n.outputs}
    kept = [made[i] for i in saved if i in made and made[i].shape == (8, 16)]
    assert kept and all(v.dtype == "bf16" for v in kept)


def test_gelu_keeps_its_normal_cdf_f32() -> None:
    """The front ends' exact GELU, x * normal_cdf(x), in a bf16 step: Phi is kept f32
    (the op's f32_outputs) and read so by the backward, so the forward's product is
    rounded once (as the primitive's result is) and the gradient's Phi is exact."""
    from sexpgpu.autodiff.grad import grad

    from sexpgpu.ir.call import call

    g = Graph("gelu")
    x, w = g.input("x", (4, 8)), g.input("w", (8, 8))
    h = g.apply("matmul", x, w)                                  # a bf16 activation
    y = call(g, get_op("gelu"), [h], {})
    forward = len(g.nodes)
    loss = g.apply("sum", g.apply("mul", y, y), axes=None, keepdims=False)
    g.output("dw", grad(g, loss, [w])[w])
    low = lower_precision(g, "bf16", forward_end=forward).graph
    cdf = next(n for n in low.nodes if n.op == "normal_cdf").outputs[0]
    assert cdf.dtype == "f32"
    # read by the forward's x * Phi and the backward's g * Phi, both as it is
    assert [n.op for n in low.nodes if cdf in n.inputs] == ["mul", "mul"]
    rng = np.random.default_rng(3)
    feed = {"x": rng.standard_normal((4, 8)).astype(np.float32),
            "w": rng.standard_normal((8, 8)).astype(np.float32)}
    primitive = Graph("gelu-primitive")
    px, pw = primitive.input("x", (4, 8)), primitive.input("w", (8, 8))
    py = primitive.apply("gelu", primitive.apply("matmul", px, pw))
    ploss = primitive.apply("sum", primitive.apply("mul", py, py), axes=None, keepdims=False)
    primitive.output("dw", grad(primitive, ploss, [pw])[pw])
    plow = lower_precision(primitive, "bf16", forward_end=2).graph
    got, want = run_reference(low, dict(feed)), run_reference(plow, dict(feed))
    np.testing.assert_allclose(got["dw"], want["dw"], rtol=4 * ROUNDING, atol=1e-3)


def test_island_keeps_its_nodes_f32() -> None:
    """The loss in (with-numerics (:f32) ...): no bf16 value inside the island, and
    its nodes (and their backward) keep the tag `sexpgpu ir` prints."""
    g, forward, update, inputs = _mlp_step(island="f32")
    low = lower_precision(g, "bf16", forward, update).graph
    inside = [n for n in low.nodes if n.numerics == "f32"]
    assert inside and all(o.dtype != "bf16" for n in inside for o in n.outputs
                          if n.op != "cast")
    assert "[:f32]" in str(low)
    tagged_backward = [n for n in g.nodes[forward:update] if n.numerics == "f32"]
    assert tagged_backward  # autodiff keeps the region of the node it differentiates


def test_nested_regions_innermost_wins() -> None:
    g = Graph("nested")
    x = g.input("x", (4, 4))
    with g.numerics("f32"):
        a = g.apply("exp", x)
        with g.numerics("bf16"):
            b = g.apply("matmul", a, a)
        c = g.apply("tanh", b)
    g.output("c", c)
    assert [n.numerics for n in g.nodes] == ["f32", "bf16", "f32"]
    low = lower_precision(g, "f32").graph  # an f32 run with a bf16 region inside
    assert "cast:bf16" in _ops(low)


def test_constants_and_weak_inputs_take_the_readers_precision() -> None:
    g = Graph("weak")
    x = g.input("x", (3, 5))
    w = g.input("w", (5, 2), role="param")
    half = g.apply("full", shape=(), dtype="f32", value=0.1)
    y = g.apply("matmul", g.apply("mul", x, half), w)
    g.output("y", g.apply("reshape", y, shape=(6,)))
    low = lower_precision(g, "bf16").graph
    # the scale computes in f32 (0.1 as written); x and w are rounded only for the matmul
    full = [n for n in low.nodes if n.op == "full"]
    assert [n.attrs["value"] for n in full] == [0.1]
    matmul = next(n for n in low.nodes if n.op == "matmul")
    assert all(v.node.op == "cast" and v.node.inputs[0].dtype == "bf16" for v in matmul.inputs)


def test_lowering_fuses_the_casts() -> None:
    """Every cast the pass inserts runs inside a loop kernel with other work, except the
    rounded copies BLAS reads (a matmul cannot convert as it reads)."""
    from sexpgpu.kernels.lower import lower

    g, forward, update, _ = _mlp_step()
    low = lower_precision(g, "bf16", forward, update).graph
    program = lower(low)
    readers: dict[Value, list[str]] = {}
    for kernel in program.kernels:
        for v in kernel.inputs:
            readers.setdefault(v, []).extend(n.op for n in kernel.nodes)
    casts_only = [k for k in program.kernels if all(n.op == "cast" for n in k.nodes)]
    for kernel in casts_only:
        for v in kernel.outputs:
            assert set(readers.get(v, [])) <= {"matmul", "sum"}, [n.op for n in kernel.nodes]
    assert sum(len(k.nodes) for k in casts_only) < sum(
        n.op == "cast" for k in program.kernels for n in k.nodes)
