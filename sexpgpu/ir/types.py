"""Tensor types: a concrete shape and one of six dtypes."""

from __future__ import annotations

from math import prod

from sexpgpu.record import record

DTYPES = ("f32", "bf16", "f16", "i32", "i64", "bool")
FLOAT_DTYPES = frozenset({"f32", "bf16", "f16"})
INT_DTYPES = frozenset({"i32", "i64"})


@record(frozen=True, slots=True)
class TensorType:
    shape: tuple[int, ...]
    dtype: str

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return prod(self.shape)

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOAT_DTYPES

    def __str__(self) -> str:
        dims = " ".join(str(d) for d in self.shape)
        return f"{self.dtype}[{dims}]"
