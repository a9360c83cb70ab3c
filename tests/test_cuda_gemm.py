"""The cuBLAS call of every matmul the CUDA launcher can hand to cuBLAS, checked without
a GPU: kernels.gemm.emulate reads and writes the flat buffers exactly as cuBLAS would
for the derived BlasCall (column-major, leading dimensions, strides or pointer
arrays), and the result must be the reference's. Also the device memory a cuda run
needs (explain, E-DEVICE-MEMORY), which needs no numba either."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matmul_cases import matmul_graph
from sexpgpu.kernels.gemm import blas_call, emulate
from sexpgpu.kernels.generate import generate
from sexpgpu.kernels.lower import lower
from sexpgpu.kernels.memplan import plan_memory
from sexpgpu.kernels.render import Names, render

from sexpgpu.diagnostics import SexpError
from sexpgpu.ir.reference import run_reference

TINY = Path(__file__).parent / "e2e" / "tiny.sx"


def test_every_blas_call_computes_the_reference() -> None:
    g, inputs = matmul_graph()
    program = lower(g)
    names = Names(program)
    buffers = {names.buf(v): inputs[v.name].reshape(-1).copy() for v in g.inputs}
    plan = plan_memory(program)
    for v in plan.slot_of:  # one buffer per stored value (no reuse: every one is checked)
        buffers[names.buf(v)] = np.full(int(np.prod(v.shape)) or 1, np.nan, np.float32)
    want = run_reference(g, inputs)
    calls = 0
    for kernel in program.kernels:
        code = render(kernel, program, names, f"k{kernel.index}")
        assert code.gemm is not None, kernel.nodes
        call = blas_call(code.gemm)
        assert call is not None, f"k{kernel.index} ({[n.op for n in kernel.nodes]}) no BLAS"
        emulate(call, buffers)
        calls += 1
    for name, v in program.outputs.items():
        got = buffers[names.buf(v)][:int(np.prod(v.shape))].reshape(v.shape)
        np.testing.assert_allclose(got, want[name], rtol=1e-5, atol=1e-5, err_msg=name)
    assert calls == len(program.outputs)


def test_batched_views_use_pointer_arrays_when_no_single_stride_exists() -> None:
    g, _ = matmul_graph()
    program = lower(g)
    names = Names(program)
    kinds = {}
    for kernel in program.kernels:
        out = kernel.nodes[-1].outputs[0]
        name = next(n for n, v in program.outputs.items() if v is out)
        call = blas_call(render(kernel, program, names, "k").gemm)
        kinds[name] = ("one" if call.count == 1 else
                       "strided" if call.strided is not None else "pointers")
    # the shared weight is one product over the stacked rows; heads of a sliced
    # projection have no single batch stride
    assert kinds["shared"] == "one" and kinds["ab"] == "one" and kinds["wgrad"] == "one"
    assert kinds["scores"] == "pointers"


def test_the_step_lists_its_blas_calls() -> None:
    g, _ = matmul_graph()
    program = lower(g)
    generated = generate(program, plan_memory(program), "cuda")
    assert {launch.family for launch in generated.launches} <= {"gemm", "elementwise"}


def test_device_memory_is_explained_and_a_run_that_cannot_fit_is_refused(capsys) -> None:
    from sexpgpu.cli import main
    from sexpgpu.contract.compile import compile_file
    from sexpgpu.runtime.device import check_fits, device_need
    from sexpgpu.selection import Selection

    compiled = compile_file(str(TINY), Selection())
    need = device_need(compiled)
    assert need["resident_bytes"] == (8 * 16 + 16 + 16 * 4 + 4) * 4 * 3 + 8  # params, m, v
    assert need["total_bytes"] == sum(v for k, v in need.items() if k != "total_bytes")
    with pytest.raises(SexpError) as info:
        check_fits(compiled, free=1 << 20)
    assert info.value.diagnostic.code == "E-DEVICE-MEMORY"
    assert main(["explain", str(TINY), "--device", "cuda"]) == 0
    assert "device memory (cuda)" in capsys.readouterr().out
