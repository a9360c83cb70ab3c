"""Subnormal floats flushed to zero while a run's CPU kernels execute: the FTZ and
DAZ bits of x86's MXCSR, as TensorFlow and XLA set them on CPUs.

Why: once a model fits its data, some of its probabilities and gradients become
subnormal (a softmax's exp of -90), and Intel cores compute on subnormals through
microcode, at a fraction of their speed. The MNIST-1D MLP's step went from 0.67 to
1.3 ms after about 1000 of its 8000 steps on a Sapphire Rapids (docs/benchmarks.md),
and stayed at 0.59 ms with them flushed; the run ended at the same test loss and
accuracy to every digit printed. AMD's cores pay little, but flush the same.

The mode belongs to a thread: a run sets it on its thread around each compiled
graph's step (`flush`, then `restore`), and `kernels.parallel.run` gives every chunk the mode of
the thread that launched it, so the threads of one kernel compute alike and a
kernel called outside a run (a test against numpy) keeps IEEE subnormals.
SEXPGPU_DENORMALS=keep keeps them in runs too. On other architectures `mode` is 0
and `set_mode` does nothing.
"""

from __future__ import annotations

import platform

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

FLUSH = 0x8040  # MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6)
_X86 = platform.machine().lower() in ("x86_64", "amd64")
_I8P = ir.IntType(8).as_pointer()
_CSR_FN = ir.FunctionType(ir.VoidType(), [_I8P])


def _csr_call(builder: ir.IRBuilder, name: str, slot: ir.Value) -> None:
    fn = cgutils.get_or_insert_function(builder.module, _CSR_FN, name)
    builder.call(fn, [builder.bitcast(slot, _I8P)])


@intrinsic
def mode(typingctx):  # noqa: ARG001 - a numba intrinsic
    """This thread's MXCSR (0 off x86)."""
    def codegen(context, builder, sig, args):  # noqa: ARG001
        if not _X86:
            return ir.Constant(ir.IntType(32), 0)
        slot = cgutils.alloca_once(builder, ir.IntType(32))
        _csr_call(builder, "llvm.x86.sse.stmxcsr", slot)
        return builder.load(slot)
    return types.int32(), codegen


@intrinsic
def set_mode(typingctx, value):  # noqa: ARG001 - a numba intrinsic
    """Set this thread's MXCSR to `value` (nothing off x86)."""
    if not isinstance(value, types.Integer):
        return None

    def codegen(context, builder, sig, args):  # noqa: ARG001
        if _X86:
            slot = cgutils.alloca_once(builder, ir.IntType(32))
            builder.store(context.cast(builder, args[0], sig.args[0], types.int32), slot)
            _csr_call(builder, "llvm.x86.sse.ldmxcsr", slot)
        return context.get_dummy_value()
    return types.none(value), codegen


@njit(cache=True, no_cfunc_wrapper=True)
def flush() -> int:
    """Flush subnormals on this thread; its former mode, for `restore`."""
    before = mode()
    set_mode(before | FLUSH)
    return before


@njit(cache=True, no_cfunc_wrapper=True)
def restore(before: int) -> None:
    set_mode(before)
