"""``fxev publish`` and ``fxev mirror`` as ``builder.commands`` calls them: settings in, a
result out."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import closing
from typing import Any

from builder.core.errors import Conflict
from builder.core.settings import Settings
from builder.objstore.s3 import ObjectStore
from builder.registry.store import Registry
from builder.store.mirror import follow, mirror, to_stderr
from builder.store.mirrors import MirrorWait, Reporter, await_mirrors
from builder.store.publish import PublishResult, publish
from builder.tree.reader import TreeReader


def object_store(settings: Settings) -> ObjectStore:
    return ObjectStore(settings.store_url, settings.s3_endpoint)


@dataclasses.dataclass(frozen=True, slots=True)
class PublishReport:
    """``fxev publish``'s line: what was uploaded and, in fleet mode, what the mirrors did."""

    result: PublishResult
    mirrors: MirrorWait | None  # None: one host, no mirrors to wait for

    def to_json(self) -> dict[str, Any]:
        found = self.result.to_json()
        return found if self.mirrors is None else found | self.mirrors.to_json()


def run_publish(settings: Settings, repair: bool = False) -> PublishReport:
    """Publish the site's published revision; the site must be this home's registry's tree.
    ``repair``: check every key of the tree in the store, not only the new ones."""
    store = object_store(settings)  # FXEV_STORE_URL checked before anything is read
    registry = Registry.open(settings.home)
    try:
        registry_id = registry.registry_id()
    finally:
        registry.close()
    pointer = TreeReader(settings.site).pointer()
    held = None if pointer is None else pointer.registry_id
    if held != registry_id:
        raise Conflict(
            f"{settings.site} holds a tree of registry {held}, not of this"
            f" home's registry {registry_id} ({settings.home}); fxev build first (--rebuild if"
            " it refuses the site)"
        )
    with closing(store):
        result = publish(settings.site, store, repair)
    mirrors = None
    if settings.redis_url:  # fleet mode: return once the live mirrors serve it
        mirrors = await_mirrors(
            settings.redis_url, result.published_revision, settings.mirror_interval_s, to_stderr
        )
    return PublishReport(result, mirrors)


def run_mirror(settings: Settings, following: bool, emit: Callable[[dict[str, Any]], None]) -> None:
    reporter = None
    if settings.redis_url:  # fleet mode: tell fxev publish which revision this site serves
        reporter = Reporter(
            settings.redis_url, settings.site, settings.mirror_interval_s, to_stderr
        )
    try:
        with closing(object_store(settings)) as store:
            if following:
                follow(settings.site, store, settings.mirror_interval_s, emit, report=reporter)
            else:
                result = mirror(settings.site, store)
                if reporter is not None:
                    reporter(result.published_revision)
                emit(result.to_json())
    finally:
        if reporter is not None:
            reporter.close()
