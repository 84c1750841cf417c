"""An independent computation of RFC 6962's Merkle tree hash, for checking the log against."""

from __future__ import annotations

import hashlib

from builder.tlog import merkle


def naive_root(hashes: list[bytes]) -> bytes:
    """RFC 6962's MTH, recursively, as the RFC writes it."""
    if not hashes:
        return hashlib.sha256(b"").digest()
    if len(hashes) == 1:
        return hashes[0]
    k = 1
    while k * 2 < len(hashes):
        k *= 2
    return merkle.node_hash(naive_root(hashes[:k]), naive_root(hashes[k:]))
