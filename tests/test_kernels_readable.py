"""Generated kernels a person can read: each kernel module holds only the helpers it
calls, the step module names buffers after the IR values they hold, no renderer
leftovers (a loop of one trip, `0 + `, `* 0`) stay in the text, the cache's index
maps every kernel module to its ops and source lines, and one op's kernel can be
called on arrays (`kernels.op`)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from sexpgpu.kernels import cache, demo, scalars
from sexpgpu.kernels.generate import generate
from sexpgpu.kernels.lower import lower
from sexpgpu.kernels.memplan import plan_memory

from sexpgpu import kernels
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.reference import run_reference

LEFTOVERS = re.compile(r"p?range\(1\)|(?<![\w.])0 \+ | \+ 0(?![\w.])|(?<![\w.])0 \* \w")


def _graphs() -> list[Graph]:
    """The MLP step (matmuls, fused loops, reductions, Adam, index checks), and ops
    that call helpers: the exact GELU (erf, exp), dropout (the RNG), bf16 casts."""
    g = Graph("helpers")
    x = g.input("x", (3, 5))
    seed = g.input("rng/seed", (), "i64", role="rng")
    g.output("gelu", g.apply("gelu", x, approximate="none"))
    g.output("log", g.apply("log", x))
    g.output("drop", g.apply("dropout", x, seed, p=0.5, stream=1))
    g.output("half", g.apply("cast", g.apply("exp", x), dtype="bf16"))
    g.output("row", g.apply("sum", g.apply("slice", x, starts=(1, None), stops=(2, None),
                                           steps=None), axes=(0,)))
    return [demo.mlp_step(batch=4, sizes=(3, 5, 2)).graph, g]


@pytest.fixture(scope="module")
def generated() -> list:
    return [generate(p, plan_memory(p), "cpu") for p in (lower(g) for g in _graphs())]


def test_kernel_modules_hold_only_the_helpers_they_call(generated) -> None:
    seen = set()
    for gen in generated:
        for source in gen.kernel_sources:
            defined = re.findall(r"^def (\w+)\(", source, re.M)
            imported = re.findall(r"^from sexpgpu\.kernels\.scalars import (.*)$", source, re.M)
            shared = [n for line in imported for n in line.split(", ")]
            assert not set(defined) & scalars.NAMES, "a compiled-once helper's text is copied"
            for name in defined + shared:
                if name != "kernel":
                    calls = len(re.findall(rf"\b{name}\(", source))
                    assert calls > (name in defined), f"{name} is never called:\n{source}"
                    seen.add(name)
            if "math." not in source:
                assert "import math" not in source
    # the graphs above call these (and the modules hold nothing else)
    # (gelu evaluates in f32: erf and exp by their f32 forms; log in f64)
    assert {"fast_erf32", "fast_exp32", "fast_log", "rng_uniform",
            "f32_to_bf16"} <= seen


def test_no_renderer_leftovers(generated) -> None:
    for gen in generated:
        for source in [gen.source] + gen.kernel_sources:
            body = source.split('"""', 2)[-1]  # past the docstring
            assert not LEFTOVERS.search(body), LEFTOVERS.search(body).group(0) + "\n" + body


def test_the_step_module_names_buffers_after_ir_values(generated) -> None:
    step = generated[0].source
    signature = re.search(r"def step\((.*)\):", step).group(1).split(", ")
    assert {"in_x", "in_y", "l0_w", "l0_b", "loss"} <= set(signature)
    assert any(name.startswith("matmul_") for name in signature)
    assert not any(re.fullmatch(r"b\d+", name) for name in signature)
    assert re.search(r"\(in_x, l0_w, matmul_\d+", step)          # x @ w into its product


def test_the_cache_index_maps_kernel_modules_to_ops_and_lines(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path))
    graph = _graphs()[0]
    compiled = kernels.compile(graph)
    index = cache.index()
    files = {cache.module_name(s) + ".py" for s in compiled.generated.kernel_sources}
    assert files <= set(index)
    for name in files:
        entry = index[name]
        assert entry["ops"] and all(re.search(r"demo\.py:\d+:\d+$", s) for s in entry["sites"])
        params = entry["graphs"]["mlp-step (cpu)"]
        signature = set(re.search(r"def step\((.*)\):", compiled.source).group(1).split(", "))
        for kernel in params.values():
            assert set(kernel.values()) <= signature | {"err_"} | {
                v for v in kernel.values() if re.fullmatch(r"\d+", v)}
    # the first layer's product: its kernel's p1 holds the weight l0/w
    assert any(kernel.get("p1") == "l0_w" for n in files if index[n]["ops"] == ["matmul"]
               for kernel in index[n]["graphs"]["mlp-step (cpu)"].values())


def test_one_op_called_on_arrays() -> None:
    x = np.linspace(-3.0, 3.0, 13).astype(np.float32)
    g = Graph("gelu")
    v = g.input("x", x.shape)
    g.output("y", g.apply("gelu", v, approximate="tanh"))
    want = run_reference(g, {"x": x})["y"]
    np.testing.assert_allclose(kernels.op("gelu", approximate="tanh")(x), want, rtol=2e-6,
                               atol=2e-6)
    values, indices = kernels.op("max", axis=1)(np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 7.0]]))
    assert values.tolist() == [5.0, 7.0] and indices.tolist() == [1, 0]
    both = kernels.op("concat", axis=0)
    assert both(x, x).shape == (26,)
    assert "def step(" in both.compiled(x, x).source


def test_no_leftovers_in_any_ops_kernels() -> None:
    """Every registered op's sample graph (tests/test_kernels_ops.py compiles them),
    generated for the CPU: no loop of one trip or zero term in any kernel."""
    from op_cases import case_graph

    from sexpgpu.ir.ops.registry import OPS

    for name, opdef in OPS.items():
        g, _ = case_graph(name, opdef.samples(np.random.default_rng(0)))
        program = lower(g)
        gen = generate(program, plan_memory(program), "cpu")
        for source in gen.kernel_sources:
            body = source.split('"""', 2)[-1]
            found = LEFTOVERS.search(body)
            assert found is None, f"{name}: {found.group(0)}\n{body}"


def test_kernels_without_arrays_of_their_own_compile_without_reference_counting(
        generated) -> None:
    # numba's NRT only matters to a kernel that allocates (np.dot packing a strided
    # view, attention's scratch rows); every kernel drops the C-callable wrapper
    flags = {}
    for gen in generated:
        for source in gen.kernel_sources:
            decorator = re.search(r"^@numba\.njit\((.*)\)\ndef kernel", source, re.M).group(1)
            assert "no_cfunc_wrapper=True" in decorator
            allocates = re.search(r"np\.(dot|empty|lib\.stride_tricks)", source) is not None
            assert ("_nrt=False" in decorator) != allocates, source
            flags[allocates] = flags.get(allocates, 0) + 1
    assert flags.get(False, 0) > 5  # most kernels: the MLP's loops, sgemm calls, helpers


def test_a_matmul_kernel_calls_sgemm_and_gives_the_reference(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((5, 7))
    b = b.astype(np.float32)
    g = Graph("mm")
    x, w = g.input("x", (6, 5)), g.input("w", (7, 5))
    g.output("y", g.apply("matmul", x, g.apply("permute", w, perm=(1, 0))))
    compiled = kernels.compile(g)
    sources = "\n".join(compiled.generated.kernel_sources)
    assert "gemm_nt(" in sources and "np.dot(" not in sources  # w is read transposed
    out = compiled.run({"x": a, "w": np.ascontiguousarray(b.T)})["y"]
    np.testing.assert_allclose(out, run_reference(g, {"x": a, "w": b.T})["y"], rtol=1e-5)
