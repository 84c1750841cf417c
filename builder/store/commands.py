"""``fxev publish`` and ``fxev mirror`` as ``builder.cli`` calls them: settings in, a result out."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from typing import Any

from builder.core.errors import Conflict
from builder.core.settings import Settings
from builder.registry.store import Registry
from builder.store.mirror import follow, mirror
from builder.store.publish import publish
from builder.store.s3 import ObjectStore
from builder.tree.reader import TreeReader


def object_store(settings: Settings) -> ObjectStore:
    return ObjectStore(settings.store_url, settings.s3_endpoint)


def run_publish(settings: Settings) -> dict[str, Any]:
    """Publish the site's published revision; the site must be this home's registry's tree."""
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
        return publish(settings.site, store).to_json()


def run_mirror(settings: Settings, following: bool, emit: Callable[[dict[str, Any]], None]) -> None:
    with closing(object_store(settings)) as store:
        if following:
            follow(settings.site, store, settings.mirror_interval_s, emit)
        else:
            emit(mirror(settings.site, store).to_json())
