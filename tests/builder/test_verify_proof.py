"""``fxev log proof`` on a built home, then ``fxev verify --proof`` offline with only the key:
it passes, a saved observation record is found in its leaf, and a tampered proof, a changed
record or another key fail with exit 1 naming what failed (docs/transparency.md)."""

from __future__ import annotations

from pathlib import Path

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from builder.tlog import note
from builder.tree import layout
from builder.tree.reader import TreeReader
from tests.builder.test_tree_owner import CSVS, env_for, fxev, seed


def flip(text: str, line: int, at: int) -> str:
    lines = text.split("\n")
    char = lines[line][at]
    lines[line] = lines[line][:at] + ("B" if char != "B" else "C") + lines[line][at + 1 :]
    return "\n".join(lines)


def test_an_offline_proof_verifies_with_only_the_key(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    seed(env, tmp_path, CSVS)
    assert fxev(env, "build").returncode == 0
    vkey = fxev(env, "log", "key").stdout.strip()
    site = tmp_path / "site_out"
    reader = TreeReader(site)
    ids = sorted(path.name for path in (site / layout.OBSERVATIONS).iterdir())
    records = {i: orjson.loads((reader.detail(i, 3) or b"") + b"}")["observacion"] for i in ids}
    obs = next(i for i in ids if records[i]["revision_creada"] == 2)
    made = fxev(env, "log", "proof", obs)
    assert made.returncode == 0, made.stderr
    assert fxev(env, "log", "proof", obs.upper()).stdout == made.stdout  # as the API reads ids
    for wrong in ("not-a-uuid", "../" + obs, obs + "0"):
        refused = fxev(env, "log", "proof", wrong)
        assert refused.returncode == 1 and refused.stdout == "", refused
        assert refused.stderr == f"fxev: {wrong!r} is not an observation id (a 36-character UUID)\n"
    saved = tmp_path / "value.tlog-proof"
    saved.write_text(made.stdout)
    record = tmp_path / "observation.json"
    record.write_bytes(orjson.dumps({"observacion": records[obs], "eventos": []}))
    offline = {k: v for k, v in env.items() if k not in ("FXEV_HOME", "FXEV_SITE")}

    done = fxev(offline, "verify", "--proof", str(saved), "--vkey", vkey, "--record", str(record))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:-1] == [
        "ok   checkpoint signed by the key, tree of 3 revisions",
        "ok   inclusion leaf 1 leads to the signed root",
        "ok   leaf revision 2, 1 observation(s)",
        f"ok   record observacion {obs} is among the leaf's observations",
    ]
    assert orjson.loads(lines[-1]) == {"ok": True, "findings": []}
    by_env = fxev(offline | {"FXEV_LOG_VKEY": vkey}, "verify", "--proof", str(saved))
    assert by_env.returncode == 0 and by_env.stderr == "", by_env

    def refused(text: str, check: str, *more: str, key: str = vkey) -> None:
        saved.write_text(text)
        done = fxev(offline, "verify", "--proof", str(saved), "--vkey", key, *more)
        assert done.returncode == 1, done
        verdict = orjson.loads(done.stdout.splitlines()[-1])
        assert [f["check"] for f in verdict["findings"]] == [check], verdict
        assert f"FAIL {check} " in done.stdout

    blank = made.stdout.split("\n").index("")
    refused(flip(made.stdout, blank + 3, 5), "checkpoint")  # the signed root
    refused(flip(made.stdout, blank + 5, 50), "checkpoint")  # the signature
    refused(flip(made.stdout, 3, 2), "inclusion")  # a proof hash
    refused(flip(made.stdout, 1, 20), "inclusion")  # extra, the leaf
    other = Ed25519PrivateKey.generate()
    wrong = note.verifier_key(vkey.split("+")[0], other).text
    refused(made.stdout, "checkpoint", key=wrong)
    # A record the leaf does not commit to: changed, or of another revision.
    record.write_bytes(orjson.dumps({"observacion": records[obs] | {"compra": "3.999"}}))
    refused(made.stdout, "record", "--record", str(record))
    later = next(i for i in ids if records[i]["revision_creada"] == 3)
    record.write_bytes(orjson.dumps({"observacion": records[later]}))
    refused(made.stdout, "record", "--record", str(record))


def test_the_offline_form_is_asked_rightly(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    proof = tmp_path / "x.tlog-proof"
    proof.write_text("c2sp.org/tlog-proof@v1\nindex 0\n\n")
    key = note.verifier_key("fxev.local/k", Ed25519PrivateKey.generate()).text
    for args in (
        ("--proof", str(proof)),  # no key
        ("--proof", str(proof), "--vkey", key, "--url", "http://127.0.0.1:9"),
        ("--proof", str(tmp_path / "missing"), "--vkey", key),
        ("--proof", str(proof), "--vkey", key, "--record", str(proof)),  # not JSON
        ("--record", str(proof), "--url", "http://127.0.0.1:9"),
    ):
        done = fxev(env, "verify", *args)
        assert done.returncode == 2, (args, done)
        assert done.stdout == "" and len(done.stderr.splitlines()) == 1, (args, done)


def test_an_empty_vkey_is_refused_not_taken_for_no_key(tmp_path: Path) -> None:
    """``--vkey "$VKEY"`` with the variable empty (its ``fxev log key`` failed) must not turn
    the log's checks off and answer ok: it is a key that cannot be used (exit 2)."""
    env = env_for(tmp_path)
    proof = tmp_path / "x.tlog-proof"
    proof.write_text("c2sp.org/tlog-proof@v1\nindex 0\n\n")
    observation = "dcd73f68-28a0-492d-8a18-5d2549f999be"
    for args in (
        (observation, "--url", "http://127.0.0.1:9", "--vkey", ""),
        ("--proof", str(proof), "--vkey", ""),
    ):
        done = fxev(env, "verify", *args)
        assert done.returncode == 2, (args, done)
        assert done.stdout == "", (args, done)
        assert "the log's verifier key cannot be used" in done.stderr, (args, done)
