"""Decisions typed in Chinese in a request's thread, over signed Slack HTTP into the real Bolt app:
``批准`` approves as ``approve`` does, ``拒绝 <理由>`` denies with that reason (with or without a space:
Chinese is written without spaces), and the rules of a click still apply."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.conftest import SlackOverHttp

ALICE, LEE, BOB = "U0ALICE", "U0LEE", "U0BOB"
REQUEST = "request ai-frontier-research +4 for 3d fine-tune on the new corpus"


def quota(slack: SlackOverHttp) -> str | None:
    assert slack.sandbox.kube is not None
    return slack.sandbox.kube.hard("ai-frontier-research", "compute-quota")


def reply(slack: SlackOverHttp, user: str, text: str) -> Any:
    """A person's reply in the thread of the newest request message, signed and delivered as Slack delivers it."""
    message = slack.request_message()
    event = slack.side.thread_reply(user_id=user, channel_id=message.channel or "", thread_ts=message.ts or "", text=text)
    body = slack.side.event(event)
    return slack.post(body, headers=slack.side.sign(body))


@pytest.mark.parametrize("typed", ["批准", "批准。", "批准！", "<@UBOT> 批准"])
def test_pi_zhun_typed_in_the_thread_approves(slack: SlackOverHttp, typed: str) -> None:
    slack.command(ALICE, REQUEST)
    assert reply(slack, LEE, typed).status_code == 200
    assert quota(slack) == "8"
    thread = slack.thread(slack.request_message())
    assert thread[0] == ":+1: Approved by <@U0LEE> — 1 of 1." and thread[1].startswith(":white_check_mark: Applied")
    assert slack.buttons(slack.request_message()) == {}


@pytest.mark.parametrize(
    ("typed", "reason"), [("拒绝 预算不足", "预算不足"), ("拒绝：预算不足", "预算不足"), ("拒绝预算不够", "预算不够")]
)
def test_ju_jue_typed_in_the_thread_denies_with_the_reason(slack: SlackOverHttp, typed: str, reason: str) -> None:
    slack.command(ALICE, REQUEST)
    assert reply(slack, LEE, typed).status_code == 200
    assert quota(slack) == "4"
    assert f":no_entry: Denied by <@U0LEE>. Reason: {reason}" in slack.thread(slack.request_message())
    assert f"Reason: {reason}" in slack.dms(ALICE)[0]
    stored = slack.sandbox.database
    assert stored is not None and stored.run(lambda repo: repo.request(1)).state == "denied"  # type: ignore[union-attr]


def test_a_chinese_decision_follows_the_rules_of_a_click(slack: SlackOverHttp) -> None:
    slack.command(ALICE, REQUEST)
    reply(slack, BOB, "批准")  # bob is no approver of the team
    reply(slack, ALICE, "批准")  # nor may alice approve her own request
    reply(slack, LEE, "拒绝")  # a denial needs a reason: asked, nothing decided
    thread = slack.thread(slack.request_message())
    assert thread[0].startswith("<@U0BOB> :no_entry_sign: You are not an approver for Frontier research")
    assert thread[1].startswith("<@U0ALICE> :no_entry_sign: You cannot approve your own request GQ-1")
    assert thread[2].startswith("<@U0LEE> :no_entry_sign: Say why")
    assert quota(slack) == "4"


def test_chinese_chat_in_the_thread_is_left_alone(slack: SlackOverHttp) -> None:
    slack.command(ALICE, REQUEST)
    before = len(slack.records("message"))
    for text in ("批准吗？", "我觉得可以批准", "拒绝的话怎么办", "看起来不错"):
        assert reply(slack, LEE, text).status_code == 200
    assert len(slack.records("message")) == before and quota(slack) == "4"
