"""How a compiled step takes its inputs, on either launcher: one array per graph input,
converted to its storage dtype, and the diagnostic for a wrong one (E-RUN-INPUT)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sexpgpu.kernels.bf16 import to_bf16

from sexpgpu.diagnostics import define_code, error
from sexpgpu.ir.graph import Value

E_RUN_INPUT = define_code(
    "E-RUN-INPUT", "compiled graph given a wrong input",
    "`CompiledGraph.run` needs one numpy array per graph input, with the input's shape. "
    "An input the graph updates in place (a parameter or optimizer state) must already "
    "be a C-contiguous array of the storage dtype (float32, uint16 for bf16, int32, "
    "int64, bool), because the update is written into that very array.",
)


@dataclass
class _Input:
    value: Value
    dtype: np.dtype
    updated: bool


def _flat(x: Any, dtype: str, store: np.dtype) -> np.ndarray:
    """A read-only input as a flat array of its storage dtype (bf16 given as
    floats is rounded to nearest even; given as uint16 it is taken as patterns)."""
    x = np.asarray(x)
    if dtype == "bf16" and x.dtype != np.uint16:
        x = to_bf16(x)
    if x.ndim == 0:
        return x.astype(store).reshape(1)
    flat = np.ascontiguousarray(x, dtype=store).reshape(-1)
    # a read-only array (a memory-mapped token file) would be another numba signature,
    # compiled again at the first step after `warm` compiled the writable one
    return flat if flat.flags.writeable else flat.copy()


def given(inputs: dict[str, Any], v: Value) -> Any:
    """The array passed for input `v`, checked to be there and of its shape."""
    try:
        x = inputs[v.name]
    except KeyError:
        raise error(E_RUN_INPUT, f"no array for input {v.name!r}",
                    expected=f"{v.name}: {v.type}", actual="missing",
                    fix=f"pass inputs[{v.name!r}]") from None
    if tuple(np.shape(x)) != v.shape:
        raise error(E_RUN_INPUT, f"input {v.name!r} has the wrong shape",
                    expected=str(v.shape), actual=str(tuple(np.shape(x))))
    return x
