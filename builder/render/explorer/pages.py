"""Pure page rendering: typed page values -> HTML bytes, with jinja2 (autoescape, strict).

Labels are Spanish for people; where a page names a field it uses the spec's field name. The
pages load nothing from elsewhere: one inline stylesheet (allowed by its CSP hash, ``STYLE_CSP``)
and charts drawn as inline SVG. Parts only the gateway knows at request time are left as
``MARKERS`` (HTML comments the templates emit, which no escaped value can produce).
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import jinja2
from jinja2 import meta

from builder.render.explorer.calendar import WEEKDAY_HEADERS, YearCalendar
from builder.render.explorer.chart import Chart
from builder.tree.revision import EvidenceMeta

if TYPE_CHECKING:
    from builder.ops.alerts import Alert

ALERTS_MARKER = b"<!--fxev:alertas-->"
FRESHNESS_MARKER = b"<!--fxev:frescura-->"
BASE_URL_MARKER = b"<!--fxev:base_url-->"
MARKERS = (ALERTS_MARKER, FRESHNESS_MARKER, BASE_URL_MARKER)
LIVE_PREFIX = "live_"  # templates the gateway renders per request; not part of built pages

STYLESHEET = """
body{font-family:system-ui,sans-serif;margin:0;color:#1b1b1b;background:#fafafa}
header{background:#12355b;color:#fff;padding:.5rem 1rem;display:flex;gap:1rem;align-items:center}
header a,header button{color:#fff;font:inherit}
header .brand{font-weight:bold;margin-right:auto;text-decoration:none}
header form{margin:0}
header button{background:none;border:1px solid #fff;border-radius:3px;cursor:pointer}
main{max-width:64rem;margin:0 auto;padding:1rem}
table{border-collapse:collapse;margin:.5rem 0}
th,td{border:1px solid #ccc;padding:.2rem .45rem;text-align:left;vertical-align:top}
td code,.wrap{overflow-wrap:anywhere}
td.num{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font-family:ui-monospace,monospace;font-size:.9em}
pre{background:#eee;padding:.5rem;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
.muted{color:#555}.error{color:#a00;font-weight:bold}
.panel{border:1px solid #ccc;background:#fff;padding:.5rem 1rem;margin:1rem 0;overflow-x:auto}
td code{white-space:pre-wrap;word-break:break-word}
#tabla-alertas{width:100%}
dl.detalle{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.15rem .75rem;margin:0}
dl.detalle dt{font-weight:bold}
dl.detalle dd{margin:0;font-family:ui-monospace,monospace;font-size:.9em;white-space:pre-wrap;
overflow-wrap:anywhere}
.cal{display:flex;flex-wrap:wrap;gap:1rem}
.cal table{font-size:.8em}.cal td{width:1.6em;text-align:center;padding:.1rem}
.st-dato{background:#8fd19e}.st-sin_dato{background:#9e9e9e;color:#fff}
.st-fallo{background:#d9534f;color:#fff}.st-nd_fuente{background:#f0ad4e}
.st-no_habil{background:#e8e8e8;color:#777}.st-fuera_de_rango{background:#fff;color:#bbb}
.swatch{display:inline-block;width:1em;height:1em;border:1px solid #999;vertical-align:middle}
svg text{font-size:12px;fill:#1b1b1b}
.pager a,.pager span{margin-right:1rem}
""".strip()


def style_source(stylesheet: bytes) -> str:
    """The CSP source that allows exactly this inline stylesheet."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(stylesheet).digest()).decode() + "'"


def content_security_policy(stylesheet: bytes) -> str:
    return (
        f"default-src 'none'; style-src {style_source(stylesheet)}; img-src 'self'; "
        "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    )


STYLE_CSP = style_source(STYLESHEET.encode())


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("builder.render.explorer", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    env.globals["stylesheet"] = STYLESHEET
    env.filters["detalle_texto"] = detail_text
    env.globals["weekday_headers"] = WEEKDAY_HEADERS
    return env


def detail_text(value: Any) -> str:
    """A value of a ``detalle`` as text: a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))


def template_fingerprint() -> str:
    """SHA-256 over every template and the stylesheet: a change re-renders every page."""
    digest = hashlib.sha256(STYLESHEET.encode())
    env = environment()
    loader = env.loader
    assert loader is not None
    for name in sorted(loader.list_templates()):
        if name.startswith(LIVE_PREFIX):
            continue
        source, _, _ = loader.get_source(env, name)
        digest.update(name.encode() + b"\0" + source.encode() + b"\0")
    return digest.hexdigest()


@functools.cache
def load_live_templates() -> tuple[str, ...]:
    """Compile, once per process, every template the gateway renders per request and those
    they extend or include; the names loaded. A worker's first explorer page otherwise waits
    for the compiling (docs/performance.md#first-answer)."""
    env = environment()
    assert env.loader is not None
    waiting = [name for name in env.loader.list_templates() if name.startswith(LIVE_PREFIX)]
    loaded: list[str] = []
    while waiting:
        name = waiting.pop()
        if name in loaded:
            continue
        env.get_template(name)
        loaded.append(name)
        source, _, _ = env.loader.get_source(env, name)
        waiting += [found for found in meta.find_referenced_templates(env.parse(source)) if found]
    return tuple(sorted(loaded))


def render(template: str, **values: Any) -> bytes:
    return environment().get_template(template).render(**values).encode()


# -- page values ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class LatestValue:
    serie: str
    item: dict[str, Any]  # the rate item as /v1/rates/latest serves it (without frescura)


@dataclasses.dataclass(frozen=True, slots=True)
class HomePage:
    revision: int
    ts_commit: str
    latest: tuple[LatestValue, ...]
    coverage: tuple[dict[str, Any], ...]
    years: dict[str, tuple[str, ...]]


@dataclasses.dataclass(frozen=True, slots=True)
class YearSummary:
    year: str
    total_fechas: int
    gaps: dict[str, int]


@dataclasses.dataclass(frozen=True, slots=True)
class SeriesPage:
    serie: str
    coverage: dict[str, Any] | None
    years: tuple[YearSummary, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class YearPage:
    serie: str
    year: str
    items: tuple[dict[str, Any], ...]
    chart: Chart
    previous_year: str | None
    next_year: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class CalendarPage:
    serie: str
    calendar: YearCalendar
    criterio_huecos: str


@dataclasses.dataclass(frozen=True, slots=True)
class ObservationPage:
    detail: dict[str, Any]  # /v1/observations/{id} without the envelope
    evidence: dict[str, EvidenceMeta]  # evidencia_id -> its stored metadata


@dataclasses.dataclass(frozen=True, slots=True)
class RevisionEntry:
    revision: int
    ts_commit: str
    kind: str
    summary: dict[str, Any]
    observations: tuple[dict[str, str], ...]  # id, serie, fecha_serie (the first few)
    more_observations: int
    failures: tuple[dict[str, Any], ...]  # tipo, fecha_serie, evidencia_id


@dataclasses.dataclass(frozen=True, slots=True)
class RevisionsPage:
    number: int
    has_newer: bool
    entries: tuple[RevisionEntry, ...]  # newest first


def home_page(page: HomePage) -> bytes:
    return render("home.html.j2", page=page)


def series_page(page: SeriesPage) -> bytes:
    return render("series.html.j2", page=page)


def year_page(page: YearPage) -> bytes:
    return render("year.html.j2", page=page)


def calendar_page(page: CalendarPage) -> bytes:
    return render("calendar.html.j2", page=page)


def observation_page(page: ObservationPage) -> bytes:
    return render("observation.html.j2", page=page)


def revisions_page(page: RevisionsPage) -> bytes:
    return render("revisions.html.j2", page=page)


# -- rendered by the gateway per request -------------------------------------------------------


def signin_page(error: str | None) -> bytes:
    return render("live_signin.html.j2", error=error)


def error_page(status: int, code: str, message: str) -> bytes:
    headings = {
        401: "Hace falta ingresar",
        403: "Solicitud rechazada",
        404: "No encontrado",
        405: "Método no permitido",
        422: "Identificador mal formado",
        429: "Demasiadas solicitudes",
    }
    heading = headings.get(status, "Error del servicio")
    return render("live_error.html.j2", status=status, code=code, message=message, heading=heading)


def alerts_panel(alerts: Sequence[Alert]) -> bytes:
    return render("live_alerts.html.j2", alerts=alerts)


def freshness_panel(entries: list[dict[str, Any]]) -> bytes:
    """``entries``: ``{"serie", "fecha_serie", "frescura"}`` per served series with data."""
    return render("live_freshness.html.j2", entries=entries)
