"""Who reads which language, over signed Slack HTTP into the real Bolt app (#24).

A team's channel reads the team's language (cards, thread replies); what goes to one person (their
ephemeral answers and direct messages) reads their Slack language (users.info with include_locale),
else the channel's. The same story is told for a Chinese team, and for a Chinese person in an English
team; each Chinese message is checked for English words left in it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from typing import Any

import yaml

from bot.adapters.slack.ids import ACTION_IDS
from bot.clock import ManualClock
from bot.domain.policy import Policy, parse_policy
from bot.sandbox.session import Sandbox
from bot.services.ports import ActionKind
from tests.integration.conftest import START, SlackOverHttp, served
from tests.language_checks import foreign_words

ALICE, LEE = "U0ALICE", "U0LEE"  # frontier's member and approver
NAMESPACE = "ai-frontier-research"
REASON = "在新语料上微调"  # what a Chinese team types
SHOWN_AS_IS = [NAMESPACE, "Frontier research", "compute-quota", REASON, "GQ-1"]
CJK = re.compile(r"[\u4e00-\u9fff]")


def policy(frontier_language: str | None = None) -> Policy:
    document = yaml.safe_load(resources.files("bot.sandbox").joinpath("policy.yaml").read_text(encoding="utf-8"))
    if frontier_language:
        document["teams"]["frontier"]["language"] = frontier_language
    return parse_policy(document, source="test policy")


@contextmanager
def workplace(frontier_language: str | None = None, **locales: str) -> Iterator[SlackOverHttp]:
    """The sandbox with frontier's channel in ``frontier_language`` and people's Slack locales set."""
    box = Sandbox(policy=policy(frontier_language), clock=ManualClock(START), kube_timeout=(2.0, 2.0)).start()
    box.slack.locales.update(locales)
    with served(box) as slack:
        yield slack


def chinese(text: str) -> bool:
    return bool(CJK.search(text)) and foreign_words(text, values=SHOWN_AS_IS) == []


def english(text: str) -> bool:
    return not CJK.search(text.replace(REASON, ""))


def texts(value: Any) -> Iterator[str]:
    """Every text a person reads in Block Kit: the text objects' words (not ids, values or types)."""
    if isinstance(value, dict):
        if value.get("type") in ("plain_text", "mrkdwn"):
            yield str(value["text"])
        for key, inner in value.items():
            if key not in ("action_id", "block_id", "value", "url"):
                yield from texts(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from texts(inner)


def request_and_approve(slack: SlackOverHttp) -> tuple[str, str, list[str]]:
    """Alice asks, Lee approves with the card's button: the card's final words, Alice's answer, the thread."""
    slack.command(ALICE, f"request {NAMESPACE} +4 for 3d {REASON}")
    answer = slack.responses()[-1]
    card = slack.request_message()
    approve = next(b for b in slack.buttons(card).values() if b["action_id"] == ACTION_IDS[ActionKind.APPROVE])
    slack.click(LEE, approve, card)
    current = slack.sandbox.slack.messages[(card.channel or "", card.ts or "")]
    return "\n".join(texts(current.blocks)), answer, slack.thread(card)


def test_a_chinese_team_reads_its_card_and_thread_in_chinese_and_an_english_person_their_answers_in_english() -> None:
    with workplace("zh-CN", U0ALICE="en-US", U0LEE="en-US") as slack:
        card, answer, thread = request_and_approve(slack)
        dms = slack.dms(ALICE)

    assert chinese(card), card
    assert thread and all(chinese(reply) for reply in thread), thread
    assert english(answer), answer  # Alice's Slack is in English
    assert dms and all(english(dm) for dm in dms), dms


def test_a_chinese_person_in_an_english_team_reads_what_goes_to_them_in_chinese() -> None:
    with workplace(None, U0ALICE="zh-CN") as slack:
        card, answer, thread = request_and_approve(slack)
        dms = slack.dms(ALICE)

    assert chinese(answer), answer
    assert dms and all(chinese(dm) for dm in dms), dms
    assert english(card), card  # the channel is the team's: English
    assert thread and all(english(reply) for reply in thread), thread


def test_a_persons_language_is_asked_of_slack_once_and_kept() -> None:
    with workplace(None, U0ALICE="zh-CN") as slack:
        slack.command(ALICE, "list")
        slack.command(ALICE, f"status {NAMESPACE}")
        asked = slack.sandbox.slack.calls_of("users.info")

    assert [call.get("user") for call in asked] == [ALICE]
    assert str(asked[0].get("include_locale")).lower() in ("true", "1")  # slack_sdk sends a true flag as 1


def test_the_help_in_the_acknowledgement_is_in_the_persons_language() -> None:
    with workplace(None, U0ALICE="zh-CN") as slack:
        acked = slack.command(ALICE, "help").text  # Bolt answers an ack with text as plain text

    assert chinese(acked), acked


def test_a_person_whose_language_slack_does_not_give_reads_the_channel_language() -> None:
    with workplace("zh-CN") as slack:
        slack.sandbox.slack.fail("users.info", "ratelimited", status=429, retry_after=30)
        slack.command(ALICE, "list", channel="C0FRONTIER")
        answer = slack.responses()[-1]

    assert chinese(answer), answer
