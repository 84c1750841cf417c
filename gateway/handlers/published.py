"""The published revision as one worker sees it: the pointer, re-checked per request by a stat.

What is per published revision (its ``superseded_por`` map, memoised as-of bodies, evidence and
the parts of ``/latest`` bodies) is cached against that revision and dropped when the pointer
moves. The memo is bounded in entries and in the bytes of the bodies it holds.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from builder.tree.layout import POINTER
from builder.tree.reader import TreeReader

# How often the requests waiting for the pointer to reach a revision look at it again: one stat
# for all of a worker's waiters; past WAITERS_MAX waiting in a worker, a request waits for none.
POLL_S = 0.05
WAITERS_MAX = 1024


@dataclasses.dataclass(frozen=True, slots=True)
class Published:
    revision: int
    ts_commit: str
    superseded_por: dict[str, str]


class PublishedView:
    def __init__(
        self, tree: TreeReader, memo_size: int = 1024, memo_bytes: int = 128 << 20
    ) -> None:
        self.tree = tree
        self._pointer_path = os.fspath(tree.site / POINTER)  # stat()ed on every request
        self._stat_key: tuple[int, int, int] | None = None
        self._current: Published | None = None
        self._memo: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._memo_size = memo_size
        self._memo_bytes = memo_bytes
        self._memo_held = 0
        self._next_poll: asyncio.Future[Published | None] | None = None
        self._waiters = 0

    def current(self) -> Published | None:
        """The published revision now, or None before the first build."""
        try:
            st = os.stat(self._pointer_path)
        except FileNotFoundError:
            return None
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        if key != self._stat_key or self._current is None:
            pointer = self.tree.pointer()
            if pointer is None:
                return None
            revision = pointer.revision
            root = self.tree.root(revision)
            self._current = Published(
                revision, root.ts_commit, self.tree.supersessions(root.supersessions)
            )
            self._stat_key = key
            self._memo.clear()
            self._memo_held = 0
        return self._current

    def holds(self, looked: Published | None) -> bool:
        """Whether ``looked`` is still what this view holds (and its memo is that revision's):
        no look since has found the pointer moved."""
        return looked is not None and looked is self._current

    async def reached(self, revision: int, within_s: float) -> bool:
        """Whether the published revision reaches ``revision`` within ``within_s`` seconds (the
        event loop serves other requests meanwhile). Every waiter of this worker shares one look
        at the pointer each :data:`POLL_S`; with :data:`WAITERS_MAX` waiting, False at once."""
        current = self.current()
        if current is not None and current.revision >= revision:
            return True
        if self._waiters >= WAITERS_MAX:
            return False
        deadline = time.monotonic() + within_s
        self._waiters += 1
        try:
            while current is None or current.revision < revision:
                if time.monotonic() >= deadline:
                    return False
                # Shielded: a waiter that goes away (its client did) leaves the poll to others.
                current = await asyncio.shield(self._poll())
            return True
        finally:
            self._waiters -= 1

    def _poll(self) -> asyncio.Future[Published | None]:
        """The published revision as the next shared look at the pointer finds it."""
        if self._next_poll is None or self._next_poll.done():
            loop = asyncio.get_running_loop()
            future: asyncio.Future[Published | None] = loop.create_future()

            def look() -> None:
                try:
                    future.set_result(self.current())
                except Exception as error:  # a damaged tree: each waiter's request answers it
                    future.set_exception(error)

            loop.call_later(POLL_S, look)
            self._next_poll = future
        return self._next_poll

    def memo_get(self, key: Hashable) -> Any:
        """What was memoised under ``key`` for the published revision, or None."""
        found = self._memo.get(key)
        if found is None:
            return None
        self._memo.move_to_end(key)
        return found[0]

    def memo_put(self, key: Hashable, value: Any, size: int = 0) -> None:
        """Memoise ``value`` (holding ``size`` bytes of bodies); the least recent go first."""
        previous = self._memo.pop(key, None)
        if previous is not None:
            self._memo_held -= previous[1]
        self._memo[key] = (value, size)
        self._memo_held += size
        while len(self._memo) > self._memo_size or (
            self._memo_held > self._memo_bytes and len(self._memo) > 1
        ):
            _, (_, dropped) = self._memo.popitem(last=False)
            self._memo_held -= dropped
