"""``fxev verify --proof``'s pure check (``verifier.proofcheck``): a ``tlog-proof`` with only the
key, a record against its leaf, and every tampered part named."""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from builder.tlog import merkle, note, proof
from builder.tlog.leaf import Leaf, row_hash
from verifier.proofcheck import check_proof, record_observation

PRIVATE = Ed25519PrivateKey.from_private_bytes(bytes(32))
KEY = note.verifier_key("fxev.local/test", PRIVATE)
RECORD = {"id": "3e1c2b0a-5d4e-4f6a-8b7c-9d0e1f2a3b4c", "revision_creada": 3, "compra": "3.356"}
CHAIN = "sha256:" + "a" * 64


def reader(hashes: list[bytes]) -> merkle.HashReader:
    return lambda level, index: merkle.perfect_root(hashes[index << level : (index + 1) << level])


def build(rows: dict[str, tuple[str, ...]], origin: str = KEY.name) -> tuple[str, bytes | None]:
    """A log of 5 revisions whose revision 3 wrote ``rows``: its proof text, its rows list."""
    leaves = [Leaf(n, "2026-09-21T20:00:00Z", CHAIN, {"events": ("b" * 64,)}) for n in range(1, 6)]
    leaves[2] = Leaf(3, "2026-09-21T20:00:00Z", CHAIN, rows)
    encoded = [leaf.encode() for leaf in leaves]
    hashes = [merkle.leaf_hash(data) for data, _ in encoded]
    root = merkle.tree_hash(5, reader(hashes))
    signed = note.sign(note.Checkpoint(origin, 5, root).text, KEY.name, PRIVATE)
    path = merkle.inclusion_proof(2, 5, reader(hashes))
    return proof.TlogProof(2, tuple(path), signed, encoded[2][0]).encode(), encoded[2][1]


def flip_base64(text: str, line: int, at: int = 3) -> str:
    """``text`` with one base64 character of line ``line`` changed (still valid base64)."""
    lines = text.split("\n")
    char = lines[line][at]
    lines[line] = lines[line][:at] + ("B" if char != "B" else "C") + lines[line][at + 1 :]
    return "\n".join(lines)


PROOF, _ = build({"observations": (row_hash(RECORD),)})


def failed(verdict) -> list[tuple[str, str]]:
    return [(c.check, c.message) for c in verdict.checks if c.status == "fail"]


def test_a_proof_verifies_with_only_the_key():
    verdict = check_proof(PROOF.encode(), KEY)
    assert verdict.ok and verdict.exit_code == 0
    assert (verdict.revision, verdict.index) == (3, 2)
    assert [c.check for c in verdict.checks] == ["checkpoint", "inclusion", "leaf"]
    assert verdict.to_json() == {"ok": True, "findings": []}


def test_a_record_is_found_among_the_leafs_observations():
    verdict = check_proof(PROOF.encode(), KEY, RECORD)
    assert verdict.ok, failed(verdict)
    assert verdict.checks[-1].check == "record"
    changed = check_proof(PROOF.encode(), KEY, RECORD | {"compra": "3.357"})
    assert failed(changed) == [
        (
            "record",
            f"the leaf of revision 3 does not commit to observacion {RECORD['id']}: its SHA-256"
            " is not among the leaf's observations",
        )
    ]
    assert changed.to_json()["findings"][0]["observacion_id"] == RECORD["id"]
    later = check_proof(PROOF.encode(), KEY, RECORD | {"revision_creada": 4})
    assert failed(later)[0][0] == "record" and "created in revision 4" in failed(later)[0][1]


def test_a_record_body_needs_its_observacion():
    assert record_observation({"observacion": RECORD, "eventos": []}) == RECORD
    with pytest.raises(ValueError):
        record_observation({"items": []})


@pytest.mark.parametrize(
    ("tamper", "check"),
    [
        (lambda t: t.replace("fxev.local/test\n5\n", "fxev.local/test\n4\n", 1), "checkpoint"),
        (lambda t: flip_base64(t, t.split("\n").index("") + 3), "checkpoint"),  # the root
        (lambda t: t[:-10] + ("A" if t[-10] != "A" else "B") + t[-9:], "checkpoint"),  # signature
        (lambda t: flip_base64(t, 3), "inclusion"),  # a proof hash
        (lambda t: flip_base64(t, 1, 12), "inclusion"),  # extra: the leaf
        (lambda t: t.replace("index 2", "index 3"), "inclusion"),
        (lambda t: t.replace("c2sp.org/tlog-proof@v1", "c2sp.org/tlog-proof@v2"), "proof"),
        (lambda t: flip_base64(t, 3, 43).replace("=\n", "*\n", 1), "proof"),
    ],
)
def test_a_flipped_byte_fails_naming_what(tamper, check):
    text = tamper(PROOF)
    assert text != PROOF
    verdict = check_proof(text.encode(), KEY, RECORD)
    assert not verdict.ok and verdict.exit_code == 1
    assert [c for c, _ in failed(verdict)] == [check]
    assert verdict.to_json()["findings"][0]["check"] == check


def test_a_wrong_key_or_origin_fails_the_checkpoint():
    other = note.verifier_key(KEY.name, Ed25519PrivateKey.from_private_bytes(bytes([1]) * 32))
    verdict = check_proof(PROOF.encode(), other)
    assert failed(verdict) == [
        ("checkpoint", f"signature: no signature by {KEY.name} (key id mismatch)")
    ]
    elsewhere, _ = build({"observations": (row_hash(RECORD),)}, origin="fxev.local/other")
    assert failed(check_proof(elsewhere.encode(), KEY)) == [
        ("checkpoint", f"origin fxev.local/other is not {KEY.name}")
    ]


def test_a_leaf_of_another_revision_fails():
    text, _ = build({"observations": (row_hash(RECORD),)})
    leaf = Leaf(4, "2026-09-21T20:00:00Z", CHAIN, {"observations": (row_hash(RECORD),)})
    data, _ = leaf.encode()
    parsed = proof.parse(text)
    # A proof whose leaf really is at index 2 but says it is revision 4.
    hashes = [merkle.leaf_hash(b"x")] * 2 + [merkle.leaf_hash(data)] + [merkle.leaf_hash(b"y")] * 2
    root = merkle.tree_hash(5, reader(hashes))
    signed = note.sign(note.Checkpoint(KEY.name, 5, root).text, KEY.name, PRIVATE)
    path = merkle.inclusion_proof(2, 5, reader(hashes))
    wrong = proof.TlogProof(parsed.index, tuple(path), signed, data).encode()
    assert failed(check_proof(wrong.encode(), KEY)) == [
        ("leaf", "the leaf is of revision 4, not 3")
    ]


def test_a_leaf_with_a_rows_list_needs_it_for_a_record():
    many = tuple(hashlib.sha256(str(i).encode()).hexdigest() for i in range(2000))
    text, rows = build({"observations": (*many, row_hash(RECORD))})
    assert rows is not None
    alone = check_proof(text.encode(), KEY)
    assert alone.ok and alone.revision == 3
    assert "/v1/log/rows/3" in alone.checks[-1].message
    without = check_proof(text.encode(), KEY, RECORD)
    assert [c for c, _ in failed(without)] == ["record"]
    assert "fetch /v1/log/rows/3 and give it as --rows FILE" in failed(without)[0][1]
    assert check_proof(text.encode(), KEY, RECORD, rows).ok
    bad_rows = rows.replace(many[0].encode(), b"0" * 64)
    assert failed(check_proof(text.encode(), KEY, RECORD, bad_rows)) == [
        ("leaf", "the rows list does not match the leaf's rows_sha256")
    ]


def test_a_proof_without_a_leaf_is_not_an_fxev_proof():
    parsed = proof.parse(PROOF)
    bare = proof.TlogProof(parsed.index, parsed.hashes, parsed.checkpoint).encode()
    assert failed(check_proof(bare.encode(), KEY))[0][0] == "proof"
    assert base64.b64decode(PROOF.split("\n")[1][6:]).startswith(b'{"chain"')


def test_a_proof_that_is_not_utf8_is_malformed():
    """C2SP signed-note: "Signed notes MUST be valid UTF-8". A signature line of an unknown key
    holding the byte 0xFF was read with a stand-in character and the proof passed; Go's
    ``note.Open`` refuses it as a malformed note, and so does the check."""
    blob = base64.b64encode(bytes(68))
    data = PROOF.encode() + "\N{EM DASH} w".encode() + b"\xff.example " + blob + b"\n"
    verdict = check_proof(data, KEY)
    assert failed(verdict) == [("proof", "malformed note: not valid UTF-8")]
    assert verdict.exit_code == 1
    assert check_proof(PROOF.encode() + "\N{EM DASH} w.example ".encode() + blob + b"\n", KEY).ok


def test_a_checkpoint_with_an_empty_extension_line_fails():
    """C2SP tlog-checkpoint: extension lines "MUST be non-empty"; signed by the key or not."""
    root = bytes(32)
    text = note.Checkpoint(KEY.name, 5, root).text + "\nextension\n"  # fxev never signs one
    blob = base64.b64encode(KEY.key_id + PRIVATE.sign(text.encode())).decode()
    signed = f"{text}\n\N{EM DASH} {KEY.name} {blob}\n"
    with pytest.raises(note.NoteError, match="extension line is empty"):
        note.parse_checkpoint(note.open_note(signed, KEY))
    fine = note.sign(note.Checkpoint(KEY.name, 5, root).text + "extension\n", KEY.name, PRIVATE)
    assert note.parse_checkpoint(note.open_note(fine, KEY)).size == 5
