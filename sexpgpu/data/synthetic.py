"""Synthetic tasks for tests and smoke runs, generated from a seed (no files)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sexpgpu.data.dataset import ArrayData
from sexpgpu.data.errors import data_error


def linear_regression(n: int, dim: int, task: np.random.Generator, rng: np.random.Generator,
                      noise: float) -> dict:
    """y = x @ w + b + noise, one output; w comes from the task seed."""
    w = task.standard_normal(dim).astype(np.float32)  # (D,)
    x = rng.standard_normal((n, dim)).astype(np.float32)  # (N, D)
    y = x @ w + 0.5 + noise * rng.standard_normal(n).astype(np.float32)  # (N,)
    return {"x": x, "y": y.astype(np.float32)}


def parity(n: int, dim: int, task: np.random.Generator, rng: np.random.Generator,
           noise: float) -> dict:
    """Bit strings (as 0/1 floats) labelled by the parity of their ones."""
    bits = rng.integers(0, 2, size=(n, dim))  # (N, D)
    return {"x": bits.astype(np.float32), "y": (bits.sum(axis=1) % 2).astype(np.int64)}


def classes(n: int, dim: int, task: np.random.Generator, rng: np.random.Generator,
            noise: float, k: int = 4) -> dict:
    """Gaussian blobs around k centres (from the task seed): a softmax-regression task."""
    centres = 2.0 * task.standard_normal((k, dim))  # (K, D)
    y = rng.integers(0, k, size=n)  # (N,)
    x = centres[y] + (1.0 + noise) * rng.standard_normal((n, dim))  # (N, D)
    return {"x": x.astype(np.float32), "y": y.astype(np.int64)}


SPLITS = ("train", "test", "val")
TASKS: dict[str, Callable[..., dict]] = {
    "linear-regression": linear_regression,
    "parity": parity,
    "classes": classes,
}


def synthetic_source(options: dict[str, Any]) -> ArrayData:
    """`(synthetic :task parity :n 1000 :dim 8 :seed 0 :split :train :noise 0.1 [:classes 4])`.

    The seed fixes the task (weights, centres); each split draws its own samples of it.
    """
    task = str(options.get("task", ""))
    if task not in TASKS:
        raise data_error(
            None, f"unknown synthetic task {task!r}", expected=", ".join(TASKS),
        )
    split = str(options.get("split", "train"))
    if split not in SPLITS:
        raise data_error(None, f"unknown synthetic split {split!r}", expected=", ".join(SPLITS))
    seed = int(options.get("seed", 0))
    task_rng = np.random.default_rng([seed, 0])
    rng = np.random.default_rng([seed, 1 + SPLITS.index(split)])
    extra = {"k": int(options["classes"])} if task == "classes" and "classes" in options else {}
    n, dim = int(options.get("n", 1000)), int(options.get("dim", 8))
    arrays = TASKS[task](n, dim, task_rng, rng, float(options.get("noise", 0.1)), **extra)
    return ArrayData(arrays, origin=f"synthetic {task}")
