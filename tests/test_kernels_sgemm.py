"""The sgemm of CPU kernels (kernels/sgemm.py, its body kernels/vgemm.py) against
float64 products for every storage layout of A and B, at offsets into flat buffers,
for sizes around its blocks (rows by 8 and by 256, or 512 at half a k panel, or up
to 384 at once, columns by 32 in two vectors, k by 256); its bits independent of how
a caller cuts the product into row or column chunks (what makes a run's losses the
same for any thread count); IEEE special values as a product computes them; and row
strides wider than a row with beta 1 (an accumulation)."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from llvmlite import binding
from sexpgpu.kernels import sgemm, vgemm

# every remainder of both row blocks (8 and 6), whole and masked column panels, k over
# one panel and a partial transposed tile of it, A^T read in place and copied
SIZES = [(1, 1, 1), (2, 3, 2), (5, 7, 3), (11, 40, 33), (12, 64, 65), (64, 32, 64), (33, 300, 17),
         (7, 2 * vgemm.KC + 9, 70), (150, 128, 96), (vgemm.MC + 45, 20, 40),
         # k of half a panel: row panels twice as tall, the last a partial one; a
         # short A in one row panel over two k panels
         (4 * vgemm.MC + 45, vgemm.KC // 2, 40), (vgemm.ONE_PANEL - 3, vgemm.KC + 44, 70),
         # k panels inside the column panels (a row panel's whole A under A_WHOLE):
         # two row panels (MC rows and the rest), each over two k panels
         (vgemm.ONE_PANEL + 45, vgemm.KC + 44, 70),
         # A^T copied to its panel (PACK_PANELS column panels), two row and k panels,
         # the second row panel's last micro-panel partial (rest blocks inside it)
         (vgemm.MC + 45, vgemm.KC + 9, vgemm.PACK_PANELS * 32 + 5)]
LAYOUTS = ["nn", "nt", "tn", "tt"]


def _call(layout: str, shape: vgemm.Shape | None = None):
    if shape is None:
        gemm = getattr(sgemm, f"gemm_{layout}")
    else:
        gemm = sgemm._gemm(layout[0] == "t", layout[1] == "t", shape)
    return numba.njit(lambda *args: gemm(*args))


def _operands(rng, m: int, k: int, n: int, layout: str):
    """Flat a and b with a few elements before each matrix, and the matrices as
    float64 (m x k) and (k x n) arrays."""
    ta, tb = layout[0] == "t", layout[1] == "t"
    a = rng.standard_normal(m * k + 5).astype(np.float32)
    b = rng.standard_normal(k * n + 3).astype(np.float32)
    A = a[5:].reshape((k, m)).T if ta else a[5:].reshape((m, k))
    B = b[3:].reshape((n, k)).T if tb else b[3:].reshape((k, n))
    return a, b, A.astype(np.float64), B.astype(np.float64), (m if ta else k), (k if tb else n)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [vgemm.WIDE, vgemm.NARROW], ids=["avx512", "avx2"])
def test_sgemm_is_the_product_for_every_layout(layout: str, shape: vgemm.Shape) -> None:
    """Both blocks (the host's and the other CPU class's: LLVM splits or joins the
    vectors, the arithmetic is the same) on every layout."""
    call = _call(layout, shape)
    rng = np.random.default_rng(3)
    for m, k, n in SIZES:
        a, b, A, B, lda, ldb = _operands(rng, m, k, n, layout)
        got = np.full(m * n + 4, np.nan, np.float32)
        call(a, 5, lda, b, 3, ldb, got, 4, n, m, k, n, 0.0)
        assert np.isnan(got[:4]).all()  # nothing written before the output's offset
        # f32 rounding of k products: error of order sqrt(k) ulps of the row's scale
        np.testing.assert_allclose(got[4:].reshape(m, n), A @ B,
                                   rtol=1e-5, atol=2e-6 * k, err_msg=f"{layout} {m, k, n}")


@pytest.mark.parametrize(("name", "features", "shape"), [
    (None, None, None), ("generic", None, vgemm.NARROW),
    ("znver5", "+avx2,+fma,+avx512f", vgemm.WIDE), (None, "+avx2,+fma,-avx512f", vgemm.NARROW)])
def test_the_block_follows_the_cpu_numba_compiles_for(name, features, shape,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The host's features, or those of a CPU named for numba (NUMBA_CPU_NAME,
    NUMBA_CPU_FEATURES): a named CPU without features gets the narrow block."""
    monkeypatch.setattr(numba.config, "CPU_NAME", name)
    monkeypatch.setattr(numba.config, "CPU_FEATURES", features)
    vgemm.host_shape.cache_clear()
    try:
        host = "+avx512f" in binding.get_host_cpu_features().flatten().split(",")
        want = shape or (vgemm.WIDE if host else vgemm.NARROW)
        assert vgemm.host_shape() == want
    finally:
        vgemm.host_shape.cache_clear()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_an_empty_inner_dimension_gives_beta_c(layout: str) -> None:
    """k = 0 (no kernel passes it, the op's contract has it): C = beta C, all of C
    written when beta is 0 (a NaN there becomes 0), nothing past it."""
    call = _call(layout)
    m, n = 5, 40
    c = np.full(m * n + 3, np.nan, np.float32)
    empty = np.zeros(1, np.float32)
    call(empty, 0, m if layout[0] == "t" else 1, empty, 0, 1 if layout[1] == "t" else n,
         c, 0, n, m, 0, n, 0.0)
    assert not c[:m * n].any() and np.isnan(c[m * n:]).all()
    c[:m * n] = 2.0
    call(empty, 0, 1, empty, 0, 1, c, 0, n, m, 0, n, 0.5)
    assert (c[:m * n] == 1.0).all()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("m, n", [(37, 70), (vgemm.MC + 20, 130),
                                  (vgemm.ONE_PANEL - 3, 70)],
                         ids=["small", "a-copied", "k-order"])
def test_chunks_give_the_bits_of_the_whole(layout: str, m: int, n: int) -> None:
    """Rows or columns computed in separate calls (a kernel's chunks on different
    threads) give the same bits as one call: each element's sum runs over k in one
    order whatever the blocks around it, whether A^T is read in place or from its
    copy (the second size copies it whole, not in its narrow column chunks), and
    whether the k panels run inside the column panels (the third size's whole A is
    too deep for that, its row chunks are not)."""
    call = _call(layout)
    ta, tb = layout[0] == "t", layout[1] == "t"
    rng = np.random.default_rng(5)
    k = 300
    a, b, _, _, lda, ldb = _operands(rng, m, k, n, layout)
    whole = np.zeros(m * n, np.float32)
    call(a, 5, lda, b, 3, ldb, whole, 0, n, m, k, n, 0.0)
    by_rows, by_cols = np.zeros_like(whole), np.zeros_like(whole)
    for r0, r1 in ((0, 5), (5, 22), (22, m)):  # rows cut off their blocks of 4
        call(a, 5 + r0 * (1 if ta else lda), lda, b, 3, ldb, by_rows, r0 * n, n,
             r1 - r0, k, n, 0.0)
    for c0, c1 in ((0, 17), (17, 50), (50, n)):  # columns cut inside a vector
        call(a, 5, lda, b, 3 + c0 * (ldb if tb else 1), ldb, by_cols, c0, n,
             m, k, c1 - c0, 0.0)
    assert np.array_equal(by_rows, whole) and np.array_equal(by_cols, whole)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_special_values_as_the_product_has_them(layout: str) -> None:
    """A NaN or inf of A reaches its row only (inf * 0 is NaN there), one of B its
    column only; with beta 0, C is not read (a NaN left there does not leak); with
    beta 1 an inf of C stays."""
    call = _call(layout)
    ta = layout[0] == "t"
    rng = np.random.default_rng(6)
    m, k, n = 9, 20, 40
    a, b, A, B, lda, ldb = _operands(rng, m, k, n, layout)
    A[2, 3], A[5, 0], B[7, 33], B[1, 4] = np.nan, np.inf, -np.inf, 0.0
    A[6, 1] = np.inf  # times B[1, 4] = 0: NaN at (6, 4)
    flat_a = A.T.ravel() if ta else A.ravel()
    flat_b = B.T.ravel() if layout[1] == "t" else B.ravel()
    a[5:], b[3:] = flat_a.astype(np.float32), flat_b.astype(np.float32)
    with np.errstate(invalid="ignore"):
        want = A @ B
    c = np.full(m * n, np.nan, np.float32)
    call(a, 5, lda, b, 3, ldb, c, 0, n, m, k, n, 0.0)
    got = c.reshape(m, n)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isinf(got), np.isinf(want)) and np.isnan(got[6, 4])
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-4)
    c = np.zeros(m * n, np.float32)
    c[7] = np.inf
    call(a, 5, lda, b, 3, ldb, c, 0, n, 0 + 1, k, n, 1.0)  # row 0 only, beta 1
    assert np.isposinf(c[7]) or np.isnan(want[0, 7])


def _rows(buf: np.ndarray, at: int, ld: int, shape: tuple[int, int]) -> np.ndarray:
    rows, cols = shape
    return np.stack([buf[at + r * ld:at + r * ld + cols] for r in range(rows)])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_row_strides_and_beta(layout: str, beta: float) -> None:
    """Matrices whose rows lie apart (row stride wider than a row) are read and written
    in place, the gaps left alone; beta 1 adds the product to what is there."""
    ta, tb = layout[0] == "t", layout[1] == "t"
    rng = np.random.default_rng(4)
    m, k, n = 7, 5, 6
    a_shape, b_shape = ((k, m) if ta else (m, k)), ((n, k) if tb else (k, n))
    lda, ldb, ldc = a_shape[1] + 3, b_shape[1] + 2, n + 4
    a = rng.standard_normal(2 + a_shape[0] * lda).astype(np.float32)
    b = rng.standard_normal(1 + b_shape[0] * ldb).astype(np.float32)
    c = rng.standard_normal(3 + m * ldc).astype(np.float32)
    before = c.copy()
    _call(layout)(a, 2, lda, b, 1, ldb, c, 3, ldc, m, k, n, beta)
    A, B = _rows(a, 2, lda, a_shape), _rows(b, 1, ldb, b_shape)
    A, B = (A.T if ta else A).astype(np.float64), B.T if tb else B
    want = A @ B + beta * _rows(before, 3, ldc, (m, n))
    np.testing.assert_allclose(_rows(c, 3, ldc, (m, n)), want, rtol=1e-5, atol=1e-5)
    written = np.zeros(c.size, bool)
    for r in range(m):
        written[3 + r * ldc:3 + r * ldc + n] = True
    assert np.array_equal(c[~written], before[~written])  # the gaps untouched


@pytest.mark.parametrize("shape", [vgemm.WIDE, vgemm.NARROW], ids=["avx512", "avx2"])
def test_the_b_panel_starts_on_a_cache_line(shape: vgemm.Shape) -> None:
    """The k-major copy of B the blocks load two vectors a k step from: on a stack
    slot of 4-byte alignment each 64-byte load spanned two lines (one core: 160 ->
    181 GFLOP/s at 384x128x384 once aligned)."""
    from llvmlite import ir

    module = ir.Module()
    text = str(vgemm.function(module, False, True, shape))
    panel = f"alloca float, i64 {vgemm.KC * shape.nr}"
    assert f"{panel}, align 64" in text, [line for line in text.splitlines() if "alloca" in line]
