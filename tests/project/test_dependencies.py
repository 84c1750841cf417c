"""``constraints.txt`` pins every package ``make install`` puts in ``.venv``, so a clean clone
installs the set the suite passed with, whatever was released since
(docs/getting-started.md#versions).

These tests hold the pins to ``pyproject.toml`` (each requirement pinned, at a version it allows)
and to the environment the suite runs in (each pin installed as written): a pin nobody tested
would be a promise the suite never checked.
"""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


def pins() -> dict[str, Version]:
    pinned: dict[str, Version] = {}
    for number, line in enumerate((ROOT / "constraints.txt").read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        name, separator, version = line.partition("==")
        assert separator and version.strip(), f"constraints.txt:{number} is no NAME==VERSION pin"
        key = canonicalize_name(name)
        assert key not in pinned, f"constraints.txt:{number} pins {name} a second time"
        pinned[key] = Version(version)
    return pinned


def project() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def requirements() -> list[Requirement]:
    table = project()
    groups = [table["dependencies"], *table["optional-dependencies"].values()]
    return [Requirement(text) for group in groups for text in group]


def test_every_requirement_is_pinned_at_a_version_it_allows() -> None:
    pinned = pins()
    for requirement in requirements():
        version = pinned.get(canonicalize_name(requirement.name))
        assert version is not None, f"{requirement.name} is not pinned in constraints.txt"
        assert requirement.specifier.contains(version, prereleases=True), (
            f"constraints.txt pins {requirement.name}=={version}, outside {requirement}"
        )


def test_the_environment_under_test_is_the_one_pinned() -> None:
    drifted = []
    for name, version in pins().items():
        try:
            installed = Version(importlib.metadata.version(name))
        except importlib.metadata.PackageNotFoundError:
            drifted.append(f"{name}=={version} is not installed")
            continue
        if installed != version:
            drifted.append(f"{name}=={version} is pinned, {installed} installed")
    assert not drifted, "run make install (or make lock): " + "; ".join(drifted)


def test_the_project_itself_is_not_pinned() -> None:
    # pip refuses a constraint on the editable project being installed.
    assert canonicalize_name(project()["name"]) not in pins()
