"""pytest settings for the benchmarks in bench/: the `--no-torch-compile` switch and the
side-by-side summary (step times and ratios) printed after bench_step.py runs."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

import pytest

# (model, backend) -> {"median_ms": float} or {"unavailable": reason}; bench_step.py fills it
STEP_RESULTS: dict[tuple[str, str], dict[str, Any]] = {}
BACKENDS = ("torch-eager", "torch-compile", "sexpgpu")
# (model, "cold"|"warm") -> {"total_s", "first_step_s"} or {"unavailable"}; bench_startup.py
STARTUP_RESULTS: dict[tuple[str, str], dict[str, Any]] = {}
# the lines bench_loaded.py's rows make: the machine, each backend's row, each model's goal
LOADED_RESULTS: list[str] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--no-torch-compile", action="store_true", default=False,
                     help="leave out the torch.compile rows (compiling takes minutes here)")
    parser.addoption("--step-json", default=None,
                     help="also write the step-time summary to this JSON file")


@pytest.fixture(scope="session")
def step_results() -> dict[tuple[str, str], dict[str, Any]]:
    """Where bench_step.py records each row for the summary (fixture: no module import)."""
    return STEP_RESULTS


@pytest.fixture(scope="session")
def startup_results() -> dict[tuple[str, str], dict[str, Any]]:
    return STARTUP_RESULTS


@pytest.fixture(scope="session")
def loaded_results() -> list[str]:
    return LOADED_RESULTS


@pytest.fixture(scope="session")
def no_torch_compile(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--no-torch-compile"))


def _cell(result: dict[str, Any] | None, stat: str) -> str:
    if result is None:
        return "-"
    if stat in result:
        return f"{result[stat]:.3f} ms"
    return "n/a"


def _ratio(a: dict[str, Any] | None, b: dict[str, Any] | None, stat: str) -> str:
    if a and b and stat in a and stat in b:
        return f"{a[stat] / b[stat]:.2f}x"
    return "-"


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
    _startup_summary(terminalreporter)
    _step_summary(terminalreporter, config)
    if LOADED_RESULTS:
        terminalreporter.section("a loaded machine: quiet, then four busy processes (mean step)")
        for line in LOADED_RESULTS:
            terminalreporter.write_line(line)


def _startup_summary(terminalreporter: Any) -> None:
    if not STARTUP_RESULTS:
        return
    write = terminalreporter.write_line
    terminalreporter.section("sexpgpu run --set steps=1: start-up (median)")
    for (model, cache), r in sorted(STARTUP_RESULTS.items()):
        if "unavailable" in r:
            write(f"{model:<5} {cache:<5} not available: {r['unavailable']}")
            continue
        first = f"{r['first_step_s']:.2f} s" if r["first_step_s"] is not None else "-"
        write(f"{model:<5} {cache:<5} first step {first:>9}   whole command {r['total_s']:.2f} s")


def _limit_line(row: str, limit: dict, ours: dict | None) -> str:
    """The GPT step (row `row`) against the machine's matmul limit measured with it."""
    times = "".join(f", SexpGPU {ours[s]:.1f} ms {s[:-3]} = {ours[s] / limit['limit_ms']:.2f}x"
                    for s in ("median_ms", "min_ms") if ours and s in ours)
    return (f"{row}: {limit['flops'] / 1e9:.3f} GFLOP per step; best sgemm "
            f"{limit['sgemm_gflops']:.1f} GFLOP/s (torch.mm {limit['torch_mm_gflops']:.1f}, "
            f"SexpGPU's {limit['sexpgpu_mm_gflops']:.1f}); at that rate "
            f"{limit['limit_ms']:.1f} ms{times} the machine's matmul limit")


def _machine() -> str:
    """The CPU and the libraries the figures come from (the ratios depend on both:
    MKL's sgemm runs at an Intel core's peak, not at an AMD one's)."""
    model = platform.machine()
    try:
        fields: dict[str, str] = {}
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
        # a VM's name can hide the generation; family and model tell it
        model = (f"{fields.get('model name', model)} (family {fields.get('cpu family', '?')} "
                 f"model {fields.get('model', '?')})")
    except OSError:
        pass
    from sexpgpu.kernels import vgemm

    try:
        import torch
        torch_version = f"torch {torch.__version__}"
    except ImportError:
        torch_version = "no torch"
    return f"{model}; {vgemm.describe()}; {torch_version}"


def _step_summary(terminalreporter: Any, config: Any) -> None:
    if not STEP_RESULTS:
        return
    write = terminalreporter.write_line
    terminalreporter.section("training step, side by side")
    models = list(dict.fromkeys(model for model, b in STEP_RESULTS
                                if b != "limit" and model != "gpt-products"))
    # the median is the figure of record; the minimum shows the step without interference
    # from other processes (on a shared machine the two can differ several times over)
    for stat in ("median_ms", "min_ms"):
        write(f"{stat[:-3]:<8}" + "".join(f"{b:>16}" for b in BACKENDS)
              + f"{'sexpgpu/eager':>16}{'sexpgpu/compile':>18}")
        for model in models:
            row = [STEP_RESULTS.get((model, b)) for b in BACKENDS]
            write(f"{model:<8}" + "".join(f"{_cell(r, stat):>16}" for r in row)
                  + f"{_ratio(row[2], row[0], stat):>16}{_ratio(row[2], row[1], stat):>18}")
    for row in ("gpt", "gpt-interleaved"):
        limit = STEP_RESULTS.get((row, "limit"))
        if limit:
            write(_limit_line(row, limit, STEP_RESULTS.get((row, "sexpgpu"))))
    for (model, label), rates in STEP_RESULTS.items():
        if model == "gpt-products":
            write(f"gpt product {label:<16} torch.mm {rates['torch.mm_gflops']:6.1f} "
                  f"GFLOP/s, SexpGPU {rates['sexpgpu_gflops']:6.1f}")
    for (model, backend), result in STEP_RESULTS.items():
        if backend == "limit" or model == "gpt-products":
            continue
        if "unavailable" in result:
            write(f"{model} {backend}: not available: {result['unavailable']}")
    threads = {r.get("threads") for r in STEP_RESULTS.values() if r.get("threads")}
    write(f"threads (torch.set_num_threads = SexpGPU's): {sorted(threads)}; "
          f"cpus: {os.cpu_count()}")
    write(f"machine: {_machine()}")
    out = config.getoption("--step-json")
    if out:
        rows = [{"model": m, "backend": b, **r} for (m, b), r in STEP_RESULTS.items()]
        Path(out).write_text(json.dumps(rows, indent=1) + "\n")
