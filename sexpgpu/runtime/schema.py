"""A small JSON Schema checker for the subset our committed schemas use.

Supported keywords: type, enum, const, properties, required, additionalProperties,
items, minimum, $ref (to #/$defs/...), allOf, anyOf, oneOf, if/then. That is all
docs/schema/*.json use; no third-party validator is needed for events and status.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "docs" / "schema"

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def load_schema(name: str) -> dict[str, Any]:
    """A committed schema by name: `load_schema("events")`."""
    return orjson.loads((SCHEMA_DIR / f"{name}.schema.json").read_bytes())


def errors(instance: Any, schema: dict[str, Any], root: dict[str, Any] | None = None,
           where: str = "$") -> list[str]:
    """Every way `instance` fails `schema`, as `path: problem` lines (empty: valid)."""
    root = root if root is not None else schema
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"unsupported $ref {ref}")
        return errors(instance, root["$defs"][ref.split("/")[-1]], root, where)
    out: list[str] = []
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not any(_TYPES[k](instance) for k in kinds):
            return [f"{where}: expected {' or '.join(kinds)}, got {type(instance).__name__}"]
    if "enum" in schema and instance not in schema["enum"]:
        out.append(f"{where}: {instance!r} is not one of {schema['enum']}")
    if "const" in schema and instance != schema["const"]:
        out.append(f"{where}: expected {schema['const']!r}, got {instance!r}")
    if "minimum" in schema and _TYPES["number"](instance) and instance < schema["minimum"]:
        out.append(f"{where}: {instance} is below the minimum {schema['minimum']}")
    if isinstance(instance, dict):
        out += _object_errors(instance, schema, root, where)
    if isinstance(instance, list) and "items" in schema:
        for i, item in enumerate(instance):
            out += errors(item, schema["items"], root, f"{where}[{i}]")
    for sub in schema.get("allOf", []):
        out += errors(instance, sub, root, where)
    if "anyOf" in schema and all(errors(instance, s, root, where) for s in schema["anyOf"]):
        out.append(f"{where}: matches none of anyOf")
    if "oneOf" in schema:
        matched = sum(not errors(instance, s, root, where) for s in schema["oneOf"])
        if matched != 1:
            out.append(f"{where}: matches {matched} of oneOf, expected exactly 1")
    if "if" in schema and not errors(instance, schema["if"], root, where):
        out += errors(instance, schema.get("then", {}), root, where)
    return out


def _object_errors(instance: dict[str, Any], schema: dict[str, Any], root: dict[str, Any],
                   where: str) -> list[str]:
    out = [f"{where}: missing required {key!r}" for key in schema.get("required", [])
           if key not in instance]
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, value in instance.items():
        if key in props:
            out += errors(value, props[key], root, f"{where}.{key}")
        elif extra is False:
            out.append(f"{where}: unexpected property {key!r}")
        elif isinstance(extra, dict):
            out += errors(value, extra, root, f"{where}.{key}")
    return out
