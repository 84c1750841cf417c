"""The request ledger (docs/decisions.md#ledger) on a real gateway: what it records, `fxev requests
show`, 503 when it cannot be written, and nothing a client received lost when the gateway is
killed."""

from __future__ import annotations

import hashlib
import shutil
import threading
import time
from pathlib import Path

import pytest
import requests

from gateway.ledger.reading import read_entries
from tests.contract.conftest import Gateway, ledger_entries
from tests.contract.test_api import assert_api_error

RATES = "/v1/rates?currency=USD&series=publicado"
AS_OF = RATES + "&from=2026-09-01&to=2026-09-30&as_of_revision=4"


def evidence_path(gateway: Gateway) -> str:
    latest = gateway.get(RATES.replace("/v1/rates?", "/v1/rates/latest?")).json()
    detail = gateway.get(f"/v1/observations/{latest['observacion_id']}").json()
    return f"/v1/evidence/{detail['observacion']['evidencia_id']}"


def assert_recorded(gateway: Gateway, resp: requests.Response, method: str = "GET") -> dict:
    """The one entry of this response: its status, and the hash of the bytes the client got."""
    entries = ledger_entries(gateway.env, resp.headers["X-Request-Id"])
    assert len(entries) == 1
    entry = entries[0]
    assert entry["x_request_id"] == resp.headers["X-Request-Id"]
    assert entry["status"] == resp.status_code
    assert entry["sha256"] == hashlib.sha256(resp.content).hexdigest()
    assert entry["bytes"] == len(resp.content)
    assert entry["etag"] == resp.headers.get("ETag")
    assert entry["method"] == method
    assert entry["token_name"] == "contract"
    assert entry["ts"].endswith("Z")
    return entry


def test_every_kind_of_response_to_a_valid_token_is_recorded(gateway: Gateway) -> None:
    fresh = gateway.get(RATES + "&from=2026-09-01&to=2026-09-30")
    entry = assert_recorded(gateway, fresh)
    assert entry["request_id"] == fresh.json()["request_id"]
    assert entry["path"] == "/v1/rates"
    assert entry["query"] == "currency=USD&series=publicado&from=2026-09-01&to=2026-09-30"

    as_of = gateway.get(AS_OF)
    assert assert_recorded(gateway, as_of)["request_id"] == as_of.json()["request_id"]
    not_modified = gateway.get(AS_OF, headers={"If-None-Match": as_of.headers["ETag"]})
    assert not_modified.status_code == 304
    assert assert_recorded(gateway, not_modified)["request_id"] == as_of.json()["request_id"]

    head = gateway.request("HEAD", "/v1/coverage")
    assert head.status_code == 200 and head.content == b""
    assert assert_recorded(gateway, head, "HEAD")["bytes"] == 0

    evidence = gateway.get(evidence_path(gateway))
    entry = assert_recorded(gateway, evidence)
    assert entry["sha256"] == evidence.headers["X-Sha256"]
    assert entry["request_id"] is None  # the body is the source's bytes, with no request_id

    for resp in (
        gateway.get(RATES + "&from=2026-09-30&to=2026-09-01"),  # 400
        gateway.get("/v1/nothing"),  # 404 unknown path
        gateway.get("/v1/observations/not-a-uuid"),  # 422
    ):
        assert_recorded(gateway, resp)
    post = gateway.request("POST", "/v1/coverage")
    assert assert_recorded(gateway, post, "POST")["status"] == 405


def test_an_as_of_request_id_finds_every_time_it_was_served(gateway: Gateway) -> None:
    query = RATES + "&from=2025-01-01&to=2025-01-31&as_of_revision=2"
    served = [gateway.get(query) for _ in range(3)]
    request_id = served[0].json()["request_id"]
    entries = ledger_entries(gateway.env, request_id)
    assert [e["x_request_id"] for e in entries] == [r.headers["X-Request-Id"] for r in served]
    assert len({e["sha256"] for e in entries}) == 1  # the same bytes each time


def test_requests_without_a_valid_token_are_not_recorded(gateway: Gateway) -> None:
    for resp in (
        gateway.get("/v1/coverage", token=None),
        gateway.get("/v1/coverage", token="fxev_0000000000000000_nope"),
        gateway.get("/v1/health/live"),
        # The explorer's cookie is no credential under /v1, where no route read a token either.
        gateway.get("/v1/no-such-path", token=None, cookies={"fxev_sesion": gateway.token}),
    ):
        assert resp.status_code in (200, 401, 404)
        assert ledger_entries(gateway.env, resp.headers["X-Request-Id"]) == []


def test_requests_show_exits_1_with_an_empty_list_for_an_unknown_id(gateway: Gateway) -> None:
    assert ledger_entries(gateway.env, "00000000-0000-4000-8000-000000000000") == []


def block_ledger(home: Path) -> Path:
    """Put a file where the ledger folder must be; returns where the folder went."""
    moved = home / "ledger.moved"
    if (home / "ledger").exists():
        (home / "ledger").rename(moved)
    (home / "ledger").write_bytes(b"not a folder")
    return moved


def test_an_unwritable_ledger_answers_503_until_it_is_writable_again(
    private_gateway: Gateway,
) -> None:
    gw = private_gateway
    before = gw.get("/v1/coverage")
    assert before.status_code == 200
    moved = block_ledger(gw.home)  # while it runs: the open file was moved away
    for path in ("/v1/coverage", "/v1/health/ready", RATES + "&from=2026-09-01&to=2026-09-30"):
        assert_api_error(gw.get(path), 503, "INTERNAL")
    assert gw.get("/v1/health/live").status_code == 200  # the public probe records nothing
    (gw.home / "ledger").unlink()
    after = gw.get("/v1/coverage")
    assert after.status_code == 200
    assert ledger_entries(gw.env, after.headers["X-Request-Id"])[0]["status"] == 200
    assert before.headers["X-Request-Id"].encode() in b"".join(
        path.read_bytes() for path in moved.glob("*.jsonl")
    )


def test_a_gateway_started_without_a_writable_ledger_is_not_ready(
    private_gateway: Gateway,
) -> None:
    gw = private_gateway
    gw.stop()
    shutil.rmtree(gw.home / "ledger", ignore_errors=True)
    block_ledger(gw.home)
    gw.start()
    assert_api_error(gw.get("/v1/health/ready"), 503, "INTERNAL")
    assert gw.get("/v1/health/live").status_code == 200


@pytest.mark.gateway_env(FXEV_RATE_LIMIT_PER_MIN="1000000", FXEV_RATE_LIMIT_PER_DAY="1000000")
def test_a_killed_gateway_lost_nothing_a_client_received(private_gateway: Gateway) -> None:
    gw = private_gateway
    paths = [
        "/v1/coverage",
        RATES.replace("/v1/rates?", "/v1/rates/latest?"),
        RATES + "&from=2025-01-01&to=2025-12-31&as_of_revision=5",
        evidence_path(gw),
    ]
    received: list[tuple[str, str]] = []
    lock = threading.Lock()
    stop = threading.Event()
    deadline = time.monotonic() + 20  # bounded whatever happens

    def client(offset: int) -> None:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {gw.token}"
        n = offset
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                resp = session.get(gw.url(paths[n % len(paths)]), timeout=5)
            except requests.RequestException:
                continue  # the gateway died under this request: nothing was received
            n += 1
            with lock:
                received.append(
                    (resp.headers["X-Request-Id"], hashlib.sha256(resp.content).hexdigest())
                )

    clients = [threading.Thread(target=client, args=(i,)) for i in range(4)]
    for thread in clients:
        thread.start()
    while len(received) < 200 and time.monotonic() < deadline:
        time.sleep(0.01)
    gw.kill()  # SIGKILL, master and workers, in the middle of the load
    stop.set()
    for thread in clients:
        thread.join(timeout=30)
    assert len(received) >= 200

    recorded = {e["x_request_id"]: e["sha256"] for e in read_entries(gw.home / "ledger")}
    missing = [(rid, sha) for rid, sha in received if recorded.get(rid) != sha]
    assert missing == []
