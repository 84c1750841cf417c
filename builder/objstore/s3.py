"""The object store's client: one bucket and a key prefix (``FXEV_STORE_URL=s3://BUCKET/PREFIX``)
on an S3-compatible endpoint (``FXEV_S3_ENDPOINT``; unset: boto3's default, AWS), credentials
from the standard ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` and ``AWS_REGION``.

Immutable keys are written with :meth:`ObjectStore.put_new`: a key the store already holds with
the same bytes is skipped, one holding other bytes is refused (a ``Conflict``), never overwritten
(the write itself is conditional, ``If-None-Match: *``, so two publishers cannot race either).
Only the pointer is replaced (:meth:`ObjectStore.put`), and, by ``fxev publish --repair`` alone,
a key holding other bytes than the operator's site (:meth:`ObjectStore.put_checked`).

Every failure to reach the store or an answer out of the protocol is a ``RemoteError`` (one
line, exit 2: no verdict, as when ``fxev verify`` cannot ask the API); a setting or credentials
that cannot be used a ``ConfigurationError``; a missing key is ``None``, never an error. boto3 is
imported when a client is made, so commands that never touch the store do not pay for it.
"""

from __future__ import annotations

import enum
import hashlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

from builder.core.errors import ConfigurationError, Conflict, RemoteError
from builder.core.settings import parse_store_url

THREADS = 16  # parallel requests; also the size of boto3's connection pool
SHA256_META = "sha256"  # x-amz-meta-sha256: the SHA-256 of an object's bytes, set on upload

T = TypeVar("T")
R = TypeVar("R")


def one_line(error: BaseException) -> str:
    """boto's messages may run over lines; fxev's errors are one."""
    return " ".join(str(error).split())


def parallel(function: Callable[[T], R], items: Iterable[T], threads: int = THREADS) -> list[R]:
    """``function`` over ``items`` on a thread pool, results in order; the first error raised
    is re-raised (the others are let finish). Serial for one or two items."""
    work = list(items)
    if len(work) <= 2:
        return [function(item) for item in work]
    with ThreadPoolExecutor(max_workers=min(threads, len(work))) as pool:
        return list(pool.map(function, work))


class Put(enum.Enum):
    """What :meth:`ObjectStore.put_checked` found under a key, and so did."""

    WRITTEN = "written"  # the key held nothing: written
    SAME = "same"  # it held these bytes: left
    REPLACED = "replaced"  # it held other bytes: overwritten


class ObjectStore:
    def __init__(self, url: str | None, endpoint: str | None = None, threads: int = THREADS):
        self.bucket, self.prefix = parse_store_url(url)
        self.url = url
        self.endpoint = endpoint
        self.threads = threads
        self._client: Any = None
        self._lock = threading.Lock()

    # -- the client --------------------------------------------------------------------------

    @property
    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self._make_client()
            return self._client

    def _make_client(self) -> Any:
        import boto3  # here, not at import: see the module docstring
        from botocore.config import Config

        config = Config(
            # A store that accepts connections and never answers fails a call after
            # two tries of 10 s, so a command says so in one line instead of hanging.
            connect_timeout=3,
            read_timeout=10,
            retries={"max_attempts": 2, "mode": "standard"},
            max_pool_connections=self.threads,
            # A custom endpoint (SeaweedFS, MinIO) is addressed by path: no bucket DNS names.
            s3={"addressing_style": "path" if self.endpoint else "auto"},
        )
        with self._translated("connect"):
            return boto3.client(
                "s3",
                endpoint_url=self.endpoint or None,
                region_name=os.environ.get("AWS_REGION") or None,
                config=config,
            )

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def where(self, key: str) -> str:
        """A key as the operator reads it in a message: ``s3://bucket/prefix/key``."""
        return f"s3://{self.bucket}/{self.full_key(key)}"

    def full_key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    @contextmanager
    def _translated(self, what: str) -> Iterator[None]:
        """boto3's errors as fxev's: missing credentials a configuration error, anything else
        that kept the request from being answered a ``RemoteError``."""
        from botocore.exceptions import (
            BotoCoreError,
            ClientError,
            InvalidRegionError,
            NoCredentialsError,
            ParamValidationError,
        )

        try:
            yield
        except NoCredentialsError:
            raise ConfigurationError(
                "no credentials for the store (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
            ) from None
        except (InvalidRegionError, ParamValidationError) as error:  # retrying changes nothing
            raise ConfigurationError(f"the store cannot be asked: {one_line(error)}") from None
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "?")
            raise RemoteError(f"store {self.where(what)}: {code}: {error}") from None
        except BotoCoreError as error:
            endpoint = self.endpoint or "the default S3 endpoint"
            raise RemoteError(f"store at {endpoint} unreachable: {one_line(error)}") from None

    # -- reads ---------------------------------------------------------------------------------

    def get(self, key: str) -> bytes | None:
        """The bytes under ``key``, or None when the store has no such key."""
        from botocore.exceptions import ClientError

        with self._translated(key):
            try:
                answer = self.client.get_object(Bucket=self.bucket, Key=self.full_key(key))
            except ClientError as error:
                if _missing(error):
                    return None
                raise
            return answer["Body"].read()  # type: ignore[no-any-return]

    def list_keys(self, under: str) -> list[str]:
        """Every key under ``under`` (a folder of the store, ``ledger/``), without the prefix,
        sorted."""
        full = self.full_key(under)
        cut = len(self.full_key(""))
        keys: list[str] = []
        with self._translated(under):
            pages = self.client.get_paginator("list_objects_v2")
            for page in pages.paginate(Bucket=self.bucket, Prefix=full):
                keys += [item["Key"][cut:] for item in page.get("Contents", ())]
        return sorted(keys)

    def head(self, key: str) -> dict[str, Any] | None:
        from botocore.exceptions import ClientError

        with self._translated(key):
            try:
                return self.client.head_object(  # type: ignore[no-any-return]
                    Bucket=self.bucket, Key=self.full_key(key)
                )
            except ClientError as error:
                if _missing(error):
                    return None
                raise

    # -- writes --------------------------------------------------------------------------------

    def put(self, key: str, data: bytes) -> None:
        """Write ``key``, replacing what it held: the pointer only."""
        with self._translated(key):
            self.client.put_object(
                Bucket=self.bucket,
                Key=self.full_key(key),
                Body=data,
                Metadata={SHA256_META: hashlib.sha256(data).hexdigest()},
            )

    def put_new(self, key: str, data: bytes) -> bool:
        """Write an immutable ``key``: True when written, False when the store already held
        these bytes; a ``Conflict`` when it holds others."""
        from botocore.exceptions import ClientError

        digest = hashlib.sha256(data).hexdigest()
        held = self.head(key)
        if held is not None:
            self._check_same(key, held, data, digest)
            return False
        with self._translated(key):
            try:
                self.client.put_object(
                    Bucket=self.bucket,
                    Key=self.full_key(key),
                    Body=data,
                    Metadata={SHA256_META: digest},
                    IfNoneMatch="*",
                )
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") not in ("PreconditionFailed", "412"):
                    raise
                held = self.head(key)  # written meanwhile by another publisher
                if held is None:
                    raise
                self._check_same(key, held, data, digest)
                return False
        return True

    def put_checked(self, key: str, data: bytes) -> Put:
        """Make ``key`` hold ``data`` whatever it held, judged by reading its bytes back. For
        ``fxev publish --repair`` only, whose bytes the operator's site vouches for: every other
        write of an immutable key is :meth:`put_new`, which never overwrites."""
        held = self.get(key)
        if held == data:
            return Put.SAME
        self.put(key, data)
        return Put.WRITTEN if held is None else Put.REPLACED

    def _check_same(self, key: str, held: dict[str, Any], data: bytes, digest: str) -> None:
        """Whether ``key`` holds ``data`` (SHA-256 ``digest``), judged by its bytes, never by
        its metadata, which anyone can set (a copy made by hand may carry another object's) or
        by an ETag, whose meaning depends on the store: only a length the store reports as
        other refuses early. Keys already held are few (a publish run again after it was
        interrupted)."""
        same = held.get("ContentLength", len(data)) == len(data)
        if same:
            stored = self.get(key)
            same = stored is not None and hashlib.sha256(stored).hexdigest() == digest
        if not same:
            raise Conflict(
                f"{self.where(key)} already holds other bytes; an immutable key is never"
                " overwritten (is FXEV_STORE_URL another tree's?)"
            )


def _missing(error: Any) -> bool:
    code = str(error.response.get("Error", {}).get("Code", ""))
    return code in ("404", "NoSuchKey", "NotFound")
