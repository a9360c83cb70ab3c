"""Loader declarations: the batch fields `check` derives without reading data
(npz/npy headers, text context, mnist1d), `:fields` renaming, and loader errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sexpgpu.contract.compile import compile_file
from sexpgpu.diagnostics import SexpError

RUN = """(require "sexpgpu/nn" :as nn)
(require "sexpgpu/optim" :as optim)
(defknob steps 10 "steps")
{loaders}
(defmodel net ()
  (defchild l (nn:linear 5 10))  ; 10 classes: mnist1d's labels fit
  (lambda (x) (l x)))
(defobjective (model &key x y)
  (nn:cross-entropy (model x) y))
(optimizer (optim:sgd :lr 0.1))
(defrun :steps steps)
"""


def compile_with(tmp_path: Path, loaders: str):  # noqa: ANN201 - a CompiledExperiment
    path = tmp_path / "run.sx"
    text = RUN.format(loaders=loaders)
    if "(text " in loaders or "(tokens " in loaders:  # windows of token ids: embed them
        text = text.replace("(nn:linear 5 10)", "(nn:embedding 256 3)")
    path.write_text(text)
    return compile_file(str(path))


def test_npz_fields_from_headers(tmp_path: Path) -> None:
    np.savez(tmp_path / "d.npz", x=np.zeros((20, 5), np.float32), y=np.zeros(20, np.int64),
             x_test=np.zeros((8, 5), np.float32), y_test=np.zeros(8, np.int64))
    compiled = compile_with(tmp_path, """(defloader train :source (npz "d.npz") :batch 4
  :fields (:x "x" :y "y"))
(defloader test :source (npz "d.npz") :batch 8 :fields (:x "x_test" :y "y_test"))""")
    assert compiled.fields["train"]["x"] == ((5,), "f32")
    assert compiled.fields["test"] == {"x": ((5,), "f32"), "y": ((), "i64")}
    data = {v.name: v.shape for v in compiled.graphs.step.inputs if v.role == "data"}
    assert data == {"data/x": (4, 5), "data/y": (4,)}
    assert compiled.experiment.loaders[1].fields == {"x": "x_test", "y": "y_test"}


def test_fields_naming_a_missing_array(tmp_path: Path) -> None:
    np.savez(tmp_path / "d.npz", x=np.zeros((20, 5), np.float32), y=np.zeros(20, np.int64))
    with pytest.raises(SexpError) as info:
        compile_with(tmp_path, '(defloader train :source (npz "d.npz") :batch 4 '
                               ':fields (:x "inputs" :y "y"))')
    assert info.value.diagnostic.code == "E-LOADER" and "inputs" in info.value.diagnostic.message


def test_text_needs_context(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("abc")
    with pytest.raises(SexpError) as info:
        compile_with(tmp_path, '(defloader train :source (text "t.txt") :batch 4)')
    assert info.value.diagnostic.code == "E-LOADER"
    assert info.value.diagnostic.span.line == 4


def test_options_are_evaluated_and_renamed(tmp_path: Path) -> None:
    compiled = compile_with(tmp_path, """(defloader train
  :source (mnist1d :split :train :final-seq-length 5 :seed (+ 40 2)) :batch 4 :order :shuffle)""")
    loader = compiled.experiment.loaders[0]
    assert loader.options == {"split": "train", "final_seq_length": 5, "seed": 42}
    assert loader.order == "shuffle"
    assert compiled.fields["train"]["x"] == ((5,), "f32")


def test_npy_files_by_field(tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.zeros((20, 5), np.float32))
    np.save(tmp_path / "y.npy", np.zeros(20, np.int64))
    compiled = compile_with(tmp_path, """(defloader train
  :source (npy :path '(:x "x.npy" :y "y.npy")) :batch 4)""")
    assert compiled.experiment.loaders[0].options["path"] == {"x": "x.npy", "y": "y.npy"}
    assert compiled.fields["train"] == {"x": ((5,), "f32"), "y": ((), "i64")}


def _npz(tmp_path: Path, **arrays) -> None:
    np.savez(tmp_path / "d.npz", **arrays)


X20, Y20, Y16 = np.zeros((20, 5), np.float32), np.zeros(20, np.int64), np.zeros(16, np.int64)
SHAPES = "'(:x ((5) :f32) :y (() :i64))"
TOKENS = "(defloader train :source (tokens \"t.bin\" :context 8) :batch 4)"
TEXT = "(defloader train :source (text \"t.txt\" :context 8 :split :{split}) :batch 4)"


# (what is on disk, the loader, the code check reports, a piece of its message);
# each problem a header or a file size reveals is found by check, not at step 0
HEADER_CASES = {
    "npz rows differ": (lambda d: _npz(d, x=X20, y=Y16),
                        '(defloader train :source (npz "d.npz") :batch 4)',
                        "E-DATA", "different numbers of rows"),
    "npz split, fields pick one": (
        lambda d: _npz(d, x=X20, y=Y20, x_test=X20[:8], y_test=Y16[:8], t=np.zeros(3)),
        '(defloader train :source (npz "d.npz") :batch 4 :fields (:x "x" :y "y"))',
        None, None),
    "npz fields mix splits": (
        lambda d: _npz(d, x=X20, y=Y20, x_test=X20[:8], y_test=Y16[:8]),
        '(defloader train :source (npz "d.npz") :batch 4 :fields (:x "x" :y "y_test"))',
        "E-DATA", "x 20, y_test 8"),
    "npz scalar field": (lambda d: _npz(d, x=X20, y=np.int64(3)),
                         '(defloader train :source (npz "d.npz") :batch 4)', "E-DATA", "scalar"),
    "npz complex": (lambda d: _npz(d, x=X20.astype(np.complex64), y=Y20),
                    '(defloader train :source (npz "d.npz") :batch 4)', "E-DATA", "complex64"),
    "npz missing": (lambda d: None, '(defloader train :source (npz "d.npz") :batch 4)',
                    "E-DATA", "file not found"),
    "npz absent, shapes declared": (
        lambda d: None, f'(defloader train :source (npz "d.npz" :shapes {SHAPES}) :batch 4)',
        "W-DATA-ABSENT", "checked without it"),
    "npz as declared": (
        lambda d: _npz(d, x=X20, y=Y20),
        f'(defloader train :source (npz "d.npz" :shapes {SHAPES}) :batch 4)', None, None),
    "npz not as declared": (
        lambda d: _npz(d, x=X20[:, :4], y=Y20),
        f'(defloader train :source (npz "d.npz" :shapes {SHAPES}) :batch 4)', "E-DATA",
        "not what :shapes declares"),
    "npz shapes malformed": (
        lambda d: None, "(defloader train :source (npz \"d.npz\" :shapes '(:x (5 :f32)))"
        " :batch 4)", "E-LOADER", "malformed :shapes"),
    "npz not a zip": (lambda d: (d / "d.npz").write_bytes(b"nonsense"),
                      '(defloader train :source (npz "d.npz") :batch 4)', "E-DATA", "readable"),
    "npy rows differ": (lambda d: (np.save(d / "x.npy", X20), np.save(d / "y.npy", Y16)),
                        "(defloader train :source (npy :path '(:x \"x.npy\" :y \"y.npy\")) "
                        ":batch 4)", "E-DATA", "x 20, y 16"),
    "tokens absent": (lambda d: None, TOKENS, "W-DATA-ABSENT", "checked without it"),
    "tokens odd size": (lambda d: (d / "t.bin").write_bytes(b"\0" * 21), TOKENS, "E-DATA",
                        "whole number of tokens"),
    "tokens too few": (lambda d: (d / "t.bin").write_bytes(b"\0" * 16), TOKENS, "E-DATA",
                       "too few tokens"),
    "tokens npy 2-D": (lambda d: np.save(d / "t.npy", np.zeros((4, 8), np.int64)),
                       TOKENS.replace("t.bin", "t.npy"), "E-DATA", "flat integer"),
    "tokens enough": (lambda d: (d / "t.bin").write_bytes(b"\0" * 18), TOKENS, None, None),
    "text absent": (lambda d: None, TEXT.format(split="train"), "W-DATA-ABSENT", "t.txt"),
    "text empty": (lambda d: (d / "t.txt").write_text(""), TEXT.format(split="train"),
                   "E-DATA", "too short"),
    "text val too short": (lambda d: (d / "t.txt").write_text("a" * 40),
                           TEXT.format(split="val"), "E-DATA", "val split"),
    "text long enough": (lambda d: (d / "t.txt").write_text("a" * 100),
                         TEXT.format(split="val"), None, None),
}


@pytest.mark.parametrize("name", list(HEADER_CASES))
def test_check_reads_headers_and_sizes_only(tmp_path: Path, name: str) -> None:
    make, loader, code, text = HEADER_CASES[name]
    make(tmp_path)
    if code is None or code.startswith("W-"):
        compiled = compile_with(tmp_path, loader)
        assert [w.code for w in compiled.warnings] == ([code] if code else [])
        if code:
            assert text in compiled.warnings[0].message and compiled.warnings[0].span.line == 4
        return
    with pytest.raises(SexpError) as info:
        compile_with(tmp_path, loader)
    diag = info.value.diagnostic
    assert diag.code == code and diag.span.line == 4
    assert text in diag.message + diag.actual, (diag.message, diag.actual)


def test_a_split_npz_loads_only_the_selected_arrays(tmp_path: Path) -> None:
    from sexpgpu.data.loader import Loader
    from sexpgpu.data.spec import LoaderSpec

    _npz(tmp_path, x=X20, y=Y20, x_test=X20[:8], y_test=Y16[:8])
    for fields, rows in (({"x": "x", "y": "y"}, 4), ({"x": "x_test", "y": "y_test"}, 4)):
        loader = Loader(LoaderSpec("l", "npz", {"path": "d.npz"}, batch=4, fields=fields),
                        tmp_path, seed=0)
        assert {k: v.shape[0] for k, v in loader.next_batch(0).items()} == {"x": rows, "y": rows}


@pytest.mark.parametrize("source,fix", [
    ("(mnist1d :split :train :num-sample 100)", "did you mean `num-samples`?"),
    ("(mnist1d :split :tset)", "did you mean `test`?"),
    ("(synthetic :task :clases)", "did you mean `classes`?"),
    ("(synthetic)", "use one of:"),
    ("(synthetic :task :parity :split :tain)", "did you mean `train`?"),
    ("(text \"t.txt\" :vocab :bytes :context 4)", "did you mean `byte`?"),
    ("(text \"t.txt\" :val-fraction 1.5 :context 4)", ":val-fraction 0.1"),
    ("(tokens \"t.bin\" :vocab-size 0 :context 4)", ":vocab-size 65"),
    ("(tokens \"t.bin\" :dtype :float32 :context 4)", ":dtype uint16"),
    ("(tokens \"t.bin\" :dtype :nonsense :context 4)", ":dtype uint16"),
])
def test_source_options_the_run_would_reject_are_found_by_check(tmp_path: Path, source: str,
                                                                  fix: str) -> None:
    with pytest.raises(SexpError) as info:
        compile_with(tmp_path, f"(defloader train :source {source} :batch 4)")
    diag = info.value.diagnostic
    assert diag.code == "E-LOADER" and diag.span.line == 4
    assert diag.fix.startswith(fix), diag.fix
@pytest.mark.parametrize("arrays, what", [
    ({"x": np.array([{"a": 1}] * 20, dtype=object), "y": np.zeros(20, np.int64)}, "object"),
    ({"x": np.zeros((20, 5), np.float32), "y": np.array(["a"] * 20)}, "not numbers"),
    ({"x": np.zeros((0, 5), np.float32), "y": np.zeros(0, np.int64)}, "no rows"),
], ids=["pickled-objects", "strings", "empty"])
def test_check_refuses_arrays_a_batch_cannot_hold(tmp_path: Path, arrays, what) -> None:
    np.savez(tmp_path / "d.npz", **arrays)
    with pytest.raises(SexpError) as info:
        compile_with(tmp_path, '(defloader train :source (npz "d.npz") :batch 4)')
    assert info.value.diagnostic.code == "E-DATA" and what in info.value.diagnostic.message


def test_source_option_table_covers_every_source_and_generator_argument() -> None:
    import dataclasses

    from sexpgpu.contract.collect import SOURCES as DECLARED
    from sexpgpu.data.mnist1d import Mnist1dArgs
    from sexpgpu.data.sources import SOURCES as OPENERS
    from sexpgpu.data.spec import SOURCE_OPTIONS

    assert set(SOURCE_OPTIONS) == set(DECLARED) == set(OPENERS)
    generator = {f.name for f in dataclasses.fields(Mnist1dArgs)}
    assert set(SOURCE_OPTIONS["mnist1d"]) == generator | {"split", "dtype"}
