"""The bucket's layout under ``FXEV_STORE_URL``'s prefix, and the two records only the store has.

    objects/sha256/<ab>/<hex>            the tree's objects, as in the site (content-addressed)
    evidence/<id>.json                   the revision number the site's symbolic link names, as
                                         text (an object store has no links)
    observations/<id>/<R>-<hex>          the site's empty markers
    invalidations/<N>.json               as in the site
    revisions/<R>.record                 one object per revision record (R on 10 digits): the
                                         bytes the site's pack holds for R; a mirror appends them
                                         to its own packs, so packs are never uploaded
    explorer/pages/<sha256>.html         every explorer page, content-addressed: the pages of a
                                         map and the observations' pages (whose bytes change
                                         with the templates, so a name by route would not be
                                         immutable)
    explorer/maps/<sha256>.json          a page map (``explorer/maps/<N>.json`` in the site)
    publications/<sha256>.json           what one ``fxev publish`` added beyond the tree's
                                         records (a ``Publication``)
    PUBLISHED                            the site's pointer plus ``"publication"``: the one key
                                         ever replaced, written last

Everything but ``PUBLISHED`` is written once. A mirror trusts the pointer and verifies the rest
through it: records by the links the reader follows (``builder.tree.reader``), objects and
pages by their names, the publication by the pointer's hash of it, maps, observation pages and
invalidations by the publication's.
"""

from __future__ import annotations

import dataclasses
import hashlib

import orjson

from builder.tree import layout
from builder.tree.reader import TreeCorruptError
from builder.tree.revision import Pointer

POINTER = layout.POINTER
PUBLICATION_FIELD = "publication"


# Keys the store shares with the site: the same path (``builder.tree.layout``).
object_key = layout.object_path
evidence_key = layout.evidence_path
marker_key = layout.marker_path
invalidations_key = layout.invalidations_path


def record_key(revision: int) -> str:
    return f"{layout.REVISIONS}/{revision:010d}.record"


def page_key(sha256: str) -> str:
    return f"{layout.EXPLORER_DIR}/pages/{sha256}.html"


def map_key(sha256: str) -> str:
    return f"{layout.EXPLORER_DIR}/maps/{sha256}.json"


def publication_key(sha256: str) -> str:
    return f"publications/{sha256}.json"


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclasses.dataclass(frozen=True, slots=True)
class Publication:
    """What one ``fxev publish`` of revision ``revision`` added beside the tree's records.

    ``previous`` is the publication this one continues (its observation pages are the ones
    written since it), or None for a *base*: the first publication of a store, or one after the
    explorer's templates changed (``fingerprint``), which lists every observation page the site
    serves. A mirror walks back from the newest publication to the one it already holds.
    """

    revision: int
    previous: str | None
    page_map: str | None  # SHA-256 of the map of ``revision`` (explorer/maps/<sha>.json)
    fingerprint: str | None  # the templates' fingerprint the map names
    observation_pages: dict[str, str]  # "<observation id>.<R>" -> SHA-256 of the page
    invalidations: dict[str, str]  # "<N>" -> SHA-256 of invalidations/<N>.json
    # "<name under log/>" -> SHA-256, for the log files this publication added that no Merkle
    # root pins: the checkpoint, the verifier key, rows lists (none in a store published before)
    log: dict[str, str] = dataclasses.field(default_factory=dict)

    def encode(self) -> bytes:
        return orjson.dumps(dataclasses.asdict(self), option=orjson.OPT_SORT_KEYS)

    @classmethod
    def decode(cls, data: bytes) -> Publication:
        value = orjson.loads(data)
        return cls(
            revision=int(value["revision"]),
            previous=value["previous"],
            page_map=value["page_map"],
            fingerprint=value["fingerprint"],
            observation_pages=dict(value["observation_pages"]),
            invalidations=dict(value["invalidations"]),
            log=dict(value.get("log") or {}),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class StorePointer:
    """The store's ``PUBLISHED``: the site's pointer and the SHA-256 of the publication that
    completes it (a ``Publication``)."""

    site: Pointer
    publication: str

    def encode(self) -> bytes:
        return orjson.dumps({**self.site.fields(), PUBLICATION_FIELD: self.publication})

    @classmethod
    def decode(cls, data: bytes, where: str) -> StorePointer:
        """The pointer in ``data``; a ``TreeCorruptError`` naming ``where`` when it is not one."""
        try:
            value = orjson.loads(data)
            site = Pointer.from_fields(value)
            publication = value.get(PUBLICATION_FIELD)
            if not isinstance(publication, str):
                raise ValueError("no publication")
        except (orjson.JSONDecodeError, ValueError):
            raise TreeCorruptError(f"{where} is not a pointer") from None
        return cls(site, publication)
