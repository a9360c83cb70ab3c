"""What one op is: an `OpDef` holds its shape/dtype rule, numpy reference, VJP
(written as more IR), kernel hints (kind, elementwise body), doc and test samples.
The op families build them; `ops/registry.py` gathers them by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sexpgpu.diagnostics import error
from sexpgpu.ir.shapes import ShapeRuleError
from sexpgpu.ir.types import TensorType

if TYPE_CHECKING:  # annotations only: graph.py imports the ops at run time
    from sexpgpu.ir.graph import Graph, Node, Value

# infer(input types, attrs) -> output type(s)
InferFn = Callable[[list[TensorType], dict[str, Any]], "TensorType | tuple[TensorType, ...]"]
# vjp(graph, node, output cotangents) -> one cotangent (or None) per input
VjpFn = Callable[["Graph", "Node", list["Value | None"]], list["Value | None"]]


@dataclass
class OpDef:
    name: str
    infer: InferFn
    reference: Callable[..., Any]           # numpy oracle: reference(*arrays, **attrs)
    vjp: VjpFn | None = None                # None: not differentiable (outputs ints/bools)
    kind: str = "opaque"                    # "elementwise", "reduce", "opaque", ...
    scalar: str | None = None               # elementwise body, e.g. "max(x0, 0.0)"
    doc: str = ""
    # samples(rng) -> list of (input arrays, attrs): the cases the generated
    # forward (kernels vs reference) and VJP (finite differences) tests run
    samples: Callable[[Any], list[tuple[list[Any], dict[str, Any]]]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def check(self, node: Node) -> tuple[TensorType, ...]:
        try:
            out = self.infer([v.type for v in node.inputs], node.attrs)
        except ShapeRuleError as exc:
            raise error(exc.code, f"{self.name}: {exc.message}", node.span,
                        expected=exc.expected, actual=exc.actual, fix=exc.fix,
                        notes=list(node.notes)) from None
        return out if isinstance(out, tuple) else (out,)
