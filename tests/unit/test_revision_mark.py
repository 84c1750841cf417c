"""Fleet mode's admission at the token's revision mark
(:func:`gateway.handlers.access.admitted_at_mark`, docs/operating/fleet.md#monotonic), on an event
loop over stand-ins for Redis's gate and the published view: the pointer looked at before the round
trip, so a request is one round trip; a gateway behind the mark waits for its mirror, then admits;
not there in time, a 503 that names the token for the ledger; a pointer another request found moved
during the round trip raises the mark before the handler answers at the newer revision."""

from __future__ import annotations

import asyncio
import types
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gateway.errors import NotReady
from gateway.fleet.gate import Behind
from gateway.handlers import access, published, reading
from gateway.handlers.published import PublishedView
from gateway.limits.rule import ALLOWED, Decision, after_wait
from tokens.store import TokenRecord

RECORD = TokenRecord("t1", "mark", datetime(2026, 1, 1, tzinfo=UTC), None, None)


class View:
    """The published revision, read on every ``current()`` from ``revisions`` (the last stays);
    it holds the last one read, as the worker does."""

    def __init__(self, *revisions: int) -> None:
        self.revisions = list(revisions)
        self.last: Any = None

    def current(self) -> Any:
        revision = self.revisions.pop(0) if len(self.revisions) > 1 else self.revisions[0]
        self.last = types.SimpleNamespace(revision=revision)
        return self.last

    def holds(self, looked: Any) -> bool:
        return looked is not None and looked is self.last

    async def reached(self, revision: int, within_s: float) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within_s
        while self.current().revision < revision:
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.001)
        return True


class Gate:
    """Redis's side: the token's mark, raised by a request counted or by ``mark_async``."""

    def __init__(self, mark: int, decision: Decision = ALLOWED, meanwhile: Any = None) -> None:
        self.mark = mark
        self.decision = decision
        self.meanwhile = meanwhile  # what the worker does during the round trip
        self.admitted: list[int | None] = []
        self.marked: list[int] = []

    async def admit_async(
        self, text: str, now_us: int, revision: int | None = None
    ) -> tuple[TokenRecord | None, Decision]:
        await asyncio.sleep(0)
        if self.meanwhile is not None:
            self.meanwhile()
        self.admitted.append(revision)
        assert revision is not None
        if revision < self.mark:
            raise Behind(RECORD, self.mark)
        if self.decision.allowed:
            self.mark = revision
        return RECORD, self.decision

    async def mark_async(self, text: str, now_us: int, revision: int) -> None:
        self.marked.append(revision)
        self.mark = max(self.mark, revision)


def request(view: View) -> Any:
    settings = types.SimpleNamespace(mirror_interval_s=0)
    return types.SimpleNamespace(
        app=types.SimpleNamespace(ctx=types.SimpleNamespace(view=view, settings=settings)),
        ctx=types.SimpleNamespace(),
    )


def admit(view: View, gate: Gate) -> tuple[Any, tuple[TokenRecord | None, Decision]]:
    asked = request(view)
    return asked, asyncio.run(access.admitted_at_mark(asked, gate, "fxev_t1"))  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _short_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(access, "CATCH_UP_MARGIN_S", 0.2)


def test_at_or_above_the_mark_one_round_trip() -> None:
    gate = Gate(mark=5)
    _, admitted = admit(View(5), gate)
    assert admitted == (RECORD, ALLOWED)
    assert (gate.admitted, gate.marked, gate.mark) == ([5], [], 5)


def test_behind_the_mark_waits_for_the_mirror_then_admits_at_it() -> None:
    gate = Gate(mark=7)
    _, admitted = admit(View(6, 6, 6, 6, 7), gate)
    assert admitted == (RECORD, ALLOWED)
    assert gate.admitted == [6, 7] and gate.marked == []


def test_a_mirror_not_there_in_time_is_a_503_that_names_the_token() -> None:
    gate = Gate(mark=7)
    asked = request(View(6))
    with pytest.raises(NotReady):
        asyncio.run(access.admitted_at_mark(asked, gate, "fxev_t1"))  # type: ignore[arg-type]
    assert asked.ctx.token == RECORD  # the ledger records the 503 for it
    assert gate.admitted == [6] and gate.mark == 7


def test_a_pointer_moved_during_the_round_trip_raises_the_mark_before_the_answer() -> None:
    """Admitted at 5 while another request of the worker found the pointer at 6: the handler,
    next, answers at 6, so the mark must say 6 first, or a gateway still at 5 would answer this
    client's next request."""
    view = View(5, 6)
    gate = Gate(mark=5, meanwhile=view.current)
    asked, admitted = admit(view, gate)
    assert admitted == (RECORD, ALLOWED)
    assert (gate.admitted, gate.marked, gate.mark) == ([5], [6], 6)
    assert asked.ctx.published.revision == 6


def test_the_pointer_is_looked_at_before_the_round_trip_so_a_publish_costs_none_more() -> None:
    """The worker last looked at 5 and the pointer says 6 now (the first request after a
    publish): it is admitted at 6 in one round trip (DECISIONS 10: at most one per request), and
    the handler answers at that look."""
    gate = Gate(mark=5)
    view = View(6)
    view.last = types.SimpleNamespace(revision=5)
    asked, _ = admit(view, gate)
    assert (gate.admitted, gate.marked, gate.mark) == ([6], [], 6)
    assert asked.ctx.published.revision == 6


def test_a_refused_request_raises_no_mark() -> None:
    gate = Gate(mark=5, decision=after_wait(1_000_000))
    _, (record, decision) = admit(View(5, 6), gate)
    assert record == RECORD and not decision.allowed
    assert (gate.marked, gate.mark) == ([], 5)


class Pointer(PublishedView):
    """A view whose pointer says ``revision`` (set by the test); counts its looks, and holds a
    new revision as a view does (a new object, whose memo starts empty)."""

    def __init__(self, revision: int) -> None:
        super().__init__(types.SimpleNamespace(site=Path("/nonexistent")))  # type: ignore[arg-type]
        self.revision = revision
        self.looks = 0

    def current(self) -> Any:
        self.looks += 1
        if self._current is None or self._current.revision != self.revision:
            self._current = types.SimpleNamespace(revision=self.revision)  # type: ignore[assignment]
        return self._current


def test_the_handler_answers_at_the_admissions_look_while_the_view_holds_it() -> None:
    """reading.published reuses the look the fleet's admission took (no second stat), but only
    while the view still holds it: once another request found the pointer moved, the view's memo
    is the new revision's, and the handler looks again."""
    view = Pointer(6)
    looked = view.current()
    asked = request(view)  # type: ignore[arg-type]
    asked.ctx.published = looked
    assert reading.published(asked) is looked and view.looks == 1
    view.revision = 7
    view.current()  # another request's look
    assert reading.published(asked).revision == 7
    assert reading.published(request(view)).revision == 7  # one host: no look kept, a stat


def test_waiters_share_one_look_at_the_pointer_and_each_is_answered() -> None:
    """100 requests of one worker waiting for its mirror: one stat a poll for all of them (not
    one each), and every one is answered once the pointer moves; one that goes away (its client
    did) leaves the others waiting."""

    async def run() -> None:
        view = Pointer(6)
        waiting = [asyncio.ensure_future(view.reached(7, 5.0)) for _ in range(100)]
        await asyncio.sleep(published.POLL_S * 4.5)
        assert view.looks <= 100 + 5  # each one's first look, then one per poll
        waiting[0].cancel()
        await asyncio.sleep(published.POLL_S * 1.5)
        view.revision = 7
        found = await asyncio.gather(*waiting[1:])
        assert found == [True] * 99
        assert not await view.reached(8, published.POLL_S * 2)  # not in time

    asyncio.run(run())


def test_past_the_most_waiters_a_request_waits_for_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(published, "WAITERS_MAX", 3)

    async def run() -> None:
        view = Pointer(6)
        waiting = [asyncio.ensure_future(view.reached(7, 5.0)) for _ in range(3)]
        await asyncio.sleep(0)
        started = asyncio.get_running_loop().time()
        assert not await view.reached(7, 5.0)
        assert asyncio.get_running_loop().time() - started < published.POLL_S
        assert await view.reached(6, 5.0)  # already there: no wait, whatever the count
        view.revision = 7
        assert await asyncio.gather(*waiting) == [True] * 3

    asyncio.run(run())
