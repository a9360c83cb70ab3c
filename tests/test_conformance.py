"""SBCL conformance: every program in tests/conformance prints exactly what SBCL printed.

Each `<area>/<NNN-name>.lisp` has a sibling `.out` holding the standard output of
`sbcl --script` on it (regenerate with `python tools/gen_conformance.py`; CI has no sbcl).
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

CORPUS = Path(__file__).parent / "conformance"
PROGRAMS = sorted(CORPUS.rglob("*.lisp"))


def _visible(line: str) -> str:
    # print's trailing space and a missing final newline both matter; show them
    return line.replace(" \n", "\u00b7\n").replace("\n", "\u21b5\n")


def readable_diff(expected: str, actual: str) -> str:
    """A unified diff (SBCL vs ours) with trailing spaces and newlines made visible."""
    exp = [_visible(s) for s in expected.splitlines(keepends=True)]
    act = [_visible(s) for s in actual.splitlines(keepends=True)]
    diff = difflib.unified_diff(exp, act, fromfile="sbcl", tofile="sexpgpu", lineterm="")
    return "\n".join(line.rstrip("\n") for line in diff)


def test_corpus_is_complete() -> None:
    """The corpus is big enough and every program has its SBCL output and a sane size."""
    assert len(PROGRAMS) >= 320
    for path in PROGRAMS:
        assert path.with_suffix(".out").is_file(), f"{path} has no .out"
        lines = path.read_text(encoding="utf-8").count("\n")
        assert 5 <= lines <= 40, f"{path} has {lines} lines"
        expected = path.with_suffix(".out").read_text(encoding="utf-8")
        assert "debugger invoked" not in expected and "WARNING" not in expected, path


@pytest.mark.parametrize(
    "path", PROGRAMS, ids=[str(p.relative_to(CORPUS).with_suffix("")) for p in PROGRAMS]
)
def test_program_matches_sbcl(path: Path) -> None:
    from sexpgpu.lisp import run_program

    text = path.read_text(encoding="utf-8")
    expected = path.with_suffix(".out").read_text(encoding="utf-8")
    out = run_program(text, file=str(path))
    assert out == expected, f"{path.name}: output differs from SBCL\n" + readable_diff(
        expected, out
    )
