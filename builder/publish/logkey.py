"""The log's signing key and memory, in ``FXEV_HOME``: created once, never printed.

``log.key`` holds the Ed25519 private key (PKCS#8 PEM, mode 0600), made by the first command that
needs it and never replaced: it is written under a temporary name and linked into place, so two
commands racing make one key. ``log.signed`` holds the last checkpoint this key signed, so
``fxev build`` can refuse to sign a tree that does not extend it (a rewritten registry). It is
made empty ("nothing signed yet") before the key, so a key whose memory is missing has lost it:
the build then needs another record of what the key signed (docs/transparency.md#key).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from builder.core.errors import ConfigurationError
from builder.disk.durable import create_once, replace_durably
from builder.tlog import note

KEY_FILE = "log.key"
SIGNED_FILE = "log.signed"
NOTHING_SIGNED = ""  # log.signed of a key that has signed no checkpoint yet


def default_origin(registry_id: str | None) -> str:
    """``fxev.local/<the registry id's first 16 hex>``."""
    if registry_id is None:
        raise ConfigurationError("the log's origin comes from the registry id: no revision yet")
    return "fxev.local/" + registry_id.removeprefix("sha256:")[:16]


def load_or_create(home: Path) -> Ed25519PrivateKey:
    path = home / KEY_FILE
    if not path.exists():
        create_once(home / SIGNED_FILE, NOTHING_SIGNED.encode())  # first: a key has a memory
        _create(path)
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (ValueError, TypeError):
        raise ConfigurationError(f"{path} is not an Ed25519 private key in PEM") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigurationError(f"{path} is not an Ed25519 private key")
    return key


def _create(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    create_once(path, pem)  # mode 0600; another command made it first: keep it


def verifier_key(home: Path, origin: str) -> note.VerifierKey:
    try:
        return note.verifier_key(origin, load_or_create(home))
    except note.NoteError as error:
        raise ConfigurationError(f"FXEV_LOG_ORIGIN: {error}") from None


def mismatched_key(home: Path, origin: Callable[[], str], theirs: str | None) -> str | None:
    """This home's verifier key when a published log's (``theirs``, its ``log/key``) is another,
    else None; ``"none"`` when the home has no ``log.key`` (none is made: a new key would sign
    nothing its consumers' pinned key verifies)."""
    if theirs is None:
        return None
    ours = verifier_key(home, origin()).text if (home / KEY_FILE).exists() else "none"
    return ours if ours != theirs.strip() else None


def last_signed(home: Path) -> str | None:
    """The last checkpoint this home's key signed, :data:`NOTHING_SIGNED`, or None when
    ``log.signed`` is missing (lost, or moved away)."""
    try:
        return (home / SIGNED_FILE).read_text()
    except FileNotFoundError:
        return None


def remember_signed(home: Path, signed: str) -> None:
    replace_durably(home / SIGNED_FILE, signed.encode())
