"""The fused attention op (sexpgpu/ir/ops/attention.py, kernels/attention.py) beyond
its generated tests: on heads split off one projection (strided views the kernels
read in place) its output and gradients equal the unfused form's, in float64 on the
reference interpreter; it runs in a bf16 step; and `nn:causal-self-attention` uses it
only where the probabilities are not needed (no dropout, no diagnostics graph)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sexpgpu.autodiff.grad import grad

from sexpgpu import kernels
from sexpgpu.contract.compile import compile_file
from sexpgpu.contract.plan import graph_summary
from sexpgpu.diagnostics import SexpError
from sexpgpu.ir import build
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.precision import lower_precision
from sexpgpu.ir.reference import run_reference

ATTN = Path(__file__).resolve().parent / "diag" / "tiny-attn.sx"
B, H, T, D = 2, 3, 20, 8  # T > 16: causal rows cross a vector boundary of the CPU loops


def _heads(g: Graph, qkv, i: int, t: int):
    """The i-th of q, k, v: (B, T, 3 H D) sliced, split into heads, (B, H, T, D)."""
    x = build.slice_axis(g, qkv, 2, i * H * D, (i + 1) * H * D)
    return g.apply("permute", g.apply("reshape", x, shape=(B, t, H, D)), perm=(0, 2, 1, 3))


def _unfused(g: Graph, q, k, v, causal: bool, scale: float):
    s = g.apply("mul", g.apply("matmul", q, build.transpose(g, k)), build.scalar(g, scale, "f32"))
    if causal:
        s = g.apply("where", build.causal_mask(g, q.shape[-2]), s, build.scalar(g, -1e9, "f32"))
    return g.apply("matmul", build.softmax(g, s, -1), v)


def _graph(fused: bool, causal: bool = True, scale: float | None = None, t: int = T) -> Graph:
    """out and d(sum(out * w))/d(qkv): the gradients of q, k, v join in one concat."""
    g = Graph("attention")
    qkv = g.input("qkv", (B, t, 3 * H * D))
    w = g.input("w", (B, H, t, D))
    # an activation (a projection's output in a model; bf16 in a bf16 step)
    h = g.apply("mul", qkv, build.scalar(g, 1.0, "f32"))
    q, k, v = (_heads(g, h, i, t) for i in range(3))
    if fused:
        out = g.apply("attention", q, k, v, causal=causal, scale=scale)[0]
    else:
        out = _unfused(g, q, k, v, causal, 1 / np.sqrt(D) if scale is None else scale)
    loss = g.apply("sum", g.apply("mul", out, w), axes=None, keepdims=False)
    g.output("out", out)
    g.output("dqkv", grad(g, loss, [qkv])[qkv])
    return g


def _inputs(seed: int = 0, t: int = T) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"qkv": rng.standard_normal((B, t, 3 * H * D)).astype(np.float32),
            "w": rng.standard_normal((B, H, t, D)).astype(np.float32)}


# T = 70: the CPU kernels' causal row blocks of 32 (two whole ones and a part);
# T = 64: every block's keys whole runs of 32, so the kernels have no loop for the rest
@pytest.mark.parametrize(("causal", "scale", "t"), [(True, None, T), (False, 0.7, T),
                                                    (True, None, 70), (False, 0.7, 70),
                                                    (True, None, 64), (False, 0.7, 64)])
def test_fused_equals_the_unfused_form_on_split_heads(causal: bool, scale, t: int) -> None:
    feed = _inputs(t=t)
    want = run_reference(_graph(False, causal, scale, t), feed, dtype_override="f64")
    ref = run_reference(_graph(True, causal, scale, t), feed, dtype_override="f64")
    compiled = kernels.compile(_graph(True, causal, scale, t))
    got = compiled.run(feed)
    rests = [text.count("// 32 * 32,") for text in compiled.generated.kernel_sources
             if "attention" in text.split("\n", 1)[0]]
    assert rests == [0 if t % 32 == 0 else 1] * 2, rests
    for key in ("out", "dqkv"):
        np.testing.assert_allclose(ref[key], want[key], rtol=1e-9, atol=1e-12, err_msg=key)
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-5, err_msg=key)


def test_heads_with_strided_columns_are_copied_and_agree() -> None:
    """q, k and v permuted from (B, D, H, T) are views with a column stride of H T:
    the CPU kernels copy them to f32 rows for the sgemms; the results equal the
    unfused form's."""
    t = 40
    g = Graph("columns")
    q, k, v = (g.apply("permute", g.input(n, (B, D, H, t)), perm=(0, 2, 3, 1)) for n in "qkv")
    out = g.apply("attention", q, k, v, causal=True, scale=None)[0]
    g.output("out", out)
    loss = g.apply("sum", g.apply("mul", out, out), axes=None, keepdims=False)
    grads = grad(g, loss, [x.node.inputs[0] for x in (q, k, v)])
    for name, x in zip("qkv", (q, k, v)):
        g.output("d" + name, grads[x.node.inputs[0]])
    rng = np.random.default_rng(7)
    feed = {n: rng.standard_normal((B, D, H, t)).astype(np.float32) for n in "qkv"}
    want = run_reference(g, feed, dtype_override="f64")
    compiled = kernels.compile(g)
    assert any("qs_[j *" in src for src in compiled.generated.kernel_sources)  # copied
    got = compiled.run(feed)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-4, atol=1e-5, err_msg=key)


def test_fused_kernels_read_the_heads_in_place() -> None:
    """q, k and v are views of the projection: no kernel copies them out."""
    program = kernels.compile(_graph(True)).program
    ops = [[n.op for n in kernel.nodes] for kernel in program.kernels]
    assert ["attention"] in ops and ["attention_backward"] in ops
    assert not any(o in (["permute"], ["reshape"], ["slice"]) for o in ops), ops


def _projected_graph(fused: bool, t: int = T) -> Graph:
    """A model's attention: heads merged back (permute, reshape) into the output
    projection's matmul; d(qkv) joins the heads' gradients, permuted and merged, in
    one concat."""
    g = Graph("projected")
    qkv, wp = g.input("qkv", (B, t, 3 * H * D)), g.input("wp", (H * D, H * D))
    h = g.apply("mul", qkv, build.scalar(g, 1.0, "f32"))
    q, k, v = (_heads(g, h, i, t) for i in range(3))
    out = (g.apply("attention", q, k, v, causal=True, scale=None)[0] if fused
           else _unfused(g, q, k, v, True, 1 / np.sqrt(D)))
    merged = g.apply("reshape", g.apply("permute", out, perm=(0, 2, 1, 3)), shape=(B, t, H * D))
    y = g.apply("matmul", merged, wp)
    loss = g.apply("sum", g.apply("mul", y, y), axes=None, keepdims=False)
    g.output("y", y)
    g.output("dqkv", grad(g, loss, [qkv])[qkv])
    return g


def _projected_inputs(t: int = T) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    return {"qkv": rng.standard_normal((B, t, 3 * H * D)).astype(np.float32),
            "wp": (rng.standard_normal((H * D, H * D)) / np.sqrt(H * D)).astype(np.float32)}


@pytest.mark.parametrize("t", [T, 70])
def test_fused_kernels_store_merged_heads_where_the_next_op_reads_them(t: int) -> None:
    """The forward stores its output rows straight into the merged (B, T, H D)
    buffer the projection reads, the backward its dq, dk, dv rows into the one
    (B, T, 3 H D) gradient: no kernel permutes, reshapes or concatenates them, and
    the results equal the unfused form's in float64."""
    feed = _projected_inputs(t)
    want = run_reference(_projected_graph(False, t), feed, dtype_override="f64")
    compiled = kernels.compile(_projected_graph(True, t))
    ops = [[n.op for n in kernel.nodes] for kernel in compiled.program.kernels]
    assert not any(o[0] in ("permute", "reshape", "concat") for o in ops), ops
    homes = {kernel.nodes[0].op: [v.node.op for v in kernel.homes]
             for kernel in compiled.program.kernels if kernel.homes}
    assert homes == {"attention": ["reshape"], "attention_backward": ["concat"]}
    got = compiled.run(feed)
    for key in ("y", "dqkv"):
        np.testing.assert_allclose(got[key], want[key], rtol=1e-4, atol=1e-4, err_msg=key)


@pytest.mark.parametrize("extra", ["merged", "twice"])
def test_merged_heads_read_elsewhere_stay_correct(extra: str) -> None:
    """Merged heads that are also an output (a root): still stored in place, the
    output is that buffer; an attention output a loop reads too: stored as it is,
    the merge copied as before."""
    g = _projected_graph(True)
    merged = next(n for n in g.nodes if n.op == "reshape" and n.inputs[0].node.op == "permute"
                  and n.inputs[0].node.inputs[0].node.op == "attention").outputs[0]
    if extra == "merged":
        g.output("merged", merged)
    else:
        out = merged.node.inputs[0].node.inputs[0]
        g.output("twice", g.apply("mul", out, build.scalar(g, 2.0, "f32")))
    feed = _projected_inputs()
    want = run_reference(g, feed, dtype_override="f64")
    compiled = kernels.compile(g)
    forward = next(k for k in compiled.program.kernels if k.nodes[0].op == "attention")
    # (the plan's own graph: lowering merges repeated nodes into a copy, ir/cse.py)
    assert forward.homes == ([compiled.program.outputs["merged"]] if extra == "merged" else [])
    got = compiled.run(feed)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-4, atol=1e-4, err_msg=key)


def test_bf16_step_runs_the_fused_kernels() -> None:
    """Through the precision pass (bf16 q, k, v, f32 logsumexp), the compiled kernels
    give what the reference interpreter gives on the same lowered graph, and both
    stay within bf16's rounding of the f32 result."""
    g = _graph(True)
    low = lower_precision(g, "bf16", forward_end=len(g.nodes) // 3).graph
    assert {v.dtype for n in low.nodes if n.op == "attention" for v in n.inputs} == {"bf16"}
    feed = _inputs(1)
    want = run_reference(low, feed)
    got = kernels.compile(low).run(feed)
    exact = run_reference(g, feed)
    for key in ("out", "dqkv"):
        np.testing.assert_allclose(got[key], want[key], rtol=1e-2, atol=1e-2, err_msg=key)
        scale = np.abs(exact[key]).max()
        assert np.abs(got[key] - exact[key]).max() < 0.05 * scale, key


def test_flop_count_is_the_unfused_products_and_the_recomputed_scores() -> None:
    """contract.plan counts the fused ops' sgemms: the unfused form's, plus the
    backward's second q k^T."""
    fused, unfused = (graph_summary(_graph(f))["flops"]["matmul"] for f in (True, False))
    assert fused == unfused + 2 * B * H * T * T * D


def _ops(graph: Graph) -> set[str]:
    """The graph's ops, a batched matmul over heads (the unfused q k^T, p v) as "bmm"."""
    return {"bmm" if node.op == "matmul" and len(node.outputs[0].shape) == 4 else node.op
            for node in graph.nodes}


def test_the_gpt_block_uses_the_fused_op_only_without_dropout_or_diagnostics(
        tmp_path: Path) -> None:
    compiled = compile_file(str(ATTN), diagnostics=["attn-entropy/*"])
    step = _ops(compiled.graphs.step)
    assert {"attention", "attention_backward"} <= step and "bmm" not in step
    # the diagnostics graph reads the probabilities (attn-entropy): the unfused form
    diagnostics = _ops(compiled.diagnostics.graph)
    assert "attention" not in diagnostics and "bmm" in diagnostics
    dropped = tmp_path / "dropout.sx"
    dropped.write_text(ATTN.read_text().replace("(nn:transformer-block n-embd 2)",
                                                "(nn:transformer-block n-embd 2 :dropout 0.1)"))
    step = _ops(compile_file(str(dropped)).graphs.step)
    assert "attention" not in step and "bmm" in step


@pytest.mark.parametrize(("shapes", "fragment"), [
    (((2, 5, 4), (2, 5, 3), (2, 5, 4)), "one size D"),
    (((2, 5, 4), (3, 5, 4), (3, 5, 4)), "same leading axes"),
    (((2, 5, 4), (2, 0, 4), (2, 0, 4)), "at least one key"),
])
def test_bad_shapes_are_e_shape_at_the_call(shapes, fragment: str) -> None:
    g = Graph("bad")
    q, k, v = (g.input(name, shape) for name, shape in zip("qkv", shapes))
    with pytest.raises(SexpError) as info:
        g.apply("scaled_dot_product_attention", q, k, v, causal=True)
    assert info.value.diagnostic.code == "E-SHAPE"
    assert fragment in info.value.diagnostic.message
