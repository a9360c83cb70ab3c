"""Training-step time side by side (issues 6 and 15): the MNIST-1D examples (logistic
regression, MLP, CNN, GRU; batch 100) and the char-GPT (batch 12, context 64), each in
PyTorch eager, PyTorch `torch.compile` and SexpGPU, in one run, with
torch.set_num_threads equal to SexpGPU's thread count.

Run: `pytest bench/bench_step.py --benchmark-only [--no-torch-compile] [--step-json F]`.
A step is forward, backward and the optimizer update on one fixed batch; the summary at
the end prints the medians and the ratios SexpGPU/eager and SexpGPU/compile, and for
the GPT its step's FLOPs over the best sgemm rate measured in the same run (the time
the step would take at the machine's matmul limit) beside the measured step. The row
`gpt-interleaved` times the GPT's backends taking turns, one step each per round, so
that a slow phase of a shared machine slows them alike.
"""

from __future__ import annotations

import itertools
import math
import time
import timeit
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch side needs `pip install sexpgpu[bench]`")

import torch_models as tm  # noqa: E402  (bench/ is on sys.path under pytest)

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("logreg", "mlp", "cnn", "gru", "lstm", "lstm-cell", "lstm-prim", "gpt")
BACKENDS = ("torch-eager", "torch-compile", "sexpgpu")
ROUNDS = {"logreg": 200, "mlp": 200, "cnn": 100, "gru": 30, "lstm": 30, "lstm-cell": 30,
          "lstm-prim": 30, "gpt": 30}
EXAMPLES = {"logreg": "examples/mnist1d-logreg.sx", "mlp": "examples/mnist1d-mlp.sx",
            "cnn": "examples/mnist1d-cnn.sx", "gru": "examples/mnist1d-gru.sx",
            "lstm": "bench/models/mnist1d-lstm.sx", "lstm-cell": "bench/models/mnist1d-lstm.sx",
            "lstm-prim": "bench/models/mnist1d-lstm.sx", "gpt": "examples/shakespeare-char.sx"}
# the three LSTM rows are the same model written three ways (bench/models/mnist1d-lstm.sx);
# PyTorch runs nn.LSTM for each
SELECTIONS: dict[str, dict[str, Any]] = {"gpt": {"data": str(tm.SHAKESPEARE)},
                                         "lstm-cell": {"cell": ":cell"},
                                         "lstm-prim": {"cell": ":primitives"}}
TORCH_MODEL = {"lstm-cell": "lstm", "lstm-prim": "lstm"}
WARMUP_CALLS = 3  # before timing: torch.compile compiles here, numba kernels load here

Step = Callable[[], float]


def sexpgpu_threads() -> int:
    """The CPU threads SexpGPU's kernels use: SEXPGPU_NUM_THREADS, else numba's default."""
    from sexpgpu import env

    explicit = env.num_threads()
    if explicit:
        return explicit
    import numba

    return int(numba.config.NUMBA_NUM_THREADS)


# ---------------------------------------------------------------------------
# the fixed batches (the same data for every backend)


def mnist1d_batch() -> dict[str, np.ndarray]:
    data = np.load(tm.MNIST1D_NPZ, allow_pickle=False)
    return {"x": np.ascontiguousarray(data["x"][:100]), "y": np.ascontiguousarray(data["y"][:100])}


def gpt_batch(setup: tm.GPTSetup, block: int = 64) -> dict[str, np.ndarray]:
    text = tm.SHAKESPEARE.read_text(encoding="utf-8")
    vocab = {ch: i for i, ch in enumerate(sorted(set(text)))}
    tokens = np.array([vocab[ch] for ch in text[:200_000]], dtype=np.int64)
    x, y = tm.char_batch(tokens, setup.batch_size, block, np.random.default_rng(1337))
    return {"x": x.numpy(), "y": y.numpy()}


def batch_for(model: str) -> dict[str, np.ndarray]:
    return gpt_batch(tm.GPTSetup()) if model == "gpt" else mnist1d_batch()


# ---------------------------------------------------------------------------
# PyTorch steps


def torch_step(model: str, compiled: bool) -> Step:
    """One training step closure (bench/torch_models.training_step) on the benchmark's
    batch, returning the loss as a float."""
    batch = {k: torch.from_numpy(v) for k, v in batch_for(model).items()}
    step = tm.training_step(TORCH_MODEL.get(model, model), batch["x"], batch["y"], compiled)
    return lambda: step().item()


# ---------------------------------------------------------------------------
# SexpGPU step


def sexpgpu_step(model: str) -> Step:
    """`program.train_step([batch], ctx)` of the compiled example (sexpgpu.api.load_program)."""
    return sexpgpu_program(model)[1]


def sexpgpu_program(model: str) -> tuple[Any, Step]:
    """The compiled example's training program and `sexpgpu_step`'s closure over it."""
    from sexpgpu.api import load_program

    _, program = load_program(str(ROOT / EXAMPLES[model]),
                              selection=dict(SELECTIONS.get(model, {})))
    return program, program_step(program, batch_for(model))


def program_step(program: Any, batch: dict[str, np.ndarray]) -> Step:
    """A closure running `program.train_step([batch], ctx)`, the step counter in ctx
    advancing by one a call, and returning the loss (tokens counted where the labels
    are sequences, as the char-GPT's)."""
    rows = len(batch["y"])
    tokens = int(batch["y"].size) if batch["y"].ndim > 1 else 0
    counter = itertools.count()

    def step() -> float:
        i = next(counter)
        ctx = {"step": i, "microstep": i, "microbatches": 1, "epoch": 0, "samples": i * rows,
               "tokens": i * tokens, "stage": 0, "seed": 0}
        return float(program.train_step([batch], ctx)["loss"])
    return step


# warm-up of the side-by-side scripts: at least this many rounds and this long (a
# process's first quarter second runs parallel kernels on one thread: kernels/threads.py's
# policy has not yet seen a free core)
WARMUP_ROUNDS, WARMUP_S = 2, 1.0


def medians_taking_turns(steps: dict[str, Step], rounds: int) -> dict[str, float]:
    """Each step's median time in ms over `rounds` rounds of one call each, the steps
    taking turns after the warm-up, so that a slow phase of a shared machine slows
    them alike (bench/gpt_sizes.py, bench/rnn_sizes.py)."""
    warm_until = time.perf_counter() + WARMUP_S
    for i in itertools.count():
        if i >= WARMUP_ROUNDS and time.perf_counter() > warm_until:
            break
        for step in steps.values():
            step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            started = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - started)
    return {name: float(np.median(t)) * 1e3 for name, t in times.items()}


def _unavailable(exc: BaseException) -> str:
    """One line saying why SexpGPU could not build the step (never hidden in the summary)."""
    from sexpgpu.diagnostics import SexpError

    if isinstance(exc, SexpError):
        d = exc.diagnostic
        return f"{d.code}: {d.message}" + (f" ({d.span})" if d.span else "")
    last = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" at {Path(last.filename).name}:{last.lineno}" if last else ""
    return f"{type(exc).__name__}: {exc}{where}"


# ---------------------------------------------------------------------------
# the benchmark


def match_torch_threads() -> int:
    """torch.set_num_threads(SexpGPU's thread count), which it returns: every side-by-side
    benchmark runs PyTorch on as many threads as SexpGPU."""
    n = sexpgpu_threads()
    torch.set_num_threads(n)
    return n


@pytest.fixture(scope="session")
def threads() -> int:
    return match_torch_threads()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("model", MODELS)
def test_step(benchmark, model: str, backend: str, threads: int, step_results,
              no_torch_compile: bool) -> None:
    benchmark.group = f"step {model}"
    key = (model, backend)
    if backend == "torch-compile" and no_torch_compile:
        step_results[key] = {"unavailable": "left out with --no-torch-compile"}
        pytest.skip("torch.compile left out with --no-torch-compile")
    try:
        if backend == "sexpgpu":
            step = sexpgpu_step(model)
        else:
            step = torch_step(model, compiled=backend == "torch-compile")
        for _ in range(WARMUP_CALLS):
            loss = step()
    except Exception as exc:  # noqa: BLE001 - reported in the summary, not hidden
        step_results[key] = {"unavailable": _unavailable(exc), "threads": threads}
        pytest.skip(f"not available: {step_results[key]['unavailable']}")
    assert math.isfinite(loss), f"{model} {backend}: the warm-up loss is {loss}"
    benchmark.extra_info.update(model=model, backend=backend, threads=threads)
    benchmark.pedantic(step, rounds=ROUNDS[model], iterations=1, warmup_rounds=2)
    stats = getattr(benchmark, "stats", None)
    if stats is not None:  # None under --benchmark-disable
        step_results[key] = {"median_ms": stats.stats.median * 1000.0,
                             "min_ms": stats.stats.min * 1000.0, "threads": threads,
                             "rounds": ROUNDS[model]}


# ---------------------------------------------------------------------------
# the GPT's backends taking turns

INTERLEAVED_ROUNDS = 40


def test_gpt_interleaved(benchmark, threads: int, step_results, no_torch_compile: bool) -> None:
    """The GPT's steps of every backend taking turns, two steps each per round, the
    second timed (the order rotating): a slow phase of a shared machine (another
    tenant on a core for a minute) then slows all of them alike, where the rows
    above, 30 steps of one backend after 30 of another, can each land in a different
    phase. The summary prints its medians and ratios as the row `gpt-interleaved`."""
    backends = [b for b in BACKENDS if not (b == "torch-compile" and no_torch_compile)]
    steps = {b: sexpgpu_step("gpt") if b == "sexpgpu" else
             torch_step("gpt", compiled=b == "torch-compile") for b in backends}
    # the matmul limit's two products take turns too (each timed on its second call,
    # its operands in cache): the step's fraction of the limit is then measured in
    # the same phases of the machine as the step
    products = limit_products()
    steps.update(products)
    backends += list(products)
    for step in steps.values():
        for _ in range(WARMUP_CALLS):
            step()
    times: dict[str, list[float]] = {b: [] for b in backends}

    def rounds() -> None:
        for r in range(INTERLEAVED_ROUNDS):
            for b in backends[r % len(backends):] + backends[:r % len(backends)]:
                # each timed on its second call in a row, as the rows above time
                # consecutive steps and test_gpt_matmul_limit its products: the first
                # pays for what the one before left (its operands evicted from cache,
                # its pool's threads still spinning on the cores), which in a fixed
                # rotation is always the same backend
                steps[b]()
                started = time.perf_counter()
                steps[b]()
                times[b].append(time.perf_counter() - started)

    benchmark.group = "step gpt, backends taking turns"
    benchmark.pedantic(rounds, rounds=1, iterations=1)
    for b in backends:
        if b in products:
            continue
        ms = np.array(times[b]) * 1000.0
        step_results[("gpt-interleaved", b)] = {"median_ms": float(np.median(ms)),
                                                "min_ms": float(ms.min()), "threads": threads,
                                                "rounds": INTERLEAVED_ROUNDS}
    step_results[("gpt-interleaved", "limit")] = limit_record(
        *(2 * LIMIT_SIZE ** 3 / min(times[b]) / 1e9 for b in products))
    assert all(len(t) == INTERLEAVED_ROUNDS for t in times.values())


# ---------------------------------------------------------------------------
# the machine's matmul limit (issue 15): the GPT step's FLOPs at the best sgemm rate


def gpt_step_flops() -> int:
    """All FLOPs of the char-GPT's training step graph (contract.plan's count)."""
    from sexpgpu.contract.compile import compile_file
    from sexpgpu.contract.plan import graph_summary
    from sexpgpu.selection import Selection

    compiled = compile_file(str(ROOT / EXAMPLES["gpt"]),
                            Selection.from_args([f"{k}={v}" for k, v in SELECTIONS["gpt"].items()]))
    return int(graph_summary(compiled.graphs.step)["flops"]["total"])


def sexpgpu_product(m: int, k: int, n: int, a_t: bool = False, b_t: bool = False
                    ) -> tuple[Callable[[], None], dict[str, np.ndarray]]:
    """SexpGPU's A (m x k) B (k x n), float32, each operand stored transposed where the
    flag says: a compiled one-op graph's kernel alone (`kernels_on`, not `run`, whose
    copy of the result out of the graph's buffer cost ~5% of a 1024^3 product and a
    fifth of a 768x128x512 one), and the inputs it runs on."""
    from sexpgpu import kernels
    from sexpgpu.ir.graph import Graph

    shapes = {"a": (k, m) if a_t else (m, k), "b": (n, k) if b_t else (k, n)}
    rng = np.random.default_rng(0)
    inputs = {x: rng.standard_normal(shape).astype(np.float32) for x, shape in shapes.items()}
    g = Graph("product")
    a, b = g.input("a", shapes["a"]), g.input("b", shapes["b"])
    g.output("c", g.apply("matmul", g.apply("permute", a, perm=(1, 0)) if a_t else a,
                          g.apply("permute", b, perm=(1, 0)) if b_t else b))
    return kernels.compile(g).kernels_on(inputs), inputs


def sexpgpu_matmul(size: int) -> Callable[[], None]:
    """SexpGPU's own (size x size) float32 product (`sexpgpu_product`)."""
    return sexpgpu_product(size, size, size)[0]


LIMIT_SIZE = 1024  # the limit's product: (1024 x 1024) by (1024 x 1024), float32


def limit_products() -> dict[str, Callable[[], Any]]:
    """The limit's product by PyTorch (torch.mm, the library sgemm) and by SexpGPU
    (kernels/vgemm.py), on the threads the session set."""
    a, b = torch.randn(LIMIT_SIZE, LIMIT_SIZE), torch.randn(LIMIT_SIZE, LIMIT_SIZE)
    return {"torch.mm": lambda: torch.mm(a, b), "sexpgpu-mm": sexpgpu_matmul(LIMIT_SIZE)}


def limit_record(torch_rate: float, own_rate: float) -> dict[str, float]:
    """The GPT step's FLOPs at the better of the two rates (GFLOP/s)."""
    rate = max(torch_rate, own_rate)
    flops = gpt_step_flops()
    assert flops > 0 and rate > 0
    return {"flops": flops, "sgemm_gflops": rate, "torch_mm_gflops": torch_rate,
            "sexpgpu_mm_gflops": own_rate, "limit_ms": flops / (rate * 1e9) * 1e3}


# the char-GPT step's products as the step stores their operands: (label, m, k, n, A
# stored transposed, B stored transposed). The limit is the 1024^3 product's rate;
# these rows say how near it the library itself gets on the step's own shapes
GPT_PRODUCTS = (("qkv forward", 768, 128, 384, False, True),
                ("fc forward", 768, 128, 512, False, True),
                ("proj forward", 768, 512, 128, False, True),
                ("fc input grad", 768, 512, 128, False, False),
                ("fc weight grad", 512, 768, 128, True, False),
                ("qkv weight grad", 384, 768, 128, True, False))


def product_pair(m: int, k: int, n: int, a_t: bool, b_t: bool) -> dict[str, Callable[[], Any]]:
    """A (m x k) B (k x n) by torch.mm (into one result tensor) and by SexpGPU
    (`sexpgpu_product`), on the same operands, read in place by both."""
    ours, inputs = sexpgpu_product(m, k, n, a_t, b_t)
    ta, tb = (torch.from_numpy(inputs[x]) for x in "ab")
    ta, tb = (ta.t() if a_t else ta), (tb.t() if b_t else tb)
    tc = torch.empty(m, n)
    return {"torch.mm": lambda: torch.mm(ta, tb, out=tc), "sexpgpu": ours}


PRODUCT_ROUNDS = 30


def test_gpt_product_rates(benchmark, threads: int, step_results) -> None:
    """Each of GPT_PRODUCTS by torch.mm and by SexpGPU, taking turns (each timed on its
    second call in a row, its operands in cache), as GFLOP/s: the best of the rounds."""
    pairs = {label: (2 * m * k * n, product_pair(m, k, n, a_t, b_t))
             for label, m, k, n, a_t, b_t in GPT_PRODUCTS}
    best: dict[tuple[str, str], float] = {}

    def rounds() -> None:
        for _ in range(PRODUCT_ROUNDS):
            for label, (_, fns) in pairs.items():
                for backend, fn in fns.items():
                    fn()
                    started = time.perf_counter()
                    fn()
                    spent = time.perf_counter() - started
                    best[label, backend] = min(best.get((label, backend), spent), spent)

    benchmark.group = "gpt products"
    benchmark.pedantic(rounds, rounds=1, iterations=1)
    for label, (flops, fns) in pairs.items():
        step_results[("gpt-products", label)] = {
            f"{backend}_gflops": flops / best[label, backend] / 1e9 for backend in fns}
    assert len(best) == 2 * len(GPT_PRODUCTS)


def test_gpt_matmul_limit(benchmark, threads: int, step_results) -> None:
    """After the step rows (pytest keeps file order): the best rate of the limit's
    product on the same threads, PyTorch's or SexpGPU's own, whichever is faster, and
    the GPT step's FLOPs at that rate. (The interleaved row measures it again, taking
    turns with the steps.)"""
    products = limit_products()
    benchmark.group = "matmul limit"
    benchmark.pedantic(products["torch.mm"], rounds=30, iterations=1, warmup_rounds=3)
    torch_rate = 2 * LIMIT_SIZE ** 3 / benchmark.stats.stats.min / 1e9
    ours = products["sexpgpu-mm"]
    ours()
    own_rate = 2 * LIMIT_SIZE ** 3 / min(timeit.repeat(ours, number=1, repeat=30)) / 1e9
    step_results[("gpt", "limit")] = limit_record(torch_rate, own_rate)
