"""The registry on SQLite: revisioned, append-only, one transaction per revision.

``Registry.write(kind, now)`` opens an immediate transaction, hands out the next revision number,
collects the rows the caller inserts, then seals the revision with its chained hash and commits.
Either the whole revision is there or none of it is.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from builder.core.canonical import parse_utc_timestamp, utc_timestamp
from builder.core.errors import database_at
from builder.disk import faults
from builder.registry.chain import GENESIS_HASH, revision_hash
from builder.registry.records import (
    DATA_TABLES,
    TABLE_OF,
    Annotation,
    Cotejo,
    Event,
    Evidence,
    Execution,
    Observation,
    Revision,
    Table,
    canonical_json,
    from_row,
    to_row,
)

REGISTRY_FILE = "registry.sqlite"


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=30.0)
    conn.row_factory = sqlite3.Row
    with database_at(path):
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    return conn


class WriteTransaction:
    """One revision being written. Records are inserted with ``add``; ``summary`` is free JSON."""

    def __init__(self, conn: sqlite3.Connection, revision: int, ts_commit: str) -> None:
        self.conn = conn
        self.revision = revision
        self.ts_commit = ts_commit
        self.summary: dict[str, Any] = {}
        self._seq = 0

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def add(self, record: Any) -> Any:
        table = TABLE_OF[type(record)]
        if getattr(record, table.revision_column) != self.revision:
            raise ValueError(f"{table.name} row belongs to another revision")
        row = to_row(record)
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        self.conn.execute(
            f"INSERT INTO {table.name} ({columns}) VALUES ({marks})", tuple(row.values())
        )
        return record


class Registry:
    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        # Called with the revision of every record read, before it is returned: ``fxev build``
        # checks rows of revisions the log already holds against it (builder.publish.log).
        self.row_check: Callable[[int], None] | None = None

    @classmethod
    def open(cls, home: Path) -> Registry:
        home.mkdir(parents=True, exist_ok=True)
        path = home / REGISTRY_FILE
        conn = connect(path)
        conn.executescript(resources.files("builder.registry").joinpath("schema.sql").read_text())
        return cls(conn, path)

    def close(self) -> None:
        self.conn.close()

    # -- writing -------------------------------------------------------------------------

    @contextlib.contextmanager
    def write(self, kind: str, now: datetime) -> Iterator[WriteTransaction]:
        """Write one revision: everything inside the block, or nothing."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            head = self.head()
            number = 1 if head is None else head.revision + 1
            instant = now if head is None else max(now, parse_utc_timestamp(head.ts_commit))
            tx = WriteTransaction(self.conn, number, utc_timestamp(instant))
            faults.crash_point("after_begin")
            yield tx
            faults.crash_point("before_seal")
            self._seal(tx, kind, GENESIS_HASH if head is None else head.hash)
            faults.crash_point("before_commit")
            self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        faults.crash_point("after_commit")

    def _seal(self, tx: WriteTransaction, kind: str, prev_hash: str) -> None:
        summary_json = canonical_json(tx.summary)
        rows = {table.name: self.rows_of_revision(table, tx.revision) for table in DATA_TABLES}
        digest = revision_hash(prev_hash, tx.revision, tx.ts_commit, kind, summary_json, rows)
        self.conn.execute(
            "INSERT INTO revisions (revision, ts_commit, kind, summary, prev_hash, hash)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (tx.revision, tx.ts_commit, kind, summary_json, prev_hash, digest),
        )

    def rows_of_revision(self, table: Table, revision: int) -> list[dict[str, Any]]:
        cursor = self.conn.execute(
            f"SELECT * FROM {table.name} WHERE {table.revision_column} = ? ORDER BY id",
            (revision,),
        )
        return [dict(row) for row in cursor]

    # -- reading -------------------------------------------------------------------------

    def registry_id(self) -> str | None:
        """The registry's stable id: the chained hash of its first revision (``sha256:<hex>``),
        fixed once that revision is written, distinct for every registry (it covers the first
        revision's random ids); None while the registry has no revision."""
        row = self.conn.execute("SELECT hash FROM revisions WHERE revision = 1").fetchone()
        return None if row is None else str(row[0])

    def head(self) -> Revision | None:
        row = self.conn.execute("SELECT * FROM revisions ORDER BY revision DESC LIMIT 1").fetchone()
        return None if row is None else _revision(row)

    def revision(self, number: int) -> Revision | None:
        row = self.conn.execute("SELECT * FROM revisions WHERE revision = ?", (number,)).fetchone()
        return None if row is None else _revision(row)

    def observation(self, observation_id: str) -> Observation | None:
        return self._one(Observation, "id = ?", (observation_id,))

    def evidence(self, evidence_id: str) -> Evidence | None:
        return self._one(Evidence, "id = ?", (evidence_id,))

    def valid_observation(self, moneda: str, serie: str, fecha: str) -> Observation | None:
        """The observation currently valid for a date: the one nothing supersedes."""
        return self._one(
            Observation,
            "moneda = ? AND serie = ? AND fecha_serie = ? AND NOT EXISTS"
            " (SELECT 1 FROM observations s WHERE s.supersedes = observations.id)",
            (moneda, serie, fecha),
        )

    def previous_valid_observation(
        self, moneda: str, serie: str, before: str
    ) -> Observation | None:
        """The valid observation of the series with the greatest earlier ``fecha_serie``."""
        return self._one(
            Observation,
            "moneda = ? AND serie = ? AND fecha_serie < ? AND NOT EXISTS"
            " (SELECT 1 FROM observations s WHERE s.supersedes = observations.id)"
            " ORDER BY fecha_serie DESC",
            (moneda, serie, before),
        )

    def successor(self, observation_id: str) -> Observation | None:
        return self._one(Observation, "supersedes = ?", (observation_id,))

    def events_of(self, observation_id: str) -> list[Event]:
        return self._many(Event, "observacion_id = ? ORDER BY revision, seq", (observation_id,))

    def events_of_revision(self, revision: int) -> list[Event]:
        return self._many(Event, "revision = ? ORDER BY seq", (revision,))

    def observations_of_revision(self, revision: int) -> list[Observation]:
        return self._many(Observation, "revision_creada = ? ORDER BY id", (revision,))

    # -- a revision as the explorer's log shows it ---------------------------------------

    def count_observations_created(self, revision: int) -> int:
        """How many observations ``revision`` created (an import creates thousands)."""
        row = self.conn.execute(
            "SELECT count(*) FROM observations WHERE revision_creada = ?", (revision,)
        ).fetchone()
        return int(row[0])

    def last_observations_created(self, revision: int, limit: int) -> list[Observation]:
        """The last ``limit`` observations ``revision`` created, by series then date, ascending."""
        newest = self._many(
            Observation,
            "revision_creada = ? ORDER BY serie DESC, fecha_serie DESC, id DESC LIMIT ?",
            (revision, limit),
        )
        return newest[::-1]

    def failures_of_revision(self, revision: int) -> list[Event]:
        """Events of ``revision`` tied to no observation (failed captures), in order."""
        return self._many(
            Event, "revision = ? AND observacion_id IS NULL ORDER BY seq", (revision,)
        )

    # -- a revision as the alert store follows it ------------------------------------------

    def executions_of_revision(self, revision: int) -> list[Execution]:
        """The executions ``revision`` recorded (a run writes one)."""
        return self._many(Execution, "revision = ? ORDER BY started_at, id", (revision,))

    def events_of_revision_of_types(self, revision: int, types: Sequence[str]) -> list[Event]:
        """Events of ``revision`` whose ``tipo`` is one of ``types``, in order."""
        marks = ", ".join("?" for _ in types)
        return self._many(
            Event, f"revision = ? AND tipo IN ({marks}) ORDER BY seq", (revision, *types)
        )

    def cotejos_of_revision(self, revision: int, resultado: str | None = None) -> list[Cotejo]:
        """Cotejos ``revision`` wrote, in order; only those of ``resultado`` when given."""
        if resultado is None:
            return self._many(Cotejo, "revision = ? ORDER BY seq", (revision,))
        return self._many(
            Cotejo, "revision = ? AND resultado = ? ORDER BY seq", (revision, resultado)
        )

    # -- as of a revision (what the builder renders) -------------------------------------

    def valid_observation_at(
        self, moneda: str, serie: str, fecha: str, revision: int
    ) -> Observation | None:
        """The observation valid for a date at ``revision``: created by then, not yet superseded."""
        return self._one(
            Observation,
            "moneda = ? AND serie = ? AND fecha_serie = ? AND revision_creada <= ?"
            " AND NOT EXISTS (SELECT 1 FROM observations s WHERE s.supersedes = observations.id"
            " AND s.revision_creada <= ?)",
            (moneda, serie, fecha, revision, revision),
        )

    def events_at(self, observation_id: str, revision: int) -> list[Event]:
        return self._many(
            Event,
            "observacion_id = ? AND revision <= ? ORDER BY revision, seq",
            (observation_id, revision),
        )

    def cotejos_at(self, observation_id: str, revision: int) -> list[Cotejo]:
        return self._many(
            Cotejo,
            "observacion_id = ? AND revision <= ? ORDER BY revision, seq",
            (observation_id, revision),
        )

    def successor_at(self, observation_id: str, revision: int) -> Observation | None:
        return self._one(
            Observation, "supersedes = ? AND revision_creada <= ?", (observation_id, revision)
        )

    def chain_at(
        self, observation: Observation, revision: int
    ) -> tuple[list[Observation], list[Observation]]:
        """(ancestors oldest first, successors nearest first) of ``observation`` at ``revision``."""
        ancestors: list[Observation] = []
        current = observation
        while current.supersedes is not None:
            found = self.observation(current.supersedes)
            if found is None:
                break
            ancestors.append(found)
            current = found
        successors: list[Observation] = []
        current = observation
        while (nxt := self.successor_at(current.id, revision)) is not None:
            successors.append(nxt)
            current = nxt
        return list(reversed(ancestors)), successors

    def valid_dates_at(self, moneda: str, serie: str, revision: int) -> list[str]:
        cursor = self.conn.execute(
            "SELECT DISTINCT fecha_serie FROM observations o WHERE moneda = ? AND serie = ?"
            " AND revision_creada <= ? AND NOT EXISTS (SELECT 1 FROM observations s"
            " WHERE s.supersedes = o.id AND s.revision_creada <= ?) ORDER BY fecha_serie",
            (moneda, serie, revision, revision),
        )
        return [row[0] for row in cursor]

    def failure_dates_at(self, serie: str, types: Sequence[str], revision: int) -> list[str]:
        """Expected dates of failure events of ``serie`` up to ``revision``."""
        marks = ", ".join("?" for _ in types)
        cursor = self.conn.execute(
            f"SELECT DISTINCT fecha_serie FROM events WHERE serie = ? AND revision <= ?"
            f" AND observacion_id IS NULL AND tipo IN ({marks}) AND fecha_serie IS NOT NULL",
            (serie, revision, *types),
        )
        return [row[0] for row in cursor]

    def declared_no_data_at(self, serie: str, revision: int) -> list[str]:
        cursor = self.conn.execute(
            "SELECT DISTINCT fecha FROM manifest_entries WHERE serie = ? AND revision <= ?"
            " AND estado = 'nd_fuente'",
            (serie, revision),
        )
        return [row[0] for row in cursor]

    def is_declared_no_data(self, serie: str, fecha: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM manifest_entries WHERE serie = ? AND fecha = ? AND estado = 'nd_fuente'"
            " LIMIT 1",
            (serie, fecha),
        ).fetchone()
        return row is not None

    def series_in_production(self, moneda: str, serie: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM series_switches WHERE moneda = ? AND serie = ? AND estado = 'produccion'"
            " LIMIT 1",
            (moneda, serie),
        ).fetchone()
        return row is not None

    def annotations_at(self, revision: int) -> list[Annotation]:
        return self._many(Annotation, "revision <= ? ORDER BY fecha, revision, id", (revision,))

    def rows_touched(self, table: Table, revision: int) -> list[Any]:
        """Records of one table written by ``revision``."""
        return self._many(
            table.record,
            f"{table.revision_column} = ? ORDER BY id",
            (revision,),
        )

    def all_evidence(self) -> list[Evidence]:
        """Every evidence row in the order it was written: revision, capture instant, id."""
        return self._many(Evidence, "1 = 1 ORDER BY revision, capturado_en, id", ())

    def evidence_hashes(self) -> list[str]:
        return [row[0] for row in self.conn.execute("SELECT DISTINCT sha256 FROM evidence")]

    def _one(self, record: type, where: str, params: tuple[Any, ...]) -> Any:
        found = self._many(record, f"{where} LIMIT 1", params)
        return found[0] if found else None

    def _many(self, record: type, where: str, params: tuple[Any, ...]) -> list[Any]:
        table = TABLE_OF[record]
        rows = self.conn.execute(f"SELECT * FROM {table.name} WHERE {where}", params).fetchall()
        if self.row_check is not None:
            for revision in {row[table.revision_column] for row in rows}:
                self.row_check(revision)
        return [from_row(table, row) for row in rows]


def _revision(row: sqlite3.Row) -> Revision:
    return Revision(
        revision=row["revision"],
        ts_commit=row["ts_commit"],
        kind=row["kind"],
        summary=orjson.loads(row["summary"]),
        prev_hash=row["prev_hash"],
        hash=row["hash"],
    )
