"""Every shell example of the README and the docs, run against a real demo gateway.

The demo is seeded as ``make run`` seeds it (``python -m demo``, with the contract
tests' fixed ``FXEV_NOW``) and served by a real gateway on 127.0.0.1, once for this module. Each
example (a ``sh`` block followed by the ``json`` or ``text`` answer it prints; the convention is
in ``tests/docs/doc_examples.py``) runs in a fresh ``bash`` with ``FXEV_TOKEN`` set,
``http://127.0.0.1:8000`` replaced by the gateway's address and ``.venv/bin/fxev`` by this
interpreter's ``-m builder``; what it prints must be what the page shows, up to what differs per
install. An answer that changes makes its page stale, and this test fails.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.openapi import DOCUMENT
from tests.contract.conftest import Gateway, issue_token, seed_demo
from tests.docs import doc_examples
from tests.docs.doc_examples import Cut, Example, Mismatch, compare

EXAMPLES = doc_examples.all_examples()
RUN = [example for example in EXAMPLES if example.run]
STAND_IN = Path(__file__).with_name("curl_stand_in.py")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    base = tmp_path_factory.mktemp("docs-demo")
    env = seed_demo(base)
    _, token = issue_token(env, "docs")
    gateway = Gateway(env=env, token=token, log_path=base / "gateway.log")
    gateway.start()
    try:
        yield gateway
    finally:
        gateway.stop()


@pytest.fixture(scope="module")
def stand_in_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A PATH whose ``curl`` is the stand-in (``curl_stand_in.py``)."""
    folder = tmp_path_factory.mktemp("curl-stand-in")
    script = folder / "curl"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {STAND_IN} "$@"\n')
    script.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"


@pytest.fixture(scope="module")
def shell_path(stand_in_path: str) -> str:
    """The real curl when the host has it (as a reader does), else the stand-in."""
    path = os.environ.get("PATH", "")
    return path if shutil.which("curl", path=path) else stand_in_path


def run(example: Example, gateway: Gateway, cwd: Path, path: str) -> str:
    fxev = f"{shlex.quote(sys.executable)} -m builder"
    script = example.script.replace(doc_examples.DOC_BASE_URL, gateway.base_url)
    script = script.replace(".venv/bin/fxev", fxev)
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=cwd,
        env=gateway.env | {"FXEV_TOKEN": gateway.token, "PATH": path},
        capture_output=True,
        text=True,
        errors="replace",
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, (
        f"{example.id} exited {done.returncode}:\n{done.stderr}\n"
        f"--- gateway log (end) ---\n{gateway.log()[-3000:]}"
    )
    return done.stdout


def check(example: Example, gateway: Gateway, cwd: Path, path: str) -> None:
    printed = run(example, gateway, cwd, path)
    try:
        compare(example, printed)
    except Mismatch as mismatch:
        pytest.fail(
            f"{example.id}: the page shows another answer: {mismatch}\n--- printed ---\n{printed}",
            pytrace=False,
        )


@pytest.mark.parametrize("example", RUN, ids=lambda example: example.id)
def test_each_example_prints_what_its_page_shows(
    example: Example, demo: Gateway, tmp_path: Path, shell_path: str
) -> None:
    check(example, demo, tmp_path, shell_path)


@pytest.mark.parametrize(
    "example",
    [example for example in RUN if "curl -i" in example.script][:2],
    ids=lambda example: example.id,
)
def test_the_curl_stand_in_prints_what_the_pages_show(
    example: Example, demo: Gateway, tmp_path: Path, stand_in_path: str
) -> None:
    check(example, demo, tmp_path, stand_in_path)


# -- what the examples cover ------------------------------------------------------------------


def test_the_examples_are_found_and_cover_every_path_of_the_api() -> None:
    assert len(RUN) >= 25
    scripts = "\n".join(example.script for example in RUN)
    for path in DOCUMENT["paths"]:
        pattern = re.escape(path).replace(r"\{", "{").replace(r"\}", "}")
        pattern = re.sub(r"\{\w+\}", r"[^/?\"\\s]+", pattern)
        assert re.search(pattern + r"(?![\w/])", scripts), f"no example asks {path}"


def test_shell_blocks_type_the_installed_script() -> None:
    """A newcomer has no ``fxev`` on PATH: every shell block types ``.venv/bin/fxev``."""
    bare = re.compile(r"(?:^|[;&|(]|\$\()\s*fxev\s", re.MULTILINE)
    for page in doc_examples.pages():
        text = page.read_text(encoding="utf-8")
        for block in re.findall(r"^[ ]*```sh\n(.*?)^[ ]*```", text, re.MULTILINE | re.DOTALL):
            assert not bare.search(block), f"{page.name}: bare fxev in\n{block}"


# -- the comparison itself ----------------------------------------------------------------------

SHOWN = {
    "items": [
        {"id": "11111111-1111-4111-8111-111111111111", "v": "3.356"},
        {"id": "22222222-2222-4222-8222-222222222222", "v": "3.364"},
    ],
    "of": "11111111-1111-4111-8111-111111111111",
    "where": "GET http://127.0.0.1:8000/a",
    "ntp": "sincronizado",
}


def answer(**changes: object) -> dict[str, object]:
    got = json.loads(
        json.dumps(SHOWN)
        .replace("11111111-1111-4111-8111-111111111111", "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa")
        .replace("22222222-2222-4222-8222-222222222222", "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb")
        .replace("127.0.0.1:8000", "127.0.0.1:41234")
        .replace("sincronizado", "no_verificado")
    )
    got.update(changes)
    return got


def example(shown: object, cuts: dict[str, Cut] | None = None) -> Example:
    return Example("page.md", 1, "true", "json", json.dumps(shown), cuts or {}, True)


def test_ids_ports_and_the_clock_state_are_masked() -> None:
    compare(example(SHOWN), json.dumps(answer()))


@pytest.mark.parametrize(
    "changed",
    [
        {"items": [{"id": "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", "v": "3.357"}]},
        {"of": "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"},
        {"where": "GET http://127.0.0.1:41234/b"},
        {"extra": 1},
    ],
)
def test_a_changed_answer_is_a_mismatch(changed: dict[str, object]) -> None:
    with pytest.raises(Mismatch):
        compare(example(SHOWN), json.dumps(answer(**changed)))


def test_a_cut_array_compares_the_items_shown_and_the_full_length() -> None:
    shown = {"items": [{"n": 1}, {"n": 5}]}
    got = {"items": [{"n": n} for n in range(1, 6)]}
    cuts = doc_examples.parse_cuts("`items` cut: the first and last of 5 shown.")
    compare(example(shown, cuts), json.dumps(got))
    with pytest.raises(Mismatch):
        compare(example(shown, cuts), json.dumps({"items": got["items"][:4]}))
    first = doc_examples.parse_cuts("`items` cut: the first 2 of 5 shown.")
    compare(example({"items": [{"n": 1}, {"n": 2}]}, first), json.dumps(got))
    with pytest.raises(Mismatch):
        compare(example({"items": [{"n": 1}, {"n": 3}]}, first), json.dumps(got))
