"""Issue 21: every generated CUDA kernel compiles for real GPUs, without one. The step
of every shipped example and every op's samples are generated for CUDA (the GPU's
launch preset); each kernel is compiled to PTX by numba-cuda's NVVM for sm_80 and
sm_90 and assembled by the machine's ptxas. Compile errors fail, and so does any
spill in the shipped examples' kernels; ptxas's registers, spills and shared memory
are written to <cache>/ptx/<example>.json."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import orjson
import pytest
from op_cases import case_graph

from sexpgpu import env
from sexpgpu.ir.ops.registry import OPS, get_op

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.sx"))
JOBS = max(1, min(4, len(os.sched_getaffinity(0))))


def _tools() -> str:
    """ptxas's path; skips (naming what is missing) where the tools are not here."""
    if env.cuda_simulator():
        pytest.skip("NUMBA_ENABLE_CUDASIM is set: the simulator's modules are not a GPU's")
    try:
        import numba_cuda  # noqa: F401
    except ImportError:
        pytest.skip("numba-cuda is not installed (pip install -e '.[cuda]'): no NVVM")
    from sexpgpu.kernels.ptx import find_ptxas

    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("ptxas (CUDA toolkit) not found on PATH, $CUDA_HOME/bin or "
                    "/usr/local/cuda*/bin")
    return ptxas


def _generated(graph, record=None):
    from sexpgpu.kernels import cuda_codegen
    from sexpgpu.kernels.generate import generate
    from sexpgpu.kernels.lower import lower
    from sexpgpu.kernels.memplan import plan_memory

    cuda_codegen.PRESET = cuda_codegen.GPU
    program = lower(graph, device="cuda")
    return generate(program, plan_memory(program), "cuda", record)


def _failures(rows: list[dict]) -> list[str]:
    return [f"{r['name']} ({r['family']}) {cc}: {r[cc]['error']}" for r in rows
            for cc in ("sm_80", "sm_90") if cc in r and r[cc]["error"]]


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_kernels_assemble_without_spills(path: Path) -> None:
    ptxas = _tools()
    from sexpgpu.kernels import ptx

    from sexpgpu.contract.compile import compile_file
    from sexpgpu.selection import Selection

    compiled = compile_file(str(path), Selection())
    generated = _generated(compiled.step_graphs()[0], (["loss", "grad_norm"], "last"))
    rows = ptx.report(generated, ptxas=ptxas, jobs=JOBS)
    assert not _failures(rows), "\n".join(_failures(rows)[:10])
    spills = [f"{r['name']} ({r['family']}) {cc}: {r[cc]['spill_stores']} B stored, "
              f"{r[cc]['spill_loads']} B loaded" for r in rows for cc in ("sm_80", "sm_90")
              if cc in r and (r[cc]["spill_stores"] or r[cc]["spill_loads"])]
    assert not spills, "\n".join(spills[:10])
    built = [r for r in rows if "module" in r]
    assert built and all(r["sm_90"]["ptx_version"] == "9.0" for r in built)
    summary = {"example": path.stem, "launches": len(rows), "kernels": ptx.distinct(rows),
               "max_registers": max(r["sm_90"]["registers"] for r in built),
               "max_shared_bytes": max(r["sm_90"]["shared_bytes"] for r in built),
               "rows": rows}
    out = env.cache_dir() / "ptx" / f"{path.stem}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(orjson.dumps(summary))


def test_op_sample_kernels_assemble() -> None:
    ptxas = _tools()
    from sexpgpu.kernels import ptx

    names = [name for name in sorted(OPS) if get_op(name).samples is not None]
    steps = [_generated(case_graph(name, get_op(name).samples(np.random.default_rng(0)))[0])
             for name in names]
    # every op's kernels in one pool: an op's step has a kernel or two, and NVVM's PTX
    # of them all, one op at a time, was 228 s of a cold CI on two cores
    failures = [f"{name}: {f}" for name, rows in zip(names, ptx.reports(steps, ptxas=ptxas,
                                                                        jobs=JOBS))
                for f in _failures(rows)]
    assert names and not failures, "\n".join(failures[:10])
