"""The log ``fxev build`` writes, over more than two tiles of revisions built in uneven batches,
against a naive RFC 6962 computation over the registry's own leaves (docs/transparency.md)."""

from __future__ import annotations

import random
from pathlib import Path

from builder.publish import logkey
from builder.publish.build import Builder
from builder.publish.leaves import revision_leaf
from builder.publish.log import LogSigner
from builder.publish.writer import TreeWriter
from builder.tlog import merkle, note, tiles
from builder.tree.log import LogReader
from tests.support.merkle import naive_root
from tests.support.synth import Synth


def test_a_log_built_in_uneven_batches_matches_a_naive_root_at_every_size(tmp_path: Path) -> None:
    home, site = tmp_path / "home", tmp_path / "site"
    rng = random.Random(6962)
    leaves: list[bytes] = []
    sizes: list[int] = []
    with Synth(home, seed=5, durable=False) as synth:
        while synth.revisions < 560:
            synth.advance(rng.choice((1, 2, 7, 60, 130)))
            stores = synth.stores
            Builder(stores.registry, stores.blobs, TreeWriter(site), LogSigner(home)).build()
            size = synth.revisions
            leaves += [
                revision_leaf(stores.registry, n).encode()[0]
                for n in range(len(leaves) + 1, size + 1)
            ]
            key = note.parse_verifier_key(
                logkey.verifier_key(home, logkey.default_origin(stores.registry.registry_id())).text
            )
            log = LogReader(site)
            checkpoint = note.parse_checkpoint(note.open_note(log.checkpoint(size) or "", key))
            hashes = [merkle.leaf_hash(x) for x in leaves]
            assert checkpoint.size == size
            assert checkpoint.root == naive_root(hashes)
            assert merkle.tree_hash(size, log.hash_reader(size)) == checkpoint.root
            for tile in tiles.tiles_of(size, -1):
                first = tile.index * tiles.WIDTH
                assert (
                    tiles.decode_bundle(log.read_tile(tile)) == leaves[first : first + tile.width]
                )
            # On disk, as files a static host serves: the partial tiles of every size signed
            # whose tile is not full yet (C2SP tlog-tiles), and no partial tile of a full one.
            sizes.append(size)
            kept = set()
            for level in (-1, 0, 1):
                growing = tiles.edge_tile(size, level)
                for signed in sizes:
                    tile = tiles.edge_tile(signed, level)
                    if tile is not None and growing is not None and tile.index == growing.index:
                        kept.add(tile.path)
            on_disk = {
                str(p.relative_to(site / "log")) for p in (site / "log" / "tile").rglob("*.p/*")
            }
            assert on_disk == kept, (size, sorted(on_disk ^ kept))
