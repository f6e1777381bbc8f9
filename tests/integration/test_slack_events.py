"""Events API over signed HTTP: decisions typed in a request's thread, the App Home tab, retries, 200s."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from slack_sdk.models.views import View

from bot.adapters.slack import ids
from bot.clock import ManualClock
from bot.domain.quota import QuotaScope
from bot.sandbox.session import Sandbox
from tests.integration.conftest import SlackOverHttp, buttons_of

ALICE, LEE, BOB, PAT, DANA = "U0ALICE", "U0LEE", "U0BOB", "U0PAT", "U0DANA"
REQUEST = "request ai-frontier-research +4 for 3d fine-tune on the new corpus"


def quota(slack: SlackOverHttp) -> str | None:
    assert slack.sandbox.kube is not None
    return slack.sandbox.kube.hard("ai-frontier-research", "compute-quota")


def reply(slack: SlackOverHttp, user: str, text: str, *, event_id: str | None = None, retry: int | None = None) -> Any:
    """A person's reply in the thread of the newest request message, delivered as Slack delivers it."""
    message = slack.request_message()
    event = slack.side.thread_reply(user_id=user, channel_id=message.channel or "", thread_ts=message.ts or "", text=text)
    body = slack.side.event(event, event_id=event_id)
    headers = slack.side.sign(body)
    if retry is not None:
        headers |= {"x-slack-retry-num": str(retry), "x-slack-retry-reason": "http_timeout"}
    return slack.post(body, headers=headers)


def test_an_approver_approves_by_typing_in_the_thread(slack: SlackOverHttp) -> None:
    slack.command(ALICE, REQUEST)
    response = reply(slack, LEE, "approve")
    assert response.status_code == 200
    assert quota(slack) == "8"
    thread = slack.thread(slack.request_message())
    assert thread[0] == ":+1: Approved by <@U0LEE> — 1 of 1." and thread[1].startswith(":white_check_mark: Applied")
    assert slack.buttons(slack.request_message()) == {}


def test_deny_with_a_reason_typed_in_the_thread(slack: SlackOverHttp) -> None:
    slack.command(ALICE, REQUEST)
    reply(slack, LEE, "deny the corpus is not cleaned yet")
    assert quota(slack) == "4"
    assert ":no_entry: Denied by <@U0LEE>. Reason: the corpus is not cleaned yet" in slack.thread(slack.request_message())
    assert "Reason: the corpus is not cleaned yet" in slack.dms(ALICE)[0]


def test_the_rules_of_a_click_apply_to_a_typed_decision(slack: SlackOverHttp) -> None:
    slack.command(ALICE, REQUEST)
    reply(slack, BOB, "approve")
    reply(slack, ALICE, "approve")
    thread = slack.thread(slack.request_message())
    assert any(t.startswith("<@U0BOB> :no_entry_sign: You are not an approver for Frontier research") for t in thread)
    assert any(t.startswith("<@U0ALICE> :no_entry_sign: You cannot approve your own request") for t in thread)
    assert quota(slack) == "4"


def test_a_typed_deny_without_a_reason_from_someone_who_may_not_deny_is_refused_not_asked_why(slack: SlackOverHttp) -> None:
    slack.command(ALICE, REQUEST)
    reply(slack, BOB, "deny")
    reply(slack, LEE, "deny")
    thread = slack.thread(slack.request_message())
    assert thread == [
        "<@U0BOB> :no_entry_sign: You are not an approver for Frontier research, so you cannot decide GQ-1.",
        "<@U0LEE> :no_entry_sign: Say why: type `deny &lt;reason&gt;`; the requester reads it. Nothing was decided.",
    ]


def test_ordinary_replies_and_the_bots_own_messages_are_left_alone(slack: SlackOverHttp) -> None:
    slack.command(ALICE, REQUEST)
    message = slack.request_message()
    before = len(slack.records("message"))
    for text in ("I approve of the idea, but which corpus?", "approve it after lunch please", "looks fine"):
        assert reply(slack, LEE, text).status_code == 200
    bot_event = slack.side.thread_reply(
        user_id="UBOT", channel_id=message.channel or "", thread_ts=message.ts or "", text="approve"
    )
    bot_event["bot_id"] = "BBOT"
    assert slack.post(slack.side.event(bot_event)).status_code == 200
    edited = dict(bot_event, subtype="message_changed", bot_id=None)
    assert slack.post(slack.side.event(edited)).status_code == 200
    top_level = slack.side.thread_reply(user_id=LEE, channel_id=message.channel or "", thread_ts=message.ts or "", text="approve")
    top_level["thread_ts"] = top_level["ts"]  # a message in the channel, not in the request's thread
    assert slack.post(slack.side.event(top_level)).status_code == 200
    assert len(slack.records("message")) == before
    assert quota(slack) == "4"


def test_a_re_sent_delivery_counts_once(slack: SlackOverHttp) -> None:
    slack.command(ALICE, "request ai-frontier-research +2 for 1d two more")
    reply(slack, BOB, "approve", event_id="Ev0SAME")  # refused: bob is no approver of the team
    assert reply(slack, BOB, "approve", event_id="Ev0SAME", retry=1).status_code == 200
    reply(slack, LEE, "deny not now", event_id="Ev0LEE")
    assert reply(slack, LEE, "deny not now", event_id="Ev0LEE", retry=2).status_code == 200
    thread = slack.thread(slack.request_message())
    assert len(thread) == 2 and thread[1] == ":no_entry: Denied by <@U0LEE>. Reason: not now"  # each once


def test_a_permanent_change_cannot_be_approved_by_typing(slack: SlackOverHttp) -> None:
    slack.command(PAT, "request ai-frontier-research 6 permanent hiring two researchers")
    reply(slack, LEE, "approve")
    (answer,) = slack.thread(slack.request_message())
    assert answer.startswith("<@U0LEE> :point_up: GQ-1 is a permanent or large change: approve it with its Approve button")
    assert slack.sandbox.services.queries.status_of(QuotaScope("ai-frontier-research")).pending[0].approvals == 0


def test_every_event_is_answered_200(slack: SlackOverHttp) -> None:
    event = {"type": "reaction_added", "user": LEE, "reaction": "eyes", "item": {"type": "message"}, "event_ts": "1.0"}
    assert slack.post(slack.side.event(event)).status_code == 200
    channel_message = {"type": "message", "user": LEE, "text": "hello", "ts": "1.0", "channel": "C0GENERAL"}
    assert slack.post(slack.side.event(channel_message)).status_code == 200


def test_app_home_shows_quotas_requests_and_decisions(slack: SlackOverHttp) -> None:
    slack.command(ALICE, REQUEST)
    slack.post(slack.side.event({"type": "app_home_opened", "user": LEE, "channel": "DLEE", "tab": "home", "event_ts": "1.0"}))
    home = slack.sandbox.slack.homes[LEE]
    View(**{k: v for k, v in home.items() if k != "id"}).validate_json()  # Slack's own limits, by slack_sdk.models
    text = json.dumps(home, ensure_ascii=False)
    assert "Waiting for your decision" in text and "GQ-1 pending: +4 GPUs in ai-frontier-research" in text
    assert "*ai-frontier-research* (Frontier research, quota `compute-quota`): *4* hard / 3 used" in text
    approve = buttons_of(home["blocks"])["Approve"]
    assert approve["value"] == "1"

    slack.post(slack.side.home_click(user_id=LEE, action_id=approve["action_id"], value=approve["value"]))
    assert quota(slack) == "8"
    home = slack.sandbox.slack.homes[LEE]
    assert "You approved GQ-1; it is applied." in json.dumps(home) and "Waiting for your decision" not in json.dumps(home)


def test_app_home_of_the_requester_is_refreshed_when_their_request_changes(slack: SlackOverHttp) -> None:
    slack.post(slack.side.event({"type": "app_home_opened", "user": ALICE, "channel": "DALICE", "tab": "home", "event_ts": "1"}))
    assert "Nothing pending" in json.dumps(slack.sandbox.slack.homes[ALICE])
    home = slack.sandbox.services.home
    assert home.refresh_changed() == []  # nothing of alice's changed since it was published
    slack.command(ALICE, REQUEST)
    assert home.refresh_changed() == [ALICE]
    assert "GQ-1 pending" in json.dumps(slack.sandbox.slack.homes[ALICE])
    message = slack.request_message()
    slack.click(LEE, slack.buttons(message)["Approve"], message)
    assert home.refresh_changed() == []  # the approval's own work re-published it (#23): nothing left for the job
    mine = json.dumps(slack.sandbox.slack.homes[ALICE])
    assert "GQ-1 pending" not in mine and "ends" in mine


def test_deny_button_asks_why_and_a_reason_is_required(slack: SlackOverHttp) -> None:
    slack.command(ALICE, REQUEST)
    message = slack.request_message()
    slack.click(LEE, slack.buttons(message)["Deny"], message)
    form = slack.records("view_open")[-1].view
    assert form["callback_id"] == ids.DENY_FORM
    answer = slack.submit(LEE, form, {"reason": ""}).json()
    assert answer["response_action"] == "errors" and set(answer["errors"]) == {ids.REASON_BLOCK}
    assert slack.thread(message) == []
    slack.submit(LEE, form, {"reason": "no budget left this month"})
    assert slack.thread(message) == [":no_entry: Denied by <@U0LEE>. Reason: no budget left this month"]


@pytest.mark.postgres
def test_a_delivery_sent_to_two_replicas_at_once_is_claimed_once(postgres_url: str, clock: ManualClock) -> None:
    """Two replicas on one PostgreSQL database receive the same event at the same moment."""
    boxes = [Sandbox(clock=clock, database_url=postgres_url).start() for _ in range(2)]
    try:
        for round_ in range(10):
            assert sorted(claim_at_once(boxes, f"Ev{round_}")) == [False, True]
    finally:
        for box in boxes:
            box.stop()


def claim_at_once(boxes: list[Sandbox], event_id: str) -> list[bool]:
    barrier = threading.Barrier(len(boxes))
    claimed: list[bool] = []

    def claim(box: Sandbox) -> None:
        barrier.wait()
        claimed.append(box.services.inbox.first_delivery(event_id))

    threads = [threading.Thread(target=claim, args=(box,)) for box in boxes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return claimed
