"""Plausibility marks on what the source really published (docs/decisions.md#plausibility)."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal
from itertools import pairwise

import pytest

from builder.capture.plausibility import plausibility_reasons
from builder.registry.records import Observation
from tests.realdata import SunatDay, sunat_history

DEFAULT_THRESHOLD = Decimal("3")


def canonical(raw: str) -> str:
    return str(Decimal(raw).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP))


def observation(fecha: date, compra: str, venta: str) -> Observation:
    return Observation(
        id=f"00000000-0000-4000-8000-{fecha:%Y%m%d}0000",
        revision_creada=1,
        moneda="USD",
        serie="publicado",
        fecha_serie=fecha.isoformat(),
        compra=canonical(compra),
        venta=canonical(venta),
        compra_cruda=compra,
        venta_cruda=venta,
        fuente="taxauth_txt",
        identidad_consulta="GET https://www.sunat.gob.pe/a/txt/tipoCambio.txt",
        fragmento=f"{fecha:%d/%m/%Y}|{compra}|{venta}|",
        version_parser="taxauth_txt-1.0",
        capturado_en="2026-09-20T13:05:00.000000Z",
        ejecucion_id="00000000-0000-4000-8000-000000000001",
        evidencia_id="00000000-0000-4000-8000-000000000002",
        supersedes=None,
    )


def observation_of(day: SunatDay) -> Observation:
    return observation(day.fecha, day.compra, day.venta)


def reasons_for(
    day: SunatDay, previous: SunatDay | None, threshold: Decimal = DEFAULT_THRESHOLD
) -> list[dict]:
    return plausibility_reasons(
        day.fecha,
        canonical(day.compra),
        canonical(day.venta),
        observation_of(previous) if previous is not None else None,
        day.fecha,
        threshold,
    )


def motivos(reasons: list[dict]) -> list[str]:
    return [reason["motivo"] for reason in reasons]


def day_and_previous(iso: str) -> tuple[SunatDay, SunatDay]:
    history = sunat_history()
    (index,) = (i for i, day in enumerate(history) if day.fecha == date.fromisoformat(iso))
    return history[index], history[index - 1]


def move_pct(new: str, old: str) -> Decimal:
    return abs(Decimal(new) - Decimal(old)) * 100 / Decimal(old)


def test_real_compra_above_venta_of_2021_05_13_is_marked() -> None:
    day, previous = day_and_previous("2021-05-13")
    reasons = reasons_for(day, previous)
    assert {"motivo": "compra_mayor_que_venta", "compra": "3.726", "venta": "3.725"} in reasons
    assert "fecha_futura" not in motivos(reasons)


def test_compra_above_venta_across_real_history_is_only_2021_05_13() -> None:
    history = sunat_history()
    expected = {day.fecha for day in history if Decimal(day.compra) > Decimal(day.venta)}
    marked = {
        day.fecha
        for previous, day in pairwise(history)
        if "compra_mayor_que_venta" in motivos(reasons_for(day, previous))
    }
    assert marked == expected == {date(2021, 5, 13)}


def test_real_move_of_2026_06_10_is_between_three_and_four_percent() -> None:
    day, previous = day_and_previous("2026-06-10")
    assert previous.fecha == date(2026, 6, 9)
    for side in ("compra", "venta"):
        move = move_pct(getattr(day, side), getattr(previous, side))
        assert Decimal(3) < move < Decimal(4), side


def test_real_move_of_2026_06_10_is_marked_with_default_threshold() -> None:
    day, previous = day_and_previous("2026-06-10")
    reasons = reasons_for(day, previous, Decimal("3"))
    movements = [reason for reason in reasons if reason["motivo"] == "movimiento"]
    assert [reason["lado"] for reason in movements] == ["compra", "venta"]
    compra, venta = movements
    assert compra["variacion_pct"] == "3.33"  # 0.116 / 3.488 = 3.3257 %
    assert venta["variacion_pct"] == "3.52"  # 0.123 / 3.498 = 3.5163 %
    for reason, old in ((compra, "3.488"), (venta, "3.498")):
        assert reason["umbral_pct"] == "3"
        assert reason["referencia_fecha_serie"] == "2026-06-09"
        assert reason["referencia_valor"] == old
        assert reason["referencia_observacion_id"] == observation_of(previous).id
    assert motivos(reasons) == ["movimiento", "movimiento"]


def test_real_move_of_2026_06_10_is_not_marked_with_threshold_four() -> None:
    day, previous = day_and_previous("2026-06-10")
    assert reasons_for(day, previous, Decimal("4")) == []


@pytest.mark.parametrize(
    ("previous_values", "values", "side"),
    [
        pytest.param(("3.000", "3.100"), ("3.090", "3.100"), "compra", id="compra-up-3pct"),
        pytest.param(("3.300", "3.300"), ("3.201", "3.300"), "compra", id="compra-down-3pct"),
        pytest.param(("3.000", "3.000"), ("3.000", "3.090"), "venta", id="venta-up-3pct"),
        pytest.param(("3.200", "3.300"), ("3.200", "3.201"), "venta", id="venta-down-3pct"),
        pytest.param(("3.300", "3.300"), ("3.399", "3.399"), "both", id="both-up-3pct"),
    ],
)
def test_move_of_exactly_the_threshold_is_not_marked(
    previous_values: tuple[str, str], values: tuple[str, str], side: str
) -> None:
    moves = {
        name: move_pct(new, old)
        for name, new, old in zip(("compra", "venta"), values, previous_values, strict=True)
    }
    moving = ["compra", "venta"] if side == "both" else [side]
    assert {name: move for name, move in moves.items() if move > 0} == dict.fromkeys(
        moving, DEFAULT_THRESHOLD
    )
    fecha = date(2026, 6, 10)
    previous = observation(fecha - timedelta(days=1), *previous_values)
    assert plausibility_reasons(fecha, *values, previous, fecha, DEFAULT_THRESHOLD) == []


@pytest.mark.parametrize(
    ("previous_values", "values", "side"),
    [
        pytest.param(("3.000", "3.100"), ("3.091", "3.100"), "compra", id="compra-up"),
        pytest.param(("3.300", "3.300"), ("3.200", "3.300"), "compra", id="compra-down"),
        pytest.param(("3.000", "3.000"), ("3.000", "3.091"), "venta", id="venta-up"),
        pytest.param(("3.200", "3.300"), ("3.200", "3.200"), "venta", id="venta-down"),
    ],
)
def test_move_just_above_the_threshold_is_marked_on_its_side(
    previous_values: tuple[str, str], values: tuple[str, str], side: str
) -> None:
    moved = {
        name: move_pct(new, old)
        for name, new, old in zip(("compra", "venta"), values, previous_values, strict=True)
    }
    assert moved[side] > DEFAULT_THRESHOLD
    assert [name for name, move in moved.items() if move > 0] == [side]
    fecha = date(2026, 6, 10)
    previous = observation(fecha - timedelta(days=1), *previous_values)
    reasons = plausibility_reasons(fecha, *values, previous, fecha, DEFAULT_THRESHOLD)
    assert motivos(reasons) == ["movimiento"]
    assert reasons[0]["lado"] == side


@pytest.mark.parametrize(
    ("today", "expected"),
    [
        pytest.param(date(2026, 9, 19), ["fecha_futura"], id="tomorrow-is-marked"),
        pytest.param(date(2026, 9, 20), [], id="today-is-not-marked"),
        pytest.param(date(2026, 9, 21), [], id="yesterday-is-not-marked"),
    ],
)
def test_only_tomorrows_date_is_marked_as_future(today: date, expected: list[str]) -> None:
    fecha = date(2026, 9, 20)
    previous = observation(date(2026, 9, 19), "3.354", "3.362")
    reasons = plausibility_reasons(fecha, "3.354", "3.362", previous, today, DEFAULT_THRESHOLD)
    assert motivos(reasons) == expected


def test_future_reason_names_today_in_lima() -> None:
    today = date(2026, 9, 20)
    reasons = plausibility_reasons(
        today + timedelta(days=1), "3.354", "3.362", None, today, DEFAULT_THRESHOLD
    )
    assert reasons == [{"motivo": "fecha_futura", "hoy_lima": "2026-09-20"}]


@pytest.mark.parametrize(
    ("compra", "venta", "expected"),
    [
        pytest.param("3.726", "3.725", ["compra_mayor_que_venta"], id="compra-above-venta"),
        pytest.param("3.354", "3.362", [], id="ordinary-values"),
        pytest.param("3.362", "3.362", [], id="compra-equal-venta"),
        pytest.param("9.000", "9.100", [], id="huge-values-without-reference"),
    ],
)
def test_without_previous_only_compra_above_venta_is_checked(
    compra: str, venta: str, expected: list[str]
) -> None:
    fecha = date(2026, 9, 20)
    reasons = plausibility_reasons(fecha, compra, venta, None, fecha, DEFAULT_THRESHOLD)
    assert motivos(reasons) == expected


def test_real_history_movement_marks_match_an_independent_decimal_computation() -> None:
    history = sunat_history()
    expected: set[date] = set()
    for previous, day in pairwise(history):
        for side in ("compra", "venta"):
            old = Decimal(canonical(getattr(previous, side)))
            new = Decimal(canonical(getattr(day, side)))
            # strictly above 3 %, without a division: |new - old| * 100 > 3 * old, exactly
            if abs(new - old) * 100 > DEFAULT_THRESHOLD * old:
                expected.add(day.fecha)
    marked = {
        day.fecha
        for previous, day in pairwise(history)
        if "movimiento" in motivos(reasons_for(day, previous))
    }
    assert marked == expected
    assert date(2026, 6, 10) in marked
    assert history[0].fecha not in marked


def test_a_reference_that_is_not_positive_measures_no_move() -> None:
    # Invariants keep such values out now; a registry written before they did may hold one,
    # and the next capture must still be recorded (no division by zero).
    previous = observation(date(2026, 9, 18), "0.000", "3.362")
    fecha = date(2026, 9, 21)
    reasons = plausibility_reasons(fecha, "3.354", "3.900", previous, fecha, DEFAULT_THRESHOLD)
    assert [(r["motivo"], r.get("lado")) for r in reasons] == [("movimiento", "venta")]
