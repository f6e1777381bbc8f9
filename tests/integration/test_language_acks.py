"""An acknowledgement with words does not wait long for Slack's users.info (Slack's 3-second ack deadline, #24)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.executor import TrackingExecutor
from tests.integration.test_acks import Bot


@pytest.fixture
def bot(tmp_path: Path) -> Iterator[Bot]:
    bot = Bot(tmp_path, TrackingExecutor())
    yield bot
    bot.box.slack.locales.clear()
    bot.close()


def test_a_help_ack_comes_back_within_slacks_deadline_while_users_info_is_slow(bot: Bot) -> None:
    hold = bot.box.slack.hold("users.info")  # Slack answers users.info late (a slow or overloaded Slack)
    try:
        started = time.monotonic()
        answer = bot.command("help", user="U0NEWCOMER")
        took = time.monotonic() - started
    finally:
        hold.release()
    assert answer.status_code == 200 and "gpu-quota-bot" in answer.text
    assert took < 3.0, f"the ack of help took {took:.1f} s waiting for users.info: Slack gives up after 3 s"
