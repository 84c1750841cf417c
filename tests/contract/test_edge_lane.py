"""The edge's auth lane (docs/operating/edge.md#the-auth-lane), asked directly as the edge asks
it: for a valid token under its limits and an immutable answer the worker has sent, the same
200 as the full auth step, counted once and recorded with the same ledger entry; for anything
else a 403 that counts and records nothing (the edge then takes the full step); and nothing at
all for a request without the edge's credential."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import requests

from gateway.edge import steps
from tests.contract.conftest import (
    Gateway,
    _running,
    copy_demo,
    issue_token,
    ledger_entries,
)
from tests.contract.test_edge_routes import AS_OF, auth, credential
from tests.support.ports import free_port
from tokens.store import TokenStore

PER_MIN = 30
# Enough new connections that the kernel has spread them over both workers (each has its memo).
WARMING = 24


@pytest.fixture(scope="module")
def laned(tmp_path_factory: pytest.TempPathFactory, demo_home: Path) -> Iterator[Gateway]:
    """A gateway over a private copy of the demo, with its auth lane."""
    base = tmp_path_factory.mktemp("lane")
    lane = f"127.0.0.1:{free_port()}"
    env, token = copy_demo(
        demo_home, base, FXEV_EDGE_LANE=lane, FXEV_RATE_LIMIT_PER_MIN=str(PER_MIN)
    )
    yield from _running(base, env, token)


def lane_url(gateway: Gateway) -> str:
    return f"http://{gateway.env['FXEV_EDGE_LANE']}{steps.AUTH_PATH}"


def ask(gateway: Gateway, target: str, token: str | None, **headers: str) -> requests.Response:
    """The edge's auth step for ``GET target``, to the lane."""
    sent = {"X-Fxev-Edge": credential(gateway), "X-Original-URI": target, **headers}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    sent.setdefault("X-Original-Method", "GET")
    return requests.get(lane_url(gateway), headers=sent, timeout=10)


def warm(gateway: Gateway, target: str) -> None:
    """Have both workers answer ``target`` once (the lane answers only what its worker has)."""
    _, token = issue_token(gateway.env, "warming")
    for _ in range(WARMING):
        assert auth(gateway, target, token).status_code == 200


def fresh_token(gateway: Gateway, name: str = "lane") -> str:
    return issue_token(gateway.env, name)[1]


def test_a_warm_answer_is_the_full_steps_200_with_the_same_ledger_entry(laned: Gateway) -> None:
    warm(laned, AS_OF)
    token = fresh_token(laned)
    full = auth(laned, AS_OF, token)
    lane = ask(laned, AS_OF, token)
    assert lane.status_code == full.status_code == 200 and lane.content == b""
    assert lane.headers[steps.ETAG] == full.headers[steps.ETAG]
    assert lane.headers["X-Request-Id"] != full.headers["X-Request-Id"]
    [by_lane] = ledger_entries(laned.env, lane.headers["X-Request-Id"])
    [by_full] = ledger_entries(laned.env, full.headers["X-Request-Id"])
    different = {"ts", "x_request_id"}
    assert {k: v for k, v in by_lane.items() if k not in different} == {
        k: v for k, v in by_full.items() if k not in different
    }
    assert set(by_lane) == set(by_full)


def test_evidence_too(laned: Gateway) -> None:
    token = fresh_token(laned)
    latest = laned.get("/v1/rates/latest?currency=USD&series=publicado").json()
    detail = laned.get(f"/v1/observations/{latest['observacion_id']}").json()
    target = f"/v1/evidence/{detail['observacion']['evidencia_id']}"
    warm(laned, target)
    answer = ask(laned, target, token)
    assert answer.status_code == 200
    [entry] = ledger_entries(laned.env, answer.headers["X-Request-Id"])
    assert entry["path"] == target and entry["status"] == 200 and entry["request_id"] is None
    assert f'"{entry["sha256"]}"' == answer.headers[steps.ETAG]


def test_the_lane_counts_like_a_direct_request_and_leaves_the_refusal_to_the_full_step(
    laned: Gateway,
) -> None:
    warm(laned, AS_OF)
    token = fresh_token(laned)
    passed = [ask(laned, AS_OF, token).status_code for _ in range(PER_MIN)]
    assert passed == [200] * PER_MIN
    assert ask(laned, AS_OF, token).status_code == 403  # over: the lane does not decide it
    refused = laned.get(AS_OF, token=token)
    assert refused.status_code == 429  # the lane's answers were counted, once each
    assert int(refused.headers["Retry-After"]) >= 1


@pytest.mark.parametrize(
    "case",
    ["no token", "bogus token", "revoked token", "HEAD", "If-None-Match", "two tokens", "cold"],
)
def test_what_the_lane_does_not_take_is_a_403_that_counts_and_records_nothing(
    laned: Gateway, case: str
) -> None:
    warm(laned, AS_OF)
    token = fresh_token(laned, case.replace(" ", "-"))
    target, headers, presented = AS_OF, {}, token
    if case == "no token":
        presented = None
    elif case == "bogus token":
        presented = "fxev_0000000000000000_bogus"
    elif case == "revoked token":
        with TokenStore.open(laned.home) as store:
            [record] = [r for r in store.list() if r.name == case.replace(" ", "-")]
            store.revoke(record.id, datetime.now(UTC))
    elif case == "HEAD":
        headers["X-Original-Method"] = "HEAD"
    elif case == "If-None-Match":
        headers["If-None-Match"] = '"abc"'
    elif case == "cold":
        target = AS_OF.replace("2026-09-30", "2026-09-29")  # never answered by this gateway
    before = len(ledger_entries_all(laned))
    if case == "two tokens":
        answer = raw_lane_request(laned, target, [f"Bearer {token}", f"Bearer {token}"])
        assert answer.startswith(b"HTTP/1.1 403 ")
    else:
        answer_response = ask(laned, target, presented, **headers)
        assert answer_response.status_code == 403 and answer_response.content == b""
        assert "X-Request-Id" not in answer_response.headers
    assert len(ledger_entries_all(laned)) == before
    if case not in ("no token", "bogus token", "revoked token"):
        # Nothing was counted: the whole minute's allowance is still there.
        assert [laned.get(AS_OF, token=token).status_code for _ in range(PER_MIN)] == [
            200
        ] * PER_MIN


def test_without_the_edges_credential_the_lane_answers_nothing(laned: Gateway) -> None:
    token = fresh_token(laned)
    for credential_sent in ({}, {"X-Fxev-Edge": "0" * 64}):
        sent = {"X-Original-URI": AS_OF, "Authorization": f"Bearer {token}", **credential_sent}
        answer = requests.get(lane_url(laned), headers=sent, timeout=10)
        assert answer.status_code == 404 and answer.headers.get("Connection") == "close"
    wrong_path = requests.get(
        lane_url(laned).replace(steps.AUTH_PATH, "/v1/rates"),
        headers={"X-Fxev-Edge": credential(laned), "X-Original-URI": AS_OF},
        timeout=10,
    )
    assert wrong_path.status_code == 404


@pytest.mark.parametrize(
    "data",
    [
        b"NOT HTTP AT ALL\r\n\r\n",
        # what httptools reads as a protocol switch, which it reports apart from its errors
        b"GET /_edge/auth HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
        b"CONNECT 127.0.0.1:80 HTTP/1.1\r\nHost: 127.0.0.1:80\r\n\r\n",
    ],
    ids=["not HTTP", "an upgrade", "CONNECT"],
)
def test_a_malformed_request_closes_the_connection(laned: Gateway, data: bytes) -> None:
    host, _, port = laned.env["FXEV_EDGE_LANE"].rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(data)
        answer = sock.recv(4096)
        assert answer.startswith(b"HTTP/1.1 404 ")
        assert sock.recv(4096) == b""  # closed
    # and the lane goes on answering others
    assert ask(laned, AS_OF, None).status_code == 403


def raw_lane_request(gateway: Gateway, target: str, authorizations: list[str]) -> bytes:
    """One auth step written by hand (``requests`` cannot send a header twice)."""
    host, _, port = gateway.env["FXEV_EDGE_LANE"].rpartition(":")
    lines = [
        f"GET {steps.AUTH_PATH} HTTP/1.1",
        f"Host: {host}",
        f"X-Fxev-Edge: {credential(gateway)}",
        f"X-Original-URI: {target}",
        "X-Original-Method: GET",
        *(f"Authorization: {value}" for value in authorizations),
        "Connection: close",
    ]
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks)


def ledger_entries_all(gateway: Gateway) -> list[bytes]:
    """Every complete ledger line of the gateway's home."""
    folder = gateway.home / "ledger"
    return [
        line
        for path in sorted(folder.glob("*.jsonl"))
        for line in path.read_bytes().split(b"\n")
        if line.strip(b"\0")
    ]
