"""sgemm for CPU kernels (matmuls, the fused attention) on matrices anywhere in flat f32
buffers: `gemm_nt(a, a_at, lda, b, b_at, ldb, c, c_at, ldc, m, k, n, beta)` is C = A B
+ beta C with A (m x k) stored as is (n) and B (k x n) stored transposed (t), each
matrix given by the element offset of its first row and its row stride. The body is
our own vector code (kernels/vgemm.py says why and how): no library call, and each
element of C the same chain of FMAs over k however a kernel cuts the product into
chunks (tests/test_kernels_sgemm.py). kernels/structured.py keeps np.dot for a
vector operand (m or n of 1: gemv).

The four variants are compiled once, as one C-callable function (the variant its
first argument; kernels/vgemm.py's `shared`, in numba's cache beside that file),
registered with LLVM's symbol table as `sexpgpu_sgemm`; a kernel's call is an
external call resolved when it is linked or loaded from numba's cache. Why not
the body inlined into every kernel: LLVM compiled it anew for each (~0.05-0.1 s a
variant a kernel, ~0.6 s of the char-GPT's cold start)."""

from __future__ import annotations

from numba import types
from numba.extending import intrinsic
from sexpgpu.kernels import vgemm

_F32 = types.float32


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
            vgemm.call(builder, a_t, b_t, operands, shape)
            return context.get_dummy_value()

        return types.none(a, a_at, lda, b, b_at, ldb, c, c_at, ldc, m, k, n, beta), codegen

    return gemm


gemm_nn = _gemm(False, False)
gemm_nt = _gemm(False, True)
gemm_tn = _gemm(True, False)
gemm_tt = _gemm(True, True)
