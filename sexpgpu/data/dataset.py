"""The two shapes a source hands a loader: named arrays of equal length, or a token stream."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sexpgpu.data.errors import data_error

NUMERIC_KINDS = "biuf"  # bool, signed, unsigned, float: what a batch field can hold


@dataclass
class ArrayData:
    """Named arrays sharing their first dimension (one row per sample)."""

    arrays: dict[str, np.ndarray]
    origin: str = ""  # the path or source name, for diagnostics

    def __post_init__(self) -> None:
        if not self.arrays:
            raise data_error(self.origin, "the source has no arrays")
        lengths = {name: (a.shape[0] if a.ndim else None) for name, a in self.arrays.items()}
        if len(set(lengths.values())) != 1 or None in lengths.values():
            listing = ", ".join(f"{k}: {v}" for k, v in lengths.items())
            raise data_error(
                self.origin, "arrays do not share their first dimension",
                expected="every array with the same number of rows", actual=listing,
            )
        if next(iter(lengths.values())) == 0:
            raise data_error(self.origin, "the arrays have no rows", expected="at least one sample")
        for name, a in self.arrays.items():
            if a.dtype.kind not in NUMERIC_KINDS:
                raise data_error(
                    self.origin, f"array {name} holds {a.dtype}, not numbers",
                    expected="bool, integer or float arrays", actual=f"{name}: {a.dtype}",
                    fix="convert it with numpy (e.g. labels to int64) and save it again",
                )

    def __len__(self) -> int:
        return next(iter(self.arrays.values())).shape[0]

    def rows(self, index: np.ndarray) -> dict[str, np.ndarray]:
        return {name: a[index] for name, a in self.arrays.items()}


@dataclass
class TokenData:
    """A flat integer stream read in windows of `context` + 1 (x, and y shifted by one)."""

    tokens: np.ndarray  # (N,) integers, often a np.memmap
    context: int
    vocab_size: int | None = None
    origin: str = ""
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.tokens.ndim != 1 or not np.issubdtype(self.tokens.dtype, np.integer):
            raise data_error(
                self.origin, "a token stream must be a flat integer array",
                actual=f"{self.tokens.dtype} {tuple(self.tokens.shape)}",
            )
        if self.context < 1:
            raise data_error(self.origin, f"context must be at least 1, got {self.context}")
        if len(self.tokens) < self.context + 1:
            raise data_error(
                self.origin, "too few tokens for one window",
                expected=f"at least context + 1 = {self.context + 1} tokens",
                actual=f"{len(self.tokens)} tokens",
            )

    def num_windows(self) -> int:
        """Non-overlapping windows (used by the sequential and shuffled orders)."""
        return (len(self.tokens) - 1) // self.context

    def num_starts(self) -> int:
        """Possible starts of a random window (nanoGPT: len(data) - block_size)."""
        return len(self.tokens) - self.context

    def windows(self, starts: np.ndarray) -> dict[str, np.ndarray]:
        offsets = np.arange(self.context + 1)
        index = starts[:, None] + offsets[None, :]  # (B, T+1)
        chunk = np.asarray(self.tokens[index], dtype=np.int64)  # (B, T+1)
        return {"x": chunk[:, :-1], "y": chunk[:, 1:]}
