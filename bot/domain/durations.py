"""Durations as people type them in chat: ``90m``, ``12h``, ``3d``, ``2w``, ``1d12h`` (and ``30s`` in config)."""

from __future__ import annotations

import re
from datetime import timedelta

UNIT_SECONDS = {"w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1}
_PART = re.compile(r"(\d+)([wdhms])")
_WHOLE = re.compile(r"(?:\d+[wdhms])+")
# Anything longer than a year is a typo, not a plan; it also keeps datetime arithmetic in range.
MAX_DURATION = timedelta(days=366)
ALLOWED = f"use 90m, 12h, 3d or 2w, at most {MAX_DURATION.days}d"


def parse_duration(text: str) -> timedelta:
    """Parse ``90m``, ``12h``, ``3d``, ``2w`` or combinations such as ``1d12h``.

    Raises ValueError with a message fit for a person.
    """
    cleaned = text.strip().lower()
    shown = _shown(text)
    if not _WHOLE.fullmatch(cleaned):
        raise ValueError(f"{shown} is not a duration: {ALLOWED}")
    seconds = sum(int(number) * UNIT_SECONDS[unit] for number, unit in _PART.findall(cleaned))
    if seconds <= 0:
        raise ValueError(f"{shown} is zero: {ALLOWED}")
    if seconds > MAX_DURATION.total_seconds():
        raise ValueError(f"{shown} is too long: {ALLOWED} (for longer, ask for a permanent change)")
    return timedelta(seconds=seconds)


def _shown(text: str) -> str:
    """The typed duration as quoted in an error: trimmed, so a pasted paragraph stays one line."""
    word = " ".join(text.split())
    return f"`{word[:30]}…`" if len(word) > 30 else f"`{word}`"


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
