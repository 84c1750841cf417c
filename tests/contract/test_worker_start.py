"""What a gateway worker does before it answers: the work a first request would otherwise pay.

Peru's calendar is one such load: the ``holidays`` package imports the module of every country
it knows the first time it is asked (0.1-0.3 s), and ``/v1/rates/latest`` asks it (freshness
counts business days). Left to the first request, each worker's first ``latest`` took 130-160
ms on a slow machine, and every other connection of that worker waited behind it. Python's own
import log (``PYTHONPROFILEIMPORTTIME``, written to the gateway's log) shows where it happens.
"""

from __future__ import annotations

import pytest

from tests.contract.conftest import WORKERS, Gateway

PERU = "holidays.countries.peru"


def imports_of_peru(gateway: Gateway) -> int:
    """How many processes imported Peru's holidays: the import log's lines ``import time: SELF |
    CUMULATIVE | NAME`` (the name indented by how deep the import was) that name it."""
    lines = gateway.log().splitlines()
    named = (line.rpartition("|")[2].strip() for line in lines if line.startswith("import time:"))
    return sum(name == PERU for name in named)


@pytest.mark.gateway_env(PYTHONPROFILEIMPORTTIME="1")
def test_each_worker_loads_the_calendar_before_its_first_request(
    private_gateway: Gateway,
) -> None:
    # Started: both workers said they are ready; none was asked anything but /v1/health/live.
    assert imports_of_peru(private_gateway) == WORKERS, private_gateway.log()[-3000:]
    latest = private_gateway.get("/v1/rates/latest?currency=USD&series=publicado")
    assert latest.status_code == 200  # and its freshness reads the calendar loaded
    assert latest.json()["frescura"]["hoy_lima"] == "2026-09-21"
