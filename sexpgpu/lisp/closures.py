"""Lexical environments and the functions written in Lisp: `Env`, `Closure`, `Macro`.

The evaluator, the special forms and the builtins all share these, so they sit below
all of them; the forms that build bodies (`split_body`, `block_body`) live here too.
"""

from __future__ import annotations

from typing import Any

from sexpgpu.lisp.lambdalist import LambdaList
from sexpgpu.lisp.types import NIL, Cons, intern

MISSING = object()  # "no binding": distinct from every Lisp value, NIL included
LAMBDA = intern("LAMBDA")
DECLARE = intern("DECLARE")
BLOCK = intern("BLOCK")


class Env:
    """A lexical environment frame: variables by symbol, functions by `symbol.fkey`,
    blocks by `symbol.bkey`, tagbody tags by the tag itself wrapped in a tuple."""

    __slots__ = ("vars", "parent", "fns")

    def __init__(self, vars: dict, parent: Env | None, functions: bool = False):
        self.vars = vars
        self.parent = parent
        # the innermost frame, this one or an outer one, that binds function names
        # (flet, labels, macrolet: `functions`): looking up a function skips the
        # frames of variables between (every call of the evaluator looks one up)
        self.fns: Env | None = self if functions else (parent.fns if parent is not None
                                                      else None)

    def outer_fns(self) -> Env | None:
        """The next frame out that binds function names."""
        return self.parent.fns if self.parent is not None else None


class Closure:
    """A function written in Lisp: lambda list, body forms and captured environment."""

    __slots__ = ("name", "ll", "body", "env", "library")

    def __init__(self, name: str | None, ll: LambdaList, body: list, env: Env | None):
        self.name = name
        self.ll = ll
        self.body = body
        self.env = env
        # whether the body was written in a library file; None until its first call
        # (`Interpreter.call_closure` decides it: only the interpreter knows those files)
        self.library: bool | None = None

    def lisp_repr(self, escape: bool) -> str:
        if self.name:
            return f"#<FUNCTION {self.name}>"
        return f"#<FUNCTION (LAMBDA {self.ll.text})>"


class Macro:
    """A macro: a destructuring lambda list and body run on the unevaluated form."""

    __slots__ = ("name", "ll", "body", "env")

    def __init__(self, name: str, ll: LambdaList, body: list, env: Env | None):
        self.name = name
        self.ll = ll
        self.body = body
        self.env = env

    def lisp_repr(self, escape: bool) -> str:
        return f"#<MACRO-FUNCTION {self.name}>"


def split_body(body: Any, allow_doc: bool) -> tuple[list, Any]:
    """Body forms without leading declarations (and docstring); returns (forms, doc)."""
    forms = []
    node = body
    while type(node) is Cons:
        forms.append(node.car)
        node = node.cdr
    doc = NIL
    while forms:
        first = forms[0]
        if type(first) is Cons and first.car is DECLARE:
            forms.pop(0)
        elif allow_doc and type(first) is str and len(forms) > 1 and doc is NIL:
            doc = forms.pop(0)
        else:
            break
    return forms, doc


def block_body(name: Any, body: list) -> list:
    """A function's body forms wrapped in (block name ...), so that return-from name leaves it."""
    forms = NIL
    for form in reversed(body):
        forms = Cons(form, forms)
    return [Cons(BLOCK, Cons(name, forms))]
