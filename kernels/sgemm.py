"""The sgemm call of CPU matmul kernels: `gemm_cf(a, a_at, b, b_at, out, out_at, m, k,
n)` is `np.dot(A, B, O)` on (m, k), (k, n) and (m, n) matrices of flat f32 buffers at
element offsets, `c` or `f` saying whether A and B are stored row-major or transposed
(an F-ordered view). It is numba's own BLAS call (numba.np.linalg.call_xxgemm), made
with the same arguments np.dot derives from those layouts, so the results are the
same bits; what it leaves out is np.dot's typing, shape checks and its branches for
vectors and empty matrices (kernels/structured.py calls it only where m > 1, n > 1
and k > 0), which made each matmul kernel cost ~0.2 s more to compile.
"""

from __future__ import annotations

from numba import types
from numba.extending import intrinsic

_F32 = types.float32
_INTS = (1, 3, 5, 6, 7, 8)  # the integer arguments: offsets a_at, b_at, out_at; m, k, n


def _gemm(a_layout: str, b_layout: str):  # noqa: ANN202 - a numba intrinsic
    @intrinsic
    def gemm(typingctx, a, a_at, b, b_at, out, out_at, m, k, n):  # noqa: ARG001
        # numba's array and BLAS lowering: only when a kernel compiles (a warm run
        # imports this module with every matmul kernel and loads them from the cache)
        from numba.np.linalg import call_xxgemm, ensure_blas

        ensure_blas()
        arrays = (a, b, out)
        if not all(isinstance(t, types.Array) and t.dtype == _F32 for t in arrays):
            return None
        if not all(isinstance(t, types.Integer) for t in (a_at, b_at, out_at, m, k, n)):
            return None

        def codegen(context, builder, sig, args):
            a_off, b_off, o_off, m_, k_, n_ = (
                context.cast(builder, args[i], sig.args[i], types.intp) for i in _INTS)

            def data(i, offset):
                array = context.make_array(sig.args[i])(context, builder, args[i])
                return builder.gep(array.data, [offset])

            call_xxgemm(context, builder,
                        types.Array(_F32, 2, a_layout), (m_, k_), data(0, a_off),
                        types.Array(_F32, 2, b_layout), (k_, n_), data(2, b_off),
                        types.Array(_F32, 2, "C"), (m_, n_), data(4, o_off))
            return context.get_dummy_value()

        return types.none(a, a_at, b, b_at, out, out_at, m, k, n), codegen

    return gemm


# stored row-major (c) or transposed (f), for A then B
gemm_cc = _gemm("C", "C")
gemm_cf = _gemm("C", "F")
gemm_fc = _gemm("F", "C")
gemm_ff = _gemm("F", "F")
