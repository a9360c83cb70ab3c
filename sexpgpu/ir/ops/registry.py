"""The op registry: each op is one `OpDef` holding its shape/dtype rule, its
VJP (written as more IR), its numpy reference and its kernel body."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sexpgpu.diagnostics import define_code, error
from sexpgpu.ir.types import TensorType

if TYPE_CHECKING:
    from sexpgpu.ir.graph import Graph, Node, Value

E_SHAPE = define_code(
    "E-SHAPE", "tensor shapes do not fit",
    "An op received tensors whose shapes it cannot combine: broadcasting failed, "
    "matmul inner dimensions differ, a reshape changes the element count, an axis "
    "is out of range. The message names the op and which argument.",
)
E_DTYPE = define_code(
    "E-DTYPE", "tensor dtype not accepted",
    "An op received a dtype it does not take, e.g. a float tensor as gather indices "
    "or a boolean tensor to `exp`.",
)


class ShapeRuleError(Exception):
    """Raised by a shape rule; `OpDef.check` turns it into an E-SHAPE/E-DTYPE diagnostic."""

    def __init__(self, message: str, expected: str | None = None, actual: str | None = None,
                 fix: str | None = None, code: str = E_SHAPE):
        super().__init__(message)
        self.message, self.expected, self.actual, self.fix, self.code = (
            message, expected, actual, fix, code)


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
    lower: Callable[..., Any] | None = None  # kernel renderer for structured ops
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


OPS: dict[str, OpDef] = {}


def register(opdef: OpDef) -> OpDef:
    if opdef.name in OPS:
        raise ValueError(f"op {opdef.name} registered twice")
    OPS[opdef.name] = opdef
    return opdef


def get_op(name: str) -> OpDef:
    if not OPS:
        import sexpgpu.ir.ops  # noqa: F401 - registers every op family
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"no op named {name!r}") from None
