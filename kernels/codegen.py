"""Code generation: one Python module per (graph, device) whose plain-Python `step`
runs every kernel in order: on the CPU each distinct kernel text is a `numba.njit`
function in its own module, shared by all graphs; CUDA is kernels/cuda_codegen.py."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import re
import textwrap
from dataclasses import dataclass, field
from math import prod
from typing import Any

import numpy as np
from sexpgpu.kernels import bands, bf16, mathfn, scalars, threads
from sexpgpu.kernels.cache import module_name
from sexpgpu.kernels.lower import KernelPlan
from sexpgpu.kernels.memplan import MemoryPlan, Together, plan_memory
from sexpgpu.kernels.render import Names, render
from sexpgpu.kernels.source import ERR, MASK_HEX, KernelCode, storage

from sexpgpu.ir import rng
from sexpgpu.ir.graph import Value

# a single loop this long takes its trip count as an argument (see `_flat`); short
# ones keep it literal, for LLVM to unroll (the GRU's loops of 6 ran 2x slower).
# From 64 trips a loop's vector body runs at least once either way: the train
# step's loss over a batch of 100 and the evaluation's over 1000 share a function
FLAT_SHARED_TRIPS = 64


@dataclass
class StepParts:
    """The launcher-independent pieces of a step module (see `step_parts`)."""

    names: Names
    codes: list[KernelCode]
    digest: str
    params: list[str]
    copies: list[tuple[str, str]]
    dtypes: dict[str, str]      # buffer name -> numpy storage dtype
    # buffer name -> its elements, its element's bytes, and where its bytes are:
    # (the arena or the input's own memory, first byte, end)
    sizes: dict[str, int] = field(default_factory=dict)
    itemsizes: dict[str, int] = field(default_factory=dict)
    places: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    stored: dict[str, Value] = field(default_factory=dict)  # an arena buffer's value


@dataclass
class Generated:
    source: str
    params: list[str]          # step's parameters: buffer names, inputs first
    codes: list[KernelCode]
    graph_hash: str
    # CPU: one module per distinct kernel function, loaded before `source` (which
    # imports them by module name); shared by every graph that has the same text
    kernel_sources: list[str] = field(default_factory=list)
    # CUDA (kernels/cuda_codegen.py): every launch of the step in order, the kernel
    # modules with their argument types, the scalar outputs the record kernel keeps
    launches: list = field(default_factory=list)
    modules: list = field(default_factory=list)
    record: list[str] = field(default_factory=list)
    # what the cache's index.jsonl records: module -> ops, sites and what its
    # parameters hold in this graph (kernels.cache.record)
    index: dict[str, dict] = field(default_factory=dict)

    @property
    def index_checks(self) -> dict[int, tuple]:
        """Every kernel's index checks: where -> (node, axis size). When there are
        any, the step's last parameter is the error buffer (source.ERR)."""
        return {w: c for code in self.codes for w, c in code.index_checks.items()}


# numba's CUDA simulator runs kernels as Python, where math.exp(1e4) raises
# OverflowError and math.log(0.0) ValueError; a GPU's math returns inf, -inf or
# NaN as numpy does, so in the simulator the kernels' `math` is numpy's
_SIMULATED_MATH = [
    "# simulator only: IEEE results (inf, NaN) where Python's math raises",
    "import math as _math",
    "math = type('math', (), {**{n: getattr(_math, n) for n in dir(_math) if n[0] != '_'},",
    "                         **{n: staticmethod(getattr(np, t)) for n, t in (",
    "    ('exp', 'exp'), ('log', 'log'), ('sqrt', 'sqrt'), ('sin', 'sin'), ('cos', 'cos'),",
    "    ('tan', 'tan'), ('tanh', 'tanh'), ('atan', 'arctan'), ('atan2', 'arctan2'),",
    "    ('log1p', 'log1p'), ('expm1', 'expm1'), ('log2', 'log2'), ('log10', 'log10'),",
    "    ('floor', 'floor'), ('ceil', 'ceil'), ('trunc', 'trunc'),",
    "    ('frexp', 'frexp'), ('ldexp', 'ldexp'), ('copysign', 'copysign'))}})",
    "",
]

# a bad index's report (kernels.structured._index_rule) into the error buffer
# [where, value]: the first report wins (on CUDA by an atomic compare-and-swap)
_INDEX_ERROR = {
    "cpu": ["def index_error(err, where, value):",
            "    if err[0] == 0:",
            "        err[0] = where",
            "        err[1] = value"],
    "cuda": ["def index_error(err, where, value):",
             "    if cuda.atomic.compare_and_swap(err, 0, where) == 0:",
             "        err[1] = value"],
}


def graph_hash(program: KernelPlan, names: Names) -> str:
    """A hash of the graph's structure: ops, attrs, types and wiring."""
    h = hashlib.sha256()
    for v in program.graph.inputs:
        h.update(f"in {names.index[v]} {v.name} {v.type}\n".encode())
    for node in program.graph.nodes:
        ins = " ".join(str(names.index[v]) for v in node.inputs)
        outs = " ".join(f"{names.index[v]}:{v.type}" for v in node.outputs)
        h.update(f"{node.op} {sorted(node.attrs.items())!r} {ins} -> {outs}\n".encode())
    for name, v in program.outputs.items():
        h.update(f"out {name} {names.index[v]}\n".encode())
    for t, v in program.graph.updates.items():
        h.update(f"upd {names.index[t]} {names.index[v]}\n".encode())
    return h.hexdigest()[:16]


def _helpers(decorator: str, device: str = "cpu", used: set[str] | None = None) -> list[str]:
    """The scalar functions that `used` names (all by default), as text: on the CPU
    bf16's two conversions through the bit pattern (bf16.CPU_BODIES; the math and RNG
    helpers are compiled once, kernels/scalars.py); on CUDA every helper, the math
    names calling the device's own functions (mathfn.CUDA_BODIES), the RNG and bf16
    ones with those they call and the constants they read, copied from their modules."""
    modules = () if device == "cpu" else (rng, bf16)
    bodies = bf16.CPU_BODIES if device == "cpu" else {
        name: f"return {body}" for name, body in mathfn.CUDA_BODIES.items()}
    functions = {fn.__name__: fn for m in modules for fn in m.SCALAR_FUNCTIONS}
    wanted = set(functions) if used is None else _called(used, functions)
    lines: list[str] = []
    for name, body in bodies.items():
        if used is None or name in used:
            lines += ["", "", decorator, f"def {name}(x):"] + _indent(body.splitlines(), 1)
    for module in modules:
        chosen = [fn for fn in module.SCALAR_FUNCTIONS if fn.__name__ in wanted]
        consts = sorted({n for fn in chosen for n in fn.__code__.co_names
                         if n.startswith("_") and isinstance(getattr(module, n, None),
                                                               (np.generic, float))})
        for n in consts:
            value = getattr(module, n)
            text = f"np.{type(value).__name__}({value.item()!r})" \
                if isinstance(value, np.generic) else repr(value)
            lines.append(f"{n} = {text}")
        for fn in chosen:
            source = _CUDA_SCALAR_UFUNCS.sub(r"math.\1(", _source(fn))
            lines += ["", "", decorator] + source.splitlines()
    return lines


@functools.cache
def _source(fn: Any) -> str:
    """A helper's source, read once a process (inspect reads the file each time: a
    GRU's step, 160 kernels with helpers, spent 0.2 s here)."""
    return textwrap.dedent(inspect.getsource(fn))


# numba-cuda lowers numpy's ufuncs on arrays only; on a scalar the device's math
# function is the same IEEE operation (rng_normal's Box-Muller reads them in f64)
_CUDA_SCALAR_UFUNCS = re.compile(r"\bnp\.(sqrt|log|cos|sin|exp)\(")


def _called(names: set[str], functions: dict) -> set[str]:
    """`names` and every helper they call, in turn (fast_tanh calls fast_exp)."""
    out: set[str] = set()
    todo = [n for n in names if n in functions]
    while todo:
        name = todo.pop()
        if name not in out:
            out.add(name)
            todo += [n for n in functions[name].__code__.co_names if n in functions]
    return out


def helper_calls(lines: list[str]) -> set[str]:
    """The helper functions the lines call."""
    return {m.group(1) for line in lines for m in _HELPER_NAMES.finditer(line)}


def _header(program: KernelPlan, codes: list[KernelCode], digest: str, device: str) -> list[str]:
    lines = [f'"""SexpGPU kernels for graph {program.graph.name!r} (graph hash {digest}), '
             f"device {device}.", "",
             "Generated from the IR by kernels.codegen; do not edit. One line per kernel:", ""]
    for code in codes:
        lines.append(f"{code.name}: " + "; ".join(code.comment))
    return lines + ['"""']


def _indent(lines: list[str], depth: int) -> list[str]:
    return ["    " * depth + line for line in lines]


def _parallel(code: KernelCode, spread: set[str]) -> bool:
    """Whether the generated loop nest's outer loop is shared by threads (a CPU
    override may have a prange of its own: `_chunked` looks at the final text)."""
    worth = threads.parallel_worth(code.work) or (
        threads.parallel_maybe(code.work, max(code.size, code.domain_size))
        and _spread_reads(code, spread))
    return code.cpu is None and worth and bool(code.outer) and code.outer[0][1] > 1


def _spread_reads(code: KernelCode, spread: set[str]) -> bool:
    """Whether the kernel reads a buffer that the last kernel writing it wrote in
    parallel (`spread`: such buffers, so far in the step)."""
    return not spread.isdisjoint(code.reads)


def _serial(code: KernelCode, spread: set[str]) -> bool:
    """Whether a prange of the kernel's text runs as an ordinary loop: a kernel
    that checks indices (its first bad index goes into the error buffer as a
    (where, value) pair, which two threads could mix), or a marginal override that
    reads nothing spread."""
    return bool(code.index_checks) or (code.marginal and not _spread_reads(code, spread))


def _cpu_loops(code: KernelCode, parallel: bool) -> list[str]:
    """The kernel's loop nest (or its CPU override) at depth 0."""
    if code.cpu is not None:
        return list(code.cpu)
    lines: list[str] = []
    for k, (var, size) in enumerate(code.outer):
        loop = "prange" if parallel and k == 0 else "range"
        lines.append("    " * k + f"for {var} in {loop}({size}):")
    return lines + _indent(code.body, len(code.outer))


_PRANGE = re.compile(r"^for (\w+) in prange\((\d+)\):$")
# outer iterations per chunk of a loop over one long range (an elementwise op): a
# chunk is 64 KB of f32, more than enough to pay for its call
FLAT_CHUNK = 1 << 14
MAX_CHUNKS = 64  # of any other loop


def _chunked(lines: list[str], serial: bool = False) -> tuple[list[str], int]:
    """A kernel's lines with its parallel loop (`for v in prange(n):` at depth 0)
    made chunk chunk_'s part of it, and the number of chunks (0: no parallel loop;
    `serial`: the loop made an ordinary one).
    Chunk c runs iterations [c * b, c * b + b); b depends on n alone. The
    literals that must reach LLVM as they are (the mask, b: see MASK_HEX) are
    written in hex, which kernel text parametrisation leaves alone."""
    at = next((i for i, line in enumerate(lines) if _PRANGE.match(line)), None)
    if at is None:
        return lines, 0
    if serial:
        return lines[:at] + [lines[at].replace(" in prange(", " in range(")] + lines[at + 1:], 0
    var, size = _PRANGE.match(lines[at]).groups()
    n = int(size)
    per = FLAT_CHUNK if n > MAX_CHUNKS * FLAT_CHUNK // 4 else -(-n // min(n, MAX_CHUNKS))
    body = lines[at + 1:]
    if per == 1:
        head = [f"{var} = chunk_ & {MASK_HEX}"]
        body = [line[4:] for line in body]
    else:
        head = [f"first_ = (chunk_ & {MASK_HEX}) * {per:#x}",
                f"for {var}_ in range(min({per:#x}, trips_ - first_)):",
                f"    {var} = first_ + {var}_"]
    # the trip count first: a flat loop's there becomes an argument (see `_flat`)
    return [f"trips_ = {n}"] + lines[:at] + head + body, -(-n // per)



_TRIP_ONE = re.compile(r"^(\s*)for (\w+) in p?range\(1\):$")
# what is left of an index expression once a loop variable is 0: `0 * 720`,
# `x + 0`, `0 + x` (never inside a float literal or a name)
_TIMES_ZERO = re.compile(r"(?<![\w.])0 \* \w+(?![\w.(])")
_PLUS_ZERO = re.compile(r" \+ 0(?![\w.])")
_ZERO_PLUS = re.compile(r"(?<![\w.])0 \+ ")


def _tidy(lines: list[str]) -> list[str]:
    """Lines without the renderers' leftovers: a loop of one trip is its body with
    the variable 0, and zero terms of index arithmetic are dropped."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = _TRIP_ONE.match(lines[i])
        if m is None:
            out.append(lines[i])
            i += 1
            continue
        indent, var = m.groups()
        end = i + 1
        while end < len(lines) and (not lines[end].strip() or
                                    len(lines[end]) - len(lines[end].lstrip()) > len(indent)):
            end += 1
        zero = re.compile(rf"\b{var}\b")
        out += _tidy([indent + zero.sub("0", line[len(indent) + 4:]) for line in lines[i + 1:end]])
        i = end
    simpler = []
    for line in out:
        previous = None
        while previous != line:
            previous = line
            line = _ZERO_PLUS.sub("", _PLUS_ZERO.sub("", _TIMES_ZERO.sub("0", line)))
        simpler.append(line)
    return simpler


def _positional(code: KernelCode) -> list[str]:
    return [f"p{i}" for i in range(len(code.params))]


_WORD = re.compile(r"\b\w+\b")
_VALUE = re.compile(r"v\d+")


def _renamed(lines: list[str], code: KernelCode) -> list[str]:
    """The kernel's lines with its buffers named by position (p0, p1, ...) and
    its value variables by first appearance (t0, t1, ...): the same loop over
    other values then has the same text (the step module names the buffers).
    One pattern for every kernel, each word looked up: a pattern of each kernel's
    names cost a regex compile per kernel (0.3 s of a GRU's warm start)."""
    mapping = dict(zip(code.params, _positional(code)))
    first_var = len(mapping)

    def sub(m: re.Match) -> str:
        name = m.group(0)
        found = mapping.get(name)
        if found is None:
            if not _VALUE.fullmatch(name):
                return name
            found = mapping[name] = f"t{len(mapping) - first_var}"
        return found

    return [_WORD.sub(sub, line) for line in lines]


# an integer literal: not part of a name, a float (1.5, 1e-05) or an exponent (** 3)
_INT = re.compile(r"(?<![\w.])(?<!e-)(?<!e\+)(?<!\*\* )(?<!\*\*)\d+(?![\w.])")
# literals kept in the text: loop trip counts and strides (`* 18`) let LLVM unroll
# and vectorise (the GRU step ran 2x slower with them as arguments); divisors
# (`% 2`, `// 2`) become shifts and masks instead of a division per element (the
# CNN's col2im ran 5x slower with them as arguments); 0 and 1 fold away; huge
# ones would overflow an int64 argument. Offsets become arguments.
_KEPT_AFTER = re.compile(r"(?:range\((?:\d+, )?|\* |% |// |& )$")
_KEPT_INTS = ("0", "1")
_MAX_PARAM_INT = 1 << 62


def _parametrized(lines: list[str], sizes: bool = False,
                  flat: bool = False) -> tuple[list[str], list[str]]:
    """The lines with their integer offsets (and, with `sizes`, their trip counts
    and strides too; with `flat`, the trip count of the first loop, after a
    reduction's accumulators are set) replaced by arguments n0, n1, ... and those
    literals' values: loops that differ only there (an unrolled RNN's time steps, a
    transformer's layers, the optimizer's update of each parameter) then have the
    same text and share one function."""
    values: list[str] = []
    first = next((k for k, line in enumerate(lines) if line.startswith(_LOOP_HEADS)), None)

    def parametrize(line: str, sized: bool) -> str:
        def sub(m: re.Match) -> str:
            text = m.group(0)
            if text in _KEPT_INTS or int(text) >= _MAX_PARAM_INT \
                    or (not sized and _KEPT_AFTER.search(line, 0, m.start())):
                return text
            values.append(text)
            return f"n{len(values) - 1}"
        return _INT.sub(sub, line)

    return [parametrize(line, sizes or (flat and k == first)) for k, line in enumerate(lines)], \
        values


# how the loop a flat kernel's trip count belongs to starts (a chunk's count is `trips_`)
_LOOP_HEADS = ("for ", "trips_ = ")


def _flat(code: KernelCode) -> bool:
    """A single loop over a long row-major range (an elementwise op on whole
    tensors, the optimizer's update, a whole tensor's sum): its trip count can be
    an argument at no cost (LLVM vectorises a runtime count with a remainder
    loop), so such loops on tensors of different sizes share one compiled function."""
    if code.cpu is not None:
        return False
    loops = code.outer if code.reduction is None or code.outer else code.reduction.reduced
    return len(loops) == 1 and loops[0][1] >= FLAT_SHARED_TRIPS


def _batch_loop(code: KernelCode, lines: list[str]) -> bool:
    """An elementwise loop nest (no reduction, no CPU override): its outermost trip
    count, most often the batch, can be an argument too, so the same loops of a step
    graph and an evaluate graph of another batch share one function (the GRU example:
    77 kernels to compile, 71), and the step ran as fast. Not a reduction's or an
    override's: LLVM proves a bias gradient's accumulating loads and stores apart
    from the literal counts (the CNN's ran 5x slower with them as arguments). Only
    when the first of its CPU `lines` is that loop (or a chunk's trip count): with
    every axis of size 1 tidied away they start with the body, whose integers stay."""
    return code.cpu is None and code.reduction is None and len(code.outer) >= 2 \
        and bool(lines) and lines[0].startswith(_LOOP_HEADS)


# the sgemm calls of kernels/sgemm.py a kernel makes (its module imports them)
_GEMM_CALL = re.compile(r"\b(gemm_[nt][nt])\(")
_HELPER_NAMES = re.compile(
    r"\b(rng_\w+|f32_to_bf16|bf16_to_f32|fast_(?:exp|tanh|erf|log|sigmoid)(?:32)?)\(")
# IEEE semantics (x/0 is inf or nan, as in numpy and on the GPU): numba's default
# "python" error model tests every division for zero to raise ZeroDivisionError,
# and that branch alone stops LLVM vectorising a loop (Adam's update ran 5x slower).
# `reassoc` lets LLVM vectorise float reductions (partial sums per lane: the
# softmax row sums ran 3x faster, and are no less accurate) and `contract` fuses
# a*b+c into one FMA; no flag that assumes away NaN or inf, which the non-finite
# check must still see. No C-callable wrapper (numba builds one per function for
# calls through a function pointer; the step calls kernels from Python): ~10 ms of
# LLVM work less per kernel compiled
_NJIT = "@numba.njit(" + ", ".join(
    f"{k}={{{', '.join(map(repr, v))}}}" if isinstance(v, tuple) else f"{k}={v!r}"
    for k, v in scalars.FLAGS.items())   # the helpers' flags too: one place says them
# a kernel that allocates no array (numpy calls in its text only make scalars) runs
# without numba's reference counting: its arrays are the caller's, and the increfs,
# decrefs and their pruning passes cost ~15 ms of compile per kernel
_ALLOCATES = re.compile(r"\bnp\.(?!(?:float32|float64|u?int(?:8|16|32|64)|bool_|sqrt|log|cos|floor"
                        r"|exp)[()])\w")


def _kernel_module(chunked: bool, args: list[str], body: list[str], ops: str,
                   dtypes: list[str]) -> str:
    """The source of one kernel function's own module: nothing in it names a graph,
    so every graph (a run's step and eval graphs, tests, sweeps) with this kernel
    text imports the same module and numba's cache compiles it once."""
    lines = [f'"""SexpGPU kernel ({ops}); generated by kernels.codegen, do not edit.',
             "",
             "p0, p1, ... are buffers and n0, n1, ... integers (offsets, sizes), in the order",
             "a step module passes them; its call names the IR values they hold, and the",
             'cache\'s index.json the graphs and .sx lines that use this kernel."""',
             ""]
    calls = helper_calls(body)
    shared = sorted(calls & scalars.NAMES)   # compiled once (kernels/scalars.py)
    own = calls - scalars.NAMES              # bf16's conversions: text
    helpers = _helpers(_NJIT + ", inline='always')", used=own) if own else []
    if any("math." in line for line in body + helpers):
        lines += ["import math", ""]
    lines += ["import numpy as np", "import numba"]
    if chunked:
        lines.append("from sexpgpu.kernels.parallel import unpack")
    if shared:
        lines.append(f"from sexpgpu.kernels.scalars import {', '.join(shared)}")
    gemms = sorted({m.group(1) for line in body for m in _GEMM_CALL.finditer(line)})
    if gemms:
        lines.append(f"from sexpgpu.kernels.sgemm import {', '.join(gemms)}")
    lines.append("")
    lines += helpers
    if any("index_error(" in line for line in body):
        lines += ["", "", _NJIT + ", inline='always')"] + _INDEX_ERROR["cpu"]
    if chunked:
        head = "def chunk(chunk_, block_):"
        body = _unpacked(args, dtypes) + body
    else:
        head = f"def kernel({', '.join(args)}):"
    lines += ["", "", _decorator(body + helpers, chunked), head] + _indent(body, 1)
    return re.sub(r"\n{4,}", "\n\n\n", "\n".join(lines)) + "\n"


def _unpacked(args: list[str], dtypes: list[str]) -> list[str]:
    """A chunk function's first line: its buffers (p0, p1, ..., first in `args`) and
    integers from its block (kernels.parallel.unpack)."""
    buffers = [a for a in args if a.startswith("p")]
    assert args[:len(buffers)] == buffers, args
    kinds = ",".join(dtypes[int(p[1:])] for p in buffers)
    return [f"({', '.join(args)},) = unpack(block_, {kinds!r}, {len(args) - len(buffers)})"]


def _decorator(lines: list[str], chunked: bool) -> str:
    """The njit decorator of a kernel whose module has `lines`: one that may allocate
    an array keeps numba's reference counting (NRT); so does a chunk function (its
    buffers are arrays made from addresses), which keeps the C-callable wrapper
    that kernels.parallel.run calls and, never called from Python, goes without
    the Python one (~20 ms of compile each)."""
    if chunked:
        return _NJIT.replace("no_cfunc_wrapper=True", "no_cpython_wrapper=True") + ")"
    if any(_ALLOCATES.search(line) for line in lines):
        return _NJIT + ")"
    return _NJIT + ", _nrt=False)"


def _cpu_step(parts: StepParts) -> tuple[list[str], list[str], dict[str, dict]]:
    """One njit function per distinct kernel text (buffers by position, integer
    offsets as arguments), each in its own cached module, and a plain Python
    `step` calling them in order: (the step module's lines, the kernel modules).
    A run of kernels that keep to their batch rows is one call that runs it in
    bands (kernels/bands.py).

    Why: numba links every callee into its caller and re-optimises the whole
    module, so an njit `step` over all kernels made LLVM's cost superlinear in the
    graph (the GRU step took ~190 s CPU to compile); compile cost is per distinct
    function, and parametrising offsets cuts the GRU's 2081 kernels to ~60
    functions. A call from Python costs under a microsecond of dispatch."""
    codes = parts.codes
    prepared = _prepared(codes)
    functions = _Functions(parts.dtypes)
    calls: list[str] = []
    runs = {run.kernels[0]: run for run in _band_runs(parts, prepared)}
    done: set[int] = set()
    for i, code in enumerate(codes):
        if i in done:
            continue
        run = runs.get(i)
        if run is None:
            calls.append(functions.call(code, *prepared[i]))
            continue
        per, chunks = bands.band_rows(run.rows)
        banded = [functions.call(codes[k], bands.band_lines(run.band[k], per), chunks, bare=True)
                  for k in run.kernels]
        calls.append(f"launch.bands({chunks}, {', '.join(f'({b})' for b in banded)})")
        calls += [functions.call(codes[k], *prepared[k]) for k in run.moved]
        done |= {*run.kernels, *run.moved}
    calls += [f"{t}[:] = {v}" for t, v in parts.copies]
    imports = functions.imports
    if any(call.startswith("launch") for call in calls):
        # the parallel kernels' threads are those the policy allows now (a thread
        # the machine has no core for would hold up all the others at each loop's
        # end), asked once a step: the policy measures only every REFRESH_S anyway
        imports[:0] = ["from sexpgpu.kernels.threads import parallel as kernel_threads",
                       "from sexpgpu.kernels.parallel import Launches"]
        imports += ["", "launch = Launches()  # each launch's block packed once, then reused"]
        calls[:0] = ["kernel_threads()", "launch.start()"]
    lines = imports + ["", "", f"def step({', '.join(parts.params)}):"]
    return lines + _indent(calls or ["pass"], 1), functions.modules, functions.index


def _prepared(codes: list[KernelCode]) -> list[tuple[list[str], int]]:
    """Each kernel's CPU lines (a chunk function's when parallel) and chunk count."""
    prepared: list[tuple[list[str], int]] = []
    spread: set[str] = set()  # buffers last written by a parallel kernel
    for code in codes:
        lines, chunks = _chunked(_tidy(_cpu_loops(code, _parallel(code, spread))),
                                 serial=_serial(code, spread))
        spread = (spread | set(code.writes)) if chunks else (spread - set(code.writes))
        prepared.append((lines, chunks))
    return prepared


class _Functions:
    """The step module's kernel functions: one per distinct kernel module text, with
    its import line and its index entry (what the cache's index records)."""

    def __init__(self, dtypes: dict[str, str]) -> None:
        self.dtypes = dtypes
        self.imports: list[str] = []
        self.modules: list[str] = []
        self.index: dict[str, dict] = {}
        self._names: dict[str, str] = {}  # kernel module source -> local function name

    def call(self, code: KernelCode, lines: list[str], chunks: int, bare: bool = False) -> str:
        """The step's call of `code` run as `lines` (a chunk function when `chunks`):
        `f3(a, b, 100)`, `launch(f3, 4, a, b, 100)`, or `f3, a, b, 100` (`bare`)."""
        body, ints = _parametrized(_renamed(lines, code), code.sizes_as_args,
                                   _flat(code) or _batch_loop(code, lines))
        args = _positional(code) + [f"n{i}" for i in range(len(ints))]
        ops = ", ".join(dict.fromkeys(c.split(" at ")[0] for c in code.comment))
        source = _kernel_module(bool(chunks), args, body, ops,
                                [self.dtypes[p] for p in code.params] if chunks else [])
        fname = self._names.get(source)
        if fname is None:
            fname = self._names[source] = f"f{code.name[1:]}"
            self.modules.append(source)
            what = "chunk" if chunks else "kernel"
            self.imports.append(f"from {module_name(source)} import {what} as {fname}  # {ops}")
        entry = self.index.setdefault(module_name(source), {"ops": [], "sites": [], "params": {}})
        _note(entry, code)
        entry["params"].setdefault(code.name, dict(zip(args, code.params)))
        operands = ", ".join(code.params + ints)
        if bare:
            return f"{fname}, {operands}"
        return f"launch({fname}, {chunks}, {operands})" if chunks else f"{fname}({operands})"


def _band_runs(parts: StepParts, prepared: list[tuple[list[str], int]]) -> list[bands.Run]:
    """The step's runs of kernels that keep to their batch rows (kernels/bands.py):
    each kernel (a parallel one as its serial text) tried with the batch of the run
    before it, else its own rows (a matmul's, its first loop's)."""
    found: list[bands.Banded | None] = []
    rows = 0
    for code, (lines, chunks) in zip(parts.codes, prepared):
        band = None
        if chunks:  # a parallel kernel joins as its serial text
            lines = code.serial_cpu or _chunked(_tidy(_cpu_loops(code, False)), serial=True)[0]
        if all(p in parts.places for p in code.params):
            for tried in dict.fromkeys((rows, *bands.rows_of(lines))):
                band = bands.banded(code, lines, tried, parts.sizes)
                if band is not None:
                    rows = tried
                    break
        found.append(band)
    serial = [not chunks for _, chunks in prepared]
    return bands.plan_runs(parts.codes, found, serial, parts.places, parts.itemsizes)


def _note(entry: dict, code: KernelCode) -> None:
    """A kernel's ops and the source sites of its nodes, into an index entry."""
    for comment in code.comment:
        op, _, site = comment.partition(" at ")
        if op not in entry["ops"]:
            entry["ops"].append(op)
        if site and site not in entry["sites"]:
            entry["sites"].append(site)


def step_parts(program: KernelPlan, plan: MemoryPlan | None,
               codes: list[KernelCode] | None = None) -> StepParts:
    """What the step module of either launcher is made of: value names, each kernel's
    code (`codes` when rendered already), the graph hash, the step's parameters and
    its final update copies. With no memory plan yet (`band_order`), every stored
    value is its own memory."""
    names = Names(program)
    digest = graph_hash(program, names)
    if codes is None:
        codes = [render(k, program, names, f"k{k.index}") for k in program.kernels]
    slots = plan.slot_of if plan is not None else dict.fromkeys(
        v for k in program.kernels for v in k.outputs if names.home(v) == v)
    inputs = [names.buf(v) for v in program.graph.inputs]
    stored = [names.buf(v) for v in slots]
    params = inputs + stored + ([ERR] if any(c.index_checks for c in codes) else [])
    copies = [(names.buf(t), names.buf(v)) for t, v in program.graph.updates.items()
              if names.buf(t) != names.buf(v)]
    dtypes = {names.buf(v): storage(v) for v in [*program.graph.inputs, *slots]}
    dtypes[ERR] = "int64"
    parts = StepParts(names, codes, digest, params, copies, dtypes)
    for v in [*program.graph.inputs, *slots]:
        buf = names.buf(v)
        parts.sizes[buf] = max(1, prod(v.shape))
        parts.itemsizes[buf] = np.dtype(dtypes[buf]).itemsize
        start = slots[v] if plan is not None and v in slots else 0
        parts.places[buf] = ("arena" if plan is not None and v in slots else buf, start,
                             start + parts.sizes[buf] * parts.itemsizes[buf])
        if v in slots:
            parts.stored[buf] = v
    return parts


def band_order(program: KernelPlan) -> tuple[KernelPlan, list[Together], list[KernelCode]]:
    """`program` (before its memory plan) with each kernel that a band run moves after
    itself (kernels/bands.py: a sum over the batch between a recurrent layer's steps)
    placed there, so that the memory plan keeps what it reads alive until then; the
    runs, with the row of every value they touch, for the plan to keep their bands
    apart (memplan.Together); and the kernels' code, in the new order."""
    parts = step_parts(program, None)
    runs = _band_runs(parts, _prepared(parts.codes))
    after = {k: run.kernels[-1] + 0.5 for run in runs for k in run.moved}
    order = sorted(range(len(program.kernels)), key=lambda i: (after.get(i, i), i))
    codes = [parts.codes[i] for i in order]
    if after:
        kernels = [program.kernels[i] for i in order]
        for k, (kernel, code) in enumerate(zip(kernels, codes)):
            kernel.index, code.name = k, f"k{k}"
        program = dataclasses.replace(program, kernels=kernels)
    at = {i: k for k, i in enumerate(order)}
    together = []
    for run in runs:
        rows: dict[Value, int] = {}
        for k in run.kernels:
            for buf, access in run.band[k].accesses.items():
                v = parts.stored.get(buf)
                if v is not None:  # a graph input: not in the plan
                    rows[v] = access.row * parts.itemsizes[buf]
        together.append(Together(at[run.kernels[0]], at[run.kernels[-1]], rows))
    return program, together, codes


def cpu_plan(program: KernelPlan) -> tuple[KernelPlan, MemoryPlan, list[KernelCode]]:
    """A CPU program in the order it runs (`band_order`), its memory plan and its
    kernels' code."""
    program, together, codes = band_order(program)
    return program, plan_memory(program, together), codes


def generate_cpu(program: KernelPlan, parts: StepParts, device: str = "cpu") -> Generated:
    """The CPU step module: plain Python calling one njit function per kernel."""
    lines = _header(program, parts.codes, parts.digest, device)
    step, modules, index = _cpu_step(parts)
    return Generated("\n".join(lines + [""] + step) + "\n", parts.params, parts.codes,
                     parts.digest, modules, index=index)

