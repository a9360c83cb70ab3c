"""Shared by the generated kernel tests (CPU and CUDA simulator): one graph
holding an op's cases side by side, and the comparison of a device's outputs
with the reference's (NaN where NaN, the same infinities, finite values close)."""

from __future__ import annotations

import numpy as np

from sexpgpu.ir.graph import Graph
from sexpgpu.ir.ops.registry import get_op

NUMPY = {"f32": np.float32, "i64": np.int64, "bool": np.bool_}


def ir_dtype(array: np.ndarray) -> str:
    if array.dtype == np.bool_:
        return "bool"
    if np.issubdtype(array.dtype, np.integer):
        return "i64"
    return "f32"


def case_graph(name: str, cases: list) -> tuple[Graph, dict[str, np.ndarray]]:
    """One graph holding every case (input arrays, attrs) of op `name` side by side;
    a cast to f16 is left out (no kernel storage: E-KERNEL-DTYPE)."""
    g = Graph(f"op-{name}")
    inputs: dict[str, np.ndarray] = {}
    opdef = get_op(name)
    for k, (arrays, attrs) in enumerate(cases):
        if name == "cast" and attrs.get("dtype") == "f16":
            continue
        values = []
        for j, a in enumerate(arrays):
            a = np.asarray(a)
            dtype = ir_dtype(a)
            key = f"s{k}_x{j}"
            inputs[key] = a.astype(NUMPY[dtype])
            values.append(g.input(key, a.shape, dtype))
        out = opdef.apply_case(g, values, attrs)
        for j, v in enumerate(out if isinstance(out, tuple) else (out,)):
            g.output(f"s{k}_y{j}", v)
    return g, inputs


def assert_same_values(have: np.ndarray, want: np.ndarray, key: str,
                       rtol: float = 2e-6, atol: float = 2e-6) -> None:
    """Integers and booleans equal; floats NaN at the same places, the same
    infinities, finite values within rtol/atol."""
    assert have.shape == want.shape, key
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(have, want, err_msg=key)
        return
    have, want = have.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(have), nan, err_msg=f"{key}: NaN positions")
    inf = np.isinf(want) | np.isinf(have)
    np.testing.assert_array_equal(have[inf], want[inf], err_msg=f"{key}: infinities")
    finite = ~nan & ~inf
    np.testing.assert_allclose(have[finite], want[finite], rtol=rtol, atol=atol, err_msg=key)
