"""The house's boundaries are import-linter contracts (``pyproject.toml``); these tests run them.

Each planted violation goes into a temporary copy of the packages, never the working tree, and
must break exactly the contract that names it: a contract that cannot fail protects nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("builder", "gateway", "tokens", "verifier", "demo", "bench")
LINT = Path(sys.executable).with_name("lint-imports")
# Source modules stay small; split by noun when one grows (docs/architecture.md).
MAX_MODULE_LINES = 400


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def broken(output: str) -> list[str]:
    """Names of the contracts the report marks BROKEN (a long name wraps onto the next line; a
    verdict may be followed by how many imports the contract ignores)."""
    summary = output.split("dependencies.", 1)[-1].split("Contracts:", 1)[0].strip("-\n ")
    words = " ".join(summary.split())
    verdicts = re.split(r" (KEPT|BROKEN)(?: \(\d+ ignored imports?\))?(?: |$)", words)
    return [
        verdicts[i].strip() for i in range(0, len(verdicts) - 1, 2) if verdicts[i + 1] == "BROKEN"
    ]


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("house")
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def test_every_contract_is_kept() -> None:
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "planted", "contract"),
    [
        ("gateway/api/params.py", "import builder.registry.store", "The gateway reads the tree"),
        ("gateway/api/params.py", "import builder.capture.fetch", "The gateway reads the tree"),
        ("builder/core/canonical.py", "import builder.tree.reader", "The core imports no other"),
        ("verifier/client.py", "import builder.capture.run", "The consumer's verifier"),
        ("verifier/client.py", "import builder.fleet.topology", "The consumer's verifier"),
        ("builder/tree/reader.py", "import builder.publish.writer", "The write side flows one"),
        ("tokens/store.py", "import gateway.errors", "Nothing imports the gateway"),
        ("demo/__init__.py", "import bench.wrk", "Nothing imports the benchmarks"),
        ("demo/__init__.py", "import gateway.app", "Nothing imports the gateway"),
        ("builder/fleet/topology.py", "import demo", "Nothing imports the demo"),
        ("bench/serve.py", "import demo", "Nothing imports the demo"),
        ("builder/cli.py", "import tokens.cli", "The write side adds no token"),
        ("builder/publish/build.py", "import verifier.checks", "The write side adds no token"),
        ("gateway/http/sending.py", "import gateway.handlers.routes", "The gateway flows one way"),
        ("gateway/limits/rule.py", "import gateway.fleet.gate", "The gateway flows one way"),
        ("gateway/errors.py", "import gateway.app", "No import cycles"),
    ],
)
def test_a_planted_violation_breaks_its_contract(
    copy: Path, module: str, planted: str, contract: str
) -> None:
    path = copy / module
    original = path.read_text()
    path.write_text(original + f"\n{planted}  # planted by the test\n")
    try:
        result = lint(copy)
    finally:
        path.write_text(original)
    assert result.returncode == 1, result.stdout + result.stderr
    names = broken(result.stdout)
    assert any(name.startswith(contract) for name in names), (names, result.stdout)


def test_the_copy_without_plants_is_clean(copy: Path) -> None:
    """The planted failures above come from the plant, not from the copy itself."""
    result = lint(copy)
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_source_module_is_over_the_size_limit() -> None:
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines())
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
    }
    assert {p: n for p, n in sizes.items() if n > MAX_MODULE_LINES} == {}
