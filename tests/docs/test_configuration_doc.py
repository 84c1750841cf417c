"""The configuration table of the docs is the settings code's: every variable, its exact default.

``builder.core.variables.SETTINGS`` declares each setting once (variable, ``Settings`` field,
default, help); the README's configuration table and ``docs/operating/configuration.md`` must
list exactly those variables with exactly those defaults, and each documented default must be
what ``load_settings`` really uses.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from builder.core.settings import Settings, load_settings
from builder.core.variables import SETTINGS

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "operating" / "configuration.md"
TABLES = (ROOT / "README.md", PAGE)  # every setting in each
VARIABLE = re.compile(r"\bFXEV_[A-Z0-9_]+\b")
# Packages whose every FXEV_* variable must be documented somewhere in docs/.
PACKAGES = ("builder", "gateway", "tokens", "verifier", "demo")


def documented(page: Path = PAGE) -> dict[str, str]:
    """variable -> default, from the rows of the page's table."""
    rows = re.findall(r"^\| `(FXEV_[A-Z0-9_]+)` \| ([^|]+?) \|", page.read_text(), re.MULTILINE)
    table = {name: default.strip().strip("`") for name, default in rows}
    assert len(table) == len(rows), "a variable is listed twice"
    return table


@pytest.mark.parametrize("page", TABLES, ids=lambda page: page.name)
def test_the_table_lists_exactly_the_settings_the_code_knows(page: Path) -> None:
    assert sorted(documented(page)) == sorted(setting.variable for setting in SETTINGS)


@pytest.mark.parametrize("page", TABLES, ids=lambda page: page.name)
def test_each_documented_default_is_the_code_default(page: Path) -> None:
    table = documented(page)
    for setting in SETTINGS:
        assert table[setting.variable] == setting.shown_default, setting.variable


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda setting: setting.variable)
def test_each_default_is_what_load_settings_uses(setting) -> None:  # type: ignore[no-untyped-def]
    defaults = load_settings({})
    if setting.default is None:
        assert getattr(defaults, setting.field) is None
    else:
        assert load_settings({setting.variable: setting.default}) == defaults


def test_every_settings_field_is_one_documented_setting() -> None:
    fields = [field.name for field in dataclasses.fields(Settings)]
    assert sorted(fields) == sorted(setting.field for setting in SETTINGS)


def test_the_settings_code_reads_no_variable_outside_its_table() -> None:
    source = (ROOT / "builder" / "core" / "settings.py").read_text(encoding="utf-8")
    assert set(VARIABLE.findall(source)) == {setting.variable for setting in SETTINGS}


def test_every_variable_the_code_reads_is_documented() -> None:
    docs = "\n".join(page.read_text(encoding="utf-8") for page in (ROOT / "docs").rglob("*.md"))
    named = set(VARIABLE.findall(docs))
    for package in PACKAGES:
        for module in (ROOT / package).rglob("*.py"):
            missing = set(VARIABLE.findall(module.read_text(encoding="utf-8"))) - named
            assert not missing, f"{module.relative_to(ROOT)} reads {sorted(missing)}"
