"""Typed messages: every one has words at the Slack edge, in English and in Chinese, and survives the outbox's JSON
as it was. In Chinese nothing is missing from the catalog and no English word is left but what is shown as it is
(names, ids, what a person or another system said); the mentions and escaping are those of the English words."""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone
from enum import Enum
from fractions import Fraction
from types import UnionType
from typing import Any

import pytest
from slack_sdk.models.blocks import Block

from bot.adapters.i18n import speaking
from bot.adapters.slack import blocks
from bot.adapters.slack.buttons import button_label
from bot.adapters.slack.mrkdwn import escape
from bot.adapters.slack.sentences import fill
from bot.adapters.slack.words import render
from bot.domain.failure_reasons import AsSaid, FailureReason, LegNotWritten
from bot.domain.languages import Language
from bot.domain.prices import Basis, Price
from bot.domain.priority import WaitCause
from bot.services import messages
from bot.services.messages import ApprovedBy, DeniedBy, Message, from_json, to_json
from bot.services.ports import Action, ActionKind, ButtonLabel
from bot.services.text import Moment, Strong, User, say
from tests.language_checks import catalog_misses, foreign_words

MOMENT = datetime(2026, 12, 3, 9, 0, tzinfo=timezone.utc)
HOSTILE = "<!channel> *x* <https://evil|click>"
SLACK_ID = "U0LEE"  # a string every mention may be made of: a user, a channel, a user group


def sample(hint: Any, text: str = HOSTILE) -> Any:
    """A value of the type ``hint`` names, with ``text`` (a person's hostile text) for every string."""
    origin = typing.get_origin(hint)
    if origin in (UnionType, typing.Union):
        return sample(next(arg for arg in typing.get_args(hint) if arg is not type(None)), text)
    if origin is tuple:
        return (sample(typing.get_args(hint)[0], text), sample(typing.get_args(hint)[0], text))
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
        return text
    if isinstance(hint, type) and issubclass(hint, Enum):
        return list(hint)[0]
    if hint is FailureReason:  # a check's reason quoting the API server's words
        return LegNotWritten(True, "ns-a", AsSaid(text))
    if hint is Fraction:  # a MIG profile's share of its GPU's price
        return Fraction(3, 7)
    assert isinstance(hint, type) and dataclasses.is_dataclass(hint), hint
    return instance(hint, text)


def instance(kind: type, text: str = HOSTILE) -> Any:
    hints = typing.get_type_hints(kind)
    return kind(**{f.name: sample(hints[f.name], text) for f in dataclasses.fields(kind)})


def strings_in(value: Any) -> Iterator[str]:
    """Every string a fixture holds (its fields', nested ones too): what the words show as it is."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from strings_in(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from strings_in(getattr(value, field.name))


def shown_as_is(value: Any) -> list[str]:
    """The fixture's strings as a message shows them: as typed, escaped, in a code span."""
    strings = set(strings_in(value))
    return sorted({form for s in strings for form in (s, escape(s), escape(s).replace("`", "'"))})


LIVE = re.compile(r"<(?:[@#][^>|]*|!subteam\^[^>|]*|!date\^\d+)")  # a mention, a channel, a group, a date token's moment


def live_markup(text: str) -> list[str]:
    """The live ``<...>`` of a text, without a date token's words (those are the language's)."""
    return sorted(LIVE.findall(text))


def in_chinese(said: Any) -> str:
    """The words in Chinese, asserting that the catalog had every sentence of them."""
    with catalog_misses() as missed, speaking(Language.ZH_CN):
        text = render(said)
    assert missed == set()
    return text


def assert_slack_accepts(text: str, language: Language) -> None:
    """The message as posted in ``language`` (its text, and every button a message may carry) within Block Kit's
    limits: slack_sdk's models parse and validate each block, and nothing of the text was cut to fit."""
    buttons = [Action(ActionKind.RELEASE, label, "17", "primary") for label in ButtonLabel]
    with speaking(language):
        posted = blocks.message_blocks(text, buttons)
        labels = [button_label(action) for action in buttons]
    assert len(posted) <= blocks.MAX_BLOCKS
    assert [element["text"]["text"] for element in posted[1]["elements"]] == labels
    for block in posted:
        parsed = Block.parse(block)
        assert parsed is not None and parsed.to_dict() == block
    assert posted[0]["text"]["text"] == text


KINDS = sorted(Message.kinds.values(), key=lambda kind: kind.__name__)


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.__name__)
def test_every_message_comes_back_from_the_outbox_json_and_has_words_with_no_live_markup(kind: type) -> None:
    message = instance(kind)
    assert from_json(to_json(message)) == message
    text = render(message)
    assert text.strip()
    assert "<!channel>" not in text and "<https://evil" not in text


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.__name__)
@pytest.mark.parametrize("text", [HOSTILE, SLACK_ID], ids=["hostile", "slack-ids"])
def test_every_message_has_chinese_words_with_the_english_ones_mentions_and_escaping(kind: type, text: str) -> None:
    message = instance(kind, text)
    english = render(message)
    chinese = in_chinese(message)
    assert chinese.strip() and chinese != english
    assert foreign_words(chinese, values=shown_as_is(message)) == []
    assert live_markup(chinese) == live_markup(english)
    assert "<!channel>" not in chinese and "<https://evil" not in chinese
    assert [s for s in strings_in(message) if escape(s) in english and escape(s) not in chinese] == []
    assert_slack_accepts(chinese, Language.ZH_CN)
    assert_slack_accepts(english, Language.EN)


MIG = "nvidia.com/mig-3g.40gb"
A100 = "NVIDIA A100-SXM4-80GB"
SPANS = [timedelta(days=2), timedelta(days=1, hours=3), timedelta(hours=5), timedelta(hours=5, minutes=10), timedelta(minutes=12)]
SPANS.append(timedelta(seconds=9))  # under a minute
# A price of every basis, with and without a MIG profile's share, of one model and of several.
PRICES = [
    Price(2.0, Basis.RAN_ON, (A100,), "USD", 7),
    Price(2.0, Basis.RAN_ON, (A100,), "USD", 7, share=Fraction(3, 7)),
    Price(2.0, Basis.RAN_ON, ("A", "B", "C", "D"), "USD", 1),
    Price(2.0, Basis.RAN_ON, ("A", "B"), "USD", 7, share=Fraction(3, 7)),
    Price(2.0, Basis.MAY_GET, (A100,), "USD", 7),
    Price(2.0, Basis.MAY_GET, (A100,), "USD", 7, share=Fraction(3, 7)),
    Price(2.0, Basis.DEFAULT, (), "USD", 7),
    Price(2.0, Basis.DEFAULT, (), "USD", 7, share=Fraction(1, 7)),
    Price(2.0, Basis.LISTED, (), "USD", 7),
]
# The other branches of the words (the fixture above takes one): each sentence of the messages is said by one of these.
VARIANTS = [
    DeniedBy("U0LEE", ""),
    messages.DeniedToRequester(3, "U0LEE", ""),
    messages.Applied("team-a", "gpu-quota", 4, 1, None, -1, used=3),
    messages.Applied("team-a", "frontier-batch", 4, 1, None, 1, used=3, resource=MIG, flavor="a100"),
    messages.Applied("team-a", "gpu-quota", 4, 2, None, 2, used=1, resource="nvidia.com/gpu.shared"),
    messages.Applied("team-a", "gpu-quota", 1, 2, None, 0, used=0, resource="amd.com/gpu"),
    messages.AppliedToRequester(3, "team-a", 1, None),
    messages.GrantEnded("team-a", None, None, 2, 3),
    messages.GrantEnded("team-a", None, 4, 1, 2, resource=MIG),
    messages.GrantEndedToRequester(3, "team-a", None, 4, 2),
    messages.WaitingForCluster(AsSaid("HTTP 503"), shift=False),
    messages.ShiftFailed(3, AsSaid("HTTP 403"), "team-a", "team-b", 4, 2, False),
    messages.ShiftApplied("team-b", 4, 2, "team-a", 1, 3, None, 3),
    messages.ShiftAppliedToRequester("team-b", 4, 2, "team-a", 1, 3, None, 1, request_id=5),
    messages.SourceReturned("team-b", None, 2),
    messages.QuotaEditedOutside("team-a", -1, 3),
    messages.Expired(3, timedelta(hours=1.5)),
    messages.CopyNotPosted("C0RESEARCH", "not_in_channel", None),
    messages.BudgetAlert("Frontier", ("U0LEE",), (), 500.0, 1000.0, 1200.0, "USD", None, None, MOMENT),
    messages.BudgetAlert("Frontier", ("U0LEE",), ("S0LEADS",), 900.0, 1000.0, 1200.0, "EUR", 80, None, MOMENT),
    messages.BudgetAlert("Frontier", (), ("S0LEADS",), 1100.0, 1000.0, 1200.0, "CNY", 100, MOMENT.date(), None),
    messages.BudgetAlert("Frontier", (), (), 1100.0, 1000.0, 1200.0, "USD", 100, None, None),
    messages.QuotaBlocked("team-a", "Job", "train", 1, None, 0, 0),
    messages.QuotaBlocked("team-a", "Job", "train", 2, 1, 3, 4, resource=MIG),
    messages.WorkloadWaiting("team-a", "job-train-1", "team-a-queue", MIG, None, "couldn't assign flavors"),
    messages.SchedulingWait("team-a", 1, (messages.WaitingPod("sweep-1", 1, "default", list(WaitCause)[-1]),)),
    messages.SchedulingWait("team-a", 6, tuple(messages.WaitingPod("sweep-1", 2, "research-low", c) for c in WaitCause)),
    *[
        messages.ShiftProposal(1, 2, days, 1, "team-b", 1.5, 4, 0.84, busy, "team-a", blocked, saturation, read)
        for days, busy in ((1, None), (14, 0.42))
        for blocked, saturation, read in (
            (3, 0.6, True),
            (None, 0.6, True),
            (None, None, True),
            (1, None, True),
            (3, None, False),
        )
    ],
    *[messages.ReclaimEnded("team-a", 1, span, 1) for span in SPANS],
    *[messages.IdleNudge("team-a", 2, 10.0, timedelta(hours=4), 0.05, 1234.4, 16.0, "USD", price) for price in PRICES],
]


@pytest.mark.parametrize("message", VARIANTS, ids=lambda message: type(message).__name__)
def test_every_branch_of_the_words_is_in_chinese_with_the_english_ones_mentions(message: Message) -> None:
    english = render(message)
    chinese = in_chinese(message)
    assert chinese.strip() and chinese != english
    assert foreign_words(chinese, values=shown_as_is(message)) == []
    assert live_markup(chinese) == live_markup(english)
    assert_slack_accepts(chinese, Language.ZH_CN)


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
    with speaking(Language.ZH_CN):
        assert render(notice) == (
            "<@U0LEE> set *a&amp;b* at <!date^1796288400^{date_short_pretty} {time}|2026/12/3 09:00 UTC> (4)."
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


@pytest.mark.parametrize(
    ("span", "text"),
    [
        (timedelta(days=2, hours=4, minutes=59), "2 天 4 小时"),
        (timedelta(days=1), "1 天"),
        (timedelta(hours=5, minutes=10), "5 小时 10 分钟"),
        (timedelta(minutes=12, seconds=30), "12 分钟"),
        (timedelta(seconds=20), "不到一分钟"),
    ],
)
def test_a_reclaims_span_reads_naturally_in_chinese(span: timedelta, text: str) -> None:
    said = in_chinese(messages.ReclaimEnded("ns", 2, span, 4))
    assert f"*随着作业结束，{text}内释放了 2 块 GPU*" in said


# The word modules of this area: every sentence of theirs in the catalog is said in Chinese by a fixture here.
WORD_MODULES = {f"bot/adapters/slack/{name}.py" for name in "words details reasons prices resources buttons mrkdwn".split()}


def test_every_sentence_of_the_message_words_is_said_in_chinese_by_a_fixture(monkeypatch: pytest.MonkeyPatch) -> None:
    from babel.messages.pofile import read_po

    from bot.adapters import i18n
    from bot.adapters.slack import mrkdwn, reasons
    from bot.adapters.slack.prices import render_basis, render_price
    from bot.adapters.slack.resources import unit_hours
    from bot.domain import audit_details, failure_reasons, prices
    from bot.domain.resources import GPU
    from bot.services.text import Quote
    from tests.unit import test_audit_details, test_failure_reasons

    asked: set[str] = set()
    real = i18n.translations

    class Asked:
        def __init__(self, language: Language) -> None:
            self.inner = real(language)

        def gettext(self, message: str) -> str:
            asked.add(message)
            return self.inner.gettext(message)

        def ngettext(self, singular: str, plural: str, count: int) -> str:
            asked.add(singular)
            return self.inner.ngettext(singular, plural, count)

    monkeypatch.setattr(i18n, "translations", Asked)
    with speaking(Language.ZH_CN):
        said = [instance(kind, text) for kind in KINDS for text in (HOSTILE, SLACK_ID)]
        for message in [*said, *VARIANTS]:
            render(message)
        for reason, _ in test_failure_reasons.WORDED:
            reasons.render(failure_reasons.from_text(failure_reasons.to_text(reason)))
        for detail, _ in test_audit_details.WORDED:
            reasons.render_detail(audit_details.to_text(detail))
        for price in PRICES:
            render_price(price)
            for grant in (True, False):
                for named in (True, False):
                    render_basis(prices.CostBasis(grant, price, named), "team-b")
        for label in ButtonLabel:
            button_label(Action(ActionKind.RELEASE, label, "17"))
        unit_hours(GPU), unit_hours(MIG)
        mrkdwn.render(say(Quote("")))
    with (i18n.CATALOGS / "zh_Hans" / "LC_MESSAGES" / "messages.po").open("rb") as source:
        catalog = read_po(source)
    sentences = {
        message.id[0] if isinstance(message.id, tuple) else message.id
        for message in catalog
        if message.id and {path for path, _ in message.locations} & WORD_MODULES
    }
    # Shown to English readers only: the cause is the adapter's English (other readers get the cluster and time).
    english_only = {
        "waiting for cluster {cluster}: {cause} (since {since})",
        "waiting for the home cluster: {cause} (since {since})",
    }
    assert sentences - asked - english_only == set()
