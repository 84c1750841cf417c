"""``fxev build``'s log step: append the new revisions' leaves, check, sign, write the checkpoint.

Before the build renders anything, the leaves of every revision it publishes are appended to the
tree's log (``builder.tree.log``) in memory (:meth:`LogWriter.prepare`): only the right edge's
tiles change (full tiles completed now, and the new partial tile of each level), so the work is
proportional to the new leaves. The tree of the new size must extend the last checkpoint this
home's key signed (``log.signed``), and the newest checkpoint of this key that the tree (or the
tree a rebuild replaces) publishes: a consistency proof from the tiles is checked against each,
and a tree that does not extend it (a registry rewritten, then rebuilt) is refused: nothing is
rendered or signed, the pointer does not move. Once the revisions are rendered
(:meth:`LogWriter.commit`), the tiles are written and the checkpoint is signed, remembered in
the home, and written as ``log/checkpoints/<N>``; once
the pointer names ``N``, ``log/checkpoint`` is replaced by it. The leaves taken from the tiles
must end in the registry's own leaf of the published revision, whose chain hash commits to all
before it: a registry rewritten and rehashed under a published log is refused the same way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable
from pathlib import Path

from builder.core.errors import ConfigurationError, Conflict
from builder.disk.durable import replace_durably, write_once
from builder.publish import logkey
from builder.publish.writer import TreeWriter
from builder.tlog import merkle, note, tiles
from builder.tlog.leaf import Leaf
from builder.tree.log import CHECKPOINT, CHECKPOINTS, KEY, ROWS, LogReader


@dataclasses.dataclass(frozen=True, slots=True)
class LogSigner:
    """Where the key lives (``FXEV_HOME``) and the log's origin (None: from the registry id);
    ``replaced``: the site a ``--rebuild`` renders a fresh tree for, whose log the key may have
    signed."""

    home: Path
    origin: str | None = None
    replaced: Path | None = None


class KeyChanged(Conflict):
    """The home's signing key is not the one the tree's log is signed with: refused (exit 1)."""

    command = "build"


class NotTheLogsKey(Conflict):
    """``fxev log key``: the home's key (or its lack) is not the published log's; nothing is
    printed or made (exit 1)."""

    command = "log key"


class HistoryRewritten(Conflict):
    """The tree to sign does not extend the last checkpoint signed: refused (exit 1)."""

    command = "build"


class SigningRecordLost(Conflict):
    """``log.signed`` is missing beside a key that may have signed, and no published checkpoint
    of that key stands in for it: nothing is signed (exit 1), since what it must extend is
    unknown."""

    command = "build"


class RowCheck:
    """Every registry row a build reads from a revision the published log holds is checked
    against it first: the revision's leaf, made again from the registry's rows, must be the
    log's. A row changed in place under a published revision (no chain rehashed) would
    otherwise be rendered, and signed over, by the next build that reads it."""

    def __init__(self, reader: LogReader, size: int, leaf: Callable[[int], Leaf]) -> None:
        self.reader = reader
        self.size = size
        self.leaf = leaf
        self.checked: set[int] = set()

    def __call__(self, revision: int) -> None:
        if revision > self.size or revision in self.checked:
            return
        self.checked.add(revision)  # first: making the leaf reads the revision's rows
        if self.reader.leaf(revision - 1, self.size) != self.leaf(revision).encode()[0]:
            raise HistoryRewritten(
                f"refusing to build: the rows of revision {revision} in the registry are not"
                " the ones the log holds (history rewritten); nothing is published"
            )


@dataclasses.dataclass(frozen=True, slots=True)
class Extension:
    """The log grown to ``size`` in memory and checked to extend every checkpoint the key
    signed: what :meth:`LogWriter.commit` writes and signs once the revisions are rendered."""

    size: int
    start: int  # the size it grew from
    root: bytes
    files: dict[tiles.Tile, bytes]  # the tiles and entry bundles to write
    rows: dict[int, bytes]  # the row lists published beside their leaves, by revision
    origin: str
    seen: str | None  # log.signed as the check read it (None: missing, or no key yet)


class LogWriter:
    def __init__(self, tree: TreeWriter, signer: LogSigner) -> None:
        self.tree = tree
        self.signer = signer
        self.reader = LogReader(tree.site)

    def check_key(self, registry_id: str | None) -> None:
        """Refuse, before anything is rendered, to sign a tree's log with another key than the
        one its ``log/key`` names (consumers pinned that one): a home that lost ``log.key``
        would make a new key, and ``FXEV_LOG_ORIGIN`` changed names another."""
        theirs = self.reader.key()
        home = self.signer.home
        origin = self.signer.origin
        ours = logkey.mismatched_key(
            home, lambda: origin or logkey.default_origin(registry_id), theirs
        )
        if ours is not None:
            assert theirs is not None
            raise KeyChanged(
                f"refusing to sign: the tree's log is signed by {theirs.strip()}, this home's key"
                f" is {ours} ({home / logkey.KEY_FILE}); restore log.key and log.signed, or, to"
                " start a new log under a new key, move log.signed away and run"
                " fxev build --rebuild"
            )

    def row_check(self, published: int, leaf: Callable[[int], Leaf]) -> RowCheck | None:
        """The check of rows read from revisions up to ``published``, when its log is whole."""
        if published and self.reader.checkpoint(published) is not None:
            return RowCheck(self.reader, published, leaf)
        return None

    def prepare(
        self, head: int, published: int, registry_id: str | None, leaf: Callable[[int], Leaf]
    ) -> Extension | None:
        """The leaves up to ``head`` appended in memory, and the tree of that size checked to
        extend what the key signed, before the build renders anything: a refused build leaves
        no revision, tile or row list that a later build of another registry would take for a
        killed build's work. None when that size is signed already."""
        start, edge = self._start(published)
        if start == head and self.reader.checkpoint(head) is not None:
            return None
        if start:
            self._check_reused(start, leaf(start))
        data, hashes, rows = [], [], {}
        for number in range(start + 1, head + 1):
            encoded, listed = leaf(number).encode()
            if listed is not None:
                rows[number] = listed
            data.append(encoded)
            hashes.append(merkle.leaf_hash(encoded))
        edge, files = tiles.append(edge, data, hashes)
        origin = self.signer.origin or logkey.default_origin(registry_id)
        root = edge.root()
        seen = self._check_signed_before(head, root, files, origin)
        return Extension(head, start, root, files, rows, origin, seen)

    def commit(self, extension: Extension) -> None:
        """Write the extension's row lists and tiles, and sign its size: checked again first
        if ``log.signed`` changed since :meth:`prepare` (another build of this home signed
        meanwhile, on another site)."""
        if logkey.last_signed(self.signer.home) != extension.seen:
            ext = extension
            self._check_signed_before(ext.size, ext.root, ext.files, ext.origin)
        for number, listed in extension.rows.items():
            self._write(f"{ROWS}/{number}", listed)
        for tile, content in extension.files.items():
            self._write(tile.path, content)
        key = self._sign(extension)
        if extension.start == 0 and self.signer.replaced is not None:
            self._keep_signed(self.signer.replaced, extension.size, key)

    def _keep_signed(self, replaced: Path, size: int, key: note.VerifierKey) -> None:
        """A rebuild writes the log afresh, at ``size`` alone. The checkpoints the key signed
        in the tree it replaces stay, with their partial tiles (C2SP ``tlog-tiles``: served
        until their tile is full), when the newest of them is this key's and the fresh tree
        has its root: each older one was checked to extend into it when it was signed."""
        old = LogReader(replaced)
        try:
            newest = note.parse_checkpoint(note.open_note((old.root / CHECKPOINT).read_text(), key))
        except (OSError, UnicodeDecodeError, note.NoteError):
            return
        if not 0 < newest.size <= size:
            return
        if newest.root != merkle.tree_hash(newest.size, self.reader.hash_reader(newest.size)):
            return
        try:
            names = os.listdir(old.root / CHECKPOINTS)
        except OSError:
            return
        sizes = sorted(int(n) for n in names if n.isdigit() and n == str(int(n)))
        sizes = [n for n in sizes if 0 < n <= newest.size]
        kept = {tile for n in sizes for tile in tiles.unfinished(n, size)}
        for tile in sorted(kept, key=lambda t: (t.level, t.index, t.width)):
            self._write(tile.path, self.reader.read_tile(tile))
        for n in sizes:
            try:
                signed = (old.root / CHECKPOINTS / str(n)).read_bytes()
            except OSError:  # unreadable: that checkpoint is not kept
                continue
            self._write(f"{CHECKPOINTS}/{n}", signed)

    def _check_reused(self, start: int, ours: Leaf) -> None:
        """The leaves taken from the tiles end in revision ``start``'s, which must still be the
        registry's: its chain hash commits to every revision before it. A registry rewritten
        and rehashed (its own check then passes) differs there, and is refused."""
        if self.reader.leaf(start - 1, start) != ours.encode()[0]:
            raise HistoryRewritten(
                f"refusing to sign: revision {start} in the registry is not the one the log holds"
                " (history rewritten); nothing is published"
            )

    def _start(self, published: int) -> tuple[int, tiles.Edge]:
        """The size to append from: the published one when its log is whole, else 0 (a tree
        rendered before the log, or whose log is gone: it is written again from the start)."""
        if published and self.reader.checkpoint(published) is not None:
            try:
                return published, self.reader.edge(published)
            except (FileNotFoundError, ValueError):
                pass
        return 0, tiles.Edge.empty()

    def _check_signed_before(
        self, size: int, root: bytes, files: dict[tiles.Tile, bytes], origin: str
    ) -> str | None:
        """Refuse a tree of ``size`` and ``root`` (``files`` over the tree's tiles) that does not
        extend every checkpoint the key signed, as far as ``log.signed`` and the published logs
        tell; ``log.signed`` as read. A home without a key is not checked, and no key is made
        here (a build that fails before it signs leaves none): the key made to sign has signed
        nothing."""
        home = self.signer.home
        if not (home / logkey.KEY_FILE).exists():
            return None
        key = logkey.verifier_key(home, origin)
        remembered = logkey.last_signed(home)
        published = self._published_under(key)
        if remembered is None and not published:
            memory = home / logkey.SIGNED_FILE
            raise SigningRecordLost(
                f"refusing to sign: {memory}, the record of what this key signed, is missing and"
                " no published log signed by it is here to stand in; restore it from the home's"
                " backup, or copy the published log/checkpoint to it (if this key never signed a"
                " checkpoint, create it empty)"
            )
        signed_before = published
        if remembered not in (None, logkey.NOTHING_SIGNED):
            signed_before = [self._opened(remembered, key), *published]

        def read_tile(tile: tiles.Tile) -> bytes:  # the new tiles over the tree's
            return files[tile] if tile in files else self.reader.read_tile(tile)

        read = tiles.tile_reader(size, read_tile)
        for last in dict.fromkeys(signed_before):  # each once: the same one, as a rule
            self._check_extends(last, size, root, read)
        return remembered

    def _sign(self, extension: Extension) -> note.VerifierKey:
        """Sign the checkpoint of the extension's size (checked by :meth:`prepare`); the key."""
        home, origin, size = self.signer.home, extension.origin, extension.size
        private = logkey.load_or_create(home)
        key = logkey.verifier_key(home, origin)
        signed = note.sign(note.Checkpoint(origin, size, extension.root).text, origin, private)
        logkey.remember_signed(home, signed)
        self._write(f"{CHECKPOINTS}/{size}", signed.encode(), replace=True)
        if self.reader.key() != key.text + "\n":  # once per tree: it never changes after
            self._write(KEY, (key.text + "\n").encode(), replace=True)
        return key

    def _published_under(self, key: note.VerifierKey) -> list[note.Checkpoint]:
        """The checkpoints ``key`` signed that this tree, and the one a rebuild replaces,
        publish as their newest. ``log.signed`` is the home's memory of what the key signed,
        not the only one: emptied, lost, or restored from an older backup, it would let a
        rewritten registry be signed; a published checkpoint of the key still holds the new log
        to it (a new log takes a new key)."""
        sites = [self.tree.site, *([self.signer.replaced] if self.signer.replaced else [])]
        found = []
        for site in sites:
            try:
                published = (LogReader(site).root / CHECKPOINT).read_text()
                found.append(note.parse_checkpoint(note.open_note(published, key)))
            except (OSError, UnicodeDecodeError, note.NoteError):
                continue
        return found

    def _opened(self, remembered: str, key: note.VerifierKey) -> note.Checkpoint:
        """The checkpoint ``log.signed`` holds, opened with this home's ``key``."""
        try:
            return note.parse_checkpoint(note.open_note(remembered, key))
        except note.NoteError as error:
            home = self.signer.home / logkey.SIGNED_FILE
            origin = remembered.split("\n", 1)[0][:80]
            raise HistoryRewritten(
                f"{home} holds a checkpoint of {origin!r} this key ({key.name!r}) does not open:"
                f" {error}; the log's origin (FXEV_LOG_ORIGIN) or key changed, or the file is"
                " damaged (restore it from the backup of the home)"
            ) from None

    def _check_extends(
        self, last: note.Checkpoint, size: int, root: bytes, read: merkle.HashReader
    ) -> None:
        if last.size > size:
            raise HistoryRewritten(
                f"refusing to sign a log of {size} revisions: this key signed {last.size} already"
                " (history rewritten?)"
            )
        proof = merkle.consistency_proof(last.size, size, read)
        try:
            merkle.verify_consistency(last.size, size, last.root, root, proof)
        except merkle.ProofError:
            raise HistoryRewritten(
                f"refusing to sign: the log of {size} revisions does not extend the checkpoint of"
                f" {last.size} this key signed (history rewritten)"
            ) from None

    def finish(self, size: int, previous: int) -> None:
        """Once the pointer names ``size``: ``log/checkpoint`` becomes its checkpoint, and the
        partial tiles of the tiles now full are pruned."""
        signed = self.reader.checkpoint(size)
        if signed is None:
            raise ConfigurationError(f"no checkpoint of size {size} was written")
        self._write(CHECKPOINT, signed.encode(), replace=True)
        prune_partials(self.reader.root, previous, size)

    def catch_up(self, size: int) -> None:
        """:meth:`finish` for a build killed after the pointer named ``size`` and before it
        finished (``log/checkpoint`` still the size published before): pruning from 0 removes
        what that build would have, since earlier builds pruned the rest. A no-op when
        ``log/checkpoint`` is ``size``'s (or the log holds no checkpoint of it)."""
        signed = self.reader.checkpoint(size)
        try:
            current = (self.reader.root / CHECKPOINT).read_text()
        except FileNotFoundError:
            current = None
        if signed is not None and current != signed:
            self.finish(size, 0)

    def _write(self, relative: str, data: bytes, replace: bool = False) -> None:
        path = self.reader.root / relative
        if replace:
            replace_durably(path, data, staging=self.tree.staging)
        else:
            write_once(path, data, staging=self.tree.staging)


def prune_partials(root: Path, old: int, new: int) -> None:
    """Remove the partial tiles that growing from ``old`` to ``new`` leaves behind a full tile
    (C2SP ``tlog-tiles``: a log must serve the partial tiles of every size it produced a
    checkpoint for, and may delete one once its full tile is available). The partial tiles of
    the tile still growing are all kept, one per checkpoint, so a plain static host of ``log/``
    serves every checkpoint's tiles; the log's disk grows with its leaves plus, per level, the
    widths of one unfinished tile."""
    for level in (-1, *range(tiles.levels(new))):
        shift = tiles.HEIGHT * max(level, 0)
        first, last = (old >> shift) // tiles.WIDTH, (new >> shift) // tiles.WIDTH
        for index in range(first, last):  # full at ``new``
            full = root / tiles.Tile(level, index).path
            folder = full.parent / (full.name + ".p")
            if not folder.is_dir():
                continue
            for name in os.listdir(folder):
                (folder / name).unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                folder.rmdir()
