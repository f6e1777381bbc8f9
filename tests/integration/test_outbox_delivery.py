"""The outbox against the Slack stand-in over HTTP: replicas racing, permanent refusals, order."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from bot.adapters.db.database import Database
from bot.adapters.db.migrate import upgrade
from bot.adapters.db.outbox import OutboxStore
from bot.adapters.slack.languages import Languages
from bot.adapters.slack.notifier import SlackNotifier, make_web_client
from bot.clock import ManualClock
from bot.domain.languages import Language
from bot.sandbox.session import BOT_TOKEN
from bot.sandbox.slack_api import SlackApiStandIn
from bot.sandbox.world import sandbox_policy, sandbox_slack
from bot.services.announce import DEAD_KEPT, PERMANENT_TRIES, SENT_KEPT, Announcer
from bot.services.messages import DeniedToRequester
from bot.services.text import User, say
from tests.integration.conftest import START

STREAMS = {"dm:U0ALICE": "DU0ALICE", "dm:U0BOB": "DU0BOB", "channel:C0PLATFORM": "C0PLATFORM", "channel:C0BIZ": "C0BIZ"}


@pytest.fixture
def stand_in() -> Iterator[SlackApiStandIn]:
    slack = sandbox_slack(BOT_TOKEN).start()
    yield slack
    slack.stop()


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/outbox.db"
    return str(request.getfixturevalue("postgres_url"))


def replica(url: str, stand_in: SlackApiStandIn, clock: ManualClock) -> Announcer:
    """One bot replica's announcer: its own engine, its own Slack client."""
    notifier = SlackNotifier(make_web_client(BOT_TOKEN, base_url=stand_in.api_url), Languages.only(Language.EN))
    return Announcer(notifier=notifier, policy=sandbox_policy(), database=Database.from_url(url), clock=clock)


def record(url: str, clock: ManualClock, per_stream: int) -> None:
    """Entries as a replica records them when Slack is down (nothing delivered yet)."""
    database = Database.from_url(url)
    for number in range(per_stream):
        for stream in STREAMS:
            kind, target = stream.split(":")
            database.run(
                lambda repo, stream=stream, kind=kind, target=target, number=number: repo.add_outbox_entry(
                    stream=stream,
                    kind="direct" if kind == "dm" else "post",
                    target=target,
                    notice=say(f"{stream} #{number}").to_json(),
                    now=clock.now(),
                )
            )
    database.dispose()


def delivered(stand_in: SlackApiStandIn, channel: str) -> list[str]:
    return [r.text for r in stand_in.records if r.kind == "message" and r.channel == channel]


def test_two_replicas_draining_one_outbox_post_each_entry_once_in_order(database_url: str, stand_in: SlackApiStandIn) -> None:
    upgrade(database_url)
    clock = ManualClock(START)
    per_stream = 25
    record(database_url, clock, per_stream)
    replicas = [replica(database_url, stand_in, clock) for _ in range(2)]
    start = threading.Barrier(len(replicas))
    counts: list[int] = []

    def drain(announcer: Announcer) -> None:
        start.wait()
        total = 0
        for _ in range(50):  # each pass delivers what it can; the other replica takes the rest
            total += announcer.deliver_pending()
        counts.append(total)

    threads = [threading.Thread(target=drain, args=(a,)) for a in replicas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    print(f"\ndelivered per replica: {counts}")
    assert sum(counts) == per_stream * len(STREAMS)
    for stream, channel in STREAMS.items():
        assert delivered(stand_in, channel) == [f"{stream} #{n}" for n in range(per_stream)]
    assert OutboxStore(Database.from_url(database_url)).counts() == {"sent": per_stream * len(STREAMS)}


def test_a_permanent_refusal_is_tried_a_bounded_number_of_times_then_the_stream_moves_on(
    tmp_path: Path, stand_in: SlackApiStandIn
) -> None:
    url = f"sqlite:///{tmp_path}/outbox.db"
    upgrade(url)
    clock = ManualClock(START)
    announcer = replica(url, stand_in, clock)
    stand_in.fail("chat.postMessage", "not_in_channel", times=PERMANENT_TRIES)
    assert announcer.post("C0PLATFORM", say("first")) and announcer.post("C0PLATFORM", say("second"))
    assert delivered(stand_in, "C0PLATFORM") == []  # the first is refused, the second waits behind it
    for _ in range(10):
        clock.advance(timedelta(minutes=10))
        announcer.deliver_pending()
    assert delivered(stand_in, "C0PLATFORM") == ["second"]
    assert len(stand_in.calls_of("chat.postMessage")) == PERMANENT_TRIES + 1  # never retried forever
    assert OutboxStore(Database.from_url(url)).counts() == {"dead": 1, "sent": 1}


def test_settled_entries_go_after_their_keep_period_and_waiting_ones_stay(database_url: str, stand_in: SlackApiStandIn) -> None:
    upgrade(database_url)
    clock = ManualClock(START)
    announcer = replica(database_url, stand_in, clock)
    store = OutboxStore(Database.from_url(database_url))
    stand_in.fail("chat.postMessage", "not_in_channel", times=PERMANENT_TRIES)
    announcer.post("C0PLATFORM", say("refused for good"))
    for _ in range(PERMANENT_TRIES):
        clock.advance(timedelta(minutes=10))
        announcer.deliver_pending()
    announcer.post("C0PLATFORM", say("delivered"))
    stand_in.fail("chat.postMessage", "internal_error", status=500, times=10_000)
    announcer.post("C0BIZ", say("waiting"))
    assert store.counts() == {"dead": 1, "sent": 1, "pending": 1}

    clock.advance(SENT_KEPT + timedelta(minutes=1))
    assert announcer.forget_delivered() == 1
    assert store.counts() == {"dead": 1, "pending": 1}
    clock.advance(DEAD_KEPT - SENT_KEPT)
    assert announcer.forget_delivered() == 1
    health = store.health()
    assert health.counts == {"pending": 1}
    assert health.oldest_pending_at == START + timedelta(minutes=10 * PERMANENT_TRIES)


def test_a_rate_limit_waits_its_retry_after(tmp_path: Path, stand_in: SlackApiStandIn) -> None:
    url = f"sqlite:///{tmp_path}/outbox.db"
    upgrade(url)
    clock = ManualClock(START)
    announcer = replica(url, stand_in, clock)
    stand_in.fail("chat.postMessage", "ratelimited", status=429, retry_after=30)
    announcer.direct("U0ALICE", say("hello"))
    clock.advance(timedelta(seconds=29))
    assert announcer.deliver_pending() == 0 and delivered(stand_in, "DU0ALICE") == []
    clock.advance(timedelta(seconds=1))
    assert announcer.deliver_pending() == 1 and delivered(stand_in, "DU0ALICE") == ["hello"]


def test_entries_recorded_before_typed_messages_are_delivered_as_recorded_then_the_new_ones(
    database_url: str, stand_in: SlackApiStandIn
) -> None:
    """An upgrade finds entries holding a notice's parts (the old format): they go out as they were, in order."""
    upgrade(database_url)
    clock = ManualClock(START)
    old = say("GQ-1 was denied by ", User("U0LEE"), ". Reason: ", "<!channel> no", " The thread has the discussion.")
    database = Database.from_url(database_url)
    database.run(
        lambda repo: repo.add_outbox_entry(
            stream="dm:U0ALICE", kind="direct", target="U0ALICE", notice=old.to_json(), now=clock.now()
        )
    )
    announcer = replica(database_url, stand_in, clock)
    stand_in.fail("chat.postMessage", "internal_error", status=500)  # the new message waits behind the old one
    announcer.direct("U0ALICE", DeniedToRequester(2, "U0LEE", "<!here> later"))
    clock.advance(timedelta(minutes=1))
    announcer.deliver_pending()
    assert delivered(stand_in, "DU0ALICE") == [
        "GQ-1 was denied by <@U0LEE>. Reason: &lt;!channel&gt; no The thread has the discussion.",
        "GQ-2 was denied by <@U0LEE>. Reason: &lt;!here&gt; later The thread has the discussion.",
    ]


@pytest.mark.postgres
def test_a_card_update_skipped_for_a_waiting_one_is_not_rendered_before_its_change_commits(postgres_url: str) -> None:
    """``latest_only`` relies on the waiting card entry being rendered after the state change commits:
    a replica draining the stream while the change's transaction is open must not send it."""
    upgrade(postgres_url)
    database, clock = Database.from_url(postgres_url), ManualClock(START)
    store, stream, lease = OutboxStore(database), "card:7", timedelta(seconds=30)
    database.run(  # waits (Slack was down)
        lambda repo: repo.add_outbox_entry(stream=stream, kind="card", request_id=7, now=clock.now(), latest_only=True)
    )
    with database.transaction() as repo:  # a state change of request 7 says its card changed
        repo.add_outbox_entry(stream=stream, kind="card", request_id=7, now=clock.now(), latest_only=True)
        during = store.claim_head(stream, now=clock.now(), lease=lease)  # another replica's drain, before the commit
        if during is not None:
            store.sent(during.id, now=clock.now())  # it rendered the card as it was before the change
    assert store.claim_head(stream, now=clock.now(), lease=lease) is not None  # the changed card is still to be sent
    database.dispose()
