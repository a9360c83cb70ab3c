"""The two definers most entries go through: `unary` and `binary` elementwise ops
(shape/dtype rule, samples over the standard shapes, front-end names). Adding an
elementwise op is one call of one of these, in the family file it belongs to."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sexpgpu.ir.build import scalar, unbroadcast
from sexpgpu.ir.ops._sampling import BINARY_SHAPES, UNARY_SHAPES, values
from sexpgpu.ir.ops.opdef import Arg, OpDef
from sexpgpu.ir.shapes import broadcast, require_dtype, same_dtype
from sexpgpu.ir.types import FLOAT_DTYPES, INT_DTYPES, TensorType
from sexpgpu.lazynumpy import np

NUMERIC = FLOAT_DTYPES | INT_DTYPES
FLOAT = FLOAT_DTYPES
BOOL = frozenset({"bool"})
NAMES = ("the left argument", "the right argument")


def _integers(dtypes: frozenset[str]) -> str:
    """The front ends' integer rule follows the dtypes the rule takes."""
    return "reject" if not dtypes & (INT_DTYPES | BOOL) else "keep"


def unary(ops: list[OpDef], name: str, reference: Callable, body: str | Callable,
          vjp: Callable | None, dtypes: frozenset[str] = FLOAT, *, domain: str = "real",
          doc: str, lisp: tuple[str, ...] | None = None, method: str | None = "",
          args: tuple[Arg, ...] = (), cases: tuple[dict[str, Any], ...] = ({},),
          out_dtype: str | None = None, build: Callable | None = None,
          check: Callable[[dict[str, Any]], None] | None = None,
          extra: dict | None = None) -> OpDef:
    """Define a unary elementwise op: the input's shape, its dtype (or `out_dtype`).
    `lisp` defaults to the name with - for _, `method` to the name; `cases` are the
    attrs the samples cycle through; `build` a front-end wrapper (filling a default
    that depends on the dtype, say); `check(attrs)` raises ShapeRuleError for bad attrs."""

    def infer(types: list[TensorType], attrs: dict) -> TensorType:
        require_dtype(types[0], dtypes, f"{name}'s argument")
        if check is not None:
            check(attrs)
        return TensorType(types[0].shape, out_dtype or types[0].dtype)

    def samples(rng: np.random.Generator) -> list:
        out = []
        for k, shape in enumerate(UNARY_SHAPES):
            x = rng.random(shape) < 0.5 if dtypes == BOOL else values(rng, shape, domain)
            out.append(([x], dict(cases[k % len(cases)])))
        return out

    opdef = OpDef(name, infer, reference, vjp, kind="elementwise", scalar=body,
                  samples=samples, doc=doc, extra={"domain": domain, **(extra or {})},
                  inputs=("x",), args=args, integers=_integers(dtypes),
                  lisp=(name.replace("_", "-"),) if lisp is None else lisp,
                  method=name if method == "" else method, build=build)
    ops.append(opdef)
    return opdef


def binary(ops: list[OpDef], name: str, reference: Callable, body: str, vjp: Callable | None,
           dtypes: frozenset[str] = NUMERIC, *, out_dtype: str | None = None,
           domains: tuple[str, str] = ("real", "real"), doc: str,
           lisp: tuple[str, ...] | None = None, method: str | None = None,
           function: str | None = None, extra: dict | None = None) -> OpDef:
    """Define a broadcasting binary op; out dtype is the inputs' (or `out_dtype`)."""

    def infer(types: list[TensorType], attrs: dict) -> TensorType:
        dtype = same_dtype(types, NAMES)
        require_dtype(types[0], dtypes, f"{name}'s arguments")
        shape = broadcast(types[0].shape, types[1].shape, names=NAMES)
        return TensorType(shape, out_dtype or dtype)

    def samples(rng: np.random.Generator) -> list:
        if dtypes == BOOL:
            return [([rng.random(a) < 0.5, rng.random(b) < 0.5], {}) for a, b in BINARY_SHAPES]
        return [([values(rng, a, domains[0]), values(rng, b, domains[1])], {})
                for a, b in BINARY_SHAPES]

    opdef = OpDef(name, infer, reference, vjp, kind="elementwise", scalar=body,
                  samples=samples, doc=doc, extra=dict(extra or {}), inputs=("a", "b"),
                  integers=_integers(dtypes),
                  lisp=(name.replace("_", "-"),) if lisp is None else lisp,
                  method=method, function=function)
    ops.append(opdef)
    return opdef


def both(g, node, ct_a, ct_b) -> list:
    """Un-broadcast each input's cotangent back to that input's shape."""
    a, b = node.inputs
    return [None if ct_a is None else unbroadcast(g, ct_a, a.shape),
            None if ct_b is None else unbroadcast(g, ct_b, b.shape)]


def const(g, value: float, like) -> Any:
    """A scalar constant of `like`'s dtype."""
    return scalar(g, value, like.dtype)


def zero_vjp(g, node, cts) -> list:
    """Piecewise constant: the derivative is zero wherever it exists."""
    return [None] * len(node.inputs)


def composite(ops: list[OpDef], name: str, build: Callable, reference: Callable, *,
              samples: Callable, doc: str, inputs: tuple[str, ...] = ("x",),
              args: tuple[Arg, ...] = (), lisp: tuple[str, ...] | None = None,
              method: str | None = "", function: str | None = None,
              integers: str = "keep", returns: str = "value",
              extra: dict | None = None) -> OpDef:
    """Define a composition: `build(graph, *inputs, **args)` adds primitives (their
    rules, kernels and VJPs serve it); the generated tests hold it to `reference`."""
    opdef = OpDef(name, None, reference, None, kind="composite", build=build,
                  samples=samples, doc=doc, extra=dict(extra or {}), inputs=inputs,
                  args=args, integers=integers, returns=returns,
                  lisp=(name.replace("_", "-"),) if lisp is None else lisp,
                  method=name if method == "" else method, function=function)
    ops.append(opdef)
    return opdef


def vjp_of_form(g: Any, form: Callable[[], tuple], inputs: list, cts: list) -> list:
    """The cotangents of `inputs` through `form()`, a fused op's unfused form that it
    adds to g (its outputs in the fused op's order), walked back over the nodes it
    added with each primitive's own VJP: a fused op's second derivatives."""
    start = len(g.nodes)
    outs = form()
    grads: dict = {o: ct for o, ct in zip(outs, cts) if ct is not None}
    for inner in reversed(g.nodes[start:len(g.nodes)]):
        out_cts = [grads.get(o) for o in inner.outputs]
        rule = g.opdef(inner.op).vjp
        if rule is None or all(ct is None for ct in out_cts):  # a mask: no floats
            continue
        for x, ct in zip(inner.inputs, rule(g, inner, out_cts)):
            if ct is not None:
                grads[x] = ct if x not in grads else g.apply("add", grads[x], ct)
    return [grads.get(x) for x in inputs]
