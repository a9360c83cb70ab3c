"""Common subexpressions (sexpgpu/ir/cse.py): a repeated computation is made once,
nothing else merges, and the lowered step computes what the graph does."""

from __future__ import annotations

import numpy as np
import run_files

from sexpgpu import kernels
from sexpgpu.ir.cse import merged
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.reference import run_reference


def _ops(g: Graph) -> list[str]:
    return [n.op for n in g.nodes]


def test_a_repeated_computation_is_made_once() -> None:
    g = Graph("twice")
    x, y = g.input("x", (4,)), g.input("y", (4,))
    a = g.apply("exp", g.apply("add", x, y))
    b = g.apply("exp", g.apply("add", x, y))   # the same, twice over
    g.output("s", g.apply("mul", a, b))
    g.update(x, g.apply("add", x, y))
    out = merged(g)
    assert _ops(out) == ["add", "exp", "mul"]
    mul = out.nodes[-1]
    assert mul.inputs[0] is mul.inputs[1]
    assert out.updates[x] is out.nodes[0].outputs[0]   # the update reads the first add
    assert _ops(g) == ["add", "exp", "add", "exp", "mul", "add"]  # the graph itself unchanged
    def feed() -> dict:  # fresh arrays: a run updates x in place
        return {"x": np.arange(4, dtype=np.float32), "y": np.ones(4, np.float32)}

    np.testing.assert_array_equal(run_reference(out, feed())["s"], run_reference(g, feed())["s"])
    np.testing.assert_allclose(kernels.compile(g).run(feed())["s"],  # exp within 2 ulp
                               run_reference(g, feed())["s"], rtol=5e-7)


def test_different_attributes_inputs_or_numerics_do_not_merge() -> None:
    g = Graph("apart")
    x = g.input("x", (3, 4))
    sums = [g.apply("sum", x, axes=(0,), keepdims=False),
            g.apply("sum", x, axes=(1,), keepdims=False)]
    consts = [g.apply("full", shape=(3,), dtype="f32", value=v) for v in (0.0, -0.0, 1, 1.0)]
    with g.numerics("bf16"):
        tagged = g.apply("exp", x)
    plain = g.apply("exp", x)
    for k, v in enumerate([*sums, *consts, tagged, plain]):
        g.output(f"o{k}", v)
    assert merged(g) is g   # nothing repeats: the graph itself


SMALL = run_files.mlp((8, 16, 3), batch=16, n=64,
                      optimizer="(optim:adamw :lr 1e-3 :weight-decay 0.1)", steps=2)


def test_adamw_computes_its_bias_corrections_once(tmp_path) -> None:
    """AdamW's 1 - beta1^t and 1 - beta2^t, one pair a parameter as traced (four
    parameters here), are one pair in the lowered step; training still moves the
    loss as the graph as traced does."""
    from sexpgpu.api import load_program

    path = tmp_path / "small.sx"
    path.write_text(SMALL)
    _, program = load_program(str(path))
    lowered = program._step.program.graph
    pows = [n for n in lowered.nodes if n.op == "pow"]
    assert len(pows) == 2, [n.attrs for n in pows]
    traced = merged(lowered)
    assert traced is lowered  # merging is done: nothing left repeats
