"""Token records in Redis (fleet mode, ``FXEV_REDIS_URL``): what every gateway checks.

The same records as the SQLite store (:mod:`tokens.store`), the same text format, hashes only,
never the secret. One Redis hash per token, ``fxev:tok:{<id>}`` (the braces are a cluster hash
tag: the token's rate-limit keys share its slot, so one script can read and write them all):

``hash``          ``sha256:<hex>`` of the whole token text
``name``          the consumer
``created_at``    ISO-8601 UTC
``expires``       ``YYYY-MM-DD`` or empty
``expires_at_us`` the Lima midnight that ends ``expires``, microseconds since the epoch, or empty
``revoked_at``    ISO-8601 UTC, or empty while the token is active

and the set ``fxev:tokens`` of every id, for ``fxev token list``. A revocation is one ``HSET``
(in a script, so an unknown or already revoked id changes nothing), seen by the very next request
on every gateway: the gateway keeps no copy (see docs/operating/fleet.md#redis).
"""

from __future__ import annotations

import logging
import re
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from builder.core.canonical import epoch_us, parse_utc_timestamp, utc_timestamp
from builder.ops.redisclient import connect
from tokens.store import (
    IssuedToken,
    TokenConflict,
    TokenNotFound,
    TokenRecord,
    _aware,
    expiry_instant,
    mint,
    token_hash,
)

if TYPE_CHECKING:
    import redis

IDS_KEY = "fxev:tokens"
_ID = re.compile(r"[0-9a-f]{16}")

# KEYS[1] the token's hash; ARGV[1] revoked_at. 0: no such token; else the previous revoked_at.
_REVOKE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local previous = redis.call('HGET', KEYS[1], 'revoked_at')
if previous and previous ~= '' then return previous end
redis.call('HSET', KEYS[1], 'revoked_at', ARGV[1])
return ''
"""

log = logging.getLogger("fxev.tokens")


def token_key(token_id: str) -> str:
    return "fxev:tok:{" + token_id + "}"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value or "")


def record_of(token_id: str, fields: dict[str, str]) -> TokenRecord:
    """The record a token's Redis hash holds (text fields, empty meaning none)."""
    expires, revoked = fields.get("expires", ""), fields.get("revoked_at", "")
    return TokenRecord(
        id=token_id,
        name=fields["name"],
        created_at=parse_utc_timestamp(fields["created_at"]),
        expires=date.fromisoformat(expires) if expires else None,
        revoked_at=parse_utc_timestamp(revoked) if revoked else None,
    )


class RedisTokenStore:
    """``fxev token issue|revoke|list`` against Redis; the API of :class:`TokenStore`."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    @classmethod
    def open(cls, url: str) -> RedisTokenStore:
        return cls(connect(url))

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> RedisTokenStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def issue(self, name: str, expires: date | None, now: datetime) -> IssuedToken:
        name, now, new_id, text = mint(name, expires, now)
        expires_at = None if expires is None else expiry_instant(expires)
        fields = {
            "hash": token_hash(text),
            "name": name,
            "created_at": utc_timestamp(now),
            "expires": "" if expires is None else expires.isoformat(),
            "expires_at_us": "" if expires_at is None else str(epoch_us(expires_at)),
            "revoked_at": "",
        }
        with self.client.pipeline(transaction=True) as pipe:
            pipe.hset(token_key(new_id), mapping=fields)
            pipe.sadd(IDS_KEY, new_id)
            pipe.execute()
        log.info("token issued id=%s name=%s (redis)", new_id, name)
        return IssuedToken(id=new_id, name=name, expires=expires, token_text=text)

    def revoke(self, token_id: str, now: datetime) -> TokenRecord:
        if not _ID.fullmatch(token_id):
            raise TokenNotFound(f"no token with id {token_id}")
        previous = self.client.eval(_REVOKE, 1, token_key(token_id), utc_timestamp(_aware(now)))
        if previous == 0:
            raise TokenNotFound(f"no token with id {token_id}")
        if _text(previous):
            raise TokenConflict(f"token {token_id} was already revoked at {_text(previous)}")
        log.info("token revoked id=%s (redis)", token_id)
        return self.get(token_id)

    def get(self, token_id: str) -> TokenRecord:
        raw = self.client.hgetall(token_key(token_id))
        if not raw:
            raise TokenNotFound(f"no token with id {token_id}")
        return record_of(token_id, {_text(k): _text(v) for k, v in raw.items()})

    def list(self) -> list[TokenRecord]:
        """Every token, revoked and expired ones too, oldest first."""
        ids = sorted(_text(i) for i in self.client.smembers(IDS_KEY))
        with self.client.pipeline(transaction=False) as pipe:
            for token_id in ids:
                pipe.hgetall(token_key(token_id))
            found = pipe.execute()
        records = [
            record_of(i, {_text(k): _text(v) for k, v in raw.items()})
            for i, raw in zip(ids, found, strict=True)
            if raw
        ]
        return sorted(records, key=lambda record: (record.created_at, record.id))
