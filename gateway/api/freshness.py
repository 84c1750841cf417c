"""Pure freshness arithmetic (docs/decisions.md#freshness): how current a series' newest
observation is, judged on Peru's business calendar, as ``frescura`` and the freshness entries
write it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from builder.core.business_days import count_business_days_after, expected_series_date
from builder.core.vocabulary import AL_DIA, ATRASADA, LIMA

ZONE = LIMA.key


@dataclass(frozen=True, slots=True)
class Freshness:
    """A series' newest ``fecha_serie`` against the date expected of it ``today`` in Lima."""

    latest: date
    expected: date
    business_days_behind: int  # business days after ``latest``, up to ``expected``
    today: date

    @property
    def state(self) -> str:
        return AL_DIA if self.latest >= self.expected else ATRASADA

    def to_json(self) -> dict[str, Any]:
        """The ``frescura`` block of ``/v1/rates/latest``, in the order its bytes have."""
        return {
            "estado": self.state,
            "n_dias_habiles": self.business_days_behind,
            "fecha_esperada": self.expected.isoformat(),
            "hoy_lima": self.today.isoformat(),
            "zona": ZONE,
        }


def freshness(serie: str, fecha_serie: str, today: date) -> Freshness:
    latest = date.fromisoformat(fecha_serie)
    expected = expected_series_date(serie, today)
    return Freshness(latest, expected, count_business_days_after(latest, expected), today)


def freshness_entry(moneda: str, serie: str, fecha_serie: str, today: date) -> dict[str, Any]:
    """One entry of ``/v1/health/freshness``; ``edad_dias_habiles`` is ``n_dias_habiles``."""
    judged = freshness(serie, fecha_serie, today)
    return {
        "moneda": moneda,
        "serie": serie,
        "ultima_fecha_serie": fecha_serie,
        "fecha_esperada": judged.expected.isoformat(),
        "edad_dias_habiles": judged.business_days_behind,
    }
