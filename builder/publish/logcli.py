"""``fxev log key`` and ``fxev log proof``: the operator's side of the transparency log.

``log key`` prints the verifier key consumers pin (``<origin>+<key id>+<key>``), creating the
signing key on first use, and refuses (exit 1) when the published tree's log names another key
(a home that lost ``log.key``, or ``FXEV_LOG_ORIGIN`` changed). ``log proof OBSERVACION_ID``
prints, from the published tree, a C2SP ``tlog-proof`` of the leaf of the revision that created
the observation, its leaf in ``extra``: with only the verifier key, anyone checks it offline.
Their arguments are declared in :mod:`builder.cli`.
"""

from __future__ import annotations

import argparse
import sys

import orjson

from builder.core.errors import NotFound, UsageError
from builder.core.settings import Settings
from builder.core.vocabulary import UUID
from builder.publish import logkey
from builder.publish.log import LogSigner, NotTheLogsKey
from builder.registry.store import REGISTRY_FILE, Registry
from builder.tlog import merkle
from builder.tlog.proof import TlogProof
from builder.tree.layout import POINTER
from builder.tree.log import LogReader
from builder.tree.reader import TreeReader


def log_signer(settings: Settings) -> LogSigner:
    return LogSigner(settings.home, settings.log_origin)


def origin_of(settings: Settings) -> str:
    if settings.log_origin:
        return settings.log_origin
    if not (settings.home / REGISTRY_FILE).exists():
        raise NotFound(f"no registry at {settings.home.absolute()} to name the log after")
    registry = Registry.open(settings.home)
    try:
        return logkey.default_origin(registry.registry_id())
    finally:
        registry.close()


def cmd_log_key(args: argparse.Namespace, settings: Settings) -> int:
    if not settings.home.is_dir():
        # The signing key belongs in the operator's home; a mistyped FXEV_HOME must not become a
        # new home holding only a key no build will ever sign with.
        raise NotFound(f"no home at {settings.home.absolute()} to keep the log's key in")
    theirs = LogReader(settings.site).key()
    ours = logkey.mismatched_key(settings.home, lambda: origin_of(settings), theirs)
    if ours is not None:
        assert theirs is not None
        raise NotTheLogsKey(
            f"the published log ({settings.site.absolute()}) is signed by {theirs.strip()}, this"
            f" home's key is {ours} ({settings.home.absolute() / logkey.KEY_FILE}); restore"
            " log.key (and FXEV_LOG_ORIGIN) before announcing a key: nothing published verifies"
            " under another"
        )
    key = logkey.verifier_key(settings.home, origin_of(settings))
    sys.stdout.write(key.text + "\n")
    return 0


def cmd_log_proof(args: argparse.Namespace, settings: Settings) -> int:
    if not (settings.site / POINTER).exists():
        raise NotFound(f"no published tree at {settings.site.absolute()} (set FXEV_SITE)")
    observation_id = args.observacion_id.lower()  # as the API reads an id
    if not UUID.fullmatch(observation_id):
        raise UsageError(f"{args.observacion_id!r} is not an observation id (a 36-character UUID)")
    tree = TreeReader(settings.site)
    size = tree.published_revision() or 0
    prefix = tree.detail(observation_id, size)
    if prefix is None:
        raise NotFound(f"no observation {observation_id} in the published tree")
    revision = int(orjson.loads(prefix + b"}")["observacion"]["revision_creada"])
    log = LogReader(settings.site)
    checkpoint = log.checkpoint(size)
    if checkpoint is None:
        raise NotFound(f"the published tree has no log checkpoint of size {size}: fxev build")
    leaf = log.leaf(revision - 1, size)
    path = merkle.inclusion_proof(revision - 1, size, log.hash_reader(size))
    sys.stdout.write(TlogProof(revision - 1, tuple(path), checkpoint, leaf).encode())
    return 0
