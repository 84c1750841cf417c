"""The OpenAPI document as the suite reads it: every object schema that lists its fields closed."""

from __future__ import annotations

from typing import Any


def closed(schema: Any) -> Any:
    """A copy where every object schema that lists ``properties`` admits no other field.

    Clients must keep the objects open (fields are only added in /v1); the suite closes them so
    that a field the gateway sends without documenting it fails.
    """
    if isinstance(schema, dict):
        schema = {key: closed(value) for key, value in schema.items()}
        if schema.get("type") == "object" and "properties" in schema:
            schema.setdefault("additionalProperties", False)
        return schema
    if isinstance(schema, list):
        return [closed(value) for value in schema]
    return schema
