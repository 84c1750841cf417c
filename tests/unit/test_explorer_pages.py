"""Page rendering and the gateway's pure explorer helpers: escaping, strictness, CSP, CSRF."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import re
from typing import Any

import jinja2
import pytest

from builder.ops.alerts import Alert
from builder.render.explorer import pages
from gateway.handlers.explorer import fill_markers, page_policy, same_origin_post, wants_html

HOSTILE = '</pre><script>alert(1)</script><!--fxev:alertas-->"'


def detail(**observation: Any) -> dict[str, Any]:
    record = {
        "id": "0b6f3c1e-0000-4000-8000-000000000001",
        "moneda": "USD",
        "serie": "publicado",
        "fecha_serie": "2026-09-21",
        "compra": "3.356",
        "venta": "3.364",
        "compra_cruda": "3.356",
        "venta_cruda": "3.364",
        "fuente": "taxauth_txt",
        "identidad_consulta": "GET https://example.test/tipoCambio.txt",
        "fragmento": "21/09/2026|3.356|3.364|",
        "version_parser": "taxauth_txt-1.0",
        "capturado_en": "2026-09-21T20:00:00.000000Z",
        "ejecucion_id": "0b6f3c1e-0000-4000-8000-000000000002",
        "evidencia_id": "0b6f3c1e-0000-4000-8000-000000000003",
        "revision_creada": 4,
    } | observation
    return {
        "observacion": record,
        "cadena": {"ancestros": [], "sucesoras": []},
        "eventos": [],
        "cotejos": [],
        "superseded": False,
    }


def home() -> bytes:
    return pages.home_page(pages.HomePage(1, "2026-09-21T20:00:00.000000Z", (), (), {}))


def test_hostile_source_text_is_escaped_and_cannot_forge_a_marker() -> None:
    page = pages.observation_page(pages.ObservationPage(detail(fragmento=HOSTILE), {})).decode()
    assert "<script>" not in page
    assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;!--fxev:alertas--&gt;" in page
    assert page.count(pages.ALERTS_MARKER.decode()) == 0


def test_a_missing_field_fails_the_render_instead_of_printing_nothing() -> None:
    broken = detail()
    del broken["observacion"]["venta_cruda"]
    with pytest.raises(jinja2.UndefinedError):
        pages.observation_page(pages.ObservationPage(broken, {}))


def test_the_inline_stylesheet_matches_the_hash_the_csp_allows() -> None:
    style = re.search(rb"<style>(.*?)</style>", home(), re.DOTALL)[1]  # type: ignore[index]
    digest = base64.b64encode(hashlib.sha256(style).digest()).decode()
    assert f"'sha256-{digest}'" == pages.STYLE_CSP
    policy = pages.content_security_policy(pages.STYLESHEET.encode())
    assert f"style-src {pages.STYLE_CSP}" in policy


def test_the_home_page_leaves_each_live_part_to_the_gateway_once() -> None:
    page = home()
    assert page.count(pages.ALERTS_MARKER) == 1
    assert page.count(pages.FRESHNESS_MARKER) == 1


def an_alert(**fields: Any) -> Alert:
    """An open discrepancia, as the alert store hands it to the panel, with ``fields`` set."""
    defaults: dict[str, Any] = {
        "id": "a1",
        "tipo": "discrepancia",
        "estado": "abierta",
        "condicion": "discrepancia:taxauth_txt:2026-09-07",
        "fuente": None,
        "fecha_serie": None,
        "contador": 1,
        "primera_vez": "t",
        "ultima_vez": "t",
        "detalle": {},
        "reconocida_por": None,
        "reconocida_en": None,
        "resuelta_por": None,
        "resuelta_en": None,
    }
    return Alert(**(defaults | fields))


def test_the_alerts_panel_escapes_every_field() -> None:
    alert = an_alert(fuente=HOSTILE, contador=2, detalle={"mensaje": HOSTILE})
    panel = pages.alerts_panel([alert]).decode()
    assert "<script>" not in panel and "<!--fxev" not in panel
    assert "discrepancia" in panel


def test_fill_markers_replaces_each_marker_with_its_part() -> None:
    body = b"<p><!--fxev:alertas--></p><p><!--fxev:frescura--></p>"
    filled = fill_markers(body, {pages.ALERTS_MARKER: b"A", pages.FRESHNESS_MARKER: b"F"})
    assert filled == b"<p>A</p><p>F</p>"


@pytest.mark.parametrize(
    ("headers", "allowed"),
    [
        ({}, True),  # a non-browser client
        ({"sec-fetch-site": "same-origin"}, True),
        ({"sec-fetch-site": "none"}, True),  # typed by the user
        ({"sec-fetch-site": "same-origin", "origin": "null"}, True),
        ({"sec-fetch-site": "cross-site"}, False),
        ({"sec-fetch-site": "same-site"}, False),
        ({"origin": "http://127.0.0.1:8000"}, True),
        ({"origin": "https://127.0.0.1:8000"}, False),
        ({"origin": "http://attacker.example"}, False),
        ({"origin": "null"}, False),
    ],
)
def test_same_origin_post(headers: dict[str, str], allowed: bool) -> None:
    assert same_origin_post(headers, "http", "127.0.0.1:8000") is allowed


def test_wants_html_follows_the_accept_header() -> None:
    assert wants_html("text/html,application/xhtml+xml,*/*;q=0.8")
    assert not wants_html("application/json")
    assert not wants_html("*/*")


def test_a_page_is_served_with_the_policy_of_its_own_stylesheet() -> None:
    older = b"<html><style>body{color:red}</style></html>"
    assert page_policy(home()) == pages.content_security_policy(pages.STYLESHEET.encode())
    assert pages.style_source(b"body{color:red}") in page_policy(older)
    assert pages.STYLE_CSP not in page_policy(older)


def test_an_alerts_detalle_is_a_full_width_list_of_its_fields() -> None:
    evidence = "0b6f3c1e-0000-4000-8000-000000000003"
    alert = an_alert(
        fuente="taxauth_txt",
        fecha_serie="2026-09-07",
        detalle={
            "revision": 6,
            "evidencia_id": evidence,
            "publicado": {"compra": "3.360", "venta": "3.372"},
            "mensaje": "HTTP 503",
        },
    )
    panel = pages.alerts_panel([alert, dataclasses.replace(alert, detalle={})]).decode()
    # One row of fields, then one row for the detalle across every column.
    assert panel.count('<td colspan="7">') == 2 and "<th>detalle</th>" not in panel
    fields = re.findall(r"<dt>(.*?)</dt>\n<dd>(.*?)</dd>", panel)
    assert fields == [
        ("evidencia_id", f'<a href="/evidencia/{evidence}">{evidence}</a> (evidencia)'),
        ("mensaje", "HTTP 503"),
        ("publicado", "{&#34;compra&#34;: &#34;3.360&#34;, &#34;venta&#34;: &#34;3.372&#34;}"),
        ("revision", "6"),
    ]
    assert "Sin detalle." in panel


def test_the_observation_page_names_its_leaf_the_checkpoint_and_the_command() -> None:
    page = pages.observation_page(pages.ObservationPage(detail(), {})).decode()
    assert '<strong id="hoja">3</strong>' in page  # revision 4 is leaf 3
    marker = pages.BASE_URL_MARKER.decode()
    assert f'href="{marker}/v1/log/checkpoint"' in page
    assert (
        "fxev verify 0b6f3c1e-0000-4000-8000-000000000001 --url"
        f' {marker} --vkey "$FXEV_LOG_VKEY" --state checkpoint.txt'
    ) in page


def test_every_page_the_gateway_renders_is_compiled_ahead_with_what_it_extends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``load_live_templates``, which each gateway worker calls before it answers
    (``gateway.handlers.explorer.load_templates_ahead``): once it has run, rendering a live page
    compiles nothing."""
    pages.environment.cache_clear()
    pages.load_live_templates.cache_clear()
    try:
        loaded = pages.load_live_templates()
        env = pages.environment()
        assert env.loader is not None
        live = {name for name in env.loader.list_templates() if name.startswith(pages.LIVE_PREFIX)}
        assert live and live | {"base.html.j2"} == set(loaded)

        def compiled(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("compiled at render time")

        monkeypatch.setattr(env, "compile", compiled)
        pages.signin_page("Token inválido.")
        pages.error_page(404, "NOT_FOUND", "No such page.")
        pages.alerts_panel([])
        pages.freshness_panel([])
        assert pages.load_live_templates() is loaded  # once per process
    finally:
        pages.environment.cache_clear()
        pages.load_live_templates.cache_clear()


def test_templates_that_cannot_be_compiled_stop_no_worker_and_the_log_says_why(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import asyncio
    import logging

    from gateway.handlers import explorer

    def broken() -> tuple[str, ...]:
        raise jinja2.TemplateSyntaxError("unexpected '}'", 3, "live_alerts.html.j2")

    monkeypatch.setattr(pages, "load_live_templates", broken)
    with caplog.at_level(logging.WARNING):
        asyncio.run(explorer.load_templates_ahead(None))  # type: ignore[arg-type]
    assert "The explorer's templates could not be compiled ahead: unexpected '}'" in caplog.text
