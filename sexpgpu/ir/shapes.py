"""Shape rules' common parts: the error a rule raises (ShapeRuleError, E-SHAPE and
E-DTYPE), numpy broadcasting, axis normalisation and the `(12 64 128)` notation
diagnostics use. Pure Python: graph building is cheap."""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from sexpgpu.diagnostics import define_code
from sexpgpu.ir.types import DTYPES, FLOAT_DTYPES, INT_DTYPES, TensorType

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


# what a library function may name in `expect-dtype`: a class of dtypes, or one dtype
DTYPE_CLASSES: dict[str, frozenset[str]] = {
    "float": FLOAT_DTYPES, "integer": INT_DTYPES, "bool": frozenset({"bool"}),
    **{d: frozenset({d}) for d in DTYPES},
}


def require_kind(t: TensorType, kinds: Sequence[str], what: str) -> None:
    """E-DTYPE unless `t.dtype` belongs to one of `kinds` (DTYPE_CLASSES keys)."""
    allowed = frozenset().union(*(DTYPE_CLASSES[k] for k in kinds))
    if t.dtype not in allowed:
        raise ShapeRuleError(
            f"{what} must be {' or '.join(kinds)}",
            expected=" or ".join(kinds) + f" ({' '.join(sorted(allowed))})",
            actual=f"{t.dtype} {fmt(t.shape)}", code=E_DTYPE, fix=_dtype_fix(t.dtype, allowed),
        )


def require_shape(t: TensorType, expected: Sequence[int | None], what: str) -> None:
    """E-SHAPE unless `t` has exactly the shape `expected` (None: any size on that axis).
    No broadcasting: a loss that broadcasts (B 1) against (B) silently averages B x B."""
    ok = len(t.shape) == len(expected) and all(
        e is None or d == e for d, e in zip(t.shape, expected))
    if not ok:
        want = "(" + " ".join("_" if e is None else str(e) for e in expected) + ")"
        raise ShapeRuleError(f"{what} must have shape {want}", expected=want,
                             actual=fmt(t.shape), fix=_shape_fix(t.shape, expected))


def require_same_shape(a: TensorType, b: TensorType, what: str) -> None:
    """E-SHAPE unless `a` and `b` have the same shape (no broadcasting between them)."""
    if a.shape != b.shape:
        raise ShapeRuleError(f"{what} must have the same shape",
                             expected=f"one shape, e.g. {fmt(a.shape)} and {fmt(a.shape)}",
                             actual=f"{fmt(a.shape)} and {fmt(b.shape)}",
                             fix=_shape_fix(b.shape, a.shape, "on the second argument, "))


def _shape_fix(actual: Sequence[int], expected: Sequence[int | None],
               prefix: str = "") -> str:
    """How to turn `actual` into `expected`: squeeze or unsqueeze one size-1 axis, or
    reshape when the element counts agree."""
    want = "(" + " ".join("_" if e is None else str(e) for e in expected) + ")"
    if len(actual) == len(expected) + 1:
        for ax in range(len(actual)):
            rest = list(actual[:ax]) + list(actual[ax + 1:])
            if actual[ax] == 1 and all(e is None or d == e for d, e in zip(rest, expected)):
                return f"{prefix}drop the size-1 axis {ax}: (squeeze x {ax})"
    if len(actual) + 1 == len(expected):
        for ax in range(len(expected)):
            if expected[ax] == 1:
                rest = list(expected[:ax]) + list(expected[ax + 1:])
                if all(e is None or d == e for d, e in zip(actual, rest)):
                    return f"{prefix}add a size-1 axis {ax}: (unsqueeze x {ax})"
    if None not in expected and prod(actual) == prod(expected):  # type: ignore[arg-type]
        return f"{prefix}reshape to {want}: (reshape x '{want})"
    return f"{prefix}pass a tensor of shape {want} (are the arguments in the right order?)"


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
