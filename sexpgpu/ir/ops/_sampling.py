"""Random test inputs for op `samples`: shapes with broadcasting and edge sizes,
values kept inside each op's domain and away from kinks (for finite differences)."""

from __future__ import annotations

import numpy as np

# shapes every elementwise op is tried on: scalar, size 1, odd, empty, rank 3
UNARY_SHAPES = ((), (1,), (7,), (3, 5), (0, 4), (2, 3, 4))
# pairs that exercise numpy broadcasting (including a scalar and an empty axis)
BINARY_SHAPES = (((3, 4), (3, 4)), ((3, 1), (1, 4)), ((), (2, 3)), ((5,), (2, 3, 5)),
                 ((1, 1), (3,)), ((0, 3), (1, 3)))


def values(rng: np.random.Generator, shape: tuple[int, ...], domain: str = "real") -> np.ndarray:
    """float64 values for a domain: "real", "positive" (>= 0.5), "away" (|x| >= 0.2),
    "unit" (inside (-0.9, 0.9))."""
    x = rng.standard_normal(shape)
    if domain == "positive":
        return 0.5 + np.abs(x)
    if domain == "away":
        return np.sign(x + (x == 0)) * (0.2 + np.abs(x))
    if domain == "unit":
        return 0.9 * np.tanh(x)
    return x


def distinct(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Values at least 0.1 apart, in random order: no ties for max/min/argmax."""
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.1 - 0.05 * n).reshape(shape).astype(np.float64)


def ints(rng: np.random.Generator, shape: tuple[int, ...], high: int) -> np.ndarray:
    return rng.integers(0, high, size=shape).astype(np.int64)
