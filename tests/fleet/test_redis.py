"""Fleet mode's Redis (docs/operating/fleet.md#redis): two real gateway processes on one site
share one real ``redis-server`` for rate limits, tokens and the page-token secret."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests

from builder.core.vocabulary import LIMA
from gateway.fleet_limits import RedisGate
from gateway.ratelimit import Limits, RateLimiter, epoch_us
from tests.contract.conftest import Gateway, copy_demo, fxev, issue_token, seed_demo
from tests.fleet.redis_server import RedisServer

PER_MIN = 20
COVERAGE = "/v1/coverage"
RATES = "/v1/rates?currency=USD&series=publicado&from=2021-01-01&to=2023-12-31"


def seconds_to_lima_midnight() -> float:
    now = datetime.now(LIMA)
    midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), tzinfo=LIMA)
    return (midnight - now.astimezone(UTC)).total_seconds()


@pytest.fixture(scope="module")
def pair(
    tmp_path_factory: pytest.TempPathFactory, redis_server: RedisServer
) -> Iterator[tuple[Gateway, Gateway]]:
    """Two gateways, one site and home, one Redis; both limits ``PER_MIN`` (the day's too, so
    a day count that survives shows as a wait until Lima's midnight)."""
    demo = tmp_path_factory.mktemp("demo")
    seed_demo(demo)
    base = tmp_path_factory.mktemp("fleet")
    limits = {"FXEV_RATE_LIMIT_PER_MIN": str(PER_MIN), "FXEV_RATE_LIMIT_PER_DAY": str(PER_MIN)}
    env, _ = copy_demo(demo, base, FXEV_REDIS_URL=redis_server.url, **limits)
    token = issue_token(env, "fleet")[1]
    gateways = (
        Gateway(env=env, token=token, log_path=base / "a.log"),
        Gateway(env=env, token=token, log_path=base / "b.log"),
    )
    try:
        for gateway in gateways:
            gateway.start()
        yield gateways
    finally:
        for gateway in gateways:
            gateway.stop()


def assert_internal_retryable(resp: requests.Response) -> None:
    assert resp.status_code == 503, resp.text
    body = resp.json()
    assert body["code"] == "INTERNAL" and body["retryable"] is True


def test_one_token_through_two_gateways_gets_exactly_the_limit(
    pair: tuple[Gateway, Gateway],
) -> None:
    statuses: list[int] = []
    waits: list[int] = []
    lock = threading.Lock()

    def client(n: int) -> None:
        for i in range(10):
            gateway = pair[(n + i) % 2]
            resp = gateway.get(COVERAGE, headers={"Connection": "close"})
            with lock:
                statuses.append(resp.status_code)
                if resp.status_code == 429:
                    assert resp.json()["code"] == "RATE_LIMITED"
                    waits.append(int(resp.headers["Retry-After"]))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(statuses) == [200] * PER_MIN + [429] * 20
    assert all(wait >= 1 for wait in waits)
    if seconds_to_lima_midnight() < 120:
        pytest.skip("too close to Lima's midnight to tell the day's count from the minute's")
    assert min(waits) > 60  # the day's count is full: the wait runs to Lima's midnight

    for gateway in pair:  # both restarted: the count lives in Redis
        gateway.stop()
        gateway.start()
    for gateway in pair:
        resp = gateway.get(COVERAGE)
        assert resp.status_code == 429
        assert int(resp.headers["Retry-After"]) > 60


def test_a_revocation_fails_the_next_request_on_both_gateways(
    pair: tuple[Gateway, Gateway],
) -> None:
    token_id, token = issue_token(pair[0].env, "to-revoke")
    for gateway in pair:
        assert gateway.get(COVERAGE, token=token).status_code == 200
    fxev(pair[0].env, "token", "revoke", token_id)
    for gateway in pair:
        resp = gateway.get(COVERAGE, token=token)
        assert resp.status_code == 401
        assert resp.headers["WWW-Authenticate"] == 'Bearer error="invalid_token"'
    listed = fxev(pair[0].env, "token", "list")[-1]
    assert f'"id":"{token_id}"' in listed and '"state":"revoked"' in listed
    assert "sha256" not in listed


def test_a_page_token_minted_by_one_gateway_is_accepted_by_the_other(
    pair: tuple[Gateway, Gateway],
) -> None:
    token = issue_token(pair[0].env, "pages")[1]
    first = pair[0].get(RATES, token=token).json()
    page_token = first["next_page_token"]
    assert page_token
    resp = pair[1].get(RATES, token=token, params={"page_token": page_token})
    assert resp.status_code == 200, resp.text
    assert resp.json()["items"][0]["fecha_serie"] > first["items"][-1]["fecha_serie"]


def test_redis_down_is_503_and_service_resumes_by_itself(
    pair: tuple[Gateway, Gateway], redis_server: RedisServer
) -> None:
    token = issue_token(pair[0].env, "outage")[1]
    assert pair[0].get(COVERAGE, token=token).status_code == 200
    redis_server.stop()
    try:
        for gateway in pair:
            assert_internal_retryable(gateway.get(COVERAGE, token=token))
            assert_internal_retryable(gateway.get("/v1/health/ready", token=token))
            assert gateway.get("/v1/health/live", token=None).status_code == 200
    finally:
        redis_server.start()  # the same port and folder: the AOF brings the tokens back
    for gateway in pair:
        for _ in range(2):  # both workers
            assert gateway.get(COVERAGE, token=token).status_code == 200
        assert gateway.get("/v1/health/ready", token=token).status_code == 200


def test_tokens_and_limits_live_only_as_hashes_and_counts(redis_server: RedisServer) -> None:
    client = redis_server.client()
    try:
        keys = sorted(key.decode() for key in client.keys("fxev:*"))
        values = b"".join(
            b"".join(client.hgetall(key).values()) for key in keys if key.startswith("fxev:tok:")
        )
    finally:
        client.close()
    assert "fxev:page_secret" in keys and "fxev:tokens" in keys
    assert any(key.endswith(":min") for key in keys)
    assert b"fxev_" not in values  # no token's text, only its hash
    assert Path(redis_server.folder / "appendonlydir").is_dir()


def test_the_script_decides_as_the_file_limiter(redis_server: RedisServer, tmp_path: Path) -> None:
    """Same limits, same instants (across a Lima midnight): the same decisions, Retry-After
    included, from the Redis script and from one host's ring files."""
    limits = Limits(per_min=4, per_day=9)
    gate = RedisGate.open(redis_server.url, limits)
    files = RateLimiter.open(tmp_path, limits)
    rng = random.Random(5)
    # Instants from 5 minutes before the next Lima midnight (Redis expires the day's counter a
    # day after its day, on its own clock: a day long past would be gone at once).
    start = epoch_us(datetime.now(UTC) + timedelta(seconds=seconds_to_lima_midnight() - 300))
    try:
        now = start
        for _ in range(400):
            now += rng.choice((1, 1_000, 900_000, 7_000_000, 31_000_000))
            assert gate.acquire_us("0123456789abcdef", now) == files.acquire_us("tok", now), now
    finally:
        gate.close()
        files.close()
