"""sgemm for CPU kernels (matmuls, the fused attention) on matrices anywhere in flat f32
buffers: `gemm_nt(a, a_at, lda, b, b_at, ldb, c, c_at, ldc, m, k, n, beta)` is C = A B
+ beta C with A (m x k) stored as is (n) and B (k x n) stored transposed (t), each
matrix given by the element offset of its first row and its row stride. The body is
our own vector code (kernels/vgemm.py says why and how): no library call, and each
element of C the same chain of FMAs over k however a kernel cuts the product into
chunks (tests/test_kernels_sgemm.py). kernels/structured.py keeps np.dot for a
vector operand (m or n of 1: gemv).

The four variants are compiled once, as one C-callable function (the variant its
first argument) in numba's cache beside this module, registered with LLVM's symbol
table as `sexpgpu_sgemm`; a kernel's call is an external call resolved when it is
linked or loaded from numba's cache (~40 ms a process to load it). Why not
the body inlined into every kernel: LLVM compiled it anew for each (~0.05-0.1 s a
variant a kernel, ~0.6 s of the char-GPT's cold start)."""

from __future__ import annotations

from llvmlite import binding, ir
from numba import cfunc, types
from numba.extending import intrinsic
from sexpgpu.kernels import vgemm

_F32 = types.float32
_PTR = types.CPointer(_F32)
_SIGNATURE = types.void(_PTR, types.intp, _PTR, types.intp, _PTR, types.intp,
                        types.intp, types.intp, types.intp, _F32)
# the shared function's LLVM type: the variant, then vgemm's arguments
_SHARED = ir.FunctionType(ir.VoidType(), [ir.IntType(64), *vgemm.SIGNATURE.args])


_SYMBOL = "sexpgpu_sgemm"


def _gemm(a_t: bool, b_t: bool, shape: vgemm.Shape | None = None):  # noqa: ANN202 - an intrinsic
    """C (m x n, row-major, row stride ldc) = A (m x k) B (k x n) + beta C, A read from
    rows of lda elements (transposed: A^T's rows, k of them), B likewise: a call of
    the shared variant, or with `shape` (tests compile the other CPU class's block
    too) of vgemm's body inlined."""
    @intrinsic
    def gemm(typingctx, a, a_at, lda, b, b_at, ldb, c, c_at, ldc, m, k, n, beta):  # noqa: ARG001
        if not all(isinstance(t, types.Array) and t.dtype == _F32 for t in (a, b, c)):
            return None
        ints = (a_at, lda, b_at, ldb, c_at, ldc, m, k, n)
        if not all(isinstance(t, types.Integer) for t in ints):
            return None

        def codegen(context, builder, sig, args):
            (a_off, lda_, b_off, ldb_, c_off, ldc_, m_, k_, n_) = (
                context.cast(builder, args[i], sig.args[i], types.intp)
                for i in (1, 2, 4, 5, 7, 8, 9, 10, 11))

            def data(i, offset):
                array = context.make_array(sig.args[i])(context, builder, args[i])
                return builder.gep(array.data, [offset])

            operands = (data(0, a_off), lda_, data(3, b_off), ldb_, data(6, c_off), ldc_,
                        m_, k_, n_, context.cast(builder, args[12], sig.args[12], _F32))
            if shape is None:
                fn = builder.module.globals.get(_SYMBOL) or ir.Function(
                    builder.module, _SHARED, _SYMBOL)
                variant = ir.Constant(ir.IntType(64), 2 * a_t + b_t)
                builder.call(fn, (variant, *operands))
            else:
                builder.call(vgemm.function(builder.module, a_t, b_t, shape), operands)
            return context.get_dummy_value()

        return types.none(a, a_at, lda, b, b_at, ldb, c, c_at, ldc, m, k, n, beta), codegen

    return gemm


def _variant(code: int) -> tuple[bool, bool]:
    """(A transposed, B transposed) of variant `code` (0 nn, 1 nt, 2 tn, 3 tt)."""
    return bool(code & 2), bool(code & 1)


@intrinsic
def _body(typingctx, variant, a, lda, b, ldb, c, ldc, m, k, n, beta):  # noqa: ARG001
    """vgemm's four functions for the host, the one of `variant` called."""
    def codegen(context, builder, sig, args):  # noqa: ARG001
        switch = builder.switch(args[0], builder.append_basic_block("none"))
        done = builder.append_basic_block("done")
        for code in range(4):
            block = builder.append_basic_block(f"variant{code}")
            switch.add_case(code, block)
            builder.position_at_end(block)
            builder.call(vgemm.function(builder.module, *_variant(code)), args[1:])
            builder.branch(done)
        builder.position_at_end(switch.default)
        builder.branch(done)
        builder.position_at_end(done)
        return context.get_dummy_value()

    return types.none(variant, a, lda, b, ldb, c, ldc, m, k, n, beta), codegen


@cfunc(types.void(types.intp, *_SIGNATURE.args), cache=True, error_model="numpy")
def _sgemm(variant, a, lda, b, ldb, c, ldc, m, k, n, beta):  # noqa: ANN001, ANN202
    _body(variant, a, lda, b, ldb, c, ldc, m, k, n, beta)


binding.add_symbol(_SYMBOL, _sgemm.address)


gemm_nn = _gemm(False, False)
gemm_nt = _gemm(False, True)
gemm_tn = _gemm(True, False)
gemm_tt = _gemm(True, True)
