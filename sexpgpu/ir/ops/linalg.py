"""Batched matmul with numpy broadcasting of the batch axes (rank >= 2 each;
the 1-D cases are unsqueezes in `sexpgpu.ir.build.matmul`), and einsum, lowered
to sums, permutes, reshapes and batched matmuls."""

from __future__ import annotations

import math

from sexpgpu.ir import build
from sexpgpu.ir.build import transpose, unbroadcast
from sexpgpu.ir.ops._define import composite
from sexpgpu.ir.ops._sampling import values
from sexpgpu.ir.ops.opdef import Arg, OpDef
from sexpgpu.ir.shapes import ShapeRuleError, broadcast, fmt, require_float, same_dtype
from sexpgpu.ir.types import TensorType
from sexpgpu.lazynumpy import np

# the ops this family defines, in order; ops/registry.py gathers every family's
OPS: list[OpDef] = []


def _matmul_infer(types: list[TensorType], attrs: dict) -> TensorType:
    a, b = types
    dtype = same_dtype(types, ("the left matrix", "the right matrix"))
    require_float(a, "matmul's arguments")
    for t, name in ((a, "left"), (b, "right")):
        if t.ndim < 2:
            raise ShapeRuleError(f"the {name} argument needs rank >= 2",
                                 expected="(..., m, k) @ (..., k, n)", actual=fmt(t.shape),
                                 fix="unsqueeze it (the Tensor API's @ does this for 1-D)")
    if a.shape[-1] != b.shape[-2]:
        k = a.shape[-1]
        raise ShapeRuleError("inner dimensions differ",
                             expected=f"(..., {k}) @ ({k}, ...)",
                             actual=f"{fmt(a.shape)} @ {fmt(b.shape)}",
                             fix=f"give the right argument {k} rows, or transpose one side")
    batch = broadcast(a.shape[:-2], b.shape[:-2], names=("left batch", "right batch"))
    return TensorType(batch + (a.shape[-2], b.shape[-1]), dtype)


def _matmul_vjp(g, node, cts):
    a, b = node.inputs
    ct = cts[0]                                                  # [..., m, n]
    da = g.apply("matmul", ct, transpose(g, b))                  # [..., m, k]
    db = g.apply("matmul", transpose(g, a), ct)                  # [..., k, n]
    return [unbroadcast(g, da, a.shape), unbroadcast(g, db, b.shape)]


def _matmul_samples(rng: np.random.Generator) -> list:
    pairs = (((3, 4), (4, 5)), ((2, 3, 4), (4, 1)), ((1, 3), (2, 3, 5)), ((2, 1, 2, 3), (3, 3, 2)),
             ((0, 4), (4, 2)), ((3, 0), (0, 2)))
    return [([values(rng, a), values(rng, b)], {}) for a, b in pairs]


OPS.append(OpDef("matmul", _matmul_infer, np.matmul, _matmul_vjp, kind="opaque",
                 samples=_matmul_samples, extra={"reorders_sums": True},
                 doc="(..., m, k) @ (..., k, n) -> (..., m, n), batch axes broadcast; "
                     "the front ends take numpy's 1-D sides too",
                 inputs=("a", "b"), lisp=("@", "matmul"), method="__matmul__",
                 function="matmul", integers="reject", build=build.matmul))


# -- einsum ---------------------------------------------------------------------------------

def _parse_einsum(subscripts: str, n: int) -> tuple[list[str], str]:
    """The operands' index letters and the output's ("ij,jk->ik"; without "->" the
    output is the letters used once, in alphabetical order, as numpy's)."""
    text = subscripts.replace(" ", "")
    if "..." in text:
        raise ShapeRuleError("einsum: `...` is not supported; name every axis",
                             actual=subscripts)
    lhs, arrow, out = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != n:
        raise ShapeRuleError("einsum: one term per operand", expected=f"{n} terms",
                             actual=subscripts)
    letters = "".join(terms)
    if not arrow:
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    for term in terms + [out]:
        if not term.isalpha() and term or len(set(term)) != len(term):
            raise ShapeRuleError("einsum: each term names its axes by distinct letters "
                                 "(no repeated index: no traces or diagonals)",
                                 actual=subscripts)
    if set(out) - set(letters):
        raise ShapeRuleError("einsum: the output names an index no operand has",
                             actual=subscripts)
    return terms, out


def _sum_out(g, x, term: str, keep: set[str]) -> tuple[object, str]:
    """Sum away the axes of `x` whose letters nothing later needs."""
    drop = tuple(i for i, c in enumerate(term) if c not in keep)
    if not drop:
        return x, term
    return g.apply("sum", x, axes=drop, keepdims=False), "".join(
        c for c in term if c in keep)


def _arrange(g, x, term: str, order: str):
    """`x` (axes named by `term`) with its axes in `order`."""
    if term == order:
        return x
    return g.apply("permute", x, perm=tuple(term.index(c) for c in order))


def _contract(g, a, ta: str, b, tb: str, keep: set[str]) -> tuple[object, str]:
    """One pairwise product as a batched matmul: shared letters kept are the batch,
    shared ones not kept are summed (the inner dimension), the rest are rows of a
    or columns of b."""
    a, ta = _sum_out(g, a, ta, keep | set(tb))
    b, tb = _sum_out(g, b, tb, keep | set(ta))
    batch = "".join(c for c in ta if c in tb and c in keep)
    inner = "".join(c for c in ta if c in tb and c not in keep)
    rows = "".join(c for c in ta if c not in tb)
    cols = "".join(c for c in tb if c not in ta)
    size = dict(zip(ta, a.shape)) | dict(zip(tb, b.shape))
    for c in set(ta) & set(tb):
        if a.shape[ta.index(c)] != b.shape[tb.index(c)]:
            raise ShapeRuleError(f"einsum: index {c} has two sizes",
                                 actual=f"{a.shape[ta.index(c)]} and {b.shape[tb.index(c)]}")

    def span(letters: str) -> int:
        return math.prod(size[c] for c in letters)

    am = g.apply("reshape", _arrange(g, a, ta, batch + rows + inner),
                 shape=(span(batch), span(rows), span(inner)))
    bm = g.apply("reshape", _arrange(g, b, tb, batch + inner + cols),
                 shape=(span(batch), span(inner), span(cols)))
    product = g.apply("matmul", am, bm)                           # (batch, rows, cols)
    term = batch + rows + cols
    return g.apply("reshape", product, shape=tuple(size[c] for c in term)), term


def einsum(g, *operands, subscripts: str):
    """numpy's einsum (named axes, no `...`, no repeated index in one term), as sums,
    permutes, reshapes and batched matmuls, contracting left to right."""
    terms, out = _parse_einsum(subscripts, len(operands))
    for x, term in zip(operands, terms):
        if len(term) != len(x.shape):
            raise ShapeRuleError(f"einsum: term {term!r} names {len(term)} axes",
                                 expected=f"a tensor of rank {len(term)}", actual=fmt(x.shape))
    acc, term = operands[0], terms[0]
    for k in range(1, len(operands)):
        later = set(out).union(*terms[k + 1:])
        acc, term = _contract(g, acc, term, operands[k], terms[k], later)
    acc, term = _sum_out(g, acc, term, set(out))
    return _arrange(g, acc, term, out)


def _einsum_samples(rng: np.random.Generator) -> list:
    return [([values(rng, (3, 4)), values(rng, (4, 5))], {"subscripts": "ij,jk->ik"}),
            ([values(rng, (2, 3, 4)), values(rng, (2, 4, 5))], {"subscripts": "bij,bjk->bik"}),
            ([values(rng, (2, 3, 4, 5)), values(rng, (2, 3, 6, 5))],
             {"subscripts": "bhqd,bhkd->bhqk"}),
            ([values(rng, (3, 4))], {"subscripts": "ij->ji"}),
            ([values(rng, (5,)), values(rng, (5,))], {"subscripts": "i,i->"}),
            ([values(rng, (3,)), values(rng, (4,))], {"subscripts": "i,j->ij"}),
            ([values(rng, (2, 3)), values(rng, (3, 4)), values(rng, (4, 2))],
             {"subscripts": "ij,jk,kl"}),
            ([values(rng, (3, 4, 2))], {"subscripts": "ijk->k"})]


composite(OPS, "einsum", einsum,
          lambda *xs, subscripts: np.einsum(subscripts, *xs),
          inputs=("operands:rest",), args=(Arg("subscripts", "string", positional=True),),
          method=None, function="einsum", integers="reject", samples=_einsum_samples,
          extra={"reorders_sums": True},
          doc="numpy's einsum on named axes (no `...`, no repeated index in a term): "
              "permutes, reshapes and batched matmuls")
