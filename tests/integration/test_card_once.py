"""Exactly one card per request (and one copy per shift), whose thread gets every reply (issue 18,
point 2): signed Slack HTTP into the real Bolt app, the Slack stand-in answering one 429, the real
kubernetes client against the API stand-in, SQLite and PostgreSQL.

A 429 on the card's ``chat.postMessage`` once left two cards: the SDK slept through the Retry-After,
a reconcile tick re-posted the card meanwhile (the request had no ``ts`` yet), then the SDK's retry
posted it again and its ``ts`` replaced the first one's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest

from bot.adapters.slack.http import WebApp
from bot.clock import ManualClock
from bot.sandbox.session import Sandbox
from bot.sandbox.slack_api import Recorded, SlackApiStandIn
from tests.integration.conftest import SlackOverHttp, serve

ALICE, BOB, LEE, MAYA = "U0ALICE", "U0BOB", "U0LEE", "U0MAYA"
REQUEST = "request ai-frontier-research +4 for 3d fine-tune on the new corpus"
SHIFT = "shift 3 from ai-frontier-research to biz-model-serving for 30d validated models need serving"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def slack(request: pytest.FixtureRequest, clock: ManualClock) -> Iterator[SlackOverHttp]:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    box = Sandbox(clock=clock, kube_timeout=(2.0, 2.0), database_url=url).start()
    assert box.app is not None
    base, server = serve(WebApp(box.app))
    try:
        yield SlackOverHttp(box, base)
    finally:
        server.close()
        box.stop()


def ticks(slack: SlackOverHttp, clock: ManualClock, count: int) -> None:
    """Reconcile ticks a minute apart, as the scheduler runs them."""
    for _ in range(count):
        clock.advance(timedelta(minutes=1))
        assert slack.sandbox.services is not None
        slack.sandbox.services.reconciler.tick()


def submit_without_waiting(slack: SlackOverHttp, user: str, text: str) -> None:
    """A signed slash command; its work after the ack goes on while the test carries on."""
    body = slack.side.slash_command(user_id=user, text=text)
    assert slack.http.post(f"{slack.base_url}/slack/events", data=body.encode(), headers=slack.side.sign(body)).ok


def post_tried_in(stand_in: SlackApiStandIn, channel: str) -> bool:
    """Whether a chat.postMessage into ``channel`` reached Slack (call it inside ``wait_for``: it holds the lock)."""
    return any(name == "chat.postMessage" and params.get("channel") == channel for name, params in stand_in.calls)


def finish(slack: SlackOverHttp, clock: ManualClock) -> None:
    """The submission's work is over (whatever the SDK waited), and the reconcile ticks after it ran."""
    assert slack.sandbox.executor.wait_idle(timeout=60)
    ticks(slack, clock, 2)


def only_card(slack: SlackOverHttp, channel: str) -> Recorded:
    cards = slack.channel_messages(channel)
    assert len(cards) == 1, f"{len(cards)} cards in {channel}"
    return cards[0]


def test_one_429_on_the_card_post_leaves_one_card_whose_thread_gets_the_replies(slack: SlackOverHttp, clock: ManualClock) -> None:
    stand_in = slack.sandbox.slack
    stand_in.fail("chat.postMessage", "ratelimited", status=429, retry_after=7, channel="C0FRONTIER")
    submit_without_waiting(slack, ALICE, REQUEST)
    assert stand_in.wait_for(lambda: post_tried_in(stand_in, "C0FRONTIER"), timeout=30)
    ticks(slack, clock, 3)  # while Slack's Retry-After runs
    finish(slack, clock)

    card = only_card(slack, "C0FRONTIER")
    slack.click(LEE, slack.buttons(card)["Approve"], card)
    thread = slack.thread(card)
    assert thread[0] == ":+1: Approved by <@U0LEE> — 1 of 1." and len(thread) == 2
    assert thread[1].startswith(":white_check_mark: Applied:")
    assert slack.buttons(card) == {} and "Applied" in slack.current_text(card)
    assert only_card(slack, "C0FRONTIER") == card


def test_one_429_on_a_shift_copy_leaves_one_copy_that_follows_the_request(slack: SlackOverHttp, clock: ManualClock) -> None:
    """The manual clock runs the ticks minutes apart while the Retry-After runs: a Retry-After longer than
    a minute, which the old "settled after a minute" rule took for a copy nobody was posting."""
    stand_in = slack.sandbox.slack
    stand_in.fail("chat.postMessage", "ratelimited", status=429, retry_after=3, channel="C0FRONTIER")
    submit_without_waiting(slack, BOB, SHIFT)
    assert stand_in.wait_for(lambda: post_tried_in(stand_in, "C0FRONTIER"), timeout=30)
    ticks(slack, clock, 3)
    finish(slack, clock)

    card, copy = only_card(slack, "C0BIZ"), only_card(slack, "C0FRONTIER")
    slack.click(MAYA, slack.buttons(card)["Approve"], card)
    slack.click(LEE, slack.buttons(copy)["Approve"], copy)
    assert slack.buttons(copy) == {} and "Applied" in slack.current_text(copy)
    assert slack.buttons(card) == {} and "Applied" in slack.current_text(card)
    assert only_card(slack, "C0FRONTIER") == copy


def refused_card(slack: SlackOverHttp, clock: ManualClock) -> None:
    """A request whose card Slack refused once (a 500): the reconcile ticks are to post it."""
    slack.sandbox.slack.fail("chat.postMessage", "internal_error", status=500, channel="C0FRONTIER")
    slack.command(ALICE, REQUEST)
    assert slack.channel_messages("C0FRONTIER") == []
    clock.advance(timedelta(minutes=1))


def tick_in_thread(slack: SlackOverHttp) -> threading.Thread:
    assert slack.sandbox.services is not None
    thread = threading.Thread(target=slack.sandbox.services.reconciler.tick)
    thread.start()
    return thread


@pytest.mark.parametrize("slack", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)
def test_two_posters_of_one_card_post_it_once(slack: SlackOverHttp, clock: ManualClock) -> None:
    """Two reconcile ticks at once (two leaders for a moment, on one PostgreSQL): while the first one's
    post is in flight, the second one finds the card claimed."""
    refused_card(slack, clock)
    gate = slack.sandbox.slack.hold("chat.postMessage")  # Slack shows the card, its answer is late
    first = tick_in_thread(slack)
    assert gate.reached.wait(timeout=30)
    assert slack.sandbox.services is not None
    slack.sandbox.services.reconciler.tick()
    gate.release()
    first.join(timeout=60)

    card = only_card(slack, "C0FRONTIER")
    slack.click(LEE, slack.buttons(card)["Approve"], card)
    assert slack.thread(card)[0] == ":+1: Approved by <@U0LEE> — 1 of 1."
    assert slack.buttons(card) == {}


@pytest.mark.parametrize("slack", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)
def test_a_poster_whose_claim_lapsed_deletes_the_card_it_posted_too_late(slack: SlackOverHttp, clock: ManualClock) -> None:
    """Slack answered the first post after its claim lapsed and another poster's card was stored: the
    late one is deleted, the stored one keeps the thread."""
    refused_card(slack, clock)
    gate = slack.sandbox.slack.hold("chat.postMessage")
    first = tick_in_thread(slack)
    assert gate.reached.wait(timeout=30)
    clock.advance(timedelta(minutes=5))  # longer than any claim
    assert slack.sandbox.services is not None
    slack.sandbox.services.reconciler.tick()
    stored = slack.channel_messages("C0FRONTIER")[-1]  # the late card is not answered yet: this is the tick's
    gate.release()
    first.join(timeout=60)

    card = only_card(slack, "C0FRONTIER")
    assert card == stored
    slack.click(LEE, slack.buttons(card)["Approve"], card)
    assert slack.thread(card)[0] == ":+1: Approved by <@U0LEE> — 1 of 1."
    assert slack.buttons(card) == {}


def test_an_auto_approved_request_whose_card_got_a_429_is_said_applied(slack: SlackOverHttp, clock: ManualClock) -> None:
    """The quota changed at once; only the card waits for Slack's Retry-After. The requester hears what
    happened to the quota (as when the SDK slept through the 429), and the card says it once posted."""
    stand_in = slack.sandbox.slack
    stand_in.fail("chat.postMessage", "ratelimited", status=429, retry_after=2, channel="C0FRONTIER")
    slack.command(ALICE, "request ai-frontier-research +1 for 2h one more for the eval")

    answer = slack.responses()[-1]
    assert answer.startswith(":white_check_mark: GQ-1 was auto-approved and applied"), answer
    assert slack.sandbox.kube is not None and slack.sandbox.kube.hard("ai-frontier-research", "compute-quota") == "5"
    clock.advance(timedelta(seconds=3))
    slack.sandbox.services.reconciler.tick()  # type: ignore[union-attr]
    assert "Applied" in slack.current_text(only_card(slack, "C0FRONTIER"))


def test_a_429_on_a_reposted_card_ends_the_ticks_reposts(slack: SlackOverHttp, clock: ManualClock) -> None:
    """Slack rate-limits posts per channel: after its 429 the tick posts no more cards (each would get a 429
    and its next try pushed back); the next tick after the Retry-After posts them all, once each."""
    stand_in = slack.sandbox.slack
    stand_in.fail("chat.postMessage", "internal_error", status=500, times=3, channel="C0FRONTIER")
    for n in range(3):
        slack.command(ALICE, f"request ai-frontier-research +{n + 2} for 3d run {n}")
    assert slack.channel_messages("C0FRONTIER") == []
    clock.advance(timedelta(minutes=1))
    tried = len(stand_in.calls_of("chat.postMessage"))
    stand_in.fail("chat.postMessage", "ratelimited", status=429, retry_after=2, channel="C0FRONTIER")
    slack.sandbox.services.reconciler.tick()  # type: ignore[union-attr]
    assert len(stand_in.calls_of("chat.postMessage")) == tried + 1  # the 429, then nothing more this tick
    clock.advance(timedelta(seconds=3))
    slack.sandbox.services.reconciler.tick()  # type: ignore[union-attr]
    assert len(slack.channel_messages("C0FRONTIER")) == 3


def test_a_lapsed_posters_release_leaves_the_new_holders_claim(slack: SlackOverHttp, clock: ManualClock) -> None:
    """Poster A stalls past its lease, B takes the lapsed claim; A's post then fails and A ends its claim:
    B's claim must stay (else a third poster posts while B's post is in flight, and two cards reach Slack)."""
    refused_card(slack, clock)  # GQ-1, unposted, its claim free
    database = slack.sandbox.database
    assert database is not None
    first = clock.now()
    assert database.run(lambda repo: repo.claim_post(1, copy=False, now=first, until=first + timedelta(minutes=2)))
    later = first + timedelta(minutes=3)  # A's claim lapsed
    assert database.run(lambda repo: repo.claim_post(1, copy=False, now=later, until=later + timedelta(minutes=2)))
    database.run(
        lambda repo: repo.release_post(1, copy=False, held=first + timedelta(minutes=2), not_before=later)  # A gives up
    )
    assert not database.run(lambda repo: repo.claim_post(1, copy=False, now=later, until=later + timedelta(minutes=2)))
