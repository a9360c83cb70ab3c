"""Parallel CPU kernels (chunk functions, kernels/parallel.py: big loops, and matmuls
cut into row or column chunks) on the cases the sequential kernels are tested
on: with the thresholds at their lowest (every loop of more than one outer iteration
parallel, every matmul of 2 x 16 rows or columns cut), each registered op matches the
reference interpreter on its samples and its special values, bad indices are E-INDEX
(the kernels that check them stay serial), and the
fused attention equals the unfused form on split heads. A char-GPT-sized layer (the
default thresholds) gives the same bits with one thread and with two."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import test_attention as attention
import test_kernels_ops as ops
from sexpgpu.autodiff.grad import grad
from sexpgpu.kernels import bands, parallel, threads

from sexpgpu import kernels
from sexpgpu.ir import build
from sexpgpu.ir.graph import Graph
from sexpgpu.ir.ops.registry import OPS


@pytest.fixture
def everything_parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "PARALLEL_WORK", 2)
    monkeypatch.setattr(threads, "MIN_FLOPS_PER_THREAD", 1)
    monkeypatch.setattr(threads, "MIN_CHUNK_DIM", 16)
    monkeypatch.setattr(threads.env, "usable_cores", lambda: 4)  # chunks on any machine


@pytest.mark.usefixtures("everything_parallel")
@pytest.mark.parametrize("name", sorted(OPS))
def test_op_matches_reference_in_chunks(name: str) -> None:
    ops.test_op_matches_reference(name)


@pytest.mark.usefixtures("everything_parallel")
@pytest.mark.parametrize("name", sorted(OPS))
def test_op_special_values_match_reference_in_chunks(name: str) -> None:
    ops.test_op_special_values_match_reference(name)


@pytest.mark.usefixtures("everything_parallel")
@pytest.mark.parametrize("name", ops.INDEXED)
def test_op_index_out_of_range_is_e_index_in_chunks(name: str) -> None:
    """The kernels that check indices stay serial (two threads could mix the error
    buffer's (where, value) pair); the others around them are chunks."""
    ops.test_op_index_out_of_range_is_e_index(name)
    g, _ = ops.sample_graph(name)
    for text in kernels.compile(g).generated.kernel_sources:
        assert not ("index_error(" in text and "def chunk(" in text), name


@pytest.mark.usefixtures("everything_parallel")
@pytest.mark.parametrize(("causal", "scale", "t"), [(True, None, attention.T),
                                                    (False, 0.7, 70), (True, None, 70)])
def test_attention_in_chunks_equals_the_unfused_form(causal: bool, scale, t: int) -> None:
    compiled = kernels.compile(attention._graph(True, causal, scale, t))
    chunked = [text for text in compiled.generated.kernel_sources if "def chunk(" in text]
    assert sum("attention" in text.split("\n")[0] for text in chunked) == 2  # fwd, bwd
    attention.test_fused_equals_the_unfused_form_on_split_heads(causal, scale, t)


@pytest.mark.usefixtures("everything_parallel")
def test_the_ops_run_as_chunks_under_these_thresholds() -> None:
    """The cases above do take the parallel paths: a loop op is a chunk function, a
    matmul's chunk function calls sgemm on its rows."""
    g = Graph("paths")
    x, w = g.input("x", (64, 48)), g.input("w", (48, 40))
    g.output("y", g.apply("gelu", g.apply("matmul", x, w)))
    texts = kernels.compile(g).generated.kernel_sources
    assert any("def chunk(" in text for text in texts)
    assert any("def chunk(" in text and "gemm_nn(" in text for text in texts)


@pytest.mark.usefixtures("everything_parallel")
@pytest.mark.parametrize("rows", [300, 64 * 5 + 3])
def test_chunks_of_several_rows_cover_every_row_once(rows: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """More outer iterations than chunks: a chunk runs several rows, the last one
    fewer; a row-wise softmax (max, exp, sum) equals numpy's and the serial kernel's
    bits."""
    g = Graph("rows")
    x = g.input("x", (rows, 50))
    g.output("y", build.softmax(g, g.apply("mul", x, build.scalar(g, 3.0, "f32")), -1))
    feed = {"x": np.random.default_rng(2).standard_normal((rows, 50)).astype(np.float32)}
    compiled = kernels.compile(g)
    texts = [text for text in compiled.generated.kernel_sources if "def chunk(" in text]
    assert texts and any("first_ + " in text for text in texts)  # several rows a chunk
    got = compiled.run(feed)["y"]
    z = 3.0 * feed["x"].astype(np.float64)
    want = np.exp(z - z.max(-1, keepdims=True))
    np.testing.assert_allclose(got, want / want.sum(-1, keepdims=True), rtol=2e-6, atol=1e-7)
    monkeypatch.setattr(threads, "PARALLEL_WORK", 1 << 62)  # every loop serial,
    monkeypatch.setattr(bands, "MIN_RUN_WORK", 1 << 62)  # none of them in bands
    serial = kernels.compile(g)
    assert not any("def chunk(" in text for text in serial.generated.kernel_sources)
    assert serial.run(feed)["y"].tobytes() == got.tobytes()


def _block(t: int = 64, heads: int = 4, width: int = 128, batch: int = 12) -> Graph:
    """A GPT block's parallel parts at the char-GPT's size: the attention on heads of
    one projection, the MLP's GELU and a layer norm; the loss's gradient of all."""
    g = Graph("block")
    x = g.input("x", (batch, t, width))
    qkv = g.apply("matmul", x, g.input("w_qkv", (width, 3 * width)))
    d = width // heads

    def head(i: int):
        part = build.slice_axis(g, qkv, 2, i * width, (i + 1) * width)
        return g.apply("permute", g.apply("reshape", part, shape=(batch, t, heads, d)),
                       perm=(0, 2, 1, 3))

    att = g.apply("attention", head(0), head(1), head(2), causal=True, scale=None)[0]
    y = g.apply("reshape", g.apply("permute", att, perm=(0, 2, 1, 3)), shape=(batch, t, width))
    h = g.apply("gelu", g.apply("matmul", y, g.input("w_fc", (width, 4 * width))))
    mean = g.apply("mean", h, axes=(2,), keepdims=True)
    centred = g.apply("sub", h, mean)
    loss = g.apply("sum", g.apply("mul", centred, centred), axes=None, keepdims=False)
    g.output("loss", loss)
    g.output("dx", grad(g, loss, [x])[x])
    return g


@pytest.mark.parametrize("count", [2, 3])
def test_a_gpt_block_gives_the_same_bits_with_any_thread_count(
        count: int, monkeypatch: pytest.MonkeyPatch) -> None:
    import numba

    compiled = kernels.compile(_block())
    chunked = [text.split("\n")[0] for text in compiled.generated.kernel_sources
               if "def chunk(" in text]
    assert any("attention" in head for head in chunked) and any("gelu" in h for h in chunked)
    rng = np.random.default_rng(5)
    feed = {"x": rng.standard_normal((12, 64, 128)).astype(np.float32),
            "w_qkv": (rng.standard_normal((128, 384)) / 11).astype(np.float32),
            "w_fc": (rng.standard_normal((128, 512)) / 11).astype(np.float32)}
    runs = []
    for n in (1, count):
        monkeypatch.setenv("SEXPGPU_THREADS", str(n))
        threads.reset()
        try:
            runs.append(compiled.run(feed))
            assert numba.get_num_threads() == min(n, numba.config.NUMBA_NUM_THREADS)
        finally:
            threads.reset()
    for key in runs[0]:
        assert runs[0][key].tobytes() == runs[1][key].tobytes(), key


@numba.njit
def _offset_copy(c, block):  # a chunk function: element c of an f32 buffer, plus k, as int64
    src, dst, k = parallel.unpack(block, "float32,int64", 1)
    dst[c] = np.int64(src[c]) + k


def test_launch_passes_buffers_where_they_lie_and_refuses_strided_ones() -> None:
    """A chunk function reads each buffer at its own first element (a slice of a
    bigger array included) and with its length; a strided buffer, which an address
    and a length cannot describe, is refused."""
    src = np.arange(10, dtype=np.float32)[2:6]
    dst = np.zeros(8, np.int64)[4:]
    parallel.launch(_offset_copy, 4, src, dst, 100)
    assert dst.tolist() == [102, 103, 104, 105]
    with pytest.raises(ValueError, match="contiguous"):
        parallel.launch(_offset_copy, 2, np.arange(8, dtype=np.float32)[::2], dst, 0)


def test_a_step_modules_launches_pack_each_block_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """`Launches` packs a site's block on its first step and reuses it while the site
    gets the same objects; a new array (a new batch) or another integer at the site
    is packed again, and every step computes from the arguments it was given."""
    packed = []
    pack = parallel.pack
    monkeypatch.setattr(parallel, "pack", lambda args: packed.append(args) or pack(args))
    launch = parallel.Launches()
    src, dst = np.arange(4, dtype=np.float32), np.zeros(4, np.int64)

    def step(source: np.ndarray, k: int) -> list[int]:
        launch.start()
        launch(_offset_copy, 4, source, dst, 100)
        launch(_offset_copy, 4, source, dst, k)  # a second site, another block
        return dst.tolist()

    assert step(src, 1) == [1, 2, 3, 4] and len(packed) == 2
    src += 10  # the same array, new contents: read where it lies
    assert step(src, 1) == [11, 12, 13, 14] and len(packed) == 2
    assert step(np.arange(4, dtype=np.float32), 1) == [1, 2, 3, 4] and len(packed) == 4
    assert step(src, 1000) == [1010, 1011, 1012, 1013] and len(packed) == 6


@pytest.mark.usefixtures("everything_parallel")
def test_a_compiled_step_packs_its_parameters_launches_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The executor hands the step the same flat view of a parameter while the caller
    passes the same array, so the launch that reads only the parameter (its update)
    packs its block on the first step alone; the matmul's, which reads the batch too,
    is packed again each step. An update in place is seen; a new array is packed."""
    g = Graph("p")
    x, w = g.input("x", (64, 32)), g.input("w", (32, 48))
    g.output("y", g.apply("matmul", x, w))
    g.update(w, g.apply("mul", w, build.scalar(g, 0.5, "f32")))
    packed: list[int] = []
    pack = parallel.pack
    monkeypatch.setattr(parallel, "pack", lambda args: packed.append(len(args)) or pack(args))
    compiled = kernels.compile(g)
    assert compiled.source.count("launch(") == 2
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((32, 48), np.float32)
    expected = weight.copy()
    for step in range(3):
        xs = rng.standard_normal((64, 32), np.float32)
        out = compiled.run({"x": xs, "w": weight})["y"]
        np.testing.assert_allclose(out, xs @ expected, rtol=1e-5, atol=1e-5)
        expected *= 0.5
        assert len(packed) == 2 + step  # the matmul's block again, the update's not
    compiled.run({"x": xs, "w": weight.copy()})
    assert len(packed) == 6
