"""Symbols: a symbol's global value (symbol-value, set, boundp, makunbound), its
property list (get, symbol-plist, remprop), and names, interning and gensym."""

from __future__ import annotations

from sexpgpu.lisp.registry import builtin
from sexpgpu.lisp.strings import designator
from sexpgpu.lisp.types import (
    MV,
    NIL,
    Symbol,
    Uninterned,
    boolean,
    find_interned,
    intern,
    keyword,
    lisp_list,
)

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


_GENSYM_COUNTER = intern("*GENSYM-COUNTER*")


def _next_count(interp) -> int:
    """*gensym-counter*'s value, incremented: programs may bind or set it, as in CL."""
    count = interp.globals.get(_GENSYM_COUNTER)
    if type(count) is not int or count < 0:
        raise TypeError("lisp: *gensym-counter* must be a non-negative integer")
    interp.globals[_GENSYM_COUNTER] = count + 1
    return count


@builtin("COPY-SYMBOL", interp=True)
def copy_symbol(interp, sym, copy_props=NIL):
    """A fresh uninterned symbol of the same name (with copies of the value, function and
    property list when copy-props is true)."""
    new = Uninterned(sym.name)
    if copy_props is not NIL:
        for table in (interp.globals, interp.functions):
            if sym in table:
                table[new] = table[sym]
        _plist(interp, new).update(_plist(interp, sym))
    return new


@builtin("FIND-SYMBOL", interp=True)
def find_symbol(interp, name, package=NIL):
    """(values symbol status): :EXTERNAL for a keyword, :INHERITED for a name the language
    defines, :INTERNAL for one the program interned; NIL NIL when there is none."""
    is_keyword = designator(package) in ("KEYWORD", "") if package is not NIL else False
    sym = find_interned(designator(name), is_keyword)
    if sym is None:
        return MV((NIL, NIL))
    if is_keyword:
        return MV((sym, keyword("EXTERNAL")))
    standard = sym in interp.constants or sym in interp.special_forms \
        or sym in interp.standard_names or type(interp.functions.get(sym)).__name__ == "Builtin"
    return MV((sym, keyword("INHERITED" if standard else "INTERNAL")))


@builtin("GENSYM", interp=True)
def gensym(interp, prefix="G"):
    if type(prefix) is int:
        return Uninterned(f"G{prefix}")
    return Uninterned(f"{prefix}{_next_count(interp)}")


@builtin("GENTEMP", interp=True)
def gentemp(interp, prefix="T"):
    return intern(f"{prefix}{_next_count(interp)}")


@builtin("SYMBOL-PACKAGE")
def symbol_package(sym):
    if not sym.interned:
        return NIL
    return keyword("KEYWORD") if sym.is_keyword else keyword("COMMON-LISP-USER")
