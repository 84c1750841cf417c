"""``fxev registry verify`` reports every bad evidence blob and the first break of the chain.

The registry is built by real captures (against a real local HTTP server) into a template,
copied for each test, then damaged the way a disk, an operator or an attacker could: bytes of a
blob, a blob removed, one column of one row in history, a row removed or added, a revision's
``ts_commit``.

Revisions of the template:
    1  nueva       body FIRST       (blob A)
    2  identica    body FIRST       (blob A again)
    3  correccion  body CORRECTED   (blob B)
    4  fallo       503 with OUTAGE  (blob C)
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from builder import cli
from builder.registry.chain import revision_hash
from builder.registry.records import DATA_TABLES
from tests.builder.localserver import LocalServer

NOW = "2026-09-20T13:05:00-05:00"
FIRST = b"20/09/2026|3.354|3.362|\r\n"
CORRECTED = b"20/09/2026|3.356|3.364|\r\n"
OUTAGE = b"<html><body>Service Unavailable</body></html>"
SHA_A = hashlib.sha256(FIRST).hexdigest()
SHA_B = hashlib.sha256(CORRECTED).hexdigest()
SHA_C = hashlib.sha256(OUTAGE).hexdigest()
HEAD = 4
FXEV = Path(sys.executable).with_name("fxev")
TIMEOUT = 60
UNUSED_URL = "http://127.0.0.1:9/tipoCambio.txt"


# -- helpers ------------------------------------------------------------------------------


def set_env(monkeypatch: pytest.MonkeyPatch, home: Path, url: str = UNUSED_URL) -> None:
    for name in [k for k in os.environ if k.startswith("FXEV_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("FXEV_HOME", str(home))
    monkeypatch.setenv("FXEV_TAXAUTH_URL", url)
    monkeypatch.setenv("FXEV_NOW", NOW)


def blob_path(home: Path, sha256: str) -> Path:
    return home / "evidence" / "sha256" / sha256[:2] / sha256


@contextlib.contextmanager
def raw_registry(home: Path) -> Iterator[sqlite3.Connection]:
    """Our own connection, to change history behind the registry's back (committed on exit)."""
    with contextlib.closing(sqlite3.connect(home / "registry.sqlite")) as conn:
        conn.row_factory = sqlite3.Row
        with conn:
            yield conn


def flip_one_byte(path: Path, offset: int = 0) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def verify(capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], dict[str, Any]]:
    """Run ``fxev registry verify`` in process: exit code, plain lines, final JSON."""
    capsys.readouterr()
    code = cli.main(["registry", "verify"])
    lines = capsys.readouterr().out.splitlines()
    return code, lines[:-1], json.loads(lines[-1])


def chain_findings(report: dict[str, Any]) -> list[str]:
    return [f for f in report["findings"] if f.startswith("chain break")]


def blob_findings(report: dict[str, Any]) -> list[str]:
    return [f for f in report["findings"] if not f.startswith("chain break")]


# -- fixtures -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four revisions made by four real captures, built once and copied per test."""
    home = tmp_path_factory.mktemp("verify_template") / "home"
    steps = [
        (FIRST, 200, "nueva"),
        (FIRST, 200, "identica"),
        (CORRECTED, 200, "correccion"),
        (OUTAGE, 503, "fallo"),
    ]
    with LocalServer() as server, pytest.MonkeyPatch.context() as monkeypatch:
        set_env(monkeypatch, home, server.url)
        for number, (body, status, outcome) in enumerate(steps, start=1):
            server.set(body=body, status=status)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                assert cli.main(["capture"]) == 0
            result = json.loads(out.getvalue().splitlines()[-1])
            assert (result["revision"], result["outcome"]) == (number, outcome)
    for sha256 in (SHA_A, SHA_B, SHA_C):
        assert blob_path(home, sha256).is_file()
    return home


@pytest.fixture
def home(template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "home"
    shutil.copytree(template, target)
    set_env(monkeypatch, target)
    return target


# -- (a) intact ---------------------------------------------------------------------------


def test_intact_registry_verifies_with_a_plain_line_per_check_then_ok_json(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, report = verify(capsys)

    assert code == 0
    assert lines == ["evidence blobs: ok", f"revision chain (1..{HEAD}): ok"]
    assert report == {"ok": True, "findings": []}


def test_intact_registry_verifies_through_the_real_fxev_command(home: Path) -> None:
    proc = subprocess.run(
        [str(FXEV), "registry", "verify"],
        env={**os.environ},
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )

    assert proc.returncode == 0, proc.stderr.decode()
    lines = proc.stdout.decode().splitlines()
    assert lines[:-1] == ["evidence blobs: ok", f"revision chain (1..{HEAD}): ok"]
    assert json.loads(lines[-1]) == {"ok": True, "findings": []}
    assert proc.stderr == b""


def test_tampered_registry_fails_through_the_real_fxev_command(home: Path) -> None:
    flip_one_byte(blob_path(home, SHA_B))
    with raw_registry(home) as conn:
        conn.execute("UPDATE observations SET compra = '3.999' WHERE revision_creada = 1")

    proc = subprocess.run(
        [str(FXEV), "registry", "verify"],
        env={**os.environ},
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )

    assert proc.returncode == 1
    lines = proc.stdout.decode().splitlines()
    report = json.loads(lines[-1])
    assert report["ok"] is False
    assert len(report["findings"]) == 2
    assert SHA_B in blob_findings(report)[0]
    assert chain_findings(report)[0].startswith("chain break: revision 1:")
    assert "evidence blobs: FAIL" in lines
    assert f"revision chain (1..{HEAD}): FAIL" in lines


# -- (b) (c) (d) blobs --------------------------------------------------------------------


@pytest.mark.parametrize("sha256", [SHA_A, SHA_B, SHA_C], ids=["blob_A", "blob_B", "blob_C"])
def test_one_changed_byte_in_a_blob_is_reported_by_its_sha256(
    home: Path, capsys: pytest.CaptureFixture[str], sha256: str
) -> None:
    flip_one_byte(blob_path(home, sha256), offset=5)

    code, lines, report = verify(capsys)

    assert code == 1
    assert report["ok"] is False
    assert len(report["findings"]) == 1
    finding = report["findings"][0]
    assert f"sha256:{sha256}" in finding
    assert "missing" not in finding
    assert chain_findings(report) == []
    assert lines[0] == "evidence blobs: FAIL"
    assert any(sha256 in line for line in lines[1:-1])
    assert lines[-1] == f"revision chain (1..{HEAD}): ok"


def test_two_bad_blobs_are_both_reported(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flip_one_byte(blob_path(home, SHA_A))
    flip_one_byte(blob_path(home, SHA_B), offset=3)

    code, _, report = verify(capsys)

    assert code == 1
    assert len(report["findings"]) == 2
    reported = " ".join(report["findings"])
    assert SHA_A in reported
    assert SHA_B in reported
    assert SHA_C not in reported
    assert chain_findings(report) == []


def test_a_deleted_blob_is_reported_as_missing(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blob_path(home, SHA_C).unlink()

    code, _, report = verify(capsys)

    assert code == 1
    assert len(report["findings"]) == 1
    assert SHA_C in report["findings"][0]
    assert "missing" in report["findings"][0]


def test_a_truncated_blob_is_reported(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blob_path(home, SHA_A).write_bytes(FIRST[:-2])

    code, _, report = verify(capsys)

    assert code == 1
    assert len(report["findings"]) == 1
    assert SHA_A in report["findings"][0]


# -- (e) one column of one row in history -------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "broken"),
    [
        ("UPDATE observations SET compra = '3.355' WHERE revision_creada = 1", 1),
        ("UPDATE observations SET fragmento = fragmento || ' ' WHERE revision_creada = 1", 1),
        (
            "UPDATE events SET detalle = replace(detalle, '3.354', '3.355')"
            " WHERE revision = 1 AND tipo = 'capturada'",
            1,
        ),
        ("UPDATE evidence SET headers = '[]' WHERE revision = 1", 1),
        ("UPDATE evidence SET http_status = 200 WHERE revision = 4", 4),
        ("UPDATE events SET tipo = 'capturada' WHERE revision = 2", 2),
        ("UPDATE executions SET outcome = 'nueva' WHERE revision = 3", 3),
        ("UPDATE revisions SET summary = '{}' WHERE revision = 3", 3),
    ],
    ids=[
        "observation_compra_r1",
        "observation_fragmento_r1",
        "event_detalle_r1",
        "evidence_headers_r1",
        "evidence_status_r4",
        "event_tipo_r2",
        "execution_outcome_r3",
        "revision_summary_r3",
    ],
)
def test_one_changed_column_in_history_breaks_the_chain_at_that_revision(
    home: Path, capsys: pytest.CaptureFixture[str], statement: str, broken: int
) -> None:
    with raw_registry(home) as conn:
        assert conn.execute(statement).rowcount == 1

    code, lines, report = verify(capsys)

    assert code == 1
    assert report["ok"] is False
    assert blob_findings(report) == []
    assert len(report["findings"]) == 1
    assert report["findings"][0].startswith(f"chain break: revision {broken}:")
    assert lines[0] == "evidence blobs: ok"
    assert f"revision chain (1..{HEAD}): FAIL" in lines


def test_a_change_in_revision_1_is_reported_at_1_though_later_revisions_are_intact(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Revisions 2..4 are untouched: only the first break is reported, and it names revision 1,
    # not the head nor the revision of the later correction that supersedes that observation.
    with raw_registry(home) as conn:
        conn.execute("UPDATE observations SET venta = '3.363' WHERE revision_creada = 1")

    code, _, report = verify(capsys)

    assert code == 1
    assert len(report["findings"]) == 1
    assert report["findings"][0].startswith("chain break: revision 1:")
    assert "revision 2" not in report["findings"][0]


# -- (f) (g) rows removed or added --------------------------------------------------------


def test_a_deleted_event_row_breaks_the_chain_at_its_revision(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with raw_registry(home) as conn:
        deleted = conn.execute("DELETE FROM events WHERE revision = 2").rowcount
    assert deleted == 1

    code, _, report = verify(capsys)

    assert code == 1
    assert len(report["findings"]) == 1
    assert report["findings"][0].startswith("chain break: revision 2:")


def test_a_row_added_to_an_existing_revision_breaks_the_chain_there(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with raw_registry(home) as conn:
        conn.execute(
            "INSERT INTO events SELECT 'forged-event', revision, seq + 10, tipo, ts, ejecucion_id,"
            " evidencia_id, observacion_id, fuente, moneda, serie, fecha_serie, detalle"
            " FROM events WHERE revision = 3 AND tipo = 'capturada'"
        )

    code, _, report = verify(capsys)

    assert code == 1
    assert len(report["findings"]) == 1
    assert report["findings"][0].startswith("chain break: revision 3:")


@pytest.mark.parametrize("revision", [0, HEAD + 1, 99], ids=["below_1", "head_plus_1", "far"])
def test_a_row_whose_revision_has_no_revision_record_is_reported(
    home: Path, capsys: pytest.CaptureFixture[str], revision: int
) -> None:
    with raw_registry(home) as conn:
        conn.execute(
            "INSERT INTO events SELECT 'orphan-event', ?, 1, tipo, ts, ejecucion_id,"
            " evidencia_id, observacion_id, fuente, moneda, serie, fecha_serie, detalle"
            " FROM events WHERE revision = 1",
            (revision,),
        )

    code, _, report = verify(capsys)

    assert code == 1
    assert len(report["findings"]) == 1
    finding = report["findings"][0]
    assert finding.startswith("chain break:")
    assert "events" in finding
    assert f"revision {revision}" in finding


def test_a_deleted_revision_record_is_reported_as_missing(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with raw_registry(home) as conn:
        conn.execute("DELETE FROM revisions WHERE revision = 3")

    code, _, report = verify(capsys)

    assert code == 1
    assert len(report["findings"]) == 1
    assert report["findings"][0].startswith("chain break:")
    assert "revision 3" in report["findings"][0]


def test_a_deleted_head_revision_record_leaves_its_rows_reported(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with raw_registry(home) as conn:
        conn.execute("DELETE FROM revisions WHERE revision = ?", (HEAD,))

    code, _, report = verify(capsys)

    assert code == 1
    assert len(report["findings"]) == 1
    assert report["findings"][0].startswith("chain break:")
    assert f"revision {HEAD}" in report["findings"][0]


# -- (h) revision records -----------------------------------------------------------------


def test_a_changed_ts_commit_breaks_the_chain_at_that_revision(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with raw_registry(home) as conn:
        conn.execute(
            "UPDATE revisions SET ts_commit = '2026-09-20T18:05:00.000001Z' WHERE revision = 2"
        )

    code, _, report = verify(capsys)

    assert code == 1
    assert len(report["findings"]) == 1
    assert report["findings"][0].startswith("chain break: revision 2:")


def test_a_changed_stored_hash_breaks_the_chain_at_that_revision(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with raw_registry(home) as conn:
        conn.execute("UPDATE revisions SET hash = ? WHERE revision = 2", ("sha256:" + "0" * 64,))

    code, _, report = verify(capsys)

    assert code == 1
    assert len(report["findings"]) == 1
    assert report["findings"][0].startswith("chain break: revision 2:")


def test_history_rewritten_with_a_recomputed_hash_breaks_at_the_next_prev_hash(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A forger who changes revision 2's row and recomputes revision 2's hash still leaves
    # revision 3 pointing to the old hash.
    with raw_registry(home) as conn:
        conn.execute("UPDATE events SET detalle = '{}' WHERE revision = 2")
        row = conn.execute("SELECT * FROM revisions WHERE revision = 2").fetchone()
        rows = {
            table.name: [
                dict(r)
                for r in conn.execute(
                    f"SELECT * FROM {table.name} WHERE {table.revision_column} = 2 ORDER BY id"
                )
            ]
            for table in DATA_TABLES
        }
        forged = revision_hash(
            row["prev_hash"], 2, row["ts_commit"], row["kind"], row["summary"], rows
        )
        conn.execute("UPDATE revisions SET hash = ? WHERE revision = 2", (forged,))

    code, _, report = verify(capsys)

    assert code == 1
    assert len(report["findings"]) == 1
    assert report["findings"][0].startswith("chain break: revision 3:")
    assert "prev_hash" in report["findings"][0]


# -- (i) blob and chain faults together ---------------------------------------------------


def test_blob_faults_and_a_chain_fault_are_all_reported_together(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flip_one_byte(blob_path(home, SHA_A))
    blob_path(home, SHA_C).unlink()
    with raw_registry(home) as conn:
        conn.execute("UPDATE observations SET compra = '3.357' WHERE revision_creada = 3")

    code, lines, report = verify(capsys)

    assert code == 1
    assert report["ok"] is False
    blobs = blob_findings(report)
    assert len(blobs) == 2
    assert any(SHA_A in f and "missing" not in f for f in blobs)
    assert any(SHA_C in f and "missing" in f for f in blobs)
    chain = chain_findings(report)
    assert len(chain) == 1
    assert chain[0].startswith("chain break: revision 3:")
    assert lines[0] == "evidence blobs: FAIL"
    assert f"revision chain (1..{HEAD}): FAIL" in lines


def test_verify_changes_nothing_it_inspects(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flip_one_byte(blob_path(home, SHA_B))
    before = blob_path(home, SHA_B).read_bytes()

    first = verify(capsys)
    second = verify(capsys)

    assert first == second
    assert blob_path(home, SHA_B).read_bytes() == before


def test_a_recapture_of_the_same_bytes_repairs_a_damaged_blob(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bytes a capture receives are never lost to a damaged stored copy of them: the blob of
    their hash is replaced, and `registry verify` is clean again. (Formerly the capture recorded
    its evidence against the damaged file and dropped the good bytes it had just received.)"""
    flip_one_byte(blob_path(home, SHA_A))
    with LocalServer(body=FIRST) as server:
        set_env(monkeypatch, home, server.url)
        capsys.readouterr()
        assert cli.main(["capture"]) == 0
        result = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert result["revision"] == HEAD + 1
    assert blob_path(home, SHA_A).read_bytes() == FIRST
    code, lines, report = verify(capsys)
    assert code == 0, report
    assert lines == ["evidence blobs: ok", f"revision chain (1..{HEAD + 1}): ok"]
