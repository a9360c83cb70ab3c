"""The standard modules' forms cache (lisp/formcache.py): a cached read gives the same
forms and positions as the reader; a changed text, a tampered or truncated file and
forms the cache does not keep all read the text again; nothing in it is code."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sexpgpu.lisp import formcache
from sexpgpu.lisp.interp import Interpreter
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.reader import read_all
from sexpgpu.lisp.types import Cons

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = [ROOT / "sexpgpu" / "lisp" / "prelude.sx", ROOT / "sexpgpu" / "stdlib" / "nn.sx",
           ROOT / "sexpgpu" / "stdlib" / "optim.sx", ROOT / "sexpgpu" / "contract" / "forms.sx"]


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(tmp_path))
    return tmp_path / "forms"


def _positions(form: object) -> list:
    """Every cons's position, depth first (the reader gives each list's first cell one)."""
    out, todo = [], [form]
    while todo:
        x = todo.pop()
        while type(x) is Cons:
            out.append(None if x.span is None else (x.span.file, x.span.line, x.span.col,
                                                   x.span.width))
            todo.append(x.car)
            x = x.cdr
    return out


def _same(a: list, b: list) -> bool:
    return [prin1_to_string(x) for x in a] == [prin1_to_string(x) for x in b] \
        and [_positions(x) for x in a] == [_positions(x) for x in b] \
        and a.spans == b.spans


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: p.name)
def test_a_cached_read_equals_the_reader(path: Path, cache: Path) -> None:
    text = path.read_text(encoding="utf-8")
    first = formcache.read_cached(text, str(path))  # reads, and writes the cache
    assert len(list(cache.glob("*.forms"))) == 1
    again = formcache.read_cached(text, str(path))
    assert _same(again, read_all(text, str(path))) and _same(first, again)


def test_a_changed_text_is_read_again(cache: Path) -> None:
    formcache.read_cached("(defun f () 1)", "lib.sx")
    forms = formcache.read_cached("(defun f () 2)", "lib.sx")
    assert prin1_to_string(forms[0]) == "(DEFUN F NIL 2)"
    assert len(list(cache.glob("*.forms"))) == 2


# after "HEAD" (the header and this text's source): tokens that do not make forms
TAMPERED = [b"not a cache file", b"HEAD\n@", b"HEAD\n@\n(\nSF\n", b"HEAD\n@\n)",
            b"HEAD\n@\nX1\n", b"HEAD\n@1 2\nI1", b"HEAD\n@\nI" + b"9" * 5000,
            b"HEAD\n@\n" + b"(\n" * 100_000, b"HEAD\n(\n@\n)", b"HEAD\n@\n.\nI1",
            b"HEAD\n@\nR1/0", "HEAD\n@\nT\udcff".encode("utf-8", "surrogatepass")]


@pytest.mark.parametrize("content", TAMPERED)
def test_a_tampered_file_is_read_from_the_text(cache: Path, content: bytes) -> None:
    """With Python's recursion limit as high as the evaluator raises it (a parser that
    recursed in C as deep as the file nested overflowed the stack): lists open
    100,000 deep, an unknown tag, a bad position, a list closed that was never opened,
    a dotted tail with no list, a ratio over 0, a huge integer, bytes that are not
    UTF-8: each is read from the text instead."""
    Interpreter()  # raises sys.getrecursionlimit() for deep Lisp recursion
    assert sys.getrecursionlimit() > 100_000 // 4
    text = "(defun f (x) (* x 2))"
    formcache.read_cached(text, "lib.sx")
    path = formcache._path(formcache._source(text, "lib.sx"))
    head = f"{formcache.HEADER}\n{formcache._escape(formcache._source(text, 'lib.sx'))}"
    path.write_bytes(content.replace(b"HEAD", head.encode()))
    assert prin1_to_string(formcache.read_cached(text, "lib.sx")[0]) == \
        "(DEFUN F (X) (* X 2))"


def test_values_it_does_not_keep_are_not_cached(cache: Path) -> None:
    for text in ("(list '#:g 1)", "(list 123456789012345678901234567890)", "#2A((1 2) (3 4))"):
        forms = formcache.read_cached(text, "lib.sx")
        assert prin1_to_string(forms[0]) == prin1_to_string(read_all(text, "lib.sx")[0])
    assert not list(cache.glob("*.forms"))


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")


def test_the_cache_is_data(cache: Path) -> None:
    """A header, the source it was read from, then one token a line: every line's
    first character one of the format's tags."""
    text = (ROOT / "sexpgpu" / "stdlib" / "optim.sx").read_text(encoding="utf-8")
    formcache.read_cached(text, "optim.sx")
    (path,) = cache.glob("*.forms")
    header, source, *tokens = _lines(path)
    assert header == formcache.HEADER and formcache._unescape(source).endswith(text)
    assert {t[:1] for t in tokens} <= set("@().SKIFGTCR") and len(tokens) > 500


@pytest.mark.parametrize("s", ["plain", "a\nb", "a\\nb", "\n\\", "\\\\n\n", "\r\t x",
                               "\\", "\n", "é\u2028z"])
def test_escaped_strings_come_back(s: str) -> None:
    escaped = formcache._escape(s)
    assert "\n" not in escaped and formcache._unescape(escaped) == s


def test_an_unwritable_cache_still_reads(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("SEXPGPU_CACHE_DIR", str(blocker))  # a file: no directory under it
    assert prin1_to_string(formcache.read_cached("(+ 1 2)", "lib.sx")[0]) == "(+ 1 2)"


def test_a_file_holding_another_source_is_not_used(cache: Path) -> None:
    """The checksum only names the file: one named for this text but written for
    another (a collision) is read again from the text, and replaced."""
    formcache.read_cached("(defun f () 1)", "lib.sx")
    (written,) = cache.glob("*.forms")
    wanted = formcache._path(formcache._source("(defun f () 2)", "lib.sx"))
    written.rename(wanted)
    forms = formcache.read_cached("(defun f () 2)", "lib.sx")
    assert prin1_to_string(forms[0]) == "(DEFUN F NIL 2)"
    assert formcache._unescape(_lines(wanted)[1]).endswith("(defun f () 2)")
