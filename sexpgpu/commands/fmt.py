"""`sexpgpu fmt`: the one canonical layout of a .sx file, computed on the concrete syntax
(commands/syntax.py), comments kept."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from sexpgpu import usage
from sexpgpu.atomic import print_json
from sexpgpu.commands.syntax import SyntaxNode, parse
from sexpgpu.contract.forms import read_forms
from sexpgpu.diagnostics import SexpError, Span, define_code, error

HELP = """\
Print a .sx file in the one canonical layout (comments kept), check that it is in
it, or rewrite it in place.

Usage:
  sexpgpu fmt FILE... [--check | --write] [--json]
  sexpgpu fmt (-h | --help)

Options:
  --check   print nothing; exit 1 when a file is not in the canonical layout
  --write   rewrite the files in place (atomically) instead of printing them
  --json    print {"file", "formatted", "changed"} as JSON, one object a file

A directory stands for every .sx file under it. The layout keeps where you broke
lines and fixes everything else: one space between elements on a line, indentation
computed (2 spaces for the body of def*/let/lambda/..., arguments of a call aligned
under the first, data lists under their first element), closing parens on the last
line, at most one blank line, one blank line between top-level forms (one-line forms
with the same head on adjacent lines stay together), a comment after code keeps its
column when there is room.

Examples:
  sexpgpu fmt examples/mnist1d-mlp.sx
  sexpgpu fmt examples/ --check
  sexpgpu fmt my-run.sx --write
"""

E_FMT_CHANGED = define_code(
    "E-FMT-CHANGED", "file is not in the canonical layout",
    "`sexpgpu fmt FILE --check` found that `sexpgpu fmt` would change the file. The "
    "diagnostic points at the first line that differs.",
)

# heads whose arguments after the first few are a body: indented 2 past the paren
BODY_HEADS = frozenset({
    "lambda", "let", "let*", "flet", "labels", "macrolet", "symbol-macrolet", "when",
    "unless", "dolist", "dotimes", "do", "do*", "progn", "prog1", "prog2", "block",
    "case", "ecase", "ccase", "typecase", "etypecase", "handler-case", "handler-bind",
    "unwind-protect", "multiple-value-bind", "destructuring-bind", "with-numerics",
    "eval-when", "tagbody", "catch", "locally", "return-from", "optimizer",
})  # not loop: its clauses align under the first, as a call's arguments do


def is_body_head(name: str) -> bool:
    return name.startswith(("def", "with-")) or name in BODY_HEADS


class Layout:
    """Lays out nodes; `emit` returns a node's text starting at column `col` (later
    lines carry their own absolute indentation)."""

    def emit(self, node: SyntaxNode, col: int) -> str:
        if node.kind != "list":
            return node.prefix + node.text
        return self._list(node, col)

    def _list(self, node: SyntaxNode, col: int) -> str:
        paren = col + len(node.prefix)        # column of the opening paren
        out = node.prefix + node.text
        cur = paren + len(node.text)
        indent = paren + len(node.text)       # data lists: under the first element
        head = node.head()
        for i, child in enumerate(node.children):
            if i > 0:
                prev = node.children[i - 1]
                if child.kind == "comment" and child.line == prev.end_line:
                    pad = max(1, child.col - cur)   # a trailing comment keeps its column
                    out += " " * pad + child.text
                    cur += pad + len(child.text)
                    continue
                if prev.kind == "comment" or child.line > prev.end_line:
                    out += "\n" * (2 if child.line - prev.end_line >= 2 else 1)
                    out += " " * indent
                    cur = indent
                else:
                    out += " "
                    cur += 1
                    if i == 1 and head is not None and not is_body_head(head):
                        indent = cur  # a call: arguments under the first argument
            if i == 0 and head is not None:
                indent = paren + 2 if is_body_head(head) else paren + 1
            text = self.emit(child, cur)
            out += text
            cur = _column_after(text, cur)
        if node.children and node.children[-1].kind == "comment":
            out += "\n" + " " * indent  # a `;` comment runs to the end of its line
        return out + ")"


def _column_after(text: str, col: int) -> int:
    last_newline = text.rfind("\n")
    return col + len(text) if last_newline < 0 else len(text) - last_newline - 1


def format_text(text: str) -> str:
    """The canonical layout of `text` (which the reader accepts)."""
    layout = Layout()
    out: list[str] = []
    prev: SyntaxNode | None = None            # the previous top-level node (comment or form)
    prev_form_text = ""
    for node in parse(text):
        if prev is not None and node.kind == "comment" and node.line == prev.end_line:
            cur = _column_after(out[-1], 0)
            out[-1] += " " * max(1, node.col - cur) + node.text
            continue
        if prev is not None and prev.prefix.startswith(("#+", "#-")):
            # `#+feature FORM`: the form the feature expression guards stays beside it
            col = _column_after(out[-1], 0) + 1
            out[-1] += " " + layout.emit(node, col)
            prev, prev_form_text = node, out[-1]
            continue
        rendered = layout.emit(node, 0)
        if prev is not None:
            out.append("\n" * _blank_lines(prev, node, prev_form_text, rendered))
        out.append(rendered)
        prev, prev_form_text = node, rendered
    return "".join(out).strip("\n") + "\n" if out else ""


def _blank_lines(prev: SyntaxNode, node: SyntaxNode, prev_text: str, text: str) -> int:
    """Newlines between two top-level nodes: 2 for a blank line, 1 for adjacent."""
    gap = node.line - prev.end_line
    if prev.is_comment or node.is_comment:
        return 2 if gap >= 2 else 1
    together = (gap == 1 and prev.head() == node.head() and prev.head() is not None
                and "\n" not in prev_text and "\n" not in text)
    return 1 if together else 2


def first_difference(old: str, new: str) -> int:
    for number, (a, b) in enumerate(zip(old.splitlines(), new.splitlines()), 1):
        if a != b:
            return number
    return min(len(old.splitlines()), len(new.splitlines())) + 1


def write_atomically(path: Path, text: str) -> None:
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(temp, path)


def main(argv: list[str]) -> int:
    args = usage.parse(HELP, "fmt", argv)
    unformatted = []
    for path in _files(args["FILE"]):
        text, _ = read_forms(path)
        formatted = format_text(text)
        changed = formatted != text
        if args["--json"] and not (args["--check"] and changed):
            payload = {"ok": True, "file": path, "changed": changed, "formatted": formatted}
            print_json(payload)
        if args["--check"]:
            if changed:
                line = first_difference(text, formatted)
                unformatted.append(error(
                    E_FMT_CHANGED, f"{path} is not in the canonical layout", Span(path, line, 1),
                    expected=_line(formatted, line), actual=_line(text, line),
                    fix=f"run `sexpgpu fmt {path} --write`").diagnostic)
        elif args["--write"]:
            if changed:
                write_atomically(Path(path), formatted)
            sys.stderr.write(f"{'formatted' if changed else 'unchanged'} {path}\n")
        elif not args["--json"]:
            sys.stdout.write(formatted)
    if unformatted:
        raise SexpError(*unformatted)
    return 0


def _files(paths: list[str]) -> list[str]:
    """The files named, a directory standing for every .sx file under it (sorted)."""
    out: list[str] = []
    for path in paths:
        if Path(path).is_dir():
            out += [str(p) for p in sorted(Path(path).rglob("*.sx"))]
        else:
            out.append(path)
    return out


def _line(text: str, number: int) -> str:
    lines = text.splitlines()
    return repr(lines[number - 1]) if number <= len(lines) else "(end of file)"
