"""Rendering of diagnostics as text (rustc style) and JSON."""

from __future__ import annotations

import pytest

from sexpgpu.diagnostics import (
    CODES,
    Note,
    SexpError,
    SourceMap,
    Span,
    define_code,
    error,
    render,
)


def _sources() -> SourceMap:
    sources = SourceMap()
    sources.add("gpt.sx", "line one\n  (@ x w-out)\n")
    return sources


def test_render_shows_location_source_caret_and_facts() -> None:
    exc = error("E-INTERNAL", "matmul inner dimensions differ", Span("gpt.sx", 2, 3, 11),
                expected="(..., 128) @ (128, ...)", actual="(12 64 128) @ (256 65)",
                fix="give w-out (n-embd vocab)", notes=[Note("in nn:linear", Span("nn.sx", 4, 5))])
    text = render(exc.diagnostic, _sources())
    assert text.splitlines() == [
        "error[E-INTERNAL]: matmul inner dimensions differ",
        "  --> gpt.sx:2:3",
        "2 |   (@ x w-out)",
        "  |   ^^^^^^^^^^^",
        "   = expected: (..., 128) @ (128, ...)",
        "   = actual: (12 64 128) @ (256 65)",
        "   = fix: give w-out (n-embd vocab)",
        "   = note: in nn:linear (at nn.sx:4:5)",
    ]


def test_json_has_every_field() -> None:
    diag = error("E-INTERNAL", "m", Span("f.sx", 1, 2), expected="a", actual="b").diagnostic
    data = diag.to_json()
    assert data["code"] == "E-INTERNAL" and data["severity"] == "error"
    assert data["span"] == {"file": "f.sx", "line": 1, "col": 2, "width": 1}
    assert (data["expected"], data["actual"], data["fix"]) == ("a", "b", None)


def test_undeclared_code_is_a_bug() -> None:
    with pytest.raises(ValueError):
        error("E-NOT-A-CODE", "m")


def test_codes_need_a_prefix() -> None:
    with pytest.raises(ValueError):
        define_code("X-BAD", "bad")
    assert "E-INTERNAL" in CODES


def test_sexp_error_needs_a_diagnostic() -> None:
    with pytest.raises(ValueError):
        SexpError()
