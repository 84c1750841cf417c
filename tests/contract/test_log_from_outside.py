"""The transparency log (DECISIONS.md section 13) checked from outside.

Everything here talks to real processes: the demo's gateway over HTTP, the real ``fxev``
commands as subprocesses, and the files a build leaves in ``FXEV_HOME`` and ``FXEV_SITE``.
The C2SP formats (``tlog-tiles``, ``tlog-checkpoint``, ``signed-note``, ``tlog-proof``) and
RFC 6962 hashing are re-implemented here in a few lines each, independently of
``builder.tlog``, so that a test compares the served bytes with the specifications rather
than with the project's own code. Each test's docstring quotes the rule it checks.
"""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import orjson
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.builder.test_log_build import rewrite_revision
from tests.contract.conftest import (
    ROOT,
    Gateway,
    _running,
    copy_demo,
    home_env,
    issue_token,
    run_fxev,
)
from tests.contract.test_api import assert_api_error
from tests.interop.test_go_verifier import golog  # noqa: F401  (the Go checker, a fixture)
from tests.support.synth import Synth

LATEST = "/v1/rates/latest?currency=USD&series=publicado"
IMMUTABLE = "public, max-age=31536000, immutable"
CHECKPOINT_CACHE = "public, max-age=5"
TEXT = "text/plain; charset=utf-8"
OCTETS = "application/octet-stream"
EM_DASH = "\u2014"
WIDTH = 256
TABLES = (
    "annotations",
    "cotejos",
    "events",
    "evidence",
    "executions",
    "manifest_entries",
    "observations",
    "series_switches",
)
RECORDING = ("capturada", "importada")

# A C2SP checkpoint signed by exactly one key: origin, size, base64 root, blank line, one
# signature line "— <name> <base64(key id || signature)>", every line ending in "\n".
SIGNED_CHECKPOINT = re.compile(
    r"(?P<origin>[^\s+]+)\n(?P<size>0|[1-9][0-9]*)\n(?P<root>[A-Za-z0-9+/]{43}=)\n\n"
    + EM_DASH
    + r" (?P<name>[^\s+]+) (?P<sig>[A-Za-z0-9+/]+={0,2})\n"
)


# -- an independent RFC 6962 / C2SP toolkit ---------------------------------------------------


def leaf_hash(entry: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def mth(hashes: list[bytes]) -> bytes:
    """RFC 6962 section 2.1 MTH over leaf hashes, recursively as the RFC writes it."""
    if not hashes:
        return hashlib.sha256(b"").digest()
    if len(hashes) == 1:
        return hashes[0]
    k = 1
    while k * 2 < len(hashes):
        k *= 2
    return node_hash(mth(hashes[:k]), mth(hashes[k:]))


def rfc6962_path(m: int, hashes: list[bytes]) -> list[bytes]:
    """RFC 6962 section 2.1.1 PATH(m, D[n]), leaf's sibling first."""
    if len(hashes) == 1:
        return []
    k = 1
    while k * 2 < len(hashes):
        k *= 2
    if m < k:
        return [*rfc6962_path(m, hashes[:k]), mth(hashes[k:])]
    return [*rfc6962_path(m - k, hashes[k:]), mth(hashes[:k])]


def root_from_inclusion(index: int, size: int, leaf: bytes, proof: list[bytes]) -> bytes:
    """RFC 9162 section 2.1.3.2, step by step."""
    assert 0 <= index < size
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        assert sn != 0, "inclusion proof too long"
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    assert sn == 0, "inclusion proof too short"
    return r


def c2sp_index(n: int) -> str:
    """tlog-tiles: zero-padded 3-digit path elements, all but the last prefixed with x."""
    parts = [f"{n % 1000:03d}"]
    n //= 1000
    while n:
        parts.insert(0, f"x{n % 1000:03d}")
        n //= 1000
    return "/".join(parts)


def tile_path(level: int | str, n: int, width: int = WIDTH) -> str:
    return f"tile/{level}/{c2sp_index(n)}" + ("" if width == WIDTH else f".p/{width}")


def split_bundle(data: bytes) -> list[bytes]:
    """tlog-tiles entry bundle: big-endian uint16 length-prefixed entries, nothing else."""
    out, at = [], 0
    while at < len(data):
        assert at + 2 <= len(data), "bundle cut inside a length"
        length = int.from_bytes(data[at : at + 2], "big")
        assert at + 2 + length <= len(data), "bundle cut inside an entry"
        out.append(data[at + 2 : at + 2 + length])
        at += 2 + length
    return out


def canonical_hash(record: Any) -> str:
    return hashlib.sha256(orjson.dumps(record, option=orjson.OPT_SORT_KEYS)).hexdigest()


def public_key(home: Path) -> bytes:
    """The raw Ed25519 public key of FXEV_HOME/log.key (PKCS#8 PEM)."""
    private = serialization.load_pem_private_key((home / "log.key").read_bytes(), password=None)
    assert isinstance(private, Ed25519PrivateKey)
    return private.public_key().public_bytes_raw()


def key_id(name: str, public: bytes) -> bytes:
    """signed-note: SHA-256(key name || 0x0A || 0x01 || 32-byte Ed25519 key)[:4]."""
    return hashlib.sha256(name.encode() + b"\n" + b"\x01" + public).digest()[:4]


def open_checkpoint(signed: str, name: str, public: bytes) -> dict[str, Any]:
    """Checks a one-signature checkpoint byte for byte; its parts."""
    match = SIGNED_CHECKPOINT.fullmatch(signed)
    assert match, repr(signed)
    assert match["origin"] == name and match["name"] == name
    blob = base64.b64decode(match["sig"], validate=True)
    assert len(blob) == 4 + 64
    assert blob[:4] == key_id(name, public)
    body = signed[: signed.index("\n\n") + 1]
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    Ed25519PublicKey.from_public_bytes(public).verify(blob[4:], body.encode())
    return {
        "origin": match["origin"],
        "size": int(match["size"]),
        "root": base64.b64decode(match["root"], validate=True),
        "body": body,
    }


def origin_of(gateway: Gateway) -> str:
    return gateway.get("/v1/log/checkpoint", token=None).text.split("\n", 1)[0]


def fetch(gateway: Gateway, path: str, **kwargs: Any) -> requests.Response:
    """A public log resource, no token."""
    return gateway.get(f"/v1/log/{path}", token=None, **kwargs)


def fetch_immutable(gateway: Gateway, path: str) -> bytes:
    resp = fetch(gateway, path)
    assert resp.status_code == 200, (path, resp.text)
    assert resp.headers["Content-Type"] == OCTETS, (path, resp.headers)
    assert resp.headers["Cache-Control"] == IMMUTABLE, (path, resp.headers)
    return resp.content


def served_entries(gateway: Gateway, size: int) -> list[bytes]:
    entries: list[bytes] = []
    for n in range((size + WIDTH - 1) // WIDTH):
        width = min(WIDTH, size - n * WIDTH)
        bundle = split_bundle(fetch_immutable(gateway, tile_path("entries", n, width)))
        assert len(bundle) == width
        entries += bundle
    return entries


def registry(home: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{home / 'registry.sqlite'}?mode=ro", uri=True)


def vkey_of(env: dict[str, str]) -> str:
    done = run_fxev(env, "log", "key")
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1]


def verify(gateway: Gateway, obs_id: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = gateway.env | {"FXEV_TOKEN": gateway.token}
    return run_fxev(env, "verify", obs_id, "--url", gateway.base_url, *args)


def leaf_of(gateway: Gateway, entry: bytes, revision: int) -> dict[str, Any]:
    value = orjson.loads(entry)
    if "rows" not in value:
        rows = fetch(gateway, f"rows/{revision}")
        assert rows.status_code == 200
        assert hashlib.sha256(rows.content).hexdigest() == value["rows_sha256"]
        value["rows"] = orjson.loads(rows.content)
    return value


# -- checkpoint, key and signature -----------------------------------------------------------


def test_checkpoint_is_a_c2sp_signed_note_of_the_published_revision(gateway: Gateway) -> None:
    """Section 13: "The checkpoint is a C2SP `tlog-checkpoint` body (origin `FXEV_LOG_ORIGIN`,
    tree size = published revision, base64 root) signed as a C2SP `signed-note` with Ed25519
    ...; the key is created once in `FXEV_HOME/log.key` (mode 0600); `fxev log key` prints the
    verifier key (`<name>+<hex key id>+<base64(0x01 || public key)>`)"; section 2: the origin's
    default is `fxev.local/<registry id, 16 hex>`; tlog-tiles: the checkpoint is served "with
    `Content-Type: text/plain; charset=utf-8`"; section 13: "the checkpoint `max-age=5`";
    signed-note: key ID = SHA-256(key name || 0x0A || 0x01 || 32-byte Ed25519 public key)[:4]."""
    resp = gateway.get("/v1/log/checkpoint", token=None)
    assert resp.status_code == 200
    assert resp.headers["Content-Type"] == TEXT
    assert resp.headers["Cache-Control"] == CHECKPOINT_CACHE
    pointer = orjson.loads((gateway.site / "PUBLISHED").read_bytes())
    registry_hex = pointer["registry_id"].removeprefix("sha256:")
    origin = "fxev.local/" + registry_hex[:16]
    home = gateway.home
    assert stat.S_IMODE((home / "log.key").stat().st_mode) == 0o600
    public = public_key(home)
    checkpoint = open_checkpoint(resp.text, origin, public)
    assert checkpoint["size"] == gateway.get(LATEST).json()["dataset_revision"]
    expected_vkey = (
        f"{origin}+{key_id(origin, public).hex()}+" + base64.b64encode(b"\x01" + public).decode()
    )
    assert vkey_of(gateway.env) == expected_vkey
    assert vkey_of(gateway.env) == expected_vkey  # created once: the same key again
    assert public_key(home) == public
    # The same bytes at the C2SP path in the tree and at the size's own checkpoint.
    log = gateway.site / "log"
    assert (log / "checkpoint").read_bytes() == resp.content
    assert (log / "checkpoints" / str(checkpoint["size"])).read_bytes() == resp.content


def test_tiles_and_bundles_are_rfc6962_of_the_leaves_at_their_c2sp_paths(
    gateway: Gateway,
) -> None:
    """Section 13: leaf hash `SHA-256(0x00 || leaf)`, node `SHA-256(0x01 || left || right)`;
    "Published in the tree under `log/` exactly as C2SP `tlog-tiles` lays it out ... and
    served publicly ... at `/v1/log/...` with the same paths: tiles and entry bundles
    `Cache-Control: public, max-age=31536000, immutable`"; tlog-tiles: tiles and bundles
    "with `Content-Type: application/octet-stream`", entry bundles are "big-endian uint16
    length-prefixed log entries", "Empty tiles MUST NOT be served"."""
    public = public_key(gateway.home)
    origin = origin_of(gateway)
    checkpoint = open_checkpoint(fetch(gateway, "checkpoint").text, origin, public)
    size = checkpoint["size"]
    assert 0 < size < WIDTH  # the demo: one partial tile per level 0
    entries = served_entries(gateway, size)
    assert all(len(entry) <= 0xFFFF for entry in entries)
    hashes = [leaf_hash(entry) for entry in entries]
    assert fetch_immutable(gateway, tile_path(0, 0, size)) == b"".join(hashes)
    assert mth(hashes) == checkpoint["root"]
    # Every file of the tree's log/tile/ is served at /v1/log/ under the same path.
    root = gateway.site / "log"
    files = sorted(p for p in (root / "tile").rglob("*") if p.is_file())
    assert files
    for path in files:
        relative = path.relative_to(root).as_posix()
        assert fetch_immutable(gateway, relative) == path.read_bytes(), relative
    # Tiles a tree of this size does not have (empty, or full while the level is partial).
    for missing in (
        tile_path(0, 0),
        tile_path("entries", 0),
        tile_path(1, 0, 1),
        tile_path(0, 1, 1),
        tile_path("entries", 1, 1),
        tile_path(0, 0, size + 1),
    ):
        assert_api_error(fetch(gateway, missing), 404, "NOT_FOUND")


def test_each_leaf_is_the_canonical_record_of_its_revision(gateway: Gateway) -> None:
    """Section 13: "Registry revision N is leaf N-1 ... The leaf (at most 65,535 bytes) is a
    canonical record of revision N: its number, `ts_commit`, the registry's chain hash, and the
    SHA-256 of every row the revision wrote (directly, or through a list published in the tree
    and hashed into the leaf)". Checked against the registry file itself (read-only)."""
    size = gateway.get(LATEST).json()["dataset_revision"]
    entries = served_entries(gateway, size)
    conn = registry(gateway.home)
    try:
        revisions = {
            number: (ts, chain)
            for number, ts, chain in conn.execute("SELECT revision, ts_commit, hash FROM revisions")
        }
        counts: dict[int, dict[str, int]] = {}
        for table in TABLES:
            column = "revision_creada" if table == "observations" else "revision"
            for number, count in conn.execute(
                f"SELECT {column}, count(*) FROM {table} GROUP BY {column}"
            ):
                counts.setdefault(number, {})[table] = count
    finally:
        conn.close()
    assert len(entries) == size == max(revisions)
    for index, entry in enumerate(entries):
        number = index + 1
        assert len(entry) <= 0xFFFF
        value = orjson.loads(entry)
        assert orjson.dumps(value, option=orjson.OPT_SORT_KEYS) == entry, "not canonical"
        assert set(value) in (
            {"chain", "fxev_leaf", "revision", "rows", "ts_commit"},
            {"chain", "fxev_leaf", "revision", "rows_sha256", "ts_commit"},
        ), sorted(value)
        assert value["revision"] == number
        assert (value["ts_commit"], value["chain"]) == revisions[number]
        rows = leaf_of(gateway, entry, number)["rows"]
        for table, digests in rows.items():
            assert digests == sorted(digests)
            assert all(re.fullmatch(r"[0-9a-f]{64}", d) for d in digests), table
        written = {table: len(digests) for table, digests in rows.items() if digests}
        assert written == counts.get(number, {}), number


def test_every_served_record_is_committed_by_the_leaf_of_its_revision(gateway: Gateway) -> None:
    """Section 13: the leaf holds "the SHA-256 of every row the revision wrote ... so a served
    observation, event or evidence can be checked against the leaf of its revision"
    (docs/transparency.md: the `observacion` object, an item of `eventos`, of `cotejos`, the
    evidence bytes' SHA-256)."""
    size = gateway.get(LATEST).json()["dataset_revision"]
    leaves = [
        leaf_of(gateway, entry, n + 1)["rows"]
        for n, entry in enumerate(served_entries(gateway, size))
    ]
    conn = registry(gateway.home)
    try:
        ids = [r[0] for r in conn.execute("SELECT id FROM observations WHERE revision_creada > 1")]
        ids += [
            r[0]
            for r in conn.execute(
                "SELECT id FROM observations WHERE revision_creada = 1 ORDER BY id LIMIT 20"
            )
        ]
    finally:
        conn.close()
    evidence_sha: dict[str, str] = {}
    checked = {"observations": 0, "events": 0, "cotejos": 0, "evidence": 0}
    for obs_id in ids:
        detail = gateway.get(f"/v1/observations/{obs_id}").json()
        observation = detail["observacion"]
        created = observation["revision_creada"]
        assert canonical_hash(observation) in leaves[created - 1].get("observations", []), obs_id
        checked["observations"] += 1
        for event in detail["eventos"]:
            assert canonical_hash(event) in leaves[event["revision"] - 1].get("events", []), event
            checked["events"] += 1
        for cotejo in detail["cotejos"]:
            digest = canonical_hash(cotejo)
            assert digest in leaves[cotejo["revision"] - 1].get("cotejos", []), cotejo
            checked["cotejos"] += 1
        ev_id = observation["evidencia_id"]
        if ev_id not in evidence_sha:
            resp = gateway.get(f"/v1/evidence/{ev_id}")
            assert resp.status_code == 200
            evidence_sha[ev_id] = hashlib.sha256(resp.content).hexdigest()
            assert resp.headers["X-Sha256"] == evidence_sha[ev_id]
        recorded = [
            e["revision"]
            for e in detail["eventos"]
            if e["tipo"] in RECORDING and e["evidencia_id"] == ev_id
        ]
        assert recorded, obs_id
        assert evidence_sha[ev_id] in leaves[recorded[0] - 1].get("evidence", []), obs_id
        checked["evidence"] += 1
    assert all(checked.values()), checked


def test_log_proof_prints_a_c2sp_tlog_proof_that_verifies_offline(gateway: Gateway) -> None:
    """Section 13 / section 3: "`fxev log proof` prints a C2SP `tlog-proof` that verifies
    offline" (last stdout: "a `c2sp.org/tlog-proof@v1` text"). tlog-proof: first line
    `c2sp.org/tlog-proof@v1`, optional `extra <base64>`, `index <decimal, no leading zeroes>`,
    the RFC 6962 inclusion path "starting from the leaf's sibling hash up to the root's child",
    an empty line, then "the checkpoint issued by the log ... verbatim"."""
    served = fetch(gateway, "checkpoint").text
    checkpoint = open_checkpoint(served, origin_of(gateway), public_key(gateway.home))
    size = checkpoint["size"]
    entries = served_entries(gateway, size)
    hashes = [leaf_hash(entry) for entry in entries]
    conn = registry(gateway.home)
    try:
        picks = [
            conn.execute(
                "SELECT id FROM observations WHERE revision_creada = ? ORDER BY id LIMIT 1",
                (revision,),
            ).fetchone()[0]
            for revision in sorted(
                {r[0] for r in conn.execute("SELECT revision_creada FROM observations")}
            )
        ]
    finally:
        conn.close()
    assert len(picks) >= 2
    for obs_id in picks:
        created = gateway.get(f"/v1/observations/{obs_id}").json()["observacion"]["revision_creada"]
        done = run_fxev(gateway.env, "log", "proof", obs_id)
        assert done.returncode == 0, done.stderr
        text = done.stdout
        head, sep, signed = text.partition("\n\n")
        assert sep and signed == served, "the checkpoint is not included verbatim"
        lines = head.split("\n")
        assert lines[0] == "c2sp.org/tlog-proof@v1"
        assert lines[1].startswith("extra ")
        extra = base64.b64decode(lines[1][len("extra ") :], validate=True)
        match = re.fullmatch(r"index (0|[1-9][0-9]*)", lines[2])
        assert match, lines[2]
        index = int(match[1])
        assert index == created - 1
        assert extra == entries[index]
        path = [base64.b64decode(line, validate=True) for line in lines[3:]]
        assert all(len(h) == 32 for h in path)
        assert path == rfc6962_path(index, hashes)
        assert root_from_inclusion(index, size, leaf_hash(extra), path) == checkpoint["root"]


# -- public, cached, not limited ---------------------------------------------------------------


def test_the_log_is_public_whatever_the_authorization_header(private_gateway: Gateway) -> None:
    """Section 13: the log is "served publicly (no token, like `/v1/health/live`)": no token,
    a malformed, an unknown or a revoked token all get the log (only the API refuses them)."""
    gateway = private_gateway
    token_id, revoked = issue_token(gateway.env, "log-revoked")
    done = run_fxev(gateway.env, "token", "revoke", token_id)
    assert done.returncode == 0, done.stderr
    assert_api_error(gateway.get(LATEST, token=revoked), 401, "UNAUTHORIZED")
    size = gateway.get(LATEST).json()["dataset_revision"]
    paths = [
        "checkpoint",
        "key",
        tile_path(0, 0, size),
        tile_path("entries", 0, size),
        "rows/1",
    ]
    for auth in (None, "Bearer not-a-token", "Basic Zm9vOmJhcg==", f"Bearer {revoked}"):
        headers = {} if auth is None else {"Authorization": auth}
        for path in paths:
            resp = requests.get(gateway.url(f"/v1/log/{path}"), headers=headers, timeout=10)
            assert resp.status_code == 200, (auth, path, resp.text)


@pytest.mark.gateway_env(FXEV_RATE_LIMIT_PER_MIN="2")
def test_log_requests_with_a_valid_token_do_not_spend_its_limit(
    private_gateway: Gateway,
) -> None:
    """Section 13: public "like `/v1/health/live`", and section 9: `live` never counts toward
    the limits: log requests carrying a valid token leave its 2-a-minute quota whole."""
    for _ in range(3):
        for path in ("checkpoint", "key", "rows/1", "tile/0/000.p/6", "tile/entries/000.p/6"):
            resp = private_gateway.get(f"/v1/log/{path}")
            assert resp.status_code == 200, (path, resp.text)
    assert private_gateway.get(LATEST).status_code == 200
    assert private_gateway.get(LATEST).status_code == 200
    assert_api_error(private_gateway.get(LATEST), 429, "RATE_LIMITED")


# -- a log that grows ---------------------------------------------------------------------------


def test_a_growing_log_keeps_old_tiles_and_state_sees_it_extend(
    private_gateway: Gateway, tmp_path: Path
) -> None:
    """Section 13: `fxev build` appends the new revision's leaf and signs the new published
    size; tlog-tiles: "Logs MUST serve partial tiles corresponding to tree sizes for which a
    checkpoint was produced" (until the full tile exists) and tiles are immutable; the new tree
    extends the old one (its first 6 leaves hash to the old root); an annotation is committed by
    its revision's leaf (docs: "an item of /v1/annotations"); `fxev verify --state FILE`
    "keeps the last checkpoint it verified and checks consistency with the new one"."""
    gw = private_gateway
    vkey = vkey_of(gw.env)
    public = public_key(gw.home)
    origin = origin_of(gw)
    obs_id = gw.get(LATEST).json()["observacion_id"]
    state = tmp_path / "seen" / "checkpoint"
    first = verify(gw, obs_id, "--vkey", vkey, "--state", str(state))
    assert first.returncode == 0, first.stdout + first.stderr
    old_signed = fetch(gw, "checkpoint").text
    old = open_checkpoint(old_signed, origin, public)
    assert state.read_text() == old_signed
    n = old["size"]
    before = {
        tile_path(0, 0, n): fetch_immutable(gw, tile_path(0, 0, n)),
        tile_path("entries", 0, n): fetch_immutable(gw, tile_path("entries", 0, n)),
    }
    etags = {path: fetch(gw, path).headers["ETag"] for path in before}

    done = run_fxev(
        gw.env, "annotate", "--fecha", "2026-09-21", "--texto", "nota",
        "--actor", "auditor", "--justification", "a revision to grow the log",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    built = run_fxev(gw.env, "build")
    assert built.returncode == 0, built.stderr
    assert orjson.loads(built.stdout.splitlines()[-1])["published_revision"] == n + 1

    new_signed = fetch(gw, "checkpoint").text
    new = open_checkpoint(new_signed, origin, public)
    assert new["size"] == n + 1 == gw.get(LATEST).json()["dataset_revision"]
    # The partial tiles of the size checkpointed before are still served, byte for byte.
    for path, data in before.items():
        resp = fetch(gw, path)
        assert resp.status_code == 200, (path, resp.text)
        assert resp.content == data and resp.headers["ETag"] == etags[path], path
        assert resp.headers["Cache-Control"] == IMMUTABLE
    entries = served_entries(gw, n + 1)
    hashes = [leaf_hash(entry) for entry in entries]
    assert fetch_immutable(gw, tile_path(0, 0, n + 1)) == b"".join(hashes)
    assert split_bundle(before[tile_path("entries", 0, n)]) == entries[:n]
    assert mth(hashes[:n]) == old["root"] and mth(hashes) == new["root"]
    # The annotation served is committed by the new leaf.
    leaf = leaf_of(gw, entries[n], n + 1)
    assert leaf["revision"] == n + 1
    items = gw.get("/v1/annotations").json()["items"]
    ours = [item for item in items if item.get("revision") == n + 1]
    assert len(ours) == 1, items
    assert canonical_hash(ours[0]) in leaf["rows"].get("annotations", []), leaf["rows"]
    # fxev verify with the state of size n: the log of n + 1 extends it; the state moves on.
    second = verify(gw, obs_id, "--vkey", vkey, "--state", str(state))
    assert second.returncode == 0, second.stdout + second.stderr
    assert f"extends the checkpoint of {n}" in second.stdout, second.stdout
    assert state.read_text() == new_signed


def _cosign(signed: str, name: str, kid: bytes) -> str:
    """The checkpoint with foreign signature lines around the log's own: a witness, a key of
    the log's name but another id, a key of the log's id but another name."""
    text, _, own = signed.rpartition("\n\n")

    def line(who: str, prefix: bytes) -> str:
        blob = prefix + hashlib.sha512(who.encode() + prefix).digest()
        return f"{EM_DASH} {who} {base64.b64encode(blob).decode()}\n"

    witness = line("witness.example/w1", b"\x9a\x1b\x2c\x3d")
    same_name = line(name, bytes(b ^ 0xFF for b in kid))
    same_id = line("other.example/log", kid)
    return f"{text}\n\n{witness}{own}{same_name}{same_id}"


def test_unknown_cosignatures_on_the_checkpoint_are_ignored(
    private_gateway: Gateway, tmp_path: Path
) -> None:
    """tlog-checkpoint: "clients MUST ignore unknown signatures. This enables ... witness
    cosigning"; signed-note: "Verifiers MUST ignore signatures from unknown keys, even if they
    share a name or ID (but not both) with a known key". `fxev verify --vkey` (online, with
    --state) and `fxev verify --proof` (offline) must accept a cosigned checkpoint."""
    gw = private_gateway
    vkey = vkey_of(gw.env)
    name, kid_hex, _ = vkey.split("+", 2)
    size = gw.get(LATEST).json()["dataset_revision"]
    path = gw.site / "log" / "checkpoints" / str(size)
    cosigned = _cosign(path.read_text(), name, bytes.fromhex(kid_hex))
    path.write_text(cosigned)
    assert fetch(gw, "checkpoint").text == cosigned
    obs_id = gw.get(LATEST).json()["observacion_id"]
    state = tmp_path / "state"
    done = verify(gw, obs_id, "--vkey", vkey, "--state", str(state))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   log checkpoint of" in done.stdout
    assert state.read_text() == cosigned
    again = verify(gw, obs_id, "--vkey", vkey, "--state", str(state))
    assert again.returncode == 0, again.stdout + again.stderr
    made = run_fxev(gw.env, "log", "proof", obs_id)
    assert made.returncode == 0, made.stderr
    assert made.stdout.endswith(cosigned)
    saved = tmp_path / "value.tlog-proof"
    saved.write_text(made.stdout)
    offline = {k: v for k, v in gw.env.items() if k not in ("FXEV_HOME", "FXEV_SITE")}
    checked = run_fxev(offline, "verify", "--proof", str(saved), "--vkey", vkey)
    assert checked.returncode == 0, checked.stdout + checked.stderr


# -- what fxev build refuses to sign -----------------------------------------------------------


def test_build_refuses_to_sign_a_rewritten_registry_onto_a_published_log(
    demo_home: Path, tmp_path: Path
) -> None:
    """Section 13: "`fxev build` signs only a tree consistent with the last checkpoint it
    signed, and refuses otherwise (a rewritten registry cannot be signed)"; docs/transparency.md:
    "a registry whose past revision was rewritten (and rehashed so that `fxev registry verify`
    still passes) is refused, one line on stderr and exit 1, "history rewritten", and nothing is
    published". Here the rewrite is followed by one honest new revision and an ordinary
    (incremental) build over the site already published."""
    env, _ = copy_demo(demo_home, tmp_path)
    home, site = Path(env["FXEV_HOME"]), Path(env["FXEV_SITE"])
    published = orjson.loads((site / "PUBLISHED").read_bytes())["revision"]
    rewrite_revision(home, 2)  # revision 2's observation altered, every later hash recomputed
    assert run_fxev(env, "registry", "verify").returncode == 0  # the rewrite is hidden
    done = run_fxev(
        env, "annotate", "--fecha", "2026-09-21", "--texto", "nota",
        "--actor", "auditor", "--justification", "one more revision",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    built = run_fxev(env, "build")
    signed = site / "log" / "checkpoints" / str(published + 1)
    observed = {
        "exit": built.returncode,
        "stdout": built.stdout.strip()[-200:],
        "signed": signed.read_text() if signed.exists() else None,
    }
    assert built.returncode == 1, observed
    assert "history rewritten" in built.stderr and len(built.stderr.splitlines()) == 1
    assert orjson.loads((site / "PUBLISHED").read_bytes())["revision"] == published
    assert not signed.exists()


def test_the_log_origin_cannot_make_a_note_other_implementations_reject(
    demo_home: Path, tmp_path: Path
) -> None:
    """Section 13: the checkpoint is "signed as a C2SP `signed-note`" and "An independent
    implementation must accept the log"; signed-note: "Signed notes MUST be valid UTF-8 and
    MUST NOT contain any ASCII control characters (those below U+0020) other than newline"
    (Go's `note.Open` answers "malformed note"). An `FXEV_LOG_ORIGIN` holding a control
    character must be refused (one line, exit 1), not signed into the checkpoint."""
    shutil.copytree(demo_home / "home", tmp_path / "home", ignore=shutil.ignore_patterns("ledger"))
    for name in ("log.key", "log.signed"):  # a home whose log begins now
        (tmp_path / "home" / name).unlink()
    env = home_env(tmp_path) | {"FXEV_LOG_ORIGIN": "fxev.example/a\x01b"}
    built = run_fxev(env, "build")
    checkpoint = tmp_path / "site" / "log" / "checkpoint"
    if built.returncode != 0:
        assert built.returncode == 1 and len(built.stderr.splitlines()) == 1, built.stderr
        assert not checkpoint.exists()
        return
    data = checkpoint.read_bytes()
    controls = sorted({b for b in data if b < 0x20 and b != 0x0A})
    assert not controls, f"build exit 0 signed a note with control bytes {controls}: {data!r}"


def test_the_log_key_is_created_once_even_by_racing_commands(
    demo_home: Path, tmp_path: Path
) -> None:
    """Section 13: "the key is created once in `FXEV_HOME/log.key` (mode 0600)": four
    `fxev log key` started together on a home without a key print one and the same verifier
    key, the one in the file, which is mode 0600."""
    shutil.copytree(demo_home / "home", tmp_path / "home", ignore=shutil.ignore_patterns("ledger"))
    for name in ("log.key", "log.signed"):
        (tmp_path / "home" / name).unlink()
    env = home_env(tmp_path)
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "builder", "log", "key"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = []
    for run in runs:
        out, err = run.communicate(timeout=60)
        assert run.returncode == 0, err
        outputs.append(out.splitlines()[-1])
    assert len(set(outputs)) == 1, outputs
    home = tmp_path / "home"
    assert stat.S_IMODE((home / "log.key").stat().st_mode) == 0o600
    name = outputs[0].split("+")[0]
    public = public_key(home)
    encoded = base64.b64encode(b"\x01" + public).decode()
    assert outputs[0] == f"{name}+{key_id(name, public).hex()}+{encoded}"
    assert not [p.name for p in home.iterdir() if "tmp" in p.name]  # no stray key files


# -- a log past one tile, over HTTP, against Go's reference code --------------------------------

BIG_FIRST, BIG_SIZE = 250, 270


@pytest.fixture(scope="module")
def big_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A synthetic registry of 270 revisions built in two builds (250, then 270): a full
    level-0 tile and bundle, a partial one of width 14, a level-1 tile of width 1."""
    base = tmp_path_factory.mktemp("big-log")
    env = home_env(base)
    home = Path(env["FXEV_HOME"])
    with Synth(home, seed=9, durable=False) as synth:
        synth.advance(BIG_FIRST)
    assert run_fxev(env, "build").returncode == 0
    with Synth(home, seed=10, start=date(2003, 1, 1), durable=False) as synth:
        synth.advance(BIG_SIZE - BIG_FIRST)
    built = run_fxev(env, "build")
    assert built.returncode == 0, built.stderr
    _, token = issue_token(env, "log-reader")
    yield from _running(base, env, token)


def test_a_log_past_one_tile_has_height_8_tiles_over_http(big_gateway: Gateway) -> None:
    """tlog-tiles: "Full tiles MUST be exactly 256 hashes wide, or 8,192 bytes. At "level 0"
    tiles contain leaf hashes. At "level 1" and above, each hash in a tile is the Merkle Tree
    Hash of a *full* tile at the level below"; "The partial tile at level l for a tree of size
    s has floor(s / 256**l) mod 256 entries. Empty tiles MUST NOT be served"; section 13:
    tiles and bundles public and immutable; the earlier checkpoint's tree is a prefix of the
    new one."""
    gw = big_gateway
    public = public_key(gw.home)
    origin = origin_of(gw)
    checkpoint = open_checkpoint(fetch(gw, "checkpoint").text, origin, public)
    assert checkpoint["size"] == BIG_SIZE
    entries = served_entries(gw, BIG_SIZE)
    hashes = [leaf_hash(entry) for entry in entries]
    full = fetch_immutable(gw, tile_path(0, 0))
    assert len(full) == 8192 and full == b"".join(hashes[:WIDTH])
    rest = BIG_SIZE - WIDTH
    assert fetch_immutable(gw, tile_path(0, 1, rest)) == b"".join(hashes[WIDTH:])
    assert fetch_immutable(gw, tile_path(1, 0, 1)) == mth(hashes[:WIDTH])
    assert mth(hashes) == checkpoint["root"]
    assert [orjson.loads(e)["revision"] for e in entries] == list(range(1, BIG_SIZE + 1))
    earlier = open_checkpoint(
        (gw.site / "log" / "checkpoints" / str(BIG_FIRST)).read_text(), origin, public
    )
    assert mth(hashes[:BIG_FIRST]) == earlier["root"]
    # A partial tile of the earlier size may be gone (its full tile exists); if served, it is
    # the prefix of the full one.
    for path, prefix in (
        (tile_path(0, 0, BIG_FIRST), full[: 32 * BIG_FIRST]),
        (tile_path("entries", 0, BIG_FIRST), b"".join(
            len(e).to_bytes(2, "big") + e for e in entries[:BIG_FIRST]
        )),
    ):  # fmt: skip
        resp = fetch(gw, path)
        assert resp.status_code in (200, 404), path
        if resp.status_code == 200:
            assert resp.content == prefix, path
    for missing in (
        tile_path(0, 1),
        tile_path("entries", 1),
        tile_path(0, 1, rest + 1),
        tile_path(0, 2, 1),
        tile_path(1, 0),
        tile_path(1, 0, 2),
        tile_path(2, 0, 1),
    ):
        assert_api_error(fetch(gw, missing), 404, "NOT_FOUND")


def test_go_accepts_a_log_past_one_tile(
    golog: Path,  # noqa: F811
    big_gateway: Gateway,
) -> None:
    """Section 13: "An independent implementation must accept the log (for example Go's
    `golang.org/x/mod/sumdb/note` and `tlog`)": the checkpoint's signature, an inclusion proof
    of every leaf and a consistency proof from every smaller size, through level-0 and level-1
    tiles (the existing interop test only sees a log of 6 leaves, one partial tile)."""
    vkey = vkey_of(big_gateway.env)
    done = subprocess.run(
        [str(golog), big_gateway.base_url, vkey],
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"ok {vkey.split('+')[0]} size={BIG_SIZE} inclusion={BIG_SIZE} consistency={BIG_SIZE - 1}"
    )


def test_verify_checks_a_leaf_beyond_the_first_tile(big_gateway: Gateway, tmp_path: Path) -> None:
    """Section 13: "`fxev verify ... --vkey VKEY` ... checks the checkpoint's signature, the
    inclusion of the leaves of the observation's and its events' revisions, and that those
    leaves commit to the served record and evidence hash" — here for leaves in the second entry
    bundle (`tile/entries/001.p/14`), proved through a level-1 tile."""
    gw = big_gateway
    conn = registry(gw.home)
    try:
        row = conn.execute(
            "SELECT id FROM observations WHERE revision_creada > ? ORDER BY revision_creada"
            " LIMIT 1",
            (WIDTH,),
        ).fetchone()
    finally:
        conn.close()
    assert row is not None
    vkey = vkey_of(gw.env)
    state = tmp_path / "state"
    done = verify(gw, row[0], "--vkey", vkey, "--state", str(state))
    assert done.returncode == 0, done.stdout + done.stderr
    revisions = {
        int(m[1]) for m in re.finditer(r"ok   log leaf of revision (\d+) is in", done.stdout)
    }
    assert revisions and min(revisions) > WIDTH, done.stdout
    assert state.read_text() == fetch(gw, "checkpoint").text
