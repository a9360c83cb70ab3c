"""`sexpgpu check` on every example in a cold process (pytest-benchmark; run
`pytest bench/bench_check.py`). The goal is under 1 s wall per file (0.3 s hoped
for), with numba never imported; each row stores both facts in extra_info."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.sx"))
# a cold interpreter that checks one file and reports whether numba got imported
PROBE = ("import sys; from sexpgpu import cli; rc = cli.main(sys.argv[1:]); "
         "sys.exit(rc if 'numba' not in sys.modules else 99)")


def _text_file() -> str:
    """The GPT example reads a text file: a small generated one stands in for it."""
    path = Path(tempfile.gettempdir()) / "sexpgpu-bench-input.txt"
    if not path.exists():
        path.write_text("First Citizen:\nBefore we proceed any further, hear me speak.\n" * 50)
    return str(path)


def _argv(example: Path) -> list[str]:
    argv = ["check", str(example)]
    if example.stem == "shakespeare-char":
        argv += ["--set", f"data={_text_file()}"]
    return argv


def _cold_check(example: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", PROBE, *_argv(example)], cwd=ROOT,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    assert proc.returncode != 99, f"check imported numba on {example.name}"
    assert proc.returncode == 0, proc.stderr
    return elapsed


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_check_cold(benchmark, example: Path) -> None:  # noqa: ANN001 - pytest-benchmark
    _cold_check(example)  # warm the bytecode caches once; what is timed is a cold process
    seconds = benchmark.pedantic(_cold_check, args=(example,), rounds=3, iterations=1)
    best = benchmark.stats.stats.min
    benchmark.extra_info.update({"best_s": round(best, 3), "under_1s": best < 1.0,
                                 "goal_0_3s": best < 0.3})
    assert seconds > 0
