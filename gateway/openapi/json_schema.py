"""JSON Schema constructors for the OpenAPI document, and the patterns its schemas share.

The date and UUID patterns are the forms :mod:`gateway.api.params` checks, anchored.
"""

from __future__ import annotations

from typing import Any

from gateway.api import params

Schema = dict[str, Any]

DATE = "^" + params.DATE.pattern + "$"
TIMESTAMP = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6}Z$"
UUID = "^" + params.UUID.pattern + "$"
VALUE = "^[0-9]+\\.[0-9]{3}$"
SHA256 = "^[0-9a-f]{64}$"


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def obj(
    properties: dict[str, Schema], description: str = "", optional: tuple[str, ...] = ()
) -> Schema:
    """An object whose fields are all required but ``optional``."""
    schema: Schema = {"type": "object"}
    if description:
        schema["description"] = description
    schema["properties"] = properties
    schema["required"] = [name for name in properties if name not in optional]
    return schema


def text(description: str = "", **keywords: Any) -> Schema:
    return {"type": "string", **keywords, **({"description": description} if description else {})}


def nullable(schema: Schema) -> Schema:
    return {**schema, "type": [schema["type"], "null"]}


def integer(description: str = "", minimum: int = 0) -> Schema:
    schema: Schema = {"type": "integer", "minimum": minimum}
    return schema | ({"description": description} if description else {})


def date(description: str = "") -> Schema:
    return text(description, format="date", pattern=DATE)


def timestamp(description: str = "") -> Schema:
    return text(description + " ISO-8601 UTC with microseconds and Z.", pattern=TIMESTAMP)


def uuid(description: str = "") -> Schema:
    return text(description, format="uuid", pattern=UUID)


def value(description: str) -> Schema:
    return text(
        description + " Exactly 3 decimals, half-up; parse it with a decimal type, never a float.",
        pattern=VALUE,
    )


def array(items: Schema, description: str = "") -> Schema:
    schema: Schema = {"type": "array", "items": items}
    return schema | ({"description": description} if description else {})
