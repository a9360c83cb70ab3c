"""Loading the prelude: its read forms are cached on disk keyed by text and version."""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path
from typing import Any

from sexpgpu import __version__, env
from sexpgpu.lisp.reader import read_all

PRELUDE_PATH = Path(__file__).resolve().parent / "prelude.sx"
_FORMS: dict[str, list] = {}  # in-process cache: text hash -> forms


def _cache_file(digest: str) -> Path | None:
    try:
        return env.cache_dir() / "lisp" / f"prelude-{digest}.pickle"
    except Exception:  # noqa: BLE001 - no cache directory is fine
        return None


def prelude_forms() -> tuple[list, str, str]:
    """(forms, file, text) of the prelude, read once per process and cached on disk."""
    text = PRELUDE_PATH.read_text(encoding="utf-8")
    file = str(PRELUDE_PATH)
    digest = hashlib.sha256((__version__ + file + text).encode()).hexdigest()[:16]
    forms = _FORMS.get(digest)
    if forms is not None:
        return forms, file, text
    path = _cache_file(digest)
    if path is not None and path.exists():
        try:
            with open(path, "rb") as fh:
                forms = pickle.load(fh)
        except Exception:  # noqa: BLE001 - a corrupt cache is rebuilt
            forms = None
    if forms is None:
        forms = read_all(text, file)
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                with open(tmp, "wb") as fh:
                    pickle.dump(forms, fh, protocol=pickle.HIGHEST_PROTOCOL)
                tmp.replace(path)
            except OSError:
                pass
    _FORMS[digest] = forms
    return forms, file, text


def load_prelude(interp: Any) -> None:
    forms, file, text = prelude_forms()
    interp.sources[file] = text
    interp.library_files.add(file)
    interp.eval_forms(forms)
