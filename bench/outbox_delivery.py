"""What the outbox costs per message: a direct message sent straight to Slack vs. recorded first.

Against the Slack stand-in on loopback (so the figures are the bot's own overhead, not Slack's),
for each database: N direct messages through the notifier alone, then N through the outbox
(record, claim, deliver, settle), then N recorded while Slack is down and drained afterwards by two
replicas at once. Prints the median time per message of three runs.

    .venv/bin/python bench/outbox_delivery.py                     # SQLite, 200 messages
    .venv/bin/python bench/outbox_delivery.py 500 postgresql://postgres@127.0.0.1:5432/outbox_bench

A PostgreSQL URL must name a database that can be dropped and re-created (it is).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.adapters.db.database import Database  # noqa: E402
from bot.adapters.db.migrate import upgrade  # noqa: E402
from bot.adapters.slack.languages import Languages  # noqa: E402
from bot.adapters.slack.notifier import SlackNotifier, make_web_client  # noqa: E402
from bot.clock import SystemClock  # noqa: E402
from bot.domain.languages import Language  # noqa: E402
from bot.sandbox.session import BOT_TOKEN  # noqa: E402
from bot.sandbox.world import sandbox_policy, sandbox_slack  # noqa: E402
from bot.services.announce import Announcer  # noqa: E402
from bot.services.text import User, say  # noqa: E402

USERS = ("U0ALICE", "U0BOB", "U0LEE", "U0MAYA")


def fresh_database(url: str | None, directory: str, run: int) -> str:
    if url is None:
        return f"sqlite:///{directory}/outbox-{run}.db"
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    with psycopg.connect(parts._replace(path="/postgres").geturl(), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    return url


def per_message(count: int, send: Callable[[int], object]) -> float:
    """Milliseconds per call of ``send(i)`` for i in 0..count-1."""
    start = time.perf_counter()
    for i in range(count):
        send(i)
    return (time.perf_counter() - start) / count * 1000


def one_run(url: str, count: int) -> dict[str, float]:
    slack = sandbox_slack(BOT_TOKEN).start()
    upgrade(url)

    def replica() -> Announcer:
        notifier = SlackNotifier(make_web_client(BOT_TOKEN, base_url=slack.api_url), Languages.only(Language.EN))
        return Announcer(notifier=notifier, policy=sandbox_policy(), database=Database.from_url(url), clock=SystemClock())

    notifier = SlackNotifier(make_web_client(BOT_TOKEN, base_url=slack.api_url), Languages.only(Language.EN))
    announcer, other = replica(), replica()
    notice = say("Approved by ", User("U0LEE"), " — 1 of 1.")
    figures = {
        "straight to Slack": per_message(count, lambda i: notifier.tell_user(USERS[i % 4], notice)),
        "through the outbox": per_message(count, lambda i: announcer.direct(USERS[i % 4], notice)),
    }
    slack.fail("chat.postMessage", "internal_error", status=500, times=len(USERS))
    for i in range(count):  # Slack down: one failed try per person, the rest wait behind it
        announcer.direct(USERS[i % 4], notice)
    time.sleep(6)  # past the first backoff

    def drain_both(_: int) -> None:
        threads = [threading.Thread(target=a.deliver_pending) for a in (announcer, other)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    figures["drained by 2 replicas"] = per_message(1, drain_both) / count
    sent = sum(1 for r in slack.records if r.kind == "message")
    assert sent == 3 * count, f"{sent} messages for {3 * count}"
    slack.stop()
    return figures


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    postgres = sys.argv[2] if len(sys.argv) > 2 else None
    with tempfile.TemporaryDirectory() as directory:
        runs = [one_run(fresh_database(postgres, directory, run), count) for run in range(3)]
    print(f"{'postgresql' if postgres else 'sqlite'}, {count} direct messages, median of 3 runs (ms per message):")
    for name in runs[0]:
        print(f"  {name:24} {statistics.median(r[name] for r in runs):7.2f}")


if __name__ == "__main__":
    main()
