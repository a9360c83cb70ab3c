"""`sexpgpu new FROM TO`: the selection is written in as knob defaults, nothing else in
the text changes, the new file compiles to the same plan, and nothing is overwritten."""

from __future__ import annotations

import difflib

from cmd_helpers import ROOT, SWEEP_TINY, sexpgpu, sexpgpu_json

from sexpgpu.commands.new import lisp_text
from sexpgpu.contract.compile import compile_file
from sexpgpu.contract.plan import plan_json
from sexpgpu.selection import Keyword, Selection

MLP = ROOT / "examples" / "mnist1d-mlp.sx"


def _changed_lines(a: str, b: str) -> list[str]:
    return [line for line in difflib.ndiff(a.splitlines(), b.splitlines())
            if line.startswith(("- ", "+ "))]


def test_new_writes_the_selection_in_and_compiles_to_the_same_plan(tmp_path, capsys) -> None:
    target = tmp_path / "mlp-small.sx"
    code, payload = sexpgpu_json(capsys, "new", MLP, target, "--set", "lr=0.03",
                                 "--variant", "small")
    assert code == 0
    assert payload["set"] == {"lr": "0.03", "hidden": "64"}
    before, after = MLP.read_text(encoding="utf-8"), target.read_text(encoding="utf-8")
    assert sorted(_changed_lines(before, after)) == [
        '+ (defknob hidden 64 "hidden width")',
        '+ (defknob lr 0.03 "Adam learning rate" :range (0 1))',
        '- (defknob hidden 256 "hidden width")',
        '- (defknob lr 1e-2 "Adam learning rate" :range (0 1))',
    ]
    selected = plan_json(compile_file(str(MLP), Selection({"lr": "0.03"}, "small")))
    written = plan_json(compile_file(str(target)))
    for key in ("knobs", "parameters", "optimizer", "step", "memory"):
        assert written[key] == selected[key]


def test_new_keyword_knob(tmp_path, capsys) -> None:
    target = tmp_path / "tanh.sx"
    code, _, _ = sexpgpu(capsys, "new", SWEEP_TINY, target, "--set", "act=:tanh")
    assert code == 0
    assert "(defknob act :tanh " in target.read_text(encoding="utf-8")
    assert compile_file(str(target)).experiment.knobs["act"] == Keyword("tanh")


def test_new_refuses_to_overwrite(tmp_path, capsys) -> None:
    target = tmp_path / "exists.sx"
    target.write_text(";; mine\n", encoding="utf-8")
    code, payload = sexpgpu_json(capsys, "new", MLP, target, "--set", "lr=0.03")
    assert code == 1
    assert payload["diagnostics"][0]["code"] == "E-NEW-EXISTS"
    assert target.read_text(encoding="utf-8") == ";; mine\n"


def test_new_checks_the_selection_first(tmp_path, capsys) -> None:
    target = tmp_path / "bad.sx"
    code, payload = sexpgpu_json(capsys, "new", MLP, target, "--set", "lrr=0.03")
    assert code == 1
    diag = payload["diagnostics"][0]
    assert diag["code"] == "E-KNOB-UNKNOWN" and "`lr`" in diag["fix"]
    assert not target.exists()


def test_lisp_text_round_trips_strings() -> None:
    assert lisp_text('say "hi" \\o/') == '"say \\"hi\\" \\\\o/"'
    assert lisp_text(True) == "t" and lisp_text(0.25) == "0.25" and lisp_text(3) == "3"
    assert lisp_text([1, 2]) == "'(1 2)"
