"""The token store and ``fxev token ...`` (docs/decisions.md#tokens)."""

from __future__ import annotations

import argparse
import hmac
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from builder.core.settings import load_settings
from builder.core.vocabulary import LIMA
from tokens import cli as token_cli
from tokens.store import (
    TOKENS_FILE,
    IssuedToken,
    TokenError,
    TokenStore,
    parse_token_id,
    token_hash,
)

NOW = datetime(2026, 9, 20, 13, 5, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def store(home: Path) -> Iterator[TokenStore]:
    opened = TokenStore.open(home)
    yield opened
    opened.close()


def secret_of(issued: IssuedToken) -> str:
    return issued.token_text.split("_", 2)[2]


def flip(text: str, position: int) -> str:
    replacement = "A" if text[position] != "A" else "B"
    return text[:position] + replacement + text[position + 1 :]


def store_bytes(home: Path) -> bytes:
    """Every byte of the token store's files: the database, its WAL and shared memory."""
    return b"".join(path.read_bytes() for path in sorted(home.glob(TOKENS_FILE + "*")))


# --- issuing -----------------------------------------------------------------------------------


def test_issued_token_is_prefixed_and_names_its_public_id(store: TokenStore) -> None:
    issued = store.issue("acme-erp", None, NOW)
    assert issued.token_text.startswith(f"fxev_{issued.id}_")
    assert parse_token_id(issued.token_text) == issued.id
    assert len(secret_of(issued)) == 43  # secrets.token_urlsafe(32): 256 random bits


def test_each_issue_gives_a_new_id_and_a_new_secret(store: TokenStore) -> None:
    first, second = store.issue("acme", None, NOW), store.issue("acme", None, NOW)
    assert first.id != second.id
    assert secret_of(first) != secret_of(second)


def test_store_file_holds_only_the_hash_never_the_token(home: Path, store: TokenStore) -> None:
    issued = store.issue("acme-erp", date(2026, 12, 31), NOW)
    secret = secret_of(issued).encode()
    while_open = store_bytes(home)
    assert token_hash(issued.token_text).encode() in while_open
    store.close()
    after_close = store_bytes(home)
    for raw in (while_open, after_close):
        assert issued.token_text.encode() not in raw
        assert secret not in raw
    assert token_hash(issued.token_text).encode() in after_close


def test_listing_and_repr_never_show_the_secret_or_the_hash(store: TokenStore) -> None:
    issued = store.issue("acme-erp", None, NOW)
    shown = orjson.dumps([record.to_json() for record in store.list()]).decode()
    shown += repr(store.list()) + repr(issued)
    assert secret_of(issued) not in shown
    assert token_hash(issued.token_text).removeprefix("sha256:") not in shown
    assert issued.id in shown


@pytest.mark.parametrize("name", ["", "   ", "a\nb", "x" * 201])
def test_issue_refuses_an_unusable_name(store: TokenStore, name: str) -> None:
    with pytest.raises(TokenError):
        store.issue(name, None, NOW)
    assert store.list() == []


def test_issue_refuses_an_expiry_already_over_in_lima(store: TokenStore) -> None:
    with pytest.raises(TokenError, match="already over"):
        store.issue("acme", date(2026, 9, 19), NOW)
    assert store.list() == []


# --- checking ----------------------------------------------------------------------------------


def test_check_accepts_the_issued_token(store: TokenStore) -> None:
    issued = store.issue("acme-erp", None, NOW)
    record = store.check(issued.token_text, NOW)
    assert record is not None
    assert (record.id, record.name) == (issued.id, "acme-erp")


def test_check_rejects_anything_but_the_exact_token(store: TokenStore) -> None:
    issued = store.issue("acme-erp", None, NOW)
    other = store.issue("other", None, NOW)
    text = issued.token_text
    rejected = [
        "",
        "garbage",
        "Bearer " + text,
        text + " ",
        " " + text,
        text + "x",
        text[:-1],
        text[: len(text) // 2],
        text.upper(),
        f"fxev_{issued.id}_{secret_of(other)}",  # a real secret under another id
        f"fxev_{other.id}_{secret_of(issued)}",
        "fxev_" + "0" * 16 + "_" + secret_of(issued),
        "\x00" * len(text),
    ]
    for candidate in rejected:
        assert store.check(candidate, NOW) is None, candidate
    assert store.check(text, NOW) is not None


def test_check_rejects_the_token_with_any_one_character_flipped(store: TokenStore) -> None:
    text = store.issue("acme-erp", None, NOW).token_text
    for position in range(len(text)):
        assert store.check(flip(text, position), NOW) is None, position


def test_check_rejects_a_token_of_another_installation(tmp_path: Path, store: TokenStore) -> None:
    with TokenStore.open(tmp_path / "elsewhere") as elsewhere:
        foreign = elsewhere.issue("acme-erp", None, NOW)
    assert store.check(foreign.token_text, NOW) is None


def test_two_active_tokens_of_one_name_both_work(store: TokenStore) -> None:
    old, new = store.issue("acme-erp", None, NOW), store.issue("acme-erp", None, NOW)
    assert store.check(old.token_text, NOW) is not None
    assert store.check(new.token_text, NOW) is not None
    store.revoke(old.id, NOW)
    assert store.check(old.token_text, NOW) is None
    assert store.check(new.token_text, NOW) is not None


def test_check_compares_hashes_with_hmac_compare_digest(
    store: TokenStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    issued = store.issue("acme-erp", None, NOW)
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    assert store.check(issued.token_text, NOW) is not None
    assert calls == [(token_hash(issued.token_text).encode(),) * 2]
    assert store.check(flip(issued.token_text, len(issued.token_text) - 1), NOW) is None
    assert len(calls) == 2


def test_check_is_one_select_by_primary_key(store: TokenStore) -> None:
    issued = store.issue("acme-erp", None, NOW)
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    try:
        assert store.check(issued.token_text, NOW) is not None
    finally:
        store.conn.set_trace_callback(None)
    assert len(statements) == 1
    assert statements[0].startswith("SELECT")
    plan = store.conn.execute("EXPLAIN QUERY PLAN " + statements[0]).fetchall()
    assert any("USING INDEX" in row["detail"] and "(id=?)" in row["detail"] for row in plan)


@given(st.text(max_size=120))
def test_parse_token_id_never_raises_and_only_reads_well_formed_tokens(text: str) -> None:
    found = parse_token_id(text)
    assert found is None or (text.startswith(f"fxev_{found}_") and len(text) == 65)


# --- revoking ----------------------------------------------------------------------------------


def test_revoke_makes_the_very_next_check_fail_in_every_open_store(
    home: Path, store: TokenStore
) -> None:
    issued = store.issue("acme-erp", None, NOW)
    with TokenStore.open(home) as other_worker:
        assert other_worker.check(issued.token_text, NOW) is not None
        revoked = store.revoke(issued.id, NOW + timedelta(seconds=1))
        assert revoked.revoked_at == NOW + timedelta(seconds=1)
        assert store.check(issued.token_text, NOW) is None
        assert other_worker.check(issued.token_text, NOW) is None


_CHECK_IN_ANOTHER_PROCESS = """
import sys
from datetime import datetime
from pathlib import Path
from tokens.store import TokenStore
with TokenStore.open(Path(sys.argv[1])) as store:
    record = store.check(sys.argv[2], datetime.fromisoformat(sys.argv[3]))
print("valid" if record else "invalid")
"""


def check_in_another_process(home: Path, token_text: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _CHECK_IN_ANOTHER_PROCESS, str(home), token_text, NOW.isoformat()],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.strip()


def test_revoke_is_seen_by_another_process_at_once(home: Path, store: TokenStore) -> None:
    issued = store.issue("acme-erp", None, NOW)
    assert check_in_another_process(home, issued.token_text) == "valid"
    store.revoke(issued.id, NOW)
    assert check_in_another_process(home, issued.token_text) == "invalid"


def test_revoking_twice_errors_and_changes_nothing(store: TokenStore) -> None:
    issued = store.issue("acme-erp", None, NOW)
    first = store.revoke(issued.id, NOW)
    with pytest.raises(TokenError, match="already revoked"):
        store.revoke(issued.id, NOW + timedelta(hours=1))
    assert store.list() == [first]
    assert store.get(issued.id).revoked_at == NOW


def test_revoking_an_unknown_id_errors_and_changes_nothing(store: TokenStore) -> None:
    issued = store.issue("acme-erp", None, NOW)
    with pytest.raises(TokenError, match="no token"):
        store.revoke("0123456789abcdef", NOW)
    assert [record.revoked_at for record in store.list()] == [None]
    assert store.check(issued.token_text, NOW) is not None


# --- expiry: valid through the end of the date in Lima -----------------------------------------


@pytest.mark.parametrize(
    ("instant", "valid"),
    [
        (datetime(2026, 9, 20, 0, 0, tzinfo=LIMA), True),
        (datetime(2026, 9, 20, 23, 59, tzinfo=LIMA), True),
        (datetime(2026, 9, 21, 4, 59, 59, 999999, tzinfo=UTC), True),
        (datetime(2026, 9, 21, 0, 0, tzinfo=LIMA), False),
        (datetime(2026, 9, 21, 5, 0, tzinfo=UTC), False),
        (datetime(2027, 1, 1, tzinfo=UTC), False),
    ],
)
def test_expires_date_is_valid_until_the_next_lima_midnight(
    store: TokenStore, instant: datetime, valid: bool
) -> None:
    issued = store.issue("acme-erp", date(2026, 9, 20), NOW)
    assert (store.check(issued.token_text, instant) is not None) is valid


def test_token_without_expiry_never_expires(store: TokenStore) -> None:
    issued = store.issue("acme-erp", None, NOW)
    assert store.check(issued.token_text, datetime(2099, 1, 1, tzinfo=UTC)) is not None


def test_check_refuses_a_naive_now(store: TokenStore) -> None:
    issued = store.issue("acme-erp", None, NOW)
    with pytest.raises(ValueError, match="naive"):
        store.check(issued.token_text, datetime(2026, 9, 20, 12, 0))  # noqa: DTZ001


# --- listing -----------------------------------------------------------------------------------


def test_list_shows_ids_names_expiry_and_revoked_state(store: TokenStore) -> None:
    kept = store.issue("acme-erp", date(2026, 9, 20), NOW)
    gone = store.issue("acme-erp", None, NOW + timedelta(seconds=1))
    store.revoke(gone.id, NOW + timedelta(seconds=2))
    items = [record.to_json() for record in store.list()]
    assert items == [
        {
            "id": kept.id,
            "name": "acme-erp",
            "created_at": "2026-09-20T13:05:00.000000Z",
            "expires": "2026-09-20",
            "expires_at": "2026-09-21T05:00:00.000000Z",
            "revoked": False,
            "revoked_at": None,
        },
        {
            "id": gone.id,
            "name": "acme-erp",
            "created_at": "2026-09-20T13:05:01.000000Z",
            "expires": None,
            "expires_at": None,
            "revoked": True,
            "revoked_at": "2026-09-20T13:05:02.000000Z",
        },
    ]
    states = [record.state(datetime(2026, 9, 22, tzinfo=UTC)) for record in store.list()]
    assert states == ["expired", "revoked"]


# --- the CLI handlers --------------------------------------------------------------------------


def run_cli(argv: list[str], home: Path) -> int:
    parser = argparse.ArgumentParser(prog="fxev")
    token_cli.add_token_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    # FXEV_NOW is set far in the past: token commands must ignore it for the real clock.
    settings = load_settings({"FXEV_HOME": str(home), "FXEV_NOW": "2001-01-01T00:00:00Z"})
    return args.handler(args, settings)


def lima_today() -> date:
    return datetime.now(LIMA).date()


def test_cli_issue_prints_json_then_the_token_alone_on_the_last_line(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expires = lima_today() + timedelta(days=30)
    assert run_cli(["token", "issue", "acme-erp", "--expires", expires.isoformat()], home) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    header, token_text = orjson.loads(lines[0]), lines[1]
    assert header == {"id": header["id"], "name": "acme-erp"}  # exactly DECISIONS' shape
    assert token_text == token_text.strip()
    assert parse_token_id(token_text) == header["id"]
    with TokenStore.open(home) as store:
        assert store.check(token_text, datetime.now(UTC)) is not None
    assert run_cli(["token", "list"], home) == 0
    [listed] = orjson.loads(capsys.readouterr().out.splitlines()[-1])["items"]
    assert listed["id"] == header["id"] and expires.isoformat() in str(listed)


def test_cli_list_and_revoke_print_json_without_the_secret(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_cli(["token", "issue", "acme-erp"], home)
    token_text = capsys.readouterr().out.splitlines()[-1]
    token_id = parse_token_id(token_text)
    secret = token_text.split("_", 2)[2]

    assert run_cli(["token", "list"], home) == 0
    out = capsys.readouterr().out
    listed = orjson.loads(out.splitlines()[-1])
    assert [(item["id"], item["name"], item["state"]) for item in listed["items"]] == [
        (token_id, "acme-erp", "active")
    ]
    assert secret not in out
    assert "sha256" not in out

    assert run_cli(["token", "revoke", str(token_id)], home) == 0
    revoked = orjson.loads(capsys.readouterr().out.splitlines()[-1])
    assert (revoked["id"], revoked["revoked"]) == (token_id, True)
    with TokenStore.open(home) as store:
        assert store.check(token_text, datetime.now(UTC)) is None


def test_cli_revoke_of_an_unknown_id_raises_token_error(home: Path) -> None:
    with TokenStore.open(home):  # a store, without that id (no store at all: NotFound)
        pass
    with pytest.raises(TokenError):
        run_cli(["token", "revoke", "0123456789abcdef"], home)


def test_cli_expiry_is_judged_by_the_real_clock_not_fxev_now(home: Path) -> None:
    # FXEV_NOW (2001) would accept yesterday; the real clock refuses it.
    yesterday = lima_today() - timedelta(days=1)
    with pytest.raises(TokenError, match="already over"):
        run_cli(["token", "issue", "acme", "--expires", yesterday.isoformat()], home)


@pytest.mark.parametrize(
    "value", ["2026-02-30", "20260920", "2026-W38-1", "tomorrow", "", "9999-12-31"]
)
def test_cli_rejects_a_bad_expires_value_as_a_usage_error(
    home: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The last date a date can hold was a traceback (its end, the next midnight, overflows)."""
    with pytest.raises(SystemExit) as exited:
        run_cli(["token", "issue", "acme", "--expires", value], home)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "YYYY-MM-DD" in err or "before 9999-12-31" in err, err
    assert not (home / TOKENS_FILE).exists()


def test_cli_issues_a_token_that_expires_on_the_last_nameable_day(home: Path) -> None:
    assert run_cli(["token", "issue", "acme", "--expires", "9999-12-30"], home) == 0
