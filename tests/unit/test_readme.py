"""The README documents every setting the code reads, with the code's defaults, and its JSON
examples are valid JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

from builder.core.settings import SETTINGS_HELP, load_settings

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_settings() -> dict[str, str]:
    rows = re.findall(r"^\| `(FXEV_[A-Z_]+)` \| (.+?) \|", README.read_text(), re.MULTILINE)
    return {name: default.strip("`") for name, default in rows}


def test_readme_configuration_table_lists_exactly_the_settings_the_code_reads():
    assert set(readme_settings()) == set(SETTINGS_HELP)


def test_readme_defaults_match_the_code():
    documented = readme_settings()
    for name, (default, _help) in SETTINGS_HELP.items():
        assert documented[name] == default, name


def test_every_documented_default_is_what_load_settings_gives_for_an_empty_environment():
    settings = load_settings({})
    assert str(settings.home) == "var"
    assert str(settings.site) == "site_out"
    assert settings.rate_limit_per_min == 60
    assert settings.rate_limit_per_day == 5000
    assert settings.sources == ("taxauth_txt", "centralbank")
    assert settings.max_body_bytes == 1048576
    assert settings.now is None and settings.proxy is None and settings.token is None


def test_every_json_example_in_the_readme_parses():
    """Examples are cut by leaving elements out, never by an ellipsis inside the JSON."""
    blocks = re.findall(r"^```json\n(.*?)^```$", README.read_text(), re.MULTILINE | re.DOTALL)
    assert len(blocks) >= 12
    for block in blocks:
        json.loads(block)
