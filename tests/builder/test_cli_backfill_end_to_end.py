"""``fxev backfill`` end to end: ``python -m builder backfill`` as a subprocess on a saved answer.

The saved answers are the tax authority's monthly history in its documented shape, built from
the real history (docs/sources.md#recordings). A recorded outcome, a failure
too, exits 0 with the capture shape as the last line of stdout; a request that cannot run exits
non-zero with one line on stderr and writes nothing.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import date
from pathlib import Path

import pytest

from tests.realdata import bcrp_recording, sunat_history
from tests.support.cli import Fxev, Ran, run

SHAPE = {"revision", "outcome", "observacion_id", "observaciones", "alerta", "alertas"}


def saved_month(path: Path, year: int, month: int, last_day: int = 31) -> Path:
    rows = [
        {"fecPublica": d.fecha.strftime("%d/%m/%Y"), "valTipo": value, "codTipo": side}
        for d in sunat_history()
        if (d.fecha.year, d.fecha.month) == (year, month) and d.fecha.day <= last_day
        for side, value in (("C", d.compra), ("V", d.venta))
    ]
    path.write_text(json.dumps(rows, separators=(",", ":")), encoding="utf-8")
    return path


@pytest.fixture
def fxev(tmp_path: Path) -> Fxev:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")}
    env.update({"FXEV_HOME": str(tmp_path / "home"), "FXEV_NOW": "2026-09-20T14:00:00-05:00"})

    def fxev_run(*args: str) -> Ran:
        return run([sys.executable, "-m", "builder", *args], tmp_path, env)

    return fxev_run


def backfill(*extra: str) -> tuple[str, ...]:
    return ("backfill", "--source", "taxauth_txt", *extra)


def test_a_saved_month_is_recorded_then_recaptured_and_bad_requests_change_nothing(
    fxev: Fxev, tmp_path: Path
) -> None:
    saved = saved_month(tmp_path / "septiembre.json", 2026, 9, last_day=20)
    span = ("--from", "2026-09-01", "--to", "2026-09-20", "--from-file", str(saved))

    first = fxev(*backfill(*span))
    assert first.code == 0, first.stderr
    result = first.last
    assert set(result) == SHAPE
    assert (result["revision"], result["outcome"], result["observacion_id"]) == (1, "nueva", None)
    assert [o["fecha_serie"] for o in result["observaciones"]] == [
        f"2026-09-{d:02d}" for d in range(1, 21)
    ]
    assert {o["serie"] for o in result["observaciones"]} == {"publicado"}
    assert (result["alerta"], result["alertas"]) == (None, [])

    again = fxev(*backfill(*span)).last
    assert (again["revision"], again["outcome"]) == (2, "identica")

    refused = [
        backfill("--from", "2026-09-20", "--to", "2026-09-01", "--from-file", str(saved)),
        backfill("--from", "2026-9-1", "--to", "2026-09-20", "--from-file", str(saved)),
        backfill("--from", "2026-09-01", "--to", "2026-09-20"),
        backfill("--from", "2026-08-01", "--to", "2026-09-20", "--from-file", str(saved)),
        backfill("--from", "2026-09-01", "--to", "2026-09-21", "--from-file", str(saved)),
        backfill("--from", "2026-09-01", "--to", "2026-09-20", "--from-file", "missing.json"),
        ("backfill", "--source", "centralbank", *span[:4], "--from-file", "missing.json"),
    ]
    for args in refused:
        ran = fxev(*args)
        assert ran.code != 0, args
        assert ran.stdout == "", args
        assert len(ran.stderr.splitlines()) == 1, (args, ran.stderr)
        assert ran.stderr.startswith("fxev: "), (args, ran.stderr)

    verified = fxev("registry", "verify")
    assert verified.code == 0
    assert verified.last == {"ok": True, "findings": []}


def test_a_silent_gap_is_alerted_and_the_operator_resolves_it(fxev: Fxev, tmp_path: Path) -> None:
    # docs/sources.md#which-days: the calendar lacks 27 to 30 July 2024; the 30th is a business day.
    saved = saved_month(tmp_path / "julio.json", 2024, 7)
    ran = fxev(*backfill("--from", "2024-07-01", "--to", "2024-07-31", "--from-file", str(saved)))
    assert ran.code == 0, ran.stderr
    alert = ran.last["alerta"]
    assert (alert["tipo"], alert["fuente"], alert["estado"]) == (
        "backfill_incompleto", "taxauth_txt", "abierta",
    )  # fmt: skip
    assert alert["detalle"]["fechas"] == ["2024-07-30"]
    assert len(ran.last["observaciones"]) == 27

    resolved = fxev("alerts", "resolve", alert["id"], "--actor", "ops")
    assert resolved.code == 0, resolved.stderr
    assert (resolved.last["estado"], resolved.last["resuelta_por"]) == ("resuelta", "ops")


def test_an_empty_answer_is_a_recorded_fallo_and_exits_0(fxev: Fxev, tmp_path: Path) -> None:
    saved = tmp_path / "vacio.json"
    saved.write_bytes(b"[]")
    day = date(2026, 9, 14).isoformat()
    bad = fxev(*backfill("--from", "2026-09-15", "--to", day, "--from-file", str(saved)))
    assert (bad.code, bad.stdout) == (1, "")
    assert bad.stderr == "fxev: --from 2026-09-15 is after --to 2026-09-14\n"
    assert not (tmp_path / "home").exists()  # refused before any store was opened

    ran = fxev(*backfill("--from", day, "--to", day, "--from-file", str(saved)))
    assert ran.code == 0, ran.stderr
    assert (ran.last["revision"], ran.last["outcome"]) == (1, "fallo")
    assert ran.last["alerta"]["tipo"] == "fuente_no_disponible"
    assert ran.last["observaciones"] == [
        {"fecha_serie": day, "serie": "publicado", "outcome": "fallo", "observacion_id": None}
    ]


def test_the_central_banks_saved_answer_is_read_instead_of_fetched(
    fxev: Fxev, tmp_path: Path
) -> None:
    """No central bank is configured here (the default URL is the real API, which this machine
    cannot reach): the recorded answer of 1-8 September 2026, saved, is all it reads."""
    saved = tmp_path / "bcrp.json"
    saved.write_bytes(bcrp_recording().body)
    span = ("--from", "2026-09-01", "--to", "2026-09-08", "--from-file", str(saved))
    ran = fxev("backfill", "--source", "centralbank", *span)
    assert ran.code == 0, ran.stderr
    assert (ran.last["revision"], ran.last["outcome"]) == (1, "nueva")
    assert [o["fecha_serie"] for o in ran.last["observaciones"]] == [
        "2026-09-01", "2026-09-02", "2026-09-03", "2026-09-04", "2026-09-07",
    ]  # fmt: skip
    assert {o["serie"] for o in ran.last["observaciones"]} == {"cierre"}
    again = fxev("backfill", "--source", "centralbank", *span)
    assert (again.last["revision"], again.last["outcome"]) == (2, "identica")
