"""Code generation for CUDA: each kernel of the plan becomes a `@cuda.jit` function in
its own cached module (shared by every graph with the same text, as on the CPU),
one of five families chosen from its shapes, and a step module whose `launches`
lists every launch of the step in order; kernels.cuda_backend runs that list."""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from sexpgpu.kernels.cache import module_name
from sexpgpu.kernels.codegen import (
    _INDEX_ERROR,
    _SIMULATED_MATH,
    Generated,
    _header,
    _helpers,
    _indent,
    _note,
    _parametrized,
    _renamed,
    helper_calls,
)
from sexpgpu.kernels.gemm import Gemm
from sexpgpu.kernels.lower import KernelPlan
from sexpgpu.kernels.memplan import MemoryPlan
from sexpgpu.kernels.render import Names
from sexpgpu.kernels.source import ERR, KernelCode, load, storage, store

from sexpgpu import env


@dataclass(frozen=True)
class Launcher:
    """How kernels are launched: threads and blocks of each family, and whether the
    shared-memory families (a block per row, tiled matmul) are used at all."""

    threads: int            # threads a block, elementwise kernels (fewer for small ones)
    max_blocks: int         # elementwise kernels stride over the rest (grid-stride loops)
    row_threads: int        # a block per row: threads sharing one row's reduction
    full_threads: int       # ... when the whole tensor is one row (a loss, a norm)
    row_min: int            # reduced elements from which a row gets a block of threads
    shared: bool            # a block per row and the tiled matmul (else a thread each)


GPU = Launcher(threads=256, max_blocks=4096, row_threads=256, full_threads=1024, row_min=32,
               shared=True)
# numba's simulator runs every CUDA thread as a Python thread and a barrier costs about a
# millisecond a thread, so its preset launches one block of 32 threads per kernel, each
# looping over many points, and no shared-memory family: the tiny MLP's step took 13 s
# with the GPU preset, under 1 s with this one. tests/test_cuda_kernels.py runs the
# GPU preset's families in the simulator on small shapes.
SIMULATOR = Launcher(threads=32, max_blocks=1, row_threads=32, full_threads=32,
                     row_min=1 << 62, shared=False)
PRESET: Launcher | None = None   # tests set GPU to run its families in the simulator


def launcher() -> Launcher:
    if PRESET is not None:
        return PRESET
    return SIMULATOR if env.cuda_simulator() else GPU


MAX_ROWS = 65535         # blocks of a row kernel; more rows are strided over
TILE = 16                # the tiled matmul's tile edge (a TILE x TILE block of threads)
MAX_BATCH = 65535        # gridDim.z of the tiled matmul; a larger batch is strided over

# the shared-memory element type of an accumulator of each dtype
_SHARED = {"f32": "numba.float32", "bf16": "numba.float32", "i32": "numba.int32",
           "i64": "numba.int64"}
_COMBINE2 = {"add": "{a} + {b}", "max": "max({a}, {b})", "min": "min({a}, {b})"}
_NUMBA_TYPE = {"float32": "float32", "uint16": "uint16", "int32": "int32", "int64": "int64",
               "bool_": "boolean"}


@dataclass
class Launch:
    """One launch of the step: a kernel of the plan (`code` its index) or a helper
    (zeroing before atomics, copying an update back, the step's record)."""

    name: str
    family: str                 # elementwise | rows | gemm | atomic | zero | copy | record
    grid: tuple[int, ...]
    block: tuple[int, ...]
    shared_bytes: int = 0       # static shared memory a block
    code: int | None = None     # index into Generated.codes
    module: str | None = None   # the kernel module's name (None: defined in the step module)
    args: list[str] = field(default_factory=list)

    @property
    def threads(self) -> int:
        return prod(self.grid) * prod(self.block)


@dataclass
class KernelModule:
    """A kernel function's module and its argument types (numba type names), for
    ahead-of-time PTX (kernels/ptx.py)."""

    source: str
    argtypes: list[str]


def _elementwise_config(size: int) -> tuple[tuple[int], tuple[int]]:
    lc = launcher()
    threads = min(lc.threads, max(32, -(-size // 32) * 32))
    return (max(1, min(lc.max_blocks, -(-size // threads))),), (threads,)


def _decompose(outer: list[tuple[str, int]], flat: str, depth: int) -> list[str]:
    """Lines setting the loop variables of `outer` (row-major) from index `flat`."""
    lines = []
    rest = flat
    for k in range(len(outer) - 1, -1, -1):
        var, size = outer[k]
        if k == 0:
            lines.append(f"{var} = {rest}")
        else:
            lines += [f"{var} = {rest} % {size}", f"rem_ = {rest} // {size}"]
            rest = "rem_"
    return _indent(lines, depth)


def _uses_rows(code: KernelCode) -> bool:
    """A reduction gets a block per output element (row) when each row has enough
    elements to share, and its output dtype has a shared-memory type."""
    red = code.reduction
    lc = launcher()
    if red is None or not lc.shared or any(dt not in _SHARED for _, _, _, dt in red.accs):
        return False
    reduced = prod(n for _, n in red.reduced)
    rows = code.size
    return reduced >= lc.row_min and (rows <= 4096 or reduced >= rows)


# -- the five families: each returns (kernel lines after the def, launch config) -----

def _elementwise(body: list[str], outer: list[tuple[str, int]]) -> tuple[list[str], tuple]:
    """A thread per outer point, striding over the rest."""
    size = max(1, prod(n for _, n in outer))
    grid, block = _elementwise_config(size)
    lines = [f"for tid_ in range(cuda.grid(1), {size}, cuda.gridsize(1)):"]
    lines += _decompose(outer or [("i_", 1)], "tid_", 1) + _indent(body, 1)
    return lines, (grid, block, 0)


def _rows(code: KernelCode, start: list[str], inner: list[str], finish: list[str]
          ) -> tuple[list[str], tuple]:
    """A block per output element: its threads split the reduced elements, each
    keeps its own accumulators, then a tree in shared memory combines them."""
    red = code.reduction
    rows = max(1, code.size)
    reduced = prod(n for _, n in red.reduced)
    cap = launcher().full_threads if rows == 1 else launcher().row_threads
    threads = 32
    while threads < min(cap, reduced):
        threads *= 2
    lines: list[str] = []
    shared = 0
    for k, (_, nan, _, dtype) in enumerate(red.accs):
        lines.append(f"sh{k}_ = cuda.shared.array({threads}, {_SHARED[dtype]})")
        shared += threads * (8 if dtype == "i64" else 4)
        if nan is not None:
            lines.append(f"nf{k}_ = cuda.shared.array({threads}, numba.int32)")
            shared += threads * 4
    lines += ["t_ = cuda.threadIdx.x",
              f"for row_ in range(cuda.blockIdx.x, {rows}, cuda.gridDim.x):"]
    lines += _decompose(code.outer, "row_", 1) if code.outer else []
    lines += _indent(start, 1)
    lines.append(f"    for r_ in range(t_, {reduced}, {threads}):")
    lines += _decompose(red.reduced, "r_", 2) + _indent(inner, 2)
    for k, (acc, nan, _, _) in enumerate(red.accs):
        lines.append(f"    sh{k}_[t_] = {acc}")
        if nan is not None:
            lines.append(f"    nf{k}_[t_] = 1 if {nan} else 0")
    lines += ["    cuda.syncthreads()", f"    s_ = {threads // 2}", "    while s_ > 0:",
              "        if t_ < s_:"]
    for k, (_, nan, combine, _) in enumerate(red.accs):
        both = _COMBINE2[combine].format(a=f"sh{k}_[t_]", b=f"sh{k}_[t_ + s_]")
        lines.append(f"            sh{k}_[t_] = {both}")
        if nan is not None:
            lines.append(f"            nf{k}_[t_] = nf{k}_[t_] | nf{k}_[t_ + s_]")
    lines += ["        cuda.syncthreads()", "        s_ //= 2", "    if t_ == 0:"]
    for k, (acc, nan, _, _) in enumerate(red.accs):
        lines.append(f"        {acc} = sh{k}_[0]")
        if nan is not None:
            lines.append(f"        {nan} = nf{k}_[0] != 0")
    lines += _indent(finish, 2) + ["    cuda.syncthreads()"]
    return lines, ((min(rows, MAX_ROWS),), (threads,), shared)


def _gemm(g: Gemm, expressions: list[str], dtype: str) -> tuple[list[str], tuple]:
    """A tiled product: a TILE x TILE block computes a TILE x TILE tile of one batch's
    output, staging tiles of both operands in shared memory."""
    a_at, b_at, c_at = expressions
    shared_type = _SHARED.get(dtype, "numba.float64")
    count = max(1, g.count)
    bidx = [(f"i{d}", n) for d, n in enumerate(g.batch)]
    pad = TILE + 1  # one column of padding: the column reads hit different banks
    lines = [f"sa_ = cuda.shared.array(({TILE}, {pad}), {shared_type})",
             f"sb_ = cuda.shared.array(({TILE}, {pad}), {shared_type})",
             "tx_ = cuda.threadIdx.x",
             "ty_ = cuda.threadIdx.y",
             f"c = cuda.blockIdx.x * {TILE} + tx_",
             f"r = cuda.blockIdx.y * {TILE} + ty_",
             f"for bz_ in range(cuda.blockIdx.z, {count}, cuda.gridDim.z):"]
    lines += _decompose(bidx, "bz_", 1) if bidx else []
    lines += [f"    acc = {shared_type}(0)",
              f"    for kt_ in range(0, {g.k}, {TILE}):",
              "        j = kt_ + tx_",
              f"        if r < {g.m} and j < {g.k}:",
              f"            sa_[ty_, tx_] = {load(g.a.buf, g.a.dtype, a_at)}",
              "        else:",
              "            sa_[ty_, tx_] = 0",
              "        j = kt_ + ty_",
              f"        if j < {g.k} and c < {g.n}:",
              f"            sb_[ty_, tx_] = {load(g.b.buf, g.b.dtype, b_at)}",
              "        else:",
              "            sb_[ty_, tx_] = 0",
              "        cuda.syncthreads()",
              f"        for q_ in range({TILE}):",
              "            acc += sa_[ty_, q_] * sb_[q_, tx_]",
              "        cuda.syncthreads()",
              f"    if r < {g.m} and c < {g.n}:",
              "        " + store(g.c.buf, g.c.dtype, c_at, "acc")]
    grid = (max(1, -(-g.n // TILE)), max(1, -(-g.m // TILE)), min(count, MAX_BATCH))
    size = 8 if shared_type.endswith(("64",)) else 4
    return lines, (grid, (TILE, TILE), 2 * TILE * pad * size)


def _gemm_expressions(g: Gemm) -> list[str]:
    bidx = [f"i{d}" for d in range(len(g.batch))]
    return [g.a.at(bidx, "r", "j"), g.b.at(bidx, "j", "c"), g.c.at(bidx, "r", "c")]


# -- modules -----------------------------------------------------------------------

def _kernel_module(args: list[str], lines: list[str], ops: str) -> str:
    """One kernel function's module: nothing in it names a graph, so graphs with the
    same kernel text import (and numba-cuda compiles and caches) it once."""
    out = [f'"""SexpGPU CUDA kernel ({ops}); generated by kernels.cuda_codegen, do not edit."""',
           "", "import math", "", "import numba", "import numpy as np",
           "from numba import cuda", ""]
    simulated = env.cuda_simulator()
    if simulated:
        out += _SIMULATED_MATH
    calls = helper_calls(lines)
    if calls:
        out += _helpers("@cuda.jit(device=True)", "cuda", used=calls)
    if any("index_error(" in line for line in lines):
        out += ["", "", "@cuda.jit(device=True)"] + _INDEX_ERROR["cuda"]
    decorator = "@cuda.jit" if simulated else "@cuda.jit(cache=True)"
    out += ["", "", decorator, f"def kernel({', '.join(args)}):"] + _indent(lines, 1)
    return "\n".join(out) + "\n"


def _positional(params: list[str]) -> list[str]:
    return [f"p{i}" for i in range(len(params))]


def _kernel_lines(code: KernelCode) -> tuple[str, list[str], list[str], tuple, list[str]]:
    """(family, kernel lines with positional buffers and integer arguments, those
    integers' values, launch config, buffers zeroed before the launch)."""
    rename = _renamed  # buffers to p0, p1, ...; values to t0, t1, ...
    if code.gemm is not None and launcher().shared and not _row_gemm_fallback(code):
        exprs, ints = _parametrized(rename(_gemm_expressions(code.gemm), code))
        g = code.gemm
        renamed = Gemm(g.batch, g.m, g.n, g.k, *(
            type(x)(rename([x.buf], code)[0], x.dtype, x.offset, x.batch, x.rows, x.cols)
            for x in (g.a, g.b, g.c)))
        lines, config = _gemm(renamed, exprs, g.c.dtype)
        return "gemm", lines, ints, config, []
    if code.atomic is not None:
        points, body, zero = code.atomic
        body, ints = _parametrized(rename(body, code))
        lines, config = _elementwise(body, points)
        return "atomic", lines, ints, config, zero
    if _uses_rows(code):
        red = code.reduction
        parts = red.start + ["#"] + red.inner + ["#"] + red.finish
        parts, ints = _parametrized(rename(parts, code))
        cut1 = parts.index("#")
        cut2 = parts.index("#", cut1 + 1)
        lines, config = _rows(code, parts[:cut1], parts[cut1 + 1:cut2], parts[cut2 + 1:])
        return "rows", lines, ints, config, []
    body, ints = _parametrized(rename(code.body, code))
    lines, config = _elementwise(body, code.outer)
    return "elementwise", lines, ints, config, []


def _row_gemm_fallback(code: KernelCode) -> bool:
    """A product with an empty inner dimension: the per-element body writes zeros."""
    g = code.gemm
    return g.m * g.n == 0 or g.k == 0


_ZERO = ["for i in range(cuda.grid(1), p0.size, cuda.gridsize(1)):", "    p0[i] = 0"]
_COPY = ["for i in range(cuda.grid(1), p0.size, cuda.gridsize(1)):", "    p0[i] = p1[i]"]


def _record_kernel(scalars: list[tuple[str, str]], guard: list[int], mode: str,
                   err: bool) -> list[str]:
    """The step's record: its scalar outputs (or their sum over a step's
    microbatches) in one small f64 buffer read at the log cadence, the number of
    calls, and the first call whose guarded outputs were not finite (or whose
    indices were bad): the loop reads this one buffer, not each output.
    rec = [value..., calls, first non-finite call, first bad-index call]."""
    n = len(scalars)
    args = ["rec_"] + [buf for buf, _ in scalars] + ([ERR] if err else [])
    lines = ["@cuda.jit", f"def record_({', '.join(args)}):",
             "    if cuda.grid(1) != 0:", "        return",
             f"    calls = rec_[{n}] + 1", f"    rec_[{n}] = calls", "    bad = False"]
    for k, (buf, _) in enumerate(scalars):
        value = f"numba.float64({buf}[0])"
        if mode == "sum":
            lines.append(f"    rec_[{k}] = rec_[{k}] + {value}")
        else:
            lines.append(f"    rec_[{k}] = {value}")
        if k in guard:  # NaN, or an infinity
            lines.append(f"    if rec_[{k}] != rec_[{k}] or abs(rec_[{k}]) == math.inf:")
            lines.append("        bad = True")
    lines += [f"    if bad and rec_[{n + 1}] == 0:", f"        rec_[{n + 1}] = calls"]
    if err:
        lines += [f"    if {ERR}[0] != 0 and rec_[{n + 2}] == 0:", f"        rec_[{n + 2}] = calls"]
    return lines


def generate_cuda(program: KernelPlan, plan: MemoryPlan, names: Names, codes: list[KernelCode],
                  digest: str, params: list[str], copies: list[tuple[str, str]],
                  record: tuple[list[str], str] | None = None) -> Generated:
    """The step module and its kernel modules. `record`: (guarded output names,
    "last" | "sum") for a record kernel over the scalar outputs (see `_record_kernel`)."""
    dtype_of = {names.buf(v): storage(v) for v in program.graph.inputs}
    dtype_of.update({names.buf(v): storage(v) for v in plan.slot_of})
    dtype_of[ERR] = "int64"
    modules: dict[str, KernelModule] = {}
    imports: list[str] = []
    launches: list[Launch] = []
    functions: dict[str, str] = {}
    fn_of: dict[str, str] = {}       # launch name -> function name in the step module
    index_of: dict[str, dict] = {}   # what kernels.cache.record writes, as on the CPU
    for index, code in enumerate(codes):
        if code.size == 0:
            continue
        family, lines, ints, (grid, block, shared), zero = _kernel_lines(code)
        args = _positional(code.params) + [f"n{i}" for i in range(len(ints))]
        ops = ", ".join(dict.fromkeys(c.split(" at ")[0] for c in code.comment))
        source = _kernel_module(args, lines, ops)
        name = module_name(source)
        if source not in functions:
            functions[source] = f"f{len(functions)}"
            argtypes = [f"{_NUMBA_TYPE[dtype_of[p]]}[::1]" for p in code.params]
            modules[source] = KernelModule(source, argtypes + ["int64"] * len(ints))
            imports.append(f"from {name} import kernel as {functions[source]}  # {ops}")
        for buf in zero:
            launches.append(Launch(f"{code.name}.zero", "zero", *_elementwise_config(
                _buffer_size(buf, program, plan, names)), args=[buf]))
        launches.append(Launch(code.name, family, grid, block, shared, index, name,
                               code.params + ints))
        fn_of[code.name] = functions[source]
        entry = index_of.setdefault(name, {"ops": [], "sites": [], "params": {}})
        _note(entry, code)
        entry["params"].setdefault(code.name, dict(zip(args, code.params)))
    for t, v in copies:
        launches.append(Launch(f"copy {t}", "copy", *_elementwise_config(
            _buffer_size(t, program, plan, names)), args=[t, v]))
    lines = _header(program, codes, digest, "cuda")
    lines += ["", "import math", "", "import numba", "import numpy as np",
              "from numba import cuda", ""] + imports
    if env.cuda_simulator():
        lines += [""] + _SIMULATED_MATH
    lines += ["", "", "@cuda.jit"] + ["def zero_(p0):"] + _indent(_ZERO, 1)
    lines += ["", "", "@cuda.jit"] + ["def copy_(p0, p1):"] + _indent(_COPY, 1)
    record_args: list[str] = []
    if record is not None:
        scalars = [(names.buf(v), name) for name, v in program.outputs.items()
                   if v.shape == () and v.dtype != "bf16"]
        guard = [k for k, (_, name) in enumerate(scalars) if name in record[0]]
        lines += ["", ""] + _record_kernel(scalars, guard, record[1], ERR in params)
        record_args = [buf for buf, _ in scalars] + ([ERR] if ERR in params else [])
        launches.append(Launch("record", "record", (1,), (1,), args=["rec_"] + record_args))
    lines += ["", "", f"def launches({', '.join(params + (['rec_'] if record else []))}):",
              '    """Every launch of the step, in order: (name, kernel, grid, block, '
              'arguments)."""', "    return ["]
    for launch in launches:
        fn = {"zero": "zero_", "copy": "copy_", "record": "record_"}.get(launch.family)
        fn = fn or fn_of[launch.name]
        args = ", ".join(launch.args) + ("," if len(launch.args) == 1 else "")
        lines.append(f"        ({launch.name!r}, {fn}, {launch.grid}, {launch.block}, ({args})),")
    lines.append("    ]")
    recorded = [name for _, name in scalars] if record is not None else []
    return Generated("\n".join(lines) + "\n", params, codes, digest,
                     [m.source for m in modules.values()], launches=launches,
                     modules=list(modules.values()), record=recorded, index=index_of)


def _buffer_size(buf: str, program: KernelPlan, plan: MemoryPlan, names: Names) -> int:
    for v in list(program.graph.inputs) + list(plan.slot_of):
        if names.buf(v) == buf:  # a stored value's view in the arena is its own size
            return max(1, prod(v.shape))
    raise KeyError(buf)
