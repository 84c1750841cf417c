"""``fxev verify --proof``: a ``tlog-proof`` checked offline, with only the log's verifier key.

The proof is what ``fxev log proof OBSERVACION_ID`` prints (``builder.tlog.proof``): the leaf of
the revision that created the observation in ``extra``, its index, the inclusion proof and the
signed checkpoint. With the key, and nothing from the network:

1. ``proof``: the text is a ``c2sp.org/tlog-proof@v1`` with the leaf in ``extra``;
2. ``checkpoint``: its signature by the key verifies, and its origin is the key's name;
3. ``inclusion``: the leaf hash of ``extra`` leads, up the proof, to the signed root;
4. ``leaf``: ``extra`` decodes as an fxev leaf (``builder.tlog.leaf``) of revision index + 1;
5. ``record`` (with a saved ``/v1/observations/{id}`` body): the ``observacion`` object was
   created in that revision, and its SHA-256 (``leaf.row_hash``, as ``ROW_RULES`` says and as
   ``verifier.logcheck`` hashes it online) is among the leaf's ``observations`` rows.

A leaf that names its rows by ``rows_sha256`` (a large import) does not hold them: the list is
published at ``/v1/log/rows/N``; given as ``--rows FILE`` it is checked against
``rows_sha256``, and without it the record cannot be checked offline, a ``fail`` that says so.
Pure: the caller reads the files.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

import orjson

from builder.tlog import leaf as leaves
from builder.tlog import merkle, note, proof
from verifier.checks import Body, Checked, Collector


@dataclasses.dataclass(frozen=True, slots=True)
class ProofVerdict(Checked):
    """The verdict on an offline proof: the revision and leaf index it proves (its plain lines
    name both)."""

    revision: int | None
    index: int | None


class _Stop(Exception):
    """A check failed that the later ones depend on."""


def _stop(found: Collector, check: str, message: str) -> _Stop:
    """Record a failed check the later ones depend on; the caller raises what it returns."""
    found.fail(check, message)
    return _Stop()


def record_observation(body: Any) -> Body:
    """The ``observacion`` object of a saved ``/v1/observations/{id}`` body, or ValueError."""
    if not isinstance(body, dict) or not isinstance(body.get("observacion"), dict):
        raise ValueError("not a /v1/observations/{id} body: it has no observacion object")
    observation = body["observacion"]
    if not isinstance(observation.get("id"), str):
        raise ValueError("its observacion has no id")
    return observation


def check_proof(
    data: bytes,
    key: note.VerifierKey,
    record: Body | None = None,
    rows_list: bytes | None = None,
) -> ProofVerdict:
    """Every check of a ``tlog-proof``, its bytes ``data`` (and, with ``record``, of the
    observation in its leaf)."""
    found = Collector("" if record is None else str(record.get("id", "")))
    state: dict[str, int] = {}
    with contextlib.suppress(_Stop):
        _check(found, state, data, key, record, rows_list)
    return ProofVerdict(tuple(found.items), state.get("revision"), state.get("index"))


def _check(
    found: Collector,
    state: dict[str, int],
    data: bytes,
    key: note.VerifierKey,
    record: Body | None,
    rows_list: bytes | None,
) -> None:
    try:
        parsed = proof.parse(note.decode(data))
    except note.NoteError as error:
        raise _stop(found, "proof", str(error)) from None
    if parsed.extra is None:
        raise _stop(found, "proof", "the proof carries no leaf in extra: not an fxev log proof")
    state["index"] = parsed.index
    try:
        checkpoint = note.parse_checkpoint(note.open_note(parsed.checkpoint, key))
    except note.NoteError as error:
        raise _stop(found, "checkpoint", f"signature: {error}") from None
    if checkpoint.origin != key.name:
        raise _stop(found, "checkpoint", f"origin {checkpoint.origin} is not {key.name}")
    found.ok("checkpoint", f"signed by the key, tree of {checkpoint.size} revisions")
    try:
        merkle.verify_inclusion(
            parsed.index,
            checkpoint.size,
            merkle.leaf_hash(parsed.extra),
            parsed.hashes,
            checkpoint.root,
        )
    except merkle.ProofError as error:
        raise _stop(
            found,
            "inclusion",
            f"the leaf in extra and the proof hashes do not lead to the root: {error}",
        ) from None
    found.ok("inclusion", f"leaf {parsed.index} leads to the signed root")
    revision = _leaf_revision(found, parsed.extra)
    state["revision"] = revision
    if revision != parsed.index + 1:
        raise _stop(found, "leaf", f"the leaf is of revision {revision}, not {parsed.index + 1}")
    if leaves.needs_rows_list(parsed.extra) and rows_list is None:
        found.ok("leaf", f"revision {revision}; its rows are listed at /v1/log/rows/{revision}")
        if record is not None:
            raise _stop(
                found,
                "record",
                f"cannot be checked offline: the leaf of revision {revision} names its rows by"
                f" rows_sha256; fetch /v1/log/rows/{revision} and give it as --rows FILE",
            )
        return
    try:
        leaf = leaves.decode(parsed.extra, rows_list)
    except leaves.LeafError as error:
        raise _stop(found, "leaf", str(error)) from None
    observations = len(leaf.rows.get("observations", ()))
    found.ok("leaf", f"revision {revision}, {observations} observation(s)")
    if record is not None:
        _check_record(found, leaf, record)


def _leaf_revision(found: Collector, data: bytes) -> int:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise _stop(found, "leaf", "the leaf is not JSON") from None
    if not isinstance(value, dict) or value.get("fxev_leaf") != leaves.FORMAT:
        raise _stop(found, "leaf", "the leaf is not an fxev leaf of format 1")
    if leaves.canonical(value) != data:
        raise _stop(found, "leaf", "the leaf is not in canonical form")
    revision = value.get("revision")
    if not isinstance(revision, int) or isinstance(revision, bool):
        raise _stop(found, "leaf", "the leaf has no revision number")
    return revision


def _check_record(found: Collector, leaf: leaves.Leaf, record: Body) -> None:
    created = record.get("revision_creada")
    if created != leaf.revision:
        raise _stop(
            found,
            "record",
            f"observacion {record.get('id')} was created in revision {created}, the proof is"
            f" of revision {leaf.revision}",
        )
    if not leaf.has("observations", leaves.row_hash(record)):
        raise _stop(
            found,
            "record",
            f"the leaf of revision {leaf.revision} does not commit to observacion"
            f" {record.get('id')}: its SHA-256 is not among the leaf's observations",
        )
    found.ok("record", f"observacion {record.get('id')} is among the leaf's observations")
