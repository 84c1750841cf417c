"""The cross-check rule between the tax authority's published rate and the SBS close (pure).

The tax authority publishes on day D the SBS close of the day before; when there was no close
that day (weekend, holiday, non-working day) it repeats its previous value
(docs/sources.md#previous-day). In business days (``builder.core.business_days``) that is one rule:
the counterpart of the value published on D is the close of the last business day before D. Only the
central bank declaring ``n.d.`` for that day (``nd_fuente``: a later date of the same answer has a
value) moves the counterpart one business day earlier; a day that is merely missing or pending moves
nothing (docs/decisions.md#cross-checks), so the caller writes no cotejo until it is known.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from datetime import date
from typing import Literal, Protocol

from builder.core.business_days import previous_business_day
from builder.core.canonical import canonical_rate
from builder.core.vocabulary import DISCREPANTE, OK

RULE_TEXT = (
    "La compra y la venta publicadas el día D son iguales, a 3 decimales, a las del cierre SBS "
    "del último día hábil anterior a D; solo un nd_fuente declarado para ese día mueve la "
    "contraparte un día hábil antes."
)

Resultado = Literal["ok", "discrepante"]

# Declared days in a row beyond which the caller's predicate is taken to be broken.
_MAX_DECLARED_IN_A_ROW = 366


class CanonicalRate(Protocol):
    """Anything with canonical ``compra`` and ``venta`` text: ``ParsedRate``, ``Observation``."""

    @property
    def compra(self) -> str: ...

    @property
    def venta(self) -> str: ...


def counterpart_date(published_date: date, declared_nd: Callable[[date], bool] | Set[date]) -> date:
    """The SBS close date the value published on ``published_date`` must equal.

    The last business day before ``published_date``; each business day that ``declared_nd``
    holds (a declared ``nd_fuente``) moves it one business day earlier.
    """
    is_declared = declared_nd.__contains__ if isinstance(declared_nd, Set) else declared_nd
    candidate = previous_business_day(published_date)
    for _ in range(_MAX_DECLARED_IN_A_ROW):
        if not is_declared(candidate):
            return candidate
        candidate = previous_business_day(candidate)
    raise ValueError(
        f"more than {_MAX_DECLARED_IN_A_ROW} declared nd_fuente days in a row before "
        f"{published_date}"
    )


def compare(published: CanonicalRate, close: CanonicalRate) -> Resultado:
    """``"ok"`` when both sides are equal at 3 decimals (half-up), else ``"discrepante"``."""
    same = all(
        canonical_rate(mine) == canonical_rate(theirs)
        for mine, theirs in ((published.compra, close.compra), (published.venta, close.venta))
    )
    return OK if same else DISCREPANTE
