"""`@record`: the value classes of the modules `sexpgpu check` imports, declared as
dataclasses are (annotated fields, defaults, `factory(list)` for a fresh mutable
default), with `replace`, `asdict` and `field_names` beside them.

Why not dataclasses: `check` is a cold process each time, and `@dataclass` cost
~0.6 ms a class in one (it compiles every generated method with an `exec` of its
own, and asks `inspect.signature` for a class without a docstring), besides ~10 ms
importing `inspect`, `ast` and `dis` for it: ~35 ms of a 0.3 s check, for 42
classes. A record compiles its `__init__` alone (one `exec`, the same code a
dataclass's is, so making one costs what it did); equality, hashing and `repr` are
the same few functions for every record, reading the class's field names.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar

T = TypeVar("T")

FIELDS = "__record_fields__"
_MISSING = object()  # a field given no value (its default or factory applies)


class _Factory:
    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


def factory(make: Callable[[], Any]) -> Any:
    """A field's default made new for each instance: `tags: list[str] = factory(list)`."""
    return _Factory(make)


def record(cls: type[T] | None = None, /, *, frozen: bool = False, slots: bool = False,
           eq: bool = True) -> Any:
    """Make `cls` a record: `__init__` over its annotated fields in order (then its
    `__post_init__`, if it has one), equality by value (`eq=False`: by identity),
    a hash by value when `frozen` (its instances are never changed), and `__slots__`
    for the fields with `slots` (for the classes made by the thousand)."""
    def wrap(cls: type[T]) -> type[T]:
        return _make(cls, frozen, slots, eq)
    return wrap if cls is None else wrap(cls)


def _make(cls: type, frozen: bool, slots: bool, eq: bool) -> type:
    names = [name for name, kind in cls.__dict__.get("__annotations__", {}).items()
             if not str(kind).startswith("ClassVar")]
    defaults = {name: cls.__dict__[name] for name in names if name in cls.__dict__}
    if slots:
        body = {k: v for k, v in cls.__dict__.items()
                if k not in defaults and k not in ("__dict__", "__weakref__")}
        cls = type(cls)(cls.__name__, cls.__bases__, {**body, "__slots__": tuple(names)})
    else:
        for name, default in defaults.items():
            if isinstance(default, _Factory):
                delattr(cls, name)
    setattr(cls, FIELDS, tuple(names))
    cls.__init__ = _init(cls, names, defaults)
    # the field values, as one tuple (an attrgetter, not a function: never bound)
    cls._key = attrgetter(*names) if names else staticmethod(lambda _: ())
    cls.__repr__ = _repr
    if eq:
        cls.__eq__ = _eq
        cls.__hash__ = _hash if frozen else None
    return cls


def _init(cls: type, names: list[str], defaults: dict[str, Any]) -> Callable[..., None]:
    """`cls.__init__`, compiled from its text (a loop over the fields at each call
    would make a Node cost twice as much)."""
    params, lines = [], []
    scope: dict[str, Any] = {"_MISSING": _MISSING}
    defaulted = False  # whether an earlier field has a default
    for name in names:
        default = defaults.get(name, _MISSING)
        if default is _MISSING:
            if defaulted:
                raise TypeError(f"{cls.__name__}: field {name!r} without a default follows "
                                "one with a default")
            params.append(name)
            lines.append(f"self.{name} = {name}")
            continue
        defaulted = True
        if isinstance(default, _Factory):
            scope[f"_new_{name}"] = default.make
            params.append(f"{name}=_MISSING")
            lines.append(f"self.{name} = _new_{name}() if {name} is _MISSING else {name}")
        else:
            scope[f"_default_{name}"] = default
            params.append(f"{name}=_default_{name}")
            lines.append(f"self.{name} = {name}")
    if hasattr(cls, "__post_init__"):
        lines.append("self.__post_init__()")
    exec(f"def __init__(self, {', '.join(params)}):\n    "  # noqa: S102 - our own text
         + "\n    ".join(lines or ["pass"]), scope)
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return self._key(self) == other._key(other)


def _hash(self: Any) -> int:
    return hash(self._key(self))


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in getattr(self, FIELDS)
                      if not name.startswith("_"))
    return f"{self.__class__.__qualname__}({shown})"


def is_record(obj: Any) -> bool:
    """Whether `obj` is a record (an instance of a `@record` class)."""
    return hasattr(obj.__class__, FIELDS)


def field_names(cls_or_record: Any) -> tuple[str, ...]:
    """The fields of a record class (or of a record), in order."""
    return getattr(cls_or_record, FIELDS)


def replace(obj: T, **changes: Any) -> T:
    """A new record of obj's class: obj's fields, but for `changes`."""
    values = {name: getattr(obj, name) for name in field_names(obj)}
    values.update(changes)
    return obj.__class__(**values)


def asdict(obj: Any) -> Any:
    """A record as a dict of its fields, recursively through records, lists, tuples and
    dicts (as `dataclasses.asdict`: the form plan.json stores)."""
    if is_record(obj):
        return {name: asdict(getattr(obj, name)) for name in field_names(obj)}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a namedtuple
        return obj.__class__(*[asdict(v) for v in obj])
    if isinstance(obj, (list, tuple)):
        return obj.__class__(asdict(v) for v in obj)
    if isinstance(obj, dict):
        return obj.__class__((asdict(k), asdict(v)) for k, v in obj.items())
    return obj
