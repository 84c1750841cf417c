"""The built tree answers what the registry says, at every revision.

A synthetic registry (``tests.support.synth``: 500 capture runs over ~85 days with corrections, some
corrected twice, failed runs, whole-day outages, uncaptured days and a low plausibility
threshold) is built once. Then, for seeded random queries at random revisions, every answer read
through ``TreeReader`` is compared with one computed directly from the registry by plain SQL written
here:

- valid observation at R: created at or before R, and no observation created at or before R
  supersedes it;
- ``marcas``: distinct event types up to R in order of first occurrence (revision, seq);
- ``superseded_por``: the direct successor in the whole published registry;
- coverage: business days between the first and last valid dates with no valid observation,
  ``nd_fuente`` > ``fallo`` (a failure event expecting that date) > ``sin_dato``.

Incremental builds are checked against one-shot builds of the same registry, file by file.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from builder.capture.run import Stores
from builder.core import business_days
from builder.core.settings import load_settings
from builder.core.wire import splice_item
from builder.publish.build import Builder
from builder.publish.writer import TreeWriter
from builder.registry.store import REGISTRY_FILE
from builder.render.api import GAP_CRITERION
from builder.tree.reader import TreeReader
from tests.builder.treefiles import tree_files
from tests.support.synth import Synth, SynthStats

SERIE = "publicado"
FAILURE_TYPES = ("fuente_no_disponible", "invariante_fallida", "cambio_formato", "tunel_caido")
START = date(2023, 12, 18)  # crosses a year boundary and Peru's holidays of late December
OPTIONS: dict[str, Any] = {
    "captures_per_date": 6,
    "correction_rate": 0.3,
    "failure_rate": 0.06,
    "outage_rate": 0.05,
    "skip_rate": 0.04,
    "recorrection_rate": 0.4,
}
REVISIONS = 500


# -- the registry, its tree, and the reference ------------------------------------------------


def synth(home: Path, seed: int) -> Synth:
    settings = load_settings({"FXEV_HOME": str(home), "FXEV_PLAUSIBILITY_PCT": "0.25"})
    return Synth(home, seed=seed, start=START, settings=settings, **OPTIONS)


def build(home: Path, site: Path) -> tuple[int, ...]:
    stores = Stores.open(home)
    try:
        return Builder(stores.registry, stores.blobs, TreeWriter(site)).build().built
    finally:
        stores.close()


class Reference:
    """Answers computed straight from the registry's tables."""

    def __init__(self, home: Path) -> None:
        uri = f"{(home / REGISTRY_FILE).as_uri()}?mode=ro"
        self.conn = sqlite3.connect(uri, uri=True)
        self.conn.row_factory = sqlite3.Row
        self.head = self.conn.execute("SELECT MAX(revision) FROM revisions").fetchone()[0]

    def close(self) -> None:
        self.conn.close()

    def valid(self, start: str, end: str, revision: int) -> list[sqlite3.Row]:
        return self.conn.execute(
            "SELECT * FROM observations o WHERE o.moneda = 'USD' AND o.serie = ?"
            " AND o.fecha_serie BETWEEN ? AND ? AND o.revision_creada <= ?"
            " AND NOT EXISTS (SELECT 1 FROM observations s"
            "   WHERE s.supersedes = o.id AND s.revision_creada <= ?)"
            " ORDER BY o.fecha_serie",
            (SERIE, start, end, revision, revision),
        ).fetchall()

    def marcas(self, observation_id: str, revision: int) -> list[str]:
        rows = self.conn.execute(
            "SELECT tipo FROM events WHERE observacion_id = ? AND revision <= ?"
            " GROUP BY tipo ORDER BY MIN(revision * 1000000 + seq)",
            (observation_id, revision),
        ).fetchall()
        return [row[0] for row in rows]

    def successor(self, observation_id: str, revision: int) -> sqlite3.Row | None:
        return self.conn.execute(
            "SELECT * FROM observations WHERE supersedes = ? AND revision_creada <= ?",
            (observation_id, revision),
        ).fetchone()

    def item(self, row: sqlite3.Row, revision: int) -> dict[str, Any]:
        successor = self.successor(row["id"], self.head)
        return {
            "fecha_serie": row["fecha_serie"],
            "compra": row["compra"],
            "venta": row["venta"],
            "fuente": row["fuente"],
            "cotejos": [],
            "tiene_discrepancia_abierta": False,
            "marcas": self.marcas(row["id"], revision),
            "observacion_id": row["id"],
            "capturado_en": row["capturado_en"],
            "superseded": False,
            "superseded_por": None if successor is None else successor["id"],
        }

    def revision_at(self, instant: str) -> int | None:
        return self.conn.execute(
            "SELECT MAX(revision) FROM revisions WHERE ts_commit <= ?", (instant,)
        ).fetchone()[0]

    def coverage(self, revision: int) -> list[dict[str, Any]]:
        dates = {row["fecha_serie"] for row in self.valid("0000", "9999", revision)}
        if not dates:
            return []
        failed = {
            row[0]
            for row in self.conn.execute(
                "SELECT fecha_serie FROM events WHERE observacion_id IS NULL AND serie = ?"
                f" AND revision <= ? AND tipo IN ({', '.join('?' for _ in FAILURE_TYPES)})",
                (SERIE, revision, *FAILURE_TYPES),
            )
        }
        declared = {
            row[0]
            for row in self.conn.execute(
                "SELECT fecha FROM manifest_entries WHERE serie = ? AND revision <= ?"
                " AND estado = 'nd_fuente'",
                (SERIE, revision),
            )
        }
        first, last = min(dates), max(dates)
        gaps = []
        day = date.fromisoformat(first)
        while day.isoformat() <= last:
            text = day.isoformat()
            if business_days.is_business_day(day) and text not in dates:
                motivo = "nd_fuente" if text in declared else "fallo" if text in failed else None
                gaps.append({"fecha": text, "motivo": motivo or "sin_dato"})
            day += timedelta(days=1)
        return [
            {
                "moneda": "USD",
                "serie": SERIE,
                "primera": first,
                "ultima": last,
                "total_fechas": len(dates),
                "huecos": gaps,
                "criterio_huecos": GAP_CRITERION,
            }
        ]

    def record(self, row: sqlite3.Row) -> dict[str, Any]:
        fields = [
            "id",
            "moneda",
            "serie",
            "fecha_serie",
            "compra",
            "venta",
            "compra_cruda",
            "venta_cruda",
            "fuente",
            "identidad_consulta",
            "fragmento",
            "version_parser",
            "capturado_en",
            "ejecucion_id",
            "evidencia_id",
            "revision_creada",
        ]
        return {name: row[name] for name in fields}

    def detail(self, observation_id: str, revision: int) -> dict[str, Any] | None:
        row = self.conn.execute(
            "SELECT * FROM observations WHERE id = ? AND revision_creada <= ?",
            (observation_id, revision),
        ).fetchone()
        if row is None:
            return None
        ancestors = []
        current = row
        while current["supersedes"] is not None:
            current = self.conn.execute(
                "SELECT * FROM observations WHERE id = ?", (current["supersedes"],)
            ).fetchone()
            ancestors.insert(0, self.record(current))
        successors = []
        current = row
        while (current := self.successor(current["id"], revision)) is not None:
            successors.append(self.record(current))
        events = self.conn.execute(
            "SELECT * FROM events WHERE observacion_id = ? AND revision <= ?"
            " ORDER BY revision, seq",
            (observation_id, revision),
        ).fetchall()
        return {
            "observacion": self.record(row),
            "cadena": {"ancestros": ancestors, "sucesoras": successors},
            "eventos": [
                {
                    "id": e["id"],
                    "tipo": e["tipo"],
                    "ts": e["ts"],
                    "revision": e["revision"],
                    "ejecucion_id": e["ejecucion_id"],
                    "evidencia_id": e["evidencia_id"],
                    "detalle": orjson.loads(e["detalle"]),
                }
                for e in events
            ],
            "cotejos": [],
            "superseded": bool(successors),
        }

    def observation_ids(self) -> list[str]:
        return [row[0] for row in self.conn.execute("SELECT id FROM observations ORDER BY id")]

    def date_bounds(self) -> tuple[date, date]:
        low, high = self.conn.execute(
            "SELECT MIN(fecha_serie), MAX(fecha_serie) FROM observations"
        ).fetchone()
        return date.fromisoformat(low), date.fromisoformat(high)


class Built:
    def __init__(self, home: Path, site: Path, stats: SynthStats) -> None:
        self.home = home
        self.site = site
        self.stats = stats
        self.tree = TreeReader(site)
        self.ref = Reference(home)
        published = self.tree.published_revision()
        assert published is not None
        self.published = published
        self.spliced = self.tree.supersessions(self.tree.root(published).supersessions)

    def items(self, start: str, end: str, revision: int, offset: int, limit: int) -> Any:
        page = self.tree.rates(SERIE, start, end, revision, offset, limit)
        decoded = [
            orjson.loads(splice_item(i.prefix, self.spliced.get(i.observacion_id)))
            for i in page.items
        ]
        refs = [(i.observacion_id, i.fecha_serie) for i in page.items]
        return page, refs, decoded


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    folder = tmp_path_factory.mktemp("reference")
    home, site = folder / "home", folder / "site"
    with synth(home, seed=7) as writer:
        stats = writer.advance(REVISIONS)
    build(home, site)
    result = Built(home, site, stats)
    try:
        yield result
    finally:
        result.ref.close()


# -- the generated registry is the one these tests need ------------------------------------------


def test_generated_registry_has_corrections_failures_gaps_and_implausible_values(
    built: Built,
) -> None:
    ref = built.ref
    count = ref.conn.execute
    assert built.published == REVISIONS == ref.head
    assert built.stats.corrections >= 10
    assert built.stats.failures >= 20
    assert built.stats.implausible >= 1
    assert count("SELECT COUNT(*) FROM cotejos").fetchone()[0] == 0
    coverage = ref.coverage(REVISIONS)[0]
    motivos = {gap["motivo"] for gap in coverage["huecos"]}
    assert motivos == {"fallo", "sin_dato"}
    superseding = "SELECT COUNT(*) FROM observations WHERE supersedes IS NOT NULL"
    assert count(superseding).fetchone()[0] == built.stats.corrections
    chains_of_three = count(
        "SELECT COUNT(*) FROM observations a JOIN observations b ON b.supersedes = a.id"
        " JOIN observations c ON c.supersedes = b.id"
    ).fetchone()[0]
    assert chains_of_three >= 2


# -- rates -------------------------------------------------------------------------------------


def random_range(rng: random.Random, low: date, high: date) -> tuple[str, str]:
    span = (high - low).days + 20
    kind = rng.random()
    if kind < 0.1:
        return "1900-01-01", "2999-12-31"
    first = low - timedelta(days=10) + timedelta(days=rng.randrange(span))
    if kind < 0.2:
        return first.isoformat(), first.isoformat()
    if kind < 0.25:  # start after end: nothing
        return first.isoformat(), (first - timedelta(days=rng.randint(1, 5))).isoformat()
    last = first + timedelta(days=rng.randrange(span))
    return first.isoformat(), last.isoformat()


def test_rates_items_and_total_match_the_registry_at_random_revisions(built: Built) -> None:
    rng = random.Random(1)
    low, high = built.ref.date_bounds()
    checked_items = 0
    for _ in range(300):
        revision = rng.randint(1, built.published)
        start, end = random_range(rng, low, high)
        page, refs, decoded = built.items(start, end, revision, 0, 10**6)
        rows = built.ref.valid(start, end, revision)
        assert page.total == len(rows), (start, end, revision)
        assert refs == [(r["id"], r["fecha_serie"]) for r in rows], (start, end, revision)
        assert decoded == [built.ref.item(r, revision) for r in rows], (start, end, revision)
        checked_items += len(rows)
    assert checked_items > 3000


def test_item_bytes_hold_the_fields_in_the_documented_order(built: Built) -> None:
    page, _, _ = built.items("1900-01-01", "2999-12-31", built.published, 0, 5)
    spliced = splice_item(page.items[0].prefix, None)
    assert list(orjson.loads(spliced)) == [
        "fecha_serie",
        "compra",
        "venta",
        "fuente",
        "cotejos",
        "tiene_discrepancia_abierta",
        "marcas",
        "observacion_id",
        "capturado_en",
        "superseded",
        "superseded_por",
    ]


def test_superseded_por_shows_todays_correction_at_an_earlier_revision(built: Built) -> None:
    """An item valid at R and corrected later carries its successor's id, not null."""
    row = built.ref.conn.execute(
        "SELECT a.fecha_serie, a.id AS old, b.id AS new, b.revision_creada AS at"
        " FROM observations a JOIN observations b ON b.supersedes = a.id"
        " ORDER BY b.revision_creada LIMIT 1"
    ).fetchone()
    _, refs, decoded = built.items(row["fecha_serie"], row["fecha_serie"], row["at"] - 1, 0, 5)
    assert refs == [(row["old"], row["fecha_serie"])]
    assert decoded[0]["superseded_por"] == built.ref.successor(row["old"], built.published)["id"]
    _, refs_after, _ = built.items(row["fecha_serie"], row["fecha_serie"], row["at"], 0, 5)
    assert refs_after == [(row["new"], row["fecha_serie"])]


def test_walking_pages_gives_the_same_items_as_one_big_page(built: Built) -> None:
    rng = random.Random(2)
    low, high = built.ref.date_bounds()
    for _ in range(80):
        revision = rng.randint(1, built.published)
        start, end = random_range(rng, low, high)
        whole, whole_refs, whole_items = built.items(start, end, revision, 0, 10**6)
        limit = rng.randint(1, 40)
        walked_refs: list[tuple[str, str]] = []
        walked_items: list[dict[str, Any]] = []
        offset = 0
        while True:
            page, refs, decoded = built.items(start, end, revision, offset, limit)
            assert page.total == whole.total
            assert len(refs) == min(limit, max(whole.total - offset, 0))
            walked_refs += refs
            walked_items += decoded
            offset += limit
            if offset >= page.total:
                break
        assert walked_refs == whole_refs
        assert walked_items == whole_items
        beyond, refs, _ = built.items(start, end, revision, whole.total + rng.randint(0, 9), limit)
        assert refs == []
        assert beyond.total == whole.total


def test_a_series_that_is_not_served_answers_nothing_at_every_revision(built: Built) -> None:
    for revision in range(1, built.published + 1, 7):
        assert built.tree.rates("cierre", "1900-01-01", "2999-12-31", revision, 0, 100).total == 0
        assert built.tree.latest("cierre", revision) is None


# -- latest, revision_at, coverage -----------------------------------------------------------


def test_latest_is_the_valid_observation_with_the_greatest_date_at_every_revision(
    built: Built,
) -> None:
    for revision in range(1, built.published + 1):
        rows = built.ref.valid("0000", "9999", revision)
        found = built.tree.latest(SERIE, revision)
        if not rows:
            assert found is None, revision
            continue
        assert found is not None, revision
        assert (found.observacion_id, found.fecha_serie) == (
            rows[-1]["id"],
            rows[-1]["fecha_serie"],
        )
        item = orjson.loads(splice_item(found.prefix, built.spliced.get(found.observacion_id)))
        assert item == built.ref.item(rows[-1], revision)


def test_revision_at_finds_the_last_revision_committed_at_or_before_an_instant(
    built: Built,
) -> None:
    rng = random.Random(3)
    stamps = [r[0] for r in built.ref.conn.execute("SELECT ts_commit FROM revisions")]
    first = datetime.strptime(stamps[0], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    last = datetime.strptime(stamps[-1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    seconds = int((last - first).total_seconds())
    instants = [rng.choice(stamps) for _ in range(50)]
    instants += ["2000-01-01T00:00:00.000000Z", "2999-01-01T00:00:00.000000Z"]
    instants += [
        (first + timedelta(seconds=rng.randint(-3600, seconds + 3600))).strftime(
            "%Y-%m-%dT%H:%M:%S.%fZ"
        )
        for _ in range(200)
    ]
    for instant in instants:
        found = built.tree.revision_at(instant, built.published)
        expected = built.ref.revision_at(instant)
        assert (found.revision if found else None) == expected, instant
        if found is not None:
            assert found.ts_commit <= instant


def test_revision_at_never_answers_beyond_the_published_revision(built: Built) -> None:
    bound = built.published // 2
    found = built.tree.revision_at("2999-01-01T00:00:00.000000Z", bound)
    assert found is not None
    assert found.revision == bound


def test_coverage_matches_the_registry_at_every_revision(built: Built) -> None:
    gaps_seen = set()
    for revision in range(1, built.published + 1):
        expected = built.ref.coverage(revision)
        assert built.tree.coverage(revision) == expected, revision
        for entry in expected:
            gaps_seen |= {gap["motivo"] for gap in entry["huecos"]}
    assert gaps_seen == {"fallo", "sin_dato"}


# -- observation detail and evidence ------------------------------------------------------------


def decode_detail(prefix: bytes | None) -> dict[str, Any] | None:
    return None if prefix is None else orjson.loads(prefix + b"}")


def test_detail_at_the_published_revision_matches_the_registry(built: Built) -> None:
    ids = built.ref.observation_ids()
    rng = random.Random(4)
    corrected = [
        row[0]
        for row in built.ref.conn.execute(
            "SELECT id FROM observations WHERE supersedes IS NOT NULL"
            " OR id IN (SELECT supersedes FROM observations)"
        )
    ]
    for observation_id in rng.sample(ids, 80) + corrected:
        found = decode_detail(built.tree.detail(observation_id, built.published))
        assert found == built.ref.detail(observation_id, built.published), observation_id


def test_detail_at_random_revisions_matches_the_registry_as_of_that_revision(built: Built) -> None:
    ids = built.ref.observation_ids()
    rng = random.Random(5)
    absent = 0
    for _ in range(300):
        observation_id = rng.choice(ids)
        revision = rng.randint(1, built.published)
        expected = built.ref.detail(observation_id, revision)
        absent += expected is None
        found = decode_detail(built.tree.detail(observation_id, revision))
        assert found == expected, (observation_id, revision)
    assert 0 < absent < 300


def test_evidence_metadata_and_bytes_match_the_registry(built: Built) -> None:
    rng = random.Random(6)
    rows = built.ref.conn.execute("SELECT * FROM evidence").fetchall()
    for row in rng.sample(rows, 60):
        revision = rng.randint(1, built.published)
        meta = built.tree.evidence_meta(row["id"], revision)
        if row["revision"] > revision:
            assert meta is None
            continue
        assert meta is not None
        assert meta.to_json() == {
            "id": row["id"],
            "sha256": row["sha256"],
            "size": row["size"],
            "content_type": row["content_type"],
            "capturado_en": row["capturado_en"],
            "identidad_consulta": row["identidad_consulta"],
            "revision": row["revision"],
        }
        blob = built.home / "evidence" / "sha256" / row["sha256"][:2] / row["sha256"]
        assert built.tree.evidence_bytes(row["sha256"]) == blob.read_bytes()
        assert len(blob.read_bytes()) == row["size"]


# -- reproducibility -------------------------------------------------------------------------


def test_two_fresh_builds_of_one_registry_are_byte_identical(built: Built, tmp_path: Path) -> None:
    again = tmp_path / "site"
    build(built.home, again)
    first, second = tree_files(built.site), tree_files(again)
    assert sorted(first) == sorted(second)
    assert [name for name in first if first[name] != second[name]] == []


@pytest.fixture(scope="module")
def incremental(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[int]]:
    """A registry built after every few revisions (site ``steps``), as a cron would."""
    folder = tmp_path_factory.mktemp("incremental")
    home, steps = folder / "home", folder / "steps"
    rng = random.Random(8)
    published = []
    with synth(home, seed=9) as writer:
        while writer.revisions < 240:
            writer.advance(rng.randint(1, 25))
            build(home, steps)
            published.append(writer.revisions)
    return home, steps, published


def test_building_incrementally_renders_the_same_tree_as_building_in_one_go(
    incremental: tuple[Path, Path, list[int]], tmp_path: Path
) -> None:
    """Every file is identical, except ``invalidations/``: one record per publish that
    invalidated something."""
    home, steps, published = incremental
    one_go = tmp_path / "site"
    build(home, one_go)
    stepped, whole = tree_files(steps), tree_files(one_go)
    log_stepped = {k: v for k, v in stepped.items() if k.startswith("invalidations/")}
    log_whole = {k: v for k, v in whole.items() if k.startswith("invalidations/")}
    rest_stepped = {k: v for k, v in stepped.items() if k not in log_stepped}
    rest_whole = {k: v for k, v in whole.items() if k not in log_whole}
    assert sorted(rest_stepped) == sorted(rest_whole)
    assert [name for name in rest_whole if rest_stepped[name] != rest_whole[name]] == []

    # The only difference: each publish that invalidated Cache-Tags records them.
    assert set(log_stepped) <= {f"invalidations/{n}.json" for n in published}
    assert all(orjson.loads(data)["cache_tags"] for data in log_stepped.values())
    assert sorted(log_whole) == [f"invalidations/{published[-1]}.json"]
    tags_stepped = set()
    for data in log_stepped.values():
        tags_stepped |= set(orjson.loads(data)["cache_tags"])
    tags_whole = orjson.loads(log_whole[f"invalidations/{published[-1]}.json"])["cache_tags"]
    assert tags_whole
    assert sorted(tags_stepped) == tags_whole


def test_an_incremental_build_renders_only_the_new_revisions(tmp_path: Path) -> None:
    home, site = tmp_path / "home", tmp_path / "site"
    with synth(home, seed=10) as writer:
        writer.advance(30)
        assert build(home, site) == tuple(range(1, 31))
        assert build(home, site) == ()
        writer.advance(3)
        assert build(home, site) == (31, 32, 33)
    assert TreeReader(site).published_revision() == 33
