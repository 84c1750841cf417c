"""The page-token secret: created once in the home, then read back."""

from __future__ import annotations

from pathlib import Path

from gateway.api import pagetoken


def test_page_token_secret_is_created_once(tmp_path: Path) -> None:
    first = pagetoken.load_or_create_secret(tmp_path)
    assert len(first) == 32
    assert pagetoken.load_or_create_secret(tmp_path) == first
    assert [p.name for p in tmp_path.iterdir()] == [pagetoken.SECRET_FILE]
