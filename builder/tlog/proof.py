"""C2SP ``tlog-proof``: an offline-verifiable proof that a leaf is in a signed checkpoint.

::

    c2sp.org/tlog-proof@v1
    extra <base64 of the leaf>
    index <leaf index>
    <base64 hash>...

    <signed checkpoint>

fxev puts the leaf itself in ``extra``, so a verifier holding only the log's verifier key
recomputes the leaf hash, checks the inclusion proof against the checkpoint's root and the
checkpoint's signature. Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import re

from builder.tlog import merkle, note

HEADER = "c2sp.org/tlog-proof@v1"


@dataclasses.dataclass(frozen=True, slots=True)
class TlogProof:
    index: int
    hashes: tuple[bytes, ...]
    checkpoint: str  # the signed note, as published
    extra: bytes | None = None

    def encode(self) -> str:
        lines = [HEADER]
        if self.extra is not None:
            lines.append(f"extra {base64.b64encode(self.extra).decode()}")
        lines.append(f"index {self.index}")
        lines += [base64.b64encode(h).decode() for h in self.hashes]
        return "\n".join(lines) + "\n\n" + self.checkpoint


def parse(text: str) -> TlogProof:
    head, sep, checkpoint = text.partition("\n\n")
    lines = head.split("\n")
    if not sep or lines[0] != HEADER:
        raise note.NoteError(f"not a {HEADER} proof")
    extra = None
    at = 1
    try:
        if len(lines) > at and lines[at].startswith("extra "):
            extra = base64.b64decode(lines[at][6:], validate=True)
            at += 1
        match = re.fullmatch(r"index (0|[1-9]\d{0,18})", lines[at] if len(lines) > at else "")
        if match is None:
            raise note.NoteError("the proof has no index line")
        hashes = tuple(base64.b64decode(line, validate=True) for line in lines[at + 1 :])
    except binascii.Error:
        raise note.NoteError("a line of the proof is not base64") from None
    if any(len(h) != merkle.HASH_SIZE for h in hashes):
        raise note.NoteError("a proof hash is not 32 bytes")
    return TlogProof(int(match.group(1)), hashes, checkpoint, extra)


def verify(proof: TlogProof, key: note.VerifierKey, leaf: bytes) -> note.Checkpoint:
    """The checkpoint, once its signature and the leaf's inclusion in it verify."""
    checkpoint = note.parse_checkpoint(note.open_note(proof.checkpoint, key))
    if checkpoint.origin != key.name:
        raise note.NoteError(f"the checkpoint's origin {checkpoint.origin} is not {key.name}")
    merkle.verify_inclusion(
        proof.index, checkpoint.size, merkle.leaf_hash(leaf), proof.hashes, checkpoint.root
    )
    return checkpoint
