"""The matmuls a launcher must get right, in one graph: both tiled and handed to a
library (cuBLAS), each a different layout of operands in memory. Shared by the CUDA
simulator's kernel tests and the cuBLAS call emulation."""

from __future__ import annotations

import numpy as np

from sexpgpu.ir.graph import Graph

SHAPES = {"a": (20, 18), "b": (18, 17), "xb": (2, 3, 4, 5), "w": (5, 6), "wt": (6, 5),
          "yb": (3, 6, 10), "gb": (2, 3, 4, 6), "qkv": (2, 5, 12), "row": (1, 18)}


def matmul_graph(seed: int = 0) -> tuple[Graph, dict[str, np.ndarray]]:
    """The graph and standard-normal f32 inputs for it."""
    g = Graph("gemm")
    a, b = g.input("a", SHAPES["a"]), g.input("b", SHAPES["b"])
    g.output("ab", g.apply("matmul", a, b))                    # 2 x 2 tiles, 2 k tiles
    g.output("btat", g.apply("matmul", _t(g, b, (1, 0)), _t(g, a, (1, 0))))  # both transposed
    xb, w = g.input("xb", SHAPES["xb"]), g.input("w", SHAPES["w"])
    g.output("shared", g.apply("matmul", xb, w))                # a weight shared by batch
    g.output("shared_t", g.apply("matmul", xb, _t(g, g.input("wt", SHAPES["wt"]), (1, 0))))
    # batch broadcast over the first axis; the right operand a transposed slice
    yb = g.input("yb", SHAPES["yb"])
    g.output("batched", g.apply("matmul", xb, _t(g, _last_axis(g, yb, 2, 7), (0, 2, 1))))
    # a weight gradient: sum over the batch of xb^T g, one product over stacked rows
    gb = g.input("gb", SHAPES["gb"])
    g.output("wgrad", g.apply("sum", g.apply("matmul", _t(g, xb, (0, 1, 3, 2)), gb),
                              axes=(0, 1)))
    # attention heads: slices of one projection split and permuted, read in place
    qkv = g.input("qkv", SHAPES["qkv"])
    q, k = (_t(g, g.apply("reshape", _last_axis(g, qkv, lo, lo + 4), shape=(2, 5, 2, 2)),
               (0, 2, 1, 3)) for lo in (0, 4))
    g.output("scores", g.apply("matmul", q, _t(g, k, (0, 1, 3, 2))))
    g.output("vec", g.apply("matmul", g.input("row", SHAPES["row"]), b))  # one row
    r = np.random.default_rng(seed)
    return g, {k: r.standard_normal(s).astype(np.float32) for k, s in SHAPES.items()}


def _t(g: Graph, x, perm: tuple[int, ...]):
    return g.apply("permute", x, perm=perm)


def _last_axis(g: Graph, x, start: int, stop: int):
    return g.apply("slice", x, starts=(None, None, start), stops=(None, None, stop),
                   steps=(None, None, None))
