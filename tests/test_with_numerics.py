"""`(with-numerics (:f32) body...)`: the tags it puts on traced nodes, nesting, its
diagnostics, and that a bf16 run whose objective is one f32 island trains exactly as
an f32 run (tests/e2e/numerics.sx is the attention example of docs/numerics.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sexpgpu.contract.compile import compile_file
from sexpgpu.diagnostics import SexpError
from sexpgpu.selection import Selection

EXAMPLE = Path(__file__).parent / "e2e" / "numerics.sx"


def _compile(path: Path | str, **sets: str):
    return compile_file(str(path), Selection({k: str(v) for k, v in sets.items()}))


def _forward(compiled) -> list:
    g = compiled.graphs.step
    return g.nodes[:compiled.graphs.sections[g.name].forward]


def test_the_region_tags_its_nodes_and_their_backward() -> None:
    compiled = _compile(EXAMPLE)
    forward = _forward(compiled)
    tagged = {n.op for n in forward if n.numerics == "f32"}
    # the scores matmul, the scale, the mask and the softmax: the island's body
    assert {"matmul", "mul", "where", "amax", "exp", "sum", "div"} <= tagged
    assert all(n.numerics is None for n in forward if n.op == "take")  # nothing leaks
    untagged_matmuls = [n for n in forward if n.op == "matmul" and n.numerics is None]
    assert len(untagged_matmuls) == 4  # c-attn, att @ v, c-proj, head
    g = compiled.graphs.step
    backward = g.nodes[compiled.graphs.sections[g.name].forward:
                       compiled.graphs.sections[g.name].backward]
    assert any(n.numerics == "f32" and n.op == "exp" for n in forward)
    assert any(n.numerics == "f32" for n in backward)  # the island's VJPs
    update = g.nodes[compiled.graphs.sections[g.name].backward:]
    assert all(n.numerics is None for n in update)


def test_the_island_computes_in_f32_and_rounds_where_it_ends() -> None:
    low = _compile(EXAMPLE).lowered()
    assert low.precision == "bf16"
    nodes = low.step.nodes
    island = [n for n in nodes if n.numerics == "f32"]
    assert island and all(o.dtype == "f32" for n in island for o in n.outputs
                          if o.type.is_float)
    div = next(n for n in island if n.op == "div")  # the softmax's probabilities
    readers = [n for n in nodes if div.outputs[0] in n.inputs]
    # `(@ att v)` is outside: it reads the probabilities rounded to bf16
    assert any(n.op == "cast" and n.outputs[0].dtype == "bf16" for n in readers)


def test_nested_regions_and_the_option_from_a_knob() -> None:
    compiled = _compile(EXAMPLE, attn=":bf16", loss=":f32")
    forward = _forward(compiled)
    assert {n.numerics for n in forward if n.op == "softmax" or n.op == "exp"} == {"bf16", "f32"}
    low = compiled.lowered("f32")  # an f32 run with a bf16 region inside
    assert any(o.dtype == "bf16" for n in low.step.nodes for o in n.outputs)


def _broken(tmp_path: Path, old: str, new: str) -> str:
    text = EXAMPLE.read_text()
    assert old in text
    path = tmp_path / "broken.sx"
    path.write_text(text.replace(old, new))
    return str(path)


@pytest.mark.parametrize("option, code, fix", [
    (":fp32", "E-NUMERICS", "did you mean `:f32`?"),
    (":f32 :bf16", "E-NUMERICS", "name one precision: (:f32) or (:bf16)"),
    ("", "E-NUMERICS", "name one precision: (:f32) or (:bf16)"),
    (":f16", "E-PRECISION", "use :bf16 (same 16-bit storage, f32 range, no loss scaling)"),
])
def test_a_bad_option_is_a_diagnostic_at_the_region(tmp_path: Path, option: str, code: str,
                                                    fix: str) -> None:
    path = _broken(tmp_path, "(with-numerics (attn)", f"(with-numerics ({option})")
    with pytest.raises(SexpError) as info:
        _compile(path)
    diag = info.value.diagnostic
    assert (diag.code, diag.fix) == (code, fix)
    assert diag.span is not None and diag.span.line == 23  # the with-numerics form


def test_outside_a_traced_function_it_is_e_trace(tmp_path: Path) -> None:
    path = _broken(tmp_path, "(optimizer (optim:adam :lr 1e-2))",
                   "(with-numerics (:f32) 1)\n(optimizer (optim:adam :lr 1e-2))")
    with pytest.raises(SexpError) as info:
        _compile(path)
    assert info.value.diagnostic.code == "E-TRACE"


def test_a_region_left_by_an_error_ends(tmp_path: Path) -> None:
    """unwind-protect: an error inside the body (here caught) still closes the region."""
    path = _broken(tmp_path, "(head (mean h :axis 1)))))",
                   "(ignore-errors (with-numerics (:f32) (error \"no\")))\n"
                   "      (head (mean h :axis 1)))))")
    forward = _forward(_compile(path))
    head = [n for n in forward if n.op == "matmul"][-1]
    assert head.numerics is None


def test_a_bf16_run_wholly_in_an_f32_island_is_an_f32_run(tmp_path: Path) -> None:
    """The model traced inside the objective's island: every node f32, so the pass
    leaves the graph as traced and training matches an f32 run bit for bit."""
    from sexpgpu.api import load_program

    path = _broken(tmp_path, "(let ((logits (model x)))\n    (with-numerics (loss)",
                   "(with-numerics (:f32) (let ((logits (model x)))\n    (progn")
    path_text = Path(path).read_text().replace("(nn:cross-entropy logits y))))",
                                               "(nn:cross-entropy logits y)))))")
    Path(path).write_text(path_text)
    _, island = load_program(path)
    _, f32 = load_program(path, precision="f32")
    rng = np.random.default_rng(0)
    for step in range(3):
        batch = {"x": rng.normal(size=(50, 16)).astype(np.float32),
                 "y": rng.integers(0, 4, 50)}
        ctx = {"step": step, "microstep": 0, "microbatches": 1, "epoch": 0, "samples": 0,
               "tokens": 0, "stage": 0, "seed": 3}
        assert island.train_step([batch], ctx)["loss"] == f32.train_step([batch], ctx)["loss"]
    for name, p in f32.params().items():
        np.testing.assert_array_equal(island.params()[name], p)


def test_bf16_example_trains() -> None:
    from sexpgpu.api import load_program

    _, program = load_program(str(EXAMPLE))
    rng = np.random.default_rng(1)
    x = rng.normal(size=(50, 16)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + 2 * (x[:, 1] > 0)
    losses = []
    for step in range(30):
        ctx = {"step": step, "microstep": 0, "microbatches": 1, "epoch": 0, "samples": 0,
               "tokens": 0, "stage": 0, "seed": 3}
        losses.append(program.train_step([{"x": x, "y": y}], ctx)["loss"])
    assert all(np.isfinite(losses)) and losses[-1] < 0.8 * losses[0]
    assert all(p.dtype == np.float32 for p in program.params().values())
