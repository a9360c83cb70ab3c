"""Building IR from Python: constants, un-broadcasting, and the ops that are
compositions of primitives (mean, var, softmax, conv, pooling, one-hot, ...).
VJP rules, the `autodiff` Tensor API and the Lisp tracer all build through here."""

from __future__ import annotations

import math
from collections.abc import Sequence
from math import prod
from typing import TYPE_CHECKING, Any

from sexpgpu.diagnostics import SexpError, error
from sexpgpu.ir.shapes import E_SHAPE, ShapeRuleError, fmt, require_dtype
from sexpgpu.ir.shapes import axes as norm_axes
from sexpgpu.ir.shapes import axis as norm_axis
from sexpgpu.ir.types import FLOAT_DTYPES, INT_DTYPES

if TYPE_CHECKING:  # annotations only: graph.py imports the op families, whose VJPs use this
    from sexpgpu.ir.graph import Graph, Node, Value


def scalar(g: Graph, value: float | int | bool, dtype: str) -> Value:
    """A rank-0 constant; broadcasting stretches it to any shape."""
    if hasattr(value, "item"):  # a numpy scalar: keep attrs plain Python
        value = value.item()
    # one node per distinct constant: VJPs ask for 0 and 1 over and over
    cache = g.__dict__.setdefault("_scalars", {})
    key = (dtype, repr(value))
    if key not in cache:
        cache[key] = g.apply("full", shape=(), dtype=dtype, value=value)
    return cache[key]


def shared(g: Graph) -> tuple[set[int], set[int]]:
    """The ids of the values `scalar` and `transpose` give again when asked again in
    `g` (a copy of the nodes that made them must not make them twice)."""
    return ({v.id for v in g.__dict__.get("_scalars", {}).values()},
            {v.id for v in g.__dict__.get("_transposes", {}).values()})


def draws(node: Node) -> bool:
    """Whether a node draws random numbers (a dropout stream, the step's seed): a
    copy of it would repeat its draw, where tracing again draws anew."""
    return "stream" in node.attrs or any(v.role == "rng" for v in node.inputs)


def zeros_like(g: Graph, x: Value) -> Value:
    return g.apply("full", shape=x.shape, dtype=x.dtype, value=0)


def unbroadcast(g: Graph, ct: Value, shape: tuple[int, ...]) -> Value:
    """Sum a cotangent over the axes broadcasting added or stretched, back to `shape`."""
    if ct.shape == shape:
        return ct
    lead = len(ct.shape) - len(shape)
    stretched = tuple(i + lead for i, d in enumerate(shape) if d == 1 and ct.shape[i + lead] != 1)
    summed = g.apply("sum", ct, axes=tuple(range(lead)) + stretched, keepdims=False)
    return g.apply("reshape", summed, shape=tuple(shape)) if summed.shape != shape else summed


def expand_reduced(g: Graph, y: Value, shape: tuple[int, ...], axes: tuple[int, ...],
                   keepdims: bool) -> Value:
    """Broadcast a reduction's result (or cotangent) back over the reduced axes."""
    if not keepdims:
        kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
        y = g.apply("reshape", y, shape=kept)
    return g.apply("broadcast_to", y, shape=tuple(shape))


# -- shape compositions -------------------------------------------------------

def squeeze(g: Graph, x: Value, axes: int | Sequence[int] | None = None) -> Value:
    """Drop size-1 axes (all of them when `axes` is None)."""
    if axes is None:
        drop = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        drop = norm_axes(axes, len(x.shape))
        wide = [i for i in drop if x.shape[i] != 1]
        if wide:
            raise shape_error(g, f"squeeze: axis {wide[0]} has size {x.shape[wide[0]]}, not 1",
                              expected="size-1 axes", actual=f"{fmt(x.shape)}")
    return g.apply("reshape", x, shape=tuple(d for i, d in enumerate(x.shape) if i not in drop))


def unsqueeze(g: Graph, x: Value, axis: int) -> Value:
    """Insert a size-1 axis at `axis` (negative counts from the end of the result)."""
    ax = norm_axis(axis, len(x.shape) + 1)
    return g.apply("reshape", x, shape=x.shape[:ax] + (1,) + x.shape[ax:])


def transpose(g: Graph, x: Value, a: int = -2, b: int = -1) -> Value:
    """Swap two axes (the last two by default)."""
    n = len(x.shape)
    perm = list(range(n))
    a, b = norm_axis(a, n), norm_axis(b, n)
    perm[a], perm[b] = perm[b], perm[a]
    # one transposed copy per value: an unrolled RNN's matmul VJPs transpose
    # the same weight at every step
    cache = g.__dict__.setdefault("_transposes", {})
    key = (x.id, a, b)
    if key not in cache:
        cache[key] = g.apply("permute", x, perm=tuple(perm))
    return cache[key]


def slice_axis(g: Graph, x: Value, axis: int = 0, start: int = 0,
               end: int | None = None) -> Value:
    """Elements start..end-1 along one axis (Python slicing: negatives from the end)."""
    n = len(x.shape)
    ax = norm_axis(axis, n)
    starts = tuple(start if i == ax else None for i in range(n))
    stops = tuple(end if i == ax else None for i in range(n))
    return g.apply("slice", x, starts=starts, stops=stops, steps=None)


def stack(g: Graph, xs: Sequence[Value], axis: int = 0) -> Value:
    ax = norm_axis(axis, len(xs[0].shape) + 1)
    return g.apply("concat", *[unsqueeze(g, x, ax) for x in xs], axis=ax)


# -- reductions and normalisers ----------------------------------------------

def reduce(g: Graph, x: Value, op: str, axes: Any = None, keepdims: bool = False) -> Value:
    """sum/amax/amin with `axes` made explicit: an int, a tuple or None (all)."""
    return g.apply(op, x, axes=norm_axes(axes, len(x.shape)), keepdims=keepdims)


def cast(g: Graph, x: Value, dtype: str) -> Value:
    """x in `dtype`: a cast node only where its dtype differs."""
    return x if x.dtype == dtype else g.apply("cast", x, dtype=dtype)


def _as_float(g: Graph, x: Value) -> Value:
    """Integer and boolean tensors are averaged and normalised as f32 (numpy's mean
    of integers is a float too): a mean of i64 [1 2] is 1.5, not 0 (a 1/count
    constant of the input's integer dtype)."""
    return x if x.dtype in FLOAT_DTYPES else g.apply("cast", x, dtype="f32")


def mean(g: Graph, x: Value, axes: Any = None, keepdims: bool = False) -> Value:
    """sum times 1/count; integer and boolean input is averaged as f32."""
    x = _as_float(g, x)
    ax = norm_axes(axes, len(x.shape))
    count = prod(x.shape[i] for i in ax)
    total = g.apply("sum", x, axes=ax, keepdims=keepdims)
    return g.apply("mul", total, scalar(g, 1.0 / max(count, 1), x.dtype))


def var(g: Graph, x: Value, axes: Any = None, keepdims: bool = False,
        correction: int = 0) -> Value:
    """Variance, the squared deviations summed and divided by count - correction
    (numpy's default correction 0, the population variance; PyTorch's 1), by the
    corrected two-pass formula: d = x - mean(x), var = mean(d^2) - mean(d)^2.
    mean(d) is the rounding error of the f32 mean (0 in exact arithmetic, so it
    carries no gradient); without the correction var comes out too large by its
    square, three digits of a layer norm's variance at mean 1e4 and std 0.1. Both
    sums run in one loop (sibling reductions, docs/kernels.md)."""
    x = _as_float(g, x)
    ax = norm_axes(axes, len(x.shape))
    count = prod(x.shape[i] for i in ax)
    inv = scalar(g, 1.0 / max(count, 1), x.dtype)
    d = g.apply("sub", x, mean(g, x, ax, keepdims=True))
    squares = g.apply("sum", g.apply("square", d), axes=ax, keepdims=keepdims)
    error = g.apply("stop_gradient", g.apply("sum", d, axes=ax, keepdims=keepdims))
    out = g.apply("sub", g.apply("mul", squares, inv),
                  g.apply("square", g.apply("mul", error, inv)))
    if correction:
        # n / (n - c) times the population variance; no degrees of freedom left: inf
        scale = count / (count - correction) if count > correction else math.inf
        out = g.apply("mul", out, scalar(g, scale, x.dtype))
    return out


def _max_shift(g: Graph, x: Value, ax: tuple[int, ...]) -> Value:
    """The row max, a constant shift for stability (no gradient flows through it),
    taken as 0 where it is not finite, as numpy's and PyTorch's logsumexp do: a row
    of -inf then sums exp(-inf) = 0 (log 0 = -inf) instead of exp(-inf + inf) =
    NaN, and a row holding +inf sums to inf."""
    m = g.apply("amax", x, axes=ax, keepdims=True)
    finite = g.apply("lt", g.apply("abs", m), scalar(g, math.inf, x.dtype))
    return g.apply("stop_gradient", g.apply("where", finite, m, scalar(g, 0.0, x.dtype)))


def logsumexp(g: Graph, x: Value, axes: Any = None, keepdims: bool = False) -> Value:
    """log(sum(exp(x - m))) + m: -inf for a row of -inf, +inf for a row holding
    +inf, NaN for a row holding NaN (scipy's and PyTorch's logsumexp)."""
    x = _as_float(g, x)
    ax = norm_axes(axes, len(x.shape))
    m = _max_shift(g, x, ax)
    total = g.apply("sum", g.apply("exp", g.apply("sub", x, m)), axes=ax, keepdims=True)
    out = g.apply("add", g.apply("log", total), m)
    return out if keepdims else squeeze(g, out, ax)


def softmax(g: Graph, x: Value, axis: int = -1) -> Value:
    """exp(x - m) / sum(exp(x - m)) with m the plain row max (scipy's and
    PyTorch's softmax): a row of -inf, or one holding +inf or NaN, is all NaN."""
    x = _as_float(g, x)
    ax = (norm_axis(axis, len(x.shape)),)
    m = g.apply("stop_gradient", g.apply("amax", x, axes=ax, keepdims=True))
    e = g.apply("exp", g.apply("sub", x, m))
    return g.apply("div", e, g.apply("sum", e, axes=ax, keepdims=True))


def log_softmax(g: Graph, x: Value, axis: int = -1) -> Value:
    """(x - m) - log(sum(exp(x - m))), scipy's form: x - (m + log sum) rounds
    m + log sum to x's magnitude first (5e-4 lost at logits near 1e4). As scipy's
    log_softmax (m taken as 0 where not finite): a row of -inf is NaN, a row
    holding +inf is NaN there and -inf elsewhere (PyTorch: NaN throughout)."""
    x = _as_float(g, x)
    ax = (norm_axis(axis, len(x.shape)),)
    m = _max_shift(g, x, ax)
    total = g.apply("sum", g.apply("exp", g.apply("sub", x, m)), axes=ax, keepdims=True)
    # x - m again rather than the sum's: the last loop reads x, not a stored copy
    return g.apply("sub", g.apply("sub", x, m), g.apply("log", total))


# -- creation and masks --------------------------------------------------------

def iota_along(g: Graph, n: int, axis: int, ndim: int, dtype: str = "i64") -> Value:
    """0..n-1 laid along `axis` of a rank-`ndim` tensor (size 1 elsewhere)."""
    shape = tuple(n if i == axis else 1 for i in range(ndim))
    return g.apply("iota", shape=shape, dtype=dtype, axis=axis)


def one_hot(g: Graph, idx: Value, n: int, dtype: str = "f32") -> Value:
    """idx [...] -> [..., n]: 1 where the last index equals idx. Indices are integers
    (float "class ids" would compare equal by accident or not at all: E-DTYPE) and
    follow the index rule (ops/indexing.py): in [-n, n), negative from the end, else
    E-INDEX."""
    require_dtype(idx.type, INT_DTYPES, "one_hot's indices")
    idx = g.apply("check_index", idx, size=n, of="one_hot")
    hit = g.apply("eq", unsqueeze(g, idx, -1), iota_along(g, n, 0, 1, idx.dtype))
    return g.apply("cast", hit, dtype=dtype)


def take_along_axis(g: Graph, x: Value, idx: Value, axis: int = -1) -> Value:
    """numpy's take_along_axis as compare-and-sum, so it fuses and differentiates
    through `where`: x [.., V, ..], idx [.., M, ..] -> [.., M, ..]. idx follows
    the index rule (`check_index`): a compare against every position would give 0
    for an index outside [0, V) instead of an error."""
    ax = norm_axis(axis, len(x.shape))
    idx = g.apply("check_index", idx, size=x.shape[ax], of="take_along_axis")
    xe = unsqueeze(g, x, ax)            # [.., 1, V, ..]
    ie = unsqueeze(g, idx, ax + 1)      # [.., M, 1, ..]
    iota = iota_along(g, x.shape[ax], ax + 1, len(x.shape) + 1, idx.dtype)
    picked = g.apply("where", g.apply("eq", ie, iota), xe, scalar(g, 0, x.dtype))
    return g.apply("sum", picked, axes=(ax + 1,), keepdims=False)


def masked_fill(g: Graph, x: Value, mask: Value, value: float) -> Value:
    return g.apply("where", mask, scalar(g, value, x.dtype), x)


def causal_mask(g: Graph, t: int) -> Value:
    """bool [t, t]: True where column <= row (what a position may attend to)."""
    rows = iota_along(g, t, 0, 2)
    cols = iota_along(g, t, 1, 2)
    return g.apply("ge", rows, cols)


# -- convolution and pooling through unfold (im2col) ---------------------------

def _tuple(v: int | Sequence[int], n: int) -> tuple[int, ...]:
    return (v,) * n if isinstance(v, int) else tuple(v)


def conv(g: Graph, x: Value, w: Value, stride: Any = 1, padding: Any = 0) -> Value:
    """N-d convolution (cross-correlation): x [N, C, *S], w [O, C, *K] -> [N, O, *S'].
    Patches by `unfold`, then one batched matmul (BLAS on CPU)."""
    nsp = len(w.shape) - 2
    kernel = tuple(w.shape[2:])
    patches = g.apply("unfold", x, kernel=kernel, stride=_tuple(stride, nsp),
                      padding=_tuple(padding, nsp))           # [N, C, *K, *S']
    n, c = patches.shape[:2]
    out_sp = patches.shape[2 + nsp:]
    if w.shape[1] != c:
        raise shape_error(g, "conv: the input's channels differ from the weight's",
                          expected=f"x (N {w.shape[1]} ...) for w {fmt(w.shape)}",
                          actual=f"x {fmt(x.shape)}",
                          fix="weights are (out-channels in-channels *kernel)")
    cols = g.apply("reshape", patches, shape=(n, c * prod(kernel), prod(out_sp)))
    wm = g.apply("reshape", w, shape=(w.shape[0], c * prod(kernel)))
    out = g.apply("matmul", wm, cols)                          # [N, O, prod(S')]
    return g.apply("reshape", out, shape=(n, w.shape[0]) + tuple(out_sp))


def shape_error(g: Graph, message: str, **facts: str) -> SexpError:
    """An E-SHAPE diagnostic at the span nodes are being built under."""
    return error(E_SHAPE, message, g._span, notes=list(g._notes), **facts)


def pool(g: Graph, x: Value, kernel: Any, stride: Any = None, kind: str = "max",
         nsp: int = 1) -> Value:
    """max/avg pooling over the last `nsp` axes: unfold, then reduce the window axes."""
    kernel = _tuple(kernel, nsp)
    stride = kernel if stride is None else _tuple(stride, nsp)
    patches = g.apply("unfold", x, kernel=kernel, stride=stride, padding=(0,) * nsp)
    window = tuple(range(2, 2 + nsp))
    if kind == "max":
        return g.apply("amax", patches, axes=window, keepdims=False)
    return mean(g, patches, window)


# -- numpy conveniences ---------------------------------------------------------

def matmul(g: Graph, a: Value, b: Value) -> Value:
    """numpy's matmul, 1-D cases included: a vector gains an axis, then loses it."""
    a2 = unsqueeze(g, a, 0) if len(a.shape) == 1 else a
    b2 = unsqueeze(g, b, -1) if len(b.shape) == 1 else b
    out = g.apply("matmul", a2, b2)
    drop = ((len(out.shape) - 2,) if len(a.shape) == 1 else ()) + (
        (len(out.shape) - 1,) if len(b.shape) == 1 else ())
    return squeeze(g, out, drop) if drop else out


def index(g: Graph, x: Value, key: Any) -> Value:
    """x[key] for basic indexing: ints, slices with positive steps, `...`, None."""
    key = key if isinstance(key, tuple) else (key,)
    if key.count(Ellipsis) > 1:
        raise shape_error(g, "an index has more than one `...`", actual=str(key))
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if used > len(x.shape):
        raise shape_error(g, "too many indices", expected=f"at most {len(x.shape)}",
                          actual=str(used))
    at = key.index(Ellipsis) if Ellipsis in key else len(key)
    # the axes no index names are taken whole, where the `...` is (else at the end)
    key = key[:at] + (slice(None),) * (len(x.shape) - used) + key[at + 1:]
    starts, stops, steps, final = [], [], [], []
    axis = 0
    for k in key:
        if k is None:
            final.append(1)
            continue
        size = x.shape[axis]
        if isinstance(k, int):
            i = k + size if k < 0 else k
            if not 0 <= i < size:
                raise shape_error(g, f"index {k} out of range on axis {axis}",
                                  expected=f"in [{-size}, {size - 1}]", actual=str(k))
            starts.append(i)
            stops.append(i + 1)
            steps.append(1)
        elif isinstance(k, slice):
            starts.append(k.start)
            stops.append(k.stop)
            steps.append(k.step)
            final.append(len(range(*k.indices(size))))
        else:
            raise shape_error(g, f"unsupported index {k!r}",
                              fix="use ints and slices; gather with take")
        axis += 1
    out = x
    if any(s is not None for s in starts + stops + steps):
        out = g.apply("slice", x, starts=tuple(starts), stops=tuple(stops), steps=tuple(steps))
    return g.apply("reshape", out, shape=tuple(final)) if tuple(final) != out.shape else out


def checked(fn: Any, g: Graph, *args: Any) -> Value:
    """Run a composition, turning a shape-rule failure outside any single node
    (a bad axis, say) into a diagnostic at the current span."""
    try:
        return fn(g, *args)
    except ShapeRuleError as exc:
        raise error(exc.code, f"{fn.__name__}: {exc.message}", g._span, expected=exc.expected,
                    actual=exc.actual, fix=exc.fix, notes=list(g._notes)) from None
