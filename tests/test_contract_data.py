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
  (defchild l (nn:linear 5 3))
  (lambda (x) (l x)))
(defobjective (model &key x y)
  (nn:cross-entropy (model x) y))
(optimizer (optim:sgd :lr 0.1))
(defrun :steps steps)
"""


def compile_with(tmp_path: Path, loaders: str):  # noqa: ANN201 - a CompiledExperiment
    path = tmp_path / "run.sx"
    path.write_text(RUN.format(loaders=loaders))
    return compile_file(str(path))


def test_npz_fields_from_headers(tmp_path: Path) -> None:
    np.savez(tmp_path / "d.npz", x=np.zeros((20, 5), np.float32), y=np.zeros(20, np.int64),
             x_test=np.zeros((8, 5), np.float32), y_test=np.zeros(8, np.int64))
    compiled = compile_with(tmp_path, """(defloader train :source (npz "d.npz") :batch 4)
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
