"""The static tree's layout (``FXEV_SITE``): every path a reader or writer uses, named once.

PUBLISHED                          {"revision", "ts_commit", "root_sha256", "registry_id"}:
                                   the pointer; ``registry_id`` names the registry the tree
                                   was rendered from (every revision record names it too)
revisions/<K>.pack, <K>.idx        revision records (``revision``), append-only packs of 1,024
                                   revisions and their index (``revlog``)
objects/sha256/<ab>/<hex>          content-addressed: item chunks, tree nodes, lists, maps,
                                   evidence bytes; a file's name is the SHA-256 of its bytes
evidence/<id>.json                 a symbolic link whose target is the number of the revision
                                   whose record holds the evidence's metadata
observations/<id>/<R>-<hex>        an empty marker: the record of revision R holds a new
                                   version of the observation's detail, of SHA-256 <hex>
invalidations/<N>.json             Cache-Tag values the build that published N invalidated
                                   (only when there are some)
explorer/                          the HTML explorer's pages
log/                               the transparency log (``builder.tree.log``): C2SP tlog-tiles
                                   tiles and entry bundles (``tile/``), ``checkpoints/<N>`` (the
                                   signed checkpoint of tree size N, per published revision),
                                   ``checkpoint`` (the newest), ``rows/<N>`` (a leaf's rows list
                                   when it would not fit in the leaf), ``key`` (the verifier key)
build.lock, staging/               the build's lock and its temporary files

Beside the site, ``.<site name>.rebuild`` is where ``fxev build --rebuild`` renders a fresh tree
before exchanging it with the site's (``builder.publish.swap``); it holds the old tree until
that is removed.
"""

from __future__ import annotations

from pathlib import Path

from builder.disk import blobs

POINTER = "PUBLISHED"
REVISIONS = "revisions"
OBJECTS = "objects"
EVIDENCE = "evidence"
OBSERVATIONS = "observations"
INVALIDATIONS = "invalidations"
EXPLORER_DIR = "explorer"
LOG = "log"
LOCK_FILE = "build.lock"
STAGING = "staging"


# The paths of one item, relative to the site. The object store keeps each under the same key
# (``builder.store.keys``), so a path is named here once for both.


def object_path(sha256: str) -> str:
    return f"{OBJECTS}/{blobs.address(sha256)}"


def evidence_path(evidence_id: str) -> str:
    return f"{EVIDENCE}/{evidence_id}.json"


def marker_name(revision: int, sha256: str) -> str:
    """``<R>-<hex>``: R on ten digits, so a folder's names sort by revision."""
    return f"{revision:010d}-{sha256}"


def marker_of(name: str) -> tuple[int, str]:
    """(revision, SHA-256) of a marker's name."""
    return int(name[:10]), name[11:]


def marker_path(observation_id: str, revision: int, sha256: str) -> str:
    return f"{OBSERVATIONS}/{observation_id}/{marker_name(revision, sha256)}"


def invalidations_path(revision: int) -> str:
    return f"{INVALIDATIONS}/{revision}.json"


def staging_dir(site: Path) -> Path:
    return site / STAGING


def rebuild_dir(site: Path) -> Path:
    """The sibling folder a rebuild renders into (``site`` absolute and resolved)."""
    return site.parent / f".{site.name}.rebuild"
