"""Slack failing or racing the bot loses nothing: thread replies, DMs and card updates go through the outbox."""

from __future__ import annotations

from datetime import timedelta

from bot.clock import ManualClock
from tests.integration.conftest import SlackOverHttp

ALICE, LEE, BOB, MAYA = "U0ALICE", "U0LEE", "U0BOB", "U0MAYA"
REQUEST = "request ai-frontier-research +4 for 3d fine-tune on the new corpus"


def drain(slack: SlackOverHttp, clock: ManualClock, ticks: int = 12) -> None:
    """Let reconcile ticks run, a minute apart, as the scheduler would."""
    for _ in range(ticks):
        clock.advance(timedelta(minutes=1))
        slack.sandbox.services.reconciler.tick()


def test_rate_limits_and_server_errors_deliver_everything_once_in_order(slack: SlackOverHttp, clock: ManualClock) -> None:
    slack.command(ALICE, REQUEST)
    slack.command(BOB, "request biz-model-serving +2 for 1d serving burst")
    frontier, biz = slack.request_message("C0FRONTIER"), slack.request_message("C0BIZ")
    stand_in = slack.sandbox.slack
    for method in ("chat.postMessage", "chat.update"):
        stand_in.fail(method, "ratelimited", status=429, retry_after=1, times=3)
        stand_in.fail(method, "internal_error", status=500, times=4)
    slack.click(LEE, slack.buttons(frontier)["Approve"], frontier)
    slack.click(MAYA, slack.buttons(biz)["Approve"], biz)
    assert slack.sandbox.kube.hard("ai-frontier-research", "compute-quota") == "8"
    drain(slack, clock)

    frontier_thread, biz_thread = slack.thread(frontier), slack.thread(biz)
    assert frontier_thread[0] == ":+1: Approved by <@U0LEE> — 1 of 1." and len(frontier_thread) == 2
    assert frontier_thread[1].startswith(":white_check_mark: Applied:")
    assert biz_thread[0] == ":+1: Approved by <@U0MAYA> — 1 of 1." and len(biz_thread) == 2
    assert biz_thread[1].startswith(":white_check_mark: Applied:")
    assert len(slack.dms(ALICE)) == 1 and len(slack.dms(BOB)) == 1
    assert slack.buttons(frontier) == {} and slack.buttons(biz) == {}
    assert "Applied" in slack.current_text(frontier) and "Applied" in slack.current_text(biz)
    assert slack.sandbox.services.reconciler.tick().errors == []
    drain(slack, clock, ticks=3)  # nothing more to say: no repeats
    assert len(slack.thread(frontier)) == 2 and len(slack.dms(ALICE)) == 1


def test_a_click_before_the_message_ts_is_stored_keeps_its_replies(slack: SlackOverHttp, clock: ManualClock) -> None:
    stand_in = slack.sandbox.slack
    gate = stand_in.hold("chat.postMessage")  # Slack shows the message, but its answer to the bot is late
    body = slack.side.slash_command(user_id=ALICE, text=REQUEST)
    assert slack.http.post(f"{slack.base_url}/slack/events", data=body.encode(), headers=slack.side.sign(body)).ok
    assert gate.reached.wait(timeout=30)
    message = slack.request_message()
    click = slack.side.block_action(
        user_id=LEE,
        action_id=slack.buttons(message)["Approve"]["action_id"],
        value=str(1),
        channel_id=message.channel,
        message_ts=message.ts,
    )
    assert slack.http.post(f"{slack.base_url}/slack/events", data=click.encode(), headers=slack.side.sign(click)).ok
    assert stand_in.wait_for(lambda: any(r.channel == "D" + ALICE for r in stand_in.records), timeout=30)
    gate.release()
    assert slack.sandbox.executor.wait_idle(timeout=30)
    drain(slack, clock, ticks=2)

    thread = slack.thread(message)
    assert thread[0] == ":+1: Approved by <@U0LEE> — 1 of 1."
    assert thread[1].startswith(":white_check_mark: Applied:") and len(thread) == 2
    assert slack.buttons(message) == {}
    assert len(slack.channel_messages("C0FRONTIER")) == 1


def test_the_reconcile_tick_forgets_sent_entries_after_a_week_and_keeps_waiting_ones(
    slack: SlackOverHttp, clock: ManualClock
) -> None:
    outbox = slack.sandbox.database.outbox()
    slack.command(ALICE, REQUEST)
    message = slack.request_message("C0FRONTIER")
    slack.click(LEE, slack.buttons(message)["Approve"], message)
    # One card update (the approval's, still waiting when the apply's was recorded, renders the applied
    # card), two replies, the DM.
    assert outbox.health().counts == {"sent": 4}
    for method in ("chat.postMessage", "chat.update"):
        slack.sandbox.slack.fail(method, "internal_error", status=500, times=10_000)  # Slack down from now on

    clock.advance(timedelta(days=7, minutes=1))
    slack.sandbox.services.reconciler.tick()  # the grant ends: what it says cannot be delivered
    health = outbox.health()
    assert "sent" not in health.counts and health.counts["pending"] >= 1
    assert health.oldest_pending_at is not None


def test_a_reply_slack_rate_limited_goes_out_once_its_retry_after_is_over(slack: SlackOverHttp, clock: ManualClock) -> None:
    """Slack asks for 2 s: the reply waits exactly that (no backoff of the bot's own on top)."""
    slack.command(ALICE, REQUEST)
    message = slack.request_message("C0FRONTIER")
    slack.sandbox.slack.fail("chat.postMessage", "ratelimited", status=429, retry_after=2, channel="C0FRONTIER")
    slack.click(LEE, slack.buttons(message)["Approve"], message)
    assert slack.thread(message) == []

    clock.advance(timedelta(seconds=1))
    slack.sandbox.services.reconciler.tick()
    assert slack.thread(message) == []
    clock.advance(timedelta(seconds=1))
    slack.sandbox.services.reconciler.tick()
    thread = slack.thread(message)
    assert len(thread) == 2, thread
    assert thread[0] == ":+1: Approved by <@U0LEE> — 1 of 1." and thread[1].startswith(":white_check_mark: Applied:")
