"""`sexpgpu check` in a fresh interpreter: exits 0 on an example and never imports
numba (its time is measured by bench/bench_check.py, not asserted here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = ("import sys; from sexpgpu import cli; rc = cli.main(sys.argv[1:]); "
         "print('numba' in sys.modules); sys.exit(rc)")


def test_cold_check_without_numba() -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE, "check",
                           str(ROOT / "examples" / "mnist1d-cnn.sx")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "False"
