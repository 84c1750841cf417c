"""The docs' shell examples: found in the Markdown, run, and their answers compared.

An **example** is a fenced ``sh`` block followed, with only blank lines between, by a fenced
``json`` or ``text`` block: the answer the block prints. Every example is run (``tests/docs/
test_examples.py``) unless the line just before its ``sh`` fence is ``<!-- not run: REASON -->``.
Each block runs on its own in a fresh ``bash``, so it must define every variable it uses
(``FXEV_TOKEN`` excepted) and print only the answer shown.

The answer shown and the answer got are compared after masking what differs per install:

* UUIDs and 64-digit hex digests are matched up to a consistent renaming: the same id in the docs
  must be the same id in the answer, and two different ones must stay different;
* the port after ``127.0.0.1:`` (the demo's local source server, or the gateway's);
* the signature part of a ``next_page_token`` (signed with the installation's secret);
* the value of ``ntp`` (the host's clock synchronisation) and of the ``Date`` and
  ``Repr-Digest`` headers.

JSON is compared as values (indentation and key order are free). An array the docs cut is named
in the paragraph right after the block, in one of these forms, and only the items shown are
compared, and the array's full length with ``M``::

    `items` cut: the first and last of 7 shown.
    `huecos` cut: the first 3 of 55 shown.
    `cadena.ancestros` cut: the last of 2 shown.

The name is the key, or the keys from an enclosing object, joined by dots (list positions left
out). A ``text`` answer that starts with ``HTTP/`` is a ``curl -i`` head: its status line is
compared exactly, its headers as a set (names in any case), then its body as JSON or as text.
Other ``text`` answers are compared line by line.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
DOC_BASE_URL = "http://127.0.0.1:8000"
NOT_RUN = re.compile(r"^<!-- not run: .+ -->$")
_FENCE = re.compile(
    r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)[ ]*\n(?P<body>.*?)^(?P=indent)```[ ]*$",
    re.MULTILINE | re.DOTALL,
)
_CUT = re.compile(
    r"`(?P<path>[\w.]+)` cut: the (?P<which>first and last|first(?: (?P<first>\d+))?|"
    r"last(?: (?P<last>\d+))?) of (?P<total>[\d,]+) shown"
)
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
HEX64 = re.compile(r"(?<![0-9a-fA-F])[0-9a-f]{64}(?![0-9a-fA-F])")
_PORT = re.compile(r"127\.0\.0\.1:\d+")
_PAGE_TOKEN_SIG = re.compile(r"\b([1-9][0-9]*\.(?:0|[1-9][0-9]*)\.)[A-Za-z0-9_-]{43}(?![\w-])")
MASKED_KEYS = frozenset({"ntp"})
MASKED_HEADERS = frozenset({"date", "repr-digest"})


@dataclasses.dataclass(frozen=True)
class Cut:
    which: str  # "first", "last" or "first and last"
    shown: int
    total: int


@dataclasses.dataclass(frozen=True)
class Example:
    page: str  # relative to the repository root
    line: int  # of the sh fence, 1-based
    script: str
    lang: str  # of the answer block: json or text
    answer: str
    cuts: dict[str, Cut]
    run: bool

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """Every page whose examples are checked: the README and the docs."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def _dedent(body: str, indent: str) -> str:
    return "".join(line.removeprefix(indent) for line in body.splitlines(keepends=True))


def parse_cuts(text: str) -> dict[str, Cut]:
    cuts = {}
    for found in _CUT.finditer(" ".join(text.split())):
        which = found["which"]
        if which == "first and last":
            shown = 2
        else:
            shown = int(found["first"] or found["last"] or 1)
            which = which.split()[0]
        cuts[found["path"]] = Cut(which, shown, int(found["total"].replace(",", "")))
    return cuts


def examples_in(text: str, page: str) -> Iterator[Example]:
    fences = list(_FENCE.finditer(text))
    for here, answer in itertools.pairwise(fences):
        if here["lang"] != "sh" or answer["lang"] not in ("json", "text"):
            continue
        if text[here.end() : answer.start()].strip():
            continue
        before = text[: here.start()].rstrip().splitlines()
        run = not (before and NOT_RUN.match(before[-1].strip()))
        after = text[answer.end() :]
        stop = re.search(r"^(```|#)", after, re.MULTILINE)
        following = after[: stop.start() if stop else len(after)]
        paragraph = following.strip().split("\n\n")[0]
        yield Example(
            page=page,
            line=text.count("\n", 0, here.start()) + 1,
            script=_dedent(here["body"], here["indent"]),
            lang=answer["lang"],
            answer=_dedent(answer["body"], answer["indent"]),
            cuts=parse_cuts(paragraph),
            run=run,
        )


def all_examples() -> list[Example]:
    found = []
    for path in pages():
        found.extend(examples_in(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT))))
    return found


# -- comparison ---------------------------------------------------------------------------------


class Mismatch(AssertionError):
    pass


class Renaming:
    """A one-to-one renaming of per-install ids between the docs and the answer."""

    def __init__(self) -> None:
        self.forward: dict[str, str] = {}
        self.backward: dict[str, str] = {}

    def pair(self, shown: str, got: str, where: str) -> None:
        shown, got = shown.lower(), got.lower()
        if (
            self.forward.setdefault(shown, got) != got
            or self.backward.setdefault(got, shown) != shown
        ):
            raise Mismatch(
                f"{where}: id {shown} is shown where the answer has {got}, "
                "but elsewhere in this answer the docs pair them otherwise"
            )


def _mask_scalar(text: str) -> str:
    text = _PORT.sub("127.0.0.1:<port>", text)
    return _PAGE_TOKEN_SIG.sub(r"\1<signature>", text)


def compare_strings(shown: str, got: str, renaming: Renaming, where: str) -> None:
    ids = re.compile(f"{UUID.pattern}|{HEX64.pattern}")
    shown_ids, got_ids = ids.findall(shown), ids.findall(got)
    if len(shown_ids) != len(got_ids):
        raise Mismatch(f"{where}: {shown!r} shown, {got!r} answered")
    for one, other in zip(shown_ids, got_ids, strict=True):
        renaming.pair(one, other, where)
    if _mask_scalar(ids.sub("<id>", shown)) != _mask_scalar(ids.sub("<id>", got)):
        raise Mismatch(f"{where}: {shown!r} shown, {got!r} answered")


def _key_path(path: tuple[str, ...]) -> str:
    return ".".join(path)


def _cut_for(path: tuple[str, ...], cuts: dict[str, Cut]) -> tuple[str, Cut] | None:
    joined = _key_path(path)
    for name, cut in cuts.items():
        if joined == name or joined.endswith("." + name):
            return name, cut
    return None


def compare_json(
    shown: Any,
    got: Any,
    cuts: dict[str, Cut],
    renaming: Renaming,
    path: tuple[str, ...] = (),
    used: set[str] | None = None,
) -> None:
    where = _key_path(path) or "the body"
    if isinstance(shown, dict):
        if not isinstance(got, dict):
            raise Mismatch(f"{where}: an object shown, {type(got).__name__} answered")
        if set(shown) != set(got):
            raise Mismatch(
                f"{where}: keys {sorted(set(shown) - set(got))} shown but not answered, "
                f"{sorted(set(got) - set(shown))} answered but not shown"
            )
        for key in shown:
            if key in MASKED_KEYS:
                continue
            compare_json(shown[key], got[key], cuts, renaming, (*path, key), used)
        return
    if isinstance(shown, list):
        if not isinstance(got, list):
            raise Mismatch(f"{where}: an array shown, {type(got).__name__} answered")
        named = _cut_for(path, cuts)
        if named is not None:
            name, cut = named
            if used is not None:
                used.add(name)
            if len(got) != cut.total:
                raise Mismatch(
                    f"{where}: the docs say {cut.total} items, the answer has {len(got)}"
                )
            if len(shown) != cut.shown:
                raise Mismatch(
                    f"{where}: the docs say {cut.shown} shown, the block has {len(shown)}"
                )
            if cut.which == "first":
                got = got[: cut.shown]
            elif cut.which == "last":
                got = got[-cut.shown :]
            else:
                got = [got[0], got[-1]]
        if len(shown) != len(got):
            raise Mismatch(f"{where}: {len(shown)} items shown, {len(got)} answered (cut it?)")
        for one, other in zip(shown, got, strict=True):
            compare_json(one, other, cuts, renaming, path, used)
        return
    if isinstance(shown, str) and isinstance(got, str):
        compare_strings(shown, got, renaming, where)
        return
    if type(shown) is not type(got) or shown != got:
        raise Mismatch(f"{where}: {shown!r} shown, {got!r} answered")


def compare_json_text(shown: str, got: str, cuts: dict[str, Cut], renaming: Renaming) -> None:
    try:
        answered = json.loads(got)
    except ValueError:
        raise Mismatch(f"the docs show JSON, the command printed:\n{got}") from None
    used: set[str] = set()
    compare_json(json.loads(shown), answered, cuts, renaming, used=used)
    unused = set(cuts) - used
    if unused:
        raise Mismatch(f"cut named but no such array in the answer: {sorted(unused)}")


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.replace("\r\n", "\n").strip("\n").split("\n")]


def compare_text(shown: str, got: str, renaming: Renaming) -> None:
    shown_lines, got_lines = _lines(shown), _lines(got)
    if len(shown_lines) != len(got_lines):
        raise Mismatch(
            f"{len(shown_lines)} lines shown, {len(got_lines)} printed:\n" + "\n".join(got_lines)
        )
    for number, (one, other) in enumerate(zip(shown_lines, got_lines, strict=True), 1):
        compare_strings(one, other, renaming, f"line {number}")


def _http(text: str) -> tuple[str, dict[str, str], str]:
    head, _, body = text.replace("\r\n", "\n").partition("\n\n")
    status, *fields = head.strip("\n").split("\n")
    headers: dict[str, str] = {}
    for field in fields:
        name, _, value = field.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status.strip(), headers, body


def compare_http(shown: str, got: str, cuts: dict[str, Cut], renaming: Renaming) -> None:
    shown_status, shown_headers, shown_body = _http(shown)
    got_status, got_headers, got_body = _http(got)
    if shown_status != got_status:
        raise Mismatch(f"status {shown_status!r} shown, {got_status!r} answered")
    if set(shown_headers) != set(got_headers):
        raise Mismatch(
            f"headers {sorted(set(shown_headers) - set(got_headers))} shown but not answered, "
            f"{sorted(set(got_headers) - set(shown_headers))} answered but not shown"
        )
    for name, value in shown_headers.items():
        if name not in MASKED_HEADERS:
            compare_strings(value, got_headers[name], renaming, f"header {name}")
    if not shown_body.strip():
        if got_body.strip():
            raise Mismatch(f"no body shown, the answer has one:\n{got_body}")
        return
    try:
        json.loads(shown_body)
    except ValueError:
        compare_text(shown_body, got_body, renaming)
    else:
        compare_json_text(shown_body, got_body, cuts, renaming)


def compare(example: Example, printed: str) -> None:
    """Raise ``Mismatch`` when what the example printed is not what its page shows."""
    renaming = Renaming()
    if example.lang == "json":
        compare_json_text(example.answer, printed, example.cuts, renaming)
    elif example.answer.startswith("HTTP/"):
        compare_http(example.answer, printed, example.cuts, renaming)
    else:
        compare_text(example.answer, printed, renaming)
