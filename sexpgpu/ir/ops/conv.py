"""Sliding windows: `unfold` (im2col: every kernel-sized window of a padded,
strided N-d input) and `fold` (its transpose, summing windows back), and the
compositions over them: conv1d, conv2d (one matmul on the windows), max_pool and
avg_pool (expansions in `sexpgpu.ir.build`)."""

from __future__ import annotations

import itertools

from sexpgpu.ir import build
from sexpgpu.ir.ops._define import composite
from sexpgpu.ir.ops._sampling import distinct, values
from sexpgpu.ir.ops.opdef import Arg, OpDef
from sexpgpu.ir.shapes import ShapeRuleError, fmt
from sexpgpu.ir.types import TensorType
from sexpgpu.lazynumpy import np

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
            ([distinct(rng, (1, 1, 4))], {"kernel": (4,), "stride": (1,), "padding": (0,)}),
            # strides past the kernel: positions no window reads, windows half in padding
            ([values(rng, (2, 1, 8))], {"kernel": (2,), "stride": (3,), "padding": (1,)})]


OPS.append(OpDef("unfold", _unfold_infer, _unfold_reference, _unfold_vjp, kind="opaque",
                 samples=_unfold_samples,
                 doc="x [N, C, *S] -> [N, C, *kernel, *S'] (attrs kernel, stride, padding)",
                 reached=("conv1d", "conv2d", "max_pool", "avg_pool")))


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
                                           "padding": (1,)}),
            ([values(rng, (1, 2, 2, 3, 3, 6))], {"shape": (1, 2, 5, 6), "kernel": (2, 3),
                                                 "stride": (2, 1), "padding": (1, 1)}),
            # positions no window covers (stride 3 past a kernel of 2)
            ([values(rng, (2, 1, 2, 3))], {"shape": (2, 1, 8), "kernel": (2,), "stride": (3,),
                                           "padding": (0,)})]


OPS.append(OpDef("fold", _fold_infer, _fold_reference, _fold_vjp, kind="opaque",
                 samples=_fold_samples, extra={"reorders_sums": True},
                 doc="unfold's transpose: sum windows back into attrs shape [N, C, *S]",
                 reached=("conv1d", "conv2d")))


# -- compositions ----------------------------------------------------------------------

def _per_axis(v: tuple[int, ...] | int, nsp: int) -> tuple[int, ...]:
    """One value for every spatial axis, or one each."""
    v = (v,) if isinstance(v, int) else tuple(v)
    return v * nsp if len(v) == 1 else v


def _conv(nsp: int):
    def conv(g, x, w, stride=(1,), padding=(0,)):
        if len(x.shape) != nsp + 2 or len(w.shape) != nsp + 2:
            spatial = "L" if nsp == 1 else "H W"
            raise build.shape_error(
                g, f"conv{nsp}d: input and weight must have rank {nsp + 2}",
                expected=f"x (N C {spatial}), w (O C K...)",
                actual=f"x {fmt(x.shape)}, w {fmt(w.shape)}")
        return build.conv(g, x, w, _per_axis(stride, nsp), _per_axis(padding, nsp))
    conv.__name__ = f"conv{nsp}d"
    return conv


def _conv_reference(x: np.ndarray, w: np.ndarray, stride=(1,), padding=(0,)) -> np.ndarray:
    nsp = w.ndim - 2
    cols = _unfold_reference(x, tuple(w.shape[2:]), _per_axis(stride, nsp),
                             _per_axis(padding, nsp))       # [N, C, *K, *S']
    n, c = cols.shape[:2]
    flat = cols.reshape(n, c * int(np.prod(w.shape[2:])), -1)
    out = np.einsum("ok,nks->nos", w.reshape(w.shape[0], -1), flat)
    return out.reshape((n, w.shape[0]) + cols.shape[2 + nsp:])


_CONV_ARGS = (Arg("stride", "ints", (1,)), Arg("padding", "ints", (0,)))
composite(OPS, "conv1d", _conv(1), _conv_reference, inputs=("x", "w"), args=_CONV_ARGS,
          method=None, function="conv1d", integers="reject",
          samples=lambda rng: [([values(rng, (2, 3, 7)), values(rng, (4, 3, 3))],
                                {"stride": (2,), "padding": (1,)})],
          extra={"reorders_sums": True},
          doc="x (N C L), w (O C K) -> (N O L'): a cross-correlation, as PyTorch's")
composite(OPS, "conv2d", _conv(2), _conv_reference, inputs=("x", "w"), args=_CONV_ARGS,
          method=None, function="conv2d", integers="reject",
          samples=lambda rng: [([values(rng, (1, 2, 5, 4)), values(rng, (3, 2, 2, 3))],
                                {"stride": (1,), "padding": (0, 1)})],
          extra={"reorders_sums": True},
          doc="x (N C H W), w (O C KH KW) -> (N O H' W')")


def _pool(kind: str):
    def pool(g, x, kernel, stride=None):
        nsp = max(1, len(x.shape) - 2)
        k = kernel[0] if len(kernel) == 1 else kernel
        s = None if stride is None else (stride[0] if len(stride) == 1 else stride)
        return build.pool(g, x, k, s, kind, nsp)
    pool.__name__ = f"{kind}_pool"
    return pool


def _pool_reference(fn):
    def reference(x: np.ndarray, kernel, stride=None) -> np.ndarray:
        nsp = max(1, x.ndim - 2)
        kernel = _per_axis(kernel, nsp)
        stride = kernel if stride is None else _per_axis(stride, nsp)
        cols = _unfold_reference(x, kernel, stride, (0,) * nsp)
        return fn(cols, axis=tuple(range(2, 2 + nsp)))
    return reference


_POOL_ARGS = (Arg("kernel", "ints", positional=True), Arg("stride", "ints?", None))
for _kind, _fn in (("max", np.max), ("avg", np.mean)):
    composite(OPS, f"{_kind}_pool", _pool(_kind), _pool_reference(_fn), args=_POOL_ARGS,
              method=None, function=f"{_kind}_pool",
              samples=lambda rng: [([distinct(rng, (2, 3, 8))], {"kernel": (2,)}),
                                   ([distinct(rng, (1, 2, 5, 4))], {"kernel": (2,),
                                                                    "stride": (1,)})],
              extra={"reorders_sums": True},
              doc=f"{'max' if _kind == 'max' else 'mean'} over windows of the trailing axes "
                  "(stride: the kernel)")
