"""The CPU thread policy: one pool (numba's) runs a step's parallel parts, a second
thread only while the last window saw a free core; SEXPGPU_THREADS fixes the count;
big matmuls are cut into chunks by their shape, big loops into chunks by their size;
a step's results are the same bits with one thread and with two; the `open` event
records the policy and the BLAS, and `sexpgpu diff` shows two runs that differ there."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import run_files
from sexpgpu.kernels import bands, blas, threads
from thread_runs import runs_by_threads

from sexpgpu.api import load_program
from sexpgpu.commands import diff

WIDE = run_files.mlp((64, 512, 512, 10), batch=128, n=512,
                     optimizer="(optim:adam :lr 1e-3)", steps=4)


def test_big_matmuls_are_cut_by_their_shape_and_the_machine(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads.env, "usable_cores", lambda: 2)
    assert threads.matmul_chunks(2 * 100 * 128 * 128, 128) == (1, 128)  # gains little: whole
    assert threads.matmul_chunks(2 * 100 * 256 * 256, 256) == (2, 128)  # 2^21.6 FLOPs a chunk
    chunks, size = threads.matmul_chunks(2 * 768 * 128 * 384, 768)
    assert (chunks, size) == (2, 384)
    assert threads.matmul_chunks(2 * 768 * 128 * 128, 768) == (2, 384)  # twice the minimum
    monkeypatch.setattr(threads.env, "usable_cores", lambda: 16)
    chunks, size = threads.matmul_chunks(2 * 768 * 128 * 384, 768)
    assert chunks == threads.MAX_CHUNKS and size % 16 == 0
    assert (chunks - 1) * size < 768 <= chunks * size
    chunks, _ = threads.matmul_chunks(2 * 768 * 128 * 128, 768)
    assert chunks == 6  # each chunk at least MIN_FLOPS_PER_THREAD
    monkeypatch.setattr(threads.env, "usable_cores", lambda: 1)
    assert threads.matmul_chunks(2 * 768 * 128 * 384, 768) == (1, 768)


def test_the_policy_starts_with_one_thread_and_the_blas_keeps_one() -> None:
    policy = threads.Policy(cap=2)
    assert policy.threads() == 1  # nothing measured yet
    assert blas._library().scipy_openblas_get_num_threads() == 1
    policy.allowed = 2
    assert policy.threads() == min(2, threads.numba_threads())
    assert threads.Policy(cap=2, fixed=1).threads() == 1


@pytest.mark.parametrize("idle,ours,allowed", [(0.0, 0.4, 1), (0.0, 1.0, 1), (0.2, 0.9, 1),
                                                 (0.9, 1.0, 2), (1.0, 1.0, 2), (3.0, 1.0, 2)])
def test_free_cores_are_the_idle_time_plus_our_own(monkeypatch: pytest.MonkeyPatch,
                                                   idle: float, ours: float,
                                                   allowed: int) -> None:
    """Per second of wall time: the machine's idle CPU seconds and this process's."""
    clock = {"idle": 100.0, "ours": 5.0}
    monkeypatch.setattr(threads, "_idle_seconds", lambda: clock["idle"])
    monkeypatch.setattr(threads.time, "process_time", lambda: clock["ours"])
    policy = threads.Policy(cap=2)
    policy.refresh(now=10.0)
    clock["idle"] += idle
    clock["ours"] += ours
    policy.refresh(now=10.1)  # inside the window: not measured yet
    assert policy.windows == 0
    policy.refresh(now=11.0)
    assert policy.windows == 1 and policy.allowed == allowed


def test_unreadable_proc_stat_keeps_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "_idle_seconds", lambda: None)
    policy = threads.Policy(cap=8)
    for now in (1.0, 2.0, 3.0):
        policy.refresh(now=now)
    assert policy.allowed == 1


def test_a_step_without_parallel_kernels_keeps_the_blas_to_one_thread() -> None:
    """Its small matmuls are single sgemm calls and it never asks for threads: the
    CPU step made it keeps the BLAS at one thread all the same (two threads of a
    100x256x256 sgemm took 13x as long with other work on the cores)."""
    from sexpgpu import kernels
    from sexpgpu.ir.graph import Graph

    g = Graph("small")
    a, w = g.input("a", (100, 128)), g.input("w", (128, 128))
    g.output("y", g.apply("matmul", a, w))
    blas.set_threads(2)
    threads.reset()
    try:
        compiled = kernels.compile(g)
        assert "kernel_threads()" not in compiled.source
        compiled.run({"a": np.ones((100, 128), np.float32), "w": np.ones((128, 128), np.float32)})
        assert blas._library().scipy_openblas_get_num_threads() == 1
    finally:
        threads.reset()


@pytest.mark.parametrize("name", ["SEXPGPU_THREADS", "SEXPGPU_BLAS_THREADS"])
def test_the_environment_fixes_the_count(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEXPGPU_THREADS", raising=False)
    monkeypatch.setenv(name, "2")
    threads.reset()
    try:
        described = threads.policy().describe()
    finally:
        threads.reset()
    assert described["policy"] == "fixed" and described["threads"] == 2
    assert described["blas_threads"] == 1
    assert described["blas"].startswith("OpenBLAS")  # scipy's, as pyproject requires
    assert described["sgemm"].startswith("sexpgpu vgemm ")  # the matmuls' own


def _train(path: str, count: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list, dict]:
    import numba

    monkeypatch.setenv("SEXPGPU_THREADS", str(count))
    threads.reset()
    try:
        _, program = load_program(path)
        rng = np.random.default_rng(0)
        losses = []
        for step in range(4):
            x = rng.normal(size=(128, 64)).astype(np.float32)
            y = rng.integers(0, 10, size=128).astype(np.int64)
            ctx = {"step": step, "microstep": 0, "microbatches": 1, "epoch": 0,
                   "samples": 0, "tokens": 0, "stage": 0, "seed": 7}
            losses.append(program.train_step([{"x": x, "y": y}], ctx)["loss"])
        assert blas._library().scipy_openblas_get_num_threads() == 1
        assert numba.get_num_threads() == min(count, numba.config.NUMBA_NUM_THREADS)
        return losses, program.params()
    finally:
        threads.reset()


def test_one_and_two_threads_give_the_same_bits(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "wide.sx"
    path.write_text(WIDE)
    one, params_one = _train(str(path), 1, monkeypatch)
    two, params_two = _train(str(path), 2, monkeypatch)
    _, program = load_program(str(path))  # 128x512x512: cut into chunks on 2 cores
    if threads.env.usable_cores() > 1:
        assert any("def chunk(" in text and "gemm_nn(" in text
                   for text in program._step.generated.kernel_sources)
    assert one == two  # float equality of every loss: the same bits
    for name, value in params_one.items():
        assert value.tobytes() == params_two[name].tobytes(), name


def test_diff_shows_runs_that_differ_only_in_threads() -> None:
    auto = {"blas": "OpenBLAS 0.3.30", "policy": "auto", "threads": 2, "blas_threads": 1,
            "numba_threads": 2}
    fixed = {**auto, "policy": "fixed", "threads": 1}
    side = {"state": "done", "step": 10, "steps": 10, "time_s": 1.0, "metrics": {},
            "targets": [], "targets_met": None}
    lines = diff.render_results(diff.compare_results({**side, "threads": auto},
                                                     {**side, "threads": fixed}))
    assert "  threads: auto (up to 2), BLAS 1, numba 2 -> fixed (1), BLAS 1, numba 2  (differ)" \
        in lines
    wide = {**auto, "sgemm": "sexpgpu vgemm 8x32 blocks of AVX-512 f32 vectors"}
    narrow = {**auto, "sgemm": "sexpgpu vgemm 6x16 blocks of AVX2 f32 vectors"}
    lines = diff.render_results(diff.compare_results({**side, "threads": wide},
                                                     {**side, "threads": narrow}))
    assert "  sgemm: sexpgpu vgemm 8x32 blocks of AVX-512 f32 vectors -> " \
        "sexpgpu vgemm 6x16 blocks of AVX2 f32 vectors" in lines
    lines = diff.render_results(diff.compare_results({**side, "threads": auto},
                                                     {**side, "threads": wide}))
    assert "  sgemm: (not recorded) -> sexpgpu vgemm 8x32 blocks of AVX-512 f32 vectors" in lines
    before = {"blas": "OpenBLAS 0.3.30", "policy": "auto", "blas_threads": 2,
              "numba_threads": 2}  # recorded before the one pool
    assert diff.threads_text(before) == "auto (up to 2), BLAS shared, numba 2"
    flushed, kept = {**auto, "denormals": "flushed"}, {**auto, "denormals": "kept"}
    lines = diff.render_results(diff.compare_results({**side, "threads": flushed},
                                                     {**side, "threads": kept}))
    assert "  threads: auto (up to 2), BLAS 1, numba 2, denormals flushed -> " \
        "auto (up to 2), BLAS 1, numba 2, denormals kept  (differ)" in lines
    w512, llvm = ({**flushed, "loop_vectors": "512-bit"},
                  {**flushed, "loop_vectors": "LLVM's choice"})
    lines = diff.render_results(diff.compare_results({**side, "threads": w512},
                                                     {**side, "threads": llvm}))
    assert any("loops 512-bit -> " in line and "loops LLVM's choice  (differ)" in line
               for line in lines)


def test_big_matmuls_are_chunked_and_the_step_asks_for_threads_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A big matmul shares its chunks between the pool's threads; the small ones of an
    unrolled loop are single sgemm calls; the step sets the threads once, first."""
    from sexpgpu import kernels
    from sexpgpu.ir.graph import Graph

    monkeypatch.setattr(threads.env, "usable_cores", lambda: 2)
    g = Graph("classes")
    h, w = g.input("h", (4, 6)), g.input("w", (6, 6))
    for _ in range(5):
        h = g.apply("tanh", g.apply("matmul", h, w))
    a, b = g.input("a", (512, 512)), g.input("b", (512, 512))   # 2^28 FLOPs: 2 chunks
    big = g.apply("matmul", a, b)
    g.output("big", big)
    g.output("h", g.apply("matmul", h, w))
    compiled = kernels.compile(g)
    texts = compiled.generated.kernel_sources
    assert sum("def chunk(" in text and "gemm_nn(" in text for text in texts) == 1
    assert any("gemm_nn(" in text and "def chunk(" not in text for text in texts)
    body = compiled.source.split("def step(")[1].splitlines()
    assert body[1].strip() == "kernel_threads()" and compiled.source.count("kernel_threads()") == 1
    feed = {"h": np.ones((4, 6), np.float32), "w": np.eye(6, dtype=np.float32),
            "a": np.random.default_rng(0).normal(size=(512, 512)).astype(np.float32),
            "b": np.random.default_rng(1).normal(size=(512, 512)).astype(np.float32)}
    got = compiled.run(feed)["big"]
    np.testing.assert_allclose(got, feed["a"].astype(np.float64) @ feed["b"], rtol=1e-4,
                               atol=1e-3)


@pytest.mark.parametrize("count", [1, 2])
def test_parallel_kernels_take_the_policys_threads_and_give_the_same_bits(
        count: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop of at least PARALLEL_WORK element-operations is a chunk function, and the
    step sets numba's threads from the policy first (one on a busy box): any count
    gives the bits of one thread."""
    import numba

    from sexpgpu import kernels
    from sexpgpu.ir.graph import Graph

    g = Graph("wide")
    x = g.input("x", (2048, 2048))
    y = x
    for k in range(16):  # one fused loop of 16 operations on 4M elements: 2^26
        y = g.apply("mul" if k % 2 else "add", y, x)
    g.output("y", y)
    compiled = kernels.compile(g)
    assert compiled.generated.source.count("kernel_threads()") == 1
    assert any("def chunk(" in text for text in compiled.generated.kernel_sources)
    feed = {"x": np.random.default_rng(3).uniform(0.5, 1.0, size=(2048, 2048)).astype(np.float32)}
    monkeypatch.setenv("SEXPGPU_THREADS", "1")
    threads.reset()
    one = compiled.run(feed)
    monkeypatch.setenv("SEXPGPU_THREADS", str(count))
    threads.reset()
    try:
        got = compiled.run(feed)
        assert numba.get_num_threads() == min(count, numba.config.NUMBA_NUM_THREADS)
    finally:
        threads.reset()
    assert got["y"].tobytes() == one["y"].tobytes()


def test_a_big_light_loop_is_parallel_only_after_a_parallel_kernel(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Under PARALLEL_WORK, a loop (or a layer norm) of PARALLEL_ELEMENTS outputs or
    more shares its rows when it reads what a parallel kernel has just written (each
    thread finds its part in its own core's cache) and stays serial after a serial
    one; either way any thread count gives the bits of one thread."""
    import numba

    from sexpgpu import kernels
    from sexpgpu.ir.graph import Graph

    monkeypatch.setattr(threads.env, "usable_cores", lambda: 2)
    monkeypatch.setattr(bands, "MIN_RUN_WORK", 1 << 62)  # each kernel's own launch
    g = Graph("residual")
    x, w = g.input("x", (768, 128)), g.input("w", (128, 128))   # 2^24.6 FLOPs: 2 chunks
    r, lnw = g.input("r", (768, 128)), g.input("lnw", (128,))
    after_matmul = g.apply("add", g.apply("matmul", x, w), r)
    normed, _, _ = g.apply("layer_norm", after_matmul, lnw, eps=1e-5)
    g.output("y", normed)
    g.output("z", g.apply("add", r, x))          # reads inputs only: serial
    compiled = kernels.compile(g)
    calls = compiled.source.split("def step(")[1].splitlines()
    assert sum(line.strip().startswith("launch(") for line in calls) == 3
    sources = compiled.generated.kernel_sources
    assert sum("def chunk(" in text and "layer_norm" in text for text in sources) == 1
    assert any("def kernel(" in text and "add" in text for text in sources)
    rng = np.random.default_rng(4)
    feed = {name: rng.normal(size=shape).astype(np.float32)
            for name, shape in (("x", (768, 128)), ("w", (128, 128)), ("r", (768, 128)),
                                ("lnw", (128,)))}
    want = feed["x"].astype(np.float64) @ feed["w"] + feed["r"]
    want = (want - want.mean(1, keepdims=True)) / np.sqrt(want.var(1, keepdims=True) + 1e-5)
    results = runs_by_threads(compiled, feed, [1, 2], monkeypatch)
    np.testing.assert_allclose(results[0]["y"], want * feed["lnw"], rtol=1e-3, atol=1e-3)
    assert numba.config.NUMBA_NUM_THREADS < 2 or all(
        results[0][k].tobytes() == results[1][k].tobytes() for k in ("y", "z"))


def test_a_row_reduction_of_a_parallel_result_is_parallel_by_what_it_reads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A softmax's row max over a chunked matmul's 768x65 logits writes 768 values but
    reads 49920 (PARALLEL_ELEMENTS counts what a loop reads): its rows are shared,
    each chunk whole rows, with one thread's bits; over a serial kernel's result
    the same reduction stays serial."""
    from sexpgpu import kernels
    from sexpgpu.ir.graph import Graph

    monkeypatch.setattr(threads.env, "usable_cores", lambda: 2)
    g = Graph("logits")
    x, w = g.input("x", (768, 128)), g.input("w", (128, 65))   # 2^23.6 FLOPs: 2 chunks
    logits = g.apply("matmul", x, w)
    g.output("m", g.apply("amax", logits, axes=(-1,), keepdims=False))
    g.output("s", g.apply("amax", g.apply("add", x, x), axes=(-1,), keepdims=False))
    compiled = kernels.compile(g)
    sources = compiled.generated.kernel_sources
    assert sum("def chunk(" in text and "(amax)" in text for text in sources) == 1
    assert sum("def kernel(" in text and "(add, amax)" in text for text in sources) == 1
    rng = np.random.default_rng(6)
    feed = {"x": rng.normal(size=(768, 128)).astype(np.float32),
            "w": rng.normal(size=(128, 65)).astype(np.float32)}
    results = runs_by_threads(compiled, feed, [1, 2], monkeypatch)
    want = (feed["x"].astype(np.float64) @ feed["w"]).max(axis=1)
    np.testing.assert_allclose(results[0]["m"], want, rtol=1e-5, atol=1e-5)
    assert results[0]["m"].tobytes() == results[1]["m"].tobytes()


def test_a_loop_of_math_calls_shares_its_rows_where_a_light_loop_does_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An LSTM's gates at 128 units (100x128, three sigmoids and two tanhs a unit) is
    compute-bound and a chunk function (CALL_WORK); the same elements added and
    multiplied are memory-bound and stay serial. Any thread count gives one thread's
    bits, and the gates match numpy."""
    from sexpgpu import kernels
    from sexpgpu.ir.graph import Graph

    monkeypatch.setattr(threads.env, "usable_cores", lambda: 2)
    monkeypatch.setattr(bands, "MIN_RUN_WORK", 1 << 62)  # each kernel's own launch
    g = Graph("gates")
    i, f, c, o, cell = (g.input(name, (100, 128)) for name in "ifcoz")
    c2 = g.apply("add", g.apply("mul", g.apply("sigmoid", f), cell),
                 g.apply("mul", g.apply("sigmoid", i), g.apply("tanh", c)))
    g.output("h", g.apply("mul", g.apply("sigmoid", o), g.apply("tanh", c2)))
    g.output("light", g.apply("mul", g.apply("add", i, f), c))
    compiled = kernels.compile(g)
    sources = compiled.generated.kernel_sources
    assert sum("def chunk(" in text for text in sources) == 1
    assert any("def chunk(" in text and "tanh" in text for text in sources)
    rng = np.random.default_rng(5)
    feed = {name: rng.normal(0, 3, size=(100, 128)).astype(np.float32) for name in "ifcoz"}
    feed["c"][0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    one, two = runs_by_threads(compiled, feed, [1, 2], monkeypatch)
    x = {k: v.astype(np.float64) for k, v in feed.items()}
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    want = sig(x["o"]) * np.tanh(sig(x["f"]) * x["z"] + sig(x["i"]) * np.tanh(x["c"]))
    np.testing.assert_allclose(one["h"], want, rtol=1e-5, atol=1e-6)
    assert np.isnan(one["h"][0, 0])
    assert one["h"].tobytes() == two["h"].tobytes()
    assert one["light"].tobytes() == two["light"].tobytes()
