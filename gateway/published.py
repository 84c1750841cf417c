"""The published revision as one worker sees it: the pointer, re-checked per request by a stat.

What is per published revision (its ``superseded_por`` map, memoised as-of bodies) is cached
against that revision and dropped when the pointer moves.
"""

from __future__ import annotations

import dataclasses
import os
from collections import OrderedDict
from typing import Any

from builder.tree import POINTER, Tree


@dataclasses.dataclass(frozen=True, slots=True)
class Published:
    revision: int
    ts_commit: str
    superseded_por: dict[str, str]


class PublishedView:
    def __init__(self, tree: Tree, memo_size: int = 1024) -> None:
        self.tree = tree
        self._stat_key: tuple[int, int, int] | None = None
        self._current: Published | None = None
        self._memo: OrderedDict[str, Any] = OrderedDict()
        self._memo_size = memo_size

    def current(self) -> Published | None:
        """The published revision now, or None before the first build."""
        try:
            st = os.stat(self.tree.site / POINTER)
        except FileNotFoundError:
            return None
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        if key != self._stat_key or self._current is None:
            pointer = self.tree.pointer()
            if pointer is None:
                return None
            revision = int(pointer["revision"])
            root = self.tree.root(revision)
            self._current = Published(
                revision, root.ts_commit, self.tree.supersessions(root.supersessions)
            )
            self._stat_key = key
            self._memo.clear()
        return self._current

    def memo_get(self, key: str) -> Any:
        value = self._memo.get(key)
        if value is not None:
            self._memo.move_to_end(key)
        return value

    def memo_put(self, key: str, value: Any) -> None:
        self._memo[key] = value
        if len(self._memo) > self._memo_size:
            self._memo.popitem(last=False)
