"""The data diagnostic: a missing or malformed data file, or bad source options."""

from __future__ import annotations

from pathlib import Path

from sexpgpu.diagnostics import SexpError, Span, define_code, error

E_DATA = define_code(
    "E-DATA", "data file missing or malformed",
    "A loader's source could not be read: the file does not exist, is not the format the "
    "source expects, or its arrays do not fit together (different lengths, no rows, "
    "objects or strings instead of numbers). "
    "Paths are relative to the run file's directory or absolute.",
)


def data_error(
    path: str | Path | None, what: str, *, fix: str | None = None,
    expected: str | None = None, actual: str | None = None, span: Span | None = None,
) -> SexpError:
    """An E-DATA diagnostic naming the path (when there is one) and what was wrong."""
    message = f"{path}: {what}" if path is not None else what
    return error(E_DATA, message, span, expected=expected, actual=actual, fix=fix)
