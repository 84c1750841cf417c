"""The gateway's ids across a fork, and its ledger timestamps against the real clock."""

from __future__ import annotations

import os
from datetime import UTC, datetime

from builder.core.canonical import utc_timestamp
from gateway.http.stamps import RequestIds, utc_now_text


def test_a_forked_child_does_not_repeat_its_parents_ids() -> None:
    ids = RequestIds(per_draw=64)
    ids()  # the parent holds a buffer of ids not handed out yet
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: send one id and leave
        os.close(read_end)
        os.write(write_end, ids().encode())
        os._exit(0)
    os.close(write_end)
    child = os.read(read_end, 64).decode()
    os.close(read_end)
    os.waitpid(pid, 0)
    assert child != ids()


def test_now_is_the_real_clock() -> None:
    before = utc_timestamp(datetime.now(UTC))
    assert before <= utc_now_text() <= utc_timestamp(datetime.now(UTC))
