"""The concrete syntax of a .sx file for the commands that edit or compare text (`fmt`,
`new`, `diff`): lists, atoms and comments with every token's text, offsets and line, so
edits keep comments. Callers read the file with the reader first: it reports bad text."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

# the reader's own tokenizer, so both agree on where every token starts and ends
from sexpgpu.lisp.reader import _TOKEN

PREFIXES = ("quote", "qq", "splice", "unquote", "fquote", "uninterned", "feature", "array")
OPENERS = ("open", "vector")


@dataclass
class SyntaxNode:
    """kind: atom | list | comment (`; ...` to the end of its line) | block (`#| |#`).

    text: an atom's or comment's text, a list's opener (`(` or `#(`); prefix: reader
    prefixes glued before it (`'`, `#'`, `,@`, ...). start/end are offsets into the text
    (start at the prefix), line/end_line 1-based, col the 0-based column of `start`."""

    kind: str
    text: str
    start: int
    end: int = 0
    line: int = 0
    end_line: int = 0
    col: int = 0
    prefix: str = ""
    children: list[SyntaxNode] = field(default_factory=list)

    @property
    def is_comment(self) -> bool:
        return self.kind in ("comment", "block")

    def head(self) -> str | None:
        """The lowercased symbol a list starts with, if it starts with one."""
        if self.kind != "list" or not self.children:
            return None
        first = self.children[0]
        if first.kind != "atom" or first.prefix or not is_symbol(first.text):
            return None
        return first.text.lower()

    def forms(self) -> list[SyntaxNode]:
        """The children that are forms (comments left out)."""
        return [c for c in self.children if not c.is_comment]


def is_symbol(text: str) -> bool:
    if text.startswith(('"', ":", "#")) or text == ".":
        return False
    if not any(ch.isdigit() for ch in text):
        return True
    try:
        float(text.replace("d", "e").replace("D", "e"))
    except ValueError:
        return "/" not in text or not text.replace("/", "").lstrip("+-").isdigit()
    return False


class _Lines:
    def __init__(self, text: str):
        self.starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    def line(self, pos: int) -> int:
        return bisect.bisect_right(self.starts, pos)

    def col(self, pos: int) -> int:
        return pos - self.starts[self.line(pos) - 1]


def _block_end(text: str, start: int) -> int:
    """The offset just past the `|#` closing the `#|` at `start` (they nest)."""
    depth, i = 0, start
    while i < len(text) - 1:
        pair = text[i:i + 2]
        if pair == "#|":
            depth, i = depth + 1, i + 2
        elif pair == "|#":
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        else:
            i += 1
    return len(text)


def parse(text: str) -> list[SyntaxNode]:
    """The top-level nodes of `text`, which the reader has already accepted."""
    lines = _Lines(text)
    top = SyntaxNode("list", "", 0)
    stack = [top]
    prefix, prefix_start = "", None
    pos = 0

    def place(node: SyntaxNode) -> None:
        nonlocal prefix, prefix_start
        if prefix_start is not None:
            node.prefix, node.start = prefix, prefix_start
            prefix, prefix_start = "", None
        node.line, node.col = lines.line(node.start), lines.col(node.start)
        stack[-1].children.append(node)

    def finish(node: SyntaxNode, end: int) -> None:
        node.end = end
        node.end_line = lines.line(max(end - 1, node.start))

    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:  # the reader rejects this text before we get here
            raise ValueError(f"unreadable text at offset {pos}")
        kind, token = match.lastgroup, match.group()
        start, pos = pos, match.end()
        if kind == "ws":
            continue
        if kind in PREFIXES:
            if prefix_start is None:
                prefix_start = start
            prefix += token
        elif kind in OPENERS:
            node = SyntaxNode("list", token, start)
            place(node)
            stack.append(node)
        elif kind == "close":
            finish(stack.pop(), pos)
        elif kind == "block":
            pos = _block_end(text, start)
            node = SyntaxNode("block", text[start:pos], start)
            place(node)
            finish(node, pos)
        else:
            node = SyntaxNode("comment" if kind == "comment" else "atom", token.rstrip(), start)
            place(node)
            finish(node, pos)
    return top.children
