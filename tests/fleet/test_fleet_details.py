"""Fleet mode (DECISIONS section 10, and the section 3 rows of publish, mirror, ledger ship and
requests show) in detail, from the outside: real SeaweedFS, real Redis, real gateways,
real ``fxev`` processes on 127.0.0.1. Each test quotes the rule it checks.

Two groups:

* the store alone (the session's SeaweedFS, a prefix per test; ``fxev`` in process or as a
  subprocess): tampered objects of every kind, a key overwritten with other bytes behind forged
  metadata, a publish and a mirror killed half way, one-line errors;
* one fleet topology for the module (Redis, the store, the operator's home, two gateway hosts,
  no edge): revocation on every worker, exact counting of mixed requests across gateways, page
  tokens and as-of bytes across gateways, ``requests show`` of a body ``request_id`` served by
  both hosts, Redis down at a gateway's start, the token commands with Redis down, the store down.

Every process started here is stopped by its PID.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import orjson
import pytest
import requests

from builder.store import keys, mirrors
from builder.tree import layout
from builder.tree.reader import TreeReader
from tests.fleet.conftest import Fxev, Host, bucket_key
from tests.fleet.seaweed import BUCKET, Relay, client, relay_to
from tests.fleet.test_publish_mirror import env_of, files_of, gateway_env
from tests.fleet.test_publish_mirror_log import build_with_log
from tests.fleet.test_topology import assert_internal_retryable

ROOT = Path(__file__).resolve().parents[2]
STARTED_PIDS: list[int] = []  # every process this module starts itself; checked at the end


# -- helpers -------------------------------------------------------------------------------------


@pytest.fixture
def slow_relay(store_env: dict[str, str]) -> Iterator[Relay]:
    """The store behind a relay that delays each forwarded chunk: slow enough to kill a command
    half way through its work."""
    with relay_to(store_env, delay_s=0.04) as relay:
        yield relay


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def s3_of(store_env: dict[str, str]) -> Any:
    return client(store_env["FXEV_S3_ENDPOINT"])


def store_get(store_env: dict[str, str], key: str) -> bytes:
    body = s3_of(store_env).get_object(Bucket=BUCKET, Key=bucket_key(store_env, key))["Body"]
    return body.read()  # type: ignore[no-any-return]


def store_put(store_env: dict[str, str], key: str, data: bytes, **extra: Any) -> None:
    s3_of(store_env).put_object(Bucket=BUCKET, Key=bucket_key(store_env, key), Body=data, **extra)


def store_keys(store_env: dict[str, str]) -> set[str]:
    s3 = s3_of(store_env)
    prefix = store_env["FXEV_STORE_URL"].split("/", 3)[3] + "/"
    found: set[str] = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        found |= {item["Key"][len(prefix) :] for item in page.get("Contents", ())}
    return found


def popen_fxev(env: dict[str, str], *args: str, out: Path) -> subprocess.Popen[bytes]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")} | env
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "builder", *args],
            cwd=ROOT, env=full, stdout=handle, stderr=subprocess.STDOUT,
        )  # fmt: skip
    STARTED_PIDS.append(process.pid)
    return process


def kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)  # by its PID
    process.wait(timeout=20)


def answers_at_head(site: Path, head: int) -> None:
    """The site's pointer names ``head`` and every record, root and detail it names reads back
    verified (what the gateway's reader does)."""
    tree = TreeReader(site)
    assert tree.published_revision() == head
    for revision in range(1, head + 1):
        record = tree.record(revision)
        for serie in tree.root(revision).served:
            tree.rates(serie, "1900-01-01", "2100-12-31", revision, 0, 1000)
        tree.coverage(revision)
        for evidence_id in record.evidence:
            assert tree.evidence_meta(evidence_id, head) is not None
        for observation_id in record.details:
            assert tree.detail(observation_id, head) is not None


# == the store =====================================================================================

TAMPER_KINDS = (
    "pointer-garbage",
    "pointer-inflated",
    "publication",
    "page-map",
    "explorer-page",
    "observation-page",
    "invalidations",
    "log-checkpoint-signature",
    "log-key",
)


def tamper_target(store_env: dict[str, str], kind: str) -> tuple[str, bytes]:
    """(key, tampered bytes) of one kind of object of the store's newest publication."""
    pointer = orjson.loads(store_get(store_env, keys.POINTER))
    head = int(pointer["revision"])
    if kind == "pointer-garbage":
        return keys.POINTER, b'{"revision": "not a pointer"'
    if kind == "pointer-inflated":  # refused before fetching 100,000 records that are not there
        return keys.POINTER, orjson.dumps(pointer | {"revision": head + 100_000})
    publication_sha = pointer[keys.PUBLICATION_FIELD]
    publication = keys.Publication.decode(
        store_get(store_env, keys.publication_key(publication_sha))
    )
    if kind == "publication":
        key = keys.publication_key(publication_sha)
        data = store_get(store_env, key)
        return key, data.replace(b'"revision":', b'"revision": ', 1)
    if kind == "page-map":
        assert publication.page_map is not None
        key = keys.map_key(publication.page_map)
        return key, store_get(store_env, key) + b" "
    if kind == "explorer-page":
        assert publication.page_map is not None
        page_map = orjson.loads(store_get(store_env, keys.map_key(publication.page_map)))
        sha = sorted(entry[1] for entry in page_map["pages"].values())[0]
        key = keys.page_key(sha)
        return key, store_get(store_env, key).replace(b"<", b"<!-- x --><", 1)
    if kind == "observation-page":
        assert publication.observation_pages, "the seed has observation pages"
        sha = sorted(publication.observation_pages.values())[0]
        key = keys.page_key(sha)
        return key, store_get(store_env, key).replace(b"<", b"<!-- x --><", 1)
    if kind == "invalidations":
        assert publication.invalidations, "the seed has corrections, hence invalidations"
        revision = sorted(publication.invalidations, key=int)[0]
        key = keys.invalidations_key(int(revision))
        data = store_get(store_env, key)
        return key, data.rstrip() + b" \n"
    if kind == "log-checkpoint-signature":
        key = f"log/checkpoints/{head}"
        text = store_get(store_env, key).decode()
        body, _, signature = text.rpartition("\n\u2014 ")
        name, _, blob = signature.strip().rpartition(" ")
        raw = bytearray(__import__("base64").b64decode(blob))
        raw[-1] ^= 0x01
        forged = __import__("base64").b64encode(bytes(raw)).decode()
        return key, f"{body}\n\u2014 {name} {forged}\n".encode()
    if kind == "log-key":
        key = "log/key"
        original = store_get(store_env, key)
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        from builder.tlog import note

        text = original.decode().strip()
        name = note.parse_verifier_key(text).name
        other = note.verifier_key(name, Ed25519PrivateKey.generate()).text
        return key, (other + "\n").encode() if original.endswith(b"\n") else other.encode()
    raise AssertionError(kind)


def correct_a_published_date(operator: Host, fxev: Fxev) -> None:
    """Capture other values for the seed's first date (a correction), then build with the log."""
    from demo import local_source

    env = {"FXEV_HOME": str(operator.home), "FXEV_SITE": str(operator.site)}
    with local_source() as (base, answer):
        answer[0] = (200, b"28/12/1996|3.111|3.222|\r\n", "text/plain; charset=ISO-8859-1")
        ran = fxev(env, "capture", "--url", base + "/a/txt/tipoCambio.txt")
    assert ran.code == 0 and ran.last["outcome"] == "correccion", (ran.out, ran.err)
    build_with_log(operator)
    assert list((operator.site / layout.INVALIDATIONS).glob("*.json")), "no invalidations"


@pytest.mark.parametrize("kind", TAMPER_KINDS)
def test_every_kind_of_tampered_object_is_refused_on_a_first_mirror(
    kind: str, operator: Host, gateway_site: Path, store_env: dict[str, str], fxev: Fxev
) -> None:
    """DECISIONS 10: "`fxev mirror [--follow]` on each gateway host pulls into its local
    `FXEV_SITE`, checks every object against its recorded SHA-256 before placing it (a tampered
    object is refused: exit 1, the local published revision stays), and moves the local pointer
    last." Each kind of object of a publication is tampered in turn (the existing tests cover an
    evidence object, a revision record and a log tile)."""
    build_with_log(operator)
    published = fxev(env_of(operator, store_env), "publish")
    assert published.code == 0, published.err
    held = None
    if kind == "invalidations":  # a correction of a published date: a build that invalidates
        assert fxev(gateway_env(gateway_site, store_env), "mirror").code == 0
        held = (gateway_site / layout.POINTER).read_bytes()
        correct_a_published_date(operator, fxev)
        published = fxev(env_of(operator, store_env), "publish")
        assert published.code == 0, published.err
    key, tampered = tamper_target(store_env, kind)
    original = store_get(store_env, key)
    assert tampered != original
    store_put(store_env, key, tampered)

    refused = fxev(gateway_env(gateway_site, store_env), "mirror")
    assert refused.code == 1, (kind, refused.code, refused.out, refused.err)
    assert refused.out == ""
    one_line_error(refused.err)
    if kind == "pointer-inflated":  # told by the publication, not after 100,000 record fetches
        assert "its publication" in refused.err, refused.err
    if held is None:
        assert not (gateway_site / layout.POINTER).exists()
    else:
        assert (gateway_site / layout.POINTER).read_bytes() == held
    # The log's key and checkpoint are what /v1/log/key and /v1/log/checkpoint serve.
    for placed in ("log/key", "log/checkpoint"):
        if (gateway_site / placed).exists():
            assert (gateway_site / placed).read_bytes() != tampered, placed

    store_put(store_env, key, original)
    healed = fxev(gateway_env(gateway_site, store_env), "mirror")
    assert healed.code == 0, healed.err
    assert files_of(gateway_site) == files_of(operator.site)


def test_publish_refuses_a_key_holding_other_bytes_behind_a_copied_sha256(
    operator: Host, store_env: dict[str, str], fxev: Fxev
) -> None:
    """DECISIONS 10: "`fxev publish` ... uploads immutable objects first, never overwriting a
    key with other bytes (that is an error, exit 1)". A key of the tree already in the store with
    bytes of the same length but other content (its `x-amz-meta-sha256` set to the true hash, as
    a copy of the object's metadata leaves it) holds other bytes: publish must say so, not count
    it as skipped and move the pointer over it."""
    tree = TreeReader(operator.site)
    head = tree.published_revision()
    assert head is not None
    sha = next(meta.sha256 for r in range(head, 0, -1) for meta in tree.record(r).evidence.values())
    good = tree.read_object(sha)
    other = bytes([good[0] ^ 0x01]) + good[1:]
    store_put(store_env, keys.object_key(sha), other, Metadata={"sha256": sha})

    ran = fxev(env_of(operator, store_env), "publish")
    assert ran.code == 1, (ran.code, ran.out, ran.err)
    assert ran.out == ""
    assert "already holds other bytes" in one_line_error(ran.err)
    assert keys.POINTER not in store_keys(store_env)


def test_publish_skips_a_key_holding_the_same_bytes_behind_a_wrong_sha256(
    operator: Host, store_env: dict[str, str], fxev: Fxev
) -> None:
    """DECISIONS 10: "never overwriting a key with other bytes (that is an error, exit 1) ...
    a second run uploads nothing"; docs/operating/fleet.md#publish: "the same" is judged by
    the bytes, "never by metadata, which anyone may set". A key of the tree already holding
    the very bytes, with an `x-amz-meta-sha256` naming another hash (a copy made by hand), is
    skipped, not refused as other bytes."""
    tree = TreeReader(operator.site)
    head = tree.published_revision()
    assert head is not None
    sha = next(meta.sha256 for r in range(head, 0, -1) for meta in tree.record(r).evidence.values())
    env = {**store_env, "FXEV_STORE_URL": store_env["FXEV_STORE_URL"] + "-same-bytes"}
    store_put(env, keys.object_key(sha), tree.read_object(sha), Metadata={"sha256": "0" * 64})

    ran = fxev(env_of(operator, env), "publish")
    assert ran.code == 0, (ran.code, ran.out, ran.err)
    assert ran.last["skipped"] == 1
    assert keys.POINTER in store_keys(env)


def test_a_publish_killed_half_way_leaves_no_pointer_and_the_next_run_uploads_only_the_rest(
    operator: Host,
    store_env: dict[str, str],
    slow_relay: Relay,
    fxev: Fxev,
    s3_endpoint: str,
) -> None:
    """DECISIONS 10: "`fxev publish` ... uploads immutable objects first, ..., then the revision
    records, then the pointer last; a second run uploads nothing." Section 3: last line
    `{"published_revision": N, "uploaded": k, "skipped": m}`. A publish killed (SIGKILL) half
    way leaves no pointer, no record before every immutable key; the next run uploads what is
    missing and skips what is there (together: a clean publish's count); a third uploads
    nothing."""
    head = TreeReader(operator.site).published_revision()
    clean_env = {**store_env, "FXEV_STORE_URL": store_env["FXEV_STORE_URL"] + "-clean"}
    clean = fxev(env_of(operator, clean_env), "publish")
    assert clean.code == 0, clean.err
    assert set(clean.last) == {"published_revision", "uploaded", "skipped"}
    total = clean.last["uploaded"]
    all_keys = store_keys(clean_env)
    immutable = {k for k in all_keys if not k.startswith(("revisions/", "publications/"))}
    immutable.discard(keys.POINTER)

    slow_env = {**env_of(operator, store_env), "FXEV_S3_ENDPOINT": slow_relay.endpoint}
    process = popen_fxev(slow_env, "publish", out=operator.home.parent / "publish.out")
    try:
        deadline = time.monotonic() + 60
        while len(store_keys(store_env)) < total // 3:
            assert process.poll() is None, "publish ended before a third of its keys was up"
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        kill(process)
    after_kill = store_keys(store_env)
    assert keys.POINTER not in after_kill, "the pointer went up before the rest"
    if any(k.startswith("revisions/") for k in after_kill):
        assert immutable <= after_kill, "a record went up before every immutable key"

    resumed = fxev(env_of(operator, store_env), "publish")
    assert resumed.code == 0, resumed.err
    assert resumed.last["published_revision"] == head
    assert resumed.last["skipped"] > 0
    assert resumed.last["uploaded"] + resumed.last["skipped"] == total, (resumed.last, total)
    again = fxev(env_of(operator, store_env), "publish")
    assert again.out.strip().splitlines()[-1] == (
        f'{{"published_revision":{head},"uploaded":0,"skipped":0}}'
    )
    assert store_keys(store_env) == all_keys


def test_a_mirror_killed_at_any_point_never_names_a_revision_it_lacks(
    operator: Host,
    gateway_site: Path,
    store_env: dict[str, str],
    slow_relay: Relay,
    fxev: Fxev,
) -> None:
    """DECISIONS 10: "`fxev mirror` ... checks every object ... before placing it ..., and moves
    the local pointer last." A mirror killed (SIGKILL) at several points of its pull leaves a
    site whose pointer is absent or names a revision it fully holds; the next mirror completes
    it into the operator's tree, file for file."""
    build_with_log(operator)
    assert fxev(env_of(operator, store_env), "publish").code == 0
    head = TreeReader(operator.site).published_revision()
    assert head is not None
    slow_env = {**gateway_env(gateway_site, store_env), "FXEV_S3_ENDPOINT": slow_relay.endpoint}
    killed_mid_way = 0
    for after_s in (0.6, 1.2, 2.0, 3.0, 4.5):
        process = popen_fxev(slow_env, "mirror", out=gateway_site.parent / "mirror.out")
        try:
            time.sleep(after_s)
            finished = process.poll() is not None
        finally:
            kill(process)
        if not finished:
            killed_mid_way += 1
        if (gateway_site / layout.POINTER).exists():
            answers_at_head(gateway_site, head)
        if finished:
            break
    assert killed_mid_way >= 2, "the slow store was not slow enough to interrupt the mirror"
    done = fxev(gateway_env(gateway_site, store_env), "mirror")
    assert done.code == 0, done.err
    assert done.last["published_revision"] == head
    assert files_of(gateway_site) == files_of(operator.site)


def test_store_commands_fail_in_one_line_and_create_nothing(
    operator: Host, tmp_path: Path, store_env: dict[str, str], fxev: Fxev
) -> None:
    """DECISIONS 3: "Every command prints, as its last line on stdout, one JSON object ...;
    errors go to stderr with a non-zero exit and change nothing." and "Every CLI error ... is one
    line on stderr, never a traceback." For `fxev mirror` with no store setting, a malformed
    one, an empty store, and `fxev publish` / `fxev ledger ship` against an endpoint that does
    not answer."""
    site = tmp_path / "gw" / "site"
    gw = gateway_env(site, store_env)
    for env, words in (
        ({**gw, "FXEV_STORE_URL": ""}, "FXEV_STORE_URL"),
        ({**gw, "FXEV_STORE_URL": "http://bucket/prefix"}, "FXEV_STORE_URL"),
        (gw, keys.POINTER),  # nothing was published under this prefix
    ):
        ran = fxev(env, "mirror")
        assert ran.code != 0 and ran.out == "", (ran.code, ran.out)
        assert words in one_line_error(ran.err)
        assert not (site / layout.POINTER).exists()

    dead = {**store_env, "FXEV_S3_ENDPOINT": "http://127.0.0.1:1"}
    ran = fxev(env_of(operator, dead), "publish")
    assert ran.code != 0 and ran.out == ""
    one_line_error(ran.err)
    ledger = operator.home / "ledger"
    ledger.mkdir()
    line = orjson.dumps({"x_request_id": "0d7c3f4e-1c7a-4e0a-9b7e-000000000001", "status": 200})
    (ledger / "elsewhere-1-20260101T000000.jsonl").write_bytes(line + b"\n")  # a worker gone
    ran = fxev(env_of(operator, dead), "ledger", "ship")
    assert ran.code != 0 and ran.out == "", (ran.code, ran.out)
    one_line_error(ran.err)
    shipped = fxev(env_of(operator, store_env), "ledger", "ship")  # nothing was lost
    assert shipped.code == 0 and shipped.out == '{"shipped":1}\n', (shipped.out, shipped.err)


def test_requests_show_with_no_ledger_anywhere_names_where_it_looked(
    tmp_path: Path, store_env: dict[str, str], fxev: Fxev
) -> None:
    """DECISIONS 3: "A command refuses a home that lacks the store it reads: ... `requests show`
    a ledger (local or shipped) ... One line naming the resolved path, exit 1; such a command
    never creates an empty home." In fleet mode, with no local ledger and nothing shipped to the
    store, the line names where the ledger was looked for (the local folder or the store)."""
    home = tmp_path / "nohome" / "home"
    env = {"FXEV_HOME": str(home), "FXEV_SITE": str(home.parent / "site"), **store_env}
    ran = fxev(env, "requests", "show", "0d7c3f4e-1c7a-4e0a-9b7e-000000000000")
    assert ran.code == 1
    line = one_line_error(ran.err)
    where = (str((home / "ledger").absolute()), store_env["FXEV_STORE_URL"])
    assert any(w in line for w in where), line
    assert not home.exists()


# == one fleet for the module ======================================================================

PER_MIN = 12
COVERAGE = "/v1/coverage"
LATEST = "/v1/rates/latest?currency=USD&series=publicado"
RATES = "/v1/rates?currency=USD&series=publicado&from=2021-01-01&to=2023-12-31"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Redis, the store, the operator's home (seeded as `make run` seeds it), two gateway hosts
    of two workers each with their mirrors; no edge. Stopped by PID at the module's end."""
    from builder.fleet import plan
    from gateway.ledger.shipping import INTERVAL_VARIABLE
    from tests.contract.conftest import NOW

    settings = {
        "FXEV_NOW": NOW,
        "FXEV_RATE_LIMIT_PER_MIN": str(PER_MIN),
        "FXEV_RATE_LIMIT_PER_DAY": "1000",
        "FXEV_MIRROR_INTERVAL_S": "1",
        INTERVAL_VARIABLE: "1",
    }
    topology = plan(tmp_path_factory.mktemp("fleet-r2"), settings=settings)
    topology.start()
    try:
        yield topology
    finally:
        topology.stop()


@pytest.fixture(autouse=True)
def _logs_on_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed and "fleet" in request.fixturenames:
        fleet = request.getfixturevalue("fleet")
        for service in fleet.started:
            print(f"--- {service.name} ---\n{service.log_text()[-3000:]}")


def issue(fleet: Any, name: str) -> tuple[str, str]:
    lines = fleet.fxev(fleet.operator_env, "token", "issue", name).out.splitlines()
    return orjson.loads(lines[-2])["id"], lines[-1]


def call(
    base: str,
    path: str,
    token: str | None,
    method: str = "GET",
    timeout: float = 10,
    **headers: str,
) -> requests.Response:
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return requests.request(method, base + path, headers=headers, timeout=timeout)


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout_s}s: {what}")
        time.sleep(0.25)


def test_a_revocation_fails_the_next_request_on_every_worker_and_open_connection(
    fleet: Any,
) -> None:
    """DECISIONS 10: "`fxev token issue|revoke|list` with `FXEV_REDIS_URL` set write there; a
    revocation fails the very next request on every gateway". Connections opened before the
    revocation (keep-alive, one per worker reached) and new connections to every worker of both
    gateways: each next request is 401."""
    token_id, token = issue(fleet, "r2-revoke")
    sessions = []
    for gateway in fleet.gateways:
        for _ in range(3):
            session = requests.Session()
            session.headers["Authorization"] = f"Bearer {token}"
            assert session.get(gateway.url + COVERAGE, timeout=10).status_code == 200
            sessions.append(session)
    revoked = fleet.fxev(fleet.operator_env, "token", "revoke", token_id)
    assert orjson.loads(revoked.out.splitlines()[-1])["id"] == token_id
    urls = [g.url for g in fleet.gateways for _ in range(3)]
    statuses = [
        s.get(url + COVERAGE, timeout=10).status_code for s, url in zip(sessions, urls, strict=True)
    ]
    for gateway in fleet.gateways:
        statuses += [
            call(gateway.url, COVERAGE, token, Connection="close").status_code for _ in range(6)
        ]
    for session in sessions:
        session.close()
    assert statuses == [401] * len(statuses), statuses


def test_every_kind_of_authenticated_request_counts_once_across_both_gateways(
    fleet: Any,
) -> None:
    """DECISIONS 10: "rate-limit state (section 9's rules, exact across all gateways of all
    hosts ...)"; section 9: "every authenticated request that passes the limiter counts (HEAD,
    304, 4xx and `ready` included; `live` never) ...; rejected requests do not count;
    `Retry-After` = seconds until a request would pass, rounded up, at least 1". One token,
    requests of every kind alternating between the two gateways: exactly the minute's limit
    passes, the rest is 429 with a Retry-After that runs to a minute after the first."""
    _, token = issue(fleet, "r2-count")
    a, b = (g.url for g in fleet.gateways)
    first = call(a, RATES + "&as_of_revision=1", token)
    started = time.monotonic()
    assert first.status_code in (200, 404), first.text
    kinds: list[tuple[str, str, dict[str, str]]] = [
        ("HEAD", COVERAGE, {}),
        ("GET", "/v1/rates?currency=USD", {}),  # 400
        ("GET", "/v1/observations/not-a-uuid", {}),  # 422
        ("GET", "/v1/health/ready", {}),
        ("GET", RATES + "&as_of_revision=1", {"If-None-Match": first.headers.get("ETag", "")}),
        ("GET", "/v1/rates?currency=EUR&series=publicado&from=2021-01-01&to=2021-02-01", {}),
        ("GET", COVERAGE, {}),
    ]
    statuses = []
    for n in range(2 * PER_MIN):
        method, path, headers = kinds[n % len(kinds)]
        base = b if n % 2 == 0 else a
        resp = call(base, path, token, method, **headers)
        statuses.append(resp.status_code)
        live = call(a if n % 2 == 0 else b, "/v1/health/live", token)
        assert live.status_code == 200  # never counted, never limited
        if resp.status_code == 429:
            elapsed = time.monotonic() - started
            wait = int(resp.headers["Retry-After"])
            assert 1 <= wait <= 60
            assert math.floor(60 - elapsed) - 1 <= wait <= math.ceil(60 - elapsed) + 1, (
                wait,
                elapsed,
            )
    passed = [s for s in statuses if s != 429]
    assert len(passed) == PER_MIN - 1, statuses  # the first as-of request counted too
    assert statuses[: PER_MIN - 1] == passed, statuses
    assert set(passed) >= {200, 304, 400, 404, 422}, statuses


def test_as_of_bytes_and_page_tokens_agree_across_gateways(fleet: Any) -> None:
    """DECISIONS 10: "the page-token secret (created once, so a token minted by one gateway is
    accepted by all)"; section 5: "identical requests get identical bytes ...; `next_page_token`
    inside it is a MAC of (revision, canonical query, offset)". The same as-of request on both
    gateways: the same bytes and ETag; the second page's token minted by the second gateway
    works on the first; a token altered by one character is 400 `INVALID_PARAMS` on both."""
    _, token = issue(fleet, "r2-pages")
    a, b = (g.url for g in fleet.gateways)
    head = call(a, LATEST, token).json()["dataset_revision"]
    as_of = RATES + f"&as_of_revision={head}"
    on_a, on_b = call(a, as_of, token), call(b, as_of, token)
    assert on_a.status_code == on_b.status_code == 200, on_a.text
    assert on_a.content == on_b.content
    assert on_a.headers["ETag"] == on_b.headers["ETag"]
    assert on_a.headers["X-Request-Id"] != on_b.headers["X-Request-Id"]
    page_token = on_b.json()["next_page_token"]
    assert page_token
    second_a = call(a, RATES + f"&page_token={page_token}", token)
    second_b = call(b, RATES + f"&page_token={page_token}", token)
    assert second_a.status_code == 200, second_a.text
    assert second_a.json()["items"] == second_b.json()["items"]
    assert second_a.json()["items"][0]["fecha_serie"] > on_b.json()["items"][-1]["fecha_serie"]
    flipped = page_token[:-2] + ("A" if page_token[-2] != "A" else "B") + page_token[-1]
    for base in (a, b):
        bad = call(base, RATES + f"&page_token={flipped}", token)
        assert bad.status_code == 400 and bad.json()["code"] == "INVALID_PARAMS", bad.text


def test_requests_show_finds_a_body_request_id_served_by_both_hosts_oldest_first(
    fleet: Any,
) -> None:
    """DECISIONS 3: "`fxev requests show ID` | ledger entries whose `X-Request-Id` or body
    `request_id` is ID | `{"entries": [...]}`, oldest first; exit 1 if none"; section 10:
    "`fxev ledger ship` ... uploads durable ledger lines under `ledger/<host>/`; `fxev requests
    show` searches local files and the store." The same as-of request on gateway a, then b:
    its deterministic body `request_id` finds both entries from the operator's host (which has
    no ledger of its own), a's first, each with the hash of the bytes sent; an id nobody used is
    `{"entries": []}` and exit 1."""
    _, token = issue(fleet, "r2-show")
    a, b = (g.url for g in fleet.gateways)
    head = call(a, LATEST, token).json()["dataset_revision"]
    as_of = RATES + f"&as_of_revision={head}&include_annotations=true"
    first = call(a, as_of, token)
    time.sleep(0.05)
    second = call(b, as_of, token)
    body_id = first.json()["request_id"]
    assert second.json()["request_id"] == body_id

    found: list[dict[str, Any]] = []

    def shown() -> bool:
        ran = fleet.fxev(fleet.operator_env, "requests", "show", body_id, check=False)
        if ran.code == 0:
            found[:] = ran.last["entries"]
        return len(found) >= 2

    wait_until(shown, 30, "both hosts' entries shipped and found")
    assert [e["x_request_id"] for e in found] == [
        first.headers["X-Request-Id"],
        second.headers["X-Request-Id"],
    ]
    for entry, resp in zip(found, (first, second), strict=True):
        assert entry["request_id"] == body_id
        assert entry["sha256"] == hashlib.sha256(resp.content).hexdigest()
        assert entry["status"] == 200 and entry["token_name"] == "r2-show"
    assert found[0]["ts"] < found[1]["ts"]

    from builder.fleet.processes import CREDENTIALS
    from builder.objstore.s3 import ObjectStore

    with pytest.MonkeyPatch.context() as patch:
        for name, value in CREDENTIALS.items():
            patch.setenv(name, value)
        store = ObjectStore(fleet.env["FXEV_STORE_URL"], fleet.env["FXEV_S3_ENDPOINT"])
        try:
            hosts = {key.split("/")[1] for key in store.list_keys("ledger/") if "/" in key[7:]}
        finally:
            store.close()
    assert len(hosts - {".shipped"}) >= 2, hosts  # one folder per gateway host

    nobody = fleet.fxev(
        fleet.operator_env, "requests", "show", "6b1e6b4e-0000-4000-8000-000000000000", check=False
    )
    assert nobody.code == 1
    assert nobody.out.strip().splitlines()[-1] == '{"entries":[]}'


@pytest.fixture
def third_gateway(fleet: Any) -> Iterator[Any]:
    """A third gateway host of the fleet (its own home, a mirrored site), not started: the test
    starts its ``serve`` (no readiness wait) and this fixture stops it by its PID."""
    from builder.fleet.processes import Service, free_ports
    from builder.fleet.topology import _gateway_host

    host = _gateway_host(fleet.root, "c", free_ports(1)[0], fleet.env, 2)
    fleet.fxev(host.env, "mirror")
    serve = Service(host.serve.name, host.serve.argv, host.serve.env, host.serve.log, None,
                    host.serve.url)  # fmt: skip
    host.serve = serve
    try:
        yield host
    finally:
        if serve.process is not None:
            STARTED_PIDS.append(serve.process.pid)
        serve.stop()


def safe_call(base: str, path: str, token: str | None) -> int | str:
    try:
        return call(base, path, token, timeout=5).status_code
    except requests.RequestException as error:
        return type(error).__name__


def all_workers_resumed(log: str, workers_started: int | None = None) -> bool:
    """Every worker of a gateway (``workers_started`` of them in ``log``, if given) that started
    while Redis was down has read the shared secrets since (gateway/app.py
    ``read_shared_secrets``).
    Waiting on the log, not by polling the API until every worker answers 200, keeps a test
    within its token's limit (12 a minute here): 200s count, and a poll can spend them all."""
    down_at_start = log.count("Redis unreachable at start")
    return (
        workers_started in (None, log.count("Worker ready"))
        and down_at_start >= 1
        and log.count("Redis answers again") == down_at_start
    )


def test_a_gateway_started_while_redis_is_down_answers_503_then_resumes_by_itself(
    fleet: Any, third_gateway: Any
) -> None:
    """DECISIONS 10: "Redis unreachable: authenticated requests get 503 `INTERNAL`, `retryable:
    true`, `ready` is 503, nothing passes unlimited; service resumes by itself." A gateway host
    whose `serve` starts while Redis is down (a reboot of both, say) answers: 503 for a token,
    `live` 200 (public); once Redis is back, with no restart, the token and a page token minted
    before the outage by another gateway (the secret survives in Redis's AOF) are accepted."""
    _, token = issue(fleet, "r2-cold")
    page_token = call(fleet.gateways[0].url, RATES, token).json()["next_page_token"]
    assert page_token
    fleet.redis.stop()
    try:
        third_gateway.serve.start()
        url = third_gateway.url
        deadline = time.monotonic() + 20
        while safe_call(url, "/v1/health/live", None) != 200 and time.monotonic() < deadline:
            time.sleep(0.5)
        seen = {
            "live": safe_call(url, "/v1/health/live", None),
            "latest": safe_call(url, LATEST, token),
            "ready": safe_call(url, "/v1/health/ready", token),
        }
        assert seen == {"live": 200, "latest": 503, "ready": 503}, seen
        assert_internal_retryable(call(url, LATEST, token))
    finally:
        fleet.redis.start()
    wait_until(lambda: all_workers_resumed(third_gateway.serve.log_text(), 2), 30,
               "every worker of the third gateway resumed")  # fmt: skip
    assert call(third_gateway.url, LATEST, token).status_code == 200
    assert third_gateway.serve.running
    resp = call(third_gateway.url, RATES + f"&page_token={page_token}", token)
    assert resp.status_code == 200, resp.text


def test_a_gateway_started_while_the_store_is_down_serves_its_mirror(
    fleet: Any, third_gateway: Any
) -> None:
    """DECISIONS 10: "The store down: gateways keep serving their mirror." A gateway host whose
    `serve` (fleet mode: it ships its ledger to the store) starts while the store is stopped
    answers from the mirror it holds; its answers are shipped once the store is back."""
    _, token = issue(fleet, "r2-store-cold")
    fleet.store.stop()
    try:
        third_gateway.serve.start()
        url = third_gateway.url
        deadline = time.monotonic() + 30
        while safe_call(url, LATEST, token) != 200 and time.monotonic() < deadline:
            time.sleep(0.5)
        resp = call(url, LATEST, token)
        assert resp.status_code == 200, resp.text
    finally:
        fleet.store.start()
    request_id = resp.headers["X-Request-Id"]
    wait_until(
        lambda: (
            fleet.fxev(fleet.operator_env, "requests", "show", request_id, check=False).code == 0
        ),
        40,
        "the answer shipped once the store is back",
    )


def test_public_routes_keep_answering_while_redis_is_down(fleet: Any) -> None:
    """DECISIONS 10: "Redis unreachable: authenticated requests get 503 `INTERNAL`" (only
    those); section 9: "`/v1/openapi.json` is public (**override**, like `/v1/health/live`)";
    section 13: the log "served publicly (no token, like `/v1/health/live`)". While Redis is down
    a running gateway still serves its public routes, and its authenticated ones are 503.

    A request carrying a token to any other path (an unknown one, a 405, the OpenAPI document)
    is recorded when its token is valid (section 5), which cannot be known while Redis is down:
    503 too, with one line in the log, never a traceback (once its 404, 405 or 200)."""
    _, token = issue(fleet, "r2-public")
    gateway = fleet.gateways[1]
    url = gateway.url
    public = ["/v1/health/live", "/v1/openapi.json", "/v1/log/checkpoint"]
    before = {path: call(url, path, None).status_code for path in public}
    assert before == {path: 200 for path in public}, before
    log_start = len(gateway.serve.log_text())
    fleet.redis.stop()
    try:
        during = {path: safe_call(url, path, None) for path in public}
        latest = call(url, LATEST, token)
        with_token = [
            call(url, "/v1/openapi.json", token),
            call(url, "/v1/no-such-path", token),
            call(url, "/v1/coverage", token, method="POST"),
        ]
    finally:
        fleet.redis.start()
    assert_internal_retryable(latest)
    for answer in with_token:
        assert_internal_retryable(answer)
    assert during == before, during
    assert "Traceback" not in gateway.serve.log_text()[log_start:]
    wait_until(lambda: safe_call(url, LATEST, token) == 200, 30, "resumed")


def test_the_token_commands_with_redis_down_fail_in_one_line_and_change_nothing(
    fleet: Any, tmp_path: Path
) -> None:
    """DECISIONS 3: "errors go to stderr with a non-zero exit and change nothing"; "Every CLI
    error ... is one line on stderr, never a traceback"; "`token list|revoke` and `serve` [need]
    the token store (local, or in Redis in fleet mode) ... such a command never creates an empty
    home". With Redis down, `token issue|revoke|list` fail in one line (no token printed); the
    token meant to be revoked still works once Redis is back; with Redis up, `token list` from a
    home that does not exist answers from Redis and creates no home."""
    token_id, token = issue(fleet, "r2-cli")
    env = dict(fleet.operator_env)
    fleet.redis.stop()
    try:
        runs = {
            "issue": fleet.fxev(env, "token", "issue", "r2-never", check=False),
            "revoke": fleet.fxev(env, "token", "revoke", token_id, check=False),
            "list": fleet.fxev(env, "token", "list", check=False),
        }
    finally:
        fleet.redis.start()
    for name, ran in runs.items():
        assert ran.code != 0, (name, ran)
        assert "fxev_" not in ran.out, name
        one_line_error(ran.err)
    wait_until(
        lambda: safe_call(fleet.gateways[0].url, COVERAGE, token) == 200, 30, "token still active"
    )
    nowhere = tmp_path / "no-home"
    listed = fleet.fxev(env | {"FXEV_HOME": str(nowhere)}, "token", "list", check=False)
    assert listed.code == 0, listed.err
    names = {item["name"] for item in listed.last["items"]}
    assert "r2-cli" in names and "r2-never" not in names
    assert not nowhere.exists()
    issued = fleet.fxev(env | {"FXEV_HOME": str(nowhere)}, "token", "issue", "r2-far", check=False)
    assert issued.code == 0, issued.err  # written to Redis: no home made for it
    assert not nowhere.exists()


def test_the_store_down_publish_and_ship_fail_in_one_line_and_catch_up(fleet: Any) -> None:
    """DECISIONS 10: "The store down: gateways keep serving their mirror. `fxev ledger ship`
    (run by gateways in fleet mode every 30 s and at shutdown) uploads durable ledger lines";
    section 3: errors are one line on stderr with a non-zero exit. With the store stopped:
    `fxev publish` and `fxev ledger ship` fail in one line; both gateways answer; the requests
    answered meanwhile are found by `fxev requests show` once the store is back."""
    _, token = issue(fleet, "r2-store")
    fleet.store.stop()
    try:
        ids = []
        for gateway in fleet.gateways:
            resp = call(gateway.url, LATEST, token)
            assert resp.status_code == 200, resp.text
            ids.append(resp.headers["X-Request-Id"])
        published = fleet.fxev(fleet.operator_env, "publish", check=False)
        shipped = fleet.fxev(fleet.gateways[0].env, "ledger", "ship", check=False)
    finally:
        fleet.store.start()
    for ran in (published, shipped):
        assert ran.code != 0 and ran.out == "", ran
        one_line_error(ran.err)
    for request_id in ids:
        wait_until(
            lambda r=request_id: (
                fleet.fxev(fleet.operator_env, "requests", "show", r, check=False).code == 0
            ),
            40,
            f"{request_id} shipped after the store came back",
        )
    again = fleet.fxev(fleet.operator_env, "publish")
    assert again.last["uploaded"] == 0 and again.last["skipped"] == 0


def worker_pids(main_pid: int) -> list[int]:
    """The Sanic worker processes of a gateway's main process (its spawned children)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            environ = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        if parent == main_pid and any(
            e.startswith(b"SANIC_WORKER_NAME=Sanic-Server") for e in environ
        ):
            found.append(int(name))
    return sorted(found)


def test_a_worker_replaced_while_redis_is_down_serves_once_redis_is_back(fleet: Any) -> None:
    """DECISIONS 10: "Redis unreachable: authenticated requests get 503 `INTERNAL`, `retryable:
    true` ...; service resumes by itself"; section 14: "A gateway worker that dies is replaced
    within 5 s." A worker of gateway b dies while Redis is down: b keeps answering (503) and,
    once Redis is back, answers 200 on every worker, with no restart by anyone."""
    _, token = issue(fleet, "r2-worker")
    gateway = fleet.gateways[1]
    assert gateway.serve.process is not None
    workers = worker_pids(gateway.serve.process.pid)
    assert len(workers) == 2, workers
    fleet.redis.stop()
    try:
        os.kill(workers[0], signal.SIGKILL)  # a worker of the gateway this module started
        time.sleep(5)
        during = [safe_call(gateway.url, LATEST, token) for _ in range(6)]
    finally:
        fleet.redis.start()
    try:
        wait_until(lambda: all_workers_resumed(gateway.serve.log_text()), 30,
                   "the replacement worker of gateway b resumed")  # fmt: skip
        assert [safe_call(gateway.url, LATEST, token) for _ in range(6)] == [200] * 6
        assert gateway.serve.running
        assert during == [503] * 6, during
    finally:
        if not gateway.serve.running:  # leave the module's fleet whole for the tests after
            gateway.serve.start()


def test_one_redis_round_trip_per_request(fleet: Any) -> None:
    """DECISIONS 10: "rate-limit state (section 9's rules, exact across all gateways of all
    hosts: atomic server-side scripts, at most one round trip per request)". Redis's MONITOR
    over 8 authenticated requests through both gateways: at most 8 commands came from clients
    (commands a script runs are marked `lua` and not counted)."""
    _, warming = issue(fleet, "r2-trips-warming")
    _, token = issue(fleet, "r2-trips")
    for gateway in fleet.gateways:  # warm every worker: scripts loaded, connections open
        for _ in range(5):
            call(gateway.url, COVERAGE, warming, Connection="close")
    port = urlparse(fleet.env["FXEV_REDIS_URL"]).port

    def requests_made() -> None:
        for n in range(8):
            resp = call(fleet.gateways[n % 2].url, LATEST if n % 3 else COVERAGE, token)
            assert resp.status_code == 200, resp.text

    seen = monitored(port, requests_made)
    commands = client_commands(seen)
    assert len(commands) <= 8, commands


def test_the_first_request_after_a_publish_is_one_round_trip_too(fleet: Any) -> None:
    """The same rule right after a publish. Each worker sent the revision it had last seen, with
    no look at the pointer, then looked, and raised the token's mark to the newer revision it
    answered at: a second round trip for the first request of every worker after its mirror
    moved. The look now comes first, and the revision admitted is the one answered at."""
    _, warming = issue(fleet, "r2-publish-warming")
    _, token = issue(fleet, "r2-publish-trips")
    for gateway in fleet.gateways:  # every worker has seen the head
        for _ in range(5):
            call(gateway.url, COVERAGE, warming, Connection="close")
    env = fleet.operator_env
    head = TreeReader(Path(env["FXEV_SITE"])).published_revision()
    fleet.fxev(
        env,
        "annotate",
        "--fecha",
        "2026-09-18",
        "--texto",
        "round trips",
        "--actor",
        "test",
        "--justification",
        "a revision to publish",
    )
    fleet.fxev(env, "build")
    published = fleet.fxev(env, "publish").last  # returns once the live mirrors have it
    assert published["published_revision"] == head + 1, published
    port = urlparse(fleet.env["FXEV_REDIS_URL"]).port

    def requests_made() -> None:
        for n in range(8):
            resp = call(fleet.gateways[n % 2].url, LATEST, token, Connection="close")
            assert resp.status_code == 200, resp.text
            assert resp.json()["dataset_revision"] == head + 1

    commands = client_commands(monitored(port, requests_made))
    assert len(commands) <= 8, commands


def client_commands(seen: bytes) -> list[str]:
    """The commands clients sent, from MONITOR's output (those a script runs are marked `lua`),
    but the mirrors' own (each says its site's revision after every poll: no request's)."""
    lines = [line for line in seen.decode(errors="replace").splitlines() if line.startswith("+")]
    return [
        line.split('"')[1]
        for line in lines
        if " lua]" not in line and f'"{mirrors.PREFIX}' not in line
    ]


def monitored(port: int, requests_made: Callable[[], None]) -> bytes:
    """What Redis's MONITOR saw while ``requests_made`` ran."""
    monitor = socket.create_connection(("127.0.0.1", port), timeout=5)
    seen = b""
    try:
        monitor.sendall(b"MONITOR\r\n")
        assert monitor.recv(5) == b"+OK\r\n"
        requests_made()
        time.sleep(0.5)
        monitor.settimeout(0.5)
        with contextlib.suppress(TimeoutError, socket.timeout):
            while chunk := monitor.recv(65536):
                seen += chunk
    finally:
        monitor.close()
    return seen


def test_the_explorer_checks_and_counts_a_token_in_one_round_trip(fleet: Any) -> None:
    """DECISIONS 10, "atomic server-side scripts, at most one round trip per request", for the
    explorer's pages and its sign-in too: they read the token (HGETALL), then counted it (a
    script): two round trips, and a token revoked between them was counted. Now one script,
    as on /v1. (The revisions page reads no alert state, which is a read of its own.)"""
    _, warming = issue(fleet, "r2-explorer-warming")
    _, token = issue(fleet, "r2-explorer")
    for gateway in fleet.gateways:  # warm every worker: scripts loaded, connections open
        for _ in range(5):
            call(gateway.url, "/revisiones", warming, Connection="close")
    answers: list[int] = []

    def requests_made() -> None:
        for n in range(6):
            answers.append(call(fleet.gateways[n % 2].url, "/revisiones", token).status_code)
        signin = requests.post(
            fleet.gateways[0].url + "/signin",
            data={"token": token},
            allow_redirects=False,
            timeout=10,
        )
        answers.append(signin.status_code)

    port = urlparse(fleet.env["FXEV_REDIS_URL"]).port
    commands = client_commands(monitored(port, requests_made))
    assert answers == [200] * 6 + [303], answers
    assert "HGETALL" not in commands and len(commands) <= 7, commands


def test_fxev_serve_on_a_fleet_host_needs_no_home_but_a_mirrored_tree(
    fleet: Any, tmp_path: Path
) -> None:
    """DECISIONS 3: "`serve` [needs] the token store (local, or in Redis in fleet mode) ...;
    `serve` a published tree ... One line naming the resolved path, exit 1; such a command never
    creates an empty home (a gateway host in fleet mode has no registry, and needs none)."
    `fxev serve` with Redis set: a site never mirrored is refused in one line and no home is
    made; over a mirrored site and a home that does not exist yet it serves a Redis token.
    Section 3: "Every CLI error ... is one line on stderr, never a traceback": a shipping
    interval under 0.1 s, over what a thread can wait, or not a number is refused so."""
    from builder.fleet.processes import free_ports

    _, token = issue(fleet, "r2-serve")
    home, site = tmp_path / "host" / "home", tmp_path / "host" / "site"
    env = {**fleet.gateways[0].env, "FXEV_HOME": str(home), "FXEV_SITE": str(site)}
    port = str(free_ports(1)[0])
    fxev_bin = str(Path(sys.executable).with_name("fxev"))
    refused = subprocess.run(
        [fxev_bin, "serve", "--port", port, "--workers", "1"], env=env, cwd=tmp_path,
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert refused.returncode == 1, refused.stderr
    assert str((site / layout.POINTER).absolute()) in one_line_error(refused.stderr)
    assert not home.exists()

    assert fleet.fxev(env, "mirror").code == 0
    for interval in ("abc", "0", "0.01", "-1", "nan", "inf", "1e10"):
        refused = subprocess.run(
            [fxev_bin, "serve", "--port", port, "--workers", "1"], cwd=tmp_path,
            env=env | {"FXEV_LEDGER_SHIP_INTERVAL_S": interval},
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert refused.returncode == 1, (interval, refused.stderr)
        assert "FXEV_LEDGER_SHIP_INTERVAL_S" in one_line_error(refused.stderr), interval
    with (tmp_path / "serve.log").open("wb") as log:
        process = subprocess.Popen(
            [fxev_bin, "serve", "--port", port, "--workers", "1"], env=env, cwd=tmp_path,
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    STARTED_PIDS.append(process.pid)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: safe_call(url, LATEST, token) == 200, 40, "fxev serve answering")
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)  # by its PID
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def test_zz_no_process_of_this_module_is_left(fleet: Any) -> None:
    """Housekeeping: every process this module started itself has exited (by its PID)."""
    alive = []
    for pid in STARTED_PIDS:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    assert alive == []
