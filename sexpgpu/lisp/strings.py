"""String and character builtins, and the string side of the printer and reader
(prin1-to-string, write-to-string, read-from-string)."""

from __future__ import annotations

from typing import Any

from sexpgpu.lisp.conditions import Condition, condition_error
from sexpgpu.lisp.errors import limit_error
from sexpgpu.lisp.printer import (
    CHAR_PRINT_NAMES,
    prin1_to_string,
    princ_to_string,
    with_options,
)
from sexpgpu.lisp.reader import CHAR_NAMES, MAX_NUMBER_DIGITS, Reader
from sexpgpu.lisp.registry import builtin, keywords
from sexpgpu.lisp.sequences import items_of
from sexpgpu.lisp.types import (
    MV,
    NIL,
    Char,
    Symbol,
    T,
    boolean,
    lisp_list,
)


def designator(x: Any) -> str:
    """A string designator (string, symbol or character) as a Python str."""
    t = type(x)
    if t is str:
        return x
    if isinstance(x, Symbol):
        return x.name
    if t is Char:
        return x.ch
    raise TypeError("not a string designator")


builtin("STRINGP", "SIMPLE-STRING-P")(lambda x: boolean(type(x) is str))


@builtin("CHARACTER")
def character(x):
    """A character designator (a character, or a string or symbol name of length one)."""
    if type(x) is Char:
        return x
    text = x.name if isinstance(x, Symbol) else x
    if type(text) is not str or len(text) != 1:
        raise TypeError("lisp: not a character designator")
    return Char(text)
builtin("CHARACTERP")(lambda x: boolean(type(x) is Char))
builtin("STRING")(designator)


def _bounded(a, b, options):
    opts = keywords(options, ("START1", "END1", "START2", "END2"))
    a, b = designator(a), designator(b)
    e1 = opts.get("END1", NIL)
    e2 = opts.get("END2", NIL)
    return (a[opts.get("START1", 0): None if e1 is NIL else e1],
            b[opts.get("START2", 0): None if e2 is NIL else e2], opts.get("START1", 0))


def _mismatch_index(a: str, b: str) -> int:
    i = 0
    while i < len(a) and i < len(b) and a[i] == b[i]:
        i += 1
    return i


def _string_compare(name: str, fold: bool, test):
    def compare(a, b, *options):
        x, y, offset = _bounded(a, b, options)
        if fold:
            x, y = x.lower(), y.lower()
        if name in ("STRING=", "STRING-EQUAL"):
            return boolean(x == y)
        if test(x, y):
            return _mismatch_index(x, y) + offset
        return NIL

    builtin(name)(compare)


_string_compare("STRING=", False, None)
_string_compare("STRING-EQUAL", True, None)
for _name, _fold, _test in [
    ("STRING<", False, lambda x, y: x < y), ("STRING>", False, lambda x, y: x > y),
    ("STRING<=", False, lambda x, y: x <= y), ("STRING>=", False, lambda x, y: x >= y),
    ("STRING/=", False, lambda x, y: x != y),
    ("STRING-LESSP", True, lambda x, y: x < y), ("STRING-GREATERP", True, lambda x, y: x > y),
    ("STRING-NOT-GREATERP", True, lambda x, y: x <= y),
    ("STRING-NOT-LESSP", True, lambda x, y: x >= y),
    ("STRING-NOT-EQUAL", True, lambda x, y: x != y),
]:
    _string_compare(_name, _fold, _test)


def _case_op(fn):
    def op(s, *options):
        opts = keywords(options, ("START", "END"))
        s = designator(s)
        start = opts.get("START", 0)
        end = opts.get("END", NIL)
        end = len(s) if end is NIL else end
        return s[:start] + fn(s[start:end]) + s[end:]

    return op


def capitalize(s: str) -> str:
    out = []
    in_word = False
    for c in s:
        if c.isalnum():
            out.append(c.lower() if in_word else c.upper())
            in_word = True
        else:
            out.append(c)
            in_word = False
    return "".join(out)


def _per_char(method):
    # character by character, as CL does: "ß" has no one-character upcase, so it stays
    def convert(s: str) -> str:
        out = []
        for c in s:
            changed = method(c)
            out.append(changed if len(changed) == 1 else c)
        return "".join(out)

    return convert


builtin("STRING-UPCASE", "NSTRING-UPCASE")(_case_op(_per_char(str.upper)))
builtin("STRING-DOWNCASE", "NSTRING-DOWNCASE")(_case_op(_per_char(str.lower)))
builtin("STRING-CAPITALIZE", "NSTRING-CAPITALIZE")(_case_op(capitalize))


def _bag(chars: Any) -> str:
    if type(chars) is str:
        return chars
    return "".join(c.ch for c in items_of(chars))


builtin("STRING-TRIM")(lambda bag, s: designator(s).strip(_bag(bag)))
builtin("STRING-LEFT-TRIM")(lambda bag, s: designator(s).lstrip(_bag(bag)))
builtin("STRING-RIGHT-TRIM")(lambda bag, s: designator(s).rstrip(_bag(bag)))


@builtin("STRING-TO-LIST")
def string_to_list(s):
    return lisp_list(Char(c) for c in s)


@builtin("MAKE-STRING", interp=True)
def make_string(interp, n, *options):
    opts = keywords(options, ("INITIAL-ELEMENT", "ELEMENT-TYPE"))
    if type(n) is not int or n < 0:
        raise TypeError("make-string size")
    interp.note_alloc(n)
    return opts.get("INITIAL-ELEMENT", Char(" ")).ch * n


@builtin("CHAR", "SCHAR")
def char(s, i):
    if i < 0:
        raise IndexError("negative index")
    return Char(s[i])


@builtin("PARSE-INTEGER")
def parse_integer(s, *options):
    opts = keywords(options, ("START", "END", "RADIX", "JUNK-ALLOWED"))
    end = opts.get("END", NIL)
    start = opts.get("START", 0)
    text = s[start: None if end is NIL else end]
    radix = opts.get("RADIX", 10)
    stripped = text.strip()
    if len(stripped) > MAX_NUMBER_DIGITS:
        raise limit_error(f"parse-integer: a {len(stripped)}-character integer is too long",
                          f"parse integers of at most {MAX_NUMBER_DIGITS} digits")
    junk = opts.get("JUNK-ALLOWED", NIL) is not NIL
    if junk:
        digits = ""
        for i, c in enumerate(stripped):
            if c in "+-" and i == 0 or c.isalnum() and _digit_value(c, radix) is not None:
                digits += c
            else:
                break
        lead = len(text) - len(text.lstrip())
        stop = start + lead + len(digits)
        if not digits or digits in "+-":
            return MV((NIL, stop))
        return MV((int(digits, radix), stop))
    body = stripped[1:] if stripped[:1] in ("+", "-") else stripped
    if not body or any(_digit_value(c, radix) is None for c in body):
        # PARSE-ERROR, as the standard says (Python's int() would also take "1_0")
        raise condition_error(Condition(
            "PARSE-ERROR", f"parse-integer: {prin1_to_string(text)} is not an integer"),
            fix="pass :junk-allowed t, or check the text first")
    return MV((int(stripped, radix), start + len(text)))


def _digit_value(c: str, radix: int):
    try:
        value = int(c, 36)
    except ValueError:
        return None
    return value if value < radix else None


# ------------------------------------------------------------------ characters


builtin("CHAR-CODE", "CHAR-INT")(lambda c: ord(c.ch))
builtin("CODE-CHAR")(lambda n: Char(chr(n)))
builtin("CHAR-UPCASE")(lambda c: Char(_per_char(str.upper)(c.ch)))
builtin("CHAR-DOWNCASE")(lambda c: Char(_per_char(str.lower)(c.ch)))
builtin("UPPER-CASE-P")(lambda c: boolean(c.ch.isupper()))
builtin("LOWER-CASE-P")(lambda c: boolean(c.ch.islower()))
builtin("BOTH-CASE-P")(lambda c: boolean(c.ch.isalpha()))
builtin("ALPHA-CHAR-P")(lambda c: boolean(c.ch.isalpha()))
builtin("ALPHANUMERICP")(lambda c: boolean(c.ch.isalnum()))
builtin("GRAPHIC-CHAR-P")(lambda c: boolean(c.ch.isprintable()))
builtin("STANDARD-CHAR-P")(lambda c: boolean(c.ch.isprintable() or c.ch == "\n"))


@builtin("DIGIT-CHAR-P")
def digit_char_p(c, radix=10):
    value = _digit_value(c.ch, radix)
    return NIL if value is None else value


@builtin("DIGIT-CHAR")
def digit_char(n, radix=10):
    if not 0 <= n < radix:
        return NIL
    return Char("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[n])


@builtin("NAME-CHAR")
def name_char(name):
    text = designator(name)
    found = CHAR_NAMES.get(text.upper())
    if found is None and len(text) == 1:
        found = text
    return NIL if found is None else Char(found)


@builtin("CHAR-NAME")
def char_name(c):
    if c.ch == " ":
        return "Space"
    return CHAR_PRINT_NAMES.get(c.ch, NIL)


def _char_compare(name: str, fold: bool, test):
    def compare(first, *rest):
        chars = [c.ch.lower() if fold else c.ch for c in (first, *rest)]
        if name in ("CHAR/=", "CHAR-NOT-EQUAL"):
            return boolean(len(set(chars)) == len(chars))
        return boolean(all(test(a, b) for a, b in zip(chars, chars[1:])))

    builtin(name)(compare)


for _name, _fold, _test in [
    ("CHAR=", False, lambda a, b: a == b), ("CHAR-EQUAL", True, lambda a, b: a == b),
    ("CHAR<", False, lambda a, b: a < b), ("CHAR>", False, lambda a, b: a > b),
    ("CHAR<=", False, lambda a, b: a <= b), ("CHAR>=", False, lambda a, b: a >= b),
    ("CHAR-LESSP", True, lambda a, b: a < b), ("CHAR-GREATERP", True, lambda a, b: a > b),
    ("CHAR-NOT-GREATERP", True, lambda a, b: a <= b),
    ("CHAR-NOT-LESSP", True, lambda a, b: a >= b),
    ("CHAR/=", False, None), ("CHAR-NOT-EQUAL", True, None),
]:
    _char_compare(_name, _fold, _test)


# ------------------------------------------------------------------ printing and reading


builtin("PRIN1-TO-STRING")(lambda x: prin1_to_string(x))


@builtin("WRITE-TO-STRING")
def write_to_string(x, *options):
    opts = keywords(options, ("BASE", "RADIX", "ESCAPE", "PRETTY", "READABLY", "CASE",
                              "LEVEL", "LENGTH"))
    show = prin1_to_string if opts.get("ESCAPE", T) is not NIL else princ_to_string
    return with_options(opts, lambda: show(x))


builtin("PRINC-TO-STRING")(lambda x: princ_to_string(x))


@builtin("READ-FROM-STRING", interp=True)
def read_from_string(interp, text, *options):
    reader = Reader(text, "<read-from-string>")
    forms = reader.read_all(0, 1)
    if not forms:
        raise ValueError("lisp: read-from-string: no form in the string")
    return MV((forms[0], reader.end))


