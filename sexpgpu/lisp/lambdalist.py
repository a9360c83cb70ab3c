"""Lambda lists: parse once (ordinary, macro and destructuring), then bind arguments.

Parsing checks the shape and raises E-SYNTAX; binding raises E-ARITY. Defaults are
evaluated left to right in the environment being built, as in Common Lisp.
"""

from __future__ import annotations

from typing import Any

from sexpgpu.diagnostics import error
from sexpgpu.lisp.errors import E_ARITY, E_SYNTAX
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.types import NIL, Cons, Symbol, T, keyword

_MARKERS = {"&OPTIONAL", "&REST", "&BODY", "&KEY", "&ALLOW-OTHER-KEYS", "&AUX", "&WHOLE",
            "&ENVIRONMENT"}
ALLOW_OTHER_KEYS = keyword("ALLOW-OTHER-KEYS")


class LambdaList:
    __slots__ = ("required", "optional", "rest", "keys", "allow_other", "aux", "whole",
                 "environment", "simple", "nreq", "form", "_text")

    def __init__(self) -> None:
        self.required: list = []  # Symbol or nested LambdaList (destructuring)
        self.optional: list = []  # (var, default form, supplied-p or None)
        self.rest: Any = None
        self.keys: list = []  # (keyword, var, default form, supplied-p or None)
        self.allow_other = False
        self.aux: list = []  # (var, form)
        self.whole: Any = None
        self.environment: Any = None
        self.simple = False
        self.nreq = 0
        self.form: Any = NIL
        self._text: str | None = None

    @property
    def text(self) -> str:
        """The lambda list as written: printed when first shown (an arity error, a
        closure's name), not for every lambda evaluated."""
        if self._text is None:
            self._text = prin1_to_string(self.form)
        return self._text

    def describe(self) -> str:
        return self.text


def _bad(message: str, form: Any, span) -> Exception:
    return error(E_SYNTAX, f"malformed lambda list: {message}", span,
                 actual=prin1_to_string(form),
                 fix="write (req... &optional (o default) &rest r &key (k default k-p) &aux a)")


def parse(form: Any, span=None, destructuring: bool = False) -> LambdaList:
    """Parse a lambda list form; `destructuring` allows nested lists and a dotted tail."""
    ll = LambdaList()
    ll.form = form
    if form is not NIL and type(form) is not Cons:
        if destructuring and type(form) is Symbol:
            ll.rest = form
            return ll
        raise _bad("expected a list of parameters", form, span)
    mode = "req"
    node = form
    while type(node) is Cons:
        item = node.car
        node = node.cdr
        if type(item) is Symbol and item.name in _MARKERS:
            mode, node = _marker(ll, item.name, mode, node, form, span)
        else:
            _parameter(ll, mode, item, form, span, destructuring)
    if node is not NIL:
        if destructuring and type(node) is Symbol:
            ll.rest = node
        else:
            raise _bad("a lambda list cannot be dotted", form, span)
    ll.nreq = len(ll.required)
    ll.simple = (not ll.optional and ll.rest is None and not ll.keys and not ll.aux
                 and ll.whole is None and ll.environment is None
                 and all(type(r) is Symbol for r in ll.required))
    return ll


_MODES = {"&OPTIONAL": "opt", "&REST": "rest", "&BODY": "rest", "&KEY": "key", "&AUX": "aux"}


def _marker(ll: LambdaList, name: str, mode: str, node: Any, form: Any, span) -> tuple[str, Any]:
    """A lambda-list keyword: returns the parsing mode after it and the rest of the list."""
    if name == "&ALLOW-OTHER-KEYS":
        ll.allow_other = True
        return mode, node
    if name in ("&WHOLE", "&ENVIRONMENT"):
        if type(node) is not Cons:
            raise _bad(f"{name.lower()} needs a variable", form, span)
        if name == "&WHOLE":
            ll.whole = node.car
        else:
            ll.environment = node.car
        return mode, node.cdr
    mode = _MODES[name]
    if mode == "rest":
        if type(node) is not Cons or type(node.car) is not Symbol:
            raise _bad(f"{name.lower()} needs a variable", form, span)
        ll.rest = node.car
        return "after-rest", node.cdr
    return mode, node


def _parameter(ll: LambdaList, mode: str, item: Any, form: Any, span,
               destructuring: bool) -> None:
    """One parameter, in the section `mode` (req, opt, key, aux) it appears in."""
    if mode == "req":
        if type(item) is Cons and destructuring:
            ll.required.append(parse(item, span, True))
        elif type(item) is Symbol and not item.is_keyword and item not in (NIL, T):
            ll.required.append(item)
        else:
            raise _bad(f"{prin1_to_string(item)} is not a variable", form, span)
    elif mode == "opt":
        var, default, supplied = _spec(item, form, span, destructuring)
        ll.optional.append((var, default, supplied))
    elif mode == "key":
        ll.keys.append(_key_spec(item, form, span, destructuring))
    elif mode == "aux":
        var, default, _ = _spec(item, form, span, False)
        ll.aux.append((var, default))
    else:
        raise _bad("only one variable may follow &rest", form, span)


def _key_spec(item: Any, form: Any, span, destructuring: bool) -> tuple:
    """(keyword, var, default form, supplied-p) of `k`, `(k default k-p)` or
    `((:key var) default k-p)`."""
    if type(item) is Cons and type(item.car) is Cons:
        key = item.car.car
        var = item.car.cdr.car if type(item.car.cdr) is Cons else NIL
        rest = item.cdr
        default = rest.car if type(rest) is Cons else NIL
        supplied = rest.cdr.car if type(rest) is Cons and type(rest.cdr) is Cons else None
        if destructuring and type(var) is Cons:
            var = parse(var, span, True)
        return key, var, default, supplied
    var, default, supplied = _spec(item, form, span, destructuring)
    key = keyword(var.name) if type(var) is Symbol else None
    if key is None:
        raise _bad("a destructured &key needs ((:key pattern))", form, span)
    return key, var, default, supplied


def _spec(item: Any, form: Any, span, destructuring: bool):
    if type(item) is Symbol and not item.is_keyword:
        return item, NIL, None
    if type(item) is Cons:
        var = item.car
        if type(var) is Cons and destructuring:
            var = parse(var, span, True)
        elif type(var) is not Symbol:
            raise _bad(f"{prin1_to_string(var)} is not a variable", form, span)
        rest = item.cdr
        default = rest.car if type(rest) is Cons else NIL
        supplied = rest.cdr.car if type(rest) is Cons and type(rest.cdr) is Cons else None
        return var, default, supplied
    raise _bad(f"{prin1_to_string(item)} is not a parameter", form, span)


def arity_error(name: str, ll: LambdaList, nargs: int, detail: str | None = None):
    low = ll.nreq
    high = None if ll.rest is not None or ll.keys else low + len(ll.optional)
    if high is None:
        want = f"at least {low}"
    elif high == low:
        want = f"{low}"
    else:
        want = f"{low} to {high}"
    message = detail or f"{name} called with {nargs} argument{'s' if nargs != 1 else ''}"
    return error(E_ARITY, message, expected=f"{want} argument(s): {name} {ll.text}",
                 actual=f"{nargs}", fix=f"call it as ({name} ...) matching {ll.text}")


def bind(interp: Any, ll: LambdaList, args: list, vars: dict, env: Any, name: str) -> None:
    """Bind `args` to the parameters of `ll` into `vars` (the dict of `env`)."""
    nargs = len(args)
    nreq = ll.nreq
    if nargs < nreq:
        raise arity_error(name, ll, nargs)
    for i in range(nreq):
        target = ll.required[i]
        if type(target) is Symbol:
            vars[target] = args[i]
        else:
            bind_destructure(interp, target, args[i], vars, env, name)
    i = nreq
    for var, default, supplied in ll.optional:
        present = i < nargs
        _bind(interp, var, default, supplied, present, args[i] if present else NIL,
              vars, env, name)
        i += present
    rest_args = args[i:]
    if ll.rest is not None:
        tail = NIL
        for item in reversed(rest_args):
            tail = Cons(item, tail)
        vars[ll.rest] = tail
    elif rest_args and not ll.keys:
        raise arity_error(name, ll, nargs)
    if ll.keys:
        _bind_keys(interp, ll, rest_args, vars, env, name, nargs)
    for var, form in ll.aux:
        vars[var] = interp.eval1(form, env) if form is not NIL else NIL


def _bind_keys(interp, ll, rest_args, vars, env, name, nargs) -> None:
    if len(rest_args) % 2:
        raise error(E_ARITY, f"{name}: odd number of keyword arguments",
                    expected=f"keyword/value pairs: {ll.text}", actual=f"{nargs} arguments",
                    fix="pass each keyword with a value")
    given: dict = {}
    allow = ll.allow_other
    for j in range(0, len(rest_args), 2):
        key = rest_args[j]
        if key is ALLOW_OTHER_KEYS and rest_args[j + 1] is not NIL:
            allow = True
        if key not in given:  # the leftmost occurrence wins
            given[key] = rest_args[j + 1]
    if not allow:
        known = {k for k, _, _, _ in ll.keys}
        for key in given:
            if key not in known and key is not ALLOW_OTHER_KEYS:
                names = " ".join(prin1_to_string(k) for k in known)
                raise error(E_ARITY, f"{name}: unknown keyword argument {prin1_to_string(key)}",
                            expected=f"one of {names}", actual=prin1_to_string(key),
                            fix=f"use one of {names}")
    for key, var, default, supplied in ll.keys:
        _bind(interp, var, default, supplied, key in given, given.get(key, NIL),
              vars, env, name)


def _bind(interp, var, default, supplied, present: bool, value, vars, env, name) -> None:
    """An &optional or &key parameter: its argument when present, else its default,
    evaluated now so that it sees the parameters bound before it; then its
    supplied-p variable."""
    if not present:
        value = interp.eval1(default, env) if default is not NIL else NIL
    _assign(interp, var, value, vars, env, name)
    if supplied is not None:
        vars[supplied] = T if present else NIL


def _assign(interp, var, value, vars, env, name) -> None:
    if type(var) is LambdaList:
        bind_destructure(interp, var, value, vars, env, name)
    else:
        vars[var] = value


def bind_destructure(interp: Any, ll: LambdaList, value: Any, vars: dict, env: Any,
                     name: str) -> None:
    """Destructure a list value against a (macro) lambda list."""
    if ll.whole is not None:
        vars[ll.whole] = value
    if ll.environment is not None:
        vars[ll.environment] = NIL
    items = []
    node = value
    while type(node) is Cons:
        items.append(node.car)
        node = node.cdr
    if node is not NIL and (ll.rest is None or ll.optional or ll.keys):
        raise _cannot_destructure(name, ll, value)
    if type(value) is not Cons and value is not NIL:
        if ll.rest is not None and not ll.required:
            vars[ll.rest] = value
            return
        raise _cannot_destructure(name, ll, value)
    if ll.rest is None:
        bind(interp, ll, items, vars, env, name)
    elif node is not NIL:
        _bind_dotted(interp, ll, value, items, vars, env, name)
    else:
        # &rest/&body shares structure with the argument list, as in CL
        nfixed = ll.nreq + len(ll.optional)
        tail = _nthcdr(value, min(nfixed, len(items)))
        bind(interp, _without_rest(ll), items[: nfixed] + ([] if not ll.keys else items[nfixed:]),
             vars, env, name)
        vars[ll.rest] = tail


def _bind_dotted(interp: Any, ll: LambdaList, value: Any, items: list, vars: dict, env: Any,
                 name: str) -> None:
    """A dotted list: the required parameters from its proper part, &rest the tail."""
    nreq = ll.nreq
    if len(items) < nreq:
        raise arity_error(name, ll, len(items))
    for i in range(nreq):
        _assign(interp, ll.required[i], items[i], vars, env, name)
    vars[ll.rest] = _nthcdr(value, nreq)


def _nthcdr(lst: Any, n: int) -> Any:
    for _ in range(n):
        lst = lst.cdr
    return lst


def _cannot_destructure(name: str, ll: LambdaList, value: Any) -> Exception:
    return error(E_ARITY, f"{name}: cannot destructure {prin1_to_string(value)}",
                 expected=ll.text, actual=prin1_to_string(value),
                 fix="pass a list that matches the pattern")


def _without_rest(ll: LambdaList) -> LambdaList:
    clone = LambdaList()
    for slot in LambdaList.__slots__:
        setattr(clone, slot, getattr(ll, slot))
    clone.rest = None
    clone.whole = None
    return clone
