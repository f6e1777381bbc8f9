"""Bursts (#23), through signed Slack HTTP into the real Bolt app: a command that waited past its response
URL's life is answered "expired" there and not done, counted in /metrics; a decision re-publishes the
decider's and the requester's App Home at once (not 30 s later with the ``home_tabs`` job)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from bot.adapters.slack import ids
from bot.executor import EXPIRED, MAX_WAIT_SECONDS, TrackingExecutor
from bot.services.ports import ActionKind
from tests.integration.test_acks import ALICE, LEE, Bot


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def refused(interaction: str, reason: str) -> float:
    return REGISTRY.get_sample_value("gpu_quota_refused_total", {"interaction": interaction, "reason": reason}) or 0.0


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def slow_bot(tmp_path: Path, clock: Clock) -> Iterator[Bot]:
    """One worker, room for two waiting, and a clock the test moves."""
    bot = Bot(tmp_path, TrackingExecutor(1, max_waiting=2, clock=clock))
    yield bot
    bot.close()


@pytest.fixture
def bot(tmp_path: Path) -> Iterator[Bot]:
    bot = Bot(tmp_path, TrackingExecutor())
    yield bot
    bot.close()


def test_a_command_that_waited_past_the_response_urls_life_is_answered_expired_and_not_done(slow_bot: Bot, clock: Clock) -> None:
    before = refused("command", "expired")
    slow_bot.kube.gate.clear()
    assert slow_bot.command("status ai-frontier-research").text == ""  # holds the only worker at the cluster
    assert slow_bot.kube.waiting.acquire(timeout=30)
    assert slow_bot.command("request ai-frontier-research +1 for 1d waited too long").text == ""  # accepted: queued
    clock.now += MAX_WAIT_SECONDS + 1
    slow_bot.kube.gate.set()
    assert slow_bot.box.executor.wait_idle(timeout=60)

    responses = slow_bot.responses()
    assert len(responses) == 2 and "ai-frontier-research" in responses[0]  # the status was answered
    assert responses[1] == EXPIRED  # in the request's response_url, ephemeral
    assert not [r for r in slow_bot.box.slack.records if r.kind == "message"]  # and nothing was submitted
    assert refused("command", "expired") == before + 1


def test_a_command_queued_for_less_than_that_is_done(slow_bot: Bot, clock: Clock) -> None:
    slow_bot.kube.gate.clear()
    assert slow_bot.command("status ai-frontier-research").text == ""
    assert slow_bot.kube.waiting.acquire(timeout=30)
    assert slow_bot.command("request ai-frontier-research +1 for 1d waited a while").text == ""
    clock.now += MAX_WAIT_SECONDS - 1
    slow_bot.kube.gate.set()
    assert slow_bot.box.executor.wait_idle(timeout=60)
    assert slow_bot.responses()[-1].startswith(":inbox_tray: GQ-1 submitted")


def test_an_approve_click_republishes_the_approvers_and_the_requesters_home_tab(bot: Bot) -> None:
    bot.box.send(bot.side.slash_command(user_id=ALICE, text="request ai-frontier-research +1 for 1d a job"))
    assert bot.box.services is not None
    for user in (ALICE, LEE):
        bot.box.services.home.publish(user)  # each opened their tab once
    homes = bot.box.slack.homes
    assert "GQ-1 pending" in json.dumps(homes[ALICE])
    assert _approve_buttons(homes[LEE]) == ["1"]

    (channel, ts), message = next(iter(bot.box.slack.messages.items()))
    approve = next(
        e
        for b in message.blocks
        if b.get("type") == "actions"
        for e in b["elements"]
        if e.get("action_id") == ids.ACTION_IDS[ActionKind.APPROVE]
    )
    bot.box.send(bot.side.block_action(user_id=LEE, action_id=approve["action_id"], value="1", channel_id=channel, message_ts=ts))
    assert bot.responses()[-1] == "You approved GQ-1; it is applied."
    # No home_tabs job ran: the click's own work published both tabs.
    assert _approve_buttons(homes[LEE]) == []
    assert "GQ-1 pending" not in json.dumps(homes[ALICE]) and "Nothing pending" in json.dumps(homes[ALICE])


def _approve_buttons(view: dict[str, object]) -> list[str]:
    blocks = view.get("blocks") or []
    assert isinstance(blocks, list)
    return [
        e["value"]
        for b in blocks
        if b.get("type") == "actions"
        for e in b["elements"]
        if e.get("action_id") == ids.ACTION_IDS[ActionKind.APPROVE]
    ]
