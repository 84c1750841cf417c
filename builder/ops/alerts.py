"""The alert store: operational incidents with a lifecycle, de-duplicated by condition.

Its own SQLite file, not revisioned. A condition (type + source, plus ``fecha_serie`` for data
alerts) has at most one alert that is not ``resuelta``: the same condition recurring bumps its
``contador`` and ``ultima_vez`` instead of opening a duplicate. After ``resuelta`` it opens anew.

Every transaction that changes the store moves its ``generation`` (``alert_state``): fleet mode
publishes the whole state under it (:mod:`builder.ops.shared_alerts`), newest wins.

Alerts follow the registry (docs/operating/alerts.md#follow-the-registry): the store remembers
the last registry revision whose events it applied (``registry_applied``) and which alerts each
revision touched (``revision_alerts``). ``apply_revision`` applies one revision's actions and moves
that mark in one transaction, so a revision is applied once, whoever applies it. The registry's
side (which actions a revision calls for) is ``builder.capture.alerting``'s.
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import sqlite3
import uuid
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Self

import orjson

from builder.core.canonical import utc_timestamp
from builder.core.errors import Conflict, NotFound, UsageError, database_at
from builder.core.vocabulary import (
    ABIERTA,
    ALERT_TYPES,
    CAMBIO_FORMATO,
    FUENTE_NO_DISPONIBLE,
    INVARIANTE_FALLIDA,
    OPEN_ALERT_STATES,
    RECONOCIDA,
    RESUELTA,
    TUNEL_CAIDO,
)

ALERTS_FILE = "alerts.sqlite"
# Source failures that the next successful capture of the same source resolves by itself.
SYSTEM_RESOLVED = (FUENTE_NO_DISPONIBLE, CAMBIO_FORMATO, TUNEL_CAIDO, INVARIANTE_FALLIDA)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS alerts (
    id             TEXT PRIMARY KEY,
    tipo           TEXT NOT NULL,
    estado         TEXT NOT NULL,
    condicion      TEXT NOT NULL,
    fuente         TEXT,
    fecha_serie    TEXT,
    contador       INTEGER NOT NULL,
    primera_vez    TEXT NOT NULL,
    ultima_vez     TEXT NOT NULL,
    detalle        TEXT NOT NULL,
    reconocida_por TEXT,
    reconocida_en  TEXT,
    resuelta_por   TEXT,
    resuelta_en    TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS alerts_one_open_per_condition
    ON alerts(condicion) WHERE estado != 'resuelta';
CREATE INDEX IF NOT EXISTS alerts_order ON alerts(ultima_vez DESC, id);
CREATE TABLE IF NOT EXISTS registry_applied (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    revision INTEGER NOT NULL          -- the last registry revision whose events were applied
);
CREATE TABLE IF NOT EXISTS revision_alerts (
    revision INTEGER NOT NULL,
    ord      INTEGER NOT NULL,
    alert_id TEXT NOT NULL,
    PRIMARY KEY (revision, ord)
);
CREATE TABLE IF NOT EXISTS alert_state (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    store_id   TEXT NOT NULL,           -- this store, once: a fleet tells one operator from another
    generation INTEGER NOT NULL,        -- +1 by every transaction that changed an alert
    shared     INTEGER NOT NULL         -- the generation last published to Redis (fleet mode)
);
"""


class AlertError(UsageError, ValueError):
    """An operator asked for a transition the alert's lifecycle does not allow."""


class AlertNotFound(AlertError, NotFound):
    """No alert has the id given."""


class AlertConflict(AlertError, Conflict):
    """The alert's state does not allow the transition asked for."""


@dataclasses.dataclass(frozen=True, slots=True)
class Alert:
    id: str
    tipo: str
    estado: str
    condicion: str
    fuente: str | None
    fecha_serie: str | None
    contador: int
    primera_vez: str
    ultima_vez: str
    detalle: dict[str, Any]
    reconocida_por: str | None
    reconocida_en: str | None
    resuelta_por: str | None
    resuelta_en: str | None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True, slots=True)
class Raise:
    """Open an alert for a condition, or bump the one open. ``accumulate`` names a list in
    ``detalle`` kept as the union with the open alert's (``backfill_incompleto``'s ``fechas``)."""

    tipo: str
    now: datetime
    fuente: str | None
    fecha_serie: str | None = None
    detalle: dict[str, Any] = dataclasses.field(default_factory=dict)
    accumulate: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class ResolveSource:
    """A successful capture of ``fuente``: its open source-failure alerts are resolved."""

    fuente: str
    now: datetime


AlertAction = Raise | ResolveSource


def condition_key(tipo: str, fuente: str | None, fecha_serie: str | None = None) -> str:
    """The de-duplication key: type + source, plus the date for data alerts."""
    parts = [tipo, fuente or "-"]
    if fecha_serie is not None:
        parts.append(fecha_serie)
    return ":".join(parts)


@dataclasses.dataclass(frozen=True, slots=True)
class AlertState:
    """What the store holds at one generation: every alert, newest ``ultima_vez`` first, and
    ``shared``, the generation last published to Redis (-1: never)."""

    store_id: str
    generation: int
    shared: int
    alerts: tuple[Alert, ...]


class AlertView:
    """Reading alerts: what the gateway serves. Writing is ``AlertStore``'s."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @classmethod
    def open(cls, home: Path) -> Self:
        home.mkdir(parents=True, exist_ok=True)
        # One opener at a time (the home folder's flock) sets the journal mode and creates the
        # tables: two workers on a fresh home would race, and WAL answers "locked" at once.
        folder = os.open(home, os.O_RDONLY)
        try:
            fcntl.flock(folder, fcntl.LOCK_EX)
            conn = sqlite3.connect(home / ALERTS_FILE, isolation_level=None, timeout=30.0)
            conn.row_factory = sqlite3.Row
            with database_at(home / ALERTS_FILE):  # SQLite's message names no file
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
            conn.executescript(_SCHEMA)
            conn.execute(
                "INSERT OR IGNORE INTO alert_state (id, store_id, generation, shared)"
                " VALUES (1, ?, 0, -1)",
                (uuid.uuid4().hex,),
            )
        finally:
            os.close(folder)
        return cls(conn)

    def close(self) -> None:
        self.conn.close()

    def get(self, alert_id: str) -> Alert:
        found = self._fetch("id = ?", (alert_id,))
        if not found:
            raise AlertNotFound(f"no alert with id {alert_id}")
        return found[0]

    def list(self, open_only: bool = True) -> list[Alert]:
        """Alerts by ``ultima_vez`` descending, then ``id``; open means abierta or reconocida."""
        where = "estado != 'resuelta'" if open_only else "1 = 1"
        return self._fetch(f"{where} ORDER BY ultima_vez DESC, id", ())

    def state(self) -> AlertState:
        """Every alert (ordered as :meth:`list`) with the generation they are at, read in one
        transaction so the two agree."""
        self.conn.execute("BEGIN")
        try:
            store_id, generation, shared = self.conn.execute(
                "SELECT store_id, generation, shared FROM alert_state WHERE id = 1"
            ).fetchone()
            alerts = self.list(open_only=False)
        finally:
            self.conn.execute("COMMIT")
        return AlertState(store_id, int(generation), int(shared), tuple(alerts))

    def _fetch(self, where: str, params: tuple[Any, ...]) -> list[Alert]:
        rows = self.conn.execute(f"SELECT * FROM alerts WHERE {where}", params).fetchall()
        return [Alert(**{**dict(row), "detalle": orjson.loads(row["detalle"])}) for row in rows]


class AlertStore(AlertView):
    """The write side's alerts: raising, de-duplicating and moving them through their lifecycle."""

    def raise_alert(
        self,
        tipo: str,
        now: datetime,
        *,
        fuente: str | None,
        fecha_serie: str | None = None,
        detalle: dict[str, Any] | None = None,
    ) -> Alert:
        """Open an alert for the condition, or bump the one already open."""
        with self._immediate():
            alert_id = self._raise(Raise(tipo, now, fuente, fecha_serie, detalle or {}))
        return self.get(alert_id)

    # -- following the registry ----------------------------------------------------------

    def applied_revision(self) -> int | None:
        """The last registry revision applied; None before the store follows a registry."""
        row = self.conn.execute("SELECT revision FROM registry_applied WHERE id = 1").fetchone()
        return None if row is None else int(row[0])

    def follow_from(self, revision: int) -> int:
        """Start following the registry after ``revision`` unless already following; the mark."""
        self.conn.execute(
            "INSERT OR IGNORE INTO registry_applied (id, revision) VALUES (1, ?)", (revision,)
        )
        mark = self.applied_revision()
        assert mark is not None
        return mark

    def apply_revision(self, revision: int, actions: Sequence[AlertAction]) -> bool:
        """Apply the alert actions registry ``revision`` calls for and move the mark to it, in one
        transaction; False (nothing done) when the mark already covers it."""
        with self._immediate():
            mark = self.applied_revision()
            if mark is None:
                raise ValueError("the alert store follows no registry yet (follow_from)")
            if mark >= revision:
                return False
            if mark != revision - 1:
                raise ValueError(f"revision {revision} applied after {mark}: out of order")
            touched: list[str] = []
            for action in actions:
                if isinstance(action, Raise):
                    touched.append(self._raise(action))
                else:
                    touched += self._resolve_source(action)
            for ord_, alert_id in enumerate(dict.fromkeys(touched)):
                self.conn.execute(
                    "INSERT INTO revision_alerts (revision, ord, alert_id) VALUES (?, ?, ?)",
                    (revision, ord_, alert_id),
                )
            self.conn.execute("UPDATE registry_applied SET revision = ? WHERE id = 1", (revision,))
        return True

    def alerts_of_revision(self, revision: int) -> list[Alert]:
        """The alerts registry ``revision`` raised, bumped or resolved, as they are now."""
        rows = self.conn.execute(
            "SELECT alert_id FROM revision_alerts WHERE revision = ? ORDER BY ord", (revision,)
        ).fetchall()
        return [self.get(row[0]) for row in rows]

    # -- inside a transaction ------------------------------------------------------------

    def _raise(self, action: Raise) -> str:
        if action.tipo not in ALERT_TYPES:
            raise ValueError(f"unknown alert type {action.tipo!r}")
        key = condition_key(action.tipo, action.fuente, action.fecha_serie)
        stamp = utc_timestamp(action.now)
        current = self._fetch("condicion = ? AND estado != 'resuelta'", (key,))
        detalle = dict(action.detalle)
        if current and action.accumulate is not None:
            earlier = current[0].detalle.get(action.accumulate, [])
            detalle[action.accumulate] = sorted({*earlier, *detalle.get(action.accumulate, [])})
        detail_json = orjson.dumps(detalle, option=orjson.OPT_SORT_KEYS).decode()
        if current:
            self.conn.execute(
                "UPDATE alerts SET contador = contador + 1, ultima_vez = ?, detalle = ?"
                " WHERE id = ?",
                (max(stamp, current[0].ultima_vez), detail_json, current[0].id),
            )
            return current[0].id
        alert_id = str(uuid.uuid4())
        self.conn.execute(
            "INSERT INTO alerts (id, tipo, estado, condicion, fuente, fecha_serie,"
            " contador, primera_vez, ultima_vez, detalle)"
            " VALUES (?, ?, 'abierta', ?, ?, ?, 1, ?, ?, ?)",
            (alert_id, action.tipo, key, action.fuente, action.fecha_serie, stamp, stamp,
             detail_json),
        )  # fmt: skip
        return alert_id

    def _resolve_source(self, action: ResolveSource) -> list[str]:
        marks = ", ".join("?" for _ in SYSTEM_RESOLVED)
        touched = self._fetch(
            f"fuente = ? AND estado != 'resuelta' AND tipo IN ({marks})",
            (action.fuente, *SYSTEM_RESOLVED),
        )
        for alert in touched:
            self.conn.execute(
                "UPDATE alerts SET estado = 'resuelta', resuelta_por = 'sistema',"
                " resuelta_en = ? WHERE id = ?",
                (utc_timestamp(action.now), alert.id),
            )
        return [alert.id for alert in touched]

    def resolve_source(self, action: ResolveSource) -> list[Alert]:
        """Apply ``action`` outside any revision, for a successful capture that recorded none
        (``sin_cambios``); the alerts it resolved."""
        with self._immediate():
            touched = self._resolve_source(action)
        return [self.get(alert_id) for alert_id in touched]

    def acknowledge(self, alert_id: str, actor: str, now: datetime) -> Alert:
        return self._transition(alert_id, actor, now, (ABIERTA,), RECONOCIDA)

    def resolve(self, alert_id: str, actor: str, now: datetime) -> Alert:
        return self._transition(alert_id, actor, now, OPEN_ALERT_STATES, RESUELTA)

    def _transition(
        self, alert_id: str, actor: str, now: datetime, allowed: tuple[str, ...], target: str
    ) -> Alert:
        if not actor.strip():
            raise AlertError("an operator transition needs a non-empty --actor")
        with self._immediate():
            found = self._fetch("id = ?", (alert_id,))
            if not found:
                raise AlertNotFound(f"no alert with id {alert_id}")
            if found[0].estado not in allowed:
                state = found[0].estado
                raise AlertConflict(f"alert {alert_id} is {state}; cannot move to {target}")
            column = RECONOCIDA if target == RECONOCIDA else RESUELTA
            self.conn.execute(
                f"UPDATE alerts SET estado = ?, {column}_por = ?, {column}_en = ? WHERE id = ?",
                (target, actor, utc_timestamp(now), alert_id),
            )
        return self.get(alert_id)

    def mark_shared(self, generation: int) -> None:
        """Redis now holds ``generation`` (or a newer one)."""
        self.conn.execute(
            "UPDATE alert_state SET shared = max(shared, ?) WHERE id = 1", (generation,)
        )

    def _immediate(self) -> _Immediate:
        return _Immediate(self.conn)


class _Immediate:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error) as a context manager; a
    transaction that changed a row moves the store's generation before it commits."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.changes = 0

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self.changes = self.conn.total_changes

    def __exit__(self, exc_type: object, *_: object) -> None:
        if exc_type is None and self.conn.total_changes != self.changes:
            self.conn.execute("UPDATE alert_state SET generation = generation + 1 WHERE id = 1")
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")
