"""With the cost ledger: the daily digest and the hourly budget check at 100, 1,000 and 3,000 namespaces.

The same month as ``digest_scale.py`` (31 days of 5-minute samples, 20 teams, a real Prometheus 2.42).
First the ledger records 1-30 October (the one-time catch-up, or ``ledger backfill``); then, each
timed three times, median printed:

- daily digest: the digest of 31 October on 1 November, which records that one day in the ledger
  and reads the month from it (the ledger's row for the 31st is removed before each run). Printed
  split as well: "record day" is what the 00:20 ledger job does, "digest after it" what the 09:00
  digest then does (it finds the day recorded and reads the database only);
- budget check: the hourly job on 31 October at 12:00, which reads 1-30 October from the ledger and
  only today's partial day from Prometheus.

With ``--recent N`` only the month's last N days are backfilled into Prometheus (a month at 3,000
namespaces takes most of an hour to backfill on a small machine); the ledger rows of the earlier days
are copies of the first backfilled day's (the history is the same every day), so the digest and the
budget check read a whole month of ledger rows and only the Prometheus reads are real. The "ledger"
column then times the catch-up of the N - 1 backfilled days.

    .venv/bin/python bench/ledger_scale.py            # 100 1000 3000
    .venv/bin/python bench/ledger_scale.py 100 1000   # other sizes
    .venv/bin/python bench/ledger_scale.py --recent 3 3000
    .venv/bin/python bench/ledger_scale.py --rule --recent 3 1000   # with the idle recording rule's series

``--rule`` also backfills the series the chart's recording rule ``gpu_quota:gpu_idle:bool`` records (as
where the chart's rules run): the day's idle hours are then summed from it instead of a subquery.
    BENCH_KEEP=/var/tmp/bench .venv/bin/python bench/ledger_scale.py   # keep (and reuse) the backfilled data
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import time
from datetime import date, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import delete, insert, select  # noqa: E402

from bench.digest_scale import DAYS, MONTH, STEP, TEAMS, backfilled_prometheus, policy  # noqa: E402
from bot.adapters.db.database import Database  # noqa: E402
from bot.adapters.db.models import Base, LedgerDay, LedgerEntry  # noqa: E402
from bot.adapters.prometheus import PrometheusMetrics  # noqa: E402
from bot.adapters.slack.reports import digest_report  # noqa: E402
from bot.bootstrap import SlackPorts, build_services  # noqa: E402
from bot.clock import ManualClock  # noqa: E402
from bot.domain.clusters import HOME  # noqa: E402
from tests.fakes import FakeCluster, FakeDirectory, FakeHomeTabs, FakeNotifier  # noqa: E402
from tests.prometheus_server import PrometheusServer  # noqa: E402

RUNS = 3
IDLE_THRESHOLD = 0.05  # the policy's default (5 %), and the recording rule's threshold label with --rule
LAST = date(2026, 10, 31)


def copy_ledger_day(database: Database, source: date, days: list[date]) -> None:
    """The ledger rows of ``source`` written again for each of ``days`` (``--recent``: the days not backfilled)."""
    columns = [c for c in LedgerEntry.__table__.columns if c.name != "id"]
    with database.transaction() as repo:
        rows = [dict(row._mapping) for row in repo.session.execute(select(*columns).where(LedgerEntry.day == source))]
        status = repo.session.get(LedgerDay, (source, HOME))
        assert status is not None and rows, f"nothing recorded for {source}"
        for day in days:
            repo.session.execute(delete(LedgerEntry).where(LedgerEntry.day == day))
            repo.session.execute(insert(LedgerEntry), [{**row, "day": day} for row in rows])
            repo.session.merge(LedgerDay(day=day, cluster=HOME, status=status.status, recorded_at=status.recorded_at))


def measure(server: PrometheusServer, namespaces: int, *, first: datetime = MONTH) -> dict[str, float]:
    the_policy = policy(namespaces)
    metrics = PrometheusMetrics.connect(server.url, interval=STEP, idle_threshold=IDLE_THRESHOLD, timeout=600)
    database = Database.from_url("sqlite://")
    Base.metadata.create_all(database.engine)
    clock = ManualClock(MONTH + timedelta(days=DAYS, hours=8))
    services = build_services(
        policy=the_policy,
        database=database,
        cluster=FakeCluster(),
        slack=SlackPorts(notifier=FakeNotifier(), directory=FakeDirectory(), home_tabs=FakeHomeTabs()),
        clock=clock,
        metrics=metrics,
    )
    assert services.ledger is not None and services.digest is not None and services.budget is not None
    started = time.perf_counter()
    services.ledger.catch_up(LAST - timedelta(days=1))
    catch_up = time.perf_counter() - started
    if first != MONTH:
        copy_ledger_day(database, first.date(), [MONTH.date() + timedelta(days=i) for i in range((first - MONTH).days)])

    digests, records, digest_queries = [], [], 0
    for _ in range(RUNS):
        database.run(lambda repo: repo.session.execute(delete(LedgerEntry).where(LedgerEntry.day == LAST)))
        database.run(lambda repo: repo.session.execute(delete(LedgerDay).where(LedgerDay.day == LAST)))
        before = metrics.queries
        started = time.perf_counter()
        services.ledger.record([LAST])  # what build() would do first: timed apart to show the split
        records.append(time.perf_counter() - started)
        digest = services.digest.build(LAST)
        for team in digest.teams:
            digest_report(team, with_chart=False)
        digest_report(digest, with_chart=False)
        digests.append(time.perf_counter() - started)
        digest_queries = metrics.queries - before

    clock.advance(timedelta(hours=-20))  # back to 31 October, 12:00 UTC
    checks, check_queries = [], 0
    for _ in range(RUNS):
        before = metrics.queries
        started = time.perf_counter()
        services.budget.check()
        checks.append(time.perf_counter() - started)
        check_queries = metrics.queries - before
    return {
        "catch_up": catch_up,
        "digest": statistics.median(digests),
        "record": statistics.median(records),
        "digest_queries": digest_queries,
        "check": statistics.median(checks),
        "check_queries": check_queries,
        # A check of the figures, not a time: the same with or without --rule (the rule counts the same samples).
        "idle_hours": sum(e.use.idle_hours for e in services.ledger.entries(LAST, LAST)),
    }


def main(sizes: list[int], *, recent: int | None, rule: bool) -> None:
    if shutil.which("prometheus") is None:
        sys.exit("prometheus is not installed: run ./scripts/test once (it installs Debian's package)")
    first = MONTH + timedelta(days=DAYS - recent) if recent else MONTH
    backfilled = f"{first:%d}-{LAST:%d} Oct in Prometheus, earlier days copied in the ledger" if recent else "all in Prometheus"
    with_rule = "with" if rule else "without"
    print(
        f"October 2026 (31 days; {backfilled}), 5-minute samples, {TEAMS} teams, {with_rule} the idle recording rule's"
        " series, the cost ledger in SQLite"
    )
    print(
        f"{'namespaces':>10} {'samples':>12} {'backfill s':>10} {'ledger s':>8} "
        f"{'daily digest s':>14} {'(record day s)':>14} {'digest after it s':>17} {'queries':>7} {'budget check s':>14} {'queries':>7} {'idle GPU-h 31 Oct':>17} {'load 1/5 min':>12}"
    )
    for size in sizes:
        idle_rule = IDLE_THRESHOLD if rule else None
        with backfilled_prometheus(size, prefix="ledger-bench", first=first, idle_rule=idle_rule) as (server, samples, seconds):
            row = measure(server, size, first=first)
            load = os.getloadavg()  # the machine's load while it ran: the figures are wall-clock times
            print(
                f"{size:>10} {samples:>12,} {seconds:>10.0f} {row['catch_up']:>8.2f} {row['digest']:>14.2f} "
                f"{row['record']:>14.2f} {row['digest'] - row['record']:>17.2f} {row['digest_queries']:>7.0f} {row['check']:>14.2f} {row['check_queries']:>7.0f} {row['idle_hours']:>17,.1f} {load[0]:>6.1f}{load[1]:>6.1f}",
                flush=True,
            )


if __name__ == "__main__":
    arguments = sys.argv[1:]
    days, rule = None, "--rule" in arguments
    arguments = [arg for arg in arguments if arg != "--rule"]
    if arguments[:1] == ["--recent"]:
        days, arguments = int(arguments[1]), arguments[2:]
    main([int(arg) for arg in arguments] or [100, 1000, 3000], recent=days, rule=rule)
