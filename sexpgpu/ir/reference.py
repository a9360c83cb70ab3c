"""The reference interpreter: runs a graph node by node with each op's numpy reference.
It defines what every op means (every device is tested against it); float64 mode
(`dtype_override="f64"`) computes all floats in double for finite-difference checks."""

from __future__ import annotations

from typing import Any

from sexpgpu.ir.graph import Graph, Value, live_nodes
from sexpgpu.ir.ops.indexing import IndexRangeError, index_error
from sexpgpu.ir.ops.registry import get_op
from sexpgpu.lazynumpy import np

# how values of each dtype are held between ops: bf16 and f16 are computed in
# f32 (as the kernels do) and rounded to their precision after every op
HOLD = {"f32": "float32", "bf16": "float32", "f16": "float32",
        "i32": "int32", "i64": "int64", "bool": "bool"}
# the numpy dtype of arrays passed in and out for each IR dtype (named, not numpy's
# type objects, so that importing this module does not import numpy)
STORAGE = {"f32": "float32", "bf16": "float32", "f16": "float16",
           "i32": "int32", "i64": "int64", "bool": "bool"}


def round_bf16(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 precision (nearest, ties to even)."""
    # (ascontiguousarray makes a rank-0 array rank 1: keep the shape)
    bits = np.ascontiguousarray(x, dtype=np.float32).reshape(np.shape(x)).view(np.uint32)
    # NaN stays NaN (keep a quiet bit); finite values round on the low 16 bits
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1)))
    rounded &= np.uint32(0xFFFF0000)
    rounded = np.where(np.isnan(x), bits | np.uint32(0x00400000), rounded)
    return rounded.astype(np.uint32).view(np.float32)


def hold(array: Any, dtype: str, f64: bool = False) -> np.ndarray:
    """`array` as the interpreter holds a value of IR `dtype`."""
    if f64 and dtype in ("f32", "bf16", "f16"):
        return np.asarray(array, dtype=np.float64)
    out = np.asarray(array, dtype=HOLD[dtype])
    if dtype == "bf16":
        return round_bf16(out)
    if dtype == "f16":
        return out.astype(np.float16).astype(np.float32)
    return out


def run_reference(graph: Graph, inputs: dict[str, Any], dtype_override: str | None = None,
                  apply_updates: bool = True) -> dict[str, np.ndarray]:
    """Run `graph` on named input arrays; return its named outputs.

    Updates (`graph.update`) are written back into the caller's input arrays
    after every output is computed, as a compiled step does in place."""
    if dtype_override not in (None, "f64"):
        raise ValueError(f"dtype_override must be None or 'f64', not {dtype_override!r}")
    f64 = dtype_override == "f64"
    env: dict[int, np.ndarray] = {}
    for value in graph.inputs:
        if value.name not in inputs:
            raise KeyError(f"missing input {value.name!r} {value.type}")
        array = np.asarray(inputs[value.name])
        if array.shape != value.shape:
            raise ValueError(f"input {value.name!r}: shape {array.shape}, expected {value.shape}")
        env[value.id] = hold(array, value.dtype, f64)
    for node in live_nodes(graph):
        opdef = get_op(node.op)
        args = [env[v.id] for v in node.inputs]
        try:
            with np.errstate(all="ignore"):  # inf/nan propagate as on the devices
                result = opdef.reference(*args, **node.attrs)
        except IndexRangeError as exc:
            raise index_error(node, exc.value, exc.size) from None
        results = result if len(node.outputs) > 1 else (result,)
        for value, array in zip(node.outputs, results):
            array = hold(array, value.dtype, f64)
            if array.shape != value.shape:
                raise AssertionError(f"internal error: {node.op} reference gave shape "
                                     f"{array.shape}, its rule says {value.shape}")
            env[value.id] = array
    outputs = {name: store(env[v.id], v) for name, v in graph.outputs.items()}
    if apply_updates:
        new = {target: env[value.id] for target, value in graph.updates.items()}
        for target, array in new.items():
            np.copyto(inputs[target.name], array, casting="unsafe")
    return outputs


def store(array: np.ndarray, value: Value) -> np.ndarray:
    """An interpreter value as the caller receives it (f16 as float16)."""
    if array.dtype == np.float64:
        return array
    return array.astype(STORAGE[value.dtype], copy=False)
