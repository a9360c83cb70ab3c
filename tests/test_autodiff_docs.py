"""The docs stay true: the example in docs/autodiff.md runs, and docs/tensors.md
names every registered op."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from sexpgpu.ir.ops.registry import OPS, get_op

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_autodiff_example_runs_and_learns() -> None:
    text = (DOCS / "autodiff.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/autodiff.md", "exec"), {})  # noqa: S102 - our own doc
    lines = out.getvalue().splitlines()
    losses = [float(line.split()[1]) for line in lines[:20]]
    assert losses[-1] < losses[0]
    assert lines[-1] == "(40, 256)"


def test_tensors_doc_names_every_op() -> None:
    get_op("add")
    text = (DOCS / "tensors.md").read_text(encoding="utf-8")
    table = " ".join(re.findall(r"^\| `([^`]+)`", text, re.M))
    missing = sorted(set(OPS) - set(table.split()))
    assert not missing, f"ops missing from docs/tensors.md: {missing}"
