"""Per-token rate limits on a real 2-worker gateway (docs/decisions.md#rate-limits), with small
configured limits."""

from __future__ import annotations

import threading

import pytest
import requests

from tests.contract.conftest import Gateway, issue_token, ledger_entries
from tests.contract.test_api import assert_api_error
from tests.support.clock import clear_of_lima_midnight

COVERAGE = "/v1/coverage"


def assert_rate_limited(resp: requests.Response, at_most: int) -> int:
    assert resp.status_code == 429, resp.text
    body = resp.json()
    assert body["code"] == "RATE_LIMITED"
    assert body["retryable"] is True
    assert body["request_id"] == resp.headers["X-Request-Id"]
    retry_after = int(resp.headers["Retry-After"])
    assert 1 <= retry_after <= at_most
    return retry_after


def ledger_files_with_entries(gateway: Gateway) -> int:
    folder = gateway.home / "ledger"
    return sum(1 for path in folder.glob("*.jsonl") if path.stat().st_size > 0)


@pytest.mark.gateway_env(FXEV_RATE_LIMIT_PER_MIN="7", FXEV_RATE_LIMIT_PER_DAY="1000")
def test_two_clients_on_one_token_get_exactly_the_minute_limit(private_gateway: Gateway) -> None:
    statuses: list[int] = []
    lock = threading.Lock()

    def client() -> None:
        for _ in range(12):
            # A new connection each time, so the kernel spreads them over both workers.
            resp = private_gateway.get(COVERAGE, headers={"Connection": "close"})
            with lock:
                statuses.append(resp.status_code)
            if resp.status_code == 429:
                assert_rate_limited(resp, 60)

    threads = [threading.Thread(target=client) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(statuses) == [200] * 7 + [429] * 17
    assert ledger_files_with_entries(private_gateway) == 2  # both workers answered


@pytest.mark.gateway_env(FXEV_RATE_LIMIT_PER_MIN="6", FXEV_RATE_LIMIT_PER_DAY="1000")
def test_what_counts_and_what_does_not(private_gateway: Gateway) -> None:
    gw = private_gateway
    for _ in range(10):  # live never counts
        assert gw.get("/v1/health/live", token=None).status_code == 200
        assert gw.get("/v1/health/live").status_code == 200
    for _ in range(10):  # a request without a valid token is refused before the limiter
        assert_api_error(gw.get(COVERAGE, token="fxev_0000000000000000_x"), 401, "UNAUTHORIZED")
    counted = [
        gw.request("HEAD", COVERAGE).status_code,
        gw.get("/v1/health/ready").status_code,
        gw.get(COVERAGE + "?x=1").status_code,  # a 400 counts
        gw.get("/v1/observations/not-a-uuid").status_code,  # a 422 counts
    ]
    as_of = gw.get(
        "/v1/rates?currency=USD&series=publicado&from=2026-09-01&to=2026-09-30&as_of_revision=3"
    )
    counted.append(as_of.status_code)
    counted.append(
        gw.get(
            as_of.url.removeprefix(gw.base_url), headers={"If-None-Match": as_of.headers["ETag"]}
        ).status_code
    )
    assert counted == [200, 200, 400, 422, 200, 304]
    refused = [gw.get(COVERAGE) for _ in range(5)]
    for resp in refused:  # refusals do not count: they do not push the wait further
        assert_rate_limited(resp, 60)
    assert int(refused[-1].headers["Retry-After"]) <= int(refused[0].headers["Retry-After"])
    assert gw.get("/v1/health/live").status_code == 200  # live still answers
    # A 429 is recorded in the ledger like any response to a valid token.
    assert [e["status"] for e in ledger_entries(gw.env, refused[0].headers["X-Request-Id"])] == [
        429
    ]


@pytest.mark.gateway_env(FXEV_RATE_LIMIT_PER_MIN="100", FXEV_RATE_LIMIT_PER_DAY="5")
def test_a_restart_keeps_the_days_count(private_gateway: Gateway) -> None:
    gw = private_gateway
    clear_of_lima_midnight(120)  # one day in Lima, restart included
    assert [gw.get(COVERAGE).status_code for _ in range(5)] == [200] * 5
    first = assert_rate_limited(gw.get(COVERAGE), 24 * 3600)
    assert first > 60  # the day's limit: the wait runs to midnight in Lima, not a minute
    gw.stop()
    gw.start()
    assert_rate_limited(gw.get(COVERAGE), first)


@pytest.mark.gateway_env(FXEV_RATE_LIMIT_PER_MIN="2", FXEV_RATE_LIMIT_PER_DAY="1000")
def test_tokens_are_limited_separately(private_gateway: Gateway) -> None:
    _, other = issue_token(private_gateway.env, "other")
    assert [private_gateway.get(COVERAGE).status_code for _ in range(3)] == [200, 200, 429]
    assert private_gateway.get(COVERAGE, token=other).status_code == 200
