"""``fxev edge config``: the printed text, where its credential comes from, and a home it refuses
(docs/operating/cli.md#edge-config)."""

from __future__ import annotations

import stat
from pathlib import Path

from gateway.edge import steps
from gateway.fleet.gate import EDGE_SECRET_KEY
from tests.contract.conftest import home_env, issue_token, run_fxev
from tests.fleet.redis_server import RedisServer
from tests.support.ports import free_port


def test_a_home_without_a_token_store_is_refused_and_left_empty(tmp_path: Path) -> None:
    env = home_env(tmp_path)
    done = run_fxev(env, "edge", "config")
    assert done.returncode == 1 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "token store" in done.stderr
    assert not (tmp_path / "home").exists()


def test_in_fleet_mode_redis_unreachable_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """The credential is Redis's in fleet mode: with Redis down, nothing can be printed, and
    the command says so in one line, as the token commands do (DECISIONS 3)."""
    env = home_env(tmp_path) | {"FXEV_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"}
    done = run_fxev(env, "edge", "config")
    assert done.returncode == 2 and done.stdout == "", done
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("fxev: Redis at FXEV_REDIS_URL cannot be reached: "), line


def test_the_credential_is_made_once_kept_private_and_printed_only_in_the_config(
    tmp_path: Path,
) -> None:
    env = home_env(tmp_path)
    issue_token(env, "someone")
    first = run_fxev(env, "edge", "config", "--upstream", "127.0.0.1:8001", "--upstream",
                     "127.0.0.1:8002", "--listen", "127.0.0.1:9090")  # fmt: skip
    assert first.returncode == 0, first.stderr
    secret = tmp_path / "home" / steps.SECRET_FILE
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    credential = secret.read_text().strip()
    assert f"proxy_set_header X-Fxev-Edge {credential};" in first.stdout
    assert credential not in first.stderr
    assert "server 127.0.0.1:8001 " in first.stdout and "server 127.0.0.1:8002 " in first.stdout
    assert "listen 127.0.0.1:9090;" in first.stdout
    cache = (tmp_path / "home" / "edge-cache").absolute()
    assert f"proxy_cache_path {cache} " in first.stdout
    second = run_fxev(env, "edge", "config", "--upstream", "127.0.0.1:8001", "--upstream",
                      "127.0.0.1:8002", "--listen", "127.0.0.1:9090")  # fmt: skip
    assert second.stdout == first.stdout
    assert run_fxev(env, "edge", "config", "--listen", "nowhere").returncode != 0


BAD_PLANS = {
    "listen": (("--listen", "nowhere"), 2, "not HOST:PORT"),
    "upstream": (("--upstream", "127.0.0.1:0"), 2, "not HOST:PORT"),
    "lane": (("--lane", "127.0.0.1"), 2, "not HOST:PORT"),
    "cache folder": (("--cache-dir", "/tmp/a b"), 1, "absolute plain path"),
}


def refuses_unchanged(env: dict[str, str], args: tuple[str, ...], code: int, why: str) -> None:
    done = run_fxev(env, "edge", "config", *args)
    assert done.returncode == code and done.stdout == "", done
    [line] = done.stderr.strip().splitlines()
    assert why in line and "edge config" in line, line


def test_a_plan_that_cannot_be_used_is_refused_before_the_credential_is_made(
    tmp_path: Path,
) -> None:
    """DECISIONS 3: an error changes nothing. A bad address or cache folder made the
    credential first, then was refused (an address exit 1, where a usage error is exit 2)."""
    env = home_env(tmp_path)
    issue_token(env, "someone")
    for args, code, why in BAD_PLANS.values():
        refuses_unchanged(env, args, code, why)
        assert not (tmp_path / "home" / steps.SECRET_FILE).exists()
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        fleet = env | {"FXEV_REDIS_URL": server.url}
        for args, code, why in BAD_PLANS.values():
            refuses_unchanged(fleet, args, code, why)
        client = server.client()
        assert client.exists(EDGE_SECRET_KEY) == 0
        client.close()
    finally:
        server.stop()


def test_in_fleet_mode_the_credential_is_the_one_in_redis(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        env = home_env(tmp_path) | {"FXEV_REDIS_URL": server.url}
        done = run_fxev(env, "edge", "config")
        assert done.returncode == 0, done.stderr
        client = server.client()
        credential = bytes(client.get(EDGE_SECRET_KEY)).decode()
        client.close()
        assert f"proxy_set_header X-Fxev-Edge {credential};" in done.stdout
        assert "server 127.0.0.1:8000 " in done.stdout
        assert not (tmp_path / "home" / steps.SECRET_FILE).exists()
    finally:
        server.stop()
