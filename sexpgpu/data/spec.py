"""What a `defloader` declares, as plain dataclasses: the contract writes them, the
loader reads them, and the RunPlan carries them to the runtime."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class StageSpec:
    """A curriculum stage: from step `start` on, the loader reads this instead.

    `source`/`options`/`batch` left as None keep the loader's own.
    """

    start: int
    name: str = ""
    source: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    batch: int | None = None


@dataclass
class LoaderSpec:
    """`(defloader NAME :source S :batch N :order O ...)`.

    source: a built-in source name (mnist1d, npz, npy, tokens, text, synthetic).
    options: the source's options (path, split, context, ...).
    batch: samples per training step (split evenly into microbatches).
    order: sequential | shuffle | random-windows.
    fields: batch field name -> source array name; empty keeps the source's names.
    stages: curriculum stages switched by step (see StageSpec).
    """

    name: str
    source: str
    options: dict[str, Any] = field(default_factory=dict)
    batch: int = 1
    order: str = "sequential"
    fields: dict[str, str] = field(default_factory=dict)
    stages: list[StageSpec] = field(default_factory=list)


@dataclass
class FieldBound:
    """A batch field's values must lie in low..high-1: the model uses it as `use` (a class
    of a one-hot over n, a row of an embedding table), built at `where` (file:line). The
    compiler derives these from the traced graphs; the loader checks the data."""

    low: int
    high: int
    use: str
    where: str = ""
