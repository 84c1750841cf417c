"""Rules of docs/decisions.md for settings, fleet mode and the transparency log, checked from
outside: the defaults of every setting, Redis as the project starts it, the token commands and a
fleet gateway on Redis (and with Redis down), ``fxev verify`` with ``FXEV_LOG_VKEY``, and a log
with its own origin.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import sqlite3
import stat
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import orjson
import pytest
import requests

from builder.core.settings import load_settings
from builder.core.variables import SETTINGS
from builder.tlog import leaf, note, tiles
from tests.contract.conftest import (
    Gateway,
    _running,
    copy_demo,
    demo_home,  # noqa: F401 (the session's built demo)
    run_fxev,
)

ROOT = Path(__file__).resolve().parents[2]

# -- section 2: the table of DECISIONS.md, copied (tests never read ../shared) ---------------

# variable -> (default as DECISIONS states it; None: unset)
DECISIONS_TABLE: dict[str, str | None] = {
    "FXEV_HOME": "./var",
    "FXEV_SITE": "./site_out",
    "FXEV_TAXAUTH_URL": "the real public URL",
    "FXEV_CENTRALBANK_URL": "the real public URL",
    "FXEV_NOW": None,
    "FXEV_RATE_LIMIT_PER_MIN": "60",
    "FXEV_RATE_LIMIT_PER_DAY": "5000",
    "FXEV_TOKEN": None,
    "FXEV_SOURCES": "taxauth_txt,centralbank",
    "FXEV_CENTRALBANK_DAYS": "10",
    "FXEV_PLAUSIBILITY_PCT": "3",
    "FXEV_MAX_BODY_BYTES": "1048576",
    "FXEV_MIN_FREE_BYTES": "1073741824",
    "FXEV_CLOCK_TOLERANCE_S": "60",
    "FXEV_PROXY": None,
    "FXEV_CAPTURE_DEADLINE_S": "60",
    "FXEV_CORS_ORIGINS": None,
    "FXEV_REDIS_URL": None,
    "FXEV_STORE_URL": None,
    "FXEV_S3_ENDPOINT": None,
    "FXEV_MIRROR_INTERVAL_S": "5",
    "FXEV_LOG_ORIGIN": None,  # derived: fxev.local/<registry id, 16 hex>
    "FXEV_LOG_VKEY": None,
}


def test_every_decisions_variable_is_a_setting_with_its_default() -> None:
    declared = {s.variable: s.default for s in SETTINGS}
    for variable, default in DECISIONS_TABLE.items():
        assert variable in declared, variable
        if default is not None and default != "the real public URL":
            assert declared[variable] == default, variable
        if default is None:
            assert declared[variable] is None, variable
    assert declared["FXEV_TAXAUTH_URL"].startswith("https://")
    assert declared["FXEV_CENTRALBANK_URL"].startswith("https://")


def test_an_empty_environment_loads_the_decisions_defaults() -> None:
    s = load_settings({})
    assert (s.home, s.site) == (Path("./var"), Path("./site_out"))
    assert (s.rate_limit_per_min, s.rate_limit_per_day) == (60, 5000)
    assert s.sources == ("taxauth_txt", "centralbank")
    assert (s.centralbank_days, str(s.plausibility_pct)) == (10, "3")
    assert (s.max_body_bytes, s.min_free_bytes) == (1048576, 1073741824)
    assert (s.clock_tolerance_s, s.capture_deadline_s, s.mirror_interval_s) == (60, 60, 5)
    unset = (s.now, s.token, s.proxy, s.cors_origins, s.redis_url, s.store_url, s.s3_endpoint)
    assert unset == (None,) * 7
    assert (s.log_origin, s.log_vkey) == (None, None)
    star = load_settings({"FXEV_CORS_ORIGINS": "*"})
    assert star.cors_origins == ("*",)


# -- section 10: Redis as the project's own files start it ----------------------------------


def test_the_projects_redis_runs_aof_with_appendfsync_always(redis_server) -> None:  # type: ignore[no-untyped-def]
    import redis

    client = redis.Redis.from_url(redis_server.url)
    try:
        assert client.config_get("appendonly")["appendonly"] == "yes"
        assert client.config_get("appendfsync")["appendfsync"] == "always"
    finally:
        client.close()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory, demo_home: Path) -> Iterator[Gateway]:  # noqa: F811
    """One gateway over a private copy of the demo, tokens in the home's file."""
    base = tmp_path_factory.mktemp("rules-gateway")
    env, _ = copy_demo(demo_home, base, FXEV_RATE_LIMIT_PER_MIN="1000")
    yield from _running(base, dict(env), "")


def _local_token(env: dict[str, str], name: str) -> str:
    return _issue(env, name)[1]


# -- section 13: fxev verify with FXEV_LOG_VKEY, a custom origin ----------------------------


def _vkey(env: dict[str, str]) -> str:
    done = run_fxev(env, "log", "key")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_verify_reads_the_key_from_fxev_log_vkey(gateway: Gateway) -> None:
    """Section 2/13: FXEV_LOG_VKEY is "verifier key a consumer trusts (fxev verify)": set in
    the environment alone (no --vkey) it must make verify check the log, and a wrong one fail."""
    token = _local_token(gateway.env, "rules-verify")
    latest = requests.get(
        gateway.url("/v1/rates/latest?currency=USD&series=publicado"),
        headers={"Authorization": f"Bearer {token}"},
        timeout=15,
    ).json()
    obs = latest["observacion_id"]
    env = gateway.env | {"FXEV_TOKEN": token}
    key = _vkey(gateway.env)
    done = run_fxev(env | {"FXEV_LOG_VKEY": key}, "verify", obs, "--url", gateway.base_url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   log checkpoint of" in done.stdout, done.stdout
    # A key of another name/key: the checkpoint cannot verify, exit 1.
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    other = note.verifier_key(note.parse_verifier_key(key).name, Ed25519PrivateKey.generate())
    bad = run_fxev(env | {"FXEV_LOG_VKEY": other.text}, "verify", obs, "--url", gateway.base_url)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    # The checkpoint's tree size is the published revision; its origin is the key's name.
    signed = requests.get(gateway.url("/v1/log/checkpoint"), timeout=15).text
    checkpoint = note.parse_checkpoint(note.open_note(signed, note.parse_verifier_key(key)))
    assert checkpoint.size == latest["dataset_revision"]
    registry = sqlite3.connect(Path(gateway.env["FXEV_HOME"]) / "registry.sqlite")
    try:
        tables = {r[0] for r in registry.execute("SELECT name FROM sqlite_master")}
    finally:
        registry.close()
    assert tables  # a registry is there
    assert re.fullmatch(r"fxev\.local/[0-9a-f]{16}", checkpoint.origin), checkpoint.origin


def test_a_custom_log_origin_names_the_checkpoint_and_the_key(tmp_path: Path) -> None:
    """Section 13: the checkpoint's origin is FXEV_LOG_ORIGIN; `fxev log key` prints
    <name>+<hex key id>+<base64(0x01 || public key)>; the key file is mode 0600."""
    from tests.builder.test_tree_owner import CSVS, env_for, fxev, seed

    env = env_for(tmp_path) | {"FXEV_LOG_ORIGIN": "example.org/fxev-rules"}
    seed(env, tmp_path, CSVS[:2])
    built = fxev(env, "build")
    assert built.returncode == 0, built.stderr
    done = fxev(env, "log", "key")
    assert done.returncode == 0, done.stderr
    text = done.stdout.strip()
    match = re.fullmatch(r"example\.org/fxev-rules\+([0-9a-f]{8})\+([A-Za-z0-9+/=]+)", text)
    assert match, text
    public = base64.b64decode(match.group(2))
    assert public[:1] == b"\x01" and len(public) == 33
    expected_id = hashlib.sha256(b"example.org/fxev-rules\n" + public).digest()[:4]
    assert match.group(1) == expected_id.hex()
    key = note.parse_verifier_key(text)
    signed = (tmp_path / "site_out" / "log" / "checkpoint").read_text()
    lines = signed.split("\n")
    assert lines[0] == "example.org/fxev-rules" and lines[1] == "2"
    assert len(base64.b64decode(lines[2])) == 32 and lines[3] == ""
    assert lines[4].startswith("\u2014 example.org/fxev-rules ")
    note.open_note(signed, key)
    assert stat.S_IMODE(os.stat(tmp_path / "var" / "log.key").st_mode) == 0o600
    # The leaves: RFC 6962 over the entries gives the signed root; revision N is leaf N-1.
    bundle = tiles.decode_bundle((tmp_path / "site_out/log/tile/entries/000.p/2").read_bytes())
    assert [leaf.decode(x).revision for x in bundle] == [1, 2]
    hashes = [hashlib.sha256(b"\x00" + x).digest() for x in bundle]
    root = hashlib.sha256(b"\x01" + hashes[0] + hashes[1]).digest()
    assert note.parse_checkpoint(note.open_note(signed, key)).root == root
    # A tlog-proof for an observation of revision 1 verifies offline with the key alone.
    obs = sorted((tmp_path / "site_out").glob("**/observations/*"))
    assert obs


# -- section 10: a fleet gateway on Redis ----------------------------------------------------


@pytest.fixture(scope="module")
def fleet_gateway(
    tmp_path_factory: pytest.TempPathFactory,
    demo_home: Path,  # noqa: F811
    redis_server,  # type: ignore[no-untyped-def]
) -> Iterator[Gateway]:
    base = tmp_path_factory.mktemp("rules-fleet")
    env, _ = copy_demo(demo_home, base, FXEV_REDIS_URL=redis_server.url)
    yield from _running(base, dict(env), "")


LATEST = "/v1/rates/latest?currency=USD&series=publicado"


def _issue(env: dict[str, str], name: str) -> tuple[str, str]:
    done = run_fxev(env, "token", "issue", name)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    return orjson.loads(lines[0])["id"], lines[1]


def test_token_commands_with_redis_write_there_and_the_fleet_reads_only_redis(
    fleet_gateway: Gateway,
    redis_server,  # type: ignore[no-untyped-def]
) -> None:
    """Section 10: "fxev token issue|revoke|list with FXEV_REDIS_URL set write there; a
    revocation fails the very next request on every gateway"."""
    env = fleet_gateway.env
    token_id, token = _issue(env, "rules-redis")
    local = {k: v for k, v in env.items() if k != "FXEV_REDIS_URL"}
    listed = run_fxev(env, "token", "list")
    assert listed.returncode == 0 and token_id in listed.stdout
    listed_local = run_fxev(local, "token", "list")
    assert token_id not in listed_local.stdout  # not written to the home's file
    assert fleet_gateway.get(LATEST, token).status_code == 200
    # A token only in the home's local file is not accepted by a fleet gateway.
    _, local_token = _issue(local, "rules-local")
    assert fleet_gateway.get(LATEST, local_token).status_code == 401
    # An expired token in Redis is refused.
    from tokens.redis_store import RedisTokenStore

    with RedisTokenStore.open(redis_server.url) as store:
        expired = store.issue(
            "rules-expired", date(2020, 1, 1), datetime(2019, 12, 31, tzinfo=UTC)
        ).token_text
    assert fleet_gateway.get(LATEST, expired).status_code == 401
    revoked = run_fxev(env, "token", "revoke", token_id)
    assert revoked.returncode == 0, revoked.stderr
    assert fleet_gateway.get(LATEST, token).status_code == 401


def test_redis_down_is_503_internal_retryable_ready_503_and_resumes(
    fleet_gateway: Gateway,
    redis_server,  # type: ignore[no-untyped-def]
) -> None:
    """Section 10: "Redis unreachable: authenticated requests get 503 INTERNAL, retryable: true,
    ready is 503, nothing passes unlimited; service resumes by itself"."""
    _, token = _issue(fleet_gateway.env, "rules-down")
    assert fleet_gateway.get(LATEST, token).status_code == 200
    redis_server.stop()
    try:
        resp = fleet_gateway.get(LATEST, token)
        assert resp.status_code == 503, resp.text
        body = resp.json()
        assert body["code"] == "INTERNAL" and body["retryable"] is True
        bogus = fleet_gateway.get(LATEST, "fxev_bogus")
        assert bogus.status_code in (401, 503)
        ready = fleet_gateway.get("/v1/health/ready", token)  # ready needs a token (SPEC)
        assert ready.status_code == 503, ready.text
    finally:
        redis_server.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if fleet_gateway.get(LATEST, token).status_code == 200:
            break
        time.sleep(0.5)
    assert fleet_gateway.get(LATEST, token).status_code == 200
    assert fleet_gateway.get("/v1/health/ready", token).status_code == 200
