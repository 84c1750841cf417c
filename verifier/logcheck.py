"""``fxev verify --vkey``: an observation checked against the transparency log.

With the log's verifier key (obtained out of band, never from the service it checks):

1. the checkpoint (``/v1/log/checkpoint``) must carry a valid signature of that key, under its
   name as origin;
2. with ``--state FILE``, the checkpoint must extend the one saved there by an earlier run (a
   consistency proof built from the tiles): a log that does not is "history rewritten"; a log
   smaller than the saved checkpoint (a gateway whose mirror lags) must be a prefix of it, proved
   from the tiles of the saved size (a notice, and the saved checkpoint stays), or fails;
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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from builder.core.errors import STORAGE_ERRNOS, PathError
from builder.tlog import leaf as leaves
from builder.tlog import merkle, note, tiles
from verifier.checks import Body, Check, Collector
from verifier.client import ApiClient, ClientError

RECORDING = ("capturada", "importada")
STATE_MAX = 65_536  # a signed checkpoint is a few hundred bytes

LOG = "log"  # the check every finding of this module is filed under


@dataclasses.dataclass(frozen=True, slots=True)
class LogOptions:
    key: note.VerifierKey
    state: Path | None = None


class LogFailure(Exception):
    """One log check failed: its message, reported as a ``fail``."""


class _Missing(LogFailure):
    """A file of the log the service did not serve (404)."""


@contextlib.contextmanager
def _failing(found: Collector) -> Iterator[None]:
    try:
        yield
    except (LogFailure, note.NoteError, merkle.ProofError, leaves.LeafError) as error:
        found.fail(LOG, str(error))


def expected_rows(detail: Body, evidence_sha256: str) -> dict[int, list[tuple[str, str, str]]]:
    """revision -> [(table, digest, what)] the leaves must hold for this observation."""
    observation = detail["observacion"]
    wanted: dict[int, list[tuple[str, str, str]]] = {}

    def want(revision: Any, table: str, record: Any, what: str) -> None:
        if type(revision) is not int:  # not a bool, not a text of digits
            raise TypeError(f"the revision of {what} is {revision!r}, not a number")
        digest = record if isinstance(record, str) else leaves.row_hash(record)
        wanted.setdefault(revision, []).append((table, digest, what))

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
        self.behind = False  # the served log is a prefix of the saved checkpoint, which stays

    def fetch(self, path: str) -> bytes:
        data = self.client.log(path)
        if data is None:
            raise _Missing(f"/v1/log/{path} is missing (404)")
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
        """(old size, new size) once the checkpoint and the ``saved`` one are of one log, or
        LogFailure.

        The served checkpoint must extend the saved one. One smaller than it (a gateway whose
        mirror has not caught up yet serves an older checkpoint of the same log) must be a
        prefix of it, proved from the tiles of the saved size, which the log keeps: a service
        that cannot show them is not checked (exit 2), never passed, or a fork kept behind
        what a consumer saw would never be refused."""
        new = self.open_checkpoint()
        try:
            old = note.parse_checkpoint(note.open_note(saved, self.key))
        except note.NoteError as error:
            raise LogFailure(f"the saved checkpoint does not verify: {error}") from None
        if old.size > new.size:
            self._prove_prefix(new, old)
        else:
            rewritten = (
                f"history rewritten: the log of {new.size} revisions does not extend the"
                f" checkpoint of {old.size} seen before"
            )
            self._prove(old, new, rewritten)
        return old.size, new.size

    def _prove_prefix(self, served: note.Checkpoint, saved: note.Checkpoint) -> None:
        """``served`` (smaller) is a prefix of ``saved``: proved from the tiles of ``saved``'s
        size, which a log keeps for every checkpoint it signed. A service that does not hold
        them (a gateway whose mirror lags) cannot be checked yet: ``ClientError`` (exit 2)."""
        rewritten = (
            f"history rewritten: the log of {served.size} revisions is not a prefix of the"
            f" checkpoint of {saved.size} seen before"
        )
        try:
            self._prove(served, saved, rewritten)
        except _Missing as missing:
            raise ClientError(
                f"the log of {served.size} revisions is behind the checkpoint of {saved.size}"
                f" seen before, and {missing}: it cannot be checked against it (a gateway not"
                " caught up yet: run again)"
            ) from None

    def _prove(self, smaller: note.Checkpoint, larger: note.Checkpoint, rewritten: str) -> None:
        """``larger``'s tree extends ``smaller``'s, proved from the tiles of ``larger``'s size
        (``_Missing`` when the service lacks one of them), or LogFailure(``rewritten``)."""
        if smaller.size:
            try:
                proof = merkle.consistency_proof(
                    smaller.size, larger.size, tiles.tile_reader(larger.size, self.read_tile)
                )
            except (merkle.ProofError, ValueError):
                raise LogFailure(rewritten) from None
        else:
            proof = []
        try:
            merkle.verify_consistency(smaller.size, larger.size, smaller.root, larger.root, proof)
        except merkle.ProofError:
            raise LogFailure(rewritten) from None


def log_checks(
    client: ApiClient,
    detail: Body,
    evidence_sha256: str,
    options: LogOptions,
    view: LogView | None = None,
) -> list[Check]:
    """The log's checks of one observation, through ``view`` (one per run: its checkpoint read
    and checked once). Nothing is saved here: :func:`keep_checkpoint` saves once per run."""
    found = Collector(detail["observacion"]["id"])
    view = view or LogView(client, options.key)
    with _failing(found):
        checkpoint = view.open_checkpoint()
        found.ok(LOG, f"checkpoint of {checkpoint.size} revisions signed by {options.key.name}")
    if view.checkpoint is None:
        return found.items
    if options.state is not None and options.state.exists():
        with _failing(found):
            saved = read_state(options.state)
            if saved:  # empty (made by mktemp, say), as missing: nothing seen yet
                old, new = view.consistent_with(saved)
                if old > new:
                    view.behind = True
                    found.notice(
                        LOG,
                        f"checkpoint of {new} revisions is behind the checkpoint of {old} seen"
                        f" before (a gateway not caught up yet): a prefix of it, {old} kept",
                    )
                else:
                    found.ok(
                        LOG,
                        f"checkpoint of {new} revisions extends the checkpoint of {old} seen"
                        " before",
                    )
    for revision, rows in sorted(expected_rows(detail, evidence_sha256).items()):
        with _failing(found):
            data = view.leaf(revision)
            rows_list = None
            if leaves.needs_rows_list(data):
                rows_list = view.fetch(f"rows/{revision}")
            leaf = leaves.decode(data, rows_list)
            if leaf.revision != revision:
                raise LogFailure(f"leaf {revision - 1} is of revision {leaf.revision}")
            found.ok(LOG, f"leaf of revision {revision} is in the signed tree")
            missing = [what for table, digest, what in rows if not leaf.has(table, digest)]
            for what in missing:  # each one reported
                found.fail(LOG, f"the leaf of revision {revision} does not commit to {what}")
            if not missing:
                found.ok(
                    LOG, f"leaf of revision {revision} commits to {len(rows)} served record(s)"
                )
    return found.items


def keep_checkpoint(view: LogView, options: LogOptions, checks: Sequence[Check]) -> None:
    """At the end of a run, with ``--state``: save the checkpoint ``view`` verified when every
    log check of the run passed (every item's, with ``--response``), unless the served log was
    behind the saved checkpoint, which stays."""
    if options.state is None or view.checkpoint is None or view.behind:
        return
    if any(check.check == "log" and check.status == "fail" for check in checks):
        return
    save_state(options.state, view.signed)


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
