"""The one network seam: fetch a source's body with ``requests`` and keep it exactly.

The body is kept decompressed (transfer and content encodings undone) but never decoded to
text, with the status, reason and every response header as received. A fetch either returns an
``HttpExchange`` or raises ``FetchFailure`` carrying the alert type that classifies it and
whatever bytes arrived, so the caller can record the failure with its evidence.
"""

from __future__ import annotations

import dataclasses

import requests

USER_AGENT = "fxev/0.1 (+evidence capture of official USD/PEN rates)"
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 30.0
_CHUNK = 64 * 1024


@dataclasses.dataclass(frozen=True, slots=True)
class HttpExchange:
    method: str
    url: str
    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    truncated: bool = False

    @property
    def content_type(self) -> str:
        return self.header("Content-Type") or "application/octet-stream"

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        for key, value in self.headers:
            if key.lower() == lowered:
                return value
        return None

    @property
    def identidad_consulta(self) -> str:
        return f"{self.method} {self.url}"


class FetchFailure(Exception):
    """The source could not be read. ``alert_type`` classifies it; ``exchange`` is what arrived."""

    def __init__(self, alert_type: str, message: str, exchange: HttpExchange | None = None):
        super().__init__(message)
        self.alert_type = alert_type
        self.message = message
        self.exchange = exchange


def fetch(
    url: str,
    *,
    max_body_bytes: int,
    proxy: str | None = None,
    method: str = "GET",
    data: bytes | None = None,
    headers: dict[str, str] | None = None,
    session: requests.Session | None = None,
) -> HttpExchange:
    """Fetch ``url``; raise ``FetchFailure`` for anything but a 2xx body within the size cap."""
    own_session = session is None
    session = session or requests.Session()
    session.trust_env = False  # FXEV_PROXY is the only proxy; ambient settings never apply
    proxies = {"http": proxy, "https": proxy} if proxy else None
    request_headers = {"User-Agent": USER_AGENT, "Accept": "*/*", **(headers or {})}
    try:
        response = session.request(
            method,
            url,
            data=data,
            headers=request_headers,
            proxies=proxies,
            timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S),
            stream=True,
            allow_redirects=True,
        )
    except requests.exceptions.ProxyError as exc:
        raise FetchFailure("tunel_caido", f"proxy {proxy} unreachable: {exc}") from exc
    except requests.exceptions.Timeout as exc:
        raise FetchFailure("fuente_no_disponible", f"timeout: {exc}") from exc
    except requests.exceptions.RequestException as exc:
        raise FetchFailure("fuente_no_disponible", f"unreachable: {exc}") from exc
    try:
        exchange = _read(response, method, url, max_body_bytes)
    finally:
        response.close()
        if own_session:
            session.close()
    if not 200 <= exchange.status < 300:
        raise FetchFailure(
            "fuente_no_disponible", f"HTTP {exchange.status} {exchange.reason}", exchange
        )
    return exchange


def _read(response: requests.Response, method: str, url: str, limit: int) -> HttpExchange:
    status = response.status_code
    reason = response.reason or ""
    headers = tuple((str(k), str(v)) for k, v in response.raw.headers.items())
    chunks: list[bytes] = []
    size = 0

    def exchange(truncated: bool = False) -> HttpExchange:
        return HttpExchange(method, url, status, reason, headers, b"".join(chunks), truncated)

    try:
        for chunk in response.iter_content(chunk_size=_CHUNK):
            room = limit - size
            if len(chunk) > room:
                chunks.append(chunk[:room])
                raise FetchFailure(
                    "cambio_formato",
                    f"body exceeds the {limit}-byte cap after decompression",
                    exchange(truncated=True),
                )
            chunks.append(chunk)
            size += len(chunk)
    except requests.exceptions.ContentDecodingError as exc:
        raise FetchFailure(
            "cambio_formato", f"body cannot be decompressed: {exc}", exchange(True)
        ) from exc
    except requests.exceptions.RequestException as exc:
        # A timeout, reset or broken chunking mid-body: not what the source announced.
        raise FetchFailure(
            "fuente_no_disponible", f"body interrupted: {exc}", exchange(True)
        ) from exc
    return exchange()
