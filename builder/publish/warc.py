"""``fxev export warc FILE``: every evidence record of the registry as WARC 1.1 (warcio).

Where there was an HTTP exchange the record is a ``response``: the stored status line and
headers in wire order, then the stored body. The body is stored decompressed (fetch.py), so the
headers that described the wire form are renamed ``X-Archive-Orig-*`` (``Transfer-Encoding``,
``Content-Encoding``, and ``Content-Length`` when it differs from the stored body's), as
archiving crawlers do; a reader's ``content_stream()`` then gives exactly the stored bytes.
Evidence with no HTTP exchange (imports, saved answers, failures where nothing arrived) is a
``resource`` record holding the bytes with their content type.

Each record carries warcio's digests (``WARC-Block-Digest`` and ``WARC-Payload-Digest``,
``sha1:`` base32, the format's default) and, alongside, ``X-Fxev-Sha256: sha256:<hex>``, the
hash the registry and the API (``X-Sha256``) state for the bytes. ``WARC-Record-ID`` is the
evidence id as a URN, ``WARC-Date`` the capture instant, ``WARC-Target-URI`` the URL the bytes
were fetched from (``urn:fxev:import:<file>`` for an import). A ``warcinfo`` record comes first.

The pure part (:func:`plan_record`) turns one evidence row into what the record says; the edge
(:func:`export_warc`) reads the registry and the blobs and writes the file durably.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from builder.core.errors import IntegrityError, StorageError
from builder.disk.blobs import BlobStore
from builder.disk.durable import replacing
from builder.registry.records import Evidence, Revision
from builder.registry.store import Registry

WARC_VERSION = "1.1"
SOFTWARE = "fxev/0.1 (warcio)"
# Headers describing the wire form of a body we store decoded: kept, renamed.
WIRE_ONLY_HEADERS = ("transfer-encoding", "content-encoding")
ORIGINAL_PREFIX = "X-Archive-Orig-"
WARCINFO_NAMESPACE = uuid.UUID("9b1c6f3e-2d4a-4c8e-8f1a-5e7d3b2c1a09")


@dataclasses.dataclass(frozen=True, slots=True)
class PlannedRecord:
    """What one WARC record says about one evidence row (its bytes travel separately)."""

    record_type: str  # response | resource
    target_uri: str
    warc_headers: tuple[tuple[str, str], ...]
    status_line: str | None  # "200 OK" for a response
    http_headers: tuple[tuple[str, str], ...]
    content_type: str


@dataclasses.dataclass(frozen=True, slots=True)
class ExportSummary:
    file: str
    records: int
    responses: int
    resources: int
    payload_bytes: int
    revision: int
    sha256: str

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "records": self.records,
            "response": self.responses,
            "resource": self.resources,
            "payload_bytes": self.payload_bytes,
            "revision": self.revision,
            "sha256": self.sha256,
        }


def target_uri(identidad_consulta: str) -> str:
    """The URI a record is about: the URL of ``<METHOD> <url>``, else a URN naming the import.

    >>> target_uri("GET http://127.0.0.1:8/a/txt/tipoCambio.txt")
    'http://127.0.0.1:8/a/txt/tipoCambio.txt'
    >>> target_uri("IMPORT sunat 2026.csv")
    'urn:fxev:import:sunat%202026.csv'
    """
    method, _, rest = identidad_consulta.partition(" ")
    if method == "IMPORT":
        return "urn:fxev:import:" + quote(rest, safe="")
    if rest.startswith(("http://", "https://")):
        return rest
    return "urn:fxev:query:" + quote(identidad_consulta, safe="")


def archived_headers(headers: list[list[str]], body_size: int) -> tuple[tuple[str, str], ...]:
    """Stored response headers for the record: wire-only ones renamed, ``Content-Length`` true.

    >>> archived_headers([["Content-Encoding", "gzip"], ["Content-Length", "30"]], 25)
    (('X-Archive-Orig-Content-Encoding', 'gzip'), ('X-Archive-Orig-Content-Length', '30'), \
('Content-Length', '25'))
    """
    out: list[tuple[str, str]] = []
    for name, value in headers:
        lowered = name.lower()
        if lowered in WIRE_ONLY_HEADERS or (
            lowered == "content-length" and value.strip() != str(body_size)
        ):
            out.append((ORIGINAL_PREFIX + name, value))
        else:
            out.append((name, value))
    if not any(name.lower() == "content-length" for name, _ in out):
        out.append(("Content-Length", str(body_size)))
    return tuple(out)


def plan_record(evidence: Evidence) -> PlannedRecord:
    """The WARC record of one evidence row: a response where there was an HTTP exchange."""
    warc_headers = [
        ("WARC-Record-ID", f"<urn:uuid:{evidence.id}>"),
        ("WARC-Date", evidence.capturado_en),
        ("X-Fxev-Sha256", f"sha256:{evidence.sha256}"),
        ("X-Fxev-Evidencia-Id", evidence.id),
        ("X-Fxev-Identidad-Consulta", evidence.identidad_consulta),
        ("X-Fxev-Revision", str(evidence.revision)),
        ("X-Fxev-Ejecucion-Id", evidence.ejecucion_id),
    ]
    if evidence.truncated:
        warc_headers.append(("WARC-Truncated", "length"))
    uri = target_uri(evidence.identidad_consulta)
    if evidence.http_status is None:
        return PlannedRecord("resource", uri, tuple(warc_headers), None, (), evidence.content_type)
    status_line = f"{evidence.http_status} {evidence.http_reason or ''}".rstrip()
    return PlannedRecord(
        "response",
        uri,
        tuple(warc_headers),
        status_line,
        archived_headers(evidence.headers, evidence.size),
        "application/http; msgtype=response",
    )


def warcinfo_fields(revision: int, records: int) -> bytes:
    fields = {
        "software": SOFTWARE,
        "format": "WARC File Format 1.1",
        "description": "fxev evidence records: the exact bytes each value rests on",
        "fxev-revision": str(revision),
        "fxev-records": str(records),
    }
    return "".join(f"{name}: {value}\r\n" for name, value in fields.items()).encode()


def warcinfo_record(writer: WARCWriter, filename: str, head: Revision | None, records: int) -> Any:
    """The first record, a function of the registry's head: two exports give the same bytes."""
    revision = head.revision if head else 0
    name = f"{head.hash if head else 'empty'}:{filename}"
    body = warcinfo_fields(revision, records)
    headers = {
        "WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(WARCINFO_NAMESPACE, name)}>",
        "WARC-Date": head.ts_commit if head else "1970-01-01T00:00:00.000000Z",
        "WARC-Filename": filename,
    }
    return writer.create_warc_record(
        "",
        "warcinfo",
        payload=io.BytesIO(body),
        length=len(body),
        warc_content_type="application/warc-fields",
        warc_headers_dict=headers,
    )


def write_record(writer: WARCWriter, planned: PlannedRecord, body: bytes) -> None:
    http_headers = None
    if planned.status_line is not None:
        http_headers = StatusAndHeaders(
            planned.status_line, list(planned.http_headers), protocol="HTTP/1.1"
        )
    record = writer.create_warc_record(
        planned.target_uri,
        planned.record_type,
        payload=io.BytesIO(body),
        length=len(body),
        warc_content_type=planned.content_type,
        warc_headers_dict=dict(planned.warc_headers),
        http_headers=http_headers,
    )
    writer.write_record(record)


def export_warc(registry: Registry, blobs: BlobStore, path: Path) -> ExportSummary:
    """Write every evidence record to ``path`` (gzipped per record when it ends in ``.gz``).

    The file appears whole or not at all: it is written under a temporary name, fsynced and
    renamed. A blob that is missing or does not hash to its row's sha256 stops the export
    (``ExportError``); a file that cannot be written, ``ExportWriteError``.
    """
    try:
        return _export_warc(registry, blobs, path)
    except OSError as error:
        beside = error.filename is not None and Path(error.filename).name.startswith(".tmp-")
        if error.filename is None or beside:  # named by the file asked for, not its temporary
            why = error.strerror or error
            raise ExportWriteError(f"cannot write {str(path)!r}: {why}") from error
        raise ExportWriteError(str(error)) from error  # another file (a blob): named as it is


def _export_warc(registry: Registry, blobs: BlobStore, path: Path) -> ExportSummary:
    head = registry.head()
    revision = head.revision if head else 0
    rows = registry.all_evidence()
    counts = {"response": 0, "resource": 0}
    payload_bytes = 0
    with replacing(path) as handle:
        writer = WARCWriter(handle, gzip=path.name.endswith(".gz"), warc_version=WARC_VERSION)
        writer.write_record(warcinfo_record(writer, path.name, head, len(rows)))
        for evidence in rows:
            problem = blobs.problem(evidence.sha256)
            if problem is not None:
                raise ExportError(f"evidence {evidence.id}: {problem}")
            body = blobs.read(evidence.sha256)
            planned = plan_record(evidence)
            write_record(writer, planned, body)
            counts[planned.record_type] += 1
            payload_bytes += len(body)
    with path.open("rb") as written:
        sha256 = hashlib.file_digest(written, "sha256").hexdigest()
    return ExportSummary(
        file=str(path),
        records=len(rows),
        responses=counts["response"],
        resources=counts["resource"],
        payload_bytes=payload_bytes,
        revision=revision,
        sha256=sha256,
    )


class ExportError(IntegrityError, RuntimeError):
    """The export cannot be written faithfully (a blob is missing or altered)."""

    command = "export warc"


class ExportWriteError(StorageError):
    """The export file cannot be written (a folder in its place, no permission, a full disk)."""

    command = "export warc"
