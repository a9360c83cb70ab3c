"""Every CUDA kernel family with the GPU's launch preset, in numba's CUDA simulator:
elementwise, a block per row (softmax, layer norm, cross-entropy rows, leading-axis
sums), full reductions, the tiled matmul (batched, transposed, strided views, the
weight-gradient fold), take and scatter_add (atomics), dropout, in-place updates.
Each agrees with the CPU launcher to 1e-6 relative, the RNG bit for bit; the launch
list is the plan's kernels; transfers are counted. Re-run in a subprocess with
NUMBA_ENABLE_CUDASIM=1 (numba reads it at import); shapes stay small."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cudasim import rerun_in_simulator

from sexpgpu import env

pytestmark = pytest.mark.cudasim
ROOT = Path(__file__).resolve().parent.parent

if not env.cuda_simulator():

    def test_cuda_kernel_families_in_simulator() -> None:
        rerun_in_simulator(__file__, timeout=900)

else:
    from matmul_cases import matmul_graph
    from sexpgpu.kernels import cuda_codegen

    from sexpgpu import kernels
    from sexpgpu.ir.graph import Graph

    cuda_codegen.PRESET = cuda_codegen.GPU  # the families a GPU runs, not the light preset

    def _agree(g: Graph, inputs: dict[str, np.ndarray], exact: tuple[str, ...] = ()) -> dict:
        cpu = kernels.compile(g, device="cpu").run({k: v.copy() for k, v in inputs.items()})
        compiled = kernels.compile(g, device="cuda")
        gpu = compiled.run({k: v.copy() for k, v in inputs.items()})
        assert set(cpu) == set(gpu)
        for name in cpu:
            if name in exact:
                np.testing.assert_array_equal(gpu[name], cpu[name], err_msg=name)
            else:
                np.testing.assert_allclose(gpu[name], cpu[name], rtol=1e-6, atol=1e-6,
                                           err_msg=name)
        return {launch.family for launch in compiled.generated.launches}

    def _f32(rng, *shape):
        return rng.standard_normal(shape).astype(np.float32)

    def test_merged_heads_copied_over_their_grid() -> None:
        from test_kernels_executor import merged_heads_graph

        r = np.random.default_rng(6)
        inputs = {"x0": _f32(r, 2, 3, 4, 5), "x1": _f32(r, 2, 3, 4, 5), "p": _f32(r, 2, 4, 6)}
        _agree(merged_heads_graph(), inputs, exact=("cat", "cat0"))

    def test_attention_stores_merged_heads_in_place() -> None:
        """The fused attention's forward and backward store through strided views of
        the merged heads and of the joined gradient (kernels/lower.py _stores_ahead)."""
        from test_attention import _projected_graph, _projected_inputs

        g = _projected_graph(True, t=6)
        assert any(k.homes for k in kernels.compile(g, device="cuda").program.kernels)
        _agree(g, _projected_inputs(t=6))

    def test_rows_softmax_layer_norm_cross_entropy() -> None:
        g = Graph("rows")
        x = g.input("x", (5, 40))
        y = g.input("y", (5, 1), "i64")

        def wide(v):
            return g.apply("broadcast_to", v, shape=(5, 40))

        def const(value):
            return g.apply("full", shape=(), dtype="f32", value=value)

        m = g.apply("amax", x, axes=(1,), keepdims=True)
        e = g.apply("exp", g.apply("sub", x, wide(m)))
        s = g.apply("sum", e, axes=(1,), keepdims=True)
        g.output("softmax", g.apply("div", e, wide(s)))
        mean = g.apply("mul", g.apply("sum", x, axes=(1,), keepdims=True), const(1 / 40))
        dev = g.apply("sub", x, wide(mean))
        g.output("var", g.apply("sum", g.apply("square", dev), axes=(1,)))
        logz = g.apply("add", g.apply("log", s), m)
        hit = g.apply("eq", g.apply("iota", shape=(5, 40), dtype="i64", axis=1), wide(y))
        picked = g.apply("sum", g.apply("where", hit, x, const(0.0)), axes=(1,), keepdims=True)
        g.output("xent", g.apply("sub", logz, picked))
        g.output("colsum", g.apply("sum", x, axes=(0,)))          # a bias gradient: 5 per row
        g.output("amin", g.apply("amin", x, axes=(1,)))
        r = np.random.default_rng(0)
        xs = _f32(r, 5, 40)
        xs[3, 7] = np.nan                                          # max and min take NaN
        families = _agree(g, {"x": xs, "y": np.array([[0], [39], [5], [2], [11]])})
        assert "rows" in families

    def test_full_reductions_and_integer_sums() -> None:
        g = Graph("full")
        x = g.input("x", (12, 30))
        n = g.input("n", (300,), "i32")
        g.output("sq", g.apply("sum", g.apply("square", x), axes=None))
        g.output("max", g.apply("amax", x, axes=None))
        g.output("isum", g.apply("sum", n, axes=None))
        r = np.random.default_rng(1)
        families = _agree(g, {"x": _f32(r, 12, 30),
                              "n": r.integers(-1000, 1000, 300).astype(np.int32)},
                          exact=("isum", "max"))
        assert "rows" in families

    def test_tiled_matmuls() -> None:
        g, inputs = matmul_graph(seed=2)
        assert "gemm" in _agree(g, inputs)

    def test_take_scatter_add_dropout_update() -> None:
        g = Graph("misc")
        table = g.input("table", (7, 5), role="param")
        idx = g.input("idx", (9,), "i64")
        seed = g.input("seed", (), "i64")
        rows = g.apply("take", table, idx, axis=0)                       # (9, 5)
        dropped = g.apply("dropout", rows, seed, p=0.3, stream=4)
        g.output("dropped", dropped)
        grad = g.apply("scatter_add", dropped, idx, axis=0, size=7)      # atomics
        g.output("grad", grad)
        g.update(table, g.apply("sub", table, g.apply("mul", grad, g.apply(
            "full", shape=(), dtype="f32", value=0.1))))
        r = np.random.default_rng(3)
        inputs = {"table": _f32(r, 7, 5), "idx": np.array([1, 6, 1, -1, 0, 3, 3, 3, 2]),
                  "seed": np.array(11)}
        families = _agree(g, inputs, exact=("dropped",))
        assert {"atomic", "zero"} <= families
        cpu, gpu = inputs["table"].copy(), inputs["table"].copy()
        kernels.compile(g, device="cpu").run({**inputs, "table": cpu})
        kernels.compile(g, device="cuda").run({**inputs, "table": gpu})
        np.testing.assert_allclose(gpu, cpu, rtol=1e-6, atol=1e-6)     # updated in place

    def test_launch_list_is_the_plan() -> None:
        """One launch per kernel of the plan, in order, plus the named helpers (zeroing
        before atomics, a copy for an update not made in place, the record)."""
        g = Graph("launches")
        p = g.input("p", (4, 3), role="param")
        x = g.input("x", (5, 4))
        idx = g.input("idx", (5,), "i64")
        h = g.apply("matmul", x, p)
        g.output("loss", g.apply("sum", g.apply("square", h), axes=None))
        emb = g.apply("scatter_add", x, idx, axis=0, size=4)              # (4, 4)
        g.update(p, g.apply("sub", p, g.apply("matmul", emb, p)))
        compiled = kernels.compile(g, device="cuda", record=(["loss"], "last"))
        plan_kernels = [f"k{k.index}" for k in compiled.program.kernels]
        names = [launch.name for launch in compiled.generated.launches]
        assert [n for n in names if "." not in n and " " not in n and n != "record"] \
            == plan_kernels
        assert names[-1] == "record" and any(n.endswith(".zero") for n in names)
        entries = compiled.module.launches(*([None] * (len(compiled.generated.params) + 1)))
        assert [e[0] for e in entries] == names

    def test_transfers_are_counted() -> None:
        """A bound (resident) input moves no bytes; each launch sends the staged inputs
        in one copy; nothing comes back until something is read."""
        from sexpgpu.kernels import cuda_backend as be

        g = Graph("transfers")
        p = g.input("p", (64,), role="param")
        x = g.input("x", (64,))
        g.update(p, g.apply("add", p, x))
        g.output("loss", g.apply("sum", p, axes=None))
        compiled = kernels.compile(g, device="cuda", record=(["loss"], "last"))
        compiled.bind({"p": be.to_device(np.zeros(64, np.float32))})
        for _ in range(3):
            compiled.launch({"x": np.ones(64, np.float32)})
        assert (compiled.h2d_bytes, compiled.d2h_bytes) == (3 * 256, 0)
        values, bad, calls = compiled.read_record()
        assert values == {"loss": 128.0} and bad == 0 and calls == 3  # the sum before the update
        assert compiled.d2h_bytes == 8 * 4  # loss, calls, the two flags: one small copy

    def test_a_failing_launch_is_e_cuda_kernel_at_its_line() -> None:
        """A launch that fails on the device is a coded error naming the kernel and
        the run-file line its ops came from (here a launch made to fail)."""
        from sexpgpu.diagnostics import SexpError, Span

        g = Graph("fails")
        x = g.input("x", (8,))
        with g.at(Span("model.sx", 12, 3)):
            g.output("y", g.apply("tanh", x))
        compiled = kernels.compile(g, device="cuda")
        compiled.run({"x": np.ones(8, np.float32)})

        class Refused:
            def __getitem__(self, config):
                raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS")

        name, _, grid, block, args = compiled._step.entries[0]
        compiled._step.entries[0] = (name, Refused(), grid, block, args)
        with pytest.raises(SexpError) as info:
            compiled.run({"x": np.ones(8, np.float32)})
        diag = info.value.diagnostic
        assert diag.code == "E-CUDA-KERNEL" and (diag.span.file, diag.span.line) == ("model.sx", 12)
        assert "tanh" in diag.message and "ILLEGAL_ADDRESS" in diag.actual
