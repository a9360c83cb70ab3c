"""Parallel CPU kernels: a kernel's outer loop cut into chunks that numba's threads
share, each chunk a call of the kernel's own serial function.

A kernel whose loop is worth several threads (kernels/threads.py: a big loop, or
a big matmul cut into row or column blocks, one sgemm each) is generated as
`chunk(c, block)`: it runs chunk c of its outer loop, reading its buffers and
integers from `block`, an int64 array (a buffer is its address and length, an
integer itself). `launch(chunk, chunks, *args)` packs the block and runs every
chunk through `run`, one parallel loop compiled once per install for all kernels
(its arguments are three integers), which calls the chunk function through its
address. A step module's `launch` (`Launches`) packs each site's block once.

Why not numba's prange in each kernel: a parallel loop compiles its body twice
(typed again and lowered into a gufunc, then optimised again when linked): the
char-GPT's attention backward took 2.5 s to compile with prange and 1.0 s as a
chunk function, and the step's four parallel kernels cost 3.5 s more at a cold
start. Nor one parallel sgemm function that matmul kernels call: numba compiled
it again (1.3 s) for every pattern of literal arguments its callers passed. A
chunk owns whole outputs (outer iterations), and how a loop is cut depends on its
size alone, so any thread count gives the same bits.
"""

from __future__ import annotations

import operator
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.experimental.function_type import _get_wrapper_address
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array
from sexpgpu.kernels import fpmode

# the signature of every chunk function: (chunk, address of its block)
CHUNK_ARGS = (types.int64, types.int64)
RUN_ARGS = (types.int64, types.int64, types.int64)  # `run`'s: one compile for all kernels
_I64 = ir.IntType(64)
_CHUNK_FN = ir.FunctionType(ir.VoidType(), [_I64, _I64])


@intrinsic
def unpack(typingctx, block, dtypes, count):  # noqa: ARG001 - a numba intrinsic
    """A chunk function's arguments from its block at address `block`, as `pack` lays
    them out: a 1-d array for each buffer of `dtypes` ('float32,int64', a literal:
    the buffer's address and length), then `count` integers, all as one tuple.

    Why one intrinsic: the words read one by one (`numba.carray` of the block, then
    `words[k]` for each) made numba type every literal index and every carray call
    anew, ~0.2 s of compile for a chunk function of 40 arguments."""
    if not (isinstance(dtypes, types.StringLiteral) and isinstance(count, types.IntegerLiteral)):
        return None
    arrays = [types.Array(numba.from_dtype(np.dtype(d)), 1, "C")
              for d in dtypes.literal_value.split(",") if d]
    result = types.Tuple([*arrays, *[types.int64] * count.literal_value])

    def codegen(context, builder, sig, args):
        words = builder.inttoptr(args[0], _I64.as_pointer())

        def word(k: int) -> ir.Value:
            return builder.load(builder.gep(words, [ir.Constant(_I64, k)]))

        values = []
        for i, array_type in enumerate(arrays):
            element = context.get_data_type(array_type.dtype)
            size = ir.Constant(_I64, context.get_abi_sizeof(element))
            array = context.make_array(array_type)(context, builder)
            populate_array(array, data=builder.inttoptr(word(2 * i), element.as_pointer()),
                           shape=[word(2 * i + 1)], strides=[size], itemsize=size, meminfo=None)
            values.append(array._getvalue())
        values += [word(2 * len(arrays) + j) for j in range(count.literal_value)]
        return context.make_tuple(builder, result, values)

    return result(block, dtypes, count), codegen


@intrinsic
def _data(typingctx, a):  # noqa: ARG001 - a numba intrinsic
    """The address of array `a`'s first element, as an integer."""
    def codegen(context, builder, sig, args):
        array = context.make_array(sig.args[0])(context, builder, args[0])
        return builder.ptrtoint(array.data, _I64)
    return types.int64(a), codegen


@numba.njit(cache=True, no_cfunc_wrapper=True, _nrt=False)
def data_address(a: np.ndarray) -> int:
    """`a.ctypes.data`, in 0.2 us instead of 0.9 (a launch passes up to eight
    buffers, and a GPT step has 52 launches); compiled once per dtype."""
    return _data(a)


@intrinsic
def _call_chunk(typingctx, fn, c, block):  # noqa: ARG001 - a numba intrinsic
    """Call the chunk function at address `fn` with (c, block)."""
    def codegen(context, builder, sig, args):  # noqa: ARG001
        builder.call(builder.inttoptr(args[0], _CHUNK_FN.as_pointer()), [args[1], args[2]])
        return context.get_dummy_value()
    return types.void(types.int64, types.int64, types.int64), codegen


@numba.njit(cache=True, no_cfunc_wrapper=True, parallel=True)
def run(fn: int, chunks: int, block: int) -> None:
    """Chunks 0 .. chunks-1 of the chunk function at address `fn`, on numba's threads,
    each in the floating-point mode of the thread that called run (kernels/fpmode.py:
    subnormals flushed in a run, kept elsewhere)."""
    caller = fpmode.mode()
    for c in prange(chunks):
        fpmode.set_mode(caller)
        _call_chunk(fn, np.int64(c), block)


@intrinsic
def _word(typingctx, block, k):  # noqa: ARG001 - a numba intrinsic
    """Word k of the int64 array at address `block`."""
    def codegen(context, builder, sig, args):  # noqa: ARG001
        words = builder.inttoptr(args[0], _I64.as_pointer())
        return builder.load(builder.gep(words, [args[1]]))
    return types.int64(types.int64, types.int64), codegen


@numba.njit(cache=True, no_cpython_wrapper=True)
def band(c: int, run: int) -> None:
    """Band c of a run of kernels (kernels/bands.py), a chunk function that `run`
    launches: every chunk function of the run in order, each with (c, its block);
    the run's block is [count, function, block, function, block, ...]. A chunk
    function itself, so bands cost no parallel loop of their own to compile (numba's
    parallel loops take a second or more each at a cold start)."""
    for k in range(_word(run, 0)):
        _call_chunk(_word(run, 2 * k + 1), c, _word(run, 2 * k + 2))


_ADDRESSES: dict[Any, int] = {}


def _address(fn: Any) -> int:
    """The C-callable address of chunk function `fn` (compiled, or loaded from numba's
    cache, on first use)."""
    found = _ADDRESSES.get(fn)
    if found is None:
        found = _ADDRESSES[fn] = _get_wrapper_address(fn, types.void(*CHUNK_ARGS))
    return found


def pack(args: tuple) -> np.ndarray:
    """The block of a chunk function's arguments: each buffer's address and length,
    each integer itself."""
    values: list[int] = []
    for a in args:
        if isinstance(a, np.ndarray):
            if not a.flags.c_contiguous:  # an address and a length describe it
                raise ValueError(f"chunk functions take contiguous buffers, not {a.strides}")
            values += (data_address(a), a.size)
        else:
            values.append(a)
    return np.array(values, np.int64)


def launch(fn: Any, chunks: int, *args: Any) -> None:
    """Run chunk function `fn` over `chunks` chunks with its buffers and integers."""
    block = pack(args)
    run(_address(fn), chunks, data_address(block))  # block lives until run returns


class Launches:
    """A step module's `launch`: its k-th launch in a step reuses the block it packed
    the step before when its arguments are the same objects (the arena's buffers and
    the caller's parameters are; a new batch is not), so that a launch costs an
    identity test instead of packing (3.7 us, 64 times in a char-GPT step). Same
    objects are the same memory: a numpy array's data never moves, and the block
    holds the arguments it describes. `start()` begins a step."""

    def __init__(self) -> None:
        self._sites: list[tuple[tuple, np.ndarray, int]] = []
        self._next = 0

    def start(self) -> None:
        self._next = 0

    def __call__(self, fn: Any, chunks: int, *args: Any) -> None:
        run(_address(fn), chunks, self._site(args)[2])  # the site holds the block

    def _site(self, args: tuple) -> tuple[tuple, Any, Any]:
        """This launch's (arguments, block, its address), packed again only when an
        argument is not the object it was the step before."""
        k, sites = self._next, self._sites
        self._next = k + 1
        site = sites[k] if k < len(sites) else None
        if site is None or len(site[0]) != len(args) or not all(map(operator.is_, site[0], args)):
            block = pack(args)
            site = (args, block, data_address(block))
            if k < len(sites):
                sites[k] = site
            else:
                sites.append(site)
        return site

    def bands(self, bands: int, *calls: tuple) -> None:
        """A run of kernels in `bands` bands (kernels/bands.py), launched as chunk
        function `band`: each call is (chunk function, its arguments); their blocks are
        packed and reused as a launch's, and so is the run's."""
        words = [len(calls)]
        for call in calls:
            words += (_address(call[0]), self._site(call[1:])[2])
        site = self._site(tuple(words))
        run(_address(band), bands, site[2])  # the sites hold the blocks
