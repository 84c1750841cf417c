"""The alert state in Redis (docs/operating/fleet.md#alerts): the operator's commands publish it,
newest generation wins, and a gateway's reader follows it with one round trip."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from builder.ops.alerts import AlertStore
from builder.ops.shared_alerts import KEY, NotShared, SharedAlerts, publish, share
from tests.fleet.conftest import Fxev, Host
from tests.fleet.redis_server import RedisServer

NOW = datetime(2026, 9, 21, 20, 0, tzinfo=UTC)


@pytest.fixture
def clean_redis(redis_server: RedisServer) -> Iterator[RedisServer]:
    client = redis_server.client()
    client.delete(KEY)
    client.close()
    yield redis_server


@pytest.fixture
def store(tmp_path: Path) -> Iterator[AlertStore]:
    alerts = AlertStore.open(tmp_path / "home")
    try:
        yield alerts
    finally:
        alerts.close()


def test_only_a_changing_transaction_moves_the_generation(store: AlertStore) -> None:
    assert store.state().generation == 0
    alert = store.raise_alert("disco", NOW, fuente=None)
    assert store.state().generation == 1
    store.acknowledge(alert.id, "ana", NOW)
    assert store.state().generation == 2
    with pytest.raises(ValueError):
        store.acknowledge(alert.id, "ana", NOW)  # refused: rolled back, no move
    state = store.state()
    assert state.generation == 2 and [a.estado for a in state.alerts] == ["reconocida"]


def test_share_publishes_once_per_change_and_the_reader_follows(
    store: AlertStore, clean_redis: RedisServer
) -> None:
    client = clean_redis.client()
    reader = SharedAlerts(client)
    with pytest.raises(NotShared):
        reader.list()
    alert = store.raise_alert("disco", NOW, fuente=None)
    assert share(store, clean_redis.url) is True
    assert share(store, clean_redis.url) is False  # nothing changed since
    assert [a.id for a in reader.list()] == [alert.id]
    first_version = reader.version
    assert reader.list() == reader.list()  # unchanged: no snapshot sent again
    assert reader.version == first_version

    store.resolve(alert.id, "ana", NOW)
    share(store, clean_redis.url)
    assert reader.list(open_only=True) == []
    assert [a.estado for a in reader.list(open_only=False)] == ["resuelta"]
    assert reader.version != first_version
    client.close()


def test_an_older_generation_never_replaces_a_newer_one(
    store: AlertStore, clean_redis: RedisServer
) -> None:
    client = clean_redis.client()
    alert = store.raise_alert("disco", NOW, fuente=None)
    older = store.state()
    store.acknowledge(alert.id, "ana", NOW)
    newer = store.state()
    assert publish(client, newer) is True
    assert publish(client, older) is False  # a command that finished late
    assert [a.estado for a in SharedAlerts(client).list()] == ["reconocida"]
    client.close()


def test_the_alert_commands_publish_and_fail_in_one_line_without_redis(
    operator: Host, fxev: Fxev, clean_redis: RedisServer, tmp_path: Path
) -> None:
    env = {"FXEV_HOME": str(operator.home), "FXEV_SITE": str(operator.site)}
    fleet = env | {"FXEV_REDIS_URL": clean_redis.url}
    alerts = AlertStore.open(operator.home)
    alerts.raise_alert("disco", NOW, fuente=None)
    alerts.raise_alert("reloj_fuera_de_tolerancia", NOW, fuente="taxauth_txt")
    alerts.close()
    listed = fxev(fleet, "alerts", "list", "--all")
    assert listed.code == 0, listed.err
    client = clean_redis.client()
    shared = SharedAlerts(client).list(open_only=False)
    assert [a.to_json() for a in shared] == listed.last["items"]
    assert len(shared) == 2

    nowhere = env | {"FXEV_REDIS_URL": "redis://127.0.0.1:1/0"}
    target = next(a for a in shared if a.estado == "abierta")
    moved = fxev(nowhere, "alerts", "ack", target.id, "--actor", "ana")
    assert moved.code == 2
    assert moved.err.count("\n") == 1 and "nothing was changed" in moved.err, moved.err
    # DECISIONS 3: an error changes nothing. (Formerly the alert was moved in the operator's
    # store, and the natural retry failed: "is reconocida; cannot move to reconocida".)
    local = AlertStore.open(operator.home)
    assert {a.id: a.estado for a in local.list(open_only=False)}[target.id] == "abierta"
    local.close()
    assert SharedAlerts(client).list(open_only=False) == shared
    again = fxev(fleet, "alerts", "ack", target.id, "--actor", "ana")  # the retry
    assert again.code == 0, again.err
    states = {a.id: a.estado for a in SharedAlerts(client).list(open_only=False)}
    assert states[target.id] == "reconocida"
    client.close()
