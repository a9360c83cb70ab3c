"""Pieces of generated source shared by every renderer: dtype conversions,
literals, loads and stores (bf16 is stored as uint16 patterns), and row-major
offsets of a broadcast operand inside a loop's index space."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from math import prod

import numpy as np
from sexpgpu.kernels.bf16 import from_bf16, to_bf16

from sexpgpu.diagnostics import define_code, error
from sexpgpu.ir.graph import Value

E_KERNEL_DTYPE = define_code(
    "E-KERNEL-DTYPE", "dtype has no kernel storage",
    "The kernels store f32, bf16 (as 16-bit patterns), i32, i64 and bool. A value of "
    "another dtype (f16 for now) reached lowering, stored or only inside a fused loop.",
)

# numpy storage of each IR dtype (bf16 as its 16-bit pattern)
STORAGE = {"f32": "float32", "bf16": "uint16", "i32": "int32", "i64": "int64", "bool": "bool_"}
# the scalar type arithmetic on a loaded element produces
COMPUTE = {"f32": "np.float32", "bf16": "np.float32", "i32": "np.int32", "i64": "np.int64",
           "bool": "bool"}


def storage(value: Value) -> str:
    """The numpy dtype name of a value's buffer, or E-KERNEL-DTYPE."""
    try:
        return STORAGE[value.dtype]
    except KeyError:
        raise error(E_KERNEL_DTYPE, f"no kernel storage for dtype {value.dtype}",
                    value.node.span if value.node else None,
                    expected=" | ".join(STORAGE), actual=value.dtype,
                    fix="cast to f32 or bf16 before this op") from None


def convert(dtype: str, expr: str) -> str:
    """`expr` converted to the compute type of `dtype` (numpy's casting rules)."""
    return f"{COMPUTE[dtype]}({expr})"


def literal_text(value: object, dtype: str) -> str:
    """A constant as a Python literal that numba (CPU and CUDA) reads back as the
    value the reference holds: non-finite floats by name (`math.inf`, `-math.inf`,
    `math.nan`); a float of an f32 or bf16 value rounded to that dtype first and
    written as the shortest decimal that rounds back to it (0.9, not
    0.8999999761581421: `np.float32(0.9)` in the text is the same f32)."""
    if hasattr(value, "item"):  # a numpy scalar
        value = value.item()
    if isinstance(value, float) and dtype in ("f32", "bf16"):
        rounded = np.float32(value)
        if dtype == "bf16":
            rounded = from_bf16(to_bf16(np.array([rounded])))[0]
        if math.isfinite(rounded):
            return str(rounded)  # numpy prints an f32 as its shortest round-trip form
        value = float(rounded)
    if isinstance(value, float) and not math.isfinite(value):
        return "math.nan" if math.isnan(value) else ("-math.inf" if value < 0 else "math.inf")
    return repr(value)


def literal(value: object, dtype: str) -> str:
    """A constant as source text in the compute type of `dtype`."""
    return convert(dtype, literal_text(value, dtype))


def trip_count(n: int) -> str:
    """The variable holding a loop's trip count n (set by `trip_counts`). Why: over
    a literal count LLVM unrolled such a loop (a row of 32 or 128) into scalar
    moves; over a variable it vectorises it."""
    return f"nc{n}_"


def trip_counts(*counts: int) -> list[str]:
    """The lines setting `trip_count`'s variables of `counts`."""
    return [f"{trip_count(n)} = {n}" for n in sorted(set(counts))]


def load(buffer: str, dtype: str, offset: str) -> str:
    if dtype == "bf16":
        return f"bf16_to_f32({buffer}[{offset}])"
    return f"{buffer}[{offset}]"


def store(buffer: str, dtype: str, offset: str, expr: str) -> str:
    if dtype == "bf16":
        return f"{buffer}[{offset}] = f32_to_bf16({expr})"
    if dtype == "f32":
        # numba's setitem rounds a float64 to float32 as np.float32() would:
        # one call fewer to type per store
        return f"{buffer}[{offset}] = {expr}"
    return f"{buffer}[{offset}] = {convert(dtype, expr)}"


def strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    step = 1
    for d in reversed(shape):
        out.append(step)
        step *= d
    return tuple(reversed(out))


def affine(terms: list[tuple[str, int]], const: int = 0) -> str:
    """`i0 * 12 + i1 * 3 + 4` from (index, coefficient) pairs, dropping zeros."""
    parts = [name if c == 1 else f"{name} * {c}" for name, c in terms if c != 0]
    if const or not parts:
        parts.append(str(const))
    return " + ".join(parts)


def broadcast_offset(shape: tuple[int, ...], domain: tuple[int, ...],
                     index: list[str]) -> str:
    """Offset of an operand of `shape` broadcast (right-aligned) into `domain`."""
    lead = len(domain) - len(shape)
    st = strides(shape)
    return affine([(index[lead + j], st[j]) for j, d in enumerate(shape) if d != 1])


# a chunk index masked with this is provably non-negative, and so is every index made
# from it: numba's wraparound test on it folds away and the inner loops vectorise (a
# layer norm's loop over an index of unknown sign ran 9x slower)
MASK_HEX = f"{(1 << 40) - 1:#x}"

# the step's error buffer (int64 [where, value]): kernels that check indices
# report the first bad one there (`index_error`), the launcher raises E-INDEX
ERR = "err_"


@dataclass
class Reduction:
    """A fused reduction's parts, for a launcher that splits the reduced loop
    between threads: `start` sets the accumulators, `inner` runs per reduced
    element (over `reduced`: loop variables and sizes), `finish` stores the results;
    `accs` says how to combine two threads' accumulators: (variable, NaN flag
    variable or None, "add" | "max" | "min", output dtype)."""

    reduced: list[tuple[str, int]]
    start: list[str]
    inner: list[str]
    finish: list[str]
    accs: list[tuple[str, str | None, str, str]]


@dataclass
class KernelCode:
    """A kernel as its launchers need it: the parallel index space (`outer`: loop
    variables and sizes, row-major) and the body run once per outer point. `cpu`,
    when set, replaces the whole CPU loop nest (e.g. a BLAS call)."""

    name: str
    params: list[str]
    outer: list[tuple[str, int]]
    body: list[str]
    cpu: list[str] | None = None
    work: int = 0                       # element operations: whether the CPU loop is parallel
    # a CPU override whose prange is worth its threads only where the kernel reads
    # what a parallel kernel left in every core's cache (codegen's `_spread_reads`)
    marginal: bool = False
    reads: list[str] = field(default_factory=list)   # the input buffers among params
    writes: list[str] = field(default_factory=list)  # the output buffers among params
    comment: list[str] = field(default_factory=list)
    # every integer of the CPU text may become an argument: a BLAS call's speed
    # does not depend on literal sizes, so all matmuls of a dtype/layout share one
    sizes_as_args: bool = False
    # a split sgemm's text as one call (chunks: 0), for a run of batch bands, and
    # what kernels/bands.py found of it for each batch tried (rows -> Banded or None)
    serial_cpu: list[str] | None = None
    bands: dict = field(default_factory=dict)
    # index checks this kernel reports to the error buffer: where -> (node, axis size)
    index_checks: dict[int, tuple[object, int]] = field(default_factory=dict)
    # what the CUDA launcher needs beyond `outer` and `body` (kernels/cuda_codegen.py):
    # a matmul's operands (kernels.gemm.Gemm), a reduction's parts for a block per
    # row, and a variant with atomics (outer, body, buffers zeroed first)
    gemm: object | None = None
    reduction: Reduction | None = None
    atomic: tuple[list[tuple[str, int]], list[str], list[str]] | None = None

    # elements a loop kernel reads from each operand (its domain: a reduction's
    # outputs times its reduced length), when it reads more than it writes
    domain_size: int = 0

    @property
    def size(self) -> int:
        return prod(n for _, n in self.outer)
