"""Hash tables keyed by eq/eql/equal/equalp, iterating in insertion order like SBCL."""

from __future__ import annotations

from typing import Any

from sexpgpu.lisp import equality
from sexpgpu.lisp.closures import Env, split_body
from sexpgpu.lisp.forms import args_of, eval_body, syntax_error
from sexpgpu.lisp.registry import Builtin, builtin, keywords, special
from sexpgpu.lisp.types import MV, NIL, Cons, Symbol, T, boolean, intern, lisp_list, to_py

_KEYS = {"EQ": equality.eql_key, "EQL": equality.eql_key, "EQUAL": equality.equal_key,
         "EQUALP": equality.equalp_key}


class HashTable:
    __slots__ = ("test", "keyfn", "table")

    def __init__(self, test: str = "EQL"):
        self.test = test
        self.keyfn = _KEYS[test]
        self.table: dict = {}  # hashing key -> (original key, value)

    def get(self, key: Any, default: Any = NIL) -> tuple[Any, bool]:
        entry = self.table.get(self.keyfn(key))
        if entry is None:
            return default, False
        return entry[1], True

    def put(self, key: Any, value: Any) -> Any:
        self.table[self.keyfn(key)] = (key, value)
        return value

    def remove(self, key: Any) -> bool:
        return self.table.pop(self.keyfn(key), None) is not None

    def equalp_to(self, other: HashTable, test) -> bool:
        if self.test != other.test or len(self.table) != len(other.table):
            return False
        for key, value in self.table.values():
            found, ok = other.get(key)
            if not ok or not test(value, found):
                return False
        return True

    def lisp_repr(self, escape: bool) -> str:
        return f"#<HASH-TABLE :TEST {self.test} :COUNT {len(self.table)} {{{id(self):X}}}>"


@builtin("MAKE-HASH-TABLE")
def make_hash_table(*options):
    opts = keywords(options, ("TEST", "SIZE", "REHASH-SIZE", "REHASH-THRESHOLD"))
    test = opts.get("TEST", NIL)
    name = "EQL" if test is NIL else getattr(test, "name", "EQL")
    if name not in _KEYS:
        raise ValueError("lisp: :test must be eq, eql, equal or equalp")
    return HashTable(name)


@builtin("GETHASH")
def gethash(key, table, default=NIL):
    value, found = table.get(key, default)
    return MV((value, T if found else NIL))


@builtin("REMHASH")
def remhash(key, table):
    return boolean(table.remove(key))


@builtin("CLRHASH")
def clrhash(table):
    table.table.clear()
    return table


@builtin("HASH-TABLE-COUNT")
def hash_table_count(table):
    return len(table.table)


@builtin("HASH-TABLE-TEST")
def hash_table_test(table):
    return intern(table.test)


builtin("HASH-TABLE-P")(lambda x: boolean(type(x) is HashTable))


@builtin("MAPHASH", interp=True)
def maphash(interp, fn, table):
    for key, value in list(table.table.values()):
        interp.call1(fn, key, value)
    return NIL


@builtin("HASH-TABLE-KEYS")
def hash_table_keys(table):
    return lisp_list(k for k, _ in table.table.values())


@builtin("HASH-TABLE-VALUES")
def hash_table_values(table):
    return lisp_list(v for _, v in table.table.values())


@builtin("HASH-TABLE-ALIST")
def hash_table_alist(table):
    return lisp_list(Cons(k, v) for k, v in table.table.values())


@special("WITH-HASH-TABLE-ITERATOR")
def sf_with_hash_table_iterator(interp, form, env):
    """(with-hash-table-iterator (name table) body...): in body, (name) returns T, a key
    and its value for each entry in turn, then NIL"""
    items = args_of(form, 1, None, "(with-hash-table-iterator (name table) body...)")
    spec = to_py(items[0]) if type(items[0]) is Cons else []
    if len(spec) != 2 or type(spec[0]) is not Symbol:
        raise syntax_error(form, "malformed with-hash-table-iterator",
                           "write (with-hash-table-iterator (next table) body...)")
    table = interp.eval1(spec[1], env)
    if type(table) is not HashTable:
        raise TypeError("lisp: with-hash-table-iterator needs a hash table")
    entries = list(table.table.values())

    def step():
        if not entries:
            return NIL
        key, value = entries.pop(0)
        return MV((T, key, value))

    body, _ = split_body(form.cdr.cdr, False)
    return eval_body(interp, body, Env({spec[0].fkey: Builtin(spec[0].name, step)}, env,
                                         functions=True))
