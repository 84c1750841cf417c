"""The HTTP edge of ``fxev verify``: a small ``requests`` client of the fxev API.

It knows the observation and evidence endpoints and the public log (``/v1/log/...``), sends
the bearer token, honours ``Retry-After`` on 429 and turns everything else that is not an
answer into ``ClientError``: network failures, 401, a 404 for the observation asked for, any
other status. A 404 for a link of a chain is data, not an error:
``observation(..., missing_ok=True)`` returns None, and the chain check reports it; a 404 of
the log is a failed log check (``verifier.logcheck``).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import orjson
import requests

from builder.core.errors import RemoteError

TIMEOUT_S = (10.0, 30.0)  # to connect; between two reads
READ_DEADLINE_S = 120.0  # for one whole answer: a service trickling bytes is not waited on for ever
BODY_MAX = 64 << 20  # bytes of any answer: far above an observation, a tile or an evidence file
CHECKPOINT_MAX = 64 << 10  # bytes of a checkpoint, a few hundred when signed
MAX_RATE_LIMIT_WAITS = 5
MAX_WAIT_S = 60.0  # the longest Retry-After waited: the minute's limit; a day's is not waited
USER_AGENT = "fxev-verify/0.1"


class ClientError(RemoteError):
    """The API could not be asked or did not answer: not a verdict on the data (exit 2)."""

    command = "verify"


@dataclasses.dataclass(frozen=True, slots=True)
class Fetched:
    """One answer read whole, within :data:`BODY_MAX` bytes and :data:`READ_DEADLINE_S`."""

    url: str
    status_code: int
    reason: str
    headers: Mapping[str, str]
    content: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class EvidenceAnswer:
    body: bytes
    headers: Mapping[str, str]


class ApiClient:
    def __init__(
        self,
        base_url: str,
        token: str,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.session = session or requests.Session()
        self.session.trust_env = False
        self.session.headers.update({"Authorization": f"Bearer {token}", "User-Agent": USER_AGENT})
        self.sleep = sleep
        self._details: dict[str, dict[str, Any] | None] = {}
        self._evidence: dict[str, EvidenceAnswer] = {}
        self._log: dict[str, bytes | None] = {}

    def close(self) -> None:
        self.session.close()

    def observation(self, obs_id: str, *, missing_ok: bool = False) -> dict[str, Any] | None:
        """``/v1/observations/{id}`` decoded (memoised per run), or None for an unknown link."""
        if obs_id not in self._details:
            response = self._get(f"/v1/observations/{obs_id}", missing_ok=missing_ok)
            self._details[obs_id] = None if response is None else _json(response)
        detail = self._details[obs_id]
        if detail is None and not missing_ok:
            raise ClientError(f"observation {obs_id}: 404 NOT_FOUND")
        return detail

    def evidence(self, ev_id: str) -> EvidenceAnswer:
        """``/v1/evidence/{id}``: the bytes exactly as received and the headers."""
        if ev_id not in self._evidence:
            response = self._get(f"/v1/evidence/{ev_id}", missing_ok=False)
            assert response is not None
            self._evidence[ev_id] = EvidenceAnswer(response.content, dict(response.headers))
        return self._evidence[ev_id]

    def log(self, path: str) -> bytes | None:
        """``/v1/log/{path}`` (memoised per run: tiles never change), or None on 404."""
        if path not in self._log:
            limit = CHECKPOINT_MAX if path == "checkpoint" else BODY_MAX
            response = self._get(f"/v1/log/{path}", missing_ok=True, limit=limit)
            self._log[path] = None if response is None else response.content
        return self._log[path]

    def _get(self, path: str, *, missing_ok: bool, limit: int = BODY_MAX) -> Fetched | None:
        url = self.base_url + path
        for attempt in range(MAX_RATE_LIMIT_WAITS + 1):
            response = _fetch(self.session, url, limit)
            if response.status_code == 429:
                wait = _retry_after(response)
                if wait > MAX_WAIT_S:
                    raise ClientError(
                        f"GET {url}: 429 RATE_LIMITED, Retry-After {wait:.0f} s: not waited"
                    )
                if attempt < MAX_RATE_LIMIT_WAITS:
                    self.sleep(wait)
                continue
            if response.status_code == 200:
                return response
            if response.status_code == 404 and missing_ok:
                return None
            raise ClientError(f"GET {url}: {_describe(response)}")
        raise ClientError(f"GET {url}: still 429 RATE_LIMITED after {MAX_RATE_LIMIT_WAITS} waits")


def _fetch(session: requests.Session, url: str, limit: int) -> Fetched:
    """GET ``url`` and read its body whole, refusing one over ``limit`` bytes or still coming
    after :data:`READ_DEADLINE_S` (a hostile or broken service never holds the verifier)."""
    deadline = time.monotonic() + READ_DEADLINE_S
    try:
        with session.get(url, timeout=TIMEOUT_S, stream=True) as response:
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_content(1 << 16):
                size += len(chunk)
                if size > limit:
                    raise ClientError(f"GET {url}: the answer is over {limit} bytes")
                if time.monotonic() > deadline:
                    raise ClientError(f"GET {url}: not read whole in {READ_DEADLINE_S:.0f} s")
                chunks.append(chunk)
            return Fetched(
                url,
                response.status_code,
                response.reason or "",
                response.headers,
                b"".join(chunks),
            )
    except requests.RequestException as error:
        raise ClientError(f"GET {url}: {error}") from None


def _retry_after(response: Fetched) -> float:
    """The seconds ``Retry-After`` asks for (at least 1; an unreadable one is 1; one that is
    not finite is infinite, and never waited)."""
    try:
        wait = float(response.headers.get("Retry-After", "1"))
    except ValueError:
        return 1.0
    if math.isnan(wait):
        return 1.0
    return max(1.0, wait)


def _describe(response: Fetched) -> str:
    """``401 UNAUTHORIZED: message`` from an error body, or the bare status."""
    try:
        body = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        body = None
    if isinstance(body, dict) and "code" in body:
        return f"{response.status_code} {body['code']}: {body.get('message', '')}".rstrip(": ")
    return f"{response.status_code} {response.reason}"


def _json(response: Fetched) -> dict[str, Any]:
    try:
        value = orjson.loads(response.content)
    except orjson.JSONDecodeError as error:
        raise ClientError(f"GET {response.url}: the body is not JSON ({error})") from None
    if not isinstance(value, dict):
        raise ClientError(f"GET {response.url}: the body is not a JSON object")
    return value
