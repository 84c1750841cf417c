"""The import CSV (``fxev import``): header ``fecha_serie,compra,venta[,moneda,serie]``. Pure.

The whole file is validated before anything is written: one bad line rejects the file with its
line number (``ImportFileError``).
"""

from __future__ import annotations

import csv
import dataclasses
import io
from datetime import date

from builder.core.canonical import canonical_rate, iso_date
from builder.core.errors import NotFound, UsageError
from builder.core.vocabulary import CURRENCY, SERIES
from builder.sources.common import InvariantError, ParsedRate, check_rate_invariants

FUENTE = "importado"
PARSER_VERSION = "importado_csv-1.0"
CONTENT_TYPE = "text/csv"
REQUIRED = ("fecha_serie", "compra", "venta")
OPTIONAL = ("moneda", "serie")


class ImportFileError(UsageError, ValueError):
    """The file cannot be imported; the message names the line."""


class ImportFileUnreadable(ImportFileError, NotFound):
    """The file named cannot be read (missing, a folder, no permission)."""


@dataclasses.dataclass(frozen=True, slots=True)
class ImportRow:
    line: int
    moneda: str
    serie: str
    rate: ParsedRate


def parse_import_csv(data: bytes, today_lima: date) -> list[ImportRow]:
    """Validate the whole file; raise ``ImportFileError`` naming the first bad line."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ImportFileError("the file is not UTF-8 text") from None
    lines = text.splitlines()
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    missing = [name for name in REQUIRED if name not in header]
    unknown = [name for name in header if name not in REQUIRED + OPTIONAL]
    if missing or unknown:
        raise ImportFileError(
            f"line 1: header must be fecha_serie,compra,venta[,moneda,serie]; "
            f"missing {missing or '-'}, unknown {unknown or '-'}"
        )
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise ImportFileError(f"line 1: header repeats {', '.join(repeated)}")
    rows: list[ImportRow] = []
    seen: set[tuple[str, str, str]] = set()
    for record in reader:
        number = reader.line_num
        extra = record.pop(None, None) or []  # type: ignore[call-overload]  # cells past the header
        given = sum(value is not None for value in record.values())  # fewer cells: None
        if extra or given != len(header):
            raise ImportFileError(
                f"line {number}: {given + len(extra)} values for a header of {len(header)} columns"
            )
        moneda = (record.get("moneda") or CURRENCY).strip()
        serie = (record.get("serie") or "publicado").strip()
        if moneda != CURRENCY:
            raise ImportFileError(f"line {number}: moneda must be USD, got {moneda!r}")
        if serie not in SERIES:
            raise ImportFileError(
                f"line {number}: serie must be publicado or cierre, got {serie!r}"
            )
        try:
            fecha = iso_date((record.get("fecha_serie") or "").strip())
            compra = (record.get("compra") or "").strip()
            venta = (record.get("venta") or "").strip()
            canonical_rate(compra)
            canonical_rate(venta)
        except ValueError as error:
            raise ImportFileError(f"line {number}: {error}") from None
        key = (moneda, serie, fecha.isoformat())
        if key in seen:
            raise ImportFileError(f"line {number}: {fecha} appears twice for {serie}")
        seen.add(key)
        rate = ParsedRate(fecha, compra, venta, lines[number - 1])
        try:
            check_rate_invariants(rate, today_lima)
        except InvariantError as error:
            raise ImportFileError(f"line {number}: {error}") from None
        rows.append(ImportRow(number, moneda, serie, rate))
    if not rows:
        raise ImportFileError("the file has no data lines")
    return rows
