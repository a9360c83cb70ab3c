"""Random test inputs for op `samples`: shapes with broadcasting and edge sizes,
values kept inside each op's domain and away from kinks (for finite differences);
and each op's special-value variant of them (±0, subnormals, ±inf, NaN, values
near the f32 limit, negative and out-of-range indices) for the kernel tests."""

from __future__ import annotations

import math
from collections.abc import Callable

from sexpgpu.ir.shapes import ShapeRuleError
from sexpgpu.ir.types import TensorType
from sexpgpu.lazynumpy import np

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


# -- special values: each op's samples again, with the values that break kernels --

# float values of the special-value variants: signed zeros, f32 subnormals,
# infinities, NaN, values near the f32 limit, large ones, and a few ordinary ones
# so that rows and pairs mix them
SPECIAL_VALUES = (0.0, -0.0, 1e-40, -1e-40, math.inf, -math.inf, math.nan, 3e38, -3e38, 1e4, -1e4,
                  1.5, -0.5, 2.0)
# for ops whose float sums the kernels may reorder (extra["reorders_sums"]: lanes,
# BLAS blocking): values whose partial sums overflow or round differently in
# another order (3e38 + 3e38 - 3e38, 1e8 + 2.25) are left out, and one more case
# fills every float input with +3e38, which overflows in any order
ORDER_FREE_VALUES = (0.0, -0.0, 1e-40, -1e-40, math.inf, -math.inf, math.nan, 1.5, -0.5, 2.0)
# element i of float input j takes value (i * STRIDES[j] + phase) % K: strides
# prime to K, so pairs of inputs meet in many combinations
_STRIDES = (1, 3, 9, 11)

Case = tuple[list, dict]


def special_fill(shape: tuple[int, ...], pool: tuple[float, ...], j: int = 0,
                 phase: int = 0) -> np.ndarray:
    n = int(np.prod(shape))
    picks = (np.arange(n) * _STRIDES[j % len(_STRIDES)] + phase) % len(pool)
    return np.asarray(pool, dtype=np.float64)[picks].reshape(shape)


def negative_indices(idx: np.ndarray, size: int) -> np.ndarray:
    """The same positions, every other index written from the end (i - size)."""
    idx = np.asarray(idx)
    flip = (np.arange(idx.size).reshape(idx.shape) % 2 == 0) & (idx >= 0)
    return np.where(flip, idx - size, idx)


def _is_float(a) -> bool:
    return np.asarray(a).dtype.kind == "f"


def special_samples(opdef, rng: np.random.Generator) -> list[Case]:
    """The special-value variant of `opdef`'s samples (an op may give its own in
    extra["specials"]): every float input refilled from SPECIAL_VALUES (or
    ORDER_FREE_VALUES plus an all-3e38 case), every index input
    (extra["indices"]) with in-range negative indices, and for an elementwise op
    one more case per attrs meeting every special value with every other: a
    (K,) vector, or (K, 1) against (1, K)."""
    if "specials" in opdef.extra:
        return opdef.extra["specials"](rng)
    reorders = opdef.extra.get("reorders_sums", False)
    pool = opdef.extra.get("special_values", ORDER_FREE_VALUES if reorders else SPECIAL_VALUES)
    indices = opdef.extra.get("indices", lambda arrays, attrs: {})
    cases: list[Case] = []
    used = 0  # each sample continues through the pool where the last one stopped
    for arrays, attrs in opdef.samples(rng):
        bounds = indices(arrays, attrs)
        filled = []
        for j, a in enumerate(arrays):
            if j in bounds:
                filled.append(negative_indices(a, bounds[j]))
            elif _is_float(a):
                filled.append(special_fill(np.shape(a), pool, j, used))
            else:
                filled.append(np.asarray(a))
        cases.append((filled, attrs))
        used += max((np.size(a) for a in arrays if _is_float(a)), default=0)
        if reorders and any(_is_float(a) for a in arrays):
            cases.append(([np.full(np.shape(a), 3e38) if _is_float(a) else f
                           for a, f in zip(arrays, filled)], attrs))
    if opdef.kind == "elementwise":
        cases += _grids(opdef, rng, pool)
    return cases


def _grids(opdef, rng: np.random.Generator, pool: tuple[float, ...]) -> list[Case]:
    """Every special value against every other, once per distinct attrs."""
    out: list[Case] = []
    seen: list[dict] = []
    for arrays, attrs in opdef.samples(rng):
        floats = [j for j, a in enumerate(arrays) if _is_float(a)]
        if attrs in seen or not floats or len(floats) > 2:
            continue
        seen.append(attrs)
        k = len(pool)
        shapes = [(k,)] if len(floats) == 1 else [(k, 1), (1, k)]
        grid: list = []
        for j, a in enumerate(arrays):
            if j in floats:
                grid.append(special_fill(shapes[floats.index(j)], pool))
            elif np.asarray(a).dtype == np.bool_:
                grid.append(rng.random((k, k) if len(floats) == 2 else (k,)) < 0.5)
            else:
                grid.append(np.asarray(a))
        try:  # an attrs shape (broadcast_to) may not fit the grid
            opdef.infer([TensorType(np.shape(a), _dtype(a)) for a in grid], attrs)
        except ShapeRuleError:
            continue
        out.append((grid, attrs))
    return out


def _dtype(a) -> str:
    kind = np.asarray(a).dtype.kind
    return "bool" if kind == "b" else ("i64" if kind in "iu" else "f32")


def index_error_samples(opdef, rng: np.random.Generator) -> list[Case]:
    """Cases of an op with index inputs (extra["indices"]) holding one index just
    past each end of its axis (size, -size - 1): each must be E-INDEX."""
    indices = opdef.extra.get("indices")
    if indices is None:
        return []
    for arrays, attrs in opdef.samples(rng):
        bounds = indices(arrays, attrs)
        j = next((j for j in bounds if np.size(arrays[j]) > 0), None)
        if j is None:
            continue
        out = []
        for bad in (bounds[j], -bounds[j] - 1):
            idx = np.array(arrays[j], copy=True)
            idx.flat[-1] = bad
            out.append(([idx if i == j else a for i, a in enumerate(arrays)], attrs))
        return out
    return []


def sprinkled(samples: Callable) -> Callable:
    """Special-value cases of a fused op: its samples with a few elements replaced by
    special values, every one of ORDER_FREE_VALUES somewhere (the kernels reorder
    sums: no value whose sums overflow in one order only)."""
    def cases(rng: np.random.Generator) -> list:
        out = []
        for k, (arrays, attrs) in enumerate(samples(rng)):
            arrays = [np.array(a, dtype=np.float64, copy=True) for a in arrays]
            for n, value in enumerate(ORDER_FREE_VALUES):
                a = arrays[(n + k) % len(arrays)]
                if a.size:
                    a.flat[(7 * n + 3 * k) % a.size] = value
            out.append((arrays, attrs))
        return out
    return cases


def one_float_dtype(*arrays) -> list:
    """A fused op's reference inputs in one float dtype: f32 as the kernels compute
    (f32 overflow and underflow where they have it), f64 in the interpreter's
    float64 mode."""
    dtype = np.result_type(np.float32, *(np.asarray(a).dtype for a in arrays))
    return [np.asarray(a, dtype) for a in arrays]
