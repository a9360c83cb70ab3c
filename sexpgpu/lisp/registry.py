"""Where Python defines Lisp builtins and special forms: one decorated function each.

`@builtin("NAME")` registers a Python function (positional arguments are the Lisp
arguments; `interp=True` passes the interpreter first). `@special("NAME")` registers a
special form taking `(interp, form, env)`; its docstring is the form's syntax.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sexpgpu.lisp.types import intern


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
