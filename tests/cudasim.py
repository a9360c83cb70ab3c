"""Re-running a test file under numba's CUDA simulator: numba reads
NUMBA_ENABLE_CUDASIM at import, so the simulated tests run in a subprocess whose
environment sets it, and the outer run has one test standing for them all."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
