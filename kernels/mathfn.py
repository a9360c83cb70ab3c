"""Scalar math helpers copied into kernel modules (CPU njit and CUDA device code):
faster forms of libm functions, within an f64 ulp or two, so identical after the
rounding to f32 that every op result gets."""

from __future__ import annotations

import math


def fast_tanh(x):
    """tanh in f64 through one `exp` (libm's tanh is ~3x slower per element in njit
    loops: the GPT's gelu forward and backward took 40 ms of a 105 ms step)."""
    a = abs(x)
    if a < 0.0625:
        # small |x|: expm1 keeps the relative precision that 1 - exp(-2a) loses
        e = math.expm1(-2.0 * a)
        return math.copysign(-e / (2.0 + e), x)
    e = math.exp(-2.0 * a)                  # in [0, 0.89): no cancellation below
    return math.copysign((1.0 - e) / (1.0 + e), x)


SCALAR_FUNCTIONS = (fast_tanh,)
