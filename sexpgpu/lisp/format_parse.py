"""Parsing a `format` control string into a tree of text and directives, once per string;
format_.py runs the tree. A malformed control string is an E-TYPE diagnostic."""

from __future__ import annotations

from sexpgpu.diagnostics import error
from sexpgpu.lisp.errors import E_TYPE

CLOSERS = {"{": "}", "[": "]", "(": ")", "<": ">"}
# how many prefix parameters each directive takes (SBCL rejects more at parse time)
MAX_PARAMS = {"a": 4, "s": 4, "w": 0, "d": 4, "b": 4, "o": 4, "x": 4, "r": 5, "f": 5,
              "e": 7, "g": 7, "$": 4, "%": 1, "&": 1, "|": 1, "~": 1, "t": 2, "c": 0,
              "p": 0, "*": 1, "?": 0, "(": 0, ")": 0, "[": 1, "]": 0, "{": 1, "}": 0,
              "^": 3, ";": 2, "<": 4, ">": 0, "i": 1, "_": 0, "\n": 0}
V = object()  # the v parameter: take the value from the arguments
COUNT = object()  # the # parameter: the number of arguments left


class Directive:
    """One ~directive: its character (lower-case), prefix parameters and : @ modifiers.
    ~{ and ~( hold the directives up to their closer in `body`; ~[ and ~< hold one list
    per ~;-separated clause in `clauses` (`default_last`: the last is ~:; or ~:})."""

    __slots__ = ("char", "params", "colon", "at", "body", "clauses", "default_last", "pos")

    def __init__(self, char, params, colon, at, pos):
        self.char = char
        self.params = params
        self.colon = colon
        self.at = at
        self.body: list = []
        self.clauses: list = []
        self.default_last = False
        self.pos = pos


def bad_control(control: str, message: str) -> Exception:
    return error(E_TYPE, f"format: {message}", actual=repr(control)[:80],
                 fix="see docs/builtins.md for the supported format directives")


def parse(control: str) -> list:
    """Parse a control string into a tree of text and directives."""
    stack: list[tuple[Directive | None, list]] = [(None, [])]
    i = 0
    n = len(control)
    text_start = 0
    while i < n:
        if control[i] != "~":
            i += 1
            continue
        if i > text_start:
            stack[-1][1].append(control[text_start:i])
        d, i = _read_directive(control, i)
        if d.char == "\n":
            i = _tilde_newline(control, d, i, stack[-1][1])
        else:
            _nest(control, d, stack)
        text_start = i
    if text_start < n:
        stack[-1][1].append(control[text_start:])
    if len(stack) > 1:
        raise bad_control(control, f"~{stack[-1][0].char} is never closed")
    return stack[0][1]


def _read_directive(control: str, start: int) -> tuple[Directive, int]:
    """The directive whose `~` is at `start`, and the position after it."""
    params, i = _read_params(control, start + 1)
    n = len(control)
    colon = at = False
    while i < n and control[i] in ":@":
        if (colon and control[i] == ":") or (at and control[i] == "@"):
            raise bad_control(control, f"a repeated {control[i]} modifier at {i}")
        colon = colon or control[i] == ":"
        at = at or control[i] == "@"
        i += 1
    if i >= n:
        raise bad_control(control, "the control string ends inside a directive")
    char = control[i].lower()
    if len(params) > MAX_PARAMS.get(char, 7):
        raise bad_control(control, f"~{char} takes at most {MAX_PARAMS.get(char, 7)} "
                                   f"parameters, not {len(params)}")
    return Directive(char, params, colon, at, start), i + 1


def _read_params(control: str, i: int) -> tuple[list, int]:
    """Comma-separated prefix parameters: integers, 'c characters, v and #."""
    n = len(control)
    params: list = []
    while True:
        if i < n and control[i] == "'":
            params.append(control[i + 1] if i + 1 < n else " ")
            i += 2
        elif i < n and control[i] in "vV":
            params.append(V)
            i += 1
        elif i < n and control[i] == "#":
            params.append(COUNT)
            i += 1
        else:
            j = i
            while j < n and (control[j].isdigit() or (j == i and control[j] in "+-")):
                j += 1
            params.append(int(control[i:j]) if j > i else None)
            i = j
        if i < n and control[i] == ",":
            i += 1
            continue
        break
    return ([] if params == [None] else params), i


def _tilde_newline(control: str, d: Directive, i: int, items: list) -> int:
    """~<newline> ignores the newline and the indentation after it (~:<nl> keeps the
    indentation, ~@<nl> keeps the newline); returns where the text goes on."""
    if d.at:
        items.append("\n")
    if not d.colon:
        while i < len(control) and control[i] in " \t":
            i += 1
    return i


def _nest(control: str, d: Directive, stack: list) -> None:
    """Place a directive: openers start a nested body, ~; and closers end one."""
    if d.char in CLOSERS:
        stack[-1][1].append(d)
        stack.append((d, []))
    elif d.char in "}])>":
        _close(control, d, stack)
    elif d.char == ";":
        owner, items = stack[-1]
        if owner is None or owner.char not in "[<":
            raise bad_control(control, "~; outside ~[ ~]")
        owner.clauses.append(items)
        if d.colon:
            owner.default_last = True
        stack[-1] = (owner, [])
    else:
        stack[-1][1].append(d)


def _close(control: str, d: Directive, stack: list) -> None:
    owner, items = stack.pop() if len(stack) > 1 else (None, None)
    if owner is None or CLOSERS[owner.char] != d.char:
        raise bad_control(control, f"~{d.char} has no matching opening directive")
    if owner.char in "[<":
        owner.clauses.append(items)
    else:
        owner.body = items
    if d.char == "}" and d.colon:
        owner.default_last = True  # ~:} : run the body at least once
