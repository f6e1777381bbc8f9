"""Gradual reclaim in words: the span, the status line, and the Propose shift button's value."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.adapters.slack.blocks import status_lines
from bot.adapters.slack.events import ButtonClick
from bot.domain.reclaim import over_quota, span_text
from bot.domain.resources import GPU
from bot.services.ports import ActionKind
from bot.services.views import NamespaceStatus


@pytest.mark.parametrize(
    ("span", "text"),
    [
        (timedelta(days=2, hours=4, minutes=59), "2 days 4 h"),
        (timedelta(days=1), "1 day"),
        (timedelta(hours=5, minutes=10), "5 h 10 min"),
        (timedelta(hours=3), "3 h"),
        (timedelta(minutes=12, seconds=30), "12 min"),
        (timedelta(seconds=20), "under a minute"),
    ],
)
def test_a_reclaims_span_as_people_say_it(span: timedelta, text: str) -> None:
    assert span_text(span) == text


def status(hard: int | None, used: int | None, since: datetime | None) -> str:
    return status_lines(
        [NamespaceStatus("ns", "Team", "compute-quota", GPU, hard, used, hard, (), (), None, reclaiming_since=since)]
    )[0]


def test_status_says_over_quota_and_since_when_a_reclaim_is_open() -> None:
    since = datetime(2026, 11, 30, 9, tzinfo=UTC)
    assert status(1, 4, since).endswith(
        "*1* hard / 4 used, over quota by 3, reclaiming since <!date^1796029200^{date_short_pretty} at {time}|2026-11-30 09:00 UTC>"
    )
    assert status(1, 3, None).endswith("*1* hard / 3 used, over quota by 2")  # no reclaim open (a hand edit not adopted yet)
    assert status(4, 3, None).endswith("*4* hard / 3 used")
    assert over_quota(None, 3) == 0


def click(value: str) -> ButtonClick:
    return ButtonClick("U1", ActionKind.PROPOSE_SHIFT, value, None)


def test_a_propose_shift_value_is_read_strictly() -> None:
    assert click("ai-frontier-research:biz-model-serving:2").shift_prefill() == ("ai-frontier-research", "biz-model-serving", 2)
    for forged in ("a:b", "a:b:0", "a:b:-2", "a:b:２", "A_B:c:1", "a:b:1:extra", "a:b:99999"):
        assert click(forged).shift_prefill() is None, forged
