"""Matmuls over an inner dimension of one are outer products: an RNN's input
projection of one feature (the MNIST-1D models' 40 steps of one value), or its
whole sequence's in one (T*B, 1) x (1, 4H) product. Lowered as sgemm calls they are
kernels of their own, written out and read back by the loop that adds the bias or
the hidden state's product; as elementwise products they join that loop (the
64-unit `nn:lstm`: a 0.2 ms product and a 0.37 ms bias add, one loop instead).

`x * w + 0` keeps the matmul's numbers exactly: its one product summed onto zero,
so a product of -0 is +0, as in numpy's and in the sgemm's sum."""

from __future__ import annotations

import numpy as np

from sexpgpu.ir import build
from sexpgpu.ir.graph import Graph, Node, Value
from sexpgpu.ir.rewrite import rewritten


def _outer(node: Node) -> bool:
    """An f32 matmul of matrices (or batches of them) over an inner dimension of 1
    whose operands broadcast elementwise to its result."""
    if node.op != "matmul" or len(node.inputs) != 2:
        return False
    a, b = node.inputs
    out = node.outputs[0]
    return (len(a.shape) >= 2 and len(b.shape) >= 2 and a.shape[-1] == 1
            and all(v.dtype == "f32" for v in (a, b, out))
            and np.broadcast_shapes(a.shape, b.shape) == out.shape)


def outer_products(graph: Graph) -> Graph:
    """`graph` with each such matmul an elementwise product (plus 0), or `graph`
    itself when it has none."""
    if not any(_outer(node) for node in graph.nodes):
        return graph

    def rule(g: Graph, node: Node, inputs: tuple[Value, ...]) -> tuple[Value, ...] | None:
        if not _outer(node):
            return None
        return (g.apply("add", g.apply("mul", *inputs), build.scalar(g, 0.0, "f32")),)

    return rewritten(graph, rule)
