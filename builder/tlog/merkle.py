"""RFC 6962 (RFC 9162 section 2.1) Merkle trees over SHA-256: hashes, proofs and their checks.

A tree of ``n`` leaves is read through a :data:`HashReader`: ``read(level, index)`` returns the
stored hash of the perfect subtree of ``2**level`` leaves that starts at leaf ``index << level``
(level 0: a leaf hash). Every other hash (a subtree of any range, a root, a proof) is computed
from those, as Go's ``golang.org/x/mod/sumdb/tlog`` does. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()

HashReader = Callable[[int, int], bytes]


class ProofError(ValueError):
    """A proof does not verify, or asks about leaves outside the tree."""


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def fold(hashes: Sequence[bytes]) -> bytes:
    """The root over perfect subtrees given left to right, each larger than the rest together
    (the decomposition RFC 6962 makes): hashed together from the right."""
    root = hashes[-1]
    for left in reversed(hashes[:-1]):
        root = node_hash(left, root)
    return root


def perfect_root(hashes: Sequence[bytes]) -> bytes:
    """The root of a perfect tree whose ``2**k`` bottom hashes are given."""
    level = list(hashes)
    while len(level) > 1:
        level = [node_hash(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


def split(n: int) -> int:
    """The largest power of two smaller than ``n`` (``n`` >= 2)."""
    return 1 << ((n - 1).bit_length() - 1)


def subtree_hash(lo: int, hi: int, read: HashReader) -> bytes:
    """MTH of leaves ``[lo, hi)`` (``lo < hi``), from aligned perfect subtrees read whole."""
    parts = []
    while lo < hi:
        level = (hi - lo).bit_length() - 1
        while lo & ((1 << level) - 1):  # aligned on its own size
            level -= 1
        parts.append(read(level, lo >> level))
        lo += 1 << level
    return fold(parts)


def tree_hash(n: int, read: HashReader) -> bytes:
    """The root of the tree of ``n`` leaves."""
    return EMPTY_ROOT if n == 0 else subtree_hash(0, n, read)


def inclusion_proof(index: int, n: int, read: HashReader) -> list[bytes]:
    """RFC 9162 PATH(index, D[0:n])."""
    if not 0 <= index < n:
        raise ProofError(f"leaf {index} is not in a tree of {n}")
    proof: list[bytes] = []
    lo, hi = 0, n
    while hi - lo > 1:
        k = split(hi - lo)
        if index < lo + k:
            proof.append(subtree_hash(lo + k, hi, read))
            hi = lo + k
        else:
            proof.append(subtree_hash(lo, lo + k, read))
            lo += k
    proof.reverse()
    return proof


def consistency_proof(m: int, n: int, read: HashReader) -> list[bytes]:
    """RFC 9162 PROOF(m, D[0:n]) for ``0 < m <= n``."""
    if not 0 < m <= n:
        raise ProofError(f"no consistency proof from {m} to {n}")
    return _subproof(m, 0, n, True, read)


def _subproof(m: int, lo: int, hi: int, whole: bool, read: HashReader) -> list[bytes]:
    n = hi - lo
    if m == n:
        return [] if whole else [subtree_hash(lo, hi, read)]
    k = split(n)
    if m <= k:
        return [*_subproof(m, lo, lo + k, whole, read), subtree_hash(lo + k, hi, read)]
    return [*_subproof(m - k, lo + k, hi, False, read), subtree_hash(lo, lo + k, read)]


def root_from_inclusion(index: int, n: int, leaf: bytes, proof: Sequence[bytes]) -> bytes:
    """The root that ``proof`` of leaf hash ``leaf`` at ``index`` implies (RFC 9162 2.1.3.2)."""
    if not 0 <= index < n:
        raise ProofError(f"leaf {index} is not in a tree of {n}")
    fn, sn, r = index, n - 1, leaf
    for p in proof:
        if sn == 0:
            raise ProofError("inclusion proof too long")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError("inclusion proof too short")
    return r


def verify_inclusion(index: int, n: int, leaf: bytes, proof: Sequence[bytes], root: bytes) -> None:
    if root_from_inclusion(index, n, leaf, proof) != root:
        raise ProofError(f"leaf {index} is not included in the tree of {n}: roots differ")


def verify_consistency(
    m: int, n: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> None:
    """RFC 9162 2.1.4.2: the tree of ``n`` extends the tree of ``m``, or ``ProofError``."""
    if not 0 <= m <= n:
        raise ProofError(f"a tree of {n} cannot extend one of {m}")
    if m == n or m == 0:
        if proof:
            raise ProofError("consistency proof should be empty")
        if m == n and old_root != new_root:
            raise ProofError(f"two different roots for the same size {n}")
        return
    path = list(proof)
    if m & (m - 1) == 0:  # a power of two: the old root is the first node
        path.insert(0, old_root)
    if not path:
        raise ProofError("consistency proof is empty")
    fn, sn = m - 1, n - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofError("consistency proof too long")
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError("consistency proof too short")
    if fr != old_root:
        raise ProofError(f"the tree of {n} does not extend the tree of {m}: old root differs")
    if sr != new_root:
        raise ProofError(f"the tree of {n} does not extend the tree of {m}: new root differs")
