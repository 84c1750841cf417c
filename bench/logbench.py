"""The transparency log's figure in ``make bench``: ``fxev verify``'s log checks of one
observation, timed in process over the tree's files (the HTTP round trips a real run adds are
the gateway benchmark's business): the checkpoint's signature, the leaves of every revision the
observation's record involves, their inclusion proofs from the tiles, and what they commit to.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import orjson

from builder.tlog import note
from builder.tree.layout import LOG
from builder.tree.reader import TreeReader
from verifier.logcheck import LogOptions, log_checks


class SiteLog:
    """What ``verifier.client.ApiClient.log`` answers, read from a site's ``log/``."""

    def __init__(self, site: Path) -> None:
        self.root = site / LOG

    def log(self, path: str) -> bytes | None:
        try:
            return (self.root / path).read_bytes()
        except FileNotFoundError:
            return None


def log_verify(site: Path, samples: int, rng: random.Random) -> list[float]:
    """Milliseconds of the log checks of ``samples`` observations of random revisions."""
    tree = TreeReader(site)
    published = tree.published_revision()
    key_text = (site / LOG / "key").read_text() if (site / LOG / "key").exists() else None
    if published is None or key_text is None:
        return []
    options = LogOptions(note.parse_verifier_key(key_text))
    timings: list[float] = []
    attempts = 0
    while len(timings) < samples and attempts < samples * 20:
        attempts += 1
        details = tree.record(rng.randint(1, published)).details
        if not details:
            continue
        prefix = tree.detail(sorted(details)[0], published)
        if prefix is None:
            continue
        detail = orjson.loads(prefix + b"}")
        meta = tree.evidence_meta(detail["observacion"]["evidencia_id"], published)
        if meta is None:
            continue
        began = time.perf_counter()
        checks = log_checks(SiteLog(site), detail, meta.sha256, options)  # type: ignore[arg-type]
        timings.append((time.perf_counter() - began) * 1000)
        failed = [c.message for c in checks if c.status == "fail"]
        if failed:
            raise RuntimeError(f"the log checks failed on a benchmark tree: {failed}")
    return timings
