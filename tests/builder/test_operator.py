"""Registry writes a person makes (``builder.capture.operator``): what they print and check."""

from __future__ import annotations

from datetime import date

import pytest

from builder.capture.operator import (
    OperatorError,
    annotate,
    check_series_switch,
    parse_annotation,
)
from builder.capture.run import Stores
from tests.builder.conftest import lima

NOW = lima(date(2026, 9, 20))


@pytest.mark.parametrize("serie", [None, "cierre"], ids=["every-series", "one-series"])
def test_an_annotation_lists_its_series_or_null_for_every_series(
    stores: Stores, serie: str | None
) -> None:
    # An annotation without --serie is about every series: its record and the capture shape
    # both say null (docs/operating/cli.md#annotate), never a stand-in such as "*".
    request = parse_annotation("2026-09-18", "t", "ana", "why", serie)
    result = annotate(stores, request, NOW).to_json()
    assert result["observaciones"] == [
        {"fecha_serie": "2026-09-18", "serie": serie, "outcome": "nueva", "observacion_id": None}
    ]
    (stored,) = stores.registry.conn.execute("SELECT serie FROM annotations").fetchall()
    assert stored["serie"] == serie


@pytest.mark.parametrize(
    ("serie", "actor", "justification", "message"),
    [
        ("publicado", "a", "j", "only cierre can be published; 'publicado' cannot"),
        ("cierre", " ", "j", "--actor must not be empty"),
        ("cierre", "a", "", "--justification must not be empty"),
    ],
)
def test_a_series_switch_is_checked_without_a_store(
    serie: str, actor: str, justification: str, message: str
) -> None:
    with pytest.raises(OperatorError, match=message):
        check_series_switch(serie, actor, justification)
    assert check_series_switch("cierre", " ana ", "j") == ("ana", "j")


@pytest.mark.parametrize("value", ["0", "0.3", "0.5004", "20", "33.5"])
def test_an_annotated_value_that_cannot_be_a_rate_is_refused(value: str) -> None:
    """The bounds of a source's value (builder.sources.common): 0.5 or less, 20 or more."""
    with pytest.raises(OperatorError, match="cannot be a USD/PEN rate"):
        parse_annotation("2026-09-18", "t", "ana", "why", "publicado", value, "3.362")
    assert parse_annotation("2026-09-18", "t", "ana", "why", "publicado", "0.501", "3.362")
