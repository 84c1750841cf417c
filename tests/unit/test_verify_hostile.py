"""The consumer's verifier against a hostile or lagging service: a forked log, a broken chain,
malformed answers, endless waits and bodies, a response of a revision the API never reached.
Each answer is a verdict (exit 1) or "cannot conclude" (exit 2), never a pass or a traceback."""

from __future__ import annotations

import copy
import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import responses
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from builder.core.errors import RemoteError
from builder.tlog import leaf as leaves
from builder.tlog import merkle, note, proof, tiles
from tests.unit.test_verify_checks import BODY, SHA, chain_of_two, failures, headers, record
from tests.unit.test_verify_checks import detail as detail_of
from verifier.checks import Check, chain_checks
from verifier.client import ApiClient, ClientError, EvidenceAnswer
from verifier.command import (
    MalformedAnswer,
    SavedResponse,
    VerifyError,
    parse_saved_response,
    verify_observation,
    verify_saved_response,
)
from verifier.logcheck import LogOptions, LogView, keep_checkpoint, log_checks

NAME = "fxev.test/log"
OBS = "706171d6-e09b-4100-8581-85ff80219080"
PRIVATE = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
KEY = note.verifier_key(NAME, PRIVATE)


def log_of(entries: list[bytes]) -> dict[str, bytes]:
    """The files of a log of ``entries`` (at most 256), its checkpoint signed by ``PRIVATE``."""
    hashes = [merkle.leaf_hash(e) for e in entries]
    size = len(hashes)
    width = size % tiles.WIDTH or tiles.WIDTH
    root = merkle.tree_hash(
        size, lambda lvl, i: merkle.perfect_root(hashes[i << lvl :][: 1 << lvl])
    )
    return {
        "checkpoint": note.sign(note.Checkpoint(NAME, size, root).text, NAME, PRIVATE).encode(),
        tiles.Tile(0, 0, width).path: b"".join(hashes),
        tiles.Tile(-1, 0, width).path: tiles.encode_bundle(entries),
    }


def leaf(revision: int, **rows: list[str]) -> bytes:
    return leaves.Leaf(revision, "2026-09-21T20:00:00.000000Z", "sha256:00", rows).encode()[0]


class Stub:
    """An ``ApiClient`` that answers from dicts: a service that says what it likes."""

    def __init__(self, detail: dict, log: dict[str, bytes]) -> None:
        self.detail, self.files = detail, log

    def observation(self, obs_id: str, *, missing_ok: bool = False) -> dict | None:
        return self.detail if obs_id == self.detail["observacion"]["id"] else None

    def evidence(self, ev_id: str) -> EvidenceAnswer:
        return EvidenceAnswer(BODY, headers())

    def log(self, path: str) -> bytes | None:
        return self.files.get(path)


def one_observation(revision: int = 1) -> dict:
    found = detail_of(record(OBS, revision))
    found["observacion"]["id"] = OBS
    return found


def fails(checks: list[Check]) -> list[str]:
    return [c.message for c in checks if c.status == "fail"]


# -- the chain: the link into the observation verified is checked like every other ----------


def test_a_correccion_of_the_verified_observation_naming_another_fails() -> None:
    old, new = chain_of_two()
    new["eventos"][1]["detalle"]["supersede"] = "not-a"
    assert failures(chain_checks(new, {"a": old})) != []


def test_the_verified_observation_created_before_what_it_supersedes_fails() -> None:
    old, new = chain_of_two()
    new = copy.deepcopy(new)
    new["observacion"]["revision_creada"] = 1  # its ancestor is of revision 2
    assert failures(chain_checks(new, {"a": old})) != []


# -- hostile answers: a verdict or exit 2, never a traceback ---------------------------------


def test_an_event_revision_that_is_not_a_number_is_a_malformed_answer() -> None:
    found = one_observation()
    found["eventos"][0]["revision"] = "four"
    stub = Stub(found, log_of([leaf(1)]))
    with pytest.raises(MalformedAnswer):
        verify_observation(stub, OBS, lambda _: None, LogOptions(KEY))  # type: ignore[arg-type]


def test_a_capture_instant_that_is_not_a_timestamp_is_not_a_traceback() -> None:
    found = one_observation()
    found["observacion"]["capturado_en"] = "garbage"
    try:
        checks = verify_observation(Stub(found, {}), OBS, lambda _: None)  # type: ignore[arg-type]
    except MalformedAnswer:
        return
    assert fails(checks) != []


@pytest.fixture
def api() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


@pytest.mark.parametrize("retry_after", ["inf", "1e9"])
def test_a_hostile_retry_after_is_bounded(api: responses.RequestsMock, retry_after: str) -> None:
    url = f"https://fxev.test/v1/observations/{OBS}"
    api.get(url, status=429, headers={"Retry-After": retry_after}, json={"code": "RATE_LIMITED"})
    api.get(url, json={"observacion": {"id": OBS}})
    slept: list[float] = []
    try:
        ApiClient("https://fxev.test", "fxev_secret", sleep=slept.append).observation(OBS)
    except RemoteError:
        return  # refusing to wait is an answer too (exit 2)
    assert all(0 < wait <= 3600 for wait in slept), slept


def test_a_signed_leaf_naming_a_rows_list_that_is_not_json_is_a_leaf_error() -> None:
    rows = b"not json"
    head = {"chain": "sha256:00", "fxev_leaf": 1, "revision": 1, "ts_commit": "x"}
    data = leaves.canonical(head | {"rows_sha256": hashlib.sha256(rows).hexdigest()})
    with pytest.raises(leaves.LeafError):
        leaves.decode(data, rows)


# -- the log: every bad item reported; a forked log never passes ----------------------------


def test_every_row_a_leaf_does_not_commit_to_is_reported() -> None:
    stub = Stub(one_observation(), log_of([leaf(1)]))  # a leaf that commits to nothing
    checks = log_checks(stub, stub.detail, SHA, LogOptions(KEY))  # type: ignore[arg-type]
    # the observation, its capturada event and the evidence's SHA-256: three bad items
    assert len(fails(checks)) == 3, fails(checks)


def committed_leaf(found: dict) -> bytes:
    """The leaf of revision 1 committing to ``found``'s observation, event and evidence."""
    return leaf(
        1,
        observations=[leaves.row_hash(found["observacion"])],
        events=[leaves.row_hash(found["eventos"][0])],
        evidence=[SHA],
    )


def seen(tmp_path: Path, entries: list[bytes]) -> Path:
    """A ``--state`` file holding the checkpoint of a log of ``entries``."""
    state = tmp_path / "checkpoint"
    state.write_bytes(log_of(entries)["checkpoint"])
    return state


def test_a_forked_log_shorter_than_the_saved_checkpoint_is_not_passed(tmp_path: Path) -> None:
    """A fork served one revision behind what the consumer saw, without the tiles of the size
    seen: it cannot be checked (exit 2), and is never passed (exit 0)."""
    found = one_observation()
    committed = committed_leaf(found)
    state = seen(tmp_path, [committed, leaf(2)])
    fork = log_of([committed.replace(b"2026-09-21", b"2020-01-01")])  # another history
    with pytest.raises(ClientError, match="behind the checkpoint of 2 seen before"):
        log_checks(Stub(found, fork), found, SHA, LogOptions(KEY, state))  # type: ignore[arg-type]
    assert state.read_bytes() == log_of([committed, leaf(2)])["checkpoint"]  # kept


def test_a_forked_log_shorter_than_the_saved_checkpoint_with_its_tiles_is_rewritten(
    tmp_path: Path,
) -> None:
    """The same fork from a service that also holds the tiles of the size seen: they show the
    served checkpoint is no prefix of it, "history rewritten" (exit 1)."""
    found = one_observation()
    committed = committed_leaf(found)
    state = seen(tmp_path, [committed, leaf(2)])
    honest_tiles = {k: v for k, v in log_of([committed, leaf(2)]).items() if k != "checkpoint"}
    fork = log_of([committed.replace(b"2026-09-21", b"2020-01-01")]) | honest_tiles
    checks = log_checks(Stub(found, fork), found, SHA, LogOptions(KEY, state))  # type: ignore[arg-type]
    assert any("history rewritten" in message for message in fails(checks)), checks


def test_a_log_behind_the_saved_checkpoint_and_a_prefix_of_it_is_a_notice(
    tmp_path: Path,
) -> None:
    """A gateway whose mirror lags serves an older checkpoint of the same log, and the log
    holds the tiles of every size it signed: proved a prefix, a notice (exit 0), and the newer
    checkpoint stays saved."""
    found = one_observation()
    committed = committed_leaf(found)
    state = seen(tmp_path, [committed, leaf(2)])
    newer = state.read_bytes()
    behind = log_of([committed]) | {
        k: v for k, v in log_of([committed, leaf(2)]).items() if k != "checkpoint"
    }
    checks = log_checks(Stub(found, behind), found, SHA, LogOptions(KEY, state))  # type: ignore[arg-type]
    assert fails(checks) == [], checks
    notices = [c.message for c in checks if c.status == "notice"]
    assert len(notices) == 1 and "behind the checkpoint of 2 seen before" in notices[0]
    assert state.read_bytes() == newer


# -- the consumer's command runs without the operator's settings or write side ---------------


def run_verifier(tmp_path: Path, module: str, *args: str) -> subprocess.CompletedProcess[str]:
    environ = dict(os.environ, FXEV_PLAUSIBILITY_PCT="abc", FXEV_HOME=str(tmp_path / "home"))
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        env=environ,
        capture_output=True,
        text=True,
        check=False,
    )


def a_proof(tmp_path: Path) -> Path:
    data = leaf(1)
    text = proof.TlogProof(0, [], log_of([data])["checkpoint"].decode(), data).encode()
    (tmp_path / "p").write_text(text)
    return tmp_path / "p"


def test_verify_proof_does_not_read_the_operators_settings(tmp_path: Path) -> None:
    ran = run_verifier(tmp_path, "builder", "verify", "--proof", str(a_proof(tmp_path)),
                       "--vkey", KEY.text)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert not (tmp_path / "home").exists()


WRITE_SIDE = ("builder.registry", "builder.capture", "builder.publish", "builder.store",
              "builder.render", "builder.tree", "builder.ops", "tokens", "gateway")  # fmt: skip


def test_python_m_verifier_verifies_a_proof_with_no_write_side_module_loaded(
    tmp_path: Path,
) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import runpy, sys\n"
        "try:\n"
        "    runpy.run_module('verifier', run_name='__main__')\n"
        "finally:\n"
        f"    loaded = sorted(m for m in sys.modules if m.startswith({WRITE_SIDE!r}))\n"
        "    print('loaded:', loaded, file=sys.stderr)\n"
    )
    environ = dict(os.environ, FXEV_PLAUSIBILITY_PCT="abc")
    ran = subprocess.run(
        [sys.executable, str(probe), "--proof", str(a_proof(tmp_path)), "--vkey", KEY.text],
        env=environ,
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert "loaded: []" in ran.stderr
    assert '"ok":true' in ran.stdout.splitlines()[-1]


# -- a saved response: its revision read as the log says ------------------------------------


def test_a_saved_response_of_a_revision_the_api_has_not_reached_is_not_concluded() -> None:
    """A response claiming revision 999 against an API whose log is of 1 revision: the API
    cannot tell what was valid then (exit 2), where it used to pass "as of revision 999"."""
    found = one_observation()
    saved = SavedResponse(({"observacion_id": OBS},), 999)
    stub = Stub(found, log_of([committed_leaf(found)]))
    with pytest.raises(ClientError, match="behind the response's 999"):
        verify_saved_response(stub, saved, lambda _: None)  # type: ignore[arg-type]


@pytest.mark.parametrize("revision", ["true", "0", "-5", '"4"'])
def test_a_saved_response_whose_revision_is_not_a_revision_is_refused(revision: str) -> None:
    with pytest.raises(VerifyError, match="no dataset_revision"):
        parse_saved_response(f'{{"dataset_revision": {revision}, "items": []}}'.encode())


def test_the_checkpoint_is_saved_once_and_only_when_every_log_check_of_the_run_passed(
    tmp_path: Path,
) -> None:
    """With `--response`, one item's log checks passing must not save the checkpoint while a
    later item's fail: the state is kept once, at the end of a run whose log checks all pass."""
    found = one_observation()
    files = log_of([committed_leaf(found)])
    state = tmp_path / "seen"
    options = LogOptions(KEY, state)
    stub = Stub(found, files)
    view = LogView(stub, KEY)  # type: ignore[arg-type]
    checks = log_checks(stub, found, SHA, options, view)  # type: ignore[arg-type]
    assert fails(checks) == [] and not state.exists()  # nothing saved by the check itself
    later = Check("fail", "log", "the leaf of revision 2 does not commit to x", "another")
    keep_checkpoint(view, options, [*checks, later])
    assert not state.exists()
    keep_checkpoint(view, options, checks)
    assert state.read_bytes() == files["checkpoint"]
