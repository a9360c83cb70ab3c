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
