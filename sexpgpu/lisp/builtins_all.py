"""Import every module that registers builtins or special forms (order matters little)."""

from sexpgpu.lisp import (  # noqa: F401
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
