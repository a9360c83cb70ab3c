"""The counter-based RNG: numpy and numba.njit give the same bits (the CUDA
device version is checked in tests/test_kernels_cudasim.py), and the values
look uniform / normal."""

from __future__ import annotations

import numpy as np
from sexpgpu.kernels import bf16
from sexpgpu.kernels.rng import jitted

from sexpgpu.ir import rng


def _njit_fill(fn, seed: int, stream: int, n: int) -> np.ndarray:
    import numba

    @numba.njit
    def fill(out):
        for i in range(out.size):
            out[i] = fn(seed, stream, i)
        return out

    return fill(np.empty(n, np.float32))


def test_uniform_njit_is_bit_identical_to_numpy() -> None:
    fns = jitted("cpu")
    for seed, stream in ((0, 0), (42, 3), (2**40 + 7, 11)):
        want = rng.uniform_array(seed, stream, (5000,))
        got = _njit_fill(fns.uniform, seed, stream, 5000)
        assert got.dtype == want.dtype == np.float32
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_normal_njit_matches_numpy() -> None:
    fns = jitted("cpu")
    want = rng.normal_array(1, 2, (5000,))
    got = _njit_fill(fns.normal, 1, 2, 5000)
    np.testing.assert_array_equal(got, want)


def test_uniform_statistics_and_range() -> None:
    u = rng.uniform_array(7, 0, (200_000,))
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.005
    hist, _ = np.histogram(u, bins=20, range=(0, 1))
    assert hist.min() > 0.9 * len(u) / 20
    n = rng.normal_array(7, 0, (200_000,))
    assert abs(n.mean()) < 0.01 and abs(n.std() - 1.0) < 0.01


def test_streams_and_seeds_differ_and_scalars_work() -> None:
    a = rng.uniform_array(1, 0, (1000,))
    assert not np.array_equal(a, rng.uniform_array(1, 1, (1000,)))
    assert not np.array_equal(a, rng.uniform_array(2, 0, (1000,)))
    assert rng.uniform(1, 0, 5) == a[5]
    assert rng.uniform(1, 0, np.array([[5, 6]])).shape == (1, 2)


def test_bf16_scalar_bodies_match_numpy_bit_views() -> None:
    import numba

    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -3e-39, 3.3895314e38,
                        1.0039062, 3.4e38, 1.00390625], np.float32)
    x = np.concatenate([np.random.default_rng(0).standard_normal(3000).astype(np.float32) * 50,
                        special])
    want = bf16.to_bf16(x)
    to16, to32 = numba.njit(bf16.f32_to_bf16), numba.njit(bf16.bf16_to_f32)
    got = np.array([to16(v) for v in x], np.uint16)
    np.testing.assert_array_equal(got, want)
    back = np.array([to32(h) for h in want], np.float32)
    np.testing.assert_array_equal(back, bf16.from_bf16(want))
    # ties go to even: 1 + 2**-8 lies halfway between two bf16 values
    assert bf16.to_bf16(np.array([1.00390625], np.float32))[0] == 0x3F80


def _cpu_bodies():
    """kernels.bf16.CPU_BODIES as njit functions, as codegen writes them."""
    import math

    import numba

    space = {"np": np, "math": math}
    for name, body in bf16.CPU_BODIES.items():
        exec(f"def {name}(x):\n" + "\n".join("    " + line for line in body.splitlines()),
             space)
    return numba.njit(space["f32_to_bf16"]), numba.njit(space["bf16_to_f32"])


def test_bf16_cpu_bodies_equal_the_portable_ones_bit_for_bit() -> None:
    """CPU kernels convert through the bit pattern, CUDA ones by arithmetic: both round
    to nearest even (ties are common: a sum of two bf16 values often is one), NaN to
    0x7FC0, an f64 result first to f32, a bool or an integer as its value."""
    import numba

    cpu16, cpu32 = _cpu_bodies()
    arith16, arith32 = numba.njit(bf16.f32_to_bf16), numba.njit(bf16.bf16_to_f32)

    @numba.njit
    def each(f, xs, out):
        for i in range(xs.size):
            out[i] = f(xs[i])

    r = np.random.default_rng(1)
    patterns = r.integers(0, 2 ** 32, 50_000, dtype=np.uint64).astype(np.uint32)
    ties = (r.integers(0, 2 ** 16, 5_000).astype(np.uint32) << 16) | 0x8000
    x = np.concatenate([patterns, ties]).view(np.float32)
    for xs in (x, r.standard_normal(5_000) * 1e3):  # f32, then f64 inputs
        a, b = np.empty(xs.size, np.uint16), np.empty(xs.size, np.uint16)
        each(cpu16, xs, a)
        each(arith16, xs, b)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, bf16.to_bf16(xs.astype(np.float32)))

    @numba.njit
    def flags(f):
        return f(True), f(False), f(3)

    assert flags(cpu16) == flags(arith16) == (0x3F80, 0, 0x4040)
    every = np.arange(2 ** 16, dtype=np.uint16)
    a, b = np.empty(every.size, np.float32), np.empty(every.size, np.float32)
    each(cpu32, every, a)
    each(arith32, every, b)
    np.testing.assert_array_equal(a, b)  # NaN == NaN here; every other value bit for bit
    np.testing.assert_array_equal(a, bf16.from_bf16(every))
