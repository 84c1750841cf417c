"""The requests ``make bench-gateway`` and ``make bench-edge`` time, read from a built site as
the benchmarks read them, answer 200 from a real gateway: a change of the tree's read API or of
the routes breaks this test, not a benchmark run much later (the benchmarks are not run by
``make test``)."""

from __future__ import annotations

import hashlib

from bench.gateway_load import scenarios
from tests.contract.conftest import Gateway


def test_the_benchmarks_requests_answer_from_a_built_site(gateway: Gateway) -> None:
    found = scenarios(gateway.site)
    assert [scenario.name for scenario in found] == ["year page", "latest", "evidence"]
    for scenario in found:
        answer = gateway.get(scenario.path)
        assert answer.status_code == 200, (scenario.path, answer.text[:200])
    evidence = gateway.get(found[-1].path)
    assert evidence.headers["X-Sha256"] == hashlib.sha256(evidence.content).hexdigest()
