"""The digest chart: daily cost this month, stacked, with the budget pace line. PNG bytes via matplotlib.

Its words (title, axis, legend) come with the call, made where the report is worded
(``bot.adapters.slack.reports``); the chart only draws. Uses the object-oriented ``Figure`` API (no pyplot, no global state), so it is safe in threads and
needs no display. matplotlib (and numpy with it, about 50 MiB) is imported when the first chart is
drawn, not at start-up: most processes never draw one.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True)
class ChartWords:
    title: str
    axis: str  # the cost axis
    month: str  # under the days
    pace: str  # the legend of the budget pace line
    others: str  # the legend of the parts stacked as one (``OTHERS``)


def daily_cost_chart(*, daily: Mapping[date, Mapping[str, float]], pace: float | None, words: ChartWords) -> bytes:
    """Stacked bars: one per day, one colour per part (namespace or team); a dashed line at ``pace``.

    The ``MAX_PARTS - 1`` largest parts get their own colour; the rest are stacked as one ``OTHERS``.
    """
    from matplotlib.figure import Figure

    daily = _top_parts(daily)
    days = sorted(daily)
    parts = sorted({part for values in daily.values() for part in values}, key=lambda p: (p == OTHERS, p))
    figure = Figure(figsize=(9, 4.2), dpi=100, layout="constrained")
    axes = figure.subplots()
    bottoms = [0.0] * len(days)
    labels = [day.strftime("%d") for day in days]
    for part in parts:
        heights = [daily[day].get(part, 0.0) for day in days]
        axes.bar(labels, heights, bottom=bottoms, label=words.others if part == OTHERS else part, width=0.8)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    if pace is not None:
        axes.axhline(pace, color="#c0392b", linestyle="--", linewidth=1.5, label=words.pace)
    axes.set_title(words.title)
    axes.set_ylabel(words.axis)
    axes.set_xlabel(words.month if days else "")
    axes.grid(axis="y", alpha=0.3)
    if parts or pace is not None:
        axes.legend(loc="upper left", fontsize="small", ncols=2)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


MAX_PARTS = 10
OTHERS = "others"  # the key of the parts stacked as one (the ledger's too): shown as ``ChartWords.others``


def _top_parts(daily: Mapping[date, Mapping[str, float]]) -> dict[date, dict[str, float]]:
    totals: dict[str, float] = {}
    for values in daily.values():
        for part, value in values.items():
            totals[part] = totals.get(part, 0.0) + value
    if len(totals) <= MAX_PARTS:
        return {day: dict(values) for day, values in daily.items()}
    kept = set(sorted(totals, key=lambda part: totals[part], reverse=True)[: MAX_PARTS - 1])
    grouped: dict[date, dict[str, float]] = {}
    for day, values in daily.items():
        grouped[day] = {part: value for part, value in values.items() if part in kept}
        grouped[day][OTHERS] = sum(value for part, value in values.items() if part not in kept)
    return grouped
