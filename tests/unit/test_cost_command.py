"""Parsing ``/gpu-quota cost [team|namespace] [YYYY-MM]`` and the ledger's small helpers."""

from __future__ import annotations

from datetime import date

import pytest

from bot.domain.commands import CostCommand, Malformed, parse_command
from bot.services.ledger import day_ranges


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cost", CostCommand()),
        ("cost research", CostCommand(target="research")),
        ("cost 2026-10", CostCommand(month=date(2026, 10, 1))),
        ("cost ai-frontier-research 2026-10", CostCommand(target="ai-frontier-research", month=date(2026, 10, 1))),
        ("cost 2026-10 research", CostCommand(target="research", month=date(2026, 10, 1))),
    ],
)
def test_cost_takes_a_team_or_namespace_and_a_month(text: str, expected: CostCommand) -> None:
    assert parse_command(text) == expected


@pytest.mark.parametrize("text", ["cost 2026-13", "cost a b", "cost Research!"])
def test_cost_refuses_what_it_cannot_read(text: str) -> None:
    parsed = parse_command(text)
    assert isinstance(parsed, Malformed) and parsed.usage == ("cost",)


def test_missing_days_read_as_short_ranges() -> None:
    days = [date(2026, 11, d) for d in (3, 4, 5, 6, 7, 8, 9, 12)] + [date(2026, 10, 31), date(2026, 11, 1)]
    assert day_ranges(days) == "31 Oct-1 Nov, 3-9 Nov, 12 Nov"
    assert day_ranges([date(2026, 11, 10)]) == "10 Nov"
