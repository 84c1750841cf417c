"""The explorer's pages in the site, and which of them a published revision serves.

The explorer is served for the revision ``PUBLISHED`` names, like the API: its pages for
revision N are written before the pointer says N, and are found *through* N, so the one atomic
rename of the pointer switches the API and the explorer together. Layout under
``FXEV_SITE/explorer/`` (``builder.publish.explorer`` writes it):

    maps/<N>.json                  the page map of revision N: {"revision", "fingerprint",
                                   "pages": {route: [key, sha256]}} for every page but the
                                   observations' (the home, the series, their years and
                                   calendars, the revision log)
    pages/<sha256>.html            a page a map names, content-addressed
    observaciones/<id>.<R>.html    the page of the observation's detail as revision R wrote it
                                   (the tree's marker ``observations/<id>/<R>-<hex>``); never
                                   changes but for a new template

A route is the page's path as the gateway knows it: ``index.html``, ``serie/<s>/index.html``,
``serie/<s>/<year>.html``, ``cobertura/<s>/<year>.html``, ``revisiones/<n>.html``,
``revisiones/index.html``, and ``observacion/<id>.html``, whose page at N is the one of the
detail version the API serves at N. Once the pointer has moved, the build removes what the new
map does not name (``maps/`` and ``pages/`` hold one revision's worth): a reader that finds a
page missing asks the pointer again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path
from typing import Any

import orjson

from builder.tree.layout import EXPLORER_DIR
from builder.tree.reader import TreeCorruptError, TreeReader
from builder.tree.revlog import read_file

MAPS = "maps"
PAGES = "pages"
OBSERVATION_PAGES = "observaciones"
ENTRIES = (MAPS, PAGES, OBSERVATION_PAGES)  # anything else under explorer/ is swept
OBSERVATION_ROUTE = "observacion/"


def explorer_dir(site: Path) -> Path:
    return site / EXPLORER_DIR


def map_path(site: Path, revision: int) -> Path:
    return site / EXPLORER_DIR / MAPS / f"{revision}.json"


def page_path(site: Path, sha256: str) -> Path:
    return site / EXPLORER_DIR / PAGES / f"{sha256}.html"


def observation_page_path(site: Path, observation_id: str, version: int) -> Path:
    return site / EXPLORER_DIR / OBSERVATION_PAGES / f"{observation_id}.{version}.html"


@dataclasses.dataclass(frozen=True, slots=True)
class PageMap:
    """What the explorer serves at ``revision``: route -> (key it was drawn from, SHA-256)."""

    revision: int
    fingerprint: str
    pages: dict[str, tuple[str, str]]

    def encode(self) -> bytes:
        value: dict[str, Any] = {
            "fingerprint": self.fingerprint,
            "pages": {route: list(entry) for route, entry in self.pages.items()},
            "revision": self.revision,
        }
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)

    @classmethod
    def decode(cls, data: bytes) -> PageMap:
        value = orjson.loads(data)
        pages = {route: (key, sha256) for route, (key, sha256) in value["pages"].items()}
        return cls(int(value["revision"]), value["fingerprint"], pages)


class ExplorerReader:
    """The explorer's pages as served at a revision. A page missing (None) may mean that the
    pointer has just moved and the build swept it: ask the pointer again."""

    def __init__(self, tree: TreeReader) -> None:
        self.tree = tree
        self.site = tree.site
        self._maps: dict[int, tuple[tuple[int, int, int], PageMap]] = {}

    def page_map(self, revision: int) -> PageMap | None:
        """The map of ``revision``, re-read when its file changed (a new template)."""
        path = map_path(self.site, revision)
        try:
            st = os.stat(path)
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
            cached = self._maps.get(revision)
            if cached is not None and cached[0] == stamp:
                return cached[1]
            page_map = PageMap.decode(read_file(os.fspath(path)))
        except FileNotFoundError:
            return None
        if page_map.revision != revision:
            raise TreeCorruptError(f"explorer map {revision} names revision {page_map.revision}")
        self._maps = {revision: (stamp, page_map)}  # one revision is served at a time
        return page_map

    def page(self, route: str, revision: int) -> bytes | None:
        """The bytes of ``route`` at ``revision`` (``observacion/<id>.html`` too); None when it
        has none."""
        if route.startswith(OBSERVATION_ROUTE) and route.endswith(".html"):
            return self.observation_page(route[len(OBSERVATION_ROUTE) : -len(".html")], revision)
        return self.map_page(route, revision)

    def map_page(self, route: str, revision: int) -> bytes | None:
        """A page of the map of ``revision``, checked against it; None when absent."""
        page_map = self.page_map(revision)
        entry = None if page_map is None else page_map.pages.get(route)
        if entry is None:
            return None
        try:
            data = read_file(os.fspath(page_path(self.site, entry[1])))
        except FileNotFoundError:
            if self.tree.published_revision() == revision:  # not swept by a newer build
                raise TreeCorruptError(
                    f"explorer page {route} of revision {revision} is missing"
                ) from None
            return None
        if hashlib.sha256(data).hexdigest() != entry[1]:
            raise TreeCorruptError(f"explorer page {route} does not match its map")
        return data

    def observation_page(self, observation_id: str, revision: int) -> bytes | None:
        """The page of the observation's detail as the API serves it at ``revision``."""
        versions = [v for v, _ in self.tree.detail_versions(observation_id) if v <= revision]
        if not versions:
            return None
        try:
            return read_file(
                os.fspath(observation_page_path(self.site, observation_id, versions[-1]))
            )
        except FileNotFoundError:
            return None
