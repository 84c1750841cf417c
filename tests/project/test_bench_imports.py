"""Every benchmark module imports: ``make test`` runs no benchmark, so a module the code moved
away from would otherwise fail only at the next ``make bench``."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
MODULES = sorted(p.stem for p in BENCH.glob("*.py") if not p.stem.startswith("__"))


def test_the_benchmarks_are_found() -> None:
    assert {"edge_load", "gateway_load", "fleet_gateway", "fleet_store"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_a_benchmark_module_imports(name: str) -> None:
    importlib.import_module(f"bench.{name}")
