"""``fxev verify --vkey``: an observation checked against the transparency log.

With the log's verifier key (obtained out of band, never from the service it checks):

1. the checkpoint (``/v1/log/checkpoint``) must carry a valid signature of that key, under its
   name as origin;
2. with ``--state FILE``, the checkpoint must extend the one saved there by an earlier run (a
   consistency proof built from the tiles): a log that does not is "history rewritten"; a log
   smaller than the saved checkpoint (a gateway whose mirror lags) is a notice, and the saved
   checkpoint stays;
3. the leaf of every revision the observation's record involves (its creation, each event, each
   cotejo, the evidence's recording) is read from its entry bundle, must be the one the level-0
   tile holds, and must be included in the checkpoint's tree (an inclusion proof built from the
   tiles, checked against the signed root);
4. each leaf must commit to what was served: the observation record, the event, the cotejo, the
   evidence bytes' SHA-256 (``builder.tlog.leaf.ROW_RULES``).

Tiles come from the untrusted service, but every hash taken from them is checked against the
signed root, so a changed byte anywhere on the path fails a check that names it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from builder.core.errors import STORAGE_ERRNOS, PathError
from builder.tlog import leaf as leaves
from builder.tlog import merkle, note, tiles
from verifier.checks import Body, Check
from verifier.client import ApiClient

RECORDING = ("capturada", "importada")
STATE_MAX = 65_536  # a signed checkpoint is a few hundred bytes


@dataclasses.dataclass(frozen=True, slots=True)
class LogOptions:
    key: note.VerifierKey
    state: Path | None = None


class LogFailure(Exception):
    """One log check failed: its message, reported as a ``fail``."""


class _Found:
    def __init__(self, observacion_id: str) -> None:
        self.observacion_id = observacion_id
        self.items: list[Check] = []

    def ok(self, message: str) -> None:
        self.items.append(Check("ok", "log", message, self.observacion_id))

    def fail(self, message: str) -> None:
        self.items.append(Check("fail", "log", message, self.observacion_id))

    def notice(self, message: str) -> None:
        self.items.append(Check("notice", "log", message, self.observacion_id))


@contextlib.contextmanager
def _failing(found: _Found) -> Iterator[None]:
    try:
        yield
    except (LogFailure, note.NoteError, merkle.ProofError, leaves.LeafError) as error:
        found.fail(str(error))


def expected_rows(detail: Body, evidence_sha256: str) -> dict[int, list[tuple[str, str, str]]]:
    """revision -> [(table, digest, what)] the leaves must hold for this observation."""
    observation = detail["observacion"]
    wanted: dict[int, list[tuple[str, str, str]]] = {}

    def want(revision: Any, table: str, record: Any, what: str) -> None:
        digest = record if isinstance(record, str) else leaves.row_hash(record)
        wanted.setdefault(int(revision), []).append((table, digest, what))

    want(observation["revision_creada"], "observations", observation, "the observation")
    for event in detail["eventos"]:
        want(event["revision"], "events", event, f"event {event['tipo']} {event['id']}")
        if event["tipo"] in RECORDING and event["evidencia_id"] == observation["evidencia_id"]:
            want(event["revision"], "evidence", evidence_sha256, "the evidence's SHA-256")
    for cotejo in detail["cotejos"]:
        want(cotejo["revision"], "cotejos", cotejo, f"cotejo {cotejo['id']}")
    return wanted


class LogView:
    """The log as one run sees it: the verified checkpoint, tiles fetched once."""

    def __init__(self, client: ApiClient, key: note.VerifierKey) -> None:
        self.client = client
        self.key = key
        self.checkpoint: note.Checkpoint | None = None
        self.signed = ""

    def fetch(self, path: str) -> bytes:
        data = self.client.log(path)
        if data is None:
            raise LogFailure(f"/v1/log/{path} is missing (404)")
        return data

    def read_tile(self, tile: tiles.Tile) -> bytes:
        return self.fetch(tile.path)

    def open_checkpoint(self) -> note.Checkpoint:
        if self.checkpoint is None:
            signed = self.fetch("checkpoint")
            try:
                self.signed = note.decode(signed)
                text = note.open_note(self.signed, self.key)
            except note.NoteError as error:
                raise LogFailure(f"checkpoint signature: {error}") from None
            checkpoint = note.parse_checkpoint(text)
            if checkpoint.origin != self.key.name:
                raise LogFailure(f"checkpoint origin {checkpoint.origin} is not {self.key.name}")
            self.checkpoint = checkpoint
        return self.checkpoint

    def leaf(self, revision: int) -> bytes:
        """The leaf of ``revision``, proved included in the checkpoint."""
        checkpoint = self.open_checkpoint()
        index, size = revision - 1, checkpoint.size
        if not 0 <= index < size:
            # Unverified, so a failure; but most often a gateway whose mirror lags served the
            # checkpoint while another served the record: say so, as the notice above does.
            raise LogFailure(
                f"revision {revision} is not in the log of {size} revisions served (a log"
                " behind the record: a gateway not caught up yet; run again to check it)"
            )
        bundle = tiles.Tile(-1, index // tiles.WIDTH)
        if (bundle.index + 1) * tiles.WIDTH > size:
            bundle = tiles.Tile(-1, bundle.index, size % tiles.WIDTH)
        try:
            data = tiles.decode_bundle(self.read_tile(bundle))[index % tiles.WIDTH]
        except (ValueError, IndexError):
            raise LogFailure(f"entry bundle {bundle.path} is malformed") from None
        read = tiles.tile_reader(size, self.read_tile)
        hashed = merkle.leaf_hash(data)
        try:
            if read(0, index) != hashed:
                raise LogFailure(f"tile of leaf {index} does not hold the hash of its entry")
            proof = merkle.inclusion_proof(index, size, read)
        except ValueError as error:
            raise LogFailure(f"tiles: {error}") from None
        try:
            merkle.verify_inclusion(index, size, hashed, proof, checkpoint.root)
        except merkle.ProofError:
            raise LogFailure(
                f"inclusion of revision {revision}: the tiles do not lead to the signed root"
            ) from None
        return data

    def consistent_with(self, saved: str) -> tuple[int, int]:
        """(old size, new size) once the checkpoint extends the ``saved`` one, or LogFailure.

        A checkpoint smaller than the saved one is returned as it is (old size > new size), not
        refused: a gateway whose mirror has not caught up yet serves an older checkpoint of the
        same log, and its tiles cannot prove or disprove that it is a prefix of the newer one."""
        new = self.open_checkpoint()
        try:
            old = note.parse_checkpoint(note.open_note(saved, self.key))
        except note.NoteError as error:
            raise LogFailure(f"the saved checkpoint does not verify: {error}") from None
        if old.size > new.size:
            return old.size, new.size
        try:
            proof = (
                merkle.consistency_proof(
                    old.size, new.size, tiles.tile_reader(new.size, self.read_tile)
                )
                if old.size
                else []
            )
            merkle.verify_consistency(old.size, new.size, old.root, new.root, proof)
        except (merkle.ProofError, ValueError):
            raise LogFailure(
                f"history rewritten: the log of {new.size} revisions does not extend the"
                f" checkpoint of {old.size} seen before"
            ) from None
        return old.size, new.size


def log_checks(
    client: ApiClient, detail: Body, evidence_sha256: str, options: LogOptions
) -> list[Check]:
    found = _Found(detail["observacion"]["id"])
    view = LogView(client, options.key)
    with _failing(found):
        checkpoint = view.open_checkpoint()
        found.ok(f"checkpoint of {checkpoint.size} revisions signed by {options.key.name}")
    if view.checkpoint is None:
        return found.items
    keep_saved = False  # the served log is behind the saved checkpoint, which stays
    if options.state is not None and options.state.exists():
        with _failing(found):
            saved = read_state(options.state)
            if saved:  # empty (made by mktemp, say), as missing: nothing seen yet
                old, new = view.consistent_with(saved)
                if old > new:
                    keep_saved = True
                    found.notice(
                        f"log of {new} revisions is behind the checkpoint of {old} seen before"
                        f" (a gateway not caught up yet): consistency not checked, {old} kept"
                    )
                else:
                    found.ok(f"log of {new} revisions extends the checkpoint of {old} seen before")
    for revision, rows in sorted(expected_rows(detail, evidence_sha256).items()):
        with _failing(found):
            data = view.leaf(revision)
            rows_list = None
            if leaves.needs_rows_list(data):
                rows_list = view.fetch(f"rows/{revision}")
            leaf = leaves.decode(data, rows_list)
            if leaf.revision != revision:
                raise LogFailure(f"leaf {revision - 1} is of revision {leaf.revision}")
            found.ok(f"leaf of revision {revision} is in the signed tree")
            for table, digest, what in rows:
                if not leaf.has(table, digest):
                    raise LogFailure(f"the leaf of revision {revision} does not commit to {what}")
            found.ok(f"leaf of revision {revision} commits to {len(rows)} served record(s)")
    failed = any(c.status == "fail" for c in found.items)
    if options.state is not None and not failed and not keep_saved:
        save_state(options.state, view.signed)
    return found.items


def read_state(path: Path) -> str:
    """The checkpoint saved by an earlier run, or :class:`LogFailure` saying why ``path`` holds
    none (a folder, bytes that are not text, far more than a checkpoint: read no further)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(STATE_MAX + 1)
    except OSError as error:
        raise LogFailure(f"cannot read the saved checkpoint {path}: {error.strerror}") from None
    if len(data) > STATE_MAX:
        raise LogFailure(f"the saved checkpoint {path} is over {STATE_MAX} bytes: not one")
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise LogFailure(f"the saved checkpoint {path} is not UTF-8 text: not one") from None


def save_state(path: Path, signed: str) -> None:
    """Keep the checkpoint just verified, for the next run's consistency check; a state that
    cannot be kept is one line naming it (a full disk: the storage error)."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w") as handle:
            handle.write(signed)
        os.replace(tmp, path)
    except OSError as error:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if error.errno in STORAGE_ERRNOS:
            raise
        reason = error.strerror or str(error)
        raise PathError(f"cannot keep the checkpoint in --state {path}: {reason}") from None
