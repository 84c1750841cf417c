"""The API's enumerated values are spelt once, in ``builder/core/vocabulary.py``
(docs/architecture.md#package-layout): every other module names them, so the mapping between
the spec's words and the code is one place to audit, and the OpenAPI document's ``enum`` lists
are the very tuples the code writes from."""

from __future__ import annotations

import ast
from pathlib import Path

from builder.core import vocabulary

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("builder", "gateway", "tokens", "verifier", "demo")
HOME = ROOT / "builder" / "core" / "vocabulary.py"
# Words no other use shares; "ok", "fallo" and the source names are ordinary words elsewhere.
SPELT_ONCE = frozenset(
    vocabulary.ALERT_TYPES
    + vocabulary.ALERT_STATES
    + vocabulary.FRESHNESS_STATES
    + vocabulary.NTP_STATES
    + (vocabulary.SIN_DATO, vocabulary.ND_FUENTE, vocabulary.DISCREPANTE)
)


def spellings(path: Path) -> list[tuple[int, str]]:
    """(line, word) of each string constant of ``path`` that is an enumerated value, but in a
    ``Literal[...]`` type, which can only spell its values."""
    tree = ast.parse(path.read_text(), str(path))
    in_types = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript) and getattr(node.value, "id", None) == "Literal"
        for inner in ast.walk(node.slice)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if node.value in SPELT_ONCE and id(node) not in in_types
    ]


def test_no_module_but_the_vocabulary_spells_an_enumerated_value() -> None:
    found = {
        f"{path.relative_to(ROOT)}:{line}": word
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != HOME
        for line, word in spellings(path)
    }
    assert found == {}


def test_the_scan_sees_a_spelling(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        'STATE = "reconocida"\nKind = Literal["ok", "discrepante"]\nALSO = {"disco": 1}\n'
    )
    assert sorted(spellings(planted)) == [(1, "reconocida"), (3, "disco")]
