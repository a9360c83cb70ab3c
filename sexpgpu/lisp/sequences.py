"""Sequence builtins over lists, vectors and strings, with :key :test :start :end :from-end."""

from __future__ import annotations

import functools
from typing import Any

from sexpgpu.lisp import equality
from sexpgpu.lisp.equality import eql
from sexpgpu.lisp.forms import as_function
from sexpgpu.lisp.printer import prin1_to_string
from sexpgpu.lisp.registry import builtin, keywords
from sexpgpu.lisp.types import (
    MV,
    NIL,
    NUMBER_TYPES,
    Char,
    Cons,
    Symbol,
    T,
    boolean,
    check_not_circular,
    circular_so_far,
    lisp_list,
    proper_items,
    single,
    to_py,
)


def key_fn(interp, opts: dict):
    key = opts.get("KEY", NIL)
    if key is NIL:
        return None
    return lambda x: interp.call1(key, x)


def test_fn(interp, opts: dict):
    """A Python predicate (item, element) from :test / :test-not (default eql)."""
    test = opts.get("TEST", NIL)
    test_not = opts.get("TEST-NOT", NIL)
    if test is not NIL:
        builtin_fn = _fast_test(interp, test)
        if builtin_fn is not None:
            return builtin_fn
        return lambda a, b: interp.call1(test, a, b) is not NIL
    if test_not is not NIL:
        return lambda a, b: interp.call1(test_not, a, b) is NIL
    return eql


def _fast_test(interp, fn):
    name = getattr(fn, "name", None)
    if type(fn).__name__ != "Builtin":
        return None
    return {"EQ": equality.eq, "EQL": equality.eql, "EQUAL": equality.equal,
            "EQUALP": equality.equalp}.get(name)


def items_of(seq: Any) -> list:
    if seq is NIL:
        return []
    t = type(seq)
    if t is Cons:
        return proper_items(seq)
    if t is list:
        return list(seq)
    if t is str:
        return [Char(c) for c in seq]
    raise TypeError("not a sequence")


def like(seq: Any, items: list) -> Any:
    """A sequence of the same kind as `seq` holding `items`."""
    t = type(seq)
    if t is str:
        return "".join(c.ch for c in items)
    if t is list:
        return items
    return lisp_list(items)


def _bounds(seq_len: int, opts: dict) -> tuple[int, int]:
    start = opts.get("START", 0)
    end = opts.get("END", NIL)
    end = seq_len if end is NIL else end
    if not (0 <= start <= end <= seq_len):
        raise IndexError("bad :start/:end")
    return start, end


_SEARCH_KEYS = ("KEY", "TEST", "TEST-NOT", "START", "END", "FROM-END", "COUNT")


def _matches(interp, opts: dict, item: Any = None, pred: Any = None, negate: bool = False):
    key = key_fn(interp, opts)
    if pred is not None:
        def check(x):
            value = key(x) if key else x
            return (interp.call1(pred, value) is NIL) if negate else \
                (interp.call1(pred, value) is not NIL)
        return check
    test = test_fn(interp, opts)
    return lambda x: test(item, key(x) if key else x)


def _indices(items: list, opts: dict) -> range:
    start, end = _bounds(len(items), opts)
    if opts.get("FROM-END", NIL) is not NIL:
        return range(end - 1, start - 1, -1)
    return range(start, end)


def list_head(lst: Any, count: int) -> list:
    """The first `count` elements of a list (fewer if it is shorter); a dotted tail met
    before them is a TypeError, one after them is never looked at (as in SBCL)."""
    out = []
    while len(out) < count and type(lst) is Cons:
        out.append(lst.car)
        lst = lst.cdr
    if len(out) < count and lst is not NIL:
        raise TypeError("lisp: not a proper list")
    return out


def _find(interp, seq, opts, check):
    if type(seq) is Cons and opts.get("FROM-END", NIL) is NIL:
        return _find_in_list(seq, opts, check)
    items = items_of(seq)
    for i in _indices(items, opts):
        if check(items[i]):
            return items[i], i
    return NIL, NIL


def _find_in_list(lst: Cons, opts: dict, check) -> tuple[Any, Any]:
    """find/position from the front of a list, stopping at the first match like SBCL
    (so a dotted tail after the match is never reached)."""
    start, end = opts.get("START", 0), opts.get("END", NIL)
    items = list_head(lst, start)
    if len(items) < start:
        raise IndexError("bad :start/:end")
    node, i = lst, 0
    while i < start:
        node, i = node.cdr, i + 1
    while type(node) is Cons and (end is NIL or i < end):
        if check(node.car):
            return node.car, i
        node, i = node.cdr, i + 1
    if node is not NIL and type(node) is not Cons:
        raise TypeError("lisp: not a proper list")
    if end is not NIL and i < end:
        raise IndexError("bad :start/:end")
    return NIL, NIL


# the three variants of a sequence function: FOO (an item), FOO-IF, FOO-IF-NOT (a predicate)
_VARIANTS = (("", "item"), ("-IF", "if"), ("-IF-NOT", "not"))


def _mode_check(interp, opts: dict, mode: str, arg: Any):
    """The element test of one variant: arg is the item, or the predicate (negated for -IF-NOT)."""
    if mode == "item":
        return _matches(interp, opts, item=arg)
    return _matches(interp, opts, pred=arg, negate=(mode == "not"))


def _def_search(name: str, what: str, mode: str):
    def fn(interp, arg, seq, *options):
        opts = keywords(options, _SEARCH_KEYS)
        check = _mode_check(interp, opts, mode, arg)
        if what == "count":
            items = items_of(seq)
            return sum(1 for i in _indices(items, opts) if check(items[i]))
        found, index = _find(interp, seq, opts, check)
        return found if what == "find" else index

    builtin(name, interp=True)(fn)


for _what in ("find", "position", "count"):
    for _suffix, _mode in _VARIANTS:
        _def_search(_what.upper() + _suffix, _what, _mode)


def _def_remove(name: str, mode: str):
    def fn(interp, arg, seq, *options):
        opts = keywords(options, _SEARCH_KEYS)
        check = _mode_check(interp, opts, mode, arg)
        items = items_of(seq)
        limit = _count_limit(opts, len(items))
        drop = set()
        for i in _indices(items, opts):
            if len(drop) >= limit:
                break
            if check(items[i]):
                drop.add(i)
        return like(seq, [x for i, x in enumerate(items) if i not in drop])

    builtin(name, interp=True)(fn)


for _prefix in ("REMOVE", "DELETE"):
    for _suffix, _mode in _VARIANTS:
        _def_remove(_prefix + _suffix, _mode)


def _count_limit(opts: dict, default: int) -> int:
    """The :count of a remove or substitute: NIL means no limit, a negative one means 0."""
    count = opts.get("COUNT", NIL)
    return default if count is NIL else max(0, count)


def _def_substitute(name: str, mode: str):
    destructive = name.startswith("N")

    def fn(interp, new, arg, seq, *options):
        opts = keywords(options, _SEARCH_KEYS)
        check = _mode_check(interp, opts, mode, arg)
        items = items_of(seq)
        left = _count_limit(opts, len(items))
        changed = []
        for i in _indices(items, opts):
            if left <= 0:
                break
            if check(items[i]):
                items[i] = new
                changed.append(i)
                left -= 1
        if not destructive or type(seq) is str:
            return like(seq, items)
        if type(seq) is list:
            seq[:] = items
            return seq
        node, index = seq, 0
        for i in sorted(changed):
            while index < i:
                node, index = node.cdr, index + 1
            node.car = new
        return seq

    builtin(name, interp=True)(fn)


for _prefix in ("SUBSTITUTE", "NSUBSTITUTE"):
    for _suffix, _mode in _VARIANTS:
        _def_substitute(_prefix + _suffix, _mode)


def _first_tail(check, lst: Any) -> Any:
    """The tail of lst whose car passes check, or NIL."""
    node = lst
    while type(node) is Cons:
        if check(node.car):
            return node
        node = node.cdr
    if node is not NIL:  # ran off a dotted list (or was given no list): a type-error
        raise TypeError("lisp: not a proper list")
    return NIL


def member_of(interp, item: Any, lst: Any, options: list | tuple) -> Any:
    opts = keywords(tuple(options), ("KEY", "TEST", "TEST-NOT"))
    check = _matches(interp, opts, item=item)
    return _first_tail(check, lst)


@builtin("MEMBER", interp=True)
def member(interp, item, lst, *options):
    return member_of(interp, item, lst, options)


@builtin("MEMBER-IF", interp=True)
def member_if(interp, pred, lst, *options):
    check = _matches(interp, keywords(options, ("KEY",)), pred=pred)
    return _first_tail(check, lst)


@builtin("MEMBER-IF-NOT", interp=True)
def member_if_not(interp, pred, lst, *options):
    check = _matches(interp, keywords(options, ("KEY",)), pred=pred, negate=True)
    return _first_tail(check, lst)


def _assoc(interp, check, alist, cdr: bool):
    for pair in proper_items(alist):
        if type(pair) is Cons and check(pair.cdr if cdr else pair.car):
            return pair
    return NIL


@builtin("ASSOC", interp=True)
def assoc(interp, item, alist, *options):
    return _assoc(interp, _matches(interp, keywords(options, ("KEY", "TEST", "TEST-NOT")),
                                   item=item), alist, False)


@builtin("RASSOC", interp=True)
def rassoc(interp, item, alist, *options):
    return _assoc(interp, _matches(interp, keywords(options, ("KEY", "TEST", "TEST-NOT")),
                                   item=item), alist, True)


@builtin("ASSOC-IF", interp=True)
def assoc_if(interp, pred, alist, *options):
    return _assoc(interp, _matches(interp, keywords(options, ("KEY",)), pred=pred), alist, False)


@builtin("RASSOC-IF", interp=True)
def rassoc_if(interp, pred, alist, *options):
    return _assoc(interp, _matches(interp, keywords(options, ("KEY",)), pred=pred), alist, True)


@builtin("ASSOC-IF-NOT", interp=True)
def assoc_if_not(interp, pred, alist, *options):
    check = _matches(interp, keywords(options, ("KEY",)), pred=pred, negate=True)
    return _assoc(interp, check, alist, False)


@builtin("RASSOC-IF-NOT", interp=True)
def rassoc_if_not(interp, pred, alist, *options):
    check = _matches(interp, keywords(options, ("KEY",)), pred=pred, negate=True)
    return _assoc(interp, check, alist, True)


@builtin("LENGTH")
def length(seq):
    if type(seq) in (str, list):
        return len(seq)
    if seq is NIL:
        return 0
    if type(seq) is not Cons:
        raise TypeError("length")
    n = 0
    start = seq
    while type(seq) is Cons:
        n += 1
        seq = seq.cdr
        if circular_so_far(start, n):
            raise ValueError("lisp: circular list has no length")
    if seq is not NIL:
        raise TypeError("lisp: not a proper list")
    return n


@builtin("ELT")
def elt(seq, index):
    if type(seq) is str:
        return Char(seq[index]) if index >= 0 else _oob()
    if type(seq) is list:
        return seq[index] if index >= 0 else _oob()
    if index < 0:
        _oob()
    items = list_head(seq, index + 1) if type(seq) is Cons else items_of(seq)
    return items[index] if index < len(items) else _oob()


def _oob():
    raise IndexError("index out of bounds")


@builtin("SUBSEQ")
def subseq(seq, start, end=NIL):
    if type(seq) is Cons and end is not NIL:
        items = list_head(seq, end)
        if not 0 <= start <= end <= len(items):
            raise IndexError("subseq bounds")
        return lisp_list(items[start:end])
    n = length(seq)
    end = n if end is NIL else end
    if not 0 <= start <= end <= n:
        raise IndexError("subseq bounds")
    if type(seq) in (str, list):
        return seq[start:end]
    return lisp_list(items_of(seq)[start:end])


@builtin("COPY-SEQ")
def copy_seq(seq):
    return like(seq, items_of(seq))


@builtin("NREVERSE")
def nreverse(seq):
    """REVERSE that reverses a vector in place (strings are immutable: a new one)."""
    if type(seq) is list:
        seq.reverse()
        return seq
    return reverse(seq)


@builtin("REVERSE")
def reverse(seq):
    if type(seq) is str:
        return seq[::-1]
    if type(seq) is list:
        return seq[::-1]
    result = NIL
    node = seq
    cells = 0
    while type(node) is Cons:
        result = Cons(node.car, result)
        node = node.cdr
        cells += 1
        check_not_circular(seq, cells)
    if node is not NIL:
        raise TypeError("lisp: not a proper list")
    return result


@builtin("REDUCE", interp=True)
def reduce_(interp, fn, seq, *options):
    opts = keywords(options, ("KEY", "FROM-END", "START", "END", "INITIAL-VALUE"))
    items = items_of(seq)
    start, end = _bounds(len(items), opts)
    items = items[start:end]
    key = key_fn(interp, opts)
    if key:
        items = [key(x) for x in items]
    from_end = opts.get("FROM-END", NIL) is not NIL
    if "INITIAL-VALUE" in opts:
        items = items + [opts["INITIAL-VALUE"]] if from_end else [opts["INITIAL-VALUE"]] + items
    if not items:
        return interp.call1(fn)
    if from_end:
        acc = items[-1]
        for x in reversed(items[:-1]):
            acc = interp.call1(fn, x, acc)
        return acc
    acc = items[0]
    for x in items[1:]:
        acc = interp.call1(fn, acc, x)
    return acc


def _sort(interp, seq, pred, *options):
    opts = keywords(options, ("KEY",))
    key = key_fn(interp, opts)
    items = items_of(seq)

    def less(a, b):
        return interp.call1(pred, key(a) if key else a, key(b) if key else b) is not NIL

    def compare(a, b):
        if less(a, b):
            return -1
        if less(b, a):
            return 1
        return 0

    result = sorted(items, key=functools.cmp_to_key(compare))
    if type(seq) is list:
        seq[:] = result
        return seq
    if type(seq) is Cons:
        node = seq
        for item in result:  # destructive, like SBCL: the original conses hold the result
            node.car = item
            node = node.cdr
        return seq
    return like(seq, result)


builtin("SORT", "STABLE-SORT", interp=True)(_sort)


@builtin("MERGE", interp=True)
def merge(interp, spec, a, b, pred, *options):
    opts = keywords(options, ("KEY",))
    key = key_fn(interp, opts)
    xs, ys = items_of(a), items_of(b)
    out = []
    i = j = 0
    while i < len(xs) and j < len(ys):
        x, y = xs[i], ys[j]
        # take from the second only when it is strictly less: merge is stable
        if interp.call1(pred, key(y) if key else y, key(x) if key else x) is not NIL:
            out.append(y)
            j += 1
        else:
            out.append(x)
            i += 1
    out.extend(xs[i:])
    out.extend(ys[j:])
    return build(_result_kind(spec), out)


def _subrange(items: list, opts: dict, start: str, end: str) -> tuple[int, int]:
    lo = opts.get(start, 0)
    hi = opts.get(end, NIL)
    hi = len(items) if hi is NIL else hi
    if not (0 <= lo <= hi <= len(items)):
        raise IndexError(f"bad :{start.lower()}/:{end.lower()}")
    return lo, hi


_TWO_SEQ_KEYS = ("TEST", "TEST-NOT", "KEY", "FROM-END", "START1", "END1", "START2", "END2")


@builtin("SEARCH", interp=True)
def search(interp, needle, haystack, *options):
    opts = keywords(options, _TWO_SEQ_KEYS)
    test = test_fn(interp, opts)
    key = key_fn(interp, opts)
    a = items_of(needle)
    b = items_of(haystack)
    s1, e1 = _subrange(a, opts, "START1", "END1")
    s2, e2 = _subrange(b, opts, "START2", "END2")
    a = a[s1:e1]
    positions = range(s2, e2 - len(a) + 1)
    if opts.get("FROM-END", NIL) is not NIL:
        positions = reversed(positions)
    for i in positions:
        if all(test(key(x) if key else x, key(b[i + j]) if key else b[i + j])
               for j, x in enumerate(a)):
            return i
    return NIL


@builtin("MISMATCH", interp=True)
def mismatch(interp, a, b, *options):
    opts = keywords(options, _TWO_SEQ_KEYS)
    test = test_fn(interp, opts)
    key = key_fn(interp, opts)
    x, y = items_of(a), items_of(b)
    s1, e1 = _subrange(x, opts, "START1", "END1")
    s2, e2 = _subrange(y, opts, "START2", "END2")
    n = min(e1 - s1, e2 - s2)

    def same(u, v):
        return test(key(u) if key else u, key(v) if key else v)

    if opts.get("FROM-END", NIL) is not NIL:
        for k in range(1, n + 1):
            if not same(x[e1 - k], y[e2 - k]):
                return e1 - k + 1
        return NIL if e1 - s1 == e2 - s2 else e1 - n
    for k in range(n):
        if not same(x[s1 + k], y[s2 + k]):
            return s1 + k
    return NIL if e1 - s1 == e2 - s2 else s1 + n


@builtin("FILL")
def fill(seq, value, *options):
    opts = keywords(options, ("START", "END"))
    if type(seq) is list:
        start, end = _bounds(len(seq), opts)
        for i in range(start, end):
            seq[i] = value
        return seq
    node = seq
    start, end = _bounds(length(seq), opts)
    for i in range(end):
        if i >= start:
            node.car = value
        node = node.cdr
    return seq


@builtin("REPLACE")
def replace(target, source, *options):
    opts = keywords(options, ("START1", "END1", "START2", "END2"))
    src = items_of(source)[opts.get("START2", 0):]
    start = opts.get("START1", 0)
    if type(target) is list:
        for i, x in enumerate(src):
            if start + i >= len(target):
                break
            target[start + i] = x
        return target
    node = nthcdr_(start, target)
    for x in src:
        if type(node) is not Cons:
            break
        node.car = x
        node = node.cdr
    return target


def nthcdr_(n, lst):
    for _ in range(n):
        lst = lst.cdr
    return lst


def _result_kind(spec: Any) -> str:
    name = spec.name if isinstance(spec, Symbol) else (
        spec.car.name if type(spec) is Cons else "")
    if name in ("LIST", "CONS", "NULL"):
        return "list"
    if name in ("STRING", "SIMPLE-STRING", "BASE-STRING"):
        return "string"
    if name in ("VECTOR", "SIMPLE-VECTOR", "ARRAY", "SIMPLE-ARRAY"):
        if type(spec) is Cons and len(to_py(spec)) > 1 and \
                getattr(to_py(spec)[1], "name", "") in ("CHARACTER", "BASE-CHAR"):
            return "string"
        return "vector"
    raise ValueError(f"lisp: unknown sequence type {prin1_to_string(spec)}")


def build(kind: str, items: list) -> Any:
    if kind == "list":
        return lisp_list(items)
    if kind == "string":
        if not all(type(c) is Char for c in items):
            raise TypeError("string of non-characters")
        return "".join(c.ch for c in items)
    return items


@builtin("MAKE-SEQUENCE", interp=True)
def make_sequence(interp, spec, size, *options):
    """A list, vector or string of `size` copies of :initial-element (SBCL's default: 0,
    or the character of code 0 in a string)."""
    opts = keywords(options, ("INITIAL-ELEMENT",))
    if type(size) is not int or size < 0:
        raise TypeError("lisp: the size must be a non-negative integer")
    interp.note_alloc(size)
    kind = _result_kind(spec)
    fill = opts.get("INITIAL-ELEMENT", Char("\x00") if kind == "string" else 0)
    if kind == "list" and "INITIAL-ELEMENT" not in opts:
        fill = NIL
    return build(kind, [fill] * size)


@builtin("CONCATENATE", interp=True)
def concatenate(interp, spec, *seqs):
    items: list = []
    for s in seqs:
        items.extend(items_of(s))
    interp.note_alloc(len(items))
    return build(_result_kind(spec), items)


@builtin("MAP", interp=True)
def map_(interp, spec, fn, first, *more):
    columns = [items_of(s) for s in (first, *more)]
    n = min(len(c) for c in columns)
    results = [interp.call1(fn, *(c[i] for c in columns)) for i in range(n)]
    if spec is NIL:
        return NIL
    return build(_result_kind(spec), results)


@builtin("MAP-INTO", interp=True)
def map_into(interp, target, fn, *seqs):
    columns = [items_of(s) for s in seqs]
    n = min([len(c) for c in columns] + [length(target)])
    values = [interp.call1(fn, *(c[i] for c in columns)) for i in range(n)]
    return replace(target, lisp_list(values))


def _quantifier(name: str, want: bool, every: bool):
    def fn(interp, pred, first, *more):
        columns = [items_of(s) for s in (first, *more)]
        n = min(len(c) for c in columns)
        for i in range(n):
            value = interp.call1(pred, *(c[i] for c in columns))
            if every and value is NIL:
                return NIL if want else T
            if not every and value is not NIL:
                return value if want else NIL
        if every:
            return T if want else NIL
        return NIL if want else T

    builtin(name, interp=True)(fn)


_quantifier("EVERY", True, True)
_quantifier("NOTEVERY", False, True)
_quantifier("SOME", True, False)
_quantifier("NOTANY", False, False)


@builtin("REMOVE-DUPLICATES", "DELETE-DUPLICATES", interp=True)
def remove_duplicates(interp, seq, *options):
    opts = keywords(options, ("KEY", "TEST", "TEST-NOT", "FROM-END", "START", "END"))
    test = test_fn(interp, opts)
    key = key_fn(interp, opts)
    items = items_of(seq)
    keys = [key(x) if key else x for x in items]
    if opts.get("FROM-END", NIL) is not NIL:
        kept = [x for i, x in enumerate(items)
                if not any(test(keys[j], keys[i]) for j in range(i))]
    else:
        kept = [x for i, x in enumerate(items)
                if not any(test(keys[i], keys[j]) for j in range(i + 1, len(items)))]
    return like(seq, kept)


def _set_op(name: str, keep_common: bool):
    def fn(interp, a, b, *options):
        opts = keywords(options, ("KEY", "TEST", "TEST-NOT"))
        test = test_fn(interp, opts)
        key = key_fn(interp, opts)
        ys = [key(y) if key else y for y in proper_items(b)]
        out = [x for x in proper_items(a)
               if any(test(key(x) if key else x, y) for y in ys) == keep_common]
        return lisp_list(reversed(out))  # SBCL collects these by pushing

    builtin(name, interp=True)(fn)


_set_op("INTERSECTION", True)
_set_op("NINTERSECTION", True)
_set_op("SET-DIFFERENCE", False)
_set_op("NSET-DIFFERENCE", False)


def _exclusive_or(interp, a, b, options: tuple) -> list:
    """The elements of either list not in the other: those of the first, then the second."""
    opts = keywords(options, ("KEY", "TEST", "TEST-NOT"))
    test, key = test_fn(interp, opts), key_fn(interp, opts)
    xs, ys = proper_items(a), proper_items(b)
    kx = [key(x) if key else x for x in xs]
    ky = [key(y) if key else y for y in ys]
    only_a = [x for x, k in zip(xs, kx) if not any(test(k, j) for j in ky)]
    only_b = [y for y, k in zip(ys, ky) if not any(test(j, k) for j in kx)]
    return only_a + only_b


@builtin("SET-EXCLUSIVE-OR", interp=True)
def set_exclusive_or(interp, a, b, *options):
    return lisp_list(reversed(_exclusive_or(interp, a, b, options)))  # SBCL pushes them


@builtin("NSET-EXCLUSIVE-OR", interp=True)
def nset_exclusive_or(interp, a, b, *options):
    return lisp_list(_exclusive_or(interp, a, b, options))


@builtin("UNION", "NUNION", interp=True)
def union(interp, a, b, *options):
    opts = keywords(options, ("KEY", "TEST", "TEST-NOT"))
    test = test_fn(interp, opts)
    key = key_fn(interp, opts)
    ys = [key(y) if key else y for y in proper_items(b)]
    result = b
    # SBCL pushes the elements of the first list missing from the second onto it
    for x in proper_items(a):
        if not any(test(key(x) if key else x, y) for y in ys):
            result = Cons(x, result)
    return result


@builtin("SUBSETP", interp=True)
def subsetp(interp, a, b, *options):
    opts = keywords(options, ("KEY", "TEST", "TEST-NOT"))
    test = test_fn(interp, opts)
    ys = proper_items(b)
    return boolean(all(any(test(x, y) for y in ys) for x in proper_items(a)))


@builtin("ADJOIN", interp=True)
def adjoin(interp, item, lst, *options):
    return adjoin_to(interp, item, lst, options)


def adjoin_to(interp, item: Any, lst: Any, options: list | tuple) -> Any:
    """ADJOIN and PUSHNEW: the :key applies to the item as well as to the list's elements."""
    opts = keywords(tuple(options), ("KEY", "TEST", "TEST-NOT"))
    key = key_fn(interp, opts)
    probe = key(item) if key else item
    if member_of(interp, probe, lst, options) is not NIL:
        return lst
    return Cons(item, lst)


@builtin("COERCE", interp=True)
def coerce(interp, x, spec):
    name = spec.name if isinstance(spec, Symbol) else (spec.car.name if type(spec) is Cons else "")
    if name == "FUNCTION":
        return as_function(interp, x)
    if name in ("FLOAT", "SINGLE-FLOAT", "SHORT-FLOAT"):
        if type(x) not in NUMBER_TYPES:
            raise TypeError("coerce")
        return x if name == "FLOAT" and type(x) is float else single(x)
    if name in ("DOUBLE-FLOAT", "LONG-FLOAT"):
        return float(x)
    if name == "CHARACTER":
        if type(x) is str and len(x) == 1:
            return Char(x)
        if isinstance(x, Symbol) and len(x.name) == 1:
            return Char(x.name)
        return x if type(x) is Char else _bad_coerce()
    if name in ("T",):
        return x
    kind = _result_kind(spec)
    if kind == "vector" and type(x) is str:
        return x  # a string already is a vector
    return build(kind, items_of(x))


def _bad_coerce():
    raise TypeError("coerce")


@builtin("VALUES")
def values(*items):
    return MV(items)


@builtin("VALUES-LIST")
def values_list(lst):
    return MV(proper_items(lst))
