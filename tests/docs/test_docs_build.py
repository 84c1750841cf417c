"""The docs build with MkDocs in strict mode, and strict mode really fails on a broken docs tree.

A page left out of ``nav``, a link to a missing page or anchor: each is a warning that
``strict: true`` (``mkdocs.yml``) turns into a failed build. The planted breakages go into a copy
of the docs, never the working tree.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.openapi import DOCUMENT

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 200


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict``; run from the repository so the hooks import its packages."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_the_docs_build_strictly_with_the_api_reference_generated(tmp_path: Path) -> None:
    done = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert "openapi-reference" not in api
    for path, item in DOCUMENT["paths"].items():
        assert f"<code>{path}</code>" in api, path
        for operation in item.values():
            assert f"<code>{operation['operationId']}</code>" in api, operation["operationId"]
    for name in DOCUMENT["components"]["schemas"]:
        assert f'id="schema-{name.lower()}"' in api, name
    architecture = (tmp_path / "site" / "architecture" / "index.html").read_text(encoding="utf-8")
    assert "import-contracts" not in architecture
    assert "Nothing imports the gateway" in architecture


@pytest.fixture
def docs_copy(tmp_path: Path) -> Path:
    """A copy of what the build reads: the configuration, the pages and the hooks, pyproject."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", copy / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    return copy


def append(page: Path, text: str) -> None:
    page.write_text(page.read_text(encoding="utf-8") + text, encoding="utf-8")


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        ("link", "no-such-page.md"),
        ("anchor", "no-such-anchor"),
        ("orphan", "orphan.md"),
    ],
)
def test_a_strict_build_fails_on_a_broken_link_or_a_page_missing_from_nav(
    docs_copy: Path, tmp_path: Path, breakage: str, message: str
) -> None:
    docs = docs_copy / "docs"
    if breakage == "link":
        append(docs / "getting-started.md", "\nSee [this](no-such-page.md).\n")
    elif breakage == "anchor":
        append(docs / "getting-started.md", "\nSee [this](decisions.md#no-such-anchor).\n")
    else:
        (docs / "orphan.md").write_text("# Not in nav\n", encoding="utf-8")
    done = build(docs_copy / "mkdocs.yml", tmp_path / "site")
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert message in output, output


def test_the_readme_is_short_and_its_links_into_the_docs_resolve() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES
    targets = re.findall(r"\]\(((?:docs/)[^)#]+)(?:#[^)]*)?\)", readme)
    assert targets, "the README links into docs/"
    for target in targets:
        assert (ROOT / target).is_file(), target


def test_every_repository_path_the_docs_name_exists() -> None:
    """`builder/...`, `tests/...` and the like, in backticks: files move, the docs must follow."""
    named = re.compile(r"`((?:builder|gateway|tokens|verifier|bench|tests)/[\w./*-]+)`")
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for path in named.findall(page.read_text(encoding="utf-8")):
            assert list(ROOT.glob(path.rstrip("/"))), f"{page.relative_to(ROOT)} names {path}"
