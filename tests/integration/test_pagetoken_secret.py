"""The page-token secret: created once in the home, then read back."""

from __future__ import annotations

from pathlib import Path

from builder.disk.durable import read_or_create_secret
from gateway.api import pagetoken


def test_page_token_secret_is_created_once(tmp_path: Path) -> None:
    first = read_or_create_secret(tmp_path / pagetoken.SECRET_FILE)
    assert len(first) == 32
    assert read_or_create_secret(tmp_path / pagetoken.SECRET_FILE) == first
    assert [p.name for p in tmp_path.iterdir()] == [pagetoken.SECRET_FILE]
