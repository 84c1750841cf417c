"""How ``fetch`` reads a body, cut by the deadline at a chosen read (docs/operating/capture.md).

A real socket shut by the deadline's watchdog may end the read with an error or with a clean
end of the body, whichever the kernel gives; these tests give the clean end on purpose, through
a stand-in for the response (its ``raw.read1``, the one call ``fetch`` reads a body with), so
that the case that once passed a cut body off as whole is met every time.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from builder.capture.deadline import Deadline
from builder.capture.fetch import FetchFailure, _read

START = datetime(2026, 9, 20, 18, 0, tzinfo=UTC)
NOT_GZIP = b"this is not gzip"


def response(reads: Iterator[bytes], encoding: str | None) -> Any:
    fields = {"Content-Type": "text/plain"} | ({"Content-Encoding": encoding} if encoding else {})
    raw = SimpleNamespace(read1=lambda size, decode_content=False: next(reads), headers=fields)
    return SimpleNamespace(status_code=200, reason="OK", headers=fields, raw=raw)


def then_a_clean_end_past(deadline_s: float, *chunks: bytes) -> Iterator[bytes]:
    yield from chunks
    time.sleep(deadline_s * 3)  # the watchdog fires meanwhile
    yield b""  # what a read of the socket it shut can give


@pytest.mark.parametrize(
    ("encoding", "chunks"),
    [("gzip", (NOT_GZIP,)), ("br", (NOT_GZIP,)), (None, (b"20/09/2026|3.3",))],
    ids=["undecodable-gzip", "unknown-coding", "identity"],
)
def test_a_body_cut_by_the_deadline_is_truncated_even_when_the_read_ends_cleanly(
    encoding: str | None, chunks: tuple[bytes, ...]
) -> None:
    deadline = Deadline(0.05)
    reads = then_a_clean_end_past(0.05, *chunks)

    with pytest.raises(FetchFailure) as raised:
        _read(response(reads, encoding), deadline, "GET", "http://source/", 1024, START)

    failure = raised.value
    assert failure.alert_type == "fuente_no_disponible"
    assert "deadline" in failure.message
    assert failure.exchange is not None and failure.exchange.truncated is True
    assert failure.exchange.body == b"".join(chunks)


def test_an_undecodable_body_over_the_cap_reads_no_further() -> None:
    """Kept raw, it stops at the read that passes the cap, with no wait for the next."""
    reads = iter([NOT_GZIP * 100])  # a second read would raise StopIteration

    with pytest.raises(FetchFailure) as raised:
        _read(response(reads, "gzip"), Deadline(60), "GET", "http://source/", 1000, START)

    failure = raised.value
    assert failure.alert_type == "cambio_formato"
    assert failure.exchange is not None
    assert (len(failure.exchange.body), failure.exchange.truncated) == (1000, True)
