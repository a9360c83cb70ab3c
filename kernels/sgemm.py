"""sgemm for CPU kernels (matmuls, the fused attention), called as numba's np.dot
calls it (its wrapper of scipy's BLAS) but on matrices anywhere in flat f32 buffers:
`gemm_nt(a, a_at, lda, b, b_at, ldb, c, c_at, ldc, m, k, n, beta)` is C = A B + beta C
with A (m x k) stored as is (n) and B (k x n) stored transposed (t), each matrix given
by the element offset of its first row and its row stride. With the row strides np.dot
derives from a layout it is the same BLAS call, so the same bits
(tests/test_kernels_sgemm.py). Why not np.dot on slices: each call site compiled its
typing, shape checks and vector branches (~0.2 s per matmul kernel, 2-3 s for the
attention's); it needs contiguous matrices (a head's rows inside a projection are
not); and it has no beta (an accumulation was a second product and an add loop).
kernels/structured.py keeps np.dot for a vector operand (m or n of 1: gemv)."""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_F32 = types.float32
_CHAR = ir.IntType(8)
_VOID_P = _CHAR.as_pointer()
_INTP = cgutils.intp_t
# numba's wrapper of scipy's BLAS (the one np.dot calls): kind, transa, transb, m, n, k,
# alpha, a, lda, b, ldb, beta, c, ldc, column-major
_XXGEMM = ir.FunctionType(ir.IntType(32), [_CHAR, _CHAR, _CHAR, _INTP, _INTP, _INTP,
                                           _VOID_P, _VOID_P, _INTP, _VOID_P, _INTP,
                                           _VOID_P, _VOID_P, _INTP])


def _flag(transposed: bool) -> ir.Constant:
    return ir.Constant(_CHAR, ord("t" if transposed else "n"))


def _gemm(a_t: bool, b_t: bool):  # noqa: ANN202 - a numba intrinsic
    """C (m x n, row-major, row stride ldc) = A (m x k) B (k x n) + beta C, A read from
    rows of lda elements (transposed: A^T's rows, k of them), B likewise."""
    @intrinsic
    def gemm(typingctx, a, a_at, lda, b, b_at, ldb, c, c_at, ldc, m, k, n, beta):  # noqa: ARG001
        # numba's BLAS lowering: only when a kernel compiles (a warm run imports this
        # module with every matmul kernel and loads them from the cache: ~50 ms)
        from numba.np.linalg import check_blas_return, ensure_blas

        ensure_blas()
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
                return builder.bitcast(builder.gep(array.data, [offset]), _VOID_P)

            alpha = cgutils.alloca_once_value(builder, context.get_constant(_F32, 1.0))
            beta_ = cgutils.alloca_once_value(
                builder, context.cast(builder, args[12], sig.args[12], _F32))
            fn = cgutils.get_or_insert_function(builder.module, _XXGEMM, "numba_xxgemm")
            # row-major C = A B is column-major C^T = B^T A^T
            res = builder.call(fn, (ir.Constant(_CHAR, ord("s")), _flag(b_t), _flag(a_t),
                                    n_, m_, k_, builder.bitcast(alpha, _VOID_P),
                                    data(3, b_off), ldb_, data(0, a_off), lda_,
                                    builder.bitcast(beta_, _VOID_P), data(6, c_off), ldc_))
            check_blas_return(context, builder, res)
            return context.get_dummy_value()

        return types.none(a, a_at, lda, b, b_at, ldb, c, c_at, ldc, m, k, n, beta), codegen

    return gemm


gemm_nn = _gemm(False, False)
gemm_nt = _gemm(False, True)
gemm_tn = _gemm(True, False)
gemm_tt = _gemm(True, True)
