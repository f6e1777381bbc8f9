"""Every typed refusal has its words at the Slack edge, in English and in Chinese, and what a person
typed stays inert (and untranslated) in them."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from datetime import date, timedelta
from enum import Enum
from typing import Any, get_type_hints

import pytest
from slack_sdk.models.blocks import Block

import bot.bootstrap  # noqa: F401  (lends the edge's wording to ``str(error)``)
from bot.adapters.i18n import speaking
from bot.adapters.slack.blocks import lines_to_blocks
from bot.adapters.slack.refusals import notice, render
from bot.domain.failure_reasons import AsSaid, FailureReason
from bot.domain.input_problems import InputProblem, NotANamespaceName, NoTerm
from bot.domain.languages import Language
from bot.domain.lifecycle import RequestState
from bot.services import refusals as r
from bot.services.requests import AUTO_APPROVER
from tests.language_checks import catalog_misses, foreign_words

TYPED = "ns-a"  # every text field of the fixtures: a namespace or team as typed, a system's words
PERSON = "U0LEE"  # every tuple of text: deciders, namespaces, candidates, a system's problems
SHOWN_AS_IS = [TYPED, PERSON, "GQ-3", "Bad_NS"]


def _value(name: str, hint: Any) -> Any:
    if hint is FailureReason:
        return AsSaid(TYPED)  # a failing system's words, shown as said (the reasons' words are tested with them)
    if "InputProblem" in str(hint):
        return (NotANamespaceName("Bad_NS"), NoTerm(example="3d"))
    if "tuple[date" in str(hint) or "tuple[datetime.date" in str(hint):
        return (date(2026, 11, 1), date(2026, 11, 3))
    if "tuple" in str(hint):
        return (PERSON,)
    samples: dict[Any, Any] = {int: 3, str: TYPED, date: date(2026, 11, 1), timedelta: timedelta(days=2)}
    return samples.get(hint)


def _examples(kind: type[r.Refusal]) -> Iterator[r.Refusal]:
    """An instance of ``kind`` for each combination of its choices (enum members, yes and no), the other
    fields with a value of their type."""
    hints = get_type_hints(kind)
    choices: dict[str, list[Any]] = {}
    for name, hint in hints.items():
        if isinstance(hint, type) and issubclass(hint, Enum):
            choices[name] = list(hint)
        elif hint is bool:
            choices[name] = [False, True]
        elif "None" in str(hint) and "tuple" in str(hint):
            choices[name] = [None, (PERSON,)]
    fixed = {name: _value(name, hint) for name, hint in hints.items() if name not in choices}
    for combination in itertools.product(*choices.values()):
        values = fixed | dict(zip(choices, combination, strict=True))
        if kind is r.NotFailed and values["state"] == RequestState.FAILED:
            continue  # a failed request is retried, never refused as not failed
        yield kind(**values)


KINDS = [k for k in vars(r).values() if isinstance(k, type) and issubclass(k, r.Refusal) and dataclasses.is_dataclass(k)]
EXAMPLES = [refusal for kind in KINDS for refusal in _examples(kind)]


@pytest.mark.parametrize("refusal", EXAMPLES, ids=repr)
def test_every_refusal_is_worded_as_a_whole_sentence(refusal: r.Refusal) -> None:
    """A catalog entry per kind (and per choice): it begins a sentence and leaves no placeholder."""
    worded = render(refusal)
    # The digest's "no metrics for <day>" follows the command's name ("gpu-quota-bot: no metrics for ...").
    clause = isinstance(refusal, r.NoMetricsFor) and worded.startswith("no metrics for ")
    assert (worded[:1].isupper() or worded.startswith("`") or clause) and "{" not in worded, worded


@pytest.mark.parametrize("refusal", EXAMPLES, ids=repr)
def test_every_refusal_is_worded_in_chinese_with_what_was_typed_kept(refusal: r.Refusal) -> None:
    with catalog_misses() as missed, speaking(Language.ZH_CN):
        worded = render(refusal)
    assert missed == set()
    assert foreign_words(worded, values=SHOWN_AS_IS) == [], worded
    assert "{" not in worded and worded != (english := _english(refusal)), english
    for value in (TYPED, PERSON):
        assert (value in english) == (value in worded), worded  # nothing typed is lost or translated
    # The Chinese is as short as Block Kit needs: an ephemeral answer's section holds it.
    for block in lines_to_blocks([worded]):
        parsed = Block.parse(block)
        assert parsed is not None
        parsed.validate_json()  # slack_sdk's limits (a section's 3,000 characters)


def _english(refusal: r.Refusal) -> str:
    with speaking(Language.EN):
        return render(refusal)


@pytest.mark.parametrize("language", list(Language))
def test_the_states_and_choices_are_whole_sentences_not_words_slotted_in(language: Language) -> None:
    """Each state of an already decided request has its own sentence (a translator writes each whole)."""
    with speaking(language):
        worded = {render(r.AlreadyDecided(7, state, (PERSON,))) for state in RequestState}
    assert len(worded) == len(RequestState)


def test_lists_are_joined_as_each_language_lists() -> None:
    refusal = r.AmbiguousNamespace("ns-a", ("us-1/ns-a", "us-2/ns-a"))
    assert render(refusal) == "`ns-a` is a namespace in several clusters; name one: us-1/ns-a, us-2/ns-a."
    with speaking(Language.ZH_CN):
        assert render(refusal) == "`ns-a` 是多个集群中的命名空间；请指定一个：us-1/ns-a、us-2/ns-a。"


def test_an_incomplete_request_names_its_problems_in_the_reader_s_language() -> None:
    refusal = r.Incomplete((NotANamespaceName("Bad_NS"), NoTerm(example="3d")))
    english = render(refusal)
    assert english.startswith("The request is incomplete: 'Bad_NS' is not a namespace name; say how long: `for 3d`")
    with speaking(Language.ZH_CN):
        chinese = render(refusal)
    assert chinese.startswith("申请不完整：“Bad_NS” 不是命名空间名称；请说明时长：`for 3d`")


def test_the_auto_approver_is_named_and_numbers_and_days_follow_the_locale() -> None:
    decided = r.AlreadyDecided(7, RequestState.DENIED, (PERSON, AUTO_APPROVER))
    long_reason = r.ReasonTooLong(60_000, 2_000)
    day = r.DayNotOver(date(2026, 11, 10), date(2026, 11, 10))
    assert render(decided) == "GQ-7 was already denied by <@U0LEE>, auto-approval."
    assert render(long_reason) == "The reason is 60,000 characters long; say it in at most 2,000."
    assert render(day) == "Digests are only for finished days: Tue 10 Nov 2026 is not over yet (today is 2026-11-10)."
    with speaking(Language.ZH_CN):
        assert render(decided) == "GQ-7 已被 <@U0LEE>、自动批准 拒绝。"
        assert render(long_reason) == "理由有 60,000 个字符；请控制在 2,000 个字符以内。"
        assert render(day).startswith("摘要只针对已经结束的日子：2026年11月10日周二 还没有结束")


def test_what_a_person_typed_is_escaped_once_in_a_refusal() -> None:
    assert render(r.NotManaged("<!channel>&")) == "`&lt;!channel&gt;&amp;` is not managed by gpu-quota-bot."
    with speaking(Language.ZH_CN):
        assert render(r.NotManaged("<!channel>&")) == "`&lt;!channel&gt;&amp;` 不由 gpu-quota-bot 管理。"


def test_str_of_a_refusal_is_the_edge_wording_in_plain_text() -> None:
    error = r.Refused(r.AlreadyDecided(7, RequestState.DENIED, ("U0LEE", "gpu-quota-bot")))
    assert str(error) == "GQ-7 was already denied by @U0LEE, auto-approval."
    assert render(error.refusal) == "GQ-7 was already denied by <@U0LEE>, auto-approval."
    assert notice(error.refusal).parts  # typed parts: the mention is a User, not text
    with speaking(Language.ZH_CN):
        assert str(error) == "GQ-7 已被 @U0LEE、自动批准 拒绝。"


def test_a_refusal_without_words_is_a_type_error() -> None:
    @dataclasses.dataclass(frozen=True)
    class Unworded(r.Refusal):
        pass

    with pytest.raises(TypeError, match="no words for Unworded"):
        render(Unworded())


def test_input_problems_of_an_incomplete_request_have_words() -> None:
    """The fixture's problems are input problems the edge words (``input_words``), not strings."""
    assert all(isinstance(p, InputProblem) for p in _value("problems", get_type_hints(r.Incomplete)["problems"]))
