"""Parameter initialisers: functions of (seed, stream, shape) -> float32 array,
drawn from the counter-based generator so every device starts identically."""

from __future__ import annotations

from collections.abc import Callable
from math import prod, sqrt

from sexpgpu.lazynumpy import np

Init = Callable[[int, int, tuple[int, ...]], "np.ndarray"]


def _rng():
    # the generator imports numpy at import: loaded when a value is first drawn
    from sexpgpu.ir import rng
    return rng


def _fan_in(shape: tuple[int, ...]) -> int:
    """Inputs per output: all but the last axis of a (in, out) matrix; for conv
    weights (O, C, *K) everything but the first axis."""
    if len(shape) <= 1:
        return max(1, prod(shape))
    if len(shape) == 2:
        return shape[0]
    return prod(shape[1:])


def normal(std: float = 0.02) -> Init:
    def init(seed: int, stream: int, shape: tuple[int, ...]) -> np.ndarray:
        return (_rng().normal_array(seed, stream, shape) * np.float32(std)).astype(np.float32)
    return init


def uniform(bound: float) -> Init:
    """Uniform in [-bound, bound)."""
    def init(seed: int, stream: int, shape: tuple[int, ...]) -> np.ndarray:
        u = _rng().uniform_array(seed, stream, shape)
        return ((u * 2 - 1) * np.float32(bound)).astype(np.float32)
    return init


def kaiming(gain: float = sqrt(2.0)) -> Init:
    """Normal with std gain / sqrt(fan_in) (He initialisation for relu layers)."""
    def init(seed: int, stream: int, shape: tuple[int, ...]) -> np.ndarray:
        return normal(gain / sqrt(_fan_in(shape)))(seed, stream, shape)
    return init


def xavier() -> Init:
    """Uniform with bound sqrt(6 / (fan_in + fan_out)) (Glorot)."""
    def init(seed: int, stream: int, shape: tuple[int, ...]) -> np.ndarray:
        fan_out = shape[-1] if len(shape) == 2 else (shape[0] if shape else 1)
        return uniform(sqrt(6.0 / (_fan_in(shape) + fan_out)))(seed, stream, shape)
    return init


def constant(value: float) -> Init:
    def init(seed: int, stream: int, shape: tuple[int, ...]) -> np.ndarray:
        return np.full(shape, value, dtype=np.float32)
    return init


zeros = constant(0.0)
ones = constant(1.0)
