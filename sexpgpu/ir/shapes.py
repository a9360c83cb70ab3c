"""Shape rules' common parts: the error a rule raises (ShapeRuleError, E-SHAPE and
E-DTYPE), numpy broadcasting, axis normalisation and the `(12 64 128)` notation
diagnostics use. Pure Python: graph building is cheap."""

from __future__ import annotations

from collections.abc import Sequence

from sexpgpu.diagnostics import define_code
from sexpgpu.ir.types import FLOAT_DTYPES, TensorType

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
    """Raised by a shape rule; `OpDef.check` (or `build.checked`) turns it into an
    E-SHAPE/E-DTYPE diagnostic at the span of the form being built."""

    def __init__(self, message: str, expected: str | None = None, actual: str | None = None,
                 fix: str | None = None, code: str = E_SHAPE):
        super().__init__(message)
        self.message, self.expected, self.actual, self.fix, self.code = (
            message, expected, actual, fix, code)


def fmt(shape: Sequence[int]) -> str:
    """A shape as diagnostics print it: `(12 64 128)`."""
    return "(" + " ".join(str(d) for d in shape) + ")"


def broadcast(*shapes: tuple[int, ...], names: Sequence[str] = ()) -> tuple[int, ...]:
    """The numpy broadcast of `shapes`, or a ShapeRuleError naming the arguments."""
    ndim = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for axis in range(-ndim, 0):
        dims = {s[axis] for s in shapes if len(s) >= -axis} - {1}
        if len(dims) > 1:
            labels = names or [f"argument {i + 1}" for i in range(len(shapes))]
            actual = ", ".join(f"{n} {fmt(s)}" for n, s in zip(labels, shapes))
            raise ShapeRuleError(
                f"shapes do not broadcast (axis {axis})",
                expected="equal sizes or 1 on each axis, aligned from the right",
                actual=actual,
                fix="reshape or unsqueeze one argument so the axes line up",
            )
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def axis(ax: int, ndim: int, what: str = "axis") -> int:
    """A possibly negative axis as a non-negative index, checked against ndim."""
    if not -ndim <= ax < ndim:
        raise ShapeRuleError(
            f"{what} {ax} out of range for a tensor of rank {ndim}",
            expected=f"an axis in [{-ndim}, {ndim - 1}]" if ndim else "no axis (a scalar)",
            actual=str(ax),
        )
    return ax % ndim


def axes(value: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """Reduction axes: None means all; sorted, non-negative, no repeats."""
    if value is None:
        return tuple(range(ndim))
    if isinstance(value, int):
        value = (value,)
    out = tuple(sorted({axis(a, ndim) for a in value}))
    if len(out) != len(tuple(value)):
        raise ShapeRuleError("an axis is repeated", actual=str(tuple(value)))
    return out


def reduced(shape: tuple[int, ...], ax: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    """The shape after reducing `ax` (with size-1 axes kept when keepdims)."""
    if keepdims:
        return tuple(1 if i in ax else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in ax)


def require_dtype(t: TensorType, allowed: frozenset[str] | set[str], what: str) -> None:
    """E-DTYPE unless `t.dtype` is one of `allowed`."""
    if t.dtype not in allowed:
        raise ShapeRuleError(
            f"{what} must be {' or '.join(sorted(allowed))}",
            expected=" | ".join(sorted(allowed)), actual=t.dtype, code=E_DTYPE,
            fix=_dtype_fix(t.dtype, allowed),
        )


def _dtype_fix(actual: str, allowed: frozenset[str] | set[str]) -> str:
    target = "f32" if "f32" in allowed else "i64" if "i64" in allowed else sorted(allowed)[0]
    if actual == "bool" and target == "f32":
        return "cast the mask first: (cast x :f32)"
    if actual in FLOAT_DTYPES and target == "i64":
        return "indices are integers: (cast x :i64), or pass the integer tensor"
    return f"cast it if that is what you mean: (cast x :{target})"


def require_float(t: TensorType, what: str = "the argument") -> None:
    require_dtype(t, FLOAT_DTYPES, what)


def same_dtype(types: Sequence[TensorType], names: Sequence[str]) -> str:
    """The common dtype of `types`; E-DTYPE naming both sides when they differ."""
    first = types[0].dtype
    for t, name in zip(types[1:], names[1:]):
        if t.dtype != first:
            raise ShapeRuleError(
                f"{names[0]} and {name} have different dtypes",
                expected=f"{first} and {first}", actual=f"{first} and {t.dtype}",
                fix=f"cast {name} to {first}", code=E_DTYPE,
            )
    return first
