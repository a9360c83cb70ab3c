"""bf16 storage: a bf16 is the top 16 bits of an f32, kept in uint16 arrays.
The scalar conversions are pure arithmetic (no bit casts, no intrinsics), so
one body runs in numpy-free jit code on the CPU and in CUDA device code (numba's
CUDA target cannot view a float's bits). CPU kernels use `CPU_BODIES` instead:
the same results through the bit pattern, ~10x faster and vectorisable."""

from __future__ import annotations

import math

import numpy as np


def f32_to_bf16(x):
    """The bf16 pattern nearest to float32 `x` (ties to even); NaN stays NaN. `x` may
    also be a bool or an integer (a cast to bf16)."""
    # an f64 result is rounded to f32 first (as numpy stores it), then to bf16: the
    # CPU body below and the reference interpreter round the same way
    x = float(np.float32(1.0 * x))  # f64 holds every f32 exactly: no overflow below
    if x != x:
        return np.uint16(0x7FC0)
    sign = 0x8000 if math.copysign(1.0, x) < 0 else 0
    a = abs(x)
    if a == math.inf:
        return np.uint16(sign | 0x7F80)
    if a == 0:
        return np.uint16(sign)
    # rebuild the f32 bit pattern from exponent and mantissa
    m, e = math.frexp(a)                      # a = m * 2**e, 0.5 <= m < 1
    exponent = e + 126
    if exponent <= 0:                         # subnormal f32
        bits = int(math.ldexp(a, 149))
    else:
        bits = (exponent << 23) | int((m * 2.0 - 1.0) * 8388608.0)
    bits = bits + 0x7FFF + ((bits >> 16) & 1)  # round to nearest, ties to even
    return np.uint16(sign | ((bits >> 16) & 0x7FFF))


def bf16_to_f32(h):
    """The float32 value of bf16 pattern `h` (exact)."""
    h = int(h)
    sign = -1.0 if h & 0x8000 else 1.0
    exponent = (h >> 7) & 0xFF
    mantissa = h & 0x7F
    if exponent == 0xFF:
        return np.float32(sign * math.inf if mantissa == 0 else math.nan)
    if exponent == 0:
        return np.float32(sign * math.ldexp(mantissa, -133))
    return np.float32(sign * math.ldexp(128 + mantissa, exponent - 134))


SCALAR_FUNCTIONS = (f32_to_bf16, bf16_to_f32)

# CPU kernels: the two conversions through the f32 bit pattern (numba views scalars on
# the CPU). Round to nearest, ties to even, NaN as 0x7FC0: the arithmetic bodies above,
# bit for bit (tests/test_kernels_rng.py), so CPU and CUDA store the same bf16 values.
_CPU_TO_BF16 = """\
b = np.float32(x).view(np.uint32)
if x != x:
    return np.uint16(0x7FC0)
return np.uint16((b + np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1)))
                 >> np.uint32(16))"""
_CPU_TO_F32 = "return np.uint32(np.uint32(x) << np.uint32(16)).view(np.float32)"
CPU_BODIES = {"f32_to_bf16": _CPU_TO_BF16, "bf16_to_f32": _CPU_TO_F32}


# numpy (vectorised, through bit views): the oracle the scalar bodies are tested against

def to_bf16(x: np.ndarray) -> np.ndarray:
    """float array -> uint16 bf16 patterns, round to nearest even."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    out = rounded.astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    return np.where(nan, np.uint16(0x7FC0), out)


def from_bf16(h: np.ndarray) -> np.ndarray:
    """uint16 bf16 patterns -> float32 values."""
    return (np.asarray(h, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
