"""The explorer over HTTP, without a browser: sign-in, cookies, CSRF, limits, ledger, escaping."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
import requests

from builder.ops.alerts import AlertStore
from tests.contract.conftest import Gateway, fxev, issue_token, ledger_entries
from tests.contract.test_api import assert_api_error

HTML = {"Accept": "text/html,application/xhtml+xml"}
PAGES = (
    "/",
    "/serie/publicado",
    "/serie/publicado/2026",
    "/cobertura/publicado/2026",
    "/revisiones",
)


def signed_in(gateway: Gateway, token: str | None = None) -> requests.Session:
    session = requests.Session()
    resp = session.post(
        gateway.url("/signin"),
        data={"token": token or gateway.token},
        allow_redirects=False,
        timeout=10,
    )
    assert resp.status_code == 303, resp.text
    return session


def latest_observation_id(gateway: Gateway) -> str:
    body = gateway.get("/v1/rates/latest?currency=USD&series=publicado").json()
    return body["observacion_id"]


def test_a_page_without_credentials_sends_a_browser_to_signin_and_others_get_401(
    gateway: Gateway,
) -> None:
    resp = requests.get(gateway.url("/"), headers=HTML, allow_redirects=False, timeout=10)
    assert resp.status_code == 303
    assert resp.headers["Location"] == "/signin"
    resp = requests.get(gateway.url("/serie/publicado/2026"), timeout=10)
    assert_api_error(resp, 401, "UNAUTHORIZED")
    assert resp.headers["WWW-Authenticate"] == "Bearer"


def test_signin_form_is_public_and_posts_the_token_field(gateway: Gateway) -> None:
    resp = requests.get(gateway.url("/signin"), timeout=10)
    assert resp.status_code == 200
    assert resp.headers["Content-Type"].startswith("text/html")
    assert '<form method="post" action="/signin">' in resp.text
    assert 'name="token"' in resp.text


def test_signin_sets_an_httponly_samesite_strict_cookie_and_redirects_home(
    gateway: Gateway,
) -> None:
    resp = requests.post(
        gateway.url("/signin"), data={"token": gateway.token}, allow_redirects=False, timeout=10
    )
    assert resp.status_code == 303
    assert resp.headers["Location"] == "/"
    cookie = resp.headers["Set-Cookie"]
    attributes = {part.strip().split("=")[0].lower() for part in cookie.split(";")}
    assert cookie.startswith("fxev_sesion=")
    assert {"httponly", "samesite", "path"} <= attributes
    assert "SameSite=Strict" in cookie and "Path=/" in cookie
    assert "secure" not in attributes  # plain http here; Secure is set over https
    assert "max-age" not in attributes and "expires" not in attributes  # a session cookie


def test_a_bad_token_shows_the_form_again_with_an_error_and_401(gateway: Gateway) -> None:
    resp = requests.post(
        gateway.url("/signin"), data={"token": "fxev_nope_nope"}, allow_redirects=False, timeout=10
    )
    assert resp.status_code == 401
    assert "Set-Cookie" not in resp.headers
    assert 'id="error"' in resp.text and "Token inválido" in resp.text
    assert 'name="token"' in resp.text


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://attacker.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ],
)
def test_cross_site_signin_and_signout_posts_are_refused(
    gateway: Gateway, headers: dict[str, str]
) -> None:
    for path in ("/signin", "/signout"):
        resp = requests.post(
            gateway.url(path),
            data={"token": gateway.token},
            headers=headers,
            allow_redirects=False,
            timeout=10,
        )
        assert resp.status_code == 403, path
        assert "Set-Cookie" not in resp.headers


def test_a_same_origin_signin_is_accepted(gateway: Gateway) -> None:
    resp = requests.post(
        gateway.url("/signin"),
        data={"token": gateway.token},
        headers={"Origin": gateway.base_url, "Sec-Fetch-Site": "same-origin"},
        allow_redirects=False,
        timeout=10,
    )
    assert resp.status_code == 303


def test_the_cookie_opens_every_page_and_a_bearer_token_does_too(gateway: Gateway) -> None:
    session = signed_in(gateway)
    for path in PAGES:
        resp = session.get(gateway.url(path), headers=HTML, allow_redirects=False, timeout=10)
        assert resp.status_code == 200, path
        assert resp.headers["Content-Type"] == "text/html; charset=utf-8"
        assert "default-src 'none'" in resp.headers["Content-Security-Policy"]
        assert resp.headers["Cache-Control"] == "no-store"
    assert gateway.get("/serie/publicado/2026").status_code == 200


def test_the_cookie_does_not_authenticate_the_api(gateway: Gateway) -> None:
    session = signed_in(gateway)
    resp = session.get(gateway.url("/v1/rates/latest?currency=USD&series=publicado"), timeout=10)
    assert_api_error(resp, 401, "UNAUTHORIZED")


def test_signout_clears_the_cookie_and_pages_send_to_signin_again(gateway: Gateway) -> None:
    session = signed_in(gateway)
    resp = session.post(gateway.url("/signout"), allow_redirects=False, timeout=10)
    assert resp.status_code == 303
    assert resp.headers["Location"] == "/signin"
    assert re.search(r"fxev_sesion=(\"\")?;.*[Mm]ax-[Aa]ge=0", resp.headers["Set-Cookie"])
    assert "fxev_sesion" not in session.cookies
    resp = session.get(gateway.url("/"), headers=HTML, allow_redirects=False, timeout=10)
    assert resp.status_code == 303


def cookie_attributes(set_cookie: str) -> set[str]:
    """A Set-Cookie header's attributes, lowercased, without the value and its lifetime."""
    parts = [part.strip().lower() for part in set_cookie.split(";")[1:]]
    return {part for part in parts if part and not part.startswith(("max-age", "expires"))}


def test_the_cookie_is_expired_with_the_attributes_it_was_set_with(gateway: Gateway) -> None:
    """A browser ignores an expiry marked Secure from a plain-http origin other than loopback:
    signing out, or being sent to sign in again, must expire the cookie as it was set."""
    token_id, token = issue_token(gateway.env, "explorer-expiry")
    resp = requests.post(
        gateway.url("/signin"), data={"token": token}, allow_redirects=False, timeout=10
    )
    set_as = cookie_attributes(resp.headers["Set-Cookie"])
    assert "secure" not in set_as  # plain http
    cookie = {"fxev_sesion": token}
    resp = requests.post(gateway.url("/signout"), cookies=cookie, allow_redirects=False, timeout=10)
    assert resp.status_code == 303
    assert cookie_attributes(resp.headers["Set-Cookie"]) == set_as
    fxev(gateway.env, "token", "revoke", token_id)
    resp = requests.get(
        gateway.url("/"), cookies=cookie, headers=HTML, allow_redirects=False, timeout=10
    )
    assert resp.status_code == 303
    assert re.search(r"[Mm]ax-[Aa]ge=0", resp.headers["Set-Cookie"])
    assert cookie_attributes(resp.headers["Set-Cookie"]) == set_as


def test_a_revoked_token_in_the_cookie_stops_working_on_the_next_request(
    gateway: Gateway,
) -> None:
    token_id, token = issue_token(gateway.env, "explorer-revoked")
    session = signed_in(gateway, token)
    assert session.get(gateway.url("/"), headers=HTML, timeout=10).status_code == 200
    fxev(gateway.env, "token", "revoke", token_id)
    resp = session.get(gateway.url("/"), headers=HTML, allow_redirects=False, timeout=10)
    assert resp.status_code == 303 and resp.headers["Location"] == "/signin"


def test_explorer_responses_are_ledgered_with_the_hash_of_the_bytes_sent(
    gateway: Gateway,
) -> None:
    session = signed_in(gateway)
    resp = session.get(gateway.url("/serie/publicado/2026"), headers=HTML, timeout=10)
    entries = ledger_entries(gateway.env, resp.headers["X-Request-Id"])
    assert len(entries) == 1
    entry = entries[0]
    assert entry["path"] == "/serie/publicado/2026"
    assert entry["status"] == 200
    assert entry["token_name"] == "contract"
    assert entry["sha256"] == hashlib.sha256(resp.content).hexdigest()
    # A 404 on an unknown explorer path, with only the cookie, is recorded too.
    missing = session.get(gateway.url("/serie/publicado/1999"), headers=HTML, timeout=10)
    assert missing.status_code == 404
    assert ledger_entries(gateway.env, missing.headers["X-Request-Id"])[0]["status"] == 404


def test_requests_without_a_valid_credential_are_not_ledgered(gateway: Gateway) -> None:
    resp = requests.get(gateway.url("/"), headers=HTML, allow_redirects=False, timeout=10)
    assert ledger_entries(gateway.env, resp.headers["X-Request-Id"]) == []


@pytest.mark.gateway_env(FXEV_RATE_LIMIT_PER_MIN="3")
def test_explorer_pages_count_against_the_token_limit(private_gateway: Gateway) -> None:
    session = signed_in(private_gateway)  # the sign-in itself counts: 1
    for _ in range(2):
        assert session.get(private_gateway.url("/"), headers=HTML, timeout=10).status_code == 200
    resp = session.get(private_gateway.url("/"), headers=HTML, timeout=10)
    assert resp.status_code == 429
    assert int(resp.headers["Retry-After"]) >= 1
    assert "Demasiadas solicitudes" in resp.text
    assert ledger_entries(private_gateway.env, resp.headers["X-Request-Id"])[0]["status"] == 429
    # The API shares the same per-token budget.
    assert private_gateway.get("/v1/health/ready").status_code == 429


def test_hostile_alert_text_is_escaped_on_the_home_page(private_gateway: Gateway) -> None:
    hostile = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    store = AlertStore.open(Path(private_gateway.env["FXEV_HOME"]))
    try:
        store.raise_alert(
            "discrepancia",
            datetime.now(UTC),
            fuente=hostile,
            fecha_serie="2026-09-21",
            detalle={"mensaje": hostile},
        )
    finally:
        store.close()
    resp = private_gateway.get("/", headers=HTML)
    assert resp.status_code == 200
    assert "<script>" not in resp.text and "<img" not in resp.text
    assert "&lt;script&gt;alert(" in resp.text
    assert "discrepancia" in resp.text


def test_the_evidence_route_serves_the_api_bytes_and_safety_headers(gateway: Gateway) -> None:
    observation_id = latest_observation_id(gateway)
    session = signed_in(gateway)
    page = session.get(gateway.url(f"/observacion/{observation_id}"), headers=HTML, timeout=10)
    assert page.status_code == 200
    evidence_id = re.search(r'href="/evidencia/([0-9a-f-]{36})"', page.text)[1]  # type: ignore[index]
    shown_sha = re.search(r'<code id="sha256">([0-9a-f]{64})</code>', page.text)[1]  # type: ignore[index]
    ours = session.get(gateway.url(f"/evidencia/{evidence_id}"), timeout=10)
    api = gateway.get(f"/v1/evidence/{evidence_id}")
    assert ours.status_code == api.status_code == 200
    assert ours.content == api.content
    assert hashlib.sha256(ours.content).hexdigest() == shown_sha == ours.headers["X-Sha256"]
    for header in (
        "Content-Type",
        "ETag",
        "X-Sha256",
        "X-Capturado-En",
        "X-Identidad-Consulta",
        "X-Content-Type-Options",
        "Content-Security-Policy",
        "Content-Disposition",
    ):
        assert ours.headers[header] == api.headers[header], header
    assert f"{gateway.base_url}/v1/evidence/{evidence_id} -o ev.bin" in page.text


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", "/signin", "GET, HEAD, POST"),
        ("DELETE", "/signin", "GET, HEAD, POST"),
        ("GET", "/signout", "POST"),
        ("POST", "/", "GET, HEAD"),
        ("DELETE", "/serie/publicado/2026", "GET, HEAD"),
        ("OPTIONS", "/revisiones", "GET, HEAD"),
    ],
)
def test_other_methods_get_405_with_their_allow_header(
    gateway: Gateway, method: str, path: str, allow: str
) -> None:
    resp = gateway.request(method, path)
    assert_api_error(resp, 405, "METHOD_NOT_ALLOWED")
    assert resp.headers["Allow"] == allow


def test_pages_load_nothing_from_elsewhere(gateway: Gateway) -> None:
    session = signed_in(gateway)
    for path in PAGES:
        text = session.get(gateway.url(path), headers=HTML, timeout=10).text
        assert not re.search(r"""(src|href|action)=["']?(https?:)?//""", text), path
        assert "<script" not in text


def test_before_the_first_build_the_home_page_is_not_ready(unbuilt_gateway: Gateway) -> None:
    resp = unbuilt_gateway.get("/")
    assert_api_error(resp, 503, "INTERNAL")
    page = unbuilt_gateway.get("/", headers=HTML)
    assert page.status_code == 503
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    assert "INTERNAL" in page.text


PUBLIC = "https://fx.example"


@pytest.mark.gateway_env(FXEV_PUBLIC_URL=PUBLIC + "/")
def test_behind_a_tls_terminator_the_public_origin_makes_the_cookie_secure(
    private_gateway: Gateway,
) -> None:
    """Behind a TLS terminator the gateway is asked over plain http; FXEV_PUBLIC_URL names the
    origin browsers use: the cookie is Secure (set and expired alike), sign-in compares Origin
    with that origin, and the pages print it for the consumer's commands, never the http one."""
    gateway = private_gateway
    signin = requests.post(
        gateway.url("/signin"),
        data={"token": gateway.token},
        headers={"Origin": PUBLIC},
        allow_redirects=False,
        timeout=10,
    )
    assert signin.status_code == 303
    set_cookie = signin.headers["Set-Cookie"]
    assert "Secure" in [part.strip() for part in set_cookie.split(";")], set_cookie
    refused = requests.post(
        gateway.url("/signin"),
        data={"token": gateway.token},
        headers={"Origin": gateway.base_url},  # the address the terminator used, not the public
        allow_redirects=False,
        timeout=10,
    )
    assert refused.status_code == 403
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {gateway.token}"
    page = session.get(
        gateway.url(f"/observacion/{latest_observation_id(gateway)}"), headers=HTML, timeout=10
    )
    assert page.status_code == 200
    assert f"--url {PUBLIC}" in page.text and f"{PUBLIC}/v1/evidence/" in page.text
    assert gateway.base_url not in page.text
    signout = requests.post(
        gateway.url("/signout"), headers={"Origin": PUBLIC}, allow_redirects=False, timeout=10
    )
    assert "Secure" in [part.strip() for part in signout.headers["Set-Cookie"].split(";")]
