"""Every typed refusal has its words at the Slack edge, and what a person typed stays inert in them."""

from __future__ import annotations

import dataclasses
from datetime import date, timedelta
from enum import Enum
from typing import Any, get_type_hints

import pytest

import bot.bootstrap  # noqa: F401  (lends the edge's wording to ``str(error)``)
from bot.adapters.slack.refusals import notice, render
from bot.domain.failure_reasons import FailureReason, SourceShort
from bot.domain.lifecycle import RequestState
from bot.services import refusals as r


def _example(kind: type[r.Refusal]) -> r.Refusal:
    """An instance of ``kind`` with a value of each field's type."""
    samples: dict[Any, Any] = {int: 3, str: "ns-a", date: date(2026, 11, 1), timedelta: timedelta(days=2)}
    samples[FailureReason] = SourceShort("ns-a", 2, 3, own=True)
    values = {}
    for name, hint in get_type_hints(kind).items():
        if isinstance(hint, type) and issubclass(hint, Enum):
            values[name] = next(iter(hint))
        elif "tuple[date" in str(hint) or "tuple[datetime.date" in str(hint):
            values[name] = (date(2026, 11, 1), date(2026, 11, 3))
        else:
            values[name] = samples.get(hint, ("U0LEE",) if "tuple" in str(hint) else None)
    return kind(**values)


KINDS = [k for k in vars(r).values() if isinstance(k, type) and issubclass(k, r.Refusal) and dataclasses.is_dataclass(k)]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_every_refusal_is_worded_as_a_whole_sentence(kind: type[r.Refusal]) -> None:
    """A catalog entry per kind (#24 translates them): it begins a sentence and leaves no placeholder."""
    worded = render(_example(kind))
    # The digest's "no metrics for <day>" follows the command's name ("gpu-quota-bot: no metrics for ...").
    clause = kind is r.NoMetricsFor and worded.startswith("no metrics for ")
    assert (worded[:1].isupper() or worded.startswith("`") or clause) and "{" not in worded, worded


def test_what_a_person_typed_is_escaped_once_in_a_refusal() -> None:
    assert render(r.NotManaged("<!channel>&")) == "`&lt;!channel&gt;&amp;` is not managed by gpu-quota-bot."


def test_str_of_a_refusal_is_the_edge_wording_in_plain_text() -> None:
    error = r.Refused(r.AlreadyDecided(7, RequestState.DENIED, ("U0LEE", "gpu-quota-bot")))
    assert str(error) == "GQ-7 was already denied by @U0LEE, auto-approval."
    assert render(error.refusal) == "GQ-7 was already denied by <@U0LEE>, auto-approval."
    assert notice(error.refusal).parts  # typed parts: the mention is a User, not text


def test_a_refusal_without_words_is_a_type_error() -> None:
    @dataclasses.dataclass(frozen=True)
    class Unworded(r.Refusal):
        pass

    with pytest.raises(TypeError, match="no words for Unworded"):
        render(Unworded())
