"""The build-side benchmark's figures, and the table ``make bench`` prints with the goals."""

from __future__ import annotations

import dataclasses
import statistics

TARGET_INCREMENTAL_MS = 50.0
TARGET_RATIO = 1.5
TARGET_GROWTH_KIB = 16.0
TARGET_FIRST_PAGE_MS = 2.0


@dataclasses.dataclass(slots=True)
class Figures:
    size: int
    revisions: int = 0
    generate_s: float = 0.0
    generation_note: str = ""
    full_build_s: float | None = None
    full_build_note: str = ""
    incremental_ms: list[float] = dataclasses.field(default_factory=list)
    apparent_per_rev: float = 0.0
    du_per_rev: float = 0.0
    growth_apparent: float = 0.0
    growth_du: float = 0.0
    first_cold_ms: list[float] = dataclasses.field(default_factory=list)
    first_cold_cpu_ms: list[float] = dataclasses.field(default_factory=list)
    first_warm_ms: list[float] = dataclasses.field(default_factory=list)
    walk_cold_ms: list[float] = dataclasses.field(default_factory=list)
    walk_warm_ms: list[float] = dataclasses.field(default_factory=list)
    walk_items: list[int] = dataclasses.field(default_factory=list)
    log_verify_ms: list[float] = dataclasses.field(default_factory=list)


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[int(rank) - 1]


def fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def med(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def p99(values: list[float]) -> float | None:
    return percentile(values, 99) if values else None


def report(all_figures: list[Figures]) -> str:
    rows: list[tuple[str, str, list[str]]] = []

    def row(label: str, target: str, values: list[str]) -> None:
        rows.append((label, target, values))

    kib = 1024.0
    row("revisions", "", [f"{f.revisions:,}" for f in all_figures])
    row("generate (s, apart)", "", [fmt(f.generate_s) for f in all_figures])
    row("full build (s)", "", [fmt(f.full_build_s) for f in all_figures])
    row(
        "full build per revision (ms)",
        "",
        [
            fmt(f.full_build_s * 1000 / f.revisions if f.full_build_s else None, 2)
            for f in all_figures
        ],
    )
    row(
        "incremental build, median (ms)",
        f"< {TARGET_INCREMENTAL_MS:g} at 100k",
        [fmt(med(f.incremental_ms), 2) for f in all_figures],
    )
    row("incremental build, p99 (ms)", "", [fmt(p99(f.incremental_ms), 2) for f in all_figures])
    row(
        "tree per revision, du (KiB)",
        f"< {TARGET_GROWTH_KIB:g} average",
        [fmt(f.du_per_rev / kib if f.revisions else None, 2) for f in all_figures],
    )
    row(
        "tree per revision, bytes (KiB)",
        "",
        [fmt(f.apparent_per_rev / kib if f.revisions else None, 2) for f in all_figures],
    )
    row(
        "growth per new revision, du (KiB)",
        "",
        [fmt(f.growth_du / kib if f.incremental_ms else None, 2) for f in all_figures],
    )
    row(
        "growth per new revision, bytes (KiB)",
        "",
        [fmt(f.growth_apparent / kib if f.incremental_ms else None, 2) for f in all_figures],
    )
    row(
        "5-y range, first page, cold (ms)",
        f"< {TARGET_FIRST_PAGE_MS:g}",
        [fmt(med(f.first_cold_ms), 3) for f in all_figures],
    )
    row(
        "5-y range, first page, cold, CPU (ms)",
        "",
        [fmt(med(f.first_cold_cpu_ms), 3) for f in all_figures],
    )
    row(
        "5-y range, first page, warm (ms)",
        f"< {TARGET_FIRST_PAGE_MS:g}",
        [fmt(med(f.first_warm_ms), 3) for f in all_figures],
    )
    row("5-y range, whole walk, cold (ms)", "", [fmt(med(f.walk_cold_ms), 2) for f in all_figures])
    row("5-y range, whole walk, warm (ms)", "", [fmt(med(f.walk_warm_ms), 2) for f in all_figures])
    row(
        "5-y range, items walked (median)",
        "",
        [fmt(med([float(n) for n in f.walk_items]), 0) for f in all_figures],
    )
    row(
        "verify: log checks of one observation (ms)",
        "",
        [fmt(med(f.log_verify_ms), 2) for f in all_figures],
    )

    header = ["figure", "target", *[f"{f.size:,}" for f in all_figures]]
    table = [header, *[[label, target, *values] for label, target, values in rows]]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    lines = []
    for number, line in enumerate(table):
        cells = [line[0].ljust(widths[0]), line[1].ljust(widths[1])]
        cells += [cell.rjust(width) for cell, width in zip(line[2:], widths[2:], strict=True)]
        lines.append(" | ".join(cells))
        if number == 0:
            lines.append("-+-".join("-" * width for width in widths))

    measured = [f for f in all_figures if f.incremental_ms]
    if len(measured) >= 2:
        base = next((f for f in measured if f.size == 1000), min(measured, key=lambda f: f.size))
        top = max(measured, key=lambda f: f.size)
        ratio = statistics.median(top.incremental_ms) / statistics.median(base.incremental_ms)
        lines.append(
            f"incremental median at size {top.size:,} / at size {base.size:,}: {ratio:.2f}"
            f" (target <= {TARGET_RATIO:g})"
        )
    for f in all_figures:
        for note in (f.generation_note, f.full_build_note):
            if note:
                lines.append(f"size {f.size:,}: {note}")
    return "\n".join(lines)
