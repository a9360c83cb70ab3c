"""Host arrays on a cache line (kernels/hostmem.py): the memory plan's arena, so
that every buffer a step stores starts on a 64-byte line as its offset means it to
(numpy starts a large array 16 bytes past one), and the parameters and optimizer
state a program updates."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sexpgpu.kernels import demo, hostmem

from sexpgpu import kernels
from sexpgpu.api import load_program

TINY = Path(__file__).resolve().parent / "e2e" / "tiny.sx"


@pytest.mark.parametrize("shape", [(), (0,), (3, 5), (1000, 7), (1 << 20,)])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint16, np.bool_])
def test_zeros_are_zeros_on_a_line(shape, dtype) -> None:
    z = hostmem.zeros(shape, dtype)
    assert (z.shape, z.dtype) == (shape, np.dtype(dtype))
    assert z.flags.c_contiguous and z.flags.writeable
    assert z.ctypes.data % hostmem.LINE == 0
    assert not z.any()


def test_copy_keeps_values_and_converts() -> None:
    x = np.arange(12, dtype=np.float64).reshape(3, 4)[:, ::2]  # not contiguous
    c = hostmem.copy(x, np.float32)
    assert c.dtype == np.float32 and c.ctypes.data % hostmem.LINE == 0
    np.testing.assert_array_equal(c, x.astype(np.float32))


def test_every_stored_buffer_of_a_step_starts_on_a_line() -> None:
    compiled = kernels.compile(demo.mlp_step(batch=8, sizes=(6, 12, 3)).graph)
    offsets = [view.ctypes.data % hostmem.LINE for view in compiled._fixed]
    assert offsets and not any(offsets), offsets


def test_parameters_and_optimizer_state_start_on_a_line(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("SEXPGPU_COMPILE_JOBS", "1")
    _, program = load_program(str(TINY), {"steps": 2})
    arrays = {**program.params(), **program.state()}
    assert arrays
    assert {name: a.ctypes.data % hostmem.LINE for name, a in arrays.items()
            if a.ctypes.data % hostmem.LINE} == {}
