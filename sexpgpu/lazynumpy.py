"""numpy imported on first use, for modules that name numpy functions at import
(the op definitions hold `np.exp` as exp's reference) but whose importers may never
call one: `sexpgpu check` traces and checks shapes without computing a value, and
numpy's import is a third of its time.

`np` stands for the numpy module. Once numpy is imported (by anyone), an attribute
is numpy's own. Before that, an attribute is a `Deferred`: a stand-in that imports
numpy and becomes the attribute when it is called, an attribute of it is read, or it
is pickled; the op tables keep it, so a reference resolves once, on its first call.
Module-level code must only store numpy attributes, never call them (a call imports
numpy: `tests/test_check_cold.py` holds the check path to that)."""

from __future__ import annotations

import sys
from typing import Any


def _numpy() -> Any:
    # imported here, on first use, so importing this module costs nothing
    import numpy
    return numpy


def attribute(name: str) -> Any:
    """numpy's attribute `name` (numpy imported if it is not yet)."""
    return getattr(_numpy(), name)


class Deferred:
    """numpy's attribute `name`, looked up when first used."""

    __slots__ = ("_name", "_target")

    def __init__(self, name: str) -> None:
        self._name = name
        self._target: Any = None

    def resolve(self) -> Any:
        if self._target is None:
            self._target = attribute(self._name)
        return self._target

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.resolve(), name)

    def __instancecheck__(self, obj: Any) -> bool:
        return isinstance(obj, self.resolve())

    def __reduce__(self) -> Any:
        # pickled as the name: unpickling gives numpy's own attribute
        return (attribute, (self._name,))

    def __repr__(self) -> str:
        return f"<numpy.{self._name}, not yet imported>"


class LazyNumpy:
    """The numpy module as `np`: numpy's attributes once it is imported, `Deferred`
    stand-ins before."""

    def __getattr__(self, name: str) -> Any:
        numpy = sys.modules.get("numpy")
        if numpy is None or not hasattr(numpy, "ndarray"):  # absent, or mid-import
            return Deferred(name)
        value = getattr(numpy, name)
        setattr(self, name, value)  # later reads skip __getattr__
        return value


np = LazyNumpy()
