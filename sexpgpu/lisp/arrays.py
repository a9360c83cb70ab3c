"""Vectors and arrays: make-array, aref, fill pointers and arrays of rank two and more.

One-dimensional arrays are Python lists (strings are Python str); `MDArray` (in types.py)
holds an array of another rank with its dimensions and row-major contents.
"""

from __future__ import annotations

from sexpgpu.lisp.errors import unsupported
from sexpgpu.lisp.registry import builtin, keywords
from sexpgpu.lisp.sequences import items_of
from sexpgpu.lisp.types import NIL, Char, Cons, MDArray, T, boolean, intern, lisp_list, to_py


@builtin("VECTOR", "%QQ-VECTOR")
def vector(*items):
    return list(items)


@builtin("MAKE-ARRAY", interp=True)
def make_array(interp, dims, *options):
    opts = keywords(options, ("INITIAL-ELEMENT", "INITIAL-CONTENTS", "ELEMENT-TYPE",
                              "ADJUSTABLE", "FILL-POINTER", "DISPLACED-TO",
                              "DISPLACED-INDEX-OFFSET"))
    if "DISPLACED-TO" in opts or "DISPLACED-INDEX-OFFSET" in opts:
        raise unsupported("make-array :displaced-to", "arrays here are Python lists, which "
                          "cannot share storage (copy with subseq instead)", interp.current_span)
    if type(dims) is Cons:
        sizes = to_py(dims)
        if len(sizes) != 1:
            return _make_md_array(interp, sizes, opts)
        dims = sizes[0]
    if type(dims) is not int or dims < 0:
        raise TypeError("array size")
    interp.note_alloc(dims)
    element_type = opts.get("ELEMENT-TYPE", NIL)
    if "INITIAL-CONTENTS" in opts:
        items = items_of(opts["INITIAL-CONTENTS"])
    else:
        items = [opts.get("INITIAL-ELEMENT", 0)] * dims
    fp = opts.get("FILL-POINTER", NIL)
    if fp is not NIL and fp is not T:
        items = items[:fp]
    elif fp is T:
        pass
    if getattr(element_type, "name", "") in ("CHARACTER", "BASE-CHAR") and fp is NIL \
            and opts.get("ADJUSTABLE", NIL) is NIL:
        return "".join(c.ch if type(c) is Char else " " for c in items)
    return items


def _make_md_array(interp, sizes: list, opts: dict) -> MDArray:
    if not all(type(s) is int and s >= 0 for s in sizes):
        raise TypeError("array dimensions must be non-negative integers")
    total = 1
    for s in sizes:
        total *= s
    interp.note_alloc(total)
    if "INITIAL-CONTENTS" in opts:
        data: list = []

        def flatten(x, depth):
            if depth == len(sizes):
                data.append(x)
            else:
                for item in items_of(x):
                    flatten(item, depth + 1)

        flatten(opts["INITIAL-CONTENTS"], 0)
    else:
        data = [opts.get("INITIAL-ELEMENT", 0)] * total
    return MDArray(list(sizes), data)


@builtin("ROW-MAJOR-AREF")
def row_major_aref(array, index):
    data = array.data if type(array) is MDArray else array
    if type(index) is not int or not 0 <= index < len(data):
        raise IndexError("index out of bounds")
    value = data[index]
    return Char(value) if type(value) is str else value


@builtin("AREF", "SVREF", "BIT", "SBIT")
def aref(array, *indices):
    if type(array) is MDArray:
        return array.data[array.index(indices)]
    target = array
    for i in indices:
        if i < 0:
            raise IndexError("negative index")
        target = Char(target[i]) if type(target) is str else target[i]
    return target


@builtin("VECTOR-PUSH")
def vector_push(item, vec):
    vec.append(item)
    return len(vec) - 1


@builtin("VECTOR-PUSH-EXTEND")
def vector_push_extend(item, vec, extension=None):
    vec.append(item)
    return len(vec) - 1


@builtin("VECTOR-POP")
def vector_pop(vec):
    return vec.pop()


@builtin("FILL-POINTER")
def fill_pointer(vec):
    return len(vec)


@builtin("%SET-FILL-POINTER")
def set_fill_pointer(vec, n):
    """(setf fill-pointer) to at most the current length: the elements past it are
    dropped (a vector here has no storage beyond its fill pointer)."""
    if type(vec) is not list or type(n) is not int or not 0 <= n <= len(vec):
        raise TypeError("lisp: a fill pointer must be between 0 and the vector's length")
    del vec[n:]
    return n


@builtin("ARRAY-IN-BOUNDS-P")
def array_in_bounds_p(array, *indices):
    dims = array.dims if type(array) is MDArray else [len(array)]
    if len(indices) != len(dims):
        raise TypeError("lisp: one index per dimension")
    return boolean(all(0 <= i < d for i, d in zip(indices, dims)))


@builtin("ARRAY-ROW-MAJOR-INDEX")
def array_row_major_index(array, *indices):
    if type(array) is MDArray:
        return array.index(indices)
    if len(indices) != 1 or not 0 <= indices[0] < len(array):
        raise IndexError("index out of bounds")
    return indices[0]


@builtin("ARRAY-ELEMENT-TYPE")
def array_element_type(array):
    return intern("CHARACTER" if type(array) is str else "T")


@builtin("ARRAY-DIMENSIONS")
def array_dimensions(array):
    if type(array) is MDArray:
        return lisp_list(array.dims)
    return lisp_list([len(array)])


@builtin("ARRAY-DIMENSION")
def array_dimension(array, axis):
    if type(array) is MDArray:
        return array.dims[axis]
    if axis != 0:
        raise IndexError("axis")
    return len(array)


@builtin("ARRAY-TOTAL-SIZE")
def array_total_size(array):
    return len(array.data) if type(array) is MDArray else len(array)


@builtin("ARRAY-RANK")
def array_rank(array):
    return len(array.dims) if type(array) is MDArray else 1


builtin("VECTORP")(lambda x: boolean(type(x) in (list, str)))
builtin("SIMPLE-VECTOR-P")(lambda x: boolean(type(x) is list))
builtin("ARRAYP")(lambda x: boolean(type(x) in (list, str, MDArray)))
