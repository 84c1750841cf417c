"""Token checks answered from memory while the token file has not changed (the gateway's path).

:meth:`TokenStore.check` reads the file on every call (a SELECT, a row turned into a record, the
expiry computed in Lima). :class:`CachedTokenCheck` keeps what that read found, per token hash,
and throws it all away the moment ``PRAGMA data_version`` moves, which it does when any other
connection (``fxev token revoke`` or ``issue``, in any process) commits. So a revocation still
takes effect on the very next request, one cheap pragma per check instead of a query. The
connection behind it must never write (the gateway's does not): SQLite does not move
``data_version`` for a connection's own commits.

Expiry is checked against ``now`` on every call; revocation and unknown tokens come from the file.
Keys are the tokens' hashes, never their text; the memo is bounded (a flood of made-up tokens
clears it rather than growing it).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from tokens.store import TokenRecord, TokenStore, token_hash

MEMO_SIZE = 1024


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
        self._version: int | None = None
        self._known: dict[str, _Known] = {}

    def check(self, token_text: str, now: datetime) -> TokenRecord | None:
        """As :meth:`TokenStore.check`: the token's record if valid at ``now``, else None."""
        if now.tzinfo is None:
            raise ValueError("naive datetime: 'now' needs a time zone")
        version = self.store.data_version()
        if version != self._version or len(self._known) >= self.size:
            self._known.clear()
            self._version = version
        key = token_hash(token_text)
        known = self._known.get(key)
        if known is None:
            record = self.store.matching_record(token_text)
            expires_at = None if record is None else record.expires_at
            known = self._known[key] = _Known(record, expires_at)
        return usable(known, now)
