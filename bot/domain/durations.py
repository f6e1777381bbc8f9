"""Durations as people type them in chat: ``90m``, ``12h``, ``3d``, ``2w``, ``1d12h`` (and ``30s`` in config)."""

from __future__ import annotations

import re
from datetime import timedelta

from bot.domain.input_problems import BadDuration, DurationFault, ParseError

UNIT_SECONDS = {"w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1}
_PART = re.compile(r"(\d+)([wdhms])")
_WHOLE = re.compile(r"(?:\d+[wdhms])+")
# Anything longer than a year is a typo, not a plan; it also keeps datetime arithmetic in range.
MAX_DURATION = timedelta(days=366)
# The rule in English, for the form hints of ``bot.adapters.slack.modals`` until they are worded at the
# edge (a parse error's words are: ``bot.adapters.slack.input_words``).
ALLOWED = f"use 90m, 12h, 3d or 2w, at most {MAX_DURATION.days}d"


def parse_duration(text: str) -> timedelta:
    """Parse ``90m``, ``12h``, ``3d``, ``2w`` or combinations such as ``1d12h``.

    Raises ``ParseError`` (a ValueError) naming the problem (``BadDuration``: what was typed, and why not).
    """
    cleaned = text.strip().lower()
    typed = " ".join(text.split())  # a pasted paragraph stays one line where it is quoted
    if not _WHOLE.fullmatch(cleaned):
        raise ParseError(BadDuration(typed, DurationFault.NOT_A_DURATION))
    seconds = sum(int(number) * UNIT_SECONDS[unit] for number, unit in _PART.findall(cleaned))
    if seconds <= 0:
        raise ParseError(BadDuration(typed, DurationFault.ZERO))
    if seconds > MAX_DURATION.total_seconds():
        raise ParseError(BadDuration(typed, DurationFault.TOO_LONG))
    return timedelta(seconds=seconds)


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
