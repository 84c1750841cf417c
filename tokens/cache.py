"""Token checks answered from memory while the token file has not changed (the gateway's path).

:meth:`TokenStore.check` reads the file on every call (a SELECT, a row turned into a record, the
expiry computed in Lima). :class:`CachedTokenCheck` keeps what that read found, per token hash,
and throws it all away the moment the file's change counter moves.

The counter is the 4 bytes at offset 24 of an SQLite database's header, which SQLite increments
on every commit when the file uses a rollback journal (the token store always does; see
:mod:`tokens.store`): any ``fxev token issue`` or ``revoke``, in any process, moves it before its
write is visible. :class:`ChangeCounter` reads it through a read-only shared map of the header,
so watching costs no system call and no query. A check that sees the number it saw last answers
from memory; one that sees another number reads the file (under SQLite's own lock, so never a
half-written state) and remembers what it read under the new number. So a revocation still takes
effect on the very next request, as with a SELECT per request.

Expiry is checked against ``now`` on every call; revocation and unknown tokens come from the file.
Keys are the tokens' hashes, never their text; the memo is bounded (a flood of made-up tokens
clears it rather than growing it).
"""

from __future__ import annotations

import dataclasses
import mmap
import os
from datetime import datetime
from pathlib import Path

from tokens.store import TokenRecord, TokenStore, parse_token_id, token_hash

MEMO_SIZE = 1024
HEADER_BYTES = 100  # an SQLite database header
CHANGE_COUNTER = slice(24, 28)


class ChangeCounter:
    """The file change counter of an SQLite file in rollback-journal mode, read from a map."""

    def __init__(self, path: Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            self._header = mmap.mmap(fd, HEADER_BYTES, prot=mmap.PROT_READ)
        finally:
            os.close(fd)  # the map keeps the file

    def value(self) -> bytes:
        return self._header[CHANGE_COUNTER]

    def close(self) -> None:
        self._header.close()


@dataclasses.dataclass(frozen=True, slots=True)
class _Known:
    record: TokenRecord | None  # None: no token has this text
    expires_at: datetime | None


def usable(known: _Known, now: datetime) -> TokenRecord | None:
    """The record if it exists, is not revoked and has not expired at ``now``."""
    record = known.record
    if record is None or record.revoked_at is not None:
        return None
    if known.expires_at is not None and now >= known.expires_at:
        return None
    return record


class CachedTokenCheck:
    def __init__(self, store: TokenStore, size: int = MEMO_SIZE) -> None:
        self.store = store
        self.size = size
        self._counter = ChangeCounter(store.path)
        self._seen: bytes | None = None
        self._known: dict[str, _Known] = {}

    def check(self, token_text: str, now: datetime) -> TokenRecord | None:
        """As :meth:`TokenStore.check`: the token's record if valid at ``now``, else None."""
        if now.tzinfo is None:
            raise ValueError("naive datetime: 'now' needs a time zone")
        counter = self._counter.value()
        if counter != self._seen or len(self._known) >= self.size:
            self._known.clear()
            self._seen = counter
        if parse_token_id(token_text) is None:  # not a token's form (any bytes a client sent)
            return None
        key = token_hash(token_text)
        known = self._known.get(key)
        if known is None:
            record = self.store.matching_record(token_text)
            expires_at = None if record is None else record.expires_at
            known = self._known[key] = _Known(record, expires_at)
        return usable(known, now)

    def close(self) -> None:
        self._counter.close()
