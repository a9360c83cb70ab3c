"""Scalar math helpers copied into kernel modules: `exp` and `tanh` as branch-free
f64 arithmetic that LLVM vectorises, within an f64 ulp or two of libm, so equal to
it after the rounding to f32 that every op result gets (a test holds them to that).

Why: numba calls libm's scalar `exp` and `tanh` once per element, which stops a
loop from vectorising; the GPT's gelu forward and backward took 39 ms of a 101 ms
step that way, 4.5x more than these forms. CUDA has fast exp and tanh of its own,
so its kernels call those under the same names (CUDA_BODIES)."""

from __future__ import annotations

import math

import numpy as np

_LOG2E = 1.4426950408889634
_LN2_HI = 0.6931471803691238    # ln 2 split so that n * _LN2_HI is exact for |n| < 2^11
_LN2_LO = 1.9082149292705877e-10


def fast_exp(x):
    """e^x: x = n ln2 + r with |r| <= ln2/2, e^r by its Taylor series to r^13 (error
    below 1e-17), times 2^n built from its bits. NaN in, NaN out; outside the f64
    range the clamp gives 0 or a value that rounds to inf in f32."""
    y = min(max(x, -708.0), 709.0)
    y = y if y == y else 0.0
    n = math.floor(y * _LOG2E + 0.5)
    r = (y - n * _LN2_HI) - n * _LN2_LO
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    v = p * np.int64((np.int64(n) + 1023) << 52).view(np.float64)
    return v if x == x else x


def fast_tanh(x):
    """tanh through one fast_exp; below |x| = 1/16, where 1 - e^-2a cancels, its odd
    Taylor series to x^13 (error below 1e-17 relative). Both are computed and one
    selected, so the loop has no branch."""
    a = abs(x)
    e = fast_exp(-2.0 * a)
    big = (1.0 - e) / (1.0 + e)
    z = a * a
    small = a + a * z * (-1.0 / 3.0 + z * (2.0 / 15.0 + z * (-17.0 / 315.0 + z * (
        62.0 / 2835.0 + z * (-1382.0 / 155925.0 + z * (21844.0 / 6081075.0))))))
    t = small if a < 0.0625 else big
    return math.copysign(t, x)


SCALAR_FUNCTIONS = (fast_exp, fast_tanh)

# the same names in CUDA device code, where the hardware's own functions are fast
CUDA_BODIES = {"fast_exp": "math.exp(x)", "fast_tanh": "math.tanh(x)"}
