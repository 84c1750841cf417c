"""``fxev export warc``: every evidence record round-trips through WARC 1.1 byte for byte.

The registry holds every kind of evidence: a gzip-encoded capture (stored decompressed), an
identical re-capture, a correction, a 503 with a body, an unreachable source (no bytes, no
HTTP exchange) and a CSV import. The export is read back with warcio's ``ArchiveIterator``
with digest checking on, and each record is compared with its registry row and blob.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import os
import stat
from pathlib import Path

import orjson
import pytest
import requests
from warcio.archiveiterator import ArchiveIterator

from builder import cli
from builder.capture.importer import import_csv
from builder.capture.run import Stores
from builder.publish.warc import archived_headers, export_warc, plan_record, target_uri
from tests.builder.conftest import NOW, PCT, TAXAUTH_URL
from tests.builder.test_capture_taxauth import Capture
from tests.support.modes import plain_file_mode

FIRST = b"20/09/2026|3.354|3.362|\r\n"
CORRECTED = b"20/09/2026|3.356|3.364|\r\n"
OUTAGE = b"<html><body>Service Unavailable</body></html>"
CSV = b"fecha_serie,compra,venta\n2026-09-17,3.35,3.3625\n2026-09-18,3.354,3.362\n"


@pytest.fixture
def registry_of_every_kind(capture: Capture, stores: Stores, tmp_path: Path) -> Stores:
    wire = gzip.compress(FIRST)
    capture(
        body=wire,
        headers=[
            ("Content-Type", "text/plain"),
            ("Content-Encoding", "gzip"),
            ("Content-Length", str(len(wire))),
        ],
    )
    capture(body=FIRST)
    capture(body=CORRECTED)
    capture(body=OUTAGE, status=503, headers=[("Content-Type", "text/html")])
    capture(body=requests.exceptions.ConnectionError("connection refused"))
    csv_path = tmp_path / "history.csv"
    csv_path.write_bytes(CSV)
    import_csv(stores, csv_path, "ana", "copied from a printout", NOW, PCT)
    return stores


def read_back(path: Path) -> list:
    """(rec_type, rec_headers, http_headers, content bytes) of every record, digests checked."""
    records = []
    with path.open("rb") as handle:
        for record in ArchiveIterator(handle, check_digests="raise"):
            content = record.content_stream().read()
            records.append((record.rec_type, record.rec_headers, record.http_headers, content))
    return records


@pytest.mark.parametrize("name", ["evidence.warc", "evidence.warc.gz"])
def test_every_evidence_record_round_trips_with_its_bytes_and_sha256(
    registry_of_every_kind: Stores, tmp_path: Path, name: str
) -> None:
    stores = registry_of_every_kind
    rows = stores.registry.all_evidence()
    assert len(rows) == 6
    path = tmp_path / name
    summary = export_warc(stores.registry, stores.blobs, path)
    assert (summary.records, summary.responses, summary.resources) == (6, 4, 2)
    assert summary.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert path.stat().st_mode & 0o777 == plain_file_mode()  # as any file the builder writes
    if name.endswith(".gz"):
        assert path.read_bytes()[:2] == b"\x1f\x8b"

    records = read_back(path)
    assert records[0][0] == "warcinfo"
    assert records[0][1].protocol == "WARC/1.1"
    by_id = {r[1].get_header("X-Fxev-Evidencia-Id"): r for r in records[1:]}
    assert set(by_id) == {row.id for row in rows}
    for row in rows:
        rec_type, rec_headers, http_headers, content = by_id[row.id]
        stored = stores.blobs.read(row.sha256)
        assert content == stored
        assert hashlib.sha256(content).hexdigest() == row.sha256
        assert rec_headers.get_header("X-Fxev-Sha256") == f"sha256:{row.sha256}"
        assert rec_headers.get_header("WARC-Block-Digest").startswith("sha1:")
        assert rec_headers.get_header("WARC-Record-ID") == f"<urn:uuid:{row.id}>"
        assert rec_headers.get_header("WARC-Date") == row.capturado_en
        assert rec_headers.get_header("X-Fxev-Identidad-Consulta") == row.identidad_consulta
        if row.http_status is None:
            assert rec_type == "resource"
            assert rec_headers.get_header("Content-Type") == row.content_type
        else:
            assert rec_type == "response"
            assert rec_headers.get_header("WARC-Target-URI") == TAXAUTH_URL
            assert http_headers.get_statuscode() == str(row.http_status)
            assert http_headers.get_header("Content-Length") == str(len(stored))
            assert http_headers.get_header("Content-Encoding") is None

    gzipped = next(r for r in rows if any(k == "Content-Encoding" for k, _ in r.headers))
    http_headers = by_id[gzipped.id][2]
    assert http_headers.get_header("X-Archive-Orig-Content-Encoding") == "gzip"
    assert http_headers.get_header("X-Archive-Orig-Content-Length") == str(
        len(gzip.compress(FIRST))
    )
    unreachable = next(r for r in rows if r.http_status is None and r.size == 0)
    assert by_id[unreachable.id][0] == "resource"
    imported = next(r for r in rows if r.identidad_consulta.startswith("IMPORT"))
    assert by_id[imported.id][1].get_header("WARC-Target-URI") == "urn:fxev:import:history.csv"
    assert by_id[imported.id][3] == CSV


def test_two_exports_of_one_registry_are_byte_identical(
    registry_of_every_kind: Stores, tmp_path: Path
) -> None:
    stores = registry_of_every_kind
    first = export_warc(stores.registry, stores.blobs, tmp_path / "a" / "out.warc")
    second = export_warc(stores.registry, stores.blobs, tmp_path / "b" / "out.warc")
    assert first.sha256 == second.sha256


def test_an_altered_blob_stops_the_export_and_leaves_no_file(
    registry_of_every_kind: Stores, tmp_path: Path
) -> None:
    stores = registry_of_every_kind
    blob = stores.blobs.path(hashlib.sha256(CORRECTED).hexdigest())
    blob.chmod(0o644)
    blob.write_bytes(b"20/09/2026|3.356|3.365|\r\n")
    with pytest.raises(RuntimeError, match="hashing to"):
        export_warc(stores.registry, stores.blobs, tmp_path / "out.warc")
    assert list(tmp_path.glob("*.warc*")) == []
    assert list(tmp_path.glob(".tmp-*")) == []


def test_cli_prints_the_summary_as_its_last_line(
    registry_of_every_kind: Stores,
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("FXEV_HOME", str(home))
    path = tmp_path / "cli.warc.gz"
    assert cli.main(["export", "warc", str(path)]) == 0
    summary = orjson.loads(capsys.readouterr().out.splitlines()[-1])
    assert summary["file"] == str(path)
    assert (summary["records"], summary["response"], summary["resource"]) == (6, 4, 2)
    assert summary["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


def test_cli_refuses_an_unwritable_destination(
    registry_of_every_kind: Stores,
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One line naming the file asked for: a path under a plain file read "File exists", and a
    folder that cannot be written named the temporary file; a missing folder was made."""
    monkeypatch.setenv("FXEV_HOME", str(home))
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    for target, why in (
        (blocker / "out.warc", "is not a folder"),
        (tmp_path / "nowhere" / "out.warc", "is not a folder"),
        (Path("/proc/out.warc"), "cannot write '/proc/out.warc'"),
    ):
        assert cli.main(["export", "warc", str(target)]) == 1
        [line] = capsys.readouterr().err.splitlines()
        assert line.startswith("fxev: export warc: ") and why in line, line
        assert ".tmp" not in line and "File exists" not in line, line
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("kind", ["folder", "fifo", "empty"])
def test_cli_writes_only_a_regular_file(
    registry_of_every_kind: Stores,
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: str,
) -> None:
    """The export replaces its file by a rename: run as root, a device (``/dev/full``) or a pipe
    there would be replaced by a regular file. Refused in one line, and left as it was."""
    monkeypatch.setenv("FXEV_HOME", str(home))
    target = tmp_path / "target"
    if kind == "folder":
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)
    argument = "" if kind == "empty" else str(target)
    assert cli.main(["export", "warc", argument]) != 0
    err = capsys.readouterr().err
    assert err.startswith("fxev: export warc writes a regular file") and err.count("\n") == 1
    if kind == "fifo":
        assert stat.S_ISFIFO(target.lstat().st_mode)
    if kind == "folder":
        assert target.is_dir() and list(target.iterdir()) == []


# -- pure parts ---------------------------------------------------------------------------


def test_target_uri_is_the_url_of_the_query_or_a_urn_for_an_import() -> None:
    assert target_uri("GET https://x.test/a.txt") == "https://x.test/a.txt"
    assert (
        target_uri("POST https://x.test/l?anio=2025&mes=10") == "https://x.test/l?anio=2025&mes=10"
    )
    assert target_uri("IMPORT año 2026.csv") == "urn:fxev:import:a%C3%B1o%202026.csv"


def test_wire_encodings_are_renamed_and_content_length_is_the_stored_bodys() -> None:
    headers = [["Transfer-Encoding", "chunked"], ["Content-Type", "text/plain"]]
    assert archived_headers(headers, 25) == (
        ("X-Archive-Orig-Transfer-Encoding", "chunked"),
        ("Content-Type", "text/plain"),
        ("Content-Length", "25"),
    )
    assert archived_headers([["content-length", "25"]], 25) == (("content-length", "25"),)


def test_a_truncated_body_is_marked_warc_truncated(registry_of_every_kind: Stores) -> None:
    row = registry_of_every_kind.registry.all_evidence()[0]
    planned = plan_record(dataclasses.replace(row, truncated=True))
    assert ("WARC-Truncated", "length") in planned.warc_headers
    assert ("WARC-Truncated", "length") not in plan_record(row).warc_headers


def test_response_record_reads_back_as_http(registry_of_every_kind: Stores) -> None:
    """The stored headers travel in wire order, under the stored status line."""
    row = next(r for r in registry_of_every_kind.registry.all_evidence() if r.http_status == 503)
    planned = plan_record(row)
    assert planned.status_line == "503 Service Unavailable"
    assert planned.http_headers[0] == ("Content-Type", "text/html")
