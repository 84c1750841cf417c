"""The whole fleet on one machine, as ``make fleet`` runs it (:mod:`builder.fleet`), started once
for this module: Redis, the store, the operator's home, two gateway hosts each with its own home,
its own mirror (``fxev mirror --follow``) and ``fxev serve``, and the edge in front of them.
Every test talks HTTP to the real
processes; load is bounded in time and count. Tests that stop a process start it again."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis
import requests

from builder.fleet import GatewayHost, Topology, plan
from builder.fleet.processes import CREDENTIALS
from builder.objstore.s3 import ObjectStore
from builder.store import mirrors
from builder.store.mirrors import mirror_name
from builder.tree.reader import TreeReader
from demo import local_source
from gateway.handlers.access import CATCH_UP_MARGIN_S
from gateway.ledger.shipping import INTERVAL_VARIABLE, shipped_entries
from tests.contract.conftest import NOW
from tests.support.clock import clear_of_lima_midnight

PER_MIN = 20  # the day's limit too: a day count that survives shows as a wait to midnight
COVERAGE = "/v1/coverage"
LATEST = "/v1/rates/latest?currency=USD&series=publicado"
RATES = "/v1/rates?currency=USD&series=publicado&from=2021-01-01&to=2023-12-31"
MIRROR_INTERVAL_S = 1
TEXT = "text/plain; charset=ISO-8859-1"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topology]:
    settings = {
        "FXEV_NOW": NOW,
        "FXEV_RATE_LIMIT_PER_MIN": str(PER_MIN),
        "FXEV_RATE_LIMIT_PER_DAY": str(PER_MIN),
        "FXEV_MIRROR_INTERVAL_S": str(MIRROR_INTERVAL_S),
        INTERVAL_VARIABLE: "2",
    }
    topology = plan(tmp_path_factory.mktemp("fleet"), settings=settings, edge_port=0)
    topology.start()
    try:
        yield topology
    finally:
        topology.stop()


@pytest.fixture
def store(fleet: Topology, monkeypatch: pytest.MonkeyPatch) -> Iterator[ObjectStore]:
    """The fleet's store, as its hosts reach it."""
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    objects = ObjectStore(fleet.env["FXEV_STORE_URL"], fleet.env["FXEV_S3_ENDPOINT"])
    try:
        yield objects
    finally:
        objects.close()


@pytest.fixture(autouse=True)
def _print_logs_on_failure(request: pytest.FixtureRequest, fleet: Topology) -> Iterator[None]:
    yield
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        for service in fleet.started:
            print(f"--- {service.name} ({service.log}) ---\n{service.log_text()[-4000:]}")


def issue(fleet: Topology, name: str) -> tuple[str, str]:
    lines = fleet.fxev(fleet.operator_env, "token", "issue", name).out.splitlines()
    return orjson.loads(lines[-2])["id"], lines[-1]


def get(gateway: GatewayHost, path: str, token: str, **headers: str) -> requests.Response:
    headers["Authorization"] = f"Bearer {token}"
    return requests.get(gateway.url + path, headers=headers, timeout=10)


def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> float:
    """Seconds until ``condition`` held; fails after ``timeout_s``."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout_s:
            pytest.fail(f"not within {timeout_s}s: {what}")
        time.sleep(0.2)
    return time.monotonic() - start


def assert_internal_retryable(resp: requests.Response) -> None:
    assert resp.status_code == 503, (resp.status_code, resp.text)
    body = resp.json()
    assert body["code"] == "INTERNAL" and body["retryable"] is True, body
    assert body["message"] == "Internal error.", body  # DECISIONS 9: no detail


def latest(gateway: GatewayHost, token: str) -> dict[str, Any]:
    resp = get(gateway, LATEST, token)
    assert resp.status_code == 200, resp.text
    return resp.json()  # type: ignore[no-any-return]


PUBLISHED_COUNTS = ("published_revision", "uploaded", "skipped")


def correct(
    fleet: Topology, line: bytes, then: Callable[[dict[str, Any]], None] = lambda _: None
) -> dict[str, Any]:
    """Capture ``line`` as the text file's answer on the operator's host, build and publish;
    what ``fxev publish`` printed. ``then`` runs the moment the publish returned."""
    env = fleet.operator_env
    with local_source() as (base, answer):
        answer[0] = (200, line, TEXT)
        captured = fleet.fxev(env, "capture", "--url", base + "/a/txt/tipoCambio.txt").last
    assert captured["outcome"] == "correccion", captured
    fleet.fxev(env, "build")
    published = fleet.fxev(env, "publish").last
    then(published)
    assert published["uploaded"] > 0
    again = fleet.fxev(env, "publish").last  # a second run uploads nothing
    counts = {k: again[k] for k in PUBLISHED_COUNTS}
    assert counts == {**{k: published[k] for k in PUBLISHED_COUNTS}, "uploaded": 0, "skipped": 0}
    return published


SEPTEMBER = "/v1/rates?currency=USD&series=publicado&from=2026-09-01&to=2026-09-30"


def mirror_of(gateway: GatewayHost) -> str:
    """The name ``fxev publish`` gives the gateway host's mirror."""
    return mirror_name(Path(gateway.env["FXEV_SITE"]))


# -- Redis: limits, tokens, page secret ---------------------------------------------------------


def test_one_token_through_both_gateways_gets_exactly_the_limit(fleet: Topology) -> None:
    token = issue(fleet, "limit")[1]
    clear_of_lima_midnight(180)  # the burst and both restarts in one day in Lima
    statuses: list[int] = []
    waits: list[int] = []
    lock = threading.Lock()

    def client(n: int) -> None:
        for i in range(10):
            resp = get(fleet.gateways[(n + i) % 2], COVERAGE, token, Connection="close")
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
    assert min(waits) > 60  # the day's count is full: the wait runs to Lima's midnight

    for gateway in fleet.gateways:  # both restarted: the count lives in Redis
        gateway.serve.stop()
        gateway.serve.start()
    for gateway in fleet.gateways:
        resp = get(gateway, COVERAGE, token)
        assert resp.status_code == 429
        assert int(resp.headers["Retry-After"]) > 60


def test_a_revocation_on_the_operators_host_fails_the_next_request_on_both(
    fleet: Topology,
) -> None:
    token_id, token = issue(fleet, "to-revoke")
    for gateway in fleet.gateways:
        assert get(gateway, COVERAGE, token).status_code == 200
    fleet.fxev(fleet.operator_env, "token", "revoke", token_id)
    for gateway in fleet.gateways:
        resp = get(gateway, COVERAGE, token)
        assert resp.status_code == 401
        assert resp.headers["WWW-Authenticate"] == 'Bearer error="invalid_token"'


def test_a_page_token_minted_by_one_gateway_is_accepted_by_the_other(fleet: Topology) -> None:
    token = issue(fleet, "pages")[1]
    first = get(fleet.gateways[0], RATES, token).json()
    assert first["next_page_token"]
    resp = get(fleet.gateways[1], RATES + f"&page_token={first['next_page_token']}", token)
    assert resp.status_code == 200, resp.text
    assert resp.json()["items"][0]["fecha_serie"] > first["items"][-1]["fecha_serie"]


# -- alerts and freshness --------------------------------------------------------------------


def test_alerts_and_freshness_agree_on_both_gateways_after_the_operator_acts(
    fleet: Topology,
) -> None:
    token = issue(fleet, "alerts")[1]
    env = fleet.operator_env

    def seen() -> list[tuple[list[dict[str, Any]], int]]:
        views = []
        for gateway in fleet.gateways:
            items = get(gateway, "/v1/alerts", token).json()["items"]
            freshness = get(gateway, "/v1/health/freshness", token).json()
            assert freshness["alertas_abiertas"] == len(items)
            views.append((items, freshness["alertas_abiertas"]))
        assert views[0] == views[1]
        return views

    operator_view = fleet.fxev(env, "alerts", "list").last["items"]
    assert seen()[0][0] == operator_view
    target = next(alert for alert in operator_view if alert["estado"] == "abierta")
    fleet.fxev(env, "alerts", "ack", target["id"], "--actor", "ops")
    items, count = seen()[0]
    assert {a["id"]: a["estado"] for a in items}[target["id"]] == "reconocida"
    assert count == len(operator_view)  # reconocida is still open
    fleet.fxev(env, "alerts", "resolve", target["id"], "--actor", "ops")
    items, count = seen()[0]
    assert target["id"] not in {a["id"] for a in items} and count == len(operator_view) - 1


# -- the store: publish, mirror, tampering, outage ---------------------------------------------


def test_a_published_correction_is_served_everywhere_once_publish_returns(
    fleet: Topology,
) -> None:
    """DECISIONS 12: "A published correction is visible on the very next request through the
    edge". Each host mirrors on its own poll, so an outside audit saw the edge serve the old
    as-of body for about a second after `fxev publish` returned. `fxev publish` now returns once
    every live mirror serves the revision (the mirrors say so in Redis), and names them."""
    [edge] = fleet.fronts
    token = issue(fleet, "correction")[1]
    before = latest(fleet.gateways[0], token)["dataset_revision"]
    as_of = SEPTEMBER + f"&as_of_revision={before}"
    authorized = {"Authorization": f"Bearer {token}"}
    warmed = requests.get(edge.url + as_of, headers=authorized, timeout=10)
    assert warmed.status_code == 200
    seen: dict[str, Any] = {}

    def served(published: dict[str, Any]) -> None:
        """Asked the moment publish returned: the gateways and the edge, without waiting."""
        seen["gateways"] = [latest(gateway, token) for gateway in fleet.gateways]
        seen["edge"] = requests.get(edge.url + as_of, headers=authorized, timeout=10)

    published = correct(fleet, b"21/09/2026|3.358|3.366|\r\n", then=served)
    revision = published["published_revision"]
    assert published["mirrored"] == sorted(mirror_of(g) for g in fleet.gateways)
    assert published["lagging"] == []
    for body in seen["gateways"]:
        assert body["dataset_revision"] == revision
        assert (body["compra"], body["venta"]) == ("3.358", "3.366"), body
    through = seen["edge"]
    assert through.headers["ETag"] != warmed.headers["ETag"]
    [corrected] = [i for i in warmed.json()["items"] if i["fecha_serie"] == "2026-09-21"]
    [now] = [i for i in through.json()["items"] if i["fecha_serie"] == "2026-09-21"]
    assert corrected["superseded_por"] is None and now["superseded_por"] is not None


def test_through_the_edge_a_clients_revision_never_goes_back_while_a_mirror_lags(
    fleet: Topology,
) -> None:
    """DECISIONS 4: "dataset_revision never goes backwards between two requests of a client".
    Each host mirrors a publish on its own poll, so for a moment the two gateways serve two
    revisions; the edge spread a client's requests over both, and a client saw the new revision,
    then the old one again (an outside audit: 9 9 10 9 10 ...). The edge keeps each client (its
    token) on one gateway: with one host's mirror stopped, every token sees one revision."""
    [edge] = fleet.fronts
    lagging = fleet.gateways[1]
    tokens = [issue(fleet, f"monotonic-{n}")[1] for n in range(6)]
    # Each asks one gateway directly (a token answered the new revision would wait on the other).
    ahead, behind = (issue(fleet, f"monotonic-probe-{n}")[1] for n in range(2))
    lagging.mirror.stop()
    # Its key would expire within three polls, perhaps before the publish looks (a slow build):
    # say its revision for longer, as a mirror alive but stuck would.
    site = Path(lagging.env["FXEV_SITE"])
    held = TreeReader(site).published_revision()
    assert held is not None
    client = redis.Redis.from_url(fleet.env["FXEV_REDIS_URL"])
    try:
        mirrors.report(client, site, held, interval_s=60)
    finally:
        client.close()
    try:
        published = correct(fleet, b"21/09/2026|3.361|3.369|\r\n")
        revision = published["published_revision"]
        assert published["lagging"] == [mirror_of(lagging)]
        wait_for(
            lambda: latest(fleet.gateways[0], ahead)["dataset_revision"] == revision,
            MIRROR_INTERVAL_S + 15,
            "the other gateway serving the new revision",
        )
        assert latest(lagging, behind)["dataset_revision"] < revision
        for token in tokens:
            seen = [
                requests.get(edge.url + LATEST, headers={"Authorization": f"Bearer {token}"},
                             timeout=10).json()["dataset_revision"]
                for _ in range(6)
            ]  # fmt: skip
            assert len(set(seen)) == 1, seen
    finally:
        lagging.mirror.start()
    wait_for(
        lambda: latest(lagging, behind)["dataset_revision"] == revision,
        MIRROR_INTERVAL_S + 15,
        "the lagging gateway catching up",
    )


def test_a_client_moved_to_a_gateway_a_mirror_behind_waits_for_it_and_never_goes_back(
    fleet: Topology,
) -> None:
    """DECISIONS 4 when a client moves (its gateway failed, or it asks the gateways directly):
    answered the new revision by one gateway, a token asking another whose mirror lags is not
    answered the old one. That gateway waits for its mirror (one mirror interval and a margin);
    mirrored meanwhile, it answers the new revision; not, a retryable 503 that the ledger holds
    and the limits do not count. Meanwhile a token never answered at the new revision is served
    at once."""
    fresh, lagging = fleet.gateways
    token, other, probe = (issue(fleet, f"moved-{n}")[1] for n in range(3))
    assert lagging.mirror.process is not None
    mirror_pid = lagging.mirror.process.pid
    os.kill(mirror_pid, signal.SIGSTOP)  # by its PID; its next poll comes once resumed
    try:
        published = correct(fleet, b"21/09/2026|3.362|3.371|\r\n")
        revision = published["published_revision"]
        assert published["lagging"] == [mirror_of(lagging)]  # its key still says the old one
        wait_for(
            lambda: latest(fresh, probe)["dataset_revision"] == revision,
            MIRROR_INTERVAL_S + 15,
            "the fresh gateway serving the new revision",
        )
        assert latest(fresh, token)["dataset_revision"] == revision  # counted: 1
        before = latest(lagging, other)["dataset_revision"]
        assert before < revision

        waiting: list[tuple[requests.Response, float]] = []

        def ask() -> None:
            started = time.monotonic()
            waiting.append((get(lagging, LATEST, token), time.monotonic() - started))

        asking = threading.Thread(target=ask)
        asking.start()
        time.sleep(0.3)
        started = time.monotonic()
        assert latest(lagging, other)["dataset_revision"] == before  # no one else waits
        assert time.monotonic() - started < 1.0
        asking.join(timeout=30)
        [(refused, waited)] = waiting
        assert_internal_retryable(refused)
        assert waited >= MIRROR_INTERVAL_S + CATCH_UP_MARGIN_S - 0.1, waited

        os.kill(mirror_pid, signal.SIGCONT)  # resumed: its next poll mirrors the publish
        resp = get(lagging, LATEST, token)  # waits for it, if it is not there yet
    finally:
        os.kill(mirror_pid, signal.SIGCONT)
    assert resp.status_code == 200, resp.text
    assert resp.json()["dataset_revision"] == revision  # counted: 2
    assert (resp.json()["compra"], resp.json()["venta"]) == ("3.362", "3.371")

    found: list[dict[str, Any]] = []

    def shown() -> bool:
        ran = fleet.fxev(
            fleet.operator_env, "requests", "show", refused.headers["X-Request-Id"], check=False
        )
        if ran.code == 0:
            found[:] = ran.last["entries"]
        return bool(found)

    wait_for(shown, 30, "the 503's ledger entry shipped")
    [entry] = found
    assert (entry["status"], entry["path"]) == (503, "/v1/rates/latest"), entry
    # Counted: the two requests answered 200, not the one refused after its wait.
    statuses = [get(fresh, LATEST, token).status_code for _ in range(PER_MIN - 1)]
    assert statuses == [200] * (PER_MIN - 2) + [429], statuses


def test_a_flipped_byte_in_the_store_is_refused_and_the_gateways_keep_serving(
    fleet: Topology, store: ObjectStore
) -> None:
    token = issue(fleet, "tamper")[1]
    for gateway in fleet.gateways:
        gateway.mirror.stop()
    held = latest(fleet.gateways[0], token)["dataset_revision"]
    before = set(store.list_keys("objects/"))
    try:
        revision = correct(fleet, b"21/09/2026|3.359|3.367|\r\n")["published_revision"]
        added = sorted(set(store.list_keys("objects/")) - before)
        assert added
        key = added[0]
        original = store.get(key)
        assert original is not None
        flipped = bytes([original[0] ^ 0x01]) + original[1:]
        store.client.put_object(Bucket=store.bucket, Key=store.full_key(key), Body=flipped)
        for gateway in fleet.gateways:
            gateway.mirror.start()
        client = redis.Redis.from_url(fleet.env["FXEV_REDIS_URL"])
        for gateway in fleet.gateways:
            refusing = f"{gateway.name}'s mirror refusing the object"
            wait_for(lambda g=gateway: "refused" in g.mirror.new_log(), 20, refusing)
            assert latest(gateway, token)["dataset_revision"] == held  # still serving
            # and saying so, so that a publish names it as lagging rather than forget it
            assert mirrors.live(client)[mirror_of(gateway)] == held
        client.close()
        store.client.put_object(Bucket=store.bucket, Key=store.full_key(key), Body=original)
        for gateway in fleet.gateways:
            wait_for(
                lambda g=gateway: latest(g, token)["dataset_revision"] == revision,
                MIRROR_INTERVAL_S + 15,
                f"{gateway.name} catching up once the object is whole again",
            )
    finally:
        for gateway in fleet.gateways:
            if not gateway.mirror.running:
                gateway.mirror.start()


def test_the_store_stopped_gateways_keep_answering_from_their_mirrors(fleet: Topology) -> None:
    token = issue(fleet, "store-down")[1]
    fleet.store.stop()
    try:
        for gateway in fleet.gateways:
            for path in (LATEST, COVERAGE, "/v1/alerts"):
                assert get(gateway, path, token).status_code == 200, path
            wait_for(lambda g=gateway: "unreachable" in g.mirror.new_log(), 20, "a failed poll")
            assert gateway.mirror.running
    finally:
        fleet.store.start()


# -- Redis down under load ---------------------------------------------------------------------


def load(
    fleet: Topology,
    tokens: list[str],
    seconds: float,
    per_client: int,
    got: list[requests.Response | None],
    pause_s: float = 0.05,
) -> None:
    """Each token a client alternating between the gateways, ``pause_s`` between its requests,
    until ``seconds`` passed or it sent ``per_client``; every response is appended to ``got`` as
    it comes (None: the connection failed)."""
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def client(n: int, token: str) -> None:
        for i in range(per_client):
            if time.monotonic() > end:
                return
            try:
                resp: requests.Response | None = get(fleet.gateways[(n + i) % 2], COVERAGE, token)
            except requests.RequestException:
                resp = None
            with lock:
                got.append(resp)
            time.sleep(pause_s)

    threads = [threading.Thread(target=client, args=(n, t)) for n, t in enumerate(tokens)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)


def test_redis_stopped_under_load_is_503_admits_nothing_past_the_limit_and_comes_back(
    fleet: Topology,
) -> None:
    token = issue(fleet, "outage")[1]
    got: list[requests.Response | None] = []
    loader = threading.Thread(target=load, args=(fleet, [token] * 4, 8, 60, got))
    loader.start()
    time.sleep(1.5)
    fleet.redis.stop()
    time.sleep(2.5)
    fleet.redis.start()  # the same port and folder: its AOF brings tokens and counts back
    loader.join(timeout=120)
    responses = [resp for resp in got if resp is not None]
    statuses = [resp.status_code for resp in responses]
    assert set(statuses) <= {200, 429, 503}, statuses
    assert statuses.count(200) <= PER_MIN
    assert 503 in statuses
    for resp in responses:
        if resp.status_code == 503:
            assert_internal_retryable(resp)
    again = issue(fleet, "after-outage")[1]
    for gateway in fleet.gateways:
        for _ in range(2):  # both workers reconnect
            assert get(gateway, COVERAGE, again).status_code == 200
    assert get(fleet.gateways[0], COVERAGE, token).status_code == 429  # the count survived


# -- the ledger ------------------------------------------------------------------------------


def test_every_response_under_load_with_a_gateway_killed_has_its_shipped_ledger_entry(
    fleet: Topology, store: ObjectStore
) -> None:
    tokens = [issue(fleet, f"ledger-{n}")[1] for n in range(4)]
    got: list[requests.Response | None] = []
    # About 6 s of load (20 requests a client, 0.3 s apart); the kill lands in its middle.
    loader = threading.Thread(target=load, args=(fleet, tokens, 15, PER_MIN, got, 0.3))
    loader.start()
    time.sleep(1.5)
    victim = fleet.gateways[0]
    assert loader.is_alive()
    answered_before = [resp for resp in list(got) if resp and resp.url.startswith(victim.url)]
    victim.serve.kill()  # SIGKILL, its workers too: nothing shipped at its shutdown
    victim.serve.start()
    loader.join(timeout=120)
    received = [resp for resp in got if resp is not None]
    assert len(received) >= 20 and len(got) == len(tokens) * PER_MIN
    assert answered_before  # it served under load, then was killed
    ids = {resp.headers["X-Request-Id"] for resp in received}

    def shipped() -> set[str]:
        return {entry["x_request_id"] for entry in shipped_entries(store)}

    wait_for(lambda: ids <= shipped(), 30, "every received response shipped")
    for request_id in sorted(ids)[:3]:  # as an operator finds them
        shown = fleet.fxev(fleet.operator_env, "requests", "show", request_id).last["entries"]
        assert [entry["x_request_id"] for entry in shown] == [request_id]


def test_redis_holds_hashes_counts_and_the_alert_state_only(fleet: Topology) -> None:
    import redis

    client = redis.Redis.from_url(fleet.env["FXEV_REDIS_URL"])
    try:
        keys = sorted(key.decode() for key in client.keys("fxev:*"))
        values = b"".join(
            b"".join(client.hgetall(key).values()) for key in keys if key.startswith("fxev:tok:")
        )
    finally:
        client.close()
    assert {"fxev:page_secret", "fxev:tokens", "fxev:alerts"} <= set(keys)
    assert any(key.endswith(":min") for key in keys)
    assert any(key.startswith("fxev:rv:{") for key in keys)  # a revision mark per token
    assert b"fxev_" not in values  # no token's text, only its hash
    assert (fleet.root / "redis" / "appendonlydir").is_dir()


def test_a_gateways_auth_lane_counts_in_redis_with_every_other_request(fleet: Topology) -> None:
    """The edge's auth lane in fleet mode (docs/operating/edge.md#lane): a step it takes is
    counted by Redis, so the other gateway's direct requests see it; a revoked token is left to
    the full step."""
    import redis

    client = redis.Redis.from_url(fleet.env["FXEV_REDIS_URL"])
    try:
        credential = client.get("fxev:edge_secret")
    finally:
        client.close()
    assert credential is not None
    warming_id, warming = issue(fleet, "lane-warming")
    _, token = issue(fleet, "lane")
    gateway = fleet.gateways[0]
    as_of = f"{RATES}&as_of_revision={latest(gateway, warming)['dataset_revision']}"
    sent = {
        "X-Fxev-Edge": credential.decode(),
        "X-Original-URI": as_of,
        "X-Original-Method": "GET",
        "Authorization": f"Bearer {token}",
    }
    lane = f"http://{gateway.lane}/_edge/auth"
    statuses = []
    for _ in range(PER_MIN - 2):  # each 403 counted nothing; each warming request warms a worker
        statuses.append(requests.get(lane, headers=sent, timeout=10).status_code)
        if statuses[-1] == 200:
            break
        assert get(gateway, as_of, warming, Connection="close").status_code == 200
    assert statuses[-1] == 200 and set(statuses) <= {200, 403}, statuses
    others = [get(fleet.gateways[1], COVERAGE, token).status_code for _ in range(PER_MIN)]
    assert others == [200] * (PER_MIN - 1) + [429]  # the lane's one step was counted
    fleet.fxev(fleet.operator_env, "token", "revoke", warming_id)
    sent["Authorization"] = f"Bearer {warming}"
    assert requests.get(lane, headers=sent, timeout=10).status_code == 403


def test_the_edge_serves_the_fleets_cached_answers_only_to_tokens_the_fleet_accepts(
    fleet: Topology,
) -> None:
    [edge] = fleet.fronts
    token_id, token = issue(fleet, "through-the-edge")
    direct = get(fleet.gateways[0], LATEST, token)
    as_of = f"{RATES}&as_of_revision={direct.json()['dataset_revision']}"
    expected = get(fleet.gateways[1], as_of, token)
    answers = [
        requests.get(edge.url + as_of, headers={"Authorization": f"Bearer {token}"}, timeout=10)
        for _ in range(2)
    ]
    assert [a.status_code for a in answers] == [200, 200]
    assert answers[1].headers["X-Cache"] == "HIT"
    assert all(a.content == expected.content for a in answers)
    request_ids = {a.headers["X-Request-Id"] for a in [expected, *answers]}
    assert len(request_ids) == 3  # a hit has a request id of its own
    fleet.fxev(fleet.operator_env, "token", "revoke", token_id)
    refused = requests.get(
        edge.url + as_of, headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    assert refused.status_code == 401 and refused.json()["code"] == "UNAUTHORIZED"
