"""Diagnostics: the one way every stage reports a problem in the user's file.

A diagnostic has a code (`E-...` error, `W-...` warning), a message, the span
in the user's file, expected/actual facts, a fix and notes that walk back
through macro expansions and library calls. Codes are declared once with
`define_code` next to the stage that raises them; `docs/errors.md` lists them.
"""

from __future__ import annotations

from typing import Any

from sexpgpu.record import factory, record

# --------------------------------------------------------------------------
# Spans


@record(frozen=True, slots=True)
class Span:
    """A position in a source file: 1-based line and column, and a width."""

    file: str
    line: int
    col: int
    width: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "col": self.col, "width": self.width}


# --------------------------------------------------------------------------
# The code registry


@record(frozen=True, slots=True)
class CodeInfo:
    code: str
    title: str
    explanation: str


CODES: dict[str, CodeInfo] = {}


def define_code(code: str, title: str, explanation: str = "") -> str:
    """Declare a diagnostic code once; returns the code for use as a constant."""
    if not (code.startswith("E-") or code.startswith("W-")):
        raise ValueError(f"diagnostic code must start with E- or W-: {code}")
    existing = CODES.get(code)
    if existing is not None and existing.title != title:
        raise ValueError(f"diagnostic code {code} declared twice with different titles")
    CODES[code] = CodeInfo(code, title, explanation)
    return code


E_INTERNAL = define_code(
    "E-INTERNAL", "internal compiler error",
    "A bug in SexpGPU, not in your file. Please report it with the file that caused it.",
)


# --------------------------------------------------------------------------
# Diagnostics


@record(slots=True)
class Note:
    message: str
    span: Span | None = None

    def to_json(self) -> dict[str, Any]:
        return {"message": self.message, "span": self.span.to_json() if self.span else None}


@record(slots=True)
class Diagnostic:
    code: str
    message: str
    span: Span | None = None
    expected: str | None = None
    actual: str | None = None
    fix: str | None = None
    notes: list[Note] = factory(list)

    @property
    def severity(self) -> str:
        return "warning" if self.code.startswith("W-") else "error"

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "span": self.span.to_json() if self.span else None,
            "expected": self.expected,
            "actual": self.actual,
            "fix": self.fix,
            "notes": [n.to_json() for n in self.notes],
        }


class SexpError(Exception):
    """A user error: carries one or more diagnostics. Never an internal bug."""

    def __init__(self, *diagnostics: Diagnostic):
        if not diagnostics:
            raise ValueError("SexpError needs at least one diagnostic")
        self.diagnostics = list(diagnostics)
        super().__init__(diagnostics[0].message)

    @property
    def diagnostic(self) -> Diagnostic:
        return self.diagnostics[0]


def error(
    code: str,
    message: str,
    span: Span | None = None,
    *,
    expected: str | None = None,
    actual: str | None = None,
    fix: str | None = None,
    notes: list[Note] | None = None,
) -> SexpError:
    """Build (not raise) a SexpError with one diagnostic: `raise error(...)`."""
    if code not in CODES:
        raise ValueError(f"undeclared diagnostic code {code}")
    return SexpError(Diagnostic(code, message, span, expected, actual, fix, list(notes or [])))


# --------------------------------------------------------------------------
# Rendering


class SourceMap:
    """The text of every file a compilation read, for showing source lines."""

    def __init__(self) -> None:
        self._lines: dict[str, list[str]] = {}

    def add(self, file: str, text: str) -> None:
        self._lines[file] = text.splitlines()

    def line(self, file: str, line: int) -> str | None:
        lines = self._lines.get(file)
        if lines is None:
            try:
                with open(file, encoding="utf-8", errors="replace") as fh:
                    lines = fh.read().splitlines()
            except OSError:
                return None
            self._lines[file] = lines
        if 1 <= line <= len(lines):
            return lines[line - 1]
        return None


def _excerpt(span: Span, sources: SourceMap) -> list[str]:
    text = sources.line(span.file, span.line)
    if text is None:
        return []
    gutter = str(span.line)
    pad = " " * len(gutter)
    caret = " " * (span.col - 1) + "^" * max(1, span.width)
    return [f"{gutter} | {text}", f"{pad} | {caret}"]


def render(diag: Diagnostic, sources: SourceMap | None = None) -> str:
    """Render one diagnostic in the rustc style: header, location, source, facts."""
    sources = sources or SourceMap()
    out = [f"{diag.severity}[{diag.code}]: {diag.message}"]
    if diag.span is not None:
        out.append(f"  --> {diag.span}")
        out.extend(_excerpt(diag.span, sources))
    for label, value in (("expected", diag.expected), ("actual", diag.actual), ("fix", diag.fix)):
        if value is not None:
            out.append(f"   = {label}: {value}")
    for note in diag.notes:
        where = f" (at {note.span})" if note.span else ""
        out.append(f"   = note: {note.message}{where}")
    return "\n".join(out)


def render_all(diags: list[Diagnostic], sources: SourceMap | None = None) -> str:
    sources = sources or SourceMap()
    return "\n\n".join(render(d, sources) for d in diags)
