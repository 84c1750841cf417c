"""MkDocs hook: the API reference, rendered from the OpenAPI document at build time.

``docs/api.md`` holds a marker line, ``<!-- openapi-reference -->``; this hook replaces it with
Markdown made from ``gateway.openapi.DOCUMENT``, the document the gateway serves at
``/v1/openapi.json``: every path and operation, its parameters, its responses with their status
codes, descriptions, headers and bodies, and every schema. Nothing of the reference is written by
hand, so it cannot drift from what the gateway serves. Headings carry fixed ids (``#v1-rates``,
``#schema-rateitem``) that other pages link to.
"""

from __future__ import annotations

import html
import json
from typing import Any

from mkdocs.exceptions import PluginError

PAGE = "api.md"
MARKER = "<!-- openapi-reference -->"
METHODS = ("get", "head", "post", "put", "patch", "delete", "options")

Json = dict[str, Any]


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise PluginError(f"{PAGE} lost its marker line {MARKER}")
    from gateway.openapi import DOCUMENT  # the gateway's own document, never a copy

    return markdown.replace(MARKER, render(DOCUMENT))


# -- Markdown pieces ---------------------------------------------------------------------------


def text(value: str) -> str:
    """Prose from the document, safe in Markdown and in a table cell."""
    escaped = html.escape(" ".join(value.split()), quote=False)
    for char in "\\`*_[]|":
        escaped = escaped.replace(char, "\\" + char)
    return escaped


def code(value: object) -> str:
    shown = value if isinstance(value, str) else json.dumps(value)
    fence = "``" if "`" in shown else "`"
    return f"{fence}{shown}{fence}"


def path_anchor(path: str) -> str:
    return path.strip("/").replace("/", "-").replace("{", "").replace("}", "").replace(".", "-")


def schema_anchor(name: str) -> str:
    return "schema-" + name.lower()


def ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


class Reference:
    def __init__(self, document: Json) -> None:
        self.document = document

    def resolve(self, item: Json) -> Json:
        while "$ref" in item:
            node: Any = self.document
            for part in item["$ref"].removeprefix("#/").split("/"):
                node = node[part]
            item = node
        return item

    # -- schemas -------------------------------------------------------------------------------

    def schema(self, schema: Json) -> str:
        """A schema in one line: its type and constraints, links for named schemas."""
        if "$ref" in schema:
            name = ref_name(schema["$ref"])
            return f"[`{name}`](#{schema_anchor(name)})"
        parts: list[str] = []
        kind = schema.get("type")
        if isinstance(kind, list):
            parts.append(" or ".join(kind))
        elif kind == "array":
            parts.append("array of " + self.schema(schema.get("items", {})))
        elif kind:
            parts.append(kind)
        for member in schema.get("allOf", []):
            if "$ref" in member:
                parts.append(self.schema(member))
            elif "properties" in member and "if" not in member:
                fixed = ", ".join(
                    f"`{name}` {self.schema(sub)}" for name, sub in member["properties"].items()
                )
                parts.append(f"with {fixed}")
        if "format" in schema:
            parts.append(f"format {code(schema['format'])}")
        if "enum" in schema:
            parts.append("one of " + ", ".join(code(v) for v in schema["enum"]))
        if "const" in schema:
            parts.append("always " + code(schema["const"]))
        if "minimum" in schema:
            parts.append(f"at least {schema['minimum']}")
        if "default" in schema:
            parts.append("default " + code(schema["default"]))
        if "pattern" in schema:
            parts.append("pattern " + code(schema["pattern"]))
        return ", ".join(parts) or "any"

    def property_rows(self, schema: Json, prefix: str = "") -> list[str]:
        """One table row per property, nested objects and arrays of objects unfolded."""
        rows = []
        required = set(schema.get("required", []))
        for name, sub in schema.get("properties", {}).items():
            field = f"{prefix}{name}"
            rows.append(
                f"| `{field}` | {'yes' if name in required else 'no'} | {self.schema(sub)} "
                f"| {text(sub.get('description', ''))} |"
            )
            if sub.get("type") == "object" and "properties" in sub:
                rows.extend(self.property_rows(sub, f"{field}."))
            items = sub.get("items", {})
            if sub.get("type") == "array" and "properties" in items:
                rows.extend(self.property_rows(items, f"{field}[]."))
        return rows

    def schema_section(self, name: str, schema: Json) -> list[str]:
        lines = [f"### `{name}` {{#{schema_anchor(name)}}}", ""]
        if schema.get("description"):
            lines += [text(schema["description"]), ""]
        if "properties" in schema:
            lines += [
                "| field | required | type | description |",
                "|---|---|---|---|",
                *self.property_rows(schema),
                "",
            ]
        else:
            lines += [f"Type: {self.schema(schema)}.", ""]
        for member in schema.get("allOf", []):
            if "if" not in member:
                continue
            (key, condition), *_ = member["if"]["properties"].items()
            for field, sub in member["then"]["properties"].items():
                lines.append(
                    f"- When `{key}` is {code(condition['const'])}, `{field}` is "
                    f"{self.schema(sub)}."
                )
        if lines[-1] != "":
            lines.append("")
        return lines

    # -- operations ------------------------------------------------------------------------------

    def parameters(self, operation: Json) -> list[str]:
        parameters = [self.resolve(p) for p in operation.get("parameters", [])]
        if not parameters:
            return ["No parameters.", ""]
        lines = [
            "| parameter | in | required | schema | description |",
            "|---|---|---|---|---|",
        ]
        for parameter in parameters:
            lines.append(
                f"| `{parameter['name']}` | {parameter['in']} "
                f"| {'yes' if parameter.get('required') else 'no'} "
                f"| {self.schema(parameter.get('schema', {}))} "
                f"| {text(parameter.get('description', ''))} |"
            )
        return [*lines, ""]

    def body(self, response: Json) -> str:
        content = response.get("content", {})
        if not content:
            return "none"
        return "; ".join(
            f"{code(media)}: {self.schema(entry.get('schema', {}))}"
            for media, entry in content.items()
        )

    def responses(self, operation: Json) -> list[str]:
        lines = ["| status | description | body |", "|---|---|---|"]
        headers = [
            "| status | header | required | value | description |",
            "|---|---|---|---|---|",
        ]
        for status, entry in operation["responses"].items():
            response = self.resolve(entry)
            lines.append(
                f"| `{status}` | {text(response.get('description', ''))} | {self.body(response)} |"
            )
            for name, header in response.get("headers", {}).items():
                header = self.resolve(header)
                headers.append(
                    f"| `{status}` | `{name}` | {'yes' if header.get('required') else 'no'} "
                    f"| {self.schema(header.get('schema', {}))} "
                    f"| {text(header.get('description', ''))} |"
                )
        return [*lines, "", "Headers of each response:", "", *headers, ""]

    def security(self, operation: Json) -> str:
        needs = operation.get("security", self.document.get("security", []))
        if not needs:
            return "Public: no token needed."
        names = ", ".join(f"[`{name}`](#authentication)" for entry in needs for name in entry)
        return f"Needs a bearer token ({names})."

    def path_section(self, path: str, item: Json) -> list[str]:
        methods = [m for m in METHODS if m in item]
        lines = [f"## `{path}` {{#{path_anchor(path)}}}", ""]
        for method in methods:
            operation = item[method]
            lines += [
                f"### `{method.upper()} {path}` {{#{path_anchor(path)}-{method}}}",
                "",
                f"**{text(operation.get('summary', ''))}** "
                f"(operation `{operation.get('operationId', '')}`). " + self.security(operation),
                "",
            ]
            if method == "head" and "get" in item and self.same_as_get(item):
                lines += [
                    "The same parameters, statuses and headers as `GET`, with no body.",
                    "",
                ]
                continue
            if operation.get("description"):
                lines += [text(operation["description"]), ""]
            lines += ["#### Parameters", "", *self.parameters(operation)]
            lines += ["#### Responses", "", *self.responses(operation)]
        return lines

    def same_as_get(self, item: Json) -> bool:
        get, head = item["get"], item["head"]
        if get.get("parameters") != head.get("parameters"):
            return False
        if set(get["responses"]) != set(head["responses"]):
            return False
        for status, entry in get["responses"].items():
            one, other = self.resolve(entry), self.resolve(head["responses"][status])
            if one.get("description") != other.get("description"):
                return False
            if {n: self.resolve(h) for n, h in one.get("headers", {}).items()} != {
                n: self.resolve(h) for n, h in other.get("headers", {}).items()
            }:
                return False
        return True


def render(document: Json) -> str:
    reference = Reference(document)
    info = document["info"]
    lines = [
        f"Generated from the OpenAPI {document['openapi']} document **{text(info['title'])}**, "
        f"version `{info['version']}`, the one the gateway serves at `/v1/openapi.json`.",
        "",
        "## About this API {#about}",
        "",
    ]
    for paragraph in info.get("description", "").split("\n\n"):
        lines += [text(paragraph).replace("\\*\\*", "**"), ""]
    lines += ["## Authentication {#authentication}", ""]
    for name, scheme in document.get("components", {}).get("securitySchemes", {}).items():
        lines += [
            f"`{name}`: HTTP `{scheme.get('scheme', scheme.get('type'))}`. "
            + text(scheme.get("description", "")),
            "",
        ]
    lines += ["## Endpoints {#endpoints}", "", "| path | methods | summary |", "|---|---|---|"]
    for path, item in document["paths"].items():
        methods = [m for m in METHODS if m in item]
        summary = item[methods[0]].get("summary", "") if methods else ""
        lines.append(
            f"| [`{path}`](#{path_anchor(path)}) | {', '.join(m.upper() for m in methods)} "
            f"| {text(summary)} |"
        )
    lines.append("")
    for path, item in document["paths"].items():
        lines += reference.path_section(path, item)
    lines += ["## Schemas {#schemas}", ""]
    for name, schema in document.get("components", {}).get("schemas", {}).items():
        lines += reference.schema_section(name, schema)
    return "\n".join(lines)
