"""The log's pure code against RFC 6962's vectors, Go's signed-note vector and a naive reference."""

from __future__ import annotations

import base64
import hashlib
import random

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from builder.tlog import merkle, note, proof, tiles
from builder.tlog.leaf import MAX_LEAF, Leaf, LeafError, decode, needs_rows_list
from tests.support.merkle import naive_root

# RFC 6962's test inputs and tree heads (as Certificate Transparency's tests publish them).
RFC_LEAVES = [
    bytes.fromhex(h)
    for h in (
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    )
]
RFC_ROOTS = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
RFC_INCLUSION = [
    (
        0,
        8,
        [
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        5,
        8,
        [
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (2, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
    (0, 1, []),
]
RFC_CONSISTENCY = [
    (1, 1, []),
    (
        1,
        8,
        [
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        [
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        5,
        [
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
]


def list_reader(hashes: list[bytes]):
    return lambda level, index: naive_root(hashes[index << level : (index + 1) << level])


# -- RFC 6962 ------------------------------------------------------------------------------


@pytest.mark.parametrize("size", range(9))
def test_roots_match_rfc6962(size):
    hashes = [merkle.leaf_hash(leaf) for leaf in RFC_LEAVES[:size]]
    assert merkle.tree_hash(size, list_reader(hashes)).hex() == RFC_ROOTS[size]
    assert naive_root(hashes).hex() == RFC_ROOTS[size]


@pytest.mark.parametrize(("index", "size", "expected"), RFC_INCLUSION)
def test_inclusion_proofs_match_rfc6962(index, size, expected):
    hashes = [merkle.leaf_hash(leaf) for leaf in RFC_LEAVES]
    made = merkle.inclusion_proof(index, size, list_reader(hashes))
    assert [h.hex() for h in made] == expected
    root = bytes.fromhex(RFC_ROOTS[size])
    merkle.verify_inclusion(index, size, hashes[index], made, root)


@pytest.mark.parametrize(("old", "new", "expected"), RFC_CONSISTENCY)
def test_consistency_proofs_match_rfc6962(old, new, expected):
    hashes = [merkle.leaf_hash(leaf) for leaf in RFC_LEAVES]
    made = merkle.consistency_proof(old, new, list_reader(hashes))
    assert [h.hex() for h in made] == expected
    old_root, new_root = bytes.fromhex(RFC_ROOTS[old]), bytes.fromhex(RFC_ROOTS[new])
    merkle.verify_consistency(old, new, old_root, new_root, made)


# -- tiles against the naive reference -------------------------------------------------------


def build_log(sizes):
    """Append leaves in batches reaching each of ``sizes``: (files, edge, leaves, hashes)."""
    edge, files, leaves = tiles.Edge.empty(), {}, []
    for size in sizes:
        new = [f"leaf {i}".encode() for i in range(edge.size, size)]
        leaves += new
        edge, written = tiles.append(edge, new, [merkle.leaf_hash(x) for x in new])
        files.update(written)
        yield files, edge, leaves


def test_tiles_and_roots_match_the_naive_reference_from_1_to_2048():
    rng = random.Random(6962)
    sizes, size = [], 0
    while size < 2048:
        size = min(2048, size + (1 if size < 300 else rng.randint(1, 300)))
        sizes.append(size)
    for files, edge, leaves in build_log(sizes):
        n = edge.size
        hashes = [merkle.leaf_hash(x) for x in leaves]
        assert edge.root() == naive_root(hashes), n
        for level in (-1, 0, 1):
            for tile in tiles.tiles_of(n, level):
                data = files[tile]
                first = tile.index * 256
                if level == -1:
                    assert tiles.decode_bundle(data) == leaves[first : first + tile.width]
                elif level == 0:
                    assert data == b"".join(hashes[first : first + tile.width])
                else:
                    roots = [naive_root(hashes[256 * i : 256 * i + 256]) for i in range(n // 256)]
                    assert data == b"".join(roots[first : first + tile.width])
        read = tiles.tile_reader(n, files.__getitem__)
        assert merkle.tree_hash(n, read) == edge.root()
        assert tiles.load_edge(n, files.__getitem__) == edge


def test_a_tree_of_65537_leaves_has_level_2_tiles():
    hashes = [hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(65537)]
    edge, files = tiles.append(tiles.Edge.empty(), [b""] * 65537, hashes)
    assert tiles.Tile(2, 0, 1) in files
    assert edge.root() == naive_root(hashes)


def test_appending_writes_only_the_right_edge():
    edge, _ = tiles.append(tiles.Edge.empty(), [b"x"] * 600, [merkle.leaf_hash(b"x")] * 600)
    _, written = tiles.append(edge, [b"y"], [merkle.leaf_hash(b"y")])
    assert sorted(t.path for t in written) == ["tile/0/002.p/89", "tile/entries/002.p/89"]


def test_inclusion_and_consistency_proofs_verify_for_a_sample_of_pairs():
    rng = random.Random(9162)
    *_, (files, edge, leaves) = build_log([300, 777, 1300])
    hashes = [merkle.leaf_hash(x) for x in leaves]
    roots = {n: naive_root(hashes[:n]) for n in range(1, len(leaves) + 1, 1)}
    read = tiles.tile_reader(edge.size, files.__getitem__)
    for _ in range(150):
        n = rng.randint(1, edge.size)
        i, m = rng.randrange(n), rng.randint(1, n)
        path = merkle.inclusion_proof(i, n, read)
        merkle.verify_inclusion(i, n, hashes[i], path, roots[n])
        with pytest.raises(merkle.ProofError):
            merkle.verify_inclusion(i, n, merkle.leaf_hash(b"other"), path, roots[n])
        consistency = merkle.consistency_proof(m, n, read)
        merkle.verify_consistency(m, n, roots[m], roots[n], consistency)
        if m < n:
            with pytest.raises(merkle.ProofError):
                merkle.verify_consistency(m, n, merkle.leaf_hash(b"x"), roots[n], consistency)


@pytest.mark.parametrize(
    ("tile", "path"),
    [
        (tiles.Tile(0, 1234067), "tile/0/x001/x234/067"),
        (tiles.Tile(3, 4, 1), "tile/3/004.p/1"),
        (tiles.Tile(-1, 0, 255), "tile/entries/000.p/255"),
        (tiles.Tile(1, 1000), "tile/1/x001/000"),
    ],
)
def test_tile_paths_are_c2sp_tlog_tiles(tile, path):
    assert tile.path == path
    assert tiles.parse_path(path) == tile


@pytest.mark.parametrize(
    "path",
    [
        "tile/0/1",
        "tile/0/x000/001",
        "tile/0/001.p/256",
        "tile/0/001.p/0",
        "tile/0/001.p/007",
        "tile/64/000",
        "tile/entries/../000",
        "tile/0/001/",
        "tile/data/000",
        "tile/00/000",
    ],
)
def test_bad_tile_paths_are_refused(path):
    with pytest.raises(ValueError):
        tiles.parse_path(path)


# -- signed notes, checkpoints, proofs ----------------------------------------------------

GO_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
GO_SEED = base64.b64decode("AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz")[1:]
GO_TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
GO_NOTE = (
    GO_TEXT + "\n\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUg"
    "YN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
)


def test_signed_notes_match_go_sumdb_note():
    private = Ed25519PrivateKey.from_private_bytes(GO_SEED)
    assert note.verifier_key("PeterNeumann", private).text == GO_VKEY
    assert note.sign(GO_TEXT, "PeterNeumann", private) == GO_NOTE
    assert note.open_note(GO_NOTE, note.parse_verifier_key(GO_VKEY)) == GO_TEXT


def test_a_flipped_byte_breaks_the_note():
    key = note.parse_verifier_key(GO_VKEY)
    with pytest.raises(note.NoteError):
        note.open_note(GO_NOTE.replace("problem is", "problem iz"), key)
    with pytest.raises(note.NoteError):
        note.open_note(GO_NOTE.replace("x08go", "x08gp"), key)


FOREIGN = "\u2014 other.example/log " + base64.b64encode(b"\x01\x02\x03\x04" + b"s" * 64).decode()


@pytest.mark.parametrize(
    "extra",
    [
        "\u2014 bad+name AAAAAAAAAAA=",  # a '+' in the name
        "\u2014 other AAAAAA==",  # 4 bytes: a key id and no signature
        "\u2014 other not-base64!",
        "\u2014 other ",  # no signature at all
        "\u2014 other  " + FOREIGN.split(" ")[-1],  # two spaces
        "- other " + FOREIGN.split(" ")[-1],  # not the em dash
        "\n".join([FOREIGN] * 100),  # with the note's own: 101 signatures
    ],
)
def test_a_malformed_signature_line_refuses_the_note_as_go_does(extra):
    """Go's ``note.Open`` refuses a note with any malformed signature line, whoever signed it:
    a name with a space or a '+', a signature under 5 bytes or not base64, over 100 lines."""
    key = note.parse_verifier_key(GO_VKEY)
    with pytest.raises(note.NoteError, match="malformed"):
        note.open_note(GO_NOTE + extra + "\n", key)


def test_well_formed_foreign_signatures_and_their_limit_are_accepted():
    key = note.parse_verifier_key(GO_VKEY)
    assert note.open_note(GO_NOTE + FOREIGN + "\n", key) == GO_TEXT
    assert note.open_note(GO_NOTE + "\n".join([FOREIGN] * 99) + "\n", key) == GO_TEXT


def test_a_control_character_in_the_text_refuses_the_note():
    key = note.parse_verifier_key(GO_VKEY)
    with pytest.raises(note.NoteError, match="control character"):
        note.open_note(GO_NOTE.replace("problem is", "problem\tis"), key)


def test_no_signature_says_key_id_mismatch_only_when_a_line_names_the_key():
    key = note.parse_verifier_key(GO_VKEY)
    text, _, _ = GO_NOTE.rpartition("\u2014 ")
    with pytest.raises(note.NoteError) as foreign_only:
        note.open_note(text + FOREIGN + "\n", key)
    assert str(foreign_only.value) == "no signature by PeterNeumann"
    renamed = FOREIGN.replace("other.example/log", "PeterNeumann")
    with pytest.raises(note.NoteError, match=r"no signature by PeterNeumann \(key id mismatch\)"):
        note.open_note(text + renamed + "\n", key)


@pytest.mark.parametrize(
    "vkey",
    [
        "PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
        "PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
        "PeterNeumann+c74f20a3",
        "Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
    ],
)
def test_bad_verifier_keys_are_refused(vkey):
    with pytest.raises(note.NoteError):
        note.parse_verifier_key(vkey)


def test_checkpoint_text_round_trips():
    checkpoint = note.Checkpoint("fxev.local/abc", 12, bytes(range(32)))
    assert checkpoint.text.split("\n")[:2] == ["fxev.local/abc", "12"]
    assert note.parse_checkpoint(checkpoint.text) == checkpoint
    with pytest.raises(note.NoteError):
        note.parse_checkpoint("fxev.local/abc\n012\nAAAA\n")


def test_a_tlog_proof_verifies_offline_with_only_the_key():
    private = Ed25519PrivateKey.from_private_bytes(bytes(32))
    key = note.verifier_key("fxev.local/test", private)
    leaves = [f"leaf {i}".encode() for i in range(11)]
    hashes = [merkle.leaf_hash(x) for x in leaves]
    checkpoint = note.Checkpoint(key.name, 11, naive_root(hashes))
    signed = note.sign(checkpoint.text, key.name, private)
    path = merkle.inclusion_proof(7, 11, list_reader(hashes))
    text = proof.TlogProof(7, tuple(path), signed, leaves[7]).encode()
    parsed = proof.parse(text)
    assert parsed.extra == leaves[7]
    assert proof.verify(parsed, key, parsed.extra) == checkpoint
    with pytest.raises(merkle.ProofError):
        proof.verify(parsed, key, b"leaf 8")


# -- leaves -----------------------------------------------------------------------------


def test_a_leaf_is_canonical_and_decodes():
    leaf = Leaf(3, "2026-09-21T20:00:00Z", "sha256:" + "a" * 64, {"events": ("b" * 64,)})
    data, rows = leaf.encode()
    assert rows is None
    assert data.startswith(b'{"chain":"sha256:')
    assert decode(data) == leaf
    with pytest.raises(LeafError):
        decode(data.replace(b'"revision":3', b'"revision": 3'))


def test_a_leaf_too_big_names_its_rows_list():
    many = tuple(hashlib.sha256(str(i).encode()).hexdigest() for i in range(2000))
    leaf = Leaf(1, "2026-09-21T20:00:00Z", "sha256:" + "a" * 64, {"observations": many})
    data, rows = leaf.encode()
    assert rows is not None and len(data) <= MAX_LEAF and needs_rows_list(data)
    assert decode(data, rows).rows["observations"] == tuple(sorted(many))
    with pytest.raises(LeafError):
        decode(data, rows.replace(many[0].encode(), b"0" * 64))


def test_a_verifier_key_whose_base64_holds_a_plus_parses():
    for seed in range(256):
        key = note.verifier_key(
            "fxev.local/k", Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32)
        )
        if "+" in key.text.split("+", 2)[2]:
            assert note.parse_verifier_key(key.text) == key
            return
    pytest.fail("no seed gave a '+' in the key's base64")


def flipped(data: bytes, at: int = 0) -> bytes:
    changed = bytearray(data)
    changed[at] ^= 1
    return bytes(changed)


def test_every_tile_of_a_tree_checks_and_a_flipped_bit_in_one_it_does_not_read_is_found():
    """The root of 600 leaves reads the level-1 tile and the partial tiles only: a full level-0
    tile or an entry bundle changed goes unseen by it, and :func:`tiles.check_tile` finds it."""
    *_, (files, edge, _) = build_log([600])
    files = dict(files)
    for tile, data in files.items():
        tiles.check_tile(tile, data, tiles.tile_reader(600, files.__getitem__))
    unread = [tiles.Tile(0, 0), tiles.Tile(0, 1), tiles.Tile(-1, 0), tiles.Tile(-1, 1)]
    for tile in [*unread, tiles.Tile(-1, 2, 88)]:
        for at in (0, len(files[tile]) - 1):
            changed = files | {tile: flipped(files[tile], at)}
            read = tiles.tile_reader(600, changed.__getitem__)
            if tile in unread:
                assert merkle.tree_hash(600, read) == edge.root(), tile.path
            with pytest.raises(ValueError, match=tile.path.replace(".", r"\.")):
                tiles.check_tile(tile, changed[tile], read)


def test_a_bundle_with_an_entry_too_many_or_too_few_does_not_check():
    *_, (files, _, leaves) = build_log([300])
    read = tiles.tile_reader(300, files.__getitem__)
    for entries in (leaves[256:299], [*leaves[256:300], b"one more"]):
        with pytest.raises(ValueError, match="entries, not 44"):
            tiles.check_tile(tiles.Tile(-1, 1, 44), tiles.encode_bundle(entries), read)
    with pytest.raises(ValueError, match="bytes, not 8192"):
        tiles.check_tile(tiles.Tile(0, 0), files[tiles.Tile(0, 0)][:-32], read)


def test_unfinished_names_the_partial_tiles_a_grown_log_still_serves():
    """C2SP tlog-tiles' example size, 70,000: its partial tiles at every level, entries first;
    once the log grows past a tile's end, that tile's partial versions are no longer needed."""
    assert tiles.unfinished(70000, 70000) == [
        tiles.Tile(-1, 273, 112),
        tiles.Tile(0, 273, 112),
        tiles.Tile(1, 1, 17),
        tiles.Tile(2, 0, 1),
    ]
    assert tiles.unfinished(300, 600) == [tiles.Tile(1, 0, 1)]
    assert tiles.unfinished(256, 300) == [tiles.Tile(1, 0, 1)]
    assert tiles.unfinished(5, 5) == [tiles.Tile(-1, 0, 5), tiles.Tile(0, 0, 5)]
