"""Sliding windows: `unfold` (im2col: every kernel-sized window of a padded,
strided N-d input) and `fold` (its transpose, summing windows back). conv1d,
conv2d and pooling are compositions over these in `sexpgpu.ir.build`."""

from __future__ import annotations

import itertools

import numpy as np

from sexpgpu.ir.ops._sampling import distinct, values
from sexpgpu.ir.ops.opdef import OpDef
from sexpgpu.ir.shapes import ShapeRuleError, fmt
from sexpgpu.ir.types import TensorType

# the ops this family defines, in order; ops/registry.py gathers every family's
OPS: list[OpDef] = []


def _window_attrs(shape: tuple[int, ...], attrs: dict) -> tuple[tuple[int, ...], ...]:
    """(kernel, stride, padding, output spatial shape) for input `shape` [N, C, *S]."""
    kernel = tuple(attrs["kernel"])
    nsp = len(kernel)
    stride = tuple(attrs.get("stride") or (1,) * nsp)
    padding = tuple(attrs.get("padding") or (0,) * nsp)
    if len(shape) != 2 + nsp or len(stride) != nsp or len(padding) != nsp:
        raise ShapeRuleError(f"a {nsp}-d window needs an input (N C {' '.join('S' * nsp)})",
                             expected=f"rank {2 + nsp}", actual=fmt(shape))
    if min(stride, default=1) < 1 or min(padding, default=0) < 0:
        raise ShapeRuleError("stride must be >= 1 and padding >= 0",
                             actual=f"stride {stride}, padding {padding}")
    out = tuple((s + 2 * p - k) // st + 1
                for s, k, st, p in zip(shape[2:], kernel, stride, padding))
    if any(o < 1 for o in out):
        raise ShapeRuleError("the window is larger than the padded input",
                             expected=f"spatial sizes >= kernel {fmt(kernel)} after padding",
                             actual=f"input {fmt(shape)}, padding {fmt(padding)}",
                             fix="pad the input or use a smaller kernel")
    return kernel, stride, padding, out


def _unfold_infer(types: list[TensorType], attrs: dict) -> TensorType:
    x = types[0]
    kernel, _, _, out = _window_attrs(x.shape, attrs)
    return TensorType(x.shape[:2] + kernel + out, x.dtype)


def _window(offset: tuple[int, ...], stride: tuple[int, ...], out: tuple[int, ...]) -> tuple:
    """The index of window element `offset` in every output position, as slices."""
    return (slice(None), slice(None)) + tuple(
        slice(o, o + st * (n - 1) + 1, st) for o, st, n in zip(offset, stride, out))


def _unfold_reference(x: np.ndarray, kernel, stride=None, padding=None) -> np.ndarray:
    kernel, stride, padding, out = _window_attrs(
        x.shape, {"kernel": kernel, "stride": stride, "padding": padding})
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))
    cols = np.empty(x.shape[:2] + kernel + out, dtype=x.dtype)
    for offset in itertools.product(*(range(k) for k in kernel)):
        cols[(slice(None), slice(None)) + offset] = xp[_window(offset, stride, out)]
    return cols


def _unfold_vjp(g, node, cts):
    return [g.apply("fold", cts[0], shape=node.inputs[0].shape, **node.attrs)]


def _unfold_samples(rng: np.random.Generator) -> list:
    return [([values(rng, (2, 3, 7))], {"kernel": (3,), "stride": (2,), "padding": (1,)}),
            ([values(rng, (1, 2, 5, 4))], {"kernel": (2, 3), "stride": (1, 1),
                                           "padding": (0, 1)}),
            ([distinct(rng, (1, 1, 4))], {"kernel": (4,), "stride": (1,), "padding": (0,)})]


OPS.append(OpDef("unfold", _unfold_infer, _unfold_reference, _unfold_vjp, kind="opaque",
                 samples=_unfold_samples,
                 doc="x [N, C, *S] -> [N, C, *kernel, *S'] (attrs kernel, stride, padding)"))


def _fold_infer(types: list[TensorType], attrs: dict) -> TensorType:
    shape = tuple(attrs["shape"])
    kernel, _, _, out = _window_attrs(shape, attrs)
    want = shape[:2] + kernel + out
    if types[0].shape != want:
        raise ShapeRuleError("the windows do not match the target shape",
                             expected=fmt(want), actual=fmt(types[0].shape))
    return TensorType(shape, types[0].dtype)


def _fold_reference(cols: np.ndarray, shape, kernel, stride=None, padding=None) -> np.ndarray:
    kernel, stride, padding, out = _window_attrs(
        tuple(shape), {"kernel": kernel, "stride": stride, "padding": padding})
    padded = tuple(shape[:2]) + tuple(s + 2 * p for s, p in zip(shape[2:], padding))
    xp = np.zeros(padded, dtype=cols.dtype)
    for offset in itertools.product(*(range(k) for k in kernel)):
        xp[_window(offset, stride, out)] += cols[(slice(None), slice(None)) + offset]
    inner = (slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(padding, shape[2:]))
    return xp[inner].copy()


def _fold_vjp(g, node, cts):
    attrs = {k: v for k, v in node.attrs.items() if k != "shape"}
    return [g.apply("unfold", cts[0], **attrs)]


def _fold_samples(rng: np.random.Generator) -> list:
    return [([values(rng, (2, 3, 3, 4))], {"shape": (2, 3, 7), "kernel": (3,), "stride": (2,),
                                           "padding": (1,)})]


OPS.append(OpDef("fold", _fold_infer, _fold_reference, _fold_vjp, kind="opaque",
                 samples=_fold_samples, extra={"reorders_sums": True},
                 doc="unfold's transpose: sum windows back into attrs shape [N, C, *S]"))
