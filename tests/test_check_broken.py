"""Broken run files: each names its expected diagnostic in its first line
(`;; expect: CODE LINE:COL -- why`); compiling it must raise exactly that, at that
position, with the expected and actual facts and a fix. A `W-` code is a warning:
compiling succeeds and reports it, at that position, among the compiled warnings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sexpgpu.contract.compile import compile_file
from sexpgpu.diagnostics import SexpError

BROKEN = sorted((Path(__file__).parent / "broken").glob("*.sx"))
HEADER = re.compile(r";; expect: (?P<code>[EW]-[A-Z0-9-]+) (?P<line>\d+):(?P<col>\d+) -- "
                    r"(?P<why>.*)")
# raised by the Lisp evaluator, whose diagnostics carry a fix ("did you mean") but no
# expected/actual pair
FIX_ONLY = {"E-UNBOUND", "E-UNDEFINED-FUNCTION"}


def _expectation(path: Path) -> tuple[str, int, int, str]:
    match = HEADER.match(path.read_text(encoding="utf-8").splitlines()[0])
    assert match, f"{path.name}: first line must be ';; expect: CODE LINE:COL -- why'"
    return match["code"], int(match["line"]), int(match["col"]), match["why"]


def test_there_are_at_least_forty() -> None:
    assert len(BROKEN) >= 40


@pytest.mark.parametrize("path", BROKEN, ids=[p.stem for p in BROKEN])
def test_broken_file(path: Path) -> None:
    code, line, col, why = _expectation(path)
    if code.startswith("W-"):
        warnings = compile_file(str(path)).warnings
        found = [w for w in warnings if w.code == code]
        assert found, f"no {code} among {[w.code for w in warnings]}"
        diag = found[0]
    else:
        with pytest.raises(SexpError) as info:
            compile_file(str(path))
        diag = info.value.diagnostic
    assert diag.code == code, diag.message
    assert diag.span is not None and diag.span.file == str(path)
    assert (diag.span.line, diag.span.col) == (line, col), diag.message
    assert diag.fix, diag.message
    if code in FIX_ONLY:
        assert "did you mean" in diag.fix
    else:
        assert diag.expected and diag.actual, diag.message
    hint = re.search(r"did you mean ([\w:-]+)", why)
    if hint:   # the hint the header names, and no other
        assert re.search(rf"did you mean `?{re.escape(hint[1])}\b(?!-)", diag.fix), diag.fix


@pytest.mark.parametrize("name", ["shape-linear-input", "shape-layer-norm",
                                  "shape-attention-heads"])
def test_shape_error_in_a_layer_points_at_the_user_with_the_library_as_note(name: str) -> None:
    path = Path(__file__).parent / "broken" / f"{name}.sx"
    with pytest.raises(SexpError) as info:
        compile_file(str(path))
    diag = info.value.diagnostic
    assert diag.span.file == str(path)
    assert any(n.span is not None and n.span.file.endswith("stdlib/nn.sx") for n in diag.notes)


def test_unknown_knob_suggests_the_nearest() -> None:
    path = Path(__file__).parent / "broken" / "variant-unknown-knob.sx"
    with pytest.raises(SexpError) as info:
        compile_file(str(path))
    assert "hidden" in info.value.diagnostic.fix
