"""Random ops from the counter-based generator in `ir/rng.py`: dropout (element i
of the output keeps x[i] when uniform(seed, stream, i) >= p) and rand, randn,
randint (element i is drawn from (seed, stream, i)). The seed is a tensor input
(role "rng"), so each step draws anew without recompiling; in Lisp each call
site takes its own stream."""

from __future__ import annotations

from sexpgpu.ir.ops._define import zero_vjp
from sexpgpu.ir.ops._sampling import values
from sexpgpu.ir.ops.opdef import Arg, OpDef
from sexpgpu.ir.shapes import E_DTYPE, ShapeRuleError, fmt, require_dtype, require_float
from sexpgpu.ir.types import FLOAT_DTYPES, INT_DTYPES, TensorType
from sexpgpu.lazynumpy import np

# the ops this family defines, in order; ops/registry.py gathers every family's
OPS: list[OpDef] = []


def _rng():
    # the generator imports numpy at import: loaded when a value is first drawn
    from sexpgpu.ir import rng
    return rng


def _dropout_infer(types: list[TensorType], attrs: dict) -> TensorType:
    x, seed = types
    require_float(x, "dropout's argument")
    require_dtype(seed, INT_DTYPES, "dropout's seed")
    if seed.shape != ():
        raise ShapeRuleError("the seed must be a scalar", expected="()", actual=fmt(seed.shape))
    if not 0.0 <= attrs["p"] < 1.0:
        raise ShapeRuleError("dropout probability p must be in [0, 1)", actual=str(attrs["p"]))
    return x


def keep_mask(seed: int, stream: int, shape: tuple[int, ...], p: float) -> np.ndarray:
    """The elements dropout keeps: the same bits on every launcher."""
    return _rng().uniform_array(int(seed), int(stream), tuple(shape)) >= np.float32(p)


def _dropout_reference(x: np.ndarray, seed: np.ndarray, p: float, stream: int = 0) -> np.ndarray:
    mask = keep_mask(int(seed), stream, x.shape, p)
    return np.where(mask, x * (1.0 / (1.0 - p)), 0.0).astype(x.dtype)


def _dropout_vjp(g, node, cts):
    # the same mask (same seed, stream and element index) scales the cotangent
    return [g.apply("dropout", cts[0], node.inputs[1], **node.attrs), None]


def _dropout_build(g, x, seed, p: float, stream: int = 0):
    """p = 0 keeps everything: no kernel."""
    return x if p == 0 else g.apply("dropout", x, seed, p=p, stream=stream)


def _dropout_samples(rng: np.random.Generator) -> list:
    return [([values(rng, (4, 5)), np.array(7)], {"p": 0.3, "stream": 1}),
            ([values(rng, (0, 3)), np.array(1)], {"p": 0.5, "stream": 0})]


OPS.append(OpDef("dropout", _dropout_infer, _dropout_reference, _dropout_vjp, kind="opaque",
                 samples=_dropout_samples, extra={"rng": "uniform"},
                 doc="zero each element with probability p, scale the rest by 1/(1-p); "
                     "Lisp: while training only, the identity in evaluate graphs",
                 inputs=("x", "seed:rng"),
                 args=(Arg("p", "number", positional=True), Arg("stream", "stream", 0)),
                 lisp=("dropout",), function="dropout", integers="reject",
                 build=_dropout_build, train_only=True))


# -- rand, randn, randint ----------------------------------------------------------------

def _draw_infer(name: str, dtypes: frozenset[str]):
    def infer(types: list[TensorType], attrs: dict) -> TensorType:
        seed = types[0]
        require_dtype(seed, INT_DTYPES, f"{name}'s seed")
        if seed.shape != ():
            raise ShapeRuleError("the seed must be a scalar", expected="()", actual=fmt(seed.shape))
        shape = tuple(attrs["shape"])
        if any(d < 0 for d in shape):
            raise ShapeRuleError("a shape needs sizes >= 0", actual=fmt(shape))
        dtype = attrs.get("dtype", "i64" if name == "randint" else "f32")
        if dtype not in dtypes:
            raise ShapeRuleError(f"{name} makes {' or '.join(sorted(dtypes))}",
                                 expected=" | ".join(sorted(dtypes)), actual=dtype, code=E_DTYPE)
        if name == "randint" and not attrs["low"] < attrs["high"]:
            raise ShapeRuleError("randint needs low < high",
                                 actual=f"low {attrs['low']}, high {attrs['high']}")
        return TensorType(shape, dtype)
    return infer


def _randint_reference(seed, shape, low, high, stream=0, dtype="i64"):
    index = np.arange(int(np.prod(shape)), dtype=np.uint64)
    drawn = _rng().bits(int(seed), stream, index) % np.uint64(high - low)
    return (drawn.astype(np.int64) + low).reshape(shape)


def _draw_samples(extra: dict):
    return lambda rng: [([np.array(7)], {"shape": (3, 4), "stream": 2, **extra}),
                        ([np.array(3)], {"shape": (), "stream": 0, **extra}),
                        ([np.array(5)], {"shape": (0, 2), "stream": 1, **extra})]


_SHAPE = Arg("shape", "shape", positional=True)
_STREAM = Arg("stream", "stream", 0)
OPS.append(OpDef(
    "rand", _draw_infer("rand", FLOAT_DTYPES),
    lambda seed, shape, stream=0, dtype="f32":
        _rng().uniform_array(int(seed), stream, tuple(shape)),
    zero_vjp, kind="opaque", samples=_draw_samples({}), inputs=("seed:rng",),
    args=(_SHAPE, Arg("dtype", "dtype", "f32"), _STREAM), lisp=("rand",), function="rand",
    extra={"gradient": "-"},
    doc="uniform in [0, 1) from the counter-based generator (ir/rng.py): element i of "
        "stream s is uniform(seed, s, i); Lisp draws a new stream per call"))
OPS.append(OpDef(
    "randn", _draw_infer("randn", FLOAT_DTYPES),
    lambda seed, shape, stream=0, dtype="f32":
        _rng().normal_array(int(seed), stream, tuple(shape)),
    zero_vjp, kind="opaque", samples=_draw_samples({}), inputs=("seed:rng",),
    args=(_SHAPE, Arg("dtype", "dtype", "f32"), _STREAM), lisp=("randn",), function="randn",
    extra={"gradient": "-"},
    doc="standard normal (Box-Muller over one hash) from the counter-based generator"))
OPS.append(OpDef(
    "randint", _draw_infer("randint", INT_DTYPES), _randint_reference, None, kind="opaque",
    samples=_draw_samples({"low": -2, "high": 5}), inputs=("seed:rng",),
    args=(Arg("low", "int", positional=True), Arg("high", "int", positional=True), _SHAPE,
          Arg("dtype", "dtype", "i64"), _STREAM), lisp=("randint",), function="randint",
    doc="integers in [low, high): low + the hash mod (high - low) (PyTorch's argument "
        "order)"))
