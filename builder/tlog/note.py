"""C2SP ``signed-note`` with Ed25519 keys, and the ``tlog-checkpoint`` body it signs.

A note is its text (lines ending in ``\\n``), a blank line, then signature lines
``— <name> <base64(key id || signature)>``. The key id is the first 4 bytes of
``SHA-256(name || "\\n" || 0x01 || public key)``; the verifier key, what a consumer is given, is
``<name>+<key id, 8 hex>+<base64(0x01 || public key)>``. A checkpoint's text is the origin, the
tree size and the base64 root, one a line. Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import re

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

ALG_ED25519 = b"\x01"
DASH = "\u2014"
# signed-note: a key name is non-empty, with no Unicode space and no '+'; and a note holds no
# ASCII control character but the newline, so neither does the name in its signature lines.
_NAME = re.compile(r"^[^\s+\x00-\x1f]+$")
_SIZE = re.compile(r"^(0|[1-9]\d{0,18})$")
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f]")
MAX_SIGNATURES = 100  # as Go's note.Open: more is a malformed note


class NoteError(ValueError):
    """A note, a key or a checkpoint that cannot be used: malformed, or a bad signature."""


@dataclasses.dataclass(frozen=True, slots=True)
class VerifierKey:
    name: str
    key_id: bytes  # 4 bytes
    public: bytes  # 32 bytes, the raw Ed25519 key

    @property
    def text(self) -> str:
        encoded = base64.b64encode(ALG_ED25519 + self.public).decode()
        return f"{self.name}+{self.key_id.hex()}+{encoded}"


@dataclasses.dataclass(frozen=True, slots=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes

    @property
    def text(self) -> str:
        return f"{self.origin}\n{self.size}\n{base64.b64encode(self.root).decode()}\n"


def key_id(name: str, public: bytes) -> bytes:
    return hashlib.sha256(name.encode() + b"\n" + ALG_ED25519 + public).digest()[:4]


def check_name(name: str) -> str:
    if not name or not _NAME.match(name):
        raise NoteError(
            f"{name!r} cannot name a key: empty, or with a space, a '+' or a control character"
        )
    return name


def verifier_key(name: str, private: Ed25519PrivateKey) -> VerifierKey:
    public = private.public_key().public_bytes_raw()
    return VerifierKey(check_name(name), key_id(name, public), public)


def parse_verifier_key(text: str) -> VerifierKey:
    parts = text.strip().split("+", 2)
    if len(parts) != 3 or len(parts[1]) != 8:
        raise NoteError("a verifier key is <name>+<8 hex key id>+<base64 key>")
    name, id_hex, encoded = parts
    try:
        key = base64.b64decode(encoded, validate=True)
        identifier = bytes.fromhex(id_hex)
    except (binascii.Error, ValueError):
        raise NoteError("the verifier key's id or key is not hex/base64") from None
    if key[:1] != ALG_ED25519 or len(key) != 33:
        raise NoteError("the verifier key is not an Ed25519 key (0x01 and 32 bytes)")
    if key_id(check_name(name), key[1:]) != identifier:
        raise NoteError("the verifier key's id does not match its name and key")
    return VerifierKey(name, identifier, key[1:])


def sign(text: str, name: str, private: Ed25519PrivateKey) -> str:
    """The note of ``text`` signed by ``private`` under ``name``."""
    if not text.endswith("\n") or "\n\n" in text:
        raise NoteError("a note's text is non-empty lines, each ending in a newline")
    key = verifier_key(name, private)
    signature = private.sign(text.encode())
    encoded = base64.b64encode(key.key_id + signature).decode()
    return f"{text}\n{DASH} {name} {encoded}\n"


def decode(data: bytes) -> str:
    """A note's text from its bytes. Signed notes are UTF-8 (C2SP ``signed-note``): bytes that
    are not are a malformed note, as Go's ``note.Open`` has it, never text with stand-ins."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise NoteError("malformed note: not valid UTF-8") from None


def open_note(note: str, key: VerifierKey) -> str:
    """The text of ``note`` once a signature by ``key`` on it verifies, or ``NoteError``. Every
    signature line must be well formed, as Go's ``note.Open`` has it, whoever signed it: a note
    that Go's verifier refuses as malformed is refused here too."""
    if _CONTROL.search(note):
        raise NoteError("malformed note: an ASCII control character other than a newline")
    text, sep, signatures = note.rpartition("\n\n")
    if not sep or not signatures.endswith("\n"):
        raise NoteError("not a signed note: no blank line before signatures")
    text += "\n"
    lines = signatures[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise NoteError(f"malformed note: more than {MAX_SIGNATURES} signatures")
    ours: bytes | None = None
    named = False  # a line names the key, under another key id
    for line in lines:
        name, blob = _signature_line(line)
        if name == key.name:
            if blob[:4] == key.key_id:
                ours = blob[4:] if ours is None else ours
            else:
                named = True
    if ours is None:
        raise NoteError(f"no signature by {key.name}" + (" (key id mismatch)" if named else ""))
    try:
        Ed25519PublicKey.from_public_bytes(key.public).verify(ours, text.encode())
    except InvalidSignature:
        raise NoteError(f"the signature of {key.name} does not verify") from None
    return text


def _signature_line(line: str) -> tuple[str, bytes]:
    """``— <name> <base64(key id || signature)>``: the name and the decoded bytes."""
    name, _, encoded = line.removeprefix(f"{DASH} ").partition(" ")
    try:
        blob = base64.b64decode(encoded, validate=True)
    except binascii.Error:
        raise NoteError(f"malformed signature line {line!r}: not base64") from None
    if not line.startswith(f"{DASH} ") or not _NAME.match(name) or len(blob) < 5:
        raise NoteError(f"malformed signature line {line!r}")
    return name, blob


def parse_checkpoint(text: str) -> Checkpoint:
    """A checkpoint's origin, size and root from its (verified) text."""
    lines = text.split("\n")
    if len(lines) < 4 or lines[-1] != "":
        raise NoteError("a checkpoint is at least an origin, a size and a root, one a line")
    origin, size, root = lines[0], lines[1], lines[2]
    if not _SIZE.match(size):
        raise NoteError(f"a checkpoint's size {size!r} is not a decimal number")
    try:
        digest = base64.b64decode(root, validate=True)
    except binascii.Error:
        raise NoteError("a checkpoint's root is not base64") from None
    if len(digest) != 32 or not origin:
        raise NoteError("a checkpoint needs an origin and a 32-byte root")
    if "" in lines[3:-1]:
        raise NoteError("a checkpoint's extension line is empty")  # C2SP tlog-checkpoint
    return Checkpoint(origin, int(size), digest)
