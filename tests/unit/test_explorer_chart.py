"""The year chart's geometry: ticks on whole steps, points inside the plot, dates on the axis."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from builder.render.explorer.chart import ChartPoint, nice_step, y_range, year_chart


def parse(points: str) -> list[tuple[float, float]]:
    return [tuple(map(float, pair.split(","))) for pair in points.split()]  # type: ignore[misc]


def test_nice_step_is_the_smallest_1_2_5_step_within_the_tick_budget() -> None:
    assert nice_step(Decimal("0.050"), 6) == Decimal("0.010")
    assert nice_step(Decimal("0.004"), 6) == Decimal("0.001")
    assert nice_step(Decimal("0.300"), 6) == Decimal("0.050")
    assert nice_step(Decimal("1.1"), 6) == Decimal("0.200")


def test_y_range_widens_to_whole_steps_and_is_never_empty() -> None:
    assert y_range(Decimal("3.712"), Decimal("3.749")) == (
        Decimal("3.71"),
        Decimal("3.75"),
        Decimal("0.01"),
    )
    low, high, _ = y_range(Decimal("3.500"), Decimal("3.500"))
    assert low <= Decimal("3.500") < high


def test_first_and_last_day_of_the_year_sit_on_the_plot_edges() -> None:
    points = [
        ChartPoint(date(2024, 1, 1), Decimal("3.700"), Decimal("3.710")),
        ChartPoint(date(2024, 12, 31), Decimal("3.750"), Decimal("3.760")),
    ]
    chart = year_chart("t", 2024, points)
    (x0, _), (x1, _) = parse(chart.compra_points)
    assert x0 == chart.plot.left
    assert x1 == chart.plot.right
    assert [t.label for t in chart.x_ticks][:3] == ["ene", "feb", "mar"]


def test_a_higher_value_is_drawn_higher_and_labels_are_canonical_text() -> None:
    points = [
        ChartPoint(date(2026, 3, 2), Decimal("3.701"), Decimal("3.702")),
        ChartPoint(date(2026, 3, 3), Decimal("3.799"), Decimal("3.800")),
    ]
    chart = year_chart("t", 2026, points)
    (_, low_y), (_, high_y) = parse(chart.compra_points)
    assert high_y < low_y
    assert all(len(t.label.split(".")[1]) == 3 for t in chart.y_ticks)
    assert chart.point_count == 2


def test_a_year_without_points_has_axes_and_no_lines() -> None:
    chart = year_chart("t", 2026, [])
    assert chart.compra_points == chart.venta_points == ""
    assert len(chart.x_ticks) == 12
    assert chart.y_ticks == ()


values = st.decimals(min_value=Decimal("0.001"), max_value=Decimal("99.999"), places=3)


@given(st.lists(st.tuples(st.integers(0, 364), values, values), min_size=1, max_size=40))
def test_every_point_lies_inside_the_plot(raw: list[tuple[int, Decimal, Decimal]]) -> None:
    points = [ChartPoint(date(2025, 1, 1) + timedelta(days=d), c, v) for d, c, v in raw]
    chart = year_chart("t", 2025, points)
    for x, y in parse(chart.compra_points) + parse(chart.venta_points):
        assert chart.plot.left - 0.05 <= x <= chart.plot.right + 0.05
        assert chart.plot.top - 0.05 <= y <= chart.plot.bottom + 0.05
