"""`sexpgpu check` in a fresh interpreter: exits 0 on every example and imports
neither numba nor numpy (checking computes shapes, not values), nor `dataclasses` and
`inspect` (~35 ms of a check: its classes are records, sexpgpu/record.py). Its time
is measured by bench/bench_check.py, not asserted here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.sx"))
PROBE = ("import sys; from sexpgpu import cli; rc = cli.main(sys.argv[1:]); "
         "print(sorted(m for m in ('numba', 'numpy', 'scipy', 'dataclasses', 'inspect') "
         "if m in sys.modules)); "
         "sys.exit(rc)")


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_cold_check_imports_no_numerics(example: Path, tmp_path: Path) -> None:
    argv = ["check", str(example)]
    if example.stem == "shakespeare-char":  # reads a text file: a small one stands in
        text = tmp_path / "input.txt"
        text.write_text("First Citizen:\nBefore we proceed any further, hear me speak.\n" * 50)
        argv += ["--set", f"data={text}"]
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "[]"
