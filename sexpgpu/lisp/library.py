"""The language an `Interpreter` starts with: which modules define it, and `install`.

Each module below defines builtins (`@builtin`) and special forms (`@special`) into the
tables of `registry.py`; this is the one place that lists them, so adding a module of
builtins means adding it here.
"""

from __future__ import annotations

from typing import Any

from sexpgpu.lisp import (
    arrays,
    bits,
    control,
    definitions,
    equality,
    evaluation,
    floats,
    functions,
    hashtables,
    io,
    lists,
    loop,
    macrofns,
    modules,
    numbers,
    places,
    sequences,
    signals,
    specials,
    strings,
    structs,
    subtypes,
    symbols,
    trees,
    typespec,
)
from sexpgpu.lisp.prelude import load_prelude
from sexpgpu.lisp.registry import BUILTINS, SPECIAL_FORMS

SPECIAL_FORM_MODULES = (specials, definitions, control, places, loop, signals, structs,
                        modules, evaluation, hashtables, io)

# Their order is the order of an interpreter's function table, which decides between
# equally close "did you mean" names; it is the order the builtins had before this list.
BUILTIN_MODULES = (sequences, arrays, hashtables, io, lists, trees, equality, symbols, functions,
                   typespec, subtypes, evaluation, macrofns, signals, numbers, floats, bits,
                   strings)


def install(interp: Any, prelude: bool = True) -> None:
    """Give a fresh interpreter the builtins, special forms, standard streams, numeric
    constants and (unless `prelude` is false) the prelude written in Lisp."""
    interp.functions.update(_in_module_order(BUILTINS))
    interp.special_forms = SPECIAL_FORMS
    io.install(interp)
    numbers.install(interp)
    bits.install(interp)
    if prelude:
        load_prelude(interp)


def _in_module_order(builtins: dict) -> dict:
    """The registered builtins ordered by BUILTIN_MODULES, then as each module defines them
    (anything registered from elsewhere goes last)."""
    rank = {module.__name__: i for i, module in enumerate(BUILTIN_MODULES)}
    return dict(sorted(builtins.items(),
                       key=lambda item: rank.get(item[1].fn.__module__, len(rank))))
