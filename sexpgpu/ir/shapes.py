"""Shape helpers shared by the op rules: numpy broadcasting, axis normalisation
and the `(12 64 128)` notation diagnostics use. Pure Python: graph building is cheap."""

from __future__ import annotations

from collections.abc import Sequence

from sexpgpu.ir.types import FLOAT_DTYPES, TensorType


def ShapeRuleError(*args, **kwargs) -> Exception:  # noqa: N802 - stands in for the class
    """The registry's ShapeRuleError, imported at call time: the op families import
    this module while `sexpgpu.ir.ops` (home of the registry) is still loading."""
    from sexpgpu.ir.ops.registry import ShapeRuleError as cls

    return cls(*args, **kwargs)


E_DTYPE = "E-DTYPE"


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
            fix="convert it with cast" if t.dtype != "bool" else "compare or cast it first",
        )


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
