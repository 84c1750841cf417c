"""What ``FXEV_STORE_URL`` and the store client's settings may be (``builder.objstore.s3``):
a value no request could ever use is a configuration error (exit 1), never "unreachable"
(exit 2, which tells a scheduler to try again)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from builder.core.errors import ConfigurationError, RemoteError
from builder.core.settings import load_settings, parse_store_url
from builder.objstore.s3 import ObjectStore, one_line


@pytest.mark.parametrize(
    ("url", "bucket", "prefix"),
    [
        ("s3://fxev/prod", "fxev", "prod"),
        ("s3://fxev", "fxev", ""),
        ("s3://my.bucket-1_a/a/b/", "my.bucket-1_a", "a/b"),
    ],
)
def test_a_store_url_names_a_bucket_and_a_prefix(url: str, bucket: str, prefix: str) -> None:
    assert parse_store_url(url) == (bucket, prefix)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (None, "not set"),
        ("nonsense", "must be s3://"),
        ("s3:///p", "names no bucket"),
        ("s3://Bad_Bucket!/x", "names a bucket no S3 client takes: 'Bad_Bucket!'"),
        ("s3://bad bucket/x", "names a bucket no S3 client takes: 'bad bucket'"),
        ("s3://" + "b" * 256 + "/x", "names a bucket no S3 client takes"),
    ],
)
def test_a_store_url_no_request_could_use_is_a_configuration_error(
    url: str | None, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        parse_store_url(url)


@pytest.mark.parametrize("url", ["nonsense", "s3:///p", "s3://bad bucket/x"])
def test_a_store_url_no_request_could_use_stops_every_command(url: str, tmp_path: Path) -> None:
    """Read with the other settings (docs/operating/configuration.md): a command that never
    reaches the store (``fxev token list`` here) refuses it too, one line, exit 1, and creates
    no home."""
    with pytest.raises(ConfigurationError, match="FXEV_STORE_URL"):
        load_settings({"FXEV_HOME": str(tmp_path / "home"), "FXEV_STORE_URL": url})
    env = {**os.environ, "FXEV_HOME": str(tmp_path / "home"), "FXEV_STORE_URL": url}
    env.pop("FXEV_REDIS_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "builder", "token", "list"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done
    assert done.stderr.count("\n") == 1 and "FXEV_STORE_URL" in done.stderr, done.stderr
    assert not (tmp_path / "home").exists()


def test_a_region_boto_refuses_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "bad region!")
    store = ObjectStore("s3://fxev/x", endpoint="http://127.0.0.1:9")
    with pytest.raises(ConfigurationError, match="cannot be asked: Provided region_name") as raised:
        store.client  # noqa: B018 (made on first use)
    assert not isinstance(raised.value, RemoteError)
    assert "\n" not in str(raised.value)


def test_a_message_over_lines_becomes_one() -> None:
    error = ValueError('Invalid bucket name "a b":\nBucket name must match\n  the regex')
    assert one_line(error) == 'Invalid bucket name "a b": Bucket name must match the regex'
