"""Counter-based random numbers: `uniform(seed, stream, index)` is a pure function of
three integers (a splitmix64-style hash), so numpy here and numba (`kernels/rng.py`,
njit and CUDA) produce the same bits for the same element, in any order."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

# splitmix64 constants; every constant is a np.uint64 because numba types
# uint64 (op) int64 as float64, which would silently destroy the bits
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S40 = np.uint64(40)
_S32 = np.uint64(32)
_S8 = np.uint64(8)
_LOW32 = np.uint64(0xFFFFFFFF)
_INV24 = np.float32(1.0 / 16777216.0)  # 2**-24: 24-bit integers map exactly into [0, 1)
_TWO_PI = 6.283185307179586


def rng_bits(seed, stream, index):
    """64 well-mixed bits for (seed, stream, index); scalars (jit) or uint64 arrays (numpy)."""
    h = np.uint64(seed) * _GOLDEN
    for word in (np.uint64(stream), np.uint64(index)):
        # absorb one word, then the splitmix64 finalizer
        h = (h ^ word) + _GOLDEN
        h = (h ^ (h >> _S30)) * _M1
        h = (h ^ (h >> _S27)) * _M2
        h = h ^ (h >> _S31)
    return h


def rng_uniform(seed, stream, index):
    """float32 in [0, 1): the top 24 bits of the hash, scaled exactly."""
    return np.float32(rng_bits(seed, stream, index) >> _S40) * _INV24


def rng_normal(seed, stream, index):
    """float32 standard normal by Box-Muller over the two 32-bit halves of one hash.

    Computed in float64 and rounded, so launchers agree to the last f32 bit except
    where their libm `log`/`cos` differ in the last f64 bit (vanishingly rare)."""
    bits = rng_bits(seed, stream, index)
    # u1 in (0, 1] so the log is finite; u2 in [0, 1)
    u1 = (np.float64((bits >> _S32) >> _S8) + 1.0) * (1.0 / 16777216.0)
    u2 = np.float64((bits & _LOW32) >> _S8) * (1.0 / 16777216.0)
    return np.float32(np.sqrt(-2.0 * np.log(u1)) * np.cos(_TWO_PI * u2))


# The scalar functions above, in dependency order: codegen copies their source
# into every generated kernel module so it stays self-contained and cacheable.
SCALAR_FUNCTIONS = (rng_bits, rng_uniform, rng_normal)


# ---------------------------------------------------------------------------
# numpy: vectorised over index arrays (the op references and initialisers)


def _as_u64(seed: int, stream: int, index: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # broadcast to >=1-d uint64 arrays: array arithmetic wraps silently, while
    # numpy scalar arithmetic would warn on the intended overflow
    arrays = np.broadcast_arrays(np.atleast_1d(np.asarray(seed, dtype=np.uint64)),
                                 np.atleast_1d(np.asarray(stream, dtype=np.uint64)),
                                 np.atleast_1d(np.asarray(index).astype(np.uint64)))
    return arrays[0], arrays[1], arrays[2]


def _vectorised(fn):
    def apply(seed: int, stream: int, index: Any) -> np.ndarray:
        shape = np.shape(index)
        with np.errstate(over="ignore"):
            out = fn(*_as_u64(seed, stream, index))
        out = np.asarray(out).reshape(shape)
        return out[()] if shape == () else out  # a numpy scalar for scalar input
    apply.__name__ = fn.__name__.removeprefix("rng_")
    apply.__doc__ = fn.__doc__
    return apply


uniform = _vectorised(rng_uniform)
normal = _vectorised(rng_normal)
bits = _vectorised(rng_bits)


def uniform_array(seed: int, stream: int, shape: tuple[int, ...]) -> np.ndarray:
    """A float32 array of `shape` whose element i (row-major) is uniform(seed, stream, i)."""
    return uniform(seed, stream, np.arange(math.prod(shape), dtype=np.uint64)).reshape(shape)


def normal_array(seed: int, stream: int, shape: tuple[int, ...]) -> np.ndarray:
    """A float32 array of `shape` whose element i (row-major) is normal(seed, stream, i)."""
    return normal(seed, stream, np.arange(math.prod(shape), dtype=np.uint64)).reshape(shape)
