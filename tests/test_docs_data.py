"""Every example in docs/data.md is correct: each ```lisp block reads and compiles as the
loaders of a run file (options checked, files found, fields worked out), and the
Python example runs."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from sexpgpu.contract.compile import _check_stages, compile_file
from sexpgpu.contract.fields import batch_fields
from sexpgpu.lisp.reader import read_all

DOC = Path(__file__).resolve().parent.parent / "docs" / "data.md"
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
LISP = [code for lang, code in BLOCKS if lang == "lisp"]
PYTHON = [code for lang, code in BLOCKS if lang == "python"]

REST = """
(defmodel net () (defchild l (nn:linear 40 10)) (lambda (x) (l x)))
(defobjective (model &key x y) (nn:cross-entropy (model x) y))
(optimizer (optim:adam :lr 1e-3))
(defrun :steps 1 :train {train})
"""


def _data_files(folder: Path) -> None:
    """The files the examples name, small but well-formed."""
    (folder / "data").mkdir()
    tokens = np.arange(4096, dtype=np.uint16) % 65
    for name in ("data/train.bin", "train.bin", "harder.bin"):
        tokens.tofile(folder / name)
    np.savez(folder / "data" / "mnist.npz", x=np.zeros((64, 40), np.float32),
             y=np.zeros(64, np.int64))
    np.save(folder / "x.npy", np.zeros((64, 40), np.float32))
    np.save(folder / "y.npy", np.zeros(64, np.int64))
    (folder / "input.txt").write_text("First Citizen:\nBefore we proceed any further.\n" * 40)


def test_the_page_has_examples() -> None:
    assert len(LISP) >= 4 and PYTHON


@pytest.mark.parametrize("code", LISP, ids=[f"lisp-{i}" for i in range(len(LISP))])
def test_lisp_example_compiles(tmp_path: Path, code: str) -> None:
    read_all(code, "data.md")  # every block reads, loaders or not
    train = re.search(r"\(defloader (\S+)", code)
    if train is None:
        return
    _data_files(tmp_path)
    run = tmp_path / "example.sx"
    run.write_text('(require "sexpgpu/nn" :as nn)\n(require "sexpgpu/optim" :as optim)\n'
                   + code + REST.format(train=train.group(1)))
    compiled = compile_file(str(run), trace=False)
    loaders = compiled.experiment.loaders
    assert loaders and len(loaders) == code.count("(defloader ")
    for spec in loaders:  # what `check` works out: files exist, fields from headers
        fields = batch_fields(spec, tmp_path, None)
        assert fields
        _check_stages(spec, fields, tmp_path, None, [])


@pytest.mark.parametrize("code", PYTHON, ids=[f"python-{i}" for i in range(len(PYTHON))])
def test_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(code, str(DOC), "exec"), namespace)  # noqa: S102 - the doc's own example
    assert namespace["batch"]["x"].shape == (100, 40)
