"""Integer data used as class or token ids is range-checked where it enters: the graph
says which input indexes into what size (ir.bounds), check compares that with what a
loader declares (contract.indices), and the loaders check the data itself
(data.bounds): out of range is E-DATA, never a silent zero row or a wrapped index."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sexpgpu import autodiff as ad
from sexpgpu.contract.compile import compile_file
from sexpgpu.contract.plan import run_plan
from sexpgpu.data.loader import Loader
from sexpgpu.data.spec import FieldBound, LoaderSpec
from sexpgpu.diagnostics import SexpError
from sexpgpu.ir.bounds import index_bounds
from sexpgpu.runtime.loop import run_training
from sexpgpu.runtime.numpy_program import SoftmaxRegression, demo_plan

# -- the graph says what indexes into what ----------------------------------------------


def _bounds(build, dtype: str = "i64") -> dict[str, tuple[int, int]]:
    fn = ad.Function()
    y = fn.input("y", (4,), dtype)
    table = fn.param("table", (7, 3))
    logits = fn.param("logits", (4, 5))
    fn.output("out", build(y, table, logits))
    return {name: (b.low, b.high) for name, b in index_bounds(fn.graph).items()}


GRAPHS = {
    "take": (lambda y, t, lg: ad.take(t, y), {"y": (0, 7)}),
    "one-hot": (lambda y, t, lg: ad.one_hot(y, 5), {"y": (0, 5)}),
    "cross-entropy": (lambda y, t, lg: ad.cross_entropy(lg, y), {"y": (0, 5)}),
    "argmax compare": (lambda y, t, lg: lg.argmax(-1).apply("eq", y), {"y": (0, 5)}),
    "through reshape": (lambda y, t, lg: ad.take(t, y.reshape(2, 2)), {"y": (0, 7)}),
    "through int cast": (lambda y, t, lg: ad.take(t, y.cast("i32")), {"y": (0, 7)}),
    "shifted down": (lambda y, t, lg: ad.one_hot(y - 1, 5), {"y": (1, 6)}),
    "shifted up": (lambda y, t, lg: ad.take(t, 2 + y), {"y": (-2, 5)}),
    "tightest wins": (lambda y, t, lg: ad.take(t, y).sum() + ad.one_hot(y, 5).sum(),
                      {"y": (0, 5)}),
    "both hold": (lambda y, t, lg: ad.take(t, y).sum() + ad.one_hot(y - 1, 7).sum(),
                  {"y": (1, 7)}),
    "not an index": (lambda y, t, lg: y * 2, {}),
    "arithmetic loses it": (lambda y, t, lg: ad.take(t, y * 2), {}),
    "compared with a number": (lambda y, t, lg: y.apply("eq", 3), {}),
}


@pytest.mark.parametrize("name", list(GRAPHS))
def test_index_bounds_come_from_the_graph(name: str) -> None:
    build, want = GRAPHS[name]
    assert _bounds(build) == want


# -- check compares them with what the loader declares -------------------------------------

RUN = """(require "sexpgpu/nn" :as nn)
(require "sexpgpu/optim" :as optim)
(defknob steps 10 "steps")
{loader}
(defmodel net ()
  {model}
(defobjective (model &key x y)
  {loss})
(optimizer (optim:sgd :lr 0.1))
(defrun :steps steps)
"""
LINEAR = """(defchild l (nn:linear {dim} {classes}))
  (lambda (x) (l x)))"""
EMBED = """(defchild e (nn:embedding {vocab} 4))
  (lambda (x) (e x)))"""

CHECKS = {
    "mnist1d, 10 classes": ("(defloader train :source (mnist1d) :batch 4)",
                            LINEAR.format(dim=40, classes=10), None),
    "mnist1d, 8 classes": ("(defloader train :source (mnist1d) :batch 4)",
                           LINEAR.format(dim=40, classes=8), "0..9"),
    "mnist1d, labels shifted": ("(defloader train :source (mnist1d) :batch 4)",
                                LINEAR.format(dim=40, classes=10), "0..9",
                                "(nn:cross-entropy (model x) (- y 1))"),
    "synthetic 4 classes, 3 outputs": (
        "(defloader train :source (synthetic :task :classes :classes 4 :dim 8) :batch 4)",
        LINEAR.format(dim=8, classes=3), "0..3"),
    "parity, 2 outputs": ("(defloader train :source (synthetic :task :parity :dim 8) :batch 4)",
                          LINEAR.format(dim=8, classes=2), None),
    "bytes into 128 rows": (
        "(defloader train :source (text \"t.txt\" :vocab :byte :context 4) :batch 4)",
        EMBED.format(vocab=128), "0..255",
        "(nn:cross-entropy (@ (model x) (ones (list 4 128))) y)"),
    "vocab-size one too many": (
        "(defloader train :source (tokens \"t.bin\" :vocab-size 65 :context 4) :batch 4)",
        EMBED.format(vocab=64), "0..64",
        "(nn:cross-entropy (@ (model x) (ones (list 4 64))) y)"),
    "vocab-size fits": (
        "(defloader train :source (tokens \"t.bin\" :vocab-size 64 :context 4) :batch 4)",
        EMBED.format(vocab=64), None,
        "(nn:cross-entropy (@ (model x) (ones (list 4 64))) y)"),
}


@pytest.mark.parametrize("name", list(CHECKS))
def test_check_compares_declared_values_with_the_model(tmp_path: Path, name: str) -> None:
    loader, model, problem, *loss = CHECKS[name]
    path = tmp_path / "run.sx"
    path.write_text(RUN.format(loader=loader, model=model,
                               loss=loss[0] if loss else "(nn:cross-entropy (model x) y)"))
    if problem is None:
        compile_file(str(path))
        return
    with pytest.raises(SexpError) as info:
        compile_file(str(path))
    diag = info.value.diagnostic
    assert diag.code == "E-DATA" and problem in diag.actual, diag.message
    assert diag.span.file == str(path) and diag.span.line >= 5  # the use, not the loader
    assert any(n.span and n.span.line == 4 for n in diag.notes)  # ... with the loader


def test_the_plan_carries_the_bounds_of_every_loader() -> None:
    root = Path(__file__).resolve().parent.parent / "examples"
    plan = run_plan(compile_file(str(root / "mnist1d-mlp.sx")))
    assert {loader: {f: (b.low, b.high) for f, b in fields.items()}
            for loader, fields in plan.bounds.items()} == {"train": {"y": (0, 10)},
                                                           "test": {"y": (0, 10)}}
    assert plan.bounds["train"]["y"].where.endswith("mnist1d-mlp.sx:32:3")


# -- the loaders check the data ----------------------------------------------------------

CLASSES = {"y": FieldBound(0, 10, "class of a one-hot over 10 classes", "run.sx:9:3")}
ROWS = {"x": FieldBound(0, 65, "row of a (65 4) table", "run.sx:7:3"),
        "y": FieldBound(0, 65, "class of a one-hot over 65 classes", "run.sx:9:3")}


def _npz(tmp_path: Path, y: np.ndarray) -> Loader:
    np.savez(tmp_path / "d.npz", x=np.zeros((len(y), 3), np.float32), y=y)
    return Loader(LoaderSpec("train", "npz", {"path": "d.npz"}, batch=4), tmp_path, 0, CLASSES)


@pytest.mark.parametrize("labels,row,value", [
    (np.arange(40) % 17, 10, 10),     # labels 0..16 for 10 classes
    (np.r_[np.zeros(30, int), -1, np.zeros(9, int)], 30, -1),  # negative: np.take would wrap
])
def test_array_labels_are_checked_when_the_loader_opens(tmp_path: Path, labels, row,
                                                        value) -> None:
    with pytest.raises(SexpError) as info:
        _npz(tmp_path, labels)
    diag = info.value.diagnostic
    assert diag.code == "E-DATA" and "d.npz" in diag.message
    assert f"row {row} holds {value}" in diag.message and "0..9" in diag.message
    assert "run.sx:9:3" in diag.expected


def test_labels_in_range_load(tmp_path: Path) -> None:
    assert _npz(tmp_path, np.arange(40) % 10).next_batch(0)["y"].tolist() == [0, 1, 2, 3]


def test_token_windows_are_checked_as_they_are_cut(tmp_path: Path) -> None:
    tokens = np.zeros(64, np.uint16)
    tokens[37] = 65
    (tmp_path / "t.bin").write_bytes(tokens.tobytes())
    loader = Loader(LoaderSpec("train", "tokens", {"path": "t.bin", "context": 4}, batch=2),
                    tmp_path, 0, ROWS)
    for step in range(4):  # windows 0..7 hold tokens 0..32 (y reaches 32)
        loader.next_batch(step)
    with pytest.raises(SexpError) as info:
        loader.next_batch(4)   # window 8 = tokens 32..36, y up to 36; window 9 hits 37
    assert "token 37 holds 65" in info.value.diagnostic.message


def test_a_text_vocabulary_is_checked_when_prepared(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "t.txt").write_text("abcdefghij" * 10)
    small = {"x": FieldBound(0, 8, "row of a (8 4) table", "run.sx:7:3")}
    with pytest.raises(SexpError) as info:
        Loader(LoaderSpec("train", "text", {"path": "t.txt", "context": 4}, batch=2),
               tmp_path, 0, small)
    assert "10 distinct characters" in info.value.diagnostic.message
    assert "'i' has id 8" in info.value.diagnostic.actual
    with pytest.raises(SexpError) as info:  # a declared :vocab-size the text exceeds
        Loader(LoaderSpec("train", "text", {"path": "t.txt", "context": 4, "vocab_size": 9},
                          batch=2), tmp_path, 0)
    assert ":vocab-size 9" in info.value.diagnostic.message


def test_a_run_with_labels_out_of_range_stops_before_its_first_step(tmp_path: Path) -> None:
    plan = demo_plan(str(tmp_path / "demo.sx"), steps=5)  # synthetic classes 0..3
    plan.bounds = {"train": {"y": FieldBound(0, 3, "class of a one-hot over 3 classes")}}
    code, summary = run_training(plan, SoftmaxRegression(8, 4), tmp_path / "runs")
    assert code == 3 and summary["step"] == 0
    assert summary["error"]["code"] == "E-DATA" and "outside 0..2" in summary["error"]["message"]
