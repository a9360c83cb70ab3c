"""List builtins: conses, accessors, association and property lists, mapping."""

from __future__ import annotations

from typing import Any

from sexpgpu.lisp.equality import eql
from sexpgpu.lisp.registry import builtin, keywords
from sexpgpu.lisp.types import (
    MV,
    NIL,
    Cons,
    T,
    boolean,
    cars,
    cars_and_tail,
    intern,
    is_circular,
    lisp_list,
    proper_items,
    to_py,
)


def _list(x: Any) -> Any:
    if x is not NIL and type(x) is not Cons:
        raise TypeError("not a list")
    return x


@builtin("CONS")
def cons(a, b):
    return Cons(a, b)


@builtin("CAR", "FIRST")
def car(x):
    return _list(x).car if x is not NIL else NIL


@builtin("CDR", "REST")
def cdr(x):
    return _list(x).cdr if x is not NIL else NIL


def _cxr(path: str):
    def accessor(x):
        for letter in reversed(path):
            if x is NIL:
                return NIL
            x = _list(x).car if letter == "A" else _list(x).cdr
        return x

    return accessor


for _n in (2, 3, 4):  # every c[ad]r of two to four letters
    for _bits in range(2 ** _n):
        _path = "".join("D" if _bits >> _k & 1 else "A" for _k in range(_n))
        builtin(f"C{_path}R")(_cxr(_path))

for _i, _name in enumerate(["SECOND", "THIRD", "FOURTH", "FIFTH", "SIXTH", "SEVENTH", "EIGHTH",
                            "NINTH", "TENTH"], start=1):
    builtin(_name)(_cxr("A" + "D" * _i))


@builtin("LIST")
def make_list_of(*items):
    return lisp_list(items)


@builtin("%QQ-LIST")
def qq_list(*items):
    return lisp_list(items)


@builtin("%QQ-UNQUOTE-EACH")
def qq_unquote_each(items):
    unquote = intern("UNQUOTE")
    return lisp_list(lisp_list([unquote, item]) for item in to_py(items))


@builtin("LIST*")
def list_star(*items):
    return lisp_list(items[:-1], items[-1])


@builtin("MAKE-LIST", interp=True)
def make_list(interp, n, *options):
    opts = keywords(options, ("INITIAL-ELEMENT",))
    if type(n) is not int or n < 0:
        raise TypeError("make-list size")
    interp.note_alloc(n)
    value = opts.get("INITIAL-ELEMENT", NIL)
    result = NIL
    for _ in range(n):
        result = Cons(value, result)
    return result


@builtin("APPEND", "%QQ-APPEND")
def append(*lists):
    if not lists:
        return NIL
    result = lists[-1]
    for lst in reversed(lists[:-1]):
        items = proper_items(_list(lst))
        for item in reversed(items):
            result = Cons(item, result)
    return result


@builtin("NCONC")
def nconc(*lists):
    result = NIL
    last_cell = None
    for lst in lists:
        if lst is NIL:
            continue
        if last_cell is None:
            result = lst
        else:
            last_cell.cdr = lst
        if type(lst) is Cons:
            last_cell = lst
            while type(last_cell.cdr) is Cons:
                last_cell = last_cell.cdr
    return result


@builtin("REVAPPEND", "NRECONC")
def revappend(lst, tail):
    for item in to_py(lst):
        tail = Cons(item, tail)
    return tail


@builtin("NTH")
def nth(n, lst):
    for _ in range(n):
        if lst is NIL:
            return NIL
        lst = lst.cdr
    return lst.car if lst is not NIL else NIL


@builtin("NTHCDR")
def nthcdr(n, lst):
    for _ in range(n):
        if lst is NIL:
            return NIL
        lst = lst.cdr
    return lst


@builtin("LAST")
def last(lst, n=1):
    cells = []
    node = lst
    while type(node) is Cons:
        cells.append(node)
        node = node.cdr
    if n == 0:
        return node
    if not cells:
        return lst
    return cells[max(0, len(cells) - n)]


def _check_butlast(lst: Any, n: Any) -> None:
    """butlast and nbutlast take a list (a dotted one too) and a non-negative integer."""
    if lst is not NIL and type(lst) is not Cons:
        raise TypeError("lisp: not a list")
    if type(n) is not int or n < 0:
        raise TypeError("lisp: the count must be a non-negative integer")


@builtin("BUTLAST")
def butlast(lst, n=1):
    _check_butlast(lst, n)
    items = cars(lst)
    return lisp_list(items[: max(0, len(items) - n)])


@builtin("NBUTLAST")
def nbutlast(lst, n=1):
    """BUTLAST that cuts the list itself (the cdr of its last kept cons becomes NIL)."""
    _check_butlast(lst, n)
    keep = len(cars(lst)) - n
    if keep <= 0:
        return NIL
    node = lst
    for _ in range(keep - 1):
        node = node.cdr
    node.cdr = NIL
    return lst


@builtin("LIST-LENGTH")
def list_length(lst):
    """The length of a proper list, NIL for a circular one; a dotted list (or a
    non-list) is a type-error."""
    if is_circular(lst):
        return NIL
    items, tail = cars_and_tail(lst)
    if tail is not NIL:
        raise TypeError("lisp: not a proper list")
    return len(items)


@builtin("COPY-LIST")
def copy_list(lst):
    return lisp_list(*cars_and_tail(lst))


@builtin("COPY-TREE")
def copy_tree(x):
    if type(x) is Cons:
        return Cons(copy_tree(x.car), copy_tree(x.cdr))
    return x


@builtin("COPY-ALIST")
def copy_alist(lst):
    return lisp_list([Cons(p.car, p.cdr) if type(p) is Cons else p for p in to_py(lst)])


builtin("NULL", "NOT")(lambda x: boolean(x is NIL))
builtin("ENDP")(lambda x: boolean(_list(x) is NIL))
builtin("LISTP")(lambda x: boolean(x is NIL or type(x) is Cons))
builtin("CONSP")(lambda x: boolean(type(x) is Cons))
builtin("ATOM")(lambda x: boolean(type(x) is not Cons))


@builtin("RPLACA")
def rplaca(cell, value):
    cell.car = value
    return cell


@builtin("RPLACD")
def rplacd(cell, value):
    cell.cdr = value
    return cell


@builtin("ACONS")
def acons(key, value, alist):
    return Cons(Cons(key, value), alist)


@builtin("PAIRLIS")
def pairlis(keys, values, alist=NIL):
    for k, v in zip(to_py(keys), to_py(values)):  # SBCL pushes, so the order reverses
        alist = Cons(Cons(k, v), alist)
    return alist


def getf(plist: Any, key: Any, default: Any = NIL) -> Any:
    node = plist
    while type(node) is Cons and type(node.cdr) is Cons:
        if node.car is key:
            return node.cdr.car
        node = node.cdr.cdr
    return default


def putf(plist: Any, key: Any, value: Any) -> Any:
    node = plist
    while type(node) is Cons and type(node.cdr) is Cons:
        if node.car is key:
            node.cdr.car = value
            return plist
        node = node.cdr.cdr
    return Cons(key, Cons(value, plist))


builtin("GETF")(getf)


@builtin("GET-PROPERTIES")
def get_properties(plist, indicators):
    wanted = to_py(indicators)
    node = plist
    while type(node) is Cons and type(node.cdr) is Cons:
        if any(node.car is w for w in wanted):
            return MV((node.car, node.cdr.car, node))
        node = node.cdr.cdr
    return MV((NIL, NIL, NIL))


@builtin("TAILP")
def tailp(obj, lst):
    node = lst
    while type(node) is Cons:
        if node is obj:
            return T
        node = node.cdr
    return boolean(eql(node, obj))


@builtin("LDIFF")
def ldiff(lst, obj):
    """The conses of lst before the tail obj; a dotted list keeps its final atom unless
    that atom is obj."""
    if lst is not NIL and type(lst) is not Cons:
        raise TypeError("lisp: not a list")
    items = []
    node = lst
    while type(node) is Cons and node is not obj:
        items.append(node.car)
        node = node.cdr
    return lisp_list(items, NIL if type(node) is Cons or eql(node, obj) else node)


# ------------------------------------------------------------------ mapping


def _lists_args(lists: tuple) -> list[list]:
    return [proper_items(_list(lst)) for lst in lists]


def _tails(lst: Any) -> list:
    out = []
    while type(lst) is Cons:
        out.append(lst)
        lst = lst.cdr
    return out


def _call_across(interp, fn, columns: list[list]) -> list:
    """fn called on the i-th entry of every column, for each i the shortest column has."""
    n = min(len(c) for c in columns)
    call1 = interp.call1
    return [call1(fn, *(c[i] for c in columns)) for i in range(n)]


@builtin("MAPCAR", interp=True)
def mapcar(interp, fn, first, *more):
    return lisp_list(_call_across(interp, fn, _lists_args((first, *more))))


@builtin("MAPC", interp=True)
def mapc(interp, fn, first, *more):
    _call_across(interp, fn, _lists_args((first, *more)))
    return first


@builtin("MAPCAN", interp=True)
def mapcan(interp, fn, first, *more):
    return nconc(*_call_across(interp, fn, _lists_args((first, *more))))


@builtin("MAPLIST", interp=True)
def maplist(interp, fn, first, *more):
    return lisp_list(_call_across(interp, fn, [_tails(lst) for lst in (first, *more)]))


@builtin("MAPL", interp=True)
def mapl(interp, fn, first, *more):
    _call_across(interp, fn, [_tails(lst) for lst in (first, *more)])
    return first


@builtin("MAPCON", interp=True)
def mapcon(interp, fn, first, *more):
    return nconc(*_call_across(interp, fn, [_tails(lst) for lst in (first, *more)]))
