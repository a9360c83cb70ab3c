"""The typed IR: values with concrete shapes and dtypes, nodes that remember the user's
span, one `OpDef` per op (`ops/`). Imports flow one way: types, rng -> shapes ->
ops.opdef -> build -> the op families -> ops.registry -> printer -> graph -> reference."""

from sexpgpu.ir.graph import Graph, Node, Value
from sexpgpu.ir.types import DTYPES, TensorType

__all__ = ["DTYPES", "Graph", "Node", "TensorType", "Value"]
