"""Typed messages: every one has words at the Slack edge and survives the outbox's JSON as it was."""

from __future__ import annotations

import dataclasses
import typing
from datetime import date, datetime, timedelta, timezone
from enum import Enum
from fractions import Fraction
from types import UnionType
from typing import Any

import pytest

from bot.adapters.slack.sentences import fill
from bot.adapters.slack.words import render
from bot.domain.failure_reasons import AsSaid, FailureReason, LegNotWritten
from bot.services import messages
from bot.services.messages import ApprovedBy, DeniedBy, Message, from_json, to_json
from bot.services.text import Moment, Strong, User, say

MOMENT = datetime(2026, 12, 3, 9, 0, tzinfo=timezone.utc)
HOSTILE = "<!channel> *x* <https://evil|click>"


def sample(hint: Any) -> Any:
    """A value of the type ``hint`` names, with a person's hostile text for every string."""
    origin = typing.get_origin(hint)
    if origin in (UnionType, typing.Union):
        return sample(next(arg for arg in typing.get_args(hint) if arg is not type(None)))
    if origin is tuple:
        return (sample(typing.get_args(hint)[0]), sample(typing.get_args(hint)[0]))
    if hint is datetime:
        return MOMENT
    if hint is timedelta:
        return timedelta(hours=36)
    if hint is date:
        return MOMENT.date()
    if hint is bool:
        return True
    if hint is int:
        return 3
    if hint is float:
        return 2.5
    if hint is str:
        return HOSTILE
    if isinstance(hint, type) and issubclass(hint, Enum):
        return list(hint)[0]
    if hint is FailureReason:  # a check's reason quoting the API server's words
        return LegNotWritten(True, "ns-a", AsSaid(HOSTILE))
    if hint is Fraction:  # a MIG profile's share of its GPU's price
        return Fraction(3, 7)
    assert isinstance(hint, type) and dataclasses.is_dataclass(hint), hint
    return instance(hint)


def instance(kind: type) -> Any:
    hints = typing.get_type_hints(kind)
    return kind(**{f.name: sample(hints[f.name]) for f in dataclasses.fields(kind)})


KINDS = sorted(Message.kinds.values(), key=lambda kind: kind.__name__)


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.__name__)
def test_every_message_comes_back_from_the_outbox_json_and_has_words_with_no_live_markup(kind: type) -> None:
    message = instance(kind)
    assert from_json(to_json(message)) == message
    text = render(message)
    assert text.strip()
    assert "<!channel>" not in text and "<https://evil" not in text


def test_every_message_is_defined_in_the_messages_module() -> None:
    assert {kind.__module__ for kind in KINDS} == {messages.__name__}


def test_an_entry_recorded_before_typed_messages_is_read_as_its_notice() -> None:
    old = say(":+1: Approved by ", User("U0LEE"), " — 1 of 2.").to_json()
    assert render(from_json(old)) == ":+1: Approved by <@U0LEE> — 1 of 2."


def test_a_message_reads_as_it_did_when_the_services_made_the_words() -> None:
    assert render(ApprovedBy("U0LEE", 1, 2)) == ":+1: Approved by <@U0LEE> — 1 of 2."
    assert render(DeniedBy("U0LEE", "")) == ":no_entry: Denied by <@U0LEE>."
    assert render(DeniedBy("U0LEE", "<!here> no")) == ":no_entry: Denied by <@U0LEE>. Reason: &lt;!here&gt; no"


def test_fill_puts_typed_parts_and_escaped_text_in_the_sentence() -> None:
    notice = fill("{who} set {ns} at {at} ({n}).", who=User("U0LEE"), ns=Strong("a&b"), at=Moment(MOMENT), n=4)
    assert render(notice) == (
        "<@U0LEE> set *a&amp;b* at <!date^1796288400^{date_short_pretty} at {time}|2026-12-03 09:00 UTC> (4)."
    )


def test_a_quota_below_what_is_in_use_explains_the_gradual_reclaim() -> None:
    assert "in use" not in render(messages.Applied("team-a", "gpu-quota", 4, 4, None, 0, used=4))
    text = render(messages.Applied("team-a", "gpu-quota", 4, 1, None, 0, used=3))
    assert "\n3 GPUs are in use, above the new quota of 1. Running pods keep running" in text and "`exceeded quota`" in text


@pytest.mark.parametrize(
    ("span", "text"),
    [
        (timedelta(days=2, hours=4, minutes=59), "2 days 4 h"),
        (timedelta(days=1), "1 day"),
        (timedelta(hours=5, minutes=10), "5 h 10 min"),
        (timedelta(minutes=12, seconds=30), "12 min"),
        (timedelta(seconds=20), "under a minute"),
    ],
)
def test_a_reclaims_span_is_worded_as_people_say_it(span: timedelta, text: str) -> None:
    said = render(messages.ReclaimEnded("ns", 2, span, 4))
    assert f"*2 GPUs freed over {text} as jobs finished*" in said
