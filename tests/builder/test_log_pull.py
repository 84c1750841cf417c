"""``fxev mirror``'s log step (``builder.store.logsync.pull_log``) over a log of 600 leaves, the
store a dict: the full tiles and entry bundles, which the checkpoint's root does not read, are
checked too, and one bit changed in any of them places nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from builder.core.errors import IntegrityError
from builder.store.logsync import pull_log
from builder.tlog import merkle, note, tiles

ORIGIN = "example.org/fxev-test"
SIZE = 600


def store_of_a_log() -> dict[str, bytes]:
    leaves = [f"leaf {i}".encode() for i in range(SIZE)]
    edge, files = tiles.append(tiles.Edge.empty(), leaves, [merkle.leaf_hash(x) for x in leaves])
    private = Ed25519PrivateKey.generate()
    signed = note.sign(note.Checkpoint(ORIGIN, SIZE, edge.root()).text, ORIGIN, private)
    store = {f"log/{tile.path}": data for tile, data in files.items()}
    store[f"log/checkpoints/{SIZE}"] = signed.encode()
    store["log/key"] = (note.verifier_key(ORIGIN, private).text + "\n").encode()
    return store


def pull(tmp_path: Path, store: dict[str, bytes]) -> bool:
    site = tmp_path / "site"
    staging = tmp_path / "staging"
    staging.mkdir(exist_ok=True)
    return pull_log(site, 0, SIZE, store.get, staging, {})


def test_a_whole_log_is_placed_file_for_file(tmp_path: Path) -> None:
    store = store_of_a_log()
    assert pull(tmp_path, store)
    for key, data in store.items():
        assert (tmp_path / "site" / key).read_bytes() == data, key


@pytest.mark.parametrize(
    "path", ["tile/0/000", "tile/0/001", "tile/entries/000", "tile/entries/001"]
)
def test_a_full_tile_or_bundle_changed_in_the_store_places_nothing(
    tmp_path: Path, path: str
) -> None:
    store = store_of_a_log()
    data = bytearray(store[f"log/{path}"])
    data[100] ^= 1
    store[f"log/{path}"] = bytes(data)
    with pytest.raises(IntegrityError, match=f"its checkpoint of {SIZE} signs: {path}"):
        pull(tmp_path, store)
    assert not (tmp_path / "site" / "log").exists()
