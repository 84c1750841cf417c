"""Shared loader of the tax authority's (SUNAT) real USD/PEN history, 2021-01-01 to 2026-09-21.

The data is ``tests/fixtures/real/sunat_usd_pen_daily_2021-01-01_2026-09-21__ivanjoz_public-
business-data.json``, a copy of ``data/tipo-cambio-sunat-usd-pen.json`` from the public repository
``ivanjoz/public-business-data`` (commit ``85fb25e3a48bc444679bfd9f885419742eee57b2``), itself taken
from the public mirror ``api.apis.net.pe/v1/tipo-cambio-sunat`` of SUNAT's publication. Its origin,
size, checks and caveats are in ``tests/fixtures/real/SOURCES.md`` (section 3): 1,976 publication
dates, dates with no publication absent, and one anomaly as published (2021-05-13: compra 3.726
above venta 3.725).

The values are read with ``parse_float=Decimal`` (never floats) and kept as their exact decimal
text, as the JSON wrote them: a dropped trailing zero stays dropped (``3.36``, not ``3.360``).
Import it as ``from tests.realdata import SunatDay, sunat_history``; keep this interface stable.

The central bank's recorded answer (``bcrp_recording``) and the SBS sell history
(``sbs_venta_history``) are read from the same folder; their origins are in the same folder's
SOURCES.md (sections 1 and 2).
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import json
from datetime import date
from decimal import Decimal
from pathlib import Path

REAL_DIR = Path(__file__).resolve().parent / "fixtures" / "real"
SUNAT_JSON = (
    REAL_DIR / "sunat_usd_pen_daily_2021-01-01_2026-09-21__ivanjoz_public-business-data.json"
)
BCRP_CASSETTE = (
    REAL_DIR / "bcrp_api_PD04639PD-PD04640PD_json_2026-09-01_2026-09-08_ing__vcr_cassette.yml"
)
SBS_VENTA_CSV = REAL_DIR / "bcrp_PD04640PD_sbs_venta_daily_2026-01-19_2026-08-20__pen-radar.csv"


@dataclasses.dataclass(frozen=True, slots=True)
class SunatDay:
    """One publication date and its two values as exact decimal text (e.g. ``"3.36"``)."""

    fecha: date
    compra: str
    venta: str


def _decimal_text(value: object) -> str:
    if not isinstance(value, Decimal):
        raise TypeError(f"expected a JSON decimal number, got {value!r}")
    return format(value, "f")


@functools.cache
def _load() -> tuple[SunatDay, ...]:
    with SUNAT_JSON.open(encoding="utf-8") as handle:
        document = json.load(handle, parse_float=Decimal)
    days = tuple(
        SunatDay(
            fecha=date.fromisoformat(record["fecha"]),
            compra=_decimal_text(record["compra"]),
            venta=_decimal_text(record["venta"]),
        )
        for record in document["registros"]
    )
    fechas = [day.fecha for day in days]
    if fechas != sorted(set(fechas)):
        raise ValueError(f"{SUNAT_JSON.name}: dates are not strictly increasing")
    return days


def sunat_history() -> list[SunatDay]:
    """Every publication date of the real history, oldest first (a fresh list on each call)."""
    return list(_load())


@dataclasses.dataclass(frozen=True, slots=True)
class BcrpRecording:
    """The recorded request URI, response status and exact response body of the BCRP cassette."""

    uri: str
    status: int
    body: bytes


@functools.cache
def bcrp_recording() -> BcrpRecording:
    """Read the one interaction of the VCR cassette without a YAML library.

    The body is a YAML literal block (``string: |-``) indented by 8 spaces: its content is each
    line with those spaces removed, joined by LF, with no final line break (the ``-``).
    """
    lines = BCRP_CASSETTE.read_text(encoding="ascii").split("\n")
    (uri,) = (line.removeprefix("    uri: ") for line in lines if line.startswith("    uri: "))
    (status,) = (line.split(": ")[1] for line in lines if line.startswith("      code: "))
    opening = lines.index("      string: |-")
    block: list[str] = []
    for line in lines[opening + 1 :]:
        if line and not line.startswith(" " * 8):
            break
        block.append(line[8:])
    while block and not block[-1]:
        block.pop()
    return BcrpRecording(uri=uri, status=int(status), body="\n".join(block).encode("utf-8"))


@functools.cache
def _sbs_venta() -> tuple[tuple[date, str], ...]:
    with SBS_VENTA_CSV.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames != ["date", "usd_pen"]:
            raise ValueError(f"{SBS_VENTA_CSV.name}: header {reader.fieldnames}")
        return tuple((date.fromisoformat(row["date"]), row["usd_pen"]) for row in reader)


def sbs_venta_history() -> dict[date, str]:
    """BCRP PD04640PD (SBS sell) by SBS date, 2026-01-19 to 2026-08-20, as the CSV wrote it."""
    return dict(_sbs_venta())
