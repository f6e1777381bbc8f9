"""Durations as people type them in chat: ``90m``, ``12h``, ``3d``, ``2w``, ``1d12h`` (and ``30s`` in config)."""

from __future__ import annotations

import re
from datetime import timedelta

UNIT_SECONDS = {"w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1}
_PART = re.compile(r"(\d+)([wdhms])")
_WHOLE = re.compile(r"(?:\d+[wdhms])+")
# Anything longer than a year is a typo, not a plan; it also keeps datetime arithmetic in range.
MAX_DURATION = timedelta(days=366)


def parse_duration(text: str) -> timedelta:
    """Parse ``90m``, ``12h``, ``3d``, ``2w`` or combinations such as ``1d12h``.

    Raises ValueError with a message fit for a person.
    """
    cleaned = text.strip().lower()
    if not _WHOLE.fullmatch(cleaned):
        raise ValueError(f"'{text}' is not a duration: use minutes, hours, days or weeks, e.g. 90m, 12h, 3d, 2w")
    seconds = sum(int(number) * UNIT_SECONDS[unit] for number, unit in _PART.findall(cleaned))
    if seconds <= 0:
        raise ValueError(f"'{text}' is zero: a duration must be longer than that")
    duration = timedelta(seconds=seconds)
    if duration > MAX_DURATION:
        raise ValueError(f"'{text}' is longer than a year: ask for a permanent change instead")
    return duration


def format_duration(duration: timedelta) -> str:
    """The shortest exact form: ``3d``, ``1d12h``, ``1h30m``, ``30s``."""
    remaining = int(duration.total_seconds())
    if remaining <= 0:
        return "0s"
    parts = []
    for unit, size in UNIT_SECONDS.items():
        if unit == "w" and remaining % size:
            continue  # "10d" reads better than "1w3d"
        count, remaining = divmod(remaining, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
