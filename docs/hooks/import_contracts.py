"""MkDocs hook: the import-linter contracts of ``pyproject.toml``, listed in ``architecture.md``.

``docs/architecture.md`` holds a marker line, ``<!-- import-contracts -->``; this hook replaces
it with a table of every contract under ``[tool.importlinter]``, read when the docs are built,
so the page shows the boundaries ``make lint`` enforces, never a copy of them.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

PAGE = "architecture.md"
MARKER = "<!-- import-contracts -->"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise PluginError(f"{PAGE} lost its marker line {MARKER}")
    pyproject = Path(config.config_file_path).parent / "pyproject.toml"
    settings = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    contracts = settings.get("tool", {}).get("importlinter", {}).get("contracts", [])
    if not contracts:
        raise PluginError(f"{pyproject} declares no import-linter contract")
    return markdown.replace(MARKER, render(contracts))


def modules(names: list[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def rule(contract: dict[str, Any]) -> str:
    kind = contract["type"]
    if kind == "forbidden":
        return (
            f"{modules(contract['source_modules'])} may not import "
            f"{modules(contract['forbidden_modules'])}"
        )
    if kind == "layers":
        layers = " -> ".join(
            " \\| ".join(f"`{part.strip()}`" for part in layer.split("|"))
            for layer in contract["layers"]
        )
        inside = modules(contract.get("containers", []))
        return (
            f"inside {inside}, from top to bottom, a layer may import only the layers below it "
            f"(names joined by \\| do not import each other): {layers}"
        )
    if kind == "independence":
        return f"{modules(contract['modules'])} do not import each other"
    if kind == "acyclic_siblings":
        return f"no import cycle between sibling modules under {modules(contract['ancestors'])}"
    details = ", ".join(f"{key}: {value}" for key, value in contract.items() if key != "name")
    return details.replace("|", "\\|")


def render(contracts: list[dict[str, Any]]) -> str:
    lines = ["| contract | type | rule |", "|---|---|---|"]
    for contract in contracts:
        lines.append(f"| {contract['name']} | `{contract['type']}` | {rule(contract)} |")
    return "\n".join(lines) + "\n"
