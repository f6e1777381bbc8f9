"""Gradual reclaim: how long it took (for the audit record) and what the quota still lacks. Pure."""

from __future__ import annotations

from datetime import timedelta


def span_text(span: timedelta) -> str:
    """A reclaim's length as the audit trail words it (``bot.adapters.slack.details``): "2 days 4 h",
    "5 h 10 min", "12 min", "under a minute". The record stores the minutes (``ReclaimFreed``)."""
    minutes = int(span.total_seconds() // 60)
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    if days:
        return f"{days} day{'s' if days != 1 else ''}" + (f" {hours} h" if hours else "")
    if hours:
        return f"{hours} h" + (f" {minutes} min" if minutes else "")
    return f"{minutes} min" if minutes else "under a minute"


def over_quota(hard: int | None, used: int | None) -> int:
    """GPUs in use beyond the quota (0 when within it or unknown)."""
    if hard is None or used is None:
        return 0
    return max(0, used - hard)
