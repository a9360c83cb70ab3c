"""Loading the prelude: its read forms are cached in the process, keyed by its path
and text, and on disk as data (lisp/formcache.py: a text file of tokens, never a
pickle, docs/security.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sexpgpu.lisp.formcache import read_cached

PRELUDE_PATH = Path(__file__).resolve().parent / "prelude.sx"
_FORMS: dict[tuple[str, str], list] = {}  # in-process cache: (path, text) -> forms


def prelude_forms() -> tuple[list, str, str]:
    """(forms, file, text) of the prelude, read once per process."""
    text = PRELUDE_PATH.read_text(encoding="utf-8")
    file = str(PRELUDE_PATH)
    forms = _FORMS.get((file, text))
    if forms is None:
        forms = _FORMS[file, text] = read_cached(text, file)
    return forms, file, text


def load_prelude(interp: Any) -> None:
    forms, file, text = prelude_forms()
    interp.sources[file] = text
    interp.library_files.add(file)
    saved, interp.defining_standard = interp.defining_standard, True
    try:
        interp.eval_forms(forms)
    finally:
        interp.defining_standard = saved
