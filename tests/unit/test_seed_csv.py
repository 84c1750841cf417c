"""The seed CSV kept in the package is exactly the real fixture's history, value for value."""

from __future__ import annotations

import csv
from importlib import resources

from tests.realdata import sunat_history

SEED = "sunat_usd_pen_2021-01-01_2026-09-21.csv"


def test_seed_csv_equals_the_real_fixture_value_for_value():
    text = resources.files("builder").joinpath("data", "seed", SEED).read_text()
    rows = list(csv.DictReader(text.splitlines()))
    expected = [
        {"fecha_serie": day.fecha.isoformat(), "compra": day.compra, "venta": day.venta}
        for day in sunat_history()
    ]
    assert rows == expected
    assert len(rows) == 1976
