"""The CUDA launcher in numba's CUDA simulator: the same generated bodies agree
with the CPU launcher to 1e-6, every op's special-value cases agree with the
reference, bad indices are E-INDEX, the RNG gives the same bits, and a tiny model's
bf16 training step (after the precision pass) equals the CPU's bit for bit. numba reads
NUMBA_ENABLE_CUDASIM at import, so the main run re-runs this file in a
subprocess with the variable set (the simulator is ~500,000x slower than njit:
sizes stay at a few thousand elements)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cudasim import rerun_in_simulator

from sexpgpu import env

pytestmark = pytest.mark.cudasim
ROOT = Path(__file__).resolve().parent.parent

if not env.cuda_simulator():

    def test_cuda_launcher_in_simulator() -> None:
        rerun_in_simulator(__file__, timeout=600)

else:
    from numba import cuda  # module level: the simulator patches the kernel's globals
    from op_cases import assert_same_values, case_graph
    from sexpgpu.kernels.rng import jitted

    from sexpgpu import kernels
    from sexpgpu.diagnostics import SexpError
    from sexpgpu.ir import rng
    from sexpgpu.ir.graph import Graph
    from sexpgpu.ir.ops._sampling import index_error_samples, special_samples
    from sexpgpu.ir.ops.registry import OPS, get_op
    from sexpgpu.ir.reference import run_reference

    @pytest.mark.parametrize("name", sorted(OPS))
    def test_op_special_values_match_reference(name: str) -> None:
        """The CPU test of the same name, through the CUDA launcher: every op's
        special-value cases (±0, subnormals, ±inf, NaN, ±3e38, ±1e4, negative
        indices, every value against every other for elementwise ops)."""
        g, inputs = case_graph(name, special_samples(get_op(name), np.random.default_rng(1)))
        expected = run_reference(g, {k: v.copy() for k, v in inputs.items()})
        got = kernels.compile(g, device="cuda").run(inputs)
        for key, want in expected.items():
            assert_same_values(got[key], want, key)

    @pytest.mark.parametrize("name", sorted(n for n, op in OPS.items() if "indices" in op.extra))
    def test_op_index_out_of_range_is_e_index(name: str) -> None:
        for case in index_error_samples(get_op(name), np.random.default_rng(1)):
            g, inputs = case_graph(name, [case])
            compiled = kernels.compile(g, device="cuda")
            with pytest.raises(SexpError) as info:
                compiled.run(inputs)
            assert info.value.diagnostic.code == "E-INDEX", name

    def test_losses_agree_with_the_reference() -> None:
        """tests/test_losses.py's cases in one graph, through the CUDA launcher."""
        from test_losses import _all_losses

        g, feed = _all_losses()
        want = run_reference(g, feed)
        got = kernels.compile(g, device="cuda").run(feed)
        for key in want:
            assert_same_values(got[key], want[key], key, rtol=1e-5, atol=1e-6)

    def test_rng_device_functions_are_bit_identical() -> None:
        fns = jitted("cuda")
        uniform, normal = fns.uniform, fns.normal

        @cuda.jit
        def fill(u, n):
            i = cuda.grid(1)
            if i < u.size:
                u[i] = uniform(42, 3, i)
                n[i] = normal(42, 3, i)

        u = np.zeros(512, np.float32)
        n = np.zeros(512, np.float32)
        fill[4, 128](u, n)
        np.testing.assert_array_equal(u.view(np.uint32),
                                      rng.uniform_array(42, 3, (512,)).view(np.uint32))
        np.testing.assert_array_equal(n, rng.normal_array(42, 3, (512,)))

    def _graph() -> tuple[Graph, dict[str, np.ndarray]]:
        """Fused elementwise + broadcast + reduction, matmul, gather, dropout, bf16."""
        g = Graph("cudasim")
        x = g.input("x", (6, 8))
        w = g.input("w", (8, 5))
        b = g.input("b", (5,))
        idx = g.input("idx", (4,), "i64")
        seed = g.input("seed", (), "i64")
        h = g.apply("tanh", g.apply("add", g.apply("matmul", x, w), b))     # (6, 5)
        g.output("h", h)
        g.output("rowsum", g.apply("sum", g.apply("exp", h), axes=(1,), keepdims=True))
        g.output("colmax", g.apply("amax", h, axes=(0,), keepdims=False))
        g.output("rows", g.apply("take", x, idx, axis=0))
        g.output("drop", g.apply("dropout", x, seed, p=0.25, stream=2))
        g.output("half", g.apply("cast", g.apply("mul", x, x), dtype="bf16"))
        g.output("xtx", g.apply("matmul", g.apply("permute", x, perm=(1, 0)), x))
        # an outer product (inner dimension 1): an elementwise loop on both launchers
        column = g.apply("slice", x, starts=(None, 0), stops=(None, 1), steps=(None, None))
        row = g.apply("slice", w, starts=(0, None), stops=(1, None), steps=(None, None))
        g.output("outer", g.apply("add", g.apply("matmul", column, row), b))
        # a weight gradient (matmul + batch sum, one kernel), a shared weight
        # (one sgemm on the CPU) and an embedding gradient (scatter_add)
        xb, gb = g.input("xb", (2, 3, 4)), g.input("gb", (2, 3, 5))
        w2, pos = g.input("w2", (5, 4)), g.input("pos", (6,), "i64")
        g.output("wgrad", g.apply("sum", g.apply("matmul", g.apply("permute", xb, perm=(0, 2, 1)),
                                                 gb), axes=(0,)))
        g.output("proj", g.apply("matmul", xb, g.apply("permute", w2, perm=(1, 0))))
        g.output("embgrad", g.apply("scatter_add", x, pos, axis=0, size=4))
        # attention's heads: slices of one projection, split and permuted, read by
        # matmuls as strided views of the projection's buffer
        qkv = g.input("qkv", (2, 3, 12))
        q, k = (g.apply("permute", g.apply("reshape", g.apply(
            "slice", qkv, starts=(None, None, lo), stops=(None, None, lo + 4),
            steps=(None, None, None)), shape=(2, 3, 2, 2)), perm=(0, 2, 1, 3))
            for lo in (0, 4))
        scores = g.apply("matmul", q, g.apply("permute", k, perm=(0, 1, 3, 2)))
        g.output("scores", scores)
        # heads merged back (a reshape no strides describe) and joined: read in place
        merged = g.apply("reshape", g.apply("permute", g.apply("matmul", scores, q),
                                            perm=(0, 2, 1, 3)), shape=(2, 3, 4))
        g.output("joined", g.apply("concat", merged, qkv, merged, axis=2))
        # a column block and a time step's row, read in place by loops (masked offsets)
        seq = g.input("seq", (2, 3, 64))
        gate = g.apply("slice", seq, starts=(None, None, 32), stops=(None, None, 64),
                       steps=(None, None, None))
        step = g.apply("reshape", g.apply("slice", seq, starts=(None, 1, None),
                                          stops=(None, 2, None), steps=(None, None, None)),
                       shape=(2, 64))
        g.output("gate", g.apply("sigmoid", gate))
        g.output("step_sum", g.apply("sum", g.apply("exp", step), axes=(1,)))
        # hidden states stacked over time and gates joined (rows of FILL_ROW): loops
        # store into the concats' buffers, matmuls read the states there
        r0, rw = g.input("r0", (4, 128)), g.input("rw", (128, 128))
        h1 = g.apply("tanh", g.apply("matmul", r0, rw))
        h2 = g.apply("tanh", g.apply("matmul", h1, rw))
        g.output("states", g.apply("concat", *(g.apply("reshape", v, shape=(4, 1, 128))
                                                for v in (h1, h2)), axis=1))
        g.output("hgrad", g.apply("matmul", g.apply("permute", h1, perm=(1, 0)), h2))
        g.output("joined4", g.apply("concat", g.apply("sigmoid", r0), g.apply("exp", r0),
                                    axis=1))
        # a stack read only over its axis (a scan's input-gate gradient): never written,
        # its sum and its product taken piece by piece (kernels/unstack.py)
        xs = g.input("xs", (6, 3, 1))
        stack = g.apply("concat", *(g.apply("reshape", g.apply(op, x), shape=(6, 1, 8))
                                    for op in ("sigmoid", "tanh", "exp")), axis=1)
        g.output("stack_sum", g.apply("sum", stack, axes=(0, 1), keepdims=False))
        g.output("stack_product", g.apply("sum", g.apply("matmul", g.apply(
            "permute", xs, perm=(0, 2, 1)), stack), axes=(0,), keepdims=False))
        r = np.random.default_rng(0)
        inputs = {"x": r.standard_normal((6, 8)).astype(np.float32),
                  "xs": r.standard_normal((6, 3, 1)).astype(np.float32),
                  "w": r.standard_normal((8, 5)).astype(np.float32),
                  "b": r.standard_normal(5).astype(np.float32),
                  "idx": np.array([5, 0, 2, 2]), "seed": np.array(9),
                  "xb": r.standard_normal((2, 3, 4)).astype(np.float32),
                  "gb": r.standard_normal((2, 3, 5)).astype(np.float32),
                  "w2": r.standard_normal((5, 4)).astype(np.float32),
                  "pos": np.array([3, 0, -1, 3, 1, 0]),
                  "qkv": r.standard_normal((2, 3, 12)).astype(np.float32),
                  "seq": r.standard_normal((2, 3, 64)).astype(np.float32),
                  "r0": r.standard_normal((4, 128)).astype(np.float32),
                  "rw": r.standard_normal((128, 128)).astype(np.float32) / 8}
        return g, inputs

    def test_cuda_launcher_agrees_with_cpu() -> None:
        g, inputs = _graph()
        cpu = kernels.compile(g, device="cpu").run(inputs)
        gpu = kernels.compile(g, device="cuda").run(inputs)
        assert set(cpu) == set(gpu)
        for name in cpu:
            np.testing.assert_allclose(gpu[name], cpu[name], rtol=1e-6, atol=1e-6,
                                       err_msg=name)
        np.testing.assert_array_equal(gpu["drop"], cpu["drop"])
        np.testing.assert_array_equal(gpu["half"], cpu["half"])

    def test_cuda_updates_in_place() -> None:
        g = Graph("cudasim-update")
        p = g.input("p", (300,), role="param")
        grad = g.input("g", (300,))
        g.update(p, g.apply("sub", p, g.apply("mul", grad, g.apply(
            "full", shape=(), dtype="f32", value=0.5))))
        p0 = np.linspace(-1, 1, 300, dtype=np.float32)
        arrays = {"p": p0.copy(), "g": np.ones(300, np.float32)}
        kernels.compile(g, device="cuda").run(arrays)
        np.testing.assert_allclose(arrays["p"], p0 - 0.5, rtol=1e-6)

    def _tiny_bf16_step() -> Graph:
        """A two-layer regression step (MSE, SGD) lowered for bf16. The learning rate
        is a power of two so that the CPU's fused multiply-add in `p - g * lr` (which
        the GPU makes too, and the simulator, running Python, does not) rounds as the
        two operations do; every product a bf16 matmul sums is exact in f32 anyway."""
        from step_cases import sgd_step

        from sexpgpu.ir import build
        from sexpgpu.ir.precision import lower_precision

        g = Graph("tiny-bf16")
        x, t = g.input("x", (4, 6), role="data"), g.input("t", (4, 3), role="data")
        w1, b1 = g.input("w1", (8, 6), role="param"), g.input("b1", (8,), role="param")
        w2 = g.input("w2", (3, 8), role="param")
        h = g.apply("relu", g.apply("add", g.apply("matmul", x, g.apply(
            "permute", w1, perm=(1, 0))), b1))                              # (4, 8)
        y = g.apply("matmul", h, g.apply("permute", w2, perm=(1, 0)))       # (4, 3)
        loss = build.mean(g, g.apply("square", g.apply("sub", y, t)), None, False)
        forward, update, _ = sgd_step(g, loss, [w1, b1, w2], 0.0625)
        g.output("loss", loss)
        g.output("h", g.apply("reshape", h, shape=(32,)))  # stored: a bf16 activation
        return lower_precision(g, "bf16", forward, update).graph

    def test_bf16_training_step_is_bit_identical_to_the_cpu() -> None:
        g = _tiny_bf16_step()
        assert any(v.dtype == "bf16" for n in g.nodes for v in n.outputs)
        r = np.random.default_rng(0)
        start = {"x": r.standard_normal((4, 6)), "t": r.standard_normal((4, 3)),
                 "w1": r.standard_normal((8, 6)), "b1": r.standard_normal(8),
                 "w2": r.standard_normal((3, 8))}
        runs = {}
        for device in ("cpu", "cuda"):
            step = kernels.compile(g, device=device)
            arrays = {k: v.astype(np.float32) for k, v in start.items()}
            runs[device] = [step.run(arrays) for _ in range(3)], arrays
        (cpu_out, cpu_params), (gpu_out, gpu_params) = runs["cpu"], runs["cuda"]
        for a, b in zip(cpu_out, gpu_out):
            for name in a:
                np.testing.assert_array_equal(a[name].view(np.uint32), b[name].view(np.uint32))
        for name in ("w1", "b1", "w2"):  # the f32 masters after three updates
            np.testing.assert_array_equal(cpu_params[name].view(np.uint32),
                                          gpu_params[name].view(np.uint32))
        assert cpu_out[-1]["loss"] < cpu_out[0]["loss"]
