"""The transparency log over HTTP: public endpoints, caching, and ``fxev verify --vkey``.

The log's endpoints need no token and are not rate limited; tiles and bundles are immutable to
any cache, the checkpoint 5 seconds. ``fxev verify`` with the key checks the checkpoint's
signature, the inclusion of the observation's leaves and what they commit to: a byte flipped in
a tile, an entry bundle, the checkpoint or its signature is exit 1 naming the failed check, and
``--state`` catches a log rebuilt differently.
"""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import orjson
import pytest

from builder.tlog import leaf, merkle, note, tiles
from tests.contract.conftest import Gateway, run_fxev
from tests.contract.test_api import assert_api_error

LATEST = "/v1/rates/latest?currency=USD&series=publicado"
IMMUTABLE = "public, max-age=31536000, immutable"


def vkey(gateway: Gateway) -> str:
    done = run_fxev(gateway.env, "log", "key")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def verify(gateway: Gateway, obs_id: str, *args: str) -> tuple[int, str, str]:
    env = gateway.env | {"FXEV_TOKEN": gateway.token}
    done = run_fxev(env, "verify", obs_id, "--url", gateway.base_url, *args)
    return done.returncode, done.stdout, done.stderr


def latest_id(gateway: Gateway) -> str:
    return gateway.get(LATEST).json()["observacion_id"]


def test_the_checkpoint_is_public_signed_and_of_the_published_revision(gateway: Gateway) -> None:
    resp = gateway.get("/v1/log/checkpoint", token=None)
    assert resp.status_code == 200
    assert resp.headers["Cache-Control"] == "public, max-age=5"
    assert resp.headers["Content-Type"].startswith("text/plain")
    key = note.parse_verifier_key(vkey(gateway))
    checkpoint = note.parse_checkpoint(note.open_note(resp.text, key))
    revision = gateway.get(LATEST).json()["dataset_revision"]
    assert (checkpoint.origin, checkpoint.size) == (key.name, revision)
    served_key = gateway.get("/v1/log/key", token=None)
    assert served_key.status_code == 200 and served_key.text.strip() == key.text


def test_tiles_and_bundles_are_public_immutable_and_lead_to_the_signed_root(
    gateway: Gateway,
) -> None:
    key = note.parse_verifier_key(vkey(gateway))
    checkpoint = note.parse_checkpoint(
        note.open_note(gateway.get("/v1/log/checkpoint", token=None).text, key)
    )
    fetched: dict[tiles.Tile, bytes] = {}

    def read(tile: tiles.Tile) -> bytes:
        resp = gateway.get(f"/v1/log/{tile.path}", token=None)
        assert resp.status_code == 200, tile.path
        assert resp.headers["Cache-Control"] == IMMUTABLE
        assert (
            resp.headers["ETag"].strip('"')
            == __import__("hashlib").sha256(resp.content).hexdigest()
        )
        fetched[tile] = resp.content
        return resp.content

    size = checkpoint.size
    assert merkle.tree_hash(size, tiles.tile_reader(size, read)) == checkpoint.root
    bundle = tiles.decode_bundle(read(tiles.edge_tile(size, -1) or tiles.Tile(-1, 0)))
    decoded = [leaf.decode(x, _rows(gateway, x, n + 1)) for n, x in enumerate(bundle)]
    assert [x.revision for x in decoded] == list(range(1, size + 1))


def _rows(gateway: Gateway, data: bytes, revision: int) -> bytes | None:
    if not leaf.needs_rows_list(data):
        return None
    resp = gateway.get(f"/v1/log/rows/{revision}", token=None)
    assert resp.status_code == 200 and resp.headers["Cache-Control"] == IMMUTABLE
    return resp.content


@pytest.mark.parametrize(
    "path",
    [
        "/v1/log/tile/0/000.p/999",
        "/v1/log/tile/0/001",
        "/v1/log/tile/0/x000/000",
        "/v1/log/tile/../../PUBLISHED",
        "/v1/log/tile/0/%2e%2e/%2e%2e/PUBLISHED",
        "/v1/log/tile/entries/000.p/255",
        "/v1/log/tile/7/000",
        "/v1/log/rows/0",
        "/v1/log/rows/01",
        "/v1/log/rows/999999",
    ],
)
def test_bad_log_paths_are_404_not_found(gateway: Gateway, path: str) -> None:
    assert_api_error(gateway.get(path, token=None), 404, "NOT_FOUND")


@pytest.mark.parametrize(
    "path",
    [
        "/v1/log/rows/%00",
        "/v1/log/rows/%ff",
        "/v1/log/tile/0/%00",
        "/v1/log/tile/entries/%ff",
        "/v1/log/tile/0/000.p/%C0%AF",
    ],
)
def test_a_log_path_with_a_nul_or_not_utf8_is_400(gateway: Gateway, path: str) -> None:
    """DECISIONS 9: "a NUL or invalid UTF-8 in the path or query" is 400 ``INVALID_PARAMS``,
    on the log's routes as on the id routes (they answered 404, echoing the segment)."""
    assert_api_error(gateway.get(path, token=None), 400, "INVALID_PARAMS")


@pytest.mark.gateway_env(FXEV_RATE_LIMIT_PER_MIN="2")
def test_the_log_is_not_rate_limited(private_gateway: Gateway) -> None:
    for _ in range(6):
        assert private_gateway.get("/v1/log/checkpoint", token=None).status_code == 200
        assert private_gateway.get("/v1/log/key", token="not-a-token").status_code == 200


@pytest.mark.parametrize("made", ["missing", "empty"])
def test_verify_with_the_key_checks_the_log(gateway: Gateway, tmp_path: Path, made: str) -> None:
    """`--state FILE`: a file that does not exist yet, or is empty (`STATE=$(mktemp)`), holds
    nothing seen yet; the run saves the checkpoint it verified, and the next run checks that
    the log extends it."""
    state = tmp_path / "seen.checkpoint"
    if made == "empty":
        state.touch()
    code, out, err = verify(
        gateway, latest_id(gateway), "--vkey", vkey(gateway), "--state", str(state)
    )
    assert code == 0, out + err
    assert "ok   log checkpoint of" in out and "commits to" in out
    assert "seen before" not in out  # nothing was
    assert state.read_text() == gateway.get("/v1/log/checkpoint", token=None).text
    code, out, _ = verify(
        gateway, latest_id(gateway), "--vkey", vkey(gateway), "--state", str(state)
    )
    assert code == 0 and "extends the checkpoint of" in out


def _flip(path: Path, at: int) -> bytes:
    data = path.read_bytes()
    path.write_bytes(data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :])
    return data


def test_a_flipped_byte_in_the_log_fails_verify_naming_what(private_gateway: Gateway) -> None:
    key = vkey(private_gateway)
    obs_id = latest_id(private_gateway)
    size = private_gateway.get(LATEST).json()["dataset_revision"]
    detail = private_gateway.get(f"/v1/observations/{obs_id}").json()
    own = detail["observacion"]["revision_creada"] - 1  # its leaf's index
    log = private_gateway.site / "log"
    signed = (log / "checkpoints" / str(size)).read_text()
    bundle = tiles.decode_bundle((log / tiles.Tile(-1, 0, size).path).read_bytes())
    entry_at = sum(2 + len(x) for x in bundle[:own]) + 2 + 40  # inside its own leaf
    root_at = signed.index("\n", signed.index("\n") + 1) + 3
    sig_at = signed.rindex(" ") + 10
    cases = [
        (log / tiles.Tile(0, 0, size).path, 32 * ((own + 1) % size) + 5, "do not lead"),
        (log / tiles.Tile(0, 0, size).path, 32 * own + 3, "does not hold the hash"),
        (log / tiles.Tile(-1, 0, size).path, entry_at, "does not hold the hash"),
        (log / "checkpoints" / str(size), root_at, "checkpoint signature"),
        (log / "checkpoints" / str(size), sig_at, "checkpoint signature"),
    ]
    for path, at, named in cases:
        original = _flip(path, at)
        try:
            code, out, err = verify(private_gateway, obs_id, "--vkey", key)
        finally:
            path.write_bytes(original)
        assert code == 1, (path, out, err)
        failures = [line for line in out.splitlines() if line.startswith("FAIL log")]
        assert failures, out
        assert named in "\n".join(failures), (path, failures)
    code, out, _ = verify(private_gateway, obs_id, "--vkey", key)
    assert code == 0, out


def test_state_catches_a_log_rebuilt_differently(private_gateway: Gateway, tmp_path: Path) -> None:
    key = vkey(private_gateway)
    obs_id = latest_id(private_gateway)
    state = tmp_path / "seen"
    assert verify(private_gateway, obs_id, "--vkey", key, "--state", str(state))[0] == 0
    # The operator re-signs a log whose first leaf differs (a past revision rewritten), with the
    # same key: everything served checks out alone, only --state can tell.
    size = private_gateway.get(LATEST).json()["dataset_revision"]
    site = private_gateway.site
    forged = tmp_path / "forged"
    shutil.copytree(site / "log", forged)
    bundle_path = site / "log" / tiles.Tile(-1, 0, size).path
    entries = tiles.decode_bundle(bundle_path.read_bytes())
    entries[0] = entries[0].replace(b'"revision":1', b'"revision":1 ')
    hashes = [merkle.leaf_hash(x) for x in entries]
    edge, files = tiles.append(tiles.Edge.empty(), entries, hashes)
    for tile, data in files.items():
        (site / "log" / tile.path).write_bytes(data)
    from cryptography.hazmat.primitives import serialization

    private = serialization.load_pem_private_key(
        (private_gateway.home / "log.key").read_bytes(), password=None
    )
    name = note.parse_verifier_key(key).name
    resigned = note.sign(note.Checkpoint(name, size, edge.root()).text, name, private)  # type: ignore[arg-type]
    (site / "log" / "checkpoints" / str(size)).write_text(resigned)
    code, out, _ = verify(private_gateway, obs_id, "--vkey", key, "--state", str(state))
    assert code == 1, out
    assert "history rewritten" in out
    assert base64.b64encode(edge.root()).decode() not in state.read_text()  # not saved
    assert orjson.loads(out.splitlines()[-1])["ok"] is False


def settled_id(gateway: Gateway, before: int) -> str:
    """An observation whose every record (events and cotejos too) is of a revision before
    ``before``, so the log of ``before - 1`` revisions holds all its leaves."""
    rates = "/v1/rates?currency=USD&series=publicado&from=2026-01-01&to=2026-12-31"
    for item in gateway.get(rates).json()["items"]:
        detail = gateway.get(f"/v1/observations/{item['observacion_id']}").json()
        revisions = [detail["observacion"]["revision_creada"]]
        revisions += [e["revision"] for e in detail["eventos"] + detail["cotejos"]]
        if max(revisions) < before:
            return item["observacion_id"]
    raise AssertionError(f"the demo has no observation settled before revision {before}")


def test_state_keeps_a_newer_checkpoint_when_the_served_log_is_a_prefix_of_it(
    private_gateway: Gateway, tmp_path: Path
) -> None:
    """A gateway whose mirror lags serves an older checkpoint of the same log: `--state` proves
    it a prefix of the newer one it saved (from the tiles of that size, which the log keeps),
    reports it as a notice (exit 0), not "history rewritten", and keeps the newer checkpoint,
    so the next run against an up-to-date gateway is checked against that one."""
    key = vkey(private_gateway)
    size = private_gateway.get(LATEST).json()["dataset_revision"]
    obs_id = settled_id(private_gateway, size)
    state = tmp_path / "seen"
    assert verify(private_gateway, obs_id, "--vkey", key, "--state", str(state))[0] == 0
    saved = state.read_text()
    # The log as a gateway one revision behind serves it: the checkpoint of size - 1, signed by
    # the same key, with its partial tiles (the first size - 1 hashes and entries), beside the
    # tiles of the size this consumer saw. The published revision's checkpoint is replaced.
    log = private_gateway.site / "log"
    hashes = (log / tiles.Tile(0, 0, size).path).read_bytes()
    entries = tiles.decode_bundle((log / tiles.Tile(-1, 0, size).path).read_bytes())
    (log / tiles.Tile(0, 0, size - 1).path).write_bytes(hashes[: 32 * (size - 1)])
    (log / tiles.Tile(-1, 0, size - 1).path).write_bytes(tiles.encode_bundle(entries[:-1]))
    leaves = [hashes[32 * i : 32 * (i + 1)] for i in range(size - 1)]
    root = merkle.tree_hash(
        size - 1, lambda level, i: merkle.perfect_root(leaves[i << level :][: 1 << level])
    )
    from cryptography.hazmat.primitives import serialization

    private = serialization.load_pem_private_key(
        (private_gateway.home / "log.key").read_bytes(), password=None
    )
    origin = note.parse_verifier_key(key).name
    behind = note.sign(note.Checkpoint(origin, size - 1, root).text, origin, private)  # type: ignore[arg-type]
    (log / "checkpoints" / str(size)).write_text(behind)
    assert f"\n{size - 1}\n" in private_gateway.get("/v1/log/checkpoint").text
    code, out, _ = verify(private_gateway, obs_id, "--vkey", key, "--state", str(state))
    assert code == 0, out
    *plain, last = out.splitlines()
    behind = [line for line in plain if "is behind the checkpoint" in line]
    assert len(behind) == 1 and f"of {size} seen before" in behind[0], out
    assert not any(line.startswith("FAIL") for line in plain), out
    assert [f["level"] for f in orjson.loads(last)["findings"]] == ["notice"]
    assert state.read_text() == saved  # never rolled back to the older checkpoint


def test_a_served_log_behind_a_saved_checkpoint_it_cannot_be_checked_against_is_exit_2(
    private_gateway: Gateway, tmp_path: Path
) -> None:
    """A saved checkpoint of a size whose tiles the service does not hold (a gateway whose
    mirror lags, or a fork kept behind what the consumer saw): the served log cannot be shown
    a prefix of it, so the run cannot conclude (exit 2, "run again"); it never passes."""
    key = vkey(private_gateway)
    obs_id = latest_id(private_gateway)
    state = tmp_path / "seen"
    assert verify(private_gateway, obs_id, "--vkey", key, "--state", str(state))[0] == 0
    served = note.parse_checkpoint(note.open_note(state.read_text(), note.parse_verifier_key(key)))
    from cryptography.hazmat.primitives import serialization

    private = serialization.load_pem_private_key(
        (private_gateway.home / "log.key").read_bytes(), password=None
    )
    newer = note.Checkpoint(served.origin, served.size + 1, bytes(32)).text
    saved = note.sign(newer, served.origin, private)  # type: ignore[arg-type]
    state.write_text(saved)
    code, out, err = verify(private_gateway, obs_id, "--vkey", key, "--state", str(state))
    assert code == 2, out + err
    assert f"behind the checkpoint of {served.size + 1} seen before" in err
    assert "run again" in err and "Traceback" not in err
    assert state.read_text() == saved


def test_an_unusable_state_file_is_a_named_finding_or_one_line_never_a_traceback(
    gateway: Gateway, tmp_path: Path
) -> None:
    """DECISIONS 3: "Every CLI error ... is one line on stderr, never a traceback." A `--state`
    file whose bytes hold no checkpoint (not text, far more than a checkpoint) is a failed
    check naming it, exit 1, as a garbled one is; a path that cannot be read or written (a
    folder, a path under a plain file) is refused before any check, one line, exit 2, as an
    unreadable `--response` is. (Formerly: UnicodeDecodeError, IsADirectoryError and
    FileExistsError tracebacks, a read without end of /dev/zero, and a FileNotFoundError
    traceback, after the checks, for a folder in which no file can be made.)"""
    obs_id, key = latest_id(gateway), vkey(gateway)
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe\x00bad")
    huge = tmp_path / "huge"
    huge.write_bytes(b"x" * 200_000)
    for state, why in ((binary, "not UTF-8"), (huge, "over"), (Path("/dev/zero"), "over")):
        code, out, err = verify(gateway, obs_id, "--vkey", key, "--state", str(state))
        assert code == 1 and "Traceback" not in err, out + err
        assert f"the saved checkpoint {state}" in out and why in out, out
        assert orjson.loads(out.splitlines()[-1])["ok"] is False
    assert binary.read_bytes() == b"\xff\xfe\x00bad"  # a state that failed is never replaced
    folder = tmp_path / "folder"
    folder.mkdir()
    plain = tmp_path / "plain"
    plain.write_text("a file\n")
    for state, why in (
        (folder, "is a folder"),
        (plain / "seen", f"{plain} is not a folder"),
        (Path("/proc/self/seen"), "cannot be made in /proc/self"),  # a folder that takes no file
    ):
        code, out, err = verify(gateway, obs_id, "--vkey", key, "--state", str(state))
        assert (code, out) == (2, ""), out + err
        assert len(err.splitlines()) == 1 and why in err, err
