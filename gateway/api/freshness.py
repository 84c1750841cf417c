"""Pure freshness arithmetic (docs/decisions.md#freshness): ``frescura`` and the freshness
entries."""

from __future__ import annotations

from datetime import date
from typing import Any

from builder.core.business_days import count_business_days_after, expected_series_date
from builder.core.vocabulary import AL_DIA, ATRASADA, LIMA

ZONE = LIMA.key


def frescura(serie: str, fecha_serie: str, today: date) -> dict[str, Any]:
    """The ``frescura`` block of ``/v1/rates/latest``."""
    latest = date.fromisoformat(fecha_serie)
    expected = expected_series_date(serie, today)
    return {
        "estado": AL_DIA if latest >= expected else ATRASADA,
        "n_dias_habiles": count_business_days_after(latest, expected),
        "fecha_esperada": expected.isoformat(),
        "hoy_lima": today.isoformat(),
        "zona": ZONE,
    }


def freshness_entry(moneda: str, serie: str, fecha_serie: str, today: date) -> dict[str, Any]:
    """One entry of ``/v1/health/freshness``; ``edad_dias_habiles`` is ``n_dias_habiles``."""
    block = frescura(serie, fecha_serie, today)
    return {
        "moneda": moneda,
        "serie": serie,
        "ultima_fecha_serie": fecha_serie,
        "fecha_esperada": block["fecha_esperada"],
        "edad_dias_habiles": block["n_dias_habiles"],
    }
