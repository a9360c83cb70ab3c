"""Code generation: one Python module per (graph, device) holding every kernel
and a `step` function that runs them all in order. The CPU module wraps each
body in `numba.njit` loops (prange where it pays) and `step` is itself njit, so
a whole training step is one call; the CUDA module launches the same bodies
one thread per outer point."""

from __future__ import annotations

import hashlib
import inspect
import re
import textwrap
from dataclasses import dataclass

import numpy as np

from kernels import bf16, rng
from kernels.lower import Program
from kernels.memplan import MemoryPlan
from kernels.render import Names, render
from kernels.source import KernelCode

# element-operations above which a CPU kernel runs its outer loop with prange
# (a parallel kernel costs ~0.3 s to compile cold, so small ones stay serial)
PARALLEL_WORK = 1 << 20
CUDA_THREADS = 128
# lines of inlined kernels per CPU segment function (see _cpu_step)
SEGMENT_LINES = 200


@dataclass
class Generated:
    source: str
    params: list[str]          # step's parameters: buffer names, inputs first
    codes: list[KernelCode]
    graph_hash: str


def graph_hash(program: Program, names: Names) -> str:
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


def _helpers(decorator: str) -> list[str]:
    """The RNG and bf16 scalar functions, copied from their modules with constants."""
    lines: list[str] = []
    for module in (rng, bf16):
        consts = sorted({n for fn in module.SCALAR_FUNCTIONS for n in fn.__code__.co_names
                         if n.startswith("_") and isinstance(getattr(module, n, None),
                                                               (np.generic, float))})
        for n in consts:
            value = getattr(module, n)
            text = f"np.{type(value).__name__}({value.item()!r})" \
                if isinstance(value, np.generic) else repr(value)
            lines.append(f"{n} = {text}")
        for fn in module.SCALAR_FUNCTIONS:
            lines += ["", "", decorator] + textwrap.dedent(inspect.getsource(fn)).splitlines()
    return lines


def _header(program: Program, codes: list[KernelCode], digest: str, device: str) -> list[str]:
    lines = [f'"""SexpGPU kernels for graph {program.graph.name!r} (graph hash {digest}), '
             f"device {device}.", "",
             "Generated from the IR by kernels.codegen; do not edit. One line per kernel:", ""]
    for code in codes:
        lines.append(f"{code.name}: " + "; ".join(code.comment))
    return lines + ['"""']


def _indent(lines: list[str], depth: int) -> list[str]:
    return ["    " * depth + line for line in lines]


def _parallel(code: KernelCode) -> bool:
    return code.cpu is None and code.work >= PARALLEL_WORK and bool(code.outer) \
        and code.outer[0][1] > 1


def _cpu_loops(code: KernelCode, parallel: bool) -> list[str]:
    """The kernel's loop nest (or its CPU override) at depth 0."""
    if code.cpu is not None:
        return list(code.cpu)
    lines: list[str] = []
    for k, (var, size) in enumerate(code.outer):
        loop = "prange" if parallel and k == 0 else "range"
        lines.append("    " * k + f"for {var} in {loop}({size}):")
    return lines + _indent(code.body, len(code.outer))


_LOCAL = re.compile(r"^\s*(?:for\s+)?([A-Za-z_]\w*)\s*(?:=[^=]|in\b)")


def _private(lines: list[str], suffix: str) -> list[str]:
    """Rename a kernel's local variables with `suffix`, so kernels inlined into
    one function never share a variable (numba types each name once)."""
    names = {m.group(1) for line in lines if (m := _LOCAL.match(line))}
    if not names:
        return lines
    pattern = re.compile(r"\b(" + "|".join(sorted(names, key=len, reverse=True)) + r")\b")
    return [pattern.sub(lambda m: m.group(1) + suffix, line) for line in lines]


def _positional(code: KernelCode) -> list[str]:
    return [f"p{i}" for i in range(len(code.params))]


def _renamed(lines: list[str], code: KernelCode) -> list[str]:
    """The kernel's lines with its buffers named by position (p0, p1, ...) and
    its value variables by first appearance (t0, t1, ...): the same loop over
    other values then has the same text."""
    mapping = dict(zip(code.params, _positional(code)))
    for line in lines:
        for var in re.findall(r"\bv\d+\b", line):
            mapping.setdefault(var, f"t{len(mapping) - len(code.params)}")
    if not mapping:
        return lines
    pattern = re.compile(r"\b(" + "|".join(mapping) + r")\b")
    return [pattern.sub(lambda m: mapping[m.group(1)], line) for line in lines]


def _shared_kernels(codes: list[KernelCode]) -> dict[str, tuple[str, int]]:
    """Serial kernels whose text, buffers renamed, occurs more than once:
    kernel name -> (shared function name, line count)."""
    by_text: dict[str, list[KernelCode]] = {}
    for code in codes:
        if not _parallel(code):
            text = "\n".join(_renamed(_cpu_loops(code, False), code))
            by_text.setdefault(text, []).append(code)
    shared: dict[str, tuple[str, int]] = {}
    for text, group in by_text.items():
        if len(group) > 1:
            fname = f"f{group[0].name[1:]}"
            for code in group:
                shared[code.name] = (fname, text.count("\n") + 3)
    return shared


def _cpu_step(codes: list[KernelCode], params: list[str],
              copies: list[tuple[str, str]]) -> list[str]:
    """Parallel kernels as their own njit functions; runs of serial kernels
    inlined, locals renamed, into segment functions of about SEGMENT_LINES lines;
    `step` calls them in order. (One function per kernel costs ~35% more to
    compile cold; one function for a whole big step makes LLVM superlinear.)"""
    lines: list[str] = []
    calls: list[str] = []
    segment: list[KernelCode] = []
    segment_body: list[str] = []
    used = [0]  # lines the segment's kernels would take inlined

    def flush() -> None:
        if not segment:
            return
        name = f"s{segment[0].name[1:]}"
        args = list(dict.fromkeys(p for code in segment for p in code.params))
        lines.extend(["", "", "@numba.njit(cache=True)", f"def {name}({', '.join(args)}):"])
        lines.extend(_indent(segment_body, 1))
        calls.append(f"{name}({', '.join(args)})")
        segment.clear()
        segment_body.clear()
        used[0] = 0

    shared = _shared_kernels(codes)
    defined: set[str] = set()
    for code in codes:
        canonical = shared.get(code.name)
        if canonical is not None:
            # the same loop over other buffers (an unrolled RNN's steps): one
            # function, compiled once, called with each kernel's buffers
            fname, size = canonical
            if fname not in defined:
                defined.add(fname)
                lines.extend(["", "", "@numba.njit(cache=True)",
                              f"def {fname}({', '.join(_positional(code))}):"])
                lines.extend(_indent(_renamed(_cpu_loops(code, False), code), 1))
            if segment and used[0] + size > SEGMENT_LINES:
                flush()
            segment.append(code)
            segment_body.extend([f"# {code.name}: " + "; ".join(code.comment),
                                 f"{fname}({', '.join(code.params)})"])
            used[0] += size
            continue
        if _parallel(code):
            flush()
            lines.extend(["", "", "@numba.njit(cache=True, parallel=True)",
                          f"def {code.name}({', '.join(code.params)}):"])
            lines.extend(["    # " + "; ".join(code.comment)])
            lines.extend(_indent(_cpu_loops(code, True), 1))
            calls.append(f"{code.name}({', '.join(code.params)})")
            continue
        body = [f"# {code.name}: " + "; ".join(code.comment)]
        body += _private(_cpu_loops(code, False), f"_{code.name}")
        if segment and used[0] + len(body) > SEGMENT_LINES:
            flush()
        segment.append(code)
        segment_body.extend(body)
        used[0] += len(body)
    flush()
    calls += [f"{t}[:] = {v}" for t, v in copies]
    lines += ["", "", "@numba.njit(cache=True)", f"def step({', '.join(params)}):"]
    return lines + _indent(calls or ["pass"], 1)


def _cuda_kernel(code: KernelCode) -> list[str]:
    lines = ["@cuda.jit", f"def {code.name}({', '.join(code.params)}):",
             "    tid_ = cuda.grid(1)",
             f"    if tid_ >= {code.size}:",
             "        return"]
    rest = "tid_"
    for k in range(len(code.outer) - 1, -1, -1):
        var, size = code.outer[k]
        if k == 0:
            lines.append(f"    {var} = {rest}")
        else:
            lines.append(f"    {var} = {rest} % {size}")
            lines.append(f"    rem_ = {rest} // {size}")
            rest = "rem_"
    return lines + _indent(code.body, 1)


def generate(program: Program, plan: MemoryPlan, device: str) -> Generated:
    names = Names(program)
    digest = graph_hash(program, names)
    codes = [render(k, program, names, f"k{k.index}") for k in program.kernels]
    inputs = [names.buf(v) for v in program.graph.inputs]
    stored = [names.buf(v) for v in plan.slot_of]
    params = inputs + stored
    copies = [(names.buf(t), names.buf(v)) for t, v in program.graph.updates.items()
              if names.buf(t) != names.buf(v)]
    lines = _header(program, codes, digest, device) + ["", "import math", "", "import numpy as np"]
    if device == "cpu":
        lines += ["import numba", "from numba import prange", ""]
        lines += _helpers("@numba.njit(cache=True)")
        lines += _cpu_step(codes, params, copies)
    else:
        lines += ["from numba import cuda", ""]
        lines += _helpers("@cuda.jit(device=True)")
        for code in codes:
            lines += ["", ""] + _cuda_kernel(code)
        lines += ["", "", "@cuda.jit", "def copy_(dst, src):", "    i = cuda.grid(1)",
                  "    if i < dst.size:", "        dst[i] = src[i]"]
        lines += ["", "", f"def step({', '.join(params)}):"]
        calls = []
        for c in codes:
            if c.size > 0:
                blocks = (c.size + CUDA_THREADS - 1) // CUDA_THREADS
                calls.append(f"{c.name}[{blocks}, {CUDA_THREADS}]({', '.join(c.params)})")
        for t, v in copies:
            calls.append(f"copy_[({t}.size + {CUDA_THREADS - 1}) // {CUDA_THREADS}, "
                         f"{CUDA_THREADS}]({t}, {v})")
        lines += _indent(calls or ["pass"], 1)
    return Generated("\n".join(lines) + "\n", params, codes, digest)
