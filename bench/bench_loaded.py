"""Step time on a loaded machine (issue 15): the MNIST-1D MLP and the char-GPT, SexpGPU
and PyTorch eager, each timed quiet and then with four CPU-bound processes that this
script starts itself (and always stops), so the slowdowns sit side by side.

Run: `python bench/bench_loaded.py [--models mlp gpt] [--seconds 8] [--busy 4]
[--json F]`, or under pytest with the other benchmarks (`pytest bench/bench_loaded.py
--benchmark-only`: both models, SECONDS a phase, the rows in the run's summary). Each
phase runs steps for at most `--seconds` (at least 5 steps) and
reports the mean step time (the descheduled steps are the point, so no median), the
CPU time per step (how much it grew under load) and the CPU share the process got;
whole run bounded by models x backends x 2 phases x seconds plus compile time.
PyTorch runs with torch.set_num_threads = the usable cores, its default; SexpGPU with
its default thread policy (kernels/threads.py) unless SEXPGPU_THREADS is set.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import bench_step as bs  # bench/ is sys.path[0] when run as a script
import pytest

BUSY = "import time\nend = time.time() + {limit}\nwhile time.time() < end:\n    pass\n"
MIN_STEPS = 5
SECONDS = 6.0  # a phase under pytest: 2 models x 2 backends x 2 phases, about a minute
BACKENDS = ("sexpgpu", "torch-eager")
PROCESSES = 4  # busy ones under pytest, as the bar has it
# the bar: the MLP under four busy processes on 2 cores slows at most this much,
# and at most as much as PyTorch (the GPT's slowdowns are reported side by side)
BARS = {"mlp": 4.0}


@contextmanager
def busy_processes(count: int, limit_s: float) -> Iterator[None]:
    """`count` processes spinning on a core each; each also stops itself after
    `limit_s`, so none outlives the benchmark even if this one is killed."""
    procs = [subprocess.Popen([sys.executable, "-c", BUSY.format(limit=limit_s)])
             for _ in range(count)]
    try:
        time.sleep(0.5)  # let the scheduler see them
        yield
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()


def mean_step_s(step: Callable[[], float], seconds: float) -> tuple[float, float, int]:
    """Mean wall and CPU seconds (this process, all its threads) per step over at most
    `seconds` (at least MIN_STEPS steps)."""
    start, cpu = time.perf_counter(), time.process_time()
    done = 0
    while done < MIN_STEPS or time.perf_counter() - start < seconds:
        step()
        done += 1
        if time.perf_counter() - start > 4 * seconds:  # a collapsed step: stop early
            break
    return ((time.perf_counter() - start) / done, (time.process_time() - cpu) / done, done)


def measure(model: str, backend: str, seconds: float, busy: int) -> dict[str, float]:
    """Quiet and loaded: wall and CPU time per step, and the CPU share (CPU seconds
    per wall second) the scheduler gave. A step whose CPU time stays the same under
    load slows by the share alone, the fair share of the cores; one whose CPU time
    grows (threads spinning at a barrier, descheduled mid-sgemm) slows beyond it."""
    step = bs.sexpgpu_step(model) if backend == "sexpgpu" else bs.torch_step(model, False)
    for _ in range(bs.WARMUP_CALLS):
        step()
    quiet, quiet_cpu, n_quiet = mean_step_s(step, seconds)
    with busy_processes(busy, limit_s=6 * seconds + 30):
        loaded, loaded_cpu, n_loaded = mean_step_s(step, seconds)
    return {"quiet_ms": quiet * 1e3, "loaded_ms": loaded * 1e3,
            "slowdown": loaded / quiet, "cpu_quiet_ms": quiet_cpu * 1e3,
            "cpu_loaded_ms": loaded_cpu * 1e3, "cpu_growth": loaded_cpu / quiet_cpu,
            "share_quiet": quiet_cpu / quiet, "share_loaded": loaded_cpu / loaded,
            "steps": [n_quiet, n_loaded]}


def row_line(model: str, backend: str, row: dict[str, float]) -> str:
    return (f"{model:4} {backend:12} quiet {row['quiet_ms']:8.3f} ms  loaded "
            f"{row['loaded_ms']:8.3f} ms  slowdown {row['slowdown']:5.2f}x  "
            f"CPU/step x{row['cpu_growth']:.2f}  CPU share {row['share_quiet']:.2f}"
            f" -> {row['share_loaded']:.2f}  (steps {row['steps'][0]}, {row['steps'][1]})")


def goal_line(model: str, ours: dict[str, float], torch: dict[str, float]) -> str:
    """The two slowdowns, and whether SexpGPU's meets the model's bar (BARS) if it has one."""
    text = f"{model}: SexpGPU {ours['slowdown']:.2f}x, PyTorch {torch['slowdown']:.2f}x"
    bar = BARS.get(model)
    if bar is None:
        return text + " (side by side; no bar)"
    met = ours["slowdown"] <= bar and ours["slowdown"] <= torch["slowdown"]
    return text + f" [at most {bar:g}x and at most PyTorch's: {'met' if met else 'NOT met'}]"


def _start(busy: int) -> str:
    cores = len(os.sched_getaffinity(0))
    bs.torch.set_num_threads(cores)  # PyTorch's default: every usable core
    return f"{cores} cores, load before: {os.getloadavg()[0]:.1f}, {busy} busy processes"


@pytest.mark.parametrize("model", ["mlp", "gpt"])
def test_loaded(benchmark, model: str, loaded_results: list[str]) -> None:  # noqa: ANN001
    """Both backends quiet, then under PROCESSES busy ones (pytest-benchmark times the
    whole measurement, one round); the rows and the goal go to the run's summary."""
    header = _start(PROCESSES)
    rows = benchmark.pedantic(lambda: {b: measure(model, b, SECONDS, PROCESSES)
                                       for b in BACKENDS}, rounds=1, iterations=1)
    if not loaded_results:
        loaded_results.append(header)
    loaded_results.extend(row_line(model, b, rows[b]) for b in BACKENDS)
    loaded_results.append(goal_line(model, rows["sexpgpu"], rows["torch-eager"]))
    benchmark.extra_info.update({f"{b}_{k}": rows[b][k] for b in BACKENDS
                                 for k in ("quiet_ms", "loaded_ms", "slowdown")})
    assert all(rows[b]["quiet_ms"] > 0 and rows[b]["loaded_ms"] > 0 for b in BACKENDS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["mlp", "gpt"], choices=["mlp", "gpt"])
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--busy", type=int, default=4)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    print(_start(args.busy), flush=True)
    results: dict[str, dict[str, float]] = {}
    for model in args.models:
        for backend in args.backends:
            row = results[f"{model} {backend}"] = measure(model, backend, args.seconds,
                                                          args.busy)
            print(row_line(model, backend, row), flush=True)
        if set(BACKENDS) <= set(args.backends):
            print(goal_line(model, results[f"{model} sexpgpu"],
                            results[f"{model} torch-eager"]), flush=True)
    cores = len(os.sched_getaffinity(0))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"cores": cores, "busy": args.busy, "results": results}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
