"""The alert store: operational incidents with a lifecycle, de-duplicated by condition.

Its own SQLite file, not revisioned. A condition (type + source, plus ``fecha_serie`` for data
alerts) has at most one alert that is not ``resuelta``: the same condition recurring bumps its
``contador`` and ``ultima_vez`` instead of opening a duplicate. After ``resuelta`` it opens anew.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any, Self

import orjson

from builder.core.canonical import utc_timestamp
from builder.core.errors import Conflict, NotFound, UsageError

ALERTS_FILE = "alerts.sqlite"
ALERT_TYPES = (
    "fuente_no_disponible",
    "invariante_fallida",
    "discrepancia",
    "plausibilidad_baja",
    "cambio_formato",
    "tunel_caido",
    "backfill_incompleto",
    "disco",
    "reloj_fuera_de_tolerancia",
)
# Source failures that the next successful capture of the same source resolves by itself.
SYSTEM_RESOLVED = ("fuente_no_disponible", "cambio_formato", "tunel_caido", "invariante_fallida")
OPEN_STATES = ("abierta", "reconocida")

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


def condition_key(tipo: str, fuente: str | None, fecha_serie: str | None = None) -> str:
    """The de-duplication key: type + source, plus the date for data alerts."""
    parts = [tipo, fuente or "-"]
    if fecha_serie is not None:
        parts.append(fecha_serie)
    return ":".join(parts)


class AlertView:
    """Reading alerts: what the gateway serves. Writing is ``AlertStore``'s."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @classmethod
    def open(cls, home: Path) -> Self:
        home.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(home / ALERTS_FILE, isolation_level=None, timeout=30.0)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.executescript(_SCHEMA)
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
        if tipo not in ALERT_TYPES:
            raise ValueError(f"unknown alert type {tipo!r}")
        key = condition_key(tipo, fuente, fecha_serie)
        stamp = utc_timestamp(now)
        detail_json = orjson.dumps(detalle or {}, option=orjson.OPT_SORT_KEYS).decode()
        with self._immediate():
            current = self._fetch("condicion = ? AND estado != 'resuelta'", (key,))
            if current:
                self.conn.execute(
                    "UPDATE alerts SET contador = contador + 1, ultima_vez = ?, detalle = ?"
                    " WHERE id = ?",
                    (max(stamp, current[0].ultima_vez), detail_json, current[0].id),
                )
                alert_id = current[0].id
            else:
                alert_id = str(uuid.uuid4())
                self.conn.execute(
                    "INSERT INTO alerts (id, tipo, estado, condicion, fuente, fecha_serie,"
                    " contador, primera_vez, ultima_vez, detalle)"
                    " VALUES (?, ?, 'abierta', ?, ?, ?, 1, ?, ?, ?)",
                    (alert_id, tipo, key, fuente, fecha_serie, stamp, stamp, detail_json),
                )
        return self.get(alert_id)

    def find_open(
        self, tipo: str, fuente: str | None, fecha_serie: str | None = None
    ) -> Alert | None:
        """The condition's alert that is not ``resuelta``, if there is one."""
        found = self._fetch(
            "condicion = ? AND estado != 'resuelta'", (condition_key(tipo, fuente, fecha_serie),)
        )
        return found[0] if found else None

    def resolve_source_failures(self, fuente: str, now: datetime) -> list[Alert]:
        """A successful capture of ``fuente`` resolves its open source-failure alerts."""
        marks = ", ".join("?" for _ in SYSTEM_RESOLVED)
        with self._immediate():
            touched = self._fetch(
                f"fuente = ? AND estado != 'resuelta' AND tipo IN ({marks})",
                (fuente, *SYSTEM_RESOLVED),
            )
            for alert in touched:
                self.conn.execute(
                    "UPDATE alerts SET estado = 'resuelta', resuelta_por = 'sistema',"
                    " resuelta_en = ? WHERE id = ?",
                    (utc_timestamp(now), alert.id),
                )
        return [self.get(alert.id) for alert in touched]

    def acknowledge(self, alert_id: str, actor: str, now: datetime) -> Alert:
        return self._transition(alert_id, actor, now, ("abierta",), "reconocida")

    def resolve(self, alert_id: str, actor: str, now: datetime) -> Alert:
        return self._transition(alert_id, actor, now, OPEN_STATES, "resuelta")

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
            column = "reconocida" if target == "reconocida" else "resuelta"
            self.conn.execute(
                f"UPDATE alerts SET estado = ?, {column}_por = ?, {column}_en = ? WHERE id = ?",
                (target, actor, utc_timestamp(now), alert_id),
            )
        return self.get(alert_id)

    def _immediate(self) -> _Immediate:
        return _Immediate(self.conn)


class _Immediate:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error) as a context manager."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")
