"""Plausibility: what the source really published but looks odd. Pure; the value is kept.

An observation is marked ``plausibilidad_baja`` when either side moves strictly more than the
threshold from the valid observation with the greatest earlier date, when ``compra`` is above
``venta``, or when its date is tomorrow in Lima.
"""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from builder.registry.records import Observation


def plausibility_reasons(
    fecha_serie: date,
    compra: str,
    venta: str,
    previous: Observation | None,
    today_lima: date,
    threshold_pct: Decimal,
) -> list[dict[str, Any]]:
    """Why the values look implausible; empty when they do not."""
    reasons: list[dict[str, Any]] = []
    if previous is not None:
        for side, new, old in (
            ("compra", compra, previous.compra),
            ("venta", venta, previous.venta),
        ):
            if Decimal(old) <= 0:  # no move can be measured from it (a registry's older value)
                continue
            move = (Decimal(new) - Decimal(old)).copy_abs() * 100 / Decimal(old)
            if move > threshold_pct:
                reasons.append(
                    {
                        "motivo": "movimiento",
                        "lado": side,
                        "variacion_pct": str(move.quantize(Decimal("0.01"))),
                        "umbral_pct": str(threshold_pct),
                        "referencia_observacion_id": previous.id,
                        "referencia_fecha_serie": previous.fecha_serie,
                        "referencia_valor": old,
                    }
                )
    if Decimal(compra) > Decimal(venta):
        reasons.append({"motivo": "compra_mayor_que_venta", "compra": compra, "venta": venta})
    if fecha_serie == today_lima + timedelta(days=1):
        reasons.append({"motivo": "fecha_futura", "hoy_lima": today_lima.isoformat()})
    return reasons
