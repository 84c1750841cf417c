"""The gateway's token check from memory: as exact as the store's, revocation included."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from tokens.cache import CachedTokenCheck
from tokens.store import TokenStore

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 9, 20, 13, 5, tzinfo=UTC)


@pytest.fixture
def admin(tmp_path: Path) -> Iterator[TokenStore]:
    """The operator's connection (issues and revokes)."""
    with TokenStore.open(tmp_path) as store:
        yield store


@pytest.fixture
def gateway(tmp_path: Path, admin: TokenStore) -> Iterator[CachedTokenCheck]:
    """A worker's read-only connection, behind the memo."""
    with TokenStore.open(tmp_path) as store:
        yield CachedTokenCheck(store)


def test_a_revocation_elsewhere_fails_the_very_next_check(
    admin: TokenStore, gateway: CachedTokenCheck
) -> None:
    issued = admin.issue("acme-erp", None, NOW)
    assert gateway.check(issued.token_text, NOW) is not None
    assert gateway.check(issued.token_text, NOW) is not None  # now from memory
    admin.revoke(issued.id, NOW)
    assert gateway.check(issued.token_text, NOW) is None


def test_a_revocation_by_another_process_fails_the_very_next_check(
    tmp_path: Path, admin: TokenStore, gateway: CachedTokenCheck
) -> None:
    issued = admin.issue("acme-erp", None, NOW)
    assert gateway.check(issued.token_text, NOW) is not None
    revoke = (
        "import sys; from datetime import datetime, UTC; from pathlib import Path;"
        "from tokens.store import TokenStore;"
        "TokenStore.open(Path(sys.argv[1])).revoke(sys.argv[2], datetime.now(UTC))"
    )
    subprocess.run(
        [sys.executable, "-c", revoke, str(tmp_path), issued.id],
        cwd=REPO,
        check=True,
        timeout=60,
    )
    assert gateway.check(issued.token_text, NOW) is None


def test_a_token_issued_after_an_unknown_answer_works_at_once(
    admin: TokenStore, gateway: CachedTokenCheck
) -> None:
    assert gateway.check("fxev_0123456789abcdef_" + "A" * 43, NOW) is None
    issued = admin.issue("acme-erp", None, NOW)
    assert gateway.check(issued.token_text, NOW) is not None


def test_expiry_is_checked_against_now_on_every_call(
    admin: TokenStore, gateway: CachedTokenCheck
) -> None:
    issued = admin.issue("acme-erp", date(2026, 9, 21), NOW)
    before_midnight_lima = datetime(2026, 9, 22, 4, 59, 59, tzinfo=UTC)
    assert gateway.check(issued.token_text, before_midnight_lima) is not None
    assert gateway.check(issued.token_text, before_midnight_lima + timedelta(seconds=1)) is None


def test_an_unchanged_file_is_answered_from_memory_without_any_statement(
    admin: TokenStore, gateway: CachedTokenCheck
) -> None:
    issued = admin.issue("acme-erp", None, NOW)
    gateway.check(issued.token_text, NOW)
    statements: list[str] = []
    gateway.store.conn.set_trace_callback(statements.append)
    try:
        for _ in range(3):
            assert gateway.check(issued.token_text, NOW) is not None
    finally:
        gateway.store.conn.set_trace_callback(None)
    assert statements == []


def test_the_memo_is_bounded(admin: TokenStore, tmp_path: Path) -> None:
    with TokenStore.open(tmp_path) as store:
        checker = CachedTokenCheck(store, size=4)
        for n in range(20):
            checker.check(f"fxev_{n:016x}_" + "A" * 43, NOW)
            assert len(checker._known) <= 4


def test_a_naive_now_is_refused(gateway: CachedTokenCheck) -> None:
    with pytest.raises(ValueError, match="naive"):
        gateway.check("fxev_0123456789abcdef_" + "A" * 43, datetime(2026, 9, 20))  # noqa: DTZ001
