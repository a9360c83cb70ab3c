"""The typed IR: values with concrete shapes and dtypes, nodes that remember
the user's source span, and one registry entry per op (see `ops/`)."""

from sexpgpu.ir.graph import Graph, Node, Value
from sexpgpu.ir.types import DTYPES, TensorType

__all__ = ["DTYPES", "Graph", "Node", "TensorType", "Value"]
