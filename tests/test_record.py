"""sexpgpu/record.py: the value classes of the check path (tests/test_check_cold.py
holds `check` to importing neither `dataclasses` nor `inspect`)."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import ClassVar

import orjson
import pytest

from sexpgpu.atomic import dumps
from sexpgpu.record import asdict, factory, field_names, record, replace

ROOT = Path(__file__).resolve().parent.parent


@record(frozen=True, slots=True)
class Point:
    x: int
    y: int = 0


@record
class Bag:
    name: str
    items: list[Point] = factory(list)
    tags: dict[str, tuple[Point, ...]] = factory(dict)
    LIMIT: ClassVar[int] = 3  # a class constant, not a field


@record(eq=False)
class Handle:
    label: str


@record
class Checked:
    n: int

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError("negative")


def test_fields_defaults_and_fresh_mutable_defaults():
    assert field_names(Bag) == ("name", "items", "tags") and Bag.LIMIT == 3
    a, b = Bag("a"), Bag("b")
    a.items.append(Point(1))
    assert b.items == [] and a.items is not b.items
    assert Point(1) == Point(1, 0) and Point(1).y == 0
    with pytest.raises(TypeError):
        Bag()
    with pytest.raises(TypeError):
        Point(1, 2, 3)


def test_equality_hash_and_repr():
    assert Point(1, 2) == Point(1, 2) and Point(1, 2) != Point(2, 1)
    assert len({Point(1, 2), Point(1, 2), Point(3)}) == 2
    assert Bag("a") == Bag("a") and Bag("a") != Bag("a", [Point(1)])
    with pytest.raises(TypeError):
        hash(Bag("a"))  # mutable, compared by value: unhashable, as a dataclass
    h = Handle("h")
    assert h == h and h != Handle("h") and len({h, Handle("h")}) == 2
    assert repr(Bag("a", [Point(1)])) == "Bag(name='a', items=[Point(x=1, y=0)], tags={})"
    assert Point(1) != (1, 0) and Point(1).__eq__((1, 0)) is NotImplemented


def test_a_record_without_fields():
    @record(frozen=True)
    class Empty:
        pass

    assert Empty() == Empty() and hash(Empty()) == hash(Empty()) and repr(Empty()) == \
        "test_a_record_without_fields.<locals>.Empty()"


def test_slots_and_post_init():
    with pytest.raises(AttributeError):
        Point(1).z = 2  # __slots__: no attribute outside the fields
    assert not hasattr(Point(1), "__dict__")
    with pytest.raises(ValueError, match="negative"):
        Checked(-1)


def test_replace_asdict_and_pickle():
    bag = Bag("a", [Point(1, 2)], {"k": (Point(3),)})
    other = replace(bag, name="b")
    assert other.name == "b" and other.items is bag.items and bag.name == "a"
    with pytest.raises(TypeError):
        replace(bag, nope=1)
    assert asdict(bag) == {"name": "a", "items": [{"x": 1, "y": 2}],
                           "tags": {"k": ({"x": 3, "y": 0},)}}
    for value in (bag, Point(4, 5)):
        assert pickle.loads(pickle.dumps(value)) == value


def test_records_encode_as_json_as_dataclasses_did():
    """orjson encodes dataclasses itself; the one JSON encoding (files and every
    command's --json) encodes records as their fields, and still refuses the rest."""
    assert orjson.loads(dumps({"bag": Bag("a", [Point(1, 2)])})) == \
        {"bag": {"name": "a", "items": [{"x": 1, "y": 2}], "tags": {}}}
    with pytest.raises(TypeError):
        dumps({"no": object()})


def test_a_default_before_a_required_field_is_refused():
    with pytest.raises(TypeError, match="without a default"):
        @record
        class Bad:
            a: int = 0
            b: int
