"""The token store: bearer tokens for consumers, kept as hashes in their own SQLite file.

A token's text is ``fxev_<id>_<secret>``: the prefix makes it recognisable (in a leaked paste, a
log, a secret scanner), ``<id>`` is 16 lower-case hex digits that name the token in logs and in
``fxev token revoke``, and ``<secret>`` is ``secrets.token_urlsafe(32)`` (256 random bits). The
text is shown once, by :meth:`TokenStore.issue`; the store keeps only ``sha256:<hex>`` of the
whole text, so it cannot show a token again and a copy of the file does not let anyone in.

Checking parses the id out of the presented text, reads that one row by primary key, and compares
hashes with :func:`hmac.compare_digest`. Nothing is cached: every :meth:`TokenStore.check` reads
the file, so a revocation committed by one process is seen by the very next check of any other.

The file uses SQLite's rollback journal (``journal_mode=DELETE``), not WAL: then every commit
increments the *file change counter* in the database header, which is how the gateway's memo
(:mod:`tokens.cache`) learns of a revocation without a query per request. A file left in WAL
mode by an older version is switched on the first open that has it to itself.

All instants here come from the real clock, passed in by the caller as ``now``; never
``FXEV_NOW``. An ``expires`` date is valid through the end of that date in Lima.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import logging
import re
import secrets
import sqlite3
from datetime import date, datetime
from pathlib import Path
from typing import Any

from builder.core.business_days import next_lima_midnight
from builder.core.canonical import parse_utc_timestamp, utc_timestamp
from builder.core.errors import Conflict, NotFound, UsageError, database_at

TOKENS_FILE = "tokens.sqlite"
TOKEN_PREFIX = "fxev_"
MAX_NAME_LENGTH = 200

_TOKEN_TEXT = re.compile(r"fxev_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")
# Compared against when the id is unknown, so every well-formed token costs the same work.
_NO_SUCH_HASH = "sha256:" + "0" * 64

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tokens (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    hash       TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    expires    TEXT,
    revoked_at TEXT
);
CREATE INDEX IF NOT EXISTS tokens_order ON tokens(created_at, id);
"""

log = logging.getLogger("fxev.tokens")


class TokenError(UsageError, ValueError):
    """An operator asked for something the token store cannot do; nothing was changed."""


class TokenNotFound(TokenError, NotFound):
    """No token has the id given."""


class TokenConflict(TokenError, Conflict):
    """The token or its file is in a state that refuses the request (already revoked, or the
    file is held in WAL mode by a running gateway)."""


@dataclasses.dataclass(frozen=True, slots=True)
class TokenRecord:
    """What the store knows about a token: never its text, never its hash."""

    id: str
    name: str
    created_at: datetime
    expires: date | None
    revoked_at: datetime | None

    @property
    def expires_at(self) -> datetime | None:
        """The first instant at which the token no longer works (None: never expires)."""
        return None if self.expires is None else expiry_instant(self.expires)

    def state(self, now: datetime) -> str:
        """``revoked``, ``expired`` or ``active`` at ``now``."""
        if self.revoked_at is not None:
            return "revoked"
        expires_at = self.expires_at
        if expires_at is not None and now >= expires_at:
            return "expired"
        return "active"

    def is_valid(self, now: datetime) -> bool:
        return self.state(now) == "active"

    def to_json(self) -> dict[str, Any]:
        expires_at = self.expires_at
        return {
            "id": self.id,
            "name": self.name,
            "created_at": utc_timestamp(self.created_at),
            "expires": None if self.expires is None else self.expires.isoformat(),
            "expires_at": None if expires_at is None else utc_timestamp(expires_at),
            "revoked": self.revoked_at is not None,
            "revoked_at": None if self.revoked_at is None else utc_timestamp(self.revoked_at),
        }


@dataclasses.dataclass(frozen=True, slots=True)
class IssuedToken:
    """A token just issued. ``token_text`` exists only here and is kept out of ``repr``."""

    id: str
    name: str
    expires: date | None
    token_text: str = dataclasses.field(repr=False)


# --- pure functions: the token's text, its hash, its expiry ------------------------------------


def format_token(token_id: str, secret: str) -> str:
    return f"{TOKEN_PREFIX}{token_id}_{secret}"


def parse_token_id(token_text: str) -> str | None:
    """The public id inside a well-formed token text, else None. Safe to log."""
    match = _TOKEN_TEXT.fullmatch(token_text)
    return match.group(1) if match else None


def token_hash(token_text: str) -> str:
    """``sha256:<hex>`` of the whole token text (prefix and id included)."""
    return "sha256:" + hashlib.sha256(token_text.encode("utf-8")).hexdigest()


def expiry_instant(expires: date) -> datetime:
    """The Lima midnight that ends ``expires``: the token is valid strictly before it."""
    return next_lima_midnight(expires)


def clean_name(name: str) -> str:
    """A consumer name: trimmed, non-empty, printable, at most ``MAX_NAME_LENGTH`` characters."""
    cleaned = name.strip()
    if not cleaned:
        raise TokenError("a token needs a non-empty consumer name")
    if len(cleaned) > MAX_NAME_LENGTH:
        raise TokenError(f"a consumer name has at most {MAX_NAME_LENGTH} characters")
    if not cleaned.isprintable():
        raise TokenError("a consumer name cannot hold control characters")
    return cleaned


def _aware(now: datetime) -> datetime:
    if now.tzinfo is None:
        raise ValueError("naive datetime: 'now' needs a time zone")
    return now


# --- the store ---------------------------------------------------------------------------------


def check_issue(name: str, expires: date | None, now: datetime) -> tuple[str, datetime]:
    """An ``issue`` request checked (pure): the cleaned name and aware ``now``. Refuses an
    ``--expires`` day already over in Lima. ``fxev token issue`` calls it before it opens (or
    creates) a store, so that a refused request changes nothing."""
    name = clean_name(name)
    now = _aware(now)
    if expires is not None and now >= expiry_instant(expires):
        raise TokenError(f"--expires {expires.isoformat()} is already over in Lima")
    return name, now


def mint(name: str, expires: date | None, now: datetime) -> tuple[str, datetime, str, str]:
    """A new token's checked name, aware ``now``, id and text: the part of ``issue`` both token
    stores (SQLite, Redis) share (:func:`check_issue`)."""
    name, now = check_issue(name, expires, now)
    new_id = secrets.token_hex(8)
    return name, now, new_id, format_token(new_id, secrets.token_urlsafe(32))


class TokenStore:
    """Tokens in ``FXEV_HOME/tokens.sqlite``. Open one per process (after any fork)."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path

    @classmethod
    def open(cls, home: Path) -> TokenStore:
        home.mkdir(parents=True, exist_ok=True)
        path = home / TOKENS_FILE
        conn = sqlite3.connect(path, isolation_level=None, timeout=30.0)
        try:
            conn.row_factory = sqlite3.Row
            try:
                with database_at(path):
                    mode = conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0]
            except sqlite3.OperationalError as error:
                raise TokenConflict(
                    f"{path} is in WAL mode and open elsewhere: stop the gateway once so it can"
                    f" be switched to the rollback journal ({error})"
                ) from None
            if mode != "delete":
                raise TokenConflict(f"{path}: journal mode {mode!r}, expected 'delete'")
            conn.execute("PRAGMA synchronous=FULL")
            conn.executescript(_SCHEMA)
        except BaseException:
            conn.close()
            raise
        return cls(conn, path)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> TokenStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def issue(self, name: str, expires: date | None, now: datetime) -> IssuedToken:
        """A new token for consumer ``name``; its text is returned here and never again."""
        name, now, new_id, text = mint(name, expires, now)
        self.conn.execute(
            "INSERT INTO tokens (id, name, hash, created_at, expires) VALUES (?, ?, ?, ?, ?)",
            (
                new_id,
                name,
                token_hash(text),
                utc_timestamp(now),
                None if expires is None else expires.isoformat(),
            ),
        )
        log.info("token issued id=%s name=%s", new_id, name)
        return IssuedToken(id=new_id, name=name, expires=expires, token_text=text)

    def revoke(self, token_id: str, now: datetime) -> TokenRecord:
        """Revoke a token for good; an unknown or already revoked id changes nothing."""
        now = _aware(now)
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            row = self.conn.execute(
                "SELECT id, revoked_at FROM tokens WHERE id = ?", (token_id,)
            ).fetchone()
            if row is None:
                raise TokenNotFound(f"no token with id {token_id}")
            if row["revoked_at"] is not None:
                raise TokenConflict(f"token {token_id} was already revoked at {row['revoked_at']}")
            self.conn.execute(
                "UPDATE tokens SET revoked_at = ? WHERE id = ?", (utc_timestamp(now), token_id)
            )
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        log.info("token revoked id=%s", token_id)
        return self.get(token_id)

    def get(self, token_id: str) -> TokenRecord:
        row = self.conn.execute(
            "SELECT id, name, created_at, expires, revoked_at FROM tokens WHERE id = ?",
            (token_id,),
        ).fetchone()
        if row is None:
            raise TokenNotFound(f"no token with id {token_id}")
        return _record(row)

    def list(self) -> list[TokenRecord]:
        """Every token, revoked and expired ones too, oldest first."""
        rows = self.conn.execute(
            "SELECT id, name, created_at, expires, revoked_at FROM tokens ORDER BY created_at, id"
        ).fetchall()
        return [_record(row) for row in rows]

    def check(self, token_text: str, now: datetime) -> TokenRecord | None:
        """The token's record if it exists, is not revoked and not expired at ``now``; else None.

        One SELECT by primary key on the open connection (autocommit: each SELECT sees the
        latest commit of any process), then a constant-time comparison of the hashes.
        """
        now = _aware(now)
        record = self.matching_record(token_text)
        return record if record is not None and record.is_valid(now) else None

    def matching_record(self, token_text: str) -> TokenRecord | None:
        """The record whose hash is that of ``token_text``, valid or not; else None."""
        found_id = parse_token_id(token_text)
        if found_id is None:
            return None
        # fetchall: the statement runs to its end, so no read lock outlives the call (with a
        # rollback journal a reader's lock holds off every writer).
        rows = self.conn.execute(
            "SELECT id, name, hash, created_at, expires, revoked_at FROM tokens WHERE id = ?",
            (found_id,),
        ).fetchall()
        row = rows[0] if rows else None
        stored = _NO_SUCH_HASH if row is None else row["hash"]
        matches = hmac.compare_digest(stored.encode("ascii"), token_hash(token_text).encode())
        return _record(row) if row is not None and matches else None


def _record(row: sqlite3.Row) -> TokenRecord:
    return TokenRecord(
        id=row["id"],
        name=row["name"],
        created_at=parse_utc_timestamp(row["created_at"]),
        expires=None if row["expires"] is None else date.fromisoformat(row["expires"]),
        revoked_at=None if row["revoked_at"] is None else parse_utc_timestamp(row["revoked_at"]),
    )
