"""What one op is: an `OpDef` holds everything about it in one place: its shape/dtype
rule, numpy reference, VJP (written as more IR), kernel hints (kind, elementwise body;
structured ops' renderers are keyed by name in kernels/structured.py), doc, test
samples, and how the front ends call it (Lisp names, Tensor method, arguments, how
integer inputs are treated). The op families build them; `ops/registry.py` gathers
them, and the Lisp builtins, the Tensor methods and the docs tables are generated
from them. A composition (`kind="composite"`) has no kernel and no VJP of its own:
`build` expands it into primitives when it is applied."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sexpgpu.diagnostics import error
from sexpgpu.ir.shapes import ShapeRuleError
from sexpgpu.ir.types import TensorType
from sexpgpu.record import factory, record

if TYPE_CHECKING:  # annotations only: graph.py imports the ops at run time
    from sexpgpu.ir.graph import Graph, Node, Value

# infer(input types, attrs) -> output type(s)
InferFn = Callable[[list[TensorType], dict[str, Any]], "TensorType | tuple[TensorType, ...]"]
# vjp(graph, node, output cotangents) -> one cotangent (or None) per input
VjpFn = Callable[["Graph", "Node", list["Value | None"]], list["Value | None"]]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()  # an Arg with no default must be given

# how the front ends take integer and bool tensors (docs/tensors.md, "integers")
INTEGER_RULES = {
    "keep": "integers (and bools, where the rule allows) are used as they are",
    "float": "integers and bools are cast to f32 first (a mean of ids is a fraction)",
    "reject": "float-only: an integer tensor is E-DTYPE (cast it first); "
              "a plain number is read as a float",
    "count": "bools are counted as i64; integers are used as they are",
}

# the roles of tensor inputs (`OpDef.inputs`, written "name" or "name:role", a
# trailing "?" when nil/None may be given instead)
INPUT_ROLES = {
    "value": "a tensor or a number; numbers take the dtype of the other values",
    "bool": "a boolean tensor (a mask or condition)",
    "index": "an integer tensor of indices",
    "rng": "the step's random seed: supplied by the tracer in Lisp, given in Python",
    "list": "a list of tensors (a Lisp list, a Python sequence)",
    "rest": "every remaining argument, each a tensor (after the positional arguments)",
}

# how each kind of non-tensor argument is read (ir/call.py normalises the value)
ARG_KINDS = {
    "int": "an integer",
    "int?": "an integer, or nil for none",
    "ints": "an integer or a list of integers",
    "ints?": "an integer, a list of integers, or nil for none",
    "sizes": "an integer (one size for every piece) or a list of sizes",
    "shape": "a list of sizes",
    "newshape": "a list of sizes, one of which may be -1 (inferred)",
    "axis": "an axis (negative counts from the end)",
    "axes": "an axis, a list of axes, or nil for all",
    "axis?": "an axis, or nil for all (flattened)",
    "flag": "true or false",
    "number": "a number",
    "number?": "a number, or nil for none",
    "numbers": "a list of numbers",
    "order": "a number, or inf / -inf (Lisp :inf, :-inf)",
    "dtype": "a dtype keyword (:f32 :bf16 :f16 :i32 :i64 :bool)",
    "choice": "one of the listed keywords",
    "string": "a string",
    "stream": "the random stream: a new one per call in Lisp",
}


@record(frozen=True)
class Arg:
    """A non-tensor argument as the front ends take it: `(op x :lisp-key v)` in Lisp,
    `x.method(py_key=v)` in Python. For a primitive it is the attr `name`; for a
    composition, `build`'s keyword parameter `name`."""

    name: str
    kind: str                       # one of ARG_KINDS
    default: Any = REQUIRED
    lisp: str | None = None         # the Lisp keyword (default: name with - for _)
    py: str | None = None           # the Python keyword (default: name)
    positional: bool = False        # Lisp: given after the tensors, without a keyword
    choices: tuple[str, ...] = ()   # kind "choice"
    varargs: bool = False           # Python: the remaining positional arguments, as a list

    @property
    def lisp_key(self) -> str:
        return self.lisp or self.name.replace("_", "-")

    @property
    def py_key(self) -> str:
        return self.py or self.name

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@record(frozen=True)
class Input:
    """A tensor input as the front ends take it (parsed from "name:role?")."""

    name: str
    role: str = "value"
    optional: bool = False

    @classmethod
    def parse(cls, text: str) -> Input:
        optional = text.endswith("?")
        name, _, role = text.rstrip("?").partition(":")
        if (role or "value") not in INPUT_ROLES:
            raise ValueError(f"unknown input role {role!r} in {text!r}")
        return cls(name, role or "value", optional)


# (op name, each input's shape and dtype, each attr's name, type and value) -> the
# output types: OpDef.check's answers
_CHECKED: dict[tuple[Any, ...], tuple[TensorType, ...]] = {}


@record
class OpDef:
    name: str
    infer: InferFn | None
    reference: Callable[..., Any]           # numpy oracle: reference(*arrays, **attrs)
    vjp: VjpFn | None = None                # None: not differentiable (outputs ints/bools)
    kind: str = "opaque"                    # "elementwise", "reduce", "view", "opaque", "composite"
    # elementwise body over x0, x1, ..., e.g. "max(x0, 0.0)", or a function of the
    # node's attrs returning one (an attr selects the formula: gelu's approximate)
    scalar: str | Callable[[dict[str, Any]], str] | None = None
    doc: str = ""
    # samples(rng) -> list of (input arrays, attrs): the cases the generated
    # forward (kernels vs reference) and VJP (finite differences) tests run
    samples: Callable[[Any], list[tuple[list[Any], dict[str, Any]]]] | None = None
    extra: dict[str, Any] = factory(dict)
    # -- the front ends: Lisp builtins, Tensor methods and docs are generated from these
    inputs: tuple[str, ...] = ("x",)        # tensor inputs, "name" or "name:role?"
    args: tuple[Arg, ...] = ()              # the non-tensor arguments, in order
    lisp: tuple[str, ...] = ()              # Lisp names (docs/tensor-builtins.md)
    method: str | None = None               # Tensor method (or operator) name
    function: str | None = None             # sexpgpu.autodiff function name
    integers: str = "keep"                  # how integer inputs are taken: INTEGER_RULES
    # front ends call build(graph, *inputs, **args) instead of graph.apply: a
    # composition's expansion, or a primitive's wrapper taking the same arguments
    build: Callable[..., Any] | None = None
    returns: str = "value"                  # "value", "values" (several), "list"
    # an op with no front-end name says which ops build it (their use or gradient)
    reached: tuple[str, ...] = ()
    train_only: bool = False                # Lisp: the identity outside training (dropout)

    def __post_init__(self) -> None:
        if self.integers not in INTEGER_RULES:
            raise ValueError(f"{self.name}: integers must be one of {sorted(INTEGER_RULES)}")
        for arg in self.args:
            if arg.kind not in ARG_KINDS:
                raise ValueError(f"{self.name}: unknown argument kind {arg.kind!r}")
        self.tensor_inputs = tuple(Input.parse(t) for t in self.inputs)
        # whether an input is a list of tensors, spread into the node's inputs (concat)
        self.spreads = any(t.role in ("list", "rest") for t in self.tensor_inputs)

    @property
    def exposed(self) -> bool:
        return bool(self.lisp or self.method or self.function)

    def apply_case(self, g: Graph, values: list[Value], attrs: dict[str, Any]) -> Any:
        """Apply the op to a test case's flat input values: a composition's list
        input takes the values the other inputs leave (a primitive takes them all)."""
        spread = [k for k, t in enumerate(self.tensor_inputs) if t.role in ("list", "rest")]
        if self.kind != "composite" or not spread:
            return g.apply(self.name, *values, **attrs)
        k = spread[0]
        after = len(self.tensor_inputs) - k - 1
        middle = list(values[k:len(values) - after])
        if self.tensor_inputs[k].role == "rest":
            return g.apply(self.name, *values, **attrs)
        return g.apply(self.name, *values[:k], middle, *values[len(values) - after:], **attrs)

    def body(self, attrs: dict[str, Any]) -> str | None:
        """The elementwise body for a node with these attrs."""
        return self.scalar(attrs) if callable(self.scalar) else self.scalar

    def check(self, node: Node) -> tuple[TensorType, ...]:
        """The node's output types by the op's rule: a diagnostic at the node's span
        when the rule rejects its inputs. A rule is a function of the input types and
        the attrs, so an answer is kept for the same question (an unrolled GRU asks
        the same few thousands of times); rejections are not kept."""
        types = [v.type for v in node.inputs]
        key: Any = [self.name]
        for t in types:  # shapes and dtypes, not TensorTypes: their hash is Python's
            key += (t.shape, t.dtype)
        for k, v in node.attrs.items():
            key += (k, v.__class__, v)  # the type too: 1 and 1.0 and True are equal keys
        try:
            key = tuple(key)
            known = _CHECKED.get(key)
        except TypeError:  # an unhashable attr (a list): ask the rule
            key = known = None
        if known is not None:
            return known
        try:
            out = self.infer(types, node.attrs)
        except ShapeRuleError as exc:
            raise error(exc.code, f"{self.name}: {exc.message}", node.span,
                        expected=exc.expected, actual=exc.actual, fix=exc.fix,
                        notes=list(node.notes)) from None
        out = out if isinstance(out, tuple) else (out,)
        if key is not None:
            _CHECKED[key] = out
        return out
