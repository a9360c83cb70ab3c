"""The op registry: every op by name (`OPS`, `get_op`), gathered from the explicit
list of op families below. Each family module defines its ops as `OpDef`s in its
own `OPS` list; adding a family means adding it to FAMILIES. `LISP_NAMES` is the
Lisp builtins table, every Lisp name with the entries it calls."""

from __future__ import annotations

from types import ModuleType

from sexpgpu.ir.ops import (
    activations,
    attention,
    binary,
    conv,
    creation,
    elementwise,
    indexing,
    layout,
    linalg,
    norm,
    random,
    reduce,
    scan,
    shape,
)
from sexpgpu.ir.ops.opdef import OpDef

FAMILIES: tuple[ModuleType, ...] = (
    elementwise, activations, binary, reduce, scan, shape, layout, indexing, creation, random,
    linalg, conv, attention, norm,
)


def gather(families: tuple[ModuleType, ...]) -> dict[str, OpDef]:
    """Every family's ops by name, in family order; a name defined twice is an error."""
    table: dict[str, OpDef] = {}
    for family in families:
        for opdef in family.OPS:
            if opdef.name in table:
                raise ValueError(f"op {opdef.name} defined twice")
            table[opdef.name] = opdef
    return table


def lisp_names(ops: dict[str, OpDef]) -> dict[str, list[OpDef]]:
    """Each Lisp name with the entries that answer to it (several: by arity, as
    `-` is neg with one argument and sub with two)."""
    table: dict[str, list[OpDef]] = {}
    for opdef in ops.values():
        for name in opdef.lisp:
            table.setdefault(name, []).append(opdef)
    return table


OPS: dict[str, OpDef] = gather(FAMILIES)
LISP_NAMES: dict[str, list[OpDef]] = lisp_names(OPS)


def get_op(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"no op named {name!r}") from None
