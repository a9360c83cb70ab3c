"""Re-running a test file under numba's CUDA simulator: numba reads
NUMBA_ENABLE_CUDASIM at import, so the simulated tests run in a subprocess whose
environment sets it, and the outer run has one test standing for them all."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from sexpgpu.runtime.checkpoint import list_checkpoints
from sexpgpu.runtime.events import read_events

ROOT = Path(__file__).resolve().parent.parent


def rerun_in_simulator(test_file: str, timeout: int = 900) -> None:
    """Run the file's `cudasim`-marked tests in the simulator; fail with their output."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "cudasim",
         "-W", "ignore::RuntimeWarning", test_file],
        cwd=ROOT, env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"},
        capture_output=True, text=True, timeout=timeout)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert " passed" in run.stdout


def run_env(cache: str, simulator: bool) -> dict[str, str]:
    """The environment of a `sexpgpu run` subprocess: its own cache, this checkout
    on the path, and numba's simulator exactly when `simulator`."""
    env = {**os.environ, "SEXPGPU_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    if simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    return env


def run_args(file: Path, runs: Path, device: str, *extra: str) -> list[str]:
    """The command line of `sexpgpu run FILE --device DEVICE` into `runs`."""
    return [sys.executable, "-W", "ignore::RuntimeWarning", "-m", "sexpgpu", "run", str(file),
            "--device", device, "--runs", str(runs), *extra]


def run_file(file: Path, runs: Path, device: str, cache: str, *extra: str) -> Path:
    """`sexpgpu run` in a subprocess (numba's simulator for cuda) that must succeed;
    the run's directory."""
    done = subprocess.run(run_args(file, runs, device, *extra),
                          env=run_env(cache, device == "cuda"),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    return run_dir


def events(run_dir: Path, kind: str | None = None) -> list[dict]:
    """The run's events, those of `kind` only when given."""
    return [e for e in read_events(run_dir / "events.jsonl") if kind is None or e["event"] == kind]


def wait_for_checkpoints(runs: Path, proc: subprocess.Popen, count: int,
                         timeout: float = 300) -> None:
    """Until the run `proc` makes under `runs` has `count` checkpoints (or it ends, or
    `timeout` seconds pass): the moment to interrupt it."""
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        dirs = [p for p in runs.iterdir() if p.is_dir()] if runs.exists() else []
        if dirs and len(list_checkpoints(dirs[0])) >= count:
            return
        time.sleep(0.05)
