"""The seed data kept in the package is exactly the real fixtures' data."""

from __future__ import annotations

import csv
from importlib import resources

from tests.realdata import bcrp_recording, sunat_history

SEED = "sunat_usd_pen_2021-01-01_2026-09-21.csv"
CENTRALBANK_SEED = "bcrp_PD04639PD-PD04640PD_2026-09-01_2026-09-08.json"


def test_seed_csv_equals_the_real_fixture_value_for_value():
    text = resources.files("builder").joinpath("data", "seed", SEED).read_text()
    rows = list(csv.DictReader(text.splitlines()))
    expected = [
        {"fecha_serie": day.fecha.isoformat(), "compra": day.compra, "venta": day.venta}
        for day in sunat_history()
    ]
    assert rows == expected
    assert len(rows) == 1976


def test_seed_central_bank_answer_is_the_recorded_body_byte_for_byte():
    seed = resources.files("builder").joinpath("data", "seed", CENTRALBANK_SEED).read_bytes()
    assert seed == bcrp_recording().body
