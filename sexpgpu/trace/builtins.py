"""The tensor builtins (docs/tensor-builtins.md) as Python functions over Lisp
arguments; each adds IR nodes (through `sexpgpu.ir.build`) at the site of the
user's form."""

from __future__ import annotations

from collections.abc import Callable
from math import prod
from typing import Any

from sexpgpu.diagnostics import error
from sexpgpu.ir import build
from sexpgpu.ir.graph import Graph, Value
from sexpgpu.ir.shapes import ShapeRuleError, require_float
from sexpgpu.ir.types import FLOAT_DTYPES
from sexpgpu.lisp.types import keyword, to_py
from sexpgpu.trace import args as A
from sexpgpu.trace.tensor import TracedTensor, at_site, current, site, wrap

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def registrar(table: dict[str, Callable[..., Any]]) -> Callable[..., Decorator]:
    """A `@builtin("lisp-name", ...)` decorator entering functions into `table`; the
    contract compiler installs each table into its interpreter."""

    def builtin(*names: str) -> Decorator:
        """Register a builtin under its Lisp name(s); shape-rule errors become diagnostics."""

        def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
            checked = _Checked(fn, names[0])
            for name in names:
                table[name] = checked
            return fn

        return deco

    return builtin


BUILTINS: dict[str, Callable[..., Any]] = {}
builtin = registrar(BUILTINS)


class _Checked:
    """A builtin whose shape-rule errors become diagnostics at the caller's line. The
    interpreter reads the arity from `__code__`/`__defaults__`, so they are the wrapped
    function's (wrong argument counts stay E-ARITY)."""

    def __init__(self, fn: Callable[..., Any], name: str):
        self.fn, self.name = fn, name
        self.__code__ = fn.__code__
        self.__defaults__ = fn.__defaults__
        self.__doc__ = fn.__doc__

    def __call__(self, *args: Any) -> Any:
        try:
            return self.fn(*args)
        except ShapeRuleError as exc:
            span, notes = site()
            raise error(exc.code, f"{self.name}: {exc.message}", span, expected=exc.expected,
                        actual=exc.actual, fix=exc.fix or "check the shapes of the arguments "
                        "at this line (`sexpgpu explain` lists every parameter's shape)",
                        notes=list(notes)) from None


# -- coercion -----------------------------------------------------------------


def tensor(fn: str, x: Any, like: Value | None = None) -> Value:
    """A TracedTensor's value, or a number as a scalar constant (of `like`'s dtype)."""
    if isinstance(x, TracedTensor):
        return x.value
    if A.is_number(x):
        g = current().graph
        dtype = like.dtype if like is not None else ("i64" if isinstance(x, int) else "f32")
        if dtype not in FLOAT_DTYPES and not isinstance(x, int):
            dtype = "f32"
        if dtype == "bool":
            dtype = "i64" if isinstance(x, int) else "f32"
        return build.scalar(g, float(x) if dtype in FLOAT_DTYPES else int(x), dtype)
    raise A.fail(f"{fn}: expected a tensor", expected="a tensor or a number", actual=A.show(x))


def promote(g: Graph, a: Value, b: Value) -> tuple[Value, Value]:
    """Integer or boolean meeting float: that side becomes the float's dtype; a boolean
    meeting an integer becomes that integer type. Two different floats stay (E-DTYPE)."""
    if a.dtype == b.dtype:
        return a, b
    if a.dtype in FLOAT_DTYPES and b.dtype not in FLOAT_DTYPES:
        return a, g.apply("cast", b, dtype=a.dtype)
    if b.dtype in FLOAT_DTYPES and a.dtype not in FLOAT_DTYPES:
        return g.apply("cast", a, dtype=b.dtype), b
    if a.dtype == "bool":      # a mask meeting integers counts as 0/1
        return g.apply("cast", a, dtype=b.dtype), b
    if b.dtype == "bool":
        return a, g.apply("cast", b, dtype=a.dtype)
    return a, b


def binary(op: str, a: Any, b: Any) -> TracedTensor:
    """A broadcasting binary op; plain numbers take the tensor's dtype."""
    with at_site() as g:
        av = tensor(op, a, b.value if isinstance(b, TracedTensor) else None)
        bv = tensor(op, b, av)
        av, bv = promote(g, av, bv)
        return TracedTensor(g.apply(op, av, bv))


# the unary ops that take integer tensors as they are (docs/tensors.md); every other
# unary op is float-only, and an integer tensor given to it is E-DTYPE (its rule), never
# silently cast: `(log y)` of class ids is a mistake, `(log (cast y :f32))` a decision
INTEGER_UNARY = frozenset({"neg", "abs", "relu", "sign", "square", "logical_not",
                           "stop_gradient"})


def unary(op: str, x: Any) -> TracedTensor:
    with at_site() as g:
        if not isinstance(x, TracedTensor) and op not in INTEGER_UNARY and A.is_number(x):
            x = float(x)  # a plain number is a float constant: (sigmoid 0) is fine
        return TracedTensor(g.apply(op, tensor(op, x)))


def _float(g: Graph, v: Value) -> Value:
    """mean and var of integers are floats (as numpy's); other reductions keep the dtype."""
    return v if v.dtype in FLOAT_DTYPES else g.apply("cast", v, dtype="f32")


def _float_only(fn: str, v: Value) -> Value:
    """softmax, log-softmax and logsumexp are built from exp: E-DTYPE on integers."""
    require_float(v.type, f"{fn}'s argument")
    return v


# -- generic arithmetic (reached through the evaluator's generic-op hook) ------

BINARY = {"+": "add", "-": "sub", "*": "mul", "/": "div", "expt": "pow", "max": "maximum",
          "min": "minimum", "<": "lt", "<=": "le", ">": "gt", ">=": "ge", "=": "eq",
          "/=": "ne", "==": "eq"}
UNARY = {"exp": "exp", "log": "log", "sqrt": "sqrt", "abs": "abs", "tanh": "tanh",
         "sin": "sin", "cos": "cos", "-": "neg", "/": "recip"}


def generic(name: str, *args: Any) -> Any:
    """`+ - * / expt max min abs exp log sqrt < ...` when an argument is a tensor."""
    name = name.lower()
    if len(args) == 1 and name in UNARY:
        return unary(UNARY[name], args[0])
    if name == "log" and len(args) == 2:
        return binary("div", unary("log", args[0]), unary("log", args[1]))
    if name not in BINARY or not args:
        raise A.fail(f"{name}: not defined on tensors", expected="a number",
                     actual=" ".join(A.show(a) for a in args))
    if name in ("<", "<=", ">", ">=", "=", "/=", "==") and len(args) != 2:
        raise A.fail(f"{name}: compares two tensors", expected="2 arguments",
                     actual=str(len(args)))
    result = args[0]
    for arg in args[1:]:
        result = binary(BINARY[name], result, arg)
    return result


@builtin("==")
def equal(a: Any, b: Any) -> TracedTensor:
    """Elementwise equality -> :bool (CL's `=` compares numbers, so tensors have `==`)."""
    return binary("eq", a, b)


# -- matmul and reductions -------------------------------------------------------


@builtin("@", "matmul")
def matmul(a: Any, b: Any) -> TracedTensor:
    """Batched matrix product with numpy semantics: (..., m, k) @ (..., k, n)."""
    with at_site() as g:
        av, bv = tensor("@", a), tensor("@", b)
        if len(av.shape) == 1:
            av = build.unsqueeze(g, av, 0)
            return TracedTensor(build.squeeze(g, g.apply("matmul", av, _rank2(g, bv)), -2))
        if len(bv.shape) == 1:
            column = build.unsqueeze(g, bv, -1)
            return TracedTensor(build.squeeze(g, g.apply("matmul", av, column), -1))
        return TracedTensor(g.apply("matmul", av, bv))


def _rank2(g: Graph, v: Value) -> Value:
    return build.unsqueeze(g, v, -1) if len(v.shape) == 1 else v


def _reduction(name: str, op: str) -> None:
    def reduce(*args: Any) -> TracedTensor:
        (x,), kw = A.split(name, args, ("axis", "keep"), min_pos=1, max_pos=1)
        with at_site() as g:
            v = tensor(name, x)
            ax = A.axes(name, kw.get("axis"))
            keep = A.flag(kw.get("keep"))
            if op == "sum":
                if v.dtype == "bool":
                    v = g.apply("cast", v, dtype="i64")
                return TracedTensor(g.apply("sum", v, axes=ax, keepdims=keep))
            if op in ("amax", "amin"):
                return TracedTensor(g.apply(op, v, axes=ax, keepdims=keep))
            if op == "logsumexp":
                return TracedTensor(build.logsumexp(g, _float_only(name, v), ax, keep))
            return TracedTensor(getattr(build, op)(g, _float(g, v), ax, keep))

    reduce.__doc__ = f"({name} x &key axis keep): {op} over axis (all by default)"
    builtin(name)(reduce)


for _name, _op in (("sum", "sum"), ("mean", "mean"), ("amax", "amax"), ("amin", "amin"),
                   ("logsumexp", "logsumexp"), ("var", "var")):
    _reduction(_name, _op)


@builtin("argmax")
def argmax(*args: Any) -> TracedTensor:
    (x,), kw = A.split("argmax", args, ("axis", "keep"), min_pos=1, max_pos=1)
    axis = A.integer("argmax", kw.get("axis", -1), "axis")
    with at_site() as g:
        return TracedTensor(g.apply("argmax", tensor("argmax", x), axis=axis,
                              keepdims=A.flag(kw.get("keep"))))


# -- shapes ----------------------------------------------------------------------


@builtin("reshape")
def reshape(x: Any, shape: Any) -> TracedTensor:
    """(reshape x shape): one entry may be -1 (inferred)."""
    dims = list(A.int_list("reshape", shape))
    with at_site() as g:
        v = tensor("reshape", x)
        if dims.count(-1) == 1:
            known = prod(d for d in dims if d != -1)
            if known and v.type.size % known == 0:
                dims[dims.index(-1)] = v.type.size // known
        return TracedTensor(g.apply("reshape", v, shape=tuple(dims)))


@builtin("permute")
def permute(x: Any, perm: Any) -> TracedTensor:
    with at_site() as g:
        return TracedTensor(g.apply("permute", tensor("permute", x),
                              perm=A.int_list("permute", perm, "perm")))


@builtin("transpose")
def transpose(x: Any, a: int = -2, b: int = -1) -> TracedTensor:
    """(transpose x &optional a b): swap two axes, the last two by default."""
    with at_site() as g:
        return TracedTensor(build.transpose(g, tensor("transpose", x), A.integer("transpose", a),
                                      A.integer("transpose", b)))


@builtin("squeeze")
def squeeze(x: Any, axis: Any = None) -> TracedTensor:
    with at_site() as g:
        return TracedTensor(build.squeeze(g, tensor("squeeze", x), A.axes("squeeze", axis)))


@builtin("unsqueeze")
def unsqueeze(x: Any, axis: Any) -> TracedTensor:
    with at_site() as g:
        axis = A.integer("unsqueeze", axis)
        return TracedTensor(build.unsqueeze(g, tensor("unsqueeze", x), axis))


@builtin("broadcast-to")
def broadcast_to(x: Any, shape: Any) -> TracedTensor:
    with at_site() as g:
        return TracedTensor(g.apply("broadcast_to", tensor("broadcast-to", x),
                              shape=A.int_list("broadcast-to", shape)))


@builtin("slice")
def slice_(*args: Any) -> TracedTensor:
    """(slice x :axis a :start s :end e): elements start..end-1 along one axis."""
    (x,), kw = A.split("slice", args, ("axis", "start", "end"), min_pos=1, max_pos=1)
    with at_site() as g:
        v = tensor("slice", x)
        axis = A.integer("slice", kw.get("axis", 0), "axis")
        n = v.shape[axis] if -len(v.shape) <= axis < len(v.shape) else 0
        start = A.integer("slice", kw.get("start", 0), ":start")
        end = A.integer("slice", kw.get("end", n), ":end")
        n_dims = len(v.shape)
        ax = axis % n_dims if n_dims and -n_dims <= axis < n_dims else axis
        starts = tuple(start if i == ax else None for i in range(n_dims))
        stops = tuple(end if i == ax else None for i in range(n_dims))
        return TracedTensor(g.apply("slice", v, starts=starts, stops=stops, steps=None))


def _tensor_list(fn: str, xs: Any) -> list[Value]:
    items = to_py(xs) if not isinstance(xs, list) else xs
    if not items:
        raise A.fail(f"{fn}: needs at least one tensor", expected="a list of tensors",
                     actual=A.show(xs))
    return [tensor(fn, t) for t in items]


@builtin("concat")
def concat(*args: Any) -> TracedTensor:
    """(concat (list a b ...) :axis k)."""
    (xs,), kw = A.split("concat", args, ("axis",), min_pos=1, max_pos=1)
    with at_site() as g:
        return TracedTensor(g.apply("concat", *_tensor_list("concat", xs),
                              axis=A.integer("concat", kw.get("axis", 0), "axis")))


@builtin("stack")
def stack(*args: Any) -> TracedTensor:
    (xs,), kw = A.split("stack", args, ("axis",), min_pos=1, max_pos=1)
    with at_site() as g:
        return TracedTensor(build.stack(g, _tensor_list("stack", xs),
                                  A.integer("stack", kw.get("axis", 0), "axis")))


@builtin("take")
def take(table: Any, idx: Any) -> TracedTensor:
    """(take table idx): rows of `table` (V, ...) at integer `idx` -> (*idx, ...)."""
    with at_site() as g:
        return TracedTensor(g.apply("take", tensor("take", table), tensor("take", idx)))


@builtin("one-hot")
def one_hot(*args: Any) -> TracedTensor:
    (idx, n), kw = A.split("one-hot", args, ("dtype",), min_pos=2, max_pos=2)
    with at_site() as g:
        dtype = A.dtype("one-hot", kw["dtype"]) if "dtype" in kw else "f32"
        n = A.integer("one-hot", n)
        return TracedTensor(build.one_hot(g, tensor("one-hot", idx), n, dtype))


@builtin("where")
def where(cond: Any, a: Any, b: Any) -> TracedTensor:
    with at_site() as g:
        c = tensor("where", cond)
        av = tensor("where", a, b.value if isinstance(b, TracedTensor) else None)
        bv = tensor("where", b, av)
        av, bv = promote(g, av, bv)
        return TracedTensor(g.apply("where", c, av, bv))


@builtin("masked-fill")
def masked_fill(x: Any, mask: Any, value: Any) -> TracedTensor:
    with at_site() as g:
        return TracedTensor(build.masked_fill(g, tensor("masked-fill", x),
                                              tensor("masked-fill", mask),
                                              A.number("masked-fill", value)))


@builtin("causal-mask")
def causal_mask(t: Any) -> TracedTensor:
    """(causal-mask t): bool (t t), true where a position may attend (column <= row)."""
    with at_site() as g:
        return TracedTensor(build.causal_mask(g, A.integer("causal-mask", t)))


@builtin("iota")
def iota(*args: Any) -> TracedTensor:
    (n,), kw = A.split("iota", args, ("dtype",), min_pos=1, max_pos=1)
    with at_site() as g:
        dtype = A.dtype("iota", kw["dtype"]) if "dtype" in kw else "i64"
        return TracedTensor(build.iota_along(g, A.integer("iota", n), 0, 1, dtype))


def _filled(fn: str, args: tuple, value: float | None) -> TracedTensor:
    n_pos = 1 if value is not None else 2
    pos, kw = A.split(fn, args, ("dtype",), min_pos=n_pos, max_pos=n_pos)
    fill = value if value is not None else A.number(fn, pos[1])
    with at_site() as g:
        dtype = A.dtype(fn, kw["dtype"]) if "dtype" in kw else "f32"
        return TracedTensor(g.apply("full", shape=A.int_list(fn, pos[0]), dtype=dtype, value=fill))


@builtin("zeros")
def zeros(*args: Any) -> TracedTensor:
    return _filled("zeros", args, 0.0)


@builtin("ones")
def ones(*args: Any) -> TracedTensor:
    return _filled("ones", args, 1.0)


@builtin("full")
def full(*args: Any) -> TracedTensor:
    return _filled("full", args, None)


@builtin("cast")
def cast(x: Any, dtype: Any) -> TracedTensor:
    with at_site() as g:
        return TracedTensor(g.apply("cast", tensor("cast", x), dtype=A.dtype("cast", dtype)))


# -- activations and normalisers ---------------------------------------------------

# Lisp name -> unary IR op
ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "silu": "silu", "sign": "sign",
               "sigmoid": "sigmoid", "rsqrt": "rsqrt", "square": "square",
               "stop-gradient": "stop_gradient"}
for _lisp, _op in ACTIVATIONS.items():
    builtin(_lisp)(lambda x, _op=_op: unary(_op, x))


@builtin("softmax")
def softmax(*args: Any) -> TracedTensor:
    (x,), kw = A.split("softmax", args, ("axis",), min_pos=1, max_pos=1)
    with at_site() as g:
        v = _float_only("softmax", tensor("softmax", x))
        return TracedTensor(build.softmax(g, v, A.integer("softmax", kw.get("axis", -1), "axis")))


@builtin("log-softmax")
def log_softmax(*args: Any) -> TracedTensor:
    (x,), kw = A.split("log-softmax", args, ("axis",), min_pos=1, max_pos=1)
    with at_site() as g:
        v = _float_only("log-softmax", tensor("log-softmax", x))
        return TracedTensor(build.log_softmax(g, v, A.integer("log-softmax", kw.get("axis", -1))))


@builtin("dropout")
def dropout(x: Any, p: Any) -> TracedTensor:
    """(dropout x p): zero each element with probability p during training, scale by
    1/(1-p); the identity in evaluate graphs. The mask comes from the counter-based RNG."""
    rate = float(A.number("dropout", p, "p"))
    if not 0.0 <= rate < 1.0:
        raise A.fail("dropout: p must be in [0, 1)", expected="0 <= p < 1", actual=str(rate))
    trace = current()
    if trace.mode != "train" or rate == 0.0:
        return x if isinstance(x, TracedTensor) else TracedTensor(tensor("dropout", x))
    with at_site() as g:
        v = tensor("dropout", x)
        seed = trace.rng_input()
        return TracedTensor(g.apply("dropout", v, seed, p=rate, stream=trace.next_stream()))


# -- convolution and pooling ---------------------------------------------------


def _conv(fn: str, args: tuple) -> TracedTensor:
    (x, w), kw = A.split(fn, args, ("stride", "padding"), min_pos=2, max_pos=2)
    stride = A.int_list(fn, kw.get("stride", 1), ":stride")
    padding = A.int_list(fn, kw.get("padding", 0), ":padding")
    nsp = 1 if fn == "conv1d" else 2
    with at_site() as g:
        xv, wv = tensor(fn, x), tensor(fn, w)
        if len(xv.shape) != nsp + 2 or len(wv.shape) != nsp + 2:
            raise build.shape_error(
                g, f"{fn}: input and weight must have rank {nsp + 2}",
                expected="x (N C " + "L" * (nsp == 1) + "H W" * (nsp == 2) + "), w (O C K...)",
                actual=f"x {_fmt(xv.shape)}, w {_fmt(wv.shape)}")
        stride_t = stride * nsp if len(stride) == 1 else stride
        padding_t = padding * nsp if len(padding) == 1 else padding
        return TracedTensor(build.conv(g, xv, wv, stride_t, padding_t))


def _fmt(shape: tuple[int, ...]) -> str:
    return "(" + " ".join(str(d) for d in shape) + ")"


@builtin("conv1d")
def conv1d(*args: Any) -> TracedTensor:
    """(conv1d x w &key stride padding): x (N C L), w (O C K) -> (N O L')."""
    return _conv("conv1d", args)


@builtin("conv2d")
def conv2d(*args: Any) -> TracedTensor:
    """(conv2d x w &key stride padding): x (N C H W), w (O C KH KW)."""
    return _conv("conv2d", args)


def _pool(fn: str, kind: str, args: tuple) -> TracedTensor:
    (x, k), kw = A.split(fn, args, ("stride",), min_pos=2, max_pos=2)
    with at_site() as g:
        v = tensor(fn, x)
        nsp = max(1, len(v.shape) - 2)
        kernel = A.int_list(fn, k, "kernel")
        stride = A.int_list(fn, kw["stride"], ":stride") if "stride" in kw else None
        return TracedTensor(build.pool(g, v, kernel if len(kernel) > 1 else kernel[0],
                                 None if stride is None else (stride if len(stride) > 1
                                                              else stride[0]), kind, nsp))


@builtin("max-pool")
def max_pool(*args: Any) -> TracedTensor:
    return _pool("max-pool", "max", args)


@builtin("avg-pool")
def avg_pool(*args: Any) -> TracedTensor:
    return _pool("avg-pool", "avg", args)


# -- facts about tensors ---------------------------------------------------------


@builtin("shape")
def shape(x: Any) -> Any:
    return A.to_lisp_list(_need("shape", x).shape)


@builtin("dim")
def dim(x: Any, axis: Any) -> int:
    t = _need("dim", x)
    ax = A.integer("dim", axis, "axis")
    if not -len(t.shape) <= ax < len(t.shape):
        raise A.fail(f"dim: axis {ax} out of range", expected=f"an axis of {_fmt(t.shape)}",
                     actual=str(ax))
    return t.shape[ax]


@builtin("dtype")
def dtype(x: Any) -> Any:
    return keyword(_need("dtype", x).dtype.upper())


@builtin("tensorp")
def tensorp(x: Any) -> Any:
    return A.boolean(isinstance(x, TracedTensor))


def _need(fn: str, x: Any) -> TracedTensor:
    if not isinstance(x, TracedTensor):
        raise A.fail(f"{fn}: expected a tensor", expected="a tensor", actual=A.show(x))
    return x


__all__ = ["ACTIVATIONS", "BUILTINS", "UNARY", "generic", "wrap"]
