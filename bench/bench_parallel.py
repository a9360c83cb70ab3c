"""Data-parallel overhead on this machine: the step time of the MNIST-1D MLP and the
char-GPT with one process and with two (`--procs 2`, the same global batch), and the
gradient all-reduce's share of each step; `--faults` also runs the slow fault test
(SIGTERM and a killed rank, then resume) of tests/test_parallel.py, and the CUDA
simulator's SIGTERM-and-resume test of tests/test_parallel_cuda.py, and times them.

    python bench/bench_parallel.py [--steps-mlp 300] [--steps-gpt 60] [--faults]

Expect little speed-up on 2 shared cores: the figures are the overhead."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
MLP = ROOT / "examples" / "mnist1d-mlp.sx"
GPT = ROOT / "examples" / "shakespeare-char.sx"


def _text_file() -> str:
    """The GPT reads a text file: a generated one stands in for Tiny Shakespeare."""
    path = Path(tempfile.gettempdir()) / "sexpgpu-bench-parallel.txt"
    if not path.exists():
        path.write_text("First Citizen:\nBefore we proceed any further, hear me speak.\n"
                        * 2000)
    return str(path)


def _steps(run: Path) -> list[dict]:
    (run_dir,) = [p for p in run.iterdir() if p.is_dir()]
    lines = (run_dir / "events.jsonl").read_bytes().splitlines()
    return [e for e in map(orjson.loads, lines) if e["event"] == "step"]


def measure(file: Path, procs: int, knobs: list[str], threads: int | None
            ) -> dict[str, float]:
    """Median step and all-reduce milliseconds after the first 10 steps (warm-up).
    `threads`: SEXPGPU_NUM_THREADS (None: the default, all cores for one process,
    cores / N for N: what `--procs` sets)."""
    env = dict(os.environ)
    env.pop("SEXPGPU_NUM_THREADS", None)
    if threads is not None:
        env["SEXPGPU_NUM_THREADS"] = str(threads)
    with tempfile.TemporaryDirectory() as runs:
        argv = [sys.executable, "-m", "sexpgpu", "run", str(file), *knobs, "--runs", runs,
                "--log-every", "1", "--procs", str(procs), "--progress-every", "0"]
        done = subprocess.run(argv, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise SystemExit(done.stderr)
        steps = _steps(Path(runs))[10:]
    return {"step_ms": statistics.median(e["step_ms"] for e in steps),
            "allreduce_ms": statistics.median(e.get("allreduce_ms", 0.0) for e in steps)}


def faults() -> None:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "slow", "-p",
                           "no:cacheprovider", str(ROOT / "tests" / "test_parallel.py"),
                           str(ROOT / "tests" / "test_parallel_cuda.py")], cwd=ROOT)
    print(f"fault tests (SIGTERM -> 75, SIGKILL of rank 1 -> E-RANK-LOST, resume; "
          f"the same SIGTERM and resume on CUDA in the simulator): "
          f"{'passed' if done.returncode == 0 else 'FAILED'} in "
          f"{time.perf_counter() - start:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps-mlp", type=int, default=300)
    parser.add_argument("--steps-gpt", type=int, default=60)
    parser.add_argument("--faults", action="store_true")
    args = parser.parse_args()
    cases = [("MNIST-1D MLP", MLP, [f"steps={args.steps_mlp}"]),
             ("char-GPT", GPT, [f"steps={args.steps_gpt}", f"data={_text_file()}"])]
    print("| model | processes | threads each | step ms | all-reduce ms |\n|---|---|---|---|---|")
    for name, file, knobs in cases:
        for procs, threads in ((1, None), (1, 1), (2, None)):
            got = measure(file, procs, knobs, threads)
            each = "all" if threads is None and procs == 1 else threads or "cores / 2"
            print(f"| {name} | {procs} | {each} | {got['step_ms']:.2f} | "
                  f"{got['allreduce_ms']:.2f} |", flush=True)
    if args.faults:
        faults()


if __name__ == "__main__":
    main()
