"""Symbols: a symbol's global value (symbol-value, set, boundp, makunbound), its
property list (get, symbol-plist, remprop), and names, interning and gensym."""

from __future__ import annotations

from sexpgpu.lisp.registry import builtin
from sexpgpu.lisp.strings import designator
from sexpgpu.lisp.types import MV, NIL, Symbol, Uninterned, boolean, intern, keyword, lisp_list

# ------------------------------------------------------------------ global values


@builtin("SYMBOL-VALUE", interp=True)
def symbol_value(interp, sym):
    return interp.lookup(sym, None)


@builtin("SET", interp=True)
def lisp_set(interp, sym, value):
    interp.globals[sym] = value
    return value


@builtin("BOUNDP", interp=True)
def boundp(interp, sym):
    return boolean(sym in interp.globals or sym.is_keyword)


@builtin("MAKUNBOUND", interp=True)
def makunbound(interp, sym):
    interp.globals.pop(sym, None)
    return sym


# ------------------------------------------------------------------ property lists


def _plist(interp, sym) -> dict:
    plists = interp.__dict__.setdefault("plists", {})
    return plists.setdefault(sym, {})


@builtin("GET", interp=True)
def lisp_get(interp, sym, indicator, default=NIL):
    return _plist(interp, sym).get(indicator, default)


@builtin("%PUT", interp=True)
def lisp_put(interp, sym, indicator, value):
    _plist(interp, sym)[indicator] = value
    return value


@builtin("SYMBOL-PLIST", interp=True)
def symbol_plist(interp, sym):
    items = []
    for k, v in _plist(interp, sym).items():
        items.extend([k, v])
    return lisp_list(items)


@builtin("REMPROP", interp=True)
def remprop(interp, sym, indicator):
    return boolean(_plist(interp, sym).pop(indicator, None) is not None)


# ------------------------------------------------------------------ names

builtin("%SYMBOL")(lambda name: intern(name))
builtin("SYMBOLP")(lambda x: boolean(isinstance(x, Symbol)))
builtin("KEYWORDP")(lambda x: boolean(isinstance(x, Symbol) and x.is_keyword))
builtin("SYMBOL-NAME")(lambda s: s.name)
builtin("INTERN")(lambda name, package=NIL: MV((intern(name), NIL)))
builtin("MAKE-SYMBOL")(lambda name: Uninterned(name))
builtin("MAKE-KEYWORD")(lambda name: keyword(designator(name)))


@builtin("GENSYM", interp=True)
def gensym(interp, prefix="G"):
    if type(prefix) is int:
        return Uninterned(f"G{prefix}")
    sym = Uninterned(f"{prefix}{interp.gensym_counter}")
    interp.gensym_counter += 1
    return sym


@builtin("GENTEMP", interp=True)
def gentemp(interp, prefix="T"):
    sym = intern(f"{prefix}{interp.gensym_counter}")
    interp.gensym_counter += 1
    return sym


@builtin("SYMBOL-PACKAGE")
def symbol_package(sym):
    if not sym.interned:
        return NIL
    return keyword("KEYWORD") if sym.is_keyword else keyword("COMMON-LISP-USER")
