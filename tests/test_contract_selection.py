"""Knobs, variants and sweeps: the selection is bound before the file is evaluated;
unknown or ill-typed values are diagnostics that list the valid ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from sexpgpu import cli
from sexpgpu.contract.compile import compile_file, evaluate_file
from sexpgpu.diagnostics import SexpError
from sexpgpu.selection import Keyword, Selection

RUN = """(require "sexpgpu/nn" :as nn)
(require "sexpgpu/optim" :as optim)
(defknob steps 10 "steps")
(defknob hidden 32 "hidden width")
(defknob lr 1e-3 "learning rate" :range (0 1))
(defknob act :relu "activation" :choices (:relu :gelu))
(defknob residual t "add a skip connection")
(defknob note "plain" "a string knob")
(defvariant small :hidden 8 :act :gelu)
(defsweep grid :hidden (8 16) :lr (1e-3 1e-2))
(defsweep pairs :hidden (8 16 24) :lr (1e-3 1e-2 1e-1) :zip t)
(defsweep from-small :variant small :lr (1e-3 1e-2))
(defloader train :source (mnist1d :split :train) :batch 10)
(defmodel net ()
  (defchild l1 (nn:linear 40 hidden))
  (defchild l2 (nn:linear hidden 10))
  (lambda (x)
    (let ((h (if (eq act :relu) (relu (l1 x)) (gelu (l1 x)))))
      (l2 h))))
(defobjective (model &key x y)
  (nn:cross-entropy (model x) y))
(optimizer (optim:adam :lr lr))
(defrun :steps steps)
"""


@pytest.fixture()
def run_file(tmp_path: Path) -> str:
    path = tmp_path / "run.sx"
    path.write_text(RUN)
    return str(path)


def knobs(path: str, selection: Selection) -> dict:
    return evaluate_file(path, selection)[0].knobs


def test_defaults(run_file: str) -> None:
    values = knobs(run_file, Selection())
    assert values == {"steps": 10, "hidden": 32, "lr": pytest.approx(1e-3), "act": "relu",
                      "residual": True, "note": "plain"}
    assert isinstance(values["act"], Keyword)


def test_set_overrides_variant_overrides_default(run_file: str) -> None:
    values = knobs(run_file, Selection.from_args(["hidden=64", "lr=1", "residual=nil",
                                                  "note=other"], "small"))
    assert values["hidden"] == 64 and values["act"] == "gelu" and values["lr"] == 1.0
    assert values["residual"] is False and values["note"] == "other"


def test_knob_value_reaches_the_model(run_file: str) -> None:
    compiled = compile_file(run_file, Selection.from_args(["hidden=64"]))
    assert {p.path: p.shape for p in compiled.params}["l1/weight"] == (64, 40)


def test_sweep_points(run_file: str) -> None:
    decls = evaluate_file(run_file)[0].decls
    assert decls.sweeps["grid"].points() == [
        {"hidden": 8, "lr": 1e-3}, {"hidden": 8, "lr": 1e-2},
        {"hidden": 16, "lr": 1e-3}, {"hidden": 16, "lr": 1e-2}]
    assert [p["hidden"] for p in decls.sweeps["pairs"].points()] == [8, 16, 24]
    values = knobs(run_file, Selection(sweep="from-small", point=1))
    assert values["hidden"] == 8 and values["lr"] == pytest.approx(1e-2)


@pytest.mark.parametrize("selection,code,hint", [
    (Selection.from_args(["hiden=3"]), "E-KNOB-UNKNOWN", "hidden"),
    (Selection.from_args([], "smal"), "E-VARIANT-UNKNOWN", "small"),
    (Selection.from_args(["hidden=3.5"]), "E-KNOB-TYPE", "hidden=32"),
    (Selection.from_args(["lr=2"]), "E-KNOB-TYPE", "between 0 and 1"),
    (Selection.from_args(["act=tanh"]), "E-KNOB-TYPE", ":relu :gelu"),
    (Selection.from_args(["residual=maybe"]), "E-KNOB-TYPE", "residual=t"),
    (Selection(sweep="grdi"), "E-SWEEP", "grid"),
    (Selection(sweep="grid", point=4), "E-SWEEP", "below 4"),
])
def test_bad_selection(run_file: str, selection: Selection, code: str, hint: str) -> None:
    with pytest.raises(SexpError) as info:
        knobs(run_file, selection)
    diag = info.value.diagnostic
    assert diag.code == code
    assert hint in (diag.fix or "")
    assert diag.expected and diag.actual


def test_set_without_value() -> None:
    with pytest.raises(SexpError) as info:
        Selection.from_args(["hidden"])
    assert info.value.diagnostic.code == "E-KNOB-TYPE"
    assert info.value.diagnostic.fix == "write --set hidden=VALUE"


def test_unknown_knob_lists_the_declared_ones(run_file: str) -> None:
    with pytest.raises(SexpError) as info:
        knobs(run_file, Selection.from_args(["widht=3"]))
    assert "steps, hidden, lr, act, residual, note" in info.value.diagnostic.expected


def test_cli_selection_flags(run_file: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", run_file, "--set", "hidden=16", "--variant", "small"]) == 0
    assert cli.main(["check", run_file, "--variant", "nope"]) == 1
    assert "E-VARIANT-UNKNOWN" in capsys.readouterr().err
    assert cli.main(["check", run_file, "--bogus"]) == 2


def test_variants_command_text(run_file: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["variants", run_file]) == 0
    out = capsys.readouterr().out
    assert "small: --set hidden=8 --set act=:gelu" in out
    assert "pairs (3 points, zipped)" in out


def test_missing_run_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", "/nonexistent/run.sx", "--json"]) == 1
    assert '"E-FILE"' in capsys.readouterr().out


def test_curriculum_stage_must_keep_sample_shapes(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("hello world " * 30)
    text = RUN.replace(
        "(defloader train :source (mnist1d :split :train) :batch 10)",
        '(defloader train :source (mnist1d :split :train) :batch 10\n'
        '  :stages ((:from 100 :source (mnist1d :split :train :seed 3))))')
    ok = tmp_path / "ok.sx"
    ok.write_text(text)
    loader = evaluate_file(str(ok))[0].loaders[0]
    assert loader.stages[0].start == 100 and loader.stages[0].options["seed"] == 3
    compile_file(str(ok))
    bad = tmp_path / "bad.sx"
    bad.write_text(text.replace("(mnist1d :split :train :seed 3)", '(text "t.txt" :context 8)'))
    with pytest.raises(SexpError) as info:
        compile_file(str(bad))
    assert info.value.diagnostic.code == "E-LOADER" and "stage" in info.value.diagnostic.message
