"""Reclaims close once whoever runs the job, and blocked workloads are counted per day, on both databases."""

from __future__ import annotations

import threading
from datetime import UTC, date, datetime, timedelta

from bot.adapters.db.database import Database
from bot.domain.resources import GPU

AT = datetime(2026, 11, 30, 8, tzinfo=UTC)


def test_two_replicas_closing_one_reclaim_close_it_once(database: Database) -> None:
    reclaim_id = database.run(
        lambda repo: (
            repo.start_reclaim(namespace="ai-frontier-research", resource=GPU, request_id=None, quota=1, used=4, at=AT).id
        )
    )
    start = threading.Barrier(2)
    won: list[bool] = []

    def close() -> None:
        start.wait()
        won.append(database.run(lambda repo: repo.finish_reclaim(reclaim_id, used=1, at=AT + timedelta(days=2))))

    threads = [threading.Thread(target=close) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(won) == [False, True]
    assert database.run(lambda repo: repo.open_reclaim("ai-frontier-research", GPU)) is None


def test_blocked_workloads_are_counted_per_namespace_and_day(database: Database) -> None:
    first, second = date(2026, 11, 28), date(2026, 11, 29)
    alerts = [("a", "ns-a", first), ("b", "ns-a", first), ("c", "ns-a", second), ("d", "ns-b", second)]
    for key, namespace, day in alerts:
        database.run(lambda repo, k=key, ns=namespace, d=day: repo.remember_blocked_alert(k, namespace=ns, at=AT, quota_day=d))
    assert database.run(lambda repo: repo.quota_blocks(first, second)) == {"ns-a": 3, "ns-b": 1}
    assert database.run(lambda repo: repo.quota_blocks(second, second)) == {"ns-a": 1, "ns-b": 1}
    assert database.run(lambda repo: repo.quota_blocks(date(2026, 11, 1), date(2026, 11, 27))) == {}
