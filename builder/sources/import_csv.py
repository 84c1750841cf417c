"""The import CSV (``fxev import``): header ``fecha_serie,compra,venta[,moneda,serie]``. Pure.

The whole file is validated before anything is written: one bad line rejects the file with its
line number (``ImportFileError``).
"""

from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Iterator
from datetime import date

from builder.core.canonical import canonical_rate, iso_date
from builder.core.errors import NotFound, UsageError
from builder.core.vocabulary import CURRENCY, IMPORTADO, SERIES
from builder.sources.common import InvariantError, ParsedRate, check_rate_invariants

FUENTE = IMPORTADO
PARSER_VERSION = "importado_csv-1.0"
CONTENT_TYPE = "text/csv"
REQUIRED = ("fecha_serie", "compra", "venta")
OPTIONAL = ("moneda", "serie")
LINE_ENDS = ("\r\n", "\n", "\r")


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
    # The physical lines as the reader takes them (ends at CR, LF or CRLF only, kept), so that a
    # row's text is the lines it was read from, a quoted line break included.
    lines = list(io.StringIO(text, newline=""))
    reader = csv.DictReader(iter(lines), strict=True)
    try:
        header = reader.fieldnames or []
    except csv.Error as error:
        raise ImportFileError(f"line 1: {error}") from None
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
    for number, record in records(reader, lines):
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
        rate = ParsedRate(
            fecha, compra, venta, without_line_end("".join(lines[number - 1 : reader.line_num]))
        )
        try:
            check_rate_invariants(rate, today_lima)
        except InvariantError as error:
            raise ImportFileError(f"line {number}: {error}") from None
        rows.append(ImportRow(number, moneda, serie, rate))
    if not rows:
        raise ImportFileError("the file has no data lines")
    return rows


def records(reader: csv.DictReader[str], lines: list[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """Each record with the line it starts on (past the empty lines the reader skips); what the
    reader refuses (a quote left open, text after a closing quote, a cell over its size limit)
    is an ``ImportFileError`` naming the line it stopped on."""
    while True:
        start = reader.line_num + 1
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            # (``DictReader.line_num`` is set only once a record is read: ask its reader)
            raise ImportFileError(f"line {reader.reader.line_num}: {error}") from None
        while start < reader.line_num and lines[start - 1] in LINE_ENDS:
            start += 1
        yield start, record


def without_line_end(text: str) -> str:
    """``text`` without the one line end it closes with (CRLF, LF or CR)."""
    for end in LINE_ENDS:
        if text.endswith(end):
            return text[: -len(end)]
    return text
