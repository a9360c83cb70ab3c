"""Trees of conses: the subst and sublis families (copying and destructive, with :key
:test :test-not and the -if / -if-not predicates) and tree-equal."""

from __future__ import annotations

from typing import Any

from sexpgpu.lisp.registry import builtin, keywords
from sexpgpu.lisp.sequences import _matches, key_fn, test_fn
from sexpgpu.lisp.types import NIL, Cons, boolean, check_not_circular, to_py

_KEYS = ("KEY", "TEST", "TEST-NOT")


def _substitute(tree: Any, replacement, destructive: bool) -> Any:
    """The tree with every subtree s for which replacement(s) is not None replaced by it;
    a destructive walk changes the conses in place (what nsubst and nsublis return)."""

    def walk(x: Any) -> Any:
        new = replacement(x)
        if new is not None:
            return new[0]
        if type(x) is not Cons:
            return x
        if not destructive:
            return Cons(walk(x.car), walk(x.cdr))
        node, cells = x, 0
        while True:  # down the cdrs iteratively, so long lists do not recurse deeply
            node.car = walk(node.car)
            tail = node.cdr
            new = replacement(tail)
            if new is not None:
                node.cdr = new[0]
                return x
            if type(tail) is not Cons:
                return x
            node, cells = tail, cells + 1
            check_not_circular(x, cells)

    return walk(tree)


def _def_subst(name: str, mode: str):
    destructive = name.startswith("N")

    def fn(interp, new, arg, tree, *options):
        opts = keywords(options, _KEYS if mode == "item" else ("KEY",))
        check = _matches(interp, opts, item=arg) if mode == "item" else \
            _matches(interp, opts, pred=arg, negate=(mode == "not"))
        return _substitute(tree, lambda x: (new,) if check(x) else None, destructive)

    builtin(name, interp=True)(fn)


for _prefix in ("SUBST", "NSUBST"):
    for _suffix, _mode in (("", "item"), ("-IF", "if"), ("-IF-NOT", "not")):
        _def_subst(_prefix + _suffix, _mode)


def _def_sublis(name: str):
    destructive = name.startswith("N")

    def fn(interp, alist, tree, *options):
        opts = keywords(options, _KEYS)
        test, key = test_fn(interp, opts), key_fn(interp, opts)
        pairs = [p for p in to_py(alist) if type(p) is Cons]

        def replacement(x):
            k = key(x) if key else x
            for pair in pairs:
                if test(pair.car, k):
                    return (pair.cdr,)
            return None

        return _substitute(tree, replacement, destructive)

    builtin(name, interp=True)(fn)


_def_sublis("SUBLIS")
_def_sublis("NSUBLIS")


@builtin("TREE-EQUAL", interp=True)
def tree_equal(interp, a, b, *options):
    """Same shape, and the atoms at the leaves pass :test (default eql)."""
    test = test_fn(interp, keywords(options, ("TEST", "TEST-NOT")))
    todo = [(a, b)]
    while todo:
        x, y = todo.pop()
        if type(x) is Cons and type(y) is Cons:
            todo.append((x.cdr, y.cdr))
            todo.append((x.car, y.car))
        elif type(x) is Cons or type(y) is Cons or not test(x, y):
            return NIL
    return boolean(True)
