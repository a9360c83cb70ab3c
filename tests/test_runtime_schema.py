"""The hand-written JSON Schema checker, and the committed schemas it reads."""

from sexpgpu.runtime.schema import errors, load_schema

SMALL = {
    "type": "object",
    "required": ["kind"],
    "properties": {"kind": {"enum": ["a", "b"]}, "n": {"type": "integer", "minimum": 0}},
    "additionalProperties": False,
    "allOf": [{"if": {"properties": {"kind": {"const": "b"}}}, "then": {"required": ["n"]}}],
}


def test_valid_instances_have_no_errors():
    assert errors({"kind": "a"}, SMALL) == []
    assert errors({"kind": "b", "n": 3}, SMALL) == []


def test_each_keyword_reports():
    assert errors([], SMALL) == ["$: expected object, got list"]
    assert errors({"kind": "c"}, SMALL) == ["$.kind: 'c' is not one of ['a', 'b']"]
    assert errors({"kind": "b"}, SMALL) == ["$: missing required 'n'"]
    assert errors({"kind": "a", "n": -1}, SMALL) == ["$.n: -1 is below the minimum 0"]
    assert errors({"kind": "a", "n": True}, SMALL) == ["$.n: expected integer, got bool"]
    assert errors({"kind": "a", "x": 1}, SMALL) == ["$: unexpected property 'x'"]


def test_refs_items_and_one_of():
    schema = {"$defs": {"num": {"type": "number"}}, "type": "array",
              "items": {"oneOf": [{"$ref": "#/$defs/num"}, {"type": "string"}]}}
    assert errors([1, "x", 2.5], schema) == []
    assert errors([None], schema) == ["$[0]: matches 0 of oneOf, expected exactly 1"]


def test_committed_schemas_reject_bad_records():
    events, status = load_schema("events"), load_schema("status")
    good = {"event": "eval", "time": 1.0, "step": 3, "name": "test", "metrics": {"test/a": 0.5}}
    assert errors(good, events) == []
    assert errors({**good, "event": "nope"}, events)
    assert errors({"event": "step", "time": 1.0, "step": 1, "loss": "high"}, events)
    assert errors({"state": "running"}, status)
