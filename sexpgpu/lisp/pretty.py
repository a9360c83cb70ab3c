"""SBCL's default pretty printing (*print-pretty* is true under `sbcl --script`).

Data lists and vectors longer than the line (80 columns) break in fill style: before
an element whose text (up to the next break point) would pass the margin, before an
element that cannot be printed on one line, and after an element that broke. A list
headed by a known function aligns its arguments under the first one. A few code forms
always break as SBCL prints them: IF puts each branch on its own line, LET/LET* and
FLET/LABELS/MACROLET put each body form on its own line, SETQ one pair per line.
Other code layouts (LOOP, DEFUN past the margin, ...) are not reproduced.
"""

from __future__ import annotations

from typing import Any

from sexpgpu.lisp.printer import PREFIX_PRINT, limited, write
from sexpgpu.lisp.registry import BUILTINS
from sexpgpu.lisp.types import NIL, Cons, Symbol

MARGIN = 80  # SBCL's line length
_CODE = {"IF", "LET", "LET*", "FLET", "LABELS", "MACROLET", "SETQ"}
_DEFINERS = {"DEFUN": 3, "DEFMACRO": 3, "LAMBDA": 2}  # head -> index of the first body form


def _names_function(head: Any) -> bool:
    # the library's builtins (all registered by the time anything prints), not the
    # functions a program defines
    return type(head) is Symbol and not head.is_keyword and head in BUILTINS


def _flat(obj: Any, escape: bool) -> str:
    out: list[str] = []
    write(obj, escape, out)
    return "".join(out)


def _items(obj: Cons) -> tuple[list, Any]:
    items = []
    node = obj
    while type(node) is Cons:
        items.append(node.car)
        node = node.cdr
    return items, node


def _code_kind(obj: Any) -> str | None:
    """The code layout a list gets, if its head is one that always breaks."""
    if type(obj) is not Cons or type(obj.car) is not Symbol or obj.car.name not in _CODE:
        return None
    items, tail = _items(obj)
    if tail is not NIL:
        return None
    name = obj.car.name
    if name == "IF":
        return "if" if len(items) >= 3 else None
    if name in ("LET", "LET*"):
        return "let" if len(items) >= 3 else None
    if name == "SETQ":
        return "setq" if len(items) >= 5 and len(items) % 2 == 1 else None
    return "flet" if len(items) >= 3 and type(items[1]) is Cons else None


def _has_code(obj: Any, depth: int = 0) -> bool:
    """Whether printing `obj` meets a form that always breaks."""
    if depth > 200:
        return False
    if type(obj) is Cons:
        if _code_kind(obj) is not None:
            return True
        node = obj
        while type(node) is Cons:
            if _has_code(node.car, depth + 1):
                return True
            node = node.cdr
        return False
    if type(obj) is list:
        return any(_has_code(item, depth + 1) for item in obj)
    return False


def layout(obj: Any, escape: bool, column: int) -> str:
    """The printed text of `obj` when it starts at `column`."""
    obj = limited(obj)
    if not isinstance(obj, (Cons, list)):
        return _flat(obj, escape)
    flat = _flat(obj, escape)
    if "\n" not in flat and column + len(flat) <= MARGIN and not _has_code(obj):
        return flat
    state = _Layout(escape, column)
    state.emit(obj, 0)
    return "".join(state.parts)


class _Layout:
    def __init__(self, escape: bool, column: int):
        self.escape = escape
        self.col = column
        self.parts: list[str] = []
        self.lines = 0

    def write(self, text: str) -> None:
        self.parts.append(text)
        if "\n" in text:
            self.lines += text.count("\n")
            self.col = len(text) - text.rfind("\n") - 1
        else:
            self.col += len(text)

    def newline(self, indent: int) -> None:
        if self.parts and self.parts[-1] == " ":
            self.parts.pop()  # the space before a taken break is not printed
        self.write("\n" + " " * indent)

    def fits(self, obj: Any, trail: int) -> bool:
        """Whether `obj` prints flat from here, with `trail` characters after it."""
        flat = _flat(obj, self.escape)
        return "\n" not in flat and self.col + len(flat) + trail <= MARGIN \
            and not _has_code(obj)

    def one_line(self, obj: Any, column: int) -> str | None:
        """The text of `obj` if it prints on one line starting at `column`, else None."""
        text = layout(obj, self.escape, column)
        return None if "\n" in text else text

    def emit(self, obj: Any, trail: int) -> None:
        if type(obj) is Cons:
            head = obj.car
            if type(head) is Symbol and head.name in PREFIX_PRINT and type(obj.cdr) is Cons \
                    and obj.cdr.cdr is NIL:
                self.write(PREFIX_PRINT[head.name])
                self.emit(obj.cdr.car, trail)
                return
            kind = _code_kind(obj)
            if kind is not None:
                self.code(kind, obj, trail)
                return
            if type(head) is Symbol and head.name in _DEFINERS and not self.fits(obj, trail):
                self.definer(obj)
                return
            items, tail = _items(obj)
            self.block("(", items, tail, trail)
        elif type(obj) is list:
            self.block("#(", obj, NIL, trail)
        else:
            self.write(_flat(obj, self.escape))

    def block(self, prefix: str, items: list, tail: Any, trail: int) -> None:
        self.write(prefix)
        indent = self.col
        first = 0
        if prefix == "(" and len(items) > 1 and _names_function(items[0]):
            # a call to a known function: arguments aligned under the first one
            self.write(_flat(items[0], self.escape) + " ")
            indent = self.col
            first = 1
        previous_broke = False
        for i, item in enumerate(items[first:], start=first):
            last = i == len(items) - 1 and tail is NIL
            # a section runs to the next break point: the space after an element, or
            # for the last one the closing parens
            item_trail = 1 + trail if last else 1
            if i > first:
                self.write(" ")
                text = self.one_line(item, self.col)
                if previous_broke or text is None or self.col + len(text) + item_trail > MARGIN:
                    self.newline(indent)
            before = self.lines
            self.emit(item, 1 + trail if last else 0)
            previous_broke = self.lines != before
        if tail is not NIL:
            self.write(" . ")
            self.emit(tail, 1 + trail)
        self.write(")")

    def code(self, kind: str, obj: Cons, trail: int) -> None:
        items, _ = _items(obj)
        start = self.col
        self.write("(" + _flat(items[0], self.escape) + " ")
        if kind == "if":
            self.emit(items[1], 0)
            for branch in items[2:]:
                self.newline(start + 4)
                self.emit(branch, 0)
        elif kind == "setq":
            indent = self.col
            for i in range(1, len(items), 2):
                if i > 1:
                    self.newline(indent)
                self.emit(items[i], 0)
                self.write(" ")
                self.emit(items[i + 1], 0)
        else:
            if kind == "flet":
                self.definitions(items[1])
            elif items[1] is NIL:
                self.write("()")  # an empty binding list prints as ()
            else:
                self.emit(items[1], 0)
            for form in items[2:]:
                self.newline(start + 2)
                self.emit(form, 0)
        self.write(")")

    def definer(self, obj: Cons) -> None:
        """(DEFUN name args body...) too long for a line: body forms at indent 2."""
        items, tail = _items(obj)
        body_at = _DEFINERS[obj.car.name]
        if tail is not NIL or len(items) <= body_at:
            self.block("(", items, tail, 0)
            return
        start = self.col
        self.write("(")
        for i, item in enumerate(items[:body_at]):
            if i:
                self.write(" ")
            if item is NIL and i == body_at - 1:
                self.write("()")
            else:
                self.emit(item, 0)
        for form in items[body_at:]:
            self.newline(start + 2)
            self.emit(form, 0)
        self.write(")")

    def definitions(self, defs: Any) -> None:
        """The ((name args body...)...) list of flet/labels/macrolet."""
        self.write("(")
        indent = self.col
        for i, definition in enumerate(_items(defs)[0]):
            if i:
                self.newline(indent)
            parts, tail = _items(definition) if type(definition) is Cons else ([], NIL)
            if len(parts) < 3 or tail is not NIL:
                self.emit(definition, 0)
                continue
            start = self.col
            self.write("(")
            self.emit(parts[0], 0)
            self.write(" ")
            self.emit(parts[1], 0)
            for form in parts[2:]:
                self.newline(start + 2)
                self.emit(form, 0)
            self.write(")")
        self.write(")")
