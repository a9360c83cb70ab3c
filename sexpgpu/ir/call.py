"""How the front ends call an op from its registry entry: the Lisp builtins
(trace/builtins.py) and the Tensor methods (autodiff/tensor.py) read their arguments
into tensors, numbers and argument values, and `call` does the rest the same way for
both: numbers become constants, integer inputs are treated as the entry says,
arguments are checked and defaulted, and the op (or its `build`) is applied."""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Number
from typing import TYPE_CHECKING, Any

from sexpgpu.ir import build
from sexpgpu.ir.graph import Value
from sexpgpu.ir.ops.opdef import ARG_KINDS, Arg, OpDef
from sexpgpu.ir.shapes import require_float
from sexpgpu.ir.types import DTYPES, FLOAT_DTYPES

if TYPE_CHECKING:
    from sexpgpu.ir.graph import Graph


class ArgError(Exception):
    """An argument a front end cannot use; Lisp reports it as E-ARG, Python as TypeError."""

    def __init__(self, message: str, expected: str, actual: str):
        super().__init__(message)
        self.message, self.expected, self.actual = message, expected, actual


def is_number(x: Any) -> bool:
    t = type(x)
    if t is float or t is int:  # the common answers, before Number's slower ABC check
        return True
    return t is not bool and isinstance(x, Number)


def call(g: Graph, opdef: OpDef, tensors: Sequence[Any], args: dict[str, Any],
         promote: bool = False) -> Any:
    """Apply `opdef` to `tensors` (Values, numbers, lists of them, None for an absent
    optional input) with argument values `args` (by Arg name; missing ones take their
    default). `promote` (Lisp): an integer or bool value meeting a float one becomes
    that float, as CL's arithmetic contagion does; Python keeps dtypes strict."""
    inputs = prepare_inputs(g, opdef, list(tensors), promote)
    values = read_args(opdef, args, inputs)
    if opdef.build is not None:
        spread: list[Any] = []
        for spec, x in zip(opdef.tensor_inputs, inputs):
            spread.extend(x if spec.role == "rest" else [x])  # einsum's operands
        return opdef.build(g, *spread, **values)
    if not opdef.spreads:
        return g.apply(opdef.name, *inputs, **values)
    flat: list[Any] = []
    for spec, x in zip(opdef.tensor_inputs, inputs):
        # a primitive takes a list's tensors as its inputs (concat)
        flat.extend(x if spec.role in ("list", "rest") else [x])
    return g.apply(opdef.name, *flat, **values)


# -- tensors ---------------------------------------------------------------------


def _flat_values(opdef: OpDef, given: list[Any]) -> list[Any]:
    out: list[Any] = []
    for spec, x in zip(opdef.tensor_inputs, given):
        if spec.role == "value":
            out.append(x)
        elif spec.role in ("list", "rest") and x is not None:
            out.extend(x)
    return [x for x in out if x is not None]


def _number_dtype(opdef: OpDef, values: list[Any]) -> str:
    """The dtype a number among the value inputs becomes: the first tensor's (a float
    number meeting integer tensors is f32); with no tensor, f32 for float-only ops
    and for float numbers, else i64."""
    tensors = [v for v in values if not is_number(v)]
    numbers = [v for v in values if is_number(v)]
    if tensors:
        dtype = tensors[0].dtype
        if dtype not in FLOAT_DTYPES and any(isinstance(n, float) for n in numbers):
            return "f32"
        return "i64" if dtype == "bool" else dtype  # a mask meeting numbers counts 0/1
    if opdef.integers in ("reject", "float") or any(isinstance(n, float) for n in numbers):
        return "f32"
    return "i64"


def _constant(g: Graph, x: Any, dtype: str) -> Value:
    if isinstance(x, bool):
        return build.scalar(g, x, "bool")
    if not is_number(x):
        return x
    if dtype in FLOAT_DTYPES:
        return build.scalar(g, float(x), dtype)
    if dtype == "bool":
        return build.scalar(g, bool(x), dtype)
    return build.scalar(g, int(x), dtype)


def _unchanged(opdef: OpDef, given: list[Any]) -> bool:
    """Every input a tensor, the value inputs of one dtype that the entry's integer
    rule takes as it is: nothing to prepare (most calls of a trace)."""
    dtype = None
    for spec, x in zip(opdef.tensor_inputs, given):
        if x is None:
            continue
        if type(x) is not Value or spec.role in ("list", "rest"):
            return False
        if spec.role == "value":
            if dtype is None:
                dtype = x.type.dtype
            elif x.type.dtype != dtype:
                return False
    rule = opdef.integers
    if rule == "keep" or dtype is None:
        return True
    return dtype in FLOAT_DTYPES if rule in ("reject", "float") else dtype != "bool"


def prepare_inputs(g: Graph, opdef: OpDef, given: list[Any], promote: bool) -> list[Any]:
    """Numbers as constants; then promotion (Lisp) and the entry's integer rule."""
    if _unchanged(opdef, given):
        return given
    dtype = _number_dtype(opdef, _flat_values(opdef, given))
    out: list[Any] = []
    for spec, x in zip(opdef.tensor_inputs, given):
        if x is None:
            out.append(None)
        elif spec.role in ("list", "rest"):
            out.append([_constant(g, t, dtype) for t in x])
        elif spec.role == "value":
            out.append(_constant(g, x, dtype))
        elif spec.role == "bool":
            out.append(_constant(g, x, "bool"))
        else:  # index, rng
            out.append(_constant(g, x, "i64"))
    value_slots = [(i, j) for i, spec in enumerate(opdef.tensor_inputs)
                   for j in ([None] if spec.role == "value" else
                             range(len(out[i] or ())) if spec.role in ("list", "rest") else [])
                   if out[i] is not None]
    if promote:
        _promote(g, out, value_slots)
    if opdef.integers == "reject" and opdef.kind == "composite":
        # float-only: E-DTYPE, never a silent cast (a primitive's own rule says so)
        for i, j in value_slots:
            require_float((out[i] if j is None else out[i][j]).type, f"{opdef.name}'s argument")
    if opdef.integers in ("float", "count"):
        for i, j in value_slots:
            v = out[i] if j is None else out[i][j]
            if opdef.integers == "float" and v.dtype not in FLOAT_DTYPES:
                _put(out, i, j, g.apply("cast", v, dtype="f32"))
            elif opdef.integers == "count" and v.dtype == "bool":
                _put(out, i, j, g.apply("cast", v, dtype="i64"))
    return out


def _put(out: list[Any], i: int, j: int | None, v: Value) -> None:
    if j is None:
        out[i] = v
    else:
        out[i][j] = v


def _promote(g: Graph, out: list[Any], slots: list[tuple[int, int | None]]) -> None:
    """Integer or boolean meeting float: that side becomes the float's dtype; a
    boolean meeting an integer becomes that integer type. Two floats stay (E-DTYPE)."""
    values = [out[i] if j is None else out[i][j] for i, j in slots]
    floats = [v.dtype for v in values if v.dtype in FLOAT_DTYPES]
    ints = [v.dtype for v in values if v.dtype not in FLOAT_DTYPES and v.dtype != "bool"]
    target = floats[0] if floats else (ints[0] if ints else None)
    if target is None:
        return
    for (i, j), v in zip(slots, values):
        if v.dtype != target and (v.dtype not in FLOAT_DTYPES):
            _put(out, i, j, g.apply("cast", v, dtype=target))


# -- arguments ---------------------------------------------------------------------


def read_args(opdef: OpDef, given: dict[str, Any], inputs: list[Any]) -> dict[str, Any]:
    """Every argument's value: given (normalised to plain Python) or its default."""
    values: dict[str, Any] = {}
    for arg in opdef.args:
        if arg.name in given:
            values[arg.name] = normalise(arg, given[arg.name], inputs)
        elif arg.required:
            raise ArgError(f"{opdef.name}: missing argument {arg.py_key}",
                           expected=f"{arg.py_key}: {describe(arg)}", actual="nothing")
        else:
            values[arg.name] = arg.default
    return values


def describe(arg: Arg) -> str:
    if arg.kind == "choice":
        return " | ".join(arg.choices)
    return ARG_KINDS[arg.kind]


def _int(arg: Arg, x: Any) -> int:
    if isinstance(x, bool) or not isinstance(x, int):
        if hasattr(x, "__index__") and not isinstance(x, bool):
            return int(x)
        raise ArgError(f"{arg.py_key} must be an integer", expected="an integer",
                       actual=repr(x))
    return x


def _ints(arg: Arg, x: Any) -> tuple[int, ...]:
    if isinstance(x, int) and not isinstance(x, bool):
        return (x,)
    if not isinstance(x, (list, tuple)):
        raise ArgError(f"{arg.py_key} must be a list of integers",
                       expected="e.g. (2 3)", actual=repr(x))
    return tuple(_int(arg, i) for i in x)


def _first_size(inputs: list[Any]) -> int | None:
    first = next((v for v in inputs if v is not None and not isinstance(v, list)), None)
    return None if first is None else first.type.size


def normalise(arg: Arg, x: Any, inputs: list[Any]) -> Any:
    """An argument value as plain Python of its kind, or ArgError."""
    kind = arg.kind
    if kind in ("int", "axis", "stream"):
        return _int(arg, x)
    if kind in ("ints", "shape"):
        return _ints(arg, x)
    if kind == "sizes":
        return _int(arg, x) if isinstance(x, int) else _ints(arg, x)
    if kind == "ints?":
        return None if x is None else _ints(arg, x)
    if kind == "newshape":
        return infer_minus_one(_ints(arg, x), _first_size(inputs))
    if kind == "axes":
        return None if x is None else _ints(arg, x)
    if kind in ("axis?", "int?"):
        return None if x is None else _int(arg, x)
    if kind == "flag":
        return bool(x)
    if kind == "order":
        if x in ("inf", "-inf"):
            return float(x)
        if isinstance(x, bool) or not isinstance(x, Number):
            raise ArgError(f"{arg.py_key} must be a number", expected="a number, inf or -inf",
                           actual=repr(x))
        return float(x)
    if kind in ("number", "number?"):
        if x is None and kind == "number?":
            return None
        if isinstance(x, bool) or not isinstance(x, Number):
            raise ArgError(f"{arg.py_key} must be a number", expected="a number", actual=repr(x))
        return x.item() if hasattr(x, "item") else x
    if kind == "numbers":
        items = x if isinstance(x, (list, tuple)) else None
        if items is None or any(isinstance(v, bool) or not isinstance(v, Number) for v in items):
            raise ArgError(f"{arg.py_key} must be a list of numbers", expected="e.g. (1 2.5)",
                           actual=repr(x))
        return tuple(v.item() if hasattr(v, "item") else v for v in items)
    if kind == "dtype":
        if x not in DTYPES:
            raise ArgError(f"unknown dtype {x!r}", expected=" ".join(DTYPES), actual=repr(x))
        return x
    if kind == "choice":
        if x not in arg.choices:
            raise ArgError(f"{arg.py_key} must be one of {', '.join(arg.choices)}",
                           expected=" | ".join(arg.choices), actual=repr(x))
        return x
    if kind == "string":
        if not isinstance(x, str):
            raise ArgError(f"{arg.py_key} must be a string", expected="a string", actual=repr(x))
        return x
    raise AssertionError(f"internal error: argument kind {kind}")


def infer_minus_one(shape: tuple[int, ...], size: int | None) -> tuple[int, ...]:
    """numpy's -1 in a reshape: the one size that keeps the element count."""
    if -1 not in shape or size is None or shape.count(-1) != 1:
        return tuple(shape)
    known = 1
    for d in shape:
        if d != -1:
            known *= d
    if not known or size % known:
        return tuple(shape)  # the rule reports the mismatch
    return tuple(size // known if d == -1 else d for d in shape)

