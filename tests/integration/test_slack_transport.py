"""The bot's Slack clients on kept-alive connections, against the Slack stand-in over HTTP: many calls
share one connection, and rate limits and broken connections are handled as slack_sdk handles them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.adapters.slack.notifier import SlackDirectory, SlackNotifier, make_web_client
from bot.errors import TemporaryError
from bot.sandbox.session import BOT_TOKEN
from bot.sandbox.slack_api import SlackApiStandIn
from bot.sandbox.world import sandbox_slack
from bot.services.text import say
from tests.integration.conftest import SlackOverHttp

ALICE = "U0ALICE"
CHANNEL = "C0PLATFORM"
REQUEST = "request ai-frontier-research +1 for 1d one more epoch"


@pytest.fixture
def stand_in() -> Iterator[SlackApiStandIn]:
    slack = sandbox_slack(BOT_TOKEN).start()
    yield slack
    slack.stop()


def notifier(stand_in: SlackApiStandIn) -> SlackNotifier:
    return SlackNotifier(make_web_client(BOT_TOKEN, base_url=stand_in.api_url))


def posted(stand_in: SlackApiStandIn) -> list[str]:
    return [r.text for r in stand_in.records if r.kind == "message"]


def test_calls_share_one_kept_alive_connection(stand_in: SlackApiStandIn) -> None:
    slack = notifier(stand_in)
    ref = slack.post(CHANNEL, say("first"))
    for number in range(5):
        slack.reply(ref, say(f"reply {number}"))
    slack.tell_user(ALICE, say("hello"))  # conversations.open on the request client, the message on the outbox's
    assert len(stand_in.thread(CHANNEL, ref.ts)) == 5 and posted(stand_in)[-1] == "hello"
    assert stand_in.connections == 1


def test_a_rate_limit_is_waited_out_where_the_client_retries_them(stand_in: SlackApiStandIn) -> None:
    directory = SlackDirectory(make_web_client(BOT_TOKEN, base_url=stand_in.api_url))
    stand_in.fail("usergroups.users.list", "ratelimited", status=429, retry_after=1)
    assert directory.usergroup_members("S0PLATFORM", fresh=True) == {"U0PAT", "U0DANA"}
    assert len(stand_in.calls_of("usergroups.users.list")) == 2


def test_a_rate_limit_reaches_the_outbox_with_its_retry_after(stand_in: SlackApiStandIn) -> None:
    stand_in.fail("chat.postMessage", "ratelimited", status=429, retry_after=30)
    with pytest.raises(TemporaryError) as raised:
        notifier(stand_in).post(CHANNEL, say("later"))
    assert raised.value.delay == 30 and "ratelimited" in str(raised.value)
    assert len(stand_in.calls_of("chat.postMessage")) == 1 and posted(stand_in) == []


def test_a_dropped_connection_is_retried_on_a_new_one(stand_in: SlackApiStandIn) -> None:
    slack = notifier(stand_in)
    slack.post(CHANNEL, say("before"))
    stand_in.drop_next("chat.postMessage")
    slack.post(CHANNEL, say("after the drop"))
    assert posted(stand_in) == ["before", "after the drop"]
    assert len(stand_in.calls_of("chat.postMessage")) == 3 and stand_in.connections == 2


def test_slack_out_of_reach_is_a_temporary_error(stand_in: SlackApiStandIn) -> None:
    slack = notifier(stand_in)
    slack.post(CHANNEL, say("before"))
    stand_in.refuse_connections()
    with pytest.raises(TemporaryError, match="did not answer"):
        slack.post(CHANNEL, say("into the void"))
    stand_in.accept_connections()
    slack.post(CHANNEL, say("back"))
    assert posted(stand_in) == ["before", "back"]


def test_listeners_answer_and_post_on_kept_alive_connections(slack: SlackOverHttp) -> None:
    """Bolt's ``client`` and ``respond`` share the bot's connections: the request card, the answer on
    ``response_url`` and the outbox do not open a connection per call."""
    stand_in = slack.sandbox.slack
    slack.command(ALICE, REQUEST)
    opened, calls = stand_in.connections, len(stand_in.calls)
    for _ in range(5):
        slack.command(ALICE, REQUEST)
    answers = slack.responses()
    assert len(answers) == 6 and all("submitted" in answer for answer in answers)
    assert len(stand_in.calls) - calls >= 5 and len(answers) - 1 == 5  # at least a post and an answer each
    assert stand_in.connections - opened < 5
