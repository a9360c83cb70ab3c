"""Where Python defines Lisp builtins and special forms: one decorated function each.

`@builtin("NAME")` registers a Python function (positional arguments are the Lisp
arguments; `interp=True` passes the interpreter first; `keywords` parses `&key` ones).
`@special("NAME")` registers a special form taking `(interp, form, env)`; its docstring
is the form's syntax. `library.py` lists the modules that register into these tables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sexpgpu.diagnostics import error
from sexpgpu.lisp.errors import E_ARITY
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.types import NIL, Symbol, intern


class Builtin:
    """A function implemented in Python."""

    __slots__ = ("name", "fn", "min", "max", "interp_arg")

    def __init__(self, name: str, fn: Callable, interp_arg: bool = False):
        self.name = name
        self.fn = fn
        self.interp_arg = interp_arg
        # read the arity from the code object: inspect.signature is too slow at startup
        code = fn.__code__
        nparams = code.co_argcount - (1 if interp_arg else 0)
        ndefaults = len(fn.__defaults__ or ())
        # trailing `_name=value` parameters capture a value at definition (the
        # `lambda x, _op=_op:` idiom); they are not Lisp arguments, so an extra
        # argument is E-ARITY rather than silently replacing the capture
        names = code.co_varnames[:code.co_argcount]
        while ndefaults and nparams and names[-1].startswith("_"):
            names = names[:-1]
            nparams -= 1
            ndefaults -= 1
        self.min = nparams - ndefaults
        self.max = None if code.co_flags & 0x04 else nparams

    def lisp_repr(self, escape: bool) -> str:
        return f"#<FUNCTION {self.name}>"


BUILTINS: dict[Any, Builtin] = {}
SPECIAL_FORMS: dict[Any, Callable] = {}


def builtin(*names: str, interp: bool = False) -> Callable[[Callable], Callable]:
    """Register `fn` as the Lisp function(s) `names`."""

    def register(fn: Callable) -> Callable:
        for name in names:
            BUILTINS[intern(name)] = Builtin(name, fn, interp)
        return fn

    return register


def special(*names: str) -> Callable[[Callable], Callable]:
    """Register `fn(interp, form, env)` as the special form(s) `names`."""

    def register(fn: Callable) -> Callable:
        for name in names:
            SPECIAL_FORMS[intern(name)] = fn
        return fn

    return register


def keywords(options: tuple, allowed: tuple) -> dict:
    """Keyword arguments of a builtin as {NAME: value}; unknown keywords are E-ARITY."""
    if len(options) % 2:
        raise error(E_ARITY, "odd number of keyword arguments",
                    actual=" ".join(prin1_to_string(o) for o in options),
                    fix="pass each keyword with a value")
    out = {}
    # :allow-other-keys (its first occurrence, like every keyword) lets unknown keys pass
    others = False
    for i in range(0, len(options), 2):
        key = options[i]
        if isinstance(key, Symbol) and key.is_keyword and key.name == "ALLOW-OTHER-KEYS":
            others = options[i + 1] is not NIL
            break
    for i in range(0, len(options), 2):
        key = options[i]
        name = key.name if isinstance(key, Symbol) and key.is_keyword else None
        if name == "ALLOW-OTHER-KEYS" or name not in allowed and others:
            continue
        if name not in allowed:
            raise error(E_ARITY, f"unknown keyword argument {prin1_to_string(key)}",
                        expected="one of " + " ".join(":" + a.lower() for a in allowed),
                        actual=prin1_to_string(key),
                        fix="use one of " + " ".join(":" + a.lower() for a in allowed))
        out.setdefault(name, options[i + 1])
    return out
