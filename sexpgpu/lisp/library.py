"""The language an `Interpreter` starts with: which modules define it, and `install`.

Each module below defines builtins (`@builtin`) and special forms (`@special`) into the
tables of `registry.py`; this is the one place that lists them, so adding a module of
builtins means adding it here.
"""

from __future__ import annotations

from typing import Any

from sexpgpu.lisp import (
    arrays,
    conditions,
    control,
    definitions,
    hashtables,
    io,
    lists,
    loop,
    misc,
    numbers,
    places,
    sequences,
    specials,
    strings,
)
from sexpgpu.lisp.prelude import load_prelude
from sexpgpu.lisp.registry import BUILTINS, SPECIAL_FORMS

MODULES = (arrays, conditions, control, definitions, hashtables, io, lists, loop, misc,
           numbers, places, sequences, specials, strings)


def install(interp: Any, prelude: bool = True) -> None:
    """Give a fresh interpreter the builtins, special forms, standard streams, numeric
    constants and (unless `prelude` is false) the prelude written in Lisp."""
    interp.functions.update(BUILTINS)
    interp.special_forms = SPECIAL_FORMS
    io.install(interp)
    numbers.install(interp)
    if prelude:
        load_prelude(interp)
