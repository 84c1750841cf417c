"""Pure geometry of a year's rate chart: scales, axis ticks and the SVG point lists.

Values stay ``Decimal`` until they become pixel coordinates; the labels a person reads are the
canonical texts, never a float printed back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import date
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

MONTH_LABELS = ("ene", "feb", "mar", "abr", "may", "jun", "jul", "ago", "set", "oct", "nov", "dic")
STEPS = (Decimal("0.001"), Decimal("0.002"), Decimal("0.005"))


@dataclasses.dataclass(frozen=True, slots=True)
class ChartPoint:
    fecha: date
    compra: Decimal
    venta: Decimal


@dataclasses.dataclass(frozen=True, slots=True)
class Tick:
    position: float
    label: str


@dataclasses.dataclass(frozen=True, slots=True)
class Box:
    left: float
    top: float
    right: float
    bottom: float

    @property
    def width(self) -> float:
        return self.right - self.left

    @property
    def height(self) -> float:
        return self.bottom - self.top


@dataclasses.dataclass(frozen=True, slots=True)
class Chart:
    """Everything the SVG template draws; coordinates in user units of ``width`` x ``height``."""

    title: str
    width: int
    height: int
    plot: Box
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    compra_points: str
    venta_points: str
    point_count: int


def nice_step(span: Decimal, max_ticks: int = 6) -> Decimal:
    """The smallest step of the 1-2-5 series that cuts ``span`` into at most ``max_ticks``."""
    scale = Decimal(1)
    while True:
        for base in STEPS:
            step = base * scale
            if span / step <= max_ticks:
                return step
        scale *= 10


def y_range(low: Decimal, high: Decimal, max_ticks: int = 6) -> tuple[Decimal, Decimal, Decimal]:
    """(axis low, axis high, step): ``[low, high]`` widened to whole steps, never empty."""
    span = max(high - low, Decimal("0.002"))
    step = nice_step(span, max_ticks)
    axis_low = (low / step).to_integral_value(rounding=ROUND_FLOOR) * step
    axis_high = (high / step).to_integral_value(rounding=ROUND_CEILING) * step
    if axis_high == axis_low:
        axis_high += step
    return axis_low, axis_high, step


def x_position(day: date, year: int, plot: Box) -> float:
    """Where ``day`` falls on a January-to-December axis."""
    first = date(year, 1, 1)
    days_in_year = (date(year + 1, 1, 1) - first).days
    return plot.left + plot.width * (day - first).days / (days_in_year - 1)


def y_position(value: Decimal, low: Decimal, high: Decimal, plot: Box) -> float:
    return plot.bottom - plot.height * float((value - low) / (high - low))


def _points(values: Sequence[tuple[float, float]]) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in values)


def year_chart(
    title: str,
    year: int,
    points: Sequence[ChartPoint],
    width: int = 760,
    height: int = 320,
) -> Chart:
    """The chart of one year's ``compra`` and ``venta``, points in date order."""
    plot = Box(left=64.0, top=40.0, right=width - 16.0, bottom=height - 40.0)
    ordered = sorted(points, key=lambda p: p.fecha)
    x_ticks = tuple(
        Tick(x_position(date(year, month, 1), year, plot), MONTH_LABELS[month - 1])
        for month in range(1, 13)
    )
    if not ordered:
        return Chart(title, width, height, plot, x_ticks, (), "", "", 0)
    low = min(min(p.compra, p.venta) for p in ordered)
    high = max(max(p.compra, p.venta) for p in ordered)
    axis_low, axis_high, step = y_range(low, high)
    y_ticks = []
    value = axis_low
    while value <= axis_high:
        y_ticks.append(Tick(y_position(value, axis_low, axis_high, plot), f"{value:.3f}"))
        value += step
    compra = [
        (x_position(p.fecha, year, plot), y_position(p.compra, axis_low, axis_high, plot))
        for p in ordered
    ]
    venta = [
        (x_position(p.fecha, year, plot), y_position(p.venta, axis_low, axis_high, plot))
        for p in ordered
    ]
    return Chart(
        title,
        width,
        height,
        plot,
        x_ticks,
        tuple(y_ticks),
        _points(compra),
        _points(venta),
        len(ordered),
    )
