"""Re-parse an observation's evidence bytes with the parser that produced it (pure).

An observation names its parser as ``version_parser`` (``<name>-<version>``). This install can
re-parse only with the same name *and* version: a different version might read the bytes
differently, so :func:`reparse` refuses (``ReparseRefused``) rather than compare values a
different parser produced. Bytes that the parser rejects, or that hold no value for the
observation's date, raise ``ReparseMismatch``: the evidence does not back the observation.

What the parser needs besides the bytes comes from the observation itself: the capture
instant (the parser's "today in Lima", for its date invariant), the query identity (the
central bank's requested range, the monthly history's year and month) and, for an import, the
line number its ``importada`` event recorded.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import date

from builder.core.business_days import today_in_lima
from builder.core.canonical import parse_utc_timestamp
from builder.sources import centralbank, import_csv, taxauth_monthly, taxauth_txt
from builder.sources.common import InvariantError, ParsedRate, SourceFormatError
from builder.sources.import_csv import ImportFileError, parse_import_csv

INSTALLED_PARSERS: dict[str, str] = {
    version.rsplit("-", 1)[0]: version
    for version in (
        taxauth_txt.PARSER_VERSION,
        centralbank.PARSER_VERSION,
        taxauth_monthly.PARSER_VERSION,
        import_csv.PARSER_VERSION,
    )
}
_RANGE = re.compile(r"/json/([0-9]{4}-[0-9]{2}-[0-9]{2})/([0-9]{4}-[0-9]{2}-[0-9]{2})(?:/|$)")
_MONTH = re.compile(r"[?&]anio=([0-9]{4})&mes=([0-9]{1,2})$")


class ReparseRefused(Exception):
    """This install cannot re-parse the bytes faithfully (unknown parser or another version)."""


class ReparseMismatch(Exception):
    """The bytes, re-parsed, do not yield a value for the observation's date."""


@dataclasses.dataclass(frozen=True, slots=True)
class Reparsed:
    """What the bytes say for one date, in the observation's field names."""

    fecha_serie: str
    compra: str
    venta: str
    compra_cruda: str
    venta_cruda: str
    fragmento: str

    @classmethod
    def of(cls, rate: ParsedRate) -> Reparsed:
        return cls(
            rate.fecha_serie.isoformat(),
            rate.compra,
            rate.venta,
            rate.compra_cruda,
            rate.venta_cruda,
            rate.fragmento,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class ReparseInput:
    version_parser: str
    identidad_consulta: str
    capturado_en: str
    fecha_serie: str
    linea: int | None = None  # an import's line, from its importada event


def installed_version(version_parser: str) -> str | None:
    """This install's version of the parser an observation names, or None if it has none."""
    return INSTALLED_PARSERS.get(version_parser.rsplit("-", 1)[0])


def reparse(body: bytes, given: ReparseInput) -> Reparsed:
    """The value the bytes hold for ``given.fecha_serie``, parsed as at capture."""
    installed = installed_version(given.version_parser)
    if installed is None:
        raise ReparseRefused(f"parser {given.version_parser} is not in this install")
    if installed != given.version_parser:
        raise ReparseRefused(
            f"observation was parsed by {given.version_parser}; this install has {installed}"
        )
    try:
        today = today_in_lima(parse_utc_timestamp(given.capturado_en))
    except (TypeError, ValueError, OverflowError):
        raise ReparseRefused(f"capturado_en {given.capturado_en!r} is not a UTC instant") from None
    name = installed.rsplit("-", 1)[0]
    try:
        rates = _parse(name, body, given, today)
    except (SourceFormatError, InvariantError, ImportFileError) as error:
        raise ReparseMismatch(f"{installed} rejects the bytes: {error}") from None
    for rate in rates:
        if rate.fecha_serie.isoformat() == given.fecha_serie:
            return Reparsed.of(rate)
    where = f" at line {given.linea}" if given.linea is not None else ""
    raise ReparseMismatch(f"the bytes hold no value for {given.fecha_serie}{where}")


def _parse(name: str, body: bytes, given: ReparseInput, today: date) -> list[ParsedRate]:
    if name == "taxauth_txt":
        return [taxauth_txt.parse_taxauth_txt(body, today)]
    if name == "centralbank_json":
        match = _RANGE.search(given.identidad_consulta)
        if match is None:
            raise ReparseMismatch(f"no date range in {given.identidad_consulta!r}")
        start, end = (date.fromisoformat(part) for part in match.groups())
        answer = centralbank.parse_response(body, start=start, end=end, today_lima=today)
        return list(answer.rates)
    if name == "taxauth_mensual":
        match = _MONTH.search(given.identidad_consulta)
        if match is None:
            raise ReparseMismatch(f"no anio/mes in {given.identidad_consulta!r}")
        year, month_from_zero = (int(part) for part in match.groups())
        answer = taxauth_monthly.parse_monthly(
            body, year=year, month=month_from_zero + 1, today_lima=today
        )
        return list(answer.rates)
    # importado_csv: the line the importada event recorded, nothing else of the file.
    if given.linea is None:
        raise ReparseMismatch("no importada event records the line of this import")
    rows = parse_import_csv(body, today)
    return [row.rate for row in rows if row.line == given.linea]
