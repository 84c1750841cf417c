"""Strict reading of a JSON answer that keeps the exact text of each element.

The sources' JSON answers are evidence: each recorded date's ``fragmento`` must be the very text
the source sent for it. The standard decoder reads every value (decimals as ``Decimal``, never a
float); these helpers walk the text around it to know where each array element starts and ends.
Anything that is not strict JSON (``NaN``, a repeated key, text after the document) raises
``SourceFormatError``.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

from builder.sources.common import SourceFormatError

_WHITESPACE = re.compile(r"[ \t\n\r]*")


def answer_text(body: bytes, known_pages: dict[str, str]) -> str:
    """``body`` as the text of a JSON answer: not empty, UTF-8, and not an HTML page. An HTML
    page is named by the first of ``known_pages`` (a marker its text holds -> what the page is)
    it holds, so the failure says which page the source sent."""
    if not body.strip():
        raise SourceFormatError("body is empty")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SourceFormatError(f"body is not UTF-8 text: {error}") from None
    if text.lstrip(" \t\r\n").startswith("<"):
        page = next((name for marker, name in known_pages.items() if marker in text), None)
        hint = "" if page is None else f" ({page})"
        raise SourceFormatError(f"body is an HTML page, not JSON{hint}")
    return text


def _refuse_constant(name: str) -> Any:
    raise SourceFormatError(f"JSON constant {name} is not valid JSON")


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise SourceFormatError(f"JSON object repeats the key {key!r}")
        result[key] = value
    return result


_DECODER = json.JSONDecoder(
    parse_float=Decimal,
    parse_constant=_refuse_constant,
    object_pairs_hook=_refuse_duplicate_keys,
)


def skip(text: str, pos: int) -> int:
    """The position after any JSON white space at ``pos``."""
    match = _WHITESPACE.match(text, pos)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def expect(text: str, pos: int, token: str, what: str) -> int:
    """The position after ``token``, which must stand at ``pos``."""
    if not text.startswith(token, pos):
        found = text[pos : pos + 20] or "end of body"
        raise SourceFormatError(f"invalid JSON: expected {token!r} {what} at char {pos}: {found!r}")
    return pos + len(token)


def value_at(text: str, pos: int, what: str) -> tuple[Any, int]:
    """The JSON value starting at ``pos`` and the position after it."""
    try:
        return _DECODER.raw_decode(text, pos)
    except SourceFormatError as error:  # from the hooks: a repeated key, NaN, Infinity
        raise SourceFormatError(f"{what}: {error}") from None
    except json.JSONDecodeError as error:
        raise SourceFormatError(
            f"invalid JSON in {what}: {error.msg} at char {error.pos}"
        ) from None
    except RecursionError:
        raise SourceFormatError(f"invalid JSON in {what}: nested too deeply") from None


def array_elements(text: str, pos: int, name: str, item: str) -> tuple[list[tuple[Any, str]], int]:
    """Each element of the array at ``pos`` with its exact text; the position after the array.

    ``name`` says which array it is and ``item`` what an element is, for messages.
    """
    pos = skip(text, expect(text, pos, "[", f"to open {name} (an array)"))
    elements: list[tuple[Any, str]] = []
    if text.startswith("]", pos):
        return elements, pos + 1
    while True:
        value, end = value_at(text, pos, f"{item} {len(elements) + 1}")
        elements.append((value, text[pos:end]))
        pos = skip(text, end)
        if text.startswith(",", pos):
            pos = skip(text, pos + 1)
            continue
        return elements, expect(text, pos, "]", f"or ',' after {item} {len(elements)}")


def expect_end(text: str, pos: int, what: str) -> None:
    """Nothing but white space may follow the document that ended at ``pos``."""
    pos = skip(text, pos)
    if pos != len(text):
        tail = text[pos : pos + 40]
        kind = "an HTML fragment" if tail.startswith("<") else "more text"
        raise SourceFormatError(f"{kind} follows the {what} at char {pos}: {tail!r}")
