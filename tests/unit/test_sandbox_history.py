"""The sandbox's synthetic GPU use is anchored to a fixed day: a past day's numbers do not depend on today."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

from bot.domain.costs import Window
from bot.sandbox.history import HistoryMetrics, sandbox_history


def test_a_past_days_usage_is_the_same_whenever_it_is_read() -> None:
    day = date(2026, 11, 28)
    window = Window(day, datetime(2026, 11, 28, tzinfo=timezone.utc), datetime(2026, 11, 29, tzinfo=timezone.utc))
    readings = [
        HistoryMetrics(sandbox_history(now)).window_usage(window)
        for now in (datetime(2026, 11, 30, 18, 4, tzinfo=timezone.utc), datetime(2026, 12, 9, 7, 31, tzinfo=timezone.utc))
    ]
    assert readings[0] == readings[1]
    assert readings[0]["ai-frontier-research"].allocated_hours > 0 and readings[0]["biz-model-serving"].allocated_hours > 0


def test_the_history_reaches_past_the_shells_clock() -> None:
    now = datetime(2027, 3, 1, tzinfo=timezone.utc)
    history = sandbox_history(now, ahead=30)
    assert history.end >= now + timedelta(days=30)
    assert HistoryMetrics(history).allocated_at(now + timedelta(days=29))  # the shell can move time forward
